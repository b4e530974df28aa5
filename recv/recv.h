/* recv/recv.h — the one public header of recv/: a ferry stream → a pool,
 * under the receive rule of DESIGN.md. For every block, with C the
 * receiving dataset's effective compression (after -o):
 *   - a logical block is compressed with C;
 *   - a block encoded exactly as C is stored as it is, after its hash is
 *     checked (decoded once, never re-encoded);
 *   - a block encoded otherwise is decoded, checked and re-encoded with C.
 * Received properties are recorded with source "received"; the sender's
 * storage policy (compression, recordsize) and its source path never are,
 * unless asked (-o, --keep-source-compression).
 *
 * Every node is checked as it arrives (hash by the decoder, then the
 * store's strict node decoders, and every child it names must be in the
 * stream so far or in the pool); at END the whole new tree is walked once
 * (shared subtrees once), spans and types checked, and every object of the
 * stream must have been reached. Only then is the snapshot committed, in
 * one catalogue transaction: a truncated, corrupt, reordered or replayed
 * stream leaves the target as it was.
 *
 * recv/ uses lib, stream and store; it never prints or exits. */
#ifndef FERRY_RECV_H
#define FERRY_RECV_H

#include <stdint.h>

#include "../lib/lib.h"
#include "../store/store.h"
#include "../stream/stream.h"

enum recv_flags {
	RECV_FORCE = 1 << 0,      /* -F: roll back to the base; with a package, destroy
				   * snapshots the sender no longer has and, with a
				   * TREE package (send -R), datasets below the target
				   * it does not list; the package is all or nothing */
	RECV_RESUMABLE = 1 << 1,  /* -s: keep a partial state on interruption */
	RECV_DISCARD = 1 << 2,    /* -d: target + sent name without its pool */
	RECV_LASTNAME = 1 << 3,   /* -e: target + last component of the sent name */
	RECV_DRYRUN = 1 << 4,     /* -n: check everything, commit nothing */
	RECV_KEEP_SOURCE_COMPRESSION = 1 << 5,
};

/* What one received snapshot cost. */
struct recv_stats {
	uint64_t snapshots;
	uint64_t bytes;               /* stream bytes read */
	uint64_t nodes, nodes_new;
	uint64_t blocks_logical;      /* logical blocks compressed with C */
	uint64_t blocks_kept;         /* encoded as C: stored as they came */
	uint64_t blocks_recompressed; /* encoded otherwise: decoded and re-encoded */
	uint64_t blocks_present;      /* the pool had them under C already */
	uint64_t blocks_byref;
	uint64_t blocks_tried;        /* logical, but tried with C by the sender (the
				       * stream's HINT): stored raw, not compressed again */
	uint64_t lbytes_logical, lbytes_kept, lbytes_recompressed, lbytes_present;
	uint64_t lbytes_tried;
	uint64_t pbytes_in;           /* WRITE payload bytes */
	uint64_t pbytes_written;      /* block bytes written to packs */
	uint64_t props_received, props_skipped;
	uint64_t ns;                  /* wall time */
};

struct recv_opts {
	unsigned flags;                    /* enum recv_flags */
	const struct store_propset *set;   /* -o: set locally */
	size_t nset;
	const char *const *exclude;        /* -x: not received */
	size_t nexclude;
	unsigned threads;                  /* 0: one per CPU */
	/* Called after each snapshot is committed (or checked, with -n) with
	 * its full name and the figures of that snapshot. May be NULL. */
	void (*done)(void *arg, const char *snapshot, const struct recv_stats *st);
	/* Called with the full name of each dataset or snapshot that -F
	 * destroys (or, with -n, would destroy) because the sender no longer
	 * has it, before the package commits. May be NULL. */
	void (*destroyed)(void *arg, const char *name);
	/* Called with the full local name of each snapshot of a package that
	 * the dataset already has (same guid), which is skipped, as zfs does,
	 * after its substream was read to its END. May be NULL. */
	void (*skipped)(void *arg, const char *snapshot);
	/* Called as each substream starts, once its local name is known and
	 * before its body is read: source is DATASET@SNAP as sent, dest the
	 * snapshot it lands in, incremental 1 when it has a base (recv -v's
	 * "receiving full stream of X into Y"). May be NULL. */
	void (*begin)(void *arg, const char *source, const char *dest, int incremental);
	/* Called once, before the first substream's body, when the stream's
	 * HINT carries the sender's estimate of the whole stream's bytes (the
	 * figure stream_decoder_bytes reaches at the end, if it was right):
	 * any value, to be clamped, for progress only. May be NULL. */
	void (*estimate)(void *arg, uint64_t bytes);
	void *arg;
	/* How the sender resumes an interrupted RECV_RESUMABLE receive, for the
	 * error's detail ("the N records received are kept: resume with ...");
	 * NULL: "'ferry send -t TOKEN' (ferry get receive_resume_token DS)",
	 * right for a pipe, wrong for a server whose clients resume by
	 * themselves. */
	const char *resume_how;
};

/* Receives the stream read from in into pool p under target (a dataset,
 * or DATASET@SNAP for a single stream; with RECV_DISCARD/RECV_LASTNAME the
 * parent of the received names). A package's snapshot that its dataset
 * already has (same guid) is skipped; a single stream of one is refused,
 * and so is a full stream into an existing dataset without RECV_FORCE.
 * Returns 0 or a negative FERR_* code with a detail naming what failed. Nothing is committed for a snapshot whose
 * substream is not whole; snapshots of a package committed before a
 * failure stay, except with RECV_FORCE (and not RECV_RESUMABLE): then the
 * whole package, its rollbacks and destructions are one catalogue
 * transaction, committed only after the package verified to its end, so
 * a corrupt or truncated package leaves the pool as it was (that
 * transaction holds the catalogue's write lock from the first snapshot
 * committed to the end of the package). Destruction never happens before
 * the whole package verified. st (may be NULL) gets the totals. */
int recv_run(struct store_pool *p, const char *target, struct stream_source *in,
	     const struct recv_opts *o, struct recv_stats *st) FERRY_WUR;

/* recv -A: discards the partial state an interrupted `recv -s` into
 * target left (its blocks become garbage for gc). -FERR_NOENT if none. */
int recv_abort(struct store_pool *p, const char *target) FERRY_WUR;

/* The resume token of target's partial receive, into out (n >=
 * STREAM_TOKEN_MAX); -FERR_NOENT when there is none. */
int recv_resume_token(struct store_pool *p, const char *target, char *out, size_t n) FERRY_WUR;

#endif
