/* tests/unit/test_codec.c — block codecs and the ZFS storage rule. Buffers
 * are allocated at their exact sizes so ASan sees any overrun. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <cmocka.h>

#include "store/codec.h"

/* ---- data ---------------------------------------------------------------- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s * 0x9E3779B97F4A7C15ull + 1;
}

static uint32_t rng(void)
{
	/* xorshift64*: deterministic across platforms */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

enum kind { K_RANDOM, K_TEXT, K_ZERO, K_INCOMPRESSIBLE, K_SPARSE, K__COUNT };
static const char *const kind_name[] = {
	"random", "text", "zero", "incompressible", "sparse",
};

/* random: bytes from a small alphabet in short runs (compressible, not
 * text); text: words and lines; sparse: nonzero islands in zeros, the
 * data zle is for. */
static void fill(enum kind k, uint8_t *p, size_t n, uint64_t seed)
{
	static const char *const words[] = {
		"the", "pool", "dataset", "snapshot", "send", "receive", "block",
		"of", "and", "compression", "a", "is", "to", "in", "ferry", "zfs",
	};
	size_t i = 0;

	rng_seed(seed);
	switch (k) {
	case K_RANDOM:
		while (i < n) {
			uint8_t b = (uint8_t)(rng() % 12 + 1);
			size_t run = rng() % 6 + 1;
			for (; run && i < n; run--)
				p[i++] = b;
		}
		break;
	case K_TEXT:
		while (i < n) {
			const char *w = words[rng() % 16];
			for (; *w && i < n; w++)
				p[i++] = (uint8_t)*w;
			if (i < n)
				p[i++] = rng() % 11 == 0 ? '\n' : ' ';
		}
		break;
	case K_ZERO:
		memset(p, 0, n);
		break;
	case K_INCOMPRESSIBLE:
		for (; i < n; i++)
			p[i] = (uint8_t)rng();
		break;
	case K_SPARSE:
		memset(p, 0, n);
		while (i < n) {
			i += rng() % 300;
			for (size_t run = rng() % 40; run && i < n; run--)
				p[i++] = (uint8_t)(rng() | 1);
		}
		break;
	default:
		break;
	}
}

static uint8_t *make(enum kind k, size_t n, uint64_t seed)
{
	uint8_t *p = malloc(n ? n : 1);
	assert_non_null(p);
	fill(k, p, n, seed);
	return p;
}

/* the obvious way, to check codec_is_zero against */
static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static const size_t sizes[] = {
	1, 2, 7, 512, 4096, 128 * 1024 - 1, 128 * 1024, 1024 * 1024,
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static const char *const all_codecs[] = {
	"off", "lz4", "gzip-1", "gzip-2", "gzip-3", "gzip-4", "gzip-5",
	"gzip-6", "gzip-7", "gzip-8", "gzip-9", "zle",
};
#define NCODECS (sizeof all_codecs / sizeof all_codecs[0])

static struct codec_spec spec(const char *name)
{
	struct codec_spec c;
	assert_int_equal(codec_parse(name, &c), 0);
	return c;
}

/* Encodes with codec_bound room; returns an exact-size copy of the output. */
static uint8_t *encode(struct codec_spec c, const uint8_t *src, size_t n,
		       size_t *psize)
{
	size_t bound = codec_bound(n), p = 0;
	uint8_t *buf = malloc(bound), *out;

	assert_non_null(buf);
	assert_true(bound >= n);
	assert_int_equal(codec_encode(c, src, n, buf, bound, &p), 0);
	assert_true(p <= bound);
	out = malloc(p ? p : 1);
	assert_non_null(out);
	memcpy(out, buf, p);
	free(buf);
	*psize = p;
	return out;
}

/* Decodes into an exact lsize buffer; returns the result code. */
static int decode_into(struct codec_spec c, const uint8_t *z, size_t psize,
		       size_t lsize, const uint8_t *expect)
{
	uint8_t *out = malloc(lsize ? lsize : 1);
	int r;

	assert_non_null(out);
	r = codec_decode(c, z, psize, out, lsize);
	if (r == 0 && expect)
		assert_memory_equal(out, expect, lsize);
	free(out);
	return r;
}

/* ---- parse, names ------------------------------------------------------- */

static void test_parse_table(void **state)
{
	static const struct { const char *in; int id, level; const char *name; } good[] = {
		{ "off", CODEC_OFF, 0, "off" },     { "on", CODEC_LZ4, 0, "lz4" },
		{ "lz4", CODEC_LZ4, 0, "lz4" },     { "gzip", CODEC_GZIP, 6, "gzip-6" },
		{ "gzip-1", CODEC_GZIP, 1, "gzip-1" }, { "gzip-2", CODEC_GZIP, 2, "gzip-2" },
		{ "gzip-3", CODEC_GZIP, 3, "gzip-3" }, { "gzip-4", CODEC_GZIP, 4, "gzip-4" },
		{ "gzip-5", CODEC_GZIP, 5, "gzip-5" }, { "gzip-6", CODEC_GZIP, 6, "gzip-6" },
		{ "gzip-7", CODEC_GZIP, 7, "gzip-7" }, { "gzip-8", CODEC_GZIP, 8, "gzip-8" },
		{ "gzip-9", CODEC_GZIP, 9, "gzip-9" }, { "zle", CODEC_ZLE, 0, "zle" },
	};
	static const char *const bad[] = {
		"gzip-0", "gzip-10", "GZIP", "", "lz4 ", " lz4", "gzip-", "gzip-1x",
		"gzip6", "gzip_6", "Off", "ON", "zle\n", "gzip-01", "gzip--1",
		"lz", "lz44", "zstd", "gzip-a", "gzip-9 ", "gzip- 9", "none", "1",
		"\xff", "off\t",
	};
	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		struct codec_spec c = { 99, 99 };
		assert_int_equal(codec_parse(good[i].in, &c), 0);
		assert_int_equal(c.id, good[i].id);
		assert_int_equal(c.level, good[i].level);
		assert_true(codec_valid(c));
		assert_string_equal(codec_name(c), good[i].name);
		/* the canonical name parses back to the same codec */
		struct codec_spec d;
		assert_int_equal(codec_parse(codec_name(c), &d), 0);
		assert_true(codec_equal(c, d));
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct codec_spec c = { 77, 88 };
		int r = codec_parse(bad[i], &c);
		assert_int_equal(r, -FERR_PROP);
		assert_int_equal(c.id, 77); /* untouched on failure */
		assert_int_equal(c.level, 88);
		const char *msg = ferry_errmsg(r);
		assert_non_null(strstr(msg, "gzip-1"));
		assert_non_null(strstr(msg, "zle"));
		assert_non_null(strstr(msg, "lz4"));
	}
	struct codec_spec c = { 77, 88 };
	assert_int_equal(codec_parse(NULL, &c), -FERR_PROP);
	/* long hostile values are quoted cut short, never overflowing */
	char longv[4096];
	memset(longv, 'x', sizeof longv - 1);
	longv[sizeof longv - 1] = '\0';
	assert_int_equal(codec_parse(longv, &c), -FERR_PROP);
}

