/* cli/cmd_list.c — list and get: zfs's tables (-H, -p, -o, -s/-S) and
 * --json over the datasets, snapshots and bookmarks of the store. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "http.h"
#include "table.h"

/* ---- rows shared by list and get ----------------------------------------- */

struct cell {
	char *value;
	char *exact;
	int numeric;
};

/* How deep snapshots and bookmarks are listed, as zfs counts: a
 * dataset's snapshots are one level below it, so -d 1 shows the named
 * dataset's snapshots and its children but not theirs. */
struct depthlim {
	int snap_depth; /* snapshots of datasets at relative depth < this; -1: all */
	int base;       /* '/'s in the name of the current walk's root */
	char root[STORE_NAME_MAX + 1]; /* the walk's root when named, else "" */
	int recursive;  /* -r or -d: the root is one of the walk's too */
};

static int slashes(const char *name)
{
	int n = 0;
	for (; *name && *name != '@' && *name != '#'; name++)
		n += *name == '/';
	return n;
}

/* Whether the snapshots and bookmarks of ds are within the limit. */
static int depth_allows_snaps(const struct depthlim *l, const struct store_ds *ds)
{
	return l->snap_depth < 0 || slashes(ds->name) - l->base < l->snap_depth;
}

struct rowset {
	size_t ncols;
	struct cell **rows;
	size_t n, cap;
	char **cols;      /* property names per column */
	int exact;        /* -p */
	int types;        /* 1 << store_ds_type */
	json_t *json;     /* datasets object when --json */
	const char *json_source_mode;
	const char *prefix; /* --prefix: snapshots and bookmarks named so */
	struct depthlim lim;
	size_t nshown;    /* columns -o asked for; the rest only sort */
};

static const char *col_header(const char *prop)
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
		if (!strcmp(map[i].p, prop))
			return map[i].h;
	return NULL;
}

/* Columns zfs right-aligns: sizes and ratios. */
static int numeric_column(const char *prop)
{
	static const char *const nums[] = {
		"used", "available", "avail", "referenced", "refer", "compressratio", "ratio",
		"refcompressratio", "recordsize", "recsize", "volsize", "volblocksize", "volblock",
		"logicalused", "logicalreferenced", "written", "usedbysnapshots", "createtxg",
		"usedbydataset", "usedbychildren",
	};
	if (!strncmp(prop, "written@", 8)) /* its header is the name in capitals, as zfs's */
		return 1;
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
		if (!strcmp(nums[i], prop))
			return 1;
	return 0;
}

static int cell_set(struct cell *c, const char *value, const char *exact, int numeric)
{
	c->value = strdup(value);
	c->exact = strdup(exact);
	c->numeric = numeric;
	return c->value && c->exact ? 0 : ferry_err(FERR_NOMEM, "listing");
}

static void rowset_release(struct rowset *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		for (size_t c = 0; c < rs->ncols; c++) {
			free(rs->rows[i][c].value);
			free(rs->rows[i][c].exact);
		}
		free(rs->rows[i]);
	}
	free(rs->rows);
}

static int rowset_add(struct rowset *rs, struct cell **row)
{
	int grown = VEC_GROW(rs->rows, rs->cap, rs->n, 64, "listing");
	if (grown < 0)
		return grown;
	*row = calloc(rs->ncols, sizeof **row);
	if (!*row)
		return ferry_err(FERR_NOMEM, "listing");
	rs->rows[rs->n++] = *row;
	return 0;
}

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

static json_t *json_source(const struct store_propval *v)
{
	static const char *names[] = {"NONE", "DEFAULT", "LOCAL", "RECEIVED", "INHERITED"};
	json_t *s = json_object();
	json_object_set_new(s, "type", json_string(names[v->source]));
	if (v->source == STORE_SRC_INHERITED)
		json_object_set_new(s, "data", json_string(v->inherited_from));
	else
		json_object_set_new(s, "data", json_object());
	return s;
}

