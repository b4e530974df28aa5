/* send/send.c — snapshots → a ferry stream.
 *
 * The walk: the target's tree against the base's, entry by entry (by name
 * in directories, by position in blocklist indexes). Equal subtrees are
 * skipped by hash. A first pass over the changed part collects the base's
 * nodes that the second pass may meet again elsewhere (a renamed file
 * keeps its blocklist node, a moved directory its directory node), so
 * those are not sent; blocks the base snapshot references are sent as
 * WRITE_BYREF. A bookmark base has no block references left in the
 * catalogue (its snapshot may be gone), so its tree is walked once first
 * to gather the blocks it names: the receiver, holding the snapshot, has
 * them. Every object goes out once per substream (a TEMP-table set) and in
 * post-order: children before the node that names them, the root last. The order is deterministic, so a resume position is a count of
 * body records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "send.h"

#define OUT_FLUSH ((size_t)1 << 20)
#define KEY_LEN (1 + FERRY_HASH_LEN)

struct snd {
	struct store_pool *p;
	struct store_reader *rd;
	const struct send_opts *o;
	struct stream_sink *sink;
	struct stream_encoder *enc; /* NULL when dry running */
	struct fbuf out;
	struct send_stats st;
	struct store_hset *sent;    /* objects already in this substream */
	struct store_hset *base;    /* nodes the base holds (first pass) */
	int64_t base_id;            /* base snapshot id, 0 for a full stream or a bookmark */
	struct store_hset *base_blocks; /* a bookmark base: the blocks (and nodes) its tree names */
	int collect;                /* first pass: gather, emit nothing */
	uint64_t seq, skip;         /* body records so far; resume: not written up to skip */
	unsigned flags;             /* stream flags */
	struct codec_spec prefer;   /* the codec asked for a stored copy in */
	struct fbuf blk, node;
	uint8_t *lbuf, *sbuf;
	size_t sbuf_cap;
	const char *cur;            /* snapshot being sent */
	const uint8_t *cur_root;    /* its root node, to name the files a damaged block is in */
	uint64_t last_ns;
	/* --compress: blocks are recompressed on the worker pool and their
	 * WRITEs encoded in order as they come back (before any other record) */
	struct workq *q;
	struct sjob *jobs;
	unsigned njobs, next, inflight;
};

/* One block being recompressed for --compress. */
struct sjob {
	uint8_t hash[FERRY_HASH_LEN];
	uint32_t lsize;
	struct codec_spec c, to;    /* as stored, and as asked */
	struct fbuf in;             /* the stored payload */
	struct store_block_loc loc; /* where it was read */
	uint8_t *lbuf, *sbuf;
	size_t sbuf_cap;
	struct stream_write w;      /* the result, pointing into this job */
};

static int pend_drain(struct snd *s);
static int pend_submit(struct snd *s, const uint8_t *hash, uint32_t lsize);

static void mkkey(uint8_t key[KEY_LEN], char kind, const uint8_t *hash)
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, hash, FERRY_HASH_LEN);
}

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct snd *s = arg;
	return store_node_read(s->rd, hash, type, out);
}

static int flush_out(struct snd *s, int force)
{
	int r;
	if (s->o->progress) {
		uint64_t now = ferry_now_ns();
		if (force || now - s->last_ns > 1000000000ull) {
			struct send_progress pr = {s->cur, s->st.bytes, s->st.records};
			s->o->progress(s->o->arg, &pr);
			s->last_ns = now;
		}
	}
	if (!s->enc || (!force && s->out.len < OUT_FLUSH))
		return 0;
	if ((r = stream_sink_flush(s->sink, &s->out)) < 0)
		return r;
	return 0;
}

/* Accounts one record of size bytes (a stream_size_* figure); appended by
 * the encoder to s->out unless dry running. */
static int counted(struct snd *s, uint64_t size)
{
	s->st.bytes += size;
	s->st.records++;
	return flush_out(s, 0);
}

/* 1 when body record number seq+1 is to be written (not before a resume
 * position); advances seq. */
static int body_next(struct snd *s)
{
	s->seq++;
	return s->seq > s->skip;
}

/* ---- objects -------------------------------------------------------------------- */

static int node_known(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int r;
	mkkey(key, 'N', hash);
	if (s->base && (r = store_hset_get(s->base, key, sizeof key, NULL)) != 0)
		return r;
	return store_hset_get(s->sent, key, sizeof key, NULL);
}

static int base_add(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	mkkey(key, 'N', hash);
	int r = store_hset_add(s->base, key, sizeof key, 0);
	return r < 0 ? r : 0;
}

static int emit_node(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int r, t;
	if ((r = node_known(s, hash)) != 0)
		return r < 0 ? r : 0;
	mkkey(key, 'N', hash);
	if ((r = store_hset_add(s->sent, key, sizeof key, 0)) < 0)
		return r;
	if (!body_next(s))
		return 0;
	if ((r = store_node_read(s->rd, hash, &t, &s->node)) < 0)
		return r;
	s->st.nodes++;
	if ((r = pend_drain(s)) < 0)
		return r;
	if (s->enc && (r = stream_encode_node(s->enc, (uint8_t)t, s->node.data, s->node.len,
					      &s->out)) < 0)
		return r;
	return counted(s, stream_size_node(s->node.len));
}

/* send_damage: the files of the snapshot being sent that use a block */
struct users {
	struct fbuf list;
	unsigned n;
};

static int user_cb(void *arg, const char *path, size_t len)
{
	struct users *u = arg;
	if (++u->n > 5)
		return 0;
	if ((u->list.len && fbuf_append(&u->list, ", ", 2) < 0) ||
	    fbuf_putc(&u->list, '\'') < 0 || fbuf_append(&u->list, path, len) < 0 ||
	    fbuf_putc(&u->list, '\'') < 0) {
		ferry_err_clear();
		return 1;
	}
	return 0;
}

/* err, met on block hash (already naming the block, its pack and offset),
 * with the files of the snapshot being sent that use it added, as zpool
 * status -v names the files a damaged block is in. Returns err's code. */
