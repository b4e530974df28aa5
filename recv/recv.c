/* recv/recv.c — a ferry stream → a pool; see recv.h for the rules.
 *
 * Per substream: records are decoded (the decoder checks framing, chain,
 * fields, node hashes and codec-off block hashes); each NODE is decoded
 * with the store's strict decoders and its children looked up; each WRITE
 * goes to the worker pool, which applies the receive rule, and comes back
 * in order to be written by the one pack writer. At END the new tree is
 * walked once, then the snapshot is committed. Two TEMP-table sets keep
 * memory bounded: the objects of this substream (duplicates refused,
 * all must be reached) and the objects reached by the walk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recv.h"

/* The seams between stream/ and store/, which know nothing of each other:
 * a codec id on the wire is the store's, and a token fits the store's. */
_Static_assert((int)STREAM_CODEC_OFF == (int)CODEC_OFF && (int)STREAM_CODEC_LZ4 == (int)CODEC_LZ4 &&
	       (int)STREAM_CODEC_GZIP == (int)CODEC_GZIP && (int)STREAM_CODEC_ZLE == (int)CODEC_ZLE,
	       "stream codec ids are the store's");
_Static_assert(STREAM_TOKEN_MAX + 1 <= STORE_TOKEN_MAX, "a resume token fits the store's record");

#define KEY_LEN (1 + FERRY_HASH_LEN)
#define VKEY_LEN (1 + FERRY_HASH_LEN + 8)

enum { JOB_LOGICAL, JOB_KEPT, JOB_RECOMP };

struct rjob {
	uint8_t hash[FERRY_HASH_LEN];
	uint32_t lsize, psize;
	struct codec_spec in, c;
	uint8_t *data, *s1, *s2;
	size_t cap;
	struct store_block blk;
	int kind;
};

/* A dataset a dry run pretends to have received into. */
struct dryds {
	char name[STORE_NAME_MAX + 1];
	uint64_t guid;
};

/* One DATASET of a package, copied out of the decoder. */
struct pkgds {
	char *name;
	uint64_t guid;
	struct stream_prop *props;
	size_t nprops;
	uint64_t *snap_guids;
	size_t nsnaps;
};

struct rcv;
struct sub;
static int save_partial(struct rcv *r, struct sub *s, int err);

struct rcv {
	struct store_pool *p;
	const struct recv_opts *o;
	const char *target;
	struct stream_decoder *dec;
	struct stream_source *in;
	struct store_writer *w;
	struct store_pnodes *pn;
	struct store_hset *objs;    /* this substream's objects: 'N'/'B' + hash → type/lsize */
	struct store_hset *seen;    /* walk: reached objects */
	struct store_hset *dry;     /* -n: objects of earlier substreams */
	struct workq *q;
	struct rjob *jobs;
	unsigned njobs, inflight, next;
	struct recv_stats st, tot;
	uint64_t objs_n, reached, last_seq;
	uint64_t sub_start;         /* decoder bytes before this substream's BEGIN */
	struct fbuf nb;
	int dryrun;
	/* package */
	int in_pkg;
	uint32_t pkg_flags;
	int atomic;                 /* -F: the package commits as one transaction */
	int tx;                     /* ... which is open */
	char pkg_top[STORE_NAME_MAX + 1];
	struct pkgds *pds;
	size_t npds;
	struct dryds *dds;
	size_t ndds;
	int depth;
};

/* ---- names --------------------------------------------------------------------- */

static int map_name(struct rcv *r, const char *sent, char *out, size_t n)
{
	const char *tail;
	unsigned f = r->o->flags;
	char tgt[STORE_NAME_MAX + 1];
	snprintf(tgt, sizeof tgt, "%s", r->target);
	char *at = strchr(tgt, '@');
	if (at)
		*at = 0;
	if (r->in_pkg) {
		size_t tl = strlen(r->pkg_top);
		if (strncmp(sent, r->pkg_top, tl) || (sent[tl] && sent[tl] != '/'))
			return ferry_err(FERR_CORRUPT, "'%s' is not below the package top '%s'", sent,
					 r->pkg_top);
		const char *rel = sent + tl;
		const char *top = r->pkg_top;
		if (f & RECV_DISCARD) {
			const char *sl = strchr(top, '/');
			tail = sl ? sl : "";
		} else if (f & RECV_LASTNAME) {
			const char *sl = strrchr(top, '/');
			tail = sl ? sl : "";
			if (!sl) {
				if (snprintf(out, n, "%s/%s%s", tgt, top, rel) >= (int)n)
					goto long_name;
				goto check;
			}
		} else {
			tail = "";
		}
		if (snprintf(out, n, "%s%s%s", tgt, tail, rel) >= (int)n)
			goto long_name;
		goto check;
	}
	if (f & RECV_DISCARD) {
		const char *sl = strchr(sent, '/');
		tail = sl ? sl : "";
		if (snprintf(out, n, "%s%s", tgt, tail) >= (int)n)
			goto long_name;
	} else if (f & RECV_LASTNAME) {
		const char *sl = strrchr(sent, '/');
		if (snprintf(out, n, "%s/%s", tgt, sl ? sl + 1 : sent) >= (int)n)
			goto long_name;
	} else if (snprintf(out, n, "%s", tgt) >= (int)n) {
		goto long_name;
	}
check:
	return store_name_check(out, STORE_NAME_DATASET);
long_name:
	return ferry_err(FERR_NAME, "the received name for '%s' is too long", sent);
}

/* ---- objects ------------------------------------------------------------------------ */

static void mkkey(uint8_t *key, char kind, const uint8_t *hash)
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, hash, FERRY_HASH_LEN);
}

static int hex_err(int code, const char *what, const uint8_t *hash)
{
	char hex[FERRY_HASH_HEX];
	hash_to_hex(hash, hex);
	return ferry_err(code, "%s %.16s", what, hex);
}

/* 1 with *type when node hash is in this stream, an earlier one (dry run)
 * or the pool; else 0. */
static int have_node(struct rcv *r, const uint8_t *hash, int *type)
{
	uint8_t key[KEY_LEN];
	int v = 0, rc;
	mkkey(key, 'N', hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, &v)) != 0 ||
	    (r->dry && (rc = store_hset_get(r->dry, key, sizeof key, &v)) != 0)) {
		if (rc > 0)
			*type = v;
		return rc;
	}
	return store_pnodes_has_node(r->pn, hash, type);
}

static int have_block(struct rcv *r, const uint8_t *hash, uint32_t *lsize)
{
	uint8_t key[KEY_LEN];
	int v = 0, rc;
	mkkey(key, 'B', hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, &v)) != 0 ||
	    (r->dry && (rc = store_hset_get(r->dry, key, sizeof key, &v)) != 0)) {
		if (rc > 0)
			*lsize = (uint32_t)v;
		return rc;
	}
	return store_pnodes_has_block(r->pn, hash, lsize);
}

static int need_node(struct rcv *r, const uint8_t *hash, int type)
{
	int t = 0, rc = have_node(r, hash, &t);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return hex_err(FERR_CORRUPT, "dangling reference to node", hash);
	if (t != type)
		return hex_err(FERR_CORRUPT, "reference of the wrong type to node", hash);
	return 0;
}

static int need_block(struct rcv *r, const uint8_t *hash, uint64_t len)
{
	uint32_t ls = 0;
	int rc = have_block(r, hash, &ls);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return hex_err(FERR_CORRUPT, "dangling reference to block", hash);
	if (ls != len)
		return hex_err(FERR_CORRUPT, "reference with the wrong size to block", hash);
	return 0;
}

/* Parses a directory index node (subtype byte first) and calls need_node
 * on each chunk. */
