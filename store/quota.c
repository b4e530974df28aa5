/* store/quota.c — quota and refquota, as zfsprops(7) defines them: quota
 * limits what a dataset and its descendants use (every snapshot of each,
 * counted as `used` counts them), and a quota below an ancestor's adds a
 * limit without lifting the ancestor's; refquota limits what the dataset
 * itself references (its newest snapshot: the head, see space.c), its
 * snapshots and descendants not counted. Both are filesystem properties,
 * not inherited, "none" (0) by default.
 *
 * Data enters a pool only when a snapshot commits (a capture or a
 * receive), so that is where both are enforced: store_quota_check runs
 * inside the commit's transaction, with the new snapshot's rows in, and a
 * snapshot that would put any dataset over a limit is refused with
 * nothing of it committed (its packs are dropped like those of any failed
 * commit). A snapshot that frees space (a receive that rolls back first)
 * is measured after what it frees. The cost is one pass over the blocks of
 * each dataset on the path that has a quota; datasets without one cost a
 * property lookup.
 *
 * A receive also checks as it goes (store_quota_room): before its body,
 * the room each limit leaves, from figures that can only grow by the
 * commit; then every block byte it stores is new to the dataset, so once
 * they pass the room the commit would be refused: it stops there, with
 * no more than the blocks in flight past the limit on disk. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The value of quota or refquota on ds (0: none). Not inherited, so only
 * the dataset's own local or received value counts. */
static int limit_of(struct store_pool *p, const struct store_ds *ds, const char *name,
		    uint64_t *out)
{
	struct store_propval *v = malloc(sizeof *v);
	int r;
	if (!v)
		return ferry_err(FERR_NOMEM, "reading %s", name);
	*out = 0;
	if ((r = store_prop_get(p, ds, name, v)) == 0 && strcmp(v->exact, "-"))
		*out = strtoull(v->exact, NULL, 10);
	free(v);
	return r;
}

static void nice(uint64_t v, char *buf, size_t n)
{
	format_nicenum(v, buf, n, 1);
}

static int over(const char *ds, const char *prop, uint64_t figure, uint64_t limit)
{
	char f[32], l[32];
	nice(figure, f, sizeof f);
	nice(limit, l, sizeof l);
	return ferry_err(FERR_QUOTA, "quota exceeded: '%s' would use %s, over its %s of %s", ds, f,
			 prop, l);
}

static int partials_under(struct store_pool *p, const struct store_ds *top, const char *skip,
			  uint64_t *out);

int store_quota_check(struct store_pool *p, const struct store_ds *ds, uint64_t referenced)
{
	struct store_ds cur = *ds;
	struct store_space sp;
	uint64_t q;
	int r;
	if ((r = limit_of(p, ds, "refquota", &q)) < 0)
		return r;
	if (q && referenced > q)
		return over(ds->name, "refquota", referenced, q);
	for (;;) {
		if ((r = limit_of(p, &cur, "quota", &q)) < 0)
			return r;
		if (q) {
			uint64_t held;
			if ((r = store_ds_space(p, &cur, &sp)) < 0 ||
			    (r = partials_under(p, &cur, ds->name, &held)) < 0)
				return r;
			if (sp.used + held > q)
				return over(cur.name, "quota", sp.used + held, q);
		}
		if (cur.parent_id == 0)
			return 0;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			return r;
	}
}

int quota_check_set(struct store_pool *p, const struct store_ds *ds, const char *name,
		    const char *canon)
{
	struct store_space sp;
	uint64_t v = strtoull(canon, NULL, 10);
	int r, ref = !strcmp(name, "refquota");
	if ((!ref && strcmp(name, "quota")) || v == 0)
		return 0;
	if ((r = store_ds_space(p, ds, &sp)) < 0)
		return r;
	/* zfs's words */
	if (v < (ref ? sp.referenced : sp.used))
		return ferry_err(FERR_PROP, "%s: size is less than current used or reserved space",
				 name);
	return 0;
}

