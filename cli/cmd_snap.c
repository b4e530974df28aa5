/* cli/cmd_snap.c — snapshot, restore, rollback, diff, gc, and destroy of
 * snapshots (called by cmd_destroy for names with '@'). Parsing and
 * printing only; the work is in store/. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../store/store.h"
#include "../capture/capture.h"
#include "../restore/restore.h"
#include "cli.h"

/* Prints bytes as zfs diff does: printable ASCII as is, the rest (and
 * backslash, space) as \0ooo. */
static void put_escaped(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c >= 0x7f || c == '\\')
			fprintf(f, "\\%04o", c);
		else
			fputc(c, f);
	}
}

static void warn_cb(void *arg, const char *path, const char *msg)
{
	fputs("ferry: warning: ", stderr);
	put_escaped(stderr, path, strlen(path));
	fprintf(stderr, ": %s\n", msg);
}

/* snapshot -q: no progress line (a flag for the whole command, which
 * snapshots one dataset or a tree) */
static int snap_quiet;
/* snapshot --json: the report of each snapshot made, by name, printed
 * once they all are (they commit together or not at all) */
static json_t *snap_json;

struct snap_progress {
	struct cli_meter meter; /* bytes read and files: capture knows no total */
};

static void progress_cb(void *arg, const struct capture_stats *st)
{
	struct snap_progress *pg = arg;
	cli_meter_update(&pg->meter, st->bytes_read, st->files_read + st->files_reused);
}

static void snap_warn_cb(void *arg, const char *path, const char *msg)
{
	struct snap_progress *pg = arg;
	cli_meter_clear(&pg->meter);
	warn_cb(arg, path, msg);
}

static int snapshot_one(struct store_pool *p, const struct store_ds *ds, const char *snap,
			const char *from, int verbose, int cross_fs, uint64_t creation_ns)
{
	struct capture_stats st;
	struct capture_opts o;
	struct snap_progress pg;
	char full[2 * STORE_NAME_MAX + 2];
	snprintf(full, sizeof full, "%s@%s", ds->name, snap);
	memset(&o, 0, sizeof o);
	cli_meter_start(&pg.meter, full, 0, snap_quiet);
	o.from = from;
	o.creation_ns = creation_ns;
	o.cross_fs = cross_fs;
	o.warn = snap_warn_cb;
	o.arg = &pg;
	o.count_blocks = verbose || snap_json; /* the summary's "blocks" */
	if (pg.meter.on)
		o.progress = progress_cb;
	uint64_t t0 = ferry_now_ns();
	int r = capture_snapshot(p, ds, snap, &o, &st);
	cli_meter_end(&pg.meter);
	if (r < 0 && r != -FERR_PARTIAL)
		return cli_fail(r, "cannot snapshot '%s'", full);
	if (snap_json) {
		json_t *j = json_object();
		json_object_set_new(j, "name", json_string(full));
		json_object_set_new(j, "files_read", cli_json_u64(st.files_read));
		json_object_set_new(j, "files_reused", cli_json_u64(st.files_reused));
		json_object_set_new(j, "files_changed", cli_json_u64(st.files_changed_during));
		json_object_set_new(j, "dirs", cli_json_u64(st.dirs));
		json_object_set_new(j, "symlinks", cli_json_u64(st.symlinks));
		json_object_set_new(j, "specials", cli_json_u64(st.specials));
		json_object_set_new(j, "bytes_read", cli_json_u64(st.bytes_read));
		json_object_set_new(j, "blocks_written", cli_json_u64(st.blocks_written));
		json_object_set_new(j, "bytes_written", cli_json_u64(st.bytes_written));
		json_object_set_new(j, "blocks", cli_json_u64(st.blocks_total));
		json_object_set_new(j, "warnings", cli_json_u64(st.warnings));
		json_object_set_new(j, "ns", cli_json_u64(ferry_now_ns() - t0));
		if (json_object_set_new(snap_json, full, j) < 0)
			return cli_fail(ferry_err(FERR_NOMEM, "building JSON"),
					"cannot snapshot '%s'", full);
	} else if (verbose) {
		double secs = (double)(ferry_now_ns() - t0) / 1e9;
		printf("%s: files read %" PRIu64 ", files reused %" PRIu64 ", dirs %" PRIu64
		       ", blocks written %" PRIu64 ", bytes written %" PRIu64 ", bytes read %" PRIu64
		       ", blocks %" PRIu64 ", warnings %" PRIu64 ", %.2fs\n",
		       full, st.files_read, st.files_reused, st.dirs, st.blocks_written,
		       st.bytes_written, st.bytes_read, st.blocks_total, st.warnings, secs);
		fflush(stdout);
	}
	if (r == -FERR_PARTIAL) {
		cli_warn("%s", ferry_errmsg(r));
		return EXIT_PARTIAL;
	}
	return EXIT_OK;
}

/* One snapshot the command makes: a dataset and the snapshot's name. */
struct snap_set {
	struct store_ds *ds;
	const char **snap;
	size_t n, cap_ds, cap_snap;
	const char *cur; /* the name the walk adds */
};

