/* lib/hash_many.c — BLAKE2b-256 of many messages at once: eight of them
 * side by side in the lanes of AVX-512 registers, each lane taking the
 * next message as soon as its own is done. One BLAKE2b is a chain of
 * compressions that no SIMD can shorten (libsodium's runs at ~0.8 GB/s on
 * one core here); eight independent ones fill the vector unit (~2.5 GB/s).
 * Written from RFC 7693; the results are libsodium's, byte for byte
 * (tests/unit/test_hash.c compares them over every edge of a length). */
#include <stdint.h>
#include <string.h>

#include "lib.h"

/* Fewer messages than this go one by one: a vector step costs about as
 * much as 2.4 single compressions. */
#define MANY_MIN 4

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define LANES 8
#define BLOCK 128

static const uint64_t iv[8] = {
	0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
	0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t sigma[12][16] = {
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
	{14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
	{11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
	{7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
	{9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
	{2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
	{12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
	{13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
	{6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
	{10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
	{14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

/* the parameter block's first word: digest length 32, no key, fanout and
 * depth 1 (RFC 7693, 2.5) */
#define PARAM0 (0x01010000ULL | FERRY_HASH_LEN)

#define MANY_G(a, b, c, d, x, y)                                                       \
	do {                                                                           \
		a = _mm512_add_epi64(_mm512_add_epi64(a, b), x);                       \
		d = _mm512_ror_epi64(_mm512_xor_si512(d, a), 32);                      \
		c = _mm512_add_epi64(c, d);                                            \
		b = _mm512_ror_epi64(_mm512_xor_si512(b, c), 24);                      \
		a = _mm512_add_epi64(_mm512_add_epi64(a, b), y);                       \
		d = _mm512_ror_epi64(_mm512_xor_si512(d, a), 16);                      \
		c = _mm512_add_epi64(c, d);                                            \
		b = _mm512_ror_epi64(_mm512_xor_si512(b, c), 63);                      \
	} while (0)

/* One compression in every lane: h[w] holds word w of the eight states,
 * blk[l] lane l's 128-byte block, t[l] its byte count so far, f[l] all
 * ones for its last block. */
__attribute__((target("avx512f"))) static void
many_compress(uint64_t h[8][LANES], const uint8_t *const blk[LANES], const uint64_t t[LANES],
	      const uint64_t f[LANES])
{
	__m512i m[16], v[16];
	__m512i addr = _mm512_loadu_si512((const void *)blk);
	for (int w = 0; w < 16; w++)
		m[w] = _mm512_i64gather_epi64(_mm512_add_epi64(addr, _mm512_set1_epi64(8 * w)),
					      (const void *)0, 1);
	for (int i = 0; i < 8; i++) {
		v[i] = _mm512_loadu_si512((const void *)h[i]);
		v[i + 8] = _mm512_set1_epi64((long long)iv[i]);
	}
	v[12] = _mm512_xor_si512(v[12], _mm512_loadu_si512((const void *)t));
	v[14] = _mm512_xor_si512(v[14], _mm512_loadu_si512((const void *)f));
	/* unrolled, sigma's indices are constants and the message words stay
	 * in registers: 2-8 % more hashing per core here (session 29) */
#pragma GCC unroll 12
	for (int r = 0; r < 12; r++) {
		const uint8_t *s = sigma[r];
		MANY_G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
		MANY_G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
		MANY_G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
		MANY_G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
		MANY_G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
		MANY_G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
		MANY_G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
		MANY_G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
	}
	for (int i = 0; i < 8; i++)
		_mm512_storeu_si512((void *)h[i], _mm512_xor_si512(_mm512_loadu_si512((const void *)h[i]),
								   _mm512_xor_si512(v[i], v[i + 8])));
}

struct many_lane {
	const uint8_t *p;
	size_t n, off, idx;
	int busy;
};

/* Lane l takes message *next, if any is left. */
static void many_take(uint64_t h[8][LANES], struct many_lane *ln, int l, const void *const *p,
		      const size_t *n, size_t k, size_t *next)
{
	ln->busy = *next < k;
	if (!ln->busy)
		return;
	ln->idx = (*next)++;
	ln->p = p[ln->idx];
	ln->n = n[ln->idx];
	ln->off = 0;
	for (int w = 0; w < 8; w++)
		h[w][l] = iv[w];
	h[0][l] ^= PARAM0;
}

static void many_avx512(uint8_t (*out)[FERRY_HASH_LEN], const void *const *p, const size_t *n,
			size_t k)
{
	static const _Alignas(64) uint8_t zero[BLOCK];
	_Alignas(64) uint64_t h[8][LANES], t[LANES], f[LANES];
	_Alignas(64) uint8_t pad[LANES][BLOCK];
	const uint8_t *blk[LANES];
	struct many_lane ln[LANES];
	size_t next = 0;
	int busy = 0;
	for (int l = 0; l < LANES; l++) {
		many_take(h, &ln[l], l, p, n, k, &next);
		busy += ln[l].busy;
	}
	while (busy > 0) {
		for (int l = 0; l < LANES; l++) {
			struct many_lane *x = &ln[l];
			size_t rem = x->busy ? x->n - x->off : 0;
			t[l] = f[l] = 0;
			if (!x->busy) {
				blk[l] = zero;
			} else if (rem > BLOCK) {
				blk[l] = x->p + x->off;
				t[l] = x->off + BLOCK;
			} else {
				/* the last block, zero-padded (an empty message
				 * is one block of zeros) */
				if (rem == BLOCK) {
					blk[l] = x->p + x->off;
				} else {
					memset(pad[l], 0, BLOCK);
					if (rem)
						memcpy(pad[l], x->p + x->off, rem);
					blk[l] = pad[l];
				}
				t[l] = x->n;
				f[l] = ~(uint64_t)0;
			}
		}
		many_compress(h, blk, t, f);
		for (int l = 0; l < LANES; l++) {
			struct many_lane *x = &ln[l];
			if (!x->busy)
				continue;
			if (!f[l]) {
				x->off += BLOCK;
				continue;
			}
			for (int w = 0; w < FERRY_HASH_LEN / 8; w++)
				memcpy(out[x->idx] + 8 * w, &h[w][l], 8); /* little-endian words */
			many_take(h, x, l, p, n, k, &next);
			busy -= !x->busy;
		}
	}
}

/* (libgcc's CPU model, filled before main: a read, no race) */
static int many_have_avx512(void)
{
	return __builtin_cpu_supports("avx512f");
}
#else
static void many_avx512(uint8_t (*out)[FERRY_HASH_LEN], const void *const *p, const size_t *n,
			size_t k)
{
	(void)out, (void)p, (void)n, (void)k;
}
static int many_have_avx512(void)
{
	return 0;
}
#endif

void hash_blake2b_many(uint8_t (*out)[FERRY_HASH_LEN], const void *const *p, const size_t *n,
		       size_t k)
{
	if (k >= MANY_MIN && many_have_avx512()) {
		many_avx512(out, p, n, k);
		return;
	}
	for (size_t i = 0; i < k; i++)
		hash_blake2b(out[i], p[i], n[i]);
}