int quota_available(struct store_pool *p, const struct store_ds *ds, uint64_t *avail)
{
	struct store_ds cur = *ds;
	struct store_space sp;
	uint64_t q;
	int r;
	if ((r = limit_of(p, ds, "refquota", &q)) < 0)
		return r;
	if (q) {
		if ((r = store_ds_space(p, ds, &sp)) < 0)
			return r;
		uint64_t left = q > sp.referenced ? q - sp.referenced : 0;
		if (left < *avail)
			*avail = left;
	}
	for (;;) {
		if ((r = limit_of(p, &cur, "quota", &q)) < 0)
			return r;
		if (q) {
			uint64_t held;
			if ((r = store_ds_space(p, &cur, &sp)) < 0 ||
			    (r = partials_under(p, &cur, NULL, &held)) < 0)
				return r;
			uint64_t left = q > sp.used + held ? q - sp.used - held : 0;
			if (left < *avail)
				*avail = left;
		}
		if (cur.parent_id == 0)
			return 0;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			return r;
	}
}

/* The sum of psize over the distinct blocks sql selects, with ?1 the
 * dataset's id, ?2 a createtxg, ?3 its name. */
static int blocks_sum(struct store_pool *p, const char *sql, const struct store_ds *ds,
		      int64_t txg, uint64_t *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	/* a statement without one of them leaves it unbound (SQLITE_RANGE) */
	(void)sqlite3_bind_int64(st, 1, ds->id);
	(void)sqlite3_bind_int64(st, 2, txg);
	(void)sqlite3_bind_text(st, 3, ds->name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "computing the room a quota leaves");
	sqlite3_finalize(st);
	return r;
}

/* What the partial receives in top's subtree hold beyond what their
 * datasets' snapshots already count, the one into skip (NULL: none)
 * left out: zfs keeps a resumable receive's state in a hidden child
 * (ds/%recv) whose space counts against every quota above it, so one
 * client cannot pass a quota by leaving interrupted receives in several
 * datasets, each under the room. */
static int partials_under(struct store_pool *p, const struct store_ds *top, const char *skip,
			  uint64_t *out)
{
	static const char unique_sql[] =
		"SELECT coalesce(sum(psize), 0) FROM blocks WHERE id IN (SELECT block_id FROM"
		" recv_partial_blocks WHERE ds = ?3 EXCEPT SELECT x.block_id FROM ds_refs x"
		" WHERE x.ds_id = ?1)";
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT ds FROM recv_partial WHERE (ds = ?1 OR"
			       " substr(ds, 1, length(?1) + 1) = ?1 || '/') AND ds != ?2", &st);
	*out = 0;
	if (r < 0)
		return r;
	sqlite3_bind_text(st, 1, top->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, skip ? skip : "", -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct store_ds d;
		uint64_t b = 0;
		const char *name = (const char *)sqlite3_column_text(st, 0);
		if ((r = store_ds_lookup(p, name ? name : "", &d)) == -FERR_NOENT) {
			ferry_err_clear(); /* a partial without its dataset holds no rows to count */
			r = 0;
			continue;
		}
		if (r < 0 || (r = blocks_sum(p, unique_sql, &d, 0, &b)) < 0)
			break;
		*out += b;
	}
	if (r == 0 && rc != SQLITE_DONE)
		r = cat_err(p, "reading the partial receives");
	sqlite3_finalize(st);
	return r;
}

/* How the receive changes what ds itself uses before it stores a byte:
 * *kept what ds will use from its snapshots that stay and its partial
 * receive's blocks, *own what it uses now, *partial the partial's blocks
 * (all referenced by the snapshot the receive commits). */
static int ds_baseline(struct store_pool *p, const struct store_ds *ds, int64_t keep_txg,
		       uint64_t *kept, uint64_t *own, uint64_t *partial)
{
	static const char own_sql[] =
		"SELECT coalesce(sum(psize), 0) FROM blocks WHERE id IN (SELECT x.block_id FROM"
		" ds_refs x WHERE x.ds_id = ?1)";
	static const char kept_sql[] =
		"SELECT coalesce(sum(psize), 0) FROM blocks WHERE id IN (SELECT x.block_id FROM"
		" ds_refs x WHERE x.ds_id = ?1 AND x.born <= ?2)";
	static const char kept_partial_sql[] =
		"SELECT coalesce(sum(psize), 0) FROM blocks WHERE id IN (SELECT x.block_id FROM"
		" ds_refs x WHERE x.ds_id = ?1 AND x.born <= ?2"
		" UNION SELECT block_id FROM recv_partial_blocks WHERE ds = ?3)";
	static const char partial_sql[] =
		"SELECT coalesce(sum(psize), 0) FROM blocks WHERE id IN (SELECT block_id FROM"
		" recv_partial_blocks WHERE ds = ?3)";
	struct store_partial pt;
	int r, has_partial;
	*kept = *own = *partial = 0;
	if ((r = store_partial_get(p, ds->name, &pt)) == -FERR_NOENT)
		ferry_err_clear();
	else if (r < 0)
		return r;
	has_partial = r == 0;
	if (keep_txg == INT64_MAX && !has_partial)
		return 0; /* nothing goes, nothing comes back: no change */
	if ((r = blocks_sum(p, own_sql, ds, 0, own)) < 0 ||
	    (r = blocks_sum(p, has_partial ? kept_partial_sql : kept_sql, ds, keep_txg, kept)) < 0 ||
	    (has_partial && (r = blocks_sum(p, partial_sql, ds, 0, partial)) < 0))
		return r;
	return 0;
}

