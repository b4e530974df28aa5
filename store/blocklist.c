/* store/blocklist.c — the blocklist and blocklist-index nodes of a file
 * or volume (docs/ferry-nodes.md): their strict decoders, the walk of a
 * file's extents in order, and the builder that writes them level by
 * level. Like node.c, every decoder may see attacker-supplied bytes. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- blocklists ------------------------------------------------------------------ */

int node_bl_decode(const uint8_t *buf, size_t len, struct node_extent **ext, size_t *n)
{
	struct node_rd r = {buf, len, 0};
	struct node_extent *x = NULL;
	int rc;
	if ((rc = nrd_need(&r, 4)) < 0)
		return rc;
	uint32_t cnt = nrd_u32(&r);
	if (cnt == 0 || cnt > NODE_BL_MAX || cnt > (len - 4) / 9)
		return ferry_err(FERR_CORRUPT, "blocklist node claims %u extents", cnt);
	if (!(x = calloc(cnt, sizeof *x)))
		return ferry_err(FERR_NOMEM, "decoding a blocklist");
	for (uint32_t i = 0; i < cnt; i++) {
		if ((rc = nrd_need(&r, 1)) < 0)
			goto fail;
		uint8_t kind = nrd_u8(&r);
		if (kind == 0) {
			if ((rc = nrd_need(&r, 8)) < 0)
				goto fail;
			x[i].hole = 1;
			x[i].len = nrd_u64(&r);
			if (x[i].len == 0 || (i && x[i - 1].hole)) {
				rc = ferry_err(FERR_CORRUPT, "blocklist has an empty or split hole");
				goto fail;
			}
		} else if (kind == 1) {
			if ((rc = nrd_need(&r, 4 + FERRY_HASH_LEN)) < 0)
				goto fail;
			x[i].len = nrd_u32(&r);
			if (x[i].len == 0 || x[i].len > STORE_BLOCK_MAX) {
				rc = ferry_err(FERR_CORRUPT, "blocklist has a block of %llu bytes",
					       (unsigned long long)x[i].len);
				goto fail;
			}
			memcpy(x[i].hash, r.p + r.pos, FERRY_HASH_LEN);
			r.pos += FERRY_HASH_LEN;
		} else {
			rc = ferry_err(FERR_CORRUPT, "blocklist extent of kind %u", kind);
			goto fail;
		}
	}
	if (r.pos != len) {
		rc = ferry_err(FERR_CORRUPT, "blocklist node has trailing bytes");
		goto fail;
	}
	*ext = x;
	*n = cnt;
	return 0;
fail:
	free(x);
	return rc;
}

int node_bli_decode(const uint8_t *buf, size_t len, struct node_index_child **kids, size_t *n)
{
	struct node_rd r = {buf, len, 0};
	int rc;
	if ((rc = nrd_need(&r, 4)) < 0)
		return rc;
	uint32_t cnt = nrd_u32(&r);
	if (cnt == 0 || cnt > NODE_INDEX_MAX || (len - 4) != (size_t)cnt * (9 + FERRY_HASH_LEN))
		return ferry_err(FERR_CORRUPT, "blocklist index claims %u children", cnt);
	struct node_index_child *k = calloc(cnt, sizeof *k);
	if (!k)
		return ferry_err(FERR_NOMEM, "decoding a blocklist index");
	for (uint32_t i = 0; i < cnt; i++) {
		k[i].span = nrd_u64(&r);
		k[i].type = nrd_u8(&r);
		memcpy(k[i].hash, r.p + r.pos, FERRY_HASH_LEN);
		r.pos += FERRY_HASH_LEN;
		if (k[i].span == 0 ||
		    (k[i].type != NODE_BLOCKLIST && k[i].type != NODE_BLOCKLIST_INDEX)) {
			free(k);
			return ferry_err(FERR_CORRUPT, "blocklist index child %u is invalid", i);
		}
	}
	*kids = k;
	*n = cnt;
	return 0;
}

