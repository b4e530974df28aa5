/* tests/unit/test_keep.c — the keep path's cheaper work: CRC-32C (known
 * answers, the fast path against the table); format version 2's chain
 * (docs/ferry-stream.5, The chain) computed here from the page's formula,
 * byte for byte against the encoder, fed to the decoder in every chunk
 * size, and a bit flip in WRITE data caught at its record; and the key
 * sets in memory (store_hset) against a reference, across the spill to
 * their table; and the strict gzip decoder (zlib's raw inflate, header and
 * Adler-32 checked by ferry) against zlib's uncompress(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <zlib.h>

#include "lib/lib.h"
#include "store/codec.h"
#include "store/store.h"
#include "stream/stream.h"

static void test_crc32c_known(void **state)
{
	static const uint8_t zeros[32], ones[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t inc[32];

	(void)state;
	for (int i = 0; i < 32; i++)
		inc[i] = (uint8_t)i;
	/* RFC 3720 (iSCSI) B.4 and the usual check value */
	assert_int_equal(crc32c_update(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c_update(0, zeros, 32), 0x8A9136AAu);
	assert_int_equal(crc32c_update(0, ones, 32), 0x62A8AB43u);
	assert_int_equal(crc32c_update(0, inc, 32), 0x46DD794Eu);
	assert_int_equal(crc32c_update_portable(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c_update(0, NULL, 0), 0);
	/* continued over pieces = over the whole */
	assert_int_equal(crc32c_update(crc32c_update(0, "1234", 4), "56789", 5), 0xE3069283u);
}

/* 70,000 pseudo-random bytes from seed x (xorshift64), to be freed. */
static uint8_t *crc_buf(uint64_t x)
{
	uint8_t *buf = malloc(70000);

	assert_non_null(buf);
	for (size_t i = 0; i < 70000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	return buf;
}

/* The fast path (any alignment, any length, any split) against the table. */
static void test_crc32c_fast_equals_table(void **state)
{
	uint8_t *buf = crc_buf(0x9E3779B97F4A7C15ull);

	(void)state;
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n < 300; n += 1 + n / 16) {
			uint32_t a = crc32c_update(0, buf + off, n);
			assert_int_equal(a, crc32c_update_portable(0, buf + off, n));
			for (size_t k = 0; k <= n; k += 7)
				assert_int_equal(crc32c_update(crc32c_update(0, buf + off, k),
							       buf + off + k, n - k), a);
		}
	assert_int_equal(crc32c_update(0, buf + 3, 69990), crc32c_update_portable(0, buf + 3, 69990));
	/* around the edges of the three-way runs (3 x 256 and 3 x 8192
	 * bytes, after up to 7 bytes to a word boundary) */
	static const size_t edge[] = {760,   767,   768,   769,   775,   776,	  783,
				      1535,  1536,  1537,  24575, 24576, 24577, 24583,
				      24584, 25344, 25351, 49152, 49919, 49927, 69990};
	for (size_t off = 0; off < 9; off++)
		for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
			size_t n = edge[i] < 70000 - off ? edge[i] : 70000 - off;
			uint32_t a = crc32c_update_portable(0, buf + off, n);
			assert_int_equal(crc32c_update(0, buf + off, n), a);
			assert_int_equal(crc32c_update(crc32c_update(0, buf + off, n / 3),
						       buf + off + n / 3, n - n / 3), a);
		}
	free(buf);
}

/* crc32c_combine: the CRC of A then B from A's and B's CRCs and B's
 * length, for every split of buffers up to 70,000 bytes (lengths whose
 * bits reach every table entry used), against the table-driven CRC of
 * the whole; and the identity of an empty B. */
static void test_crc32c_combine(void **state)
{
	uint8_t *buf = crc_buf(0xD1B54A32D192ED03ull);

	(void)state;
	static const size_t lens[] = {0, 1, 2, 7, 8, 9, 255, 256, 4095, 4096, 4097,
				      65535, 65536, 65537, 69999, 70000};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		size_t n = lens[i];
		uint32_t whole = crc32c_update_portable(0, buf, n);
		for (size_t k = 0; k <= n; k += 1 + k / 3) {
			uint32_t a = crc32c_update_portable(0, buf, k);
			uint32_t b = crc32c_update_portable(0, buf + k, n - k);
			assert_int_equal(crc32c_combine(a, b, n - k), whole);
		}
		assert_int_equal(crc32c_combine(whole, 0, 0), whole);
	}
	/* lengths past 2^32: Z[k], the CRC of 2^k zero bytes, by doubling
	 * (checked against the table while a buffer holds them); then 2^k +
	 * 2^j zeros both ways round must agree */
	uint32_t zk[48];
	memset(buf, 0, 65536);
	zk[0] = crc32c_update_portable(0, buf, 1);
	for (int k = 1; k < 48; k++) {
		zk[k] = crc32c_combine(zk[k - 1], zk[k - 1], (uint64_t)1 << (k - 1));
		if (k <= 16)
			assert_int_equal(zk[k], crc32c_update_portable(0, buf, (size_t)1 << k));
	}
	for (int k = 0; k < 48; k += 5)
		for (int j = 0; j < 48; j += 7)
			assert_int_equal(crc32c_combine(zk[k], zk[j], (uint64_t)1 << j),
					 crc32c_combine(zk[j], zk[k], (uint64_t)1 << k));
	free(buf);
}

