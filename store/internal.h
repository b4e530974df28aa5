/* store/internal.h — private to store/: the pool handle and catalogue
 * helpers shared by the store's files. */
#ifndef FERRY_STORE_INTERNAL_H
#define FERRY_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

#define STORE_MARKER "ferry.pool"
#define STORE_CATALOG "catalog.db"
/* Pools are private, as restic and borg repositories are: a pack holds
 * the content of files that may have been readable only by their owner.
 * Every directory and file the store makes gets exactly these modes,
 * whatever the umask. */
#define STORE_RESERVE "reserve"
#define STORE_DIR_MODE 0700
#define STORE_FILE_MODE 0600

struct cat_site;

struct store_pool {
	char *name;
	char *path;
	sqlite3 *db;
	int flags;
	int tx_depth; /* nested store_tx_begin calls share one transaction */
	int tx_failed;
	int tx_lost;   /* SQLite rolled the open transaction back by itself (catalog.c) */
	int read_tx;  /* store_read_begin's transaction is open */
	/* Packs a writer recorded inside a transaction that is still open
	 * (a nested commit, e.g. recv -F of a package): if the outermost
	 * transaction does not commit they are nobody's, and are unlinked
	 * (pack_tx_end). tx_lock_fd keeps the gc lock shared until then, so
	 * no other writer's orphan sweep can take them first. */
	char (*tx_packs)[32];
	size_t ntx_packs, cap_tx_packs;
	int tx_lock_fd;
	char activity[256]; /* store_pool_activity's description, or "" */
	char act_name[48];  /* this handle's record under run/ (activity.c), or "" */
	unsigned act_refs;  /* what keeps the record: writers, readers, gc, a transaction */
	struct cat_site *site; /* the catalogue VFS's state of this pool (catvfs.c) */
	int txg_pinned;       /* store_txg_pin: cat_next_txg gives pin_txg ... */
	uint64_t pin_txg;     /* ... once one is drawn (0: not yet) */
	/* format version 2: nodes and checkpoints of the state are written
	 * to the packs too (records.c); 0 in a version-1 pool */
	int records;
	/* refs.c left the writer's references (temp.w_refs) as a change to
	 * snapshot life_base, the newest of dataset life_ds, with the gone
	 * blocks in temp.r_gone (0: w_refs is the whole set); reset whenever
	 * w_refs is emptied (writer.c) */
	int64_t life_base, life_ds;
	/* census.c: the change to dataset census_ds's counts that the writer's
	 * snapshot makes (from the tree census_base to census_root), pending
	 * in TEMP tables until the commit applies it; reset with life_base */
	int census_mode; /* enum census_mode */
	int64_t census_ds;
	uint8_t census_base[FERRY_HASH_LEN], census_root[FERRY_HASH_LEN];
	/* reader.c: nodes this handle has read and checked (NULL until one) */
	struct node_memo *memo;
};

/* The catalogue's SQLite VFS (catvfs.c): registers it (idempotent). */
#define CATVFS_NAME "ferry"
int catvfs_init(void) FERRY_WUR;
/* The VFS's state of the pool in directory dir, shared by this process's
 * handles on it (reference counted); NULL when out of memory. */
struct cat_site *catvfs_site_get(const char *dir);
void catvfs_site_put(struct cat_site *s);
/* Pack writers open on the pool in this process: while there is one, the
 * catalogue's writes do not draw on the reserve. */
void catvfs_writers(struct cat_site *s, int delta);
/* For the catalogue's other writes on a full disk (a checkpoint,
 * records.c): frees up to want bytes of the reserve, as the VFS does for
 * its own, unless a pack writer is open; returns how many. */
uint64_t catvfs_reserve_take(struct cat_site *s, uint64_t want);

/* The reserve (reserve.c; see there). reserve_ensure grows POOL/reserve to
 * its size; when it cannot, RESERVE_STRICT gives -FERR_NOSPC saying why,
 * the others 0. RESERVE_REGROW only grows a reserve that exists (a
 * read-only command's close creates no file).
 * reserve_take frees up to want bytes of it for the pool in dir and
 * returns how many. */
