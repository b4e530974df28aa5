/* tests/unit/test_stream.c — the stream engines: round trips of every
 * record type, any input split, every bad case, the golden vectors,
 * resume tokens, bounded memory, sources and sinks. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "stream/stream.h"

/* ---- helpers ---------------------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static uint8_t blk1[300], blk2[1000], blk3[64], nodebuf[500], rootbuf[200];
static uint8_t h1[FERRY_HASH_LEN], h2[FERRY_HASH_LEN], h3[FERRY_HASH_LEN];
static uint8_t hroot[FERRY_HASH_LEN], hroot2[FERRY_HASH_LEN];

static void node_hash(uint8_t type, const void *p, size_t n, uint8_t out[FERRY_HASH_LEN])
{
	struct hash_state h;

	hash_init(&h);
	hash_update(&h, &type, 1);
	hash_update(&h, p, n);
	hash_final(&h, out);
}

static int setup(void **state)
{
	(void)state;
	if (ferry_lib_init() < 0)
		return -1;
	fill(blk1, sizeof(blk1), 1);
	fill(blk2, sizeof(blk2), 2);
	fill(blk3, sizeof(blk3), 3);
	fill(nodebuf, sizeof(nodebuf), 4);
	fill(rootbuf, sizeof(rootbuf), 5);
	hash_blake2b(h1, blk1, sizeof(blk1));
	hash_blake2b(h2, blk2, sizeof(blk2));
	hash_blake2b(h3, blk3, sizeof(blk3));
	node_hash(1, rootbuf, sizeof(rootbuf), hroot);
	node_hash(2, nodebuf, sizeof(nodebuf), hroot2);
	return 0;
}

static const struct stream_prop props3[] = {
	{"com.example:x", "a\tb \xc3\xa9", STREAM_SRC_RECEIVED},
	{"compression", "gzip-9", STREAM_SRC_LOCAL},
	{"readonly", "", STREAM_SRC_DEFAULT},
};

static struct stream_begin mkbegin(const char *ds, const char *snap, uint64_t to, uint64_t from,
				   const uint8_t root[FERRY_HASH_LEN], uint8_t root_type)
{
	struct stream_begin b;

	memset(&b, 0, sizeof(b));
	b.ds_type = STREAM_DS_FILESYSTEM;
	b.dataset = ds;
	b.snapshot = snap;
	b.to_guid = to;
	b.from_guid = from;
	b.creation_ns = 1700000000123456789ull;
	b.creation_txg = 42;
	b.root_type = root_type;
	memcpy(b.root_hash, root, FERRY_HASH_LEN);
	return b;
}

static struct stream_write mkwrite(const uint8_t *hash, uint32_t lsize, uint8_t codec,
				   uint8_t level, const uint8_t *data, uint32_t psize)
{
	struct stream_write w;

	memcpy(w.hash, hash, FERRY_HASH_LEN);
	w.lsize = lsize;
	w.codec = codec;
	w.level = level;
	w.psize = psize;
	w.data = data;
	return w;
}

/* BEGIN (props, -c), WRITE off, WRITE lz4 (opaque bytes), BYREF, NODE,
 * root NODE, END. */
static void build_single(struct fbuf *out)
{
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("tank/home", "mon", 0x11, 0, hroot, 1);
	struct stream_write w;

	b.flags = STREAM_F_COMPRESSED | STREAM_F_PROPS;
	b.props = props3;
	b.nprops = 3;
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_begin(e, &b, out), 0);
	w = mkwrite(h1, sizeof(blk1), STREAM_CODEC_OFF, 0, blk1, sizeof(blk1));
	assert_int_equal(stream_encode_write(e, &w, out), 0);
	w = mkwrite(h2, 4096, STREAM_CODEC_GZIP, 7, blk2, sizeof(blk2));
	assert_int_equal(stream_encode_write(e, &w, out), 0);
	assert_int_equal(stream_encode_byref(e, h3, sizeof(blk3), out), 0);
	assert_int_equal(stream_encode_node(e, 2, nodebuf, sizeof(nodebuf), out), 0);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), out), 0);
	assert_int_equal(stream_encoder_done(e), 0);
	assert_int_equal(stream_encode_end(e, out), 0);
	assert_int_equal(stream_encoder_done(e), 1);
	assert_int_equal(stream_encoder_records(e), 7);
	stream_encoder_free(e);
}

static const struct stream_snap snaps_a[] = {
	{0x11, 42, 1700000000000000000ull, "mon"},
	{0x12, 57, 1700086400000000000ull, "tue"},
};

static void build_package(struct fbuf *out)
{
	const uint32_t f = STREAM_F_REPLICATE | STREAM_F_PROPS;
	struct stream_package k = {.flags = f, .ndatasets = 2, .top = "tank/a", .to_snap = "tue",
				   .from_snap = "mon"};
	struct stream_dataset d1 = {0xa1, STREAM_DS_FILESYSTEM, "tank/a", props3, 3, snaps_a, 2};
	struct stream_dataset d2 = {0xa2, STREAM_DS_VOLUME, "tank/a/vol", NULL, 0, snaps_a + 1, 1};
	struct stream_encoder *e;
	struct stream_begin b;
	struct stream_write w;

	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_package(e, &k, out), 0);
	assert_int_equal(stream_encode_dataset(e, &d1, out), 0);
	assert_int_equal(stream_encode_dataset(e, &d2, out), 0);
	b = mkbegin("tank/a", "tue", 0x12, 0x11, hroot, 1);
	b.flags = f;
	assert_int_equal(stream_encode_begin(e, &b, out), 0);
	w = mkwrite(h1, sizeof(blk1), STREAM_CODEC_OFF, 0, blk1, sizeof(blk1));
	assert_int_equal(stream_encode_write(e, &w, out), 0);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), out), 0);
	assert_int_equal(stream_encode_end(e, out), 0);
	b = mkbegin("tank/a/vol", "tue", 0x13, 0, hroot2, 2);
	b.ds_type = STREAM_DS_VOLUME;
	b.flags = f;
	assert_int_equal(stream_encode_begin(e, &b, out), 0);
	assert_int_equal(stream_encode_node(e, 2, nodebuf, sizeof(nodebuf), out), 0);
	assert_int_equal(stream_encode_end(e, out), 0);
	assert_int_equal(stream_encode_package_end(e, out), 0);
	assert_int_equal(stream_encoder_done(e), 1);
	stream_encoder_free(e);
}

/* Decodes p[0..n) in chunks (0: whole, SIZE_MAX: random sizes), re-encoding
 * every record into reenc when given. Returns the final status and counts
 * records in *nrec. */
static int decode_buf(const uint8_t *p, size_t n, size_t chunk, struct fbuf *reenc,
		      uint64_t *nrec)
{
	struct stream_decoder *d;
	struct stream_encoder *e;
	struct stream_record rec;
	size_t off = 0, used;
	int r = 0;

	*nrec = 0;
	assert_int_equal(stream_decoder_new(&d), 0);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	while (off < n) {
		size_t k = n - off, done = 0;
		if (chunk == SIZE_MAX)
			k = 1 + rnd() % (k < 700 ? k : 700);
		else if (chunk && k > chunk)
			k = chunk;
		while (done < k) {
			r = stream_decoder_feed(d, p + off + done, k - done, &used, &rec);
			if (r < 0)
				goto out;
			assert_true(used <= k - done);
			done += used;
			if (r == 1) {
				(*nrec)++;
				if (reenc)
					assert_int_equal(stream_encode_record(e, &rec, reenc), 0);
			} else {
				assert_int_equal(done, k);
			}
		}
		off += k;
	}
	r = stream_decoder_finish(d);
out:
	stream_decoder_free(d);
	stream_encoder_free(e);
	return r;
}

