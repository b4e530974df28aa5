/* store/prop.c — the values of native and user properties with zfs
 * semantics, under the rules of proprules.c: a value is local, received,
 * inherited from the nearest ancestor that has one, or the default;
 * read-only figures have no source. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "internal.h"

/* The stored value of name on dataset id with the given source. Returns 1
 * and fills buf when present, 0 when absent. */
static int stored_value(struct store_pool *p, int64_t id, const char *name, int source,
			char *buf, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT value FROM props WHERE ds_id = ? AND name = ? AND source = ?",
			    &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, source);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		snprintf(buf, n, "%s", (const char *)sqlite3_column_text(st, 0));
		r = 1;
	} else if (s == SQLITE_DONE) {
		r = 0;
	} else {
		r = cat_err(p, "reading property");
	}
	sqlite3_finalize(st);
	return r;
}

/* Resolves a settable property: local, received, inherited, default. */
static int resolve(struct store_pool *p, const struct store_ds *ds, const char *name,
		   int inherit, const char *def, struct store_propval *out)
{
	struct store_ds cur = *ds;
	int r;
	for (int first = 1;; first = 0) {
		if ((r = stored_value(p, cur.id, name, STORE_SRC_LOCAL, out->exact,
				      sizeof out->exact)) < 0)
			return r;
		if (r == 0 && (r = stored_value(p, cur.id, name, STORE_SRC_RECEIVED, out->exact,
						sizeof out->exact)) < 0)
			return r;
		if (r == 1) {
			if (first) {
				int rr = stored_value(p, cur.id, name, STORE_SRC_LOCAL, out->value,
						      sizeof out->value);
				out->source = rr == 1 ? STORE_SRC_LOCAL : STORE_SRC_RECEIVED;
			} else {
				out->source = STORE_SRC_INHERITED;
				snprintf(out->inherited_from, sizeof out->inherited_from, "%s", cur.name);
			}
			return 0;
		}
		if (!inherit || cur.parent_id == 0)
			break;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			return r;
	}
	if (def) {
		snprintf(out->exact, sizeof out->exact, "%s", def);
		out->source = STORE_SRC_DEFAULT;
	} else {
		snprintf(out->exact, sizeof out->exact, "-");
		out->source = STORE_SRC_NONE;
	}
	return 0;
}

static void set_num(struct store_propval *out, uint64_t v, int bytes)
{
	snprintf(out->exact, sizeof out->exact, "%" PRIu64, v);
	format_nicenum(v, out->value, sizeof out->value, bytes);
	out->numeric = 1;
}

/* ds's space figures, from the memo m when it holds ds's */
static int space_of(struct store_pool *p, const struct store_ds *ds, struct store_prop_memo *m,
		    struct store_space *sp)
{
	if (m && m->have && m->id == ds->id && m->type == ds->type) {
		*sp = m->sp;
		return 0;
	}
	int r = store_ds_space(p, ds, sp);
	if (r == 0 && m)
		*m = (struct store_prop_memo){.id = ds->id, .type = ds->type, .have = 1, .sp = *sp};
	return r;
}

