/* send/package.c — packages (send -R, -I): the datasets (a TREE package
 * lists the whole tree), each one's snapshots, then the substreams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int slist_cb(struct store_pool *p, const struct store_snap *sn, void *arg)
{
	struct slist *l = arg;
	if (l->n >= STREAM_SNAPS_MAX)
		return ferry_err(FERR_LIMIT, "more than %d snapshots", STREAM_SNAPS_MAX);
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *sn;
	return 0;
}

int send_slist_load(struct store_pool *p, const struct store_ds *ds, struct slist *l)
{
	memset(l, 0, sizeof *l);
	int r = store_snap_iter(p, ds, slist_cb, l);
	if (r < 0) {
		free(l->v);
		memset(l, 0, sizeof *l);
	}
	return r;
}

static ssize_t slist_find(const struct slist *l, const char *snapname)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].snapname, snapname))
			return (ssize_t)i;
	return -1;
}

struct dslist {
	struct store_ds *v;
	size_t n, cap;
};

static int dslist_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct dslist *l = arg;
	if (l->n >= STREAM_PKG_DATASETS_MAX)
		return ferry_err(FERR_LIMIT, "more than %d datasets", STREAM_PKG_DATASETS_MAX);
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing datasets");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *ds;
	return 0;
}

static int ds_sort(const void *a, const void *b)
{
	return strcmp(((const struct store_ds *)a)->name, ((const struct store_ds *)b)->name);
}

/* One dataset of a package: what it sends. */
struct pkg_ds {
	struct store_ds ds;
	struct slist snaps;
	struct plist props;
	ssize_t from, to; /* indexes in snaps; from -1: full */
	int include;      /* has substreams (it has the to snapshot) */
	int listed;       /* has a DATASET record */
};

const char *send_snap_part(const char *s)
{
	const char *at = strchr(s, '@');
	return at ? at + 1 : s[0] == '@' ? s + 1 : s;
}

/* What a package sends. */
struct pkg {
	const struct store_ds *top;
	const char *to_snap, *from;  /* from: the base's snapshot name, or NULL */
	int replicate;               /* -R: the tree below top */
	int all;                     /* every snapshot up to to_snap (-I, -R without a base) */
	struct pkg_ds *pd;
	size_t nds;
};

/* Dataset d of the package: which of its snapshots go, and its properties. */
static int pkg_plan_ds(struct snd *s, const struct pkg *k, struct pkg_ds *d)
{
	int r;
	d->to = slist_find(&d->snaps, k->to_snap);
	if (d->to < 0) {
		if (!strcmp(d->ds.name, k->top->name))
			return ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", k->top->name,
					 k->to_snap);
		/* A child without the snapshot gets no substream, but a TREE
		 * package lists it all the same (ferry-stream(5)): recv -F
		 * destroys what the list lacks, and the sender still has this
		 * one. */
		if (k->replicate) {
			d->listed = 1;
			if ((r = send_plist_load(s->p, &d->ds, &d->props)) < 0)
				return r;
		}
		return 0;
	}
	d->from = k->from ? slist_find(&d->snaps, k->from) : -1;
	if (k->from && d->from < 0 && !strcmp(d->ds.name, k->top->name))
		return ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", k->top->name, k->from);
	if (d->from >= d->to && d->from >= 0)
		return ferry_err(FERR_INVAL, "'%s@%s' is not earlier than '%s@%s'", d->ds.name,
				 k->from, d->ds.name, k->to_snap);
	d->include = d->listed = 1;
	if (k->replicate || (s->o->flags & SEND_PROPS))
		return send_plist_load(s->p, &d->ds, &d->props);
	return 0;
}

/* The package's datasets (the tree below top with -R), sorted, planned. */
static int pkg_plan(struct snd *s, struct pkg *k)
{
	struct dslist dl;
	int r;
	memset(&dl, 0, sizeof dl);
	if (k->replicate)
		r = store_ds_walk(s->p, k->top, -1, dslist_cb, &dl);
	else
		r = dslist_cb(s->p, k->top, &dl);
	if (r < 0)
		goto out;
	if (dl.n > 1)
		qsort(dl.v, dl.n, sizeof *dl.v, ds_sort);
	if (!(k->pd = calloc(dl.n ? dl.n : 1, sizeof *k->pd))) {
		r = ferry_err(FERR_NOMEM, "sending a package");
		goto out;
	}
	for (size_t i = 0; i < dl.n; i++) {
		struct pkg_ds *d = &k->pd[k->nds];
		d->ds = dl.v[i];
		if ((r = send_slist_load(s->p, &d->ds, &d->snaps)) < 0)
			goto out;
		k->nds++;
		if ((r = pkg_plan_ds(s, k, d)) < 0)
			goto out;
	}
out:
	free(dl.v);
	return r;
}

