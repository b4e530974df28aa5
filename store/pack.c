/* store/pack.c — the block store: append-only pack files under packs/ and
 * their index in the catalogue.
 *
 * A pack is PACK_HDR_LEN bytes of header ("FRYPACK1", le32 version 1, le32
 * zero) followed by blocks, each self-describing:
 *   le32 "FBLK", u8 codec id, u8 level, le16 0, le32 lsize, le32 psize,
 *   32-byte BLAKE2b-256 of the logical content, then psize payload bytes,
 * so the index can be rebuilt from the packs alone. A writer never appends
 * to a pack another writer made, and a pack's bytes are fsynced before the
 * catalogue transaction that names them commits; a crash leaves at worst
 * pack bytes nobody references, which gc removes.
 *
 * What a writer has stored but not committed lives in TEMP tables of the
 * pool's connection (w_new, w_nodes, w_refs), so memory stays bounded
 * however large the snapshot; TEMP tables take no lock on the catalogue. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define WBUF_SIZE ((size_t)4 << 20)
#define BATCH_OPS 4096

/* ---- headers ------------------------------------------------------------------ */

void pack_blk_hdr_put(uint8_t *h, struct codec_spec c, uint32_t lsize, uint32_t psize,
		      const uint8_t hash[FERRY_HASH_LEN])
{
	put_le32(h, PACK_BLK_MAGIC);
	h[4] = c.id;
	h[5] = c.level;
	put_le16(h + 6, 0);
	put_le32(h + 8, lsize);
	put_le32(h + 12, psize);
	memcpy(h + 16, hash, FERRY_HASH_LEN);
}

int pack_blk_hdr_get(const uint8_t *h, struct codec_spec *c, uint32_t *lsize, uint32_t *psize,
		     uint8_t hash[FERRY_HASH_LEN])
{
	if (get_le32(h) != PACK_BLK_MAGIC || get_le16(h + 6) != 0)
		return ferry_err(FERR_CORRUPT, "bad block header in pack");
	struct codec_spec cs = {h[4], h[5]};
	uint32_t ls = get_le32(h + 8), ps = get_le32(h + 12);
	if (ls == 0 || ls > STORE_BLOCK_MAX || ps == 0 || ps > ls)
		return ferry_err(FERR_CORRUPT, "block header in pack has sizes %" PRIu32 "/%" PRIu32,
				 ls, ps);
	if (cs.id == CODEC_OFF ? (cs.level != 0 || ps != ls) : !codec_valid(cs))
		return ferry_err(FERR_CORRUPT, "block header in pack has codec %u/%u", cs.id,
				 cs.level);
	*c = cs;
	*lsize = ls;
	*psize = ps;
	memcpy(hash, h + 16, FERRY_HASH_LEN);
	return 0;
}

void pack_path(const struct store_pool *p, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s/%s", p->path, PACK_DIR, name);
}

int pack_lock(struct store_pool *p, int exclusive, int *fd)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", p->path, PACK_GC_LOCK);
	int f = -1, r;
	if ((r = io_open_create(path, O_RDWR, 0600, &f)) < 0)
		return r;
	int how = exclusive ? LOCK_EX | LOCK_NB : LOCK_SH;
	while (flock(f, how) != 0) {
		if (errno == EINTR)
			continue;
		int e = errno;
		close(f);
		if (e == EWOULDBLOCK)
			return act_busy(p, ACT_GCLOCK);
		return ferry_err_errno(e, "cannot lock '%s'", path);
	}
	*fd = f;
	return 0;
}

int pack_create(struct store_pool *p, int *fd, char name[32])
{
	char path[PATH_MAX];
	uint8_t hdr[PACK_HDR_LEN];
	for (int tries = 0; tries < 8; tries++) {
		snprintf(name, 32, "%016" PRIx64 ".pack", ferry_random_guid());
		pack_path(p, name, path, sizeof path);
		int f = -1;
		int r = io_open_create(path, O_RDWR | O_EXCL | O_APPEND, 0600, &f);
		if (r == -FERR_EXISTS)
			continue;
		if (r < 0)
			return r;
		memcpy(hdr, PACK_MAGIC, 8);
		put_le32(hdr + 8, 1);
		put_le32(hdr + 12, 0);
		r = io_write_full(f, hdr, sizeof hdr);
		if (r < 0) {
			struct ferry_errsave e;
			close(f);
			ferry_err_save(&e);
			if (io_unlink(path) < 0) { /* an orphan for the next sweep */ }
			ferry_err_restore(&e);
			return r;
		}
		*fd = f;
		return 0;
	}
	return ferry_err(FERR_EXISTS, "cannot find a free pack name");
}

/* ---- preparing blocks (thread-safe, no pool) ------------------------------------ */

/* The storage rule for src, whose hash is already in out->hash. */
static int prepare_rule(struct codec_spec policy, const void *src, size_t lsize, void *scratch,
			size_t scratch_cap, struct store_block *out)
{
	size_t psize = 0;
	enum block_form form;
	int r;
	if ((r = codec_store_block(policy, src, lsize, scratch, scratch_cap, &psize, &form)) < 0)
		return r;
	out->form = form;
	out->lsize = (uint32_t)lsize;
	switch (form) {
	case BLOCK_HOLE:
		out->codec = policy;
		out->psize = 0;
		out->payload = NULL;
		break;
	case BLOCK_RAW:
		out->codec = (struct codec_spec){CODEC_OFF, 0};
		out->psize = (uint32_t)lsize;
		out->payload = src;
		break;
	default:
		out->codec = policy;
		out->psize = (uint32_t)psize;
		out->payload = scratch;
		break;
	}
	return 0;
}

int store_block_prepare(struct codec_spec policy, const void *src, size_t lsize,
			void *scratch, size_t scratch_cap, struct store_block *out)
{
	if (lsize == 0 || lsize > STORE_BLOCK_MAX)
		return ferry_err(FERR_INVAL, "block of %zu bytes", lsize);
	hash_blake2b(out->hash, src, lsize);
	return prepare_rule(policy, src, lsize, scratch, scratch_cap, out);
}

int store_block_prepare_known(struct codec_spec policy, const void *src, size_t lsize,
			      const uint8_t hash[FERRY_HASH_LEN], void *scratch, size_t scratch_cap,
			      struct store_block *out)
{
	if (lsize == 0 || lsize > STORE_BLOCK_MAX)
		return ferry_err(FERR_INVAL, "block of %zu bytes", lsize);
	memcpy(out->hash, hash, FERRY_HASH_LEN);
	return prepare_rule(policy, src, lsize, scratch, scratch_cap, out);
}

int store_block_prepare_record(struct codec_spec policy, const void *src, size_t lsize,
			const uint8_t *hash, void *scratch, size_t scratch_cap,
			struct store_block *out)
{
	int r = hash ? store_block_prepare_known(policy, src, lsize, hash, scratch, scratch_cap, out)
		     : store_block_prepare(policy, src, lsize, scratch, scratch_cap, out);
	if (r < 0)
		return r;
	/* only raw blocks can be all zero here (the codec rule made any other
	 * zero record a hole); the scan stops at the first nonzero byte */
	if (out->form == BLOCK_RAW && codec_is_zero(src, lsize)) {
		out->form = BLOCK_HOLE;
		out->codec = policy;
		out->psize = 0;
		out->payload = NULL;
	}
	return 0;
}