static int readonly_value(struct store_pool *p, const struct store_ds *ds,
			  const struct prop_def *d, struct store_propval *out,
			  struct store_prop_memo *m)
{
	struct store_space sp;
	int r;
	out->source = STORE_SRC_NONE;
	if (!strcmp(d->name, "type")) {
		snprintf(out->exact, sizeof out->exact, "%s", store_ds_type_name(ds->type));
	} else if (!strcmp(d->name, "name")) {
		snprintf(out->exact, sizeof out->exact, "%s", ds->name);
	} else if (!strcmp(d->name, "creation")) {
		time_t t = (time_t)ds->creation;
		struct tm tm;
		snprintf(out->exact, sizeof out->exact, "%lld", (long long)ds->creation);
		localtime_r(&t, &tm);
		strftime(out->value, sizeof out->value, "%a %b %e %k:%M %Y", &tm);
		out->numeric = 1;
		return 0;
	} else if (!strcmp(d->name, "receive_resume_token")) {
		struct store_partial pt;
		r = store_partial_get(p, ds->name, &pt);
		if (r == -FERR_NOENT)
			ferry_err_clear();
		else if (r < 0)
			return r;
		snprintf(out->exact, sizeof out->exact, "%s", r == 0 ? pt.token : "-");
	} else if (!strcmp(d->name, "userrefs")) {
		uint64_t n = 0;
		if ((r = store_hold_count(p, ds->id, &n)) < 0)
			return r;
		snprintf(out->exact, sizeof out->exact, "%" PRIu64, n);
		out->numeric = 1;
	} else if (!strcmp(d->name, "defer_destroy")) {
		if ((r = store_snap_deferred(p, ds->id)) < 0)
			return r;
		snprintf(out->exact, sizeof out->exact, "%s", r ? "on" : "off");
	} else if (!strcmp(d->name, "guid")) {
		snprintf(out->exact, sizeof out->exact, "%" PRIu64, ds->guid);
		out->numeric = 1;
	} else if (!strcmp(d->name, "createtxg")) {
		snprintf(out->exact, sizeof out->exact, "%" PRIu64, ds->createtxg);
		out->numeric = 1;
	} else if (!strcmp(d->name, "available")) {
		struct statvfs v;
		uint64_t avail = 0;
		if (statvfs(p->path, &v) == 0)
			avail = (uint64_t)v.f_bavail * v.f_frsize;
		if ((r = quota_available(p, ds, &avail)) < 0)
			return r;
		set_num(out, avail, 1);
		return 0;
	} else {
		if ((r = space_of(p, ds, m, &sp)) < 0)
			return r;
		uint64_t v = 0;
		if (!strcmp(d->name, "compressratio") || !strcmp(d->name, "refcompressratio")) {
			/* zfs: a snapshot's compressratio is its refcompressratio */
			int ref = d->name[0] == 'r' || ds->type == STORE_DS_SNAPSHOT;
			uint64_t l = ref ? sp.logicalreferenced : sp.logicalused;
			uint64_t ph = ref ? sp.referenced : sp.used;
			store_format_ratio(l, ph, out->value, sizeof out->value, 0);
			store_format_ratio(l, ph, out->exact, sizeof out->exact, 1);
			out->numeric = 1;
			return 0;
		}
		if (!strcmp(d->name, "used")) v = sp.used;
		else if (!strcmp(d->name, "referenced")) v = sp.referenced;
		else if (!strcmp(d->name, "logicalused")) v = sp.logicalused;
		else if (!strcmp(d->name, "logicalreferenced")) v = sp.logicalreferenced;
		else if (!strcmp(d->name, "written")) v = sp.written;
		else if (!strcmp(d->name, "usedbysnapshots")) v = sp.usedbysnapshots;
		else if (!strcmp(d->name, "usedbydataset")) v = sp.usedbydataset;
		else if (!strcmp(d->name, "usedbychildren")) v = sp.usedbychildren;
		set_num(out, v, 1);
		return 0;
	}
	snprintf(out->value, sizeof out->value, "%s", out->exact);
	return 0;
}

int store_prop_get(struct store_pool *p, const struct store_ds *ds, const char *name,
		   struct store_propval *out)
{
	return store_prop_get_memo(p, ds, name, out, NULL);
}

int store_prop_get_memo(struct store_pool *p, const struct store_ds *ds, const char *name,
			struct store_propval *out, struct store_prop_memo *m)
{
	const struct prop_def *d = prop_find(name);
	const char *since;
	int r;
	memset(out, 0, sizeof *out);
	if (!d && prop_written_since(name, &since)) {
		uint64_t v = 0;
		snprintf(out->name, sizeof out->name, "%s", name);
		if (ds->type == STORE_DS_BOOKMARK) {
			snprintf(out->value, sizeof out->value, "-");
			snprintf(out->exact, sizeof out->exact, "-");
			return 0;
		}
		if ((r = space_written_since(p, ds, since, &v)) < 0)
			return r;
		set_num(out, v, 1);
		/* zfs get shows written@ with source local (zfs_main.c's
		 * get_callback), whatever it is: so does ferry */
		out->source = STORE_SRC_LOCAL;
		return 0;
	}
	if (!d) {
		if (!prop_user_name(name))
			return ferry_err(FERR_PROP, "invalid property '%s'", name);
		snprintf(out->name, sizeof out->name, "%s", name);
		if (ds->type == STORE_DS_BOOKMARK) {
			/* a bookmark has no properties of its own (as in zfs) */
			snprintf(out->value, sizeof out->value, "-");
			snprintf(out->exact, sizeof out->exact, "-");
			out->source = STORE_SRC_NONE;
			return 0;
		}
		if (ds->type == STORE_DS_SNAPSHOT) {
			/* A snapshot shows its dataset's user properties as inherited. */
			struct store_ds parent;
			if ((r = ds_load_by_id(p, ds->parent_id, &parent)) < 0 ||
			    (r = resolve(p, &parent, name, 1, NULL, out)) < 0)
				return r;
			if (out->source == STORE_SRC_LOCAL || out->source == STORE_SRC_RECEIVED) {
				out->source = STORE_SRC_INHERITED;
				snprintf(out->inherited_from, sizeof out->inherited_from, "%s",
					 parent.name);
			}
			snprintf(out->value, sizeof out->value, "%s", out->exact);
			return 0;
		}
		if ((r = resolve(p, ds, name, 1, NULL, out)) < 0)
			return r;
		snprintf(out->value, sizeof out->value, "%s", out->exact);
		return 0;
	}
	snprintf(out->name, sizeof out->name, "%s", d->name);
	if (!(d->types & (1 << ds->type))) {
		snprintf(out->value, sizeof out->value, "-");
		snprintf(out->exact, sizeof out->exact, "-");
		out->source = STORE_SRC_NONE;
		return 0;
	}
	if (d->kind == PK_RO)
		return readonly_value(p, ds, d, out, m);
	if ((r = resolve(p, ds, d->name, d->inherit, d->def, out)) < 0)
		return r;
	switch (d->kind) {
	case PK_RECSIZE:
	case PK_VOLSIZE:
	case PK_VOLBLOCK:
		set_num(out, strtoull(out->exact, NULL, 10), 0);
		break;
	case PK_QUOTA: {
		uint64_t q = strtoull(out->exact, NULL, 10);
		if (q)
			set_num(out, q, 0);
		else
			snprintf(out->value, sizeof out->value, "none");
		break;
	}
	default:
		snprintf(out->value, sizeof out->value, "%s", out->exact);
	}
	return 0;
}