static int decode_simple(const uint8_t *p, size_t n)
{
	uint64_t nrec;

	return decode_buf(p, n, 0, NULL, &nrec);
}

/* ---- round trips -------------------------------------------------------- */

static void test_roundtrip_fields(void **state)
{
	struct fbuf s;
	struct stream_decoder *d;
	struct stream_record rec;
	size_t off = 0, used;
	int r, i = 0;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_single(&s);
	assert_int_equal(stream_decoder_new(&d), 0);
	while ((r = stream_decoder_feed(d, s.data + off, s.len - off, &used, &rec)) == 1) {
		off += used;
		assert_int_equal(rec.index, (uint64_t)i);
		switch (i++) {
		case 0:
			assert_int_equal(rec.type, STREAM_BEGIN);
			assert_int_equal(rec.offset, 0);
			assert_int_equal(rec.begin.version, STREAM_VERSION);
			assert_int_equal(rec.begin.flags, STREAM_F_COMPRESSED | STREAM_F_PROPS);
			assert_string_equal(rec.begin.dataset, "tank/home");
			assert_string_equal(rec.begin.snapshot, "mon");
			assert_int_equal(rec.begin.to_guid, 0x11);
			assert_int_equal(rec.begin.from_guid, 0);
			assert_int_equal(rec.begin.creation_ns, 1700000000123456789ull);
			assert_int_equal(rec.begin.creation_txg, 42);
			assert_int_equal(rec.begin.root_type, 1);
			assert_memory_equal(rec.begin.root_hash, hroot, FERRY_HASH_LEN);
			assert_int_equal(rec.begin.nprops, 3);
			for (size_t k = 0; k < 3; k++) {
				assert_string_equal(rec.begin.props[k].name, props3[k].name);
				assert_string_equal(rec.begin.props[k].value, props3[k].value);
				assert_int_equal(rec.begin.props[k].source, props3[k].source);
			}
			break;
		case 1:
			assert_int_equal(rec.type, STREAM_WRITE);
			assert_int_equal(rec.seq, 1);
			assert_int_equal(rec.write.codec, STREAM_CODEC_OFF);
			assert_int_equal(rec.write.psize, sizeof(blk1));
			assert_memory_equal(rec.write.data, blk1, sizeof(blk1));
			assert_memory_equal(rec.write.hash, h1, FERRY_HASH_LEN);
			break;
		case 2:
			assert_int_equal(rec.type, STREAM_WRITE);
			assert_int_equal(rec.seq, 2);
			assert_int_equal(rec.write.codec, STREAM_CODEC_GZIP);
			assert_int_equal(rec.write.level, 7);
			assert_int_equal(rec.write.lsize, 4096);
			assert_int_equal(rec.write.psize, sizeof(blk2));
			assert_memory_equal(rec.write.data, blk2, sizeof(blk2));
			break;
		case 3:
			assert_int_equal(rec.type, STREAM_WRITE_BYREF);
			assert_int_equal(rec.seq, 3);
			assert_memory_equal(rec.byref.hash, h3, FERRY_HASH_LEN);
			assert_int_equal(rec.byref.lsize, sizeof(blk3));
			break;
		case 4:
			assert_int_equal(rec.type, STREAM_NODE);
			assert_int_equal(rec.node.type, 2);
			assert_int_equal(rec.node.len, sizeof(nodebuf));
			assert_memory_equal(rec.node.data, nodebuf, sizeof(nodebuf));
			assert_memory_equal(rec.node.hash, hroot2, FERRY_HASH_LEN);
			break;
		case 5:
			assert_int_equal(rec.type, STREAM_NODE);
			assert_int_equal(rec.seq, 5);
			assert_memory_equal(rec.node.hash, hroot, FERRY_HASH_LEN);
			break;
		case 6:
			assert_int_equal(rec.type, STREAM_END);
			assert_int_equal(rec.end.count, 6);
			break;
		}
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, 7);
	assert_int_equal(off + used, s.len);
	assert_int_equal(stream_decoder_finish(d), 0);
	assert_int_equal(stream_decoder_bytes(d), s.len);
	assert_int_equal(stream_decoder_records(d), 7);
	stream_decoder_free(d);
	fbuf_release(&s);
}

static void test_roundtrip_package(void **state)
{
	struct fbuf s;
	struct stream_decoder *d;
	struct stream_source_mem src;
	struct stream_record rec;
	int r, i = 0;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_package(&s);
	assert_int_equal(stream_decoder_new(&d), 0);
	stream_source_mem_init(&src, s.data, s.len, 7);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
		switch (i++) {
		case 0:
			assert_int_equal(rec.type, STREAM_PACKAGE);
			assert_string_equal(rec.package.top, "tank/a");
			assert_string_equal(rec.package.to_snap, "tue");
			assert_string_equal(rec.package.from_snap, "mon");
			assert_int_equal(rec.package.ndatasets, 2);
			break;
		case 1:
			assert_int_equal(rec.type, STREAM_DATASET);
			assert_string_equal(rec.dataset.name, "tank/a");
			assert_int_equal(rec.dataset.guid, 0xa1);
			assert_int_equal(rec.dataset.nprops, 3);
			assert_string_equal(rec.dataset.props[2].name, "readonly");
			assert_string_equal(rec.dataset.props[2].value, "");
			assert_int_equal(rec.dataset.nsnaps, 2);
			assert_string_equal(rec.dataset.snaps[1].name, "tue");
			assert_int_equal(rec.dataset.snaps[1].txg, 57);
			assert_int_equal(rec.dataset.snaps[0].creation_ns, 1700000000000000000ull);
			break;
		case 2:
			assert_int_equal(rec.type, STREAM_DATASET);
			assert_int_equal(rec.dataset.ds_type, STREAM_DS_VOLUME);
			assert_int_equal(rec.dataset.nprops, 0);
			break;
		case 3:
		case 7:
			assert_int_equal(rec.type, STREAM_BEGIN);
			assert_true(rec.begin.flags & STREAM_F_REPLICATE);
			break;
		case 6:
			assert_int_equal(rec.type, STREAM_END);
			assert_int_equal(rec.end.count, 3);
			break;
		case 10:
			assert_int_equal(rec.type, STREAM_PACKAGE_END);
			assert_int_equal(rec.package_end.count, 10);
			assert_int_equal(rec.package_end.nsub, 2);
			break;
		}
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, 11);
	/* a clean end stays a clean end */
	assert_int_equal(stream_decoder_pull(d, &src.base, &rec), 0);
	stream_decoder_free(d);
	fbuf_release(&s);
}

/* Decoding then re-encoding gives the same bytes, for every way of
 * splitting the input. */
