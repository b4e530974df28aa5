/* store/bookmark.c — bookmarks (pool/ds#mark): a snapshot's identity (guid,
 * creation order and time) and its Merkle root, kept after the snapshot is
 * destroyed so it can still be the base of an incremental send. A bookmark
 * holds no blocks: gc keeps the nodes reachable from its root (so the
 * sender can walk the base tree) but frees the data blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BM_COLS "id, ds_id, name, guid, createtxg, creation_ns, root_type, root"

/* An old pool opened read-only may lack the table: it has no bookmarks. */
static int bm_table(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int have = 0;
	int r = cat_prepare(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
			       " AND name = 'bookmarks'", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		have = sqlite3_column_int(st, 0) > 0;
	else
		r = cat_err(p, "looking for bookmarks");
	sqlite3_finalize(st);
	return r < 0 ? r : have;
}

static int bm_from_row(sqlite3_stmt *st, const struct store_ds *ds, struct store_bookmark *b)
{
	memset(b, 0, sizeof *b);
	b->id = sqlite3_column_int64(st, 0);
	b->ds_id = sqlite3_column_int64(st, 1);
	const char *nm = (const char *)sqlite3_column_text(st, 2);
	snprintf(b->markname, sizeof b->markname, "%s", nm ? nm : "");
	b->guid = (uint64_t)sqlite3_column_int64(st, 3);
	b->createtxg = (uint64_t)sqlite3_column_int64(st, 4);
	b->creation_ns = (uint64_t)sqlite3_column_int64(st, 5);
	b->creation = (int64_t)(b->creation_ns / 1000000000u);
	b->root_type = sqlite3_column_int(st, 6);
	if (sqlite3_column_bytes(st, 7) != FERRY_HASH_LEN || b->root_type != NODE_EXT)
		return ferry_err(FERR_CORRUPT, "bookmark '%s' has a bad root", b->markname);
	memcpy(b->root, sqlite3_column_blob(st, 7), FERRY_HASH_LEN);
	b->ds_type = ds->type;
	snprintf(b->name, sizeof b->name, "%s#%s", ds->name, b->markname);
	return 0;
}

/* Splits "ds#mark" or "ds@snap" at sep into ds (n bytes) and *rest. */
static int split_at(const char *name, char sep, char *ds, size_t n, const char **rest)
{
	const char *s = strchr(name, sep);
	if (!s || (size_t)(s - name) >= n)
		return ferry_err(FERR_NAME, "'%s' is not a %s name", name,
				 sep == '#' ? "bookmark (DATASET#NAME)" : "snapshot (DATASET@NAME)");
	memcpy(ds, name, (size_t)(s - name));
	ds[s - name] = 0;
	*rest = s + 1;
	return 0;
}

static int bm_find(struct store_pool *p, const struct store_ds *ds, const char *mark,
		   struct store_bookmark *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT " BM_COLS " FROM bookmarks WHERE ds_id = ? AND name = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, mark, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = out ? bm_from_row(st, ds, out) : 0;
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "bookmark '%s#%s' does not exist", ds->name, mark);
	else
		r = cat_err(p, "looking up bookmark");
	sqlite3_finalize(st);
	return r;
}

int store_bookmark_lookup(struct store_pool *p, const char *name, struct store_bookmark *out)
{
	char dsname[STORE_NAME_MAX + 1];
	const char *mark;
	struct store_ds ds;
	int r;
	if ((r = store_name_check(name, STORE_NAME_BOOKMARK)) < 0 ||
	    (r = split_at(name, '#', dsname, sizeof dsname, &mark)) < 0 ||
	    (r = store_ds_lookup(p, dsname, &ds)) < 0 || (r = bm_table(p)) < 0)
		return r;
	if (r == 0)
		return ferry_err(FERR_NOENT, "bookmark '%s' does not exist", name);
	return bm_find(p, &ds, mark, out);
}