/* The JSON object of ds inside rs->json, created on first use. */
static json_t *json_ds(struct rowset *rs, struct store_pool *p, const struct store_ds *ds)
{
	json_t *o = json_object_get(rs->json, ds->name);
	if (o)
		return o;
	o = json_object();
	char upper[16];
	const char *t = store_ds_type_name(ds->type);
	size_t i;
	for (i = 0; t[i] && i + 1 < sizeof upper; i++)
		upper[i] = (char)(t[i] >= 'a' && t[i] <= 'z' ? t[i] - 32 : t[i]);
	upper[i] = 0;
	json_object_set_new(o, "name", json_string(ds->name));
	json_object_set_new(o, "type", json_string(upper));
	json_object_set_new(o, "pool", json_string(store_pool_name(p)));
	char txg[32];
	snprintf(txg, sizeof txg, "%" PRIu64, ds->createtxg);
	json_object_set_new(o, "createtxg", json_string(txg));
	json_object_set_new(o, "properties", json_object());
	json_object_set_new(rs->json, ds->name, o);
	return o;
}

static void json_prop(struct rowset *rs, struct store_pool *p, const struct store_ds *ds,
		      const struct store_propval *v)
{
	json_t *props = json_object_get(json_ds(rs, p, ds), "properties");
	json_t *o = json_object();
	json_object_set_new(o, "value", json_string(rs->exact ? v->exact : v->value));
	json_object_set_new(o, "source", json_source(v));
	json_object_set_new(props, v->name, o);
}

/* store_prop_get_memo with the row's memo m, but written@SNAP where SNAP
 * does not apply (not an earlier snapshot of that dataset) is "-" for
 * what a walk reaches (zfs prints "-" for it everywhere), so get -r
 * written@SNAP POOL works as zfs's; for the one dataset or snapshot named
 * on the command line without -r or -d it stays the error that says why. */
static int prop_get_walked(struct store_pool *p, const struct store_ds *ds, const char *name,
			   const struct depthlim *lim, struct store_propval *v,
			   struct store_prop_memo *m)
{
	int r = store_prop_get_memo(p, ds, name, v, m);
	if ((r != -FERR_NOENT && r != -FERR_INVAL) || strncmp(name, "written@", 8) ||
	    (!lim->recursive && !strcmp(ds->name, lim->root)))
		return r;
	ferry_err_clear();
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", name);
	snprintf(v->value, sizeof v->value, "-");
	snprintf(v->exact, sizeof v->exact, "-");
	v->source = STORE_SRC_NONE;
	return 0;
}

static int list_one(struct store_pool *p, const struct store_ds *ds, void *arg);

static int list_snap(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct store_ds ds;
	const char *pre = ((struct rowset *)arg)->prefix;
	if (pre && strncmp(s->snapname, pre, strlen(pre)))
		return 0;
	store_snap_to_ds(s, &ds);
	return list_one(p, &ds, arg);
}

static int list_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct store_ds ds;
	const char *pre = ((struct rowset *)arg)->prefix;
	if (pre && strncmp(b->markname, pre, strlen(pre)))
		return 0;
	store_bookmark_to_ds(b, &ds);
	return list_one(p, &ds, arg);
}

/* A dataset's row, then (when snapshots are asked for) its snapshots'. */
static int list_row(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct rowset *rs = arg;
	if (ds->type == STORE_DS_SNAPSHOT || ds->type == STORE_DS_BOOKMARK) {
		/* Only a snapshot or bookmark named on the command line gets
		 * here: shown whatever -t says, as zfs list does. */
		int saved = rs->types, r2;
		rs->types |= 1 << ds->type;
		r2 = list_one(p, ds, arg);
		rs->types = saved;
		return r2;
	}
	int r = list_one(p, ds, arg);
	if (!depth_allows_snaps(&rs->lim, ds))
		return r;
	if (r == 0 && (rs->types & (1 << STORE_DS_SNAPSHOT)))
		r = store_snap_iter(p, ds, list_snap, arg);
	if (r == 0 && (rs->types & (1 << STORE_DS_BOOKMARK)))
		r = store_bookmark_iter(p, ds, list_mark, arg);
	return r;
}