static void check_splits(const struct fbuf *s, uint64_t want_records)
{
	const size_t chunks[] = {0, 1, 2, 3, 7, 8, 16, 23, 24, 100, 4096, SIZE_MAX, SIZE_MAX};
	struct fbuf re;
	uint64_t n;

	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		fbuf_init(&re, 1 << 20);
		assert_int_equal(decode_buf(s->data, s->len, chunks[i], &re, &n), 0);
		assert_int_equal(n, want_records);
		assert_int_equal(re.len, s->len);
		assert_memory_equal(re.data, s->data, s->len);
		fbuf_release(&re);
	}
}

static void test_any_split(void **state)
{
	struct fbuf s;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_single(&s);
	check_splits(&s, 7);
	fbuf_reset(&s);
	build_package(&s);
	check_splits(&s, 11);
	fbuf_release(&s);
}

/* The largest records of each kind, and a memory bound that holds. */
static void test_max_records(void **state)
{
	struct stream_encoder *e;
	struct stream_decoder *d;
	struct stream_record rec;
	struct stream_write w;
	struct stream_begin b;
	uint8_t *node = malloc(STREAM_NODE_MAX + 1), *blk = malloc(STREAM_BLOCK_MAX), h[32];
	struct fbuf s, re;
	uint64_t n;
	size_t off = 0, used;
	int r;

	(void)state;
	assert_non_null(node);
	assert_non_null(blk);
	fill(node, STREAM_NODE_MAX + 1, 9);
	fill(blk, STREAM_BLOCK_MAX, 10);
	hash_blake2b(h, blk, STREAM_BLOCK_MAX);
	fbuf_init(&s, 16 << 20);
	node_hash(1, node, STREAM_NODE_MAX, hroot2);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	b = mkbegin("p/v", "s", 5, 0, hroot2, 1);
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	w = mkwrite(h, STREAM_BLOCK_MAX, 0, 0, blk, STREAM_BLOCK_MAX);
	assert_int_equal(stream_encode_write(e, &w, &s), 0);
	/* one byte too many is refused, and nothing is written */
	off = s.len;
	assert_int_equal(stream_encode_node(e, 1, node, STREAM_NODE_MAX + 1, &s), -FERR_LIMIT);
	assert_int_equal(s.len, off);
	assert_int_equal(stream_encode_node(e, 1, node, STREAM_NODE_MAX, &s), 0);
	assert_int_equal(stream_encode_end(e, &s), 0);
	stream_encoder_free(e);

	fbuf_init(&re, 16 << 20);
	assert_int_equal(decode_buf(s.data, s.len, 65536, &re, &n), 0);
	assert_int_equal(n, 4);
	assert_memory_equal(re.data, s.data, s.len);
	fbuf_release(&re);

	assert_int_equal(stream_decoder_new(&d), 0);
	off = 0;
	while ((r = stream_decoder_feed(d, s.data + off, s.len - off, &used, &rec)) == 1) {
		off += used;
		assert_true(stream_decoder_footprint(d) <= STREAM_DECODER_MEM_MAX);
	}
	assert_int_equal(r, 0);
	assert_true(stream_decoder_footprint(d) <= STREAM_PAYLOAD_MAX + 1 + 65536);
	stream_decoder_free(d);
	node_hash(2, nodebuf, sizeof(nodebuf), hroot2);
	fbuf_release(&s);
	free(node);
	free(blk);
}

/* ---- memory bound ------------------------------------------------------ */

static void test_limit_4g_header(void **state)
{
	struct stream_decoder *d;
	struct stream_record rec;
	struct fbuf s;
	uint8_t hdr[8];
	uint8_t junk[4096];
	size_t used, off = 0, before;
	int r;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_single(&s);
	assert_int_equal(stream_decoder_new(&d), 0);
	/* the BEGIN */
	assert_int_equal(stream_decoder_feed(d, s.data, s.len, &used, &rec), 1);
	before = stream_decoder_footprint(d);
	assert_true(before < 4096);
	/* a NODE header announcing 4 GiB - 1 */
	put_le16(hdr, STREAM_NODE);
	put_le16(hdr + 2, 0);
	put_le32(hdr + 4, UINT32_MAX);
	r = stream_decoder_feed(d, hdr, sizeof(hdr), &off, &rec);
	assert_int_equal(r, -FERR_LIMIT);
	assert_non_null(strstr(ferry_errmsg(r), "record 1 (NODE): payload length 4294967295 "
					  "exceeds maximum 4194340"));
	assert_int_equal(stream_decoder_footprint(d), before);
	/* stuck on the error, whatever comes next */
	memset(junk, 0, sizeof(junk));
	assert_int_equal(stream_decoder_feed(d, junk, sizeof(junk), &off, &rec), -FERR_LIMIT);
	assert_int_equal(stream_decoder_finish(d), -FERR_LIMIT);
	assert_int_equal(stream_decoder_footprint(d), before);
	stream_decoder_free(d);

	/* A header at the maximum: memory grows with what arrives, never past
	 * the cap, and the junk is refused at its trailer. */
	assert_int_equal(stream_decoder_new(&d), 0);
	assert_int_equal(stream_decoder_feed(d, s.data, s.len, &used, &rec), 1);
	put_le32(hdr + 4, STREAM_PAYLOAD_MAX);
	assert_int_equal(stream_decoder_feed(d, hdr, sizeof(hdr), &off, &rec), 0);
	assert_true(stream_decoder_footprint(d) < 8192);
	assert_int_equal(stream_decoder_feed(d, junk, sizeof(junk), &off, &rec), 0);
	assert_true(stream_decoder_footprint(d) < 16384);
	for (size_t k = 0; k < STREAM_PAYLOAD_MAX / sizeof(junk) + 1; k++) {
		r = stream_decoder_feed(d, junk, sizeof(junk), &off, &rec);
		assert_true(stream_decoder_footprint(d) <= STREAM_DECODER_MEM_MAX);
		if (r < 0)
			break;
	}
	assert_int_equal(r, -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(r), "record 1 (NODE): trailer mismatch"));
	stream_decoder_free(d);
	fbuf_release(&s);
}

/* A long stream does not make the decoder hold more. */
static void test_memory_flat(void **state)
{
	struct stream_encoder *e;
	struct stream_decoder *d;
	struct stream_record rec;
	struct stream_begin b = mkbegin("p/a", "s", 9, 0, hroot, 1);
	struct stream_write w = mkwrite(h2, sizeof(blk2), 0, 0, blk2, sizeof(blk2));
	struct fbuf s;
	size_t used, peak = 0;
	int r;

	(void)state;
	fbuf_init(&s, 1 << 20);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_decoder_new(&d), 0);
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	for (int i = 0; i < 20000; i++) {
		assert_int_equal(stream_encode_write(e, &w, &s), 0);
		for (size_t off = 0; off < s.len; off += used) {
			r = stream_decoder_feed(d, s.data + off, s.len - off, &used, &rec);
			assert_true(r >= 0);
		}
		fbuf_reset(&s);
		if (stream_decoder_footprint(d) > peak)
			peak = stream_decoder_footprint(d);
	}
	assert_int_equal(stream_decoder_records(d), 20001);
	assert_true(peak < 4096);
	stream_decoder_free(d);
	stream_encoder_free(e);
	fbuf_release(&s);
}

/* stream_decoder_pull borrows a payload that is whole in its input
 * chunk (and reads a record's rest behind its start for that) and copies
 * one too big for the chunk: the same records either way, at any read
 * size the source gives, and every cut an error naming the truncation. */