int store_block_prepare_encoded(struct codec_spec c, const void *payload, size_t psize,
				size_t lsize, const uint8_t hash[FERRY_HASH_LEN],
				void *scratch, size_t scratch_cap, struct store_block *out)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (lsize == 0 || lsize > STORE_BLOCK_MAX || psize == 0 || psize > lsize ||
	    scratch_cap < lsize)
		return ferry_err(FERR_CORRUPT, "encoded block of %zu/%zu bytes", psize, lsize);
	if (c.id == CODEC_OFF) {
		if (c.level != 0 || psize != lsize)
			return ferry_err(FERR_CORRUPT, "raw block with psize %zu != lsize %zu", psize,
					 lsize);
		hash_blake2b(h, payload, lsize);
	} else {
		if (!codec_valid(c))
			return ferry_err(FERR_UNSUPPORTED, "unknown codec %u/%u", c.id, c.level);
		/* Strict: the payload is about to be kept as it is, so it must be
		 * one any reader of its codec accepts, not just ours. */
		if ((r = codec_decode_strict(c, payload, psize, scratch, lsize)) < 0)
			return r;
		hash_blake2b(h, scratch, lsize);
	}
	if (ferry_memcmp_ct(h, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "block content does not match its hash");
	memcpy(out->hash, hash, FERRY_HASH_LEN);
	out->codec = c;
	out->form = c.id == CODEC_OFF ? BLOCK_RAW : BLOCK_COMPRESSED;
	out->lsize = (uint32_t)lsize;
	out->psize = (uint32_t)psize;
	out->payload = payload;
	return 0;
}

/* ---- the writer ------------------------------------------------------------------ */

struct wpack {
	char name[32];
	int fd;
};

/* The flusher: one thread that writes full buffers to the open pack while
 * the caller fills the other buffer, so the kernel's copy into the page cache
 * and the start of writeback overlap hashing and compression instead of
 * stalling the one thread that orders blocks. At most one buffer is in
 * flight; its outcome (an error code and message) is picked up by the next
 * flush or wait. */
struct flusher {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started, busy, quit;
	const uint8_t *data; /* the buffer in flight */
	size_t len;
	int fd;
	char pack[32];
	int err;             /* 0 or a negative FERR_* */
	char msg[256];
};

struct store_writer {
	struct store_pool *p;
	struct flusher fl;
	uint8_t *buf2;       /* the buffer not being filled */
	int lock_fd;
	struct wpack *packs; /* packs written since the last commit; the last is open */
	size_t npacks, cap;
	int cur;             /* index of the open pack, or -1 */
	uint64_t cur_size;   /* its size including buffered bytes */
	uint8_t *buf;
	size_t buflen;
	int in_batch;
	int lost;            /* -FERR_*: the pending rows were lost (see batch_lost) */
	unsigned batch_ops;
	int last;            /* store_writer_last: the next commit is the last one */
	int counted;         /* in catvfs_writers */
	int act;             /* in the pool's activity record (act_begin) */
	uint64_t blocks, bytes;
	sqlite3_stmt *st_has_main, *st_has_new, *st_ins_new, *st_ins_ref, *st_any_main,
		*st_any_new, *st_node_main, *st_ins_node, *st_ref_main;
};

static const char temp_schema[] =
	"CREATE TEMP TABLE IF NOT EXISTS w_new(hash BLOB NOT NULL, codec INTEGER NOT NULL,"
	"  level INTEGER NOT NULL, pack TEXT NOT NULL, offset INTEGER NOT NULL,"
	"  psize INTEGER NOT NULL, lsize INTEGER NOT NULL,"
	"  PRIMARY KEY(hash, codec, level)) WITHOUT ROWID;"
	"CREATE TEMP TABLE IF NOT EXISTS w_nodes(hash BLOB PRIMARY KEY, type INTEGER NOT NULL,"
	"  data BLOB NOT NULL);"
	"CREATE TEMP TABLE IF NOT EXISTS w_refs(hash BLOB NOT NULL, codec INTEGER NOT NULL,"
	"  level INTEGER NOT NULL, PRIMARY KEY(hash, codec, level)) WITHOUT ROWID;"
	"DELETE FROM temp.w_new; DELETE FROM temp.w_nodes; DELETE FROM temp.w_refs;";

static void writer_finalize(struct store_writer *w)
{
	sqlite3_stmt **sts[] = {&w->st_has_main, &w->st_has_new, &w->st_ins_new, &w->st_ins_ref,
				&w->st_any_main, &w->st_any_new, &w->st_node_main,
				&w->st_ins_node, &w->st_ref_main};
	for (size_t i = 0; i < sizeof sts / sizeof sts[0]; i++) {
		sqlite3_finalize(*sts[i]);
		*sts[i] = NULL;
	}
}

