/* store/refs.c — the block references of a snapshot built on a base
 * snapshot, at the cost of what changed (issue 14).
 *
 * A snapshot references the distinct blocks of its tree (ds_refs,
 * lifetimes.c). Walking a whole new tree to list them costs a catalogue
 * statement per file however little changed. Instead the result is the
 * base's references corrected by what differs. When the base is its
 * dataset's newest and no block has two copies, the correction itself is
 * left for the commit (w_refs what the writer references, r_gone what is
 * gone: lifetimes.c writes rows for those only); else the base's
 * references are taken over in one statement (r_seed, each block under
 * the copy store_writer_ref would pick) and corrected here:
 *
 *   W1  the new tree, from its root, descending only into the caller's
 *       nodes (those the writer holds, and a receive's own that the pool
 *       had already: the caller referenced their blocks): their blocks
 *       are "added"; every other pool node they name is "kept" with its
 *       whole subtree, unopened;
 *   W2  the base tree, descending only into nodes not kept: a kept node
 *       met there is "hit" (it and its subtree are the base's, so its
 *       blocks are among the base's references); the blocks of what W2
 *       walks are "gone" candidates;
 *   W3  a kept node W2 never hit may come from outside the base (a
 *       directory copied, a stream naming another dataset's node): its
 *       subtree is walked and its blocks referenced, as a walk of the
 *       whole tree would (each under the copy store_writer_ref picks,
 *       unless the writer references the block already);
 *   W4  a gone candidate that was also added, and that the writer already
 *       references under the very copy the base's reference names, is
 *       settled: keeping that reference changes nothing. Any other may
 *       still be used by the unchanged part of the tree (the same block
 *       in an unchanged file). In the row-cheap case the dataset's census
 *       (census.c: how many times the tree names each block, kept by
 *       every such commit, built from the new tree by the dataset's first
 *       incremental that changes anything, before W1) answers for all of
 *       them in one statement. Otherwise the
 *       hit subtrees are walked to find them, one node read a file, no
 *       statement a block unless an in-memory filter says the block may
 *       be a candidate.
 *
 * When the census lets W1 and W2 skip what the two trees share, they are
 * one walk (walk_w1_w2): each changed directory and its base's read once.
 *
 * The base's references of blocks left gone are dropped, the rest join
 * the writer's. So the result is the one a walk of the whole new tree
 * gives, reference for reference. The sets are TEMP tables (bounded
 * memory); every walk remembers the nodes it opened, so a tree that
 * shares subtrees (a DAG) costs one visit per distinct node. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t refs_fused_walks, refs_fused_clashes, refs_w3_nodes;

#define FILTER_BITS ((uint64_t)1 << 23) /* 1 MiB: ~1 % false hits at 80,000 candidates */
#define KEEP_PAGE 256

enum { SIDE_NEW, SIDE_OLD, SIDE_ADD, SIDE_LIVE };
static const char side_key[] = {'n', 'o', 'a', 'l'};

struct refs {
	struct store_writer *w;
	struct store_pool *p;
	sqlite3_stmt *st_main, *st_tmp, *st_in_tmp, *st_seen, *st_keep, *st_hit, *st_added,
		*st_gone, *st_live, *st_page, *st_has_ref, *st_seen_has;
	store_node_pred is_new;
	void *arg;
	/* W1 and W2 leave alone an entry that is the same in both trees at
	 * the same path (only when the census settles W4: such an entry's
	 * subtree is neither kept nor hit, which the walk of W4 needs) */
	int skip;
	const uint8_t *root, *base_root;
	struct fuse *fz; /* W1 and W2 walking as one (walk_w1_w2), else NULL */
	uint8_t *filter;
	uint64_t left;  /* W4: candidates not yet found in the tree */
	struct fbuf nb; /* the blocklist node being read */
};

struct side {
	struct refs *x;
	int side;
	struct node_twin *tw; /* the other tree's directories along the walk (x->skip) */
};

/* W2 inside W1's walk (walk_w1_w2): per level of the walk, whether W2
 * walks the base's directory open there as the twin, and which of its
 * entries the new directory's entries matched by name; the base's
 * directory the next level opens, when W2 is to decide on it. */
struct fuse_level {
	uint8_t *matched;
	size_t cap;
	int w2;
};
struct fuse {
	struct fuse_level *lv;
	size_t nlv;
	int pend, pend_type;
	uint8_t pend_hash[FERRY_HASH_LEN];
	int clash; /* W1 kept a node W2 had already walked: W2 again, alone */
};