/* The names of user properties set on ds or any ancestor, sorted. */
static int user_names(struct store_pool *p, const struct store_ds *ds, char ***names, size_t *n)
{
	sqlite3_stmt *st = NULL;
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	int r = cat_prepare(p,
		"WITH RECURSIVE anc(id, parent_id) AS ("
		"  SELECT id, parent_id FROM datasets WHERE id = ?"
		"  UNION ALL SELECT d.id, d.parent_id FROM datasets d JOIN anc ON d.id = anc.parent_id)"
		" SELECT DISTINCT name FROM props WHERE ds_id IN (SELECT id FROM anc)"
		" AND instr(name, ':') > 0 ORDER BY name", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(v, cap, cnt, 16, "listing properties")) < 0)
			goto out;
		if (!(v[cnt] = strdup((const char *)sqlite3_column_text(st, 0)))) {
			r = ferry_err(FERR_NOMEM, "listing properties");
			goto out;
		}
		cnt++;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing properties");
		goto out;
	}
	*names = v;
	*n = cnt;
	v = NULL;
	cnt = 0;
out:
	for (size_t i = 0; i < cnt; i++)
		free(v[i]);
	free(v);
	sqlite3_finalize(st);
	return r;
}

int store_prop_all(struct store_pool *p, const struct store_ds *ds, store_prop_fn fn, void *arg)
{
	struct store_propval *v = malloc(sizeof *v);
	struct store_prop_memo m = {0};
	char **names = NULL;
	size_t n = 0;
	int r = 0;
	if (!v)
		return ferry_err(FERR_NOMEM, "listing properties");
	const struct prop_def *d;
	for (size_t i = 0; (d = prop_at(i)); i++) {
		if (!d->in_all || !(d->types & (1 << ds->type)))
			continue;
		if ((r = store_prop_get_memo(p, ds, d->name, v, &m)) < 0 || (r = fn(v, arg)) != 0)
			goto out;
	}
	struct store_ds owner = *ds;
	if (ds->type == STORE_DS_BOOKMARK)
		goto out;
	if (ds->type == STORE_DS_SNAPSHOT && (r = ds_load_by_id(p, ds->parent_id, &owner)) < 0)
		goto out;
	if ((r = user_names(p, &owner, &names, &n)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if ((r = store_prop_get(p, ds, names[i], v)) < 0 || (r = fn(v, arg)) != 0)
			goto out;
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(v);
	return r;
}

static int del_prop(struct store_pool *p, int64_t id, const char *name, int only_local)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, only_local
		? "DELETE FROM props WHERE ds_id = ? AND name = ? AND source = 2"
		: "DELETE FROM props WHERE ds_id = ? AND name = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "clearing property");
	sqlite3_finalize(st);
	return r;
}

int store_prop_set(struct store_pool *p, const struct store_ds *ds,
		   const struct store_propset *props, size_t n, int source)
{
	return prop_set(p, ds, props, n, source, source == STORE_SRC_RECEIVED);
}

int prop_set(struct store_pool *p, const struct store_ds *ds,
	     const struct store_propset *props, size_t n, int source, int create_time)
{
	char canon[STORE_USERPROP_VALUE_MAX + 1];
	sqlite3_stmt *st = NULL;
	int r;
	if (source != STORE_SRC_LOCAL && source != STORE_SRC_RECEIVED)
		return ferry_err(FERR_INVAL, "property source must be local or received");
	if ((r = prop_check_changeable(ds->type)) < 0)
		return r;
	/* Validate everything first: all or nothing. */
	for (size_t i = 0; i < n; i++)
		if ((r = store_prop_validate(props[i].name, props[i].value, ds->type,
					     create_time, canon, sizeof canon)) < 0)
			return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = cat_prepare(p, "INSERT OR REPLACE INTO props(ds_id, name, value, source)"
				" VALUES(?, ?, ?, ?)", &st)) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		const struct prop_def *d = prop_find(props[i].name);
		const char *pname = d ? d->name : props[i].name;
		if ((r = store_prop_validate(props[i].name, props[i].value, ds->type,
					     create_time, canon, sizeof canon)) < 0 ||
		    (source == STORE_SRC_LOCAL && (r = quota_check_set(p, ds, pname, canon)) < 0))
			goto fail;
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, ds->id);
		/* both strings live until the step: nothing to copy, nothing a
		 * failed allocation could turn into a NULL */
		if (sqlite3_bind_text(st, 2, pname, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(st, 3, canon, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_int(st, 4, source) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE) {
			r = cat_err(p, "setting property");
			goto fail;
		}
	}
	sqlite3_finalize(st);
	return store_tx_commit(p);
fail:
	sqlite3_finalize(st);
	store_tx_rollback(p);
	return r;
}

