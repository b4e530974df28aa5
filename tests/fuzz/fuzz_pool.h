/* tests/fuzz/fuzz_pool.h — the throwaway pool a fuzz target works in: a
 * temp directory (under $TMPDIR) holding FERRY_HOME and a pool "fz" with
 * one compression, made on first use and removed at exit. Header-only, so
 * each target still builds from its own file (make fuzz, fuzz replay). */
#ifndef FERRY_FUZZ_POOL_H
#define FERRY_FUZZ_POOL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"

static char fuzz_tmpdir[256];
static struct store_pool *fuzz_pool;

static int fuzz_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

/* Removes path and everything below it, without following links. */
static void fuzz_rm_tree(const char *path)
{
	nftw(path, fuzz_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_pool_cleanup(void)
{
	store_pool_close(fuzz_pool);
	fuzz_pool = NULL;
	if (fuzz_tmpdir[0])
		fuzz_rm_tree(fuzz_tmpdir);
}

/* Makes the temp directory ferry-fuzz-TAG.XXXXXX and the pool "fz" in it
 * with the given compression; aborts on any failure. */
static void fuzz_pool_setup(const char *tag, const char *compression)
{
	char home[300], path[300];
	const char *base = getenv("TMPDIR");
	snprintf(fuzz_tmpdir, sizeof fuzz_tmpdir, "%s/ferry-fuzz-%s.XXXXXX", base ? base : "/tmp",
		 tag);
	if (!mkdtemp(fuzz_tmpdir) || ferry_lib_init() < 0)
		abort();
	snprintf(home, sizeof home, "%s/home", fuzz_tmpdir);
	setenv("FERRY_HOME", home, 1);
	snprintf(path, sizeof path, "%s/fz", fuzz_tmpdir);
	struct store_propset ps = {"compression", compression};
	if (store_pool_create("fz", path, &ps, 1) < 0 || store_pool_open("fz", 0, &fuzz_pool) < 0)
		abort();
	atexit(fuzz_pool_cleanup);
}

#endif
