/* restore/restore.c — rebuilding a snapshot's tree (or volume image) on disk.
 *
 * Every name comes from a node the decoder checked (no '/', NUL, "." or
 * ".."), and every file is created with openat/mkdirat/symlinkat relative to
 * a directory fd this restore opened with O_NOFOLLOW, so nothing is written
 * outside the target whatever the snapshot holds. Directory attributes
 * (mode, mtime) are set after their children; owners only when running as
 * root (and not told otherwise: the RESTORE_NO_* options shape what
 * an untrusted snapshot can make); holes and all-zero blocks are skipped so
 * sparse files stay sparse. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

struct rlink {
	uint64_t id;
	char *path;
};

struct rjob;
struct rframe;

struct rst {
	struct workq *q;
	struct rjob *free_jobs;
	struct store_pool *p;
	struct store_reader *rd;
	const struct restore_opts *o;
	struct restore_stats *st;
	int owners;
	/* what this restore creates gets euid/egid by itself: no --force (every
	 * entry is new, in directories made here, which get their own modes only
	 * after their children) and a target directory without setgid */
	int fresh_owner;
	uid_t euid;
	gid_t egid;
	int rootfd;
	struct fbuf path;
	uint8_t *buf;
	size_t bufcap;
	struct rlink *links;
	size_t nlinks, caplinks;
	int *found;
	int partial;
	struct rframe *frames;
	size_t nframes, capframes;
	struct dirstack dirs;
	int err_named;  /* the last error came from a job and names its file */
};

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

/* Path p (n bytes) for a message, in out (max bytes): whole, or its start
 * and its end when longer (paths of deep trees outgrow PATH_MAX). */
static void shorten(const char *p, size_t n, char *out, size_t max)
{
	if (!n) {
		snprintf(out, max, ".");
	} else if (n < max) {
		memcpy(out, p, n);
		out[n] = 0;
	} else {
		size_t half = (max - 6) / 2;
		memcpy(out, p, half);
		memcpy(out + half, "/.../", 5);
		memcpy(out + half + 5, p + n - half, half);
		out[2 * half + 5] = 0;
	}
}

static void shown_path(struct rst *r, char *out, size_t max)
{
	shorten((const char *)r->path.data, r->path.len, out, max);
}

#define WARN_PATH_MAX 4096

/* A warning about path (NULL: the walk's current path). */
static void rwarn_path(struct rst *r, const char *path, const char *what, int e)
{
	char msg[256];
	snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
	r->st->warnings++;
	r->partial = 1;
	if (r->o->warn) {
		char shown[WARN_PATH_MAX];
		if (path)
			shorten(path, strlen(path), shown, sizeof shown);
		else
			shown_path(r, shown, sizeof shown);
		r->o->warn(r->o->arg, shown, msg);
	}
}

static void rwarn(struct rst *r, const char *what, int e)
{
	rwarn_path(r, NULL, what, e);
}

/* A warning with no errno about the walk's current path. */
static void rwarn_msg(struct rst *r, const char *msg)
{
	r->st->warnings++;
	r->partial = 1;
	if (r->o->warn) {
		char shown[WARN_PATH_MAX];
		shown_path(r, shown, sizeof shown);
		r->o->warn(r->o->arg, shown, msg);
	}
}

/* ---- selection (--file) ------------------------------------------------------------- */

int restore_selected(const char *const *files, size_t nfiles, const char *pth, size_t pl,
		     int *found)
{
	if (!nfiles)
		return 1;
	int best = 0;
	for (size_t i = 0; i < nfiles; i++) {
		const char *s = files[i];
		while (*s == '/')
			s++;
		size_t sl = strlen(s);
		while (sl && s[sl - 1] == '/')
			sl--;
		if (pl == sl && !memcmp(pth, s, sl)) {
			found[i] = 1;
			return 1;
		}
		if (pl > sl && !memcmp(pth, s, sl) && pth[sl] == '/')
			return 1;
		if (sl > pl && !memcmp(pth, s, pl) && s[pl] == '/')
			best = 2;
	}
	return best;
}

static int selected(struct rst *r)
{
	return restore_selected(r->o->files, r->o->nfiles, (const char *)r->path.data,
				r->path.len, r->found);
}

/* ---- attributes --------------------------------------------------------------------- */

/* Warnings from a worker are kept in its job and reported by the collector
 * (the warn callback and counters belong to the main thread). */
struct jwarn {
	const char *what;
	int err;
	unsigned n;
};

static void note(struct rst *r, struct jwarn *jw, const char *what, int e)
{
	if (!jw) {
		rwarn(r, what, e);
		return;
	}
	if (!jw->n++) {
		jw->what = what;
		jw->err = e;
	}
}

/* The mode e gets on disk: --no-setuid clears the set-id bits,
 * --no-same-permissions applies the umask. */
