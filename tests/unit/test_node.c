/* tests/unit/test_node.c — Merkle node formats: round trips through the
 * builders, chunked directories and blocklist indexes, and strict decoding
 * of hostile nodes (every truncation, bad names, order, counts, types). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/store.h"

/* An in-memory node store for the builders and walkers. */
struct mem {
	struct {
		uint8_t hash[FERRY_HASH_LEN];
		int type;
		uint8_t *data;
		size_t len;
	} v[20000];
	size_t n;
};
static struct mem M;

static int mem_put(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	struct mem *m = arg;
	node_hash(type, data, len, hash);
	for (size_t i = 0; i < m->n; i++)
		if (!memcmp(m->v[i].hash, hash, FERRY_HASH_LEN))
			return 0;
	assert_true(m->n < 20000);
	memcpy(m->v[m->n].hash, hash, FERRY_HASH_LEN);
	m->v[m->n].type = type;
	m->v[m->n].data = malloc(len ? len : 1);
	memcpy(m->v[m->n].data, data, len);
	m->v[m->n].len = len;
	m->n++;
	return 0;
}

static int mem_get(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct mem *m = arg;
	for (size_t i = 0; i < m->n; i++)
		if (!memcmp(m->v[i].hash, hash, FERRY_HASH_LEN)) {
			fbuf_reset(out);
			*type = m->v[i].type;
			return m->v[i].len ? fbuf_append(out, m->v[i].data, m->v[i].len) : 0;
		}
	return ferry_err(FERR_NOENT, "no such node");
}

static void mem_clear(void)
{
	for (size_t i = 0; i < M.n; i++)
		free(M.v[i].data);
	M.n = 0;
}

static struct node_entry file_entry(const char *name, uint64_t size)
{
	struct node_entry e;
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)name;
	e.name_len = strlen(name);
	e.ftype = NODE_F_REG;
	e.mode = 04755;
	e.uid = 1000;
	e.gid = 100;
	e.mtime_sec = -5;
	e.mtime_nsec = 999999999;
	e.size = size;
	if (size) {
		e.child_type = NODE_BLOCKLIST;
		memset(e.child, 0xab, FERRY_HASH_LEN);
	}
	return e;
}

static void test_dir_roundtrip(void **state)
{
	struct node_dir_builder b;
	struct node_dir d;
	uint8_t h[FERRY_HASH_LEN];
	int t;
	struct node_xattr xa[2] = {
		{(const uint8_t *)"user.a", 6, (const uint8_t *)"1", 1},
		{(const uint8_t *)"user.b", 6, (const uint8_t *)"\0\1\2", 3},
	};
	node_dir_builder_init(&b, mem_put, &M);
	struct node_entry e1 = file_entry("a file", 10);
	e1.xattrs = xa;
	e1.nxattr = 2;
	e1.link_id = 77;
	struct node_entry e2 = file_entry("b\nline", 0);
	struct node_entry e3;
	memset(&e3, 0, sizeof e3);
	e3.name = (const uint8_t *)"link";
	e3.name_len = 4;
	e3.ftype = NODE_F_SYMLINK;
	e3.target = (const uint8_t *)"../x";
	e3.target_len = 4;
	struct node_entry e4 = e3;
	e4.name = (const uint8_t *)"\xff\xfe";
	e4.name_len = 2;
	e4.ftype = NODE_F_CHR;
	e4.target = NULL;
	e4.target_len = 0;
	e4.rdev_major = 1;
	e4.rdev_minor = 3;
	assert_int_equal(node_dir_builder_add(&b, &e1), 0);
	assert_int_equal(node_dir_builder_add(&b, &e2), 0);
	assert_int_equal(node_dir_builder_add(&b, &e3), 0);
	/* out of order is refused by the builder */
	assert_int_equal(node_dir_builder_add(&b, &e1), -FERR_INVAL);
	assert_int_equal(node_dir_builder_add(&b, &e4), 0);
	assert_int_equal(node_dir_builder_finish(&b, &t, h), 0);
	node_dir_builder_release(&b);
	assert_int_equal(t, NODE_DIR);
	assert_int_equal(node_dir_load(mem_get, &M, t, h, &d), 0);
	assert_int_equal(d.n, 4);
	assert_memory_equal(d.ents[0].name, "a file", 6);
	assert_int_equal(d.ents[0].mode, 04755);
	assert_int_equal(d.ents[0].mtime_sec, -5);
	assert_int_equal(d.ents[0].mtime_nsec, 999999999);
	assert_int_equal(d.ents[0].link_id, 77);
	assert_int_equal(d.ents[0].nxattr, 2);
	assert_memory_equal(d.ents[0].xattrs[1].value, "\0\1\2", 3);
	assert_int_equal(d.ents[1].child_type, 0);
	assert_memory_equal(d.ents[2].target, "../x", 4);
	assert_int_equal(d.ents[3].rdev_minor, 3);
	node_dir_release(&d);
	mem_clear();
}