#define PULL_SIZES 7
static const uint32_t pull_psize[PULL_SIZES] = {1, 300, 65536, 200003, 900000,
						  STREAM_PULL_CHUNK - 100, STREAM_BLOCK_MAX};

static void build_pull(struct fbuf *out, uint8_t *data, uint8_t (*hs)[FERRY_HASH_LEN],
		       unsigned n)
{
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("p/a", "s", 9, 0, hroot, 1);

	b.flags = STREAM_F_COMPRESSED;
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_begin(e, &b, out), 0);
	for (unsigned i = 0; i < n; i++) {
		/* opaque gzip bytes: the decoder checks no block content */
		struct stream_write w = mkwrite(hs[i], STREAM_BLOCK_MAX, STREAM_CODEC_GZIP, 7,
						data, pull_psize[i]);
		int r = stream_encode_write(e, &w, out);
		if (r != 0)
			fail_msg("%u: %s", i, ferry_errmsg(r));
	}
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), out), 0);
	assert_int_equal(stream_encode_end(e, out), 0);
	stream_encoder_free(e);
}

/* Pulls s[0..n) from a source giving at most chunk bytes a read (0: as
 * many as asked); checks each WRITE against data. Returns the final
 * status, the records in *nrec and the decoder's footprint in *fp. */
static int pull_all(const struct fbuf *s, size_t n, size_t chunk, const uint8_t *data,
		    unsigned nw, uint64_t *nrec, size_t *fp)
{
	struct stream_decoder *d;
	struct stream_source_mem src;
	struct stream_record rec;
	unsigned w = 0;
	int r;

	*nrec = 0;
	assert_int_equal(stream_decoder_new(&d), 0);
	stream_source_mem_init(&src, s->data, n, chunk);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
		(*nrec)++;
		if (rec.type != STREAM_WRITE)
			continue;
		assert_true(w < nw);
		assert_int_equal(rec.write.psize, pull_psize[w]);
		assert_memory_equal(rec.write.data, data, pull_psize[w]);
		w++;
	}
	if (r == 0)
		assert_int_equal(w, nw);
	*fp = stream_decoder_footprint(d);
	stream_decoder_free(d);
	return r;
}

static void test_pull_borrow(void **state)
{
	static const size_t chunks[] = {0, 1, 7, 4093, 65536, 300000};
	uint8_t(*hs)[FERRY_HASH_LEN] = calloc(PULL_SIZES, FERRY_HASH_LEN);
	uint8_t *data = malloc(STREAM_BLOCK_MAX);
	struct fbuf s;
	uint64_t nrec;
	size_t fp;

	(void)state;
	assert_non_null(hs);
	assert_non_null(data);
	fill(data, STREAM_BLOCK_MAX, 9);
	for (unsigned i = 0; i < PULL_SIZES; i++)
		fill(hs[i], FERRY_HASH_LEN, 100 + i);
	fbuf_init(&s, 8u << 20);
	/* every payload fits the chunk: all borrowed, none ever copied, so
	 * no payload buffer is ever held (it would be >= 900,000 bytes) */
	build_pull(&s, data, hs, PULL_SIZES - 1);
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		assert_int_equal(pull_all(&s, s.len, chunks[c], data, PULL_SIZES - 1, &nrec, &fp), 0);
		assert_int_equal(nrec, PULL_SIZES - 1 + 3);
		if (fp >= STREAM_PULL_CHUNK + 65536)
			fail_msg("read size %zu: footprint %zu: a payload was copied", chunks[c], fp);
	}
	/* one record bigger than the chunk: copied, the rest still right */
	fbuf_reset(&s);
	build_pull(&s, data, hs, PULL_SIZES);
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		assert_int_equal(pull_all(&s, s.len, chunks[c], data, PULL_SIZES, &nrec, &fp), 0);
		assert_int_equal(nrec, PULL_SIZES + 3);
	}
	/* cut anywhere (header, payload, trailer of small, borrowed and
	 * copied records): truncated, never a record that is not whole */
	for (size_t n = 0; n < s.len; n += 1 + rnd() % 40009) {
		int r = pull_all(&s, n, 65536, data, PULL_SIZES, &nrec, &fp);
		if (r != -FERR_TRUNCATED)
			fail_msg("cut at %zu: %d %s", n, r, ferry_errmsg(r));
	}
	for (size_t k = 0; k < 40; k++) {
		int r = pull_all(&s, s.len - 1 - k, 4093, data, PULL_SIZES, &nrec, &fp);
		assert_int_equal(r, -FERR_TRUNCATED);
	}
	fbuf_release(&s);
	free(data);
	free(hs);
}

/* ---- damage ------------------------------------------------------------- */

static void test_every_flip_detected(void **state)
{
	struct fbuf s;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_single(&s);
	for (size_t i = 0; i < s.len; i++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			int r;
			s.data[i] ^= (uint8_t)(1u << bit);
			r = decode_simple(s.data, s.len);
			s.data[i] ^= (uint8_t)(1u << bit);
			if (r >= 0)
				fail_msg("flip of bit %u in byte %zu went unnoticed", bit, i);
			assert_true(r == -FERR_CORRUPT || r == -FERR_LIMIT || r == -FERR_TRUNCATED ||
				    r == -FERR_UNSUPPORTED);
		}
	}
	assert_int_equal(decode_simple(s.data, s.len), 0);
	fbuf_release(&s);
}

static void test_every_cut_truncated(void **state)
{
	struct fbuf s;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_package(&s);
	for (size_t n = 0; n < s.len; n++) {
		int r = decode_simple(s.data, n);
		if (r != -FERR_TRUNCATED)
			fail_msg("cut at %zu: %d %s", n, r, ferry_errmsg(r));
	}
	fbuf_release(&s);
}

static void test_trailing_and_sticky(void **state)
{
	struct stream_decoder *d;
	struct stream_record rec;
	struct fbuf s;
	size_t used, off = 0;
	char want[128];
	int r;

	(void)state;
	fbuf_init(&s, 1 << 20);
	build_single(&s);
	assert_int_equal(stream_decoder_new(&d), 0);
	while ((r = stream_decoder_feed(d, s.data + off, s.len - off, &used, &rec)) == 1)
		off += used;
	assert_int_equal(r, 0);
	assert_int_equal(stream_decoder_finish(d), 0);
	r = stream_decoder_feed(d, "x", 1, &used, &rec);
	assert_int_equal(r, -FERR_CORRUPT);
	snprintf(want, sizeof(want), "trailing data at byte %zu, after the final END (record 6)",
		 s.len);
	assert_non_null(strstr(ferry_errmsg(r), want));
	ferry_err_clear();
	assert_int_equal(stream_decoder_finish(d), -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(-FERR_CORRUPT), "trailing data"));
	stream_decoder_free(d);
	fbuf_release(&s);
}

/* Record i of stream s: offset and size. */
static void record_at(const struct fbuf *s, size_t i, size_t *off, size_t *size)
{
	size_t o = 0;

	for (;;) {
		size_t sz = STREAM_HDR_LEN + get_le32(s->data + o + 4) + STREAM_TRAILER_LEN;
		if (i-- == 0) {
			*off = o;
			*size = sz;
			return;
		}
		o += sz;
	}
}