static void *flusher_main(void *arg)
{
	struct flusher *f = arg;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (!f->busy && !f->quit)
			pthread_cond_wait(&f->cv, &f->mu);
		if (!f->busy)
			break;
		pthread_mutex_unlock(&f->mu);
		int r = io_write_full(f->fd, f->data, f->len);
		/* Start writing these bytes back now, without waiting, so the
		 * fsync before the commit finds little left to do: the disk
		 * works while the workers compress. Durability still comes from
		 * that fsync. */
		if (r == 0 && sync_file_range(f->fd, 0, 0, SYNC_FILE_RANGE_WRITE) != 0) {
			/* not supported here: the final fsync does all the work */
		}
		pthread_mutex_lock(&f->mu);
		if (r < 0 && !f->err) {
			f->err = r;
			snprintf(f->msg, sizeof f->msg, "writing pack '%s': %s", f->pack,
				 ferry_errmsg(r));
		}
		f->busy = 0;
		pthread_cond_broadcast(&f->cv);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Waits until no buffer is in flight; returns (and clears) the error of the
 * last one, raised again on this thread. */
static int flusher_wait(struct store_writer *w)
{
	struct flusher *f = &w->fl;
	int r;
	if (!f->started)
		return 0;
	pthread_mutex_lock(&f->mu);
	while (f->busy)
		pthread_cond_wait(&f->cv, &f->mu);
	r = f->err;
	f->err = 0;
	pthread_mutex_unlock(&f->mu);
	return r < 0 ? ferry_err(-r, "%s", f->msg) : 0;
}

static void flusher_stop(struct store_writer *w)
{
	struct flusher *f = &w->fl;
	if (!f->started)
		return;
	pthread_mutex_lock(&f->mu);
	f->quit = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thr, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	f->started = 0;
}

/* For the paths that give back space on an error: unlinks and syncs
 * without touching the thread's error detail, which still describes the
 * failure being reported. What cannot be removed now is an orphan for the
 * next sweep. */
static int unlink_quiet(struct store_pool *p, const char *name)
{
	struct ferry_errsave e;
	char path[PATH_MAX];
	pack_path(p, name, path, sizeof path);
	ferry_err_save(&e);
	int r = io_unlink(path);
	ferry_err_restore(&e);
	return r == 0;
}

static void sync_packdir_quiet(struct store_pool *p)
{
	struct ferry_errsave e;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	ferry_err_save(&e);
	if (io_fsync_dir(dir) < 0) { /* a crash may bring the files back: orphans */ }
	ferry_err_restore(&e);
}

/* Closes the writer's packs since its last commit. With drop, the writer
 * gives back what it wrote: those packs are nobody's (not in the
 * catalogue: commit and writer_persist empty the list once they are) and
 * are unlinked, so a failed capture or receive does not leave its bytes
 * filling the disk until the next gc. */
static void close_packs(struct store_writer *w, int drop)
{
	int removed = 0;
	struct ferry_errsave e;
	/* the packs are being abandoned: a flush error does not matter, and
	 * must not replace the error being reported */
	ferry_err_save(&e);
	if (flusher_wait(w) < 0) { /* see above */ }
	ferry_err_restore(&e);
	for (size_t i = 0; i < w->npacks; i++) {
		if (w->packs[i].fd >= 0)
			close(w->packs[i].fd);
		if (drop)
			removed |= unlink_quiet(w->p, w->packs[i].name);
	}
	if (removed)
		sync_packdir_quiet(w->p);
	w->npacks = 0;
	w->cur = -1;
	w->cur_size = 0;
	w->buflen = 0;
}

/* After a commit of the writer's packs: when that commit was nested in a
 * transaction still open, the packs are the catalogue's only if that one
 * commits, so the pool takes them over (and a share of the gc lock, so no
 * orphan sweep can remove them meanwhile); see pack_tx_end. */
static void writer_handoff(struct store_writer *w)
{
	struct store_pool *p = w->p;
	if (p->tx_depth > 0 && w->npacks) {
		if (p->tx_lock_fd < 0 && w->lock_fd >= 0)
			p->tx_lock_fd = fcntl(w->lock_fd, F_DUPFD_CLOEXEC, 0);
		for (size_t i = 0; i < w->npacks; i++) {
			if (p->ntx_packs == p->cap_tx_packs) {
				size_t nc = p->cap_tx_packs ? 2 * p->cap_tx_packs : 8;
				void *nv = realloc(p->tx_packs, nc * sizeof *p->tx_packs);
				if (!nv)
					break; /* untracked: an orphan for the next sweep */
				p->tx_packs = nv;
				p->cap_tx_packs = nc;
			}
			memcpy(p->tx_packs[p->ntx_packs++], w->packs[i].name, 32);
		}
	}
	close_packs(w, 0);
}

void pack_tx_end(struct store_pool *p, int committed)
{
	int removed = 0;
	for (size_t i = 0; i < p->ntx_packs; i++)
		if (!committed)
			removed |= unlink_quiet(p, p->tx_packs[i]);
	if (removed)
		sync_packdir_quiet(p);
	p->ntx_packs = 0;
	if (p->tx_lock_fd >= 0)
		close(p->tx_lock_fd);
	p->tx_lock_fd = -1;
}

int pack_unlink(struct store_pool *p, const char *name, int sync)
{
	char path[PATH_MAX], dir[PATH_MAX];
	pack_path(p, name, path, sizeof path);
	int r = io_unlink(path);
	if (r == -FERR_NOENT)
		ferry_err_clear();
	else if (r < 0)
		return r;
	if (!sync)
		return 0;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	return io_fsync_dir(dir);
}

int pack_sweep_orphans(struct store_pool *p, uint64_t *removed)
{
	char dir[PATH_MAX];
	sqlite3_stmt *st = NULL;
	uint64_t n = 0;
	int r;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot read '%s'", dir);
	if ((r = cat_prepare(p, "SELECT 1 FROM packs WHERE name = ?", &st)) < 0) {
		closedir(d);
		return r;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		/* deleting is decided on this lookup alone: a bind that failed
		 * (no memory) would look up NULL and find nothing, so it stops
		 * the sweep rather than let a live pack go */
		sqlite3_reset(st);
		if (sqlite3_bind_text(st, 1, de->d_name, -1, SQLITE_STATIC) != SQLITE_OK) {
			r = cat_err(p, "listing packs");
			break;
		}
		int s = sqlite3_step(st);
		if (s == SQLITE_ROW)
			continue;
		if (s != SQLITE_DONE) {
			r = cat_err(p, "listing packs");
			break;
		}
		if (io_unlinkat(dirfd(d), de->d_name, dir) == 0)
			n++;
		else
			ferry_err_clear(); /* left for the next sweep */
	}
	sqlite3_finalize(st);
	closedir(d);
	if (r == 0 && n)
		r = io_fsync_dir(dir);
	if (removed)
		*removed = n;
	return r;
}

/* The gc lock for a new writer, shared. When it can be had exclusively
 * instead, no writer or reader is alive anywhere (each holds it shared
 * from before it creates a pack until after its commit or end), so a pack
 * the catalogue does not name is a killed writer's: those are swept
 * first, and the lock is then turned into a shared one. */
static int writer_lock(struct store_pool *p, int *fd)
{
	char path[PATH_MAX];
	int r, f;
	if (pack_lock(p, 1, &f) < 0) {
		ferry_err_clear();
		return pack_lock(p, 0, fd);
	}
	if ((r = pack_sweep_orphans(p, NULL)) < 0) {
		close(f);
		return r;
	}
	while (flock(f, LOCK_SH) != 0) {
		if (errno == EINTR)
			continue;
		snprintf(path, sizeof path, "%s/%s", p->path, PACK_GC_LOCK);
		r = ferry_err_errno(errno, "cannot lock '%s'", path);
		close(f);
		return r;
	}
	*fd = f;
	return 0;
}

int store_writer_new(struct store_pool *p, struct store_writer **out)
{
	struct store_writer *w = calloc(1, sizeof *w);
	int r;
	if (!w || !(w->buf = malloc(WBUF_SIZE)) || !(w->buf2 = malloc(WBUF_SIZE))) {
		if (w)
			free(w->buf);
		free(w);
		return ferry_err(FERR_NOMEM, "creating a pack writer");
	}
	w->p = p;
	w->cur = -1;
	w->lock_fd = -1;
	act_begin(p);
	w->act = 1;
	if (p->flags & STORE_OPEN_RDONLY) {
		r = ferry_err(FERR_PERM, "pool '%s' is open read-only", p->name);
		goto fail;
	}
	if ((r = writer_lock(p, &w->lock_fd)) < 0)
		goto fail;
	/* captures and receives never eat into the reserve: they start only
	 * with it whole, and their catalogue writes do not draw on it */
	catvfs_writers(p->site, 1);
	w->counted = 1;
	if ((r = reserve_ensure(p, RESERVE_STRICT)) < 0)
		goto fail;
	if ((r = cat_exec(p, temp_schema)) < 0)
		goto fail;
	if ((r = cat_prepare(p, "SELECT 1 FROM main.blocks WHERE hash = ? AND codec = ? AND level = ?",
			     &w->st_has_main)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM temp.w_new WHERE hash = ? AND codec = ? AND level = ?",
			     &w->st_has_new)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.w_new(hash, codec, level, pack, offset,"
				" psize, lsize)"
				" VALUES(?, ?, ?, ?, ?, ?, ?)", &w->st_ins_new)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level) VALUES(?, ?, ?)",
			     &w->st_ins_ref)) < 0 ||
	    (r = cat_prepare(p, "SELECT codec, level FROM main.blocks WHERE hash = ? LIMIT 1",
			     &w->st_any_main)) < 0 ||
	    (r = cat_prepare(p, "SELECT codec, level FROM temp.w_new WHERE hash = ? LIMIT 1",
			     &w->st_any_new)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM main.nodes WHERE hash = ?", &w->st_node_main)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.w_nodes(hash, type, data) VALUES(?, ?, ?)",
			     &w->st_ins_node)) < 0 ||
	    (r = cat_prepare(p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level)"
				" SELECT hash, codec, level FROM main.blocks WHERE hash = ? LIMIT 1",
			     &w->st_ref_main)) < 0)
		goto fail;
	*out = w;
	return 0;
