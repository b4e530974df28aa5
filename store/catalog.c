/* store/catalog.c — the SQLite catalogue: opening in WAL mode, the schema,
 * pool metadata, transactions. SQLite gives the crash safety; data files are
 * made durable before the transaction that names them commits. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* What failed in ferry's words first, SQLite's text (if any) only after;
 * a busy pool names who holds it, a full disk says so and how much is
 * free. what is a gerund phrase ("recording a pack"). */
int cat_err(struct store_pool *p, const char *what)
{
	int code = sqlite3_extended_errcode(p->db) & 0xff;
	const char *msg = sqlite3_errmsg(p->db);
	switch (code) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return act_busy(p, ACT_CATALOG);
	case SQLITE_FULL:
		return pool_nospace(p);
	case SQLITE_NOMEM:
		return ferry_err(FERR_NOMEM, "pool '%s': %s: out of memory", p->name, what);
	case SQLITE_IOERR:
		return ferry_err(FERR_IO, "pool '%s': %s: I/O error in the catalogue (%s)", p->name,
				 what, msg);
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return ferry_err(FERR_CORRUPT, "pool '%s': %s: the catalogue is damaged (%s)",
				 p->name, what, msg);
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_CANTOPEN:
		return ferry_err(FERR_PERM, "pool '%s': %s: cannot write the catalogue (%s)",
				 p->name, what, msg);
	default:
		return ferry_err(FERR_CATALOG, "pool '%s': %s: catalogue error (%s)", p->name, what,
				 msg);
	}
}

/* cat_exec's callers run fixed statements; their first word says enough. */
static const char *exec_what(const char *sql)
{
	static const struct {
		const char *kw, *what;
	} words[] = {
		{"BEGIN", "starting a transaction"},
		{"COMMIT", "committing a transaction"},
		{"ROLLBACK", "rolling back a transaction"},
		{"PRAGMA", "setting up the catalogue"},
		{"CREATE", "creating catalogue tables"},
		{"VACUUM", "compacting the catalogue"},
		{"SELECT", "reading the catalogue"},
	};
	while (*sql == ' ')
		sql++;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (!strncmp(sql, words[i].kw, strlen(words[i].kw)))
			return words[i].what;
	return "updating the catalogue";
}

int cat_exec_what(struct store_pool *p, const char *sql, const char *what)
{
	char *msg = NULL;
	if (sqlite3_exec(p->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		int r = cat_err(p, what);
		sqlite3_free(msg);
		return r;
	}
	return 0;
}

int cat_exec(struct store_pool *p, const char *sql)
{
	return cat_exec_what(p, sql, exec_what(sql));
}

int cat_prepare(struct store_pool *p, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(p->db, sql, -1, st, NULL) != SQLITE_OK)
		return cat_err(p, "preparing a catalogue query");
	return 0;
}

int cat_exec_i64(struct store_pool *p, const char *sql, int64_t v)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, v);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "updating the catalogue");
	sqlite3_finalize(st);
	return r;
}

