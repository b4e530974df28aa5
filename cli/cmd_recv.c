/* cli/cmd_recv.c — ferry recv / receive: parsing, the -v report; the work
 * is in recv/. */
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../recv/recv.h"
#include "cli.h"
#include "http.h"

struct recv_ui {
	int verbose;
	int dry;
	struct codec_spec c;
	int quiet;         /* -q */
	struct cli_meter meter;
	json_t *snaps;     /* --json: received snapshots by name */
	json_t *destroyed; /* --json: what -F destroyed */
	int huge;          /* cli_heap_huge done (a substream began) */
};

static void done_cb(void *arg, const char *snapshot, const struct recv_stats *st)
{
	struct recv_ui *ui = arg;
	char in[16], rate[16], wr[16];
	if (ui->snaps) {
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(snapshot));
		json_object_set_new(o, "dryrun", json_boolean(ui->dry));
		json_object_set_new(o, "stream_bytes", cli_json_u64(st->bytes));
		json_object_set_new(o, "ns", cli_json_u64(st->ns));
		json_object_set_new(o, "bytes_written", cli_json_u64(st->pbytes_written));
		json_object_set_new(o, "nodes", cli_json_u64(st->nodes));
		json_object_set_new(o, "blocks_logical", cli_json_u64(st->blocks_logical));
		json_object_set_new(o, "blocks_kept", cli_json_u64(st->blocks_kept));
		json_object_set_new(o, "blocks_recompressed", cli_json_u64(st->blocks_recompressed));
		json_object_set_new(o, "blocks_present", cli_json_u64(st->blocks_present));
		json_object_set_new(o, "blocks_byref", cli_json_u64(st->blocks_byref));
		json_object_set_new(o, "blocks_tried", cli_json_u64(st->blocks_tried));
		json_object_set_new(o, "lbytes_logical", cli_json_u64(st->lbytes_logical));
		json_object_set_new(o, "lbytes_kept", cli_json_u64(st->lbytes_kept));
		json_object_set_new(o, "lbytes_recompressed", cli_json_u64(st->lbytes_recompressed));
		json_object_set_new(o, "lbytes_present", cli_json_u64(st->lbytes_present));
		json_object_set_new(o, "lbytes_tried", cli_json_u64(st->lbytes_tried));
		json_object_set_new(o, "props_received", cli_json_u64(st->props_received));
		json_object_set_new(o, "props_skipped", cli_json_u64(st->props_skipped));
		json_object_set_new(ui->snaps, snapshot, o);
		return;
	}
	if (!ui->verbose)
		return;
	cli_meter_clear(&ui->meter); /* the report goes under the line, not into it */
	double secs = (double)st->ns / 1e9;
	format_nicenum(st->bytes, in, sizeof in, 1);
	format_nicenum(secs > 0 ? (uint64_t)((double)st->bytes / secs) : st->bytes, rate,
		       sizeof rate, 1);
	format_nicenum(st->pbytes_written, wr, sizeof wr, 1);
	printf("%s %s: %s stream in %.2f seconds (%s/sec), %s written\n",
	       ui->dry ? "would receive" : "received", snapshot, in, secs, rate, wr);
	printf("  blocks: %" PRIu64 " logical compressed, %" PRIu64 " kept, %" PRIu64
	       " recompressed, %" PRIu64 " already present, %" PRIu64 " by reference, %" PRIu64
	       " raw as tried by the sender; %" PRIu64 " nodes\n",
	       st->blocks_logical, st->blocks_kept, st->blocks_recompressed, st->blocks_present,
	       st->blocks_byref, st->blocks_tried, st->nodes);
	printf("  bytes: %" PRIu64 " logical compressed, %" PRIu64 " kept, %" PRIu64
	       " recompressed, %" PRIu64 " already present, %" PRIu64 " raw as tried by the sender\n",
	       st->lbytes_logical, st->lbytes_kept, st->lbytes_recompressed, st->lbytes_present,
	       st->lbytes_tried);
	if (st->props_received || st->props_skipped)
		printf("  properties: %" PRIu64 " received, %" PRIu64 " skipped\n",
		       st->props_received, st->props_skipped);
	fflush(stdout);
}

static void destroyed_cb(void *arg, const char *name)
{
	struct recv_ui *ui = arg;
	if (ui->destroyed) {
		json_array_append_new(ui->destroyed, json_string(name));
		return;
	}
	if (!ui->verbose)
		return;
	printf("%s %s\n", ui->dry ? "would destroy" : "destroying", name);
	fflush(stdout);
}

static void skipped_cb(void *arg, const char *name)
{
	struct recv_ui *ui = arg;
	if (!ui->verbose)
		return;
	printf("snapshot %s already exists; ignoring\n", name);
	fflush(stdout);
}