static int send_damage(struct snd *s, const uint8_t *hash, int err)
{
	struct users u;
	char msg[768];
	int code = -err;
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	if (err != -FERR_CORRUPT && err != -FERR_NOENT)
		return err;
	fbuf_init(&u.list, 4096);
	u.n = 0;
	if (store_block_users(s->rd, s->cur_root, hash, user_cb, &u) < 0)
		ferry_err_clear(); /* the damage itself is what matters */
	if (u.n)
		err = ferry_err(code, "%s; %s uses it in %.*s%s", msg, s->cur, (int)u.list.len,
				(const char *)u.list.data, u.n > 5 ? " and more" : "");
	else
		err = ferry_err(code, "%s", msg);
	fbuf_release(&u.list);
	return err;
}

/* 1 when a block stored in codec c is already what --compress asks (to). */
static int stored_as_is(struct codec_spec c, struct codec_spec to)
{
	return codec_equal(c, to) || (c.id == CODEC_OFF && to.id == CODEC_OFF);
}

static int recompress(struct codec_spec c, const uint8_t *data, size_t len, uint32_t lsize,
		      struct codec_spec to, uint8_t *lbuf, uint8_t *sbuf, size_t sbuf_cap,
		      struct stream_write *w);

/* The WRITE payload of block hash as o asks: logical, as stored, or
 * recompressed to o->codec. */
static int block_payload(struct snd *s, const uint8_t *hash, uint32_t lsize,
			 struct stream_write *w)
{
	struct codec_spec c;
	uint32_t ls;
	int r;
	memcpy(w->hash, hash, FERRY_HASH_LEN);
	w->lsize = lsize;
	if (!(s->flags & STREAM_F_COMPRESSED)) {
		if (!s->enc) {
			w->codec = CODEC_OFF;
			w->level = 0;
			w->psize = lsize;
			w->data = NULL;
			return 0;
		}
		if ((r = store_block_read(s->rd, hash, s->lbuf, lsize)) < 0)
			return send_damage(s, hash, r);
		w->codec = CODEC_OFF;
		w->level = 0;
		w->psize = lsize;
		w->data = s->lbuf;
		return 0;
	}
	if ((r = store_block_read_stored(s->rd, hash, s->prefer, &c, &ls, &s->blk)) < 0)
		return send_damage(s, hash, r);
	if (ls != lsize)
		return ferry_err(FERR_CORRUPT, "block is %u bytes, its blocklist says %u", ls, lsize);
	/* every block that leaves the pool is checked, as stored too */
	struct store_block_loc loc;
	store_reader_last_loc(s->rd, &loc);
	if ((r = store_block_verify(c, s->blk.data, s->blk.len, lsize, hash, s->lbuf,
				    STREAM_BLOCK_MAX)) < 0)
		return send_damage(s, hash, store_block_damage(hash, &loc, r));
	if (!(s->o->flags & SEND_RECOMPRESS) || stored_as_is(c, s->o->codec)) {
		w->codec = c.id;
		w->level = c.level;
		w->psize = (uint32_t)s->blk.len;
		w->data = s->blk.data;
		return 0;
	}
	/* --compress: recompress here so the receiver keeps it as it is */
	return recompress(c, s->blk.data, s->blk.len, lsize, s->o->codec, s->lbuf, s->sbuf,
			  s->sbuf_cap, w);
}

/* --compress for one stored block: payload data/len in codec c, lsize
 * bytes of content already checked against its hash, recompressed to
 * codec to as the storage rule says (a zero block is encoded rather than
 * made a hole: the receiver's blocklist names it). w points into lbuf or
 * sbuf. Thread-safe. */
static int recompress(struct codec_spec c, const uint8_t *data, size_t len, uint32_t lsize,
		      struct codec_spec to, uint8_t *lbuf, uint8_t *sbuf, size_t sbuf_cap,
		      struct stream_write *w)
{
	int r;
	if (c.id == CODEC_OFF)
		memcpy(lbuf, data, lsize);
	else if ((r = codec_decode(c, data, len, lbuf, lsize)) < 0)
		return r;
	size_t psize = 0;
	enum block_form form;
	if ((r = codec_store_block(to, lbuf, lsize, sbuf, sbuf_cap, &psize, &form)) < 0)
		return r;
	if (form == BLOCK_HOLE) {
		r = codec_encode(to, lbuf, lsize, sbuf, sbuf_cap, &psize);
		if (r == -FERR_NOSPACE_DST) {
			ferry_err_clear();
			form = BLOCK_RAW;
		} else if (r < 0) {
			return r;
		} else {
			form = psize <= lsize ? BLOCK_COMPRESSED : BLOCK_RAW;
		}
	}
	if (form == BLOCK_COMPRESSED) {
		w->codec = to.id;
		w->level = to.level;
		w->psize = (uint32_t)psize;
		w->data = sbuf;
	} else {
		w->codec = CODEC_OFF;
		w->level = 0;
		w->psize = lsize;
		w->data = lbuf;
	}
	return 0;
}

/* ---- --compress on the worker pool --------------------------------------------------- */

static int sjob_fn(void *jv, void *ctx)
{
	struct sjob *j = jv;
	int r;
	memcpy(j->w.hash, j->hash, FERRY_HASH_LEN);
	j->w.lsize = j->lsize;
	/* every block that leaves the pool is checked, as stored too */
	if ((r = store_block_verify(j->c, j->in.data, j->in.len, j->lsize, j->hash, j->lbuf,
				    STREAM_BLOCK_MAX)) < 0)
		return store_block_damage(j->hash, &j->loc, r);
	if (stored_as_is(j->c, j->to)) {
		j->w.codec = j->c.id;
		j->w.level = j->c.level;
		j->w.psize = (uint32_t)j->in.len;
		j->w.data = j->in.data;
		return 0;
	}
	return recompress(j->c, j->in.data, j->in.len, j->lsize, j->to, j->lbuf, j->sbuf,
			  j->sbuf_cap, &j->w);
}

/* Counts and (unless dry running) encodes one WRITE, in stream order. */
static int put_write(struct snd *s, const struct stream_write *w)
{
	int r;
	s->st.writes++;
	s->st.block_lbytes += w->lsize;
	s->st.block_pbytes += w->psize;
	if (s->enc && (r = stream_encode_write(s->enc, w, &s->out)) < 0)
		return r;
	return counted(s, stream_size_write(w->psize));
}

/* Encodes the oldest block in flight, once it is done. */
static int pend_collect(struct snd *s)
{
	void *jv;
	int res, r;
	if ((r = workq_collect(s->q, &jv, &res)) <= 0)
		return r < 0 ? r : ferry_err(FERR_INVAL, "no block in flight");
	s->inflight--;
	struct sjob *j = jv;
	if (res < 0)
		return send_damage(s, j->hash, res);
	return put_write(s, &j->w);
}