static mode_t mode_of(const struct rst *r, const struct node_entry *e)
{
	mode_t m = e->mode;
	if (r->o->untrusted & RESTORE_NO_SETUID)
		m &= ~(mode_t)(S_ISUID | S_ISGID);
	if (r->o->untrusted & RESTORE_NO_SAME_PERMISSIONS)
		m &= ~(r->o->umask & 0777);
	return m;
}

static void set_xattrs(struct rst *r, struct jwarn *jw, int fd, int dirfd, const char *name,
		       const struct node_entry *e)
{
	char pp[64 + NAME_MAX + 1];
	char nm[NODE_XATTR_NAME_MAX + 1];
	if (fd < 0)
		snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
	for (size_t i = 0; i < e->nxattr; i++) {
		const struct node_xattr *x = &e->xattrs[i];
		memcpy(nm, x->name, x->name_len);
		nm[x->name_len] = 0;
		/* file capabilities give privileges as setuid does */
		if ((r->o->untrusted & RESTORE_NO_SETUID) && !strcmp(nm, "security.capability"))
			continue;
		int rc = fd >= 0 ? fsetxattr(fd, nm, x->value, x->value_len, 0)
				 : lsetxattr(pp, nm, x->value, x->value_len, 0);
		if (rc != 0 && !(errno == EPERM && !r->owners && !strncmp(nm, "trusted.", 8)))
			note(r, jw, "cannot set an extended attribute", errno);
	}
}

/* fresh: fd is an inode this restore created (see rst.fresh_owner). */
static void set_attrs_jw(struct rst *r, struct jwarn *jw, int fd, const struct node_entry *e,
			 int fresh)
{
	struct timespec ts[2];
	int owned = fresh && r->fresh_owner && e->uid == r->euid && e->gid == r->egid;
	if (r->owners && !owned && fchown(fd, e->uid, e->gid) != 0)
		note(r, jw, "cannot set owner", errno);
	set_xattrs(r, jw, fd, -1, NULL, e);
	if (fchmod(fd, mode_of(r, e)) != 0)
		note(r, jw, "cannot set mode", errno);
	ts[0].tv_sec = e->mtime_sec;
	ts[0].tv_nsec = e->mtime_nsec;
	ts[1] = ts[0];
	if (futimens(fd, ts) != 0)
		note(r, jw, "cannot set mtime", errno);
}

static void set_attrs_fd(struct rst *r, int fd, const struct node_entry *e, int fresh)
{
	set_attrs_jw(r, NULL, fd, e, fresh);
}

static void set_attrs_at(struct rst *r, int dirfd, const char *name, const struct node_entry *e)
{
	struct timespec ts[2];
	if (r->owners && fchownat(dirfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) != 0)
		rwarn(r, "cannot set owner", errno);
	set_xattrs(r, NULL, -1, dirfd, name, e);
	if (e->ftype != NODE_F_SYMLINK && fchmodat(dirfd, name, mode_of(r, e), 0) != 0)
		rwarn(r, "cannot set mode", errno);
	ts[0].tv_sec = e->mtime_sec;
	ts[0].tv_nsec = e->mtime_nsec;
	ts[1] = ts[0];
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) != 0)
		rwarn(r, "cannot set mtime", errno);
}

/* ---- file data -------------------------------------------------------------------- */

struct wctx {
	struct rst *r;
	int fd;
	int fill_holes;
};

static int write_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct wctx *w = arg;
	struct rst *r = w->r;
	int rc;
	size_t n = (size_t)x->len;
	if (x->hole && !w->fill_holes)
		return 0;
	if (x->hole) {
		/* a block device has no holes: write zeros */
		if (r->bufcap < (1u << 20)) {
			uint8_t *nb = realloc(r->buf, 1u << 20);
			if (!nb)
				return ferry_err(FERR_NOMEM, "restoring");
			r->buf = nb;
			r->bufcap = 1u << 20;
		}
		memset(r->buf, 0, r->bufcap);
		for (uint64_t done = 0; done < x->len;) {
			size_t k = x->len - done < r->bufcap ? (size_t)(x->len - done) : r->bufcap;
			if ((rc = io_pwrite_full(w->fd, r->buf, k, (off_t)(off + done))) < 0)
				return rc;
			done += k;
		}
		return 0;
	}
	if (r->bufcap < n) {
		uint8_t *nb = realloc(r->buf, n);
		if (!nb)
			return ferry_err(FERR_NOMEM, "restoring");
		r->buf = nb;
		r->bufcap = n;
	}
	if ((rc = store_block_read(r->rd, x->hash, r->buf, n)) < 0)
		return rc;
	if (!w->fill_holes && codec_is_zero(r->buf, n))
		return 0;
	r->st->bytes += n;
	return io_pwrite_full(w->fd, r->buf, n, (off_t)off);
}

static int write_data(struct rst *r, int fd, const struct node_entry *e, int fill_holes)
{
	struct wctx w = {r, fd, fill_holes};
	int rc;
	if (e->size && e->child_type &&
	    (rc = node_bl_walk(rd_node, r->rd, e->child_type, e->child, e->size, write_extent, &w)) < 0)
		return rc;
	if (!fill_holes && ftruncate(fd, (off_t)e->size) != 0)
		return ferry_err_errno(errno, "cannot set the size of a restored file");
	return 0;
}

