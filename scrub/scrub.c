/* scrub/scrub.c — `ferry scrub`: the whole pool checked, every damage
 * named with the files that use it, and healed from a replica.
 *
 * The block pass is the long part and the resumable one: packs are read
 * in order, a run of neighbouring blocks per pread, on the caller's
 * thread (sequential I/O), and checked on the pipeline's workers (every
 * core decodes and hashes); results come back in order, so the position
 * saved at each checkpoint is a prefix of the pool whose blocks are all
 * checked. A stop request (`ferry scrub -s`, a flag in the catalogue) is
 * looked for at each checkpoint. The other passes (packs, nodes, trees,
 * space figures) are quick and redone by every run.
 *
 * The tree pass names files: each snapshot's tree is walked, every file's
 * blocklist compared with the damaged hashes; a directory subtree found
 * clean is remembered by hash (a TEMP key set) and skipped in the next
 * snapshots, so the walk of many snapshots costs what differs
 * between them. A damaged subtree is walked again for each snapshot that
 * has it, so each one's paths are listed, as zpool status -v does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scrub.h"

#define PENDING_MAX 1024 /* errors kept in memory between checkpoints */

struct sjob {
	struct store_scan_batch b;
	void *scratch; /* STORE_BLOCK_MAX bytes, made on a worker at first use */
};

struct scrub {
	struct store_pool *p;
	const struct scrub_opts *o;
	struct scrub_result *res;
	struct store_scrub_state st;
	struct store_scrub_err *pend;
	size_t npend, cappend;
	int fresh;            /* the next checkpoint empties the log first */
	unsigned drop_kinds;  /* ... and drops these kinds */
	uint64_t last_ck, run_t0, last_elapsed_t;
	uint64_t total;
	int stop;
};

static int pend_add(struct scrub *sc, const struct store_scrub_err *e)
{
	int r = VEC_GROW(sc->pend, sc->cappend, sc->npend, 64, "scrubbing");
	if (r < 0)
		return r;
	sc->pend[sc->npend++] = *e;
	return 0;
}

static void account_time(struct scrub *sc)
{
	uint64_t now = ferry_now_ns();
	sc->st.elapsed_ns += now - sc->last_elapsed_t;
	sc->last_elapsed_t = now;
}

static int checkpoint(struct scrub *sc, int clear_stop)
{
	account_time(sc);
	int r = store_scrub_checkpoint(sc->p, &sc->st, sc->pend, sc->npend, sc->fresh,
				       sc->drop_kinds, clear_stop);
	if (r < 0)
		return r;
	sc->fresh = 0;
	sc->drop_kinds = 0;
	sc->npend = 0;
	sc->last_ck = ferry_now_ns();
	return 0;
}

static int err_cb(void *arg, const struct store_scrub_err *e)
{
	return pend_add(arg, e);
}

static int orphan_cb(void *arg, const char *pack, uint64_t size)
{
	struct scrub *sc = arg;
	sc->res->orphans++;
	sc->res->orphan_bytes += size;
	return 0;
}

/* ---- the block pass ---------------------------------------------------------- */

static uint64_t ck_every(const struct scrub *sc)
{
	return sc->o->checkpoint_ns ? sc->o->checkpoint_ns : 500000000ull;
}

/* On the caller's thread between reads: is a stop asked for? Looked at
 * as often as checkpoints are made, not per block. */
static int poll_stop(struct scrub *sc, uint64_t *last)
{
	uint64_t now = ferry_now_ns();
	if (now - *last < ck_every(sc))
		return 0;
	*last = now;
	int r = store_scrub_stop_requested(sc->p);
	if (r > 0)
		sc->stop = 1;
	return r < 0 ? r : 0;
}

static int sjob_run(void *jv, void *ctx)
{
	struct sjob *j = jv;
	if (!j->scratch && !(j->scratch = malloc(STORE_BLOCK_MAX)))
		return ferry_err(FERR_NOMEM, "scrubbing");
	store_scan_verify(&j->b, j->scratch, STORE_BLOCK_MAX);
	return 0;
}