static const char temp_schema[] =
	"CREATE TEMP TABLE IF NOT EXISTS r_seen(k BLOB PRIMARY KEY) WITHOUT ROWID;"
	"CREATE TEMP TABLE IF NOT EXISTS r_keep(hash BLOB PRIMARY KEY, type INTEGER NOT NULL,"
	"  hit INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TEMP TABLE IF NOT EXISTS r_added(hash BLOB PRIMARY KEY) WITHOUT ROWID;"
	"CREATE TEMP TABLE IF NOT EXISTS r_gone(hash BLOB PRIMARY KEY) WITHOUT ROWID;"
	"CREATE TEMP TABLE IF NOT EXISTS r_seed(hash BLOB NOT NULL, codec INTEGER NOT NULL,"
	"  level INTEGER NOT NULL, PRIMARY KEY(hash, codec, level)) WITHOUT ROWID;"
	"DELETE FROM temp.r_seen; DELETE FROM temp.r_keep; DELETE FROM temp.r_added;"
	" DELETE FROM temp.r_gone; DELETE FROM temp.r_seed;";

/* Runs st (hash bound as ?1, its other parameters bound by the caller) as
 * one of the writer's batched TEMP-table statements: 1 when it changed a
 * row, else 0. */
static int run_changes(struct refs *x, sqlite3_stmt *st, const uint8_t *hash, const char *what)
{
	int r;
	if ((r = writer_batch_op(x->w)) < 0) {
		sqlite3_reset(st);
		return r;
	}
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	r = sqlite3_step(st) == SQLITE_DONE ? sqlite3_changes(x->p->db) > 0 : cat_err(x->p, what);
	sqlite3_reset(st);
	return r;
}

static int exists(struct refs *x, sqlite3_stmt *st, const uint8_t *hash)
{
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	return pack_step_exists(x->p, st, "looking up a node");
}

/* node_read_fn: the writer's nodes first (a TEMP table in memory: a miss
 * there costs no read of the catalogue, where a miss in the pool's index
 * did for every new node W1 and the census read), then the pool's. */
static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct refs *x = arg;
	sqlite3_stmt *const sts[2] = {x->st_tmp, x->st_main};
	return node_read_either(x->p, sts, hash, type, out, "the writer's");
}

/* W1: 1 when node hash is the caller's (the writer holds it, or is_new
 * says so), else 0. */
static int callers(struct refs *x, const uint8_t *hash)
{
	int r = exists(x, x->st_in_tmp, hash);
	if (r == 0 && x->is_new)
		r = x->is_new(x->arg, hash);
	return r;
}

/* 1 the first time side opens node hash, 0 after. */
static int first_visit(struct refs *x, int side, const uint8_t *hash)
{
	uint8_t k[1 + FERRY_HASH_LEN];
	int r;
	k[0] = (uint8_t)side_key[side];
	memcpy(k + 1, hash, FERRY_HASH_LEN);
	if ((r = writer_batch_op(x->w)) < 0)
		return r;
	sqlite3_reset(x->st_seen);
	sqlite3_bind_blob(x->st_seen, 1, k, sizeof k, SQLITE_STATIC);
	r = sqlite3_step(x->st_seen) == SQLITE_DONE ? sqlite3_changes(x->p->db) > 0
						   : cat_err(x->p, "walking a tree");
	sqlite3_reset(x->st_seen);
	return r;
}

/* W1: a pool node named by the writer's: kept, with its type. Walking
 * with W2 (x->fz), a node W2 walked before W1 kept it is a clash: the W2
 * that runs after the whole of W1 would have counted it hit instead. */
static int keep(struct refs *x, const uint8_t *hash, int type)
{
	uint8_t k[1 + FERRY_HASH_LEN];
	sqlite3_reset(x->st_keep);
	sqlite3_bind_int(x->st_keep, 2, type);
	int r = run_changes(x, x->st_keep, hash, "walking a tree");
	if (r < 0 || !x->fz || x->fz->clash)
		return r < 0 ? r : 0;
	k[0] = (uint8_t)side_key[SIDE_OLD];
	memcpy(k + 1, hash, FERRY_HASH_LEN);
	sqlite3_reset(x->st_seen_has);
	sqlite3_bind_blob(x->st_seen_has, 1, k, sizeof k, SQLITE_STATIC);
	if ((r = pack_step_exists(x->p, x->st_seen_has, "walking a tree")) > 0)
		x->fz->clash = 1;
	return r < 0 ? r : 0;
}

static uint64_t filter_bit(const uint8_t *hash)
{
	return get_le64(hash) & (FILTER_BITS - 1);
}

