/* store/node.c — the Merkle metadata: encoding and strict decoding of
 * directory, blocklist, index and root nodes (docs/ferry-nodes.md).
 *
 * Every decoder here may see attacker-supplied bytes (a received stream):
 * each count is bounded by what the remaining bytes could hold before any
 * allocation, names are checked for '/', NUL, "." and "..", order is
 * strict, reserved fields must be zero and trailing bytes are corrupt. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define XATTR_BYTES_MAX ((size_t)1 << 20) /* all xattrs of one entry */
#define CHUNK_SOFT ((size_t)1 << 20)      /* a directory chunk ends past this */
#define CHUNK_MIN_ENTRIES 32
#define ENTRY_FIXED 70                    /* entry bytes besides name/target/xattrs/child */

void node_hash(int type, const void *data, size_t len, uint8_t out[FERRY_HASH_LEN])
{
	struct hash_state h;
	uint8_t t = (uint8_t)type;
	hash_init(&h);
	hash_update(&h, &t, 1);
	if (len)
		hash_update(&h, data, len);
	hash_final(&h, out);
}

/* ---- a bounded reader over node bytes ---------------------------------------- */

struct rd {
	const uint8_t *p;
	size_t len, pos;
};

static int need(struct rd *r, size_t n)
{
	if (r->len - r->pos < n)
		return ferry_err(FERR_CORRUPT, "node is truncated");
	return 0;
}
static uint8_t rd8(struct rd *r) { return r->p[r->pos++]; }
static uint16_t rd16(struct rd *r) { uint16_t v = get_le16(r->p + r->pos); r->pos += 2; return v; }
static uint32_t rd32(struct rd *r) { uint32_t v = get_le32(r->p + r->pos); r->pos += 4; return v; }
static uint64_t rd64(struct rd *r) { uint64_t v = get_le64(r->p + r->pos); r->pos += 8; return v; }

static int name_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	if (c)
		return c;
	return an < bn ? -1 : an > bn ? 1 : 0;
}

static int name_ok(const uint8_t *n, size_t len)
{
	if (len == 0 || len > NODE_NAME_MAX)
		return 0;
	if ((len == 1 && n[0] == '.') || (len == 2 && n[0] == '.' && n[1] == '.'))
		return 0;
	return !memchr(n, '/', len) && !memchr(n, 0, len);
}

int node_entry_check(const struct node_entry *e, int is_root)
{
	if (is_root ? e->name_len != 0 : !name_ok(e->name, e->name_len))
		return ferry_err(FERR_CORRUPT, "node entry has an invalid name");
	if (e->ftype < NODE_F_REG || e->ftype > NODE_F_BLK)
		return ferry_err(FERR_CORRUPT, "node entry has type %u", e->ftype);
	if (e->mode & ~07777u)
		return ferry_err(FERR_CORRUPT, "node entry has mode %o", e->mode);
	if (e->mtime_nsec >= 1000000000u || e->ctime_nsec >= 1000000000u)
		return ferry_err(FERR_CORRUPT, "node entry has nanoseconds out of range");
	if (e->ftype != NODE_F_REG && (e->size != 0 || e->link_id != 0))
		return ferry_err(FERR_CORRUPT, "node entry: size or link on a non-file");
	if (e->ftype != NODE_F_CHR && e->ftype != NODE_F_BLK && (e->rdev_major || e->rdev_minor))
		return ferry_err(FERR_CORRUPT, "node entry: device number on a non-device");
	if (e->ftype == NODE_F_SYMLINK
		    ? (e->target_len == 0 || e->target_len > NODE_TARGET_MAX ||
		       memchr(e->target, 0, e->target_len))
		    : e->target_len != 0)
		return ferry_err(FERR_CORRUPT, "node entry has an invalid symlink target");
	if (e->nxattr > NODE_XATTRS_MAX)
		return ferry_err(FERR_CORRUPT, "node entry has %zu xattrs", e->nxattr);
	size_t total = 0;
	for (size_t i = 0; i < e->nxattr; i++) {
		const struct node_xattr *x = &e->xattrs[i];
		if (x->name_len == 0 || x->name_len > NODE_XATTR_NAME_MAX ||
		    memchr(x->name, 0, x->name_len) || x->value_len > NODE_XATTR_VALUE_MAX)
			return ferry_err(FERR_CORRUPT, "node entry has an invalid xattr");
		if (i && name_cmp(e->xattrs[i - 1].name, e->xattrs[i - 1].name_len, x->name,
				  x->name_len) >= 0)
			return ferry_err(FERR_CORRUPT, "node entry xattrs are not sorted");
		total += 5 + x->name_len + x->value_len;
	}
	if (total > XATTR_BYTES_MAX)
		return ferry_err(FERR_CORRUPT, "node entry has %zu bytes of xattrs", total);
	int ok;
	switch (e->ftype) {
	case NODE_F_DIR:
		ok = e->child_type == NODE_DIR || e->child_type == NODE_EXT;
		break;
	case NODE_F_REG:
		ok = e->size == 0 ? e->child_type == 0
				  : e->child_type == NODE_BLOCKLIST ||
					    e->child_type == NODE_BLOCKLIST_INDEX;
		break;
	default:
		ok = e->child_type == 0;
	}
	if (!ok)
		return ferry_err(FERR_CORRUPT, "node entry has child type %u for file type %u",
				 e->child_type, e->ftype);
	return 0;
}

