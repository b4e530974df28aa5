/* sync/http.c — a sync's destination on a ferry serve (docs/ferry-http.7):
 * its state from GET /v1/receive (exists, the compression a new dataset
 * would get) and GET /v1/datasets (each dataset's type, compression,
 * resume token and snapshots with guids), the transfer as the body of a
 * PUT /v1/receive that reads the send's pipe on a thread of its own, and
 * DELETE /v1/receive for a stale partial receive. net/ moves the bytes;
 * the resume logic is sync.c's, the same as for the other destinations. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../net/net.h"
#include "internal.h"

#define ANSWER_MAX ((size_t)64 << 20) /* the protocol's largest JSON answer */

struct dst_http {
	struct net_client *c;
};

int dh_open(const struct sync_dest *d, const struct sync_opts *o, struct dst_http **out)
{
	struct dst_http *h = calloc(1, sizeof *h);
	struct net_client_opts co;
	char base[SYNC_DEST_MAX];
	int r;
	if (!h)
		return ferry_err(FERR_NOMEM, "opening the destination");
	/* the prefix is the base and its '/' */
	snprintf(base, sizeof base, "%.*s", (int)strlen(d->prefix) - 1, d->prefix);
	memset(&co, 0, sizeof co);
	co.base = base;
	co.token = o->http_token;
	co.cacert = o->http_cacert;
	co.limit_rate = o->http_limit_rate;
	co.timeout = o->http_timeout;
	if ((r = net_client_new(&co, &h->c)) < 0) {
		free(h);
		return r;
	}
	*out = h;
	return 0;
}

void dh_close(struct dst_http *h)
{
	if (!h)
		return;
	net_client_free(h->c);
	free(h);
}

/* The FERR_* code for an answer's status. */
static int status_code(long status)
{
	switch (status) {
	case 400: return FERR_CORRUPT;
	case 401: case 403: return FERR_PERM;
	case 404: return FERR_NOENT;
	case 409: return FERR_BUSY;
	case 413: return FERR_LIMIT;
	case 507: return FERR_NOSPC;
	default: return FERR_IO;
	}
}

/* The error of a refused request: the answer's one-line message. */
static int answer_err(long status, const struct fbuf *ans, const char *what)
{
	json_t *j = json_loadb((const char *)ans->data, ans->len, 0, NULL);
	const char *m = json_string_value(json_object_get(j, "error"));
	int r = ferry_err(status_code(status), "%s: the server answered %ld: %s", what, status,
			  m ? m : "(no message)");
	json_decref(j);
	return r;
}

/* A request without a body; the answer (JSON) in *j when it is 200. */
static int call(struct dst_http *h, const char *method, const struct fbuf *path, const char *what,
		long *status, json_t **j)
{
	struct fbuf ans;
	int r;
	fbuf_init(&ans, ANSWER_MAX);
	*j = NULL;
	if ((r = net_client_request(h->c, method, (const char *)path->data, NULL, NULL, NULL, NULL,
				    &ans, status)) < 0) {
		r = ferry_err(-r, "%s: %s", what, ferry_errmsg(r));
		goto out;
	}
	if (*status != 200) {
		r = answer_err(*status, &ans, what);
		goto out;
	}
	if (!(*j = json_loadb((const char *)ans.data, ans.len, 0, NULL)))
		r = ferry_err(FERR_CORRUPT, "%s: the answer is not JSON", what);
out:
	fbuf_release(&ans);
	return r;
}

static int path_of(struct fbuf *b, const char *prefix, const char *name, const char *query)
{
	int r;
	fbuf_reset(b);
	if ((r = fbuf_printf(b, "%s", prefix)) < 0 || (r = net_pct_encode(b, name)) < 0 ||
	    (r = fbuf_printf(b, "%s", query)) < 0)
		return r;
	return fbuf_putc(b, 0);
}

static int copy_str(char *dst, size_t n, json_t *v, const char *what)
{
	const char *s = json_string_value(v);
	if (!s || strlen(s) >= n)
		return ferry_err(FERR_CORRUPT, "the server's %s is missing or too long", what);
	snprintf(dst, n, "%s", s);
	return 0;
}