/* A block met by side. */
static int block(struct refs *x, int side, const uint8_t *hash)
{
	int r;
	switch (side) {
	case SIDE_NEW:
		r = run_changes(x, x->st_added, hash, "walking a tree");
		break;
	case SIDE_ADD:
		if ((r = run_changes(x, x->st_added, hash, "walking a tree")) >= 0 &&
		    (r = exists(x, x->st_has_ref, hash)) == 0)
			r = store_writer_ref(x->w, hash);
		break;
	case SIDE_OLD:
		r = run_changes(x, x->st_gone, hash, "walking a tree");
		break;
	default: {
		uint64_t bit = filter_bit(hash);
		if (!(x->filter[bit >> 3] & (1u << (bit & 7))))
			return 0;
		if ((r = run_changes(x, x->st_live, hash, "walking a tree")) == 1)
			x->left--;
	}
	}
	return r < 0 ? r : 0;
}

/* The blocks of blocklist node hash (type 2 or 3) as side sees them. */
static int bl_walk(struct refs *x, int side, int type, const uint8_t *hash, int depth)
{
	struct node_extent *xs = NULL;
	struct node_index_child *k = NULL;
	size_t n = 0;
	int r, t;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	if (side == SIDE_LIVE && !x->left)
		return 0;
	if (side == SIDE_NEW && (r = callers(x, hash)) <= 0)
		return r < 0 ? r : keep(x, hash, type);
	if (side == SIDE_OLD && (r = run_changes(x, x->st_hit, hash, "walking a tree")) != 0)
		return r < 0 ? r : 0;
	/* W4 reads a leaf for each file that names it (a leaf names no node,
	 * so that is bounded by the directories and indexes, which are
	 * visited once); the others remember every node */
	if ((side != SIDE_LIVE || type == NODE_BLOCKLIST_INDEX) &&
	    (r = first_visit(x, side, hash)) <= 0)
		return r;
	if ((r = rd_node(x, hash, &t, &x->nb)) < 0)
		return r;
	if (t != type)
		return ferry_err(FERR_CORRUPT, "a blocklist names a node of the wrong type");
	if (t == NODE_BLOCKLIST) {
		if ((r = node_bl_decode(x->nb.data, x->nb.len, &xs, &n)) < 0)
			goto out;
		for (size_t i = 0; i < n && r == 0; i++)
			if (!xs[i].hole)
				r = block(x, side, xs[i].hash);
	} else if (t == NODE_BLOCKLIST_INDEX) {
		if ((r = node_bli_decode(x->nb.data, x->nb.len, &k, &n)) < 0)
			goto out;
		/* x->nb is reused below: the children are decoded out of it */
		for (size_t i = 0; i < n && r == 0; i++)
			r = bl_walk(x, side, k[i].type, k[i].hash, depth + 1);
	} else {
		r = ferry_err(FERR_CORRUPT, "a file names a node of type %d", t);
	}
out:
	free(xs);
	free(k);
	return r;
}

/* 1 when side walks into directory hash (of the given type), 0 when it
 * does not: W1 keeps a node not the caller's, W2 hits a kept one, and
 * every side walks a node once. */
static int enters(struct refs *x, int side, int type, const uint8_t *hash)
{
	int r;
	if (side == SIDE_NEW && (r = callers(x, hash)) <= 0)
		return r < 0 ? r : (r = keep(x, hash, type)) < 0 ? r : 0;
	if (side == SIDE_OLD && (r = run_changes(x, x->st_hit, hash, "walking a tree")) != 0)
		return r < 0 ? r : 0;
	return first_visit(x, side, hash);
}

static int w_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct side *s = arg;
	int r;
	if (s->side == SIDE_LIVE && !s->x->left)
		return 1;
	if ((r = enters(s->x, s->side, type, hash)) <= 0)
		return r < 0 ? r : 1;
	return node_twin_open(s->tw, level); /* descending: the other tree's there too */
}

static int w_entry(void *arg, const struct node_walk_entry *we)
{
	struct side *s = arg;
	const struct node_entry *e = we->e;
	const struct node_entry *o = node_twin_find(s->tw, we->level - 1, e);
	if (s->side == SIDE_LIVE && !s->x->left)
		return 1;
	if (o && node_twin_same(e, o))
		return 1; /* the same in both trees */
	if (e->ftype == NODE_F_DIR)
		node_twin_next(s->tw, o);
	if (e->ftype == NODE_F_REG && e->child_type) {
		int r = bl_walk(s->x, s->side, e->child_type, e->child, 0);
		return r < 0 ? r : 0;
	}
	return 0;
}

static int w_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct side *s = arg;
	node_twin_close(s->tw, level);
	return 0;
}

static const struct node_walk_ops walk_ops = {w_enter, w_entry, w_leave};

