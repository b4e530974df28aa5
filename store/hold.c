/* store/hold.c — user holds on snapshots (zfs hold): a tag that keeps a
 * snapshot from being destroyed, and deferred destruction (destroy -d) of
 * a held snapshot when its last hold is released. The holds and the marks
 * live in their own catalogue tables (store/catalog.c), removed with their
 * snapshot row (ON DELETE CASCADE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A pool opened read-only that was made before holds existed lacks the
 * tables: it has no holds. 1 when they exist. */
static int hold_table(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int have = 0;
	int r = cat_prepare(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			       " AND name = 'holds'", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		have = sqlite3_column_int(st, 0) > 0;
	else
		r = cat_err(p, "looking for holds");
	sqlite3_finalize(st);
	return r < 0 ? r : have;
}

int store_hold_tag_check(const char *tag)
{
	size_t n = strlen(tag);
	if (n == 0)
		return ferry_err(FERR_NAME, "empty hold tag");
	if (n > STORE_HOLD_TAG_MAX)
		return ferry_err(FERR_NAME, "hold tag is longer than %d characters", STORE_HOLD_TAG_MAX);
	/* tags are printed in tab-separated columns (holds -H) */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)tag[i] < 0x20 || tag[i] == 0x7f)
			return ferry_err(FERR_NAME, "invalid character 0x%02x in hold tag",
					 (unsigned char)tag[i]);
	return 0;
}

/* The tag of one hold of snapshot id into tag (n bytes), the first by
 * name; 1 when it has one, 0 when none. */
static int first_tag(struct store_pool *p, int64_t id, char *tag, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT tag FROM holds WHERE snap_id = ? ORDER BY tag LIMIT 1", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		snprintf(tag, n, "%s", (const char *)sqlite3_column_text(st, 0));
		r = 1;
	} else if (s != SQLITE_DONE) {
		r = cat_err(p, "looking up holds");
	}
	sqlite3_finalize(st);
	return r;
}

static int has_tag(struct store_pool *p, int64_t id, const char *tag)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT 1 FROM holds WHERE snap_id = ? AND tag = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : cat_err(p, "looking up holds");
	sqlite3_finalize(st);
	return r;
}

int hold_check_destroy(struct store_pool *p, const struct store_snap *list, size_t n)
{
	char tag[STORE_HOLD_TAG_MAX + 1];
	int r = hold_table(p);
	for (size_t i = 0; r > 0 && i < n; i++) {
		if ((r = first_tag(p, list[i].id, tag, sizeof tag)) < 0)
			return r;
		if (r == 1)
			return ferry_err(FERR_BUSY, "snapshot '%s' is held (tag '%s'): dataset is busy",
					 list[i].name, tag);
		r = 1;
	}
	return r < 0 ? r : 0;
}

static int held_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT s.name, h.tag FROM holds h JOIN snapshots s ON s.id = h.snap_id"
			       " WHERE s.ds_id = ? ORDER BY s.createtxg, h.tag LIMIT 1", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = ferry_err(FERR_BUSY, "snapshot '%s@%s' is held (tag '%s'): dataset is busy",
			      ds->name, (const char *)sqlite3_column_text(st, 0),
			      (const char *)sqlite3_column_text(st, 1));
	else if (s != SQLITE_DONE)
		r = cat_err(p, "looking up holds");
	sqlite3_finalize(st);
	return r;
}

int hold_check_tree(struct store_pool *p, const struct store_ds *ds)
{
	int r = hold_table(p);
	if (r <= 0)
		return r;
	return store_ds_walk(p, ds, -1, held_cb, NULL);
}

int store_hold_add(struct store_pool *p, const struct store_snap *list, size_t n, const char *tag)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_hold_tag_check(tag)) < 0)
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	uint64_t now = ferry_now_ns();
	if ((r = cat_prepare(p, "INSERT INTO holds(snap_id, tag, creation_ns) VALUES(?, ?, ?)",
			     &st)) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if ((r = has_tag(p, list[i].id, tag)) < 0)
			goto fail;
		if (r == 1) {
			r = ferry_err(FERR_EXISTS, "snapshot '%s': tag '%s' already exists on this "
				      "dataset", list[i].name, tag);
			goto fail;
		}
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, list[i].id);
		sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)now);
		if (sqlite3_step(st) != SQLITE_DONE) {
			/* the snapshot may have gone since the caller looked it up */
			r = cat_err(p, "recording a hold");
			goto fail;
		}
	}
	sqlite3_finalize(st);
	return store_tx_commit(p);
fail:
	sqlite3_finalize(st);
	store_tx_rollback(p);
	return r;
}

