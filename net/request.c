/* net/request.c — the request side of docs/ferry-http.7 without any I/O:
 * endpoints, names in paths, query parameters, percent coding, URLs, and
 * the JSON of error bodies. Everything here takes hostile input (the
 * libFuzzer target tests/fuzz/fuzz_http.c drives it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int net_pct_decode(const char *src, size_t len, char *out, size_t n)
{
	size_t o = 0;
	if (n == 0)
		return ferry_err(FERR_LIMIT, "no room");
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)src[i];
		if (c == '%') {
			if (len - i < 3 || hexval(src[i + 1]) < 0 || hexval(src[i + 2]) < 0)
				return ferry_err(FERR_INVAL, "a '%%' not followed by two hexadecimal digits");
			c = hexval(src[i + 1]) * 16 + hexval(src[i + 2]);
			i += 2;
		}
		if (c == 0)
			return ferry_err(FERR_INVAL, "a NUL byte");
		if (o + 1 >= n)
			return ferry_err(FERR_LIMIT, "longer than %zu bytes decoded", n - 1);
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

int net_pct_encode(struct fbuf *out, const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	int r;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		unsigned c = *p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == ':' || c == '@' || c == '/') {
			if ((r = fbuf_putc(out, (uint8_t)c)) < 0)
				return r;
		} else if ((r = fbuf_putc(out, '%')) < 0 || (r = fbuf_putc(out, (uint8_t)hex[c >> 4])) < 0 ||
			   (r = fbuf_putc(out, (uint8_t)hex[c & 15])) < 0) {
			return r;
		}
	}
	return 0;
}

int net_is_url(const char *s)
{
	return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8);
}

int net_url_split(const char *url, char *base, size_t nbase, char *name, size_t nname)
{
	size_t sl = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
	char tmp[NET_NAME_MAX + 1];
	int r;
	if (!sl)
		return ferry_err(FERR_INVAL, "'%s' is not an http:// or https:// URL", url);
	const char *auth = url + sl, *slash = strchr(auth, '/');
	size_t al = slash ? (size_t)(slash - auth) : strlen(auth);
	if (al == 0 || memchr(auth, '@', al))
		return ferry_err(FERR_INVAL, "'%s': the URL needs a host (and no user part)", url);
	if (strpbrk(url, "?#"))
		return ferry_err(FERR_INVAL, "'%s': a ferry URL has no query or fragment "
				 "(write a bookmark's '#' as %%23)", url);
	for (size_t i = 0; i < sl + al; i++)
		if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
			return ferry_err(FERR_INVAL, "'%s': a space or control character in the URL", url);
	if (sl + al >= nbase)
		return ferry_err(FERR_LIMIT, "'%s': the host part is too long", url);
	const char *path = slash ? slash + 1 : "";
	if ((r = net_pct_decode(path, strlen(path), tmp, sizeof tmp)) < 0)
		return ferry_err(-r, "'%s': %s", url, ferry_errmsg(r));
	if (strlen(tmp) >= nname)
		return ferry_err(FERR_LIMIT, "'%s': the name is too long", url);
	memcpy(base, url, sl + al);
	base[sl + al] = 0;
	snprintf(name, nname, "%s", tmp);
	return 0;
}

void net_one_line(const char *msg, char *out, size_t n)
{
	size_t o = 0;
	if (n == 0)
		return;
	for (const unsigned char *p = (const unsigned char *)msg; *p && o + 1 < n; p++) {
		if (*p == '\n' || *p == '\r')
			break;
		out[o++] = *p < 0x20 || *p == 0x7f ? ' ' : (char)*p;
	}
	out[o] = 0;
}

int net_json_string(struct fbuf *out, const char *s)
{
	int r;
	if ((r = fbuf_putc(out, '"')) < 0)
		return r;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned c = *p;
		if (c == '"' || c == '\\')
			r = fbuf_printf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			r = fbuf_printf(out, "\\u%04x", c);
		else if (c >= 0x80)
			r = fbuf_printf(out, "\\u%04x", c); /* bytes, not UTF-8: stay ASCII */
		else
			r = fbuf_putc(out, (uint8_t)c);
		if (r < 0)
			return r;
	}
	return fbuf_putc(out, '"');
}

int net_json_error(struct fbuf *out, unsigned status, const char *msg)
{
	char line[NET_STATUS_TEXT_MAX];
	int r;
	net_one_line(msg, line, sizeof line);
	if ((r = fbuf_printf(out, "{\"status\": %u, \"error\": ", status)) < 0 ||
	    (r = net_json_string(out, line)) < 0)
		return r;
	return fbuf_printf(out, "}\n");
}