static int sjob_done(void *jv, int res, void *ctx)
{
	struct sjob *j = jv;
	struct scrub *sc = ctx;
	int r;
	if (res < 0)
		return res;
	for (size_t i = 0; i < j->b.n; i++) {
		const struct store_scan_item *it = &j->b.items[i];
		if (!it->err)
			continue;
		struct store_scrub_err e;
		memset(&e, 0, sizeof e);
		e.kind = STORE_SCRUB_BLOCK;
		e.has_hash = 1;
		memcpy(e.hash, it->hash, FERRY_HASH_LEN);
		e.codec = it->codec;
		snprintf(e.pack, sizeof e.pack, "%s", j->b.pack);
		e.offset = it->offset;
		snprintf(e.detail, sizeof e.detail, "%s", it->why);
		if ((r = pend_add(sc, &e)) < 0)
			return r;
	}
	sc->st.bytes += j->b.bytes;
	sc->st.blocks += j->b.n;
	sc->st.pack_id = j->b.pack_id;
	sc->st.offset = j->b.next_off;
	if (sc->o->progress)
		sc->o->progress(sc->o->arg, sc->st.bytes, sc->total);
	if (sc->npend >= PENDING_MAX || ferry_now_ns() - sc->last_ck >= ck_every(sc))
		return checkpoint(sc, 0);
	return 0;
}

static void sjob_release(void *jv, void *ctx)
{
	struct sjob *j = jv;
	store_scan_batch_release(&j->b);
	free(j->scratch);
}

static const struct pipeline_ops sjob_ops = {sjob_run, sjob_done, NULL, sjob_release};

static int block_pass(struct scrub *sc)
{
	struct store_scan *scan = NULL;
	struct pipeline *pl = NULL;
	uint64_t before = 0, nblocks = 0;
	int r;
	if ((r = store_scan_new(sc->p, sc->st.pack_id, sc->st.offset, &scan)) < 0)
		return r;
	if ((r = store_scan_totals(scan, &sc->total, &before, &nblocks)) < 0)
		goto out;
	/* what the earlier runs checked counts as done, as the pool stands now */
	sc->st.bytes = before;
	if (sc->res->resumed)
		sc->res->resumed_at = before;
	sc->res->total_bytes = sc->total;
	unsigned threads = pipeline_threads(sc->o->threads);
	uint64_t t0 = ferry_now_ns(), read = 0, polled = t0;
	if ((r = pipeline_new(&pl, threads, 2 * threads + 2, sizeof(struct sjob), &sjob_ops, sc)) < 0)
		goto out;
	while (!sc->stop) {
		void *jv;
		/* what is in flight is collected (and so checkpointed) at least
		 * as often as checkpoints are due: a scrub killed after its
		 * first seconds continues from there, not from the start */
		if (ferry_now_ns() - sc->last_ck >= ck_every(sc) && (r = pipeline_drain(pl)) < 0)
			goto out;
		if ((r = poll_stop(sc, &polled)) < 0 || (r = pipeline_job(pl, &jv)) < 0)
			goto out;
		if (sc->stop)
			break;
		struct sjob *j = jv;
		if (!j->b.buf.max)
			fbuf_init(&j->b.buf, STORE_BLOCK_MAX + ((size_t)8 << 20));
		if ((r = store_scan_next(scan, &j->b)) < 0)
			goto out;
		if (r == 0)
			break;
		read += j->b.bytes;
		if ((r = pipeline_submit(pl, j)) < 0)
			goto out;
		if (sc->o->rate) {
			/* --limit-rate: a scrub that leaves the disk to others */
			uint64_t due = t0 + (uint64_t)((double)read / (double)sc->o->rate * 1e9), now;
			while (!sc->stop && (now = ferry_now_ns()) < due) {
				uint64_t us = (due - now) / 1000;
				usleep((useconds_t)(us > 100000 ? 100000 : us));
				if ((r = poll_stop(sc, &polled)) < 0)
					goto out;
			}
		}
	}
	r = pipeline_drain(pl);
out:
	pipeline_free(pl);
	store_scan_free(scan);
	return r < 0 ? r : 0;
}

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
	const char *snap;       /* the tree's full name */
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
};

