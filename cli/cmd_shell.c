/* cli/cmd_shell.c — ferry shell: the forced command of an authorized_keys
 * line, e.g.
 *   command="ferry shell --scope bk/host1 --append-only",restrict ssh-ed25519 ...
 * It runs the ferry command in SSH_ORIGINAL_COMMAND only when sync/shell.c
 * lets it through (the commands a sync's far side needs, inside the
 * scope), and refuses anything else with one line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "../sync/sync.h"
#include "cli.h"

static const struct {
	const char *name;
	cli_fn fn;
} shell_cmds[] = {
	{"list", cmd_list}, {"get", cmd_get}, {"sync-state", cmd_sync_state},
	{"send", cmd_send}, {"recv", cmd_recv}, {"receive", cmd_recv},
};

int cmd_shell(int argc, char **argv)
{
	enum { OPT_SCOPE = 1000, OPT_APPEND, OPT_RO, OPT_HELP };
	static const struct option lo[] = {
		{"scope", required_argument, NULL, OPT_SCOPE},
		{"append-only", no_argument, NULL, OPT_APPEND},
		{"read-only", no_argument, NULL, OPT_RO},
		{"help", no_argument, NULL, OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry shell --scope POOL[/DATASET] [--append-only] [--read-only] "
			    "(as an authorized_keys command; runs SSH_ORIGINAL_COMMAND)";
	const char *scope = NULL;
	unsigned flags = 0;
	char **av = NULL;
	int ac = 0, c, r;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "shell", "", lo)) != -1) {
		switch (c) {
		case OPT_SCOPE: scope = optarg; break;
		case OPT_APPEND: flags |= SYNC_SHELL_APPEND_ONLY; break;
		case OPT_RO: flags |= SYNC_SHELL_READ_ONLY; break;
		case OPT_HELP: printf("%s\n", usage); return EXIT_OK;
		default: return cli_opt_end();
		}
	}
	if (!scope || optind != argc)
		return cli_usage("%s", usage);
	if ((r = store_name_check(scope, STORE_NAME_DATASET)) < 0)
		return cli_fail(r, "shell: bad scope '%s'", scope);
	if ((r = sync_shell_parse(getenv("SSH_ORIGINAL_COMMAND"), scope, flags, &av, &ac)) < 0) {
		fprintf(stderr, "ferry: shell: %s\n", ferry_errmsg(r));
		return EXIT_FAIL;
	}
	/* what another command that finds the pool busy reads: the command
	 * this shell runs */
	{
		char what[200];
		size_t n = (size_t)snprintf(what, sizeof what, "'ferry");
		for (int i = 0; i < ac && n < sizeof what; i++)
			n += (size_t)snprintf(what + n, sizeof what - n, " %s", av[i]);
		if (n + 2 > sizeof what)
			snprintf(what + sizeof what - 6, 6, "...'");
		else
			snprintf(what + n, sizeof what - n, "'");
		store_activity_default(what);
	}
	int rc = EXIT_FAIL;
	for (size_t i = 0; i < sizeof shell_cmds / sizeof shell_cmds[0]; i++)
		if (!strcmp(av[0], shell_cmds[i].name)) {
			rc = shell_cmds[i].fn(ac, av);
			break;
		}
	sync_shell_free(av, ac);
	return rc;
}
