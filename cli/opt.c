/* cli/opt.c — option parsing as Linux zfs does it (getopt_long with GNU
 * permutation: options may follow operands, "--" ends them), -h/--help
 * for every command, and errors that name the option as it was typed. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define OPT_LONG_MAX 64
#define OPT_SHORT_MAX 128
/* getopt_long's value for --help when -h is a command's own option */
#define OPT_HELP_VAL 0x10ff

static int opt_rc = EXIT_USAGE;

/* The long option of lo that arg ("--name" or "--name=value") names, if
 * it is one and its value is val. */
static const struct option *long_named(const struct option *lo, const char *arg, int val)
{
	if (!lo || strncmp(arg, "--", 2))
		return NULL;
	size_t n = strcspn(arg + 2, "=");
	for (; lo->name; lo++)
		if (strlen(lo->name) == n && !strncmp(lo->name, arg + 2, n) && lo->val == val)
			return lo;
	return NULL;
}

/* Prints what is wrong with the option getopt_long just refused (c is
 * '?' or ':'), as the user typed it. */
static void opt_error(int c, char **argv, const char *cmd, const struct option *lo)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	char typed[3] = {'-', (char)optopt, 0};
	char use[2048];
	cli_usage_line(cmd, use, sizeof use);
	if (c == ':') {
		/* a missing value: short options set optopt, long ones too */
		const struct option *l = long_named(lo, arg, optopt);
		cli_usage("%s: option '%s' needs a value; %s", cmd, l ? arg : typed, use);
	} else if (optopt == 0) {
		/* an unknown or ambiguous long option */
		cli_usage("%s: invalid option '%s'; %s", cmd, arg, use);
	} else if (long_named(lo, arg, optopt) && strchr(arg, '=')) {
		cli_usage("%s: option '%.*s' takes no value (got '%s'); %s", cmd,
			  (int)strcspn(arg, "="), arg, arg, use);
	} else {
		cli_usage("%s: invalid option '%s'; %s", cmd, typed, use);
	}
}

int cli_getopt(int argc, char **argv, const char *cmd, const char *shortopts,
	       const struct option *longopts)
{
	static char so[OPT_SHORT_MAX];
	static struct option lo[OPT_LONG_MAX + 2];
	size_t n = 0;
	int has_help = 0, help_val = 0;
	/* ':' first: a missing value comes back as ':', told apart from an
	 * unknown option; no '+': GNU permutation, as zfs on Linux */
	snprintf(so, sizeof so, ":%sh", shortopts[0] == '+' ? shortopts + 1 : shortopts);
	for (; longopts && longopts[n].name && n < OPT_LONG_MAX; n++) {
		lo[n] = longopts[n];
		if (!strcmp(longopts[n].name, "help")) {
			has_help = 1; /* the command's own, longer help: -h too */
			help_val = longopts[n].val;
		}
	}
	/* a command whose -h is its own (diff's, as zfs diff's) keeps --help
	 * as the help */
	int own_h = strchr(shortopts, 'h') != NULL, generic = own_h ? OPT_HELP_VAL : 'h';
	if (!has_help)
		lo[n++] = (struct option){"help", no_argument, NULL, generic};
	lo[n] = (struct option){NULL, 0, NULL, 0};
	int c = getopt_long(argc, argv, so, lo, NULL);
	if (c == 'h' && has_help && !own_h)
		return help_val;
	if ((c == 'h' && !own_h) || (c == OPT_HELP_VAL && !has_help)) {
		cli_help(cmd, stdout);
		opt_rc = EXIT_HELP_DONE;
		return '?';
	}
	if (c == '?' || c == ':') {
		opt_error(c, argv, cmd, lo);
		opt_rc = EXIT_USAGE;
		return '?';
	}
	return c;
}

int cli_opt_end(void)
{
	return opt_rc;
}

int cli_no_options(int argc, char **argv, const char *cmd)
{
	optind = 1;
	if (cli_getopt(argc, argv, cmd, "", NULL) != -1)
		return cli_opt_end();
	return -1;
}
