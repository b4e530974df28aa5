/* recv/internal.h — private to recv/: the receive's state and the stages
 * its files implement, in the order a substream meets them:
 *   plan.c    names, the dataset's snapshots against the BEGIN, -F, resume
 *   body.c    the records between BEGIN and END: nodes checked, blocks queued
 *   blocks.c  the storage rule on the pipeline's workers, blocks stored in order
 *   verify.c  the walk of the new tree at END
 *   commit.c  the snapshot, its dataset, -F's changes; recv -s's partial state
 *   props.c   received properties and the codec blocks are stored with
 *   package.c DATASET records, -F's destruction of what the sender no longer has
 *   recv.c    the entry points: one substream, a stream, abort, token. */
#ifndef FERRY_RECV_INTERNAL_H
#define FERRY_RECV_INTERNAL_H

#include <sys/types.h>

#include "recv.h"

#define KEY_LEN (1 + FERRY_HASH_LEN)          /* 'N'/'B' + hash */
#define VKEY_LEN (1 + FERRY_HASH_LEN + 8)     /* 'L' + hash + span */
/* In an objs value (a node type, a block size of at most STREAM_BLOCK_MAX):
 * the walk at END reached the object (recv/verify.c). */
#define RECV_REACHED (1 << 30)
/* every key of a receive's sets fits their memory part (store/xfer.c) */
_Static_assert(KEY_LEN <= STORE_HSET_MEM_KEY_MAX && VKEY_LEN <= STORE_HSET_MEM_KEY_MAX,
	       "a receive's set keys fit in memory");

/* Blocks on the workers, in stream order: many small blocks ride in one
 * job (up to RJOB_ITEMS, and RJOB_BYTES of scratch), so a stream of small
 * files costs a thread hand-off per job, not per block, and the jobs in
 * flight are of a like size (no worker idles behind one large block at
 * the head while the slots behind it are done). A block larger than
 * RJOB_BYTES goes alone. A job's buffers grow to what its blocks need: a
 * slot holds at most RJOB_BYTES, or the one block larger. RJOB_BYTES takes eight
 * blocks of 128 KiB (8 x codec_bound 133,122 = 1,064,976 bytes; seven stay
 * under the three quarters that send a job off), so that their hashes are
 * computed together in hash_blake2b_many's eight lanes. */
#define RJOB_ITEMS 16
#define RJOB_BYTES ((size_t)1280 << 10)
struct rblk {
	uint8_t hash[FERRY_HASH_LEN];
	uint32_t lsize, psize;
	struct codec_spec in, c;
	int tried;                  /* logical, tried with c by the sender: stored raw */
	int has_crc;                /* crc is the stream's CRC-32C of its psize bytes */
	uint32_t crc;
	size_t off, soff;           /* its payload in data, its scratch in s1 and s2 */
	struct store_block blk;
};
struct rjob {
	unsigned n, nok;            /* blocks; how many the rule took before a failure */
	struct rblk it[RJOB_ITEMS];
	uint8_t *data, *s1, *s2;
	size_t cap, scap;           /* of data; of s1 and s2 each */
	size_t used, sused;
};

/* A dataset a dry run pretends to have received into. */
struct dryds {
	char name[STORE_NAME_MAX + 1];
	uint64_t guid;
};

/* One DATASET of a package, copied out of the decoder. */
struct pkgds {
	char *name;
	uint64_t guid;
	struct stream_prop *props;
	size_t nprops;
	uint64_t *snap_guids;
	size_t nsnaps;
};

struct rcv {
	struct store_pool *p;
	const struct recv_opts *o;
	const char *target;
	struct stream_decoder *dec;
	struct stream_source *in;
	struct store_writer *w;
	struct store_pnodes *pn;
	struct store_hset *objs;    /* this substream's objects: 'N'/'B' + hash → type/lsize,
				     * | RECV_REACHED once the walk at END reached it */
	struct store_hset *seen;    /* walk: the pool's blocks it referenced, the
				     * blocklists and directories it walked */
	struct store_hset *dry;     /* -n: objects of earlier substreams */
	struct pipeline *pl;        /* the receive rule's workers */
	struct rjob *cur;           /* the job being filled, not yet submitted */
	struct recv_stats st, tot;
	uint64_t objs_n, reached, last_seq;
	uint64_t sub_start;         /* decoder bytes before this substream's BEGIN */
	struct codec_spec tried;    /* the stream's HINT: codec-off WRITEs were tried
				     * with this (id CODEC_OFF: no claim) */
	int dryrun;
	int shallow;                /* verify: the pool's nodes are not opened */
	struct node_twin *vold;     /* verify, shallow: the base's directories on the path */
	/* package */
	int in_pkg;
	uint32_t pkg_flags;
	int atomic;                 /* -F: the package commits as one transaction */
	int tx;                     /* ... which is open */
	char pkg_top[STORE_NAME_MAX + 1];
	char top_local[STORE_NAME_MAX + 1]; /* pkg_top's local name: where -o applies */
	struct pkgds *pds;
	size_t npds, cappds;
	struct dryds *dds;
	size_t ndds, capdds;
	int depth;
	struct store_quota_room quota; /* this substream's room (recv_sub_quota) */
};

