/* store/xfer.c — what send/ and recv/ need from the store beyond capture:
 * key sets (in memory up to a bound, then TEMP tables, so memory stays
 * bounded however many objects a stream holds), block membership of a
 * snapshot, and reading the nodes a writer on the same pool has stored but
 * not yet committed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HSET_BATCH 4096
/* A set starts in memory: an open-addressing table (linear probing) of
 * 48-byte slots that grows from HMEM_MIN to HMEM_MAX slots (3.1 MB; the
 * keys of send and recv are 33 bytes, and 41 for recv's blocklist spans),
 * kept at most 3/4 full. A
 * receive asks its sets four or five times per block and node
 * (recv/body.c, recv/verify.c), and each SQLite statement cost 2-5 us on
 * the thread that reads the stream: for a stream of fewer than ~49,000
 * objects none of it reaches SQLite. Past that ("tiered"), memory keeps
 * the keys it holds and the rest go to the set's TEMP table, so memory
 * stays bounded and the first ~49,000 keys still cost no statement; a key
 * longer than HMEM_KEY_MAX goes there too. The two parts never share a
 * key (a key is added to the table only when memory does not hold it). A
 * delete, and saving a partial receive, move the whole set to its table
 * for good ("tabled"). */
#define HMEM_KEY_MAX STORE_HSET_MEM_KEY_MAX
#define HMEM_MIN 1024u
#define HMEM_MAX (1u << 16)
/* Once tiered, a Bloom filter stays in front of the table: most lookups
 * are of keys the set does not hold (a block or node met for the first
 * time), and a clear bit answers them without an index search. The filter
 * only ever over-approximates the table: rows enter only through
 * store_hset_add and the spill, which set the bits first, and a delete or
 * a rollback only removes rows; so a clear bit always means "not there",
 * and a set bit still asks the table. 2^23 bits (1 MiB): a false positive
 * rate under 0.1 % up to ~300,000 keys, about 30 % at 3 million. */
#define HSET_BLOOM_BITS (1u << 23)
#define HSET_BLOOM_K 3

struct hslot {
	uint8_t len; /* 0: empty */
	uint8_t key[HMEM_KEY_MAX];
	int32_t val;
};
_Static_assert(sizeof(struct hslot) == 48, "a key set's slot is 48 bytes");

struct store_hset {
	struct store_pool *p;
	char table[48];
	int batch;     /* wrap inserts in our own transactions (no writer open) */
	int in_tx;
	unsigned ops;
	sqlite3_stmt *st_add, *st_get, *st_del, *st_count;
	struct hslot *mem; /* mem_cap slots, or NULL (none yet, or tabled) */
	uint32_t mem_cap, mem_n;
	enum { HSET_MEM, HSET_TIERED, HSET_TABLED } state;
	int broken;        /* a move to the table failed midway: the set is lost */
	uint64_t *bloom;   /* once tiered: HSET_BLOOM_BITS bits, or NULL */
};

