/* capture/walk.c — the walk of a tree capture: directories listed and
 * sorted, each entry stat'ed and captured by type (regular files by
 * file.c), mount points and directories past NODE_TREE_DEPTH_MAX recorded
 * empty, and each directory's node queued behind its files' blocks. */
#include <dirent.h>
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

static const struct node_entry *old_find(const struct node_dir *old, const char *name)
{
	return node_dir_find(old, (const uint8_t *)name, strlen(name));
}

struct dname {
	char *name;
	unsigned char type;
};

static int dname_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dname *)a)->name, ((const struct dname *)b)->name);
}

/* The entries of dirfd, sorted by name, into *names and (types not NULL)
 * their readdir d_type into *types. */
static int list_dir(int dirfd, char ***names, unsigned char **types, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ferry_err_errno(errno, "cannot read directory");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return ferry_err_errno(errno, "cannot read directory");
	}
	struct dname *v = NULL;
	char **nv = NULL;
	unsigned char *tv = NULL;
	size_t cnt = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((r = VEC_GROW(v, cap, cnt, 64, "listing a directory")) < 0)
			goto out;
		if (!(v[cnt].name = strdup(de->d_name))) {
			r = ferry_err(FERR_NOMEM, "listing a directory");
			goto out;
		}
		v[cnt].type = de->d_type;
		cnt++;
		errno = 0;
	}
	if (errno) {
		r = ferry_err_errno(errno, "cannot read directory");
		goto out;
	}
	if (cnt) {
		qsort(v, cnt, sizeof *v, dname_cmp);
		/* a deep walk holds one listing per level: no growth slack */
		if (!(nv = malloc(cnt * sizeof *nv)) || (types && !(tv = malloc(cnt)))) {
			r = ferry_err(FERR_NOMEM, "listing a directory");
			goto out;
		}
		for (size_t i = 0; i < cnt; i++) {
			nv[i] = v[i].name;
			if (tv)
				tv[i] = v[i].type;
		}
	}
out:
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < cnt; i++)
			free(v[i].name);
		free(nv);
		free(tv);
		cnt = 0;
		nv = NULL;
		tv = NULL;
	}
	free(v);
	if (r < 0)
		return r;
	*names = nv;
	if (types)
		*types = tv;
	*n = cnt;
	return 0;
}

/* Records ce as an empty directory: a mount point (as tar --one-file-system
 * does) or a directory deeper than NODE_TREE_DEPTH_MAX. */
static int empty_dir(struct cap *c, struct centry *ce)
{
	struct node_dir_builder b;
	int t, r;
	node_dir_builder_init(&b, cap_put_node, c);
	r = node_dir_builder_finish(&b, &t, ce->e.child);
	node_dir_builder_release(&b);
	ce->e.child_type = (uint8_t)t;
	return r;
}

/* A directory ce (at level, the root's entries being level 1) deeper than
 * the limit: recorded empty, with a warning when it was not. */
static int too_deep(struct cap *c, int dirfd, const char *name, struct centry *ce)
{
	char **names = NULL;
	size_t n = 0;
	int r, fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if ((r = cap_read_xattrs(c, fd, NULL, ce)) < 0) {
			close(fd);
			return r;
		}
		if (list_dir(fd, &names, NULL, &n) < 0) {
			ferry_err_clear();
			n = 1; /* unreadable: it may hold anything */
			names = NULL;
		}
		close(fd);
	} else {
		n = 1;
	}
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	if (n) {
		char msg[160];
		snprintf(msg, sizeof msg, "directory deeper than %d levels; recorded empty",
			 NODE_TREE_DEPTH_MAX);
		cap_warn(c, msg, 1);
	}
	return empty_dir(c, ce);
}

/* The directory name of dirfd (sb its lstat, oe its previous version or
 * NULL) as capture_entry captures it. */
