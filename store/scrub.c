/* store/scrub.c — what `ferry scrub` needs from the store besides the pass
 * over the packs (scan.c) and the repair (repair.c): the pack-level and
 * catalogue-level checks (missing, truncated and orphan packs, node rows,
 * space figures, garbage), and the scrub's state and error log in the
 * catalogue.
 *
 * The state row and the error log are the pool's memory of its last
 * scrub, as a zpool keeps its scan state and error log: `pool status`
 * prints them, a stopped or killed scrub resumes from the position the
 * last checkpoint recorded, and a repair drops the rows it healed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SCRUB_LOCK "scrub.lock"

static const char scrub_schema[] =
	"CREATE TABLE IF NOT EXISTS scrub_state("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  state INTEGER NOT NULL, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
	"  elapsed_ns INTEGER NOT NULL, pack_id INTEGER NOT NULL, offset INTEGER NOT NULL,"
	"  bytes INTEGER NOT NULL, blocks INTEGER NOT NULL, repaired INTEGER NOT NULL,"
	"  stop INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS scrub_errors("
	"  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, hash BLOB,"
	"  codec INTEGER NOT NULL, level INTEGER NOT NULL,"
	"  pack TEXT NOT NULL, offset INTEGER NOT NULL, detail TEXT NOT NULL);"
	/* who uses each damage: a snapshot (kind 0) or bookmark (kind 1) by
	 * row id and guid, not by name, so a rename since the scrub shows the
	 * new name and a destroyed one (whose id a later one may take: ids
	 * are not AUTOINCREMENT) drops out */
	"CREATE TABLE IF NOT EXISTS scrub_uses("
	"  err_id INTEGER NOT NULL, kind INTEGER NOT NULL, obj_id INTEGER NOT NULL,"
	"  guid INTEGER NOT NULL, path TEXT NOT NULL);";

static int table_exists(struct store_pool *p, const char *name)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
			    &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	r = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) > 0 :
	    cat_err(p, "reading the scrub state");
	sqlite3_finalize(st);
	return r;
}

/* The scrub tables made, inside the caller's transaction. The first
 * pools scrubbed kept their users by full name (scrub_users: err_id,
 * snap, path), read as they are until this first write drops them: every
 * write here is part of a scrub, whose tree pass records the users anew
 * by id. */
static int scrub_schema_ensure(struct store_pool *p)
{
	int r = cat_exec(p, scrub_schema);
	return r < 0 ? r : cat_exec(p, "DROP TABLE IF EXISTS scrub_users");
}

int scrub_tables_create(struct store_pool *p)
{
	return scrub_schema_ensure(p);
}

/* 1 when the scrub tables exist (a pool never scrubbed has none). */
static int scrub_tables(struct store_pool *p)
{
	return table_exists(p, "scrub_errors");
}

static void copy_why(char *dst, const char *src)
{
	snprintf(dst, STORE_SCRUB_DETAIL_MAX, "%s", src);
}

/* ---- pack-level and catalogue-level checks -------------------------------------- */

struct packcheck {
	int64_t id;
	char name[64];
	int64_t size, nblocks, reach;
};

static int report(store_scrub_err_fn fn, void *arg, int kind, const char *pack, const char *fmt,
		  ...) FERRY_PRINTF(5, 6);
static int report(store_scrub_err_fn fn, void *arg, int kind, const char *pack, const char *fmt,
		  ...)
{
	struct store_scrub_err e;
	va_list ap;
	memset(&e, 0, sizeof e);
	e.kind = kind;
	e.offset = -1;
	snprintf(e.pack, sizeof e.pack, "%s", pack ? pack : "");
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof e.detail, fmt, ap);
	va_end(ap);
	return fn(arg, &e);
}

struct orphan_cb {
	store_scrub_orphan_fn fn;
	void *arg;
};

static int orphan_one(void *arg, int dfd, const char *name, const char *dir)
{
	struct orphan_cb *o = arg;
	struct stat sb;
	uint64_t size = fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)sb.st_size : 0;
	return o->fn(o->arg, name, size);
}

static int orphans(struct store_pool *p, store_scrub_orphan_fn fn, void *arg)
{
	struct orphan_cb o = {fn, arg};
	return pack_orphans_each(p, orphan_one, &o);
}

