/* store/pool.c — creating, importing, exporting and opening pools. A pool is
 * a directory: the marker file ferry.pool (format version), catalog.db and
 * packs/. Creation builds everything in a temporary sibling directory and
 * renames it into place, so a failed create leaves nothing behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static int dir_is_empty(const char *path, int *empty)
{
	DIR *d = opendir(path);
	if (!d)
		return ferry_err_errno(errno, "cannot read '%s'", path);
	struct dirent *e;
	*empty = 1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			*empty = 0;
			break;
		}
	closedir(d);
	return 0;
}

static int abs_path(const char *path, char *out, size_t n)
{
	char cwd[PATH_MAX];
	int w;
	if (path[0] == '/') {
		w = snprintf(out, n, "%s", path);
	} else {
		if (!getcwd(cwd, sizeof cwd))
			return ferry_err_errno(errno, "cannot get the working directory");
		w = snprintf(out, n, "%s/%s", cwd, path);
	}
	if (w < 0 || (size_t)w >= n)
		return ferry_err(FERR_LIMIT, "path '%s' is too long", path);
	while (strlen(out) > 1 && out[strlen(out) - 1] == '/')
		out[strlen(out) - 1] = 0;
	return 0;
}

int pool_write_marker(const char *dir)
{
	char buf[64];
	int w = snprintf(buf, sizeof buf, "ferry pool format %d\n", STORE_FORMAT_VERSION);
	return io_write_file_atomic(dir, STORE_MARKER, buf, (size_t)w, STORE_FILE_MODE);
}

static int check_marker(const char *dir)
{
	char file[PATH_MAX + 32];
	char *data = NULL;
	size_t len;
	snprintf(file, sizeof file, "%s/%s", dir, STORE_MARKER);
	int r = io_read_file(file, 256, &data, &len);
	if (r < 0) {
		struct stat st;
		if (stat(dir, &st) != 0)
			return ferry_err_errno(errno, "cannot open pool at '%s'", dir);
		return ferry_err(FERR_NOENT, "'%s' is not a ferry pool (no %s)", dir, STORE_MARKER);
	}
	unsigned v = 0;
	if (sscanf(data, "ferry pool format %u", &v) != 1) {
		free(data);
		return ferry_err(FERR_CORRUPT, "'%s' is not a ferry pool (bad %s)", dir, STORE_MARKER);
	}
	free(data);
	if (v > STORE_FORMAT_VERSION)
		return ferry_err(FERR_VERSION,
				 "pool at '%s' has format version %u; this ferry supports up to %d",
				 dir, v, STORE_FORMAT_VERSION);
	return 0;
}

static void pool_free(struct store_pool *p)
{
	if (!p)
		return;
	if (p->db)
		sqlite3_close_v2(p->db);
	pack_tx_end(p, 0); /* nothing open can commit any more */
	act_drop(p);
	if (p->site) {
		/* the reserve may have been drawn on (by this command, or by a
		 * read-only one before it, which cannot give it back): take it
		 * back if the space is there now (reserve_grow keeps the error
		 * being reported). After the close: SQLite's -wal and -shm are
		 * gone. */
		reserve_grow(p, (p->flags & STORE_OPEN_RDONLY) ? RESERVE_REGROW : RESERVE_BEST);
	}
	catvfs_site_put(p->site);
	free(p->tx_packs);
	node_memo_free(p);
	free(p->name);
	free(p->path);
	free(p);
}

static int pool_alloc(const char *name, const char *path, int flags, struct store_pool **out)
{
	struct store_pool *p = calloc(1, sizeof *p);
	if (p)
		p->tx_lock_fd = -1;
	if (!p || !(p->name = strdup(name)) || !(p->path = strdup(path))) {
		pool_free(p);
		return ferry_err(FERR_NOMEM, "opening pool '%s'", name);
	}
	p->flags = flags;
	node_memo_new(p);
	*out = p;
	return 0;
}