enum { RESERVE_BEST, RESERVE_STRICT, RESERVE_REGROW };
int reserve_ensure(struct store_pool *p, int mode) FERRY_WUR;
/* reserve_ensure in a mode that never fails (RESERVE_BEST, RESERVE_REGROW),
 * keeping the thread's error detail. */
void reserve_grow(struct store_pool *p, int mode);
uint64_t reserve_take(const char *dir, uint64_t want);

/* Turns the last SQLite error on p into -FERR_CATALOG (or BUSY, NOSPC,
 * IO, NOMEM, CORRUPT, PERM) with a detail in ferry's words first: "pool
 * 'P': what: ... (SQLite's message)", the busy pool's holder (act_busy) or
 * the full disk's one line (pool_nospace). what is a gerund phrase. */
int cat_err(struct store_pool *p, const char *what);
int cat_exec(struct store_pool *p, const char *sql) FERRY_WUR;
/* The same, with what failed said in ferry's words. */
int cat_exec_what(struct store_pool *p, const char *sql, const char *what) FERRY_WUR;
int cat_prepare(struct store_pool *p, const char *sql, sqlite3_stmt **st) FERRY_WUR;
/* Runs one statement with a single integer parameter (?1). */
int cat_exec_i64(struct store_pool *p, const char *sql, int64_t v) FERRY_WUR;
/* Creates the schema in a new catalogue. */
int cat_schema_create(struct store_pool *p) FERRY_WUR;
/* The meta row key into buf (n bytes, cut to fit): 0, -FERR_NOENT when
 * there is none, or another negative error (no memory, I/O). */
int cat_meta_get(struct store_pool *p, const char *key, char *buf, size_t n) FERRY_WUR;
/* As cat_meta_get, but a missing row is 1 with buf "" and no error set:
 * for keys a pool may not have yet. Any other failure is returned, never
 * taken for "none" (a caller that took it so once deleted the newest
 * checkpoint as an orphan when an allocation failed). */
int cat_meta_get_opt(struct store_pool *p, const char *key, char *buf, size_t n) FERRY_WUR;
int cat_meta_set(struct store_pool *p, const char *key, const char *value) FERRY_WUR;
/* Bumps and returns the pool's transaction group counter (inside a tx). */
int cat_next_txg(struct store_pool *p, uint64_t *txg) FERRY_WUR;
/* Opens (and with create, creates) the SQLite catalogue of the pool at path. */
int cat_open(struct store_pool *p, int create) FERRY_WUR;

/* Dataset rows (dataset.c). ds_relname: the name inside the pool ("" for
 * the root) of a full name, NULL when it is not in p. ds_child_ids: the ids
 * of the child datasets of id, by name, in a malloc'd array. */
const char *ds_relname(const struct store_pool *p, const char *full);
int ds_load_by_id(struct store_pool *p, int64_t id, struct store_ds *out) FERRY_WUR;
void ds_fullname(const struct store_pool *p, const char *rel, char *out, size_t n);
int ds_child_ids(struct store_pool *p, int64_t id, int64_t **out, size_t *n) FERRY_WUR;

/* Activity records (activity.c): act_begin makes the handle's record when
 * it starts something another command may wait for (a writer, a reader,
 * gc, a write transaction) and act_end removes it when the last of those
 * ends; act_drop removes it whatever (the handle closes). All are best
 * effort and keep the thread's error detail. act_busy
 * returns -FERR_BUSY with a detail naming who holds the catalogue's write
 * lock (ACT_CATALOG) or the gc lock (ACT_GCLOCK), and what it is doing. */
enum { ACT_CATALOG, ACT_GCLOCK };
void act_begin(struct store_pool *p);
void act_end(struct store_pool *p);
void act_drop(struct store_pool *p);
/* The name of a new activity record ("PID.N"), unique in the process
 * whichever threads ask at once. */
void act_name_next(char *out, size_t n);
int act_busy(struct store_pool *p, int what);

/* quota.c: 0 when a local value canon of property name (quota, refquota;
 * any other passes) is none or not below what ds uses (references), else
 * -FERR_PROP as zfs words it. */
int quota_check_set(struct store_pool *p, const struct store_ds *ds, const char *name,
		    const char *canon) FERRY_WUR;
/* Lowers *avail to what the refquota of ds and the quotas of ds and its
 * ancestors leave (zfs's available). */
