/* tests/tools/mkhostile.c — writes hostile ferry streams for the receive
 * tests, with the stream encoder (unchecked where the framing itself must
 * lie) and the store's node encoders (which check nothing but lengths):
 *
 *   mkhostile OUTDIR
 *
 * writes OUTDIR/<case>.stream for every case below, plus ok.stream, a
 * valid stream built the same way (so the test knows the harness works),
 * and escape.stream, valid but with symlinks pointing out of the tree.
 * For each hostile case, OUTDIR/<case>.expect says why a receiver must
 * refuse it, one line "CLASS<TAB>TEXT": the error class (corrupt, limit,
 * unsupported: the FERR_* name) and text the refusal's detail holds,
 * naming the very object that is wrong (a hash's first 16 hex digits)
 * where there is one.
 *
 *   mkhostile -i FROMGUID LEAF SIZE OUTDIR
 *
 * writes incremental streams onto the snapshot of guid FROMGUID, whose
 * pool holds blocklist node LEAF (hex) of a SIZE-byte file:
 * incr-dangling (names a directory node nobody has), incr-span (names
 * LEAF for a file of SIZE + 1 bytes), each with its .expect, and incr-ok
 * (LEAF as "copy", and a new file "new": valid). Exits 0, or 1 on any
 * error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "stream/stream.h"

static const char *outdir;

struct obj { /* one body record */
	int kind; /* 'N' node, 'W' write, 'R' byref */
	uint8_t type;
	uint8_t *data;
	size_t len;
	uint8_t hash[FERRY_HASH_LEN];
};

struct hs {
	struct obj o[64];
	size_t n;
	uint64_t features_req;
	int unchecked;
	uint8_t root[FERRY_HASH_LEN];
	uint8_t root_type;
	uint8_t ds_type;
	uint64_t from_guid; /* an incremental's base */
	const char *cls;  /* why it must be refused: expect() */
	char why[256];
};

/* Records the refusal the case must get: its class and detail text. */
static void expect(struct hs *h, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void expect(struct hs *h, const char *cls, const char *fmt, ...)
{
	va_list ap;
	h->cls = cls;
	va_start(ap, fmt);
	vsnprintf(h->why, sizeof h->why, fmt, ap);
	va_end(ap);
}

/* The first 16 hex digits of a hash, as refusals name objects. */
static const char *hex16(const uint8_t *hash)
{
	static char buf[4][FERRY_HASH_HEX];
	static unsigned k;
	char *b = buf[k++ % 4];
	hash_to_hex(hash, b);
	b[16] = 0;
	return b;
}

static void die(const char *what)
{
	fprintf(stderr, "mkhostile: %s\n", what);
	exit(1);
}

static struct obj *add(struct hs *h, int kind, uint8_t type, const void *data, size_t len)
{
	if (h->n >= 64)
		die("too many objects");
	struct obj *o = &h->o[h->n++];
	o->kind = kind;
	o->type = type;
	o->len = len;
	if (!(o->data = malloc(len ? len : 1)))
		die("out of memory");
	memcpy(o->data, data, len);
	if (kind == 'N')
		node_hash(type, data, len, o->hash);
	else
		hash_blake2b(o->hash, data, len);
	return o;
}

static void block(struct hs *h, const char *data, uint8_t out[FERRY_HASH_LEN])
{
	struct obj *o = add(h, 'W', 0, data, strlen(data));
	memcpy(out, o->hash, FERRY_HASH_LEN);
}

/* A one-block leaf for data; returns its hash. */
static void leaf(struct hs *h, const uint8_t bh[FERRY_HASH_LEN], uint32_t len,
		 uint8_t out[FERRY_HASH_LEN])
{
	uint8_t b[4 + 1 + 4 + FERRY_HASH_LEN];
	put_le32(b, 1);
	b[4] = 1;
	put_le32(b + 5, len);
	memcpy(b + 9, bh, FERRY_HASH_LEN);
	memcpy(out, add(h, 'N', NODE_BLOCKLIST, b, sizeof b)->hash, FERRY_HASH_LEN);
}

static struct node_entry fentry(const char *name, size_t nlen, const uint8_t *child, uint64_t size)
{
	struct node_entry e;
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)name;
	e.name_len = nlen;
	e.ftype = NODE_F_REG;
	e.mode = 0644;
	e.mtime_sec = 1700000000;
	e.size = size;
	if (child) {
		e.child_type = NODE_BLOCKLIST;
		memcpy(e.child, child, FERRY_HASH_LEN);
	}
	return e;
}