static int u64_of(json_t *v, uint64_t *out)
{
	const char *s = json_string_value(v);
	char *end;
	if (!s || !*s)
		return ferry_err(FERR_CORRUPT, "a number of the server's is missing");
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (*end || errno)
		return ferry_err(FERR_CORRUPT, "'%s' is not a number", s);
	*out = x;
	return 0;
}

/* The datasets and snapshots of a GET /v1/datasets answer into t. */
static int fill_tree(json_t *objs, struct st_tree *t)
{
	json_t *o;
	size_t k;
	int r;
	json_array_foreach(objs, k, o) {
		const char *type = json_string_value(json_object_get(o, "type"));
		const char *name = json_string_value(json_object_get(o, "name"));
		if (!type || !name)
			return ferry_err(FERR_CORRUPT, "a listed object without a name or type");
		if (!strcmp(type, "filesystem") || !strcmp(type, "volume")) {
			if ((r = VEC_GROW(t->ds, t->cap, t->n, 8, "reading the destination")) < 0)
				return r;
			struct st_ds *d = &t->ds[t->n++];
			memset(d, 0, sizeof *d);
			d->type = type[0] == 'f' ? STORE_DS_FILESYSTEM : STORE_DS_VOLUME;
			json_t *tok = json_object_get(o, "receive_resume_token");
			if ((r = copy_str(d->name, sizeof d->name, json_object_get(o, "name"), "name")) < 0 ||
			    (r = copy_str(d->compression, sizeof d->compression,
					  json_object_get(o, "compression"), "compression")) < 0 ||
			    (!json_is_null(tok) &&
			     (r = copy_str(d->token, sizeof d->token, tok, "resume token")) < 0))
				return r;
		} else if (!strcmp(type, "snapshot")) {
			const char *at = strchr(name, '@');
			struct st_ds *d = t->n ? &t->ds[t->n - 1] : NULL;
			/* listed after its dataset, oldest first */
			if (!at || !d || strlen(d->name) != (size_t)(at - name) ||
			    strncmp(d->name, name, (size_t)(at - name)))
				return ferry_err(FERR_CORRUPT, "snapshot '%s' is not listed after its dataset",
						 name);
			if ((r = VEC_GROW(d->snaps, d->cap, d->n, 16, "reading the destination")) < 0)
				return r;
			struct st_snap *s = &d->snaps[d->n++];
			memset(s, 0, sizeof *s);
			uint64_t secs = 0;
			json_t *cr = json_object_get(json_object_get(json_object_get(o, "properties"),
								     "creation"), "exact");
			if (strlen(at + 1) >= sizeof s->name)
				return ferry_err(FERR_CORRUPT, "snapshot name '%s' is too long", name);
			snprintf(s->name, sizeof s->name, "%s", at + 1);
			if ((r = u64_of(json_object_get(o, "guid"), &s->guid)) < 0 ||
			    (r = u64_of(json_object_get(o, "createtxg"), &s->txg)) < 0)
				return r;
			if (cr && u64_of(cr, &secs) == 0)
				s->creation_ns = secs * 1000000000u;
			ferry_err_clear();
		}
	}
	return 0;
}

