/* recv/recv.c — a ferry stream → a pool; see recv.h for the rules.
 *
 * Per substream: records are decoded (the decoder checks framing, chain,
 * fields, node hashes and codec-off block hashes); each NODE is decoded
 * with the store's strict decoders and its children looked up; each WRITE
 * goes to the worker pool, which applies the receive rule, and comes back
 * in order to be written by the one pack writer. At END the new tree is
 * walked once, then the snapshot is committed. Two TEMP-table sets keep
 * memory bounded: the objects of this substream (duplicates refused,
 * all must be reached) and the objects reached by the walk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The seams between stream/ and store/, which know nothing of each other:
 * a codec id on the wire is the store's, and a token fits the store's. */
_Static_assert((int)STREAM_CODEC_OFF == (int)CODEC_OFF && (int)STREAM_CODEC_LZ4 == (int)CODEC_LZ4 &&
	       (int)STREAM_CODEC_GZIP == (int)CODEC_GZIP && (int)STREAM_CODEC_ZLE == (int)CODEC_ZLE,
	       "stream codec ids are the store's");
_Static_assert(STREAM_TOKEN_MAX + 1 <= STORE_TOKEN_MAX, "a resume token fits the store's record");

void recv_begin_copy_free(struct begin_copy *c)
{
	for (size_t i = 0; i < c->nprops; i++) {
		free((char *)c->props[i].name);
		free((char *)c->props[i].value);
	}
	free(c->props);
	c->props = NULL;
	c->nprops = 0;
}

int recv_begin_copy(struct begin_copy *c, const struct stream_begin *b)
{
	memset(c, 0, sizeof *c);
	c->b = *b;
	snprintf(c->ds, sizeof c->ds, "%s", b->dataset);
	snprintf(c->snap, sizeof c->snap, "%s", b->snapshot);
	c->b.dataset = c->ds;
	c->b.snapshot = c->snap;
	c->b.props = NULL;
	c->b.nprops = 0;
	if (b->nprops && !(c->props = calloc(b->nprops, sizeof *c->props)))
		return ferry_err(FERR_NOMEM, "receiving");
	for (size_t i = 0; i < b->nprops; i++) {
		c->props[i].source = b->props[i].source;
		c->props[i].name = strdup(b->props[i].name);
		c->props[i].value = strdup(b->props[i].value);
		c->nprops++;
		if (!c->props[i].name || !c->props[i].value)
			return ferry_err(FERR_NOMEM, "receiving");
	}
	return 0;
}

int recv_substream(struct rcv *r, const struct stream_begin *b, const struct stream_prop *props,
		   size_t nprops)
{
	struct sub s;
	int rc, in_body = 0;
	uint64_t t0 = ferry_now_ns(), bytes0 = r->sub_start;
	memset(&s, 0, sizeof s);
	s.b = b;
	s.props = props;
	s.nprops = nprops;
	s.rollback_to = -1;
	memset(&r->st, 0, sizeof r->st);
	r->objs_n = r->reached = r->last_seq = 0;
	if ((rc = recv_sub_plan(r, &s)) < 0)
		goto out;
	if (r->o->begin) {
		char src[2 * STORE_NAME_MAX + 2];
		snprintf(src, sizeof src, "%s@%s", b->dataset, b->snapshot);
		r->o->begin(r->o->arg, src, s.full, b->from_guid != 0);
	}
	if (s.skip) {
		if ((rc = recv_sub_skip(r)) < 0)
			goto out;
		if (r->o->skipped)
			r->o->skipped(r->o->arg, s.full);
		goto out;
	}
	if ((rc = store_hset_new(r->p, 0, &r->objs)) < 0 ||
	    (rc = store_hset_new(r->p, 0, &r->seen)) < 0 || (rc = recv_sub_resume(r, &s)) < 0 ||
	    (rc = recv_sub_quota(r, &s)) < 0)
		goto out;
	in_body = 1;
	if ((rc = recv_sub_body(r, &s)) < 0)
		goto out;
	in_body = 0;
	if ((rc = recv_sub_verify(r, &s)) < 0)
		goto out;
	r->st.bytes = stream_decoder_bytes(r->dec) - bytes0;
	if (r->dryrun)
		rc = recv_dry_note(r, s.dsname, b->to_guid);
	else
		rc = recv_sub_commit(r, &s);
	if (rc < 0)
		goto out;
	r->st.snapshots = 1;
	r->st.ns = ferry_now_ns() - t0;
	if (r->o->done)
		r->o->done(r->o->arg, s.full, &r->st);
out:
	if (rc < 0 && in_body && (r->o->flags & RECV_RESUMABLE) && !r->dryrun)
		rc = recv_save_partial(r, &s, rc);
	if (rc < 0)
		recv_blocks_cancel(r); /* what is still running, before the buffers go */
	store_hset_free(r->objs);
	store_hset_free(r->seen);
	r->objs = r->seen = NULL;
	free(s.sl.v);
	/* totals */
	uint64_t *a = &r->tot.snapshots, *st = &r->st.snapshots;
	for (size_t i = 0; i < sizeof r->st / sizeof(uint64_t); i++)
		a[i] += st[i];
	return rc;
}

/* -d/-e receive below an existing target; otherwise the target's parent
 * must exist (as in zfs). */
static int check_target(struct store_pool *p, const char *target, unsigned flags)
{
	char must[STORE_NAME_MAX + 1];
	struct store_ds tmp;
	int rc;
	snprintf(must, sizeof must, "%s", target);
	char *cut = strchr(must, '@');
	if (cut)
		*cut = 0;
	if (!(flags & (RECV_DISCARD | RECV_LASTNAME)) && (cut = strrchr(must, '/')))
		*cut = 0;
	if ((rc = store_ds_lookup(p, must, &tmp)) == -FERR_NOENT)
		rc = ferry_err(FERR_NOENT, "'%s' does not exist", must);
	return rc;
}

