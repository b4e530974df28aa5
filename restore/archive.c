/* restore/archive.c — writing a snapshot as a tar, pax or zip archive
 * through libarchive (the only restore file that knows libarchive). Member
 * names are the snapshot's relative paths; hardlinks stay hardlinks; a
 * file's holes are left out of tar and pax archives (a GNU sparse 1.0 map,
 * which GNU tar and bsdtar restore as holes) and written as zeros in zip. */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"
#include "lib/arc.h"

struct ar {
	struct archive *a;
	struct pipeline *pl;    /* blocks checked on the workers, written in order here */
	struct store_reader *rd;
	const struct restore_opts *o;
	struct restore_stats *st;
	struct fbuf path;
	uint8_t *buf;           /* zeros for holes (write_zeros) */
	size_t bufcap;
	struct {
		uint64_t id;
		char *path;
	} *links;
	size_t nlinks, caplinks;
	int *found;
	int partial;
};

static int rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

static int ar_err(struct ar *w, const char *what)
{
	return ferry_err(FERR_IO, "%s: %s", what, arc.error_string(w->a));
}

static int sel(struct ar *w)
{
	return restore_selected(w->o->files, w->o->nfiles, (const char *)w->path.data,
				w->path.len, w->found);
}

/* ---- file data: each block decoded and checked on a worker (eight hashes
 * at a time), written to the archive in order on this thread ------------- */

struct ajob {
	int hole;                   /* len zero bytes to write, no block */
	uint64_t len;
	struct codec_spec c;        /* the block as stored */
	uint32_t lsize;
	uint8_t hash[FERRY_HASH_LEN];
	struct fbuf payload;
	struct store_block_loc loc; /* where it was read, for errors */
	uint8_t *out;               /* STORE_BLOCK_MAX: the decoded block */
	int verified;               /* ajob_prep found it to match its hash */
};

/* Writes len zero bytes to the archive (zip has no holes; pax's writer
 * drops them by the entry's sparse map). */
static int write_zeros(struct ar *w, uint64_t len)
{
	if (!w->buf) { /* zeros, made once: nothing else writes to it */
		if (!(w->buf = calloc(1, 1u << 20)))
			return ferry_err(FERR_NOMEM, "writing an archive");
		w->bufcap = 1u << 20;
	}
	for (uint64_t done = 0; done < len;) {
		size_t k = len - done < w->bufcap ? (size_t)(len - done) : w->bufcap;
		if (arc.write_data(w->a, w->buf, k) != (la_ssize_t)k)
			return ar_err(w, "writing archive data");
		done += k;
	}
	return 0;
}

/* On a worker: the block checked against its hash (decoded into out),
 * unless ajob_prep did; a damaged block is named with its pack and offset. */
static int ajob_run(void *jv, void *ctx)
{
	struct ajob *j = jv;
	int r;
	if (j->hole || j->verified)
		return 0;
	if ((r = store_block_verify(j->c, j->payload.data, j->payload.len, j->lsize, j->hash,
				    j->out, STORE_BLOCK_MAX)) < 0)
		return store_block_damage(j->hash, &j->loc, r);
	return 0;
}

/* ajob_prep's view of a job: its block, if it has one. */
static int ajob_check(void *jv, struct store_block_check *c)
{
	struct ajob *j = jv;
	if (j->hole)
		return 0;
	*c = (struct store_block_check){.c = j->c, .payload = j->payload.data,
					.psize = j->payload.len, .lsize = j->lsize, .hash = j->hash,
					.scratch = j->out, .scratch_cap = STORE_BLOCK_MAX,
					.mark = &j->verified};
	return 1;
}

static void ajob_prep(void *const *jobs, size_t n, void *ctx)
{
	store_block_verify_jobs(jobs, n, ajob_check);
}

/* A block back, in order: its content to the archive. */
static int ajob_done(void *jv, int res, void *ctx)
{
	struct ar *w = ctx;
	struct ajob *j = jv;
	if (res < 0)
		return res;
	if (j->hole)
		return write_zeros(w, j->len);
	const void *src = j->c.id == CODEC_OFF ? j->payload.data : j->out;
	if (arc.write_data(w->a, src, j->lsize) != (la_ssize_t)j->lsize)
		return ar_err(w, "writing archive data");
	w->st->bytes += j->lsize;
	return 0;
}

