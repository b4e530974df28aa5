/* capture/archive.c — capturing a tar/zip/cpio archive's tree through
 * libarchive (the only capture file that knows libarchive).
 *
 * Members arrive in archive order, directories maybe after their contents
 * or not at all, so the tree is assembled in memory (archive_tree.c: names
 * and attributes; file data goes straight to blocks) and the directory
 * nodes are built bottom-up at the end. A node holds its own name and its parent, never its whole path,
 * so a deep tree costs memory in proportion to its entries, not to the sum
 * of its path lengths. Member names are hostile input: absolute names are
 * made relative, "." components dropped, names with ".." refused, and a
 * member more than NODE_TREE_DEPTH_MAX directories down skipped (warned). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "lib/arc.h"

/* A warning names at most this much of a path: its start and its end. */
#define WARN_PATH_MAX 4096

static void awarn(struct actx *c, const char *path, const char *msg, int partial)
{
	c->st->warnings++;
	if (partial) {
		c->st->unreadable++;
		c->partial = 1;
	}
	if (!c->warn)
		return;
	size_t n = strlen(path);
	if (n > WARN_PATH_MAX) {
		char shown[WARN_PATH_MAX + 8];
		size_t half = WARN_PATH_MAX / 2;
		memcpy(shown, path, half);
		memcpy(shown + half, "/.../", 5);
		memcpy(shown + half + 5, path + n - half, half);
		shown[2 * half + 5] = 0;
		c->warn(c->arg, shown, msg);
		return;
	}
	c->warn(c->arg, path, msg);
}

