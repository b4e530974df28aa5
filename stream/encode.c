/* stream/encode.c — the encoder: record descriptions in, framed and
 * chained bytes out. Each record is serialised straight into the caller's
 * fbuf, then checked with the decoder's own parser and grammar before its
 * trailer is added; a record that fails leaves out and the encoder as they
 * were. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct stream_encoder {
	unsigned flags;
	unsigned version;              /* written in record 0; 0 before it */
	uint8_t chain[FERRY_HASH_LEN]; /* S(i-1) */
	uint64_t index;
	uint64_t offset;
	/* bookkeeping for END and PACKAGE_END, kept even when unchecked */
	uint64_t begin_index;
	uint64_t nsub;
	int in_pkg;
	int done;
	struct stream_grammar g;
	struct fbuf aux;
};

int stream_encoder_new(struct stream_encoder **out, unsigned flags)
{
	struct stream_encoder *e;

	if (flags & ~(unsigned)(STREAM_ENC_UNCHECKED | STREAM_ENC_V1))
		return ferry_err(FERR_INVAL, "stream encoder: unknown flags 0x%x", flags);
	if (!(e = calloc(1, sizeof(*e))))
		return ferry_err(FERR_NOMEM, "stream encoder: out of memory");
	e->flags = flags;
	stream_grammar_init(&e->g);
	fbuf_init(&e->aux, AUX_MAX);
	*out = e;
	return 0;
}

void stream_encoder_free(struct stream_encoder *e)
{
	if (!e)
		return;
	fbuf_release(&e->aux);
	free(e);
}

uint64_t stream_encoder_records(const struct stream_encoder *e)
{
	return e->index;
}

void stream_encoder_chain(const struct stream_encoder *e, uint8_t out[FERRY_HASH_LEN])
{
	memcpy(out, e->chain, FERRY_HASH_LEN);
}

int stream_encoder_done(const struct stream_encoder *e)
{
	return e->done;
}

static int checked(const struct stream_encoder *e)
{
	return !(e->flags & STREAM_ENC_UNCHECKED);
}

/* Starts a record: room for the header, filled in by finish(). */
static int start(struct fbuf *out, size_t *at)
{
	static const uint8_t zero[STREAM_HDR_LEN];

	*at = out->len;
	return fbuf_append(out, zero, sizeof(zero));
}

static void rollback(struct fbuf *out, size_t at)
{
	out->len = at;
	if (out->data)
		out->data[at] = '\0';
}

/* Completes the record begun at out->data + at: header, checks, trailer,
 * then commits the encoder state. */
