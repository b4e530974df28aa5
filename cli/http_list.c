/* cli/http_list.c — ferry list, get and holds of a URL: the server's
 * GET /v1/datasets answer (docs/ferry-http.7) printed as the local
 * commands print their rows. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../net/net.h"
#include "../store/store.h"
#include "http.h"
#include "table.h"

/* zfs's column headers where they are not the property name in capitals
 * (as cmd_dataset.c prints them) */
static void col_header(const char *prop, char *out, size_t n)
{
	static const struct { const char *p, *h; } map[] = {
		{"available", "AVAIL"}, {"avail", "AVAIL"}, {"referenced", "REFER"},
		{"refer", "REFER"}, {"compressratio", "RATIO"}, {"ratio", "RATIO"},
		{"refcompressratio", "REFRATIO"}, {"recordsize", "RECSIZE"},
		{"volblocksize", "VOLBLOCK"}, {"logicalused", "LUSED"},
		{"logicalreferenced", "LREFER"}, {"usedbysnapshots", "USEDSNAP"},
		{"usedbydataset", "USEDDS"}, {"usedbychildren", "USEDCHILD"},
		{"compression", "COMPRESS"},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(map[i].p, prop)) {
			snprintf(out, n, "%s", map[i].h);
			return;
		}
	size_t j;
	for (j = 0; prop[j] && j + 1 < n; j++)
		out[j] = (char)(prop[j] >= 'a' && prop[j] <= 'z' ? prop[j] - 32 : prop[j]);
	out[j] = 0;
}

