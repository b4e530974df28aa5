/* lib/workq.c — fixed pool of workers with in-order collection.
 *
 * Jobs live in a ring of max_inflight slots indexed by sequence number:
 * head is the oldest uncollected job, next_run the oldest not yet picked
 * by a worker, tail the next to be submitted (head <= next_run <= tail).
 * One mutex guards all of it; jobs are few and coarse, so contention on it
 * is noise next to the work itself. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib.h"

struct workq_slot {
	void *job;
	int result;
	bool done;
	char *errmsg; /* the worker's detail text, handed to the collector */
};

struct workq {
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* workers: a job was queued or stop was set */
	pthread_cond_t done_cv; /* collector: a job finished */
	struct workq_slot *slots;
	unsigned max_inflight;
	uint64_t head, next_run, tail;
	bool stop;
	workq_fn fn;
	void *ctx;
	pthread_t *threads;
	unsigned nthreads;
};

static void *worker_main(void *arg)
{
	struct workq *q = arg;

	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->stop && q->next_run == q->tail)
			pthread_cond_wait(&q->work_cv, &q->mu);
		/* Queued but unstarted jobs are dropped on shutdown: the
		 * caller asked to stop, and running them would only delay it. */
		if (q->stop)
			break;
		uint64_t seq = q->next_run++;
		struct workq_slot *s = &q->slots[seq % q->max_inflight];
		void *job = s->job;
		pthread_mutex_unlock(&q->mu);

		ferry_err_clear();
		int res = q->fn(job, q->ctx);
		/* Detail text is thread-local; copy it out or the collector
		 * would only ever see the bare strerror. */
		const char *d = res < 0 ? ferry_err_detail() : NULL;
		char *msg = d ? strdup(d) : NULL;

		pthread_mutex_lock(&q->mu);
		s->result = res;
		s->errmsg = msg;
		s->done = true;
		if (seq == q->head)
			pthread_cond_broadcast(&q->done_cv);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

/* Stops and joins the first n threads; used by both free and a failed new. */
static void workq_stop(struct workq *q, unsigned n)
{
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->work_cv);
	pthread_mutex_unlock(&q->mu);
	for (unsigned i = 0; i < n; i++)
		pthread_join(q->threads[i], NULL);
}

static void workq_destroy(struct workq *q)
{
	if (q->slots) {
		for (unsigned i = 0; i < q->max_inflight; i++)
			free(q->slots[i].errmsg);
	}
	free(q->slots);
	free(q->threads);
	pthread_cond_destroy(&q->done_cv);
	pthread_cond_destroy(&q->work_cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

int workq_new(struct workq **out, unsigned nthreads, unsigned max_inflight,
	      workq_fn fn, void *ctx)
{
	struct workq *q;
	unsigned started = 0;
	int r = 0, e;

	if (!fn || max_inflight == 0)
		return ferry_err(FERR_INVAL, "workq: need a job function and max_inflight >= 1");
	if (nthreads == 0) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = ncpu > 0 ? (unsigned)ncpu : 1;
	}
	if (!(q = calloc(1, sizeof(*q))))
		return ferry_err(FERR_NOMEM, "workq: out of memory");
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->work_cv, NULL);
	pthread_cond_init(&q->done_cv, NULL);
	q->max_inflight = max_inflight;
	q->fn = fn;
	q->ctx = ctx;
	q->nthreads = nthreads;
	if (!(q->slots = calloc(max_inflight, sizeof(*q->slots))) ||
	    !(q->threads = calloc(nthreads, sizeof(*q->threads)))) {
		r = ferry_err(FERR_NOMEM, "workq: out of memory for %u slots, %u threads",
			      max_inflight, nthreads);
		goto out;
	}
	for (; started < nthreads; started++) {
		if ((e = pthread_create(&q->threads[started], NULL, worker_main, q)) != 0) {
			r = ferry_err_errno(e, "workq: cannot start thread %u of %u",
					    started + 1, nthreads);
			goto out;
		}
	}
	*out = q;
	return 0;
out:
	workq_stop(q, started);
	workq_destroy(q);
	return r;
}

int workq_submit(struct workq *q, void *job)
{
	int r = 0;

	pthread_mutex_lock(&q->mu);
	if (q->tail - q->head >= q->max_inflight) {
		r = -FERR_BUSY;
		goto out;
	}
	struct workq_slot *s = &q->slots[q->tail % q->max_inflight];
	s->job = job;
	s->result = 0;
	s->done = false;
	s->errmsg = NULL;
	q->tail++;
	pthread_cond_signal(&q->work_cv);
out:
	pthread_mutex_unlock(&q->mu);
	return r;
}

int workq_collect(struct workq *q, void **job, int *result)
{
	struct workq_slot *s;
	char *msg;
	void *j;
	int res;

	pthread_mutex_lock(&q->mu);
	if (q->head == q->tail) {
		pthread_mutex_unlock(&q->mu);
		return 0;
	}
	s = &q->slots[q->head % q->max_inflight];
	while (!s->done)
		pthread_cond_wait(&q->done_cv, &q->mu);
	j = s->job;
	res = s->result;
	msg = s->errmsg;
	s->errmsg = NULL;
	s->job = NULL;
	s->done = false;
	q->head++;
	pthread_mutex_unlock(&q->mu);

	if (res < 0) {
		if (msg)
			(void)ferry_err(res, "%s", msg);
		else
			ferry_err_clear();
	}
	free(msg);
	*job = j;
	*result = res;
	return 1;
}

unsigned workq_pending(const struct workq *q)
{
	/* The mutex is the one mutable part of a logically const pool. */
	struct workq *mq = (struct workq *)q;
	unsigned n;

	pthread_mutex_lock(&mq->mu);
	n = (unsigned)(mq->tail - mq->head);
	pthread_mutex_unlock(&mq->mu);
	return n;
}

unsigned workq_threads(const struct workq *q)
{
	return q->nthreads;
}

void workq_free(struct workq *q)
{
	if (!q)
		return;
	workq_stop(q, q->nthreads);
	workq_destroy(q);
}