static uint64_t key_hash(const uint8_t *k, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n, w;

	for (; n >= 8; k += 8, n -= 8) {
		memcpy(&w, k, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, k, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/* Sets (set != 0) or tests the key's bits: 1 when all are set. */
static int bloom_bits(uint64_t *b, const void *key, size_t len, int set)
{
	uint64_t h = key_hash(key, len);
	uint32_t a = (uint32_t)h, d = (uint32_t)(h >> 32) | 1;
	int all = 1;

	for (unsigned i = 0; i < HSET_BLOOM_K; i++, a += d) {
		uint32_t bit = a & (HSET_BLOOM_BITS - 1);
		uint64_t m = 1ull << (bit & 63);
		if (set)
			b[bit >> 6] |= m;
		else if (!(b[bit >> 6] & m))
			all = 0;
	}
	return all;
}

static unsigned hset_serial;

int store_hset_new(struct store_pool *p, int batch, struct store_hset **out)
{
	struct store_hset *s = calloc(1, sizeof *s);
	char sql[320];
	int r;
	if (!s)
		return ferry_err(FERR_NOMEM, "creating a key set");
	s->p = p;
	s->batch = batch;
	snprintf(s->table, sizeof s->table, "temp.xset_%u",
		 __atomic_add_fetch(&hset_serial, 1, __ATOMIC_RELAXED));
	snprintf(sql, sizeof sql,
		 /* freed TEMP pages are not zeroed (cat_open's pragmas in
		  * store/catalog.c), so dropping the set journals none */
		 "CREATE TEMP TABLE IF NOT EXISTS %s(k BLOB PRIMARY KEY, v INTEGER NOT NULL)"
		 " WITHOUT ROWID; DELETE FROM %s;", s->table + 5, s->table);
	if ((r = cat_exec(p, sql)) < 0)
		goto fail;
	snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s(k, v) VALUES(?, ?)", s->table);
	if ((r = cat_prepare(p, sql, &s->st_add)) < 0)
		goto fail;
	snprintf(sql, sizeof sql, "SELECT v FROM %s WHERE k = ?", s->table);
	if ((r = cat_prepare(p, sql, &s->st_get)) < 0)
		goto fail;
	snprintf(sql, sizeof sql, "DELETE FROM %s WHERE k = ?", s->table);
	if ((r = cat_prepare(p, sql, &s->st_del)) < 0)
		goto fail;
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", s->table);
	if ((r = cat_prepare(p, sql, &s->st_count)) < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	store_hset_free(s);
	return r;
}

/* Commits the set's own batch transaction (temp tables only). A COMMIT
 * that fails is the set's error: its last batch may be lost. Either way
 * the connection leaves the transaction, so the next one can begin. */
static int hset_tx_end(struct store_hset *s)
{
	int r = 0;
	if (s->in_tx && (r = cat_exec(s->p, "COMMIT")) < 0 && !sqlite3_get_autocommit(s->p->db)) {
		struct ferry_errsave e;
		ferry_err_save(&e);
		if (cat_exec(s->p, "ROLLBACK") < 0)
			ferry_err_restore_also(&e, "rolling the key set back");
		else
			ferry_err_restore(&e);
	}
	s->in_tx = 0;
	s->ops = 0;
	return r;
}

void store_hset_free(struct store_hset *s)
{
	struct ferry_errsave e;
	char sql[96];
	if (!s)
		return;
	/* the set is going: what its last batch held is needed no more, and
	 * a table a failed DROP leaves goes with the connection (the next set
	 * has a table of its own); the caller's detail is kept */
	ferry_err_save(&e);
	if (hset_tx_end(s) < 0)
		ferry_err_restore(&e);
	sqlite3_finalize(s->st_add);
	sqlite3_finalize(s->st_get);
	sqlite3_finalize(s->st_del);
	sqlite3_finalize(s->st_count);
	free(s->bloom);
	free(s->mem);
	if (s->p && s->p->db) {
		snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", s->table);
		if (cat_exec(s->p, sql) < 0)
			ferry_err_restore(&e);
	}
	free(s);
}

static int hset_op(struct store_hset *s)
{
	int r;
	if (!s->batch || s->p->tx_depth > 0 ||
	    (!s->in_tx && !sqlite3_get_autocommit(s->p->db)))
		return 0; /* someone else's transaction carries the insert */
	if (s->in_tx && ++s->ops >= HSET_BATCH && (r = hset_tx_end(s)) < 0)
		return r;
	if (!s->in_tx) {
		if ((r = cat_exec(s->p, "BEGIN")) < 0)
			return r;
		s->in_tx = 1;
	}
	return 0;
}

static int sql_add(struct store_hset *s, const void *key, size_t len, int val)
{
	int r;
	if ((r = hset_op(s)) < 0)
		return r;
	if (s->bloom)
		bloom_bits(s->bloom, key, len, 1);
	sqlite3_reset(s->st_add);
	sqlite3_bind_blob(s->st_add, 1, key, (int)len, SQLITE_STATIC);
	sqlite3_bind_int(s->st_add, 2, val);
	if (sqlite3_step(s->st_add) != SQLITE_DONE) {
		r = cat_err(s->p, "adding to a key set");
		sqlite3_reset(s->st_add);
		return r;
	}
	r = sqlite3_changes(s->p->db) > 0 ? 1 : 0;
	sqlite3_reset(s->st_add);
	return r;
}

/* The slot holding key, or the empty one where it would go. */
static struct hslot *mem_find(const struct store_hset *s, const void *key, size_t len)
{
	uint32_t m = s->mem_cap - 1, i = (uint32_t)key_hash(key, len) & m;
	while (s->mem[i].len && (s->mem[i].len != len || memcmp(s->mem[i].key, key, len) != 0))
		i = (i + 1) & m;
	return &s->mem[i];
}

static int mem_grow(struct store_hset *s)
{
	uint32_t cap = s->mem ? s->mem_cap * 2 : HMEM_MIN, old = s->mem_cap;
	struct hslot *o = s->mem, *n = calloc(cap, sizeof *n);
	if (!n)
		return ferry_err(FERR_NOMEM, "growing a key set");
	s->mem = n;
	s->mem_cap = cap;
	for (uint32_t i = 0; i < old; i++)
		if (o[i].len)
			*mem_find(s, o[i].key, o[i].len) = o[i];
	free(o);
	return 0;
}

/* Starts the table part of the set: its Bloom filter. */
static int tier(struct store_hset *s)
{
	if (!s->bloom && !(s->bloom = calloc(HSET_BLOOM_BITS / 64, sizeof *s->bloom)))
		return ferry_err(FERR_NOMEM, "moving a key set to its table");
	s->state = HSET_TIERED;
	return 0;
}

static int hset_usable(const struct store_hset *s)
{
	return s->broken ? ferry_err(FERR_IO, "a key set was lost by an earlier error") : 0;
}

/* Moves the whole set to its table for good. A failure midway leaves
 * keys in both parts, so the set is marked lost: every later use fails
 * (its owner, a send or a receive, stops at the first error anyway). */
static int to_table(struct store_hset *s)
{
	int r;
	if ((r = hset_usable(s)) < 0 || s->state == HSET_TABLED)
		return r;
	if ((r = tier(s)) < 0)
		return r;
	for (uint32_t i = 0; i < s->mem_cap; i++)
		if (s->mem[i].len && (r = sql_add(s, s->mem[i].key, s->mem[i].len,
						  s->mem[i].val)) < 0) {
			s->broken = 1;
			return r;
		}
	free(s->mem);
	s->mem = NULL;
	s->mem_cap = s->mem_n = 0;
	s->state = HSET_TABLED;
	return 0;
}

int store_hset_add(struct store_hset *s, const void *key, size_t len, int val)
{
	struct hslot *e;
	int r;
	if ((r = hset_usable(s)) < 0)
		return r;
	if (s->mem && len && len <= HMEM_KEY_MAX && mem_find(s, key, len)->len)
		return 0;
	if (s->state == HSET_MEM) {
		if (len == 0 || len > HMEM_KEY_MAX) {
			if ((r = tier(s)) < 0)
				return r;
		} else if (!s->mem || (s->mem_n + 1) * 4 > s->mem_cap * 3) {
			r = s->mem_cap >= HMEM_MAX ? tier(s) : mem_grow(s);
			if (r < 0)
				return r;
		}
	}
	if (s->state != HSET_MEM)
		return sql_add(s, key, len, val);
	e = mem_find(s, key, len);
	e->len = (uint8_t)len;
	memcpy(e->key, key, len);
	e->val = val;
	s->mem_n++;
	return 1;
}

int store_hset_get(struct store_hset *s, const void *key, size_t len, int *val)
{
	int r;
	if ((r = hset_usable(s)) < 0)
		return r;
	if (s->mem && len && len <= HMEM_KEY_MAX) {
		const struct hslot *e = mem_find(s, key, len);
		if (e->len) {
			if (val)
				*val = e->val;
			return 1;
		}
	}
	if (s->state == HSET_MEM)
		return 0;
	if (s->bloom && !bloom_bits(s->bloom, key, len, 0))
		return 0; /* never added to the table */
	sqlite3_reset(s->st_get);
	sqlite3_bind_blob(s->st_get, 1, key, (int)len, SQLITE_STATIC);
	int st = sqlite3_step(s->st_get);
	if (st == SQLITE_ROW) {
		if (val)
			*val = sqlite3_column_int(s->st_get, 0);
		r = 1;
	} else {
		r = st == SQLITE_DONE ? 0 : cat_err(s->p, "looking up a key set");
	}
	sqlite3_reset(s->st_get);
	return r;
}

int store_hset_del(struct store_hset *s, const void *key, size_t len)
{
	int r;
	/* rare (no stream path deletes): the table does it */
	if ((r = to_table(s)) < 0)
		return r;
	if ((r = hset_op(s)) < 0)
		return r;
	sqlite3_reset(s->st_del);
	sqlite3_bind_blob(s->st_del, 1, key, (int)len, SQLITE_STATIC);
	if (sqlite3_step(s->st_del) != SQLITE_DONE) {
		r = cat_err(s->p, "deleting from a key set");
		sqlite3_reset(s->st_del);
		return r;
	}
	r = sqlite3_changes(s->p->db) > 0 ? 1 : 0;
	sqlite3_reset(s->st_del);
	return r;
}

int store_hset_mark(struct store_hset *s, const void *key, size_t len, int bit, int *val)
{
	int v = 0, r;
	if ((r = hset_usable(s)) < 0)
		return r;
	if (s->mem && len && len <= HMEM_KEY_MAX) {
		struct hslot *e = mem_find(s, key, len);
		if (e->len) {
			v = e->val;
			e->val |= bit;
			if (val)
				*val = v;
			return v & bit ? 2 : 1;
		}
	}
	/* not in memory: in the table (not marked there), or nowhere */
	if ((r = store_hset_get(s, key, len, &v)) <= 0)
		return r;
	if (val)
		*val = v;
	return 3;
}

uint32_t store_hset_memory_keys(const struct store_hset *s)
{
	return s->mem_n;
}

int store_hset_count(struct store_hset *s, uint64_t *n)
{
	int r;
	if ((r = hset_usable(s)) < 0)
		return r;
	*n = s->mem_n; /* 0 once tabled */
	if (s->state == HSET_MEM)
		return 0;
	sqlite3_reset(s->st_count);
	if (sqlite3_step(s->st_count) == SQLITE_ROW)
		*n += (uint64_t)sqlite3_column_int64(s->st_count, 0);
	else
		r = cat_err(s->p, "counting a key set");
	sqlite3_reset(s->st_count);
	return r;
}

/* ---- snapshot membership -------------------------------------------------------- */

/* CROSS JOIN fixes the order: the snapshot, the block by its hash, then
 * the dataset's row of that block born last by the snapshot's txg (one
 * search of ds_refs' key); left to itself the planner may scan the
 * dataset's rows for each block (one lookup per block a send -i emits:
 * with snap_blocks that was 6.4 s instead of 0.24 s for a 1 % incremental
 * of 31,566 files). tests/unit/test_plans.c checks the plan. */
const char store_sql_snap_has_block[] =
	"SELECT 1 FROM snapshots s CROSS JOIN blocks b CROSS JOIN ds_refs x"
	" ON x.ds_id = s.ds_id AND x.block_id = b.id AND x.born <= s.createtxg"
	" WHERE b.hash = ?1 AND s.id = ?2 AND (x.died IS NULL OR x.died > s.createtxg) LIMIT 1";

struct store_snap_blocks {
	sqlite3_stmt *st; /* ?2 bound to the snapshot once: a reset keeps it */
	struct store_pool *p;
};

int store_snap_blocks_new(struct store_pool *p, int64_t snap_id, struct store_snap_blocks **out)
{
	struct store_snap_blocks *q = calloc(1, sizeof *q);
	int r;
	if (!q)
		return ferry_err(FERR_NOMEM, "looking up a snapshot's blocks");
	if ((r = cat_prepare(p, store_sql_snap_has_block, &q->st)) < 0) {
		free(q);
		return r;
	}
	sqlite3_bind_int64(q->st, 2, snap_id);
	q->p = p;
	*out = q;
	return 0;
}

int store_snap_blocks_has(struct store_snap_blocks *q, const uint8_t hash[FERRY_HASH_LEN])
{
	sqlite3_reset(q->st);
	sqlite3_bind_blob(q->st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	int s = sqlite3_step(q->st);
	int r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0
				 : cat_err(q->p, "looking up a snapshot block");
	sqlite3_reset(q->st);
	return r;
}

void store_snap_blocks_free(struct store_snap_blocks *q)
{
	if (!q)
		return;
	sqlite3_finalize(q->st);
	free(q);
}

/* ---- pending nodes ------------------------------------------------------------------ */

struct store_pnodes {
	struct store_pool *p;
	sqlite3_stmt *st_tmp, *st_main, *st_blk_tmp, *st_blk_main;
};

int store_pnodes_new(struct store_pool *p, struct store_pnodes **out)
{
	struct store_pnodes *n = calloc(1, sizeof *n);
	int r;
	if (!n)
		return ferry_err(FERR_NOMEM, "creating a node reader");
	n->p = p;
	/* temp.w_nodes exists once a writer was created on p (pack.c) */
	if ((r = cat_exec(p, "CREATE TEMP TABLE IF NOT EXISTS w_nodes(hash BLOB PRIMARY KEY,"
			     " type INTEGER NOT NULL, data BLOB NOT NULL);"
			     "CREATE TEMP TABLE IF NOT EXISTS w_new(hash BLOB NOT NULL,"
			     " codec INTEGER NOT NULL, level INTEGER NOT NULL, pack TEXT NOT NULL,"
			     " offset INTEGER NOT NULL, psize INTEGER NOT NULL,"
			     " lsize INTEGER NOT NULL, PRIMARY KEY(hash, codec, level))"
			     " WITHOUT ROWID;")) < 0 ||
	    (r = cat_prepare(p, "SELECT type, data FROM temp.w_nodes WHERE hash = ?",
			     &n->st_tmp)) < 0 ||
	    (r = cat_prepare(p, "SELECT type, data FROM main.nodes WHERE hash = ?",
			     &n->st_main)) < 0 ||
	    (r = cat_prepare(p, "SELECT lsize FROM temp.w_new WHERE hash = ? LIMIT 1",
			     &n->st_blk_tmp)) < 0 ||
	    (r = cat_prepare(p, "SELECT lsize FROM main.blocks WHERE hash = ? LIMIT 1",
			     &n->st_blk_main)) < 0) {
		store_pnodes_free(n);
		return r;
	}
	*out = n;
	return 0;
}

void store_pnodes_free(struct store_pnodes *n)
{
	if (!n)
		return;
	sqlite3_finalize(n->st_tmp);
	sqlite3_finalize(n->st_main);
	sqlite3_finalize(n->st_blk_tmp);
	sqlite3_finalize(n->st_blk_main);
	free(n);
}

int store_pnodes_read(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN], int *type,
		      struct fbuf *out)
{
	sqlite3_stmt *const sts[2] = {n->st_tmp, n->st_main};
	return node_read_either(n->p, sts, hash, type, out, "in the stream");
}

static int exists(struct store_pnodes *n, sqlite3_stmt *st, const uint8_t *hash, int64_t *val)
{
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW && val)
		*val = sqlite3_column_int64(st, 0);
	int r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : cat_err(n->p, "looking up");
	sqlite3_reset(st);
	return r;
}

int store_pnodes_has_node(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN], int *type)
{
	int r;
	sqlite3_stmt *sts[2] = {n->st_tmp, n->st_main};
	for (int i = 0; i < 2; i++) {
		int64_t t = 0;
		if ((r = exists(n, sts[i], hash, &t)) != 0) {
			if (r == 1 && type)
				*type = (int)t;
			return r;
		}
	}
	return 0;
}

int store_pnodes_has_block(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN],
			   uint32_t *lsize)
{
	int r;
	sqlite3_stmt *sts[2] = {n->st_blk_tmp, n->st_blk_main};
	for (int i = 0; i < 2; i++) {
		int64_t ls = 0;
		if ((r = exists(n, sts[i], hash, &ls)) != 0) {
			if (r == 1 && lsize)
				*lsize = (uint32_t)ls;
			return r;
		}
	}
	return 0;
}

/* ---- partial receives (recv -s) ------------------------------------------------------ */

static int exec_ds(struct store_pool *p, const char *sql, const char *ds, const char *what)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, ds, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, what);
	sqlite3_finalize(st);
	return r;
}