static int numeric_column(const char *prop)
{
	static const char *const nums[] = {
		"used", "available", "avail", "referenced", "refer", "compressratio", "ratio",
		"refcompressratio", "recordsize", "recsize", "volsize", "volblocksize", "volblock",
		"logicalused", "logicalreferenced", "written", "usedbysnapshots", "createtxg",
		"usedbydataset", "usedbychildren",
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (!strcmp(nums[i], prop))
			return 1;
	return 0;
}

/* The local -t words as the protocol's types list. */
static int types_query(const char *t, char *out, size_t n)
{
	char **v;
	size_t cnt, o = 0;
	if (cli_split_list(t, &v, &cnt) < 0)
		return -1;
	out[0] = 0;
	for (size_t i = 0; i < cnt; i++) {
		const char *w = !strcmp(v[i], "fs") ? "filesystem" : !strcmp(v[i], "vol") ? "volume"
			      : !strcmp(v[i], "snap") ? "snapshot" : v[i];
		if (strcmp(w, "filesystem") && strcmp(w, "volume") && strcmp(w, "snapshot") &&
		    strcmp(w, "bookmark") && strcmp(w, "all")) {
			cli_free_list(v, cnt);
			return -1;
		}
		o += (size_t)snprintf(out + o, o < n ? n - o : 0, "%s%s", i ? "," : "", w);
	}
	cli_free_list(v, cnt);
	return o < n ? 0 : -1;
}

/* GET /v1/datasets/NAME for url; *objs is the answer's "objects" (a
 * reference the caller drops), *top the whole answer. Prints errors. */
static int fetch_objects(const struct http_conn_opts *co, const char *url, int depth,
			 const char *types, json_t **top)
{
	struct net_client *cl = NULL;
	char name[STORE_NAME_MAX + 1], q[128];
	struct fbuf path;
	long status = 0;
	int r, rc = EXIT_FAIL;
	*top = NULL;
	if ((r = http_connect(co, url, name, sizeof name, &cl)) != 0)
		return r;
	fbuf_init(&path, 8192);
	snprintf(q, sizeof q, "?depth=%d&types=%s", depth, types);
	if ((r = fbuf_printf(&path, "/v1/datasets/")) < 0 || (r = net_pct_encode(&path, name)) < 0 ||
	    (r = fbuf_printf(&path, "%s", q)) < 0) {
		rc = cli_fail(r, "cannot list '%s'", url);
		goto out;
	}
	if ((r = http_json(cl, "GET", (const char *)path.data, &status, top)) < 0) {
		rc = cli_fail(r, "cannot list '%s'", url);
		goto out;
	}
	if (status != 200 || !json_is_array(json_object_get(*top, "objects"))) {
		char m[1024];
		http_answer_msg(status, *top, m, sizeof m);
		json_decref(*top);
		*top = NULL;
		rc = cli_fail(ferry_err(FERR_IO, "%s", m), "cannot list '%s'", url);
		goto out;
	}
	rc = EXIT_OK;
out:
	fbuf_release(&path);
	net_client_free(cl);
	return rc;
}

static const char *prop_field(json_t *obj, const char *prop, const char *field)
{
	if (!strcmp(prop, "name"))
		return json_string_value(json_object_get(obj, "name"));
	json_t *p = json_object_get(json_object_get(obj, "properties"), prop);
	const char *v = json_string_value(json_object_get(p, field));
	return v ? v : "-";
}

int cli_http_list(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, HTTP_LONG_OPTS, {0, 0, 0, 0}};
	const char *usage = "usage: ferry list [-r] [-d depth] [-t type] [-o cols] [-H] [-p] [--json] "
			    "[--token-file FILE] [--cacert FILE] URL...";
	const char *cols = "name,used,available,referenced,source", *types = "filesystem,volume";
	struct http_conn_opts co;
	char tq[128];
	int c, rc = EXIT_OK, depth = 0, scripted = 0, exact = 0, json = 0, r;
	char **cv = NULL;
	size_t ncols = 0;
	memset(&co, 0, sizeof co);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "list", "rd:t:o:s:S:Hp", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		char *end;
		switch (c) {
		case 'r': if (!depth) depth = -1; break;
		case 'd':
			depth = (int)strtol(optarg, &end, 10);
			if (*end || depth < 0 || !*optarg)
				return cli_usage("bad depth '%s'", optarg);
			break;
		case 't': types = optarg; break;
		case 'o': cols = optarg; break;
		case 's':
		case 'S': return cli_usage("list: -s and -S are not for a URL");
		case 'H': scripted = 1; break;
		case 'p': exact = 1; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if (optind == argc)
		return cli_usage("%s", usage);
	for (int i = optind; i < argc; i++)
		if (!net_is_url(argv[i]))
			return cli_usage("list: give URLs or local names, not both ('%s')", argv[i]);
	if (types_query(types, tq, sizeof tq) < 0)
		return cli_usage("bad type list '%s' (filesystem, volume, snapshot, bookmark, all)", types);
	if (cli_split_list(cols, &cv, &ncols) < 0)
		return cli_usage("bad column list '%s'", cols);
	struct table t;
	char (*hdrs)[64] = calloc(ncols, 64);
	char **cells = calloc(ncols, sizeof *cells);
	if (!hdrs || !cells || (r = table_init(&t, ncols)) < 0) {
		free(hdrs);
		free(cells);
		cli_free_list(cv, ncols);
		return cli_fail(-FERR_NOMEM, "list");
	}
	for (size_t i = 0; i < ncols; i++) {
		col_header(cv[i], hdrs[i], 64);
		table_header(&t, i, hdrs[i], numeric_column(cv[i]));
	}
	for (int i = optind; i < argc; i++) {
		json_t *top = NULL, *o;
		size_t k;
		if ((r = fetch_objects(&co, argv[i], depth, tq, &top)) != EXIT_OK) {
			rc = r;
			continue;
		}
		if (json) {
			json_dumpf(top, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
		}
		json_array_foreach(json_object_get(top, "objects"), k, o) {
			for (size_t j = 0; j < ncols; j++)
				cells[j] = (char *)prop_field(o, cv[j], exact ? "exact" : "value");
			if (!json && table_add(&t, cells) < 0)
				rc = cli_fail(-FERR_NOMEM, "list");
		}
		json_decref(top);
	}
	if (!json && t.nrows)
		table_print(&t, stdout, scripted);
	table_release(&t);
	free(hdrs);
	free(cells);
	cli_free_list(cv, ncols);
	return rc;
}

int cli_http_get(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, HTTP_LONG_OPTS, {0, 0, 0, 0}};
	static const char *fieldnames[] = {"name", "property", "value", "source"};
	static const char *fieldhdr[] = {"NAME", "PROPERTY", "VALUE", "SOURCE"};
	const char *usage = "usage: ferry get [-r] [-d depth] [-t type] [-H] [-p] "
			    "[-o name,property,value,source] [--json] PROP[,PROP]...|all URL...";
	const char *fields = "name,property,value,source", *types = NULL;
	struct http_conn_opts co;
	int fv[4], c, r, rc = EXIT_OK, depth = 0, recursive = 0, scripted = 0, exact = 0, json = 0;
	size_t nf = 0;
	char tq[128];
	memset(&co, 0, sizeof co);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "get", "rd:t:Hpo:", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		char *end;
		switch (c) {
		case 'r': recursive = 1; if (!depth) depth = -1; break;
		case 'd':
			depth = (int)strtol(optarg, &end, 10);
			if (*end || depth < 0 || !*optarg)
				return cli_usage("bad depth '%s'", optarg);
			recursive = 1;
			break;
		case 't': types = optarg; break;
		case 'H': scripted = 1; break;
		case 'p': exact = 1; break;
		case 'o': fields = optarg; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if (argc - optind < 2)
		return cli_usage("%s", usage);
	for (int i = optind + 1; i < argc; i++)
		if (!net_is_url(argv[i]))
			return cli_usage("get: give URLs or local names, not both ('%s')", argv[i]);
	{
		char **v;
		size_t n;
		if (cli_split_list(fields, &v, &n) < 0 || n > 4)
			return cli_usage("bad field list '%s'", fields);
		for (size_t i = 0; i < n; i++) {
			int k;
			for (k = 0; k < 4 && strcmp(v[i], fieldnames[k]); k++)
				;
			if (k == 4) {
				cli_free_list(v, n);
				return cli_usage("bad field '%s' (name, property, value, source)", fields);
			}
			fv[nf++] = k;
		}
		cli_free_list(v, n);
	}
	/* as the local get: the named objects, and with -r what lies below */
	if (types_query(types ? types : recursive ? "all" : "filesystem,volume", tq, sizeof tq) < 0)
		return cli_usage("bad type list '%s'", types);
	char **props = NULL;
	size_t np = 0;
	int all = !strcmp(argv[optind], "all");
	if (!all && cli_split_list(argv[optind], &props, &np) < 0)
		return cli_usage("bad property list '%s'", argv[optind]);
	struct table t;
	if ((r = table_init(&t, nf)) < 0) {
		cli_free_list(props, np);
		return cli_fail(r, "get");
	}
	for (size_t i = 0; i < nf; i++)
		table_header(&t, i, fieldhdr[fv[i]], 0);
	for (int i = optind + 1; i < argc; i++) {
		json_t *top = NULL, *o;
		size_t k;
		if ((r = fetch_objects(&co, argv[i], recursive ? depth : 0, tq, &top)) != EXIT_OK) {
			rc = r;
			continue;
		}
		if (json) {
			json_dumpf(top, stdout, JSON_INDENT(2));
			fputc('\n', stdout);
			json_decref(top);
			continue;
		}
		json_array_foreach(json_object_get(top, "objects"), k, o) {
			json_t *pr = json_object_get(o, "properties"), *pv;
			const char *pname;
			size_t n = all ? json_object_size(pr) : np, j = 0;
			void *it = all ? json_object_iter(pr) : NULL;
			for (; j < n; j++) {
				if (all) {
					pname = json_object_iter_key(it);
					pv = json_object_iter_value(it);
					it = json_object_iter_next(pr, it);
				} else {
					pname = props[j];
					pv = json_object_get(pr, pname);
				}
				char *cells[4];
				const char *val = json_string_value(json_object_get(pv, exact ? "exact" : "value"));
				const char *src = json_string_value(json_object_get(pv, "source"));
				for (size_t f = 0; f < nf; f++)
					cells[f] = (char *)(fv[f] == 0 ? json_string_value(json_object_get(o, "name"))
							    : fv[f] == 1 ? pname : fv[f] == 2 ? (val ? val : "-")
							    : (src ? src : "-"));
				if (table_add(&t, cells) < 0)
					rc = cli_fail(-FERR_NOMEM, "get");
			}
		}
		json_decref(top);
	}
	if (t.nrows)
		table_print(&t, stdout, scripted);
	table_release(&t);
	cli_free_list(props, np);
	return rc;
}

/* The holds of the snapshots in a GET /v1/datasets answer, appended to
 * *v; with snapname, only of the snapshots of that name (holds -r). */
static int holds_of(json_t *top, const char *snapname, struct store_hold **v, size_t *n,
		    size_t *cap)
{
	json_t *o;
	size_t k;
	json_array_foreach(json_object_get(top, "objects"), k, o) {
		const char *name = json_string_value(json_object_get(o, "name")), *at, *tag;
		json_t *h = json_object_get(o, "holds"), *t;
		if (!name || !(at = strchr(name, '@')) || (snapname && strcmp(at + 1, snapname)))
			continue;
		json_object_foreach(h, tag, t) {
			int r = VEC_GROW(*v, *cap, *n, 8, "listing holds");
			if (r < 0)
				return r;
			struct store_hold *e = &(*v)[(*n)++];
			memset(e, 0, sizeof *e);
			snprintf(e->snapshot, sizeof e->snapshot, "%s", name);
			snprintf(e->tag, sizeof e->tag, "%s", tag);
			json_int_t secs = json_integer_value(t);
			e->creation_ns = secs > 0 ? (uint64_t)secs * 1000000000u : 0;
		}
	}
	return 0;
}

int cli_http_holds(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, HTTP_LONG_OPTS, {0, 0, 0, 0}};
	const char *usage = "usage: ferry holds [-r] [-H] [-p] [--json] [--token-file FILE] "
			    "[--cacert FILE] URL@SNAP...";
	struct http_conn_opts co;
	struct store_hold *v = NULL;
	size_t n = 0, cap = 0;
	int c, r, rc = EXIT_OK, recursive = 0, scripted = 0, exact = 0, json = 0;
	memset(&co, 0, sizeof co);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "holds", "rHp", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		switch (c) {
		case 'r': recursive = 1; break;
		case 'H': scripted = 1; break;
		case 'p': exact = 1; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if (optind == argc)
		return cli_usage("%s", usage);
	for (int i = optind; i < argc; i++)
		if (!net_is_url(argv[i]) || !strrchr(argv[i], '@'))
			return cli_usage("holds: give snapshot URLs (URL/DATASET@SNAP) or local "
					 "names, not both ('%s')", argv[i]);
	for (int i = optind; i < argc; i++) {
		json_t *top = NULL;
		/* the named snapshot first: a missing one is an error, as locally */
		if ((r = fetch_objects(&co, argv[i], 0, "snapshot", &top)) != EXIT_OK) {
			rc = r;
			continue;
		}
		if (!recursive) {
			r = holds_of(top, NULL, &v, &n, &cap);
		} else {
			/* -r: the snapshot of that name in every dataset below */
			char ds[8192];
			const char *at = strrchr(argv[i], '@');
			json_decref(top);
			top = NULL;
			if ((size_t)(at - argv[i]) >= sizeof ds) {
				rc = cli_usage("holds: URL too long");
				continue;
			}
			memcpy(ds, argv[i], (size_t)(at - argv[i]));
			ds[at - argv[i]] = 0;
			if ((r = fetch_objects(&co, ds, -1, "snapshot", &top)) != EXIT_OK) {
				rc = r;
				continue;
			}
			r = holds_of(top, at + 1, &v, &n, &cap);
		}
		json_decref(top);
		if (r < 0)
			rc = cli_fail(r, "cannot list holds of '%s'", argv[i]);
	}
	cli_holds_print(v, n, json, exact, scripted);
	free(v);
	return rc;
}
