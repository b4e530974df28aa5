/* store/codec_gzip.c — gzip-N: a zlib stream (RFC 1950), as ZFS stores it.
 * Encoding and decoding use libdeflate, which beats zlib on speed at an
 * equal or better ratio (figures in docs/notes/codecs.md); the output is
 * plain zlib format, so zlib's uncompress() reads it.
 *
 * When the caller wants a block only if it shrinks, the encoder may give
 * up without deflating bytes that look random (the early abort, below).
 *
 * libdeflate compressors and decompressors are not thread-safe, so each
 * thread caches what it uses: a compressor per level (set-up is cheap but
 * measurable on 4 KiB blocks), a decompressor and a scratch buffer, freed
 * when the thread exits. Nothing is shared between threads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <limits.h>
#include <lz4.h>
#include <zlib.h>

#include "codec.h"

/* gzip-N is libdeflate level N. On every corpus
 * measured (docs/notes/codecs.md) libdeflate N gives a better total ratio
 * than zlib N at 1.5-3x its speed; on single kinds of data it trails zlib
 * only at 5-7 on C headers and at 6 on markup, by at most 0.3 %. So
 * "gzip-N compresses as well as gzip -N" holds in total and within 0.3 %
 * on any kind measured, and gzip-7 runs 1.8x faster than a level-8 map
 * (70 vs 39 MB/s a core on bench/recv's corpus). */

/* Scratch buffers up to this size stay cached; larger ones are per call. */
#define GZIP_SCRATCH_KEEP (2u << 20)

struct gzip_cache {
	struct libdeflate_compressor *comp[10];
	struct libdeflate_decompressor *dec;
	uint8_t *scratch;
	size_t scratch_cap;
};

static pthread_once_t gzip_once = PTHREAD_ONCE_INIT;
static pthread_key_t gzip_key;
static int gzip_key_ok;

static void gzip_cache_free(void *p)
{
	struct gzip_cache *gc = p;

	if (!gc)
		return;
	for (int i = 0; i < 10; i++)
		libdeflate_free_compressor(gc->comp[i]);
	libdeflate_free_decompressor(gc->dec);
	free(gc->scratch);
	free(gc);
}

static void gzip_key_init(void)
{
	gzip_key_ok = pthread_key_create(&gzip_key, gzip_cache_free) == 0;
}

/* This thread's cache, or NULL when none can be had (then callers fall
 * back to a compressor of their own for the one call). */
static struct gzip_cache *gzip_cache_get(void)
{
	struct gzip_cache *gc;

	if (pthread_once(&gzip_once, gzip_key_init) != 0 || !gzip_key_ok)
		return NULL;
	gc = pthread_getspecific(gzip_key);
	if (gc)
		return gc;
	gc = calloc(1, sizeof *gc);
	if (!gc)
		return NULL;
	if (pthread_setspecific(gzip_key, gc) != 0) {
		free(gc);
		return NULL;
	}
	return gc;
}

size_t codec_gzip_bound(size_t lsize)
{
	size_t a, b;

	if (lsize > SIZE_MAX / 2)
		return SIZE_MAX;
	/* zlib's compressBound formula, and libdeflate's own bound for any
	 * compressor; whichever is larger. */
	a = lsize + (lsize >> 12) + (lsize >> 14) + (lsize >> 25) + 13;
	b = libdeflate_zlib_compress_bound(NULL, lsize);
	return a > b ? a : b;
}

/* n bytes of scratch: the thread's cached buffer, or one the caller frees
 * through *own. */
static uint8_t *gzip_scratch(struct gzip_cache *gc, size_t n, uint8_t **own)
{
	uint8_t *p;

	*own = NULL;
	if (gc && gc->scratch_cap >= n)
		return gc->scratch;
	if (gc && n <= GZIP_SCRATCH_KEEP) {
		p = realloc(gc->scratch, n);
		if (!p)
			return NULL;
		gc->scratch = p;
		gc->scratch_cap = n;
		return p;
	}
	return *own = malloc(n);
}

/* The early abort (docs/notes/codecs.md, session 11), in the manner of
 * OpenZFS's zstd early abort: deflate at level 7 spends as long on a block
 * of compressed or random bytes as on text, to find it cannot save the
 * 12.5 % the storage rule asks. A block is judged hopeless when
 *  1. its bytes look uniform: the sum of their squared counts is at most
 *     n^2 / 2^7.5, i.e. a collision entropy of at least 7.5 bits a byte,
 *     so Huffman coding alone could save at most 1/16. A sample of
 *     GZIP_SAMPLE bytes (GZIP_WINDOWS windows spread over the block) is
 *     looked at first, and the whole block only when the sample passes,
 *     so a block that merely has uniform bytes where the sample falls is
 *     still deflated; and
 *  2. lz4 cannot save 1/32 of it either (few repeats for deflate to code).
 * Blocks under GZIP_ABORT_MIN bytes are always deflated: too small to
 * tell. On three corpora measured, no block that deflate would have kept
 * compressed was judged hopeless; a block built to be (bytes of high
 * entropy repeated only in runs of 3, say) is, and is then stored raw. */
