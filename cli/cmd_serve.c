/* cli/cmd_serve.c — ferry serve: the HTTP protocol of docs/ferry-http.7 on
 * net/'s server, wired to the store, recv/ and send/. net/ checks every
 * request's token, scope and permission and runs it here on a thread of
 * its own; an upload's body becomes the stream_source recv_run reads, a
 * download is send_run writing to a stream_sink that feeds the response:
 * the same receive and send code a pipe uses, each with its own pool
 * handle. This file adds what only the server knows: which pools it
 * serves, which datasets a receive, abort or destroy is running on (one at
 * a time per dataset: 409 for the next, at once), and the last error of a
 * receive whose client could not be told. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../net/net.h"
#include "../recv/recv.h"
#include "../scrub/scrub.h"
#include "../send/send.h"
#include "../store/store.h"
#include "../stream/stream.h"
#include "cli.h"

_Static_assert(NET_NAME_MAX == STORE_NAME_MAX, "names in paths are the store's names");
_Static_assert(NET_ARG_MAX >= STREAM_TOKEN_MAX, "a resume token fits a query parameter");

#define LISTING_OBJECTS_MAX 20000
#define LISTEN_MAX 16

struct lasterr {
	char ds[STORE_NAME_MAX + 1];
	unsigned status;
	char msg[512];
};

struct srv {
	char **pools;
	size_t npools;
	unsigned recv_threads;
	pthread_mutex_t mu;
	char (*busy)[STORE_NAME_MAX + 1];
	size_t nbusy, capbusy;
	struct lasterr *le;
	size_t nle, caple;
};

static void srv_log(void *arg, const char *line)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s ferry serve: %s\n", ts, line);
}

/* ---- datasets in use ------------------------------------------------------- */

/* One of a and b is the other or lies below it. */
static int overlaps(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), l = la < lb ? la : lb;
	if (strncmp(a, b, l))
		return 0;
	return la == lb || (la < lb ? b[la] == '/' : a[lb] == '/');
}

static int busy_find(struct srv *s, const char *ds)
{
	for (size_t i = 0; i < s->nbusy; i++)
		if (overlaps(s->busy[i], ds))
			return 1;
	return 0;
}

/* Marks ds in use: 0, or -FERR_BUSY naming what runs there. */
static int busy_take(struct srv *s, const char *ds)
{
	int r = 0;
	pthread_mutex_lock(&s->mu);
	if (busy_find(s, ds))
		r = ferry_err(FERR_BUSY, "'%s': a receive, abort or destroy runs on it or on a dataset "
			      "above or below it", ds);
	else if ((r = VEC_GROW(s->busy, s->capbusy, s->nbusy, 8, "serving")) == 0)
		snprintf(s->busy[s->nbusy++], sizeof s->busy[0], "%s", ds);
	pthread_mutex_unlock(&s->mu);
	return r;
}

static void busy_drop(struct srv *s, const char *ds)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nbusy; i++)
		if (!strcmp(s->busy[i], ds)) {
			memmove(&s->busy[i], &s->busy[i + 1], (s->nbusy - i - 1) * sizeof s->busy[0]);
			s->nbusy--;
			break;
		}
	pthread_mutex_unlock(&s->mu);
}

static int busy_now(struct srv *s, const char *ds)
{
	pthread_mutex_lock(&s->mu);
	int b = 0;
	for (size_t i = 0; i < s->nbusy; i++)
		if (!strcmp(s->busy[i], ds))
			b = 1;
	pthread_mutex_unlock(&s->mu);
	return b;
}

/* The last error of a receive into ds: set (status != 0) or cleared. */
static void lasterr_set(struct srv *s, const char *ds, unsigned status, const char *msg)
{
	pthread_mutex_lock(&s->mu);
	size_t i;
	for (i = 0; i < s->nle && strcmp(s->le[i].ds, ds); i++)
		;
	if (!status) {
		if (i < s->nle)
			s->le[i] = s->le[--s->nle];
	} else if (i < s->nle || VEC_GROW(s->le, s->caple, s->nle, 8, "serving") == 0) {
		if (i == s->nle)
			s->nle++;
		snprintf(s->le[i].ds, sizeof s->le[i].ds, "%s", ds);
		s->le[i].status = status;
		snprintf(s->le[i].msg, sizeof s->le[i].msg, "%s", msg);
	}
	pthread_mutex_unlock(&s->mu);
}

static json_t *lasterr_json(struct srv *s, const char *ds)
{
	json_t *o = json_null();
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->nle; i++)
		if (!strcmp(s->le[i].ds, ds)) {
			json_decref(o);
			o = json_pack("{s:i,s:s}", "status", (int)s->le[i].status, "error", s->le[i].msg);
		}
	pthread_mutex_unlock(&s->mu);
	return o;
}

/* ---- answers ---------------------------------------------------------------- */

