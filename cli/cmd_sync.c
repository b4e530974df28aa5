/* cli/cmd_sync.c — ferry sync (one line per dataset, --json for
 * monitoring, exit codes 0/1/3/4) and ferry sync-state (what the far side
 * of an ssh sync answers). The work is in sync/. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../net/net.h"
#include "../sync/sync.h"
#include "http.h"
#include "table.h"

struct sync_ui {
	int verbose, json, dry, quiet;
	unsigned ndone, nfailed;
	json_t *list;
	struct cli_meter meter;             /* the status line on a terminal */
	char current[STORE_NAME_MAX + 1];   /* the dataset it is about */
};

static void note_cb(void *arg, const char *source, const char *what)
{
	struct sync_ui *ui = arg;
	if (!ui->verbose)
		return;
	cli_meter_clear(&ui->meter);
	fprintf(stderr, "%s: %s\n", source, what);
}

/* A transfer's bytes so far: the line says the dataset, the bytes and the
 * rate, and of how many with a percentage and an ETA when expect_cb had
 * an estimate. */
static void progress_cb(void *arg, const char *source, uint64_t bytes)
{
	struct sync_ui *ui = arg;
	if (strcmp(ui->current, source)) {
		snprintf(ui->current, sizeof ui->current, "%s", source);
		cli_meter_retarget(&ui->meter, ui->current, 0);
	}
	cli_meter_update(&ui->meter, bytes, 0);
}

/* The dataset's total for its next transfer (send_estimate's). */
static void expect_cb(void *arg, const char *source, uint64_t total)
{
	struct sync_ui *ui = arg;
	if (strcmp(ui->current, source)) {
		snprintf(ui->current, sizeof ui->current, "%s", source);
		cli_meter_retarget(&ui->meter, ui->current, total);
	} else {
		cli_meter_total(&ui->meter, total);
	}
}

static const char *mode_of(const struct sync_result *r)
{
	if (r->status < 0)
		return "failed";
	if (r->nosnap)
		return "no-snapshots";
	if (r->uptodate)
		return "up-to-date";
	return r->full ? "full" : "incremental";
}

static void done_cb(void *arg, const struct sync_result *r)
{
	struct sync_ui *ui = arg;
	char b[16], rate[16];
	double secs = (double)r->ns / 1e9;
	cli_meter_clear(&ui->meter);
	ui->ndone++;
	if (r->status < 0) {
		ui->nfailed++;
		/* one line on stderr, --json or not */
		fprintf(stderr, "ferry: sync %s -> %s: %s\n", r->source, r->dest, r->error);
	}
	if (ui->json) {
		json_t *o = json_object(), *bl = json_object();
		json_object_set_new(o, "source", json_string(r->source));
		json_object_set_new(o, "destination", json_string(r->dest));
		json_object_set_new(o, "status", json_string(r->status < 0 ? "failed" : "ok"));
		json_object_set_new(o, "mode", json_string(mode_of(r)));
		if (r->status < 0)
			json_object_set_new(o, "error", json_string(r->error));
		json_object_set_new(o, "resumed", json_boolean(r->resumed));
		json_object_set_new(o, "aborted_partial", json_boolean(r->aborted));
		json_object_set_new(o, "base", r->base[0] ? json_string(r->base) : json_null());
		json_object_set_new(o, "newest", r->newest[0] ? json_string(r->newest) : json_null());
		json_object_set_new(o, "snapshots", json_integer((json_int_t)r->snapshots));
		json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
		json_object_set_new(o, "seconds", json_real(secs));
		json_object_set_new(bl, "compressed", json_integer((json_int_t)r->blocks_logical));
		json_object_set_new(bl, "kept", json_integer((json_int_t)r->blocks_kept));
		json_object_set_new(bl, "recompressed", json_integer((json_int_t)r->blocks_recompressed));
		json_object_set_new(bl, "present", json_integer((json_int_t)r->blocks_present));
		json_object_set_new(bl, "byref", json_integer((json_int_t)r->blocks_byref));
		json_object_set_new(o, "blocks", bl);
		json_array_append_new(ui->list, o);
		return;
	}
	if (r->status < 0)
		return;
	printf("%s -> %s: ", r->source, r->dest);
	if (r->nosnap) {
		printf("no snapshots to send\n");
	} else if (r->uptodate) {
		printf("up to date at %s%s\n", r->newest[0] ? r->newest : r->base,
		       r->aborted ? " (a stale partial receive discarded)" : "");
	} else {
		format_nicenum(r->bytes, b, sizeof b, 1);
		printf("%s %" PRIu64 " snapshot%s ", ui->dry ? "would send" : "sent", r->snapshots,
		       r->snapshots == 1 ? "" : "s");
		if (r->full)
			printf("in full");
		else
			printf("incremental from %s", r->base[0] ? r->base : "its partial receive");
		printf(" to %s%s%s, %s", r->newest, r->resumed ? ", resuming a partial receive" : "",
		       r->aborted ? ", a stale partial receive discarded" : "", b);
		if (!ui->dry) {
			format_nicenum(secs > 0 ? (uint64_t)((double)r->bytes / secs) : r->bytes, rate,
				       sizeof rate, 1);
			printf(" in %.2fs (%s/s); blocks: %" PRIu64 " kept, %" PRIu64 " recompressed, %" PRIu64
			       " compressed, %" PRIu64 " already there",
			       secs, rate, r->blocks_kept, r->blocks_recompressed, r->blocks_logical,
			       r->blocks_present + r->blocks_byref);
		}
		putchar('\n');
	}
	fflush(stdout);
}