int store_prop_drop_received(struct store_pool *p, const struct store_ds *ds,
			     const char *const *keep, size_t nkeep)
{
	sqlite3_stmt *st = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r, s;
	if ((r = cat_prepare(p, "SELECT name FROM props WHERE ds_id = ? AND source = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_int(st, 2, STORE_SRC_RECEIVED);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const char *nm = (const char *)sqlite3_column_text(st, 0);
		int kept = 0;
		for (size_t i = 0; nm && i < nkeep && !kept; i++) {
			const struct prop_def *d = prop_find(keep[i]);
			kept = !strcmp(d ? d->name : keep[i], nm);
		}
		if (kept)
			continue;
		if ((r = VEC_GROW(names, cap, n, 16, "listing received properties")) < 0)
			goto out;
		if (!nm || !(names[n] = strdup(nm))) {
			r = ferry_err(FERR_NOMEM, "listing received properties");
			goto out;
		}
		n++;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "listing received properties");
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (!n)
		goto out;
	if ((r = store_tx_begin(p)) < 0)
		goto out;
	if ((r = cat_prepare(p, "DELETE FROM props WHERE ds_id = ? AND name = ? AND source = ?",
			     &st)) < 0) {
		store_tx_rollback(p);
		goto out;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, ds->id);
		sqlite3_bind_text(st, 2, names[i], -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, STORE_SRC_RECEIVED);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(p, "clearing a received property");
	}
	sqlite3_finalize(st);
	st = NULL;
	if (r < 0)
		store_tx_rollback(p);
	else
		r = store_tx_commit(p);
out:
	sqlite3_finalize(st);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

static int inherit_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	const char **a = arg;
	return del_prop(p, ds->id, a[0], a[1] != NULL);
}

int store_prop_inherit(struct store_pool *p, const struct store_ds *ds, const char *name,
		       int recursive, int revert_received)
{
	const char *canon;
	int r;
	if ((r = prop_check_inherit(name, &canon)) < 0 || (r = prop_check_changeable(ds->type)) < 0)
		return r;
	const char *arg[2] = {canon, revert_received ? "" : NULL};
	if ((r = store_tx_begin(p)) < 0)
		return r;
	r = recursive ? store_ds_walk(p, ds, -1, inherit_cb, arg) : inherit_cb(p, ds, arg);
	if (r < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

int store_ds_compression(struct store_pool *p, const struct store_ds *ds, struct codec_spec *out)
{
	struct store_propval v;
	int r = store_prop_get(p, ds, "compression", &v);
	if (r < 0)
		return r;
	return codec_parse(v.exact, out);
}

int store_ds_recordsize(struct store_pool *p, const struct store_ds *ds, uint32_t *out)
{
	struct store_propval v;
	int r = store_prop_get(p, ds, ds->type == STORE_DS_VOLUME ? "volblocksize" : "recordsize", &v);
	if (r < 0)
		return r;
	*out = (uint32_t)strtoul(v.exact, NULL, 10);
	return 0;
}