fail:
	store_writer_free(w);
	return r;
}

/* The writer's pending rows (and every TEMP row written in the same batch,
 * such as recv's object sets) are lost when SQLite rolls the batch back by
 * itself, which it may do after a failed statement (no memory, disk full,
 * an I/O error), or when its COMMIT fails. A writer that lost them would
 * commit a snapshot missing block references (gc would then free live
 * blocks) or save a partial receive that does not resume: from then on
 * every call fails with the error, sticky. */
static int batch_lost(struct store_writer *w)
{
	if (!w->lost && w->in_batch && sqlite3_get_autocommit(w->p->db)) {
		w->in_batch = 0;
		w->batch_ops = 0;
		w->lost = -FERR_CATALOG;
	}
	if (w->lost)
		return ferry_err(-w->lost, "pool '%s': the rows of the snapshot being written were "
				 "lost when the catalogue rolled back a failed statement", w->p->name);
	return 0;
}

static void batch_end(struct store_writer *w, int commit)
{
	if (!w->in_batch)
		return;
	if (batch_lost(w) < 0)
		return;
	if (cat_exec(w->p, commit ? "COMMIT" : "ROLLBACK") < 0) {
		/* a ROLLBACK's failure loses nothing it was not dropping */
		ferry_err_clear();
		if (commit && !w->lost)
			w->lost = -FERR_CATALOG;
	}
	w->in_batch = 0;
	w->batch_ops = 0;
}

int store_writer_intact(struct store_writer *w)
{
	return batch_lost(w);
}

/* Groups TEMP-table inserts into transactions of BATCH_OPS statements; a
 * plain BEGIN takes no lock on the main catalogue until it writes to it. */
static int batch_op(struct store_writer *w)
{
	int r;
	if ((r = batch_lost(w)) < 0)
		return r;
	if (w->in_batch && ++w->batch_ops >= BATCH_OPS)
		batch_end(w, 1);
	if (!w->in_batch && w->p->tx_depth == 0) {
		if ((r = cat_exec(w->p, "BEGIN")) < 0)
			return r;
		w->in_batch = 1;
	}
	return 0;
}

void store_writer_free(struct store_writer *w)
{
	if (!w)
		return;
	batch_end(w, 0);
	writer_finalize(w);
	/* The TEMP rows left behind are harmless: the next writer on this
	 * connection clears them first (temp_schema), and closing the pool
	 * drops them; clearing them here would cost a walk of every page. */
	close_packs(w, 1);
	flusher_stop(w);
	free(w->packs);
	if (w->lock_fd >= 0)
		close(w->lock_fd);
	if (w->counted)
		catvfs_writers(w->p->site, -1);
	if (w->act)
		act_end(w->p);
	free(w->buf);
	free(w->buf2);
	free(w);
}

/* Hands the filled buffer to the flusher (started on first use) and goes on
 * with the other one; the bytes reach the pack in the order they were put. */
static int flush_buf(struct store_writer *w)
{
	struct flusher *f = &w->fl;
	int r;
	if (!w->buflen)
		return 0;
	if (!f->started) {
		if (pthread_mutex_init(&f->mu, NULL) != 0)
			return ferry_err(FERR_NOMEM, "starting the pack flusher");
		if (pthread_cond_init(&f->cv, NULL) != 0) {
			pthread_mutex_destroy(&f->mu);
			return ferry_err(FERR_NOMEM, "starting the pack flusher");
		}
		if (pthread_create(&f->thr, NULL, flusher_main, f) != 0) {
			pthread_cond_destroy(&f->cv);
			pthread_mutex_destroy(&f->mu);
			return ferry_err(FERR_NOMEM, "starting the pack flusher");
		}
		f->started = 1;
	}
	if ((r = flusher_wait(w)) < 0)
		return r;
	pthread_mutex_lock(&f->mu);
	f->data = w->buf;
	f->len = w->buflen;
	f->fd = w->packs[w->cur].fd;
	snprintf(f->pack, sizeof f->pack, "%s", w->packs[w->cur].name);
	f->busy = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	uint8_t *t = w->buf;
	w->buf = w->buf2;
	w->buf2 = t;
	w->buflen = 0;
	return 0;
}

static int open_new_pack(struct store_writer *w)
{
	int r;
	if (w->cur >= 0 && (r = flush_buf(w)) < 0)
		return r;
	int grown = VEC_GROW(w->packs, w->cap, w->npacks, 4, "opening a pack");
	if (grown < 0)
		return grown;
	struct wpack *k = &w->packs[w->npacks];
	if ((r = pack_create(w->p, &k->fd, k->name)) < 0)
		return r;
	w->cur = (int)w->npacks++;
	w->cur_size = PACK_HDR_LEN;
	return 0;
}

static int bind_hash_codec(sqlite3_stmt *st, const uint8_t *hash, struct codec_spec c)
{
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, c.id);
	sqlite3_bind_int(st, 3, c.level);
	return 0;
}

static int step_exists(struct store_pool *p, sqlite3_stmt *st, const char *what)
{
	int s = sqlite3_step(st);
	int r = s == SQLITE_ROW ? 1 : s == SQLITE_DONE ? 0 : cat_err(p, what);
	sqlite3_reset(st);
	return r;
}

int store_writer_has(struct store_writer *w, const uint8_t hash[FERRY_HASH_LEN],
		     struct codec_spec c)
{
	int r;
	bind_hash_codec(w->st_has_new, hash, c);
	if ((r = step_exists(w->p, w->st_has_new, "looking up a block")) != 0)
		return r;
	bind_hash_codec(w->st_has_main, hash, c);
	return step_exists(w->p, w->st_has_main, "looking up a block");
}