#define GZIP_ABORT_MIN 1024u
#define GZIP_ABORT_MAX (16u << 20) /* past ferry's blocks; keeps the sums below */
#define GZIP_SAMPLE 4096u
#define GZIP_WINDOWS 16u

static void gzip_count(uint32_t count[256], const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		count[p[i]]++;
}

/* 1 when n bytes counted in count have a collision entropy of at least
 * 7.5 bits a byte; n <= GZIP_ABORT_MAX = 2^24, so n^2 and 181 times the
 * sum (at most n^2) fit 64 bits. */
static int gzip_uniform(const uint32_t count[256], uint64_t n)
{
	uint64_t sq = 0;
	for (int i = 0; i < 256; i++)
		sq += (uint64_t)count[i] * count[i];
	return sq * 181 <= n * n; /* 2^7.5 = 181.02 */
}

int codec_gzip_hopeless(const void *block, size_t lsize, void *scratch)
{
	const uint8_t *src = block;
	uint32_t count[256] = {0};

	if (lsize < GZIP_ABORT_MIN || lsize > GZIP_ABORT_MAX)
		return 0;
	if (lsize > GZIP_SAMPLE) {
		size_t w = GZIP_SAMPLE / GZIP_WINDOWS, step = (lsize - w) / (GZIP_WINDOWS - 1);
		for (size_t k = 0; k < GZIP_WINDOWS; k++)
			gzip_count(count, src + k * step, w);
		if (!gzip_uniform(count, GZIP_SAMPLE))
			return 0;
		memset(count, 0, sizeof count);
	}
	gzip_count(count, src, lsize);
	if (!gzip_uniform(count, lsize))
		return 0;
	return LZ4_compress_default((const char *)src, (char *)scratch, (int)lsize,
				    (int)(lsize - lsize / 32)) <= 0;
}

int codec_gzip_encode(unsigned level, const void *src, size_t lsize, void *dst,
		      size_t dst_cap, size_t *psize)
{
	struct gzip_cache *gc;
	struct libdeflate_compressor *own = NULL, *comp;
	uint8_t *buf, *own_buf = NULL;
	size_t n, need;
	int r;

	if (level < 1 || level > 9)
		return ferry_err(FERR_UNSUPPORTED, "gzip: no level %u", level);
	gc = gzip_cache_get();
	if (gc && gc->comp[level]) {
		comp = gc->comp[level];
	} else {
		comp = libdeflate_alloc_compressor((int)level);
		if (!comp)
			return ferry_err(FERR_NOMEM, "gzip: no memory for a "
					 "level %u compressor", level);
		if (gc)
			gc->comp[level] = comp;
		else
			own = comp;
	}
	/* libdeflate wants a few bytes of slack past its output (up to 9 in
	 * 1.14), so a block that would fill dst exactly is refused; and it
	 * never gives up early anyway. Short of worst-case room in dst,
	 * compress into scratch and copy, so the 12.5 % rule is decided on
	 * the true size. */
	need = libdeflate_zlib_compress_bound(comp, lsize);
	if (dst_cap >= need) {
		buf = dst;
	} else if (!(buf = gzip_scratch(gc, need, &own_buf))) {
		r = ferry_err(FERR_NOMEM, "gzip: no memory for %zu bytes", need);
		goto out;
	}
	/* A caller with less room than the block itself wants only an
	 * encoding that saves something: give up early where it cannot (buf
	 * is scratch here, need > lsize bytes). */
	if (dst_cap < lsize && codec_gzip_hopeless(src, lsize, buf)) {
		r = -FERR_NOSPACE_DST;
		goto out;
	}
	n = libdeflate_zlib_compress(comp, src, lsize, buf,
				     buf == dst ? dst_cap : need);
	if (n == 0 || n > dst_cap) {
		r = -FERR_NOSPACE_DST;
		goto out;
	}
	if (buf != dst)
		memcpy(dst, buf, n);
	*psize = n;
	r = 0;
out:
	free(own_buf);
	libdeflate_free_compressor(own);
	return r;
}