int node_entry_encode(struct fbuf *out, const struct node_entry *e)
{
	int r;
	if (e->name_len > NODE_NAME_MAX || e->target_len > NODE_TARGET_MAX ||
	    e->nxattr > NODE_XATTRS_MAX)
		return ferry_err(FERR_LIMIT, "directory entry too large");
	if ((r = fbuf_put_le16(out, (uint16_t)e->name_len)) < 0 ||
	    (r = fbuf_append(out, e->name, e->name_len)) < 0 ||
	    (r = fbuf_putc(out, e->ftype)) < 0 || (r = fbuf_putc(out, 0)) < 0 ||
	    (r = fbuf_put_le16(out, e->mode)) < 0 || (r = fbuf_put_le32(out, e->uid)) < 0 ||
	    (r = fbuf_put_le32(out, e->gid)) < 0 ||
	    (r = fbuf_put_le64(out, (uint64_t)e->mtime_sec)) < 0 ||
	    (r = fbuf_put_le32(out, e->mtime_nsec)) < 0 ||
	    (r = fbuf_put_le64(out, (uint64_t)e->ctime_sec)) < 0 ||
	    (r = fbuf_put_le32(out, e->ctime_nsec)) < 0 || (r = fbuf_put_le64(out, e->ino)) < 0 ||
	    (r = fbuf_put_le64(out, e->size)) < 0 || (r = fbuf_put_le32(out, e->rdev_major)) < 0 ||
	    (r = fbuf_put_le32(out, e->rdev_minor)) < 0 || (r = fbuf_put_le64(out, e->link_id)) < 0 ||
	    (r = fbuf_put_le16(out, (uint16_t)e->target_len)) < 0 ||
	    (e->target_len && (r = fbuf_append(out, e->target, e->target_len)) < 0) ||
	    (r = fbuf_put_le16(out, (uint16_t)e->nxattr)) < 0)
		return r;
	for (size_t i = 0; i < e->nxattr; i++) {
		const struct node_xattr *x = &e->xattrs[i];
		if (x->name_len > NODE_XATTR_NAME_MAX || x->value_len > NODE_XATTR_VALUE_MAX)
			return ferry_err(FERR_LIMIT, "xattr too large");
		if ((r = fbuf_putc(out, (uint8_t)x->name_len)) < 0 ||
		    (r = fbuf_append(out, x->name, x->name_len)) < 0 ||
		    (r = fbuf_put_le32(out, (uint32_t)x->value_len)) < 0 ||
		    (x->value_len && (r = fbuf_append(out, x->value, x->value_len)) < 0))
			return r;
	}
	if ((r = fbuf_putc(out, e->child_type)) < 0)
		return r;
	if (e->child_type && (r = fbuf_append(out, e->child, FERRY_HASH_LEN)) < 0)
		return r;
	return 0;
}

/* Decodes one entry at r; xattrs go to a malloc'd array stored in *xa
 * (NULL when none). */
