/* cli/http.c — ferry send --to URL and ferry recv --from URL: the client
 * side of docs/ferry-http.7 (RESUMING). The stream is the one a pipe
 * carries, made by send_run and taken by recv_run; a net_pipe joins them
 * to libcurl running on another thread. A dropped connection is resumed
 * from the partial receive's token (the server's for an upload, our own
 * pool's for a download): again at once after an attempt that made
 * progress, after a growing delay after one that did not, a bounded number
 * of those in a row. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../net/net.h"
#include "../recv/recv.h"
#include "../send/send.h"
#include "../store/store.h"
#include "../stream/stream.h"
#include "../sync/sync.h"
#include "http.h"

#define RETRY_DELAY_MS 250
#define RETRY_DELAY_MAX_MS 8000
#define RETRIES_DEFAULT 6

int cli_http_has_opt(int argc, char **argv, const char *opt)
{
	size_t l = strlen(opt);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strncmp(argv[i], opt, l) && (argv[i][l] == 0 || argv[i][l] == '='))
			return 1;
	}
	return 0;
}

int cli_http_has_url(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (net_is_url(argv[i]))
			return 1;
	return 0;
}

int http_conn_opt(int c, const char *arg, struct http_conn_opts *co)
{
	char *end;
	unsigned long v;
	switch (c) {
	case HTTP_OPT_TOKEN_FILE: co->token_file = arg; return 1;
	case HTTP_OPT_CACERT: co->cacert = arg; return 1;
	case HTTP_OPT_LIMIT_RATE:
		if (parse_size(arg, &co->limit_rate) < 0 || co->limit_rate == 0) {
			cli_usage("--limit-rate takes a rate in bytes per second (like 10M), not '%s'", arg);
			return -1;
		}
		return 1;
	case HTTP_OPT_TIMEOUT:
	case HTTP_OPT_RETRIES:
		v = strtoul(arg, &end, 10);
		if (!*arg || *end || v == 0 || v > 86400) {
			cli_usage("--%s takes a number from 1 to 86400, not '%s'",
				  c == HTTP_OPT_TIMEOUT ? "timeout" : "retries", arg);
			return -1;
		}
		if (c == HTTP_OPT_TIMEOUT)
			co->timeout = (unsigned)v;
		else
			co->retries = (unsigned)v;
		return 1;
	default:
		return 0;
	}
}

/* The token: --token-file's first line, else $FERRY_TOKEN, else none. */
int http_read_token(const struct http_conn_opts *co, char *out, size_t n)
{
	out[0] = 0;
	if (co->token_file) {
		char *text = NULL;
		size_t len = 0;
		int r = io_read_file(co->token_file, 4096, &text, &len);
		if (r < 0)
			return r;
		size_t l = strcspn(text, "\r\n");
		while (l && (text[l - 1] == ' ' || text[l - 1] == '\t'))
			l--;
		if (l >= n) {
			free(text);
			return ferry_err(FERR_LIMIT, "'%s' does not hold a token", co->token_file);
		}
		memcpy(out, text, l);
		out[l] = 0;
		explicit_bzero(text, len);
		free(text);
		return 0;
	}
	const char *e = getenv("FERRY_TOKEN");
	if (e && strlen(e) < n)
		snprintf(out, n, "%s", e);
	return 0;
}

/* Progress on a terminal (cli/progress.c's line) for the transfer a
 * command arms (meter_arm): the bytes of the request in flight, of the
 * estimated total when one is known (a percentage and an ETA), else
 * bytes and rate. The small JSON requests around it draw nothing. */
struct meter {
	struct cli_meter m; /* libcurl's thread's only */
	int quiet;          /* -q; cli_meter_start checks for a terminal */
	int armed, started;
	uint64_t v;         /* the last count seen */
	uint64_t total;     /* 0: unknown; set from any thread (atomic) */
	char what[2 * STORE_NAME_MAX + 2];
};

/* Whether a line would be drawn: the estimate is worth taking. */
static int meter_wanted(const struct meter *mt)
{
	return !mt->quiet && isatty(2);
}

static struct meter the_meter;

/* The next request is a transfer of what, of about total bytes (0:
 * unknown). */
static void meter_arm(struct meter *mt, const char *what, uint64_t total)
{
	snprintf(mt->what, sizeof mt->what, "%s", what);
	mt->total = total;
	mt->armed = 1;
	mt->started = 0;
	mt->v = 0;
}

/* The total learnt during the transfer (recv --from: the stream's HINT,
 * read on recv's thread while libcurl's draws); the next update takes it. */
static void meter_total(struct meter *mt, uint64_t total)
{
	__atomic_store_n(&mt->total, total, __ATOMIC_RELAXED);
}

static void meter_cb(void *arg, uint64_t up, uint64_t down)
{
	struct meter *mt = arg;
	uint64_t v = up > down ? up : down;
	uint64_t total = __atomic_load_n(&mt->total, __ATOMIC_RELAXED);
	if (!mt->armed || v == 0)
		return;
	if (!mt->started) {
		cli_meter_start(&mt->m, mt->what, total, mt->quiet);
		mt->started = 1;
	} else if (v < mt->v) {
		/* libcurl went on with another request: its own figures */
		cli_meter_retarget(&mt->m, mt->what, total);
	} else if (mt->m.p.total != total) {
		cli_meter_total(&mt->m, total);
	}
	mt->v = v;
	cli_meter_update(&mt->m, v, 0);
}

/* Ends the line; whole: the transfer completed, so what went through is
 * the total (an estimate is never exact) and the line ends at 100 %. */
static void meter_end(struct meter *mt, int whole)
{
	if (mt->started && whole && mt->m.p.total)
		cli_meter_total(&mt->m, mt->v);
	if (mt->started)
		cli_meter_end(&mt->m);
	mt->armed = mt->started = 0;
}

int http_connect(const struct http_conn_opts *co, const char *url, char *name, size_t nname,
		 struct net_client **out)
{
	char base[512], tok[NET_TOKEN_TEXT + 64];
	struct net_client_opts o;
	int r;
	if ((r = net_url_split(url, base, sizeof base, name, nname)) < 0)
		return cli_fail(r, "bad URL");
	if ((r = http_read_token(co, tok, sizeof tok)) < 0)
		return cli_fail(r, "cannot read the token");
	memset(&o, 0, sizeof o);
	o.base = base;
	o.token = tok[0] ? tok : NULL;
	o.cacert = co->cacert;
	o.limit_rate = co->limit_rate;
	o.timeout = co->timeout;
	o.progress = meter_cb;
	o.arg = &the_meter;
	r = net_client_new(&o, out);
	explicit_bzero(tok, sizeof tok);
	if (r < 0)
		return cli_fail(r, "cannot connect to '%s'", base);
	return 0;
}

