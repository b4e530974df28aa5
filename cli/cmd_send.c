/* cli/cmd_send.c — ferry send: parsing, the terminal check, zfs-style
 * estimate lines and progress; the work is in send/. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../send/send.h"
#include "cli.h"
#include "http.h"

struct send_ui {
	int parsable;
	int verbose;
	int dry;
	uint64_t t0;
};

static void substream_cb(void *arg, const char *kind, const char *from, const char *to,
			 uint64_t size)
{
	struct send_ui *ui = arg;
	FILE *f = ui->dry ? stdout : stderr;
	char nice[16];
	if (!ui->verbose)
		return;
	if (ui->parsable) {
		if (*from)
			fprintf(f, "%s\t%s\t%s\t%" PRIu64 "\n", kind, from, to, size);
		else
			fprintf(f, "%s\t%s\t%" PRIu64 "\n", kind, to, size);
		return;
	}
	format_nicenum(size, nice, sizeof nice, 1);
	/* a bookmark base comes as "#mark", a snapshot as its name after '@' */
	const char *at = *from == '#' ? "" : "@";
	if (!ui->dry) {
		if (*from)
			fprintf(f, "send from %s%s to %s\n", at, from, to);
		else
			fprintf(f, "full send of %s\n", to);
	} else if (*from) {
		fprintf(f, "send from %s%s to %s estimated size is %s\n", at, from, to, nice);
	} else {
		fprintf(f, "full send of %s estimated size is %s\n", to, nice);
	}
}

static void progress_cb(void *arg, const struct send_progress *pr)
{
	struct send_ui *ui = arg;
	char nice[16], tm[16];
	time_t now = (time_t)(ferry_now_ns() / 1000000000u);
	struct tm t;
	if (!ui->verbose || ui->dry)
		return;
	localtime_r(&now, &t);
	strftime(tm, sizeof tm, "%H:%M:%S", &t);
	format_nicenum(pr->bytes, nice, sizeof nice, 1);
	if (ui->parsable)
		fprintf(stderr, "%s\t%" PRIu64 "\t%s\n", tm, pr->bytes, pr->snapshot);
	else
		fprintf(stderr, "%s   %s   %s\n", tm, nice, pr->snapshot);
}

static const char send_usage[] =
	"usage: ferry send [-c] [--compress=CODEC] [-p] [-i SNAP|-i #BOOKMARK|-I SNAP] [-R] "
	"[-n] [-v] [-P] SNAPSHOT | ferry send [-v] -t TOKEN | ferry send ... SNAPSHOT "
	"--to URL (see ferry-http(7))";

/* Parses send's command line into o and ui; EXIT_OK or the exit code of
 * the error it printed. */
static int send_options(int argc, char **argv, struct send_opts *o, struct send_ui *ui)
{
	static const struct option lo[] = {
		{"compress", required_argument, NULL, 'Z'},
		{"compressed", no_argument, NULL, 'c'},
		{"props", no_argument, NULL, 'p'},
		{"replicate", no_argument, NULL, 'R'},
		{"dryrun", no_argument, NULL, 'n'},
		{"verbose", no_argument, NULL, 'v'},
		{"parsable", no_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	int c, r;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+cpRnvPi:I:t:", lo, NULL)) != -1) {
		switch (c) {
		case 'c': o->flags |= SEND_COMPRESSED; break;
		case 'p': o->flags |= SEND_PROPS; break;
		case 'R': o->flags |= SEND_REPLICATE; break;
		case 'n': o->flags |= SEND_DRYRUN; ui->dry = 1; break;
		case 'v': ui->verbose = 1; break;
		case 'P': ui->parsable = 1; ui->verbose = 1; break;
		case 'i':
		case 'I':
			if (o->from)
				return cli_usage("send: give one of -i and -I, once");
			o->from = optarg;
			if (c == 'I')
				o->flags |= SEND_INTERMEDIATE;
			break;
		case 't': o->token = optarg; break;
		case 'Z':
			if ((r = codec_parse(optarg, &o->codec)) < 0)
				return cli_usage("send: --compress: %s", ferry_errmsg(r));
			o->flags |= SEND_RECOMPRESS;
			break;
		default:
			return cli_bad_option(argv, send_usage);
		}
	}
	if (o->token ? argc != optind : argc - optind != 1)
		return cli_usage("%s", send_usage);
	if (o->token && (o->from || (o->flags & (SEND_REPLICATE | SEND_PROPS | SEND_COMPRESSED))))
		return cli_usage("send: -t takes its options from the token");
	if (!ui->dry && isatty(1)) {
		fprintf(stderr, "ferry: send: refusing to write a stream to a terminal; "
			"redirect or pipe it\n");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* The -v summary: the estimate of -n, or what was sent. */
static void send_report(const struct send_ui *ui, const struct send_stats *st)
{
	if (ui->dry && ui->verbose) {
		char nice[16];
		format_nicenum(st->bytes, nice, sizeof nice, 1);
		if (ui->parsable)
			printf("size\t%" PRIu64 "\n", st->bytes);
		else
			printf("total estimated size is %s\n", nice);
	} else if (ui->verbose) {
		double secs = (double)(ferry_now_ns() - ui->t0) / 1e9;
		fprintf(stderr, "sent %" PRIu64 " bytes in %" PRIu64 " records (%" PRIu64
			" nodes, %" PRIu64 " writes, %" PRIu64 " byref) in %.2fs\n",
			st->bytes, st->records, st->nodes, st->writes, st->byrefs, secs);
	}
}

int cmd_send(int argc, char **argv)
{
	struct send_opts o;
	struct send_ui ui;
	struct send_stats st;
	int r, rc;
	if (cli_http_has_opt(argc, argv, "--to"))
		return cli_http_send(argc, argv); /* cli/http.c */
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	memset(&st, 0, sizeof st);
	if ((rc = send_options(argc, argv, &o, &ui)) != EXIT_OK)
		return rc;
	char name[2 * STORE_NAME_MAX + 2];
	struct stream_token tok;
	if (o.token) {
		if ((r = stream_token_decode(o.token, &tok)) < 0)
			return cli_fail(r, "cannot send: invalid resume token");
		snprintf(name, sizeof name, "%s@%s", tok.dataset, tok.snapshot);
	} else {
		snprintf(name, sizeof name, "%s", argv[optind]);
		if (!strchr(name, '@'))
			return cli_usage("send: '%s' is not a snapshot (DATASET@NAME)", name);
		if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0)
			return cli_fail(r, "cannot send '%s'", name);
	}
	signal(SIGPIPE, SIG_IGN);
	struct store_pool *p = NULL;
	if ((r = store_pool_open_for(name, STORE_OPEN_RDONLY, &p)) < 0)
		return cli_fail(r, "cannot send '%s'", name);
	struct stream_sink_fd sink;
	stream_sink_fd_init(&sink, 1);
	o.substream = substream_cb;
	o.progress = progress_cb;
	o.arg = &ui;
	ui.t0 = ferry_now_ns();
	r = send_run(p, o.token ? NULL : name, &o, &sink.base, &st);
	store_pool_close(p);
	if (r < 0)
		return cli_fail(r, "cannot send '%s'", name);
	send_report(&ui, &st);
	return EXIT_OK;
}
