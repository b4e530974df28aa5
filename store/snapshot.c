/* store/snapshot.c — snapshot rows in the catalogue: lookup, listing in
 * creation order, selection (a%b ranges), destroy, rollback, and diff on the
 * Merkle trees (equal subtrees skipped by hash). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SNAP_COLS "id, ds_id, name, guid, createtxg, creation_ns, root, referenced," \
		  " logicalreferenced, written"

static int snap_from_row(struct store_pool *p, sqlite3_stmt *st, const struct store_ds *ds,
			 struct store_snap *s)
{
	struct store_ds own;
	int r;
	memset(s, 0, sizeof *s);
	s->id = sqlite3_column_int64(st, 0);
	s->ds_id = sqlite3_column_int64(st, 1);
	const char *nm = (const char *)sqlite3_column_text(st, 2);
	snprintf(s->snapname, sizeof s->snapname, "%s", nm ? nm : "");
	s->guid = (uint64_t)sqlite3_column_int64(st, 3);
	s->createtxg = (uint64_t)sqlite3_column_int64(st, 4);
	s->creation_ns = (uint64_t)sqlite3_column_int64(st, 5);
	s->creation = (int64_t)(s->creation_ns / 1000000000u);
	if (sqlite3_column_bytes(st, 6) != FERRY_HASH_LEN)
		return ferry_err(FERR_CORRUPT, "snapshot '%s' has a bad root", s->snapname);
	memcpy(s->root, sqlite3_column_blob(st, 6), FERRY_HASH_LEN);
	s->referenced = (uint64_t)sqlite3_column_int64(st, 7);
	s->logicalreferenced = (uint64_t)sqlite3_column_int64(st, 8);
	s->written = (uint64_t)sqlite3_column_int64(st, 9);
	if (!ds || ds->id != s->ds_id) {
		if ((r = ds_load_by_id(p, s->ds_id, &own)) < 0)
			return r;
		ds = &own;
	}
	s->ds_type = ds->type;
	snprintf(s->name, sizeof s->name, "%s@%s", ds->name, s->snapname);
	return 0;
}

static int split_snapname(const char *name, char *ds, size_t n, const char **snap)
{
	const char *at = strchr(name, '@');
	if (!at || (size_t)(at - name) >= n)
		return ferry_err(FERR_NAME, "'%s' is not a snapshot name (DATASET@NAME)", name);
	memcpy(ds, name, (size_t)(at - name));
	ds[at - name] = 0;
	*snap = at + 1;
	return 0;
}

int store_snap_lookup(struct store_pool *p, const char *name, struct store_snap *out)
{
	char dsname[STORE_NAME_MAX + 1];
	const char *sn;
	struct store_ds ds;
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	if ((r = split_snapname(name, dsname, sizeof dsname, &sn)) < 0)
		return r;
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ? AND name = ?",
			     &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds.id);
	sqlite3_bind_text(st, 2, sn, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = snap_from_row(p, st, &ds, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "snapshot '%s' does not exist", name);
	else
		r = cat_err(p, "looking up snapshot");
	sqlite3_finalize(st);
	return r;
}

/* Loads every snapshot of ds (creation order) into a malloc'd array. */
static int snap_load_all(struct store_pool *p, const struct store_ds *ds, struct store_snap **out,
			 size_t *n)
{
	sqlite3_stmt *st = NULL;
	struct store_snap *a = NULL;
	size_t cnt = 0, cap = 0;
	int r, s;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ?"
			       " ORDER BY createtxg", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(a, cap, cnt, 8, "listing snapshots")) < 0)
			goto out;
		if ((r = snap_from_row(p, st, ds, &a[cnt])) < 0)
			goto out;
		cnt++;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing snapshots");
		goto out;
	}
	*out = a;
	*n = cnt;
	a = NULL;
out:
	sqlite3_finalize(st);
	free(a);
	return r;
}

int store_snap_iter(struct store_pool *p, const struct store_ds *ds, store_snap_fn fn, void *arg)
{
	struct store_snap *a = NULL;
	size_t n = 0;
	int r = snap_load_all(p, ds, &a, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++)
		r = fn(p, &a[i], arg);
	free(a);
	return r;
}

