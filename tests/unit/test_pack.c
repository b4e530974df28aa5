/* tests/unit/test_pack.c — the block store: the storage rule, dedup within
 * and across writers, stored-form reads, verification of encoded blocks,
 * self-describing packs, corruption detection, and nothing visible before
 * commit. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <cmocka.h>

#include "store/store.h"
#include "store/internal.h" /* cat_exec: to play SQLite rolling back by itself */

static char tmpdir[256];
static struct store_pool *P;
static struct store_ds DS;

static int setup(void **state)
{
	char path[512];
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-unit-pack.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof path, "%s/home", tmpdir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", tmpdir);
	struct store_propset props[] = {{"compression", "lz4"}};
	if (store_pool_create("tank", path, props, 1) < 0 || store_pool_open("tank", 0, &P) < 0 ||
	    store_ds_create(P, "tank/a", STORE_DS_FILESYSTEM, 0, NULL, 0) < 0 ||
	    store_ds_lookup(P, "tank/a", &DS) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	store_pool_close(P);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	return store_writer_put_node(arg, type, data, len, hash);
}

/* A root node over an empty directory, so a snapshot can be committed. */
static void make_root(struct store_writer *w, uint8_t root[FERRY_HASH_LEN])
{
	struct node_dir_builder b;
	struct node_entry e;
	struct fbuf f;
	int t;
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	node_dir_builder_init(&b, put_node, w);
	assert_int_equal(node_dir_builder_finish(&b, &t, e.child), 0);
	node_dir_builder_release(&b);
	e.child_type = (uint8_t)t;
	fbuf_init(&f, NODE_MAX);
	assert_int_equal(node_root_encode(&f, NODE_ROOT_FILESYSTEM, &e), 0);
	assert_int_equal(store_writer_put_node(w, NODE_EXT, f.data, f.len, root), 0);
	fbuf_release(&f);
}

/* The pool's data and node packs, or with checkpoints set its
 * checkpoints' packs (r<seq>.pack, one per change of the catalogue's
 * state, records.c). */
static size_t count_files(int checkpoints)
{
	char path[600];
	snprintf(path, sizeof path, "%s/tank/packs", tmpdir);
	DIR *d = opendir(path);
	struct dirent *de;
	size_t n = 0;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n += (de->d_name[0] == 'r') == !!checkpoints;
	closedir(d);
	return n;
}

static size_t count_packs(void)
{
	return count_files(0);
}

static void test_prepare_rule(void **state)
{
	static uint8_t text[65536], rnd[65536], zero[65536], scratch[65536];
	struct store_block b;
	struct codec_spec lz4 = {CODEC_LZ4, 0}, off = {CODEC_OFF, 0};
	for (size_t i = 0; i < sizeof text; i++)
		text[i] = "abcdefgh"[i % 8];
	ferry_random(rnd, sizeof rnd);
	assert_int_equal(store_block_prepare(lz4, text, sizeof text, scratch, sizeof scratch, &b), 0);
	assert_int_equal(b.form, BLOCK_COMPRESSED);
	assert_true(b.psize < 65536 / 8);
	assert_int_equal(store_block_prepare(lz4, rnd, sizeof rnd, scratch, sizeof scratch, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_int_equal(b.codec.id, CODEC_OFF);
	assert_int_equal(store_block_prepare(lz4, zero, sizeof zero, scratch, sizeof scratch, &b), 0);
	assert_int_equal(b.form, BLOCK_HOLE);
	assert_int_equal(store_block_prepare(off, zero, sizeof zero, scratch, sizeof scratch, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW); /* compression=off keeps zeros */
	assert_int_equal(store_block_prepare(lz4, text, 0, scratch, sizeof scratch, &b), -FERR_INVAL);
}

static void test_put_get_dedup(void **state)
{
	static uint8_t data[100000], back[100000], scratch[100000], dec[100000];
	struct store_writer *w = NULL, *w2 = NULL;
	struct store_reader *rd = NULL;
	struct store_block b, b2;
	struct codec_spec lz4 = {CODEC_LZ4, 0}, gz = {CODEC_GZIP, 7};
	uint8_t root[FERRY_HASH_LEN];
	int stored;
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i / 100);
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_block_prepare(lz4, data, sizeof data, scratch, sizeof scratch, &b), 0);
	assert_int_equal(store_writer_put(w, &b, &stored), 0);
	assert_int_equal(stored, 1);
	assert_int_equal(store_writer_put(w, &b, &stored), 0);
	assert_int_equal(stored, 0); /* within one writer */
	assert_int_equal(store_writer_has(w, b.hash, lz4), 1);
	assert_int_equal(store_writer_has(w, b.hash, gz), 0);
	/* nothing is visible to readers before the commit */
	assert_int_equal(store_reader_new(P, &rd), 0);
	assert_int_equal(store_block_has(rd, b.hash), 0);
	make_root(w, root);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "one", root, 0, 0, NULL), 0);
	assert_int_equal(store_block_has(rd, b.hash), 1);
	assert_int_equal(store_block_read(rd, b.hash, back, sizeof back), 0);
	assert_memory_equal(back, data, sizeof data);
	assert_int_equal(store_block_read(rd, b.hash, back, 10), -FERR_CORRUPT); /* wrong size */
	/* across writers: the same block under the same codec is not stored again,
	 * under another codec it is (once per codec) */
	assert_int_equal(store_writer_new(P, &w2), 0);
	assert_int_equal(store_writer_put(w2, &b, &stored), 0);
	assert_int_equal(stored, 0);
	assert_int_equal(store_block_prepare(gz, data, sizeof data, scratch, sizeof scratch, &b2), 0);
	assert_int_equal(store_writer_put(w2, &b2, &stored), 0);
	assert_int_equal(stored, 1);
	/* a block received already encoded: verified, stored as is */
	struct store_block b3;
	uint8_t bad[FERRY_HASH_LEN];
	memcpy(bad, b2.hash, sizeof bad);
	bad[0] ^= 1;
	assert_int_equal(store_block_prepare_encoded(gz, b2.payload, b2.psize, sizeof data, bad, dec,
						     sizeof dec, &b3), -FERR_CORRUPT);
	assert_int_equal(store_block_prepare_encoded(gz, b2.payload, b2.psize - 1, sizeof data,
						     b2.hash, dec, sizeof dec, &b3), -FERR_CORRUPT);
	assert_int_equal(store_block_prepare_encoded(gz, b2.payload, b2.psize, sizeof data, b2.hash,
						     dec, sizeof dec, &b3), 0);
	assert_int_equal(b3.psize, b2.psize);
	assert_ptr_equal(b3.payload, b2.payload);
	uint8_t unknown[FERRY_HASH_LEN] = {1, 2, 3};
	assert_int_equal(store_writer_ref(w2, unknown), -FERR_NOENT);
	assert_int_equal(store_writer_ref(w2, b.hash), 0);
	make_root(w2, root);
	assert_int_equal(store_writer_commit_snapshot(w2, &DS, "two", root, 0, 0, NULL), 0);
	assert_int_equal(store_writer_commit_snapshot(w2, &DS, "two", root, 0, 0, NULL), -FERR_EXISTS);
	/* the stored form, preferring a codec */
	struct fbuf f;
	struct codec_spec c;
	uint32_t ls;
	fbuf_init(&f, 1 << 20);
	assert_int_equal(store_block_read_stored(rd, b.hash, gz, &c, &ls, &f, NULL), 0);
	assert_int_equal(c.id, CODEC_GZIP);
	assert_int_equal(c.level, 7);
	assert_int_equal(ls, sizeof data);
	assert_int_equal(f.len, b2.psize);
	int vouched = -1;
	assert_int_equal(store_block_read_stored(rd, b.hash, lz4, &c, &ls, &f, &vouched), 0);
	assert_int_equal(c.id, CODEC_LZ4);
	assert_int_equal(f.len, b.psize);
	/* a new pool's packs are of version 3: the CRC tail vouches for the bytes */
	assert_int_equal(vouched, 1);
	fbuf_release(&f);
	struct store_snap s;
	assert_int_equal(store_snap_lookup(P, "tank/a@two", &s), 0);
	/* @two references both copies: the lz4 one and the gzip-7 one */
	assert_int_equal(s.referenced, b.psize + b2.psize);
	assert_int_equal(s.logicalreferenced, 2 * sizeof data);
	store_writer_free(w2);
	store_writer_free(w);
	store_reader_free(rd);
}