/* The DATASET record of d: its properties and every snapshot it has. */
static int pkg_dataset(struct snd *s, const struct pkg_ds *d)
{
	struct stream_dataset sd;
	int r;
	struct stream_snap *ss = calloc(d->snaps.n ? d->snaps.n : 1, sizeof *ss);
	if (!ss)
		return ferry_err(FERR_NOMEM, "sending a package");
	for (size_t j = 0; j < d->snaps.n; j++) {
		ss[j].guid = d->snaps.v[j].guid;
		ss[j].txg = d->snaps.v[j].createtxg;
		ss[j].creation_ns = d->snaps.v[j].creation_ns;
		ss[j].name = d->snaps.v[j].snapname;
	}
	memset(&sd, 0, sizeof sd);
	sd.guid = d->ds.guid;
	sd.ds_type = d->ds.type == STORE_DS_VOLUME ? STREAM_DS_VOLUME : STREAM_DS_FILESYSTEM;
	sd.name = d->ds.name;
	sd.props = d->props.v;
	sd.nprops = d->props.n;
	sd.snaps = ss;
	sd.nsnaps = d->snaps.n;
	r = s->enc ? stream_encode_dataset(s->enc, &sd, &s->out) : 0;
	uint64_t size = stream_size_dataset(&sd);
	free(ss);
	return r < 0 ? r : send_counted(s, size);
}

/* d's substreams: after the base (or from the first snapshot with all),
 * each against the one before; without all, only the target. */
static int pkg_substreams(struct snd *s, const struct pkg *k, const struct pkg_ds *d)
{
	ssize_t start = d->from >= 0 ? d->from + 1 : k->all ? 0 : d->to;
	const struct store_snap *prev = d->from >= 0 ? &d->snaps.v[d->from] : NULL;
	int r;
	if (d->from >= 0 && !k->all)
		start = d->to;
	for (ssize_t j = start; j <= d->to; j++) {
		if ((r = send_substream(s, &d->snaps.v[j], prev, 0, NULL, 0)) < 0)
			return r;
		prev = &d->snaps.v[j];
	}
	return 0;
}

int send_package(struct snd *s, const struct store_ds *top, const char *to_snap)
{
	struct stream_package pk;
	struct pkg k;
	int r;
	memset(&k, 0, sizeof k);
	k.top = top;
	k.to_snap = to_snap;
	k.from = s->o->from ? send_snap_part(s->o->from) : NULL;
	k.replicate = (s->o->flags & SEND_REPLICATE) != 0;
	k.all = (s->o->flags & SEND_INTERMEDIATE) || (k.replicate && !k.from);
	if ((r = pkg_plan(s, &k)) < 0)
		goto out;
	memset(&pk, 0, sizeof pk);
	/* TREE: the DATASETs are the whole tree; the substreams go without it */
	pk.flags = s->flags | (k.replicate ? STREAM_F_TREE : 0);
	pk.top = top->name;
	pk.to_snap = to_snap;
	pk.from_snap = k.from ? k.from : "";
	for (size_t i = 0; i < k.nds; i++)
		pk.ndatasets += k.pd[i].listed;
	if ((s->enc && (r = stream_encode_package(s->enc, &pk, &s->out)) < 0) ||
	    (r = send_counted(s, stream_size_package(&pk))) < 0 || (r = send_emit_hint(s)) < 0)
		goto out;
	for (size_t i = 0; i < k.nds; i++)
		if (k.pd[i].listed && (r = pkg_dataset(s, &k.pd[i])) < 0)
			goto out;
	for (size_t i = 0; i < k.nds; i++)
		if (k.pd[i].include && (r = pkg_substreams(s, &k, &k.pd[i])) < 0)
			goto out;
	if (s->enc && (r = stream_encode_package_end(s->enc, &s->out)) < 0)
		goto out;
	r = send_counted(s, stream_size_package_end());
out:
	for (size_t i = 0; k.pd && i < k.nds; i++) {
		free(k.pd[i].snaps.v);
		send_plist_release(&k.pd[i].props);
	}
	free(k.pd);
	return r;
}
