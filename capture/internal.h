/* capture/internal.h — private to capture/: the state of a tree or volume
 * capture that its stages share (capture.c the entry points, jobs.c the
 * pipeline of record jobs, attrs.c attributes, file.c regular files and
 * hardlinks, walk.c the directory walk, volume.c images and devices), and
 * the archive capture that capture.c calls (archive.c, the only file that
 * knows libarchive, reads the members; archive_tree.c assembles their
 * tree). */
#ifndef FERRY_CAPTURE_INTERNAL_H
#define FERRY_CAPTURE_INTERNAL_H

#include <sys/stat.h>
#include <sys/types.h>

#include "capture.h"

/* Captures the archive at from (any format and compression libarchive
 * reads) as the tree of a snapshot being written by w: records of rs
 * bytes stored under policy on threads workers; root receives the root
 * node. Warnings (a member skipped or cut) go to warnfn. */
int capture_archive(struct store_pool *p, struct store_writer *w, struct capture_stats *st,
		    const char *from, struct codec_spec policy, uint32_t rs, unsigned threads,
		    void (*warnfn)(void *, const char *, const char *), void *arg,
		    uint8_t root[FERRY_HASH_LEN]) FERRY_WUR;

/* ---- an archive capture (archive.c reads it, archive_tree.c is its tree) --------- */

/* A node of an archive's tree, assembled in memory. */
struct anode {
	char *name;            /* "" for the root */
	struct anode *parent;  /* NULL for the root */
	struct node_entry e;
	char *target;
	uint8_t *xabuf;
	struct node_xattr *xa;
	struct anode **kids;
	size_t nkids, capkids;
	struct anode *hnext;   /* in actx.tab, keyed by (parent, name) */
};

/* The state of an archive capture. */
struct actx {
	struct store_writer *w;
	struct capture_stats *st;
	struct codec_spec policy;
	uint32_t rs;
	void (*warn)(void *, const char *, const char *);
	void *arg;
	struct anode **tab;
	size_t tabsize, count;
	struct anode root;
	uint8_t *rec, *scratch;
	uint64_t next_link;
	int partial;
	/* get_node's memory of the last path it resolved: the node at the end
	 * of each component and where it ends in last, so a member in the
	 * directory of the one before (archives come in tree order) costs a
	 * memcmp, not a walk of its whole path */
	char *last;
	size_t last_len, last_cap;
	struct anode **chain;
	size_t *chain_end;
	size_t nchain, capchain, capchain_end;
	/* the member's normalized name and its hardlink target's */
	char *path, *tp;
	size_t pathcap, tpcap;
};

/* A member name is at most this long: NODE_TREE_DEPTH_MAX + 1 directories
 * of the longest names, and the entry. */
#define MEMBER_NAME_MAX ((size_t)(NODE_TREE_DEPTH_MAX + 2) * (NODE_NAME_MAX + 1))

/* put_node callback of the node builders: arg is the struct actx */
int arch_put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash) FERRY_WUR;
/* Finds the node for path (normalized: no empty, "." or ".." component),
 * or with create makes it and its missing parents, as directories with
 * default attributes. Without create, *out is NULL when it is missing.
 * -FERR_CORRUPT when a component is not a directory. */
int arch_get_node(struct actx *c, const char *path, int create, struct anode **out) FERRY_WUR;
/* Normalizes a member name into out (which holds at least strlen(in) + 1
 * bytes) and gives its number of components in *levels; 0 ok, 1 to skip
 * (unsafe or overlong). */
int arch_normalize(const char *in, char *out, size_t *levels);
/* Builds the directory nodes bottom-up, the root's last. */
int arch_build_tree(struct actx *c) FERRY_WUR;
/* Frees every node of the tree (the root is embedded in c). */
void arch_free_tree(struct actx *c);

/* ---- the state of a tree or volume capture ---------------------------------------- */

enum { JOB_DATA, JOB_HOLE, JOB_END, JOB_DIR_END };

struct cfile;
struct cdir;

/* One record (or a hole, or a file's end) inside a job. */
struct item {
	int kind;
	struct cfile *f;
	struct cdir *d;      /* JOB_DIR_END */
	size_t off, len;     /* of the record in the job's data */
	uint64_t rec;        /* record index in the file */
	int known;           /* same hash as the previous version's record */
	uint64_t hole;
	struct store_block blk;
};

/* Work for the pool: many small files' records go in one job, so a tree of
 * small files costs one thread hand-off per MiB, not per file. */
#define JOB_ITEMS 256
#define JOB_BYTES ((size_t)1 << 20)
/* The bytes of the jobs in flight (each holds 2 x JOB_BYTES, or 2 x the
 * record size when larger), with at least two jobs per worker: on 2 cores
 * 5 jobs (10 MiB) take bench/capture's corpus in the same CPU time as the
 * 32 that 64 MiB gave, and the capture peaks at 61 MB instead of 124 MB
 * (issue 14: 64 MiB at most). */
