/* recv/commit.c — a verified substream committed (its dataset when new,
 * -F's rollback or destruction, the snapshot, the end of a partial
 * receive, its properties) in one catalogue transaction; the room its
 * quotas leave it while it arrives; and recv -s's partial state after a
 * failure in the body (a quota passed included: as in zfs, what arrived
 * stays resumable, so raising the quota lets the same stream finish). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* recv -F of a package: the first commit opens the transaction that the
 * whole package, its rollbacks and its destructions commit in, at its end
 * (recv_run). Opened late so the catalogue's write lock is not held while
 * the first substream arrives. */
int recv_tx_open(struct rcv *r)
{
	int rc;
	if (!r->atomic || r->tx)
		return 0;
	if ((rc = store_tx_begin(r->p)) < 0)
		return rc;
	r->tx = 1;
	return 0;
}

/* Creates the dataset a stream brings, with the -o properties (and a
 * volume's size), inside the caller's transaction. */
int recv_sub_create(struct rcv *r, struct sub *s, int type, int with_volsize)
{
	struct store_propset *cp = NULL;
	const char *vbs_s = NULL;
	char vs[32];
	size_t ncp = 0;
	int rc;
	if (!(cp = calloc(r->o->nset + 2, sizeof *cp)))
		return ferry_err(FERR_NOMEM, "creating '%s'", s->dsname);
	for (size_t i = 0; recv_sets_here(r, s->dsname) && i < r->o->nset; i++)
		cp[ncp++] = r->o->set[i];
	if (type == STORE_DS_VOLUME && with_volsize) {
		if ((rc = recv_volume_props(r, s, vs, sizeof vs, &vbs_s)) < 0)
			goto out;
		cp[ncp++] = (struct store_propset){"volsize", vs};
		if (vbs_s)
			cp[ncp++] = (struct store_propset){"volblocksize", vbs_s};
	}
	if ((rc = store_ds_create(r->p, s->dsname, type, 1, cp, ncp)) < 0 ||
	    (rc = store_ds_lookup(r->p, s->dsname, &s->ds)) < 0)
		goto out;
out:
	free(cp);
	return rc;
}

/* Commits a verified substream: the dataset when it is new, the rollback
 * or destruction -F asked for, the snapshot, the end of the partial
 * receive it resumes and its properties, in one catalogue transaction
 * (the package's, with an atomic -F package), so a crash at any point
 * leaves all of it or none. */
int recv_sub_commit(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc, own = !r->atomic, created = !s->exists;
	store_writer_pause(r->w);
	if ((rc = own ? store_tx_begin(r->p) : recv_tx_open(r)) < 0)
		return rc;
	if (!s->exists) {
		int type = b->ds_type == STREAM_DS_VOLUME ? STORE_DS_VOLUME : STORE_DS_FILESYSTEM;
		if ((rc = recv_sub_create(r, s, type, 1)) < 0)
			goto out;
	}
	if (s->rollback_to >= 0 &&
	    (rc = store_snap_rollback(r->p, &s->sl.v[s->rollback_to], 1)) < 0)
		goto out;
	if (s->destroy_all && (rc = store_snap_destroy(r->p, s->sl.v, s->sl.n)) < 0)
		goto out;
	if ((rc = store_writer_commit_snapshot(r->w, &s->ds, s->snapname, b->root_hash, b->to_guid,
					       b->creation_ns, NULL)) < 0)
		goto out;
	if (s->partial && (rc = store_partial_drop(r->p, s->dsname)) < 0)
		goto out;
	rc = recv_apply_props(r, &s->ds, s->props, s->nprops, (b->flags & STREAM_F_PROPS) != 0,
			      created);
out:
	if (!own)
		return rc; /* the package's transaction: recv_run ends it */
	if (rc < 0) {
		store_tx_rollback(r->p);
		return rc;
	}
	return store_tx_commit(r->p);
}

