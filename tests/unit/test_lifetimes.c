/* tests/unit/test_lifetimes.c — block lifetimes (ds_refs, store/lifetimes.c)
 * against brute force. Random histories on a real pool: files written
 * from a few contents (so blocks leave and come back), removed, shared
 * between two datasets; snapshots captured; snapshots destroyed in any
 * order, several at once; rollbacks; gc. After every step each remaining
 * snapshot's block set, as the catalogue gives it (the snap_blocks view
 * over ds_refs), must equal the distinct blocks of its tree, walked node
 * by node; its referenced, logicalreferenced, written and used, and the
 * dataset's used, must equal the sums over those sets; and the rows must
 * be in the normal form the queries rely on. FERRY_LIFE_SEED picks the
 * seed (printed), FERRY_LIFE_STEPS the length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "capture/capture.h"
#include "store/internal.h"

#define NFILES 10
#define NCONTENT 7
#define MAXSNAP 64

static char dir[] = "/tmp/ferry-life-XXXXXX";
static struct store_pool *P;
static unsigned seed;

/* a hash set as a sorted array */
struct hset {
	uint8_t (*h)[FERRY_HASH_LEN];
	size_t n, cap;
};

static void hs_add(struct hset *s, const uint8_t *h)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->h = realloc(s->h, s->cap * FERRY_HASH_LEN);
		assert_non_null(s->h);
	}
	memcpy(s->h[s->n++], h, FERRY_HASH_LEN);
}

static int hcmp(const void *a, const void *b)
{
	return memcmp(a, b, FERRY_HASH_LEN);
}

static void hs_sort(struct hset *s)
{
	size_t k = 0;
	if (!s->n)
		return;
	qsort(s->h, s->n, FERRY_HASH_LEN, hcmp);
	for (size_t i = 1; i < s->n; i++)
		if (memcmp(s->h[i], s->h[k], FERRY_HASH_LEN))
			memcpy(s->h[++k], s->h[i], FERRY_HASH_LEN);
	s->n = k + 1;
}

static int hs_has(const struct hset *s, const uint8_t *h)
{
	return s->n && bsearch(h, s->h, s->n, FERRY_HASH_LEN, hcmp) != NULL;
}

/* an open-addressing set of hashes: 1 when h was new */
struct oset {
	uint8_t (*h)[FERRY_HASH_LEN];
	uint8_t *used;
	size_t n, cap;
};

static int os_add(struct oset *s, const uint8_t *h)
{
	if (2 * (s->n + 1) > s->cap) {
		struct oset g = {0};
		g.cap = s->cap ? 2 * s->cap : 1024;
		g.h = malloc(g.cap * FERRY_HASH_LEN);
		g.used = calloc(g.cap, 1);
		assert_non_null(g.h);
		assert_non_null(g.used);
		for (size_t i = 0; i < s->cap; i++)
			if (s->used[i])
				os_add(&g, s->h[i]);
		free(s->h);
		free(s->used);
		*s = g;
	}
	size_t i = (size_t)get_le64(h) & (s->cap - 1);
	for (; s->used[i]; i = (i + 1) & (s->cap - 1))
		if (!memcmp(s->h[i], h, FERRY_HASH_LEN))
			return 0;
	s->used[i] = 1;
	memcpy(s->h[i], h, FERRY_HASH_LEN);
	s->n++;
	return 1;
}

static void os_free(struct oset *s)
{
	free(s->h);
	free(s->used);
}

/* ---- brute force: the tree's blocks, node by node ---- */

struct walk {
	struct hset nodes_todo, blocks;
	struct oset seen;
};

static int child(void *arg, int is_block, const uint8_t *h)
{
	struct walk *w = arg;
	hs_add(is_block ? &w->blocks : &w->nodes_todo, h);
	return 0;
}