int quota_available(struct store_pool *p, const struct store_ds *ds, uint64_t *avail) FERRY_WUR;

/* recover.c, for pool.c's open: when a recover was killed after its new
 * catalogue became whole and durable (catalog.db.recover in dir),
 * finishes what it was doing: the old catalog.db and -wal go aside as
 * catalog.db.damaged-<time> (that name in damaged, when there was one),
 * -shm goes, and the new file becomes catalog.db. 0 when there is none. */
int recover_finish(const char *dir, char *damaged, size_t n) FERRY_WUR;

/* Writes the marker file ferry.pool of the pool at dir, crash-safely,
 * with this ferry's format version (pool.c; recover.c upgrades). */
int pool_write_marker(const char *dir) FERRY_WUR;

/* The registry (registry.c). */
int registry_get(const char *name, char *path, size_t n) FERRY_WUR;
int registry_put(const char *name, const char *path) FERRY_WUR;
int registry_del(const char *name) FERRY_WUR;

/* ---- properties: the rules (proprules.c), the values (prop.c) ---------- */
enum prop_kind { PK_CODEC, PK_RECSIZE, PK_VOLSIZE, PK_VOLBLOCK, PK_PATH, PK_QUOTA, PK_RO };
enum prop_settable { SET_NO, SET_YES, SET_CREATE };
/* One native property: its kind of value, the dataset types it applies to
 * (1 << STORE_DS_*), when it may be set, whether it is inherited, whether
 * `get all` shows it, and its default (NULL: none). */
struct prop_def {
	const char *name;
	enum prop_kind kind;
	int types;
	int settable;
	int inherit;
	int in_all;
	const char *def;
};
/* The native property called name or one of its aliases (recsize, ...);
 * NULL when there is none. */
const struct prop_def *prop_find(const char *name);
/* The i-th native property in `get all` order; NULL past the last. */
const struct prop_def *prop_at(size_t i);
/* Whether name is a valid user property name (ns:name). */
int prop_user_name(const char *name);
/* Whether name is zfs's written@SNAP (SNAP a snapshot's short or full
 * name, well formed); *since is then SNAP, borrowed from name. */
int prop_written_since(const char *name, const char **since);
/* The properties a dataset of type is created with: each valid at
 * creation, and a volume's volsize, a multiple of its volblocksize. */
int prop_check_create(int type, const struct store_propset *props, size_t n) FERRY_WUR;
/* -FERR_PROP when a dataset of type (a snapshot, a bookmark) has no
 * properties of its own to change. */
int prop_check_changeable(int type) FERRY_WUR;
/* Whether name may be inherited (zfs inherit); *canon is then its name
 * without an alias, borrowed from the rules or name. */
int prop_check_inherit(const char *name, const char **canon) FERRY_WUR;

/* Holds (hold.c): -FERR_BUSY naming the first held snapshot of list, or of
 * ds and its descendants; else 0. */
int hold_check_destroy(struct store_pool *p, const struct store_snap *list, size_t n) FERRY_WUR;
int hold_check_tree(struct store_pool *p, const struct store_ds *ds) FERRY_WUR;

/* store_prop_set that also accepts create-only properties (create_time). */
int prop_set(struct store_pool *p, const struct store_ds *ds,
	     const struct store_propset *props, size_t n, int source, int create_time) FERRY_WUR;

/* ---- snapshots, blocks and nodes (pack.c, snapshot.c, gc.c) ---------------- */
/* Creates the block, node and snapshot tables when missing (new pools and
 * pools made before they existed); run on every writable open. */
int cat_schema_snap(struct store_pool *p) FERRY_WUR;

#define PACK_DIR "packs"
#define PACK_GC_LOCK "gc.lock"
#define PACK_MAGIC "FRYPACK1"       /* 8 bytes at the start of every pack */
#define PACK_HDR_LEN 16             /* magic, le32 version, le32 zero (3: CRC-32C of the 12 before) */
#define PACK_VERSION_MAX 3          /* 3: every record ends with a CRC-32C (PACK_REC_TAIL) */
#define PACK_REC_TAIL 4             /* version 3: le32 CRC-32C of a record's header and payload */
#define PACK_BLK_MAGIC 0x4B4C4246u  /* "FBLK" little-endian */
#define PACK_BLK_HDR_LEN 48         /* magic, codec, level, 2 zero, lsize, psize, hash */
#define PACK_TARGET_SIZE ((uint64_t)64 << 20) /* a writer starts a new pack past this */