static void expect(const struct fbuf *s, int code, const char *msg)
{
	int r = decode_simple(s->data, s->len);

	if (r != code || !strstr(ferry_errmsg(r), msg))
		fail_msg("want %d '%s', got %d '%s'", code, msg, r, ferry_errmsg(r));
}

static void test_reorder_splice(void **state)
{
	struct fbuf s, t, other;
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("tank/home", "mon", 0x99, 0, hroot, 1);
	size_t o1, n1, o2, n2;

	(void)state;
	fbuf_init(&s, 1 << 20);
	fbuf_init(&t, 1 << 20);
	fbuf_init(&other, 1 << 20);
	build_single(&s);
	record_at(&s, 1, &o1, &n1);
	record_at(&s, 2, &o2, &n2);
	/* swap records 1 and 2 */
	assert_int_equal(fbuf_append(&t, s.data, o1), 0);
	assert_int_equal(fbuf_append(&t, s.data + o2, n2), 0);
	assert_int_equal(fbuf_append(&t, s.data + o1, n1), 0);
	assert_int_equal(fbuf_append(&t, s.data + o2 + n2, s.len - o2 - n2), 0);
	expect(&t, -FERR_CORRUPT, "record 1 (WRITE): trailer mismatch");
	/* record 1 from a stream whose BEGIN differs only in its guid */
	b.flags = STREAM_F_COMPRESSED | STREAM_F_PROPS;
	b.props = props3;
	b.nprops = 3;
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_begin(e, &b, &other), 0);
	struct stream_write w = mkwrite(h1, sizeof(blk1), 0, 0, blk1, sizeof(blk1));
	assert_int_equal(stream_encode_write(e, &w, &other), 0);
	stream_encoder_free(e);
	fbuf_reset(&t);
	assert_int_equal(fbuf_append(&t, s.data, o1), 0);
	assert_int_equal(fbuf_append(&t, other.data + other.len - n1, n1), 0);
	assert_int_equal(fbuf_append(&t, s.data + o1 + n1, s.len - o1 - n1), 0);
	assert_memory_equal(other.data + other.len - n1 + 8, s.data + o1 + 8, n1 - 24);
	expect(&t, -FERR_CORRUPT, "record 1 (WRITE): trailer mismatch");
	fbuf_release(&s);
	fbuf_release(&t);
	fbuf_release(&other);
}

/* Re-frames record idx of s with payload byte at set to v, chain intact. */
static void reframe(const struct fbuf *s, size_t idx, size_t at, uint8_t v, struct fbuf *out)
{
	struct stream_encoder *e;
	size_t o = 0, i = 0;
	uint8_t *buf;

	fbuf_reset(out);
	assert_int_equal(stream_encoder_new(&e, STREAM_ENC_UNCHECKED), 0);
	while (o < s->len) {
		uint16_t type = get_le16(s->data + o), flags = get_le16(s->data + o + 2);
		uint32_t len = get_le32(s->data + o + 4);
		buf = malloc(len + 1);
		assert_non_null(buf);
		memcpy(buf, s->data + o + 8, len);
		if (i == idx)
			buf[at] = v;
		if (type == STREAM_END && i != idx)
			assert_int_equal(stream_encode_end(e, out), 0);
		else
			assert_int_equal(stream_encode_raw(e, type, flags, buf, len, out), 0);
		free(buf);
		o += STREAM_HDR_LEN + len + STREAM_TRAILER_LEN;
		i++;
	}
	stream_encoder_free(e);
}

static void test_field_errors(void **state)
{
	struct fbuf s, t;

	(void)state;
	fbuf_init(&s, 1 << 20);
	fbuf_init(&t, 1 << 20);
	build_single(&s);
	/* records: 0 BEGIN, 1 WRITE off, 2 WRITE gzip-7, 3 BYREF, 4 NODE, 5 root, 6 END */
	reframe(&s, 0, 8, 9, &t);
	expect(&t, -FERR_UNSUPPORTED, "record 0 (BEGIN): format version 9");
	reframe(&s, 0, 23, 0x80, &t);
	expect(&t, -FERR_UNSUPPORTED, "unknown required features 0x8000000000000000");
	reframe(&s, 0, 31, 0x80, &t); /* optional: fine */
	assert_int_equal(decode_simple(t.data, t.len), 0);
	reframe(&s, 0, 0, 'f', &t);
	expect(&t, -FERR_CORRUPT, "not a ferry stream (bad magic)");
	reframe(&s, 0, 35, 1, &t);
	expect(&t, -FERR_CORRUPT, "reserved byte at offset 35");
	reframe(&s, 0, 37, 0x10, &t);
	expect(&t, -FERR_LIMIT, "property count 4099 exceeds maximum 1024");
	reframe(&s, 0, 120 + 4, '.', &t); /* tank.home: fine */
	assert_int_equal(decode_simple(t.data, t.len), 0);
	reframe(&s, 0, 120 + 9, '/', &t);
	expect(&t, -FERR_CORRUPT, "snapshot name: contains '/'");
	reframe(&s, 0, 120 + 12 + 1, 7, &t);
	expect(&t, -FERR_CORRUPT, "property 0: source 7 unknown");
	reframe(&s, 0, 120 + 12 + 4, 'C', &t);
	expect(&t, -FERR_CORRUPT, "property 0: name does not start with a-z");
	reframe(&s, 0, 120 + 12 + 4 + 13, 0, &t);
	expect(&t, -FERR_CORRUPT, "property 0: value contains NUL");
	/* lz4 with psize == lsize is allowed; only the receiver can decode it */
	reframe(&s, 1, 36, 1, &t);
	assert_int_equal(decode_simple(t.data, t.len), 0);
	reframe(&s, 1, 37, 1, &t);
	expect(&t, -FERR_CORRUPT, "record 1 (WRITE): codec 0 level 1 unknown");
	reframe(&s, 1, 100, 0, &t);
	expect(&t, -FERR_CORRUPT, "record 1 (WRITE): block hash does not match");
	reframe(&s, 2, 37, 10, &t);
	expect(&t, -FERR_CORRUPT, "record 2 (WRITE): codec 2 level 10 unknown");
	reframe(&s, 2, 35, 0x10, &t);
	expect(&t, -FERR_LIMIT, "record 2 (WRITE): lsize 268439552 exceeds maximum 1048576");
	reframe(&s, 3, 39, 1, &t);
	expect(&t, -FERR_CORRUPT, "record 3 (WRITE_BYREF): reserved byte at offset 39");
	reframe(&s, 4, 36, 0, &t);
	expect(&t, -FERR_CORRUPT, "record 4 (NODE): node hash does not match");
	reframe(&s, 5, 0, 2, &t);
	expect(&t, -FERR_CORRUPT, "record 5 (NODE): node hash does not match");
	reframe(&s, 6, 0, 9, &t);
	expect(&t, -FERR_CORRUPT, "record 6 (END): record count 9, expected 6");
	reframe(&s, 6, 39, 0, &t);
	expect(&t, -FERR_CORRUPT, "record 6 (END): chain digest does not match");
	fbuf_release(&s);
	fbuf_release(&t);
}

/* The codes of bad streams that decode_simple sees, by name. */
static int class_code(const char *cls)
{
	if (!strcmp(cls, "truncated"))
		return -FERR_TRUNCATED;
	if (!strcmp(cls, "corrupt"))
		return -FERR_CORRUPT;
	if (!strcmp(cls, "unsupported"))
		return -FERR_UNSUPPORTED;
	if (!strcmp(cls, "limit"))
		return -FERR_LIMIT;
	return 1;
}