static int check_dir_index(struct rcv *r, const uint8_t *b, size_t len)
{
	int rc;
	if (len < 5 || b[0] != NODE_EXT_DIR_INDEX)
		return ferry_err(FERR_CORRUPT, "extension node of unknown kind");
	uint32_t nk = get_le32(b + 1);
	if (nk < 2 || nk > NODE_INDEX_MAX)
		return ferry_err(FERR_CORRUPT, "directory index has %u children", nk);
	size_t pos = 5;
	for (uint32_t i = 0; i < nk; i++) {
		if (len - pos < 6)
			return ferry_err(FERR_CORRUPT, "directory index is truncated");
		uint32_t cnt = get_le32(b + pos);
		size_t fl = get_le16(b + pos + 4);
		pos += 6;
		if (cnt == 0 || fl == 0 || fl > NODE_NAME_MAX || len - pos < fl + FERRY_HASH_LEN)
			return ferry_err(FERR_CORRUPT, "directory index child %u is invalid", i);
		const uint8_t *nm = b + pos;
		if (memchr(nm, '/', fl) || memchr(nm, 0, fl) || (fl == 1 && nm[0] == '.') ||
		    (fl == 2 && nm[0] == '.' && nm[1] == '.'))
			return ferry_err(FERR_CORRUPT, "directory index child %u has a bad name", i);
		pos += fl;
		if ((rc = need_node(r, b + pos, NODE_DIR)) < 0)
			return rc;
		pos += FERRY_HASH_LEN;
	}
	if (pos != len)
		return ferry_err(FERR_CORRUPT, "directory index has trailing bytes");
	return 0;
}

/* Decodes a node strictly and checks that everything it names is here. */
static int check_node(struct rcv *r, const struct stream_node *nd, int is_root)
{
	struct node_dir d;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	size_t n = 0;
	int rc = 0, kind;
	memset(&d, 0, sizeof d);
	switch (nd->type) {
	case NODE_DIR:
		if ((rc = node_dir_decode(nd->data, nd->len, &d)) < 0)
			break;
		for (size_t i = 0; i < d.n && rc == 0; i++)
			if (d.ents[i].child_type)
				rc = need_node(r, d.ents[i].child, d.ents[i].child_type);
		break;
	case NODE_BLOCKLIST:
		if ((rc = node_bl_decode(nd->data, nd->len, &x, &n)) < 0)
			break;
		for (size_t i = 0; i < n && rc == 0; i++)
			if (!x[i].hole)
				rc = need_block(r, x[i].hash, x[i].len);
		break;
	case NODE_BLOCKLIST_INDEX:
		if ((rc = node_bli_decode(nd->data, nd->len, &k, &n)) < 0)
			break;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = need_node(r, k[i].hash, k[i].type);
		break;
	case NODE_EXT:
		if (nd->len && nd->data[0] == NODE_EXT_ROOT) {
			if (!is_root) {
				rc = ferry_err(FERR_CORRUPT, "a root node inside the tree");
				break;
			}
			if ((rc = node_root_decode(nd->data, nd->len, &kind, &e, &xa)) < 0)
				break;
			if (e.child_type)
				rc = need_node(r, e.child, e.child_type);
			break;
		}
		rc = check_dir_index(r, nd->data, nd->len);
		break;
	default:
		rc = ferry_err(FERR_CORRUPT, "node of unknown type %u", nd->type);
	}
	node_dir_release(&d);
	free(x);
	free(k);
	free(xa);
	return rc;
}

/* ---- the receive rule (worker side) ----------------------------------------------------- */

static int zero_block_fix(struct rjob *j, const uint8_t *src, uint8_t *dst)
{
	/* The node names this block, so it is stored even when all zero (a
	 * capture would have made it a hole): compressed with C. */
	size_t ps = 0;
	int rc = codec_encode(j->c, src, j->lsize, dst, j->cap, &ps);
	if (rc == -FERR_NOSPACE_DST || (rc == 0 && ps > j->lsize)) {
		ferry_err_clear();
		j->blk.codec = (struct codec_spec){CODEC_OFF, 0};
		j->blk.form = BLOCK_RAW;
		j->blk.psize = j->lsize;
		j->blk.payload = src;
		return 0;
	}
	if (rc < 0)
		return rc;
	j->blk.codec = j->c;
	j->blk.form = BLOCK_COMPRESSED;
	j->blk.psize = (uint32_t)ps;
	j->blk.payload = dst;
	return 0;
}

static int job_run(void *job, void *ctx)
{
	struct rjob *j = job;
	struct store_block tmp;
	int rc;
	if (j->in.id == CODEC_OFF) {
		j->kind = JOB_LOGICAL;
		if ((rc = store_block_prepare(j->c, j->data, j->lsize, j->s1, j->cap, &j->blk)) < 0)
			return rc;
		if (memcmp(j->blk.hash, j->hash, FERRY_HASH_LEN) != 0)
			return ferry_err(FERR_CORRUPT, "block content does not match its hash");
		if (j->blk.form == BLOCK_HOLE)
			return zero_block_fix(j, j->data, j->s1);
		return 0;
	}
	if (codec_equal(j->in, j->c)) {
		j->kind = JOB_KEPT;
		return store_block_prepare_encoded(j->c, j->data, j->psize, j->lsize, j->hash, j->s1,
						   j->cap, &j->blk);
	}
	j->kind = JOB_RECOMP;
	if ((rc = store_block_prepare_encoded(j->in, j->data, j->psize, j->lsize, j->hash, j->s1,
					      j->cap, &tmp)) < 0)
		return rc;
	/* s1 now holds the block's content, checked against its hash */
	if ((rc = store_block_prepare_known(j->c, j->s1, j->lsize, j->hash, j->s2, j->cap,
					    &j->blk)) < 0)
		return rc;
	if (j->blk.form == BLOCK_HOLE)
		return zero_block_fix(j, j->s1, j->s2);
	return 0;
}

/* ---- ordered commit (main thread) --------------------------------------------------------- */

static int collect_one(struct rcv *r)
{
	void *job;
	int res, rc, stored = 0;
	if ((rc = workq_collect(r->q, &job, &res)) <= 0)
		return rc < 0 ? rc : ferry_err(FERR_INVAL, "no block pending");
	r->inflight--;
	struct rjob *j = job;
	if (res < 0)
		return res;
	if (!r->dryrun && (rc = store_writer_put(r->w, &j->blk, &stored)) < 0)
		return rc;
	switch (j->kind) {
	case JOB_LOGICAL:
		r->st.blocks_logical++;
		r->st.lbytes_logical += j->lsize;
		break;
	case JOB_KEPT:
		r->st.blocks_kept++;
		r->st.lbytes_kept += j->lsize;
		break;
	default:
		r->st.blocks_recompressed++;
		r->st.lbytes_recompressed += j->lsize;
	}
	if (stored)
		r->st.pbytes_written += j->blk.psize;
	return 0;
}

static int drain(struct rcv *r)
{
	int rc;
	while (r->inflight)
		if ((rc = collect_one(r)) < 0)
			return rc;
	return 0;
}

static int jobs_init(struct rcv *r)
{
	unsigned threads = r->o->threads;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (!threads)
		threads = ncpu > 0 ? (unsigned)ncpu : 1;
	r->njobs = threads * 4;
	if (!(r->jobs = calloc(r->njobs, sizeof *r->jobs)))
		return ferry_err(FERR_NOMEM, "receiving");
	/* job buffers grow on demand (submit_write), up to one block's bound */
	return workq_new(&r->q, threads, r->njobs, job_run, r);
}

static void jobs_free(struct rcv *r)
{
	workq_free(r->q);
	r->q = NULL;
	for (unsigned i = 0; r->jobs && i < r->njobs; i++) {
		free(r->jobs[i].data);
		free(r->jobs[i].s1);
		free(r->jobs[i].s2);
	}
	free(r->jobs);
	r->jobs = NULL;
}

