/* lib/io.c — whole-buffer fd I/O and crash-safe file replacement. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib.h"

/* Linux transfers at most this much per call anyway; asking for less keeps
 * the ssize_t return unambiguous on every platform. */
#define IO_CHUNK ((size_t)1 << 30)
/* Writes go to the kernel 1 MiB at a time. A pack's 4 MiB buffer written
 * in one call spent 2-3 times the system time copying it into the page
 * cache (docs/notes/recv.md, session 16), and on this kernel 2 and 4 MiB
 * writes still do so now and then (dd of 378 MB: 0.36-0.74 s of system
 * time in 4 of 18 runs, 0.08-0.10 s otherwise), while 1 MiB writes never
 * did in 8 runs and cost less than 128 KiB ones (0.075 against 0.09 s): a
 * kept receive's system time 0.27 -> 0.21 s (session 29). */
#define IO_WRITE_CHUNK ((size_t)1 << 20)

void io_pipe_grow(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		(void)fcntl(fd, F_SETPIPE_SZ, (int)IO_PIPE_SIZE); /* only advice */
}

int io_read_full(int fd, void *buf, size_t n, size_t *got)
{
	size_t done = 0;

	while (done < n) {
		size_t want = n - done < IO_CHUNK ? n - done : IO_CHUNK;
		ssize_t k = read(fd, (uint8_t *)buf + done, want);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ferry_err_errno(errno, "read from fd %d", fd);
		}
		if (k == 0)
			break;
		done += (size_t)k;
	}
	*got = done;
	return 0;
}

int io_write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	int e = io_fault(IO_FAULT_WRITE);

	if (e)
		return ferry_err_errno(e, "write to fd %d", fd);

	while (done < n) {
		size_t want = n - done < IO_WRITE_CHUNK ? n - done : IO_WRITE_CHUNK;
		ssize_t k = write(fd, (const uint8_t *)buf + done, want);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ferry_err_errno(errno, "write to fd %d", fd);
		}
		/* A zero-byte write would loop forever; treat it as no space. */
		if (k == 0)
			return ferry_err_errno(ENOSPC, "write to fd %d", fd);
		done += (size_t)k;
	}
	return 0;
}

/* off + n must stay representable, or the kernel would see a negative
 * offset halfway through the transfer. */
static int check_range(int fd, size_t n, off_t off)
{
	if (off < 0 || (uint64_t)n > (uint64_t)INT64_MAX - (uint64_t)off)
		return ferry_err(FERR_INVAL, "fd %d: offset %lld + %zu out of range",
				 fd, (long long)off, n);
	return 0;
}

int io_pread_full(int fd, void *buf, size_t n, off_t off, size_t *got)
{
	size_t done = 0;
	int r;

	if ((r = check_range(fd, n, off)) < 0)
		return r;
	while (done < n) {
		size_t want = n - done < IO_CHUNK ? n - done : IO_CHUNK;
		ssize_t k = pread(fd, (uint8_t *)buf + done, want, off + (off_t)done);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ferry_err_errno(errno, "read from fd %d at offset %lld",
					       fd, (long long)(off + (off_t)done));
		}
		if (k == 0)
			break;
		done += (size_t)k;
	}
	*got = done;
	return 0;
}

int io_pwrite_full(int fd, const void *buf, size_t n, off_t off)
{
	size_t done = 0;
	int r, e;

	if ((r = check_range(fd, n, off)) < 0)
		return r;
	if ((e = io_fault(IO_FAULT_WRITE)))
		return ferry_err_errno(e, "write to fd %d at offset %lld", fd, (long long)off);
	while (done < n) {
		size_t want = n - done < IO_WRITE_CHUNK ? n - done : IO_WRITE_CHUNK;
		ssize_t k = pwrite(fd, (const uint8_t *)buf + done, want, off + (off_t)done);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ferry_err_errno(errno, "write to fd %d at offset %lld",
					       fd, (long long)(off + (off_t)done));
		}
		if (k == 0)
			return ferry_err_errno(ENOSPC, "write to fd %d at offset %lld",
					       fd, (long long)(off + (off_t)done));
		done += (size_t)k;
	}
	return 0;
}