int dh_state(struct dst_http *h, const char *target, int recursive, struct st_tree *out)
{
	struct st_tree t;
	struct fbuf path;
	json_t *j = NULL;
	long status = 0;
	int r;
	memset(&t, 0, sizeof t);
	fbuf_init(&path, 8192);
	snprintf(t.target, sizeof t.target, "%s", target);
	if ((r = path_of(&path, "/v1/receive/", target, "")) < 0 ||
	    (r = call(h, "GET", &path, "GET /v1/receive", &status, &j)) < 0)
		goto out;
	t.exists = json_is_true(json_object_get(j, "exists"));
	if ((r = copy_str(t.compression, sizeof t.compression, json_object_get(j, "compression"),
			  "compression")) < 0)
		goto out;
	json_decref(j);
	j = NULL;
	if (t.exists) {
		if ((r = path_of(&path, "/v1/datasets/", target,
				 recursive ? "?depth=-1&types=filesystem,volume,snapshot"
					   : "?depth=0&types=filesystem,volume,snapshot")) < 0 ||
		    (r = call(h, "GET", &path, "GET /v1/datasets", &status, &j)) < 0 ||
		    (r = fill_tree(json_object_get(j, "objects"), &t)) < 0)
			goto out;
		if (!t.n || strcmp(t.ds[0].name, target)) {
			r = ferry_err(FERR_CORRUPT, "the server did not list '%s' first", target);
			goto out;
		}
	}
	*out = t;
	memset(&t, 0, sizeof t);
out:
	json_decref(j);
	st_tree_release(&t);
	fbuf_release(&path);
	return r;
}

int dh_abort(struct dst_http *h, const char *target)
{
	struct fbuf path;
	json_t *j = NULL;
	long status = 0;
	int r;
	fbuf_init(&path, 8192);
	if ((r = path_of(&path, "/v1/receive/", target, "")) == 0)
		r = call(h, "DELETE", &path, "DELETE /v1/receive", &status, &j);
	json_decref(j);
	fbuf_release(&path);
	return r;
}

/* ---- the upload ------------------------------------------------------------------------- */

struct dh_recv {
	struct dst_http *h;
	char target[STORE_NAME_MAX + 1];
	struct fbuf path, ans;
	int rfd, wfd;
	pthread_t th;
	int th_on;
	long status;
	int rc;
	struct stream_sink_fd sink;
};

static int fd_rd(void *arg, void *buf, size_t n, size_t *got)
{
	struct dh_recv *u = arg;
	for (;;) {
		ssize_t k = read(u->rfd, buf, n);
		if (k >= 0) {
			*got = (size_t)k;
			return 0;
		}
		if (errno != EINTR)
			return ferry_err_errno(errno, "reading the stream");
	}
}

static void *put_thread(void *arg)
{
	struct dh_recv *u = arg;
	u->rc = net_client_request(u->h->c, "PUT", (const char *)u->path.data, fd_rd, u, NULL, NULL,
				   &u->ans, &u->status);
	if (u->rc < 0)
		u->rc = ferry_err(-u->rc, "%s", ferry_errmsg(u->rc));
	/* an answer before the stream's end stops the sender too (EPIPE) */
	close(u->rfd);
	u->rfd = -1;
	return NULL;
}

int dh_recv_begin(struct dst_http *h, const char *target, unsigned rflags,
		  const char *const *excl, size_t nexcl, struct dh_recv **out,
		  struct stream_sink **sink)
{
	struct dh_recv *u = calloc(1, sizeof *u);
	struct fbuf q;
	int r, fds[2];
	if (!u)
		return ferry_err(FERR_NOMEM, "starting a receive");
	u->h = h;
	snprintf(u->target, sizeof u->target, "%s", target);
	u->rfd = u->wfd = -1;
	fbuf_init(&u->path, 16384);
	fbuf_init(&u->ans, ANSWER_MAX);
	fbuf_init(&q, 8192);
	/* exclude=P,Q (recv -x) and force=1 (recv -F) */
	r = 0;
	for (size_t i = 0; r == 0 && i < nexcl; i++)
		r = fbuf_printf(&q, "%s%s", i ? "," : "?exclude=", excl[i]);
	if (r == 0 && (rflags & RECV_FORCE))
		r = fbuf_printf(&q, "%sforce=1", nexcl ? "&" : "?");
	if (r == 0)
		r = fbuf_putc(&q, 0);
	if (r == 0)
		r = path_of(&u->path, "/v1/receive/", target, (const char *)q.data);
	fbuf_release(&q);
	if (r < 0)
		goto fail;
	if (pipe2(fds, O_CLOEXEC) < 0) {
		r = ferry_err_errno(errno, "cannot make a pipe for the upload");
		goto fail;
	}
	io_pipe_grow(fds[1]);
	u->rfd = fds[0];
	u->wfd = fds[1];
	if ((r = pthread_create(&u->th, NULL, put_thread, u)) != 0) {
		r = ferry_err_errno(r, "cannot start the uploading thread");
		goto fail;
	}
	u->th_on = 1;
	stream_sink_fd_init(&u->sink, u->wfd);
	*out = u;
	*sink = &u->sink.base;
	return 0;
fail:
	if (u->rfd >= 0)
		close(u->rfd);
	if (u->wfd >= 0)
		close(u->wfd);
	fbuf_release(&u->path);
	fbuf_release(&u->ans);
	free(u);
	return r;
}

