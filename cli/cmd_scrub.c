/* cli/cmd_scrub.c — `ferry scrub`, and the scrub's part of `pool status`:
 * zpool's words ("scan: scrub repaired 0B in 00:00:05 with 0 errors on
 * ...", "errors: Permanent errors have been detected in the following
 * files:"), the files as DATASET@SNAP:/PATH. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "../net/net.h"
#include "../scrub/scrub.h"
#include "../store/store.h"
#include "cli.h"
#include "http.h"

/* zpool's secs_to_dhms: "00:00:05", "2 days 01:00:00" */
static void fmt_dhms(uint64_t ns, char *buf, size_t n)
{
	uint64_t s = ns / 1000000000ull;
	uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
	if (d)
		snprintf(buf, n, "%" PRIu64 " days %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, d, h, m,
			 s % 60);
	else
		snprintf(buf, n, "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, h, m, s % 60);
}

/* ctime's text without its newline */
static void fmt_when(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;
	if (!localtime_r(&t, &tm) || !strftime(buf, n, "%a %b %e %H:%M:%S %Y", &tm))
		snprintf(buf, n, "%lld", (long long)t);
}

static const char *kind_name(int kind)
{
	switch (kind) {
	case STORE_SCRUB_BLOCK: return "block";
	case STORE_SCRUB_NODE: return "node";
	case STORE_SCRUB_NOBLOCK: return "missing block";
	case STORE_SCRUB_NONODE: return "missing node";
	case STORE_SCRUB_PACK: return "pack";
	case STORE_SCRUB_SPACE: return "space";
	case STORE_SCRUB_RECORD: return "record";
	default: return "unknown";
	}
}

/* One damage in words: "block 1a2b... in pack 'P' at offset N: why". */
static void fmt_damage(const struct store_scrub_err *e, char *buf, size_t n)
{
	char hex[FERRY_HASH_HEX] = "";
	if (e->has_hash)
		hash_to_hex(e->hash, hex);
	if (e->kind == STORE_SCRUB_BLOCK)
		snprintf(buf, n, "block %.16s in pack '%s' at offset %lld is damaged: %s", hex,
			 e->pack, (long long)e->offset, e->detail);
	else if (e->kind == STORE_SCRUB_NODE || e->kind == STORE_SCRUB_NONODE)
		snprintf(buf, n, "node %.16s is %s: %s", hex,
			 e->kind == STORE_SCRUB_NODE ? "damaged" : "missing", e->detail);
	else if (e->kind == STORE_SCRUB_RECORD)
		snprintf(buf, n, "record in pack '%s' at offset %lld is damaged: %s", e->pack,
			 (long long)e->offset, e->detail);
	else if (e->kind == STORE_SCRUB_NOBLOCK)
		snprintf(buf, n, "block %.16s is missing: %s", hex, e->detail);
	else
		snprintf(buf, n, "%s", e->detail);
}

/* ---- the error log, loaded for printing ------------------------------------------ */

struct ulist {
	int64_t err_id;
	char *name; /* "tank/fs@a:/sub/numbers" */
};
struct report {
	struct store_scrub_err *e;
	size_t ne, cape;
	struct ulist *u;
	size_t nu, capu;
};

static int rep_err(void *arg, const struct store_scrub_err *e)
{
	struct report *rp = arg;
	int r = VEC_GROW(rp->e, rp->cape, rp->ne, 16, "listing errors");
	if (r < 0)
		return r;
	rp->e[rp->ne++] = *e;
	return 0;
}

static int rep_user(void *arg, int64_t err_id, const char *snap, const char *path)
{
	struct report *rp = arg;
	int r = VEC_GROW(rp->u, rp->capu, rp->nu, 16, "listing errors");
	if (r < 0)
		return r;
	size_t n = strlen(snap) + strlen(path) + 2;
	char *s = malloc(n);
	if (!s)
		return ferry_err(FERR_NOMEM, "listing errors");
	snprintf(s, n, "%s%s%s", snap, *path ? ":" : "", path);
	rp->u[rp->nu].err_id = err_id;
	rp->u[rp->nu++].name = s;
	return 0;
}

static void report_release(struct report *rp)
{
	for (size_t i = 0; i < rp->nu; i++)
		free(rp->u[i].name);
	free(rp->u);
	free(rp->e);
}

static int report_load(struct store_pool *p, struct report *rp)
{
	int r;
	memset(rp, 0, sizeof *rp);
	if ((r = store_scrub_err_iter(p, rep_err, rp)) < 0 ||
	    (r = store_scrub_users_iter(p, rep_user, rp)) < 0)
		report_release(rp);
	return r;
}

static size_t users_count(const struct report *rp, int64_t id)
{
	size_t n = 0;
	for (size_t i = 0; i < rp->nu; i++)
		n += rp->u[i].err_id == id;
	return n;
}

/* The "scan:" line (and zpool's second and third lines while one runs or
 * is paused). */
static void print_scan(struct store_pool *p, const struct store_scrub_state *st)
{
	char a[64], b[64], c[32], d[32];
	int running = store_scrub_running(p);
	if (running < 0) {
		ferry_err_clear();
		running = 0;
	}
	switch (st->state) {
	case STORE_SCRUB_NONE:
		printf("  scan: none requested\n");
		return;
	case STORE_SCRUB_FINISHED:
		format_nicenum(st->repaired, c, sizeof c, 1);
		fmt_dhms(st->elapsed_ns, a, sizeof a);
		fmt_when(st->end_ns, b, sizeof b);
		printf("  scan: scrub repaired %s in %s with %" PRIu64 " errors on %s\n", c, a,
		       st->errors, b);
		return;
	case STORE_SCRUB_PAUSED:
		fmt_when(st->end_ns, a, sizeof a);
		fmt_when(st->start_ns, b, sizeof b);
		printf("  scan: scrub paused since %s\n\tscrub started on %s\n", a, b);
		break;
	default:
		fmt_when(st->start_ns, a, sizeof a);
		if (running)
			printf("  scan: scrub in progress since %s\n", a);
		else
			printf("  scan: scrub interrupted (started on %s); 'ferry scrub %s'"
			       " continues it\n", a, store_pool_name(p));
		break;
	}
	format_nicenum(st->bytes, c, sizeof c, 1);
	printf("\t%s scanned, %" PRIu64 " blocks, %" PRIu64 " errors so far\n", c, st->blocks,
	       st->errors);
	(void)d;
}

/* 1 when u is a user of a damaged record in a pack (not of a damage of
 * the data itself). */
static int user_of_record(const struct report *rp, const struct ulist *u)
{
	for (size_t i = 0; i < rp->ne; i++)
		if (rp->e[i].id == u->err_id)
			return rp->e[i].kind == STORE_SCRUB_RECORD;
	return 0;
}

/* The users of record damages (rec) or of the others, each name once. */
static void print_users(const struct report *rp, int rec)
{
	const char *last = NULL;
	/* sorted by name already */
	for (size_t i = 0; i < rp->nu; i++) {
		if (user_of_record(rp, &rp->u[i]) != rec)
			continue;
		if (!last || strcmp(rp->u[i].name, last))
			printf("        %s\n", rp->u[i].name);
		last = rp->u[i].name;
	}
}

/* The "errors:" part: the files, and with verbose every damage. */
static void print_errors(const struct report *rp, int verbose, const char *pool)
{
	char line[512];
	if (!rp->ne) {
		printf("errors: No known data errors\n");
		return;
	}
	size_t nofile = 0, nperm = 0, nrec = 0;
	for (size_t i = 0; i < rp->ne; i++)
		nofile += !users_count(rp, rp->e[i].id);
	for (size_t i = 0; i < rp->nu; i++)
		*(user_of_record(rp, &rp->u[i]) ? &nrec : &nperm) += 1;
	if (nperm) {
		printf("errors: Permanent errors have been detected in the following files:\n\n");
		print_users(rp, 0);
	}
	/* a damaged node record: the file restores (from the catalogue's
	 * copy), but a catalogue rebuilt from the packs would lack it */
	if (nrec) {
		printf("%serrors: The packs' copy of the metadata of these files is damaged (they"
		       " restore; 'ferry pool recover' would fail on them):\n\n", nperm ? "\n" : "");
		print_users(rp, 1);
	}
	if (nofile)
		printf("%serrors: %zu damaged or inconsistent item%s no file uses%s\n",
		       rp->nu ? "\n" : "", nofile, nofile == 1 ? "" : "s",
		       verbose ? ":" : " (-v lists every one)");
	if (!verbose)
		return;
	if (rp->nu)
		printf("\ndamage:\n");
	for (size_t i = 0; i < rp->ne; i++) {
		size_t nu = users_count(rp, rp->e[i].id);
		if (rp->nu && !nu)
			continue;
		fmt_damage(&rp->e[i], line, sizeof line);
		printf("        %s\n", line);
		for (size_t k = 0; k < rp->nu; k++)
			if (rp->u[k].err_id == rp->e[i].id)
				printf("            %s\n", rp->u[k].name);
	}
	if (rp->nu && nofile) {
		printf("\nno file uses:\n");
		for (size_t i = 0; i < rp->ne; i++)
			if (!users_count(rp, rp->e[i].id)) {
				fmt_damage(&rp->e[i], line, sizeof line);
				printf("        %s\n", line);
			}
	}
	(void)pool;
}

static json_t *json_errors(const struct report *rp)
{
	json_t *a = json_array();
	char hex[FERRY_HASH_HEX];
	for (size_t i = 0; i < rp->ne; i++) {
		const struct store_scrub_err *e = &rp->e[i];
		json_t *o = json_object(), *files = json_array();
		json_object_set_new(o, "kind", json_string(kind_name(e->kind)));
		if (e->has_hash) {
			hash_to_hex(e->hash, hex);
			json_object_set_new(o, "hash", json_string(hex));
		}
		if (e->pack[0])
			json_object_set_new(o, "pack", json_string(e->pack));
		if (e->offset >= 0)
			json_object_set_new(o, "offset", cli_json_u64((uint64_t)e->offset));
		json_object_set_new(o, "detail", json_string(e->detail));
		for (size_t k = 0; k < rp->nu; k++)
			if (rp->u[k].err_id == e->id)
				json_array_append_new(files, json_string(rp->u[k].name));
		json_object_set_new(o, "files", files);
		json_array_append_new(a, o);
	}
	return a;
}

static const char *state_name(int s)
{
	return s == STORE_SCRUB_FINISHED ? "finished" : s == STORE_SCRUB_PAUSED ? "paused" :
	       s == STORE_SCRUB_SCANNING ? "scanning" : "none";
}

static json_t *json_scan(const struct store_scrub_state *st)
{
	json_t *o = json_object();
	json_object_set_new(o, "state", json_string(state_name(st->state)));
	json_object_set_new(o, "start_time", cli_json_u64(st->start_ns / 1000000000ull));
	json_object_set_new(o, "end_time", cli_json_u64(st->end_ns / 1000000000ull));
	json_object_set_new(o, "elapsed_ns", cli_json_u64(st->elapsed_ns));
	json_object_set_new(o, "bytes_checked", cli_json_u64(st->bytes));
	json_object_set_new(o, "blocks_checked", cli_json_u64(st->blocks));
	json_object_set_new(o, "repaired", cli_json_u64(st->repaired));
	json_object_set_new(o, "errors", cli_json_u64(st->errors));
	return o;
}

int cli_scrub_status(struct store_pool *p, int verbose, json_t *obj)
{
	struct store_scrub_state st;
	struct report rp;
	int r;
	if ((r = store_scrub_state_get(p, &st)) < 0 || (r = report_load(p, &rp)) < 0)
		return r;
	if (obj) {
		if (st.state != STORE_SCRUB_NONE)
			json_object_set_new(obj, "scan", json_scan(&st));
		json_object_set_new(obj, "errors", json_errors(&rp));
	} else {
		print_scan(p, &st);
	}
	report_release(&rp);
	return 0;
}

int cli_scrub_errors(struct store_pool *p, int verbose)
{
	struct report rp;
	int r;
	if ((r = report_load(p, &rp)) < 0)
		return r;
	print_errors(&rp, verbose, store_pool_name(p));
	report_release(&rp);
	return 0;
}

int cli_scrub_damaged(struct store_pool *p)
{
	struct store_scrub_state st;
	int r = store_scrub_state_get(p, &st);
	if (r < 0)
		return r;
	return !st.errors ? 0 : st.errors == st.record_errors ? 2 : 1;
}

/* ---- --repair-from URL: a replica behind ferry serve -------------------------------------- */

/* GET /v1/blocks/DATASET?hash= and /v1/nodes/ (docs/ferry-http.7): 404
 * is "not held" (the damage stays reported); any other refusal (401, 403,
 * 400, 5xx) or a transport failure ends the repair, nothing of it
 * committed. What comes back is not trusted: scrub_repair_from checks
 * it against the hash. */
struct http_src {
	struct net_client *c;
	const char *ds;       /* the dataset on the server the URL names */
	struct fbuf path;
};

static int http_get(struct http_src *h, const char *what, const uint8_t hash[FERRY_HASH_LEN],
		    struct fbuf *out)
{
	char hex[FERRY_HASH_HEX];
	long status = 0;
	int r;
	hash_to_hex(hash, hex);
	fbuf_reset(&h->path);
	if ((r = fbuf_printf(&h->path, "/v1/%s/", what)) < 0 || (r = net_pct_encode(&h->path, h->ds)) < 0 ||
	    (r = fbuf_printf(&h->path, "?hash=%s", hex)) < 0 || (r = fbuf_putc(&h->path, 0)) < 0)
		return r;
	if ((r = net_client_request(h->c, "GET", (const char *)h->path.data, NULL, NULL, NULL, NULL,
				    out, &status)) < 0)
		return r;
	if (status == 200)
		return 0;
	if (status == 404) {
		fbuf_reset(out);
		return 1;
	}
	char msg[600];
	json_error_t je;
	json_t *j = out->len ? json_loadb((const char *)out->data, out->len, 0, &je) : NULL;
	http_answer_msg(status, j, msg, sizeof msg);
	json_decref(j);
	fbuf_reset(out);
	return ferry_err(status == 401 || status == 403 ? FERR_PERM : FERR_IO, "%s", msg);
}

static int http_block(void *arg, const uint8_t hash[FERRY_HASH_LEN], struct codec_spec prefer,
		      struct codec_spec *codec, uint32_t *lsize, struct fbuf *out)
{
	int r = http_get(arg, "blocks", hash, out);
	if (r != 0)
		return r;
	/* the logical bytes: the repair encodes them as the damaged copy was */
	codec->id = CODEC_OFF;
	codec->level = 0;
	*lsize = (uint32_t)out->len;
	return 0;
}

static int http_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	int r = http_get(arg, "nodes", hash, out);
	if (r != 0)
		return r;
	if (out->len < 1) {
		*type = 0; /* refused as not matching its hash */
		return 0;
	}
	*type = out->data[0];
	memmove(out->data, out->data + 1, out->len - 1);
	out->len--;
	return 0;
}

