/* store/capture_archive.c — capturing a tar/zip/cpio archive's tree through
 * libarchive (the only capture file that knows libarchive).
 *
 * Members arrive in archive order, directories maybe after their contents
 * or not at all, so the tree is assembled in memory (names and attributes;
 * file data goes straight to blocks) and the directory nodes are built
 * bottom-up at the end. Member names are hostile input: absolute names are
 * made relative, "." components dropped, and names with ".." refused. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"

int capture_archive(struct store_pool *p, struct store_writer *w, struct store_capture_stats *st,
		    const char *from, struct codec_spec policy, uint32_t rs, unsigned threads,
		    void (*warnfn)(void *, const char *, const char *), void *arg,
		    uint8_t root[FERRY_HASH_LEN]);

struct anode {
	char *name;
	char *path;
	struct node_entry e;
	char *target;
	uint8_t *xabuf;
	struct node_xattr *xa;
	struct anode **kids;
	size_t nkids, capkids;
	struct anode *hnext;
};

struct actx {
	struct store_writer *w;
	struct store_capture_stats *st;
	struct codec_spec policy;
	uint32_t rs;
	void (*warn)(void *, const char *, const char *);
	void *arg;
	struct anode **tab;
	size_t tabsize, count;
	struct anode root;
	uint8_t *rec, *scratch;
	uint64_t next_link;
	int partial;
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	struct actx *c = arg;
	return store_writer_put_node(c->w, type, data, len, hash);
}

static void awarn(struct actx *c, const char *path, const char *msg, int partial)
{
	c->st->warnings++;
	if (partial) {
		c->st->unreadable++;
		c->partial = 1;
	}
	if (c->warn)
		c->warn(c->arg, path, msg);
}

static struct anode *lookup(struct actx *c, const char *path)
{
	if (!*path)
		return &c->root;
	if (!c->tabsize)
		return NULL;
	for (struct anode *n = c->tab[fnv(path) & (c->tabsize - 1)]; n; n = n->hnext)
		if (!strcmp(n->path, path))
			return n;
	return NULL;
}

static int tab_insert(struct actx *c, struct anode *n)
{
	if ((c->count + 1) * 2 > c->tabsize) {
		size_t ns = c->tabsize ? c->tabsize * 2 : 1024;
		struct anode **nt = calloc(ns, sizeof *nt);
		if (!nt)
			return ferry_err(FERR_NOMEM, "capturing an archive");
		for (size_t i = 0; i < c->tabsize; i++)
			for (struct anode *x = c->tab[i], *nx; x; x = nx) {
				nx = x->hnext;
				size_t h = fnv(x->path) & (ns - 1);
				x->hnext = nt[h];
				nt[h] = x;
			}
		free(c->tab);
		c->tab = nt;
		c->tabsize = ns;
	}
	size_t h = fnv(n->path) & (c->tabsize - 1);
	n->hnext = c->tab[h];
	c->tab[h] = n;
	c->count++;
	return 0;
}

static int add_kid(struct anode *parent, struct anode *k)
{
	if (parent->nkids == parent->capkids) {
		size_t nc = parent->capkids ? parent->capkids * 2 : 8;
		struct anode **nk = realloc(parent->kids, nc * sizeof *nk);
		if (!nk)
			return ferry_err(FERR_NOMEM, "capturing an archive");
		parent->kids = nk;
		parent->capkids = nc;
	}
	parent->kids[parent->nkids++] = k;
	return 0;
}

/* Finds or creates the node for path (normalized); missing parents become
 * directories with default attributes. */