static const char *vectors_dir(void)
{
	static char dir[1024];
	const char *src = getenv("FERRY_SRC");

	snprintf(dir, sizeof(dir), "%s/tests/vectors", src ? src : ".");
	return dir;
}

static void test_vectors(void **state)
{
	char path[1200], name[128], cls[32], *buf, *err;
	size_t len, elen;
	const char *dir = vectors_dir();
	FILE *f;
	int n = 0, r;

	(void)state;
	snprintf(path, sizeof(path), "%s/bad/CLASSES", dir);
	if (!(f = fopen(path, "r")))
		skip();
	while (fscanf(f, "%127s %31s", name, cls) == 2) {
		snprintf(path, sizeof(path), "%s/bad/%s.stream", dir, name);
		assert_int_equal(io_read_file(path, 1 << 20, &buf, &len), 0);
		snprintf(path, sizeof(path), "%s/bad/%s.err", dir, name);
		assert_int_equal(io_read_file(path, 4096, &err, &elen), 0);
		if (elen && err[elen - 1] == '\n')
			err[--elen] = '\0';
		for (size_t chunk = 0; chunk < 3; chunk++) {
			uint64_t nrec;
			r = decode_buf((uint8_t *)buf, len, chunk, NULL, &nrec);
			if (r != class_code(cls) || !strstr(ferry_errmsg(r), err))
				fail_msg("bad/%s (chunk %zu): want %s '%s', got %d '%s'", name, chunk,
					 cls, err, r, ferry_errmsg(r));
		}
		free(buf);
		free(err);
		n++;
	}
	fclose(f);
	assert_true(n >= 40);

	/* the good ones, and the token that goes with resumed.stream */
	const char *good[] = {"full", "incremental", "empty-incremental", "compressed",
			      "volume-props", "package", "resumed", "optional-feature",
			      "skippable", "hint", "package-hint"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(path, sizeof(path), "%s/good/%s.stream", dir, good[i]);
		assert_int_equal(io_read_file(path, 1 << 20, &buf, &len), 0);
		if ((r = decode_simple((uint8_t *)buf, len)) != 0)
			fail_msg("good/%s: %s", good[i], ferry_errmsg(r));
		free(buf);
	}
	struct stream_token t;
	snprintf(path, sizeof(path), "%s/good/resumed.token", dir);
	assert_int_equal(io_read_file(path, 4096, &buf, &len), 0);
	buf[strcspn(buf, "\n")] = '\0';
	assert_int_equal(stream_token_decode(buf, &t), 0);
	assert_string_equal(t.dataset, "tank/home");
	assert_string_equal(t.snapshot, "mon");
	assert_int_equal(t.resume_pos, 3);
	free(buf);
}

static void test_skippable(void **state)
{
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("p/a", "s", 9, 0, hroot, 1);
	struct stream_decoder *d;
	struct stream_source_mem src;
	struct stream_record rec;
	struct fbuf s;
	int r, n = 0;

	(void)state;
	fbuf_init(&s, 1 << 20);
	assert_int_equal(stream_encoder_new(&e, STREAM_ENC_UNCHECKED), 0);
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	assert_int_equal(stream_encode_raw(e, 500, STREAM_RF_SKIPPABLE, "abc", 3, &s), 0);
	assert_int_equal(stream_encode_raw(e, 501, STREAM_RF_SKIPPABLE, NULL, 0, &s), 0);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), &s), 0);
	assert_int_equal(stream_encode_end(e, &s), 0);
	stream_encoder_free(e);
	assert_int_equal(stream_decoder_new(&d), 0);
	stream_source_mem_init(&src, s.data, s.len, 1);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
		assert_true(rec.type == STREAM_BEGIN || rec.type == STREAM_NODE ||
			    rec.type == STREAM_END);
		if (rec.type == STREAM_NODE) {
			assert_int_equal(rec.index, 3);
			assert_int_equal(rec.seq, 1);
		}
		if (rec.type == STREAM_END)
			assert_int_equal(rec.end.count, 4);
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 3);
	assert_int_equal(stream_decoder_skipped(d), 2);
	assert_int_equal(stream_decoder_records(d), 5);
	stream_decoder_free(d);
	fbuf_release(&s);
}

/* ---- encoder refusals ---------------------------------------------------- */

static void test_encoder_refuses(void **state)
{
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("tank/../x", "s", 9, 0, hroot, 1);
	static uint8_t big[8192];
	struct stream_write w = mkwrite(h2, 4096, STREAM_CODEC_LZ4, 0, big, sizeof(blk2));
	struct fbuf s;
	size_t len;
	int r;

	(void)state;
	fbuf_init(&s, 1 << 20);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_raw(e, 1, 0, "x", 1, &s), -FERR_INVAL);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, 10, &s), -FERR_INVAL);
	assert_non_null(strstr(ferry_errmsg(-FERR_INVAL), "not a ferry stream"));
	r = stream_encode_begin(e, &b, &s);
	assert_int_equal(r, -FERR_INVAL);
	assert_non_null(strstr(ferry_errmsg(r), "record 0 (BEGIN): dataset name: component '..'"));
	assert_int_equal(s.len, 0);
	b.dataset = "tank/x";
	b.features_opt = 1;
	assert_int_equal(stream_encode_begin(e, &b, &s), -FERR_INVAL);
	b.features_opt = 0;
	b.props = props3;
	b.nprops = 3;
	assert_int_equal(stream_encode_begin(e, &b, &s), -FERR_INVAL); /* no PROPS flag */
	b.nprops = 0;
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	len = s.len;
	assert_int_equal(stream_encode_end(e, &s), -FERR_INVAL); /* no root yet */
	assert_int_equal(stream_encode_write(e, &w, &s), -FERR_INVAL); /* not -c */
	w.psize = 4097;
	assert_int_equal(stream_encode_write(e, &w, &s), -FERR_INVAL); /* psize > lsize */
	w.psize = 2u << 20;
	assert_int_equal(stream_encode_write(e, &w, &s), -FERR_LIMIT);
	assert_int_equal(stream_encode_package_end(e, &s), -FERR_INVAL);
	assert_int_equal(s.len, len);
	/* refusals changed nothing: the stream goes on and decodes */
	assert_int_equal(stream_encode_node(e, 2, nodebuf, sizeof(nodebuf), &s), 0);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), &s), 0);
	assert_int_equal(stream_encode_end(e, &s), 0);
	assert_int_equal(stream_encode_node(e, 1, rootbuf, sizeof(rootbuf), &s), -FERR_INVAL);
	stream_encoder_free(e);
	assert_int_equal(decode_simple(s.data, s.len), 0);

	/* an fbuf that is too small: nothing appended, state kept */
	struct fbuf small;
	fbuf_init(&small, 100);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	b.dataset = "tank/x";
	assert_int_equal(stream_encode_begin(e, &b, &small), -FERR_LIMIT);
	assert_int_equal(small.len, 0);
	assert_int_equal(stream_encoder_records(e), 0);
	stream_encoder_free(e);
	fbuf_release(&small);
	fbuf_release(&s);
}

