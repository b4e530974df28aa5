/* stream/parse.c — the payload fields of docs/ferry-stream.5: every
 * record type's fixed part, lengths, counts, names and properties, checked
 * against the payload length before they are read, then copied into the
 * caller's aux buffer (one bounded arena per record). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int prop_name_check(const uint8_t *p, size_t n, char *why, size_t wn)
{
	if (n == 0)
		return snprintf(why, wn, "empty"), -1;
	if (!(p[0] >= 'a' && p[0] <= 'z'))
		return snprintf(why, wn, "does not start with a-z"), -1;
	for (size_t i = 1; i < n; i++) {
		uint8_t ch = p[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		    ch == '-' || ch == '.' || ch == ':')
			continue;
		return snprintf(why, wn, "invalid byte 0x%02x at offset %zu", (unsigned)ch, i), -1;
	}
	return 0;
}

/* ---- aux arena: parsed strings and arrays -------------------------------
 * The caller computes an upper bound, reserves it once, and carves pieces
 * out; nothing moves while pointers are handed out. */
struct arena {
	uint8_t *base;
	size_t off, cap;
};

#define ARENA_ALIGN 16u

static int arena_open(struct arena *a, struct fbuf *aux, size_t bound)
{
	int r;

	fbuf_reset(aux);
	if ((r = fbuf_reserve(aux, bound)) < 0)
		return r;
	a->base = aux->data;
	a->off = 0;
	a->cap = aux->cap;
	return 0;
}

static void *arena_take(struct arena *a, size_t n)
{
	size_t off = (a->off + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);

	/* The bound includes padding for every take; this cannot fail. */
	if (off > a->cap || n > a->cap - off)
		BUG("a decoder arena overflows its bound");
	a->off = off + n;
	return a->base + off;
}

static const char *arena_str(struct arena *a, const uint8_t *p, size_t n)
{
	char *s;

	if (a->off > a->cap || n + 1 > a->cap - a->off)
		BUG("a decoder arena overflows its bound");
	s = (char *)a->base + a->off;
	memcpy(s, p, n);
	s[n] = '\0';
	a->off += n + 1;
	return s;
}

/* bound = sum of pieces + n_takes * ARENA_ALIGN, all checked. */
static int bound_add(size_t *b, size_t n)
{
	return sz_add(*b, n, b);
}

static int bound_arr(size_t *b, size_t count, size_t size)
{
	size_t n;
	int r;

	if ((r = sz_mul(count, size, &n)) < 0)
		return r;
	if ((r = sz_add(n, ARENA_ALIGN, &n)) < 0)
		return r;
	return sz_add(*b, n, b);
}

/* ---- payload parsing -------------------------------------------------- */

static int reserved_zero(const struct vctx *c, const uint8_t *p, size_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[off + i])
			return vfail(c, 0, "reserved byte at offset %zu is 0x%02x, not 0", off + i,
				     (unsigned)p[off + i]);
	return 0;
}

static int check_features(const struct vctx *c, uint64_t req)
{
	if (req & ~FEATURES_REQ_KNOWN)
		return vfail(c, FERR_UNSUPPORTED, "unknown required features 0x%" PRIx64
			     " (this reader knows 0x%" PRIx64 ")", req & ~FEATURES_REQ_KNOWN,
			     FEATURES_REQ_KNOWN);
	return 0;
}

static int check_ds_type(const struct vctx *c, uint8_t t)
{
	if (t != STREAM_DS_FILESYSTEM && t != STREAM_DS_VOLUME)
		return vfail(c, 0, "dataset type %u unknown", (unsigned)t);
	return 0;
}

/* Checks a property list at p[*off..len), advancing *off; counts the string
 * bytes into *strbytes. */