/* ---- ferry scrub ---------------------------------------------------------------------- */

static void meter_cb(void *arg, uint64_t done, uint64_t total)
{
	struct cli_meter *m = arg;
	m->p.total = total;
	cli_meter_update(m, done, 0);
}

int cmd_scrub(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'},
					   {"repair-from", required_argument, NULL, 'R'},
					   {"limit-rate", required_argument, NULL, 'L'},
					   {"deep", no_argument, NULL, 'D'},
					   {"token-file", required_argument, NULL, HTTP_OPT_TOKEN_FILE},
					   {"cacert", required_argument, NULL, HTTP_OPT_CACERT},
					   {"timeout", required_argument, NULL, HTTP_OPT_TIMEOUT},
					   {NULL, 0, NULL, 0}};
	struct http_conn_opts co;
	struct net_client *nc = NULL;
	char url_ds[STORE_NAME_MAX + 1];
	int c, r, verbose = 0, json = 0, stop = 0, quiet = 0, deep = 0, rc;
	const char *from = NULL;
	uint64_t rate = 0;
	memset(&co, 0, sizeof co);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "scrub", "vsq", lo)) != -1) {
		if (c == HTTP_OPT_TOKEN_FILE || c == HTTP_OPT_CACERT || c == HTTP_OPT_TIMEOUT) {
			if (http_conn_opt(c, optarg, &co) < 0)
				return EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'v': verbose = 1; break;
		case 'j': json = 1; break;
		case 's': stop = 1; break;
		case 'q': quiet = 1; break;
		case 'R': from = optarg; break;
		case 'D': deep = 1; break;
		case 'L':
			if (parse_size(optarg, &rate) < 0 || !rate)
				return cli_usage("bad --limit-rate '%s' (bytes per second: 50M, 1G)", optarg);
			break;
		default: return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("usage: ferry scrub [-v] [-q] [--json] [--deep] [--limit-rate RATE] [--repair-from POOL|URL [--token-file FILE] [--cacert FILE] [--timeout S]] POOL | ferry scrub -s POOL");
	if (stop && (from || json || verbose || rate || deep))
		return cli_usage("-s takes no other option");
	int url = from && net_is_url(from);
	if (!url && (co.token_file || co.cacert || co.timeout))
		return cli_usage("--token-file, --cacert and --timeout go with --repair-from URL");
	const char *name = argv[optind];
	if (from && !strcmp(from, name))
		return cli_usage("--repair-from needs another pool than '%s'", name);
	struct store_pool *p = NULL, *rep = NULL;
	if ((r = store_pool_open(name, 0, &p)) < 0)
		return cli_fail(r, "cannot scrub '%s'", name);
	if (stop) {
		r = scrub_stop(p, 60);
		store_pool_close(p);
		return r < 0 ? cli_fail(r, "cannot stop the scrub of '%s'", name) : EXIT_OK;
	}
	if (url) {
		if ((rc = http_connect(&co, from, url_ds, sizeof url_ds, &nc)) != 0) {
			store_pool_close(p);
			return rc;
		}
		if ((r = store_name_check(url_ds, STORE_NAME_DATASET)) < 0) {
			net_client_free(nc);
			store_pool_close(p);
			return cli_fail(r, "cannot repair '%s' from '%s': the URL names no dataset",
					name, from);
		}
	} else if (from && (r = store_pool_open(from, STORE_OPEN_RDONLY, &rep)) < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot repair '%s' from '%s'", name, from);
	}
	store_pool_activity(p, from ? "a scrub with repair" : "a scrub");
	struct cli_meter m;
	char what[STORE_NAME_MAX + 16];
	snprintf(what, sizeof what, "scrub %s", name);
	cli_meter_start(&m, what, 0, quiet || json);
	struct scrub_opts o = {.progress = meter_cb, .arg = &m, .rate = rate, .deep = deep};
	struct scrub_result res;
	struct scrub_repair_result rr;
	memset(&rr, 0, sizeof rr);
	r = scrub_run(p, &o, &res);
	cli_meter_end(&m);
	if (r < 0) {
		rc = cli_fail(r, "cannot scrub '%s'", name);
		goto out;
	}
	if (from && !res.stopped && res.errors) {
		if (url) {
			struct http_src hs = {nc, url_ds, {0}};
			struct scrub_source src = {http_block, http_node, &hs};
			fbuf_init(&hs.path, 3 * STORE_NAME_MAX + 128); /* each byte of the name may take 3 */
			r = scrub_repair_from(p, &src, &rr);
			fbuf_release(&hs.path);
		} else {
			r = scrub_repair(p, rep, &rr);
		}
		if (r < 0) {
			rc = cli_fail(r, "cannot repair '%s' from '%s'", name, from);
			goto out;
		}
	}
	int damaged = (r = cli_scrub_damaged(p)) < 0 ? 0 : r;
	if (r < 0) {
		rc = cli_fail(r, "cannot read the scrub of '%s'", name);
		goto out;
	}
	rc = damaged ? EXIT_DAMAGED : res.stopped ? EXIT_PARTIAL : EXIT_OK;
	if (json) {
		json_t *pools = json_object(), *po = json_object();
		json_object_set_new(po, "name", json_string(name));
		json_object_set_new(po, "bytes_total", cli_json_u64(res.total_bytes));
		json_object_set_new(po, "nodes_checked", cli_json_u64(res.nodes));
		json_object_set_new(po, "records_checked", cli_json_u64(res.records));
		json_object_set_new(po, "deep", json_boolean(deep));
		json_object_set_new(po, "trees_walked", cli_json_u64(res.snapshots));
		json_object_set_new(po, "unreferenced_blocks", cli_json_u64(res.unref_blocks));
		json_object_set_new(po, "unreferenced_bytes", cli_json_u64(res.unref_bytes));
		json_object_set_new(po, "orphans_checked", json_boolean(res.orphans_checked));
		json_object_set_new(po, "orphan_packs", cli_json_u64(res.orphans));
		json_object_set_new(po, "orphan_bytes", cli_json_u64(res.orphan_bytes));
		json_object_set_new(po, "resumed_at", cli_json_u64(res.resumed_at));
		if (from) {
			json_object_set_new(po, "repaired_items", cli_json_u64(rr.repaired));
			json_object_set_new(po, "unrepaired_items", cli_json_u64(rr.unrepaired));
			json_object_set_new(po, "refused_items", cli_json_u64(rr.rejected));
		}
		/* the scan and the error log, as pool status --json has them */
		if ((r = cli_scrub_status(p, 0, po)) < 0) {
			json_decref(po);
			json_decref(pools);
			rc = cli_fail(r, "cannot read the scrub of '%s'", name);
			goto out;
		}
		json_object_set_new(pools, name, po);
		rc = cli_json_print(cli_json_new("ferry scrub", "pools", pools), rc);
		goto out;
	}
	printf("  pool: %s\n", name);
	if ((r = cli_scrub_status(p, verbose, NULL)) < 0) {
		rc = cli_fail(r, "cannot read the scrub of '%s'", name);
		goto out;
	}
	if (res.stopped) {
		printf("\nscrub stopped: 'ferry scrub %s' continues it\n", name);
		goto out;
	}
	if (from) {
		char b[16];
		format_nicenum(rr.bytes, b, sizeof b, 1);
		printf("repair: %" PRIu64 " damaged items healed from '%s' (%s written), %" PRIu64
		       " not held there", rr.repaired, from, b, rr.unrepaired - rr.rejected);
		if (rr.rejected)
			printf(", %" PRIu64 " refused (the copy did not match its hash)", rr.rejected);
		printf("\n");
	}
	if ((r = cli_scrub_errors(p, verbose)) < 0) {
		rc = cli_fail(r, "cannot read the scrub of '%s'", name);
		goto out;
	}
	if (res.unref_blocks) {
		char b[16];
		format_nicenum(res.unref_bytes, b, sizeof b, 1);
		printf("note: %" PRIu64 " blocks (%s) no snapshot references: 'ferry gc %s' frees"
		       " them\n", res.unref_blocks, b, name);
	}
	if (res.orphans) {
		char b[16];
		format_nicenum(res.orphan_bytes, b, sizeof b, 1);
		printf("note: %" PRIu64 " pack file%s (%s) the catalogue does not name: 'ferry gc %s'"
		       " removes %s\n", res.orphans, res.orphans == 1 ? "" : "s", b, name,
		       res.orphans == 1 ? "it" : "them");
	}
	if (verbose) {
		char b[16], t[16];
		format_nicenum(res.bytes, b, sizeof b, 1);
		format_nicenum(res.total_bytes, t, sizeof t, 1);
		printf("checked: %s of %s in %" PRIu64 " blocks, %" PRIu64 " nodes, %" PRIu64
		       " snapshot and bookmark trees%s\n", b, t, res.blocks, res.nodes, res.snapshots,
		       res.orphans_checked ? "" : "; orphan packs not looked for (a writer was running)");
		format_nicenum(res.record_bytes, b, sizeof b, 1);
		printf("records: %" PRIu64 " node records and checkpoints in the packs (%s)%s\n",
		       res.records, b, deep ? "" : ", node records by their CRC-32C");
		printf("time: %.2f s reading and checking blocks, %.2f s records, nodes and figures, %.2f s"
		       " walking trees\n", (double)res.ns_blocks / 1e9, (double)res.ns_nodes / 1e9,
		       (double)res.ns_trees / 1e9);
		if (res.resumed) {
			format_nicenum(res.resumed_at, b, sizeof b, 1);
			printf("continued a stopped scrub that had checked %s\n", b);
		}
	}
out:
	net_client_free(nc);
	store_pool_close(rep);
	store_pool_close(p);
	return rc;
}