int store_partial_save(struct store_writer *w, struct store_pool *p, const char *ds,
		       struct store_hset *objs, const struct store_partial *pt)
{
	sqlite3_stmt *st = NULL;
	char sql[256];
	int r;
	store_writer_pause(w);
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = writer_persist(w)) < 0 || (r = writer_refs_stored(w)) < 0)
		goto fail;
	if ((r = exec_ds(p, "DELETE FROM recv_partial WHERE ds = ?1", ds, "saving a partial receive")) < 0 ||
	    (r = exec_ds(p, "DELETE FROM recv_partial_objs WHERE ds = ?1", ds,
			 "saving a partial receive")) < 0 ||
	    /* Every block the partial snapshot references, not only the ones
	     * it wrote: the resumed receive commits them all (store_partial_load
	     * puts them back among the writer's references), and until then gc
	     * keeps them, even once no other snapshot uses them. */
	    (r = exec_ds(p, "INSERT OR IGNORE INTO recv_partial_blocks(ds, block_id) SELECT ?1, b.id"
			    " FROM temp.w_refs f JOIN main.blocks b ON b.hash = f.hash"
			    " AND b.codec = f.codec AND b.level = f.level", ds,
			 "saving a partial receive")) < 0 ||
	    (r = exec_ds(p, "INSERT OR IGNORE INTO recv_partial_nodes(ds, hash, type, data)"
			    " SELECT ?1, hash, type, data FROM temp.w_nodes", ds,
			 "saving a partial receive")) < 0)
		goto fail;
	/* the table must hold the whole set */
	if ((r = to_table(objs)) < 0)
		goto fail;
	snprintf(sql, sizeof sql, "INSERT INTO recv_partial_objs(ds, k, v) SELECT ?1, k, v FROM %s",
		 objs->table);
	if ((r = exec_ds(p, sql, ds, "saving a partial receive")) < 0)
		goto fail;
	if ((r = cat_prepare(p, "INSERT INTO recv_partial(ds, token, to_guid, from_guid, pos, created)"
			       " VALUES(?, ?, ?, ?, ?, ?)", &st)) < 0)
		goto fail;
	sqlite3_bind_text(st, 1, ds, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, pt->token, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)pt->to_guid);
	sqlite3_bind_int64(st, 4, (int64_t)pt->from_guid);
	sqlite3_bind_int64(st, 5, (int64_t)pt->pos);
	sqlite3_bind_int(st, 6, pt->created);
	if (sqlite3_step(st) != SQLITE_DONE) {
		r = cat_err(p, "saving a partial receive");
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = store_tx_commit(p)) < 0)
		return r;
	writer_forget(w);
	return 0;