/* ---- parallel file data ------------------------------------------------------------
 * The main thread creates files and reads each block as stored; decoding,
 * hash verification and the write run on the worker pool. A file's END job
 * (collected in order, after all its blocks) sets its size and attributes
 * and closes it. */

enum { RJ_DATA, RJ_END, RJ_SMALL };

struct rjob {
	int kind;
	int fd;
	uint64_t off;
	struct codec_spec c;
	uint32_t lsize;
	uint8_t hash[FERRY_HASH_LEN];
	struct fbuf payload;
	struct store_block_loc loc; /* where payload was read, for errors */
	uint8_t *out;
	size_t outcap;
	struct node_entry e;    /* RJ_END, RJ_SMALL: the file's attributes (borrowed until drained) */
	uint64_t bytes;
	/* RJ_SMALL: a file of at most one block, created, written, finished and
	 * closed on the worker; file creation is the slow part of small files */
	int dirfd;
	int has_data;
	char name[NODE_NAME_MAX + 1];
	char *path;             /* RJ_SMALL, RJ_END: the file's path (owned) */
	const char *fpath;      /* RJ_DATA: its file's, owned by that file's RJ_END job,
				 * which is collected after it */
	struct jwarn jw;
	struct rjob *next;
};

static int rjob_data(struct rjob *j);

static int rjob_small(struct rst *rs, struct rjob *j)
{
	int r = 0;
	j->fd = openat(j->dirfd, j->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (j->fd < 0)
		return ferry_err_errno(errno, "restoring '%s': cannot create file", j->path);
	j->bytes = 0;
	if (j->has_data && (r = rjob_data(j)) < 0) {
		/* rjob_data named the file */
	} else if (j->bytes != j->e.size && ftruncate(j->fd, (off_t)j->e.size) != 0) {
		/* (a new file whose one block was written whole has its size) */
		r = ferry_err_errno(errno, "restoring '%s': cannot set its size", j->path);
	} else {
		set_attrs_jw(rs, &j->jw, j->fd, &j->e, 1);
	}
	close(j->fd);
	j->fd = -1;
	return r;
}

static int rjob_fn(void *jv, void *ctx)
{
	struct rjob *j = jv;
	if (j->kind == RJ_SMALL)
		return rjob_small(ctx, j);
	if (j->kind != RJ_DATA)
		return 0;
	return rjob_data(j);
}

/* err of job j, with the file's path in front. */
static int rjob_err(const struct rjob *j, int err)
{
	const char *path = j->kind == RJ_DATA ? j->fpath : j->path;
	char msg[512];
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	return ferry_err(-err, "restoring '%s': %s", path ? path : "?", msg);
}

/* Checks the block against its hash (decoding it into j->out) and writes
 * it; an error names the file, and a damaged block its pack and offset. */
static int rjob_data(struct rjob *j)
{
	const uint8_t *src = j->payload.data;
	int r;
	j->bytes = 0;
	if (j->c.id != CODEC_OFF) {
		if (j->outcap < j->lsize) {
			uint8_t *nb = realloc(j->out, j->lsize);
			if (!nb)
				return rjob_err(j, ferry_err(FERR_NOMEM, "restoring"));
			j->out = nb;
			j->outcap = j->lsize;
		}
		src = j->out;
	}
	if ((r = store_block_verify(j->c, j->payload.data, j->payload.len, j->lsize, j->hash,
				    j->out, j->c.id != CODEC_OFF ? j->outcap : 0)) < 0)
		return rjob_err(j, store_block_damage(j->hash, &j->loc, r));
	if (codec_is_zero(src, j->lsize))
		return 0; /* leave a hole */
	j->bytes = j->lsize;
	if ((r = io_pwrite_full(j->fd, src, j->lsize, (off_t)j->off)) < 0)
		return rjob_err(j, r);
	return 0;
}

static int rjob_get(struct rst *r, struct rjob **out)
{
	struct rjob *j = r->free_jobs;
	if (j) {
		r->free_jobs = j->next;
	} else {
		if (!(j = calloc(1, sizeof *j)))
			return ferry_err(FERR_NOMEM, "restoring");
		fbuf_init(&j->payload, STORE_BLOCK_MAX);
	}
	j->has_data = 0;
	memset(&j->jw, 0, sizeof j->jw);
	free(j->path);
	j->path = NULL;
	*out = j;
	return 0;
}

static void rjob_put(struct rst *r, struct rjob *j)
{
	j->next = r->free_jobs;
	r->free_jobs = j;
}

static void set_attrs_fd(struct rst *r, int fd, const struct node_entry *e, int fresh);

static int rcollect(struct rst *r)
{
	void *jv;
	int res, rc = workq_collect(r->q, &jv, &res);
	if (rc <= 0)
		return rc;
	struct rjob *j = jv;
	rc = res;
	if (rc < 0 && (j->kind == RJ_DATA || j->kind == RJ_SMALL))
		r->err_named = 1; /* rjob_err named the file */
	if (j->kind == RJ_DATA || j->kind == RJ_SMALL) {
		r->st->bytes += j->bytes;
		if (r->o->progress)
			r->o->progress(r->o->arg, r->st);
		if (j->jw.n) {
			/* report the worker's first warning under the file's path
			 * (r->path is the walk's, elsewhere by now) */
			rwarn_path(r, j->kind == RJ_DATA ? j->fpath : j->path, j->jw.what, j->jw.err);
			r->st->warnings += j->jw.n - 1;
		}
	} else {
		if (rc == 0 && ftruncate(j->fd, (off_t)j->e.size) != 0)
			rc = ferry_err_errno(errno, "cannot set the size of a restored file");
		if (rc == 0)
			set_attrs_fd(r, j->fd, &j->e, 1);
		close(j->fd);
	}
	rjob_put(r, j);
	return rc < 0 ? rc : 1;
}

static int rsubmit(struct rst *r, struct rjob *j)
{
	int rc;
	while ((rc = workq_submit(r->q, j)) == -FERR_BUSY) {
		ferry_err_clear();
		if ((rc = rcollect(r)) < 0)
			return rc;
	}
	return rc;
}

/* Collects every job still queued, whatever their results: only then may
 * an fd they use be closed (a write to a closed fd fails, one to a reused
 * fd number lands in another file). Returns the first error, with its
 * message. */
static int rdrain(struct rst *r)
{
	char msg[1024];
	int rc, first = 0;
	while ((rc = rcollect(r)) != 0)
		if (rc < 0 && !first) {
			first = rc;
			snprintf(msg, sizeof msg, "%s", ferry_errmsg(rc));
		}
	return first ? ferry_err(-first, "%s", msg) : 0;
}

struct pctx {
	struct rst *r;
	int fd;
	const char *path;   /* the file's, owned by its RJ_END job */
};

static int queue_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct pctx *pc = arg;
	struct rst *r = pc->r;
	struct rjob *j = NULL;
	uint32_t ls;
	int rc;
	if (x->hole)
		return 0;
	if ((rc = rjob_get(r, &j)) < 0)
		return rc;
	rc = store_block_read_stored(r->rd, x->hash, (struct codec_spec){CODEC_OFF, 0}, &j->c, &ls,
				     &j->payload);
	if (rc == 0 && ls != x->len)
		rc = ferry_err(FERR_CORRUPT, "block is %u bytes, expected %llu", ls,
			       (unsigned long long)x->len);
	if (rc < 0) {
		rjob_put(r, j);
		return rc;
	}
	store_reader_last_loc(r->rd, &j->loc);
	j->kind = RJ_DATA;
	j->fpath = pc->path;
	j->fd = pc->fd;
	j->off = off;
	j->lsize = ls;
	memcpy(j->hash, x->hash, FERRY_HASH_LEN);
	if ((rc = rsubmit(r, j)) < 0)
		rjob_put(r, j);
	return rc;
}

