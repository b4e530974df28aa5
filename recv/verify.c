/* recv/verify.c — the walk at END: the new tree walked once (shared
 * subtrees once), spans and types checked, blocks of earlier snapshots
 * referenced, and every object of the stream reached.
 *
 * An incremental into its base snapshot walks only what the stream
 * brought (r->shallow): a node the pool has was checked when the snapshot
 * that brought it was committed, so it is not opened again (a blocklist
 * only for its span, against the file that names it), and the snapshot's
 * references are the base's corrected by what changed
 * (store_writer_refs_since), so the cost is the stream's, not the
 * dataset's. Nor is an entry of a new directory looked up where it is
 * the same as its base's at the same path (same name, type, child and,
 * for a file, size): the base names that child, and its commit checked a
 * blocklist's span. The other entries' children are looked up here, not
 * as the directory arrives (recv/body.c leaves them to this walk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The walk reaches key: 1 the first time for a stream object, 2 after
 * that, with its value in *v (may be NULL); 0 for an object not of the
 * stream. Its value in objs takes RECV_REACHED, or, for a key objs keeps
 * in its table, the key goes into seen (store_hset_mark). */
static int reach_obj(struct rcv *r, const uint8_t *key, int *v)
{
	int rc = store_hset_mark(r->objs, key, KEY_LEN, RECV_REACHED, v);
	if (rc != 3)
		return rc;
	rc = store_hset_add(r->seen, key, KEY_LEN, 0);
	return rc < 0 ? rc : rc == 1 ? 1 : 2;
}

/* Counts an object of the stream the walk reaches, once. The pool's are
 * not counted. */
static int reach(struct rcv *r, char kind, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int rc;
	recv_key(key, kind, hash);
	if ((rc = reach_obj(r, key, NULL)) < 0)
		return rc;
	r->reached += rc == 1;
	return 0;
}

/* 1 when node hash is one of this stream's objects, else 0. */
static int is_obj(struct rcv *r, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	recv_key(key, 'N', hash);
	return store_hset_get(r->objs, key, sizeof key, NULL);
}

static int walk_rd(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct rcv *r = arg;
	int rc;
	if ((rc = store_pnodes_read(r->pn, hash, type, out)) < 0)
		return rc;
	return reach(r, 'N', hash);
}

static int walk_block(struct rcv *r, const uint8_t *hash, uint64_t len)
{
	uint8_t key[KEY_LEN];
	uint32_t ls = 0;
	int rc, v = 0;
	recv_key(key, 'B', hash);
	/* a block of this stream: its size is in objs, and its first
	 * reference counts it reached */
	if ((rc = reach_obj(r, key, &v)) < 0)
		return rc;
	if (rc > 0) {
		r->reached += rc == 1;
		if ((uint64_t)(v & ~RECV_REACHED) != len)
			return recv_hash_err(FERR_CORRUPT, "reference with the wrong size to block", hash);
		return 0;
	}
	/* others must be in the pool (or, dry running, in an earlier
	 * substream): looked up once, then referenced */
	if ((rc = store_hset_get(r->seen, key, sizeof key, &v)) < 0)
		return rc;
	if (rc == 1)
		return (uint64_t)v == len ? 0 : recv_hash_err(FERR_CORRUPT, "block referenced with two sizes", hash);
	if ((rc = recv_have_block(r, hash, &ls)) <= 0)
		return rc < 0 ? rc : recv_hash_err(FERR_CORRUPT, "dangling reference to block", hash);
	if (ls != len)
		return recv_hash_err(FERR_CORRUPT, "reference with the wrong size to block", hash);
	if ((rc = store_hset_add(r->seen, key, sizeof key, (int)len)) < 0)
		return rc;
	if (!r->dryrun && (rc = store_writer_ref(r->w, hash)) < 0)
		return rc;
	return 0;
}

