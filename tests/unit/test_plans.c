/* tests/unit/test_plans.c — the query plans of the catalogue statements
 * that run once per block. SQLite picks a join order by itself, and for
 * store_snap_blocks_has (send -i: is this block in the base snapshot?) it
 * once picked a scan of the snapshot's snap_blocks rows, one per block
 * the snapshot references, for every block sent: a 1 % incremental of
 * 31,566 files cost 6.4 s of CPU instead of 0.24 s. With ds_refs (block
 * lifetimes) the same holds: no timing here, the plan itself must take
 * the snapshot by its id, the block by its hash, then the dataset's row
 * for that block by the key (block, dataset, birth), each step an index
 * search, none a scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/internal.h"

static char dir[] = "/tmp/ferry-plans-XXXXXX";
static struct store_pool *P;

static int setup(void **state)
{
	char path[256];
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/tank", dir);
	setenv("FERRY_HOME", dir, 1);
	if (ferry_lib_init() < 0 || store_pool_create("tank", path, NULL, 0) < 0 ||
	    store_pool_open("tank", 0, &P) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	store_pool_close(P);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The plan of sql, one step per line ("SEARCH b USING ..."), into out. */
static void plan_of(const char *sql, char *out, size_t n)
{
	char q[1024];
	sqlite3_stmt *st = NULL;
	size_t len = 0;
	snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
	assert_int_equal(sqlite3_prepare_v2(P->db, q, -1, &st, NULL), SQLITE_OK);
	out[0] = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 3);
		int w = snprintf(out + len, n - len, "%s\n", d ? d : "");
		assert_true(w > 0 && (size_t)w < n - len);
		len += (size_t)w;
	}
	sqlite3_finalize(st);
}

static void test_snap_has_block(void **state)
{
	char plan[2048];
	(void)state;
	plan_of(store_sql_snap_has_block, plan, sizeof plan);
	print_message("%s", plan);
	const char *snap = strstr(plan, "SEARCH s USING"), *first = strstr(plan, "SEARCH b USING"),
		   *second = strstr(plan, "SEARCH x USING");
	/* the snapshot, the block by its hash, then the dataset's row for it */
	assert_non_null(snap);
	assert_non_null(first);
	assert_non_null(second);
	assert_true(snap < first && first < second);
	assert_non_null(strstr(snap, "(rowid=?)"));
	assert_non_null(strstr(first, "(hash=?)"));
	assert_non_null(strstr(second, "block_id=?"));
	assert_non_null(strstr(second, "ds_id=?"));
	assert_non_null(strstr(second, "born<?"));
	assert_null(strstr(plan, "SCAN"));
}

/* An incremental's gone blocks (lifetimes.c): from the gone hashes (a
 * TEMP table as small as the change) to the blocks by hash to the
 * dataset's rows by key, never a scan of the dataset's live rows. */
static void test_gone(void **state)
{
	char plan[2048];
	(void)state;
	assert_int_equal(life_temp_reset(P), 0);
	assert_int_equal(cat_exec(P, "CREATE TEMP TABLE IF NOT EXISTS r_gone(hash BLOB PRIMARY KEY)"
				     " WITHOUT ROWID"), 0);
	plan_of(life_sql_gone, plan, sizeof plan);
	print_message("%s", plan);
	const char *g = strstr(plan, "SCAN g"), *b = strstr(plan, "SEARCH b USING"),
		   *r = strstr(plan, "SEARCH r USING");
	assert_non_null(g);
	assert_non_null(b);
	assert_non_null(r);
	assert_true(g < b && b < r);
	assert_non_null(strstr(b, "hash=?"));
	assert_non_null(strstr(r, "ds_id=?"));
	assert_non_null(strstr(r, "block_id=?"));
	assert_null(strstr(g + 1, "SCAN"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snap_has_block),
		cmocka_unit_test(test_gone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