static int get_node(struct actx *c, const char *path, struct anode **out)
{
	struct anode *n = lookup(c, path);
	int r;
	if (n) {
		*out = n;
		return 0;
	}
	const char *slash = strrchr(path, '/');
	char *ppath = strndup(path, slash ? (size_t)(slash - path) : 0);
	if (!ppath)
		return ferry_err(FERR_NOMEM, "capturing an archive");
	struct anode *parent;
	r = get_node(c, ppath, &parent);
	free(ppath);
	if (r < 0)
		return r;
	if (parent->e.ftype != NODE_F_DIR)
		return ferry_err(FERR_CORRUPT, "archive has '%s' under a non-directory", path);
	if (!(n = calloc(1, sizeof *n)) || !(n->path = strdup(path))) {
		free(n);
		return ferry_err(FERR_NOMEM, "capturing an archive");
	}
	n->name = strrchr(n->path, '/') ? strrchr(n->path, '/') + 1 : n->path;
	n->e.ftype = NODE_F_DIR;
	n->e.mode = 0755;
	if ((r = tab_insert(c, n)) < 0 || (r = add_kid(parent, n)) < 0) {
		free(n->path);
		free(n);
		return r;
	}
	*out = n;
	return 0;
}

/* Normalizes a member name into out; 0 ok, 1 to skip (warned). */
static int normalize(const char *in, char *out, size_t n)
{
	size_t o = 0;
	const char *s = in;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		size_t len = strcspn(s, "/");
		if (len == 1 && s[0] == '.') {
			s += 1;
			continue;
		}
		if (len == 2 && s[0] == '.' && s[1] == '.')
			return 1;
		if (len > NODE_NAME_MAX || o + len + 2 > n)
			return 1;
		if (o)
			out[o++] = '/';
		memcpy(out + o, s, len);
		o += len;
		s += len;
	}
	out[o] = 0;
	return 0;
}

static int put_record(struct actx *c, struct node_bl_builder *bl, size_t len)
{
	struct store_block b;
	struct node_extent x;
	int r;
	if ((r = pack_prepare_record(c->policy, c->rec, len, NULL, c->scratch, c->rs, &b)) < 0 ||
	    (r = store_writer_put(c->w, &b, NULL)) < 0)
		return r;
	memset(&x, 0, sizeof x);
	x.hole = b.form == BLOCK_HOLE;
	x.len = len;
	memcpy(x.hash, b.hash, FERRY_HASH_LEN);
	if (!x.hole)
		c->st->blocks_total++;
	return node_bl_builder_add(bl, &x);
}

/* Reads the current member's data into a blocklist for n. */
static int read_member(struct actx *c, struct archive *a, struct anode *n, int64_t declared)
{
	struct node_bl_builder bl;
	const void *buf;
	size_t size;
	la_int64_t off;
	uint64_t rec_start = 0, end = 0;
	int dirty = 0, r = 0, t;
	node_bl_builder_init(&bl, put_node, c, c->rs);
	memset(c->rec, 0, c->rs);
	for (;;) {
		int ar = archive_read_data_block(a, &buf, &size, &off);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN) {
			r = ferry_err(FERR_CORRUPT, "reading '%s' from the archive: %s", n->path,
				      archive_error_string(a));
			goto out;
		}
		if (off < 0 || (uint64_t)off < end) {
			r = ferry_err(FERR_CORRUPT, "archive member '%s' goes backwards", n->path);
			goto out;
		}
		const uint8_t *p = buf;
		uint64_t o = (uint64_t)off;
		while (size) {
			uint64_t rs = o - o % c->rs;
			if (rs != rec_start) {
				if (dirty && (r = put_record(c, &bl, c->rs)) < 0)
					goto out;
				uint64_t next = rec_start + (dirty ? c->rs : 0);
				if (rs > next) {
					struct node_extent x = {.hole = 1, .len = rs - next};
					if ((r = node_bl_builder_add(&bl, &x)) < 0)
						goto out;
				}
				rec_start = rs;
				dirty = 0;
				memset(c->rec, 0, c->rs);
			}
			size_t in = (size_t)(o - rec_start);
			size_t k = c->rs - in < size ? c->rs - in : size;
			memcpy(c->rec + in, p, k);
			dirty = 1;
			p += k;
			o += k;
			size -= k;
			c->st->bytes_read += k;
		}
		end = o;
	}
	uint64_t fsize = declared >= 0 && (uint64_t)declared > end ? (uint64_t)declared : end;
	if (dirty) {
		uint64_t len = fsize - rec_start < c->rs ? fsize - rec_start : c->rs;
		if ((r = put_record(c, &bl, (size_t)len)) < 0)
			goto out;
		rec_start += len;
	}
	if (fsize > rec_start) {
		struct node_extent x = {.hole = 1, .len = fsize - rec_start};
		if ((r = node_bl_builder_add(&bl, &x)) < 0)
			goto out;
	}
	if ((r = node_bl_builder_finish(&bl, &t, n->e.child)) < 0)
		goto out;
	n->e.child_type = (uint8_t)t;
	n->e.size = fsize;
	c->st->files_read++;