/* Closes fd, which queued jobs may still write to, once none can: after a
 * failure to queue the rest of its file. Returns rc. */
static int close_queued(struct rst *r, int fd, int rc)
{
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(rc));
	(void)rdrain(r); /* rc, the first failure, is the one to report */
	close(fd);
	return ferry_err(-rc, "%s", msg);
}

/* Queues the data of e into fd; the END job, collected after every data
 * job of the file, closes it (on errors here, fd is closed once no job
 * can use it any more). */
static int queue_file(struct rst *r, int fd, const struct node_entry *e)
{
	struct rjob *j = NULL;
	int rc;
	/* the end job first: it owns the path its data jobs name in errors */
	if ((rc = rjob_get(r, &j)) < 0)
		return close_queued(r, fd, rc);
	j->kind = RJ_END;
	j->fd = fd;
	j->e = *e;
	if (!(j->path = malloc(r->path.len + 1))) {
		rjob_put(r, j);
		return close_queued(r, fd, ferry_err(FERR_NOMEM, "restoring"));
	}
	memcpy(j->path, r->path.data, r->path.len);
	j->path[r->path.len] = 0;
	struct pctx pc = {r, fd, j->path};
	if (e->size && e->child_type &&
	    (rc = node_bl_walk(rd_node, r->rd, e->child_type, e->child, e->size, queue_extent,
			       &pc)) < 0) {
		rjob_put(r, j);
		return close_queued(r, fd, rc);
	}
	if ((rc = rsubmit(r, j)) < 0) {
		/* not queued: the data jobs before it still write to fd */
		rjob_put(r, j);
		return close_queued(r, fd, rc);
	}
	return 0;
}

struct first_ext {
	int n;
	struct node_extent x;
};

static int first_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct first_ext *f = arg;
	if (f->n++)
		return 1; /* more than one: not a small file */
	f->x = *x;
	return 0;
}

/* Queues a file of at most one extent as one job that creates it on a
 * worker. Returns 1 (nothing queued) for bigger files. */
