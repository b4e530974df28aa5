/* lib/pipeline.c — the one ordered worker pipeline (see lib.h).
 *
 * Jobs live in a ring of nslots slots indexed by sequence number: head is
 * the oldest uncollected job, next_run the oldest no worker has picked,
 * tail the next to be submitted (head <= next_run <= tail, tail - head <=
 * nslots). The caller's thread alone moves head and tail, so it reads them
 * without the lock; workers move next_run, and so does the collector when
 * it takes a passed job (pipeline_submit_done: done before any worker
 * stepped over it). One mutex guards the rest: jobs are coarse (a block,
 * a MiB of records, a file), so contention on it is noise next to the
 * work. Nothing here adds a system call per job beyond
 * the futex wake-ups of the two condition variables, or copies a job. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

struct pl_slot {
	int result;
	char *errmsg;          /* a failed run's detail text, for the collector */
	unsigned char done;    /* run (or skipped) and not yet collected */
	unsigned char skipped; /* not run: it came after a failed job, or was cancelled */
	unsigned char used;    /* handed out at least once: released at the end */
	unsigned char passed;  /* queued done (pipeline_submit_done): no worker runs it */
};

struct pipeline {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* workers: a job was queued, or quit */
	pthread_cond_t done_cv; /* the collector: the job at head is done */
	struct pipeline_ops ops;
	void *ctx;
	unsigned char *jobs;
	size_t stride;
	struct pl_slot *slot;
	unsigned nslots;
	uint64_t head, next_run, tail;
	uint64_t fail_seq;      /* the oldest job whose run failed: later ones are skipped */
	int quit;
	unsigned idle;          /* workers waiting for a job */
	pthread_t *threads;
	unsigned nthreads;
	int err;                /* the first failure; every later call returns it */
	char errmsg[1024];
};

static void *job_at(const struct pipeline *pl, uint64_t seq)
{
	return pl->jobs + (size_t)(seq % pl->nslots) * pl->stride;
}

static struct pl_slot *slot_at(const struct pipeline *pl, uint64_t seq)
{
	return &pl->slot[seq % pl->nslots];
}

/* Runs job seq (on a worker, or inline) and records its outcome; called
 * without the lock. The detail text is thread-local: it is copied out, or
 * the collector would only see the bare strerror. */
static void run_job(struct pipeline *pl, uint64_t seq, int *res, char **msg)
{
	ferry_err_clear();
	*res = pl->ops.run(job_at(pl, seq), pl->ctx);
	const char *d = *res < 0 ? ferry_err_detail() : NULL;
	*msg = d ? strdup(d) : NULL;
}

static void finish_job(struct pipeline *pl, uint64_t seq, int res, char *msg)
{
	struct pl_slot *s = slot_at(pl, seq);
	s->result = res;
	s->errmsg = msg;
	s->done = 1;
	if (res < 0 && seq < pl->fail_seq)
		pl->fail_seq = seq;
	if (seq == pl->head)
		pthread_cond_broadcast(&pl->done_cv);
}

/* Marks job seq, behind a failed one, as skipped: it would only be
 * cancelled. Under the lock. */
static void skip_job(struct pipeline *pl, uint64_t seq)
{
	struct pl_slot *s = slot_at(pl, seq);
	s->skipped = 1;
	s->done = 1;
	if (seq == pl->head)
		pthread_cond_broadcast(&pl->done_cv);
}

/* Under the lock: takes the jobs this worker runs next into seq (at least
 * one when any is waiting; with ops.prep up to PIPELINE_BATCH, its share
 * of those waiting with the workers that wait for work, so none of them
 * idles for want of a job). Passed jobs only keep their place in the
 * order; jobs behind a failure are skipped. */
static size_t take_jobs(struct pipeline *pl, uint64_t *seq)
{
	size_t want = 1, n = 0;
	if (pl->ops.prep) {
		uint64_t waiting = pl->tail - pl->next_run, share = 1 + (uint64_t)pl->idle;
		want = (size_t)((waiting + share - 1) / share);
		if (want > PIPELINE_BATCH)
			want = PIPELINE_BATCH;
	}
	while (n < want && pl->next_run < pl->tail) {
		uint64_t q = pl->next_run++;
		if (slot_at(pl, q)->passed)
			continue;
		if (q > pl->fail_seq) {
			skip_job(pl, q);
			continue;
		}
		seq[n++] = q;
	}
	return n;
}