static int submit_write(struct rcv *r, const struct stream_write *w, struct codec_spec c)
{
	int rc;
	if (r->inflight == r->njobs && (rc = collect_one(r)) < 0)
		return rc;
	struct rjob *j = &r->jobs[r->next];
	r->next = (r->next + 1) % r->njobs;
	memcpy(j->hash, w->hash, FERRY_HASH_LEN);
	j->lsize = w->lsize;
	j->psize = w->psize;
	j->in = (struct codec_spec){w->codec, w->level};
	j->c = c;
	if (w->psize > STREAM_BLOCK_MAX || w->lsize > STREAM_BLOCK_MAX || w->psize > w->lsize)
		return ferry_err(FERR_LIMIT, "block of %u bytes", w->lsize);
	size_t need = codec_bound(w->lsize);
	if (need > j->cap) {
		/* room for the block and whatever an encoder writes for it */
		uint8_t *d = realloc(j->data, need), *a, *b;
		if (d)
			j->data = d;
		a = d ? realloc(j->s1, need) : NULL;
		if (a)
			j->s1 = a;
		b = a ? realloc(j->s2, need) : NULL;
		if (!b)
			return ferry_err(FERR_NOMEM, "receiving a block of %u bytes", w->lsize);
		j->s2 = b;
		j->cap = need;
	}
	memcpy(j->data, w->data, w->psize);
	if ((rc = workq_submit(r->q, j)) < 0)
		return rc;
	r->inflight++;
	return 0;
}

/* ---- the walk at END ------------------------------------------------------------------------ */