static void ajob_release(void *jv, void *ctx)
{
	struct ajob *j = jv;
	fbuf_release(&j->payload);
	free(j->out);
}

static const struct pipeline_ops ajob_ops = {ajob_run, ajob_done, NULL, ajob_release, ajob_prep};

/* Queues extent x of the file being written: a block read as stored, or
 * a hole's zeros (after the blocks before it). ajob_done writes them. */
static int emit_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct ar *w = arg;
	struct ajob *j;
	void *jv;
	uint32_t ls;
	int r;
	if ((r = pipeline_job(w->pl, &jv)) < 0)
		return r;
	j = jv;
	if (!j->out) {
		fbuf_init(&j->payload, STORE_BLOCK_MAX);
		if (!(j->out = malloc(STORE_BLOCK_MAX)))
			return ferry_err(FERR_NOMEM, "writing an archive");
	}
	j->hole = x->hole;
	j->len = x->len;
	j->verified = 0;
	if (x->hole)
		return pipeline_submit_done(w->pl, j);
	if ((r = store_block_read_stored(w->rd, x->hash, (struct codec_spec){CODEC_OFF, 0}, &j->c,
					 &ls, &j->payload, NULL)) < 0)
		return r; /* the slot, not submitted, is handed out again */
	if (ls != x->len)
		return ferry_err(FERR_CORRUPT, "block is %u bytes, expected %llu", ls,
				 (unsigned long long)x->len);
	store_reader_last_loc(w->rd, &j->loc);
	j->lsize = ls;
	memcpy(j->hash, x->hash, FERRY_HASH_LEN);
	return pipeline_submit(w->pl, j);
}

/* Writes e's data to the archive: every block in order, all written
 * before this returns (the next entry's header follows). */
static int emit_data(struct ar *w, const struct node_entry *e)
{
	int r = node_bl_walk(rd_node, w->rd, e->child_type, e->child, e->size, emit_extent, w);
	if (r < 0) {
		pipeline_cancel(w->pl);
		return r;
	}
	return pipeline_drain(w->pl);
}

/* A file's sparse map: one entry per run of adjacent data extents. At most
 * SPARSE_RUNS_MAX runs, so a file of many small holes costs bounded memory:
 * past that it is written whole, zeros included. */
#define SPARSE_RUNS_MAX 65536
struct sparse {
	struct archive_entry *ae;
	uint64_t start, len, end;
	size_t runs;
	int holes, too_many;
};

static void sparse_flush(struct sparse *m)
{
	if (!m->len)
		return;
	if (++m->runs > SPARSE_RUNS_MAX)
		m->too_many = 1;
	else
		arc.entry_sparse_add_entry(m->ae, (la_int64_t)m->start, (la_int64_t)m->len);
	m->len = 0;
}

static int sparse_extent(void *arg, const struct node_extent *x, uint64_t off)
{
	struct sparse *m = arg;
	if (x->hole) {
		m->holes = 1;
		return 0;
	}
	if (!m->len || m->start + m->len != off) {
		sparse_flush(m);
		m->start = off;
	}
	m->len += x->len;
	m->end = off + x->len;
	return 0;
}

/* Gives ae the sparse map of e's blocklist when it has holes; libarchive's
 * pax writer then drops the hole bytes emit_extent hands it. */
static int sparse_map(struct ar *w, struct archive_entry *ae, const struct node_entry *e)
{
	struct sparse m;
	int r;
	memset(&m, 0, sizeof m);
	m.ae = ae;
	if ((r = node_bl_walk(rd_node, w->rd, e->child_type, e->child, e->size, sparse_extent,
			      &m)) < 0)
		return r;
	sparse_flush(&m);
	if (m.end < e->size)
		m.holes = 1;
	/* a map must name at least one run: a file of holes only gets an
	 * empty one at its end */
	if (m.holes && !m.runs)
		arc.entry_sparse_add_entry(ae, (la_int64_t)e->size, 0);
	if (!m.holes || m.too_many)
		arc.entry_sparse_clear(ae);
	return 0;
}