static int snap_set_add(struct snap_set *l, const struct store_ds *ds, const char *snap)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->ds[i].id == ds->id && !strcmp(l->snap[i], snap))
			return 0; /* -r over a name also listed: one snapshot */
	int r;
	if ((r = VEC_GROW(l->ds, l->cap_ds, l->n, 16, "listing the snapshots")) < 0 ||
	    (r = VEC_GROW(l->snap, l->cap_snap, l->n, 16, "listing the snapshots")) < 0)
		return r;
	l->ds[l->n] = *ds;
	l->snap[l->n++] = snap;
	return 0;
}

static int snapshot_walk_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct snap_set *l = arg;
	return snap_set_add(l, ds, l->cur);
}

/* The pool part of a dataset or snapshot name, in out. */
static void pool_part(const char *name, char *out, size_t n)
{
	size_t len = strcspn(name, "/@#");
	snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), name);
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option lo[] = {
		{"from", required_argument, NULL, 'f'},
		{"verbose", no_argument, NULL, 'v'},
		{"cross-filesystems", no_argument, NULL, 'X'},
		{"auto", optional_argument, NULL, 'A'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0},
	};
	const char *usage = "usage: ferry snapshot [-r] [-v] [-q] [--json] [--cross-filesystems] "
			    "[--from PATH] DATASET@NAME... | ferry snapshot [-r] [-v] [-q] [--json] "
			    "--auto[=LABEL] DATASET...";
	const char *from = NULL, *label = NULL;
	char autosnap[STORE_NAME_MAX + 1] = "";
	int c, recursive = 0, verbose = 0, cross_fs = 0, rc = EXIT_OK, r, autoname_on = 0, json = 0;
	struct snap_set set;
	struct store_pool *p = NULL;
	char **names = NULL; /* argv's operands, or DATASET@auto-... with --auto */
	char pool0[STORE_NAME_MAX + 1], pooln[STORE_NAME_MAX + 1], dsname[STORE_NAME_MAX + 1];
	optind = 1;
	snap_quiet = 0;
	snap_json = NULL;
	while ((c = cli_getopt(argc, argv, "snapshot", "rvq", lo)) != -1) {
		if (c == 'q')
			snap_quiet = 1;
		else if (c == 'j')
			json = 1;
		else if (c == 'r')
			recursive = 1;
		else if (c == 'v')
			verbose = 1;
		else if (c == 'f')
			from = optarg;
		else if (c == 'X')
			cross_fs = 1;
		else if (c == 'A') {
			autoname_on = 1;
			label = optarg;
		} else
			return cli_opt_end();
	}
	if (optind >= argc)
		return cli_usage("%s", usage);
	if (from && recursive)
		return cli_usage("snapshot: --from and -r cannot be combined");
	if (from && argc - optind > 1)
		return cli_usage("snapshot: --from takes one snapshot name");
	if (autoname_on) {
		/* auto-YYYYMMDDTHHMMSSZ[-LABEL]: ISO 8601 basic format in UTC,
		 * so names sort as their times do; one time for every dataset
		 * named, as -r gives one name to the whole tree */
		time_t t = (time_t)(ferry_now_ns() / 1000000000u);
		struct tm tm;
		char stamp[32];
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		if (label && (!*label || strpbrk(label, "@#/%,")))
			return cli_usage("snapshot: --auto=LABEL: '%s' is not a snapshot name part",
					 label);
		snprintf(autosnap, sizeof autosnap, "auto-%s%s%s", stamp, label ? "-" : "",
			 label ? label : "");
	}
	memset(&set, 0, sizeof set);
	/* --json is -v's report as JSON (as restore's) */
	if (json && !(snap_json = json_object()))
		return cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "cannot snapshot");
	if (!(names = calloc((size_t)argc, sizeof *names))) {
		json_decref(snap_json);
		snap_json = NULL;
		return cli_fail(ferry_err(FERR_NOMEM, "listing the snapshots"), "cannot snapshot");
	}
	/* as zfs, the whole list is checked before any snapshot is made, and
	 * the snapshots are made together or not at all: every name first */
	for (int i = optind; i < argc; i++) {
		const char *name = argv[i];
		if (autoname_on) {
			if (strchr(name, '@')) {
				rc = cli_usage("snapshot: with --auto, name datasets, not snapshots "
					       "('%s')", name);
				goto out;
			}
			if (asprintf(&names[i], "%s@%s", name, autosnap) < 0) {
				names[i] = NULL;
				rc = cli_fail(ferry_err(FERR_NOMEM, "naming the snapshot"),
					      "cannot snapshot '%s'", name);
				goto out;
			}
			name = names[i];
		} else if (!(names[i] = strdup(name))) {
			rc = cli_fail(ferry_err(FERR_NOMEM, "naming the snapshot"),
				      "cannot snapshot '%s'", name);
			goto out;
		}
		const char *at = strchr(name, '@');
		if (!at || at == name || !at[1] || (size_t)(at - name) > STORE_NAME_MAX) {
			rc = cli_usage("snapshot: '%s' is not DATASET@NAME", name);
			goto out;
		}
		if ((r = store_name_check(name, STORE_NAME_SNAPSHOT)) < 0) {
			rc = cli_fail(r, "cannot snapshot '%s'", name);
			goto out;
		}
		pool_part(name, i == optind ? pool0 : pooln, sizeof pool0);
		if (i > optind && strcmp(pool0, pooln)) {
			rc = cli_fail(ferry_err(FERR_INVAL, "the snapshots of one command are in "
						"one pool, not '%s' and '%s'", pool0, pooln),
				      "cannot snapshot '%s'", name);
			goto out;
		}
	}
	snprintf(dsname, sizeof dsname, "%.*s", (int)strcspn(names[optind], "@"), names[optind]);
	if ((r = store_pool_open_for(dsname, 0, &p)) < 0) {
		rc = cli_fail(r, "cannot snapshot '%s'", names[optind]);
		goto out;
	}
	{
		char what[STORE_NAME_MAX + 32];
		snprintf(what, sizeof what, "a snapshot of %s%s%s", dsname,
			 argc - optind > 1 ? " and more" : "", recursive ? " (-r)" : "");
		store_pool_activity(p, what);
	}
	/* the datasets, and no snapshot that exists already */
	for (int i = optind; i < argc; i++) {
		const char *name = names[i], *at = strchr(name, '@');
		struct store_ds ds;
		snprintf(dsname, sizeof dsname, "%.*s", (int)(at - name), name);
		if ((r = store_ds_lookup(p, dsname, &ds)) < 0) {
			rc = cli_fail(r, "cannot snapshot '%s'", name);
			goto out;
		}
		set.cur = at + 1;
		r = recursive ? store_ds_walk(p, &ds, -1, snapshot_walk_cb, &set)
			      : snap_set_add(&set, &ds, at + 1);
		if (r < 0) {
			rc = cli_fail(r, "cannot snapshot '%s'", name);
			goto out;
		}
	}
	for (size_t i = 0; i < set.n; i++) {
		char full[2 * STORE_NAME_MAX + 2];
		struct store_snap sn;
		if (snprintf(full, sizeof full, "%s@%s", set.ds[i].name, set.snap[i]) > STORE_NAME_MAX) {
			rc = cli_fail(ferry_err(FERR_NAME, "the name is too long"),
				      "cannot snapshot '%s'", full);
			goto out;
		}
		if ((r = store_snap_lookup(p, full, &sn)) == 0) {
			rc = cli_fail(ferry_err(FERR_EXISTS, "snapshot '%s' already exists", full),
				      "cannot snapshot '%s'", full);
			goto out;
		}
		if (r != -FERR_NOENT) {
			rc = cli_fail(r, "cannot snapshot '%s'", full);
			goto out;
		}
		ferry_err_clear();
	}
	if (set.n == 1) {
		rc = snapshot_one(p, &set.ds[0], set.snap[0], from, verbose, cross_fs, 0);
		goto out;
	}
	/* like zfs, all or nothing and in one txg with one creation time: the
	 * snapshots commit in one catalogue transaction (which holds the
	 * pool's write lock until the last dataset is captured) */
	uint64_t now = ferry_now_ns();
	if ((r = store_tx_begin(p)) < 0) {
		rc = cli_fail(r, "cannot snapshot '%s'", names[optind]);
		goto out;
	}
	if ((r = store_txg_pin(p)) < 0) {
		store_tx_rollback(p);
		rc = cli_fail(r, "cannot snapshot '%s'", names[optind]);
		goto out;
	}
	for (size_t i = 0; i < set.n && rc != EXIT_FAIL; i++) {
		int one = snapshot_one(p, &set.ds[i], set.snap[i], NULL, verbose, cross_fs, now);
		if (one > rc)
			rc = one;
	}
	store_txg_unpin(p);
	if (rc == EXIT_FAIL) {
		/* snapshot_one said what failed */
		store_tx_rollback(p);
	} else if ((r = store_tx_commit(p)) < 0) {
		rc = cli_fail(r, "cannot snapshot '%s'", names[optind]);
	}
