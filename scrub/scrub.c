/* scrub/scrub.c — `ferry scrub`: the whole pool checked, every damage
 * named with the files that use it, and healed from a replica.
 *
 * The block pass is the long part and the resumable one: packs are read
 * in order, a run of neighbouring blocks per pread, on the caller's
 * thread (sequential I/O), and checked on the pipeline's workers (every
 * core decodes and hashes); results come back in order, so the position
 * saved at each checkpoint is a prefix of the pool whose blocks are all
 * checked. A stop request (`ferry scrub -s`, a flag in the catalogue) is
 * looked for at each checkpoint. The other passes (packs, the records
 * besides blocks, nodes, trees, space figures) are quick and redone by
 * every run.
 *
 * The tree pass (tree.c) names files: each snapshot's tree is walked, every file's
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

#include "internal.h"

#define PENDING_MAX 1024 /* errors kept in memory between checkpoints */

struct sjob {
	struct store_scan_batch b;
	void *scratch; /* STORE_BLOCK_MAX bytes, made on a worker at first use */
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

int scrub_checkpoint(struct scrub *sc, int clear_stop)
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
	if (!j->scratch && !(j->scratch = malloc(STORE_SCAN_LANES * (size_t)STORE_BLOCK_MAX)))
		return ferry_err(FERR_NOMEM, "scrubbing");
	store_scan_verify(&j->b, j->scratch, STORE_SCAN_LANES * (size_t)STORE_BLOCK_MAX);
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
		return scrub_checkpoint(sc, 0);
	return 0;
}

static void sjob_release(void *jv, void *ctx)
{
	struct sjob *j = jv;
	store_scan_batch_release(&j->b);
	free(j->scratch);
}

static const struct pipeline_ops sjob_ops = {sjob_run, sjob_done, NULL, sjob_release, NULL};

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
		j->b.deep = sc->o->deep;
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
			1u << STORE_SCRUB_NONODE | 1u << STORE_SCRUB_PACK | 1u << STORE_SCRUB_SPACE |
			1u << STORE_SCRUB_RECORD;
	uint64_t t = ferry_now_ns();
	if ((r = store_scrub_packs(p, err_cb, orphan_cb, &sc, &res->orphans_checked)) < 0 ||
	    (r = scrub_checkpoint(&sc, 1)) < 0 || (r = block_pass(&sc)) < 0)
		goto out;
	res->ns_blocks = ferry_now_ns() - t;
	t = ferry_now_ns();
	if (sc.stop) {
		sc.st.state = STORE_SCRUB_PAUSED;
		sc.st.end_ns = ferry_now_ns();
		res->stopped = 1;
		if ((r = scrub_checkpoint(&sc, 1)) < 0)
			goto out;
		goto done;
	}
	if ((r = store_scrub_records(p, o->deep, err_cb, &sc, &res->records, &res->record_bytes)) < 0 ||
	    (r = store_scrub_nodes(p, err_cb, &sc, &res->nodes, &res->node_bytes)) < 0 ||
	    (r = store_scrub_space(p, err_cb, &sc)) < 0 ||
	    (r = store_scrub_unreferenced(p, &res->unref_blocks, &res->unref_bytes)) < 0)
		goto out;
	sc.drop_kinds = STORE_SCRUB_DROP_GONE;
	res->ns_nodes = ferry_now_ns() - t;
	t = ferry_now_ns();
	if ((r = scrub_checkpoint(&sc, 0)) < 0 || (r = scrub_tree_pass(&sc)) < 0)
		goto out;
	res->ns_trees = ferry_now_ns() - t;
	sc.st.state = STORE_SCRUB_FINISHED;
	sc.st.end_ns = ferry_now_ns();
	if ((r = scrub_checkpoint(&sc, 1)) < 0)
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
	const struct scrub_source *src;
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

/* 1 when e was queued for repair, 0 when the source gave no good copy
 * (counted in rejected when it gave a bad one; the damage stays in the
 * log), < 0 on errors of the pool being repaired or of the source. */
static int rep_block(struct rep *x, const struct store_scrub_err *e)
{
	struct codec_spec c;
	uint32_t ls = 0, want_ps, want_ls;
	int r;
	if ((r = store_repair_row(x->rp, e, &want_ps, &want_ls)) < 0)
		return r == -FERR_NOENT ? (ferry_err_clear(), 0) : r;
	if ((r = x->src->block(x->src->arg, e->hash, e->codec, &c, &ls, &x->buf)) != 0)
		return r < 0 ? r : 0;
	if (ls != want_ls ||
	    store_block_verify(c, x->buf.data, x->buf.len, ls, e->hash, x->dec, STORE_BLOCK_MAX) < 0) {
		ferry_err_clear();
		x->res->rejected++;
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
	uint8_t h[FERRY_HASH_LEN];
	int type = 0, r;
	if ((r = x->src->node(x->src->arg, e->hash, &type, &x->buf)) != 0)
		return r < 0 ? r : 0;
	node_hash(type, x->buf.data, x->buf.len, h);
	if (type < 1 || type > 4 || x->buf.len > NODE_MAX || memcmp(h, e->hash, FERRY_HASH_LEN)) {
		x->res->rejected++;
		return 0;
	}
	return (r = store_repair_node(x->rp, e, type, x->buf.data, x->buf.len)) < 0 ? r : 1;
}

/* ---- another pool as the source ---- */

static int pool_block(void *arg, const uint8_t hash[FERRY_HASH_LEN], struct codec_spec prefer,
		      struct codec_spec *codec, uint32_t *lsize, struct fbuf *out)
{
	if (store_block_read_stored(arg, hash, prefer, codec, lsize, out, NULL) < 0) {
		ferry_err_clear(); /* missing, or its own copy unreadable: not held */
		return 1;
	}
	return 0;
}

static int pool_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	if (store_node_read(arg, hash, type, out) < 0) {
		ferry_err_clear();
		return 1;
	}
	return 0;
}

int scrub_repair(struct store_pool *p, struct store_pool *replica, struct scrub_repair_result *res)
{
	struct store_reader *rd = NULL;
	int r;
	memset(res, 0, sizeof *res);
	if ((r = store_reader_new(replica, &rd)) < 0)
		return r;
	struct scrub_source src = {pool_block, pool_node, rd};
	r = scrub_repair_from(p, &src, res);
	store_reader_free(rd);
	return r;
}

int scrub_repair_from(struct store_pool *p, const struct scrub_source *src,
		      struct scrub_repair_result *res)
{
	struct rep x;
	struct store_scrub_state st;
	int r, lock = -1, checked;
	memset(res, 0, sizeof *res);
	memset(&x, 0, sizeof x);
	x.p = p;
	x.src = src;
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
		if ((r = store_repair_new(p, &x.rp)) < 0)
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
	free(x.todo);
	free(x.dec);
	free(x.enc);
	fbuf_release(&x.buf);
	if (lock >= 0)
		close(lock);
	return r;
}
