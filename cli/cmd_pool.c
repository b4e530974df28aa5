/* cli/cmd_pool.c — ferry pool create|import|export|list|status|recover|upgrade. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "table.h"

/* Parses "-o p=v" into props[*n]; returns EXIT_OK or EXIT_USAGE. */
int cli_parse_propset(char *arg, struct store_propset *props, size_t max, size_t *n)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return cli_usage("bad property assignment '%s' (expected PROP=VALUE)", arg);
	if (*n >= max)
		return cli_usage("too many properties");
	*eq = 0;
	props[*n].name = arg;
	props[*n].value = eq + 1;
	(*n)++;
	return EXIT_OK;
}

static int pool_create(int argc, char **argv)
{
	struct store_propset props[64];
	size_t nprops = 0;
	int c, r;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "pool create", "o:", NULL)) != -1) {
		if (c == 'o') {
			if ((r = cli_parse_propset(optarg, props, 64, &nprops)) != EXIT_OK)
				return r;
		} else {
			return cli_opt_end();
		}
	}
	if (argc - optind != 2)
		return cli_usage("usage: ferry pool create [-o prop=val]... NAME PATH");
	if ((r = store_pool_create(argv[optind], argv[optind + 1], props, nprops)) < 0)
		return cli_fail(r, "cannot create pool '%s'", argv[optind]);
	return EXIT_OK;
}

static int pool_import(int argc, char **argv)
{
	char *name = NULL;
	int r;
	if ((r = cli_no_options(argc, argv, "pool import")) >= 0)
		return r;
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 2 || argc > 3)
		return cli_usage("usage: ferry pool import PATH [NAME]");
	if ((r = store_pool_import(argv[1], argc == 3 ? argv[2] : NULL, &name)) < 0)
		return cli_fail(r, "cannot import pool at '%s'", argv[1]);
	char what[4200];
	if (store_pool_exposed(name, what, sizeof what) == 1)
		cli_warn("pool '%s' is open to other users (%s): its packs hold file contents; "
			 "chmod -R go= '%s' makes it private", name, what, argv[1]);
	free(name);
	return EXIT_OK;
}

static int pool_export(int argc, char **argv)
{
	int r;
	if ((r = cli_no_options(argc, argv, "pool export")) >= 0)
		return r;
	argc -= optind - 1;
	argv += optind - 1;
	if (argc != 2)
		return cli_usage("usage: ferry pool export NAME");
	if ((r = store_pool_export(argv[1])) < 0)
		return cli_fail(r, "cannot export pool '%s'", argv[1]);
	return EXIT_OK;
}

static void num(char *buf, size_t n, uint64_t v, int exact)
{
	if (exact)
		snprintf(buf, n, "%" PRIu64, v);
	else
		format_nicenum(v, buf, n, 1);
}