#define CAP_WINDOW ((size_t)8 << 20)
struct job {
	uint8_t *data;
	uint8_t *scratch;
	size_t cap, used;
	struct item items[JOB_ITEMS];
	unsigned n;
};

/* A regular file whose blocklist is being built. */
struct cfile {
	struct node_bl_builder bl;
	int done;
	int type;
	uint8_t hash[FERRY_HASH_LEN];
	/* a hardlinked inode (dev, ino) whose map slot is filled when done:
	 * looked up again then, as the map may have grown and moved since */
	int link;
	dev_t link_dev;
	ino_t link_ino;
	/* the previous version's block hash per record (changed files): a
	 * record that hashes the same is already stored and is not compressed
	 * again; read-only while jobs run */
	uint8_t (*old)[FERRY_HASH_LEN];
	uint32_t *old_len;  /* 0: no block at that record */
	uint64_t nold;
};

struct link {
	dev_t dev;
	ino_t ino;
	int used, ready;
	int type;
	uint8_t hash[FERRY_HASH_LEN];
	uint64_t size;
};

struct cap;
/* file.c: the hardlink map's slot of inode (dev, ino), added when add is
 * 1 (NULL: not there, or no memory). The map grows by moving to a new
 * table: a slot is valid until the next call with add = 1. */
struct link *cap_link_find(struct cap *c, dev_t dev, ino_t ino, int add);

/* An entry of the directory being captured, owning its strings. */
struct centry {
	struct node_entry e;
	char *name;
	uint8_t *target;
	struct node_xattr *xa;
	uint8_t *xabuf;
	struct cfile *file;
	/* a directory entry whose previous version was a directory too: that
	 * version's node (the walk compares it with the new one) */
	int have_old_child;
	uint8_t old_child_type;
	uint8_t old_child[FERRY_HASH_LEN];
};

/* A directory whose entries are all scanned; its node is built when its
 * JOB_DIR_END item is collected, i.e. after every block of its files, so
 * the main thread goes on to the next directory without waiting. */
struct cdir {
	struct centry *ents;
	size_t n;
	uint8_t *out_type, *out_hash; /* the parent's entry for it */
	struct cdir *prev, *next;     /* pending directories, freed on errors */
	int queued;                   /* its JOB_DIR_END is in a job: counted in cap.queued_ents */
	/* its previous version's node (have_old), and whether every entry
	 * matched that version's when the walk left it (same): then, if its
	 * subdirectories' nodes come out unchanged too, the node is that one,
	 * not encoded and hashed again */
	int have_old, same;
	uint8_t old_type;
	uint8_t old_hash[FERRY_HASH_LEN];
};

/* A directory being scanned by the walk (see walk()). */
struct cframe {
	struct cdir *d;      /* its node, pending (owned by the pending list) */
	char **names;        /* its entries, sorted */
	unsigned char *types; /* their readdir d_type (DT_UNKNOWN when not told) */
	size_t n, i;         /* how many; the next to capture */
	struct node_dir old; /* its previous version, if have_old */
	int have_old;
	size_t path_len;     /* of its path in cap.path */
};

struct cap {
	struct cdir *pending;
	/* entries of the directories whose nodes are queued and not yet built
	 * (bounded by CAP_QUEUED_ENTS) */
	size_t queued_ents;
	struct cframe *frames;
	size_t nframes, capframes;
	struct dirstack dirs;
	struct store_pool *p;
	const struct store_ds *ds;
	const struct capture_opts *o;
	struct capture_stats *st;
	struct store_writer *w;
	struct store_reader *rd;
	struct codec_spec policy;
	uint32_t rs;
	dev_t dev;
	struct pipeline *pl;
	struct job *cur;      /* a slot being filled by the main thread */
	size_t jobcap;
	struct link *links;
	size_t nlinks, caplinks;
	struct fbuf path;
	uint64_t last_progress;
	int partial;
	/* the newest snapshot, which an unchanged file's entry comes from:
	 * its blocks are not referenced file by file but at the end, from the
	 * base's references (store_writer_refs_since) */
	int have_base;
	int64_t base_id;
	uint8_t base_root[FERRY_HASH_LEN];
	/* stat-ahead (walk.c): the lstat of the top frame's entries
	 * [sa_lo, sa_hi) (sa_err: 0 or the errno), taken in one go */
	struct stat *sa_st;
	int *sa_err;
	size_t sa_lo, sa_hi;
};

/* Entries of a directory lstat'ed in one go (at most; the run also ends
 * at the first entry that may be a directory, which the walk descends
 * into before it needs the next). */
#define CAP_STAT_AHEAD 256

/* Entries of queued directories past which the walk waits for their
 * nodes (about 200 bytes each). A job holds up to JOB_ITEMS directory
 * ends, and in an unchanged tree jobs carry little else, so without this
 * bound every directory of the tree stayed in memory until the end: 21 MB
 * for an unchanged 100,000-file tree, growing with it. */