/* Encodes every block in flight: before any record that follows them. */
static int pend_drain(struct snd *s)
{
	int r;
	while (s->q && s->inflight)
		if ((r = pend_collect(s)) < 0)
			return r;
	return 0;
}

/* Reads block hash as stored and hands its recompression to the pool. */
static int pend_submit(struct snd *s, const uint8_t *hash, uint32_t lsize)
{
	uint32_t ls;
	int r;
	if (s->inflight == s->njobs && (r = pend_collect(s)) < 0)
		return r;
	struct sjob *j = &s->jobs[s->next];
	if ((r = store_block_read_stored(s->rd, hash, s->prefer, &j->c, &ls, &j->in)) < 0)
		return send_damage(s, hash, r);
	store_reader_last_loc(s->rd, &j->loc);
	if (ls != lsize)
		return ferry_err(FERR_CORRUPT, "block is %u bytes, its blocklist says %u", ls, lsize);
	memcpy(j->hash, hash, FERRY_HASH_LEN);
	j->lsize = lsize;
	j->to = s->o->flags & SEND_RECOMPRESS ? s->o->codec : j->c; /* -c: as stored */
	if ((r = workq_submit(s->q, j)) < 0)
		return r;
	s->next = (s->next + 1) % s->njobs;
	s->inflight++;
	return 0;
}

/* Starts the pool for -c and --compress, which check (and recompress) the
 * stored blocks on every core (not for a dry run, which reads no data). */
static int pend_init(struct snd *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = ncpu > 0 ? (unsigned)ncpu : 1;
	if (!(s->o->flags & (SEND_RECOMPRESS | SEND_COMPRESSED)) || !s->enc || threads < 2)
		return 0;
	s->njobs = threads * 4;
	if (!(s->jobs = calloc(s->njobs, sizeof *s->jobs)))
		return ferry_err(FERR_NOMEM, "sending");
	for (unsigned i = 0; i < s->njobs; i++) {
		struct sjob *j = &s->jobs[i];
		fbuf_init(&j->in, STORE_BLOCK_MAX + 64);
		j->sbuf_cap = codec_bound(STREAM_BLOCK_MAX);
		if (!(j->lbuf = malloc(STREAM_BLOCK_MAX)) || !(j->sbuf = malloc(j->sbuf_cap)))
			return ferry_err(FERR_NOMEM, "sending");
	}
	return workq_new(&s->q, threads, s->njobs, sjob_fn, s);
}

static void pend_free(struct snd *s)
{
	if (s->q) {
		void *jv;
		int res;
		while (s->inflight && workq_collect(s->q, &jv, &res) > 0)
			s->inflight--;
		workq_free(s->q);
		s->q = NULL;
	}
	for (unsigned i = 0; s->jobs && i < s->njobs; i++) {
		fbuf_release(&s->jobs[i].in);
		free(s->jobs[i].lbuf);
		free(s->jobs[i].sbuf);
	}
	free(s->jobs);
	s->jobs = NULL;
}

static int emit_block(struct snd *s, const uint8_t *hash, uint64_t len)
{
	uint8_t key[KEY_LEN];
	int r, inbase = 0;
	if (len == 0 || len > STREAM_BLOCK_MAX)
		return ferry_err(FERR_LIMIT, "a block of %llu bytes does not fit in a stream",
				 (unsigned long long)len);
	mkkey(key, 'B', hash);
	if ((r = store_hset_add(s->sent, key, sizeof key, 0)) <= 0)
		return r;
	if (s->base_id && (inbase = store_snap_has_block(s->p, s->base_id, hash)) < 0)
		return inbase;
	if (s->base_blocks && (inbase = store_hset_get(s->base_blocks, key, sizeof key, NULL)) < 0)
		return inbase;
	if (!body_next(s))
		return 0;
	if (inbase) {
		s->st.byrefs++;
		if ((r = pend_drain(s)) < 0)
			return r;
		if (s->enc && (r = stream_encode_byref(s->enc, hash, (uint32_t)len, &s->out)) < 0)
			return r;
		return counted(s, stream_size_byref());
	}
	if (s->q && (s->flags & STREAM_F_COMPRESSED))
		return pend_submit(s, hash, (uint32_t)len);
	struct stream_write w;
	memset(&w, 0, sizeof w);
	if ((r = block_payload(s, hash, (uint32_t)len, &w)) < 0)
		return r;
	return put_write(s, &w);
}

/* ---- the walk --------------------------------------------------------------------- */

static int walk_bl(struct snd *s, int nt, const uint8_t *nh, int ot, const uint8_t *oh,
		   int depth)
{
	struct fbuf nb, ob;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL, *ok = NULL;
	size_t n = 0, on = 0;
	int r, t, t2;
	if (oh && nt == ot && !memcmp(nh, oh, FERRY_HASH_LEN))
		return 0;
	if (s->collect && !oh)
		return 0;
	if (!s->collect && (r = node_known(s, nh)) != 0)
		return r < 0 ? r : 0;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	fbuf_init(&nb, NODE_MAX);
	fbuf_init(&ob, NODE_MAX);
	if (s->collect && (r = base_add(s, oh)) < 0)
		goto out;
	if ((r = store_node_read(s->rd, nh, &t, &nb)) < 0)
		goto out;
	if (t != nt) {
		r = ferry_err(FERR_CORRUPT, "node has type %d, expected %d", t, nt);
		goto out;
	}
	if (t == NODE_BLOCKLIST_INDEX) {
		if ((r = node_bli_decode(nb.data, nb.len, &k, &n)) < 0)
			goto out;
		if (oh && ot == NODE_BLOCKLIST_INDEX) {
			if ((r = store_node_read(s->rd, oh, &t2, &ob)) < 0 ||
			    (r = node_bli_decode(ob.data, ob.len, &ok, &on)) < 0)
				goto out;
			if (s->collect)
				for (size_t i = 0; i < on; i++)
					if ((r = base_add(s, ok[i].hash)) < 0)
						goto out;
		}
		uint64_t off = 0, ooff = 0;
		size_t j = 0;
		for (size_t i = 0; i < n; i++) {
			/* pair children that start at the same offset with the same span */
			while (ok && j < on && ooff < off)
				ooff += ok[j++].span;
			const struct node_index_child *oc =
				ok && j < on && ooff == off && ok[j].span == k[i].span ? &ok[j] : NULL;
			if ((r = walk_bl(s, k[i].type, k[i].hash, oc ? oc->type : 0,
					 oc ? oc->hash : NULL, depth + 1)) < 0)
				goto out;
			off += k[i].span;
		}
	} else if (t == NODE_BLOCKLIST) {
		if (!s->collect) {
			if ((r = node_bl_decode(nb.data, nb.len, &x, &n)) < 0)
				goto out;
			for (size_t i = 0; i < n; i++)
				if (!x[i].hole && (r = emit_block(s, x[i].hash, x[i].len)) < 0)
					goto out;
		}
	} else {
		r = ferry_err(FERR_CORRUPT, "file points to a node of type %d", t);
		goto out;
	}
	if (!s->collect)
		r = emit_node(s, nh);
out:
	free(x);
	free(k);
	free(ok);
	fbuf_release(&nb);
	fbuf_release(&ob);
	return r;
}

