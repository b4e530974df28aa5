/* tests/unit/test_scrub.c — the store's pass over the packs for scrub:
 * every indexed block comes back once, in pack and offset order, in runs
 * read with one pread; a flipped payload or header byte fails exactly its
 * block; a scan started at a position sees only what follows it; blocks
 * past a pack's end fail unread; the state row and the error log keep
 * what a checkpoint wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/store.h"

static char tmpdir[256];
static struct store_pool *P;
static struct store_ds DS;
#define NBLK 300
static uint8_t hashes[NBLK][FERRY_HASH_LEN];

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	return store_writer_put_node(arg, type, data, len, hash);
}

static int setup(void **state)
{
	char path[512];
	static uint8_t data[60000], scratch[60000];
	struct store_writer *w = NULL;
	struct node_dir_builder b;
	struct node_entry e;
	struct fbuf f;
	uint8_t root[FERRY_HASH_LEN];
	int t;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-unit-scrub.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof path, "%s/home", tmpdir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", tmpdir);
	struct store_propset props[] = {{"compression", "lz4"}};
	if (ferry_lib_init() < 0 || store_pool_create("tank", path, props, 1) < 0 ||
	    store_pool_open("tank", 0, &P) < 0 ||
	    store_ds_create(P, "tank/a", STORE_DS_FILESYSTEM, 0, NULL, 0) < 0 ||
	    store_ds_lookup(P, "tank/a", &DS) < 0 || store_writer_new(P, &w) < 0)
		return -1;
	/* blocks of 1..60000 bytes, half compressible: runs of many sizes */
	for (int i = 0; i < NBLK; i++) {
		struct store_block blk;
		size_t n = 1 + (size_t)(i * 7919) % sizeof data;
		ferry_random(data, n);
		if (i % 2)
			memset(data, 'a' + i % 26, n / 2);
		if (store_block_prepare((struct codec_spec){CODEC_LZ4, 0}, data, n, scratch,
					sizeof scratch, &blk) < 0 ||
		    store_writer_put(w, &blk, NULL) < 0)
			return -1;
		memcpy(hashes[i], blk.hash, FERRY_HASH_LEN);
	}
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	node_dir_builder_init(&b, put_node, w);
	if (node_dir_builder_finish(&b, &t, e.child) < 0)
		return -1;
	node_dir_builder_release(&b);
	e.child_type = (uint8_t)t;
	fbuf_init(&f, NODE_MAX);
	if (node_root_encode(&f, NODE_ROOT_FILESYSTEM, &e) < 0 ||
	    store_writer_put_node(w, NODE_EXT, f.data, f.len, root) < 0 ||
	    store_writer_commit_snapshot(w, &DS, "s", root, 0, 0, NULL) < 0)
		return -1;
	fbuf_release(&f);
	store_writer_free(w);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	store_pool_close(P);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

struct seen {
	size_t n, failed, batches;
	int64_t last_pack, last_off;
	int ordered;
	char pack[64];
	int64_t fail_off[8];
	char why[8][STORE_SCRUB_DETAIL_MAX];
};

/* Scans from (pack, off): deep hashes blocks whose CRC-32C passed too;
 * lanes: scratch for that many blocks' decoding (1: one at a time). */
static void scan_with(int64_t pack, int64_t off, int deep, size_t lanes, struct seen *s)
{
	struct store_scan *sc = NULL;
	struct store_scan_batch b;
	static uint8_t scratch[STORE_SCAN_LANES][STORE_BLOCK_MAX];
	int r;
	memset(s, 0, sizeof *s);
	memset(&b, 0, sizeof b);
	b.deep = deep;
	s->ordered = 1;
	fbuf_init(&b.buf, STORE_BLOCK_MAX + (8 << 20));
	assert_int_equal(store_scan_new(P, pack, off, &sc), 0);
	while ((r = store_scan_next(sc, &b)) == 1) {
		s->batches++;
		assert_true(b.buf.len <= ((size_t)4 << 20) || b.n == 1);
		assert_int_equal(b.deep, deep);
		store_scan_verify(&b, scratch, lanes * sizeof scratch[0]);
		for (size_t i = 0; i < b.n; i++) {
			if (b.pack_id < s->last_pack ||
			    (b.pack_id == s->last_pack && b.items[i].offset <= s->last_off))
				s->ordered = 0;
			s->last_pack = b.pack_id;
			s->last_off = b.items[i].offset;
			snprintf(s->pack, sizeof s->pack, "%s", b.pack);
			if (b.items[i].err && s->failed < 8) {
				s->fail_off[s->failed] = b.items[i].offset;
				snprintf(s->why[s->failed], sizeof s->why[0], "%s", b.items[i].why);
			}
			s->failed += b.items[i].err != 0;
			s->n++;
		}
	}
	assert_int_equal(r, 0);
	store_scan_batch_release(&b);
	store_scan_free(sc);
}