static int add_ref(struct store_writer *w, const uint8_t *hash, struct codec_spec c)
{
	int r;
	if ((r = batch_op(w)) < 0)
		return r;
	bind_hash_codec(w->st_ins_ref, hash, c);
	r = sqlite3_step(w->st_ins_ref) == SQLITE_DONE ? 0 : cat_err(w->p, "recording a block");
	sqlite3_reset(w->st_ins_ref);
	return r;
}

/* A full disk says so in one line, whichever write found it. */
static int writer_err(struct store_writer *w, int r)
{
	return r == -FERR_NOSPC ? pool_nospace(w->p) : r;
}

static int writer_put(struct store_writer *w, const struct store_block *b, int *stored);

int store_writer_put(struct store_writer *w, const struct store_block *b, int *stored)
{
	return writer_err(w, writer_put(w, b, stored));
}

static int writer_put(struct store_writer *w, const struct store_block *b, int *stored)
{
	uint8_t hdr[PACK_BLK_HDR_LEN];
	int r;
	if (stored)
		*stored = 0;
	if (b->form == BLOCK_HOLE)
		return 0;
	if (b->psize == 0 || b->psize > b->lsize || b->lsize > STORE_BLOCK_MAX)
		return ferry_err(FERR_INVAL, "block sizes %u/%u", b->psize, b->lsize);
	bind_hash_codec(w->st_has_main, b->hash, b->codec);
	if ((r = step_exists(w->p, w->st_has_main, "looking up a block")) < 0)
		return r;
	if (r == 1)
		return add_ref(w, b->hash, b->codec);
	if (w->cur < 0 || w->cur_size >= PACK_TARGET_SIZE)
		if ((r = open_new_pack(w)) < 0)
			return r;
	uint64_t off = w->cur_size;
	/* The row first: when this writer already holds the block the INSERT
	 * OR IGNORE changes nothing and no byte is written. */
	if ((r = batch_op(w)) < 0)
		return r;
	sqlite3_stmt *st = w->st_ins_new;
	bind_hash_codec(st, b->hash, b->codec);
	sqlite3_bind_text(st, 4, w->packs[w->cur].name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)off);
	sqlite3_bind_int64(st, 6, b->psize);
	sqlite3_bind_int64(st, 7, b->lsize);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(w->p, "recording a block");
	sqlite3_reset(st);
	if (r < 0)
		return r;
	if (sqlite3_changes(w->p->db) == 0)
		return add_ref(w, b->hash, b->codec);
	pack_blk_hdr_put(hdr, b->codec, b->lsize, b->psize, b->hash);
	size_t need = PACK_BLK_HDR_LEN + (size_t)b->psize;
	if (w->buflen + need > WBUF_SIZE && (r = flush_buf(w)) < 0)
		return r;
	if (need > WBUF_SIZE) {
		if ((r = flusher_wait(w)) < 0 ||
		    (r = io_write_full(w->packs[w->cur].fd, hdr, sizeof hdr)) < 0 ||
		    (r = io_write_full(w->packs[w->cur].fd, b->payload, b->psize)) < 0)
			return r;
	} else {
		memcpy(w->buf + w->buflen, hdr, sizeof hdr);
		memcpy(w->buf + w->buflen + sizeof hdr, b->payload, b->psize);
		w->buflen += need;
	}
	w->cur_size += need;
	w->blocks++;
	w->bytes += need;
	if (stored)
		*stored = 1;
	return add_ref(w, b->hash, b->codec);
}

int store_writer_ref(struct store_writer *w, const uint8_t hash[FERRY_HASH_LEN])
{
	int r;
	/* The common case in one statement: a committed copy, not yet
	 * referenced. Anything else (already referenced, or only in this
	 * writer) takes the two lookups below. */
	if ((r = batch_op(w)) < 0)
		return r;
	sqlite3_reset(w->st_ref_main);
	sqlite3_bind_blob(w->st_ref_main, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	r = sqlite3_step(w->st_ref_main);
	sqlite3_reset(w->st_ref_main);
	if (r != SQLITE_DONE)
		return cat_err(w->p, "recording a block");
	if (sqlite3_changes(w->p->db) == 1)
		return 0;
	sqlite3_stmt *sts[2] = {w->st_any_main, w->st_any_new}; /* committed copies are the common case */
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *st = sts[i];
		sqlite3_reset(st);
		sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
		int s = sqlite3_step(st);
		if (s == SQLITE_ROW) {
			struct codec_spec c = {(uint8_t)sqlite3_column_int(st, 0),
					       (uint8_t)sqlite3_column_int(st, 1)};
			sqlite3_reset(st);
			return add_ref(w, hash, c);
		}
		sqlite3_reset(st);
		if (s != SQLITE_DONE)
			return cat_err(w->p, "looking up a block");
	}
	char hex[FERRY_HASH_HEX];
	hash_to_hex(hash, hex);
	return ferry_err(FERR_NOENT, "block %s is not in the pool", hex);
}

int store_writer_put_node(struct store_writer *w, int type, const void *data, size_t len,
			  uint8_t hash_out[FERRY_HASH_LEN])
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (type < 1 || type > 4 || len > NODE_MAX)
		return ferry_err(FERR_INVAL, "node of type %d and %zu bytes", type, len);
	node_hash(type, data, len, h);
	/* One this writer already holds is ignored by the INSERT OR IGNORE.
	 * One the pool already holds would be ignored by the commit's (nodes
	 * are content-addressed, a copy is the same node), so only directory
	 * and index nodes, which an incremental capture rebuilds unchanged,
	 * are looked up first; a file's blocklist is new or rare. */
	if (type != NODE_BLOCKLIST) {
		sqlite3_reset(w->st_node_main);
		sqlite3_bind_blob(w->st_node_main, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		if ((r = step_exists(w->p, w->st_node_main, "looking up a node")) < 0)
			return r;
		if (r == 1) {
			memcpy(hash_out, h, FERRY_HASH_LEN);
			return 0;
		}
	}
	if ((r = batch_op(w)) < 0)
		return r;
	sqlite3_stmt *st = w->st_ins_node;
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, type);
	sqlite3_bind_blob(st, 3, len ? data : "", (int)len, SQLITE_STATIC);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(w->p, "recording a node");
	sqlite3_reset(st);
	if (r == 0)
		memcpy(hash_out, h, FERRY_HASH_LEN);
	return r;
}

void store_writer_pause(struct store_writer *w)
{
	batch_end(w, 1);
}

void store_writer_last(struct store_writer *w)
{
	w->last = 1;
}

void store_writer_counters(const struct store_writer *w, uint64_t *blocks, uint64_t *bytes)
{
	*blocks = w->blocks;
	*bytes = w->bytes;
}

static int exec_bind1(struct store_pool *p, const char *sql, int64_t v, const char *what)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, v);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, what);
	sqlite3_finalize(st);
	return r;
}

