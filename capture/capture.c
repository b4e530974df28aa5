/* capture/capture.c — capturing a directory tree or a volume image into a
 * snapshot.
 *
 * The main thread walks the tree (openat/O_NOFOLLOW, one filesystem) and
 * reads files record by record, skipping holes with SEEK_DATA/SEEK_HOLE; the
 * hashing and compression of each record run on the worker pool, and results
 * come back in submission order, so each file's blocklist is built in file
 * order on the main thread, which alone talks to the writer and catalogue.
 * A directory's node is built once all jobs of its files are collected.
 *
 * Incremental: entries of the dataset's newest snapshot are matched by name;
 * a regular file with the same size, mtime, ctime and inode keeps its
 * blocklist without being read (its blocks are only referenced). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

enum { JOB_DATA, JOB_HOLE, JOB_END, JOB_DIR_END };

struct cfile;
struct cdir;

/* One record (or a hole, or a file's end) inside a job. */
struct item {
	int kind;
	struct cfile *f;
	struct cdir *d;      /* JOB_DIR_END */
	size_t off, len;     /* of the record in the job's data */
	uint64_t rec;        /* record index in the file */
	int known;           /* same hash as the previous version's record */
	uint64_t hole;
	struct store_block blk;
};

/* Work for the pool: many small files' records go in one job, so a tree of
 * small files costs one thread hand-off per MiB, not per file. */
#define JOB_ITEMS 256
#define JOB_BYTES ((size_t)1 << 20)
struct job {
	uint8_t *data;
	uint8_t *scratch;
	size_t cap, used;
	struct item items[JOB_ITEMS];
	unsigned n;
};

/* A regular file whose blocklist is being built. */
struct cfile {
	struct node_bl_builder bl;
	int done;
	int type;
	uint8_t hash[FERRY_HASH_LEN];
	struct link *link; /* hardlink map slot to fill when done */
	/* the previous version's block hash per record (changed files): a
	 * record that hashes the same is already stored and is not compressed
	 * again; read-only while jobs run */
	uint8_t (*old)[FERRY_HASH_LEN];
	uint32_t *old_len;  /* 0: no block at that record */
	uint64_t nold;
};

struct link {
	dev_t dev;
	ino_t ino;
	int used, ready;
	int type;
	uint8_t hash[FERRY_HASH_LEN];
	uint64_t size;
};

/* An entry of the directory being captured, owning its strings. */
struct centry {
	struct node_entry e;
	char *name;
	uint8_t *target;
	struct node_xattr *xa;
	uint8_t *xabuf;
	struct cfile *file;
};

/* A directory whose entries are all scanned; its node is built when its
 * JOB_DIR_END item is collected, i.e. after every block of its files, so
 * the main thread goes on to the next directory without waiting. */
struct cdir {
	struct centry *ents;
	size_t n;
	uint8_t *out_type, *out_hash; /* the parent's entry for it */
	struct cdir *prev, *next;     /* pending directories, freed on errors */
};

/* A directory being scanned by the walk (see walk()). */
struct cframe {
	struct cdir *d;      /* its node, pending (owned by the pending list) */
	char **names;        /* its entries, sorted */
	size_t n, i;         /* how many; the next to capture */
	struct node_dir old; /* its previous version, if have_old */
	int have_old;
	size_t path_len;     /* of its path in cap.path */
};

struct cap {
	struct cdir *pending;
	struct cframe *frames;
	size_t nframes, capframes;
	struct dirstack dirs;
	struct store_pool *p;
	const struct store_ds *ds;
	const struct capture_opts *o;
	struct capture_stats *st;
	struct store_writer *w;
	struct store_reader *rd;
	struct codec_spec policy;
	uint32_t rs;
	dev_t dev;
	struct pipeline *pl;
	struct job *cur;      /* a slot being filled by the main thread */
	size_t jobcap;
	struct link *links;
	size_t nlinks, caplinks;
	struct fbuf path;
	uint64_t last_progress;
	int partial;
};

static int job_run(void *jv, void *ctx)
{
	struct job *j = jv;
	struct cap *c = ctx;
	for (unsigned i = 0; i < j->n; i++) {
		struct item *it = &j->items[i];
		if (it->kind != JOB_DATA)
			continue;
		struct cfile *f = it->f;
		it->known = 0;
		uint8_t h[FERRY_HASH_LEN];
		int hashed = 0;
		if (f->old && it->rec < f->nold && f->old_len[it->rec] == it->len) {
			hash_blake2b(h, j->data + it->off, it->len);
			hashed = 1;
			if (!memcmp(h, f->old[it->rec], FERRY_HASH_LEN)) {
				memcpy(it->blk.hash, h, FERRY_HASH_LEN);
				it->known = 1;
				continue;
			}
		}
		/* (a record hashed for the comparison is not hashed again) */
		struct store_block_in in = {.codec = {CODEC_OFF, 0}, .payload = j->data + it->off,
					    .psize = it->len, .lsize = it->len,
					    .hash = hashed ? h : NULL, .checked = 1};
		struct store_block_bufs b = {NULL, 0, j->scratch + it->off, it->len};
		int r = store_block_rule(&in, c->policy, STORE_ZERO_HOLE, &b, &it->blk);
		if (r < 0)
			return r;
	}
	return 0;
}

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	struct cap *c = arg;
	return store_writer_put_node(c->w, type, data, len, hash);
}

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

/* A warning names at most this much of a path: its start and its end. */
#define WARN_PATH_MAX 4096

static void warn(struct cap *c, const char *msg, int unreadable)
{
	c->st->warnings++;
	if (unreadable) {
		c->st->unreadable++;
		c->partial = 1;
	}
	if (!c->o->warn)
		return;
	if (c->path.len > WARN_PATH_MAX) {
		/* paths of deep trees outgrow PATH_MAX; a message need not */
		char shown[WARN_PATH_MAX + 8];
		size_t half = WARN_PATH_MAX / 2;
		memcpy(shown, c->path.data, half);
		memcpy(shown + half, "/.../", 5);
		memcpy(shown + half + 5, c->path.data + c->path.len - half, half);
		shown[2 * half + 5] = 0;
		c->o->warn(c->o->arg, shown, msg);
		return;
	}
	if (fbuf_putc(&c->path, 0) == 0)
		c->path.len--;
	c->o->warn(c->o->arg, c->path.len ? (const char *)c->path.data : ".", msg);
}