static void scan_all(int64_t pack, int64_t off, struct seen *s)
{
	scan_with(pack, off, 0, 1, s);
}

static uint32_t last_psize; /* of the block block_off found */

/* The pack file and the offset of block i (by its hash), from a scan. */
static int64_t block_off(int i, char pack[64], int64_t *pack_id)
{
	struct store_scan *sc = NULL;
	struct store_scan_batch b;
	int64_t off = -1;
	memset(&b, 0, sizeof b);
	fbuf_init(&b.buf, STORE_BLOCK_MAX + (8 << 20));
	assert_int_equal(store_scan_new(P, 0, 0, &sc), 0);
	while (off < 0 && store_scan_next(sc, &b) == 1)
		for (size_t k = 0; k < b.n; k++)
			if (!memcmp(b.items[k].hash, hashes[i], FERRY_HASH_LEN)) {
				off = b.items[k].offset;
				last_psize = b.items[k].psize;
				snprintf(pack, 64, "%s", b.pack);
				*pack_id = b.pack_id;
			}
	store_scan_batch_release(&b);
	store_scan_free(sc);
	return off;
}

static void flip(const char *pack, int64_t at)
{
	char path[600];
	snprintf(path, sizeof path, "%s/tank/packs/%s", tmpdir, pack);
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, (long)at, SEEK_SET);
	int c = fgetc(f);
	fseek(f, (long)at, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static void test_scan_clean(void **state)
{
	struct seen s;
	uint64_t total, before, n;
	struct store_scan *sc = NULL;
	scan_all(0, 0, &s);
	assert_int_equal(s.n, NBLK);
	assert_int_equal(s.failed, 0);
	assert_true(s.ordered);
	assert_true(s.batches > 1); /* runs of at most 4 MiB */
	assert_int_equal(store_scan_new(P, 0, 0, &sc), 0);
	assert_int_equal(store_scan_totals(sc, &total, &before, &n), 0);
	assert_int_equal(n, NBLK);
	assert_int_equal(before, 0);
	assert_true(total > 0);
	store_scan_free(sc);
}

static void test_scan_flips(void **state)
{
	char pack[64];
	int64_t pid;
	struct seen s;
	int64_t a = block_off(10, pack, &pid), b = block_off(200, pack, &pid);
	assert_true(a > 0 && b > 0);
	flip(pack, a + 48 + 1); /* a payload byte */
	flip(pack, b + 9);      /* lsize in the header */
	scan_all(0, 0, &s);
	assert_int_equal(s.n, NBLK);
	assert_int_equal(s.failed, 2);
	int64_t lo = a < b ? a : b, hi = a < b ? b : a;
	assert_int_equal(s.fail_off[0], lo);
	assert_int_equal(s.fail_off[1], hi);
	assert_non_null(strstr(s.why[a < b ? 1 : 0], "header"));
	flip(pack, a + 48 + 1);
	flip(pack, b + 9);
	/* from block 200's position on: only what follows it */
	scan_all(pid, b, &s);
	assert_true(s.n > 0 && s.n < NBLK);
	assert_int_equal(s.failed, 0);
}

/* Rewrites the CRC-32C tail of the record at off (psize bytes of
 * payload) to match what the pack now holds. */
static void fix_crc(const char *pack, int64_t off, uint32_t psize)
{
	char path[600];
	uint8_t rec[48 + 60000], tail[4];
	snprintf(path, sizeof path, "%s/tank/packs/%s", tmpdir, pack);
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	assert_true(48 + psize <= sizeof rec);
	fseek(f, (long)off, SEEK_SET);
	assert_int_equal(fread(rec, 1, 48 + psize, f), 48 + psize);
	uint32_t c = crc32c_update(0, rec, 48 + psize);
	for (int k = 0; k < 4; k++)
		tail[k] = (uint8_t)(c >> (8 * k));
	fseek(f, (long)off + 48 + psize, SEEK_SET);
	assert_int_equal(fwrite(tail, 1, 4, f), 4);
	fclose(f);
}

/* A deep scan hashes what the CRC-32C passes: a payload changed with its
 * CRC made to match is found by the hash alone, the same way whether the
 * hashes go one at a time or eight at once; a shallow scan trusts the CRC. */
static void test_scan_deep(void **state)
{
	char pack[64], pack2[64];
	int64_t pid;
	struct seen s1, s8, s0;
	int64_t a = block_off(11, pack, &pid);
	uint32_t pa = last_psize;
	int64_t b = block_off(150, pack2, &pid);
	uint32_t pb = last_psize;
	assert_true(a > 0 && b > 0 && pa > 100 && pb > 100);
	scan_with(0, 0, 1, STORE_SCAN_LANES, &s8);
	assert_int_equal(s8.n, NBLK);
	assert_int_equal(s8.failed, 0);
	flip(pack, a + 48 + pa - 1); /* the last payload byte */
	fix_crc(pack, a, pa);
	flip(pack2, b + 48 + pb / 2);
	fix_crc(pack2, b, pb);
	scan_with(0, 0, 0, STORE_SCAN_LANES, &s0);
	assert_int_equal(s0.failed, 0);
	scan_with(0, 0, 1, 1, &s1);
	scan_with(0, 0, 1, STORE_SCAN_LANES, &s8);
	assert_int_equal(s1.n, NBLK);
	assert_int_equal(s8.n, NBLK);
	assert_int_equal(s1.failed, 2);
	assert_int_equal(s8.failed, 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(s1.fail_off[k], s8.fail_off[k]);
		assert_string_equal(s1.why[k], s8.why[k]);
	}
	assert_true(s8.fail_off[0] == (a < b ? a : b) || strcmp(pack, pack2) != 0);
	flip(pack, a + 48 + pa - 1);
	fix_crc(pack, a, pa);
	flip(pack2, b + 48 + pb / 2);
	fix_crc(pack2, b, pb);
	scan_with(0, 0, 1, STORE_SCAN_LANES, &s8);
	assert_int_equal(s8.failed, 0);
}

static void test_scan_truncated(void **state)
{
	char pack[64], path[600];
	int64_t pid;
	struct seen s;
	int64_t off = block_off(NBLK - 1, pack, &pid);
	(void)off;
	scan_all(0, 0, &s);
	snprintf(path, sizeof path, "%s/tank/packs/%s", tmpdir, s.pack);
	assert_int_equal(truncate(path, s.last_off + 10), 0);
	scan_all(0, 0, &s);
	assert_int_equal(s.n, NBLK);
	assert_int_equal(s.failed, 1);
	assert_non_null(strstr(s.why[0], "past the end"));
}

static void test_state_log(void **state)
{
	struct store_scrub_state st, back;
	struct store_scrub_err e;
	memset(&st, 0, sizeof st);
	assert_int_equal(store_scrub_state_get(P, &back), 0);
	assert_int_equal(back.state, STORE_SCRUB_NONE);
	st.state = STORE_SCRUB_PAUSED;
	st.pack_id = 3;
	st.offset = 4096;
	st.bytes = 12345;
	memset(&e, 0, sizeof e);
	e.kind = STORE_SCRUB_BLOCK;
	e.has_hash = 1;
	memcpy(e.hash, hashes[0], FERRY_HASH_LEN);
	snprintf(e.detail, sizeof e.detail, "test");
	assert_int_equal(store_scrub_checkpoint(P, &st, &e, 1, 1, 0, 1), 0);
	assert_true(e.id > 0);
	assert_int_equal(store_scrub_state_get(P, &back), 0);
	assert_int_equal(back.state, STORE_SCRUB_PAUSED);
	assert_int_equal(back.pack_id, 3);
	assert_int_equal(back.offset, 4096);
	assert_int_equal(back.bytes, 12345);
	assert_int_equal(back.errors, 1);
	assert_int_equal(store_scrub_stop_requested(P), 0);
	/* a fresh checkpoint empties the log */
	assert_int_equal(store_scrub_checkpoint(P, &st, NULL, 0, 1, 0, 1), 0);
	assert_int_equal(store_scrub_state_get(P, &back), 0);
	assert_int_equal(back.errors, 0);
	assert_int_equal(store_scrub_request_stop(P), -FERR_NOENT); /* none runs */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_clean),
		cmocka_unit_test(test_scan_flips),
		cmocka_unit_test(test_scan_deep),
		cmocka_unit_test(test_state_log),
		cmocka_unit_test(test_scan_truncated),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
