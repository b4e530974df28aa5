/* sync/prune.c — ferry prune: restic's retention rules (restic forget's
 * ApplyPolicy) over a dataset's snapshots, in UTC buckets of their
 * creation times, and whatever they say, never a held snapshot, the
 * dataset's newest, a sync base (the snapshot of a ferry-sync bookmark)
 * or the base of a partial receive. A policy comes from the command line
 * or from the ferry:keep-* properties, inherited down a backup server's
 * tree. Each dataset is planned and pruned in one catalogue transaction,
 * so what -n prints is what the same state would make prune do. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

int sync_keep_empty(const struct sync_keep *k)
{
	return !k->last && !k->hourly && !k->daily && !k->weekly && !k->monthly && !k->yearly &&
	       !k->has_within;
}

int sync_keep_within_parse(const char *s, struct sync_keep *k)
{
	int y = 0, m = 0, d = 0, h = 0, seen = 0;
	const char *p = s;
	if (!*p)
		goto bad;
	while (*p) {
		long v = 0;
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++)
			if ((v = v * 10 + (*p - '0')) > 1000000)
				goto bad;
		int bit = *p == 'y' ? 1 : *p == 'm' ? 2 : *p == 'd' ? 4 : *p == 'h' ? 8 : 0;
		if (!bit || (seen & bit))
			goto bad;
		seen |= bit;
		if (*p == 'y') y = (int)v;
		else if (*p == 'm') m = (int)v;
		else if (*p == 'd') d = (int)v;
		else h = (int)v;
		p++;
	}
	k->within_y = y;
	k->within_m = m;
	k->within_d = d;
	k->within_h = h;
	k->has_within = 1;
	return 0;
bad:
	return ferry_err(FERR_INVAL, "'%s' is not a duration such as 1y5m7d2h (years, months, "
			 "days, hours)", s);
}

void sync_keep_within_format(const struct sync_keep *k, char *buf, size_t n)
{
	size_t o = 0;
	buf[0] = 0;
	if (k->within_y)
		o += (size_t)snprintf(buf + o, n - o, "%dy", k->within_y);
	if (k->within_m && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%dm", k->within_m);
	if (k->within_d && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%dd", k->within_d);
	if ((k->within_h || o == 0) && o < n)
		snprintf(buf + o, n - o, "%dh", k->within_h);
}

/* ---- restic's rules ----------------------------------------------------------------------- */

static struct tm utc(uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	return tm;
}

/* restic's buckers: the bucket a time falls in (restic uses local time;
 * ferry uses UTC, so a backup server and its clients agree). */
static int64_t bucket(int kind, uint64_t ns, size_t nr)
{
	struct tm tm = utc(ns);
	int64_t y = tm.tm_year + 1900, mo = tm.tm_mon + 1, d = tm.tm_mday;
	char wk[16];
	switch (kind) {
	case 0: return (int64_t)nr;                         /* last: every snapshot its own */
	case 1: return y * 1000000 + mo * 10000 + d * 100 + tm.tm_hour;
	case 2: return y * 10000 + mo * 100 + d;
	case 3: strftime(wk, sizeof wk, "%G%V", &tm);      /* ISO year and week */
		return strtoll(wk, NULL, 10);
	case 4: return y * 100 + mo;
	default: return y;
	}
}