static int queue_small(struct rst *r, int dirfd, const char *name, const struct node_entry *e)
{
	struct first_ext fe;
	struct rjob *j = NULL;
	uint32_t ls;
	int rc;
	memset(&fe, 0, sizeof fe);
	if (e->size && e->child_type) {
		rc = node_bl_walk(rd_node, r->rd, e->child_type, e->child, e->size, first_extent, &fe);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return rc;
	}
	if ((rc = rjob_get(r, &j)) < 0)
		return rc;
	if (fe.n && !fe.x.hole) {
		rc = store_block_read_stored(r->rd, fe.x.hash, (struct codec_spec){CODEC_OFF, 0}, &j->c,
					     &ls, &j->payload);
		if (rc == 0 && ls != fe.x.len)
			rc = ferry_err(FERR_CORRUPT, "block is %u bytes, expected %llu", ls,
				       (unsigned long long)fe.x.len);
		if (rc < 0) {
			rjob_put(r, j);
			return rc;
		}
		store_reader_last_loc(r->rd, &j->loc);
		j->has_data = 1;
		j->lsize = ls;
		j->off = 0;
		memcpy(j->hash, fe.x.hash, FERRY_HASH_LEN);
	}
	j->kind = RJ_SMALL;
	j->dirfd = dirfd;
	snprintf(j->name, sizeof j->name, "%s", name);
	j->e = *e;
	if (fbuf_putc(&r->path, 0) == 0)
		r->path.len--;
	if (!(j->path = strdup((const char *)r->path.data))) {
		rjob_put(r, j);
		return ferry_err(FERR_NOMEM, "restoring");
	}
	if ((rc = rsubmit(r, j)) < 0)
		rjob_put(r, j);
	return rc;
}

/* ---- the tree -------------------------------------------------------------------- */

/* Makes room for a new entry name in dirfd when --force: removes what is
 * there unless it is a directory (which is reused, or refused). */
static int clear_name(struct rst *r, int dirfd, const char *name, int want_dir)
{
	struct stat sb;
	if (!r->o->force)
		return 0; /* a new tree in an empty directory: creation (O_EXCL) says if not */
	if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot stat");
	if (!r->o->force)
		return ferry_err(FERR_EXISTS, "already exists");
	if (S_ISDIR(sb.st_mode)) {
		if (want_dir)
			return 1;
		return ferry_err(FERR_EXISTS, "a directory is in the way");
	}
	if (unlinkat(dirfd, name, 0) != 0)
		return ferry_err_errno(errno, "cannot replace");
	return 0;
}

static const char *rlink_find(struct rst *r, uint64_t id)
{
	for (size_t i = 0; i < r->nlinks; i++)
		if (r->links[i].id == id)
			return r->links[i].path;
	return NULL;
}

static int rlink_add(struct rst *r, uint64_t id)
{
	if (r->nlinks == r->caplinks) {
		size_t nc = r->caplinks ? r->caplinks * 2 : 64;
		struct rlink *nl = realloc(r->links, nc * sizeof *nl);
		if (!nl)
			return ferry_err(FERR_NOMEM, "restoring hardlinks");
		r->links = nl;
		r->caplinks = nc;
	}
	char *s = malloc(r->path.len + 1);
	if (!s)
		return ferry_err(FERR_NOMEM, "restoring hardlinks");
	memcpy(s, r->path.data, r->path.len);
	s[r->path.len] = 0;
	r->links[r->nlinks].id = id;
	r->links[r->nlinks].path = s;
	r->nlinks++;
	return 0;
}

/* linkat(rootfd, first, dirfd, name) for a first path of any length: a
 * path longer than the kernel takes is walked one directory at a time
 * (O_NOFOLLOW: only directories this restore made). -1 with errno. */
static int link_first(int rootfd, const char *first, int dirfd, const char *name)
{
	size_t len = strlen(first);
	if (len < PATH_MAX)
		return linkat(rootfd, first, dirfd, name, 0);
	int cur = rootfd, owned = -1, rc;
	const char *s = first;
	for (;;) {
		const char *slash = strchr(s, '/');
		if (!slash)
			break;
		char comp[NODE_NAME_MAX + 1];
		size_t n = (size_t)(slash - s);
		if (n > NODE_NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, s, n);
		comp[n] = 0;
		int fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			goto fail;
		if (owned >= 0)
			close(owned);
		owned = cur = fd;
		s = slash + 1;
	}
	rc = linkat(cur, s, dirfd, name, 0);
	if (owned >= 0) {
		int e = errno;
		close(owned);
		errno = e;
	}
	return rc;
fail:
	if (owned >= 0) {
		int e = errno;
		close(owned);
		errno = e;
	}
	return -1;
}

