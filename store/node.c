/* store/node.c — the Merkle metadata: encoding and strict decoding of
 * directory and root nodes, and the walk of a tree of them
 * (docs/ferry-nodes.md; blocklists and their index are blocklist.c's).
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
static int entry_decode(struct node_rd *r, struct node_entry *e, struct node_xattr **xa, int is_root)
{
	int rc;
	*xa = NULL;
	memset(e, 0, sizeof *e);
	if ((rc = nrd_need(r, 2)) < 0)
		return rc;
	e->name_len = nrd_u16(r);
	if ((rc = nrd_need(r, e->name_len)) < 0)
		return rc;
	e->name = r->p + r->pos;
	r->pos += e->name_len;
	if ((rc = nrd_need(r, ENTRY_FIXED)) < 0)
		return rc;
	e->ftype = nrd_u8(r);
	if (nrd_u8(r) != 0)
		return ferry_err(FERR_CORRUPT, "node entry has reserved flags set");
	e->mode = nrd_u16(r);
	e->uid = nrd_u32(r);
	e->gid = nrd_u32(r);
	e->mtime_sec = (int64_t)nrd_u64(r);
	e->mtime_nsec = nrd_u32(r);
	e->ctime_sec = (int64_t)nrd_u64(r);
	e->ctime_nsec = nrd_u32(r);
	e->ino = nrd_u64(r);
	e->size = nrd_u64(r);
	e->rdev_major = nrd_u32(r);
	e->rdev_minor = nrd_u32(r);
	e->link_id = nrd_u64(r);
	e->target_len = nrd_u16(r);
	if ((rc = nrd_need(r, e->target_len)) < 0)
		return rc;
	e->target = r->p + r->pos;
	r->pos += e->target_len;
	if ((rc = nrd_need(r, 2)) < 0)
		return rc;
	e->nxattr = nrd_u16(r);
	if (e->nxattr > NODE_XATTRS_MAX || e->nxattr * 6 > r->len - r->pos)
		return ferry_err(FERR_CORRUPT, "node entry has %zu xattrs", e->nxattr);
	if (e->nxattr) {
		struct node_xattr *x = calloc(e->nxattr, sizeof *x);
		if (!x)
			return ferry_err(FERR_NOMEM, "decoding a node");
		*xa = x;
		for (size_t i = 0; i < e->nxattr; i++) {
			if ((rc = nrd_need(r, 1)) < 0)
				return rc;
			x[i].name_len = nrd_u8(r);
			if ((rc = nrd_need(r, x[i].name_len)) < 0)
				return rc;
			x[i].name = r->p + r->pos;
			r->pos += x[i].name_len;
			if ((rc = nrd_need(r, 4)) < 0)
				return rc;
			x[i].value_len = nrd_u32(r);
			if (x[i].value_len > NODE_XATTR_VALUE_MAX)
				return ferry_err(FERR_CORRUPT, "xattr value of %zu bytes", x[i].value_len);
			if ((rc = nrd_need(r, x[i].value_len)) < 0)
				return rc;
			x[i].value = r->p + r->pos;
			r->pos += x[i].value_len;
		}
		e->xattrs = x;
	}
	if ((rc = nrd_need(r, 1)) < 0)
		return rc;
	e->child_type = nrd_u8(r);
	if (e->child_type) {
		if (e->child_type > NODE_EXT)
			return ferry_err(FERR_CORRUPT, "node entry has child type %u", e->child_type);
		if ((rc = nrd_need(r, FERRY_HASH_LEN)) < 0)
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
	struct node_rd r = {buf, len, 0};
	int rc;
	if ((rc = nrd_need(&r, 4)) < 0)
		return rc;
	uint32_t n = nrd_u32(&r);
	/* each entry takes at least 2 + 1 + ENTRY_FIXED + 2 + 1 bytes */
	if (n > (len - 4) / (ENTRY_FIXED + 6))
		return ferry_err(FERR_CORRUPT, "directory node claims %u entries", n);
	/* room for all of them at once (n is bounded by len just above): a
	 * large directory grown entry by entry costs copies */
	if (n && (rc = VEC_GROW(d->ents, c->ents, d->n + n - 1, 16, "decoding a directory")) < 0)
		return rc;
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

