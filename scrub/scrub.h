/* scrub/scrub.h — the one public header of scrub/: checking a whole pool
 * (every block and node against its hash, the catalogue against the
 * packs), naming the files each damage touches, and healing damage from
 * another pool that holds good copies. The findings live in the pool's
 * catalogue (the store's scrub state and error log), so `pool status`
 * can print them and a stopped scrub can go on where it stopped. */
#ifndef FERRY_SCRUB_H
#define FERRY_SCRUB_H

#include <stdint.h>

#include "../lib/lib.h"
#include "../store/store.h"

struct scrub_opts {
	unsigned threads;  /* verifying workers; 0: one per online CPU */
	/* called on the caller's thread, often (the CLI's meter rate-limits
	 * itself): bytes checked of total; may be NULL */
	void (*progress)(void *arg, uint64_t done, uint64_t total);
	void *arg;
	uint64_t rate;     /* bytes per second the block pass reads at most; 0: no limit */
	uint64_t checkpoint_ns; /* how often the position is saved and a stop
				 * request looked for; 0: every 0.5 s */
	int deep;          /* --deep: every block decoded and its BLAKE2b checked, every
			    * node record's hash, not only the CRC-32C of the stored bytes */
};

struct scrub_result {
	int stopped;        /* `ferry scrub -s` stopped it: the position is kept */
	int resumed;        /* it went on from a stopped or interrupted scrub */
	uint64_t resumed_at;          /* ... whose runs had checked this many bytes */
	uint64_t bytes, blocks;       /* block bytes and blocks checked (all runs) */
	uint64_t total_bytes;         /* of every indexed block */
	uint64_t nodes, node_bytes;   /* node rows checked */
	uint64_t records, record_bytes; /* node records and checkpoints checked in the packs */
	uint64_t snapshots;           /* snapshot and bookmark trees walked */
	uint64_t unref_blocks, unref_bytes; /* garbage gc frees: not damage */
	uint64_t orphans, orphan_bytes;     /* pack files nobody names: gc removes them */
	int orphans_checked;          /* 0: a writer was alive, orphans not looked for */
	uint64_t errors;              /* rows in the pool's error log afterwards */
	uint64_t ns_blocks, ns_nodes, ns_trees; /* this run's time in each pass */
	struct store_scrub_state state;
};

/* Scrubs pool p: pack-level checks, then every block of every pack in
 * order (read sequentially on the caller's thread, checked on o->threads
 * workers), every node row, each snapshot's and bookmark's tree (nodes and
 * blocks it names exist; which files use each damaged block or node), the
 * recorded space figures. What it finds is the pool's error log (replaced
 * when a new scrub starts, kept and added to when a stopped one
 * continues). Returns 0 whether or not damage was found (res->errors says)
 * or a negative FERR_* when it could not run: -FERR_BUSY when another
 * scrub of p is running. Runs alongside writers and readers. */
int scrub_run(struct store_pool *p, const struct scrub_opts *o, struct scrub_result *res) FERRY_WUR;

/* Asks the scrub running on p to stop and waits (up to wait_s seconds)
 * until it has saved its position: 0, -FERR_NOENT when none runs,
 * -FERR_BUSY when it did not stop in time. */
int scrub_stop(struct store_pool *p, unsigned wait_s) FERRY_WUR;

struct scrub_repair_result {
	uint64_t repaired;       /* log rows healed */
	uint64_t bytes;          /* bytes written */
	uint64_t unrepaired;     /* damaged blocks and nodes the replica could not give */
	uint64_t rejected;       /* ... of them, those whose copy did not match the hash */
	uint64_t errors;         /* rows in the log afterwards */
};

/* Where a repair gets its good copies: another pool (scrub_repair), or a
 * replica over HTTP (cli/ wires net/ in). Nothing it gives is trusted:
 * scrub_repair_from checks each copy against its hash before it writes
 * it. Both return 0 with a copy, 1 when the source does not hold one
 * (the damage stays in the log), or a negative FERR_* that ends the
 * repair (nothing of it is committed). */
struct scrub_source {
	/* Block hash: its codec (the copy in prefer's codec when the source
	 * has several), logical size and payload, appended to out after a
	 * reset (out's cap is at least STORE_BLOCK_MAX). */
	int (*block)(void *arg, const uint8_t hash[FERRY_HASH_LEN], struct codec_spec prefer,
		     struct codec_spec *codec, uint32_t *lsize, struct fbuf *out);
	/* Node hash: its type and bytes into out (reset first). */
	int (*node)(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out);
	void *arg;
};
/* Heals the blocks and nodes p's error log names from replica (another
 * pool, opened read-only is enough): each good copy, checked against its
 * hash, is written into a new pack of p (kept as the replica stores it
 * when that is the damaged copy's codec, else re-encoded to it), fsynced
 * before one transaction points the index at it; nodes are replaced in
 * that transaction. What the replica lacks, or holds damaged too, stays
 * in the log. Takes p's scrub lock (-FERR_BUSY when a scrub runs). */
int scrub_repair(struct store_pool *p, struct store_pool *replica,
		 struct scrub_repair_result *res) FERRY_WUR;
/* scrub_repair with the copies from src; a copy that does not match its
 * hash (or the damaged one's logical size) is refused, counted in
 * res->rejected, and its damage stays in the log. */
int scrub_repair_from(struct store_pool *p, const struct scrub_source *src,
		      struct scrub_repair_result *res) FERRY_WUR;

/* For a replica that serves repairs (GET /v1/nodes, ferry-http.7): 1 when
 * node hash is in the tree of a snapshot or bookmark of ds or of a dataset
 * below it, else 0. Walks those trees until it meets the node (each shared
 * subtree once): what a send of them would read, no more. */
int scrub_node_in_scope(struct store_pool *p, const struct store_ds *ds,
			const uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;

#endif