static int reach(struct rcv *r, char kind, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	int rc;
	mkkey(key, kind, hash);
	if ((rc = store_hset_add(r->seen, key, sizeof key, 0)) <= 0)
		return rc;
	if ((rc = store_hset_get(r->objs, key, sizeof key, NULL)) < 0)
		return rc;
	r->reached += (uint64_t)rc;
	return 0;
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
	int rc, v = 0, in;
	mkkey(key, 'B', hash);
	if ((rc = store_hset_get(r->seen, key, sizeof key, &v)) < 0)
		return rc;
	if (rc == 1)
		return (uint64_t)v == len ? 0 : hex_err(FERR_CORRUPT, "block referenced with two sizes", hash);
	/* blocks of this stream were referenced as they came; others must be
	 * in the pool (or, dry running, in an earlier substream) */
	if ((in = store_hset_get(r->objs, key, sizeof key, &v)) < 0)
		return in;
	if (in) {
		ls = (uint32_t)v;
		r->reached++;
	} else if ((rc = have_block(r, hash, &ls)) <= 0) {
		return rc < 0 ? rc : hex_err(FERR_CORRUPT, "dangling reference to block", hash);
	}
	if (ls != len)
		return hex_err(FERR_CORRUPT, "reference with the wrong size to block", hash);
	if ((rc = store_hset_add(r->seen, key, sizeof key, (int)len)) < 0)
		return rc;
	if (!in && !r->dryrun && (rc = store_writer_ref(r->w, hash)) < 0)
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
	fbuf_init(&b, NODE_MAX);
	if ((rc = walk_rd(r, hash, &t, &b)) < 0)
		goto out;
	if (t != type) {
		rc = hex_err(FERR_CORRUPT, "node of the wrong type:", hash);
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
		for (size_t i = 0; i < n; i++)
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
		for (size_t i = 0; i < n; i++)
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

/* The tree walk at END (node_tree_walk): a directory reached before is
 * not walked again ('D' key in seen, added when it is left). */
static int wd_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct rcv *r = arg;
	uint8_t vkey[KEY_LEN];
	int rc;
	mkkey(vkey, 'D', hash);
	if ((rc = store_hset_get(r->seen, vkey, sizeof vkey, NULL)) != 0)
		return rc;
	return 0;
}

static int wd_entry(void *arg, const struct node_walk_entry *we)
{
	struct rcv *r = arg;
	const struct node_entry *e = we->e;
	if (e->ftype == NODE_F_REG && e->child_type)
		return walk_bl(r, e->child_type, e->child, e->size, 0);
	return 0;
}

static int wd_leave(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct rcv *r = arg;
	uint8_t vkey[KEY_LEN];
	mkkey(vkey, 'D', hash);
	int rc = store_hset_add(r->seen, vkey, sizeof vkey, 0);
	return rc < 0 ? rc : 0;
}

static int walk_dir(struct rcv *r, int type, const uint8_t *hash)
{
	static const struct node_walk_ops ops = {wd_enter, wd_entry, wd_leave};
	return node_tree_walk(walk_rd, r, type, hash, &ops, r);
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

/* ---- properties ------------------------------------------------------------------------------ */

static int excluded(struct rcv *r, const char *name)
{
	/* storage policy and the sender's source path are the receiver's own */
	if (!strcmp(name, "compression") || !strcmp(name, "compress"))
		return !(r->o->flags & RECV_KEEP_SOURCE_COMPRESSION);
	if (!strcmp(name, "recordsize") || !strcmp(name, "source") || !strcmp(name, "volsize") ||
	    !strcmp(name, "volblocksize"))
		return 1;
	for (size_t i = 0; i < r->o->nexclude; i++)
		if (!strcmp(r->o->exclude[i], name))
			return 1;
	for (size_t i = 0; i < r->o->nset; i++)
		if (!strcmp(r->o->set[i].name, name))
			return 1;
	return 0;
}

static int apply_props(struct rcv *r, const struct store_ds *ds, const struct stream_prop *pv,
		       size_t n)
{
	int rc;
	for (size_t i = 0; i < n; i++) {
		if (excluded(r, pv[i].name))
			continue;
		struct store_propset ps = {pv[i].name, pv[i].value};
		if ((rc = store_prop_set(r->p, ds, &ps, 1, STORE_SRC_RECEIVED)) < 0) {
			/* a property this pool does not know or accept is skipped;
			 * anything else (the disk, the catalogue) fails the receive */
			if (rc != -FERR_PROP && rc != -FERR_NAME)
				return rc;
			ferry_err_clear();
			r->st.props_skipped++;
			continue;
		}
		r->st.props_received++;
	}
	if (r->o->nset && (rc = store_prop_set(r->p, ds, r->o->set, r->o->nset, STORE_SRC_LOCAL)) < 0)
		return rc;
	return 0;
}

/* The compression blocks of ds (or of a new dataset named name) get. */
static int target_codec(struct rcv *r, const char *name, const struct store_ds *ds,
			const struct stream_prop *pv, size_t n, struct codec_spec *c)
{
	for (size_t i = 0; i < r->o->nset; i++)
		if (!strcmp(r->o->set[i].name, "compression") || !strcmp(r->o->set[i].name, "compress"))
			return codec_parse(r->o->set[i].value, c);
	if (r->o->flags & RECV_KEEP_SOURCE_COMPRESSION)
		for (size_t i = 0; i < n; i++)
			if (!strcmp(pv[i].name, "compression"))
				return codec_parse(pv[i].value, c);
	if (ds)
		return store_ds_compression(r->p, ds, c);
	/* a new dataset inherits from its nearest existing ancestor */
	char anc[STORE_NAME_MAX + 1];
	struct store_ds a;
	snprintf(anc, sizeof anc, "%s", name);
	for (;;) {
		char *sl = strrchr(anc, '/');
		if (!sl)
			return ferry_err(FERR_NOENT, "no ancestor of '%s' exists", name);
		*sl = 0;
		int rc = store_ds_lookup(r->p, anc, &a);
		if (rc == 0)
			return store_ds_compression(r->p, &a, c);
		if (rc != -FERR_NOENT)
			return rc;
		ferry_err_clear();
	}
}

/* ---- one substream ---------------------------------------------------------------------------- */

struct snaps {
	struct store_snap *v;
	size_t n, cap;
};

static int snaps_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct snaps *l = arg;
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (grown < 0)
		return grown;
	l->v[l->n++] = *s;
	return 0;
}

static struct dryds *dry_find(struct rcv *r, const char *name)
{
	for (size_t i = 0; i < r->ndds; i++)
		if (!strcmp(r->dds[i].name, name))
			return &r->dds[i];
	return NULL;
}

static int dry_note(struct rcv *r, const char *name, uint64_t guid)
{
	struct dryds *d = dry_find(r, name);
	if (!d) {
		struct dryds *nv = realloc(r->dds, (r->ndds + 1) * sizeof *nv);
		if (!nv)
			return ferry_err(FERR_NOMEM, "receiving");
		r->dds = nv;
		d = &r->dds[r->ndds++];
		snprintf(d->name, sizeof d->name, "%s", name);
	}
	d->guid = guid;
	return 0;
}

/* recv -F of a package: the first commit opens the transaction that the
 * whole package, its rollbacks and its destructions commit in, at its end
 * (recv_run). Opened late so the catalogue's write lock is not held while
 * the first substream arrives. */
static int tx_open(struct rcv *r)
{
	int rc;
	if (!r->atomic || r->tx)
		return 0;
	if ((rc = store_tx_begin(r->p)) < 0)
		return rc;
	r->tx = 1;
	return 0;
}

/* One substream being received: what its BEGIN asks for, checked against
 * the pool before its body is read. */
struct sub {
	const struct stream_begin *b;
	const struct stream_prop *props;
	size_t nprops;
	char dsname[STORE_NAME_MAX + 1], snapname[STORE_NAME_MAX + 1];
	char full[2 * STORE_NAME_MAX + 2];
	struct store_ds ds;
	int exists;                 /* ds is an existing dataset */
	struct snaps sl;            /* its snapshots, oldest first */
	ssize_t rollback_to;        /* -F: roll back to sl.v[rollback_to] first */
	int destroy_all;            /* -F of a full stream: sl goes */
	int partial;                /* this resumes a partial receive */
	struct codec_spec c;        /* what its blocks are stored with */
};

/* Names, the dataset's snapshots against the stream's guids, the base of
 * an incremental, and what -F must undo: everything that can refuse the
 * substream before a byte of its body is read. */
static int sub_plan(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc;
	if ((rc = map_name(r, b->dataset, s->dsname, sizeof s->dsname)) < 0)
		return rc;
	const char *at = strchr(r->target, '@');
	snprintf(s->snapname, sizeof s->snapname, "%s", at && !r->in_pkg ? at + 1 : b->snapshot);
	if (snprintf(s->full, sizeof s->full, "%s@%s", s->dsname, s->snapname) > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "'%s' is too long", s->full);
	if ((rc = store_name_check(s->full, STORE_NAME_SNAPSHOT)) < 0)
		return rc;
	rc = store_ds_lookup(r->p, s->dsname, &s->ds);
	if (rc == 0)
		s->exists = 1;
	else if (rc != -FERR_NOENT)
		return rc;
	else
		ferry_err_clear();
	struct dryds *dd = r->dryrun ? dry_find(r, s->dsname) : NULL;
	if (s->exists) {
		int want = b->ds_type == STREAM_DS_VOLUME ? STORE_DS_VOLUME : STORE_DS_FILESYSTEM;
		if (s->ds.type != want)
			return ferry_err(FERR_INVAL, "'%s' is a %s, the stream brings a %s", s->dsname,
					 store_ds_type_name(s->ds.type), store_ds_type_name(want));
		if ((rc = store_snap_iter(r->p, &s->ds, snaps_cb, &s->sl)) < 0)
			return rc;
		for (size_t i = 0; i < s->sl.n; i++) {
			if (s->sl.v[i].guid == b->to_guid)
				return ferry_err(FERR_EXISTS, "'%s' already has this snapshot (as '%s')",
						 s->dsname, s->sl.v[i].name);
			if (!strcmp(s->sl.v[i].snapname, s->snapname))
				return ferry_err(FERR_EXISTS, "snapshot '%s' already exists", s->full);
		}
	}
	if (b->from_guid) {
		if (dd) {
			if (dd->guid != b->from_guid)
				return ferry_err(FERR_NOENT, "'%s' would not have the stream's base",
						 s->dsname);
		} else if (!s->exists) {
			return ferry_err(FERR_NOENT, "'%s' does not exist: an incremental stream needs "
					 "its base snapshot", s->dsname);
		} else {
			ssize_t bi = -1;
			for (size_t i = 0; i < s->sl.n; i++)
				if (s->sl.v[i].guid == b->from_guid)
					bi = (ssize_t)i;
			if (bi < 0)
				return ferry_err(FERR_NOENT, "'%s' does not have the stream's base snapshot "
						 "(guid %llu)", s->dsname,
						 (unsigned long long)b->from_guid);
			if ((size_t)bi != s->sl.n - 1) {
				if (!(r->o->flags & RECV_FORCE))
					return ferry_err(FERR_BUSY, "the base '%s' is not the newest snapshot "
							 "of '%s' (use -F to roll back)",
							 s->sl.v[bi].name, s->dsname);
				s->rollback_to = bi;
			}
		}
	} else if (s->exists && s->sl.n && !dd) {
		if (!(r->o->flags & RECV_FORCE))
			return ferry_err(FERR_EXISTS, "'%s' exists and has snapshots: a full stream "
					 "needs a new dataset (or -F to replace them)", s->dsname);
		s->destroy_all = 1;
	} else if (dd) {
		return ferry_err(FERR_EXISTS, "'%s' would receive two full streams", s->dsname);
	}
	return target_codec(r, s->dsname, s->exists ? &s->ds : NULL, s->props, s->nprops, &s->c);
}

/* A partial receive of the dataset: only the stream that resumes it may
 * come in, and then what arrived before is taken up again. */
static int sub_resume(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	struct store_partial pt;
	int rc = r->dryrun ? -FERR_NOENT : store_partial_get(r->p, s->dsname, &pt);
	if (rc == -FERR_NOENT) {
		ferry_err_clear();
		if (b->resume_pos)
			return ferry_err(FERR_NOENT, "'%s' has no partial receive for this resumed "
					 "stream", s->dsname);
		return 0;
	}
	if (rc < 0)
		return rc;
	if (!b->resume_pos)
		return ferry_err(FERR_BUSY, "'%s' holds a partial receive: resume it (ferry send -t "
				 "TOKEN, see receive_resume_token) or discard it (recv -A)", s->dsname);
	if (pt.to_guid != b->to_guid || pt.from_guid != b->from_guid || pt.pos != b->resume_pos)
		return ferry_err(FERR_INVAL, "the stream does not resume the partial receive of '%s' "
				 "(it is at %llu)", s->dsname, (unsigned long long)pt.pos);
	if ((rc = store_partial_load(r->p, s->dsname, r->objs)) < 0 ||
	    (rc = store_hset_count(r->objs, &r->objs_n)) < 0)
		return rc;
	s->partial = 1;
	return 0;
}

static int body_node(struct rcv *r, struct sub *s, const struct stream_record *rec)
{
	uint8_t key[KEY_LEN], h[FERRY_HASH_LEN];
	int rc;
	mkkey(key, 'N', rec->node.hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, NULL)) != 0)
		return rc < 0 ? rc : hex_err(FERR_CORRUPT, "duplicate node", rec->node.hash);
	int is_root = !memcmp(rec->node.hash, s->b->root_hash, FERRY_HASH_LEN) &&
		      rec->node.type == s->b->root_type;
	if ((rc = check_node(r, &rec->node, is_root)) < 0 ||
	    (rc = store_writer_put_node(r->w, rec->node.type, rec->node.data, rec->node.len, h)) < 0 ||
	    (rc = store_hset_add(r->objs, key, sizeof key, rec->node.type)) < 0 ||
	    (r->dry && (rc = store_hset_add(r->dry, key, sizeof key, rec->node.type)) < 0))
		return rc;
	r->objs_n++;
	r->st.nodes++;
	r->last_seq = rec->seq;
	return 0;
}