/* Restores non-directory entry e (selected as sel says) into dirfd. */
static int restore_entry(struct rst *r, int dirfd, const struct node_entry *e, int sel)
{
	char name[NODE_NAME_MAX + 1];
	int rc, fd = -1;
	memcpy(name, e->name, e->name_len);
	name[e->name_len] = 0;
	if (sel == 2)
		return 0;
	switch (e->ftype) {
	case NODE_F_REG: {
		const char *first = e->link_id ? rlink_find(r, e->link_id) : NULL;
		if ((rc = clear_name(r, dirfd, name, 0)) < 0)
			return rc;
		if (first) {
			if (link_first(r->rootfd, first, dirfd, name) == 0) {
				r->st->hardlinks++;
				return 0;
			}
			rwarn(r, "cannot link; restored as a copy", errno);
		}
		if (!e->link_id) {
			rc = queue_small(r, dirfd, name, e);
			if (rc < 0)
				return rc;
			if (rc == 0) {
				r->st->files++;
				return 0;
			}
		}
		fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return ferry_err_errno(errno, "cannot create file");
		if ((rc = queue_file(r, fd, e)) < 0)
			return rc;
		r->st->files++;
		if (e->link_id && !first)
			return rlink_add(r, e->link_id);
		return 0;
	}
	case NODE_F_SYMLINK: {
		char target[NODE_TARGET_MAX + 1];
		memcpy(target, e->target, e->target_len);
		target[e->target_len] = 0;
		if ((rc = clear_name(r, dirfd, name, 0)) < 0)
			return rc;
		if (symlinkat(target, dirfd, name) != 0)
			return ferry_err_errno(errno, "cannot create symlink");
		set_attrs_at(r, dirfd, name, e);
		r->st->symlinks++;
		return 0;
	}
	default: {
		mode_t t = e->ftype == NODE_F_FIFO ? S_IFIFO : e->ftype == NODE_F_CHR ? S_IFCHR : S_IFBLK;
		if ((r->o->untrusted & RESTORE_NO_DEVICES) && t != S_IFIFO) {
			rwarn_msg(r, "device node not restored (--no-devices)");
			return 0;
		}
		if ((rc = clear_name(r, dirfd, name, 0)) < 0)
			return rc;
		if (mknodat(dirfd, name, t | 0600, makedev(e->rdev_major, e->rdev_minor)) != 0) {
			rwarn(r, "cannot create special file", errno);
			return 0;
		}
		set_attrs_at(r, dirfd, name, e);
		r->st->specials++;
		return 0;
	}
	}
}

/* ---- the walk --------------------------------------------------------------------
 * Iterative, so a tree of any depth costs heap, not stack: one frame per
 * directory being restored (its loaded entries), and its fd on r->dirs,
 * which keeps only the deepest few open. A directory's attributes are set
 * once everything in it is done, as its mtime and mode must be last. */

/* Directory fds kept open besides the target's. */
#define RESTORE_OPEN_DIRS 16

struct rframe {
	struct node_dir d;
	size_t i;                   /* the next entry */
	const struct node_entry *e; /* the directory's own entry (in the parent's d) */
	size_t path_len;
};

/* Before the walk closes a directory fd: a queued small file may still be
 * created in it. */
static int drain_cb(void *arg)
{
	return rdrain(arg);
}

/* Enters directory e (its fd opened in the current top, which the stack
 * takes): loads its entries into a new frame. */
static int frame_push(struct rst *r, int fd, const struct node_entry *e)
{
	char name[NODE_NAME_MAX + 1];
	struct rframe *f;
	int rc;
	memcpy(name, e->name, e->name_len);
	name[e->name_len] = 0;
	if ((rc = VEC_GROW(r->frames, r->capframes, r->nframes, 64, "restoring a tree")) < 0) {
		close(fd);
		return rc;
	}
	f = &r->frames[r->nframes++];
	memset(f, 0, sizeof *f);
	f->e = e;
	f->path_len = r->path.len;
	if ((rc = dirstack_push(&r->dirs, fd, r->nframes > 1 ? name : NULL)) < 0)
		return rc;
	return node_dir_load(rd_node, r->rd, e->child_type, e->child, &f->d);
}

static int path_err(struct rst *r, int rc);

/* Leaves the top directory once all it holds is done: its attributes are
 * set, and the walk goes back to its parent. */
static int frame_pop(struct rst *r)
{
	struct rframe *f = &r->frames[r->nframes - 1];
	r->path.len = f->path_len;
	/* queued files borrow their attributes from f->d: finish them first */
	int rc = rdrain(r);
	if (rc == 0 && r->nframes > 1) {
		/* the parent first: ".." may not be searchable once the
		 * directory has its own mode */
		if ((rc = dirstack_open_parent(&r->dirs)) == 0)
			set_attrs_fd(r, dirstack_fd(&r->dirs), f->e, 1);
	}
	if (rc < 0)
		return r->path.len ? path_err(r, rc) : rc; /* the frame is freed with the rest */
	node_dir_release(&f->d);
	r->nframes--;
	dirstack_pop(&r->dirs);
	if (r->nframes)
		r->path.len = r->frames[r->nframes - 1].path_len;
	return 0;
}