static int entry_decode(struct rd *r, struct node_entry *e, struct node_xattr **xa, int is_root)
{
	int rc;
	*xa = NULL;
	memset(e, 0, sizeof *e);
	if ((rc = need(r, 2)) < 0)
		return rc;
	e->name_len = rd16(r);
	if ((rc = need(r, e->name_len)) < 0)
		return rc;
	e->name = r->p + r->pos;
	r->pos += e->name_len;
	if ((rc = need(r, ENTRY_FIXED)) < 0)
		return rc;
	e->ftype = rd8(r);
	if (rd8(r) != 0)
		return ferry_err(FERR_CORRUPT, "node entry has reserved flags set");
	e->mode = rd16(r);
	e->uid = rd32(r);
	e->gid = rd32(r);
	e->mtime_sec = (int64_t)rd64(r);
	e->mtime_nsec = rd32(r);
	e->ctime_sec = (int64_t)rd64(r);
	e->ctime_nsec = rd32(r);
	e->ino = rd64(r);
	e->size = rd64(r);
	e->rdev_major = rd32(r);
	e->rdev_minor = rd32(r);
	e->link_id = rd64(r);
	e->target_len = rd16(r);
	if ((rc = need(r, e->target_len)) < 0)
		return rc;
	e->target = r->p + r->pos;
	r->pos += e->target_len;
	if ((rc = need(r, 2)) < 0)
		return rc;
	e->nxattr = rd16(r);
	if (e->nxattr > NODE_XATTRS_MAX || e->nxattr * 6 > r->len - r->pos)
		return ferry_err(FERR_CORRUPT, "node entry has %zu xattrs", e->nxattr);
	if (e->nxattr) {
		struct node_xattr *x = calloc(e->nxattr, sizeof *x);
		if (!x)
			return ferry_err(FERR_NOMEM, "decoding a node");
		*xa = x;
		for (size_t i = 0; i < e->nxattr; i++) {
			if ((rc = need(r, 1)) < 0)
				return rc;
			x[i].name_len = rd8(r);
			if ((rc = need(r, x[i].name_len)) < 0)
				return rc;
			x[i].name = r->p + r->pos;
			r->pos += x[i].name_len;
			if ((rc = need(r, 4)) < 0)
				return rc;
			x[i].value_len = rd32(r);
			if (x[i].value_len > NODE_XATTR_VALUE_MAX)
				return ferry_err(FERR_CORRUPT, "xattr value of %zu bytes", x[i].value_len);
			if ((rc = need(r, x[i].value_len)) < 0)
				return rc;
			x[i].value = r->p + r->pos;
			r->pos += x[i].value_len;
		}
		e->xattrs = x;
	}
	if ((rc = need(r, 1)) < 0)
		return rc;
	e->child_type = rd8(r);
	if (e->child_type) {
		if (e->child_type > NODE_EXT)
			return ferry_err(FERR_CORRUPT, "node entry has child type %u", e->child_type);
		if ((rc = need(r, FERRY_HASH_LEN)) < 0)
			return rc;
		memcpy(e->child, r->p + r->pos, FERRY_HASH_LEN);
		r->pos += FERRY_HASH_LEN;
	}
	return node_entry_check(e, is_root);
}

/* ---- directories --------------------------------------------------------------- */

void node_dir_release(struct node_dir *d)
{
	for (size_t i = 0; i < d->nbufs; i++)
		free(d->bufs[i]);
	for (size_t i = 0; i < d->nxas; i++)
		free(d->xas[i]);
	free(d->bufs);
	free(d->xas);
	free(d->ents);
	memset(d, 0, sizeof *d);
}

struct dir_caps {
	size_t ents, xas, bufs;
};