int http_json(struct net_client *c, const char *method, const char *path, long *status,
	      json_t **json)
{
	struct fbuf ans;
	json_error_t je;
	int r;
	fbuf_init(&ans, NET_JSON_MAX);
	*json = NULL;
	r = net_client_request(c, method, path, NULL, NULL, NULL, NULL, &ans, status);
	if (r == 0 && ans.len)
		*json = json_loadb((const char *)ans.data, ans.len, 0, &je);
	fbuf_release(&ans);
	return r;
}

void http_answer_msg(long status, json_t *json, char *out, size_t n)
{
	const char *e = json ? json_string_value(json_object_get(json, "error")) : NULL;
	if (status == 401 && !e)
		e = "a token is needed (FERRY_TOKEN or --token-file)";
	snprintf(out, n, "the server answered %ld: %s%s", status, e ? e : "(no message)",
		 status == 401 ? " (FERRY_TOKEN or --token-file)" : "");
}

/* path = prefix + the encoded name + query */
static int build_path(struct fbuf *b, const char *prefix, const char *name, const char *query)
{
	int r;
	fbuf_reset(b);
	if ((r = fbuf_printf(b, "%s", prefix)) < 0 || (r = net_pct_encode(b, name)) < 0)
		return r;
	if (query && *query && (r = fbuf_printf(b, "?%s", query)) < 0)
		return r;
	return fbuf_putc(b, 0) < 0 ? -FERR_LIMIT : 0;
}

/* name=value for a query, value percent-encoded (also its '/' and '@'). */
static int query_add(struct fbuf *q, const char *key, const char *value)
{
	int r;
	if (q->len && (r = fbuf_putc(q, '&')) < 0)
		return r;
	if ((r = fbuf_printf(q, "%s=", key)) < 0)
		return r;
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.')
			r = fbuf_putc(q, *p);
		else
			r = fbuf_printf(q, "%%%02X", *p);
		if (r < 0)
			return r;
	}
	return fbuf_putc(q, 0) < 0 ? -FERR_LIMIT : (q->len--, 0);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- send --to ------------------------------------------------------------------ */

struct producer {
	struct store_pool *p;
	const char *snap;
	struct send_opts o;
	struct net_pipe *pipe;
	int r;
	struct ferry_errsave msg;
	struct send_stats st;
};

static int pipe_sink_write(struct stream_sink *k, const void *buf, size_t n);

struct pipe_sink {
	struct stream_sink base;
	struct net_pipe *pipe;
};

static int pipe_sink_write(struct stream_sink *k, const void *buf, size_t n)
{
	return net_pipe_write(((struct pipe_sink *)k)->pipe, buf, n);
}

static void *produce(void *arg)
{
	struct producer *pr = arg;
	struct pipe_sink sink;
	memset(&sink, 0, sizeof sink);
	sink.base.write = pipe_sink_write;
	sink.pipe = pr->pipe;
	pr->r = send_run(pr->p, pr->o.token ? NULL : pr->snap, &pr->o, &sink.base, &pr->st);
	if (pr->r < 0) {
		ferry_err_save(&pr->msg);
		net_pipe_close(pr->pipe, pr->r, ferry_errmsg(pr->r));
	} else {
		net_pipe_close(pr->pipe, 0, NULL);
	}
	return NULL;
}

/* The upload's body: what the producer wrote. A read fails only when the
 * producer did (we abort the pipe only after the request ended). */
struct body_rd {
	struct net_pipe *pipe;
	int failed;
};

static int pipe_rd(void *arg, void *buf, size_t n, size_t *got)
{
	struct body_rd *b = arg;
	int r = net_pipe_read(b->pipe, buf, n, got);
	if (r < 0)
		b->failed = 1;
	return r;
}

/* One snapshot to send: snap from base (NULL: full), or a token's. */
struct step {
	char snap[2 * STORE_NAME_MAX + 2];
	char from[2 * STORE_NAME_MAX + 2];
	uint64_t guid, from_guid;
};

enum put_result { PUT_DONE, PUT_REFUSED, PUT_LOCAL, PUT_CUT };

struct sender {
	struct net_client *cl;
	struct store_pool *p;
	const char *target;       /* the URL's name */
	char target_ds[STORE_NAME_MAX + 1];
	struct send_opts base_o;  /* the user's, with the codec chosen */
	int verbose;
	unsigned retries;
	char msg[1024];
	uint64_t sent_total;      /* stream bytes of every attempt */
};

/* One PUT of step (resuming with token when not NULL). */
static enum put_result put_once(struct sender *sd, const struct step *st, const char *token,
				json_t **report, long *status)
{
	struct producer pr;
	struct fbuf path, ans;
	struct net_pipe *pipe = NULL;
	pthread_t th;
	json_error_t je;
	enum put_result res;
	int r;
	memset(&pr, 0, sizeof pr);
	fbuf_init(&path, 8192);
	fbuf_init(&ans, NET_JSON_MAX);
	*report = NULL;
	*status = 0;
	if ((r = build_path(&path, "/v1/receive/", sd->target, NULL)) < 0 ||
	    (r = net_pipe_new(NET_PIPE_CAP, &pipe)) < 0) {
		snprintf(sd->msg, sizeof sd->msg, "%s", ferry_errmsg(r));
		res = PUT_LOCAL;
		goto out;
	}
	pr.p = sd->p;
	pr.snap = st->snap;
	pr.o = sd->base_o;
	pr.o.flags &= ~(unsigned)SEND_INTERMEDIATE;
	pr.o.from = st->from[0] ? st->from : NULL;
	pr.o.token = token;
	pr.pipe = pipe;
	net_pipe_ref(pipe);
	if (pthread_create(&th, NULL, produce, &pr) != 0) {
		net_pipe_unref(pipe);
		snprintf(sd->msg, sizeof sd->msg, "cannot start a thread");
		res = PUT_LOCAL;
		goto out;
	}
	struct body_rd brd = {pipe, 0};
	r = net_client_request(sd->cl, "PUT", (const char *)path.data, pipe_rd, &brd, NULL, NULL,
			       &ans, status);
	/* whatever happened, the producer stops writing now */
	net_pipe_abort(pipe, -FERR_IO, "the upload ended");
	pthread_join(th, NULL);
	net_pipe_unref(pipe);
	sd->sent_total += net_pipe_total(pipe);
	meter_end(&the_meter, r == 0 && *status == 200);
	if (brd.failed) {
		/* send_run failed by itself */
		ferry_err_restore(&pr.msg);
		snprintf(sd->msg, sizeof sd->msg, "%s", ferry_errmsg(pr.r));
		res = PUT_LOCAL;
		goto out;
	}
	if (r < 0 && r != -FERR_IO) {
		snprintf(sd->msg, sizeof sd->msg, "%s", ferry_errmsg(r));
		res = PUT_LOCAL;
		goto out;
	}
	json_t *j = *status >= 200 && ans.len ? json_loadb((const char *)ans.data, ans.len, 0, &je)
					      : NULL;
	if (!j) {
		snprintf(sd->msg, sizeof sd->msg, "%s", r < 0 ? ferry_errmsg(r) : "no answer");
		res = PUT_CUT;
		goto out;
	}
	if (*status == 200) {
		*report = j;
		res = PUT_DONE;
		goto out;
	}
	http_answer_msg(*status, j, sd->msg, sizeof sd->msg);
	json_decref(j);
	res = *status == 503 ? PUT_CUT : PUT_REFUSED;
out:
	net_pipe_unref(pipe);
	fbuf_release(&path);
	fbuf_release(&ans);
	return res;
}