/* The receive reports of a 200 answer, summed. */
static void add_reports(const struct fbuf *ans, struct recv_stats *st)
{
	json_t *j = json_loadb((const char *)ans->data, ans->len, 0, NULL), *e;
	size_t k;
	json_array_foreach(json_object_get(j, "received"), k, e) {
		json_t *b = json_object_get(e, "blocks");
		uint64_t v;
		st->snapshots++;
		if (u64_of(json_object_get(e, "bytes"), &v) == 0)
			st->bytes += v;
		if (u64_of(json_object_get(b, "logical"), &v) == 0)
			st->blocks_logical += v;
		if (u64_of(json_object_get(b, "kept"), &v) == 0)
			st->blocks_kept += v;
		if (u64_of(json_object_get(b, "recompressed"), &v) == 0)
			st->blocks_recompressed += v;
		if (u64_of(json_object_get(b, "present"), &v) == 0)
			st->blocks_present += v;
		if (u64_of(json_object_get(b, "byref"), &v) == 0)
			st->blocks_byref += v;
		ferry_err_clear();
	}
	json_decref(j);
}

/* After a cut upload the server's receive goes on until it notices,
 * keeping the dataset busy (409) while it saves the partial receive:
 * waits, a bounded time, until GET /v1/receive says it is done, so the
 * next transfer (a retry resuming it) is not refused for that. */
static void wait_idle(struct dst_http *h, const char *target)
{
	struct ferry_errsave es;
	struct fbuf path;
	struct timespec ts = {0, 100000000L};
	ferry_err_save(&es);
	fbuf_init(&path, 8192);
	if (path_of(&path, "/v1/receive/", target, "") == 0) {
		for (int i = 0; i < 100; i++) {
			json_t *j = NULL;
			long status = 0;
			if (call(h, "GET", &path, "GET /v1/receive", &status, &j) < 0)
				break;
			int busy = json_is_true(json_object_get(j, "receiving"));
			json_decref(j);
			if (!busy)
				break;
			nanosleep(&ts, NULL);
		}
	}
	fbuf_release(&path);
	ferry_err_restore(&es);
}

int dh_recv_end(struct dh_recv *u, int send_rc, struct recv_stats *st, char *err, size_t errn)
{
	int r;
	memset(st, 0, sizeof *st);
	err[0] = 0;
	/* the stream's end; a failed send's is short, and the server keeps
	 * what arrived whole as a partial receive */
	close(u->wfd);
	u->wfd = -1;
	pthread_join(u->th, NULL);
	r = u->rc;
	if (r < 0)
		wait_idle(u->h, u->target); /* the connection was lost, not answered */
	if (r == 0 && u->status == 200)
		add_reports(&u->ans, st);
	else if (r == 0)
		r = answer_err(u->status, &u->ans, "PUT /v1/receive");
	/* a send that failed first cut the stream, and the server's 400 says
	 * only that (sync.c then names the send's error); any other answer
	 * came first and is the error */
	if (r < 0 && send_rc < 0 && u->status == 400)
		r = ferry_err(FERR_TRUNCATED, "%s", ferry_errmsg(r));
	if (r < 0)
		snprintf(err, errn, "%s", ferry_errmsg(r));
	fbuf_release(&u->path);
	fbuf_release(&u->ans);
	free(u);
	return r;
}