fail:
	sqlite3_finalize(st);
	store_tx_rollback(p);
	return r;
}

static int partial_table(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT 1 FROM sqlite_master WHERE name = 'recv_partial'", &st);
	if (r < 0)
		return r;
	r = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return r;
}

int store_partial_get(struct store_pool *p, const char *ds, struct store_partial *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = partial_table(p)) <= 0)
		return r < 0 ? r : ferry_err(FERR_NOENT, "'%s' has no partial receive", ds);
	if ((r = cat_prepare(p, "SELECT token, to_guid, from_guid, pos, created FROM recv_partial"
			       " WHERE ds = ?", &st)) < 0)
		return r;
	sqlite3_bind_text(st, 1, ds, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		snprintf(out->token, sizeof out->token, "%s", t ? t : "");
		out->to_guid = (uint64_t)sqlite3_column_int64(st, 1);
		out->from_guid = (uint64_t)sqlite3_column_int64(st, 2);
		out->pos = (uint64_t)sqlite3_column_int64(st, 3);
		out->created = sqlite3_column_int(st, 4);
		r = 0;
	} else {
		r = s == SQLITE_DONE ? ferry_err(FERR_NOENT, "'%s' has no partial receive", ds)
				     : cat_err(p, "reading a partial receive");
	}
	sqlite3_finalize(st);
	return r;
}