/* The writer's short paths: a block or node put twice, a reference made
 * twice or to a block only this writer holds, and a writer whose one commit
 * was its last (store_writer_last) leaving its rows for the next writer,
 * which must not inherit them. */
static void test_writer_paths(void **state)
{
	static uint8_t d1[5000], d2[7000], s1[8000], s2[8000];
	struct store_writer *w = NULL;
	struct store_block b1, b2;
	struct codec_spec lz4 = {CODEC_LZ4, 0};
	uint8_t root[FERRY_HASH_LEN], h1[FERRY_HASH_LEN], h2[FERRY_HASH_LEN];
	static const uint8_t bl[] = "a blocklist's bytes, not decoded by the writer";
	struct store_snap s;
	int stored;
	for (size_t i = 0; i < sizeof d1; i++)
		d1[i] = (uint8_t)(i * 7 / 50);
	for (size_t i = 0; i < sizeof d2; i++)
		d2[i] = (uint8_t)(i * 13 / 40);
	assert_int_equal(store_block_prepare(lz4, d1, sizeof d1, s1, sizeof s1, &b1), 0);
	assert_int_equal(store_block_prepare(lz4, d2, sizeof d2, s2, sizeof s2, &b2), 0);
	/* A: b1 put twice and referenced twice while only A holds it */
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_writer_put(w, &b1, &stored), 0);
	assert_int_equal(stored, 1);
	assert_int_equal(store_writer_put(w, &b1, &stored), 0);
	assert_int_equal(stored, 0);
	assert_int_equal(store_writer_ref(w, b1.hash), 0);
	assert_int_equal(store_writer_ref(w, b1.hash), 0);
	assert_int_equal(store_writer_put_node(w, NODE_BLOCKLIST, bl, sizeof bl, h1), 0);
	assert_int_equal(store_writer_put_node(w, NODE_BLOCKLIST, bl, sizeof bl, h2), 0);
	assert_memory_equal(h1, h2, FERRY_HASH_LEN);
	make_root(w, root);
	store_writer_last(w);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "paths1", root, 0, 0, NULL), 0);
	store_writer_free(w);
	assert_int_equal(store_snap_lookup(P, "tank/a@paths1", &s), 0);
	assert_int_equal(s.referenced, b1.psize);
	uint64_t blocks, bytes;
	/* B: only b2; nothing of A's snapshot may leak into it */
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_writer_put(w, &b2, &stored), 0);
	assert_int_equal(stored, 1);
	assert_int_equal(store_writer_ref(w, b2.hash), 0);
	store_writer_counters(w, &blocks, &bytes);
	assert_int_equal(blocks, 1);
	make_root(w, root);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "paths2", root, 0, 0, NULL), 0);
	store_writer_free(w);
	assert_int_equal(store_snap_lookup(P, "tank/a@paths2", &s), 0);
	assert_int_equal(s.referenced, b2.psize);
	/* C: b1 from the pool, referenced twice; the node the pool holds put
	 * again; nothing written */
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_writer_ref(w, b1.hash), 0);
	assert_int_equal(store_writer_ref(w, b1.hash), 0);
	assert_int_equal(store_writer_put(w, &b1, &stored), 0);
	assert_int_equal(stored, 0);
	assert_int_equal(store_writer_put_node(w, NODE_BLOCKLIST, bl, sizeof bl, h2), 0);
	assert_memory_equal(h1, h2, FERRY_HASH_LEN);
	make_root(w, root);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "paths3", root, 0, 0, NULL), 0);
	store_writer_counters(w, &blocks, &bytes);
	assert_int_equal(blocks, 0);
	store_writer_free(w);
	assert_int_equal(store_snap_lookup(P, "tank/a@paths3", &s), 0);
	assert_int_equal(s.referenced, b1.psize);
}