static void test_valid_equal_name(void **state)
{
	static const struct codec_spec bad[] = {
		{ CODEC_OFF, 1 }, { CODEC_LZ4, 6 }, { CODEC_ZLE, 1 }, { CODEC_GZIP, 0 },
		{ CODEC_GZIP, 10 }, { CODEC_GZIP, 255 }, { 4, 0 }, { 255, 0 },
	};
	uint8_t src[16] = { 1, 2, 3 }, dst[256];
	size_t p = 12345;
	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		enum block_form f = BLOCK_HOLE;
		assert_false(codec_valid(bad[i]));
		assert_string_equal(codec_name(bad[i]), "unknown");
		assert_int_equal(codec_encode(bad[i], src, sizeof src, dst, sizeof dst, &p),
				 -FERR_UNSUPPORTED);
		assert_int_equal(codec_decode(bad[i], src, sizeof src, dst, sizeof src),
				 -FERR_UNSUPPORTED);
		assert_int_equal(codec_store_block(bad[i], src, sizeof src, dst,
						   sizeof dst, &p, &f), -FERR_UNSUPPORTED);
		assert_int_equal(p, 12345);
	}
	assert_true(codec_equal(spec("gzip"), spec("gzip-6")));
	assert_true(codec_equal(spec("on"), spec("lz4")));
	assert_false(codec_equal(spec("gzip-6"), spec("gzip-7")));
	assert_false(codec_equal(spec("off"), spec("zle")));
	/* persisted ids never change */
	assert_int_equal(CODEC_OFF, 0);
	assert_int_equal(CODEC_LZ4, 1);
	assert_int_equal(CODEC_GZIP, 2);
	assert_int_equal(CODEC_ZLE, 3);
}

/* ---- round trips -------------------------------------------------------- */

static void test_roundtrip_encode(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		for (int k = 0; k < K__COUNT; k++) {
			for (size_t si = 0; si < NSIZES; si++) {
				size_t n = sizes[si], p;
				uint8_t *src = make(k, n, 1000 * k + si);
				uint8_t *z = encode(c, src, n, &p);
				if (decode_into(c, z, p, n, src) != 0)
					fail_msg("%s %s %zu: decode failed", all_codecs[ci],
						 kind_name[k], n);
				/* Exactly the room needed is enough: an encoder never
				 * needs slack past its output. */
				uint8_t *tight = malloc(p ? p : 1);
				size_t p2 = 0;
				assert_non_null(tight);
				assert_int_equal(codec_encode(c, src, n, tight, p, &p2), 0);
				assert_int_equal(p2, p);
				assert_memory_equal(tight, z, p);
				free(tight);
				free(z);
				free(src);
			}
		}
	}
}

static void test_roundtrip_store_block(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		for (int k = 0; k < K__COUNT; k++) {
			for (size_t si = 0; si < NSIZES; si++) {
				size_t n = sizes[si], p = 999, pfull;
				enum block_form f;
				uint8_t *src = make(k, n, 7000 * k + si);
				uint8_t *dst = malloc(n);
				assert_non_null(dst);
				assert_int_equal(codec_store_block(c, src, n, dst, n, &p, &f), 0);
				if (c.id == CODEC_OFF) {
					assert_int_equal(f, BLOCK_RAW);
					assert_int_equal(p, n);
				} else if (all_zero(src, n)) { /* K_ZERO, tiny K_SPARSE */
					assert_int_equal(f, BLOCK_HOLE);
					assert_int_equal(p, 0);
				} else {
					/* the rule, against the encoder's unconstrained size */
					uint8_t *z = encode(c, src, n, &pfull);
					if (codec_keeps(pfull, n)) {
						assert_int_equal(f, BLOCK_COMPRESSED);
						assert_int_equal(p, pfull);
						assert_memory_equal(dst, z, p);
						assert_int_equal(decode_into(c, dst, p, n, src), 0);
					} else {
						assert_int_equal(f, BLOCK_RAW);
						assert_int_equal(p, n);
					}
					free(z);
				}
				/* what the test data promises */
				if (n >= 4096 && c.id != CODEC_OFF) {
					if (k == K_INCOMPRESSIBLE)
						assert_int_equal(f, BLOCK_RAW);
					if (k == K_SPARSE)
						assert_int_equal(f, BLOCK_COMPRESSED);
					if ((k == K_TEXT || k == K_RANDOM) && c.id != CODEC_ZLE)
						assert_int_equal(f, BLOCK_COMPRESSED);
				}
				free(dst);
				free(src);
			}
		}
	}
}