int store_partial_load(struct store_pool *p, const char *ds, struct store_hset *objs)
{
	sqlite3_stmt *st = NULL;
	int r, s;
	if ((r = exec_ds(p, "INSERT OR IGNORE INTO temp.w_nodes(hash, type, data)"
			    " SELECT hash, type, data FROM recv_partial_nodes WHERE ds = ?1", ds,
			 "loading a partial receive")) < 0 ||
	    (r = exec_ds(p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level)"
			    " SELECT b.hash, b.codec, b.level FROM recv_partial_blocks k"
			    " JOIN main.blocks b ON b.id = k.block_id WHERE k.ds = ?1", ds,
			 "loading a partial receive")) < 0)
		return r;
	/* through store_hset_add, so the set's memory or filter has them */
	if ((r = cat_prepare(p, "SELECT k, v FROM recv_partial_objs WHERE ds = ?1", &st)) < 0)
		return r;
	sqlite3_bind_text(st, 1, ds, -1, SQLITE_STATIC);
	while ((s = sqlite3_step(st)) == SQLITE_ROW)
		if ((r = store_hset_add(objs, sqlite3_column_blob(st, 0),
					(size_t)sqlite3_column_bytes(st, 0),
					sqlite3_column_int(st, 1))) < 0)
			break;
	if (r >= 0 && s != SQLITE_DONE)
		r = cat_err(p, "loading a partial receive");
	sqlite3_finalize(st);
	return r < 0 ? r : 0;
}

int store_partial_drop(struct store_pool *p, const char *ds)
{
	int r;
	if ((r = partial_table(p)) <= 0)
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	static const char *const sqls[] = {
		"DELETE FROM recv_partial WHERE ds = ?1",
		"DELETE FROM recv_partial_blocks WHERE ds = ?1",
		"DELETE FROM recv_partial_nodes WHERE ds = ?1",
		"DELETE FROM recv_partial_objs WHERE ds = ?1",
	};
	for (size_t i = 0; i < sizeof sqls / sizeof sqls[0]; i++)
		if ((r = exec_ds(p, sqls[i], ds, "dropping a partial receive")) < 0) {
			store_tx_rollback(p);
			return r;
		}
	return store_tx_commit(p);
}