/* Walks, as side, the tree or image under the node of the given type
 * (a directory, a blocklist, or 0 for nothing). */
static int walk_child(struct refs *x, int side, int type, const uint8_t *hash, int is_dir)
{
	struct side s = {x, side, NULL};
	if (!type)
		return 0;
	if (is_dir)
		return node_tree_walk(rd_node, x, type, hash, &walk_ops, &s);
	return bl_walk(x, side, type, hash, 0);
}

/* The root directory of the snapshot tree under root node root (type 0:
 * a volume). */
static int root_dir(struct refs *x, const uint8_t *root, int *type, uint8_t *hash, int *kind)
{
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, t;
	fbuf_init(&b, NODE_MAX);
	if ((r = rd_node(x, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "a snapshot's root is not a root node");
		goto out;
	}
	*type = e.child_type;
	memcpy(hash, e.child, FERRY_HASH_LEN);
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

/* Walks the snapshot tree under root node root as side; W1 and W2 with
 * x->skip carry the other tree's directories along (walk_ops). */
static int walk_root(struct refs *x, int side, const uint8_t *root)
{
	uint8_t h[FERRY_HASH_LEN], oh[FERRY_HASH_LEN];
	int r, t = 0, kind = 0, ot = 0, okind = 0;
	struct side s = {x, side, NULL};
	if ((r = root_dir(x, root, &t, h, &kind)) < 0)
		return r;
	if (kind != NODE_ROOT_FILESYSTEM)
		return walk_child(x, side, t, h, 0);
	if (x->skip && (side == SIDE_NEW || side == SIDE_OLD) &&
	    ((r = root_dir(x, side == SIDE_NEW ? x->base_root : x->root, &ot, oh, &okind)) < 0 ||
	     (r = node_twin_new(rd_node, x, okind == NODE_ROOT_FILESYSTEM ? ot : 0, oh, &s.tw)) < 0))
		return r;
	if (t)
		r = node_tree_walk(rd_node, x, t, h, &walk_ops, &s);
	node_twin_free(s.tw);
	return r;
}

/* ---- W1 and W2 as one walk ----------------------------------------------------
 *
 * With x->skip both walks carry the other tree's directory along, so each
 * changed directory and its base's were read twice, once by each walk.
 * walk_w1_w2 walks the new tree as W1 does, with the base's directories
 * as its twins, and does W2's part on those twins as it goes: a base
 * entry that is not the same as the new one of its name (or has none) is
 * W2's, a blocklist at once, a directory along with W1 where W1 descends
 * into the new directory of that name, else by a W2 walk of its own (with
 * the new directory of that name, if any, as its twin). W2 decides as the
 * W2 after W1 would (a kept node is hit and not walked, a node is walked
 * once), except that a node W1 keeps later in the walk is not yet known to
 * be kept: keep() notes such a clash, and W2's results are then dropped
 * and W2 runs again alone, after W1 (x->fz->clash). A node reached on two
 * paths may be walked by W2 at the other one first: its entries are then
 * compared with that path's twin, which is as sound (an entry the same as
 * the new tree's at its path holds nothing the new tree lost); the gone
 * candidates are settled by the census either way (W4). */

static int fuse_level(struct refs *x, unsigned level, int w2, const struct node_dir *d)
{
	struct fuse *z = x->fz;
	if (level >= z->nlv) {
		size_t n = z->nlv ? 2 * z->nlv : 16;
		while (n <= level)
			n *= 2;
		struct fuse_level *v = realloc(z->lv, n * sizeof *v);
		if (!v)
			return ferry_err(FERR_NOMEM, "walking a tree");
		memset(v + z->nlv, 0, (n - z->nlv) * sizeof *v);
		z->lv = v;
		z->nlv = n;
	}
	struct fuse_level *l = &z->lv[level];
	l->w2 = w2 && d;
	if (!l->w2)
		return 0;
	if (d->n > l->cap) {
		uint8_t *m = realloc(l->matched, d->n);
		if (!m)
			return ferry_err(FERR_NOMEM, "walking a tree");
		l->matched = m;
		l->cap = d->n;
	}
	if (d->n) /* an empty directory's: none, and matched may be NULL */
		memset(l->matched, 0, d->n);
	return 0;
}

static int fuse_w2(const struct fuse *z, unsigned level)
{
	return level < z->nlv && z->lv[level].w2;
}

/* W2 walking the base's directory hash alone, the new tree's directory
 * ttype/thash (ttype 0: none) its twin. */
static int w2_walk(struct refs *x, int type, const uint8_t *hash, int ttype, const uint8_t *thash)
{
	struct side s = {x, SIDE_OLD, NULL};
	struct fuse *z = x->fz;
	int r;
	if ((r = node_twin_new(rd_node, x, ttype, thash, &s.tw)) < 0)
		return r;
	x->fz = NULL; /* a walk of the classic kind inside the fused one */
	r = node_tree_walk(rd_node, x, type, hash, &walk_ops, &s);
	x->fz = z;
	node_twin_free(s.tw);
	return r;
}

/* W2's part of base entry o, W2 walking the directory that holds it and
 * o not the same as the new entry of its name (e, NULL for none). */
static int w2_entry(struct refs *x, const struct node_entry *o, const struct node_entry *e)
{
	struct fuse *z = x->fz;
	if (o->ftype == NODE_F_REG && o->child_type)
		return bl_walk(x, SIDE_OLD, o->child_type, o->child, 0);
	if (o->ftype != NODE_F_DIR)
		return 0;
	if (e && e->ftype == NODE_F_DIR) { /* f_enter decides, with W1 */
		z->pend = 1;
		z->pend_type = o->child_type;
		memcpy(z->pend_hash, o->child, FERRY_HASH_LEN);
		return 0;
	}
	return w2_walk(x, o->child_type, o->child, 0, NULL);
}

static int f_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct side *s = arg;
	struct refs *x = s->x;
	struct fuse *z = x->fz;
	uint8_t ph[FERRY_HASH_LEN];
	int pend = z->pend, pt = z->pend_type, r, w1, w2 = 0;
	memcpy(ph, z->pend_hash, FERRY_HASH_LEN);
	z->pend = 0;
	if ((w1 = enters(x, SIDE_NEW, type, hash)) < 0)
		return w1;
	if (!w1) { /* W2 goes into the base's directory here on its own */
		if (pend && (r = w2_walk(x, pt, ph, type, hash)) < 0)
			return r;
		return 1;
	}
	if ((r = node_twin_open(s->tw, level)) < 0)
		return r;
	/* W2 on the base's directory just opened */
	if (pend && (w2 = enters(x, SIDE_OLD, pt, ph)) < 0)
		return w2;
	return fuse_level(x, level, w2, node_twin_dir(s->tw, level));
}

static int f_entry(void *arg, const struct node_walk_entry *we)
{
	struct side *s = arg;
	struct refs *x = s->x;
	struct fuse *z = x->fz;
	const struct node_entry *e = we->e;
	unsigned lv = we->level - 1;
	const struct node_entry *o = node_twin_find(s->tw, lv, e);
	int r;
	z->pend = 0;
	if (o && fuse_w2(z, lv))
		z->lv[lv].matched[o - node_twin_dir(s->tw, lv)->ents] = 1;
	if (o && node_twin_same(e, o))
		return 1; /* the same in both trees: neither walk's */
	if (o && fuse_w2(z, lv) && (r = w2_entry(x, o, e)) < 0)
		return r;
	/* W1 (w_entry) */
	if (e->ftype == NODE_F_DIR)
		node_twin_next(s->tw, o);
	if (e->ftype == NODE_F_REG && e->child_type) {
		r = bl_walk(x, SIDE_NEW, e->child_type, e->child, 0);
		return r < 0 ? r : 0;
	}
	return 0;
}

static int f_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct side *s = arg;
	struct refs *x = s->x;
	struct fuse *z = x->fz;
	int r = 0;
	(void)type;
	(void)hash;
	if (fuse_w2(z, level)) { /* the base's entries no new one matched: W2's */
		const struct node_dir *d = node_twin_dir(s->tw, level);
		for (size_t i = 0; i < d->n && r == 0; i++)
			if (!z->lv[level].matched[i])
				r = w2_entry(x, &d->ents[i], NULL);
		z->lv[level].w2 = 0;
	}
	node_twin_close(s->tw, level);
	return r;
}