static void progress(struct cap *c, int force)
{
	if (!c->o->progress)
		return;
	uint64_t now = ferry_now_ns();
	if (!force && now - c->last_progress < 500000000u)
		return;
	c->last_progress = now;
	store_writer_counters(c->w, &c->st->blocks_written, &c->st->bytes_written);
	c->o->progress(c->o->arg, c->st);
}

/* ---- the job pipeline ------------------------------------------------------------ */

/* The next job slot, its buffers made the first time it is used. */
static int job_get(struct cap *c, struct job **out)
{
	void *jv;
	int r;
	if ((r = pipeline_job(c->pl, &jv)) < 0)
		return r;
	struct job *j = jv;
	if (!j->data) {
		if (!(j->data = malloc(c->jobcap)) || !(j->scratch = malloc(c->jobcap))) {
			free(j->data);
			j->data = NULL;
			return ferry_err(FERR_NOMEM, "capture buffers");
		}
		j->cap = c->jobcap;
	}
	j->n = 0;
	j->used = 0;
	*out = j;
	return 0;
}

static void job_release(void *jv, void *ctx)
{
	struct job *j = jv;
	free(j->data);
	free(j->scratch);
}

static int dir_finish(struct cap *c, struct cdir *d);

static int finish_file(struct cap *c, struct cfile *f)
{
	int r = node_bl_builder_finish(&f->bl, &f->type, f->hash);
	if (r < 0)
		return r;
	f->done = 1;
	if (f->link) {
		f->link->type = f->type;
		memcpy(f->link->hash, f->hash, FERRY_HASH_LEN);
		f->link->ready = 1;
		f->link = NULL;
	}
	return 0;
}

static int dir_finish(struct cap *c, struct cdir *d);

/* A job back from the workers, in order: its blocks go to the writer and
 * into their files' blocklists; a file's or a directory's node is built
 * once everything before it is. */
static int job_done(void *jv, int res, void *ctx)
{
	struct job *j = jv;
	struct cap *c = ctx;
	int r = 0, stored = 0;
	if (res < 0)
		return res;
	for (unsigned i = 0; i < j->n && r >= 0; i++) {
		struct item *it = &j->items[i];
		struct node_extent x;
		memset(&x, 0, sizeof x);
		switch (it->kind) {
		case JOB_DATA:
			if (it->known) {
				/* unchanged record of a changed file: already in the pool */
				if ((r = store_writer_ref(c->w, it->blk.hash)) < 0)
					break;
				c->st->blocks_total++;
				x.len = it->len;
				memcpy(x.hash, it->blk.hash, FERRY_HASH_LEN);
				r = node_bl_builder_add(&it->f->bl, &x);
				break;
			}
			if ((r = store_writer_put(c->w, &it->blk, &stored)) < 0)
				break;
			c->st->blocks_total += it->blk.form != BLOCK_HOLE;
			x.hole = it->blk.form == BLOCK_HOLE;
			x.len = it->len;
			memcpy(x.hash, it->blk.hash, FERRY_HASH_LEN);
			r = node_bl_builder_add(&it->f->bl, &x);
			break;
		case JOB_HOLE:
			x.hole = 1;
			x.len = it->hole;
			r = node_bl_builder_add(&it->f->bl, &x);
			break;
		case JOB_DIR_END:
			r = dir_finish(c, it->d);
			break;
		default:
			r = finish_file(c, it->f);
		}
	}
	return r;
}

static const struct pipeline_ops job_ops = {job_run, job_done, NULL, job_release};

/* Hands the job being filled to the pool. */
static int flush_cur(struct cap *c)
{
	struct job *j = c->cur;
	if (!j || !j->n)
		return 0;
	c->cur = NULL;
	return pipeline_submit(c->pl, j);
}

/* The job to add an item with need data bytes to. */
static int cur_job(struct cap *c, size_t need, struct job **out)
{
	int r;
	if (c->cur && (c->cur->n == JOB_ITEMS || c->cur->used + need > c->cur->cap) &&
	    (r = flush_cur(c)) < 0)
		return r;
	if (!c->cur && (r = job_get(c, &c->cur)) < 0)
		return r;
	*out = c->cur;
	return 0;
}

/* Every job done: what was queued is in the blocklists and nodes. */
static int drain(struct cap *c)
{
	int r;
	if ((r = flush_cur(c)) < 0)
		return r;
	return pipeline_drain(c->pl);
}

static int submit_simple(struct cap *c, struct cfile *f, int kind, uint64_t hole)
{
	struct job *j;
	int r = cur_job(c, 0, &j);
	if (r < 0)
		return r;
	struct item *it = &j->items[j->n++];
	it->kind = kind;
	it->f = f;
	it->hole = hole;
	it->off = it->len = 0;
	return 0;
}

/* Reads fd (a regular file, image or block device of size bytes) into f's
 * blocklist. *got receives the bytes covered (less than size when the file
 * shrank while being read). dense says the file has as many blocks allocated
 * as its size needs, so it has no hole worth looking for: SEEK_DATA and
 * SEEK_HOLE are skipped (reading a hole gives zeros, and an all-zero record
 * becomes a hole anyway, so the snapshot holds the same data). *src_err
 * is set when the error is the source's (a read that failed), not the
 * pool's or the pipeline's. */
