/* cli/main.c — the command table and the process entry point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct cli_cmd {
	const char *name;
	cli_fn fn;
	const char *summary;
};

static const struct cli_cmd commands[] = {
	{"dump", cmd_dump, "dump [-v] [FILE]                 print a stream's records"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ferry COMMAND [OPTIONS] ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %s\n", commands[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 failed (nothing changed), 2 usage error, 3 partial\n"
		   "see ferry(8) for details.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr), EXIT_USAGE;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
		return usage(stdout), EXIT_OK;
	if (ferry_lib_init() < 0) {
		fprintf(stderr, "ferry: cannot initialise libsodium\n");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return cli_usage("unknown command '%s' (try 'ferry --help')", argv[1]);
}
