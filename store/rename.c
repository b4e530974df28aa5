/* store/rename.c — zfs rename: a dataset moved to another name (and
 * parent) inside its pool, its descendants with it; a snapshot renamed
 * inside its dataset, with -r in every descendant that has it.
 *
 * Every table but two names a dataset by its row id (snapshots,
 * bookmarks, props, holds, defer_destroy through the snapshot), so a
 * rename is one UPDATE of the names of the subtree's rows and of the
 * moved row's parent: guids, creation, holds, bookmarks, properties stay
 * as they were, so incrementals from and to a renamed dataset or
 * snapshot still match by guid. The two that name it by its full name
 * are the partial receives (recv_partial*): a dataset with one in its
 * subtree, or a name the subtree would take over that has one, is
 * refused rather than moved with or onto a token that names another
 * dataset. All of it is one catalogue transaction. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* SQL for "the dataset rows named ?1 or below it" (relative names). */
#define SUBTREE(col) "(" col " = ?1 OR substr(" col ", 1, length(?1) + 1) = ?1 || '/')"

/* 1 with the first such name in out when a partial receive is kept under
 * full name ds or under one of its descendants' names, 0 when none. */
static int partial_under(struct store_pool *p, const char *ds, char *out, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT ds FROM recv_partial WHERE " SUBTREE("ds")
			       " ORDER BY ds LIMIT 1", &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, ds, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
		r = 1;
	} else if (s != SQLITE_DONE) {
		r = cat_err(p, "looking up partial receives");
	}
	sqlite3_finalize(st);
	return r;
}

/* The longest full name (dataset, snapshot or bookmark) in the subtree
 * of relative name rel, in bytes, with the pool's name and rel's length
 * taken out: what the subtree's names grow by with a new rel is then
 * added by the caller. */
static int subtree_longest(struct store_pool *p, const char *rel, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p,
		"SELECT max(coalesce((SELECT max(length(CAST(name AS BLOB))) FROM datasets"
		"   WHERE " SUBTREE("name") "), 0),"
		" coalesce((SELECT max(length(CAST(d.name AS BLOB)) + 1 + length(CAST(s.name AS BLOB)))"
		"   FROM snapshots s JOIN datasets d ON d.id = s.ds_id WHERE " SUBTREE("d.name") "), 0),"
		" coalesce((SELECT max(length(CAST(d.name AS BLOB)) + 1 + length(CAST(b.name AS BLOB)))"
		"   FROM bookmarks b JOIN datasets d ON d.id = b.ds_id WHERE " SUBTREE("d.name") "), 0))",
		&st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, rel, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0) - (int64_t)strlen(rel);
	else
		r = cat_err(p, "measuring names");
	sqlite3_finalize(st);
	return r;
}

/* zfs's quota rule for a move (dsl_dir_transfer_possible): every new
 * ancestor of ds that was not one before must have room under its quota
 * for what ds's subtree uses. Runs after the move, so each ancestor's
 * used already counts it. */
static int quota_after_move(struct store_pool *p, const struct store_ds *moved,
			    const char *old_rel)
{
	struct store_ds cur;
	struct store_propval *v = malloc(sizeof *v);
	struct store_space sp;
	int r;
	if (!v)
		return ferry_err(FERR_NOMEM, "checking quotas");
	if ((r = ds_load_by_id(p, moved->parent_id, &cur)) < 0)
		goto out;
	for (;;) {
		const char *rel = ds_relname(p, cur.name);
		size_t n = rel ? strlen(rel) : 0;
		/* an ancestor of the old place too: its figures did not change */
		if (!rel || !*rel || (!strncmp(old_rel, rel, n) && old_rel[n] == '/'))
			break;
		if ((r = store_prop_get(p, &cur, "quota", v)) < 0)
			goto out;
		uint64_t q = strtoull(v->exact, NULL, 10);
		if (q) {
			if ((r = store_ds_space(p, &cur, &sp)) < 0)
				goto out;
			if (sp.used > q) {
				char u[32], l[32];
				format_nicenum(sp.used, u, sizeof u, 1);
				format_nicenum(q, l, sizeof l, 1);
				r = ferry_err(FERR_QUOTA, "quota exceeded: '%s' would use %s, over its "
					      "quota of %s", cur.name, u, l);
				goto out;
			}
		}
		if (cur.parent_id == 0)
			break;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			goto out;
	}
out:
	free(v);
	return r;
}

/* The new parent of to (full name) into *parent: looked up, or with
 * parents created as a filesystem with its own missing ancestors. */
