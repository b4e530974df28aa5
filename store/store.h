/* store/store.h — the one public header of store/: pools, the catalogue,
 * datasets, properties, names and codecs. Callers (send/, recv/, cli/) use
 * only what is declared here; store/internal.h is private to store/. */
#ifndef FERRY_STORE_H
#define FERRY_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/lib.h"
#include "codec.h"

#define STORE_FORMAT_VERSION 2 /* 2: the packs hold nodes and checkpoints too */
#define STORE_NAME_MAX 255     /* zfs: ZFS_MAX_DATASET_NAME_LEN - 1 */
#define STORE_USERPROP_NAME_MAX 255
#define STORE_USERPROP_VALUE_MAX 8192
/* Room for a resume token's text with its NUL (stream/'s STREAM_TOKEN_MAX;
 * recv/recv.c pins the two together). */
#define STORE_TOKEN_MAX 640

/* ---- names ---------------------------------------------------------------- */
enum store_name_kind {
	STORE_NAME_POOL,
	STORE_NAME_DATASET,  /* pool or pool/a/b */
	STORE_NAME_SNAPSHOT, /* pool/a@snap */
	STORE_NAME_BOOKMARK, /* pool/a#mark */
};
/* Checks name as zfs does (allowed characters, no empty or "."/".."
 * components, no trailing '/', length ≤ STORE_NAME_MAX, reserved pool
 * names). 0 if valid, else -FERR_NAME with a detail naming the problem. */
int store_name_check(const char *name, enum store_name_kind kind) FERRY_WUR;

/* ---- the registry (FERRY_HOME) ------------------------------------------- */
/* Writes the registry directory: $FERRY_HOME, else /var/lib/ferry for root,
 * else $XDG_DATA_HOME/ferry or ~/.local/share/ferry. */
int store_home(char *buf, size_t n) FERRY_WUR;

struct store_pool_entry {
	char name[STORE_NAME_MAX + 1];
	char path[4096];
};
/* Lists registered pools sorted by name into a malloc'd array (caller frees). */
int store_registry_list(struct store_pool_entry **out, size_t *n) FERRY_WUR;

/* ---- pools ---------------------------------------------------------------- */
struct store_pool;

/* A property assignment, as given by -o p=v. */
struct store_propset {
	const char *name;
	const char *value;
};

/* Creates a pool named name in directory path (which must not exist or be
 * empty), with the root dataset's properties props, and registers it.
 * Nothing is left behind on failure. */
int store_pool_create(const char *name, const char *path,
		      const struct store_propset *props, size_t nprops) FERRY_WUR;
/* Registers the pool at path under name (NULL: the name it was created or
 * last imported with). *name_out (may be NULL) receives a malloc'd copy. */
int store_pool_import(const char *path, const char *name, char **name_out) FERRY_WUR;
/* Whether the files of registered pool name are open to other users (a
 * pool is made 0700/0600, but an old or chmod-ed one may not be): 1 with
 * the first directory or file that has a group or other permission bit
 * named in what ("'PATH' has mode 0755"), 0 when all are private. */
int store_pool_exposed(const char *name, char *what, size_t n) FERRY_WUR;
/* Removes name from the registry; the pool's files are untouched. */
int store_pool_export(const char *name) FERRY_WUR;

/* What store_pool_recover read and rebuilt (docs/ferry-nodes.md,
 * "Recover"). bad_records counts the records it skipped (failed their
 * checks, or a torn tail), first_bad says where the first was; damaged is
 * where the old catalogue went ("" when there was none, or with dry_run). */
struct store_recover_report {
	uint64_t packs, blocks, nodes, bad_records;
	uint64_t seq;          /* of the checkpoint used */
	char state_pack[32];   /* the pack it is in */
	uint64_t datasets, props, snapshots, bookmarks, holds;
	char first_bad[320];
	char damaged[4200];
};
/* Rebuilds the catalogue of registered pool name from its packs alone,
 * without opening the old one (it may be missing or damaged): into a
 * temporary file, checked (every snapshot's and bookmark's tree whole,
 * every block a snapshot names present and passing its hash), then,
 * unless dry_run, swapped in crash-safely with the old catalog.db (and
 * -wal) kept as catalog.db.damaged-<UTC time>. Takes the gc lock
 * exclusively (-FERR_BUSY while a writer, reader or gc runs). Refuses,
 * changing nothing, when the packs hold no checkpoint (a version-1
 * pool), when a checkpoint that may be the newest is damaged, or when a
 * tree is not whole (-FERR_NOENT, -FERR_CORRUPT). *rep is filled either
 * way, as far as the work went. */
int store_pool_recover(const char *name, int dry_run, struct store_recover_report *rep) FERRY_WUR;
/* Upgrades a version-1 pool to this ferry's format (2): every node of
 * the catalogue is written into one new pack, then the first checkpoint
 * and the new version commit together, then the ferry.pool marker is
 * rewritten. *from is the version it had (2: nothing was done). Takes the
 * gc lock exclusively (-FERR_BUSY while a writer runs). */
struct store_pool;
int store_pool_upgrade(struct store_pool *p, int *from) FERRY_WUR;

enum { STORE_OPEN_RDONLY = 1 << 0 };
/* Opens the registered pool name. Refuses a pool whose format is newer than
 * STORE_FORMAT_VERSION (-FERR_VERSION) and a path that is not a pool. */
int store_pool_open(const char *name, int flags, struct store_pool **out) FERRY_WUR;
/* Opens the pool that contains dataset/snapshot name (its first component). */
int store_pool_open_for(const char *dsname, int flags, struct store_pool **out) FERRY_WUR;
void store_pool_close(struct store_pool *p); /* NULL is a no-op */
const char *store_pool_name(const struct store_pool *p);
const char *store_pool_path(const struct store_pool *p);

struct store_pool_stats {
	uint64_t format_version;
	uint64_t guid;
	uint64_t txg;
	uint64_t datasets;
	uint64_t snapshots;
	uint64_t disk_used;   /* bytes of the pool directory's files */
	uint64_t fs_size;     /* the host filesystem, statvfs */
	uint64_t fs_free;
	/* per codec id (enum codec_id), the stored blocks and their bytes */
	uint64_t codec_blocks[4][10];
	uint64_t codec_lbytes[4][10];
	uint64_t codec_pbytes[4][10];
};
int store_pool_stats(struct store_pool *p, struct store_pool_stats *out) FERRY_WUR;

/* Says what this handle is doing, in words for another command that finds
 * the pool busy meanwhile: "a receive into tank/x" gives it "pool 'tank' is
 * busy: a receive into tank/x (pid 1234) is running". Without it the
 * process default (store_activity_default) is used, else "ferry". Best
 * effort: a full disk only loses the wording. */
void store_pool_activity(struct store_pool *p, const char *what);
/* The process-wide default description (the CLI sets its command line). */
void store_activity_default(const char *what);

/* Transactions on the catalogue; every mutating store_* call runs inside one
 * (it opens its own when the caller has none). */
int store_tx_begin(struct store_pool *p) FERRY_WUR;
int store_tx_commit(struct store_pool *p) FERRY_WUR;
void store_tx_rollback(struct store_pool *p);
/* Inside an open transaction (-FERR_INVAL otherwise): every snapshot
 * committed through p until store_txg_unpin gets one createtxg, drawn at
 * the first, as the snapshots of one `zfs snapshot` command share one txg.
 * Unpin before the transaction ends (commit or rollback). */
int store_txg_pin(struct store_pool *p) FERRY_WUR;
void store_txg_unpin(struct store_pool *p);
/* Holds one read snapshot of the catalogue until store_read_end, for a
 * caller that reads much and writes nothing to the main catalogue meanwhile
 * (restore, send): every query in between sees the same state, and SQLite
 * skips its per-statement lock and journal checks (two to four system calls
 * per query otherwise). Does nothing inside a transaction; store_read_end
 * ends only what store_read_begin opened. */
int store_read_begin(struct store_pool *p) FERRY_WUR;
void store_read_end(struct store_pool *p);

/* ---- datasets ------------------------------------------------------------- */
enum store_ds_type {
	STORE_DS_FILESYSTEM = 1, STORE_DS_VOLUME = 2, STORE_DS_SNAPSHOT = 3, STORE_DS_BOOKMARK = 4,
};
const char *store_ds_type_name(int type);

struct store_ds {
	int64_t id;
	int64_t parent_id;     /* 0 for the pool's root dataset */
	int type;              /* enum store_ds_type */
	char name[STORE_NAME_MAX + 1]; /* full name, pool first */
	uint64_t guid;
	int64_t creation;      /* seconds since the epoch */
	uint64_t createtxg;
};

/* Looks up a filesystem or volume by full name; -FERR_NOENT if absent. */
int store_ds_lookup(struct store_pool *p, const char *name, struct store_ds *out) FERRY_WUR;
/* Creates dataset name of type (filesystem, or volume with props volsize).
 * With parents, missing ancestors are created as filesystems; without, a
 * missing parent is -FERR_NOENT. props are validated first; nothing changes
 * on any error. */
int store_ds_create(struct store_pool *p, const char *name, int type, int parents,
		    const struct store_propset *props, size_t nprops) FERRY_WUR;
/* Destroys dataset name; with children and !recursive → -FERR_BUSY, and
 * so is a held snapshot in the tree (hold.c). The root dataset can't be
 * destroyed (destroy the pool's files instead). */
