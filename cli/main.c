/* cli/main.c — the command table and the process entry point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../store/store.h"
#include "cli.h"

struct cli_cmd {
	const char *name;
	cli_fn fn;        /* NULL: a help entry only (pool's subcommands) */
	const char *synopsis; /* forms after "ferry ", one per line */
};

/* The synopses of --help, `ferry help CMD` and the usage list; docs/ferry.8's
 * SYNOPSIS says the same (tests/cli/101-options.t checks each command's
 * options against both). */
static const struct cli_cmd commands[] = {
	{"pool", cmd_pool, NULL},
	{"pool create", NULL, "pool create [-o prop=val]... NAME PATH"},
	{"pool import", NULL, "pool import PATH [NAME]"},
	{"pool export", NULL, "pool export NAME"},
	{"pool list", NULL, "pool list [-H] [-p] [--json] [NAME]..."},
	{"pool status", NULL, "pool status [-v] [--json] [NAME]..."},
	{"pool recover", NULL, "pool recover [-n] NAME"},
	{"pool upgrade", NULL, "pool upgrade NAME"},
	{"create", cmd_create, "create [-p] [-V size [-b blocksize]] [-o prop=val]... DATASET"},
	{"destroy", cmd_destroy, "destroy [-r] [-n] [-v] [-p] [--json] DATASET\n"
				 "destroy [-r|-R] [-d] [-f] [-n] [-v] [-p] [--json] DATASET@SNAP[%SNAP][,SNAP]...\n"
				 "destroy [-f] [-n] [-v] [-p] [--json] DATASET#BOOKMARK"},
	{"list", cmd_list, "list [-r] [-d depth] [-t type] [-o cols] [-s col] [-S col] [-H] [-p] [--json] [--prefix PREFIX] [DATASET]..."},
	{"get", cmd_get, "get [-r] [-d depth] [-t type] [-s source[,source]...] [-H] [-p] [-o all|fields] [--json] PROP[,PROP]...|all DATASET|SNAPSHOT..."},
	{"set", cmd_set, "set PROP=VALUE... DATASET..."},
	{"inherit", cmd_inherit, "inherit [-r] [-S] PROP DATASET..."},
	{"rename", cmd_rename, "rename [-p] DATASET NEWDATASET\n"
			       "rename [-r] SNAPSHOT SNAPSHOT|@NAME"},
	{"snapshot", cmd_snapshot, "snapshot [-r] [-v] [-q] [--json] [--cross-filesystems] [--from PATH] DATASET@NAME...\n"
				   "snapshot [-r] [-v] [-q] [--json] --auto[=LABEL] DATASET..."},
	{"bookmark", cmd_bookmark, "bookmark [DATASET]@SNAP|[DATASET]#BOOKMARK DATASET#BOOKMARK"},
	{"restore", cmd_restore, "restore [--file PATH]... [--force] [--untrusted] [--no-same-owner] [--no-same-permissions] [--no-devices] [--no-setuid] [-v] [-q] [--json] SNAPSHOT DIR\n"
				 "restore [--file PATH]... [--untrusted] [--no-same-owner] [--no-devices] [--no-setuid] --format tar|pax|zip SNAPSHOT"},
	{"hold", cmd_hold, "hold [-r] TAG SNAPSHOT..."},
	{"release", cmd_release, "release [-r] TAG SNAPSHOT..."},
	{"holds", cmd_holds, "holds [-r] [-H] [-p] [--json] SNAPSHOT...|URL@SNAP..."},
	{"rollback", cmd_rollback, "rollback [-r|-R] [-f] SNAPSHOT"},
	{"diff", cmd_diff, "diff [-F] [-H] [-t] [-h] [--json] SNAPSHOT [SNAPSHOT|DATASET]"},
	{"gc", cmd_gc, "gc [-v] [-q] [--json] POOL"},
	{"scrub", cmd_scrub, "scrub [-v] [-q] [--json] [--deep] [--limit-rate RATE] [--repair-from POOL|URL [--token-file FILE] [--cacert FILE] [--timeout S]] POOL\n"
			     "scrub -s POOL"},
	{"dump", cmd_dump, "dump [-v] [FILE]"},
	{"send", cmd_send, "send [-c] [--compress=CODEC] [-p] [-i SNAP|-i #BOOKMARK|-I SNAP] [-R] [-n] [-v] [-P] [-q] [--json] SNAPSHOT\n"
			   "send [-v] [-P] [-n] [-q] [--json] -t TOKEN\n"
			   "send [-c] [--compress=auto|CODEC] [-p] [-i SNAP|-I SNAP] [-v] [-q] SNAPSHOT --to URL [--token-file FILE] [--cacert FILE] [--limit-rate RATE] [--timeout SECONDS] [--retries N]\n"
			   "send -R [-c] [--compress=auto|CODEC] [-v] SNAPSHOT --to URL [--token-file FILE] [--cacert FILE] [--limit-rate RATE] [--timeout SECONDS] [--retries N]"},
	{"recv", cmd_recv, "recv [-F] [-s] [-u] [-d|-e] [-n] [-v] [-o PROP=VAL]... [-x PROP]... [--keep-source-compression] [-q] [--json] TARGET\n"
			   "recv -A TARGET\n"
			   "recv [options] --from URL/DATASET@SNAP [-i BASE] [--token-file FILE] [--cacert FILE] [--limit-rate RATE] [--timeout SECONDS] [--retries N] TARGET"},
	{"receive", cmd_recv, "receive: the same as recv"},
	{"serve", cmd_serve, "serve [--listen ADDR:PORT]... [--tls-cert FILE --tls-key FILE] --tokens FILE [--timeout SECONDS] POOL..."},
	{"token", cmd_token, "token create --tokens FILE --scope POOL[/DATASET] --perm read|append|write [--name NAME]\n"
			     "token list --tokens FILE\n"
			     "token revoke --tokens FILE ID|NAME"},
	{"sync", cmd_sync, "sync [-r] [-n] [-v] [-q] [--json] [--no-intermediate] [--compress=auto|CODEC] [-o PROP=VAL]... [-x PROP]... [-F] [--wait[=SECS]] [--token-file FILE] [--cacert FILE] SOURCE POOL/DATASET|ssh://[USER@]HOST[:PORT]/POOL/DATASET|https://HOST:PORT/POOL/DATASET"},
	{"prune", cmd_prune, "prune [-r] [-n] [-v] [--json] [--keep-last N] [--keep-hourly N] [--keep-daily N] [--keep-weekly N] [--keep-monthly N] [--keep-yearly N] [--keep-within DURATION] [--prefix P] [--gc] DATASET..."},
	{"shell", cmd_shell, "shell --scope POOL[/DATASET] [--append-only] [--read-only]  (an authorized_keys command)"},
	{"sync-state", cmd_sync_state, "sync-state [-r] DATASET  (what the far side of an ssh sync answers)"},
	{"help", NULL, "help [COMMAND]"},
	{"version", NULL, "version"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* Prints each form of a synopsis after prefix ("usage: " or "  "). */
static void print_forms(FILE *f, const char *first, const char *rest, const char *syn)
{
	for (int i = 0; *syn; i++) {
		size_t n = strcspn(syn, "\n");
		fprintf(f, "%sferry %.*s\n", i ? rest : first, (int)n, syn);
		syn += n + (syn[n] == '\n');
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ferry COMMAND [OPTIONS] ...\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].synopsis)
			print_forms(f, "  ", "  ", commands[i].synopsis);
	fprintf(f, "\noptions may follow operands; '--' ends them. 'ferry COMMAND --help'\n"
		   "(or 'ferry help COMMAND') shows one command's usage and options.\n"
		   "\nexit codes: 0 ok, 1 failed (nothing changed, but for what EXIT STATUS\n"
		   "in ferry(8) names), 2 usage error, 3 partial,\n"
		   "4 busy (sync: another sync of the same dataset and destination),\n"
		   "5 damaged (scrub: the pool has damage)\n"
		   "see ferry(8) for details.\n");
}

void cli_usage_line(const char *cmd, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *syn = commands[i].synopsis;
		if (strcmp(commands[i].name, cmd) || !syn)
			continue;
		if (!strcmp(commands[i].name, "receive")) {
			cli_usage_line("recv", buf, n);
			return;
		}
		for (int k = 0; *syn && len < n; k++) {
			size_t m = strcspn(syn, "\n");
			len += (size_t)snprintf(buf + len, n - len, "%sferry %.*s",
						k ? " | " : "usage: ", (int)m, syn);
			syn += m + (syn[m] == '\n');
		}
	}
}

