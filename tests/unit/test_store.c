/* tests/unit/test_store.c — names, property validation, pools and datasets
 * through the store API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <sqlite3.h>

#include "store/store.h"
#include "capture/capture.h"
#include "restore/restore.h"

static void test_names(void **state)
{
	static const struct { const char *n; int kind; int ok; } cases[] = {
		{"tank", STORE_NAME_POOL, 1},
		{"t-1_2.x", STORE_NAME_POOL, 1},
		{"1tank", STORE_NAME_POOL, 0},
		{"mirror", STORE_NAME_POOL, 0},
		{"raidz2", STORE_NAME_POOL, 0},
		{"ta/nk", STORE_NAME_POOL, 0},
		{"ta:nk", STORE_NAME_POOL, 0},
		{"", STORE_NAME_POOL, 0},
		{"tank", STORE_NAME_DATASET, 1},
		{"tank/a/b c/d:e.f-g_h", STORE_NAME_DATASET, 1},
		{"tank/a..b", STORE_NAME_DATASET, 1},
		{"tank/..", STORE_NAME_DATASET, 0},
		{"tank/.", STORE_NAME_DATASET, 0},
		{"tank/a/../b", STORE_NAME_DATASET, 0},
		{"tank//a", STORE_NAME_DATASET, 0},
		{"tank/a/", STORE_NAME_DATASET, 0},
		{"/tank/a", STORE_NAME_DATASET, 0},
		{"tank/a%b", STORE_NAME_DATASET, 0},
		{"tank/a\nb", STORE_NAME_DATASET, 0},
		{"tank/a@s", STORE_NAME_DATASET, 0},
		{"tank/a@s", STORE_NAME_SNAPSHOT, 1},
		{"tank@s", STORE_NAME_SNAPSHOT, 1},
		{"tank/a@", STORE_NAME_SNAPSHOT, 0},
		{"tank/a@s@t", STORE_NAME_SNAPSHOT, 0},
		{"tank/a@s/t", STORE_NAME_SNAPSHOT, 0},
		{"tank/a", STORE_NAME_SNAPSHOT, 0},
		{"tank/a#m", STORE_NAME_BOOKMARK, 1},
		{"tank/a#m@s", STORE_NAME_BOOKMARK, 0},
		{"tank/a#", STORE_NAME_BOOKMARK, 0},
		{"tank/a#b#c", STORE_NAME_BOOKMARK, 0},
		{"tank/a#b/c", STORE_NAME_BOOKMARK, 0},
		{"tank/a", STORE_NAME_BOOKMARK, 0},
		{"tank#m", STORE_NAME_BOOKMARK, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int r = store_name_check(cases[i].n, cases[i].kind);
		if ((r == 0) != cases[i].ok)
			fail_msg("name '%s' kind %d: got %d (%s)", cases[i].n, cases[i].kind, r,
				 ferry_errmsg(r));
	}
	char longname[300];
	memset(longname, 'a', sizeof longname);
	memcpy(longname, "tank/", 5);
	longname[255] = 0; /* exactly 255 characters */
	assert_int_equal(store_name_check(longname, STORE_NAME_DATASET), 0);
	memset(longname, 'a', sizeof longname);
	memcpy(longname, "tank/", 5);
	longname[256] = 0;
	assert_int_equal(store_name_check(longname, STORE_NAME_DATASET), -FERR_NAME);
}

