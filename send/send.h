/* send/send.h — the one public header of send/: snapshots → a ferry stream
 * (docs/ferry-stream.5). A stream holds the nodes and blocks of the target
 * snapshot that the base does not have, found by walking both Merkle trees
 * and skipping equal subtrees by hash, written in post-order as the walk
 * goes (memory is bounded by the deepest path and the largest directory;
 * the sets of objects already sent live in the catalogue's TEMP tables).
 *
 * send/ uses lib, stream and store; it never prints or exits. */
#ifndef FERRY_SEND_H
#define FERRY_SEND_H

#include <stdint.h>

#include "../lib/lib.h"
#include "../store/store.h"
#include "../stream/stream.h"

enum send_flags {
	SEND_COMPRESSED = 1 << 0,   /* -c: blocks as stored */
	SEND_PROPS = 1 << 1,        /* -p */
	SEND_REPLICATE = 1 << 2,    /* -R: a package of the dataset tree */
	SEND_INTERMEDIATE = 1 << 3, /* -I: every snapshot between base and target */
	SEND_RECOMPRESS = 1 << 4,   /* --compress=CODEC: opts.codec on the sender */
	SEND_DRYRUN = 1 << 5,       /* -n: count bytes, write nothing */
	SEND_ESTIMATE = 1 << 6,     /* the stream's HINT carries opts.estimate */
};

struct send_progress {
	const char *snapshot;  /* full name of the snapshot being sent */
	uint64_t bytes;        /* stream bytes so far (all substreams) */
	uint64_t records;
};

struct send_opts {
	unsigned flags;               /* enum send_flags */
	struct codec_spec codec;      /* with SEND_RECOMPRESS */
	const char *from;             /* -i/-I base: "snap", "@snap" or "ds@snap"; NULL: full */
	const char *token;            /* -t: resume token (then snapshot is NULL) */
	/* With SEND_ESTIMATE: the stream's size as a dry run with the same
	 * options (SEND_ESTIMATE included, so that it counts the HINT) found
	 * it, for the receiver's progress line. */
	uint64_t estimate;
	/* Called once per substream before it starts (kind "full" or
	 * "incremental", from is "" for full) with its size when dry running
	 * (else 0), and now and then with progress. Both may be NULL. */
	void (*substream)(void *arg, const char *kind, const char *from, const char *to,
			  uint64_t size);
	void (*progress)(void *arg, const struct send_progress *pr);
	void *arg;
};

struct send_stats {
	uint64_t bytes;        /* stream bytes written (or counted with -n) */
	uint64_t records;
	uint64_t substreams;
	uint64_t nodes, writes, byrefs;
	uint64_t block_lbytes, block_pbytes; /* of WRITE records */
};

/* Writes the stream of snapshot snap ("pool/ds@name") of pool p to out, as
 * o says (o->token instead resumes: snap is then ignored). The stream has
 * a HINT (docs/ferry-stream.5) with SEND_ESTIMATE, and with
 * SEND_RECOMPRESS to a codec other than off, which every raw block it
 * carries was then tried with. With
 * SEND_DRYRUN nothing is written to out and st->bytes is the exact size.
 * Returns 0 or a negative FERR_* with a detail naming what failed. st may
 * be NULL. out's error is checked: a write failure ends the send. */
int send_run(struct store_pool *p, const char *snap, const struct send_opts *o,
	     struct stream_sink *out, struct send_stats *st) FERRY_WUR;

/* An estimate of the stream send_run(p, snap, o) writes, cheap enough to
 * take before every transfer that draws a progress line: for a full
 * stream the snapshot's recorded figures (referenced with -c or
 * --compress, else logicalreferenced; nodes not counted), for -i/-I a dry
 * run of the plain stream, exact but for its blocks, counted at their
 * logical size (O(what changed): it reads nodes, never a block). *bytes
 * is 0 (unknown) for a resume (o->token) and for -R. Returns 0 or a
 * negative FERR_* (snap or the base not found: what send_run would say). */
int send_estimate(struct store_pool *p, const char *snap, const struct send_opts *o,
		  uint64_t *bytes) FERRY_WUR;

#endif