out:
	node_bl_builder_release(&bl);
	return r;
}

static void set_attrs(struct anode *n, struct archive_entry *ae)
{
	n->e.mode = (uint16_t)(archive_entry_perm(ae) & 07777);
	n->e.uid = (uint32_t)archive_entry_uid(ae);
	n->e.gid = (uint32_t)archive_entry_gid(ae);
	n->e.mtime_sec = archive_entry_mtime(ae);
	n->e.mtime_nsec = archive_entry_mtime_is_set(ae) ? (uint32_t)archive_entry_mtime_nsec(ae) : 0;
	if (n->e.mtime_nsec >= 1000000000u)
		n->e.mtime_nsec = 0;
}

static int xa_cmp(const void *a, const void *b)
{
	const struct node_xattr *x = a, *y = b;
	size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
	int r = memcmp(x->name, y->name, m);
	return r ? r : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int read_xattrs(struct anode *n, struct archive_entry *ae)
{
	const char *name;
	const void *val;
	size_t size;
	int cnt = archive_entry_xattr_reset(ae);
	struct fbuf b;
	if (cnt <= 0)
		return 0;
	if (cnt > NODE_XATTRS_MAX)
		cnt = NODE_XATTRS_MAX;
	size_t *offs = calloc((size_t)cnt * 3, sizeof *offs);
	if (!offs)
		return ferry_err(FERR_NOMEM, "capturing an archive");
	fbuf_init(&b, (size_t)1 << 20);
	size_t k = 0;
	int r = 0;
	while (k < (size_t)cnt && archive_entry_xattr_next(ae, &name, &val, &size) == ARCHIVE_OK) {
		size_t nl = strlen(name);
		if (!nl || nl > NODE_XATTR_NAME_MAX || size > NODE_XATTR_VALUE_MAX)
			continue;
		offs[3 * k] = b.len;
		if ((r = fbuf_append(&b, name, nl)) < 0)
			break;
		offs[3 * k + 1] = b.len;
		if (size && (r = fbuf_append(&b, val, size)) < 0)
			break;
		offs[3 * k + 2] = size;
		k++;
	}
	if (r == 0 && k) {
		free(n->xa);
		free(n->xabuf);
		n->xa = calloc(k, sizeof *n->xa);
		if (!n->xa) {
			r = ferry_err(FERR_NOMEM, "capturing an archive");
			goto out;
		}
		n->xabuf = fbuf_detach(&b, NULL);
		for (size_t i = 0; i < k; i++) {
			n->xa[i].name = n->xabuf + offs[3 * i];
			n->xa[i].name_len = offs[3 * i + 1] - offs[3 * i];
			n->xa[i].value = n->xabuf + offs[3 * i + 1];
			n->xa[i].value_len = offs[3 * i + 2];
		}
		qsort(n->xa, k, sizeof *n->xa, xa_cmp);
		/* drop duplicates a hostile archive may carry */
		size_t u = 0;
		for (size_t i = 0; i < k; i++)
			if (!u || xa_cmp(&n->xa[u - 1], &n->xa[i]) != 0)
				n->xa[u++] = n->xa[i];
		n->e.xattrs = n->xa;
		n->e.nxattr = u;
	}
out:
	fbuf_release(&b);
	free(offs);
	return r;
}

static int kid_cmp(const void *a, const void *b)
{
	return strcmp((*(struct anode *const *)a)->name, (*(struct anode *const *)b)->name);
}

static int build_dir(struct actx *c, struct anode *d)
{
	struct node_dir_builder b;
	int r = 0, t;
	if (d->nkids)
		qsort(d->kids, d->nkids, sizeof *d->kids, kid_cmp);
	for (size_t i = 0; i < d->nkids; i++)
		if (d->kids[i]->e.ftype == NODE_F_DIR && (r = build_dir(c, d->kids[i])) < 0)
			return r;
	node_dir_builder_init(&b, put_node, c);
	for (size_t i = 0; i < d->nkids; i++) {
		struct anode *k = d->kids[i];
		k->e.name = (const uint8_t *)k->name;
		k->e.name_len = strlen(k->name);
		if ((r = node_dir_builder_add(&b, &k->e)) < 0)
			goto out;
	}
	r = node_dir_builder_finish(&b, &t, d->e.child);
	d->e.child_type = (uint8_t)t;
out:
	node_dir_builder_release(&b);
	return r;
}

static void free_tree(struct actx *c)
{
	for (size_t i = 0; i < c->tabsize; i++)
		for (struct anode *x = c->tab[i], *nx; x; x = nx) {
			nx = x->hnext;
			free(x->path);
			free(x->target);
			free(x->xa);
			free(x->xabuf);
			free(x->kids);
			free(x);
		}
	free(c->tab);
	free(c->root.kids);
	free(c->root.xa);
	free(c->root.xabuf);
}

int capture_archive(struct store_pool *p, struct store_writer *w, struct store_capture_stats *st,
		    const char *from, struct codec_spec policy, uint32_t rs, unsigned threads,
		    void (*warnfn)(void *, const char *, const char *), void *arg,
		    uint8_t root[FERRY_HASH_LEN])
{
	struct actx c;
	struct archive *a = NULL;
	struct archive_entry *ae;
	struct fbuf rb;
	struct stat sb;
	char path[8192];
	int r = 0;
	memset(&c, 0, sizeof c);
	c.w = w;
	c.st = st;
	c.policy = policy;
	c.rs = rs;
	c.warn = warnfn;
	c.arg = arg;
	c.root.e.ftype = NODE_F_DIR;
	c.root.e.mode = 0755;
	fbuf_init(&rb, NODE_MAX);
	if (stat(from, &sb) == 0) {
		c.root.e.mtime_sec = sb.st_mtim.tv_sec;
		c.root.e.mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec;
	}
	if (!(c.rec = malloc(rs)) || !(c.scratch = malloc(rs))) {
		r = ferry_err(FERR_NOMEM, "capturing an archive");
		goto out;
	}
	if (!(a = archive_read_new())) {
		r = ferry_err(FERR_NOMEM, "capturing an archive");
		goto out;
	}
	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	if (archive_read_open_filename(a, from, 1 << 20) != ARCHIVE_OK) {
		r = ferry_err(FERR_IO, "cannot open archive '%s': %s", from, archive_error_string(a));
		goto out;
	}
	for (;;) {
		int ar = archive_read_next_header(a, &ae);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN) {
			r = ferry_err(FERR_CORRUPT, "reading archive '%s': %s", from,
				      archive_error_string(a));
			goto out;
		}
		const char *raw = archive_entry_pathname(ae);
		if (!raw || normalize(raw, path, sizeof path)) {
			awarn(&c, raw ? raw : "?", "unsafe or overlong member name; skipped", 1);
			continue;
		}
		mode_t ft = archive_entry_filetype(ae);
		const char *hl = archive_entry_hardlink(ae);
		if (!*path) {
			if (ft == AE_IFDIR) {
				set_attrs(&c.root, ae);
				if ((r = read_xattrs(&c.root, ae)) < 0)
					goto out;
			}
			continue;
		}
		struct anode *n = lookup(&c, path);
		if (n && (n->e.ftype == NODE_F_DIR) != (ft == AE_IFDIR)) {
			awarn(&c, path, "member replaces an entry of another type; skipped", 1);
			continue;
		}
		if ((r = get_node(&c, path, &n)) < 0) {
			if (r == -FERR_CORRUPT) {
				awarn(&c, path, ferry_errmsg(r), 1);
				ferry_err_clear();
				r = 0;
				continue;
			}
			goto out;
		}
		set_attrs(n, ae);
		if ((r = read_xattrs(n, ae)) < 0)
			goto out;
		if (hl) {
			char tp[8192];
			struct anode *t;
			if (normalize(hl, tp, sizeof tp) || !(t = lookup(&c, tp)) ||
			    t->e.ftype != NODE_F_REG) {
				awarn(&c, path, "hardlink to a missing file; skipped", 1);
				n->e.ftype = NODE_F_REG;
				n->e.size = 0;
				n->e.child_type = 0;
				continue;
			}
			if (!t->e.link_id)
				t->e.link_id = ++c.next_link;
			n->e.ftype = NODE_F_REG;
			n->e.link_id = t->e.link_id;
			n->e.size = t->e.size;
			n->e.child_type = t->e.child_type;
			memcpy(n->e.child, t->e.child, FERRY_HASH_LEN);
			n->e.mode = t->e.mode;
			n->e.uid = t->e.uid;
			n->e.gid = t->e.gid;
			n->e.mtime_sec = t->e.mtime_sec;
			n->e.mtime_nsec = t->e.mtime_nsec;
			continue;
		}
		switch (ft) {
		case AE_IFDIR:
			n->e.ftype = NODE_F_DIR;
			break;
		case AE_IFREG:
			n->e.ftype = NODE_F_REG;
			if ((r = read_member(&c, a, n, archive_entry_size_is_set(ae)
							       ? archive_entry_size(ae) : -1)) < 0)
				goto out;
			if (!n->e.size)
				n->e.child_type = 0;
			break;
		case AE_IFLNK: {
			const char *t = archive_entry_symlink(ae);
			size_t tl = t ? strlen(t) : 0;
			if (!tl || tl > NODE_TARGET_MAX) {
				awarn(&c, path, "bad symlink target; skipped", 1);
				n->e.ftype = NODE_F_REG;
				continue;
			}
			free(n->target);
			if (!(n->target = strdup(t))) {
				r = ferry_err(FERR_NOMEM, "capturing an archive");
				goto out;
			}
			n->e.ftype = NODE_F_SYMLINK;
			n->e.target = (const uint8_t *)n->target;
			n->e.target_len = tl;
			c.st->symlinks++;
			break;
		}
		case AE_IFIFO:
		case AE_IFCHR:
		case AE_IFBLK:
			n->e.ftype = ft == AE_IFIFO ? NODE_F_FIFO : ft == AE_IFCHR ? NODE_F_CHR : NODE_F_BLK;
			if (ft != AE_IFIFO) {
				n->e.rdev_major = major(archive_entry_rdev(ae));
				n->e.rdev_minor = minor(archive_entry_rdev(ae));
			}
			c.st->specials++;
			break;
		default:
			awarn(&c, path, "unsupported member type; skipped", 0);
			n->e.ftype = NODE_F_REG;
		}
	}
	if ((r = build_dir(&c, &c.root)) < 0)
		goto out;
	if ((r = node_root_encode(&rb, NODE_ROOT_FILESYSTEM, &c.root.e)) < 0)
		goto out;
	if ((r = store_writer_put_node(w, NODE_EXT, rb.data, rb.len, root)) < 0)
		goto out;
	if (c.partial)
		r = ferry_err(FERR_PARTIAL, "some archive members were skipped");
out:
	if (a)
		archive_read_free(a);
	free_tree(&c);
	free(c.rec);
	free(c.scratch);
	fbuf_release(&rb);
	return r;
}
