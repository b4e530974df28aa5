/* store/commit.c — the catalogue rows of a snapshot being committed by its
 * writer (writer.c), inside the writer's transaction: the name checked
 * free, the snapshot row, its block references and its space figures. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int query_i64(struct store_pool *p, const char *sql, int64_t a, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, a);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else
		r = s == SQLITE_DONE ? ferry_err(FERR_NOENT, "no row") : cat_err(p, "querying");
	sqlite3_finalize(st);
	return r;
}

int snap_figures(struct store_pool *p, int64_t snap_id, uint64_t *pbytes, uint64_t *lbytes)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0)"
			       " FROM snap_blocks s JOIN blocks b ON b.id = s.block_id"
			       " WHERE s.snap_id = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, snap_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*pbytes = (uint64_t)sqlite3_column_int64(st, 0);
		*lbytes = (uint64_t)sqlite3_column_int64(st, 1);
	} else {
		r = cat_err(p, "summing snapshot blocks");
	}
	sqlite3_finalize(st);
	return r;
}

int snap_name_free(struct store_pool *p, const struct store_ds *ds, const char *name,
		   const char *full)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(p, "SELECT 1 FROM snapshots WHERE ds_id = ? AND name = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = ferry_err(FERR_EXISTS, "snapshot '%s' already exists", full);
	else if (s != SQLITE_DONE)
		r = cat_err(p, "looking up a snapshot");
	sqlite3_finalize(st);
	return r;
}

/* The snapshot row, once its root node is in the pool; *id its row id. */
static int snap_insert(struct store_pool *p, const struct store_ds *ds, const char *name,
		       const uint8_t root[FERRY_HASH_LEN], uint64_t guid, uint64_t creation_ns,
		       int64_t *id)
{
	sqlite3_stmt *st = NULL;
	uint64_t txg;
	int r;
	if ((r = cat_prepare(p, "SELECT 1 FROM main.nodes WHERE hash = ? AND type = 4", &st)) < 0)
		return r;
	sqlite3_bind_blob(st, 1, root, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		r = ferry_err(FERR_CORRUPT, "snapshot root node is not in the pool");
	sqlite3_finalize(st);
	st = NULL;
	if (r < 0 || (r = cat_next_txg(p, &txg)) < 0)
		return r;
	if (!creation_ns)
		creation_ns = ferry_now_ns();
	if (!guid)
		guid = ferry_random_guid();
	if ((r = cat_prepare(p, "INSERT INTO snapshots(ds_id, name, guid, createtxg, creation_ns,"
			       " root) VALUES(?, ?, ?, ?, ?, ?)", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)guid);
	sqlite3_bind_int64(st, 4, (int64_t)txg);
	sqlite3_bind_int64(st, 5, (int64_t)creation_ns);
	sqlite3_bind_blob(st, 6, root, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording the snapshot");
	else
		*id = sqlite3_last_insert_rowid(p->db);
	sqlite3_finalize(st);
	return r;
}

/* The snapshot's block references: every one the writer made, each a
 * block the pool (still) has. */
static int snap_link_blocks(struct store_pool *p, int64_t id)
{
	int64_t nrefs = 0, nlinked = 0;
	int r;
	if ((r = cat_exec_i64(p, "INSERT INTO snap_blocks(snap_id, block_id) SELECT ?, b.id"
			      " FROM temp.w_refs r JOIN main.blocks b ON b.hash = r.hash"
			      " AND b.codec = r.codec AND b.level = r.level", id)) < 0)
		return r;
	if ((r = query_i64(p, "SELECT count(*) FROM temp.w_refs WHERE ? IS NOT NULL", 1, &nrefs)) < 0 ||
	    (r = query_i64(p, "SELECT count(*) FROM snap_blocks WHERE snap_id = ?", id, &nlinked)) < 0)
		return r;
	if (nrefs != nlinked)
		return ferry_err(FERR_CORRUPT, "%lld referenced blocks vanished from the pool",
				 (long long)(nrefs - nlinked));
	return 0;
}

/* written: what snapshot id references that its predecessor prev does not
 * (all of pb without one). */
static int snap_written(struct store_pool *p, int64_t id, uint64_t pb, uint64_t *written)
{
	sqlite3_stmt *st = NULL;
	int64_t prev = 0;
	int r = query_i64(p, "SELECT id FROM snapshots WHERE ds_id = (SELECT ds_id FROM snapshots"
			     " WHERE id = ?1) AND id != ?1 ORDER BY createtxg DESC LIMIT 1", id, &prev);
	*written = pb;
	if (r == -FERR_NOENT) {
		ferry_err_clear(); /* the dataset's first snapshot */
		return 0;
	}
	if (r < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM snap_blocks s"
			       " JOIN blocks b ON b.id = s.block_id WHERE s.snap_id = ?1"
			       " AND NOT EXISTS (SELECT 1 FROM snap_blocks o WHERE"
			       " o.snap_id = ?2 AND o.block_id = s.block_id)", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, prev);
	if (sqlite3_step(st) != SQLITE_ROW)
		r = cat_err(p, "computing written");
	else
		*written = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return r;
}

static int snap_set_figures(struct store_pool *p, int64_t id, uint64_t *referenced)
{
	sqlite3_stmt *st = NULL;
	uint64_t pb = 0, lb = 0, written = 0;
	int r;
	if ((r = snap_figures(p, id, &pb, &lb)) < 0 || (r = snap_written(p, id, pb, &written)) < 0)
		return r;
	*referenced = pb;
	if ((r = cat_prepare(p, "UPDATE snapshots SET referenced = ?, logicalreferenced = ?,"
			       " written = ? WHERE id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, (int64_t)pb);
	sqlite3_bind_int64(st, 2, (int64_t)lb);
	sqlite3_bind_int64(st, 3, (int64_t)written);
	sqlite3_bind_int64(st, 4, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording snapshot figures");
	sqlite3_finalize(st);
	return r;
}

/* The dataset the writer looked up is still there under that name: a
 * capture or receive that looked it up just before a rename (rename.c
 * keeps out those that run, not one waiting for the gc lock) would
 * otherwise put its snapshot under the new name, or a destroyed one's id
 * would fail as a bare constraint error. */
static int ds_still_named(struct store_pool *p, const struct store_ds *ds)
{
	sqlite3_stmt *st = NULL;
	const char *rel = ds_relname(p, ds->name);
	int r = cat_prepare(p, "SELECT name FROM datasets WHERE id = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		const char *now = (const char *)sqlite3_column_text(st, 0);
		char full[STORE_NAME_MAX + 1];
		if (!rel || !now || strcmp(now, rel)) {
			ds_fullname(p, now ? now : "", full, sizeof full);
			r = ferry_err(FERR_NOENT, "dataset '%s' was renamed to '%s' meanwhile",
				      ds->name, full);
		}
	} else if (s == SQLITE_DONE) {
		r = ferry_err(FERR_NOENT, "dataset '%s' was destroyed meanwhile", ds->name);
	} else {
		r = cat_err(p, "looking up the dataset");
	}
	sqlite3_finalize(st);
	return r;
}

int snap_record(struct store_pool *p, const struct store_ds *ds, const char *name,
		const uint8_t root[FERRY_HASH_LEN], uint64_t guid, uint64_t creation_ns,
		int64_t *id)
{
	uint64_t referenced = 0;
	int r;
	if ((r = ds_still_named(p, ds)) < 0 || (r = snap_insert(p, ds, name, root, guid, creation_ns, id)) < 0 ||
	    (r = snap_link_blocks(p, *id)) < 0 || (r = snap_set_figures(p, *id, &referenced)) < 0)
		return r;
	return store_quota_check(p, ds, referenced); /* quota.c */
}