int io_fsync(int fd, const char *what)
{
	int e = io_fault(IO_FAULT_FSYNC);

	if (e)
		return ferry_err_errno(e, "cannot sync %s", what);
	while (fsync(fd) != 0) {
		if (errno == EINTR)
			continue;
		return ferry_err_errno(errno, "cannot sync %s", what);
	}
	return 0;
}

int io_ftruncate(int fd, off_t size, const char *what)
{
	int e = io_fault(IO_FAULT_WRITE);

	if (e)
		return ferry_err_errno(e, "cannot truncate %s", what);
	while (ftruncate(fd, size) != 0) {
		if (errno == EINTR)
			continue;
		return ferry_err_errno(errno, "cannot truncate %s", what);
	}
	return 0;
}

int io_fallocate(int fd, int mode, off_t off, off_t len, const char *what)
{
	int e = io_fault(IO_FAULT_WRITE);

	if (e)
		return ferry_err_errno(e, "cannot allocate %s", what);
	while (fallocate(fd, mode, off, len) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EOPNOTSUPP || errno == ENOSYS)
			return ferry_err(FERR_UNSUPPORTED, "cannot allocate %s: not supported here", what);
		return ferry_err_errno(errno, "cannot allocate %s", what);
	}
	return 0;
}

int io_rename(const char *from, const char *to)
{
	int e = io_fault(IO_FAULT_RENAME);

	if (e || rename(from, to) != 0)
		return ferry_err_errno(e ? e : errno, "cannot rename '%s' to '%s'", from, to);
	return 0;
}

int io_unlink(const char *path)
{
	int e = io_fault(IO_FAULT_UNLINK);

	if (e || unlink(path) != 0)
		return ferry_err_errno(e ? e : errno, "cannot remove '%s'", path);
	return 0;
}

int io_unlinkat(int dirfd, const char *name, const char *dir)
{
	int e = io_fault(IO_FAULT_UNLINK);

	if (e || unlinkat(dirfd, name, 0) != 0)
		return ferry_err_errno(e ? e : errno, "cannot remove '%s/%s'", dir, name);
	return 0;
}

/* Syncs the directory open at fd; what names it in the error ("fd 3",
 * "'/p/packs'"). Some filesystems cannot sync a directory at all
 * (EINVAL, ENOTSUP): the rename is as durable as they will ever make it,
 * so that is not a failure. */
static int fsync_dir(int fd, const char *what)
{
	int e = io_fault(IO_FAULT_FSYNC);

	if (e)
		return ferry_err_errno(e, "fsync directory %s", what);
	while (fsync(fd) != 0) {
		if (errno == EINTR)
			continue;
		if (errno == EINVAL || errno == ENOTSUP)
			return 0;
		return ferry_err_errno(errno, "fsync directory %s", what);
	}
	return 0;
}

int io_fsync_dirfd(int dirfd)
{
	char what[32];

	snprintf(what, sizeof(what), "fd %d", dirfd);
	return fsync_dir(dirfd, what);
}

static int open_dir(const char *dir, int *out)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return ferry_err_errno(errno, "cannot open directory '%s'", dir);
	*out = fd;
	return 0;
}

int io_fsync_dir(const char *dir)
{
	char what[PATH_MAX + 2];
	int fd = -1, r;

	if ((r = open_dir(dir, &fd)) < 0)
		return r;
	snprintf(what, sizeof(what), "'%s'", dir);
	r = fsync_dir(fd, what);
	close(fd);
	return r;
}

/* name is joined to dir by the kernel (openat/renameat), so it must be a
 * single component or the write could land outside dir. */
static int check_name(const char *dir, const char *name)
{
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return ferry_err(FERR_NAME, "invalid file name '%s' in '%s'", name, dir);
	return 0;
}

int io_write_file_atomic(const char *dir, const char *name, const void *data,
			 size_t len, mode_t mode)
{
	return io_replace_file(dir, name, data, len, mode, 1);
}