/* ---- records of a version-2 pack besides blocks (records.c) ------------- */
#define PACK_NOD_MAGIC 0x444F4E46u  /* "FNOD" */
#define PACK_NOD_HDR_LEN 44         /* magic, type, 0, le16 0, le32 len, node hash */
#define PACK_CAT_MAGIC 0x54414346u  /* "FCAT" */
#define PACK_CAT_HDR_LEN 56         /* magic, le16 1, le16 0, le64 seq, le32 len, le32 0, hash */
#define PACK_CAT_MAX ((size_t)256 << 20)
enum { PACK_REC_BLOCK = 1, PACK_REC_NODE, PACK_REC_STATE };
/* One record's header, parsed: kind, header and payload lengths, the
 * hash it claims (of the logical block, the node, or the state record's
 * header and payload), and its kind's fields. */
struct pack_rec {
	int kind;
	uint32_t hdr_len;
	uint64_t payload;
	uint8_t hash[FERRY_HASH_LEN];
	struct codec_spec codec; /* blocks */
	uint32_t lsize, psize;
	int ntype;               /* nodes */
	uint64_t seq;            /* state records */
	uint32_t tail;           /* PACK_REC_TAIL in a version-3 pack, else 0 */
};
/* A record's bytes in its pack: header, payload and (version 3) CRC. */
static inline uint64_t pack_rec_len(const struct pack_rec *x)
{
	return x->hdr_len + x->payload + x->tail;
}
/* The version new packs of p are written as (3 in a pool that keeps
 * records, else 1) and the CRC tail its records then carry (4 or 0). */
int pack_version_new(const struct store_pool *p);
size_t pack_tail_new(const struct store_pool *p);
/* The CRC-32C a version-3 record carries after its payload: over its
 * header (hl bytes) and payload (pl bytes). pack_tail_put encodes it. */
uint32_t pack_rec_crc(const void *h, size_t hl, const void *payload, size_t pl);
void pack_tail_put(uint8_t t[PACK_REC_TAIL], uint32_t crc);
/* Checks the CRC tail of the record (header h parsed as x; the tail's
 * bytes follow the payload's): 0, or -FERR_CORRUPT. 0 for a record
 * without a tail (versions 1 and 2). */
int pack_rec_crc_check(const uint8_t *h, const struct pack_rec *x, const uint8_t *payload) FERRY_WUR;
/* Pack header of a new pack (version 1, 2 or 3) / parsed (-FERR_CORRUPT:
 * bad magic, an unknown version, a version-3 header failing its CRC). */
void pack_hdr_put(uint8_t h[PACK_HDR_LEN], int version);
int pack_hdr_get(const uint8_t h[PACK_HDR_LEN], int *version) FERRY_WUR;
void pack_nod_hdr_put(uint8_t *h, int type, uint32_t len, const uint8_t hash[FERRY_HASH_LEN]);
/* Parses the record header at h (avail bytes of it present) of a pack of
 * version: -FERR_TRUNCATED when avail is short of it, -FERR_CORRUPT when
 * it is no valid header (caps and reserved fields checked). */
int pack_rec_parse(const uint8_t *h, size_t avail, int version, struct pack_rec *x) FERRY_WUR;
/* Checks payload (x->payload bytes, followed by the x->tail bytes of its
 * CRC) against the CRC and the hash of header h, parsed as x; scratch
 * holds STORE_BLOCK_MAX bytes for decoding a block. */
int pack_rec_verify(const uint8_t *h, const struct pack_rec *x, const uint8_t *payload,
		    uint8_t *scratch) FERRY_WUR;
/* For gc: calls fn for every node record of pack name, in order (fd is
 * the pack open read-only, off the record's header); a pack that is
 * missing, of version 1 or unparsable has none, a damaged tail ends it. */
