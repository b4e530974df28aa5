/* capture/file.c — a regular file of a tree capture: the hardlink map
 * (a second link gets the first one's blocklist), an unchanged file's
 * blocklist kept from the previous snapshot without reading it, and a
 * changed file read record by record through the job pipeline, the
 * previous version's record hashes sparing unchanged records another
 * compression. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ---- hardlinks --------------------------------------------------------------------- */

struct link *cap_link_find(struct cap *c, dev_t dev, ino_t ino, int add)
{
	if (add && (c->nlinks + 1) * 2 > c->caplinks) {
		size_t nc = c->caplinks ? c->caplinks * 2 : 256;
		struct link *nl = calloc(nc, sizeof *nl);
		if (!nl)
			return NULL;
		for (size_t i = 0; i < c->caplinks; i++)
			if (c->links[i].used) {
				size_t h = (size_t)((c->links[i].ino * 0x9E3779B97F4A7C15ull) ^
						    c->links[i].dev) & (nc - 1);
				while (nl[h].used)
					h = (h + 1) & (nc - 1);
				nl[h] = c->links[i];
			}
		free(c->links);
		c->links = nl;
		c->caplinks = nc;
	}
	if (!c->caplinks)
		return NULL;
	size_t h = (size_t)(((uint64_t)ino * 0x9E3779B97F4A7C15ull) ^ dev) & (c->caplinks - 1);
	while (c->links[h].used) {
		if (c->links[h].ino == ino && c->links[h].dev == dev)
			return &c->links[h];
		h = (h + 1) & (c->caplinks - 1);
	}
	if (!add)
		return NULL;
	c->links[h].used = 1;
	c->links[h].dev = dev;
	c->links[h].ino = ino;
	c->nlinks++;
	return &c->links[h];
}

/* Gives ce its own copy of the old entry's xattrs. */
static int copy_xattrs(struct centry *ce, const struct node_entry *oe)
{
	size_t total = 0;
	if (!oe->nxattr)
		return 0;
	for (size_t i = 0; i < oe->nxattr; i++)
		total += oe->xattrs[i].name_len + oe->xattrs[i].value_len;
	if (!(ce->xa = calloc(oe->nxattr, sizeof *ce->xa)) || !(ce->xabuf = malloc(total + 1)))
		return ferry_err(FERR_NOMEM, "capturing");
	size_t pos = 0;
	for (size_t i = 0; i < oe->nxattr; i++) {
		const struct node_xattr *x = &oe->xattrs[i];
		memcpy(ce->xabuf + pos, x->name, x->name_len);
		ce->xa[i].name = ce->xabuf + pos;
		ce->xa[i].name_len = x->name_len;
		pos += x->name_len;
		if (x->value_len)
			memcpy(ce->xabuf + pos, x->value, x->value_len);
		ce->xa[i].value = ce->xabuf + pos;
		ce->xa[i].value_len = x->value_len;
		pos += x->value_len;
	}
	ce->e.xattrs = ce->xa;
	ce->e.nxattr = oe->nxattr;
	return 0;
}

struct oldrec {
	struct cap *c;
	struct cfile *f;
};

static int old_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct oldrec *o = arg;
	uint64_t rs = o->c->rs;
	if (x->hole || off % rs || x->len > rs || off / rs >= o->f->nold)
		return 0;
	memcpy(o->f->old[off / rs], x->hash, FERRY_HASH_LEN);
	o->f->old_len[off / rs] = (uint32_t)x->len;
	return 0;
}

/* Loads the record hashes of the file's previous version (if it is not
 * huge) so unchanged records of a changed file skip compression. */
int cap_old_records(struct cap *c, struct cfile *f, const struct node_entry *oe)
{
	uint64_t n = (oe->size + c->rs - 1) / c->rs;
	if (n == 0 || n > ((uint64_t)1 << 22))
		return 0;
	if (!(f->old = calloc((size_t)n, FERRY_HASH_LEN)) ||
	    !(f->old_len = calloc((size_t)n, sizeof *f->old_len))) {
		free(f->old);
		f->old = NULL;
		return ferry_err(FERR_NOMEM, "capturing a file");
	}
	f->nold = n;
	struct oldrec o = {c, f};
	int r = node_bl_walk(cap_rd_node, c->rd, oe->child_type, oe->child, oe->size, old_extent, &o);
	if (r < 0) {
		/* an unreadable old version only costs the optimisation */
		ferry_err_clear();
		memset(f->old_len, 0, (size_t)n * sizeof *f->old_len);
	}
	return 0;
}

