/* cli/cmd_hold.c — hold, release and holds: zfs's verbs, options, messages
 * and output format over store/hold.c. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../store/store.h"
#include "cli.h"
#include "http.h"

/* The snapshots a hold command names: each SNAP and, with -r, the
 * snapshot of the same name in every descendant that has one (zfs hold
 * -r). A missing named snapshot is an error, a missing descendant one is
 * not. Fills a malloc'd array the caller frees. */
static int collect(struct store_pool *p, const char *name, int recursive, struct store_snap **out,
		   size_t *n)
{
	int r;
	if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	/* '%' and ',' select ranges and lists for destroy; a hold names one */
	if (strpbrk(strchr(name, '@'), "%,"))
		return ferry_err(FERR_NAME, "'%s' is not one snapshot", name);
	return store_snap_select(p, name, recursive, out, n);
}

/* The pool part of name into out (n bytes). */
static void pool_of(const char *name, char *out, size_t n)
{
	snprintf(out, n, "%.*s", (int)strcspn(name, "/@#"), name);
}

/* hold [-r] TAG SNAP... and release [-r] TAG SNAP...: the snapshots of one
 * pool all or nothing, in one transaction, as zfs does; several pools one
 * after another. */
static int hold_or_release(int argc, char **argv, int release)
{
	const char *usage = release ? "usage: ferry release [-r] TAG SNAPSHOT..."
				    : "usage: ferry hold [-r] TAG SNAPSHOT...";
	char pool[STORE_NAME_MAX + 1], other[STORE_NAME_MAX + 1];
	int c, r, recursive = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, argv[0], "r", NULL)) != -1) {
		if (c == 'r')
			recursive = 1;
		else
			return cli_opt_end();
	}
	if (argc - optind < 2)
		return cli_usage("%s", usage);
	const char *tag = argv[optind];
	if ((r = store_hold_tag_check(tag)) < 0)
		return cli_fail(r, "cannot %s '%s'", release ? "release hold" : "hold", tag);
	char *done = calloc((size_t)argc, 1);
	if (!done)
		return cli_fail(-FERR_NOMEM, "hold");
	for (int i = optind + 1; i < argc; i++) {
		struct store_pool *p = NULL;
		struct store_snap *all = NULL;
		size_t nall = 0, cap = 0;
		if (done[i])
			continue;
		pool_of(argv[i], pool, sizeof pool);
		if ((r = store_pool_open_for(argv[i], 0, &p)) < 0) {
			free(done);
			return cli_fail(r, release ? "cannot release hold from snapshot '%s'"
						   : "cannot hold snapshot '%s'", argv[i]);
		}
		for (int j = i; j < argc; j++) {
			struct store_snap *list = NULL;
			size_t n = 0;
			pool_of(argv[j], other, sizeof other);
			if (done[j] || strcmp(pool, other))
				continue;
			done[j] = 1;
			if ((r = collect(p, argv[j], recursive, &list, &n)) < 0) {
				free(all);
				store_pool_close(p);
				free(done);
				return cli_fail(r, release ? "cannot release hold from snapshot '%s'"
							   : "cannot hold snapshot '%s'", argv[j]);
			}
			for (size_t k = 0; k < n && r == 0; k++) {
				if ((r = VEC_GROW(all, cap, nall, 8, "holding snapshots")) == 0)
					all[nall++] = list[k];
			}
			free(list);
			if (r < 0)
				break;
		}
		/* the store's message names the snapshot (with -r, maybe a child) */
		if (r == 0)
			r = release ? store_hold_release(p, all, nall, tag)
				    : store_hold_add(p, all, nall, tag);
		free(all);
		store_pool_close(p);
		if (r < 0) {
			free(done);
			return cli_fail(r, release ? "cannot release hold" : "cannot hold");
		}
	}
	free(done);
	return EXIT_OK;
}

int cmd_hold(int argc, char **argv)
{
	return hold_or_release(argc, argv, 0);
}

int cmd_release(int argc, char **argv)
{
	return hold_or_release(argc, argv, 1);
}

struct holds_out {
	struct store_hold *v;
	size_t n, cap;
};

static int holds_cb(struct store_pool *p, const struct store_hold *h, void *arg)
{
	struct holds_out *o = arg;
	int r = VEC_GROW(o->v, o->cap, o->n, 8, "listing holds");
	if (r < 0)
		return r;
	o->v[o->n++] = *h;
	return 0;
}

