/* stream/stream.h — the one public header of stream/: the ferry stream
 * format of docs/ferry-stream.5 (version 1), as I/O-free engines.
 *
 * - An encoder turns record descriptions into bytes appended to an fbuf.
 *   It checks every record against the same rules the decoder applies, so
 *   what it writes always decodes.
 * - A decoder is fed byte chunks of any size (one byte at a time works) and
 *   hands back fully verified records. Its memory is bounded by
 *   STREAM_DECODER_MEM_MAX whatever the stream length.
 * - Sources and sinks are small vtables (fd, memory) with a sticky error.
 * - Resume tokens encode and decode a resume position.
 *
 * stream/ knows nothing of the store: metadata nodes travel as opaque typed
 * byte strings, codecs as their persistent numbers.
 *
 * Errors: 0 or a negative FERR_* code, with a detail message (ferry_errmsg)
 * naming the record position, its type and the field. The decoder keeps
 * -FERR_TRUNCATED, -FERR_CORRUPT, -FERR_UNSUPPORTED and -FERR_LIMIT
 * distinct; the encoder reports caller mistakes as -FERR_INVAL. */
#ifndef FERRY_STREAM_H
#define FERRY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/lib.h"

/* ---- format constants (docs/ferry-stream.5, LIMITS) -------------------- */
/* Version written; a reader takes STREAM_VERSION_MIN..STREAM_VERSION. They
 * differ only in the chain (docs/ferry-stream.5, The chain). */
#define STREAM_VERSION 2
#define STREAM_VERSION_MIN 1
#define STREAM_HDR_LEN 8
#define STREAM_TRAILER_LEN 16
#define STREAM_NODE_MAX (4u << 20)       /* node bytes */
#define STREAM_BLOCK_MAX (1u << 20)      /* lsize, psize */
#define STREAM_NAME_MAX 255              /* dataset@snapshot */
#define STREAM_PROPS_MAX 1024            /* properties per BEGIN/DATASET */
#define STREAM_PROP_NAME_MAX 255
#define STREAM_PROP_VALUE_MAX 8191
#define STREAM_PKG_DATASETS_MAX 65536
#define STREAM_SNAPS_MAX 65536           /* snapshots per DATASET */
#define STREAM_RESUME_MAX (1ull << 48)
/* The largest payload of any record type (a full NODE). */
#define STREAM_PAYLOAD_MAX (36u + STREAM_NODE_MAX)
/* stream_decoder_pull's input chunk: big enough that a record (a WRITE
 * of up to STREAM_BLOCK_MAX) is whole in it far more often than not, so
 * its payload is borrowed from it rather than copied. */
#define STREAM_PULL_CHUNK (1u << 20)
/* Upper bound of a decoder's heap use: one payload, the parsed copy of a
 * BEGIN or DATASET, and the input chunk of stream_decoder_pull. */
#define STREAM_DECODER_MEM_MAX (STREAM_PAYLOAD_MAX + (8u << 20) + STREAM_PULL_CHUNK + 2u)
/* Size of a buffer for a resume token, terminating NUL included. */
#define STREAM_TOKEN_MAX 615

/* Record types: the numbers are the wire values. */
enum stream_type {
	STREAM_BEGIN = 1,
	STREAM_END = 2,
	STREAM_NODE = 3,
	STREAM_WRITE = 4,
	STREAM_WRITE_BYREF = 5,
	STREAM_PACKAGE = 6,
	STREAM_DATASET = 7,
	STREAM_PACKAGE_END = 8,
	/* always SKIPPABLE, and only as record 1 (docs/ferry-stream.5) */
	STREAM_HINT = 9,
};

/* Record header flags. */
enum stream_hdr_flags {
	STREAM_RF_SKIPPABLE = 1 << 0,
};

/* Stream flags of BEGIN and PACKAGE. */
enum stream_flags {
	STREAM_F_COMPRESSED = 1 << 0, /* send -c: WRITEs may carry a codec */
	STREAM_F_PROPS = 1 << 1,      /* send -p: the property list is meaningful */
	STREAM_F_REPLICATE = 1 << 2,  /* send -R: inside a package */
	STREAM_F_RESUMED = 1 << 3,    /* resume position is not 0 */
	/* PACKAGE only (send -R): the DATASETs are the sender's whole tree,
	 * so a forcing receiver destroys what they do not list. */
	STREAM_F_TREE = 1 << 4,
};
#define STREAM_F_BEGIN_ALL 0xfu  /* the bits a BEGIN may have */
#define STREAM_F_ALL 0x1fu       /* the bits a PACKAGE may have */

