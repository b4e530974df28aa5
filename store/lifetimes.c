/* store/lifetimes.c — which snapshots reference a block, as ZFS keeps it:
 * a birth and a death txg per (dataset, block) instead of one row per
 * (snapshot, block) (docs/notes/lifetimes.md).
 *
 *   ds_refs(ds_id, block_id, born, died): every snapshot S of ds_id with
 *   born <= S.createtxg < died (died NULL: no end) references the block.
 *
 * The rows are kept in a normal form every operation here preserves and
 * the queries of the other files rely on:
 *   - born is the txg of the first snapshot of the interval, died the txg
 *     of the first later snapshot that lacks the block (NULL: the newest
 *     has it), both txgs of snapshots that exist;
 *   - the intervals of one (ds, block) are disjoint and not adjacent: a
 *     snapshot lacking the block lies between two of them.
 * So every row holds at least one snapshot, the rows with died NULL are
 * the newest snapshot's blocks, and the rows born at S's txg are what S
 * references that its predecessor does not (written). A snapshot costs
 * the rows of what changed; a destroy the rows born or dead at its txg. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char life_tables[] =
	"CREATE TABLE IF NOT EXISTS ds_refs("
	"  ds_id INTEGER NOT NULL,"
	"  block_id INTEGER NOT NULL,"
	"  born INTEGER NOT NULL,"
	"  died INTEGER,"
	"  PRIMARY KEY(ds_id, block_id, born)) WITHOUT ROWID;"
	"CREATE INDEX IF NOT EXISTS ds_refs_born ON ds_refs(ds_id, born);"
	"CREATE INDEX IF NOT EXISTS ds_refs_died ON ds_refs(ds_id, died);"
	"CREATE INDEX IF NOT EXISTS ds_refs_block ON ds_refs(block_id);"
	/* a block stored under a second codec: from then on a snapshot built
	 * on a base may reference another copy than its base did (refs.c
	 * seeds the base's blocks under the first copy), which the row-cheap
	 * commit cannot see; it is taken only while no hash has two copies
	 * (gc clears the mark when none has any more) */
	"CREATE TRIGGER IF NOT EXISTS blocks_copy AFTER INSERT ON blocks"
	" WHEN EXISTS (SELECT 1 FROM blocks c WHERE c.hash = NEW.hash AND c.id != NEW.id)"
	" BEGIN INSERT OR REPLACE INTO meta(key, value) VALUES('multicopy', '1'); END;";

/* The old table's shape, for reading (tests, scripts, diagnostics): one
 * row per (snapshot, block). Not for writing. */
static const char life_view[] =
	"CREATE VIEW IF NOT EXISTS snap_blocks(snap_id, block_id) AS"
	" SELECT s.id, r.block_id FROM ds_refs r JOIN snapshots s ON s.ds_id = r.ds_id"
	" AND s.createtxg >= r.born AND (r.died IS NULL OR s.createtxg < r.died);";

/* A read-only open of a pool not converted yet: its snap_blocks rows as
 * intervals of one snapshot each, [S, next snapshot). Not merged, but
 * every reading query holds on that too (none assumes adjacency away). */
static const char life_ro_view[] =
	"CREATE TEMP VIEW IF NOT EXISTS ds_refs(ds_id, block_id, born, died) AS"
	" SELECT s.ds_id, x.block_id, s.createtxg, (SELECT min(n.createtxg) FROM main.snapshots n"
	" WHERE n.ds_id = s.ds_id AND n.createtxg > s.createtxg)"
	" FROM main.snap_blocks x JOIN main.snapshots s ON s.id = x.snap_id;";

static const char life_temp[] =
	"CREATE TEMP TABLE IF NOT EXISTS l_set(block_id INTEGER PRIMARY KEY);"
	"CREATE TEMP TABLE IF NOT EXISTS l_gone(block_id INTEGER PRIMARY KEY);"
	"CREATE TEMP TABLE IF NOT EXISTS l_merge(block_id INTEGER PRIMARY KEY);"
	"DELETE FROM temp.l_set; DELETE FROM temp.l_gone; DELETE FROM temp.l_merge;";