static void test_big_dir(void **state)
{
	struct node_dir_builder b;
	struct node_dir d;
	uint8_t h[FERRY_HASH_LEN], h2[FERRY_HASH_LEN];
	char names[6000][16];
	int t;
	node_dir_builder_init(&b, mem_put, &M);
	for (int i = 0; i < 6000; i++) {
		snprintf(names[i], sizeof names[i], "f%06d", i);
		struct node_entry e = file_entry(names[i], 1);
		assert_int_equal(node_dir_builder_add(&b, &e), 0);
	}
	assert_int_equal(node_dir_builder_finish(&b, &t, h), 0);
	node_dir_builder_release(&b);
	assert_int_equal(t, NODE_EXT); /* split into chunks under an index */
	size_t chunks = M.n;
	assert_true(chunks > 3);
	assert_int_equal(node_dir_load(mem_get, &M, t, h, &d), 0);
	assert_int_equal(d.n, 6000);
	for (int i = 0; i < 6000; i++)
		assert_memory_equal(d.ents[i].name, names[i], 7);
	node_dir_release(&d);
	/* inserting one entry rewrites one chunk and the index, not all */
	size_t before = M.n;
	node_dir_builder_init(&b, mem_put, &M);
	for (int i = 0; i < 6000; i++) {
		struct node_entry e = file_entry(names[i], 1);
		assert_int_equal(node_dir_builder_add(&b, &e), 0);
		if (i == 3000) {
			struct node_entry x = file_entry("f003000a", 1);
			assert_int_equal(node_dir_builder_add(&b, &x), 0);
		}
	}
	assert_int_equal(node_dir_builder_finish(&b, &t, h2), 0);
	node_dir_builder_release(&b);
	assert_true(M.n - before <= 3);
	mem_clear();
}

struct walk {
	struct node_extent x[8000];
	uint64_t off[8000];
	size_t n;
};
static struct walk W;

static int collect(void *arg, const struct node_extent *x, uint64_t off)
{
	struct walk *w = arg;
	assert_true(w->n < 8000);
	w->x[w->n] = *x;
	w->off[w->n++] = off;
	return 0;
}

static void test_blocklist(void **state)
{
	struct node_bl_builder b;
	uint8_t h[FERRY_HASH_LEN];
	int t;
	/* small: block, hole, hole (merged), block */
	node_bl_builder_init(&b, mem_put, &M, 4096);
	struct node_extent a = {0, 4096, {1}}, hole = {1, 4096, {0}}, c = {0, 100, {2}};
	assert_int_equal(node_bl_builder_add(&b, &a), 0);
	assert_int_equal(node_bl_builder_add(&b, &hole), 0);
	assert_int_equal(node_bl_builder_add(&b, &hole), 0);
	assert_int_equal(node_bl_builder_add(&b, &c), 0);
	assert_int_equal(node_bl_builder_finish(&b, &t, h), 0);
	node_bl_builder_release(&b);
	assert_int_equal(t, NODE_BLOCKLIST);
	W.n = 0;
	assert_int_equal(node_bl_walk(mem_get, &M, t, h, 4096 * 3 + 100, collect, &W), 0);
	assert_int_equal(W.n, 3);
	assert_int_equal(W.x[1].hole, 1);
	assert_int_equal(W.x[1].len, 8192);
	assert_int_equal(W.off[2], 12288);
	/* a size that does not match is corrupt */
	assert_int_equal(node_bl_walk(mem_get, &M, t, h, 4096 * 3, collect, &W), -FERR_CORRUPT);
	mem_clear();

	/* large: 3000 records → leaves under an index; one changed record
	 * rewrites one leaf and the index only */
	node_bl_builder_init(&b, mem_put, &M, 512);
	for (int i = 0; i < 3000; i++) {
		struct node_extent x = {0, 512, {0}};
		memcpy(x.hash, &i, sizeof i);
		assert_int_equal(node_bl_builder_add(&b, &x), 0);
	}
	assert_int_equal(node_bl_builder_finish(&b, &t, h), 0);
	node_bl_builder_release(&b);
	assert_int_equal(t, NODE_BLOCKLIST_INDEX);
	W.n = 0;
	assert_int_equal(node_bl_walk(mem_get, &M, t, h, 3000 * 512, collect, &W), 0);
	assert_int_equal(W.n, 3000);
	for (int i = 0; i < 3000; i++)
		assert_int_equal(W.off[i], (uint64_t)i * 512);
	size_t before = M.n;
	node_bl_builder_init(&b, mem_put, &M, 512);
	for (int i = 0; i < 3000; i++) {
		struct node_extent x = {0, 512, {0}};
		int v = i == 1500 ? -1 : i;
		memcpy(x.hash, &v, sizeof v);
		assert_int_equal(node_bl_builder_add(&b, &x), 0);
	}
	assert_int_equal(node_bl_builder_finish(&b, &t, h), 0);
	node_bl_builder_release(&b);
	assert_int_equal(M.n - before, 2);
	mem_clear();
}

