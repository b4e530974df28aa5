/* sync/dest.c — where a sync sends: a local pool, received in this
 * process (send_run writes into a pipe that recv_run reads on a thread of
 * its own), or ssh running ferry on the far side (`ferry sync-state`,
 * `ferry recv -s -v`, `ferry recv -A`, all of them commands `ferry shell`
 * lets through) with the stream on its stdin, or a ferry serve over HTTP
 * (http.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../net/net.h"
#include "../stream/stream.h"
#include "internal.h"

static int host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '-' || c == '_';
}

int sync_dest_parse(const char *s, struct sync_dest *out)
{
	struct sync_dest d;
	int r;
	memset(&d, 0, sizeof d);
	if (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8)) {
		char base[SYNC_DEST_MAX];
		if (net_url_split(s, base, sizeof base, d.dataset, sizeof d.dataset) < 0 ||
		    !d.dataset[0])
			return ferry_err(FERR_NAME, "'%s': http[s]://HOST[:PORT]/POOL/DATASET", s);
		snprintf(d.prefix, sizeof d.prefix, "%s/", base);
		d.kind = SYNC_DEST_HTTP;
	} else if (!strncmp(s, "ssh://", 6)) {
		const char *p = s + 6, *slash = strchr(p, '/'), *at;
		if (!slash || slash == p)
			return ferry_err(FERR_NAME, "'%s': ssh://[USER@]HOST[:PORT]/POOL/DATASET", s);
		at = memchr(p, '@', (size_t)(slash - p));
		if (at) {
			if (at == p || (size_t)(at - p) >= sizeof d.user)
				return ferry_err(FERR_NAME, "'%s': bad user name", s);
			for (const char *q = p; q < at; q++)
				if (!host_char(*q))
					return ferry_err(FERR_NAME, "'%s': bad user name", s);
			memcpy(d.user, p, (size_t)(at - p));
			p = at + 1;
		}
		const char *hend;
		if (*p == '[') { /* [v6 address] */
			hend = memchr(p, ']', (size_t)(slash - p));
			if (!hend)
				return ferry_err(FERR_NAME, "'%s': unterminated '['", s);
			for (const char *q = p + 1; q < hend; q++)
				if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f') ||
				      (*q >= 'A' && *q <= 'F') || *q == ':' || *q == '.'))
					return ferry_err(FERR_NAME, "'%s': bad address", s);
			hend++;
			if ((size_t)(hend - p - 2) >= sizeof d.host || hend - p <= 2)
				return ferry_err(FERR_NAME, "'%s': bad address", s);
			memcpy(d.host, p + 1, (size_t)(hend - p - 2));
		} else {
			hend = p;
			while (hend < slash && *hend != ':')
				hend++;
			if (hend == p || (size_t)(hend - p) >= sizeof d.host || *p == '-')
				return ferry_err(FERR_NAME, "'%s': bad host name", s);
			for (const char *q = p; q < hend; q++)
				if (!host_char(*q))
					return ferry_err(FERR_NAME, "'%s': bad host name", s);
			memcpy(d.host, p, (size_t)(hend - p));
		}
		if (*hend == ':') {
			unsigned long port = 0;
			const char *q = hend + 1;
			if (q == slash)
				return ferry_err(FERR_NAME, "'%s': empty port", s);
			for (; q < slash; q++) {
				if (*q < '0' || *q > '9' || (port = port * 10 + (unsigned long)(*q - '0')) > 65535)
					return ferry_err(FERR_NAME, "'%s': bad port", s);
			}
			if (port == 0)
				return ferry_err(FERR_NAME, "'%s': bad port", s);
			d.port = (unsigned)port;
		} else if (hend != slash) {
			return ferry_err(FERR_NAME, "'%s': bad host name", s);
		}
		if (strlen(slash + 1) >= sizeof d.dataset)
			return ferry_err(FERR_NAME, "'%s': the dataset name is too long", s);
		snprintf(d.dataset, sizeof d.dataset, "%s", slash + 1);
		int v6 = strchr(d.host, ':') != NULL;
		char port[16] = "";
		if (d.port)
			snprintf(port, sizeof port, ":%u", d.port);
		snprintf(d.prefix, sizeof d.prefix, "ssh://%s%s%s%s%s%s/", d.user, d.user[0] ? "@" : "",
			 v6 ? "[" : "", d.host, v6 ? "]" : "", port);
		d.kind = SYNC_DEST_SSH;
	} else if (strstr(s, "://")) {
		return ferry_err(FERR_NAME, "'%s': a destination is POOL/DATASET, ssh://... or "
				 "https://...", s);
	} else {
		if (strlen(s) >= sizeof d.dataset)
			return ferry_err(FERR_NAME, "'%s': name is too long", s);
		snprintf(d.dataset, sizeof d.dataset, "%s", s);
		d.kind = SYNC_DEST_LOCAL;
	}
	if ((r = store_name_check(d.dataset, STORE_NAME_DATASET)) < 0)
		return r;
	*out = d;
	return 0;
}