/* What the server knows of the target now: its snapshots' guids and the
 * token of its partial receive. */
struct rinfo {
	json_t *j;
	int receiving;
	const char *token;
	const char *compression;
	const char *last_error;
	long last_status;
};

static int rinfo_get(struct sender *sd, struct rinfo *ri, long *status)
{
	struct fbuf path;
	int r;
	memset(ri, 0, sizeof *ri);
	fbuf_init(&path, 8192);
	if ((r = build_path(&path, "/v1/receive/", sd->target_ds, NULL)) == 0)
		r = http_json(sd->cl, "GET", (const char *)path.data, status, &ri->j);
	fbuf_release(&path);
	if (r < 0)
		return r;
	if (*status != 200 || !ri->j)
		return 0;
	ri->receiving = json_is_true(json_object_get(ri->j, "receiving"));
	ri->token = json_string_value(json_object_get(ri->j, "receive_resume_token"));
	ri->compression = json_string_value(json_object_get(ri->j, "compression"));
	json_t *le = json_object_get(ri->j, "last_error");
	if (json_is_object(le)) {
		ri->last_error = json_string_value(json_object_get(le, "error"));
		ri->last_status = (long)json_integer_value(json_object_get(le, "status"));
	}
	return 0;
}

static int rinfo_has(const struct rinfo *ri, uint64_t guid)
{
	json_t *a = json_object_get(ri->j, "snapshots"), *v;
	size_t i;
	char g[32];
	snprintf(g, sizeof g, "%" PRIu64, guid);
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(json_object_get(v, "guid"));
		if (s && !strcmp(s, g))
			return 1;
	}
	return 0;
}

/* The server's token, when it resumes step (same guids and names): its
 * position, else 0. */
static uint64_t token_for(const struct rinfo *ri, const struct step *st)
{
	struct stream_token t;
	char full[2 * STORE_NAME_MAX + 2];
	if (!ri->token || stream_token_decode(ri->token, &t) < 0)
		return 0;
	snprintf(full, sizeof full, "%s@%s", t.dataset, t.snapshot);
	if (t.to_guid != st->guid || t.from_guid != st->from_guid || strcmp(full, st->snap))
		return 0;
	return t.resume_pos;
}

static void report_print(struct sender *sd, json_t *rep)
{
	json_t *a = json_object_get(rep, "received"), *v;
	size_t i;
	json_array_foreach(a, i, v) {
		json_t *b = json_object_get(v, "blocks");
#define JS(o, k) (json_string_value(json_object_get((o), (k))) ? json_string_value(json_object_get((o), (k))) : "?")
		printf("received %s: %s stream bytes, %s written\n", JS(v, "snapshot"), JS(v, "bytes"),
		       JS(v, "written"));
		/* a server from before "tried" says "?" there */
		printf("  blocks: %s logical compressed, %s kept, %s recompressed, %s already present, "
		       "%s by reference, %s raw as tried by the sender; %s nodes\n", JS(b, "logical"),
		       JS(b, "kept"), JS(b, "recompressed"), JS(b, "present"), JS(b, "byref"),
		       JS(b, "tried"), JS(v, "nodes"));
#undef JS
	}
	fflush(stdout);
}

