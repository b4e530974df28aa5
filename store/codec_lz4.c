/* store/codec_lz4.c — lz4 in the ZFS layout: a 4-byte big-endian length of
 * the lz4 block, then the block from LZ4_compress_default. */
#include <limits.h>
#include <stdint.h>
#include <lz4.h>

#include "codec.h"

#define LZ4_HDR 4

size_t codec_lz4_bound(size_t lsize)
{
	if (lsize > SIZE_MAX / 2)
		return SIZE_MAX;
	/* LZ4_COMPRESSBOUND without its 2 GB cut-off. */
	return LZ4_HDR + lsize + lsize / 255 + 16;
}

int codec_lz4_encode(const void *src, size_t lsize, void *dst, size_t dst_cap,
		     size_t *psize)
{
	uint8_t *d = dst;
	size_t room;
	int n;

	if (lsize > LZ4_MAX_INPUT_SIZE)
		return ferry_err(FERR_LIMIT, "lz4: block of %zu bytes is too large",
				 lsize);
	if (dst_cap <= LZ4_HDR)
		return -FERR_NOSPACE_DST;
	room = dst_cap - LZ4_HDR;
	if (room > INT_MAX)
		room = INT_MAX;
	/* With less room than LZ4_compressBound, lz4 runs in limited-output
	 * mode and stops as soon as the output would not fit. */
	n = LZ4_compress_default(src, (char *)d + LZ4_HDR, (int)lsize, (int)room);
	if (n <= 0)
		return -FERR_NOSPACE_DST;
	d[0] = (uint8_t)((unsigned)n >> 24);
	d[1] = (uint8_t)((unsigned)n >> 16);
	d[2] = (uint8_t)((unsigned)n >> 8);
	d[3] = (uint8_t)n;
	*psize = LZ4_HDR + (size_t)n;
	return 0;
}

int codec_lz4_decode(const void *src, size_t psize, void *dst, size_t lsize)
{
	const uint8_t *s = src;
	uint32_t clen;
	int n;

	if (psize < LZ4_HDR)
		return ferry_err(FERR_CORRUPT, "lz4: block of %zu bytes has no header",
				 psize);
	clen = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 |
	       (uint32_t)s[2] << 8 | (uint32_t)s[3];
	/* ZFS tolerates slack after the lz4 block because its psize is rounded
	 * up to sectors; ferry's psize is exact, so the length must match. */
	if (clen != psize - LZ4_HDR)
		return ferry_err(FERR_CORRUPT, "lz4: header says %u bytes, block "
				 "holds %zu", clen, psize - LZ4_HDR);
	if (clen > INT_MAX || lsize > INT_MAX)
		return ferry_err(FERR_CORRUPT, "lz4: block too large");
	n = LZ4_decompress_safe((const char *)s + LZ4_HDR, dst, (int)clen,
				(int)lsize);
	if (n < 0)
		return ferry_err(FERR_CORRUPT, "lz4: malformed block");
	if ((size_t)n != lsize)
		return ferry_err(FERR_CORRUPT, "lz4: decoded %d bytes, expected %zu",
				 n, lsize);
	return 0;
}