static const struct node_walk_ops fused_ops = {f_enter, f_entry, f_leave};

/* W1 and W2 (x->skip): as one walk when both trees are filesystems with a
 * root directory, else one after the other. */
static int walk_w1_w2(struct refs *x)
{
	uint8_t h[FERRY_HASH_LEN], oh[FERRY_HASH_LEN];
	int r, t = 0, kind = 0, ot = 0, okind = 0;
	struct fuse z;
	struct side s = {x, SIDE_NEW, NULL};
	if ((r = root_dir(x, x->root, &t, h, &kind)) < 0 ||
	    (r = root_dir(x, x->base_root, &ot, oh, &okind)) < 0)
		return r;
	if (!x->skip || kind != NODE_ROOT_FILESYSTEM || okind != NODE_ROOT_FILESYSTEM || !t || !ot)
		return (r = walk_root(x, SIDE_NEW, x->root)) < 0 ? r
								  : walk_root(x, SIDE_OLD, x->base_root);
	if ((r = node_twin_new(rd_node, x, ot, oh, &s.tw)) < 0)
		return r;
	memset(&z, 0, sizeof z);
	z.pend = 1; /* the base's root directory, the twin of the new one */
	z.pend_type = ot;
	memcpy(z.pend_hash, oh, FERRY_HASH_LEN);
	x->fz = &z;
	r = node_tree_walk(rd_node, x, t, h, &fused_ops, &s);
	x->fz = NULL;
	node_twin_free(s.tw);
	for (size_t i = 0; i < z.nlv; i++)
		free(z.lv[i].matched);
	free(z.lv);
	if (r < 0)
		return r;
	__atomic_add_fetch(&refs_fused_walks, 1, __ATOMIC_RELAXED); /* serve: threads */
	if (!z.clash)
		return 0;
	__atomic_add_fetch(&refs_fused_clashes, 1, __ATOMIC_RELAXED);
	/* W2 again, alone, now that W1 is whole */
	if ((r = writer_batch_op(x->w)) < 0 ||
	    (r = cat_exec(x->p, "DELETE FROM temp.r_gone; UPDATE temp.r_keep SET hit = 0;"
			     " DELETE FROM temp.r_seen WHERE k >= X'6f' AND k < X'70'")) < 0)
		return r;
	return walk_root(x, SIDE_OLD, x->base_root);
}

