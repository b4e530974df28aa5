/* store/scrub.c — what `ferry scrub` needs from the store: a sequential
 * pass over the packs that reads runs of blocks with one pread each and
 * checks them (on any thread), the pack-level and catalogue-level checks
 * (missing, truncated and orphan packs, node rows, space figures,
 * garbage), the scrub's state and error log in the catalogue, and the
 * crash-safe repair of damaged blocks and nodes from good copies.
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
/* A run read with one pread: up to this many bytes, and no hole between
 * two blocks larger than SCAN_GAP (garbage gc has not rewritten yet is
 * skipped, not read). */
#define SCAN_SPAN ((size_t)4 << 20)
#define SCAN_GAP ((int64_t)256 << 10)
/* Index rows fetched per query: the block index has no (pack, offset)
 * order of its own, so each query sorts the rest of its pack; fetching
 * many at once makes that once or twice per pack, not once per run. */
#define SCAN_ROWS 8192

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
	"CREATE TABLE IF NOT EXISTS scrub_users("
	"  err_id INTEGER NOT NULL, snap TEXT NOT NULL, path TEXT NOT NULL);";

/* 1 when the scrub tables exist (a pool never scrubbed has none). */
static int scrub_tables(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT count(*) FROM sqlite_master WHERE name = 'scrub_users'", &st);
	if (r < 0)
		return r;
	r = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) > 0 : cat_err(p, "reading the scrub state");
	sqlite3_finalize(st);
	return r;
}

static void copy_why(char *dst, const char *src)
{
	snprintf(dst, STORE_SCRUB_DETAIL_MAX, "%s", src);
}

/* ---- the pass over the packs -------------------------------------------------- */

struct store_scan {
	struct store_pool *p;
	int lock_fd;
	int64_t pack_id, off;     /* the next block is the first at or after this */
	int64_t start_pack, start_off;
	int fd;                   /* of open_pack, -1 when missing or none */
	int64_t open_pack;        /* 0: none open */
	char name[64];
	uint64_t fsize;
	sqlite3_stmt *st_pack, *st_rows;
	struct scan_row {
		uint8_t hash[FERRY_HASH_LEN];
		int hash_ok;
		struct codec_spec codec;
		int64_t offset, psize, lsize;
	} *rows;                  /* fetched, rows[ri..nrows) not yet in a batch */
	size_t nrows, ri;
};

int store_scan_new(struct store_pool *p, int64_t pack_id, int64_t offset, struct store_scan **out)
{
	struct store_scan *s = calloc(1, sizeof *s);
	int r;
	if (!s || !(s->rows = malloc(SCAN_ROWS * sizeof *s->rows))) {
		free(s);
		return ferry_err(FERR_NOMEM, "starting a scrub");
	}
	s->p = p;
	s->fd = -1;
	s->lock_fd = -1;
	s->pack_id = s->start_pack = pack_id;
	s->off = s->start_off = offset;
	act_begin(p);
	if ((r = pack_lock(p, 0, &s->lock_fd)) < 0 ||
	    (r = cat_prepare(p, "SELECT id, name FROM packs WHERE id >= ? ORDER BY id LIMIT 1",
			     &s->st_pack)) < 0 ||
	    (r = cat_prepare(p, "SELECT hash, codec, level, offset, psize, lsize FROM blocks"
			     " WHERE pack_id = ?1 AND offset >= ?2 ORDER BY offset LIMIT ?3",
			     &s->st_rows)) < 0) {
		store_scan_free(s);
		return r;
	}
	*out = s;
	return 0;
}

void store_scan_free(struct store_scan *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	sqlite3_finalize(s->st_pack);
	sqlite3_finalize(s->st_rows);
	free(s->rows);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	act_end(s->p);
	free(s);
}

