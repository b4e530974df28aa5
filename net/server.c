/* net/server.c — ferry serve's HTTP side: libmicrohttpd with internal
 * polling threads, whose callbacks never block. A request is checked (head
 * limits, token, endpoint, name, parameters, scope, permission) on MHD's
 * thread; an authorised one gets a net_call and a thread of its own that
 * runs the application's serve(), while its connection is suspended. An
 * upload's body goes through a bounded net_pipe: when it is full, the
 * connection is suspended until the reader has taken some (back-pressure
 * reaches the client through TCP); a download's body comes through another
 * pipe, its content reader suspending the connection while it is empty.
 *
 * A call lives until both its connection (MHD's completion callback) and
 * its thread are done with it: two references, and one more for a
 * download's response object. Lock order: a call's mutex, then a pipe's,
 * then libmicrohttpd's own; the server's mutex is never held with a
 * call's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lazy.h"

#define LISTEN_MAX 16
#define CONN_MEMORY ((size_t)64 << 10)
#define STREAM_BLOCK ((size_t)64 << 10)

enum call_state { CS_HEAD, CS_BODY, CS_BODY_DONE, CS_ANSWERED };

struct net_server {
	struct net_server_opts o;
	char *tokens_path;
	pthread_mutex_t tok_mu;
	struct net_tokens tokens;
	char *cert, *key;
	struct MHD_Daemon *d[LISTEN_MAX];
	MHD_socket quiesced[LISTEN_MAX];
	unsigned port[LISTEN_MAX];
	size_t nd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stopping;
	int starting;           /* libmicrohttpd's messages go to startmsg */
	char startmsg[512];
	unsigned jobs, transfers;
	struct net_call *calls;
};

struct net_call {
	struct net_server *s;
	struct MHD_Connection *conn; /* NULL once its connection completed */
	struct net_req req;
	struct net_token tok;
	char peer[64];
	char method[8];
	pthread_mutex_t mu;
	int refs;
	int state;          /* enum call_state, the connection's side */
	int suspended;      /* suspended by us until the thread decides (HEAD, BODY_DONE) */
	int want_body, begun, finished, conn_failed, transfer;
	unsigned status;
	char *json;         /* the answer's body (JSON unless ctype says otherwise) */
	size_t jlen;
	const char *ctype;  /* NULL: application/json */
	char errmsg[NET_STATUS_TEXT_MAX]; /* of net_call_fail, for the log */
	struct net_pipe *body; /* upload: the connection writes, the thread reads */
	struct net_pipe *out;  /* download: the thread writes, the connection reads */
	uint64_t discarded;
	uint64_t t0;
	struct net_call *next, *prev;
};