static void tree_blocks(const uint8_t *root, struct hset *out)
{
	struct walk w;
	sqlite3_stmt *st = NULL;
	memset(&w, 0, sizeof w);
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT type, data FROM nodes WHERE hash = ?", -1,
					    &st, NULL), SQLITE_OK);
	hs_add(&w.nodes_todo, root);
	while (w.nodes_todo.n) {
		uint8_t h[FERRY_HASH_LEN];
		memcpy(h, w.nodes_todo.h[--w.nodes_todo.n], FERRY_HASH_LEN);
		if (!os_add(&w.seen, h))
			continue;
		sqlite3_reset(st);
		sqlite3_bind_blob(st, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		int type = sqlite3_column_int(st, 0);
		const uint8_t *d = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);
		assert_int_equal(node_children(type, d ? d : (const uint8_t *)"", len, 1, child, &w), 0);
	}
	sqlite3_finalize(st);
	hs_sort(&w.blocks);
	*out = w.blocks;
	free(w.nodes_todo.h);
	os_free(&w.seen);
}

/* ---- the catalogue's view ---- */

static void cat_blocks(int64_t snap_id, struct hset *out)
{
	sqlite3_stmt *st = NULL;
	memset(out, 0, sizeof *out);
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT b.hash FROM snap_blocks v JOIN blocks b"
					    " ON b.id = v.block_id WHERE v.snap_id = ?", -1, &st,
					    NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, snap_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		assert_int_equal(sqlite3_column_bytes(st, 0), FERRY_HASH_LEN);
		hs_add(out, sqlite3_column_blob(st, 0));
	}
	sqlite3_finalize(st);
	size_t n = out->n;
	hs_sort(out);
	assert_int_equal(out->n, n); /* one copy of each block per snapshot */
}

static sqlite3_stmt *st_sizes; /* finalized by teardown */

static void sizes(const uint8_t *h, int64_t *ps, int64_t *ls)
{
	if (!st_sizes)
		assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT psize, lsize FROM blocks"
						    " WHERE hash = ?", -1, &st_sizes, NULL), SQLITE_OK);
	sqlite3_reset(st_sizes);
	sqlite3_bind_blob(st_sizes, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st_sizes), SQLITE_ROW);
	*ps = sqlite3_column_int64(st_sizes, 0);
	*ls = sqlite3_column_int64(st_sizes, 1);
	sqlite3_reset(st_sizes);
}

static int64_t q1(const char *sql)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(P->db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

struct snaps {
	struct store_snap v[MAXSNAP];
	size_t n;
};

static int snap_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	(void)p;
	struct snaps *l = arg;
	assert_true(l->n < MAXSNAP);
	l->v[l->n++] = *s;
	return 0;
}

static void list_snaps(const struct store_ds *ds, struct snaps *l)
{
	l->n = 0;
	assert_int_equal(store_snap_iter(P, ds, snap_cb, l), 0);
	/* by txg */
	for (size_t i = 1; i < l->n; i++)
		for (size_t j = i; j > 0 && l->v[j - 1].createtxg > l->v[j].createtxg; j--) {
			struct store_snap t = l->v[j];
			l->v[j] = l->v[j - 1];
			l->v[j - 1] = t;
		}
}

