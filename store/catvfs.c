/* store/catvfs.c — the catalogue's SQLite VFS: the default "unix" VFS with
 * four things added, registered once by cat_open as "ferry".
 *
 * 1. No SIGBUS on a full disk. SQLite's wal-index (-shm) is a memory-mapped
 *    file. To grow it, the unix VFS writes one byte at the end of each 4 KiB
 *    page and maps the region; on a filesystem with 1 KiB blocks that
 *    allocates one block per page and leaves the rest of the page a hole,
 *    and the first store into a hole on a full disk raises SIGBUS (the page
 *    fault cannot allocate). So after the real xShmMap has mapped a region,
 *    and before SQLite touches it, the whole region is allocated with
 *    fallocate(FALLOC_FL_KEEP_SIZE), which never changes data, only fills
 *    holes. When that fails with ENOSPC (after taking from the pool's
 *    reserve, 3.), xShmMap fails with SQLITE_FULL and *pp = NULL, and the
 *    statement fails with a clear "no space" instead of a crash.
 *
 *    The fd used is SQLite's own -shm fd, found once per connection by
 *    matching device and inode among /proc/self/fd. The -shm is never
 *    opened here: closing any fd of a file drops every POSIX lock the
 *    process holds on it, SQLite's wal-index locks included, and an fd of
 *    our own would have to outlive every connection that maps the file.
 *    SQLite's fd lives as long as its shm node, which this connection holds
 *    from its first xShmMap to its xShmUnmap, so it is valid whenever this
 *    connection's xShmMap runs. Where it cannot be found (no /proc) or the
 *    filesystem has no fallocate, the mapping is used as SQLite made it.
 *
 * 2. Fault injection (test builds, -DFERRY_FAULT): every write, truncate,
 *    sync and delete of SQLite's files passes io_fault() first, so a test
 *    can fail the Nth one with EIO or ENOSPC like any other ferry write
 *    (lib/fault.c).
 *
 * 3. The pool's reserve (space.c). A write of the catalogue or its WAL that
 *    fails with SQLITE_FULL, by a process with no pack writer open on that
 *    pool (so: destroy, rollback, gc, property changes, and never a capture
 *    or receive), takes space from the pool's reserve file and retries;
 *    growing the -shm always may (a few KiB, and without it not even `list`
 *    runs on a full disk). So gc and destroy work on a full disk.
 *
 * 4. A window on the WAL. SQLite writes a WAL frame as two calls, its
 *    24-byte header and then its page, at the end of the log; a
 *    transaction larger than the page cache spills pages into the log
 *    before it commits, writes some of them again in place, and at its
 *    commit reads every frame from the first one so rewritten to the end
 *    and writes each header again with its new checksum. Each call was a
 *    system call, and on a VM an entry into the kernel costs more than
 *    the 4 KiB copy: a 0.1 % incremental receive into a 1,000,000-file
 *    dataset made 20,000 writes of 24 bytes and 20,000 reads for 10,000
 *    frames. So each WAL file keeps one window of up to WAL_BUF bytes:
 *    a write at the window's end (the next frame) or inside it (a header
 *    rewritten) goes into it, a read inside it is served from it, and a
 *    read that starts where the last one ended fills it from the file
 *    first. What it holds unwritten (one range) goes out as one write when
 *    a write falls outside it, and before anything else touches the file:
 *    a read outside it, a sync, a truncate, its size, a file control, its
 *    close. Every commit of the catalogue syncs its WAL first (cat_open
 *    sets synchronous=FULL, and a read-only connection writes no WAL), so
 *    only the open transaction's frames are ever held unwritten, never a
 *    committed one: a crash loses nothing a commit had, and a write that
 *    fails when the window goes out fails that transaction, as SQLite's
 *    own failed write would. Whenever this database's wal-index locks
 *    change hands (xShmLock) and where a commit is made visible to other
 *    connections (xShmBarrier), every window on its WAL in this process
 *    goes out and is dropped: no reader is told of a frame that is not in
 *    the file, and no window outlives the locks under which what it holds
 *    was the file's content (another connection may write the log once
 *    they are let go). Each logical write still passes io_fault() (2.).
 *    tests/unit/test_catvfs.c.
 *
 * Files are tied to their pool by directory: cat_open registers the pool's
 * directory as a site (catvfs_site_get) before opening, and the VFS finds
 * it from the database, WAL or journal file name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* taken from the reserve at a time: for the catalogue's writes, and for
 * one region of the -shm */
