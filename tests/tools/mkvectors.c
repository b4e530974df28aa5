/* tests/tools/mkvectors.c — writes the golden stream vectors, always the
 * same bytes:
 *
 *   build/tools/mkvectors [DIR]          (DIR defaults to tests/vectors)
 *
 * DIR/good/NAME.stream   valid streams, written by the checked encoder, with
 *                        nodes in the store's format (docs/ferry-nodes.md)
 *                        so that a receiver takes them
 * DIR/good/NAME.tree     what a receive of NAME must restore: one line per
 *                        entry of each snapshot it brings (see tree_line)
 * DIR/good/resumed.token the resume token of good/resumed.stream
 * DIR/good/resumed.base  the part of good/full.stream received before the
 *                        interruption that good/resumed.stream resumes
 * DIR/bad/NAME.stream    invalid streams: good ones damaged byte by byte
 *                        (flips, cuts, swaps, splices), or re-framed with
 *                        a correct chain around a bad field so that the
 *                        field check is what refuses them
 * DIR/bad/NAME.err       a substring of `ferry dump`'s error line
 * DIR/bad/CLASSES        "NAME CLASS" lines: truncated, corrupt,
 *                        unsupported or limit
 *
 * The good/NAME.dump files are `ferry dump -v` output, checked by
 * tests/cli/50-dump.t; see tests/vectors/README.md to regenerate them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "stream/stream.h"

#define MAXREC 64

static const char *outdir = "tests/vectors";
/* The vectors that predate format version 2 stay version 1, byte for byte
 * (readers must keep taking them); v2_vectors() clears this. */
static unsigned vflags = STREAM_ENC_V1;
static FILE *classes;

static void die(int r, const char *what)
{
	fprintf(stderr, "mkvectors: %s: %s\n", what, ferry_errmsg(r));
	exit(1);
}

#define CHECK(x)                          \
	do {                              \
		int r_ = (x);             \
		if (r_ < 0)               \
			die(r_, #x);      \
	} while (0)

static void write_file(const char *sub, const char *name, const void *p, size_t n)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%s/%s", outdir, sub);
	CHECK(io_mkdirs(dir, 0755));
	CHECK(io_write_file_atomic(dir, name, p, n, 0644));
}

/* ---- content ---------------------------------------------------------- */

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Deterministic readable text. */
static void text(uint8_t *p, size_t n, unsigned seed)
{
	static const char *const words[] = {"ferry", "stream", "block", "node", "snapshot",
					    "pool", "dataset", "merkle", "hash", "send",
					    "recv", "gzip"};
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
	size_t i = 0;

	while (i < n) {
		const char *w = words[xs(&x) % 12];
		for (size_t k = 0; w[k] && i < n; k++)
			p[i++] = (uint8_t)w[k];
		if (i < n)
			p[i++] = (xs(&x) % 8 == 0) ? '\n' : ' ';
	}
}

static void pattern(uint8_t *p, size_t n, const char *pat)
{
	size_t m = strlen(pat);

	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)pat[i % m];
}

/* A block: its logical content and how it travels. */
struct blk {
	uint8_t logical[4096];
	uint32_t lsize;
	uint8_t wire[4096 + 64];
	uint32_t psize;
	uint8_t codec, level;
	uint8_t hash[FERRY_HASH_LEN];
};

static void blk_plain(struct blk *b, uint32_t lsize, unsigned seed)
{
	text(b->logical, lsize, seed);
	b->lsize = lsize;
	memcpy(b->wire, b->logical, lsize);
	b->psize = lsize;
	b->codec = STREAM_CODEC_OFF;
	b->level = 0;
	hash_blake2b(b->hash, b->logical, lsize);
}

/* lz4 in the ZFS layout (4-byte big-endian length, then an lz4 block) for
 * content with period per: the period as literals, one long match, and
 * the 5 final literals lz4 requires. */
static void lz4_periodic(struct blk *b, size_t per)
{
	uint8_t *d = b->wire;
	size_t o = 4, m = b->lsize - per - 5, v;

	d[o++] = (uint8_t)((per < 15 ? per : 15) << 4 | (m - 4 < 15 ? m - 4 : 15));
	if (per >= 15) {
		for (v = per - 15; v >= 255; v -= 255)
			d[o++] = 255;
		d[o++] = (uint8_t)v;
	}
	memcpy(d + o, b->logical, per);
	o += per;
	d[o++] = (uint8_t)per;
	d[o++] = (uint8_t)(per >> 8);
	if (m - 4 >= 15) {
		for (v = m - 4 - 15; v >= 255; v -= 255)
			d[o++] = 255;
		d[o++] = (uint8_t)v;
	}
	d[o++] = 5 << 4;
	memcpy(d + o, b->logical + b->lsize - 5, 5);
	o += 5;
	d[0] = (uint8_t)((o - 4) >> 24);
	d[1] = (uint8_t)((o - 4) >> 16);
	d[2] = (uint8_t)((o - 4) >> 8);
	d[3] = (uint8_t)(o - 4);
	b->psize = (uint32_t)o;
	b->codec = STREAM_CODEC_LZ4;
	b->level = 0;
}

/* zlib format with one fixed-Huffman deflate block, for periodic content. */
struct bits {
	uint8_t *p;
	size_t n;
	unsigned acc, nacc;
};

static void putbits(struct bits *w, unsigned v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		w->acc |= ((v >> i) & 1u) << w->nacc;
		if (++w->nacc == 8) {
			w->p[w->n++] = (uint8_t)w->acc;
			w->acc = w->nacc = 0;
		}
	}
}

static void putcode(struct bits *w, unsigned code, unsigned n)
{
	for (unsigned i = n; i-- > 0;)
		putbits(w, (code >> i) & 1u, 1);
}

static void put_litlen(struct bits *w, unsigned sym)
{
	if (sym < 144)
		putcode(w, 0x30 + sym, 8);
	else if (sym < 256)
		putcode(w, 0x190 + sym - 144, 9);
	else if (sym < 280)
		putcode(w, sym - 256, 7);
	else
		putcode(w, 0xc0 + sym - 280, 8);
}

static void put_match(struct bits *w, unsigned len, unsigned dist)
{
	static const unsigned lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27,
					   31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195,
					   227, 258};
	static const unsigned lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
					    2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
	static const unsigned dbase[16] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193};
	static const unsigned dextra[16] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6};
	unsigned i = 28, j = 15;

	while (len < lbase[i])
		i--;
	put_litlen(w, 257 + i);
	putbits(w, len - lbase[i], lextra[i]);
	while (dist < dbase[j])
		j--;
	putcode(w, j, 5);
	putbits(w, dist - dbase[j], dextra[j]);
}

static void zlib_periodic(struct blk *b, size_t per, unsigned level)
{
	struct bits w = {.p = b->wire + 2};
	size_t left = b->lsize - per;
	uint32_t s1 = 1, s2 = 0;

	b->wire[0] = 0x78;
	b->wire[1] = 0xda; /* FLEVEL 3 (levels 7..9); 0x78da % 31 == 0 */
	putbits(&w, 1, 1); /* BFINAL */
	putbits(&w, 1, 2); /* fixed Huffman */
	for (size_t i = 0; i < per; i++)
		put_litlen(&w, b->logical[i]);
	while (left) {
		unsigned len = left > 258 ? 258 : (unsigned)left;
		if (left > 258 && left - 258 < 3)
			len = (unsigned)left - 3;
		put_match(&w, len, (unsigned)per);
		left -= len;
	}
	put_litlen(&w, 256);
	if (w.nacc)
		w.p[w.n++] = (uint8_t)w.acc;
	for (size_t i = 0; i < b->lsize; i++) {
		s1 = (s1 + b->logical[i]) % 65521;
		s2 = (s2 + s1) % 65521;
	}
	put_le32(b->wire + 2 + w.n, 0);
	b->wire[2 + w.n] = (uint8_t)(s2 >> 8);
	b->wire[3 + w.n] = (uint8_t)s2;
	b->wire[4 + w.n] = (uint8_t)(s1 >> 8);
	b->wire[5 + w.n] = (uint8_t)s1;
	b->psize = (uint32_t)(2 + w.n + 4);
	b->codec = STREAM_CODEC_GZIP;
	b->level = (uint8_t)level;
}

/* ZFS zero-length encoding, n = 64, as store/codec_zle.c writes it. */
static void zle(struct blk *b)
{
	const uint8_t *s = b->logical;
	size_t i = 0, o = 0, n = b->lsize;

	while (i < n) {
		size_t run = 0;
		if (s[i] == 0) {
			while (i + run < n && run < 192 && s[i + run] == 0)
				run++;
			b->wire[o++] = (uint8_t)(run - 1 + 64);
		} else {
			while (i + run < n && run < 64 &&
			       (s[i + run] != 0 || (i + run + 1 < n && s[i + run + 1] != 0)))
				run++;
			b->wire[o++] = (uint8_t)(run - 1);
			memcpy(b->wire + o, s + i, run);
			o += run;
		}
		i += run;
	}
	b->psize = (uint32_t)o;
	b->codec = STREAM_CODEC_ZLE;
	b->level = 0;
}

/* Nodes in the store's format (docs/ferry-nodes.md; the entries through
 * the store's encoder), so that the good vectors are receivable and what
 * they hold can be restored and compared. */
struct node {
	uint8_t type;
	uint8_t data[1024];
	size_t len;
	uint8_t hash[FERRY_HASH_LEN];
	uint64_t size;                 /* a blocklist: the bytes it covers */
	const struct blk *blocks[8];   /* a blocklist: its blocks, then a hole */
	size_t nblocks;
	uint64_t hole;
};