/* Opens the catalogue of the pool at path and checks its format version. */
static int pool_open_path(const char *name, const char *path, int flags, struct store_pool **out)
{
	struct store_pool *p = NULL;
	char buf[64];
	int r;
	if ((r = check_marker(path)) < 0)
		return r;
	/* a recover killed after its commit point: finished first */
	if ((r = recover_finish(path, NULL, 0)) < 0)
		return r;
	if ((r = pool_alloc(name, path, flags, &p)) < 0)
		return r;
	if ((r = cat_open(p, 0)) < 0)
		goto out;
	if ((r = cat_meta_get(p, "format_version", buf, sizeof buf)) < 0) {
		r = ferry_err(FERR_CORRUPT, "'%s' is not a ferry pool: %s", path, ferry_errmsg(r));
		goto out;
	}
	unsigned long v = strtoul(buf, NULL, 10);
	if (v == 0 || v > STORE_FORMAT_VERSION) {
		r = ferry_err(FERR_VERSION,
			      "pool at '%s' has format version %s; this ferry supports up to %d",
			      path, buf, STORE_FORMAT_VERSION);
		goto out;
	}
	if ((r = cat_schema_snap(p)) < 0)
		goto out;
	p->records = v >= 2;
	*out = p;
	p = NULL;
out:
	pool_free(p);
	return r;
}

/* After a failed create that had removed the empty directory it was given
 * (to rename the new pool onto it): puts it back with its mode. A failure
 * is named after the error being reported. */
static void restore_empty_dir(const char *abs, mode_t mode)
{
	struct ferry_errsave e;
	ferry_err_save(&e);
	if (io_mkdir(abs, mode) < 0)
		ferry_err_restore_also(&e, "putting back the empty directory");
	else
		ferry_err_restore(&e);
}

/* Where a new pool goes: abs must be missing or an empty directory
 * (*existed, with its *mode), in a parent directory that exists (into
 * parent). */
static int pool_check_place(const char *abs, int *existed, mode_t *mode, char *parent, size_t n)
{
	struct stat st;
	int r;
	if (stat(abs, &st) == 0) {
		int empty = 0;
		if (!S_ISDIR(st.st_mode))
			return ferry_err(FERR_EXISTS, "'%s' exists and is not a directory", abs);
		if ((r = dir_is_empty(abs, &empty)) < 0)
			return r;
		if (!empty)
			return ferry_err(FERR_NOTEMPTY, "'%s' is not empty", abs);
		*existed = 1;
		*mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		return ferry_err_errno(errno, "cannot use '%s'", abs);
	}
	snprintf(parent, n, "%s", abs);
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		parent[1] = 0;
	else if (slash)
		*slash = 0;
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode))
		return ferry_err(FERR_NOENT, "cannot create pool at '%s': parent directory missing",
				 abs);
	return 0;
}

/* The catalogue of the new pool p: schema, metadata, then the root
 * dataset, created like any other, with the -o properties. */
static int pool_build_catalog(struct store_pool *p, const char *name,
			      const struct store_propset *props, size_t nprops)
{
	char buf[64];
	int r;
	p->records = 1; /* from its first commit on */
	if ((r = cat_open(p, 1)) < 0 || (r = store_tx_begin(p)) < 0)
		return r;
	snprintf(buf, sizeof buf, "%d", STORE_FORMAT_VERSION);
	if ((r = cat_schema_create(p)) < 0 || (r = cat_meta_set(p, "format_version", buf)) < 0 ||
	    (r = cat_meta_set(p, "name", name)) < 0)
		goto fail;
	snprintf(buf, sizeof buf, "%" PRIu64, ferry_random_guid());
	if ((r = cat_meta_set(p, "guid", buf)) < 0 || (r = cat_meta_set(p, "txg", "0")) < 0)
		goto fail;
	if ((r = store_tx_commit(p)) < 0 ||
	    (r = store_ds_create(p, name, STORE_DS_FILESYSTEM, 0, props, nprops)) < 0)
		return r;
	return cat_exec(p, "PRAGMA wal_checkpoint(TRUNCATE)");
fail:
	store_tx_rollback(p);
	return r;
}