static int pool_list(int argc, char **argv)
{
	static const struct option lopts[] = {{"json", no_argument, NULL, 'j'}, {0, 0, 0, 0}};
	int c, scripted = 0, exact = 0, json = 0, r, rc = EXIT_OK;
	struct store_pool_entry *e = NULL;
	size_t n = 0;
	struct table t;
	json_t *jroot = NULL, *jpools = NULL;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "pool list", "Hp", lopts)) != -1) {
		switch (c) {
		case 'H': scripted = 1; break;
		case 'p': exact = 1; break;
		case 'j': json = 1; break;
		default: return cli_opt_end();
		}
	}
	if ((r = store_registry_list(&e, &n)) < 0)
		return cli_fail(r, "cannot list pools");
	if ((r = table_init(&t, 6)) < 0) {
		free(e);
		return cli_fail(r, "cannot list pools");
	}
	table_header(&t, 0, "NAME", 0);
	table_header(&t, 1, "SIZE", 1);
	table_header(&t, 2, "ALLOC", 1);
	table_header(&t, 3, "FREE", 1);
	table_header(&t, 4, "HEALTH", 0);
	table_header(&t, 5, "PATH", 0);
	if (json) {
		jpools = json_object();
		jroot = cli_json_new("ferry pool list", "pools", jpools);
	}
	/* zpool list: a name that is no pool is an error, the others listed */
	for (int a = optind; a < argc; a++) {
		size_t i;
		for (i = 0; i < n && strcmp(argv[a], e[i].name); i++)
			;
		if (i == n)
			rc = cli_fail(ferry_err(FERR_NOENT, "no such pool '%s'", argv[a]),
				      "cannot open '%s'", argv[a]);
	}
	for (size_t i = 0; i < n; i++) {
		int want = optind >= argc;
		for (int a = optind; a < argc; a++)
			if (!strcmp(argv[a], e[i].name))
				want = 1;
		if (!want)
			continue;
		struct store_pool *p = NULL;
		struct store_pool_stats s;
		const char *health = "ONLINE";
		memset(&s, 0, sizeof s);
		if (store_pool_open(e[i].name, STORE_OPEN_RDONLY, &p) < 0 ||
		    store_pool_stats(p, &s) < 0)
			health = "UNAVAIL";
		store_pool_close(p);
		ferry_err_clear();
		char size[32], alloc[32], fr[32];
		num(size, sizeof size, s.fs_size, exact);
		num(alloc, sizeof alloc, s.disk_used, exact);
		num(fr, sizeof fr, s.fs_free, exact);
		char *cells[6] = {e[i].name, size, alloc, fr, (char *)health, e[i].path};
		if (json) {
			json_t *o = json_object();
			json_object_set_new(o, "name", json_string(e[i].name));
			json_object_set_new(o, "path", json_string(e[i].path));
			json_object_set_new(o, "health", json_string(health));
			json_object_set_new(o, "size", json_integer((json_int_t)s.fs_size));
			json_object_set_new(o, "alloc", json_integer((json_int_t)s.disk_used));
			json_object_set_new(o, "free", json_integer((json_int_t)s.fs_free));
			json_object_set_new(jpools, e[i].name, o);
		} else if ((r = table_add(&t, cells)) < 0) {
			rc = cli_fail(r, "cannot list pools");
			goto out;
		}
	}
	if (json) {
		rc = cli_json_print(jroot, rc);
		jroot = NULL;
	} else if (t.nrows > 0) {
		table_print(&t, stdout, scripted);
	} else if (!scripted && optind >= argc) {
		printf("no pools available\n");
	}
out:
	json_decref(jroot);
	table_release(&t);
	free(e);
	return rc;
}