static void answer_json(struct net_call *c, unsigned status, json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text) {
		net_call_fail(c, 500, "out of memory");
		return;
	}
	size_t len = strlen(text);
	if (len > NET_JSON_MAX) {
		free(text);
		net_call_fail(c, 413, "the answer is larger than 64 MiB: ask with a smaller depth");
		return;
	}
	/* a newline ends the body, for people reading it with curl */
	char *nl = realloc(text, len + 2);
	if (nl) {
		text = nl;
		text[len++] = '\n';
		text[len] = 0;
	}
	net_call_finish(c, status, text, len);
	free(text);
}

/* The status of an error of the store, send/ or recv/ (docs/ferry-http.7,
 * ERRORS). A receive's conflicts with what the target holds are 409; a
 * dataset, snapshot or base the request names and that is not there is
 * 404 (receives check theirs before the body). */
static unsigned status_of(int r, int receiving)
{
	switch (-r) {
	case FERR_CORRUPT: case FERR_TRUNCATED: case FERR_UNSUPPORTED: case FERR_VERSION:
	case FERR_LIMIT: case FERR_OVERFLOW: case FERR_NAME: case FERR_PROP:
		return 400;
	case FERR_INVAL:
		return receiving ? 409 : 400;
	case FERR_NOENT:
		return receiving ? 409 : 404;
	case FERR_BUSY: case FERR_EXISTS: case FERR_NOTEMPTY:
		return 409;
	case FERR_NOSPC: case FERR_QUOTA:
		return 507;
	default:
		return 500;
	}
}

static void fail_err(struct net_call *c, int r, int receiving, const char *what)
{
	net_call_fail(c, status_of(r, receiving), "%s: %s", what, ferry_errmsg(r));
}

/* The served pool that holds name, or NULL (then 404). */
static const char *served_pool(struct srv *s, const char *name)
{
	size_t l = strcspn(name, "/@#");
	for (size_t i = 0; i < s->npools; i++)
		if (strlen(s->pools[i]) == l && !strncmp(s->pools[i], name, l))
			return s->pools[i];
	return NULL;
}

static int open_pool(struct srv *s, struct net_call *c, const char *name, int flags,
		     struct store_pool **p)
{
	const char *pool = served_pool(s, name);
	int r;
	if (!pool) {
		net_call_fail(c, 404, "pool '%.*s' is not served here", (int)strcspn(name, "/@#"), name);
		return -1;
	}
	if ((r = store_pool_open(pool, flags, p)) < 0) {
		fail_err(c, r, 0, pool);
		return -1;
	}
	return 0;
}

static const char *type_name(int type)
{
	return store_ds_type_name(type);
}

static json_t *u64s(uint64_t v)
{
	char b[32];
	snprintf(b, sizeof b, "%" PRIu64, v);
	return json_string(b);
}

/* ---- GET /v1/pools ------------------------------------------------------------- */

static void ep_pools(struct srv *s, struct net_call *c)
{
	const struct net_token *t = net_call_token(c);
	json_t *arr = json_array();
	for (size_t i = 0; i < s->npools; i++)
		if (net_scope_covers(s->pools[i], t->scope))
			json_array_append_new(arr, json_pack("{s:s}", "name", s->pools[i]));
	answer_json(c, 200, json_pack("{s:i,s:s,s:s,s:o}", "protocol", NET_PROTOCOL, "scope", t->scope,
				      "perm", net_perm_name(t->perm), "pools", arr));
}

/* ---- GET /v1/datasets/NAME ------------------------------------------------------ */

struct lister {
	json_t *objs;
	unsigned types;
	size_t n;
	struct store_propval *v;
};

static const char *source_text(const struct store_propval *v, char *buf, size_t n)
{
	switch (v->source) {
	case STORE_SRC_DEFAULT: return "default";
	case STORE_SRC_LOCAL: return "local";
	case STORE_SRC_RECEIVED: return "received";
	case STORE_SRC_INHERITED:
		snprintf(buf, n, "inherited from %s", v->inherited_from);
		return buf;
	default: return "-";
	}
}

static int prop_cb(const struct store_propval *v, void *arg)
{
	char src[STORE_NAME_MAX + 32];
	json_t *o = json_pack("{s:s,s:s,s:s}", "value", v->value, "exact", v->exact, "source",
			      source_text(v, src, sizeof src));
	if (!o || json_object_set_new(arg, v->name, o) < 0)
		return ferry_err(FERR_NOMEM, "listing");
	return 0;
}

static int hold_cb(struct store_pool *p, const struct store_hold *h, void *arg)
{
	json_t *t = json_integer((json_int_t)(h->creation_ns / 1000000000u));
	if (!t || json_object_set_new(arg, h->tag, t) < 0)
		return ferry_err(FERR_NOMEM, "listing holds");
	return 0;
}