static void node_seal(struct node *n)
{
	node_hash(n->type, n->data, n->len, n->hash);
}

/* A blocklist of nb blocks and, when hole is not 0, a hole of that many
 * bytes after them. */
static void blocklist(struct node *n, const struct blk *const *b, size_t nb, uint64_t hole)
{
	n->type = NODE_BLOCKLIST;
	put_le32(n->data, (uint32_t)(nb + (hole != 0)));
	n->len = 4;
	n->size = 0;
	n->nblocks = nb;
	n->hole = hole;
	for (size_t i = 0; i < nb; i++) {
		n->blocks[i] = b[i];
		n->data[n->len] = 1;
		put_le32(n->data + n->len + 1, b[i]->lsize);
		memcpy(n->data + n->len + 5, b[i]->hash, FERRY_HASH_LEN);
		n->len += 5 + FERRY_HASH_LEN;
		n->size += b[i]->lsize;
	}
	if (hole) {
		n->data[n->len] = 0;
		put_le64(n->data + n->len + 1, hole);
		n->len += 9;
		n->size += hole;
	}
	node_seal(n);
}

#define V_MTIME 1700000000 /* every entry's mtime */

/* The entry of a file (child: its blocklist) or a directory (child: its
 * directory node); name NULL for a root. */
static struct node_entry entry_of(const char *name, const struct node *child)
{
	struct node_entry e;

	memset(&e, 0, sizeof(e));
	e.name = (const uint8_t *)name;
	e.name_len = name ? strlen(name) : 0;
	e.ftype = child->type == NODE_BLOCKLIST ? NODE_F_REG : NODE_F_DIR;
	e.mode = e.ftype == NODE_F_REG ? 0644 : 0755;
	e.mtime_sec = V_MTIME;
	e.size = e.ftype == NODE_F_REG ? child->size : 0;
	e.child_type = child->type;
	memcpy(e.child, child->hash, FERRY_HASH_LEN);
	return e;
}

static void put_bytes(struct node *n, const struct fbuf *b)
{
	if (b->len > sizeof(n->data))
		die(-FERR_LIMIT, "node too large for the vectors");
	memcpy(n->data, b->data, b->len);
	n->len = b->len;
	node_seal(n);
}

/* A directory of n entries (names ascending). */
static void dir_of(struct node *d, const char *const *names, const struct node *const *kids,
		   size_t n)
{
	struct fbuf b;

	fbuf_init(&b, 4096);
	CHECK(fbuf_put_le32(&b, (uint32_t)n));
	for (size_t i = 0; i < n; i++) {
		struct node_entry e = entry_of(names[i], kids[i]);
		CHECK(node_entry_encode(&b, &e));
	}
	d->type = NODE_DIR;
	put_bytes(d, &b);
	fbuf_release(&b);
}

/* The snapshot root of a filesystem (top: its root directory) or a volume
 * (top: the volume's blocklist). */
static void root_of(struct node *r, const struct node *top)
{
	struct node_entry e = entry_of(NULL, top);
	struct fbuf b;

	fbuf_init(&b, 4096);
	CHECK(node_root_encode(&b, top->type == NODE_BLOCKLIST ? NODE_ROOT_VOLUME
								: NODE_ROOT_FILESYSTEM, &e));
	r->type = NODE_EXT;
	put_bytes(r, &b);
	fbuf_release(&b);
}

/* ---- the snapshots of the vectors -------------------------------------- */

#define G_MON 0x6d6f6e0000000001ull
#define G_TUE 0x7475650000000002ull
#define G_WED 0x7765640000000003ull
#define G_SUB 0x7375620000000004ull
#define G_VOL 0x766f6c0000000005ull
#define G_CMP 0x636d700000000006ull
#define G_OTHER 0x6f74680000000007ull
#define T_MON 1700000000123456789ull
#define T_TUE 1700086400000000000ull
#define T_WED 1700172800500000000ull

static struct blk B1, B2, B3, B1b, B5, C1, C2, C3, C4, V1, V2;
static struct node L1, L2, D1, R1, L1b, D1b, R1b, L5, D5, R5, LV, RV, LC, DC, RC;

static void content(void)
{
	blk_plain(&B1, 256, 1);
	blk_plain(&B2, 512, 2);
	blk_plain(&B3, 100, 3);
	blk_plain(&B1b, 256, 4);
	blk_plain(&B5, 64, 5);
	blocklist(&L1, (const struct blk *[]){&B1, &B2}, 2, 0);
	blocklist(&L2, (const struct blk *[]){&B3}, 1, 0);
	dir_of(&D1, (const char *[]){"notes.txt", "todo"}, (const struct node *[]){&L1, &L2}, 2);
	root_of(&R1, &D1);
	blocklist(&L1b, (const struct blk *[]){&B1b, &B2}, 2, 0);
	dir_of(&D1b, (const char *[]){"notes.txt", "todo"}, (const struct node *[]){&L1b, &L2}, 2);
	root_of(&R1b, &D1b);
	blocklist(&L5, (const struct blk *[]){&B5}, 1, 0);
	dir_of(&D5, (const char *[]){"readme"}, (const struct node *[]){&L5}, 1);
	root_of(&R5, &D5);

	C1.lsize = C2.lsize = C3.lsize = 4096;
	pattern(C1.logical, 4096, "lz4 pattern 0123456789\n");
	hash_blake2b(C1.hash, C1.logical, 4096);
	lz4_periodic(&C1, 23);
	pattern(C2.logical, 4096, "gzip-7 pattern abcdefghij\n");
	hash_blake2b(C2.hash, C2.logical, 4096);
	zlib_periodic(&C2, 26, 7);
	memset(C3.logical, 0, 4096);
	memcpy(C3.logical, "sparse block head\n", 18);
	memcpy(C3.logical + 2048, "middle", 6);
	memcpy(C3.logical + 4090, "tail\n", 5);
	hash_blake2b(C3.hash, C3.logical, 4096);
	zle(&C3);
	blk_plain(&C4, 64, 6);
	blocklist(&LC, (const struct blk *[]){&C1, &C2, &C3, &C4}, 4, 0);
	dir_of(&DC, (const char *[]){"big.bin"}, (const struct node *[]){&LC}, 1);
	root_of(&RC, &DC);

	/* a 1 MiB volume: two blocks, then a hole */
	blk_plain(&V1, 512, 7);
	blk_plain(&V2, 512, 8);
	blocklist(&LV, (const struct blk *[]){&V1, &V2}, 2, (1u << 20) - 1024);
	root_of(&RV, &LV);
}

/* ---- what a receive of a good vector restores -------------------------- */

static struct fbuf trees[16];
static const char *tree_names[16];
static size_t ntrees;

/* The BLAKE2b-256 (hex) of the bytes a blocklist covers. */
static void content_hash(const struct node *l, char hex[FERRY_HASH_HEX])
{
	static const uint8_t zero[4096];
	struct hash_state h;
	uint8_t out[FERRY_HASH_LEN];

	hash_init(&h);
	for (size_t i = 0; i < l->nblocks; i++)
		hash_update(&h, l->blocks[i]->logical, l->blocks[i]->lsize);
	for (uint64_t left = l->hole; left; ) {
		size_t k = left < sizeof(zero) ? (size_t)left : sizeof(zero);
		hash_update(&h, zero, k);
		left -= k;
	}
	hash_final(&h, out);
	hash_to_hex(out, hex);
}

/* One line of good/NAME.tree, tab-separated: the snapshot (its name after
 * the receive's target, e.g. "@mon" or "/home/sub@tue"), the path in it,
 * the type (f, d, or v for a volume's image), the mode in octal, the size,
 * the mtime in seconds and the content's BLAKE2b-256 ("-" where there is
 * none); for a volume the path, mode and mtime are "-". */
static void tree_line(const char *vector, const char *snap, const char *path, const struct node *n)
{
	size_t i;
	char hex[FERRY_HASH_HEX] = "-";

	for (i = 0; i < ntrees && strcmp(tree_names[i], vector); i++)
		;
	if (i == ntrees) {
		if (ntrees == 16)
			die(-FERR_LIMIT, "too many trees");
		tree_names[ntrees] = vector;
		fbuf_init(&trees[ntrees++], 1 << 16);
	}
	if (n->type == NODE_BLOCKLIST)
		content_hash(n, hex);
	if (!path)
		CHECK(fbuf_printf(&trees[i], "%s\t-\tv\t-\t%llu\t-\t%s\n", snap,
				  (unsigned long long)n->size, hex));
	else
		CHECK(fbuf_printf(&trees[i], "%s\t%s\t%c\t%o\t%llu\t%d\t%s\n", snap, path,
				  n->type == NODE_BLOCKLIST ? 'f' : 'd',
				  n->type == NODE_BLOCKLIST ? 0644 : 0755,
				  (unsigned long long)(n->type == NODE_BLOCKLIST ? n->size : 0),
				  V_MTIME, hex));
}

/* The trees of the vectors' snapshots, as tree_line writes them. */
static void tree_mon(const char *vector, const char *snap)
{
	tree_line(vector, snap, "notes.txt", &L1);
	tree_line(vector, snap, "todo", &L2);
}

static void tree_tue(const char *vector, const char *snap)
{
	tree_line(vector, snap, "notes.txt", &L1b);
	tree_line(vector, snap, "todo", &L2);
}

