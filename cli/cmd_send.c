/* cli/cmd_send.c — ferry send: parsing, the terminal check, zfs-style
 * estimate lines and progress; the work is in send/. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../send/send.h"
#include "cli.h"
#include "http.h"

struct send_ui {
	int parsable;
	int verbose;
	int dry;
	int quiet;    /* -q */
	json_t *subs; /* -n --json: the substreams */
	struct cli_meter meter;
};

/* The estimate lines of -n -v, and of -v before a real send (then on
 * stderr, as zfs: stdout carries the stream). */
static void estimate_cb(void *arg, const char *kind, const char *from, const char *to,
			uint64_t size)
{
	struct send_ui *ui = arg;
	FILE *f = ui->dry ? stdout : stderr;
	char nice[16];
	if (ui->subs) {
		json_t *o = json_object();
		json_object_set_new(o, "kind", json_string(kind));
		if (*from)
			json_object_set_new(o, "from", json_string(from));
		json_object_set_new(o, "to", json_string(to));
		json_object_set_new(o, "size", cli_json_u64(size));
		json_array_append_new(ui->subs, o);
		return;
	}
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
	if (*from)
		fprintf(f, "send from %s%s to %s estimated size is %s\n", at, from, to, nice);
	else
		fprintf(f, "full send of %s estimated size is %s\n", to, nice);
}

/* The total after the estimate lines. */
static void estimate_total(const struct send_ui *ui, uint64_t bytes)
{
	FILE *f = ui->dry ? stdout : stderr;
	char nice[16];
	format_nicenum(bytes, nice, sizeof nice, 1);
	if (ui->subs)
		return;
	if (ui->parsable)
		fprintf(f, "size\t%" PRIu64 "\n", bytes);
	else
		fprintf(f, "total estimated size is %s\n", nice);
}

/* A real send's substream starts: zfs's progress header. */
static void substream_cb(void *arg, const char *kind, const char *from, const char *to,
			 uint64_t size)
{
	struct send_ui *ui = arg;
	if (ui->verbose && !ui->parsable)
		fprintf(stderr, "TIME        SENT   SNAPSHOT %s\n", to);
}

static void progress_cb(void *arg, const struct send_progress *pr)
{
	struct send_ui *ui = arg;
	char nice[16], tm[16];
	time_t now = (time_t)(ferry_now_ns() / 1000000000u);
	struct tm t;
	cli_meter_update(&ui->meter, pr->bytes, 0);
	if (!ui->verbose || ui->dry)
		return;
	localtime_r(&now, &t);
	strftime(tm, sizeof tm, "%H:%M:%S", &t);
	format_nicenum(pr->bytes, nice, sizeof nice, 1);
	if (ui->parsable)
		fprintf(stderr, "%s\t%" PRIu64 "\t%s\n", tm, pr->bytes, pr->snapshot);
	else
		fprintf(stderr, "%s   %5s   %s\n", tm, nice, pr->snapshot);
}