#define RESERVE_STEP ((uint64_t)256 << 10)
#define RESERVE_STEP_SHM ((uint64_t)32 << 10)
/* the WAL's window (4.): 30 frames of a 4 KiB page. Below 128
 * KiB: the unix VFS cuts the length of every write it makes to 17 bits
 * (seekAndWriteFd), and a longer one would fail as a short write. */
#define WAL_BUF ((size_t)124 << 10)

struct cat_site {
	struct cat_site *next;
	char dir[PATH_MAX];
	unsigned refs;
	unsigned writers; /* pack writers open on this pool in this process */
};

static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cat_site *sites;

struct cat_site *catvfs_site_get(const char *dir)
{
	struct cat_site *s;
	pthread_mutex_lock(&site_mu);
	for (s = sites; s; s = s->next)
		if (!strcmp(s->dir, dir))
			break;
	if (!s && (s = calloc(1, sizeof *s))) {
		snprintf(s->dir, sizeof s->dir, "%s", dir);
		s->next = sites;
		sites = s;
	}
	if (s)
		s->refs++;
	pthread_mutex_unlock(&site_mu);
	return s;
}

void catvfs_site_put(struct cat_site *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&site_mu);
	if (--s->refs == 0) {
		struct cat_site **pp = &sites;
		while (*pp != s)
			pp = &(*pp)->next;
		*pp = s->next;
		free(s);
	}
	pthread_mutex_unlock(&site_mu);
}

void catvfs_writers(struct cat_site *s, int delta)
{
	if (!s)
		return;
	pthread_mutex_lock(&site_mu);
	s->writers = (unsigned)((int)s->writers + delta);
	pthread_mutex_unlock(&site_mu);
}

/* Frees up to RESERVE_STEP of the site's reserve for the write that found
 * the disk full; 1 when something was freed. shm: growing the -shm, which
 * any connection may. */
static int site_take(struct cat_site *s, int shm)
{
	int r = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&site_mu);
	if (shm || s->writers == 0) {
		r = reserve_take(s->dir, shm ? RESERVE_STEP_SHM : RESERVE_STEP) > 0;
	}
	pthread_mutex_unlock(&site_mu);
	return r;
}

uint64_t catvfs_reserve_take(struct cat_site *s, uint64_t want)
{
	uint64_t r = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&site_mu);
	if (s->writers == 0)
		r = reserve_take(s->dir, want);
	pthread_mutex_unlock(&site_mu);
	return r;
}

/* ---- the file ------------------------------------------------------------ */

struct cat_file {
	sqlite3_file base;     /* pMethods: cat_io */
	sqlite3_file *real;    /* the unix VFS's file, right after this struct */
	struct cat_site *site; /* the pool this file belongs to, or NULL */
	int shm_fd;            /* SQLite's -shm fd once found; -1 unknown, -2 not findable */
	char shm_path[PATH_MAX + 8];
	/* a WAL (4.): a window on it, in the list of open WALs */
	int wal;
	pthread_mutex_t wmu;   /* the window; a barrier may come from another thread */
	unsigned char *wbuf;   /* WAL_BUF bytes, made when first needed */
	sqlite3_int64 woff;    /* the window holds the file's [woff, woff + wlen) */
	size_t wlen;
	size_t dlo, dhi;       /* [dlo, dhi) of it not written yet (dlo == dhi: none) */
	sqlite3_int64 rend;    /* where the last read ended, -1 */
	struct cat_file *wnext;
	char db_path[PATH_MAX + 8]; /* its database's name */
};

