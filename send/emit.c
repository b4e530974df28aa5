/* send/emit.c — records out. Nodes and blocks go once per substream, each
 * counted (the -n estimate is the sum of stream_size_* figures, exact);
 * with -c and --compress the stored blocks are checked (and recompressed
 * by the storage rule) on the pipeline's workers and their WRITEs encoded
 * in order as they come back, before any other record. A damaged block is
 * reported with the files that use it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define OUT_FLUSH ((size_t)1 << 20) /* stream bytes buffered before a write */

/* One record in order on the pipeline: a block being checked (and
 * recompressed for --compress) by a worker, or, while blocks are in
 * flight, a record that needs no worker and only waits for them (a kept
 * block's WRITE, a NODE, a WRITE_BYREF): queued behind them, done
 * (pipeline_submit_done: no worker is woken for it), instead of draining
 * them, so the walk goes on while the workers work. */
enum sjob_kind { SJ_BLOCK, SJ_WRITE, SJ_NODE, SJ_BYREF };
struct sjob {
	int kind;                   /* enum sjob_kind */
	int ntype;                  /* SJ_NODE: its type; its bytes are in in */
	uint8_t hash[FERRY_HASH_LEN];
	uint32_t lsize;
	struct codec_spec c, to;    /* as stored, and as asked */
	struct fbuf in;             /* the stored payload */
	int vouched;                /* its pack's CRC-32C tail matched it */
	int verified;               /* sjob_prep decoded it (into lbuf) and found its hash */
	struct store_block_loc loc; /* where it was read */
	uint8_t *lbuf, *sbuf;
	size_t sbuf_cap;
	struct stream_write w;      /* the result, pointing into this job */
};

int send_flush(struct snd *s, int force)
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
int send_counted(struct snd *s, uint64_t size)
{
	s->st.bytes += size;
	s->st.records++;
	return send_flush(s, 0);
}

int send_emit_hint(struct snd *s)
{
	struct stream_hint h;
	int r;
	memset(&h, 0, sizeof h);
	if (s->o->flags & SEND_ESTIMATE)
		h.size = s->o->estimate;
	/* --compress: a block goes raw only when the storage rule, run here
	 * with exactly this codec, found it would not save 12.5 % (zero
	 * blocks are encoded, kept ones are this codec already), so every raw
	 * WRITE has been tried with it, and a receiver with the same codec
	 * need not try again */
	if ((s->o->flags & SEND_RECOMPRESS) && s->o->codec.id != CODEC_OFF) {
		h.tried_codec = (uint8_t)s->o->codec.id;
		h.tried_level = (uint8_t)s->o->codec.level;
	}
	if (!(s->o->flags & SEND_ESTIMATE) && !h.tried_codec)
		return 0;
	if (s->enc && (r = stream_encode_hint(s->enc, &h, &s->out)) < 0)
		return r;
	return send_counted(s, stream_size_hint());
}

/* 1 when body record number seq+1 is to be written (not before a resume
 * position); advances seq. */
static int body_next(struct snd *s)
{
	s->seq++;
	return s->seq > s->skip;
}

/* 1 when blocks are in flight on the pipeline: a record then queues
 * behind them (sjob_get); else it goes out at once. */
static int behind_blocks(const struct snd *s)
{
	return s->pl && pipeline_pending(s->pl) > 0;
}

/* The next slot of the pipeline, its buffers made the first time. */
static int sjob_get(struct snd *s, struct sjob **out)
{
	void *jv;
	int r;
	if ((r = pipeline_job(s->pl, &jv)) < 0)
		return r;
	struct sjob *j = jv;
	if (!j->lbuf) {
		fbuf_init(&j->in, STORE_BLOCK_MAX + 64);
		j->sbuf_cap = codec_bound(STREAM_BLOCK_MAX);
		if (!(j->lbuf = malloc(STREAM_BLOCK_MAX)) || !(j->sbuf = malloc(j->sbuf_cap))) {
			free(j->lbuf);
			j->lbuf = NULL;
			return ferry_err(FERR_NOMEM, "sending");
		}
	}
	j->kind = SJ_BLOCK;
	j->verified = 0;
	*out = j;
	return 0;
}