int store_ds_destroy(struct store_pool *p, const char *name, int recursive) FERRY_WUR;
/* The checks of store_ds_destroy without the destroying (destroy -n). */
int store_ds_destroy_check(struct store_pool *p, const char *name, int recursive) FERRY_WUR;

/* zfs rename of a filesystem or volume (rename.c): from and to are full
 * names in p; the dataset moves to name to under to's parent (created,
 * with its own missing ancestors, as filesystems when parents, as zfs
 * rename -p does), its descendants, snapshots and bookmarks with it, in
 * one transaction. Guids, creation, properties of its own, holds and
 * bookmarks are kept; inherited properties now come from the new
 * parent. from == to is a no-op. Refused, with nothing changed:
 * -FERR_NAME a bad or (for any name of the subtree) too long name;
 * -FERR_INVAL to in another pool, inside from, or a root dataset, or a
 * parent that is a volume; -FERR_EXISTS to exists; -FERR_NOENT from or
 * (without parents) to's parent missing; -FERR_BUSY a partial receive
 * kept under from or to or below them, or any capture, receive, send or
 * restore running on the pool (the detail names it); -FERR_QUOTA a new
 * ancestor's quota would be exceeded. */
int store_ds_rename(struct store_pool *p, const char *from, const char *to, int parents) FERRY_WUR;
/* store_ds_rename for a caller that has the pool open for its own work
 * and holds its locks (recv renames a replica's dataset the sender
 * renamed): the same checks and one transaction, no lock taken. */
int store_ds_rename_held(struct store_pool *p, const char *from, const char *to) FERRY_WUR;
/* zfs rename of a snapshot: from ("pool/ds@a") becomes ds@newname
 * (newname: the part after the '@'); with recursive, the snapshot named
 * so in each descendant of ds that has one is renamed too, all or
 * nothing: -FERR_EXISTS naming the first dataset that has newname
 * already. Guids, holds and figures are kept. -FERR_NOENT when from is
 * missing, -FERR_NAME for a bad new name; newname == the old one is a
 * no-op. */
int store_snap_rename(struct store_pool *p, const char *from, const char *newname,
		      int recursive) FERRY_WUR;

/* Calls fn for ds and, when depth != 0, its descendants down to depth
 * levels (depth < 0: all), parents before children, siblings by name.
 * Stops at and returns fn's first nonzero result. */
typedef int (*store_ds_fn)(struct store_pool *p, const struct store_ds *ds, void *arg);
int store_ds_walk(struct store_pool *p, const struct store_ds *ds, int depth,
		  store_ds_fn fn, void *arg) FERRY_WUR;

/* ---- properties ----------------------------------------------------------- */
enum store_prop_source {
	STORE_SRC_NONE = 0,      /* read-only figures: "-" */
	STORE_SRC_DEFAULT,
	STORE_SRC_LOCAL,
	STORE_SRC_RECEIVED,
	STORE_SRC_INHERITED,     /* from .inherited_from */
};

struct store_propval {
	char name[STORE_USERPROP_NAME_MAX + 1];
	char value[STORE_USERPROP_VALUE_MAX + 1];  /* as zfs prints it (-p off) */
	char exact[STORE_USERPROP_VALUE_MAX + 1];  /* as zfs -p prints it */
	int source;                                /* enum store_prop_source */
	char inherited_from[STORE_NAME_MAX + 1];
	int numeric;                               /* 1 when exact is a number */
};

/* Whether name is a known native property, a valid user property or
 * zfs's written@SNAP (SNAP a snapshot's name after the '@', or a full
 * snapshot name). */
int store_prop_known(const char *name);
/* Gets one property of ds. Unset user properties give value "-" and
 * source NONE; an unknown name is -FERR_PROP. written@SNAP is the bytes
 * ds's head (its newest snapshot) or snapshot ds references that SNAP
 * does not, with source local as zfs shows it; SNAP must be a snapshot
 * of ds's own dataset, older than ds when ds is a snapshot: otherwise
 * -FERR_NOENT or -FERR_INVAL saying so ("-" for a bookmark). */
int store_prop_get(struct store_pool *p, const struct store_ds *ds, const char *name,
		   struct store_propval *out) FERRY_WUR;
/* Calls fn for every property of ds that `get all` shows, in zfs order,
 * then the user properties that are set or inherited, by name. */
typedef int (*store_prop_fn)(const struct store_propval *v, void *arg);
int store_prop_all(struct store_pool *p, const struct store_ds *ds,
		   store_prop_fn fn, void *arg) FERRY_WUR;
/* The received value of name on ds (a filesystem or volume: what a
 * stream set, even when a local value overrides it), stored form, into
 * out (n bytes). Returns 1 when there is one, 0 when not (always for a
 * snapshot or bookmark), or a negative FERR_* (store/propreceived.c). */
int store_prop_received(struct store_pool *p, const struct store_ds *ds, const char *name,
			char *out, size_t n) FERRY_WUR;
/* Validates and sets properties (all or nothing) with source local or
 * received. Read-only and create-only properties are -FERR_PROP. */
int store_prop_set(struct store_pool *p, const struct store_ds *ds,
		   const struct store_propset *props, size_t n, int source) FERRY_WUR;
/* Drops the received value of every property of ds not named in keep
 * (nkeep names; aliases as store_prop_set takes them): a stream that
 * carries the sender's whole property set replaces the received set, as
 * zfs receive does. Local values stay. */
int store_prop_drop_received(struct store_pool *p, const struct store_ds *ds,
			     const char *const *keep, size_t nkeep) FERRY_WUR;
/* Clears the local and received values of name on ds (with recursive, on
 * all descendants too) so it is inherited again; with revert_received
 * (zfs inherit -S) only the local value is cleared, so a received value
 * shows again. */
int store_prop_inherit(struct store_pool *p, const struct store_ds *ds, const char *name,
		       int recursive, int revert_received) FERRY_WUR;
/* Validates one assignment for a dataset of type at creation (create_time
 * 1) or later; writes the canonical stored value into canon. */
int store_prop_validate(const char *name, const char *value, int type, int create_time,
			char *canon, size_t n) FERRY_WUR;
/* Whether name is a property that can be set only when its dataset is
 * created (volblocksize), so a later store_prop_set of it is refused. */
int store_prop_create_only(const char *name);
/* The effective compression of ds (local, received, inherited or default). */
int store_ds_compression(struct store_pool *p, const struct store_ds *ds,
			 struct codec_spec *out) FERRY_WUR;
/* The effective recordsize in bytes. */
int store_ds_recordsize(struct store_pool *p, const struct store_ds *ds, uint32_t *out) FERRY_WUR;

/* ---- space ---------------------------------------------------------------- */
struct store_space {
	uint64_t used, referenced, logicalused, logicalreferenced, written;
	/* zfs's breakdown of used (filesystems and volumes; 0 for a
	 * snapshot): used = usedbydataset + usedbysnapshots + usedbychildren
	 * (ferry has no reservations, so no usedbyrefreservation) */
	uint64_t usedbysnapshots, usedbydataset, usedbychildren;
};
/* Exact accounting for ds (zeros until data lands). */
int store_ds_space(struct store_pool *p, const struct store_ds *ds, struct store_space *out) FERRY_WUR;
/* One row's space figures (store_ds_space) kept for its next property: a
 * row of several (list -o used,referenced,..., get all) costs one
 * computation, and its figures come from one reading. Zeroed before each
 * row; it never sees a later commit, so it lives for one row only. */
struct store_prop_memo {
	int64_t id;
	int type, have;
	struct store_space sp;
};
/* store_prop_get, with the row's memo m (NULL: none). */
int store_prop_get_memo(struct store_pool *p, const struct store_ds *ds, const char *name,
			struct store_propval *out, struct store_prop_memo *m) FERRY_WUR;
/* quota and refquota (quota.c; zfsprops(7)): inside the transaction that
 * commits a new newest snapshot of ds referencing referenced bytes, with
 * its rows in, 0 when ds's refquota and the quota of ds and of each
 * ancestor hold, else -FERR_QUOTA naming the first dataset over its limit
 * (the caller rolls back). Every snapshot commit (capture, receive) runs
 * it; a dataset without limits costs one property lookup per level, one
 * with a quota a pass over its subtree's blocks. */
int store_quota_check(struct store_pool *p, const struct store_ds *ds, uint64_t referenced) FERRY_WUR;
/* The room the quotas leave a receive into dataset name (which may not
 * exist yet: then its nearest existing ancestor's limits count), so it
 * can stop as soon as the blocks it stores pass a limit instead of at the
 * commit (zfs: EDQUOT during the receive). The figures are a lower bound
 * of what the commit will count: what the dataset and its ancestors use
 * now, less what a -F rollback or destruction will free (the dataset's
 * snapshots after createtxg keep_txg go: INT64_MAX none, -1 all), plus the
 * blocks of name's partial receive (recv -s), which the resumed snapshot
 * will reference; every byte stored beyond that is new to the dataset.
 * store_quota_check at the commit stays the exact test. Costs what
 * store_quota_check costs, nothing without a limit on the path. */
struct store_quota_room {
	int limited;                 /* 0: no limit applies, room is UINT64_MAX */
	int over;                    /* a limit is passed before a byte is stored */
	uint64_t room;               /* block bytes (psize) that may still be stored */
	char ds[STORE_NAME_MAX + 1]; /* whose limit leaves the least room */
	const char *prop;            /* "quota" or "refquota" */
	uint64_t limit;
};
int store_quota_room(struct store_pool *p, const char *name, int64_t keep_txg,
		     struct store_quota_room *out) FERRY_WUR;
