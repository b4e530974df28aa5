/* capture/jobs.c — the pipeline of a tree or volume capture: records go
 * into jobs (many small files' records in one job, so a tree of small
 * files costs one thread hand-off per MiB, not per file), the workers hash
 * and compress them under the block rule, and the main thread takes them
 * back in submission order into the writer and the files' blocklists; a
 * file's end and a directory's end ride in the same jobs, so nodes are
 * built in order without waiting. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static int job_run(void *jv, void *ctx)
{
	struct job *j = jv;
	struct cap *c = ctx;
	struct store_block_in in[STORE_PRECHECK_MAX];
	struct store_block_bufs bb[STORE_PRECHECK_MAX];
	uint8_t hashes[STORE_PRECHECK_MAX][FERRY_HASH_LEN];
	struct item *at[STORE_PRECHECK_MAX];
	unsigned i = 0;
	while (i < j->n) {
		/* the next data records, hashed together (eight at a time) */
		size_t k = 0;
		for (; i < j->n && k < STORE_PRECHECK_MAX; i++) {
			struct item *it = &j->items[i];
			if (it->kind != JOB_DATA)
				continue;
			at[k] = it;
			in[k] = (struct store_block_in){.codec = {CODEC_OFF, 0},
							.payload = j->data + it->off,
							.psize = it->len, .lsize = it->len};
			bb[k] = (struct store_block_bufs){NULL, 0, j->scratch + it->off, it->len};
			k++;
		}
		store_block_precheck(in, bb, k, hashes);
		for (size_t q = 0; q < k; q++) {
			struct item *it = at[q];
			struct cfile *f = it->f;
			/* a record as it was in the snapshot before is known */
			it->known = in[q].hash && f->old && it->rec < f->nold &&
				    f->old_len[it->rec] == it->len &&
				    !memcmp(in[q].hash, f->old[it->rec], FERRY_HASH_LEN);
			if (it->known) {
				memcpy(it->blk.hash, in[q].hash, FERRY_HASH_LEN);
				continue;
			}
			int r = store_block_rule(&in[q], c->policy, STORE_ZERO_HOLE, &bb[q], &it->blk);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- the job pipeline ------------------------------------------------------------ */

/* The next job slot, its buffers made the first time it is used. */
static int job_get(struct cap *c, struct job **out)
{
	void *jv;
	int r;
	if ((r = pipeline_job(c->pl, &jv)) < 0)
		return r;
	struct job *j = jv;
	if (!j->data) {
		if (!(j->data = malloc(c->jobcap)) || !(j->scratch = malloc(c->jobcap))) {
			free(j->data);
			j->data = NULL;
			return ferry_err(FERR_NOMEM, "capture buffers");
		}
		j->cap = c->jobcap;
	}
	j->n = 0;
	j->used = 0;
	*out = j;
	return 0;
}

static void job_release(void *jv, void *ctx)
{
	struct job *j = jv;
	free(j->data);
	free(j->scratch);
}

static int finish_file(struct cap *c, struct cfile *f)
{
	int r = node_bl_builder_finish(&f->bl, &f->type, f->hash);
	if (r < 0)
		return r;
	f->done = 1;
	struct link *lk;
	if (f->link && (lk = cap_link_find(c, f->link_dev, f->link_ino, 0))) {
		lk->type = f->type;
		memcpy(lk->hash, f->hash, FERRY_HASH_LEN);
		lk->ready = 1;
	}
	f->link = 0;
	return 0;
}

/* A job back from the workers, in order: its blocks go to the writer and
 * into their files' blocklists; a file's or a directory's node is built
 * once everything before it is. */
static int job_done(void *jv, int res, void *ctx)
{
	struct job *j = jv;
	struct cap *c = ctx;
	int r = 0, stored = 0;
	if (res < 0)
		return res;
	for (unsigned i = 0; i < j->n && r >= 0; i++) {
		struct item *it = &j->items[i];
		struct node_extent x;
		memset(&x, 0, sizeof x);
		switch (it->kind) {
		case JOB_DATA:
			if (it->known) {
				/* unchanged record of a changed file: already in the pool */
				if ((r = store_writer_ref(c->w, it->blk.hash)) < 0)
					break;
				c->st->blocks_total++;
				x.len = it->len;
				memcpy(x.hash, it->blk.hash, FERRY_HASH_LEN);
				r = node_bl_builder_add(&it->f->bl, &x);
				break;
			}
			if ((r = store_writer_put(c->w, &it->blk, &stored)) < 0)
				break;
			c->st->blocks_total += it->blk.form != BLOCK_HOLE;
			x.hole = it->blk.form == BLOCK_HOLE;
			x.len = it->len;
			memcpy(x.hash, it->blk.hash, FERRY_HASH_LEN);
			r = node_bl_builder_add(&it->f->bl, &x);
			break;
		case JOB_HOLE:
			x.hole = 1;
			x.len = it->hole;
			r = node_bl_builder_add(&it->f->bl, &x);
			break;
		case JOB_DIR_END:
			r = cap_dir_finish(c, it->d);
			break;
		default:
			r = finish_file(c, it->f);
		}
	}
	return r;
}

const struct pipeline_ops cap_job_ops = {job_run, job_done, NULL, job_release, NULL};

/* Hands the job being filled to the pool. */
static int flush_cur(struct cap *c)
{
	struct job *j = c->cur;
	if (!j || !j->n)
		return 0;
	c->cur = NULL;
	return pipeline_submit(c->pl, j);
}

/* The job to add an item with need data bytes to. */
int cap_cur_job(struct cap *c, size_t need, struct job **out)
{
	int r;
	if (c->cur && (c->cur->n == JOB_ITEMS || c->cur->used + need > c->cur->cap) &&
	    (r = flush_cur(c)) < 0)
		return r;
	if (!c->cur && (r = job_get(c, &c->cur)) < 0)
		return r;
	*out = c->cur;
	return 0;
}

/* Every job done: what was queued is in the blocklists and nodes. */
int cap_drain(struct cap *c)
{
	int r;
	if ((r = flush_cur(c)) < 0)
		return r;
	return pipeline_drain(c->pl);
}

int cap_submit_simple(struct cap *c, struct cfile *f, int kind, uint64_t hole)
{
	struct job *j;
	int r = cap_cur_job(c, 0, &j);
	if (r < 0)
		return r;
	struct item *it = &j->items[j->n++];
	it->kind = kind;
	it->f = f;
	it->hole = hole;
	it->off = it->len = 0;
	return 0;
}

/* Reads fd (a regular file, image or block device of size bytes) into f's
 * blocklist. *got receives the bytes covered (less than size when the file
 * shrank while being read). dense says the file has as many blocks allocated
 * as its size needs, so it has no hole worth looking for: SEEK_DATA and
 * SEEK_HOLE are skipped (reading a hole gives zeros, and an all-zero record
 * becomes a hole anyway, so the snapshot holds the same data). *src_err
 * is set when the error is the source's (a read that failed), not the
 * pool's or the pipeline's. */
int cap_read_data(struct cap *c, int fd, uint64_t size, int dense, struct cfile *f,
		  uint64_t *got, int *src_err)
{
	uint64_t off = 0, data_end = 0;
	int seekable = !dense, r;
	while (off < size) {
		if (seekable && off >= data_end) {
			off_t d = lseek(fd, (off_t)off, SEEK_DATA);
			if (d < 0 && errno == ENXIO) {
				/* the rest is a hole */
				if ((r = cap_submit_simple(c, f, JOB_HOLE, size - off)) < 0)
					return r;
				off = size;
				break;
			}
			if (d < 0) {
				seekable = 0;
				data_end = size;
			} else {
				off_t h = lseek(fd, d, SEEK_HOLE);
				data_end = h < 0 ? size : (uint64_t)h;
				uint64_t start = (uint64_t)d - (uint64_t)d % c->rs;
				if (start > off) {
					if ((r = cap_submit_simple(c, f, JOB_HOLE, start - off)) < 0)
						return r;
					off = start;
				}
				if (off >= size)
					break;
			}
		}
		struct job *j;
		size_t want = size - off < c->rs ? (size_t)(size - off) : c->rs, n = 0;
		if ((r = cap_cur_job(c, want, &j)) < 0)
			return r;
		if ((r = io_pread_full(fd, j->data + j->used, want, (off_t)off, &n)) < 0) {
			*src_err = 1;
			return r;
		}
		if (n == 0)
			break;
		struct item *it = &j->items[j->n++];
		it->kind = JOB_DATA;
		it->f = f;
		it->off = j->used;
		it->len = n;
		it->rec = off / c->rs;
		j->used += n;
		c->st->bytes_read += n;
		off += n;
		cap_progress(c, 0);
		if (n < want)
			break;
	}
	*got = off;
	return 0;
}
