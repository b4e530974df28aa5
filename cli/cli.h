/* cli/cli.h — shared by the command files of cli/. Only cli/ prints and
 * maps errors to exit codes. */
#ifndef FERRY_CLI_H
#define FERRY_CLI_H

#include "../lib/lib.h"

/* Exit codes, documented in docs/ferry.8. */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,    /* the command ran and failed; nothing changed */
	EXIT_USAGE = 2,   /* bad command line syntax */
	EXIT_PARTIAL = 3, /* done, but some input was skipped (warned about); sync:
			   * some datasets failed */
	EXIT_BUSY = 4,    /* sync: another sync of the same (dataset, destination) runs */
};

/* A command: argv[0] is the command name (e.g. "dump"); returns an exit code. */
typedef int (*cli_fn)(int argc, char **argv);

/* Prints "ferry: <msg>" (one line) and returns EXIT_USAGE. */
int cli_usage(const char *fmt, ...) FERRY_PRINTF(1, 2);
/* Prints "ferry: <msg>: <detail of r>" (one line) and returns EXIT_FAIL. */
int cli_fail(int r, const char *fmt, ...) FERRY_PRINTF(2, 3);
/* After getopt returned '?': names the bad option and the usage in one
 * line; returns EXIT_USAGE. main() sets opterr = 0 so getopt stays quiet. */
int cli_bad_option(char **argv, const char *usage);
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

int cmd_dump(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_destroy(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_set(int argc, char **argv);
int cmd_inherit(int argc, char **argv);
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
/* destroy of snapshots (DATASET@NAME, a%b ranges, -r -n -v -p); argv as
 * for cmd_destroy. cmd_destroy hands names containing '@' to it. */
int cli_snap_destroy(int argc, char **argv);
/* destroy of DATASET#BOOKMARK (cmd_snap.c). */
int cli_bookmark_destroy(int argc, char **argv);

#endif
