/* store/space.c — space accounting and what a dataset owns besides its
 * catalogue row. Figures count stored blocks (psize physical, lsize
 * logical); holes and metadata nodes are not counted. A dataset's "head" is
 * its newest snapshot (the live data is the source directory, outside the
 * pool), so referenced is the newest snapshot's, usedbysnapshots what the
 * older snapshots hold beyond it, and used counts each block once per
 * dataset, plus the children's used. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"

/* Physical and logical bytes of the distinct blocks of each dataset in the
 * subtree of ds_id (each block once per dataset). */
static int subtree_blocks(struct store_pool *p, int64_t ds_id, int children_only, uint64_t *pb,
			  uint64_t *lb)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION ALL SELECT d.id FROM"
			       " datasets d JOIN sub ON d.parent_id = sub.id)"
			       " SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0) FROM"
			       " (SELECT DISTINCT s.ds_id, x.block_id FROM snapshots s"
			       " JOIN snap_blocks x ON x.snap_id = s.id WHERE s.ds_id IN"
			       " (SELECT id FROM sub) AND (?2 = 0 OR s.ds_id != ?1)) y"
			       " JOIN blocks b ON b.id = y.block_id", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds_id);
	sqlite3_bind_int(st, 2, children_only);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*pb = (uint64_t)sqlite3_column_int64(st, 0);
		*lb = (uint64_t)sqlite3_column_int64(st, 1);
	} else {
		r = cat_err(p, "computing space");
	}
	sqlite3_finalize(st);
	return r;
}

int store_ds_space(struct store_pool *p, const struct store_ds *ds, struct store_space *out)
{
	struct store_space s;
	int r;
	memset(&s, 0, sizeof s);
	if (ds->type == STORE_DS_SNAPSHOT) {
		struct store_snap sn;
		sqlite3_stmt *st = NULL;
		if ((r = cat_prepare(p, "SELECT referenced, logicalreferenced, written, ds_id"
				       " FROM snapshots WHERE id = ?", &st)) < 0)
			return r;
		sqlite3_bind_int64(st, 1, ds->id);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			s.referenced = (uint64_t)sqlite3_column_int64(st, 0);
			s.logicalreferenced = (uint64_t)sqlite3_column_int64(st, 1);
			s.written = (uint64_t)sqlite3_column_int64(st, 2);
			memset(&sn, 0, sizeof sn);
			sn.id = ds->id;
			sn.ds_id = sqlite3_column_int64(st, 3);
		} else {
			r = rc == SQLITE_DONE ? ferry_err(FERR_NOENT, "snapshot '%s' does not exist",
							  ds->name)
					      : cat_err(p, "reading snapshot space");
		}
		sqlite3_finalize(st);
		if (r < 0)
			return r;
		if ((r = store_snap_unique(p, &sn, &s.used)) < 0)
			return r;
		/* zfs: a snapshot's logicalused is its logicalreferenced */
		s.logicalused = s.logicalreferenced;
		*out = s;
		return 0;
	}
	uint64_t own_p = 0, own_l = 0, all_p = 0, all_l = 0;
	if ((r = subtree_blocks(p, ds->id, 0, &all_p, &all_l)) < 0)
		return r;
	{
		uint64_t ch_p = 0, ch_l = 0;
		if ((r = subtree_blocks(p, ds->id, 1, &ch_p, &ch_l)) < 0)
			return r;
		own_p = all_p - ch_p;
		own_l = all_l - ch_l;
	}
	struct store_snap newest;
	r = store_snap_newest(p, ds, &newest);
	if (r == 0) {
		s.referenced = newest.referenced;
		s.logicalreferenced = newest.logicalreferenced;
	} else if (r == -FERR_NOENT) {
		ferry_err_clear();
	} else {
		return r;
	}
	s.used = all_p;
	s.logicalused = all_l;
	s.usedbysnapshots = own_p > s.referenced ? own_p - s.referenced : 0;
	(void)own_l;
	s.written = 0; /* nothing is written after the newest snapshot */
	*out = s;
	return 0;
}

int ds_destroy_contents(struct store_pool *p, const struct store_ds *ds)
{
	int r;
	if ((r = bm_destroy_ds(p, ds)) < 0)
		return r;
	if ((r = cat_exec_i64(p, "DELETE FROM snap_blocks WHERE snap_id IN (SELECT id FROM"
				 " snapshots WHERE ds_id = ?)", ds->id)) < 0)
		return r;
	return cat_exec_i64(p, "DELETE FROM snapshots WHERE ds_id = ?", ds->id);
}

int space_pool_stats(struct store_pool *p, struct store_pool_stats *s)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT count(*) FROM snapshots", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		s->snapshots = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if ((r = cat_prepare(p, "SELECT codec, level, count(*), sum(lsize), sum(psize) FROM blocks"
			       " GROUP BY codec, level", &st)) < 0)
		return r;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int c = sqlite3_column_int(st, 0), l = sqlite3_column_int(st, 1);
		if (c < 0 || c >= 4 || l < 0 || l >= 10)
			continue;
		s->codec_blocks[c][l] = (uint64_t)sqlite3_column_int64(st, 2);
		s->codec_lbytes[c][l] = (uint64_t)sqlite3_column_int64(st, 3);
		s->codec_pbytes[c][l] = (uint64_t)sqlite3_column_int64(st, 4);
	}
	if (rc != SQLITE_DONE)
		r = cat_err(p, "counting blocks");
	sqlite3_finalize(st);
	return r;
}

