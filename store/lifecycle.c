/* store/lifecycle.c — a dataset's creation (with its missing ancestors
 * and its properties, in one transaction) and its destruction (its
 * descendants, snapshots, bookmarks and block references with it). The
 * catalogue rows themselves are dataset.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

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
	char prel[STORE_NAME_MAX + 1];
	struct store_ds parent, ds;
	int r;
	if ((r = store_name_check(name, STORE_NAME_DATASET)) < 0)
		return r;
	const char *rel = ds_relname(p, name);
	if (!rel)
		return ferry_err(FERR_NAME, "'%s' is not in pool '%s'", name, p->name);
	if ((r = prop_check_create(type, props, nprops)) < 0)
		return r;
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

/* What ds owns besides its row, deleted before it: its bookmarks, its
 * snapshots and their block references (the blocks become garbage for
 * gc). Its properties go with the row (ON DELETE CASCADE). Only a
 * writable open destroys, and it has made every table (cat_schema_snap). */
static int destroy_contents(struct store_pool *p, const struct store_ds *ds)
{
	int r;
	if ((r = cat_exec_i64(p, "DELETE FROM bookmarks WHERE ds_id = ?", ds->id)) < 0 ||
	    (r = cat_exec_i64(p, "DELETE FROM ds_refs WHERE ds_id = ?", ds->id)) < 0 ||
	    (r = census_destroy(p, ds->id)) < 0)
		return r;
	return cat_exec_i64(p, "DELETE FROM snapshots WHERE ds_id = ?", ds->id);
}

/* Deletes ds and its descendants, children first. */
static int destroy_tree(struct store_pool *p, const struct store_ds *ds)
{
	sqlite3_stmt *st = NULL;
	int64_t *ids = NULL;
	size_t n = 0;
	int r;
	if ((r = ds_child_ids(p, ds->id, &ids, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct store_ds child;
		if ((r = ds_load_by_id(p, ids[i], &child)) < 0 || (r = destroy_tree(p, &child)) < 0)
			goto out;
	}
	if ((r = destroy_contents(p, ds)) < 0)
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

