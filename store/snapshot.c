/* store/snapshot.c — snapshot rows in the catalogue: lookup, listing in
 * creation order, selection (a%b ranges), destroy and rollback. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SNAP_COLS "id, ds_id, name, guid, createtxg, creation_ns, root, referenced," \
		  " logicalreferenced, written"

static int snap_from_row(struct store_pool *p, sqlite3_stmt *st, const struct store_ds *ds,
			 struct store_snap *s)
{
	struct store_ds own;
	int r;
	memset(s, 0, sizeof *s);
	s->id = sqlite3_column_int64(st, 0);
	s->ds_id = sqlite3_column_int64(st, 1);
	const char *nm = (const char *)sqlite3_column_text(st, 2);
	snprintf(s->snapname, sizeof s->snapname, "%s", nm ? nm : "");
	s->guid = (uint64_t)sqlite3_column_int64(st, 3);
	s->createtxg = (uint64_t)sqlite3_column_int64(st, 4);
	s->creation_ns = (uint64_t)sqlite3_column_int64(st, 5);
	s->creation = (int64_t)(s->creation_ns / 1000000000u);
	if (sqlite3_column_bytes(st, 6) != FERRY_HASH_LEN)
		return ferry_err(FERR_CORRUPT, "snapshot '%s' has a bad root", s->snapname);
	memcpy(s->root, sqlite3_column_blob(st, 6), FERRY_HASH_LEN);
	s->referenced = (uint64_t)sqlite3_column_int64(st, 7);
	s->logicalreferenced = (uint64_t)sqlite3_column_int64(st, 8);
	s->written = (uint64_t)sqlite3_column_int64(st, 9);
	if (!ds || ds->id != s->ds_id) {
		if ((r = ds_load_by_id(p, s->ds_id, &own)) < 0)
			return r;
		ds = &own;
	}
	s->ds_type = ds->type;
	snprintf(s->name, sizeof s->name, "%s@%s", ds->name, s->snapname);
	return 0;
}

static int split_snapname(const char *name, char *ds, size_t n, const char **snap)
{
	const char *at = strchr(name, '@');
	if (!at || (size_t)(at - name) >= n)
		return ferry_err(FERR_NAME, "'%s' is not a snapshot name (DATASET@NAME)", name);
	memcpy(ds, name, (size_t)(at - name));
	ds[at - name] = 0;
	*snap = at + 1;
	return 0;
}

int store_snap_lookup(struct store_pool *p, const char *name, struct store_snap *out)
{
	char dsname[STORE_NAME_MAX + 1];
	const char *sn;
	struct store_ds ds;
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	if ((r = split_snapname(name, dsname, sizeof dsname, &sn)) < 0)
		return r;
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ? AND name = ?",
			     &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds.id);
	sqlite3_bind_text(st, 2, sn, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = snap_from_row(p, st, &ds, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "snapshot '%s' does not exist", name);
	else
		r = cat_err(p, "looking up snapshot");
	sqlite3_finalize(st);
	return r;
}

/* Loads every snapshot of ds (creation order) into a malloc'd array. */
static int snap_load_all(struct store_pool *p, const struct store_ds *ds, struct store_snap **out,
			 size_t *n)
{
	sqlite3_stmt *st = NULL;
	struct store_snap *a = NULL;
	size_t cnt = 0, cap = 0;
	int r, s;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ?"
			       " ORDER BY createtxg", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(a, cap, cnt, 8, "listing snapshots")) < 0)
			goto out;
		if ((r = snap_from_row(p, st, ds, &a[cnt])) < 0)
			goto out;
		cnt++;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing snapshots");
		goto out;
	}
	*out = a;
	*n = cnt;
	a = NULL;
out:
	sqlite3_finalize(st);
	free(a);
	return r;
}

int store_snap_iter(struct store_pool *p, const struct store_ds *ds, store_snap_fn fn, void *arg)
{
	struct store_snap *a = NULL;
	size_t n = 0;
	int r = snap_load_all(p, ds, &a, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++)
		r = fn(p, &a[i], arg);
	free(a);
	return r;
}

int store_snap_find_guid(struct store_pool *p, uint64_t guid, struct store_snap *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE guid = ?"
			       " ORDER BY id LIMIT 1", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, (int64_t)guid);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = snap_from_row(p, st, NULL, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "no snapshot of pool '%s' has guid %llu", p->name,
			      (unsigned long long)guid);
	else
		r = cat_err(p, "looking up a snapshot by guid");
	sqlite3_finalize(st);
	return r;
}

int store_snap_newest(struct store_pool *p, const struct store_ds *ds, struct store_snap *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ?"
			       " ORDER BY createtxg DESC LIMIT 1", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = snap_from_row(p, st, ds, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "'%s' has no snapshots", ds->name);
	else
		r = cat_err(p, "looking up snapshots");
	sqlite3_finalize(st);
	return r;
}