/* Every block in a pack can be found and checked from the pack alone, and
 * so can every node and checkpoint record (pack version 3: each record
 * followed by the CRC-32C of its header and payload, the file header's
 * last u32 the CRC-32C of its first 12 bytes). */
static void test_self_describing(void **state)
{
	char path[600];
	snprintf(path, sizeof path, "%s/tank/packs", tmpdir);
	DIR *d = opendir(path);
	struct dirent *de;
	size_t blocks = 0;
	static uint8_t buf[1 << 20], out[1 << 20];
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char f[900];
		snprintf(f, sizeof f, "%s/%s", path, de->d_name);
		int fd = open(f, O_RDONLY);
		ssize_t n = read(fd, buf, sizeof buf);
		close(fd);
		assert_true(n >= 16);
		assert_memory_equal(buf, "FRYPACK1", 8);
		assert_int_equal(get_le32(buf + 8), 3);
		assert_int_equal(get_le32(buf + 12), crc32c_update(0, buf, 12));
		for (size_t off = 16; off < (size_t)n;) {
			uint8_t h[FERRY_HASH_LEN];
			if (get_le32(buf + off) == 0x444F4E46u) { /* FNOD */
				uint32_t len = get_le32(buf + off + 8);
				node_hash(buf[off + 4], buf + off + 44, len, h);
				assert_memory_equal(h, buf + off + 12, FERRY_HASH_LEN);
				assert_int_equal(get_le32(buf + off + 44 + len),
						 crc32c_update(0, buf + off, 44 + len));
				off += 44 + len + 4;
				continue;
			}
			if (get_le32(buf + off) == 0x54414346u) { /* FCAT */
				uint32_t len = get_le32(buf + off + 16);
				struct hash_state hs;
				hash_init(&hs);
				hash_update(&hs, buf + off, 24);
				hash_update(&hs, buf + off + 56, len);
				hash_final(&hs, h);
				assert_memory_equal(h, buf + off + 24, FERRY_HASH_LEN);
				assert_int_equal(get_le32(buf + off + 56 + len),
						 crc32c_update(0, buf + off, 56 + len));
				off += 56 + len + 4;
				continue;
			}
			assert_int_equal(get_le32(buf + off), 0x4B4C4246u);
			struct codec_spec c = {buf[off + 4], buf[off + 5]};
			uint32_t ls = get_le32(buf + off + 8), ps = get_le32(buf + off + 12);
			if (c.id == CODEC_OFF)
				memcpy(out, buf + off + 48, ls);
			else
				assert_int_equal(codec_decode(c, buf + off + 48, ps, out, ls), 0);
			hash_blake2b(h, out, ls);
			assert_memory_equal(h, buf + off + 16, FERRY_HASH_LEN);
			assert_int_equal(get_le32(buf + off + 48 + ps), crc32c_update(0, buf + off, 48 + ps));
			off += 48 + ps + 4;
			blocks++;
		}
	}
	closedir(d);
	assert_int_equal(blocks, 4); /* two from test_put_get_dedup, two from test_writer_paths */
}