const char *life_schema_sql(void)
{
	return life_tables;
}

const char *life_view_sql(void)
{
	return life_view;
}

/* Runs sql with the n integer parameters of a[]; its first row's first
 * nout columns into out[] (a statement without rows: none expected). */
static int run(struct store_pool *p, const char *sql, int n, const int64_t *a, int nout,
	       int64_t *out, const char *what)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++)
		sqlite3_bind_int64(st, i + 1, a[i]);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW && nout) {
		for (int i = 0; i < nout; i++)
			out[i] = sqlite3_column_int64(st, i);
	} else if (s != SQLITE_DONE || nout) {
		r = s == SQLITE_DONE ? ferry_err(FERR_CATALOG, "%s: no row", what) : cat_err(p, what);
	}
	sqlite3_finalize(st);
	return r;
}

int life_temp_reset(struct store_pool *p)
{
	return cat_exec(p, life_temp);
}

int life_multicopy(struct store_pool *p, int *yes)
{
	char buf[8];
	int r = cat_meta_get(p, "multicopy", buf, sizeof buf);
	*yes = 0;
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	*yes = 1;
	return 0;
}

int life_multicopy_recheck(struct store_pool *p)
{
	int64_t any = 0;
	int yes = 0, r;
	if ((r = life_multicopy(p, &yes)) < 0 || !yes)
		return r;
	if ((r = run(p, "SELECT count(*) FROM (SELECT 1 FROM blocks GROUP BY hash"
			" HAVING count(*) > 1 LIMIT 1)", 0, NULL, 1, &any, "counting copies")) < 0)
		return r;
	return any ? 0 : cat_exec(p, "DELETE FROM meta WHERE key = 'multicopy'");
}

static const char born_sql[] =
	"INSERT INTO ds_refs(ds_id, block_id, born, died)"
	" SELECT ?1, s.block_id, ?2, NULL FROM temp.l_set s WHERE NOT EXISTS"
	" (SELECT 1 FROM ds_refs r WHERE r.ds_id = ?1 AND r.block_id = s.block_id"
	" AND r.died IS NULL)";
static const char born_sum_sql[] =
	"SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0) FROM ds_refs r"
	" JOIN blocks b ON b.id = r.block_id WHERE r.ds_id = ?1 AND r.born = ?2";

int life_apply_set(struct store_pool *p, int64_t ds_id, int64_t txg, int64_t born[2])
{
	const int64_t a[2] = {ds_id, txg};
	int r;
	/* what the dataset's newest snapshot lacks is born; what it has that
	 * the new one lacks dies; the rest keeps its row untouched */
	if ((r = run(p, born_sql, 2, a, 0, NULL, "recording block references")) < 0 ||
	    (r = run(p, "UPDATE ds_refs SET died = ?2 WHERE ds_id = ?1 AND died IS NULL AND born < ?2"
			" AND block_id NOT IN (SELECT block_id FROM temp.l_set)", 2, a, 0, NULL,
		     "recording block references")) < 0)
		return r;
	return run(p, born_sum_sql, 2, a, 2, born, "summing block references");
}

/* The dataset's live rows of the gone hashes: from the few gone hashes
 * to their blocks to the rows, in that order (CROSS JOIN: left alone,
 * SQLite took every live row of the dataset first, 0.47 s at 1,000,000
 * files for a 0.1 % change; tests/unit/test_plans checks the plan). */
const char life_sql_gone[] =
	"INSERT OR IGNORE INTO temp.l_gone(block_id) SELECT r.block_id"
	" FROM temp.r_gone g CROSS JOIN blocks b ON b.hash = g.hash"
	" CROSS JOIN ds_refs r ON r.ds_id = ?1 AND r.block_id = b.id AND r.died IS NULL"
	" WHERE b.id NOT IN (SELECT block_id FROM temp.l_set)";

