/* tests/unit/test_scrub_scope.c — what a replica behind ferry serve gives a
 * repair (docs/ferry-http.7, GET /v1/blocks and /v1/nodes): a block only
 * when a snapshot of the dataset or below references it
 * (store_block_in_scope), a node only when it is in the tree of a snapshot
 * or bookmark there (scrub_node_in_scope). Two datasets, tank/fs and
 * tank/f_ (whose '_' a LIKE pattern would take for the 's'), each with a
 * file of its own: neither reaches the other's blocks or nodes, the pool's
 * root reaches both, and a bookmark keeps its tree's nodes in scope (not
 * its blocks) once its snapshot is destroyed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "scrub/scrub.h"
#include "store/store.h"

static char tmpdir[256];
static struct store_pool *P;
/* per dataset: its file's block, the file's blocklist node, its root */
static struct tree {
	const char *ds;
	uint8_t block[FERRY_HASH_LEN], bl[FERRY_HASH_LEN], dir[FERRY_HASH_LEN],
		root[FERRY_HASH_LEN];
} T[2] = {{.ds = "tank/fs"}, {.ds = "tank/f_"}};

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	return store_writer_put_node(arg, type, data, len, hash);
}

/* One snapshot @s of ds holding one file "f" of 5,000 random bytes. */
static int make_tree(struct tree *t)
{
	static uint8_t data[5000], scratch[8192];
	struct store_writer *w = NULL;
	struct store_block blk;
	struct store_ds ds;
	struct node_bl_builder bb;
	struct node_dir_builder db;
	struct node_extent x;
	struct node_entry e;
	struct fbuf f;
	int type, r = -1;
	if (store_ds_create(P, t->ds, STORE_DS_FILESYSTEM, 0, NULL, 0) < 0 ||
	    store_ds_lookup(P, t->ds, &ds) < 0 || store_writer_new(P, &w) < 0)
		return -1;
	ferry_random(data, sizeof data);
	if (store_block_prepare((struct codec_spec){CODEC_LZ4, 0}, data, sizeof data, scratch,
				sizeof scratch, &blk) < 0 ||
	    store_writer_put(w, &blk, NULL) < 0)
		goto out;
	memcpy(t->block, blk.hash, FERRY_HASH_LEN);
	memset(&x, 0, sizeof x);
	x.len = sizeof data;
	memcpy(x.hash, blk.hash, FERRY_HASH_LEN);
	node_bl_builder_init(&bb, put_node, w, 131072);
	if (node_bl_builder_add(&bb, &x) < 0 || node_bl_builder_finish(&bb, &type, t->bl) < 0)
		goto out;
	node_bl_builder_release(&bb);
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)"f";
	e.name_len = 1;
	e.ftype = NODE_F_REG;
	e.mode = 0644;
	e.size = sizeof data;
	e.child_type = (uint8_t)type;
	memcpy(e.child, t->bl, FERRY_HASH_LEN);
	node_dir_builder_init(&db, put_node, w);
	if (node_dir_builder_add(&db, &e) < 0 || node_dir_builder_finish(&db, &type, t->dir) < 0)
		goto out;
	node_dir_builder_release(&db);
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	e.child_type = (uint8_t)type;
	memcpy(e.child, t->dir, FERRY_HASH_LEN);
	fbuf_init(&f, NODE_MAX);
	if (node_root_encode(&f, NODE_ROOT_FILESYSTEM, &e) == 0 &&
	    store_writer_put_node(w, NODE_EXT, f.data, f.len, t->root) == 0 &&
	    store_writer_commit_snapshot(w, &ds, "s", t->root, 0, 0, NULL) == 0)
		r = 0;
	fbuf_release(&f);
out:
	store_writer_free(w);
	return r;
}

static int setup(void **state)
{
	char path[512];
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ferry-unit-scope.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof path, "%s/home", tmpdir);
	setenv("FERRY_HOME", path, 1);
	snprintf(path, sizeof path, "%s/tank", tmpdir);
	if (ferry_lib_init() < 0 || store_pool_create("tank", path, NULL, 0) < 0 ||
	    store_pool_open("tank", 0, &P) < 0 || make_tree(&T[0]) < 0 || make_tree(&T[1]) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	store_pool_close(P);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int block_in(const char *ds, const uint8_t *hash)
{
	struct store_ds d;
	uint32_t ls = 0;
	assert_int_equal(store_ds_lookup(P, ds, &d), 0);
	int r = store_block_in_scope(P, &d, hash, &ls);
	if (r == 1)
		assert_int_equal(ls, 5000);
	return r;
}

static int node_in(const char *ds, const uint8_t *hash)
{
	struct store_ds d;
	assert_int_equal(store_ds_lookup(P, ds, &d), 0);
	return scrub_node_in_scope(P, &d, hash);
}

static void test_blocks(void **state)
{
	assert_int_equal(block_in("tank/fs", T[0].block), 1);
	assert_int_equal(block_in("tank/f_", T[1].block), 1);
	/* the other's block: not in scope, though the pool has it */
	assert_int_equal(block_in("tank/fs", T[1].block), 0);
	assert_int_equal(block_in("tank/f_", T[0].block), 0);
	/* the root covers every dataset */
	assert_int_equal(block_in("tank", T[0].block), 1);
	assert_int_equal(block_in("tank", T[1].block), 1);
	uint8_t none[FERRY_HASH_LEN];
	memset(none, 0x5a, sizeof none);
	assert_int_equal(block_in("tank", none), 0);
}

static void test_nodes(void **state)
{
	for (int i = 0; i < 2; i++) {
		const struct tree *t = &T[i], *o = &T[1 - i];
		/* every level of its own tree: root, directory, blocklist */
		assert_int_equal(node_in(t->ds, t->root), 1);
		assert_int_equal(node_in(t->ds, t->dir), 1);
		assert_int_equal(node_in(t->ds, t->bl), 1);
		/* none of the other's */
		assert_int_equal(node_in(t->ds, o->root), 0);
		assert_int_equal(node_in(t->ds, o->dir), 0);
		assert_int_equal(node_in(t->ds, o->bl), 0);
		assert_int_equal(node_in("tank", t->bl), 1);
	}
}

static void test_bookmark(void **state)
{
	struct store_snap s;
	assert_int_equal(store_bookmark_create(P, "tank/fs@s", "tank/fs#m"), 0);
	assert_int_equal(store_snap_lookup(P, "tank/fs@s", &s), 0);
	assert_int_equal(store_snap_destroy(P, &s, 1), 0);
	/* the bookmark keeps the tree's nodes (gc keeps them): in scope */
	assert_int_equal(node_in("tank/fs", T[0].bl), 1);
	assert_int_equal(node_in("tank/fs", T[0].root), 1);
	/* no snapshot references the block any more */
	assert_int_equal(block_in("tank/fs", T[0].block), 0);
	assert_int_equal(node_in("tank/f_", T[0].bl), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks),
		cmocka_unit_test(test_nodes),
		cmocka_unit_test(test_bookmark),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
