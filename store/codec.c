/* store/codec.c — codec names, dispatch and the ZFS storage rule. The
 * back ends live in codec_lz4.c, codec_gzip.c and codec_zle.c; no codec
 * library is used here. */
#include <stdint.h>
#include <string.h>

#include "codec.h"

#define CODEC_VALID_VALUES "off, on, lz4, gzip, gzip-1 .. gzip-9, zle"

int codec_parse(const char *s, struct codec_spec *out)
{
	struct codec_spec c = { .id = CODEC_OFF, .level = 0 };

	if (!s)
		return ferry_err(FERR_PROP, "compression: missing value (valid: "
				 CODEC_VALID_VALUES ")");
	if (strcmp(s, "off") == 0) {
		c.id = CODEC_OFF;
	} else if (strcmp(s, "on") == 0 || strcmp(s, "lz4") == 0) {
		c.id = CODEC_LZ4;
	} else if (strcmp(s, "zle") == 0) {
		c.id = CODEC_ZLE;
	} else if (strcmp(s, "gzip") == 0) {
		c.id = CODEC_GZIP;
		c.level = 6;
	} else if (strncmp(s, "gzip-", 5) == 0 && s[5] >= '1' && s[5] <= '9' &&
		   s[6] == '\0') {
		c.id = CODEC_GZIP;
		c.level = (uint8_t)(s[5] - '0');
	} else {
		/* The value may come from a received stream: quote a bounded,
		 * printable prefix only. */
		char shown[65];
		size_t i;
		for (i = 0; s[i] && i < sizeof shown - 1; i++)
			shown[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
		shown[i] = '\0';
		return ferry_err(FERR_PROP, "invalid compression '%s%s' (valid: "
				 CODEC_VALID_VALUES ")", shown, s[i] ? "..." : "");
	}
	*out = c;
	return 0;
}

const char *codec_name(struct codec_spec c)
{
	static const char *const gzip[10] = {
		NULL, "gzip-1", "gzip-2", "gzip-3", "gzip-4",
		"gzip-5", "gzip-6", "gzip-7", "gzip-8", "gzip-9",
	};

	if (!codec_valid(c))
		return "unknown";
	switch (c.id) {
	case CODEC_OFF: return "off";
	case CODEC_LZ4: return "lz4";
	case CODEC_GZIP: return gzip[c.level];
	case CODEC_ZLE: return "zle";
	}
	return "unknown";
}

int codec_equal(struct codec_spec a, struct codec_spec b)
{
	return a.id == b.id && a.level == b.level;
}

int codec_valid(struct codec_spec c)
{
	switch (c.id) {
	case CODEC_OFF:
	case CODEC_LZ4:
	case CODEC_ZLE:
		return c.level == 0;
	case CODEC_GZIP:
		return c.level >= 1 && c.level <= 9;
	}
	return 0;
}

static size_t size_max2(size_t a, size_t b)
{
	return a > b ? a : b;
}

size_t codec_bound(size_t lsize)
{
	size_t b = lsize;

	b = size_max2(b, codec_lz4_bound(lsize));
	b = size_max2(b, codec_gzip_bound(lsize));
	b = size_max2(b, codec_zle_bound(lsize));
	return b;
}

int codec_encode(struct codec_spec c, const void *src, size_t lsize,
		 void *dst, size_t dst_cap, size_t *psize)
{
	if (!codec_valid(c))
		return ferry_err(FERR_UNSUPPORTED, "unknown codec %u level %u",
				 c.id, c.level);
	switch (c.id) {
	case CODEC_OFF:
		if (lsize > dst_cap)
			return -FERR_NOSPACE_DST;
		if (lsize)
			memcpy(dst, src, lsize);
		*psize = lsize;
		return 0;
	case CODEC_LZ4:
		return codec_lz4_encode(src, lsize, dst, dst_cap, psize);
	case CODEC_GZIP:
		return codec_gzip_encode(c.level, src, lsize, dst, dst_cap, psize);
	case CODEC_ZLE:
		return codec_zle_encode(src, lsize, dst, dst_cap, psize);
	}
	return ferry_err(FERR_UNSUPPORTED, "unknown codec %u", c.id);
}

int codec_decode(struct codec_spec c, const void *src, size_t psize,
		 void *dst, size_t lsize)
{
	if (!codec_valid(c))
		return ferry_err(FERR_UNSUPPORTED, "unknown codec %u level %u",
				 c.id, c.level);
	switch (c.id) {
	case CODEC_OFF:
		if (psize != lsize)
			return ferry_err(FERR_CORRUPT, "raw block: %zu bytes, "
					 "expected %zu", psize, lsize);
		if (lsize)
			memcpy(dst, src, lsize);
		return 0;
	case CODEC_LZ4:
		return codec_lz4_decode(src, psize, dst, lsize);
	case CODEC_GZIP:
		return codec_gzip_decode(src, psize, dst, lsize);
	case CODEC_ZLE:
		return codec_zle_decode(src, psize, dst, lsize);
	}
	return ferry_err(FERR_UNSUPPORTED, "unknown codec %u", c.id);
}

int codec_decode_strict(struct codec_spec c, const void *src, size_t psize,
			void *dst, size_t lsize)
{
	if (codec_valid(c) && c.id == CODEC_GZIP)
		return codec_gzip_decode_zlib(src, psize, dst, lsize);
	return codec_decode(c, src, psize, dst, lsize);
}

int codec_keeps(size_t psize, size_t lsize)
{
	return psize <= lsize - lsize / 8;
}

int codec_store_block(struct codec_spec c, const void *src, size_t lsize,
		      void *dst, size_t dst_cap, size_t *psize,
		      enum block_form *form)
{
	size_t keep = lsize - lsize / 8, got = 0;
	int r;

	if (!codec_valid(c))
		return ferry_err(FERR_UNSUPPORTED, "unknown codec %u level %u",
				 c.id, c.level);
	if (c.id == CODEC_OFF) {
		*psize = lsize;
		*form = BLOCK_RAW;
		return 0;
	}
	if (codec_is_zero(src, lsize)) {
		*psize = 0;
		*form = BLOCK_HOLE;
		return 0;
	}
	if (dst_cap < keep)
		return ferry_err(FERR_INVAL, "codec_store_block: dst_cap %zu < %zu",
				 dst_cap, keep);
	/* Room for exactly the largest size worth keeping: an encoder that
	 * cannot fit gives up (lz4 as soon as it overruns), and the block is
	 * stored raw. */
	r = codec_encode(c, src, lsize, dst, keep, &got);
	if (r == -FERR_NOSPACE_DST) {
		*psize = lsize;
		*form = BLOCK_RAW;
		return 0;
	}
	if (r < 0)
		return r;
	if (!codec_keeps(got, lsize)) { /* an encoder overstepping dst_cap */
		*psize = lsize;
		*form = BLOCK_RAW;
		return 0;
	}
	*psize = got;
	*form = BLOCK_COMPRESSED;
	return 0;
}

/* Word-at-a-time with an early exit every 64 bytes: zero blocks are common
 * (sparse files, VM images) and a nonzero one usually fails in the first
 * cache line. memcpy loads keep it alignment- and aliasing-safe; compilers
 * turn them into plain (vector) loads. */
int codec_is_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i = 0;

	for (; i + 64 <= n; i += 64) {
		uint64_t w[8], acc = 0;
		memcpy(w, b + i, sizeof w);
		for (int k = 0; k < 8; k++)
			acc |= w[k];
		if (acc)
			return 0;
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, b + i, sizeof w);
		if (w)
			return 0;
	}
	for (; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}