/* Sends one step to the end, resuming after cuts. */
static int send_step(struct sender *sd, const struct step *st, const char *user_token)
{
	struct rinfo ri;
	long status;
	unsigned fails = 0, delay = RETRY_DELAY_MS;
	char token[STREAM_TOKEN_MAX + 16] = "";
	uint64_t pos = 0;
	int r, cut = 0;
	if (user_token)
		snprintf(token, sizeof token, "%s", user_token);
	/* a partial receive of this very snapshot: resume it at once */
	if (!user_token && rinfo_get(sd, &ri, &status) == 0 && status == 200) {
		if (rinfo_has(&ri, st->guid)) {
			if (sd->verbose)
				fprintf(stderr, "%s is on the server already\n", st->snap);
			json_decref(ri.j);
			return 0;
		}
		if ((pos = token_for(&ri, st)))
			snprintf(token, sizeof token, "%s", ri.token);
		json_decref(ri.j);
	}
	/* the line's total (a terminal only: an incremental's costs a walk of
	 * what changed): a resumed upload's is not known */
	uint64_t est = 0;
	if (meter_wanted(&the_meter)) {
		struct send_opts eo = sd->base_o;
		eo.flags &= ~(unsigned)SEND_INTERMEDIATE;
		eo.from = st->from[0] ? st->from : NULL;
		eo.token = NULL;
		if (send_estimate(sd->p, st->snap, &eo, &est) < 0) {
			ferry_err_clear();
			est = 0;
		}
	}
	for (;;) {
		json_t *rep = NULL;
		if (sd->verbose && token[0])
			fprintf(stderr, "resuming %s after record %" PRIu64 "\n", st->snap, pos);
		else if (sd->verbose)
			fprintf(stderr, "sending %s%s%s\n", st->snap, st->from[0] ? " from " : "", st->from);
		meter_arm(&the_meter, st->snap, token[0] ? 0 : est);
		enum put_result pr = put_once(sd, st, token[0] ? token : NULL, &rep, &status);
		if (pr == PUT_DONE) {
			if (sd->verbose)
				report_print(sd, rep);
			json_decref(rep);
			return 0;
		}
		/* A 409 after a cut of this upload: the server had not yet
		 * taken up the cut connection's receive when it was asked where
		 * it stands, so that receive was still running (busy) or has
		 * since kept a partial state further on than the token sent.
		 * Asked again once it is over, like a cut; an attempt that
		 * gains nothing counts against the retries. */
		int moved = pr == PUT_REFUSED && status == 409 && cut;
		if (pr != PUT_CUT && !moved) {
			return cli_fail(ferry_err(FERR_IO, "%s", sd->msg), "cannot send '%s' to '%s'",
					st->snap, sd->target);
		}
		cut = 1;
		/* cut: ask where the server stands, once it has noticed */
		uint64_t t0 = ferry_now_ns(), was = pos;
		int known = 0;
		for (;;) {
			r = rinfo_get(sd, &ri, &status);
			if (r < 0 || status != 200)
				break;
			if (!ri.receiving || ferry_now_ns() - t0 > (uint64_t)600 * 1000000000u) {
				known = 1;
				break;
			}
			json_decref(ri.j);
			sleep_ms(100);
		}
		if (known) {
			if (rinfo_has(&ri, st->guid)) {
				json_decref(ri.j);
				if (sd->verbose)
					fprintf(stderr, "%s was received (the answer was lost)\n", st->snap);
				return 0;
			}
			/* (after a 409, its error is that 409, already heard) */
			if (ri.last_error && !ri.receiving && !moved) {
				snprintf(sd->msg, sizeof sd->msg, "the server answered %ld: %s", ri.last_status,
					 ri.last_error);
				json_decref(ri.j);
				return cli_fail(ferry_err(FERR_IO, "%s", sd->msg), "cannot send '%s' to '%s'",
						st->snap, sd->target);
			}
			if (user_token && !token_for(&ri, st)) {
				/* the user's token: keep it when the server did not move */
			} else if ((pos = token_for(&ri, st))) {
				snprintf(token, sizeof token, "%s", ri.token);
			} else {
				pos = 0;
				token[0] = 0;
			}
			json_decref(ri.j);
		} else if (r == 0) {
			json_decref(ri.j);
		}
		int progress = known && pos > was;
		if (progress) {
			fails = 0;
			delay = RETRY_DELAY_MS;
		} else {
			if (++fails > sd->retries)
				return cli_fail(ferry_err(FERR_IO, "%s", sd->msg), "cannot send '%s' to '%s' "
						"(gave up after %u attempts without progress)", st->snap,
						sd->target, fails);
			sleep_ms(delay);
			delay = delay * 2 > RETRY_DELAY_MAX_MS ? RETRY_DELAY_MAX_MS : delay * 2;
		}
		if (sd->verbose)
			fprintf(stderr, "%s (%s); %s\n",
				moved ? "the server's partial receive moved" : "connection lost", sd->msg,
				token[0] ? "resuming" : "starting again");
	}
}

struct snaplist {
	struct store_snap *v;
	size_t n, cap;
};

static int collect_snap(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct snaplist *l = arg;
	int r = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (r < 0)
		return r;
	l->v[l->n++] = *s;
	return 0;
}

/* The base of -i/-I as send_run takes it, resolved to its guid. */
static int base_guid(struct store_pool *p, const char *ds, const char *from, uint64_t *guid,
		     char *full, size_t n)
{
	struct store_snap sn;
	struct store_bookmark b;
	int r;
	if (strchr(from, '#')) {
		snprintf(full, n, "%s%s", from[0] == '#' ? ds : "", from);
		if ((r = store_bookmark_lookup(p, full, &b)) < 0)
			return r;
		*guid = b.guid;
		return 0;
	}
	const char *at = strchr(from, '@');
	if (at && at != from)
		snprintf(full, n, "%s", from);
	else
		snprintf(full, n, "%s@%s", ds, at ? at + 1 : from);
	if ((r = store_snap_lookup(p, full, &sn)) < 0)
		return r;
	*guid = sn.guid;
	return 0;
}

/* ---- send -R --to: a dataset tree, one stream per step, as ferry sync -r ---- */

struct tree_ui {
	int verbose;
	unsigned ndone, nfailed, nsnaps;
	int first_status;
	char first[SYNC_DEST_MAX + 1200]; /* the first failure, in words */
};

static void tree_note(void *arg, const char *source, const char *what)
{
	struct tree_ui *ui = arg;
	if (ui->verbose)
		fprintf(stderr, "%s: %s\n", source, what);
}

static void tree_done(void *arg, const struct sync_result *r)
{
	struct tree_ui *ui = arg;
	char b[16];
	ui->ndone++;
	ui->nsnaps += (unsigned)r->snapshots;
	if (r->status < 0) {
		if (!ui->nfailed++) {
			ui->first_status = r->status;
			snprintf(ui->first, sizeof ui->first, "%s -> %s: %s", r->source, r->dest,
				 r->error);
		}
		return;
	}
	if (!ui->verbose)
		return;
	format_nicenum(r->bytes, b, sizeof b, 1);
	if (r->nosnap)
		fprintf(stderr, "%s: left out (it has no such snapshot)\n", r->source);
	else if (r->uptodate)
		fprintf(stderr, "%s -> %s: on the server already (%s)\n", r->source, r->dest,
			r->newest[0] ? r->newest : r->base);
	else
		fprintf(stderr, "%s -> %s: sent %" PRIu64 " snapshot%s %s%s to %s%s, %s\n", r->source,
			r->dest, r->snapshots, r->snapshots == 1 ? "" : "s",
			r->full ? "in full" : "incremental from ",
			r->full ? "" : r->base[0] ? r->base : "its partial receive", r->newest,
			r->resumed ? ", resuming a partial receive" : "", b);
}

/* ferry send -R SNAP --to URL: the tree below SNAP's dataset, each dataset
 * with every snapshot up to SNAP that the server lacks, from the newest
 * one it has, its properties with it: what `send -R | recv` leaves, and
 * resumable, because it is ferry sync's walk (sync/, SYNC_SEND), one
 * stream per step, each checked by the server against the token like any
 * receive. A cut connection fails a step; the run is then made again (it
 * resumes the partial receive the server kept), a bounded number of
 * times in a row without a snapshot received, with a growing delay. */