int store_scan_totals(struct store_scan *s, uint64_t *total, uint64_t *before, uint64_t *blocks)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(s->p, "SELECT count(*), coalesce(sum(psize), 0), coalesce(sum(CASE WHEN"
			     " pack_id < ?1 OR (pack_id = ?1 AND offset < ?2) THEN psize + ?3 ELSE 0"
			     " END), 0) FROM blocks", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, s->start_pack);
	sqlite3_bind_int64(st, 2, s->start_off);
	sqlite3_bind_int(st, 3, PACK_BLK_HDR_LEN);
	if (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 0);
		*blocks = n;
		*total = (uint64_t)sqlite3_column_int64(st, 1) + n * PACK_BLK_HDR_LEN;
		*before = (uint64_t)sqlite3_column_int64(st, 2);
	} else {
		r = cat_err(s->p, "summing the blocks");
	}
	sqlite3_finalize(st);
	return r;
}

/* Opens the first pack at or after s->pack_id: 1, or 0 when none is left. */
static int scan_pack(struct store_scan *s)
{
	char path[PATH_MAX];
	struct stat sb;
	sqlite3_stmt *st = s->st_pack;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, s->pack_id);
	int k = sqlite3_step(st);
	if (k != SQLITE_ROW) {
		sqlite3_reset(st);
		return k == SQLITE_DONE ? 0 : cat_err(s->p, "listing packs");
	}
	int64_t id = sqlite3_column_int64(st, 0);
	const char *nm = (const char *)sqlite3_column_text(st, 1);
	snprintf(s->name, sizeof s->name, "%s", nm ? nm : "");
	sqlite3_reset(st);
	if (id != s->pack_id) {
		s->pack_id = id;
		s->off = 0;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->open_pack = id;
	s->fsize = 0;
	pack_path(s->p, s->name, path, sizeof path);
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd >= 0 && fstat(s->fd, &sb) == 0) {
		s->fsize = (uint64_t)sb.st_size;
		(void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	} else if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	return 1;
}

static int batch_item(struct store_scan_batch *b, struct store_scan_item **it)
{
	int r;
	if (b->n == b->cap && (r = VEC_GROW(b->items, b->cap, b->n, 64, "scrubbing")) < 0)
		return r;
	*it = &b->items[b->n++];
	memset(*it, 0, sizeof **it);
	return 0;
}

/* The next rows of the open pack from s->off on into s->rows. */
static int scan_fill(struct store_scan *s)
{
	sqlite3_stmt *st = s->st_rows;
	int k;
	s->nrows = s->ri = 0;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, s->pack_id);
	sqlite3_bind_int64(st, 2, s->off);
	sqlite3_bind_int(st, 3, SCAN_ROWS);
	while (s->nrows < SCAN_ROWS && (k = sqlite3_step(st)) == SQLITE_ROW) {
		struct scan_row *w = &s->rows[s->nrows++];
		w->hash_ok = sqlite3_column_bytes(st, 0) == FERRY_HASH_LEN;
		if (w->hash_ok)
			memcpy(w->hash, sqlite3_column_blob(st, 0), FERRY_HASH_LEN);
		else
			memset(w->hash, 0, FERRY_HASH_LEN);
		w->codec.id = (uint8_t)sqlite3_column_int(st, 1);
		w->codec.level = (uint8_t)sqlite3_column_int(st, 2);
		w->offset = sqlite3_column_int64(st, 3);
		w->psize = sqlite3_column_int64(st, 4);
		w->lsize = sqlite3_column_int64(st, 5);
	}
	if (s->nrows < SCAN_ROWS && k != SQLITE_DONE) {
		sqlite3_reset(st);
		return cat_err(s->p, "reading the block index");
	}
	sqlite3_reset(st);
	return 0;
}