int life_apply_delta(struct store_pool *p, int64_t ds_id, int64_t txg, int64_t born[2],
		     int64_t gone[2])
{
	const int64_t a[2] = {ds_id, txg};
	int r;
	/* l_set: the blocks the writer references (what it wrote or read
	 * again); temp.r_gone: the hashes refs.c found gone from the base's
	 * tree and not used by the rest of the new one */
	if ((r = run(p, life_sql_gone, 1, a, 0, NULL, "recording block references")) < 0 ||
	    (r = run(p, "SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0)"
			" FROM temp.l_gone g JOIN blocks b ON b.id = g.block_id", 0, NULL, 2, gone,
		     "summing block references")) < 0 ||
	    (r = run(p, "UPDATE ds_refs SET died = ?2 WHERE ds_id = ?1 AND died IS NULL"
			" AND block_id IN (SELECT block_id FROM temp.l_gone)", 2, a, 0, NULL,
		     "recording block references")) < 0 ||
	    (r = run(p, born_sql, 2, a, 0, NULL, "recording block references")) < 0)
		return r;
	return run(p, born_sum_sql, 2, a, 2, born, "summing block references");
}

/* The txg and id of ds's neighbour of txg t: the newest before it (dir
 * -1) or the oldest after (dir 1); both 0 when there is none. */
static int neighbour(struct store_pool *p, int64_t ds_id, int64_t t, int dir, int64_t *txg,
		     int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, dir < 0 ? "SELECT createtxg, id FROM snapshots WHERE ds_id = ?1"
					 " AND createtxg < ?2 ORDER BY createtxg DESC LIMIT 1"
				       : "SELECT createtxg, id FROM snapshots WHERE ds_id = ?1"
					 " AND createtxg > ?2 ORDER BY createtxg LIMIT 1", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds_id);
	sqlite3_bind_int64(st, 2, t);
	*txg = *id = 0;
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		*txg = sqlite3_column_int64(st, 0);
		*id = sqlite3_column_int64(st, 1);
	} else if (s != SQLITE_DONE) {
		r = cat_err(p, "looking up a snapshot");
	}
	sqlite3_finalize(st);
	return r;
}

/* The rows that hold snapshot t and no other: born at t, dead at the
 * next snapshot's txg n (none: alive). */
#define ONLY_T " x.ds_id = ?1 AND x.born = ?2 AND (CASE WHEN ?3 = 0 THEN x.died IS NULL" \
	       " ELSE x.died = ?3 END)"

int life_snap_unique(struct store_pool *p, int64_t ds_id, int64_t t, uint64_t *used)
{
	int64_t pt, pid, a[3] = {ds_id, t, 0}, v = 0;
	int r;
	if ((r = neighbour(p, ds_id, t, 1, &a[2], &pid)) < 0)
		return r;
	/* of blocks no other row of the dataset names (each holds a snapshot) */
	if ((r = run(p, "SELECT coalesce(sum(b.psize), 0) FROM ds_refs x JOIN blocks b ON"
			" b.id = x.block_id WHERE" ONLY_T " AND NOT EXISTS (SELECT 1 FROM ds_refs y"
			" WHERE y.ds_id = ?1 AND y.block_id = x.block_id AND y.born != x.born)",
		     3, a, 1, &v, "computing snapshot space")) < 0)
		return r;
	(void)pt;
	*used = (uint64_t)v;
	return 0;
}

int life_snap_has(struct store_pool *p, int64_t ds_id, int64_t t, int64_t *ref, int64_t *lref)
{
	int64_t a[2] = {ds_id, t}, v[2] = {0, 0};
	int r = run(p, "SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0) FROM ds_refs x"
		       " JOIN blocks b ON b.id = x.block_id WHERE x.ds_id = ?1 AND x.born <= ?2"
		       " AND (x.died IS NULL OR x.died > ?2)", 2, a, 2, v, "summing snapshot blocks");
	*ref = v[0];
	*lref = v[1];
	return r;
}

