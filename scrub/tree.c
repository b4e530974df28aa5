/* scrub/tree.c — the tree pass of `ferry scrub`: who uses each damage.
 * Each snapshot's tree is walked, every file's blocklist compared with the
 * damaged hashes; a directory subtree found clean is remembered by hash
 * and skipped in the next snapshots; a damaged subtree is walked again for
 * each snapshot that has it, so each one's paths are listed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the tree pass: who uses each damage -------------------------------------- */

struct dmg {
	uint8_t hash[FERRY_HASH_LEN];
	int64_t id; /* the log row; < 0: found by this pass, index into tw.fresh */
};

struct tw {
	struct scrub *sc;
	struct store_reader *rd;
	struct store_hset *clean;
	struct dmg *d;          /* the log's hashes, sorted */
	size_t nd, capd;
	struct store_scrub_err *fresh; /* found by the walk: missing nodes and blocks */
	size_t nfresh, capfresh;
	struct store_scrub_user *u;
	size_t nu, capu;
	int bookmark;           /* the tree's: a bookmark's, else a snapshot's */
	int64_t obj_id;         /* ... row id */
	uint64_t guid;          /* ... and guid */
	int nodes_only;         /* a bookmark: it keeps its nodes, not its blocks */
	uint64_t found;         /* damages met so far */
	uint64_t *at_enter;     /* found at each open directory level's enter */
	size_t cap_enter;
	char *dirpath;          /* "/a/b" of the directory entry just passed */
	size_t dirpath_cap;
	uint8_t bad[FERRY_HASH_LEN]; /* the node whose read failed last */
	int bad_err;
	const char *fpath;      /* the file whose blocklist is being walked */
	size_t fpath_len;
	struct dmg *rec;        /* damaged node records in the packs (the catalogue's
				 * copy may be good), sorted: users are the paths
				 * whose nodes they are, for pool recover needs them */
	size_t nrec, caprec;
	const char *rpath;      /* the path whose nodes are being read */
	size_t rpath_len;
};