/* Every figure of every snapshot of ds, and ds's used, by brute force. */
static void check_ds(const struct store_ds *ds, int step)
{
	struct snaps l;
	struct hset sets[MAXSNAP];
	list_snaps(ds, &l);
	for (size_t i = 0; i < l.n; i++) {
		struct hset c;
		tree_blocks(l.v[i].root, &sets[i]);
		cat_blocks(l.v[i].id, &c);
		if (c.n != sets[i].n || (c.n && memcmp(c.h, sets[i].h, c.n * FERRY_HASH_LEN)))
			fail_msg("seed %u step %d: %s: %zu blocks in the catalogue, %zu in its tree",
				 seed, step, l.v[i].name, c.n, sets[i].n);
		free(c.h);
	}
	struct hset all = {0};
	for (size_t i = 0; i < l.n; i++)
		for (size_t k = 0; k < sets[i].n; k++)
			hs_add(&all, sets[i].h[k]);
	hs_sort(&all);
	for (size_t i = 0; i < l.n; i++) {
		int64_t ref = 0, lref = 0, wr = 0, un = 0;
		for (size_t k = 0; k < sets[i].n; k++) {
			int64_t ps, ls, other = 0;
			sizes(sets[i].h[k], &ps, &ls);
			ref += ps;
			lref += ls;
			if (!i || !hs_has(&sets[i - 1], sets[i].h[k]))
				wr += ps;
			for (size_t j = 0; j < l.n && !other; j++)
				other = j != i && hs_has(&sets[j], sets[i].h[k]);
			if (!other)
				un += ps;
		}
		struct store_snap now;
		uint64_t used = 0;
		assert_int_equal(store_snap_lookup(P, l.v[i].name, &now), 0);
		assert_int_equal(store_snap_unique(P, &now, &used), 0);
		if ((int64_t)now.referenced != ref || (int64_t)now.logicalreferenced != lref ||
		    (int64_t)now.written != wr || (int64_t)used != un)
			fail_msg("seed %u step %d: %s: referenced %llu/%lld logical %llu/%lld written"
				 " %llu/%lld used %llu/%lld (catalogue/trees)", seed, step, now.name,
				 (unsigned long long)now.referenced, (long long)ref,
				 (unsigned long long)now.logicalreferenced, (long long)lref,
				 (unsigned long long)now.written, (long long)wr,
				 (unsigned long long)used, (long long)un);
	}
	int64_t u = 0;
	for (size_t k = 0; k < all.n; k++) {
		int64_t ps, ls;
		sizes(all.h[k], &ps, &ls);
		u += ps;
	}
	struct store_space sp;
	assert_int_equal(store_ds_space(P, ds, &sp), 0);
	if ((int64_t)sp.used != u)
		fail_msg("seed %u step %d: %s: used %llu, its snapshots' blocks %lld", seed, step,
			 ds->name, (unsigned long long)sp.used, (long long)u);
	/* a row's memo: another object's figures (a snapshot's of the same
	 * id) are not taken for ds; ds's, once in it, are, as they stand */
	struct store_prop_memo m = {.id = ds->id, .type = STORE_DS_SNAPSHOT, .have = 1};
	struct store_propval v;
	m.sp.used = sp.used + 1;
	assert_int_equal(store_prop_get_memo(P, ds, "used", &v, &m), 0);
	assert_int_equal(strtoull(v.exact, NULL, 10), sp.used);
	assert_true(m.have && m.id == ds->id && m.type == ds->type);
	m.sp.usedbychildren = sp.usedbychildren + 7;
	assert_int_equal(store_prop_get_memo(P, ds, "usedbychildren", &v, &m), 0);
	assert_int_equal(strtoull(v.exact, NULL, 10), sp.usedbychildren + 7);
	assert_int_equal(store_prop_get(P, ds, "usedbychildren", &v), 0);
	assert_int_equal(strtoull(v.exact, NULL, 10), sp.usedbychildren);
	for (size_t i = 0; i < l.n; i++)
		free(sets[i].h);
	free(all.h);
}

/* ---- the census (census.c) against brute force ---- */

struct counted {
	uint8_t h[FERRY_HASH_LEN];
	int block;
};

struct census_walk {
	struct hset todo;
	struct oset seen;
	struct counted *v;
	size_t n, cap;
};

static int census_child(void *arg, int is_block, const uint8_t *h)
{
	struct census_walk *w = arg;
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->v = realloc(w->v, w->cap * sizeof *w->v);
		assert_non_null(w->v);
	}
	memcpy(w->v[w->n].h, h, FERRY_HASH_LEN);
	w->v[w->n++].block = is_block;
	if (!is_block)
		hs_add(&w->todo, h);
	return 0;
}

static int counted_cmp(const void *a, const void *b)
{
	const struct counted *x = a, *y = b;
	if (x->block != y->block)
		return x->block - y->block;
	return memcmp(x->h, y->h, FERRY_HASH_LEN);
}