static int entry_dir(struct cap *c, int dirfd, const char *name, size_t level,
		     const struct stat *sb, const struct node_entry *oe, struct centry *ce,
		     int *subfd, struct node_dir *od, int *have_od)
{
	int r;
	cap_entry_from_stat(&ce->e, sb);
	ce->e.ftype = NODE_F_DIR;
	c->st->dirs++;
	if (sb->st_dev != c->dev && !c->o->cross_fs)
		return empty_dir(c, ce); /* a mount point */
	if (level > NODE_TREE_DEPTH_MAX)
		return too_deep(c, dirfd, name, ce);
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		char msg[160];
		snprintf(msg, sizeof msg, "cannot open directory: %s; skipped", strerror(errno));
		cap_warn(c, msg, errno != ENOENT);
		return 1;
	}
	*have_od = 0;
	if (oe && oe->ftype == NODE_F_DIR) {
		if ((r = node_dir_load(cap_rd_node, c->rd, oe->child_type, oe->child, od)) < 0) {
			close(fd);
			return r;
		}
		*have_od = 1;
		ce->have_old_child = 1;
		ce->old_child_type = oe->child_type;
		memcpy(ce->old_child, oe->child, FERRY_HASH_LEN);
	}
	if ((r = cap_read_xattrs(c, fd, NULL, ce)) < 0) {
		node_dir_release(od);
		*have_od = 0;
		close(fd);
		return r;
	}
	*subfd = fd;
	return 2;
}

/* The symlink name of dirfd (pp: its /proc path for the xattrs, sb its
 * lstat). Returns 1 when it is skipped (warned). */
static int entry_symlink(struct cap *c, int dirfd, const char *name, const char *pp,
			 const struct stat *sb, struct centry *ce)
{
	char buf[NODE_TARGET_MAX + 2];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof buf);
	if (n <= 0 || n > NODE_TARGET_MAX) {
		cap_warn(c, n < 0 && errno == ENOENT ? "vanished while being read; skipped"
						     : "cannot read symlink; skipped",
			 !(n < 0 && errno == ENOENT));
		return 1;
	}
	cap_entry_from_stat(&ce->e, sb);
	ce->e.ftype = NODE_F_SYMLINK;
	if (!(ce->target = malloc((size_t)n)))
		return ferry_err(FERR_NOMEM, "capturing");
	memcpy(ce->target, buf, (size_t)n);
	ce->e.target = ce->target;
	ce->e.target_len = (size_t)n;
	c->st->symlinks++;
	return cap_read_xattrs(c, -1, pp, ce);
}

/* Captures entry name of dirfd, at level (the root's entries are level 1),
 * into ce; sb is its lstat, or err the errno of that lstat. Returns 1 to
 * skip it, 2 for a directory to descend into: *subfd is then its fd and
 * *od its previous version (*have_od says if there is one), both the
 * caller's. */
static int capture_entry(struct cap *c, int dirfd, const char *name, size_t level,
			 const struct stat *sb, int err, const struct node_dir *old,
			 struct centry *ce, int *subfd, struct node_dir *od, int *have_od)
{
	char pp[64 + NAME_MAX];
	if (err) {
		if (err == ENOENT) {
			cap_warn(c, "vanished while being read; skipped", 0);
			return 1;
		}
		char msg[160];
		snprintf(msg, sizeof msg, "cannot stat: %s; skipped", strerror(err));
		cap_warn(c, msg, 1);
		return 1;
	}
	if (strlen(name) > NODE_NAME_MAX) {
		cap_warn(c, "name too long; skipped", 1);
		return 1;
	}
	if (!(ce->name = strdup(name)))
		return ferry_err(FERR_NOMEM, "capturing");
	ce->e.name = (const uint8_t *)ce->name;
	ce->e.name_len = strlen(name);
	const struct node_entry *oe = old_find(old, name);
	switch (sb->st_mode & S_IFMT) {
	case S_IFREG:
		return cap_file(c, dirfd, name, sb, oe, ce);
	case S_IFDIR:
		return entry_dir(c, dirfd, name, level, sb, oe, ce, subfd, od, have_od);
	case S_IFLNK:
		snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
		return entry_symlink(c, dirfd, name, pp, sb, ce);
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
		cap_entry_from_stat(&ce->e, sb);
		ce->e.ftype = S_ISFIFO(sb->st_mode) ? NODE_F_FIFO
			      : S_ISCHR(sb->st_mode) ? NODE_F_CHR : NODE_F_BLK;
		if (!S_ISFIFO(sb->st_mode)) {
			ce->e.rdev_major = major(sb->st_rdev);
			ce->e.rdev_minor = minor(sb->st_rdev);
		}
		c->st->specials++;
		snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
		return cap_read_xattrs(c, -1, pp, ce);
	case S_IFSOCK:
		cap_warn(c, "socket ignored", 0);
		return 1;
	default:
		cap_warn(c, "unknown file type; skipped", 1);
		return 1;
	}
}