int store_scrub_packs(struct store_pool *p, store_scrub_err_fn fn, store_scrub_orphan_fn orphan,
		      void *arg, int *orphans_checked)
{
	sqlite3_stmt *st = NULL;
	struct packcheck *v = NULL;
	size_t n = 0, cap = 0;
	int r, k, lock = -1;
	*orphans_checked = 0;
	/* a file no row names is an orphan only while no writer lives: a
	 * writer's packs are named at its commit */
	r = pack_lock(p, 1, &lock);
	if (r == -FERR_BUSY) {
		ferry_err_clear();
	} else if (r < 0) {
		return r;
	} else {
		r = orphans(p, orphan, arg);
		close(lock);
		if (r < 0)
			return r;
		*orphans_checked = 1;
	}
	if ((r = cat_prepare(p, "SELECT k.id, k.name, k.size, count(b.id),"
			     " coalesce(max(b.offset + b.psize), 0) FROM packs k LEFT JOIN blocks b"
			     " ON b.pack_id = k.id GROUP BY k.id ORDER BY k.id", &st)) < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(v, cap, n, 64, "scrubbing")) < 0)
			break;
		v[n].id = sqlite3_column_int64(st, 0);
		const char *nm = (const char *)sqlite3_column_text(st, 1);
		snprintf(v[n].name, sizeof v[n].name, "%s", nm ? nm : "");
		v[n].size = sqlite3_column_int64(st, 2);
		v[n].nblocks = sqlite3_column_int64(st, 3);
		v[n].reach = v[n].nblocks ? sqlite3_column_int64(st, 4) + PACK_BLK_HDR_LEN : 0;
		n++;
	}
	if (r == 0 && k != SQLITE_DONE)
		r = cat_err(p, "listing packs");
	sqlite3_finalize(st);
	for (size_t i = 0; i < n && r == 0; i++) {
		char path[PATH_MAX];
		uint8_t hdr[PACK_HDR_LEN];
		struct stat sb;
		size_t got = 0;
		pack_path(p, v[i].name, path, sizeof path);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &sb) != 0) {
			int e = errno;
			if (fd >= 0)
				close(fd);
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name,
				   "pack '%s' %s (%lld indexed blocks)", v[i].name,
				   e == ENOENT ? "is missing" : strerror(e), (long long)v[i].nblocks);
			continue;
		}
		/* the version: whether the last block ends with a CRC tail. A
		 * bad header is reported below; the reach then has none. */
		int version = 0;
		if (io_pread_full(fd, hdr, sizeof hdr, 0, &got) < 0 || got != sizeof hdr ||
		    pack_hdr_get(hdr, &version) < 0) {
			ferry_err_clear();
			version = 0;
		}
		if (version >= 3 && v[i].nblocks)
			v[i].reach += PACK_REC_TAIL;
		if ((uint64_t)sb.st_size < (uint64_t)v[i].reach)
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name,
				   "pack '%s' is truncated: %lld bytes, its index reaches %lld", v[i].name,
				   (long long)sb.st_size, (long long)v[i].reach);
		if (r == 0 && v[i].reach > v[i].size)
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name,
				   "pack '%s': index rows reach %lld, past the %lld bytes the catalogue"
				   " recorded", v[i].name, (long long)v[i].reach, (long long)v[i].size);
		if (r == 0 && !version)
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name, "pack '%s' has a bad header",
				   v[i].name);
		close(fd);
	}
	free(v);
	return r;
}

/* ---- the records besides the indexed blocks ------------------------------------- */

struct recscan {
	struct store_pool *p;
	int deep, fd, version;
	const char *pack;
	char rec_pack[64];         /* the committed checkpoint's pack (meta rec_pack) */
	struct fbuf buf;           /* the record being checked */
	uint8_t *scratch;          /* STORE_BLOCK_MAX: a resync's candidate blocks decode here */
	sqlite3_stmt *st_has;      /* the catalogue's row of a node */
	store_scrub_err_fn fn;
	void *arg;
	uint64_t count, bytes;
};

struct extent {
	uint64_t off, len;
};

/* An error that is damage of the bytes read (or of reading them), not a
 * failure of the scrub itself. */
static int is_damage(int r)
{
	return r == -FERR_CORRUPT || r == -FERR_TRUNCATED || r == -FERR_IO || r == -FERR_LIMIT;
}

/* The header of the record at off, which must end by end, into *x. */
static int rec_head(struct recscan *rs, uint64_t off, uint64_t end, struct pack_rec *x)
{
	uint8_t h[PACK_CAT_HDR_LEN];
	size_t got = 0, want = end - off < sizeof h ? (size_t)(end - off) : sizeof h;
	int r;
	memset(x, 0, sizeof *x);
	if ((r = io_pread_full(rs->fd, h, want, (off_t)off, &got)) < 0 ||
	    (r = pack_rec_parse(h, got, rs->version, x)) < 0)
		return r;
	if (end - off < pack_rec_len(x))
		return ferry_err(FERR_TRUNCATED, "its length runs past the next record");
	return 0;
}

/* The whole record at off (header parsed into x) into rs->buf. */
static int rec_load(struct recscan *rs, uint64_t off, const struct pack_rec *x)
{
	size_t n = (size_t)pack_rec_len(x), got = 0;
	int r;
	if ((r = fbuf_reserve(&rs->buf, n)) < 0 ||
	    (r = io_pread_full(rs->fd, rs->buf.data, n, (off_t)off, &got)) < 0)
		return r;
	rs->buf.len = got;
	return got == n ? 0 : ferry_err(FERR_TRUNCATED, "the record is truncated");
}

/* After damage at off: the next offset before end where a record parses
 * and passes all its checks (its hash too), or end. */