static int props_check(const struct vctx *c, const uint8_t *p, size_t len, size_t *off,
		       size_t count, size_t *strbytes)
{
	const uint8_t *prev = NULL;
	size_t prevlen = 0;
	char why[96];

	for (size_t i = 0; i < count; i++) {
		size_t nl, vl, o = *off;
		uint8_t src;

		if (len - o < PROP_FIXED)
			return vfail(c, 0, "property %zu runs past the payload end", i);
		nl = p[o];
		src = p[o + 1];
		vl = get_le16(p + o + 2);
		o += PROP_FIXED;
		if (nl == 0)
			return vfail(c, 0, "property %zu: name length 0", i);
		if (vl > STREAM_PROP_VALUE_MAX)
			return vfail(c, FERR_LIMIT, "property %zu: value length %zu exceeds maximum %u",
				     i, vl, STREAM_PROP_VALUE_MAX);
		if (src < STREAM_SRC_LOCAL || src > STREAM_SRC_DEFAULT)
			return vfail(c, 0, "property %zu: source %u unknown", i, (unsigned)src);
		if (len - o < nl + vl)
			return vfail(c, 0, "property %zu runs past the payload end", i);
		if (prop_name_check(p + o, nl, why, sizeof(why)) < 0)
			return vfail(c, 0, "property %zu: name %s", i, why);
		if (memchr(p + o + nl, 0, vl))
			return vfail(c, 0, "property %zu: value contains NUL", i);
		if (prev) {
			size_t m = prevlen < nl ? prevlen : nl;
			int cmp = memcmp(prev, p + o, m);
			if (cmp > 0 || (cmp == 0 && prevlen >= nl))
				return vfail(c, 0, "property %zu: name '%.*s' not after '%.*s' "
					     "(names must be unique and ascending)", i, (int)nl,
					     (const char *)(p + o), (int)prevlen, (const char *)prev);
		}
		prev = p + o;
		prevlen = nl;
		*strbytes += nl + vl + 2;
		*off = o + nl + vl;
	}
	return 0;
}

/* Fills props from an already checked list at p[off..). */
static size_t props_fill(struct arena *a, const uint8_t *p, size_t off, size_t count,
			 struct stream_prop *props)
{
	for (size_t i = 0; i < count; i++) {
		size_t nl = p[off], vl = get_le16(p + off + 2);
		props[i].source = p[off + 1];
		off += PROP_FIXED;
		props[i].name = arena_str(a, p + off, nl);
		props[i].value = arena_str(a, p + off + nl, vl);
		off += nl + vl;
	}
	return off;
}

static int name_field(const struct vctx *c, const char *what, int dataset, const uint8_t *p,
		      size_t n)
{
	char why[96];
	int r = dataset ? stream_name_dataset(p, n, why, sizeof(why))
			: stream_name_snapshot(p, n, why, sizeof(why));

	if (r < 0)
		return vfail(c, 0, "%s: %s", what, why);
	return 0;
}

/* The full name ds@snap is at most STREAM_NAME_MAX bytes. */
static int fullname_len(const struct vctx *c, const char *what, size_t dl, size_t sl)
{
	if (dl + 1 + sl > STREAM_NAME_MAX)
		return vfail(c, FERR_LIMIT, "%s: dataset@snapshot length %zu exceeds maximum %u",
			     what, dl + 1 + sl, STREAM_NAME_MAX);
	return 0;
}

static int parse_begin(const struct vctx *c, const uint8_t *p, size_t len, struct fbuf *aux,
		       struct stream_begin *b)
{
	size_t dl, sl, off, strbytes = 0, bound = 0;
	uint32_t nprops;
	struct stream_prop *props = NULL;
	struct arena a;
	int r;