/* 1 when the file sb describes is the one oe recorded, unchanged since:
 * same size, mtime, ctime and inode (an xattr or mode change moves ctime). */
static int file_unchanged(const struct node_entry *oe, const struct stat *sb)
{
	return oe && oe->ftype == NODE_F_REG && oe->size == (uint64_t)sb->st_size &&
	       oe->mtime_sec == sb->st_mtim.tv_sec &&
	       oe->mtime_nsec == (uint32_t)sb->st_mtim.tv_nsec &&
	       oe->ctime_sec == sb->st_ctim.tv_sec &&
	       oe->ctime_nsec == (uint32_t)sb->st_ctim.tv_nsec && oe->ino == (uint64_t)sb->st_ino;
}

/* Gives ce the blocklist oe recorded without reading the file, and makes
 * it the known content of the file's other links. Its blocks are not
 * referenced here: oe is the base snapshot's (c->have_base), whose
 * references the new snapshot takes over at the end. */
static int reuse_file(struct cap *c, struct centry *ce, const struct node_entry *oe,
		      const struct stat *sb)
{
	struct link *lk;
	ce->e.size = oe->size;
	ce->e.child_type = oe->child_type;
	memcpy(ce->e.child, oe->child, FERRY_HASH_LEN);
	c->st->files_reused++;
	if (sb->st_nlink > 1 && (lk = cap_link_find(c, sb->st_dev, sb->st_ino, 1))) {
		lk->ready = 1;
		lk->type = oe->child_type;
		lk->size = oe->size;
		memcpy(lk->hash, oe->child, FERRY_HASH_LEN);
	}
	return 0;
}

/* A further link to an inode captured earlier in this snapshot: it gets
 * that link's blocklist (once the jobs that build it are done). */
static int file_linked(struct cap *c, int dirfd, const char *name, const struct stat *sb,
		       const struct link *lk, struct centry *ce)
{
	int r;
	if (!lk->ready && (r = cap_drain(c)) < 0)
		return r;
	cap_entry_from_stat(&ce->e, sb);
	ce->e.link_id = (uint64_t)sb->st_ino;
	ce->e.size = lk->size;
	ce->e.child_type = (uint8_t)lk->type;
	memcpy(ce->e.child, lk->hash, FERRY_HASH_LEN);
	/* the xattrs are the inode's: read them again through a path */
	char pp[64 + NAME_MAX];
	snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
	return cap_read_xattrs(c, -1, pp, ce);
}

/* Opens the regular file name in dirfd into *fd, *sb its fstat. Returns 1
 * when it is to be skipped (warned): gone, unreadable or replaced. */
static int file_open(struct cap *c, int dirfd, const char *name, struct stat *sb, int *fd)
{
	int f = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
	if (f < 0 && errno == EPERM)
		f = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (f < 0) {
		if (errno == ENOENT) {
			cap_warn(c, "file vanished before it could be read; skipped", 0);
			return 1;
		}
		char msg[160];
		snprintf(msg, sizeof msg, "cannot open: %s; skipped", strerror(errno));
		cap_warn(c, msg, 1);
		return 1;
	}
	if (fstat(f, sb) != 0 || !S_ISREG(sb->st_mode)) {
		cap_warn(c, "file was replaced while being read; skipped", 0);
		close(f);
		return 1;
	}
	*fd = f;
	return 0;
}

/* Reads the changed file open on fd (sb its fstat before the read) into
 * ce's new blocklist. Returns 1 when a read error skips it (warned). */