static const uint8_t node_bytes[] = {2, 'r', 'o', 'o', 't'};

/* BEGIN, a codec-off WRITE of 5000 bytes, the root NODE, END. */
static void build(struct fbuf *s, unsigned flags, uint8_t *data, size_t n)
{
	struct stream_encoder *e;
	struct stream_begin b;
	struct stream_write w;
	struct hash_state h;
	uint8_t t = 4;

	memset(&b, 0, sizeof b);
	b.ds_type = STREAM_DS_FILESYSTEM;
	b.root_type = 4;
	hash_init(&h);
	hash_update(&h, &t, 1);
	hash_update(&h, node_bytes, sizeof node_bytes);
	hash_final(&h, b.root_hash);
	b.to_guid = 7;
	b.dataset = "tank/a";
	b.snapshot = "s";
	memset(&w, 0, sizeof w);
	hash_blake2b(w.hash, data, n);
	w.lsize = w.psize = (uint32_t)n;
	w.data = data;
	assert_int_equal(stream_encoder_new(&e, flags), 0);
	assert_int_equal(stream_encode_begin(e, &b, s), 0);
	assert_int_equal(stream_encode_write(e, &w, s), 0);
	assert_int_equal(stream_encode_node(e, 4, node_bytes, sizeof node_bytes, s), 0);
	assert_int_equal(stream_encode_end(e, s), 0);
	stream_encoder_free(e);
}

/* Offsets of the records of s. */
static size_t records(const struct fbuf *s, size_t *off, size_t max)
{
	size_t n = 0, o = 0;
	while (o < s->len && n < max) {
		off[n++] = o;
		o += STREAM_HDR_LEN + get_le32(s->data + o + 4) + STREAM_TRAILER_LEN;
	}
	assert_int_equal(o, s->len);
	return n;
}

/* S(i) by the page's formula. */
static void chain(int v2, const uint8_t prev[FERRY_HASH_LEN], const uint8_t *rec,
		  uint8_t out[FERRY_HASH_LEN])
{
	uint16_t type = get_le16(rec);
	uint32_t len = get_le32(rec + 4);
	size_t fixed = type == STREAM_WRITE ? 48 : type == STREAM_NODE ? 36 : len;
	struct hash_state h;
	uint8_t crc[4];

	hash_init(&h);
	hash_update(&h, prev, FERRY_HASH_LEN);
	hash_update(&h, rec, STREAM_HDR_LEN);
	if (!v2 || fixed >= len) {
		hash_update(&h, rec + STREAM_HDR_LEN, len);
	} else {
		hash_update(&h, rec + STREAM_HDR_LEN, fixed);
		put_le32(crc, crc32c_update(0, rec + STREAM_HDR_LEN + fixed, len - fixed));
		hash_update(&h, crc, 4);
	}
	hash_final(&h, out);
}

static int decode_all(const uint8_t *p, size_t n, size_t chunk, int *version)
{
	struct stream_decoder *d;
	struct stream_record rec;
	size_t i = 0, used;
	int r = 0;

	assert_int_equal(stream_decoder_new(&d), 0);
	while (i < n) {
		size_t k = n - i < chunk ? n - i : chunk;
		r = stream_decoder_feed(d, p + i, k, &used, &rec);
		if (r < 0)
			break;
		if (r == 1 && rec.type == STREAM_BEGIN)
			*version = rec.begin.version;
		i += used;
		r = 0;
	}
	if (r == 0)
		r = stream_decoder_finish(d);
	stream_decoder_free(d);
	return r;
}