int cli_help(const char *cmd, FILE *f)
{
	size_t len = strlen(cmd);
	int found = 0;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *n = commands[i].name;
		/* "pool": every pool form; "receive": recv's */
		int match = !strcmp(n, cmd) ||
			    (!strncmp(n, cmd, len) && n[len] == ' ' && !strchr(cmd, ' '));
		if (!match || !commands[i].synopsis)
			continue;
		const char *syn = commands[i].synopsis;
		if (!strcmp(n, "receive"))
			return cli_help("recv", f);
		print_forms(f, found ? "       " : "usage: ", "       ", syn);
		found = 1;
	}
	if (found)
		fprintf(f, "options may follow operands; '--' ends them. See ferry(8).\n");
	return found ? 0 : -1;
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

/* ferry help [COMMAND [SUBCOMMAND]]: the list, or exactly what the
 * command's own --help prints (some have more than the synopsis). */
static int help(int argc, char **argv)
{
	if (argc < 2)
		return usage(stdout), EXIT_OK;
	char name[64];
	snprintf(name, sizeof name, "%s%s%s", argv[1], argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
	for (size_t i = 0; i < NCOMMANDS && argc <= 3; i++) {
		if (!commands[i].fn || strcmp(commands[i].name, argv[1]))
			continue;
		char opt[] = "--help";
		char *av[4] = {argv[1], argc > 2 ? argv[2] : opt, argc > 2 ? opt : NULL, NULL};
		if (argc > 2 && cli_help(name, stdout) < 0)
			break;
		if (argc > 2) /* printed: pool's subcommands have nothing more */
			return EXIT_OK;
		int rc = commands[i].fn(2, av);
		return rc == EXIT_HELP_DONE ? EXIT_OK : rc;
	}
	return cli_usage("help: unknown command '%s' (try 'ferry --help')", name);
}

int main(int argc, char **argv)
{
	opterr = 0;
	if (argc < 2)
		return usage(stderr), EXIT_USAGE;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return usage(stdout), EXIT_OK;
	if (!strcmp(argv[1], "help"))
		return help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		if (argc > 2)
			return cli_usage("version takes no arguments");
		printf("ferry %s\n", FERRY_VERSION);
		return EXIT_OK;
	}
	if (ferry_lib_init() < 0) {
		fprintf(stderr, "ferry: cannot initialise libsodium\n");
		return EXIT_FAIL;
	}
	if (ferry_now_check() < 0)
		return cli_usage("%s", ferry_errmsg(-FERR_INVAL));
	describe_self(argc, argv);
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].fn && !strcmp(argv[1], commands[i].name)) {
			int rc = commands[i].fn(argc - 1, argv + 1);
			return rc == EXIT_HELP_DONE ? EXIT_OK : rc;
		}
	return cli_usage("unknown command '%s' (try 'ferry --help')", argv[1]);
}
