/* store/diff.c — what changed between two snapshots of a filesystem, on
 * their Merkle trees: equal subtrees are skipped by hash, so the cost is
 * that of what changed. Both trees are walked with explicit stacks, so a
 * tree as deep as NODE_TREE_DEPTH_MAX costs no C stack. A removal and an
 * addition of the same inode (capture's ino) become a rename. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct diff_item {
	char *path;
	size_t len;
	struct node_entry e;  /* name/target/xattrs not valid: only scalars and child */
};

struct diff {
	struct store_reader *rd;
	store_diff_fn fn;
	void *arg;
	struct diff_item *adds, *dels;
	size_t nadds, ndels, capadds, capdels;
	struct fbuf path;
};

/* Room for a path of NODE_TREE_DEPTH_MAX + 1 names and their slashes. */
#define DIFF_PATH_MAX ((size_t)(NODE_TREE_DEPTH_MAX + 2) * (NODE_NAME_MAX + 1))

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

static char ftype_char(int t)
{
	switch (t) {
	case NODE_F_DIR: return '/';
	case NODE_F_SYMLINK: return '@';
	case NODE_F_FIFO: return '|';
	case NODE_F_CHR: return 'C';
	case NODE_F_BLK: return 'B';
	default: return 'F';
	}
}

static int entries_equal(const struct node_entry *a, const struct node_entry *b)
{
	if (a->ftype != b->ftype || a->mode != b->mode || a->uid != b->uid || a->gid != b->gid ||
	    a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec || a->size != b->size ||
	    a->rdev_major != b->rdev_major || a->rdev_minor != b->rdev_minor ||
	    a->target_len != b->target_len || a->nxattr != b->nxattr ||
	    (a->target_len && memcmp(a->target, b->target, a->target_len)))
		return 0;
	for (size_t i = 0; i < a->nxattr; i++)
		if (a->xattrs[i].name_len != b->xattrs[i].name_len ||
		    a->xattrs[i].value_len != b->xattrs[i].value_len ||
		    memcmp(a->xattrs[i].name, b->xattrs[i].name, a->xattrs[i].name_len) ||
		    memcmp(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].value_len))
			return 0;
	if (a->ftype == NODE_F_REG &&
	    (a->child_type != b->child_type || memcmp(a->child, b->child, FERRY_HASH_LEN)))
		return 0;
	return 1;
}

static int push_item(struct diff *d, int add, const struct node_entry *e)
{
	struct diff_item **v = add ? &d->adds : &d->dels;
	size_t *n = add ? &d->nadds : &d->ndels, *cap = add ? &d->capadds : &d->capdels;
	int grown = VEC_GROW(*v, *cap, *n, 16, "diffing");
	if (grown < 0)
		return grown;
	struct diff_item *it = &(*v)[*n];
	it->path = malloc(d->path.len + 1);
	if (!it->path)
		return ferry_err(FERR_NOMEM, "diffing");
	memcpy(it->path, d->path.data, d->path.len);
	it->path[d->path.len] = 0;
	it->len = d->path.len;
	it->e = *e;
	it->e.name = NULL;
	it->e.target = NULL;
	it->e.xattrs = NULL;
	it->e.nxattr = 0;
	(*n)++;
	return 0;
}

static int path_push(struct fbuf *p, const uint8_t *name, size_t n, size_t *saved)
{
	int r;
	*saved = p->len;
	if ((r = fbuf_putc(p, '/')) < 0 || (r = fbuf_append(p, name, n)) < 0)
		return r;
	return 0;
}

/* diff_all: every entry below a directory, reported with one change. */
struct all {
	struct diff *d;
	char c;
	size_t base;    /* d->path.len of the directory */
};

static int all_entry(void *arg, const struct node_walk_entry *we)
{
	struct all *a = arg;
	struct diff *d = a->d;
	int r;
	d->path.len = a->base;
	if ((r = fbuf_putc(&d->path, '/')) < 0 ||
	    (r = fbuf_append(&d->path, we->path, we->path_len)) < 0)
		return r;
	r = d->fn(d->arg, a->c, ftype_char(we->e->ftype), (const char *)d->path.data,
		  d->path.len, NULL, 0);
	d->path.len = a->base;
	return r < 0 ? r : 0;
}

/* Reports every entry below dir (type, hash), whose path is d->path, with
 * change c. */
static int diff_all(struct diff *d, char c, int type, const uint8_t *hash)
{
	static const struct node_walk_ops ops = {NULL, all_entry, NULL};
	struct all a = {d, c, d->path.len};
	int r = node_tree_walk(rd_node, d->rd, type, hash, &ops, &a);
	d->path.len = a.base;
	return r;
}

/* One pair of directories being compared: A (older) and B, the position
 * in each, and the length of their path. */
struct dframe {
	struct node_dir A, B;
	size_t i, j, path_len;
};