void sync_keep_apply(const struct sync_keep *k, const uint64_t *times, size_t n, unsigned *why)
{
	struct {
		int64_t count;
		int64_t last;
		int have_last;
		unsigned bit;
	} b[6] = {
		{k->last, 0, 0, SYNC_KEEP_LAST},       {k->hourly, 0, 0, SYNC_KEEP_HOURLY},
		{k->daily, 0, 0, SYNC_KEEP_DAILY},     {k->weekly, 0, 0, SYNC_KEEP_WEEKLY},
		{k->monthly, 0, 0, SYNC_KEEP_MONTHLY}, {k->yearly, 0, 0, SYNC_KEEP_YEARLY},
	};
	uint64_t limit = 0;
	int have_limit = 0;
	if (n == 0)
		return;
	if (k->has_within) {
		/* restic: latest.AddDate(-y, -m, -d).Add(-h hours), the newest
		 * snapshot's time (not now); months and days normalise as Go's
		 * Date does, as timegm's do */
		struct tm tm = utc(times[0]);
		tm.tm_year -= k->within_y;
		tm.tm_mon -= k->within_m;
		tm.tm_mday -= k->within_d;
		int64_t s = (int64_t)timegm(&tm) - (int64_t)k->within_h * 3600;
		if (s >= 0) {
			limit = (uint64_t)s * 1000000000u + times[0] % 1000000000u;
			have_limit = 1;
		}
	}
	for (size_t nr = 0; nr < n; nr++) {
		why[nr] = 0;
		if (k->has_within && (!have_limit || times[nr] > limit))
			why[nr] |= SYNC_KEEP_WITHIN;
		for (int i = 0; i < 6; i++) {
			if (b[i].count == 0)
				continue;
			int64_t v = bucket(i, times[nr], nr);
			/* restic also keeps the oldest snapshot while a bucket has
			 * counts left: the longest history the counts allow */
			if (!b[i].have_last || v != b[i].last || nr == n - 1) {
				why[nr] |= b[i].bit;
				b[i].last = v;
				b[i].have_last = 1;
				if (b[i].count > 0)
					b[i].count--;
			}
		}
	}
}

void sync_keep_why_format(unsigned why, const struct sync_keep *k, char *buf, size_t n)
{
	static const struct {
		unsigned bit;
		const char *text;
	} words[] = {
		{SYNC_KEEP_LAST, "last snapshot"},       {SYNC_KEEP_HOURLY, "hourly snapshot"},
		{SYNC_KEEP_DAILY, "daily snapshot"},     {SYNC_KEEP_WEEKLY, "weekly snapshot"},
		{SYNC_KEEP_MONTHLY, "monthly snapshot"}, {SYNC_KEEP_YEARLY, "yearly snapshot"},
		{SYNC_KEEP_WITHIN, NULL},                {SYNC_KEEP_HELD, "held"},
		{SYNC_KEEP_NEWEST, "newest snapshot"},   {SYNC_KEEP_BASE, "sync base"},
		{SYNC_KEEP_PARTIAL, "base of a partial receive"},
	};
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof words / sizeof words[0] && o < n; i++) {
		if (!(why & words[i].bit))
			continue;
		char w[64];
		if (!words[i].text) {
			char d[48];
			sync_keep_within_format(k, d, sizeof d);
			snprintf(w, sizeof w, "within %s", d);
		} else {
			snprintf(w, sizeof w, "%s", words[i].text);
		}
		o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", w);
	}
}

/* ---- the policy from properties ------------------------------------------------------------- */

int sync_keep_from_props(struct store_pool *p, const struct store_ds *ds, struct sync_keep *k)
{
	static const char *const counts[] = {
		"ferry:keep-last", "ferry:keep-hourly", "ferry:keep-daily", "ferry:keep-weekly",
		"ferry:keep-monthly", "ferry:keep-yearly",
	};
	int64_t *dst[] = {&k->last, &k->hourly, &k->daily, &k->weekly, &k->monthly, &k->yearly};
	struct store_propval *v = malloc(sizeof *v);
	int r = 0, any = 0;
	if (!v)
		return ferry_err(FERR_NOMEM, "reading the retention policy");
	memset(k, 0, sizeof *k);
	for (size_t i = 0; i < 6; i++) {
		if ((r = store_prop_get(p, ds, counts[i], v)) < 0)
			goto out;
		if (v->source == STORE_SRC_NONE)
			continue;
		char *end;
		long long c = strtoll(v->exact, &end, 10);
		if (!v->exact[0] || *end || c < -1) {
			r = ferry_err(FERR_PROP, "%s of '%s' is '%s', not a count (or -1 for all)",
				      counts[i], ds->name, v->exact);
			goto out;
		}
		*dst[i] = c;
		any = 1;
	}
	if ((r = store_prop_get(p, ds, "ferry:keep-within", v)) < 0)
		goto out;
	if (v->source != STORE_SRC_NONE) {
		if ((r = sync_keep_within_parse(v->exact, k)) < 0) {
			r = ferry_err(FERR_PROP, "ferry:keep-within of '%s': %s", ds->name, ferry_errmsg(r));
			goto out;
		}
		any = 1;
	}
	if ((r = store_prop_get(p, ds, "ferry:prune-prefix", v)) < 0)
		goto out;
	if (v->source != STORE_SRC_NONE)
		snprintf(k->prefix, sizeof k->prefix, "%s", v->exact);
	r = any;
out:
	free(v);
	return r;
}