static int rec_resync(struct recscan *rs, uint64_t off, uint64_t end, uint64_t *next)
{
	enum { WIN = 65536 };
	uint8_t win[WIN + 4];
	int r;
	for (uint64_t pos = off + 1; pos + 4 <= end; pos += WIN) {
		size_t got = 0, want = end - pos < sizeof win ? (size_t)(end - pos) : sizeof win;
		if ((r = io_pread_full(rs->fd, win, want, (off_t)pos, &got)) < 0) {
			if (!is_damage(r))
				return r;
			ferry_err_clear();
			break;
		}
		for (size_t j = 0; j + 4 <= got && j < WIN; j++) {
			uint32_t m = get_le32(win + j);
			struct pack_rec x;
			if (m != PACK_BLK_MAGIC && m != PACK_NOD_MAGIC && m != PACK_CAT_MAGIC)
				continue;
			r = rec_head(rs, pos + j, end, &x);
			if (r == 0)
				r = rec_load(rs, pos + j, &x);
			if (r == 0)
				r = pack_rec_verify(rs->buf.data, &x, rs->buf.data + x.hdr_len, rs->scratch);
			if (r == 0) {
				*next = pos + j;
				return 0;
			}
			if (!is_damage(r))
				return r;
			ferry_err_clear();
		}
	}
	*next = end;
	return 0;
}

/* The damage of the record at off (x as far as its header parsed). */
static int rec_report(struct recscan *rs, uint64_t off, const struct pack_rec *x, int parsed,
		      int err)
{
	struct store_scrub_err e;
	char hex[FERRY_HASH_HEX], why[96];
	int r;
	memset(&e, 0, sizeof e);
	e.kind = STORE_SCRUB_RECORD;
	e.offset = (int64_t)off;
	snprintf(e.pack, sizeof e.pack, "%s", rs->pack);
	snprintf(why, sizeof why, "%s", ferry_errmsg(err));
	ferry_err_clear();
	if (parsed && x->kind == PACK_REC_NODE) {
		e.has_hash = 1;
		memcpy(e.hash, x->hash, FERRY_HASH_LEN);
		hash_to_hex(x->hash, hex);
		sqlite3_reset(rs->st_has);
		sqlite3_bind_blob(rs->st_has, 1, x->hash, FERRY_HASH_LEN, SQLITE_STATIC);
		if ((r = pack_step_exists(rs->p, rs->st_has, "looking up a node")) < 0)
			return r;
		snprintf(e.detail, sizeof e.detail, "node record of node %.16s: %s (%s)", hex, why,
			 r ? "the catalogue's copy serves restore; pool recover would lack this one"
			   : "a node the catalogue does not have");
	} else if (parsed && x->kind == PACK_REC_STATE) {
		snprintf(e.detail, sizeof e.detail, "checkpoint %" PRIu64 "%s: %s", x->seq,
			 strcmp(rs->pack, rs->rec_pack) ? "" :
			 " (the committed one, which pool recover starts from)", why);
	} else if (x->kind == PACK_REC_NODE || x->kind == PACK_REC_STATE) {
		snprintf(e.detail, sizeof e.detail, "%s whose header does not parse: %s",
			 x->kind == PACK_REC_NODE ? "a node record" : "a checkpoint", why);
	} else {
		snprintf(e.detail, sizeof e.detail, "bytes that are no good record: %s", why);
	}
	return rs->fn(rs->arg, &e);
}

/* The records of one pack between its indexed blocks (ext, sorted). */
/* What the damaged bytes [off, next) were, from their layout: a block
 * (PACK_REC_BLOCK), a node record or checkpoint, or 0 when they fit none.
 * One flip spares the magic or the length: either tells. */
static int rec_was(struct recscan *rs, uint64_t off, uint64_t next)
{
	uint8_t h[20];
	size_t got = 0;
	uint64_t span = next - off, tail = rs->version >= 3 ? PACK_REC_TAIL : 0;
	if (span < sizeof h || io_pread_full(rs->fd, h, sizeof h, (off_t)off, &got) < 0 ||
	    got != sizeof h) {
		ferry_err_clear();
		return 0;
	}
	uint32_t m = get_le32(h);
	if (m == PACK_NOD_MAGIC || PACK_NOD_HDR_LEN + get_le32(h + 8) + tail == span)
		return PACK_REC_NODE;
	if (m == PACK_CAT_MAGIC || PACK_CAT_HDR_LEN + get_le32(h + 16) + tail == span)
		return PACK_REC_STATE;
	if (m == PACK_BLK_MAGIC || PACK_BLK_HDR_LEN + get_le32(h + 12) + tail == span)
		return PACK_REC_BLOCK;
	return 0;
}

/* The records of one pack between its indexed blocks (ext, sorted). A
 * block record there is garbage (gc's to drop; a repair leaves the
 * damaged copy it replaced so): checked, so that a damaged one is
 * stepped over to the next good record, never reported. */