static int name_cmp(const struct node_entry *a, const struct node_entry *b)
{
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* The chunk hashes of a directory index node. */
static int dir_chunks(struct snd *s, const uint8_t *hash, int (*fn)(struct snd *, const uint8_t *))
{
	struct fbuf b;
	int r, t;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, hash, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || b.len < 5 || b.data[0] != NODE_EXT_DIR_INDEX) {
		r = ferry_err(FERR_CORRUPT, "directory points to a non-index node");
		goto out;
	}
	uint32_t nk = get_le32(b.data + 1);
	size_t pos = 5;
	for (uint32_t i = 0; i < nk; i++) {
		if (b.len - pos < 6) {
			r = ferry_err(FERR_CORRUPT, "directory index is truncated");
			goto out;
		}
		size_t fl = get_le16(b.data + pos + 4);
		pos += 6;
		if (b.len - pos < fl + FERRY_HASH_LEN) {
			r = ferry_err(FERR_CORRUPT, "directory index is truncated");
			goto out;
		}
		pos += fl;
		if ((r = fn(s, b.data + pos)) < 0)
			goto out;
		pos += FERRY_HASH_LEN;
	}
out:
	fbuf_release(&b);
	return r;
}

/* One directory of the walk: the target's (nt, nh) against the base's
 * (ot, oh; no base when !has_old), both decoded, with the position of
 * the next target entry and of its candidate in the base. */
struct wframe {
	int nt, ot, has_old;
	uint8_t nh[FERRY_HASH_LEN], oh[FERRY_HASH_LEN];
	struct node_dir nd, od;
	size_t i, j;
};

static void wframe_release(struct wframe *f)
{
	node_dir_release(&f->nd);
	node_dir_release(&f->od);
}

/* Opens directory nt/nh (against ot/oh) as frame f: 1 when it needs no
 * walk (equal to the base's, outside the first pass's reach, or already
 * sent), 0 when f is ready. */
static int wframe_open(struct snd *s, struct wframe *f, int nt, const uint8_t *nh, int ot,
		       const uint8_t *oh)
{
	int r;
	memset(f, 0, sizeof *f);
	if (oh && nt == ot && !memcmp(nh, oh, FERRY_HASH_LEN))
		return 1;
	if (s->collect && !oh)
		return 1;
	if (!s->collect && (r = node_known(s, nh)) != 0)
		return r;
	f->nt = nt;
	memcpy(f->nh, nh, FERRY_HASH_LEN);
	if (oh) {
		f->has_old = 1;
		f->ot = ot;
		memcpy(f->oh, oh, FERRY_HASH_LEN);
	}
	if ((r = node_dir_load(rd_node, s, nt, nh, &f->nd)) < 0 ||
	    (oh && (r = node_dir_load(rd_node, s, ot, oh, &f->od)) < 0))
		goto fail;
	if (s->collect) {
		if ((r = base_add(s, oh)) < 0 ||
		    (ot == NODE_EXT && (r = dir_chunks(s, oh, base_add)) < 0))
			goto fail;
		for (size_t j = 0; j < f->od.n; j++)
			if (f->od.ents[j].child_type && (r = base_add(s, f->od.ents[j].child)) < 0)
				goto fail;
	}
	return 0;
fail:
	wframe_release(f);
	return r;
}

/* The target's directory tree against the base's, depth first with an
 * explicit stack (trees as deep as NODE_TREE_DEPTH_MAX), each directory's
 * node emitted after everything below it. */
static int walk_dir(struct snd *s, int nt, const uint8_t *nh, int ot, const uint8_t *oh)
{
	struct wframe *st = NULL;
	size_t n = 0, cap = 0;
	int r;
	if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
		return r;
	if ((r = wframe_open(s, &st[0], nt, nh, ot, oh)) != 0)
		goto out;
	n = 1;
	while (n) {
		struct wframe *f = &st[n - 1];
		if (f->i == f->nd.n) {
			if (!s->collect) {
				if ((f->nt == NODE_EXT && (r = dir_chunks(s, f->nh, emit_node)) < 0) ||
				    (r = emit_node(s, f->nh)) < 0)
					goto out;
			}
			wframe_release(f);
			n--;
			continue;
		}
		const struct node_entry *e = &f->nd.ents[f->i++], *o = NULL;
		while (f->j < f->od.n && name_cmp(&f->od.ents[f->j], e) < 0)
			f->j++;
		if (f->j < f->od.n && name_cmp(&f->od.ents[f->j], e) == 0)
			o = &f->od.ents[f->j];
		if (!e->child_type)
			continue;
		if (o && (o->ftype != e->ftype || !o->child_type))
			o = NULL;
		if (e->ftype != NODE_F_DIR) {
			if ((r = walk_bl(s, e->child_type, e->child, o ? o->child_type : 0,
					 o ? o->child : NULL, 0)) < 0)
				goto out;
			continue;
		}
		if (n > (size_t)NODE_TREE_DEPTH_MAX + 1) {
			r = ferry_err(FERR_LIMIT, "directories nested deeper than %d levels",
				      NODE_TREE_DEPTH_MAX);
			goto out;
		}
		if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
			goto out;
		r = wframe_open(s, &st[n], e->child_type, e->child, o ? o->child_type : 0,
				o ? o->child : NULL);
		if (r < 0)
			goto out;
		if (r == 0)
			n++;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		wframe_release(&st[i]);
	free(st);
	return r < 0 ? r : 0;
}

/* ---- a bookmark base: the blocks its tree names ------------------------------------ */

/* Adds the blocks of blocklist (or index) hash to s->base_blocks, each
 * node once ('N' key in the same set). */
static int mark_bl(struct snd *s, const uint8_t *hash, int depth)
{
	uint8_t key[KEY_LEN];
	struct fbuf b;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	size_t n = 0;
	int r, t;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	mkkey(key, 'N', hash);
	if ((r = store_hset_add(s->base_blocks, key, sizeof key, 0)) <= 0)
		return r;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, hash, &t, &b)) < 0)
		goto out;
	if (t == NODE_BLOCKLIST) {
		if ((r = node_bl_decode(b.data, b.len, &x, &n)) < 0)
			goto out;
		for (size_t i = 0; i < n && r >= 0; i++) {
			if (x[i].hole)
				continue;
			mkkey(key, 'B', x[i].hash);
			r = store_hset_add(s->base_blocks, key, sizeof key, 0);
		}
	} else if (t == NODE_BLOCKLIST_INDEX) {
		if ((r = node_bli_decode(b.data, b.len, &k, &n)) < 0)
			goto out;
		fbuf_release(&b);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = mark_bl(s, k[i].hash, depth + 1);
	} else {
		r = ferry_err(FERR_CORRUPT, "a file points to a node of type %d", t);
	}