/* The whole new pool in directory tmp (made here): packs/, the catalogue
 * (closed again), the reserve and the marker, in *pp for the caller to
 * free. */
static int pool_build(const char *name, const char *tmp, const struct store_propset *props,
		      size_t nprops, struct store_pool **pp)
{
	char packs[PATH_MAX + 80];
	int r;
	snprintf(packs, sizeof packs, "%s/%s", tmp, PACK_DIR);
	if ((r = io_mkdir(packs, STORE_DIR_MODE)) < 0 || (r = pool_alloc(name, tmp, 0, pp)) < 0 ||
	    (r = pool_build_catalog(*pp, name, props, nprops)) < 0)
		return r;
	sqlite3_close_v2((*pp)->db);
	(*pp)->db = NULL;
	act_drop(*pp); /* its path is about to change */
	if ((r = reserve_ensure(*pp, RESERVE_STRICT)) < 0)
		return r;
	return pool_write_marker(tmp);
}

int store_pool_create(const char *name, const char *path,
		      const struct store_propset *props, size_t nprops)
{
	char abs[PATH_MAX], tmp[PATH_MAX + 64], parent[PATH_MAX];
	struct store_pool *p = NULL;
	int r, created_dir = 0, existed = 0;
	mode_t old_mode = 0755;

	if ((r = store_name_check(name, STORE_NAME_POOL)) < 0 ||
	    (r = prop_check_create(STORE_DS_FILESYSTEM, props, nprops)) < 0 ||
	    (r = abs_path(path, abs, sizeof abs)) < 0)
		return r;
	if (registry_get(name, tmp, sizeof tmp) == 0)
		return ferry_err(FERR_EXISTS, "pool '%s' already exists (at '%s')", name, tmp);
	ferry_err_clear();
	if ((r = pool_check_place(abs, &existed, &old_mode, parent, sizeof parent)) < 0)
		return r;
	/* Build in a sibling temp dir, then rename into place. */
	snprintf(tmp, sizeof tmp, "%s.ferry-new.%d", abs, (int)getpid());
	if ((r = io_mkdir(tmp, STORE_DIR_MODE)) < 0)
		return r;
	created_dir = 1;
	if ((r = pool_build(name, tmp, props, nprops, &p)) < 0)
		goto out;
	if (existed && ((r = io_fault(IO_FAULT_UNLINK)) || rmdir(abs) != 0)) {
		r = ferry_err_errno(r ? r : errno, "cannot replace '%s'", abs);
		goto out;
	}
	if ((r = io_rename(tmp, abs)) < 0) {
		r = ferry_err(r, "cannot create '%s': %s", abs, ferry_errmsg(r));
		if (existed)
			restore_empty_dir(abs, old_mode);
		goto out;
	}
	created_dir = 0;
	if ((r = io_fsync_dir(parent)) < 0 || (r = registry_put(name, abs)) < 0) {
		rm_tree(abs);
		if (existed)
			restore_empty_dir(abs, old_mode);
	}
out:
	pool_free(p);
	if (created_dir)
		rm_tree(tmp);
	return r;
}

int store_pool_import(const char *path, const char *name, char **name_out)
{
	char abs[PATH_MAX], stored[STORE_NAME_MAX + 1], other[PATH_MAX];
	struct store_pool *p = NULL;
	int r;
	if ((r = abs_path(path, abs, sizeof abs)) < 0)
		return r;
	if ((r = pool_open_path("import", abs, 0, &p)) < 0)
		return r;
	if ((r = cat_meta_get(p, "name", stored, sizeof stored)) < 0)
		goto out;
	const char *use = name ? name : stored;
	if ((r = store_name_check(use, STORE_NAME_POOL)) < 0)
		goto out;
	if (registry_get(use, other, sizeof other) == 0) {
		r = strcmp(other, abs) == 0
			    ? ferry_err(FERR_EXISTS, "pool '%s' is already imported", use)
			    : ferry_err(FERR_EXISTS, "a pool named '%s' already exists (at '%s')",
					use, other);
		goto out;
	}
	ferry_err_clear();
	if (strcmp(use, stored) != 0) {
		if ((r = store_tx_begin(p)) < 0)
			goto out;
		if ((r = cat_meta_set(p, "name", use)) < 0) {
			store_tx_rollback(p);
			goto out;
		}
		if ((r = store_tx_commit(p)) < 0)
			goto out;
	}
	if ((r = registry_put(use, abs)) < 0)
		goto out;
	if (name_out && !(*name_out = strdup(use)))
		r = ferry_err(FERR_NOMEM, "importing");
out:
	pool_free(p);
	return r;
}