/* ---- the 12.5 % rule ---------------------------------------------------- */

static void test_keeps_predicate(void **state)
{
	static const struct { size_t psize, lsize; int keep; } t[] = {
		{ 0, 0, 1 },           { 1, 0, 0 },           { 0, 1, 1 },
		{ 1, 1, 1 },           { 2, 1, 0 },           { 7, 7, 1 },
		{ 8, 7, 0 },           { 7, 8, 1 },           { 8, 8, 0 },
		{ 8, 9, 1 },           { 9, 9, 0 },           { 14, 16, 1 },
		{ 15, 16, 0 },         { 448, 512, 1 },       { 449, 512, 0 },
		{ 3584, 4096, 1 },     { 3585, 4096, 0 },     { 114688, 131072, 1 },
		{ 114689, 131072, 0 }, { 114688, 131071, 1 }, { 114689, 131071, 0 },
		{ 917504, 1048576, 1 }, { 917505, 1048576, 0 },
		{ SIZE_MAX - SIZE_MAX / 8, SIZE_MAX, 1 },
		{ SIZE_MAX - SIZE_MAX / 8 + 1, SIZE_MAX, 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (codec_keeps(t[i].psize, t[i].lsize) != t[i].keep)
			fail_msg("codec_keeps(%zu, %zu) != %d", t[i].psize, t[i].lsize,
				 t[i].keep);
	/* exhaustively for small sizes against the arithmetic */
	for (size_t l = 0; l < 2000; l++)
		for (size_t p = l > 300 ? l - 300 : 0; p <= l + 2; p++)
			assert_int_equal(codec_keeps(p, l), 8 * p <= 7 * l + (l % 8));
}

/* A block of a nonzero literal bytes followed by zeros: its zle size grows
 * by one or two bytes per extra literal byte, so there is an a where the
 * encoded size is exactly the limit. */
static void literal_then_zeros(uint8_t *p, size_t n, size_t a)
{
	rng_seed(a);
	for (size_t i = 0; i < n; i++)
		p[i] = i < a ? (uint8_t)(rng() % 255 + 1) : 0;
}

static size_t zle_size(uint8_t *buf, size_t n, size_t a)
{
	size_t p;
	uint8_t *z;

	literal_then_zeros(buf, n, a);
	z = encode(spec("zle"), buf, n, &p);
	free(z);
	return p;
}

static void test_keep_boundary_exact(void **state)
{
	static const size_t ls[] = { 4096, 131072, 131071, 512 };
	struct codec_spec zle = spec("zle");
	(void)state;
	for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
		size_t n = ls[i], keep = n - n / 8, lo = 0, hi = n, p;
		uint8_t *buf = malloc(n), *dst = malloc(n);
		enum block_form f;
		assert_non_null(buf);
		assert_non_null(dst);
		/* smallest a with an encoded size above keep */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (zle_size(buf, n, mid) > keep)
				hi = mid;
			else
				lo = mid + 1;
		}
		assert_true(lo > 0 && lo < n);
		if (zle_size(buf, n, lo - 1) != keep)
			fail_msg("lsize %zu: no block encoding to exactly %zu", n, keep);
		/* exactly lsize - lsize/8: kept */
		literal_then_zeros(buf, n, lo - 1);
		assert_int_equal(codec_store_block(zle, buf, n, dst, n, &p, &f), 0);
		assert_int_equal(f, BLOCK_COMPRESSED);
		assert_int_equal(p, keep);
		assert_int_equal(decode_into(zle, dst, p, n, buf), 0);
		/* the smallest dst_cap store_block accepts is keep itself */
		uint8_t *small = malloc(keep);
		assert_non_null(small);
		assert_int_equal(codec_store_block(zle, buf, n, small, keep, &p, &f), 0);
		assert_int_equal(f, BLOCK_COMPRESSED);
		assert_int_equal(codec_store_block(zle, buf, n, small, keep - 1, &p, &f),
				 -FERR_INVAL);
		free(small);
		/* one byte more: raw */
		size_t over = zle_size(buf, n, lo);
		assert_true(over == keep + 1 || over == keep + 2);
		assert_int_equal(codec_store_block(zle, buf, n, dst, n, &p, &f), 0);
		assert_int_equal(f, BLOCK_RAW);
		assert_int_equal(p, n);
		free(buf);
		free(dst);
	}
}

/* lz4 and gzip: walk a block from compressible to not and check every
 * step near the boundary against the unconstrained encoder. */
static void test_keep_boundary_codecs(void **state)
{
	static const char *const names[] = { "lz4", "gzip-1", "gzip-6", "gzip-9" };
	const size_t n = 16384, keep = n - n / 8;
	uint8_t *buf = malloc(n), *dst = malloc(n);
	(void)state;
	assert_non_null(buf);
	assert_non_null(dst);
	for (size_t ci = 0; ci < sizeof names / sizeof names[0]; ci++) {
		struct codec_spec c = spec(names[ci]);
		size_t lo = 0, hi = n, p, pfull;
		int seen_keep = 0, seen_raw = 0, seen_exact = 0;
		enum block_form f;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			literal_then_zeros(buf, n, mid);
			free(encode(c, buf, n, &pfull));
			if (pfull > keep)
				hi = mid;
			else
				lo = mid + 1;
		}
		for (size_t a = lo > 40 ? lo - 40 : 0; a < lo + 40 && a <= n; a++) {
			literal_then_zeros(buf, n, a);
			uint8_t *z = encode(c, buf, n, &pfull);
			assert_int_equal(codec_store_block(c, buf, n, dst, n, &p, &f), 0);
			if (codec_keeps(pfull, n)) {
				assert_int_equal(f, BLOCK_COMPRESSED);
				assert_int_equal(p, pfull);
				assert_memory_equal(dst, z, p);
				seen_keep = 1;
				seen_exact |= pfull == keep || pfull == keep - 1;
			} else {
				assert_int_equal(f, BLOCK_RAW);
				seen_raw = 1;
			}
			free(z);
		}
		assert_true(seen_keep && seen_raw);
		/* the nearest kept block sits within two bytes of the limit */
		assert_true(seen_exact);
	}
	free(buf);
	free(dst);
}

