/* tests/unit/test_hint.c — the HINT record (docs/ferry-stream.5, type 9):
 * encoded and decoded only as record 1 of a single stream or a package,
 * always SKIPPABLE, counted by END but not numbered as a body record; the
 * storage rule's "tried" input (raw, untried, hash still checked); and the
 * progress line's clamping of an estimate that is wrong or hostile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/lib.h"
#include "store/store.h"
#include "stream/stream.h"

static const uint8_t root_bytes[] = {2, 'r', 'o', 'o', 't'};

static void root_hash(uint8_t type, uint8_t out[FERRY_HASH_LEN])
{
	struct hash_state h;
	hash_init(&h);
	hash_update(&h, &type, 1);
	hash_update(&h, root_bytes, sizeof root_bytes);
	hash_final(&h, out);
}

static struct stream_begin begin(void)
{
	struct stream_begin b;
	memset(&b, 0, sizeof b);
	b.ds_type = STREAM_DS_FILESYSTEM;
	b.root_type = 4;
	root_hash(4, b.root_hash);
	b.to_guid = 7;
	b.dataset = "tank/a";
	b.snapshot = "s";
	return b;
}

/* BEGIN, HINT h, one WRITE, the root NODE, END into out. */
static void single(struct fbuf *out, const struct stream_hint *h)
{
	static const uint8_t data[100];
	struct stream_encoder *e;
	struct stream_begin b = begin();
	struct stream_write w;
	memset(&w, 0, sizeof w);
	hash_blake2b(w.hash, data, sizeof data);
	w.lsize = w.psize = sizeof data;
	w.data = data;
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_begin(e, &b, out), 0);
	assert_int_equal(stream_encode_hint(e, h, out), 0);
	assert_int_equal(stream_encode_write(e, &w, out), 0);
	assert_int_equal(stream_encode_node(e, 4, root_bytes, sizeof root_bytes, out), 0);
	assert_int_equal(stream_encode_end(e, out), 0);
	stream_encoder_free(e);
}

static void test_roundtrip(void **state)
{
	struct stream_hint h = {UINT64_MAX, STREAM_CODEC_GZIP, 7};
	struct stream_decoder *d;
	struct stream_source_mem src;
	struct stream_record rec;
	struct fbuf s;
	int r, n = 0, hints = 0;
	fbuf_init(&s, 1 << 20);
	single(&s, &h);
	/* the header says SKIPPABLE, so that readers from before it skip it */
	size_t at = (size_t)stream_size_begin(&(struct stream_begin){.dataset = "tank/a",
								      .snapshot = "s"});
	assert_int_equal(get_le16(s.data + at), STREAM_HINT);
	assert_int_equal(get_le16(s.data + at + 2), STREAM_RF_SKIPPABLE);
	assert_int_equal(get_le32(s.data + at + 4), 16);
	assert_int_equal(stream_decoder_new(&d), 0);
	stream_source_mem_init(&src, s.data, s.len, 3);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1) {
		if (rec.type == STREAM_HINT) {
			hints++;
			assert_int_equal(rec.index, 1);
			assert_int_equal(rec.seq, 0);
			assert_true(rec.hint.size == UINT64_MAX);
			assert_int_equal(rec.hint.tried_codec, STREAM_CODEC_GZIP);
			assert_int_equal(rec.hint.tried_level, 7);
		}
		if (rec.type == STREAM_WRITE)
			assert_int_equal(rec.seq, 1); /* not numbered after the HINT */
		if (rec.type == STREAM_END)
			assert_int_equal(rec.end.count, 4); /* BEGIN, HINT, WRITE, NODE */
		n++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 5);
	assert_int_equal(hints, 1);
	assert_int_equal(stream_decoder_skipped(d), 0);
	stream_decoder_free(d);
	fbuf_release(&s);
}

static void test_encoder_refuses(void **state)
{
	struct stream_encoder *e;
	struct stream_begin b = begin();
	struct stream_hint ok = {0, 0, 0}, bad[] = {{0, 0, 1}, {0, 2, 0}, {0, 2, 10}, {0, 1, 1},
						    {0, 4, 0}};
	struct fbuf s;
	fbuf_init(&s, 1 << 20);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	/* not first */
	assert_int_equal(stream_encode_hint(e, &ok, &s), -FERR_INVAL);
	assert_int_equal(s.len, 0);
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		size_t len = s.len;
		assert_int_equal(stream_encode_hint(e, &bad[i], &s), -FERR_INVAL);
		assert_int_equal(s.len, len);
	}
	assert_int_equal(stream_encode_hint(e, &ok, &s), 0);
	/* once */
	assert_int_equal(stream_encode_hint(e, &ok, &s), -FERR_INVAL);
	assert_int_equal(stream_encode_node(e, 4, root_bytes, sizeof root_bytes, &s), 0);
	assert_int_equal(stream_encode_hint(e, &ok, &s), -FERR_INVAL);
	assert_int_equal(stream_encode_end(e, &s), 0);
	stream_encoder_free(e);
	fbuf_release(&s);
}

