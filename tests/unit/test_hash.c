/* tests/unit/test_hash.c — hash_blake2b_many (lib/hash_many.c) against
 * libsodium's BLAKE2b-256 called directly: every length around a block's
 * edges, messages of one length and of mixed lengths, counts below and
 * above the vector path's threshold and its eight lanes, unaligned
 * messages, each in an allocation of its own exact size (so that a read
 * past one is a read past its allocation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "lib/lib.h"

/* k messages of lengths len[i], contents from a seed, at an offset of
 * 0-7 bytes into their allocations; hash_blake2b_many against
 * crypto_generichash for each */
static void check(const size_t *len, size_t k, unsigned seed)
{
	uint8_t **buf = calloc(k, sizeof *buf);
	const void **p = calloc(k, sizeof *p);
	uint8_t(*got)[FERRY_HASH_LEN] = calloc(k, sizeof *got);
	uint8_t want[FERRY_HASH_LEN];
	assert_non_null(buf);
	assert_non_null(p);
	assert_non_null(got);
	for (size_t i = 0; i < k; i++) {
		size_t skew = (seed + i) % 8;
		assert_non_null(buf[i] = malloc(len[i] + skew + 1));
		uint8_t *m = buf[i] + skew;
		for (size_t j = 0; j < len[i]; j++)
			m[j] = (uint8_t)((j * 131 + i * 7 + seed) ^ (j >> 9));
		p[i] = m;
	}
	hash_blake2b_many(got, p, len, k);
	for (size_t i = 0; i < k; i++) {
		assert_int_equal(crypto_generichash(want, FERRY_HASH_LEN, p[i], len[i], NULL, 0), 0);
		if (memcmp(want, got[i], FERRY_HASH_LEN) != 0)
			fail_msg("message %zu of %zu (%zu bytes): wrong hash", i, k, len[i]);
		free(buf[i]);
	}
	free(buf);
	free(p);
	free(got);
}

/* every length from 0 to 3 blocks and a few past, 8 and 13 at a time */
static void test_edges(void **state)
{
	(void)state;
	size_t len[13];
	for (size_t n = 0; n <= 3 * 128 + 3; n++) {
		for (size_t i = 0; i < 13; i++)
			len[i] = n;
		check(len, 8, (unsigned)n);
		for (size_t i = 0; i < 13; i++)
			len[i] = (n + 17 * i) % 400;
		check(len, 13, (unsigned)n + 1);
	}
}

/* every count from 0 to 40 (one by one below the threshold, lanes idle
 * or refilled above it), lengths mixed from empty to past 128 KiB */
static void test_counts(void **state)
{
	(void)state;
	static const size_t sizes[] = {0,      1,      127,    128,      129,    1000,   4096,
				       65535,  131071, 131072, 131073,   300000, 5,      256};
	size_t len[40] = {0};
	for (size_t k = 0; k <= 40; k++) {
		for (size_t i = 0; i < k; i++)
			len[i] = sizes[(i * 5 + k) % (sizeof sizes / sizeof *sizes)];
		check(len, k, (unsigned)k);
	}
}

/* one long message among short ones, and the reverse: lanes refilled
 * many times while one works on */
static void test_uneven(void **state)
{
	(void)state;
	size_t len[30];
	for (size_t i = 0; i < 30; i++)
		len[i] = i == 3 ? (size_t)1 << 20 : 1 + i * 37;
	check(len, 30, 9);
	for (size_t i = 0; i < 30; i++)
		len[i] = i == 3 ? 3 : (size_t)100000 + i;
	check(len, 30, 10);
}

/* hash_blake2b_many of one message is hash_blake2b */
static void test_same_as_one(void **state)
{
	(void)state;
	uint8_t a[FERRY_HASH_LEN], b[5][FERRY_HASH_LEN];
	const void *p[5] = {"abc", "abc", "abc", "abc", "abc"};
	size_t n[5] = {3, 3, 3, 3, 3};
	hash_blake2b(a, "abc", 3);
	hash_blake2b_many(b, p, n, 5);
	for (int i = 0; i < 5; i++)
		assert_memory_equal(a, b[i], FERRY_HASH_LEN);
}

int main(void)
{
	if (ferry_lib_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_uneven),
		cmocka_unit_test(test_same_as_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