/* Enters directory entry e of the top directory (the path names it). */
static int enter_dir(struct rst *r, const struct node_entry *e)
{
	char name[NODE_NAME_MAX + 1];
	int rc, dirfd = dirstack_fd(&r->dirs);
	memcpy(name, e->name, e->name_len);
	name[e->name_len] = 0;
	if ((rc = clear_name(r, dirfd, name, 1)) < 0)
		return rc;
	if (rc == 0 && mkdirat(dirfd, name, 0700) != 0)
		return ferry_err_errno(errno, "cannot create directory");
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ferry_err_errno(errno, "cannot open directory");
	r->st->dirs++;
	return frame_push(r, fd, e);
}

/* "restoring 'PATH': what failed", the path shortened when very long. */
static int path_err(struct rst *r, int rc)
{
	char shown[400]; /* the reason must fit in a detail message too */
	if (r->err_named) {
		/* a worker's error, about its own file (the walk is elsewhere) */
		r->err_named = 0;
		return rc;
	}
	shown_path(r, shown, sizeof shown);
	return ferry_err(-rc, "restoring '%s': %s", shown, ferry_errmsg(rc));
}

/* Restores the tree of root into rootfd (the stack takes it). */
static int walk(struct rst *r, int rootfd, const struct node_entry *root)
{
	int rc;
	if ((rc = frame_push(r, rootfd, root)) < 0)
		return rc;
	while (r->nframes) {
		struct rframe *f = &r->frames[r->nframes - 1];
		if (f->i == f->d.n) {
			if ((rc = frame_pop(r)) < 0)
				return rc;
			continue;
		}
		const struct node_entry *e = &f->d.ents[f->i++];
		r->path.len = f->path_len;
		if ((r->path.len && (rc = fbuf_putc(&r->path, '/')) < 0) ||
		    (rc = fbuf_append(&r->path, e->name, e->name_len)) < 0)
			return rc;
		/* only a corrupt pool (capture and recv keep to the limit)
		 * holds anything deeper: refused, not walked */
		if (r->nframes - 1 > NODE_TREE_DEPTH_MAX)
			return path_err(r, ferry_err(FERR_CORRUPT, "the snapshot's tree is deeper "
						     "than %d directory levels",
						     NODE_TREE_DEPTH_MAX));
		int sel = selected(r);
		if (!sel)
			continue;
		if (e->ftype == NODE_F_DIR)
			rc = enter_dir(r, e);
		else
			rc = restore_entry(r, dirstack_fd(&r->dirs), e, sel);
		if (rc < 0)
			return path_err(r, rc);
	}
	return 0;
}

static int dir_empty(int fd, int *empty)
{
	int dfd = dup(fd);
	if (dfd < 0)
		return ferry_err_errno(errno, "cannot read target directory");
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return ferry_err_errno(errno, "cannot read target directory");
	}
	struct dirent *de;
	*empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			*empty = 0;
			break;
		}
	closedir(d);
	return 0;
}

static int restore_volume(struct rst *r, const char *path, const struct node_entry *e)
{
	struct stat sb;
	int fd, rc, blk = 0;
	if (stat(path, &sb) == 0) {
		blk = S_ISBLK(sb.st_mode);
		/* a block device always exists: overwriting it is as deliberate
		 * as overwriting an image */
		if (!r->o->force)
			return ferry_err(FERR_EXISTS, "'%s' exists%s (use --force to overwrite)", path,
					 blk ? " and is a block device" : "");
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (blk ? 0 : O_TRUNC), 0600);
	if (fd < 0)
		return ferry_err_errno(errno, "cannot open '%s'", path);
	uint64_t devsize = 0;
	if (blk && ioctl(fd, BLKGETSIZE64, &devsize) != 0) {
		rc = ferry_err_errno(errno, "cannot read the size of block device '%s'", path);
		close(fd);
		return rc;
	}
	if (blk && devsize < e->size) {
		/* refused before a byte is written, not at the first short write */
		rc = ferry_err(FERR_INVAL, "block device '%s' holds %llu bytes; the volume needs %llu",
			       path, (unsigned long long)devsize, (unsigned long long)e->size);
		close(fd);
		return rc;
	}
	rc = write_data(r, fd, e, blk);
	if (rc == 0 && !blk)
		set_attrs_fd(r, fd, e, 0);
	if (rc == 0 && fsync(fd) != 0)
		rc = ferry_err_errno(errno, "cannot sync '%s'", path);
	close(fd);
	r->st->files++;
	return rc;
}

static int unmake_open(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	if (type == FTW_D)
		chmod(path, 0700); /* a restored 0500 directory keeps its entries */
	return 0;
}

static int unmake_remove(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	remove(path);
	return 0;
}

/* Takes away a directory restore_snapshot made and whatever it put in
 * it, after a failure: a failed restore leaves nothing behind. Best
 * effort, the failure being what is reported; never follows a link. */
static void unmake_dir(const char *dir)
{
	(void)nftw(dir, unmake_open, 16, FTW_PHYS);
	(void)nftw(dir, unmake_remove, 16, FTW_PHYS | FTW_DEPTH);
}

