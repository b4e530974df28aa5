/* store/dataset.c — filesystems and volumes in the catalogue: their rows,
 * names, lookups and walks (their creation and destruction are in
 * lifecycle.c). Names are stored relative to the pool ("" is the root
 * dataset) so a pool imported under another name keeps its datasets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int ds_child_ids(struct store_pool *p, int64_t id, int64_t **out, size_t *n)
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

int store_ds_walk(struct store_pool *p, const struct store_ds *ds, int depth,
		  store_ds_fn fn, void *arg)
{
	int64_t *ids = NULL;
	size_t n = 0;
	int r = fn(p, ds, arg);
	if (r != 0 || depth == 0)
		return r;
	if ((r = ds_child_ids(p, ds->id, &ids, &n)) < 0)
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