/* If the census of ds describes a tree, its rows must be that tree's
 * counts: every node reachable from its root, named n times by the
 * distinct reachable nodes (the root once more), every block n times by
 * the distinct reachable blocklists; but a directory entry naming a
 * blocklist counts that blocklist's blocks, not the node (which has a row
 * only if something else names it); nothing else. Returns 1 when ds had a
 * census. */
static int check_census(const struct store_ds *ds, int step)
{
	struct census_walk w;
	sqlite3_stmt *st = NULL, *rd = NULL, *rd2 = NULL;
	uint8_t root[FERRY_HASH_LEN];
	memset(&w, 0, sizeof w);
	/* rows for a tree no snapshot has any more wait for a rebuild; gc
	 * may have taken that tree's nodes */
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT c.root FROM census2_state c WHERE"
					    " c.ds_id = ?1 AND EXISTS (SELECT 1 FROM snapshots s WHERE"
					    " s.ds_id = ?1 AND s.root = c.root)", -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, ds->id);
	int s = sqlite3_step(st);
	if (s == SQLITE_DONE) {
		sqlite3_finalize(st);
		return 0;
	}
	assert_int_equal(s, SQLITE_ROW);
	assert_int_equal(sqlite3_column_bytes(st, 0), FERRY_HASH_LEN);
	memcpy(root, sqlite3_column_blob(st, 0), FERRY_HASH_LEN);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT type, data FROM nodes WHERE hash = ?", -1,
					    &rd, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT type, data FROM nodes WHERE hash = ?", -1,
					    &rd2, NULL), SQLITE_OK);
	census_child(&w, 0, root);
	while (w.todo.n) {
		uint8_t h[FERRY_HASH_LEN];
		memcpy(h, w.todo.h[--w.todo.n], FERRY_HASH_LEN);
		if (!os_add(&w.seen, h))
			continue;
		sqlite3_reset(rd);
		sqlite3_bind_blob(rd, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(rd), SQLITE_ROW);
		int type = sqlite3_column_int(rd, 0);
		const uint8_t *d = sqlite3_column_blob(rd, 1);
		size_t len = (size_t)sqlite3_column_bytes(rd, 1);
		if (type != NODE_DIR) {
			assert_int_equal(node_children(type, d ? d : (const uint8_t *)"", len, 1,
						       census_child, &w), 0);
			continue;
		}
		/* a directory entry's blocklist: its blocks, not the node */
		struct node_dir dd;
		memset(&dd, 0, sizeof dd);
		assert_int_equal(node_dir_decode(d, len, &dd), 0);
		for (size_t k = 0; k < dd.n; k++) {
			const struct node_entry *e = &dd.ents[k];
			if (e->child_type != NODE_BLOCKLIST) {
				if (e->child_type)
					census_child(&w, 0, e->child);
				continue;
			}
			sqlite3_reset(rd2);
			sqlite3_bind_blob(rd2, 1, e->child, FERRY_HASH_LEN, SQLITE_STATIC);
			assert_int_equal(sqlite3_step(rd2), SQLITE_ROW);
			assert_int_equal(sqlite3_column_int(rd2, 0), NODE_BLOCKLIST);
			const uint8_t *ld = sqlite3_column_blob(rd2, 1);
			assert_int_equal(node_children(NODE_BLOCKLIST, ld ? ld : (const uint8_t *)"",
						       (size_t)sqlite3_column_bytes(rd2, 1), 1,
						       census_child, &w), 0);
		}
		node_dir_release(&dd);
	}
	sqlite3_finalize(rd);
	sqlite3_finalize(rd2);
	if (w.n)
		qsort(w.v, w.n, sizeof *w.v, counted_cmp);
	/* the rows, blocks after nodes as counted_cmp orders them */
	assert_int_equal(sqlite3_prepare_v2(P->db, "SELECT 0, hash, n FROM census2_nodes WHERE ds_id = ?1"
					    " UNION ALL SELECT 1, hash, n FROM census2_blocks WHERE"
					    " ds_id = ?1 ORDER BY 1, 2", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, ds->id);
	size_t i = 0, rows = 0;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		int block = sqlite3_column_int(st, 0);
		const uint8_t *h = sqlite3_column_blob(st, 1);
		int64_t n = sqlite3_column_int64(st, 2), want = 0;
		assert_int_equal(sqlite3_column_bytes(st, 1), FERRY_HASH_LEN);
		rows++;
		while (i < w.n && (w.v[i].block < block ||
				   (w.v[i].block == block && memcmp(w.v[i].h, h, FERRY_HASH_LEN) < 0)))
			i++; /* named, not in the rows: the count check below fails */
		for (; i < w.n && w.v[i].block == block && !memcmp(w.v[i].h, h, FERRY_HASH_LEN); i++)
			want++;
		if (n != want)
			fail_msg("seed %u step %d: %s: the census counts a %s %lld times, its tree %lld",
				 seed, step, ds->name, block ? "block" : "node", (long long)n,
				 (long long)want);
	}
	assert_int_equal(s, SQLITE_DONE);
	sqlite3_finalize(st);
	size_t distinct = 0;
	for (size_t k = 0; k < w.n; k++)
		distinct += !k || counted_cmp(&w.v[k - 1], &w.v[k]);
	if (rows != distinct)
		fail_msg("seed %u step %d: %s: the census has %zu rows, its tree %zu names", seed, step,
			 ds->name, rows, distinct);
	free(w.v);
	free(w.todo.h);
	os_free(&w.seen);
	return 1;
}