	if (len < BEGIN_FIXED)
		return vfail(c, 0, "payload length %zu below minimum %u", len, BEGIN_FIXED + 2);
	if ((r = stream_check_first(c, p, len)) < 0)
		return r;
	if ((r = reserved_zero(c, p, 10, 2)) < 0)
		return r;
	b->version = get_le16(p + 8);
	b->flags = get_le32(p + 12);
	b->features_req = get_le64(p + 16);
	b->features_opt = get_le64(p + 24);
	if ((r = check_features(c, b->features_req)) < 0)
		return r;
	if (b->flags & STREAM_F_TREE)
		return vfail(c, 0, "TREE flag on a BEGIN (it belongs to a PACKAGE)");
	if (b->flags & ~STREAM_F_BEGIN_ALL)
		return vfail(c, 0, "flags: unknown bits 0x%" PRIx32, b->flags & ~STREAM_F_BEGIN_ALL);
	b->ds_type = p[32];
	b->root_type = p[33];
	if ((r = check_ds_type(c, b->ds_type)) < 0)
		return r;
	if (b->root_type == 0)
		return vfail(c, 0, "root node type 0");
	if ((r = reserved_zero(c, p, 34, 2)) < 0)
		return r;
	nprops = get_le32(p + 36);
	b->to_guid = get_le64(p + 40);
	b->from_guid = get_le64(p + 48);
	b->creation_ns = get_le64(p + 56);
	b->creation_txg = get_le64(p + 64);
	b->resume_pos = get_le64(p + 72);
	memcpy(b->root_hash, p + 80, FERRY_HASH_LEN);
	dl = get_le16(p + 112);
	sl = get_le16(p + 114);
	if ((r = reserved_zero(c, p, 116, 4)) < 0)
		return r;
	if (nprops > STREAM_PROPS_MAX)
		return vfail(c, FERR_LIMIT, "property count %" PRIu32 " exceeds maximum %u", nprops,
			     STREAM_PROPS_MAX);
	if (b->to_guid == 0)
		return vfail(c, 0, "to guid is 0");
	if (b->from_guid == b->to_guid)
		return vfail(c, 0, "from guid equals to guid 0x%016" PRIx64, b->to_guid);
	if (b->resume_pos > STREAM_RESUME_MAX)
		return vfail(c, FERR_LIMIT, "resume position %" PRIu64 " exceeds maximum %llu",
			     b->resume_pos, (unsigned long long)STREAM_RESUME_MAX);
	if (!(b->flags & STREAM_F_RESUMED) != !b->resume_pos)
		return vfail(c, 0, "RESUMED flag %s but resume position is %" PRIu64,
			     (b->flags & STREAM_F_RESUMED) ? "set" : "clear", b->resume_pos);
	if (nprops && !(b->flags & STREAM_F_PROPS))
		return vfail(c, 0, "%" PRIu32 " properties without the PROPS flag", nprops);
	if (dl == 0 || sl == 0)
		return vfail(c, 0, "%s name length 0", dl == 0 ? "dataset" : "snapshot");
	if (dl > STREAM_NAME_MAX || sl > STREAM_NAME_MAX)
		return vfail(c, FERR_LIMIT, "%s name length %zu exceeds maximum %u",
			     dl > STREAM_NAME_MAX ? "dataset" : "snapshot",
			     dl > STREAM_NAME_MAX ? dl : sl, STREAM_NAME_MAX);
	if ((r = fullname_len(c, "name", dl, sl)) < 0)
		return r;
	if (len - BEGIN_FIXED < dl + sl)
		return vfail(c, 0, "names run past the payload end");
	if ((r = name_field(c, "dataset name", 1, p + BEGIN_FIXED, dl)) < 0 ||
	    (r = name_field(c, "snapshot name", 0, p + BEGIN_FIXED + dl, sl)) < 0)
		return r;
	off = BEGIN_FIXED + dl + sl;
	if ((r = props_check(c, p, len, &off, nprops, &strbytes)) < 0)
		return r;
	if (off != len)
		return vfail(c, 0, "payload length %zu, but its fields end at %zu", len, off);