/* ---- gzip's early abort (store/codec_gzip.c) ------------------------------ */

/* n bytes drawn uniformly from k byte values, then a share of 1/rep_div of
 * them (none when rep_div is 0) overwritten by copies of run bytes taken
 * from earlier in the block: near-random data with a few repeats, the
 * border the abort's two tests have to tell apart. */
static void near_random(uint8_t *p, size_t n, unsigned k, size_t rep_div, size_t run,
			uint64_t seed)
{
	rng_seed(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rng() % k);
	if (!rep_div || n < 2 * run)
		return;
	for (size_t done = 0; done < n / rep_div; done += run) {
		size_t to = run + rng() % (n - 2 * run), from = rng() % (to - run + 1);
		memmove(p + to, p + from, run);
	}
}

static void test_gzip_early_abort(void **state)
{
	static const size_t ns[] = { 1000, 1024, 4096, 16384, 131072 };
	static const unsigned ks[] = { 128, 160, 181, 200, 230, 256 };
	static const size_t divs[] = { 0, 40, 20, 12, 8, 5 }, runs[] = { 4, 8, 32 };
	static const char *const names[] = { "gzip-1", "gzip-7" };
	size_t aborted = 0, tried = 0, kept = 0;
	uint8_t *buf = malloc(1048576), *dst = malloc(1048576), *scratch = malloc(1048576);
	(void)state;
	assert_non_null(buf);
	assert_non_null(dst);
	assert_non_null(scratch);
	/* random bytes: hopeless from 1 KiB up, to ferry's largest block */
	near_random(buf, 1048576, 256, 0, 0, 1);
	assert_true(codec_gzip_hopeless(buf, 1048576, scratch));
	assert_true(codec_gzip_hopeless(buf, 131072, scratch));
	assert_false(codec_gzip_hopeless(buf, 1023, scratch));
	assert_true(codec_gzip_hopeless(buf, 1024, scratch));
	/* random bytes repeated: uniform, but lz4 finds the repeats */
	for (size_t i = 4096; i < 131072; i += 4096)
		memcpy(buf + i, buf, 4096);
	assert_false(codec_gzip_hopeless(buf, 131072, scratch));
	/* text */
	fill(K_TEXT, buf, 131072, 2);
	assert_false(codec_gzip_hopeless(buf, 131072, scratch));
	/* hex digits, with random bytes just where the sample looks: the
	 * whole block decides, and deflate saves a third of it */
	{
		const size_t n = 131072, w = 256, step = (n - w) / 15;
		size_t p, pfull;
		enum block_form f;
		rng_seed(3);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)"0123456789abcdef"[rng() % 16];
		for (size_t k = 0; k < 16; k++)
			for (size_t i = 0; i < w; i++)
				buf[k * step + i] = (uint8_t)rng();
		assert_false(codec_gzip_hopeless(buf, n, scratch));
		uint8_t *z = encode(spec("gzip-7"), buf, n, &pfull);
		assert_true(pfull < n - n / 3);
		assert_int_equal(codec_store_block(spec("gzip-7"), buf, n, dst, n - n / 8, &p, &f), 0);
		assert_int_equal(f, BLOCK_COMPRESSED);
		assert_int_equal(p, pfull);
		free(z);
	}
	/* The storage rule's outcome, with the abort, is the unconstrained
	 * encoder's on every block near the border (and the payload the
	 * same bytes). */
	for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
		for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
			for (size_t di = 0; di < sizeof divs / sizeof divs[0]; di++)
				for (size_t ri = 0; ri < (divs[di] ? 3u : 1u); ri++) {
					size_t n = ns[ni], p, pfull;
					enum block_form f;
					near_random(buf, n, ks[ki], divs[di], runs[ri],
						    ni * 1000 + ki * 100 + di * 10 + ri);
					int h = codec_gzip_hopeless(buf, n, scratch);
					aborted += h;
					tried += !h;
					for (size_t ci = 0; ci < 2; ci++) {
						struct codec_spec c = spec(names[ci]);
						uint8_t *z = encode(c, buf, n, &pfull);
						assert_int_equal(codec_store_block(c, buf, n, dst, n - n / 8,
										   &p, &f), 0);
						if (codec_keeps(pfull, n)) {
							assert_false(h);
							assert_int_equal(f, BLOCK_COMPRESSED);
							assert_int_equal(p, pfull);
							assert_memory_equal(dst, z, p);
							kept++;
						} else {
							assert_int_equal(f, BLOCK_RAW);
						}
						free(z);
					}
				}
	/* the sweep crosses the border both ways */
	print_message("early abort: %zu hopeless, %zu tried, %zu kept compressed\n", aborted,
		      tried, kept);
	assert_true(aborted > 20);
	assert_true(tried > 20);
	assert_true(kept > 20);
	free(buf);
	free(dst);
	free(scratch);
}

/* ---- holes -------------------------------------------------------------- */