static const char send_usage[] =
	"usage: ferry send [-c] [--compress=CODEC] [-p] [-i SNAP|-i #BOOKMARK|-I SNAP] [-R] "
	"[-n] [-v] [-P] [-q] [--json] SNAPSHOT | ferry send [-v] [-P] [-n] [-q] [--json] -t TOKEN | "
	"ferry send ... SNAPSHOT --to URL (see ferry-http(7))";

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
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	int c, r;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "send", "cpRnvPqi:I:t:", lo)) != -1) {
		switch (c) {
		case 'q': ui->quiet = 1; break;
		case 'c': o->flags |= SEND_COMPRESSED; break;
		case 'p': o->flags |= SEND_PROPS; break;
		case 'R': o->flags |= SEND_REPLICATE; break;
		case 'n': o->flags |= SEND_DRYRUN; ui->dry = 1; break;
		case 'v': ui->verbose = 1; break;
		case 'P': ui->parsable = 1; ui->verbose = 1; break;
		case 'j':
			if (!ui->subs && !(ui->subs = json_array()))
				return cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "cannot send");
			ui->verbose = 1;
			break;
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
			return cli_opt_end();
		}
	}
	if (o->token ? argc != optind : argc - optind != 1)
		return cli_usage("%s", send_usage);
	if (ui->subs && !ui->dry)
		return cli_usage("send: --json is for the estimate of -n (standard output carries the "
				 "stream otherwise)");
	if (o->token && (o->from || (o->flags & (SEND_REPLICATE | SEND_PROPS | SEND_COMPRESSED))))
		return cli_usage("send: -t takes its options from the token");
	if (!ui->dry && isatty(1)) {
		fprintf(stderr, "ferry: send: refusing to write a stream to a terminal; "
			"redirect or pipe it\n");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static int send_cmd(int argc, char **argv, struct send_ui *uip)
{
	struct send_opts o;
	struct send_ui ui;
	struct send_stats st;
	int r = 0, rc;
	if (cli_http_has_opt(argc, argv, "--to"))
		return cli_http_send(argc, argv); /* cli/http.c */
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	memset(&st, 0, sizeof st);
	rc = send_options(argc, argv, &o, &ui);
	uip->subs = ui.subs; /* freed by cmd_send, whatever happens here */
	if (rc != EXIT_OK)
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
	io_pipe_grow(1);
	stream_sink_fd_init(&sink, 1);
	o.arg = &ui;
	/* The progress line: on a terminal, without -v's own lines, and not
	 * into a pipe: in send | recv the receiver draws it, once. */
	struct stat so;
	int tty = !ui.quiet && isatty(2);
	int draw = tty && !ui.verbose && !ui.dry && !(fstat(1, &so) == 0 && S_ISFIFO(so.st_mode));
	/* Someone watches: the stream carries its size (a dry run's count, as
	 * -n's) so that the receiver's line has a percentage and an ETA. The
	 * dry runs count the HINT too, so -n on a terminal says what a send
	 * from it carries. Not with -q, nor for nobody (cron), as it costs a
	 * walk of the stream first; and into a pipe, where no dry run is made
	 * anyway, only when that walk reads no block (-c reads and checks
	 * every block, --compress compresses it: twice the send's own work
	 * before the receiver sees a byte). */
	int cheap = !(o.flags & (SEND_COMPRESSED | SEND_RECOMPRESS));
	if (tty && (draw || ui.verbose || ui.dry || cheap))
		o.flags |= SEND_ESTIMATE;
	if ((o.flags & SEND_ESTIMATE) && !ui.verbose && !ui.dry) { /* -v's dry run counts it */
		struct send_opts est = o;
		est.flags |= SEND_DRYRUN;
		if ((r = send_run(p, o.token ? NULL : name, &est, &sink.base, &st)) < 0)
			goto out;
		if (draw)
			cli_meter_start(&ui.meter, name, st.bytes, 0);
	}
	if (ui.verbose) {
		/* zfs send -v: the estimate first (a dry run's exact count),
		 * then the send with its progress. */
		struct send_opts est = o;
		est.flags |= SEND_DRYRUN;
		est.substream = estimate_cb;
		r = send_run(p, o.token ? NULL : name, &est, &sink.base, &st);
		if (r < 0)
			goto out;
		estimate_total(&ui, st.bytes);
		fflush(ui.dry ? stdout : stderr);
		if (ui.subs) {
			json_t *j = json_object();
			json_object_set_new(j, "substreams", json_incref(ui.subs));
			json_object_set_new(j, "size", cli_json_u64(st.bytes));
			store_pool_close(p);
			return cli_json_print(cli_json_new("ferry send", "send", j), EXIT_OK);
		}
	}
	if (!ui.dry) {
		o.substream = substream_cb;
		o.progress = progress_cb;
		o.estimate = st.bytes; /* with SEND_ESTIMATE: a dry run's just above */
		memset(&st, 0, sizeof st);
		r = send_run(p, o.token ? NULL : name, &o, &sink.base, &st);
		cli_meter_update(&ui.meter, st.bytes, 0);
		cli_meter_end(&ui.meter);
	}
out:
	store_pool_close(p);
	if (r < 0)
		return cli_fail(r, "cannot send '%s'", name);
	return EXIT_OK;
}

int cmd_send(int argc, char **argv)
{
	struct send_ui ui;
	memset(&ui, 0, sizeof ui);
	int rc = send_cmd(argc, argv, &ui);
	json_decref(ui.subs);
	return rc;
}
