/* cli/cmd_token.c — ferry token create|list|revoke: the bearer tokens of
 * ferry serve (docs/ferry-serve.8, TOKENS); the file and the hashing are
 * net/'s. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../net/net.h"
#include "../store/store.h"
#include "table.h"

static const char *usage_text =
	"usage: ferry token create --tokens FILE --scope POOL[/DATASET] --perm read|append|write "
	"[--name NAME] | ferry token list --tokens FILE [-H] | ferry token revoke --tokens FILE ID|NAME";

static int token_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{"tokens", required_argument, NULL, 'T'},
		{"scope", required_argument, NULL, 's'},
		{"perm", required_argument, NULL, 'p'},
		{"name", required_argument, NULL, 'n'},
		{NULL, 0, NULL, 0},
	};
	const char *file = NULL, *scope = NULL, *perm_s = NULL, *name = NULL;
	char text[NET_TOKEN_TEXT];
	struct net_token info;
	int c, r, perm;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "token", "", lo)) != -1) {
		switch (c) {
		case 'T': file = optarg; break;
		case 's': scope = optarg; break;
		case 'p': perm_s = optarg; break;
		case 'n': name = optarg; break;
		default: return cli_opt_end();
		}
	}
	if (!file || !scope || !perm_s || optind != argc)
		return cli_usage("%s", usage_text);
	if ((r = net_perm_parse(perm_s, &perm)) < 0)
		return cli_usage("token create: %s", ferry_errmsg(r));
	if ((r = store_name_check(scope, STORE_NAME_DATASET)) < 0)
		return cli_fail(r, "token create: bad scope '%s'", scope);
	if (name && (r = net_token_name_check(name)) < 0)
		return cli_usage("token create: %s", ferry_errmsg(r));
	if ((r = net_token_create(file, perm, scope, name, text, &info)) < 0)
		return cli_fail(r, "cannot create a token in '%s'", file);
	printf("%s\n", text);
	fflush(stdout);
	explicit_bzero(text, sizeof text);
	fprintf(stderr, "ferry: token %s%s%s%s: %s on %s; it is shown only now (the file keeps its "
		"hash); a running 'ferry serve' takes it on SIGHUP\n", info.id,
		name ? " (" : "", name ? name : "", name ? ")" : "", net_perm_name(perm), scope);
	return EXIT_OK;
}

static int token_list(int argc, char **argv)
{
	static const struct option lo[] = {
		{"tokens", required_argument, NULL, 'T'},
		{NULL, 0, NULL, 0},
	};
	const char *file = NULL;
	struct net_tokens t;
	struct table tb;
	int c, r, scripted = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "token", "H", lo)) != -1) {
		switch (c) {
		case 'T': file = optarg; break;
		case 'H': scripted = 1; break;
		default: return cli_opt_end();
		}
	}
	if (!file || optind != argc)
		return cli_usage("%s", usage_text);
	if ((r = net_tokens_load(file, &t)) < 0)
		return cli_fail(r, "cannot list tokens");
	if ((r = table_init(&tb, 5)) < 0) {
		net_tokens_release(&t);
		return cli_fail(r, "cannot list tokens");
	}
	table_header(&tb, 0, "ID", 0);
	table_header(&tb, 1, "NAME", 0);
	table_header(&tb, 2, "PERM", 0);
	table_header(&tb, 3, "SCOPE", 0);
	table_header(&tb, 4, "CREATED", 0);
	for (size_t i = 0; i < t.n && r == 0; i++) {
		char when[32];
		time_t tt = (time_t)t.v[i].created;
		struct tm tm;
		localtime_r(&tt, &tm);
		strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
		char *cells[5] = {t.v[i].id, t.v[i].name, (char *)net_perm_name(t.v[i].perm), t.v[i].scope,
				  when};
		r = table_add(&tb, cells);
	}
	if (r == 0 && tb.nrows)
		table_print(&tb, stdout, scripted);
	table_release(&tb);
	net_tokens_release(&t);
	return r < 0 ? cli_fail(r, "cannot list tokens") : EXIT_OK;
}

static int token_revoke(int argc, char **argv)
{
	static const struct option lo[] = {
		{"tokens", required_argument, NULL, 'T'},
		{NULL, 0, NULL, 0},
	};
	const char *file = NULL;
	struct net_token gone;
	int c, r;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "token", "", lo)) != -1) {
		switch (c) {
		case 'T': file = optarg; break;
		default: return cli_opt_end();
		}
	}
	if (!file || argc - optind != 1)
		return cli_usage("%s", usage_text);
	if ((r = net_token_revoke(file, argv[optind], &gone)) < 0)
		return cli_fail(r, "cannot revoke '%s'", argv[optind]);
	fprintf(stderr, "ferry: token %s (%s, %s on %s) revoked; a running 'ferry serve' drops it on "
		"SIGHUP\n", gone.id, gone.name, net_perm_name(gone.perm), gone.scope);
	return EXIT_OK;
}

int cmd_token(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage("%s", usage_text);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("%s\n", usage_text);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "create"))
		return token_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return token_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "revoke"))
		return token_revoke(argc - 1, argv + 1);
	return cli_usage("token: unknown subcommand '%s'; %s", argv[1], usage_text);
}