/* ---- pruning a dataset ------------------------------------------------------------------------ */

struct snaps {
	struct store_snap *v;
	size_t n, cap;
};

static int snaps_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct snaps *l = arg;
	int r = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (r == 0)
		l->v[l->n++] = *s;
	return r;
}

struct guids {
	uint64_t *v;
	size_t n, cap;
};

static int base_cb(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct guids *g = arg;
	int r = 0;
	if (!strncmp(b->markname, SYNC_MARK_PREFIX, strlen(SYNC_MARK_PREFIX)) &&
	    (r = VEC_GROW(g->v, g->cap, g->n, 4, "listing sync bases")) == 0)
		g->v[g->n++] = b->guid;
	return r;
}

static int first_hold_cb(struct store_pool *p, const struct store_hold *h, void *arg)
{
	snprintf(arg, STORE_HOLD_TAG_MAX + 1, "%s", h->tag);
	return 1;
}

static int newest_first(const void *a, const void *b)
{
	const struct store_snap *x = a, *y = b;
	if (x->creation_ns != y->creation_ns)
		return x->creation_ns < y->creation_ns ? 1 : -1;
	return x->createtxg < y->createtxg ? 1 : x->createtxg > y->createtxg ? -1 : 0;
}

struct prune_walk {
	const struct sync_prune_opts *o;
	int explicit_top;      /* the named dataset itself must have a policy */
	int64_t top_id;
	int pruned;
};