out:
	store_pool_close(p);
	if (names)
		for (int i = optind; i < argc; i++)
			free(names[i]);
	free(names);
	free(set.ds);
	free(set.snap);
	if (snap_json && rc != EXIT_FAIL && rc != EXIT_USAGE)
		rc = cli_json_print(cli_json_new("ferry snapshot", "snapshots", snap_json), rc);
	else
		json_decref(snap_json);
	snap_json = NULL;
	return rc;
}

static void rwarn_cb(void *arg, const char *path, const char *msg)
{
	cli_meter_clear(arg); /* the warning, then the line again */
	warn_cb(arg, path, msg);
}

static void rprogress_cb(void *arg, const struct restore_stats *st)
{
	cli_meter_update(arg, st->bytes, st->files + st->hardlinks + st->dirs + st->symlinks +
						 st->specials);
}

static const char restore_usage[] =
	"usage: ferry restore [--file PATH]... [--force] [--untrusted] [--no-same-owner] "
	"[--no-same-permissions] [--no-devices] [--no-setuid] [-v] [-q] [--json] SNAPSHOT DIR | "
	"ferry restore [OPTION]... --format tar|pax|zip SNAPSHOT > FILE";

static const char restore_help[] =
	"  --file PATH            restore only PATH (relative to the snapshot's root); repeatable\n"
	"  --force                restore into a non-empty DIR, replacing what is in the way\n"
	"  --format tar|pax|zip   write the tree as an archive to standard output\n"
	"  --no-same-owner        the restoring user owns everything (as root too: no chown)\n"
	"  --no-same-permissions  modes masked by the umask, as tar does for ordinary users\n"
	"  --no-devices           device nodes are not created (each skipped with a warning, exit 3)\n"
	"  --no-setuid            setuid and setgid bits cleared, file capabilities not restored\n"
	"  --untrusted            all four: for snapshots of someone else's data restored as root\n"
	"                         (archives: all but --no-same-permissions shape the entries)\n"
	"  -v                     print what was restored\n"
	"  -q                     no progress line (drawn only when stderr is a terminal)\n"
	"  --json                 print it as JSON (see ferry-json(7)); not with --format\n";