void store_snap_to_ds(const struct store_snap *s, struct store_ds *out)
{
	memset(out, 0, sizeof *out);
	out->id = s->id;
	out->parent_id = s->ds_id;
	out->type = STORE_DS_SNAPSHOT;
	snprintf(out->name, sizeof out->name, "%s", s->name);
	out->guid = s->guid;
	out->creation = s->creation;
	out->createtxg = s->createtxg;
}

int store_snap_unique(struct store_pool *p, const struct store_snap *s, uint64_t *used)
{
	int64_t t = 0;
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT createtxg FROM snapshots WHERE id = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, s->id);
	int k = sqlite3_step(st);
	if (k == SQLITE_ROW)
		t = sqlite3_column_int64(st, 0);
	else
		r = k == SQLITE_DONE ? ferry_err(FERR_NOENT, "snapshot '%s' does not exist", s->name)
				     : cat_err(p, "computing snapshot space");
	sqlite3_finalize(st);
	return r < 0 ? r : life_snap_unique(p, s->ds_id, t, used);
}

/* ---- selection --------------------------------------------------------------------- */

struct sel {
	struct store_snap *v;
	size_t n, cap;
};

static int sel_add(struct sel *s, const struct store_snap *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].id == x->id)
			return 0;
	int grown = VEC_GROW(s->v, s->cap, s->n, 8, "selecting snapshots");
	if (grown < 0)
		return grown;
	s->v[s->n++] = *x;
	return 0;
}

/* Applies spec (after the '@') to one dataset; missing names are errors only
 * when strict. */
static int select_in(struct store_pool *p, const struct store_ds *ds, const char *spec,
		     int strict, struct sel *out)
{
	struct store_snap *all = NULL;
	size_t n = 0;
	char item[STORE_NAME_MAX + 1];
	int r;
	if ((r = snap_load_all(p, ds, &all, &n)) < 0)
		return r;
	const char *q = spec;
	while (*q) {
		size_t len = strcspn(q, ",");
		if (len == 0 || len >= sizeof item) {
			r = ferry_err(FERR_NAME, "invalid snapshot list '%s'", spec);
			goto out;
		}
		memcpy(item, q, len);
		item[len] = 0;
		q += len;
		if (*q == ',')
			q++;
		char *pct = strchr(item, '%');
		if (pct) {
			*pct = 0;
			const char *a = item, *b = pct + 1;
			size_t ia = 0, ib = n ? n - 1 : 0;
			int fa = !*a, fb = !*b;
			for (size_t i = 0; i < n; i++) {
				if (*a && !strcmp(all[i].snapname, a)) {
					ia = i;
					fa = 1;
				}
				if (*b && !strcmp(all[i].snapname, b)) {
					ib = i;
					fb = 1;
				}
			}
			if (!fa || !fb) {
				if (!strict)
					continue;
				r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", ds->name,
					      !fa ? a : b);
				goto out;
			}
			if (ia > ib) {
				r = ferry_err(FERR_INVAL, "'%s%%%s': range runs backwards", a, b);
				goto out;
			}
			for (size_t i = ia; n && i <= ib; i++)
				if ((r = sel_add(out, &all[i])) < 0)
					goto out;
		} else {
			int found = 0;
			for (size_t i = 0; i < n; i++)
				if (!strcmp(all[i].snapname, item)) {
					found = 1;
					if ((r = sel_add(out, &all[i])) < 0)
						goto out;
				}
			if (!found && strict) {
				r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", ds->name,
					      item);
				goto out;
			}
		}
	}
out:
	free(all);
	return r;
}

struct sel_walk {
	const char *spec;
	struct sel *out;
};

static int sel_walk_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct sel_walk *w = arg;
	return select_in(p, ds, w->spec, 0, w->out);
}

int store_snap_select(struct store_pool *p, const char *spec, int recursive,
		      struct store_snap **out, size_t *n)
{
	char dsname[STORE_NAME_MAX + 1];
	const char *sn;
	struct store_ds ds;
	struct sel s = {0};
	int r;
	if ((r = split_snapname(spec, dsname, sizeof dsname, &sn)) < 0)
		return r;
	if (!*sn)
		return ferry_err(FERR_NAME, "'%s': empty snapshot name", spec);
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0)
		return r;
	if ((r = select_in(p, &ds, sn, 1, &s)) < 0)
		goto fail;
	if (recursive) {
		struct sel_walk w = {sn, &s};
		if ((r = store_ds_walk(p, &ds, -1, sel_walk_cb, &w)) < 0)
			goto fail;
	}
	*out = s.v;
	*n = s.n;
	return 0;
fail:
	free(s.v);
	return r;
}

static int fill_sel_table(struct store_pool *p, const struct store_snap *list, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_exec(p, "CREATE TEMP TABLE IF NOT EXISTS sel(id INTEGER PRIMARY KEY);"
			    "DELETE FROM temp.sel;");
	if (r < 0)
		return r;
	if ((r = cat_prepare(p, "INSERT OR IGNORE INTO temp.sel(id) VALUES(?)", &st)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, list[i].id);
		if (sqlite3_step(st) != SQLITE_DONE) {
			r = cat_err(p, "selecting snapshots");
			break;
		}
	}
	sqlite3_finalize(st);
	return r;
}