static int body_block(struct rcv *r, struct sub *s, const struct stream_record *rec)
{
	const uint8_t *h = rec->type == STREAM_WRITE ? rec->write.hash : rec->byref.hash;
	uint32_t ls = rec->type == STREAM_WRITE ? rec->write.lsize : rec->byref.lsize;
	uint8_t key[KEY_LEN];
	int rc;
	mkkey(key, 'B', h);
	if ((rc = store_hset_get(r->objs, key, sizeof key, NULL)) != 0)
		return rc < 0 ? rc : hex_err(FERR_CORRUPT, "duplicate block", h);
	if (rec->type == STREAM_WRITE_BYREF) {
		uint32_t have = 0;
		if ((rc = store_pnodes_has_block(r->pn, h, &have)) < 0)
			return rc;
		if (!rc && r->dry) {
			int v = 0;
			if ((rc = store_hset_get(r->dry, key, sizeof key, &v)) < 0)
				return rc;
			have = (uint32_t)v;
		}
		if (!rc)
			return hex_err(FERR_CORRUPT, "WRITE_BYREF of a block the pool does not have:", h);
		if (have != ls)
			return hex_err(FERR_CORRUPT, "WRITE_BYREF with the wrong size for block", h);
		r->st.blocks_byref++;
		if (!r->dryrun && (rc = store_writer_ref(r->w, h)) < 0)
			return rc;
	} else {
		r->st.pbytes_in += rec->write.psize;
		if (!r->dryrun && (rc = store_writer_has(r->w, h, s->c)) < 0)
			return rc;
		if (rc == 1) {
			r->st.blocks_present++;
			r->st.lbytes_present += ls;
			if ((rc = store_writer_ref(r->w, h)) < 0)
				return rc;
		} else if ((rc = submit_write(r, &rec->write, s->c)) < 0) {
			return rc;
		}
	}
	if ((rc = store_hset_add(r->objs, key, sizeof key, (int)ls)) < 0 ||
	    (r->dry && (rc = store_hset_add(r->dry, key, sizeof key, (int)ls)) < 0))
		return rc;
	r->objs_n++;
	r->last_seq = rec->seq;
	return 0;
}

/* The records between BEGIN and END. */
static int sub_body(struct rcv *r, struct sub *s)
{
	struct stream_record rec;
	int rc;
	for (;;) {
		rc = stream_decoder_pull(r->dec, r->in, &rec);
		if (rc == 0)
			rc = ferry_err(FERR_TRUNCATED, "the stream ended before END");
		if (rc < 0)
			return rc;
		if (rec.type == STREAM_END)
			return 0;
		if (rec.type == STREAM_NODE)
			rc = body_node(r, s, &rec);
		else if (rec.type == STREAM_WRITE || rec.type == STREAM_WRITE_BYREF)
			rc = body_block(r, s, &rec);
		else
			rc = ferry_err(FERR_CORRUPT, "unexpected %s record in a snapshot's body",
				       stream_type_name(rec.type));
		if (rc < 0)
			return rc;
	}
}

/* After END: every block stored, the whole new tree walked, and every
 * object of the stream reached by that walk. */
static int sub_verify(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc;
	if ((rc = drain(r)) < 0)
		return rc;
	if (b->from_guid && !r->objs_n) {
		/* nothing changed: the root is the base's, already in the pool */
		int t = 0;
		if ((rc = store_pnodes_has_node(r->pn, b->root_hash, &t)) < 0)
			return rc;
		if (!rc || t != NODE_EXT)
			return ferry_err(FERR_CORRUPT, "an empty incremental whose root is not in the "
					 "pool");
	}
	if ((rc = walk_tree(r, b)) < 0)
		return rc;
	if (r->reached != r->objs_n)
		return ferry_err(FERR_CORRUPT, "the stream carries %llu objects the snapshot does "
				 "not use", (unsigned long long)(r->objs_n - r->reached));
	return 0;
}

/* volsize (and volblocksize) of a new volume: the sender's, else the
 * image rounded up to volblocksize (the sender's, else the default 16K). */
static int new_volume_props(struct rcv *r, const struct sub *s, char *vs, size_t vsn,
			    const char **vbs_s)
{
	struct fbuf rb;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	uint64_t vbs = 16384, vsz = 0;
	int t, kind, rc;
	*vbs_s = NULL;
	fbuf_init(&rb, NODE_MAX);
	rc = store_pnodes_read(r->pn, s->b->root_hash, &t, &rb);
	if (rc == 0)
		rc = node_root_decode(rb.data, rb.len, &kind, &e, &xa);
	for (size_t i = 0; rc == 0 && i < s->nprops; i++) {
		if (!strcmp(s->props[i].name, "volblocksize")) {
			*vbs_s = s->props[i].value;
			vbs = strtoull(s->props[i].value, NULL, 10);
		} else if (!strcmp(s->props[i].name, "volsize")) {
			vsz = strtoull(s->props[i].value, NULL, 10);
		}
	}
	if (rc == 0) {
		if (vbs == 0 || vbs > ((uint64_t)1 << 20)) {
			vbs = 16384;
			*vbs_s = NULL;
		}
		if (vsz < e.size || vsz % vbs)
			vsz = e.size / vbs * vbs + (e.size % vbs ? vbs : 0);
		if (vsz == 0)
			vsz = vbs;
		snprintf(vs, vsn, "%llu", (unsigned long long)vsz);
	}
	free(xa);
	fbuf_release(&rb);
	return rc;
}

/* Creates the dataset a stream brings, with the -o properties (and a
 * volume's size), inside the caller's transaction. */
static int sub_create(struct rcv *r, struct sub *s, int type, int with_volsize)
{
	struct store_propset *cp = NULL;
	const char *vbs_s = NULL;
	char vs[32];
	size_t ncp = 0;
	int rc;
	if (!(cp = calloc(r->o->nset + 2, sizeof *cp)))
		return ferry_err(FERR_NOMEM, "creating '%s'", s->dsname);
	for (size_t i = 0; i < r->o->nset; i++)
		cp[ncp++] = r->o->set[i];
	if (type == STORE_DS_VOLUME && with_volsize) {
		if ((rc = new_volume_props(r, s, vs, sizeof vs, &vbs_s)) < 0)
			goto out;
		cp[ncp++] = (struct store_propset){"volsize", vs};
		if (vbs_s)
			cp[ncp++] = (struct store_propset){"volblocksize", vbs_s};
	}
	if ((rc = store_ds_create(r->p, s->dsname, type, 1, cp, ncp)) < 0 ||
	    (rc = store_ds_lookup(r->p, s->dsname, &s->ds)) < 0)
		goto out;
out:
	free(cp);
	return rc;
}

/* Commits a verified substream: the dataset when it is new, the rollback
 * or destruction -F asked for, the snapshot, the end of the partial
 * receive it resumes and its properties, in one catalogue transaction
 * (the package's, with an atomic -F package), so a crash at any point
 * leaves all of it or none. */