static const char recv_usage[] =
	"usage: ferry recv [-F] [-s] [-u] [-d|-e] [-n] [-v] [-o PROP=VAL]... "
	"[-x PROP]... [--keep-source-compression] [-q] [--json] TARGET | ferry recv -A TARGET | "
	"ferry recv ... --from URL/DATASET@SNAP [-i BASE] TARGET";

struct recv_args {
	struct recv_opts o;
	struct recv_ui ui;
	struct store_propset *set; /* -o, room for argc */
	const char **excl;         /* -x, room for argc */
	int abort_partial;         /* -A */
	const char *target;
};

/* One -o PROP=VALUE (arg is modified) into a->set. */
static int recv_set_option(struct recv_args *a, char *arg)
{
	char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return cli_usage("recv: -o takes PROP=VALUE, not '%s'", arg);
	*eq = 0;
	if (!store_prop_known(arg))
		return cli_usage("recv: -o: unknown property '%s'", arg);
	a->set[a->o.nset].name = arg;
	a->set[a->o.nset].value = eq + 1;
	a->o.nset++;
	return EXIT_OK;
}

/* Parses recv's command line into a; EXIT_OK or the exit code of the
 * error it printed. */
static int recv_options(int argc, char **argv, struct recv_args *a)
{
	static const struct option lo[] = {
		{"keep-source-compression", no_argument, NULL, 'K'},
		{"verbose", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int c, rc;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "recv", "FsudenvqAo:x:", lo)) != -1) {
		switch (c) {
		case 'F': a->o.flags |= RECV_FORCE; break;
		case 's': a->o.flags |= RECV_RESUMABLE; break;
		case 'u': break; /* nothing is mounted in ferry */
		case 'd': a->o.flags |= RECV_DISCARD; break;
		case 'e': a->o.flags |= RECV_LASTNAME; break;
		case 'n': a->o.flags |= RECV_DRYRUN; a->ui.dry = 1; break;
		case 'v': a->ui.verbose = 1; break;
		case 'q': a->ui.quiet = 1; break;
		case 'j':
			if (!a->ui.snaps && (!(a->ui.snaps = json_object()) ||
					     !(a->ui.destroyed = json_array())))
				return cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "recv");
			break;
		case 'A': a->abort_partial = 1; break;
		case 'K': a->o.flags |= RECV_KEEP_SOURCE_COMPRESSION; break;
		case 'o':
			if ((rc = recv_set_option(a, optarg)) != EXIT_OK)
				return rc;
			break;
		case 'x':
			if (!store_prop_known(optarg))
				return cli_usage("recv: -x: unknown property '%s'", optarg);
			a->excl[a->o.nexclude++] = optarg;
			break;
		default:
			return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("%s", recv_usage);
	/* as zfs: each property once, either overridden or excluded; a
	 * volume's size is the stream's */
	for (size_t i = 0; i < a->o.nset + a->o.nexclude; i++) {
		const char *ni = i < a->o.nset ? a->set[i].name : a->excl[i - a->o.nset];
		if (!strcmp(ni, "volsize"))
			return cli_usage("recv: volsize cannot be %s",
					 i < a->o.nset ? "set (-o)" : "excluded (-x)");
		for (size_t j = i + 1; j < a->o.nset + a->o.nexclude; j++) {
			const char *nj = j < a->o.nset ? a->set[j].name : a->excl[j - a->o.nset];
			if (!strcmp(ni, nj))
				return cli_usage("recv: '%s' is given more than once in -o and -x", ni);
		}
	}
	if ((a->o.flags & RECV_DISCARD) && (a->o.flags & RECV_LASTNAME))
		return cli_usage("recv: -d and -e cannot be combined");
	a->target = argv[optind];
	a->o.set = a->set;
	a->o.exclude = a->excl;
	int snap = strchr(a->target, '@') != NULL;
	if (store_name_check(a->target, snap ? STORE_NAME_SNAPSHOT : STORE_NAME_DATASET) < 0)
		return cli_fail(-FERR_NAME, "cannot receive into '%s'", a->target);
	if ((a->o.flags & (RECV_DISCARD | RECV_LASTNAME)) && snap)
		return cli_usage("recv: with -d or -e the target is a dataset");
	return EXIT_OK;
}

/* A receive's heap on transparent huge pages (cli_heap_huge; what it
 * gains: cli/heap.c): the heap grows once by RECV_HEAP_GROW, advised
 * huge, and blocks up to 64 MiB come from it; what grows beyond is
 * ordinary. Done when the first substream begins (begin_cb), so what the
 * receive allocates from then on (the pack writer's buffers too:
 * store_writer_new leaves them to its first record) is on it. */