static int read_data(struct cap *c, int fd, uint64_t size, int dense, struct cfile *f,
		     uint64_t *got, int *src_err)
{
	uint64_t off = 0, data_end = 0;
	int seekable = !dense, r;
	while (off < size) {
		if (seekable && off >= data_end) {
			off_t d = lseek(fd, (off_t)off, SEEK_DATA);
			if (d < 0 && errno == ENXIO) {
				/* the rest is a hole */
				if ((r = submit_simple(c, f, JOB_HOLE, size - off)) < 0)
					return r;
				off = size;
				break;
			}
			if (d < 0) {
				seekable = 0;
				data_end = size;
			} else {
				off_t h = lseek(fd, d, SEEK_HOLE);
				data_end = h < 0 ? size : (uint64_t)h;
				uint64_t start = (uint64_t)d - (uint64_t)d % c->rs;
				if (start > off) {
					if ((r = submit_simple(c, f, JOB_HOLE, start - off)) < 0)
						return r;
					off = start;
				}
				if (off >= size)
					break;
			}
		}
		struct job *j;
		size_t want = size - off < c->rs ? (size_t)(size - off) : c->rs, n = 0;
		if ((r = cur_job(c, want, &j)) < 0)
			return r;
		if ((r = io_pread_full(fd, j->data + j->used, want, (off_t)off, &n)) < 0) {
			*src_err = 1;
			return r;
		}
		if (n == 0)
			break;
		struct item *it = &j->items[j->n++];
		it->kind = JOB_DATA;
		it->f = f;
		it->off = j->used;
		it->len = n;
		it->rec = off / c->rs;
		j->used += n;
		c->st->bytes_read += n;
		off += n;
		progress(c, 0);
		if (n < want)
			break;
	}
	*got = off;
	return 0;
}

/* ---- attributes -------------------------------------------------------------------- */

static int keep_xattr(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) || !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

static int xa_cmp(const void *a, const void *b)
{
	const struct node_xattr *x = a, *y = b;
	size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
	int r = memcmp(x->name, y->name, m);
	return r ? r : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Reads the kept xattrs of fd (fd >= 0) or of path (not following a
 * symlink) into ce. Failures other than "not supported" are warnings. */
static int read_xattrs(struct cap *c, int fd, const char *path, struct centry *ce)
{
	char *list = NULL;
	ssize_t n;
	struct fbuf vals;
	int r = 0;
	fbuf_init(&vals, (size_t)NODE_XATTRS_MAX * (NODE_XATTR_VALUE_MAX + 256));
	for (int tries = 0;; tries++) {
		n = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(path, NULL, 0);
		if (n <= 0)
			break;
		free(list);
		if (!(list = malloc((size_t)n))) {
			r = ferry_err(FERR_NOMEM, "reading xattrs");
			goto out;
		}
		ssize_t m = fd >= 0 ? flistxattr(fd, list, (size_t)n) : llistxattr(path, list, (size_t)n);
		if (m >= 0) {
			n = m;
			break;
		}
		if (errno != ERANGE || tries > 4) {
			n = -1;
			break;
		}
	}
	if (n < 0) {
		if (errno != ENOTSUP && errno != EPERM && errno != EACCES)
			warn(c, "cannot list extended attributes", 0);
		goto out;
	}
	size_t cnt = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		if (keep_xattr(list + i))
			cnt++;
	if (!cnt)
		goto out;
	if (cnt > NODE_XATTRS_MAX) {
		warn(c, "too many extended attributes; some skipped", 0);
		cnt = NODE_XATTRS_MAX;
	}
	/* first pass collects names and values into one buffer, then pointers */
	size_t *offs = calloc(cnt * 3, sizeof *offs);
	if (!offs) {
		r = ferry_err(FERR_NOMEM, "reading xattrs");
		goto out;
	}
	size_t k = 0;
	uint8_t val[NODE_XATTR_VALUE_MAX];
	for (ssize_t i = 0; i < n && k < cnt; i += (ssize_t)strlen(list + i) + 1) {
		const char *nm = list + i;
		if (!keep_xattr(nm) || strlen(nm) > NODE_XATTR_NAME_MAX)
			continue;
		ssize_t vl = fd >= 0 ? fgetxattr(fd, nm, val, sizeof val)
				     : lgetxattr(path, nm, val, sizeof val);
		if (vl < 0) {
			if (errno != ENODATA)
				warn(c, "cannot read an extended attribute", 0);
			continue;
		}
		offs[3 * k] = vals.len;
		if ((r = fbuf_append(&vals, nm, strlen(nm))) < 0)
			break;
		offs[3 * k + 1] = vals.len;
		if ((r = fbuf_append(&vals, val, (size_t)vl)) < 0)
			break;
		offs[3 * k + 2] = (size_t)vl;
		k++;
	}
	if (r == 0 && k) {
		struct node_xattr *xa = calloc(k, sizeof *xa);
		if (!xa) {
			free(offs);
			r = ferry_err(FERR_NOMEM, "reading xattrs");
			goto out;
		}
		ce->xabuf = fbuf_detach(&vals, NULL);
		for (size_t i = 0; i < k; i++) {
			xa[i].name = ce->xabuf + offs[3 * i];
			xa[i].name_len = offs[3 * i + 1] - offs[3 * i];
			xa[i].value = ce->xabuf + offs[3 * i + 1];
			xa[i].value_len = offs[3 * i + 2];
		}
		qsort(xa, k, sizeof *xa, xa_cmp);
		ce->xa = xa;
		ce->e.xattrs = xa;
		ce->e.nxattr = k;
	}
	free(offs);
out:
	fbuf_release(&vals);
	free(list);
	return r;
}

static void entry_from_stat(struct node_entry *e, const struct stat *sb)
{
	e->mode = (uint16_t)(sb->st_mode & 07777);
	e->uid = sb->st_uid;
	e->gid = sb->st_gid;
	e->mtime_sec = sb->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)sb->st_mtim.tv_nsec;
	e->ctime_sec = sb->st_ctim.tv_sec;
	e->ctime_nsec = (uint32_t)sb->st_ctim.tv_nsec;
	e->ino = sb->st_ino;
}

static void centry_release(struct centry *ce)
{
	free(ce->name);
	free(ce->target);
	free(ce->xa);
	free(ce->xabuf);
	if (ce->file) {
		node_bl_builder_release(&ce->file->bl);
		free(ce->file->old);
		free(ce->file->old_len);
		free(ce->file);
	}
	memset(ce, 0, sizeof *ce);
}

/* ---- hardlinks --------------------------------------------------------------------- */

static struct link *link_find(struct cap *c, dev_t dev, ino_t ino, int add)
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

/* ---- files and directories ---------------------------------------------------------- */

struct ref_ctx {
	struct cap *c;
};

static int ref_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct cap *c = arg;
	if (x->hole)
		return 0;
	c->st->blocks_total++;
	return store_writer_ref(c->w, x->hash);
}