static int pool_status(int argc, char **argv)
{
	static const struct option lopts[] = {{"json", no_argument, NULL, 'j'}, {0, 0, 0, 0}};
	struct store_pool_entry *e = NULL;
	size_t n = 0;
	int r, c, rc = EXIT_OK, json = 0, verbose = 0;
	json_t *jpools = NULL;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "pool status", "v", lopts)) != -1) {
		if (c == 'v')
			verbose = 1;
		else if (c == 'j')
			json = 1;
		else
			return cli_opt_end();
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc == 1) {
		if ((r = store_registry_list(&e, &n)) < 0)
			return cli_fail(r, "cannot list pools");
		if (n == 0 && !json)
			printf("no pools available\n");
	}
	if (json && !(jpools = json_object()))
		return free(e), cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "cannot print");
	size_t count = argc > 1 ? (size_t)argc - 1 : n;
	for (size_t i = 0; i < count; i++) {
		const char *name = argc > 1 ? argv[i + 1] : e[i].name;
		struct store_pool *p = NULL;
		struct store_pool_stats s;
		int damaged = 0;
		if ((r = store_pool_open(name, STORE_OPEN_RDONLY, &p)) < 0 ||
		    (r = store_pool_stats(p, &s)) < 0 || (r = damaged = cli_scrub_damaged(p)) < 0) {
			rc = cli_fail(r, "cannot open pool '%s'", name);
			store_pool_close(p);
			continue;
		}
		/* known damage (a scrub's error log) degrades the pool, as a
		 * zpool with permanent errors is no longer healthy */
		const char *state = damaged ? "DEGRADED" : "ONLINE";
		if (json) {
			json_t *o = json_object(), *bl = json_object();
			json_object_set_new(o, "name", json_string(name));
			json_object_set_new(o, "state", json_string(state));
			json_object_set_new(o, "path", json_string(store_pool_path(p)));
			json_object_set_new(o, "format", cli_json_u64(s.format_version));
			char guid[24];
			snprintf(guid, sizeof guid, "%" PRIu64, s.guid); /* past int64: a string */
			json_object_set_new(o, "guid", json_string(guid));
			json_object_set_new(o, "txg", cli_json_u64(s.txg));
			json_object_set_new(o, "used", cli_json_u64(s.disk_used));
			json_object_set_new(o, "datasets", cli_json_u64(s.datasets));
			json_object_set_new(o, "snapshots", cli_json_u64(s.snapshots));
			for (int id = 0; id < 4; id++)
				for (int lv = 0; lv < 10; lv++) {
					if (!s.codec_blocks[id][lv])
						continue;
					struct codec_spec cs = {(uint8_t)id, (uint8_t)lv};
					json_t *b = json_object();
					json_object_set_new(b, "blocks", cli_json_u64(s.codec_blocks[id][lv]));
					json_object_set_new(b, "lsize", cli_json_u64(s.codec_lbytes[id][lv]));
					json_object_set_new(b, "psize", cli_json_u64(s.codec_pbytes[id][lv]));
					json_object_set_new(bl, codec_name(cs), b);
				}
			json_object_set_new(o, "blocks", bl);
			if ((r = cli_scrub_status(p, verbose, o)) < 0)
				rc = cli_fail(r, "cannot read the scrub of pool '%s'", name);
			json_object_set_new(jpools, name, o);
			store_pool_close(p);
			continue;
		}
		char used[32];
		format_nicenum(s.disk_used, used, sizeof used, 1);
		if (i)
			putchar('\n');
		printf("  pool: %s\n state: %s\n", name, state);
		if (damaged == 2)
			printf("status: One or more records in the packs are damaged (node records or"
			       " checkpoints).\n\tEvery file still restores, from the catalogue's"
			       " copies, but 'ferry pool\n\trecover' could not rebuild the"
			       " catalogue from these packs.\naction: Keep a replica ('ferry send -R"
			       " ... | ferry recv') while the catalogue\n\tis intact.\n");
		else if (damaged)
			printf("status: One or more blocks or nodes are damaged. Files that use them"
			       " cannot be\n\trestored or sent whole.\naction: Heal the pool with"
			       " 'ferry scrub --repair-from POOL %s', or restore\n\tthe files from a"
			       " backup.\n", name);
		if ((r = cli_scrub_status(p, verbose, NULL)) < 0)
			rc = cli_fail(r, "cannot read the scrub of pool '%s'", name);
		printf("  path: %s\nformat: %" PRIu64 "\n  guid: %" PRIu64
		       "\n   txg: %" PRIu64 "\n  used: %s on disk\ndatasets: %" PRIu64
		       "\nsnapshots: %" PRIu64 "\n",
		       store_pool_path(p), s.format_version, s.guid, s.txg, used, s.datasets,
		       s.snapshots);
		if ((r = cli_scrub_errors(p, verbose)) < 0)
			rc = cli_fail(r, "cannot read the scrub of pool '%s'", name);
		printf("\nblocks:\n");
		struct table t;
		if ((r = table_init(&t, 5)) < 0) {
			store_pool_close(p);
			free(e);
			return cli_fail(r, "status");
		}
		table_header(&t, 0, "\tCODEC", 0);
		table_header(&t, 1, "BLOCKS", 1);
		table_header(&t, 2, "LSIZE", 1);
		table_header(&t, 3, "PSIZE", 1);
		table_header(&t, 4, "RATIO", 1);
		for (int id = 0; id < 4; id++)
			for (int lv = 0; lv < 10; lv++) {
				if (!s.codec_blocks[id][lv])
					continue;
				struct codec_spec cs = {(uint8_t)id, (uint8_t)lv};
				char nm[32], b[32], l[32], ph[32], ra[32];
				snprintf(nm, sizeof nm, "\t%s", codec_name(cs));
				snprintf(b, sizeof b, "%" PRIu64, s.codec_blocks[id][lv]);
				format_nicenum(s.codec_lbytes[id][lv], l, sizeof l, 1);
				format_nicenum(s.codec_pbytes[id][lv], ph, sizeof ph, 1);
				store_format_ratio(s.codec_lbytes[id][lv], s.codec_pbytes[id][lv], ra,
						   sizeof ra, 0);
				char *cells[5] = {nm, b, l, ph, ra};
				if (table_add(&t, cells) < 0)
					break;
			}
		if (t.nrows)
			table_print(&t, stdout, 0);
		else
			printf("\tnone\n");
		table_release(&t);
		store_pool_close(p);
	}
	free(e);
	if (json)
		return cli_json_print(cli_json_new("ferry pool status", "pools", jpools), rc);
	return rc;
}