static void test_v2_chain(void **state)
{
	static const size_t chunks[] = {1, 3, 47, 48, 49, 4096, 1 << 20};
	uint8_t data[5000], s[FERRY_HASH_LEN], prev[FERRY_HASH_LEN];
	size_t off[8], n;
	struct fbuf v1, v2;
	int version = 0;

	(void)state;
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	fbuf_init(&v1, 1 << 20);
	fbuf_init(&v2, 1 << 20);
	build(&v2, 0, data, sizeof data);
	build(&v1, STREAM_ENC_V1, data, sizeof data);
	assert_int_equal(get_le16(v2.data + STREAM_HDR_LEN + 8), 2);
	assert_int_equal(get_le16(v1.data + STREAM_HDR_LEN + 8), 1);
	/* the same records but for the version field and the trailers */
	assert_int_equal(v1.len, v2.len);

	/* every trailer and the END digest, by the formula */
	n = records(&v2, off, 8);
	assert_int_equal(n, 4);
	hash_blake2b(prev, "ferry-stream-v2", 15);
	for (size_t i = 0; i < n; i++) {
		uint32_t len = get_le32(v2.data + off[i] + 4);
		if (i == n - 1) /* END carries S(i-1) */
			assert_memory_equal(v2.data + off[i] + STREAM_HDR_LEN + 8, prev, 32);
		chain(1, prev, v2.data + off[i], s);
		assert_memory_equal(v2.data + off[i] + STREAM_HDR_LEN + len, s, 16);
		memcpy(prev, s, sizeof s);
	}
	n = records(&v1, off, 8);
	hash_blake2b(prev, "ferry-stream-v1", 15);
	for (size_t i = 0; i < n; i++) {
		uint32_t len = get_le32(v1.data + off[i] + 4);
		chain(0, prev, v1.data + off[i], s);
		assert_memory_equal(v1.data + off[i] + STREAM_HDR_LEN + len, s, 16);
		memcpy(prev, s, sizeof s);
	}

	/* both decode, in any chunking (the split between hash and CRC may
	 * fall inside a chunk or on its edge) */
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		assert_int_equal(decode_all(v2.data, v2.len, chunks[c], &version), 0);
		assert_int_equal(version, 2);
		assert_int_equal(decode_all(v1.data, v1.len, chunks[c], &version), 0);
		assert_int_equal(version, 1);
	}

	/* a bit flipped in the WRITE's data: refused at record 1 by the CRC */
	n = records(&v2, off, 8);
	v2.data[off[1] + STREAM_HDR_LEN + 48 + 4000] ^= 0x10;
	assert_int_equal(decode_all(v2.data, v2.len, 4096, &version), -FERR_CORRUPT);
	assert_non_null(strstr(ferry_errmsg(-FERR_CORRUPT), "record 1 (WRITE): trailer mismatch"));
	fbuf_release(&v1);
	fbuf_release(&v2);
}

/* ---- key sets --------------------------------------------------------------- */

static void keyof(uint8_t *k, uint32_t i, size_t len)
{
	uint64_t x = 0x2545F4914F6CDD1Dull * (i + 1);
	for (size_t j = 0; j < len; j++, x = x * 6364136223846793005ull + 1442695040888963407ull)
		k[j] = (uint8_t)(x >> 56);
	k[0] = 'B';
	put_le32(k + 1, i); /* distinct */
}

/* n keys of len bytes: added (1), added again (0, value kept), found with
 * their values, absent ones not found, counted; the same after the set
 * moves to its table (n beyond what memory holds, a long key, a delete). */