/* A snapshot's holds as `ferry holds --json -p` gives them: {TAG: SECONDS}. */
static int snap_holds(struct store_pool *p, const struct store_ds *ds, json_t *o)
{
	struct store_snap sn;
	json_t *h = json_object();
	int r;
	if (!h)
		return ferry_err(FERR_NOMEM, "listing holds");
	memset(&sn, 0, sizeof sn);
	sn.id = ds->id;
	snprintf(sn.name, sizeof sn.name, "%s", ds->name);
	if ((r = store_hold_iter(p, &sn, hold_cb, h)) < 0) {
		json_decref(h);
		return r;
	}
	return json_object_set_new(o, "holds", h) < 0 ? ferry_err(FERR_NOMEM, "listing holds") : 0;
}

static int list_object(struct store_pool *p, const struct store_ds *ds, struct lister *l)
{
	static const unsigned bit[] = {0, NET_T_FILESYSTEM, NET_T_VOLUME, NET_T_SNAPSHOT, NET_T_BOOKMARK};
	int r;
	if (ds->type < 1 || ds->type > 4 || !(l->types & bit[ds->type]))
		return 0;
	if (++l->n > LISTING_OBJECTS_MAX)
		return ferry_err(FERR_LIMIT, "more than %d objects: ask with a smaller depth",
				 LISTING_OBJECTS_MAX);
	json_t *props = json_object(), *o;
	if ((r = store_prop_all(p, ds, prop_cb, props)) < 0) {
		json_decref(props);
		return r;
	}
	o = json_pack("{s:s,s:s,s:o,s:o}", "name", ds->name, "type", type_name(ds->type), "guid",
		      u64s(ds->guid), "createtxg", u64s(ds->createtxg));
	if (!o) {
		json_decref(props);
		return ferry_err(FERR_NOMEM, "listing");
	}
	if (ds->type == STORE_DS_FILESYSTEM || ds->type == STORE_DS_VOLUME) {
		if ((r = store_prop_get(p, ds, "compression", l->v)) < 0)
			goto fail;
		json_object_set_new(o, "compression", json_string(l->v->value));
		if ((r = store_prop_get(p, ds, "receive_resume_token", l->v)) < 0)
			goto fail;
		json_object_set_new(o, "receive_resume_token", strcmp(l->v->value, "-")
				    ? json_string(l->v->value) : json_null());
	}
	if (ds->type == STORE_DS_SNAPSHOT && (r = snap_holds(p, ds, o)) < 0) {
		json_decref(o);
		json_decref(props);
		return r;
	}
	json_object_set_new(o, "properties", props);
	json_array_append_new(l->objs, o);
	return 0;
fail:
	json_decref(o);
	json_decref(props);
	return r;
}

static int list_snap(struct store_pool *p, const struct store_snap *sn, void *arg)
{
	struct store_ds ds;
	store_snap_to_ds(sn, &ds);
	return list_object(p, &ds, arg);
}

static int list_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct store_ds ds;
	store_bookmark_to_ds(b, &ds);
	return list_object(p, &ds, arg);
}

static int list_ds(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct lister *l = arg;
	int r = list_object(p, ds, l);
	if (r == 0 && (l->types & NET_T_SNAPSHOT))
		r = store_snap_iter(p, ds, list_snap, l);
	if (r == 0 && (l->types & NET_T_BOOKMARK))
		r = store_bookmark_iter(p, ds, list_mark, l);
	return r;
}

static void ep_datasets(struct srv *s, struct net_call *c, const struct net_req *q)
{
	struct store_pool *p = NULL;
	struct store_ds ds;
	struct lister l;
	int r, snap = strchr(q->name, '@') != NULL, mark = strchr(q->name, '#') != NULL;
	memset(&l, 0, sizeof l);
	if ((r = store_name_check(q->name, snap ? STORE_NAME_SNAPSHOT : mark ? STORE_NAME_BOOKMARK
							  : STORE_NAME_DATASET)) < 0) {
		fail_err(c, r, 0, q->name);
		return;
	}
	if (open_pool(s, c, q->name, STORE_OPEN_RDONLY, &p) < 0)
		return;
	if (!(l.v = malloc(sizeof *l.v)) || !(l.objs = json_array())) {
		net_call_fail(c, 500, "out of memory");
		goto out;
	}
	l.types = q->types;
	if ((r = store_read_begin(p)) < 0)
		goto fail;
	if (snap) {
		struct store_snap sn;
		if ((r = store_snap_lookup(p, q->name, &sn)) == 0) {
			l.types |= NET_T_SNAPSHOT;
			r = list_snap(p, &sn, &l);
		}
	} else if (mark) {
		struct store_bookmark b;
		if ((r = store_bookmark_lookup(p, q->name, &b)) == 0) {
			l.types |= NET_T_BOOKMARK;
			r = list_mark(p, &b, &l);
		}
	} else if ((r = store_ds_lookup(p, q->name, &ds)) == 0) {
		r = store_ds_walk(p, &ds, q->depth, list_ds, &l);
	}
	store_read_end(p);
	if (r < 0)
		goto fail;
	answer_json(c, 200, json_pack("{s:i,s:O}", "protocol", NET_PROTOCOL, "objects", l.objs));
	goto out;
fail:
	if (r == -FERR_LIMIT)
		net_call_fail(c, 413, "%s", ferry_errmsg(r));
	else
		fail_err(c, r, 0, q->name);
out:
	json_decref(l.objs);
	free(l.v);
	store_pool_close(p);
}