/* Parses restore's command line into o, its --file paths into files
 * (room for argc), and *verbose. Returns EXIT_OK to go on, or the exit
 * code to end with: after --help (EXIT_OK, *help set) or an error it
 * printed. */
static int restore_options(int argc, char **argv, struct restore_opts *o, const char **files,
			   int *verbose, int *help, int *quiet)
{
	enum { OPT_NO_OWNER = 1000, OPT_NO_PERMS, OPT_NO_DEV, OPT_NO_SUID, OPT_UNTRUSTED, OPT_HELP,
	       OPT_JSON };
	static const struct option lo[] = {
		{"file", required_argument, NULL, 'F'},
		{"force", no_argument, NULL, 'f'},
		{"format", required_argument, NULL, 'T'},
		{"verbose", no_argument, NULL, 'v'},
		{"no-same-owner", no_argument, NULL, OPT_NO_OWNER},
		{"no-same-permissions", no_argument, NULL, OPT_NO_PERMS},
		{"no-devices", no_argument, NULL, OPT_NO_DEV},
		{"no-setuid", no_argument, NULL, OPT_NO_SUID},
		{"untrusted", no_argument, NULL, OPT_UNTRUSTED},
		{"help", no_argument, NULL, OPT_HELP},
		{"json", no_argument, NULL, OPT_JSON},
		{NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "restore", "vq", lo)) != -1) {
		switch (c) {
		case 'q': *quiet = 1; break;
		case OPT_JSON: *verbose = 2; break;
		case 'F': files[o->nfiles++] = optarg; break;
		case 'f': o->force = 1; break;
		case 'T': o->format = optarg; break;
		case 'v': *verbose = 1; break;
		case OPT_NO_OWNER: o->untrusted |= RESTORE_NO_SAME_OWNER; break;
		case OPT_NO_PERMS: o->untrusted |= RESTORE_NO_SAME_PERMISSIONS; break;
		case OPT_NO_DEV: o->untrusted |= RESTORE_NO_DEVICES; break;
		case OPT_NO_SUID: o->untrusted |= RESTORE_NO_SETUID; break;
		case OPT_UNTRUSTED:
			o->untrusted |= RESTORE_NO_SAME_OWNER | RESTORE_NO_SAME_PERMISSIONS |
					RESTORE_NO_DEVICES | RESTORE_NO_SETUID;
			break;
		case OPT_HELP:
			printf("%s\n%s", restore_usage, restore_help);
			*help = 1;
			return EXIT_OK;
		default:
			return cli_opt_end();
		}
	}
	const char *format = o->format;
	if (argc - optind != (format ? 1 : 2))
		return cli_usage("%s", restore_usage);
	if (format && strcmp(format, "tar") && strcmp(format, "pax") && strcmp(format, "zip"))
		return cli_usage("restore: unknown format '%s' (tar, pax, zip)", format);
	if (format && isatty(1))
		return cli_usage("restore: refusing to write an archive to a terminal");
	if (format && *verbose == 2)
		return cli_usage("restore: --json and --format both want standard output");
	return EXIT_OK;
}

