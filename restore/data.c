/* restore/data.c — file data: written on the main thread for a volume,
 * through the worker pipeline for a tree (the main thread reads each
 * block as stored; decoding, verification and the write run on the
 * workers; a file's END job, collected after its blocks, sets its size and
 * attributes and closes it; a file of one block is created and written on
 * a worker). Holes and all-zero blocks are skipped, so sparse files stay
 * sparse. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ---- file data -------------------------------------------------------------------- */

struct wctx {
	struct rst *r;
	int fd;
	int fill_holes;
};

static int write_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct wctx *w = arg;
	struct rst *r = w->r;
	int rc;
	size_t n = (size_t)x->len;
	if (x->hole && !w->fill_holes)
		return 0;
	if (x->hole) {
		/* a block device has no holes: write zeros */
		if (r->bufcap < (1u << 20)) {
			uint8_t *nb = realloc(r->buf, 1u << 20);
			if (!nb)
				return ferry_err(FERR_NOMEM, "restoring");
			r->buf = nb;
			r->bufcap = 1u << 20;
		}
		memset(r->buf, 0, r->bufcap);
		for (uint64_t done = 0; done < x->len;) {
			size_t k = x->len - done < r->bufcap ? (size_t)(x->len - done) : r->bufcap;
			if ((rc = io_pwrite_full(w->fd, r->buf, k, (off_t)(off + done))) < 0)
				return rc;
			done += k;
		}
		return 0;
	}
	if (r->bufcap < n) {
		uint8_t *nb = realloc(r->buf, n);
		if (!nb)
			return ferry_err(FERR_NOMEM, "restoring");
		r->buf = nb;
		r->bufcap = n;
	}
	if ((rc = store_block_read(r->rd, x->hash, r->buf, n)) < 0)
		return rc;
	if (!w->fill_holes && codec_is_zero(r->buf, n))
		return 0;
	r->st->bytes += n;
	return io_pwrite_full(w->fd, r->buf, n, (off_t)off);
}

int rst_write_data(struct rst *r, int fd, const struct node_entry *e, int fill_holes)
{
	struct wctx w = {r, fd, fill_holes};
	int rc;
	if (e->size && e->child_type &&
	    (rc = node_bl_walk(rst_rd_node, r->rd, e->child_type, e->child, e->size, write_extent, &w)) < 0)
		return rc;
	if (!fill_holes && ftruncate(fd, (off_t)e->size) != 0)
		return ferry_err_errno(errno, "cannot set the size of a restored file");
	return 0;
}

/* ---- parallel file data ------------------------------------------------------------
 * The main thread creates files and reads each block as stored; decoding,
 * hash verification and the write run on the worker pool. A file's END job
 * (collected in order, after all its blocks) sets its size and attributes
 * and closes it. */

static int rjob_data(struct rjob *j);
static int rjob_out(struct rjob *j);

