/* store/scan.c — the sequential pass `ferry scrub` makes over the packs:
 * runs of blocks read with one pread each, in pack and offset order, and
 * checked on any thread (each block's header against its index row, then
 * in a version-3 pack its CRC-32C over the stored header and payload, at
 * memory speed; with deep, or in a pack of version 1 or 2, which has no
 * CRC, its payload decoded and hashed). The rest of the scrub — pack and
 * catalogue checks, the records besides blocks, the state and error log —
 * is in scrub.c, the repair in repair.c. */
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

/* A run read with one pread: up to this many bytes, and no hole between
 * two blocks larger than SCAN_GAP (garbage gc has not rewritten yet is
 * skipped, not read). */
#define SCAN_SPAN ((size_t)4 << 20)
#define SCAN_GAP ((int64_t)256 << 10)
/* Index rows fetched per query: the block index has no (pack, offset)
 * order of its own, so each query sorts the rest of its pack; fetching
 * many at once makes that once or twice per pack, not once per run. */
#define SCAN_ROWS 8192

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
	uint32_t tail;            /* of open_pack's records: PACK_REC_TAIL in version 3 */
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
	/* the version says whether blocks carry a CRC. A header that does
	 * not parse (store_scrub_packs reports it) leaves it unknown: its
	 * blocks are then decoded and hashed, read without a tail. */
	uint8_t h[PACK_HDR_LEN];
	size_t got = 0;
	int version = 0;
	s->tail = 0;
	if (s->fd >= 0 && io_pread_full(s->fd, h, sizeof h, 0, &got) == 0 && got == sizeof h &&
	    pack_hdr_get(h, &version) == 0 && version >= 3)
		s->tail = PACK_REC_TAIL;
	ferry_err_clear();
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
	int k = SQLITE_DONE; /* set by the loop whenever the test below reads it */
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
			int64_t end = valid ? off + PACK_BLK_HDR_LEN + ps + (int64_t)s->tail : off;
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
			/* as store_scan_totals counts: header and payload */
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
		b->tail = s->tail;
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
					snprintf(b->items[i].why, STORE_SCRUB_DETAIL_MAX, "%s", why);
				}
			ferry_err_clear();
		}
		return 1;
	}
}

/* The hashes of the items at[0..m) of b, together; each not ok is
 * checked again alone (its scratch is its own) for its message. */
static void scan_hash(struct store_scan_batch *b, struct store_block_check *v, const size_t *at,
		      size_t m)
{
	store_block_verify_many(v, m);
	for (size_t q = 0; q < m; q++) {
		struct store_scan_item *it = &b->items[at[q]];
		int r;
		if (v[q].ok || (r = store_block_verify(v[q].c, v[q].payload, v[q].psize, v[q].lsize,
						       v[q].hash, v[q].scratch,
						       v[q].scratch_cap)) == 0)
			continue;
		it->err = r;
		snprintf(it->why, STORE_SCRUB_DETAIL_MAX, "%s", ferry_errmsg(r));
	}
}

void store_scan_verify(struct store_scan_batch *b, void *scratch, size_t cap)
{
	struct store_block_check v[STORE_SCAN_LANES];
	size_t at[STORE_SCAN_LANES], m = 0, lanes = cap / STORE_BLOCK_MAX;
	if (lanes > STORE_SCAN_LANES)
		lanes = STORE_SCAN_LANES;
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
			snprintf(it->why, STORE_SCRUB_DETAIL_MAX, "%s", "its header in the pack does not match its index row");
			continue;
		}
		if (b->tail) {
			/* the stored bytes as written: header and payload */
			size_t n = PACK_BLK_HDR_LEN + ps;
			if (get_le32(h + n) != crc32c_update(0, h, n)) {
				it->err = -FERR_CORRUPT;
				snprintf(it->why, STORE_SCRUB_DETAIL_MAX, "%s",
					 "its stored bytes fail their CRC-32C");
				continue;
			}
			if (!b->deep)
				continue;
		}
		if (lanes < 2) {
			int r = store_block_verify(c, h + PACK_BLK_HDR_LEN, ps, ls, it->hash, scratch, cap);
			if (r < 0) {
				it->err = r;
				snprintf(it->why, STORE_SCRUB_DETAIL_MAX, "%s", ferry_errmsg(r));
			}
			continue;
		}
		v[m] = (struct store_block_check){.c = c, .payload = h + PACK_BLK_HDR_LEN, .psize = ps,
						  .lsize = ls, .hash = it->hash,
						  .scratch = (uint8_t *)scratch + m * STORE_BLOCK_MAX,
						  .scratch_cap = STORE_BLOCK_MAX};
		at[m++] = i;
		if (m == lanes) {
			scan_hash(b, v, at, m);
			m = 0;
		}
	}
	if (m)
		scan_hash(b, v, at, m);
	ferry_err_clear();
}

void store_scan_batch_release(struct store_scan_batch *b)
{
	free(b->items);
	b->items = NULL;
	b->n = b->cap = 0;
	fbuf_release(&b->buf);
}
