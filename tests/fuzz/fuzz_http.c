/* tests/fuzz/fuzz_http.c — libFuzzer target for the request side of
 * docs/ferry-http.7 (net/request.c, net/token.c): what ferry serve parses
 * from a client before it touches a pool.
 *
 * Input, in lines: "METHOD PATH[?QUERY]", then the Authorization header's
 * value, then the rest is the text of a tokens file. The query is split
 * as libmicrohttpd splits it ('&' between parameters, the first '=' in
 * each; none: no value), raw, as the server hands it to net_req_parse.
 *
 * Checks (any violation abort()s):
 *  - net_req_parse returns 0 or an error with a status the page lists;
 *    what it accepts is a name without control bytes, NUL, empty, '.' or
 *    '..' components, whose dataset part is a prefix of it, with a known
 *    endpoint and permission;
 *  - percent coding: whatever decodes, encoded and decoded again, is the
 *    same bytes;
 *  - net_url_split of "https://h/" + PATH agrees with that decoding;
 *  - a tokens file that parses looks tokens up and scopes names without
 *    reading out of bounds; a token's scope covers its own name;
 *  - an error body is one line of JSON ending in one newline. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

static void check_name(const char *n)
{
	size_t l = strlen(n);
	check(l > 0 && l <= NET_NAME_MAX);
	for (size_t i = 0; i < l; i++)
		check((unsigned char)n[i] >= 0x20 && (unsigned char)n[i] <= 0x7e);
	check(n[0] != '/' && !strstr(n, "//"));
	const char *c = n;
	for (;;) {
		size_t cl = strcspn(c, "/@#");
		check(cl > 0);
		check(!(cl == 1 && c[0] == '.') && !(cl == 2 && c[0] == '.' && c[1] == '.'));
		if (!c[cl])
			break;
		c += cl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	/* a NUL ends a C string: the HTTP layer never hands one over */
	char *line1 = buf, *line2 = NULL, *rest = NULL;
	char *nl = memchr(buf, '\n', size);
	if (nl) {
		*nl = 0;
		line2 = nl + 1;
		char *nl2 = strchr(line2, '\n');
		if (nl2) {
			*nl2 = 0;
			rest = nl2 + 1;
		}
	}
	char *method = line1, *path = strchr(line1, ' ');
	if (path)
		*path++ = 0;
	else
		path = (char *)"/v1/pools";
	struct net_arg args[64];
	size_t nargs = 0;
	char *q = strchr(path, '?');
	if (q) {
		*q++ = 0;
		while (nargs < 64) {
			char *amp = strchr(q, '&');
			if (amp)
				*amp = 0;
			if (*q) {
				char *eq = strchr(q, '=');
				if (eq)
					*eq++ = 0;
				args[nargs].key = q;
				args[nargs].value = eq;
				nargs++;
			}
			if (!amp)
				break;
			q = amp + 1;
		}
	}

	struct net_req *req = malloc(sizeof *req);
	unsigned status = 0;
	const char *allow = NULL;
	int r = net_req_parse(method, path, args, nargs, req, &status, &allow);
	if (r == 0) {
		check(req->ep >= NET_EP_POOLS && req->ep <= NET_EP_DESTROY);
		check(req->need >= NET_PERM_READ && req->need <= NET_PERM_WRITE);
		if (req->ep != NET_EP_POOLS) {
			check_name(req->name);
			size_t dl = strlen(req->dataset);
			check(dl > 0 && !strncmp(req->name, req->dataset, dl) &&
			      (req->name[dl] == 0 || req->name[dl] == '@' || req->name[dl] == '#'));
			check(net_scope_covers(req->dataset, req->name));
		}
		check(req->depth >= -1);
		check(!(req->token[0] && (req->from[0] || req->compress[0])));
	} else {
		check(status == 400 || status == 404 || status == 405 || status == 413 ||
		      status == 500);
		check((status == 405) == (allow != NULL));
	}

	/* percent coding round trip */
	char dec[NET_NAME_MAX + 1], dec2[NET_NAME_MAX + 1];
	if (net_pct_decode(path, strlen(path), dec, sizeof dec) == 0) {
		struct fbuf e;
		fbuf_init(&e, 4 * sizeof dec);
		check(net_pct_encode(&e, dec) == 0);
		check(net_pct_decode((const char *)e.data, e.len, dec2, sizeof dec2) == 0);
		check(!strcmp(dec, dec2));
		fbuf_release(&e);
		char url[NET_LINE_MAX + 32], base[512], name[NET_NAME_MAX + 1];
		snprintf(url, sizeof url, "https://h/%s", path[0] == '/' ? path + 1 : path);
		if (net_url_split(url, base, sizeof base, name, sizeof name) == 0)
			check(!strcmp(base, "https://h") &&
			      !strcmp(name, path[0] == '/' ? dec + (dec[0] == '/') : dec));
	}

	/* tokens */
	if (rest) {
		struct net_tokens t;
		if (net_tokens_parse(rest, strlen(rest), &t) == 0) {
			const struct net_token *k = net_tokens_find(&t, line2);
			check(!k || (k >= t.v && k < t.v + t.n));
			for (size_t i = 0; i < t.n; i++) {
				check(t.v[i].perm >= NET_PERM_READ && t.v[i].perm <= NET_PERM_WRITE);
				check(net_scope_covers(t.v[i].scope, t.v[i].scope));
				if (r == 0)
					(void)net_scope_covers(t.v[i].scope, req->name);
			}
			net_tokens_release(&t);
		}
	}

	/* the error body of whatever message */
	struct fbuf jb;
	fbuf_init(&jb, 1 << 16);
	check(net_json_error(&jb, status ? status : 400, path) == 0);
	check(jb.len > 0 && jb.data[jb.len - 1] == '\n' && memchr(jb.data, '\n', jb.len) ==
	      jb.data + jb.len - 1);
	for (size_t i = 0; i < jb.len - 1; i++)
		check(jb.data[i] >= 0x20 && jb.data[i] < 0x7f);
	fbuf_release(&jb);
	free(req);
	free(buf);
	return 0;
}
