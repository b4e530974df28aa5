/* recv/package.c — packages (send -R, -I): their DATASET records, the
 * substreams that follow, and, with -F once the whole package verified,
 * the destruction of what the sender no longer has. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void recv_pkg_free(struct rcv *r)
{
	for (size_t i = 0; i < r->npds; i++) {
		struct pkgds *d = &r->pds[i];
		for (size_t j = 0; j < d->nprops; j++) {
			free((char *)d->props[j].name);
			free((char *)d->props[j].value);
		}
		free(d->props);
		free(d->snap_guids);
		free(d->name);
	}
	free(r->pds);
	r->pds = NULL;
	r->npds = 0;
	r->cappds = 0;
}

static int recv_pkg_add(struct rcv *r, const struct stream_dataset *sd)
{
	int rc;
	if ((rc = VEC_GROW(r->pds, r->cappds, r->npds, 8, "receiving a package")) < 0)
		return rc;
	struct pkgds *d = &r->pds[r->npds++];
	memset(d, 0, sizeof *d);
	d->guid = sd->guid;
	if (!(d->name = strdup(sd->name)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	if (sd->nprops && !(d->props = calloc(sd->nprops, sizeof *d->props)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	for (size_t i = 0; i < sd->nprops; i++) {
		d->props[i].source = sd->props[i].source;
		d->props[i].name = strdup(sd->props[i].name);
		d->props[i].value = strdup(sd->props[i].value);
		d->nprops++;
		if (!d->props[i].name || !d->props[i].value)
			return ferry_err(FERR_NOMEM, "receiving a package");
	}
	if (sd->nsnaps && !(d->snap_guids = calloc(sd->nsnaps, sizeof *d->snap_guids)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	for (size_t i = 0; i < sd->nsnaps; i++)
		d->snap_guids[i] = sd->snaps[i].guid;
	d->nsnaps = sd->nsnaps;
	return 0;
}

static const struct pkgds *recv_pkg_find(struct rcv *r, const char *name)
{
	for (size_t i = 0; i < r->npds; i++)
		if (!strcmp(r->pds[i].name, name))
			return &r->pds[i];
	return NULL;
}

static void note_destroy(struct rcv *r, const char *name)
{
	if (r->o->destroyed)
		r->o->destroyed(r->o->arg, name);
}

/* recv -F of a package: in the datasets it lists, the snapshots the
 * sender no longer has go (with -n: are reported). */
int recv_pkg_prune(struct rcv *r)
{
	int rc = 0;
	for (size_t i = 0; i < r->npds && rc == 0; i++) {
		const struct pkgds *d = &r->pds[i];
		char dsname[STORE_NAME_MAX + 1];
		struct store_ds ds;
		struct snaps sl;
		memset(&sl, 0, sizeof sl);
		if ((rc = recv_map_name(r, d->name, dsname, sizeof dsname)) < 0)
			break;
		if ((rc = store_ds_lookup(r->p, dsname, &ds)) < 0) {
			if (rc == -FERR_NOENT) {
				ferry_err_clear();
				rc = 0;
			}
			continue;
		}
		if ((rc = store_snap_iter(r->p, &ds, recv_snaps_cb, &sl)) < 0) {
			free(sl.v);
			break;
		}
		size_t w = 0;
		for (size_t j = 0; j < sl.n; j++) {
			int keep = 0;
			for (size_t k = 0; k < d->nsnaps; k++)
				if (d->snap_guids[k] == sl.v[j].guid)
					keep = 1;
			if (!keep)
				sl.v[w++] = sl.v[j];
		}
		for (size_t j = 0; j < w; j++)
			note_destroy(r, sl.v[j].name);
		if (w && !r->dryrun)
			rc = store_snap_destroy(r->p, sl.v, w);
		free(sl.v);
	}
	return rc;
}

/* A dataset below the receive target, and whether the package keeps it. */
struct tree_ds {
	char name[STORE_NAME_MAX + 1];
	int keep;
};

struct tree_list {
	struct tree_ds *v;
	size_t n, cap;
};

static int tree_add(struct tree_list *l, const char *name)
{
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing datasets");
	if (grown < 0)
		return grown;
	snprintf(l->v[l->n].name, sizeof l->v[l->n].name, "%s", name);
	l->v[l->n++].keep = 0;
	return 0;
}

static int tree_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	return tree_add(arg, ds->name);
}

