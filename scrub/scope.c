/* scrub/scope.c — the replica's side of a repair over HTTP: is a node in
 * the trees a token may read? Nodes have no per-snapshot index (blocks
 * have ds_refs), so the trees of the snapshots and bookmarks in scope
 * are walked until the node is met; every node the walk reads goes through
 * one read callback, which is where it is looked for. A subtree or
 * blocklist already walked is remembered by hash (a TEMP key set) and
 * skipped, so many snapshots cost their distinct nodes once: no more than
 * a send of them, which the same token may ask for anyway. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* what the callbacks return to stop a walk once the node is met */
#define FOUND (-FERR_EXISTS)

struct nscope {
	struct store_reader *rd;
	struct store_hset *seen;
	const uint8_t *want;
	int found;
};

static int ns_read(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct nscope *n = arg;
	if (!memcmp(hash, n->want, FERRY_HASH_LEN))
		n->found = 1;
	return store_node_read(n->rd, hash, type, out);
}

static int ns_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct nscope *n = arg;
	return n->found ? 1 : 0;
}

static int ns_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct nscope *n = arg;
	int r;
	if (n->found)
		return FOUND;
	if (!memcmp(hash, n->want, FERRY_HASH_LEN)) {
		n->found = 1;
		return FOUND;
	}
	if ((r = store_hset_get(n->seen, hash, FERRY_HASH_LEN, NULL)) != 0)
		return r < 0 ? r : 1;
	return 0;
}

static int ns_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct nscope *n = arg;
	return n->found ? FOUND : store_hset_add(n->seen, hash, FERRY_HASH_LEN, 0);
}

static int ns_entry(void *arg, const struct node_walk_entry *we)
{
	struct nscope *n = arg;
	const struct node_entry *e = we->e;
	int r;
	if (n->found)
		return FOUND;
	if (e->ftype != NODE_F_REG || !e->child_type)
		return 0;
	if (!memcmp(e->child, n->want, FERRY_HASH_LEN)) {
		n->found = 1;
		return FOUND;
	}
	if ((r = store_hset_get(n->seen, e->child, FERRY_HASH_LEN, NULL)) != 0)
		return r < 0 ? r : 0;
	/* a blocklist's index and leaf nodes are read through ns_read */
	r = node_bl_walk(ns_read, n, e->child_type, e->child, e->size, ns_extent, n);
	if (n->found)
		return FOUND;
	if (r < 0)
		return r;
	return store_hset_add(n->seen, e->child, FERRY_HASH_LEN, 0);
}

/* One tree from its root node: 1 found, 0 not, < 0 error. A tree the
 * replica cannot read (its own damage) holds nothing to serve. */
static int ns_tree(struct nscope *n, const uint8_t root[FERRY_HASH_LEN])
{
	static const struct node_walk_ops ops = {ns_enter, ns_entry, ns_leave};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, type, kind;
	fbuf_init(&b, NODE_MAX);
	r = ns_read(n, root, &type, &b);
	if (n->found || r < 0)
		goto out;
	if (type != NODE_EXT || node_root_decode(b.data, b.len, &kind, &e, &xa) < 0 || !e.child_type)
		goto out;
	if (kind == NODE_ROOT_VOLUME)
		r = node_bl_walk(ns_read, n, e.child_type, e.child, e.size, ns_extent, n);
	else
		r = node_tree_walk(ns_read, n, e.child_type, e.child, &ops, n);
out:
	free(xa);
	fbuf_release(&b);
	if (n->found) {
		ferry_err_clear();
		return 1;
	}
	if (r == -FERR_CORRUPT || r == -FERR_NOENT || r == -FERR_LIMIT) {
		ferry_err_clear();
		return 0;
	}
	return r < 0 ? r : 0;
}

static int ns_snap(struct store_pool *p, const struct store_snap *s, void *arg)
{
	return ns_tree(arg, s->root);
}

static int ns_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	return ns_tree(arg, b->root);
}

static int ns_ds(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	int r = store_snap_iter(p, ds, ns_snap, arg);
	return r ? r : store_bookmark_iter(p, ds, ns_mark, arg);
}

int scrub_node_in_scope(struct store_pool *p, const struct store_ds *ds,
			const uint8_t hash[FERRY_HASH_LEN])
{
	struct nscope n;
	int r;
	memset(&n, 0, sizeof n);
	n.want = hash;
	if ((r = store_reader_new(p, &n.rd)) < 0 || (r = store_hset_new(p, 0, &n.seen)) < 0)
		goto out;
	if ((r = store_read_begin(p)) < 0)
		goto out;
	r = store_ds_walk(p, ds, -1, ns_ds, &n);
	store_read_end(p);
out:
	store_hset_free(n.seen);
	store_reader_free(n.rd);
	return r < 0 ? r : n.found;
}
