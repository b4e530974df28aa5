/* store/codec.h — block codecs with ZFS storage rules. Included by
 * store/store.h; codec libraries (liblz4, zlib, libdeflate) appear only in
 * store/codec*.c. */
#ifndef FERRY_STORE_CODEC_H
#define FERRY_STORE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include "../lib/lib.h"

/* Numeric ids are persisted (pack headers, streams): never renumber. */
enum codec_id {
	CODEC_OFF = 0,  /* raw bytes */
	CODEC_LZ4 = 1,  /* ZFS-style lz4: 4-byte big-endian length, then an lz4 block */
	CODEC_GZIP = 2, /* zlib stream format (RFC 1950), level 1..9 */
	CODEC_ZLE = 3,  /* zero-length encoding as in ZFS (n = 64) */
};

/* A codec and its level; level is 1..9 for gzip and 0 otherwise. */
struct codec_spec {
	uint8_t id;
	uint8_t level;
};

/* Parses a compression property value: off, on (= lz4), lz4, gzip (= gzip-6),
 * gzip-1 .. gzip-9, zle. Returns -FERR_PROP for anything else. */
int codec_parse(const char *s, struct codec_spec *out) FERRY_WUR;
/* Canonical block-codec name: "off", "lz4", "gzip-6", "zle". */
const char *codec_name(struct codec_spec c);
int codec_equal(struct codec_spec a, struct codec_spec b);
/* 1 when (id, level) is a codec this build knows. */
int codec_valid(struct codec_spec c);

/* Worst-case encoded size for lsize bytes under any codec. */
size_t codec_bound(size_t lsize);

/* Raw encode: compresses src into dst. Returns -FERR_NOSPACE_DST when the
 * output would exceed dst_cap (lz4 gives up early rather than finishing),
 * sets *psize on success. CODEC_OFF copies. */
int codec_encode(struct codec_spec c, const void *src, size_t lsize,
		 void *dst, size_t dst_cap, size_t *psize) FERRY_WUR;

/* Decodes exactly lsize bytes into dst. Any malformed input, or output of a
 * different length, is -FERR_CORRUPT; never reads or writes out of bounds. */
int codec_decode(struct codec_spec c, const void *src, size_t psize,
		 void *dst, size_t lsize) FERRY_WUR;

enum block_form {
	BLOCK_HOLE = 0,       /* all zero: nothing stored */
	BLOCK_RAW = 1,        /* stored uncompressed (codec off) */
	BLOCK_COMPRESSED = 2, /* dst[0..*psize) encoded with the codec */
};

/* The ZFS storage rule for one logical block under policy c:
 *  - all-zero and c is not off → BLOCK_HOLE;
 *  - c is off → BLOCK_RAW;
 *  - encoded size ≤ lsize − lsize/8 → BLOCK_COMPRESSED, *psize set;
 *  - otherwise → BLOCK_RAW.
 * dst must hold at least lsize bytes. For BLOCK_RAW dst is not written:
 * the caller stores src itself. */
int codec_store_block(struct codec_spec c, const void *src, size_t lsize,
		      void *dst, size_t dst_cap, size_t *psize,
		      enum block_form *form) FERRY_WUR;

/* 1 when all n bytes are zero. */
int codec_is_zero(const void *p, size_t n);

#endif