static void test_zero_is_hole(void **state)
{
	static const size_t ls[] = { 0, 1, 7, 8, 9, 63, 64, 65, 4096, 131072 };
	(void)state;
	for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
		size_t n = ls[i];
		uint8_t *src = calloc(1, n ? n : 1), *dst = malloc(n ? n : 1);
		assert_non_null(src);
		assert_non_null(dst);
		for (size_t ci = 0; ci < NCODECS; ci++) {
			struct codec_spec c = spec(all_codecs[ci]);
			size_t p = 999;
			enum block_form f;
			memset(src, 0, n);
			assert_int_equal(codec_store_block(c, src, n, dst, n, &p, &f), 0);
			if (c.id == CODEC_OFF) {
				assert_int_equal(f, BLOCK_RAW);
				assert_int_equal(p, n);
				continue;
			}
			assert_int_equal(f, BLOCK_HOLE);
			assert_int_equal(p, 0);
			if (n == 0)
				continue;
			src[n - 1] = 1; /* one nonzero byte, at the last position */
			assert_int_equal(codec_store_block(c, src, n, dst, n, &p, &f), 0);
			assert_int_not_equal(f, BLOCK_HOLE);
			if (n >= 4096)
				assert_int_equal(f, BLOCK_COMPRESSED);
			if (f == BLOCK_COMPRESSED)
				assert_int_equal(decode_into(c, dst, p, n, src), 0);
			src[n - 1] = 0;
			src[0] = 0x80; /* and at the first */
			assert_int_equal(codec_store_block(c, src, n, dst, n, &p, &f), 0);
			assert_int_not_equal(f, BLOCK_HOLE);
		}
		free(src);
		free(dst);
	}
}

static void test_is_zero(void **state)
{
	uint8_t *buf = calloc(1, 1100);
	(void)state;
	assert_non_null(buf);
	assert_true(codec_is_zero(buf, 0));
	assert_true(codec_is_zero(NULL, 0));
	for (size_t start = 0; start < 9; start++) {
		for (size_t n = 0; n <= 300; n++) {
			assert_true(codec_is_zero(buf + start, n));
			for (size_t pos = 0; pos < n; pos++) {
				buf[start + pos] = (uint8_t)(1u << (pos % 8));
				assert_false(codec_is_zero(buf + start, n));
				buf[start + pos] = 0;
			}
			/* a nonzero byte just outside is not looked at */
			buf[start + n] = 0xff;
			if (start)
				buf[start - 1] = 0xff;
			assert_true(codec_is_zero(buf + start, n));
			buf[start + n] = 0;
			if (start)
				buf[start - 1] = 0;
		}
	}
	free(buf);
}

/* ---- interop with zlib -------------------------------------------------- */

static void test_gzip_is_zlib(void **state)
{
	(void)state;
	for (unsigned lv = 1; lv <= 9; lv++) {
		char name[8] = "gzip-0";
		name[5] = (char)('0' + lv);
		struct codec_spec c = spec(name);
		for (int k = 0; k < K__COUNT; k++) {
			for (size_t si = 0; si < NSIZES; si++) {
				size_t n = sizes[si], p;
				uint8_t *src = make(k, n, 31 * lv + k + si);
				uint8_t *z = encode(c, src, n, &p);
				uint8_t *out = malloc(n);
				uLongf dl = n;
				assert_non_null(out);
				/* our output through zlib */
				assert_int_equal(uncompress(out, &dl, z, p), Z_OK);
				assert_int_equal(dl, n);
				assert_memory_equal(out, src, n);
				/* RFC 1950 header: deflate, 32 KiB window, check bits */
				assert_int_equal(z[0] & 0x0f, 8);
				assert_int_equal(((unsigned)z[0] << 8 | z[1]) % 31, 0);
				free(z);
				/* zlib's output through our decoder */
				uLongf zl = compressBound(n);
				z = malloc(zl);
				assert_non_null(z);
				assert_int_equal(compress2(z, &zl, src, n, (int)lv), Z_OK);
				assert_int_equal(decode_into(c, z, zl, n, src), 0);
				free(z);
				free(out);
				free(src);
			}
		}
	}
}

/* ---- giving up ---------------------------------------------------------- */

static void test_nospace(void **state)
{
	const size_t n = 131072;
	uint8_t *rnd = make(K_INCOMPRESSIBLE, n, 5), *txt = make(K_TEXT, n, 6);
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		static const size_t caps[] = { 0, 1, 3, 4, 5, 100, 114688 };
		for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
			/* exact-size buffers: ASan flags a write past cap */
			uint8_t *dst = malloc(caps[i] ? caps[i] : 1);
			size_t p = 4242;
			assert_non_null(dst);
			assert_int_equal(codec_encode(c, rnd, n, dst, caps[i], &p),
					 -FERR_NOSPACE_DST);
			assert_int_equal(p, 4242);
			if (caps[i] < 1000)
				assert_int_equal(codec_encode(c, txt, n, dst, caps[i], &p),
						 -FERR_NOSPACE_DST);
			free(dst);
		}
	}
	free(rnd);
	free(txt);
}