static int dmg_cmp(const void *a, const void *b)
{
	const struct dmg *x = a, *y = b;
	int c = memcmp(x->hash, y->hash, FERRY_HASH_LEN);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* The first entry for hash in d (n entries, sorted), or NULL. */
static const struct dmg *dmg_find_in(const struct dmg *d, size_t n, const uint8_t *hash)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (memcmp(d[mid].hash, hash, FERRY_HASH_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && !memcmp(d[lo].hash, hash, FERRY_HASH_LEN) ? &d[lo] : NULL;
}

/* The first entry for hash, or NULL. */
static const struct dmg *dmg_find(const struct tw *t, const uint8_t *hash)
{
	size_t lo = 0, hi = t->nd;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (memcmp(t->d[mid].hash, hash, FERRY_HASH_LEN) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->nd && !memcmp(t->d[lo].hash, hash, FERRY_HASH_LEN) ? &t->d[lo] : NULL;
}

static int log_cb(void *arg, const struct store_scrub_err *e)
{
	struct tw *t = arg;
	int r;
	if (e->has_hash && e->kind == STORE_SCRUB_RECORD) {
		if ((r = VEC_GROW(t->rec, t->caprec, t->nrec, 16, "scrubbing")) < 0)
			return r;
		memcpy(t->rec[t->nrec].hash, e->hash, FERRY_HASH_LEN);
		t->rec[t->nrec++].id = e->id;
		return 0;
	}
	if (!e->has_hash || (e->kind != STORE_SCRUB_BLOCK && e->kind != STORE_SCRUB_NODE))
		return 0;
	if ((r = VEC_GROW(t->d, t->capd, t->nd, 64, "scrubbing")) < 0)
		return r;
	memcpy(t->d[t->nd].hash, e->hash, FERRY_HASH_LEN);
	t->d[t->nd++].id = e->id;
	return 0;
}

/* Adds a user of the damage err_id: the tree being walked, path[0..len). */
static int user_add(struct tw *t, int64_t err_id, const char *path, size_t len)
{
	int r;
	if ((r = VEC_GROW(t->u, t->capu, t->nu, 256, "scrubbing")) < 0)
		return r;
	struct store_scrub_user *u = &t->u[t->nu];
	u->bookmark = t->bookmark;
	u->obj_id = t->obj_id;
	u->guid = t->guid;
	u->err_id = err_id;
	if (!(u->path = malloc(len + 1)))
		return ferry_err(FERR_NOMEM, "scrubbing");
	if (len)
		memcpy(u->path, path, len);
	u->path[len] = 0;
	t->nu++;
	t->found++; /* the subtree is not clean: walked again in the next tree */
	return 0;
}

/* A user of every damage of hash: the tree being walked, path. */
static int users_of(struct tw *t, const uint8_t *hash, const char *path, size_t len)
{
	const struct dmg *d = dmg_find(t, hash);
	int r;
	if (!d)
		return 0;
	for (; d < t->d + t->nd && !memcmp(d->hash, hash, FERRY_HASH_LEN); d++) {
		if ((r = user_add(t, d->id, path, len)) < 0)
			return r;
	}
	return 1;
}

/* Something the log does not have yet (a node or block the tree names
 * that is missing, a node whose structure is wrong): logged once, with
 * a user. */
static int fresh_damage(struct tw *t, int kind, const uint8_t *hash, const char *detail,
			const char *path, size_t len)
{
	int r;
	if ((r = users_of(t, hash, path, len)) != 0)
		return r < 0 ? r : 0;
	if ((r = VEC_GROW(t->fresh, t->capfresh, t->nfresh, 16, "scrubbing")) < 0 ||
	    (r = VEC_GROW(t->d, t->capd, t->nd, 64, "scrubbing")) < 0)
		return r;
	struct store_scrub_err *e = &t->fresh[t->nfresh];
	memset(e, 0, sizeof *e);
	e->kind = kind;
	e->has_hash = 1;
	e->offset = -1;
	memcpy(e->hash, hash, FERRY_HASH_LEN);
	snprintf(e->detail, sizeof e->detail, "%s", detail);
	/* kept sorted: insertion, as fresh damage is rare */
	struct dmg nd;
	memcpy(nd.hash, hash, FERRY_HASH_LEN);
	nd.id = -(int64_t)(t->nfresh + 1);
	t->nfresh++;
	size_t i = t->nd;
	while (i > 0 && dmg_cmp(&t->d[i - 1], &nd) > 0) {
		t->d[i] = t->d[i - 1];
		i--;
	}
	t->d[i] = nd;
	t->nd++;
	return users_of(t, hash, path, len) < 0 ? -FERR_NOMEM : 0;
}

/* The memo's key: a subtree or blocklist hash, and whether it was found
 * clean with its blocks looked up (a snapshot) or its nodes only (a
 * bookmark, which keeps no blocks). */
static const uint8_t *memo_key(const struct tw *t, const uint8_t *hash, uint8_t key[FERRY_HASH_LEN + 1])
{
	memcpy(key, hash, FERRY_HASH_LEN);
	key[FERRY_HASH_LEN] = (uint8_t)t->nodes_only;
	return key;
}

/* A node read whole from the catalogue whose record in a pack is damaged:
 * the tree being walked, at rpath, would lose it to pool recover. Once
 * per tree and path (the walker reads a directory twice: tw_enter's
 * load, then its own). */
static int rec_users(struct tw *t, const uint8_t *hash)
{
	const struct dmg *d = dmg_find_in(t->rec, t->nrec, hash);
	int r;
	for (; d && d < t->rec + t->nrec && !memcmp(d->hash, hash, FERRY_HASH_LEN); d++) {
		int dup = 0;
		for (size_t i = t->nu; i > 0 && i + 8 > t->nu && !dup; i--) {
			const struct store_scrub_user *o = &t->u[i - 1];
			dup = o->err_id == d->id && o->obj_id == t->obj_id &&
			      o->bookmark == t->bookmark && strlen(o->path) == t->rpath_len &&
			      !memcmp(o->path, t->rpath, t->rpath_len);
		}
		if (dup)
			continue;
		if ((r = user_add(t, d->id, t->rpath, t->rpath_len)) < 0)
			return r;
	}
	return 0;
}

static int tw_read(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct tw *t = arg;
	int r = store_node_read(t->rd, hash, type, out);
	if (r < 0) {
		memcpy(t->bad, hash, FERRY_HASH_LEN);
		t->bad_err = r;
	} else if (t->nrec) {
		r = rec_users(t, hash);
	}
	return r;
}

/* A node read failed while loading what path names (hash: its top node):
 * the failing node is damaged (in the log), missing, or malformed. */
static int node_failed(struct tw *t, int r, const uint8_t *top, const char *path, size_t len)
{
	if (r != -FERR_CORRUPT && r != -FERR_NOENT && r != -FERR_LIMIT)
		return r;
	const uint8_t *h = t->bad_err ? t->bad : top;
	char msg[STORE_SCRUB_DETAIL_MAX];
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
	ferry_err_clear();
	int kind = t->bad_err == -FERR_NOENT ? STORE_SCRUB_NONODE : STORE_SCRUB_NODE;
	return fresh_damage(t, kind, h, msg, path, len);
}

static int tw_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct tw *t = arg;
	int r;
	/* a bookmark keeps its nodes, not its blocks: no file of it "uses" one */
	if (x->hole || t->nodes_only)
		return 0;
	if ((r = users_of(t, x->hash, t->fpath, t->fpath_len)) != 0)
		return r < 0 ? r : 0;
	if ((r = store_block_has(t->rd, x->hash)) < 0)
		return r;
	if (r == 0)
		return fresh_damage(t, STORE_SCRUB_NOBLOCK, x->hash,
				    "a snapshot's tree names it, the block index does not have it",
				    t->fpath, t->fpath_len);
	return 0;
}

static int tw_file(struct tw *t, int type, const uint8_t *child, uint64_t size, const char *path,
		   size_t len)
{
	int r;
	/* no memo per file: the directories' memo already skips every file
	 * of an unchanged subtree, and two key-set queries per file would
	 * cost as much as the blocklist's own walk */
	t->fpath = path;
	t->fpath_len = len;
	t->rpath = path;
	t->rpath_len = len;
	t->bad_err = 0;
	r = node_bl_walk(tw_read, t, type, child, size, tw_extent, t);
	if (r < 0 && (r = node_failed(t, r, child, path, len)) < 0)
		return r;
	return 0;
}

static int set_dirpath(struct tw *t, const char *path, size_t len)
{
	if (len + 2 > t->dirpath_cap) {
		char *nb = realloc(t->dirpath, len + 64);
		if (!nb)
			return ferry_err(FERR_NOMEM, "scrubbing");
		t->dirpath = nb;
		t->dirpath_cap = len + 64;
	}
	t->dirpath[0] = '/';
	if (len)
		memcpy(t->dirpath + 1, path, len);
	t->dirpath[len + 1] = 0;
	return 0;
}

static int tw_entry(void *arg, const struct node_walk_entry *we)
{
	struct tw *t = arg;
	const struct node_entry *e = we->e;
	int r;
	if ((r = set_dirpath(t, we->path, we->path_len)) < 0)
		return r;
	if (e->ftype == NODE_F_REG && e->child_type)
		return tw_file(t, e->child_type, e->child, e->size, t->dirpath, we->path_len + 1);
	return 0;
}

static int tw_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct tw *t = arg;
	struct node_dir d;
	uint8_t key[FERRY_HASH_LEN + 1];
	int r;
	if ((r = store_hset_get(t->clean, memo_key(t, hash, key), sizeof key, NULL)) != 0)
		return r < 0 ? r : 1;
	if (level == 0 && (r = set_dirpath(t, "", 0)) < 0)
		return r;
	/* the walker loads it next: loaded here first, so a damaged one is
	 * named and skipped instead of ending the walk */
	memset(&d, 0, sizeof d);
	t->bad_err = 0;
	t->rpath = t->dirpath;
	t->rpath_len = strlen(t->dirpath);
	r = node_dir_load(tw_read, t, type, hash, &d);
	node_dir_release(&d);
	if (r < 0) {
		size_t len = strlen(t->dirpath);
		return (r = node_failed(t, r, hash, t->dirpath, len)) < 0 ? r : 1;
	}
	if (level >= t->cap_enter) {
		size_t nc = level + 64;
		uint64_t *nv = realloc(t->at_enter, nc * sizeof *nv);
		if (!nv)
			return ferry_err(FERR_NOMEM, "scrubbing");
		t->at_enter = nv;
		t->cap_enter = nc;
	}
	t->at_enter[level] = t->found;
	return 0;
}

static int tw_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct tw *t = arg;
	uint8_t key[FERRY_HASH_LEN + 1];
	int r;
	if (level < t->cap_enter && t->found == t->at_enter[level] &&
	    (r = store_hset_add(t->clean, memo_key(t, hash, key), sizeof key, 0)) < 0)
		return r;
	return 0;
}

