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
 * gzip-1 .. gzip-9, zle; exact, case-sensitive match. Returns -FERR_PROP for
 * anything else, with a detail message listing the valid values; *out is
 * written only on success. */
int codec_parse(const char *s, struct codec_spec *out) FERRY_WUR;
/* Canonical block-codec name: "off", "lz4", "gzip-6", "zle"; a static string,
 * "unknown" when !codec_valid(c). */
const char *codec_name(struct codec_spec c);
int codec_equal(struct codec_spec a, struct codec_spec b);
/* 1 when (id, level) is a codec this build knows. */
int codec_valid(struct codec_spec c);

/* Worst-case encoded size for lsize bytes under any codec (≥ lsize);
 * SIZE_MAX if that does not fit in a size_t. */
size_t codec_bound(size_t lsize);

/* Raw encode: compresses src into dst. Returns -FERR_NOSPACE_DST when the
 * output would exceed dst_cap (lz4 gives up early rather than finishing),
 * sets *psize on success. CODEC_OFF copies. -FERR_UNSUPPORTED when
 * !codec_valid(c); -FERR_LIMIT when lsize is beyond the codec (lz4: 2 GB).
 * Thread-safe: any number of threads may encode and decode concurrently.
 * The output decodes with codec_decode; gzip output is a zlib stream that
 * zlib's uncompress() accepts. */
int codec_encode(struct codec_spec c, const void *src, size_t lsize,
		 void *dst, size_t dst_cap, size_t *psize) FERRY_WUR;

/* Decodes exactly lsize bytes into dst. Any malformed input, or output of a
 * different length, is -FERR_CORRUPT; never reads or writes out of bounds.
 * psize must be the exact encoded size: bytes after the encoded data are
 * corrupt too (ferry's psize is exact, unlike ZFS's sector-rounded one).
 * One leniency: for gzip, libdeflate remaps a few invalid deflate codings
 * (an incomplete Huffman code, a code-length run past its table) instead of
 * refusing them; such a block still has to pass the Adler-32 check, so the
 * output is what the writer compressed. -FERR_UNSUPPORTED when
 * !codec_valid(c) (e.g. a newer codec id read from a pack). dst contents
 * are unspecified on failure. */
int codec_decode(struct codec_spec c, const void *src, size_t psize,
		 void *dst, size_t lsize) FERRY_WUR;

/* codec_decode without the gzip leniency: a gzip payload is decoded by zlib
 * itself, so a block accepted here is one any zlib reader accepts. Used
 * where a foreign payload is about to be stored as it is (recv keeping a
 * block already encoded with the receiver's codec); slower for gzip. */
int codec_decode_strict(struct codec_spec c, const void *src, size_t psize,
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
 *  - otherwise → BLOCK_RAW; so is, under gzip, a block the early abort
 *    judges hopeless (codec_gzip_hopeless), without deflate being tried.
 * dst_cap must be at least lsize − lsize/8 (lsize is always enough), else
 * -FERR_INVAL; the encoder gets that much room and no more, so lz4 gives up
 * early on incompressible data. For BLOCK_RAW and BLOCK_HOLE dst is not
 * meaningful: the caller stores src itself, or nothing; *psize is then
 * lsize (raw) or 0 (hole). An lsize of 0 is a hole unless c is off. */
int codec_store_block(struct codec_spec c, const void *src, size_t lsize,
		      void *dst, size_t dst_cap, size_t *psize,
		      enum block_form *form) FERRY_WUR;

/* 1 when a block of lsize bytes encoded to psize bytes is kept compressed:
 * psize ≤ lsize − lsize/8, ZFS's "saves at least 12.5 %" rule (with its
 * integer rounding: a 7-byte block is kept at psize 7). */
int codec_keeps(size_t psize, size_t lsize);

/* 1 when all n bytes are zero (n = 0 included). */
int codec_is_zero(const void *p, size_t n);

/* ---- back ends, one per store/codec_<name>.c -----------------------------
 * Same contracts as codec_encode/codec_decode for one codec; callers go
 * through those. Exported for codec.c and the unit tests. */
size_t codec_lz4_bound(size_t lsize);
int codec_lz4_encode(const void *src, size_t lsize, void *dst, size_t dst_cap,
		     size_t *psize) FERRY_WUR;
int codec_lz4_decode(const void *src, size_t psize, void *dst,
		     size_t lsize) FERRY_WUR;
size_t codec_gzip_bound(size_t lsize);
/* 1 when deflate is not worth trying on the block: its bytes look uniform
 * (a collision entropy of at least 7.5 bits a byte, in a sample and in the
 * whole block) and lz4 cannot save 1/32 of it; 0 for a block under 1 KiB
 * or over 16 MiB. A heuristic: a block built for it may be judged
 * hopeless although deflate would save 1/8 of it. codec_gzip_encode gives up
 * with -FERR_NOSPACE_DST on such a block when dst_cap < lsize (a caller
 * that wants only a saving encoding: codec_store_block). scratch: room for
 * lsize bytes, overwritten. */
int codec_gzip_hopeless(const void *block, size_t lsize, void *scratch);
int codec_gzip_encode(unsigned level, const void *src, size_t lsize, void *dst,
		      size_t dst_cap, size_t *psize) FERRY_WUR;
int codec_gzip_decode_zlib(const void *src, size_t psize, void *dst,
			   size_t lsize) FERRY_WUR;
int codec_gzip_decode(const void *src, size_t psize, void *dst,
		      size_t lsize) FERRY_WUR;
size_t codec_zle_bound(size_t lsize);
int codec_zle_encode(const void *src, size_t lsize, void *dst, size_t dst_cap,
		     size_t *psize) FERRY_WUR;
int codec_zle_decode(const void *src, size_t psize, void *dst,
		     size_t lsize) FERRY_WUR;

#endif