static void dframe_release(struct dframe *f)
{
	node_dir_release(&f->A);
	node_dir_release(&f->B);
}

/* Compares one entry name of A with one of B, bytewise. */
static int entry_cmp(const struct node_entry *x, const struct node_entry *y)
{
	size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, m);
	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* One step of diff_dirs at frame f: the next pair (or lone entry) of its
 * directories. *down (type and hashes in dt/dh) is set when a changed
 * subdirectory must be compared next. */
static int diff_step(struct diff *d, struct dframe *f, int collect, int *down, int dt[2],
		     const uint8_t *dh[2])
{
	int c, r = 0;
	size_t saved;
	*down = 0;
	if (f->i == f->A.n)
		c = 1;
	else if (f->j == f->B.n)
		c = -1;
	else
		c = entry_cmp(&f->A.ents[f->i], &f->B.ents[f->j]);
	if (c < 0) {
		const struct node_entry *x = &f->A.ents[f->i++];
		if ((r = path_push(&d->path, x->name, x->name_len, &saved)) < 0)
			return r;
		r = collect ? push_item(d, 0, x)
			    : d->fn(d->arg, '-', ftype_char(x->ftype), (const char *)d->path.data,
				    d->path.len, NULL, 0);
		if (r == 0 && !collect && x->ftype == NODE_F_DIR)
			r = diff_all(d, '-', x->child_type, x->child);
	} else if (c > 0) {
		const struct node_entry *y = &f->B.ents[f->j++];
		if ((r = path_push(&d->path, y->name, y->name_len, &saved)) < 0)
			return r;
		r = collect ? push_item(d, 1, y)
			    : d->fn(d->arg, '+', ftype_char(y->ftype), (const char *)d->path.data,
				    d->path.len, NULL, 0);
		if (r == 0 && !collect && y->ftype == NODE_F_DIR)
			r = diff_all(d, '+', y->child_type, y->child);
	} else {
		const struct node_entry *x = &f->A.ents[f->i++], *y = &f->B.ents[f->j++];
		if ((r = path_push(&d->path, x->name, x->name_len, &saved)) < 0)
			return r;
		if (x->ftype != y->ftype) {
			r = d->fn(d->arg, '-', ftype_char(x->ftype), (const char *)d->path.data,
				  d->path.len, NULL, 0);
			if (r == 0 && x->ftype == NODE_F_DIR)
				r = diff_all(d, '-', x->child_type, x->child);
			if (r == 0)
				r = d->fn(d->arg, '+', ftype_char(y->ftype), (const char *)d->path.data,
					  d->path.len, NULL, 0);
			if (r == 0 && y->ftype == NODE_F_DIR)
				r = diff_all(d, '+', y->child_type, y->child);
		} else {
			int dirchg = x->ftype == NODE_F_DIR &&
				     (x->child_type != y->child_type ||
				      memcmp(x->child, y->child, FERRY_HASH_LEN));
			if (!entries_equal(x, y) || dirchg)
				r = d->fn(d->arg, 'M', ftype_char(x->ftype), (const char *)d->path.data,
					  d->path.len, NULL, 0);
			if (r == 0 && dirchg) {
				/* the path stays extended: the caller descends */
				*down = 1;
				dt[0] = x->child_type;
				dh[0] = x->child;
				dt[1] = y->child_type;
				dh[1] = y->child;
				return 0;
			}
		}
	}
	d->path.len = saved;
	return r;
}

/* Compares directory A (ta, ha) with B (tb, hb), whose path is d->path,
 * reporting modifications and (collect: gathering, else reporting)
 * additions and removals. */