/* ---- GET /v1/receive/DATASET ------------------------------------------------------ */

static int info_snap(struct store_pool *p, const struct store_snap *sn, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s,s:o,s:o}", "name", sn->snapname, "guid",
					     u64s(sn->guid), "createtxg", u64s(sn->createtxg)));
	return 0;
}

static int info_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s,s:o,s:o}", "name", b->markname, "guid",
					     u64s(b->guid), "createtxg", u64s(b->createtxg)));
	return 0;
}

static void ep_recv_info(struct srv *s, struct net_call *c, const struct net_req *q)
{
	struct store_pool *p = NULL;
	struct store_ds ds, parent;
	struct codec_spec codec;
	char tok[STREAM_TOKEN_MAX + 16];
	json_t *snaps = json_array(), *marks = json_array(), *o = NULL;
	int r, exists = 0;
	if ((r = store_name_check(q->name, STORE_NAME_DATASET)) < 0) {
		fail_err(c, r, 0, q->name);
		goto out;
	}
	if (open_pool(s, c, q->name, STORE_OPEN_RDONLY, &p) < 0)
		goto out;
	if ((r = store_read_begin(p)) < 0)
		goto fail;
	r = store_ds_lookup(p, q->name, &ds);
	if (r == 0) {
		exists = 1;
		if ((r = store_ds_compression(p, &ds, &codec)) < 0 ||
		    (r = store_snap_iter(p, &ds, info_snap, snaps)) < 0 ||
		    (r = store_bookmark_iter(p, &ds, info_mark, marks)) < 0)
			goto fail_read;
		r = recv_resume_token(p, q->name, tok, sizeof tok);
		if (r == -FERR_NOENT)
			tok[0] = 0;
		else if (r < 0)
			goto fail_read;
	} else if (r == -FERR_NOENT) {
		char pn[STORE_NAME_MAX + 1];
		snprintf(pn, sizeof pn, "%s", q->name);
		char *sl = strrchr(pn, '/');
		if (!sl) {
			r = ferry_err(FERR_NOENT, "'%s' does not exist", q->name);
			goto fail_read;
		}
		*sl = 0;
		if ((r = store_ds_lookup(p, pn, &parent)) < 0) {
			if (r == -FERR_NOENT)
				r = ferry_err(FERR_NOENT, "'%s' does not exist: a receive into '%s' needs it",
					      pn, q->name);
			goto fail_read;
		}
		if ((r = store_ds_compression(p, &parent, &codec)) < 0)
			goto fail_read;
		tok[0] = 0;
	} else {
		goto fail_read;
	}
	store_read_end(p);
	o = json_pack("{s:i,s:s,s:b,s:s,s:s}", "protocol", NET_PROTOCOL, "dataset", q->name, "exists",
		      exists, "type", exists ? type_name(ds.type) : "none", "compression",
		      codec_name(codec));
	json_object_set_new(o, "receive_resume_token", tok[0] ? json_string(tok) : json_null());
	json_object_set_new(o, "receiving", json_boolean(busy_now(s, q->name)));
	json_object_set_new(o, "last_error", lasterr_json(s, q->name));
	json_object_set_new(o, "snapshots", snaps);
	json_object_set_new(o, "bookmarks", marks);
	snaps = marks = NULL;
	answer_json(c, 200, o);
	goto out;
fail_read:
	store_read_end(p);
fail:
	fail_err(c, r, 0, q->name);
out:
	json_decref(snaps);
	json_decref(marks);
	store_pool_close(p);
}

/* ---- PUT /v1/receive/DATASET[@SNAP] ------------------------------------------------ */

struct body_source {
	struct stream_source base;
	struct net_call *c;
};

static int body_read(struct stream_source *src, void *buf, size_t n, size_t *got)
{
	struct body_source *b = (struct body_source *)src;
	return net_call_read(b->c, buf, n, got);
}

struct recv_report {
	json_t *arr;
};

static void recv_done(void *arg, const char *snapshot, const struct recv_stats *st)
{
	struct recv_report *rp = arg;
	json_t *blocks = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "logical", u64s(st->blocks_logical),
				   "kept", u64s(st->blocks_kept), "recompressed",
				   u64s(st->blocks_recompressed), "present", u64s(st->blocks_present),
				   "byref", u64s(st->blocks_byref), "tried", u64s(st->blocks_tried));
	json_t *lbytes = json_pack("{s:o,s:o,s:o,s:o,s:o}", "logical", u64s(st->lbytes_logical),
				   "kept", u64s(st->lbytes_kept), "recompressed",
				   u64s(st->lbytes_recompressed), "present", u64s(st->lbytes_present),
				   "tried", u64s(st->lbytes_tried));
	json_array_append_new(rp->arr, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "snapshot", snapshot,
						 "bytes", u64s(st->bytes), "nodes", u64s(st->nodes),
						 "blocks", blocks, "lbytes", lbytes, "written",
						 u64s(st->pbytes_written)));
}