static struct node_entry dentry(const char *name, const uint8_t *child, uint8_t ctype)
{
	struct node_entry e;
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)name;
	e.name_len = strlen(name);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	e.mtime_sec = 1700000000;
	e.child_type = ctype;
	memcpy(e.child, child, FERRY_HASH_LEN);
	return e;
}

static void dirnode(struct hs *h, const struct node_entry *e, size_t n, uint8_t out[FERRY_HASH_LEN])
{
	struct fbuf b;
	fbuf_init(&b, NODE_MAX);
	if (fbuf_put_le32(&b, (uint32_t)n) < 0)
		die("dir");
	for (size_t i = 0; i < n; i++)
		if (node_entry_encode(&b, &e[i]) < 0)
			die("entry");
	memcpy(out, add(h, 'N', NODE_DIR, b.data, b.len)->hash, FERRY_HASH_LEN);
	fbuf_release(&b);
}

static void rootnode(struct hs *h, const uint8_t dir[FERRY_HASH_LEN], uint8_t dtype)
{
	struct fbuf b;
	struct node_entry e;
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	e.child_type = dtype;
	memcpy(e.child, dir, FERRY_HASH_LEN);
	fbuf_init(&b, NODE_MAX);
	/* node_root_encode checks the entry; hostile roots are built by hand */
	if (fbuf_putc(&b, NODE_EXT_ROOT) < 0 || fbuf_putc(&b, NODE_ROOT_FILESYSTEM) < 0 ||
	    fbuf_put_le16(&b, 0) < 0 || node_entry_encode(&b, &e) < 0)
		die("root");
	memcpy(h->root, add(h, 'N', NODE_EXT, b.data, b.len)->hash, FERRY_HASH_LEN);
	h->root_type = NODE_EXT;
	fbuf_release(&b);
}

static void write_expect(const char *name, const char *cls, const char *why)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.expect", outdir, name);
	FILE *f = fopen(path, "w");
	if (!f || fprintf(f, "%s\t%s\n", cls, why) < 0 || fclose(f) != 0)
		die(path);
}