/* zfs holds's time column: local time, "%a %b %e %H:%M %Y"; -p: seconds. */
static void hold_time(const struct store_hold *h, int exact, char *buf, size_t n)
{
	time_t t = (time_t)(h->creation_ns / 1000000000u);
	struct tm tm;
	if (exact) {
		snprintf(buf, n, "%lld", (long long)t);
		return;
	}
	localtime_r(&t, &tm);
	strftime(buf, n, "%a %b %e %H:%M %Y", &tm);
}

void cli_holds_print(const struct store_hold *v, size_t n, int json, int exact, int scripted)
{
	char ts[64];
	if (json) {
		json_t *top = json_object(), *ver = json_object(), *all = json_object();
		json_object_set_new(ver, "command", json_string("ferry holds"));
		json_object_set_new(ver, "vers_major", json_integer(0));
		json_object_set_new(ver, "vers_minor", json_integer(1));
		json_object_set_new(top, "output_version", ver);
		json_object_set_new(top, "holds", all);
		for (size_t i = 0; i < n; i++) {
			json_t *s = json_object_get(all, v[i].snapshot), *tags;
			if (!s) {
				s = json_object();
				json_object_set_new(s, "name", json_string(v[i].snapshot));
				json_object_set_new(s, "holds", json_object());
				json_object_set_new(all, v[i].snapshot, s);
			}
			tags = json_object_get(s, "holds");
			if (exact) {
				json_object_set_new(tags, v[i].tag,
						    json_integer((json_int_t)(v[i].creation_ns /
									      1000000000u)));
			} else {
				hold_time(&v[i], 0, ts, sizeof ts);
				json_object_set_new(tags, v[i].tag, json_string(ts));
			}
		}
		json_dumpf(top, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(top);
		return;
	}
	/* zfs: columns as wide as their widest cell (the header not
	 * counted), two spaces apart; the header even with no hold */
	int nw = 0, tw = 0;
	for (size_t i = 0; i < n; i++) {
		if ((int)strlen(v[i].snapshot) > nw)
			nw = (int)strlen(v[i].snapshot);
		if ((int)strlen(v[i].tag) > tw)
			tw = (int)strlen(v[i].tag);
	}
	if (!scripted)
		printf("%-*s  %-*s  %s\n", nw, "NAME", tw, "TAG", "TIMESTAMP");
	for (size_t i = 0; i < n; i++) {
		hold_time(&v[i], exact, ts, sizeof ts);
		if (scripted)
			printf("%s\t%s\t%s\n", v[i].snapshot, v[i].tag, ts);
		else
			printf("%-*s  %-*s  %s\n", nw, v[i].snapshot, tw, v[i].tag, ts);
	}
}

int cmd_holds(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	const char *usage = "usage: ferry holds [-r] [-H] [-p] [--json] SNAPSHOT... | ferry holds ... URL@SNAP...";
	struct holds_out o = {0};
	int c, r, recursive = 0, scripted = 0, exact = 0, json = 0, rc = EXIT_OK;
	if (cli_http_has_url(argc, argv))
		return cli_http_holds(argc, argv); /* cli/http_list.c */
	optind = 1;
	while ((c = cli_getopt(argc, argv, "holds", "rHp", lo)) != -1) {
		switch (c) {
		case 'r': recursive = 1; break;
		case 'H': scripted = 1; break;
		case 'p': exact = 1; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if (optind >= argc)
		return cli_usage("%s", usage);
	for (int i = optind; i < argc; i++) {
		struct store_pool *p = NULL;
		struct store_snap *list = NULL;
		size_t n = 0;
		r = store_pool_open_for(argv[i], STORE_OPEN_RDONLY, &p);
		if (r == 0)
			r = collect(p, argv[i], recursive, &list, &n);
		for (size_t k = 0; r == 0 && k < n; k++)
			r = store_hold_iter(p, &list[k], holds_cb, &o);
		free(list);
		store_pool_close(p);
		if (r < 0) {
			/* zfs holds goes on with the next name, and fails at the end */
			rc = cli_fail(r, "cannot list holds of '%s'", argv[i]);
			ferry_err_clear();
		}
	}
	cli_holds_print(o.v, o.n, json, exact, scripted);
	free(o.v);
	return rc;
}