int codec_gzip_decode(const void *src, size_t psize, void *dst, size_t lsize)
{
	struct gzip_cache *gc;
	struct libdeflate_decompressor *own = NULL, *dec;
	enum libdeflate_result res;
	size_t used = 0;
	int r;

	gc = gzip_cache_get();
	if (gc && gc->dec) {
		dec = gc->dec;
	} else {
		dec = libdeflate_alloc_decompressor();
		if (!dec)
			return ferry_err(FERR_NOMEM, "gzip: no memory for a "
					 "decompressor");
		if (gc)
			gc->dec = dec;
		else
			own = dec;
	}
	/* No actual_out pointer: libdeflate then insists on exactly lsize
	 * bytes (SHORT_OUTPUT / INSUFFICIENT_SPACE otherwise). It also checks
	 * the zlib header and the Adler-32 trailer. */
	res = libdeflate_zlib_decompress_ex(dec, src, psize, dst, lsize, &used,
					    NULL);
	if (res != LIBDEFLATE_SUCCESS) {
		r = ferry_err(FERR_CORRUPT, "gzip: %s",
			      res == LIBDEFLATE_SHORT_OUTPUT ? "block decodes short" :
			      res == LIBDEFLATE_INSUFFICIENT_SPACE ? "block decodes long" :
			      "malformed zlib stream");
		goto out;
	}
	if (used != psize) {
		r = ferry_err(FERR_CORRUPT, "gzip: %zu stray bytes after the zlib "
			      "stream", psize - used);
		goto out;
	}
	r = 0;
out:
	libdeflate_free_decompressor(own);
	return r;
}

/* zlib's inflate decodes the deflate data, raw: the 2-byte header is
 * checked here as zlib checks it, and the Adler-32 trailer with
 * libdeflate's SIMD code, not zlib's byte loop (a tenth of zlib's time on a
 * kept block). Accepts exactly what zlib's inflate() of the whole zlib
 * stream accepts, with the same output (tests/fuzz/fuzz_codec.c checks it
 * against zlib itself). */
int codec_gzip_decode_zlib(const void *src, size_t psize, void *dst, size_t lsize)
{
	const uint8_t *p = src;
	z_stream z;
	int zr, r = 0;
	if (psize > UINT_MAX || lsize > UINT_MAX)
		return ferry_err(FERR_CORRUPT, "gzip: block of %zu/%zu bytes is too large",
				 psize, lsize);
	if (psize < 2)
		return ferry_err(FERR_CORRUPT, "gzip: block decodes short");
	/* RFC 1950: CMF, FLG; what inflate's HEAD state refuses */
	if ((((unsigned)p[0] << 8) | p[1]) % 31 != 0)
		return ferry_err(FERR_CORRUPT, "gzip: incorrect header check");
	if ((p[0] & 0x0f) != Z_DEFLATED)
		return ferry_err(FERR_CORRUPT, "gzip: unknown compression method");
	if ((p[0] >> 4) + 8 > 15)
		return ferry_err(FERR_CORRUPT, "gzip: invalid window size");
	if (p[1] & 0x20) /* inflate stops for a dictionary; uncompress() refuses */
		return ferry_err(FERR_CORRUPT, "gzip: needs a preset dictionary");
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
		return ferry_err(FERR_NOMEM, "gzip: no memory for zlib");
	z.next_in = (Bytef *)(uintptr_t)(p + 2);
	z.avail_in = (uInt)(psize - 2);
	z.next_out = dst;
	z.avail_out = (uInt)lsize;
	zr = inflate(&z, Z_FINISH);
	if (zr != Z_STREAM_END)
		r = ferry_err(FERR_CORRUPT, "gzip: %s",
			      zr == Z_BUF_ERROR && z.avail_out == 0 ? "block decodes long"
			      : zr == Z_BUF_ERROR ? "block decodes short"
			      : z.msg ? z.msg : "malformed zlib stream");
	else if (z.total_out != lsize)
		r = ferry_err(FERR_CORRUPT, "gzip: block decodes short");
	else if (z.avail_in < 4)
		r = ferry_err(FERR_CORRUPT, "gzip: Adler-32 missing");
	else if (z.avail_in > 4)
		r = ferry_err(FERR_CORRUPT, "gzip: %u stray bytes after the zlib stream",
			      z.avail_in - 4);
	else if (libdeflate_adler32(1, dst, lsize) !=
		 ((uint32_t)z.next_in[0] << 24 | (uint32_t)z.next_in[1] << 16 |
		  (uint32_t)z.next_in[2] << 8 | z.next_in[3]))
		r = ferry_err(FERR_CORRUPT, "gzip: incorrect data check");
	inflateEnd(&z);
	return r;
}
