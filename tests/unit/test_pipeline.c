/* tests/unit/test_pipeline.c — the ordered pipeline of lib/pipeline.c:
 * order, the bound on jobs in flight, the first error cancelling the rest,
 * and pipelines of no worker and of one. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/lib.h"

struct job {
	unsigned idx;
	unsigned delay_us;
	unsigned out;
	pthread_t ran_on;
	int runs;      /* times run: never more than once */
	int passed;    /* queued with pipeline_submit_done: never run */
	int prepped;   /* times given to prep: at most once, before its run */
	char *buf;     /* grown on first use, kept across reuses of the slot */
};

/* What a test watches: every callback counts here, on the caller's thread
 * (done, cancel, release) or atomically (run). */
struct world {
	unsigned fail_at;        /* run fails for this idx (UINT32_MAX: none) */
	unsigned done_fail_at;   /* done fails for this idx */
	unsigned ndone, ncancel, nrelease, nrun;
	unsigned next_done;      /* the idx done must see next */
	unsigned outstanding;    /* submitted, neither done nor cancelled */
	unsigned max_outstanding;
	unsigned *cancelled;     /* idx of each cancelled job, in order */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int gated, open, started;
	unsigned nprep, nbatch, max_batch; /* prep_fn's: jobs, calls, largest n */
};

static int run_fn(void *jv, void *ctx)
{
	struct job *j = jv;
	struct world *w = ctx;
	if (w->gated) {
		pthread_mutex_lock(&w->gate_mu);
		w->started++;
		pthread_cond_broadcast(&w->gate_cv);
		while (!w->open)
			pthread_cond_wait(&w->gate_cv, &w->gate_mu);
		pthread_mutex_unlock(&w->gate_mu);
	}
	struct timespec ts = {0, (long)j->delay_us * 1000};
	nanosleep(&ts, NULL);
	__atomic_fetch_add(&w->nrun, 1, __ATOMIC_RELAXED);
	j->runs++;
	j->ran_on = pthread_self();
	j->out = j->idx * 3 + 1;
	if (!j->buf)
		j->buf = malloc(64);
	if (j->idx == w->fail_at)
		return ferry_err(FERR_CORRUPT, "job %u failed", j->idx);
	return 0;
}

static int done_fn(void *jv, int result, void *ctx)
{
	struct job *j = jv;
	struct world *w = ctx;
	assert_int_equal(j->idx, w->next_done);
	assert_int_equal(j->runs, j->passed ? 0 : 1);
	assert_int_equal(j->out, j->passed ? 0 : j->idx * 3 + 1);
	w->next_done++;
	w->ndone++;
	w->outstanding--;
	if (j->idx == w->fail_at) {
		char want[64];
		assert_int_equal(result, -FERR_CORRUPT);
		snprintf(want, sizeof want, "job %u failed", j->idx);
		assert_string_equal(ferry_errmsg(result), want); /* the worker's text */
		return ferry_err(FERR_CORRUPT, "in done: %s", want);
	}
	assert_int_equal(result, 0);
	if (j->idx == w->done_fail_at)
		return ferry_err(FERR_IO, "done of %u failed", j->idx);
	return 0;
}

static void cancel_fn(void *jv, void *ctx)
{
	struct job *j = jv;
	struct world *w = ctx;
	assert_true(j->runs <= 1);
	w->cancelled[w->ncancel++] = j->idx;
	w->outstanding--;
}

static void release_fn(void *jv, void *ctx)
{
	struct job *j = jv;
	struct world *w = ctx;
	free(j->buf);
	w->nrelease++;
}

static const struct pipeline_ops ops = {run_fn, done_fn, cancel_fn, release_fn, NULL};

static void world_init(struct world *w, unsigned njobs)
{
	memset(w, 0, sizeof *w);
	w->fail_at = w->done_fail_at = UINT32_MAX;
	w->cancelled = calloc(njobs + 1, sizeof *w->cancelled);
	assert_non_null(w->cancelled);
	pthread_mutex_init(&w->gate_mu, NULL);
	pthread_cond_init(&w->gate_cv, NULL);
}

static void world_release(struct world *w)
{
	free(w->cancelled);
	pthread_mutex_destroy(&w->gate_mu);
	pthread_cond_destroy(&w->gate_cv);
}

/* Takes a slot and submits job idx (passed: with pipeline_submit_done);
 * the result of the first call that fails. */