static const struct node_entry *old_find(const struct node_dir *old, const char *name)
{
	if (!old)
		return NULL;
	size_t lo = 0, hi = old->n, len = strlen(name);
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct node_entry *e = &old->ents[mid];
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
static int old_records(struct cap *c, struct cfile *f, const struct node_entry *oe)
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
	int r = node_bl_walk(rd_node, c->rd, oe->child_type, oe->child, oe->size, old_extent, &o);
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

/* Gives ce the blocklist oe recorded, referencing its blocks without reading
 * the file, and makes it the known content of the file's other links. */
static int reuse_file(struct cap *c, struct centry *ce, const struct node_entry *oe,
		      const struct stat *sb)
{
	struct link *lk;
	int r;
	ce->e.size = oe->size;
	ce->e.child_type = oe->child_type;
	memcpy(ce->e.child, oe->child, FERRY_HASH_LEN);
	if (oe->child_type &&
	    (r = node_bl_walk(rd_node, c->rd, oe->child_type, oe->child, oe->size, ref_extent, c)) < 0)
		return r;
	c->st->files_reused++;
	if (sb->st_nlink > 1 && (lk = link_find(c, sb->st_dev, sb->st_ino, 1))) {
		lk->ready = 1;
		lk->type = oe->child_type;
		lk->size = oe->size;
		memcpy(lk->hash, oe->child, FERRY_HASH_LEN);
	}
	return 0;
}

/* Captures a regular file name in dirfd into ce. Returns 1 when the entry
 * is to be skipped (warned). */
static int capture_file(struct cap *c, int dirfd, const char *name, const struct stat *lsb,
			const struct node_entry *oe, struct centry *ce)
{
	struct stat sb = *lsb, sb2;
	int r = 0, fd = -1;
	struct link *lk = NULL;
	ce->e.ftype = NODE_F_REG;
	if (sb.st_nlink > 1) {
		lk = link_find(c, sb.st_dev, sb.st_ino, 0);
		if (lk) {
			if (!lk->ready && (r = drain(c)) < 0)
				return r;
			entry_from_stat(&ce->e, &sb);
			ce->e.link_id = (uint64_t)sb.st_ino;
			ce->e.size = lk->size;
			ce->e.child_type = (uint8_t)lk->type;
			memcpy(ce->e.child, lk->hash, FERRY_HASH_LEN);
			/* the xattrs are the inode's: read them again through a path */
			char pp[64 + NAME_MAX];
			snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
			return read_xattrs(c, -1, pp, ce);
		}
	}
	if (file_unchanged(oe, &sb)) {
		/* unchanged since the last snapshot (same size, mtime, ctime and
		 * inode; an xattr or mode change moves ctime): keep its blocklist
		 * and xattrs without even opening it */
		entry_from_stat(&ce->e, &sb);
		if (sb.st_nlink > 1)
			ce->e.link_id = (uint64_t)sb.st_ino;
		if ((r = copy_xattrs(ce, oe)) < 0)
			return r;
		return reuse_file(c, ce, oe, &sb);
	}
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) {
			warn(c, "file vanished before it could be read; skipped", 0);
			return 1;
		}
		char msg[160];
		snprintf(msg, sizeof msg, "cannot open: %s; skipped", strerror(errno));
		warn(c, msg, 1);
		return 1;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		warn(c, "file was replaced while being read; skipped", 0);
		close(fd);
		return 1;
	}
	entry_from_stat(&ce->e, &sb);
	if (sb.st_nlink > 1)
		ce->e.link_id = (uint64_t)sb.st_ino;
	if ((r = read_xattrs(c, fd, NULL, ce)) < 0)
		goto out;
	if (file_unchanged(oe, &sb)) {
		/* unchanged since the last snapshot: keep its blocklist unread */
		r = reuse_file(c, ce, oe, &sb);
		goto out;
	}
	struct cfile *f = calloc(1, sizeof *f);
	if (!f) {
		r = ferry_err(FERR_NOMEM, "capturing a file");
		goto out;
	}
	node_bl_builder_init(&f->bl, put_node, c, c->rs);
	ce->file = f;
	if (oe && oe->ftype == NODE_F_REG && oe->child_type && (r = old_records(c, f, oe)) < 0)
		goto out;
	uint64_t got = 0;
	int dense = sb.st_blocks >= 0 && (uint64_t)sb.st_blocks * 512 >= (uint64_t)sb.st_size;
	int src_err = 0;
	if ((r = read_data(c, fd, (uint64_t)sb.st_size, dense, f, &got, &src_err)) < 0) {
		if (src_err && r == -FERR_IO) {
			/* a read error mid-file: the file is skipped, once the
			 * jobs that hold its records are done (a failure of
			 * the pool's, or of a job, is not the file's: it fails
			 * the capture) */
			char msg[300];
			snprintf(msg, sizeof msg, "read error: %s; skipped", ferry_errmsg(r));
			ferry_err_clear();
			if ((r = drain(c)) < 0)
				goto out;
			warn(c, msg, 1);
			r = 1;
		}
		goto out;
	}
	if ((r = submit_simple(c, f, JOB_END, 0)) < 0)
		goto out;
	c->st->files_read++;
	ce->e.size = got;
	if (fstat(fd, &sb2) == 0 &&
	    (sb2.st_size != sb.st_size || sb2.st_mtim.tv_sec != sb.st_mtim.tv_sec ||
	     sb2.st_mtim.tv_nsec != sb.st_mtim.tv_nsec || sb2.st_ctim.tv_sec != sb.st_ctim.tv_sec ||
	     sb2.st_ctim.tv_nsec != sb.st_ctim.tv_nsec || got != (uint64_t)sb.st_size)) {
		c->st->files_changed_during++;
		warn(c, "file changed as it was read", 0);
		/* the next capture must read it again */
		ce->e.ctime_sec = 0;
		ce->e.ctime_nsec = 0;
	}
	if (sb.st_nlink > 1 && (lk = link_find(c, sb.st_dev, sb.st_ino, 1))) {
		lk->size = got;
		lk->ready = 0;
		f->link = lk;
	}
out:
	if (fd >= 0)
		close(fd);
	return r;
}