static void test_corruption_detected(void **state)
{
	static uint8_t data[50000], scratch[50000], back[50000];
	struct store_writer *w = NULL;
	struct store_reader *rd = NULL;
	struct store_block b;
	uint8_t root[FERRY_HASH_LEN];
	ferry_random(data, sizeof data);
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_block_prepare((struct codec_spec){CODEC_LZ4, 0}, data, sizeof data,
					     scratch, sizeof scratch, &b), 0);
	size_t before = count_packs();
	assert_int_equal(store_writer_put(w, &b, NULL), 0);
	make_root(w, root);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "three", root, 0, 0, NULL), 0);
	store_writer_free(w);
	assert_int_equal(count_packs(), before + 1); /* make_root's node is the pool's already */
	/* flip one payload byte of the newest pack's only block */
	char path[600];
	snprintf(path, sizeof path, "%s/tank/packs", tmpdir);
	DIR *d = opendir(path);
	struct dirent *de;
	char victim[900] = "";
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char f[900];
		struct stat sb;
		snprintf(f, sizeof f, "%s/%s", path, de->d_name);
		if (stat(f, &sb) == 0 && sb.st_size == 16 + 48 + 50000 + 4)
			snprintf(victim, sizeof victim, "%s", f);
	}
	closedir(d);
	assert_true(victim[0]);
	int fd = open(victim, O_RDWR);
	uint8_t x;
	assert_int_equal(pread(fd, &x, 1, 16 + 48 + 1000), 1);
	x ^= 0x40;
	assert_int_equal(pwrite(fd, &x, 1, 16 + 48 + 1000), 1);
	close(fd);
	assert_int_equal(store_reader_new(P, &rd), 0);
	assert_int_equal(store_block_read(rd, b.hash, back, sizeof back), -FERR_CORRUPT);
	store_reader_free(rd);
}