static int bl_walk(node_read_fn rdfn, void *arg, int type, const uint8_t *hash, uint64_t span,
		   uint64_t off, int depth, node_extent_fn fn, void *fnarg, struct fbuf *b)
{
	int t, r;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	if ((r = rdfn(arg, hash, &t, b)) < 0)
		return r;
	if (t != type)
		return ferry_err(FERR_CORRUPT, "node has type %d, expected %d", t, type);
	if (type == NODE_BLOCKLIST) {
		struct node_extent *x = NULL;
		size_t n = 0;
		uint64_t sum = 0;
		if ((r = node_bl_decode(b->data, b->len, &x, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++)
			if (u64_add(sum, x[i].len, &sum) < 0) {
				free(x);
				return ferry_err(FERR_CORRUPT, "blocklist span overflows");
			}
		if (sum != span) {
			free(x);
			return ferry_err(FERR_CORRUPT, "blocklist covers %llu bytes, expected %llu",
					 (unsigned long long)sum, (unsigned long long)span);
		}
		for (size_t i = 0; i < n && r == 0; i++) {
			r = fn(fnarg, &x[i], off);
			off += x[i].len;
		}
		free(x);
		return r;
	}
	if (type != NODE_BLOCKLIST_INDEX)
		return ferry_err(FERR_CORRUPT, "file points to a node of type %d", type);
	struct node_index_child *k = NULL;
	size_t n = 0;
	uint64_t sum = 0;
	if ((r = node_bli_decode(b->data, b->len, &k, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		if (u64_add(sum, k[i].span, &sum) < 0) {
			free(k);
			return ferry_err(FERR_CORRUPT, "blocklist index span overflows");
		}
	if (sum != span) {
		free(k);
		return ferry_err(FERR_CORRUPT, "blocklist index covers %llu bytes, expected %llu",
				 (unsigned long long)sum, (unsigned long long)span);
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		r = bl_walk(rdfn, arg, k[i].type, k[i].hash, k[i].span, off, depth + 1, fn, fnarg, b);
		off += k[i].span;
	}
	free(k);
	return r;
}

int node_bl_walk(node_read_fn rdfn, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		 uint64_t size, node_extent_fn fn, void *fnarg)
{
	struct fbuf b;
	fbuf_init(&b, NODE_MAX);
	int r = bl_walk(rdfn, arg, type, hash, size, 0, 0, fn, fnarg, &b);
	fbuf_release(&b);
	return r;
}

void node_bl_builder_init(struct node_bl_builder *b, node_put_fn put, void *arg,
			  uint32_t recordsize)
{
	memset(b, 0, sizeof *b);
	b->put = put;
	b->arg = arg;
	b->leaf_span = (uint64_t)recordsize * NODE_BL_LEAF_RECORDS;
	b->last_hole = -1;
	fbuf_init(&b->leaf, NODE_MAX);
	for (int i = 0; i < NODE_DEPTH_MAX; i++)
		fbuf_init(&b->levels[i], NODE_MAX);
}

void node_bl_builder_release(struct node_bl_builder *b)
{
	fbuf_release(&b->leaf);
	for (int i = 0; i < NODE_DEPTH_MAX; i++)
		fbuf_release(&b->levels[i]);
}

static int level_push(struct node_bl_builder *b, int lvl, uint64_t span, int type,
		      const uint8_t *hash);

static int level_flush(struct node_bl_builder *b, int lvl)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (!b->level_n[lvl])
		return 0;
	struct fbuf *f = &b->levels[lvl];
	put_le32(f->data, b->level_n[lvl]);
	if ((r = b->put(b->arg, NODE_BLOCKLIST_INDEX, f->data, f->len, h)) < 0)
		return r;
	uint64_t span = b->level_span[lvl];
	fbuf_reset(f);
	b->level_n[lvl] = 0;
	b->level_span[lvl] = 0;
	return level_push(b, lvl + 1, span, NODE_BLOCKLIST_INDEX, h);
}

static int level_push(struct node_bl_builder *b, int lvl, uint64_t span, int type,
		      const uint8_t *hash)
{
	int r;
	if (lvl >= NODE_DEPTH_MAX)
		return ferry_err(FERR_LIMIT, "file too large for a blocklist");
	struct fbuf *f = &b->levels[lvl];
	if (!b->level_n[lvl] && (r = fbuf_put_le32(f, 0)) < 0)
		return r;
	if ((r = fbuf_put_le64(f, span)) < 0 || (r = fbuf_putc(f, (uint8_t)type)) < 0 ||
	    (r = fbuf_append(f, hash, FERRY_HASH_LEN)) < 0)
		return r;
	b->level_n[lvl]++;
	b->level_span[lvl] += span;
	if (b->level_n[lvl] >= NODE_BL_LEAF_RECORDS)
		return level_flush(b, lvl);
	return 0;
}

static int leaf_flush(struct node_bl_builder *b)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (!b->leaf_n)
		return 0;
	put_le32(b->leaf.data, b->leaf_n);
	if ((r = b->put(b->arg, NODE_BLOCKLIST, b->leaf.data, b->leaf.len, h)) < 0)
		return r;
	uint64_t span = b->pos - b->leaf_off;
	fbuf_reset(&b->leaf);
	b->leaf_n = 0;
	b->last_hole = -1;
	b->leaf_off = b->pos;
	return level_push(b, 0, span, NODE_BLOCKLIST, h);
}

int node_bl_builder_add(struct node_bl_builder *b, const struct node_extent *x)
{
	uint64_t left = x->len;
	int r;
	if (left == 0)
		return 0;
	if (!x->hole && (left > STORE_BLOCK_MAX))
		return ferry_err(FERR_INVAL, "block of %llu bytes", (unsigned long long)left);
	while (left) {
		uint64_t room = b->leaf_off + b->leaf_span - b->pos;
		if (room == 0 || (!x->hole && left > room && b->leaf_n)) {
			if ((r = leaf_flush(b)) < 0)
				return r;
			continue;
		}
		uint64_t take = x->hole ? (left < room ? left : room) : left;
		if (!b->leaf_n && (r = fbuf_put_le32(&b->leaf, 0)) < 0)
			return r;
		if (x->hole && b->last_hole >= 0) {
			uint8_t *p = b->leaf.data + b->last_hole_at;
			put_le64(p, get_le64(p) + take);
		} else if (x->hole) {
			if ((r = fbuf_putc(&b->leaf, 0)) < 0)
				return r;
			b->last_hole_at = b->leaf.len;
			b->last_hole = 1;
			if ((r = fbuf_put_le64(&b->leaf, take)) < 0)
				return r;
			b->leaf_n++;
		} else {
			if ((r = fbuf_putc(&b->leaf, 1)) < 0 ||
			    (r = fbuf_put_le32(&b->leaf, (uint32_t)take)) < 0 ||
			    (r = fbuf_append(&b->leaf, x->hash, FERRY_HASH_LEN)) < 0)
				return r;
			b->last_hole = -1;
			b->leaf_n++;
		}
		b->pos += take;
		left -= take;
		if (b->leaf_n >= NODE_BL_MAX && (r = leaf_flush(b)) < 0)
			return r;
	}
	return 0;
}

int node_bl_builder_finish(struct node_bl_builder *b, int *type, uint8_t hash[FERRY_HASH_LEN])
{
	int r;
	/* A single leaf is the whole blocklist. */
	int nothing_above = 1;
	for (int i = 0; i < NODE_DEPTH_MAX; i++)
		if (b->level_n[i])
			nothing_above = 0;
	if (nothing_above) {
		if (!b->leaf_n) {
			*type = 0;
			return 0;
		}
		put_le32(b->leaf.data, b->leaf_n);
		if ((r = b->put(b->arg, NODE_BLOCKLIST, b->leaf.data, b->leaf.len, hash)) < 0)
			return r;
		*type = NODE_BLOCKLIST;
		return 0;
	}
	if ((r = leaf_flush(b)) < 0)
		return r;
	for (int lvl = 0; lvl < NODE_DEPTH_MAX; lvl++) {
		int higher = 0;
		for (int k = lvl + 1; k < NODE_DEPTH_MAX; k++)
			if (b->level_n[k])
				higher = 1;
		if (!higher && b->level_n[lvl] == 1) {
			/* the only child of the top level is the root */
			const uint8_t *c = b->levels[lvl].data + 4;
			*type = c[8];
			memcpy(hash, c + 9, FERRY_HASH_LEN);
			return 0;
		}
		if ((r = level_flush(b, lvl)) < 0)
			return r;
	}
	return ferry_err(FERR_LIMIT, "file too large for a blocklist");
}