enum stream_ds_type {
	STREAM_DS_FILESYSTEM = 1,
	STREAM_DS_VOLUME = 2,
};

enum stream_prop_source {
	STREAM_SRC_LOCAL = 1,
	STREAM_SRC_RECEIVED = 2,
	STREAM_SRC_INHERITED = 3,
	STREAM_SRC_DEFAULT = 4,
};

/* Persistent codec numbers, the same as store/codec.h's. */
enum stream_codec {
	STREAM_CODEC_OFF = 0,
	STREAM_CODEC_LZ4 = 1,
	STREAM_CODEC_GZIP = 2, /* level 1..9 */
	STREAM_CODEC_ZLE = 3,
};

/* ---- record descriptions -------------------------------------------------
 * The same structs describe what to encode and what was decoded. Decoded
 * strings are NUL-terminated and, like every pointer in a decoded record,
 * borrowed from the decoder until its next call. */
struct stream_prop {
	const char *name;  /* [a-z][a-z0-9_.:-]*, 1..255 bytes */
	const char *value; /* 0..8191 bytes, no NUL */
	uint8_t source;    /* enum stream_prop_source */
};

struct stream_begin {
	uint16_t version; /* decoded: 1 or 2, the stream's; ignored when encoding */
	uint32_t flags;   /* enum stream_flags */
	uint64_t features_req;
	uint64_t features_opt;
	uint8_t ds_type;  /* enum stream_ds_type */
	uint8_t root_type;
	uint8_t root_hash[FERRY_HASH_LEN];
	uint64_t to_guid;
	uint64_t from_guid;   /* 0: full stream */
	uint64_t creation_ns;
	uint64_t creation_txg;
	uint64_t resume_pos;  /* 0: fresh; else body records already received */
	const char *dataset;  /* full name, pool included */
	const char *snapshot; /* the part after '@' */
	const struct stream_prop *props; /* strictly ascending names */
	size_t nprops;
};

struct stream_node {
	uint8_t type; /* 1..255, defined by the store */
	uint8_t hash[FERRY_HASH_LEN]; /* H(type || data); verified when decoded */
	const uint8_t *data;
	size_t len;
};

struct stream_write {
	uint8_t hash[FERRY_HASH_LEN]; /* H(logical content) */
	uint32_t lsize;
	uint8_t codec; /* enum stream_codec */
	uint8_t level;
	uint32_t psize; /* bytes at data */
	const uint8_t *data;
	/* Decoding only: the CRC-32C of data's psize bytes, which the
	 * decoder computed over them to check the record (a version-2
	 * stream), when has_crc; the encoder ignores both. */
	uint32_t data_crc;
	uint8_t has_crc;
};

struct stream_byref {
	uint8_t hash[FERRY_HASH_LEN];
	uint32_t lsize;
};

struct stream_end {
	uint64_t count; /* records from BEGIN (included) to END (excluded) */
	uint8_t digest[FERRY_HASH_LEN];
};

struct stream_package {
	uint16_t version;
	uint32_t flags; /* REPLICATE and PROPS set, maybe COMPRESSED and TREE */
	uint64_t features_req;
	uint64_t features_opt;
	uint32_t ndatasets;
	const char *top;       /* root of the dataset tree */
	const char *to_snap;   /* snapshot name */
	const char *from_snap; /* "" for a full package */
};

struct stream_snap {
	uint64_t guid;
	uint64_t txg;
	uint64_t creation_ns;
	const char *name;
};

struct stream_dataset {
	uint64_t guid;
	uint8_t ds_type;
	const char *name;
	const struct stream_prop *props;
	size_t nprops;
	const struct stream_snap *snaps; /* oldest first */
	size_t nsnaps;
};

/* What a sender knows that may save a receiver work: never needed to
 * receive the stream, so an older reader skips it. */
struct stream_hint {
	uint64_t size;       /* estimated bytes of the whole stream; 0 unknown; any value */
	uint8_t tried_codec; /* 0, or the codec every codec-off WRITE was tried with */
	uint8_t tried_level; /* its level (0 with tried_codec 0) */
};

