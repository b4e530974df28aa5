/* store/codec_zle.c — zero-length encoding, the ZFS format with n = 64.
 * A control byte c < 64 is followed by c+1 literal bytes; c ≥ 64 stands for
 * c-64+1 zero bytes (1..192). It only squeezes runs of zeros, so it suits
 * mostly-zero blocks (sparse images, padded records), and costs one byte
 * per 64 on data without zeros. */
#include <stdint.h>
#include <string.h>

#include "codec.h"

#define ZLE_N 64                      /* literal runs are 1..ZLE_N bytes */
#define ZLE_MAX_ZEROS (256 - ZLE_N)   /* zero runs are 1..192 bytes */

size_t codec_zle_bound(size_t lsize)
{
	if (lsize > SIZE_MAX / 2)
		return SIZE_MAX;
	/* One control byte per 64 literal bytes, plus a short run at the end;
	 * a literal cut short by zeros is paid for by the zero run. */
	return lsize + lsize / ZLE_N + 2;
}

int codec_zle_encode(const void *src, size_t lsize, void *dst, size_t dst_cap,
		     size_t *psize)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t i = 0, o = 0;

	while (i < lsize) {
		size_t run = 0;
		if (s[i] == 0) {
			while (i + run < lsize && run < ZLE_MAX_ZEROS && s[i + run] == 0)
				run++;
			if (o >= dst_cap)
				return -FERR_NOSPACE_DST;
			d[o++] = (uint8_t)(run - 1 + ZLE_N);
		} else {
			/* A literal run ends at two zeros in a row (worth a zero
			 * run), or at the end; a lone zero stays literal. */
			while (i + run < lsize && run < ZLE_N &&
			       (s[i + run] != 0 ||
				(i + run + 1 < lsize && s[i + run + 1] != 0)))
				run++;
			if (run + 1 > dst_cap - o)
				return -FERR_NOSPACE_DST;
			d[o++] = (uint8_t)(run - 1);
			memcpy(d + o, s + i, run);
			o += run;
		}
		i += run;
	}
	*psize = o;
	return 0;
}

int codec_zle_decode(const void *src, size_t psize, void *dst, size_t lsize)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t i = 0, o = 0;

	while (i < psize) {
		unsigned c = s[i++];
		size_t run;
		if (c < ZLE_N) {
			run = (size_t)c + 1;
			if (run > psize - i)
				return ferry_err(FERR_CORRUPT, "zle: literal run "
						 "past the end of the block");
			if (run > lsize - o)
				return ferry_err(FERR_CORRUPT, "zle: output longer "
						 "than %zu bytes", lsize);
			memcpy(d + o, s + i, run);
			i += run;
		} else {
			run = (size_t)c - ZLE_N + 1;
			if (run > lsize - o)
				return ferry_err(FERR_CORRUPT, "zle: output longer "
						 "than %zu bytes", lsize);
			memset(d + o, 0, run);
		}
		o += run;
	}
	if (o != lsize)
		return ferry_err(FERR_CORRUPT, "zle: decoded %zu bytes, expected %zu",
				 o, lsize);
	return 0;
}