const struct node_entry *node_dir_find(const struct node_dir *d, const uint8_t *name, size_t len)
{
	size_t lo = 0, hi = d ? d->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct node_entry *e = &d->ents[mid];
		size_t m = e->name_len < len ? e->name_len : len;
		int cmp = memcmp(e->name, name, m);
		if (!cmp)
			cmp = (e->name_len > len) - (e->name_len < len);
		if (!cmp)
			return e;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
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
	struct node_rd rr = {ib.data, ib.len, 0};
	if ((r = nrd_need(&rr, 5)) < 0)
		goto out;
	if (nrd_u8(&rr) != NODE_EXT_DIR_INDEX) {
		r = ferry_err(FERR_CORRUPT, "directory points to a non-index extension node");
		goto out;
	}
	uint32_t nk = nrd_u32(&rr);
	if (nk < 2 || nk > NODE_INDEX_MAX) {
		r = ferry_err(FERR_CORRUPT, "directory index has %u children", nk);
		goto out;
	}
	for (uint32_t i = 0; i < nk; i++) {
		if ((r = nrd_need(&rr, 6)) < 0)
			goto out;
		uint32_t cnt = nrd_u32(&rr);
		size_t fl = nrd_u16(&rr);
		if ((r = nrd_need(&rr, fl + FERRY_HASH_LEN)) < 0)
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
		struct node_rd rr = {b->index.data, b->index.len, 0};
		rr.pos = 4;
		size_t fl = nrd_u16(&rr);
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
	struct node_rd r = {buf, len, 0};
	int rc;
	*xa = NULL;
	if ((rc = nrd_need(&r, 4)) < 0)
		return rc;
	if (nrd_u8(&r) != NODE_EXT_ROOT)
		return ferry_err(FERR_CORRUPT, "not a root node");
	int k = nrd_u8(&r);
	if ((k != NODE_ROOT_FILESYSTEM && k != NODE_ROOT_VOLUME) || nrd_u16(&r) != 0)
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

/* ---- the children of one node ------------------------------------------------ */

int node_children(int type, const uint8_t *b, size_t len, int blocks, node_child_fn fn,
		  void *arg)
{
	int r = 0;
	if (type == NODE_DIR) {
		struct node_dir d;
		memset(&d, 0, sizeof d);
		if ((r = node_dir_decode(b, len, &d)) < 0) {
			node_dir_release(&d);
			return r;
		}
		for (size_t i = 0; i < d.n && r == 0; i++)
			if (d.ents[i].child_type)
				r = fn(arg, 0, d.ents[i].child);
		node_dir_release(&d);
		return r;
	}
	if (type == NODE_BLOCKLIST_INDEX) {
		struct node_index_child *k = NULL;
		size_t n = 0;
		if ((r = node_bli_decode(b, len, &k, &n)) < 0)
			return r;
		for (size_t i = 0; i < n && r == 0; i++)
			r = fn(arg, 0, k[i].hash);
		free(k);
		return r;
	}
	if (type == NODE_BLOCKLIST) {
		struct node_extent *x = NULL;
		size_t n = 0;
		if (!blocks)
			return 0;
		if ((r = node_bl_decode(b, len, &x, &n)) < 0)
			return r;
		for (size_t i = 0; i < n && r == 0; i++)
			if (!x[i].hole)
				r = fn(arg, 1, x[i].hash);
		free(x);
		return r;
	}
	if (type != NODE_EXT)
		return 0;
	if (len < 1)
		return ferry_err(FERR_CORRUPT, "empty extension node");
	if (b[0] == NODE_EXT_ROOT) {
		struct node_entry e;
		struct node_xattr *xa = NULL;
		int kind;
		if ((r = node_root_decode(b, len, &kind, &e, &xa)) < 0)
			return r;
		free(xa);
		return e.child_type ? fn(arg, 0, e.child) : 0;
	}
	if (b[0] != NODE_EXT_DIR_INDEX || len < 5)
		return ferry_err(FERR_CORRUPT, "unknown extension node");
	uint32_t n = get_le32(b + 1);
	size_t pos = 5;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		if (len - pos < 6)
			return ferry_err(FERR_CORRUPT, "directory index is truncated");
		size_t fl = get_le16(b + pos + 4);
		pos += 6;
		if (len - pos < fl + FERRY_HASH_LEN)
			return ferry_err(FERR_CORRUPT, "directory index is truncated");
		pos += fl;
		r = fn(arg, 0, b + pos);
		pos += FERRY_HASH_LEN;
	}
	return r;
}