	if ((r = bound_arr(&bound, nprops, sizeof(*props))) < 0 ||
	    (r = bound_add(&bound, strbytes + dl + sl + 2)) < 0 ||
	    (r = arena_open(&a, aux, bound)) < 0)
		return r;
	props = arena_take(&a, nprops * sizeof(*props));
	b->dataset = arena_str(&a, p + BEGIN_FIXED, dl);
	b->snapshot = arena_str(&a, p + BEGIN_FIXED + dl, sl);
	props_fill(&a, p, BEGIN_FIXED + dl + sl, nprops, props);
	b->props = props;
	b->nprops = nprops;
	return 0;
}

static int parse_node(const struct vctx *c, const uint8_t *p, size_t len, int verify,
		      struct stream_node *n)
{
	uint8_t h[FERRY_HASH_LEN];
	struct hash_state hs;
	int r;

	n->type = p[0];
	if (n->type == 0)
		return vfail(c, 0, "node type 0");
	if ((r = reserved_zero(c, p, 1, 3)) < 0)
		return r;
	memcpy(n->hash, p + 4, FERRY_HASH_LEN);
	n->data = p + NODE_FIXED;
	n->len = len - NODE_FIXED;
	if (verify & STREAM_VERIFY_NODES) {
		hash_init(&hs);
		hash_update(&hs, &n->type, 1);
		hash_update(&hs, n->data, n->len);
		hash_final(&hs, h);
		if (memcmp(h, n->hash, FERRY_HASH_LEN) != 0)
			return vfail(c, 0, "node hash does not match its type and bytes");
	}
	return 0;
}

static int check_lsize(const struct vctx *c, uint32_t lsize)
{
	if (lsize == 0)
		return vfail(c, 0, "lsize 0");
	if (lsize > STREAM_BLOCK_MAX)
		return vfail(c, FERR_LIMIT, "lsize %" PRIu32 " exceeds maximum %u", lsize,
			     STREAM_BLOCK_MAX);
	return 0;
}

static int parse_write(const struct vctx *c, const uint8_t *p, size_t len, int verify,
		       struct stream_write *w)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;

	memcpy(w->hash, p, FERRY_HASH_LEN);
	w->lsize = get_le32(p + 32);
	w->codec = p[36];
	w->level = p[37];
	w->psize = get_le32(p + 40);
	w->data = p + WRITE_FIXED;
	w->data_crc = 0;
	w->has_crc = 0; /* the decoder's to set: it has the CRC (on_record) */
	if ((r = reserved_zero(c, p, 38, 2)) < 0 || (r = reserved_zero(c, p, 44, 4)) < 0)
		return r;
	if ((r = check_lsize(c, w->lsize)) < 0)
		return r;
	if (!stream_codec_valid(w->codec, w->level))
		return vfail(c, 0, "codec %u level %u unknown", (unsigned)w->codec,
			     (unsigned)w->level);
	if (w->psize == 0)
		return vfail(c, 0, "psize 0");
	if (w->psize > w->lsize)
		return vfail(c, 0, "psize %" PRIu32 " exceeds lsize %" PRIu32, w->psize, w->lsize);
	if (w->codec == STREAM_CODEC_OFF && w->psize != w->lsize)
		return vfail(c, 0, "codec off with psize %" PRIu32 " != lsize %" PRIu32, w->psize,
			     w->lsize);
	if (len - WRITE_FIXED != w->psize)
		return vfail(c, 0, "payload length %zu, expected %u + psize %" PRIu32, len,
			     WRITE_FIXED, w->psize);
	if ((verify & STREAM_VERIFY_BLOCKS) && w->codec == STREAM_CODEC_OFF) {
		hash_blake2b(h, w->data, w->psize);
		if (memcmp(h, w->hash, FERRY_HASH_LEN) != 0)
			return vfail(c, 0, "block hash does not match its content");
	}
	return 0;
}