/* The current path, shortened to fit a message when very long. */
static void shown_path(const struct ar *w, char *shown, size_t cap)
{
	const char *p = (const char *)w->path.data;
	size_t n = w->path.len, half = (cap - 6) / 2;
	if (n < cap) {
		memcpy(shown, p, n);
		shown[n] = 0;
		return;
	}
	/* paths of deep trees outgrow PATH_MAX; a message need not */
	memcpy(shown, p, half);
	memcpy(shown + half, "/.../", 5);
	memcpy(shown + half + 5, p + n - half, half);
	shown[2 * half + 5] = 0;
}

/* A warning about the current path; the restore ends with exit status 3. */
static void ar_warn(struct ar *w, const char *msg)
{
	w->st->warnings++;
	w->partial = 1;
	if (!w->o->warn)
		return;
	char shown[4096 + 8];
	shown_path(w, shown, sizeof shown);
	w->o->warn(w->o->arg, shown, msg);
}

/* "restoring 'PATH': what failed" for the entry being written. */
static int path_err(const struct ar *w, int rc)
{
	char shown[400], msg[512];
	shown_path(w, shown, sizeof shown);
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(rc));
	return ferry_err(-rc, "restoring '%s': %s", shown, msg);
}

static int emit_entry(struct ar *w, const struct node_entry *e, int s)
{
	unsigned ut = w->o->untrusted;
	if ((ut & RESTORE_NO_DEVICES) && (e->ftype == NODE_F_CHR || e->ftype == NODE_F_BLK)) {
		ar_warn(w, "device node not restored (--no-devices)");
		return 0;
	}
	struct archive_entry *ae = arc.entry_new();
	char xn[NODE_XATTR_NAME_MAX + 1];
	int r = 0;
	if (!ae)
		return ferry_err(FERR_NOMEM, "writing an archive");
	if (fbuf_putc(&w->path, 0) < 0) {
		arc.entry_free(ae);
		return ferry_err(FERR_NOMEM, "writing an archive");
	}
	w->path.len--;
	arc.entry_copy_pathname(ae, (const char *)w->path.data);
	/* --no-setuid, --no-same-owner: the entries an extractor gets are
	 * those a tree restore would make */
	arc.entry_set_perm(ae, (ut & RESTORE_NO_SETUID) ? e->mode & ~(S_ISUID | S_ISGID)
								    : e->mode);
	arc.entry_set_uid(ae, (ut & RESTORE_NO_SAME_OWNER) ? geteuid() : e->uid);
	arc.entry_set_gid(ae, (ut & RESTORE_NO_SAME_OWNER) ? getegid() : e->gid);
	arc.entry_set_mtime(ae, (time_t)e->mtime_sec, (long)e->mtime_nsec);
	for (size_t i = 0; i < e->nxattr; i++) {
		memcpy(xn, e->xattrs[i].name, e->xattrs[i].name_len);
		xn[e->xattrs[i].name_len] = 0;
		if ((ut & RESTORE_NO_SETUID) && !strcmp(xn, "security.capability"))
			continue;
		arc.entry_xattr_add_entry(ae, xn, e->xattrs[i].value, e->xattrs[i].value_len);
	}
	const char *first = NULL;
	switch (e->ftype) {
	case NODE_F_DIR:
		arc.entry_set_filetype(ae, AE_IFDIR);
		w->st->dirs++;
		break;
	case NODE_F_REG:
		arc.entry_set_filetype(ae, AE_IFREG);
		for (size_t i = 0; e->link_id && i < w->nlinks; i++)
			if (w->links[i].id == e->link_id)
				first = w->links[i].path;
		if (first) {
			arc.entry_copy_hardlink(ae, first);
			arc.entry_set_size(ae, 0);
			w->st->hardlinks++;
		} else {
			arc.entry_set_size(ae, (la_int64_t)e->size);
			w->st->files++;
			if (strcmp(w->o->format, "zip") && e->size && e->child_type &&
			    (r = sparse_map(w, ae, e)) < 0)
				goto out;
		}
		break;
	case NODE_F_SYMLINK: {
		char t[NODE_TARGET_MAX + 1];
		memcpy(t, e->target, e->target_len);
		t[e->target_len] = 0;
		arc.entry_set_filetype(ae, AE_IFLNK);
		arc.entry_copy_symlink(ae, t);
		w->st->symlinks++;
		break;
	}
	default:
		arc.entry_set_filetype(ae, e->ftype == NODE_F_FIFO ? AE_IFIFO
					       : e->ftype == NODE_F_CHR ? AE_IFCHR : AE_IFBLK);
		arc.entry_set_rdev(ae, makedev(e->rdev_major, e->rdev_minor));
		w->st->specials++;
	}
	int hr = arc.write_header(w->a, ae);
	/* A name that is not UTF-8 cannot be translated for pax's UTF-8
	 * headers: libarchive then writes that one entry's names as bytes
	 * under hdrcharset=BINARY and warns. That loses nothing; any other
	 * warning or error does. (BINARY for every entry would keep names
	 * too, but GNU tar warns about the keyword once per entry.) */
	if (hr == ARCHIVE_WARN && arc.error_string(w->a) &&
	    !strncmp(arc.error_string(w->a), "Can't translate", 15))
		hr = ARCHIVE_OK;
	if (hr != ARCHIVE_OK) {
		r = ar_err(w, "writing an archive header");
		goto out;
	}
	if (e->ftype == NODE_F_REG && !first && e->size && e->child_type &&
	    (r = emit_data(w, e)) < 0)
		goto out;
	if (e->ftype == NODE_F_REG && e->link_id && !first) {
		if ((r = VEC_GROW(w->links, w->caplinks, w->nlinks, 64, "writing an archive")) < 0)
			goto out;
		if (!(w->links[w->nlinks].path = strdup((const char *)w->path.data))) {
			r = ferry_err(FERR_NOMEM, "writing an archive");
			goto out;
		}
		w->links[w->nlinks++].id = e->link_id;
	}
	if (e->ftype == NODE_F_DIR)
		r = 1; /* descend */
out:
	arc.entry_free(ae);
	(void)s;
	return r;
}