typedef int (*pack_node_fn)(void *arg, int fd, uint64_t off, const struct pack_rec *x);
/* The window pack_nodes_each reads a pack through: one pread for the
 * headers of many records (a pread each took a fifth of a gc of 100,000
 * files). */
#define PACK_NODES_WIN ((size_t)1 << 20)
int pack_nodes_each(struct store_pool *p, const char *name, pack_node_fn fn, void *arg) FERRY_WUR;
/* The tables a state record holds, in order (records.c, recover.c). */
struct rec_table {
	int id;
	const char *name, *cols, *types, *query;
};
#define REC_NTABLES 8
extern const struct rec_table rec_tables[REC_NTABLES];
/* The name of the pack of checkpoint seq ("r<16 hex>.pack"); the seq a
 * name gives, that of a checkpoint's pack or (tmp) of its temporary file
 * (".r<16 hex>.tmp"), 0 for any other name. */
void rec_pack_name(uint64_t seq, char name[32]);
uint64_t rec_name_seq(const char *name, int tmp);
/* In the outermost transaction, before its COMMIT (catalog.c): when p
 * keeps records and the state the transaction leaves differs from the
 * last checkpoint's, writes a new checkpoint pack durably and records
 * it (its pack row, meta rec_seq, rec_state, rec_pack) in the
 * transaction; the file is unlinked if the transaction does not commit. */
int rec_checkpoint(struct store_pool *p) FERRY_WUR;

/* Takes the pool's gc lock: shared for writers, exclusive for gc (which
 * then fails with -FERR_BUSY rather than wait). *fd is the lock's fd;
 * closing it releases the lock. */
int pack_lock(struct store_pool *p, int exclusive, int *fd) FERRY_WUR;
/* Encodes / parses a block header (PACK_BLK_HDR_LEN bytes). */
void pack_blk_hdr_put(uint8_t *h, struct codec_spec c, uint32_t lsize, uint32_t psize,
		      const uint8_t hash[FERRY_HASH_LEN]);
int pack_blk_hdr_get(const uint8_t *h, struct codec_spec *c, uint32_t *lsize, uint32_t *psize,
		     uint8_t hash[FERRY_HASH_LEN]) FERRY_WUR;
/* Path of pack file name inside the pool. */
void pack_path(const struct store_pool *p, const char *name, char *out, size_t n);
/* Creates a new empty pack (header written) with a fresh random name;
 * returns its fd (O_RDWR|O_APPEND) and name (17 bytes with NUL). */
int pack_create(struct store_pool *p, int *fd, char name[32]) FERRY_WUR;
/* Inside the caller's transaction: the packs row of a new pack file name
 * of size bytes; its id into *id (may be NULL). */
int pack_row_insert(struct store_pool *p, const char *name, uint64_t size, int64_t *id) FERRY_WUR;
/* Unlinks pack name (a missing file is fine) and, with sync, fsyncs packs/
 * so the removal is durable. */
int pack_unlink(struct store_pool *p, const char *name, int sync) FERRY_WUR;
/* Calls fn for every file of packs/ the catalogue has no pack row for
 * (dfd: packs/ open, dir: its path), stopping at fn's first non-zero
 * return, which it returns (pack.c; gc sweeps them, scrub reports them). */
typedef int (*pack_orphan_fn)(void *arg, int dfd, const char *name, const char *dir);
int pack_orphans_each(struct store_pool *p, pack_orphan_fn fn, void *arg) FERRY_WUR;
/* Removes the pack files the catalogue does not name: left by a writer
 * that was killed, or by a crash between a commit and an unlink. Only
 * under the gc lock held exclusively (no writer is alive to be writing
 * one); *removed counts the files. */
int pack_sweep_orphans(struct store_pool *p, uint64_t *removed) FERRY_WUR;
/* gc's sweep: the same, inside a write transaction of the catalogue (so
 * no commit is in flight) in which it also removes the checkpoint packs
 * of a seq past the committed rec_seq and every checkpoint temporary
 * file: a kill between a checkpoint's rename and its COMMIT left them,
 * and their data packs are orphans this sweep removes, so recover must
 * not take them for the newest state. Rolls the transaction back. */
int pack_sweep_orphans_quiesced(struct store_pool *p, uint64_t *removed) FERRY_WUR;
/* Called by the catalogue when the outermost transaction ends: committed,
 * the packs of p->tx_packs are the catalogue's; otherwise they are
 * unlinked. Either way the list is emptied and tx_lock_fd closed. */