void cap_cdir_free(struct cap *c, struct cdir *d)
{
	if (d->queued)
		c->queued_ents -= d->n;
	for (size_t i = 0; i < d->n; i++)
		cap_centry_release(&d->ents[i]);
	free(d->ents);
	if (d->prev)
		d->prev->next = d->next;
	else
		c->pending = d->next;
	if (d->next)
		d->next->prev = d->prev;
	free(d);
}

/* 1 when d's node is its previous version's: every entry matched that
 * version's when the walk left d (d->same), and each subdirectory's node
 * came out as its previous one. */
static int dir_unchanged(const struct cdir *d)
{
	if (!d->same)
		return 0;
	for (size_t i = 0; i < d->n; i++) {
		const struct centry *ce = &d->ents[i];
		if (ce->e.ftype == NODE_F_DIR &&
		    (ce->e.child_type != ce->old_child_type ||
		     memcmp(ce->e.child, ce->old_child, FERRY_HASH_LEN)))
			return 0;
	}
	return 1;
}

int cap_dir_finish(struct cap *c, struct cdir *d)
{
	struct node_dir_builder b;
	int r = 0, t;
	if (dir_unchanged(d)) {
		/* the same entries encode to the same node, which the pool has */
		*d->out_type = d->old_type;
		memcpy(d->out_hash, d->old_hash, FERRY_HASH_LEN);
		cap_cdir_free(c, d);
		return 0;
	}
	node_dir_builder_init(&b, cap_put_node, c);
	for (size_t i = 0; i < d->n && r == 0; i++) {
		struct centry *ce = &d->ents[i];
		if (ce->file) {
			ce->e.child_type = (uint8_t)ce->file->type;
			memcpy(ce->e.child, ce->file->hash, FERRY_HASH_LEN);
		}
		if (ce->e.ftype == NODE_F_REG && ce->e.size == 0)
			ce->e.child_type = 0;
		r = node_dir_builder_add(&b, &ce->e);
	}
	if (r == 0 && (r = node_dir_builder_finish(&b, &t, d->out_hash)) == 0)
		*d->out_type = (uint8_t)t;
	node_dir_builder_release(&b);
	cap_cdir_free(c, d);
	return r;
}

/* ---- stat-ahead ----------------------------------------------------------------------
 * The walk lstats a run of a directory's entries in one go, up to the
 * first entry that may be a directory (by readdir's d_type), since the
 * walk descends into it before it needs the next: no lstat is taken
 * twice or wasted. The lstats stay on this thread: handing half a run to
 * a second thread cost a wake-up and a wait per directory that the lstats
 * it took did not pay back (docs/notes/scale.md, session 16). */

int cap_stat_ahead_new(struct cap *c)
{
	c->sa_lo = c->sa_hi = 0;
	if (!(c->sa_st = malloc(CAP_STAT_AHEAD * sizeof *c->sa_st)) ||
	    !(c->sa_err = malloc(CAP_STAT_AHEAD * sizeof *c->sa_err)))
		return ferry_err(FERR_NOMEM, "capturing a tree");
	return 0;
}

void cap_stat_ahead_free(struct cap *c)
{
	free(c->sa_st);
	free(c->sa_err);
	c->sa_st = NULL;
	c->sa_err = NULL;
}

/* Makes the window hold the lstat of f's entry f->i: the run from it to
 * the next entry that may be a directory (CAP_STAT_AHEAD at most). */
static void sa_fill(struct cap *c, struct cframe *f, int dirfd)
{
	size_t lo = f->i, hi = lo;
	while (hi < f->n && hi - lo < CAP_STAT_AHEAD) {
		unsigned char t = f->types ? f->types[hi] : DT_UNKNOWN;
		hi++;
		if (t == DT_DIR || t == DT_UNKNOWN)
			break;
	}
	for (size_t i = lo; i < hi; i++)
		c->sa_err[i - lo] = fstatat(dirfd, f->names[i], &c->sa_st[i - lo],
					    AT_SYMLINK_NOFOLLOW) ? errno : 0;
	c->sa_lo = lo;
	c->sa_hi = hi;
}

/* ---- the walk ------------------------------------------------------------------------
 * Iterative, so a tree of any depth costs heap, not stack: one frame per
 * directory being scanned (its sorted names, its previous version, its
 * pending node), and its fd on c->dirs, which keeps only the deepest
 * few open. */

void cap_frame_release(struct cframe *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	free(f->types);
	f->names = NULL;
	f->types = NULL;
	f->n = f->i = 0;
	node_dir_release(&f->old);
}