int io_replace_file(const char *dir, const char *name, const void *data, size_t len,
		    mode_t mode, int sync)
{
	char tmp[NAME_MAX + 1];
	int dfd = -1, fd = -1, r, tries;
	int have_tmp = 0;

	if ((r = check_name(dir, name)) < 0)
		goto out;
	if ((r = open_dir(dir, &dfd)) < 0)
		goto out;
	/* Like mkstemp, but in dir with the caller's mode; the name prefix is
	 * capped so a long target name cannot push it past NAME_MAX. The
	 * leading dot keeps half-written files out of casual listings. */
	for (tries = 0;; tries++) {
		uint64_t rnd;

		ferry_random(&rnd, sizeof(rnd));
		snprintf(tmp, sizeof(tmp), ".%.64s.tmp-%016llx", name,
			 (unsigned long long)rnd);
		if ((r = io_fault(IO_FAULT_CREATE))) {
			r = ferry_err_errno(r, "cannot create temporary file in '%s'", dir);
			goto out;
		}
		fd = openat(dfd, tmp, O_CREAT | O_EXCL | O_CLOEXEC | O_WRONLY, mode);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries >= 100) {
			r = ferry_err_errno(errno, "cannot create temporary file in '%s'", dir);
			goto out;
		}
	}
	have_tmp = 1;
	/* exactly mode, whatever the umask: a private file stays private */
	if (fchmod(fd, mode) != 0) {
		r = ferry_err_errno(errno, "cannot set the mode of '%s/%s'", dir, name);
		goto out;
	}
	if ((r = io_write_full(fd, data, len)) < 0) {
		r = ferry_err(-r, "cannot write '%s/%s': %s", dir, name, ferry_errmsg(r));
		goto out;
	}
	if (sync) {
		char what[PATH_MAX + NAME_MAX + 4];

		snprintf(what, sizeof(what), "'%s/%s'", dir, name);
		if ((r = io_fsync(fd, what)) < 0)
			goto out;
	}
	/* close can report deferred write errors (NFS); a replace built on a
	 * file we could not close cleanly is not safe. */
	r = close(fd);
	fd = -1;
	if (r < 0) {
		r = ferry_err_errno(errno, "close '%s/%s'", dir, name);
		goto out;
	}
	if ((r = io_fault(IO_FAULT_RENAME)) || renameat(dfd, tmp, dfd, name) < 0) {
		r = ferry_err_errno(r ? r : errno, "cannot rename '%s/%s' to '%s'", dir, tmp, name);
		goto out;
	}
	have_tmp = 0;
	if (sync && (r = io_fsync_dirfd(dfd)) < 0) {
		r = ferry_err(-r, "fsync directory '%s': %s", dir, ferry_errmsg(r));
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (have_tmp)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	return r;
}

int io_read_file(const char *path, size_t max, char **out, size_t *len)
{
	struct fbuf b;
	uint8_t *p;
	size_t n;
	int fd = -1, r = 0;

	fbuf_init(&b, max);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		r = ferry_err_errno(errno, "cannot open '%s'", path);
		goto out;
	}
	for (;;) {
		size_t want;
		ssize_t k;

		if (b.len == max) {
			/* Full: one more byte tells "exactly max" from "too big". */
			uint8_t c;

			do {
				k = read(fd, &c, 1);
			} while (k < 0 && errno == EINTR);
			if (k < 0) {
				r = ferry_err_errno(errno, "cannot read '%s'", path);
				goto out;
			}
			if (k > 0) {
				r = ferry_err(FERR_LIMIT, "'%s' is larger than %zu bytes", path, max);
				goto out;
			}
			break;
		}
		want = max - b.len < 65536 ? max - b.len : 65536;
		if ((r = fbuf_reserve(&b, want)) < 0) {
			r = ferry_err(-r, "cannot read '%s': %s", path, ferry_strerror(r));
			goto out;
		}
		do {
			k = read(fd, b.data + b.len, want);
		} while (k < 0 && errno == EINTR);
		if (k < 0) {
			r = ferry_err_errno(errno, "cannot read '%s'", path);
			goto out;
		}
		if (k == 0)
			break;
		b.len += (size_t)k;
	}
	/* fbuf keeps one spare byte past cap, so the terminator always fits. */
	if (b.data)
		b.data[b.len] = '\0';
	if (!(p = fbuf_detach(&b, &n))) {
		r = ferry_err(FERR_NOMEM, "cannot read '%s': out of memory", path);
		goto out;
	}
	*out = (char *)p;
	if (len)
		*len = n;