/* One snapshot's or bookmark's tree, from its root node. */
static int tw_tree(struct tw *t, int64_t id, uint64_t guid, const uint8_t *root, int nodes_only)
{
	static const struct node_walk_ops ops = {tw_enter, tw_entry, tw_leave};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, type, kind;
	t->bookmark = nodes_only;
	t->obj_id = id;
	t->guid = guid;
	t->nodes_only = nodes_only;
	t->sc->res->snapshots++;
	fbuf_init(&b, NODE_MAX);
	t->bad_err = 0;
	t->rpath = "/";
	t->rpath_len = 1;
	if ((r = tw_read(t, root, &type, &b)) == 0 &&
	    (type != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0)) {
		if (r == 0)
			r = ferry_err(FERR_CORRUPT, "the snapshot's root is not a root node");
		t->bad_err = 0;
	}
	if (r < 0) {
		r = node_failed(t, r, root, "/", 1);
		goto out;
	}
	if (!e.child_type)
		goto out;
	if (kind == NODE_ROOT_VOLUME)
		r = tw_file(t, e.child_type, e.child, e.size, "", 0);
	else
		r = node_tree_walk(tw_read, t, e.child_type, e.child, &ops, t);
	if (r < 0 && (r = node_failed(t, r, e.child, "/", 1)) < 0)
		goto out;
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

static int tw_snap(struct store_pool *p, const struct store_snap *s, void *arg)
{
	return tw_tree(arg, s->id, s->guid, s->root, 0);
}

static int tw_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	return tw_tree(arg, b->id, b->guid, b->root, 1);
}

