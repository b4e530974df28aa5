/* restore/restore.h — the one public header of restore/: a snapshot → a
 * directory tree, a volume image (file or block device), one file, or an
 * archive (tar, pax, zip, through libarchive). Data leaves a pool here or
 * by send/. restore/ uses lib and store; it never prints or exits. */
#ifndef FERRY_RESTORE_H
#define FERRY_RESTORE_H

#include <stdint.h>
#include <sys/types.h>

#include "../lib/lib.h"
#include "../store/store.h"

/* For snapshots of someone else's data (a backup server restoring them as
 * root), in the manner of tar's options of the same names. */
enum {
	RESTORE_NO_SAME_OWNER = 1 << 0,       /* no chown: the restoring user owns all */
	RESTORE_NO_SAME_PERMISSIONS = 1 << 1, /* modes masked by opts.umask */
	RESTORE_NO_DEVICES = 1 << 2,          /* device nodes skipped, each warned */
	RESTORE_NO_SETUID = 1 << 3,           /* setuid/setgid cleared, no file capabilities */
};
struct restore_stats;
struct restore_opts {
	const char *const *files; /* restore only these paths (relative to the snapshot root) */
	size_t nfiles;
	int force;                /* allow a non-empty target */
	const char *format;       /* NULL: a tree into dir; "tar", "pax", "zip": an archive to fd */
	int fd;                   /* archive output */
	unsigned untrusted;       /* RESTORE_NO_* flags; an archive's entries follow all
				   * but NO_SAME_PERMISSIONS (its extractor applies its umask) */
	mode_t umask;             /* for RESTORE_NO_SAME_PERMISSIONS */
	void (*warn)(void *arg, const char *path, const char *msg);
	/* Called now and then on the calling thread with the figures so far
	 * (tree restores); may be NULL. */
	void (*progress)(void *arg, const struct restore_stats *st);
	void *arg;
};
struct restore_stats {
	uint64_t files, dirs, symlinks, specials, hardlinks, bytes, warnings;
};
/* Restores snapshot s into directory dir (created if missing), never
 * writing outside it or following a symlink. A volume restores into the
 * file dir names (an image, created or overwritten when force). Returns 0,
 * or -FERR_PARTIAL when some attributes could not be set or device nodes
 * were skipped (each warned). On any other failure a directory it created
 * is removed again with what it put there. */
int restore_snapshot(struct store_pool *p, const struct store_snap *s, const char *dir,
		     const struct restore_opts *o, struct restore_stats *st) FERRY_WUR;

#endif