static void write_trees(void)
{
	char fn[128];

	for (size_t i = 0; i < ntrees; i++) {
		snprintf(fn, sizeof(fn), "%s.tree", tree_names[i]);
		write_file("good", fn, trees[i].data, trees[i].len);
		fbuf_release(&trees[i]);
	}
}

static struct stream_begin begin_of(const char *ds, const char *snap, uint64_t to,
				    uint64_t from, uint64_t ns, uint64_t txg,
				    const struct node *root)
{
	struct stream_begin b;

	memset(&b, 0, sizeof(b));
	b.ds_type = STREAM_DS_FILESYSTEM;
	b.dataset = ds;
	b.snapshot = snap;
	b.to_guid = to;
	b.from_guid = from;
	b.creation_ns = ns;
	b.creation_txg = txg;
	b.root_type = root->type;
	memcpy(b.root_hash, root->hash, FERRY_HASH_LEN);
	return b;
}

static void put_write(struct stream_encoder *e, const struct blk *b, struct fbuf *out)
{
	struct stream_write w;

	memcpy(w.hash, b->hash, FERRY_HASH_LEN);
	w.lsize = b->lsize;
	w.codec = b->codec;
	w.level = b->level;
	w.psize = b->psize;
	w.data = b->wire;
	CHECK(stream_encode_write(e, &w, out));
}

static void put_node(struct stream_encoder *e, const struct node *n, struct fbuf *out)
{
	CHECK(stream_encode_node(e, n->type, n->data, n->len, out));
}

/* tank/home@mon in post-order, from body record skip on (0: all). */
static void body_mon(struct stream_encoder *e, struct fbuf *out, unsigned skip)
{
	const void *recs[] = {&B1, &B2, &L1, &B3, &L2, &D1, &R1};
	const int isnode[] = {0, 0, 1, 0, 1, 1, 1};

	for (unsigned i = skip; i < 7; i++) {
		if (isnode[i])
			put_node(e, recs[i], out);
		else
			put_write(e, recs[i], out);
	}
}

static void body_tue(struct stream_encoder *e, struct fbuf *out)
{
	put_write(e, &B1b, out);
	CHECK(stream_encode_byref(e, B2.hash, B2.lsize, out));
	put_node(e, &L1b, out);
	put_node(e, &D1b, out);
	put_node(e, &R1b, out);
}

/* A whole single stream: BEGIN b, the mon body, END. */
static void stream_mon(struct fbuf *out, unsigned encflags, const struct stream_begin *b)
{
	struct stream_encoder *e;

	CHECK(stream_encoder_new(&e, vflags | encflags));
	CHECK(stream_encode_begin(e, b, out));
	body_mon(e, out, 0);
	CHECK(stream_encode_end(e, out));
	stream_encoder_free(e);
}

static struct stream_begin begin_mon(void)
{
	return begin_of("tank/home", "mon", G_MON, 0, T_MON, 42, &R1);
}

/* ---- records of an existing stream ------------------------------------- */

struct rec {
	uint16_t type, flags;
	int keep; /* END/PACKAGE_END: write as is, not recomputed */
	uint32_t len;
	const uint8_t *p; /* payload */
	size_t off, size; /* the whole record in the source bytes */
};

struct recs {
	size_t n;
	struct rec r[MAXREC];
};

static void split(const struct fbuf *s, struct recs *out)
{
	size_t off = 0;

	out->n = 0;
	while (off < s->len) {
		struct rec *r = &out->r[out->n++];
		r->keep = 0;
		r->type = get_le16(s->data + off);
		r->flags = get_le16(s->data + off + 2);
		r->len = get_le32(s->data + off + 4);
		r->p = s->data + off + STREAM_HDR_LEN;
		r->off = off;
		r->size = STREAM_HDR_LEN + r->len + STREAM_TRAILER_LEN;
		off += r->size;
	}
}

/* Frames the records again with a correct chain (END and PACKAGE_END
 * recomputed), so a changed field is refused by its own check. */
static void emit(const struct recs *in, struct fbuf *out)
{
	struct stream_encoder *e;

	CHECK(stream_encoder_new(&e, vflags | STREAM_ENC_UNCHECKED));
	for (size_t i = 0; i < in->n; i++) {
		const struct rec *r = &in->r[i];
		if (r->type == STREAM_END && !r->keep)
			CHECK(stream_encode_end(e, out));
		else if (r->type == STREAM_PACKAGE_END && !r->keep)
			CHECK(stream_encode_package_end(e, out));
		else
			CHECK(stream_encode_raw(e, r->type, r->flags, r->p, r->len, out));
	}
	stream_encoder_free(e);
}

/* ---- writing vectors --------------------------------------------------- */

static void good(const char *name, const struct fbuf *s)
{
	char fn[128];

	snprintf(fn, sizeof(fn), "%s.stream", name);
	write_file("good", fn, s->data, s->len);
}

static void bad(const char *name, const void *p, size_t n, const char *cls, const char *err)
{
	char fn[128], line[512];

	snprintf(fn, sizeof(fn), "%s.stream", name);
	write_file("bad", fn, p, n);
	snprintf(fn, sizeof(fn), "%s.err", name);
	snprintf(line, sizeof(line), "%s\n", err);
	write_file("bad", fn, line, strlen(line));
	fprintf(classes, "%s %s\n", name, cls);
}

static void badbuf(const char *name, const struct fbuf *s, const char *cls, const char *err)
{
	bad(name, s->data, s->len, cls, err);
}

/* ---- the good vectors ------------------------------------------------- */

/* package (send -R): tank/home@mon, @tue, tank/home/sub@tue, into s (reset
 * first), written as good/NAME */
static void good_package(const char *name, struct fbuf *s)
{
	struct stream_encoder *e;
	struct stream_begin b;
	const struct stream_prop hp[] = {{"compression", "lz4", STREAM_SRC_LOCAL}};
	const struct stream_snap hs[] = {{G_MON, 42, T_MON, "mon"}, {G_TUE, 57, T_TUE, "tue"}};
	const struct stream_snap ss[] = {{G_SUB, 57, T_TUE, "tue"}};
	const struct stream_dataset dsets[] = {
		{0xa1, STREAM_DS_FILESYSTEM, "tank/home", hp, 1, hs, 2},
		{0xa2, STREAM_DS_FILESYSTEM, "tank/home/sub", NULL, 0, ss, 1},
	};
	const uint32_t f = STREAM_F_REPLICATE | STREAM_F_PROPS;
	/* as send -R writes it: TREE on the PACKAGE, not on the BEGINs */
	struct stream_package k = {.flags = f | STREAM_F_TREE, .ndatasets = 2,
				   .top = "tank/home", .to_snap = "tue", .from_snap = ""};

	CHECK(stream_encoder_new(&e, vflags));
	CHECK(stream_encode_package(e, &k, s));
	CHECK(stream_encode_dataset(e, &dsets[0], s));
	CHECK(stream_encode_dataset(e, &dsets[1], s));
	b = begin_mon();
	b.flags = f;
	CHECK(stream_encode_begin(e, &b, s));
	body_mon(e, s, 0);
	CHECK(stream_encode_end(e, s));
	b = begin_of("tank/home", "tue", G_TUE, G_MON, T_TUE, 57, &R1b);
	b.flags = f;
	CHECK(stream_encode_begin(e, &b, s));
	body_tue(e, s);
	CHECK(stream_encode_end(e, s));
	b = begin_of("tank/home/sub", "tue", G_SUB, 0, T_TUE, 57, &R5);
	b.flags = f;
	CHECK(stream_encode_begin(e, &b, s));
	put_write(e, &B5, s);
	put_node(e, &L5, s);
	put_node(e, &D5, s);
	put_node(e, &R5, s);
	CHECK(stream_encode_end(e, s));
	CHECK(stream_encode_package_end(e, s));
	stream_encoder_free(e);
	good(name, s);
	tree_mon(name, "/home@mon");
	tree_tue(name, "/home@tue");
	tree_line(name, "/home/sub@tue", "readme", &L5);
}