static int rjob_small(struct rst *rs, struct rjob *j)
{
	int r = 0;
	j->fd = openat(j->dirfd, j->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (j->fd < 0)
		return ferry_err_errno(errno, "restoring '%s': cannot create file", j->path);
	j->bytes = 0;
	if (j->has_data)
		r = rjob_data(j); /* an error names the file */
	/* (a new file whose one block was written whole has its size) */
	if (r == 0 && j->bytes != j->e.size && ftruncate(j->fd, (off_t)j->e.size) != 0)
		r = ferry_err_errno(errno, "restoring '%s': cannot set its size", j->path);
	if (r == 0)
		rst_set_attrs_jw(rs, &j->jw, j->fd, &j->e, 1);
	close(j->fd);
	j->fd = -1;
	return r;
}

/* rjob_prep's view of a job: its block, if it has one to check. */
static int rjob_check(void *jv, struct store_block_check *c)
{
	struct rjob *j = jv;
	if (!(j->kind == RJ_DATA || (j->kind == RJ_SMALL && j->has_data)) || rjob_out(j) < 0)
		return 0;
	*c = (struct store_block_check){.c = j->c, .payload = j->payload.data,
					.psize = j->payload.len, .lsize = j->lsize, .hash = j->hash,
					.scratch = j->out,
					.scratch_cap = j->c.id != CODEC_OFF ? j->outcap : 0,
					.mark = &j->verified};
	return 1;
}

/* On a worker, before it runs jobs[0..n): every block among them is
 * decoded and checked against its hash at once, eight hashes at a time;
 * rjob_data checks again, and names, any that did not pass. */
static void rjob_prep(void *const *jobs, size_t n, void *ctx)
{
	store_block_verify_jobs(jobs, n, rjob_check);
}

static int rjob_fn(void *jv, void *ctx)
{
	struct rjob *j = jv;
	if (j->kind == RJ_SMALL)
		return rjob_small(ctx, j);
	if (j->kind != RJ_DATA)
		return 0;
	return rjob_data(j);
}

/* err of job j, with the file's path in front. */
static int rjob_err(const struct rjob *j, int err)
{
	const char *path = j->kind == RJ_DATA ? j->fpath : j->path;
	char msg[512];
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	return ferry_err(-err, "restoring '%s': %s", path ? path : "?", msg);
}

/* j->out at least lsize bytes for a block to decode: 0 or -FERR_NOMEM. */
static int rjob_out(struct rjob *j)
{
	if (j->c.id == CODEC_OFF || j->outcap >= j->lsize)
		return 0;
	uint8_t *nb = realloc(j->out, j->lsize);
	if (!nb)
		return ferry_err(FERR_NOMEM, "restoring");
	j->out = nb;
	j->outcap = j->lsize;
	return 0;
}

/* Checks the block against its hash (decoding it into j->out), unless
 * rjob_prep did, and writes it; an error names the file, and a damaged
 * block its pack and offset. */
static int rjob_data(struct rjob *j)
{
	int r;
	j->bytes = 0;
	if (!j->verified) {
		if ((r = rjob_out(j)) < 0)
			return rjob_err(j, r);
		if ((r = store_block_verify(j->c, j->payload.data, j->payload.len, j->lsize,
					    j->hash, j->out, j->c.id != CODEC_OFF ? j->outcap : 0)) < 0)
			return rjob_err(j, store_block_damage(j->hash, &j->loc, r));
	}
	const uint8_t *src = j->c.id != CODEC_OFF ? j->out : j->payload.data;
	if (codec_is_zero(src, j->lsize))
		return 0; /* leave a hole */
	j->bytes = j->lsize;
	if ((r = io_pwrite_full(j->fd, src, j->lsize, (off_t)j->off)) < 0)
		return rjob_err(j, r);
	return 0;
}

/* The next job slot, its payload buffer set up the first time. */
static int rjob_get(struct rst *r, struct rjob **out)
{
	void *jv;
	int rc;
	if ((rc = pipeline_job(r->pl, &jv)) < 0)
		return rc;
	struct rjob *j = jv;
	if (!j->payload.max)
		fbuf_init(&j->payload, STORE_BLOCK_MAX);
	j->has_data = 0;
	j->verified = 0;
	memset(&j->jw, 0, sizeof j->jw);
	free(j->path); /* the slot's previous file's, collected by now */
	j->path = NULL;
	*out = j;
	return 0;
}

static void rjob_release(void *jv, void *ctx)
{
	struct rjob *j = jv;
	fbuf_release(&j->payload);
	free(j->out);
	free(j->path);
}

/* A job back, in order: a file's data counted, a worker's warning reported
 * under the file's path (r->path is the walk's, elsewhere by now); a
 * file's END (after all its data) sets its size and attributes and closes
 * it. */
static int rjob_done(void *jv, int res, void *ctx)
{
	struct rst *r = ctx;
	struct rjob *j = jv;
	int rc = res;
	if (j->kind == RJ_DATA || j->kind == RJ_SMALL) {
		if (rc < 0)
			r->err_named = 1; /* rjob_err named the file */
		r->st->bytes += j->bytes;
		if (r->o->progress)
			r->o->progress(r->o->arg, r->st);
		if (j->jw.n) {
			rst_warn_path(r, j->kind == RJ_DATA ? j->fpath : j->path, j->jw.what, j->jw.err);
			r->st->warnings += j->jw.n - 1;
		}
		return rc;
	}
	if (ftruncate(j->fd, (off_t)j->e.size) != 0)
		rc = ferry_err_errno(errno, "cannot set the size of a restored file");
	if (rc == 0)
		rst_set_attrs_fd(r, j->fd, &j->e, 1);
	close(j->fd);
	return rc;
}

/* A job dropped after a failure: a file's END still closes it (its data
 * jobs, before it, are collected already). */
static void rjob_cancel(void *jv, void *ctx)
{
	struct rjob *j = jv;
	if (j->kind == RJ_END)
		close(j->fd);
}

const struct pipeline_ops rst_job_ops = {rjob_fn, rjob_done, rjob_cancel, rjob_release,
					  rjob_prep};

/* Collects every job still queued: only then may an fd they use be closed
 * (a write to a closed fd fails, one to a reused fd number lands in
 * another file). Returns the first error, with its message. */
int rst_drain(struct rst *r)
{
	return pipeline_drain(r->pl);
}

struct pctx {
	struct rst *r;
	int fd;
	const char *path;   /* the file's, owned by its RJ_END job */
};

static int queue_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct pctx *pc = arg;
	struct rst *r = pc->r;
	struct rjob *j = NULL;
	uint32_t ls;
	int rc;
	if (x->hole)
		return 0;
	if ((rc = rjob_get(r, &j)) < 0)
		return rc;
	rc = store_block_read_stored(r->rd, x->hash, (struct codec_spec){CODEC_OFF, 0}, &j->c, &ls,
				     &j->payload, NULL);
	if (rc == 0 && ls != x->len)
		rc = ferry_err(FERR_CORRUPT, "block is %u bytes, expected %llu", ls,
			       (unsigned long long)x->len);
	if (rc < 0)
		return rc; /* the slot, not submitted, is handed out again */
	store_reader_last_loc(r->rd, &j->loc);
	j->kind = RJ_DATA;
	j->fpath = pc->path;
	j->fd = pc->fd;
	j->off = off;
	j->lsize = ls;
	memcpy(j->hash, x->hash, FERRY_HASH_LEN);
	return pipeline_submit(r->pl, j);
}

