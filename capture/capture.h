/* capture/capture.h — the one public header of capture/: a directory tree,
 * a volume image (file or block device) or an archive (tar, cpio, zip,
 * through libarchive) → a snapshot. Data enters a pool here or by recv/.
 * capture/ uses lib and store; it never prints or exits. */
#ifndef FERRY_CAPTURE_H
#define FERRY_CAPTURE_H

#include <stdint.h>

#include "../lib/lib.h"
#include "../store/store.h"

struct capture_stats {
	uint64_t files_read, files_reused, files_changed_during, dirs, symlinks, specials;
	uint64_t bytes_read;      /* logical bytes read from the source */
	uint64_t blocks_written, bytes_written; /* new blocks and their packed bytes */
	uint64_t blocks_total;    /* the blocks met so far; at the end, with count_blocks,
				   * the blocks the new snapshot references */
	uint64_t warnings, unreadable;
};
struct capture_opts {
	/* NULL: the dataset's source property; with neither (a volume, a
	 * received or empty filesystem), the dataset's current state: its
	 * newest snapshot's tree, or an empty one */
	const char *from;
	uint64_t creation_ns;     /* the snapshot's creation time; 0: now */
	int cross_fs;             /* descend into other filesystems */
	unsigned threads;         /* 0: one per CPU */
	/* fill blocks_total: a count over the snapshot's references, whose
	 * cost grows with the dataset, not the change (else it is 0) */
	int count_blocks;
	/* warn: a path that was skipped or changed, with why; progress: called
	 * now and then with the running counters. Both may be NULL. */
	void (*warn)(void *arg, const char *path, const char *msg);
	void (*progress)(void *arg, const struct capture_stats *st);
	void *arg;
};
/* Captures a snapshot ds@name. Incremental against ds's newest snapshot:
 * files whose size, mtime, ctime and inode match are not read again.
 * With nothing to capture from (see from), the snapshot is the dataset's
 * current state, as zfs snapshots a dataset nobody wrote to: the newest
 * snapshot's tree and blocks, or, with no snapshot yet, an empty root
 * directory (0755, root's) or a volume of volsize zero bytes.
 * Returns 0, or -FERR_PARTIAL when the snapshot was committed but some
 * entries could not be read (each reported through warn). */
int capture_snapshot(struct store_pool *p, const struct store_ds *ds, const char *name,
		     const struct capture_opts *o, struct capture_stats *st) FERRY_WUR;

#endif