/* The BEGIN layout of docs/ferry-stream.5, byte for byte, in version 1
 * (tests/unit/test_keep.c has version 2's chain). */
static void test_wire_layout(void **state)
{
	struct stream_encoder *e;
	struct stream_begin b = mkbegin("ab/c", "d", 0x0102030405060708ull, 0x11, hroot, 1);
	uint8_t s0[FERRY_HASH_LEN], s1[FERRY_HASH_LEN];
	struct hash_state h;
	struct fbuf s;
	const uint8_t *p;

	(void)state;
	fbuf_init(&s, 1 << 20);
	b.creation_txg = 0x77;
	assert_int_equal(stream_encoder_new(&e, STREAM_ENC_V1), 0);
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	stream_encoder_free(e);
	assert_int_equal(s.len, 8 + 120 + 5 + 16);
	p = s.data;
	assert_int_equal(get_le16(p), 1);
	assert_int_equal(get_le16(p + 2), 0);
	assert_int_equal(get_le32(p + 4), 125);
	p += 8;
	assert_memory_equal(p, "FERRYSTM", 8);
	assert_int_equal(get_le16(p + 8), 1);
	assert_int_equal(p[32], 1);
	assert_int_equal(p[33], 1);
	assert_int_equal(get_le64(p + 40), 0x0102030405060708ull);
	assert_int_equal(get_le64(p + 48), 0x11);
	assert_int_equal(get_le64(p + 64), 0x77);
	assert_memory_equal(p + 80, hroot, FERRY_HASH_LEN);
	assert_int_equal(get_le16(p + 112), 4);
	assert_int_equal(get_le16(p + 114), 1);
	assert_memory_equal(p + 120, "ab/cd", 5);
	/* trailer = first 16 bytes of H(H("ferry-stream-v1") || header || payload) */
	hash_blake2b(s0, "ferry-stream-v1", 15);
	hash_init(&h);
	hash_update(&h, s0, sizeof(s0));
	hash_update(&h, s.data, 8 + 125);
	hash_final(&h, s1);
	assert_memory_equal(s.data + 8 + 125, s1, 16);
	fbuf_release(&s);
}

/* ---- resume tokens -------------------------------------------------------- */

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* A token built by hand from the spec, with a correct check value. */
static void craft(char *out, uint32_t flags, uint32_t resv, uint64_t to, uint64_t from,
		  uint64_t pos, const char *ds, const char *snap)
{
	uint8_t blob[600], h[32];
	size_t dl = strlen(ds), sl = strlen(snap), n;

	memset(blob, 0, 36);
	put_le32(blob, flags);
	put_le32(blob + 4, resv);
	put_le64(blob + 8, to);
	put_le64(blob + 16, from);
	put_le64(blob + 24, pos);
	blob[32] = (uint8_t)dl;
	blob[33] = (uint8_t)sl;
	memcpy(blob + 36, ds, dl);
	memcpy(blob + 36 + dl, snap, sl);
	n = 36 + dl + sl;
	hash_blake2b(h, blob, n);
	memcpy(blob + n, h, 16);
	memcpy(out, "1-", 2);
	hex(blob, n + 16, out + 2);
}

static void test_tokens(void **state)
{
	struct stream_token t, u;
	char tok[STREAM_TOKEN_MAX], crafted[1400], small[20];
	char longds[260];

	(void)state;
	memset(&t, 0, sizeof(t));
	t.flags = STREAM_F_COMPRESSED;
	t.to_guid = 0xdeadbeef;
	t.from_guid = 7;
	t.resume_pos = 12345;
	snprintf(t.dataset, sizeof(t.dataset), "tank/home/a b:c");
	snprintf(t.snapshot, sizeof(t.snapshot), "auto-2024.01");
	assert_int_equal(stream_token_encode(&t, tok, sizeof(tok)), 0);
	assert_int_equal(strncmp(tok, "1-", 2), 0);
	assert_int_equal(stream_token_decode(tok, &u), 0);
	assert_memory_equal(&t, &u, sizeof(t));
	craft(crafted, STREAM_F_COMPRESSED, 0, 0xdeadbeef, 7, 12345, "tank/home/a b:c",
	      "auto-2024.01");
	assert_string_equal(crafted, tok);
	assert_int_equal(stream_token_encode(&t, small, sizeof(small)), -FERR_LIMIT);

	/* the longest token fits STREAM_TOKEN_MAX */
	memset(longds, 'a', 253);
	longds[253] = '\0';
	memcpy(t.dataset, longds, 254);
	snprintf(t.snapshot, sizeof(t.snapshot), "s");
	assert_int_equal(stream_token_encode(&t, tok, sizeof(tok)), 0);
	assert_int_equal(strlen(tok), STREAM_TOKEN_MAX - 1);
	assert_int_equal(stream_token_decode(tok, &u), 0);
	snprintf(t.snapshot, sizeof(t.snapshot), "ss");
	assert_int_equal(stream_token_encode(&t, tok, sizeof(tok)), -FERR_INVAL);

	/* encode refuses what decode would */
	snprintf(t.dataset, sizeof(t.dataset), "tank/..");
	assert_int_equal(stream_token_encode(&t, tok, sizeof(tok)), -FERR_INVAL);
	snprintf(t.dataset, sizeof(t.dataset), "tank");
	t.resume_pos = 0;
	assert_int_equal(stream_token_encode(&t, tok, sizeof(tok)), -FERR_INVAL);

	/* hostile tokens */
	static const struct {
		const char *s;
		int code;
		const char *msg;
	} cases[] = {
		{"", -FERR_CORRUPT, "not a ferry resume token"},
		{"1", -FERR_CORRUPT, "not a ferry resume token"},
		{"-00", -FERR_CORRUPT, "not a ferry resume token"},
		{"x-00", -FERR_CORRUPT, "not a ferry resume token"},
		{"2-00", -FERR_UNSUPPORTED, "resume token version 2"},
		{"10-00", -FERR_UNSUPPORTED, "resume token version 10"},
		{"1-", -FERR_CORRUPT, "too short"},
		{"1-000", -FERR_CORRUPT, "odd number"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = stream_token_decode(cases[i].s, &u);
		if (r != cases[i].code || !strstr(ferry_errmsg(r), cases[i].msg))
			fail_msg("token '%s': got %d '%s'", cases[i].s, r, ferry_errmsg(r));
	}
	craft(crafted, 0, 0, 1, 0, 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), 0);
	/* uppercase hex is not the canonical form */
	for (char *c = crafted + 2; *c; c++)
		if (*c >= 'a' && *c <= 'f') {
			*c = (char)(*c - 'a' + 'A');
			break;
		}
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 1, 0, 1, "a", "b");
	crafted[10] = crafted[10] == '0' ? '1' : '0';
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(-FERR_CORRUPT), "check value mismatch"));
	craft(crafted, 0, 1, 1, 0, 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(-FERR_CORRUPT), "reserved"));
	craft(crafted, STREAM_F_RESUMED, 0, 1, 0, 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 0, 0, 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 5, 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 0, 0, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 0, (1ull << 48) + 1, "a", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 0, 1, "/etc", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(-FERR_CORRUPT), "dataset name: leading '/'"));
	craft(crafted, 0, 0, 5, 0, 1, "a/../b", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 0, 1, "a", "b/c");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	craft(crafted, 0, 0, 5, 0, 1, "a\nb", "b");
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);
	memset(longds, 'a', 255);
	longds[255] = '\0';
	craft(crafted, 0, 0, 5, 0, 1, longds, "b");
	assert_true(stream_token_decode(crafted, &u) < 0);
	/* lengths inside that disagree with the size */
	craft(crafted, 0, 0, 5, 0, 1, "ab", "c");
	crafted[strlen(crafted) - 2] = '\0';
	assert_int_equal(stream_token_decode(crafted, &u), -FERR_CORRUPT);

	/* random damage never crashes and never decodes to something else */
	craft(crafted, STREAM_F_PROPS, 0, 99, 98, 77, "pool/ds", "snap");
	assert_int_equal(stream_token_decode(crafted, &t), 0);
	for (int i = 0; i < 20000; i++) {
		char m[1400];
		size_t n = strlen(crafted);
		memcpy(m, crafted, n + 1);
		for (int k = 0; k < 1 + (int)(rnd() % 3); k++)
			m[rnd() % n] = (char)(rnd() % 256);
		if (rnd() % 8 == 0)
			m[rnd() % n] = '\0';
		if (stream_token_decode(m, &u) == 0)
			assert_memory_equal(&t, &u, sizeof(t));
	}
}