int cmd_restore(int argc, char **argv)
{
	struct store_pool *p = NULL;
	struct restore_opts o;
	struct restore_stats st;
	struct store_snap s;
	int r, rc, verbose = 0, help = 0, quiet = 0;
	struct cli_meter meter;
	memset(&meter, 0, sizeof meter);
	memset(&o, 0, sizeof o);
	const char **files = calloc((size_t)argc, sizeof *files);
	if (!files)
		return cli_fail(-FERR_NOMEM, "restore");
	o.files = files;
	if ((rc = restore_options(argc, argv, &o, files, &verbose, &help, &quiet)) != EXIT_OK || help)
		goto out;
	const char *name = argv[optind];
	if ((r = store_pool_open_for(name, STORE_OPEN_RDONLY, &p)) < 0 ||
	    (r = store_snap_lookup(p, name, &s)) < 0) {
		rc = cli_fail(r, "cannot restore '%s'", name);
		goto out;
	}
	o.fd = 1;
	/* the process's umask, for --no-same-permissions (read back at once:
	 * there is no call that only reads it) */
	mode_t um = umask(0);
	umask(um);
	o.umask = um;
	o.warn = rwarn_cb;
	o.arg = &meter;
	if (!o.format) {
		/* the line's total: the snapshot's logical bytes */
		struct store_ds sds;
		struct store_propval v;
		uint64_t total = 0;
		store_snap_to_ds(&s, &sds);
		if (store_prop_get(p, &sds, "logicalreferenced", &v) == 0)
			total = strtoull(v.exact, NULL, 10);
		ferry_err_clear();
		cli_meter_start(&meter, name, total, quiet);
		o.progress = rprogress_cb;
	}
	r = restore_snapshot(p, &s, o.format ? NULL : argv[optind + 1], &o, &st);
	cli_meter_end(&meter);
	if (r < 0 && r != -FERR_PARTIAL) {
		rc = cli_fail(r, "cannot restore '%s'", name);
		goto out;
	}
	if (verbose == 2) {
		json_t *j = json_object(), *snaps = json_object();
		json_object_set_new(j, "name", json_string(name));
		json_object_set_new(j, "directory", json_string(argv[optind + 1]));
		json_object_set_new(j, "files", cli_json_u64(st.files));
		json_object_set_new(j, "hardlinks", cli_json_u64(st.hardlinks));
		json_object_set_new(j, "dirs", cli_json_u64(st.dirs));
		json_object_set_new(j, "symlinks", cli_json_u64(st.symlinks));
		json_object_set_new(j, "specials", cli_json_u64(st.specials));
		json_object_set_new(j, "bytes", cli_json_u64(st.bytes));
		json_object_set_new(j, "warnings", cli_json_u64(st.warnings));
		json_object_set_new(snaps, name, j);
		rc = cli_json_print(cli_json_new("ferry restore", "snapshots", snaps), rc);
	} else if (verbose)
		fprintf(o.format ? stderr : stdout,
			"restored %s: %" PRIu64 " files, %" PRIu64 " hardlinks, %" PRIu64
			" dirs, %" PRIu64 " symlinks, %" PRIu64 " special, %" PRIu64 " bytes\n",
			name, st.files, st.hardlinks, st.dirs, st.symlinks, st.specials, st.bytes);
	if (r == -FERR_PARTIAL) {
		cli_warn("%s", ferry_errmsg(r));
		rc = EXIT_PARTIAL;
	}
out:
	store_pool_close(p);
	free(files);
	return rc;
}

/* -R is -r and -f does nothing, as in zfs for a dataset without clones
 * or mounts, which ferry never has: zfs scripts run unchanged. */
int cmd_rollback(int argc, char **argv)
{
	const char *usage = "usage: ferry rollback [-r|-R] [-f] SNAPSHOT";
	int c, recursive = 0, r;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "rollback", "rRf", NULL)) != -1) {
		if (c == 'r' || c == 'R')
			recursive = 1;
		else if (c != 'f')
			return cli_opt_end();
	}
	if (argc - optind != 1)
		return cli_usage("%s", usage);
	const char *name = argv[optind];
	struct store_pool *p = NULL;
	struct store_snap s;
	if ((r = store_pool_open_for(name, 0, &p)) < 0 || (r = store_snap_lookup(p, name, &s)) < 0 ||
	    (r = store_snap_rollback(p, &s, recursive)) < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot rollback to '%s'", name);
	}
	store_pool_close(p);
	return EXIT_OK;
}

struct diff_out {
	int types;      /* -F: the file type column */
	int scripted;   /* -H: a rename's two paths tab-separated, no arrow */
	int times;      /* -t: the change time first */
	int raw;        /* -h: names as they are, not \0ooo-escaped */
	json_t *changes; /* --json: the array of changes */
};

/* A path of the diff as a JSON string, as the text output prints it
 * (escaped the same way, so bytes that are not UTF-8 stay visible). */
static json_t *diff_json_path(const char *path, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		return NULL;
	put_escaped(f, path, len);
	fclose(f);
	json_t *j = buf ? json_string(buf) : NULL;
	free(buf);
	return j;
}

static void diff_path(const struct diff_out *d, const char *path, size_t len)
{
	if (d->raw)
		fwrite(path, 1, len, stdout);
	else
		put_escaped(stdout, path, len);
}

/* One line as zfs diff prints it (lib/libzfs/libzfs_diff.c):
 * [CTIME\t]CHANGE\t[TYPE\t]PATH[ -> NEWPATH | \tNEWPATH][\t(+N)] */