out:
	if (fd >= 0)
		close(fd);
	fbuf_release(&b);
	return r;
}

int io_open_create(const char *path, int flags, mode_t mode, int *out)
{
	int fd, tries;

	for (tries = 0;; tries++) {
		if (!(flags & O_EXCL)) {
			fd = open(path, (flags & ~O_CREAT) | O_CLOEXEC);
			if (fd >= 0)
				break;
			if (errno == EINTR)
				continue;
			if (errno != ENOENT)
				return ferry_err_errno(errno, "cannot open '%s'", path);
		}
		int fe = io_fault(IO_FAULT_CREATE);

		if (fe)
			return ferry_err_errno(fe, "cannot create '%s'", path);
		fd = open(path, flags | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0) {
			/* exactly mode, whatever the umask */
			if (fchmod(fd, mode) != 0) {
				int e = errno;

				close(fd);
				unlink(path);
				return ferry_err_errno(e, "cannot set the mode of '%s'", path);
			}
			break;
		}
		if (errno == EINTR)
			continue;
		/* someone made it between the two opens: open theirs */
		if (errno == EEXIST && !(flags & O_EXCL) && tries < 100)
			continue;
		return ferry_err_errno(errno, "cannot create '%s'", path);
	}
	*out = fd;
	return 0;
}

int io_mkdir(const char *path, mode_t mode)
{
	int fe = io_fault(IO_FAULT_CREATE);

	if (fe)
		return ferry_err_errno(fe, "cannot create directory '%s'", path);
	if (mkdir(path, mode) != 0)
		return ferry_err_errno(errno, "cannot create directory '%s'", path);
	if (chmod(path, mode) != 0) {
		int e = errno;

		rmdir(path);
		return ferry_err_errno(e, "cannot set the mode of '%s'", path);
	}
	return 0;
}

int io_mkdirs(const char *path, mode_t mode)
{
	char *p = NULL;
	size_t i, n;
	struct stat st;
	int r = 0;

	if (!path[0])
		return ferry_err(FERR_INVAL, "cannot create directory: empty path");
	if (!(p = strdup(path)))
		return ferry_err(FERR_NOMEM, "cannot create '%s': out of memory", path);
	n = strlen(p);
	/* Walk prefixes by cutting at each '/' in turn; i starts at 1 so an
	 * absolute path never tries to mkdir "". */
	for (i = 1; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		if (p[i - 1] == '/')
			continue; /* "a//b" or trailing "/" */
		char save = p[i];
		p[i] = '\0';
		/* Whatever mkdir says (EEXIST, or EACCES/EROFS on a parent we
		 * only pass through), an existing directory is success; this
		 * also absorbs a concurrent creator. */
		int fe = stat(p, &st) == 0 ? 0 : io_fault(IO_FAULT_CREATE);

		if (fe || mkdir(p, mode) < 0) {
			int e = fe ? fe : errno;

			if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
				p[i] = save;
				continue;
			}
			if (e == EEXIST)
				r = ferry_err(FERR_EXISTS, "'%s' exists and is not a directory", p);
			else
				r = ferry_err_errno(e, "cannot create directory '%s'", p);
			goto out;
		}
		/* what this call made gets exactly mode, whatever the umask */
		if (chmod(p, mode) != 0) {
			r = ferry_err_errno(errno, "cannot set the mode of '%s'", p);
			goto out;
		}
		p[i] = save;
	}
out:
	free(p);
	return r;
}
