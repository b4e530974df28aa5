/* tests/unit/test_scrub_crc.c — pack format 3 (docs/ferry-nodes.md): the
 * file header's CRC-32C and each record's CRC tail. Every single-bit flip
 * anywhere in a record (header, payload, the CRC itself) fails
 * pack_rec_crc_check or the parse before it; a record of a version-2 pack
 * has no tail; the header of every version round-trips and a flip of any
 * of its bits is refused; CRC-32C runs at several GB/s (SSE4.2 here). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "store/internal.h"

static void test_header(void **state)
{
	(void)state;
	for (int v = 1; v <= 3; v++) {
		uint8_t h[PACK_HDR_LEN];
		int got = 0;
		pack_hdr_put(h, v);
		assert_int_equal(pack_hdr_get(h, &got), 0);
		assert_int_equal(got, v);
		assert_int_equal(get_le32(h + 12), v >= 3 ? crc32c_update(0, h, 12) : 0);
		for (int bit = 0; bit < PACK_HDR_LEN * 8; bit++) {
			h[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			assert_int_equal(pack_hdr_get(h, &got), -FERR_CORRUPT);
			h[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	}
	ferry_err_clear();
}

/* A node record of len payload bytes, with its CRC tail, into buf. */
static size_t node_record(uint8_t *buf, size_t len)
{
	uint8_t hash[FERRY_HASH_LEN];
	for (size_t i = 0; i < len; i++)
		buf[PACK_NOD_HDR_LEN + i] = (uint8_t)(i * 31 + 7);
	node_hash(2, buf + PACK_NOD_HDR_LEN, len, hash);
	pack_nod_hdr_put(buf, 2, (uint32_t)len, hash);
	pack_tail_put(buf + PACK_NOD_HDR_LEN + len,
		      pack_rec_crc(buf, PACK_NOD_HDR_LEN, buf + PACK_NOD_HDR_LEN, len));
	return PACK_NOD_HDR_LEN + len + PACK_REC_TAIL;
}

static void test_every_flip_fails(void **state)
{
	(void)state;
	static uint8_t buf[PACK_NOD_HDR_LEN + 300 + PACK_REC_TAIL];
	size_t n = node_record(buf, 300);
	struct pack_rec x;
	assert_int_equal(pack_rec_parse(buf, n, 3, &x), 0);
	assert_int_equal(x.tail, PACK_REC_TAIL);
	assert_int_equal(pack_rec_len(&x), n);
	assert_int_equal(pack_rec_crc_check(buf, &x, buf + x.hdr_len), 0);
	assert_int_equal(pack_rec_verify(buf, &x, buf + x.hdr_len, NULL), 0);
	for (size_t bit = 0; bit < n * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		struct pack_rec y;
		int r = pack_rec_parse(buf, n, 3, &y);
		if (r == 0 && pack_rec_len(&y) <= n)
			r = pack_rec_crc_check(buf, &y, buf + y.hdr_len);
		else if (r == 0)
			r = -FERR_TRUNCATED; /* its length no longer fits: a walk fails it */
		assert_true(r < 0);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	ferry_err_clear();
	/* the same bytes in a version-2 pack: no tail, the hash decides */
	assert_int_equal(pack_rec_parse(buf, n, 2, &x), 0);
	assert_int_equal(x.tail, 0);
	assert_int_equal(pack_rec_crc_check(buf, &x, buf + x.hdr_len), 0);
}

static void test_speed(void **state)
{
	(void)state;
	size_t n = (size_t)4 << 20;
	uint8_t *b = malloc(n);
	assert_non_null(b);
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 13);
	struct timespec t0, t1;
	uint32_t c = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 64; i++)
		c = crc32c_update(c, b, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double gbs = (double)n * 64 / s / 1e9;
	print_message("crc32c: %.1f GB/s (%08x)\n", gbs, c);
	/* a loose floor, for a loaded machine: the table would do ~0.5 */
#ifndef __SANITIZE_ADDRESS__ /* make asan's instrumented build is no measure */
	if (__builtin_cpu_supports("sse4.2"))
		assert_true(gbs > 1.5);
#endif
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_every_flip_fails),
		cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
