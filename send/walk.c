/* send/walk.c — the walk: the target's tree against the base's, entry by
 * entry (by name in directories, by position in blocklist indexes). Equal
 * subtrees are skipped by hash. A first pass over the changed part
 * collects the base's nodes that the second pass may meet again elsewhere
 * (a renamed file keeps its blocklist node, a moved directory its
 * directory node), so those are not sent. A bookmark base's tree is walked
 * once first to gather the blocks it names. Everything goes out in
 * post-order: children before the node that names them, the root last. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	struct snd *s = arg;
	return store_node_read(s->rd, hash, type, out);
}

static int base_add(struct snd *s, const uint8_t *hash)
{
	uint8_t key[KEY_LEN];
	send_key(key, 'N', hash);
	int r = store_hset_add(s->base, key, sizeof key, 0);
	return r < 0 ? r : 0;
}

static int walk_bl(struct snd *s, int nt, const uint8_t *nh, int ot, const uint8_t *oh,
		   int depth)
{
	struct fbuf nb, ob;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL, *ok = NULL;
	size_t n = 0, on = 0;
	int r, t, t2;
	if (oh && nt == ot && !memcmp(nh, oh, FERRY_HASH_LEN))
		return 0;
	if (s->collect && !oh)
		return 0;
	if (!s->collect && (r = send_node_known(s, nh)) != 0)
		return r < 0 ? r : 0;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	fbuf_init(&nb, NODE_MAX);
	fbuf_init(&ob, NODE_MAX);
	if (s->collect && (r = base_add(s, oh)) < 0)
		goto out;
	if ((r = store_node_read(s->rd, nh, &t, &nb)) < 0)
		goto out;
	if (t != nt) {
		r = ferry_err(FERR_CORRUPT, "node has type %d, expected %d", t, nt);
		goto out;
	}
	if (t == NODE_BLOCKLIST_INDEX) {
		if ((r = node_bli_decode(nb.data, nb.len, &k, &n)) < 0)
			goto out;
		if (oh && ot == NODE_BLOCKLIST_INDEX) {
			if ((r = store_node_read(s->rd, oh, &t2, &ob)) < 0 ||
			    (r = node_bli_decode(ob.data, ob.len, &ok, &on)) < 0)
				goto out;
			if (s->collect)
				for (size_t i = 0; i < on; i++)
					if ((r = base_add(s, ok[i].hash)) < 0)
						goto out;
		}
		uint64_t off = 0, ooff = 0;
		size_t j = 0;
		for (size_t i = 0; i < n; i++) {
			/* pair children that start at the same offset with the same span */
			while (ok && j < on && ooff < off)
				ooff += ok[j++].span;
			const struct node_index_child *oc =
				ok && j < on && ooff == off && ok[j].span == k[i].span ? &ok[j] : NULL;
			if ((r = walk_bl(s, k[i].type, k[i].hash, oc ? oc->type : 0,
					 oc ? oc->hash : NULL, depth + 1)) < 0)
				goto out;
			off += k[i].span;
		}
	} else if (t == NODE_BLOCKLIST) {
		if (!s->collect) {
			if ((r = node_bl_decode(nb.data, nb.len, &x, &n)) < 0)
				goto out;
			for (size_t i = 0; i < n; i++)
				if (!x[i].hole && (r = send_emit_block(s, x[i].hash, x[i].len)) < 0)
					goto out;
		}
	} else {
		r = ferry_err(FERR_CORRUPT, "file points to a node of type %d", t);
		goto out;
	}
	if (!s->collect)
		r = send_emit_node(s, nh);
out:
	free(x);
	free(k);
	free(ok);
	fbuf_release(&nb);
	fbuf_release(&ob);
	return r;
}

static int name_cmp(const struct node_entry *a, const struct node_entry *b)
{
	size_t m = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, m);
	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* The chunk hashes of a directory index node. */
static int dir_chunks(struct snd *s, const uint8_t *hash, int (*fn)(struct snd *, const uint8_t *))
{
	struct fbuf b;
	int r, t;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, hash, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || b.len < 5 || b.data[0] != NODE_EXT_DIR_INDEX) {
		r = ferry_err(FERR_CORRUPT, "directory points to a non-index node");
		goto out;
	}
	uint32_t nk = get_le32(b.data + 1);
	size_t pos = 5;
	for (uint32_t i = 0; i < nk; i++) {
		if (b.len - pos < 6) {
			r = ferry_err(FERR_CORRUPT, "directory index is truncated");
			goto out;
		}
		size_t fl = get_le16(b.data + pos + 4);
		pos += 6;
		if (b.len - pos < fl + FERRY_HASH_LEN) {
			r = ferry_err(FERR_CORRUPT, "directory index is truncated");
			goto out;
		}
		pos += fl;
		if ((r = fn(s, b.data + pos)) < 0)
			goto out;
		pos += FERRY_HASH_LEN;
	}