static int name_cmp_qsort(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_dir(int dirfd, char ***names, size_t *n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ferry_err_errno(errno, "cannot read directory");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return ferry_err_errno(errno, "cannot read directory");
	}
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((r = VEC_GROW(v, cap, cnt, 64, "listing a directory")) < 0)
			goto out;
		if (!(v[cnt] = strdup(de->d_name))) {
			r = ferry_err(FERR_NOMEM, "listing a directory");
			goto out;
		}
		cnt++;
		errno = 0;
	}
	if (errno)
		r = ferry_err_errno(errno, "cannot read directory");
out:
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < cnt; i++)
			free(v[i]);
		free(v);
		return r;
	}
	if (cnt) {
		qsort(v, cnt, sizeof *v, name_cmp_qsort);
		/* a deep walk holds one listing per level: no growth slack */
		char **nv = realloc(v, cnt * sizeof *v);
		if (nv)
			v = nv;
	}
	*names = v;
	*n = cnt;
	return 0;
}

/* Records ce as an empty directory: a mount point (as tar --one-file-system
 * does) or a directory deeper than NODE_TREE_DEPTH_MAX. */
static int empty_dir(struct cap *c, struct centry *ce)
{
	struct node_dir_builder b;
	int t, r;
	node_dir_builder_init(&b, put_node, c);
	r = node_dir_builder_finish(&b, &t, ce->e.child);
	node_dir_builder_release(&b);
	ce->e.child_type = (uint8_t)t;
	return r;
}

/* A directory ce (at level, the root's entries being level 1) deeper than
 * the limit: recorded empty, with a warning when it was not. */
static int too_deep(struct cap *c, int dirfd, const char *name, struct centry *ce)
{
	char **names = NULL;
	size_t n = 0;
	int r, fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if ((r = read_xattrs(c, fd, NULL, ce)) < 0) {
			close(fd);
			return r;
		}
		if (list_dir(fd, &names, &n) < 0) {
			ferry_err_clear();
			n = 1; /* unreadable: it may hold anything */
			names = NULL;
		}
		close(fd);
	} else {
		n = 1;
	}
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	if (n) {
		char msg[160];
		snprintf(msg, sizeof msg, "directory deeper than %d levels; recorded empty",
			 NODE_TREE_DEPTH_MAX);
		warn(c, msg, 1);
	}
	return empty_dir(c, ce);
}

/* Captures entry name of dirfd, at level (the root's entries are level 1),
 * into ce. Returns 1 to skip it, 2 for a directory to descend into: *subfd
 * is then its fd and *od its previous version (*have_od says if there is
 * one), both the caller's. */
static int capture_entry(struct cap *c, int dirfd, const char *name, size_t level,
			 const struct node_dir *old, struct centry *ce, int *subfd,
			 struct node_dir *od, int *have_od)
{
	struct stat sb;
	char pp[64 + NAME_MAX];
	int r;
	if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT) {
			warn(c, "vanished while being read; skipped", 0);
			return 1;
		}
		char msg[160];
		snprintf(msg, sizeof msg, "cannot stat: %s; skipped", strerror(errno));
		warn(c, msg, 1);
		return 1;
	}
	if (strlen(name) > NODE_NAME_MAX) {
		warn(c, "name too long; skipped", 1);
		return 1;
	}
	if (!(ce->name = strdup(name)))
		return ferry_err(FERR_NOMEM, "capturing");
	ce->e.name = (const uint8_t *)ce->name;
	ce->e.name_len = strlen(name);
	const struct node_entry *oe = old_find(old, name);
	snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
	switch (sb.st_mode & S_IFMT) {
	case S_IFREG:
		return capture_file(c, dirfd, name, &sb, oe, ce);
	case S_IFDIR: {
		entry_from_stat(&ce->e, &sb);
		ce->e.ftype = NODE_F_DIR;
		c->st->dirs++;
		if (sb.st_dev != c->dev && !c->o->cross_fs)
			return empty_dir(c, ce); /* a mount point */
		if (level > NODE_TREE_DEPTH_MAX)
			return too_deep(c, dirfd, name, ce);
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			char msg[160];
			snprintf(msg, sizeof msg, "cannot open directory: %s; skipped", strerror(errno));
			warn(c, msg, errno != ENOENT);
			return 1;
		}
		*have_od = 0;
		if (oe && oe->ftype == NODE_F_DIR) {
			if ((r = node_dir_load(rd_node, c->rd, oe->child_type, oe->child, od)) < 0) {
				close(fd);
				return r;
			}
			*have_od = 1;
		}
		if ((r = read_xattrs(c, fd, NULL, ce)) < 0) {
			node_dir_release(od);
			*have_od = 0;
			close(fd);
			return r;
		}
		*subfd = fd;
		return 2;
	}
	case S_IFLNK: {
		char buf[NODE_TARGET_MAX + 2];
		ssize_t n = readlinkat(dirfd, name, buf, sizeof buf);
		if (n <= 0 || n > NODE_TARGET_MAX) {
			warn(c, n < 0 && errno == ENOENT ? "vanished while being read; skipped"
							 : "cannot read symlink; skipped",
			     !(n < 0 && errno == ENOENT));
			return 1;
		}
		entry_from_stat(&ce->e, &sb);
		ce->e.ftype = NODE_F_SYMLINK;
		if (!(ce->target = malloc((size_t)n)))
			return ferry_err(FERR_NOMEM, "capturing");
		memcpy(ce->target, buf, (size_t)n);
		ce->e.target = ce->target;
		ce->e.target_len = (size_t)n;
		c->st->symlinks++;
		return read_xattrs(c, -1, pp, ce);
	}
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
		entry_from_stat(&ce->e, &sb);
		ce->e.ftype = S_ISFIFO(sb.st_mode) ? NODE_F_FIFO
			      : S_ISCHR(sb.st_mode) ? NODE_F_CHR : NODE_F_BLK;
		if (!S_ISFIFO(sb.st_mode)) {
			ce->e.rdev_major = major(sb.st_rdev);
			ce->e.rdev_minor = minor(sb.st_rdev);
		}
		c->st->specials++;
		return read_xattrs(c, -1, pp, ce);
	case S_IFSOCK:
		warn(c, "socket ignored", 0);
		return 1;
	default:
		warn(c, "unknown file type; skipped", 1);
		return 1;
	}
}