struct stream_package_end {
	uint64_t count; /* records before PACKAGE_END */
	uint64_t nsub;  /* substreams */
	uint8_t digest[FERRY_HASH_LEN];
};

struct stream_record {
	enum stream_type type;
	uint64_t index;  /* position in the stream; 0 is the first record */
	uint64_t offset; /* byte offset of the record header */
	uint32_t length; /* payload length */
	/* NODE, WRITE, WRITE_BYREF: number of the record among the body
	 * records of the fresh stream (1, 2, ...; resume position + n in a
	 * resumed one), the value a resume token stores. 0 otherwise. */
	uint64_t seq;
	union {
		struct stream_begin begin;
		struct stream_node node;
		struct stream_write write;
		struct stream_byref byref;
		struct stream_end end;
		struct stream_package package;
		struct stream_dataset dataset;
		struct stream_package_end package_end;
		struct stream_hint hint;
	};
};

/* ---- names ----------------------------------------------------------------- */
/* "BEGIN", "NODE", ...; "UNKNOWN" for other values. Never NULL. */
const char *stream_type_name(unsigned type);
/* "off", "lz4", "gzip-7", "zle" into buf (16 bytes are enough); "?" for an
 * invalid pair. Returns buf. */
const char *stream_codec_name(uint8_t codec, uint8_t level, char *buf, size_t n);
/* 1 when (codec, level) is a pair of docs/ferry-stream.5, else 0. */
int stream_codec_valid(uint8_t codec, uint8_t level);
/* "local", "received", "inherited", "default"; "?" otherwise. */
const char *stream_source_name(uint8_t source);

/* ---- encoder ------------------------------------------------------------------
 * Appends whole records (header, payload, trailer) to an fbuf the caller
 * owns and drains (for instance into a stream_sink). The encoder keeps the
 * chain and the grammar; END and PACKAGE_END counts and digests are its own.
 * On error nothing is appended, the encoder state is unchanged, and the
 * error is -FERR_INVAL (a record the format does not allow, with a detail
 * naming the field), -FERR_LIMIT (a length or count above its maximum, or
 * out's cap reached) or -FERR_NOMEM. */
struct stream_encoder;

enum stream_enc_flags {
	/* For tests and tools that must write invalid streams: skips every
	 * field and grammar check (the chain stays correct) and enables
	 * stream_encode_raw. Never used to send. */
	STREAM_ENC_UNCHECKED = 1 << 0,
	/* Writes format version 1 (the chain hashes every payload byte),
	 * which readers from before version 2 take: golden vectors and
	 * tests of the old format. */
	STREAM_ENC_V1 = 1 << 1,
};

/* Creates an encoder; *out is written only on success. Free with
 * stream_encoder_free (NULL is a no-op). */
int stream_encoder_new(struct stream_encoder **out, unsigned flags) FERRY_WUR;
void stream_encoder_free(struct stream_encoder *e);

/* Writes a BEGIN. b's strings and props are read during the call only. The
 * version is STREAM_VERSION (1 with STREAM_ENC_V1); feature bits must be 0. */
int stream_encode_begin(struct stream_encoder *e, const struct stream_begin *b,
			struct fbuf *out) FERRY_WUR;
/* Writes a NODE of the given type; the encoder computes its hash. */
int stream_encode_node(struct stream_encoder *e, uint8_t type, const void *data,
		       size_t len, struct fbuf *out) FERRY_WUR;
/* Writes a WRITE. w->hash is trusted (the decoder verifies it for codec
 * off; the receiver after decoding otherwise). */
int stream_encode_write(struct stream_encoder *e, const struct stream_write *w,
			struct fbuf *out) FERRY_WUR;
int stream_encode_byref(struct stream_encoder *e, const uint8_t hash[FERRY_HASH_LEN],
			uint32_t lsize, struct fbuf *out) FERRY_WUR;
/* Writes the END of the current BEGIN: count and digest are computed. */
int stream_encode_end(struct stream_encoder *e, struct fbuf *out) FERRY_WUR;
/* A package (send -R): PACKAGE first, then exactly p->ndatasets DATASET
 * records in ascending name order, then BEGIN..END substreams whose flags
 * are the package's without STREAM_F_TREE, then PACKAGE_END (count and substream count are the
 * encoder's). Strings and arrays are read during the call only. */
