/* lib/crc32c.c — CRC-32C (Castagnoli), the stream's non-cryptographic
 * check of bytes whose content a BLAKE2b hash already names (version 2 of
 * docs/ferry-stream.5). The x86-64 crc32 instruction does 8 bytes a step,
 * on three pieces of a long run at once (its latency is three steps), the
 * three registers then joined by tables of the register's shift over a
 * piece of zeros; elsewhere, or on a CPU without SSE4.2, a table does one
 * byte a step. Both give the same value (tests/unit/test_keep.c compares
 * them). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "lib.h"

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */

static uint32_t table[256];
static int table_ready;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		table[i] = c;
	}
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* The raw register update: no pre- or post-inversion. */
static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n)
{
	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		table_init(); /* idempotent: racing threads write the same table */
	while (n--)
		c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The two piece lengths of the three-way runs: long ones while three
 * remain, then short ones; the rest one word at a time. */
#define CRC_LONG 8192
#define CRC_SHORT 256

/* One word at a time: the register after p[0..n), no inversion. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw1(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;

	while (n && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8); /* little-endian: the byte order crc32 wants */
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
	return (uint32_t)c64;
}

/* The register is linear over GF(2): run from c over a piece B it ends at
 * shift(c, |B|) ^ run(0, B), where shift(c, L) is c run over L zero bytes,
 * a 32 x 32 bit matrix kept as four tables of a byte each. */
static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_fill(uint32_t t[4][256], size_t len)
{
	static const uint8_t zeros[CRC_LONG];
	uint32_t col[32];

	for (int i = 0; i < 32; i++)
		col[i] = crc_hw1(1u << i, zeros, len);
	for (int k = 0; k < 4; k++)
		for (unsigned b = 0; b < 256; b++) {
			uint32_t v = 0;
			for (int bit = 0; bit < 8; bit++)
				if (b >> bit & 1)
					v ^= col[8 * k + bit];
			t[k][b] = v;
		}
}

static void shift_init(void)
{
	shift_fill(shift_long, CRC_LONG);
	shift_fill(shift_short, CRC_SHORT);
}

static uint32_t shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xFF] ^ t[1][c >> 8 & 0xFF] ^ t[2][c >> 16 & 0xFF] ^ t[3][c >> 24];
}

/* Three runs of len bytes (a multiple of 8) at p, p + len and p + 2 len,
 * interleaved, joined into the register over all 3 len bytes; t is
 * shift(., len). */
__attribute__((target("sse4.2"))) static uint32_t crc_hw3(uint32_t c, const uint8_t *p,
							   size_t len, const uint32_t t[4][256])
{
	uint64_t c0 = c, c1 = 0, c2 = 0;
	const uint8_t *end = p + len;

	for (; p < end; p += 8) {
		uint64_t w0, w1, w2;
		memcpy(&w0, p, 8);
		memcpy(&w1, p + len, 8);
		memcpy(&w2, p + 2 * len, 8);
		c0 = __builtin_ia32_crc32di(c0, w0);
		c1 = __builtin_ia32_crc32di(c1, w1);
		c2 = __builtin_ia32_crc32di(c2, w2);
	}
	return shift(t, shift(t, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	if (n >= 3 * CRC_SHORT + 7) {
		size_t a = (8 - ((uintptr_t)p & 7)) & 7;
		c = crc_hw1(c, p, a);
		p += a;
		n -= a;
		(void)pthread_once(&shift_once, shift_init);
		for (; n >= 3 * CRC_LONG; p += 3 * CRC_LONG, n -= 3 * CRC_LONG)
			c = crc_hw3(c, p, CRC_LONG, shift_long);
		for (; n >= 3 * CRC_SHORT; p += 3 * CRC_SHORT, n -= 3 * CRC_SHORT)
			c = crc_hw3(c, p, CRC_SHORT, shift_short);
	}
	return crc_hw1(c, p, n);
}

static int have_hw(void)
{
	static int v = -1;
	int h = __atomic_load_n(&v, __ATOMIC_RELAXED);

	if (h < 0) {
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&v, h, __ATOMIC_RELAXED);
	}
	return h;
}
#endif

uint32_t crc32c_update(uint32_t crc, const void *p, size_t n)
{
	uint32_t c = ~crc;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (have_hw())
		return ~crc_hw(c, p, n);
#endif
	return ~crc_soft(c, p, n);
}

uint32_t crc32c_update_portable(uint32_t crc, const void *p, size_t n)
{
	return ~crc_soft(~crc, p, n);
}

/* Polynomials over GF(2) modulo the CRC's, in the register's reflected
 * order (bit 31 is x^0). a * b mod P: b times each power of x a holds,
 * b advancing by one power of x a bit. */
static uint32_t mul_mod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;

	for (uint32_t m = 1u << 31; m && a; m >>= 1) {
		if (a & m) {
			prod ^= b;
			a &= ~m;
		}
		b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1)));
	}
	return prod;
}

/* x^(2^k) mod P for k = 0..63, each the square of the one before */
static uint32_t pow2k[64];
static pthread_once_t pow2k_once = PTHREAD_ONCE_INIT;

static void pow2k_init(void)
{
	uint32_t p = 1u << 30; /* x^1 */

	for (int k = 0; k < 64; k++) {
		pow2k[k] = p;
		p = mul_mod(p, p);
	}
}

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	/* the register after A, carried over len_b zero bytes, is A's times
	 * x^(8 len_b); B's is then added (the conditioning of the two
	 * cancels: both start from all ones) */
	uint32_t x = 1u << 31; /* x^0 */

	(void)pthread_once(&pow2k_once, pow2k_init);
	for (int k = 3; len_b && k < 64; k++, len_b >>= 1)
		if (len_b & 1)
			x = mul_mod(pow2k[k], x);
	return mul_mod(x, crc_a) ^ crc_b;
}