static int query_i64(struct store_pool *p, const char *sql, int64_t a, int64_t *out)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, a);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	else
		r = s == SQLITE_DONE ? ferry_err(FERR_NOENT, "no row") : cat_err(p, "querying");
	sqlite3_finalize(st);
	return r;
}

int snap_figures(struct store_pool *p, int64_t snap_id, uint64_t *pbytes, uint64_t *lbytes)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0)"
			       " FROM snap_blocks s JOIN blocks b ON b.id = s.block_id"
			       " WHERE s.snap_id = ?", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, snap_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*pbytes = (uint64_t)sqlite3_column_int64(st, 0);
		*lbytes = (uint64_t)sqlite3_column_int64(st, 1);
	} else {
		r = cat_err(p, "summing snapshot blocks");
	}
	sqlite3_finalize(st);
	return r;
}

/* Makes every pack written since the last commit durable: data, then the
 * directory entries naming the new files. */
static int sync_packs(struct store_writer *w)
{
	char dir[PATH_MAX];
	int r;
	if ((w->cur >= 0 && (r = flush_buf(w)) < 0) || (r = flusher_wait(w)) < 0)
		return r;
	for (size_t i = 0; i < w->npacks; i++) {
		char what[64];
		snprintf(what, sizeof what, "pack '%s'", w->packs[i].name);
		if ((r = io_fsync(w->packs[i].fd, what)) < 0)
			return r;
	}
	if (w->npacks) {
		snprintf(dir, sizeof dir, "%s/%s", w->p->path, PACK_DIR);
		if ((r = io_fsync_dir(dir)) < 0)
			return r;
	}
	return 0;
}

/* Inside the caller's transaction: records the writer's packs with their
 * sizes, then the blocks it stored in them. */