/* A writer freed without committing gives back the packs it made; a pack
 * nobody names (a killed writer's) goes at the next gc, or at the next
 * writer that has the pool to itself, and never while a writer lives. */
static void test_uncommitted_is_given_back(void **state)
{
	static uint8_t data[30000], scratch[30000];
	struct store_writer *w = NULL, *w2 = NULL;
	struct store_block b;
	struct store_gc_stats st;
	char path[600];
	ferry_random(data, sizeof data);
	/* garbage earlier tests left goes first (nodes they put and no root
	 * reaches, whose records have a pack of their own), so the gc below
	 * has nothing but the orphan to take */
	assert_int_equal(store_gc(P, &st), 0);
	size_t before = count_packs();
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_block_prepare((struct codec_spec){CODEC_LZ4, 0}, data, sizeof data,
					     scratch, sizeof scratch, &b), 0);
	assert_int_equal(store_writer_put(w, &b, NULL), 0);
	store_writer_pause(w);
	assert_int_equal(count_packs(), before + 1);
	/* gc waits for writers: it refuses while one is open */
	assert_int_equal(store_gc(P, &st), -FERR_BUSY);
	store_writer_free(w); /* never committed */
	assert_int_equal(count_packs(), before);

	/* what a kill -9 leaves: a pack file the catalogue does not name */
	snprintf(path, sizeof path, "%s/tank/packs/00000000deadbeef.pack", tmpdir);
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, 1000), 1000);
	close(fd);
	assert_int_equal(store_gc(P, &st), 0);
	assert_int_equal(st.orphans_deleted, 1);
	assert_int_equal(count_packs(), before);

	/* a second writer while one lives sweeps nothing; alone, it sweeps */
	assert_int_equal(store_writer_new(P, &w), 0);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	struct store_pool *p2 = NULL;
	assert_int_equal(store_pool_open("tank", 0, &p2), 0);
	assert_int_equal(store_writer_new(p2, &w2), 0);
	assert_int_equal(access(path, F_OK), 0);
	store_writer_free(w2);
	store_writer_free(w);
	assert_int_equal(store_writer_new(p2, &w2), 0);
	assert_int_equal(access(path, F_OK), -1);
	store_writer_free(w2);
	store_pool_close(p2);
	assert_int_equal(count_packs(), before);
}


/* SQLite may roll a transaction back by itself after a failed statement
 * (no memory, a full disk, an I/O error). Played here with a ROLLBACK
 * behind the store's back: nothing after it may commit piecewise, the
 * transaction's commit fails, and a writer whose pending rows went with
 * it refuses to commit or save them (it would reference blocks it never
 * recorded, which gc would then free). */
/* pack_nodes_each (gc's count and copy of live node records) reads a
 * pack through a window of 1 MiB: it finds exactly the node records a
 * plain parse of the whole file finds, at the same offsets, in packs of
 * several MiB whose records straddle the window's edges. */
struct seen {
	size_t n, cap;
	uint64_t *off;
};

static int seen_add(void *arg, int fd, uint64_t off, const struct pack_rec *x)
{
	struct seen *v = arg;
	(void)fd;
	assert_int_equal(x->kind, PACK_REC_NODE);
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 256;
		v->off = realloc(v->off, v->cap * sizeof *v->off);
		assert_non_null(v->off);
	}
	v->off[v->n++] = off;
	return 0;
}

