/* tests/unit/test_block.c — store_block_rule, the one storage rule: every
 * input (logical, encoded as the target, encoded otherwise), every zero
 * policy and codec, against the bytes the codecs themselves produce (what
 * capture, recv and send stored and sent before the rule was one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"

#define N 131072
static uint8_t text[N], rnd[N], zeros[N], dec[N], enc[2 * N], enc2[2 * N], tmp[2 * N];
static const struct codec_spec OFF = {CODEC_OFF, 0}, LZ4 = {CODEC_LZ4, 0}, GZ7 = {CODEC_GZIP, 7},
				GZ1 = {CODEC_GZIP, 1}, ZLE = {CODEC_ZLE, 0};

static int setup(void **state)
{
	/* words and runs of zeros: every codec, zle too, compresses it */
	for (size_t i = 0; i < N; i++)
		text[i] = i % 64 < 20 ? (uint8_t)"the quick brown fox "[i % 64] : 0;
	ferry_random(rnd, sizeof rnd);
	return 0;
}

static int rule(const void *content, struct codec_spec target, enum store_block_zero zmode,
		struct store_block *out)
{
	struct store_block_in in = {.codec = OFF, .payload = content, .psize = N, .lsize = N};
	struct store_block_bufs b = {NULL, 0, enc, sizeof enc};
	return store_block_rule(&in, target, zmode, &b, out);
}

/* What codec_encode makes of src with an output of cap bytes. */
static size_t encoded(struct codec_spec c, const void *src, size_t cap)
{
	size_t ps = 0;
	assert_int_equal(codec_encode(c, src, N, tmp, cap, &ps), 0);
	return ps;
}

static void test_logical(void **state)
{
	const struct codec_spec codecs[] = {LZ4, GZ7, GZ1, ZLE};
	struct store_block b;
	uint8_t h[FERRY_HASH_LEN];
	for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
		struct codec_spec c = codecs[k];
		/* compressible: encoded with C, its bytes the codec's own */
		for (int zm = STORE_ZERO_HOLE; zm <= STORE_ZERO_ENCODE; zm++) {
			assert_int_equal(rule(text, c, zm, &b), 0);
			assert_int_equal(b.form, BLOCK_COMPRESSED);
			assert_int_equal(b.how, STORE_BLOCK_ENCODE);
			assert_true(codec_equal(b.codec, c));
			size_t ps = encoded(c, text, N - N / 8);
			assert_int_equal(b.psize, ps);
			assert_memory_equal(b.payload, tmp, ps);
			hash_blake2b(h, text, N);
			assert_memory_equal(b.hash, h, FERRY_HASH_LEN);
			/* incompressible: raw, the content itself */
			assert_int_equal(rule(rnd, c, zm, &b), 0);
			assert_int_equal(b.form, BLOCK_RAW);
			assert_int_equal(b.codec.id, CODEC_OFF);
			assert_ptr_equal(b.payload, rnd);
			assert_int_equal(b.psize, N);
		}
		/* all zero: a hole for capture and ZFS's rule ... */
		assert_int_equal(rule(zeros, c, STORE_ZERO_HOLE, &b), 0);
		assert_int_equal(b.form, BLOCK_HOLE);
		assert_int_equal(b.how, STORE_BLOCK_HOLE);
		assert_int_equal(b.psize, 0);
		assert_null(b.payload);
		assert_int_equal(rule(zeros, c, STORE_ZERO_CODEC, &b), 0);
		assert_int_equal(b.form, BLOCK_HOLE);
		/* ... encoded with C whatever it saves for recv and send, with
		 * the whole encoder bound as room */
		assert_int_equal(rule(zeros, c, STORE_ZERO_ENCODE, &b), 0);
		assert_int_equal(b.form, BLOCK_COMPRESSED);
		assert_int_equal(b.how, STORE_BLOCK_ENCODE);
		size_t ps = encoded(c, zeros, sizeof tmp);
		assert_int_equal(b.psize, ps);
		assert_memory_equal(b.payload, tmp, ps);
	}
	/* compression off: raw, but a capture's zero record is a hole */
	assert_int_equal(rule(text, OFF, STORE_ZERO_HOLE, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_ptr_equal(b.payload, text);
	assert_int_equal(rule(zeros, OFF, STORE_ZERO_HOLE, &b), 0);
	assert_int_equal(b.form, BLOCK_HOLE);
	assert_true(codec_equal(b.codec, OFF));
	assert_int_equal(rule(zeros, OFF, STORE_ZERO_CODEC, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_int_equal(rule(zeros, OFF, STORE_ZERO_ENCODE, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_ptr_equal(b.payload, zeros);
}

/* A zero block that encodes bigger than itself (no room to give) is raw. */
static void test_zero_no_room(void **state)
{
	struct store_block b;
	struct store_block_in in = {.codec = OFF, .payload = zeros, .psize = N, .lsize = N};
	struct store_block_bufs small = {NULL, 0, enc, 16};
	assert_int_equal(store_block_rule(&in, GZ7, STORE_ZERO_ENCODE, &small, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_ptr_equal(b.payload, zeros);
	struct store_block_bufs keep = {NULL, 0, enc, N - N / 8};
	assert_int_equal(store_block_rule(&in, GZ7, STORE_ZERO_ENCODE, &keep, &b), 0);
	assert_int_equal(b.form, BLOCK_COMPRESSED); /* gzip of zeros is tiny */
}

static void test_hashes(void **state)
{
	struct store_block b;
	uint8_t h[FERRY_HASH_LEN], bad[FERRY_HASH_LEN];
	hash_blake2b(h, text, N);
	memcpy(bad, h, sizeof bad);
	bad[3] ^= 1;
	struct store_block_bufs bufs = {dec, sizeof dec, enc, sizeof enc};
	/* a given hash is checked, unless the caller says it checked it */
	struct store_block_in in = {.codec = OFF, .payload = text, .psize = N, .lsize = N, .hash = bad};
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(-FERR_CORRUPT), "block content does not match its hash");
	in.checked = 1;
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_memory_equal(b.hash, bad, FERRY_HASH_LEN);
	in.hash = h;
	in.checked = 0;
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), 0);
	/* sizes */
	in.psize = N - 1;
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), -FERR_CORRUPT);
	in.psize = in.lsize = 0;
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), -FERR_INVAL);
	ferry_err_clear();
}

