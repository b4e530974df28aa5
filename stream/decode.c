/* stream/decode.c — the decoder: a state machine fed byte chunks of any
 * size. It keeps at most one payload (bounded by the header check, done
 * before anything is allocated) and the parsed copy of the last BEGIN or
 * DATASET. The running hash of a record absorbs bytes as they arrive, so
 * skippable records are verified without being buffered; in version 2 the
 * data of a WRITE or NODE goes through CRC-32C instead (stream_chain_prefix).
 * The first record, always buffered, is chained once its version is known. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum dstate { D_HEADER, D_PAYLOAD, D_TRAILER, D_DONE, D_FAILED };

struct stream_decoder {
	enum dstate state;
	int err; /* sticky, with msg */
	int verify; /* STREAM_VERIFY_* */
	char msg[512];
	uint8_t hdr[STREAM_HDR_LEN];
	size_t hdr_have;
	uint16_t type;
	uint32_t len;
	int skip;
	size_t pay_have;
	/* the payload when it is whole in the chunk being fed (pull only):
	 * borrowed, not copied into pay */
	const uint8_t *pay_at;
	int borrow;
	uint8_t trl[STREAM_TRAILER_LEN];
	size_t trl_have;
	struct fbuf pay;
	struct fbuf aux;
	struct hash_state h;            /* S(i-1) || header || payload so far */
	size_t pfx;                     /* payload bytes hashed as they are */
	uint32_t crc;                   /* CRC-32C of the payload past pfx */
	unsigned version;               /* of record 0; 0 until it is in */
	uint8_t chain[FERRY_HASH_LEN];  /* S(i-1) */
	uint64_t index;                 /* of the record in progress */
	uint64_t offset;                /* of its header */
	uint64_t bytes;                 /* consumed */
	uint64_t skipped;
	unsigned last_type;             /* of the last complete record */
	struct stream_grammar g;
	/* stream_decoder_pull's input chunk */
	uint8_t *in;
	size_t in_len, in_off;
};

int stream_decoder_new(struct stream_decoder **out)
{
	struct stream_decoder *d;

	if (!(d = calloc(1, sizeof(*d))))
		return ferry_err(FERR_NOMEM, "stream decoder: out of memory");
	d->state = D_HEADER;
	d->verify = STREAM_VERIFY_NODES | STREAM_VERIFY_BLOCKS;
	fbuf_init(&d->pay, STREAM_PAYLOAD_MAX);
	fbuf_init(&d->aux, AUX_MAX);
	stream_grammar_init(&d->g);
	*out = d;
	return 0;
}

void stream_decoder_defer_block_hashes(struct stream_decoder *d)
{
	d->verify &= ~STREAM_VERIFY_BLOCKS;
}

void stream_decoder_free(struct stream_decoder *d)
{
	if (!d)
		return;
	fbuf_release(&d->pay);
	fbuf_release(&d->aux);
	free(d->in);
	free(d);
}

uint64_t stream_decoder_bytes(const struct stream_decoder *d)
{
	return d->bytes;
}

uint64_t stream_decoder_records(const struct stream_decoder *d)
{
	return d->index;
}

uint64_t stream_decoder_skipped(const struct stream_decoder *d)
{
	return d->skipped;
}

size_t stream_decoder_footprint(const struct stream_decoder *d)
{
	return (d->pay.data ? d->pay.cap + 1 : 0) + (d->aux.data ? d->aux.cap + 1 : 0) +
	       (d->in ? STREAM_PULL_CHUNK : 0);
}

/* Makes the error sticky: later calls repeat code and message. */
static int fail(struct stream_decoder *d, int r)
{
	const char *m = ferry_errmsg(r);
	size_t n = strlen(m);

	if (n >= sizeof(d->msg))
		n = sizeof(d->msg) - 1;
	memcpy(d->msg, m, n);
	d->msg[n] = '\0';
	d->err = r;
	d->state = D_FAILED;
	return r;
}

static int failed(const struct stream_decoder *d)
{
	return ferry_err(d->err, "%s", d->msg);
}

static struct vctx ctx(const struct stream_decoder *d)
{
	struct vctx c = {.index = d->index, .type = d->type, .bad = FERR_CORRUPT};
	return c;
}

static int on_header(struct stream_decoder *d)
{
	struct vctx c;
	int r;

	d->type = get_le16(d->hdr);
	d->len = get_le32(d->hdr + 4);
	c = ctx(d);
	if ((r = stream_check_header(&c, d->type, get_le16(d->hdr + 2), d->len, &d->skip)) < 0)
		return r;
	if (d->index > 0) { /* record 0 is chained in on_record */
		hash_init(&d->h);
		hash_update(&d->h, d->chain, FERRY_HASH_LEN);
		hash_update(&d->h, d->hdr, STREAM_HDR_LEN);
	}
	d->pfx = stream_chain_prefix(d->version, d->type);
	d->crc = 0;
	fbuf_reset(&d->pay);
	d->pay_have = 0;
	d->pay_at = NULL;
	d->trl_have = 0;
	d->state = d->len ? D_PAYLOAD : D_TRAILER;
	return 0;
}