static int diff_cb(void *arg, const struct store_diff_change *c)
{
	struct diff_out *d = arg;
	char ctime[48];
	snprintf(ctime, sizeof ctime, "%" PRId64 ".%09" PRIu32, c->ctime_sec, c->ctime_nsec);
	if (d->changes) {
		char ch[2] = {c->change, 0}, ft[2] = {c->ftype, 0};
		json_t *o = json_object();
		json_object_set_new(o, "change", json_string(ch));
		json_object_set_new(o, "type", json_string(ft));
		json_object_set_new(o, "path", diff_json_path(c->path, c->path_len));
		if (c->newpath)
			json_object_set_new(o, "newpath", diff_json_path(c->newpath, c->newpath_len));
		if (c->links)
			json_object_set_new(o, "links", json_integer((json_int_t)c->links));
		json_object_set_new(o, "ctime", json_string(ctime));
		return json_array_append_new(d->changes, o) == 0 ? 0
								  : ferry_err(FERR_NOMEM, "building JSON");
	}
	if (d->times)
		printf("%10" PRId64 ".%09" PRIu32 "\t", c->ctime_sec, c->ctime_nsec);
	putchar(c->change);
	putchar('\t');
	if (d->types) {
		putchar(c->ftype);
		putchar('\t');
	}
	diff_path(d, c->path, c->path_len);
	if (c->newpath) {
		fputs(d->scripted ? "\t" : " -> ", stdout);
		diff_path(d, c->newpath, c->newpath_len);
	}
	if (c->links)
		printf("\t(%+" PRId64 ")", c->links);
	putchar('\n');
	return ferror(stdout) ? ferry_err(FERR_IO, "writing the diff") : 0;
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_HELP = 1000 };
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'},
					   {"help", no_argument, NULL, OPT_HELP},
					   {NULL, 0, NULL, 0}};
	const char *usage = "usage: ferry diff [-F] [-H] [-t] [-h] [--json] SNAPSHOT [SNAPSHOT|DATASET]";
	static const char help[] =
		"  -F      a file type column: F file, / directory, @ symlink, | fifo,\n"
		"          B block device, C character device\n"
		"  -H      a rename's two paths tab-separated, no \" -> \"\n"
		"  -t      the file's change time (ctime) as the first column\n"
		"  -h      names as they are, not \\0ooo-escaped (--help is this help)\n"
		"  --json  the changes as JSON (see ferry-json(7))\n"
		"the second snapshot is a later one of the first's dataset; a dataset\n"
		"(or nothing) means its newest snapshot\n";
	int c, r, json = 0;
	struct diff_out d = {0};
	optind = 1;
	/* -h is zfs diff's: names not escaped (--help is the help) */
	while ((c = cli_getopt(argc, argv, "diff", "FHth", lo)) != -1) {
		if (c == 'F')
			d.types = 1;
		else if (c == 'H')
			d.scripted = 1;
		else if (c == 't')
			d.times = 1;
		else if (c == 'h')
			d.raw = 1;
		else if (c == 'j')
			json = 1;
		else if (c == OPT_HELP) {
			printf("%s\n%s", usage, help);
			return EXIT_OK;
		} else
			return cli_opt_end();
	}
	if (argc - optind < 1 || argc - optind > 2)
		return cli_usage("%s", usage);
	const char *a = argv[optind], *b = argc - optind == 2 ? argv[optind + 1] : NULL;
	struct store_pool *p = NULL;
	struct store_snap sa, sb;
	struct store_ds ds;
	char bname[2 * STORE_NAME_MAX + 2];
	if ((r = store_pool_open_for(a, STORE_OPEN_RDONLY, &p)) < 0 ||
	    (r = store_snap_lookup(p, a, &sa)) < 0)
		goto fail;
	if (b && b[0] == '@') {
		size_t n = strcspn(a, "@");
		snprintf(bname, sizeof bname, "%.*s%s", (int)n, a, b);
		b = bname;
	}
	if (b && strchr(b, '@')) {
		if ((r = store_snap_lookup(p, b, &sb)) < 0)
			goto fail;
	} else {
		char dsname[STORE_NAME_MAX + 1];
		size_t n = strcspn(b ? b : a, "@");
		snprintf(dsname, sizeof dsname, "%.*s", (int)n, b ? b : a);
		if ((r = store_ds_lookup(p, dsname, &ds)) < 0) {
			/* name the operand that is missing, not the first */
			r = ferry_err(FERR_NOENT, "dataset '%s' does not exist", dsname);
			goto fail;
		}
		if ((r = store_snap_newest(p, &ds, &sb)) < 0)
			goto fail;
	}
	if (sa.ds_id != sb.ds_id) {
		/* as zfs: the second is a later state of the first's dataset */
		r = ferry_err(FERR_INVAL, "'%s' and '%s' are snapshots of different datasets",
			      sa.name, sb.name);
		goto fail;
	}
	if (sa.createtxg > sb.createtxg) {
		r = ferry_err(FERR_INVAL, "'%s' is newer than '%s'", sa.name, sb.name);
		goto fail;
	}
	if (json && !(d.changes = json_array())) {
		r = ferry_err(FERR_NOMEM, "building JSON");
		goto fail;
	}
	r = store_snap_diff(p, &sa, &sb, diff_cb, &d);
	if (r < 0)
		goto fail;
	store_pool_close(p);
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "from", json_string(sa.name));
		json_object_set_new(o, "to", json_string(sb.name));
		json_object_set_new(o, "changes", d.changes);
		return cli_json_print(cli_json_new("ferry diff", "diff", o), EXIT_OK);
	}
	return fflush(stdout) == 0 ? EXIT_OK : cli_fail(-FERR_IO, "diff: cannot write");
fail:
	json_decref(d.changes);
	store_pool_close(p);
	return cli_fail(r, "cannot diff '%s'", a);
}

/* gc's progress line: "POOL: marking" (node bytes read, no total), then
 * "POOL: sweeping" (pack bytes dealt with, of all the packs'). */