/* ---- requests -------------------------------------------------------------- */

/* A decoded name as the protocol allows it: printable ASCII, at most one
 * '@' or '#' (allowed says which), no empty, "." or ".." component. */
static int name_check(const char *name, const char *allowed, int need_sep)
{
	size_t n = strlen(name);
	const char *at = strchr(name, '@'), *hs = strchr(name, '#');
	if (n == 0)
		return ferry_err(FERR_INVAL, "an empty name");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e)
			return ferry_err(FERR_INVAL, "a control or non-ASCII byte 0x%02x in the name",
					 (unsigned char)name[i]);
	if ((at && hs) || (at && strchr(at + 1, '@')) || (hs && strchr(hs + 1, '#')))
		return ferry_err(FERR_INVAL, "more than one '@' or '#' in '%s'", name);
	const char *sep = at ? at : hs;
	if (sep && !strchr(allowed, *sep))
		return ferry_err(FERR_INVAL, "'%s': this endpoint takes no '%c' name", name, *sep);
	if (!sep && need_sep)
		return ferry_err(FERR_INVAL, "'%s' is not a snapshot (DATASET@SNAPSHOT)", name);
	size_t dl = sep ? (size_t)(sep - name) : n;
	for (size_t s = 0; s <= dl;) {
		const char *sl = memchr(name + s, '/', dl - s);
		size_t e = sl ? (size_t)(sl - name) : dl;
		size_t cl = e - s;
		if (cl == 0)
			return ferry_err(FERR_INVAL, "an empty component in '%s'", name);
		if ((cl == 1 && name[s] == '.') || (cl == 2 && name[s] == '.' && name[s + 1] == '.'))
			return ferry_err(FERR_INVAL, "a '.' or '..' component in '%s'", name);
		s = e + 1;
		if (!sl)
			break;
	}
	if (sep) {
		const char *t = sep + 1;
		if (!*t || !strcmp(t, ".") || !strcmp(t, "..") || strchr(t, '/'))
			return ferry_err(FERR_INVAL, "a bad snapshot or bookmark part in '%s'", name);
	}
	return 0;
}

static int want_bool(const char *key, const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "0")) {
		*out = v[0] == '1';
		return 0;
	}
	return ferry_err(FERR_INVAL, "parameter '%s' is 1 or 0, not '%s'", key, v);
}

static int parse_types(const char *v, unsigned *out)
{
	unsigned t = 0;
	const char *p = v;
	if (!*v)
		return ferry_err(FERR_INVAL, "an empty types list");
	while (*p) {
		size_t l = strcspn(p, ",");
		static const struct { const char *n; unsigned bit; } map[] = {
			{"filesystem", NET_T_FILESYSTEM}, {"volume", NET_T_VOLUME},
			{"snapshot", NET_T_SNAPSHOT}, {"bookmark", NET_T_BOOKMARK}, {"all", NET_T_ALL},
		};
		size_t i;
		for (i = 0; i < sizeof map / sizeof map[0]; i++)
			if (strlen(map[i].n) == l && !strncmp(map[i].n, p, l))
				break;
		if (i == sizeof map / sizeof map[0])
			return ferry_err(FERR_INVAL, "types: '%.*s' is not filesystem, volume, snapshot, "
					 "bookmark or all", (int)(l > 64 ? 64 : l), p);
		t |= map[i].bit;
		p += l;
		if (*p == ',') {
			p++;
			if (!*p)
				return ferry_err(FERR_INVAL, "types: an empty item");
		}
	}
	*out = t;
	return 0;
}

