/* store/dataset.c — filesystems and volumes in the catalogue. Names are
 * stored relative to the pool ("" is the root dataset) so a pool imported
 * under another name keeps its datasets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

const char *store_ds_type_name(int type)
{
	switch (type) {
	case STORE_DS_FILESYSTEM: return "filesystem";
	case STORE_DS_VOLUME: return "volume";
	case STORE_DS_SNAPSHOT: return "snapshot";
	case STORE_DS_BOOKMARK: return "bookmark";
	default: return "unknown";
	}
}

const char *ds_relname(const struct store_pool *p, const char *full)
{
	size_t n = strlen(p->name);
	if (strncmp(full, p->name, n) != 0)
		return NULL;
	if (full[n] == 0)
		return "";
	if (full[n] != '/')
		return NULL;
	return full + n + 1;
}

void ds_fullname(const struct store_pool *p, const char *rel, char *out, size_t n)
{
	if (*rel)
		snprintf(out, n, "%s/%s", p->name, rel);
	else
		snprintf(out, n, "%s", p->name);
}

static void ds_from_row(struct store_pool *p, sqlite3_stmt *st, struct store_ds *d)
{
	memset(d, 0, sizeof *d);
	d->id = sqlite3_column_int64(st, 0);
	d->parent_id = sqlite3_column_int64(st, 1);
	const char *rel = (const char *)sqlite3_column_text(st, 2);
	ds_fullname(p, rel ? rel : "", d->name, sizeof d->name);
	d->type = sqlite3_column_int(st, 3);
	d->guid = (uint64_t)sqlite3_column_int64(st, 4);
	d->creation = sqlite3_column_int64(st, 5);
	d->createtxg = (uint64_t)sqlite3_column_int64(st, 6);
}

#define DS_COLS "id, coalesce(parent_id, 0), name, type, guid, creation, createtxg"

int ds_load_by_id(struct store_pool *p, int64_t id, struct store_ds *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT " DS_COLS " FROM datasets WHERE id = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		ds_from_row(p, st, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "dataset #%lld does not exist", (long long)id);
	else
		r = cat_err(p, "reading dataset");
	sqlite3_finalize(st);
	return r;
}

int store_ds_lookup(struct store_pool *p, const char *name, struct store_ds *out)
{
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = store_name_check(name, STORE_NAME_DATASET)) < 0)
		return r;
	const char *rel = ds_relname(p, name);
	if (!rel)
		return ferry_err(FERR_NOENT, "dataset '%s' is not in pool '%s'", name, p->name);
	if ((r = cat_prepare(p, "SELECT " DS_COLS " FROM datasets WHERE name = ?", &st)) < 0)
		return r;
	sqlite3_bind_text(st, 1, rel, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		ds_from_row(p, st, out);
	else if (s == SQLITE_DONE)
		r = ferry_err(FERR_NOENT, "dataset does not exist");
	else
		r = cat_err(p, "looking up dataset");
	sqlite3_finalize(st);
	return r;
}

/* Inserts one dataset row under parent_id (0: the root). */
static int ds_insert(struct store_pool *p, const char *rel, int64_t parent_id, int type,
		     int64_t *id_out)
{
	sqlite3_stmt *st = NULL;
	uint64_t txg;
	int r;
	if ((r = cat_next_txg(p, &txg)) < 0)
		return r;
	if ((r = cat_prepare(p, "INSERT INTO datasets(parent_id, name, type, guid, creation, createtxg)"
				" VALUES(?, ?, ?, ?, ?, ?)", &st)) < 0)
		return r;
	if (parent_id)
		sqlite3_bind_int64(st, 1, parent_id);
	else
		sqlite3_bind_null(st, 1);
	sqlite3_bind_text(st, 2, rel, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, type);
	sqlite3_bind_int64(st, 4, (int64_t)ferry_random_guid());
	sqlite3_bind_int64(st, 5, (int64_t)(ferry_now_ns() / 1000000000u));
	sqlite3_bind_int64(st, 6, (int64_t)txg);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "creating dataset");
	else
		*id_out = sqlite3_last_insert_rowid(p->db);
	sqlite3_finalize(st);
	return r;
}

