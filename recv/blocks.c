/* recv/blocks.c — the storage rule on the pipeline's workers: each WRITE is
 * copied into a job slot, goes through store_block_rule for the dataset's
 * codec, and comes back in stream order to the one pack writer. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* On a worker: each block goes through the storage rule for the
 * dataset's codec; a block a node names is stored even when all zero (a
 * capture would have made it a hole). A logical block's content, and an
 * encoded one once decoded, is checked against its hash here, once
 * (store_block_precheck: up to STORE_PRECHECK_MAX blocks' hashes at a
 * time). The job's nok says how many blocks passed before a failure. */
static int job_run(void *job, void *ctx)
{
	struct rjob *j = job;
	struct store_block_in in[STORE_PRECHECK_MAX];
	struct store_block_bufs bb[STORE_PRECHECK_MAX];
	uint8_t hashes[STORE_PRECHECK_MAX][FERRY_HASH_LEN];
	for (unsigned i0 = 0; i0 < j->n; i0 += STORE_PRECHECK_MAX) {
		unsigned k = j->n - i0 < STORE_PRECHECK_MAX ? j->n - i0 : STORE_PRECHECK_MAX;
		for (unsigned q = 0; q < k; q++) {
			struct rblk *b = &j->it[i0 + q];
			size_t bound = codec_bound(b->lsize);
			in[q] = (struct store_block_in){.codec = b->in, .payload = j->data + b->off,
							.psize = b->psize, .lsize = b->lsize,
							.hash = b->hash, .tried = b->tried};
			bb[q] = (struct store_block_bufs){j->s1 + b->soff, bound, j->s2 + b->soff, bound};
		}
		/* the hashes, eight at a time; then the rule, block by block */
		store_block_precheck(in, bb, k, hashes);
		for (unsigned q = 0; q < k; q++) {
			struct rblk *b = &j->it[i0 + q];
			int rc = store_block_rule(&in[q], b->c, STORE_ZERO_ENCODE, &bb[q], &b->blk);
			if (rc < 0) {
				j->nok = i0 + q;
				return rc;
			}
		}
	}
	j->nok = j->n;
	return 0;
}

/* One block back from the workers, in stream order: stored, and counted.
 * A block stored as it came (its payload still the job's copy of the
 * record's bytes) gives the writer the CRC-32C the decoder computed over
 * them, so the pack record's check costs no second pass. */
static int block_done(struct rcv *r, const struct rjob *j, const struct rblk *b)
{
	int rc, stored = 0;
	int as_sent = b->has_crc && b->blk.payload == j->data + b->off && b->blk.psize == b->psize;
	if (!r->dryrun && (rc = as_sent ? store_writer_put_crc(r->w, &b->blk, b->crc, &stored)
					: store_writer_put(r->w, &b->blk, &stored)) < 0)
		return rc;
	switch (b->blk.how) {
	case STORE_BLOCK_KEEP:
		r->st.blocks_kept++;
		r->st.lbytes_kept += b->lsize;
		break;
	case STORE_BLOCK_RECODE:
		r->st.blocks_recompressed++;
		r->st.lbytes_recompressed += b->lsize;
		break;
	case STORE_BLOCK_TRIED:
		r->st.blocks_tried++;
		r->st.lbytes_tried += b->lsize;
		break;
	default:
		r->st.blocks_logical++;
		r->st.lbytes_logical += b->lsize;
	}
	if (stored)
		r->st.pbytes_written += b->blk.psize;
	return 0;
}

/* A job back from the workers, in stream order: its blocks stored; after
 * a failure, those before the failed one, as if each had been a job. */
static int job_done(void *job, int res, void *ctx)
{
	struct rcv *r = ctx;
	struct rjob *j = job;
	unsigned n = res < 0 ? j->nok : j->n;
	for (unsigned i = 0; i < n; i++) {
		int rc = block_done(r, j, &j->it[i]);
		if (rc < 0)
			return rc;
	}
	return res < 0 ? res : 0;
}

static void job_release(void *job, void *ctx)
{
	struct rjob *j = job;
	free(j->data);
	free(j->s1);
	free(j->s2);
}