static int queue_one(struct pipeline *pl, struct world *w, unsigned idx, unsigned delay_us,
		     int passed)
{
	void *jv;
	int r = pipeline_job(pl, &jv);
	if (r < 0)
		return r;
	struct job *j = jv;
	j->idx = idx;
	j->delay_us = delay_us;
	j->runs = 0;
	j->out = 0;
	j->prepped = 0;
	j->passed = passed;
	w->outstanding++;
	if (w->outstanding > w->max_outstanding)
		w->max_outstanding = w->outstanding;
	return passed ? pipeline_submit_done(pl, j) : pipeline_submit(pl, j);
}

static int submit_one(struct pipeline *pl, struct world *w, unsigned idx, unsigned delay_us)
{
	return queue_one(pl, w, idx, delay_us, 0);
}

static int pass_one(struct pipeline *pl, struct world *w, unsigned idx)
{
	return queue_one(pl, w, idx, 0, 1);
}

/* Many jobs of random length on 4 workers and 8 slots: done sees them in
 * order, each run once, never more than 8 alive at a time, and every slot
 * handed out is released once. */
static void test_order_and_bound(void **state)
{
	enum { NJOBS = 2000, SLOTS = 8 };
	struct pipeline *pl = NULL;
	struct world w;
	world_init(&w, NJOBS);
	srand(12345);
	assert_int_equal(pipeline_new(&pl, 4, SLOTS, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(pipeline_nthreads(pl), 4);
	for (unsigned i = 0; i < NJOBS; i++) {
		assert_int_equal(submit_one(pl, &w, i, (unsigned)(rand() % 200)), 0);
		assert_true(pipeline_pending(pl) <= SLOTS);
	}
	assert_int_equal(pipeline_drain(pl), 0);
	assert_int_equal(pipeline_pending(pl), 0);
	assert_int_equal(w.ndone, NJOBS);
	assert_int_equal(w.ncancel, 0);
	assert_int_equal(__atomic_load_n(&w.nrun, __ATOMIC_RELAXED), NJOBS);
	assert_int_equal(w.max_outstanding, SLOTS); /* the bound is reached, never passed */
	pipeline_free(pl);
	assert_int_equal(w.nrelease, SLOTS);
	world_release(&w);
}

static void gate_open(struct world *w)
{
	pthread_mutex_lock(&w->gate_mu);
	w->open = 1;
	pthread_cond_broadcast(&w->gate_cv);
	pthread_mutex_unlock(&w->gate_mu);
}

static void *open_later(void *arg)
{
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	gate_open(arg);
	return NULL;
}

/* Back-pressure: with every slot in flight, taking another waits for the
 * oldest job and collects it first. */
static void test_backpressure(void **state)
{
	struct pipeline *pl = NULL;
	struct world w;
	pthread_t opener;
	void *jv;
	world_init(&w, 4);
	w.gated = 1;
	assert_int_equal(pipeline_new(&pl, 1, 2, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(submit_one(pl, &w, 0, 0), 0);
	assert_int_equal(submit_one(pl, &w, 1, 0), 0);
	assert_int_equal(pipeline_pending(pl), 2);
	assert_int_equal(w.ndone, 0);
	assert_int_equal(pthread_create(&opener, NULL, open_later, &w), 0);
	/* blocks until the gate opens and job 0 is done */
	assert_int_equal(pipeline_job(pl, &jv), 0);
	assert_int_equal(w.open, 1);
	assert_int_equal(w.ndone, 1);
	assert_int_equal(pipeline_pending(pl), 1);
	/* the slot of job 0, with what it grew */
	assert_int_equal(((struct job *)jv)->idx, 0);
	assert_non_null(((struct job *)jv)->buf);
	/* until submitted, the same slot again */
	void *again;
	assert_int_equal(pipeline_job(pl, &again), 0);
	assert_ptr_equal(again, jv);
	assert_int_equal(pthread_join(opener, NULL), 0);
	assert_int_equal(submit_one(pl, &w, 2, 0), 0);
	assert_int_equal(pipeline_drain(pl), 0);
	assert_int_equal(w.ndone, 3);
	pipeline_free(pl);
	assert_int_equal(w.nrelease, 2);
	world_release(&w);
}

/* Calls pipeline_collect_done until nothing is in flight (a run that has
 * ended may not be marked done yet), or for 5 s; its last result. */
static int collect_all(struct pipeline *pl)
{
	struct timespec ts = {0, 1000 * 1000};
	int r = 0;
	for (int i = 0; i < 5000 && (r = pipeline_collect_done(pl)) == 0 && pipeline_pending(pl); i++)
		nanosleep(&ts, NULL);
	return r;
}

/* pipeline_collect_done takes what is done at the head, in order, and
 * never waits: not for a job still running, nor for one behind it; a
 * failed job's error comes back from it as from any call. */
static void test_collect_done(void **state)
{
	struct pipeline *pl = NULL;
	struct world w;
	world_init(&w, 4);
	w.gated = 1;
	assert_int_equal(pipeline_new(&pl, 1, 2, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(pipeline_collect_done(pl), 0); /* nothing in flight */
	assert_int_equal(submit_one(pl, &w, 0, 0), 0);
	assert_int_equal(submit_one(pl, &w, 1, 0), 0);
	pthread_mutex_lock(&w.gate_mu);
	while (!w.started)
		pthread_cond_wait(&w.gate_cv, &w.gate_mu);
	pthread_mutex_unlock(&w.gate_mu);
	/* job 0 is held at the gate: nothing is taken, nothing waits */
	assert_int_equal(pipeline_collect_done(pl), 0);
	assert_int_equal(w.ndone, 0);
	assert_int_equal(pipeline_pending(pl), 2);
	gate_open(&w);
	assert_int_equal(collect_all(pl), 0);
	assert_int_equal(w.ndone, 2);
	assert_int_equal(pipeline_pending(pl), 0);
	/* a failure found by it */
	w.fail_at = 3;
	assert_int_equal(submit_one(pl, &w, 2, 0), 0);
	assert_int_equal(submit_one(pl, &w, 3, 0), 0);
	assert_int_equal(collect_all(pl), -FERR_CORRUPT);
	assert_int_equal(w.ndone, 4);
	assert_int_equal(pipeline_pending(pl), 0);
	assert_int_equal(pipeline_collect_done(pl), -FERR_CORRUPT); /* kept */
	pipeline_free(pl);
	world_release(&w);
	ferry_err_clear();
}

/* A failing run: the jobs before it are done in order, it reaches done
 * with its worker's message, the ones after it are cancelled (not run if
 * they had not started) before the call returns, and every later call
 * returns the same error. */
static void test_error_cancels(void **state)
{
	enum { NJOBS = 200, SLOTS = 16, FAIL = 57 };
	struct pipeline *pl = NULL;
	struct world w;
	int r = 0;
	unsigned i;
	world_init(&w, NJOBS);
	w.fail_at = FAIL;
	assert_int_equal(pipeline_new(&pl, 3, SLOTS, sizeof(struct job), &ops, &w), 0);
	for (i = 0; i < NJOBS; i++)
		if ((r = submit_one(pl, &w, i, 100)) < 0)
			break;
	if (r == 0)
		r = pipeline_drain(pl);
	assert_int_equal(r, -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(r), "in done: job 57 failed");
	assert_true(i < NJOBS);              /* it stopped the submissions */
	assert_int_equal(w.ndone, FAIL + 1); /* 0..57, the failed one last */
	assert_int_equal(pipeline_pending(pl), 0);
	assert_int_equal(w.outstanding, 0);  /* everything else cancelled, in order */
	for (unsigned k = 0; k < w.ncancel; k++)
		assert_int_equal(w.cancelled[k], FAIL + 1 + k);
	unsigned ran = __atomic_load_n(&w.nrun, __ATOMIC_RELAXED);
	assert_true(ran <= FAIL + SLOTS); /* none past the slots in flight at the failure */
	/* nothing runs any more, and the error stays */
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
	assert_int_equal(__atomic_load_n(&w.nrun, __ATOMIC_RELAXED), ran);
	void *jv;
	ferry_err_clear();
	assert_int_equal(pipeline_job(pl, &jv), -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(-FERR_CORRUPT), "in done: job 57 failed");
	assert_int_equal(pipeline_drain(pl), -FERR_CORRUPT);
	pipeline_free(pl);
	assert_int_equal(w.nrelease, SLOTS);
	world_release(&w);
	ferry_err_clear();
}

/* A failing done is a first error too; a job submitted after it goes
 * straight to cancel; pipeline_cancel drops what is in flight. */
static void test_done_error_and_cancel(void **state)
{
	struct pipeline *pl = NULL;
	struct world w;
	void *jv;
	world_init(&w, 64);
	w.done_fail_at = 5;
	assert_int_equal(pipeline_new(&pl, 2, 4, sizeof(struct job), &ops, &w), 0);
	int r = 0;
	for (unsigned i = 0; i < 20 && r == 0; i++)
		r = submit_one(pl, &w, i, 50);
	if (r == 0)
		r = pipeline_drain(pl);
	assert_int_equal(r, -FERR_IO);
	assert_string_equal(ferry_errmsg(r), "done of 5 failed");
	assert_int_equal(w.ndone, 6);
	assert_int_equal(w.outstanding, 0);
	pipeline_free(pl);
	world_release(&w);

	/* a slot taken before an error and submitted after it goes straight
	 * to cancel, unrun */
	world_init(&w, 4);
	w.fail_at = 0;
	assert_int_equal(pipeline_new(&pl, 1, 2, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(submit_one(pl, &w, 0, 0), 0);
	assert_int_equal(pipeline_job(pl, &jv), 0);
	((struct job *)jv)->idx = 1;
	((struct job *)jv)->runs = 0;
	w.outstanding++;
	assert_int_equal(pipeline_drain(pl), -FERR_CORRUPT);
	assert_int_equal(pipeline_submit(pl, jv), -FERR_CORRUPT);
	assert_int_equal(w.ncancel, 1);
	assert_int_equal(w.cancelled[0], 1);
	assert_int_equal(((struct job *)jv)->runs, 0);
	assert_int_equal(w.outstanding, 0);
	pipeline_free(pl);
	world_release(&w);

	/* pipeline_cancel: everything in flight goes to cancel, none to done */
	world_init(&w, 64);
	w.gated = 1;
	assert_int_equal(pipeline_new(&pl, 2, 8, sizeof(struct job), &ops, &w), 0);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(submit_one(pl, &w, i, 0), 0);
	pthread_mutex_lock(&w.gate_mu);
	while (w.started < 2)
		pthread_cond_wait(&w.gate_cv, &w.gate_mu);
	pthread_mutex_unlock(&w.gate_mu);
	pthread_t opener;
	assert_int_equal(pthread_create(&opener, NULL, open_later, &w), 0);
	pipeline_cancel(pl); /* waits for the two running jobs */
	assert_int_equal(pthread_join(opener, NULL), 0);
	assert_int_equal(w.ndone, 0);
	assert_int_equal(w.ncancel, 8);
	assert_int_equal(__atomic_load_n(&w.nrun, __ATOMIC_RELAXED), 2);
	assert_int_equal(pipeline_pending(pl), 0);
	/* no error was kept: the pipeline goes on */
	w.next_done = 100;
	assert_int_equal(submit_one(pl, &w, 100, 0), 0);
	assert_int_equal(pipeline_drain(pl), 0);
	assert_int_equal(w.ndone, 1);
	/* free with jobs still queued: cancelled, then released */
	w.open = 0;
	w.next_done = 200;
	for (unsigned i = 200; i < 204; i++)
		assert_int_equal(submit_one(pl, &w, i, 0), 0);
	gate_open(&w);
	pipeline_free(pl);
	assert_int_equal(w.outstanding, 0);
	assert_int_equal(w.nrelease, 8);
	pipeline_free(NULL);
	pipeline_cancel(NULL);
	world_release(&w);
	ferry_err_clear();
}

/* No worker: every job runs inside pipeline_submit on the caller's thread
 * and is done before it returns; a failure is reported by that submit. */
static void test_zero_threads(void **state)
{
	struct pipeline *pl = NULL;
	struct world w;
	void *jv;
	world_init(&w, 16);
	w.fail_at = 9;
	assert_int_equal(pipeline_new(&pl, 0, 3, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(pipeline_nthreads(pl), 0);
	for (unsigned i = 0; i < 9; i++) {
		assert_int_equal(pipeline_job(pl, &jv), 0);
		struct job *j = jv;
		j->idx = i;
		j->runs = 0;
		w.outstanding++;
		assert_int_equal(pipeline_submit(pl, j), 0);
		assert_int_equal(w.ndone, i + 1);
		assert_true(pthread_equal(j->ran_on, pthread_self()));
		assert_int_equal(pipeline_pending(pl), 0);
	}
	assert_int_equal(submit_one(pl, &w, 9, 0), -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(-FERR_CORRUPT), "in done: job 9 failed");
	assert_int_equal(w.ndone, 10);
	/* the error stays */
	assert_int_equal(pipeline_job(pl, &jv), -FERR_CORRUPT);
	pipeline_free(pl);
	assert_int_equal(w.nrelease, 3);
	assert_int_equal(w.outstanding, 0);
	world_release(&w);
	ferry_err_clear();
}

/* One worker: the jobs run off the caller's thread, in order. */
static void test_one_thread(void **state)
{
	struct pipeline *pl = NULL;
	struct world w;
	void *jv;
	world_init(&w, 100);
	assert_int_equal(pipeline_new(&pl, 1, 1, sizeof(struct job), &ops, &w), 0);
	for (unsigned i = 0; i < 100; i++) {
		assert_int_equal(submit_one(pl, &w, i, (unsigned)(i % 3) * 10), 0);
		assert_true(pipeline_pending(pl) <= 1);
	}
	assert_int_equal(pipeline_job(pl, &jv), 0); /* collects job 99 */
	assert_false(pthread_equal(((struct job *)jv)->ran_on, pthread_self()));
	assert_int_equal(pipeline_drain(pl), 0);
	assert_int_equal(w.ndone, 100);
	assert_int_equal(w.max_outstanding, 1);
	pipeline_free(pl);
	assert_int_equal(w.nrelease, 1);
	world_release(&w);
}

/* Passed jobs among real ones, on 2 workers and 4 slots, in runs of
 * either kind (so the collector often takes passed jobs no worker has
 * stepped over yet): done sees all in order, a passed job is never run,
 * every real one once; then a failure cancels the passed jobs behind it
 * like any other. With no worker, a passed job is done at once. */
static void test_passed(void **state)
{
	enum { NJOBS = 3000, SLOTS = 4 };
	struct pipeline *pl = NULL;
	struct world w;
	unsigned nreal = 0;
	world_init(&w, NJOBS);
	srand(777);
	assert_int_equal(pipeline_new(&pl, 2, SLOTS, sizeof(struct job), &ops, &w), 0);
	for (unsigned i = 0; i < NJOBS; i++) {
		if ((i / 7) % 2 && i % 5) {
			assert_int_equal(pass_one(pl, &w, i), 0);
		} else {
			assert_int_equal(submit_one(pl, &w, i, (unsigned)(rand() % 50)), 0);
			nreal++;
		}
		assert_true(pipeline_pending(pl) <= SLOTS);
	}
	assert_int_equal(pipeline_drain(pl), 0);
	assert_int_equal(w.ndone, NJOBS);
	assert_int_equal(w.ncancel, 0);
	assert_int_equal(__atomic_load_n(&w.nrun, __ATOMIC_RELAXED), nreal);
	/* a failure: the passed jobs queued behind it are cancelled */
	w.fail_at = NJOBS;
	w.gated = 1;
	assert_int_equal(submit_one(pl, &w, NJOBS, 0), 0);
	for (unsigned i = NJOBS + 1; i < NJOBS + SLOTS; i++)
		assert_int_equal(pass_one(pl, &w, i), 0);
	gate_open(&w);
	assert_int_equal(pipeline_drain(pl), -FERR_CORRUPT);
	assert_int_equal(w.ndone, NJOBS + 1);
	assert_int_equal(w.ncancel, SLOTS - 1);
	for (unsigned i = 0; i < SLOTS - 1; i++)
		assert_int_equal(w.cancelled[i], NJOBS + 1 + i);
	pipeline_free(pl);
	assert_int_equal(w.nrelease, SLOTS);
	assert_int_equal(w.outstanding, 0);
	world_release(&w);
	ferry_err_clear();

	world_init(&w, 8);
	assert_int_equal(pipeline_new(&pl, 0, 2, sizeof(struct job), &ops, &w), 0);
	assert_int_equal(submit_one(pl, &w, 0, 0), 0);
	assert_int_equal(pass_one(pl, &w, 1), 0);
	assert_int_equal(w.ndone, 2);
	assert_int_equal(pipeline_pending(pl), 0);
	pipeline_free(pl);
	world_release(&w);
}

/* prep: on a worker, 2..PIPELINE_BATCH jobs it took at once, in
 * submission order, none run yet, none passed; counted under the gate's
 * lock (two workers may prep at once). */
static void prep_fn(void *const *jobs, size_t n, void *ctx)
{
	struct world *w = ctx;
	assert_true(n >= 2 && n <= PIPELINE_BATCH);
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs[i];
		assert_int_equal(j->runs, 0);
		assert_int_equal(j->prepped, 0);
		assert_int_equal(j->passed, 0);
		if (i)
			assert_true(j->idx > ((struct job *)jobs[i - 1])->idx);
		j->prepped = 1;
	}
	pthread_mutex_lock(&w->gate_mu);
	w->nprep += (unsigned)n;
	w->nbatch++;
	if (n > w->max_batch)
		w->max_batch = (unsigned)n;
	pthread_mutex_unlock(&w->gate_mu);
}

static const struct pipeline_ops prep_ops = {run_fn, done_fn, cancel_fn, release_fn, prep_fn};

/* With ops.prep, a worker that finds jobs waiting takes its share of them
 * (up to PIPELINE_BATCH) and preps them together before running each; the
 * order, the bound, once-only runs, passed jobs and a failure's cancelling
 * are as without it. */
static void test_prep(void **state)
{
	enum { NJOBS = 3000, SLOTS = 32, FAIL = 2500 };
	struct pipeline *pl = NULL;
	struct world w;
	unsigned nreal = 0, i;
	int r = 0;
	world_init(&w, NJOBS);
	w.gated = 1;
	srand(4242);
	assert_int_equal(pipeline_new(&pl, 2, SLOTS, sizeof(struct job), &prep_ops, &w), 0);
	/* a worker held at the gate in job 0, the rest queued meanwhile */
	assert_int_equal(submit_one(pl, &w, 0, 0), 0);
	pthread_mutex_lock(&w.gate_mu);
	while (w.started < 1)
		pthread_cond_wait(&w.gate_cv, &w.gate_mu);
	pthread_mutex_unlock(&w.gate_mu);
	for (i = 1; i < SLOTS; i++)
		assert_int_equal(submit_one(pl, &w, i, 0), 0);
	gate_open(&w);
	assert_int_equal(pipeline_drain(pl), 0);
	/* at least 22 waiting when the gate opened, neither worker idle:
	 * the next to take jobs took PIPELINE_BATCH at once */
	assert_int_equal(w.max_batch, PIPELINE_BATCH);
	nreal = SLOTS;
	/* then jobs of random length, some passed, and a failure */
	w.fail_at = FAIL;
	for (i = SLOTS; i < NJOBS && r == 0; i++) {
		if ((i / 7) % 3 == 1 && i % 5) {
			r = pass_one(pl, &w, i);
		} else {
			r = submit_one(pl, &w, i, (unsigned)(rand() % 50));
			nreal++;
		}
		assert_true(pipeline_pending(pl) <= SLOTS);
	}
	if (r == 0)
		r = pipeline_drain(pl);
	assert_int_equal(r, -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(r), "in done: job 2500 failed");
	assert_int_equal(w.ndone, FAIL + 1);
	assert_int_equal(w.outstanding, 0);
	for (unsigned k = 0; k < w.ncancel; k++)
		assert_int_equal(w.cancelled[k], FAIL + 1 + k);
	unsigned ran = __atomic_load_n(&w.nrun, __ATOMIC_RELAXED);
	assert_true(ran <= nreal);
	assert_true(w.nprep >= 2 * w.nbatch);
	assert_true(w.nprep <= ran + SLOTS); /* prepped jobs past the failure are not run */
	pipeline_free(pl);
	assert_int_equal(w.nrelease, SLOTS);
	world_release(&w);
	ferry_err_clear();
}

static void test_args(void **state)
{
	struct pipeline *pl = (struct pipeline *)0x1;
	struct pipeline_ops none = {NULL, NULL, NULL, NULL, NULL};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	assert_int_equal(pipeline_new(&pl, 2, 0, 8, &ops, NULL), -FERR_INVAL);
	assert_int_equal(pipeline_new(&pl, 2, 4, 0, &ops, NULL), -FERR_INVAL);
	assert_int_equal(pipeline_new(&pl, 2, 4, 8, &none, NULL), -FERR_INVAL);
	assert_int_equal(pipeline_new(&pl, 2, 4, SIZE_MAX - 8, &ops, NULL), -FERR_OVERFLOW);
	assert_ptr_equal(pl, (struct pipeline *)0x1);
	assert_int_equal(pipeline_threads(0), ncpu > 0 ? (unsigned)ncpu : 1);
	assert_int_equal(pipeline_threads(3), 3);
	ferry_err_clear();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_and_bound),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_collect_done),
		cmocka_unit_test(test_error_cancels),
		cmocka_unit_test(test_done_error_and_cancel),
		cmocka_unit_test(test_zero_threads),
		cmocka_unit_test(test_one_thread),
		cmocka_unit_test(test_passed),
		cmocka_unit_test(test_prep),
		cmocka_unit_test(test_args),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