static int parse_byref(const struct vctx *c, const uint8_t *p, struct stream_byref *b)
{
	int r;

	memcpy(b->hash, p, FERRY_HASH_LEN);
	b->lsize = get_le32(p + 32);
	if ((r = reserved_zero(c, p, 36, 4)) < 0)
		return r;
	return check_lsize(c, b->lsize);
}

static int parse_package(const struct vctx *c, const uint8_t *p, size_t len, struct fbuf *aux,
			 struct stream_package *k)
{
	const uint32_t need = STREAM_F_REPLICATE | STREAM_F_PROPS;
	size_t tl, sl, fl;
	struct arena a;
	int r;

	if (len < PACKAGE_FIXED)
		return vfail(c, 0, "payload length %zu below minimum %u", len, PACKAGE_FIXED + 2);
	if ((r = stream_check_first(c, p, len)) < 0)
		return r;
	if ((r = reserved_zero(c, p, 10, 2)) < 0)
		return r;
	k->version = get_le16(p + 8);
	k->flags = get_le32(p + 12);
	k->features_req = get_le64(p + 16);
	k->features_opt = get_le64(p + 24);
	k->ndatasets = get_le32(p + 32);
	tl = get_le16(p + 36);
	sl = p[38];
	fl = p[39];
	if ((r = check_features(c, k->features_req)) < 0)
		return r;
	if (k->flags & ~STREAM_F_ALL)
		return vfail(c, 0, "flags: unknown bits 0x%" PRIx32, k->flags & ~STREAM_F_ALL);
	if ((k->flags & need) != need || (k->flags & STREAM_F_RESUMED))
		return vfail(c, 0, "flags 0x%" PRIx32 ": a package needs REPLICATE and PROPS, "
			     "and no RESUMED", k->flags);
	if (k->ndatasets == 0)
		return vfail(c, 0, "dataset count 0");
	if (k->ndatasets > STREAM_PKG_DATASETS_MAX)
		return vfail(c, FERR_LIMIT, "dataset count %" PRIu32 " exceeds maximum %u",
			     k->ndatasets, STREAM_PKG_DATASETS_MAX);
	if (tl == 0 || sl == 0)
		return vfail(c, 0, "%s name length 0", tl == 0 ? "top" : "to snapshot");
	if (tl > STREAM_NAME_MAX)
		return vfail(c, FERR_LIMIT, "top name length %zu exceeds maximum %u", tl,
			     STREAM_NAME_MAX);
	if ((r = fullname_len(c, "to name", tl, sl)) < 0 ||
	    (fl && (r = fullname_len(c, "from name", tl, fl)) < 0))
		return r;
	if (len != PACKAGE_FIXED + tl + sl + fl)
		return vfail(c, 0, "payload length %zu, but its fields end at %zu", len,
			     PACKAGE_FIXED + tl + sl + fl);
	if ((r = name_field(c, "top name", 1, p + PACKAGE_FIXED, tl)) < 0 ||
	    (r = name_field(c, "to snapshot name", 0, p + PACKAGE_FIXED + tl, sl)) < 0 ||
	    (fl && (r = name_field(c, "from snapshot name", 0, p + PACKAGE_FIXED + tl + sl, fl)) < 0))
		return r;
	if (fl == sl && memcmp(p + PACKAGE_FIXED + tl, p + PACKAGE_FIXED + tl + sl, sl) == 0)
		return vfail(c, 0, "from snapshot equals to snapshot");
	if ((r = arena_open(&a, aux, tl + sl + fl + 3)) < 0)
		return r;
	k->top = arena_str(&a, p + PACKAGE_FIXED, tl);
	k->to_snap = arena_str(&a, p + PACKAGE_FIXED + tl, sl);
	k->from_snap = arena_str(&a, p + PACKAGE_FIXED + tl + sl, fl);
	return 0;
}

static int snap_cmp(const void *x, const void *y)
{
	const struct stream_snap *const *a = x, *const *b = y;

	return strcmp((*a)->name, (*b)->name);
}