/* lz4 in limited-output mode stops at the first overrun instead of
 * compressing the whole block: with a tiny cap it must be far faster than
 * a full compression. Compressible-but-not-enough data makes lz4 work for
 * its output; best of several rounds keeps machine noise out. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_lz4_gives_up_early(void **state)
{
	const size_t n = 1024 * 1024;
	struct codec_spec c = spec("lz4");
	uint8_t *src = make(K_RANDOM, n, 9);
	size_t bound = codec_bound(n), p;
	uint8_t *dst = malloc(bound);
	double full = 1e9, early = 1e9;
	int bad = 0;
	(void)state;
	assert_non_null(dst);
	for (int round = 0; round < 5; round++) {
		double t0 = now_s();
		for (int i = 0; i < 5; i++)
			bad |= codec_encode(c, src, n, dst, bound, &p) != 0;
		double t1 = now_s();
		for (int i = 0; i < 5; i++)
			bad |= codec_encode(c, src, n, dst, 4096, &p) != -FERR_NOSPACE_DST;
		double t2 = now_s();
		full = t1 - t0 < full ? t1 - t0 : full;
		early = t2 - t1 < early ? t2 - t1 : early;
	}
	free(dst);
	free(src);
	assert_false(bad);
	if (!(early * 5 < full))
		fail_msg("lz4 with a 4 KiB cap took %.6f s vs %.6f s uncapped",
			 early, full);
}

/* ---- hostile input ------------------------------------------------------ */

/* A small block with literals, matches and zero runs for every codec. */
static uint8_t *small_block(size_t *n)
{
	static const char text[] = "send tank/home@mon | recv bk/home; "
				   "send tank/home@tue | recv bk/home; ";
	uint8_t *p;
	*n = 200;
	p = calloc(1, *n);
	assert_non_null(p);
	memcpy(p, text, sizeof text - 1);
	memcpy(p + 150, "tail", 4);
	p[199] = 0x7f;
	return p;
}

static void test_corrupt_truncated(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		size_t n, p;
		uint8_t *src = small_block(&n), *z = encode(c, src, n, &p);
		for (size_t cut = 0; cut < p; cut++) {
			uint8_t *t = malloc(cut ? cut : 1);
			assert_non_null(t);
			memcpy(t, z, cut);
			int r = decode_into(c, t, cut, n, NULL);
			if (r != -FERR_CORRUPT)
				fail_msg("%s: truncated to %zu of %zu: %d", all_codecs[ci],
					 cut, p, r);
			free(t);
		}
		/* and one stray byte after the end */
		uint8_t *t = malloc(p + 1);
		assert_non_null(t);
		memcpy(t, z, p);
		t[p] = 0;
		if (c.id != CODEC_OFF)
			assert_int_equal(decode_into(c, t, p + 1, n, NULL), -FERR_CORRUPT);
		free(t);
		free(z);
		free(src);
	}
}

static void test_corrupt_bitflips(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		size_t n, p, caught = 0, tried = 0;
		uint8_t *src = small_block(&n), *z = encode(c, src, n, &p);
		uint8_t *t = malloc(p), *out = malloc(n);
		assert_non_null(t);
		assert_non_null(out);
		for (size_t pos = 0; pos < p; pos++) {
			for (int bit = 0; bit < 8; bit++) {
				memcpy(t, z, p);
				t[pos] ^= (uint8_t)(1u << bit);
				int r = codec_decode(c, t, p, out, n);
				tried++;
				if (r == 0) {
					/* Only codecs without a checksum may decode a flip,
					 * and only to a block of the right size; gzip's
					 * Adler-32 lets through flips of unused bits only. */
					if (c.id == CODEC_GZIP)
						assert_memory_equal(out, src, n);
					continue;
				}
				assert_int_equal(r, -FERR_CORRUPT);
				caught++;
			}
		}
		/* gzip catches everything but padding bits; the others at least
		 * the structural flips */
		if (c.id == CODEC_GZIP)
			assert_true(caught * 100 >= tried * 95);
		if (c.id != CODEC_OFF)
			assert_true(caught > 0);
		free(t);
		free(out);
		free(z);
		free(src);
	}
}

static void test_corrupt_garbage(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		for (uint64_t seed = 0; seed < 200; seed++) {
			size_t psize = seed % 300, lsize = 1 + (seed * 7919) % 5000;
			uint8_t *g = make(K_INCOMPRESSIBLE, psize, seed + 77);
			int r = decode_into(c, g, psize, lsize, NULL);
			/* zle and off have no header to fail; they may produce a
			 * block of the right length by chance */
			if (c.id == CODEC_LZ4 || c.id == CODEC_GZIP)
				assert_int_equal(r, -FERR_CORRUPT);
			else
				assert_true(r == 0 || r == -FERR_CORRUPT);
			free(g);
		}
	}
}

static void test_corrupt_wrong_lsize(void **state)
{
	(void)state;
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		size_t n, p;
		uint8_t *src = small_block(&n), *z = encode(c, src, n, &p);
		const size_t wrong[] = { 0, 1, n - 1, n + 1, 2 * n, 1u << 20 };
		for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
			assert_int_equal(decode_into(c, z, p, wrong[i], NULL), -FERR_CORRUPT);
		/* psize 0 */
		assert_int_equal(decode_into(c, z, 0, n, NULL), -FERR_CORRUPT);
		free(z);
		free(src);
	}
}