static void emit(struct hs *h, const char *name)
{
	struct stream_encoder *e;
	struct fbuf out;
	struct stream_begin b;
	char path[4096];
	fbuf_init(&out, (size_t)64 << 20);
	if (stream_encoder_new(&e, h->unchecked ? STREAM_ENC_UNCHECKED : 0) < 0)
		die("encoder");
	memset(&b, 0, sizeof b);
	b.flags = 0;
	b.ds_type = h->ds_type ? h->ds_type : STREAM_DS_FILESYSTEM;
	b.root_type = h->root_type ? h->root_type : NODE_EXT;
	memcpy(b.root_hash, h->root, FERRY_HASH_LEN);
	b.to_guid = 0x1234567890abcdefull;
	b.from_guid = h->from_guid;
	b.creation_ns = 1700000000000000000ull;
	b.creation_txg = 1;
	b.dataset = "evil/fs";
	b.snapshot = "s";
	b.features_req = h->features_req;
	if (h->unchecked && h->features_req) {
		/* the checked encoder refuses feature bits: write BEGIN by hand */
		struct fbuf pl;
		fbuf_init(&pl, 4096);
		if (fbuf_append(&pl, "FERRYSTM", 8) < 0 || fbuf_put_le16(&pl, 1) < 0 ||
		    fbuf_put_le16(&pl, 0) < 0 || fbuf_put_le32(&pl, 0) < 0 ||
		    fbuf_put_le64(&pl, h->features_req) < 0 || fbuf_put_le64(&pl, 0) < 0 ||
		    fbuf_putc(&pl, 1) < 0 || fbuf_putc(&pl, NODE_EXT) < 0 || fbuf_put_le16(&pl, 0) < 0 ||
		    fbuf_put_le32(&pl, 0) < 0 || fbuf_put_le64(&pl, b.to_guid) < 0 ||
		    fbuf_put_le64(&pl, 0) < 0 || fbuf_put_le64(&pl, b.creation_ns) < 0 ||
		    fbuf_put_le64(&pl, 1) < 0 || fbuf_put_le64(&pl, 0) < 0 ||
		    fbuf_append(&pl, h->root, FERRY_HASH_LEN) < 0 || fbuf_put_le16(&pl, 7) < 0 ||
		    fbuf_put_le16(&pl, 1) < 0 || fbuf_put_le32(&pl, 0) < 0 ||
		    fbuf_append(&pl, "evil/fs", 7) < 0 || fbuf_append(&pl, "s", 1) < 0 ||
		    stream_encode_raw(e, STREAM_BEGIN, 0, pl.data, pl.len, &out) < 0)
			die("raw begin");
		fbuf_release(&pl);
	} else if (stream_encode_begin(e, &b, &out) < 0) {
		die("begin");
	}
	for (size_t i = 0; i < h->n; i++) {
		struct obj *o = &h->o[i];
		int r;
		if (o->kind == 'N') {
			r = stream_encode_node(e, o->type, o->data, o->len, &out);
		} else if (o->kind == 'R') {
			r = stream_encode_byref(e, o->hash, (uint32_t)o->len, &out);
		} else {
			struct stream_write w;
			memset(&w, 0, sizeof w);
			memcpy(w.hash, o->hash, FERRY_HASH_LEN);
			w.lsize = (uint32_t)o->len;
			w.psize = (uint32_t)o->len;
			w.data = o->data;
			r = stream_encode_write(e, &w, &out);
		}
		if (r < 0) {
			fprintf(stderr, "mkhostile: %s: record %zu: %s\n", name, i, ferry_errmsg(r));
			exit(1);
		}
	}
	if (stream_encode_end(e, &out) < 0) {
		fprintf(stderr, "mkhostile: %s: END: %s\n", name, ferry_errmsg(-1));
		exit(1);
	}
	snprintf(path, sizeof path, "%s/%s.stream", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) != 0)
		die(path);
	stream_encoder_free(e);
	fbuf_release(&out);
	if (h->cls)
		write_expect(name, h->cls, h->why);
	for (size_t i = 0; i < h->n; i++)
		free(h->o[i].data);
	memset(h, 0, sizeof *h);
}

/* A stream whose root directory holds the entries made by fn. */
typedef void (*entries_fn)(struct hs *h, struct node_entry *e, size_t *n);

static void tree_case(const char *name, entries_fn fn, int unchecked)
{
	struct hs h;
	struct node_entry e[8];
	size_t n = 0;
	uint8_t d[FERRY_HASH_LEN];
	memset(&h, 0, sizeof h);
	h.unchecked = unchecked;
	fn(&h, e, &n);
	dirnode(&h, e, n, d);
	rootnode(&h, d, NODE_DIR);
	emit(&h, name);
}

static uint8_t bh[FERRY_HASH_LEN], lh[FERRY_HASH_LEN];

static void one_file(struct hs *h)
{
	block(h, "hello\n", bh);
	leaf(h, bh, 6, lh);
}