static int rename_parent(struct store_pool *p, const char *to, int parents,
			 struct store_ds *parent)
{
	char pname[STORE_NAME_MAX + 1];
	const char *slash = strrchr(to, '/');
	int r;
	snprintf(pname, sizeof pname, "%.*s", (int)(slash - to), to);
	r = store_ds_lookup(p, pname, parent);
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		if (!parents)
			return ferry_err(FERR_NOENT, "parent '%s' does not exist (-p creates it)",
					 pname);
		if ((r = store_ds_create(p, pname, STORE_DS_FILESYSTEM, 1, NULL, 0)) < 0 ||
		    (r = store_ds_lookup(p, pname, parent)) < 0)
			return r;
	} else if (r < 0) {
		return r;
	}
	if (parent->type != STORE_DS_FILESYSTEM)
		return ferry_err(FERR_INVAL, "parent '%s' is a %s, not a filesystem", pname,
				 store_ds_type_name(parent->type));
	return 0;
}

/* The checks of a dataset rename that need no catalogue. */
static int rename_names(struct store_pool *p, const char *from, const char *to,
			const char **frel, const char **trel)
{
	int r;
	if ((r = store_name_check(from, STORE_NAME_DATASET)) < 0)
		return r;
	if ((r = store_name_check(to, STORE_NAME_DATASET)) < 0)
		return ferry_err(-r, "'%s': %s", to, ferry_errmsg(r));
	if (!(*frel = ds_relname(p, from)))
		return ferry_err(FERR_NOENT, "dataset '%s' is not in pool '%s'", from, p->name);
	if (!**frel)
		return ferry_err(FERR_INVAL, "a pool's root dataset cannot be renamed (import the "
				 "pool under another name)");
	if (!(*trel = ds_relname(p, to)))
		return ferry_err(FERR_INVAL, "'%s' is not in pool '%s': datasets must be within "
				 "same pool", to, p->name);
	if (!**trel)
		return ferry_err(FERR_EXISTS, "'%s' exists: it is the pool's root dataset", to);
	size_t n = strlen(*frel);
	if (!strncmp(*trel, *frel, n) && (*trel)[n] == '/')
		return ferry_err(FERR_INVAL, "'%s' is inside '%s': a dataset cannot move into its "
				 "own descendant", to, from);
	return 0;
}