void pack_tx_end(struct store_pool *p, int committed);

/* For a receive interrupted with recv -s (xfer.c): writer_persist fsyncs
 * the writer's packs and, inside the caller's transaction (or its own),
 * records them and the blocks written so far in main.packs/main.blocks
 * (temp.w_new is kept, so the caller can name those blocks); then
 * writer_forget drops the writer's pending rows and packs so nothing of
 * them is committed again. */
int writer_persist(struct store_writer *w) FERRY_WUR;
void writer_forget(struct store_writer *w);
/* writer.c, for refs.c: the pool w writes to; and the writer's batching of
 * TEMP-table statements, to be called before each one (a broken writer
 * refuses). */
struct store_pool *writer_pool(const struct store_writer *w);
int writer_batch_op(struct store_writer *w) FERRY_WUR;
/* writer.c, for refs.c, xfer.c and the commit: a block the writer stored
 * (temp.w_new) is one the snapshot being written references, but the put
 * leaves its row in temp.w_refs to this one statement, which whatever
 * reads w_refs runs first (one INSERT ... SELECT instead of one statement
 * per block on the thread that orders them). Idempotent; inside the
 * caller's transaction or the writer's batch. */
int writer_refs_stored(struct store_writer *w) FERRY_WUR;
/* reader.c, for reader.c and xfer.c: the node row st of pool p just
 * stepped to (columns type, data) into out and *type, checked (type 1-4,
 * at most NODE_MAX bytes, content matching hash); resets st. A directory
 * or index row p has checked against its hash before is checked against
 * what it was then (type, length, CRC-32C: node_memo). */
int node_row_take(struct store_pool *p, sqlite3_stmt *st, const uint8_t hash[FERRY_HASH_LEN],
		  int *type, struct fbuf *out) FERRY_WUR;
/* reader.c: node hash of the given type is data (len bytes): its hash was
 * just computed from them, so a read of its row need not hash it again
 * (not kept for a blocklist: see node_memo). */
void node_memo_put(struct store_pool *p, const uint8_t hash[FERRY_HASH_LEN], int type,
		   const void *data, size_t len);
/* reader.c: gives p its memo of checked nodes, with the handle, before
 * any thread reads through it; out of memory leaves it without one
 * (every read is hashed). */
void node_memo_new(struct store_pool *p);
/* reader.c: frees p's memo of checked nodes (pool close). */
void node_memo_free(struct store_pool *p);
/* reader.c, for xfer.c and refs.c: a node looked up with sts[0], then
 * sts[1] (hash bound to parameter 1; columns type, data), as
 * node_row_take checks it; neither having it is -FERR_NOENT, "node H is
 * neither OTHER nor in the pool". */
int node_read_either(struct store_pool *p, sqlite3_stmt *const sts[2],
		     const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out,
		     const char *other) FERRY_WUR;
/* pack.c, for writer.c and reader.c: a lookup's step (1 row, 0 none, or
 * an error); hash, codec and level bound to parameters 1-3; on error
 * paths, an unlink (1 when done) and a sync of packs/ that keep the
 * thread's error detail (what they miss is an orphan the next sweep takes). */
int pack_step_exists(struct store_pool *p, sqlite3_stmt *st, const char *what) FERRY_WUR;
int pack_bind_hash_codec(sqlite3_stmt *st, const uint8_t *hash, struct codec_spec c);
int pack_unlink_quiet(struct store_pool *p, const char *name);
int pack_sync_dir_quiet(struct store_pool *p);
/* commit.c, inside a writer's commit: -FERR_EXISTS if ds has a snapshot
 * name (full: ds@name); the snapshot row, its references (temp.w_refs)
 * and figures, *id its row id; -FERR_QUOTA (store_quota_check) when the
 * snapshot would put a dataset over its quota or refquota (quota.c). */
int snap_name_free(struct store_pool *p, const struct store_ds *ds, const char *name,
		   const char *full) FERRY_WUR;
int snap_record(struct store_pool *p, const struct store_ds *ds, const char *name,
		const uint8_t root[FERRY_HASH_LEN], uint64_t guid, uint64_t creation_ns,
		int64_t *id) FERRY_WUR;