static int list_one(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct rowset *rs = arg;
	struct cell *row;
	struct store_propval *v;
	struct store_prop_memo m = {0};
	int r;
	if (!(rs->types & (1 << ds->type)))
		return 0;
	if (!(v = malloc(sizeof *v)))
		return ferry_err(FERR_NOMEM, "listing");
	if ((r = rowset_add(rs, &row)) < 0)
		goto out;
	for (size_t c = 0; c < rs->ncols; c++) {
		if ((r = prop_get_walked(p, ds, rs->cols[c], &rs->lim, v, &m)) < 0)
			goto out;
		if ((r = cell_set(&row[c], v->value, v->exact, v->numeric)) < 0)
			goto out;
		if (rs->json && c < rs->nshown)
			json_prop(rs, p, ds, v);
	}
out:
	free(v);
	return r;
}

struct sortkey {
	size_t col;
	int desc;
};
static struct sortkey sort_keys[16];
static size_t nsort_keys;

static int row_cmp(const void *a, const void *b)
{
	const struct cell *x = *(struct cell *const *)a, *y = *(struct cell *const *)b;
	for (size_t k = 0; k < nsort_keys; k++) {
		size_t c = sort_keys[k].col;
		int d;
		if (x[c].numeric && y[c].numeric) {
			double dx = strtod(x[c].exact, NULL), dy = strtod(y[c].exact, NULL);
			d = dx < dy ? -1 : dx > dy;
		} else {
			d = strcmp(x[c].exact, y[c].exact);
		}
		if (d)
			return sort_keys[k].desc ? -d : d;
	}
	return 0;
}

static int parse_types(const char *s, int *types)
{
	char **v;
	size_t n;
	if (cli_split_list(s, &v, &n) < 0)
		return -1;
	*types = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v[i], "filesystem") || !strcmp(v[i], "fs"))
			*types |= 1 << STORE_DS_FILESYSTEM;
		else if (!strcmp(v[i], "volume") || !strcmp(v[i], "vol"))
			*types |= 1 << STORE_DS_VOLUME;
		else if (!strcmp(v[i], "snapshot") || !strcmp(v[i], "snap"))
			*types |= 1 << STORE_DS_SNAPSHOT;
		else if (!strcmp(v[i], "bookmark"))
			*types |= 1 << STORE_DS_BOOKMARK;
		else if (!strcmp(v[i], "all"))
			*types |= (1 << STORE_DS_FILESYSTEM) | (1 << STORE_DS_VOLUME) |
				  (1 << STORE_DS_SNAPSHOT) | (1 << STORE_DS_BOOKMARK);
		else {
			cli_free_list(v, n);
			return -1;
		}
	}
	cli_free_list(v, n);
	return 0;
}

static json_t *json_top(const char *command, json_t **datasets)
{
	json_t *top = json_object(), *ver = json_object();
	json_object_set_new(ver, "command", json_string(command));
	json_object_set_new(ver, "vers_major", json_integer(0));
	json_object_set_new(ver, "vers_minor", json_integer(1));
	json_object_set_new(top, "output_version", ver);
	*datasets = json_object();
	json_object_set_new(top, "datasets", *datasets);
	return top;
}

/* Runs fn over each named dataset (or every pool's root when none) down
 * to depth levels (-1: all), setting lim->base to each root's depth;
 * returns an exit code (1 if any target failed). */
static int for_targets(int argc, char **argv, int depth, struct depthlim *lim, const char *verb,
		       store_ds_fn fn, void *arg)
{
	int rc = EXIT_OK, r;
	if (argc == 0) {
		struct store_pool_entry *e = NULL;
		size_t n = 0;
		if ((r = store_registry_list(&e, &n)) < 0)
			return cli_fail(r, "cannot list pools");
		for (size_t i = 0; i < n; i++) {
			struct store_pool *p = NULL;
			struct store_ds ds;
			lim->base = 0;
			lim->root[0] = 0;
			if ((r = store_pool_open(e[i].name, STORE_OPEN_RDONLY, &p)) < 0 ||
			    (r = store_ds_lookup(p, e[i].name, &ds)) < 0 ||
			    (r = store_ds_walk(p, &ds, depth, fn, arg)) < 0)
				rc = cli_fail(r, "cannot open pool '%s'", e[i].name);
			store_pool_close(p);
		}
		free(e);
		return rc;
	}
	for (int i = 0; i < argc; i++) {
		struct store_pool *p = NULL;
		struct store_ds ds;
		if ((r = cli_open_ds(argv[i], STORE_OPEN_RDONLY, verb, &p, &ds)) != EXIT_OK) {
			rc = r;
			continue;
		}
		lim->base = slashes(ds.name);
		snprintf(lim->root, sizeof lim->root, "%s", ds.name);
		/* A snapshot or bookmark has no children to walk. */
		r = ds.type == STORE_DS_SNAPSHOT || ds.type == STORE_DS_BOOKMARK
			    ? fn(p, &ds, arg)
			    : store_ds_walk(p, &ds, depth, fn, arg);
		if (r < 0)
			rc = cli_fail(r, "cannot %s '%s'", verb, argv[i]);
		store_pool_close(p);
	}
	return rc;
}