int stream_encode_package(struct stream_encoder *e, const struct stream_package *p,
			  struct fbuf *out) FERRY_WUR;
int stream_encode_dataset(struct stream_encoder *e, const struct stream_dataset *d,
			  struct fbuf *out) FERRY_WUR;
int stream_encode_package_end(struct stream_encoder *e, struct fbuf *out) FERRY_WUR;
/* Writes a HINT: only as record 1, right after the BEGIN of a single
 * stream or the PACKAGE of a package (-FERR_INVAL elsewhere). A tried
 * codec is a valid (codec, level) pair other than off, or 0/0. */
int stream_encode_hint(struct stream_encoder *e, const struct stream_hint *h,
		       struct fbuf *out) FERRY_WUR;
/* Writes any decoded record again (for NODE the hash is recomputed; for
 * END and PACKAGE_END the encoder's own count and digest are used). */
int stream_encode_record(struct stream_encoder *e, const struct stream_record *rec,
			 struct fbuf *out) FERRY_WUR;
/* STREAM_ENC_UNCHECKED only: frames an arbitrary payload with a correct
 * trailer, nothing else. -FERR_INVAL on a checked encoder. */
int stream_encode_raw(struct stream_encoder *e, uint16_t type, uint16_t flags,
		      const void *payload, size_t len, struct fbuf *out) FERRY_WUR;
/* The size of a whole record (header, payload, trailer) as the encoder
 * writes it, for size estimates (send -n) and byte counts that do not
 * encode: the encoder checks every record it writes against these. */
uint64_t stream_size_begin(const struct stream_begin *b);
uint64_t stream_size_node(size_t len);
uint64_t stream_size_write(uint32_t psize);
uint64_t stream_size_byref(void);
uint64_t stream_size_end(void);
uint64_t stream_size_package(const struct stream_package *p);
uint64_t stream_size_dataset(const struct stream_dataset *d);
uint64_t stream_size_package_end(void);
uint64_t stream_size_hint(void);
/* Records written so far, and the current chain value S(i-1) that the next
 * END would carry (for tools building records by hand). */
uint64_t stream_encoder_records(const struct stream_encoder *e);
void stream_encoder_chain(const struct stream_encoder *e, uint8_t out[FERRY_HASH_LEN]);
/* 1 after the final END or PACKAGE_END, else 0. */
int stream_encoder_done(const struct stream_encoder *e);

/* ---- sources and sinks ----------------------------------------------------------
 * Small vtables. The error is sticky: after the first failure every call
 * returns it again without touching the fd or buffer, so a caller can write
 * many records and check once. tap, when set, hashes every byte that
 * passes. bytes counts them. */
struct stream_source {
	/* Reads 1..n bytes and sets *got, or *got = 0 at end of input. */
	int (*read)(struct stream_source *s, void *buf, size_t n, size_t *got);
	int err;
	uint64_t bytes;
	struct hash_state *tap;
};
struct stream_sink {
	/* Writes all n bytes. */
	int (*write)(struct stream_sink *s, const void *p, size_t n);
	int err;
	uint64_t bytes;
	struct hash_state *tap;
};

/* *got is written only on success; n == 0 reads nothing and returns 0. */
int stream_source_read(struct stream_source *s, void *buf, size_t n, size_t *got) FERRY_WUR;
int stream_sink_write(struct stream_sink *s, const void *p, size_t n) FERRY_WUR;
/* Writes b's bytes to s and empties b (also on error). */
int stream_sink_flush(struct stream_sink *s, struct fbuf *b) FERRY_WUR;

/* An fd, borrowed: never closed. Reads return what read(2) gives. */
struct stream_source_fd {
	struct stream_source base;
	int fd;
};
void stream_source_fd_init(struct stream_source_fd *s, int fd);

/* Memory, borrowed for the source's lifetime. chunk > 0 caps each read
 * (short reads for tests); 0 means no cap. */
struct stream_source_mem {
	struct stream_source base;
	const uint8_t *p;
	size_t len;
	size_t off;
	size_t chunk;
};
void stream_source_mem_init(struct stream_source_mem *s, const void *p, size_t len,
			    size_t chunk);