static int sub_commit(struct rcv *r, struct sub *s)
{
	const struct stream_begin *b = s->b;
	int rc, own = !r->atomic;
	store_writer_pause(r->w);
	if ((rc = own ? store_tx_begin(r->p) : tx_open(r)) < 0)
		return rc;
	if (!s->exists) {
		int type = b->ds_type == STREAM_DS_VOLUME ? STORE_DS_VOLUME : STORE_DS_FILESYSTEM;
		if ((rc = sub_create(r, s, type, 1)) < 0)
			goto out;
	}
	if (s->rollback_to >= 0 &&
	    (rc = store_snap_rollback(r->p, &s->sl.v[s->rollback_to], 1)) < 0)
		goto out;
	if (s->destroy_all && (rc = store_snap_destroy(r->p, s->sl.v, s->sl.n)) < 0)
		goto out;
	if ((rc = store_writer_commit_snapshot(r->w, &s->ds, s->snapname, b->root_hash, b->to_guid,
					       b->creation_ns, NULL)) < 0)
		goto out;
	if (s->partial && (rc = store_partial_drop(r->p, s->dsname)) < 0)
		goto out;
	rc = apply_props(r, &s->ds, s->props, s->nprops);
out:
	if (!own)
		return rc; /* the package's transaction: recv_run ends it */
	if (rc < 0) {
		store_tx_rollback(r->p);
		return rc;
	}
	return store_tx_commit(r->p);
}

/* Reads one substream after its BEGIN (copied in b) and commits it. */
static int recv_sub(struct rcv *r, const struct stream_begin *b, const struct stream_prop *props,
		    size_t nprops)
{
	struct sub s;
	int rc, in_body = 0;
	uint64_t t0 = ferry_now_ns(), bytes0 = r->sub_start;
	memset(&s, 0, sizeof s);
	s.b = b;
	s.props = props;
	s.nprops = nprops;
	s.rollback_to = -1;
	memset(&r->st, 0, sizeof r->st);
	r->objs_n = r->reached = r->last_seq = 0;
	if ((rc = sub_plan(r, &s)) < 0)
		goto out;
	if ((rc = store_hset_new(r->p, 0, &r->objs)) < 0 ||
	    (rc = store_hset_new(r->p, 0, &r->seen)) < 0 || (rc = sub_resume(r, &s)) < 0)
		goto out;
	in_body = 1;
	if ((rc = sub_body(r, &s)) < 0)
		goto out;
	in_body = 0;
	if ((rc = sub_verify(r, &s)) < 0)
		goto out;
	r->st.bytes = stream_decoder_bytes(r->dec) - bytes0;
	if (r->dryrun)
		rc = dry_note(r, s.dsname, b->to_guid);
	else
		rc = sub_commit(r, &s);
	if (rc < 0)
		goto out;
	r->st.snapshots = 1;
	r->st.ns = ferry_now_ns() - t0;
	if (r->o->done)
		r->o->done(r->o->arg, s.full, &r->st);
out:
	if (rc < 0 && in_body && (r->o->flags & RECV_RESUMABLE) && !r->dryrun)
		rc = save_partial(r, &s, rc);
	if (rc < 0 && r->inflight) {
		/* collect what is still running before the buffers go */
		while (r->inflight) {
			void *job;
			int res;
			if (workq_collect(r->q, &job, &res) <= 0)
				break;
			r->inflight--;
		}
	}
	store_hset_free(r->objs);
	store_hset_free(r->seen);
	r->objs = r->seen = NULL;
	free(s.sl.v);
	/* totals */
	uint64_t *a = &r->tot.snapshots, *st = &r->st.snapshots;
	for (size_t i = 0; i < sizeof r->st / sizeof(uint64_t); i++)
		a[i] += st[i];
	return rc;
}

/* recv -s: after err in the body, keeps what arrived whole (every record
 * before the failure passed the chain) so `send -t` can continue: the
 * dataset made for it (a new one) and the partial state commit in one
 * transaction. Returns err, with a detail that says how to resume. */
static int save_partial(struct rcv *r, struct sub *s, int err)
{
	const struct stream_begin *b = s->b;
	char msg[512];
	struct store_partial pt;
	struct stream_token t;
	int rc, tx = 0;
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	/* finish the blocks in flight; a block that fails its own check ends it */
	while (r->inflight)
		if (collect_one(r) < 0)
			return ferry_err(-err, "%s", msg);
	if (!r->last_seq)
		return ferry_err(-err, "%s", msg);
	memset(&pt, 0, sizeof pt);
	memset(&t, 0, sizeof t);
	t.flags = b->flags & (STREAM_F_COMPRESSED | STREAM_F_PROPS);
	t.to_guid = b->to_guid;
	t.from_guid = b->from_guid;
	t.resume_pos = r->last_seq;
	snprintf(t.dataset, sizeof t.dataset, "%s", b->dataset);
	snprintf(t.snapshot, sizeof t.snapshot, "%s", b->snapshot);
	if ((rc = stream_token_encode(&t, pt.token, sizeof pt.token)) < 0)
		goto fail;
	pt.to_guid = b->to_guid;
	pt.from_guid = b->from_guid;
	pt.pos = r->last_seq;
	if (!s->exists && b->ds_type == STREAM_DS_VOLUME) {
		rc = ferry_err(FERR_UNSUPPORTED, "a partial receive of a new volume");
		goto fail;
	}
	store_writer_pause(r->w);
	if ((rc = store_tx_begin(r->p)) < 0)
		goto fail;
	tx = 1;
	if (!s->exists) {
		/* the partial state belongs to a dataset, as in zfs */
		if ((rc = sub_create(r, s, STORE_DS_FILESYSTEM, 0)) < 0)
			goto fail;
		pt.created = 1;
	} else {
		struct store_partial old;
		rc = store_partial_get(r->p, s->dsname, &old);
		if (rc == 0)
			pt.created = old.created;
		else if (rc != -FERR_NOENT)
			goto fail;
		ferry_err_clear();
	}
	if ((rc = store_partial_save(r->w, r->p, s->dsname, r->objs, &pt)) < 0)
		goto fail;
	tx = 0;
	if ((rc = store_tx_commit(r->p)) < 0)
		goto fail;
	return ferry_err(-err, "%s; the %llu records received are kept: resume with "
			 "'ferry send -t TOKEN' (ferry get receive_resume_token %s)",
			 msg, (unsigned long long)r->last_seq, s->dsname);
fail:
	if (tx)
		store_tx_rollback(r->p);
	snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
		 " (and the partial state could not be kept: %s)", ferry_errmsg(rc));
	return ferry_err(-err, "%s", msg);
}

/* ---- packages ------------------------------------------------------------------------------------ */

static void pkg_free(struct rcv *r)
{
	for (size_t i = 0; i < r->npds; i++) {
		struct pkgds *d = &r->pds[i];
		for (size_t j = 0; j < d->nprops; j++) {
			free((char *)d->props[j].name);
			free((char *)d->props[j].value);
		}
		free(d->props);
		free(d->snap_guids);
		free(d->name);
	}
	free(r->pds);
	r->pds = NULL;
	r->npds = 0;
}

