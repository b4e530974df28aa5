/* recv/props.c — received properties (source "received"; the sender's
 * storage policy and source path never), and the codec a substream's
 * blocks are stored with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int excluded(struct rcv *r, const char *name)
{
	/* storage policy and the sender's source path are the receiver's own */
	if (!strcmp(name, "compression") || !strcmp(name, "compress"))
		return !(r->o->flags & RECV_KEEP_SOURCE_COMPRESSION);
	if (!strcmp(name, "recordsize") || !strcmp(name, "source") || !strcmp(name, "volsize") ||
	    !strcmp(name, "volblocksize"))
		return 1;
	for (size_t i = 0; i < r->o->nexclude; i++)
		if (!strcmp(r->o->exclude[i], name))
			return 1;
	for (size_t i = 0; i < r->o->nset; i++)
		if (!strcmp(r->o->set[i].name, name))
			return 1;
	return 0;
}

int recv_sets_here(const struct rcv *r, const char *name)
{
	return !r->in_pkg || !strcmp(name, r->top_local);
}

/* -x name: the stream's value of it is as if it had not been sent. */
static int user_excluded(struct rcv *r, const char *name)
{
	for (size_t i = 0; i < r->o->nexclude; i++)
		if (!strcmp(r->o->exclude[i], name))
			return 1;
	return 0;
}

int recv_apply_props(struct rcv *r, const struct store_ds *ds, const struct stream_prop *pv,
		       size_t n, int replace, int created)
{
	struct store_propset *set = NULL;
	size_t nset = 0;
	int rc;
	if (replace) {
		/* the stream carries the sender's whole set (send -p, -R, -I):
		 * as zfs, it replaces what was received before, so a property
		 * the sender no longer sets (or that -x leaves out) is no
		 * longer received here; one the receiver never records as
		 * received (storage policy, the source path) is left alone */
		const char **keep = n ? calloc(n, sizeof *keep) : NULL;
		size_t nk = 0;
		if (n && !keep)
			return ferry_err(FERR_NOMEM, "receiving properties");
		/* below a package's top, a property -o sets there is
		 * inherited from it, not received */
		int here = recv_sets_here(r, ds->name);
		for (size_t i = 0; i < n; i++) {
			int over = 0;
			for (size_t j = 0; !here && j < r->o->nset; j++)
				over |= !strcmp(r->o->set[j].name, pv[i].name);
			if (!user_excluded(r, pv[i].name) && !over)
				keep[nk++] = pv[i].name;
		}
		rc = store_prop_drop_received(r->p, ds, keep, nk);
		free(keep);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (excluded(r, pv[i].name))
			continue;
		struct store_propset ps = {pv[i].name, pv[i].value};
		if ((rc = store_prop_set(r->p, ds, &ps, 1, STORE_SRC_RECEIVED)) < 0) {
			/* a property this pool does not know or accept is skipped;
			 * anything else (the disk, the catalogue) fails the receive */
			if (rc != -FERR_PROP && rc != -FERR_NAME)
				return rc;
			ferry_err_clear();
			r->st.props_skipped++;
			continue;
		}
		r->st.props_received++;
	}
	if (!r->o->nset || !recv_sets_here(r, ds->name))
		return 0;
	/* a dataset this receive created got its -o set at creation; of it,
	 * what can be set only then (volblocksize) is not set again */
	if (!(set = calloc(r->o->nset, sizeof *set)))
		return ferry_err(FERR_NOMEM, "receiving properties");
	for (size_t i = 0; i < r->o->nset; i++)
		if (!created || !store_prop_create_only(r->o->set[i].name))
			set[nset++] = r->o->set[i];
	rc = nset ? store_prop_set(r->p, ds, set, nset, STORE_SRC_LOCAL) : 0;
	free(set);
	return rc < 0 ? rc : 0;
}

/* The compression blocks of ds (or of a new dataset named name) get. */
int recv_target_codec(struct rcv *r, const char *name, const struct store_ds *ds,
			const struct stream_prop *pv, size_t n, struct codec_spec *c)
{
	/* below a package's top the -o value is inherited (a dry run, which
	 * creates no top, takes it as it is) */
	for (size_t i = 0; (recv_sets_here(r, name) || r->dryrun) && i < r->o->nset; i++)
		if (!strcmp(r->o->set[i].name, "compression") || !strcmp(r->o->set[i].name, "compress"))
			return codec_parse(r->o->set[i].value, c);
	if (r->o->flags & RECV_KEEP_SOURCE_COMPRESSION)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(pv[i].name, "compression"))
				return codec_parse(pv[i].value, c);
	if (ds)
		return store_ds_compression(r->p, ds, c);
	/* a new dataset inherits from its nearest existing ancestor */
	char anc[STORE_NAME_MAX + 1];
	struct store_ds a;
	snprintf(anc, sizeof anc, "%s", name);
	for (;;) {
		char *sl = strrchr(anc, '/');
		if (!sl)
			return ferry_err(FERR_NOENT, "no ancestor of '%s' exists", name);
		*sl = 0;
		int rc = store_ds_lookup(r->p, anc, &a);
		if (rc == 0)
			return store_ds_compression(r->p, &a, c);
		if (rc != -FERR_NOENT)
			return rc;
		ferry_err_clear();
	}
}

/* volsize (and volblocksize) of a new volume: the sender's, else the
 * image rounded up to volblocksize (-o volblocksize, else the sender's,
 * else the default 16K); *vbs_s is the sender's volblocksize when it is
 * the one, NULL when -o or the default decides. */
int recv_volume_props(struct rcv *r, const struct sub *s, char *vs, size_t vsn,
			    const char **vbs_s)
{
	struct fbuf rb;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	uint64_t vbs = 16384, vsz = 0;
	int t, kind, rc;
	*vbs_s = NULL;
	fbuf_init(&rb, NODE_MAX);
	rc = store_pnodes_read(r->pn, s->b->root_hash, &t, &rb);
	if (rc == 0)
		rc = node_root_decode(rb.data, rb.len, &kind, &e, &xa);
	for (size_t i = 0; rc == 0 && i < s->nprops; i++) {
		if (!strcmp(s->props[i].name, "volblocksize")) {
			*vbs_s = s->props[i].value;
			vbs = strtoull(s->props[i].value, NULL, 10);
		} else if (!strcmp(s->props[i].name, "volsize")) {
			vsz = strtoull(s->props[i].value, NULL, 10);
		}
	}
	if (rc == 0) {
		if (vbs == 0 || vbs > ((uint64_t)1 << 20)) {
			vbs = 16384;
			*vbs_s = NULL;
		}
		/* -o volblocksize (validated by the creation) decides */
		for (size_t i = 0; recv_sets_here(r, s->dsname) && i < r->o->nset; i++) {
			char canon[32];
			if (strcmp(r->o->set[i].name, "volblocksize") ||
			    store_prop_validate("volblocksize", r->o->set[i].value,
						STORE_DS_VOLUME, 1, canon, sizeof canon) < 0) {
				ferry_err_clear(); /* the creation refuses it */
				continue;
			}
			vbs = strtoull(canon, NULL, 10);
			*vbs_s = NULL;
		}
		if (vsz < e.size || vsz % vbs)
			vsz = e.size / vbs * vbs + (e.size % vbs ? vbs : 0);
		if (vsz == 0)
			vsz = vbs;
		snprintf(vs, vsn, "%llu", (unsigned long long)vsz);
	}
	free(xa);
	fbuf_release(&rb);
	return rc;
}