static int writer_record_packs(struct store_writer *w)
{
	struct store_pool *p = w->p;
	sqlite3_stmt *st = NULL;
	int r;
	if ((r = cat_prepare(p, "INSERT OR REPLACE INTO packs(id, name, size) VALUES("
			       "(SELECT id FROM packs WHERE name = ?1), ?1, ?2)", &st)) < 0)
		goto out;
	for (size_t i = 0; i < w->npacks; i++) {
		struct stat sb;
		if (fstat(w->packs[i].fd, &sb) != 0) {
			r = ferry_err_errno(errno, "cannot stat pack '%s'", w->packs[i].name);
			goto out;
		}
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, w->packs[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (int64_t)sb.st_size);
		if (sqlite3_step(st) != SQLITE_DONE) {
			r = cat_err(p, "recording a pack");
			goto out;
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	r = cat_exec(p, "INSERT OR IGNORE INTO main.blocks(hash, codec, level, pack_id, offset,"
		     " psize, lsize) SELECT n.hash, n.codec, n.level,"
		     " (SELECT id FROM main.packs WHERE name = n.pack), n.offset, n.psize,"
		     " n.lsize FROM temp.w_new n");
out:
	sqlite3_finalize(st);
	return r;
}

int writer_persist(struct store_writer *w)
{
	struct store_pool *p = w->p;
	int r;
	if ((r = sync_packs(w)) < 0)
		return writer_err(w, r);
	batch_end(w, 1);
	if ((r = batch_lost(w)) < 0)
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = writer_record_packs(w)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

void writer_forget(struct store_writer *w)
{
	batch_end(w, 0);
	if (cat_exec(w->p, "DELETE FROM temp.w_new; DELETE FROM temp.w_nodes;"
			   " DELETE FROM temp.w_refs;") < 0) { /* rows are harmless duplicates */ }
	writer_handoff(w);
}

int store_writer_commit_snapshot(struct store_writer *w, const struct store_ds *ds,
				 const char *name, const uint8_t root[FERRY_HASH_LEN],
				 uint64_t guid, uint64_t creation_ns, int64_t *snap_id)
{
	struct store_pool *p = w->p;
	sqlite3_stmt *st = NULL;
	char full[STORE_NAME_MAX + 2];
	uint64_t txg, pb = 0, lb = 0;
	int64_t id = 0, nrefs = 0, nlinked = 0, prev = 0;
	int r;

	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return ferry_err(FERR_INVAL, "'%s' is not a filesystem or volume", ds->name);
	if (snprintf(full, sizeof full, "%s@%s", ds->name, name) >= (int)sizeof full - 1)
		return ferry_err(FERR_NAME, "snapshot name '%s@%s' is too long", ds->name, name);
	if ((r = store_name_check(full, STORE_NAME_SNAPSHOT)) < 0)
		return r;
	if ((r = sync_packs(w)) < 0)
		return writer_err(w, r);
	batch_end(w, 1);
	if ((r = batch_lost(w)) < 0)
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT 1 FROM snapshots WHERE ds_id = ? AND name = ?", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		r = ferry_err(FERR_EXISTS, "snapshot '%s' already exists", full);
		goto fail;
	}
	if (step != SQLITE_DONE) {
		r = cat_err(p, "looking up the snapshot");
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = writer_record_packs(w)) < 0 ||
	    (r = cat_exec(p, "INSERT OR IGNORE INTO main.nodes(hash, type, data)"
			     " SELECT hash, type, data FROM temp.w_nodes")) < 0)
		goto fail;
	if ((r = cat_prepare(p, "SELECT 1 FROM main.nodes WHERE hash = ? AND type = 4", &st)) < 0)
		goto fail;
	sqlite3_bind_blob(st, 1, root, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW) {
		r = ferry_err(FERR_CORRUPT, "snapshot root node is not in the pool");
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = cat_next_txg(p, &txg)) < 0)
		goto fail;
	if (!creation_ns)
		creation_ns = ferry_now_ns();
	if (!guid)
		guid = ferry_random_guid();
	if ((r = cat_prepare(p, "INSERT INTO snapshots(ds_id, name, guid, createtxg, creation_ns,"
			       " root) VALUES(?, ?, ?, ?, ?, ?)", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)guid);
	sqlite3_bind_int64(st, 4, (int64_t)txg);
	sqlite3_bind_int64(st, 5, (int64_t)creation_ns);
	sqlite3_bind_blob(st, 6, root, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		r = cat_err(p, "recording the snapshot");
		goto fail;
	}
	id = sqlite3_last_insert_rowid(p->db);
	sqlite3_finalize(st);
	st = NULL;
	if ((r = exec_bind1(p, "INSERT INTO snap_blocks(snap_id, block_id) SELECT ?, b.id"
			      " FROM temp.w_refs r JOIN main.blocks b ON b.hash = r.hash"
			      " AND b.codec = r.codec AND b.level = r.level",
			    id, "recording snapshot blocks")) < 0)
		goto fail;
	if ((r = query_i64(p, "SELECT count(*) FROM temp.w_refs WHERE ? IS NOT NULL", 1, &nrefs)) < 0 ||
	    (r = query_i64(p, "SELECT count(*) FROM snap_blocks WHERE snap_id = ?", id, &nlinked)) < 0)
		goto fail;
	if (nrefs != nlinked) {
		r = ferry_err(FERR_CORRUPT, "%lld referenced blocks vanished from the pool",
			      (long long)(nrefs - nlinked));
		goto fail;
	}
	if ((r = snap_figures(p, id, &pb, &lb)) < 0)
		goto fail;
	/* written: what this snapshot references that the previous one did not. */
	uint64_t written = pb;
	r = query_i64(p, "SELECT id FROM snapshots WHERE ds_id = (SELECT ds_id FROM snapshots"
			 " WHERE id = ?1) AND id != ?1 ORDER BY createtxg DESC LIMIT 1", id, &prev);
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		prev = 0;
		r = 0;
	} else if (r < 0) {
		goto fail;
	}
	if (prev) {
		if ((r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM snap_blocks s"
				       " JOIN blocks b ON b.id = s.block_id WHERE s.snap_id = ?1"
				       " AND NOT EXISTS (SELECT 1 FROM snap_blocks o WHERE"
				       " o.snap_id = ?2 AND o.block_id = s.block_id)", &st)) < 0)
			goto fail;
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, prev);
		if (sqlite3_step(st) != SQLITE_ROW) {
			r = cat_err(p, "computing written");
			goto fail;
		}
		written = (uint64_t)sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		st = NULL;
	}
	if ((r = cat_prepare(p, "UPDATE snapshots SET referenced = ?, logicalreferenced = ?,"
			       " written = ? WHERE id = ?", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, (int64_t)pb);
	sqlite3_bind_int64(st, 2, (int64_t)lb);
	sqlite3_bind_int64(st, 3, (int64_t)written);
	sqlite3_bind_int64(st, 4, id);
	if (sqlite3_step(st) != SQLITE_DONE) {
		r = cat_err(p, "recording snapshot figures");
		goto fail;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((r = store_quota_check(p, ds, pb)) < 0) /* quota.c */
		goto fail;
	if ((r = store_tx_commit(p)) < 0)
		goto out;
	/* Committed: forget the pending rows (unless no snapshot follows:
	 * see store_writer_last) and start the next snapshot on a fresh pack
	 * so no committed pack ever grows again. */
	if (!w->last && cat_exec(p, "DELETE FROM temp.w_new; DELETE FROM temp.w_nodes;"
				   " DELETE FROM temp.w_refs;") < 0) { /* harmless duplicates */ }
	writer_handoff(w);
	if (snap_id)
		*snap_id = id;
	return 0;
fail:
	sqlite3_finalize(st);
	st = NULL;
	store_tx_rollback(p);
out:
	sqlite3_finalize(st);
	return r;
}

/* ---- reading ------------------------------------------------------------------- */

#define RD_FDS 16

struct store_reader {
	struct store_pool *p;
	int lock_fd; /* gc lock held shared: packs do not vanish under a reader */
	struct {
		int64_t pack_id;
		int fd;
		uint64_t used;
	} fds[RD_FDS];
	uint64_t tick;
	uint8_t *buf;
	size_t bufcap;
	struct store_block_loc last; /* where the last block read lies, for errors */
	sqlite3_stmt *st_loc, *st_node, *st_has_node, *st_has_block;
};

int store_reader_new(struct store_pool *p, struct store_reader **out)
{
	struct store_reader *rd = calloc(1, sizeof *rd);
	int r;
	if (!rd)
		return ferry_err(FERR_NOMEM, "creating a block reader");
	rd->p = p;
	for (int i = 0; i < RD_FDS; i++)
		rd->fds[i].fd = -1;
	act_begin(p);
	if (pack_lock(p, 0, &rd->lock_fd) < 0) {
		/* a read-only pool directory: nobody can collect garbage there */
		ferry_err_clear();
		rd->lock_fd = -1;
	}
	if ((r = cat_prepare(p, "SELECT b.codec, b.level, b.pack_id, k.name, b.offset, b.psize,"
			       " b.lsize FROM blocks b JOIN packs k ON k.id = b.pack_id"
			       " WHERE b.hash = ?1 ORDER BY (b.codec = ?2 AND b.level = ?3) DESC,"
			       " b.id LIMIT 1", &rd->st_loc)) < 0 ||
	    (r = cat_prepare(p, "SELECT type, data FROM nodes WHERE hash = ?", &rd->st_node)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM nodes WHERE hash = ?", &rd->st_has_node)) < 0 ||
	    (r = cat_prepare(p, "SELECT 1 FROM blocks WHERE hash = ? LIMIT 1", &rd->st_has_block)) < 0) {
		store_reader_free(rd);
		return r;
	}
	*out = rd;
	return 0;
}

void store_reader_free(struct store_reader *rd)
{
	if (!rd)
		return;
	for (int i = 0; i < RD_FDS; i++)
		if (rd->fds[i].fd >= 0)
			close(rd->fds[i].fd);
	sqlite3_finalize(rd->st_loc);
	sqlite3_finalize(rd->st_node);
	sqlite3_finalize(rd->st_has_node);
	sqlite3_finalize(rd->st_has_block);
	if (rd->lock_fd >= 0)
		close(rd->lock_fd);
	act_end(rd->p);
	free(rd->buf);
	free(rd);
}

static int reader_fd(struct store_reader *rd, int64_t pack_id, const char *name, int *fd)
{
	int victim = 0;
	for (int i = 0; i < RD_FDS; i++) {
		if (rd->fds[i].fd >= 0 && rd->fds[i].pack_id == pack_id) {
			rd->fds[i].used = ++rd->tick;
			*fd = rd->fds[i].fd;
			return 0;
		}
		if (rd->fds[i].used < rd->fds[victim].used)
			victim = i;
	}
	char path[PATH_MAX];
	pack_path(rd->p, name, path, sizeof path);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return ferry_err_errno(errno, "cannot open pack '%s'", path);
	if (rd->fds[victim].fd >= 0)
		close(rd->fds[victim].fd);
	rd->fds[victim].fd = f;
	rd->fds[victim].pack_id = pack_id;
	rd->fds[victim].used = ++rd->tick;
	*fd = f;
	return 0;
}

/* Reads the stored form of hash into rd->buf: header checked against the
 * index row, payload at rd->buf + PACK_BLK_HDR_LEN. */
static int read_stored(struct store_reader *rd, const uint8_t *hash, struct codec_spec prefer,
		       struct codec_spec *c, uint32_t *lsize, uint32_t *psize)
{
	sqlite3_stmt *st = rd->st_loc;
	char name[64];
	int r, fd;
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, prefer.id);
	sqlite3_bind_int(st, 3, prefer.level);
	int s = sqlite3_step(st);
	if (s != SQLITE_ROW) {
		sqlite3_reset(st);
		if (s == SQLITE_DONE) {
			char hex[FERRY_HASH_HEX];
			hash_to_hex(hash, hex);
			return ferry_err(FERR_NOENT, "block %s is not in the pool", hex);
		}
		return cat_err(rd->p, "looking up a block");
	}
	struct codec_spec ic = {(uint8_t)sqlite3_column_int(st, 0), (uint8_t)sqlite3_column_int(st, 1)};
	int64_t pack_id = sqlite3_column_int64(st, 2);
	const char *nm = (const char *)sqlite3_column_text(st, 3);
	snprintf(name, sizeof name, "%s", nm ? nm : "");
	int64_t off = sqlite3_column_int64(st, 4);
	int64_t ip = sqlite3_column_int64(st, 5), il = sqlite3_column_int64(st, 6);
	sqlite3_reset(st);
	snprintf(rd->last.pack, sizeof rd->last.pack, "%s", name);
	rd->last.offset = off;
	if (ip <= 0 || il <= 0 || ip > il || (uint64_t)il > STORE_BLOCK_MAX || off < PACK_HDR_LEN)
		return ferry_err(FERR_CORRUPT, "block index row has sizes %lld/%lld", (long long)ip,
				 (long long)il);
	size_t need = PACK_BLK_HDR_LEN + (size_t)ip;
	if (rd->bufcap < need) {
		uint8_t *nb = realloc(rd->buf, need);
		if (!nb)
			return ferry_err(FERR_NOMEM, "reading a block");
		rd->buf = nb;
		rd->bufcap = need;
	}
	if ((r = reader_fd(rd, pack_id, name, &fd)) < 0)
		return r;
	size_t got = 0;
	if ((r = io_pread_full(fd, rd->buf, need, (off_t)off, &got)) < 0)
		return r;
	if (got != need)
		return ferry_err(FERR_CORRUPT, "pack '%s' is truncated at %lld", name, (long long)off);
	struct codec_spec hc;
	uint32_t hl, hp;
	uint8_t hh[FERRY_HASH_LEN];
	if ((r = pack_blk_hdr_get(rd->buf, &hc, &hl, &hp, hh)) < 0)
		return ferry_err(FERR_CORRUPT, "pack '%s' at %lld: %s", name, (long long)off,
				 ferry_errmsg(r));
	if (!codec_equal(hc, ic) || hl != (uint32_t)il || hp != (uint32_t)ip ||
	    memcmp(hh, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "pack '%s' at %lld does not hold the indexed block",
				 name, (long long)off);
	*c = hc;
	*lsize = hl;
	*psize = hp;
	return 0;
}

int store_block_read(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN], void *dst,
		     size_t lsize)
{
	struct codec_spec c;
	uint32_t ls, ps;
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if ((r = read_stored(rd, hash, (struct codec_spec){CODEC_OFF, 0}, &c, &ls, &ps)) < 0)
		return r;
	if (ls != lsize)
		return ferry_err(FERR_CORRUPT, "block is %u bytes, expected %zu", ls, lsize);
	const uint8_t *pl = rd->buf + PACK_BLK_HDR_LEN;
	if (c.id == CODEC_OFF)
		memcpy(dst, pl, ls);
	else if ((r = codec_decode(c, pl, ps, dst, ls)) < 0)
		return store_block_damage(hash, &rd->last, r);
	hash_blake2b(h, dst, ls);
	if (memcmp(h, hash, FERRY_HASH_LEN) != 0)
		return store_block_damage(hash, &rd->last,
					  ferry_err(FERR_CORRUPT, "its content does not match its hash"));
	return 0;
}

void store_reader_last_loc(const struct store_reader *rd, struct store_block_loc *out)
{
	*out = rd->last;
}

int store_block_damage(const uint8_t hash[FERRY_HASH_LEN], const struct store_block_loc *loc,
		       int err)
{
	char hex[FERRY_HASH_HEX], msg[512];
	hash_to_hex(hash, hex);
	snprintf(msg, sizeof msg, "%s", ferry_errmsg(err));
	return ferry_err(-err, "block %.16s in pack '%s' at offset %lld is damaged: %s", hex,
			 loc->pack, (long long)loc->offset, msg);
}

int store_block_verify(struct codec_spec c, const void *payload, size_t psize, size_t lsize,
		       const uint8_t hash[FERRY_HASH_LEN], void *scratch, size_t scratch_cap)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if (lsize == 0 || lsize > STORE_BLOCK_MAX || psize > lsize ||
	    (c.id != CODEC_OFF && scratch_cap < lsize))
		return ferry_err(FERR_CORRUPT, "block of %zu/%zu bytes", psize, lsize);
	if (c.id == CODEC_OFF) {
		if (psize != lsize)
			return ferry_err(FERR_CORRUPT, "raw block of %zu bytes, %zu expected", psize,
					 lsize);
		hash_blake2b(h, payload, lsize);
	} else {
		if ((r = codec_decode(c, payload, psize, scratch, lsize)) < 0)
			return r;
		hash_blake2b(h, scratch, lsize);
	}
	if (memcmp(h, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "its content does not match its hash");
	return 0;
}

int store_block_read_stored(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN],
			    struct codec_spec prefer, struct codec_spec *codec,
			    uint32_t *lsize, struct fbuf *out)
{
	struct codec_spec c;
	uint32_t ls, ps;
	int r;
	if ((r = read_stored(rd, hash, prefer, &c, &ls, &ps)) < 0)
		return r;
	fbuf_reset(out);
	if ((r = fbuf_append(out, rd->buf + PACK_BLK_HDR_LEN, ps)) < 0)
		return r;
	*codec = c;
	*lsize = ls;
	return 0;
}

int store_node_read(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN], int *type,
		    struct fbuf *out)
{
	sqlite3_stmt *st = rd->st_node;
	uint8_t h[FERRY_HASH_LEN];
	int r = 0;
	sqlite3_reset(st);
	sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	int s = sqlite3_step(st);
	if (s != SQLITE_ROW) {
		sqlite3_reset(st);
		if (s == SQLITE_DONE) {
			char hex[FERRY_HASH_HEX];
			hash_to_hex(hash, hex);
			return ferry_err(FERR_NOENT, "node %s is not in the pool", hex);
		}
		return cat_err(rd->p, "reading a node");
	}
	int t = sqlite3_column_int(st, 0);
	const void *d = sqlite3_column_blob(st, 1);
	size_t n = (size_t)sqlite3_column_bytes(st, 1);
	fbuf_reset(out);
	if (t < 1 || t > 4 || n > NODE_MAX)
		r = ferry_err(FERR_CORRUPT, "node of type %d and %zu bytes in the catalogue", t, n);
	else if (n)
		r = fbuf_append(out, d, n);
	sqlite3_reset(st);
	if (r < 0)
		return r;
	node_hash(t, out->data, out->len, h);
	if (memcmp(h, hash, FERRY_HASH_LEN) != 0)
		return ferry_err(FERR_CORRUPT, "node content does not match its hash");
	*type = t;
	return 0;
}

int store_node_has(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN])
{
	sqlite3_reset(rd->st_has_node);
	sqlite3_bind_blob(rd->st_has_node, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	return step_exists(rd->p, rd->st_has_node, "looking up a node");
}

int store_block_has(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN])
{
	sqlite3_reset(rd->st_has_block);
	sqlite3_bind_blob(rd->st_has_block, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	return step_exists(rd->p, rd->st_has_block, "looking up a block");
}