static void c_ok(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("a", 1, lh, 6);
	e[(*n)++] = fentry("b", 1, lh, 6);
}
static void c_dotdot(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("..", 2, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_dot(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry(".", 1, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_slash(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("../../escaped", 13, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_abs(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("/etc/ferry-evil", 15, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_nul(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("a\0b", 3, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_empty_name(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("", 0, lh, 6);
	expect(h, "corrupt", "node entry has an invalid name");
}
static void c_dup_name(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("same", 4, lh, 6);
	e[(*n)++] = fentry("same", 4, lh, 6);
	expect(h, "corrupt", "directory node names are not sorted");
}
static void c_unsorted(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("b", 1, lh, 6);
	e[(*n)++] = fentry("a", 1, lh, 6);
	expect(h, "corrupt", "directory node names are not sorted");
}
static void c_under_file(struct hs *h, struct node_entry *e, size_t *n)
{
	/* a regular file whose child is a directory: entries under a non-directory */
	uint8_t d[FERRY_HASH_LEN];
	struct node_entry sub[1];
	one_file(h);
	sub[0] = fentry("inner", 5, lh, 6);
	dirnode(h, sub, 1, d);
	struct node_entry f = fentry("file", 4, NULL, 6);
	f.child_type = NODE_DIR;
	memcpy(f.child, d, FERRY_HASH_LEN);
	e[(*n)++] = f;
	expect(h, "corrupt", "node entry has child type %d for file type %d", NODE_DIR, NODE_F_REG);
}
static void c_under_symlink(struct hs *h, struct node_entry *e, size_t *n)
{
	uint8_t d[FERRY_HASH_LEN];
	struct node_entry sub[1];
	one_file(h);
	sub[0] = fentry("inner", 5, lh, 6);
	dirnode(h, sub, 1, d);
	struct node_entry s = dentry("link", d, NODE_DIR);
	s.ftype = NODE_F_SYMLINK;
	s.target = (const uint8_t *)"/tmp";
	s.target_len = 4;
	e[(*n)++] = s;
	expect(h, "corrupt", "node entry has child type %d for file type %d", NODE_DIR, NODE_F_SYMLINK);
}
static void c_dir_to_leaf(struct hs *h, struct node_entry *e, size_t *n)
{
	/* a directory entry naming a blocklist node as if it were a directory */
	one_file(h);
	e[(*n)++] = dentry("d", lh, NODE_DIR);
	expect(h, "corrupt", "reference of the wrong type to node %s", hex16(lh));
}
static void c_dangling_node(struct hs *h, struct node_entry *e, size_t *n)
{
	uint8_t fake[FERRY_HASH_LEN];
	one_file(h);
	hash_blake2b(fake, "nowhere", 7);
	e[(*n)++] = fentry("a", 1, lh, 6);
	e[(*n)++] = dentry("gone", fake, NODE_DIR);
	expect(h, "corrupt", "dangling reference to node %s", hex16(fake));
}
static void c_dangling_block(struct hs *h, struct node_entry *e, size_t *n)
{
	uint8_t fake[FERRY_HASH_LEN], l2[FERRY_HASH_LEN];
	hash_blake2b(fake, "not sent", 8);
	leaf(h, fake, 8, l2);
	e[(*n)++] = fentry("a", 1, l2, 8);
	expect(h, "corrupt", "dangling reference to block %s", hex16(fake));
}
static void c_dup_node(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	add(h, 'N', NODE_BLOCKLIST, h->o[1].data, h->o[1].len);
	e[(*n)++] = fentry("a", 1, lh, 6);
	expect(h, "corrupt", "duplicate node %s", hex16(lh));
}
static void c_dup_block(struct hs *h, struct node_entry *e, size_t *n)
{
	block(h, "hello\n", bh);
	block(h, "hello\n", bh);
	leaf(h, bh, 6, lh);
	e[(*n)++] = fentry("a", 1, lh, 6);
	expect(h, "corrupt", "duplicate block %s", hex16(bh));
}
static void c_orphan(struct hs *h, struct node_entry *e, size_t *n)
{
	uint8_t x[FERRY_HASH_LEN];
	one_file(h);
	block(h, "nobody uses me", x);
	e[(*n)++] = fentry("a", 1, lh, 6);
	expect(h, "corrupt", "the stream carries 1 objects the snapshot does not use");
}
static void c_wrong_size(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	e[(*n)++] = fentry("a", 1, lh, 600); /* the blocklist covers 6 bytes */
	expect(h, "corrupt", "blocklist covers 6 bytes, its file 600");
}
static void c_block_lsize(struct hs *h, struct node_entry *e, size_t *n)
{
	uint8_t l2[FERRY_HASH_LEN];
	block(h, "hello\n", bh);
	leaf(h, bh, 7, l2); /* the leaf says 7 bytes, the block has 6 */
	e[(*n)++] = fentry("a", 1, l2, 7);
	expect(h, "corrupt", "reference with the wrong size to block %s", hex16(bh));
}
static void c_absurd_count(struct hs *h, struct node_entry *e, size_t *n)
{
	/* a blocklist claiming 4 billion extents */
	uint8_t b[4 + 1 + 4 + FERRY_HASH_LEN];
	uint8_t l2[FERRY_HASH_LEN];
	block(h, "hello\n", bh);
	put_le32(b, 0xffffffffu);
	b[4] = 1;
	put_le32(b + 5, 6);
	memcpy(b + 9, bh, FERRY_HASH_LEN);
	memcpy(l2, add(h, 'N', NODE_BLOCKLIST, b, sizeof b)->hash, FERRY_HASH_LEN);
	e[(*n)++] = fentry("a", 1, l2, 6);
	expect(h, "corrupt", "blocklist node claims 4294967295 extents");
}
static void c_bad_mode(struct hs *h, struct node_entry *e, size_t *n)
{
	one_file(h);
	struct node_entry f = fentry("a", 1, lh, 6);
	f.mode = 0170777;
	e[(*n)++] = f;
	expect(h, "corrupt", "node entry has mode 170777");
}
static void c_root_inside(struct hs *h, struct node_entry *e, size_t *n)
{
	/* a root node used as a subdirectory */
	struct hs tmp;
	memset(&tmp, 0, sizeof tmp);
	one_file(h);
	struct node_entry sub[1] = {fentry("x", 1, lh, 6)};
	uint8_t d[FERRY_HASH_LEN];
	dirnode(h, sub, 1, d);
	rootnode(h, d, NODE_DIR);
	e[(*n)++] = dentry("r", h->root, NODE_EXT);
	expect(h, "corrupt", "a root node inside the tree");
}
static void c_escape(struct hs *h, struct node_entry *e, size_t *n)
{
	/* valid: symlinks pointing out of the tree; restore must not follow */
	one_file(h);
	struct node_entry s = fentry("abs", 3, NULL, 0);
	s.ftype = NODE_F_SYMLINK;
	s.size = 0;
	s.mode = 0777;
	s.target = (const uint8_t *)"/tmp";
	s.target_len = 4;
	e[(*n)++] = s;
	e[(*n)++] = fentry("file", 4, lh, 6);
	struct node_entry r = s;
	r.name = (const uint8_t *)"up";
	r.name_len = 2;
	r.target = (const uint8_t *)"../../../../../../..";
	r.target_len = 20;
	e[(*n)++] = r;
}

/* mkhostile -i: incrementals onto a pool's snapshot (see the top). */
static int incr_cases(const char *guid, const char *leafhex, const char *size)
{
	struct hs h;
	struct node_entry e[2];
	uint8_t leafh[FERRY_HASH_LEN], fake[FERRY_HASH_LEN], d[FERRY_HASH_LEN], nb[FERRY_HASH_LEN],
		nl[FERRY_HASH_LEN];
	uint64_t from = strtoull(guid, NULL, 10), sz = strtoull(size, NULL, 10);
	if (!from || !sz || hash_from_hex(leafhex, leafh) < 0)
		die("-i: bad guid, leaf or size");
	hash_blake2b(fake, "nowhere", 7);
	/* names a node neither the stream nor the pool has */
	memset(&h, 0, sizeof h);
	h.from_guid = from;
	e[0] = fentry("copy", 4, leafh, sz);
	e[1] = dentry("gone", fake, NODE_DIR);
	dirnode(&h, e, 2, d);
	rootnode(&h, d, NODE_DIR);
	expect(&h, "corrupt", "dangling reference to node %s", hex16(fake));
	emit(&h, "incr-dangling");
	/* names the pool's blocklist for a file one byte longer */
	memset(&h, 0, sizeof h);
	h.from_guid = from;
	e[0] = fentry("copy", 4, leafh, sz + 1);
	dirnode(&h, e, 1, d);
	rootnode(&h, d, NODE_DIR);
	expect(&h, "corrupt", "blocklist covers %llu bytes, its file %llu", (unsigned long long)sz,
	       (unsigned long long)sz + 1);
	emit(&h, "incr-span");
	/* valid: the pool's blocklist, and a new file */
	memset(&h, 0, sizeof h);
	h.from_guid = from;
	block(&h, "brand new\n", nb);
	leaf(&h, nb, 10, nl);
	e[0] = fentry("copy", 4, leafh, sz);
	e[1] = fentry("new", 3, nl, 10);
	dirnode(&h, e, 2, d);
	rootnode(&h, d, NODE_DIR);
	emit(&h, "incr-ok");
	return 0;
}

int main(int argc, char **argv)
{
	if (!(argc == 2 || (argc == 6 && !strcmp(argv[1], "-i")))) {
		fprintf(stderr, "usage: mkhostile OUTDIR | mkhostile -i FROMGUID LEAF SIZE OUTDIR\n");
		return 1;
	}
	outdir = argv[argc - 1];
	if (ferry_lib_init() < 0)
		die("libsodium");
	if (argc == 6)
		return incr_cases(argv[2], argv[3], argv[4]);
	static const struct {
		const char *name;
		entries_fn fn;
	} cases[] = {
		{"ok", c_ok},
		{"escape", c_escape},
		{"name-dotdot", c_dotdot},
		{"name-dot", c_dot},
		{"name-slash", c_slash},
		{"name-absolute", c_abs},
		{"name-nul", c_nul},
		{"name-empty", c_empty_name},
		{"name-duplicate", c_dup_name},
		{"names-unsorted", c_unsorted},
		{"entries-under-file", c_under_file},
		{"entries-under-symlink", c_under_symlink},
		{"dir-names-a-blocklist", c_dir_to_leaf},
		{"dangling-node", c_dangling_node},
		{"dangling-block", c_dangling_block},
		{"duplicate-node", c_dup_node},
		{"duplicate-block", c_dup_block},
		{"orphan-block", c_orphan},
		{"span-not-file-size", c_wrong_size},
		{"block-size-mismatch", c_block_lsize},
		{"absurd-extent-count", c_absurd_count},
		{"bad-mode", c_bad_mode},
		{"root-inside-tree", c_root_inside},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		tree_case(cases[i].name, cases[i].fn, 0);

	/* framing-level lies need the unchecked encoder */
	struct hs h;
	memset(&h, 0, sizeof h);
	h.unchecked = 1;
	h.features_req = 1ull << 40;
	{
		struct node_entry e[2];
		size_t n = 0;
		uint8_t d[FERRY_HASH_LEN];
		c_ok(&h, e, &n);
		dirnode(&h, e, n, d);
		rootnode(&h, d, NODE_DIR);
	}
	expect(&h, "unsupported", "record 0 (BEGIN): unknown required features 0x%llx",
	       (unsigned long long)h.features_req);
	emit(&h, "unknown-required-feature");

	/* a NODE record longer than the format's maximum */
	{
		struct stream_encoder *e;
		struct fbuf out;
		char path[4096];
		size_t big = (size_t)STREAM_PAYLOAD_MAX + 1;
		uint8_t *p = calloc(1, big);
		fbuf_init(&out, (size_t)64 << 20);
		memset(&h, 0, sizeof h);
		struct stream_begin b;
		memset(&b, 0, sizeof b);
		b.ds_type = 1;
		b.root_type = NODE_EXT;
		b.to_guid = 7;
		b.dataset = "evil/fs";
		b.snapshot = "s";
		if (!p || stream_encoder_new(&e, STREAM_ENC_UNCHECKED) < 0 ||
		    stream_encode_begin(e, &b, &out) < 0 ||
		    stream_encode_raw(e, STREAM_NODE, 0, p, big, &out) < 0 ||
		    stream_encode_end(e, &out) < 0)
			die("node-over-max");
		snprintf(path, sizeof path, "%s/node-over-max.stream", outdir);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(out.data, 1, out.len, f) != out.len || fclose(f) != 0)
			die(path);
		free(p);
		fbuf_release(&out);
		stream_encoder_free(e);
		char why[128];
		snprintf(why, sizeof why, "record 1 (NODE): payload length %zu exceeds maximum %zu", big,
			 (size_t)STREAM_PAYLOAD_MAX);
		write_expect("node-over-max", "limit", why);
	}
	return 0;
}