/* Encodes (unless dry running) and counts one NODE, in stream order. */
static int put_node(struct snd *s, int type, const struct fbuf *n)
{
	int r;
	if (s->enc && (r = stream_encode_node(s->enc, (uint8_t)type, n->data, n->len,
					      &s->out)) < 0)
		return r;
	return send_counted(s, stream_size_node(n->len));
}

/* Encodes (unless dry running) and counts one WRITE_BYREF, in order. */
static int put_byref(struct snd *s, const uint8_t *hash, uint32_t lsize)
{
	int r;
	if (s->enc && (r = stream_encode_byref(s->enc, hash, lsize, &s->out)) < 0)
		return r;
	return send_counted(s, stream_size_byref());
}

int send_node_known(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int r;
	send_key(key, 'N', hash);
	if (s->base && (r = store_hset_get(s->base, key, sizeof key, NULL)) != 0)
		return r;
	return store_hset_get(s->sent, key, sizeof key, NULL);
}

int send_emit_node(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int r, t;
	if ((r = send_node_known(s, hash)) != 0)
		return r < 0 ? r : 0;
	send_key(key, 'N', hash);
	if ((r = store_hset_add(s->sent, key, sizeof key, 0)) < 0)
		return r;
	if (!body_next(s))
		return 0;
	s->st.nodes++;
	if (behind_blocks(s)) {
		struct sjob *j;
		if ((r = sjob_get(s, &j)) < 0)
			return r;
		if ((r = store_node_read(s->rd, hash, &t, &j->in)) < 0)
			return r;
		j->kind = SJ_NODE;
		j->ntype = t;
		return pipeline_submit_done(s->pl, j);
	}
	if ((r = store_node_read(s->rd, hash, &t, &s->node)) < 0)
		return r;
	return put_node(s, t, &s->node);
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

/* The WRITE of logical block hash (a stream without -c): its content,
 * unless dry running, which reads no data. */
static int block_payload(struct snd *s, const uint8_t *hash, uint32_t lsize,
			 struct stream_write *w)
{
	int r;
	memcpy(w->hash, hash, FERRY_HASH_LEN);
	w->lsize = lsize;
	w->codec = CODEC_OFF;
	w->level = 0;
	w->psize = lsize;
	w->data = NULL;
	if (!s->enc)
		return 0;
	if ((r = store_block_read(s->rd, hash, s->lbuf, lsize)) < 0)
		return send_damage(s, hash, r);
	w->data = s->lbuf;
	return 0;
}

/* On a worker: the stored block is checked (every block that leaves the
 * pool is), then goes through the storage rule for the codec asked (-c:
 * its own, so it is kept): a zero block is encoded rather than made a
 * hole, as the receiver's blocklist names it. For -c and --compress,
 * where the pack's CRC-32C vouches for the stored bytes
 * (store_block_read_stored), that is the check and the block is only
 * decoded: the receiver decodes and hashes every block it takes, so a
 * second cryptographic pass here would only repeat it. Else (and always
 * for a plain stream) the block is decoded and hashed here, or was with
 * others by sjob_prep. */
static int sjob_fn(void *jv, void *ctx)
{
	struct sjob *j = jv;
	struct store_block out;
	int r;
	if (j->verified)
		r = 0;
	else if (!j->vouched)
		r = store_block_verify(j->c, j->in.data, j->in.len, j->lsize, j->hash, j->lbuf,
				       STREAM_BLOCK_MAX);
	else if (j->c.id == CODEC_OFF)
		r = j->in.len == j->lsize ? 0 : ferry_err(FERR_CORRUPT, "raw block of %zu bytes",
							  j->in.len);
	else
		r = codec_decode(j->c, j->in.data, j->in.len, j->lbuf, j->lsize);
	if (r < 0)
		return store_block_damage(j->hash, &j->loc, r);
	struct store_block_in in = {.codec = j->c, .payload = j->in.data, .psize = j->in.len,
				    .lsize = j->lsize, .hash = j->hash, .checked = 1,
				    .content = j->c.id == CODEC_OFF ? NULL : j->lbuf};
	struct store_block_bufs b = {NULL, 0, j->sbuf, j->sbuf_cap};
	if ((r = store_block_rule(&in, j->to, STORE_ZERO_ENCODE, &b, &out)) < 0)
		return r;
	memcpy(j->w.hash, j->hash, FERRY_HASH_LEN);
	j->w.lsize = j->lsize;
	j->w.codec = out.codec.id;
	j->w.level = out.codec.level;
	j->w.psize = out.psize;
	j->w.data = out.payload;
	return 0;
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
	return send_counted(s, stream_size_write(w->psize));
}

/* A block back from the workers, in stream order: its WRITE encoded. */
static int sjob_done(void *jv, int res, void *ctx)
{
	struct snd *s = ctx;
	struct sjob *j = jv;
	if (res < 0)
		return send_damage(s, j->hash, res);
	switch (j->kind) {
	case SJ_NODE:
		return put_node(s, j->ntype, &j->in);
	case SJ_BYREF:
		return put_byref(s, j->hash, j->lsize);
	case SJ_WRITE: {
		struct stream_write w = {.lsize = j->lsize, .codec = j->c.id, .level = j->c.level,
					 .psize = (uint32_t)j->in.len, .data = j->in.data};
		memcpy(w.hash, j->hash, FERRY_HASH_LEN);
		return put_write(s, &w);
	}
	default:
		return put_write(s, &j->w);
	}
}

static void sjob_release(void *jv, void *ctx)
{
	struct sjob *j = jv;
	fbuf_release(&j->in);
	free(j->lbuf);
	free(j->sbuf);
}

/* sjob_prep's view of a job: its block, unless its pack's CRC vouches
 * for it. */
static int sjob_check(void *jv, struct store_block_check *c)
{
	struct sjob *j = jv;
	if (j->kind != SJ_BLOCK || j->vouched)
		return 0;
	*c = (struct store_block_check){.c = j->c, .payload = j->in.data, .psize = j->in.len,
					.lsize = j->lsize, .hash = j->hash, .scratch = j->lbuf,
					.scratch_cap = STREAM_BLOCK_MAX, .mark = &j->verified};
	return 1;
}

/* On a worker, before it runs jobs[0..n): the blocks among them that
 * their pack's CRC does not vouch for are decoded and hashed together,
 * eight at a time; sjob_fn checks again, and names, any that fails. */
static void sjob_prep(void *const *jobs, size_t n, void *ctx)
{
	store_block_verify_jobs(jobs, n, sjob_check);
}

static const struct pipeline_ops sjob_ops = {sjob_fn, sjob_done, NULL, sjob_release, sjob_prep};

/* Encodes every block in flight: before any record that follows them. */
int send_blocks_drain(struct snd *s)
{
	return s->pl ? pipeline_drain(s->pl) : 0;
}

/* The largest block whose check and storage rule for codec c run on the
 * thread that walks rather than on a worker: a few tens of microseconds
 * of lz4 (a 16 KiB block), of gzip (2 KiB), against the hand-off to a
 * worker and back, which on two cores also preempts the walk. A stream
 * of small files is mostly such blocks (session 19, docs/notes/http.md). */
static uint32_t inline_max(struct codec_spec c)
{
	return c.id == CODEC_GZIP ? 2048 : 16384;
}

/* Reads block hash as stored and hands its check (and recompression) to
 * the pipeline, or, kept and vouched for by its pack's CRC, writes it; a
 * small one is checked (and recompressed) here. */
static int pend_submit(struct snd *s, const uint8_t *hash, uint32_t lsize)
{
	struct sjob *j;
	uint32_t ls;
	int r;
	if ((r = sjob_get(s, &j)) < 0)
		return r;
	/* a plain stream's blocks are logical: a raw copy, where the pool has
	 * one, needs no decoding */
	struct codec_spec prefer = s->flags & STREAM_F_COMPRESSED ? s->prefer
								  : (struct codec_spec){CODEC_OFF, 0};
	if ((r = store_block_read_stored(s->rd, hash, prefer, &j->c, &ls, &j->in,
					 &j->vouched)) < 0)
		return send_damage(s, hash, r);
	store_reader_last_loc(s->rd, &j->loc);
	/* a plain stream is decoded and hashed here whatever the CRC says:
	 * no receiver need check it after (a file, another tool) */
	if (!(s->flags & STREAM_F_COMPRESSED))
		j->vouched = 0;
	if (ls != lsize)
		return ferry_err(FERR_CORRUPT, "block is %u bytes, its blocklist says %u", ls, lsize);
	memcpy(j->hash, hash, FERRY_HASH_LEN);
	j->lsize = lsize;
	/* --compress: that codec; -c: as stored; a plain stream: logical */
	j->to = s->o->flags & SEND_RECOMPRESS ? s->o->codec
		: s->flags & STREAM_F_COMPRESSED ? j->c : (struct codec_spec){CODEC_OFF, 0};
	if (j->vouched && codec_equal(j->to, j->c)) {
		/* kept as stored, and vouched for by its CRC: nothing for a
		 * worker to do, so its WRITE goes out from here, or, with
		 * blocks in flight, queues behind them; when it goes out now,
		 * the slot, not submitted, is handed out again */
		if (behind_blocks(s)) {
			j->kind = SJ_WRITE;
			return pipeline_submit_done(s->pl, j);
		}
		struct stream_write w = {.lsize = lsize, .codec = j->c.id, .level = j->c.level,
					 .psize = (uint32_t)j->in.len, .data = j->in.data};
		memcpy(w.hash, hash, FERRY_HASH_LEN);
		return put_write(s, &w);
	}
	if (lsize <= inline_max(j->to)) {
		/* small: its check and rule cost less than a worker's hand-off
		 * and wake-ups, so they run here; its WRITE, done, goes out now
		 * or queues behind the blocks in flight */
		if ((r = sjob_fn(j, s)) < 0)
			return send_damage(s, hash, r);
		if (behind_blocks(s))
			return pipeline_submit_done(s->pl, j);
		return put_write(s, &j->w);
	}
	return pipeline_submit(s->pl, j);
}

/* The pipeline that checks (and decodes, or recompresses) the stored
 * blocks on every core; with one core the jobs run inline (a worker
 * would only add hand-offs). */
int send_blocks_init(struct snd *s, unsigned flags)
{
	unsigned threads = pipeline_threads(0);
	return pipeline_new(&s->pl, threads > 1 ? threads : 0, threads * 4, sizeof(struct sjob),
			    &sjob_ops, s);
}

int send_emit_block(struct snd *s, const uint8_t *hash, uint64_t len)
{
	uint8_t key[KEY_LEN];
	int r, inbase = 0;
	if (len == 0 || len > STREAM_BLOCK_MAX)
		return ferry_err(FERR_LIMIT, "a block of %llu bytes does not fit in a stream",
				 (unsigned long long)len);
	send_key(key, 'B', hash);
	if ((r = store_hset_add(s->sent, key, sizeof key, 0)) <= 0)
		return r;
	if (s->base_snap_blocks && (inbase = store_snap_blocks_has(s->base_snap_blocks, hash)) < 0)
		return inbase;
	if (s->base_blocks && (inbase = store_hset_get(s->base_blocks, key, sizeof key, NULL)) < 0)
		return inbase;
	if (!body_next(s))
		return 0;
	if (inbase) {
		s->st.byrefs++;
		if (behind_blocks(s)) {
			struct sjob *j;
			if ((r = sjob_get(s, &j)) < 0)
				return r;
			j->kind = SJ_BYREF;
			memcpy(j->hash, hash, FERRY_HASH_LEN);
			j->lsize = (uint32_t)len;
			return pipeline_submit_done(s->pl, j);
		}
		return put_byref(s, hash, (uint32_t)len);
	}
	/* (a plain dry run reads no data; -c's counts the stored sizes) */
	if (s->enc || (s->flags & STREAM_F_COMPRESSED))
		return pend_submit(s, hash, (uint32_t)len);
	struct stream_write w;
	memset(&w, 0, sizeof w);
	if ((r = block_payload(s, hash, (uint32_t)len, &w)) < 0)
		return r;
	return put_write(s, &w);
}