static void cdir_free(struct cap *c, struct cdir *d)
{
	for (size_t i = 0; i < d->n; i++)
		centry_release(&d->ents[i]);
	free(d->ents);
	if (d->prev)
		d->prev->next = d->next;
	else
		c->pending = d->next;
	if (d->next)
		d->next->prev = d->prev;
	free(d);
}

static int dir_finish(struct cap *c, struct cdir *d)
{
	struct node_dir_builder b;
	int r = 0, t;
	node_dir_builder_init(&b, put_node, c);
	for (size_t i = 0; i < d->n && r == 0; i++) {
		struct centry *ce = &d->ents[i];
		if (ce->file) {
			ce->e.child_type = (uint8_t)ce->file->type;
			memcpy(ce->e.child, ce->file->hash, FERRY_HASH_LEN);
		}
		if (ce->e.ftype == NODE_F_REG && ce->e.size == 0)
			ce->e.child_type = 0;
		r = node_dir_builder_add(&b, &ce->e);
	}
	if (r == 0 && (r = node_dir_builder_finish(&b, &t, d->out_hash)) == 0)
		*d->out_type = (uint8_t)t;
	node_dir_builder_release(&b);
	cdir_free(c, d);
	return r;
}

/* ---- the walk ------------------------------------------------------------------------
 * Iterative, so a tree of any depth costs heap, not stack: one frame per
 * directory being scanned (its sorted names, its previous version, its
 * pending node), and its fd on c->dirs, which keeps only the deepest
 * few open. */

/* Directory fds kept open besides the root's. */
#define CAP_OPEN_DIRS 16

static void frame_release(struct cframe *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->names[i]);
	free(f->names);
	f->names = NULL;
	f->n = f->i = 0;
	node_dir_release(&f->old);
}

/* Descends into directory fd (named name in the current top; the stack
 * takes fd), whose previous version *od (if have_od) the frame takes: its
 * node lands in *out_type / out_hash once its files are done. */
static int frame_push(struct cap *c, int fd, const char *name, struct node_dir *od, int have_od,
		      uint8_t *out_type, uint8_t *out_hash)
{
	struct cframe *f;
	int r;
	if ((r = VEC_GROW(c->frames, c->capframes, c->nframes, 64, "capturing a tree")) < 0) {
		close(fd);
		if (have_od)
			node_dir_release(od);
		return r;
	}
	f = &c->frames[c->nframes++];
	memset(f, 0, sizeof *f);
	if (have_od) {
		f->old = *od;
		f->have_old = 1;
		memset(od, 0, sizeof *od);
	}
	f->path_len = c->path.len;
	if ((r = dirstack_push(&c->dirs, fd, name)) < 0)
		return r; /* the frame is released with the others */
	struct cdir *d = calloc(1, sizeof *d);
	if (!d)
		return ferry_err(FERR_NOMEM, "capturing a directory");
	d->out_type = out_type;
	d->out_hash = out_hash;
	d->next = c->pending;
	if (c->pending)
		c->pending->prev = d;
	c->pending = d;
	f->d = d;
	if ((r = list_dir(dirstack_fd(&c->dirs), &f->names, &f->n)) < 0) {
		char msg[300];
		snprintf(msg, sizeof msg, "%s; recorded empty", ferry_errmsg(r));
		ferry_err_clear();
		warn(c, msg, 1);
		f->names = NULL;
		f->n = 0;
	}
	if (f->n && !(d->ents = calloc(f->n, sizeof *d->ents)))
		return ferry_err(FERR_NOMEM, "capturing a directory");
	return 0;
}

/* Leaves the top directory: its node is queued (built in order, after the
 * blocks of its files) and the walk goes back to its parent. */
static int frame_pop(struct cap *c)
{
	struct cframe *f = &c->frames[c->nframes - 1];
	struct job *j;
	int r;
	if ((r = cur_job(c, 0, &j)) < 0)
		return r;
	struct item *it = &j->items[j->n++];
	memset(it, 0, sizeof *it);
	it->kind = JOB_DIR_END;
	it->d = f->d;
	f->d = NULL;
	frame_release(f);
	c->nframes--;
	if (c->nframes) {
		struct cframe *pf = &c->frames[c->nframes - 1];
		unsigned moved = c->dirs.moved;
		if ((r = dirstack_open_parent(&c->dirs)) == 0 && c->dirs.moved != moved) {
			/* found again where it was: what was read of the
			 * directory left is consistent, but it is elsewhere now */
			c->path.len = f->path_len;
			warn(c, "directory moved while being read", 0);
		} else if (r < 0) {
			if (r == -FERR_NOMEM)
				return r;
			/* the tree moved under the walk: what it still holds
			 * of the parent cannot be reached safely */
			char msg[400];
			size_t left = pf->n - pf->i;
			if (left)
				snprintf(msg, sizeof msg, "%s; %zu entries skipped", ferry_errmsg(r),
					 left);
			else
				snprintf(msg, sizeof msg, "%s", ferry_errmsg(r));
			ferry_err_clear();
			c->path.len = pf->path_len;
			warn(c, msg, left != 0);
			pf->i = pf->n;
		}
		c->path.len = pf->path_len;
	}
	dirstack_pop(&c->dirs);
	return 0;
}

/* Captures the tree below rootfd (the stack takes it) into *out_type /
 * out_hash; old is the previous version of the root directory. */
static int walk(struct cap *c, int rootfd, struct node_dir *old, int have_old,
		uint8_t *out_type, uint8_t *out_hash)
{
	int r;
	if ((r = frame_push(c, rootfd, NULL, old, have_old, out_type, out_hash)) < 0)
		return r;
	while (c->nframes) {
		struct cframe *f = &c->frames[c->nframes - 1];
		if (f->i == f->n) {
			if ((r = frame_pop(c)) < 0)
				return r;
			continue;
		}
		const char *name = f->names[f->i++];
		struct cdir *d = f->d;
		struct centry *ce = &d->ents[d->n];
		struct node_dir od;
		int subfd = -1, have_od = 0;
		memset(&od, 0, sizeof od);
		c->path.len = f->path_len;
		if ((c->path.len && (r = fbuf_putc(&c->path, '/')) < 0) ||
		    (r = fbuf_append(&c->path, name, strlen(name))) < 0)
			return r;
		r = capture_entry(c, dirstack_fd(&c->dirs), name, c->nframes,
				  f->have_old ? &f->old : NULL, ce, &subfd, &od, &have_od);
		if (r < 0) {
			centry_release(ce); /* not counted in d->n: cdir_free skips it */
			return r;
		}
		if (r == 1) {
			centry_release(ce);
			c->path.len = f->path_len;
			continue;
		}
		d->n++;
		if (r == 2) {
			/* f may move: the frames array grows */
			if ((r = frame_push(c, subfd, name, &od, have_od, &ce->e.child_type,
					    ce->e.child)) < 0)
				return r;
			continue;
		}
		c->path.len = f->path_len;
	}
	return 0;
}