static int prune_ds(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct prune_walk *pw = arg;
	const struct sync_prune_opts *o = pw->o;
	int dry = (o->flags & SYNC_PRUNE_DRYRUN) != 0, tx = 0, r;
	struct sync_prune_ds d;
	struct snaps all = {0};
	struct guids bases = {0};
	struct store_snap *gone = NULL;
	uint64_t *times = NULL;
	unsigned *why = NULL;
	size_t ngone = 0;
	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return 0;
	memset(&d, 0, sizeof d);
	snprintf(d.name, sizeof d.name, "%s", ds->name);
	if (o->keep) {
		d.keep = *o->keep;
	} else {
		if ((r = sync_keep_from_props(p, ds, &d.keep)) < 0)
			return r;
		d.from_props = 1;
		if (r == 0 || sync_keep_empty(&d.keep)) {
			if (pw->explicit_top && ds->id == pw->top_id)
				return ferry_err(FERR_INVAL, "'%s' has no retention policy: give --keep-* "
						 "options or set ferry:keep-* properties", ds->name);
			return 0;
		}
	}
	/* planned under the write lock: what is planned is what goes */
	if (!dry) {
		if ((r = store_tx_begin(p)) < 0)
			return r;
		tx = 1;
	}
	if ((r = store_snap_iter(p, ds, snaps_cb, &all)) < 0 ||
	    (r = store_bookmark_iter(p, ds, base_cb, &bases)) < 0)
		goto out;
	uint64_t partial_base = 0;
	struct store_partial pt;
	if ((r = store_partial_get(p, ds->name, &pt)) == 0)
		partial_base = pt.from_guid;
	else if (r != -FERR_NOENT)
		goto out;
	ferry_err_clear();
	r = 0;
	int64_t newest_id = all.n ? all.v[all.n - 1].id : 0;
	/* the snapshots the policy looks at: those named with the prefix */
	size_t m = 0;
	for (size_t i = 0; i < all.n; i++)
		if (!d.keep.prefix[0] ||
		    !strncmp(all.v[i].snapname, d.keep.prefix, strlen(d.keep.prefix)))
			all.v[m++] = all.v[i];
	qsort(all.v, m, sizeof *all.v, newest_first);
	if (m && (!(d.snaps = calloc(m, sizeof *d.snaps)) || !(times = calloc(m, sizeof *times)) ||
		  !(why = calloc(m, sizeof *why)) || !(gone = calloc(m, sizeof *gone)))) {
		r = ferry_err(FERR_NOMEM, "pruning '%s'", ds->name);
		goto out;
	}
	d.n = m;
	for (size_t i = 0; i < m; i++)
		times[i] = all.v[i].creation_ns;
	sync_keep_apply(&d.keep, times, m, why);
	for (size_t i = 0; i < m; i++) {
		struct sync_prune_snap *s = &d.snaps[i];
		uint64_t holds = 0;
		snprintf(s->name, sizeof s->name, "%s", all.v[i].name);
		s->creation_ns = all.v[i].creation_ns;
		s->why = why[i];
		if ((r = store_hold_count(p, all.v[i].id, &holds)) < 0)
			goto out;
		if (holds) {
			s->why |= SYNC_KEEP_HELD;
			if ((r = store_hold_iter(p, &all.v[i], first_hold_cb, s->held)) < 0)
				goto out;
			r = 0;
		}
		if (all.v[i].id == newest_id)
			s->why |= SYNC_KEEP_NEWEST;
		for (size_t k = 0; k < bases.n; k++)
			if (bases.v[k] == all.v[i].guid)
				s->why |= SYNC_KEEP_BASE;
		if (partial_base && partial_base == all.v[i].guid)
			s->why |= SYNC_KEEP_PARTIAL;
		if (s->why) {
			d.kept++;
		} else {
			d.removed++;
			gone[ngone++] = all.v[i];
		}
	}
	if (!dry && ngone && (r = store_snap_destroy(p, gone, ngone)) < 0)
		goto out;
	if (tx) {
		tx = 0;
		if ((r = store_tx_commit(p)) < 0)
			goto out;
	}
	pw->pruned++;
	if (o->dataset)
		o->dataset(o->arg, &d);
out:
	if (tx)
		store_tx_rollback(p);
	free(d.snaps);
	free(all.v);
	free(bases.v);
	free(gone);
	free(times);
	free(why);
	return r;
}

int sync_prune_run(const char *name, const struct sync_prune_opts *o, struct store_gc_stats *gc)
{
	struct store_pool *p = NULL;
	struct store_ds ds;
	int r, dry = (o->flags & SYNC_PRUNE_DRYRUN) != 0;
	if ((r = store_name_check(name, STORE_NAME_DATASET)) < 0 ||
	    (r = store_pool_open_for(name, dry ? STORE_OPEN_RDONLY : 0, &p)) < 0)
		return r;
	char what[STORE_NAME_MAX + 32];
	snprintf(what, sizeof what, "a prune of %s", name);
	store_pool_activity(p, what);
	if ((r = store_ds_lookup(p, name, &ds)) < 0)
		goto out;
	struct prune_walk pw = {o, !(o->flags & SYNC_PRUNE_RECURSIVE), ds.id, 0};
	if ((r = store_ds_walk(p, &ds, (o->flags & SYNC_PRUNE_RECURSIVE) ? -1 : 0, prune_ds, &pw)) < 0)
		goto out;
	if (!dry && (o->flags & SYNC_PRUNE_GC)) {
		struct store_gc_stats st;
		if ((r = store_gc(p, &st)) < 0)
			goto out;
		if (gc)
			*gc = st;
	}
out:
	store_pool_close(p);
	return r;
}