static void good_vectors(void)
{
	struct stream_encoder *e;
	struct stream_begin b;
	struct stream_token tok;
	struct fbuf s;
	char token[STREAM_TOKEN_MAX + 1];

	/* full: tank/home@mon */
	fbuf_init(&s, 1 << 20);
	b = begin_mon();
	stream_mon(&s, 0, &b);
	good("full", &s);
	tree_mon("full", "@mon");
	{
		/* what a receive interrupted after body record 3 kept */
		struct recs r;
		split(&s, &r);
		write_file("good", "resumed.base", s.data, r.r[4].off);
	}
	fbuf_release(&s);

	/* incremental: mon -> tue, one block changed */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_of("tank/home", "tue", G_TUE, G_MON, T_TUE, 57, &R1b);
	CHECK(stream_encode_begin(e, &b, &s));
	body_tue(e, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("incremental", &s);
	tree_tue("incremental", "@tue");
	fbuf_release(&s);

	/* empty incremental: tue -> wed, nothing changed */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_of("tank/home", "wed", G_WED, G_TUE, T_WED, 60, &R1b);
	CHECK(stream_encode_begin(e, &b, &s));
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("empty-incremental", &s);
	tree_tue("empty-incremental", "@wed");
	fbuf_release(&s);

	/* compressed (send -c): lz4, gzip-7, zle and off blocks */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_of("tank/data", "c1", G_CMP, 0, T_MON, 43, &RC);
	b.flags = STREAM_F_COMPRESSED;
	CHECK(stream_encode_begin(e, &b, &s));
	put_write(e, &C1, &s);
	put_write(e, &C2, &s);
	put_write(e, &C3, &s);
	put_write(e, &C4, &s);
	put_node(e, &LC, &s);
	put_node(e, &DC, &s);
	put_node(e, &RC, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("compressed", &s);
	tree_line("compressed", "@c1", "big.bin", &LC);
	fbuf_release(&s);

	/* a volume with properties (send -p) */
	{
		const struct stream_prop props[] = {
			{"checksum", "on", STREAM_SRC_INHERITED},
			{"com.example:owner", "ops team \xc3\xa9 \"night\"\tshift", STREAM_SRC_RECEIVED},
			{"compression", "gzip-9", STREAM_SRC_LOCAL},
			{"readonly", "off", STREAM_SRC_DEFAULT},
			{"volsize", "1048576", STREAM_SRC_LOCAL},
		};
		fbuf_init(&s, 1 << 20);
		CHECK(stream_encoder_new(&e, vflags));
		b = begin_of("tank/vol", "p1", G_VOL, 0, T_TUE, 58, &RV);
		b.ds_type = STREAM_DS_VOLUME;
		b.flags = STREAM_F_PROPS;
		b.props = props;
		b.nprops = sizeof(props) / sizeof(props[0]);
		CHECK(stream_encode_begin(e, &b, &s));
		put_write(e, &V1, &s);
		put_write(e, &V2, &s);
		put_node(e, &LV, &s);
		put_node(e, &RV, &s);
		CHECK(stream_encode_end(e, &s));
		stream_encoder_free(e);
		good("volume-props", &s);
		tree_line("volume-props", "@p1", NULL, &LV);
		fbuf_release(&s);
	}

	fbuf_init(&s, 1 << 20);
	good_package("package", &s);
	fbuf_release(&s);

	/* resumed: tank/home@mon after body records 1..3 were received */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_mon();
	b.flags = STREAM_F_RESUMED;
	b.resume_pos = 3;
	CHECK(stream_encode_begin(e, &b, &s));
	body_mon(e, &s, 3);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("resumed", &s);
	tree_mon("resumed", "@mon");
	fbuf_release(&s);
	memset(&tok, 0, sizeof(tok));
	tok.to_guid = G_MON;
	tok.resume_pos = 3;
	snprintf(tok.dataset, sizeof(tok.dataset), "tank/home");
	snprintf(tok.snapshot, sizeof(tok.snapshot), "mon");
	CHECK(stream_token_encode(&tok, token, sizeof(token)));
	{
		size_t n = strlen(token);
		token[n] = '\n'; /* token has STREAM_TOKEN_MAX + 1 bytes */
		write_file("good", "resumed.token", token, n + 1);
	}

	/* an optional feature bit this reader does not know: accepted */
	fbuf_init(&s, 1 << 20);
	b = begin_mon();
	b.features_opt = 0x4;
	stream_mon(&s, STREAM_ENC_UNCHECKED, &b);
	good("optional-feature", &s);
	tree_mon("optional-feature", "@mon");
	fbuf_release(&s);

	/* skippable: a record of a future type that readers may skip */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags | STREAM_ENC_UNCHECKED));
	b = begin_mon();
	CHECK(stream_encode_begin(e, &b, &s));
	put_write(e, &B1, &s);
	put_write(e, &B2, &s);
	put_node(e, &L1, &s);
	CHECK(stream_encode_raw(e, 0x100, STREAM_RF_SKIPPABLE, "a future extension", 18, &s));
	put_write(e, &B3, &s);
	put_node(e, &L2, &s);
	put_node(e, &D1, &s);
	put_node(e, &R1, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("skippable", &s);
	tree_mon("skippable", "@mon");
	{
		struct recs r;
		split(&s, &r);
		bad("trunc-after-skippable", s.data, r.r[5].off, "truncated",
		    "stream truncated after record 4 (type 256): END missing");
	}
	fbuf_release(&s);
}

/* ---- the bad vectors ---------------------------------------------------- */

static void flip(const char *name, const struct fbuf *base, size_t at, unsigned bit,
		 const char *cls, const char *err)
{
	uint8_t *p = malloc(base->len);

	if (!p)
		die(-FERR_NOMEM, "flip");
	memcpy(p, base->data, base->len);
	p[at] ^= (uint8_t)(1u << bit);
	bad(name, p, base->len, cls, err);
	free(p);
}

static void cut(const char *name, const struct fbuf *base, size_t n, const char *cls,
		const char *err)
{
	bad(name, base->data, n, cls, err);
}

/* Concatenates whole records (with their original trailers) of base. */
static void order(const char *name, const struct fbuf *base, const struct recs *r,
		  const int *idx, size_t n, const char *cls, const char *err)
{
	struct fbuf s;

	fbuf_init(&s, 1 << 20);
	for (size_t i = 0; i < n; i++)
		CHECK(fbuf_append(&s, base->data + r->r[idx[i]].off, r->r[idx[i]].size));
	badbuf(name, &s, cls, err);
	fbuf_release(&s);
}

/* Re-frames base's records with byte at of record idx's payload set to v
 * (the chain stays correct, so the field check must catch it). */
static uint8_t patchbuf[8192];

static void patch_op(const char *name, const struct recs *base, size_t idx, size_t at,
		     size_t n, uint64_t v, int xor, int keep, const char *cls, const char *err)
{
	struct recs r = *base;
	struct fbuf s;

	memcpy(patchbuf, r.r[idx].p, r.r[idx].len);
	for (size_t i = 0; i < n; i++) {
		uint8_t x = (uint8_t)(v >> (8 * i));
		patchbuf[at + i] = xor ? patchbuf[at + i] ^ x : x;
	}
	r.r[idx].p = patchbuf;
	r.r[idx].keep = keep;
	fbuf_init(&s, 1 << 20);
	emit(&r, &s);
	badbuf(name, &s, cls, err);
	fbuf_release(&s);
}

static void patch(const char *name, const struct recs *base, size_t idx, size_t at, size_t n,
		  uint64_t v, int keep, const char *cls, const char *err)
{
	patch_op(name, base, idx, at, n, v, 0, keep, cls, err);
}

/* Flips the bits of v in byte at of record idx's payload, re-framed. */
static void patch_xor(const char *name, const struct recs *base, size_t idx, size_t at,
		      uint8_t v, int keep, const char *cls, const char *err)
{
	patch_op(name, base, idx, at, 1, v, 1, keep, cls, err);
}

/* A mon stream from an unchecked encoder with BEGIN b. */
static void bad_begin(const char *name, const struct stream_begin *b, const char *cls,
		      const char *err)
{
	struct fbuf s;

	fbuf_init(&s, 1 << 20);
	stream_mon(&s, STREAM_ENC_UNCHECKED, b);
	badbuf(name, &s, cls, err);
	fbuf_release(&s);
}

/* BEGIN (flags), one bad WRITE, then the rest of a valid-looking body. */
static void bad_write(const char *name, uint32_t flags, const struct stream_write *w,
		      const char *cls, const char *err)
{
	struct stream_encoder *e;
	struct stream_begin b = begin_mon();
	struct fbuf s;

	b.flags = flags;
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags | STREAM_ENC_UNCHECKED));
	CHECK(stream_encode_begin(e, &b, &s));
	CHECK(stream_encode_write(e, w, &s));
	body_mon(e, &s, 0);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	badbuf(name, &s, cls, err);
	fbuf_release(&s);
}

static struct stream_write write_of(const struct blk *b)
{
	struct stream_write w;

	memcpy(w.hash, b->hash, FERRY_HASH_LEN);
	w.lsize = b->lsize;
	w.codec = b->codec;
	w.level = b->level;
	w.psize = b->psize;
	w.data = b->wire;
	return w;
}

/* What a package vector may change. */
struct pkgmod {
	uint32_t pkg_flags;
	uint32_t ndatasets;
	const char *from;
	const char *ds_name[2];
	struct stream_snap home_snaps[2];
	uint32_t sub_flags;
	const char *sub_ds;
};

static struct pkgmod pkg_default(void)
{
	struct pkgmod m = {
		.pkg_flags = STREAM_F_REPLICATE | STREAM_F_PROPS,
		.ndatasets = 2,
		.from = "",
		.ds_name = {"tank/home", "tank/home/sub"},
		.home_snaps = {{G_MON, 42, T_MON, "mon"}, {G_TUE, 57, T_TUE, "tue"}},
		.sub_flags = STREAM_F_REPLICATE | STREAM_F_PROPS,
		.sub_ds = "tank/home",
	};
	return m;
}

static void build_package(struct fbuf *s, unsigned encflags, const struct pkgmod *m)
{
	const struct stream_prop hp[] = {{"compression", "lz4", STREAM_SRC_LOCAL}};
	const struct stream_snap ss[] = {{G_SUB, 57, T_TUE, "tue"}};
	const struct stream_dataset dsets[] = {
		{0xa1, STREAM_DS_FILESYSTEM, m->ds_name[0], hp, 1, m->home_snaps, 2},
		{0xa2, STREAM_DS_FILESYSTEM, m->ds_name[1], NULL, 0, ss, 1},
	};
	struct stream_package k = {.flags = m->pkg_flags, .ndatasets = m->ndatasets,
				   .top = "tank/home", .to_snap = "tue", .from_snap = m->from};
	struct stream_encoder *e;
	struct stream_begin b;

	CHECK(stream_encoder_new(&e, vflags | encflags));
	CHECK(stream_encode_package(e, &k, s));
	CHECK(stream_encode_dataset(e, &dsets[0], s));
	CHECK(stream_encode_dataset(e, &dsets[1], s));
	b = begin_mon();
	b.dataset = m->sub_ds;
	b.flags = m->sub_flags;
	CHECK(stream_encode_begin(e, &b, s));
	body_mon(e, s, 0);
	CHECK(stream_encode_end(e, s));
	b = begin_of("tank/home", "tue", G_TUE, G_MON, T_TUE, 57, &R1b);
	b.flags = m->pkg_flags;
	CHECK(stream_encode_begin(e, &b, s));
	body_tue(e, s);
	CHECK(stream_encode_end(e, s));
	b = begin_of("tank/home/sub", "tue", G_SUB, 0, T_TUE, 57, &R5);
	b.flags = m->pkg_flags;
	CHECK(stream_encode_begin(e, &b, s));
	put_write(e, &B5, s);
	put_node(e, &L5, s);
	put_node(e, &D5, s);
	put_node(e, &R5, s);
	CHECK(stream_encode_end(e, s));
	CHECK(stream_encode_package_end(e, s));
	stream_encoder_free(e);
}