/* ---- entry points --------------------------------------------------------------------- */

static int old_root(struct cap *c, int *kind, struct node_dir *od, int *have)
{
	struct store_snap s;
	struct fbuf b;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	int t, r = store_snap_newest(c->p, c->ds, &s);
	*have = 0;
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		return 0;
	}
	if (r < 0)
		return r;
	fbuf_init(&b, NODE_MAX);
	if ((r = store_node_read(c->rd, s.root, &t, &b)) < 0)
		goto out;
	if ((r = node_root_decode(b.data, b.len, kind, &e, &xa)) < 0)
		goto out;
	if (*kind == NODE_ROOT_FILESYSTEM) {
		if ((r = node_dir_load(rd_node, c->rd, e.child_type, e.child, od)) < 0)
			goto out;
		*have = 1;
	}
out:
	free(xa);
	fbuf_release(&b);
	return r;
}

static int capture_tree(struct cap *c, const char *from, uint8_t *root)
{
	struct node_dir od;
	struct centry ce;
	struct fbuf rb;
	struct stat sb;
	int have = 0, kind = 0, r, fd = -1;
	memset(&od, 0, sizeof od);
	memset(&ce, 0, sizeof ce);
	fbuf_init(&rb, NODE_MAX);
	fd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		r = ferry_err_errno(errno, "cannot open source directory '%s'", from);
		goto out;
	}
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat '%s'", from);
		goto out;
	}
	c->dev = sb.st_dev;
	if ((r = old_root(c, &kind, &od, &have)) < 0)
		goto out;
	entry_from_stat(&ce.e, &sb);
	ce.e.ftype = NODE_F_DIR;
	if ((r = read_xattrs(c, fd, NULL, &ce)) < 0)
		goto out;
	r = walk(c, fd, &od, have, &ce.e.child_type, ce.e.child);
	fd = -1; /* the walk's stack took it */
	if (r < 0 || (r = drain(c)) < 0)
		goto out;
	if ((r = node_root_encode(&rb, NODE_ROOT_FILESYSTEM, &ce.e)) < 0)
		goto out;
	r = store_writer_put_node(c->w, NODE_EXT, rb.data, rb.len, root);
out:
	if (fd >= 0)
		close(fd);
	centry_release(&ce);
	node_dir_release(&od);
	fbuf_release(&rb);
	return r;
}

static int capture_volume(struct cap *c, const char *from, uint8_t *root)
{
	struct centry ce;
	struct fbuf rb;
	struct stat sb;
	struct cfile f;
	uint64_t size, got = 0;
	int r = 0, fd;
	memset(&ce, 0, sizeof ce);
	memset(&f, 0, sizeof f);
	fbuf_init(&rb, NODE_MAX);
	node_bl_builder_init(&f.bl, put_node, c, c->rs);
	fd = open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = ferry_err_errno(errno, "cannot open volume source '%s'", from);
		goto out;
	}
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat '%s'", from);
		goto out;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
			r = ferry_err_errno(errno, "cannot get the size of '%s'", from);
			goto out;
		}
	} else if (S_ISREG(sb.st_mode)) {
		size = (uint64_t)sb.st_size;
	} else {
		r = ferry_err(FERR_INVAL, "'%s' is not an image file or block device", from);
		goto out;
	}
	{
		/* the previous image's records: unchanged ones are not compressed again */
		struct store_snap prev;
		struct fbuf ob;
		struct node_entry oe;
		struct node_xattr *oxa = NULL;
		int t, kind;
		fbuf_init(&ob, NODE_MAX);
		if (store_snap_newest(c->p, c->ds, &prev) == 0 &&
		    store_node_read(c->rd, prev.root, &t, &ob) == 0 && t == NODE_EXT &&
		    node_root_decode(ob.data, ob.len, &kind, &oe, &oxa) == 0 &&
		    kind == NODE_ROOT_VOLUME && oe.child_type)
			r = old_records(c, &f, &oe);
		ferry_err_clear();
		free(oxa);
		fbuf_release(&ob);
		if (r < 0)
			goto out;
	}
	int src_err = 0;
	if ((r = read_data(c, fd, size, 0, &f, &got, &src_err)) < 0 ||
	    (r = submit_simple(c, &f, JOB_END, 0)) < 0 || (r = drain(c)) < 0)
		goto out;
	if (got != size) {
		r = ferry_err(FERR_IO, "'%s' shrank while being read", from);
		goto out;
	}
	c->st->files_read++;
	entry_from_stat(&ce.e, &sb);
	ce.e.ftype = NODE_F_REG;
	ce.e.rdev_major = ce.e.rdev_minor = 0;
	ce.e.size = size;
	ce.e.child_type = size ? (uint8_t)f.type : 0;
	memcpy(ce.e.child, f.hash, FERRY_HASH_LEN);
	if ((r = node_root_encode(&rb, NODE_ROOT_VOLUME, &ce.e)) < 0)
		goto out;
	r = store_writer_put_node(c->w, NODE_EXT, rb.data, rb.len, root);
out:
	if (fd >= 0)
		close(fd);
	node_bl_builder_release(&f.bl);
	free(f.old);
	free(f.old_len);
	centry_release(&ce);
	fbuf_release(&rb);
	return r;
}

/* capture_current's walk: every block of every file is referenced again. */
static int current_entry(void *arg, const struct node_walk_entry *we)
{
	struct cap *c = arg;
	const struct node_entry *e = we->e;
	if (e->ftype != NODE_F_REG || !e->child_type)
		return 0;
	c->st->files_reused++;
	return node_bl_walk(rd_node, c->rd, e->child_type, e->child, e->size, ref_extent, c);
}