/* ---- the destination handle ------------------------------------------------------------- */

struct dst {
	struct sync_dest d;
	int dry;
	struct store_pool *p;  /* local */
	char **ssh;            /* ssh: the command's words, NULL-terminated */
	size_t nssh;
	struct dst_http *http; /* http(s):// (http.c) */
};

int dst_open(const struct sync_dest *d, const struct sync_opts *o, int dry, struct dst **out)
{
	struct dst *x = calloc(1, sizeof *x);
	const char *ssh = o->ssh;
	int r;
	if (!x)
		return ferry_err(FERR_NOMEM, "opening the destination");
	x->d = *d;
	x->dry = dry;
	if (d->kind == SYNC_DEST_HTTP) {
		if ((r = dh_open(d, o, &x->http)) < 0) {
			free(x);
			return r;
		}
	} else if (d->kind == SYNC_DEST_LOCAL) {
		if ((r = store_pool_open_for(d->dataset, dry ? STORE_OPEN_RDONLY : 0, &x->p)) < 0) {
			free(x);
			return r;
		}
		char what[STORE_NAME_MAX + 64];
		snprintf(what, sizeof what, "a sync into %s", d->dataset);
		store_pool_activity(x->p, what);
	} else {
		/* FERRY_SSH-style: the program and its options, split at blanks */
		const char *s = ssh && *ssh ? ssh : "ssh";
		if (!(x->ssh = calloc(strlen(s) / 2 + 2, sizeof *x->ssh))) {
			free(x);
			return ferry_err(FERR_NOMEM, "opening the destination");
		}
		const char *p = s;
		while (*p) {
			while (*p == ' ' || *p == '\t')
				p++;
			if (!*p)
				break;
			size_t len = strcspn(p, " \t");
			if (!(x->ssh[x->nssh] = strndup(p, len))) {
				dst_close(x);
				return ferry_err(FERR_NOMEM, "opening the destination");
			}
			x->nssh++;
			p += len;
		}
		if (!x->nssh) {
			dst_close(x);
			return ferry_err(FERR_INVAL, "FERRY_SSH is empty");
		}
	}
	*out = x;
	return 0;
}

void dst_close(struct dst *x)
{
	if (!x)
		return;
	store_pool_close(x->p);
	dh_close(x->http);
	for (size_t i = 0; x->ssh && i < x->nssh; i++)
		free(x->ssh[i]);
	free(x->ssh);
	free(x);
}

/* ---- ssh ------------------------------------------------------------------------------------- */

/* Runs the remote command cmd through ssh; with stdin_pipe the caller
 * writes pr->in_fd. */
static int ssh_start(struct dst *x, const char *cmd, int stdin_pipe, size_t out_max,
		     struct proc *pr)
{
	char port[16], host[512];
	char **argv = calloc(x->nssh + 6, sizeof *argv);
	size_t n = 0;
	int r;
	if (!argv)
		return ferry_err(FERR_NOMEM, "starting ssh");
	for (size_t i = 0; i < x->nssh; i++)
		argv[n++] = x->ssh[i];
	if (x->d.port) {
		snprintf(port, sizeof port, "%u", x->d.port);
		argv[n++] = "-p";
		argv[n++] = port;
	}
	snprintf(host, sizeof host, "%s%s%s", x->d.user, x->d.user[0] ? "@" : "", x->d.host);
	argv[n++] = host;
	argv[n++] = (char *)cmd;
	argv[n] = NULL;
	r = proc_start(argv, stdin_pipe, out_max, pr);
	free(argv);
	return r;
}

