/* cli/cli.h — shared by the command files of cli/. Only cli/ prints and
 * maps errors to exit codes. */
#ifndef FERRY_CLI_H
#define FERRY_CLI_H

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>

#include "../lib/lib.h"

/* What `ferry --version` prints; raised with each release. */
#define FERRY_VERSION "0.11.0"

/* Exit codes, documented in docs/ferry.8. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,    /* the command ran and failed; nothing changed */
	EXIT_USAGE = 2,   /* bad command line syntax */
	EXIT_PARTIAL = 3, /* done, but some input was skipped (warned about); sync:
			   * some datasets failed */
	EXIT_BUSY = 4,    /* sync: another sync of the same (dataset, destination) runs */
	EXIT_DAMAGED = 5, /* scrub: the pool has damage (its error log is not empty) */
	/* not an exit status: a command's --help was printed; main() exits 0.
	 * Distinct from EXIT_OK so an option parser's "go on" is not it. */
	EXIT_HELP_DONE = 256,
};

/* A command: argv[0] is the command name (e.g. "dump"); returns an exit code. */
typedef int (*cli_fn)(int argc, char **argv);

/* The heap on transparent huge pages (cli/heap.c), for what receives:
 * grows it once by grow bytes (malloc'd and freed again; glibc then keeps
 * its top up to four times that), blocks up to 2 x grow come from it
 * instead of mmap, and the range is advised MADV_HUGEPAGE. Only advice. */
void cli_heap_huge(size_t grow);
/* Advises MADV_HUGEPAGE again from where cli_heap_huge began to the heap's
 * end now, so what the heap grew by since is on huge pages too; nothing
 * before cli_heap_huge. */
void cli_heap_advise(void);
/* Prints "ferry: <msg>" (one line) and returns EXIT_USAGE. */
int cli_usage(const char *fmt, ...) FERRY_PRINTF(1, 2);
/* Prints "ferry: <msg>: <detail of r>" (one line) and returns EXIT_FAIL. */
int cli_fail(int r, const char *fmt, ...) FERRY_PRINTF(2, 3);
/* getopt_long for command cmd ("list", "pool create") as Linux zfs
 * parses: options may follow operands (GNU permutation; argv is
 * reordered so operands end up from optind on), "--" ends options.
 * -h and --help print cmd's usage on stdout (-h is the command's own
 * when shortopts has it: then only --help); an unknown option, a
 * missing value or a value given to a flag is reported in one line on
 * stderr, naming the option as typed. Both then return '?', after which
 * the caller returns cli_opt_end(): EXIT_HELP_DONE after help, else
 * EXIT_USAGE.
 * shortopts and longopts as getopt_long's (a leading '+' is ignored);
 * set optind = 1 before the first call. main() sets opterr = 0. */
int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts,
	       const struct option *longopts);
int cli_opt_end(void);
/* For a command with no options: parses -h/--help and "--" as cli_getopt
 * does; returns -1 with optind at the first operand, or the exit code to
 * end with (after help or an error it printed). */
int cli_no_options(int argc, char **argv, const char *cmd);
/* Prints cmd's usage ("usage: ferry ..." per form); -1 if cmd is no
 * command. */
int cli_help(const char *cmd, FILE *f);
/* cmd's forms on one line ("usage: ferry a ... | ferry b ...") into buf;
 * "" if cmd is no command. */
void cli_usage_line(const char *cmd, char *buf, size_t n);
/* Prints "ferry: warning: <msg>" (one line). */
void cli_warn(const char *fmt, ...) FERRY_PRINTF(1, 2);
/* Opens the pool holding name (flags as store_pool_open's) and looks the
 * dataset (or, with an '@', the snapshot, with a '#', the bookmark) up
 * into *ds; returns EXIT_OK, or prints "cannot VERB 'name': why" and
 * returns EXIT_FAIL (*pp is then NULL). */
