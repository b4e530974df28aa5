/* store/block.c — the storage rule for a block, and the checks of a block
 * read back (thread-safe, touching no pool).
 *
 * store_block_rule is the one place that decides what becomes of a block
 * on its way into a pool (capture, recv) or into a stream recompressed
 * (send --compress): a hole, its payload kept as it came, its content
 * encoded with the target codec (or recompressed from another one), or
 * stored raw when compressing does not save 12.5 %. The callers differ
 * only in what an all-zero block becomes (enum store_block_zero) and in
 * what they already know of the block (its hash, its content). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A hole: nothing is stored (codec: the target's, as a capture records). */
static void as_hole(struct codec_spec target, size_t lsize, struct store_block *out)
{
	out->form = BLOCK_HOLE;
	out->codec = target;
	out->lsize = (uint32_t)lsize;
	out->psize = 0;
	out->payload = NULL;
	out->how = STORE_BLOCK_HOLE;
}

static void as_raw(const void *content, size_t lsize, struct store_block *out)
{
	out->form = BLOCK_RAW;
	out->codec = (struct codec_spec){CODEC_OFF, 0};
	out->lsize = (uint32_t)lsize;
	out->psize = (uint32_t)lsize;
	out->payload = content;
}

static void as_encoded(struct codec_spec c, const void *payload, size_t psize, size_t lsize,
		       struct store_block *out)
{
	out->form = c.id == CODEC_OFF ? BLOCK_RAW : BLOCK_COMPRESSED;
	out->codec = c;
	out->lsize = (uint32_t)lsize;
	out->psize = (uint32_t)psize;
	out->payload = payload;
}

/* An all-zero block that a node names (recv, send): encoded with target
 * whatever it saves, raw only when the encoding would be bigger. */
static int encode_zero(struct codec_spec target, const void *content, size_t lsize,
		       const struct store_block_bufs *b, struct store_block *out)
{
	size_t ps = 0;
	int r = codec_encode(target, content, lsize, b->enc, b->enc_cap, &ps);
	if (r == -FERR_NOSPACE_DST || (r == 0 && ps > lsize)) {
		ferry_err_clear();
		as_raw(content, lsize, out);
		return 0;
	}
	if (r < 0)
		return r;
	as_encoded(target, b->enc, ps, lsize, out);
	return 0;
}

/* The rule for logical content (its hash in out->hash already): sets
 * out->how to STORE_BLOCK_ENCODE or STORE_BLOCK_HOLE. */
static int encode(struct codec_spec target, enum store_block_zero zero, const void *content,
		  size_t lsize, const struct store_block_bufs *b, struct store_block *out)
{
	size_t psize = 0;
	enum block_form form;
	int r;
	out->how = STORE_BLOCK_ENCODE;
	if ((r = codec_store_block(target, content, lsize, b->enc, b->enc_cap, &psize, &form)) < 0)
		return r;
	if (form == BLOCK_HOLE) { /* all zero, under a real codec */
		if (zero == STORE_ZERO_ENCODE)
			return encode_zero(target, content, lsize, b, out);
		as_hole(target, lsize, out);
		return 0;
	}
	/* only a raw block can be all zero here; the scan stops at the first
	 * nonzero byte */
	if (form == BLOCK_RAW && zero == STORE_ZERO_HOLE && codec_is_zero(content, lsize)) {
		as_hole(target, lsize, out);
		return 0;
	}
	if (form == BLOCK_RAW)
		as_raw(content, lsize, out);
	else
		as_encoded(target, b->enc, psize, lsize, out);
	return 0;
}