static int dir_decode_caps(const uint8_t *buf, size_t len, struct node_dir *d, struct dir_caps *c)
{
	struct rd r = {buf, len, 0};
	int rc;
	if ((rc = need(&r, 4)) < 0)
		return rc;
	uint32_t n = rd32(&r);
	/* each entry takes at least 2 + 1 + ENTRY_FIXED + 2 + 1 bytes */
	if (n > (len - 4) / (ENTRY_FIXED + 6))
		return ferry_err(FERR_CORRUPT, "directory node claims %u entries", n);
	size_t first = d->n;
	for (uint32_t i = 0; i < n; i++) {
		struct node_xattr *xa = NULL;
		if ((rc = VEC_GROW(d->ents, c->ents, d->n, 16, "decoding a directory")) < 0)
			return rc;
		rc = entry_decode(&r, &d->ents[d->n], &xa, 0);
		if (xa) {
			int g = VEC_GROW(d->xas, c->xas, d->nxas, 16, "decoding a directory");
			if (g < 0) {
				free(xa);
				return g;
			}
			d->xas[d->nxas++] = xa;
		}
		if (rc < 0)
			return rc;
		if (d->n > first && name_cmp(d->ents[d->n - 1].name, d->ents[d->n - 1].name_len,
					     d->ents[d->n].name, d->ents[d->n].name_len) >= 0)
			return ferry_err(FERR_CORRUPT, "directory node names are not sorted");
		d->n++;
	}
	if (r.pos != len)
		return ferry_err(FERR_CORRUPT, "directory node has trailing bytes");
	return 0;
}

int node_dir_decode(const uint8_t *buf, size_t len, struct node_dir *d)
{
	struct dir_caps c = {d->n, d->nxas, d->nbufs};
	return dir_decode_caps(buf, len, d, &c);
}

int node_dir_load(node_read_fn rdfn, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		  struct node_dir *d)
{
	struct fbuf b, ib;
	struct dir_caps caps = {0, 0, 0};
	int r, t;
	fbuf_init(&b, NODE_MAX);
	fbuf_init(&ib, NODE_MAX);
	memset(d, 0, sizeof *d);
	if (type != NODE_DIR && type != NODE_EXT) {
		r = ferry_err(FERR_CORRUPT, "directory points to a node of type %d", type);
		goto out;
	}
	if ((r = rdfn(arg, hash, &t, &ib)) < 0)
		goto out;
	if (t != type) {
		r = ferry_err(FERR_CORRUPT, "node has type %d, expected %d", t, type);
		goto out;
	}
	if (type == NODE_DIR) {
		if ((r = VEC_GROW(d->bufs, caps.bufs, 0, 16, "decoding a directory")) < 0)
			goto out;
		size_t blen = ib.len;
		d->bufs[d->nbufs++] = fbuf_detach(&ib, NULL);
		r = dir_decode_caps(d->bufs[0], blen, d, &caps);
		goto out;
	}
	struct rd rr = {ib.data, ib.len, 0};
	if ((r = need(&rr, 5)) < 0)
		goto out;
	if (rd8(&rr) != NODE_EXT_DIR_INDEX) {
		r = ferry_err(FERR_CORRUPT, "directory points to a non-index extension node");
		goto out;
	}
	uint32_t nk = rd32(&rr);
	if (nk < 2 || nk > NODE_INDEX_MAX) {
		r = ferry_err(FERR_CORRUPT, "directory index has %u children", nk);
		goto out;
	}
	for (uint32_t i = 0; i < nk; i++) {
		if ((r = need(&rr, 6)) < 0)
			goto out;
		uint32_t cnt = rd32(&rr);
		size_t fl = rd16(&rr);
		if ((r = need(&rr, fl + FERRY_HASH_LEN)) < 0)
			goto out;
		const uint8_t *first = rr.p + rr.pos;
		rr.pos += fl;
		uint8_t h[FERRY_HASH_LEN];
		memcpy(h, rr.p + rr.pos, FERRY_HASH_LEN);
		rr.pos += FERRY_HASH_LEN;
		if (cnt == 0 || !name_ok(first, fl)) {
			r = ferry_err(FERR_CORRUPT, "directory index child %u is invalid", i);
			goto out;
		}
		if ((r = rdfn(arg, h, &t, &b)) < 0)
			goto out;
		if (t != NODE_DIR) {
			r = ferry_err(FERR_CORRUPT, "directory index child has type %d", t);
			goto out;
		}
		size_t blen = b.len, before = d->n;
		if ((r = VEC_GROW(d->bufs, caps.bufs, d->nbufs, 16, "decoding a directory")) < 0)
			goto out;
		d->bufs[d->nbufs++] = fbuf_detach(&b, NULL);
		if ((r = dir_decode_caps(d->bufs[d->nbufs - 1], blen, d, &caps)) < 0)
			goto out;
		if (d->n - before != cnt ||
		    name_cmp(d->ents[before].name, d->ents[before].name_len, first, fl) != 0) {
			r = ferry_err(FERR_CORRUPT, "directory index does not match its children");
			goto out;
		}
		if (before && name_cmp(d->ents[before - 1].name, d->ents[before - 1].name_len,
				       d->ents[before].name, d->ents[before].name_len) >= 0) {
			r = ferry_err(FERR_CORRUPT, "directory chunks are not in name order");
			goto out;
		}
	}
	if (rr.pos != rr.len)
		r = ferry_err(FERR_CORRUPT, "directory index has trailing bytes");
out:
	fbuf_release(&b);
	fbuf_release(&ib);
	if (r < 0) {
		node_dir_release(d);
	} else if (caps.ents > d->n && d->n) {
		/* give back the growth slack (16 entries at least): a walk of a
		 * deep tree holds one loaded directory per level */
		size_t bytes;
		struct node_entry *ne = sz_mul(d->n, sizeof *d->ents, &bytes) == 0
						? realloc(d->ents, bytes) : NULL;
		if (ne)
			d->ents = ne;
	}
	return r;
}