/* The room is a lower bound of what the commit counts (store/quota.c),
 * so a receive stopped here would have been refused at its commit; the
 * commit's check stays the exact one. A dry run stores nothing. */
int recv_sub_quota(struct rcv *r, struct sub *s)
{
	int64_t keep = INT64_MAX;
	memset(&r->quota, 0, sizeof r->quota);
	if (r->dryrun)
		return 0;
	if (s->destroy_all)
		keep = -1;
	else if (s->rollback_to >= 0)
		keep = (int64_t)s->sl.v[s->rollback_to].createtxg;
	return store_quota_room(r->p, s->dsname, keep, &r->quota);
}

int recv_quota_check(const struct rcv *r)
{
	return store_quota_passed(&r->quota, r->st.pbytes_written);
}

/* recv -s: after err in the body, keeps what arrived whole (every record
 * before the failure passed the chain) so `send -t` can continue: the
 * dataset made for it (a new one) and the partial state commit in one
 * transaction. Returns err, with a detail that says how to resume. */
int recv_save_partial(struct rcv *r, struct sub *s, int err)
{
	const struct stream_begin *b = s->b;
	char msg[512];
	struct store_partial pt;
	struct stream_token t;
	int rc, tx = 0;
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	/* finish the blocks in flight; a block that failed its own check, or
	 * could not be stored, ends it (nothing after it was kept whole) */
	if (recv_blocks_drain(r) < 0)
		return ferry_err(-err, "%s", msg);
	if (!r->last_seq)
		return ferry_err(-err, "%s", msg);
	memset(&pt, 0, sizeof pt);
	memset(&t, 0, sizeof t);
	t.flags = b->flags & (STREAM_F_COMPRESSED | STREAM_F_PROPS);
	t.to_guid = b->to_guid;
	t.from_guid = b->from_guid;
	t.resume_pos = r->last_seq;
	snprintf(t.dataset, sizeof t.dataset, "%s", b->dataset);
	snprintf(t.snapshot, sizeof t.snapshot, "%s", b->snapshot);
	if ((rc = stream_token_encode(&t, pt.token, sizeof pt.token)) < 0)
		goto fail;
	pt.to_guid = b->to_guid;
	pt.from_guid = b->from_guid;
	pt.pos = r->last_seq;
	if (!s->exists && b->ds_type == STREAM_DS_VOLUME) {
		rc = ferry_err(FERR_UNSUPPORTED, "a partial receive of a new volume");
		goto fail;
	}
	store_writer_pause(r->w);
	if ((rc = store_tx_begin(r->p)) < 0)
		goto fail;
	tx = 1;
	if (!s->exists) {
		/* the partial state belongs to a dataset, as in zfs */
		if ((rc = recv_sub_create(r, s, STORE_DS_FILESYSTEM, 0)) < 0)
			goto fail;
		pt.created = 1;
	} else {
		struct store_partial old;
		rc = store_partial_get(r->p, s->dsname, &old);
		if (rc == 0)
			pt.created = old.created;
		else if (rc != -FERR_NOENT)
			goto fail;
		ferry_err_clear();
	}
	if ((rc = store_partial_save(r->w, r->p, s->dsname, r->objs, &pt)) < 0)
		goto fail;
	tx = 0;
	if ((rc = store_tx_commit(r->p)) < 0)
		goto fail;
	if (r->o->resume_how)
		return ferry_err(-err, "%s; the %llu records received are kept: resume with %s",
				 msg, (unsigned long long)r->last_seq, r->o->resume_how);
	return ferry_err(-err, "%s; the %llu records received are kept: resume with "
			 "'ferry send -t TOKEN' (ferry get receive_resume_token %s)",
			 msg, (unsigned long long)r->last_seq, s->dsname);
fail:
	if (tx)
		store_tx_rollback(r->p);
	snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
		 " (and the partial state could not be kept: %s)", ferry_errmsg(rc));
	return ferry_err(-err, "%s", msg);
}