static void bad_package(const char *name, const struct pkgmod *m, const char *cls,
			const char *err)
{
	struct fbuf s;

	fbuf_init(&s, 1 << 20);
	build_package(&s, STREAM_ENC_UNCHECKED, m);
	badbuf(name, &s, cls, err);
	fbuf_release(&s);
}

static void bad_vectors(void)
{
	struct fbuf base, other, pkg, s;
	struct recs r, ro;
	struct stream_begin b;
	struct stream_write w;
	struct stream_encoder *e;
	struct pkgmod m;
	uint8_t hdr[STREAM_HDR_LEN + 64];
	char longname[300], msg[256];

	fbuf_init(&base, 1 << 20);
	b = begin_mon();
	stream_mon(&base, 0, &b);
	split(&base, &r);
	/* r: 0 BEGIN, 1 WRITE B1, 2 WRITE B2, 3 NODE L1, 4 WRITE B3,
	 *    5 NODE L2, 6 NODE D1, 7 NODE R1 (root), 8 END */

	/* damage in transit: the chain catches it where it happens */
	flip("flip-header-length", &base, r.r[2].off + 4, 0, "corrupt",
	     "record 2 (WRITE): trailer mismatch");
	flip("flip-header-type", &base, r.r[4].off, 0, "limit",
	     "record 4 (WRITE_BYREF): payload length 148 exceeds maximum 40");
	flip("flip-payload", &base, r.r[3].off + STREAM_HDR_LEN + 40, 3, "corrupt",
	     "record 3 (NODE): trailer mismatch");
	flip("flip-begin-name", &base, r.r[0].off + STREAM_HDR_LEN + 122, 5, "corrupt",
	     "record 0 (BEGIN): trailer mismatch");
	flip("flip-trailer", &base, r.r[5].off + r.r[5].size - 1, 7, "corrupt",
	     "record 5 (NODE): trailer mismatch");
	flip("flip-end", &base, r.r[8].off + STREAM_HDR_LEN + 20, 1, "corrupt",
	     "record 8 (END): trailer mismatch");
	cut("empty", &base, 0, "truncated", "empty stream");
	cut("trunc-header", &base, r.r[4].off + 5, "truncated",
	    "stream truncated in record 4: 5 of 8 header bytes");
	cut("trunc-payload", &base, r.r[2].off + STREAM_HDR_LEN + 100, "truncated",
	    "stream truncated in record 2 (WRITE): 100 of 560 payload bytes");
	cut("trunc-trailer", &base, r.r[1].off + r.r[1].size - 3, "truncated",
	    "stream truncated in record 1 (WRITE): 13 of 16 trailer bytes");
	cut("trunc-before-end", &base, r.r[8].off, "truncated",
	    "stream truncated after record 7 (NODE): END missing");
	cut("trunc-in-begin", &base, 60, "truncated",
	    "stream truncated in record 0 (BEGIN): 52 of 132 payload bytes");
	order("reordered", &base, &r, (const int[]){0, 2, 1, 3, 4, 5, 6, 7, 8}, 9, "corrupt",
	      "record 1 (WRITE): trailer mismatch");
	order("dropped", &base, &r, (const int[]){0, 1, 2, 3, 5, 6, 7, 8}, 8, "corrupt",
	      "record 4 (NODE): trailer mismatch");
	order("replayed", &base, &r, (const int[]){0, 1, 1, 2, 3, 4, 5, 6, 7, 8}, 10, "corrupt",
	      "record 2 (WRITE): trailer mismatch");
	order("end-only", &base, &r, (const int[]){0, 8}, 2, "corrupt",
	      "record 1 (END): trailer mismatch");

	/* a record spliced in from a stream of another snapshot */
	fbuf_init(&other, 1 << 20);
	b = begin_mon();
	b.to_guid = G_OTHER;
	stream_mon(&other, 0, &b);
	split(&other, &ro);
	fbuf_init(&s, 1 << 20);
	for (size_t i = 0; i < r.n; i++) {
		const struct fbuf *src = i == 3 ? &other : &base;
		const struct rec *x = i == 3 ? &ro.r[i] : &r.r[i];
		CHECK(fbuf_append(&s, src->data + x->off, x->size));
	}
	badbuf("spliced", &s, "corrupt", "record 3 (NODE): trailer mismatch");
	fbuf_reset(&s);
	/* the whole body of the other stream after this BEGIN */
	CHECK(fbuf_append(&s, base.data, r.r[0].size));
	CHECK(fbuf_append(&s, other.data + ro.r[1].off, other.len - ro.r[1].off));
	badbuf("spliced-body", &s, "corrupt", "record 1 (WRITE): trailer mismatch");
	fbuf_reset(&s);
	CHECK(fbuf_append(&s, base.data, base.len));
	CHECK(fbuf_append(&s, "junk\n", 5));
	snprintf(msg, sizeof(msg), "trailing data at byte %zu, after the final END (record %zu)",
		 base.len, r.n - 1);
	badbuf("trailing-data", &s, "corrupt", msg);
	fbuf_reset(&s);
	CHECK(fbuf_append(&s, base.data, base.len));
	CHECK(fbuf_append(&s, base.data, base.len));
	snprintf(msg, sizeof(msg), "trailing data at byte %zu, after the final END", base.len);
	badbuf("two-streams", &s, "corrupt", msg);
	fbuf_release(&other);
	bad("not-ferry", "This is not a ferry stream, just text.\n", 39, "corrupt",
	    "record 0: not a ferry stream (first record type 26708");

	/* header checks, before anything is allocated */
	fbuf_reset(&s);
	CHECK(fbuf_append(&s, base.data, r.r[3].off));
	memset(hdr, 0, sizeof(hdr));
	put_le16(hdr, STREAM_NODE);
	put_le32(hdr + 4, STREAM_PAYLOAD_MAX + 1);
	CHECK(fbuf_append(&s, hdr, sizeof(hdr)));
	badbuf("over-max", &s, "limit",
	       "record 3 (NODE): payload length 4194341 exceeds maximum 4194340");
	fbuf_reset(&s);
	CHECK(fbuf_append(&s, base.data, r.r[1].off));
	memset(hdr, 0, sizeof(hdr));
	put_le16(hdr, STREAM_WRITE);
	put_le32(hdr + 4, UINT32_MAX);
	CHECK(fbuf_append(&s, hdr, sizeof(hdr)));
	badbuf("over-max-4g", &s, "limit",
	       "record 1 (WRITE): payload length 4294967295 exceeds maximum 1048624");
	fbuf_reset(&s);
	memset(hdr, 0, sizeof(hdr));
	put_le16(hdr, STREAM_BEGIN);
	put_le32(hdr + 4, 0x7fffffff);
	CHECK(fbuf_append(&s, hdr, sizeof(hdr)));
	badbuf("over-max-begin", &s, "limit",
	       "record 0 (BEGIN): payload length 2147483647 exceeds maximum 1048576");
	{
		struct recs x = r;
		fbuf_reset(&s);
		x.r[3].type = 99;
		emit(&x, &s);
		badbuf("unknown-type", &s, "corrupt", "record 3 (type 99): unknown record type 99");
		x = r;
		fbuf_reset(&s);
		x.r[3].flags = 0x8000;
		emit(&x, &s);
		badbuf("header-flags", &s, "corrupt",
		       "record 3 (NODE): header flags 0x8000: reserved bits set");
		x = r;
		fbuf_reset(&s);
		x.r[3].flags = STREAM_RF_SKIPPABLE;
		emit(&x, &s);
		badbuf("skippable-known", &s, "corrupt",
		       "record 3 (NODE): header flag SKIPPABLE set on a known type");
		x = r;
		fbuf_reset(&s);
		x.r[6].len = 30;
		emit(&x, &s);
		badbuf("node-short", &s, "corrupt",
		       "record 6 (NODE): payload length 30 below minimum 36");
		x = r;
		fbuf_reset(&s);
		for (size_t i = 0; i + 1 < x.n; i++)
			x.r[i] = x.r[i + 1];
		x.n--;
		emit(&x, &s);
		badbuf("body-first", &s, "corrupt",
		       "record 0: not a ferry stream (first record type 4");
	}

	/* fields, with a correct chain around them */
	patch("bad-magic", &r, 0, 7, 1, 'X', 0, "corrupt",
	      "record 0 (BEGIN): not a ferry stream (bad magic)");
	patch("bad-version", &r, 0, 8, 2, 3, 0, "unsupported",
	      "record 0 (BEGIN): format version 3 (this reader supports 1 to 2)");
	patch("unknown-feature", &r, 0, 16, 8, 0x10, 0, "unsupported",
	      "record 0 (BEGIN): unknown required features 0x10");
	patch("flags-unknown", &r, 0, 12, 4, 0x40, 0, "corrupt",
	      "record 0 (BEGIN): flags: unknown bits 0x40");
	patch("reserved-begin", &r, 0, 116, 1, 0x80, 0, "corrupt",
	      "record 0 (BEGIN): reserved byte at offset 116 is 0x80, not 0");
	patch("reserved-write", &r, 2, 44, 1, 1, 0, "corrupt",
	      "record 2 (WRITE): reserved byte at offset 44 is 0x01, not 0");
	patch("reserved-node", &r, 3, 2, 1, 1, 0, "corrupt",
	      "record 3 (NODE): reserved byte at offset 2 is 0x01, not 0");
	patch("ds-type", &r, 0, 32, 1, 3, 0, "corrupt", "record 0 (BEGIN): dataset type 3 unknown");
	patch("guid-zero", &r, 0, 40, 8, 0, 0, "corrupt", "record 0 (BEGIN): to guid is 0");
	patch("props-count", &r, 0, 36, 4, 100000, 0, "limit",
	      "record 0 (BEGIN): property count 100000 exceeds maximum 1024");
	patch("name-length", &r, 0, 112, 2, 300, 0, "limit",
	      "record 0 (BEGIN): dataset name length 300 exceeds maximum 255");
	patch("name-nul", &r, 0, 124, 1, 0, 0, "corrupt",
	      "record 0 (BEGIN): dataset name: invalid byte 0x00 at offset 4");
	patch_xor("node-hash", &r, 5, 4, 0x55, 0, "corrupt",
	      "record 5 (NODE): node hash does not match its type and bytes");
	patch("node-type-zero", &r, 5, 0, 1, 0, 0, "corrupt", "record 5 (NODE): node type 0");
	patch_xor("write-hash", &r, 4, 0, 0x55, 0, "corrupt",
	      "record 4 (WRITE): block hash does not match its content");
	patch("end-count", &r, 8, 0, 8, 7, 1, "corrupt",
	      "record 8 (END): record count 7, expected 8");
	patch_xor("end-digest", &r, 8, 8, 0x55, 1, "corrupt",
	      "record 8 (END): chain digest does not match the records before it");

	b = begin_mon();
	b.dataset = "tank/../etc";
	bad_begin("name-dotdot", &b, "corrupt", "record 0 (BEGIN): dataset name: component '..'");
	b.dataset = "/tank/home";
	bad_begin("name-slash", &b, "corrupt", "record 0 (BEGIN): dataset name: leading '/'");
	b.dataset = "tank/home/";
	bad_begin("name-trailing-slash", &b, "corrupt",
		  "record 0 (BEGIN): dataset name: trailing '/'");
	b.dataset = "tank//home";
	bad_begin("name-empty-component", &b, "corrupt",
		  "record 0 (BEGIN): dataset name: empty component");
	b.dataset = "tank/./home";
	bad_begin("name-dot", &b, "corrupt", "record 0 (BEGIN): dataset name: component '.'");
	b.dataset = "tank/ho\x1bme";
	bad_begin("name-control", &b, "corrupt",
		  "record 0 (BEGIN): dataset name: invalid byte 0x1b at offset 7");
	b.dataset = "tank/h@me";
	bad_begin("name-at", &b, "corrupt",
		  "record 0 (BEGIN): dataset name: invalid byte 0x40 at offset 6");
	memset(longname, 'a', 255);
	memcpy(longname, "tank/", 5);
	longname[252] = '\0';
	b.dataset = longname;
	bad_begin("name-toolong", &b, "limit",
		  "record 0 (BEGIN): name: dataset@snapshot length 256 exceeds maximum 255");
	b = begin_mon();
	b.snapshot = "mon/x";
	bad_begin("snap-slash", &b, "corrupt", "record 0 (BEGIN): snapshot name: contains '/'");
	b.snapshot = "..";
	bad_begin("snap-dotdot", &b, "corrupt", "record 0 (BEGIN): snapshot name: component '..'");
	b = begin_mon();
	b.flags = STREAM_F_RESUMED;
	bad_begin("resume-flag", &b, "corrupt",
		  "record 0 (BEGIN): RESUMED flag set but resume position is 0");
	b.flags = 0;
	b.resume_pos = 5;
	bad_begin("resume-noflag", &b, "corrupt",
		  "record 0 (BEGIN): RESUMED flag clear but resume position is 5");
	b.flags = STREAM_F_RESUMED;
	b.resume_pos = 1ull << 60;
	bad_begin("resume-huge", &b, "limit",
		  "record 0 (BEGIN): resume position 1152921504606846976 exceeds maximum");
	b = begin_mon();
	b.from_guid = b.to_guid;
	bad_begin("from-equals-to", &b, "corrupt", "record 0 (BEGIN): from guid equals to guid");
	b = begin_mon();
	b.flags = STREAM_F_REPLICATE;
	bad_begin("replicate-outside", &b, "corrupt",
		  "record 0 (BEGIN): REPLICATE flag outside a package");
	b = begin_mon();
	b.flags = STREAM_F_TREE;
	bad_begin("tree-on-begin", &b, "corrupt",
		  "record 0 (BEGIN): TREE flag on a BEGIN (it belongs to a PACKAGE)");
	b = begin_mon();
	b.root_type = 0;
	bad_begin("root-type-zero", &b, "corrupt", "record 0 (BEGIN): root node type 0");
	{
		const struct stream_prop unsorted[] = {{"readonly", "off", STREAM_SRC_LOCAL},
						       {"compression", "lz4", STREAM_SRC_LOCAL}};
		const struct stream_prop dup[] = {{"compression", "off", STREAM_SRC_LOCAL},
						  {"compression", "lz4", STREAM_SRC_LOCAL}};
		const struct stream_prop src[] = {{"compression", "lz4", 9}};
		const struct stream_prop upper[] = {{"Compression", "lz4", STREAM_SRC_LOCAL}};
		static char bigval[8300];
		const struct stream_prop big[] = {{"com.example:big", bigval, STREAM_SRC_LOCAL}};

		b = begin_mon();
		b.flags = STREAM_F_PROPS;
		b.props = unsorted;
		b.nprops = 2;
		bad_begin("props-unsorted", &b, "corrupt",
			  "record 0 (BEGIN): property 1: name 'compression' not after 'readonly'");
		b.props = dup;
		bad_begin("props-duplicate", &b, "corrupt",
			  "record 0 (BEGIN): property 1: name 'compression' not after 'compression' "
			  "(names must be unique and ascending)");
		b.props = src;
		b.nprops = 1;
		bad_begin("prop-source", &b, "corrupt", "record 0 (BEGIN): property 0: source 9 unknown");
		b.props = upper;
		bad_begin("prop-name", &b, "corrupt",
			  "record 0 (BEGIN): property 0: name does not start with a-z");
		memset(bigval, 'x', 8192);
		bigval[8192] = '\0';
		b.props = big;
		bad_begin("prop-value-long", &b, "limit",
			  "record 0 (BEGIN): property 0: value length 8192 exceeds maximum 8191");
		b.props = dup + 1;
		b.flags = 0;
		bad_begin("props-without-flag", &b, "corrupt",
			  "record 0 (BEGIN): 1 properties without the PROPS flag");
	}

	/* WRITE fields */
	w = write_of(&C1);
	w.psize = 200;
	w.lsize = 100;
	bad_write("psize-gt-lsize", STREAM_F_COMPRESSED, &w, "corrupt",
		  "record 1 (WRITE): psize 200 exceeds lsize 100");
	w = write_of(&B3);
	w.psize = 50;
	bad_write("off-psize", 0, &w, "corrupt", "record 1 (WRITE): codec off with psize 50 != lsize 100");
	w = write_of(&C1);
	w.codec = 7;
	bad_write("codec-unknown", STREAM_F_COMPRESSED, &w, "corrupt",
		  "record 1 (WRITE): codec 7 level 0 unknown");
	w = write_of(&C2);
	w.level = 0;
	bad_write("gzip-level", STREAM_F_COMPRESSED, &w, "corrupt",
		  "record 1 (WRITE): codec 2 level 0 unknown");
	w = write_of(&C1);
	w.level = 3;
	bad_write("lz4-level", STREAM_F_COMPRESSED, &w, "corrupt",
		  "record 1 (WRITE): codec 1 level 3 unknown");
	w = write_of(&C1);
	w.lsize = 2u << 20;
	bad_write("lsize-over-max", STREAM_F_COMPRESSED, &w, "limit",
		  "record 1 (WRITE): lsize 2097152 exceeds maximum 1048576");
	w = write_of(&C1);
	bad_write("codec-without-flag", 0, &w, "corrupt",
		  "record 1 (WRITE): codec lz4 without the COMPRESSED stream flag");
	{
		struct recs x = r;
		uint8_t p[48 + 101];
		memcpy(p, x.r[4].p, x.r[4].len);
		p[x.r[4].len] = 0;
		x.r[4].p = p;
		x.r[4].len++;
		fbuf_reset(&s);
		emit(&x, &s);
		badbuf("write-length", &s, "corrupt",
		       "record 4 (WRITE): payload length 149, expected 48 + psize 100");
	}

	/* WRITE_BYREF fields */
	fbuf_reset(&s);
	CHECK(stream_encoder_new(&e, vflags | STREAM_ENC_UNCHECKED));
	b = begin_of("tank/home", "tue", G_TUE, G_MON, T_TUE, 57, &R1b);
	CHECK(stream_encode_begin(e, &b, &s));
	CHECK(stream_encode_byref(e, B2.hash, 0, &s));
	body_tue(e, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	badbuf("byref-lsize-zero", &s, "corrupt", "record 1 (WRITE_BYREF): lsize 0");
	fbuf_reset(&s);
	CHECK(stream_encoder_new(&e, vflags | STREAM_ENC_UNCHECKED));
	CHECK(stream_encode_begin(e, &b, &s));
	CHECK(stream_encode_byref(e, B2.hash, 2u << 20, &s));
	body_tue(e, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	badbuf("byref-lsize-over-max", &s, "limit",
	       "record 1 (WRITE_BYREF): lsize 2097152 exceeds maximum 1048576");

	/* grammar */
	order("swapped-nodes", &base, &r, (const int[]){0, 1, 2, 3, 4, 6, 5, 7, 8}, 9, "corrupt",
	      "record 5 (NODE): trailer mismatch");
	{
		struct recs x = r;
		x.r[6] = r.r[7];
		x.r[7] = r.r[6];
		fbuf_reset(&s);
		emit(&x, &s);
		badbuf("root-not-last-rechained", &s, "corrupt",
		       "record 8 (END): the last record before END is not the root node named "
		       "by BEGIN");
		x = r;
		x.r[1] = r.r[8];
		x.n = 2;
		fbuf_reset(&s);
		emit(&x, &s);
		badbuf("full-no-root", &s, "corrupt", "record 1 (END): full stream without its root node");
		x = r;
		x.r[2] = r.r[0];
		fbuf_reset(&s);
		emit(&x, &s);
		badbuf("begin-in-body", &s, "corrupt",
		       "record 2 (BEGIN): BEGIN inside a snapshot stream");
	}

	/* packages */
	m = pkg_default();
	fbuf_init(&pkg, 1 << 20);
	build_package(&pkg, 0, &m);
	split(&pkg, &ro);
	/* ro: 0 PACKAGE, 1-2 DATASET, 3 BEGIN, 4-10, 11 END, 12 BEGIN, 13-17,
	 *     18 END, 19 BEGIN, 20-23, 24 END, 25 PACKAGE_END */
	patch("pkg-nsub", &ro, 25, 8, 8, 2, 1, "corrupt",
	      "record 25 (PACKAGE_END): substream count 2, expected 3");
	patch("pkg-count", &ro, 25, 0, 8, 24, 1, "corrupt",
	      "record 25 (PACKAGE_END): record count 24, expected 25");
	patch_xor("pkg-end-digest", &ro, 25, 16, 0x55, 1, "corrupt",
	      "record 25 (PACKAGE_END): chain digest does not match the records before it");
	patch("pkg-datasets-count", &ro, 0, 32, 4, 100000, 0, "limit",
	      "record 0 (PACKAGE): dataset count 100000 exceeds maximum 65536");
	patch("pkg-version", &ro, 0, 8, 2, 7, 0, "unsupported",
	      "record 0 (PACKAGE): format version 7 (this reader supports 1 to 2)");
	cut("pkg-truncated", &pkg, ro.r[25].off, "truncated",
	    "stream truncated after record 24 (END): PACKAGE_END missing");
	cut("pkg-truncated-sub", &pkg, ro.r[18].off, "truncated",
	    "stream truncated after record 17 (NODE): END missing");
	{
		struct recs x = ro;
		for (size_t i = 11; i + 1 < x.n; i++)
			x.r[i] = x.r[i + 1];
		x.n--;
		fbuf_reset(&s);
		emit(&x, &s);
		badbuf("pkg-sub-no-end", &s, "corrupt",
		       "record 11 (BEGIN): BEGIN inside a snapshot stream");
	}
	m = pkg_default();
	m.ds_name[1] = "tank/homework";
	bad_package("pkg-dataset-outside", &m, "corrupt",
		    "record 2 (DATASET): dataset 'tank/homework' is not 'tank/home' or below it");
	m = pkg_default();
	m.ds_name[0] = "tank/home/sub";
	m.ds_name[1] = "tank/home";
	bad_package("pkg-dataset-order", &m, "corrupt",
		    "record 2 (DATASET): dataset 'tank/home' not after 'tank/home/sub'");
	m = pkg_default();
	m.home_snaps[1].name = "mon";
	bad_package("pkg-snap-dup", &m, "corrupt", "record 1 (DATASET): snapshot 'mon' listed twice");
	m = pkg_default();
	m.home_snaps[1].txg = 42;
	bad_package("pkg-snap-txg", &m, "corrupt",
		    "record 1 (DATASET): snapshot 1: txg 42 not after 42");
	m = pkg_default();
	m.ndatasets = 3;
	bad_package("pkg-missing-dataset", &m, "corrupt", "record 3 (BEGIN): expected DATASET 3 of 3");
	m = pkg_default();
	m.sub_flags |= STREAM_F_COMPRESSED;
	bad_package("pkg-sub-flags", &m, "corrupt",
		    "record 3 (BEGIN): flags 0x7 differ from the package's 0x6");
	m = pkg_default();
	m.sub_ds = "tank/other";
	bad_package("pkg-sub-outside", &m, "corrupt",
		    "record 3 (BEGIN): dataset 'tank/other' is not 'tank/home' or below it");
	m = pkg_default();
	m.pkg_flags = STREAM_F_REPLICATE;
	m.sub_flags = STREAM_F_REPLICATE;
	bad_package("pkg-flags", &m, "corrupt",
		    "record 0 (PACKAGE): flags 0x4: a package needs REPLICATE and PROPS, and no "
		    "RESUMED");
	m = pkg_default();
	m.pkg_flags |= 0x20;
	m.sub_flags |= 0x20;
	bad_package("pkg-flags-unknown", &m, "corrupt",
		    "record 0 (PACKAGE): flags: unknown bits 0x20");
	m = pkg_default();
	m.pkg_flags |= STREAM_F_TREE;
	m.sub_flags |= STREAM_F_TREE;
	bad_package("pkg-sub-tree", &m, "corrupt",
		    "record 3 (BEGIN): TREE flag on a BEGIN (it belongs to a PACKAGE)");
	m = pkg_default();
	m.pkg_flags |= STREAM_F_TREE;
	m.sub_flags |= STREAM_F_COMPRESSED;
	bad_package("pkg-tree-sub-flags", &m, "corrupt",
		    "record 3 (BEGIN): flags 0x7 differ from the package's 0x6 without TREE");
	m = pkg_default();
	m.from = "tue";
	bad_package("pkg-from-equals-to", &m, "corrupt",
		    "record 0 (PACKAGE): from snapshot equals to snapshot");

	fbuf_release(&pkg);
	fbuf_release(&s);
	fbuf_release(&base);
}

/* ---- HINT (type 9): good and bad ------------------------------------------ */

#define WRITE_FIXED_LEN 48 /* a WRITE payload's fields before its data */

/* A HINT payload: size, tried codec and level, reserved zero. */
static void hint_payload(uint8_t p[16], uint64_t size, uint8_t codec, uint8_t level)
{
	memset(p, 0, 16);
	put_le64(p, size);
	p[8] = codec;
	p[9] = level;
}

/* Puts a record (payload p, borrowed) in x at position at, the rest moved up. */
static void insert(struct recs *x, size_t at, uint16_t type, uint16_t flags, const uint8_t *p,
		   uint32_t len)
{
	if (x->n == MAXREC)
		die(-FERR_LIMIT, "too many records");
	memmove(&x->r[at + 1], &x->r[at], (x->n - at) * sizeof(x->r[0]));
	x->n++;
	memset(&x->r[at], 0, sizeof(x->r[0]));
	x->r[at].type = type;
	x->r[at].flags = flags;
	x->r[at].p = p;
	x->r[at].len = len;
}

/* src with a HINT of tried codec/level as record 1 whose size estimate is
 * the whole result's length (what send writes from a dry run's count). */
static void with_hint(const struct fbuf *src, uint8_t codec, uint8_t level, struct fbuf *out)
{
	static uint8_t hp[16];
	struct recs x;

	split(src, &x);
	hint_payload(hp, src->len + stream_size_hint(), codec, level);
	insert(&x, 1, STREAM_HINT, STREAM_RF_SKIPPABLE, hp, 16);
	emit(&x, out);
	if (out->len != src->len + stream_size_hint())
		die(-FERR_INVAL, "a HINT vector is not its estimate's length");
}

static void read_good(const char *name, struct fbuf *out)
{
	char path[512];
	FILE *f;
	uint8_t buf[65536];
	size_t k;

	snprintf(path, sizeof(path), "%s/good/%s.stream", outdir, name);
	if (!(f = fopen(path, "rb")))
		die(-FERR_IO, path);
	while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
		CHECK(fbuf_append(out, buf, k));
	fclose(f);
}

static void hint_good(void)
{
	struct fbuf src, s;

	/* hint: full's stream with a HINT: its exact size, raw blocks tried
	 * with gzip-7 (what send --compress=gzip-7 says) */
	fbuf_init(&src, 1 << 20);
	fbuf_init(&s, 1 << 20);
	read_good("full", &src);
	with_hint(&src, STREAM_CODEC_GZIP, 7, &s);
	good("hint", &s);
	tree_mon("hint", "@mon");
	/* package-hint: package's with a HINT before its DATASETs, lz4 tried */
	fbuf_reset(&src);
	fbuf_reset(&s);
	read_good("package", &src);
	with_hint(&src, STREAM_CODEC_LZ4, 0, &s);
	good("package-hint", &s);
	tree_mon("package-hint", "/home@mon");
	tree_tue("package-hint", "/home@tue");
	tree_line("package-hint", "/home/sub@tue", "readme", &L5);
	fbuf_release(&src);
	fbuf_release(&s);
}

/* hint/x with the HINT at record `at` (payload p, len, header flags). */
static void bad_hint(const char *name, const char *base, size_t at, uint16_t flags,
		     const uint8_t *p, uint32_t len, const char *cls, const char *err)
{
	struct fbuf src, s;
	struct recs x;

	fbuf_init(&src, 1 << 20);
	fbuf_init(&s, 1 << 20);
	read_good(base, &src);
	split(&src, &x);
	insert(&x, at, STREAM_HINT, flags, p, len);
	emit(&x, &s);
	badbuf(name, &s, cls, err);
	fbuf_release(&src);
	fbuf_release(&s);
}

static void hint_bad(void)
{
	static uint8_t ok[16], long_[17], rsv[16], cod[16], gz0[16], off3[16];

	hint_payload(ok, 1000, STREAM_CODEC_GZIP, 7);
	memset(long_, 0, sizeof(long_));
	memcpy(long_, ok, 16);
	memcpy(rsv, ok, 16);
	rsv[12] = 1;
	hint_payload(cod, 1000, 9, 0);
	hint_payload(gz0, 1000, STREAM_CODEC_GZIP, 0);
	hint_payload(off3, 1000, STREAM_CODEC_OFF, 3);
	bad_hint("hint-not-skippable", "full", 1, 0, ok, 16, "corrupt",
		 "record 1 (HINT): header flag SKIPPABLE missing (a HINT always has it)");
	bad_hint("hint-long", "full", 1, STREAM_RF_SKIPPABLE, long_, 17, "limit",
		 "record 1 (HINT): payload length 17 exceeds maximum 16");
	bad_hint("hint-short", "full", 1, STREAM_RF_SKIPPABLE, ok, 15, "corrupt",
		 "record 1 (HINT): payload length 15 below minimum 16");
	bad_hint("hint-reserved", "full", 1, STREAM_RF_SKIPPABLE, rsv, 16, "corrupt",
		 "record 1 (HINT): reserved byte at offset 12 is 0x01, not 0");
	bad_hint("hint-codec", "full", 1, STREAM_RF_SKIPPABLE, cod, 16, "corrupt",
		 "record 1 (HINT): tried codec 9 level 0 unknown");
	bad_hint("hint-gzip-level", "full", 1, STREAM_RF_SKIPPABLE, gz0, 16, "corrupt",
		 "record 1 (HINT): tried codec 2 level 0 unknown");
	bad_hint("hint-off-level", "full", 1, STREAM_RF_SKIPPABLE, off3, 16, "corrupt",
		 "record 1 (HINT): tried codec 0 level 3 unknown");
	bad_hint("hint-in-body", "full", 3, STREAM_RF_SKIPPABLE, ok, 16, "corrupt",
		 "record 3 (HINT): a HINT is only allowed as record 1");
	bad_hint("hint-twice", "hint", 2, STREAM_RF_SKIPPABLE, ok, 16, "corrupt",
		 "record 2 (HINT): a HINT is only allowed as record 1");
	bad_hint("hint-after-dataset", "package", 2, STREAM_RF_SKIPPABLE, ok, 16, "corrupt",
		 "record 2 (HINT): a HINT is only allowed as record 1");
	{
		/* a raw block that is not its hash, in a stream claiming that its
		 * raw blocks were tried: the claim saves the codec, never the check */
		static uint8_t w[WRITE_FIXED_LEN + 4096];
		struct fbuf src, s;
		struct recs x;

		fbuf_init(&src, 1 << 20);
		fbuf_init(&s, 1 << 20);
		read_good("hint", &src);
		split(&src, &x);
		if (x.r[2].type != STREAM_WRITE || x.r[2].len > sizeof(w))
			die(-FERR_INVAL, "hint's record 2 is not a small WRITE");
		memcpy(w, x.r[2].p, x.r[2].len);
		w[WRITE_FIXED_LEN] ^= 0x20;
		x.r[2].p = w;
		emit(&x, &s);
		badbuf("hint-write-hash", &s, "corrupt",
		       "record 2 (WRITE): block hash does not match its content");
		fbuf_release(&src);
		fbuf_release(&s);
	}
	bad_hint("hint-in-substream", "package", 4, STREAM_RF_SKIPPABLE, ok, 16, "corrupt",
		 "record 4 (HINT): a HINT is only allowed as record 1");
}

/* ---- version 2 ------------------------------------------------------------ */

/* Version 2 streams, whose chain takes the data of a WRITE or NODE by its
 * CRC-32C, and what damage to them looks like. */
static void v2_vectors(void)
{
	struct stream_encoder *e;
	struct stream_begin b;
	struct fbuf s;
	struct recs r;
	uint8_t *p;

	vflags = 0;
	fbuf_init(&s, 1 << 20);
	b = begin_mon();
	stream_mon(&s, 0, &b);
	good("v2-full", &s);
	tree_mon("v2-full", "@mon");
	split(&s, &r);
	/* record 1 is B1's WRITE (codec off), record 3 L1's NODE: a bit
	 * flipped in their data is caught by the CRC, at the record */
	flip("v2-flip-write-data", &s, r.r[1].off + STREAM_HDR_LEN + WRITE_FIXED_LEN + 5, 3,
	     "corrupt", "record 1 (WRITE): trailer mismatch");
	flip("v2-flip-write-hash", &s, r.r[1].off + STREAM_HDR_LEN + 3, 0, "corrupt",
	     "record 1 (WRITE): trailer mismatch");
	flip("v2-flip-node-bytes", &s, r.r[3].off + STREAM_HDR_LEN + 36 + 1, 6, "corrupt",
	     "record 3 (NODE): trailer mismatch");
	/* new data under a correct chain: the block's own hash refuses it */
	patch_xor("v2-write-data-reframed", &r, 1, WRITE_FIXED_LEN + 5, 0x08, 0, "corrupt",
		  "record 1 (WRITE): block hash does not match its content");
	fbuf_release(&s);

	/* a version 1 stream relabelled 2, its version 1 trailers kept */
	fbuf_init(&s, 1 << 20);
	vflags = STREAM_ENC_V1;
	b = begin_mon();
	stream_mon(&s, 0, &b);
	vflags = 0;
	if (!(p = malloc(s.len)))
		die(-FERR_NOMEM, "v2");
	memcpy(p, s.data, s.len);
	p[STREAM_HDR_LEN + 8] = 2;
	bad("v2-relabelled-v1", p, s.len, "corrupt", "record 0 (BEGIN): trailer mismatch");
	free(p);
	fbuf_release(&s);

	/* incremental: mon -> tue, one block changed, one by reference */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_of("tank/home", "tue", G_TUE, G_MON, T_TUE, 57, &R1b);
	CHECK(stream_encode_begin(e, &b, &s));
	body_tue(e, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("v2-incremental", &s);
	tree_tue("v2-incremental", "@tue");
	fbuf_release(&s);

	/* compressed (send -c): lz4, gzip-7, zle and off blocks */
	fbuf_init(&s, 1 << 20);
	CHECK(stream_encoder_new(&e, vflags));
	b = begin_of("tank/data", "c1", G_CMP, 0, T_MON, 43, &RC);
	b.flags = STREAM_F_COMPRESSED;
	CHECK(stream_encode_begin(e, &b, &s));
	put_write(e, &C1, &s);
	put_write(e, &C2, &s);
	put_write(e, &C3, &s);
	put_write(e, &C4, &s);
	put_node(e, &LC, &s);
	put_node(e, &DC, &s);
	put_node(e, &RC, &s);
	CHECK(stream_encode_end(e, &s));
	stream_encoder_free(e);
	good("v2-compressed", &s);
	tree_line("v2-compressed", "@c1", "big.bin", &LC);
	split(&s, &r);
	/* record 2 is C2's gzip-7 payload: damage in transit is the CRC's */
	flip("v2-flip-gzip-data", &s, r.r[2].off + STREAM_HDR_LEN + WRITE_FIXED_LEN + 9, 1,
	     "corrupt", "record 2 (WRITE): trailer mismatch");
	fbuf_release(&s);

	/* a version 1 BEGIN inside a version 2 package (record 3: PACKAGE,
	 * two DATASETs, then the first BEGIN), re-framed */
	fbuf_init(&s, 1 << 20);
	good_package("v2-package", &s);
	split(&s, &r);
	patch("v2-mixed-version", &r, 3, 8, 2, 1, 0, "corrupt",
	      "record 3 (BEGIN): format version 1 inside a version 2 stream");
	fbuf_release(&s);
	vflags = STREAM_ENC_V1;
}

int main(int argc, char **argv)
{
	char path[512];

	if (argc > 2) {
		fprintf(stderr, "usage: mkvectors [DIR]\n");
		return 2;
	}
	if (argc == 2)
		outdir = argv[1];
	CHECK(ferry_lib_init());
	content();
	snprintf(path, sizeof(path), "%s/bad", outdir);
	CHECK(io_mkdirs(path, 0755));
	snprintf(path, sizeof(path), "%s/bad/CLASSES", outdir);
	if (!(classes = fopen(path, "w"))) {
		perror(path);
		return 1;
	}
	good_vectors();
	hint_good();
	write_trees();
	bad_vectors();
	hint_bad();
	v2_vectors();
	if (fclose(classes) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}