static int rename_update(struct store_pool *p, const struct store_ds *ds, const char *frel,
			 const char *trel, int64_t parent_id)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "UPDATE datasets SET name = ?2 || substr(name, length(?1) + 1)"
			       " WHERE " SUBTREE("name"), &st);
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, frel, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, trel, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "renaming datasets");
	sqlite3_finalize(st);
	if (r < 0)
		return r;
	if ((r = cat_prepare(p, "UPDATE datasets SET parent_id = ? WHERE id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, parent_id);
	sqlite3_bind_int64(st, 2, ds->id);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "moving a dataset");
	sqlite3_finalize(st);
	return r;
}

/* The rename's checks and rows, inside its transaction. */
static int rename_in_tx(struct store_pool *p, const char *from, const char *to, int parents,
			const char *frel, const char *trel)
{
	char part[STORE_NAME_MAX + 1];
	struct store_ds ds, parent, other;
	int64_t longest = 0;
	int r;
	if ((r = store_ds_lookup(p, from, &ds)) < 0)
		return r;
	if ((r = store_ds_lookup(p, to, &other)) == 0)
		return ferry_err(FERR_EXISTS, "dataset '%s' already exists", to);
	if (r != -FERR_NOENT)
		return r;
	ferry_err_clear();
	if ((r = partial_under(p, from, part, sizeof part)) != 0 ||
	    (r = partial_under(p, to, part, sizeof part)) != 0)
		return r < 0 ? r : ferry_err(FERR_BUSY, "'%s' holds a partial receive: resume it "
					     "(ferry send -t TOKEN, see receive_resume_token) or "
					     "discard it (ferry recv -A %s)", part, part);
	if ((r = subtree_longest(p, frel, &longest)) < 0)
		return r;
	if (strlen(p->name) + 1 + (size_t)longest + strlen(trel) > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "a name under '%s' would be longer than %d characters",
				 to, STORE_NAME_MAX);
	if ((r = rename_parent(p, to, parents, &parent)) < 0 ||
	    (r = rename_update(p, &ds, frel, trel, parent.id)) < 0 ||
	    (r = ds_load_by_id(p, ds.id, &ds)) < 0)
		return r;
	return quota_after_move(p, &ds, frel);
}

int store_ds_rename_held(struct store_pool *p, const char *from, const char *to)
{
	const char *frel = NULL, *trel = NULL;
	int r;
	if ((r = rename_names(p, from, to, &frel, &trel)) < 0 || (r = store_tx_begin(p)) < 0)
		return r;
	if ((r = rename_in_tx(p, from, to, 0, frel, trel)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

int store_ds_rename(struct store_pool *p, const char *from, const char *to, int parents)
{
	const char *frel = NULL, *trel = NULL;
	struct store_ds ds;
	int r, lock = -1;
	if ((r = rename_names(p, from, to, &frel, &trel)) < 0)
		return r;
	if (!strcmp(from, to)) /* zfs: nothing to do, and no error */
		return store_ds_lookup(p, from, &ds);
	/* No capture, receive, send or restore may run meanwhile (each holds
	 * the gc lock shared from its start to its end, and one that looked
	 * the dataset up by its old name would go on under the new one): a
	 * busy pool says who uses it, as gc does. One that starts during the
	 * rename waits for it, and its commit refuses a dataset renamed
	 * since its lookup (commit.c). */
	act_begin(p);
	if ((r = pack_lock(p, 1, &lock)) < 0 || (r = store_tx_begin(p)) < 0)
		goto out;
	if ((r = rename_in_tx(p, from, to, parents, frel, trel)) < 0)
		store_tx_rollback(p);
	else
		r = store_tx_commit(p);
out:
	if (lock >= 0)
		close(lock);
	act_end(p);
	return r;
}

/* ---- snapshots ------------------------------------------------------------------------ */

struct snap_ren {
	const char *oldname, *newname; /* after the '@' */
	int renamed;
};

/* Renames ds@oldname to ds@newname when ds has it (-r skips a dataset
 * that does not, as zfs does). */
static int snap_ren_one(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct snap_ren *a = arg;
	char full[2 * STORE_NAME_MAX + 2];
	sqlite3_stmt *st = NULL;
	int64_t id = 0;
	int r = cat_prepare(p, "SELECT id FROM snapshots WHERE ds_id = ? AND name = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, a->oldname, -1, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	else if (s != SQLITE_DONE)
		r = cat_err(p, "looking up a snapshot");
	sqlite3_finalize(st);
	if (r < 0 || !id)
		return r;
	snprintf(full, sizeof full, "%s@%s", ds->name, a->newname);
	if (strlen(full) > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "'%s' would be longer than %d characters", full,
				 STORE_NAME_MAX);
	if ((r = snap_name_free(p, ds, a->newname, full)) < 0)
		return r;
	if ((r = cat_prepare(p, "UPDATE snapshots SET name = ? WHERE id = ?", &st)) < 0)
		return r;
	sqlite3_bind_text(st, 1, a->newname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "renaming a snapshot");
	sqlite3_finalize(st);
	a->renamed++;
	return r;
}

int store_snap_rename(struct store_pool *p, const char *from, const char *newname, int recursive)
{
	char dsname[STORE_NAME_MAX + 1], full[2 * STORE_NAME_MAX + 2];
	struct store_snap s;
	struct store_ds ds;
	int r;
	if ((r = store_name_check(from, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	const char *at = strchr(from, '@');
	snprintf(dsname, sizeof dsname, "%.*s", (int)(at - from), from);
	snprintf(full, sizeof full, "%s@%s", dsname, newname);
	if (!*newname || strchr(newname, '@') || strchr(newname, '/'))
		return ferry_err(FERR_NAME, "'%s' is not a snapshot name", newname);
	if ((r = store_name_check(full, STORE_NAME_SNAPSHOT)) < 0)
		return ferry_err(-r, "'%s': %s", full, ferry_errmsg(r));
	if ((r = store_snap_lookup(p, from, &s)) < 0)
		return r;
	if (!strcmp(at + 1, newname))
		return 0;
	struct snap_ren a = {at + 1, newname, 0};
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0 ||
	    (r = store_ds_walk(p, &ds, recursive ? -1 : 0, snap_ren_one, &a)) < 0)
		goto fail;
	if (!a.renamed) { /* destroyed since the lookup */
		r = ferry_err(FERR_NOENT, "snapshot '%s' does not exist", from);
		goto fail;
	}
	return store_tx_commit(p);
fail:
	store_tx_rollback(p);
	return r;
}