/* The nsnaps snapshot entries of a DATASET at *off (advanced past them):
 * guids set, txgs rising, names valid and short enough with the dataset's
 * (nl bytes); their string bytes are added to *strbytes. */
static int snaps_check(const struct vctx *c, const uint8_t *p, size_t len, size_t *off,
		       uint32_t nsnaps, size_t nl, size_t *strbytes)
{
	uint64_t prev_txg = 0;
	size_t o = *off;
	int r;

	for (size_t i = 0; i < nsnaps; i++) {
		uint64_t guid, txg;
		size_t sl;
		char what[48];

		if (len - o < SNAP_FIXED)
			return vfail(c, 0, "snapshot %zu runs past the payload end", i);
		guid = get_le64(p + o);
		txg = get_le64(p + o + 8);
		sl = p[o + 24];
		if (guid == 0)
			return vfail(c, 0, "snapshot %zu: guid is 0", i);
		if (i > 0 && txg <= prev_txg)
			return vfail(c, 0, "snapshot %zu: txg %" PRIu64 " not after %" PRIu64, i, txg,
				     prev_txg);
		prev_txg = txg;
		if (len - o - SNAP_FIXED < sl)
			return vfail(c, 0, "snapshot %zu runs past the payload end", i);
		snprintf(what, sizeof(what), "snapshot %zu name", i);
		if ((r = name_field(c, what, 0, p + o + SNAP_FIXED, sl)) < 0 ||
		    (r = fullname_len(c, what, nl, sl)) < 0)
			return r;
		*strbytes += sl + 1;
		o += SNAP_FIXED + sl;
	}
	*off = o;
	return 0;
}

static int parse_dataset(const struct vctx *c, const uint8_t *p, size_t len, struct fbuf *aux,
			 struct stream_dataset *d)
{
	size_t nl, off, strbytes = 0, bound = 0;
	uint32_t nprops, nsnaps;
	struct stream_prop *props;
	struct stream_snap *snaps;
	const struct stream_snap **sorted;
	struct arena a;
	int r;

	d->guid = get_le64(p);
	nl = get_le16(p + 8);
	d->ds_type = p[10];
	nprops = get_le32(p + 12);
	nsnaps = get_le32(p + 16);
	if ((r = reserved_zero(c, p, 11, 1)) < 0 || (r = reserved_zero(c, p, 20, 4)) < 0)
		return r;
	if (d->guid == 0)
		return vfail(c, 0, "dataset guid is 0");
	if ((r = check_ds_type(c, d->ds_type)) < 0)
		return r;
	if (nprops > STREAM_PROPS_MAX)
		return vfail(c, FERR_LIMIT, "property count %" PRIu32 " exceeds maximum %u", nprops,
			     STREAM_PROPS_MAX);
	if (nsnaps > STREAM_SNAPS_MAX)
		return vfail(c, FERR_LIMIT, "snapshot count %" PRIu32 " exceeds maximum %u", nsnaps,
			     STREAM_SNAPS_MAX);
	if (nl == 0)
		return vfail(c, 0, "dataset name length 0");
	if (nl > STREAM_NAME_MAX)
		return vfail(c, FERR_LIMIT, "dataset name length %zu exceeds maximum %u", nl,
			     STREAM_NAME_MAX);
	if (len - DATASET_FIXED < nl)
		return vfail(c, 0, "name runs past the payload end");
	if ((r = name_field(c, "dataset name", 1, p + DATASET_FIXED, nl)) < 0)
		return r;
	off = DATASET_FIXED + nl;
	if ((r = props_check(c, p, len, &off, nprops, &strbytes)) < 0)
		return r;
	if ((r = snaps_check(c, p, len, &off, nsnaps, nl, &strbytes)) < 0)
		return r;
	if (off != len)
		return vfail(c, 0, "payload length %zu, but its fields end at %zu", len, off);

