/* store/diff.c — what changed between two snapshots of a filesystem, told
 * as zfs diff tells it: per file (inode), not per name.
 *
 * zfs knows a file by its object number; ferry knows it by the inode
 * number capture recorded (node_entry.ino, kept by send and recv). A file
 * is reported when its entry changed (attributes, ctime, content), when it
 * has another name or parent, or when its link count changed; a directory
 * when its own entry changed or names came or went in it; a file below a
 * directory that was merely renamed is not reported, as in zfs. With no
 * inode numbers (ino 0: snapshots of archives), a name is the file: a move
 * is a removal and an addition, and hardlinks cannot be followed across
 * snapshots.
 *
 * Cost: equal subtrees are skipped by hash, so the walk costs what
 * changed. Both trees are walked with explicit stacks (any depth up to
 * NODE_TREE_DEPTH_MAX costs no C stack). A change that can be told from
 * its directory alone (a file modified or renamed in place, the usual
 * case) is reported at once; names that came or went, and hardlinked
 * files, are kept as records (one path each) until the whole walk is
 * done, then matched by inode: a removed and an added directory with one
 * inode are compared entry by entry like any pair, so a renamed tree
 * costs what changed in it.
 *
 * One file of some 740 lines, over the 700 of the house rule: the walk
 * and the match by inode work on one record table (struct diff, struct
 * drec) that nothing else in store/ uses; split, it would have to live in
 * store/internal.h for every file of the store to see. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A name seen on one side only, or a hardlinked file's name on one side:
 * matched with the other side's by inode once the walk is done. */
struct drec {
	char *path;             /* from the root, "/a/b" */
	size_t len, base;       /* base: where the last name starts */
	uint64_t parent;        /* the containing directory's inode (see PARENT_ROOT) */
	uint64_t ino, seq;
	uint8_t side;           /* 0: the older snapshot's, 1: the newer's */
	uint8_t ftype, child_type;
	uint8_t state;          /* REC_* */
	int64_t ctime_sec;
	uint32_t ctime_nsec;
	uint8_t child[FERRY_HASH_LEN];
	uint8_t digest[FERRY_HASH_LEN]; /* of the entry, a directory's child left out */
};

enum { REC_NEW, REC_EXPANDED, REC_PAIRED };

/* The root directory's entries have this parent on both sides, whatever
 * inode each root had (a snapshot taken --from another directory). */
#define PARENT_ROOT UINT64_MAX

struct diff {
	struct store_reader *rd;
	store_diff_fn fn;
	void *arg;
	struct drec *recs;
	size_t nrecs, caprecs;
	uint64_t seq;
	struct fbuf ap, bp;     /* the paths on each side of the pair being compared */
	struct fbuf enc;        /* scratch: an entry encoded for its digest */
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

/* 1 when a and b are the same entry in every field but the name and (for
 * directories) the child: what an unchanged file or directory keeps. */
static int attrs_equal(const struct node_entry *a, const struct node_entry *b)
{
	if (a->ftype != b->ftype || a->mode != b->mode || a->uid != b->uid || a->gid != b->gid ||
	    a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec ||
	    a->ctime_sec != b->ctime_sec || a->ctime_nsec != b->ctime_nsec || a->ino != b->ino ||
	    a->size != b->size || a->rdev_major != b->rdev_major ||
	    a->rdev_minor != b->rdev_minor || a->link_id != b->link_id ||
	    a->target_len != b->target_len || a->nxattr != b->nxattr ||
	    (a->target_len && memcmp(a->target, b->target, a->target_len)))
		return 0;
	for (size_t i = 0; i < a->nxattr; i++)
		if (a->xattrs[i].name_len != b->xattrs[i].name_len ||
		    a->xattrs[i].value_len != b->xattrs[i].value_len ||
		    memcmp(a->xattrs[i].name, b->xattrs[i].name, a->xattrs[i].name_len) ||
		    memcmp(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].value_len))
			return 0;
	if (a->ftype != NODE_F_DIR &&
	    (a->child_type != b->child_type ||
	     (a->child_type && memcmp(a->child, b->child, FERRY_HASH_LEN))))
		return 0;
	return 1;
}

