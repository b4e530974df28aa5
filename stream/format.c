/* stream/format.c — the rules of docs/ferry-stream.5 that both sides
 * apply: header limits, payload fields, names, and the record grammar.
 * Everything here reads only bytes it has bounds-checked against the
 * payload length first. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const type_names[] = {
	[STREAM_BEGIN] = "BEGIN",
	[STREAM_END] = "END",
	[STREAM_NODE] = "NODE",
	[STREAM_WRITE] = "WRITE",
	[STREAM_WRITE_BYREF] = "WRITE_BYREF",
	[STREAM_PACKAGE] = "PACKAGE",
	[STREAM_DATASET] = "DATASET",
	[STREAM_PACKAGE_END] = "PACKAGE_END",
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

/* Payload length bounds per known type; exact types have min == max. */
static const struct {
	uint32_t min, max;
} limits[NTYPES] = {
	[STREAM_BEGIN] = {BEGIN_FIXED + 2, BEGIN_MAX},
	[STREAM_END] = {END_LEN, END_LEN},
	[STREAM_NODE] = {NODE_FIXED, NODE_FIXED + STREAM_NODE_MAX},
	[STREAM_WRITE] = {WRITE_FIXED + 1, WRITE_FIXED + STREAM_BLOCK_MAX},
	[STREAM_WRITE_BYREF] = {BYREF_LEN, BYREF_LEN},
	[STREAM_PACKAGE] = {PACKAGE_FIXED + 2, PACKAGE_MAX},
	[STREAM_DATASET] = {DATASET_FIXED + 1, DATASET_MAX},
	[STREAM_PACKAGE_END] = {PKGEND_LEN, PKGEND_LEN},
};

static int type_known(unsigned t)
{
	return t > 0 && t < NTYPES && type_names[t];
}

const char *stream_type_name(unsigned type)
{
	return type_known(type) ? type_names[type] : "UNKNOWN";
}

int stream_codec_valid(uint8_t codec, uint8_t level)
{
	switch (codec) {
	case STREAM_CODEC_OFF:
	case STREAM_CODEC_LZ4:
	case STREAM_CODEC_ZLE:
		return level == 0;
	case STREAM_CODEC_GZIP:
		return level >= 1 && level <= 9;
	default:
		return 0;
	}
}

const char *stream_codec_name(uint8_t codec, uint8_t level, char *buf, size_t n)
{
	const char *s = "?";

	if (!n)
		return buf;
	if (stream_codec_valid(codec, level)) {
		switch (codec) {
		case STREAM_CODEC_OFF: s = "off"; break;
		case STREAM_CODEC_LZ4: s = "lz4"; break;
		case STREAM_CODEC_ZLE: s = "zle"; break;
		case STREAM_CODEC_GZIP:
			snprintf(buf, n, "gzip-%u", (unsigned)level);
			return buf;
		}
	}
	snprintf(buf, n, "%s", s);
	return buf;
}

const char *stream_source_name(uint8_t source)
{
	switch (source) {
	case STREAM_SRC_LOCAL: return "local";
	case STREAM_SRC_RECEIVED: return "received";
	case STREAM_SRC_INHERITED: return "inherited";
	case STREAM_SRC_DEFAULT: return "default";
	default: return "?";
	}
}

void stream_chain_iv(uint8_t out[FERRY_HASH_LEN])
{
	hash_blake2b(out, CHAIN_IV, sizeof(CHAIN_IV) - 1);
}

int vfail(const struct vctx *c, int code, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!code)
		code = c->bad;
	if (type_known(c->type))
		return ferry_err(code, "record %" PRIu64 " (%s): %s", c->index,
				 type_names[c->type], msg);
	return ferry_err(code, "record %" PRIu64 " (type %u): %s", c->index, c->type, msg);
}

/* ---- names --------------------------------------------------------------- */

static int comp_byte_ok(uint8_t ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' ||
	       ch == ':' || ch == ' ';
}

/* One component p[0..n): a slash is the caller's business. */
static int component_check(const uint8_t *p, size_t n, size_t base, char *why, size_t wn)
{
	if (n == 0)
		return snprintf(why, wn, "empty component"), -1;
	if (n == 1 && p[0] == '.')
		return snprintf(why, wn, "component '.'"), -1;
	if (n == 2 && p[0] == '.' && p[1] == '.')
		return snprintf(why, wn, "component '..'"), -1;
	for (size_t i = 0; i < n; i++)
		if (!comp_byte_ok(p[i]))
			return snprintf(why, wn, "invalid byte 0x%02x at offset %zu",
					(unsigned)p[i], base + i), -1;
	return 0;
}

int stream_name_dataset(const uint8_t *p, size_t n, char *why, size_t wn)
{
	size_t start = 0;

	if (n == 0)
		return snprintf(why, wn, "empty"), -1;
	if (n > STREAM_NAME_MAX)
		return snprintf(why, wn, "longer than %u bytes", STREAM_NAME_MAX), -1;
	if (p[0] == '/')
		return snprintf(why, wn, "leading '/'"), -1;
	if (p[n - 1] == '/')
		return snprintf(why, wn, "trailing '/'"), -1;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		if (component_check(p + start, i - start, start, why, wn) < 0)
			return -1;
		start = i + 1;
	}
	return 0;
}