/* A dataset with nothing to capture from (no source, no --from) is, as a
 * zfs dataset nobody wrote to, what its newest snapshot holds: the new
 * snapshot gets that root and references its blocks again. Without a
 * snapshot it is empty: an empty directory owned by root (mode 0755, as a
 * new zfs filesystem), or a volume of volsize zero bytes (all holes). */
static int capture_current(struct cap *c, uint8_t *root)
{
	static const struct node_walk_ops ops = {NULL, current_entry, NULL};
	struct store_snap s;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	struct node_bl_builder bl;
	struct store_propval v;
	struct fbuf b;
	int t, kind, r = store_snap_newest(c->p, c->ds, &s);
	fbuf_init(&b, NODE_MAX);
	node_bl_builder_init(&bl, put_node, c, c->rs);
	if (r == 0) {
		if ((r = store_node_read(c->rd, s.root, &t, &b)) < 0)
			goto out;
		if (t != NODE_EXT || (r = node_root_decode(b.data, b.len, &kind, &e, &xa)) < 0) {
			if (r >= 0)
				r = ferry_err(FERR_CORRUPT, "'%s' is not a root node", s.name);
			goto out;
		}
		if (e.child_type && kind == NODE_ROOT_VOLUME)
			r = node_bl_walk(rd_node, c->rd, e.child_type, e.child, e.size, ref_extent, c);
		else if (e.child_type)
			r = node_tree_walk(rd_node, c->rd, e.child_type, e.child, &ops, c);
		if (r == 0)
			memcpy(root, s.root, FERRY_HASH_LEN);
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
		node_dir_builder_init(&db, put_node, c);
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

static int is_archive_name(const char *s)
{
	static const char *const ext[] = {".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz",
					  ".tar.bz2", ".tar.zst", ".zip", ".cpio", ".pax"};
	size_t n = strlen(s);
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		size_t m = strlen(ext[i]);
		if (n > m && !strcmp(s + n - m, ext[i]))
			return 1;
	}
	return 0;
}

int capture_snapshot(struct store_pool *p, const struct store_ds *ds, const char *name,
		  const struct capture_opts *o, struct capture_stats *st)
{
	struct cap c;
	struct store_propval v;
	struct store_snap existing;
	char full[STORE_NAME_MAX + 2];
	uint8_t root[FERRY_HASH_LEN];
	const char *from = o->from;
	int r;
	memset(&c, 0, sizeof c);
	memset(st, 0, sizeof *st);
	c.p = p;
	c.ds = ds;
	c.o = o;
	c.st = st;
	/* the walk goes NODE_TREE_DEPTH_MAX + 1 levels down at most */
	fbuf_init(&c.path, (size_t)(NODE_TREE_DEPTH_MAX + 2) * (NODE_NAME_MAX + 1));
	dirstack_init(&c.dirs, CAP_OPEN_DIRS, 0);
	snprintf(full, sizeof full, "%s@%s", ds->name, name);
	if ((r = store_name_check(full, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	if (store_snap_lookup(p, full, &existing) == 0)
		return ferry_err(FERR_EXISTS, "snapshot '%s' already exists", full);
	ferry_err_clear();
	if (!from && ds->type == STORE_DS_FILESYSTEM) {
		if ((r = store_prop_get(p, ds, "source", &v)) < 0)
			return r;
		if (strcmp(v.exact, "none") && *v.exact)
			from = v.exact;
	}
	/* no from: the dataset's current state (capture_current) */
	uint64_t creation_ns = o->creation_ns ? o->creation_ns : ferry_now_ns();
	if ((r = store_ds_compression(p, ds, &c.policy)) < 0 ||
	    (r = store_ds_recordsize(p, ds, &c.rs)) < 0)
		return r;
	if (c.rs < 512 || c.rs > STORE_BLOCK_MAX)
		return ferry_err(FERR_PROP, "record size %u out of range", c.rs);
	if ((r = store_writer_new(p, &c.w)) < 0)
		goto out;
	if ((r = store_reader_new(p, &c.rd)) < 0)
		goto out;
	struct stat fsb;
	int archive = from && ds->type == STORE_DS_FILESYSTEM && stat(from, &fsb) == 0 &&
		      S_ISREG(fsb.st_mode) && is_archive_name(from);
	if (!from) {
		if ((r = capture_current(&c, root)) < 0)
			goto out;
	} else if (archive) {
		r = capture_archive(p, c.w, st, from, c.policy, c.rs, o->threads, o->warn, o->arg,
				    root);
		if (r == -FERR_PARTIAL) {
			c.partial = 1;
			r = 0;
		}
		if (r < 0)
			goto out;
	} else {
		c.jobcap = c.rs > JOB_BYTES ? c.rs : JOB_BYTES;
		unsigned inflight = (unsigned)((64u << 20) / (2 * c.jobcap));
		if (inflight < 8)
			inflight = 8;
		if (inflight > 64)
			inflight = 64;
		/* one slot more than in flight: the one the walk is filling */
		if ((r = pipeline_new(&c.pl, pipeline_threads(o->threads), inflight + 1,
				      sizeof(struct job), &job_ops, &c)) < 0)
			goto out;
		if (ds->type == STORE_DS_VOLUME)
			r = capture_volume(&c, from, root);
		else
			r = capture_tree(&c, from, root);
		if (r < 0)
			goto out;
	}
	store_writer_counters(c.w, &st->blocks_written, &st->bytes_written);
	progress(&c, 1);
	store_writer_last(c.w);
	if ((r = store_writer_commit_snapshot(c.w, ds, name, root, 0, creation_ns, NULL)) < 0)
		goto out;
	if (c.partial)
		r = ferry_err(FERR_PARTIAL, "snapshot '%s' is missing %llu unreadable entries", full,
			      (unsigned long long)st->unreadable);
out:
	/* the jobs still in flight use the files' and directories' memory */
	pipeline_free(c.pl);
	while (c.pending)
		cdir_free(&c, c.pending);
	for (size_t i = 0; i < c.nframes; i++)
		frame_release(&c.frames[i]);
	free(c.frames);
	dirstack_release(&c.dirs);
	free(c.links);
	store_reader_free(c.rd);
	store_writer_free(c.w);
	fbuf_release(&c.path);
	return r;
}