static void test_prop_validate(void **state)
{
	char c[64];
	static const struct { const char *n, *v; int type, ok; const char *canon; } cases[] = {
		{"compression", "gzip-6", STORE_DS_FILESYSTEM, 1, "gzip"},
		{"compression", "on", STORE_DS_FILESYSTEM, 1, "on"},
		{"compression", "gzip-10", STORE_DS_FILESYSTEM, 0, NULL},
		{"compression", "GZIP", STORE_DS_FILESYSTEM, 0, NULL},
		{"recordsize", "128K", STORE_DS_FILESYSTEM, 1, "131072"},
		{"recordsize", "512", STORE_DS_FILESYSTEM, 1, "512"},
		{"recordsize", "1M", STORE_DS_FILESYSTEM, 1, "1048576"},
		{"recordsize", "2M", STORE_DS_FILESYSTEM, 0, NULL},
		{"recordsize", "3K", STORE_DS_FILESYSTEM, 0, NULL},
		{"recordsize", "256", STORE_DS_FILESYSTEM, 0, NULL},
		{"recordsize", "128K", STORE_DS_VOLUME, 0, NULL},
		{"volsize", "1G", STORE_DS_VOLUME, 1, "1073741824"},
		{"volsize", "0", STORE_DS_VOLUME, 0, NULL},
		{"source", "/srv", STORE_DS_FILESYSTEM, 1, "/srv"},
		{"source", "srv", STORE_DS_FILESYSTEM, 0, NULL},
		{"used", "1", STORE_DS_FILESYSTEM, 0, NULL},
		{"a:b", "anything at all", STORE_DS_FILESYSTEM, 1, "anything at all"},
		{"A:b", "x", STORE_DS_FILESYSTEM, 0, NULL},
		{"nocolon", "x", STORE_DS_FILESYSTEM, 0, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int r = store_prop_validate(cases[i].n, cases[i].v, cases[i].type, 1, c, sizeof c);
		if ((r == 0) != cases[i].ok)
			fail_msg("%s=%s: got %d", cases[i].n, cases[i].v, r);
		if (r == 0)
			assert_string_equal(c, cases[i].canon);
	}
	/* volblocksize only at creation */
	assert_int_equal(store_prop_validate("volblocksize", "8K", STORE_DS_VOLUME, 1, c, sizeof c), 0);
	assert_int_equal(store_prop_validate("volblocksize", "8K", STORE_DS_VOLUME, 0, c, sizeof c),
			 -FERR_PROP);
}

static void test_ratio(void **state)
{
	char b[32];
	store_format_ratio(0, 0, b, sizeof b, 0);
	assert_string_equal(b, "1.00x");
	store_format_ratio(193, 100, b, sizeof b, 0);
	assert_string_equal(b, "1.93x");
	store_format_ratio(1000, 3, b, sizeof b, 1);
	assert_string_equal(b, "333.33");
	store_format_ratio(100, 100, b, sizeof b, 1);
	assert_string_equal(b, "1.00");
}

static char tmpdir[256];

static void test_pool_and_datasets(void **state)
{
	char path[512];
	struct store_pool *p = NULL;
	struct store_ds ds;
	struct store_propval v;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-unit.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(path, sizeof path, "%s/home", tmpdir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", tmpdir);
	struct store_propset props[] = {{"compression", "gzip-7"}};
	assert_int_equal(store_pool_create("tank", path, props, 1), 0);
	assert_int_equal(store_pool_create("tank", path, NULL, 0), -FERR_EXISTS);
	assert_int_equal(store_pool_open("tank", 0, &p), 0);
	assert_int_equal(store_ds_create(p, "tank/a/b", STORE_DS_FILESYSTEM, 0, NULL, 0), -FERR_NOENT);
	assert_int_equal(store_ds_create(p, "tank/a/b", STORE_DS_FILESYSTEM, 1, NULL, 0), 0);
	assert_int_equal(store_ds_lookup(p, "tank/a/b", &ds), 0);
	assert_int_equal(store_prop_get(p, &ds, "compression", &v), 0);
	assert_string_equal(v.value, "gzip-7");
	assert_int_equal(v.source, STORE_SRC_INHERITED);
	assert_string_equal(v.inherited_from, "tank");
	struct codec_spec c;
	assert_int_equal(store_ds_compression(p, &ds, &c), 0);
	assert_int_equal(c.id, CODEC_GZIP);
	assert_int_equal(c.level, 7);
	/* a received value is shown until a local one is set */
	struct store_propset rp[] = {{"compression", "zle"}};
	assert_int_equal(store_prop_set(p, &ds, rp, 1, STORE_SRC_RECEIVED), 0);
	assert_int_equal(store_prop_get(p, &ds, "compression", &v), 0);
	assert_string_equal(v.value, "zle");
	assert_int_equal(v.source, STORE_SRC_RECEIVED);
	struct store_propset lp[] = {{"compression", "lz4"}};
	assert_int_equal(store_prop_set(p, &ds, lp, 1, STORE_SRC_LOCAL), 0);
	assert_int_equal(store_prop_get(p, &ds, "compression", &v), 0);
	assert_int_equal(v.source, STORE_SRC_LOCAL);
	assert_int_equal(store_prop_inherit(p, &ds, "compression", 0, 1), 0); /* -S */
	assert_int_equal(store_prop_get(p, &ds, "compression", &v), 0);
	assert_int_equal(v.source, STORE_SRC_RECEIVED);
	assert_int_equal(store_prop_inherit(p, &ds, "compression", 0, 0), 0);
	assert_int_equal(store_prop_get(p, &ds, "compression", &v), 0);
	assert_int_equal(v.source, STORE_SRC_INHERITED);
	/* nested transactions: an inner failure aborts the outer commit */
	assert_int_equal(store_tx_begin(p), 0);
	assert_int_equal(store_ds_create(p, "tank/c", STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
	store_tx_rollback(p);
	assert_int_equal(store_ds_lookup(p, "tank/c", &ds), -FERR_NOENT);
	assert_int_equal(store_ds_destroy(p, "tank/a", 0), -FERR_BUSY);
	assert_int_equal(store_ds_destroy(p, "tank/a", 1), 0);
	assert_int_equal(store_ds_lookup(p, "tank/a/b", &ds), -FERR_NOENT);
	store_pool_close(p);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

static int count_cb(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* A pool "tank" in a new tmpdir with dataset tank/a (and other, when not
 * NULL), whose snapshot tank/a@s1 (into *sn, *ds) holds one file. */
static struct store_pool *pool_with_snapshot(const char *other, struct store_ds *ds,
					     struct store_snap *sn)
{
	char path[512], src[512];
	struct store_pool *p = NULL;
	struct capture_opts o;
	struct capture_stats st;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-unit.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	snprintf(path, sizeof path, "%s/home", tmpdir);
	setenv("FERRY_HOME", path, 1);
	snprintf(src, sizeof src, "%s/src", tmpdir);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(path, sizeof path, "%s/src/f", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("hello\n", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/tank", tmpdir);
	assert_int_equal(store_pool_create("tank", path, NULL, 0), 0);
	assert_int_equal(store_pool_open("tank", 0, &p), 0);
	assert_int_equal(store_ds_create(p, "tank/a", STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
	if (other)
		assert_int_equal(store_ds_create(p, other, STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
	assert_int_equal(store_ds_lookup(p, "tank/a", ds), 0);
	memset(&o, 0, sizeof o);
	o.from = src;
	o.threads = 1;
	assert_int_equal(capture_snapshot(p, ds, "s1", &o, &st), 0);
	assert_int_equal(store_snap_lookup(p, "tank/a@s1", sn), 0);
	return p;
}

static void test_bookmarks(void **state)
{
	struct store_ds ds, bds;
	struct store_snap sn;
	struct store_bookmark b, b2;
	struct store_propval v;
	struct store_pool *p = pool_with_snapshot("tank/o", &ds, &sn);

	assert_int_equal(store_bookmark_create(p, "tank/a@s1", "tank/a#m"), 0);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#m", &b), 0);
	assert_string_equal(b.name, "tank/a#m");
	assert_string_equal(b.markname, "m");
	assert_true(b.guid == sn.guid);
	assert_true(b.createtxg == sn.createtxg);
	assert_true(b.creation_ns == sn.creation_ns);
	assert_int_equal(b.root_type, NODE_EXT);
	assert_memory_equal(b.root, sn.root, FERRY_HASH_LEN);
	/* from a bookmark; refusals change nothing */
	assert_int_equal(store_bookmark_create(p, "tank/a#m", "tank/a#n"), 0);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#n", &b2), 0);
	assert_true(b2.guid == b.guid);
	assert_int_equal(store_bookmark_create(p, "tank/a@s1", "tank/a#m"), -FERR_EXISTS);
	assert_int_equal(store_bookmark_create(p, "tank/a@nope", "tank/a#x"), -FERR_NOENT);
	assert_int_equal(store_bookmark_create(p, "tank/a#nope", "tank/a#x"), -FERR_NOENT);
	assert_int_equal(store_bookmark_create(p, "tank/a@s1", "tank/o#x"), -FERR_INVAL);
	assert_int_equal(store_bookmark_create(p, "tank/a@s1", "tank/a#b#c"), -FERR_NAME);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#x", &b2), -FERR_NOENT);
	int n = 0;
	assert_int_equal(store_bookmark_iter(p, &ds, count_cb, &n), 0);
	assert_int_equal(n, 2);
	/* properties: identity only */
	store_bookmark_to_ds(&b, &bds);
	assert_int_equal(store_prop_get(p, &bds, "type", &v), 0);
	assert_string_equal(v.value, "bookmark");
	assert_int_equal(store_prop_get(p, &bds, "used", &v), 0);
	assert_string_equal(v.value, "-");
	struct store_propset up[] = {{"user:x", "1"}};
	assert_int_equal(store_prop_set(p, &bds, up, 1, STORE_SRC_LOCAL), -FERR_PROP);
	/* the snapshot goes, the bookmark stays; then destroy it */
	assert_int_equal(store_snap_destroy(p, &sn, 1), 0);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#m", &b2), 0);
	assert_int_equal(store_bookmark_destroy(p, &b), 0);
	assert_int_equal(store_bookmark_destroy(p, &b), -FERR_NOENT);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#m", &b2), -FERR_NOENT);
	/* a dataset's bookmarks go with it */
	assert_int_equal(store_ds_destroy(p, "tank/a", 0), 0);
	assert_int_equal(store_ds_create(p, "tank/a", STORE_DS_FILESYSTEM, 0, NULL, 0), 0);
	assert_int_equal(store_bookmark_lookup(p, "tank/a#n", &b2), -FERR_NOENT);
	store_pool_close(p);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

/* Flips the last byte of node hash's row in catalogue db, through a
 * connection of its own. */
static int flip_node(const char *db, const uint8_t *hash)
{
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	uint8_t buf[1 << 16];
	int n = -1;
	if (sqlite3_open(db, &c) != SQLITE_OK ||
	    sqlite3_prepare_v2(c, "SELECT data FROM nodes WHERE hash = ?", -1, &st, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && (n = sqlite3_column_bytes(st, 0)) > 0 &&
	    n <= (int)sizeof buf)
		memcpy(buf, sqlite3_column_blob(st, 0), (size_t)n);
	else
		n = -1;
	sqlite3_finalize(st);
	st = NULL;
	if (n < 0)
		goto out;
	buf[n - 1] ^= 1;
	if (sqlite3_prepare_v2(c, "UPDATE nodes SET data = ?1 WHERE hash = ?2", -1, &st, NULL) !=
	    SQLITE_OK) {
		n = -1;
		goto out;
	}
	sqlite3_bind_blob(st, 1, buf, n, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(c) != 1)
		n = -1;
out:
	sqlite3_finalize(st);
	sqlite3_close(c);
	return n < 0 ? -1 : 0;
}

/* A node read a second time is checked too (store/reader.c keeps a memo
 * of the nodes a handle checked, and checks a row read again against it):
 * a row changed between two reads is reported, not returned; put back,
 * it reads again. */
static void test_node_reread(void **state)
{
	struct store_reader *rd = NULL;
	struct store_ds ds;
	struct store_snap sn;
	struct fbuf b;
	int type = 0;
	struct store_pool *p = pool_with_snapshot(NULL, &ds, &sn);
	assert_int_equal(store_reader_new(p, &rd), 0);
	fbuf_init(&b, 1 << 20);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(store_node_read(rd, sn.root, &type, &b), 0);
		assert_true(b.len > 0);
	}
	/* the last byte of the root's row flipped by another connection:
	 * same type, same length */
	char db[600];
	snprintf(db, sizeof db, "%s/tank/catalog.db", tmpdir);
	assert_int_equal(flip_node(db, sn.root), 0);
	assert_int_equal(store_node_read(rd, sn.root, &type, &b), -FERR_CORRUPT);
	assert_int_equal(flip_node(db, sn.root), 0); /* flipped back */
	assert_int_equal(store_node_read(rd, sn.root, &type, &b), 0);
	fbuf_release(&b);
	store_reader_free(rd);
	store_pool_close(p);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_prop_validate),
		cmocka_unit_test(test_ratio),
		cmocka_unit_test(test_pool_and_datasets),
		cmocka_unit_test(test_bookmarks),
		cmocka_unit_test(test_node_reread),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