void store_format_ratio(uint64_t logical, uint64_t physical, char *buf, size_t n, int exact)
{
	/* zfs: ratio = logical * 100 / physical, printed with two decimals. */
	uint64_t r100 = physical ? (uint64_t)((long double)logical * 100 / physical) : 100;
	snprintf(buf, n, "%llu.%02llu%s", (unsigned long long)(r100 / 100),
		 (unsigned long long)(r100 % 100), exact ? "" : "x");
}

/* ---- the reserve ----------------------------------------------------------
 * Like ZFS's slop space: a preallocated file, POOL/reserve, that captures
 * and receives never use, so that gc and destroy, which give space back,
 * still find room for their catalogue writes on a full disk. The
 * catalogue's VFS (catvfs.c) shrinks it when such a write finds the disk
 * full; the next gc, the end of the command that drew on it, or the next
 * capture or receive grows it back to its size when the space is there
 * again. A capture or receive that cannot have it whole does not start.
 * Size: 1/32 of the filesystem (ZFS's spa_slop_shift), 256 KiB to 64 MiB. */
#define RESERVE_MIN ((uint64_t)256 << 10)
#define RESERVE_MAX ((uint64_t)64 << 20)
#define RESERVE_CHUNK ((uint64_t)64 << 10) /* its size is a multiple of this */

static void reserve_path(const char *dir, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", dir, STORE_RESERVE);
}

static uint64_t reserve_target(const char *dir)
{
	struct statvfs v;
	uint64_t t = RESERVE_MIN;
	if (statvfs(dir, &v) == 0)
		t = (uint64_t)v.f_blocks * v.f_frsize / 32;
	if (t < RESERVE_MIN)
		t = RESERVE_MIN;
	if (t > RESERVE_MAX)
		t = RESERVE_MAX;
	return (t + RESERVE_CHUNK - 1) / RESERVE_CHUNK * RESERVE_CHUNK;
}

/* Bytes of the reserve file (allocated), 0 when there is none. */
static uint64_t reserve_have(const char *dir)
{
	char path[PATH_MAX + 16];
	struct stat st;
	reserve_path(dir, path, sizeof path);
	if (stat(path, &st) != 0)
		return 0;
	uint64_t alloc = (uint64_t)st.st_blocks * 512;
	return alloc < (uint64_t)st.st_size ? alloc : (uint64_t)st.st_size;
}

uint64_t reserve_take(const char *dir, uint64_t want)
{
	char path[PATH_MAX + 16];
	struct stat st;
	uint64_t freed = 0;
	reserve_path(dir, path, sizeof path);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		uint64_t size = (uint64_t)st.st_size, to = size > want ? size - want : 0;
		if (io_ftruncate(fd, (off_t)to, "the pool's reserve") == 0)
			freed = size - to;
	}
	close(fd);
	return freed;
}

int reserve_ensure(struct store_pool *p, int mode)
{
	char path[PATH_MAX + 16];
	struct stat st;
	uint64_t target = reserve_target(p->path);
	int fd = -1, r = 0;
	if (reserve_have(p->path) >= target)
		return 0;
	reserve_path(p->path, path, sizeof path);
	if (mode == RESERVE_REGROW && stat(path, &st) != 0)
		return 0;
	if ((r = io_open_create(path, O_RDWR, STORE_FILE_MODE, &fd)) < 0)
		goto out;
	if (fstat(fd, &st) != 0) {
		r = ferry_err_errno(errno, "cannot stat '%s'", path);
		goto out;
	}
	r = io_fallocate(fd, 0, 0, (off_t)target, "the pool's reserve");
	if (r == -FERR_UNSUPPORTED) {
		/* no fallocate here (some FUSE and network filesystems): zeros
		 * take the space as well */
		static const uint8_t zero[65536];
		ferry_err_clear();
		r = 0;
		for (uint64_t at = (uint64_t)st.st_size; at < target && r == 0; at += sizeof zero)
			r = io_pwrite_full(fd, zero, sizeof zero, (off_t)at);
	}
	/* No fsync: after a crash the reserve may be shorter, and the next
	 * capture or receive grows it again before it writes. What it could
	 * take before a failure stays the reserve's. */
out:
	if (fd >= 0)
		close(fd);
	if (r < 0 && mode != RESERVE_STRICT) {
		ferry_err_clear();
		r = 0;
	} else if (r == -FERR_NOSPC) {
		char fr[16], need[16];
		struct statvfs v;
		uint64_t avail = statvfs(p->path, &v) == 0 ? (uint64_t)v.f_bavail * v.f_frsize : 0;
		format_nicenum(avail, fr, sizeof fr, 1);
		format_nicenum(target, need, sizeof need, 1);
		r = ferry_err(FERR_NOSPC, "pool '%s': no space left on device (%s free; the pool keeps "
			      "%s in reserve for gc and destroy: destroy snapshots and run gc)",
			      p->name, fr, need);
	}
	return r;
}

int pool_nospace(struct store_pool *p)
{
	struct statvfs v;
	char fr[16], rs[16];
	uint64_t res = reserve_have(p->path);
	if (statvfs(p->path, &v) != 0)
		return ferry_err(FERR_NOSPC, "pool '%s': no space left on device", p->name);
	format_nicenum((uint64_t)v.f_bavail * v.f_frsize, fr, sizeof fr, 1);
	format_nicenum(res, rs, sizeof rs, 1);
	if (res)
		return ferry_err(FERR_NOSPC, "pool '%s': no space left on device (%s free, %s more "
				 "kept in reserve for gc and destroy)", p->name, fr, rs);
	return ferry_err(FERR_NOSPC, "pool '%s': no space left on device (%s free)", p->name, fr);
}