static int check_hash(const void *content, size_t lsize, const uint8_t hash[FERRY_HASH_LEN])
{
	uint8_t h[FERRY_HASH_LEN];
	hash_blake2b(h, content, lsize);
	if (ferry_memcmp_ct(h, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "block content does not match its hash");
	return 0;
}

/* The sizes a logical block must have (else rule_logical refuses it). */
static int logical_sizes_ok(const struct store_block_in *in)
{
	return in->lsize > 0 && in->lsize <= STORE_BLOCK_MAX && in->codec.level == 0 &&
	       in->psize == in->lsize;
}

/* The sizes an encoded block must have, and its hash (else rule_encoded
 * refuses it); dec_cap: the room to decode it into, unless decoded. */
static int encoded_sizes_ok(const struct store_block_in *in, size_t dec_cap)
{
	return in->lsize > 0 && in->lsize <= STORE_BLOCK_MAX && in->psize > 0 &&
	       in->psize <= in->lsize && in->hash && (in->content || dec_cap >= in->lsize);
}

/* Logical content: hashed or checked, then encoded. */
static int rule_logical(const struct store_block_in *in, struct codec_spec target,
			enum store_block_zero zero, const struct store_block_bufs *b,
			struct store_block *out)
{
	int r;
	if (in->lsize == 0 || in->lsize > STORE_BLOCK_MAX)
		return ferry_err(FERR_INVAL, "block of %zu bytes", in->lsize);
	if (!logical_sizes_ok(in))
		return ferry_err(FERR_CORRUPT, "raw block with psize %zu != lsize %zu", in->psize,
				 in->lsize);
	if (!in->hash)
		hash_blake2b(out->hash, in->payload, in->lsize);
	else if (!in->checked && (r = check_hash(in->payload, in->lsize, in->hash)) < 0)
		return r;
	else
		memcpy(out->hash, in->hash, FERRY_HASH_LEN);
	if (in->tried) {
		/* the one thing trust buys is skipping the codec: the content
		 * was checked above like any other */
		as_raw(in->payload, in->lsize, out);
		out->how = STORE_BLOCK_TRIED;
		return 0;
	}
	return encode(target, zero, in->payload, in->lsize, b, out);
}

/* An encoded payload: decoded and checked (unless the caller did), then
 * kept when it is the target's codec, recompressed otherwise. */
static int rule_encoded(const struct store_block_in *in, struct codec_spec target,
			enum store_block_zero zero, const struct store_block_bufs *b,
			struct store_block *out)
{
	const void *content = in->content;
	int r;
	if (!encoded_sizes_ok(in, b->dec_cap))
		return ferry_err(FERR_CORRUPT, "encoded block of %zu/%zu bytes", in->psize, in->lsize);
	if (!codec_valid(in->codec))
		return ferry_err(FERR_UNSUPPORTED, "unknown codec %u/%u", in->codec.id, in->codec.level);
	if (!content) {
		/* Strict: the payload may be kept as it is, so it must be one
		 * any reader of its codec accepts, not just ours. */
		if ((r = codec_decode_strict(in->codec, in->payload, in->psize, b->dec, in->lsize)) < 0 ||
		    (r = check_hash(b->dec, in->lsize, in->hash)) < 0)
			return r;
		content = b->dec;
	}
	memcpy(out->hash, in->hash, FERRY_HASH_LEN);
	if (codec_equal(in->codec, target)) {
		as_encoded(in->codec, in->payload, in->psize, in->lsize, out);
		out->how = STORE_BLOCK_KEEP;
		return 0;
	}
	if ((r = encode(target, zero, content, in->lsize, b, out)) < 0)
		return r;
	if (out->how == STORE_BLOCK_ENCODE)
		out->how = STORE_BLOCK_RECODE;
	return 0;
}

void store_block_precheck(struct store_block_in *in, const struct store_block_bufs *bufs,
			  size_t k, uint8_t (*hashes)[FERRY_HASH_LEN])
{
	const void *p[STORE_PRECHECK_MAX] = {0};
	size_t n[STORE_PRECHECK_MAX] = {0}, at[STORE_PRECHECK_MAX], m = 0;
	uint8_t h[STORE_PRECHECK_MAX][FERRY_HASH_LEN];
	for (size_t i = 0; i < k && m < STORE_PRECHECK_MAX; i++) {
		struct store_block_in *x = &in[i];
		const void *content;
		if (x->codec.id == CODEC_OFF) {
			if ((x->hash && x->checked) || !logical_sizes_ok(x))
				continue;
			content = x->payload;
		} else {
			/* rule_encoded's own checks, then its strict decode */
			if (x->content || !encoded_sizes_ok(x, bufs[i].dec_cap) || !codec_valid(x->codec) ||
			    codec_decode_strict(x->codec, x->payload, x->psize, bufs[i].dec,
						x->lsize) < 0)
				continue;
			content = bufs[i].dec;
		}
		p[m] = content;
		n[m] = x->lsize;
		at[m++] = i;
	}
	hash_blake2b_many(h, p, n, m);
	for (size_t q = 0; q < m; q++) {
		struct store_block_in *x = &in[at[q]];
		if (!x->hash) {
			memcpy(hashes[at[q]], h[q], FERRY_HASH_LEN);
			x->hash = hashes[at[q]];
		} else if (ferry_memcmp_ct(h[q], x->hash, FERRY_HASH_LEN) != 0) {
			continue; /* the rule finds it again, and says so */
		}
		x->checked = 1;
		if (x->codec.id != CODEC_OFF)
			x->content = p[q];
	}
}

int store_block_rule(const struct store_block_in *in, struct codec_spec target,
		     enum store_block_zero zero, const struct store_block_bufs *bufs,
		     struct store_block *out)
{
	if (in->codec.id == CODEC_OFF)
		return rule_logical(in, target, zero, bufs, out);
	return rule_encoded(in, target, zero, bufs, out);
}

int store_block_prepare(struct codec_spec policy, const void *src, size_t lsize,
			void *scratch, size_t scratch_cap, struct store_block *out)
{
	struct store_block_in in = {.codec = {CODEC_OFF, 0}, .payload = src, .psize = lsize,
				    .lsize = lsize};
	struct store_block_bufs b = {NULL, 0, scratch, scratch_cap};
	return store_block_rule(&in, policy, STORE_ZERO_CODEC, &b, out);
}

int store_block_prepare_encoded(struct codec_spec c, const void *payload, size_t psize,
				size_t lsize, const uint8_t hash[FERRY_HASH_LEN],
				void *scratch, size_t scratch_cap, struct store_block *out)
{
	struct store_block_in in = {.codec = c, .payload = payload, .psize = psize, .lsize = lsize,
				    .hash = hash};
	struct store_block_bufs b = {scratch, scratch_cap, NULL, 0};
	return store_block_rule(&in, c, STORE_ZERO_ENCODE, &b, out);
}

/* ---- checks of a block read back ---------------------------------------------- */

int store_block_damage(const uint8_t hash[FERRY_HASH_LEN], const struct store_block_loc *loc,
		       int err)
{
	char hex[FERRY_HASH_HEX], msg[512];
	hash_to_hex(hash, hex);
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	return ferry_err(-err, "block %.16s in pack '%s' at offset %lld is damaged: %s", hex,
			 loc->pack, (long long)loc->offset, msg);
}

/* store_block_verify up to the hash: the sizes, and the logical content
 * in *content (payload, or decoded into scratch). */
static int verify_content(struct codec_spec c, const void *payload, size_t psize, size_t lsize,
			  void *scratch, size_t scratch_cap, const void **content)
{
	int r;
	if (lsize == 0 || lsize > STORE_BLOCK_MAX || psize > lsize ||
	    (c.id != CODEC_OFF && scratch_cap < lsize))
		return ferry_err(FERR_CORRUPT, "block of %zu/%zu bytes", psize, lsize);
	if (c.id == CODEC_OFF) {
		if (psize != lsize)
			return ferry_err(FERR_CORRUPT, "raw block of %zu bytes, %zu expected", psize,
					 lsize);
		*content = payload;
		return 0;
	}
	if ((r = codec_decode(c, payload, psize, scratch, lsize)) < 0)
		return r;
	*content = scratch;
	return 0;
}

int store_block_verify(struct codec_spec c, const void *payload, size_t psize, size_t lsize,
		       const uint8_t hash[FERRY_HASH_LEN], void *scratch, size_t scratch_cap)
{
	uint8_t h[FERRY_HASH_LEN];
	const void *content = NULL;
	int r;
	if ((r = verify_content(c, payload, psize, lsize, scratch, scratch_cap, &content)) < 0)
		return r;
	hash_blake2b(h, content, lsize);
	if (memcmp(h, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "its content does not match its hash");
	return 0;
}

void store_block_verify_many(struct store_block_check *v, size_t k)
{
	while (k > 0) {
		size_t take = k < STORE_PRECHECK_MAX ? k : STORE_PRECHECK_MAX, m = 0, bad = 0;
		const void *p[STORE_PRECHECK_MAX];
		size_t n[STORE_PRECHECK_MAX], at[STORE_PRECHECK_MAX];
		uint8_t h[STORE_PRECHECK_MAX][FERRY_HASH_LEN];
		for (size_t i = 0; i < take; i++) {
			struct store_block_check *x = &v[i];
			x->ok = 0;
			if (verify_content(x->c, x->payload, x->psize, x->lsize, x->scratch,
					   x->scratch_cap, &p[m]) < 0) {
				bad++; /* store_block_verify will say why */
				continue;
			}
			n[m] = x->lsize;
			at[m++] = i;
		}
		hash_blake2b_many(h, p, n, m);
		for (size_t q = 0; q < m; q++)
			v[at[q]].ok = memcmp(h[q], v[at[q]].hash, FERRY_HASH_LEN) == 0;
		for (size_t i = 0; i < take; i++)
			if (v[i].mark)
				*v[i].mark = v[i].ok;
		if (bad)
			ferry_err_clear(); /* its message is store_block_verify's to give */
		v += take;
		k -= take;
	}
}

void store_block_verify_jobs(void *const *jobs, size_t n,
			     int (*check)(void *job, struct store_block_check *c))
{
	struct store_block_check v[STORE_PRECHECK_MAX];
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		memset(&v[m], 0, sizeof v[m]);
		if (check(jobs[i], &v[m]) == 1 && ++m == STORE_PRECHECK_MAX) {
			store_block_verify_many(v, m);
			m = 0;
		}
	}
	if (m >= 2) /* one alone gains nothing: its job checks it */
		store_block_verify_many(v, m);
}
