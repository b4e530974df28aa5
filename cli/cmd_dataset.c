/* cli/cmd_dataset.c — create, destroy, set, inherit: zfs verbs and options
 * over the store's datasets and properties (list and get are cmd_list.c's). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../store/store.h"
#include "table.h"

int cli_open_ds(const char *name, int flags, const char *verb, struct store_pool **pp,
		   struct store_ds *ds)
{
	int r, snap = strchr(name, '@') != NULL, mark = !snap && strchr(name, '#') != NULL;
	if ((r = store_name_check(name, snap ? STORE_NAME_SNAPSHOT :
					mark ? STORE_NAME_BOOKMARK : STORE_NAME_DATASET)) < 0)
		return cli_fail(r, "cannot %s '%s'", verb, name);
	if ((r = store_pool_open_for(name, flags, pp)) < 0)
		return cli_fail(r, "cannot %s '%s'", verb, name);
	if (mark) {
		struct store_bookmark b;
		if ((r = store_bookmark_lookup(*pp, name, &b)) == 0)
			store_bookmark_to_ds(&b, ds);
	} else if (snap) {
		struct store_snap s;
		if ((r = store_snap_lookup(*pp, name, &s)) == 0)
			store_snap_to_ds(&s, ds);
	} else {
		r = store_ds_lookup(*pp, name, ds);
	}
	if (r < 0) {
		store_pool_close(*pp);
		*pp = NULL;
		return cli_fail(r, "cannot %s '%s'", verb, name);
	}
	return EXIT_OK;
}

int cmd_create(int argc, char **argv)
{
	struct store_propset props[66];
	size_t nprops = 0;
	int c, r, parents = 0, type = STORE_DS_FILESYSTEM;
	char *volsize = NULL, *volblock = NULL;
	struct store_pool *p = NULL;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "create", "pV:b:o:", NULL)) != -1) {
		switch (c) {
		case 'p': parents = 1; break;
		case 'V': volsize = optarg; type = STORE_DS_VOLUME; break;
		case 'b': volblock = optarg; break;
		case 'o':
			if ((r = cli_parse_propset(optarg, props, 64, &nprops)) != EXIT_OK)
				return r;
			break;
		default:
			return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("usage: ferry create [-p] [-V size [-b blocksize]] [-o prop=val]... DATASET");
	if (volblock && !volsize)
		return cli_usage("-b applies only to volumes (-V size)");
	const char *name = argv[optind];
	if (volsize)
		props[nprops++] = (struct store_propset){"volsize", volsize};
	if (volblock)
		props[nprops++] = (struct store_propset){"volblocksize", volblock};
	if ((r = store_name_check(name, STORE_NAME_DATASET)) < 0)
		return cli_fail(r, "cannot create '%s'", name);
	if (!strchr(name, '/'))
		return cli_fail(ferry_err(FERR_EXISTS, "a pool's root dataset comes with the pool"),
				"cannot create '%s'", name);
	if ((r = store_pool_open_for(name, 0, &p)) < 0)
		return cli_fail(r, "cannot create '%s'", name);
	r = store_ds_create(p, name, type, parents, props, nprops);
	store_pool_close(p);
	return r < 0 ? cli_fail(r, "cannot create '%s'", name) : EXIT_OK;
}

/* What destroy -v prints: "would destroy NAME" (-n) or "will destroy
 * NAME"; with -p "destroy<TAB>NAME" either way, as current OpenZFS. */
struct destroy_say {
	const char *verb; /* "would" or "will" */
	int exact;        /* -p */
	json_t *names;    /* --json: the names, in the same order */
};

static void say_destroy(const struct destroy_say *s, const char *name)
{
	if (s->names)
		json_array_append_new(s->names, json_string(name));
	else if (s->exact)
		printf("destroy\t%s\n", name);
	else
		printf("%s destroy %s\n", s->verb, name);
}

static int print_would_destroy(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	say_destroy(arg, ds->name);
	return 0;
}

static int print_snaps_destroy(struct store_pool *p, const struct store_snap *s, void *arg)
{
	say_destroy(arg, s->name);
	return 0;
}

static int print_marks_destroy(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	say_destroy(arg, b->name);
	return 0;
}

static int print_tree_destroy(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	int r = store_snap_iter(p, ds, print_snaps_destroy, arg);
	if (r == 0)
		r = store_bookmark_iter(p, ds, print_marks_destroy, arg);
	return r ? r : print_would_destroy(p, ds, arg);
}

/* destroy --json: the names say collected (stolen). */
static int destroy_json(struct destroy_say *say, int dry)
{
	json_t *o = json_object();
	json_object_set_new(o, "dryrun", json_boolean(dry));
	json_object_set_new(o, "destroyed", say->names);
	say->names = NULL;
	return cli_json_print(cli_json_new("ferry destroy", "destroy", o), EXIT_OK);
}