struct store_pool;
struct store_ds;
int cli_open_ds(const char *name, int flags, const char *verb, struct store_pool **pp,
		struct store_ds *ds);

/* A --json document (cli/json.c, docs/ferry-json.7): output_version for
 * command ("ferry pool list") and key: member (owned: stolen, also on
 * failure). NULL on allocation failure. */
json_t *cli_json_new(const char *command, const char *key, json_t *member);
/* Prints top (stolen; NULL: allocation failed) on stdout, indented, and
 * returns rc, or EXIT_FAIL after saying why printing failed. */
int cli_json_print(json_t *top, int rc);
/* A byte count or other unsigned figure as a JSON integer. */
json_t *cli_json_u64(uint64_t v);

/* The progress line of long work (cli/progress.c): drawn on stderr only
 * when it is a terminal and not quiet (-q); total 0 when unknown. */
struct cli_meter {
	struct progress p;
	int on, drawn;
	uint64_t last;
};
void cli_meter_start(struct cli_meter *m, const char *what, uint64_t total, int quiet);
void cli_meter_update(struct cli_meter *m, uint64_t bytes, uint64_t files);
/* Sets (or corrects) the total once it is known: recv learns it from the
 * stream's HINT, and at the end from the bytes it read. */
void cli_meter_total(struct cli_meter *m, uint64_t total);
/* The next phase of the work: another label and total, figures from 0. */
void cli_meter_retarget(struct cli_meter *m, const char *what, uint64_t total);
/* Erases the line before other output to the terminal; the next update
 * draws it again. */
void cli_meter_clear(struct cli_meter *m);
/* Draws the final state and ends the line (nothing if nothing was drawn). */
void cli_meter_end(struct cli_meter *m);

int cmd_dump(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_inherit(int argc, char **argv);
int cmd_rename(int argc, char **argv);  /* cmd_rename.c */
int cmd_snapshot(int argc, char **argv);
int cmd_bookmark(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);
int cmd_serve(int argc, char **argv);  /* cmd_serve.c: docs/ferry-serve.8 */
int cmd_token(int argc, char **argv);  /* cmd_token.c */
int cmd_hold(int argc, char **argv);    /* cmd_hold.c */
int cmd_release(int argc, char **argv);
int cmd_holds(int argc, char **argv);
/* Prints holds as `ferry holds` does: zfs's table (-H: tab-separated, no
 * header; -p: seconds) or with json its --json document. */
struct store_hold;
void cli_holds_print(const struct store_hold *v, size_t n, int json, int exact, int scripted);
int cmd_sync(int argc, char **argv);       /* cmd_sync.c */
int cmd_sync_state(int argc, char **argv);
int cmd_prune(int argc, char **argv);      /* cmd_prune.c */
int cmd_shell(int argc, char **argv);      /* cmd_shell.c */
int cmd_scrub(int argc, char **argv);      /* cmd_scrub.c */
/* The scrub's part of pool status (cmd_scrub.c): with obj NULL, prints
 * the "scan:" line; else sets obj's "scan" (when the pool was scrubbed)
 * and "errors" members. */
struct store_pool;
int cli_scrub_status(struct store_pool *p, int verbose, json_t *obj) FERRY_WUR;
/* Prints the "errors:" part: the files damage touches, with verbose
 * every damage with its files. */
int cli_scrub_errors(struct store_pool *p, int verbose) FERRY_WUR;
/* 0 when p's error log is empty; 2 when all it holds is damaged records
 * besides the blocks (node records, checkpoints: every file still
 * restores, pool recover would not); 1 otherwise. */
int cli_scrub_damaged(struct store_pool *p) FERRY_WUR;
/* destroy of snapshots (DATASET@NAME, a%b ranges, -r -n -v -p); argv as
 * for cmd_destroy. cmd_destroy hands names containing '@' to it. */
int cli_snap_destroy(int argc, char **argv);
/* destroy of DATASET#BOOKMARK (cmd_snap.c). */
int cli_bookmark_destroy(int argc, char **argv);

#endif