out:
	free(x);
	free(k);
	fbuf_release(&b);
	return r < 0 ? r : 0;
}

static int mb_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct snd *s = arg;
	uint8_t key[KEY_LEN];
	mkkey(key, 'N', hash);
	int r = store_hset_add(s->base_blocks, key, sizeof key, 0);
	return r < 0 ? r : !r; /* a directory met before: skip it */
}

static int mb_entry(void *arg, const struct node_walk_entry *we)
{
	const struct node_entry *e = we->e;
	if (e->ftype == NODE_F_REG && e->child_type)
		return mark_bl(arg, e->child, 0);
	return 0;
}

/* Adds to s->base_blocks every block the tree of root node root names. */
static int mark_blocks(struct snd *s, const uint8_t *root)
{
	static const struct node_walk_ops ops = {mb_enter, mb_entry, NULL};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, t, kind;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "the base's root is not a root node");
		goto out;
	}
	if (!e.child_type)
		goto out;
	if (kind == NODE_ROOT_FILESYSTEM)
		r = node_tree_walk(rd_node, s, e.child_type, e.child, &ops, s);
	else
		r = mark_bl(s, e.child, 0);
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

/* Walks root (against base root oroot, or NULL) once. */
static int walk_root(struct snd *s, const uint8_t *root, const uint8_t *oroot)
{
	struct node_entry e, oe;
	struct node_xattr *xa = NULL, *oxa = NULL;
	struct fbuf b, ob;
	int r, t, kind = 0, okind = 0, have_old = 0;
	fbuf_init(&b, NODE_MAX);
	fbuf_init(&ob, NODE_MAX);
	memset(&oe, 0, sizeof oe);
	if (oroot && !memcmp(root, oroot, FERRY_HASH_LEN)) {
		r = 0;
		goto out;
	}
	if ((r = store_node_read(s->rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "snapshot root is not a root node");
		goto out;
	}
	if (oroot) {
		if ((r = store_node_read(s->rd, oroot, &t, &ob)) < 0)
			goto out;
		if (t != NODE_EXT || (r = node_root_decode(ob.data, ob.len, &okind, &oe, &oxa)) < 0) {
			if (r >= 0)
				r = ferry_err(FERR_CORRUPT, "base root is not a root node");
			goto out;
		}
		have_old = okind == kind && oe.child_type;
		if (s->collect && (r = base_add(s, oroot)) < 0)
			goto out;
	}
	if (e.child_type) {
		if (kind == NODE_ROOT_FILESYSTEM)
			r = walk_dir(s, e.child_type, e.child, have_old ? oe.child_type : 0,
				     have_old ? oe.child : NULL);
		else
			r = walk_bl(s, e.child_type, e.child, have_old ? oe.child_type : 0,
				    have_old ? oe.child : NULL, 0);
		if (r < 0)
			goto out;
	}
	if (!s->collect)
		r = emit_node(s, root);
out:
	free(xa);
	free(oxa);
	fbuf_release(&b);
	fbuf_release(&ob);
	return r;
}

/* ---- properties -------------------------------------------------------------------- */

struct plist {
	struct stream_prop *v;
	size_t n, cap;
	int err;
};

static int prop_cb(const struct store_propval *v, void *arg)
{
	struct plist *l = arg;
	if (v->source != STORE_SRC_LOCAL && v->source != STORE_SRC_RECEIVED)
		return 0;
	if (l->n >= STREAM_PROPS_MAX)
		return l->err = ferry_err(FERR_LIMIT, "more than %d properties", STREAM_PROPS_MAX);
	if (strlen(v->exact) > STREAM_PROP_VALUE_MAX || strlen(v->name) > STREAM_PROP_NAME_MAX)
		return 0;
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "collecting properties");
	if (grown < 0)
		return l->err = grown;
	char *name = strdup(v->name), *value = strdup(v->exact);
	if (!name || !value) {
		free(name);
		free(value);
		return l->err = ferry_err(FERR_NOMEM, "collecting properties");
	}
	l->v[l->n].name = name;
	l->v[l->n].value = value;
	l->v[l->n].source = v->source == STORE_SRC_LOCAL ? STREAM_SRC_LOCAL : STREAM_SRC_RECEIVED;
	l->n++;
	return 0;
}

static int prop_sort(const void *a, const void *b)
{
	return strcmp(((const struct stream_prop *)a)->name, ((const struct stream_prop *)b)->name);
}

static void plist_release(struct plist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->v[i].name);
		free((char *)l->v[i].value);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int plist_load(struct store_pool *p, const struct store_ds *ds, struct plist *l)
{
	int r;
	memset(l, 0, sizeof *l);
	r = store_prop_all(p, ds, prop_cb, l);
	if (l->err < 0)
		r = l->err;
	if (r < 0) {
		plist_release(l);
		return r;
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, prop_sort);
	/* a name can come once only (local wins over received in prop_all) */
	size_t w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (w && !strcmp(l->v[w - 1].name, l->v[i].name)) {
			free((char *)l->v[i].name);
			free((char *)l->v[i].value);
			continue;
		}
		l->v[w++] = l->v[i];
	}
	l->n = w;
	return 0;
}

/* ---- one substream ---------------------------------------------------------------- */