static int pkg_add(struct rcv *r, const struct stream_dataset *sd)
{
	struct pkgds *nv = realloc(r->pds, (r->npds + 1) * sizeof *nv);
	if (!nv)
		return ferry_err(FERR_NOMEM, "receiving a package");
	r->pds = nv;
	struct pkgds *d = &r->pds[r->npds++];
	memset(d, 0, sizeof *d);
	d->guid = sd->guid;
	if (!(d->name = strdup(sd->name)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	if (sd->nprops && !(d->props = calloc(sd->nprops, sizeof *d->props)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	for (size_t i = 0; i < sd->nprops; i++) {
		d->props[i].source = sd->props[i].source;
		d->props[i].name = strdup(sd->props[i].name);
		d->props[i].value = strdup(sd->props[i].value);
		d->nprops++;
		if (!d->props[i].name || !d->props[i].value)
			return ferry_err(FERR_NOMEM, "receiving a package");
	}
	if (sd->nsnaps && !(d->snap_guids = calloc(sd->nsnaps, sizeof *d->snap_guids)))
		return ferry_err(FERR_NOMEM, "receiving a package");
	for (size_t i = 0; i < sd->nsnaps; i++)
		d->snap_guids[i] = sd->snaps[i].guid;
	d->nsnaps = sd->nsnaps;
	return 0;
}

static const struct pkgds *pkg_find(struct rcv *r, const char *name)
{
	for (size_t i = 0; i < r->npds; i++)
		if (!strcmp(r->pds[i].name, name))
			return &r->pds[i];
	return NULL;
}

static void note_destroy(struct rcv *r, const char *name)
{
	if (r->o->destroyed)
		r->o->destroyed(r->o->arg, name);
}

/* recv -F of a package: in the datasets it lists, the snapshots the
 * sender no longer has go (with -n: are reported). */
static int pkg_prune(struct rcv *r)
{
	int rc = 0;
	for (size_t i = 0; i < r->npds && rc == 0; i++) {
		const struct pkgds *d = &r->pds[i];
		char dsname[STORE_NAME_MAX + 1];
		struct store_ds ds;
		struct snaps sl;
		memset(&sl, 0, sizeof sl);
		if ((rc = map_name(r, d->name, dsname, sizeof dsname)) < 0)
			break;
		if ((rc = store_ds_lookup(r->p, dsname, &ds)) < 0) {
			if (rc == -FERR_NOENT) {
				ferry_err_clear();
				rc = 0;
			}
			continue;
		}
		if ((rc = store_snap_iter(r->p, &ds, snaps_cb, &sl)) < 0) {
			free(sl.v);
			break;
		}
		size_t w = 0;
		for (size_t j = 0; j < sl.n; j++) {
			int keep = 0;
			for (size_t k = 0; k < d->nsnaps; k++)
				if (d->snap_guids[k] == sl.v[j].guid)
					keep = 1;
			if (!keep)
				sl.v[w++] = sl.v[j];
		}
		for (size_t j = 0; j < w; j++)
			note_destroy(r, sl.v[j].name);
		if (w && !r->dryrun)
			rc = store_snap_destroy(r->p, sl.v, w);
		free(sl.v);
	}
	return rc;
}

/* A dataset below the receive target, and whether the package keeps it. */
struct tree_ds {
	char name[STORE_NAME_MAX + 1];
	int keep;
};

struct tree_list {
	struct tree_ds *v;
	size_t n, cap;
};

static int tree_add(struct tree_list *l, const char *name)
{
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "listing datasets");
	if (grown < 0)
		return grown;
	snprintf(l->v[l->n].name, sizeof l->v[l->n].name, "%s", name);
	l->v[l->n++].keep = 0;
	return 0;
}

static int tree_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	return tree_add(arg, ds->name);
}

static int tree_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tree_ds *)a)->name, ((const struct tree_ds *)b)->name);
}