/* A package: the HINT after PACKAGE, before the DATASETs, and nowhere else. */
static void test_package(void **state)
{
	struct stream_encoder *e;
	struct stream_package k = {.flags = STREAM_F_REPLICATE | STREAM_F_PROPS, .ndatasets = 1,
				   .top = "tank/a", .to_snap = "s", .from_snap = ""};
	struct stream_dataset ds = {1, STREAM_DS_FILESYSTEM, "tank/a", NULL, 0, NULL, 0};
	struct stream_hint h = {123, STREAM_CODEC_LZ4, 0};
	struct stream_begin b = begin();
	struct stream_decoder *d;
	struct stream_source_mem src;
	struct stream_record rec;
	struct fbuf s;
	int r, hints = 0;
	fbuf_init(&s, 1 << 20);
	assert_int_equal(stream_encoder_new(&e, 0), 0);
	assert_int_equal(stream_encode_package(e, &k, &s), 0);
	assert_int_equal(stream_encode_hint(e, &h, &s), 0);
	assert_int_equal(stream_encode_dataset(e, &ds, &s), 0);
	b.flags = k.flags;
	assert_int_equal(stream_encode_begin(e, &b, &s), 0);
	assert_int_equal(stream_encode_hint(e, &h, &s), -FERR_INVAL); /* in a substream */
	assert_int_equal(stream_encode_node(e, 4, root_bytes, sizeof root_bytes, &s), 0);
	assert_int_equal(stream_encode_end(e, &s), 0);
	assert_int_equal(stream_encode_package_end(e, &s), 0);
	stream_encoder_free(e);
	assert_int_equal(stream_decoder_new(&d), 0);
	stream_source_mem_init(&src, s.data, s.len, 0);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) == 1)
		if (rec.type == STREAM_HINT) {
			hints++;
			assert_int_equal(rec.index, 1);
			assert_true(rec.hint.size == 123);
		}
	assert_int_equal(r, 0);
	assert_int_equal(hints, 1);
	stream_decoder_free(d);
	fbuf_release(&s);
}

/* The rule's tried input: raw without a try, but never unchecked. */
static void test_rule_tried(void **state)
{
	static uint8_t text[65536], enc[2 * 65536];
	struct store_block b;
	uint8_t h[FERRY_HASH_LEN];
	const struct codec_spec gz7 = {CODEC_GZIP, 7};
	for (size_t i = 0; i < sizeof text; i++)
		text[i] = (uint8_t)"compressible "[i % 13];
	hash_blake2b(h, text, sizeof text);
	struct store_block_in in = {.codec = {CODEC_OFF, 0}, .payload = text, .psize = sizeof text,
				    .lsize = sizeof text, .hash = h};
	struct store_block_bufs bufs = {NULL, 0, enc, sizeof enc};
	/* untried: gzip-7 compresses it */
	assert_int_equal(store_block_rule(&in, gz7, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.how, STORE_BLOCK_ENCODE);
	assert_int_equal(b.codec.id, CODEC_GZIP);
	/* a (lying) claim that it was tried: stored raw, the content as it came */
	in.tried = 1;
	assert_int_equal(store_block_rule(&in, gz7, STORE_ZERO_ENCODE, &bufs, &b), 0);
	assert_int_equal(b.how, STORE_BLOCK_TRIED);
	assert_int_equal(b.codec.id, CODEC_OFF);
	assert_int_equal(b.form, BLOCK_RAW);
	assert_int_equal(b.psize, sizeof text);
	assert_ptr_equal(b.payload, text);
	assert_memory_equal(b.hash, h, FERRY_HASH_LEN);
	/* and the hash is checked all the same */
	h[0] ^= 1;
	assert_int_equal(store_block_rule(&in, gz7, STORE_ZERO_ENCODE, &bufs, &b), -FERR_CORRUPT);
	ferry_err_clear();
}

static void line(uint64_t total, uint64_t bytes, char *buf, size_t n)
{
	struct progress p;
	progress_init(&p, "bk/a", total, 1000000000ull);
	/* 1 byte a second over 10 s: a slow rate with a huge total left */
	progress_update(&p, bytes, 0, 11000000000ull);
	progress_format(&p, buf, n);
}

static void test_progress_clamp(void **state)
{
	char buf[256];
	/* the estimate was short: 100 %, the bytes done as the total */
	line(1000, 5000, buf, sizeof buf);
	assert_non_null(strstr(buf, "4.88K of 4.88K (100%)"));
	assert_non_null(strstr(buf, "ETA 0s"));
	/* hostile: 2^64-1 */
	line(UINT64_MAX, 10, buf, sizeof buf);
	assert_non_null(strstr(buf, "(0%)"));
	assert_non_null(strstr(buf, "ETA >99h"));
	/* long: a percentage below 100 and a real ETA */
	line(20, 10, buf, sizeof buf);
	assert_non_null(strstr(buf, "10B of 20B (50%)"));
	assert_null(strstr(buf, "ETA --"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_encoder_refuses),
		cmocka_unit_test(test_package),
		cmocka_unit_test(test_rule_tried),
		cmocka_unit_test(test_progress_clamp),
	};
	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
