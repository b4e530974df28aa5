/* restore/internal.h — private to restore/: what its files share (the
 * restore to disk's stages, and archive.c's archive writer). */
#ifndef FERRY_RESTORE_INTERNAL_H
#define FERRY_RESTORE_INTERNAL_H

#include <sys/types.h>

#include "restore.h"

/* Writes the tree under root (kind: filesystem or volume) as the archive
 * o->format to o->fd, reading through rd. */
int restore_archive(struct store_pool *p, struct store_reader *rd, const struct node_entry *root,
		    int kind, const struct restore_opts *o, struct restore_stats *st) FERRY_WUR;

/* restore --file: whether the path (relative to the snapshot root, plen
 * bytes) is to be restored: 0 skip, 1 restore it whole, 2 it leads to a
 * selected path. Marks found[i] when path is exactly files[i]. */
int restore_selected(const char *const *files, size_t nfiles, const char *path, size_t plen,
		     int *found);

/* ---- the state of a restore to disk, shared by its stages (restore.c the
 * entry point, warnings and --file; attrs.c attributes; data.c file data
 * and the pipeline that writes it; tree.c the tree and its walk; volume.c
 * a volume's image or device) ---------------------------------------------- */

struct rlink {
	uint64_t id;
	char *path;
};

struct rjob;
struct rframe;

struct rst {
	struct pipeline *pl;
	struct store_pool *p;
	struct store_reader *rd;
	const struct restore_opts *o;
	struct restore_stats *st;
	int owners;
	/* what this restore creates gets euid/egid by itself: no --force (every
	 * entry is new, in directories made here, which get their own modes only
	 * after their children) and a target directory without setgid */
	int fresh_owner;
	uid_t euid;
	gid_t egid;
	int rootfd;
	struct fbuf path;
	uint8_t *buf;
	size_t bufcap;
	struct rlink *links;
	size_t nlinks, caplinks;
	int *found;
	int partial;
	int made_dir;  /* restore_tree created the target directory */
	struct rframe *frames;
	size_t nframes, capframes;
	struct dirstack dirs;
	int err_named;  /* the last error came from a job and names its file */
};

/* Warnings from a worker are kept in its job and reported by the collector
 * (the warn callback and counters belong to the main thread). */
struct jwarn {
	const char *what;
	int err;
	unsigned n;
};

enum { RJ_DATA, RJ_END, RJ_SMALL };

struct rjob {
	int kind;
	int fd;
	uint64_t off;
	struct codec_spec c;
	uint32_t lsize;
	uint8_t hash[FERRY_HASH_LEN];
	struct fbuf payload;
	struct store_block_loc loc; /* where payload was read, for errors */
	uint8_t *out;
	size_t outcap;
	int verified;           /* rjob_prep found payload to match hash (decoded into out) */
	struct node_entry e;    /* RJ_END, RJ_SMALL: the file's attributes (borrowed until drained) */
	uint64_t bytes;
	/* RJ_SMALL: a file of at most one block, created, written, finished and
	 * closed on the worker; file creation is the slow part of small files */
	int dirfd;
	int has_data;
	char name[NODE_NAME_MAX + 1];
	char *path;             /* RJ_SMALL, RJ_END: the file's path (owned) */
	const char *fpath;      /* RJ_DATA: its file's, owned by that file's RJ_END job,
				 * which is collected after it */
	struct jwarn jw;
};

/* Directory fds kept open besides the target's. */
#define RESTORE_OPEN_DIRS 16

struct rframe {
	struct node_dir d;
	size_t i;                   /* the next entry */
	const struct node_entry *e; /* the directory's own entry (in the parent's d) */
	size_t path_len;
};

/* ---- restore.c ---------------------------------------------------------------------- */

/* node reader callback: arg is the store_reader */
int rst_rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out) FERRY_WUR;
/* The walk's current path for a message (whole, or its start and end). */
void rst_shown_path(struct rst *r, char *out, size_t max);
/* A warning (what: strerror(e)) about path (NULL: the walk's current
 * path); the restore ends partial. */
void rst_warn_path(struct rst *r, const char *path, const char *what, int e);
/* rst_warn_path about the walk's current path. */
void rst_warn(struct rst *r, const char *what, int e);
/* A warning with no errno about the walk's current path. */
void rst_warn_msg(struct rst *r, const char *msg);
/* restore_selected for the walk's current path. */
int rst_selected(struct rst *r);

/* ---- attrs.c ------------------------------------------------------------------------ */

/* Sets e's xattrs, owners, mode and times on fd (a worker's: warnings
 * into jw). fresh: fd is an inode this restore created (see
 * rst.fresh_owner). */
void rst_set_attrs_jw(struct rst *r, struct jwarn *jw, int fd, const struct node_entry *e,
		      int fresh);
/* The same on the main thread, warnings reported at once. */
void rst_set_attrs_fd(struct rst *r, int fd, const struct node_entry *e, int fresh);
/* The same for name in dirfd, not following a symlink. */
void rst_set_attrs_at(struct rst *r, int dirfd, const char *name, const struct node_entry *e);

/* ---- data.c ------------------------------------------------------------------------- */

/* The pipeline's operations: verify, decode and write on the workers,
 * finish files in order on the main thread. */
extern const struct pipeline_ops rst_job_ops;
/* Writes e's data into fd on the main thread (a volume); fill_holes
 * writes zeros for holes (a device has no holes to keep). */
int rst_write_data(struct rst *r, int fd, const struct node_entry *e, int fill_holes) FERRY_WUR;
/* Collects every job still queued: only then may an fd they use be
 * closed. Returns the first error, with its message. */
int rst_drain(struct rst *r);
/* Queues the data of file e, open on fd (taken: its END job closes it). */
int rst_queue_file(struct rst *r, int fd, const struct node_entry *e) FERRY_WUR;
/* Queues the data of e into fd, not taken (a volume's image: no END
 * job), holes and zero blocks left as holes; path names the file in
 * errors. fd and path must stay until rst_drain has collected them. */
int rst_queue_data(struct rst *r, int fd, const char *path, const struct node_entry *e) FERRY_WUR;
/* A file of at most one block, name in dirfd: created, written and
 * finished on a worker. */
int rst_queue_small(struct rst *r, int dirfd, const char *name, const struct node_entry *e) FERRY_WUR;

/* ---- tree.c ------------------------------------------------------------------------- */

/* The dirstack's before_close hook (arg: the struct rst): drains. */
int rst_drain_cb(void *arg) FERRY_WUR;
/* Restores the tree under root into rootfd (the walk's stack takes it). */
int rst_walk(struct rst *r, int rootfd, const struct node_entry *root) FERRY_WUR;

/* ---- volume.c ----------------------------------------------------------------------- */

/* Restores volume e to the image file or block device path. */
int rst_volume(struct rst *r, const char *path, const struct node_entry *e) FERRY_WUR;

#endif
