/* cli/cmd_prune.c — ferry prune: the policy from options or properties,
 * and what is kept and removed (with why), the same lines with -n as
 * without. The work is in sync/prune.c. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sync/sync.h"
#include "cli.h"

struct prune_ui {
	int verbose, json;
	json_t *list;
};

static void dataset_cb(void *arg, const struct sync_prune_ds *d)
{
	struct prune_ui *ui = arg;
	char why[512];
	if (ui->json) {
		json_t *o = json_object(), *snaps = json_array(), *pol = json_object();
		json_object_set_new(o, "name", json_string(d->name));
		json_object_set_new(o, "policy_from", json_string(d->from_props ? "properties" : "options"));
		const struct sync_keep *k = &d->keep;
		json_object_set_new(pol, "last", json_integer(k->last));
		json_object_set_new(pol, "hourly", json_integer(k->hourly));
		json_object_set_new(pol, "daily", json_integer(k->daily));
		json_object_set_new(pol, "weekly", json_integer(k->weekly));
		json_object_set_new(pol, "monthly", json_integer(k->monthly));
		json_object_set_new(pol, "yearly", json_integer(k->yearly));
		if (k->has_within) {
			sync_keep_within_format(k, why, sizeof why);
			json_object_set_new(pol, "within", json_string(why));
		}
		if (k->prefix[0])
			json_object_set_new(pol, "prefix", json_string(k->prefix));
		json_object_set_new(o, "policy", pol);
		for (size_t i = 0; i < d->n; i++) {
			json_t *s = json_object(), *rs = json_array();
			const struct sync_prune_snap *x = &d->snaps[i];
			json_object_set_new(s, "name", json_string(x->name));
			json_object_set_new(s, "creation", json_integer((json_int_t)(x->creation_ns / 1000000000u)));
			json_object_set_new(s, "action", json_string(x->why ? "keep" : "remove"));
			for (unsigned bit = 1; bit <= SYNC_KEEP_PARTIAL; bit <<= 1)
				if (x->why & bit) {
					sync_keep_why_format(bit, k, why, sizeof why);
					json_array_append_new(rs, json_string(why));
				}
			if (x->held[0])
				json_object_set_new(s, "hold", json_string(x->held));
			json_object_set_new(s, "reasons", rs);
			json_array_append_new(snaps, s);
		}
		json_object_set_new(o, "snapshots", snaps);
		json_object_set_new(o, "kept", json_integer((json_int_t)d->kept));
		json_object_set_new(o, "removed", json_integer((json_int_t)d->removed));
		json_array_append_new(ui->list, o);
		return;
	}
	/* oldest first, as list shows them */
	for (size_t i = d->n; i-- > 0;) {
		const struct sync_prune_snap *x = &d->snaps[i];
		if (!x->why) {
			printf("remove  %s\n", x->name);
		} else if (ui->verbose) {
			sync_keep_why_format(x->why, &d->keep, why, sizeof why);
			if (x->held[0])
				printf("keep    %s  %s (tag '%s')\n", x->name, why, x->held);
			else
				printf("keep    %s  %s\n", x->name, why);
		}
	}
	printf("%s: %" PRIu64 " kept, %" PRIu64 " removed\n", d->name, d->kept, d->removed);
	fflush(stdout);
}

static int count_arg(const char *opt, const char *s, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || v < -1)
		return cli_usage("prune: %s takes a count (or -1 for all), not '%s'", opt, s);
	*out = v;
	return EXIT_OK;
}

static const char prune_usage[] =
	"usage: ferry prune [-r] [-n] [-v] [--json] [--keep-last N] [--keep-hourly N] "
	"[--keep-daily N] [--keep-weekly N] [--keep-monthly N] [--keep-yearly N] "
	"[--keep-within DURATION] [--prefix P] [--gc] DATASET...";

static const char prune_help[] =
	"  --keep-last N            the N newest snapshots\n"
	"  --keep-hourly N          the newest of each of the last N hours with snapshots\n"
	"  --keep-daily N           ... of the last N days (--keep-weekly: ISO weeks,\n"
	"  --keep-weekly N              --keep-monthly, --keep-yearly likewise); -1: all\n"
	"  --keep-monthly N\n"
	"  --keep-yearly N\n"
	"  --keep-within DURATION   everything newer than the newest less DURATION (1y5m7d2h)\n"
	"  --prefix P               look only at snapshots named P...\n"
	"  -r                       every dataset of the tree, each by its own policy\n"
	"  -n                       change nothing; print what prune would do\n"
	"  -v                       also the snapshots kept, with why\n"
	"  --json                   one JSON document\n"
	"  --gc                     collect the pool's garbage afterwards\n"
	"Without --keep-* options, each dataset's ferry:keep-* properties (set or inherited).\n"
	"Never removed: held snapshots, each dataset's newest, sync bases.\n";