/* ---- sources and sinks ---------------------------------------------------- */

struct failing_source {
	struct stream_source base;
	int calls;
};

static int failing_read(struct stream_source *s, void *buf, size_t n, size_t *got)
{
	(void)buf;
	(void)n;
	(void)got;
	((struct failing_source *)s)->calls++;
	return ferry_err(FERR_IO, "read stream: boom");
}

static void test_sources_sinks(void **state)
{
	struct fbuf s, back, tiny;
	struct stream_sink_mem ms;
	struct stream_sink_fd fs;
	struct stream_source_fd src;
	struct stream_decoder *d;
	struct stream_record rec;
	struct hash_state tap;
	uint8_t h1x[32], h2x[32];
	char path[] = "/tmp/ferry-test-stream.XXXXXX";
	int fd, r, n = 0;

	(void)state;
	fbuf_init(&s, 1 << 20);
	fbuf_init(&back, 1 << 20);
	build_package(&s);

	/* memory sink with a tap */
	stream_sink_mem_init(&ms, &back);
	hash_init(&tap);
	ms.base.tap = &tap;
	assert_int_equal(stream_sink_write(&ms.base, s.data, 10), 0);
	assert_int_equal(stream_sink_write(&ms.base, s.data + 10, s.len - 10), 0);
	hash_final(&tap, h1x);
	hash_blake2b(h2x, s.data, s.len);
	assert_memory_equal(h1x, h2x, 32);
	assert_int_equal(ms.base.bytes, s.len);
	assert_memory_equal(back.data, s.data, s.len);

	/* a bounded sink fails once and stays failed */
	fbuf_init(&tiny, 16);
	stream_sink_mem_init(&ms, &tiny);
	assert_int_equal(stream_sink_write(&ms.base, s.data, 10), 0);
	assert_int_equal(stream_sink_write(&ms.base, s.data, 10), -FERR_LIMIT);
	assert_int_equal(stream_sink_write(&ms.base, s.data, 1), -FERR_LIMIT);
	assert_int_equal(tiny.len, 10);
	assert_int_equal(ms.base.err, -FERR_LIMIT);
	fbuf_release(&tiny);

	/* fd sink, then fd source through the decoder */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	stream_sink_fd_init(&fs, fd);
	fbuf_reset(&back);
	assert_int_equal(fbuf_append(&back, s.data, s.len), 0);
	assert_int_equal(stream_sink_flush(&fs.base, &back), 0);
	assert_int_equal(back.len, 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	stream_source_fd_init(&src, fd);
	assert_int_equal(stream_decoder_new(&d), 0);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1)
		n++;
	assert_int_equal(r, 0);
	assert_int_equal(n, 11);
	assert_int_equal(src.base.bytes, s.len);
	stream_decoder_free(d);
	close(fd);

	/* a writer on a closed fd: sticky I/O error */
	stream_sink_fd_init(&fs, fd);
	assert_true(stream_sink_write(&fs.base, "abc", 3) < 0);
	assert_int_equal(stream_sink_write(&fs.base, "abc", 3), fs.base.err);

	/* a failing source: the decoder reports it, once */
	struct failing_source fsrc = {.base = {.read = failing_read}};
	assert_int_equal(stream_decoder_new(&d), 0);
	assert_int_equal(stream_decoder_pull(d, &fsrc.base, &rec), -FERR_IO);
	assert_int_equal(stream_decoder_pull(d, &fsrc.base, &rec), -FERR_IO);
	assert_int_equal(fsrc.calls, 1);
	stream_decoder_free(d);

	/* a memory source cut short: truncated */
	struct stream_source_mem msrc;
	stream_source_mem_init(&msrc, s.data, s.len - 1, 3);
	assert_int_equal(stream_decoder_new(&d), 0);
	while ((r = stream_decoder_pull(d, &msrc.base, &rec)) == 1)
		;
	assert_int_equal(r, -FERR_TRUNCATED);
	assert_non_null(strstr(ferry_errmsg(r), "record 10 (PACKAGE_END): 15 of 16 trailer bytes"));
	stream_decoder_free(d);

	fbuf_release(&s);
	fbuf_release(&back);
}

static void test_names(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(stream_type_name(STREAM_WRITE_BYREF), "WRITE_BYREF");
	assert_string_equal(stream_type_name(0), "UNKNOWN");
	assert_string_equal(stream_type_name(99), "UNKNOWN");
	assert_string_equal(stream_codec_name(0, 0, buf, sizeof(buf)), "off");
	assert_string_equal(stream_codec_name(1, 0, buf, sizeof(buf)), "lz4");
	assert_string_equal(stream_codec_name(2, 7, buf, sizeof(buf)), "gzip-7");
	assert_string_equal(stream_codec_name(3, 0, buf, sizeof(buf)), "zle");
	assert_string_equal(stream_codec_name(2, 0, buf, sizeof(buf)), "?");
	assert_string_equal(stream_codec_name(4, 0, buf, sizeof(buf)), "?");
	assert_true(stream_codec_valid(2, 9));
	assert_false(stream_codec_valid(2, 10));
	assert_false(stream_codec_valid(1, 1));
	assert_string_equal(stream_source_name(STREAM_SRC_INHERITED), "inherited");
	assert_string_equal(stream_source_name(0), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_fields),
		cmocka_unit_test(test_roundtrip_package),
		cmocka_unit_test(test_any_split),
		cmocka_unit_test(test_max_records),
		cmocka_unit_test(test_limit_4g_header),
		cmocka_unit_test(test_memory_flat),
		cmocka_unit_test(test_pull_borrow),
		cmocka_unit_test(test_every_flip_detected),
		cmocka_unit_test(test_every_cut_truncated),
		cmocka_unit_test(test_trailing_and_sticky),
		cmocka_unit_test(test_reorder_splice),
		cmocka_unit_test(test_field_errors),
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_skippable),
		cmocka_unit_test(test_encoder_refuses),
		cmocka_unit_test(test_wire_layout),
		cmocka_unit_test(test_tokens),
		cmocka_unit_test(test_sources_sinks),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
