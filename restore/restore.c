/* restore/restore.c — rebuilding a snapshot's tree (or volume image) on disk.
 *
 * Every name comes from a node the decoder checked (no '/', NUL, "." or
 * ".."), and every file is created with openat/mkdirat/symlinkat relative to
 * a directory fd this restore opened with O_NOFOLLOW, so nothing is written
 * outside the target whatever the snapshot holds. Directory attributes
 * (mode, mtime) are set after their children; owners only when running as
 * root (and not told otherwise: the RESTORE_NO_* options shape what
 * an untrusted snapshot can make); holes and all-zero blocks are skipped so
 * sparse files stay sparse.
 *
 * This file is the entry point (which picks the tree, tree.c; the volume,
 * volume.c; or an archive, archive.c), warnings and --file; attrs.c sets
 * attributes, data.c writes file data through the worker pipeline. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int rst_rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
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

void rst_shown_path(struct rst *r, char *out, size_t max)
{
	shorten((const char *)r->path.data, r->path.len, out, max);
}

#define WARN_PATH_MAX 4096

/* A warning about path (NULL: the walk's current path). */
void rst_warn_path(struct rst *r, const char *path, const char *what, int e)
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
			rst_shown_path(r, shown, sizeof shown);
		r->o->warn(r->o->arg, shown, msg);
	}
}

void rst_warn(struct rst *r, const char *what, int e)
{
	rst_warn_path(r, NULL, what, e);
}

/* A warning with no errno about the walk's current path. */
void rst_warn_msg(struct rst *r, const char *msg)
{
	r->st->warnings++;
	r->partial = 1;
	if (r->o->warn) {
		char shown[WARN_PATH_MAX];
		rst_shown_path(r, shown, sizeof shown);
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

int rst_selected(struct rst *r)
{
	return restore_selected(r->o->files, r->o->nfiles, (const char *)r->path.data,
				r->path.len, r->found);
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


/* Restores the tree under root (of snapshot s) into the directory dir:
 * created, or empty unless --force. */
static int restore_tree(struct rst *r, const struct store_snap *s, const char *dir,
			const struct node_entry *root)
{
	const struct restore_opts *o = r->o;
	int rc, created = 0;
	if (mkdir(dir, 0700) == 0)
		created = r->made_dir = 1;
	else if (errno != EEXIST)
		return ferry_err_errno(errno, "cannot create '%s'", dir);
	r->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->rootfd < 0)
		return ferry_err_errno(errno, "cannot open '%s'", dir);
	if (!created && !o->force) {
		int empty = 0;
		if ((rc = dir_empty(r->rootfd, &empty)) < 0)
			return rc;
		if (!empty)
			return ferry_err(FERR_NOTEMPTY, "'%s' is not empty (use --force)", dir);
	}
	/* new inodes below a directory that is neither setgid nor of another
	 * group (grpid mounts give its group) get euid/egid */
	struct stat rsb;
	r->euid = geteuid();
	r->egid = getegid();
	r->fresh_owner = !o->force && fstat(r->rootfd, &rsb) == 0 && !(rsb.st_mode & S_ISGID) &&
			 rsb.st_gid == r->egid;
	/* 32 jobs in flight, and the one being filled */
	if ((rc = pipeline_new(&r->pl, pipeline_threads(0), 33, sizeof(struct rjob), &rst_job_ops,
			       r)) < 0)
		return rc;
	int wfd = dup(r->rootfd); /* the walk's own: its stack closes it */
	if (wfd < 0)
		return ferry_err_errno(errno, "cannot open '%s'", dir);
	if ((rc = rst_walk(r, wfd, root)) < 0)
		return rc;
	for (size_t i = 0; i < o->nfiles; i++)
		if (!r->found[i])
			return ferry_err(FERR_NOENT, "'%s' is not in snapshot '%s'", o->files[i],
					 s->name);
	if (!o->nfiles)
		rst_set_attrs_fd(r, r->rootfd, root, 0);
	return 0;
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

/* Takes away a directory restore_tree made and whatever it put in it,
 * after a failure: a failed restore leaves nothing behind. Best effort,
 * the failure being what is reported; never follows a link. */
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
	int rc, t, kind;
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
	r.dirs.before_close = rst_drain_cb;
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
		rc = rst_volume(&r, dir, &root);
		goto out;
	}
	if ((rc = restore_tree(&r, s, dir, &root)) < 0)
		goto out;
	if (r.partial)
		rc = ferry_err(FERR_PARTIAL, "restored with %llu warnings",
			       (unsigned long long)st->warnings);
out:
	/* END jobs still in flight close their files */
	pipeline_free(r.pl);
	/* no job runs any more: the directories they used may close */
	for (size_t i = 0; i < r.nframes; i++)
		node_dir_release(&r.frames[i].d);
	free(r.frames);
	dirstack_release(&r.dirs);
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
	if (r.made_dir && rc < 0 && rc != -FERR_PARTIAL)
		unmake_dir(dir);
	return rc;
}