int store_snap_reclaim(struct store_pool *p, const struct store_snap *list, size_t n,
		       uint64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = fill_sel_table(p, list, n)) < 0)
		return r;
	/* the blocks of rows that hold a selected snapshot, of which no row
	 * (of any dataset) holds one not selected */
	if ((r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM blocks b WHERE b.id IN"
			       " (SELECT x.block_id FROM temp.sel q JOIN snapshots s ON s.id = q.id"
			       " JOIN ds_refs x ON x.ds_id = s.ds_id AND x.born <= s.createtxg"
			       " AND (x.died IS NULL OR x.died > s.createtxg))"
			       " AND NOT EXISTS (SELECT 1 FROM ds_refs y JOIN snapshots o"
			       " ON o.ds_id = y.ds_id AND o.createtxg >= y.born"
			       " AND (y.died IS NULL OR o.createtxg < y.died)"
			       " WHERE y.block_id = b.id AND o.id NOT IN (SELECT id FROM temp.sel))",
			       &st)) < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		*bytes = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "computing reclaimable space");
	sqlite3_finalize(st);
	return r;
}

int store_snap_destroy(struct store_pool *p, const struct store_snap *list, size_t n)
{
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	/* zfs: a held snapshot is busy (checked under the write lock) */
	if ((r = hold_check_destroy(p, list, n)) < 0)
		goto fail;
	/* one at a time, newest first (a rollback's list is oldest first):
	 * each costs the rows born and dead at it, and sets the written of
	 * the snapshot after it (lifetimes.c) */
	for (size_t i = n; i-- > 0;)
		if ((r = life_destroy(p, list[i].id)) < 0)
			goto fail;
	/* each dataset's census follows its newest snapshot (census.c) */
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < i && list[k].ds_id != list[i].ds_id)
			k++;
		if (k == i && (r = census_follow(p, list[i].ds_id)) < 0)
			goto fail;
	}
	return store_tx_commit(p);
fail:
	store_tx_rollback(p);
	return r;
}

int store_snap_rollback(struct store_pool *p, const struct store_snap *s, int recursive)
{
	struct store_ds ds;
	struct store_snap *all = NULL;
	size_t n = 0, k;
	int r;
	if ((r = ds_load_by_id(p, s->ds_id, &ds)) < 0)
		return r;
	if ((r = snap_load_all(p, &ds, &all, &n)) < 0)
		return r;
	for (k = 0; k < n && all[k].id != s->id; k++)
		;
	if (k == n) {
		r = ferry_err(FERR_NOENT, "snapshot '%s' does not exist", s->name);
		goto out;
	}
	if (k + 1 < n && !recursive) {
		r = ferry_err(FERR_EXISTS, "more recent snapshots exist (%s); use -r to destroy "
			      "them", all[k + 1].name);
		goto out;
	}
	/* bookmarks of later snapshots count as later too (zfs rollback) */
	char mark[STORE_NAME_MAX + 1] = "";
	sqlite3_stmt *st = NULL;
	if ((r = cat_prepare(p, "SELECT name FROM bookmarks WHERE ds_id = ? AND createtxg > ?"
			       " ORDER BY createtxg, name LIMIT 1", &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, ds.id);
	sqlite3_bind_int64(st, 2, (int64_t)s->createtxg);
	int sr = sqlite3_step(st);
	if (sr == SQLITE_ROW)
		snprintf(mark, sizeof mark, "%s", (const char *)sqlite3_column_text(st, 0));
	else if (sr != SQLITE_DONE)
		r = cat_err(p, "looking up bookmarks");
	sqlite3_finalize(st);
	if (r < 0)
		goto out;
	if (mark[0] && !recursive) {
		r = ferry_err(FERR_EXISTS, "more recent bookmarks exist (%s#%s); use -r to destroy "
			      "them", ds.name, mark);
		goto out;
	}
	if (k + 1 == n && !mark[0])
		goto out;
	if ((r = store_tx_begin(p)) < 0)
		goto out;
	if (k + 1 < n && (r = store_snap_destroy(p, all + k + 1, n - k - 1)) < 0) {
		store_tx_rollback(p);
		goto out;
	}
	if (mark[0]) {
		if ((r = cat_prepare(p, "DELETE FROM bookmarks WHERE ds_id = ? AND createtxg > ?",
				     &st)) < 0) {
			store_tx_rollback(p);
			goto out;
		}
		sqlite3_bind_int64(st, 1, ds.id);
		sqlite3_bind_int64(st, 2, (int64_t)s->createtxg);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(p, "destroying bookmarks");
		sqlite3_finalize(st);
		if (r < 0) {
			store_tx_rollback(p);
			goto out;
		}
	}
	r = store_tx_commit(p);
out:
	free(all);
	return r;
}