static void test_corrupt_crafted(void **state)
{
	struct codec_spec lz4 = spec("lz4"), zle = spec("zle"), gz = spec("gzip");
	(void)state;
	/* lz4: header length beyond the block, short of it, absurd */
	{
		size_t n, p;
		uint8_t *src = small_block(&n), *z = encode(lz4, src, n, &p);
		uint8_t *t = malloc(p + 8);
		assert_non_null(t);
		const uint32_t lens[] = { (uint32_t)p - 3, (uint32_t)p - 5, 0,
					  0x7fffffffu, 0xffffffffu, (uint32_t)p + 4 };
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			memcpy(t, z, p);
			t[0] = (uint8_t)(lens[i] >> 24);
			t[1] = (uint8_t)(lens[i] >> 16);
			t[2] = (uint8_t)(lens[i] >> 8);
			t[3] = (uint8_t)lens[i];
			assert_int_equal(decode_into(lz4, t, p, n, NULL), -FERR_CORRUPT);
		}
		/* slack after the lz4 block (ZFS would allow it; ferry does not) */
		memcpy(t, z, p);
		memset(t + p, 0, 8);
		assert_int_equal(decode_into(lz4, t, p + 8, n, NULL), -FERR_CORRUPT);
		/* a match reaching before the start of the output */
		static const uint8_t bad_offset[] = { 0, 0, 0, 4, 0x14, 'a', 0x10, 0x00 };
		assert_int_equal(decode_into(lz4, bad_offset, sizeof bad_offset, 20, NULL),
				 -FERR_CORRUPT);
		free(t);
		free(z);
		free(src);
	}
	/* zle: literal past the end of src, runs past the end of dst */
	{
		static const uint8_t lit_past_src[] = { 5, 'a', 'b' };
		static const uint8_t lit_past_dst[] = { 3, 'a', 'b', 'c', 'd' };
		static const uint8_t zero_past_dst[] = { 64 + 9 };
		static const uint8_t ok[] = { 1, 'a', 'b', 64 + 2, 0, 'z' };
		static const uint8_t ok_out[] = { 'a', 'b', 0, 0, 0, 'z' };
		static const uint8_t max[] = { 255, 63 };
		assert_int_equal(decode_into(zle, lit_past_src, 3, 6, NULL), -FERR_CORRUPT);
		assert_int_equal(decode_into(zle, lit_past_dst, 5, 3, NULL), -FERR_CORRUPT);
		assert_int_equal(decode_into(zle, zero_past_dst, 1, 10, NULL), 0);
		assert_int_equal(decode_into(zle, zero_past_dst, 1, 9, NULL), -FERR_CORRUPT);
		assert_int_equal(decode_into(zle, zero_past_dst, 1, 11, NULL), -FERR_CORRUPT);
		assert_int_equal(decode_into(zle, ok, sizeof ok, sizeof ok_out, ok_out), 0);
		assert_int_equal(decode_into(zle, max, 1, 192, NULL), 0);
		assert_int_equal(decode_into(zle, max, 2, 192, NULL), -FERR_CORRUPT);
	}
	/* gzip: a preset dictionary, a bad window size, a wrong checksum */
	{
		size_t n, p;
		uint8_t *src = small_block(&n), *z = encode(gz, src, n, &p);
		uint8_t *t = malloc(p);
		assert_non_null(t);
		memcpy(t, z, p);
		t[1] |= 0x20; /* FDICT */
		t[1] = (uint8_t)((t[1] & 0xe0) | (31 - ((t[0] << 8 | (t[1] & 0xe0)) % 31)) % 31);
		assert_int_equal(decode_into(gz, t, p, n, NULL), -FERR_CORRUPT);
		memcpy(t, z, p);
		t[0] = 0x88; /* CINFO 8: window beyond 32 KiB */
		t[1] = (uint8_t)((t[1] & 0xe0) | (31 - ((t[0] << 8 | (t[1] & 0xe0)) % 31)) % 31);
		assert_int_equal(decode_into(gz, t, p, n, NULL), -FERR_CORRUPT);
		memcpy(t, z, p);
		t[p - 1] ^= 1;
		assert_int_equal(decode_into(gz, t, p, n, NULL), -FERR_CORRUPT);
		free(t);
		free(z);
		free(src);
	}
}

/* ---- zle details -------------------------------------------------------- */

/* Every 0/1 pattern up to 14 bytes: round trip and stay within the bound;
 * and long adversarial periodic patterns. */
static void test_zle_patterns(void **state)
{
	struct codec_spec zle = spec("zle");
	uint8_t buf[131072];
	(void)state;
	for (size_t n = 1; n <= 14; n++) {
		for (uint32_t m = 0; m < (1u << n); m++) {
			size_t p;
			for (size_t i = 0; i < n; i++)
				buf[i] = (m >> i & 1) ? 0xa5 : 0;
			uint8_t *z = encode(zle, buf, n, &p);
			assert_true(p <= codec_zle_bound(n));
			assert_int_equal(decode_into(zle, z, p, n, buf), 0);
			free(z);
		}
	}
	static const char *const periods[] = { "x", "x0", "x00", "x0x00", "xx00",
					       "x000", "xxxxxxx0", "0x" };
	for (size_t i = 0; i < sizeof periods / sizeof periods[0]; i++) {
		size_t len = strlen(periods[i]), p;
		for (size_t j = 0; j < sizeof buf; j++)
			buf[j] = periods[i][j % len] == 'x' ? 7 : 0;
		uint8_t *z = encode(zle, buf, sizeof buf, &p);
		assert_true(p <= codec_zle_bound(sizeof buf));
		assert_int_equal(decode_into(zle, z, p, sizeof buf, buf), 0);
		free(z);
	}
	/* the ZFS encoding of a known block */
	static const uint8_t in[] = { 'a', 'b', 0, 'c', 0, 0, 0, 'd' };
	static const uint8_t want[] = { 3, 'a', 'b', 0, 'c', 64 + 2, 0, 'd' };
	size_t p;
	uint8_t *z = encode(zle, in, sizeof in, &p);
	assert_int_equal(p, sizeof want);
	assert_memory_equal(z, want, p);
	free(z);
	/* a 200-zero run splits at 192 */
	memset(buf, 0, 200);
	z = encode(zle, buf, 200, &p);
	assert_int_equal(p, 2);
	assert_int_equal(z[0], 255);
	assert_int_equal(z[1], 64 + 7);
	free(z);
}

/* ---- bounds ------------------------------------------------------------- */