/* Index of the first name >= key in sorted l. */
static size_t tree_lower(const struct tree_list *l, const char *key)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(l->v[mid].name, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* 1 when sorted l holds name or a name below it. */
static int tree_covers(const struct tree_list *l, const char *name)
{
	char below[STORE_NAME_MAX + 2];
	size_t i = tree_lower(l, name), bl;
	if (i < l->n && !strcmp(l->v[i].name, name))
		return 1;
	bl = (size_t)snprintf(below, sizeof below, "%s/", name);
	if (bl >= sizeof below)
		return 0;
	i = tree_lower(l, below);
	return i < l->n && !strncmp(l->v[i].name, below, bl);
}

/* recv -F of a TREE package (send -R), once it verified to its end: the
 * datasets below the receive target that the package does not list, and
 * that no listed dataset lies below, go with their descendants and
 * snapshots (with -n: are reported). The target itself and anything
 * outside it never do. */
static int pkg_destroy_tree(struct rcv *r)
{
	char top[STORE_NAME_MAX + 1];
	struct tree_list have, listed;
	struct store_ds ds;
	int rc;
	memset(&have, 0, sizeof have);
	memset(&listed, 0, sizeof listed);
	if ((rc = map_name(r, r->pkg_top, top, sizeof top)) < 0)
		return rc;
	if ((rc = store_ds_lookup(r->p, top, &ds)) < 0) {
		if (rc != -FERR_NOENT)
			return rc;
		ferry_err_clear();
		return 0;
	}
	for (size_t i = 0; i < r->npds; i++) {
		char name[STORE_NAME_MAX + 1];
		if ((rc = map_name(r, r->pds[i].name, name, sizeof name)) < 0 ||
		    (rc = tree_add(&listed, name)) < 0)
			goto out;
	}
	if (listed.n > 1)
		qsort(listed.v, listed.n, sizeof *listed.v, tree_cmp);
	if ((rc = store_ds_walk(r->p, &ds, -1, tree_cb, &have)) < 0)
		goto out;
	if (have.n > 1)
		qsort(have.v, have.n, sizeof *have.v, tree_cmp);
	for (size_t i = 0; i < have.n; i++)
		have.v[i].keep = !strcmp(have.v[i].name, top) || tree_covers(&listed, have.v[i].name);
	/* parents sort before their children: each unkept dataset is reported,
	 * and destroyed (recursively) when its parent is kept */
	for (size_t i = 0; i < have.n && rc == 0; i++) {
		struct tree_ds *d = &have.v[i];
		char parent[STORE_NAME_MAX + 1];
		if (d->keep)
			continue;
		note_destroy(r, d->name);
		snprintf(parent, sizeof parent, "%s", d->name);
		char *sl = strrchr(parent, '/');
		if (sl)
			*sl = 0;
		size_t pi = tree_lower(&have, parent);
		if (pi < have.n && !strcmp(have.v[pi].name, parent) && !have.v[pi].keep)
			continue; /* goes with its parent */
		if (!r->dryrun)
			rc = store_ds_destroy(r->p, d->name, 1);
	}
out:
	free(have.v);
	free(listed.v);
	return rc;
}

/* Copies the BEGIN's strings and properties, which the decoder reuses. */
struct begin_copy {
	struct stream_begin b;
	char ds[STREAM_NAME_MAX + 1], snap[STREAM_NAME_MAX + 1];
	struct stream_prop *props;
	size_t nprops;
};

static void begin_copy_free(struct begin_copy *c)
{
	for (size_t i = 0; i < c->nprops; i++) {
		free((char *)c->props[i].name);
		free((char *)c->props[i].value);
	}
	free(c->props);
	c->props = NULL;
	c->nprops = 0;
}

static int begin_copy(struct begin_copy *c, const struct stream_begin *b)
{
	memset(c, 0, sizeof *c);
	c->b = *b;
	snprintf(c->ds, sizeof c->ds, "%s", b->dataset);
	snprintf(c->snap, sizeof c->snap, "%s", b->snapshot);
	c->b.dataset = c->ds;
	c->b.snapshot = c->snap;
	c->b.props = NULL;
	c->b.nprops = 0;
	if (b->nprops && !(c->props = calloc(b->nprops, sizeof *c->props)))
		return ferry_err(FERR_NOMEM, "receiving");
	for (size_t i = 0; i < b->nprops; i++) {
		c->props[i].source = b->props[i].source;
		c->props[i].name = strdup(b->props[i].name);
		c->props[i].value = strdup(b->props[i].value);
		c->nprops++;
		if (!c->props[i].name || !c->props[i].value)
			return ferry_err(FERR_NOMEM, "receiving");
	}
	return 0;
}

int recv_run(struct store_pool *p, const char *target, struct stream_source *in,
	     const struct recv_opts *o, struct recv_stats *st)
{
	struct rcv r;
	struct stream_record rec;
	struct begin_copy bc;
	int rc;
	memset(&r, 0, sizeof r);
	memset(&bc, 0, sizeof bc);
	r.p = p;
	r.o = o;
	r.target = target;
	r.in = in;
	r.dryrun = (o->flags & RECV_DRYRUN) != 0;
	fbuf_init(&r.nb, NODE_MAX);
	if ((rc = stream_decoder_new(&r.dec)) < 0 || (rc = store_writer_new(p, &r.w)) < 0 ||
	    (rc = store_pnodes_new(p, &r.pn)) < 0 || (rc = jobs_init(&r)) < 0)
		goto out;
	/* every block's content is checked against its hash on the workers
	 * (job_run), once; the decoder need not do it again for codec off */
	stream_decoder_defer_block_hashes(r.dec);
	if (r.dryrun && (rc = store_hset_new(p, 0, &r.dry)) < 0)
		goto out;
	{
		/* -d/-e receive below an existing target; otherwise the target's
		 * parent must exist (as in zfs) */
		char must[STORE_NAME_MAX + 1];
		struct store_ds tmp;
		snprintf(must, sizeof must, "%s", target);
		char *cut = strchr(must, '@');
		if (cut)
			*cut = 0;
		if (!(o->flags & (RECV_DISCARD | RECV_LASTNAME)) && (cut = strrchr(must, '/')))
			*cut = 0;
		if ((rc = store_ds_lookup(p, must, &tmp)) < 0) {
			if (rc == -FERR_NOENT)
				rc = ferry_err(FERR_NOENT, "'%s' does not exist", must);
			goto out;
		}
	}
	r.sub_start = 0;
	rc = stream_decoder_pull(r.dec, in, &rec);
	if (rc == 0)
		rc = ferry_err(FERR_TRUNCATED, "the stream is empty");
	if (rc < 0)
		goto out;
	if (rec.type == STREAM_BEGIN) {
		if ((rc = begin_copy(&bc, &rec.begin)) < 0)
			goto out;
		if ((rc = recv_sub(&r, &bc.b, bc.props, bc.nprops)) < 0)
			goto out;
		begin_copy_free(&bc);
	} else if (rec.type == STREAM_PACKAGE) {
		if (strchr(target, '@')) {
			rc = ferry_err(FERR_INVAL, "a package is received into a dataset, not '%s'", target);
			goto out;
		}
		r.in_pkg = 1;
		r.pkg_flags = rec.package.flags;
		r.atomic = !r.dryrun && (o->flags & RECV_FORCE) && !(o->flags & RECV_RESUMABLE);
		snprintf(r.pkg_top, sizeof r.pkg_top, "%s", rec.package.top);
		uint32_t nds = rec.package.ndatasets;
		for (uint32_t i = 0; i < nds; i++) {
			if ((rc = stream_decoder_pull(r.dec, in, &rec)) <= 0) {
				if (rc == 0)
					rc = ferry_err(FERR_TRUNCATED, "the package ended early");
				goto out;
			}
			if (rec.type != STREAM_DATASET) {
				rc = ferry_err(FERR_CORRUPT, "expected DATASET, got %s",
					       stream_type_name(rec.type));
				goto out;
			}
			if ((rc = pkg_add(&r, &rec.dataset)) < 0)
				goto out;
		}
		for (;;) {
			r.sub_start = stream_decoder_bytes(r.dec);
			if ((rc = stream_decoder_pull(r.dec, in, &rec)) <= 0) {
				if (rc == 0)
					rc = ferry_err(FERR_TRUNCATED, "the package ended early");
				goto out;
			}
			if (rec.type == STREAM_PACKAGE_END)
				break;
			if (rec.type != STREAM_BEGIN) {
				rc = ferry_err(FERR_CORRUPT, "expected BEGIN, got %s",
					       stream_type_name(rec.type));
				goto out;
			}
			if ((rc = begin_copy(&bc, &rec.begin)) < 0)
				goto out;
			const struct pkgds *d = pkg_find(&r, bc.b.dataset);
			if (!d) {
				rc = ferry_err(FERR_CORRUPT, "substream of '%s', which has no DATASET",
					       bc.b.dataset);
				goto out;
			}
			if ((rc = recv_sub(&r, &bc.b, d->props, d->nprops)) < 0)
				goto out;
			begin_copy_free(&bc);
		}
	} else {
		rc = ferry_err(FERR_CORRUPT, "the stream starts with %s", stream_type_name(rec.type));
		goto out;
	}
	/* nothing may follow */
	rc = stream_decoder_pull(r.dec, in, &rec);
	if (rc > 0)
		rc = ferry_err(FERR_CORRUPT, "records after the end of the stream");
	if (rc < 0)
		goto out;
	/* The package verified to its end: only now may -F destroy what the
	 * sender no longer has, in the transaction its snapshots commit in. */
	if (r.in_pkg && (o->flags & RECV_FORCE)) {
		if ((rc = tx_open(&r)) < 0)
			goto out;
		if ((r.pkg_flags & STREAM_F_TREE) && (rc = pkg_destroy_tree(&r)) < 0)
			goto out;
		if ((rc = pkg_prune(&r)) < 0)
			goto out;
	}
	if (r.tx) {
		r.tx = 0;
		if ((rc = store_tx_commit(p)) < 0)
			goto out;
	}
	r.tot.bytes = stream_decoder_bytes(r.dec);
	if (st)
		*st = r.tot;
	rc = 0;
out:
	if (r.tx) {
		/* a failure anywhere in a -F package: none of it happened */
		store_tx_rollback(p);
		r.tx = 0;
	}
	begin_copy_free(&bc);
	if (r.q && r.inflight) {
		while (r.inflight) {
			void *job;
			int res;
			if (workq_collect(r.q, &job, &res) <= 0)
				break;
			r.inflight--;
		}
	}
	jobs_free(&r);
	store_hset_free(r.objs);
	store_hset_free(r.seen);
	store_hset_free(r.dry);
	store_pnodes_free(r.pn);
	store_writer_free(r.w);
	stream_decoder_free(r.dec);
	pkg_free(&r);
	free(r.dds);
	fbuf_release(&r.nb);
	return rc;
}

int recv_abort(struct store_pool *p, const char *target)
{
	struct store_partial pt;
	struct store_ds ds;
	struct store_snap sn;
	int rc;
	if ((rc = store_partial_get(p, target, &pt)) < 0)
		return rc;
	/* the partial state and the dataset made for it go together */
	if ((rc = store_tx_begin(p)) < 0)
		return rc;
	if ((rc = store_partial_drop(p, target)) < 0)
		goto out;
	if (!pt.created)
		goto out;
	if ((rc = store_ds_lookup(p, target, &ds)) < 0) {
		if (rc == -FERR_NOENT) {
			ferry_err_clear();
			rc = 0;
		}
		goto out;
	}
	/* ... unless it has gained snapshots or children since */
	rc = store_snap_newest(p, &ds, &sn);
	if (rc == 0)
		goto out;
	if (rc != -FERR_NOENT)
		goto out;
	ferry_err_clear();
	rc = store_ds_destroy(p, target, 0);
	if (rc == -FERR_BUSY) {
		ferry_err_clear();
		rc = 0;
	}
out:
	if (rc < 0) {
		store_tx_rollback(p);
		return rc;
	}
	return store_tx_commit(p);
}

int recv_resume_token(struct store_pool *p, const char *target, char *out, size_t n)
{
	struct store_partial pt;
	int rc;
	if ((rc = store_partial_get(p, target, &pt)) < 0)
		return rc;
	if (strlen(pt.token) >= n)
		return ferry_err(FERR_LIMIT, "resume token buffer too small");
	memcpy(out, pt.token, strlen(pt.token) + 1);
	return 0;
}