static void slog(struct net_server *s, const char *fmt, ...) FERRY_PRINTF(2, 3);
static void slog(struct net_server *s, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	if (!s->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	char one[1024];
	net_one_line(line, one, sizeof one);
	s->o.log(s->o.arg, one);
}

/* ---- calls ---------------------------------------------------------------- */

static void call_unref(struct net_call *c)
{
	struct net_server *s = c->s;
	pthread_mutex_lock(&c->mu);
	int last = --c->refs == 0;
	pthread_mutex_unlock(&c->mu);
	if (!last)
		return;
	pthread_mutex_lock(&s->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	net_pipe_unref(c->body);
	net_pipe_unref(c->out);
	free(c->json);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static void conn_suspend(void *arg)
{
	struct net_call *c = arg;
	net_mhd.suspend_connection(c->conn);
}

static void conn_resume(void *arg)
{
	struct net_call *c = arg;
	if (c->conn)
		net_mhd.resume_connection(c->conn);
}

/* Under c->mu: ends a suspension of ours (HEAD, BODY_DONE). */
static void resume_locked(struct net_call *c)
{
	if (c->suspended && c->conn) {
		c->suspended = 0;
		net_mhd.resume_connection(c->conn);
	}
}

const struct net_req *net_call_req(const struct net_call *c)
{
	return &c->req;
}

const struct net_token *net_call_token(const struct net_call *c)
{
	return &c->tok;
}

const char *net_call_peer(const struct net_call *c)
{
	return c->peer;
}

int net_call_stopping(const struct net_call *c)
{
	struct net_server *s = c->s;
	pthread_mutex_lock(&s->mu);
	int st = s->stopping;
	pthread_mutex_unlock(&s->mu);
	return st;
}

int net_call_read(struct net_call *c, void *buf, size_t n, size_t *got)
{
	int r;
	if (!c->body)
		return ferry_err(FERR_INVAL, "this request has no body");
	pthread_mutex_lock(&c->mu);
	if (!c->want_body) {
		c->want_body = 1;
		resume_locked(c);
	}
	pthread_mutex_unlock(&c->mu);
	if ((r = net_pipe_read(c->body, buf, n, got)) < 0) {
		pthread_mutex_lock(&c->mu);
		c->conn_failed = 1;
		pthread_mutex_unlock(&c->mu);
	}
	return r;
}

int net_call_conn_failed(const struct net_call *c)
{
	struct net_call *m = (struct net_call *)c;
	pthread_mutex_lock(&m->mu);
	int f = m->conn_failed;
	pthread_mutex_unlock(&m->mu);
	return f;
}

int net_call_begin(struct net_call *c, const char *content_type)
{
	(void)content_type;
	if (!c->out)
		return ferry_err(FERR_INVAL, "this request has no streamed answer");
	pthread_mutex_lock(&c->mu);
	c->begun = 1;
	resume_locked(c);
	pthread_mutex_unlock(&c->mu);
	return 0;
}

int net_call_write(struct net_call *c, const void *p, size_t n)
{
	if (!c->out || !c->begun)
		return ferry_err(FERR_INVAL, "write before net_call_begin");
	return net_pipe_write(c->out, p, n);
}

void net_call_finish(struct net_call *c, unsigned status, const char *json, size_t len)
{
	net_call_finish_as(c, status, NULL, json, len);
}

void net_call_finish_as(struct net_call *c, unsigned status, const char *ctype, const void *json,
			size_t len)
{
	char *copy = NULL;
	if (json && len && (copy = malloc(len)))
		memcpy(copy, json, len);
	pthread_mutex_lock(&c->mu);
	if (c->finished) {
		pthread_mutex_unlock(&c->mu);
		free(copy);
		return;
	}
	c->finished = 1;
	c->status = status;
	c->ctype = ctype;
	c->json = copy;
	c->jlen = copy ? len : 0;
	if (c->begun)
		net_pipe_close(c->out, status == 200 ? 0 : -FERR_IO,
			       "the stream ended with an error on the server");
	if (c->body)
		net_pipe_abort(c->body, -FERR_IO, "the request was answered");
	resume_locked(c);
	int transfer = c->transfer;
	c->transfer = 0;
	pthread_mutex_unlock(&c->mu);
	if (transfer) {
		pthread_mutex_lock(&c->s->mu);
		c->s->transfers--;
		pthread_mutex_unlock(&c->s->mu);
	}
}

void net_call_fail(struct net_call *c, unsigned status, const char *fmt, ...)
{
	char msg[NET_STATUS_TEXT_MAX];
	struct fbuf b;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->mu);
	if (!c->finished)
		net_one_line(msg, c->errmsg, sizeof c->errmsg);
	pthread_mutex_unlock(&c->mu);
	fbuf_init(&b, 4 * NET_STATUS_TEXT_MAX);
	if (net_json_error(&b, status, msg) < 0)
		fbuf_reset(&b);
	net_call_finish(c, status, (const char *)b.data, b.len);
	fbuf_release(&b);
}

static void *job_main(void *arg)
{
	struct net_call *c = arg;
	struct net_server *s = c->s;
	ferry_err_clear();
	s->o.serve(s->o.arg, c);
	if (!c->finished)
		net_call_fail(c, 500, "the server did not answer the request");
	call_unref(c);
	/* the last touch of s: net_server_stop frees it once jobs is 0 */
	pthread_mutex_lock(&s->mu);
	s->jobs--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- responses --------------------------------------------------------------- */

static const char *ep_path(int ep)
{
	switch (ep) {
	case NET_EP_POOLS: return "/v1/pools";
	case NET_EP_DATASETS: return "/v1/datasets/";
	case NET_EP_RECV_INFO:
	case NET_EP_RECV:
	case NET_EP_ABORT: return "/v1/receive/";
	case NET_EP_SEND: return "/v1/send/";
	case NET_EP_BLOCK: return "/v1/blocks/";
	case NET_EP_NODE: return "/v1/nodes/";
	default: return "/v1/snapshots/";
	}
}

static enum MHD_Result queue_body(struct MHD_Connection *conn, unsigned status, const char *ctype,
				  const char *json, size_t len, const char *allow)
{
	struct MHD_Response *rs =
		net_mhd.create_response_from_buffer(len, (void *)json, MHD_RESPMEM_MUST_COPY);
	if (!rs)
		return MHD_NO;
	net_mhd.add_response_header(rs, "Content-Type", ctype ? ctype : "application/json");
	net_mhd.add_response_header(rs, "Cache-Control", "no-store");
	if (status == 401)
		net_mhd.add_response_header(rs, "WWW-Authenticate", "Bearer realm=\"ferry\"");
	if (allow)
		net_mhd.add_response_header(rs, "Allow", allow);
	enum MHD_Result q = net_mhd.queue_response(conn, status, rs);
	net_mhd.destroy_response(rs);
	return q;
}

/* Refuses a request before it has a call: status, one-line message. */
static enum MHD_Result refuse(struct net_server *s, struct MHD_Connection *conn, const char *peer,
			      const char *method, const char *url, unsigned status, const char *msg,
			      const char *allow)
{
	struct fbuf b;
	fbuf_init(&b, 4 * NET_STATUS_TEXT_MAX);
	if (net_json_error(&b, status, msg) < 0)
		fbuf_reset(&b);
	slog(s, "%s %.8s %.200s %u %s", peer, method, url, status, msg);
	enum MHD_Result q = queue_body(conn, status, NULL, (const char *)b.data, b.len, allow);
	fbuf_release(&b);
	return q;
}

static ssize_t content_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct net_call *c = cls;
	(void)pos;
	for (;;) {
		long n = net_pipe_get(c->out, buf, max);
		if (n > 0)
			return (ssize_t)n;
		if (n == NET_PIPE_END)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (n < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (net_pipe_park(c->out, 0, conn_suspend, conn_resume, c))
			return 0;
	}
}

static void content_done(void *cls)
{
	call_unref(cls);
}

/* The thread decided (c->mu held): queue its answer or its stream, or let
 * the body come. */
static enum MHD_Result answer_locked(struct net_call *c, struct MHD_Connection *conn)
{
	if (c->finished && !c->begun) {
		c->state = CS_ANSWERED;
		return queue_body(conn, c->status, c->ctype, c->json ? c->json : "", c->jlen, NULL);
	}
	if (c->begun) {
		struct MHD_Response *rs = net_mhd.create_response_from_callback(
			MHD_SIZE_UNKNOWN, STREAM_BLOCK, content_reader, c, content_done);
		if (!rs)
			return MHD_NO;
		c->refs++; /* the response's */
		net_mhd.add_response_header(rs, "Content-Type", "application/x-ferry-stream");
		net_mhd.add_response_header(rs, "Cache-Control", "no-store");
		c->state = CS_ANSWERED;
		enum MHD_Result q = net_mhd.queue_response(conn, 200, rs);
		net_mhd.destroy_response(rs);
		return q;
	}
	return MHD_YES;
}

/* ---- the access handler ---------------------------------------------------------- */

struct head_scan {
	int too_long;
	size_t longest;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct head_scan *h = cls;
	size_t l = strlen(key) + (value ? strlen(value) : 0) + 2;
	if (l > h->longest)
		h->longest = l;
	if (l > NET_LINE_MAX)
		h->too_long = 1;
	return MHD_YES;
}

struct arg_list {
	struct net_arg v[NET_ARGS_MAX + 1];
	size_t n;
	int more;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct arg_list *a = cls;
	if (a->n >= NET_ARGS_MAX + 1) {
		a->more = 1;
		return MHD_NO;
	}
	a->v[a->n].key = key;
	a->v[a->n].value = value;
	a->n++;
	return MHD_YES;
}

static size_t unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
	/* request.c decodes paths and parameters itself, once, and checks what
	 * they decode to */
	return strlen(s);
}

static void peer_text(struct MHD_Connection *conn, char *out, size_t n)
{
	const union MHD_ConnectionInfo *ci =
		net_mhd.get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;
		if (sa->sa_family == AF_INET) {
			const struct sockaddr_in *in = (const void *)sa;
			inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
			port = ntohs(in->sin_port);
		} else if (sa->sa_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const void *)sa;
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(out, n, "%s:%u", host, port);
}

static int has_body(struct MHD_Connection *conn)
{
	const char *cl = net_mhd.lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
	const char *te = net_mhd.lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");
	if (te)
		return 1;
	if (cl) {
		for (const char *p = cl; *p; p++)
			if (*p != '0' && *p != ' ')
				return 1;
	}
	return 0;
}

static enum MHD_Result first_call(struct net_server *s, struct MHD_Connection *conn,
				  const char *url, const char *method, void **con_cls)
{
	char peer[64], msg[NET_STATUS_TEXT_MAX];
	struct head_scan hs = {0, 0};
	struct arg_list args;
	unsigned status = 0;
	const char *allow = NULL;
	peer_text(conn, peer, sizeof peer);
	net_mhd.get_connection_values(conn, MHD_HEADER_KIND, scan_header, &hs);
	if (hs.too_long || strlen(url) > NET_LINE_MAX)
		return refuse(s, conn, peer, method, "-", 413, "a header or the request line is longer "
			      "than 8192 bytes", NULL);
	pthread_mutex_lock(&s->mu);
	int stopping = s->stopping;
	pthread_mutex_unlock(&s->mu);
	if (stopping)
		return refuse(s, conn, peer, method, url, 503, "the server is stopping", NULL);
	/* the token first: without a valid one nothing else is looked at */
	const char *auth = net_mhd.lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	struct net_token tok;
	int found = 0;
	if (auth && !strncasecmp(auth, "Bearer ", 7)) {
		const char *t = auth + 7;
		while (*t == ' ')
			t++;
		pthread_mutex_lock(&s->tok_mu);
		const struct net_token *k = net_tokens_find(&s->tokens, t);
		if (k) {
			tok = *k;
			found = 1;
		}
		pthread_mutex_unlock(&s->tok_mu);
	}
	if (!found)
		return refuse(s, conn, peer, method, url, 401,
			      auth ? "unknown or malformed token" : "a bearer token is required", NULL);
	memset(&args, 0, sizeof args);
	net_mhd.get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
	if (args.more)
		return refuse(s, conn, peer, method, url, 413, "more than 16 query parameters", NULL);
	struct net_call *c = calloc(1, sizeof *c);
	if (!c)
		return refuse(s, conn, peer, method, url, 503, "out of memory", NULL);
	ferry_err_clear();
	int r = net_req_parse(method, url, args.v, args.n, &c->req, &status, &allow);
	if (r < 0) {
		free(c);
		snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
		return refuse(s, conn, peer, method, url, status, msg, allow);
	}
	if (c->req.ep != NET_EP_RECV && has_body(conn)) {
		free(c);
		return refuse(s, conn, peer, method, url, 400, "this request takes no body", NULL);
	}
	if (c->req.ep != NET_EP_POOLS && !net_scope_covers(tok.scope, c->req.name)) {
		snprintf(msg, sizeof msg, "'%s' is outside the token's scope", c->req.name);
		free(c);
		return refuse(s, conn, peer, method, url, 403, msg, NULL);
	}
	if (tok.perm < c->req.need) {
		snprintf(msg, sizeof msg, "the token's permission '%s' does not allow this (it needs "
			 "'%s')", net_perm_name(tok.perm), net_perm_name(c->req.need));
		free(c);
		return refuse(s, conn, peer, method, url, 403, msg, NULL);
	}
	int transfer = c->req.ep == NET_EP_RECV || c->req.ep == NET_EP_SEND;
	pthread_mutex_lock(&s->mu);
	int full = transfer && s->transfers >= s->o.max_transfers;
	if (!full) {
		s->transfers += transfer;
		s->jobs++;
	}
	pthread_mutex_unlock(&s->mu);
	if (full) {
		free(c);
		return refuse(s, conn, peer, method, url, 503, "too many transfers running; try again "
			      "later", NULL);
	}
	c->s = s;
	c->conn = conn;
	c->tok = tok;
	c->transfer = transfer;
	c->refs = 2; /* the connection's and the thread's */
	c->t0 = ferry_now_ns();
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	snprintf(c->method, sizeof c->method, "%s", method);
	pthread_mutex_init(&c->mu, NULL);
	if ((c->req.ep == NET_EP_RECV && net_pipe_new(NET_PIPE_CAP, &c->body) < 0) ||
	    (c->req.ep == NET_EP_SEND && net_pipe_new(NET_PIPE_CAP, &c->out) < 0))
		goto fail;
	pthread_mutex_lock(&s->mu);
	c->next = s->calls;
	if (s->calls)
		s->calls->prev = c;
	s->calls = c;
	pthread_mutex_unlock(&s->mu);
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&c->mu);
	if (pthread_create(&th, &at, job_main, c) != 0) {
		pthread_mutex_unlock(&c->mu);
		pthread_attr_destroy(&at);
		c->refs = 1;
		pthread_mutex_lock(&s->mu);
		s->jobs--;
		s->transfers -= transfer;
		pthread_mutex_unlock(&s->mu);
		call_unref(c);
		return refuse(s, conn, peer, method, url, 503, "cannot start a thread", NULL);
	}
	pthread_attr_destroy(&at);
	*con_cls = c;
	c->state = CS_HEAD;
	c->suspended = 1;
	net_mhd.suspend_connection(conn);
	pthread_mutex_unlock(&c->mu);
	return MHD_YES;
fail:
	pthread_mutex_lock(&s->mu);
	s->jobs--;
	s->transfers -= transfer;
	pthread_mutex_unlock(&s->mu);
	net_pipe_unref(c->body);
	net_pipe_unref(c->out);
	pthread_mutex_destroy(&c->mu);
	free(c);
	return refuse(s, conn, peer, method, url, 503, "out of memory", NULL);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *conn, const char *url,
				      const char *method, const char *version,
				      const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct net_server *s = cls;
	struct net_call *c = *con_cls;
	enum MHD_Result q = MHD_YES;
	if (!c)
		return first_call(s, conn, url, method, con_cls);
	pthread_mutex_lock(&c->mu);
	switch (c->state) {
	case CS_HEAD:
		if (c->finished || c->begun) {
			q = answer_locked(c, conn);
		} else if (c->want_body) {
			c->state = CS_BODY;
		} else {
			c->suspended = 1;
			net_mhd.suspend_connection(conn);
		}
		break;
	case CS_BODY:
		if (*upload_data_size) {
			if (c->finished) {
				/* answered early: drop the rest to be able to say so, up to a
				 * point */
				c->discarded += *upload_data_size;
				*upload_data_size = 0;
				if (c->discarded > NET_DISCARD_MAX)
					q = MHD_NO;
				break;
			}
			long n = net_pipe_put(c->body, upload_data, *upload_data_size);
			if (n < 0) {
				c->discarded += *upload_data_size;
				*upload_data_size = 0;
				break;
			}
			*upload_data_size -= (size_t)n;
			if (*upload_data_size)
				net_pipe_park(c->body, 1, conn_suspend, conn_resume, c);
			break;
		}
		net_pipe_close(c->body, 0, NULL);
		c->state = CS_BODY_DONE;
		/* fall through */
	case CS_BODY_DONE:
		if (c->finished) {
			q = answer_locked(c, conn);
		} else {
			c->suspended = 1;
			net_mhd.suspend_connection(conn);
		}
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return q;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct net_server *s = cls;
	struct net_call *c = *con_cls;
	if (!c)
		return;
	*con_cls = NULL;
	const char *why = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED
				  ? "no byte moved for the idle timeout"
			  : toe == MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN ? "the server is stopping"
			  : "the client's connection closed before the end of the body";
	pthread_mutex_lock(&c->mu);
	c->conn = NULL;
	c->suspended = 0;
	if (c->body) {
		net_pipe_unpark(c->body);
		if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
			c->conn_failed = 1;
			net_pipe_close(c->body, -FERR_IO, why);
		}
	}
	if (c->out) {
		net_pipe_unpark(c->out);
		if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
			net_pipe_abort(c->out, -FERR_IO, "the client's connection closed");
	}
	unsigned status = c->finished ? c->status : 0;
	uint64_t in = c->body ? net_pipe_total(c->body) : 0;
	uint64_t out = c->out ? net_pipe_total(c->out) : c->jlen;
	double secs = (double)(ferry_now_ns() - c->t0) / 1e9;
	char line[1024];
	snprintf(line, sizeof line, "%s %s(%s) %s %s%s %u in %llu out %llu %.2fs%s%s%s%s", c->peer,
		 c->tok.name, c->tok.id, c->method, ep_path(c->req.ep), c->req.name, status,
		 (unsigned long long)in, (unsigned long long)out, secs, c->errmsg[0] ? ": " : "",
		 c->errmsg, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : "; connection: ",
		 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : why);
	pthread_mutex_unlock(&c->mu);
	slog(s, "%s", line);
	call_unref(c);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct net_server *s = cls;
	char line[512];
	vsnprintf(line, sizeof line, fmt, ap);
	pthread_mutex_lock(&s->mu);
	int starting = s->starting;
	/* the first says what went wrong; the error names it */
	if (starting && !s->startmsg[0])
		net_one_line(line, s->startmsg, sizeof s->startmsg);
	pthread_mutex_unlock(&s->mu);
	if (!starting)
		slog(s, "libmicrohttpd: %s", line);
}

/* ---- start, reload, stop ------------------------------------------------------- */

static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len, int *v6)
{
	char host[256], port[16];
	const char *colon;
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof host)
			return ferry_err(FERR_INVAL, "listen address '%s': [IPV6]:PORT", spec);
		snprintf(host, sizeof host, "%.*s", (int)(close - spec - 1), spec + 1);
		colon = close + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon || (size_t)(colon - spec) >= sizeof host)
			return ferry_err(FERR_INVAL, "listen address '%s': ADDRESS:PORT", spec);
		snprintf(host, sizeof host, "%.*s", (int)(colon - spec), spec);
	}
	if (snprintf(port, sizeof port, "%s", colon + 1) >= (int)sizeof port || !port[0] ||
	    strspn(port, "0123456789") != strlen(port) || atol(port) > 65535)
		return ferry_err(FERR_INVAL, "listen address '%s': bad port", spec);
	struct addrinfo hints, *ai = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	int e = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (e != 0 || !ai)
		return ferry_err(FERR_INVAL, "listen address '%s': %s", spec, gai_strerror(e));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}