static void *worker_main(void *arg)
{
	struct pipeline *pl = arg;
	uint64_t seq[PIPELINE_BATCH];
	void *jobs[PIPELINE_BATCH];
	pthread_mutex_lock(&pl->mu);
	for (;;) {
		while (!pl->quit && pl->next_run == pl->tail) {
			pl->idle++;
			pthread_cond_wait(&pl->work_cv, &pl->mu);
			pl->idle--;
		}
		if (pl->quit)
			break;
		size_t n = take_jobs(pl, seq);
		if (!n)
			continue;
		pthread_mutex_unlock(&pl->mu);
		if (n > 1) {
			for (size_t i = 0; i < n; i++)
				jobs[i] = job_at(pl, seq[i]);
			pl->ops.prep(jobs, n, pl->ctx);
		}
		for (size_t i = 0; i < n; i++) {
			int res, behind = 0;
			char *msg;
			if (i > 0) {
				/* a job of this batch before it may have failed */
				pthread_mutex_lock(&pl->mu);
				if ((behind = seq[i] > pl->fail_seq))
					skip_job(pl, seq[i]);
				pthread_mutex_unlock(&pl->mu);
			}
			if (behind)
				continue;
			run_job(pl, seq[i], &res, &msg);
			pthread_mutex_lock(&pl->mu);
			finish_job(pl, seq[i], res, msg);
			pthread_mutex_unlock(&pl->mu);
		}
		pthread_mutex_lock(&pl->mu);
	}
	pthread_mutex_unlock(&pl->mu);
	return NULL;
}

/* Waits for the job at head and takes it out of the ring. */
static void *take_head(struct pipeline *pl, int *res, char **msg, int *skipped)
{
	pthread_mutex_lock(&pl->mu);
	struct pl_slot *s = slot_at(pl, pl->head);
	while (!s->done)
		pthread_cond_wait(&pl->done_cv, &pl->mu);
	void *job = job_at(pl, pl->head);
	*res = s->result;
	*msg = s->errmsg;
	*skipped = s->skipped;
	s->errmsg = NULL;
	s->done = s->skipped = s->passed = 0;
	pl->head++;
	if (pl->next_run < pl->head)
		pl->next_run = pl->head; /* a passed job no worker stepped over yet */
	pthread_mutex_unlock(&pl->mu);
	return job;
}

/* Drops every job in flight: unstarted ones are not run, running ones are
 * waited for, and each goes to ops.cancel in order. The ring is empty
 * after. */
static void cancel_rest(struct pipeline *pl)
{
	pthread_mutex_lock(&pl->mu);
	for (uint64_t seq = pl->next_run; seq < pl->tail; seq++) {
		slot_at(pl, seq)->skipped = 1;
		slot_at(pl, seq)->done = 1;
	}
	pl->next_run = pl->tail;
	pthread_mutex_unlock(&pl->mu);
	while (pl->head < pl->tail) {
		int res, skipped;
		char *msg;
		void *job = take_head(pl, &res, &msg, &skipped);
		free(msg);
		if (pl->ops.cancel)
			pl->ops.cancel(job, pl->ctx);
	}
	pthread_mutex_lock(&pl->mu);
	pl->fail_seq = UINT64_MAX;
	pthread_mutex_unlock(&pl->mu);
}

static int reraise(const struct pipeline *pl)
{
	return ferry_err(-pl->err, "%s", pl->errmsg);
}

/* The first failure: kept, and every job still in flight cancelled. */
static int fail(struct pipeline *pl, int r)
{
	pl->err = r;
	snprintf(pl->errmsg, sizeof pl->errmsg, "%s", ferry_errmsg(r));
	cancel_rest(pl);
	return reraise(pl); /* the cancel callbacks may have recorded their own */
}

/* Collects the oldest job: ops.done on this thread. */
static int collect_one(struct pipeline *pl)
{
	int res, skipped, r;
	char *msg;
	void *job = take_head(pl, &res, &msg, &skipped);
	if (skipped) {
		/* only behind a failed job, which fail() collected first */
		free(msg);
		if (pl->ops.cancel)
			pl->ops.cancel(job, pl->ctx);
		return 0;
	}
	if (res < 0) {
		if (msg)
			(void)ferry_err(res, "%s", msg);
		else
			ferry_err_clear();
		free(msg);
		r = pl->ops.done ? pl->ops.done(job, res, pl->ctx) : res;
		return fail(pl, r < 0 ? r : res);
	}
	r = pl->ops.done ? pl->ops.done(job, 0, pl->ctx) : 0;
	return r < 0 ? fail(pl, r) : 0;
}

unsigned pipeline_threads(unsigned asked)
{
	if (asked)
		return asked;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	return ncpu > 0 ? (unsigned)ncpu : 1;
}

static void stop_workers(struct pipeline *pl, unsigned started)
{
	pthread_mutex_lock(&pl->mu);
	pl->quit = 1;
	pthread_cond_broadcast(&pl->work_cv);
	pthread_mutex_unlock(&pl->mu);
	for (unsigned i = 0; i < started; i++)
		pthread_join(pl->threads[i], NULL);
}

static void destroy(struct pipeline *pl)
{
	free(pl->threads);
	free(pl->slot);
	free(pl->jobs);
	pthread_cond_destroy(&pl->done_cv);
	pthread_cond_destroy(&pl->work_cv);
	pthread_mutex_destroy(&pl->mu);
	free(pl);
}