static const char schema[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE datasets("
	"  id INTEGER PRIMARY KEY,"
	"  parent_id INTEGER REFERENCES datasets(id),"
	"  name TEXT NOT NULL UNIQUE," /* inside the pool; '' is the root */
	"  type INTEGER NOT NULL,"
	"  guid INTEGER NOT NULL,"
	"  creation INTEGER NOT NULL,"
	"  createtxg INTEGER NOT NULL);"
	"CREATE INDEX datasets_parent ON datasets(parent_id);"
	"CREATE TABLE props("
	"  ds_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"
	"  name TEXT NOT NULL,"
	"  value TEXT NOT NULL,"
	"  source INTEGER NOT NULL," /* enum store_prop_source: local or received */
	"  PRIMARY KEY(ds_id, name, source));";

/* Blocks, nodes, snapshots, partial receives, bookmarks and holds. Kept apart from the base schema
 * so pools made before these tables existed get them on their next open. */
static const char schema_snap[] =
	"CREATE TABLE IF NOT EXISTS packs("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL UNIQUE," /* file name under packs/ */
	"  size INTEGER NOT NULL);"    /* bytes when last committed */
	"CREATE TABLE IF NOT EXISTS blocks("
	"  id INTEGER PRIMARY KEY,"
	"  hash BLOB NOT NULL,"        /* BLAKE2b-256 of the logical content */
	"  codec INTEGER NOT NULL,"    /* enum codec_id as stored (0: raw) */
	"  level INTEGER NOT NULL,"
	"  pack_id INTEGER NOT NULL,"
	"  offset INTEGER NOT NULL,"   /* of the block header in the pack */
	"  psize INTEGER NOT NULL,"
	"  lsize INTEGER NOT NULL,"
	"  UNIQUE(hash, codec, level));"
	"CREATE INDEX IF NOT EXISTS blocks_pack ON blocks(pack_id);"
	"CREATE TABLE IF NOT EXISTS nodes("
	"  hash BLOB PRIMARY KEY,"     /* BLAKE2b-256(type || data) */
	"  type INTEGER NOT NULL,"
	"  data BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS snapshots("
	"  id INTEGER PRIMARY KEY,"
	"  ds_id INTEGER NOT NULL REFERENCES datasets(id),"
	"  name TEXT NOT NULL,"
	"  guid INTEGER NOT NULL,"
	"  createtxg INTEGER NOT NULL,"
	"  creation_ns INTEGER NOT NULL,"
	"  root BLOB NOT NULL,"
	"  referenced INTEGER NOT NULL DEFAULT 0,"
	"  logicalreferenced INTEGER NOT NULL DEFAULT 0,"
	"  written INTEGER NOT NULL DEFAULT 0,"
	"  UNIQUE(ds_id, name));"
	"CREATE INDEX IF NOT EXISTS snapshots_ds ON snapshots(ds_id, createtxg);"
	/* a snapshot's block references are ds_refs (store/lifetimes.c),
	 * created with the view that shows them as the old snap_blocks rows */
	/* partial receives (recv -s, store/xfer.c): what an interrupted
	 * receive keeps until it is resumed or aborted; gc keeps its blocks */
	"CREATE TABLE IF NOT EXISTS recv_partial("
	"  ds TEXT PRIMARY KEY," /* full name of the receiving dataset */
	"  token TEXT NOT NULL,"
	"  to_guid INTEGER NOT NULL, from_guid INTEGER NOT NULL, pos INTEGER NOT NULL,"
	"  created INTEGER NOT NULL);" /* 1: the dataset was made for it */
	"CREATE TABLE IF NOT EXISTS recv_partial_blocks("
	"  ds TEXT NOT NULL, block_id INTEGER NOT NULL, PRIMARY KEY(ds, block_id)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS recv_partial_nodes("
	"  ds TEXT NOT NULL, hash BLOB NOT NULL, type INTEGER NOT NULL, data BLOB NOT NULL,"
	"  PRIMARY KEY(ds, hash)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS recv_partial_objs("
	"  ds TEXT NOT NULL, k BLOB NOT NULL, v INTEGER NOT NULL, PRIMARY KEY(ds, k)) WITHOUT ROWID;"
	/* bookmarks (store/bookmark.c): a snapshot's identity and root; gc
	 * keeps the nodes under root, not the blocks */
	"CREATE TABLE IF NOT EXISTS bookmarks("
	"  id INTEGER PRIMARY KEY,"
	"  ds_id INTEGER NOT NULL REFERENCES datasets(id),"
	"  name TEXT NOT NULL,"        /* after the '#' */
	"  guid INTEGER NOT NULL,"     /* the snapshot's */
	"  createtxg INTEGER NOT NULL,"
	"  creation_ns INTEGER NOT NULL,"
	"  root_type INTEGER NOT NULL,"
	"  root BLOB NOT NULL,"
	"  UNIQUE(ds_id, name));"
	"CREATE INDEX IF NOT EXISTS bookmarks_guid ON bookmarks(ds_id, guid);"
	/* holds (store/hold.c): tags that keep a snapshot, and the snapshots
	 * destroy -d left to go with their last hold */
	"CREATE TABLE IF NOT EXISTS holds("
	"  snap_id INTEGER NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,"
	"  tag TEXT NOT NULL, creation_ns INTEGER NOT NULL,"
	"  PRIMARY KEY(snap_id, tag)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS defer_destroy("
	"  snap_id INTEGER PRIMARY KEY REFERENCES snapshots(id) ON DELETE CASCADE);";

int cat_schema_create(struct store_pool *p)
{
	int r = cat_exec(p, schema);
	if (r < 0 || (r = cat_exec(p, schema_snap)) < 0 || (r = cat_exec(p, life_schema_sql())) < 0 ||
	    (r = cat_exec(p, census_schema_sql())) < 0)
		return r;
	return cat_exec(p, life_view_sql());
}

int cat_schema_snap(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int have = 0;
	int r = cat_prepare(p, "SELECT count(*) FROM sqlite_master WHERE name = 'holds'", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		have = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (!have && !(p->flags & STORE_OPEN_RDONLY) && (r = cat_exec(p, schema_snap)) < 0)
		return r;
	/* the census (census.c), which pools made before it lack */
	if (!(p->flags & STORE_OPEN_RDONLY) && (r = cat_exec(p, census_schema_sql())) < 0)
		return r;
	/* a pool made before ds_refs: its snap_blocks converted (one
	 * transaction), or read through a TEMP view when open read-only */
	return life_migrate(p);
}

/* How long a command waits for another one's write lock on the catalogue
 * before it says who holds it: FERRY_LOCK_WAIT seconds, 30 by default. */
static int cat_lock_wait_ms(void)
{
	const char *e = getenv("FERRY_LOCK_WAIT");
	char *end;
	if (!e || !*e)
		return 30000;
	unsigned long v = strtoul(e, &end, 10);
	if (*end || v > 86400)
		return 30000;
	return (int)(v * 1000);
}

/* After some failed statements (no memory, a full disk, an I/O error)
 * SQLite may roll back the transaction by itself; the statements after
 * it would then each commit on their own, a piece of what was meant to be
 * all or nothing. So while a transaction of ours is open, no commit but
 * its own may happen: the hook turns any other into a rollback, and a
 * rollback we did not ask for marks the transaction lost, so its
 * store_tx_commit fails and nothing of it stays. */
static int cat_commit_hook(void *arg)
{
	struct store_pool *p = arg;
	/* store_tx_commit's own COMMIT runs at depth 0 */
	return p->tx_depth > 0; /* nonzero: roll back instead */
}

static void cat_rollback_hook(void *arg)
{
	struct store_pool *p = arg;
	if (p->tx_depth > 0) /* not store_tx_rollback's own ROLLBACK, at depth 0 */
		p->tx_lost = p->tx_failed = 1;
}

int cat_open(struct store_pool *p, int create)
{
	char file[PATH_MAX + 32];
	int r;
	snprintf(file, sizeof file, "%s/%s", p->path, STORE_CATALOG);
	int fl = (p->flags & STORE_OPEN_RDONLY) ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	if (create) {
		/* SQLite would create the file with 0644 less the umask, and
		 * gives its -wal and -shm the database file's mode: made here
		 * private (an empty file is a new database to SQLite), all
		 * three are. */
		int fd = -1;
		if ((r = io_open_create(file, O_RDWR | O_EXCL, STORE_FILE_MODE, &fd)) < 0)
			return r;
		close(fd);
		fl |= SQLITE_OPEN_CREATE;
	} else if (access(file, F_OK) != 0 && errno == ENOENT) {
		/* SQLite would say "unable to open database file" */
		return ferry_err(FERR_CATALOG, "the catalogue '%s' is missing: 'ferry pool recover "
				 "%s' rebuilds it from the packs", file, p->name ? p->name : "POOL");
	}
	if ((r = catvfs_init()) < 0)
		return r;
	if (!p->site && !(p->site = catvfs_site_get(p->path)))
		return ferry_err(FERR_NOMEM, "opening the catalogue of pool '%s'", p->name);
	if (sqlite3_open_v2(file, &p->db, fl | SQLITE_OPEN_NOMUTEX, CATVFS_NAME) != SQLITE_OK) {
		r = p->db ? ferry_err(FERR_CATALOG, "cannot open catalogue '%s': %s", file,
				      sqlite3_errmsg(p->db))
			  : ferry_err(FERR_NOMEM, "cannot open catalogue '%s'", file);
		return r;
	}
	sqlite3_busy_timeout(p->db, cat_lock_wait_ms());
	sqlite3_extended_result_codes(p->db, 1);
	sqlite3_commit_hook(p->db, cat_commit_hook, p);
	sqlite3_rollback_hook(p->db, cat_rollback_hook, p);
	if (!(p->flags & STORE_OPEN_RDONLY) &&
	    (r = cat_exec(p, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;")) < 0)
		return r;
	/* SQLite's page caches (its default is 2 MiB): the catalogue's 8 MiB
	 * and the TEMP tables' 16 MiB (a writer's pending rows, send's and
	 * recv's key sets). They are the largest part of what a command holds
	 * and fill up to their bound on any pool of more than a few tens of
	 * thousands of files, so they are what keeps every operation under
	 * issue 14's 64 MiB. The TEMP tables take the larger share: a receive
	 * inserts every object of the stream into them, spread by hash, and
	 * with 8 MiB a 100,000-file receive spent 1.5 s more in the system
	 * reading their pages back. 8 MiB for the catalogue hold the upper
	 * levels of its indexes however large the pool; what misses is read
	 * from the OS's cache. The TEMP tables keep their rollback journal in
	 * memory: it only ever holds the pages one batch of inserts touched
	 * (store/pack.c), and on a file it cost two writes per page per batch
	 * (55,000 system calls for a 31,600-file capture). Debian's SQLite is
	 * built with SECURE_DELETE: every freed page is zeroed, so it goes
	 * into that journal first, and clearing a TEMP table (a writer's
	 * pending rows, a send's key sets, gc's live set) held a copy of the
	 * whole table in memory: 27 MiB for a 100,000-file receive, 40 MiB
	 * for gc's live set of a 1,000,000-file pool, growing with them. TEMP
	 * rows are this process's own scratch, gone when it closes: nothing to
	 * scrub. */
	return cat_exec(p, "PRAGMA foreign_keys=ON; PRAGMA cache_size=-8192;"
			   " PRAGMA temp.cache_size=-16384; PRAGMA temp.journal_mode=MEMORY;"
			   " PRAGMA temp.secure_delete=OFF;");
}

int cat_meta_get(struct store_pool *p, const char *key, char *buf, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT value FROM meta WHERE key = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		snprintf(buf, n, "%s", v ? v : "");
		r = 0;
	} else if (s == SQLITE_DONE) {
		r = ferry_err(FERR_NOENT, "catalogue has no '%s'", key);
	} else {
		r = cat_err(p, "reading pool metadata");
	}
	sqlite3_finalize(st);
	return r;
}

int cat_meta_get_opt(struct store_pool *p, const char *key, char *buf, size_t n)
{
	int r = cat_meta_get(p, key, buf, n);
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		if (n)
			buf[0] = 0;
		return 1;
	}
	return r;
}

int cat_meta_set(struct store_pool *p, const char *key, const char *value)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(p, "writing pool metadata");
	sqlite3_finalize(st);
	return r;
}

int cat_next_txg(struct store_pool *p, uint64_t *txg)
{
	char buf[32];
	if (p->txg_pinned && p->pin_txg) {
		*txg = p->pin_txg;
		return 0;
	}
	int r = cat_meta_get(p, "txg", buf, sizeof buf);
	if (r < 0)
		return r;
	uint64_t t = strtoull(buf, NULL, 10) + 1;
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)t);
	if ((r = cat_meta_set(p, "txg", buf)) < 0)
		return r;
	if (p->txg_pinned)
		p->pin_txg = t;
	*txg = t;
	return 0;
}

int store_txg_pin(struct store_pool *p)
{
	if (!p->tx_depth)
		return ferry_err(FERR_INVAL, "a shared txg needs an open transaction");
	p->txg_pinned = 1;
	p->pin_txg = 0;
	return 0;
}

void store_txg_unpin(struct store_pool *p)
{
	p->txg_pinned = 0;
	p->pin_txg = 0;
}

int store_tx_begin(struct store_pool *p)
{
	if (p->flags & STORE_OPEN_RDONLY)
		return ferry_err(FERR_PERM, "pool '%s' is open read-only", p->name);
	if (p->read_tx)
		return ferry_err(FERR_INVAL, "a write inside a read snapshot of the catalogue");
	if (p->tx_depth++ > 0)
		return 0;
	p->tx_failed = p->tx_lost = 0;
	act_begin(p);
	int r = cat_exec(p, "BEGIN IMMEDIATE");
	if (r < 0) {
		p->tx_depth = 0;
		act_end(p);
	}
	return r;
}

int store_read_begin(struct store_pool *p)
{
	int r;
	if (p->read_tx || p->tx_depth > 0 || !sqlite3_get_autocommit(p->db))
		return 0;
	if ((r = cat_exec(p, "BEGIN")) < 0)
		return r;
	p->read_tx = 1;
	return 0;
}

/* Leaves the transaction open on p's connection, if SQLite still has one
 * (a failed COMMIT may have rolled it back already): 0 once the
 * connection is out of it, else the ROLLBACK's error. A connection left
 * inside a transaction could begin no other: every later write of the
 * handle would fail with a misleading "cannot start a transaction". */
static int tx_leave(struct store_pool *p)
{
	if (sqlite3_get_autocommit(p->db))
		return 0;
	int r = cat_exec(p, "ROLLBACK");
	if (r < 0 && sqlite3_get_autocommit(p->db)) {
		ferry_err_clear(); /* SQLite ended it anyway */
		r = 0;
	}
	return r;
}

/* tx_leave on a path that reports an earlier failure: its detail stays
 * first, and a ROLLBACK that failed is named after it. */
static void tx_leave_after_error(struct store_pool *p)
{
	struct ferry_errsave e;
	ferry_err_save(&e);
	if (tx_leave(p) < 0)
		ferry_err_restore_also(&e, "rolling the catalogue back");
	else
		ferry_err_restore(&e);
}

void store_read_end(struct store_pool *p)
{
	if (!p->read_tx)
		return;
	p->read_tx = 0;
	/* nothing was written: a COMMIT that fails leaves the same state as
	 * a ROLLBACK, which tx_leave then does, so the next transaction can
	 * begin; the caller's detail is kept either way */
	struct ferry_errsave e;
	ferry_err_save(&e);
	if (cat_exec(p, "COMMIT") < 0)
		tx_leave_after_error(p);
	ferry_err_restore(&e);
}

int store_tx_commit(struct store_pool *p)
{
	int r = 0;
	if (p->tx_depth <= 0)
		return ferry_err(FERR_INVAL, "commit without a transaction");
	if (p->tx_depth > 1) {
		p->tx_depth--;
		return 0;
	}
	/* The checkpoint's statements run while the transaction still counts
	 * as open (depth 1), so the hooks guard them as they guard the rest:
	 * should SQLite roll back after one of them fails, the ones after it
	 * cannot commit one by one. At depth 0 they once did: the checkpoint's
	 * row committed alone, naming a file the failed commit then removed
	 * (62-faults, destroy -r, an allocation failing in the checkpoint). */
	if (!p->tx_failed)
		r = rec_checkpoint(p);
	p->tx_depth = 0; /* COMMIT's own commit is the one the hook lets by */
	if (p->tx_failed) {
		/* (a checkpoint statement's own error, after SQLite's rollback,
		 * is the commit hook's refusal: this says what happened) */
		ferry_err_clear();
		if (p->tx_lost)
			r = ferry_err(FERR_CATALOG, "pool '%s': the catalogue rolled back a transaction "
				      "after a failed statement; nothing of it was kept", p->name);
		else
			r = ferry_err(FERR_CATALOG, "transaction aborted by an earlier error");
	}
	if (r < 0 || (r = cat_exec(p, "COMMIT")) < 0)
		tx_leave_after_error(p);
	pack_tx_end(p, r == 0);
	act_end(p);
	return r;
}

void store_tx_rollback(struct store_pool *p)
{
	if (p->tx_depth <= 0)
		return;
	if (--p->tx_depth > 0) {
		p->tx_failed = 1; /* the outermost commit will roll back */
		return;
	}
	/* on an error path: the caller's detail is the one reported */
	tx_leave_after_error(p);
	pack_tx_end(p, 0);
	act_end(p);
}