int life_destroy(struct store_pool *p, int64_t snap_id)
{
	int64_t ds_id = 0, t = 0, pt, pid, nt, nid, row[2] = {0, 0};
	int r;
	{
		sqlite3_stmt *st = NULL;
		if ((r = cat_prepare(p, "SELECT ds_id, createtxg FROM snapshots WHERE id = ?", &st)) < 0)
			return r;
		sqlite3_bind_int64(st, 1, snap_id);
		int s = sqlite3_step(st);
		if (s == SQLITE_ROW) {
			row[0] = sqlite3_column_int64(st, 0);
			row[1] = sqlite3_column_int64(st, 1);
		} else if (s != SQLITE_DONE) {
			r = cat_err(p, "looking up a snapshot");
		}
		sqlite3_finalize(st);
		if (r < 0 || s == SQLITE_DONE)
			return r; /* named twice in the list: gone already */
		ds_id = row[0];
		t = row[1];
	}
	if ((r = neighbour(p, ds_id, t, -1, &pt, &pid)) < 0 ||
	    (r = neighbour(p, ds_id, t, 1, &nt, &nid)) < 0 || (r = life_temp_reset(p)) < 0)
		return r;
	const int64_t a[3] = {ds_id, t, nt};
	(void)pt;
	/* what S alone held goes */
	if ((r = run(p, "DELETE FROM ds_refs AS x WHERE" ONLY_T, 3, a, 0, NULL,
		     "destroying block references")) < 0)
		return r;
	if (nt) {
		/* what S dropped and N has again: one interval from P on */
		if ((r = run(p, "INSERT INTO temp.l_merge(block_id) SELECT x.block_id FROM ds_refs x"
				" WHERE x.ds_id = ?1 AND x.died = ?2 AND EXISTS (SELECT 1 FROM ds_refs y"
				" WHERE y.ds_id = ?1 AND y.block_id = x.block_id AND y.born = ?3)",
			     3, a, 0, NULL, "destroying block references")) < 0 ||
		    (r = run(p, "UPDATE ds_refs AS x SET died = (SELECT y.died FROM ds_refs y WHERE"
				" y.ds_id = ?1 AND y.block_id = x.block_id AND y.born = ?3)"
				" WHERE x.ds_id = ?1 AND x.died = ?2 AND x.block_id IN"
				" (SELECT block_id FROM temp.l_merge)", 3, a, 0, NULL,
			     "destroying block references")) < 0 ||
		    (r = run(p, "DELETE FROM ds_refs WHERE ds_id = ?1 AND born = ?3 AND block_id IN"
				" (SELECT block_id FROM temp.l_merge)", 3, a, 0, NULL,
			     "destroying block references")) < 0 ||
		    /* the rest S dropped is dead from N on; what S added and N
		     * kept is born at N */
		    (r = run(p, "UPDATE ds_refs SET died = ?3 WHERE ds_id = ?1 AND died = ?2", 3, a, 0,
			     NULL, "destroying block references")) < 0 ||
		    (r = run(p, "UPDATE ds_refs SET born = ?3 WHERE ds_id = ?1 AND born = ?2", 3, a, 0,
			     NULL, "destroying block references")) < 0)
			return r;
	} else if ((r = run(p, "UPDATE ds_refs SET died = NULL WHERE ds_id = ?1 AND died = ?2", 2,
			    a, 0, NULL, "destroying block references")) < 0) {
		/* S was the newest: what it dropped is P's, the newest now */
		return r;
	}
	{
		int64_t s1[1] = {snap_id};
		if ((r = run(p, "DELETE FROM snapshots WHERE id = ?1", 1, s1, 0, NULL,
			     "destroying a snapshot")) < 0)
			return r;
	}
	if (!nt)
		return 0;
	/* N's predecessor changed: its written is what was born at it */
	int64_t b[3] = {ds_id, nt, nid};
	return run(p, "UPDATE snapshots SET written = (SELECT coalesce(sum(bl.psize), 0) FROM ds_refs x"
		      " JOIN blocks bl ON bl.id = x.block_id WHERE x.ds_id = ?1 AND x.born = ?2)"
		      " WHERE id = ?3", 3, b, 0, NULL, "recording written");
}