struct snaps {
	struct store_snap *v;
	size_t n, cap;
};

/* One substream being received: what its BEGIN asks for, checked against
 * the pool before its body is read. */
struct sub {
	const struct stream_begin *b;
	const struct stream_prop *props;
	size_t nprops;
	char dsname[STORE_NAME_MAX + 1], snapname[STORE_NAME_MAX + 1];
	char full[2 * STORE_NAME_MAX + 2];
	struct store_ds ds;
	int exists;                 /* ds is an existing dataset */
	struct snaps sl;            /* its snapshots, oldest first */
	ssize_t rollback_to;        /* -F: roll back to sl.v[rollback_to] first */
	int destroy_all;            /* -F of a full stream: sl goes */
	int partial;                /* this resumes a partial receive */
	int skip;                   /* a package's snapshot the dataset has (same guid) */
	int have_base;              /* an incremental's base snapshot, in sl: */
	int64_t base_id;
	uint8_t base_root[FERRY_HASH_LEN];
	struct codec_spec c;        /* what its blocks are stored with */
};

/* ---- plan.c ---- */
/* The local name of dataset sent (as -d/-e and a package's top say) in out. */
int recv_map_name(struct rcv *r, const char *sent, char *out, size_t n) FERRY_WUR;
/* store_snap_iter callback gathering snapshots into a struct snaps. */
int recv_snaps_cb(struct store_pool *p, const struct store_snap *s, void *arg);
/* -n: records that name now has the snapshot of guid. */
int recv_dry_note(struct rcv *r, const char *name, uint64_t guid) FERRY_WUR;
/* Everything that can refuse substream s before its body is read: names,
 * the dataset's snapshots against the stream's guids, the base of an
 * incremental, what -F must undo, the codec its blocks get. */
int recv_sub_plan(struct rcv *r, struct sub *s) FERRY_WUR;
/* A partial receive of the dataset: only the stream that resumes it may
 * come, and then what arrived before is taken up again. */
int recv_sub_resume(struct rcv *r, struct sub *s) FERRY_WUR;

/* ---- body.c ---- */
/* The stream's HINT (record 1): its estimate to o->estimate, its tried
 * codec kept for the blocks. */
void recv_hint(struct rcv *r, const struct stream_hint *h);
void recv_key(uint8_t *key, char kind, const uint8_t *hash);
/* code with "what <first 16 hex digits of hash>". */
int recv_hash_err(int code, const char *what, const uint8_t *hash);
/* 1 with *lsize when block hash is in this stream, an earlier one (dry
 * run) or the pool; else 0. */
int recv_have_block(struct rcv *r, const uint8_t *hash, uint32_t *lsize) FERRY_WUR;
/* 0 when node hash of that type is in this stream, an earlier one (dry
 * run) or the pool; else -FERR_CORRUPT, "dangling reference" or
 * "reference of the wrong type" naming it (body.c). */
int recv_need_node(struct rcv *r, const uint8_t *hash, int type) FERRY_WUR;
/* The records between BEGIN and END. */
int recv_sub_body(struct rcv *r, struct sub *s) FERRY_WUR;
/* The records between BEGIN and END of a substream that is skipped: read
 * (the decoder checks framing, chain and the END digest), nothing kept. */
int recv_sub_skip(struct rcv *r) FERRY_WUR;

/* ---- blocks.c ---- */
int recv_blocks_init(struct rcv *r) FERRY_WUR;
/* Queues WRITE w for the storage rule under codec c; tried: w is logical
 * content the sender tried with exactly c (stored raw, hash checked). */