int net_server_start(const struct net_server_opts *o, struct net_server **out)
{
	struct net_server *s;
	size_t len;
	int r;
	if (!o->nlisten || o->nlisten > LISTEN_MAX)
		return ferry_err(FERR_INVAL, "1 to %d listen addresses", LISTEN_MAX);
	if (!o->tls_cert != !o->tls_key)
		return ferry_err(FERR_INVAL, "--tls-cert and --tls-key go together");
	if ((r = net_mhd_load()) < 0) /* before any daemon: every callback uses net_mhd */
		return r;
	if (!(s = calloc(1, sizeof *s)))
		return ferry_err(FERR_NOMEM, "starting the server");
	s->o = *o;
	if (!s->o.timeout)
		s->o.timeout = 60;
	if (!s->o.max_conns)
		s->o.max_conns = 64;
	if (!s->o.max_transfers)
		s->o.max_transfers = 32;
	if (!s->o.threads)
		s->o.threads = 2;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->tok_mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (!(s->tokens_path = strdup(o->tokens))) {
		r = ferry_err(FERR_NOMEM, "starting the server");
		goto fail;
	}
	if ((r = net_tokens_load(o->tokens, &s->tokens)) < 0) {
		r = ferry_err(-r, "cannot read the tokens: %s", ferry_errmsg(r));
		goto fail;
	}
	if (o->tls_cert) {
		if ((r = io_read_file(o->tls_cert, (size_t)1 << 20, &s->cert, &len)) < 0 ||
		    (r = io_read_file(o->tls_key, (size_t)1 << 20, &s->key, &len)) < 0)
			goto fail;
		if (!net_mhd.is_feature_supported(MHD_FEATURE_TLS)) {
			r = ferry_err(FERR_UNSUPPORTED, "this libmicrohttpd has no TLS");
			goto fail;
		}
	}
	for (size_t i = 0; i < o->nlisten; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = 0;
		int v6 = 0;
		if ((r = parse_listen(o->listen[i], &ss, &sl, &v6)) < 0)
			goto fail;
		struct MHD_OptionItem opts[16];
		size_t n = 0;
		/* the logger first, or libmicrohttpd prints its own earlier messages */
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_logger, s};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->o.timeout, NULL};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->o.max_conns, NULL};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)CONN_MEMORY, NULL};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, s};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)s->o.threads, NULL};
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_none, NULL};
		if (s->cert) {
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->key};
			opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert};
		}
		opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
		unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
				 MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0) | (s->cert ? MHD_USE_TLS : 0);
		pthread_mutex_lock(&s->mu);
		s->starting = 1;
		s->startmsg[0] = 0;
		pthread_mutex_unlock(&s->mu);
		errno = 0;
		s->d[i] = net_mhd.start_daemon(flags, 0, NULL, NULL, access_handler, s, MHD_OPTION_ARRAY,
					   opts, MHD_OPTION_END);
		int e = errno;
		pthread_mutex_lock(&s->mu);
		s->starting = 0;
		pthread_mutex_unlock(&s->mu);
		if (!s->d[i]) {
			size_t l = strlen(s->startmsg);
			while (l && (s->startmsg[l - 1] == '.' || s->startmsg[l - 1] == ' '))
				s->startmsg[--l] = 0;
			r = ferry_err(FERR_IO, "cannot listen on %s: %s", o->listen[i],
				      s->startmsg[0] ? s->startmsg : e ? strerror(e) : "libmicrohttpd refused");
			goto fail;
		}
		s->nd = i + 1;
		s->quiesced[i] = MHD_INVALID_SOCKET;
		const union MHD_DaemonInfo *di = net_mhd.get_daemon_info(s->d[i], MHD_DAEMON_INFO_BIND_PORT);
		s->port[i] = di ? di->port : 0;
	}
	*out = s;
	return 0;