static void test_nodes_each_window(void **state)
{
	static uint8_t data[70000];
	struct store_writer *w = NULL;
	uint8_t root[FERRY_HASH_LEN], h[FERRY_HASH_LEN];
	char dir[600], path[900];
	size_t big = 0, total = 0, across = 0;
	uint64_t x = 88172645463325252ull;
	(void)state;
	assert_int_equal(store_writer_new(P, &w), 0);
	/* about 5 MiB of blocklist nodes, most of them tiny so that record
	 * headers fall across the window's edges, and a few large ones (the
	 * writer stores node bytes without decoding them) */
	for (unsigned i = 0; i < 60000; i++) {
		size_t len = i % 1000 == 999 ? 50000 + i / 1000 : 16 + (size_t)(x % 24);
		for (size_t k = 0; k < len; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			data[k] = (uint8_t)x;
		}
		assert_int_equal(store_writer_put_node(w, NODE_BLOCKLIST, data, len, h), 0);
	}
	make_root(w, root);
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "window", root, 0, 0, NULL), 0);
	store_writer_free(w);
	snprintf(dir, sizeof dir, "%s/tank/packs", tmpdir);
	DIR *d = opendir(dir);
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (de->d_name[0] == '.' || nl < 6 || strcmp(de->d_name + nl - 5, ".pack"))
			continue;
		const char *name = de->d_name; /* as the catalogue names packs */
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		/* the plain parse: the whole file in memory */
		struct stat sb;
		assert_int_equal(stat(path, &sb), 0);
		uint8_t *all = malloc((size_t)sb.st_size + 1);
		assert_non_null(all);
		int fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(read(fd, all, (size_t)sb.st_size), sb.st_size);
		close(fd);
		int version;
		assert_int_equal(pack_hdr_get(all, &version), 0);
		struct seen want = {0, 0, NULL}, got = {0, 0, NULL};
		uint64_t off = PACK_HDR_LEN, size = (uint64_t)sb.st_size;
		while (off < size) {
			struct pack_rec r;
			size_t avail = size - off < PACK_CAT_HDR_LEN ? (size_t)(size - off)
								     : PACK_CAT_HDR_LEN;
			assert_int_equal(pack_rec_parse(all + off, avail, version, &r), 0);
			assert_true(pack_rec_len(&r) <= size - off);
			if (r.kind == PACK_REC_NODE)
				assert_int_equal(seen_add(&want, -1, off, &r), 0);
			off += pack_rec_len(&r);
		}
		/* the headers pack_nodes_each finds only partly in its window */
		uint64_t at = 0, have = size < PACK_NODES_WIN ? size : PACK_NODES_WIN;
		for (size_t k = 0; k < want.n; k++)
			if (want.off[k] + PACK_CAT_HDR_LEN > at + have) {
				/* fewer bytes of it than a node header's */
				across += want.off[k] + PACK_NOD_HDR_LEN > at + have &&
					  want.off[k] < at + have && at + have < size;
				at = want.off[k];
				have = size - at < PACK_NODES_WIN ? size - at : PACK_NODES_WIN;
			}
		assert_int_equal(pack_nodes_each(P, name, seen_add, &got), 0);
		assert_int_equal(got.n, want.n);
		if (want.n)
			assert_memory_equal(got.off, want.off, want.n * sizeof *want.off);
		total += want.n;
		big += want.n && size > ((uint64_t)3 << 20);
		free(want.off);
		free(got.off);
		free(all);
	}
	closedir(d);
	assert_true(total >= 60000);
	assert_true(big >= 1); /* the window moved more than once */
	assert_true(across >= 1);
}

static void test_lost_rollbacks(void **state)
{
	static uint8_t d[6000], sc[8000];
	struct codec_spec lz4 = {CODEC_LZ4, 0};
	struct store_block b;
	struct store_writer *w = NULL;
	struct store_propval v;
	uint8_t root[FERRY_HASH_LEN];
	for (size_t i = 0; i < sizeof d; i++)
		d[i] = (uint8_t)(i * 11 / 30);
	/* a transaction: the rollback comes from nowhere, the set after it
	 * runs outside any transaction and must not commit on its own */
	struct store_propset ps = {"org.test:lost", "1"};
	assert_int_equal(store_tx_begin(P), 0);
	assert_int_equal(cat_exec(P, "ROLLBACK"), 0);
	assert_int_not_equal(store_prop_set(P, &DS, &ps, 1, STORE_SRC_LOCAL), 0);
	ferry_err_clear();
	int r = store_tx_commit(P);
	assert_int_equal(r, -FERR_CATALOG);
	assert_non_null(strstr(ferry_errmsg(r), "rolled back a transaction"));
	assert_int_equal(store_prop_get(P, &DS, "org.test:lost", &v), 0);
	assert_string_equal(v.value, "-");
	/* and the next transaction is a normal one */
	assert_int_equal(store_prop_set(P, &DS, &ps, 1, STORE_SRC_LOCAL), 0);
	assert_int_equal(store_prop_get(P, &DS, "org.test:lost", &v), 0);
	assert_string_equal(v.value, "1");
	/* a writer's batch rolled back: its pending rows are gone */
	assert_int_equal(store_block_prepare(lz4, d, sizeof d, sc, sizeof sc, &b), 0);
	assert_int_equal(store_writer_new(P, &w), 0);
	assert_int_equal(store_writer_put(w, &b, NULL), 0);
	assert_int_equal(store_writer_intact(w), 0);
	assert_int_equal(cat_exec(P, "ROLLBACK"), 0);
	assert_int_equal(store_writer_intact(w), -FERR_CATALOG);
	assert_int_equal(store_writer_ref(w, b.hash), -FERR_CATALOG);
	make_root(w, root);
	ferry_err_clear();
	assert_int_equal(store_writer_commit_snapshot(w, &DS, "lost", root, 0, 0, NULL),
			 -FERR_CATALOG);
	store_writer_free(w);
	struct store_snap s;
	assert_int_equal(store_snap_lookup(P, "tank/fs@lost", &s), -FERR_NOENT);
	ferry_err_clear();
}

