/* stream/internal.h — private to stream/: the checks that the encoder and
 * the decoder share, so that what one writes the other accepts. */
#ifndef FERRY_STREAM_INTERNAL_H
#define FERRY_STREAM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

/* Fixed parts and limits of each payload (docs/ferry-stream.5). */
#define BEGIN_FIXED 120u
#define BEGIN_MAX (1u << 20)
#define END_LEN 40u
#define NODE_FIXED 36u
#define WRITE_FIXED 48u
#define BYREF_LEN 40u
#define PACKAGE_FIXED 40u
#define PACKAGE_MAX 1024u
#define DATASET_FIXED 24u
#define DATASET_MAX (4u << 20)
#define PKGEND_LEN 48u
#define HINT_LEN 16u
#define PROP_FIXED 4u
#define SNAP_FIXED 25u
/* Parsed copy of a BEGIN or DATASET: arrays, sort index and strings. */
#define AUX_MAX (8u << 20)

#define BEGIN_MAGIC "FERRYSTM"
#define PACKAGE_MAGIC "FERRYPKG"
#define CHAIN_IV_V1 "ferry-stream-v1"
#define CHAIN_IV_V2 "ferry-stream-v2"
/* Feature bits this implementation knows (none in versions 1 and 2). */
#define FEATURES_REQ_KNOWN ((uint64_t)0)

/* Where a check happens, for the detail message, and which code a broken
 * rule gets: FERR_CORRUPT in the decoder, FERR_INVAL in the encoder. */
struct vctx {
	uint64_t index;
	unsigned type;
	int bad;
};

/* Records "record <index> (<type>): <message>" and returns -code, or
 * -c->bad when code is 0. */
int vfail(const struct vctx *c, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);

/* Header checks, before any allocation: flags, type, length bounds, and
 * for record 0 the type. Sets *skip for a skippable unknown type. */
int stream_check_header(const struct vctx *c, uint16_t type, uint16_t flags, uint32_t len,
			int *skip) FERRY_WUR;
/* Magic and version of a first record (BEGIN or PACKAGE), checked before
 * its trailer so another version is unsupported rather than corrupt. */
int stream_check_first(const struct vctx *c, const uint8_t *p, size_t len) FERRY_WUR;
/* What stream_parse checks beyond fields: the hash of a NODE against its
 * bytes, the hash of a codec-off WRITE against its data. */
enum { STREAM_VERIFY_NODES = 1 << 0, STREAM_VERIFY_BLOCKS = 1 << 1 };
/* Parses and checks a complete payload of a known type into rec (type,
 * length and the union member). Strings and arrays of BEGIN, PACKAGE and
 * DATASET go to aux (reset first). verify: the STREAM_VERIFY_* checks to
 * make. */
int stream_parse(const struct vctx *c, const uint8_t *p, uint32_t len, int verify,
		 struct fbuf *aux, struct stream_record *rec) FERRY_WUR;

enum grammar_state { G_START, G_DATASETS, G_SUBS, G_BODY, G_DONE };

struct stream_grammar {
	enum grammar_state state;
	int in_pkg;
	uint32_t pkg_flags;
	uint32_t pkg_ndatasets;
	uint32_t pkg_seen;
	uint64_t nsub;
	char top[STREAM_NAME_MAX + 1];
	char last_ds[STREAM_NAME_MAX + 1];
	/* the open substream */
	uint32_t flags;
	uint64_t begin_index;
	uint64_t resume_pos;
	uint64_t from_guid;
	uint64_t body;
	uint8_t root_type;
	uint8_t root_hash[FERRY_HASH_LEN];
	int last_is_root;
};

void stream_grammar_init(struct stream_grammar *g);
/* Checks rec's place in the stream and advances; sets rec->seq for body
 * records. On error g may be partly advanced: callers that go on after an
 * error step a copy. END and PACKAGE_END counts are checked here, digests
 * by the caller. */
int stream_grammar_step(struct stream_grammar *g, const struct vctx *c,
			struct stream_record *rec) FERRY_WUR;
/* 1 after the final END or PACKAGE_END. */
int stream_grammar_done(const struct stream_grammar *g);

/* S(-1) of a stream of this version (any version but 2 gets version 1's:
 * only an unchecked encoder writes another, and readers refuse it before
 * its trailer). */
void stream_chain_iv(unsigned version, uint8_t out[FERRY_HASH_LEN]);
/* How many payload bytes of a record of this type go into the chain as
 * they are; the rest enter as the CRC-32C of those bytes (4 bytes, LE).
 * Version 2's WRITE and NODE: their fixed part, which holds the hash that
 * names the rest. Everything else: SIZE_MAX (the whole payload). */
size_t stream_chain_prefix(unsigned version, uint16_t type);
/* S(i) from S(i-1), a record's 8 header bytes and its len payload bytes. */
void stream_chain_record(unsigned version, const uint8_t prev[FERRY_HASH_LEN],
			 const uint8_t *hdr, const uint8_t *payload, size_t len,
			 uint8_t out[FERRY_HASH_LEN]);

/* Name rules shared with resume tokens; 0 or -1 with a reason in why. */
int stream_name_dataset(const uint8_t *p, size_t n, char *why, size_t wn);
int stream_name_snapshot(const uint8_t *p, size_t n, char *why, size_t wn);

#endif
