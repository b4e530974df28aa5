/* tests/fuzz/fuzz_archive.c — libFuzzer target for `ferry snapshot --from
 * ARCHIVE`: bytes → a file named in.tar → store_capture, where libarchive
 * recognises tar, pax, cpio, zip and their compressions by content, not by
 * the name → store_restore of whatever snapshot was committed into a fresh
 * directory, then the snapshot is destroyed. Everything lives in one temp
 * directory made once per process and removed at exit.
 * Oracles: no crash, no sanitizer report, and nothing appears in the temp
 * directory beside the pool, FERRY_HOME, the input and the restore target
 * (a member name or link that escaped would land there or above). */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char tmpdir[256], input[300], outdir[300];
static struct store_pool *pool;
static unsigned long serial;

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	store_pool_close(pool);
	pool = NULL;
	if (tmpdir[0])
		rm_tree(tmpdir);
}

static void setup(void)
{
	char home[300], path[300];
	const char *base = getenv("TMPDIR");
	snprintf(tmpdir, sizeof tmpdir, "%s/ferry-fuzz-archive.XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir) || ferry_lib_init() < 0)
		abort();
	snprintf(home, sizeof home, "%s/home", tmpdir);
	setenv("FERRY_HOME", home, 1);
	snprintf(path, sizeof path, "%s/fz", tmpdir);
	snprintf(input, sizeof input, "%s/in.tar", tmpdir);
	snprintf(outdir, sizeof outdir, "%s/out", tmpdir);
	struct store_propset ps = {"compression", "lz4"};
	if (store_pool_create("fz", path, &ps, 1) < 0 || store_pool_open("fz", 0, &pool) < 0 ||
	    store_ds_create(pool, "fz/a", STORE_DS_FILESYSTEM, 0, NULL, 0) < 0)
		abort();
	atexit(cleanup);
}

/* Aborts when the temp directory holds anything but what the harness made. */
static void check_nothing_escaped(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	if (!d)
		abort();
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		if (strcmp(n, ".") && strcmp(n, "..") && strcmp(n, "home") && strcmp(n, "fz") &&
		    strcmp(n, "in.tar") && strcmp(n, "out")) {
			fprintf(stderr, "fuzz_archive: '%s' appeared beside the pool\n", n);
			abort();
		}
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_capture_opts co;
	struct store_capture_stats cs;
	struct store_restore_opts ro;
	struct store_restore_stats rs;
	struct store_ds ds;
	struct store_snap s;
	char name[32], full[64];
	if (!pool)
		setup();
	int fd = open(input, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0)
		abort();
	if (store_ds_lookup(pool, "fz/a", &ds) < 0)
		abort();
	memset(&co, 0, sizeof co);
	co.from = input;
	co.threads = 1;
	snprintf(name, sizeof name, "s%lu", serial++);
	int r = store_capture(pool, &ds, name, &co, &cs);
	if (getenv("FUZZ_ARCHIVE_VERBOSE"))
		fprintf(stderr, "%s: %s\n", name, r < 0 ? ferry_errmsg(r) : "captured");
	ferry_err_clear();
	snprintf(full, sizeof full, "fz/a@%s", name);
	if (store_snap_lookup(pool, full, &s) == 0) {
		memset(&ro, 0, sizeof ro);
		r = store_restore(pool, &s, outdir, &ro, &rs);
		if (getenv("FUZZ_ARCHIVE_VERBOSE"))
			fprintf(stderr, "%s: %s\n", full, r < 0 ? ferry_errmsg(r) : "restored");
		ferry_err_clear();
		check_nothing_escaped();
		rm_tree(outdir);
		if (store_snap_destroy(pool, &s, 1) < 0)
			abort();
	}
	ferry_err_clear();
	return 0;
}