static int walk_bl(struct rcv *r, int type, const uint8_t *hash, uint64_t span, int depth)
{
	uint8_t vkey[VKEY_LEN];
	struct fbuf b;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	int rc, t;
	vkey[0] = 'L';
	memcpy(vkey + 1, hash, FERRY_HASH_LEN);
	put_le64(vkey + 1 + FERRY_HASH_LEN, span);
	if ((rc = store_hset_get(r->seen, vkey, sizeof vkey, NULL)) != 0)
		return rc < 0 ? rc : 0;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	/* shallow: the pool's blocklist is whole; only its span is the file's */
	int deep = 1;
	if (r->shallow && (deep = is_obj(r, hash)) < 0)
		return deep;
	fbuf_init(&b, NODE_MAX);
	if ((rc = walk_rd(r, hash, &t, &b)) < 0)
		goto out;
	if (t != type) {
		rc = recv_hash_err(FERR_CORRUPT, "node of the wrong type:", hash);
		goto out;
	}
	if (t == NODE_BLOCKLIST) {
		if ((rc = node_bl_decode(b.data, b.len, &x, &n)) < 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			if (u64_add(sum, x[i].len, &sum) < 0) {
				rc = ferry_err(FERR_CORRUPT, "blocklist span overflows");
				goto out;
			}
		if (sum != span) {
			rc = ferry_err(FERR_CORRUPT, "blocklist covers %llu bytes, its file %llu",
				       (unsigned long long)sum, (unsigned long long)span);
			goto out;
		}
		for (size_t i = 0; deep && i < n; i++)
			if (!x[i].hole && (rc = walk_block(r, x[i].hash, x[i].len)) < 0)
				goto out;
	} else if (t == NODE_BLOCKLIST_INDEX) {
		if ((rc = node_bli_decode(b.data, b.len, &k, &n)) < 0)
			goto out;
		for (size_t i = 0; i < n; i++)
			if (u64_add(sum, k[i].span, &sum) < 0) {
				rc = ferry_err(FERR_CORRUPT, "blocklist index span overflows");
				goto out;
			}
		if (sum != span) {
			rc = ferry_err(FERR_CORRUPT, "blocklist index covers %llu bytes, expected %llu",
				       (unsigned long long)sum, (unsigned long long)span);
			goto out;
		}
		fbuf_release(&b);
		for (size_t i = 0; deep && i < n; i++)
			if ((rc = walk_bl(r, k[i].type, k[i].hash, k[i].span, depth + 1)) < 0)
				goto out;
	} else {
		rc = ferry_err(FERR_CORRUPT, "a file points to a node of type %d", t);
		goto out;
	}
	rc = store_hset_add(r->seen, vkey, sizeof vkey, 0);
	if (rc > 0)
		rc = 0;
out:
	free(x);
	free(k);
	fbuf_release(&b);
	return rc;
}

static int vold_rd(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct rcv *r = arg;
	return store_pnodes_read(r->pn, hash, type, out);
}

/* The tree walk at END (node_tree_walk): a directory reached before is
 * not walked again ('D' key in seen, added when it is left). */
static int wd_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct rcv *r = arg;
	uint8_t vkey[KEY_LEN];
	int rc;
	recv_key(vkey, 'D', hash);
	if ((rc = store_hset_get(r->seen, vkey, sizeof vkey, NULL)) != 0)
		return rc;
	if (r->shallow && (rc = is_obj(r, hash)) <= 0)
		return rc < 0 ? rc : 1; /* the pool's: not opened */
	return node_twin_open(r->vold, level);
}

static int wd_entry(void *arg, const struct node_walk_entry *we)
{
	struct rcv *r = arg;
	const struct node_entry *e = we->e;
	const struct node_entry *o = node_twin_find(r->vold, we->level - 1, e);
	int rc;
	if (!e->child_type)
		return 0;
	/* the same as the base's entry: it names what the base has, and a
	 * file's span was checked, unless the stream brought the node (then
	 * it is the stream's to reach) */
	if (node_twin_same(e, o) && (e->ftype != NODE_F_REG || o->size == e->size)) {
		if ((rc = is_obj(r, e->child)) == 0)
			return e->ftype == NODE_F_DIR ? 1 : 0;
		if (rc < 0)
			return rc;
	} else if (r->shallow && (rc = recv_need_node(r, e->child, e->child_type)) < 0) {
		return rc; /* body.c left a new directory's entries to this walk */
	}
	if (e->ftype == NODE_F_DIR)
		node_twin_next(r->vold, o); /* the base's directory of that name */
	if (e->ftype != NODE_F_REG)
		return 0;
	return walk_bl(r, e->child_type, e->child, e->size, 0);
}

static int wd_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct rcv *r = arg;
	uint8_t vkey[KEY_LEN];
	node_twin_close(r->vold, level);
	recv_key(vkey, 'D', hash);
	int rc = store_hset_add(r->seen, vkey, sizeof vkey, 0);
	return rc < 0 ? rc : 0;
}