static void hset_round(struct store_pool *p, uint32_t n, size_t len, int batch)
{
	struct store_hset *h;
	uint8_t k[64];
	uint64_t c = 0;
	int v;

	assert_int_equal(store_hset_new(p, batch, &h), 0);
	keyof(k, 0, len);
	assert_int_equal(store_hset_get(h, k, len, &v), 0);
	assert_int_equal(store_hset_count(h, &c), 0);
	assert_int_equal(c, 0);
	for (uint32_t i = 0; i < n; i++) {
		keyof(k, i, len);
		assert_int_equal(store_hset_add(h, k, len, (int)(i % 1000)), 1);
		if (i % 7 == 0)
			assert_int_equal(store_hset_add(h, k, len, 5555), 0);
	}
	/* memory holds the first 49,152 keys that fit its slots, the table
	 * the rest */
	assert_int_equal(store_hset_memory_keys(h),
			 len > STORE_HSET_MEM_KEY_MAX ? 0 : n < 49152 ? n : 49152);
	for (uint32_t i = 0; i < n + 100; i++) {
		keyof(k, i, len);
		v = -1;
		if (i < n) {
			assert_int_equal(store_hset_get(h, k, len, &v), 1);
			assert_int_equal(v, (int)(i % 1000));
		} else {
			assert_int_equal(store_hset_get(h, k, len, &v), 0);
			assert_int_equal(v, -1);
		}
		k[len - 1] ^= 1; /* a neighbour differing in the last byte */
		if (len > 5)
			assert_int_equal(store_hset_get(h, k, len, NULL), 0);
	}
	assert_int_equal(store_hset_count(h, &c), 0);
	assert_int_equal(c, n);
	/* again, from whichever part holds them (past the bound: memory or
	 * table), every key is known, its value kept, and counted once */
	for (uint32_t i = 0; i < n; i += 97) {
		keyof(k, i, len);
		assert_int_equal(store_hset_add(h, k, len, 4444), 0);
	}
	keyof(k, n - 1, len);
	assert_int_equal(store_hset_add(h, k, len, 4444), 0);
	assert_int_equal(store_hset_get(h, k, len, &v), 1);
	assert_int_equal(v, (int)((n - 1) % 1000));
	assert_int_equal(store_hset_count(h, &c), 0);
	assert_int_equal(c, n);
	/* a mark: set once (1, the value before), then already set (2),
	 * kept in the value, for a key in memory; a key in the table: 3 with
	 * its value, not marked; none for an absent key (the keys checked
	 * below are left unmarked) */
	for (uint32_t i = 5; i < n + 100; i += 89) {
		if (i == n / 2 || i == n - 1)
			continue;
		keyof(k, i, len);
		v = -1;
		if (i >= n) {
			assert_int_equal(store_hset_mark(h, k, len, 1 << 30, &v), 0);
			assert_int_equal(store_hset_get(h, k, len, NULL), 0);
			continue;
		}
		if (i >= 49152 || len > STORE_HSET_MEM_KEY_MAX) {
			assert_int_equal(store_hset_mark(h, k, len, 1 << 30, &v), 3);
			assert_int_equal(v, (int)(i % 1000));
			assert_int_equal(store_hset_mark(h, k, len, 1 << 30, &v), 3);
			assert_int_equal(v, (int)(i % 1000));
			continue;
		}
		assert_int_equal(store_hset_mark(h, k, len, 1 << 30, &v), 1);
		assert_int_equal(v, (int)(i % 1000));
		assert_int_equal(store_hset_mark(h, k, len, 1 << 30, &v), 2);
		assert_int_equal(v, (int)(i % 1000) | 1 << 30);
		assert_int_equal(store_hset_mark(h, k, len, 1 << 29, NULL), 1);
		assert_int_equal(store_hset_get(h, k, len, &v), 1);
		assert_int_equal(v, (int)(i % 1000) | 3 << 29);
	}
	assert_int_equal(store_hset_count(h, &c), 0);
	assert_int_equal(c, n);
	/* a 64-byte key goes to the table; nothing is lost */
	memset(k, 0x77, 64);
	assert_int_equal(store_hset_add(h, k, 64, 9), 1);
	assert_int_equal(store_hset_get(h, k, 64, &v), 1);
	assert_int_equal(v, 9);
	assert_int_equal(store_hset_mark(h, k, 64, 1 << 30, &v), 3);
	assert_int_equal(v, 9);
	assert_int_equal(store_hset_get(h, k, 64, &v), 1);
	assert_int_equal(v, 9);
	keyof(k, n / 2, len);
	assert_int_equal(store_hset_get(h, k, len, &v), 1);
	assert_int_equal(v, (int)((n / 2) % 1000));
	assert_int_equal(store_hset_del(h, k, len), 1);
	assert_int_equal(store_hset_get(h, k, len, NULL), 0);
	assert_int_equal(store_hset_del(h, k, len), 0);
	assert_int_equal(store_hset_add(h, k, len, 3), 1);
	assert_int_equal(store_hset_count(h, &c), 0);
	assert_int_equal(c, (uint64_t)n + 1);
	assert_int_equal(store_hset_memory_keys(h), 0);
	/* the delete moved the whole set to its table: the first and last
	 * keys (memory and, past the bound, table before) are still there */
	for (uint32_t i = 0; i < n; i += n > 1 ? n - 1 : 1) {
		keyof(k, i, len);
		assert_int_equal(store_hset_get(h, k, len, &v), i != n / 2);
		if (i != n / 2)
			assert_int_equal(v, (int)(i % 1000));
	}
	store_hset_free(h);
}