static int file_read(struct cap *c, int fd, const struct stat *sb, const struct node_entry *oe,
		     struct centry *ce)
{
	struct stat sb2;
	struct link *lk;
	int r;
	struct cfile *f = calloc(1, sizeof *f);
	if (!f)
		return ferry_err(FERR_NOMEM, "capturing a file");
	node_bl_builder_init(&f->bl, cap_put_node, c, c->rs);
	ce->file = f;
	if (oe && oe->ftype == NODE_F_REG && oe->child_type && (r = cap_old_records(c, f, oe)) < 0)
		return r;
	uint64_t got = 0;
	int dense = sb->st_blocks >= 0 && (uint64_t)sb->st_blocks * 512 >= (uint64_t)sb->st_size;
	int src_err = 0;
	if ((r = cap_read_data(c, fd, (uint64_t)sb->st_size, dense, f, &got, &src_err)) < 0) {
		if (src_err && r == -FERR_IO) {
			/* a read error mid-file: the file is skipped, once the
			 * jobs that hold its records are done (a failure of
			 * the pool's, or of a job, is not the file's: it fails
			 * the capture) */
			char msg[300];
			snprintf(msg, sizeof msg, "read error: %s; skipped", ferry_errmsg(r));
			ferry_err_clear();
			if ((r = cap_drain(c)) < 0)
				return r;
			cap_warn(c, msg, 1);
			r = 1;
		}
		return r;
	}
	if ((r = cap_submit_simple(c, f, JOB_END, 0)) < 0)
		return r;
	c->st->files_read++;
	ce->e.size = got;
	if (fstat(fd, &sb2) == 0 &&
	    (sb2.st_size != sb->st_size || sb2.st_mtim.tv_sec != sb->st_mtim.tv_sec ||
	     sb2.st_mtim.tv_nsec != sb->st_mtim.tv_nsec || sb2.st_ctim.tv_sec != sb->st_ctim.tv_sec ||
	     sb2.st_ctim.tv_nsec != sb->st_ctim.tv_nsec || got != (uint64_t)sb->st_size)) {
		c->st->files_changed_during++;
		cap_warn(c, "file changed as it was read", 0);
		/* the next capture must read it again */
		ce->e.ctime_sec = 0;
		ce->e.ctime_nsec = 0;
	}
	if (sb->st_nlink > 1 && (lk = cap_link_find(c, sb->st_dev, sb->st_ino, 1))) {
		lk->size = got;
		lk->ready = 0;
		f->link = 1; /* not lk: the map may move before the file is done */
		f->link_dev = sb->st_dev;
		f->link_ino = sb->st_ino;
	}
	return 0;
}

/* Captures a regular file name in dirfd into ce. Returns 1 when the entry
 * is to be skipped (warned). */
int cap_file(struct cap *c, int dirfd, const char *name, const struct stat *lsb,
	     const struct node_entry *oe, struct centry *ce)
{
	struct stat sb = *lsb;
	int r = 0, fd = -1;
	struct link *lk;
	ce->e.ftype = NODE_F_REG;
	if (sb.st_nlink > 1 && (lk = cap_link_find(c, sb.st_dev, sb.st_ino, 0)))
		return file_linked(c, dirfd, name, &sb, lk, ce);
	if (file_unchanged(oe, &sb)) {
		/* unchanged since the last snapshot (same size, mtime, ctime and
		 * inode; an xattr or mode change moves ctime): keep its blocklist
		 * and xattrs without even opening it */
		cap_entry_from_stat(&ce->e, &sb);
		if (sb.st_nlink > 1)
			ce->e.link_id = (uint64_t)sb.st_ino;
		if ((r = copy_xattrs(ce, oe)) < 0)
			return r;
		return reuse_file(c, ce, oe, &sb);
	}
	if ((r = file_open(c, dirfd, name, &sb, &fd)) != 0)
		return r;
	cap_entry_from_stat(&ce->e, &sb);
	if (sb.st_nlink > 1)
		ce->e.link_id = (uint64_t)sb.st_ino;
	if ((r = cap_read_xattrs(c, fd, NULL, ce)) < 0)
		goto out;
	if (file_unchanged(oe, &sb))
		/* unchanged since the last snapshot: keep its blocklist unread */
		r = reuse_file(c, ce, oe, &sb);
	else
		r = file_read(c, fd, &sb, oe, ce);
out:
	close(fd);
	return r;
}
