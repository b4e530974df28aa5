/* cli/main.c — the command table and the process entry point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/store.h"
#include "cli.h"

struct cli_cmd {
	const char *name;
	cli_fn fn;
	const char *summary;
};

static const struct cli_cmd commands[] = {
	{"pool", cmd_pool, "pool create [-o prop=val]... NAME PATH | import PATH [NAME] | export NAME | list [-H] [-p] [--json] [NAME]... | status [NAME]..."},
	{"create", cmd_create, "create [-p] [-V size [-b blocksize]] [-o prop=val]... DATASET"},
	{"destroy", cmd_destroy, "destroy [-r] [-n] [-v] [-p] DATASET | destroy [-r|-R] [-d] [-f] [-n] [-v] [-p] DATASET@SNAP[%SNAP][,SNAP]... | destroy [-f] [-n] [-v] [-p] DATASET#BOOKMARK"},
	{"list", cmd_list, "list [-r] [-d depth] [-t type] [-o cols] [-s col] [-S col] [-H] [-p] [--json] [--prefix PREFIX] [DATASET]..."},
	{"get", cmd_get, "get [-r] [-d depth] [-t type] [-H] [-p] [-o fields] [--json] PROP[,PROP]...|all DATASET|SNAPSHOT..."},
	{"set", cmd_set, "set PROP=VALUE... DATASET..."},
	{"inherit", cmd_inherit, "inherit [-r] [-S] PROP DATASET..."},
	{"snapshot", cmd_snapshot, "snapshot [-r] [-v] [--cross-filesystems] [--from PATH] DATASET@NAME... | snapshot [-r] [-v] --auto[=LABEL] DATASET..."},
	{"bookmark", cmd_bookmark, "bookmark [DATASET]@SNAP|[DATASET]#BOOKMARK [DATASET]#BOOKMARK (one of the two whole)"},
	{"restore", cmd_restore, "restore [--file PATH]... [--force] [-v] SNAPSHOT DIR | restore [--file PATH]... --format tar|pax|zip SNAPSHOT"},
	{"hold", cmd_hold, "hold [-r] TAG SNAPSHOT..."},
	{"release", cmd_release, "release [-r] TAG SNAPSHOT..."},
	{"holds", cmd_holds, "holds [-r] [-H] [-p] [--json] SNAPSHOT...|URL@SNAP..."},
	{"rollback", cmd_rollback, "rollback [-r|-R] [-f] SNAPSHOT"},
	{"diff", cmd_diff, "diff [-F] [-H] SNAPSHOT [SNAPSHOT|DATASET]"},
	{"gc", cmd_gc, "gc [-v] POOL"},
	{"dump", cmd_dump, "dump [-v] [FILE]"},
	{"send", cmd_send, "send [-c] [--compress=CODEC] [-p] [-i SNAP|-i #BOOKMARK|-I SNAP] [-R] [-n] [-v] [-P] SNAPSHOT | send [-v] -t TOKEN"},
	{"send", cmd_send, "send [-c] [--compress=auto|CODEC] [-p] [-i SNAP|-I SNAP] [-v] SNAPSHOT --to URL [--token-file FILE] [--cacert FILE] [--limit-rate RATE]"},
	{"recv", cmd_recv, "recv [-F] [-s] [-u] [-d|-e] [-n] [-v] [-o PROP=VAL]... [-x PROP]... [--keep-source-compression] TARGET | recv -A TARGET"},
	{"recv", cmd_recv, "recv [options] --from URL/DATASET@SNAP [-i BASE] [--token-file FILE] [--cacert FILE] [--limit-rate RATE] TARGET"},
	{"receive", cmd_recv, "receive: same as recv"},
	{"serve", cmd_serve, "serve [--listen ADDR:PORT]... [--tls-cert FILE --tls-key FILE] --tokens FILE [--timeout SECONDS] POOL..."},
	{"token", cmd_token, "token create --tokens FILE --scope POOL[/DATASET] --perm read|append|write [--name NAME] | list --tokens FILE | revoke --tokens FILE ID|NAME"},
	{"sync", cmd_sync, "sync [-r] [-n] [-v] [--json] [--no-intermediate] [--compress=auto|CODEC] [-o PROP=VAL]... [-x PROP]... [-F] [--wait[=SECS]] [--token-file FILE] [--cacert FILE] SOURCE POOL/DATASET|ssh://[USER@]HOST[:PORT]/POOL/DATASET|https://HOST:PORT/POOL/DATASET"},
	{"prune", cmd_prune, "prune [-r] [-n] [-v] [--json] [--keep-last N] [--keep-hourly N] [--keep-daily N] [--keep-weekly N] [--keep-monthly N] [--keep-yearly N] [--keep-within DURATION] [--prefix P] [--gc] DATASET..."},
	{"shell", cmd_shell, "shell --scope POOL[/DATASET] [--append-only] [--read-only]  (an authorized_keys command)"},
	{"sync-state", cmd_sync_state, "sync-state [-r] DATASET  (what the far side of an ssh sync answers)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ferry COMMAND [OPTIONS] ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  ferry %s\n", commands[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 failed (nothing changed, but for what EXIT STATUS\n"
		   "in ferry(8) names), 2 usage error, 3 partial,\n"
		   "4 busy (sync: another sync of the same dataset and destination)\n"
		   "see ferry(8) for details.\n");
}

/* What this process is doing, for the message of another command that
 * finds a pool busy meanwhile: its command line, quoted and cut short. */
static void describe_self(int argc, char **argv)
{
	char buf[200];
	size_t n = (size_t)snprintf(buf, sizeof buf, "'ferry");
	for (int i = 1; i < argc && n < sizeof buf; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, " %s", argv[i]);
	if (n + 2 > sizeof buf)
		snprintf(buf + sizeof buf - 6, 6, "...'");
	else
		snprintf(buf + n, sizeof buf - n, "'");
	store_activity_default(buf);
}

int main(int argc, char **argv)
{
	opterr = 0;
	if (argc < 2)
		return usage(stderr), EXIT_USAGE;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage(stdout), EXIT_OK;
	if (ferry_lib_init() < 0) {
		fprintf(stderr, "ferry: cannot initialise libsodium\n");
		return EXIT_FAIL;
	}
	if (ferry_now_check() < 0)
		return cli_usage("%s", ferry_errmsg(-FERR_INVAL));
	describe_self(argc, argv);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return cli_usage("unknown command '%s' (try 'ferry --help')", argv[1]);
}