static const char sync_usage[] =
	"usage: ferry sync [-r] [-n] [-v] [-q] [--json] [--no-intermediate] [--compress=auto|CODEC] "
	"[-o PROP=VAL]... [-x PROP]... [-F] [--wait[=SECS]] [--token-file FILE] [--cacert FILE] "
	"SOURCE DESTINATION";

static const char sync_help[] =
	"  DESTINATION        POOL/DATASET, ssh://[USER@]HOST[:PORT]/POOL/DATASET,\n"
	"                     https://HOST:PORT/POOL/DATASET (a ferry serve; http:// too)\n"
	"  -r                 the source's whole tree (new children are created)\n"
	"  -n                 say what would be sent, send nothing\n"
	"  -v                 say each step on stderr\n"
	"  -q                 no status line on a terminal\n"
	"  --json             one JSON document on stdout, for monitoring\n"
	"  --no-intermediate  send only the newest snapshot (-i), not every one since (-I)\n"
	"  --compress=auto    recompress on the sender to the destination's compression\n"
	"  --compress=CODEC   recompress on the sender to CODEC (default: blocks as stored)\n"
	"  -o PROP=VAL        set on the received datasets (recv -o)\n"
	"  -x PROP            do not receive PROP (recv -x)\n"
	"  -F                 replace unrelated destination snapshots, roll back diverged ones\n"
	"  --wait[=SECS]      wait for another sync of the same pair (default: exit 4 at once)\n"
	"  --token-file FILE  https://: the token (its first line; default $FERRY_TOKEN)\n"
	"  --cacert FILE      https://: the CA certificates to verify the server with\n"
	"exit status: 0 in sync, 1 failed, 2 usage, 3 some datasets failed, 4 busy\n";

