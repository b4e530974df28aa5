/* recv/blocks.c — the storage rule on the pipeline's workers: each WRITE is
 * copied into a job slot, goes through store_block_rule for the dataset's
 * codec, and comes back in stream order to the one pack writer. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* On a worker: the block goes through the storage rule for the dataset's
 * codec; a block a node names is stored even when all zero (a capture
 * would have made it a hole). A logical block's content, and an encoded
 * one once decoded, is checked against its hash here, once. */
static int job_run(void *job, void *ctx)
{
	struct rjob *j = job;
	struct store_block_in in = {.codec = j->in, .payload = j->data, .psize = j->psize,
				    .lsize = j->lsize, .hash = j->hash, .tried = j->tried};
	struct store_block_bufs b = {j->s1, j->cap, j->s2, j->cap};
	return store_block_rule(&in, j->c, STORE_ZERO_ENCODE, &b, &j->blk);
}

/* A block back from the workers, in stream order: stored, and counted. */
static int job_done(void *job, int res, void *ctx)
{
	struct rcv *r = ctx;
	struct rjob *j = job;
	int rc, stored = 0;
	if (res < 0)
		return res;
	if (!r->dryrun && (rc = store_writer_put(r->w, &j->blk, &stored)) < 0)
		return rc;
	switch (j->blk.how) {
	case STORE_BLOCK_KEEP:
		r->st.blocks_kept++;
		r->st.lbytes_kept += j->lsize;
		break;
	case STORE_BLOCK_RECODE:
		r->st.blocks_recompressed++;
		r->st.lbytes_recompressed += j->lsize;
		break;
	case STORE_BLOCK_TRIED:
		r->st.blocks_tried++;
		r->st.lbytes_tried += j->lsize;
		break;
	default:
		r->st.blocks_logical++;
		r->st.lbytes_logical += j->lsize;
	}
	if (stored)
		r->st.pbytes_written += j->blk.psize;
	return 0;
}

static void job_release(void *job, void *ctx)
{
	struct rjob *j = job;
	free(j->data);
	free(j->s1);
	free(j->s2);
}

static const struct pipeline_ops job_ops = {job_run, job_done, NULL, job_release};

int recv_blocks_drain(struct rcv *r)
{
	return pipeline_drain(r->pl);
}

int recv_blocks_init(struct rcv *r)
{
	unsigned threads = pipeline_threads(r->o->threads);
	/* job buffers grow on demand (recv_block_submit), up to one block's bound */
	return pipeline_new(&r->pl, threads, threads * 4, sizeof(struct rjob), &job_ops, r);
}

int recv_block_submit(struct rcv *r, const struct stream_write *w, struct codec_spec c,
		      int tried)
{
	void *jv;
	int rc;
	if ((rc = pipeline_job(r->pl, &jv)) < 0)
		return rc;
	struct rjob *j = jv;
	memcpy(j->hash, w->hash, FERRY_HASH_LEN);
	j->lsize = w->lsize;
	j->psize = w->psize;
	j->in = (struct codec_spec){w->codec, w->level};
	j->c = c;
	j->tried = tried && w->codec == STREAM_CODEC_OFF;
	if (w->psize > STREAM_BLOCK_MAX || w->lsize > STREAM_BLOCK_MAX || w->psize > w->lsize)
		return ferry_err(FERR_LIMIT, "block of %u bytes", w->lsize);
	size_t need = codec_bound(w->lsize);
	if (need > j->cap) {
		/* room for the block and whatever an encoder writes for it */
		uint8_t *d = realloc(j->data, need), *a, *b;
		if (d)
			j->data = d;
		a = d ? realloc(j->s1, need) : NULL;
		if (a)
			j->s1 = a;
		b = a ? realloc(j->s2, need) : NULL;
		if (!b)
			return ferry_err(FERR_NOMEM, "receiving a block of %u bytes", w->lsize);
		j->s2 = b;
		j->cap = need;
	}
	memcpy(j->data, w->data, w->psize);
	return pipeline_submit(r->pl, j);
}