static int diff_dirs(struct diff *d, int ta, const uint8_t *ha, int tb, const uint8_t *hb,
		     int collect)
{
	struct dframe *st = NULL;
	size_t n = 0, cap = 0;
	int r;
	if (ta == tb && !memcmp(ha, hb, FERRY_HASH_LEN))
		return 0;
	if ((r = VEC_GROW(st, cap, n, 64, "diffing")) < 0)
		return r;
	memset(&st[0], 0, sizeof st[0]);
	st[0].path_len = d->path.len;
	n = 1;
	if ((r = node_dir_load(rd_node, d->rd, ta, ha, &st[0].A)) < 0 ||
	    (r = node_dir_load(rd_node, d->rd, tb, hb, &st[0].B)) < 0)
		goto out;
	while (n) {
		struct dframe *f = &st[n - 1];
		if (f->i == f->A.n && f->j == f->B.n) {
			d->path.len = f->path_len;
			dframe_release(f);
			n--;
			if (n)
				d->path.len = st[n - 1].path_len; /* back to the parent's */
			continue;
		}
		int down, dt[2];
		const uint8_t *dh[2];
		if ((r = diff_step(d, f, collect, &down, dt, dh)) < 0)
			goto out;
		if (!down)
			continue;
		if (n > (size_t)NODE_TREE_DEPTH_MAX + 1) {
			r = ferry_err(FERR_LIMIT, "directories nested deeper than %d levels",
				      NODE_TREE_DEPTH_MAX);
			goto out;
		}
		if ((r = VEC_GROW(st, cap, n, 64, "diffing")) < 0)
			goto out;
		f = &st[n];
		memset(f, 0, sizeof *f);
		f->path_len = d->path.len;
		n++;
		if ((r = node_dir_load(rd_node, d->rd, dt[0], dh[0], &f->A)) < 0 ||
		    (r = node_dir_load(rd_node, d->rd, dt[1], dh[1], &f->B)) < 0)
			goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		dframe_release(&st[i]);
	free(st);
	return r;
}

static int root_dir(struct store_reader *rd, const uint8_t *root, int *type, uint8_t *hash,
		    struct node_entry *e)
{
	struct fbuf b;
	struct node_xattr *xa = NULL;
	int t, kind, r;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT) {
		r = ferry_err(FERR_CORRUPT, "snapshot root is a node of type %d", t);
		goto out;
	}
	if ((r = node_root_decode(b.data, b.len, &kind, e, &xa)) < 0)
		goto out;
	if (kind != NODE_ROOT_FILESYSTEM) {
		r = ferry_err(FERR_UNSUPPORTED, "diff compares filesystems, not volumes");
		goto out;
	}
	*type = e->child_type;
	memcpy(hash, e->child, FERRY_HASH_LEN);
	e->name = e->target = NULL;
	e->xattrs = NULL;
	e->nxattr = 0;
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

int store_snap_diff(struct store_pool *p, const struct store_snap *a, const struct store_snap *b,
		    store_diff_fn fn, void *arg)
{
	struct diff d;
	struct node_entry ea, eb;
	uint8_t ha[FERRY_HASH_LEN], hb[FERRY_HASH_LEN];
	int ta, tb, r;
	memset(&d, 0, sizeof d);
	d.fn = fn;
	d.arg = arg;
	fbuf_init(&d.path, DIFF_PATH_MAX);
	if ((r = store_reader_new(p, &d.rd)) < 0)
		goto out;
	if ((r = root_dir(d.rd, a->root, &ta, ha, &ea)) < 0 ||
	    (r = root_dir(d.rd, b->root, &tb, hb, &eb)) < 0)
		goto out;
	/* First pass: modifications reported, additions/removals collected so
	 * that a removal and an addition of the same inode become a rename. */
	if ((r = diff_dirs(&d, ta, ha, tb, hb, 1)) < 0)
		goto out;
	for (size_t i = 0; i < d.ndels && r == 0; i++) {
		struct diff_item *x = &d.dels[i];
		struct diff_item *y = NULL;
		for (size_t j = 0; x->e.ino && j < d.nadds; j++)
			if (d.adds[j].path && d.adds[j].e.ino == x->e.ino &&
			    d.adds[j].e.ftype == x->e.ftype) {
				y = &d.adds[j];
				break;
			}
		if (y) {
			r = fn(arg, 'R', ftype_char(x->e.ftype), x->path, x->len, y->path, y->len);
			if (r == 0 && x->e.ftype == NODE_F_DIR) {
				fbuf_reset(&d.path);
				if ((r = fbuf_append(&d.path, y->path, y->len)) < 0)
					break;
				r = diff_dirs(&d, x->e.child_type, x->e.child, y->e.child_type,
					      y->e.child, 0);
			}
			free(y->path);
			y->path = NULL;
			continue;
		}
		r = fn(arg, '-', ftype_char(x->e.ftype), x->path, x->len, NULL, 0);
		if (r == 0 && x->e.ftype == NODE_F_DIR) {
			fbuf_reset(&d.path);
			if ((r = fbuf_append(&d.path, x->path, x->len)) < 0)
				break;
			r = diff_all(&d, '-', x->e.child_type, x->e.child);
		}
	}
	for (size_t j = 0; j < d.nadds && r == 0; j++) {
		struct diff_item *y = &d.adds[j];
		if (!y->path)
			continue;
		r = fn(arg, '+', ftype_char(y->e.ftype), y->path, y->len, NULL, 0);
		if (r == 0 && y->e.ftype == NODE_F_DIR) {
			fbuf_reset(&d.path);
			if ((r = fbuf_append(&d.path, y->path, y->len)) < 0)
				break;
			r = diff_all(&d, '+', y->e.child_type, y->e.child);
		}
	}
out:
	for (size_t i = 0; i < d.nadds; i++)
		free(d.adds[i].path);
	for (size_t i = 0; i < d.ndels; i++)
		free(d.dels[i].path);
	free(d.adds);
	free(d.dels);
	fbuf_release(&d.path);
	store_reader_free(d.rd);
	return r;
}