/* 0 while stored (block bytes the receive wrote) fits q, else
 * -FERR_QUOTA naming the dataset and its limit. */
int store_quota_passed(const struct store_quota_room *q, uint64_t stored) FERRY_WUR;
/* "1.93x" from logical and physical sizes (1.00x when physical is 0). */
void store_format_ratio(uint64_t logical, uint64_t physical, char *buf, size_t n, int exact);

/* ---- metadata nodes (node.c; formats in docs/ferry-nodes.md) --------------------
 * Content-addressed: hash = BLAKE2b-256(type byte || bytes). All fields are
 * little-endian and fixed width; the decoders are strict and safe on hostile
 * input (a receiver runs them on what a stream brings). */
#define NODE_MAX ((size_t)4 << 20)
enum node_type {
	NODE_DIR = 1,            /* directory entries, sorted by name */
	NODE_BLOCKLIST = 2,      /* extents of a file or volume: blocks and holes */
	NODE_BLOCKLIST_INDEX = 3,/* children blocklists (or indexes) with their spans */
	NODE_EXT = 4,            /* subtype byte first: */
};
enum { NODE_EXT_DIR_INDEX = 1, NODE_EXT_ROOT = 2 };
enum { NODE_ROOT_FILESYSTEM = 1, NODE_ROOT_VOLUME = 2 };
enum node_ftype {
	NODE_F_REG = 1, NODE_F_DIR = 2, NODE_F_SYMLINK = 3, NODE_F_FIFO = 4,
	NODE_F_CHR = 5, NODE_F_BLK = 6,
};
#define NODE_NAME_MAX 255
#define NODE_TARGET_MAX 4095
#define NODE_XATTR_NAME_MAX 255
#define NODE_XATTR_VALUE_MAX 65536
#define NODE_XATTRS_MAX 1024
#define NODE_INDEX_MAX 4096      /* children of an index node */
#define NODE_BL_LEAF_RECORDS 1024 /* records per blocklist leaf written by capture */
#define NODE_BL_MAX 4096         /* extents in one blocklist node */
#define NODE_DEPTH_MAX 8         /* blocklist index levels */
/* Directories nest at most this many levels below a snapshot's root: capture
 * records a deeper directory empty (with a warning), recv refuses a stream
 * whose tree is deeper, and every walker (restore, send, diff) is iterative
 * with memory bounded by it, whatever the depth. ferry(8) documents it. */
#define NODE_TREE_DEPTH_MAX 16384

struct node_xattr {
	const uint8_t *name;
	size_t name_len;
	const uint8_t *value;
	size_t value_len;
};

/* One directory entry. Decoded entries borrow name/target/xattrs from the
 * node bytes and the decoder's arrays. */
struct node_entry {
	const uint8_t *name;
	size_t name_len;
	uint8_t ftype;             /* enum node_ftype */
	uint16_t mode;             /* permission bits incl. setuid/setgid/sticky */
	uint32_t uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	int64_t ctime_sec;         /* capture cache: unchanged-file test */
	uint32_t ctime_nsec;
	uint64_t ino;              /* capture cache */
	uint64_t size;             /* regular files; 0 otherwise */
	uint32_t rdev_major, rdev_minor;
	uint64_t link_id;          /* regular files with several links: same id = same inode */
	const uint8_t *target;     /* symlinks */
	size_t target_len;
	size_t nxattr;
	const struct node_xattr *xattrs; /* sorted by name, unique */
	uint8_t child_type;        /* 0 none, or the node type of child */
	uint8_t child[FERRY_HASH_LEN];
};

/* hash = BLAKE2b-256(type byte || data). */
void node_hash(int type, const void *data, size_t len, uint8_t out[FERRY_HASH_LEN]);

/* Appends one encoded entry to out (no validation beyond lengths). */
int node_entry_encode(struct fbuf *out, const struct node_entry *e) FERRY_WUR;
/* Checks one entry as the decoder does (names, types, modes, children). */
int node_entry_check(const struct node_entry *e, int is_root) FERRY_WUR;

/* A decoded directory (all chunks of an indexed one), owning its memory. */
struct node_dir {
	struct node_entry *ents;
	size_t n;
	uint8_t **bufs;            /* node bytes the entries point into */
	size_t nbufs;
	struct node_xattr **xas;
	size_t nxas;
};
void node_dir_release(struct node_dir *d); /* d reusable (zeroed) afterwards */

/* The entry of d named name (len bytes), by binary search, or NULL (d
 * NULL too). */
const struct node_entry *node_dir_find(const struct node_dir *d, const uint8_t *name, size_t len);

/* Decodes the bytes of one type-1 node, appending its entries to d (the
 * caller keeps buf alive as long as d; node_dir_load does that). */
int node_dir_decode(const uint8_t *buf, size_t len, struct node_dir *d) FERRY_WUR;

/* Reads a node by hash into out (reset first) and gives its type. */
typedef int (*node_read_fn)(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type,
			    struct fbuf *out);
/* Loads the directory hash (type 1, or type 4 dir index) through rd into d:
 * every chunk decoded, names strictly sorted across chunks. */
int node_dir_load(node_read_fn rd, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		  struct node_dir *d) FERRY_WUR;

/* Builds a directory from entries given in name order, split into chunks
 * at content-defined boundaries, with an index node over them when there
 * is more than one. put stores a node and returns its hash. */
typedef int (*node_put_fn)(void *arg, int type, const uint8_t *data, size_t len,
			   uint8_t hash[FERRY_HASH_LEN]);