void node_dir_builder_init(struct node_dir_builder *b, node_put_fn put, void *arg)
{
	memset(b, 0, sizeof *b);
	b->put = put;
	b->arg = arg;
	fbuf_init(&b->chunk, NODE_MAX);
	fbuf_init(&b->index, NODE_MAX);
}

void node_dir_builder_release(struct node_dir_builder *b)
{
	fbuf_release(&b->chunk);
	fbuf_release(&b->index);
}

static int chunk_flush(struct node_dir_builder *b)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (!b->chunk_n)
		return 0;
	put_le32(b->chunk.data, b->chunk_n);
	if ((r = b->put(b->arg, NODE_DIR, b->chunk.data, b->chunk.len, h)) < 0)
		return r;
	if (b->nchunks >= NODE_INDEX_MAX)
		return ferry_err(FERR_LIMIT, "directory too large");
	if ((r = fbuf_put_le32(&b->index, b->chunk_n)) < 0 ||
	    (r = fbuf_put_le16(&b->index, (uint16_t)b->first_len)) < 0 ||
	    (r = fbuf_append(&b->index, b->first, b->first_len)) < 0 ||
	    (r = fbuf_append(&b->index, h, FERRY_HASH_LEN)) < 0)
		return r;
	b->nchunks++;
	fbuf_reset(&b->chunk);
	b->chunk_n = 0;
	return 0;
}

int node_dir_builder_add(struct node_dir_builder *b, const struct node_entry *e)
{
	int r;
	if ((r = node_entry_check(e, 0)) < 0)
		return r;
	if ((b->chunk_n || b->nchunks) &&
	    name_cmp(b->last, b->last_len, e->name, e->name_len) >= 0)
		return ferry_err(FERR_INVAL, "directory entries out of order");
	if (!b->chunk_n) {
		if ((r = fbuf_put_le32(&b->chunk, 0)) < 0)
			return r;
		memcpy(b->first, e->name, e->name_len);
		b->first_len = e->name_len;
	}
	if ((r = node_entry_encode(&b->chunk, e)) < 0)
		return r;
	b->chunk_n++;
	memcpy(b->last, e->name, e->name_len);
	b->last_len = e->name_len;
	/* Content-defined chunk ends: an insertion only rewrites its chunk. */
	uint8_t h[FERRY_HASH_LEN];
	int cut = b->chunk.len >= CHUNK_SOFT;
	if (!cut && b->chunk_n >= CHUNK_MIN_ENTRIES) {
		hash_blake2b(h, e->name, e->name_len);
		cut = h[0] == 0 && (h[1] & 1) == 0;
	}
	return cut ? chunk_flush(b) : 0;
}