struct stream_sink_fd {
	struct stream_sink base;
	int fd;
};
void stream_sink_fd_init(struct stream_sink_fd *s, int fd);

/* Appends to an fbuf the caller owns (its max bounds the sink). */
struct stream_sink_mem {
	struct stream_sink base;
	struct fbuf *buf;
};
void stream_sink_mem_init(struct stream_sink_mem *s, struct fbuf *buf);

/* ---- decoder ----------------------------------------------------------------------
 * Verifies each record completely (header limits before any allocation,
 * trailer and chain, fields, hashes of NODEs and of codec-off WRITEs, the
 * grammar, END counts and digests) before handing it out. Skippable
 * records of unknown types are verified and counted but not handed out.
 * After an error the decoder is stuck: every later call returns the same
 * error. */
struct stream_decoder;

/* *out is written only on success. Free with stream_decoder_free (NULL is
 * a no-op). */
int stream_decoder_new(struct stream_decoder **out) FERRY_WUR;
void stream_decoder_free(struct stream_decoder *d);
/* From now on, hands out codec-off WRITE records without checking their
 * data against the block hash; everything else stays checked (chain, fields,
 * NODE hashes). For a caller that verifies every block's content against its
 * hash before using it, on threads of its own (recv's workers): the check
 * then costs one pass over the data instead of two, and not on the thread
 * that reads the stream. */
void stream_decoder_defer_block_hashes(struct stream_decoder *d);

/* Offers n bytes at in. Consumes bytes until a record is complete or the
 * input is used up, and sets *used to the bytes consumed. Returns 1 with
 * *rec filled when a record is complete (offer in + *used next), 0 when
 * all n bytes were consumed without completing one, or a negative error.
 * *used and *rec are written only when the return is not negative. *rec's
 * pointers are valid until the next call on d. Bytes after the final END
 * or PACKAGE_END are -FERR_CORRUPT. */
int stream_decoder_feed(struct stream_decoder *d, const void *in, size_t n, size_t *used,
			struct stream_record *rec) FERRY_WUR;
/* Says the input ended: 0 when the final END or PACKAGE_END was decoded,
 * else -FERR_TRUNCATED naming where the input stopped. */
int stream_decoder_finish(struct stream_decoder *d) FERRY_WUR;
/* Reads src as needed and returns 1 with the next record in *rec, 0 at a
 * clean end (final END seen and src at end of input), or a negative error
 * (src's own error, or the decoder's). Always pass the same src to one
 * decoder. *rec's pointers are valid until the next call on d. */
int stream_decoder_pull(struct stream_decoder *d, struct stream_source *src,
			struct stream_record *rec) FERRY_WUR;

/* Bytes consumed so far, records decoded (skipped ones included),
 * skippable records skipped, and heap bytes held now (at most
 * STREAM_DECODER_MEM_MAX). */
uint64_t stream_decoder_bytes(const struct stream_decoder *d);
uint64_t stream_decoder_records(const struct stream_decoder *d);
uint64_t stream_decoder_skipped(const struct stream_decoder *d);
size_t stream_decoder_footprint(const struct stream_decoder *d);

/* ---- resume tokens (docs/ferry-stream.5, RESUMING) ------------------------------ */
struct stream_token {
	uint32_t flags; /* STREAM_F_COMPRESSED, STREAM_F_PROPS only */
	uint64_t to_guid;
	uint64_t from_guid;
	uint64_t resume_pos; /* 1..STREAM_RESUME_MAX */
	char dataset[STREAM_NAME_MAX + 1];
	char snapshot[STREAM_NAME_MAX + 1];
};

/* Writes t as text ("1-" and lowercase hex) into out (n >= STREAM_TOKEN_MAX
 * is always enough). -FERR_INVAL when t breaks a rule of the format,
 * -FERR_LIMIT when out is too small; out is written only on success. */
int stream_token_encode(const struct stream_token *t, char *out, size_t n) FERRY_WUR;
/* Parses and checks a token from an untrusted source: -FERR_UNSUPPORTED
 * for another token version, -FERR_LIMIT when too long, -FERR_CORRUPT for
 * anything else wrong. *out is written only on success. */
int stream_token_decode(const char *s, struct stream_token *out) FERRY_WUR;

#endif
