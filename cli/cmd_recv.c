/* cli/cmd_recv.c — ferry recv / receive: parsing, the -v report; the work
 * is in recv/. */
#include <getopt.h>
#include <inttypes.h>
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
};

static void done_cb(void *arg, const char *snapshot, const struct recv_stats *st)
{
	struct recv_ui *ui = arg;
	char in[16], rate[16], wr[16];
	if (!ui->verbose)
		return;
	double secs = (double)st->ns / 1e9;
	format_nicenum(st->bytes, in, sizeof in, 1);
	format_nicenum(secs > 0 ? (uint64_t)((double)st->bytes / secs) : st->bytes, rate,
		       sizeof rate, 1);
	format_nicenum(st->pbytes_written, wr, sizeof wr, 1);
	printf("%s %s: %s stream in %.2f seconds (%s/sec), %s written\n",
	       ui->dry ? "would receive" : "received", snapshot, in, secs, rate, wr);
	printf("  blocks: %" PRIu64 " logical compressed, %" PRIu64 " kept, %" PRIu64
	       " recompressed, %" PRIu64 " already present, %" PRIu64 " by reference; %" PRIu64
	       " nodes\n",
	       st->blocks_logical, st->blocks_kept, st->blocks_recompressed, st->blocks_present,
	       st->blocks_byref, st->nodes);
	printf("  bytes: %" PRIu64 " logical compressed, %" PRIu64 " kept, %" PRIu64
	       " recompressed, %" PRIu64 " already present\n",
	       st->lbytes_logical, st->lbytes_kept, st->lbytes_recompressed, st->lbytes_present);
	if (st->props_received || st->props_skipped)
		printf("  properties: %" PRIu64 " received, %" PRIu64 " skipped\n",
		       st->props_received, st->props_skipped);
	fflush(stdout);
}

static void destroyed_cb(void *arg, const char *name)
{
	struct recv_ui *ui = arg;
	if (!ui->verbose)
		return;
	printf("%s %s\n", ui->dry ? "would destroy" : "destroying", name);
	fflush(stdout);
}

int cmd_recv(int argc, char **argv)
{
	static const struct option lo[] = {
		{"keep-source-compression", no_argument, NULL, 'K'},
		{"verbose", no_argument, NULL, 'v'},
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry recv [-F] [-s] [-u] [-d|-e] [-n] [-v] [-o PROP=VAL]... "
			    "[-x PROP]... [--keep-source-compression] TARGET | ferry recv -A TARGET | "
			    "ferry recv ... --from URL/DATASET@SNAP [-i BASE] TARGET";
	struct recv_opts o;
	struct recv_ui ui;
	struct recv_stats st;
	struct store_propset *set = NULL;
	const char **excl = NULL;
	int c, r, abort_partial = 0, rc = EXIT_FAIL;
	if (cli_http_has_opt(argc, argv, "--from"))
		return cli_http_recv(argc, argv); /* cli/http.c */
	memset(&o, 0, sizeof o);
	memset(&ui, 0, sizeof ui);
	optind = 1;
	set = calloc((size_t)argc, sizeof *set);
	excl = calloc((size_t)argc, sizeof *excl);
	if (!set || !excl) {
		free(set);
		free(excl);
		return cli_fail(-FERR_NOMEM, "recv");
	}
	while ((c = getopt_long(argc, argv, "+FsudenvAo:x:", lo, NULL)) != -1) {
		switch (c) {
		case 'F': o.flags |= RECV_FORCE; break;
		case 's': o.flags |= RECV_RESUMABLE; break;
		case 'u': break; /* nothing is mounted in ferry */
		case 'd': o.flags |= RECV_DISCARD; break;
		case 'e': o.flags |= RECV_LASTNAME; break;
		case 'n': o.flags |= RECV_DRYRUN; ui.dry = 1; break;
		case 'v': ui.verbose = 1; break;
		case 'A': abort_partial = 1; break;
		case 'K': o.flags |= RECV_KEEP_SOURCE_COMPRESSION; break;
		case 'o': {
			char *eq = strchr(optarg, '=');
			if (!eq || eq == optarg) {
				rc = cli_usage("recv: -o takes PROP=VALUE, not '%s'", optarg);
				goto out;
			}
			*eq = 0;
			set[o.nset].name = optarg;
			set[o.nset].value = eq + 1;
			if (!store_prop_known(optarg)) {
				rc = cli_usage("recv: -o: unknown property '%s'", optarg);
				goto out;
			}
			o.nset++;
			break;
		}
		case 'x':
			if (!store_prop_known(optarg)) {
				rc = cli_usage("recv: -x: unknown property '%s'", optarg);
				goto out;
			}
			excl[o.nexclude++] = optarg;
			break;
		default:
			rc = cli_bad_option(argv, usage);
			goto out;
		}
	}
	if (argc - optind != 1) {
		rc = cli_usage("%s", usage);
		goto out;
	}
	if ((o.flags & RECV_DISCARD) && (o.flags & RECV_LASTNAME)) {
		rc = cli_usage("recv: -d and -e cannot be combined");
		goto out;
	}
	const char *target = argv[optind];
	o.set = set;
	o.exclude = excl;
	if (strchr(target, '@') ? store_name_check(target, STORE_NAME_SNAPSHOT) < 0
				: store_name_check(target, STORE_NAME_DATASET) < 0) {
		rc = cli_fail(-FERR_NAME, "cannot receive into '%s'", target);
		goto out;
	}
	if ((o.flags & (RECV_DISCARD | RECV_LASTNAME)) && strchr(target, '@')) {
		rc = cli_usage("recv: with -d or -e the target is a dataset");
		goto out;
	}
	struct store_pool *p = NULL;
	if ((r = store_pool_open_for(target, 0, &p)) < 0) {
		rc = cli_fail(r, "cannot receive into '%s'", target);
		goto out;
	}
	{
		char what[STORE_NAME_MAX + 64];
		snprintf(what, sizeof what, "%s into %s",
			 abort_partial ? "an abort of the partial receive" : "a receive", target);
		store_pool_activity(p, what);
	}
	if (abort_partial) {
		r = recv_abort(p, target);
		store_pool_close(p);
		rc = r < 0 ? cli_fail(r, "cannot abort the receive into '%s'", target) : EXIT_OK;
		goto out;
	}
	if (isatty(0)) {
		store_pool_close(p);
		fprintf(stderr, "ferry: recv: refusing to read a stream from a terminal; "
			"redirect or pipe it\n");
		rc = EXIT_FAIL;
		goto out;
	}
	struct stream_source_fd src;
	stream_source_fd_init(&src, 0);
	o.done = done_cb;
	o.destroyed = destroyed_cb;
	o.arg = &ui;
	r = recv_run(p, target, &src.base, &o, &st);
	store_pool_close(p);
	if (r < 0) {
		rc = cli_fail(r, "cannot receive into '%s'", target);
		goto out;
	}
	rc = EXIT_OK;
out:
	free(set);
	free(excl);
	return rc;
}