/* An encoded payload: kept as it came when it is C, decoded and encoded
 * again otherwise; checked against its hash either way, unless its
 * content comes with it. */
static void test_encoded(void **state)
{
	struct store_block b;
	uint8_t h[FERRY_HASH_LEN], hz[FERRY_HASH_LEN];
	size_t gps = 0, zps = 0;
	hash_blake2b(h, text, N);
	hash_blake2b(hz, zeros, N);
	assert_int_equal(codec_encode(GZ7, text, N, enc2, sizeof enc2, &gps), 0);
	uint8_t *gzip_text = malloc(gps);
	assert_non_null(gzip_text);
	memcpy(gzip_text, enc2, gps);
	assert_int_equal(codec_encode(GZ1, zeros, N, enc2, sizeof enc2, &zps), 0);
	struct store_block_bufs bufs = {dec, sizeof dec, enc, sizeof enc};
	struct store_block_in in = {.codec = GZ7, .payload = gzip_text, .psize = gps, .lsize = N,
				    .hash = h};
	assert_int_equal(store_block_rule(&in, GZ7, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.how, STORE_BLOCK_KEEP);
	assert_ptr_equal(b.payload, gzip_text);
	assert_int_equal(b.psize, gps);
	assert_true(codec_equal(b.codec, GZ7));
	/* to lz4: recompressed, the bytes lz4's own */
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.how, STORE_BLOCK_RECODE);
	size_t ps = encoded(LZ4, text, N - N / 8);
	assert_int_equal(b.psize, ps);
	assert_memory_equal(b.payload, tmp, ps);
	/* to off: raw, the decoded content */
	assert_int_equal(store_block_rule(&in, OFF, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_memory_equal(b.payload, text, N);
	/* a wrong hash, a damaged payload */
	uint8_t bad[FERRY_HASH_LEN];
	memcpy(bad, h, sizeof bad);
	bad[0] ^= 1;
	in.hash = bad;
	assert_int_equal(store_block_rule(&in, GZ7, STORE_ZERO_ENCODE, &bufs, &b), -FERR_CORRUPT);
	in.hash = h;
	in.psize = gps - 1;
	assert_int_equal(store_block_rule(&in, GZ7, STORE_ZERO_ENCODE, &bufs, &b), -FERR_CORRUPT);
	in.psize = gps;
	/* the content given (send, after its own check): not decoded again */
	in.content = text;
	struct store_block_bufs nodec = {NULL, 0, enc, sizeof enc};
	assert_int_equal(store_block_rule(&in, LZ4, STORE_ZERO_ENCODE, &nodec, &b), 0);
	assert_int_equal(b.psize, ps);
	/* a zero block encoded otherwise: encoded again with C, not a hole */
	struct store_block_in z = {.codec = GZ1, .payload = enc2, .psize = zps, .lsize = N,
				   .hash = hz};
	assert_int_equal(store_block_rule(&z, ZLE, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.how, STORE_BLOCK_RECODE);
	assert_int_equal(b.form, BLOCK_COMPRESSED);
	ps = encoded(ZLE, zeros, sizeof tmp);
	assert_int_equal(b.psize, ps);
	assert_memory_equal(b.payload, tmp, ps);
	/* an unknown codec */
	z.codec = (struct codec_spec){CODEC_GZIP, 12};
	assert_int_equal(store_block_rule(&z, ZLE, STORE_ZERO_ENCODE, &bufs, &b), -FERR_UNSUPPORTED);
	free(gzip_text);
	ferry_err_clear();
}

/* store_block_precheck, then the rule, gives what the rule alone gives,
 * block for block: the same stored bytes, hash and verdict for logical
 * content with and without a hash, encoded payloads kept and recompressed,
 * and the same errors (same message) for a wrong hash, a payload that does
 * not decode, and a size out of range; the hashes it computes are right. */
#define PK 12
static void test_precheck(void **state)
{
	(void)state;
	static uint8_t src[PK][N], pay[PK][2 * N], d1[PK][2 * N], e1[PK][2 * N], d2[PK][2 * N],
		e2[PK][2 * N];
	uint8_t h[PK][FERRY_HASH_LEN], hashes[PK][FERRY_HASH_LEN];
	struct store_block_in in[PK], in2[PK];
	struct store_block_bufs b1[PK], b2[PK];
	size_t len[PK];
	for (int i = 0; i < PK; i++) {
		len[i] = (size_t)(i % 3 == 0 ? N : 1000 + 977 * i);
		for (size_t j = 0; j < len[i]; j++)
			src[i][j] = i % 4 == 2 ? rnd[(j * 7 + (size_t)i) % N] : text[(j + (size_t)i) % N];
		hash_blake2b(h[i], src[i], len[i]);
		b1[i] = (struct store_block_bufs){d1[i], sizeof d1[i], e1[i], sizeof e1[i]};
		b2[i] = (struct store_block_bufs){d2[i], sizeof d2[i], e2[i], sizeof e2[i]};
		size_t ps = len[i];
		struct codec_spec c = OFF;
		if (i % 2 == 1) { /* encoded: lz4 (kept into lz4) or gzip-1 (recompressed) */
			c = i % 4 == 1 ? LZ4 : GZ1;
			assert_int_equal(codec_encode(c, src[i], len[i], pay[i], sizeof pay[i], &ps), 0);
		} else {
			memcpy(pay[i], src[i], len[i]);
		}
		in[i] = (struct store_block_in){.codec = c, .payload = pay[i], .psize = ps,
						.lsize = len[i], .hash = i % 4 == 0 ? NULL : h[i]};
	}
	/* the bad ones: a wrong hash (logical, encoded), a payload that does
	 * not decode, a size out of range */
	uint8_t wrong[FERRY_HASH_LEN];
	memcpy(wrong, h[2], sizeof wrong);
	wrong[5] ^= 1;
	in[2].hash = wrong;
	in[5].hash = wrong;
	pay[7][0] ^= 0xff;
	pay[7][1] ^= 0xff;
	in[10].lsize = 0;
	memcpy(in2, in, sizeof in);
	store_block_precheck(in2, b2, PK, hashes);
	for (int i = 0; i < PK; i++) {
		struct store_block o1, o2;
		struct codec_spec target = i % 2 ? LZ4 : GZ7;
		int r1 = store_block_rule(&in[i], target, STORE_ZERO_ENCODE, &b1[i], &o1);
		char m1[256];
		snprintf(m1, sizeof m1, "%s", r1 < 0 ? ferry_errmsg(r1) : "");
		int r2 = store_block_rule(&in2[i], target, STORE_ZERO_ENCODE, &b2[i], &o2);
		assert_int_equal(r1, r2);
		if (r1 < 0) {
			assert_string_equal(m1, ferry_errmsg(r2));
			continue;
		}
		assert_memory_equal(o1.hash, h[i], FERRY_HASH_LEN);
		assert_memory_equal(o2.hash, h[i], FERRY_HASH_LEN);
		assert_int_equal(o1.how, o2.how);
		assert_int_equal(o1.form, o2.form);
		assert_true(codec_equal(o1.codec, o2.codec));
		assert_int_equal(o1.psize, o2.psize);
		assert_memory_equal(o1.payload, o2.payload, o1.psize);
		if (i % 4 == 1)
			assert_int_equal(o2.how, STORE_BLOCK_KEEP);
		if (i % 4 == 3)
			assert_int_equal(o2.how, STORE_BLOCK_RECODE);
	}
	/* which failed: exactly the four bad ones */
	int failed = 0;
	for (int i = 0; i < PK; i++) {
		struct store_block o;
		struct codec_spec target = i % 2 ? LZ4 : GZ7;
		failed += store_block_rule(&in2[i], target, STORE_ZERO_ENCODE, &b2[i], &o) < 0;
	}
	assert_int_equal(failed, 4);
}

/* store_block_verify_many gives store_block_verify's verdict for every
 * block, past STORE_PRECHECK_MAX of them at once (the blocks go in runs):
 * raw, lz4, gzip and zle blocks of many sizes pass; a wrong hash, a
 * payload that does not decode, a raw block of the wrong size, a size out
 * of range and a scratch too small do not, and no verdict is given
 * without a check. */
#define VK (STORE_PRECHECK_MAX + 9)
static void test_verify_many(void **state)
{
	(void)state;
	static uint8_t src[VK][N], pay[VK][2 * N], scr[VK][N];
	uint8_t h[VK][FERRY_HASH_LEN];
	struct store_block_check v[VK];
	const struct codec_spec cs[] = {OFF, LZ4, GZ7, ZLE, GZ1};
	for (int i = 0; i < VK; i++) {
		size_t len = (size_t)(i % 5 == 0 ? N : 1 + 3001 * i);
		for (size_t j = 0; j < len; j++)
			src[i][j] = i % 6 == 4 ? rnd[(j * 5 + (size_t)i) % N] : text[(j + (size_t)i) % N];
		hash_blake2b(h[i], src[i], len);
		struct codec_spec c = cs[i % 5];
		size_t ps = len;
		if (c.id == CODEC_OFF || codec_encode(c, src[i], len, pay[i], len, &ps) < 0) {
			c = OFF; /* did not shrink: stored raw */
			ps = len;
			memcpy(pay[i], src[i], len);
		}
		v[i] = (struct store_block_check){.c = c, .payload = pay[i], .psize = ps,
						  .lsize = len, .hash = h[i], .scratch = scr[i],
						  .scratch_cap = sizeof scr[i], .ok = -1};
	}
	uint8_t wrong[FERRY_HASH_LEN];
	memcpy(wrong, h[3], sizeof wrong);
	wrong[9] ^= 4;
	v[3].hash = wrong;                  /* a wrong hash */
	v[STORE_PRECHECK_MAX + 1].hash = wrong;
	assert_true(v[6].c.id == CODEC_LZ4);
	memset(pay[6], 0xff, 16);           /* does not decode */
	assert_true(v[10].c.id == CODEC_OFF);
	v[10].psize--;                      /* a raw block one byte short */
	v[15].lsize = 0;                    /* sizes out of range */
	v[20].lsize = STORE_BLOCK_MAX + 1;
	assert_true(v[12].c.id == CODEC_GZIP);
	v[12].scratch_cap = v[12].lsize - 1; /* no room to decode */
	store_block_verify_many(v, VK);
	int bad = 0;
	for (int i = 0; i < VK; i++) {
		int r = store_block_verify(v[i].c, v[i].payload, v[i].psize, v[i].lsize, v[i].hash,
					   v[i].scratch, v[i].scratch_cap);
		assert_int_equal(v[i].ok, r == 0);
		bad += r < 0;
	}
	assert_int_equal(bad, 7);
	ferry_err_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_logical),
		cmocka_unit_test(test_zero_no_room),
		cmocka_unit_test(test_hashes),
		cmocka_unit_test(test_encoded),
		cmocka_unit_test(test_precheck),
		cmocka_unit_test(test_verify_many),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, NULL);
}
