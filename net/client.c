/* net/client.c — the client side of docs/ferry-http.7 on libcurl's easy
 * interface: one handle per client (connections are reused), TLS verified
 * unless the caller gives its own CA bundle, bodies through callbacks so a
 * stream of any length passes in bounded memory. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lazy.h"

struct net_client {
	struct net_client_opts o;
	char *base, *cacert;
	char auth[16 + NET_TOKEN_TEXT + 64];
	int have_auth;
	CURL *h;
};

struct xfer {
	struct net_client *c;
	net_read_fn rd;
	void *rdarg;
	net_write_fn wr;
	void *wrarg;
	struct fbuf *answer;
	int status_seen;
	long status;
	int cb_err;          /* a callback's error, returned as it is */
	struct ferry_errsave cb_msg;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* after net_curl_load */
static void curl_init(void)
{
	curl_init_rc = net_curl.global_init(CURL_GLOBAL_DEFAULT);
}

int net_client_new(const struct net_client_opts *o, struct net_client **out)
{
	struct net_client *c;
	int r = net_curl_load();
	if (r < 0)
		return r;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return ferry_err(FERR_IO, "cannot initialise libcurl: %s", net_curl.easy_strerror(curl_init_rc));
	if (!(c = calloc(1, sizeof *c)))
		return ferry_err(FERR_NOMEM, "making an HTTP client");
	c->o = *o;
	if (!c->o.timeout)
		c->o.timeout = 300;
	if (!(c->base = strdup(o->base)) || (o->cacert && !(c->cacert = strdup(o->cacert))) ||
	    !(c->h = net_curl.easy_init())) {
		net_client_free(c);
		return ferry_err(FERR_NOMEM, "making an HTTP client");
	}
	c->o.base = c->base;
	c->o.cacert = c->cacert;
	if (o->token) {
		if (strlen(o->token) >= NET_TOKEN_TEXT + 32 || strpbrk(o->token, "\r\n")) {
			net_client_free(c);
			return ferry_err(FERR_INVAL, "the token is not a ferry token");
		}
		snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", o->token);
		c->have_auth = 1;
	}
	c->o.token = NULL;
	*out = c;
	return 0;
}

void net_client_free(struct net_client *c)
{
	if (!c)
		return;
	if (c->h)
		net_curl.easy_cleanup(c->h);
	explicit_bzero(c->auth, sizeof c->auth);
	free(c->base);
	free(c->cacert);
	free(c);
}

static void see_status(struct xfer *x)
{
	if (x->status_seen)
		return;
	long code = 0;
	net_curl_getinfo(x->c->h, CURLINFO_RESPONSE_CODE, &code);
	x->status = code;
	x->status_seen = 1;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;
	see_status(x);
	if (x->status == 200 && x->wr) {
		int r = x->wr(x->wrarg, p, n);
		if (r < 0) {
			x->cb_err = r;
			ferry_err_save(&x->cb_msg);
			return 0; /* != n: curl aborts */
		}
		return n;
	}
	if (x->answer) {
		size_t room = x->answer->max > x->answer->len ? x->answer->max - x->answer->len : 0;
		/* an answer larger than its bound is cut (the caller parses it
		 * and says so) */
		if (room && fbuf_append(x->answer, p, n < room ? n : room) < 0)
			return 0;
	}
	return n;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	size_t got = 0;
	int r = x->rd(x->rdarg, buf, size * nitems, &got);
	if (r < 0) {
		x->cb_err = r;
		ferry_err_save(&x->cb_msg);
		return CURL_READFUNC_ABORT;
	}
	return got;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = arg;
	if (x->c->o.progress)
		x->c->o.progress(x->c->o.arg, (uint64_t)ulnow, (uint64_t)dlnow);
	return 0;
}

int net_client_request(struct net_client *c, const char *method, const char *path,
		       net_read_fn rd, void *rdarg, net_write_fn wr, void *wrarg,
		       struct fbuf *answer, long *status)
{
	struct xfer x;
	struct curl_slist *hdr = NULL, *h2;
	char url[8192 + 512], err[CURL_ERROR_SIZE];
	int r = 0;
	memset(&x, 0, sizeof x);
	x.c = c;
	x.rd = rd;
	x.rdarg = rdarg;
	x.wr = wr;
	x.wrarg = wrarg;
	x.answer = answer;
	*status = 0;
	if (snprintf(url, sizeof url, "%s%s", c->base, path) >= (int)sizeof url)
		return ferry_err(FERR_LIMIT, "the URL is too long");
	if (answer)
		fbuf_reset(answer);
	CURL *h = c->h;
	net_curl.easy_reset(h);
	err[0] = 0;
	if (c->have_auth && (h2 = net_curl.slist_append(hdr, c->auth)))
		hdr = h2;
	if (rd && (h2 = net_curl.slist_append(hdr, "Content-Type: application/x-ferry-stream")))
		hdr = h2;
	net_curl_setopt(h, CURLOPT_URL, url);
	net_curl_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	net_curl_setopt(h, CURLOPT_NOSIGNAL, 1L);
	net_curl_setopt(h, CURLOPT_ERRORBUFFER, err);
	net_curl_setopt(h, CURLOPT_HTTPHEADER, hdr);
	net_curl_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	net_curl_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	net_curl_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)c->o.timeout);
	net_curl_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	net_curl_setopt(h, CURLOPT_WRITEFUNCTION, (curl_write_callback){on_write});
	net_curl_setopt(h, CURLOPT_WRITEDATA, &x);
	net_curl_setopt(h, CURLOPT_USERAGENT, "ferry/1");
	if (c->cacert)
		net_curl_setopt(h, CURLOPT_CAINFO, c->cacert);
	if (c->o.limit_rate) {
		net_curl_setopt(h, CURLOPT_MAX_SEND_SPEED_LARGE, (curl_off_t)c->o.limit_rate);
		net_curl_setopt(h, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)c->o.limit_rate);
	}
	if (c->o.progress) {
		net_curl_setopt(h, CURLOPT_NOPROGRESS, 0L);
		net_curl_setopt(h, CURLOPT_XFERINFOFUNCTION, (curl_xferinfo_callback){on_progress});
		net_curl_setopt(h, CURLOPT_XFERINFODATA, &x);
	}
	if (!strcmp(method, "PUT")) {
		if (!rd) {
			r = ferry_err(FERR_INVAL, "PUT without a body");
			goto out;
		}
		net_curl_setopt(h, CURLOPT_UPLOAD, 1L);
		net_curl_setopt(h, CURLOPT_READFUNCTION, (curl_read_callback){on_read});
		net_curl_setopt(h, CURLOPT_READDATA, &x);
	} else if (!strcmp(method, "DELETE")) {
		net_curl_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	} else if (strcmp(method, "GET")) {
		r = ferry_err(FERR_INVAL, "method %s", method);
		goto out;
	}
	CURLcode res = net_curl.easy_perform(h);
	x.status_seen = 0;
	see_status(&x);
	*status = x.status;
	if (x.cb_err) {
		ferry_err_restore(&x.cb_msg);
		r = x.cb_err;
		goto out;
	}
	if (res != CURLE_OK)
		r = ferry_err(FERR_IO, "%s: %s", url, err[0] ? err : net_curl.easy_strerror(res));
out:
	net_curl.slist_free_all(hdr);
	return r;
}