/* -FERR_NOSPC with the one line a full disk gives, whatever failed:
 * "pool 'bk': no space left on device (84K free)" (reserve.c). */
int pool_nospace(struct store_pool *p);
/* written@SINCE of ds (a filesystem, volume or snapshot; space.c): the
 * bytes its head (the newest snapshot) or the snapshot references that
 * snapshot since does not. since is a snapshot name after the '@' or a
 * full one, and must be of ds's own dataset and, for a snapshot, older
 * than it: else -FERR_NOENT or -FERR_INVAL with a detail that names
 * written@SINCE. */
int space_written_since(struct store_pool *p, const struct store_ds *ds, const char *since,
			uint64_t *out) FERRY_WUR;
/* Fills the snapshot count and per-codec block figures of a pool (space.c). */
int space_pool_stats(struct store_pool *p, struct store_pool_stats *s) FERRY_WUR;
/* ---- block lifetimes (lifetimes.c): ds_refs(ds_id, block_id, born, died) ----
 * The statements that create ds_refs with its indexes and the copies
 * trigger, and the read-only snap_blocks view over it. */
const char *life_schema_sql(void);
const char *life_view_sql(void);
/* On every open: converts a pool's old snap_blocks table to ds_refs in
 * one transaction (a read-only open gets a TEMP view instead). */
int life_migrate(struct store_pool *p) FERRY_WUR;
/* Empties the TEMP tables l_set, l_gone and l_merge (creating them). */
int life_temp_reset(struct store_pool *p) FERRY_WUR;
/* *yes: some block is stored under two codecs (meta 'multicopy'). */
int life_multicopy(struct store_pool *p, int *yes) FERRY_WUR;
/* Clears the mark once no hash has two copies (gc, after deleting). */
int life_multicopy_recheck(struct store_pool *p) FERRY_WUR;
/* A new newest snapshot of ds_id at txg, whose blocks are temp.l_set:
 * born and dead rows written; born[] the psize and lsize born at txg. */
int life_apply_set(struct store_pool *p, int64_t ds_id, int64_t txg, int64_t born[2]) FERRY_WUR;
/* The same as a change to the newest snapshot: temp.l_set the blocks the
 * writer references, temp.r_gone the hashes gone (refs.c); gone[] what
 * died (psize, lsize). */
/* life_apply_delta's statement for the gone blocks (for tests/unit/test_plans). */
extern const char life_sql_gone[];
int life_apply_delta(struct store_pool *p, int64_t ds_id, int64_t txg, int64_t born[2],
		     int64_t gone[2]) FERRY_WUR;
/* The psize of the blocks of snapshot txg t of ds_id that no other
 * snapshot of the dataset references (its `used`). */
int life_snap_unique(struct store_pool *p, int64_t ds_id, int64_t t, uint64_t *used) FERRY_WUR;
/* psize and lsize sums of the blocks snapshot txg t of ds_id references. */
int life_snap_has(struct store_pool *p, int64_t ds_id, int64_t t, int64_t *ref,
		  int64_t *lref) FERRY_WUR;
/* Destroys snapshot snap_id's row and the rows only it held, keeping the
 * normal form, and sets its successor's written. Inside a transaction. */
int life_destroy(struct store_pool *p, int64_t snap_id) FERRY_WUR;
/* Fills ds_refs from src, a table of (snap_id, block_id) rows: each
 * dataset's snapshots in txg order (migration, recover). */
int life_convert(struct store_pool *p, const char *src) FERRY_WUR;

/* Space figures of one snapshot id, from its block references (pack.c). */
int snap_figures(struct store_pool *p, int64_t snap_id, uint64_t *pbytes, uint64_t *lbytes) FERRY_WUR;

/* Creates the scrub's state and error-log tables if the pool has none yet,
 * inside the caller's transaction when there is one (scrub.c; repair.c
 * writes them too). */
int scrub_tables_create(struct store_pool *p) FERRY_WUR;