/* Descends into directory fd (named name in the current top; the stack
 * takes fd), whose previous version *od (if have_od, its node old_type /
 * old_hash) the frame takes: its node lands in *out_type / out_hash once
 * its files are done. */
static int frame_push(struct cap *c, int fd, const char *name, struct node_dir *od, int have_od,
		      int old_type, const uint8_t *old_hash, uint8_t *out_type, uint8_t *out_hash)
{
	struct cframe *f;
	int r;
	if ((r = VEC_GROW(c->frames, c->capframes, c->nframes, 64, "capturing a tree")) < 0) {
		close(fd);
		if (have_od)
			node_dir_release(od);
		return r;
	}
	f = &c->frames[c->nframes++];
	memset(f, 0, sizeof *f);
	c->sa_lo = c->sa_hi = 0; /* the window is the top frame's */
	if (have_od) {
		f->old = *od;
		f->have_old = 1;
		memset(od, 0, sizeof *od);
	}
	f->path_len = c->path.len;
	if ((r = dirstack_push(&c->dirs, fd, name)) < 0)
		return r; /* the frame is released with the others */
	struct cdir *d = calloc(1, sizeof *d);
	if (!d)
		return ferry_err(FERR_NOMEM, "capturing a directory");
	d->out_type = out_type;
	d->out_hash = out_hash;
	if (have_od && old_hash) {
		d->have_old = 1;
		d->old_type = (uint8_t)old_type;
		memcpy(d->old_hash, old_hash, FERRY_HASH_LEN);
	}
	d->next = c->pending;
	if (c->pending)
		c->pending->prev = d;
	c->pending = d;
	f->d = d;
	if ((r = list_dir(dirstack_fd(&c->dirs), &f->names, &f->types, &f->n)) < 0) {
		char msg[300];
		/* only what the source refused is a warning: ferry's own want
		 * of memory would record a full directory empty */
		if (r == -FERR_NOMEM || r == -FERR_OVERFLOW)
			return r;
		snprintf(msg, sizeof msg, "%s; recorded empty", ferry_errmsg(r));
		ferry_err_clear();
		cap_warn(c, msg, 1);
		f->names = NULL;
		f->types = NULL;
		f->n = 0;
	}
	if (f->n && !(d->ents = calloc(f->n, sizeof *d->ents)))
		return ferry_err(FERR_NOMEM, "capturing a directory");
	return 0;
}

static int bytes_same(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	return an == bn && (!an || !memcmp(a, b, an));
}

/* 1 when new entry ce encodes as old entry oe does, but for a
 * directory's node (compared once it is built: dir_unchanged). */
static int entry_same(const struct centry *ce, const struct node_entry *oe)
{
	const struct node_entry *e = &ce->e;
	if (ce->file || !bytes_same(e->name, e->name_len, oe->name, oe->name_len) ||
	    e->ftype != oe->ftype || e->mode != oe->mode || e->uid != oe->uid ||
	    e->gid != oe->gid || e->mtime_sec != oe->mtime_sec ||
	    e->mtime_nsec != oe->mtime_nsec || e->ctime_sec != oe->ctime_sec ||
	    e->ctime_nsec != oe->ctime_nsec || e->ino != oe->ino || e->size != oe->size ||
	    e->rdev_major != oe->rdev_major || e->rdev_minor != oe->rdev_minor ||
	    e->link_id != oe->link_id ||
	    !bytes_same(e->target, e->target_len, oe->target, oe->target_len) ||
	    e->nxattr != oe->nxattr)
		return 0;
	for (size_t i = 0; i < e->nxattr; i++)
		if (!bytes_same(e->xattrs[i].name, e->xattrs[i].name_len, oe->xattrs[i].name,
				oe->xattrs[i].name_len) ||
		    !bytes_same(e->xattrs[i].value, e->xattrs[i].value_len, oe->xattrs[i].value,
				oe->xattrs[i].value_len))
			return 0;
	if (e->ftype == NODE_F_DIR) /* old_child is oe's child (entry_dir) */
		return ce->have_old_child;
	/* as cap_dir_finish will write it */
	uint8_t t = e->ftype == NODE_F_REG && e->size == 0 ? 0 : e->child_type;
	return t == oe->child_type && (!t || !memcmp(e->child, oe->child, FERRY_HASH_LEN));
}

/* 1 when every entry of d matches its previous version old's, one for
 * one (subdirectories' nodes aside). */