static void split_ds(const char *full, char *ds, size_t n)
{
	const char *at = strchr(full, '@');
	size_t len = at ? (size_t)(at - full) : strlen(full);
	if (len >= n)
		len = n - 1;
	memcpy(ds, full, len);
	ds[len] = 0;
}

/* Sends snapshot to (against base, or full when base is NULL) as one
 * BEGIN..END; props (may be NULL) go into the BEGIN. base_mark: base is a
 * bookmark (id 0, snapname "#mark"), whose blocks are found by its tree. */
static int send_one(struct snd *s, const struct store_snap *to, const struct store_snap *base,
		    int base_mark, const struct plist *props, uint64_t resume)
{
	struct stream_begin b;
	char ds[STORE_NAME_MAX + 1];
	int r;
	uint64_t bytes0 = s->st.bytes;
	split_ds(to->name, ds, sizeof ds);
	memset(&b, 0, sizeof b);
	b.flags = s->flags | (resume ? STREAM_F_RESUMED : 0);
	b.ds_type = to->ds_type == STORE_DS_VOLUME ? STREAM_DS_VOLUME : STREAM_DS_FILESYSTEM;
	b.root_type = NODE_EXT;
	memcpy(b.root_hash, to->root, FERRY_HASH_LEN);
	b.to_guid = to->guid;
	b.from_guid = base ? base->guid : 0;
	b.creation_ns = to->creation_ns;
	b.creation_txg = to->createtxg;
	b.resume_pos = resume;
	b.dataset = ds;
	b.snapshot = to->snapname;
	if (props && (s->flags & STREAM_F_PROPS) && !(s->flags & STREAM_F_REPLICATE)) {
		b.props = props->v;
		b.nprops = props->n;
	}
	s->cur = to->name;
	s->cur_root = to->root;
	if (s->o->substream && s->enc)
		s->o->substream(s->o->arg, base ? "incremental" : "full",
				base ? base->snapname : "", to->name, 0);
	if (s->enc && (r = stream_encode_begin(s->enc, &b, &s->out)) < 0)
		return r;
	if ((r = counted(s, stream_size_begin(&b))) < 0)
		return r;
	if ((r = store_hset_new(s->p, 1, &s->sent)) < 0)
		return r;
	s->seq = 0;
	s->skip = resume;
	s->base_id = base && !base_mark ? base->id : 0;
	if (base && base_mark) {
		if ((r = store_hset_new(s->p, 1, &s->base_blocks)) < 0 ||
		    (r = mark_blocks(s, base->root)) < 0)
			goto out;
	}
	if (base) {
		if ((r = store_hset_new(s->p, 1, &s->base)) < 0)
			goto out;
		s->collect = 1;
		r = walk_root(s, to->root, base->root);
		s->collect = 0;
		if (r < 0)
			goto out;
	}
	if ((r = walk_root(s, to->root, base ? base->root : NULL)) < 0)
		goto out;
	if (s->seq < s->skip) {
		r = ferry_err(FERR_INVAL, "resume position %llu is past the end of the stream (%llu)",
			      (unsigned long long)s->skip, (unsigned long long)s->seq);
		goto out;
	}
	if ((r = pend_drain(s)) < 0 || (s->enc && (r = stream_encode_end(s->enc, &s->out)) < 0))
		goto out;
	if ((r = counted(s, stream_size_end())) < 0)
		goto out;
	s->st.substreams++;
	if (s->o->substream && !s->enc)
		s->o->substream(s->o->arg, base ? "incremental" : "full",
				base ? base->snapname : "", to->name, s->st.bytes - bytes0);
out:
	store_hset_free(s->sent);
	store_hset_free(s->base);
	store_hset_free(s->base_blocks);
	s->sent = s->base = s->base_blocks = NULL;
	return r;
}

/* ---- snapshot lists and packages ------------------------------------------------------ */

struct slist {
	struct store_snap *v;
	size_t n, cap;
};

static int slist_cb(struct store_pool *p, const struct store_snap *sn, void *arg)
{
	struct slist *l = arg;
	if (l->n >= STREAM_SNAPS_MAX)
		return ferry_err(FERR_LIMIT, "more than %d snapshots", STREAM_SNAPS_MAX);
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *sn;
	return 0;
}

static int slist_load(struct store_pool *p, const struct store_ds *ds, struct slist *l)
{
	memset(l, 0, sizeof *l);
	int r = store_snap_iter(p, ds, slist_cb, l);
	if (r < 0) {
		free(l->v);
		memset(l, 0, sizeof *l);
	}
	return r;
}

static ssize_t slist_find(const struct slist *l, const char *snapname)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].snapname, snapname))
			return (ssize_t)i;
	return -1;
}

struct dslist {
	struct store_ds *v;
	size_t n, cap;
};

static int dslist_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct dslist *l = arg;
	if (l->n >= STREAM_PKG_DATASETS_MAX)
		return ferry_err(FERR_LIMIT, "more than %d datasets", STREAM_PKG_DATASETS_MAX);
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing datasets");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *ds;
	return 0;
}

static int ds_sort(const void *a, const void *b)
{
	return strcmp(((const struct store_ds *)a)->name, ((const struct store_ds *)b)->name);
}

/* One dataset of a package: what it sends. */
struct pkg_ds {
	struct store_ds ds;
	struct slist snaps;
	struct plist props;
	ssize_t from, to; /* indexes in snaps; from -1: full */
	int include;      /* has substreams (it has the to snapshot) */
	int listed;       /* has a DATASET record */
};

static const char *snap_part(const char *s)
{
	const char *at = strchr(s, '@');
	return at ? at + 1 : s[0] == '@' ? s + 1 : s;
}