static sqlite3_vfs *unix_vfs;
static sqlite3_vfs cat_vfs;
static sqlite3_io_methods cat_io;

#define REAL(f) (((struct cat_file *)(f))->real)

/* the open WALs of this process, for wal_drop_db */
static pthread_mutex_t wal_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cat_file *wals;

/* One write to the real file; a full disk frees reserve and tries again
 * (3.: a write is idempotent). */
static int real_write(struct cat_file *c, const void *buf, int n, sqlite3_int64 off)
{
	for (;;) {
		int rc = c->real->pMethods->xWrite(c->real, buf, n, off);
		if (rc != SQLITE_FULL || !site_take(c->site, 0))
			return rc;
	}
}

/* Sends what the WAL's window holds unwritten out as one write and drops
 * the window, with c->wmu held. Dropped whether or not the write went:
 * after a failure it belongs to a transaction that fails, and held on it
 * could later land over frames another connection wrote since. */
static int wal_flush_locked(struct cat_file *c)
{
	int rc = SQLITE_OK;
	if (c->dhi > c->dlo)
		rc = real_write(c, c->wbuf + c->dlo, (int)(c->dhi - c->dlo), c->woff + (sqlite3_int64)c->dlo);
	c->wlen = c->dlo = c->dhi = 0;
	return rc;
}

static int wal_flush(struct cat_file *c)
{
	if (!c->wal)
		return SQLITE_OK;
	pthread_mutex_lock(&c->wmu);
	int rc = wal_flush_locked(c);
	c->rend = -1;
	pthread_mutex_unlock(&c->wmu);
	return rc;
}

/* The WALs of database file db (its -shm's name less "-shm") flushed and
 * their windows dropped: where a commit is made visible (the barrier) and
 * wherever a wal-index lock changes hands, after which another connection
 * may have written the log. Errors cannot be told here; with every commit
 * synced first there is nothing left to write by then (4.). */
static void wal_drop_db(const struct cat_file *db)
{
	size_t dl = strlen(db->shm_path);
	if (dl <= 4)
		return;
	dl -= 4;
	pthread_mutex_lock(&wal_mu);
	for (struct cat_file *w = wals; w; w = w->wnext)
		if (strlen(w->db_path) == dl && !memcmp(w->db_path, db->shm_path, dl))
			(void)wal_flush(w);
	pthread_mutex_unlock(&wal_mu);
}

static int x_close(sqlite3_file *f)
{
	struct cat_file *c = (struct cat_file *)f;
	int rc = SQLITE_OK;
	if (c->wal) {
		pthread_mutex_lock(&wal_mu);
		for (struct cat_file **pp = &wals; *pp; pp = &(*pp)->wnext)
			if (*pp == c) {
				*pp = c->wnext;
				break;
			}
		pthread_mutex_unlock(&wal_mu);
		rc = wal_flush(c);
		free(c->wbuf);
		c->wbuf = NULL;
		pthread_mutex_destroy(&c->wmu);
		c->wal = 0;
	}
	int rc2 = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
	catvfs_site_put(c->site);
	c->site = NULL;
	return rc != SQLITE_OK ? rc : rc2;
}

/* A WAL's read: from the window when it holds the range; a read that
 * starts where the last one ended fills a window (the checksum pass over a
 * transaction's frames, a checkpoint's run of adjacent frames, recovery). */