int life_convert(struct store_pool *p, const char *src)
{
	sqlite3_stmt *ls = NULL, *fill = NULL;
	char sql[256];
	int64_t ds = -1, last = 0;
	int r, s;
	if ((r = life_temp_reset(p)) < 0)
		return r;
	snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO temp.l_set(block_id) SELECT block_id FROM %s"
		 " WHERE snap_id = ?", src);
	if ((r = cat_prepare(p, "SELECT id, ds_id, createtxg FROM snapshots ORDER BY ds_id, createtxg,"
			       " id", &ls)) < 0 ||
	    (r = cat_prepare(p, sql, &fill)) < 0)
		goto out;
	/* each dataset's snapshots in txg order, each as the newest */
	while ((s = sqlite3_step(ls)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(ls, 0), d = sqlite3_column_int64(ls, 1);
		int64_t t = sqlite3_column_int64(ls, 2), born[2];
		if (d == ds && t <= last) {
			r = ferry_err(FERR_CORRUPT, "two snapshots of one dataset have txg %lld",
				      (long long)t);
			goto out;
		}
		ds = d;
		last = t;
		if ((r = cat_exec(p, "DELETE FROM temp.l_set")) < 0)
			goto out;
		sqlite3_reset(fill);
		sqlite3_bind_int64(fill, 1, id);
		if (sqlite3_step(fill) != SQLITE_DONE) {
			r = cat_err(p, "converting block references");
			goto out;
		}
		if ((r = life_apply_set(p, d, t, born)) < 0)
			goto out;
	}
	if (s != SQLITE_DONE)
		r = cat_err(p, "converting block references");
out:
	sqlite3_finalize(ls);
	sqlite3_finalize(fill);
	return r;
}

/* "table", "view" or "" for the name snap_blocks in the catalogue. */
static int snap_blocks_kind(struct store_pool *p, char *kind, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT type FROM main.sqlite_master WHERE name = 'snap_blocks'", &st);
	if (r < 0)
		return r;
	kind[0] = 0;
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		snprintf(kind, n, "%s", (const char *)sqlite3_column_text(st, 0));
	else if (s != SQLITE_DONE)
		r = cat_err(p, "reading the catalogue schema");
	sqlite3_finalize(st);
	return r;
}

int life_migrate(struct store_pool *p)
{
	char kind[16];
	int r;
	if ((r = snap_blocks_kind(p, kind, sizeof kind)) < 0)
		return r;
	if (!strcmp(kind, "view"))
		return 0; /* converted, or made with ds_refs */
	if (!kind[0]) { /* a pool from before snapshots had blocks */
		if (p->flags & STORE_OPEN_RDONLY)
			return 0;
		int r2 = cat_exec(p, life_tables);
		return r2 < 0 ? r2 : cat_exec(p, life_view);
	}
	if (p->flags & STORE_OPEN_RDONLY)
		return cat_exec(p, life_ro_view);
	/* one transaction: the old table goes in the one that fills the new,
	 * so a crash leaves one or the other. Not store_tx_begin: the pool is
	 * being opened, there is no checkpoint to write with it. */
	if ((r = cat_exec(p, "BEGIN IMMEDIATE")) < 0)
		return r;
	if ((r = cat_exec(p, life_tables)) < 0 || (r = life_convert(p, "main.snap_blocks")) < 0 ||
	    (r = cat_exec(p, "DROP TABLE main.snap_blocks")) < 0 || (r = cat_exec(p, life_view)) < 0 ||
	    (r = cat_exec(p, "DELETE FROM meta WHERE key = 'multicopy'; INSERT INTO meta(key, value)"
			     " SELECT 'multicopy', '1' WHERE EXISTS (SELECT 1 FROM blocks GROUP BY hash"
			     " HAVING count(*) > 1)")) < 0 ||
	    (r = cat_exec(p, "COMMIT")) < 0) {
		struct ferry_errsave e;
		ferry_err_save(&e);
		if (!sqlite3_get_autocommit(p->db))
			(void)sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
		ferry_err_restore(&e);
		return r;
	}
	return 0;
}
