/* tests/fuzz/fuzz_codec.c — libFuzzer target for the block codecs.
 *
 * Input: byte 0 picks the codec (mod 12: off, lz4, gzip-1..9, zle) and a
 * mode (bit 0 of byte 0 / 12); bytes 1..3 a big-endian number N; the rest
 * is a payload P.
 *  mode 0: P is decoded as a block of lsize N mod (1 MiB + 1): must return
 *     0 or -FERR_CORRUPT and stay in bounds; gzip blocks that decode must
 *     decode the same through zlib (differential check), and the strict
 *     decoder (recv's, for kept blocks) accepts exactly what zlib's
 *     inflate() of the whole zlib stream accepts, with the same output.
 *  mode 1: P is encoded, then byte N>>8 of the encoding (mod its size) is
 *     xored with N&255 (or 1), and decoded with lsize |P|-1, |P|, |P|+1:
 *     random bytes rarely get past a header, damaged real blocks do.
 *  both: P as a logical block must round-trip, and the storage rule must
 *     hold, also with a dst_cap of N. Under gzip, a block that
 *     codec_gzip_hopeless judges hopeless is stored raw and encodes to
 *     -FERR_NOSPACE_DST with less room than its size (the early abort: a
 *     heuristic, so the one exception to "compressed when deflate saves
 *     1/8").
 * Any violation abort()s. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "store/codec.h"

#define MAX_LSIZE (1u << 20)

static const struct codec_spec specs[12] = {
	{ CODEC_OFF, 0 },  { CODEC_LZ4, 0 },  { CODEC_GZIP, 1 }, { CODEC_GZIP, 2 },
	{ CODEC_GZIP, 3 }, { CODEC_GZIP, 4 }, { CODEC_GZIP, 5 }, { CODEC_GZIP, 6 },
	{ CODEC_GZIP, 7 }, { CODEC_GZIP, 8 }, { CODEC_GZIP, 9 }, { CODEC_ZLE, 0 },
};

/* zlib's complaints about streams libdeflate 1.14 knowingly remaps to
 * valid ones instead of refusing: a code-length repeat running past the
 * table, and codewords missing from an incomplete Huffman code. The data
 * must still pass Adler-32 (and, in the store, the block hash); see
 * docs/notes/codecs.md. */
static int zlib_lenient(const char *msg)
{
	return msg && (strcmp(msg, "invalid bit length repeat") == 0 ||
		       strcmp(msg, "invalid distance code") == 0 ||
		       strcmp(msg, "invalid literal/length code") == 0);
}

/* Differential check of the libdeflate decoder against zlib. ours is our
 * output, or NULL when we refused the block. zlib must agree, but for the
 * leniencies above. strict_rc is codec_decode_strict's result (1: not
 * run) and strict its output: it must agree with zlib exactly. */
static void check_zlib(const uint8_t *p, size_t psize, size_t lsize,
		       const uint8_t *ours, int strict_rc, const uint8_t *strict)
{
	uint8_t *ref = malloc(lsize + 1);
	z_stream zs;
	int zr, zok;

	if (!ref)
		return;
	memset(&zs, 0, sizeof zs);
	if (inflateInit(&zs) != Z_OK) {
		free(ref);
		return;
	}
	zs.next_in = (Bytef *)(uintptr_t)p;
	zs.avail_in = (uInt)psize;
	zs.next_out = ref;
	zs.avail_out = (uInt)(lsize + 1); /* room for one byte too many */
	zr = inflate(&zs, Z_FINISH);
	zok = zr == Z_STREAM_END && zs.total_out == lsize && zs.total_in == psize;
	if (strict_rc != 1) {
		/* codec_decode_strict must be zlib, to the byte */
		if ((strict_rc == 0) != zok)
			abort();
		if (zok && lsize && memcmp(ref, strict, lsize) != 0)
			abort();
	}
	if (ours && !zok) {
		if (!(zr == Z_DATA_ERROR && zlib_lenient(zs.msg)))
			abort();
	} else if (ours && memcmp(ref, ours, lsize) != 0) {
		abort();
	} else if (!ours && zok) {
		abort(); /* we refused a block zlib reads in full */
	}
	inflateEnd(&zs);
	free(ref);
}

