/* capture/capture.c — capturing a directory tree or a volume image into a
 * snapshot: the entry point, which picks the tree walk (walk.c), the
 * volume reader (volume.c) or the archive reader (archive.c), and what all
 * stages of a tree or volume capture share: warnings, progress, the node
 * callbacks.
 *
 * The main thread walks the tree (openat/O_NOFOLLOW, one filesystem) and
 * reads files record by record, skipping holes with SEEK_DATA/SEEK_HOLE; the
 * hashing and compression of each record run on the worker pool (jobs.c),
 * and results come back in submission order, so each file's blocklist is
 * built in file order on the main thread, which alone talks to the writer
 * and catalogue. A directory's node is built once all jobs of its files are
 * collected.
 *
 * Incremental: entries of the dataset's newest snapshot are matched by name;
 * a regular file with the same size, mtime, ctime and inode keeps its
 * blocklist without being read or even opened in the catalogue: the new
 * snapshot takes over the base's block references at the end and
 * corrects them by what changed (store_writer_refs_since), so an
 * unchanged file costs its lstat. A directory whose entries all match its
 * previous version's, subdirectories' nodes included, keeps its previous
 * node without encoding or hashing it again. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int cap_put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	struct cap *c = arg;
	return store_writer_put_node(c->w, type, data, len, hash);
}

int cap_rd_node(void *arg, const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out)
{
	return store_node_read(arg, hash, type, out);
}

/* A warning names at most this much of a path: its start and its end. */
#define WARN_PATH_MAX 4096

void cap_warn(struct cap *c, const char *msg, int unreadable)
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

void cap_progress(struct cap *c, int force)
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

/* ---- entry points --------------------------------------------------------------------- */

static int old_root(struct cap *c, int *kind, struct node_dir *od, int *have, uint8_t *old_type,
		    uint8_t *old_hash)
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
	c->have_base = 1;
	c->base_id = s.id;
	memcpy(c->base_root, s.root, FERRY_HASH_LEN);
	if (*kind == NODE_ROOT_FILESYSTEM) {
		if ((r = node_dir_load(cap_rd_node, c->rd, e.child_type, e.child, od)) < 0)
			goto out;
		*have = 1;
		*old_type = e.child_type;
		memcpy(old_hash, e.child, FERRY_HASH_LEN);
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
	uint8_t old_type = 0, old_hash[FERRY_HASH_LEN];
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
	if ((r = old_root(c, &kind, &od, &have, &old_type, old_hash)) < 0 ||
	    (r = cap_stat_ahead_new(c)) < 0)
		goto out;
	cap_entry_from_stat(&ce.e, &sb);
	ce.e.ftype = NODE_F_DIR;
	if ((r = cap_read_xattrs(c, fd, NULL, &ce)) < 0)
		goto out;
	r = cap_walk(c, fd, &od, have, old_type, old_hash, &ce.e.child_type, ce.e.child);
	fd = -1; /* the walk's stack took it */
	if (r < 0 || (r = cap_drain(c)) < 0)
		goto out;
	if ((r = node_root_encode(&rb, NODE_ROOT_FILESYSTEM, &ce.e)) < 0)
		goto out;
	r = store_writer_put_node(c->w, NODE_EXT, rb.data, rb.len, root);
out:
	if (fd >= 0)
		close(fd);
	cap_stat_ahead_free(c);
	cap_centry_release(&ce);
	node_dir_release(&od);
	fbuf_release(&rb);
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
	/* no from: the dataset's current state (cap_current) */
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
		if ((r = cap_current(&c, root)) < 0)
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
		/* jobs in flight: CAP_WINDOW bytes of them (data and scratch),
		 * but at least two per worker and one being collected, so no
		 * worker waits for the main thread */
		unsigned nthreads = pipeline_threads(o->threads);
		unsigned inflight = (unsigned)(CAP_WINDOW / (2 * c.jobcap));
		if (inflight < 2 * nthreads + 1)
			inflight = 2 * nthreads + 1;
		/* one slot more than in flight: the one the walk is filling */
		if ((r = pipeline_new(&c.pl, nthreads, inflight + 1,
				      sizeof(struct job), &cap_job_ops, &c)) < 0)
			goto out;
		if (ds->type == STORE_DS_VOLUME)
			r = cap_volume(&c, from, root);
		else
			r = capture_tree(&c, from, root);
		if (r < 0)
			goto out;
	}
	if (c.have_base && (r = store_writer_refs_since(c.w, c.base_id, c.base_root, root, NULL, NULL)) < 0)
		goto out;
	if (o->count_blocks && (r = store_writer_nrefs(c.w, &st->blocks_total)) < 0)
		goto out;
	store_writer_counters(c.w, &st->blocks_written, &st->bytes_written);
	cap_progress(&c, 1);
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
		cap_cdir_free(&c, c.pending);
	for (size_t i = 0; i < c.nframes; i++)
		cap_frame_release(&c.frames[i]);
	free(c.frames);
	dirstack_release(&c.dirs);
	free(c.links);
	store_reader_free(c.rd);
	store_writer_free(c.w);
	fbuf_release(&c.path);
	return r;
}
