/* tests/fuzz/fuzz_recv.c — libFuzzer target for the whole receive path:
 * bytes → recv_run into a throwaway pool in a temp directory (made once
 * per process, removed at exit).
 *
 * Random bytes cannot carry valid BLAKE2b trailers, node hashes or block
 * hashes, so unless the input's first byte is odd the harness first
 * re-frames it: each record gets a correct trailer, END/PACKAGE_END their
 * counts and digests, each NODE the hash of its (mutated) bytes and each
 * codec-off WRITE the hash of its data. Mutations then reach the node
 * decoders, the reference checks, the receive rule and the END walk.
 * Oracles: no crash, no sanitizer report, and nothing written outside the
 * pool's directory (the temp dir holds only the pool and FERRY_HOME). */
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recv/recv.h"
#include "tests/fuzz/fuzz_pool.h"
#include "store/store.h"
#include "stream/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long serial;

/* Re-frames the records of data with correct trailers and hashes. */
static void rechain(const uint8_t *data, size_t size, struct fbuf *out)
{
	struct stream_encoder *e;
	struct fbuf pl;
	size_t off = 0, t;
	int r;
	if (stream_encoder_new(&e, STREAM_ENC_UNCHECKED) < 0)
		abort();
	fbuf_init(&pl, STREAM_PAYLOAD_MAX + 64);
	while (size - off >= STREAM_HDR_LEN) {
		uint16_t type = get_le16(data + off), flags = get_le16(data + off + 2);
		uint32_t len = get_le32(data + off + 4);
		if (len > size - off - STREAM_HDR_LEN)
			break;
		const uint8_t *p = data + off + STREAM_HDR_LEN;
		fbuf_reset(&pl);
		if (fbuf_append(&pl, p, len) < 0)
			abort();
		if (type == STREAM_NODE && len >= 36) {
			node_hash(pl.data[0], pl.data + 36, len - 36, pl.data + 4);
		} else if (type == STREAM_WRITE && len >= 48 && pl.data[36] == 0) {
			hash_blake2b(pl.data, pl.data + 48, len - 48);
		}
		if (type == STREAM_END && !flags && len == 40)
			r = stream_encode_end(e, out);
		else if (type == STREAM_PACKAGE_END && !flags && len == 48)
			r = stream_encode_package_end(e, out);
		else
			r = stream_encode_raw(e, type, flags, pl.data, len, out);
		if (r < 0)
			abort();
		off += STREAM_HDR_LEN + len;
		t = size - off < STREAM_TRAILER_LEN ? size - off : STREAM_TRAILER_LEN;
		off += t;
	}
	if (fbuf_append(out, data + off, size - off) < 0)
		abort();
	fbuf_release(&pl);
	stream_encoder_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream_source_mem src;
	struct recv_opts o;
	struct fbuf framed;
	char target[64];
	if (!fuzz_pool)
		fuzz_pool_setup("recv", "gzip-1");
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	data++;
	size--;
	fbuf_init(&framed, (size_t)64 << 20);
	const uint8_t *in = data;
	size_t n = size;
	if (!(mode & 1)) {
		rechain(data, size, &framed);
		in = framed.data;
		n = framed.len;
	}
	memset(&o, 0, sizeof o);
	o.threads = 1;
	if (mode & 2)
		o.flags |= RECV_DRYRUN;
	if (mode & 4) {
		o.flags |= RECV_DISCARD;
		snprintf(target, sizeof target, "fz");
	} else {
		snprintf(target, sizeof target, "fz/t%lu", serial++);
	}
	stream_source_mem_init(&src, in, n, 1 + (mode >> 3) * 4099);
	int r = recv_run(fuzz_pool, target, &src.base, &o, NULL);
	if (getenv("FUZZ_RECV_VERBOSE"))
		fprintf(stderr, "%s: %s\n", target, r < 0 ? ferry_errmsg(r) : "received");
	ferry_err_clear();
	fbuf_release(&framed);
	return 0;
}
