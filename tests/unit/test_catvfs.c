/* tests/unit/test_catvfs.c — the catalogue VFS's window on the WAL
 * (store/catvfs.c, 4.): SQLite databases opened through the "ferry" VFS
 * with a page cache of a few pages, so that every transaction spills its
 * pages into the WAL before it commits, rewrites frames it already wrote
 * and then reads every frame back to rewrite their checksums: the
 * patterns the window gathers and serves. Checked: what another
 * connection (in this process, and in another) reads after each commit is
 * exactly the committed state; a process that dies after a commit (or in
 * the middle of the next transaction) leaves a database that opens to the
 * last commit; integrity_check passes throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/internal.h"

#define ROWS 3000
#define VLEN 300

static char dir[] = "/tmp/ferry-catvfs-XXXXXX";
static char db_path[sizeof dir + 16];

static sqlite3 *db_open(int cache_pages)
{
	sqlite3 *db = NULL;
	char sql[128];
	assert_int_equal(catvfs_init(), 0);
	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
					 CATVFS_NAME), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	snprintf(sql, sizeof sql,
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=%d;", cache_pages);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	return db;
}

static void exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK)
		fail_msg("%s: %s", sql, err ? err : "?");
}

static int64_t one(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void check_ok(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
}

/* Generation g: ROWS rows keyed by a hash of (g-independent) i, so that
 * inserts land all over the index, each value a function of (g, i); the
 * table's digest (sum of a per-row mix) is computed here the same way. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static int64_t expect_digest(int g)
{
	uint64_t d = 0;
	for (int i = 0; i < ROWS; i++)
		d += mix(((uint64_t)g << 32) | (uint64_t)i) & 0xffffffffu;
	return (int64_t)d;
}

/* one transaction: every row rewritten to generation g, twice over (the
 * second pass rewrites frames the first spilled), and the generation row */
static void write_gen(sqlite3 *db, int g, int commit)
{
	sqlite3_stmt *st = NULL;
	unsigned char v[VLEN];
	exec(db, "BEGIN IMMEDIATE");
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO t(k, v, d) VALUES(?, ?, ?)", -1,
					    &st, NULL), SQLITE_OK);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ROWS; i++) {
			uint64_t k = mix((uint64_t)i + 1);
			uint64_t m = mix(((uint64_t)(pass ? g : g + 1000) << 32) | (uint64_t)i);
			for (int j = 0; j < VLEN; j++)
				v[j] = (unsigned char)(m >> (8 * (j % 8)));
			sqlite3_bind_blob(st, 1, &k, sizeof k, SQLITE_TRANSIENT);
			sqlite3_bind_blob(st, 2, v, sizeof v, SQLITE_TRANSIENT);
			sqlite3_bind_int64(st, 3, (int64_t)(m & 0xffffffffu));
			assert_int_equal(sqlite3_step(st), SQLITE_DONE);
			sqlite3_reset(st);
		}
	sqlite3_finalize(st);
	char sql[96];
	snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO gen(id, g) VALUES(1, %d)", g);
	exec(db, sql);
	if (commit)
		exec(db, "COMMIT");
}

/* What a reader sees is one committed generation, whole. */
static void check_state(sqlite3 *db, int want_g)
{
	exec(db, "BEGIN");
	int64_t g = one(db, "SELECT g FROM gen WHERE id = 1");
	if (want_g >= 0)
		assert_int_equal(g, want_g);
	assert_int_equal(one(db, "SELECT count(*) FROM t"), ROWS);
	assert_int_equal(one(db, "SELECT sum(d) FROM t"), expect_digest((int)g));
	assert_int_equal(one(db, "SELECT sum(length(v)) FROM t"), (int64_t)ROWS * VLEN);
	exec(db, "COMMIT");
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(db_path, sizeof db_path, "%s/t.db", dir);
	sqlite3 *db = db_open(8);
	exec(db, "CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB NOT NULL, d INTEGER NOT NULL);"
		 "CREATE TABLE gen(id INTEGER PRIMARY KEY, g INTEGER NOT NULL);");
	write_gen(db, 0, 1);
	check_ok(db);
	sqlite3_close(db);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[sizeof dir + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A second connection of this process, holding its own WAL handle, reads
 * each commit whole; before the commit it reads the one before. */
static void test_same_process(void **state)
{
	(void)state;
	sqlite3 *w = db_open(8), *r = db_open(8);
	check_state(r, 0);
	for (int g = 1; g <= 3; g++) {
		exec(r, "BEGIN");
		assert_int_equal(one(r, "SELECT g FROM gen WHERE id = 1"), g - 1);
		write_gen(w, g, 1);
		/* the reader's transaction still sees the one before */
		assert_int_equal(one(r, "SELECT sum(d) FROM t"), expect_digest(g - 1));
		exec(r, "COMMIT");
		check_state(r, g);
		check_state(w, g);
	}
	check_ok(r);
	sqlite3_close(r);
	sqlite3_close(w);
	sqlite3 *again = db_open(8);
	check_state(again, 3);
	check_ok(again);
	sqlite3_close(again);
}

/* A reader in another process, reading over and over while this one
 * commits: every state it sees is one commit, whole. */
static void test_other_process(void **state)
{
	(void)state;
	int go[2];
	assert_int_equal(pipe(go), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		sqlite3 *r = db_open(8);
		char c;
		int seen = 0;
		/* until the writer closes the pipe */
		for (;;) {
			check_state(r, -1);
			seen++;
			struct timeval tv = {0, 1000};
			fd_set fs;
			FD_ZERO(&fs);
			FD_SET(go[0], &fs);
			if (select(go[0] + 1, &fs, NULL, NULL, &tv) > 0 && read(go[0], &c, 1) <= 0)
				break;
		}
		check_state(r, 7);
		sqlite3_close(r);
		_exit(seen > 0 ? 0 : 3);
	}
	close(go[0]);
	sqlite3 *w = db_open(8);
	for (int g = 4; g <= 7; g++)
		write_gen(w, g, 1);
	sqlite3_close(w);
	close(go[1]);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A process that dies after its commit, then one that dies in the middle
 * of a transaction that has spilled frames into the WAL: the database
 * opens to the last commit, whole. */
static void test_die(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sqlite3 *w = db_open(8);
		write_gen(w, 8, 1);
		_exit(0); /* no close: the WAL stays as the commit left it */
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sqlite3 *r = db_open(8);
	check_state(r, 8);
	sqlite3_close(r);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sqlite3 *w = db_open(8);
		write_gen(w, 9, 0);
		_exit(0); /* the transaction's frames, some held, none committed */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	r = db_open(8);
	check_state(r, 8);
	check_ok(r);
	write_gen(r, 10, 1);
	check_state(r, 10);
	sqlite3_close(r);
	r = db_open(8);
	check_state(r, 10);
	check_ok(r);
	sqlite3_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_process),
		cmocka_unit_test(test_other_process),
		cmocka_unit_test(test_die),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
