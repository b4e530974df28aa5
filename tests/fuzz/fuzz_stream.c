/* tests/fuzz/fuzz_stream.c — libFuzzer target for the stream decoder.
 *
 * The input is fed in chunks whose sizes come from a generator seeded by
 * the input itself (so a crash replays exactly), through stream_decoder_feed
 * or stream_decoder_pull, until an error or the end. Beyond "no crash, no
 * leak, no UB", two oracles:
 *  - every record the decoder accepts is re-encoded by a checked encoder,
 *    which must accept it too and write the very same bytes;
 *  - the decoder never holds more than STREAM_DECODER_MEM_MAX.
 * Random bytes cannot carry valid BLAKE2b trailers, so in two runs of
 * three the harness first re-frames the input (records with trailers, as
 * the seeds are) with correct trailers and END/PACKAGE_END digests: then
 * mutations reach the field and grammar checks behind the chain.
 * Short inputs are also tried as resume tokens: one that decodes must
 * encode back to the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Reads every string and array a decoded record points to, so ASan sees
 * any pointer that escapes the decoder's buffers. */
static size_t touch(const struct stream_record *rec)
{
	size_t n = 0;

	switch (rec->type) {
	case STREAM_BEGIN:
		n += strlen(rec->begin.dataset) + strlen(rec->begin.snapshot);
		for (size_t i = 0; i < rec->begin.nprops; i++)
			n += strlen(rec->begin.props[i].name) + strlen(rec->begin.props[i].value);
		break;
	case STREAM_PACKAGE:
		n += strlen(rec->package.top) + strlen(rec->package.to_snap) +
		     strlen(rec->package.from_snap);
		break;
	case STREAM_DATASET:
		n += strlen(rec->dataset.name);
		for (size_t i = 0; i < rec->dataset.nprops; i++)
			n += strlen(rec->dataset.props[i].name) + strlen(rec->dataset.props[i].value);
		for (size_t i = 0; i < rec->dataset.nsnaps; i++)
			n += strlen(rec->dataset.snaps[i].name);
		break;
	case STREAM_NODE:
		for (size_t i = 0; i < rec->node.len; i += 4096)
			n += rec->node.data[i];
		if (rec->node.len)
			n += rec->node.data[rec->node.len - 1];
		break;
	case STREAM_WRITE:
		n += rec->write.data[0] + rec->write.data[rec->write.psize - 1];
		break;
	default:
		break;
	}
	return n;
}

/* Re-encodes rec; returns 0 when the bytes may be compared. */
/* The encoder writes the format version of the stream it re-encodes:
 * made again for version 1 when the first record says so. */
static void match_version(struct stream_encoder **e, const struct stream_record *rec)
{
	unsigned v = rec->type == STREAM_BEGIN ? rec->begin.version
		     : rec->type == STREAM_PACKAGE ? rec->package.version : 0;
	if (rec->index != 0 || v != 1)
		return;
	stream_encoder_free(*e);
	if (stream_encoder_new(e, STREAM_ENC_V1) < 0)
		abort();
}

static int reencode(struct stream_encoder *e, const struct stream_record *rec, struct fbuf *out)
{
	struct stream_record copy = *rec;
	int exact = 1;

	/* A checked encoder writes no feature bits; the decoder accepts unknown
	 * optional ones. */
	if (rec->type == STREAM_BEGIN && rec->begin.features_opt) {
		copy.begin.features_opt = 0;
		exact = 0;
	}
	if (rec->type == STREAM_PACKAGE && rec->package.features_opt) {
		copy.package.features_opt = 0;
		exact = 0;
	}
	if (stream_encode_record(e, &copy, out) < 0)
		abort(); /* the decoder took what the encoder refuses */
	return exact ? 0 : -1;
}

/* Frames data's records again with a correct chain; a record running past
 * the end is copied as is (a truncation). */