static int tree_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tree_ds *)a)->name, ((const struct tree_ds *)b)->name);
}

/* Index of the first name >= key in sorted l. */
static size_t tree_lower(const struct tree_list *l, const char *key)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(l->v[mid].name, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* 1 when sorted l holds name or a name below it. */
static int tree_covers(const struct tree_list *l, const char *name)
{
	char below[STORE_NAME_MAX + 2];
	size_t i = tree_lower(l, name), bl;
	if (i < l->n && !strcmp(l->v[i].name, name))
		return 1;
	bl = (size_t)snprintf(below, sizeof below, "%s/", name);
	if (bl >= sizeof below)
		return 0;
	i = tree_lower(l, below);
	return i < l->n && !strncmp(l->v[i].name, below, bl);
}

/* recv -F of a TREE package (send -R), once it verified to its end: the
 * datasets below the receive target that the package does not list, and
 * that no listed dataset lies below, go with their descendants and
 * snapshots (with -n: are reported). The target itself and anything
 * outside it never do. */
/* Where the package's datasets land here (their local names), sorted. */
static int pkg_landing(struct rcv *r, struct tree_list *out)
{
	int rc;
	for (size_t i = 0; i < r->npds; i++) {
		char name[STORE_NAME_MAX + 1];
		if ((rc = recv_map_name(r, r->pds[i].name, name, sizeof name)) < 0 ||
		    (rc = tree_add(out, name)) < 0)
			return rc;
	}
	if (out->n > 1)
		qsort(out->v, out->n, sizeof *out->v, tree_cmp);
	return 0;
}

int recv_pkg_destroy_tree(struct rcv *r)
{
	char top[STORE_NAME_MAX + 1];
	struct tree_list have, listed;
	struct store_ds ds;
	int rc;
	memset(&have, 0, sizeof have);
	memset(&listed, 0, sizeof listed);
	if ((rc = recv_map_name(r, r->pkg_top, top, sizeof top)) < 0)
		return rc;
	if ((rc = store_ds_lookup(r->p, top, &ds)) < 0) {
		if (rc != -FERR_NOENT)
			return rc;
		ferry_err_clear();
		return 0;
	}
	if ((rc = pkg_landing(r, &listed)) < 0)
		goto out;
	if ((rc = store_ds_walk(r->p, &ds, -1, tree_cb, &have)) < 0)
		goto out;
	if (have.n > 1)
		qsort(have.v, have.n, sizeof *have.v, tree_cmp);
	for (size_t i = 0; i < have.n; i++)
		have.v[i].keep = !strcmp(have.v[i].name, top) || tree_covers(&listed, have.v[i].name);
	/* parents sort before their children: each unkept dataset is reported,
	 * and destroyed (recursively) when its parent is kept */
	for (size_t i = 0; i < have.n && rc == 0; i++) {
		struct tree_ds *d = &have.v[i];
		char parent[STORE_NAME_MAX + 1];
		if (d->keep)
			continue;
		note_destroy(r, d->name);
		snprintf(parent, sizeof parent, "%s", d->name);
		char *sl = strrchr(parent, '/');
		if (sl)
			*sl = 0;
		size_t pi = tree_lower(&have, parent);
		if (pi < have.n && !strcmp(have.v[pi].name, parent) && !have.v[pi].keep)
			continue; /* goes with its parent */
		if (!r->dryrun)
			rc = store_ds_destroy(r->p, d->name, 1);
	}
out:
	free(have.v);
	free(listed.v);
	return rc;
}

/* 1 when local dataset ds has a snapshot of that guid, else 0. */
static int has_guid(struct rcv *r, const struct store_ds *ds, uint64_t guid)
{
	struct snaps sl;
	int rc, hit = 0;
	memset(&sl, 0, sizeof sl);
	if ((rc = store_snap_iter(r->p, ds, recv_snaps_cb, &sl)) < 0) {
		free(sl.v);
		return rc;
	}
	for (size_t i = 0; i < sl.n && !hit; i++)
		hit = sl.v[i].guid == guid;
	free(sl.v);
	return hit;
}

/* The datasets below the target that no DATASET record of the package
 * lands on (the top excluded): those the sender removed or renamed. */
static int unlanded(struct rcv *r, const struct store_ds *top, struct tree_list *out)
{
	struct tree_list landed, have;
	int rc;
	memset(&landed, 0, sizeof landed);
	memset(&have, 0, sizeof have);
	out->n = 0;
	if ((rc = pkg_landing(r, &landed)) < 0)
		goto out;
	if ((rc = store_ds_walk(r->p, top, -1, tree_cb, &have)) < 0)
		goto out;
	for (size_t i = 0; i < have.n && rc == 0; i++) {
		size_t k = tree_lower(&landed, have.v[i].name);
		if (strcmp(have.v[i].name, r->top_local) &&
		    !(k < landed.n && !strcmp(landed.v[k].name, have.v[i].name)))
			rc = tree_add(out, have.v[i].name);
	}
out:
	free(landed.v);
	free(have.v);
	return rc;
}

int recv_pkg_follow_rename(struct rcv *r, const char *want, uint64_t from_guid)
{
	char parent[STORE_NAME_MAX + 1];
	struct tree_list cand;
	struct store_ds top, ds;
	int rc;
	memset(&cand, 0, sizeof cand);
	snprintf(parent, sizeof parent, "%s", want);
	char *sl = strrchr(parent, '/');
	if (!sl || !strcmp(want, r->top_local))
		return 0;
	*sl = 0;
	if ((rc = store_ds_lookup(r->p, parent, &ds)) < 0 ||
	    (rc = store_ds_lookup(r->p, r->top_local, &top)) < 0) {
		if (rc != -FERR_NOENT)
			return rc;
		ferry_err_clear();
		return 0;
	}
	if ((rc = unlanded(r, &top, &cand)) < 0)
		goto out;
	for (size_t j = 0; j < cand.n; j++) {
		if ((rc = store_ds_lookup(r->p, cand.v[j].name, &ds)) < 0 ||
		    (rc = has_guid(r, &ds, from_guid)) < 0)
			goto out;
		if (rc == 1) {
			/* it and its descendants move, in the package's
			 * transaction when it has one */
			if ((rc = store_ds_rename_held(r->p, cand.v[j].name, want)) == 0)
				rc = 1;
			goto out;
		}
	}
	rc = 0;
out:
	free(cand.v);
	return rc;
}

/* The DATASET records, then each substream (a BEGIN of a listed dataset)
 * up to PACKAGE_END. */
int recv_package(struct rcv *r, const struct stream_package *pk)
{
	struct stream_record rec;
	struct begin_copy bc;
	int rc;
	r->in_pkg = 1;
	r->pkg_flags = pk->flags;
	r->atomic = !r->dryrun && (r->o->flags & RECV_FORCE) && !(r->o->flags & RECV_RESUMABLE);
	snprintf(r->pkg_top, sizeof r->pkg_top, "%s", pk->top);
	if ((rc = recv_map_name(r, r->pkg_top, r->top_local, sizeof r->top_local)) < 0)
		return rc;
	uint32_t nds = pk->ndatasets;
	for (uint32_t i = 0; i < nds;) {
		if ((rc = stream_decoder_pull(r->dec, r->in, &rec)) <= 0)
			return rc == 0 ? ferry_err(FERR_TRUNCATED, "the package ended early") : rc;
		if (rec.type == STREAM_HINT) { /* the decoder allows it as record 1 only */
			recv_hint(r, &rec.hint);
			continue;
		}
		if (rec.type != STREAM_DATASET)
			return ferry_err(FERR_CORRUPT, "expected DATASET, got %s",
					 stream_type_name(rec.type));
		if ((rc = recv_pkg_add(r, &rec.dataset)) < 0)
			return rc;
		i++;
	}
	for (;;) {
		r->sub_start = stream_decoder_bytes(r->dec);
		if ((rc = stream_decoder_pull(r->dec, r->in, &rec)) <= 0)
			return rc == 0 ? ferry_err(FERR_TRUNCATED, "the package ended early") : rc;
		if (rec.type == STREAM_PACKAGE_END)
			return 0;
		if (rec.type != STREAM_BEGIN)
			return ferry_err(FERR_CORRUPT, "expected BEGIN, got %s", stream_type_name(rec.type));
		if ((rc = recv_begin_copy(&bc, &rec.begin)) == 0) {
			const struct pkgds *d = recv_pkg_find(r, bc.b.dataset);
			if (!d)
				rc = ferry_err(FERR_CORRUPT, "substream of '%s', which has no DATASET",
					       bc.b.dataset);
			else
				rc = recv_substream(r, &bc.b, d->props, d->nprops);
		}
		recv_begin_copy_free(&bc);
		if (rc < 0)
			return rc;
	}
}