/* ferry pool recover [-n] NAME: the catalogue rebuilt from the packs
 * (store_pool_recover). Exit 0 when rebuilt (or, with -n, rebuildable),
 * 3 when rebuilt but damaged records were skipped, 1 when refused (nothing
 * changed). */
static int pool_recover(int argc, char **argv)
{
	struct store_recover_report rep;
	int c, r, dry = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "pool recover", "n", NULL)) != -1) {
		if (c == 'n')
			dry = 1;
		else
			return cli_opt_end();
	}
	if (argc - optind != 1)
		return cli_usage("usage: ferry pool recover [-n] NAME");
	const char *name = argv[optind];
	r = store_pool_recover(name, dry, &rep);
	if (r < 0) {
		if (rep.bad_records)
			cli_warn("skipped %" PRIu64 " damaged record%s (first: %s)", rep.bad_records,
				 rep.bad_records == 1 ? "" : "s", rep.first_bad);
		return cli_fail(r, "cannot recover pool '%s'", name);
	}
	printf("%s pool '%s' from %" PRIu64 " pack%s: checkpoint %" PRIu64 " (%s), %" PRIu64
	       " dataset%s, %" PRIu64 " snapshot%s, %" PRIu64 " bookmark%s, %" PRIu64 " hold%s, %"
	       PRIu64 " propert%s; %" PRIu64 " blocks, %" PRIu64 " nodes\n",
	       dry ? "would rebuild" : "rebuilt", name, rep.packs, rep.packs == 1 ? "" : "s", rep.seq,
	       rep.state_pack, rep.datasets, rep.datasets == 1 ? "" : "s", rep.snapshots,
	       rep.snapshots == 1 ? "" : "s", rep.bookmarks, rep.bookmarks == 1 ? "" : "s", rep.holds,
	       rep.holds == 1 ? "" : "s", rep.props, rep.props == 1 ? "y" : "ies", rep.blocks,
	       rep.nodes);
	if (rep.damaged[0])
		printf("the old catalogue is kept as %s\n", rep.damaged);
	if (rep.bad_records) {
		cli_warn("skipped %" PRIu64 " damaged record%s (first: %s)", rep.bad_records,
			 rep.bad_records == 1 ? "" : "s", rep.first_bad);
		return EXIT_PARTIAL;
	}
	return EXIT_OK;
}

/* ferry pool upgrade NAME: a version-1 pool gets the records recover
 * needs (store_pool_upgrade). */
static int pool_upgrade(int argc, char **argv)
{
	struct store_pool *p = NULL;
	int r, from = 0;
	if ((r = cli_no_options(argc, argv, "pool upgrade")) >= 0)
		return r;
	argc -= optind - 1;
	argv += optind - 1;
	if (argc != 2)
		return cli_usage("usage: ferry pool upgrade NAME");
	if ((r = store_pool_open(argv[1], 0, &p)) < 0 || (r = store_pool_upgrade(p, &from)) < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot upgrade pool '%s'", argv[1]);
	}
	store_pool_close(p);
	if (from == STORE_FORMAT_VERSION)
		printf("pool '%s' is already at format version %d\n", argv[1], STORE_FORMAT_VERSION);
	else
		printf("pool '%s' upgraded from format version %d to %d\n", argv[1], from,
		       STORE_FORMAT_VERSION);
	return EXIT_OK;
}

int cmd_pool(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("usage: ferry pool create|import|export|list|status|recover|upgrade ...");
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help"))
		return cli_help("pool", stdout), EXIT_HELP_DONE;
	if (!strcmp(sub, "create"))
		return pool_create(argc - 1, argv + 1);
	if (!strcmp(sub, "import"))
		return pool_import(argc - 1, argv + 1);
	if (!strcmp(sub, "export"))
		return pool_export(argc - 1, argv + 1);
	if (!strcmp(sub, "list"))
		return pool_list(argc - 1, argv + 1);
	if (!strcmp(sub, "status"))
		return pool_status(argc - 1, argv + 1);
	if (!strcmp(sub, "recover"))
		return pool_recover(argc - 1, argv + 1);
	if (!strcmp(sub, "upgrade"))
		return pool_upgrade(argc - 1, argv + 1);
	return cli_usage("unknown pool command '%s' (create, import, export, list, status, recover,"
			 " upgrade)", sub);
}