static int send_package(struct snd *s, const struct store_ds *top, const char *to_snap)
{
	struct dslist dl;
	struct pkg_ds *pd = NULL;
	const char *from = s->o->from ? snap_part(s->o->from) : NULL;
	int replicate = (s->o->flags & SEND_REPLICATE) != 0;
	int all = (s->o->flags & SEND_INTERMEDIATE) || (replicate && !from);
	size_t nds = 0;
	int r;
	memset(&dl, 0, sizeof dl);
	if (replicate) {
		if ((r = store_ds_walk(s->p, top, -1, dslist_cb, &dl)) < 0)
			goto out;
	} else if ((r = dslist_cb(s->p, top, &dl)) < 0) {
		goto out;
	}
	if (dl.n > 1)
		qsort(dl.v, dl.n, sizeof *dl.v, ds_sort);
	if (!(pd = calloc(dl.n ? dl.n : 1, sizeof *pd))) {
		r = ferry_err(FERR_NOMEM, "sending a package");
		goto out;
	}
	for (size_t i = 0; i < dl.n; i++) {
		struct pkg_ds *d = &pd[nds];
		d->ds = dl.v[i];
		if ((r = slist_load(s->p, &d->ds, &d->snaps)) < 0)
			goto out;
		nds++;
		d->to = slist_find(&d->snaps, to_snap);
		if (d->to < 0) {
			if (!strcmp(d->ds.name, top->name)) {
				r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", top->name,
					      to_snap);
				goto out;
			}
			/* A child without the snapshot gets no substream, but a
			 * TREE package lists it all the same (ferry-stream(5)):
			 * recv -F destroys what the list lacks, and the sender
			 * still has this one. */
			if (replicate) {
				d->listed = 1;
				if ((r = plist_load(s->p, &d->ds, &d->props)) < 0)
					goto out;
			}
			continue;
		}
		d->from = from ? slist_find(&d->snaps, from) : -1;
		if (from && d->from < 0 && !strcmp(d->ds.name, top->name)) {
			r = ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", top->name, from);
			goto out;
		}
		if (d->from >= d->to && d->from >= 0) {
			r = ferry_err(FERR_INVAL, "'%s@%s' is not earlier than '%s@%s'", d->ds.name,
				      from, d->ds.name, to_snap);
			goto out;
		}
		d->include = d->listed = 1;
		if ((replicate || (s->o->flags & SEND_PROPS)) &&
		    (r = plist_load(s->p, &d->ds, &d->props)) < 0)
			goto out;
	}
	struct stream_package pk;
	memset(&pk, 0, sizeof pk);
	/* TREE: the DATASETs are the whole tree; the substreams go without it */
	pk.flags = s->flags | (replicate ? STREAM_F_TREE : 0);
	pk.top = top->name;
	pk.to_snap = to_snap;
	pk.from_snap = from ? from : "";
	for (size_t i = 0; i < nds; i++)
		pk.ndatasets += pd[i].listed;
	if (s->enc && (r = stream_encode_package(s->enc, &pk, &s->out)) < 0)
		goto out;
	if ((r = counted(s, stream_size_package(&pk))) < 0)
		goto out;
	for (size_t i = 0; i < nds; i++) {
		struct pkg_ds *d = &pd[i];
		if (!d->listed)
			continue;
		struct stream_snap *ss = calloc(d->snaps.n ? d->snaps.n : 1, sizeof *ss);
		if (!ss) {
			r = ferry_err(FERR_NOMEM, "sending a package");
			goto out;
		}
		for (size_t j = 0; j < d->snaps.n; j++) {
			ss[j].guid = d->snaps.v[j].guid;
			ss[j].txg = d->snaps.v[j].createtxg;
			ss[j].creation_ns = d->snaps.v[j].creation_ns;
			ss[j].name = d->snaps.v[j].snapname;
		}
		struct stream_dataset sd;
		memset(&sd, 0, sizeof sd);
		sd.guid = d->ds.guid;
		sd.ds_type = d->ds.type == STORE_DS_VOLUME ? STREAM_DS_VOLUME : STREAM_DS_FILESYSTEM;
		sd.name = d->ds.name;
		sd.props = d->props.v;
		sd.nprops = d->props.n;
		sd.snaps = ss;
		sd.nsnaps = d->snaps.n;
		r = s->enc ? stream_encode_dataset(s->enc, &sd, &s->out) : 0;
		uint64_t size = stream_size_dataset(&sd);
		free(ss);
		if (r < 0 || (r = counted(s, size)) < 0)
			goto out;
	}
	for (size_t i = 0; i < nds; i++) {
		struct pkg_ds *d = &pd[i];
		if (!d->include)
			continue;
		ssize_t start = d->from >= 0 ? d->from + 1 : all ? 0 : d->to;
		const struct store_snap *prev = d->from >= 0 ? &d->snaps.v[d->from] : NULL;
		if (d->from >= 0 && !all)
			start = d->to;
		for (ssize_t j = start; j <= d->to; j++) {
			if ((r = send_one(s, &d->snaps.v[j], prev, 0, NULL, 0)) < 0)
				goto out;
			prev = &d->snaps.v[j];
		}
	}
	if (s->enc && (r = stream_encode_package_end(s->enc, &s->out)) < 0)
		goto out;
	r = counted(s, stream_size_package_end());
out:
	for (size_t i = 0; pd && i < nds; i++) {
		free(pd[i].snaps.v);
		plist_release(&pd[i].props);
	}
	free(pd);
	free(dl.v);
	return r;
}

/* ---- entry ---------------------------------------------------------------------------- */

/* A bookmark as an incremental base: id 0 (no block references), snapname
 * "#mark" (as -v prints it). */
static void mark_to_base(const struct store_bookmark *b, struct store_snap *out)
{
	memset(out, 0, sizeof *out);
	out->ds_id = b->ds_id;
	snprintf(out->name, sizeof out->name, "%s", b->name);
	snprintf(out->snapname, sizeof out->snapname, "#%s", b->markname);
	out->guid = b->guid;
	out->createtxg = b->createtxg;
	out->creation = b->creation;
	out->creation_ns = b->creation_ns;
	memcpy(out->root, b->root, FERRY_HASH_LEN);
	out->ds_type = b->ds_type;
}

/* The base named by -i: "@snap", "snap", "ds@snap", "#mark" or "ds#mark";
 * *mark is 1 for a bookmark. */
static int lookup_base(struct store_pool *p, const char *dsname, const char *from,
		       struct store_snap *out, int *mark)
{
	char full[2 * STORE_NAME_MAX + 2];
	*mark = 0;
	if (strchr(from, '#')) {
		struct store_bookmark b;
		int r;
		if (from[0] == '#')
			snprintf(full, sizeof full, "%s%s", dsname, from);
		else
			snprintf(full, sizeof full, "%s", from);
		if ((r = store_bookmark_lookup(p, full, &b)) < 0)
			return r;
		mark_to_base(&b, out);
		*mark = 1;
		return 0;
	}
	if (strchr(from, '@') && from[0] != '@')
		snprintf(full, sizeof full, "%s", from);
	else
		snprintf(full, sizeof full, "%s@%s", dsname, snap_part(from));
	return store_snap_lookup(p, full, out);
}