static int send_tree(const char *snap, const char *url, const struct http_conn_opts *co,
		     const struct send_opts *so, const char *compress, int verbose)
{
	struct sync_opts o;
	struct tree_ui ui;
	char ds[STORE_NAME_MAX + 1], tok[NET_TOKEN_TEXT + 64] = "";
	unsigned fails = 0, delay = RETRY_DELAY_MS;
	int r, rc;
	memset(&o, 0, sizeof o);
	snprintf(ds, sizeof ds, "%.*s", (int)strcspn(snap, "@"), snap);
	o.flags = SYNC_RECURSIVE | SYNC_SEND;
	o.snapshot = strchr(snap, '@') + 1;
	o.wait = -1;
	if (so->flags & SEND_COMPRESSED) {
		o.compress = SYNC_COMPRESS_STORED;
	} else if (so->flags & SEND_RECOMPRESS) {
		o.compress = SYNC_COMPRESS_CODEC;
		o.codec = so->codec;
	} else {
		o.compress = compress ? SYNC_COMPRESS_AUTO : SYNC_COMPRESS_STORED;
	}
	if ((r = http_read_token(co, tok, sizeof tok)) < 0)
		return cli_fail(r, "cannot read the token");
	o.http_token = tok[0] ? tok : NULL;
	o.http_cacert = co->cacert;
	o.http_limit_rate = co->limit_rate;
	o.http_timeout = co->timeout;
	o.note = tree_note;
	o.done = tree_done;
	for (;;) {
		memset(&ui, 0, sizeof ui);
		ui.verbose = verbose;
		o.arg = &ui;
		r = sync_run(ds, url, &o);
		if (r == 0) {
			rc = EXIT_OK;
			break;
		}
		/* only a transport failure (a cut, a server restarting) is
		 * tried again; an answer of the server is final */
		int status = ui.nfailed ? ui.first_status : r;
		if (status != -FERR_IO || (ui.nsnaps == 0 && ++fails > co->retries)) {
			if (ui.nfailed)
				rc = cli_fail(ferry_err(-status, "%s", ui.first), "cannot send '%s' to '%s'%s",
					      snap, url, status == -FERR_IO ? " (gave up)" : "");
			else
				rc = cli_fail(r, "cannot send '%s' to '%s'", snap, url);
			break;
		}
		if (ui.nsnaps) {
			fails = 0;
			delay = RETRY_DELAY_MS;
		} else {
			sleep_ms(delay);
			delay = delay * 2 > RETRY_DELAY_MAX_MS ? RETRY_DELAY_MAX_MS : delay * 2;
		}
		if (verbose)
			fprintf(stderr, "connection lost (%s); resuming\n", ui.nfailed ? ui.first : ferry_errmsg(r));
		ferry_err_clear();
	}
	explicit_bzero(tok, sizeof tok);
	return rc;
}