/* Walks every kept node W2 did (hit 1: W4) or did not (hit 0: W3) meet as
 * side. */
static int walk_kept(struct refs *x, int hit, int side)
{
	uint8_t page[KEEP_PAGE][FERRY_HASH_LEN], last[FERRY_HASH_LEN];
	int types[KEEP_PAGE];
	int r;
	memset(last, 0, sizeof last);
	for (;;) {
		size_t n = 0;
		/* a page at a time: the walks below write to the TEMP tables */
		sqlite3_reset(x->st_page);
		sqlite3_bind_int(x->st_page, 1, hit);
		sqlite3_bind_blob(x->st_page, 2, last, FERRY_HASH_LEN, SQLITE_STATIC);
		int s = SQLITE_DONE;
		while (n < KEEP_PAGE && (s = sqlite3_step(x->st_page)) == SQLITE_ROW) {
			const void *h = sqlite3_column_blob(x->st_page, 0);
			if (sqlite3_column_bytes(x->st_page, 0) != FERRY_HASH_LEN || !h) {
				sqlite3_reset(x->st_page);
				return ferry_err(FERR_CATALOG, "a kept node row is damaged");
			}
			memcpy(page[n], h, FERRY_HASH_LEN);
			types[n++] = sqlite3_column_int(x->st_page, 1);
		}
		if (n < KEEP_PAGE && s != SQLITE_DONE) {
			r = cat_err(x->p, "walking a tree");
			sqlite3_reset(x->st_page);
			return r;
		}
		sqlite3_reset(x->st_page);
		if (!n)
			return 0;
		if (!hit)
			__atomic_add_fetch(&refs_w3_nodes, n, __ATOMIC_RELAXED);
		for (size_t i = 0; i < n; i++) {
			int is_dir = types[i] == NODE_DIR || types[i] == NODE_EXT;
			if ((r = walk_child(x, side, types[i], page[i], is_dir)) < 0)
				return r;
		}
		memcpy(last, page[n - 1], FERRY_HASH_LEN);
	}
}

static int count_gone(struct refs *x, uint64_t *n)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(x->p, "SELECT count(*) FROM temp.r_gone", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(x->p, "counting blocks");
	sqlite3_finalize(st);
	return r;
}

static int fill_filter(struct refs *x)
{
	sqlite3_stmt *st = NULL;
	int r, s;
	if (!(x->filter = calloc(FILTER_BITS / 8, 1)))
		return ferry_err(FERR_NOMEM, "walking a tree");
	if ((r = cat_prepare(x->p, "SELECT hash FROM temp.r_gone", &st)) < 0)
		return r;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const uint8_t *h = sqlite3_column_blob(st, 0);
		if (sqlite3_column_bytes(st, 0) != FERRY_HASH_LEN || !h) {
			r = ferry_err(FERR_CATALOG, "a candidate block row is damaged");
			break;
		}
		uint64_t bit = filter_bit(h);
		x->filter[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	}
	if (r == 0 && s != SQLITE_DONE)
		r = cat_err(x->p, "walking a tree");
	sqlite3_finalize(st);
	return r;
}