struct mark_find {
	uint64_t guid;
	struct store_snap *out;
	int found;
};

static int mark_find_cb(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct mark_find *f = arg;
	if (b->guid != f->guid)
		return 0;
	mark_to_base(b, f->out);
	f->found = 1;
	return 1;
}

int send_run(struct store_pool *p, const char *snap, const struct send_opts *o,
	     struct stream_sink *out, struct send_stats *st)
{
	struct snd s;
	struct store_snap to, base;
	struct store_ds ds;
	struct plist props;
	struct stream_token tok;
	char dsname[STORE_NAME_MAX + 1], full[2 * STORE_NAME_MAX + 2];
	uint64_t resume = 0;
	int r;
	memset(&s, 0, sizeof s);
	memset(&props, 0, sizeof props);
	s.p = p;
	s.o = o;
	s.sink = out;
	fbuf_init(&s.out, (size_t)64 << 20);
	fbuf_init(&s.blk, STORE_BLOCK_MAX + 64);
	fbuf_init(&s.node, NODE_MAX);
	s.sbuf_cap = codec_bound(STREAM_BLOCK_MAX);
	if (!(s.lbuf = malloc(STREAM_BLOCK_MAX)) || !(s.sbuf = malloc(s.sbuf_cap))) {
		r = ferry_err(FERR_NOMEM, "sending");
		goto out;
	}
	/* one read snapshot for the whole stream: a consistent view, and no
	 * per-query locking */
	if ((r = store_read_begin(p)) < 0 || (r = store_reader_new(p, &s.rd)) < 0)
		goto out;
	if (!(o->flags & SEND_DRYRUN) && (r = stream_encoder_new(&s.enc, 0)) < 0)
		goto out;
	if ((r = pend_init(&s)) < 0)
		goto out;
	unsigned flags = o->flags;
	const char *from = o->from;
	if (o->token) {
		if ((r = stream_token_decode(o->token, &tok)) < 0)
			goto out;
		snprintf(full, sizeof full, "%s@%s", tok.dataset, tok.snapshot);
		snap = full;
		resume = tok.resume_pos;
		flags &= ~(unsigned)(SEND_COMPRESSED | SEND_PROPS | SEND_REPLICATE | SEND_INTERMEDIATE);
		if (tok.flags & STREAM_F_COMPRESSED)
			flags |= SEND_COMPRESSED;
		if (tok.flags & STREAM_F_PROPS)
			flags |= SEND_PROPS;
	}
	split_ds(snap, dsname, sizeof dsname);
	if (!strchr(snap, '@')) {
		r = ferry_err(FERR_NAME, "'%s' is not a snapshot", snap);
		goto out;
	}
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0 || (r = store_snap_lookup(p, snap, &to)) < 0)
		goto out;
	if (flags & (SEND_COMPRESSED | SEND_RECOMPRESS))
		s.flags |= STREAM_F_COMPRESSED;
	if (flags & (SEND_PROPS | SEND_REPLICATE))
		s.flags |= STREAM_F_PROPS;
	if (flags & SEND_RECOMPRESS)
		s.prefer = o->codec;
	else if ((r = store_ds_compression(p, &ds, &s.prefer)) < 0)
		goto out;
	if (flags & (SEND_REPLICATE | SEND_INTERMEDIATE)) {
		if (flags & SEND_INTERMEDIATE && !from) {
			r = ferry_err(FERR_INVAL, "-I needs a base snapshot");
			goto out;
		}
		if (from && strchr(from, '#')) {
			/* a package names its base snapshot and lists the
			 * sender's snapshots; a bookmark is neither */
			r = ferry_err(FERR_UNSUPPORTED, "-I and -R need a snapshot as base, not a "
				      "bookmark (use -i %s)", from);
			goto out;
		}
		s.flags |= STREAM_F_REPLICATE | STREAM_F_PROPS;
		r = send_package(&s, &ds, to.snapname);
	} else {
		const struct store_snap *bp = NULL;
		int base_mark = 0;
		if (o->token && tok.from_guid) {
			/* the base is the snapshot of that guid, or a bookmark of it */
			struct slist l;
			if ((r = slist_load(p, &ds, &l)) < 0)
				goto out;
			for (size_t i = 0; i < l.n; i++)
				if (l.v[i].guid == tok.from_guid) {
					base = l.v[i];
					bp = &base;
				}
			free(l.v);
			struct mark_find mf = {tok.from_guid, &base, 0};
			if (!bp && (r = store_bookmark_iter(p, &ds, mark_find_cb, &mf)) < 0)
				goto out;
			if (!bp && mf.found) {
				bp = &base;
				base_mark = 1;
			}
			if (!bp) {
				r = ferry_err(FERR_NOENT, "the token's base snapshot (guid %llu) is gone",
					      (unsigned long long)tok.from_guid);
				goto out;
			}
		} else if (from) {
			if ((r = lookup_base(p, dsname, from, &base, &base_mark)) < 0)
				goto out;
			if (base.ds_id != to.ds_id) {
				r = ferry_err(FERR_INVAL, "'%s' is not a %s of '%s'", base.name,
					      base_mark ? "bookmark" : "snapshot", dsname);
				goto out;
			}
			if (base.createtxg >= to.createtxg) {
				r = ferry_err(FERR_INVAL, "'%s' is not earlier than '%s'", base.name,
					      to.name);
				goto out;
			}
			bp = &base;
		}
		if (o->token && to.guid != tok.to_guid) {
			r = ferry_err(FERR_NOENT, "'%s' is not the snapshot the token names", to.name);
			goto out;
		}
		if ((s.flags & STREAM_F_PROPS) && (r = plist_load(p, &ds, &props)) < 0)
			goto out;
		r = send_one(&s, &to, bp, base_mark, &props, resume);
	}
	if (r < 0)
		goto out;
	if ((r = flush_out(&s, 1)) < 0)
		goto out;
	if (st)
		*st = s.st;
out:
	plist_release(&props);
	store_hset_free(s.sent);
	store_hset_free(s.base);
	store_hset_free(s.base_blocks);
	pend_free(&s);
	stream_encoder_free(s.enc);
	store_reader_free(s.rd);
	store_read_end(p);
	fbuf_release(&s.out);
	fbuf_release(&s.blk);
	fbuf_release(&s.node);
	free(s.lbuf);
	free(s.sbuf);
	return r;
}