#define CAP_QUEUED_ENTS 8192

/* Directory fds kept open besides the root's. */
#define CAP_OPEN_DIRS 16

/* ---- capture.c ---------------------------------------------------------------------- */

/* node builder and walker callbacks: arg is the struct cap (put) or its
 * reader (rd) */
int cap_put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash) FERRY_WUR;
int cap_rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out) FERRY_WUR;
/* Counts a warning about the path being captured (c->path) and passes it
 * to the caller's warn hook; unreadable marks the snapshot partial. */
void cap_warn(struct cap *c, const char *msg, int unreadable);
/* Calls the progress hook, at most twice a second unless force. */
void cap_progress(struct cap *c, int force);

/* ---- jobs.c: the pipeline of record jobs ------------------------------------------- */

/* The pipeline's operations: hash and compress on the workers, store in
 * order on the main thread. */
extern const struct pipeline_ops cap_job_ops;
/* The job to add an item with need data bytes to (the one being filled,
 * or a new one once it is full). */
int cap_cur_job(struct cap *c, size_t need, struct job **out) FERRY_WUR;
/* Every job done: what was queued is in the blocklists and nodes. */
int cap_drain(struct cap *c) FERRY_WUR;
/* Queues a hole of hole bytes (JOB_HOLE) or the end of f (JOB_END). */
int cap_submit_simple(struct cap *c, struct cfile *f, int kind, uint64_t hole) FERRY_WUR;
/* Reads fd (a regular file, image or block device of size bytes) into f's
 * blocklist. *got receives the bytes covered (less than size when the file
 * shrank while being read). dense: the file has no hole worth looking for
 * (SEEK_DATA/SEEK_HOLE skipped). *src_err is set when the error is the
 * source's (a read that failed), not the pool's or the pipeline's. */
int cap_read_data(struct cap *c, int fd, uint64_t size, int dense, struct cfile *f,
		  uint64_t *got, int *src_err) FERRY_WUR;

/* ---- attrs.c ------------------------------------------------------------------------ */

/* Reads the kept xattrs of fd (fd >= 0) or of path (not following a
 * symlink) into ce. Failures other than "not supported" are warnings. */
int cap_read_xattrs(struct cap *c, int fd, const char *path, struct centry *ce) FERRY_WUR;
/* Mode, owners, times and inode of sb into e. */
void cap_entry_from_stat(struct node_entry *e, const struct stat *sb);
/* Frees what ce owns (its file too) and zeroes it. */
void cap_centry_release(struct centry *ce);

/* ---- file.c ------------------------------------------------------------------------- */

/* Loads the record hashes of the file's previous version oe (if it is not
 * huge) so unchanged records of a changed file skip compression. */
int cap_old_records(struct cap *c, struct cfile *f, const struct node_entry *oe) FERRY_WUR;
/* Captures a regular file name in dirfd (lsb: its lstat, oe: its previous
 * version or NULL) into ce. Returns 1 when the entry is to be skipped
 * (warned). */
int cap_file(struct cap *c, int dirfd, const char *name, const struct stat *lsb,
	     const struct node_entry *oe, struct centry *ce) FERRY_WUR;

/* ---- current.c ---------------------------------------------------------------------- */

/* The root of a dataset with nothing to capture from (no source, no
 * --from): its newest snapshot's, every block referenced again, or an
 * empty directory or a volume of volsize zeros when it has none. */
int cap_current(struct cap *c, uint8_t *root) FERRY_WUR;

/* ---- walk.c ------------------------------------------------------------------------- */

/* Builds d's node (its entries' blocklists are all done) into the parent's
 * entry for it, and frees d. */
int cap_dir_finish(struct cap *c, struct cdir *d) FERRY_WUR;
/* Unlinks d from the pending list and frees it. */
void cap_cdir_free(struct cap *c, struct cdir *d);
/* The stat-ahead window (walk.c); cap_stat_ahead_free gives it back. */
int cap_stat_ahead_new(struct cap *c) FERRY_WUR;
void cap_stat_ahead_free(struct cap *c);
/* Frees what a walk frame holds. */
void cap_frame_release(struct cframe *f);
/* Captures the tree below rootfd (the walk's stack takes it) into
 * *out_type / out_hash; old is the previous version of the root directory
 * (when have_old), whose node is old_type / old_hash. */
int cap_walk(struct cap *c, int rootfd, struct node_dir *old, int have_old, int old_type,
	     const uint8_t *old_hash, uint8_t *out_type, uint8_t *out_hash) FERRY_WUR;

/* ---- volume.c ----------------------------------------------------------------------- */

/* Captures the image file or block device from as a volume's root node. */
int cap_volume(struct cap *c, const char *from, uint8_t *root) FERRY_WUR;

#endif
