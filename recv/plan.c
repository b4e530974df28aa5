/* recv/plan.c — what a substream's BEGIN asks for, checked against the
 * pool before a byte of its body is read: the received names, the
 * dataset's snapshots against the stream's guids, the base of an
 * incremental, what -F must undo, and a partial receive to resume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int recv_map_name(struct rcv *r, const char *sent, char *out, size_t n)
{
	const char *tail;
	unsigned f = r->o->flags;
	char tgt[STORE_NAME_MAX + 1];
	snprintf(tgt, sizeof tgt, "%s", r->target);
	char *at = strchr(tgt, '@');
	if (at)
		*at = 0;
	if (r->in_pkg) {
		size_t tl = strlen(r->pkg_top);
		if (strncmp(sent, r->pkg_top, tl) || (sent[tl] && sent[tl] != '/'))
			return ferry_err(FERR_CORRUPT, "'%s' is not below the package top '%s'", sent,
					 r->pkg_top);
		const char *rel = sent + tl;
		const char *top = r->pkg_top;
		if (f & RECV_DISCARD) {
			const char *sl = strchr(top, '/');
			tail = sl ? sl : "";
		} else if (f & RECV_LASTNAME) {
			const char *sl = strrchr(top, '/');
			tail = sl ? sl : "";
			if (!sl) {
				if (snprintf(out, n, "%s/%s%s", tgt, top, rel) >= (int)n)
					goto long_name;
				goto check;
			}
		} else {
			tail = "";
		}
		if (snprintf(out, n, "%s%s%s", tgt, tail, rel) >= (int)n)
			goto long_name;
		goto check;
	}
	if (f & RECV_DISCARD) {
		const char *sl = strchr(sent, '/');
		tail = sl ? sl : "";
		if (snprintf(out, n, "%s%s", tgt, tail) >= (int)n)
			goto long_name;
	} else if (f & RECV_LASTNAME) {
		const char *sl = strrchr(sent, '/');
		if (snprintf(out, n, "%s/%s", tgt, sl ? sl + 1 : sent) >= (int)n)
			goto long_name;
	} else if (snprintf(out, n, "%s", tgt) >= (int)n) {
		goto long_name;
	}
check:
	return store_name_check(out, STORE_NAME_DATASET);
long_name:
	return ferry_err(FERR_NAME, "the received name for '%s' is too long", sent);
}

int recv_snaps_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct snaps *l = arg;
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *s;
	return 0;
}

static struct dryds *dry_find(struct rcv *r, const char *name)
{
	for (size_t i = 0; i < r->ndds; i++)
		if (!strcmp(r->dds[i].name, name))
			return &r->dds[i];
	return NULL;
}

int recv_dry_note(struct rcv *r, const char *name, uint64_t guid)
{
	struct dryds *d = dry_find(r, name);
	if (!d) {
		int rc;
		if ((rc = VEC_GROW(r->dds, r->capdds, r->ndds, 8, "receiving")) < 0)
			return rc;
		d = &r->dds[r->ndds++];
		snprintf(d->name, sizeof d->name, "%s", name);
	}
	d->guid = guid;
	return 0;
}

/* 1 when dataset name holds a partial receive (recv -s) for which it
 * was made, 2 when it existed before, else 0. */
static int has_partial(struct rcv *r, const char *name)
{
	struct store_partial pt;
	int rc = r->dryrun ? -FERR_NOENT : store_partial_get(r->p, name, &pt);
	if (rc == -FERR_NOENT) {
		ferry_err_clear();
		return 0;
	}
	return rc < 0 ? rc : pt.created ? 1 : 2;
}

/* Names, the dataset's snapshots against the stream's guids, the base of
 * an incremental, and what -F must undo: everything that can refuse the
 * substream before a byte of its body is read. */