int store_scan_next(struct store_scan *s, struct store_scan_batch *b)
{
	int r;
	b->n = 0;
	b->bytes = 0;
	fbuf_reset(&b->buf);
	for (;;) {
		if (s->open_pack != s->pack_id || s->open_pack == 0) {
			if ((r = scan_pack(s)) <= 0)
				return r;
			s->nrows = s->ri = 0;
		}
		if (s->ri == s->nrows && (r = scan_fill(s)) < 0)
			return r;
		if (s->nrows == 0) { /* this pack is done */
			s->pack_id++;
			s->off = 0;
			continue;
		}
		int64_t span0 = -1, span_end = -1, last_off = -1;
		for (; s->ri < s->nrows; s->ri++) {
			const struct scan_row *w = &s->rows[s->ri];
			int64_t off = w->offset, ps = w->psize, ls = w->lsize;
			int valid = w->hash_ok && ps > 0 && ls > 0 && ps <= ls &&
				    (uint64_t)ls <= STORE_BLOCK_MAX && off >= PACK_HDR_LEN;
			int64_t end = valid ? off + PACK_BLK_HDR_LEN + ps : off;
			int readable = valid && s->fd >= 0 && (uint64_t)end <= s->fsize;
			if (readable && span0 >= 0 &&
			    (end - span0 > (int64_t)SCAN_SPAN || off < span_end || off - span_end > SCAN_GAP))
				break; /* the next run starts here */
			struct store_scan_item *it;
			if ((r = batch_item(b, &it)) < 0)
				return r;
			memcpy(it->hash, w->hash, FERRY_HASH_LEN);
			it->codec = w->codec;
			it->offset = off;
			it->lsize = (uint32_t)ls;
			it->psize = (uint32_t)ps;
			last_off = off;
			b->bytes += valid ? (uint64_t)(PACK_BLK_HDR_LEN + ps) : 0;
			if (!valid) {
				it->err = -FERR_CORRUPT;
				snprintf(it->why, sizeof it->why, "its index row has sizes %lld/%lld at %lld",
					 (long long)ps, (long long)ls, (long long)off);
			} else if (s->fd < 0) {
				it->err = -FERR_CORRUPT;
				snprintf(it->why, sizeof it->why, "its pack file is missing");
			} else if (!readable) {
				it->err = -FERR_CORRUPT;
				snprintf(it->why, sizeof it->why,
					 "it lies past the end of its pack (%" PRIu64 " bytes)", s->fsize);
			} else {
				if (span0 < 0)
					span0 = off;
				it->at = (size_t)(off - span0);
				span_end = end;
			}
			if (b->n >= SCAN_ROWS / 8 && span0 < 0) {
				s->ri++; /* a long run of unreadable rows: in batches */
				break;
			}
		}
		b->pack_id = s->pack_id;
		snprintf(b->pack, sizeof b->pack, "%s", s->name);
		s->off = last_off + 1;
		b->next_off = s->off;
		if (span0 < 0)
			return 1;
		size_t need = (size_t)(span_end - span0), got = 0;
		if ((r = fbuf_reserve(&b->buf, need)) < 0)
			return r;
		r = io_pread_full(s->fd, b->buf.data, need, (off_t)span0, &got);
		b->buf.len = got;
		if (r < 0 || got != need) {
			/* an unreadable run (EIO, or the file shrank meanwhile) is
			 * damage of every block in it */
			const char *why = r < 0 ? ferry_errmsg(r) : "its pack is shorter than at its open";
			for (size_t i = 0; i < b->n; i++)
				if (!b->items[i].err) {
					b->items[i].err = -FERR_CORRUPT;
					copy_why(b->items[i].why, why);
				}
			ferry_err_clear();
		}
		return 1;
	}
}

void store_scan_verify(struct store_scan_batch *b, void *scratch, size_t cap)
{
	for (size_t i = 0; i < b->n; i++) {
		struct store_scan_item *it = &b->items[i];
		struct codec_spec c;
		uint32_t ls, ps;
		uint8_t hh[FERRY_HASH_LEN];
		if (it->err)
			continue;
		const uint8_t *h = b->buf.data + it->at;
		if (pack_blk_hdr_get(h, &c, &ls, &ps, hh) < 0 || !codec_equal(c, it->codec) ||
		    ls != it->lsize || ps != it->psize || memcmp(hh, it->hash, FERRY_HASH_LEN)) {
			it->err = -FERR_CORRUPT;
			copy_why(it->why, "its header in the pack does not match its index row");
			continue;
		}
		int r = store_block_verify(c, h + PACK_BLK_HDR_LEN, ps, ls, it->hash, scratch, cap);
		if (r < 0) {
			it->err = r;
			copy_why(it->why, ferry_errmsg(r));
		}
	}
	ferry_err_clear();
}