static int rec_pack_scan(struct recscan *rs, uint64_t size, const struct extent *ext, size_t n)
{
	uint64_t pos = PACK_HDR_LEN;
	size_t bi = 0;
	int r;
	while (pos < size) {
		while (bi < n && ext[bi].off < pos)
			bi++;
		if (bi < n && ext[bi].off == pos) { /* the block pass's */
			pos += ext[bi++].len;
			continue;
		}
		uint64_t end = bi < n ? ext[bi].off : size, next;
		struct pack_rec x;
		r = rec_head(rs, pos, end, &x);
		int parsed = r == 0;
		if (r == 0)
			r = rec_load(rs, pos, &x);
		if (r == 0) {
			const uint8_t *h = rs->buf.data, *pl = h + x.hdr_len;
			/* a node record is only a copy of a node the catalogue
			 * checks by hash: its CRC, as for blocks. A checkpoint
			 * is what recover starts from: its hash always. */
			if ((x.kind == PACK_REC_NODE || x.kind == PACK_REC_BLOCK) && x.tail && !rs->deep)
				r = pack_rec_crc_check(h, &x, pl);
			else
				r = pack_rec_verify(h, &x, pl, rs->scratch);
		}
		if (r == 0) {
			if (x.kind != PACK_REC_BLOCK) {
				rs->count++;
				rs->bytes += pack_rec_len(&x);
			}
			pos += pack_rec_len(&x);
			continue;
		}
		if (!is_damage(r))
			return r;
		int err = r;
		struct ferry_errsave es;
		ferry_err_save(&es);
		/* A record whose header parsed is stepped over by its length
		 * when the next record's header parses there (or the span
		 * ends there), even if that record is damaged too: resyncing
		 * to the next *good* record would skip, unreported, a damaged
		 * neighbour. A flipped length lands where no header parses. */
		uint64_t step = parsed ? pos + pack_rec_len(&x) : 0;
		struct pack_rec y;
		if (parsed && step <= end && (step == end || (r = rec_head(rs, step, end, &y)) == 0)) {
			next = step;
		} else {
			if (parsed && step <= end && !is_damage(r))
				return r;
			ferry_err_clear();
			if ((r = rec_resync(rs, pos, end, &next)) < 0)
				return r;
		}
		ferry_err_restore(&es);
		int was = parsed ? x.kind : rec_was(rs, pos, next);
		if (was == PACK_REC_BLOCK) {
			ferry_err_clear(); /* a damaged garbage block */
		} else {
			if (!parsed)
				x.kind = was;
			if ((r = rec_report(rs, pos, &x, parsed, err)) < 0)
				return r;
		}
		pos = next;
	}
	return 0;
}