fail:
	net_server_stop(s);
	return r;
}

unsigned net_server_port(const struct net_server *s, size_t i)
{
	return i < s->nd ? s->port[i] : 0;
}

int net_server_reload(struct net_server *s)
{
	struct net_tokens t;
	int r;
	if ((r = net_tokens_load(s->tokens_path, &t)) < 0)
		return r;
	pthread_mutex_lock(&s->tok_mu);
	net_tokens_release(&s->tokens);
	s->tokens = t;
	pthread_mutex_unlock(&s->tok_mu);
	slog(s, "tokens reloaded: %zu", t.n);
	return 0;
}

void net_server_stop(struct net_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < s->nd; i++)
		s->quiesced[i] = net_mhd.quiesce_daemon(s->d[i]);
	pthread_mutex_lock(&s->mu);
	for (struct net_call *c = s->calls; c; c = c->next) {
		if (c->body)
			net_pipe_close(c->body, -FERR_IO, "the server is stopping");
		if (c->out)
			net_pipe_abort(c->out, -FERR_IO, "the server is stopping");
	}
	while (s->jobs)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < s->nd; i++) {
		net_mhd.stop_daemon(s->d[i]);
		if (s->quiesced[i] != MHD_INVALID_SOCKET)
			close(s->quiesced[i]);
	}
	net_tokens_release(&s->tokens);
	free(s->tokens_path);
	free(s->cert);
	free(s->key);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->tok_mu);
	pthread_cond_destroy(&s->cv);
	free(s);
}