/* Keeps the tightest limit in q (the first met from below on a tie):
 * baseline against limit of prop on ds. */
static void room_take(struct store_quota_room *q, const char *ds, const char *prop,
		      uint64_t limit, uint64_t baseline)
{
	int over = baseline > limit;
	uint64_t room = over ? 0 : limit - baseline;
	if (q->over || (q->limited && !over && room >= q->room))
		return;
	q->limited = 1;
	q->over = over;
	q->room = room;
	snprintf(q->ds, sizeof q->ds, "%s", ds);
	q->prop = prop;
	q->limit = limit;
}

int store_quota_room(struct store_pool *p, const char *name, int64_t keep_txg,
		     struct store_quota_room *out)
{
	struct store_quota_room q;
	struct store_ds cur;
	struct store_space sp;
	char up[STORE_NAME_MAX + 1];
	uint64_t lim, kept = 0, own = 0, partial = 0;
	int64_t delta = 0;
	int r, exists = 1;
	memset(&q, 0, sizeof q);
	q.room = UINT64_MAX;
	snprintf(up, sizeof up, "%s", name);
	/* a new dataset: its nearest existing ancestor's limits */
	while ((r = store_ds_lookup(p, up, &cur)) == -FERR_NOENT) {
		char *slash = strrchr(up, '/');
		ferry_err_clear();
		exists = 0;
		if (!slash)
			goto done;
		*slash = 0;
	}
	if (r < 0)
		return r;
	/* most paths have no limit: property lookups only, then */
	{
		struct store_ds up_ds = cur;
		int any = 0;
		if (exists && (r = limit_of(p, &cur, "refquota", &lim)) < 0)
			return r;
		any = exists && lim;
		while (!any) {
			if ((r = limit_of(p, &up_ds, "quota", &lim)) < 0)
				return r;
			any = lim != 0;
			if (up_ds.parent_id == 0)
				break;
			if ((r = ds_load_by_id(p, up_ds.parent_id, &up_ds)) < 0)
				return r;
		}
		if (!any)
			goto done;
	}
	if (exists) {
		if ((r = limit_of(p, &cur, "refquota", &lim)) < 0)
			return r;
		/* the blocks of the partial receive first: they stay referenced */
		if ((r = ds_baseline(p, &cur, keep_txg, &kept, &own, &partial)) < 0)
			return r;
		delta = (int64_t)kept - (int64_t)own;
		if (lim)
			room_take(&q, cur.name, "refquota", lim, partial);
	}
	for (;;) {
		if ((r = limit_of(p, &cur, "quota", &lim)) < 0)
			return r;
		if (lim) {
			uint64_t held;
			if ((r = store_ds_space(p, &cur, &sp)) < 0 ||
			    (r = partials_under(p, &cur, name, &held)) < 0)
				return r;
			/* used is counted per dataset, so what the receive frees
			 * or brings back in name counts the same at every level */
			uint64_t base = delta < 0 && (uint64_t)-delta > sp.used ? 0
									   : (uint64_t)((int64_t)sp.used + delta);
			room_take(&q, cur.name, "quota", lim, base + held);
		}
		if (cur.parent_id == 0)
			break;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			return r;
	}
done:
	*out = q;
	return 0;
}

int store_quota_passed(const struct store_quota_room *q, uint64_t stored)
{
	char l[32];
	if (!q->limited || (!q->over && stored <= q->room))
		return 0;
	nice(q->limit, l, sizeof l);
	return ferry_err(FERR_QUOTA, "quota exceeded: '%s' would use more than its %s of %s", q->ds,
			 q->prop, l);
}