int node_dir_builder_finish(struct node_dir_builder *b, int *type, uint8_t hash[FERRY_HASH_LEN])
{
	int r;
	if (b->nchunks == 0) {
		/* one chunk (or an empty directory): a plain directory node */
		if (!b->chunk_n && (r = fbuf_put_le32(&b->chunk, 0)) < 0)
			return r;
		put_le32(b->chunk.data, b->chunk_n);
		if ((r = b->put(b->arg, NODE_DIR, b->chunk.data, b->chunk.len, hash)) < 0)
			return r;
		*type = NODE_DIR;
		return 0;
	}
	if ((r = chunk_flush(b)) < 0)
		return r;
	if (b->nchunks == 1) {
		/* the cut fell on the last entry: the index would have one child */
		struct rd rr = {b->index.data, b->index.len, 0};
		rr.pos = 4;
		size_t fl = rd16(&rr);
		memcpy(hash, b->index.data + 6 + fl, FERRY_HASH_LEN);
		*type = NODE_DIR;
		return 0;
	}
	struct fbuf out;
	fbuf_init(&out, NODE_MAX);
	if ((r = fbuf_putc(&out, NODE_EXT_DIR_INDEX)) < 0 ||
	    (r = fbuf_put_le32(&out, b->nchunks)) < 0 ||
	    (r = fbuf_append(&out, b->index.data, b->index.len)) < 0 ||
	    (r = b->put(b->arg, NODE_EXT, out.data, out.len, hash)) < 0) {
		fbuf_release(&out);
		return r;
	}
	fbuf_release(&out);
	*type = NODE_EXT;
	return 0;
}

/* ---- blocklists ------------------------------------------------------------------ */