static void test_hset(void **state)
{
	char dir[] = "/tmp/ferry-unit-keep.XXXXXX", path[600];
	struct store_propset props[] = {{"compression", "lz4"}};
	struct store_pool *p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/home", dir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", dir);
	assert_int_equal(store_pool_create("tank", path, props, 1), 0);
	assert_int_equal(store_pool_open("tank", 0, &p), 0);
	hset_round(p, 10, 33, 0);
	hset_round(p, 3000, 41, 1); /* recv's blocklist spans */
	/* past the in-memory bound: the set spills to its table midway */
	hset_round(p, 60000, 33, 1);
	hset_round(p, 50, 47, 0);
	/* the longest key memory holds, and one byte more (the table's) */
	hset_round(p, 200, STORE_HSET_MEM_KEY_MAX, 0);
	hset_round(p, 200, STORE_HSET_MEM_KEY_MAX + 1, 1);
	store_pool_close(p);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* ---- the strict gzip decoder ------------------------------------------------ */

/* strict(p) == uncompress(p): same verdict, same bytes. */
static void same_as_zlib(const uint8_t *z, size_t zn, size_t lsize, const char *why)
{
	uint8_t *a = malloc(lsize + 1), *b = malloc(lsize + 1);
	uLongf bl = lsize + 1;
	uLong sl = zn;
	int zr, rs;

	assert_non_null(a);
	assert_non_null(b);
	rs = codec_decode_strict((struct codec_spec){CODEC_GZIP, 6}, z, zn, a, lsize);
	zr = uncompress2(b, &bl, z, &sl);
	if ((rs == 0) != (zr == Z_OK && bl == lsize && sl == zn))
		fail_msg("%s: strict %d, zlib %d (%lu of %zu out, %lu of %zu in)", why, rs, zr,
			 (unsigned long)bl, lsize, (unsigned long)sl, zn);
	if (rs == 0)
		assert_memory_equal(a, b, lsize);
	free(a);
	free(b);
}

static void test_strict_gzip(void **state)
{
	size_t n = 100000;
	uint8_t *d = malloc(n), *z = malloc(compressBound(n) + 16);
	uLongf zn;

	(void)state;
	assert_non_null(d);
	assert_non_null(z);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)("ferry keeps blocks "[i % 19] + (i / 4096) % 3);
	for (int lv = 1; lv <= 9; lv++) {
		zn = compressBound(n);
		assert_int_equal(compress2(z, &zn, d, n, lv), Z_OK);
		same_as_zlib(z, zn, n, "zlib's own stream");
		same_as_zlib(z, zn, n - 1, "lsize one short");
		same_as_zlib(z, zn - 1, n, "Adler-32 cut");
		same_as_zlib(z, zn - 4, n, "no Adler-32");
		z[zn] = 0;
		same_as_zlib(z, zn + 1, n, "a stray byte");
		z[zn - 1] ^= 0x01;
		same_as_zlib(z, zn, n, "wrong Adler-32");
		z[zn - 1] ^= 0x01;
		z[1] ^= 0x01;
		same_as_zlib(z, zn, n, "header check");
		z[1] ^= 0x01;
		z[0] = (uint8_t)((z[0] & 0xf0) | 7); /* method 7 */
		z[1] = (uint8_t)(z[1] & 0xe0);
		z[1] = (uint8_t)(z[1] + (31 - ((z[0] << 8) | z[1]) % 31) % 31);
		same_as_zlib(z, zn, n, "compression method");
		z[0] = 0x88; /* window 2^16 */
		z[1] = (uint8_t)((31 - ((0x88 << 8) % 31)) % 31);
		same_as_zlib(z, zn, n, "window size");
		z[0] = 0x78;
		z[1] = 0x20; /* FDICT */
		z[1] = (uint8_t)(z[1] + (31 - ((0x78 << 8) | 0x20) % 31) % 31);
		same_as_zlib(z, zn, n, "preset dictionary");
		z[0] = 0x18; /* a 512-byte window, as zlib writes it for small inputs */
		z[1] = (uint8_t)((31 - ((0x18 << 8) % 31)) % 31);
		same_as_zlib(z, zn, n, "a smaller window, far distances");
		for (size_t k = 2; k < 200; k += 13) { /* damage in the deflate data */
			zn = compressBound(n);
			assert_int_equal(compress2(z, &zn, d, n, lv), Z_OK);
			z[k] ^= (uint8_t)(1u << (k % 8));
			same_as_zlib(z, zn, n, "a flipped bit");
		}
	}
	same_as_zlib(z, 1, n, "one byte");
	same_as_zlib(z, 0, n, "empty");
	free(d);
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_known),
		cmocka_unit_test(test_crc32c_fast_equals_table),
		cmocka_unit_test(test_crc32c_combine),
		cmocka_unit_test(test_v2_chain),
		cmocka_unit_test(test_hset),
		cmocka_unit_test(test_strict_gzip),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