/* hash=: 64 hexadecimal digits (either case). */
static int parse_hash(const char *v, uint8_t out[FERRY_HASH_LEN])
{
	if (strlen(v) != 2 * FERRY_HASH_LEN)
		return ferry_err(FERR_INVAL, "hash is %d hexadecimal digits", 2 * FERRY_HASH_LEN);
	for (size_t i = 0; i < FERRY_HASH_LEN; i++) {
		int hi = hexval(v[2 * i]), lo = hexval(v[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return ferry_err(FERR_INVAL, "hash is %d hexadecimal digits", 2 * FERRY_HASH_LEN);
		out[i] = (uint8_t)(hi * 16 + lo);
	}
	return 0;
}

static int parse_depth(const char *v, int *out)
{
	char *end;
	if (!*v || strlen(v) > 8)
		return ferry_err(FERR_INVAL, "depth is -1 or 0..9999999, not '%s'", v);
	long d = strtol(v, &end, 10);
	if (*end || d < -1 || (v[0] == '-' && d != -1) || v[0] == '+' || v[0] == ' ')
		return ferry_err(FERR_INVAL, "depth is -1 or 0..9999999, not '%s'", v);
	*out = (int)d;
	return 0;
}

/* The endpoint of path, the rest of it (the raw name) and the methods. */
static int route(const char *path, const char **rest, int *ep_get, int *ep_put, int *ep_del)
{
	static const struct {
		const char *prefix;
		int get, put, del;
	} routes[] = {
		{"/v1/datasets/", NET_EP_DATASETS, 0, 0},
		{"/v1/receive/", NET_EP_RECV_INFO, NET_EP_RECV, NET_EP_ABORT},
		{"/v1/send/", NET_EP_SEND, 0, 0},
		{"/v1/snapshots/", 0, 0, NET_EP_DESTROY},
		{"/v1/blocks/", NET_EP_BLOCK, 0, 0},
		{"/v1/nodes/", NET_EP_NODE, 0, 0},
	};
	if (!strcmp(path, "/v1/pools")) {
		*rest = "";
		*ep_get = NET_EP_POOLS;
		*ep_put = *ep_del = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		size_t l = strlen(routes[i].prefix);
		if (!strncmp(path, routes[i].prefix, l)) {
			*rest = path + l;
			*ep_get = routes[i].get;
			*ep_put = routes[i].put;
			*ep_del = routes[i].del;
			return 0;
		}
	}
	return -1;
}

static const char *allow_text(int g, int p, int d)
{
	if (g && p && d)
		return "GET, PUT, DELETE";
	if (g)
		return "GET";
	if (p)
		return "PUT";
	return "DELETE";
}

/* Records a parse error: the detail, the status. */
static int refuse(int r, unsigned st, unsigned *status)
{
	*status = st;
	return r;
}

int net_req_parse(const char *method, const char *path, const struct net_arg *args,
		  size_t nargs, struct net_req *out, unsigned *status, const char **allow)
{
	struct net_req *q;
	const char *rest;
	int g, p, d, r, has_hash = 0;
	*allow = NULL;
	if (!method || !path)
		return refuse(ferry_err(FERR_INVAL, "no method or path"), 400, status);
	size_t total = strlen(method) + strlen(path);
	for (size_t i = 0; i < nargs; i++)
		total += 2 + (args[i].key ? strlen(args[i].key) : 0) +
			 (args[i].value ? strlen(args[i].value) : 0);
	if (total > NET_LINE_MAX)
		return refuse(ferry_err(FERR_LIMIT, "the request line is longer than %d bytes",
					NET_LINE_MAX), 413, status);
	if (nargs > NET_ARGS_MAX)
		return refuse(ferry_err(FERR_LIMIT, "more than %d query parameters", NET_ARGS_MAX),
			      413, status);
	if (route(path, &rest, &g, &p, &d) < 0)
		return refuse(ferry_err(FERR_NOENT, "no such endpoint"), 404, status);
	int ep = !strcmp(method, "GET") ? g : !strcmp(method, "PUT") ? p
					     : !strcmp(method, "DELETE") ? d : 0;
	if (!ep) {
		*allow = allow_text(g, p, d);
		return refuse(ferry_err(FERR_UNSUPPORTED, "method %.16s is not allowed here (%s)",
					method, *allow), 405, status);
	}
	if (!(q = calloc(1, sizeof *q)))
		return refuse(ferry_err(FERR_NOMEM, "parsing a request"), 500, status);
	q->ep = ep;
	q->types = NET_T_ALL;
	q->need = NET_PERM_READ;
	if (ep != NET_EP_POOLS) {
		if ((r = net_pct_decode(rest, strlen(rest), q->name, sizeof q->name)) < 0) {
			r = refuse(ferry_err(-r, "the name in the path: %s", ferry_errmsg(r)),
				   r == -FERR_LIMIT ? 413 : 400, status);
			goto out;
		}
		const char *seps = ep == NET_EP_DATASETS ? "@#" : ep == NET_EP_RECV ? "@"
				 : ep == NET_EP_SEND || ep == NET_EP_DESTROY ? "@" : "";
		int need_sep = ep == NET_EP_SEND || ep == NET_EP_DESTROY;
		if ((r = name_check(q->name, seps, need_sep)) < 0) {
			r = refuse(r, 400, status);
			goto out;
		}
		size_t dl = strcspn(q->name, "@#");
		memcpy(q->dataset, q->name, dl);
		q->dataset[dl] = 0;
	}
	for (size_t i = 0; i < nargs; i++) {
		char key[64], val[NET_ARG_MAX + 1];
		if (!args[i].key || (r = net_pct_decode(args[i].key, strlen(args[i].key), key,
							sizeof key)) < 0) {
			r = refuse(ferry_err(FERR_INVAL, "a bad parameter name"), 400, status);
			goto out;
		}
		if (!args[i].value) {
			r = refuse(ferry_err(FERR_INVAL, "parameter '%s' needs a value", key), 400, status);
			goto out;
		}
		if ((r = net_pct_decode(args[i].value, strlen(args[i].value), val, sizeof val)) < 0) {
			r = refuse(ferry_err(-r, "parameter '%s': %s", key, ferry_errmsg(r)),
				   r == -FERR_LIMIT ? 413 : 400, status);
			goto out;
		}
		for (size_t j = 0; j < i; j++) {
			char k2[64];
			if (args[j].key && net_pct_decode(args[j].key, strlen(args[j].key), k2,
							  sizeof k2) == 0 && !strcmp(k2, key)) {
				r = refuse(ferry_err(FERR_INVAL, "parameter '%s' is given twice", key), 400,
					   status);
				goto out;
			}
		}
		r = -FERR_INVAL;
		if (ep == NET_EP_DATASETS && !strcmp(key, "depth"))
			r = parse_depth(val, &q->depth);
		else if (ep == NET_EP_DATASETS && !strcmp(key, "types"))
			r = parse_types(val, &q->types);
		else if (ep == NET_EP_RECV && !strcmp(key, "force"))
			r = want_bool(key, val, &q->force);
		else if (ep == NET_EP_RECV && !strcmp(key, "exclude"))
			r = *val ? (snprintf(q->exclude, sizeof q->exclude, "%s", val), 0)
				 : ferry_err(FERR_INVAL, "parameter 'exclude' is empty");
		else if ((ep == NET_EP_BLOCK || ep == NET_EP_NODE) && !strcmp(key, "hash"))
			r = parse_hash(val, q->hash), has_hash = r == 0;
		else if (ep == NET_EP_SEND && !strcmp(key, "intermediate"))
			r = want_bool(key, val, &q->intermediate);
		else if (ep == NET_EP_SEND && !strcmp(key, "replicate"))
			r = want_bool(key, val, &q->replicate);
		else if (ep == NET_EP_SEND && !strcmp(key, "compressed"))
			r = want_bool(key, val, &q->compressed);
		else if (ep == NET_EP_SEND && !strcmp(key, "props"))
			r = want_bool(key, val, &q->props);
		else if (ep == NET_EP_SEND && (!strcmp(key, "from") || !strcmp(key, "compress") ||
					       !strcmp(key, "token"))) {
			char *dst = key[0] == 'f' ? q->from : key[0] == 'c' ? q->compress : q->token;
			if (!*val)
				r = ferry_err(FERR_INVAL, "parameter '%s' is empty", key);
			else
				r = 0, snprintf(dst, NET_ARG_MAX + 1, "%s", val);
		} else {
			ferry_err(FERR_INVAL, "unknown parameter '%s'", key);
		}
		if (r < 0) {
			r = refuse(r, 400, status);
			goto out;
		}
	}
	if (ep == NET_EP_SEND) {
		if (q->token[0] && (q->from[0] || q->intermediate || q->replicate || q->compressed ||
				    q->props || q->compress[0])) {
			r = refuse(ferry_err(FERR_INVAL, "token takes no other parameter"), 400, status);
			goto out;
		}
		if (q->intermediate && !q->from[0]) {
			r = refuse(ferry_err(FERR_INVAL, "intermediate=1 needs from"), 400, status);
			goto out;
		}
		if (q->compressed && q->compress[0]) {
			r = refuse(ferry_err(FERR_INVAL, "compressed and compress exclude each other"), 400,
				   status);
			goto out;
		}
	}
	if ((ep == NET_EP_BLOCK || ep == NET_EP_NODE) && !has_hash) {
		r = refuse(ferry_err(FERR_INVAL, "parameter 'hash' is required"), 400, status);
		goto out;
	}
	if (ep == NET_EP_RECV)
		q->need = q->force ? NET_PERM_WRITE : NET_PERM_APPEND;
	else if (ep == NET_EP_ABORT || ep == NET_EP_DESTROY)
		q->need = NET_PERM_WRITE;
	*out = *q;
	r = 0;
out:
	free(q);
	return r;
}