int recv_block_submit(struct rcv *r, const struct stream_write *w, struct codec_spec c,
		      int tried) FERRY_WUR;
/* Every queued block stored (or the first failure, which stays). */
int recv_blocks_drain(struct rcv *r) FERRY_WUR;
/* Drops the blocks in flight and the job being filled (after a failure). */
void recv_blocks_cancel(struct rcv *r);

/* ---- verify.c ---- */
/* After END: every block stored, the whole new tree walked, and every
 * object of the stream reached by that walk. */
int recv_sub_verify(struct rcv *r, struct sub *s) FERRY_WUR;

/* ---- commit.c ---- */
/* recv -F of a package: opens the one transaction it commits in. */
int recv_tx_open(struct rcv *r) FERRY_WUR;
/* Creates the dataset s brings (with -o, and a volume's size). */
int recv_sub_create(struct rcv *r, struct sub *s, int type, int with_volsize) FERRY_WUR;
/* Commits verified substream s and all it changes, in one transaction. */
int recv_sub_commit(struct rcv *r, struct sub *s) FERRY_WUR;
/* Before s's body: the room the quotas on its dataset's path leave it
 * (store_quota_room, after what -F will free and a resumed partial
 * receive's blocks). */
int recv_sub_quota(struct rcv *r, struct sub *s) FERRY_WUR;
/* In the body: -FERR_QUOTA once the block bytes the substream stored pass
 * that room, so a receive over a quota stops early, not at its commit. */
int recv_quota_check(const struct rcv *r) FERRY_WUR;
/* recv -s, after err in the body: keeps what arrived whole. Returns err,
 * with a detail that says how to resume. */
int recv_save_partial(struct rcv *r, struct sub *s, int err);

/* ---- props.c ---- */
/* Records the stream's properties pv as received (and -o's as local);
 * with replace (the stream carries the sender's whole set) the received
 * values it no longer names go first. created: this receive made ds, with
 * -o's set-at-creation properties, which are then not set again. */
int recv_apply_props(struct rcv *r, const struct store_ds *ds, const struct stream_prop *pv,
		     size_t n, int replace, int created) FERRY_WUR;
/* 1 when recv -o's properties are set on dataset name: every dataset of
 * a single stream, the top one of a package (the rest inherit, as zfs). */
int recv_sets_here(const struct rcv *r, const char *name);
/* The compression blocks of ds (or of a new dataset named name) get. */
int recv_target_codec(struct rcv *r, const char *name, const struct store_ds *ds,
		      const struct stream_prop *pv, size_t n, struct codec_spec *c) FERRY_WUR;
/* volsize (and volblocksize, *vbs_s or NULL) of a new volume. */
int recv_volume_props(struct rcv *r, const struct sub *s, char *vs, size_t vsn,
		      const char **vbs_s) FERRY_WUR;

/* ---- package.c ---- */
/* Receives the rest of a package, whose PACKAGE record is pk. */
int recv_package(struct rcv *r, const struct stream_package *pk) FERRY_WUR;
/* -F, once the package verified to its end: what the sender no longer has goes. */
int recv_pkg_destroy_tree(struct rcv *r) FERRY_WUR;
int recv_pkg_prune(struct rcv *r) FERRY_WUR;
/* An incremental substream of a package whose dataset want is missing,
 * as zfs receives one: the dataset the sender renamed since the base is
 * found below the target, among those no DATASET record lands on, by a
 * snapshot of guid from_guid, and renamed to want (with its descendants;
 * inside the package's transaction when it has one). 1 when renamed, 0
 * when there is none (or want's parent is missing), or a negative FERR_*. */
int recv_pkg_follow_rename(struct rcv *r, const char *want, uint64_t from_guid) FERRY_WUR;
void recv_pkg_free(struct rcv *r);

/* ---- recv.c ---- */
/* Copies of a BEGIN's strings and properties, which the decoder reuses. */
struct begin_copy {
	struct stream_begin b;
	char ds[STREAM_NAME_MAX + 1], snap[STREAM_NAME_MAX + 1];
	struct stream_prop *props;
	size_t nprops;
};
int recv_begin_copy(struct begin_copy *c, const struct stream_begin *b) FERRY_WUR;
void recv_begin_copy_free(struct begin_copy *c);
/* Reads one substream after its BEGIN (copied in b) and commits it. */
int recv_substream(struct rcv *r, const struct stream_begin *b, const struct stream_prop *props,
		   size_t nprops) FERRY_WUR;

#endif