int store_scrub_records(struct store_pool *p, int deep, store_scrub_err_fn fn, void *arg,
			uint64_t *count, uint64_t *bytes)
{
	struct recscan rs;
	sqlite3_stmt *st_packs = NULL, *st_ext = NULL;
	struct packname {
		int64_t id;
		char name[64];
	} *v = NULL;
	struct extent *ext = NULL;
	size_t nv = 0, capv = 0, next = 0, capext = 0;
	int r, k, lock = -1;
	memset(&rs, 0, sizeof rs);
	rs.p = p;
	rs.deep = deep;
	rs.fd = -1;
	rs.fn = fn;
	rs.arg = arg;
	fbuf_init(&rs.buf, PACK_CAT_HDR_LEN + PACK_CAT_MAX + PACK_REC_TAIL);
	*count = *bytes = 0;
	if (!p->records)
		return 0;
	if ((r = cat_meta_get_opt(p, "rec_pack", rs.rec_pack, sizeof rs.rec_pack)) < 0)
		goto out; /* (1: none yet) */
	/* no gc meanwhile: it deletes and rewrites packs */
	if ((r = pack_lock(p, 0, &lock)) < 0)
		goto out;
	if (!(rs.scratch = malloc(STORE_BLOCK_MAX))) {
		r = ferry_err(FERR_NOMEM, "scrubbing");
		goto out;
	}
	if ((r = cat_prepare(p, "SELECT id, name FROM packs ORDER BY id", &st_packs)) < 0 ||
	    (r = cat_prepare(p, "SELECT offset, psize FROM blocks WHERE pack_id = ? ORDER BY offset",
			     &st_ext)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM nodes WHERE hash = ?", &rs.st_has)) < 0)
		goto out;
	while ((k = sqlite3_step(st_packs)) == SQLITE_ROW) {
		if ((r = VEC_GROW(v, capv, nv, 64, "scrubbing")) < 0)
			goto out;
		v[nv].id = sqlite3_column_int64(st_packs, 0);
		const char *nm = (const char *)sqlite3_column_text(st_packs, 1);
		snprintf(v[nv].name, sizeof v[nv].name, "%s", nm ? nm : "");
		nv++;
	}
	if (k != SQLITE_DONE) {
		r = cat_err(p, "listing packs");
		goto out;
	}
	for (size_t i = 0; i < nv; i++) {
		char path[PATH_MAX];
		uint8_t hdr[PACK_HDR_LEN];
		struct stat sb;
		size_t got = 0;
		pack_path(p, v[i].name, path, sizeof path);
		/* a pack missing, unreadable or with a bad header is
		 * store_scrub_packs's to report; one of version 1 has only
		 * blocks, the block pass's */
		if ((rs.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (fstat(rs.fd, &sb) != 0 || io_pread_full(rs.fd, hdr, sizeof hdr, 0, &got) < 0 ||
		    got != sizeof hdr || pack_hdr_get(hdr, &rs.version) < 0 || rs.version < 2) {
			ferry_err_clear();
			close(rs.fd);
			rs.fd = -1;
			continue;
		}
		(void)posix_fadvise(rs.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		uint64_t tail = rs.version >= 3 ? PACK_REC_TAIL : 0;
		next = 0;
		sqlite3_reset(st_ext);
		sqlite3_bind_int64(st_ext, 1, v[i].id);
		while ((k = sqlite3_step(st_ext)) == SQLITE_ROW) {
			int64_t off = sqlite3_column_int64(st_ext, 0), ps = sqlite3_column_int64(st_ext, 1);
			if (off < PACK_HDR_LEN || ps <= 0 || (uint64_t)ps > STORE_BLOCK_MAX)
				continue; /* a bad row: the block pass reports it */
			if ((r = VEC_GROW(ext, capext, next, 256, "scrubbing")) < 0)
				goto out;
			ext[next].off = (uint64_t)off;
			ext[next++].len = PACK_BLK_HDR_LEN + (uint64_t)ps + tail;
		}
		if (k != SQLITE_DONE) {
			r = cat_err(p, "reading the block index");
			goto out;
		}
		rs.pack = v[i].name;
		r = rec_pack_scan(&rs, (uint64_t)sb.st_size, ext, next);
		close(rs.fd);
		rs.fd = -1;
		if (r < 0)
			goto out;
	}
	r = 0;
	*count = rs.count;
	*bytes = rs.bytes;
out:
	if (rs.fd >= 0)
		close(rs.fd);
	sqlite3_finalize(st_packs);
	sqlite3_finalize(st_ext);
	sqlite3_finalize(rs.st_has);
	fbuf_release(&rs.buf);
	free(rs.scratch);
	free(v);
	free(ext);
	if (lock >= 0)
		close(lock);
	return r;
}

int store_scrub_nodes(struct store_pool *p, store_scrub_err_fn fn, void *arg, uint64_t *count,
		      uint64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	uint64_t nn = 0, nb = 0;
	int r, k;
	if ((r = cat_prepare(p, "SELECT hash, type, data FROM nodes", &st)) < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_scrub_err e;
		uint8_t h[FERRY_HASH_LEN];
		int t = sqlite3_column_int(st, 1);
		const void *d = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		nn++;
		nb += len;
		memset(&e, 0, sizeof e);
		e.kind = STORE_SCRUB_NODE;
		e.offset = -1;
		if (sqlite3_column_bytes(st, 0) != FERRY_HASH_LEN) {
			snprintf(e.detail, sizeof e.detail, "a node row has a key of %d bytes",
				 sqlite3_column_bytes(st, 0));
		} else {
			e.has_hash = 1;
			memcpy(e.hash, sqlite3_column_blob(st, 0), FERRY_HASH_LEN);
			if (t < 1 || t > 4 || len > NODE_MAX)
				snprintf(e.detail, sizeof e.detail, "node of type %d and %zu bytes", t, len);
			else {
				node_hash(t, d, len, h);
				if (memcmp(h, e.hash, FERRY_HASH_LEN))
					snprintf(e.detail, sizeof e.detail,
						 "node content does not match its hash");
			}
		}
		if (e.detail[0] && (r = fn(arg, &e)) < 0)
			break;
	}
	if (r == 0 && k != SQLITE_DONE)
		r = cat_err(p, "reading the nodes");
	sqlite3_finalize(st);
	*count = nn;
	*bytes = nb;
	return r;
}

int store_scrub_space(struct store_pool *p, store_scrub_err_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	struct row {
		int64_t id, ds_id;
		uint64_t ref, lref;
		char name[STORE_NAME_MAX + 1];
	} *v = NULL;
	size_t n = 0, cap = 0;
	int r, k;
	if ((r = cat_prepare(p, "SELECT id, ds_id, name, referenced, logicalreferenced FROM snapshots"
			     " ORDER BY id", &st)) < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(v, cap, n, 64, "scrubbing")) < 0)
			break;
		v[n].id = sqlite3_column_int64(st, 0);
		v[n].ds_id = sqlite3_column_int64(st, 1);
		const char *nm = (const char *)sqlite3_column_text(st, 2);
		snprintf(v[n].name, sizeof v[n].name, "%s", nm ? nm : "");
		v[n].ref = (uint64_t)sqlite3_column_int64(st, 3);
		v[n].lref = (uint64_t)sqlite3_column_int64(st, 4);
		n++;
	}
	if (r == 0 && k != SQLITE_DONE)
		r = cat_err(p, "listing snapshots");
	sqlite3_finalize(st);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct store_ds ds;
		uint64_t pb = 0, lb = 0;
		if ((r = snap_figures(p, v[i].id, &pb, &lb)) < 0 ||
		    (r = ds_load_by_id(p, v[i].ds_id, &ds)) < 0)
			break;
		if (pb != v[i].ref || lb != v[i].lref)
			r = report(fn, arg, STORE_SCRUB_SPACE, NULL,
				   "snapshot '%s@%s' records referenced %" PRIu64 " and logicalreferenced %"
				   PRIu64 ", its blocks sum to %" PRIu64 " and %" PRIu64,
				   ds.name, v[i].name, v[i].ref, v[i].lref, pb, lb);
	}
	free(v);
	return r;
}

int store_scrub_unreferenced(struct store_pool *p, uint64_t *blocks, uint64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT count(*), coalesce(sum(psize), 0) FROM blocks WHERE id NOT IN"
			    " (SELECT block_id FROM ds_refs UNION ALL SELECT block_id FROM"
			    " recv_partial_blocks)", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*blocks = (uint64_t)sqlite3_column_int64(st, 0);
		*bytes = (uint64_t)sqlite3_column_int64(st, 1);
	} else {
		r = cat_err(p, "counting unreferenced blocks");
	}
	sqlite3_finalize(st);
	return r;
}

/* ---- state, error log, lock ---------------------------------------------------- */

int store_scrub_lock(struct store_pool *p, int *fd)
{
	char path[PATH_MAX];
	int f = -1, r;
	snprintf(path, sizeof path, "%s/%s", p->path, SCRUB_LOCK);
	if ((r = io_open_create(path, O_RDWR, STORE_FILE_MODE, &f)) < 0)
		return r;
	while (flock(f, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(f);
		if (e == EWOULDBLOCK)
			return ferry_err(FERR_BUSY, "a scrub of pool '%s' is running", p->name);
		return ferry_err_errno(e, "cannot lock '%s'", path);
	}
	*fd = f;
	return 0;
}

int store_scrub_running(struct store_pool *p)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", p->path, SCRUB_LOCK);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot open '%s'", path);
	int r;
	while ((r = flock(f, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
		;
	int e = errno;
	close(f); /* releases the lock it may have taken */
	if (r == 0)
		return 0;
	return e == EWOULDBLOCK ? 1 : ferry_err_errno(e, "cannot lock '%s'", path);
}

int store_scrub_state_get(struct store_pool *p, struct store_scrub_state *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	memset(out, 0, sizeof *out);
	if ((r = scrub_tables(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT state, start_ns, end_ns, elapsed_ns, pack_id, offset, bytes,"
			     " blocks, repaired, (SELECT count(*) FROM scrub_errors), (SELECT count(*)"
			     " FROM scrub_errors WHERE kind = ?1) FROM scrub_state WHERE id = 1", &st)) < 0)
		return r;
	if (sqlite3_bind_int(st, 1, STORE_SCRUB_RECORD) != SQLITE_OK) {
		r = cat_err(p, "reading the scrub state");
		sqlite3_finalize(st);
		return r;
	}
	int k = sqlite3_step(st);
	if (k == SQLITE_ROW) {
		out->state = sqlite3_column_int(st, 0);
		out->start_ns = (uint64_t)sqlite3_column_int64(st, 1);
		out->end_ns = (uint64_t)sqlite3_column_int64(st, 2);
		out->elapsed_ns = (uint64_t)sqlite3_column_int64(st, 3);
		out->pack_id = sqlite3_column_int64(st, 4);
		out->offset = sqlite3_column_int64(st, 5);
		out->bytes = (uint64_t)sqlite3_column_int64(st, 6);
		out->blocks = (uint64_t)sqlite3_column_int64(st, 7);
		out->repaired = (uint64_t)sqlite3_column_int64(st, 8);
		out->errors = (uint64_t)sqlite3_column_int64(st, 9);
		out->record_errors = (uint64_t)sqlite3_column_int64(st, 10);
	} else if (k != SQLITE_DONE) {
		r = cat_err(p, "reading the scrub state");
	}
	sqlite3_finalize(st);
	return r;
}

static int err_insert(struct store_pool *p, sqlite3_stmt *st, struct store_scrub_err *e)
{
	sqlite3_reset(st);
	sqlite3_bind_int(st, 1, e->kind);
	if (e->has_hash)
		sqlite3_bind_blob(st, 2, e->hash, FERRY_HASH_LEN, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 2);
	sqlite3_bind_int(st, 3, e->codec.id);
	sqlite3_bind_int(st, 4, e->codec.level);
	sqlite3_bind_text(st, 5, e->pack, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, e->offset);
	sqlite3_bind_text(st, 7, e->detail, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return cat_err(p, "recording a scrub error");
	e->id = sqlite3_last_insert_rowid(p->db);
	return 0;
}

int store_scrub_checkpoint(struct store_pool *p, const struct store_scrub_state *s,
			   struct store_scrub_err *errs, size_t n, int fresh, unsigned drop_kinds,
			   int clear_stop)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = scrub_schema_ensure(p)) < 0)
		goto out;
	if (fresh && (r = cat_exec(p, "DELETE FROM scrub_errors; DELETE FROM scrub_uses")) < 0)
		goto out;
	for (int k = 1; k < 32 && r == 0; k++)
		if (drop_kinds & (1u << k))
			r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE kind = ?", k);
	if (r == 0 && (drop_kinds & STORE_SCRUB_DROP_GONE))
		r = cat_exec(p, "DELETE FROM scrub_errors WHERE kind = 1 AND NOT EXISTS (SELECT 1 FROM"
			     " blocks b WHERE b.hash = scrub_errors.hash AND b.codec = scrub_errors.codec"
			     " AND b.level = scrub_errors.level)");
	if (r < 0 || (drop_kinds && (r = cat_exec(p, "DELETE FROM scrub_uses WHERE err_id NOT IN"
						  " (SELECT id FROM scrub_errors)")) < 0))
		goto out;
	if ((r = cat_prepare(p, "INSERT INTO scrub_state(id, state, start_ns, end_ns, elapsed_ns,"
			     " pack_id, offset, bytes, blocks, repaired, stop) VALUES(1, ?1, ?2, ?3,"
			     " ?4, ?5, ?6, ?7, ?8, ?9, 0) ON CONFLICT(id) DO UPDATE SET state = ?1,"
			     " start_ns = ?2, end_ns = ?3, elapsed_ns = ?4, pack_id = ?5, offset = ?6,"
			     " bytes = ?7, blocks = ?8, repaired = ?9, stop = stop * ?10", &st)) < 0)
		goto out;
	sqlite3_bind_int(st, 1, s->state);
	sqlite3_bind_int64(st, 2, (int64_t)s->start_ns);
	sqlite3_bind_int64(st, 3, (int64_t)s->end_ns);
	sqlite3_bind_int64(st, 4, (int64_t)s->elapsed_ns);
	sqlite3_bind_int64(st, 5, s->pack_id);
	sqlite3_bind_int64(st, 6, s->offset);
	sqlite3_bind_int64(st, 7, (int64_t)s->bytes);
	sqlite3_bind_int64(st, 8, (int64_t)s->blocks);
	sqlite3_bind_int64(st, 9, (int64_t)s->repaired);
	sqlite3_bind_int(st, 10, clear_stop ? 0 : 1);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording the scrub state");
	sqlite3_finalize(st);
	st = NULL;
	if (r < 0 || !n)
		goto out;
	if ((r = cat_prepare(p, "INSERT INTO scrub_errors(kind, hash, codec, level, pack, offset,"
			     " detail) VALUES(?, ?, ?, ?, ?, ?, ?)", &st)) < 0)
		goto out;
	for (size_t i = 0; i < n && r == 0; i++)
		r = err_insert(p, st, &errs[i]);
out:
	sqlite3_finalize(st);
	if (r < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

int store_scrub_stop_requested(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = scrub_tables(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT stop FROM scrub_state WHERE id = 1", &st)) < 0)
		return r;
	int k = sqlite3_step(st);
	r = k == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 :
	    k == SQLITE_DONE ? 0 : cat_err(p, "reading the scrub state");
	sqlite3_finalize(st);
	return r;
}

int store_scrub_request_stop(struct store_pool *p)
{
	int fd = -1, r = store_scrub_lock(p, &fd);
	if (r == 0) {
		close(fd);
		return ferry_err(FERR_NOENT, "no scrub of pool '%s' is running", p->name);
	}
	if (r != -FERR_BUSY)
		return r;
	ferry_err_clear();
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = scrub_schema_ensure(p)) < 0 ||
	    (r = cat_exec(p, "UPDATE scrub_state SET stop = 1 WHERE id = 1")) < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

int store_scrub_err_iter(struct store_pool *p, store_scrub_err_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	int r, k;
	if ((r = scrub_tables(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT id, kind, hash, codec, level, pack, offset, detail FROM"
			     " scrub_errors ORDER BY id", &st)) < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_scrub_err e;
		memset(&e, 0, sizeof e);
		e.id = sqlite3_column_int64(st, 0);
		e.kind = sqlite3_column_int(st, 1);
		if (sqlite3_column_bytes(st, 2) == FERRY_HASH_LEN) {
			e.has_hash = 1;
			memcpy(e.hash, sqlite3_column_blob(st, 2), FERRY_HASH_LEN);
		}
		e.codec.id = (uint8_t)sqlite3_column_int(st, 3);
		e.codec.level = (uint8_t)sqlite3_column_int(st, 4);
		const char *pk = (const char *)sqlite3_column_text(st, 5);
		snprintf(e.pack, sizeof e.pack, "%s", pk ? pk : "");
		e.offset = sqlite3_column_int64(st, 6);
		const char *d = (const char *)sqlite3_column_text(st, 7);
		copy_why(e.detail, d ? d : "");
		if ((r = fn(arg, &e)) != 0)
			break;
	}
	if (r == 0 && k != SQLITE_DONE && k != SQLITE_ROW)
		r = cat_err(p, "reading the scrub errors");
	sqlite3_finalize(st);
	return r;
}

int store_scrub_users_put(struct store_pool *p, const struct store_scrub_user *u, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = scrub_schema_ensure(p)) < 0 || (r = cat_exec(p, "DELETE FROM scrub_uses")) < 0 ||
	    (r = cat_prepare(p, "INSERT INTO scrub_uses(err_id, kind, obj_id, guid, path)"
			     " VALUES(?, ?, ?, ?, ?)", &st)) < 0)
		goto out;
	for (size_t i = 0; i < n && r == 0; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, u[i].err_id);
		sqlite3_bind_int(st, 2, u[i].bookmark ? 1 : 0);
		sqlite3_bind_int64(st, 3, u[i].obj_id);
		sqlite3_bind_int64(st, 4, (int64_t)u[i].guid);
		sqlite3_bind_text(st, 5, u[i].path ? u[i].path : "", -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(p, "recording the files a damage touches");
	}
out:
	sqlite3_finalize(st);
	if (r < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

struct user_row {
	int64_t err_id;
	char *name, *path; /* one allocation: name, then path */
};

static int user_row_cmp(const void *a, const void *b)
{
	const struct user_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (!c)
		c = strcmp(x->path, y->path);
	return c ? c : (x->err_id > y->err_id) - (x->err_id < y->err_id);
}

int store_scrub_users_iter(struct store_pool *p, store_scrub_user_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	struct user_row *v = NULL;
	size_t n = 0, cap = 0;
	int r, k = SQLITE_DONE, legacy;
	if ((r = scrub_tables(p)) <= 0)
		return r;
	/* a pool scrubbed by an older ferry and not since: its users by the
	 * names they had then (scrub_schema_ensure) */
	if ((legacy = table_exists(p, "scrub_users")) < 0)
		return legacy;
	/* the names as they are now: a snapshot or bookmark destroyed since
	 * (or whose id another took: the guid differs) uses nothing */
	r = cat_prepare(p, legacy ? "SELECT err_id, snap, '', '', path FROM scrub_users" :
			"SELECT u.err_id, d.name, u.kind, coalesce(s.name, b.name), u.path FROM"
			" scrub_uses u LEFT JOIN snapshots s ON u.kind = 0 AND s.id = u.obj_id AND"
			" s.guid = u.guid LEFT JOIN bookmarks b ON u.kind = 1 AND b.id = u.obj_id AND"
			" b.guid = u.guid JOIN datasets d ON d.id = coalesce(s.ds_id, b.ds_id)", &st);
	if (r < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		char full[STORE_NAME_MAX + 1];
		const char *ds = (const char *)sqlite3_column_text(st, 1);
		const char *sn = (const char *)sqlite3_column_text(st, 3);
		const char *pa = (const char *)sqlite3_column_text(st, 4);
		if (legacy) {
			snprintf(full, sizeof full, "%s", ds ? ds : "");
		} else {
			char dsn[STORE_NAME_MAX + 1];
			ds_fullname(p, ds ? ds : "", dsn, sizeof dsn);
			snprintf(full, sizeof full, "%s%c%s", dsn,
				 sqlite3_column_int(st, 2) ? '#' : '@', sn ? sn : "");
		}
		if (!pa)
			pa = "";
		size_t ln = strlen(full), lp = strlen(pa);
		if ((r = VEC_GROW(v, cap, n, 64, "listing the files a damage touches")) < 0)
			break;
		if (!(v[n].name = malloc(ln + lp + 2))) {
			r = ferry_err(FERR_NOMEM, "listing the files a damage touches");
			break;
		}
		memcpy(v[n].name, full, ln + 1);
		v[n].path = v[n].name + ln + 1;
		memcpy(v[n].path, pa, lp + 1);
		v[n++].err_id = sqlite3_column_int64(st, 0);
	}
	if (r == 0 && k != SQLITE_DONE)
		r = cat_err(p, "reading the scrub errors");
	sqlite3_finalize(st);
	if (r == 0 && n > 1)
		qsort(v, n, sizeof *v, user_row_cmp);
	for (size_t i = 0; i < n && r == 0; i++)
		r = fn(arg, v[i].err_id, v[i].name, v[i].path);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return r;
}

/* ---- a replica's side of a repair over HTTP ---------------------------------- */

int store_block_in_scope(struct store_pool *p, const struct store_ds *ds,
			 const uint8_t hash[FERRY_HASH_LEN], uint32_t *lsize)
{
	sqlite3_stmt *st = NULL;
	size_t pl = strlen(p->name);
	/* the name inside the pool ('' for the root, which covers them all);
	 * compared by prefix, not with LIKE, whose '_' would match any byte */
	const char *rel = !strncmp(ds->name, p->name, pl) && ds->name[pl] == '/' ? ds->name + pl + 1 : "";
	int r = cat_prepare(p, "SELECT b.lsize FROM blocks b JOIN ds_refs x ON x.block_id = b.id"
			    " JOIN datasets d ON d.id = x.ds_id"
			    " WHERE b.hash = ?1 AND (?2 = '' OR d.name = ?2 OR"
			    " substr(d.name, 1, length(?2) + 1) = ?2 || '/') LIMIT 1", &st);
	if (r < 0)
		return r;
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rel, -1, SQLITE_STATIC);
	int k = sqlite3_step(st);
	if (k == SQLITE_ROW) {
		*lsize = (uint32_t)sqlite3_column_int64(st, 0);
		r = 1;
	} else {
		r = k == SQLITE_DONE ? 0 : cat_err(p, "looking up a block");
	}
	sqlite3_finalize(st);
	return r;
}