void store_scan_batch_release(struct store_scan_batch *b)
{
	free(b->items);
	b->items = NULL;
	b->n = b->cap = 0;
	fbuf_release(&b->buf);
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

static int orphans(struct store_pool *p, store_scrub_orphan_fn fn, void *arg)
{
	char dir[PATH_MAX];
	sqlite3_stmt *st = NULL;
	int r;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot read '%s'", dir);
	if ((r = cat_prepare(p, "SELECT 1 FROM packs WHERE name = ?", &st)) < 0) {
		closedir(d);
		return r;
	}
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		struct stat sb;
		if (de->d_name[0] == '.')
			continue;
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, de->d_name, -1, SQLITE_TRANSIENT);
		int k = sqlite3_step(st);
		if (k == SQLITE_ROW)
			continue;
		if (k != SQLITE_DONE) {
			r = cat_err(p, "listing packs");
			break;
		}
		uint64_t size = fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 ?
					(uint64_t)sb.st_size : 0;
		r = fn(arg, de->d_name, size);
	}
	sqlite3_finalize(st);
	closedir(d);
	return r;
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
		if ((uint64_t)sb.st_size < (uint64_t)v[i].reach)
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name,
				   "pack '%s' is truncated: %lld bytes, its index reaches %lld", v[i].name,
				   (long long)sb.st_size, (long long)v[i].reach);
		if (r == 0 && v[i].reach > v[i].size)
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name,
				   "pack '%s': index rows reach %lld, past the %lld bytes the catalogue"
				   " recorded", v[i].name, (long long)v[i].reach, (long long)v[i].size);
		if (r == 0 && (io_pread_full(fd, hdr, sizeof hdr, 0, &got) < 0 || got != sizeof hdr ||
			       memcmp(hdr, PACK_MAGIC, 8) || get_le32(hdr + 8) != 1 ||
			       get_le32(hdr + 12) != 0)) {
			ferry_err_clear();
			r = report(fn, arg, STORE_SCRUB_PACK, v[i].name, "pack '%s' has a bad header",
				   v[i].name);
		}
		close(fd);
	}
	free(v);
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
			    " (SELECT block_id FROM snap_blocks UNION ALL SELECT block_id FROM"
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
			     " blocks, repaired, (SELECT count(*) FROM scrub_errors) FROM scrub_state"
			     " WHERE id = 1", &st)) < 0)
		return r;
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
	if ((r = cat_exec(p, scrub_schema)) < 0)
		goto out;
	if (fresh && (r = cat_exec(p, "DELETE FROM scrub_errors; DELETE FROM scrub_users")) < 0)
		goto out;
	for (int k = 1; k < 32 && r == 0; k++)
		if (drop_kinds & (1u << k))
			r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE kind = ?", k);
	if (r == 0 && (drop_kinds & STORE_SCRUB_DROP_GONE))
		r = cat_exec(p, "DELETE FROM scrub_errors WHERE kind = 1 AND NOT EXISTS (SELECT 1 FROM"
			     " blocks b WHERE b.hash = scrub_errors.hash AND b.codec = scrub_errors.codec"
			     " AND b.level = scrub_errors.level)");
	if (r < 0 || (drop_kinds && (r = cat_exec(p, "DELETE FROM scrub_users WHERE err_id NOT IN"
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
	if ((r = cat_exec(p, scrub_schema)) < 0 ||
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
	if ((r = cat_exec(p, scrub_schema)) < 0 || (r = cat_exec(p, "DELETE FROM scrub_users")) < 0 ||
	    (r = cat_prepare(p, "INSERT INTO scrub_users(err_id, snap, path) VALUES(?, ?, ?)",
			     &st)) < 0)
		goto out;
	for (size_t i = 0; i < n && r == 0; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, u[i].err_id);
		sqlite3_bind_text(st, 2, u[i].snap, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, u[i].path ? u[i].path : "", -1, SQLITE_STATIC);
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

int store_scrub_users_iter(struct store_pool *p, store_scrub_user_fn fn, void *arg)
{
	sqlite3_stmt *st = NULL;
	int r, k;
	if ((r = scrub_tables(p)) <= 0)
		return r;
	if ((r = cat_prepare(p, "SELECT err_id, snap, path FROM scrub_users ORDER BY snap, path,"
			     " err_id", &st)) < 0)
		return r;
	while ((k = sqlite3_step(st)) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 1);
		const char *pa = (const char *)sqlite3_column_text(st, 2);
		if ((r = fn(arg, sqlite3_column_int64(st, 0), s ? s : "", pa ? pa : "")) != 0)
			break;
	}
	if (r == 0 && k != SQLITE_DONE && k != SQLITE_ROW)
		r = cat_err(p, "reading the scrub errors");
	sqlite3_finalize(st);
	return r;
}

/* ---- repair -------------------------------------------------------------------- */

struct rep_block {
	int64_t block_id, old_pack, new_off, err_id;
};
struct rep_node {
	uint8_t hash[FERRY_HASH_LEN];
	int type;
	uint8_t *data;
	size_t len;
	int64_t err_id;
};

struct store_repair {
	struct store_pool *p;
	int lock_fd;
	int fd;             /* the new pack, -1 until a block comes */
	char name[32];
	uint64_t size, bytes;
	struct rep_block *b;
	size_t nb, capb;
	struct rep_node *n;
	size_t nn, capn;
};

int store_repair_new(struct store_pool *p, struct store_repair **out)
{
	struct store_repair *rp = calloc(1, sizeof *rp);
	int r;
	if (!rp)
		return ferry_err(FERR_NOMEM, "repairing");
	rp->p = p;
	rp->fd = -1;
	act_begin(p);
	if ((r = pack_lock(p, 0, &rp->lock_fd)) < 0) {
		act_end(p);
		free(rp);
		return r;
	}
	*out = rp;
	return 0;
}

void store_repair_free(struct store_repair *rp)
{
	if (!rp)
		return;
	if (rp->fd >= 0) {
		close(rp->fd);
		(void)pack_unlink_quiet(rp->p, rp->name); /* else an orphan gc removes */
	}
	for (size_t i = 0; i < rp->nn; i++)
		free(rp->n[i].data);
	free(rp->n);
	free(rp->b);
	close(rp->lock_fd);
	act_end(rp->p);
	free(rp);
}

static int repair_lookup(struct store_repair *rp, const struct store_scrub_err *e, int64_t *id,
			 int64_t *pack_id, uint32_t *psize, uint32_t *lsize)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(rp->p, "SELECT id, pack_id, psize, lsize FROM blocks WHERE hash = ?1 AND"
			    " codec = ?2 AND level = ?3", &st);
	if (r < 0)
		return r;
	pack_bind_hash_codec(st, e->hash, e->codec);
	int k = sqlite3_step(st);
	if (k == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*pack_id = sqlite3_column_int64(st, 1);
		*psize = (uint32_t)sqlite3_column_int64(st, 2);
		*lsize = (uint32_t)sqlite3_column_int64(st, 3);
	} else if (k == SQLITE_DONE) {
		char hex[FERRY_HASH_HEX];
		hash_to_hex(e->hash, hex);
		r = ferry_err(FERR_NOENT, "block %.16s is no longer in the index", hex);
	} else {
		r = cat_err(rp->p, "looking up a block");
	}
	sqlite3_finalize(st);
	return r;
}

int store_repair_row(struct store_repair *rp, const struct store_scrub_err *e, uint32_t *psize,
		     uint32_t *lsize)
{
	int64_t id, pk;
	return repair_lookup(rp, e, &id, &pk, psize, lsize);
}

int store_repair_block(struct store_repair *rp, const struct store_scrub_err *e,
		       const void *payload, uint32_t psize, uint32_t lsize)
{
	uint8_t hdr[PACK_BLK_HDR_LEN];
	int64_t id, pk;
	uint32_t ps, ls;
	int r;
	if ((r = repair_lookup(rp, e, &id, &pk, &ps, &ls)) < 0)
		return r;
	if (ps != psize || ls != lsize)
		return ferry_err(FERR_INVAL, "the good copy is %u/%u bytes, the index row %u/%u",
				 psize, lsize, ps, ls);
	if (rp->fd < 0) {
		if ((r = pack_create(rp->p, &rp->fd, rp->name)) < 0)
			return r;
		rp->size = PACK_HDR_LEN;
	}
	if ((r = VEC_GROW(rp->b, rp->capb, rp->nb, 64, "repairing")) < 0)
		return r;
	pack_blk_hdr_put(hdr, e->codec, lsize, psize, e->hash);
	if ((r = io_write_full(rp->fd, hdr, sizeof hdr)) < 0 ||
	    (r = io_write_full(rp->fd, payload, psize)) < 0)
		return r;
	rp->b[rp->nb++] = (struct rep_block){id, pk, (int64_t)rp->size, e->id};
	rp->size += sizeof hdr + psize;
	rp->bytes += psize;
	return 0;
}

int store_repair_node(struct store_repair *rp, const struct store_scrub_err *e, int type,
		      const void *data, size_t len)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	node_hash(type, data, len, h);
	if (!e->has_hash || memcmp(h, e->hash, FERRY_HASH_LEN))
		return ferry_err(FERR_CORRUPT, "the good copy of the node does not match its hash");
	if ((r = VEC_GROW(rp->n, rp->capn, rp->nn, 16, "repairing")) < 0)
		return r;
	struct rep_node *n = &rp->n[rp->nn];
	if (!(n->data = malloc(len ? len : 1)))
		return ferry_err(FERR_NOMEM, "repairing");
	memcpy(n->data, data, len);
	memcpy(n->hash, e->hash, FERRY_HASH_LEN);
	n->type = type;
	n->len = len;
	n->err_id = e->id;
	rp->nn++;
	rp->bytes += len;
	return 0;
}

/* Inside the repair's transaction: the new pack's row, the blocks moved
 * to it, the nodes replaced, the healed log rows gone, the old packs
 * left without a block dropped (their names into *dead). */
static int repair_rows(struct store_repair *rp, int64_t *pack_id)
{
	struct store_pool *p = rp->p;
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (rp->nb) {
		if ((r = cat_prepare(p, "INSERT INTO packs(name, size) VALUES(?, ?)", &st)) < 0)
			return r;
		sqlite3_bind_text(st, 1, rp->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)rp->size);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(p, "recording a pack");
		sqlite3_finalize(st);
		st = NULL;
		*pack_id = sqlite3_last_insert_rowid(p->db);
		if (r < 0 || (r = cat_prepare(p, "UPDATE blocks SET pack_id = ?, offset = ? WHERE id = ?",
					      &st)) < 0)
			return r;
		for (size_t i = 0; i < rp->nb && r == 0; i++) {
			sqlite3_reset(st);
			sqlite3_bind_int64(st, 1, *pack_id);
			sqlite3_bind_int64(st, 2, rp->b[i].new_off);
			sqlite3_bind_int64(st, 3, rp->b[i].block_id);
			if (sqlite3_step(st) != SQLITE_DONE)
				r = cat_err(p, "moving a repaired block");
		}
		sqlite3_finalize(st);
		st = NULL;
		for (size_t i = 0; i < rp->nb && r == 0; i++)
			if (rp->b[i].err_id)
				r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE id = ?", rp->b[i].err_id);
	}
	if (r < 0)
		return r;
	if (rp->nn) {
		if ((r = cat_prepare(p, "INSERT OR REPLACE INTO nodes(hash, type, data) VALUES(?, ?, ?)",
				     &st)) < 0)
			return r;
		for (size_t i = 0; i < rp->nn && r == 0; i++) {
			sqlite3_reset(st);
			sqlite3_bind_blob(st, 1, rp->n[i].hash, FERRY_HASH_LEN, SQLITE_STATIC);
			sqlite3_bind_int(st, 2, rp->n[i].type);
			sqlite3_bind_blob(st, 3, rp->n[i].data, (int)rp->n[i].len, SQLITE_STATIC);
			if (sqlite3_step(st) != SQLITE_DONE)
				r = cat_err(p, "replacing a damaged node");
		}
		sqlite3_finalize(st);
		for (size_t i = 0; i < rp->nn && r == 0; i++)
			if (rp->n[i].err_id)
				r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE id = ?", rp->n[i].err_id);
	}
	if (r < 0)
		return r;
	return cat_exec(p, "DELETE FROM scrub_users WHERE err_id NOT IN (SELECT id FROM scrub_errors)");
}

int store_repair_commit(struct store_repair *rp, uint64_t *bytes)
{
	struct store_pool *p = rp->p;
	char dir[PATH_MAX], what[64];
	char (*dead)[64] = NULL;
	size_t ndead = 0, capdead = 0;
	sqlite3_stmt *st = NULL;
	int64_t pack_id = 0;
	int r;
	*bytes = 0;
	if (!rp->nb && !rp->nn)
		return 0;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	snprintf(what, sizeof what, "pack '%s'", rp->name);
	/* the copies are durable before the catalogue points at them */
	if (rp->fd >= 0 && ((r = io_fsync(rp->fd, what)) < 0 || (r = io_fsync_dir(dir)) < 0))
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = cat_exec(p, scrub_schema)) < 0 || (r = repair_rows(rp, &pack_id)) < 0)
		goto fail;
	/* old packs the repair left with no block: their rows go now, their
	 * files (a truncated one; a missing one has none) after the commit */
	if ((r = cat_prepare(p, "SELECT k.id, k.name FROM packs k WHERE k.id != ?1 AND NOT EXISTS"
			     " (SELECT 1 FROM blocks b WHERE b.pack_id = k.id)", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, pack_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int was = 0;
		for (size_t i = 0; i < rp->nb && !was; i++)
			was = rp->b[i].old_pack == id;
		if (!was)
			continue; /* garbage of its own: gc's business */
		if ((r = VEC_GROW(dead, capdead, ndead, 8, "repairing")) < 0)
			break;
		const char *nm = (const char *)sqlite3_column_text(st, 1);
		snprintf(dead[ndead++], 64, "%s", nm ? nm : "");
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < ndead && r == 0; i++) {
		sqlite3_stmt *d = NULL;
		if ((r = cat_prepare(p, "DELETE FROM packs WHERE name = ?", &d)) < 0)
			break;
		sqlite3_bind_text(d, 1, dead[i], -1, SQLITE_STATIC);
		if (sqlite3_step(d) != SQLITE_DONE)
			r = cat_err(p, "dropping an emptied pack");
		sqlite3_finalize(d);
	}
	if (r < 0)
		goto fail;
	if ((r = cat_prepare(p, "UPDATE scrub_state SET repaired = repaired + ? WHERE id = 1", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, (int64_t)rp->bytes);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording the repair");
	sqlite3_finalize(st);
	if (r < 0)
		goto fail;
	if ((r = store_tx_commit(p)) < 0)
		goto out; /* the new pack goes with store_repair_free */
	if (rp->fd >= 0) {
		close(rp->fd);
		rp->fd = -1; /* the catalogue's now */
	}
	for (size_t i = 0; i < ndead; i++)
		if (pack_unlink(p, dead[i], i + 1 == ndead) < 0)
			ferry_err_clear(); /* an orphan the next gc removes */
	*bytes = rp->bytes;
	rp->nb = 0;
	for (size_t i = 0; i < rp->nn; i++)
		free(rp->n[i].data);
	rp->nn = 0;
	goto out;
fail:
	store_tx_rollback(p);
out:
	free(dead);
	return r;
}