int cmd_prune(int argc, char **argv)
{
	enum {
		OPT_LAST = 1000, OPT_HOURLY, OPT_DAILY, OPT_WEEKLY, OPT_MONTHLY, OPT_YEARLY,
		OPT_WITHIN, OPT_PREFIX, OPT_GC, OPT_JSON, OPT_HELP,
	};
	static const struct option lo[] = {
		{"keep-last", required_argument, NULL, OPT_LAST},
		{"keep-hourly", required_argument, NULL, OPT_HOURLY},
		{"keep-daily", required_argument, NULL, OPT_DAILY},
		{"keep-weekly", required_argument, NULL, OPT_WEEKLY},
		{"keep-monthly", required_argument, NULL, OPT_MONTHLY},
		{"keep-yearly", required_argument, NULL, OPT_YEARLY},
		{"keep-within", required_argument, NULL, OPT_WITHIN},
		{"prefix", required_argument, NULL, OPT_PREFIX},
		{"gc", no_argument, NULL, OPT_GC},
		{"json", no_argument, NULL, OPT_JSON},
		{"verbose", no_argument, NULL, 'v'},
		{"dry-run", no_argument, NULL, 'n'},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct sync_keep k;
	struct sync_prune_opts o;
	struct prune_ui ui;
	int c, r, rc = EXIT_OK, have_policy = 0, have_prefix = 0;
	memset(&k, 0, sizeof k);
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	optind = 1;
	while ((c = cli_getopt(argc, argv, "prune", "rnv", lo)) != -1) {
		int64_t *dst = NULL;
		switch (c) {
		case 'r': o.flags |= SYNC_PRUNE_RECURSIVE; break;
		case 'n': o.flags |= SYNC_PRUNE_DRYRUN; break;
		case 'v': ui.verbose = 1; break;
		case OPT_GC: o.flags |= SYNC_PRUNE_GC; break;
		case OPT_JSON: ui.json = 1; break;
		case OPT_LAST: dst = &k.last; break;
		case OPT_HOURLY: dst = &k.hourly; break;
		case OPT_DAILY: dst = &k.daily; break;
		case OPT_WEEKLY: dst = &k.weekly; break;
		case OPT_MONTHLY: dst = &k.monthly; break;
		case OPT_YEARLY: dst = &k.yearly; break;
		case OPT_WITHIN:
			if ((r = sync_keep_within_parse(optarg, &k)) < 0)
				return cli_usage("prune: --keep-within: %s", ferry_errmsg(r));
			have_policy = 1;
			break;
		case OPT_PREFIX:
			if (!*optarg || strpbrk(optarg, "@#/"))
				return cli_usage("prune: --prefix: '%s' is not a snapshot name part", optarg);
			snprintf(k.prefix, sizeof k.prefix, "%s", optarg);
			have_prefix = 1;
			break;
		case OPT_HELP:
			printf("%s\n%s", prune_usage, prune_help);
			return EXIT_OK;
		default:
			return cli_opt_end();
		}
		if (dst) {
			if ((r = count_arg(argv[optind - 1], optarg, dst)) != EXIT_OK)
				return r;
			have_policy = 1;
		}
	}
	if (optind >= argc)
		return cli_usage("%s", prune_usage);
	if (have_prefix && !have_policy)
		return cli_usage("prune: --prefix needs --keep-* options (or set ferry:prune-prefix "
				 "with the ferry:keep-* properties)");
	if (have_policy && sync_keep_empty(&k))
		return cli_usage("prune: a policy of only zero counts would remove every snapshot; "
				 "give a count above 0");
	o.keep = have_policy ? &k : NULL;
	o.dataset = dataset_cb;
	o.arg = &ui;
	if (ui.json)
		ui.list = json_array();
	json_t *gcs = ui.json ? json_object() : NULL;
	for (int i = optind; i < argc; i++) {
		struct store_gc_stats gc;
		memset(&gc, 0, sizeof gc);
		if ((r = sync_prune_run(argv[i], &o, &gc)) < 0) {
			rc = cli_fail(r, "cannot prune '%s'", argv[i]);
			break;
		}
		if ((o.flags & SYNC_PRUNE_GC) && !(o.flags & SYNC_PRUNE_DRYRUN)) {
			char b[16];
			format_nicenum(gc.bytes_freed, b, sizeof b, 1);
			if (ui.json) {
				json_t *g = json_object();
				json_object_set_new(g, "blocks_freed", json_integer((json_int_t)gc.blocks_freed));
				json_object_set_new(g, "bytes_freed", json_integer((json_int_t)gc.bytes_freed));
				json_object_set_new(gcs, argv[i], g);
			} else {
				printf("gc %.*s: freed %" PRIu64 " blocks (%s), %" PRIu64 " nodes\n",
				       (int)strcspn(argv[i], "/"), argv[i], gc.blocks_freed, b,
				       gc.nodes_freed);
			}
		}
	}
	if (ui.json) {
		json_t *top = json_object(), *ver = json_object();
		json_object_set_new(ver, "command", json_string("ferry prune"));
		json_object_set_new(ver, "vers_major", json_integer(0));
		json_object_set_new(ver, "vers_minor", json_integer(1));
		json_object_set_new(top, "output_version", ver);
		json_object_set_new(top, "dry_run", json_boolean(o.flags & SYNC_PRUNE_DRYRUN));
		json_object_set_new(top, "datasets", ui.list);
		json_object_set_new(top, "gc", gcs);
		json_dumpf(top, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(top);
	}
	return rc;
}