struct gc_meter {
	struct cli_meter m;
	const char *pool;
	enum store_gc_phase phase;
};

static void gc_progress_cb(void *arg, const struct store_gc_progress *pg)
{
	struct gc_meter *g = arg;
	if (pg->phase != g->phase) {
		char what[STORE_NAME_MAX + 16];
		snprintf(what, sizeof what, "%s: %s", g->pool,
			 pg->phase == STORE_GC_MARKING ? "marking" : "sweeping");
		cli_meter_retarget(&g->m, what, pg->total);
		g->phase = pg->phase;
	}
	cli_meter_update(&g->m, pg->done, 0);
}

int cmd_gc(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	int c, r, verbose = 0, json = 0, quiet = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "gc", "vq", lo)) != -1) {
		if (c == 'v')
			verbose = 1;
		else if (c == 'q')
			quiet = 1;
		else if (c == 'j')
			json = 1;
		else
			return cli_opt_end();
	}
	if (argc - optind != 1)
		return cli_usage("usage: ferry gc [-v] [-q] [--json] POOL");
	struct store_pool *p = NULL;
	struct store_gc_stats st;
	struct gc_meter gm = {.pool = argv[optind]};
	struct store_gc_opts go = {NULL, &gm};
	cli_meter_start(&gm.m, argv[optind], 0, quiet);
	if (gm.m.on)
		go.progress = gc_progress_cb;
	if ((r = store_pool_open(argv[optind], 0, &p)) == 0)
		store_pool_activity(p, "a gc");
	if (r == 0)
		r = store_gc_run(p, &go, &st);
	cli_meter_end(&gm.m);
	if (r < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot collect garbage in '%s'", argv[optind]);
	}
	store_pool_close(p);
	if (json) {
		json_t *o = json_object(), *pools = json_object();
		json_object_set_new(o, "name", json_string(argv[optind]));
		json_object_set_new(o, "blocks_freed", cli_json_u64(st.blocks_freed));
		json_object_set_new(o, "bytes_freed", cli_json_u64(st.bytes_freed));
		json_object_set_new(o, "nodes_freed", cli_json_u64(st.nodes_freed));
		json_object_set_new(o, "packs_deleted", cli_json_u64(st.packs_deleted));
		json_object_set_new(o, "packs_rewritten", cli_json_u64(st.packs_rewritten));
		json_object_set_new(o, "orphans_deleted", cli_json_u64(st.orphans_deleted));
		json_object_set_new(pools, argv[optind], o);
		return cli_json_print(cli_json_new("ferry gc", "pools", pools), EXIT_OK);
	}
	if (verbose) {
		char b[16];
		format_nicenum(st.bytes_freed, b, sizeof b, 1);
		printf("freed %" PRIu64 " blocks (%s), %" PRIu64 " nodes; packs: %" PRIu64
		       " deleted, %" PRIu64 " rewritten, %" PRIu64 " orphans removed\n",
		       st.blocks_freed, b, st.nodes_freed, st.packs_deleted, st.packs_rewritten,
		       st.orphans_deleted);
	}
	return EXIT_OK;
}

/* -R is -r and -f does nothing (zfs: dependent clones, forced unmounts;
 * ferry has neither). */
int cli_snap_destroy(int argc, char **argv)
{
	const char *usage = "usage: ferry destroy [-r|-R] [-d] [-f] [-n] [-v] [-p] "
			    "DATASET@NAME[%NAME][,NAME]...";
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	int c, r, recursive = 0, dry = 0, verbose = 0, exact = 0, defer = 0, json = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "destroy", "rRnvpfd", lo)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'd': /* zfs destroy -d: a held snapshot goes with its last hold */
			defer = 1;
			break;
		case 'r':
		case 'R':
			recursive = 1;
			break;
		case 'n':
			dry = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'p':
			exact = 1;
			break;
		case 'f':
			break;
		default:
			return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("%s", usage);
	const char *spec = argv[optind];
	struct store_pool *p = NULL;
	struct store_snap *list = NULL;
	size_t n = 0;
	uint64_t bytes = 0;
	if ((r = store_pool_open_for(spec, dry ? STORE_OPEN_RDONLY : 0, &p)) < 0 ||
	    (r = store_snap_select(p, spec, recursive, &list, &n)) < 0 ||
	    ((verbose || dry || json) && (r = store_snap_reclaim(p, list, n, &bytes)) < 0))
		goto fail;
	json_t *jdoc = NULL;
	if (json) {
		json_t *o = json_object(), *names = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(names, json_string(list[i].name));
		json_object_set_new(o, "dryrun", json_boolean(dry));
		json_object_set_new(o, "destroyed", names);
		json_object_set_new(o, "reclaim", cli_json_u64(bytes));
		jdoc = cli_json_new("ferry destroy", "destroy", o);
	} else if (verbose) {
		/* as current OpenZFS: "would destroy X", "would reclaim 36B";
		 * -p: "destroy<TAB>X", "reclaim<TAB>36864", dry run or not */
		for (size_t i = 0; i < n; i++)
			if (exact)
				printf("destroy\t%s\n", list[i].name);
			else
				printf("%s destroy %s\n", dry ? "would" : "will", list[i].name);
		char b[16];
		format_nicenum(bytes, b, sizeof b, 1);
		if (exact)
			printf("reclaim\t%" PRIu64 "\n", bytes);
		else
			printf("%s reclaim %s\n", dry ? "would" : "will", b);
	}
	if (!dry && (r = defer ? store_snap_destroy_defer(p, list, n, NULL)
			       : store_snap_destroy(p, list, n)) < 0) {
		json_decref(jdoc);
		goto fail;
	}
	free(list);
	store_pool_close(p);
	return json ? cli_json_print(jdoc, EXIT_OK) : EXIT_OK;