/* the heap grown once at start, advised huge (cli_heap_huge) */
#define SERVE_HEAP_GROW ((size_t)32 << 20)
#define EXCLUDE_MAX 64

/* exclude=P,Q,... (recv -x): the names, split in buf (a copy of list),
 * each a known property; -FERR_PROP naming one that is not. */
static int exclude_list(const char *list, char *buf, const char **v, size_t *n)
{
	*n = 0;
	snprintf(buf, NET_ARG_MAX + 1, "%s", list);
	for (char *w = buf; *buf && w;) {
		char *comma = strchr(w, ',');
		if (comma)
			*comma = 0;
		if (*n == EXCLUDE_MAX)
			return ferry_err(FERR_LIMIT, "more than %d properties", EXCLUDE_MAX);
		if (!store_prop_known(w))
			return ferry_err(FERR_PROP, "unknown property '%s'", w);
		v[(*n)++] = w;
		w = comma ? comma + 1 : NULL;
	}
	return 0;
}

static void ep_recv(struct srv *s, struct net_call *c, const struct net_req *q)
{
	char xbuf[NET_ARG_MAX + 1];
	const char *excl[EXCLUDE_MAX];
	struct store_pool *p = NULL;
	struct store_ds parent;
	struct recv_opts o;
	struct recv_stats st;
	struct recv_report rp = {NULL};
	struct body_source src;
	char pn[STORE_NAME_MAX + 1], what[STORE_NAME_MAX + 128], how[STORE_NAME_MAX + 96];
	int r, taken = 0;
	const char *target = q->name, *ds = q->dataset;
	if ((r = store_name_check(target, strchr(target, '@') ? STORE_NAME_SNAPSHOT
							     : STORE_NAME_DATASET)) < 0) {
		fail_err(c, r, 0, target);
		return;
	}
	if (!served_pool(s, ds)) {
		net_call_fail(c, 404, "pool '%.*s' is not served here", (int)strcspn(ds, "/"), ds);
		return;
	}
	if ((r = busy_take(s, ds)) < 0) {
		net_call_fail(c, 409, "%s", ferry_errmsg(r));
		return;
	}
	taken = 1;
	lasterr_set(s, ds, 0, NULL);
	if (open_pool(s, c, ds, 0, &p) < 0)
		goto out;
	snprintf(what, sizeof what, "a receive into %s over HTTP from %s", target, net_call_peer(c));
	store_pool_activity(p, what);
	/* the parent must exist: 404 before the body (recv_run's NOENT later
	 * means a missing base, a 409) */
	snprintf(pn, sizeof pn, "%s", ds);
	if (strrchr(pn, '/'))
		*strrchr(pn, '/') = 0;
	if ((r = store_ds_lookup(p, pn, &parent)) < 0) {
		if (r == -FERR_NOENT)
			net_call_fail(c, 404, "'%s' does not exist: a receive into '%s' needs it", pn, ds);
		else
			fail_err(c, r, 0, pn);
		goto out;
	}
	memset(&o, 0, sizeof o);
	memset(&st, 0, sizeof st);
	memset(&src, 0, sizeof src);
	src.base.read = body_read;
	src.c = c;
	rp.arr = json_array();
	o.flags = RECV_RESUMABLE | (q->force ? RECV_FORCE : 0);
	if ((r = exclude_list(q->exclude, xbuf, excl, &o.nexclude)) < 0) {
		fail_err(c, r, 0, "exclude");
		goto out;
	}
	o.exclude = excl;
	o.threads = s->recv_threads;
	o.done = recv_done;
	o.arg = &rp;
	/* an HTTP client resumes by itself: the pipe's `send -t` advice
	 * would be wrong in the error body */
	snprintf(how, sizeof how, "the same 'ferry send --to', which resumes by itself "
		 "(the token: GET /v1/receive/%s)", ds);
	o.resume_how = how;
	cli_heap_advise(); /* what the heap grew by since is on huge pages too */
	r = recv_run(p, target, &src.base, &o, &st);
	char msg[512] = "";
	unsigned stc = 0;
	int stopping = 0, gone = 0;
	if (r < 0) {
		stopping = net_call_stopping(c);
		gone = !stopping && net_call_conn_failed(c);
		if (stopping || gone) {
			snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
		} else {
			/* recorded while the dataset is still busy: a client
			 * that lost the answer waits for receiving to go false,
			 * then reads last_error */
			stc = status_of(r, 1);
			snprintf(msg, sizeof msg, "cannot receive into '%s': %s", target,
				 ferry_errmsg(r));
			lasterr_set(s, ds, stc, msg);
		}
	}
	/* the receive is over (committed, or its partial state kept): the
	 * dataset is free before the client hears so, or its next request
	 * could still find it busy */
	store_pool_close(p);
	p = NULL;
	busy_drop(s, ds);
	taken = 0;
	if (r == 0)
		answer_json(c, 200, json_pack("{s:i,s:O}", "protocol", NET_PROTOCOL, "received", rp.arr));
	else if (stopping)
		net_call_fail(c, 503, "the server is stopping: %s", msg);
	else if (gone)
		/* nobody reads this answer; the partial state and its token say
		 * where the receive stands */
		net_call_fail(c, 400, "%s", msg);
	else
		net_call_fail(c, stc, "%s", msg);
out:
	json_decref(rp.arr);
	store_pool_close(p);
	if (taken)
		busy_drop(s, ds);
}