out:
	fbuf_release(&b);
	return r;
}

/* One directory of the walk: the target's (nt, nh) against the base's
 * (ot, oh; no base when !has_old), both decoded, with the position of
 * the next target entry and of its candidate in the base. */
struct wframe {
	int nt, ot, has_old;
	uint8_t nh[FERRY_HASH_LEN], oh[FERRY_HASH_LEN];
	struct node_dir nd, od;
	size_t i, j;
};

static void wframe_release(struct wframe *f)
{
	node_dir_release(&f->nd);
	node_dir_release(&f->od);
}

/* Opens directory nt/nh (against ot/oh) as frame f: 1 when it needs no
 * walk (equal to the base's, outside the first pass's reach, or already
 * sent), 0 when f is ready. */
static int wframe_open(struct snd *s, struct wframe *f, int nt, const uint8_t *nh, int ot,
		       const uint8_t *oh)
{
	int r;
	memset(f, 0, sizeof *f);
	if (oh && nt == ot && !memcmp(nh, oh, FERRY_HASH_LEN))
		return 1;
	if (s->collect && !oh)
		return 1;
	if (!s->collect && (r = send_node_known(s, nh)) != 0)
		return r;
	f->nt = nt;
	memcpy(f->nh, nh, FERRY_HASH_LEN);
	if (oh) {
		f->has_old = 1;
		f->ot = ot;
		memcpy(f->oh, oh, FERRY_HASH_LEN);
	}
	if ((r = node_dir_load(rd_node, s, nt, nh, &f->nd)) < 0 ||
	    (oh && (r = node_dir_load(rd_node, s, ot, oh, &f->od)) < 0))
		goto fail;
	if (s->collect) {
		if ((r = base_add(s, oh)) < 0 ||
		    (ot == NODE_EXT && (r = dir_chunks(s, oh, base_add)) < 0))
			goto fail;
		for (size_t j = 0; j < f->od.n; j++)
			if (f->od.ents[j].child_type && (r = base_add(s, f->od.ents[j].child)) < 0)
				goto fail;
	}
	return 0;
fail:
	wframe_release(f);
	return r;
}

/* The target's directory tree against the base's, depth first with an
 * explicit stack (trees as deep as NODE_TREE_DEPTH_MAX), each directory's
 * node emitted after everything below it. */
static int walk_dir(struct snd *s, int nt, const uint8_t *nh, int ot, const uint8_t *oh)
{
	struct wframe *st = NULL;
	size_t n = 0, cap = 0;
	int r;
	if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
		return r;
	if ((r = wframe_open(s, &st[0], nt, nh, ot, oh)) != 0)
		goto out;
	n = 1;
	while (n) {
		struct wframe *f = &st[n - 1];
		if (f->i == f->nd.n) {
			if (!s->collect) {
				if ((f->nt == NODE_EXT && (r = dir_chunks(s, f->nh, send_emit_node)) < 0) ||
				    (r = send_emit_node(s, f->nh)) < 0)
					goto out;
			}
			wframe_release(f);
			n--;
			continue;
		}
		const struct node_entry *e = &f->nd.ents[f->i++], *o = NULL;
		while (f->j < f->od.n && name_cmp(&f->od.ents[f->j], e) < 0)
			f->j++;
		if (f->j < f->od.n && name_cmp(&f->od.ents[f->j], e) == 0)
			o = &f->od.ents[f->j];
		if (!e->child_type)
			continue;
		if (o && (o->ftype != e->ftype || !o->child_type))
			o = NULL;
		if (e->ftype != NODE_F_DIR) {
			if ((r = walk_bl(s, e->child_type, e->child, o ? o->child_type : 0,
					 o ? o->child : NULL, 0)) < 0)
				goto out;
			continue;
		}
		if (n > (size_t)NODE_TREE_DEPTH_MAX + 1) {
			r = ferry_err(FERR_LIMIT, "directories nested deeper than %d levels",
				      NODE_TREE_DEPTH_MAX);
			goto out;
		}
		if ((r = VEC_GROW(st, cap, n, 64, "walking a tree")) < 0)
			goto out;
		r = wframe_open(s, &st[n], e->child_type, e->child, o ? o->child_type : 0,
				o ? o->child : NULL);
		if (r < 0)
			goto out;
		if (r == 0)
			n++;
	}
	r = 0;
out:
	for (size_t i = 0; i < n; i++)
		wframe_release(&st[i]);
	free(st);
	return r < 0 ? r : 0;
}

/* Adds the blocks of blocklist (or index) hash to s->base_blocks, each
 * node once ('N' key in the same set). */