/* The normal form (lifetimes.c): born and died are txgs of snapshots
 * that exist, intervals hold a snapshot, none adjacent or overlapping. */
static void check_form(int step)
{
	int64_t bad = q1("SELECT count(*) FROM ds_refs r WHERE NOT EXISTS (SELECT 1 FROM snapshots s"
			 " WHERE s.ds_id = r.ds_id AND s.createtxg = r.born) OR (r.died IS NOT NULL AND"
			 " (r.died <= r.born OR NOT EXISTS (SELECT 1 FROM snapshots s WHERE"
			 " s.ds_id = r.ds_id AND s.createtxg = r.died)))");
	int64_t touch = q1("SELECT count(*) FROM ds_refs a JOIN ds_refs b ON b.ds_id = a.ds_id AND"
			   " b.block_id = a.block_id AND b.born > a.born WHERE a.died IS NULL OR"
			   " a.died >= b.born");
	int64_t live = q1("SELECT count(*) FROM (SELECT 1 FROM ds_refs WHERE died IS NULL"
			  " GROUP BY ds_id, block_id HAVING count(*) > 1)");
	if (bad || touch || live)
		fail_msg("seed %u step %d: %lld rows off their snapshots, %lld adjacent or"
			 " overlapping, %lld blocks alive twice", seed, step, (long long)bad,
			 (long long)touch, (long long)live);
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(rand() % (int)n);
}

static void write_file(const char *src, int i, int content)
{
	char path[512];
	snprintf(path, sizeof path, "%s/f%d", src, i);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	/* 1 to 4 blocks of 128 KiB, of content-determined bytes; some
	 * contents share their first block */
	size_t len = 3000 + (size_t)content * 90000;
	uint32_t x = (uint32_t)(content % 3 == 0 ? 1 : content + 1) * 2654435761u;
	for (size_t k = 0; k < len; k++) {
		if (k == 131072)
			x ^= (uint32_t)content * 40503u;
		x = x * 1103515245u + 12345u;
		fputc((int)(x >> 16) & 0xff, f);
	}
	fclose(f);
}

/* sh(FMT, ...): runs a shell command; its status (a move whose source
 * is gone, say, is no error here) */
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A change to src's nested tree t/: directories two levels deep made and
 * filled, moved within their parent and to another, replaced by a file
 * and back, removed, their files changed. So the walks of refs.c meet
 * directories a change kept whole somewhere else in the tree, before and
 * after the place they left (W1 and W2 as one walk, and its clash). */
