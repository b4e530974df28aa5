/* net/pipe.c — a bounded byte pipe between two threads: a ring of cap
 * bytes, a mutex and one condition variable, and a wake-up for a side
 * that cannot block (a libmicrohttpd callback suspends its connection
 * instead, and the other side resumes it). Memory stays at cap bytes
 * whatever passes through. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"

struct net_pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf;
	size_t cap, head, len;
	int refs;
	int wdone, werr;   /* writer closed: clean end (werr 0) or failure */
	int rdone, rerr;   /* reader aborted with rerr */
	char wmsg[256], rmsg[256]; /* their details, for the other thread */
	uint64_t total;
	/* the parked side's wake-up */
	int parked, park_writer;
	void (*wake)(void *);
	void *wake_arg;
};

int net_pipe_new(size_t cap, struct net_pipe **out)
{
	struct net_pipe *p = calloc(1, sizeof *p);
	if (!p || cap == 0 || !(p->buf = malloc(cap))) {
		free(p);
		return ferry_err(FERR_NOMEM, "allocating a %zu-byte transfer buffer", cap);
	}
	p->cap = cap;
	p->refs = 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	*out = p;
	return 0;
}

void net_pipe_ref(struct net_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->refs++;
	pthread_mutex_unlock(&p->mu);
}

void net_pipe_unref(struct net_pipe *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	int last = --p->refs == 0;
	pthread_mutex_unlock(&p->mu);
	if (!last)
		return;
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->buf);
	free(p);
}

/* Under the lock: the parked side may go on now, so wake it (once). */
static void wake_locked(struct net_pipe *p)
{
	if (!p->parked)
		return;
	/* a parked writer waits for room (or the abort), a parked reader for
	 * bytes (or the end) */
	int go = p->park_writer ? (p->len < p->cap || p->rdone)
				: (p->len > 0 || p->wdone || p->rdone);
	if (!go)
		return;
	p->parked = 0;
	if (p->wake)
		p->wake(p->wake_arg);
	p->wake = NULL;
}

static size_t copy_in(struct net_pipe *p, const uint8_t *src, size_t n)
{
	size_t room = p->cap - p->len, k = n < room ? n : room, done = 0;
	while (done < k) {
		size_t at = (p->head + p->len) % p->cap;
		size_t run = p->cap - at;
		if (run > k - done)
			run = k - done;
		memcpy(p->buf + at, src + done, run);
		p->len += run;
		done += run;
	}
	p->total += k;
	return k;
}

static size_t copy_out(struct net_pipe *p, uint8_t *dst, size_t n)
{
	size_t k = n < p->len ? n : p->len, done = 0;
	while (done < k) {
		size_t run = p->cap - p->head;
		if (run > k - done)
			run = k - done;
		memcpy(dst + done, p->buf + p->head, run);
		p->head = (p->head + run) % p->cap;
		p->len -= run;
		done += run;
	}
	if (p->len == 0)
		p->head = 0;
	return k;
}