/* Closes fd and frees path, which queued jobs may still use, once none
 * can: after a failure (rc) to queue the rest of its file. Returns rc,
 * with its message. */
static int close_queued(struct rst *r, int fd, char *path, int rc)
{
	struct ferry_errsave e;
	int named = r->err_named;
	ferry_err_save(&e);
	(void)rst_drain(r); /* rc, the first failure, is the one to report */
	r->err_named = named;
	ferry_err_restore(&e);
	close(fd);
	free(path);
	return rc;
}

/* Queues the data of e into fd, then its END job, which (collected after
 * every data job of the file) closes fd and owns the path they name in
 * errors; on errors before the END is queued, fd is closed once no job
 * can use it any more. */
int rst_queue_file(struct rst *r, int fd, const struct node_entry *e)
{
	struct rjob *j = NULL;
	int rc;
	char *path = malloc(r->path.len + 1);
	if (!path)
		return close_queued(r, fd, NULL, ferry_err(FERR_NOMEM, "restoring"));
	memcpy(path, r->path.data, r->path.len);
	path[r->path.len] = 0;
	struct pctx pc = {r, fd, path};
	if (e->size && e->child_type &&
	    (rc = node_bl_walk(rst_rd_node, r->rd, e->child_type, e->child, e->size, queue_extent,
			       &pc)) < 0)
		return close_queued(r, fd, path, rc);
	if ((rc = rjob_get(r, &j)) < 0)
		return close_queued(r, fd, path, rc);
	j->kind = RJ_END;
	j->fd = fd;
	j->e = *e;
	j->path = path;
	/* the END job's now: done or cancel closes fd, whatever this says */
	return pipeline_submit(r->pl, j);
}

int rst_queue_data(struct rst *r, int fd, const char *path, const struct node_entry *e)
{
	struct pctx pc = {r, fd, path};
	if (!e->size || !e->child_type)
		return 0;
	return node_bl_walk(rst_rd_node, r->rd, e->child_type, e->child, e->size, queue_extent,
			    &pc);
}

struct first_ext {
	int n;
	struct node_extent x;
};

static int first_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct first_ext *f = arg;
	if (f->n++)
		return 1; /* more than one: not a small file */
	f->x = *x;
	return 0;
}

/* Queues a file of at most one extent as one job that creates it on a
 * worker. Returns 1 (nothing queued) for bigger files. */
int rst_queue_small(struct rst *r, int dirfd, const char *name, const struct node_entry *e)
{
	struct first_ext fe;
	struct rjob *j = NULL;
	uint32_t ls;
	int rc;
	memset(&fe, 0, sizeof fe);
	if (e->size && e->child_type) {
		rc = node_bl_walk(rst_rd_node, r->rd, e->child_type, e->child, e->size, first_extent, &fe);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return rc;
	}
	if ((rc = rjob_get(r, &j)) < 0)
		return rc;
	if (fe.n && !fe.x.hole) {
		rc = store_block_read_stored(r->rd, fe.x.hash, (struct codec_spec){CODEC_OFF, 0}, &j->c,
					     &ls, &j->payload, NULL);
		if (rc == 0 && ls != fe.x.len)
			rc = ferry_err(FERR_CORRUPT, "block is %u bytes, expected %llu", ls,
				       (unsigned long long)fe.x.len);
		if (rc < 0)
			return rc;
		store_reader_last_loc(r->rd, &j->loc);
		j->has_data = 1;
		j->lsize = ls;
		j->off = 0;
		memcpy(j->hash, fe.x.hash, FERRY_HASH_LEN);
	}
	j->kind = RJ_SMALL;
	j->dirfd = dirfd;
	snprintf(j->name, sizeof j->name, "%s", name);
	j->e = *e;
	if (fbuf_putc(&r->path, 0) == 0)
		r->path.len--;
	if (!(j->path = strdup((const char *)r->path.data)))
		return ferry_err(FERR_NOMEM, "restoring");
	return pipeline_submit(r->pl, j);
}