static const char *default_list_cols = "name,used,available,referenced,source";

struct listopts {
	const char *cols;        /* -o */
	const char *sortcols[16]; /* -s and -S, in order */
	int sortdesc[16];
	size_t nsort;
	int recursive;           /* -r or -d */
	int depth;               /* -d's, or -1 */
	int scripted, json;
};

/* Parses list's options into o and rs (types, -p); returns EXIT_OK or,
 * after printing why, EXIT_USAGE. */
static int list_options(int argc, char **argv, struct listopts *o, struct rowset *rs)
{
	static const struct option lopts[] = {{"json", no_argument, NULL, 'j'},
					      {"prefix", required_argument, NULL, 'P'}, {0, 0, 0, 0}};
	int c;
	o->depth = -1;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "list", "rd:t:o:s:S:Hp", lopts)) != -1) {
		char *end;
		switch (c) {
		case 'r': o->recursive = 1; break;
		case 'd':
			o->depth = (int)strtol(optarg, &end, 10);
			if (*end || o->depth < 0 || !*optarg)
				return cli_usage("bad depth '%s'", optarg);
			o->recursive = 1;
			break;
		case 't':
			if (parse_types(optarg, &rs->types) < 0)
				return cli_usage("bad type list '%s' (filesystem, volume, snapshot, bookmark, all)",
						 optarg);
			break;
		case 'o': o->cols = optarg; break;
		case 's':
		case 'S':
			if (o->nsort == 16)
				return cli_usage("too many sort columns");
			o->sortcols[o->nsort] = optarg;
			o->sortdesc[o->nsort++] = c == 'S';
			break;
		case 'H': o->scripted = 1; break;
		case 'p': rs->exact = 1; break;
		case 'j': o->json = 1; break;
		case 'P': rs->prefix = optarg; break;
		default: return cli_opt_end();
		}
	}
	return EXIT_OK;
}

/* The columns of rs: -o's, then a hidden one for each sort key that is
 * not among them (the same key twice sorts on the same column); fills
 * sort_keys. *nshown is how many are printed: -o's, whatever -s says.
 * Returns EXIT_OK or the exit code of the error it printed. */
static int list_columns(struct rowset *rs, const struct listopts *o, size_t *nshown)
{
	if (cli_split_list(o->cols, &rs->cols, &rs->ncols) < 0)
		return cli_usage("bad column list '%s'", o->cols);
	for (size_t i = 0; i < rs->ncols; i++)
		if (!store_prop_known(rs->cols[i]))
			return cli_fail(ferry_err(FERR_PROP, "invalid property '%s'", rs->cols[i]),
					"cannot list");
	*nshown = rs->ncols;
	size_t cap = rs->ncols;
	nsort_keys = 0;
	for (size_t k = 0; k < o->nsort; k++) {
		size_t i;
		for (i = 0; i < rs->ncols && strcmp(rs->cols[i], o->sortcols[k]); i++)
			;
		if (i == rs->ncols) {
			int r;
			if (!store_prop_known(o->sortcols[k]))
				return cli_fail(ferry_err(FERR_PROP, "invalid property '%s'",
							  o->sortcols[k]), "cannot sort");
			if ((r = VEC_GROW(rs->cols, cap, rs->ncols, 4, "sorting")) < 0)
				return cli_fail(r, "cannot list");
			if (!(rs->cols[rs->ncols] = strdup(o->sortcols[k])))
				return cli_fail(ferry_err(FERR_NOMEM, "sorting"), "cannot list");
			rs->ncols++;
		}
		sort_keys[nsort_keys++] = (struct sortkey){i, o->sortdesc[k]};
	}
	return EXIT_OK;
}