static void tree_op(const char *src)
{
	static const char *const nm[] = {"a", "k", "z"};
	const char *x = nm[rnd(3)], *y = nm[rnd(3)], *z = nm[rnd(3)];
	char p[600];
	switch (rnd(6)) {
	case 0:
		snprintf(p, sizeof p, "%s/t/%s/%s", src, x, y);
		if (sh("mkdir -p '%s' 2>/dev/null", p) == 0)
			write_file(p, (int)rnd(3), (int)rnd(NCONTENT));
		break;
	case 1:
		(void)sh("cd '%s/t' 2>/dev/null && [ -d %s ] && [ ! -e %s ] && mv %s %s", src, x, z,
			 x, z);
		break;
	case 2:
		(void)sh("cd '%s/t' 2>/dev/null && [ -d %s/%s ] && mkdir -p %s 2>/dev/null &&"
			 " [ ! -e %s/%s ] && mv %s/%s %s/%s", src, x, y, z, z, y, x, y, z, y);
		break;
	case 3:
		(void)sh("cd '%s/t' 2>/dev/null && if [ -d %s ]; then rm -rf %s && echo %s >%s;"
			 " else rm -f %s && mkdir -p %s/%s && echo in >%s/%s/g; fi", src, x, x, x, x,
			 x, x, y, x, y);
		break;
	case 4:
		(void)sh("rm -rf '%s/t/%s/%s'", src, x, y);
		break;
	default:
		snprintf(p, sizeof p, "%s/t/%s/%s", src, x, y);
		struct stat sb;
		if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
			write_file(p, (int)rnd(3), (int)rnd(NCONTENT));
	}
}

