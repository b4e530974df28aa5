/* store/pack.c — pack files: the append-only files under packs/ that hold
 * the blocks, their headers, the gc lock, and the sweep of packs the
 * catalogue does not name. The writer (writer.c) fills them, the reader
 * (reader.c) reads them.
 *
 * A pack is PACK_HDR_LEN bytes of header ("FRYPACK1", le32 version 1 or 2,
 * le32 zero) followed by blocks (and in version 2 node and state records,
 * records.c), each self-describing:
 *   le32 "FBLK", u8 codec id, u8 level, le16 0, le32 lsize, le32 psize,
 *   32-byte BLAKE2b-256 of the logical content, then psize payload bytes,
 * so the index can be rebuilt from the packs alone. A writer never appends
 * to a pack another writer made, and a pack's bytes are fsynced before the
 * catalogue transaction that names them commits; a crash leaves at worst
 * pack bytes nobody references, which gc removes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "internal.h"

void pack_blk_hdr_put(uint8_t *h, struct codec_spec c, uint32_t lsize, uint32_t psize,
		      const uint8_t hash[FERRY_HASH_LEN])
{
	put_le32(h, PACK_BLK_MAGIC);
	h[4] = c.id;
	h[5] = c.level;
	put_le16(h + 6, 0);
	put_le32(h + 8, lsize);
	put_le32(h + 12, psize);
	memcpy(h + 16, hash, FERRY_HASH_LEN);
}

int pack_blk_hdr_get(const uint8_t *h, struct codec_spec *c, uint32_t *lsize, uint32_t *psize,
		     uint8_t hash[FERRY_HASH_LEN])
{
	if (get_le32(h) != PACK_BLK_MAGIC || get_le16(h + 6) != 0)
		return ferry_err(FERR_CORRUPT, "bad block header in pack");
	struct codec_spec cs = {h[4], h[5]};
	uint32_t ls = get_le32(h + 8), ps = get_le32(h + 12);
	if (ls == 0 || ls > STORE_BLOCK_MAX || ps == 0 || ps > ls)
		return ferry_err(FERR_CORRUPT, "block header in pack has sizes %" PRIu32 "/%" PRIu32,
				 ls, ps);
	if (cs.id == CODEC_OFF ? (cs.level != 0 || ps != ls) : !codec_valid(cs))
		return ferry_err(FERR_CORRUPT, "block header in pack has codec %u/%u", cs.id,
				 cs.level);
	*c = cs;
	*lsize = ls;
	*psize = ps;
	memcpy(hash, h + 16, FERRY_HASH_LEN);
	return 0;
}

/* A pool of format 1 writes packs of version 1, whose readers know no
 * records; one of format 2 writes version 3 (records, each with a CRC-32C
 * so scrub can check stored bytes without decoding them). */
int pack_version_new(const struct store_pool *p)
{
	return p->records ? 3 : 1;
}

size_t pack_tail_new(const struct store_pool *p)
{
	return pack_version_new(p) >= 3 ? PACK_REC_TAIL : 0;
}

void pack_path(const struct store_pool *p, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s/%s", p->path, PACK_DIR, name);
}

int pack_lock(struct store_pool *p, int exclusive, int *fd)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", p->path, PACK_GC_LOCK);
	int f = -1, r;
	if ((r = io_open_create(path, O_RDWR, 0600, &f)) < 0)
		return r;
	int how = exclusive ? LOCK_EX | LOCK_NB : LOCK_SH;
	while (flock(f, how) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(f);
		if (e == EWOULDBLOCK)
			return act_busy(p, ACT_GCLOCK);
		return ferry_err_errno(e, "cannot lock '%s'", path);
	}
	*fd = f;
	return 0;
}

int pack_create(struct store_pool *p, int *fd, char name[32])
{
	char path[PATH_MAX];
	uint8_t hdr[PACK_HDR_LEN];
	for (int tries = 0; tries < 8; tries++) {
		snprintf(name, 32, "%016" PRIx64 ".pack", ferry_random_guid());
		pack_path(p, name, path, sizeof path);
		int f = -1;
		int r = io_open_create(path, O_RDWR | O_EXCL | O_APPEND, 0600, &f);
		if (r == -FERR_EXISTS)
			continue;
		if (r < 0)
			return r;
		pack_hdr_put(hdr, pack_version_new(p));
		r = io_write_full(f, hdr, sizeof hdr);
		if (r < 0) {
			close(f);
			(void)pack_unlink_quiet(p, name); /* else an orphan for the next sweep */
			return r;
		}
		*fd = f;
		return 0;
	}
	return ferry_err(FERR_EXISTS, "cannot find a free pack name");
}

/* For the paths that give back space on an error: unlinks and syncs
 * without touching the thread's error detail, which still describes the
 * failure being reported. What cannot be removed, or whose removal is not
 * durable, is at worst an orphan: the next writer that finds no other
 * alive sweeps it (writer_lock). */
int pack_unlink_quiet(struct store_pool *p, const char *name)
{
	struct ferry_errsave e;
	char path[PATH_MAX];
	pack_path(p, name, path, sizeof path);
	ferry_err_save(&e);
	int r = io_unlink(path);
	ferry_err_restore(&e);
	return r == 0;
}

int pack_sync_dir_quiet(struct store_pool *p)
{
	struct ferry_errsave e;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	ferry_err_save(&e);
	int r = io_fsync_dir(dir);
	ferry_err_restore(&e);
	return r;
}