int store_snap_newest(struct store_pool *p, const struct store_ds *ds, struct store_snap *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(p, "SELECT " SNAP_COLS " FROM snapshots WHERE ds_id = ?"
			       " ORDER BY createtxg DESC LIMIT 1", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		r = snap_from_row(p, st, ds, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "'%s' has no snapshots", ds->name);
	else
		r = cat_err(p, "looking up snapshots");
	sqlite3_finalize(st);
	return r;
}

void store_snap_to_ds(const struct store_snap *s, struct store_ds *out)
{
	memset(out, 0, sizeof *out);
	out->id = s->id;
	out->parent_id = s->ds_id;
	out->type = STORE_DS_SNAPSHOT;
	snprintf(out->name, sizeof out->name, "%s", s->name);
	out->guid = s->guid;
	out->creation = s->creation;
	out->createtxg = s->createtxg;
}

int store_snap_unique(struct store_pool *p, const struct store_snap *s, uint64_t *used)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM snap_blocks x"
			       " JOIN blocks b ON b.id = x.block_id WHERE x.snap_id = ?1"
			       " AND NOT EXISTS (SELECT 1 FROM snap_blocks y JOIN snapshots o"
			       " ON o.id = y.snap_id WHERE y.block_id = x.block_id"
			       " AND o.ds_id = ?2 AND o.id != ?1)", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, s->id);
	sqlite3_bind_int64(st, 2, s->ds_id);
	if (sqlite3_step(st) == SQLITE_ROW)
		*used = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "computing snapshot space");
	sqlite3_finalize(st);
	return r;
}

/* ---- selection --------------------------------------------------------------------- */

struct sel {
	struct store_snap *v;
	size_t n, cap;
};

static int sel_add(struct sel *s, const struct store_snap *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].id == x->id)
			return 0;
	int grown = VEC_GROW(s->v, s->cap, s->n, 8, "selecting snapshots");
	if (grown < 0)
		return grown;
	s->v[s->n++] = *x;
	return 0;
}

/* Applies spec (after the '@') to one dataset; missing names are errors only
 * when strict. */
static int select_in(struct store_pool *p, const struct store_ds *ds, const char *spec,
		     int strict, struct sel *out)
{
	struct store_snap *all = NULL;
	size_t n = 0;
	char item[STORE_NAME_MAX + 1];
	int r;
	if ((r = snap_load_all(p, ds, &all, &n)) < 0)
		return r;
	const char *q = spec;
	while (*q) {
		size_t len = strcspn(q, ",");
		if (len == 0 || len >= sizeof item) {
			r = ferry_err(FERR_NAME, "invalid snapshot list '%s'", spec);
			goto out;
		}
		memcpy(item, q, len);
		item[len] = 0;
		q += len;
		if (*q == ',')
			q++;
		char *pct = strchr(item, '%');
		if (pct) {
			*pct = 0;
			const char *a = item, *b = pct + 1;
			size_t ia = 0, ib = n ? n - 1 : 0;
			int fa = !*a, fb = !*b;
			for (size_t i = 0; i < n; i++) {
				if (*a && !strcmp(all[i].snapname, a)) {
					ia = i;
					fa = 1;
				}
				if (*b && !strcmp(all[i].snapname, b)) {
					ib = i;
					fb = 1;
				}
			}
			if (!fa || !fb) {
				if (!strict)
					continue;
				r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", ds->name,
					      !fa ? a : b);
				goto out;
			}
			if (ia > ib) {
				r = ferry_err(FERR_INVAL, "'%s%%%s': range runs backwards", a, b);
				goto out;
			}
			for (size_t i = ia; n && i <= ib; i++)
				if ((r = sel_add(out, &all[i])) < 0)
					goto out;
		} else {
			int found = 0;
			for (size_t i = 0; i < n; i++)
				if (!strcmp(all[i].snapname, item)) {
					found = 1;
					if ((r = sel_add(out, &all[i])) < 0)
						goto out;
				}
			if (!found && strict) {
				r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", ds->name,
					      item);
				goto out;
			}
		}
	}