static void test_bound(void **state)
{
	(void)state;
	for (size_t n = 0; n < 70000; n += n < 300 ? 1 : 997) {
		size_t b = codec_bound(n);
		assert_true(b >= n);
		assert_true(b >= codec_lz4_bound(n));
		assert_true(b >= codec_gzip_bound(n));
		assert_true(b >= codec_zle_bound(n));
	}
	assert_int_equal(codec_bound(SIZE_MAX), SIZE_MAX);
	assert_int_equal(codec_bound(SIZE_MAX / 2 + 1), SIZE_MAX);
	/* lsize 0 round-trips everywhere */
	for (size_t ci = 0; ci < NCODECS; ci++) {
		struct codec_spec c = spec(all_codecs[ci]);
		size_t p;
		uint8_t one = 0;
		uint8_t *z = encode(c, &one, 0, &p);
		assert_int_equal(decode_into(c, z, p, 0, NULL), 0);
		free(z);
	}
}

/* ---- threads ------------------------------------------------------------ */

struct worker {
	pthread_t t;
	int id, ok;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const size_t n = 65536;
	char name[8] = "gzip-0";
	name[5] = (char)('1' + w->id % 9);
	struct codec_spec cs[3];
	uint8_t *src = malloc(n), *z = malloc(codec_bound(n)), *out = malloc(n);

	w->ok = 0;
	if (!src || !z || !out || codec_parse(name, &cs[0]) < 0 ||
	    codec_parse("lz4", &cs[1]) < 0 || codec_parse("zle", &cs[2]) < 0)
		goto out;
	for (int it = 0; it < 30; it++) {
		for (int k = 0; k < 3; k++) {
			size_t p;
			/* thread-local generator: rng() is not thread-safe */
			uint64_t s = (uint64_t)w->id * 1000 + (uint64_t)it;
			for (size_t i = 0; i < n; i++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				src[i] = (s >> 60) < 6 ? 0 : (uint8_t)(s >> 56 & 7) + 'a';
			}
			if (codec_encode(cs[k], src, n, z, codec_bound(n), &p) < 0 ||
			    codec_decode(cs[k], z, p, out, n) < 0 ||
			    memcmp(src, out, n) != 0)
				goto out;
		}
	}
	w->ok = 1;
out:
	free(src);
	free(z);
	free(out);
	return NULL;
}

/* codec_decode_strict decodes what codec_decode decodes from our own
 * encoders, identically, and refuses what it refuses. */
static void test_decode_strict(void **state)
{
	size_t lsize = 128 << 10;
	uint8_t *src = malloc(lsize), *enc = malloc(codec_bound(lsize));
	uint8_t *a = malloc(lsize), *b = malloc(lsize);
	assert_non_null(src);
	assert_non_null(enc);
	assert_non_null(a);
	assert_non_null(b);
	for (size_t i = 0; i < lsize; i++)
		src[i] = (uint8_t)("the quick brown fox "[i % 20] + (i / 4096) % 3);
	for (unsigned lv = 1; lv <= 9; lv++) {
		struct codec_spec c = {CODEC_GZIP, (uint8_t)lv};
		size_t ps = 0;
		assert_int_equal(codec_encode(c, src, lsize, enc, codec_bound(lsize), &ps), 0);
		assert_int_equal(codec_decode(c, enc, ps, a, lsize), 0);
		assert_int_equal(codec_decode_strict(c, enc, ps, b, lsize), 0);
		assert_memory_equal(a, b, lsize);
		assert_memory_equal(b, src, lsize);
		/* truncated, one byte short of the length, and a flipped trailer */
		assert_int_equal(codec_decode_strict(c, enc, ps - 1, b, lsize), -FERR_CORRUPT);
		assert_int_equal(codec_decode_strict(c, enc, ps, b, lsize - 1), -FERR_CORRUPT);
		enc[ps - 1] ^= 1;
		assert_int_equal(codec_decode_strict(c, enc, ps, b, lsize), -FERR_CORRUPT);
	}
	struct codec_spec l4 = {CODEC_LZ4, 0};
	size_t ps = 0;
	assert_int_equal(codec_encode(l4, src, lsize, enc, codec_bound(lsize), &ps), 0);
	assert_int_equal(codec_decode_strict(l4, enc, ps, b, lsize), 0);
	assert_memory_equal(b, src, lsize);
	free(src);
	free(enc);
	free(a);
	free(b);
}

static void test_threads(void **state)
{
	struct worker w[8];
	(void)state;
	/* two rounds: thread-exit cleanup of cached compressors, then fresh
	 * threads allocating again (LSan checks the first round's are freed) */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 8; i++) {
			w[i].id = i + round;
			assert_int_equal(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			assert_int_equal(pthread_join(w[i].t, NULL), 0);
			assert_true(w[i].ok);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_valid_equal_name),
		cmocka_unit_test(test_roundtrip_encode),
		cmocka_unit_test(test_roundtrip_store_block),
		cmocka_unit_test(test_keeps_predicate),
		cmocka_unit_test(test_keep_boundary_exact),
		cmocka_unit_test(test_keep_boundary_codecs),
		cmocka_unit_test(test_zero_is_hole),
		cmocka_unit_test(test_is_zero),
		cmocka_unit_test(test_gzip_early_abort),
		cmocka_unit_test(test_gzip_is_zlib),
		cmocka_unit_test(test_nospace),
		cmocka_unit_test(test_lz4_gives_up_early),
		cmocka_unit_test(test_corrupt_truncated),
		cmocka_unit_test(test_corrupt_bitflips),
		cmocka_unit_test(test_corrupt_garbage),
		cmocka_unit_test(test_corrupt_wrong_lsize),
		cmocka_unit_test(test_corrupt_crafted),
		cmocka_unit_test(test_zle_patterns),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_decode_strict),
		cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