/* ---- DELETE /v1/receive/DATASET, DELETE /v1/snapshots/DATASET@SNAP ------------------ */

static void ep_abort_or_destroy(struct srv *s, struct net_call *c, const struct net_req *q)
{
	struct store_pool *p = NULL;
	const char *done = NULL;
	int r, destroy = q->ep == NET_EP_DESTROY;
	if ((r = store_name_check(q->name, destroy ? STORE_NAME_SNAPSHOT : STORE_NAME_DATASET)) < 0) {
		fail_err(c, r, 0, q->name);
		return;
	}
	if (!served_pool(s, q->dataset)) {
		net_call_fail(c, 404, "pool '%.*s' is not served here", (int)strcspn(q->name, "/@"),
			      q->name);
		return;
	}
	if ((r = busy_take(s, q->dataset)) < 0) {
		net_call_fail(c, 409, "%s", ferry_errmsg(r));
		return;
	}
	if (open_pool(s, c, q->dataset, 0, &p) < 0)
		goto out;
	if (destroy) {
		struct store_snap sn;
		store_pool_activity(p, "a destroy over HTTP");
		if ((r = store_snap_lookup(p, q->name, &sn)) < 0 ||
		    (r = store_snap_destroy(p, &sn, 1)) < 0) {
			fail_err(c, r, 0, q->name);
			goto out;
		}
		done = "destroyed";
	} else {
		store_pool_activity(p, "an abort of a partial receive over HTTP");
		if ((r = recv_abort(p, q->name)) < 0) {
			if (r == -FERR_NOENT)
				net_call_fail(c, 404, "'%s' has no partial receive", q->name);
			else
				fail_err(c, r, 0, q->name);
			goto out;
		}
		done = "aborted";
	}
out:
	/* free before the answer: the client's next request must not find
	 * the dataset busy */
	store_pool_close(p);
	busy_drop(s, q->dataset);
	if (done)
		answer_json(c, 200, json_pack("{s:i,s:s}", "protocol", NET_PROTOCOL, done, q->name));
}

/* ---- GET /v1/send/DATASET@SNAP ------------------------------------------------------- */

struct call_sink {
	struct stream_sink base;
	struct net_call *c;
	int begun;
};

static int call_write(struct stream_sink *k, const void *buf, size_t n)
{
	struct call_sink *cs = (struct call_sink *)k;
	int r;
	if (!cs->begun) {
		if ((r = net_call_begin(cs->c, "application/x-ferry-stream")) < 0)
			return r;
		cs->begun = 1;
	}
	return net_call_write(cs->c, buf, n);
}

static void ep_send(struct srv *s, struct net_call *c, const struct net_req *q)
{
	struct store_pool *p = NULL;
	struct send_opts o;
	struct call_sink sink;
	struct stream_token tok;
	char full[2 * STORE_NAME_MAX + 2];
	int r;
	memset(&o, 0, sizeof o);
	memset(&sink, 0, sizeof sink);
	if ((r = store_name_check(q->name, STORE_NAME_SNAPSHOT)) < 0) {
		fail_err(c, r, 0, q->name);
		return;
	}
	if (q->token[0]) {
		if ((r = stream_token_decode(q->token, &tok)) < 0) {
			net_call_fail(c, 400, "invalid resume token: %s", ferry_errmsg(r));
			return;
		}
		snprintf(full, sizeof full, "%s@%s", tok.dataset, tok.snapshot);
		if (strcmp(full, q->name)) {
			net_call_fail(c, 400, "the token resumes '%s', not '%s'", full, q->name);
			return;
		}
		o.token = q->token;
	}
	if (q->from[0])
		o.from = q->from;
	o.flags = (q->intermediate ? SEND_INTERMEDIATE : 0) | (q->replicate ? SEND_REPLICATE : 0) |
		  (q->compressed ? SEND_COMPRESSED : 0) | (q->props ? SEND_PROPS : 0);
	if (q->compress[0]) {
		if ((r = codec_parse(q->compress, &o.codec)) < 0) {
			net_call_fail(c, 400, "compress: %s", ferry_errmsg(r));
			return;
		}
		o.flags |= SEND_RECOMPRESS;
	}
	if (open_pool(s, c, q->name, STORE_OPEN_RDONLY, &p) < 0)
		return;
	store_pool_activity(p, "a send over HTTP");
	/* the client's progress line: the catalogue's estimate in the
	 * stream's HINT (a full stream costs a row, an incremental a walk of
	 * what changed; a resumed one has none) */
	if (!o.token && (r = send_estimate(p, q->name, &o, &o.estimate)) < 0)
		ferry_err_clear();
	else if (o.estimate)
		o.flags |= SEND_ESTIMATE;
	sink.base.write = call_write;
	sink.c = c;
	r = send_run(p, o.token ? NULL : q->name, &o, &sink.base, NULL);
	store_pool_close(p);
	if (r == 0) {
		if (!sink.begun && net_call_begin(c, "application/x-ferry-stream") < 0) {
			net_call_fail(c, 500, "%s", ferry_errmsg(-FERR_IO));
			return;
		}
		net_call_finish(c, 200, NULL, 0);
		return;
	}
	/* after the first byte any failure cuts the stream short */
	fail_err(c, r, 0, q->name);
}