int stream_name_snapshot(const uint8_t *p, size_t n, char *why, size_t wn)
{
	if (n > STREAM_NAME_MAX)
		return snprintf(why, wn, "longer than %u bytes", STREAM_NAME_MAX), -1;
	if (n == 0)
		return snprintf(why, wn, "empty"), -1;
	if (memchr(p, '/', n))
		return snprintf(why, wn, "contains '/'"), -1;
	return component_check(p, n, 0, why, wn);
}

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

/* ---- header --------------------------------------------------------------- */

int stream_check_header(const struct vctx *c, uint16_t type, uint16_t flags, uint32_t len,
			int *skip)
{
	if (c->index == 0 && type != STREAM_BEGIN && type != STREAM_PACKAGE)
		return ferry_err(c->bad, "record 0: not a ferry stream (first record type %u, "
				 "expected BEGIN or PACKAGE)", (unsigned)type);
	if (flags & ~(uint16_t)STREAM_RF_SKIPPABLE)
		return vfail(c, 0, "header flags 0x%04x: reserved bits set", (unsigned)flags);
	if (!type_known(type)) {
		if (!(flags & STREAM_RF_SKIPPABLE))
			return vfail(c, 0, "unknown record type %u", (unsigned)type);
		if (len > STREAM_PAYLOAD_MAX)
			return vfail(c, FERR_LIMIT, "payload length %" PRIu32
				     " exceeds maximum %u", len, STREAM_PAYLOAD_MAX);
		*skip = 1;
		return 0;
	}
	if (flags & STREAM_RF_SKIPPABLE)
		return vfail(c, 0, "header flag SKIPPABLE set on a known type");
	if (len > limits[type].max)
		return vfail(c, FERR_LIMIT, "payload length %" PRIu32 " exceeds maximum %" PRIu32,
			     len, limits[type].max);
	if (len < limits[type].min)
		return vfail(c, 0, "payload length %" PRIu32 " below minimum %" PRIu32, len,
			     limits[type].min);
	*skip = 0;
	return 0;
}

int stream_check_first(const struct vctx *c, const uint8_t *p, size_t len)
{
	const char *magic = c->type == STREAM_PACKAGE ? PACKAGE_MAGIC : BEGIN_MAGIC;
	uint16_t version;

	if (len < 10 || memcmp(p, magic, 8) != 0)
		return vfail(c, 0, "not a ferry stream (bad magic)");
	version = get_le16(p + 8);
	if (version != STREAM_VERSION)
		return vfail(c, FERR_UNSUPPORTED, "format version %u (this reader supports %u)",
			     (unsigned)version, STREAM_VERSION);
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

static int parse_dataset(const struct vctx *c, const uint8_t *p, size_t len, struct fbuf *aux,
			 struct stream_dataset *d)
{
	size_t nl, off, strbytes = 0, bound = 0;
	uint32_t nprops, nsnaps;
	uint64_t prev_txg = 0;
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
	for (size_t i = 0; i < nsnaps; i++) {
		uint64_t guid, txg;
		size_t sl;
		char what[48];

		if (len - off < SNAP_FIXED)
			return vfail(c, 0, "snapshot %zu runs past the payload end", i);
		guid = get_le64(p + off);
		txg = get_le64(p + off + 8);
		sl = p[off + 24];
		if (guid == 0)
			return vfail(c, 0, "snapshot %zu: guid is 0", i);
		if (i > 0 && txg <= prev_txg)
			return vfail(c, 0, "snapshot %zu: txg %" PRIu64 " not after %" PRIu64, i, txg,
				     prev_txg);
		prev_txg = txg;
		if (len - off - SNAP_FIXED < sl)
			return vfail(c, 0, "snapshot %zu runs past the payload end", i);
		snprintf(what, sizeof(what), "snapshot %zu name", i);
		if ((r = name_field(c, what, 0, p + off + SNAP_FIXED, sl)) < 0 ||
		    (r = fullname_len(c, what, nl, sl)) < 0)
			return r;
		strbytes += sl + 1;
		off += SNAP_FIXED + sl;
	}
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
	default:
		return vfail(c, 0, "unknown record type %u", c->type);
	}
}

/* ---- grammar ------------------------------------------------------------ */

void stream_grammar_init(struct stream_grammar *g)
{
	memset(g, 0, sizeof(*g));
	g->state = G_START;
}

int stream_grammar_done(const struct stream_grammar *g)
{
	return g->state == G_DONE;
}

/* name is the top or below it. */
static int under_top(const struct stream_grammar *g, const char *name)
{
	size_t tl = strlen(g->top);

	return strncmp(name, g->top, tl) == 0 && (name[tl] == '\0' || name[tl] == '/');
}

static void open_sub(struct stream_grammar *g, const struct vctx *c, const struct stream_begin *b)
{
	g->flags = b->flags;
	g->begin_index = c->index;
	g->resume_pos = b->resume_pos;
	g->from_guid = b->from_guid;
	g->body = 0;
	g->root_type = b->root_type;
	memcpy(g->root_hash, b->root_hash, FERRY_HASH_LEN);
	g->last_is_root = 0;
	g->state = G_BODY;
}