static int tw_ds(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	int r = store_snap_iter(p, ds, tw_snap, arg);
	return r ? r : store_bookmark_iter(p, ds, tw_mark, arg);
}

static void tw_release(struct tw *t)
{
	store_hset_free(t->clean);
	store_reader_free(t->rd);
	for (size_t i = 0; i < t->nu; i++)
		free(t->u[i].path);
	free(t->u);
	free(t->d);
	free(t->rec);
	free(t->fresh);
	free(t->at_enter);
	free(t->dirpath);
}

int scrub_tree_pass(struct scrub *sc)
{
	struct tw t;
	struct store_ds root;
	int r;
	memset(&t, 0, sizeof t);
	t.sc = sc;
	if ((r = store_scrub_err_iter(sc->p, log_cb, &t)) < 0)
		goto out;
	if (t.nd > 1)
		qsort(t.d, t.nd, sizeof *t.d, dmg_cmp);
	if (t.nrec > 1)
		qsort(t.rec, t.nrec, sizeof *t.rec, dmg_cmp);
	if ((r = store_reader_new(sc->p, &t.rd)) < 0 || (r = store_hset_new(sc->p, 0, &t.clean)) < 0 ||
	    (r = store_ds_lookup(sc->p, store_pool_name(sc->p), &root)) < 0)
		goto out;
	/* one read snapshot for the whole walk: every tree as one state of
	 * the catalogue, and no lock round trip per query (a walk makes
	 * several per file) */
	if ((r = store_read_begin(sc->p)) < 0)
		goto out;
	r = store_ds_walk(sc->p, &root, -1, tw_ds, &t);
	store_read_end(sc->p);
	if (r < 0)
		goto out;
	/* the damage the walk found is logged (ids given), then every user row */
	if (t.nfresh) {
		if ((r = scrub_checkpoint(sc, 0)) < 0 ||
		    (r = store_scrub_checkpoint(sc->p, &sc->st, t.fresh, t.nfresh, 0, 0, 0)) < 0)
			goto out;
		for (size_t i = 0; i < t.nu; i++)
			if (t.u[i].err_id < 0)
				t.u[i].err_id = t.fresh[-t.u[i].err_id - 1].id;
	}
	r = store_scrub_users_put(sc->p, t.u, t.nu);
out:
	tw_release(&t);
	return r;
}