int store_ds_create(struct store_pool *p, const char *name, int type, int parents,
		    const struct store_propset *props, size_t nprops)
{
	char canon[STORE_USERPROP_VALUE_MAX + 1], prel[STORE_NAME_MAX + 1];
	struct store_ds parent, ds;
	int r, have_volsize = 0;
	if ((r = store_name_check(name, STORE_NAME_DATASET)) < 0)
		return r;
	const char *rel = ds_relname(p, name);
	if (!rel)
		return ferry_err(FERR_NAME, "'%s' is not in pool '%s'", name, p->name);
	for (size_t i = 0; i < nprops; i++) {
		if ((r = store_prop_validate(props[i].name, props[i].value, type, 1, canon,
					     sizeof canon)) < 0)
			return r;
		if (!strcmp(props[i].name, "volsize"))
			have_volsize = 1;
	}
	if (type == STORE_DS_VOLUME && !have_volsize)
		return ferry_err(FERR_PROP, "a volume needs a size (-V SIZE)");
	if (type == STORE_DS_VOLUME) {
		uint64_t vs = 0, vb = 16384;
		for (size_t i = 0; i < nprops; i++) {
			if (!strcmp(props[i].name, "volsize") && parse_size(props[i].value, &vs) < 0)
				return ferry_err(FERR_PROP, "bad volsize '%s'", props[i].value);
			if (!strcmp(props[i].name, "volblocksize") &&
			    parse_size(props[i].value, &vb) < 0)
				return ferry_err(FERR_PROP, "bad volblocksize '%s'", props[i].value);
		}
		if (vb == 0 || vs % vb != 0)
			return ferry_err(FERR_PROP, "volsize must be a multiple of volblocksize");
	}
	if (store_ds_lookup(p, name, &ds) == 0)
		return ferry_err(FERR_EXISTS, "dataset already exists");
	ferry_err_clear();
	if ((r = store_tx_begin(p)) < 0)
		return r;
	int64_t parent_id = 0, id = 0;
	if (*rel) {
		/* Walk the ancestors from the pool down, creating them with -p. */
		const char *q = rel;
		parent_id = 0;
		struct store_ds root;
		if ((r = store_ds_lookup(p, p->name, &root)) < 0)
			goto fail;
		parent = root;
		parent_id = root.id;
		for (;;) {
			const char *slash = strchr(q, '/');
			if (!slash)
				break;
			size_t n = (size_t)(slash - rel);
			memcpy(prel, rel, n);
			prel[n] = 0;
			char full[STORE_NAME_MAX + 1];
			ds_fullname(p, prel, full, sizeof full);
			r = store_ds_lookup(p, full, &parent);
			if (r == -FERR_NOENT) {
				if (!parents) {
					r = ferry_err(FERR_NOENT, "parent '%s' does not exist", full);
					goto fail;
				}
				if ((r = ds_insert(p, prel, parent_id, STORE_DS_FILESYSTEM, &id)) < 0 ||
				    (r = ds_load_by_id(p, id, &parent)) < 0)
					goto fail;
			} else if (r < 0) {
				goto fail;
			}
			if (parent.type != STORE_DS_FILESYSTEM) {
				r = ferry_err(FERR_INVAL, "parent '%s' is a %s, not a filesystem", full,
					      store_ds_type_name(parent.type));
				goto fail;
			}
			parent_id = parent.id;
			q = slash + 1;
		}
		ferry_err_clear();
	}
	if ((r = ds_insert(p, rel, parent_id, type, &id)) < 0)
		goto fail;
	if ((r = ds_load_by_id(p, id, &ds)) < 0)
		goto fail;
	if (nprops && (r = prop_set(p, &ds, props, nprops, STORE_SRC_LOCAL, 1)) < 0)
		goto fail;
	return store_tx_commit(p);
fail:
	store_tx_rollback(p);
	return r;
}

/* Children are child datasets and snapshots, as zfs counts them. */
static int count_children(struct store_pool *p, int64_t id, int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT (SELECT count(*) FROM datasets WHERE parent_id = ?1)"
			       " + (SELECT count(*) FROM snapshots WHERE ds_id = ?1)", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "counting children");
	sqlite3_finalize(st);
	return r;
}

/* The ids of ds's child datasets, by name, into a malloc'd array. */
static int child_ids(struct store_pool *p, int64_t id, int64_t **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	int64_t *ids = NULL;
	size_t cnt = 0, cap = 0;
	int r, s;
	if ((r = cat_prepare(p, "SELECT id FROM datasets WHERE parent_id = ? ORDER BY name", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(ids, cap, cnt, 16, "listing child datasets")) < 0)
			goto out;
		ids[cnt++] = sqlite3_column_int64(st, 0);
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing child datasets");
		goto out;
	}
	*out = ids;
	*n = cnt;
	ids = NULL;
out:
	sqlite3_finalize(st);
	free(ids);
	return r;
}

/* Deletes ds and its descendants, children first. */
static int destroy_tree(struct store_pool *p, const struct store_ds *ds)
{
	sqlite3_stmt *st = NULL;
	int64_t *ids = NULL;
	size_t n = 0;
	int r;
	if ((r = child_ids(p, ds->id, &ids, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct store_ds child;
		if ((r = ds_load_by_id(p, ids[i], &child)) < 0 || (r = destroy_tree(p, &child)) < 0)
			goto out;
	}
	if ((r = ds_destroy_contents(p, ds)) < 0)
		goto out;
	if ((r = cat_prepare(p, "DELETE FROM datasets WHERE id = ?", &st)) < 0)
		goto out;
	sqlite3_bind_int64(st, 1, ds->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "destroying dataset");
out:
	sqlite3_finalize(st);
	free(ids);
	return r;
}

int store_ds_destroy_check(struct store_pool *p, const char *name, int recursive)
{
	struct store_ds ds;
	int64_t nchild = 0;
	int r;
	if ((r = store_ds_lookup(p, name, &ds)) < 0)
		return r;
	if (ds.parent_id == 0)
		return ferry_err(FERR_INVAL, "the root dataset can only go with its pool");
	if ((r = count_children(p, ds.id, &nchild)) < 0)
		return r;
	if (nchild > 0 && !recursive)
		return ferry_err(FERR_BUSY, "%s has children or snapshots (use -r to destroy them too)",
				 store_ds_type_name(ds.type));
	return hold_check_tree(p, &ds);
}

int store_ds_destroy(struct store_pool *p, const char *name, int recursive)
{
	struct store_ds ds;
	int r;
	if ((r = store_ds_destroy_check(p, name, recursive)) < 0 ||
	    (r = store_ds_lookup(p, name, &ds)) < 0)
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = destroy_tree(p, &ds)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

int store_ds_walk(struct store_pool *p, const struct store_ds *ds, int depth,
		  store_ds_fn fn, void *arg)
{
	int64_t *ids = NULL;
	size_t n = 0;
	int r = fn(p, ds, arg);
	if (r != 0 || depth == 0)
		return r;
	if ((r = child_ids(p, ds->id, &ids, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct store_ds child;
		if ((r = ds_load_by_id(p, ids[i], &child)) < 0)
			break;
		if ((r = store_ds_walk(p, &child, depth < 0 ? -1 : depth - 1, fn, arg)) != 0)
			break;
	}
	free(ids);
	return r;
}