int net_pipe_write(struct net_pipe *p, const void *buf, size_t n)
{
	const uint8_t *s = buf;
	char msg[256];
	int r = 0;
	pthread_mutex_lock(&p->mu);
	while (n > 0) {
		if (p->rdone) {
			r = p->rerr;
			snprintf(msg, sizeof msg, "%s", p->rmsg);
			break;
		}
		if (p->wdone) {
			r = -FERR_INVAL;
			snprintf(msg, sizeof msg, "write to a closed transfer pipe");
			break;
		}
		size_t k = copy_in(p, s, n);
		if (k) {
			s += k;
			n -= k;
			pthread_cond_broadcast(&p->cv);
			wake_locked(p);
			continue;
		}
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	if (r < 0)
		return ferry_err(-r, "%s", msg);
	return 0;
}

int net_pipe_read(struct net_pipe *p, void *buf, size_t n, size_t *got)
{
	char msg[256];
	int r = 0;
	size_t k = 0;
	if (n == 0) {
		*got = 0;
		return 0;
	}
	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->len) {
			k = copy_out(p, buf, n);
			pthread_cond_broadcast(&p->cv);
			wake_locked(p);
			break;
		}
		if (p->wdone) {
			r = p->werr;
			if (r < 0)
				snprintf(msg, sizeof msg, "%s", p->wmsg);
			break;
		}
		if (p->rdone) {
			r = p->rerr;
			snprintf(msg, sizeof msg, "%s", p->rmsg);
			break;
		}
		pthread_cond_wait(&p->cv, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	if (r < 0)
		return ferry_err(-r, "%s", msg);
	*got = k;
	return 0;
}

long net_pipe_put(struct net_pipe *p, const void *buf, size_t n)
{
	char msg[256];
	long r;
	pthread_mutex_lock(&p->mu);
	if (p->rdone) {
		r = p->rerr;
		snprintf(msg, sizeof msg, "%s", p->rmsg);
	} else {
		r = (long)copy_in(p, buf, n);
		if (r) {
			pthread_cond_broadcast(&p->cv);
			wake_locked(p);
		}
	}
	pthread_mutex_unlock(&p->mu);
	if (r < 0)
		return ferry_err((int)-r, "%s", msg);
	return r;
}

long net_pipe_get(struct net_pipe *p, void *buf, size_t n)
{
	char msg[256];
	long r;
	pthread_mutex_lock(&p->mu);
	if (p->len) {
		r = (long)copy_out(p, buf, n);
		pthread_cond_broadcast(&p->cv);
		wake_locked(p);
	} else if (p->wdone) {
		r = p->werr ? p->werr : NET_PIPE_END;
		snprintf(msg, sizeof msg, "%s", p->wmsg);
	} else if (p->rdone) {
		r = p->rerr;
		snprintf(msg, sizeof msg, "%s", p->rmsg);
	} else {
		r = 0;
	}
	pthread_mutex_unlock(&p->mu);
	if (r < 0 && r != NET_PIPE_END)
		return ferry_err((int)-r, "%s", msg);
	return r;
}

int net_pipe_park(struct net_pipe *p, int as_writer, void (*park)(void *), void (*wake)(void *),
		  void *arg)
{
	int parked = 0;
	pthread_mutex_lock(&p->mu);
	int go = as_writer ? (p->len < p->cap || p->rdone) : (p->len > 0 || p->wdone || p->rdone);
	if (!go) {
		p->parked = 1;
		p->park_writer = as_writer;
		p->wake = wake;
		p->wake_arg = arg;
		park(arg);
		parked = 1;
	}
	pthread_mutex_unlock(&p->mu);
	return parked;
}

void net_pipe_unpark(struct net_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->parked = 0;
	p->wake = NULL;
	pthread_mutex_unlock(&p->mu);
}

void net_pipe_close(struct net_pipe *p, int err, const char *msg)
{
	pthread_mutex_lock(&p->mu);
	if (!p->wdone) {
		p->wdone = 1;
		p->werr = err < 0 ? err : 0;
		snprintf(p->wmsg, sizeof p->wmsg, "%s", msg ? msg : ferry_strerror(err));
	}
	pthread_cond_broadcast(&p->cv);
	wake_locked(p);
	pthread_mutex_unlock(&p->mu);
}

void net_pipe_abort(struct net_pipe *p, int err, const char *msg)
{
	pthread_mutex_lock(&p->mu);
	if (!p->rdone) {
		p->rdone = 1;
		p->rerr = err < 0 ? err : -FERR_IO;
		snprintf(p->rmsg, sizeof p->rmsg, "%s", msg ? msg : ferry_strerror(p->rerr));
	}
	pthread_cond_broadcast(&p->cv);
	wake_locked(p);
	pthread_mutex_unlock(&p->mu);
}

uint64_t net_pipe_total(const struct net_pipe *p)
{
	struct net_pipe *q = (struct net_pipe *)p;
	pthread_mutex_lock(&q->mu);
	uint64_t t = q->total;
	pthread_mutex_unlock(&q->mu);
	return t;
}
