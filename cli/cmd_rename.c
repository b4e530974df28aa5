/* cli/cmd_rename.c — zfs rename: a dataset to a new name in its pool
 * (-p: with its missing parents), a snapshot to a new name in its
 * dataset (-r: in every descendant that has it). The rules are
 * store/rename.c's; this parses, resolves zfs's short snapshot forms and
 * says what failed. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../store/store.h"
#include "cli.h"

static int rename_usage(const char *why)
{
	char line[512];
	cli_usage_line("rename", line, sizeof line);
	return cli_usage("rename: %s; %s", why, line);
}

/* The new snapshot's name after the '@' from what the user typed: "@b",
 * "b" or "ds@b" with ds the snapshot's own dataset (zfs: "snapshots must
 * be part of same dataset"). */
static int snap_target(const char *from, const char *to, const char **newname)
{
	const char *at = strchr(to, '@');
	size_t dslen = (size_t)(strchr(from, '@') - from);
	if (!at) {
		*newname = to;
		return 0;
	}
	if (at != to && ((size_t)(at - to) != dslen || strncmp(from, to, dslen)))
		return cli_fail(ferry_err(FERR_INVAL, "snapshots must be part of same dataset"),
				"cannot rename to '%s'", to);
	*newname = at + 1;
	return 0;
}

int cmd_rename(int argc, char **argv)
{
	struct store_pool *p = NULL;
	int c, r, recursive = 0, parents = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "rename", "rp", NULL)) != -1) {
		if (c == 'r')
			recursive = 1;
		else if (c == 'p')
			parents = 1;
		else
			return cli_opt_end();
	}
	/* zfs_do_rename's checks and words */
	if (argc - optind < 1)
		return rename_usage("missing source dataset argument");
	if (argc - optind < 2)
		return rename_usage("missing target dataset argument");
	if (argc - optind > 2)
		return rename_usage("too many arguments");
	if (recursive && parents)
		return rename_usage("-p and -r options are mutually exclusive");
	const char *from = argv[optind], *to = argv[optind + 1];
	int snap = strchr(from, '@') != NULL;
	if (recursive && !snap)
		return rename_usage("source dataset for recursive rename must be a snapshot");
	if (parents && snap)
		return rename_usage("-p applies to filesystems and volumes, not snapshots");
	if (strchr(from, '#'))
		return cli_fail(ferry_err(FERR_UNSUPPORTED, "bookmarks cannot be renamed"),
				"cannot rename '%s'", from);
	if ((r = store_name_check(from, snap ? STORE_NAME_SNAPSHOT : STORE_NAME_DATASET)) < 0 ||
	    (r = store_pool_open_for(from, 0, &p)) < 0)
		return cli_fail(r, "cannot rename '%s'", from);
	if (snap) {
		const char *newname = NULL;
		if ((r = snap_target(from, to, &newname)) != EXIT_OK) {
			store_pool_close(p);
			return r;
		}
		r = store_snap_rename(p, from, newname, recursive);
	} else {
		r = store_ds_rename(p, from, to, parents);
	}
	store_pool_close(p);
	return r < 0 ? cli_fail(r, "cannot rename '%s'", from) : EXIT_OK;
}
