/* stream/format.c — the rules of docs/ferry-stream.5 that both sides
 * apply: header limits, names, and the record grammar (the payload
 * fields are parse.c's). Everything here reads only bytes it has
 * bounds-checked against the payload length first. */
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
	[STREAM_HINT] = "HINT",
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
	[STREAM_HINT] = {HINT_LEN, HINT_LEN},
};

/* The known types that always carry SKIPPABLE, so that readers from
 * before them skip them (the others never carry it). */
static int type_skippable(unsigned t)
{
	return t == STREAM_HINT;
}

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

void stream_chain_iv(unsigned version, uint8_t out[FERRY_HASH_LEN])
{
	if (version == 2)
		hash_blake2b(out, CHAIN_IV_V2, sizeof(CHAIN_IV_V2) - 1);
	else
		hash_blake2b(out, CHAIN_IV_V1, sizeof(CHAIN_IV_V1) - 1);
}

size_t stream_chain_prefix(unsigned version, uint16_t type)
{
	/* The block or node hash in the fixed part is checked against the
	 * bytes after it by every receiver (the block's after decoding), so a
	 * second BLAKE2b pass over them would buy nothing against a sender;
	 * the CRC still catches damage in transit at the record. */
	if (version != 2)
		return SIZE_MAX;
	if (type == STREAM_WRITE)
		return WRITE_FIXED;
	if (type == STREAM_NODE)
		return NODE_FIXED;
	return SIZE_MAX;
}

void stream_chain_record(unsigned version, const uint8_t prev[FERRY_HASH_LEN],
			 const uint8_t *hdr, const uint8_t *payload, size_t len,
			 uint8_t out[FERRY_HASH_LEN])
{
	size_t pfx = stream_chain_prefix(version, get_le16(hdr));
	struct hash_state hs;
	uint8_t crc[4];

	hash_init(&hs);
	hash_update(&hs, prev, FERRY_HASH_LEN);
	hash_update(&hs, hdr, STREAM_HDR_LEN);
	if (pfx >= len) {
		hash_update(&hs, payload, len);
	} else {
		hash_update(&hs, payload, pfx);
		put_le32(crc, crc32c_update(0, payload + pfx, len - pfx));
		hash_update(&hs, crc, sizeof(crc));
	}
	hash_final(&hs, out);
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
	if (type_skippable(type) && !(flags & STREAM_RF_SKIPPABLE))
		return vfail(c, 0, "header flag SKIPPABLE missing (a %s always has it)",
			     type_names[type]);
	if (!type_skippable(type) && (flags & STREAM_RF_SKIPPABLE))
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
	if (version < STREAM_VERSION_MIN || version > STREAM_VERSION)
		return vfail(c, FERR_UNSUPPORTED, "format version %u (this reader supports %u "
			     "to %u)", (unsigned)version, STREAM_VERSION_MIN, STREAM_VERSION);
	return 0;
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

/* A HINT is record 1, after the first record (BEGIN or PACKAGE), or
 * nowhere. */
static int step_hint(const struct vctx *c)
{
	if (c->index != 1)
		return vfail(c, 0, "a HINT is only allowed as record 1, right after the first "
			     "BEGIN or PACKAGE");
	return 0;
}

static int step_body(struct stream_grammar *g, const struct vctx *c, struct stream_record *rec)
{
	char cn[16];

	switch (rec->type) {
	case STREAM_HINT:
		/* index 1 in a body is right after the stream's own BEGIN */
		return step_hint(c);
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
		if (rec->type == STREAM_HINT)
			return step_hint(c);
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