/* ---- GET /v1/blocks/DATASET, GET /v1/nodes/DATASET ------------------------------------- */

/* A good copy for a repair (scrub --repair-from URL): only of what a
 * snapshot (or, for a node, a bookmark) in the path's dataset or below it
 * references, so a token scoped there reads nothing of the rest of the
 * pool by naming a hash; "not there", "elsewhere in the pool" and "our
 * copy is damaged too" are one 404. */
static void ep_object(struct srv *s, struct net_call *c, const struct net_req *q)
{
	struct store_pool *p = NULL;
	struct store_reader *rd = NULL;
	struct store_ds ds;
	struct fbuf b;
	char hex[FERRY_HASH_HEX];
	const char *what = q->ep == NET_EP_BLOCK ? "block" : "node";
	uint32_t ls = 0;
	int r, type = 0;
	hash_to_hex(q->hash, hex);
	fbuf_init(&b, (q->ep == NET_EP_BLOCK ? STORE_BLOCK_MAX : NODE_MAX) + 1);
	if (open_pool(s, c, q->name, STORE_OPEN_RDONLY, &p) < 0)
		goto out;
	store_pool_activity(p, "a repair's read over HTTP");
	if ((r = store_ds_lookup(p, q->name, &ds)) < 0) {
		fail_err(c, r, 0, q->name);
		goto out;
	}
	r = q->ep == NET_EP_BLOCK ? store_block_in_scope(p, &ds, q->hash, &ls)
				  : scrub_node_in_scope(p, &ds, q->hash);
	if (r == 0) {
		net_call_fail(c, 404, "no snapshot of '%s' references %s %.16s", q->name, what, hex);
		goto out;
	}
	if (r > 0 && (r = store_reader_new(p, &rd)) == 0) {
		if (q->ep == NET_EP_BLOCK) {
			if ((r = fbuf_reserve(&b, ls)) == 0 &&
			    (r = store_block_read(rd, q->hash, b.data, ls)) == 0)
				b.len = ls;
		} else if ((r = store_node_read(rd, q->hash, &type, &b)) == 0 &&
			   (r = fbuf_reserve(&b, 1)) == 0) {
			/* the type byte first */
			memmove(b.data + 1, b.data, b.len);
			b.data[0] = (uint8_t)type;
			b.len++;
		}
	}
	if (r == -FERR_CORRUPT || r == -FERR_NOENT) {
		net_call_fail(c, 404, "'%s' holds no good copy of %s %.16s: %s", store_pool_name(p),
			      what, hex, ferry_errmsg(r));
		goto out;
	}
	if (r < 0) {
		fail_err(c, r, 0, q->name);
		goto out;
	}
	net_call_finish_as(c, 200, q->ep == NET_EP_BLOCK ? NET_BLOCK_TYPE : NET_NODE_TYPE, b.data,
			   b.len);
out:
	store_reader_free(rd);
	store_pool_close(p);
	fbuf_release(&b);
}

static void serve_one(void *arg, struct net_call *c)
{
	struct srv *s = arg;
	const struct net_req *q = net_call_req(c);
	switch (q->ep) {
	case NET_EP_POOLS: ep_pools(s, c); break;
	case NET_EP_DATASETS: ep_datasets(s, c, q); break;
	case NET_EP_RECV_INFO: ep_recv_info(s, c, q); break;
	case NET_EP_RECV: ep_recv(s, c, q); break;
	case NET_EP_ABORT:
	case NET_EP_DESTROY: ep_abort_or_destroy(s, c, q); break;
	case NET_EP_SEND: ep_send(s, c, q); break;
	case NET_EP_BLOCK:
	case NET_EP_NODE: ep_object(s, c, q); break;
	default: net_call_fail(c, 404, "no such endpoint"); break;
	}
}

/* ---- the command --------------------------------------------------------------------- */

static unsigned parse_count(const char *what, const char *v, unsigned lo, unsigned hi, int *bad)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (!*v || *end || n < lo || n > hi) {
		cli_usage("serve: %s is %u..%u, not '%s'", what, lo, hi, v);
		*bad = 1;
	}
	return (unsigned)n;
}