int restore_snapshot(struct store_pool *p, const struct store_snap *s, const char *dir,
		  const struct restore_opts *o, struct restore_stats *st)
{
	struct rst r;
	struct fbuf rb;
	struct node_entry root;
	struct node_xattr *xa = NULL;
	int rc, t, kind, created = 0;
	memset(&r, 0, sizeof r);
	memset(st, 0, sizeof *st);
	r.p = p;
	r.o = o;
	r.st = st;
	r.rootfd = -1;
	/* --no-same-owner: as root too, what is restored is root's */
	r.owners = geteuid() == 0 && !(o->untrusted & RESTORE_NO_SAME_OWNER);
	fbuf_init(&r.path, (size_t)1 << 24);
	dirstack_init(&r.dirs, RESTORE_OPEN_DIRS, 1);
	r.dirs.before_close = drain_cb;
	r.dirs.arg = &r;
	fbuf_init(&rb, NODE_MAX);
	if (o->nfiles && !(r.found = calloc(o->nfiles, sizeof *r.found))) {
		rc = ferry_err(FERR_NOMEM, "restoring");
		goto out;
	}
	if ((rc = store_read_begin(p)) < 0 || (rc = store_reader_new(p, &r.rd)) < 0)
		goto out;
	if ((rc = store_node_read(r.rd, s->root, &t, &rb)) < 0)
		goto out;
	if (t != NODE_EXT) {
		rc = ferry_err(FERR_CORRUPT, "snapshot root is a node of type %d", t);
		goto out;
	}
	if ((rc = node_root_decode(rb.data, rb.len, &kind, &root, &xa)) < 0)
		goto out;
	if (o->format) {
		rc = restore_archive(p, r.rd, &root, kind, o, st);
		goto out;
	}
	if (kind == NODE_ROOT_VOLUME) {
		rc = restore_volume(&r, dir, &root);
		goto out;
	}
	if (mkdir(dir, 0700) == 0)
		created = 1;
	else if (errno != EEXIST) {
		rc = ferry_err_errno(errno, "cannot create '%s'", dir);
		goto out;
	}
	r.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.rootfd < 0) {
		rc = ferry_err_errno(errno, "cannot open '%s'", dir);
		goto out;
	}
	if (!created && !o->force) {
		int empty = 0;
		if ((rc = dir_empty(r.rootfd, &empty)) < 0)
			goto out;
		if (!empty) {
			rc = ferry_err(FERR_NOTEMPTY, "'%s' is not empty (use --force)", dir);
			goto out;
		}
	}
	{
		/* new inodes below a directory that is neither setgid nor of
		 * another group (grpid mounts give its group) get euid/egid */
		struct stat rsb;
		r.euid = geteuid();
		r.egid = getegid();
		r.fresh_owner = !o->force && fstat(r.rootfd, &rsb) == 0 &&
				!(rsb.st_mode & S_ISGID) && rsb.st_gid == r.egid;
	}
	if ((rc = workq_new(&r.q, 0, 32, rjob_fn, &r)) < 0)
		goto out;
	{
		int wfd = dup(r.rootfd); /* the walk's own: its stack closes it */
		if (wfd < 0) {
			rc = ferry_err_errno(errno, "cannot open '%s'", dir);
			goto out;
		}
		if ((rc = walk(&r, wfd, &root)) < 0)
			goto out;
	}
	for (size_t i = 0; i < o->nfiles; i++)
		if (!r.found[i]) {
			rc = ferry_err(FERR_NOENT, "'%s' is not in snapshot '%s'", o->files[i], s->name);
			goto out;
		}
	if (!o->nfiles)
		set_attrs_fd(&r, r.rootfd, &root, 0);
	if (r.partial)
		rc = ferry_err(FERR_PARTIAL, "restored with %llu warnings",
			       (unsigned long long)st->warnings);
out:
	if (r.q) {
		void *jv;
		int res;
		while (workq_collect(r.q, &jv, &res) > 0) {
			struct rjob *j = jv;
			if (j->kind == RJ_END)
				close(j->fd);
			rjob_put(&r, j);
		}
		workq_free(r.q);
	}
	/* no job runs any more: the directories they used may close */
	for (size_t i = 0; i < r.nframes; i++)
		node_dir_release(&r.frames[i].d);
	free(r.frames);
	dirstack_release(&r.dirs);
	while (r.free_jobs) {
		struct rjob *j = r.free_jobs;
		r.free_jobs = j->next;
		fbuf_release(&j->payload);
		free(j->out);
		free(j->path);
		free(j);
	}
	if (r.rootfd >= 0)
		close(r.rootfd);
	for (size_t i = 0; i < r.nlinks; i++)
		free(r.links[i].path);
	free(r.links);
	free(r.found);
	free(r.buf);
	free(xa);
	fbuf_release(&rb);
	fbuf_release(&r.path);
	store_reader_free(r.rd);
	store_read_end(p);
	if (created && rc < 0 && rc != -FERR_PARTIAL)
		unmake_dir(dir);
	return rc;
}