int pipeline_new(struct pipeline **out, unsigned threads, unsigned slots, size_t job_size,
		 const struct pipeline_ops *ops, void *ctx)
{
	struct pipeline *pl;
	size_t bytes;
	unsigned started = 0;
	int r = 0, e;
	if (!ops || !ops->run || slots == 0 || job_size == 0)
		return ferry_err(FERR_INVAL, "pipeline: need a run function, a job size and a slot");
	if (!(pl = calloc(1, sizeof *pl)))
		return ferry_err(FERR_NOMEM, "starting a pipeline");
	pthread_mutex_init(&pl->mu, NULL);
	pthread_cond_init(&pl->work_cv, NULL);
	pthread_cond_init(&pl->done_cv, NULL);
	pl->ops = *ops;
	pl->ctx = ctx;
	pl->nslots = slots;
	pl->nthreads = threads;
	pl->fail_seq = UINT64_MAX;
	/* whole cache lines per slot: workers writing neighbouring jobs do
	 * not share one */
	pl->stride = (job_size + 63) & ~(size_t)63;
	if (pl->stride < job_size || sz_mul(pl->stride, slots, &bytes) < 0) {
		r = ferry_err(FERR_OVERFLOW, "pipeline: %u slots of %zu bytes", slots, job_size);
		goto fail;
	}
	if (!(pl->jobs = calloc(1, bytes)) || !(pl->slot = calloc(slots, sizeof *pl->slot)) ||
	    (threads && !(pl->threads = calloc(threads, sizeof *pl->threads)))) {
		r = ferry_err(FERR_NOMEM, "starting a pipeline of %u slots, %u threads", slots, threads);
		goto fail;
	}
	for (; started < threads; started++) {
		if ((e = pthread_create(&pl->threads[started], NULL, worker_main, pl)) != 0) {
			r = ferry_err_errno(e, "pipeline: cannot start thread %u of %u", started + 1,
					    threads);
			goto fail;
		}
	}
	*out = pl;
	return 0;
fail:
	stop_workers(pl, started);
	destroy(pl);
	return r;
}

int pipeline_job(struct pipeline *pl, void **job)
{
	int r;
	if (pl->err)
		return reraise(pl);
	if (pl->tail - pl->head == pl->nslots && (r = collect_one(pl)) < 0)
		return r;
	slot_at(pl, pl->tail)->used = 1;
	*job = job_at(pl, pl->tail);
	return 0;
}

/* Queues job, the slot pipeline_job gave; passed: as already run with
 * result 0 (pipeline_submit_done). */
static int submit(struct pipeline *pl, void *job, int passed)
{
	if (job != job_at(pl, pl->tail) || pl->tail - pl->head == pl->nslots)
		BUG("pipeline_submit: not the slot pipeline_job handed out");
	if (pl->err) {
		if (pl->ops.cancel)
			pl->ops.cancel(job, pl->ctx);
		return reraise(pl);
	}
	if (!pl->nthreads) {
		/* no worker: the job runs here, now, and is collected at once */
		uint64_t seq = pl->tail;
		int res = 0;
		char *msg = NULL;
		pl->tail++;
		pl->next_run++;
		if (!passed)
			run_job(pl, seq, &res, &msg);
		finish_job(pl, seq, res, msg);
		return collect_one(pl);
	}
	pthread_mutex_lock(&pl->mu);
	struct pl_slot *s = slot_at(pl, pl->tail);
	s->result = 0;
	s->skipped = 0;
	/* a passed job is done from the start and wakes no worker: one that
	 * is awake steps over it (worker_main), and cancel_rest marks it
	 * skipped like any other behind a failure */
	s->passed = (unsigned char)passed;
	s->done = (unsigned char)passed;
	pl->tail++;
	if (!passed)
		pthread_cond_signal(&pl->work_cv);
	pthread_mutex_unlock(&pl->mu);
	return 0;
}

int pipeline_submit(struct pipeline *pl, void *job)
{
	return submit(pl, job, 0);
}

int pipeline_submit_done(struct pipeline *pl, void *job)
{
	return submit(pl, job, 1);
}

int pipeline_drain(struct pipeline *pl)
{
	int r;
	if (pl->err)
		return reraise(pl);
	while (pl->head < pl->tail)
		if ((r = collect_one(pl)) < 0)
			return r;
	return 0;
}

int pipeline_collect_done(struct pipeline *pl)
{
	int r;
	if (pl->err)
		return reraise(pl);
	while (pl->head < pl->tail) {
		pthread_mutex_lock(&pl->mu);
		int done = slot_at(pl, pl->head)->done;
		pthread_mutex_unlock(&pl->mu);
		if (!done)
			break;
		if ((r = collect_one(pl)) < 0)
			return r;
	}
	return 0;
}

void pipeline_cancel(struct pipeline *pl)
{
	if (pl)
		cancel_rest(pl);
}

unsigned pipeline_pending(const struct pipeline *pl)
{
	return (unsigned)(pl->tail - pl->head);
}

unsigned pipeline_nthreads(const struct pipeline *pl)
{
	return pl->nthreads;
}

void pipeline_free(struct pipeline *pl)
{
	if (!pl)
		return;
	cancel_rest(pl);
	stop_workers(pl, pl->nthreads);
	if (pl->ops.release)
		for (unsigned i = 0; i < pl->nslots; i++)
			if (pl->slot[i].used)
				pl->ops.release(pl->jobs + (size_t)i * pl->stride, pl->ctx);
	destroy(pl);
}