/* The stream after its first record rec: one substream or a package. */
static int recv_stream(struct rcv *r, struct stream_record *rec)
{
	struct begin_copy bc;
	int rc;
	if (rec->type == STREAM_PACKAGE) {
		if (strchr(r->target, '@'))
			return ferry_err(FERR_INVAL, "a package is received into a dataset, not '%s'",
					 r->target);
		return recv_package(r, &rec->package);
	}
	if (rec->type != STREAM_BEGIN)
		return ferry_err(FERR_CORRUPT, "the stream starts with %s", stream_type_name(rec->type));
	if ((rc = recv_begin_copy(&bc, &rec->begin)) == 0)
		rc = recv_substream(r, &bc.b, bc.props, bc.nprops);
	recv_begin_copy_free(&bc);
	return rc;
}

/* After the last substream: nothing may follow, and a -F package, verified
 * to its end, may now destroy what the sender no longer has, in the
 * transaction its snapshots commit in. */
static int recv_finish(struct rcv *r)
{
	struct stream_record rec;
	int rc = stream_decoder_pull(r->dec, r->in, &rec);
	if (rc > 0)
		rc = ferry_err(FERR_CORRUPT, "records after the end of the stream");
	if (rc < 0)
		return rc;
	if (r->in_pkg && (r->o->flags & RECV_FORCE)) {
		if ((rc = recv_tx_open(r)) < 0)
			return rc;
		if ((r->pkg_flags & STREAM_F_TREE) && (rc = recv_pkg_destroy_tree(r)) < 0)
			return rc;
		if ((rc = recv_pkg_prune(r)) < 0)
			return rc;
	}
	if (r->tx) {
		r->tx = 0;
		if ((rc = store_tx_commit(r->p)) < 0)
			return rc;
	}
	return 0;
}

int recv_run(struct store_pool *p, const char *target, struct stream_source *in,
	     const struct recv_opts *o, struct recv_stats *st)
{
	struct rcv r;
	struct stream_record rec;
	int rc;
	memset(&r, 0, sizeof r);
	r.p = p;
	r.o = o;
	r.target = target;
	r.in = in;
	r.dryrun = (o->flags & RECV_DRYRUN) != 0;
	if ((rc = stream_decoder_new(&r.dec)) < 0 || (rc = store_writer_new(p, &r.w)) < 0 ||
	    (rc = store_pnodes_new(p, &r.pn)) < 0 || (rc = recv_blocks_init(&r)) < 0)
		goto out;
	store_writer_drop_cache(r.w);
	/* every block's content is checked against its hash on the workers
	 * (the storage rule), once; the decoder need not do it again */
	stream_decoder_defer_block_hashes(r.dec);
	if (r.dryrun && (rc = store_hset_new(p, 0, &r.dry)) < 0)
		goto out;
	if ((rc = check_target(p, target, o->flags)) < 0)
		goto out;
	rc = stream_decoder_pull(r.dec, in, &rec);
	if (rc == 0)
		rc = ferry_err(FERR_TRUNCATED, "the stream is empty");
	if (rc < 0 || (rc = recv_stream(&r, &rec)) < 0 || (rc = recv_finish(&r)) < 0)
		goto out;
	r.tot.bytes = stream_decoder_bytes(r.dec);
	if (st)
		*st = r.tot;
out:
	if (r.tx) {
		/* a failure anywhere in a -F package: none of it happened */
		store_tx_rollback(p);
		r.tx = 0;
	}
	pipeline_free(r.pl);
	store_hset_free(r.objs);
	store_hset_free(r.seen);
	store_hset_free(r.dry);
	store_pnodes_free(r.pn);
	store_writer_free(r.w);
	stream_decoder_free(r.dec);
	recv_pkg_free(&r);
	free(r.dds);
	return rc;
}

int recv_abort(struct store_pool *p, const char *target)
{
	struct store_partial pt;
	struct store_ds ds;
	struct store_snap sn;
	int rc;
	if ((rc = store_partial_get(p, target, &pt)) < 0)
		return rc;
	/* the partial state and the dataset made for it go together */
	if ((rc = store_tx_begin(p)) < 0)
		return rc;
	if ((rc = store_partial_drop(p, target)) < 0)
		goto out;
	if (!pt.created)
		goto out;
	if ((rc = store_ds_lookup(p, target, &ds)) < 0) {
		if (rc == -FERR_NOENT) {
			ferry_err_clear();
			rc = 0;
		}
		goto out;
	}
	/* ... unless it has gained snapshots or children since */
	rc = store_snap_newest(p, &ds, &sn);
	if (rc == 0)
		goto out;
	if (rc != -FERR_NOENT)
		goto out;
	ferry_err_clear();
	rc = store_ds_destroy(p, target, 0);
	if (rc == -FERR_BUSY) {
		ferry_err_clear();
		rc = 0;
	}
out:
	if (rc < 0) {
		store_tx_rollback(p);
		return rc;
	}
	return store_tx_commit(p);
}

int recv_resume_token(struct store_pool *p, const char *target, char *out, size_t n)
{
	struct store_partial pt;
	int rc;
	if ((rc = store_partial_get(p, target, &pt)) < 0)
		return rc;
	if (strlen(pt.token) >= n)
		return ferry_err(FERR_LIMIT, "resume token buffer too small");
	memcpy(out, pt.token, strlen(pt.token) + 1);
	return 0;
}