fail:
	free(list);
	store_pool_close(p);
	return cli_fail(r, "cannot destroy '%s'", spec);
}

/* ferry bookmark SNAPSHOT|BOOKMARK BOOKMARK: the new bookmark may be given
 * as #NAME (in the source's dataset), as zfs allows. */
int cmd_bookmark(int argc, char **argv)
{
	const char *usage = "usage: ferry bookmark DATASET@SNAP|DATASET#BOOKMARK DATASET#BOOKMARK | "
			    "ferry bookmark DATASET@SNAP|DATASET#BOOKMARK #BOOKMARK | "
			    "ferry bookmark @SNAP|#BOOKMARK DATASET#BOOKMARK";
	char dst[2 * STORE_NAME_MAX + 2];
	int c, r;
	optind = 1;
	if ((c = cli_getopt(argc, argv, "bookmark", "", NULL)) != -1)
		return cli_opt_end();
	if (argc - optind != 2)
		return cli_usage("%s", usage);
	const char *src = argv[optind], *name = argv[optind + 1];
	char full_src[2 * STORE_NAME_MAX + 2];
	if ((src[0] == '@' || src[0] == '#') && name[0] != '#' && strchr(name, '#')) {
		/* as zfs: a source named without its dataset is in the new
		 * bookmark's (one of the two names must be whole) */
		snprintf(full_src, sizeof full_src, "%.*s%s", (int)strcspn(name, "#"), name, src);
		src = full_src;
	}
	if (!strchr(src, '@') && !strchr(src, '#'))
		return cli_fail(ferry_err(FERR_NAME, "'%s' is not a snapshot or a bookmark", src),
				"cannot create bookmark '%s'", name);
	if (name[0] == '#')
		snprintf(dst, sizeof dst, "%.*s%s", (int)strcspn(src, "@#"), src, name);
	else
		snprintf(dst, sizeof dst, "%s", name);
	if (!strchr(dst, '#'))
		return cli_fail(ferry_err(FERR_NAME, "'%s' is not a bookmark name (DATASET#NAME)", dst),
				"cannot create bookmark '%s'", name);
	struct store_pool *p = NULL;
	if ((r = store_name_check(dst, STORE_NAME_BOOKMARK)) < 0 ||
	    (r = store_pool_open_for(src, 0, &p)) < 0 ||
	    (r = store_bookmark_create(p, src, dst)) < 0) {
		store_pool_close(p);
		return cli_fail(r, "cannot create bookmark '%s'", dst);
	}
	store_pool_close(p);
	return EXIT_OK;
}

/* destroy [-f] [-n] [-v] [-p] DATASET#BOOKMARK (called by cmd_destroy for
 * names with '#'; -f does nothing, as for snapshots). A bookmark holds no
 * blocks, so nothing is reclaimed. */
int cli_bookmark_destroy(int argc, char **argv)
{
	const char *usage = "usage: ferry destroy [-f] [-n] [-v] [-p] DATASET#BOOKMARK";
	static const struct option lo[] = {{"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
	int c, r, dry = 0, verbose = 0, exact = 0, json = 0;
	optind = 1;
	while ((c = cli_getopt(argc, argv, "destroy", "nvpf", lo)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'n': dry = 1; break;
		case 'v': verbose = 1; break;
		case 'p': exact = 1; break;
		case 'f': break;
		default: return cli_opt_end();
		}
	}
	if (argc - optind != 1)
		return cli_usage("%s", usage);
	const char *name = argv[optind];
	struct store_pool *p = NULL;
	struct store_bookmark b;
	if ((r = store_name_check(name, STORE_NAME_BOOKMARK)) < 0 ||
	    (r = store_pool_open_for(name, dry ? STORE_OPEN_RDONLY : 0, &p)) < 0 ||
	    (r = store_bookmark_lookup(p, name, &b)) < 0 ||
	    (!dry && (r = store_bookmark_destroy(p, &b)) < 0)) {
		store_pool_close(p);
		return cli_fail(r, "cannot destroy '%s'", name);
	}
	store_pool_close(p);
	if (json) {
		json_t *o = json_object(), *names = json_array();
		json_array_append_new(names, json_string(b.name));
		json_object_set_new(o, "dryrun", json_boolean(dry));
		json_object_set_new(o, "destroyed", names);
		return cli_json_print(cli_json_new("ferry destroy", "destroy", o), EXIT_OK);
	}
	if (verbose && exact)
		printf("destroy\t%s\n", b.name);
	else if (verbose)
		printf("%s destroy %s\n", dry ? "would" : "will", b.name);
	return EXIT_OK;
}