int recv_sub_plan(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc;
	if ((rc = recv_map_name(r, b->dataset, s->dsname, sizeof s->dsname)) < 0)
		return rc;
	const char *at = strchr(r->target, '@');
	snprintf(s->snapname, sizeof s->snapname, "%s", at && !r->in_pkg ? at + 1 : b->snapshot);
	if (snprintf(s->full, sizeof s->full, "%s@%s", s->dsname, s->snapname) > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "'%s' is too long", s->full);
	if ((rc = store_name_check(s->full, STORE_NAME_SNAPSHOT)) < 0)
		return rc;
	rc = store_ds_lookup(r->p, s->dsname, &s->ds);
	if (rc == 0)
		s->exists = 1;
	else if (rc != -FERR_NOENT)
		return rc;
	else
		ferry_err_clear();
	if (!s->exists && b->from_guid && r->in_pkg && !r->dryrun) {
		/* the sender renamed it since the base: as zfs, follow */
		if ((rc = recv_pkg_follow_rename(r, s->dsname, b->from_guid)) < 0)
			return rc;
		if (rc == 1) {
			if ((rc = store_ds_lookup(r->p, s->dsname, &s->ds)) < 0)
				return rc;
			s->exists = 1;
		}
	}
	struct dryds *dd = r->dryrun ? dry_find(r, s->dsname) : NULL;
	if (s->exists) {
		int want = b->ds_type == STREAM_DS_VOLUME ? STORE_DS_VOLUME : STORE_DS_FILESYSTEM;
		if (s->ds.type != want)
			return ferry_err(FERR_INVAL, "'%s' is a %s, the stream brings a %s", s->dsname,
					 store_ds_type_name(s->ds.type), store_ds_type_name(want));
		if ((rc = store_snap_iter(r->p, &s->ds, recv_snaps_cb, &s->sl)) < 0)
			return rc;
		for (size_t i = 0; i < s->sl.n; i++) {
			if (s->sl.v[i].guid == b->to_guid) {
				/* a package that overlaps what the dataset has (a
				 * range sent again after a partial success): as in
				 * zfs, the snapshot it has is skipped, the rest come */
				if (r->in_pkg && !b->resume_pos) {
					snprintf(s->full, sizeof s->full, "%s", s->sl.v[i].name);
					s->skip = 1;
					return 0;
				}
				return ferry_err(FERR_EXISTS, "'%s' already has this snapshot (as '%s')",
						 s->dsname, s->sl.v[i].name);
			}
			if (!strcmp(s->sl.v[i].snapname, s->snapname))
				return ferry_err(FERR_EXISTS, "snapshot '%s' already exists", s->full);
		}
	}
	if (b->from_guid) {
		if (dd) {
			if (dd->guid != b->from_guid)
				return ferry_err(FERR_NOENT, "'%s' would not have the stream's base",
						 s->dsname);
		} else if (!s->exists) {
			return ferry_err(FERR_NOENT, "'%s' does not exist: an incremental stream needs "
					 "its base snapshot", s->dsname);
		} else {
			ssize_t bi = -1;
			for (size_t i = 0; i < s->sl.n; i++)
				if (s->sl.v[i].guid == b->from_guid)
					bi = (ssize_t)i;
			if (bi < 0)
				return ferry_err(FERR_NOENT, "'%s' does not have the stream's base snapshot "
						 "(guid %llu)", s->dsname,
						 (unsigned long long)b->from_guid);
			if ((size_t)bi != s->sl.n - 1) {
				if (!(r->o->flags & RECV_FORCE))
					return ferry_err(FERR_BUSY, "the base '%s' is not the newest snapshot "
							 "of '%s' (use -F to roll back)",
							 s->sl.v[bi].name, s->dsname);
				s->rollback_to = bi;
			}
			s->have_base = 1;
			s->base_id = s->sl.v[bi].id;
			memcpy(s->base_root, s->sl.v[bi].root, FERRY_HASH_LEN);
		}
	} else if (s->exists && !dd) {
		/* as zfs: a full stream makes a new dataset; -F overwrites one */
		if (!(r->o->flags & RECV_FORCE)) {
			if (s->sl.n)
				return ferry_err(FERR_EXISTS, "'%s' exists and has snapshots: a full "
						 "stream needs a new dataset (or -F to replace them)",
						 s->dsname);
			/* a dataset made by recv -s for the stream that resumes:
			 * recv_sub_resume decides */
			if ((rc = has_partial(r, s->dsname)) < 0 || rc == 1)
				return rc < 0 ? rc : recv_target_codec(r, s->dsname, &s->ds, s->props,
								       s->nprops, &s->c);
			if (rc == 2)
				return ferry_err(FERR_EXISTS, "resuming a full receive into the existing "
						 "'%s' needs -F to overwrite it", s->dsname);
			return ferry_err(FERR_EXISTS, "destination '%s' exists: a full stream needs a "
					 "new dataset (or -F to overwrite it)", s->dsname);
		}
		s->destroy_all = s->sl.n > 0;
	} else if (dd) {
		return ferry_err(FERR_EXISTS, "'%s' would receive two full streams", s->dsname);
	}
	return recv_target_codec(r, s->dsname, s->exists ? &s->ds : NULL, s->props, s->nprops, &s->c);
}

/* A partial receive of the dataset: only the stream that resumes it may
 * come in, and then what arrived before is taken up again. */
int recv_sub_resume(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	struct store_partial pt;
	int rc = r->dryrun ? -FERR_NOENT : store_partial_get(r->p, s->dsname, &pt);
	if (rc == -FERR_NOENT) {
		ferry_err_clear();
		if (b->resume_pos)
			return ferry_err(FERR_NOENT, "'%s' has no partial receive for this resumed "
					 "stream", s->dsname);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (!b->resume_pos)
		return ferry_err(FERR_BUSY, "'%s' holds a partial receive: resume it (ferry send -t "
				 "TOKEN, see receive_resume_token) or discard it (recv -A)", s->dsname);
	if (pt.to_guid != b->to_guid || pt.from_guid != b->from_guid || pt.pos != b->resume_pos)
		return ferry_err(FERR_INVAL, "the stream does not resume the partial receive of '%s' "
				 "(it is at %llu)", s->dsname, (unsigned long long)pt.pos);
	if ((rc = store_partial_load(r->p, s->dsname, r->objs)) < 0 ||
	    (rc = store_hset_count(r->objs, &r->objs_n)) < 0)
		return rc;
	s->partial = 1;
	return 0;
}
