/* store/usage.c — which files of a snapshot use a block: for the reports
 * of damaged blocks (send, restore, scrub name the files they touch, as
 * `zpool status -v` lists the files with permanent errors). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct users {
	struct store_reader *rd;
	const uint8_t *hash;
	store_path_fn fn;
	void *arg;
	const char *path;
	size_t path_len;
	int stop;       /* fn's nonzero result, which ends the walk */
};

/* What users_entry returns to end the walk once fn asked to stop. */
#define USERS_STOP (-0x7fff)

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

/* Stops the blocklist walk (with 2) at the first extent that is the block. */
static int uses_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct users *u = arg;
	return !x->hole && !memcmp(x->hash, u->hash, FERRY_HASH_LEN) ? 2 : 0;
}

/* 0 when the file does not use the block or fn returned 0; USERS_STOP
 * when fn returned nonzero (kept in u->stop); <0 on errors. */
static int file_uses(struct users *u, int type, const uint8_t *child, uint64_t size)
{
	int r = node_bl_walk(rd_node, u->rd, type, child, size, uses_extent, u);
	if (r != 2)
		return r;
	if ((u->stop = u->fn(u->arg, u->path, u->path_len)) != 0)
		return USERS_STOP;
	return 0;
}

static int users_entry(void *arg, const struct node_walk_entry *we)
{
	struct users *u = arg;
	const struct node_entry *e = we->e;
	if (e->ftype != NODE_F_REG || !e->child_type)
		return 0;
	u->path = we->path;
	u->path_len = we->path_len;
	return file_uses(u, e->child_type, e->child, e->size);
}

int store_block_users(struct store_reader *rd, const uint8_t root[FERRY_HASH_LEN],
		      const uint8_t hash[FERRY_HASH_LEN], store_path_fn fn, void *arg)
{
	static const struct node_walk_ops ops = {NULL, users_entry, NULL};
	struct users u = {rd, hash, fn, arg, "", 0, 0};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, t, kind;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "the snapshot's root is not a root node");
		goto out;
	}
	if (!e.child_type)
		goto out;
	if (kind == NODE_ROOT_VOLUME)
		r = file_uses(&u, e.child_type, e.child, e.size);
	else
		r = node_tree_walk(rd_node, rd, e.child_type, e.child, &ops, &u);
	if (r == USERS_STOP)
		r = u.stop < 0 ? u.stop : 0;
out:
	free(xa);
	fbuf_release(&b);
	return r;
}