static void check_decode(struct codec_spec c, const uint8_t *p, size_t psize,
			 size_t lsize)
{
	/* exact-size output so ASan sees any write past lsize */
	uint8_t *out = malloc(lsize ? lsize : 1);
	int r;

	if (!out)
		return;
	r = codec_decode(c, p, psize, out, lsize);
	if (r != 0 && r != -FERR_CORRUPT)
		abort();
	/* The strict decoder accepts a subset, with the same output. */
	uint8_t *strict = malloc(lsize ? lsize : 1);
	int rs = 1;
	if (strict) {
		rs = codec_decode_strict(c, p, psize, strict, lsize);
		if (rs != 0 && rs != -FERR_CORRUPT)
			abort();
		if (rs == 0 && (r != 0 || (lsize && memcmp(strict, out, lsize) != 0)))
			abort();
	}
	if (c.id == CODEC_GZIP)
		check_zlib(p, psize, lsize, r == 0 ? out : NULL, rs, strict);
	free(strict);
	free(out);
}

static void check_roundtrip(struct codec_spec c, const uint8_t *src, size_t n,
			    size_t cap_hint)
{
	size_t bound = codec_bound(n), p = 0, keep = n - n / 8, cap, sp = 0, cp = 0;
	uint8_t *z = malloc(bound), *out = malloc(n ? n : 1), *dst = NULL;
	enum block_form f;
	int r, gave_up;

	if (!z || !out)
		goto out;
	/* the early abort's verdict (out is scratch until step 1 uses it) */
	gave_up = c.id == CODEC_GZIP && codec_gzip_hopeless(src, n, out);
	if (gave_up && codec_is_zero(src, n))
		abort();
	/* 1. unconstrained */
	if (codec_encode(c, src, n, z, bound, &p) != 0 || p > bound)
		abort();
	if (codec_decode(c, z, p, out, n) != 0 || (n && memcmp(out, src, n) != 0))
		abort();
	/* 2. the storage rule */
	dst = malloc(n ? n : 1);
	if (!dst)
		goto out;
	if (codec_store_block(c, src, n, dst, n, &sp, &f) != 0)
		abort();
	if (c.id == CODEC_OFF) {
		if (f != BLOCK_RAW || sp != n)
			abort();
	} else if (codec_is_zero(src, n)) {
		if (f != BLOCK_HOLE || sp != 0)
			abort();
	} else if (codec_keeps(p, n) && !gave_up) {
		if (f != BLOCK_COMPRESSED || sp != p || memcmp(dst, z, p) != 0)
			abort();
	} else if (f != BLOCK_RAW || sp != n) {
		abort();
	}
	if (sp > keep && f == BLOCK_COMPRESSED)
		abort();
	/* 3. a cap from the input: fits exactly when the output fits */
	cap = cap_hint % (bound + 1);
	free(dst);
	dst = malloc(cap ? cap : 1);
	if (!dst)
		goto out;
	r = codec_encode(c, src, n, dst, cap, &cp);
	if (gave_up && cap < n) {
		if (r != -FERR_NOSPACE_DST)
			abort();
	} else if (p <= cap) {
		if (r != 0 || cp != p || memcmp(dst, z, p) != 0)
			abort();
	} else if (r != -FERR_NOSPACE_DST) {
		abort();
	}
out:
	free(z);
	free(out);
	free(dst);
}

static void check_damaged(struct codec_spec c, const uint8_t *src, size_t n,
			  size_t num)
{
	size_t bound = codec_bound(n), p = 0;
	uint8_t *z = malloc(bound), *t = NULL;

	if (!z || codec_encode(c, src, n, z, bound, &p) != 0 || p == 0)
		goto out;
	t = malloc(p); /* exact size: ASan sees reads past psize */
	if (!t)
		goto out;
	memcpy(t, z, p);
	t[(num >> 8) % p] ^= (uint8_t)(num & 0xff ? num & 0xff : 1);
	if (n > 0)
		check_decode(c, t, p, n - 1);
	check_decode(c, t, p, n);
	check_decode(c, t, p, n + 1);
out:
	free(z);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_spec c;
	size_t num;

	if (size < 4)
		return 0;
	c = specs[data[0] % 12];
	num = (size_t)data[1] << 16 | (size_t)data[2] << 8 | data[3];
	if ((data[0] / 12) % 2 == 0)
		check_decode(c, data + 4, size - 4, num % (MAX_LSIZE + 1));
	else
		check_damaged(c, data + 4, size - 4, num);
	check_roundtrip(c, data + 4, size - 4, num);
	return 0;
}