	if ((r = bound_arr(&bound, nprops, sizeof(*props))) < 0 ||
	    (r = bound_arr(&bound, nsnaps, sizeof(*snaps))) < 0 ||
	    (r = bound_arr(&bound, nsnaps, sizeof(*sorted))) < 0 ||
	    (r = bound_add(&bound, strbytes + nl + 1)) < 0 ||
	    (r = arena_open(&a, aux, bound)) < 0)
		return r;
	props = arena_take(&a, nprops * sizeof(*props));
	snaps = arena_take(&a, nsnaps * sizeof(*snaps));
	sorted = arena_take(&a, nsnaps * sizeof(*sorted));
	d->name = arena_str(&a, p + DATASET_FIXED, nl);
	off = props_fill(&a, p, DATASET_FIXED + nl, nprops, props);
	for (size_t i = 0; i < nsnaps; i++) {
		size_t sl = p[off + 24];
		snaps[i].guid = get_le64(p + off);
		snaps[i].txg = get_le64(p + off + 8);
		snaps[i].creation_ns = get_le64(p + off + 16);
		snaps[i].name = arena_str(&a, p + off + SNAP_FIXED, sl);
		sorted[i] = &snaps[i];
		off += SNAP_FIXED + sl;
	}
	if (nsnaps > 1) {
		qsort(sorted, nsnaps, sizeof(*sorted), snap_cmp);
		for (size_t i = 1; i < nsnaps; i++)
			if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
				return vfail(c, 0, "snapshot '%s' listed twice", sorted[i]->name);
	}
	d->props = props;
	d->nprops = nprops;
	d->snaps = snaps;
	d->nsnaps = nsnaps;
	return 0;
}

static int parse_hint(const struct vctx *c, const uint8_t *p, struct stream_hint *h)
{
	char cn[16];
	int r;

	h->size = get_le64(p);
	h->tried_codec = p[8];
	h->tried_level = p[9];
	if ((r = reserved_zero(c, p, 10, 6)) < 0)
		return r;
	/* 0/0 is "nothing tried"; off is not a codec anything is tried with */
	if (h->tried_codec == STREAM_CODEC_OFF ? h->tried_level != 0
					       : !stream_codec_valid(h->tried_codec, h->tried_level))
		return vfail(c, 0, "tried codec %u level %u unknown (%s)", (unsigned)h->tried_codec,
			     (unsigned)h->tried_level,
			     stream_codec_name(h->tried_codec, h->tried_level, cn, sizeof(cn)));
	return 0;
}

int stream_parse(const struct vctx *c, const uint8_t *p, uint32_t len, int verify,
		 struct fbuf *aux, struct stream_record *rec)
{
	rec->type = (enum stream_type)c->type;
	rec->length = len;
	rec->seq = 0;
	switch (c->type) {
	case STREAM_BEGIN:
		return parse_begin(c, p, len, aux, &rec->begin);
	case STREAM_NODE:
		return parse_node(c, p, len, verify, &rec->node);
	case STREAM_WRITE:
		return parse_write(c, p, len, verify, &rec->write);
	case STREAM_WRITE_BYREF:
		return parse_byref(c, p, &rec->byref);
	case STREAM_END:
		rec->end.count = get_le64(p);
		memcpy(rec->end.digest, p + 8, FERRY_HASH_LEN);
		return 0;
	case STREAM_PACKAGE:
		return parse_package(c, p, len, aux, &rec->package);
	case STREAM_DATASET:
		return parse_dataset(c, p, len, aux, &rec->dataset);
	case STREAM_PACKAGE_END:
		rec->package_end.count = get_le64(p);
		rec->package_end.nsub = get_le64(p + 8);
		memcpy(rec->package_end.digest, p + 16, FERRY_HASH_LEN);
		return 0;
	case STREAM_HINT:
		return parse_hint(c, p, &rec->hint);
	default:
		return vfail(c, 0, "unknown record type %u", c->type);
	}
}