static int walk_dir(struct rcv *r, int type, const uint8_t *hash)
{
	static const struct node_walk_ops ops = {wd_enter, wd_entry, wd_leave};
	return node_tree_walk(walk_rd, r, type, hash, &ops, r);
}

/* For a shallow walk: the base's root directory, the first the walk
 * will open, as the twin of the new tree's. */
static int vold_start(struct rcv *r, const uint8_t *base_root)
{
	struct node_entry e;
	struct node_xattr *xa = NULL;
	struct fbuf rb;
	int rc, t, kind;
	fbuf_init(&rb, NODE_MAX);
	if ((rc = store_pnodes_read(r->pn, base_root, &t, &rb)) < 0)
		goto out;
	if (t != NODE_EXT || (rc = node_root_decode(rb.data, rb.len, &kind, &e, &xa)) < 0) {
		if (rc >= 0)
			rc = ferry_err(FERR_CORRUPT, "the base snapshot's root is not a root node");
		goto out;
	}
	rc = node_twin_new(vold_rd, r, kind == NODE_ROOT_FILESYSTEM ? e.child_type : 0, e.child,
			   &r->vold);
out:
	free(xa);
	fbuf_release(&rb);
	return rc;
}

static int walk_tree(struct rcv *r, const struct stream_begin *b)
{
	struct node_entry e;
	struct node_xattr *xa = NULL;
	struct fbuf rb;
	int rc, t, kind;
	fbuf_init(&rb, NODE_MAX);
	if ((rc = walk_rd(r, b->root_hash, &t, &rb)) < 0)
		goto out;
	if (t != NODE_EXT || (rc = node_root_decode(rb.data, rb.len, &kind, &e, &xa)) < 0) {
		if (rc >= 0)
			rc = ferry_err(FERR_CORRUPT, "the snapshot's root is not a root node");
		goto out;
	}
	if ((kind == NODE_ROOT_VOLUME) != (b->ds_type == STREAM_DS_VOLUME)) {
		rc = ferry_err(FERR_CORRUPT, "the root node's kind differs from the BEGIN's type");
		goto out;
	}
	if (kind == NODE_ROOT_FILESYSTEM)
		rc = walk_dir(r, e.child_type, e.child);
	else if (e.child_type)
		rc = walk_bl(r, e.child_type, e.child, e.size, 0);
out:
	free(xa);
	fbuf_release(&rb);
	return rc;
}

/* store_node_pred: the stream's own nodes, which the pool may have had
 * already (a snapshot destroyed but not yet collected, another dataset's
 * same directory). */
static int stream_node(void *arg, const uint8_t hash[FERRY_HASH_LEN])
{
	return is_obj(arg, hash);
}

/* The walk of the new tree (shallow for an incremental into its base). */
static int verify_walk(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc;
	if (b->from_guid && !r->objs_n) {
		/* nothing changed: the root is the base's, already in the pool */
		int t = 0;
		if ((rc = store_pnodes_has_node(r->pn, b->root_hash, &t)) < 0)
			return rc;
		if (!rc || t != NODE_EXT)
			return ferry_err(FERR_CORRUPT, "an empty incremental whose root is not in the "
					 "pool");
	}
	r->shallow = b->from_guid && s->have_base && !r->dryrun;
	if (r->shallow && (rc = vold_start(r, s->base_root)) < 0)
		return rc;
	rc = walk_tree(r, b);
	node_twin_free(r->vold);
	r->vold = NULL;
	return rc;
}

/* After END: every block stored, the whole new tree walked, and every
 * object of the stream reached by that walk. */
int recv_sub_verify(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc, drc;
	/* The walk needs no block stored: the stream's blocks are in objs as
	 * they came, the pool's are looked up. So it runs while the workers
	 * finish the last blocks. A block that failed its own check is still
	 * the error reported: it came first in the stream. */
	rc = verify_walk(r, s);
	if (rc < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", ferry_errmsg(rc));
		if ((drc = recv_blocks_drain(r)) < 0)
			return drc;
		return ferry_err(-rc, "%s", msg);
	}
	if ((rc = recv_blocks_drain(r)) < 0)
		return rc;
	if (r->reached != r->objs_n)
		return ferry_err(FERR_CORRUPT, "the stream carries %llu objects the snapshot does "
				 "not use", (unsigned long long)(r->objs_n - r->reached));
	if (r->shallow)
		return store_writer_refs_since(r->w, s->base_id, s->base_root, b->root_hash,
					       stream_node, r);
	return 0;
}