static int child_equal(const struct node_entry *a, const struct node_entry *b)
{
	return a->child_type == b->child_type && !memcmp(a->child, b->child, FERRY_HASH_LEN);
}

/* 1 when x (older) and y (newer), under one name, are one file: the same
 * type and inode (or an inode unknown on a side). */
static int same_file(const struct node_entry *x, const struct node_entry *y)
{
	return x->ftype == y->ftype && (x->ino == y->ino || !x->ino || !y->ino);
}

/* The digest attrs_equal compares, for records (which keep no xattrs or
 * target): the entry encoded with its name, a directory's child left out. */
static int entry_digest(struct diff *d, const struct node_entry *e, uint8_t out[FERRY_HASH_LEN])
{
	struct node_entry c = *e;
	int r;
	if (c.ftype == NODE_F_DIR)
		c.child_type = 0;
	fbuf_reset(&d->enc);
	if ((r = node_entry_encode(&d->enc, &c)) < 0)
		return r;
	node_hash(0, d->enc.data, d->enc.len, out);
	return 0;
}

static int emit(struct diff *d, char change, int ftype, const char *path, size_t len,
		const char *newpath, size_t newlen, int64_t csec, uint32_t cnsec, int64_t links)
{
	struct store_diff_change c;
	memset(&c, 0, sizeof c);
	c.change = change;
	c.ftype = ftype_char(ftype);
	/* the root directory, whose path is empty here, is "/" as in zfs */
	c.path = len ? path : "/";
	c.path_len = len ? len : 1;
	if (newpath) {
		c.newpath = newlen ? newpath : "/";
		c.newpath_len = newlen ? newlen : 1;
	}
	c.ctime_sec = csec;
	c.ctime_nsec = cnsec;
	c.links = links;
	return d->fn(d->arg, &c);
}

/* M when both paths are one, else R old -> new (zfs reports a changed
 * file whose path changed, even by a parent's rename, as a rename). */
static int emit_change(struct diff *d, int ftype, const char *ap, size_t al, const char *bp,
		       size_t bl, int64_t csec, uint32_t cnsec)
{
	if (al == bl && (!al || !memcmp(ap, bp, al)))
		return emit(d, 'M', ftype, ap, al, NULL, 0, csec, cnsec, 0);
	return emit(d, 'R', ftype, ap, al, bp, bl, csec, cnsec, 0);
}

/* Keeps e, named path (in buf, n bytes, its last name from base), seen
 * on side in a directory whose inode is parent. */
static int rec_add(struct diff *d, int side, const struct node_entry *e, const uint8_t *path,
		   size_t n, uint64_t parent)
{
	int r = VEC_GROW(d->recs, d->caprecs, d->nrecs, 64, "diffing");
	if (r < 0)
		return r;
	struct drec *x = &d->recs[d->nrecs];
	memset(x, 0, sizeof *x);
	if ((r = entry_digest(d, e, x->digest)) < 0)
		return r;
	if (!(x->path = malloc(n + 1)))
		return ferry_err(FERR_NOMEM, "diffing");
	if (n)
		memcpy(x->path, path, n);
	x->path[n] = 0;
	x->len = n;
	x->base = n - e->name_len;
	x->parent = parent;
	x->ino = e->ino;
	x->seq = d->seq++;
	x->side = (uint8_t)side;
	x->ftype = e->ftype;
	x->ctime_sec = e->ctime_sec;
	x->ctime_nsec = e->ctime_nsec;
	x->child_type = e->child_type;
	memcpy(x->child, e->child, FERRY_HASH_LEN);
	x->state = REC_NEW;
	d->nrecs++;
	return 0;
}