static int step_body(struct stream_grammar *g, const struct vctx *c, struct stream_record *rec)
{
	char cn[16];

	switch (rec->type) {
	case STREAM_WRITE:
		if (rec->write.codec != STREAM_CODEC_OFF && !(g->flags & STREAM_F_COMPRESSED))
			return vfail(c, 0, "codec %s without the COMPRESSED stream flag",
				     stream_codec_name(rec->write.codec, rec->write.level, cn,
						       sizeof(cn)));
		/* fallthrough */
	case STREAM_NODE:
	case STREAM_WRITE_BYREF:
		g->body++;
		rec->seq = g->resume_pos + g->body;
		g->last_is_root = rec->type == STREAM_NODE && rec->node.type == g->root_type &&
				  memcmp(rec->node.hash, g->root_hash, FERRY_HASH_LEN) == 0;
		return 0;
	case STREAM_END: {
		uint64_t want = c->index - g->begin_index;
		if (rec->end.count != want)
			return vfail(c, 0, "record count %" PRIu64 ", expected %" PRIu64,
				     rec->end.count, want);
		if (g->body && !g->last_is_root)
			return vfail(c, 0, "the last record before END is not the root node "
				     "named by BEGIN");
		if (!g->body && !g->from_guid && !g->resume_pos)
			return vfail(c, 0, "full stream without its root node");
		if (g->in_pkg) {
			g->nsub++;
			g->state = G_SUBS;
		} else {
			g->state = G_DONE;
		}
		return 0;
	}
	default:
		return vfail(c, 0, "%s inside a snapshot stream (expected NODE, WRITE, "
			     "WRITE_BYREF or END)", stream_type_name(rec->type));
	}
}

int stream_grammar_step(struct stream_grammar *g, const struct vctx *c,
			struct stream_record *rec)
{
	switch (g->state) {
	case G_START:
		if (rec->type == STREAM_BEGIN) {
			if (rec->begin.flags & STREAM_F_REPLICATE)
				return vfail(c, 0, "REPLICATE flag outside a package");
			open_sub(g, c, &rec->begin);
			return 0;
		}
		if (rec->type == STREAM_PACKAGE) {
			g->in_pkg = 1;
			g->pkg_flags = rec->package.flags;
			g->pkg_ndatasets = rec->package.ndatasets;
			g->pkg_seen = 0;
			snprintf(g->top, sizeof(g->top), "%s", rec->package.top);
			g->state = G_DATASETS;
			return 0;
		}
		return vfail(c, 0, "expected BEGIN or PACKAGE first");
	case G_DATASETS:
		if (rec->type != STREAM_DATASET)
			return vfail(c, 0, "expected DATASET %" PRIu32 " of %" PRIu32,
				     g->pkg_seen + 1, g->pkg_ndatasets);
		if (!under_top(g, rec->dataset.name))
			return vfail(c, 0, "dataset '%s' is not '%s' or below it",
				     rec->dataset.name, g->top);
		if (g->pkg_seen && strcmp(rec->dataset.name, g->last_ds) <= 0)
			return vfail(c, 0, "dataset '%s' not after '%s' (names must be unique and "
				     "ascending)", rec->dataset.name, g->last_ds);
		snprintf(g->last_ds, sizeof(g->last_ds), "%s", rec->dataset.name);
		if (++g->pkg_seen == g->pkg_ndatasets)
			g->state = G_SUBS;
		return 0;
	case G_SUBS:
		if (rec->type == STREAM_BEGIN) {
			/* parse_begin refused TREE already: compare the rest */
			if (rec->begin.flags != (g->pkg_flags & ~(uint32_t)STREAM_F_TREE))
				return vfail(c, 0, "flags 0x%" PRIx32 " differ from the package's 0x%"
					     PRIx32 "%s", rec->begin.flags,
					     g->pkg_flags & ~(uint32_t)STREAM_F_TREE,
					     (g->pkg_flags & STREAM_F_TREE) ? " without TREE" : "");
			if (!under_top(g, rec->begin.dataset))
				return vfail(c, 0, "dataset '%s' is not '%s' or below it",
					     rec->begin.dataset, g->top);
			open_sub(g, c, &rec->begin);
			return 0;
		}
		if (rec->type == STREAM_PACKAGE_END) {
			if (rec->package_end.count != c->index)
				return vfail(c, 0, "record count %" PRIu64 ", expected %" PRIu64,
					     rec->package_end.count, c->index);
			if (rec->package_end.nsub != g->nsub)
				return vfail(c, 0, "substream count %" PRIu64 ", expected %" PRIu64,
					     rec->package_end.nsub, g->nsub);
			g->state = G_DONE;
			return 0;
		}
		return vfail(c, 0, "expected BEGIN or PACKAGE_END in a package");
	case G_BODY:
		return step_body(g, c, rec);
	case G_DONE:
	default:
		return vfail(c, 0, "record after the end of the stream");
	}
}
