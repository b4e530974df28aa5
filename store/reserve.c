/* store/reserve.c — the pool's reserve and the one line a full disk gives.
 * Like ZFS's slop space: a preallocated file, POOL/reserve, that captures
 * and receives never use, so that gc and destroy, which give space back,
 * still find room for their catalogue writes on a full disk. The
 * catalogue's VFS (catvfs.c) shrinks it when such a write finds the disk
 * full; the next gc, the end of the command that drew on it, or the next
 * capture or receive grows it back to its size when the space is there
 * again. A capture or receive that cannot have it whole does not start.
 * Size: 1/32 of the filesystem (ZFS's spa_slop_shift), 256 KiB to 64 MiB.
 * It uses no other file of store/: the catalogue and its VFS call it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"

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

void reserve_grow(struct store_pool *p, int mode)
{
	struct ferry_errsave e;
	if (mode == RESERVE_STRICT)
		BUG("reserve_grow: a strict reserve can fail");
	ferry_err_save(&e);
	if (reserve_ensure(p, mode) < 0)
		BUG("reserve_ensure failed in a mode that never fails");
	ferry_err_restore(&e);
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