int cmd_serve(int argc, char **argv)
{
	static const struct option lo[] = {
		{"listen", required_argument, NULL, 'l'},
		{"tls-cert", required_argument, NULL, 'C'},
		{"tls-key", required_argument, NULL, 'K'},
		{"tokens", required_argument, NULL, 'T'},
		{"timeout", required_argument, NULL, 't'},
		{"max-connections", required_argument, NULL, 'm'},
		{"max-transfers", required_argument, NULL, 'x'},
		{"recv-threads", required_argument, NULL, 'r'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry serve [--listen ADDR:PORT]... [--tls-cert FILE --tls-key FILE] "
			    "--tokens FILE [--timeout SECONDS] [--max-connections N] "
			    "[--max-transfers N] [--recv-threads N] POOL...";
	const char *listen[LISTEN_MAX];
	struct net_server_opts no;
	struct srv s;
	struct net_server *ns = NULL;
	size_t nlisten = 0;
	int c, r, bad = 0;
	memset(&no, 0, sizeof no);
	memset(&s, 0, sizeof s);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "serve", "", lo)) != -1) {
		switch (c) {
		case 'l':
			if (nlisten == LISTEN_MAX)
				return cli_usage("serve: at most %d --listen", LISTEN_MAX);
			listen[nlisten++] = optarg;
			break;
		case 'C': no.tls_cert = optarg; break;
		case 'K': no.tls_key = optarg; break;
		case 'T': no.tokens = optarg; break;
		case 't': no.timeout = parse_count("--timeout", optarg, 1, 86400, &bad); break;
		case 'm': no.max_conns = parse_count("--max-connections", optarg, 1, 10000, &bad); break;
		case 'x': no.max_transfers = parse_count("--max-transfers", optarg, 1, 1000, &bad); break;
		case 'r': s.recv_threads = parse_count("--recv-threads", optarg, 0, 256, &bad); break;
		case 'h': printf("%s\n", usage); return EXIT_OK;
		default: return cli_opt_end();
		}
		if (bad)
			return EXIT_USAGE;
	}
	if (!no.tokens || optind == argc)
		return cli_usage("%s", usage);
	if (!no.tls_cert != !no.tls_key)
		return cli_usage("serve: --tls-cert and --tls-key go together");
	if (!nlisten)
		listen[nlisten++] = "127.0.0.1:7300";
	s.pools = argv + optind;
	s.npools = (size_t)(argc - optind);
	for (size_t i = 0; i < s.npools; i++) {
		struct store_pool *p = NULL;
		if ((r = store_name_check(s.pools[i], STORE_NAME_POOL)) < 0 ||
		    (r = store_pool_open(s.pools[i], STORE_OPEN_RDONLY, &p)) < 0)
			return cli_fail(r, "serve: cannot serve pool '%s'", s.pools[i]);
		store_pool_close(p);
	}
	pthread_mutex_init(&s.mu, NULL);
	/* every thread (libmicrohttpd's, each request's) inherits this mask:
	 * the signals come to the sigwait below, SIGPIPE to nobody */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Every request's receive allocates from one heap, on huge pages as
	 * recv's (cli/heap.c), re-advised as it grows (ep_recv); glibc's
	 * per-thread arenas would be on 4 KiB pages. bench/serve's 1 %
	 * incremental over HTTP took 0.65-0.77 s on them against the pipe's
	 * 0.56-0.63 s, 0.63-0.69 s on these (docs/notes/http.md, session
	 * 29). Before any thread starts. */
	mallopt(M_ARENA_MAX, 1);
	cli_heap_huge(SERVE_HEAP_GROW);
	no.listen = listen;
	no.nlisten = nlisten;
	no.serve = serve_one;
	no.log = srv_log;
	no.arg = &s;
	if ((r = net_server_start(&no, &ns)) < 0) {
		pthread_mutex_destroy(&s.mu);
		return cli_fail(r, "serve");
	}
	for (size_t i = 0; i < nlisten; i++) {
		char line[300];
		const char *colon = listen[i][0] == '[' ? strchr(listen[i], ']') + 1 : strrchr(listen[i], ':');
		snprintf(line, sizeof line, "listening on %.*s:%u (%s), serving %zu pool%s",
			 (int)(colon - listen[i]), listen[i], net_server_port(ns, i),
			 no.tls_cert ? "https" : "http", s.npools, s.npools == 1 ? "" : "s");
		srv_log(&s, line);
	}
	for (;;) {
		int sig = 0;
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			if ((r = net_server_reload(ns)) < 0) {
				char line[600];
				snprintf(line, sizeof line, "SIGHUP: the tokens stay as they were: %s",
					 ferry_errmsg(r));
				srv_log(&s, line);
			}
			continue;
		}
		break;
	}
	srv_log(&s, "stopping: transfers end (receives keep their partial state)");
	net_server_stop(ns);
	srv_log(&s, "stopped");
	free(s.busy);
	free(s.le);
	pthread_mutex_destroy(&s.mu);
	return EXIT_OK;
}
