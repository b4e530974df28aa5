/* capture/current.c — the snapshot of a dataset with nothing to capture
 * from (no source directory, no --from): as a zfs dataset nobody wrote to,
 * it holds what its newest snapshot holds, or nothing yet. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A dataset with nothing to capture from (no source, no --from) is, as a
 * zfs dataset nobody wrote to, what its newest snapshot holds: the new
 * snapshot gets that root and, through c->have_base, that snapshot's
 * block references, without a walk of its tree. Without a
 * snapshot it is empty: an empty directory owned by root (mode 0755, as a
 * new zfs filesystem), or a volume of volsize zero bytes (all holes). */
int cap_current(struct cap *c, uint8_t *root)
{
	struct store_snap s;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	struct node_bl_builder bl;
	struct store_propval v;
	struct fbuf b;
	int t, kind, r = store_snap_newest(c->p, c->ds, &s);
	fbuf_init(&b, NODE_MAX);
	node_bl_builder_init(&bl, cap_put_node, c, c->rs);
	if (r == 0) {
		if ((r = store_node_read(c->rd, s.root, &t, &b)) < 0)
			goto out;
		if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
			if (r >= 0)
				r = ferry_err(FERR_CORRUPT, "'%s' is not a root node", s.name);
			goto out;
		}
		memcpy(root, s.root, FERRY_HASH_LEN);
		c->have_base = 1;
		c->base_id = s.id;
		memcpy(c->base_root, s.root, FERRY_HASH_LEN);
		goto out;
	}
	if (r != -FERR_NOENT)
		goto out;
	ferry_err_clear();
	memset(&e, 0, sizeof e);
	/* untouched since the dataset was made */
	e.mtime_sec = e.ctime_sec = c->ds->creation;
	if (c->ds->type == STORE_DS_VOLUME) {
		uint64_t size;
		if ((r = store_prop_get(c->p, c->ds, "volsize", &v)) < 0)
			goto out;
		size = strtoull(v.exact, NULL, 10);
		e.ftype = NODE_F_REG;
		e.mode = 0600;
		e.size = size;
		for (uint64_t off = 0; off < size; off += c->rs) {
			struct node_extent x;
			memset(&x, 0, sizeof x);
			x.hole = 1;
			x.len = size - off < c->rs ? size - off : c->rs;
			if ((r = node_bl_builder_add(&bl, &x)) < 0)
				goto out;
		}
		int bt = 0;
		if ((r = node_bl_builder_finish(&bl, &bt, e.child)) < 0)
			goto out;
		e.child_type = (uint8_t)bt;
		kind = NODE_ROOT_VOLUME;
	} else {
		struct node_dir_builder db;
		int dt = 0;
		node_dir_builder_init(&db, cap_put_node, c);
		r = node_dir_builder_finish(&db, &dt, e.child);
		node_dir_builder_release(&db);
		if (r < 0)
			goto out;
		e.child_type = (uint8_t)dt;
		e.ftype = NODE_F_DIR;
		e.mode = 0755;
		kind = NODE_ROOT_FILESYSTEM;
	}
	if ((r = node_root_encode(&b, kind, &e)) < 0)
		goto out;
	r = store_writer_put_node(c->w, NODE_EXT, b.data, b.len, root);
out:
	node_bl_builder_release(&bl);
	free(xa);
	fbuf_release(&b);
	return r;
}