/* Writes the tree below root, depth first in name order. Iterative, so a
 * tree of any depth costs heap, not stack: one frame per directory on the
 * way down (its loaded entries). */
static int emit_tree(struct ar *w, const struct node_entry *root)
{
	struct eframe {
		struct node_dir d;
		size_t i;
		size_t path_len;
	} *st = NULL;
	size_t n = 0, cap = 0;
	int r;
	if ((r = VEC_GROW(st, cap, n, 64, "writing an archive")) < 0)
		return r;
	memset(&st[0], 0, sizeof st[0]);
	n = 1;
	if ((r = node_dir_load(rd_node, w->rd, root->child_type, root->child, &st[0].d)) < 0)
		goto out;
	while (n) {
		struct eframe *f = &st[n - 1];
		if (f->i == f->d.n) {
			node_dir_release(&f->d);
			n--;
			continue;
		}
		const struct node_entry *e = &f->d.ents[f->i++];
		w->path.len = f->path_len;
		if ((w->path.len && (r = fbuf_putc(&w->path, '/')) < 0) ||
		    (r = fbuf_append(&w->path, e->name, e->name_len)) < 0)
			goto out;
		/* only a corrupt pool holds anything deeper (see restore.c) */
		if (n - 1 > NODE_TREE_DEPTH_MAX) {
			r = ferry_err(FERR_CORRUPT, "the snapshot's tree is deeper than %d directory "
				      "levels", NODE_TREE_DEPTH_MAX);
			goto out;
		}
		int s = sel(w);
		if (!(s == 1 || (s == 2 && e->ftype == NODE_F_DIR)))
			continue;
		if ((r = emit_entry(w, e, s)) < 0) {
			r = path_err(w, r);
			goto out;
		}
		if (r == 1) {
			/* f may move: the stack grows */
			if ((r = VEC_GROW(st, cap, n, 64, "writing an archive")) < 0)
				goto out;
			struct eframe *k = &st[n++];
			memset(k, 0, sizeof *k);
			k->path_len = w->path.len;
			if ((r = node_dir_load(rd_node, w->rd, e->child_type, e->child, &k->d)) < 0)
				goto out;
		}
	}
	r = 0;
out:
	while (n)
		node_dir_release(&st[--n].d);
	free(st);
	return r;
}