int cli_http_send(int argc, char **argv)
{
	static const struct option lo[] = {
		{"compress", required_argument, NULL, 'Z'},
		{"compressed", no_argument, NULL, 'c'},
		{"props", no_argument, NULL, 'p'},
		{"verbose", no_argument, NULL, 'v'},
		{"to", required_argument, NULL, 'U'},
		HTTP_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry send [-c] [--compress=auto|CODEC] [-p] [-i SNAP|-i #BOOKMARK|-I SNAP] "
			    "[-v] [-q] SNAPSHOT --to URL | ferry send -R [-c] [--compress=auto|CODEC] [-v] [-q] SNAPSHOT --to URL | "
			    "ferry send [-v] [-q] -t TOKEN --to URL; and "
			    "[--token-file FILE] [--cacert FILE] [--limit-rate RATE] [--timeout S] [--retries N]";
	struct http_conn_opts co;
	struct sender sd;
	struct send_opts o;
	struct stream_token tok;
	const char *url = NULL, *compress = "auto";
	char name[STORE_NAME_MAX + 1], snap[2 * STORE_NAME_MAX + 2], ds[STORE_NAME_MAX + 1];
	struct step *steps = NULL;
	size_t nsteps = 0;
	int c, r, rc = EXIT_FAIL, replicate = 0;
	memset(&co, 0, sizeof co);
	memset(&sd, 0, sizeof sd);
	memset(&o, 0, sizeof o);
	co.retries = RETRIES_DEFAULT;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "send", "cpvqi:I:t:RnP", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		switch (c) {
		case 'c': o.flags |= SEND_COMPRESSED; compress = NULL; break;
		case 'p': o.flags |= SEND_PROPS; break;
		case 'v': sd.verbose = 1; break;
		case 'q': the_meter.quiet = 1; break;
		case 'i':
		case 'I':
			if (o.from)
				return cli_usage("send: give one of -i and -I, once");
			o.from = optarg;
			if (c == 'I')
				o.flags |= SEND_INTERMEDIATE;
			break;
		case 't': o.token = optarg; break;
		case 'Z': compress = optarg; break;
		case 'U': url = optarg; break;
		case 'R': replicate = 1; break;
		case 'n':
		case 'P':
			return cli_usage("send: -n and -P are not for a URL (estimate with a local "
					 "'ferry send -n -v')");
		default:
			return cli_opt_end();
		}
	}
	if (!url || (o.token ? argc != optind : argc - optind != 1))
		return cli_usage("%s", usage);
	if (o.token && (o.from || replicate || (o.flags & (SEND_PROPS | SEND_COMPRESSED))))
		return cli_usage("send: -t takes its options from the token");
	if (compress && strcmp(compress, "auto")) {
		if ((r = codec_parse(compress, &o.codec)) < 0)
			return cli_usage("send: --compress: %s", ferry_errmsg(r));
		o.flags |= SEND_RECOMPRESS;
	}
	if ((o.flags & SEND_COMPRESSED) && compress)
		return cli_usage("send: -c and --compress exclude each other");
	if (replicate) {
		if (o.from)
			return cli_usage("send: -R --to finds the newest snapshot each dataset shares with "
					 "the server itself (as ferry sync -r): give no -i or -I");
		snprintf(snap, sizeof snap, "%s", argv[optind]);
		if (!strchr(snap, '@'))
			return cli_usage("send: '%s' is not a snapshot (DATASET@NAME)", snap);
		if ((r = store_name_check(snap, STORE_NAME_SNAPSHOT)) < 0)
			return cli_fail(r, "cannot send '%s'", snap);
		if (!net_is_url(url) || strchr(url + strcspn(url, "@"), '@'))
			return cli_usage("send: -R --to takes a dataset's URL (https://HOST:PORT/POOL/DS), "
					 "not '%s'", url);
		signal(SIGPIPE, SIG_IGN);
		return send_tree(snap, url, &co, &o, compress, sd.verbose);
	}
	if (o.token) {
		if ((r = stream_token_decode(o.token, &tok)) < 0)
			return cli_fail(r, "cannot send: invalid resume token");
		snprintf(snap, sizeof snap, "%s@%s", tok.dataset, tok.snapshot);
	} else {
		snprintf(snap, sizeof snap, "%s", argv[optind]);
		if (!strchr(snap, '@'))
			return cli_usage("send: '%s' is not a snapshot (DATASET@NAME)", snap);
		if ((r = store_name_check(snap, STORE_NAME_SNAPSHOT)) < 0)
			return cli_fail(r, "cannot send '%s'", snap);
	}
	snprintf(ds, sizeof ds, "%.*s", (int)strcspn(snap, "@"), snap);
	signal(SIGPIPE, SIG_IGN);
	if ((r = http_connect(&co, url, name, sizeof name, &sd.cl)) != 0)
		return r;
	if (!name[0] || (r = store_name_check(name, strchr(name, '@') ? STORE_NAME_SNAPSHOT
								      : STORE_NAME_DATASET)) < 0) {
		rc = cli_fail(name[0] ? r : ferry_err(FERR_NAME, "the URL names no dataset"),
			      "cannot send to '%s'", url);
		goto out;
	}
	sd.target = name;
	snprintf(sd.target_ds, sizeof sd.target_ds, "%.*s", (int)strcspn(name, "@"), name);
	sd.retries = co.retries;
	if ((r = store_pool_open_for(snap, STORE_OPEN_RDONLY, &sd.p)) < 0) {
		rc = cli_fail(r, "cannot send '%s'", snap);
		goto out;
	}
	/* what the target is stored with, for --compress=auto; and whether it
	 * can be reached at all */
	{
		struct rinfo ri;
		long status = 0;
		if ((r = rinfo_get(&sd, &ri, &status)) < 0) {
			rc = cli_fail(r, "cannot send '%s' to '%s'", snap, url);
			goto out;
		}
		if (status != 200) {
			char m[1024];
			http_answer_msg(status, ri.j, m, sizeof m);
			json_decref(ri.j);
			rc = cli_fail(ferry_err(FERR_IO, "%s", m), "cannot send '%s' to '%s'", snap, url);
			goto out;
		}
		if (compress && !strcmp(compress, "auto")) {
			if (!ri.compression || codec_parse(ri.compression, &o.codec) < 0) {
				json_decref(ri.j);
				rc = cli_fail(ferry_err(FERR_CORRUPT, "the server names no compression"),
					      "cannot send '%s' to '%s'", snap, url);
				goto out;
			}
			o.flags |= SEND_RECOMPRESS;
			if (sd.verbose)
				fprintf(stderr, "'%s' stores blocks as %s: encoding them so\n", name,
					codec_name(o.codec));
		}
		json_decref(ri.j);
	}
	sd.base_o = o;
	/* the steps: one stream per snapshot */
	if (o.token) {
		if (!(steps = calloc(1, sizeof *steps)))
			goto nomem;
		snprintf(steps[0].snap, sizeof steps[0].snap, "%s", snap);
		steps[0].guid = tok.to_guid;
		steps[0].from_guid = tok.from_guid;
		nsteps = 1;
	} else {
		struct store_snap to;
		struct store_ds d;
		struct snaplist l = {NULL, 0, 0};
		uint64_t fg = 0;
		char from_full[2 * STORE_NAME_MAX + 2] = "";
		if ((r = store_snap_lookup(sd.p, snap, &to)) < 0 ||
		    (o.from && (r = base_guid(sd.p, ds, o.from, &fg, from_full, sizeof from_full)) < 0)) {
			rc = cli_fail(r, "cannot send '%s'", snap);
			goto out;
		}
		if (o.flags & SEND_INTERMEDIATE) {
			struct store_snap base;
			if (strchr(from_full, '#')) {
				rc = cli_usage("send: -I needs a snapshot as base, not a bookmark");
				goto out;
			}
			if ((r = store_snap_lookup(sd.p, from_full, &base)) < 0 ||
			    (r = store_ds_lookup(sd.p, ds, &d)) < 0 ||
			    (r = store_snap_iter(sd.p, &d, collect_snap, &l)) < 0) {
				free(l.v);
				rc = cli_fail(r, "cannot send '%s'", snap);
				goto out;
			}
			if (!(steps = calloc(l.n ? l.n : 1, sizeof *steps))) {
				free(l.v);
				goto nomem;
			}
			const char *prev = from_full;
			uint64_t pg = fg;
			for (size_t i = 0; i < l.n; i++) {
				if (l.v[i].createtxg <= base.createtxg || l.v[i].createtxg > to.createtxg)
					continue;
				struct step *s = &steps[nsteps++];
				snprintf(s->snap, sizeof s->snap, "%s", l.v[i].name);
				snprintf(s->from, sizeof s->from, "%s", prev);
				s->guid = l.v[i].guid;
				s->from_guid = pg;
				prev = s->snap;
				pg = s->guid;
			}
			free(l.v);
		} else {
			if (!(steps = calloc(1, sizeof *steps)))
				goto nomem;
			snprintf(steps[0].snap, sizeof steps[0].snap, "%s", snap);
			snprintf(steps[0].from, sizeof steps[0].from, "%s", from_full);
			steps[0].guid = to.guid;
			steps[0].from_guid = fg;
			nsteps = 1;
		}
	}
	for (size_t i = 0; i < nsteps; i++)
		if ((rc = send_step(&sd, &steps[i], o.token)) != EXIT_OK)
			goto out;
	if (sd.verbose)
		fprintf(stderr, "sent %zu snapshot%s to %s (%" PRIu64 " stream bytes in all)\n", nsteps,
			nsteps == 1 ? "" : "s", url, sd.sent_total);
	rc = EXIT_OK;
	goto out;
nomem:
	rc = cli_fail(-FERR_NOMEM, "send");
out:
	free(steps);
	store_pool_close(sd.p);
	net_client_free(sd.cl);
	return rc;
}

/* ---- recv --from ------------------------------------------------------------------ */

struct fetcher {
	struct net_client *cl;
	const char *path;
	struct net_pipe *pipe;
	struct fbuf ans;
	long status;
	int r;
	struct ferry_errsave msg;
};

static int pipe_wr(void *arg, const void *p, size_t n)
{
	return net_pipe_write(arg, p, n);
}

static void *fetch(void *arg)
{
	struct fetcher *f = arg;
	f->r = net_client_request(f->cl, "GET", f->path, NULL, NULL, pipe_wr, f->pipe, &f->ans,
				  &f->status);
	if (f->r < 0) {
		ferry_err_save(&f->msg);
		net_pipe_close(f->pipe, f->r, ferry_errmsg(f->r));
	} else if (f->status != 200) {
		net_pipe_close(f->pipe, -FERR_IO, "the server refused the request");
	} else if (net_pipe_total(f->pipe) == 0) {
		/* libcurl takes a connection closed inside the answer's head
		 * for an empty body; a stream is never empty */
		f->r = ferry_err(FERR_IO, "the connection closed before the stream began");
		ferry_err_save(&f->msg);
		net_pipe_close(f->pipe, f->r, ferry_errmsg(f->r));
	} else {
		net_pipe_close(f->pipe, 0, NULL);
	}
	return NULL;
}

struct pipe_source {
	struct stream_source base;
	struct net_pipe *pipe;
	int failed;
};

static int pipe_src_read(struct stream_source *s, void *buf, size_t n, size_t *got)
{
	struct pipe_source *ps = (struct pipe_source *)s;
	int r = net_pipe_read(ps->pipe, buf, n, got);
	if (r < 0)
		ps->failed = 1;
	return r;
}

struct recv_ui {
	int verbose;
};

/* The stream's HINT: the line's total (the server's estimate). */
static void recv_estimate_cb(void *arg, uint64_t bytes)
{
	(void)arg;
	meter_total(&the_meter, bytes);
}

static void recv_done_cb(void *arg, const char *snapshot, const struct recv_stats *st)
{
	struct recv_ui *ui = arg;
	if (!ui->verbose)
		return;
	printf("received %s: %" PRIu64 " stream bytes, %" PRIu64 " written\n", snapshot, st->bytes,
	       st->pbytes_written);
	printf("  blocks: %" PRIu64 " logical compressed, %" PRIu64 " kept, %" PRIu64
	       " recompressed, %" PRIu64 " already present, %" PRIu64 " by reference; %" PRIu64
	       " nodes\n", st->blocks_logical, st->blocks_kept, st->blocks_recompressed,
	       st->blocks_present, st->blocks_byref, st->nodes);
	fflush(stdout);
}

int cli_http_recv(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keep-source-compression", no_argument, NULL, 'K'},
		{"verbose", no_argument, NULL, 'v'},
		{"from", required_argument, NULL, 'U'},
		HTTP_LONG_OPTS,
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry recv [-F] [-u] [-d|-e] [-n] [-v] [-q] [-o PROP=VAL]... [-x PROP]... "
			    "[--keep-source-compression] --from URL/DATASET@SNAP [-i BASE] TARGET; and "
			    "[--token-file FILE] [--cacert FILE] [--limit-rate RATE] [--timeout S] [--retries N]";
	struct http_conn_opts co;
	struct recv_opts o;
	struct recv_ui ui;
	struct store_propset *set = NULL;
	const char **excl = NULL;
	struct net_client *cl = NULL;
	struct store_pool *p = NULL;
	const char *url = NULL, *base = NULL;
	char name[STORE_NAME_MAX + 1], rds[STORE_NAME_MAX + 1], tok[STREAM_TOKEN_MAX + 16] = "";
	struct fbuf path, q;
	int c, r, rc = EXIT_FAIL;
	memset(&co, 0, sizeof co);
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	co.retries = RETRIES_DEFAULT;
	fbuf_init(&path, 16384);
	fbuf_init(&q, 8192);
	set = calloc((size_t)argc + 1, sizeof *set);
	excl = calloc((size_t)argc + 1, sizeof *excl);
	if (!set || !excl) {
		rc = cli_fail(-FERR_NOMEM, "recv");
		goto out;
	}
	optind = 1;
	while ((c = cli_getopt(argc, argv, "recv", "FsudenvqAo:x:i:", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		if (k)
			continue;
		switch (c) {
		case 'F': o.flags |= RECV_FORCE; break;
		case 's': break; /* always resumable from a URL */
		case 'u': break;
		case 'd': o.flags |= RECV_DISCARD; break;
		case 'e': o.flags |= RECV_LASTNAME; break;
		case 'n': o.flags |= RECV_DRYRUN; break;
		case 'v': ui.verbose = 1; break;
		case 'q': the_meter.quiet = 1; break;
		case 'K': o.flags |= RECV_KEEP_SOURCE_COMPRESSION; break;
		case 'U': url = optarg; break;
		case 'i': base = optarg; break;
		case 'A':
			rc = cli_usage("recv: -A takes no --from: abort with 'ferry recv -A TARGET'");
			goto out;
		case 'o': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg) {
				rc = cli_usage("recv: -o takes PROP=VALUE, not '%s'", optarg);
				goto out;
			}
			*eq = 0;
			if (!store_prop_known(optarg)) {
				rc = cli_usage("recv: -o: unknown property '%s'", optarg);
				goto out;
			}
			set[o.nset].name = optarg;
			set[o.nset++].value = eq + 1;
			break;
		}
		case 'x':
			if (!store_prop_known(optarg)) {
				rc = cli_usage("recv: -x: unknown property '%s'", optarg);
				goto out;
			}
			excl[o.nexclude++] = optarg;
			break;
		default:
			rc = cli_opt_end();
			goto out;
		}
	}
	if (!url || argc - optind != 1) {
		rc = cli_usage("%s", usage);
		goto out;
	}
	if ((o.flags & RECV_DISCARD) && (o.flags & RECV_LASTNAME)) {
		rc = cli_usage("recv: -d and -e cannot be combined");
		goto out;
	}
	const char *target = argv[optind];
	if ((r = store_name_check(target, strchr(target, '@') ? STORE_NAME_SNAPSHOT
							     : STORE_NAME_DATASET)) < 0) {
		rc = cli_fail(r, "cannot receive into '%s'", target);
		goto out;
	}
	if ((o.flags & (RECV_DISCARD | RECV_LASTNAME)) && strchr(target, '@')) {
		rc = cli_usage("recv: with -d or -e the target is a dataset");
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	if ((r = http_connect(&co, url, name, sizeof name, &cl)) != 0) {
		rc = r;
		goto out;
	}
	if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0) {
		rc = cli_fail(r, "cannot receive from '%s' (the URL names DATASET@SNAPSHOT)", url);
		goto out;
	}
	/* the dataset the partial receive lives in, as recv names it */
	{
		size_t dl = strcspn(name, "@"), tl = strcspn(target, "@");
		const char *rest = memchr(name, '/', dl);
		const char *last = name;
		for (const char *s = name; s < name + dl; s++)
			if (*s == '/')
				last = s + 1;
		if (o.flags & RECV_DISCARD)
			snprintf(rds, sizeof rds, "%.*s%s%.*s", (int)tl, target, rest ? "" : "",
				 rest ? (int)(name + dl - rest) : 0, rest ? rest : "");
		else if (o.flags & RECV_LASTNAME)
			snprintf(rds, sizeof rds, "%.*s/%.*s", (int)tl, target, (int)(name + dl - last), last);
		else
			snprintf(rds, sizeof rds, "%.*s", (int)tl, target);
	}
	if ((r = store_pool_open_for(target, 0, &p)) < 0) {
		rc = cli_fail(r, "cannot receive into '%s'", target);
		goto out;
	}
	{
		char what[STORE_NAME_MAX + 64];
		snprintf(what, sizeof what, "a receive into %s from a URL", target);
		store_pool_activity(p, what);
	}
	o.set = set;
	o.exclude = excl;
	o.flags |= RECV_RESUMABLE;
	o.done = recv_done_cb;
	o.estimate = recv_estimate_cb;
	o.arg = &ui;
	/* an earlier interrupted receive of this snapshot: take it up */
	if (!(o.flags & RECV_DRYRUN) && recv_resume_token(p, rds, tok, sizeof tok) == 0) {
		struct stream_token t;
		char full[2 * STORE_NAME_MAX + 2];
		if (stream_token_decode(tok, &t) < 0 ||
		    (snprintf(full, sizeof full, "%s@%s", t.dataset, t.snapshot), strcmp(full, name)))
			tok[0] = 0;
	} else {
		ferry_err_clear();
		tok[0] = 0;
	}
	unsigned fails = 0, delay = RETRY_DELAY_MS;
	uint64_t pos = 0;
	for (;;) {
		struct fetcher f;
		struct pipe_source src;
		struct recv_stats st;
		pthread_t th;
		fbuf_reset(&q);
		if (tok[0]) {
			struct stream_token t;
			if (stream_token_decode(tok, &t) == 0)
				pos = t.resume_pos;
			r = query_add(&q, "token", tok);
			if (ui.verbose)
				fprintf(stderr, "resuming %s after record %" PRIu64 "\n", name, pos);
		} else {
			r = query_add(&q, "compressed", "1");
			if (r == 0 && base)
				r = query_add(&q, "from", base);
		}
		if (r < 0 || fbuf_putc(&q, 0) < 0 ||
		    (r = build_path(&path, "/v1/send/", name, (const char *)q.data)) < 0) {
			rc = cli_fail(r < 0 ? r : -FERR_LIMIT, "recv");
			goto out;
		}
		memset(&f, 0, sizeof f);
		memset(&src, 0, sizeof src);
		f.cl = cl;
		f.path = (const char *)path.data;
		fbuf_init(&f.ans, 1 << 20);
		if ((r = net_pipe_new(NET_PIPE_CAP, &f.pipe)) < 0) {
			fbuf_release(&f.ans);
			rc = cli_fail(r, "recv");
			goto out;
		}
		src.base.read = pipe_src_read;
		src.pipe = f.pipe;
		if (pthread_create(&th, NULL, fetch, &f) != 0) {
			net_pipe_unref(f.pipe);
			fbuf_release(&f.ans);
			rc = cli_fail(-FERR_NOMEM, "recv: cannot start a thread");
			goto out;
		}
		memset(&st, 0, sizeof st);
		meter_arm(&the_meter, name, 0);
		r = recv_run(p, target, &src.base, &o, &st);
		struct ferry_errsave rmsg;
		ferry_err_save(&rmsg);
		net_pipe_abort(f.pipe, -FERR_IO, "the receive ended");
		pthread_join(th, NULL);
		net_pipe_unref(f.pipe);
		meter_end(&the_meter, r == 0);
		if (f.status && f.status != 200) {
			char m[1024];
			json_error_t je;
			json_t *j = f.ans.len ? json_loadb((const char *)f.ans.data, f.ans.len, 0, &je) : NULL;
			http_answer_msg(f.status, j, m, sizeof m);
			json_decref(j);
			fbuf_release(&f.ans);
			if (f.status != 503) {
				rc = cli_fail(ferry_err(FERR_IO, "%s", m), "cannot receive '%s'", url);
				goto out;
			}
			ferry_err(FERR_IO, "%s", m);
			ferry_err_save(&rmsg);
		} else {
			fbuf_release(&f.ans);
			if (r == 0) {
				rc = EXIT_OK;
				goto out;
			}
			if (!(src.failed && f.r < 0)) {
				ferry_err_restore(&rmsg);
				rc = cli_fail(r, "cannot receive into '%s'", target);
				goto out;
			}
			/* the connection was cut: our own partial receive says where */
			ferry_err_restore(&rmsg);
		}
		char why[512];
		snprintf(why, sizeof why, "%s", ferry_errmsg(r < 0 ? r : -FERR_IO));
		uint64_t was = pos;
		if (!(o.flags & RECV_DRYRUN) && recv_resume_token(p, rds, tok, sizeof tok) == 0) {
			struct stream_token t;
			pos = stream_token_decode(tok, &t) == 0 ? t.resume_pos : 0;
		} else {
			ferry_err_clear();
			tok[0] = 0;
			pos = 0;
		}
		if (pos > was) {
			fails = 0;
			delay = RETRY_DELAY_MS;
		} else {
			if (++fails > co.retries) {
				rc = cli_fail(ferry_err(FERR_IO, "%s", why), "cannot receive '%s' (gave up "
					      "after %u attempts without progress%s)", url, fails,
					      tok[0] ? "; the partial receive is kept: run the same "
						       "command again to resume" : "");
				goto out;
			}
			sleep_ms(delay);
			delay = delay * 2 > RETRY_DELAY_MAX_MS ? RETRY_DELAY_MAX_MS : delay * 2;
		}
		if (ui.verbose)
			fprintf(stderr, "connection lost (%s); %s\n", why, tok[0] ? "resuming" : "starting again");
	}
out:
	store_pool_close(p);
	net_client_free(cl);
	fbuf_release(&path);
	fbuf_release(&q);
	free(set);
	free(excl);
	return rc;
}