int store_pool_export(const char *name)
{
	char path[PATH_MAX];
	int r;
	if ((r = registry_get(name, path, sizeof path)) < 0)
		return r;
	return registry_del(name);
}

int store_pool_open(const char *name, int flags, struct store_pool **out)
{
	char path[PATH_MAX];
	int r;
	if ((r = registry_get(name, path, sizeof path)) < 0)
		return r;
	return pool_open_path(name, path, flags, out);
}

int store_pool_open_for(const char *dsname, int flags, struct store_pool **out)
{
	char pool[STORE_NAME_MAX + 1];
	size_t n = strcspn(dsname, "/@#");
	if (n == 0 || n > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "'%s': invalid dataset name", dsname);
	memcpy(pool, dsname, n);
	pool[n] = 0;
	return store_pool_open(pool, flags, out);
}

void store_pool_close(struct store_pool *p)
{
	if (p && p->tx_depth > 0) {
		p->tx_depth = 1;
		store_tx_rollback(p);
	}
	pool_free(p);
}

const char *store_pool_name(const struct store_pool *p) { return p->name; }
const char *store_pool_path(const struct store_pool *p) { return p->path; }

/* nftw has no context pointer; one check runs at a time (the CLI's). */
static char exposed_what[PATH_MAX + 64];
static int exposed_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if ((flag == FTW_F || flag == FTW_D || flag == FTW_DP) && (st->st_mode & 077)) {
		snprintf(exposed_what, sizeof exposed_what, "'%s' has mode %04o", path,
			 (unsigned)(st->st_mode & 07777));
		return 1;
	}
	return 0;
}

int store_pool_exposed(const char *name, char *what, size_t n)
{
	char path[PATH_MAX];
	int r;
	if ((r = registry_get(name, path, sizeof path)) < 0)
		return r;
	exposed_what[0] = 0;
	r = nftw(path, exposed_cb, 16, FTW_PHYS);
	if (r < 0)
		return ferry_err_errno(errno, "cannot read '%s'", path);
	if (r == 0)
		return 0;
	snprintf(what, n, "%s", exposed_what);
	return 1;
}

static uint64_t disk_bytes;
static int du_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (flag == FTW_F)
		disk_bytes += (uint64_t)st->st_blocks * 512;
	return 0;
}

int store_pool_stats(struct store_pool *p, struct store_pool_stats *out)
{
	struct store_pool_stats s;
	struct statvfs vfs;
	char buf[64];
	sqlite3_stmt *st = NULL;
	int r;
	memset(&s, 0, sizeof s);
	if ((r = cat_meta_get(p, "format_version", buf, sizeof buf)) < 0)
		return r;
	s.format_version = strtoull(buf, NULL, 10);
	if ((r = cat_meta_get(p, "guid", buf, sizeof buf)) < 0)
		return r;
	s.guid = strtoull(buf, NULL, 10);
	if ((r = cat_meta_get(p, "txg", buf, sizeof buf)) < 0)
		return r;
	s.txg = strtoull(buf, NULL, 10);
	if ((r = cat_prepare(p, "SELECT count(*) FROM datasets", &st)) < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		s.datasets = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	/* nftw has no context pointer; stats are computed by one thread at a time. */
	disk_bytes = 0;
	nftw(p->path, du_cb, 16, FTW_PHYS);
	s.disk_used = disk_bytes;
	if ((r = space_pool_stats(p, &s)) < 0)
		return r;
	if (statvfs(p->path, &vfs) == 0) {
		s.fs_size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
		s.fs_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	}
	*out = s;
	return 0;
}