int pack_unlink(struct store_pool *p, const char *name, int sync)
{
	char path[PATH_MAX], dir[PATH_MAX];
	pack_path(p, name, path, sizeof path);
	int r = io_unlink(path);
	if (r == -FERR_NOENT)
		ferry_err_clear();
	else if (r < 0)
		return r;
	if (!sync)
		return 0;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	return io_fsync_dir(dir);
}

/* quiesced: the caller holds the catalogue's write lock (a transaction
 * begun IMMEDIATE), so no commit is between its checkpoint's rename and
 * its COMMIT: a checkpoint pack past the committed seq, or a temporary
 * file of any seq, is then what a killed commit left, an orphan too. */
static int orphans_walk(struct store_pool *p, int quiesced, pack_orphan_fn fn, void *arg)
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
	/* A checkpoint's pack (records.c) is written before the transaction
	 * that names it commits, outside the gc lock: one of a seq past the
	 * committed one may be in flight, and is no orphan; the temporary
	 * file of a committed seq is one (a kill left it). */
	char seqbuf[32];
	uint64_t committed = 0;
	int m = p->records ? cat_meta_get_opt(p, "rec_seq", seqbuf, sizeof seqbuf) : 1;
	if (m < 0) {
		/* not "no checkpoint yet": every checkpoint would then look
		 * past the committed one, and a quiesced walk remove them */
		sqlite3_finalize(st);
		closedir(d);
		return m;
	}
	if (m == 0)
		committed = strtoull(seqbuf, NULL, 10);
	struct dirent *de;
	while (r == 0 && (de = readdir(d))) {
		uint64_t ts = rec_name_seq(de->d_name, 1);
		if (ts && (ts <= committed || quiesced)) {
			r = fn(arg, dirfd(d), de->d_name, dir);
			continue;
		}
		if (de->d_name[0] == '.')
			continue;
		if (rec_name_seq(de->d_name, 0) > committed) {
			/* its data packs are orphans a sweep removes: kept, it
			 * would be the newest checkpoint recover takes, naming
			 * blocks no longer there (recover would refuse) */
			if (quiesced)
				r = fn(arg, dirfd(d), de->d_name, dir);
			continue;
		}
		/* an orphan is decided on this lookup alone: a bind that failed
		 * (no memory) would look up NULL and find nothing, so it stops
		 * the walk rather than let a live pack pass for one */
		sqlite3_reset(st);
		if (sqlite3_bind_text(st, 1, de->d_name, -1, SQLITE_STATIC) != SQLITE_OK) {
			r = cat_err(p, "listing packs");
			break;
		}
		int s = sqlite3_step(st);
		if (s == SQLITE_ROW)
			continue;
		if (s != SQLITE_DONE) {
			r = cat_err(p, "listing packs");
			break;
		}
		r = fn(arg, dirfd(d), de->d_name, dir);
	}
	sqlite3_finalize(st);
	closedir(d);
	return r;
}

int pack_orphans_each(struct store_pool *p, pack_orphan_fn fn, void *arg)
{
	return orphans_walk(p, 0, fn, arg);
}

static int sweep_one(void *arg, int dfd, const char *name, const char *dir)
{
	if (io_unlinkat(dfd, name, dir) == 0)
		++*(uint64_t *)arg;
	else
		ferry_err_clear(); /* left for the next sweep */
	return 0;
}

static int sweep(struct store_pool *p, int quiesced, uint64_t *removed)
{
	char dir[PATH_MAX];
	uint64_t n = 0;
	int r = orphans_walk(p, quiesced, sweep_one, &n);
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	if (r == 0 && n)
		r = io_fsync_dir(dir);
	if (removed)
		*removed = n;
	return r;
}

int pack_sweep_orphans(struct store_pool *p, uint64_t *removed)
{
	return sweep(p, 0, removed);
}

int pack_sweep_orphans_quiesced(struct store_pool *p, uint64_t *removed)
{
	int r;
	if (!p->records)
		return sweep(p, 0, removed);
	if (p->tx_depth > 0) /* the caller's transaction holds the lock already */
		return sweep(p, 1, removed);
	/* the write lock, held through the walk: rec_seq read inside it is
	 * the last committed one, and no checkpoint is in flight. Nothing is
	 * written in the catalogue, so the transaction is rolled back. */
	if ((r = store_tx_begin(p)) < 0)
		return r;
	r = sweep(p, 1, removed);
	struct ferry_errsave e;
	ferry_err_save(&e);
	store_tx_rollback(p);
	ferry_err_restore(&e);
	return r;
}

int pack_bind_hash_codec(sqlite3_stmt *st, const uint8_t *hash, struct codec_spec c)
{
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, c.id);
	sqlite3_bind_int(st, 3, c.level);
	return 0;
}

int pack_step_exists(struct store_pool *p, sqlite3_stmt *st, const char *what)
{
	int s = sqlite3_step(st);
	int r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : cat_err(p, what);
	sqlite3_reset(st);
	return r;
}

int pack_row_insert(struct store_pool *p, const char *name, uint64_t size, int64_t *id)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "INSERT INTO packs(name, size) VALUES(?, ?)", &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)size);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording a pack");
	else if (id)
		*id = sqlite3_last_insert_rowid(p->db);
	sqlite3_finalize(st);
	return r;
}