out:
	free(all);
	return r;
}

struct sel_walk {
	const char *spec;
	struct sel *out;
};

static int sel_walk_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct sel_walk *w = arg;
	return select_in(p, ds, w->spec, 0, w->out);
}

int store_snap_select(struct store_pool *p, const char *spec, int recursive,
		      struct store_snap **out, size_t *n)
{
	char dsname[STORE_NAME_MAX + 1];
	const char *sn;
	struct store_ds ds;
	struct sel s = {0};
	int r;
	if ((r = split_snapname(spec, dsname, sizeof dsname, &sn)) < 0)
		return r;
	if (!*sn)
		return ferry_err(FERR_NAME, "'%s': empty snapshot name", spec);
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0)
		return r;
	if ((r = select_in(p, &ds, sn, 1, &s)) < 0)
		goto fail;
	if (recursive) {
		struct sel_walk w = {sn, &s};
		if ((r = store_ds_walk(p, &ds, -1, sel_walk_cb, &w)) < 0)
			goto fail;
	}
	*out = s.v;
	*n = s.n;
	return 0;
fail:
	free(s.v);
	return r;
}

static int fill_sel_table(struct store_pool *p, const struct store_snap *list, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_exec(p, "CREATE TEMP TABLE IF NOT EXISTS sel(id INTEGER PRIMARY KEY);"
			    "DELETE FROM temp.sel;");
	if (r < 0)
		return r;
	if ((r = cat_prepare(p, "INSERT OR IGNORE INTO temp.sel(id) VALUES(?)", &st)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, list[i].id);
		if (sqlite3_step(st) != SQLITE_DONE) {
			r = cat_err(p, "selecting snapshots");
			break;
		}
	}
	sqlite3_finalize(st);
	return r;
}

int store_snap_reclaim(struct store_pool *p, const struct store_snap *list, size_t n,
		       uint64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = fill_sel_table(p, list, n)) < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM (SELECT DISTINCT block_id"
			       " FROM snap_blocks WHERE snap_id IN (SELECT id FROM temp.sel)) x"
			       " JOIN blocks b ON b.id = x.block_id WHERE NOT EXISTS (SELECT 1"
			       " FROM snap_blocks y WHERE y.block_id = x.block_id AND y.snap_id"
			       " NOT IN (SELECT id FROM temp.sel))", &st)) < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		*bytes = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "computing reclaimable space");
	sqlite3_finalize(st);
	return r;
}

int cat_exec_i64(struct store_pool *p, const char *sql, int64_t v)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, v);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "updating the catalogue");
	sqlite3_finalize(st);
	return r;
}

/* Recomputes `written` of every snapshot of dataset ds_id against its
 * predecessor (after a destroy changed who precedes whom). */
static int recompute_written(struct store_pool *p, int64_t ds_id)
{
	sqlite3_stmt *ls = NULL, *sum = NULL, *up = NULL;
	int64_t prev = 0;
	int r;
	if ((r = cat_prepare(p, "SELECT id FROM snapshots WHERE ds_id = ? ORDER BY createtxg", &ls)) < 0 ||
	    (r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM snap_blocks s JOIN blocks b"
			       " ON b.id = s.block_id WHERE s.snap_id = ?1 AND NOT EXISTS (SELECT 1"
			       " FROM snap_blocks o WHERE o.snap_id = ?2 AND o.block_id = s.block_id)",
			     &sum)) < 0 ||
	    (r = cat_prepare(p, "UPDATE snapshots SET written = ? WHERE id = ?", &up)) < 0)
		goto out;
	sqlite3_bind_int64(ls, 1, ds_id);
	int s;
	while ((s = sqlite3_step(ls)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(ls, 0);
		sqlite3_reset(sum);
		sqlite3_bind_int64(sum, 1, id);
		sqlite3_bind_int64(sum, 2, prev);
		if (sqlite3_step(sum) != SQLITE_ROW) {
			r = cat_err(p, "computing written");
			goto out;
		}
		sqlite3_reset(up);
		sqlite3_bind_int64(up, 1, sqlite3_column_int64(sum, 0));
		sqlite3_bind_int64(up, 2, id);
		if (sqlite3_step(up) != SQLITE_DONE) {
			r = cat_err(p, "recording written");
			goto out;
		}
		prev = id;
	}
	if (s != SQLITE_DONE)
		r = cat_err(p, "listing snapshots");
out:
	sqlite3_finalize(ls);
	sqlite3_finalize(sum);
	sqlite3_finalize(up);
	return r;
}