int store_bookmark_create(struct store_pool *p, const char *source, const char *name)
{
	char dsname[STORE_NAME_MAX + 1], srcds[STORE_NAME_MAX + 1];
	const char *mark, *rest;
	struct store_ds ds;
	struct store_bookmark src;
	sqlite3_stmt *st = NULL;
	int r, from_bm = strchr(source, '#') != NULL;
	if ((r = store_name_check(name, STORE_NAME_BOOKMARK)) < 0 ||
	    (r = store_name_check(source, from_bm ? STORE_NAME_BOOKMARK : STORE_NAME_SNAPSHOT)) < 0 ||
	    (r = split_at(name, '#', dsname, sizeof dsname, &mark)) < 0 ||
	    (r = split_at(source, from_bm ? '#' : '@', srcds, sizeof srcds, &rest)) < 0)
		return r;
	if (strcmp(dsname, srcds))
		return ferry_err(FERR_INVAL, "a bookmark must be in the dataset of its source ('%s')",
				 srcds);
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0)
		return r;
	if (from_bm) {
		if ((r = store_bookmark_lookup(p, source, &src)) < 0)
			return r;
	} else {
		struct store_snap sn;
		if ((r = store_snap_lookup(p, source, &sn)) < 0)
			return r;
		memset(&src, 0, sizeof src);
		src.guid = sn.guid;
		src.createtxg = sn.createtxg;
		src.creation_ns = sn.creation_ns;
		src.root_type = NODE_EXT;
		memcpy(src.root, sn.root, FERRY_HASH_LEN);
	}
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = bm_find(p, &ds, mark, NULL)) == 0) {
		r = ferry_err(FERR_EXISTS, "bookmark '%s' already exists", name);
		goto fail;
	}
	if (r != -FERR_NOENT)
		goto fail;
	ferry_err_clear();
	if ((r = cat_prepare(p, "INSERT INTO bookmarks(ds_id, name, guid, createtxg, creation_ns,"
			       " root_type, root) VALUES(?, ?, ?, ?, ?, ?, ?)", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, ds.id);
	sqlite3_bind_text(st, 2, mark, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)src.guid);
	sqlite3_bind_int64(st, 4, (int64_t)src.createtxg);
	sqlite3_bind_int64(st, 5, (int64_t)src.creation_ns);
	sqlite3_bind_int(st, 6, src.root_type);
	sqlite3_bind_blob(st, 7, src.root, FERRY_HASH_LEN, SQLITE_STATIC);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(p, "recording bookmark");
	sqlite3_finalize(st);
	if (r < 0)
		goto fail;
	return store_tx_commit(p);
fail:
	store_tx_rollback(p);
	return r;
}

int store_bookmark_destroy(struct store_pool *p, const struct store_bookmark *b)
{
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = cat_exec_i64(p, "DELETE FROM bookmarks WHERE id = ?", b->id)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	if (sqlite3_changes(p->db) != 1) {
		store_tx_rollback(p);
		return ferry_err(FERR_NOENT, "bookmark '%s' does not exist", b->name);
	}
	return store_tx_commit(p);
}

int store_bookmark_iter(struct store_pool *p, const struct store_ds *ds, store_bookmark_fn fn,
			void *arg)
{
	sqlite3_stmt *st = NULL;
	struct store_bookmark *a = NULL;
	size_t n = 0, cap = 0;
	int r, s;
	if ((r = bm_table(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT " BM_COLS " FROM bookmarks WHERE ds_id = ?"
			       " ORDER BY createtxg, name", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(a, cap, n, 8, "listing bookmarks")) < 0)
			goto out;
		if ((r = bm_from_row(st, ds, &a[n])) < 0)
			goto out;
		n++;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing bookmarks");
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

void store_bookmark_to_ds(const struct store_bookmark *b, struct store_ds *out)
{
	memset(out, 0, sizeof *out);
	out->id = b->id;
	out->parent_id = b->ds_id;
	out->type = STORE_DS_BOOKMARK;
	snprintf(out->name, sizeof out->name, "%s", b->name);
	out->guid = b->guid;
	out->creation = b->creation;
	out->createtxg = b->createtxg;
}