static int x_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	struct cat_file *c = (struct cat_file *)f;
	if (!c->wal)
		return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
	pthread_mutex_lock(&c->wmu);
	if (n > 0 && c->wlen && off >= c->woff && off + n <= c->woff + (sqlite3_int64)c->wlen) {
		memcpy(buf, c->wbuf + (off - c->woff), (size_t)n);
		c->rend = off + n;
		pthread_mutex_unlock(&c->wmu);
		return SQLITE_OK;
	}
	int seq = n > 0 && off == c->rend && (size_t)n <= WAL_BUF / 2;
	int rc = wal_flush_locked(c);
	c->rend = off + n;
	sqlite3_int64 size = 0;
	if (rc == SQLITE_OK && seq && (c->wbuf || (c->wbuf = malloc(WAL_BUF))) &&
	    REAL(f)->pMethods->xFileSize(REAL(f), &size) == SQLITE_OK && size - off >= n) {
		size_t len = size - off < (sqlite3_int64)WAL_BUF ? (size_t)(size - off) : WAL_BUF;
		if (REAL(f)->pMethods->xRead(REAL(f), c->wbuf, (int)len, off) == SQLITE_OK) {
			c->woff = off;
			c->wlen = len;
			memcpy(buf, c->wbuf, (size_t)n);
			pthread_mutex_unlock(&c->wmu);
			return SQLITE_OK;
		}
	}
	pthread_mutex_unlock(&c->wmu);
	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

/* A WAL's write: into the window when it holds the range (a frame's
 * header rewritten with its checksum), or at its end while it has room (a
 * frame's header and page, the next frame); else the window goes out and
 * a new one starts with this write. */
static int x_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	struct cat_file *c = (struct cat_file *)f;
	int e = io_fault(IO_FAULT_WRITE);
	if (e)
		return e == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_WRITE;
	int rc = SQLITE_OK;
	if (!c->wal || n <= 0 || (size_t)n > WAL_BUF / 2)
		return (rc = wal_flush(c)) != SQLITE_OK ? rc : real_write(c, buf, n, off);
	pthread_mutex_lock(&c->wmu);
	if (!c->wbuf && !(c->wbuf = malloc(WAL_BUF))) {
		pthread_mutex_unlock(&c->wmu);
		return real_write(c, buf, n, off);
	}
	size_t at;
	if (c->wlen && off >= c->woff && off + n <= c->woff + (sqlite3_int64)c->wlen) {
		at = (size_t)(off - c->woff);
	} else if (c->wlen && off == c->woff + (sqlite3_int64)c->wlen && c->wlen + (size_t)n <= WAL_BUF) {
		at = c->wlen;
		c->wlen += (size_t)n;
	} else {
		if ((rc = wal_flush_locked(c)) != SQLITE_OK) {
			pthread_mutex_unlock(&c->wmu);
			return rc;
		}
		c->woff = off;
		c->wlen = (size_t)n;
		at = 0;
	}
	memcpy(c->wbuf + at, buf, (size_t)n);
	if (c->dhi == c->dlo) {
		c->dlo = at;
		c->dhi = at + (size_t)n;
	} else {
		/* one range: what lies between holds the file's own bytes */
		c->dlo = at < c->dlo ? at : c->dlo;
		c->dhi = at + (size_t)n > c->dhi ? at + (size_t)n : c->dhi;
	}
	pthread_mutex_unlock(&c->wmu);
	return SQLITE_OK;
}

