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
 * property lookup. */
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
			if ((r = store_ds_space(p, &cur, &sp)) < 0)
				return r;
			if (sp.used > q)
				return over(cur.name, "quota", sp.used, q);
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
			if ((r = store_ds_space(p, &cur, &sp)) < 0)
				return r;
			uint64_t left = q > sp.used ? q - sp.used : 0;
			if (left < *avail)
				*avail = left;
		}
		if (cur.parent_id == 0)
			return 0;
		if ((r = ds_load_by_id(p, cur.parent_id, &cur)) < 0)
			return r;
	}
}