static int put_record(struct actx *c, struct node_bl_builder *bl, size_t len)
{
	struct store_block b;
	struct node_extent x;
	int r;
	struct store_block_in in = {.codec = {CODEC_OFF, 0}, .payload = c->rec, .psize = len,
				    .lsize = len};
	struct store_block_bufs bufs = {NULL, 0, c->scratch, c->rs};
	if ((r = store_block_rule(&in, c->policy, STORE_ZERO_HOLE, &bufs, &b)) < 0 ||
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
static int read_member(struct actx *c, struct archive *a, struct anode *n, const char *path,
		       int64_t declared)
{
	struct node_bl_builder bl;
	const void *buf;
	size_t size;
	la_int64_t off;
	uint64_t rec_start = 0, end = 0;
	int dirty = 0, r = 0, t;
	node_bl_builder_init(&bl, arch_put_node, c, c->rs);
	memset(c->rec, 0, c->rs);
	for (;;) {
		int ar = arc.read_data_block(a, &buf, &size, &off);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN) {
			r = ferry_err(FERR_CORRUPT, "reading '%.200s' from the archive: %s", path,
				      arc.error_string(a));
			goto out;
		}
		if (off < 0 || (uint64_t)off < end) {
			r = ferry_err(FERR_CORRUPT, "archive member '%.200s' goes backwards", path);
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
	n->e.mode = (uint16_t)(arc.entry_perm(ae) & 07777);
	n->e.uid = (uint32_t)arc.entry_uid(ae);
	n->e.gid = (uint32_t)arc.entry_gid(ae);
	n->e.mtime_sec = arc.entry_mtime(ae);
	n->e.mtime_nsec = arc.entry_mtime_is_set(ae) ? (uint32_t)arc.entry_mtime_nsec(ae) : 0;
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
	int cnt = arc.entry_xattr_reset(ae);
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
	while (k < (size_t)cnt && arc.entry_xattr_next(ae, &name, &val, &size) == ARCHIVE_OK) {
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

/* Makes *buf (of *cap bytes) hold a normalized copy of name: 1 when name
 * is longer than any member can be. */
static int name_buf(char **buf, size_t *cap, const char *name)
{
	size_t n = strlen(name);
	if (n > MEMBER_NAME_MAX)
		return 1;
	if (n + 1 > *cap) {
		char *nb = realloc(*buf, n + 1);
		if (!nb)
			return ferry_err(FERR_NOMEM, "capturing an archive");
		*buf = nb;
		*cap = n + 1;
	}
	return 0;
}

/* A member that is a hardlink to hl: it gets its target's blocklist and
 * attributes, or is skipped (warned) when the target is not a file met
 * before. */
static int member_link(struct actx *c, struct anode *n, const char *hl)
{
	struct anode *t = NULL;
	size_t tl;
	int r;
	if ((r = name_buf(&c->tp, &c->tpcap, hl)) < 0)
		return r;
	if (r == 0 && !arch_normalize(hl, c->tp, &tl) && arch_get_node(c, c->tp, 0, &t) < 0) {
		ferry_err_clear();
		t = NULL;
	}
	if (!t || t->e.ftype != NODE_F_REG) {
		awarn(c, c->path, "hardlink to a missing file; skipped", 1);
		n->e.ftype = NODE_F_REG;
		n->e.size = 0;
		n->e.child_type = 0;
		return 0;
	}
	if (!t->e.link_id)
		t->e.link_id = ++c->next_link;
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
	return 0;
}

/* The content of member n of type ft: a file's data, a symlink's target,
 * a device's numbers. */
static int member_content(struct actx *c, struct archive *a, struct archive_entry *ae,
			  struct anode *n, mode_t ft)
{
	const char *path = c->path;
	int r;
	switch (ft) {
	case AE_IFDIR:
		n->e.ftype = NODE_F_DIR;
		break;
	case AE_IFREG:
		n->e.ftype = NODE_F_REG;
		if ((r = read_member(c, a, n, path, arc.entry_size_is_set(ae)
							    ? arc.entry_size(ae) : -1)) < 0)
			return r;
		if (!n->e.size)
			n->e.child_type = 0;
		break;
	case AE_IFLNK: {
		const char *t = arc.entry_symlink(ae);
		size_t tl = t ? strlen(t) : 0;
		if (!tl || tl > NODE_TARGET_MAX) {
			awarn(c, path, "bad symlink target; skipped", 1);
			n->e.ftype = NODE_F_REG;
			return 0;
		}
		free(n->target);
		if (!(n->target = strdup(t)))
			return ferry_err(FERR_NOMEM, "capturing an archive");
		n->e.ftype = NODE_F_SYMLINK;
		n->e.target = (const uint8_t *)n->target;
		n->e.target_len = tl;
		c->st->symlinks++;
		break;
	}
	case AE_IFIFO:
	case AE_IFCHR:
	case AE_IFBLK:
		n->e.ftype = ft == AE_IFIFO ? NODE_F_FIFO : ft == AE_IFCHR ? NODE_F_CHR : NODE_F_BLK;
		if (ft != AE_IFIFO) {
			n->e.rdev_major = major(arc.entry_rdev(ae));
			n->e.rdev_minor = minor(arc.entry_rdev(ae));
		}
		c->st->specials++;
		break;
	default:
		awarn(c, path, "unsupported member type; skipped", 0);
		n->e.ftype = NODE_F_REG;
	}
	return 0;
}

/* One member of the archive, its header just read: into the tree, or
 * skipped with a warning (an unsafe name, too deep, a clash of types). */
static int member(struct actx *c, struct archive *a, struct archive_entry *ae)
{
	size_t levels;
	int r;
	const char *raw = arc.entry_pathname(ae);
	if (raw && (r = name_buf(&c->path, &c->pathcap, raw)) < 0)
		return r;
	if (!raw || r == 1 || arch_normalize(raw, c->path, &levels)) {
		awarn(c, raw ? raw : "?", "unsafe or overlong member name; skipped", 1);
		return 0;
	}
	const char *path = c->path;
	if (levels > (size_t)NODE_TREE_DEPTH_MAX + 1) {
		/* as a tree's capture records a directory deeper than
		 * that empty: nothing below it */
		char msg[128];
		snprintf(msg, sizeof msg, "member deeper than %d directory levels; skipped",
			 NODE_TREE_DEPTH_MAX);
		awarn(c, path, msg, 1);
		return 0;
	}
	mode_t ft = arc.entry_filetype(ae);
	const char *hl = arc.entry_hardlink(ae);
	if (!*path) {
		if (ft == AE_IFDIR) {
			set_attrs(&c->root, ae);
			if ((r = read_xattrs(&c->root, ae)) < 0)
				return r;
		}
		return 0;
	}
	struct anode *n;
	if ((r = arch_get_node(c, path, 0, &n)) < 0) {
		if (r != -FERR_CORRUPT)
			return r;
		ferry_err_clear(); /* said again just below */
		n = NULL;
	}
	if (n && (n->e.ftype == NODE_F_DIR) != (ft == AE_IFDIR)) {
		awarn(c, path, "member replaces an entry of another type; skipped", 1);
		return 0;
	}
	if ((r = arch_get_node(c, path, 1, &n)) < 0) {
		if (r == -FERR_CORRUPT) {
			awarn(c, path, ferry_errmsg(r), 1);
			ferry_err_clear();
			return 0;
		}
		return r;
	}
	set_attrs(n, ae);
	if ((r = read_xattrs(n, ae)) < 0)
		return r;
	if (hl)
		return member_link(c, n, hl);
	return member_content(c, a, ae, n, ft);
}

int capture_archive(struct store_pool *p, struct store_writer *w, struct capture_stats *st,
		    const char *from, struct codec_spec policy, uint32_t rs, unsigned threads,
		    void (*warnfn)(void *, const char *, const char *), void *arg,
		    uint8_t root[FERRY_HASH_LEN])
{
	struct actx c;
	struct archive *a = NULL;
	struct archive_entry *ae;
	struct fbuf rb;
	struct stat sb;
	int r = arc_load();
	if (r < 0)
		return r;
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
	if (!(a = arc.read_new())) {
		r = ferry_err(FERR_NOMEM, "capturing an archive");
		goto out;
	}
	arc.read_support_filter_all(a);
	arc.read_support_format_all(a);
	if (arc.read_open_filename(a, from, 1 << 20) != ARCHIVE_OK) {
		r = ferry_err(FERR_IO, "cannot open archive '%s': %s", from, arc.error_string(a));
		goto out;
	}
	for (;;) {
		int ar = arc.read_next_header(a, &ae);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar < ARCHIVE_WARN) {
			r = ferry_err(FERR_CORRUPT, "reading archive '%s': %s", from,
				      arc.error_string(a));
			goto out;
		}
		if ((r = member(&c, a, ae)) < 0)
			goto out;
	}
	if ((r = arch_build_tree(&c)) < 0)
		goto out;
	if ((r = node_root_encode(&rb, NODE_ROOT_FILESYSTEM, &c.root.e)) < 0)
		goto out;
	if ((r = store_writer_put_node(w, NODE_EXT, rb.data, rb.len, root)) < 0)
		goto out;
	if (c.partial)
		r = ferry_err(FERR_PARTIAL, "some archive members were skipped");
out:
	if (a)
		arc.read_free(a);
	arch_free_tree(&c);
	free(c.last);
	free(c.chain);
	free(c.chain_end);
	free(c.path);
	free(c.tp);
	free(c.rec);
	free(c.scratch);
	fbuf_release(&rb);
	return r;
}