/* The error of a remote command that exited with status: ssh's own
 * failure (255) means the far side was not reached. */
static int ssh_err(struct dst *x, struct proc *pr, int status, const char *what)
{
	const char *last = proc_last_err(pr);
	if (status == 255)
		return ferry_err(FERR_IO, "cannot reach %s: %s", x->d.host,
				 *last ? last : "ssh failed");
	return ferry_err(FERR_IO, "%s on %s failed (exit status %d)%s%s", what, x->d.host, status,
			 *last ? ": " : "", last);
}

static int ssh_run(struct dst *x, const char *cmd, const char *what, struct fbuf *out_copy)
{
	struct proc pr;
	int r, status = 0;
	if ((r = ssh_start(x, cmd, 0, (size_t)256 << 20, &pr)) < 0)
		return r;
	if ((r = proc_finish(&pr, &status)) < 0)
		goto out;
	if (status != 0) {
		r = ssh_err(x, &pr, status, what);
		goto out;
	}
	if (pr.overflow) {
		r = ferry_err(FERR_LIMIT, "%s on %s: too much output", what, x->d.host);
		goto out;
	}
	if (out_copy) {
		*out_copy = pr.out;
		fbuf_init(&pr.out, 0);
	}
out:
	fbuf_release(&pr.out);
	return r;
}

/* "ferry WORDS... 'target'" */
static int remote_cmd(struct fbuf *b, const char *words, const char *target)
{
	int r;
	fbuf_reset(b);
	if ((r = fbuf_printf(b, "ferry %s ", words)) < 0 || (r = sh_quote(b, target)) < 0)
		return r;
	return fbuf_putc(b, 0);
}

/* ---- the operations ------------------------------------------------------------------------------ */

int dst_state(struct dst *x, const char *target, int recursive, struct st_tree *out)
{
	struct fbuf cmd, text;
	int r;
	if (x->http)
		return dh_state(x->http, target, recursive, out);
	if (x->p) {
		if ((r = store_read_begin(x->p)) < 0)
			return r;
		r = st_collect(x->p, target, recursive, out);
		store_read_end(x->p);
		return r;
	}
	fbuf_init(&cmd, 65536);
	fbuf_init(&text, 0);
	if ((r = remote_cmd(&cmd, recursive ? "sync-state -r" : "sync-state", target)) < 0 ||
	    (r = ssh_run(x, (const char *)cmd.data, "ferry sync-state", &text)) < 0)
		goto out;
	r = st_parse((const char *)text.data, text.len, out);
	if (r == 0 && strcmp(out->target, target)) {
		st_tree_release(out);
		r = ferry_err(FERR_CORRUPT, "the destination answered for '%s', not '%s'",
			      out->target, target);
	}
out:
	fbuf_release(&cmd);
	fbuf_release(&text);
	return r;
}

int dst_abort(struct dst *x, const char *target)
{
	struct fbuf cmd;
	int r;
	if (x->p)
		return recv_abort(x->p, target);
	if (x->http)
		return dh_abort(x->http, target);
	fbuf_init(&cmd, 65536);
	if ((r = remote_cmd(&cmd, "recv -A", target)) == 0)
		r = ssh_run(x, (const char *)cmd.data, "ferry recv -A", NULL);
	fbuf_release(&cmd);
	return r;
}

struct dst_recv {
	struct dst *x;
	char target[STORE_NAME_MAX + 1];
	struct stream_sink_fd sink;
	/* local: the receiving thread and its end of the pipe */
	pthread_t th;
	int th_on;
	int rfd, wfd;
	struct store_propset *set;
	size_t nset;
	const char **excl;
	size_t nexcl;
	unsigned rflags;
	int rc;
	char err[1024];
	struct recv_stats tot;
	/* ssh */
	struct proc pr;
	int pr_on;
	/* http(s):// */
	struct dh_recv *http;
};