static size_t count_checkpoints(void)
{
	return count_files(1);
}

static int scrub_err_ignore(void *arg, const struct store_scrub_err *e)
{
	(void)arg;
	(void)e;
	return 0;
}

/* A meta row that cannot be read is not one that is missing. The orphan
 * sweep, gc and scrub's records pass read rec_seq and rec_pack, which a
 * pool without a checkpoint lacks; they once took any failure to read
 * them for that, so an allocation that failed there (62-faults with every
 * fault point) had gc delete the newest checkpoint as an orphan and exit
 * 0. Played here with a TEMP view over meta that fails every read: each
 * of them fails, and every checkpoint pack stays. */
static void test_meta_unreadable(void **state)
{
	struct store_gc_stats st;
	uint64_t removed = 0, c = 0, b = 0;
	char rec[64], path[700];
	assert_int_equal(cat_meta_get(P, "rec_pack", rec, sizeof rec), 0);
	snprintf(path, sizeof path, "%s/tank/packs/%s", tmpdir, rec);
	size_t n = count_checkpoints();
	assert_true(n >= 1);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(cat_exec(P, "CREATE TEMP VIEW meta AS SELECT 'k' AS key, 'v' AS value"
				     " WHERE abs(-9223372036854775807 - 1)"), 0);
	char seq[32];
	int r = cat_meta_get(P, "rec_seq", seq, sizeof seq);
	assert_true(r < 0 && r != -FERR_NOENT);
	assert_int_equal(cat_meta_get_opt(P, "rec_seq", seq, sizeof seq), r);
	ferry_err_clear();
	assert_true(pack_sweep_orphans_quiesced(P, &removed) < 0);
	ferry_err_clear();
	assert_true(store_gc(P, &st) < 0);
	ferry_err_clear();
	assert_true(store_scrub_records(P, 0, scrub_err_ignore, NULL, &c, &b) < 0);
	ferry_err_clear();
	assert_int_equal(count_checkpoints(), n);
	assert_int_equal(access(path, F_OK), 0);
	/* readable again: a missing key is 1 and "", the checkpoint stays */
	assert_int_equal(cat_exec(P, "DROP VIEW temp.meta"), 0);
	assert_int_equal(cat_meta_get_opt(P, "no such key", seq, sizeof seq), 1);
	assert_string_equal(seq, "");
	assert_int_equal(store_gc(P, &st), 0);
	assert_int_equal(cat_meta_get(P, "rec_pack", rec, sizeof rec), 0);
	snprintf(path, sizeof path, "%s/tank/packs/%s", tmpdir, rec);
	assert_int_equal(access(path, F_OK), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepare_rule),
		cmocka_unit_test(test_put_get_dedup),
		cmocka_unit_test(test_writer_paths),
		cmocka_unit_test(test_self_describing),
		cmocka_unit_test(test_corruption_detected),
		cmocka_unit_test(test_uncommitted_is_given_back),
		cmocka_unit_test(test_lost_rollbacks),
		cmocka_unit_test(test_nodes_each_window),
		cmocka_unit_test(test_meta_unreadable),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