int store_snap_destroy(struct store_pool *p, const struct store_snap *list, size_t n)
{
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		if ((r = cat_exec_i64(p, "DELETE FROM snap_blocks WHERE snap_id = ?", list[i].id)) < 0 ||
		    (r = cat_exec_i64(p, "DELETE FROM snapshots WHERE id = ?", list[i].id)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			if (list[j].ds_id == list[i].ds_id)
				seen = 1;
		if (!seen && (r = recompute_written(p, list[i].ds_id)) < 0)
			goto fail;
	}
	return store_tx_commit(p);
fail:
	store_tx_rollback(p);
	return r;
}

int store_snap_rollback(struct store_pool *p, const struct store_snap *s, int recursive)
{
	struct store_ds ds;
	struct store_snap *all = NULL;
	size_t n = 0, k;
	int r;
	if ((r = ds_load_by_id(p, s->ds_id, &ds)) < 0)
		return r;
	if ((r = snap_load_all(p, &ds, &all, &n)) < 0)
		return r;
	for (k = 0; k < n && all[k].id != s->id; k++)
		;
	if (k == n) {
		r = ferry_err(FERR_NOENT, "snapshot '%s' does not exist", s->name);
		goto out;
	}
	if (k + 1 < n && !recursive) {
		r = ferry_err(FERR_EXISTS, "more recent snapshots exist (%s); use -r to destroy "
			      "them", all[k + 1].name);
		goto out;
	}
	/* bookmarks of later snapshots count as later too (zfs rollback) */
	char mark[STORE_NAME_MAX + 1] = "";
	sqlite3_stmt *st = NULL;
	if ((r = cat_prepare(p, "SELECT name FROM bookmarks WHERE ds_id = ? AND createtxg > ?"
			       " ORDER BY createtxg, name LIMIT 1", &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, ds.id);
	sqlite3_bind_int64(st, 2, (int64_t)s->createtxg);
	int sr = sqlite3_step(st);
	if (sr == SQLITE_ROW)
		snprintf(mark, sizeof mark, "%s", (const char *)sqlite3_column_text(st, 0));
	else if (sr != SQLITE_DONE)
		r = cat_err(p, "looking up bookmarks");
	sqlite3_finalize(st);
	if (r < 0)
		goto out;
	if (mark[0] && !recursive) {
		r = ferry_err(FERR_EXISTS, "more recent bookmarks exist (%s#%s); use -r to destroy "
			      "them", ds.name, mark);
		goto out;
	}
	if (k + 1 == n && !mark[0])
		goto out;
	if ((r = store_tx_begin(p)) < 0)
		goto out;
	if (k + 1 < n && (r = store_snap_destroy(p, all + k + 1, n - k - 1)) < 0) {
		store_tx_rollback(p);
		goto out;
	}
	if (mark[0]) {
		if ((r = cat_prepare(p, "DELETE FROM bookmarks WHERE ds_id = ? AND createtxg > ?",
				     &st)) < 0) {
			store_tx_rollback(p);
			goto out;
		}
		sqlite3_bind_int64(st, 1, ds.id);
		sqlite3_bind_int64(st, 2, (int64_t)s->createtxg);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(p, "destroying bookmarks");
		sqlite3_finalize(st);
		if (r < 0) {
			store_tx_rollback(p);
			goto out;
		}
	}
	r = store_tx_commit(p);
out:
	free(all);
	return r;
}

/* ---- diff ------------------------------------------------------------------------ */

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

/* Reports every entry below dir (type, hash) with change c. */
static int diff_all(struct diff *d, char c, int type, const uint8_t *hash)
{
	struct node_dir dir;
	int r;
	if ((r = node_dir_load(rd_node, d->rd, type, hash, &dir)) < 0)
		return r;
	for (size_t i = 0; i < dir.n && r == 0; i++) {
		size_t saved;
		const struct node_entry *e = &dir.ents[i];
		if ((r = path_push(&d->path, e->name, e->name_len, &saved)) < 0)
			break;
		r = d->fn(d->arg, c, ftype_char(e->ftype), (const char *)d->path.data, d->path.len,
			  NULL, 0);
		if (r == 0 && e->ftype == NODE_F_DIR)
			r = diff_all(d, c, e->child_type, e->child);
		d->path.len = saved;
	}
	node_dir_release(&dir);
	return r;
}

static int diff_dirs(struct diff *d, int ta, const uint8_t *ha, int tb, const uint8_t *hb,
		     int collect)
{
	struct node_dir A, B;
	int r;
	if (ta == tb && !memcmp(ha, hb, FERRY_HASH_LEN))
		return 0;
	if ((r = node_dir_load(rd_node, d->rd, ta, ha, &A)) < 0)
		return r;
	if ((r = node_dir_load(rd_node, d->rd, tb, hb, &B)) < 0) {
		node_dir_release(&A);
		return r;
	}
	size_t i = 0, j = 0;
	while (r == 0 && (i < A.n || j < B.n)) {
		int c;
		if (i == A.n)
			c = 1;
		else if (j == B.n)
			c = -1;
		else {
			const struct node_entry *x = &A.ents[i], *y = &B.ents[j];
			size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
			c = memcmp(x->name, y->name, m);
			if (!c)
				c = x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
		}
		size_t saved;
		if (c < 0) {
			const struct node_entry *x = &A.ents[i++];
			if ((r = path_push(&d->path, x->name, x->name_len, &saved)) < 0)
				break;
			r = collect ? push_item(d, 0, x)
				    : d->fn(d->arg, '-', ftype_char(x->ftype),
					    (const char *)d->path.data, d->path.len, NULL, 0);
			if (r == 0 && !collect && x->ftype == NODE_F_DIR)
				r = diff_all(d, '-', x->child_type, x->child);
		} else if (c > 0) {
			const struct node_entry *y = &B.ents[j++];
			if ((r = path_push(&d->path, y->name, y->name_len, &saved)) < 0)
				break;
			r = collect ? push_item(d, 1, y)
				    : d->fn(d->arg, '+', ftype_char(y->ftype),
					    (const char *)d->path.data, d->path.len, NULL, 0);
			if (r == 0 && !collect && y->ftype == NODE_F_DIR)
				r = diff_all(d, '+', y->child_type, y->child);
		} else {
			const struct node_entry *x = &A.ents[i++], *y = &B.ents[j++];
			if ((r = path_push(&d->path, x->name, x->name_len, &saved)) < 0)
				break;
			if (x->ftype != y->ftype) {
				r = d->fn(d->arg, '-', ftype_char(x->ftype), (const char *)d->path.data,
					  d->path.len, NULL, 0);
				if (r == 0 && x->ftype == NODE_F_DIR)
					r = diff_all(d, '-', x->child_type, x->child);
				if (r == 0)
					r = d->fn(d->arg, '+', ftype_char(y->ftype),
						  (const char *)d->path.data, d->path.len, NULL, 0);
				if (r == 0 && y->ftype == NODE_F_DIR)
					r = diff_all(d, '+', y->child_type, y->child);
			} else {
				int dirchg = x->ftype == NODE_F_DIR &&
					     (x->child_type != y->child_type ||
					      memcmp(x->child, y->child, FERRY_HASH_LEN));
				if (!entries_equal(x, y) || dirchg)
					r = d->fn(d->arg, 'M', ftype_char(x->ftype),
						  (const char *)d->path.data, d->path.len, NULL, 0);
				if (r == 0 && dirchg)
					r = diff_dirs(d, x->child_type, x->child, y->child_type,
						      y->child, collect);
			}
		}
		d->path.len = saved;
	}
	node_dir_release(&A);
	node_dir_release(&B);
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
	fbuf_init(&d.path, 1 << 20);
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