/* Prints the first ncols columns of rs's rows as a table: headers as zfs
 * names them, sizes and ratios right-aligned. rc is the listing's exit
 * code so far; returns it, or EXIT_FAIL after printing why. */
static int list_print(const struct rowset *rs, size_t ncols, int scripted, int named, int rc)
{
	struct table t;
	char (*hdrs)[64] = NULL;
	char **cells = NULL;
	int r;
	if ((r = table_init(&t, ncols)) < 0)
		return cli_fail(r, "cannot list");
	if (!(hdrs = calloc(ncols ? ncols : 1, 64)) ||
	    !(cells = calloc(ncols ? ncols : 1, sizeof *cells))) {
		rc = cli_fail(ferry_err(FERR_NOMEM, "listing"), "cannot list");
		goto out;
	}
	for (size_t i = 0; i < ncols; i++) {
		const char *h = col_header(rs->cols[i]);
		size_t j;
		for (j = 0; !h && rs->cols[i][j] && j + 1 < 64; j++) {
			char ch = rs->cols[i][j];
			hdrs[i][j] = (char)(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
		}
		if (h)
			snprintf(hdrs[i], 64, "%s", h);
		else
			hdrs[i][j] = 0;
		table_header(&t, i, hdrs[i], numeric_column(rs->cols[i]));
	}
	for (size_t i = 0; i < rs->n; i++) {
		for (size_t c = 0; c < ncols; c++)
			cells[c] = rs->exact ? rs->rows[i][c].exact : rs->rows[i][c].value;
		if ((r = table_add(&t, cells)) < 0) {
			rc = cli_fail(r, "cannot list");
			break;
		}
	}
	if (rs->n > 0)
		table_print(&t, stdout, scripted);
	else if (rc == EXIT_OK && !scripted && !named)
		printf("no datasets available\n");
out:
	free(cells);
	table_release(&t);
	free(hdrs);
	return rc;
}

int cmd_list(int argc, char **argv)
{
	struct listopts o;
	struct rowset rs;
	json_t *top = NULL;
	size_t nshown = 0;
	int rc;
	if (cli_http_has_url(argc, argv))
		return cli_http_list(argc, argv); /* cli/http_list.c */
	memset(&o, 0, sizeof o);
	memset(&rs, 0, sizeof rs);
	o.cols = default_list_cols;
	rs.types = (1 << STORE_DS_FILESYSTEM) | (1 << STORE_DS_VOLUME);
	if ((rc = list_options(argc, argv, &o, &rs)) != EXIT_OK)
		return rc;
	if ((rc = list_columns(&rs, &o, &nshown)) != EXIT_OK)
		goto out;
	rs.nshown = nshown;
	if (o.json)
		top = json_top("ferry list", &rs.json);
	/* zfs: with no dataset named, every pool's tree (to -d's depth from
	 * each root); a named one alone unless -r or -d, but its snapshots
	 * when -t asks for them. */
	int named = argc > optind;
	int walk = named && !o.recursive ? 0 : o.depth;
	rs.lim.snap_depth = o.depth >= 0 ? o.depth : o.recursive || !named ? -1 : 1;
	rs.lim.recursive = o.recursive;
	rc = for_targets(argc - optind, argv + optind, walk, &rs.lim, "list", list_row, &rs);
	if (nsort_keys && rs.n > 1) /* qsort of an empty (NULL) array is undefined */
		qsort(rs.rows, rs.n, sizeof *rs.rows, row_cmp);
	if (o.json) {
		json_dumpf(top, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else {
		rc = list_print(&rs, nshown, o.scripted, argc > optind, rc);
	}
out:
	json_decref(top);
	rowset_release(&rs);
	cli_free_list(rs.cols, rs.ncols);
	return rc;
}

/* ---- get ------------------------------------------------------------------ */

struct getctx {
	char **props;
	size_t nprops;
	int all;
	int fields[5]; /* name, property, value, received, source */
	size_t nfields;
	int exact;
	int types;
	int sources;   /* -s: 1 << enum store_prop_source shown; 0: all */
	int recursive;
	struct table *t;
	struct rowset *json;
	struct store_pool *pool;
	const struct store_ds *ds;
	struct depthlim lim;
};

static int get_emit(const struct store_propval *v, void *arg)
{
	struct getctx *g = arg;
	char srcbuf[STORE_NAME_MAX + 32];
	char recv[STORE_USERPROP_VALUE_MAX + 1], recvnice[32];
	char *cells[5];
	int r;
	if (g->sources && !(g->sources & (1 << v->source)))
		return 0;
	if (g->json) {
		json_prop(g->json, g->pool, g->ds, v);
		return 0;
	}
	for (size_t i = 0; i < g->nfields; i++) {
		switch (g->fields[i]) {
		case 0: cells[i] = (char *)g->ds->name; break;
		case 1: cells[i] = (char *)v->name; break;
		case 2: cells[i] = (char *)(g->exact ? v->exact : v->value); break;
		case 3:
			/* zfs's RECEIVED column: the received value, "-" if none */
			if ((r = store_prop_received(g->pool, g->ds, v->name, recv, sizeof recv)) < 0)
				return r;
			cells[i] = r ? recv : (char *)"-";
			if (r && v->numeric && !g->exact && recv[strspn(recv, "0123456789")] == 0 &&
			    *recv) {
				format_nicenum(strtoull(recv, NULL, 10), recvnice, sizeof recvnice, 0);
				cells[i] = recvnice;
			}
			break;
		default: cells[i] = (char *)source_text(v, srcbuf, sizeof srcbuf); break;
		}
	}
	return table_add(g->t, cells);
}

static int get_one(struct store_pool *p, const struct store_ds *ds, void *arg);

static int get_snap(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct store_ds ds;
	store_snap_to_ds(s, &ds);
	return get_one(p, &ds, arg);
}

static int get_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct store_ds ds;
	store_bookmark_to_ds(b, &ds);
	return get_one(p, &ds, arg);
}

/* A dataset's properties, then with -r its snapshots' and bookmarks' (as
 * zfs get -r). */
static int get_ds(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct getctx *g = arg;
	int r = get_one(p, ds, arg);
	int leaf = ds->type == STORE_DS_SNAPSHOT || ds->type == STORE_DS_BOOKMARK ||
		   !depth_allows_snaps(&g->lim, ds);
	if (r == 0 && g->recursive && !leaf && (g->types & (1 << STORE_DS_SNAPSHOT)))
		r = store_snap_iter(p, ds, get_snap, arg);
	if (r == 0 && g->recursive && !leaf && (g->types & (1 << STORE_DS_BOOKMARK)))
		r = store_bookmark_iter(p, ds, get_mark, arg);
	return r;
}

static int get_one(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct getctx *g = arg;
	struct store_propval *v;
	struct store_prop_memo m = {0};
	int r = 0;
	if (!(g->types & (1 << ds->type)))
		return 0;
	g->pool = p;
	g->ds = ds;
	if (g->all)
		return store_prop_all(p, ds, get_emit, g);
	if (!(v = malloc(sizeof *v)))
		return ferry_err(FERR_NOMEM, "getting properties");
	for (size_t i = 0; i < g->nprops; i++)
		if ((r = prop_get_walked(p, ds, g->props[i], &g->lim, v, &m)) < 0 ||
		    (r = get_emit(v, g)) < 0)
			break;
	free(v);
	return r;
}

int cmd_get(int argc, char **argv)
{
	static const struct option lopts[] = {{"json", no_argument, NULL, 'j'}, {0, 0, 0, 0}};
	static const char *fieldnames[] = {"name", "property", "value", "received", "source"};
	static const char *fieldhdr[] = {"NAME", "PROPERTY", "VALUE", "RECEIVED", "SOURCE"};
	static const char *srcnames[] = {"none", "default", "local", "received", "inherited"};
	const char *usage = "usage: ferry get [-r] [-d depth] [-t type] [-s source[,source]...] [-H] "
			    "[-p] [-o all|name,property,value,received,source] [--json] "
			    "PROP[,PROP]...|all DATASET...";
	const char *fields = "name,property,value,source";
	int c, r, rc = EXIT_OK, recursive = 0, depth = -1, scripted = 0, json = 0;
	struct getctx g;
	struct table t;
	struct rowset rs;
	json_t *top = NULL;
	if (cli_http_has_url(argc, argv))
		return cli_http_get(argc, argv); /* cli/http_list.c */
	memset(&g, 0, sizeof g);
	memset(&rs, 0, sizeof rs);
	g.types = (1 << STORE_DS_FILESYSTEM) | (1 << STORE_DS_VOLUME) | (1 << STORE_DS_SNAPSHOT) |
		  (1 << STORE_DS_BOOKMARK);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "get", "rd:t:s:Hpo:", lopts)) != -1) {
		char *end;
		switch (c) {
		case 'r': recursive = 1; break;
		case 'd':
			depth = (int)strtol(optarg, &end, 10);
			if (*end || depth < 0 || !*optarg)
				return cli_usage("bad depth '%s'", optarg);
			recursive = 1;
			break;
		case 't':
			if (parse_types(optarg, &g.types) < 0)
				return cli_usage("bad type list '%s'", optarg);
			break;
		case 's': {
			/* zfs get -s: local, default, inherited, received,
			 * temporary (ferry has no temporary values), none */
			char **sv;
			size_t ns;
			if (cli_split_list(optarg, &sv, &ns) < 0)
				return cli_usage("bad source list '%s'", optarg);
			for (size_t i = 0; i < ns; i++) {
				size_t k;
				for (k = 0; k < 5 && strcmp(sv[i], srcnames[k]); k++)
					;
				if (k == 5 && strcmp(sv[i], "temporary")) {
					cli_free_list(sv, ns);
					return cli_usage("get: bad source '%s' (local, default, inherited, "
							 "received, temporary, none)", optarg);
				}
				g.sources |= k == 5 ? 0 : 1 << k;
			}
			cli_free_list(sv, ns);
			g.sources |= 1 << 8; /* only temporary: nothing, not everything */
			break;
		}
		case 'H': scripted = 1; break;
		case 'p': g.exact = 1; break;
		case 'o': fields = strcmp(optarg, "all") ? optarg : "name,property,value,received,source"; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if (argc - optind < 2)
		return cli_usage("%s", usage);
	char **fv;
	size_t nf;
	if (cli_split_list(fields, &fv, &nf) < 0 || nf > 5)
		return cli_usage("bad field list '%s'", fields);
	for (size_t i = 0; i < nf; i++) {
		int k;
		for (k = 0; k < 5 && strcmp(fv[i], fieldnames[k]); k++)
			;
		if (k == 5) {
			cli_free_list(fv, nf);
			return cli_usage("bad field '%s' (all, name, property, value, received, source)",
					 fields);
		}
		g.fields[g.nfields++] = k;
	}
	cli_free_list(fv, nf);
	const char *plist = argv[optind];
	if (!strcmp(plist, "all")) {
		g.all = 1;
	} else {
		if (cli_split_list(plist, &g.props, &g.nprops) < 0)
			return cli_usage("bad property list '%s'", plist);
		for (size_t i = 0; i < g.nprops; i++)
			if (!store_prop_known(g.props[i])) {
				rc = cli_fail(ferry_err(FERR_PROP, "invalid property '%s'", g.props[i]),
					      "bad property list");
				goto out_props;
			}
	}
	if ((r = table_init(&t, g.nfields)) < 0) {
		rc = cli_fail(r, "get");
		goto out_props;
	}
	for (size_t i = 0; i < g.nfields; i++)
		table_header(&t, i, fieldhdr[g.fields[i]], 0);
	g.t = &t;
	if (json) {
		top = json_top("ferry get", &rs.json);
		rs.exact = g.exact;
		g.json = &rs;
	}
	g.recursive = recursive;
	g.lim.snap_depth = depth;
	g.lim.recursive = recursive;
	rc = for_targets(argc - optind - 1, argv + optind + 1, recursive ? depth : 0, &g.lim, "get",
			 get_ds, &g);
	if (json) {
		json_dumpf(top, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else if (t.nrows) {
		table_print(&t, stdout, scripted);
	}
	json_decref(top);
	table_release(&t);
out_props:
	cli_free_list(g.props, g.nprops);
	return rc;
}