int cmd_destroy(int argc, char **argv)
{
	const char *usage = "usage: ferry destroy [-r] [-n] [-v] [-p] DATASET"
			    " | DATASET@SNAP[%SNAP][,SNAP]... | DATASET#BOOKMARK";
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	int c, r, recursive = 0, dry = 0, verbose = 0, json = 0;
	struct destroy_say say = {"will", 0, NULL};
	struct store_pool *p = NULL;
	struct store_ds ds;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] != '-' && strchr(argv[i], '@'))
			return cli_snap_destroy(argc, argv);
		if (argv[i][0] != '-' && strchr(argv[i], '#'))
			return cli_bookmark_destroy(argc, argv);
	}
	optind = 1;
	while ((c = cli_getopt(argc, argv, "destroy", "rnvp", lo)) != -1) {
		switch (c) {
		case 'j':
			json = verbose = 1;
			break;
		case 'r': recursive = 1; break;
		case 'n': dry = 1; break;
		case 'v': verbose = 1; break;
		case 'p': say.exact = 1; break;
		default: return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("%s", usage);
	const char *name = argv[optind];
	if ((r = cli_open_ds(name, dry ? STORE_OPEN_RDONLY : 0, "destroy", &p, &ds)) != EXIT_OK)
		return r;
	if ((r = store_ds_destroy_check(p, name, recursive)) < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot destroy '%s'", name);
	}
	if (json && !(say.names = json_array())) {
		store_pool_close(p);
		return cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "cannot destroy '%s'", name);
	}
	if (dry) {
		say.verb = "would";
		if (verbose && (r = store_ds_walk(p, &ds, recursive ? -1 : 0, print_tree_destroy,
						 &say)) < 0) {
			json_decref(say.names);
			store_pool_close(p);
			return cli_fail(r, "cannot destroy '%s'", name);
		}
		store_pool_close(p);
		return json ? destroy_json(&say, 1) : EXIT_OK;
	}
	if (verbose && (r = store_ds_walk(p, &ds, recursive ? -1 : 0, print_tree_destroy, &say)) < 0) {
		json_decref(say.names);
		store_pool_close(p);
		return cli_fail(r, "cannot destroy '%s'", name);
	}
	r = store_ds_destroy(p, name, recursive);
	store_pool_close(p);
	if (r < 0) {
		json_decref(say.names);
		return cli_fail(r, "cannot destroy '%s'", name);
	}
	return json ? destroy_json(&say, 0) : EXIT_OK;
}

int cmd_set(int argc, char **argv)
{
	struct store_propset props[64];
	size_t nprops = 0;
	int i, r, rc = EXIT_OK;
	const char *usage = "usage: ferry set PROP=VALUE... DATASET...";
	if ((r = cli_no_options(argc, argv, "set")) >= 0)
		return r;
	for (i = optind; i < argc && strchr(argv[i], '='); i++)
		if ((r = cli_parse_propset(argv[i], props, 64, &nprops)) != EXIT_OK)
			return r;
	if (nprops == 0 || i >= argc)
		return cli_usage("%s", usage);
	for (; i < argc; i++) {
		struct store_pool *p = NULL;
		struct store_ds ds;
		if ((r = cli_open_ds(argv[i], 0, "set property for", &p, &ds)) != EXIT_OK) {
			rc = r;
			continue;
		}
		if ((r = store_prop_set(p, &ds, props, nprops, STORE_SRC_LOCAL)) < 0)
			rc = cli_fail(r, "cannot set property for '%s'", argv[i]);
		store_pool_close(p);
	}
	return rc;
}

int cmd_inherit(int argc, char **argv)
{
	int c, r, rc = EXIT_OK, recursive = 0, revert = 0;
	const char *usage = "usage: ferry inherit [-r] [-S] PROP DATASET...";
	optind = 1;
	while ((c = cli_getopt(argc, argv, "inherit", "rS", NULL)) != -1) {
		if (c == 'r')
			recursive = 1;
		else if (c == 'S')
			revert = 1;
		else
			return cli_opt_end();
	}
	if (argc - optind < 2)
		return cli_usage("%s", usage);
	const char *prop = argv[optind];
	for (int i = optind + 1; i < argc; i++) {
		struct store_pool *p = NULL;
		struct store_ds ds;
		if ((r = cli_open_ds(argv[i], 0, "inherit", &p, &ds)) != EXIT_OK) {
			rc = r;
			continue;
		}
		if ((r = store_prop_inherit(p, &ds, prop, recursive, revert)) < 0)
			rc = cli_fail(r, "cannot inherit '%s' for '%s'", prop, argv[i]);
		store_pool_close(p);
	}
	return rc;
}