int cmd_sync(int argc, char **argv)
{
	enum { OPT_JSON = 1000, OPT_NOI, OPT_COMP, OPT_WAIT, OPT_HELP };
	static const struct option lo[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"no-intermediate", no_argument, NULL, OPT_NOI},
		{"compress", required_argument, NULL, OPT_COMP},
		{"wait", optional_argument, NULL, OPT_WAIT},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, OPT_HELP},
		{"token-file", required_argument, NULL, HTTP_OPT_TOKEN_FILE},
		{"cacert", required_argument, NULL, HTTP_OPT_CACERT},
		{NULL, 0, NULL, 0},
	};
	struct http_conn_opts co;
	char tok[NET_TOKEN_TEXT + 64] = "";
	struct sync_opts o;
	struct sync_ui ui;
	struct store_propset *set = NULL;
	const char **excl = NULL;
	int c, r, rc = EXIT_FAIL;
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	o.wait = -1;
	optind = 1;
	set = calloc((size_t)argc, sizeof *set);
	excl = calloc((size_t)argc, sizeof *excl);
	if (!set || !excl) {
		rc = cli_fail(-FERR_NOMEM, "sync");
		goto out;
	}
	memset(&co, 0, sizeof co);
	while ((c = cli_getopt(argc, argv, "sync", "rnvqFo:x:", lo)) != -1) {
		int k = http_conn_opt(c, optarg, &co);
		if (k < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		if (k)
			continue;
		switch (c) {
		case 'r': o.flags |= SYNC_RECURSIVE; break;
		case 'n': o.flags |= SYNC_DRYRUN; ui.dry = 1; break;
		case 'v': ui.verbose = 1; break;
		case 'q': ui.quiet = 1; break;
		case 'F': o.flags |= SYNC_FORCE; break;
		case OPT_JSON: ui.json = 1; break;
		case OPT_NOI: o.flags |= SYNC_NO_INTERMEDIATE; break;
		case OPT_COMP:
			if (!strcmp(optarg, "auto")) {
				o.compress = SYNC_COMPRESS_AUTO;
			} else if ((r = codec_parse(optarg, &o.codec)) < 0) {
				rc = cli_usage("sync: --compress: %s", ferry_errmsg(r));
				goto out;
			} else {
				o.compress = SYNC_COMPRESS_CODEC;
			}
			break;
		case OPT_WAIT: {
			char *end;
			long v = optarg ? strtol(optarg, &end, 10) : 0;
			if (optarg && (!*optarg || *end || v < 0 || v > 86400 * 365)) {
				rc = cli_usage("sync: --wait takes seconds, not '%s'", optarg);
				goto out;
			}
			o.wait = optarg ? (v == 0 ? -1 : (int)v) : 0;
			break;
		}
		case 'o':
			if ((rc = cli_parse_propset(optarg, set, (size_t)argc, &o.nset)) != EXIT_OK)
				goto out;
			if (!store_prop_known(set[o.nset - 1].name)) {
				rc = cli_usage("sync: -o: unknown property '%s'", set[o.nset - 1].name);
				goto out;
			}
			break;
		case 'x':
			if (!store_prop_known(optarg)) {
				rc = cli_usage("sync: -x: unknown property '%s'", optarg);
				goto out;
			}
			excl[o.nexclude++] = optarg;
			break;
		case OPT_HELP:
			printf("%s\n%s", sync_usage, sync_help);
			rc = EXIT_OK;
			goto out;
		default:
			rc = cli_opt_end();
			goto out;
		}
	}
	if (argc - optind != 2) {
		rc = cli_usage("%s", sync_usage);
		goto out;
	}
	const char *src = argv[optind], *dst = argv[optind + 1];
	o.set = set;
	o.exclude = excl;
	o.ssh = getenv("FERRY_SSH");
	if (net_is_url(dst)) {
		if ((r = http_read_token(&co, tok, sizeof tok)) < 0) {
			rc = cli_fail(r, "sync: cannot read the token");
			goto out;
		}
		o.http_token = tok[0] ? tok : NULL;
		o.http_cacert = co.cacert;
	}
	o.done = done_cb;
	o.note = note_cb;
	o.progress = progress_cb;
	o.arg = &ui;
	cli_meter_start(&ui.meter, "sync", 0, ui.quiet || ui.json || ui.dry);
	if (ui.meter.on)
		o.expect = expect_cb;
	if (ui.json)
		ui.list = json_array();
	/* a receiver that stops reading fails the send (EPIPE), not the process */
	signal(SIGPIPE, SIG_IGN);
	r = sync_run(src, dst, &o);
	cli_meter_end(&ui.meter);
	if (r == 0)
		rc = EXIT_OK;
	else if (r == -FERR_BUSY && ui.ndone == 0)
		rc = EXIT_BUSY;
	else if (ui.nfailed && ui.nfailed < ui.ndone)
		rc = EXIT_PARTIAL;
	else
		rc = EXIT_FAIL;
	/* what failed before any dataset was reached gets its own line */
	char msg[1200] = "";
	if (r < 0 && ui.ndone == 0)
		snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
	if (ui.json) {
		json_t *top = json_object(), *ver = json_object();
		json_object_set_new(ver, "command", json_string("ferry sync"));
		json_object_set_new(ver, "vers_major", json_integer(0));
		json_object_set_new(ver, "vers_minor", json_integer(1));
		json_object_set_new(top, "output_version", ver);
		json_object_set_new(top, "source", json_string(src));
		json_object_set_new(top, "destination", json_string(dst));
		json_object_set_new(top, "datasets", ui.list);
		json_object_set_new(top, "exit", json_integer(rc));
		if (msg[0])
			json_object_set_new(top, "error", json_string(msg));
		json_dumpf(top, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(top);
		ui.list = NULL;
	}
	if (msg[0])
		fprintf(stderr, "ferry: cannot sync '%s' to '%s': %s\n", src, dst, msg);
out:
	explicit_bzero(tok, sizeof tok);
	json_decref(ui.list);
	free(set);
	free(excl);
	return rc;
}

int cmd_sync_state(int argc, char **argv)
{
	const char *usage = "usage: ferry sync-state [-r] DATASET";
	struct fbuf out;
	int c, r, recursive = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "sync-state", "r", NULL)) != -1) {
		if (c == 'r')
			recursive = 1;
		else
			return cli_opt_end();
	}
	if (argc - optind != 1)
		return cli_usage("%s", usage);
	fbuf_init(&out, (size_t)256 << 20);
	if ((r = sync_state_write(argv[optind], recursive, &out)) < 0) {
		fbuf_release(&out);
		return cli_fail(r, "cannot read the state of '%s'", argv[optind]);
	}
	if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
		fbuf_release(&out);
		return cli_fail(-FERR_IO, "sync-state: cannot write");
	}
	fbuf_release(&out);
	return EXIT_OK;
}