/* ---- hostile input ------------------------------------------------------ */

static int decode_dir(const uint8_t *p, size_t n)
{
	struct node_dir d;
	memset(&d, 0, sizeof d);
	int r = node_dir_decode(p, n, &d);
	node_dir_release(&d);
	return r;
}

/* Encodes entries as a directory node without the builder's checks. */
static size_t raw_dir(uint8_t *out, size_t cap, const struct node_entry *e, size_t n)
{
	struct fbuf b;
	fbuf_init(&b, cap);
	assert_int_equal(fbuf_put_le32(&b, (uint32_t)n), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(node_entry_encode(&b, &e[i]), 0);
	memcpy(out, b.data, b.len);
	size_t len = b.len;
	fbuf_release(&b);
	return len;
}

static void test_hostile_dir(void **state)
{
	static uint8_t buf[1 << 16];
	struct node_entry e[2];
	size_t n;
	const char *bad_names[] = {"a/b", ".", "..", "", "x\0y"};
	size_t bad_len[] = {3, 1, 2, 0, 3};
	for (size_t i = 0; i < 5; i++) {
		e[0] = file_entry("ok", 0);
		e[0].name = (const uint8_t *)bad_names[i];
		e[0].name_len = bad_len[i];
		n = raw_dir(buf, sizeof buf, e, 1);
		assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	}
	/* unsorted and duplicate names */
	e[0] = file_entry("b", 0);
	e[1] = file_entry("a", 0);
	n = raw_dir(buf, sizeof buf, e, 2);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	e[1] = file_entry("b", 0);
	n = raw_dir(buf, sizeof buf, e, 2);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	/* mode bits beyond 07777, bad types, nanoseconds, children */
	struct node_entry good = file_entry("f", 5);
	struct node_entry v;
	v = good; v.mode = 010000;
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.ftype = 9;
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.mtime_nsec = 1000000000;
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.child_type = NODE_DIR;      /* a file pointing at a directory */
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.child_type = 0;             /* data without a blocklist */
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.ftype = NODE_F_SYMLINK; v.size = 0; v.child_type = 0; /* no target */
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	v = good; v.ftype = NODE_F_DIR; v.size = 0; v.child_type = NODE_BLOCKLIST;
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	struct node_xattr xa[2] = {{(const uint8_t *)"user.b", 6, NULL, 0},
				   {(const uint8_t *)"user.a", 6, NULL, 0}};
	v = good; v.xattrs = xa; v.nxattr = 2;   /* unsorted xattrs */
	n = raw_dir(buf, sizeof buf, &v, 1);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	/* the good one decodes; every truncation and a trailing byte do not */
	n = raw_dir(buf, sizeof buf, &good, 1);
	assert_int_equal(decode_dir(buf, n), 0);
	for (size_t k = 0; k < n; k++)
		assert_int_not_equal(decode_dir(buf, k), 0);
	buf[n] = 0;
	assert_int_equal(decode_dir(buf, n + 1), -FERR_CORRUPT);
	/* an absurd count is refused before any allocation */
	put_le32(buf, 0xffffffffu);
	assert_int_equal(decode_dir(buf, n), -FERR_CORRUPT);
	/* random bit flips never crash the decoder */
	e[0] = good;
	e[1] = file_entry("g", 0);
	e[1].xattrs = &xa[1];
	e[1].nxattr = 1;
	n = raw_dir(buf, sizeof buf, e, 2);
	assert_int_equal(decode_dir(buf, n), 0);
	uint8_t copy[512];
	assert_true(n <= sizeof copy);
	srand(7);
	for (int i = 0; i < 20000; i++) {
		memcpy(copy, buf, n);
		int flips = 1 + rand() % 3;
		for (int f = 0; f < flips; f++)
			copy[rand() % n] ^= (uint8_t)(1 << (rand() % 8));
		(void)decode_dir(copy, n);
	}
}

static void test_hostile_blocklist(void **state)
{
	uint8_t b[64];
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	size_t n;
	/* one hole of length 0 */
	put_le32(b, 1);
	b[4] = 0;
	put_le64(b + 5, 0);
	assert_int_equal(node_bl_decode(b, 13, &x, &n), -FERR_CORRUPT);
	/* two adjacent holes */
	put_le32(b, 2);
	b[4] = 0;
	put_le64(b + 5, 5);
	b[13] = 0;
	put_le64(b + 14, 5);
	assert_int_equal(node_bl_decode(b, 22, &x, &n), -FERR_CORRUPT);
	/* a block larger than the maximum */
	put_le32(b, 1);
	b[4] = 1;
	put_le32(b + 5, (uint32_t)STORE_BLOCK_MAX + 1);
	memset(b + 9, 1, 32);
	assert_int_equal(node_bl_decode(b, 41, &x, &n), -FERR_CORRUPT);
	put_le32(b + 5, 10);
	assert_int_equal(node_bl_decode(b, 41, &x, &n), 0);
	free(x);
	assert_int_equal(node_bl_decode(b, 40, &x, &n), -FERR_CORRUPT);
	b[4] = 7; /* unknown kind */
	assert_int_equal(node_bl_decode(b, 41, &x, &n), -FERR_CORRUPT);
	/* zero count, absurd count */
	put_le32(b, 0);
	assert_int_equal(node_bl_decode(b, 4, &x, &n), -FERR_CORRUPT);
	put_le32(b, 0x7fffffff);
	assert_int_equal(node_bl_decode(b, 41, &x, &n), -FERR_CORRUPT);
	/* index: child of a bad type, zero span, length mismatch */
	put_le32(b, 1);
	put_le64(b + 4, 100);
	b[12] = NODE_DIR;
	memset(b + 13, 2, 32);
	assert_int_equal(node_bli_decode(b, 45, &k, &n), -FERR_CORRUPT);
	b[12] = NODE_BLOCKLIST;
	assert_int_equal(node_bli_decode(b, 45, &k, &n), 0);
	free(k);
	put_le64(b + 4, 0);
	assert_int_equal(node_bli_decode(b, 45, &k, &n), -FERR_CORRUPT);
	assert_int_equal(node_bli_decode(b, 44, &k, &n), -FERR_CORRUPT);
}

static int self_loop(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	/* an index whose child is itself: depth must stop it */
	uint8_t b[45];
	put_le32(b, 1);
	put_le64(b + 4, 100);
	b[12] = NODE_BLOCKLIST_INDEX;
	memcpy(b + 13, hash, 32);
	*type = NODE_BLOCKLIST_INDEX;
	fbuf_reset(out);
	return fbuf_append(out, b, sizeof b);
}

static int never(void *arg, const struct node_extent *x, uint64_t off)
{
	return ferry_err(FERR_INVAL, "reached");
}

static void test_hostile_walks(void **state)
{
	uint8_t h[FERRY_HASH_LEN] = {9};
	assert_int_equal(node_bl_walk(self_loop, NULL, NODE_BLOCKLIST_INDEX, h, 100, never, NULL),
			 -FERR_CORRUPT);
	/* a root that claims a volume but holds a directory */
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int kind;
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.child_type = NODE_DIR;
	fbuf_init(&b, 4096);
	assert_int_equal(node_root_encode(&b, NODE_ROOT_FILESYSTEM, &e), 0);
	assert_int_equal(node_root_decode(b.data, b.len, &kind, &e, &xa), 0);
	assert_int_equal(kind, NODE_ROOT_FILESYSTEM);
	free(xa);
	b.data[1] = NODE_ROOT_VOLUME;
	assert_int_equal(node_root_decode(b.data, b.len, &kind, &e, &xa), -FERR_CORRUPT);
	b.data[1] = NODE_ROOT_FILESYSTEM;
	b.data[2] = 1; /* reserved */
	assert_int_equal(node_root_decode(b.data, b.len, &kind, &e, &xa), -FERR_CORRUPT);
	fbuf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_roundtrip),
		cmocka_unit_test(test_big_dir),
		cmocka_unit_test(test_blocklist),
		cmocka_unit_test(test_hostile_dir),
		cmocka_unit_test(test_hostile_blocklist),
		cmocka_unit_test(test_hostile_walks),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