int node_bl_decode(const uint8_t *buf, size_t len, struct node_extent **ext, size_t *n)
{
	struct rd r = {buf, len, 0};
	struct node_extent *x = NULL;
	int rc;
	if ((rc = need(&r, 4)) < 0)
		return rc;
	uint32_t cnt = rd32(&r);
	if (cnt == 0 || cnt > NODE_BL_MAX || cnt > (len - 4) / 9)
		return ferry_err(FERR_CORRUPT, "blocklist node claims %u extents", cnt);
	if (!(x = calloc(cnt, sizeof *x)))
		return ferry_err(FERR_NOMEM, "decoding a blocklist");
	for (uint32_t i = 0; i < cnt; i++) {
		if ((rc = need(&r, 1)) < 0)
			goto fail;
		uint8_t kind = rd8(&r);
		if (kind == 0) {
			if ((rc = need(&r, 8)) < 0)
				goto fail;
			x[i].hole = 1;
			x[i].len = rd64(&r);
			if (x[i].len == 0 || (i && x[i - 1].hole)) {
				rc = ferry_err(FERR_CORRUPT, "blocklist has an empty or split hole");
				goto fail;
			}
		} else if (kind == 1) {
			if ((rc = need(&r, 4 + FERRY_HASH_LEN)) < 0)
				goto fail;
			x[i].len = rd32(&r);
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
	struct rd r = {buf, len, 0};
	int rc;
	if ((rc = need(&r, 4)) < 0)
		return rc;
	uint32_t cnt = rd32(&r);
	if (cnt == 0 || cnt > NODE_INDEX_MAX || (len - 4) != (size_t)cnt * (9 + FERRY_HASH_LEN))
		return ferry_err(FERR_CORRUPT, "blocklist index claims %u children", cnt);
	struct node_index_child *k = calloc(cnt, sizeof *k);
	if (!k)
		return ferry_err(FERR_NOMEM, "decoding a blocklist index");
	for (uint32_t i = 0; i < cnt; i++) {
		k[i].span = rd64(&r);
		k[i].type = rd8(&r);
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

/* ---- roots ---------------------------------------------------------------------- */

int node_root_encode(struct fbuf *out, int kind, const struct node_entry *e)
{
	int r;
	if ((r = node_entry_check(e, 1)) < 0)
		return r;
	if ((kind == NODE_ROOT_FILESYSTEM) != (e->ftype == NODE_F_DIR) ||
	    (kind == NODE_ROOT_VOLUME) != (e->ftype == NODE_F_REG))
		return ferry_err(FERR_INVAL, "root entry does not match kind %d", kind);
	if ((r = fbuf_putc(out, NODE_EXT_ROOT)) < 0 || (r = fbuf_putc(out, (uint8_t)kind)) < 0 ||
	    (r = fbuf_put_le16(out, 0)) < 0)
		return r;
	return node_entry_encode(out, e);
}

int node_root_decode(const uint8_t *buf, size_t len, int *kind, struct node_entry *e,
		     struct node_xattr **xa)
{
	struct rd r = {buf, len, 0};
	int rc;
	*xa = NULL;
	if ((rc = need(&r, 4)) < 0)
		return rc;
	if (rd8(&r) != NODE_EXT_ROOT)
		return ferry_err(FERR_CORRUPT, "not a root node");
	int k = rd8(&r);
	if ((k != NODE_ROOT_FILESYSTEM && k != NODE_ROOT_VOLUME) || rd16(&r) != 0)
		return ferry_err(FERR_CORRUPT, "root node of kind %d", k);
	if ((rc = entry_decode(&r, e, xa, 1)) < 0)
		goto fail;
	if ((k == NODE_ROOT_FILESYSTEM) != (e->ftype == NODE_F_DIR) ||
	    (k == NODE_ROOT_VOLUME) != (e->ftype == NODE_F_REG)) {
		rc = ferry_err(FERR_CORRUPT, "root entry does not match its kind");
		goto fail;
	}
	if (r.pos != len) {
		rc = ferry_err(FERR_CORRUPT, "root node has trailing bytes");
		goto fail;
	}
	*kind = k;
	return 0;
fail:
	free(*xa);
	*xa = NULL;
	return rc;
}

/* ---- walking a tree of any depth ---------------------------------------------------- */

struct walk_frame {
	struct node_dir d;
	size_t i;
	int type;
	uint8_t hash[FERRY_HASH_LEN];
	size_t path_len;        /* of the path to this directory */
};

int node_tree_walk(node_read_fn rd, void *rdarg, int type, const uint8_t hash[FERRY_HASH_LEN],
		   const struct node_walk_ops *ops, void *arg)
{
	struct walk_frame *st = NULL;
	size_t n = 0, cap = 0;
	struct fbuf path;
	int r;
	fbuf_init(&path, (size_t)(NODE_TREE_DEPTH_MAX + 2) * (NODE_NAME_MAX + 1));
	/* the root directory: level 0 */
	if (ops->enter && (r = ops->enter(arg, type, hash, 0)) != 0) {
		r = r < 0 ? r : 0;
		goto out;
	}
	if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
		goto out;
	memset(&st[0], 0, sizeof st[0]);
	st[0].type = type;
	memcpy(st[0].hash, hash, FERRY_HASH_LEN);
	if ((r = node_dir_load(rd, rdarg, type, hash, &st[0].d)) < 0)
		goto out;
	n = 1;
	while (n) {
		struct walk_frame *f = &st[n - 1];
		unsigned level = (unsigned)(n - 1);
		if (f->i == f->d.n) {
			node_dir_release(&f->d);
			path.len = f->path_len;
			n--;
			if (ops->leave && (r = ops->leave(arg, f->type, f->hash, level)) < 0)
				goto out;
			continue;
		}
		const struct node_entry *e = &f->d.ents[f->i++];
		path.len = f->path_len;
		if ((path.len && (r = fbuf_putc(&path, '/')) < 0) ||
		    (r = fbuf_append(&path, e->name, e->name_len)) < 0)
			goto out;
		struct node_walk_entry we = {e, level + 1, (const char *)path.data, path.len};
		if (ops->entry && (r = ops->entry(arg, &we)) != 0) {
			if (r < 0)
				goto out;
			continue; /* 1: do not descend */
		}
		if (e->ftype != NODE_F_DIR)
			continue;
		if (ops->enter && (r = ops->enter(arg, e->child_type, e->child, level + 1)) != 0) {
			if (r < 0)
				goto out;
			continue;
		}
		if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
			goto out;
		f = &st[n];
		memset(f, 0, sizeof *f);
		f->type = e->child_type;
		memcpy(f->hash, e->child, FERRY_HASH_LEN);
		f->path_len = path.len;
		if ((r = node_dir_load(rd, rdarg, f->type, f->hash, &f->d)) < 0)
			goto out;
		n++;
		if (level + 1 > NODE_TREE_DEPTH_MAX && f->d.n) {
			r = ferry_err(FERR_LIMIT, "directories nested deeper than %d levels",
				      NODE_TREE_DEPTH_MAX);
			goto out;
		}
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		node_dir_release(&st[i].d);
	free(st);
	fbuf_release(&path);
	return r;
}