static void test_random_histories(void **state)
{
	char path[512], src[2][512], name[32];
	const char *e = getenv("FERRY_LIFE_SEED"), *ns = getenv("FERRY_LIFE_STEPS");
	int steps = ns ? atoi(ns) : 120, nsnap = 0, censuses = 0;
	struct store_ds ds[2];
	(void)state;
	seed = e ? (unsigned)strtoul(e, NULL, 10) : (unsigned)getpid();
	print_message("seed %u, %d steps\n", seed, steps);
	srand(seed);
	/* odd seeds: a census change holds 3 node counts in memory at most,
	 * the rest go to its TEMP table and are read back from there */
	census_node_fill = seed % 2 ? 3 : 49152;
	for (int d = 0; d < 2; d++) {
		snprintf(src[d], sizeof src[d], "%s/src%d", dir, d);
		assert_int_equal(mkdir(src[d], 0755), 0);
		snprintf(path, sizeof path, "tank/d%d", d);
		assert_int_equal(store_ds_create(P, path, STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
		assert_int_equal(store_ds_lookup(P, path, &ds[d]), 0);
	}
	for (int step = 0; step < steps; step++) {
		int d = (int)rnd(2), op = (int)rnd(10);
		struct snaps l;
		list_snaps(&ds[d], &l);
		if (op < 4) { /* change some files, snapshot */
			for (int k = (int)rnd(4); k >= 0; k--) {
				int i = (int)rnd(NFILES);
				snprintf(path, sizeof path, "%s/f%d", src[d], i);
				if (rnd(4) == 0)
					(void)unlink(path);
				else
					write_file(src[d], i, (int)rnd(NCONTENT));
			}
			for (int k = (int)rnd(3); k > 0; k--)
				tree_op(src[d]);
			if (rnd(3) == 0) {
				/* directories a and b holding one hard link each:
				 * the same node twice in the tree */
				char a[600], b[600];
				snprintf(a, sizeof a, "%s/a", src[d]);
				snprintf(b, sizeof b, "%s/b", src[d]);
				(void)mkdir(a, 0755);
				snprintf(path, sizeof path, "%s/b/f0", src[d]);
				(void)unlink(path);
				if (rnd(4) == 0) {
					(void)rmdir(b);
				} else {
					(void)mkdir(b, 0755);
					write_file(a, 0, (int)rnd(NCONTENT));
					snprintf(a, sizeof a, "%s/a/f0", src[d]);
					assert_int_equal(link(a, path), 0);
				}
			}
			op = 4;
		}
		if (op <= 5) { /* snapshot (op 5: of an unchanged tree) */
			struct capture_opts o;
			struct capture_stats st;
			if (l.n >= MAXSNAP - 1)
				continue;
			memset(&o, 0, sizeof o);
			o.from = src[d];
			o.threads = 1;
			snprintf(name, sizeof name, "s%d", nsnap++);
			assert_int_equal(capture_snapshot(P, &ds[d], name, &o, &st), 0);
		} else if (op <= 7 && l.n) { /* destroy one or two, any of them */
			struct store_snap v[2];
			size_t n = 1;
			v[0] = l.v[rnd((unsigned)l.n)];
			if (l.n > 2 && rnd(3) == 0)
				v[n++] = l.v[rnd((unsigned)l.n)];
			if (n == 2 && v[1].id == v[0].id)
				n = 1;
			assert_int_equal(store_snap_destroy(P, v, n), 0);
		} else if (op == 8 && l.n) { /* roll back */
			assert_int_equal(store_snap_rollback(P, &l.v[rnd((unsigned)l.n)], 1), 0);
		} else if (op == 9) {
			struct store_gc_stats gs;
			memset(&gs, 0, sizeof gs);
			assert_int_equal(store_gc(P, &gs), 0);
		}
		check_form(step);
		check_ds(&ds[0], step);
		check_ds(&ds[1], step);
		censuses += check_census(&ds[0], step) + check_census(&ds[1], step);
	}
	/* the census was built and kept, not only absent */
	print_message("%d checks of a census, %zu walks of W1 and W2 as one, %zu clashes\n",
		      censuses, refs_fused_walks, refs_fused_clashes);
	if (steps >= 60) {
		assert_true(censuses >= steps / 4);
		assert_true(refs_fused_walks >= (size_t)steps / 8);
	}
}

/* A new filesystem dataset name, and options that capture src into it
 * on one thread; the random seed back to 0. */
static void new_ds(const char *name, const char *src, struct store_ds *ds,
		   struct capture_opts *o)
{
	assert_int_equal(store_ds_create(P, name, STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
	assert_int_equal(store_ds_lookup(P, name, ds), 0);
	memset(o, 0, sizeof *o);
	o->from = src;
	o->threads = 1;
	seed = 0;
}

/* W1 and W2 as one walk (store/refs.c), case by case: a directory moved
 * to a parent that comes after its old one (W2 walks it before W1 keeps
 * it: the clash, W2 again alone), to one before (W1 keeps it first), a
 * directory replaced by a file and a file by a directory, a directory
 * gone with files that share blocks with one left. After each, the
 * snapshot's blocks are the tree's (check_ds) and so are the census's. */
static void test_fused_walks(void **state)
{
	char src[512], p[600], name[16];
	struct store_ds ds;
	struct capture_opts o;
	struct capture_stats st;
	(void)state;
	snprintf(src, sizeof src, "%s/fused", dir);
	assert_int_equal(sh("mkdir -p '%s/t/b/x/deep' '%s/t/m' '%s/t/y'", src, src, src), 0);
	snprintf(p, sizeof p, "%s/t/b/x", src);
	/* contents test_random_histories does not write (NCONTENT): no node
	 * or block of this tree is in the pool before it */
	write_file(p, 0, NCONTENT);
	write_file(p, 1, NCONTENT + 1);
	snprintf(p, sizeof p, "%s/t/b/x/deep", src);
	write_file(p, 0, NCONTENT + 2);
	snprintf(p, sizeof p, "%s/t/m", src);
	write_file(p, 0, NCONTENT + 3);
	snprintf(p, sizeof p, "%s/t/y", src);
	write_file(p, 0, NCONTENT + 2); /* deep/f0's blocks, also here */
	write_file(src, 0, NCONTENT + 4);
	new_ds("tank/fused", src, &ds, &o);
	census_node_fill = 49152;
	static const char *const steps[] = {
		"true",                                 /* the full snapshot */
		"true",                                 /* nothing changed */
		"echo 1 >'%s/f9'",                      /* the census is built */
		/* moved after: the clash (t/b keeps a file: an empty
		 * directory's node may be in the pool) */
		"mkdir '%s/t/m/n' && mv '%s/t/b/x' '%s/t/m/n/x' && echo b >'%s/t/b/g'",
		/* moved before: kept first (n goes too: an empty directory
		 * would be the node of the empty t/b the base has, which W2
		 * meets first, a clash of its own) */
		"mv '%s/t/m/n/x' '%s/t/b/x' && rmdir '%s/t/m/n'",
		"rm -rf '%s/t/m' && echo m >'%s/t/m'",  /* a directory becomes a file */
		"rm '%s/t/m' && mkdir -p '%s/t/m/q' && echo q >'%s/t/m/q/g'", /* and back */
		"rm -rf '%s/t/y'",                      /* gone; its blocks still named */
		"rm -rf '%s/t/b'",                      /* gone, and the blocks */
	};
	size_t clashes = 0;
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
		size_t w0 = refs_fused_walks, c0 = refs_fused_clashes, k0 = refs_w3_nodes;
		assert_int_equal(sh(steps[i], src, src, src, src), 0);
		snprintf(name, sizeof name, "s%zu", i);
		assert_int_equal(capture_snapshot(P, &ds, name, &o, &st), 0);
		check_ds(&ds, (int)i);
		if (i >= 3) { /* the census describes the base from here on */
			assert_int_equal(check_census(&ds, (int)i), 1);
			assert_int_equal(refs_fused_walks, w0 + 1);
		}
		clashes += refs_fused_clashes - c0;
		if (i == 3) {
			/* x, kept, is the base's: W2 run again after the
			 * clash hits it, and W3 walks nothing (without that
			 * second run W3 would walk all of x) */
			assert_int_equal(refs_fused_clashes, c0 + 1);
			assert_int_equal(refs_w3_nodes, k0);
		}
		if (i == 4)
			assert_int_equal(refs_fused_clashes, c0);
	}
	assert_int_equal(clashes, 1);
}

/* A directory of 20,000 files: a census built from nothing queues more
 * expansions than it holds in memory (the rest wait in a TEMP table) and
 * sums more children than its map holds (applied when full); then kept
 * through changes, and checked against the tree each time. */
static void test_wide_census(void **state)
{
	char src[512], path[600], name[16];
	struct store_ds ds;
	struct capture_opts o;
	struct capture_stats st;
	(void)state;
	snprintf(src, sizeof src, "%s/wide", dir);
	assert_int_equal(mkdir(src, 0755), 0);
	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof path, "%s/w%05d", src, i);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "wide %d\n", i % 19000); /* some files share their block */
		fclose(f);
	}
	new_ds("tank/wide", src, &ds, &o);
	census_node_fill = 4096; /* the build writes node counts out 5 times */
	for (int step = 0; step < 4; step++) {
		if (step) {
			/* a file's only block goes; a file goes whose twin keeps
			 * its blocklist */
			snprintf(path, sizeof path, "%s/w%05d", src, 5000 + step);
			FILE *f = fopen(path, "w");
			assert_non_null(f);
			fprintf(f, "changed %d\n", step);
			fclose(f);
			snprintf(path, sizeof path, "%s/w%05d", src, 100 + step);
			assert_int_equal(unlink(path), 0);
		}
		snprintf(name, sizeof name, "w%d", step);
		assert_int_equal(capture_snapshot(P, &ds, name, &o, &st), 0);
		check_ds(&ds, step);
		assert_int_equal(check_census(&ds, step), step > 0);
	}
}

static int setup(void **state)
{
	char path[256];
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/home", dir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", dir);
	if (ferry_lib_init() < 0 || store_pool_create("tank", path, NULL, 0) < 0 ||
	    store_pool_open("tank", 0, &P) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	sqlite3_finalize(st_sizes);
	store_pool_close(P);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_histories),
		cmocka_unit_test(test_fused_walks),
		cmocka_unit_test(test_wide_census),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
