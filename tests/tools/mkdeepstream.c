/* tests/tools/mkdeepstream.c — writes a valid ferry stream of a deep tree
 * to standard output, for the depth tests of recv, send, diff and restore:
 *
 *   mkdeepstream DEPTH [DATASET@SNAP [VARIANT [incremental]]]
 *
 * The tree is a chain of DEPTH directories named "d" below the root
 * directory (the deepest at level DEPTH), each also holding a small file
 * "f" whose content names its level (and VARIANT, in the deepest one),
 * and every 1000th level a symlink. With "incremental", the stream is one
 * from the snapshot the stream without VARIANT makes (its guid) to this
 * tree, carrying every node: two snapshots of one dataset for diff.
 * Nodes go out children first, as send writes them. Exits 0, or 1 with a
 * message on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "stream/stream.h"

static void die(const char *what, int r)
{
	fprintf(stderr, "mkdeepstream: %s: %s\n", what, r < 0 ? ferry_errmsg(r) : "failed");
	exit(1);
}

static struct stream_encoder *enc;
static struct fbuf out;
static struct stream_sink_fd sink;

static void flush(int force)
{
	int r;
	if ((force || out.len > (1u << 20)) && (r = stream_sink_flush(&sink.base, &out)) < 0)
		die("writing", r);
}

static void put_node(int type, const struct fbuf *b, uint8_t hash[FERRY_HASH_LEN])
{
	int r;
	node_hash(type, b->data, b->len, hash);
	if ((r = stream_encode_node(enc, (uint8_t)type, b->data, b->len, &out)) < 0)
		die("node", r);
	flush(0);
}

static struct node_entry entry(const char *name, int ftype)
{
	struct node_entry e;
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)name;
	e.name_len = strlen(name);
	e.ftype = (uint8_t)ftype;
	e.mode = ftype == NODE_F_DIR ? 0755 : ftype == NODE_F_SYMLINK ? 0777 : 0644;
	e.mtime_sec = 1700000000;
	return e;
}

int main(int argc, char **argv)
{
	struct fbuf b;
	struct stream_begin bg;
	uint8_t child[FERRY_HASH_LEN], bh[FERRY_HASH_LEN], leaf[FERRY_HASH_LEN];
	char name[STREAM_NAME_MAX + 1] = "deep/fs@s";
	int r;
	if (argc < 2 || argc > 5 || (argc == 5 && strcmp(argv[4], "incremental")))
		die("usage: mkdeepstream DEPTH [DATASET@SNAP [VARIANT [incremental]]]", 0);
	const char *variant = argc >= 4 ? argv[3] : "";
	int incremental = argc == 5;
	long depth = strtol(argv[1], NULL, 10);
	if (depth < 0 || depth > 1000000)
		die("DEPTH out of range", 0);
	if (argc >= 3)
		snprintf(name, sizeof name, "%s", argv[2]);
	char *at = strchr(name, '@');
	if (!at)
		die("DATASET@SNAP needs an '@'", 0);
	*at = 0;
	fbuf_init(&b, NODE_MAX);
	fbuf_init(&out, (size_t)64 << 20);
	stream_sink_fd_init(&sink, STDOUT_FILENO);
	if ((r = stream_encoder_new(&enc, 0)) < 0)
		die("encoder", r);
	/* the nodes are known only bottom up, and BEGIN names the root: build
	 * the hashes first, then write everything in the same order */
	for (int pass = 0; pass < 2; pass++) {
		int have_child = 0;
		uint8_t root[FERRY_HASH_LEN];
		if (pass == 1) {
			memset(&bg, 0, sizeof bg);
			bg.ds_type = STREAM_DS_FILESYSTEM;
			bg.root_type = NODE_EXT;
			bg.to_guid = 0x5eed0000deebull + (uint64_t)depth;
			bg.creation_ns = 1700000000000000000ull;
			bg.creation_txg = 1;
			if (incremental) {
				bg.from_guid = bg.to_guid;
				bg.to_guid += 0x100000000ull;
				bg.creation_ns += 1000000000ull;
				bg.creation_txg = 2;
			}
			bg.dataset = name;
			bg.snapshot = at + 1;
			memcpy(bg.root_hash, leaf, FERRY_HASH_LEN); /* the root, from pass 0 */
			if ((r = stream_encode_begin(enc, &bg, &out)) < 0)
				die("BEGIN", r);
		}
		for (long lvl = depth; lvl >= 0; lvl--) {
			char data[96];
			int len = snprintf(data, sizeof data, "level %ld%s\n", lvl,
					   lvl == depth ? variant : "");
			/* the file's block and blocklist */
			hash_blake2b(bh, data, (size_t)len);
			if (pass == 1) {
				struct stream_write w;
				memset(&w, 0, sizeof w);
				memcpy(w.hash, bh, FERRY_HASH_LEN);
				w.lsize = w.psize = (uint32_t)len;
				w.data = (const uint8_t *)data;
				if ((r = stream_encode_write(enc, &w, &out)) < 0)
					die("WRITE", r);
			}
			fbuf_reset(&b);
			if ((r = fbuf_put_le32(&b, 1)) < 0 || (r = fbuf_putc(&b, 1)) < 0 ||
			    (r = fbuf_put_le32(&b, (uint32_t)len)) < 0 ||
			    (r = fbuf_append(&b, bh, FERRY_HASH_LEN)) < 0)
				die("blocklist", r);
			uint8_t bl[FERRY_HASH_LEN];
			if (pass == 1)
				put_node(NODE_BLOCKLIST, &b, bl);
			else
				node_hash(NODE_BLOCKLIST, b.data, b.len, bl);
			/* the directory at this level: d (the one below), f, and l */
			struct node_entry e[3];
			size_t n = 0;
			if (have_child) {
				e[n] = entry("d", NODE_F_DIR);
				e[n].child_type = NODE_DIR;
				memcpy(e[n++].child, child, FERRY_HASH_LEN);
			}
			e[n] = entry("f", NODE_F_REG);
			e[n].size = (uint64_t)len;
			e[n].child_type = NODE_BLOCKLIST;
			memcpy(e[n++].child, bl, FERRY_HASH_LEN);
			if (lvl % 1000 == 0) {
				e[n] = entry("l", NODE_F_SYMLINK);
				e[n].target = (const uint8_t *)"f";
				e[n++].target_len = 1;
			}
			fbuf_reset(&b);
			if ((r = fbuf_put_le32(&b, (uint32_t)n)) < 0)
				die("directory", r);
			for (size_t i = 0; i < n; i++)
				if ((r = node_entry_encode(&b, &e[i])) < 0)
					die("entry", r);
			if (pass == 1)
				put_node(NODE_DIR, &b, child);
			else
				node_hash(NODE_DIR, b.data, b.len, child);
			have_child = 1;
		}
		struct node_entry re = entry("", NODE_F_DIR);
		re.name = NULL;
		re.child_type = NODE_DIR;
		memcpy(re.child, child, FERRY_HASH_LEN);
		fbuf_reset(&b);
		if ((r = node_root_encode(&b, NODE_ROOT_FILESYSTEM, &re)) < 0)
			die("root", r);
		if (pass == 1)
			put_node(NODE_EXT, &b, root);
		else
			node_hash(NODE_EXT, b.data, b.len, leaf);
	}
	if ((r = stream_encode_end(enc, &out)) < 0)
		die("END", r);
	flush(1);
	stream_encoder_free(enc);
	fbuf_release(&b);
	fbuf_release(&out);
	return 0;
}