static void add_stats(struct recv_stats *a, const struct recv_stats *b)
{
	a->snapshots++;
	a->bytes += b->bytes;
	a->blocks_logical += b->blocks_logical;
	a->blocks_kept += b->blocks_kept;
	a->blocks_recompressed += b->blocks_recompressed;
	a->blocks_present += b->blocks_present;
	a->blocks_byref += b->blocks_byref;
	a->pbytes_written += b->pbytes_written;
}

static void recv_done(void *arg, const char *snapshot, const struct recv_stats *st)
{
	add_stats(arg, st);
}

static void *recv_thread(void *arg)
{
	struct dst_recv *rv = arg;
	struct stream_source_fd src;
	struct recv_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.flags = rv->rflags;
	ro.set = rv->set;
	ro.nset = rv->nset;
	ro.exclude = rv->excl;
	ro.nexclude = rv->nexcl;
	ro.done = recv_done;
	ro.arg = &rv->tot;
	stream_source_fd_init(&src, rv->rfd);
	rv->rc = recv_run(rv->x->p, rv->target, &src.base, &ro, NULL);
	if (rv->rc < 0)
		snprintf(rv->err, sizeof rv->err, "%s", ferry_errmsg(rv->rc));
	/* a receive that stops early stops the sender too (EPIPE) */
	close(rv->rfd);
	rv->rfd = -1;
	return NULL;
}

static void rv_free(struct dst_recv *rv)
{
	if (!rv)
		return;
	for (size_t i = 0; i < rv->nset; i++) {
		free((char *)rv->set[i].name);
		free((char *)rv->set[i].value);
	}
	free(rv->set);
	for (size_t i = 0; i < rv->nexcl; i++)
		free((char *)rv->excl[i]);
	free(rv->excl);
	free(rv);
}

int dst_recv_begin(struct dst *x, const char *target, unsigned rflags,
		   const struct store_propset *set, size_t nset, const char *const *excl,
		   size_t nexcl, struct dst_recv **out, struct stream_sink **sink)
{
	struct dst_recv *rv = calloc(1, sizeof *rv);
	struct fbuf cmd;
	int r, fds[2];
	if (!rv)
		return ferry_err(FERR_NOMEM, "starting a receive");
	rv->x = x;
	rv->rfd = rv->wfd = -1;
	rv->rflags = rflags;
	snprintf(rv->target, sizeof rv->target, "%s", target);
	if (x->http) {
		if ((r = dh_recv_begin(x->http, target, rflags, excl, nexcl, &rv->http, sink)) < 0) {
			rv_free(rv);
			return r;
		}
		*out = rv;
		return 0;
	}
	if (x->p) {
		/* copies: the thread outlives nothing of the caller's, but is
		 * simplest to reason about with its own */
		if ((nset && !(rv->set = calloc(nset, sizeof *rv->set))) ||
		    (nexcl && !(rv->excl = calloc(nexcl, sizeof *rv->excl)))) {
			rv_free(rv);
			return ferry_err(FERR_NOMEM, "starting a receive");
		}
		for (size_t i = 0; i < nset; i++) {
			rv->set[i].name = strdup(set[i].name);
			rv->set[i].value = strdup(set[i].value);
			rv->nset++;
			if (!rv->set[i].name || !rv->set[i].value) {
				rv_free(rv);
				return ferry_err(FERR_NOMEM, "starting a receive");
			}
		}
		for (size_t i = 0; i < nexcl; i++) {
			if (!(rv->excl[i] = strdup(excl[i]))) {
				rv_free(rv);
				return ferry_err(FERR_NOMEM, "starting a receive");
			}
			rv->nexcl++;
		}
		if (pipe2(fds, O_CLOEXEC) < 0) {
			r = ferry_err_errno(errno, "cannot make a pipe for the receive");
			rv_free(rv);
			return r;
		}
		/* a large pipe: fewer switches between the two threads */
		io_pipe_grow(fds[1]);
		rv->rfd = fds[0];
		rv->wfd = fds[1];
		if ((r = pthread_create(&rv->th, NULL, recv_thread, rv)) != 0) {
			r = ferry_err_errno(r, "cannot start the receiving thread");
			close(fds[0]);
			close(fds[1]);
			rv_free(rv);
			return r;
		}
		rv->th_on = 1;
		stream_sink_fd_init(&rv->sink, rv->wfd);
		*out = rv;
		*sink = &rv->sink.base;
		return 0;
	}
	fbuf_init(&cmd, (size_t)1 << 20);
	r = fbuf_printf(&cmd, "ferry recv -s -v%s", (rflags & RECV_FORCE) ? " -F" : "");
	for (size_t i = 0; r == 0 && i < nset; i++) {
		char pv[STORE_USERPROP_NAME_MAX + STORE_USERPROP_VALUE_MAX + 2];
		snprintf(pv, sizeof pv, "%s=%s", set[i].name, set[i].value);
		if ((r = fbuf_printf(&cmd, " -o ")) == 0)
			r = sh_quote(&cmd, pv);
	}
	for (size_t i = 0; r == 0 && i < nexcl; i++)
		if ((r = fbuf_printf(&cmd, " -x ")) == 0)
			r = sh_quote(&cmd, excl[i]);
	if (r == 0 && (r = fbuf_putc(&cmd, ' ')) == 0 && (r = sh_quote(&cmd, target)) == 0)
		r = fbuf_putc(&cmd, 0);
	if (r == 0)
		r = ssh_start(x, (const char *)cmd.data, 1, (size_t)64 << 20, &rv->pr);
	fbuf_release(&cmd);
	if (r < 0) {
		rv_free(rv);
		return r;
	}
	rv->pr_on = 1;
	io_pipe_grow(rv->pr.in_fd); /* the stream's pipe into ssh, as send's */
	stream_sink_fd_init(&rv->sink, rv->pr.in_fd);
	*out = rv;
	*sink = &rv->sink.base;
	return 0;
}