/* A whole record is in: verify and parse it. Returns 1 with *rec filled,
 * 0 for a skipped record, or an error. */
static int on_record(struct stream_decoder *d, struct stream_record *rec)
{
	struct vctx c = ctx(d);
	uint8_t s[FERRY_HASH_LEN];
	const uint8_t *digest = NULL, *pay = d->pay_at ? d->pay_at : d->pay.data;
	int r;

	if (d->index == 0) {
		if ((r = stream_check_first(&c, pay, d->len)) < 0)
			return r;
		d->version = get_le16(pay + 8);
		stream_chain_iv(d->version, d->chain);
		stream_chain_record(d->version, d->chain, d->hdr, pay, d->len, s);
	} else {
		if (d->pfx < d->len) {
			uint8_t crc[4];
			put_le32(crc, d->crc);
			hash_update(&d->h, crc, sizeof(crc));
		}
		hash_final(&d->h, s);
	}
	if (memcmp(s, d->trl, STREAM_TRAILER_LEN) != 0)
		return vfail(&c, 0, "trailer mismatch: the record is damaged, out of order, "
			     "or from another stream");
	if (!d->skip) {
		if ((r = stream_parse(&c, pay, d->len, d->verify, &d->aux, rec)) < 0)
			return r;
		if (rec->type == STREAM_WRITE && d->index > 0 && d->pfx == WRITE_FIXED &&
		    d->pfx < d->len) {
			/* the CRC the trailer was just checked with is of
			 * exactly the block's bytes (payload past the fixed
			 * part, parse_write: psize of them) */
			rec->write.data_crc = d->crc;
			rec->write.has_crc = 1;
		}
		if (rec->type == STREAM_BEGIN && rec->begin.version != d->version)
			return vfail(&c, 0, "format version %u inside a version %u stream",
				     (unsigned)rec->begin.version, d->version);
		if ((r = stream_grammar_step(&d->g, &c, rec)) < 0)
			return r;
		if (rec->type == STREAM_END)
			digest = rec->end.digest;
		else if (rec->type == STREAM_PACKAGE_END)
			digest = rec->package_end.digest;
		if (digest && memcmp(digest, d->chain, FERRY_HASH_LEN) != 0)
			return vfail(&c, 0, "chain digest does not match the records before it");
		rec->index = d->index;
		rec->offset = d->offset;
	} else {
		d->skipped++;
	}
	memcpy(d->chain, s, FERRY_HASH_LEN);
	d->last_type = d->type;
	d->index++;
	d->offset += STREAM_HDR_LEN + (uint64_t)d->len + STREAM_TRAILER_LEN;
	d->state = stream_grammar_done(&d->g) ? D_DONE : D_HEADER;
	d->hdr_have = 0;
	return !d->skip;
}

int stream_decoder_feed(struct stream_decoder *d, const void *in, size_t n, size_t *used,
			struct stream_record *rec)
{
	const uint8_t *p = in;
	size_t i = 0, take;
	int r = 0;

	if (d->state == D_FAILED)
		return failed(d);
	while (i < n) {
		switch (d->state) {
		case D_HEADER:
			take = STREAM_HDR_LEN - d->hdr_have;
			if (take > n - i)
				take = n - i;
			memcpy(d->hdr + d->hdr_have, p + i, take);
			d->hdr_have += take;
			i += take;
			d->bytes += take;
			if (d->hdr_have == STREAM_HDR_LEN && (r = on_header(d)) < 0)
				goto out;
			break;
		case D_PAYLOAD:
			take = d->len - d->pay_have;
			if (take > n - i)
				take = n - i;
			if (d->index == 0) {
				/* buffered whole: chained in on_record */
			} else if (d->pay_have >= d->pfx) {
				d->crc = crc32c_update(d->crc, p + i, take);
			} else if (take <= d->pfx - d->pay_have) {
				hash_update(&d->h, p + i, take);
			} else {
				size_t a = d->pfx - d->pay_have;
				hash_update(&d->h, p + i, a);
				d->crc = crc32c_update(d->crc, p + i + a, take - a);
			}
			/* a payload whole in pull's chunk is borrowed from it */
			if (!d->skip && d->borrow && d->pay_have == 0 && take == d->len)
				d->pay_at = p + i;
			else if (!d->skip && (r = fbuf_append(&d->pay, p + i, take)) < 0)
				goto out;
			d->pay_have += take;
			i += take;
			d->bytes += take;
			if (d->pay_have == d->len)
				d->state = D_TRAILER;
			break;
		case D_TRAILER:
			take = STREAM_TRAILER_LEN - d->trl_have;
			if (take > n - i)
				take = n - i;
			memcpy(d->trl + d->trl_have, p + i, take);
			d->trl_have += take;
			i += take;
			d->bytes += take;
			if (d->trl_have < STREAM_TRAILER_LEN)
				break;
			if ((r = on_record(d, rec)) < 0)
				goto out;
			if (r == 1) {
				*used = i;
				return 1;
			}
			break;
		case D_DONE:
			r = ferry_err(FERR_CORRUPT, "trailing data at byte %" PRIu64 ", after the "
				      "final %s (record %" PRIu64 ")", d->bytes,
				      stream_type_name(d->last_type), d->index - 1);
			goto out;
		case D_FAILED:
			return failed(d);
		}
	}
	*used = i;
	return 0;
out:
	return fail(d, r);
}