struct node_dir_builder {
	node_put_fn put;
	void *arg;
	struct fbuf chunk;      /* u32 count placeholder + entries */
	uint32_t chunk_n;
	struct fbuf index;      /* index children so far */
	uint32_t nchunks;
	uint8_t first[NODE_NAME_MAX];
	size_t first_len;
	uint8_t last[NODE_NAME_MAX];
	size_t last_len;
};
void node_dir_builder_init(struct node_dir_builder *b, node_put_fn put, void *arg);
void node_dir_builder_release(struct node_dir_builder *b);
/* Adds e (names must come strictly increasing). */
int node_dir_builder_add(struct node_dir_builder *b, const struct node_entry *e) FERRY_WUR;
/* Stores the last chunk (and the index) and gives the directory's node. */
int node_dir_builder_finish(struct node_dir_builder *b, int *type,
			    uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;

/* One extent of a file: a block (hash, lsize) or a hole of len bytes. */
struct node_extent {
	int hole;
	uint64_t len;               /* bytes covered: lsize for a block */
	uint8_t hash[FERRY_HASH_LEN];
};
/* Walks the blocklist hash (type 2 or 3) through rd in file order, calling
 * fn with each extent and its offset; checks that the extents cover exactly
 * size bytes and that indexes are at most NODE_DEPTH_MAX deep. fn's nonzero
 * result stops the walk and is returned. */
typedef int (*node_extent_fn)(void *arg, const struct node_extent *x, uint64_t off);
int node_bl_walk(node_read_fn rd, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		 uint64_t size, node_extent_fn fn, void *fnarg) FERRY_WUR;
/* Decoders for one node each (the walkers use them; exported for tests and
 * for receivers that check nodes as they arrive). */
int node_bl_decode(const uint8_t *buf, size_t len, struct node_extent **ext, size_t *n) FERRY_WUR;
struct node_index_child {
	uint64_t span;
	uint8_t type;
	uint8_t hash[FERRY_HASH_LEN];
};
int node_bli_decode(const uint8_t *buf, size_t len, struct node_index_child **kids,
		    size_t *n) FERRY_WUR;

/* Builds a file's blocklist from extents in order: leaves of
 * NODE_BL_LEAF_RECORDS records (adjacent holes merged), with index levels
 * above when there are several. */
struct node_bl_builder {
	node_put_fn put;
	void *arg;
	uint64_t leaf_span;         /* bytes per leaf: records × recordsize */
	struct fbuf leaf;           /* u32 count + extents */
	uint32_t leaf_n;
	uint64_t leaf_off, pos;     /* where the leaf starts; bytes added so far */
	int last_hole;              /* offset in leaf of the last hole's length, -1 */
	size_t last_hole_at;
	struct fbuf levels[NODE_DEPTH_MAX]; /* pending index children per level */
	uint32_t level_n[NODE_DEPTH_MAX];
	uint64_t level_span[NODE_DEPTH_MAX];
};
void node_bl_builder_init(struct node_bl_builder *b, node_put_fn put, void *arg,
			  uint32_t recordsize);
void node_bl_builder_release(struct node_bl_builder *b);
int node_bl_builder_add(struct node_bl_builder *b, const struct node_extent *x) FERRY_WUR;
/* The blocklist's node; *type 0 when nothing was added (empty file). */
int node_bl_builder_finish(struct node_bl_builder *b, int *type,
			   uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;

/* A depth-first walk of a directory tree (the directory node type/hash,
 * read through rd), iterative: any depth up to NODE_TREE_DEPTH_MAX costs
 * one decoded directory per level of the current path and no C stack. A
 * directory below that depth must be empty (-FERR_LIMIT otherwise). The
 * callbacks (each may be NULL) return <0 to stop the walk with that
 * error, 1 to skip (enter: the directory's contents; entry: descending
 * into it) or 0. Entries come in name order; path is the entry's path
 * from the root directory ('/'-separated, not NUL-terminated, valid for
 * the call). */
struct node_walk_entry {
	const struct node_entry *e;
	unsigned level;            /* 1 for the root directory's entries */
	const char *path;
	size_t path_len;
};
struct node_walk_ops {
	int (*enter)(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level);
	int (*entry)(void *arg, const struct node_walk_entry *we);
	int (*leave)(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level);
};
int node_tree_walk(node_read_fn rd, void *rdarg, int type, const uint8_t hash[FERRY_HASH_LEN],
		   const struct node_walk_ops *ops, void *arg) FERRY_WUR;

/* The other tree's directory along a node_tree_walk's path (twin.c): a
 * walker of one tree carries the directory another tree (a base, or the
 * new tree) has at the same path, to leave alone the entries that are
 * the same in both. Start it with the other tree's root directory (type
 * 0: none); in the entry callback, node_twin_find gives the other's entry
 * of the same name in the directory open at level (the entry's level - 1)
 * and node_twin_next names the directory to open next (call it for every
 * directory entry the walk will descend into); in enter, when the walk
 * descends, node_twin_open(level); in leave, node_twin_close(level). A
 * NULL twin is allowed everywhere and finds nothing. */
struct node_twin;
int node_twin_new(node_read_fn rd, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		  struct node_twin **out) FERRY_WUR;
const struct node_entry *node_twin_find(const struct node_twin *t, unsigned level,
					const struct node_entry *e);
/* 1 when o is e's twin naming the same child (or both none) as the same
 * kind of entry: the subtree or blocklist under it is the same. */
int node_twin_same(const struct node_entry *e, const struct node_entry *o);
void node_twin_next(struct node_twin *t, const struct node_entry *o);
int node_twin_open(struct node_twin *t, unsigned level) FERRY_WUR;
/* The other tree's directory open at level (NULL: none), valid until
 * node_twin_close(level). */
const struct node_dir *node_twin_dir(const struct node_twin *t, unsigned level);
void node_twin_close(struct node_twin *t, unsigned level);
void node_twin_free(struct node_twin *t);

/* Root nodes: kind (filesystem or volume) and the root entry. */
int node_root_encode(struct fbuf *out, int kind, const struct node_entry *e) FERRY_WUR;
/* Decodes a root node; e borrows from buf and xa (caller frees *xa). */
int node_root_decode(const uint8_t *buf, size_t len, int *kind, struct node_entry *e,
		     struct node_xattr **xa) FERRY_WUR;

/* ---- blocks (pack.c) --------------------------------------------------------
 * A block is named by the BLAKE2b-256 of its logical content and stored once
 * per codec in append-only pack files under <pool>/packs/. */
#define STORE_BLOCK_MAX ((size_t)16 << 20) /* largest logical block */

/* ---- the storage rule (block.c) ----------------------------------------------
 * The one place that decides what becomes of a block, with C the target
 * codec (the receiving dataset's compression, or send --compress's):
 *   - logical content is encoded with C, kept only if that saves 12.5 %
 *     (psize <= lsize - lsize/8), else stored raw (ZFS's rule, C off: raw);
 *   - a payload already encoded exactly as C is kept as it came, once it
 *     decodes (strictly) to its hash;
 *   - a payload encoded otherwise is decoded, checked, and encoded as
 *     logical content is;
 *   - logical content marked tried (a sender encoded it with exactly C
 *     and it did not save 12.5 %: a stream's HINT says so) is checked and
 *     stored raw, without encoding it again;
 *   - an all-zero block: see enum store_block_zero.
 * Thread-safe, touches no pool. */
enum store_block_zero {
	/* capture: a hole, whatever C (off too), so a snapshot's tree does
	 * not depend on the compression it was captured with: a stream from
	 * an uncompressed source names the same blocks and holes as one from
	 * a compressed source, and a receiver's pool matches a capture */
	STORE_ZERO_HOLE,
	/* ZFS's rule: a hole unless C is off (store_block_prepare) */
	STORE_ZERO_CODEC,
	/* recv and send: the block is one a node names, so it is stored
	 * (sent): encoded with C whatever that saves, raw if that would be
	 * bigger */
	STORE_ZERO_ENCODE,
};
/* What the rule did with a block. */
enum store_block_how {
	STORE_BLOCK_HOLE,   /* nothing to store */
	STORE_BLOCK_ENCODE, /* logical content encoded with C, or raw */
	STORE_BLOCK_KEEP,   /* the payload, encoded as C, kept as it came */
	STORE_BLOCK_RECODE, /* the payload, encoded otherwise, decoded and encoded with C, or raw */
	STORE_BLOCK_TRIED,  /* logical content the sender tried with C: stored raw, untried */
};
/* A block on its way in: its logical content (codec off), or a payload
 * encoded with codec. */
struct store_block_in {
	struct codec_spec codec;
	const void *payload;
	size_t psize, lsize;            /* psize == lsize for logical content */
	const uint8_t *hash;            /* of the content; NULL: hashed here (logical only) */
	int checked;                    /* hash is known to be the content's: not checked again */
	const void *content;            /* an encoded payload's content, when the caller
					 * has it decoded and checked; else NULL */
	int tried;                      /* logical content only: the caller knows it was
					 * encoded with exactly the target codec and did
					 * not save 12.5 %, so it is stored raw (after the
					 * hash check) without trying again; the cost of a
					 * false claim is space, never a wrong block */
};
/* Scratch for the rule: dec holds an encoded payload's content (lsize
 * bytes; unused for logical content or with in->content), enc the encoded
 * output (at least lsize - lsize/8 bytes; codec_bound(lsize) lets every
 * all-zero block be encoded under STORE_ZERO_ENCODE). */
struct store_block_bufs {
	void *dec;
	size_t dec_cap;
	void *enc;
	size_t enc_cap;
};
/* A block ready for storage: payload is borrowed (the input or a scratch
 * buffer) and lives as long as those. */
struct store_block {
	uint8_t hash[FERRY_HASH_LEN];  /* of the logical content */
	struct codec_spec codec;       /* as stored: C, the payload's, or off when raw */
	int form;                      /* enum block_form */
	uint32_t lsize, psize;
	const uint8_t *payload;        /* psize bytes; NULL for a hole */
	int how;                       /* enum store_block_how */
};
/* Applies the rule to in for target codec C, zero blocks as zero says.
 * -FERR_CORRUPT when the content does not match in->hash (or an encoded
 * payload does not decode), -FERR_INVAL for a size out of 1..STORE_BLOCK_MAX. */
int store_block_rule(const struct store_block_in *in, struct codec_spec target,
		     enum store_block_zero zero, const struct store_block_bufs *bufs,
		     struct store_block *out) FERRY_WUR;
/* Does ahead of store_block_rule, for k blocks at once, the part that
 * costs most: each block whose content the rule would hash (logical
 * content without a hash or with one not checked, an encoded payload not
 * decoded: decoded strictly into bufs[i].dec here) is hashed with the
 * others, eight at a time (hash_blake2b_many). A block that passes is
 * marked in in[i] (hash set, from hashes[i] when it had none, checked, its
 * content given) so the rule does not do it again; a block that does not
 * (sizes out of range, a payload that does not decode, a wrong hash) is
 * left as it was, and the rule, applied to it in its turn, fails as it
 * would have. hashes (k entries) must outlive the rule's calls. */
void store_block_precheck(struct store_block_in *in, const struct store_block_bufs *bufs,
			  size_t k, uint8_t (*hashes)[FERRY_HASH_LEN]);
/* The most blocks worth one store_block_precheck: more only costs stack. */
#define STORE_PRECHECK_MAX 32
/* The rule for logical content src (hashed here), zero blocks as ZFS does;
 * scratch holds at least lsize bytes. */
int store_block_prepare(struct codec_spec policy, const void *src, size_t lsize,
			void *scratch, size_t scratch_cap, struct store_block *out) FERRY_WUR;
/* The rule for a payload encoded with c and C = c: decoded into scratch
 * (lsize bytes), checked against hash, and kept as it is. */
int store_block_prepare_encoded(struct codec_spec c, const void *payload, size_t psize,
				size_t lsize, const uint8_t hash[FERRY_HASH_LEN],
				void *scratch, size_t scratch_cap,
				struct store_block *out) FERRY_WUR;

/* A writer: one open pack plus the blocks, nodes and references of one
 * snapshot being built. Nothing it writes is visible in the catalogue until
 * store_writer_commit_snapshot; pack data is fsynced before that commit.
 * A writer holds the pool's gc lock shared, so `ferry gc` waits for it.
 * One writer per concurrent capture/receive, and at most one writer at a
 * time per open pool handle (its pending rows live in TEMP tables of that
 * handle's connection): concurrent writers each open the pool. Not
 * thread-safe itself. */
struct store_writer;
int store_writer_new(struct store_pool *p, struct store_writer **out) FERRY_WUR;
/* Drops everything uncommitted (pack bytes written become garbage for gc). */
void store_writer_free(struct store_writer *w);
/* Stores b (unless the pool or this writer already has hash under the same
 * codec) and references it from the snapshot being built. Holes are
 * ignored. *stored (may be NULL) is 1 when bytes were written. */
int store_writer_put(struct store_writer *w, const struct store_block *b, int *stored) FERRY_WUR;
/* As store_writer_put, where crc is the CRC-32C of b's psize payload
 * bytes, computed by the caller over those very bytes (a receive: the
 * stream's check of the record the block came in, when it is stored as
 * sent): the pack record's check is made from it without reading them
 * again. A wrong crc makes a record every later read refuses. */
int store_writer_put_crc(struct store_writer *w, const struct store_block *b, uint32_t crc,
			 int *stored) FERRY_WUR;
/* References an existing block by hash (any codec); -FERR_NOENT if the
 * pool and this writer have no copy. */
int store_writer_ref(struct store_writer *w, const uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;
/* Gives the snapshot w builds, whose root node is root, the block
 * references of its whole tree, at the cost of what differs from the
 * committed snapshot base_id (root node base_root): the base's references
 * are taken over, those of the subtrees only the new tree has are added
 * and those of what only the base had are dropped unless the new tree
 * still uses them (store/refs.c says how). The caller has referenced every
 * block that the nodes w holds name (a capture's or receive's own), and
 * those of the nodes for which is_new (may be NULL) returns 1 (a
 * receive's own nodes that the pool happened to have already, which the
 * writer does not hold again); every other node the pool has is taken as
 * a subtree of its own. Call it once, before the commit; the references
 * made so far stay. */
typedef int (*store_node_pred)(void *arg, const uint8_t hash[FERRY_HASH_LEN]);
int store_writer_refs_since(struct store_writer *w, int64_t base_id,
			    const uint8_t base_root[FERRY_HASH_LEN],
			    const uint8_t root[FERRY_HASH_LEN], store_node_pred is_new,
			    void *arg) FERRY_WUR;
/* How many distinct blocks (per codec) w references so far. */
int store_writer_nrefs(struct store_writer *w, uint64_t *n) FERRY_WUR;
/* 1 when the pool or this writer holds hash under codec c, else 0. */
int store_writer_has(struct store_writer *w, const uint8_t hash[FERRY_HASH_LEN],
		     struct codec_spec c) FERRY_WUR;
/* Stores a metadata node (type 1..4, len ≤ NODE_MAX) and writes its hash
 * (BLAKE2b-256 of type byte || bytes) to hash_out. Deduplicated. */
int store_writer_put_node(struct store_writer *w, int type, const void *data, size_t len,
			  uint8_t hash_out[FERRY_HASH_LEN]) FERRY_WUR;
/* Ends the writer's batch of TEMP-table inserts (they are kept) so the
 * caller can run its own catalogue transaction (store_tx_begin) before
 * committing; the next put starts a new batch. */
void store_writer_pause(struct store_writer *w);
/* Says the next commit is the writer's last: it then leaves its pending
 * rows for the writer's end instead of clearing them (a walk of every TEMP
 * page), so the writer must only be freed after that commit. */
void store_writer_last(struct store_writer *w);
/* Says the writer's packs will not be read again soon (a receive's): as
 * each early and final fsync of a pack is done, its pages leave the page
 * cache, so a receive of any size holds a few tens of MiB of it rather
 * than all it wrote. A capture's packs are read by the send that usually
 * follows it and stay. */
void store_writer_drop_cache(struct store_writer *w);
/* 0 while the writer's pending rows are whole; else the (sticky) error of
 * a batch the catalogue rolled back by itself after a failed statement:
 * nothing pending may then be committed or saved as a partial receive. */
int store_writer_intact(struct store_writer *w) FERRY_WUR;
/* Physical bytes and blocks written to packs so far by this writer. */
void store_writer_counters(const struct store_writer *w, uint64_t *blocks, uint64_t *bytes);

/* Commits the snapshot ds@name with root node root (a type-4 root node):
 * fsyncs the packs, then in one catalogue transaction records the new
 * blocks and nodes, the snapshot row and its block references. guid 0 means
 * a new random guid; creation_ns 0 means now. The writer can then build
 * another snapshot. *snap_id (may be NULL) receives the new row id. */
int store_writer_commit_snapshot(struct store_writer *w, const struct store_ds *ds,
				 const char *name, const uint8_t root[FERRY_HASH_LEN],
				 uint64_t guid, uint64_t creation_ns,
				 int64_t *snap_id) FERRY_WUR;

/* A reader of blocks and nodes; keeps pack files open. Single-threaded. */
struct store_reader;
int store_reader_new(struct store_pool *p, struct store_reader **out) FERRY_WUR;
void store_reader_free(struct store_reader *r);
/* Reads block hash into dst (exactly lsize bytes, its logical size), decoded
 * and verified against the hash. -FERR_NOENT if absent, -FERR_CORRUPT if the
 * pack does not hold what the index says. */
int store_block_read(struct store_reader *r, const uint8_t hash[FERRY_HASH_LEN], void *dst,
		     size_t lsize) FERRY_WUR;
/* Reads block hash as stored (for send -c): its codec, logical size, and
 * payload appended to out (reset first). prefer: the copy in that codec if
 * the pool has several. The payload is not decoded here. With vouched
 * (else NULL), *vouched is 1 when the pack record's CRC-32C tail (packs of
 * version 3) matches the bytes read: a tail is only ever written over a
 * block already checked against its hash (a capture hashes the content it
 * stores, a receive checks what it keeps, gc and repair check what they
 * copy), so such a payload may skip the decode and hash where its hash is
 * checked again downstream (a stream's receiver). 0: no tail, or one that
 * does not match; the caller must then check the block itself
 * (store_block_verify), which gives the verdict. */
int store_block_read_stored(struct store_reader *r, const uint8_t hash[FERRY_HASH_LEN],
			    struct codec_spec prefer, struct codec_spec *codec,
			    uint32_t *lsize, struct fbuf *out, int *vouched) FERRY_WUR;
/* Checks a stored payload (psize bytes in codec c) against hash: decoded
 * into scratch (at least lsize bytes; unused for codec off) and hashed. 0,
 * or -FERR_CORRUPT when
 * it does not decode to lsize bytes of that hash. Thread-safe. */
int store_block_verify(struct codec_spec c, const void *payload, size_t psize, size_t lsize,
		       const uint8_t hash[FERRY_HASH_LEN], void *scratch, size_t scratch_cap) FERRY_WUR;
/* One block for store_block_verify_many: store_block_verify's arguments,
 * and ok, its verdict. */
struct store_block_check {
	struct codec_spec c;
	const void *payload;
	size_t psize, lsize;
	const uint8_t *hash;
	void *scratch;
	size_t scratch_cap;
	int ok;    /* out: 1 when store_block_verify would return 0 */
	int *mark; /* NULL, or where ok is copied too */
};
/* store_block_verify for k blocks at once, their hashes eight at a time
 * (hash_blake2b_many). Sets v[i].ok (and *v[i].mark); a block not ok gets
 * no message here: store_block_verify, run on it, says what is wrong.
 * Thread-safe. */
void store_block_verify_many(struct store_block_check *v, size_t k);
/* For a pipeline's prep (lib.h): check(job, c) fills c for a job with a
 * block to verify (its mark: where the job keeps the verdict, left as it
 * was unless set) and returns 1, or returns 0; when two or more do, their
 * blocks go through store_block_verify_many together. */
void store_block_verify_jobs(void *const *jobs, size_t n,
			     int (*check)(void *job, struct store_block_check *c));
/* Where a stored block lies. */
struct store_block_loc {
	char pack[64];
	int64_t offset;
};
/* Where the last block rd read (any store_block_read*) lies. */
void store_reader_last_loc(const struct store_reader *rd, struct store_block_loc *out);
/* Turns err, met on block hash stored at loc, into an error of the same
 * code naming the block, its pack and offset: "block 1a2b... in pack 'P'
 * at offset N is damaged: <err's detail>". Returns that code. */
int store_block_damage(const uint8_t hash[FERRY_HASH_LEN], const struct store_block_loc *loc,
		       int err);
/* Calls fn with the path (relative to the snapshot root; "" for a
 * volume's image) of each file of the tree under root node root that uses
 * block hash, in tree order, until fn returns nonzero (returned; 1 stops
 * quietly). Walks the whole tree: for error reports, not hot paths. */
typedef int (*store_path_fn)(void *arg, const char *path, size_t len);
int store_block_users(struct store_reader *rd, const uint8_t root[FERRY_HASH_LEN],
		      const uint8_t hash[FERRY_HASH_LEN], store_path_fn fn, void *arg) FERRY_WUR;
/* Reads node hash: its type and bytes (appended to out after a reset),
 * verified against the hash. -FERR_NOENT if the pool does not have it. */
int store_node_read(struct store_reader *r, const uint8_t hash[FERRY_HASH_LEN], int *type,
		    struct fbuf *out) FERRY_WUR;
/* 1 when the pool has node hash / some copy of block hash, else 0. */
int store_node_has(struct store_reader *r, const uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;
int store_block_has(struct store_reader *r, const uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;

/* ---- snapshots (snapshot.c) ----------------------------------------------- */
struct store_snap {
	int64_t id;
	int64_t ds_id;
	char name[STORE_NAME_MAX + 1];     /* full: pool/ds@snap */
	char snapname[STORE_NAME_MAX + 1]; /* after the '@' */
	uint64_t guid;
	uint64_t createtxg;
	int64_t creation;                  /* seconds since the epoch */
	uint64_t creation_ns;
	uint8_t root[FERRY_HASH_LEN];      /* the root node (type 4, root kind) */
	int ds_type;                       /* filesystem or volume */
	uint64_t referenced, logicalreferenced, written;
};
/* Looks up "pool/ds@snap"; -FERR_NOENT if absent. */
int store_snap_lookup(struct store_pool *p, const char *name, struct store_snap *out) FERRY_WUR;
/* Calls fn for each snapshot of ds in creation order (createtxg); stops at
 * and returns fn's first nonzero result. */
typedef int (*store_snap_fn)(struct store_pool *p, const struct store_snap *s, void *arg);
int store_snap_iter(struct store_pool *p, const struct store_ds *ds, store_snap_fn fn,
		    void *arg) FERRY_WUR;
/* The snapshot of guid in p (the oldest row when a receive into the
 * same pool made a second one: the same content either way), wherever
 * renames put it; -FERR_NOENT when there is none. */
int store_snap_find_guid(struct store_pool *p, uint64_t guid, struct store_snap *out) FERRY_WUR;
/* The newest snapshot of ds; -FERR_NOENT when it has none. */
int store_snap_newest(struct store_pool *p, const struct store_ds *ds, struct store_snap *out) FERRY_WUR;
/* A snapshot as a store_ds of type STORE_DS_SNAPSHOT (id = snapshot id,
 * parent_id = its dataset's id) so store_prop_get/store_ds_space work on it. */
void store_snap_to_ds(const struct store_snap *s, struct store_ds *out);
/* Space unique to one snapshot of its dataset (zfs "used" of a snapshot). */
int store_snap_unique(struct store_pool *p, const struct store_snap *s, uint64_t *used) FERRY_WUR;

/* Snapshot selection for destroy: "pool/ds@a", "pool/ds@a%b" (a through b
 * in creation order, either side may be empty), or "pool/ds@a,b,c". With
 * recursive, the same names in every descendant dataset (missing ones are
 * skipped). Fills a malloc'd array (caller frees). */
int store_snap_select(struct store_pool *p, const char *spec, int recursive,
		      struct store_snap **out, size_t *n) FERRY_WUR;
/* Bytes that destroying exactly the snapshots list[0..n) would free (zfs
 * destroy -n -v "would reclaim"). */
int store_snap_reclaim(struct store_pool *p, const struct store_snap *list, size_t n,
		       uint64_t *bytes) FERRY_WUR;
/* Destroys the snapshots, all or nothing. Their blocks become garbage for
 * store_gc once nothing else references them. A held snapshot is
 * -FERR_BUSY (hold.c). */
int store_snap_destroy(struct store_pool *p, const struct store_snap *list, size_t n) FERRY_WUR;
/* Makes snap the newest snapshot of its dataset: later snapshots, and
 * bookmarks of later snapshots, are destroyed (in one transaction) when
 * recursive, else -FERR_EXISTS naming the first of them. */
int store_snap_rollback(struct store_pool *p, const struct store_snap *s, int recursive) FERRY_WUR;

/* ---- holds (hold.c) ---------------------------------------------------------
 * A hold is a tag on a snapshot that keeps it from being destroyed, as in
 * zfs: store_snap_destroy (and so destroy, rollback -r, recv -F) and
 * store_ds_destroy refuse a held snapshot with -FERR_BUSY ("dataset is
 * busy"). A snapshot marked for deferred destruction (destroy -d) is
 * destroyed when its last hold is released. userrefs counts the holds. */
#define STORE_HOLD_TAG_MAX 255
struct store_hold {
	char snapshot[STORE_NAME_MAX + 1]; /* full name */
	char tag[STORE_HOLD_TAG_MAX + 1];
	uint64_t creation_ns;              /* when the hold was made */
};
/* 0 when tag is 1..STORE_HOLD_TAG_MAX bytes without control characters,
 * else -FERR_NAME saying why. */
int store_hold_tag_check(const char *tag) FERRY_WUR;
/* Puts hold tag on every snapshot of list, all or nothing: -FERR_EXISTS
 * naming the first snapshot that has it already. */
int store_hold_add(struct store_pool *p, const struct store_snap *list, size_t n,
		   const char *tag) FERRY_WUR;
/* Releases hold tag from every snapshot of list, all or nothing:
 * -FERR_NOENT naming the first that lacks it. A snapshot marked by
 * store_snap_destroy_defer whose last hold goes is destroyed in the same
 * transaction. */
int store_hold_release(struct store_pool *p, const struct store_snap *list, size_t n,
		       const char *tag) FERRY_WUR;
/* Calls fn for each hold of s, by tag; stops at and returns fn's first
 * nonzero result. h lives for the call only. */
typedef int (*store_hold_fn)(struct store_pool *p, const struct store_hold *h, void *arg);
int store_hold_iter(struct store_pool *p, const struct store_snap *s, store_hold_fn fn,
		    void *arg) FERRY_WUR;
/* The number of holds of snapshot snap_id (zfs userrefs). */
int store_hold_count(struct store_pool *p, int64_t snap_id, uint64_t *n) FERRY_WUR;
/* 1 when snapshot snap_id is marked for deferred destruction, else 0. */
int store_snap_deferred(struct store_pool *p, int64_t snap_id) FERRY_WUR;
/* destroy -d: in one transaction, destroys the snapshots of list that have
 * no hold and marks the held ones for destruction when their last hold is
 * released. *deferred (may be NULL) gets how many were marked. */
int store_snap_destroy_defer(struct store_pool *p, const struct store_snap *list, size_t n,
			     size_t *deferred) FERRY_WUR;

/* ---- bookmarks (bookmark.c) ------------------------------------------------
 * pool/ds#mark: a snapshot's guid, creation order and time and its root
 * node, kept after the snapshot is gone so it can be the base of an
 * incremental send. gc keeps the nodes under a bookmark's root, not its
 * blocks. */
struct store_bookmark {
	int64_t id;
	int64_t ds_id;
	char name[STORE_NAME_MAX + 1];     /* full: pool/ds#mark */
	char markname[STORE_NAME_MAX + 1]; /* after the '#' */
	uint64_t guid;                     /* the snapshot's */
	uint64_t createtxg;                /* the snapshot's */
	int64_t creation;                  /* seconds since the epoch */
	uint64_t creation_ns;
	int root_type;                     /* node type of root (NODE_EXT) */
	uint8_t root[FERRY_HASH_LEN];
	int ds_type;                       /* filesystem or volume */
};
/* Creates bookmark name ("pool/ds#mark") from source, a snapshot
 * ("pool/ds@snap") or another bookmark ("pool/ds#other") of the same
 * dataset. -FERR_NAME for a bad name, -FERR_INVAL when the datasets differ,
 * -FERR_NOENT when the source is missing, -FERR_EXISTS when name is taken;
 * nothing changes on any error. */
int store_bookmark_create(struct store_pool *p, const char *source, const char *name) FERRY_WUR;
/* Looks up "pool/ds#mark"; -FERR_NOENT if absent. */
int store_bookmark_lookup(struct store_pool *p, const char *name,
			  struct store_bookmark *out) FERRY_WUR;
/* Removes bookmark b (as looked up); -FERR_NOENT if it is gone. */
int store_bookmark_destroy(struct store_pool *p, const struct store_bookmark *b) FERRY_WUR;
/* Calls fn for each bookmark of ds in creation order (then by name); stops
 * at and returns fn's first nonzero result. b lives for the call only. */
typedef int (*store_bookmark_fn)(struct store_pool *p, const struct store_bookmark *b, void *arg);
int store_bookmark_iter(struct store_pool *p, const struct store_ds *ds, store_bookmark_fn fn,
			void *arg) FERRY_WUR;
/* A bookmark as a store_ds of type STORE_DS_BOOKMARK (id = bookmark id,
 * parent_id = its dataset's id) for store_prop_get: name, type, guid,
 * createtxg and creation; space figures are "-". */
void store_bookmark_to_ds(const struct store_bookmark *b, struct store_ds *out);

/* ---- diff (diff.c) -----------------------------------------------------------
 * One line of zfs diff: change 'M' modified, '+' added, '-' removed, 'R'
 * renamed or moved (path -> newpath). ftype as zfs diff -F prints it: 'F'
 * file, '/' directory, '@' symlink, '|' fifo, 'B' block and 'C' character
 * device (capture keeps no sockets). Paths start at the dataset's root
 * with "/", the root itself is "/"; they are the names' bytes, not
 * escaped. ctime is the entry's as captured: the older snapshot's for
 * '-', the newer's otherwise. links is the link count change of an 'M'
 * that reports one (a hardlink added: +1), else 0. Borrowed for the call. */
struct store_diff_change {
	char change, ftype;
	const char *path, *newpath; /* newpath: 'R' only, else NULL */
	size_t path_len, newpath_len;
	int64_t ctime_sec;
	uint32_t ctime_nsec;
	int64_t links;
};
typedef int (*store_diff_fn)(void *arg, const struct store_diff_change *c);
/* Reports through fn what changed from snapshot a to the later b, as zfs
 * diff does (see store/diff.c: files known by the inode number capture
 * recorded, a file with several names reported once, unchanged files
 * under a renamed directory not at all). Equal subtrees are skipped by
 * hash. A negative return of fn ends the diff with it. -FERR_UNSUPPORTED
 * for volumes. */
int store_snap_diff(struct store_pool *p, const struct store_snap *a, const struct store_snap *b,
		    store_diff_fn fn, void *arg) FERRY_WUR;

/* ---- garbage collection (gc.c) ---------------------------------------------- */
struct store_gc_stats {
	uint64_t nodes_freed, blocks_freed, bytes_freed;
	uint64_t packs_deleted, packs_rewritten, orphans_deleted;
};
/* Reclaims nodes and blocks no snapshot references (nodes under a
 * bookmark's root are kept, its blocks are not): packs with no live
 * block are deleted, packs mostly garbage are rewritten (live blocks copied
 * to a new pack, fsynced, catalogue switched, old pack unlinked), then the
 * catalogue is compacted. Waits for no writer: -FERR_BUSY if one runs. */
int store_gc(struct store_pool *p, struct store_gc_stats *st) FERRY_WUR;
/* What store_gc_run reports as it goes: first the nodes it marks (done:
 * node bytes read so far; total 0, unknown), then the packs it sweeps
 * (done: bytes of the packs dealt with, of total, every pack's). */
enum store_gc_phase { STORE_GC_MARKING = 1, STORE_GC_SWEEPING };
struct store_gc_progress {
	enum store_gc_phase phase;
	uint64_t done, total;
};
struct store_gc_opts {
	/* called now and then (often: the callee throttles); may be NULL */
	void (*progress)(void *arg, const struct store_gc_progress *pg);
	void *arg;
};
/* store_gc with o's progress reports (o not NULL). */
int store_gc_run(struct store_pool *p, const struct store_gc_opts *o,
		 struct store_gc_stats *st) FERRY_WUR;

/* ---- transfer helpers for send/ and recv/ (xfer.c) ---------------------------
 * A key set, keys up to 64 bytes with a small value: in memory (at most
 * 3.1 MB), up to 49,152 keys of at most STORE_HSET_MEM_KEY_MAX bytes (a
 * caller's keys should fit: every longer one costs a statement); the keys beyond (or
 * longer) in a TEMP table of the pool's connection (memory stays bounded,
 * SQLite spills to a temp file) with a 1 MiB filter in front. So a set is
 * not transactional: what was added stays until deleted, whatever happens
 * to the connection's transactions (callers drop a set after a failure).
 * batch: group the table's inserts in transactions of our own; only when
 * no writer is open on p (a sender). Not thread-safe; lives while p is
 * open. */
#define STORE_HSET_MEM_KEY_MAX 43
struct store_hset;
int store_hset_new(struct store_pool *p, int batch, struct store_hset **out) FERRY_WUR;
void store_hset_free(struct store_hset *s); /* NULL is a no-op */
/* 1 when key was added, 0 when it was there already (val unchanged). */
int store_hset_add(struct store_hset *s, const void *key, size_t len, int val) FERRY_WUR;
/* 1 with *val (may be NULL) when key is there, else 0. */
int store_hset_get(struct store_hset *s, const void *key, size_t len, int *val) FERRY_WUR;
/* 1 when key was there and is removed, else 0. */
int store_hset_del(struct store_hset *s, const void *key, size_t len) FERRY_WUR;
/* Sets bit (one bit, > 0, that the caller's values leave free) in the
 * value of a key the set holds in memory: 1 when it was clear, 2 when it
 * was set already, each with the value before in *val (may be NULL). 3
 * with *val for a key in the set's table, which is not marked (an UPDATE
 * there would copy each page it changes into the open transaction's
 * journal, in memory: 80 MB for a 1,000,000-file receive): the caller
 * keeps its own record of it. 0 when key is not there. */
int store_hset_mark(struct store_hset *s, const void *key, size_t len, int bit,
		    int *val) FERRY_WUR;
int store_hset_count(struct store_hset *s, uint64_t *n) FERRY_WUR;
/* How many of its keys the set holds in memory (the rest, if any, are in
 * its table). */
uint32_t store_hset_memory_keys(const struct store_hset *s);

/* Which blocks snapshot snap_id references: one prepared query, asked
 * once per block (a send -i asks it for every block of a changed file).
 * Free it before p is closed. */
struct store_snap_blocks;
int store_snap_blocks_new(struct store_pool *p, int64_t snap_id,
			  struct store_snap_blocks **out) FERRY_WUR;
/* 1 when the snapshot references block hash (in any codec), else 0. */
int store_snap_blocks_has(struct store_snap_blocks *q,
			  const uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;
void store_snap_blocks_free(struct store_snap_blocks *q); /* NULL: no-op */

/* Reads nodes and looks up blocks that the writer open on p has stored but
 * not committed, then the pool's own. Lives while p is open. */
struct store_pnodes;
int store_pnodes_new(struct store_pool *p, struct store_pnodes **out) FERRY_WUR;
void store_pnodes_free(struct store_pnodes *n);
/* As store_node_read; a node_read_fn when arg is n. -FERR_NOENT if absent. */
int store_pnodes_read(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN], int *type,
		      struct fbuf *out) FERRY_WUR;
/* 1 with *type (may be NULL) when the writer or the pool has node hash. */
int store_pnodes_has_node(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN],
			  int *type) FERRY_WUR;
/* 1 with *lsize (may be NULL) when the writer or the pool has block hash. */
int store_pnodes_has_block(struct store_pnodes *n, const uint8_t hash[FERRY_HASH_LEN],
			   uint32_t *lsize) FERRY_WUR;

/* Partial receives (recv -s): an interrupted receive into dataset ds (full
 * name) keeps its packs, blocks, nodes and object set in the catalogue
 * (gc keeps those blocks) until it is resumed or aborted. */
struct store_partial {
	char token[STORE_TOKEN_MAX]; /* the resume token text */
	uint64_t to_guid, from_guid, pos;
	int created;            /* 1: ds was created for this receive */
};
/* Saves w's uncommitted state (packs fsynced first: its nodes, and every
 * block it references, written or already in the pool) and objs under ds,
 * replacing an earlier record of ds (its blocks and nodes are kept); then
 * w starts afresh. */
int store_partial_save(struct store_writer *w, struct store_pool *p, const char *ds,
		       struct store_hset *objs, const struct store_partial *pt) FERRY_WUR;
/* -FERR_NOENT when ds has no partial receive. */
int store_partial_get(struct store_pool *p, const char *ds, struct store_partial *out) FERRY_WUR;
/* Puts the saved nodes and block references back into the open writer's
 * pending rows (so the snapshot the resume commits references every block
 * of the whole stream, not only the ones after the interruption) and the
 * saved objects into objs. */
int store_partial_load(struct store_pool *p, const char *ds, struct store_hset *objs) FERRY_WUR;
/* Forgets ds's partial receive (its blocks become garbage for gc). */
int store_partial_drop(struct store_pool *p, const char *ds) FERRY_WUR;


/* ---- scrub support (scrub.c): the checks of `ferry scrub` that need the
 * packs and the catalogue's tables; scrub/ drives them. -------------------- */
/* What a scrub found, as recorded in the catalogue (the pool's error log,
 * as zpool keeps one): */
enum store_scrub_kind {
	STORE_SCRUB_BLOCK = 1,   /* an indexed block whose stored copy is damaged or gone */
	STORE_SCRUB_NODE,        /* a node row whose bytes do not match its hash */
	STORE_SCRUB_NOBLOCK,     /* a block a snapshot's tree names that the index lacks */
	STORE_SCRUB_NONODE,      /* a node a snapshot's tree names that the catalogue lacks */
	STORE_SCRUB_PACK,        /* a pack file missing, truncated, or with a bad header */
	STORE_SCRUB_SPACE,       /* a snapshot's recorded space figures differ from its blocks' */
	STORE_SCRUB_RECORD,      /* a record in a pack besides the indexed blocks (a node
				  * record, a checkpoint, or bytes that parse as none)
				  * that fails its checks; hash: a node record's node */
};
#define STORE_SCRUB_DETAIL_MAX 200
struct store_scrub_err {
	int64_t id;              /* row id in the error log (0 before it is recorded) */
	int kind;                /* enum store_scrub_kind */
	int has_hash;
	uint8_t hash[FERRY_HASH_LEN];
	struct codec_spec codec; /* blocks: the damaged copy's codec */
	char pack[64];           /* "" when no pack is involved */
	int64_t offset;          /* in pack; -1 when none */
	char detail[STORE_SCRUB_DETAIL_MAX];
};

/* A pass over every indexed block, pack by pack (by id), each pack in
 * offset order, reading runs of neighbouring blocks with one pread. It
 * holds the gc lock shared (packs do not vanish under it; writers go on).
 * It keeps no catalogue statement open between calls, so its caller may
 * write to the catalogue in between. Single-threaded, but for
 * store_scan_verify. */
struct store_scan;
struct store_scan_item {
	uint8_t hash[FERRY_HASH_LEN];
	struct codec_spec codec;
	int64_t offset;
	uint32_t lsize, psize;
	size_t at;               /* of its header in the batch's buffer */
	int err;                 /* 0, or -FERR_CORRUPT with why (set by next or verify) */
	char why[STORE_SCRUB_DETAIL_MAX];
};
struct store_scan_batch {
	int64_t pack_id;
	char pack[64];
	int64_t next_off;        /* the position after this batch: (pack_id, next_off) */
	struct store_scan_item *items;
	size_t n, cap;
	struct fbuf buf;         /* the bytes read: fbuf_init it once with a cap of at
				  * least STORE_BLOCK_MAX + 4 MiB (a run is at most 4
				  * MiB, or one block); items start zeroed */
	uint64_t bytes;          /* block bytes (headers and payloads) it covers */
	uint32_t tail;           /* the pack's records end with a CRC-32C (version 3): 4, else 0 */
	int deep;                /* set by the caller: decode and hash every block, not only
				  * check its CRC (blocks without one always are) */
};
/* Starts at (pack_id, offset): the first block at or after it (0, 0: all). */
int store_scan_new(struct store_pool *p, int64_t pack_id, int64_t offset,
		   struct store_scan **out) FERRY_WUR;
void store_scan_free(struct store_scan *s); /* NULL is a no-op */
/* The bytes (headers and payloads) of every indexed block, those before
 * the scan's start, and the number of blocks. */
int store_scan_totals(struct store_scan *s, uint64_t *total, uint64_t *before,
		      uint64_t *blocks) FERRY_WUR;
/* Fills b with the next run of blocks of one pack: 1 when it holds some,
 * 0 once every pack is done. Blocks that cannot be read (their pack file
 * missing, or past its end) come with err set, unread. */
int store_scan_next(struct store_scan *s, struct store_scan_batch *b) FERRY_WUR;
/* Checks each item of b not already failed: header against the index
 * row, payload decoded (into scratch, at least STORE_BLOCK_MAX bytes)
 * and hashed; with room for STORE_SCAN_LANES blocks' decoding in scratch,
 * that many hashes at a time. Sets err and why. Thread-safe; touches no
 * pool. */
void store_scan_verify(struct store_scan_batch *b, void *scratch, size_t cap);
/* The most blocks store_scan_verify hashes at once (hash_blake2b_many). */
#define STORE_SCAN_LANES 8
void store_scan_batch_release(struct store_scan_batch *b);

/* Calls fn for each pack-level problem: a pack the catalogue names whose
 * file is missing, shorter than its index rows reach, with index rows
 * past the size the catalogue recorded, or without a pack header. Then,
 * when no writer is alive (the gc lock is free: a pack no row names is
 * then nobody's), calls orphan for each pack file the catalogue does not
 * name, and sets *orphans_checked to 1 (else 0). Call it with no reader
 * or writer of this process open on p. */
typedef int (*store_scrub_err_fn)(void *arg, const struct store_scrub_err *e);
typedef int (*store_scrub_orphan_fn)(void *arg, const char *pack, uint64_t size);
int store_scrub_packs(struct store_pool *p, store_scrub_err_fn fn, store_scrub_orphan_fn orphan,
		      void *arg, int *orphans_checked) FERRY_WUR;
/* Every record of every pack besides its indexed blocks (those are the
 * block pass's): node records (in a version-3 pack checked by their
 * CRC-32C, with deep or in an older pack by their node hash too) and
 * checkpoints (hash and CRC), and any bytes there that parse as no
 * record; each damage reported to fn as STORE_SCRUB_RECORD with its pack
 * and offset. Unindexed block records (garbage gc has not rewritten) are
 * stepped over unchecked. *count and *bytes: the records checked. */
int store_scrub_records(struct store_pool *p, int deep, store_scrub_err_fn fn, void *arg,
			uint64_t *count, uint64_t *bytes) FERRY_WUR;
/* Checks every node row (type, size, bytes against the hash): fn for
 * each bad one; *count and *bytes the rows and their bytes. */
int store_scrub_nodes(struct store_pool *p, store_scrub_err_fn fn, void *arg, uint64_t *count,
		      uint64_t *bytes) FERRY_WUR;
/* Calls fn for each snapshot whose recorded referenced/logicalreferenced
 * differ from the sums over its block references. */
int store_scrub_space(struct store_pool *p, store_scrub_err_fn fn, void *arg) FERRY_WUR;
/* The indexed blocks no snapshot (nor a partial receive) references:
 * garbage that `ferry gc` frees. */
int store_scrub_unreferenced(struct store_pool *p, uint64_t *blocks, uint64_t *bytes) FERRY_WUR;

/* The state of the last scrub, in the catalogue (one row). */
enum { STORE_SCRUB_NONE = 0, STORE_SCRUB_SCANNING, STORE_SCRUB_PAUSED, STORE_SCRUB_FINISHED };
struct store_scrub_state {
	int state;
	uint64_t start_ns;       /* when the scrub began (its first run) */
	uint64_t end_ns;         /* finished: when; paused: when it stopped */
	uint64_t elapsed_ns;     /* time spent scanning over all its runs */
	int64_t pack_id, offset; /* the blocks before this position are checked */
	uint64_t bytes, blocks;  /* checked so far */
	uint64_t errors;         /* rows in the error log */
	uint64_t record_errors;  /* of them, damaged records besides the blocks
				  * (STORE_SCRUB_RECORD): every file still restores */
	uint64_t repaired;       /* bytes repaired (scrub --repair-from) */
};
/* STORE_SCRUB_NONE (zeros) when the pool was never scrubbed. Works on a
 * pool opened read-only. */
int store_scrub_state_get(struct store_pool *p, struct store_scrub_state *out) FERRY_WUR;
/* 1 when a scrub of p is running (its lock is held), else 0. Read-only. */
int store_scrub_running(struct store_pool *p) FERRY_WUR;
/* Takes the pool's scrub lock (one scrub at a time; held until the fd is
 * closed): -FERR_BUSY when another scrub holds it. */
int store_scrub_lock(struct store_pool *p, int *fd) FERRY_WUR;
/* In one transaction: the state row, the errors errs[0..n) added to the
 * log (their ids written back), and the stop request cleared when
 * clear_stop. With fresh, the log and its users are emptied first, and
 * with drop_kinds (a mask of 1 << kind) the rows of those kinds; its bit
 * STORE_SCRUB_DROP_GONE drops the damaged blocks whose copy has left the
 * index since they were logged (gc freed them while a scrub was stopped). */
#define STORE_SCRUB_DROP_GONE 1u
int store_scrub_checkpoint(struct store_pool *p, const struct store_scrub_state *st,
			   struct store_scrub_err *errs, size_t n, int fresh, unsigned drop_kinds,
			   int clear_stop) FERRY_WUR;
/* 1 when `ferry scrub -s` asked the running scrub to stop, else 0. */
int store_scrub_stop_requested(struct store_pool *p) FERRY_WUR;
/* Asks the running scrub to stop; -FERR_NOENT when none is running. */
int store_scrub_request_stop(struct store_pool *p) FERRY_WUR;
/* Calls fn for each row of the error log, by id. */
int store_scrub_err_iter(struct store_pool *p, store_scrub_err_fn fn, void *arg) FERRY_WUR;
/* The files that use a logged damage: replaces every user row with
 * users[0..n) (err ids, the snapshot or bookmark by row id and guid,
 * paths; "" for a volume's image or a node above any file). */
struct store_scrub_user {
	int64_t err_id;
	int bookmark;            /* obj_id is a bookmark's, else a snapshot's */
	int64_t obj_id;
	uint64_t guid;
	char *path;              /* malloc'd */
};
int store_scrub_users_put(struct store_pool *p, const struct store_scrub_user *users,
			  size_t n) FERRY_WUR;
/* Calls fn for every user row whose snapshot or bookmark still exists,
 * with its full name as it is now (pool/ds@snap, pool/ds#mark), sorted by
 * that name, path and err id. */
typedef int (*store_scrub_user_fn)(void *arg, int64_t err_id, const char *snap,
				   const char *path);
int store_scrub_users_iter(struct store_pool *p, store_scrub_user_fn fn, void *arg) FERRY_WUR;

/* For a replica that serves repairs (GET /v1/blocks, ferry-http.7): 1
 * with the block's logical size when a snapshot of ds or of a dataset
 * below it references block hash, else 0 (whether or not another
 * snapshot of the pool does: a token scoped to ds learns nothing of the
 * rest). */
int store_block_in_scope(struct store_pool *p, const struct store_ds *ds,
			 const uint8_t hash[FERRY_HASH_LEN], uint32_t *lsize) FERRY_WUR;

/* Repair (scrub --repair-from): good copies of damaged blocks go into a
 * new pack, fsynced with packs/ before one transaction points the index
 * rows at them, drops their log rows and the rows of packs left with no
 * block; good node bytes replace a damaged node row in that transaction.
 * Nothing is overwritten in place; a crash before the commit leaves an
 * orphan pack that gc removes. Holds the gc lock shared. */
struct store_repair;
int store_repair_new(struct store_pool *p, struct store_repair **out) FERRY_WUR;
/* Queues the copy of block e->hash in codec e->codec: payload (psize
 * bytes in that codec, of lsize logical bytes) must be what the index row
 * says (same lsize and psize: -FERR_INVAL otherwise); the caller checked
 * it against the hash. */
int store_repair_block(struct store_repair *rp, const struct store_scrub_err *e,
		       const void *payload, uint32_t psize, uint32_t lsize) FERRY_WUR;
/* Queues node bytes for e->hash (checked against it here). */
int store_repair_node(struct store_repair *rp, const struct store_scrub_err *e, int type,
		      const void *data, size_t len) FERRY_WUR;
/* The psize and lsize the index gives block e->hash in e->codec. */
int store_repair_row(struct store_repair *rp, const struct store_scrub_err *e, uint32_t *psize,
		     uint32_t *lsize) FERRY_WUR;
/* Makes what was queued durable and the catalogue's; *bytes the payload
 * bytes written. */
int store_repair_commit(struct store_repair *rp, uint64_t *bytes) FERRY_WUR;
void store_repair_free(struct store_repair *rp); /* drops what was not committed */

#endif