/* The base's references, each block under the copy store_writer_ref would
 * pick (the first in (codec, level) order), so the result is the one a
 * walk of the whole tree gives. */
static const char seed_sql[] =
	"INSERT OR IGNORE INTO temp.r_seed(hash, codec, level)"
	" SELECT c.hash, c.codec, c.level FROM snapshots s"
	" JOIN ds_refs x ON x.ds_id = s.ds_id AND x.born <= s.createtxg"
	" AND (x.died IS NULL OR x.died > s.createtxg)"
	" JOIN main.blocks b ON b.id = x.block_id"
	" JOIN main.blocks c ON c.id = (SELECT id FROM main.blocks WHERE hash = b.hash"
	"  ORDER BY codec, level LIMIT 1)"
	" WHERE s.id = ?";

/* *delta 1 when base_id is the newest snapshot of its dataset (*ds_id)
 * and every block has one copy. */
static int delta_ok(struct store_pool *p, int64_t base_id, int *delta, int64_t *ds_id)
{
	sqlite3_stmt *st = NULL;
	int multi = 0, r;
	*delta = 0;
	if ((r = life_multicopy(p, &multi)) < 0 || multi)
		return r;
	if ((r = cat_prepare(p, "SELECT s.ds_id, s.id = (SELECT n.id FROM snapshots n WHERE"
			       " n.ds_id = s.ds_id ORDER BY n.createtxg DESC LIMIT 1)"
			       " FROM snapshots s WHERE s.id = ?", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, base_id);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		*ds_id = sqlite3_column_int64(st, 0);
		*delta = sqlite3_column_int(st, 1);
	} else if (s != SQLITE_DONE) {
		r = cat_err(p, "looking up the base snapshot");
	}
	sqlite3_finalize(st);
	return r;
}

int store_writer_refs_since(struct store_writer *w, int64_t base_id,
			    const uint8_t base_root[FERRY_HASH_LEN], const uint8_t root[FERRY_HASH_LEN],
			    store_node_pred is_new, void *arg)
{
	struct refs x;
	struct store_pool *p = writer_pool(w);
	int changed = memcmp(root, base_root, FERRY_HASH_LEN) != 0, delta = 0, r;
	int64_t ds_id = 0;
	memset(&x, 0, sizeof x);
	x.w = w;
	x.p = p;
	x.is_new = is_new;
	x.arg = arg;
	fbuf_init(&x.nb, NODE_MAX);
	if ((r = writer_batch_op(w)) < 0 || (r = cat_exec(p, temp_schema)) < 0 ||
	    (r = writer_refs_stored(w)) < 0)
		goto out;
	if ((r = cat_prepare(p, "SELECT type, data FROM main.nodes WHERE hash = ?", &x.st_main)) < 0 ||
	    (r = cat_prepare(p, "SELECT type, data FROM temp.w_nodes WHERE hash = ?", &x.st_tmp)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM temp.w_nodes WHERE hash = ?", &x.st_in_tmp)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.r_seen(k) VALUES(?)", &x.st_seen)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM temp.r_seen WHERE k = ?", &x.st_seen_has)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.r_keep(hash, type, hit) VALUES(?1, ?2, 0)",
			     &x.st_keep)) < 0 ||
	    (r = cat_prepare(p, "UPDATE temp.r_keep SET hit = 1 WHERE hash = ?", &x.st_hit)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.r_added(hash) VALUES(?)", &x.st_added)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.r_gone(hash) VALUES(?)", &x.st_gone)) < 0 ||
	    (r = cat_prepare(p, "DELETE FROM temp.r_gone WHERE hash = ?", &x.st_live)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM temp.w_refs WHERE hash = ? LIMIT 1", &x.st_has_ref)) < 0 ||
	    (r = cat_prepare(p, "SELECT hash, type FROM temp.r_keep WHERE hit = ?1 AND hash > ?2"
			     " ORDER BY hash", &x.st_page)) < 0)
		goto out;
	/* the base is its dataset's newest and no block has two copies: the
	 * commit applies the change (w_refs and r_gone) to the base's rows
	 * (lifetimes.c), nothing is seeded */
	if ((r = delta_ok(p, base_id, &delta, &ds_id)) < 0)
		goto out;
	/* the dataset's census, first: brought from the base's tree to the
	 * new one at the cost of the change when it describes the base, else
	 * counted from the new tree (once per dataset, about what one walk of
	 * W4 costs); W1 and W2 then skip what the two trees share */
	int ready = 0;
	if (delta && changed && (r = census_prepare(w, ds_id, base_root, root, &ready)) < 0)
		goto out;
	x.skip = ready;
	x.root = root;
	x.base_root = base_root;
	/* W1-W3 */
	if (changed && ((r = walk_w1_w2(&x)) < 0 || (r = walk_kept(&x, 0, SIDE_ADD)) < 0))
		goto out;
	if (!delta && ((r = writer_batch_op(w)) < 0 || (r = cat_exec_i64(p, seed_sql, base_id)) < 0))
		goto out;
	if (changed) {
		uint64_t n = 0;
		/* W4; with one copy of each block, the base's is the writer's */
		if ((r = writer_batch_op(w)) < 0 ||
		    (r = cat_exec(p, delta ? "DELETE FROM temp.r_gone WHERE hash IN (SELECT a.hash"
					     " FROM temp.r_added a JOIN temp.w_refs f ON f.hash = a.hash)"
					   : "DELETE FROM temp.r_gone WHERE hash IN (SELECT a.hash"
					     " FROM temp.r_added a JOIN temp.r_seed s ON s.hash = a.hash"
					     " JOIN temp.w_refs f ON f.hash = s.hash AND f.codec = s.codec"
					     " AND f.level = s.level)")) < 0 ||
		    (r = count_gone(&x, &n)) < 0)
			goto out;
		/* the census says which are still named; without it (not
		 * the row-cheap case, or rows found wrong), the walk, and then
		 * nothing was skipped */
		if (n && ready) {
			if ((r = writer_batch_op(w)) < 0 || (r = census_drop_live(p)) < 0)
				goto out;
		} else if (n) {
			x.left = n;
			if ((r = fill_filter(&x)) < 0 || (r = walk_kept(&x, 1, SIDE_LIVE)) < 0)
				goto out;
		}
		if (!delta && ((r = writer_batch_op(w)) < 0 ||
			       (r = cat_exec(p, "DELETE FROM temp.r_seed WHERE hash IN"
						" (SELECT hash FROM temp.r_gone)")) < 0))
			goto out;
	}
	if (delta) {
		p->life_base = base_id;
		p->life_ds = ds_id;
		goto out;
	}
	p->life_base = 0;
	if ((r = writer_batch_op(w)) < 0)
		goto out;
	r = cat_exec(p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level)"
		     " SELECT hash, codec, level FROM temp.r_seed");