/* ---- census.c: the newest tree's reference counts per dataset ------------- */
enum census_mode {
	CENSUS_NONE,  /* nothing pending */
	CENSUS_DELTA, /* the base's counts, changed to the new tree's */
	CENSUS_FULL,  /* the new tree's counts, from nothing */
	CENSUS_DROP,  /* the base's rows proved wrong: the commit drops them */
};
/* How many node counts a census change holds in memory before it writes
 * them to its TEMP table (at most 49,152; tests lower it to reach that
 * path). */
extern size_t census_node_fill;
/* refs.c, for tests: how many times W1 and W2 walked as one, how many of
 * those W2 had to walk again alone (a node kept after W2 walked it), and
 * how many kept nodes W3 walked (W2 never hit them). */
extern size_t refs_fused_walks, refs_fused_clashes, refs_w3_nodes;
/* The census tables (CREATE IF NOT EXISTS), for a writable open. */
const char *census_schema_sql(void);
/* Counts the new tree root of dataset ds_id into the writer's TEMP tables:
 * as a change to the stored counts when they describe base_root, else
 * from nothing (a walk of the whole tree). *ready 1 when the counts of
 * the new tree can be asked (census_drop_live); 0 when the stored ones
 * proved wrong (the commit then drops them). */
int census_prepare(struct store_writer *w, int64_t ds_id, const uint8_t base_root[FERRY_HASH_LEN],
		   const uint8_t root[FERRY_HASH_LEN], int *ready) FERRY_WUR;
/* Deletes from temp.r_gone (refs.c) every block the new tree still names,
 * after census_prepare made it ready. */
int census_drop_live(struct store_pool *p) FERRY_WUR;
/* Inside the commit's transaction of dataset ds_id's snapshot of tree
 * root: applies what census_prepare counted, if it counted that tree for
 * that dataset from rows that still describe its base (else nothing). */
int census_commit(struct store_pool *p, int64_t ds_id, const uint8_t root[FERRY_HASH_LEN]) FERRY_WUR;
/* Inside a transaction that destroyed snapshots of dataset ds_id: its
 * rows follow the newest snapshot left (a change from the tree they
 * described, whose nodes gc has not taken yet), or go. */
int census_follow(struct store_pool *p, int64_t ds_id) FERRY_WUR;
/* Forgets a pending change (the writer's rows were cleared). */
void census_forget(struct store_pool *p);
/* Deletes dataset ds_id's counts (it is being destroyed). */
int census_destroy(struct store_pool *p, int64_t ds_id) FERRY_WUR;

/* node.c, for gc.c and recover.c: calls fn(arg, 0, hash) for every node
 * the node (type, b, len) names (directory children, index chunks and
 * children, a root's child) and, with blocks, fn(arg, 1, hash) for every
 * block of a blocklist; a malformed node is -FERR_CORRUPT. fn's first
 * nonzero result stops it and is returned. */
typedef int (*node_child_fn)(void *arg, int is_block, const uint8_t *hash);
int node_children(int type, const uint8_t *b, size_t len, int blocks, node_child_fn fn,
		  void *arg) FERRY_WUR;

/* ---- a bounded reader over node bytes (node.c, blocklist.c) -------------
 * nrd_need before every read: "node is truncated" when fewer than n bytes
 * are left; the nrd_u* then read little-endian fields without checking. */
struct node_rd {
	const uint8_t *p;
	size_t len, pos;
};

static inline int nrd_need(struct node_rd *r, size_t n)
{
	if (r->len - r->pos < n)
		return ferry_err(FERR_CORRUPT, "node is truncated");
	return 0;
}
static inline uint8_t nrd_u8(struct node_rd *r) { return r->p[r->pos++]; }
static inline uint16_t nrd_u16(struct node_rd *r) { uint16_t v = get_le16(r->p + r->pos); r->pos += 2; return v; }
static inline uint32_t nrd_u32(struct node_rd *r) { uint32_t v = get_le32(r->p + r->pos); r->pos += 4; return v; }
static inline uint64_t nrd_u64(struct node_rd *r) { uint64_t v = get_le64(r->p + r->pos); r->pos += 8; return v; }

/* The statements whose query plan tests/unit/test_plans.c checks: run
 * once per block, a plan that scans a snapshot's rows makes the caller
 * O(blocks x snapshot). */
extern const char store_sql_snap_has_block[];

#endif