/* Appends "/name" to p, the old length in *saved. */
static int path_push(struct fbuf *p, const uint8_t *name, size_t n, size_t *saved)
{
	int r;
	*saved = p->len;
	if ((r = fbuf_putc(p, '/')) < 0 || (r = fbuf_append(p, name, n)) < 0)
		return r;
	return 0;
}

/* One pair of directories being compared: A (older) and B, one file on
 * both sides; the position in each, the length of their paths and the
 * inodes their entries get as parent. */
struct dframe {
	struct node_dir A, B;
	size_t i, j, alen, blen;
	uint64_t pa, pb;
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

/* 1 when a name came or went in the pair of f, or names another file:
 * what moves a directory's mtime and ctime, and makes zfs report it. */
static int names_changed(const struct dframe *f)
{
	size_t i = 0, j = 0;
	while (i < f->A.n && j < f->B.n) {
		int c = entry_cmp(&f->A.ents[i], &f->B.ents[j]);
		if (c || !same_file(&f->A.ents[i], &f->B.ents[j]))
			return 1;
		i++;
		j++;
	}
	return i < f->A.n || j < f->B.n;
}

/* What the next pair of a directory walk is: a subdirectory pair to
 * compare (own: its entry changed, or its path), with its children and
 * its entry on the newer side for the report. */
struct descend {
	int down, own, ftype;
	int dt[2];
	const uint8_t *dh[2];
	uint64_t parent;
	int64_t csec;
	uint32_t cnsec;
};

/* One step of diff_dirs at frame f: the next pair (or lone entry) of its
 * directories. */
static int diff_step(struct diff *d, struct dframe *f, struct descend *ds)
{
	int c, r = 0;
	size_t sa, sb;
	ds->down = 0;
	if (f->i == f->A.n)
		c = 1;
	else if (f->j == f->B.n)
		c = -1;
	else
		c = entry_cmp(&f->A.ents[f->i], &f->B.ents[f->j]);
	const struct node_entry *x = c <= 0 ? &f->A.ents[f->i++] : NULL;
	const struct node_entry *y = c >= 0 ? &f->B.ents[f->j++] : NULL;
	const struct node_entry *e = x ? x : y;
	if ((r = path_push(&d->ap, e->name, e->name_len, &sa)) < 0 ||
	    (r = path_push(&d->bp, e->name, e->name_len, &sb)) < 0)
		return r;
	if (x && y && same_file(x, y)) {
		if (x->ftype == NODE_F_DIR) {
			int own = !attrs_equal(x, y);
			if (!child_equal(x, y)) {
				/* the paths stay extended: the caller descends */
				ds->down = 1;
				ds->own = own;
				ds->ftype = y->ftype;
				ds->dt[0] = x->child_type;
				ds->dh[0] = x->child;
				ds->dt[1] = y->child_type;
				ds->dh[1] = y->child;
				ds->parent = x->ino ? x->ino : y->ino;
				ds->csec = y->ctime_sec;
				ds->cnsec = y->ctime_nsec;
				return 0;
			}
			if (own)
				r = emit_change(d, y->ftype, (const char *)d->ap.data, d->ap.len,
						(const char *)d->bp.data, d->bp.len, y->ctime_sec,
						y->ctime_nsec);
		} else if (attrs_equal(x, y)) {
			r = 0;
		} else if ((x->link_id || y->link_id) && x->ino && y->ino) {
			/* a name of a hardlinked file: its link count is known
			 * only once every changed name has been seen */
			if ((r = rec_add(d, 0, x, d->ap.data, d->ap.len, f->pa)) == 0)
				r = rec_add(d, 1, y, d->bp.data, d->bp.len, f->pb);
		} else {
			r = emit_change(d, y->ftype, (const char *)d->ap.data, d->ap.len,
					(const char *)d->bp.data, d->bp.len, y->ctime_sec,
					y->ctime_nsec);
		}
	} else {
		/* a name on one side, or naming another file on each */
		if (x)
			r = rec_add(d, 0, x, d->ap.data, d->ap.len, f->pa);
		if (r == 0 && y)
			r = rec_add(d, 1, y, d->bp.data, d->bp.len, f->pb);
	}
	d->ap.len = sa;
	d->bp.len = sb;
	return r;
}

/* Loads a frame's directories and reports the pair itself when its entry
 * or path changed (own) or names came or went in it. */
static int frame_load(struct diff *d, struct dframe *f, const struct descend *ds)
{
	int r;
	if ((r = node_dir_load(rd_node, d->rd, ds->dt[0], ds->dh[0], &f->A)) < 0 ||
	    (r = node_dir_load(rd_node, d->rd, ds->dt[1], ds->dh[1], &f->B)) < 0)
		return r;
	if (ds->own || names_changed(f))
		return emit_change(d, ds->ftype, (const char *)d->ap.data, d->ap.len,
				   (const char *)d->bp.data, d->bp.len, ds->csec, ds->cnsec);
	return 0;
}

/* Compares the pair of directories top describes, one directory on both
 * sides, whose paths are d->ap and d->bp, reporting what changed in it
 * (and it, by top->own) and keeping records of the rest. */
static int diff_dirs(struct diff *d, const struct descend *top)
{
	struct dframe *st = NULL;
	size_t n = 0, cap = 0;
	int r;
	if ((r = VEC_GROW(st, cap, n, 64, "diffing")) < 0)
		return r;
	memset(&st[0], 0, sizeof st[0]);
	st[0].alen = d->ap.len;
	st[0].blen = d->bp.len;
	st[0].pa = st[0].pb = top->parent;
	n = 1;
	if ((r = frame_load(d, &st[0], top)) < 0)
		goto out;
	while (n) {
		struct dframe *f = &st[n - 1];
		if (f->i == f->A.n && f->j == f->B.n) {
			dframe_release(f);
			n--;
			if (n) { /* back to the parent's paths */
				d->ap.len = st[n - 1].alen;
				d->bp.len = st[n - 1].blen;
			}
			continue;
		}
		struct descend ds;
		if ((r = diff_step(d, f, &ds)) < 0)
			goto out;
		if (!ds.down)
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
		f->alen = d->ap.len;
		f->blen = d->bp.len;
		f->pa = f->pb = ds.parent;
		n++;
		if ((r = frame_load(d, f, &ds)) < 0)
			goto out;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		dframe_release(&st[i]);
	free(st);
	return r;
}

/* Records the entries of the directory record k as names on its side
 * (one level: a subdirectory is expanded in a later round, unless it is
 * matched with a directory of the other side first). */
static int rec_expand(struct diff *d, size_t k)
{
	struct node_dir dir;
	struct fbuf *p = d->recs[k].side ? &d->bp : &d->ap;
	int r;
	memset(&dir, 0, sizeof dir);
	d->recs[k].state = REC_EXPANDED;
	if (!d->recs[k].child_type)
		return 0;
	uint8_t child[FERRY_HASH_LEN];
	memcpy(child, d->recs[k].child, FERRY_HASH_LEN);
	if ((r = node_dir_load(rd_node, d->rd, d->recs[k].child_type, child, &dir)) < 0)
		goto out;
	for (size_t i = 0; i < dir.n; i++) {
		const struct drec *x = &d->recs[k]; /* again: rec_add moves the records */
		fbuf_reset(p);
		size_t saved;
		if ((r = fbuf_append(p, x->path, x->len)) < 0 ||
		    (r = path_push(p, dir.ents[i].name, dir.ents[i].name_len, &saved)) < 0 ||
		    (r = rec_add(d, x->side, &dir.ents[i], p->data, p->len, x->ino)) < 0)
			goto out;
	}
	r = 0;
out:
	node_dir_release(&dir);
	return r;
}

/* Orders record indexes by inode, then side, then order seen. */
static int idx_cmp(const void *a, const void *b, void *arg)
{
	const struct drec *recs = arg;
	const struct drec *x = &recs[*(const size_t *)a], *y = &recs[*(const size_t *)b];
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int sort_index(struct diff *d, size_t from, size_t to, int dirs_only, size_t **out,
		      size_t *nout)
{
	size_t *v = NULL, n = 0, cap = 0;
	int r;
	for (size_t k = from; k < to; k++) {
		const struct drec *x = &d->recs[k];
		if (dirs_only && (x->ftype != NODE_F_DIR || x->state != REC_NEW || !x->ino))
			continue;
		if (!dirs_only && x->state == REC_PAIRED)
			continue;
		if ((r = VEC_GROW(v, cap, n, 64, "diffing")) < 0) {
			free(v);
			return r;
		}
		v[n++] = k;
	}
	if (n)
		qsort_r(v, n, sizeof *v, idx_cmp, d->recs);
	*out = v;
	*nout = n;
	return 0;
}

/* Rounds over the records kept since the last one: a removed and an added
 * directory with one inode are one directory, renamed or moved, compared
 * entry by entry; every other directory record is expanded one level.
 * Ends when a round adds no record. */
static int match_dirs(struct diff *d)
{
	size_t from = 0;
	int r = 0;
	while (from < d->nrecs && r == 0) {
		size_t to = d->nrecs, *v = NULL, n = 0;
		if ((r = sort_index(d, from, to, 1, &v, &n)) < 0)
			return r;
		for (size_t i = 0; i + 1 < n && r == 0; i++) {
			struct drec *x = &d->recs[v[i]], *y = &d->recs[v[i + 1]];
			if (x->ino != y->ino || x->side != 0 || y->side != 1)
				continue;
			x->state = y->state = REC_PAIRED;
			struct descend ds = {0};
			ds.down = 1;
			ds.ftype = NODE_F_DIR;
			ds.own = memcmp(x->digest, y->digest, FERRY_HASH_LEN) || x->parent != y->parent ||
				 x->len - x->base != y->len - y->base ||
				 memcmp(x->path + x->base, y->path + y->base, x->len - x->base);
			ds.dt[0] = x->child_type;
			ds.dt[1] = y->child_type;
			uint8_t ha[FERRY_HASH_LEN], hb[FERRY_HASH_LEN];
			memcpy(ha, x->child, FERRY_HASH_LEN);
			memcpy(hb, y->child, FERRY_HASH_LEN);
			ds.dh[0] = ha;
			ds.dh[1] = hb;
			ds.parent = x->ino;
			ds.csec = y->ctime_sec;
			ds.cnsec = y->ctime_nsec;
			fbuf_reset(&d->ap);
			fbuf_reset(&d->bp);
			if ((r = fbuf_append(&d->ap, x->path, x->len)) < 0 ||
			    (r = fbuf_append(&d->bp, y->path, y->len)) < 0)
				break;
			/* x and y may move as diff_dirs adds records: not used after */
			r = diff_dirs(d, &ds);
			i++;
		}
		free(v);
		for (size_t k = from; k < to && r == 0; k++)
			if (d->recs[k].ftype == NODE_F_DIR && d->recs[k].state == REC_NEW)
				r = rec_expand(d, k);
		from = to;
	}
	return r;
}

static int same_name(const struct drec *a, const struct drec *b)
{
	return a->parent == b->parent && a->len - a->base == b->len - b->base &&
	       !memcmp(a->path + a->base, b->path + b->base, a->len - a->base);
}

/* One line of the records' report, in the order its first record was
 * seen. */
struct dout {
	uint64_t seq;
	char change;
	size_t a, b;            /* records: a the older side's (or the only one) */
	int64_t links;
};

static int out_cmp(const void *p, const void *q)
{
	const struct dout *x = p, *y = q;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int out_add(struct dout **v, size_t *n, size_t *cap, const struct drec *recs, char change,
		   size_t a, size_t b, int64_t links)
{
	int r = VEC_GROW(*v, *cap, *n, 64, "diffing");
	if (r < 0)
		return r;
	uint64_t sa = recs[a].seq, sb = b == SIZE_MAX ? sa : recs[b].seq;
	(*v)[(*n)++] = (struct dout){sa < sb ? sa : sb, change, a, b, links};
	return 0;
}

/* The lines of one inode's records g[0..n) (sorted: older side first). */
static int resolve(struct diff *d, const size_t *g, size_t n, struct dout **v, size_t *nv,
		   size_t *cap)
{
	const struct drec *R = d->recs;
	size_t na = 0;
	int r = 0;
	while (na < n && R[g[na]].side == 0)
		na++;
	size_t nb = n - na;
	const size_t *A = g, *B = g + na;
	if (!R[g[0]].ino) { /* no inode: every name on its own */
		for (size_t i = 0; i < n && r == 0; i++)
			r = out_add(v, nv, cap, R, R[g[i]].side ? '+' : '-', g[i], SIZE_MAX, 0);
		return r;
	}
	if (!nb)
		return out_add(v, nv, cap, R, '-', A[0], SIZE_MAX, 0);
	if (!na)
		return out_add(v, nv, cap, R, '+', B[0], SIZE_MAX, 0);
	if (R[A[0]].ftype != R[B[0]].ftype) { /* the inode was reused */
		if ((r = out_add(v, nv, cap, R, '-', A[0], SIZE_MAX, 0)) < 0)
			return r;
		return out_add(v, nv, cap, R, '+', B[0], SIZE_MAX, 0);
	}
	if (na != nb && R[A[0]].ftype != NODE_F_DIR)
		/* as zfs: the older name when links were added, else the newer */
		return out_add(v, nv, cap, R, 'M', nb > na ? A[0] : B[0], B[0],
			       (int64_t)nb - (int64_t)na);
	/* the same names first (a changed file), the others in order */
	uint8_t *used = calloc(nb ? nb : 1, 1);
	if (!used)
		return ferry_err(FERR_NOMEM, "diffing");
	size_t *pair = malloc((na ? na : 1) * sizeof *pair);
	if (!pair) {
		free(used);
		return ferry_err(FERR_NOMEM, "diffing");
	}
	for (size_t i = 0; i < na; i++) {
		pair[i] = SIZE_MAX;
		for (size_t j = 0; j < nb; j++)
			if (!used[j] && same_name(&R[A[i]], &R[B[j]])) {
				used[j] = 1;
				pair[i] = j;
				break;
			}
	}
	for (size_t i = 0, j = 0; i < na; i++) {
		if (pair[i] != SIZE_MAX)
			continue;
		while (j < nb && used[j])
			j++;
		if (j < nb) {
			used[j] = 1;
			pair[i] = j;
		}
	}
	/* a file is one line, as in zfs: each name that moved, else the
	 * first that changed in place */
	size_t m = SIZE_MAX;
	int moved = 0;
	for (size_t i = 0; i < na && r == 0; i++) {
		if (pair[i] == SIZE_MAX) /* more names on one side than the other: dirs */
			continue;
		const struct drec *x = &R[A[i]], *y = &R[B[pair[i]]];
		/* unchanged, under a renamed directory: not reported (zfs) */
		if (!memcmp(x->digest, y->digest, FERRY_HASH_LEN) && same_name(x, y))
			continue;
		if (x->len == y->len && (!x->len || !memcmp(x->path, y->path, x->len))) {
			if (m == SIZE_MAX)
				m = i;
			continue;
		}
		moved = 1;
		r = out_add(v, nv, cap, R, 'C', A[i], B[pair[i]], 0);
	}
	if (r == 0 && !moved && m != SIZE_MAX)
		r = out_add(v, nv, cap, R, 'C', A[m], B[pair[m]], 0);
	free(pair);
	free(used);
	return r;
}

/* Reports the records, matched by inode, in the order they were seen. */
static int report_recs(struct diff *d)
{
	size_t *g = NULL, n = 0;
	struct dout *v = NULL;
	size_t nv = 0, cap = 0;
	int r;
	if ((r = sort_index(d, 0, d->nrecs, 0, &g, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0;) {
		size_t j = i + 1;
		while (j < n && d->recs[g[j]].ino == d->recs[g[i]].ino)
			j++;
		r = resolve(d, g + i, j - i, &v, &nv, &cap);
		i = j;
	}
	free(g);
	if (r == 0 && nv)
		qsort(v, nv, sizeof *v, out_cmp);
	for (size_t i = 0; i < nv && r == 0; i++) {
		const struct drec *x = &d->recs[v[i].a];
		const struct drec *y = v[i].b == SIZE_MAX ? NULL : &d->recs[v[i].b];
		/* as zfs: the older side's ctime for a removal, else the newer's */
		const struct drec *t = y ? y : x;
		if (v[i].change == 'C')
			r = emit_change(d, y->ftype, x->path, x->len, y->path, y->len, y->ctime_sec,
					y->ctime_nsec);
		else
			r = emit(d, v[i].change, x->ftype, x->path, x->len, NULL, 0, t->ctime_sec,
				 t->ctime_nsec, v[i].links);
	}
	free(v);
	return r;
}

/* The root directory of the filesystem snapshot root: its entry's
 * scalars in e (pointers cleared) and its attributes' digest. */
static int root_dir(struct diff *d, const uint8_t *root, struct node_entry *e,
		    uint8_t digest[FERRY_HASH_LEN])
{
	struct fbuf b;
	struct node_xattr *xa = NULL;
	int t, kind, r;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(d->rd, root, &t, &b)) < 0)
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
	if ((r = entry_digest(d, e, digest)) < 0)
		goto out;
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
	uint8_t da[FERRY_HASH_LEN], db[FERRY_HASH_LEN];
	int r;
	memset(&d, 0, sizeof d);
	d.fn = fn;
	d.arg = arg;
	fbuf_init(&d.ap, DIFF_PATH_MAX);
	fbuf_init(&d.bp, DIFF_PATH_MAX);
	fbuf_init(&d.enc, NODE_MAX);
	if ((r = store_reader_new(p, &d.rd)) < 0)
		goto out;
	if ((r = root_dir(&d, a->root, &ea, da)) < 0 || (r = root_dir(&d, b->root, &eb, db)) < 0)
		goto out;
	/* the roots are one directory, whatever inode each had */
	ea.ino = eb.ino = 0;
	struct descend top = {0};
	top.down = 1;
	top.ftype = NODE_F_DIR;
	top.dt[0] = ea.child_type;
	top.dh[0] = ea.child;
	top.dt[1] = eb.child_type;
	top.dh[1] = eb.child;
	top.parent = PARENT_ROOT;
	top.csec = eb.ctime_sec;
	top.cnsec = eb.ctime_nsec;
	top.own = memcmp(da, db, FERRY_HASH_LEN) != 0;
	if (!top.own && child_equal(&ea, &eb))
		goto out; /* one tree */
	if ((r = diff_dirs(&d, &top)) < 0 || (r = match_dirs(&d)) < 0 || (r = report_recs(&d)) < 0)
		goto out;
out:
	for (size_t i = 0; i < d.nrecs; i++)
		free(d.recs[i].path);
	free(d.recs);
	fbuf_release(&d.ap);
	fbuf_release(&d.bp);
	fbuf_release(&d.enc);
	store_reader_free(d.rd);
	return r;
}