static int dmg_cmp(const void *a, const void *b)
{
	const struct dmg *x = a, *y = b;
	int c = memcmp(x->hash, y->hash, FERRY_HASH_LEN);
	return c ? c : (x->id > y->id) - (x->id < y->id);
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
	if (!e->has_hash || (e->kind != STORE_SCRUB_BLOCK && e->kind != STORE_SCRUB_NODE))
		return 0;
	if ((r = VEC_GROW(t->d, t->capd, t->nd, 64, "scrubbing")) < 0)
		return r;
	memcpy(t->d[t->nd].hash, e->hash, FERRY_HASH_LEN);
	t->d[t->nd++].id = e->id;
	return 0;
}

/* A user of every damage of hash: snapshot t->snap, path. */
static int users_of(struct tw *t, const uint8_t *hash, const char *path, size_t len)
{
	const struct dmg *d = dmg_find(t, hash);
	int r;
	if (!d)
		return 0;
	for (; d < t->d + t->nd && !memcmp(d->hash, hash, FERRY_HASH_LEN); d++) {
		if ((r = VEC_GROW(t->u, t->capu, t->nu, 256, "scrubbing")) < 0)
			return r;
		struct store_scrub_user *u = &t->u[t->nu];
		snprintf(u->snap, sizeof u->snap, "%s", t->snap);
		u->err_id = d->id;
		if (!(u->path = malloc(len + 1)))
			return ferry_err(FERR_NOMEM, "scrubbing");
		memcpy(u->path, path, len);
		u->path[len] = 0;
		t->nu++;
		t->found++;
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

static int tw_read(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct tw *t = arg;
	int r = store_node_read(t->rd, hash, type, out);
	if (r < 0) {
		memcpy(t->bad, hash, FERRY_HASH_LEN);
		t->bad_err = r;
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
static int tw_tree(struct tw *t, const char *name, const uint8_t *root, int nodes_only)
{
	static const struct node_walk_ops ops = {tw_enter, tw_entry, tw_leave};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, type, kind;
	t->snap = name;
	t->nodes_only = nodes_only;
	t->sc->res->snapshots++;
	fbuf_init(&b, NODE_MAX);
	t->bad_err = 0;
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
	return tw_tree(arg, s->name, s->root, 0);
}

static int tw_mark(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	return tw_tree(arg, b->name, b->root, 1);
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
	free(t->fresh);
	free(t->at_enter);
	free(t->dirpath);
}

static int tree_pass(struct scrub *sc)
{
	struct tw t;
	struct store_ds root;
	int r;
	memset(&t, 0, sizeof t);
	t.sc = sc;
	if ((r = store_scrub_err_iter(sc->p, log_cb, &t)) < 0)
		goto out;
	qsort(t.d, t.nd, sizeof *t.d, dmg_cmp);
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
		if ((r = checkpoint(sc, 0)) < 0 ||
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

/* ---- a whole scrub ------------------------------------------------------------- */

int scrub_run(struct store_pool *p, const struct scrub_opts *o, struct scrub_result *res)
{
	struct scrub sc;
	int r, lock = -1;
	memset(res, 0, sizeof *res);
	memset(&sc, 0, sizeof sc);
	sc.p = p;
	sc.o = o;
	sc.res = res;
	if ((r = store_scrub_lock(p, &lock)) < 0)
		return r;
	if ((r = store_scrub_state_get(p, &sc.st)) < 0)
		goto out;
	uint64_t now = ferry_now_ns();
	sc.run_t0 = sc.last_elapsed_t = sc.last_ck = now;
	if (sc.st.state == STORE_SCRUB_SCANNING || sc.st.state == STORE_SCRUB_PAUSED) {
		/* a stopped scrub, or one that was killed: on from its last
		 * checkpoint, its block errors kept */
		res->resumed = 1;
	} else {
		memset(&sc.st, 0, sizeof sc.st);
		sc.st.start_ns = now;
		sc.fresh = 1;
	}
	sc.st.state = STORE_SCRUB_SCANNING;
	sc.st.end_ns = 0;
	/* every kind but the block pass's is found again by this run */
	sc.drop_kinds = 1u << STORE_SCRUB_NODE | 1u << STORE_SCRUB_NOBLOCK |
			1u << STORE_SCRUB_NONODE | 1u << STORE_SCRUB_PACK | 1u << STORE_SCRUB_SPACE;
	uint64_t t = ferry_now_ns();
	if ((r = store_scrub_packs(p, err_cb, orphan_cb, &sc, &res->orphans_checked)) < 0 ||
	    (r = checkpoint(&sc, 1)) < 0 || (r = block_pass(&sc)) < 0)
		goto out;
	res->ns_blocks = ferry_now_ns() - t;
	t = ferry_now_ns();
	if (sc.stop) {
		sc.st.state = STORE_SCRUB_PAUSED;
		sc.st.end_ns = ferry_now_ns();
		res->stopped = 1;
		if ((r = checkpoint(&sc, 1)) < 0)
			goto out;
		goto done;
	}
	if ((r = store_scrub_nodes(p, err_cb, &sc, &res->nodes, &res->node_bytes)) < 0 ||
	    (r = store_scrub_space(p, err_cb, &sc)) < 0 ||
	    (r = store_scrub_unreferenced(p, &res->unref_blocks, &res->unref_bytes)) < 0)
		goto out;
	sc.drop_kinds = STORE_SCRUB_DROP_GONE;
	res->ns_nodes = ferry_now_ns() - t;
	t = ferry_now_ns();
	if ((r = checkpoint(&sc, 0)) < 0 || (r = tree_pass(&sc)) < 0)
		goto out;
	res->ns_trees = ferry_now_ns() - t;
	sc.st.state = STORE_SCRUB_FINISHED;
	sc.st.end_ns = ferry_now_ns();
	if ((r = checkpoint(&sc, 1)) < 0)
		goto out;
done:
	if ((r = store_scrub_state_get(p, &res->state)) < 0)
		goto out;
	res->errors = res->state.errors;
	res->bytes = res->state.bytes;
	res->blocks = res->state.blocks;
out:
	free(sc.pend);
	if (lock >= 0)
		close(lock);
	return r;
}

int scrub_stop(struct store_pool *p, unsigned wait_s)
{
	int r = store_scrub_request_stop(p);
	if (r < 0)
		return r;
	/* the scrub sees the request at its next checkpoint and then lets
	 * go of its lock */
	for (unsigned i = 0; i < wait_s * 20; i++) {
		int fd = -1;
		r = store_scrub_lock(p, &fd);
		if (r == 0) {
			close(fd);
			return 0;
		}
		if (r != -FERR_BUSY)
			return r;
		ferry_err_clear();
		usleep(50000);
	}
	return ferry_err(FERR_BUSY, "the scrub of pool '%s' did not stop within %u s",
			 store_pool_name(p), wait_s);
}

/* ---- repair ---------------------------------------------------------------------- */

struct rep {
	struct store_pool *p;
	struct store_reader *from;
	struct store_repair *rp;
	struct scrub_repair_result *res;
	struct fbuf buf;
	uint8_t *dec, *enc;
	size_t enc_cap;
	struct store_scrub_err *todo;
	size_t n, cap;
};

static int rep_collect(void *arg, const struct store_scrub_err *e)
{
	struct rep *x = arg;
	int r;
	if (!e->has_hash || (e->kind != STORE_SCRUB_BLOCK && e->kind != STORE_SCRUB_NODE &&
			     e->kind != STORE_SCRUB_NONODE))
		return 0;
	if ((r = VEC_GROW(x->todo, x->cap, x->n, 16, "repairing")) < 0)
		return r;
	x->todo[x->n++] = *e;
	return 0;
}

/* 1 when e was queued for repair, 0 when the replica cannot give a good
 * copy (the reason is dropped: it stays in the log), < 0 on errors of
 * the pool being repaired. */
static int rep_block(struct rep *x, const struct store_scrub_err *e)
{
	struct codec_spec c;
	uint32_t ls, want_ps, want_ls;
	int r;
	if ((r = store_repair_row(x->rp, e, &want_ps, &want_ls)) < 0)
		return r == -FERR_NOENT ? (ferry_err_clear(), 0) : r;
	if (store_block_read_stored(x->from, e->hash, e->codec, &c, &ls, &x->buf) < 0 ||
	    ls != want_ls ||
	    store_block_verify(c, x->buf.data, x->buf.len, ls, e->hash, x->dec, STORE_BLOCK_MAX) < 0) {
		ferry_err_clear();
		return 0;
	}
	if (codec_equal(c, e->codec) && x->buf.len == want_ps)
		return (r = store_repair_block(x->rp, e, x->buf.data, want_ps, ls)) < 0 ? r : 1;
	/* another codec: encoded again as the damaged copy was */
	struct store_block_in in = {.codec = c, .payload = x->buf.data, .psize = x->buf.len,
				    .lsize = ls, .hash = e->hash, .checked = 1,
				    .content = c.id == CODEC_OFF ? NULL : x->dec};
	struct store_block_bufs bufs = {x->dec, STORE_BLOCK_MAX, x->enc, x->enc_cap};
	struct store_block out;
	if (store_block_rule(&in, e->codec, STORE_ZERO_ENCODE, &bufs, &out) < 0 ||
	    !codec_equal(out.codec, e->codec) || out.psize != want_ps) {
		ferry_err_clear();
		return 0;
	}
	return (r = store_repair_block(x->rp, e, out.payload, want_ps, ls)) < 0 ? r : 1;
}

static int rep_node(struct rep *x, const struct store_scrub_err *e)
{
	int type, r;
	if (store_node_read(x->from, e->hash, &type, &x->buf) < 0) {
		ferry_err_clear();
		return 0;
	}
	return (r = store_repair_node(x->rp, e, type, x->buf.data, x->buf.len)) < 0 ? r : 1;
}

int scrub_repair(struct store_pool *p, struct store_pool *replica, struct scrub_repair_result *res)
{
	struct rep x;
	struct store_scrub_state st;
	int r, lock = -1, checked;
	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	x.p = p;
	x.res = res;
	fbuf_init(&x.buf, STORE_BLOCK_MAX);
	if ((r = store_scrub_lock(p, &lock)) < 0)
		goto out;
	if ((r = store_scrub_err_iter(p, rep_collect, &x)) < 0)
		goto out;
	if (x.n) {
		x.enc_cap = codec_bound(STORE_BLOCK_MAX);
		if (!(x.dec = malloc(STORE_BLOCK_MAX)) || !(x.enc = malloc(x.enc_cap))) {
			r = ferry_err(FERR_NOMEM, "repairing");
			goto out;
		}
		if ((r = store_reader_new(replica, &x.from)) < 0 ||
		    (r = store_repair_new(p, &x.rp)) < 0)
			goto out;
		for (size_t i = 0; i < x.n; i++) {
			const struct store_scrub_err *e = &x.todo[i];
			r = e->kind == STORE_SCRUB_BLOCK ? rep_block(&x, e) : rep_node(&x, e);
			if (r < 0)
				goto out;
			if (r)
				res->repaired++;
			else
				res->unrepaired++;
		}
		if ((r = store_repair_commit(x.rp, &res->bytes)) < 0)
			goto out;
		store_repair_free(x.rp);
		x.rp = NULL;
		store_reader_free(x.from);
		x.from = NULL;
	}
	/* what the repair changed of the packs (a missing pack whose blocks
	 * all moved is gone now) is looked at again */
	struct scrub sc;
	struct scrub_result tmp;
	memset(&sc, 0, sizeof sc);
	memset(&tmp, 0, sizeof tmp);
	sc.p = p;
	sc.res = &tmp;
	if ((r = store_scrub_state_get(p, &st)) < 0)
		goto out;
	sc.st = st;
	sc.last_elapsed_t = ferry_now_ns();
	sc.drop_kinds = 1u << STORE_SCRUB_PACK;
	if (st.state != STORE_SCRUB_NONE &&
	    ((r = store_scrub_packs(p, err_cb, orphan_cb, &sc, &checked)) < 0 ||
	     (r = store_scrub_checkpoint(p, &st, sc.pend, sc.npend, 0, sc.drop_kinds, 0)) < 0)) {
		free(sc.pend);
		goto out;
	}
	free(sc.pend);
	if ((r = store_scrub_state_get(p, &st)) < 0)
		goto out;
	res->errors = st.errors;
out:
	store_repair_free(x.rp);
	store_reader_free(x.from);
	free(x.todo);
	free(x.dec);
	free(x.enc);
	fbuf_release(&x.buf);
	if (lock >= 0)
		close(lock);
	return r;
}
