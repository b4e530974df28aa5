/* tests/tools/sethint.c — rewrites a stream's HINT (docs/ferry-stream.5,
 * type 9), for the tests of what a receiver makes of a wrong or hostile
 * one; every record is decoded (checked) and encoded again, so the
 * result is a valid stream with a correct chain:
 *
 *   sethint SIZE [CODEC LEVEL] < IN > OUT
 *
 * gives the stream a HINT of size estimate SIZE (any u64) and, when given,
 * tried codec CODEC (its wire number; 0 for none) and LEVEL, else the
 * stream's own tried codec (none if it had no HINT); "none" as SIZE drops
 * the HINT. Exits 0, 1 when IN is no valid stream, 2 on usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

static int usage(void)
{
	fprintf(stderr, "usage: sethint SIZE|none [CODEC LEVEL] < IN > OUT\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct stream_decoder *d = NULL;
	struct stream_encoder *e = NULL;
	struct stream_source_fd src;
	struct stream_sink_fd snk;
	struct stream_record rec;
	struct stream_hint h;
	struct fbuf out;
	int r, drop, codec_given = argc == 4;
	if (argc != 2 && argc != 4)
		return usage();
	memset(&h, 0, sizeof h);
	drop = !strcmp(argv[1], "none");
	if (!drop)
		h.size = strtoull(argv[1], NULL, 0);
	if (codec_given) {
		h.tried_codec = (uint8_t)strtoul(argv[2], NULL, 0);
		h.tried_level = (uint8_t)strtoul(argv[3], NULL, 0);
	}
	if (ferry_lib_init() < 0)
		return 2;
	fbuf_init(&out, (size_t)64 << 20);
	stream_source_fd_init(&src, 0);
	stream_sink_fd_init(&snk, 1);
	if ((r = stream_decoder_new(&d)) < 0 || (r = stream_encoder_new(&e, 0)) < 0)
		goto out;
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
		/* record 1: the old HINT (its codec kept unless given), or the
		 * record our HINT goes before */
		if (rec.index == 1) {
			if (rec.type == STREAM_HINT && !codec_given) {
				h.tried_codec = rec.hint.tried_codec;
				h.tried_level = rec.hint.tried_level;
			}
			if (!drop && (r = stream_encode_hint(e, &h, &out)) < 0)
				break;
		}
		if (rec.type != STREAM_HINT && (r = stream_encode_record(e, &rec, &out)) < 0)
			break;
		if ((r = stream_sink_flush(&snk.base, &out)) < 0)
			break;
	}
out:
	stream_decoder_free(d);
	stream_encoder_free(e);
	fbuf_release(&out);
	if (r < 0) {
		fprintf(stderr, "sethint: %s\n", ferry_errmsg(r));
		return 1;
	}
	return 0;
}