static void rechain(const uint8_t *data, size_t size, struct fbuf *out)
{
	struct stream_encoder *e;
	size_t off = 0, t;
	int r;

	if (stream_encoder_new(&e, STREAM_ENC_UNCHECKED) < 0)
		abort();
	while (size - off >= STREAM_HDR_LEN) {
		uint16_t type = get_le16(data + off), flags = get_le16(data + off + 2);
		uint32_t len = get_le32(data + off + 4);

		if (len > size - off - STREAM_HDR_LEN)
			break;
		if (type == STREAM_END && !flags && len == 40)
			r = stream_encode_end(e, out);
		else if (type == STREAM_PACKAGE_END && !flags && len == 48)
			r = stream_encode_package_end(e, out);
		else
			r = stream_encode_raw(e, type, flags, data + off + STREAM_HDR_LEN, len, out);
		if (r < 0)
			abort();
		off += STREAM_HDR_LEN + len;
		t = size - off < STREAM_TRAILER_LEN ? size - off : STREAM_TRAILER_LEN;
		off += t;
	}
	if (fbuf_append(out, data + off, size - off) < 0)
		abort();
	stream_encoder_free(e);
}

static void try_token(const uint8_t *data, size_t size)
{
	char s[700], back[STREAM_TOKEN_MAX];
	struct stream_token t;

	if (size >= sizeof(s))
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	if (stream_token_decode(s, &t) < 0)
		return;
	if (stream_token_encode(&t, back, sizeof(back)) < 0 || strcmp(back, s) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct stream_decoder *d = NULL;
	struct stream_encoder *e = NULL;
	struct stream_source_mem src;
	struct stream_record rec;
	struct fbuf re, framed;
	const uint8_t *in = data;
	uint64_t x = 0xcbf29ce484222325ull;
	size_t off = 0, used, maxchunk;
	int r = 0, exact = 1, pull;

	if (!ready) {
		if (ferry_lib_init() < 0)
			abort();
		ready = 1;
	}
	for (size_t i = 0; i < size; i++)
		x = (x ^ data[i]) * 0x100000001b3ull;
	x |= 1;
	maxchunk = (size_t)1 << (next(&x) % 14);
	pull = next(&x) % 4 == 0;
	fbuf_init(&re, 2 * STREAM_DECODER_MEM_MAX);
	fbuf_init(&framed, 2 * STREAM_DECODER_MEM_MAX);
	if (stream_decoder_new(&d) < 0 || stream_encoder_new(&e, 0) < 0)
		abort();
	if (next(&x) % 3) {
		try_token(data, size);
		rechain(data, size, &framed);
		in = framed.data;
		size = framed.len;
	}

	if (pull) {
		stream_source_mem_init(&src, in, size, 1 + next(&x) % maxchunk);
		while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
			touch(&rec);
			match_version(&e, &rec);
			if (reencode(e, &rec, &re) < 0)
				exact = 0;
			if (stream_decoder_footprint(d) > STREAM_DECODER_MEM_MAX)
				abort();
		}
	} else {
		while (off < size && r >= 0) {
			size_t k = 1 + next(&x) % maxchunk, done = 0;
			if (k > size - off)
				k = size - off;
			while (done < k) {
				r = stream_decoder_feed(d, in + off + done, k - done, &used, &rec);
				if (r < 0)
					break;
				done += used;
				if (r == 1) {
					touch(&rec);
					match_version(&e, &rec);
					if (reencode(e, &rec, &re) < 0)
						exact = 0;
				}
			}
			if (stream_decoder_footprint(d) > STREAM_DECODER_MEM_MAX)
				abort();
			off += k;
		}
		if (r >= 0)
			r = stream_decoder_finish(d);
	}
	/* What was accepted is exactly what the encoder writes for it. */
	if (exact && !stream_decoder_skipped(d)) {
		if (re.len > size || (re.len && memcmp(re.data, in, re.len) != 0))
			abort();
		if (r == 0 && re.len != size)
			abort();
	}
	if (r == 0 && !stream_encoder_done(e) && !stream_decoder_skipped(d))
		abort();
	stream_decoder_free(d);
	stream_encoder_free(e);
	fbuf_release(&re);
	if (in == data)
		try_token(data, size);
	fbuf_release(&framed);
	return 0;
}