static const struct pipeline_ops job_ops = {job_run, job_done, NULL, job_release, NULL};

/* Hands the job being filled to the workers. */
static int flush_cur(struct rcv *r)
{
	struct rjob *j = r->cur;
	r->cur = NULL;
	if (!j || !j->n)
		return 0;
	return pipeline_submit(r->pl, j);
}

int recv_blocks_drain(struct rcv *r)
{
	int rc = flush_cur(r);
	if (rc < 0)
		return rc;
	return pipeline_drain(r->pl);
}

void recv_blocks_cancel(struct rcv *r)
{
	r->cur = NULL; /* its slot is handed out again, emptied */
	pipeline_cancel(r->pl);
}

int recv_blocks_init(struct rcv *r)
{
	unsigned threads = pipeline_threads(r->o->threads);
	/* job buffers grow on demand (recv_block_submit), up to RJOB_BYTES or
	 * one block's bound; a job on each worker and one being filled: what
	 * is in flight (and what a quota sees late) stays at threads + 1 jobs */
	r->cur = NULL;
	return pipeline_new(&r->pl, threads, threads + 1, sizeof(struct rjob), &job_ops, r);
}

int recv_block_submit(struct rcv *r, const struct stream_write *w, struct codec_spec c,
		      int tried)
{
	void *jv;
	int rc;
	if (w->psize > STREAM_BLOCK_MAX || w->lsize > STREAM_BLOCK_MAX || w->psize > w->lsize)
		return ferry_err(FERR_LIMIT, "block of %u bytes", w->lsize);
	size_t bound = codec_bound(w->lsize);
	struct rjob *j = r->cur;
	if (j && (j->n == RJOB_ITEMS || j->sused + bound > RJOB_BYTES) && (rc = flush_cur(r)) < 0)
		return rc;
	if (!r->cur) {
		if ((rc = pipeline_job(r->pl, &jv)) < 0)
			return rc;
		r->cur = jv;
		r->cur->n = r->cur->nok = 0;
		r->cur->used = r->cur->sused = 0;
	}
	j = r->cur;
	/* an empty job takes any one block; a job with blocks, up to
	 * RJOB_BYTES of their bounds (psize <= lsize <= bound). The buffers
	 * grow to what the blocks need (offsets, not pointers, name a block's
	 * bytes until the job runs), at least doubling, up to RJOB_BYTES or
	 * the one block. */
	size_t want = j->sused + bound;
	if (j->cap < want || j->scap < want) {
		size_t to = want; /* a block past RJOB_BYTES: exactly its room */
		if (want <= RJOB_BYTES) {
			to = j->cap * 2 > want + want / 2 ? j->cap * 2 : want + want / 2;
			if (to > RJOB_BYTES)
				to = RJOB_BYTES;
		}
		uint8_t *d = realloc(j->data, to), *a, *b;
		if (d) {
			j->data = d;
			j->cap = to;
		}
		a = d ? realloc(j->s1, to) : NULL;
		if (a)
			j->s1 = a;
		b = a ? realloc(j->s2, to) : NULL;
		if (b)
			j->s2 = b;
		j->scap = b ? to : 0; /* s1 and s2 are of to bytes only together */
		if (!b)
			return ferry_err(FERR_NOMEM, "receiving a block of %u bytes", w->lsize);
	}
	struct rblk *k = &j->it[j->n];
	memcpy(k->hash, w->hash, FERRY_HASH_LEN);
	k->lsize = w->lsize;
	k->psize = w->psize;
	k->in = (struct codec_spec){w->codec, w->level};
	k->c = c;
	k->tried = tried && w->codec == STREAM_CODEC_OFF;
	k->has_crc = w->has_crc;
	k->crc = w->data_crc;
	k->off = j->used;
	k->soff = j->sused;
	memcpy(j->data + j->used, w->data, w->psize);
	j->used += w->psize;
	j->sused += bound;
	j->n++;
	/* full: to the workers now, not when the next block comes */
	if (j->n == RJOB_ITEMS || j->sused >= RJOB_BYTES - RJOB_BYTES / 4)
		return flush_cur(r);
	return 0;
}