int restore_archive(struct store_pool *p, struct store_reader *rd, const struct node_entry *root,
		    int kind, const struct restore_opts *o, struct restore_stats *st)
{
	struct ar w;
	locale_t utf8, old;
	int r = 0;
	memset(&w, 0, sizeof w);
	w.rd = rd;
	w.o = o;
	w.st = st;
	fbuf_init(&w.path, (size_t)1 << 24);
	if (kind != NODE_ROOT_FILESYSTEM)
		return ferry_err(FERR_UNSUPPORTED, "a volume restores to an image, not an archive");
	if ((r = arc_load()) < 0)
		return r;
	if (o->nfiles && !(w.found = calloc(o->nfiles, sizeof *w.found)))
		return ferry_err(FERR_NOMEM, "writing an archive");
	/* libarchive translates names from the locale's charset to pax's
	 * UTF-8: under a UTF-8 locale, a UTF-8 name goes as it is and only
	 * a name that is not UTF-8 gets hdrcharset=BINARY (see emit_entry).
	 * This thread only, for this call only; without C.UTF-8 every
	 * non-ASCII name goes as bytes, which loses nothing either. */
	utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	old = utf8 ? uselocale(utf8) : (locale_t)0;
	if (!(w.a = arc.write_new())) {
		r = ferry_err(FERR_NOMEM, "writing an archive");
		goto out;
	}
	int fr;
	/* tar and pax both write POSIX pax archives: only pax keeps nanosecond
	 * times of every entry, xattrs and non-UTF-8 names exactly. */
	if (!strcmp(o->format, "tar") || !strcmp(o->format, "pax"))
		fr = arc.write_set_format_pax(w.a);
	else if (!strcmp(o->format, "zip"))
		fr = arc.write_set_format_zip(w.a);
	else {
		r = ferry_err(FERR_INVAL, "unknown archive format '%s' (tar, pax, zip)", o->format);
		goto out;
	}
	/* xattrs under the SCHILY keywords GNU tar, bsdtar and Python's
	 * tarfile all know (not also as LIBARCHIVE.xattr, which GNU tar
	 * warns about once per entry) */
	if (fr == ARCHIVE_OK && strcmp(o->format, "zip") &&
	    arc.write_set_options(w.a, "xattrheader=SCHILY") < ARCHIVE_WARN)
		fr = ARCHIVE_FAILED;
	if (fr != ARCHIVE_OK || arc.write_open_fd(w.a, o->fd) != ARCHIVE_OK) {
		r = ar_err(&w, "opening the archive");
		goto out;
	}
	/* 32 blocks in flight, and the one being read */
	if ((r = pipeline_new(&w.pl, pipeline_threads(0), 33, sizeof(struct ajob), &ajob_ops, &w)) < 0)
		goto out;
	if ((r = emit_tree(&w, root)) < 0)
		goto out;
	for (size_t i = 0; i < o->nfiles; i++)
		if (!w.found[i]) {
			r = ferry_err(FERR_NOENT, "'%s' is not in the snapshot", o->files[i]);
			goto out;
		}
	if (arc.write_close(w.a) != ARCHIVE_OK)
		r = ar_err(&w, "closing the archive");
	else if (w.partial)
		r = ferry_err(FERR_PARTIAL, "restored with %llu warnings",
			      (unsigned long long)st->warnings);
out:
	pipeline_free(w.pl); /* before the archive its jobs write to */
	if (w.a)
		arc.write_free(w.a);
	for (size_t i = 0; i < w.nlinks; i++)
		free(w.links[i].path);
	free(w.links);
	free(w.found);
	free(w.buf);
	fbuf_release(&w.path);
	if (utf8) {
		uselocale(old);
		freelocale(utf8);
	}
	return r;
}
