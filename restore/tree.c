/* restore/tree.c — the tree: each entry created by type beneath a
 * directory fd this restore opened (--force clears what is in the way),
 * hardlinks linked to their first path, and the walk over the snapshot's
 * directories, iterative, a directory's attributes set once everything in
 * it is done. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

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
	int rc;
	if ((rc = VEC_GROW(r->links, r->caplinks, r->nlinks, 64, "restoring hardlinks")) < 0)
		return rc;
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
			rst_warn(r, "cannot link; restored as a copy", errno);
		}
		if (!e->link_id) {
			rc = rst_queue_small(r, dirfd, name, e);
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
		if ((rc = rst_queue_file(r, fd, e)) < 0)
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
		rst_set_attrs_at(r, dirfd, name, e);
		r->st->symlinks++;
		return 0;
	}
	default: {
		mode_t t = e->ftype == NODE_F_FIFO ? S_IFIFO : e->ftype == NODE_F_CHR ? S_IFCHR : S_IFBLK;
		if ((r->o->untrusted & RESTORE_NO_DEVICES) && t != S_IFIFO) {
			rst_warn_msg(r, "device node not restored (--no-devices)");
			return 0;
		}
		if ((rc = clear_name(r, dirfd, name, 0)) < 0)
			return rc;
		if (mknodat(dirfd, name, t | 0600, makedev(e->rdev_major, e->rdev_minor)) != 0) {
			rst_warn(r, "cannot create special file", errno);
			return 0;
		}
		rst_set_attrs_at(r, dirfd, name, e);
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

/* Before the walk closes a directory fd: a queued small file may still be
 * created in it. */
int rst_drain_cb(void *arg)
{
	return rst_drain(arg);
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
	return node_dir_load(rst_rd_node, r->rd, e->child_type, e->child, &f->d);
}

static int path_err(struct rst *r, int rc);

/* Leaves the top directory once all it holds is done: its attributes are
 * set, and the walk goes back to its parent. */
static int frame_pop(struct rst *r)
{
	struct rframe *f = &r->frames[r->nframes - 1];
	r->path.len = f->path_len;
	/* queued files borrow their attributes from f->d: finish them first */
	int rc = rst_drain(r);
	if (rc == 0 && r->nframes > 1) {
		/* the parent first: ".." may not be searchable once the
		 * directory has its own mode */
		if ((rc = dirstack_open_parent(&r->dirs)) == 0)
			rst_set_attrs_fd(r, dirstack_fd(&r->dirs), f->e, 1);
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
	rst_shown_path(r, shown, sizeof shown);
	return ferry_err(-rc, "restoring '%s': %s", shown, ferry_errmsg(rc));
}

/* Restores the tree of root into rootfd (the stack takes it). */
int rst_walk(struct rst *r, int rootfd, const struct node_entry *root)
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
		int sel = rst_selected(r);
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

