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
#include "capture/capture.h"
#include "restore/restore.h"
#include "tests/fuzz/fuzz_pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char input[300], outdir[300];
static unsigned long serial;

static void setup(void)
{
	fuzz_pool_setup("archive", "lz4");
	snprintf(input, sizeof input, "%s/in.tar", fuzz_tmpdir);
	snprintf(outdir, sizeof outdir, "%s/out", fuzz_tmpdir);
	if (store_ds_create(fuzz_pool, "fz/a", STORE_DS_FILESYSTEM, 0, NULL, 0) < 0)
		abort();
}

/* Aborts when the temp directory holds anything but what the harness made. */
static void check_nothing_escaped(void)
{
	DIR *d = opendir(fuzz_tmpdir);
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
	struct capture_opts co;
	struct capture_stats cs;
	struct restore_opts ro;
	struct restore_stats rs;
	struct store_ds ds;
	struct store_snap s;
	char name[32], full[64];
	if (!fuzz_pool)
		setup();
	int fd = open(input, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) != 0)
		abort();
	if (store_ds_lookup(fuzz_pool, "fz/a", &ds) < 0)
		abort();
	memset(&co, 0, sizeof co);
	co.from = input;
	co.threads = 1;
	snprintf(name, sizeof name, "s%lu", serial++);
	int r = capture_snapshot(fuzz_pool, &ds, name, &co, &cs);
	if (getenv("FUZZ_ARCHIVE_VERBOSE"))
		fprintf(stderr, "%s: %s\n", name, r < 0 ? ferry_errmsg(r) : "captured");
	ferry_err_clear();
	snprintf(full, sizeof full, "fz/a@%s", name);
	if (store_snap_lookup(fuzz_pool, full, &s) == 0) {
		memset(&ro, 0, sizeof ro);
		r = restore_snapshot(fuzz_pool, &s, outdir, &ro, &rs);
		if (getenv("FUZZ_ARCHIVE_VERBOSE"))
			fprintf(stderr, "%s: %s\n", full, r < 0 ? ferry_errmsg(r) : "restored");
		ferry_err_clear();
		check_nothing_escaped();
		fuzz_rm_tree(outdir);
		if (store_snap_destroy(fuzz_pool, &s, 1) < 0)
			abort();
	}
	ferry_err_clear();
	return 0;
}