#define RECV_HEAP_GROW ((size_t)32 << 20)

/* As each substream starts: the heap on huge pages (above, once), and
 * recv -v's "receiving full stream of X into Y", as zfs says it. */
static void begin_cb(void *arg, const char *source, const char *dest, int incremental)
{
	struct recv_ui *ui = arg;
	if (!ui->huge) {
		ui->huge = 1;
		cli_heap_huge(RECV_HEAP_GROW);
	}
	if (!ui->verbose || ui->snaps)
		return;
	cli_meter_clear(&ui->meter);
	printf("%s %s stream of %s into %s\n", ui->dry ? "would receive" : "receiving",
	       incremental ? "incremental" : "full", source, dest);
	fflush(stdout);
}

/* The stream's own estimate of its size (its HINT): the line's total. */
static void estimate_cb(void *arg, uint64_t bytes)
{
	struct recv_ui *ui = arg;
	cli_meter_total(&ui->meter, bytes);
}

/* The progress line's source: the bytes recv reads, counted on their way. */
struct recv_counted {
	struct stream_source base;
	struct stream_source *in;
	struct cli_meter *meter;
};

static int counted_read(struct stream_source *base, void *buf, size_t n, size_t *got)
{
	struct recv_counted *c = (struct recv_counted *)base;
	int r = stream_source_read(c->in, buf, n, got);
	if (r == 0)
		cli_meter_update(c->meter, c->in->bytes, 0);
	return r;
}

/* recv -A, or the receive of standard input, into the open pool p. */
static int recv_into(struct store_pool *p, struct recv_args *a)
{
	char what[STORE_NAME_MAX + 64];
	struct stream_source_fd src;
	struct recv_stats st;
	int r;
	snprintf(what, sizeof what, "%s into %s",
		 a->abort_partial ? "an abort of the partial receive" : "a receive", a->target);
	store_pool_activity(p, what);
	if (a->abort_partial) {
		r = recv_abort(p, a->target);
		return r < 0 ? cli_fail(r, "cannot abort the receive into '%s'", a->target) : EXIT_OK;
	}
	if (isatty(0)) {
		fprintf(stderr, "ferry: recv: refusing to read a stream from a terminal; "
			"redirect or pipe it\n");
		return EXIT_FAIL;
	}
	io_pipe_grow(0);
	stream_source_fd_init(&src, 0);
	a->o.done = done_cb;
	a->o.destroyed = destroyed_cb;
	a->o.skipped = skipped_cb;
	a->o.arg = &a->ui;
	a->o.begin = begin_cb;
	a->o.estimate = estimate_cb;
	struct recv_counted cs;
	memset(&cs, 0, sizeof cs);
	cs.base.read = counted_read;
	cs.in = &src.base;
	cs.meter = &a->ui.meter;
	/* the progress line: bytes and rate, and of how many once the stream's
	 * HINT says (estimate_cb) */
	cli_meter_start(&a->ui.meter, a->target, 0, a->ui.quiet || a->ui.snaps);
	r = recv_run(p, a->target, a->ui.meter.on ? &cs.base : &src.base, &a->o, &st);
	if (r == 0 && a->ui.meter.p.total)
		cli_meter_total(&a->ui.meter, st.bytes); /* whole: the truth ends the line */
	cli_meter_end(&a->ui.meter);
	if (r < 0)
		return cli_fail(r, "cannot receive into '%s'", a->target);
	if (a->ui.snaps) {
		json_t *top = cli_json_new("ferry recv", "snapshots", json_incref(a->ui.snaps));
		if (top)
			json_object_set_new(top, "destroyed", json_incref(a->ui.destroyed));
		return cli_json_print(top, EXIT_OK);
	}
	return EXIT_OK;
}

int cmd_recv(int argc, char **argv)
{
	struct recv_args a;
	struct store_pool *p = NULL;
	int r, rc;
	if (cli_http_has_opt(argc, argv, "--from"))
		return cli_http_recv(argc, argv); /* cli/http.c */
	memset(&a, 0, sizeof a);
	a.set = calloc((size_t)argc, sizeof *a.set);
	a.excl = calloc((size_t)argc, sizeof *a.excl);
	if (!a.set || !a.excl) {
		rc = cli_fail(-FERR_NOMEM, "recv");
	} else if ((rc = recv_options(argc, argv, &a)) == EXIT_OK) {
		if ((r = store_pool_open_for(a.target, 0, &p)) < 0)
			rc = cli_fail(r, "cannot receive into '%s'", a.target);
		else
			rc = recv_into(p, &a);
		store_pool_close(p);
	}
	free(a.set);
	free(a.excl);
	json_decref(a.ui.snaps);
	json_decref(a.ui.destroyed);
	return rc;
}