out:
	sqlite3_finalize(x.st_main);
	sqlite3_finalize(x.st_tmp);
	sqlite3_finalize(x.st_in_tmp);
	sqlite3_finalize(x.st_seen);
	sqlite3_finalize(x.st_seen_has);
	sqlite3_finalize(x.st_keep);
	sqlite3_finalize(x.st_hit);
	sqlite3_finalize(x.st_added);
	sqlite3_finalize(x.st_gone);
	sqlite3_finalize(x.st_live);
	sqlite3_finalize(x.st_has_ref);
	sqlite3_finalize(x.st_page);
	free(x.filter);
	fbuf_release(&x.nb);
	return r;
}

int store_writer_nrefs(struct store_writer *w, uint64_t *n)
{
	sqlite3_stmt *st = NULL;
	struct store_pool *p = writer_pool(w);
	int r = writer_refs_stored(w);
	if (r < 0)
		return r;
	/* a change to the base (see above): the base's blocks, plus the
	 * writer's it lacks, less those gone */
	r = cat_prepare(p, p->life_base
				   ? "SELECT (SELECT count(*) FROM ds_refs WHERE ds_id = ?1 AND died IS NULL)"
				     " + (SELECT count(*) FROM temp.w_refs f WHERE NOT EXISTS (SELECT 1"
				     "  FROM main.blocks b JOIN ds_refs x ON x.ds_id = ?1 AND"
				     "  x.block_id = b.id AND x.died IS NULL WHERE b.hash = f.hash"
				     "  AND b.codec = f.codec AND b.level = f.level))"
				     " - (SELECT count(*) FROM temp.r_gone g JOIN main.blocks b ON"
				     "  b.hash = g.hash JOIN ds_refs x ON x.ds_id = ?1 AND"
				     "  x.block_id = b.id AND x.died IS NULL WHERE NOT EXISTS (SELECT 1"
				     "  FROM temp.w_refs f WHERE f.hash = b.hash AND f.codec = b.codec"
				     "  AND f.level = b.level))"
				   : "SELECT count(*) FROM temp.w_refs WHERE ?1 IS NOT NULL", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, p->life_base ? p->life_ds : 1);
	if (sqlite3_step(st) == SQLITE_ROW)
		*n = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "counting block references");
	sqlite3_finalize(st);
	return r;
}