static int x_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	int e = io_fault(IO_FAULT_WRITE);
	if (e)
		return SQLITE_IOERR_TRUNCATE;
	if (wal_flush((struct cat_file *)f) != SQLITE_OK)
		return SQLITE_IOERR_TRUNCATE;
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int x_sync(sqlite3_file *f, int flags)
{
	int rc = wal_flush((struct cat_file *)f);
	if (rc != SQLITE_OK)
		return rc;
	int e = io_fault(IO_FAULT_FSYNC);
	if (e)
		return e == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_FSYNC;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int x_filesize(sqlite3_file *f, sqlite3_int64 *size)
{
	int rc = wal_flush((struct cat_file *)f);
	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int x_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int x_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int x_checkres(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int x_fcntl(sqlite3_file *f, int op, void *arg)
{
	int rc = wal_flush((struct cat_file *)f);
	if (rc != SQLITE_OK)
		return rc;
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int x_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int x_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

/* SQLite's fd of this database's -shm (see the top of the file). */
static int find_shm_fd(struct cat_file *c)
{
	struct stat want, st;
	char path[64];
	if (c->shm_fd != -1)
		return c->shm_fd;
	c->shm_fd = -2;
	if (stat(c->shm_path, &want) != 0)
		return -2;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -2;
	int dfd = dirfd(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end || fd < 0 || fd == dfd)
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%ld", fd);
		if (fstat((int)fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) {
			/* only a writable fd can allocate */
			int fl = fcntl((int)fd, F_GETFL);
			if (fl >= 0 && (fl & O_ACCMODE) == O_RDWR) {
				c->shm_fd = (int)fd;
				break;
			}
		}
	}
	closedir(d);
	return c->shm_fd;
}

static int x_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
	struct cat_file *c = (struct cat_file *)f;
	int rc;
	for (;;) {
		errno = 0;
		rc = REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, pp);
		if (rc == SQLITE_OK)
			break;
		/* the unix VFS grows the -shm by writing: a full disk says
		 * SHMSIZE with errno ENOSPC */
		if ((rc == SQLITE_IOERR_SHMSIZE || rc == SQLITE_FULL) && errno == ENOSPC) {
			if (site_take(c->site, 1))
				continue;
			*pp = NULL;
			return SQLITE_FULL;
		}
		return rc;
	}
	if (!*pp)
		return rc;
	int fd = find_shm_fd(c);
	if (fd < 0)
		return rc;
	for (;;) {
		int e = io_fault(IO_FAULT_WRITE);
		if (!e && fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)region * size, size) == 0)
			return SQLITE_OK;
		if (!e)
			e = errno;
		if (e == EINTR)
			continue;
		if (e == ENOSPC && site_take(c->site, 1))
			continue;
		if (e == ENOSPC || e == EIO) {
			*pp = NULL; /* SQLite must not touch the holes */
			return e == ENOSPC ? SQLITE_FULL : SQLITE_IOERR_SHMMAP;
		}
		return SQLITE_OK; /* no fallocate here: as SQLite made it */
	}
}

static int x_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	wal_drop_db((struct cat_file *)f);
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}

static void x_shm_barrier(sqlite3_file *f)
{
	wal_drop_db((struct cat_file *)f);
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int x_shm_unmap(sqlite3_file *f, int del)
{
	struct cat_file *c = (struct cat_file *)f;
	c->shm_fd = -1; /* SQLite's node, and its fd, may go now */
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}

static int x_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	return REAL(f)->pMethods->xFetch(REAL(f), off, n, pp);
}

static int x_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

/* ---- the VFS ------------------------------------------------------------ */

static int v_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out)
{
	struct cat_file *c = (struct cat_file *)f;
	int rc;
	memset(c, 0, sizeof *c);
	c->real = (sqlite3_file *)(c + 1);
	c->shm_fd = -1;
	if (name) {
		/* the database, its WAL or journal: all in the pool directory */
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", name);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			c->site = catvfs_site_get(dir);
		}
		if (flags & SQLITE_OPEN_MAIN_DB)
			snprintf(c->shm_path, sizeof c->shm_path, "%s-shm", name);
	}
	rc = unix_vfs->xOpen(unix_vfs, name, c->real, flags, out);
	if (rc != SQLITE_OK || !c->real->pMethods) {
		catvfs_site_put(c->site);
		c->site = NULL;
		c->base.pMethods = NULL;
		return rc;
	}
	c->base.pMethods = &cat_io;
	size_t nl = name ? strlen(name) : 0;
	if ((flags & SQLITE_OPEN_WAL) && nl > 4 && nl - 4 < sizeof c->db_path &&
	    !strcmp(name + nl - 4, "-wal") && pthread_mutex_init(&c->wmu, NULL) == 0) {
		memcpy(c->db_path, name, nl - 4);
		c->db_path[nl - 4] = 0;
		c->rend = -1;
		c->wal = 1;
		pthread_mutex_lock(&wal_mu);
		c->wnext = wals;
		wals = c;
		pthread_mutex_unlock(&wal_mu);
	}
	return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync)
{
	if (io_fault(IO_FAULT_UNLINK))
		return SQLITE_IOERR_DELETE;
	return unix_vfs->xDelete(unix_vfs, name, sync);
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	return unix_vfs->xAccess(unix_vfs, name, flags, out);
}