static int dir_same(const struct cdir *d, const struct node_dir *old)
{
	if (d->n != old->n)
		return 0;
	for (size_t i = 0; i < d->n; i++)
		if (!entry_same(&d->ents[i], &old->ents[i]))
			return 0;
	return 1;
}

/* Leaves the top directory: its node is queued (built in order, after the
 * blocks of its files) and the walk goes back to its parent. */
static int frame_pop(struct cap *c)
{
	struct cframe *f = &c->frames[c->nframes - 1];
	struct job *j;
	int r;
	if ((r = cap_cur_job(c, 0, &j)) < 0)
		return r;
	f->d->same = f->d->have_old && dir_same(f->d, &f->old); /* have_old: f->old too */
	struct item *it = &j->items[j->n++];
	memset(it, 0, sizeof *it);
	it->kind = JOB_DIR_END;
	it->d = f->d;
	it->d->queued = 1;
	c->queued_ents += it->d->n;
	f->d = NULL;
	cap_frame_release(f);
	c->nframes--;
	c->sa_lo = c->sa_hi = 0;
	/* memory stays flat whatever the tree: past the bound, the queued
	 * directories' nodes are built before the walk goes on */
	if (c->queued_ents > CAP_QUEUED_ENTS && (r = cap_drain(c)) < 0)
		return r;
	if (c->nframes) {
		struct cframe *pf = &c->frames[c->nframes - 1];
		unsigned moved = c->dirs.moved;
		if ((r = dirstack_open_parent(&c->dirs)) == 0 && c->dirs.moved != moved) {
			/* found again where it was: what was read of the
			 * directory left is consistent, but it is elsewhere now */
			c->path.len = f->path_len;
			cap_warn(c, "directory moved while being read", 0);
		} else if (r < 0) {
			if (r == -FERR_NOMEM)
				return r;
			/* the tree moved under the walk: what it still holds
			 * of the parent cannot be reached safely */
			char msg[400];
			size_t left = pf->n - pf->i;
			if (left)
				snprintf(msg, sizeof msg, "%s; %zu entries skipped", ferry_errmsg(r),
					 left);
			else
				snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
			ferry_err_clear();
			c->path.len = pf->path_len;
			cap_warn(c, msg, left != 0);
			pf->i = pf->n;
		}
		c->path.len = pf->path_len;
	}
	dirstack_pop(&c->dirs);
	return 0;
}

/* Captures the tree below rootfd (the stack takes it) into *out_type /
 * out_hash; old is the previous version of the root directory. */
int cap_walk(struct cap *c, int rootfd, struct node_dir *old, int have_old, int old_type,
	     const uint8_t *old_hash, uint8_t *out_type, uint8_t *out_hash)
{
	int r;
	if ((r = frame_push(c, rootfd, NULL, old, have_old, old_type, old_hash, out_type,
			    out_hash)) < 0)
		return r;
	while (c->nframes) {
		struct cframe *f = &c->frames[c->nframes - 1];
		if (f->i == f->n) {
			if ((r = frame_pop(c)) < 0)
				return r;
			continue;
		}
		if (f->i < c->sa_lo || f->i >= c->sa_hi)
			sa_fill(c, f, dirstack_fd(&c->dirs));
		size_t k = f->i - c->sa_lo;
		const char *name = f->names[f->i++];
		struct cdir *d = f->d;
		struct centry *ce = &d->ents[d->n];
		struct node_dir od;
		int subfd = -1, have_od = 0;
		memset(&od, 0, sizeof od);
		c->path.len = f->path_len;
		if ((c->path.len && (r = fbuf_putc(&c->path, '/')) < 0) ||
		    (r = fbuf_append(&c->path, name, strlen(name))) < 0)
			return r;
		r = capture_entry(c, dirstack_fd(&c->dirs), name, c->nframes, &c->sa_st[k],
				  c->sa_err[k], f->have_old ? &f->old : NULL, ce, &subfd, &od,
				  &have_od);
		if (r < 0) {
			cap_centry_release(ce); /* not counted in d->n: cdir_free skips it */
			return r;
		}
		if (r == 1) {
			cap_centry_release(ce);
			c->path.len = f->path_len;
			continue;
		}
		d->n++;
		if (r == 2) {
			/* f may move: the frames array grows */
			if ((r = frame_push(c, subfd, name, &od, have_od, ce->old_child_type,
					    ce->have_old_child ? ce->old_child : NULL,
					    &ce->e.child_type, ce->e.child)) < 0)
				return r;
			continue;
		}
		c->path.len = f->path_len;
	}
	return 0;
}