int store_snap_deferred(struct store_pool *p, int64_t snap_id)
{
	sqlite3_stmt *st = NULL;
	int r = hold_table(p);
	if (r <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT 1 FROM defer_destroy WHERE snap_id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, snap_id);
	int s = sqlite3_step(st);
	r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : cat_err(p, "looking up deferred destroys");
	sqlite3_finalize(st);
	return r;
}

int store_hold_release(struct store_pool *p, const struct store_snap *list, size_t n,
		       const char *tag)
{
	struct store_snap *gone = NULL;
	size_t ngone = 0, cap = 0;
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = hold_table(p)) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if (r == 0 || (r = has_tag(p, list[i].id, tag)) == 0) {
			r = ferry_err(FERR_NOENT, "snapshot '%s': no such tag on this dataset ('%s')",
				      list[i].name, tag);
			goto fail;
		}
		if (r < 0)
			goto fail;
		sqlite3_stmt *st = NULL;
		if ((r = cat_prepare(p, "DELETE FROM holds WHERE snap_id = ? AND tag = ?", &st)) < 0)
			goto fail;
		sqlite3_bind_int64(st, 1, list[i].id);
		sqlite3_bind_text(st, 2, tag, -1, SQLITE_STATIC);
		r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(p, "releasing a hold");
		sqlite3_finalize(st);
		if (r < 0)
			goto fail;
		/* the last hold of a snapshot marked by destroy -d: it goes now */
		uint64_t left = 0;
		if ((r = store_hold_count(p, list[i].id, &left)) < 0 ||
		    (r = store_snap_deferred(p, list[i].id)) < 0)
			goto fail;
		if (r == 1 && left == 0) {
			if ((r = VEC_GROW(gone, cap, ngone, 4, "releasing holds")) < 0)
				goto fail;
			gone[ngone++] = list[i];
		}
	}
	if (ngone && (r = store_snap_destroy(p, gone, ngone)) < 0)
		goto fail;
	free(gone);
	return store_tx_commit(p);
fail:
	free(gone);
	store_tx_rollback(p);
	return r;
}

int store_hold_iter(struct store_pool *p, const struct store_snap *s, store_hold_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	struct store_hold *a = NULL;
	size_t n = 0, cap = 0;
	int r, rs;
	if ((r = hold_table(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT tag, creation_ns FROM holds WHERE snap_id = ? ORDER BY tag",
			     &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, s->id);
	while ((rs = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(a, cap, n, 4, "listing holds")) < 0)
			goto out;
		memset(&a[n], 0, sizeof a[n]);
		snprintf(a[n].snapshot, sizeof a[n].snapshot, "%s", s->name);
		snprintf(a[n].tag, sizeof a[n].tag, "%s", (const char *)sqlite3_column_text(st, 0));
		a[n].creation_ns = (uint64_t)sqlite3_column_int64(st, 1);
		n++;
	}
	if (rs != SQLITE_DONE) {
		r = cat_err(p, "listing holds");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	/* rows are read before calling fn, which may use the catalogue */
	for (size_t i = 0; i < n && r == 0; i++)
		r = fn(p, &a[i], arg);
out:
	sqlite3_finalize(st);
	free(a);
	return r;
}

int store_hold_count(struct store_pool *p, int64_t snap_id, uint64_t *n)
{
	sqlite3_stmt *st = NULL;
	int r = hold_table(p);
	if (r <= 0) {
		if (r == 0)
			*n = 0;
		return r;
	}
	if ((r = cat_prepare(p, "SELECT count(*) FROM holds WHERE snap_id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, snap_id);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "counting holds");
	sqlite3_finalize(st);
	return r;
}

int store_snap_destroy_defer(struct store_pool *p, const struct store_snap *list, size_t n,
			     size_t *deferred)
{
	struct store_snap *now = NULL;
	size_t nnow = 0, ndef = 0;
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if (n && !(now = calloc(n, sizeof *now))) {
		r = ferry_err(FERR_NOMEM, "destroying snapshots");
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t holds = 0;
		if ((r = store_hold_count(p, list[i].id, &holds)) < 0)
			goto fail;
		if (holds == 0) {
			now[nnow++] = list[i];
			continue;
		}
		if ((r = cat_exec_i64(p, "INSERT OR IGNORE INTO defer_destroy(snap_id) VALUES(?)",
				      list[i].id)) < 0)
			goto fail;
		ndef++;
	}
	if (nnow && (r = store_snap_destroy(p, now, nnow)) < 0)
		goto fail;
	free(now);
	if ((r = store_tx_commit(p)) < 0)
		return r;
	if (deferred)
		*deferred = ndef;
	return 0;
fail:
	free(now);
	store_tx_rollback(p);
	return r;
}