static int finish(struct stream_encoder *e, uint16_t type, uint16_t hflags, struct fbuf *out,
		  size_t at)
{
	struct vctx c = {.index = e->index, .type = type, .bad = FERR_INVAL};
	struct stream_grammar g = e->g;
	struct stream_record rec;
	uint8_t s[FERRY_HASH_LEN], prev[FERRY_HASH_LEN];
	unsigned version;
	size_t len = out->len - at - STREAM_HDR_LEN;
	uint8_t *hdr;
	int r, skip = 0;

	if (len > UINT32_MAX) {
		r = vfail(&c, FERR_LIMIT, "payload length %zu does not fit the header", len);
		goto out;
	}
	hdr = out->data + at;
	put_le16(hdr, type);
	put_le16(hdr + 2, hflags);
	put_le32(hdr + 4, (uint32_t)len);
	if (checked(e)) {
		if ((r = stream_check_header(&c, type, hflags, (uint32_t)len, &skip)) < 0)
			goto out;
		if (!skip) {
			if ((r = stream_parse(&c, hdr + STREAM_HDR_LEN, (uint32_t)len, 0, &e->aux,
					      &rec)) < 0)
				goto out;
			if ((r = stream_grammar_step(&g, &c, &rec)) < 0)
				goto out;
		}
	}
	if ((r = fbuf_reserve(out, STREAM_TRAILER_LEN)) < 0)
		goto out;
	hdr = out->data + at; /* reserve may have moved the buffer */
	if (e->index == 0) {
		/* the chain's rules are the first record's version's (an
		 * unchecked encoder may write any bytes there) */
		version = len >= 10 ? get_le16(hdr + STREAM_HDR_LEN + 8) : 0;
		stream_chain_iv(version, prev);
	} else {
		version = e->version;
		memcpy(prev, e->chain, FERRY_HASH_LEN);
	}
	stream_chain_record(version, prev, hdr, hdr + STREAM_HDR_LEN, len, s);
	if ((r = fbuf_append(out, s, STREAM_TRAILER_LEN)) < 0)
		goto out;

	e->g = g;
	e->version = version;
	memcpy(e->chain, s, FERRY_HASH_LEN);
	switch (type) {
	case STREAM_BEGIN:
		e->begin_index = e->index;
		break;
	case STREAM_END:
		if (e->in_pkg)
			e->nsub++;
		else
			e->done = 1;
		break;
	case STREAM_PACKAGE:
		e->in_pkg = 1;
		e->nsub = 0;
		break;
	case STREAM_PACKAGE_END:
		e->done = 1;
		break;
	}
	e->index++;
	e->offset += STREAM_HDR_LEN + len + STREAM_TRAILER_LEN;
	return 0;
out:
	rollback(out, at);
	return r;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

/* Appends a length-prefixed-elsewhere string; the caller wrote its length. */
static int put_bytes(struct fbuf *out, const char *s, size_t n)
{
	return fbuf_append(out, s, n);
}

static int len_field(const struct stream_encoder *e, const char *what, size_t n, size_t max)
{
	if (n > max)
		return ferry_err(FERR_LIMIT, "record %" PRIu64 ": %s length %zu exceeds the "
				 "field's maximum %zu", e->index, what, n, max);
	return 0;
}

static int put_props(const struct stream_encoder *e, struct fbuf *out,
		     const struct stream_prop *props, size_t n)
{
	int r;

	for (size_t i = 0; i < n; i++) {
		const char *name = str_or_empty(props[i].name);
		const char *value = str_or_empty(props[i].value);
		size_t nl = strlen(name), vl = strlen(value);

		if ((r = len_field(e, "property name", nl, UINT8_MAX)) < 0 ||
		    (r = len_field(e, "property value", vl, UINT16_MAX)) < 0 ||
		    (r = fbuf_putc(out, (uint8_t)nl)) < 0 ||
		    (r = fbuf_putc(out, props[i].source)) < 0 ||
		    (r = fbuf_put_le16(out, (uint16_t)vl)) < 0 ||
		    (r = put_bytes(out, name, nl)) < 0 || (r = put_bytes(out, value, vl)) < 0)
			return r;
	}
	return 0;
}

static uint16_t version_of(const struct stream_encoder *e, uint16_t v)
{
	/* Unchecked encoders may write another version, for test vectors. */
	if (!checked(e) && v)
		return v;
	return (e->flags & STREAM_ENC_V1) ? 1 : STREAM_VERSION;
}

/* ---- record sizes --------------------------------------------------------------
 * The fixed part of each payload as the encoders below write it (one
 * place: every encoder checks its record against these). */
#define BEGIN_FIXED 120u     /* magic .. reserved, before the names */
#define PROP_FIXED 4u        /* name length, source, value length */
#define NODE_FIXED 36u       /* type, pad, hash */
#define WRITE_FIXED 48u      /* hash, lsize, codec, level, 0, psize, 0 */
#define BYREF_FIXED 40u      /* hash, lsize, 0 */
#define END_FIXED 40u        /* count, chain */
#define PACKAGE_FIXED 40u    /* magic .. name lengths */
#define DATASET_FIXED 24u    /* guid .. reserved */
#define DSSNAP_FIXED 25u     /* guid, txg, creation, name length */
#define PACKAGE_END_FIXED 48u
#define HINT_FIXED 16u       /* size, tried codec and level, 0 */

static uint64_t rec_size(uint64_t payload)
{
	return STREAM_HDR_LEN + payload + STREAM_TRAILER_LEN;
}

static uint64_t props_size(const struct stream_prop *props, size_t n)
{
	uint64_t sz = 0;
	for (size_t i = 0; i < n; i++)
		sz += PROP_FIXED + strlen(str_or_empty(props[i].name)) +
		      strlen(str_or_empty(props[i].value));
	return sz;
}

uint64_t stream_size_begin(const struct stream_begin *b)
{
	return rec_size(BEGIN_FIXED + strlen(str_or_empty(b->dataset)) +
			strlen(str_or_empty(b->snapshot)) + props_size(b->props, b->nprops));
}

uint64_t stream_size_node(size_t len)
{
	return rec_size(NODE_FIXED + (uint64_t)len);
}

uint64_t stream_size_write(uint32_t psize)
{
	return rec_size(WRITE_FIXED + (uint64_t)psize);
}

uint64_t stream_size_byref(void)
{
	return rec_size(BYREF_FIXED);
}

uint64_t stream_size_end(void)
{
	return rec_size(END_FIXED);
}

uint64_t stream_size_package(const struct stream_package *p)
{
	return rec_size(PACKAGE_FIXED + strlen(str_or_empty(p->top)) +
			strlen(str_or_empty(p->to_snap)) + strlen(str_or_empty(p->from_snap)));
}

uint64_t stream_size_dataset(const struct stream_dataset *d)
{
	uint64_t sz = DATASET_FIXED + strlen(str_or_empty(d->name)) + props_size(d->props, d->nprops);
	for (size_t i = 0; i < d->nsnaps; i++)
		sz += DSSNAP_FIXED + strlen(str_or_empty(d->snaps[i].name));
	return rec_size(sz);
}

uint64_t stream_size_package_end(void)
{
	return rec_size(PACKAGE_END_FIXED);
}

uint64_t stream_size_hint(void)
{
	return rec_size(HINT_FIXED);
}

/* What a checked encoder wrote since at must be the size its record's
 * stream_size_* says (send -n and byte counts rely on it). */
static void size_check(const struct stream_encoder *e, const struct fbuf *out, size_t at,
		       uint64_t want)
{
	if (checked(e) && out->len - at != want)
		BUG("a record's size differs from its stream_size_* function");
}

int stream_encode_begin(struct stream_encoder *e, const struct stream_begin *b,
			struct fbuf *out)
{
	const char *ds = str_or_empty(b->dataset), *snap = str_or_empty(b->snapshot);
	size_t dl = strlen(ds), sl = strlen(snap), at = out->len;
	int r;

	if (checked(e) && (b->features_opt || b->features_req))
		return ferry_err(FERR_INVAL, "record %" PRIu64 " (BEGIN): this encoder writes "
				 "no feature bits", e->index);
	if ((r = len_field(e, "dataset name", dl, UINT16_MAX)) < 0 ||
	    (r = len_field(e, "snapshot name", sl, UINT16_MAX)) < 0 ||
	    (r = len_field(e, "property count", b->nprops, UINT32_MAX)) < 0)
		return r;
	if ((r = start(out, &at)) < 0 ||
	    (r = fbuf_append(out, BEGIN_MAGIC, 8)) < 0 ||
	    (r = fbuf_put_le16(out, version_of(e, b->version))) < 0 ||
	    (r = fbuf_put_le16(out, 0)) < 0 ||
	    (r = fbuf_put_le32(out, b->flags)) < 0 ||
	    (r = fbuf_put_le64(out, b->features_req)) < 0 ||
	    (r = fbuf_put_le64(out, b->features_opt)) < 0 ||
	    (r = fbuf_putc(out, b->ds_type)) < 0 ||
	    (r = fbuf_putc(out, b->root_type)) < 0 ||
	    (r = fbuf_put_le16(out, 0)) < 0 ||
	    (r = fbuf_put_le32(out, (uint32_t)b->nprops)) < 0 ||
	    (r = fbuf_put_le64(out, b->to_guid)) < 0 ||
	    (r = fbuf_put_le64(out, b->from_guid)) < 0 ||
	    (r = fbuf_put_le64(out, b->creation_ns)) < 0 ||
	    (r = fbuf_put_le64(out, b->creation_txg)) < 0 ||
	    (r = fbuf_put_le64(out, b->resume_pos)) < 0 ||
	    (r = fbuf_append(out, b->root_hash, FERRY_HASH_LEN)) < 0 ||
	    (r = fbuf_put_le16(out, (uint16_t)dl)) < 0 ||
	    (r = fbuf_put_le16(out, (uint16_t)sl)) < 0 ||
	    (r = fbuf_put_le32(out, 0)) < 0 ||
	    (r = put_bytes(out, ds, dl)) < 0 || (r = put_bytes(out, snap, sl)) < 0 ||
	    (r = put_props(e, out, b->props, b->nprops)) < 0)
		goto out;
	if ((r = finish(e, STREAM_BEGIN, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_begin(b));
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_node(struct stream_encoder *e, uint8_t type, const void *data, size_t len,
		       struct fbuf *out)
{
	uint8_t h[FERRY_HASH_LEN], pad[3] = {0, 0, 0};
	struct hash_state hs;
	size_t at = out->len;
	int r;

	if (checked(e) && len > STREAM_NODE_MAX)
		return ferry_err(FERR_LIMIT, "record %" PRIu64 " (NODE): %zu node bytes exceed "
				 "maximum %u", e->index, len, STREAM_NODE_MAX);
	hash_init(&hs);
	hash_update(&hs, &type, 1);
	hash_update(&hs, data, len);
	hash_final(&hs, h);
	if ((r = start(out, &at)) < 0 || (r = fbuf_putc(out, type)) < 0 ||
	    (r = fbuf_append(out, pad, sizeof(pad))) < 0 ||
	    (r = fbuf_append(out, h, sizeof(h))) < 0 || (r = fbuf_append(out, data, len)) < 0)
		goto out;
	if ((r = finish(e, STREAM_NODE, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_node(len));
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_write(struct stream_encoder *e, const struct stream_write *w, struct fbuf *out)
{
	size_t at = out->len;
	int r;

	if (checked(e) && w->psize > STREAM_BLOCK_MAX)
		return ferry_err(FERR_LIMIT, "record %" PRIu64 " (WRITE): psize %" PRIu32
				 " exceeds maximum %u", e->index, w->psize, STREAM_BLOCK_MAX);
	if ((r = start(out, &at)) < 0 || (r = fbuf_append(out, w->hash, FERRY_HASH_LEN)) < 0 ||
	    (r = fbuf_put_le32(out, w->lsize)) < 0 || (r = fbuf_putc(out, w->codec)) < 0 ||
	    (r = fbuf_putc(out, w->level)) < 0 || (r = fbuf_put_le16(out, 0)) < 0 ||
	    (r = fbuf_put_le32(out, w->psize)) < 0 || (r = fbuf_put_le32(out, 0)) < 0 ||
	    (r = fbuf_append(out, w->data, w->psize)) < 0)
		goto out;
	if ((r = finish(e, STREAM_WRITE, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_write(w->psize));
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_byref(struct stream_encoder *e, const uint8_t hash[FERRY_HASH_LEN],
			uint32_t lsize, struct fbuf *out)
{
	size_t at = out->len;
	int r;

	if ((r = start(out, &at)) < 0 || (r = fbuf_append(out, hash, FERRY_HASH_LEN)) < 0 ||
	    (r = fbuf_put_le32(out, lsize)) < 0 || (r = fbuf_put_le32(out, 0)) < 0)
		goto out;
	if ((r = finish(e, STREAM_WRITE_BYREF, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_byref());
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_end(struct stream_encoder *e, struct fbuf *out)
{
	size_t at = out->len;
	int r;

	if ((r = start(out, &at)) < 0 ||
	    (r = fbuf_put_le64(out, e->index - e->begin_index)) < 0 ||
	    (r = fbuf_append(out, e->chain, FERRY_HASH_LEN)) < 0)
		goto out;
	if ((r = finish(e, STREAM_END, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_end());
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_package(struct stream_encoder *e, const struct stream_package *p,
			  struct fbuf *out)
{
	const char *top = str_or_empty(p->top), *to = str_or_empty(p->to_snap);
	const char *from = str_or_empty(p->from_snap);
	size_t tl = strlen(top), sl = strlen(to), fl = strlen(from), at = out->len;
	int r;

	if (checked(e) && (p->features_opt || p->features_req))
		return ferry_err(FERR_INVAL, "record %" PRIu64 " (PACKAGE): this encoder writes "
				 "no feature bits", e->index);
	if ((r = len_field(e, "top name", tl, UINT16_MAX)) < 0 ||
	    (r = len_field(e, "to snapshot name", sl, UINT8_MAX)) < 0 ||
	    (r = len_field(e, "from snapshot name", fl, UINT8_MAX)) < 0)
		return r;
	if ((r = start(out, &at)) < 0 || (r = fbuf_append(out, PACKAGE_MAGIC, 8)) < 0 ||
	    (r = fbuf_put_le16(out, version_of(e, p->version))) < 0 ||
	    (r = fbuf_put_le16(out, 0)) < 0 || (r = fbuf_put_le32(out, p->flags)) < 0 ||
	    (r = fbuf_put_le64(out, p->features_req)) < 0 ||
	    (r = fbuf_put_le64(out, p->features_opt)) < 0 ||
	    (r = fbuf_put_le32(out, p->ndatasets)) < 0 ||
	    (r = fbuf_put_le16(out, (uint16_t)tl)) < 0 || (r = fbuf_putc(out, (uint8_t)sl)) < 0 ||
	    (r = fbuf_putc(out, (uint8_t)fl)) < 0 || (r = put_bytes(out, top, tl)) < 0 ||
	    (r = put_bytes(out, to, sl)) < 0 || (r = put_bytes(out, from, fl)) < 0)
		goto out;
	if ((r = finish(e, STREAM_PACKAGE, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_package(p));
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_dataset(struct stream_encoder *e, const struct stream_dataset *d,
			  struct fbuf *out)
{
	const char *name = str_or_empty(d->name);
	size_t nl = strlen(name), at = out->len;
	int r;

	if ((r = len_field(e, "dataset name", nl, UINT16_MAX)) < 0 ||
	    (r = len_field(e, "property count", d->nprops, UINT32_MAX)) < 0 ||
	    (r = len_field(e, "snapshot count", d->nsnaps, UINT32_MAX)) < 0)
		return r;
	if ((r = start(out, &at)) < 0 || (r = fbuf_put_le64(out, d->guid)) < 0 ||
	    (r = fbuf_put_le16(out, (uint16_t)nl)) < 0 || (r = fbuf_putc(out, d->ds_type)) < 0 ||
	    (r = fbuf_putc(out, 0)) < 0 || (r = fbuf_put_le32(out, (uint32_t)d->nprops)) < 0 ||
	    (r = fbuf_put_le32(out, (uint32_t)d->nsnaps)) < 0 || (r = fbuf_put_le32(out, 0)) < 0 ||
	    (r = put_bytes(out, name, nl)) < 0 || (r = put_props(e, out, d->props, d->nprops)) < 0)
		goto out;
	for (size_t i = 0; i < d->nsnaps; i++) {
		const char *sn = str_or_empty(d->snaps[i].name);
		size_t sl = strlen(sn);

		if ((r = len_field(e, "snapshot name", sl, UINT8_MAX)) < 0 ||
		    (r = fbuf_put_le64(out, d->snaps[i].guid)) < 0 ||
		    (r = fbuf_put_le64(out, d->snaps[i].txg)) < 0 ||
		    (r = fbuf_put_le64(out, d->snaps[i].creation_ns)) < 0 ||
		    (r = fbuf_putc(out, (uint8_t)sl)) < 0 || (r = put_bytes(out, sn, sl)) < 0)
			goto out;
	}
	if ((r = finish(e, STREAM_DATASET, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_dataset(d));
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_package_end(struct stream_encoder *e, struct fbuf *out)
{
	size_t at = out->len;
	int r;

	if ((r = start(out, &at)) < 0 || (r = fbuf_put_le64(out, e->index)) < 0 ||
	    (r = fbuf_put_le64(out, e->nsub)) < 0 ||
	    (r = fbuf_append(out, e->chain, FERRY_HASH_LEN)) < 0)
		goto out;
	if ((r = finish(e, STREAM_PACKAGE_END, 0, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_package_end());
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_hint(struct stream_encoder *e, const struct stream_hint *h, struct fbuf *out)
{
	static const uint8_t zero[6];
	size_t at = out->len;
	int r;

	if ((r = start(out, &at)) < 0 || (r = fbuf_put_le64(out, h->size)) < 0 ||
	    (r = fbuf_putc(out, h->tried_codec)) < 0 || (r = fbuf_putc(out, h->tried_level)) < 0 ||
	    (r = fbuf_append(out, zero, sizeof(zero))) < 0)
		goto out;
	if ((r = finish(e, STREAM_HINT, STREAM_RF_SKIPPABLE, out, at)) < 0)
		return r;
	size_check(e, out, at, stream_size_hint());
	return 0;
out:
	rollback(out, at);
	return r;
}

int stream_encode_record(struct stream_encoder *e, const struct stream_record *rec,
			 struct fbuf *out)
{
	switch (rec->type) {
	case STREAM_BEGIN:
		return stream_encode_begin(e, &rec->begin, out);
	case STREAM_END:
		return stream_encode_end(e, out);
	case STREAM_NODE:
		return stream_encode_node(e, rec->node.type, rec->node.data, rec->node.len, out);
	case STREAM_WRITE:
		return stream_encode_write(e, &rec->write, out);
	case STREAM_WRITE_BYREF:
		return stream_encode_byref(e, rec->byref.hash, rec->byref.lsize, out);
	case STREAM_PACKAGE:
		return stream_encode_package(e, &rec->package, out);
	case STREAM_DATASET:
		return stream_encode_dataset(e, &rec->dataset, out);
	case STREAM_PACKAGE_END:
		return stream_encode_package_end(e, out);
	case STREAM_HINT:
		return stream_encode_hint(e, &rec->hint, out);
	}
	return ferry_err(FERR_INVAL, "record %" PRIu64 ": cannot encode record type %u",
			 e->index, (unsigned)rec->type);
}

int stream_encode_raw(struct stream_encoder *e, uint16_t type, uint16_t flags,
		      const void *payload, size_t len, struct fbuf *out)
{
	size_t at = out->len;
	int r;

	if (checked(e))
		return ferry_err(FERR_INVAL, "stream_encode_raw needs an unchecked encoder");
	if ((r = start(out, &at)) < 0 || (r = fbuf_append(out, payload, len)) < 0)
		goto out;
	return finish(e, type, flags, out, at);
out:
	rollback(out, at);
	return r;
}