/* "NODE", or "type 300" for a skippable type this reader does not know. */
static const char *tname(unsigned type, char *buf, size_t n)
{
	const char *s = stream_type_name(type);

	if (strcmp(s, "UNKNOWN") != 0)
		return s;
	snprintf(buf, n, "type %u", type);
	return buf;
}

int stream_decoder_finish(struct stream_decoder *d)
{
	char b1[16], b2[16];
	const char *tn = tname(d->type, b1, sizeof(b1));
	int r;

	switch (d->state) {
	case D_DONE:
		return 0;
	case D_FAILED:
		return failed(d);
	case D_HEADER:
		if (d->index == 0 && d->hdr_have == 0)
			r = ferry_err(FERR_TRUNCATED, "empty stream");
		else if (d->hdr_have == 0)
			r = ferry_err(FERR_TRUNCATED, "stream truncated after record %" PRIu64
				      " (%s): %s missing", d->index - 1,
				      tname(d->last_type, b2, sizeof(b2)),
				      (d->g.in_pkg && d->g.state != G_BODY) ? "PACKAGE_END" : "END");
		else
			r = ferry_err(FERR_TRUNCATED, "stream truncated in record %" PRIu64
				      ": %zu of %u header bytes", d->index, d->hdr_have,
				      STREAM_HDR_LEN);
		break;
	case D_PAYLOAD:
		r = ferry_err(FERR_TRUNCATED, "stream truncated in record %" PRIu64 " (%s): %zu of %"
			      PRIu32 " payload bytes", d->index, tn, d->pay_have, d->len);
		break;
	case D_TRAILER:
	default:
		r = ferry_err(FERR_TRUNCATED, "stream truncated in record %" PRIu64 " (%s): %zu of %u "
			      "trailer bytes", d->index, tn, d->trl_have, STREAM_TRAILER_LEN);
		break;
	}
	return fail(d, r);
}

/* The length of the record whose first have (< its whole) bytes are at
 * p, or of its header while that is not whole: how much of it pull wants
 * in the chunk at once. Only a hint; the decoder checks the header. */
static size_t record_want(const uint8_t *p, size_t have)
{
	if (have < STREAM_HDR_LEN)
		return STREAM_HDR_LEN;
	return STREAM_HDR_LEN + (size_t)get_le32(p + 4) + STREAM_TRAILER_LEN;
}

int stream_decoder_pull(struct stream_decoder *d, struct stream_source *src,
			struct stream_record *rec)
{
	size_t used, got;
	int r;

	if (d->state == D_FAILED)
		return failed(d);
	if (!d->in && !(d->in = malloc(STREAM_PULL_CHUNK)))
		return fail(d, ferry_err(FERR_NOMEM, "stream decoder: out of memory"));
	for (;;) {
		size_t have = d->in_len - d->in_off;
		/* Between records, a record that would fit the chunk but is
		 * not whole in it yet: its start moves to the chunk's front
		 * (when the room after it is too small) and the source is
		 * read for the rest, so its payload is borrowed, not copied.
		 * A read happens only for the record in progress, as before:
		 * no more is asked of the source than it needs. */
		if (d->state == D_HEADER && d->hdr_have == 0) {
			size_t want = record_want(d->in + d->in_off, have);
			if (have < want && want <= STREAM_PULL_CHUNK) {
				if (d->in_off + want > STREAM_PULL_CHUNK) {
					memmove(d->in, d->in + d->in_off, have);
					d->in_off = 0;
					d->in_len = have;
				}
				if ((r = stream_source_read(src, d->in + d->in_len,
							    STREAM_PULL_CHUNK - d->in_len, &got)) < 0)
					return fail(d, r);
				d->in_len += got;
				if (got)
					continue;
				if (!have)
					return stream_decoder_finish(d);
				/* the end of input inside the record: fed, then
				 * finished below */
			}
		}
		if (d->in_off < d->in_len) {
			d->borrow = 1;
			r = stream_decoder_feed(d, d->in + d->in_off, d->in_len - d->in_off, &used,
						rec);
			d->borrow = 0;
			if (r < 0)
				return r;
			d->in_off += used;
			if (r == 1)
				return 1;
			continue;
		}
		if ((r = stream_source_read(src, d->in, STREAM_PULL_CHUNK, &got)) < 0)
			return fail(d, r);
		d->in_off = 0;
		d->in_len = got;
		if (got == 0)
			return stream_decoder_finish(d);
	}
}