/* The figures `ferry recv -v` printed on the far side. */
static void parse_recv_v(const struct fbuf *out, struct recv_stats *st)
{
	const char *p = (const char *)out->data, *end = p + out->len;
	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[512];
		if (len < sizeof line) {
			memcpy(line, p, len);
			line[len] = 0;
			unsigned long long a, b, c, d, e, f;
			if (!strncmp(line, "received ", 9)) {
				const char *sz = strstr(line, ": ");
				st->snapshots++;
				uint64_t bytes;
				char num[32];
				if (sz && sscanf(sz + 2, "%31s stream", num) == 1 &&
				    parse_size(num, &bytes) == 0)
					st->bytes += bytes;
				ferry_err_clear();
			} else if (sscanf(line, "  blocks: %llu logical compressed, %llu kept, %llu "
					  "recompressed, %llu already present, %llu by reference; "
					  "%llu nodes", &a, &b, &c, &d, &e, &f) == 6) {
				st->blocks_logical += a;
				st->blocks_kept += b;
				st->blocks_recompressed += c;
				st->blocks_present += d;
				st->blocks_byref += e;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
}

int dst_recv_end(struct dst_recv *rv, int send_rc, struct recv_stats *st, char *err, size_t errn)
{
	int r = 0;
	memset(st, 0, sizeof *st);
	err[0] = 0;
	if (rv->http) {
		r = dh_recv_end(rv->http, send_rc, st, err, errn);
	} else if (rv->th_on) {
		/* the end of the stream (a failed send's stream ends short: a
		 * resumable receive keeps what arrived whole) */
		close(rv->wfd);
		rv->wfd = -1;
		pthread_join(rv->th, NULL);
		*st = rv->tot;
		r = rv->rc;
		if (r < 0)
			snprintf(err, errn, "%s", rv->err);
	} else if (rv->pr_on) {
		int status = 0;
		rv->pr.in_fd = rv->sink.fd; /* proc_finish closes it */
		if ((r = proc_finish(&rv->pr, &status)) == 0 && status != 0) {
			r = ssh_err(rv->x, &rv->pr, status, "ferry recv");
			snprintf(err, errn, "%s", ferry_errmsg(r));
		}
		parse_recv_v(&rv->pr.out, st);
		fbuf_release(&rv->pr.out);
	}
	(void)send_rc;
	rv_free(rv);
	return r;
}