static int v_fullpath(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	return unix_vfs->xFullPathname(unix_vfs, name, n, out);
}

static void *v_dlopen(sqlite3_vfs *vfs, const char *name) { return unix_vfs->xDlOpen(unix_vfs, name); }
static void v_dlerror(sqlite3_vfs *vfs, int n, char *msg) { unix_vfs->xDlError(unix_vfs, n, msg); }
static void (*v_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	return unix_vfs->xDlSym(unix_vfs, h, sym);
}
static void v_dlclose(sqlite3_vfs *vfs, void *h) { unix_vfs->xDlClose(unix_vfs, h); }
static int v_random(sqlite3_vfs *vfs, int n, char *out) { return unix_vfs->xRandomness(unix_vfs, n, out); }
static int v_sleep(sqlite3_vfs *vfs, int us) { return unix_vfs->xSleep(unix_vfs, us); }
static int v_time(sqlite3_vfs *vfs, double *t) { return unix_vfs->xCurrentTime(unix_vfs, t); }
static int v_lasterr(sqlite3_vfs *vfs, int n, char *msg)
{
	return unix_vfs->xGetLastError(unix_vfs, n, msg);
}
static int v_time64(sqlite3_vfs *vfs, sqlite3_int64 *t)
{
	return unix_vfs->xCurrentTimeInt64(unix_vfs, t);
}

static pthread_once_t vfs_once = PTHREAD_ONCE_INIT;
static int vfs_rc = SQLITE_ERROR;

static void vfs_register(void)
{
	if (!(unix_vfs = sqlite3_vfs_find("unix")) || unix_vfs->iVersion < 2)
		return;
	cat_io = (sqlite3_io_methods){
		.iVersion = 3,
		.xClose = x_close, .xRead = x_read, .xWrite = x_write, .xTruncate = x_truncate,
		.xSync = x_sync, .xFileSize = x_filesize, .xLock = x_lock, .xUnlock = x_unlock,
		.xCheckReservedLock = x_checkres, .xFileControl = x_fcntl,
		.xSectorSize = x_sector, .xDeviceCharacteristics = x_devchar,
		.xShmMap = x_shm_map, .xShmLock = x_shm_lock, .xShmBarrier = x_shm_barrier,
		.xShmUnmap = x_shm_unmap, .xFetch = x_fetch, .xUnfetch = x_unfetch,
	};
	cat_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(struct cat_file) + unix_vfs->szOsFile,
		.mxPathname = unix_vfs->mxPathname,
		.zName = CATVFS_NAME,
		.xOpen = v_open, .xDelete = v_delete, .xAccess = v_access,
		.xFullPathname = v_fullpath, .xDlOpen = v_dlopen, .xDlError = v_dlerror,
		.xDlSym = v_dlsym, .xDlClose = v_dlclose, .xRandomness = v_random,
		.xSleep = v_sleep, .xCurrentTime = v_time, .xGetLastError = v_lasterr,
		.xCurrentTimeInt64 = v_time64,
	};
	vfs_rc = sqlite3_vfs_register(&cat_vfs, 0);
}

int catvfs_init(void)
{
	pthread_once(&vfs_once, vfs_register);
	if (vfs_rc != SQLITE_OK)
		return ferry_err(FERR_CATALOG, "cannot set up the catalogue's file layer");
	return 0;
}
