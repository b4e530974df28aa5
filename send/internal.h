/* send/internal.h — private to send/: the send's state and what its
 * files share:
 *   emit.c    records out: nodes, blocks (the pipeline for -c and
 *             --compress), sizes, progress, damage reports
 *   walk.c    the target's tree against the base's, post-order
 *   package.c packages (-R, -I): the datasets, their snapshots, substreams
 *   send.c    one substream, properties, the base, the entry point. */
#ifndef FERRY_SEND_INTERNAL_H
#define FERRY_SEND_INTERNAL_H

#include <string.h>
#include <sys/types.h>

#include "send.h"

#define KEY_LEN (1 + FERRY_HASH_LEN) /* 'N'/'B' + hash */
/* every key of a send's sets fits their memory part (store/xfer.c) */
_Static_assert(KEY_LEN <= STORE_HSET_MEM_KEY_MAX, "a send's set keys fit in memory");

/* A send: one stream, its substreams one after the other. */
struct snd {
	struct store_pool *p;
	struct store_reader *rd;
	const struct send_opts *o;
	struct stream_sink *sink;
	struct stream_encoder *enc; /* NULL when dry running */
	struct fbuf out;
	struct send_stats st;
	struct store_hset *sent;    /* objects already in this substream */
	struct store_hset *base;    /* nodes the base holds (first pass) */
	struct store_snap_blocks *base_snap_blocks; /* a snapshot base's blocks (NULL: full
						     * stream or a bookmark base) */
	struct store_hset *base_blocks; /* a bookmark base: the blocks (and nodes) its tree names */
	int collect;                /* first pass: gather, emit nothing */
	uint64_t seq, skip;         /* body records so far; resume: not written up to skip */
	unsigned flags;             /* stream flags */
	struct codec_spec prefer;   /* the codec asked for a stored copy in */
	struct fbuf node;
	uint8_t *lbuf;              /* a logical block */
	const char *cur;            /* snapshot being sent */
	const uint8_t *cur_root;    /* its root node, to name the files a damaged block is in */
	uint64_t last_ns;
	/* -c and --compress: stored blocks are checked (and recompressed) on
	 * the pipeline's workers and their WRITEs encoded in order as they come
	 * back, before any other record */
	struct pipeline *pl;
};

/* The properties a BEGIN or DATASET carries (local and received ones). */
struct plist {
	struct stream_prop *v;
	size_t n, cap;
	int err;
};

static inline void send_key(uint8_t key[KEY_LEN], char kind, const uint8_t *hash)
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, hash, FERRY_HASH_LEN);
}

/* A dataset's snapshots, oldest first. */
struct slist {
	struct store_snap *v;
	size_t n, cap;
};

/* ---- emit.c ---- */
/* Reports progress now and then and (unless dry running) writes what is
 * buffered once it is big, or now with force. */
int send_flush(struct snd *s, int force) FERRY_WUR;
/* Right after the stream's first record: its HINT, if it has anything
 * to say (SEND_ESTIMATE, or --compress's codec). */
int send_emit_hint(struct snd *s) FERRY_WUR;
/* Accounts one record of size bytes (a stream_size_* figure). */
int send_counted(struct snd *s, uint64_t size) FERRY_WUR;
/* 1 when node hash is in the base (first pass) or sent already, else 0. */
int send_node_known(struct snd *s, const uint8_t *hash) FERRY_WUR;
/* Sends node hash unless it is known; every block before it goes first. */
int send_emit_node(struct snd *s, const uint8_t *hash) FERRY_WUR;
/* Sends block hash of len bytes (a WRITE, or a WRITE_BYREF when the base
 * has it) unless this substream sent it. */
int send_emit_block(struct snd *s, const uint8_t *hash, uint64_t len) FERRY_WUR;
/* The pipeline for -c and --compress (flags: the send's), and its drain:
 * every block in flight encoded, before any record that follows them. */
int send_blocks_init(struct snd *s, unsigned flags) FERRY_WUR;
int send_blocks_drain(struct snd *s) FERRY_WUR;

/* ---- walk.c ---- */
/* Walks root (against base root oroot, or NULL) once: with s->collect the
 * first pass (gathers the base's nodes), else the one that sends. */
int send_walk_root(struct snd *s, const uint8_t *root, const uint8_t *oroot) FERRY_WUR;
/* Adds to s->base_blocks every block the tree of root node root names. */
int send_mark_blocks(struct snd *s, const uint8_t *root) FERRY_WUR;

/* ---- package.c ---- */
int send_package(struct snd *s, const struct store_ds *top, const char *to_snap) FERRY_WUR;
int send_slist_load(struct store_pool *p, const struct store_ds *ds, struct slist *l) FERRY_WUR;
/* The snapshot name in "ds@snap", "@snap" or "snap". */
const char *send_snap_part(const char *s);

/* ---- send.c ---- */
int send_plist_load(struct store_pool *p, const struct store_ds *ds, struct plist *l) FERRY_WUR;
void send_plist_release(struct plist *l);
/* Sends snapshot to (against base, or full when base is NULL) as one
 * BEGIN..END; props (may be NULL) go into the BEGIN. base_mark: base is a
 * bookmark. resume: the body records not to write again. */
int send_substream(struct snd *s, const struct store_snap *to, const struct store_snap *base,
		   int base_mark, const struct plist *props, uint64_t resume) FERRY_WUR;

#endif