static int mark_bl(struct snd *s, const uint8_t *hash, int depth)
{
	uint8_t key[KEY_LEN];
	struct fbuf b;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	size_t n = 0;
	int r, t;
	if (depth > NODE_DEPTH_MAX)
		return ferry_err(FERR_CORRUPT, "blocklist deeper than %d levels", NODE_DEPTH_MAX);
	send_key(key, 'N', hash);
	if ((r = store_hset_add(s->base_blocks, key, sizeof key, 0)) <= 0)
		return r;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, hash, &t, &b)) < 0)
		goto out;
	if (t == NODE_BLOCKLIST) {
		if ((r = node_bl_decode(b.data, b.len, &x, &n)) < 0)
			goto out;
		for (size_t i = 0; i < n && r >= 0; i++) {
			if (x[i].hole)
				continue;
			send_key(key, 'B', x[i].hash);
			r = store_hset_add(s->base_blocks, key, sizeof key, 0);
		}
	} else if (t == NODE_BLOCKLIST_INDEX) {
		if ((r = node_bli_decode(b.data, b.len, &k, &n)) < 0)
			goto out;
		fbuf_release(&b);
		for (size_t i = 0; i < n && r >= 0; i++)
			r = mark_bl(s, k[i].hash, depth + 1);
	} else {
		r = ferry_err(FERR_CORRUPT, "a file points to a node of type %d", t);
	}
out:
	free(x);
	free(k);
	fbuf_release(&b);
	return r < 0 ? r : 0;
}

static int mb_enter(void *arg, int type, const uint8_t hash[FERRY_HASH_LEN], unsigned level)
{
	struct snd *s = arg;
	uint8_t key[KEY_LEN];
	send_key(key, 'N', hash);
	int r = store_hset_add(s->base_blocks, key, sizeof key, 0);
	return r < 0 ? r : !r; /* a directory met before: skip it */
}

static int mb_entry(void *arg, const struct node_walk_entry *we)
{
	const struct node_entry *e = we->e;
	if (e->ftype == NODE_F_REG && e->child_type)
		return mark_bl(arg, e->child, 0);
	return 0;
}

/* Adds to s->base_blocks every block the tree of root node root names. */
int send_mark_blocks(struct snd *s, const uint8_t *root)
{
	static const struct node_walk_ops ops = {mb_enter, mb_entry, NULL};
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int r, t, kind;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(s->rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "the base's root is not a root node");
		goto out;
	}
	if (!e.child_type)
		goto out;
	if (kind == NODE_ROOT_FILESYSTEM)
		r = node_tree_walk(rd_node, s, e.child_type, e.child, &ops, s);
	else
		r = mark_bl(s, e.child, 0);
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

/* Walks root (against base root oroot, or NULL) once. */
int send_walk_root(struct snd *s, const uint8_t *root, const uint8_t *oroot)
{
	struct node_entry e, oe;
	struct node_xattr *xa = NULL, *oxa = NULL;
	struct fbuf b, ob;
	int r, t, kind = 0, okind = 0, have_old = 0;
	fbuf_init(&b, NODE_MAX);
	fbuf_init(&ob, NODE_MAX);
	memset(&oe, 0, sizeof oe);
	if (oroot && !memcmp(root, oroot, FERRY_HASH_LEN)) {
		r = 0;
		goto out;
	}
	if ((r = store_node_read(s->rd, root, &t, &b)) < 0)
		goto out;
	if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
		if (r >= 0)
			r = ferry_err(FERR_CORRUPT, "snapshot root is not a root node");
		goto out;
	}
	if (oroot) {
		if ((r = store_node_read(s->rd, oroot, &t, &ob)) < 0)
			goto out;
		if (t != NODE_EXT || (r = node_root_decode(ob.data, ob.len, &okind, &oe, &oxa)) < 0) {
			if (r >= 0)
				r = ferry_err(FERR_CORRUPT, "base root is not a root node");
			goto out;
		}
		have_old = okind == kind && oe.child_type;
		if (s->collect && (r = base_add(s, oroot)) < 0)
			goto out;
	}
	if (e.child_type) {
		if (kind == NODE_ROOT_FILESYSTEM)
			r = walk_dir(s, e.child_type, e.child, have_old ? oe.child_type : 0,
				     have_old ? oe.child : NULL);
		else
			r = walk_bl(s, e.child_type, e.child, have_old ? oe.child_type : 0,
				    have_old ? oe.child : NULL, 0);
		if (r < 0)
			goto out;
	}
	if (!s->collect)
		r = send_emit_node(s, root);
out:
	free(xa);
	free(oxa);
	fbuf_release(&b);
	fbuf_release(&ob);
	return r;
}
