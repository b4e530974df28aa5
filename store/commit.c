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
	int64_t ds_id = 0, t = 0, ref = 0, lref = 0;
	int r;
	if ((r = query_i64(p, "SELECT ds_id FROM snapshots WHERE id = ?", snap_id, &ds_id)) < 0 ||
	    (r = query_i64(p, "SELECT createtxg FROM snapshots WHERE id = ?", snap_id, &t)) < 0 ||
	    (r = life_snap_has(p, ds_id, t, &ref, &lref)) < 0)
		return r;
	*pbytes = (uint64_t)ref;
	*lbytes = (uint64_t)lref;
	return 0;
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
		       int64_t *id, uint64_t *txgp)
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
	*txgp = txg;
	sqlite3_finalize(st);
	return r;
}

/* The base's blocks, each under the copy store_writer_ref would pick,
 * less those refs.c found gone: what refs.c used to add to w_refs itself,
 * for a writer whose change can no longer be applied as one (its base is
 * not the newest any more, or a block got a second copy meanwhile). */
static int seed_from_base(struct store_pool *p, int64_t base_id)
{
	return cat_exec_i64(p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level)"
			    " SELECT c.hash, c.codec, c.level FROM snapshots s"
			    " JOIN ds_refs x ON x.ds_id = s.ds_id AND x.born <= s.createtxg"
			    " AND (x.died IS NULL OR x.died > s.createtxg)"
			    " JOIN main.blocks b ON b.id = x.block_id"
			    " JOIN main.blocks c ON c.id = (SELECT id FROM main.blocks WHERE hash = b.hash"
			    "  ORDER BY codec, level LIMIT 1)"
			    " WHERE s.id = ? AND b.hash NOT IN (SELECT hash FROM temp.r_gone)", base_id);
}

/* The snapshot's block references (ds_refs rows: what changed) and its
 * figures: referenced and logicalreferenced the predecessor's corrected
 * by what was born and what died, written what was born. */
static int snap_link_blocks(struct store_pool *p, const struct store_ds *ds, int64_t id,
			    int64_t txg, const uint8_t root[FERRY_HASH_LEN], uint64_t *referenced)
{
	sqlite3_stmt *st = NULL;
	int64_t nrefs = 0, nlinked = 0, prev = 0, prev_txg = 0, base[2] = {0, 0};
	int64_t born[2] = {0, 0}, gone[2] = {0, 0};
	int delta = 0, multi = 0, r;
	r = query_i64(p, "SELECT id FROM snapshots WHERE ds_id = (SELECT ds_id FROM snapshots"
		      " WHERE id = ?1) AND id != ?1 ORDER BY createtxg DESC LIMIT 1", id, &prev);
	if (r == -FERR_NOENT) {
		ferry_err_clear(); /* the dataset's first snapshot */
		prev = 0;
	} else if (r < 0) {
		return r;
	}
	if (prev && ((r = query_i64(p, "SELECT createtxg FROM snapshots WHERE id = ?", prev,
				    &prev_txg)) < 0 ||
		     (r = query_i64(p, "SELECT referenced FROM snapshots WHERE id = ?", prev,
				    &base[0])) < 0 ||
		     (r = query_i64(p, "SELECT logicalreferenced FROM snapshots WHERE id = ?", prev,
				    &base[1])) < 0))
		return r;
	if (prev && prev_txg >= txg)
		return ferry_err(FERR_INVAL, "dataset '%s' has a snapshot of this txg already", ds->name);
	if (p->life_base) {
		if ((r = life_multicopy(p, &multi)) < 0)
			return r;
		delta = p->life_base == prev && p->life_ds == ds->id && !multi;
		/* idempotent: w_refs holding the whole set is a change too, so
		 * a retry after a rollback gives the same */
		if (!delta && (r = seed_from_base(p, p->life_base)) < 0)
			return r;
	}
	if ((r = life_temp_reset(p)) < 0 ||
	    (r = cat_exec(p, "INSERT OR IGNORE INTO temp.l_set(block_id) SELECT b.id"
			     " FROM temp.w_refs r JOIN main.blocks b ON b.hash = r.hash"
			     " AND b.codec = r.codec AND b.level = r.level")) < 0)
		return r;
	/* every reference the writer made names a block the pool (still) has */
	if ((r = query_i64(p, "SELECT count(*) FROM temp.w_refs WHERE ? IS NOT NULL", 1, &nrefs)) < 0 ||
	    (r = query_i64(p, "SELECT count(*) FROM temp.l_set WHERE ? IS NOT NULL", 1, &nlinked)) < 0)
		return r;
	if (nrefs != nlinked)
		return ferry_err(FERR_CORRUPT, "%lld referenced blocks vanished from the pool",
				 (long long)(nrefs - nlinked));
	uint64_t ref = 0, lref = 0;
	if (delta) {
		if ((r = life_apply_delta(p, ds->id, txg, born, gone)) < 0 ||
		    (r = census_commit(p, ds->id, root)) < 0)
			return r;
		ref = (uint64_t)(base[0] + born[0] - gone[0]);
		lref = (uint64_t)(base[1] + born[1] - gone[1]);
	} else {
		int64_t all[2] = {0, 0};
		if ((r = life_apply_set(p, ds->id, txg, born)) < 0)
			return r;
		if ((r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0)"
				       " FROM temp.l_set s JOIN main.blocks b ON b.id = s.block_id",
				       &st)) < 0)
			return r;
		if (sqlite3_step(st) == SQLITE_ROW) {
			all[0] = sqlite3_column_int64(st, 0);
			all[1] = sqlite3_column_int64(st, 1);
		} else {
			r = cat_err(p, "summing snapshot blocks");
		}
		sqlite3_finalize(st);
		st = NULL;
		if (r < 0)
			return r;
		ref = (uint64_t)all[0];
		lref = (uint64_t)all[1];
	}
	*referenced = ref;
	if ((r = cat_prepare(p, "UPDATE snapshots SET referenced = ?, logicalreferenced = ?,"
			       " written = ? WHERE id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, (int64_t)ref);
	sqlite3_bind_int64(st, 2, (int64_t)lref);
	sqlite3_bind_int64(st, 3, born[0]);
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
	uint64_t referenced = 0, txg = 0;
	int r;
	if ((r = ds_still_named(p, ds)) < 0 ||
	    (r = snap_insert(p, ds, name, root, guid, creation_ns, id, &txg)) < 0 ||
	    (r = snap_link_blocks(p, ds, *id, (int64_t)txg, root, &referenced)) < 0)
		return r;
	return store_quota_check(p, ds, referenced); /* quota.c */
}
