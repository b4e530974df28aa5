/* store/writer.c — the pack writer: the blocks, nodes and references of
 * one snapshot being built, its packs, and their commit.
 *
 * What a writer has stored but not committed lives in TEMP tables of the
 * pool's connection (w_new, w_nodes, w_refs), so memory stays bounded
 * however large the snapshot; TEMP tables take no lock on the catalogue.
 * Block bytes go through two buffers, one filled while the flusher writes
 * the other, and the syncer fsyncs the open pack as it grows; a pack's
 * bytes are fsynced before the transaction that names them commits.
 *
 * Why one file of some 900 lines: struct store_writer and the rules that
 * guard it (a broken writer refuses every later put and commit, a batch is
 * checked before its rows are trusted, the flusher's and the syncer's
 * first errors fail the commit, packs are handed to the pool's
 * transaction) are one invariant;
 * split, the rest of store/ would see the struct and the half-dozen
 * helpers that keep it. The catalogue rows of the commit itself are in
 * commit.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define WBUF_SIZE ((size_t)4 << 20)
/* The syncer: every SYNC_EVERY bytes handed to the flusher, the open pack
 * is fsynced on a thread of its own while the writes go on, when the sync
 * before is done (else the next time). The fsync before the commit then
 * finds at most the last SYNC_EVERY bytes to make durable. On a disk with
 * a volatile cache, a VM's above all, writeback alone leaves that cache
 * holding the whole snapshot: its one flush at the commit took 0.49 s of
 * bench/recv's 1.9 s kept receive, with both cores idle. */
#define SYNC_EVERY ((size_t)32 << 20)
#define BATCH_OPS 1024

struct wpack {
	char name[32];
	int fd;
};

/* The flusher: a pipeline of one worker and one slot that writes a full
 * buffer to the open pack while the caller fills the other one, so the
 * kernel's copy into the page cache and the start of writeback overlap
 * hashing and compression instead of stalling the one thread that orders
 * blocks. At most one buffer is in flight: taking the slot waits for it.
 * The pipeline keeps the first error, so a buffer that did not reach its
 * pack fails every later flush and the commit (which would otherwise name
 * blocks never written); the writer is done for. */
struct flush_job {
	const uint8_t *data, *more; /* more: a block too big for a buffer, after its header */
	size_t len, more_len;
	int fd;
	char pack[32];
};

/* A pack to fsync early (the syncer: a pipeline of one worker and one
 * slot; its first error fails the commit, as the flusher's does); or, for
 * a commit (npacks > 0), every pack the writer wrote since the last one,
 * then their directory. Those packs are the writer's list, which nothing
 * changes until the syncer is drained. */
struct sync_job {
	int fd;
	int drop;            /* store_writer_drop_cache: fsynced pages leave the cache */
	char pack[32];
	const struct wpack *packs;
	size_t npacks;
	char dir[PATH_MAX];
};

struct store_writer {
	struct store_pool *p;
	struct pipeline *fl; /* the flusher, started on first use */
	struct pipeline *sy; /* the syncer, started at its first sync */
	size_t unsynced;     /* bytes handed to the flusher since the last early sync */
	uint8_t *buf2;       /* the buffer not being filled */
	int lock_fd;
	struct wpack *packs; /* packs written since the last commit; the last is open */
	size_t npacks, cap;
	int cur;             /* index of the open pack, or -1 */
	uint64_t cur_size;   /* its size including buffered bytes */
	uint8_t *buf;
	size_t buflen;
	int in_batch;
	unsigned batch_ops;
	int last;            /* store_writer_last: the next commit is the last one */
	int drop_cache;      /* store_writer_drop_cache */
	int counted;         /* in catvfs_writers */
	int act;             /* in the pool's activity record (act_begin) */
	uint64_t blocks, bytes;
	/* A failure that left the pending rows wrong (a batch that did not
	 * commit, rows a commit could not clear): every later put, reference
	 * and commit fails with it, rather than name blocks it does not have
	 * or keep another snapshot's references. */
	int err;
	char errmsg[512];
	sqlite3_stmt *st_has_main, *st_has_new, *st_ins_new, *st_ins_ref, *st_any_main,
		*st_any_new, *st_node_main, *st_ins_node, *st_ref_main;
};

/* The writer's pending rows, in TEMP tables (no zeroing of their freed
 * pages: see cat_open's pragmas in store/catalog.c). */
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

static int flush_run(void *jv, void *ctx)
{
	struct flush_job *j = jv;
	int r = io_write_full(j->fd, j->data, j->len);
	if (r == 0 && j->more)
		r = io_write_full(j->fd, j->more, j->more_len);
	if (r < 0)
		return ferry_err(-r, "writing pack '%s': %s", j->pack, ferry_errmsg(r));
	/* Start writing these bytes back now, without waiting, so the fsync
	 * before the commit finds little left to do: the disk works while the
	 * workers compress. Only a hint: durability comes from that fsync,
	 * which also reports what this would. */
	(void)sync_file_range(j->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	return 0;
}

static const struct pipeline_ops flush_ops = {flush_run, NULL, NULL, NULL, NULL};

static int sync_run(void *jv, void *ctx)
{
	struct sync_job *j = jv;
	char what[64];
	int r;
	if (!j->npacks) {
		snprintf(what, sizeof what, "pack '%s'", j->pack);
		if ((r = io_fsync(j->fd, what)) == 0 && j->drop)
			(void)posix_fadvise(j->fd, 0, 0, POSIX_FADV_DONTNEED);
		return r;
	}
	for (size_t i = 0; i < j->npacks; i++) {
		snprintf(what, sizeof what, "pack '%s'", j->packs[i].name);
		if ((r = io_fsync(j->packs[i].fd, what)) < 0)
			return r;
		if (j->drop)
			(void)posix_fadvise(j->packs[i].fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	return io_fsync_dir(j->dir);
}

static const struct pipeline_ops sync_ops = {sync_run, NULL, NULL, NULL, NULL};

/* Waits until no buffer is in flight: 0, or the error of one that was
 * (then and from now on). */
static int flusher_wait(struct store_writer *w)
{
	return w->fl ? pipeline_drain(w->fl) : 0;
}

/* Closes the writer's packs since its last commit. With drop, the writer
 * gives back what it wrote: those packs are nobody's (not in the
 * catalogue: commit and writer_persist empty the list once they are) and
 * are unlinked, so a failed capture or receive does not leave its bytes
 * filling the disk until the next gc. */
static void close_packs(struct store_writer *w, int drop)
{
	int removed = 0;
	/* after a commit nothing is in flight; otherwise the packs are being
	 * abandoned: a write still running ends before its fd is closed, one
	 * not started never is, and its error does not matter (nor replaces
	 * the one being reported) */
	pipeline_cancel(w->fl);
	pipeline_cancel(w->sy); /* likewise: a sync running ends first */
	w->unsynced = 0;
	for (size_t i = 0; i < w->npacks; i++) {
		if (w->packs[i].fd >= 0)
			close(w->packs[i].fd);
		if (drop)
			removed |= pack_unlink_quiet(w->p, w->packs[i].name);
	}
	if (removed)
		(void)pack_sync_dir_quiet(w->p); /* else orphans after a crash, swept */
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
			removed |= pack_unlink_quiet(p, p->tx_packs[i]);
	if (removed)
		(void)pack_sync_dir_quiet(p); /* else orphans after a crash, swept */
	p->ntx_packs = 0;
	if (p->tx_lock_fd >= 0)
		close(p->tx_lock_fd);
	p->tx_lock_fd = -1;
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
	if (!w)
		return ferry_err(FERR_NOMEM, "creating a pack writer");
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
	p->life_base = 0; /* w_refs is empty: the whole set of nothing yet */
	census_forget(p);
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

static void writer_break(struct store_writer *w, int r, const char *what)
{
	if (w->err)
		return;
	w->err = r;
	snprintf(w->errmsg, sizeof w->errmsg, "%s: %s", what, ferry_errmsg(r));
}

static int writer_broken(const struct store_writer *w)
{
	return w->err ? ferry_err(-w->err, "%s", w->errmsg) : 0;
}

/* The writer's pending rows (and every TEMP row written in the same batch,
 * such as recv's object sets) are lost when SQLite rolls the batch back by
 * itself, which it may do after a failed statement (no memory, disk full,
 * an I/O error). A writer that lost them would commit a snapshot missing
 * block references (gc would then free live blocks) or save a partial
 * receive that does not resume: it is broken from then on. The detail is
 * kept in the writer, not set here, so a cleanup path keeps its own. */
static void batch_check(struct store_writer *w)
{
	if (!w->in_batch || !sqlite3_get_autocommit(w->p->db))
		return;
	w->in_batch = 0;
	w->batch_ops = 0;
	if (!w->err) {
		w->err = -FERR_CATALOG;
		snprintf(w->errmsg, sizeof w->errmsg,
			 "pool '%s': the rows of the snapshot being written were lost when the "
			 "catalogue rolled back a failed statement", w->p->name);
	}
}

int store_writer_intact(struct store_writer *w)
{
	batch_check(w);
	return writer_broken(w);
}

/* Ends the batch of TEMP-table inserts: committed (kept) or rolled back. */
static int batch_end(struct store_writer *w, int commit)
{
	int r;
	batch_check(w);
	if (!w->in_batch)
		return commit ? writer_broken(w) : 0;
	w->in_batch = 0;
	w->batch_ops = 0;
	if ((r = cat_exec(w->p, commit ? "COMMIT" : "ROLLBACK")) < 0 && commit)
		writer_break(w, r, "the writer's pending rows are lost");
	return r;
}

/* Groups TEMP-table inserts into transactions of BATCH_OPS statements; a
 * plain BEGIN takes no lock on the main catalogue until it writes to it. */
static int batch_op(struct store_writer *w)
{
	int r;
	batch_check(w);
	if ((r = writer_broken(w)) < 0)
		return r;
	if (w->in_batch && ++w->batch_ops >= BATCH_OPS && (r = batch_end(w, 1)) < 0)
		return r;
	if (!w->in_batch && w->p->tx_depth == 0) {
		if ((r = cat_exec(w->p, "BEGIN")) < 0)
			return r;
		w->in_batch = 1;
	}
	return 0;
}

struct store_pool *writer_pool(const struct store_writer *w)
{
	return w->p;
}

int writer_batch_op(struct store_writer *w)
{
	return batch_op(w);
}

void store_writer_free(struct store_writer *w)
{
	if (!w)
		return;
	(void)batch_end(w, 0); /* what it held goes with the writer */
	writer_finalize(w);
	/* The TEMP rows left behind are harmless: the next writer on this
	 * connection clears them first (temp_schema), and closing the pool
	 * drops them; clearing them here would cost a walk of every page. */
	close_packs(w, 1);
	pipeline_free(w->fl);
	pipeline_free(w->sy);
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

/* Counts n more bytes for the open pack; past SYNC_EVERY, hands the pack
 * to the syncer unless its last sync is still running (never waits). */
static int sync_early(struct store_writer *w, size_t n)
{
	void *jv;
	int r;
	w->unsynced += n;
	if (w->unsynced < SYNC_EVERY)
		return 0;
	if (!w->sy && (r = pipeline_new(&w->sy, 1, 1, sizeof(struct sync_job), &sync_ops,
					NULL)) < 0)
		return r;
	if ((r = pipeline_collect_done(w->sy)) < 0)
		return r;
	if (pipeline_pending(w->sy))
		return 0;
	if ((r = pipeline_job(w->sy, &jv)) < 0)
		return r;
	struct sync_job *j = jv;
	j->fd = w->packs[w->cur].fd;
	j->drop = w->drop_cache;
	snprintf(j->pack, sizeof j->pack, "%s", w->packs[w->cur].name);
	j->npacks = 0;
	w->unsynced = 0;
	return pipeline_submit(w->sy, j);
}

/* Hands the filled buffer to the flusher (started on first use) and goes on
 * with the other one; the bytes reach the pack in the order they were put. */
/* Queues len bytes of data (then more_len of more) for the open pack, once
 * the write in flight is done. */
static int flush_queue(struct store_writer *w, const uint8_t *data, size_t len,
		       const uint8_t *more, size_t more_len)
{
	void *jv;
	int r;
	if (!w->fl && (r = pipeline_new(&w->fl, 1, 1, sizeof(struct flush_job), &flush_ops,
					NULL)) < 0)
		return r;
	if ((r = pipeline_job(w->fl, &jv)) < 0) /* the write in flight is done */
		return r;
	struct flush_job *j = jv;
	j->data = data;
	j->len = len;
	j->more = more;
	j->more_len = more_len;
	j->fd = w->packs[w->cur].fd;
	snprintf(j->pack, sizeof j->pack, "%s", w->packs[w->cur].name);
	if ((r = pipeline_submit(w->fl, j)) < 0)
		return r;
	return sync_early(w, len + more_len);
}

static int flush_buf(struct store_writer *w)
{
	int r;
	if (!w->buflen)
		return 0;
	if ((r = flush_queue(w, w->buf, w->buflen, NULL, 0)) < 0)
		return r;
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

int store_writer_has(struct store_writer *w, const uint8_t hash[FERRY_HASH_LEN],
		     struct codec_spec c)
{
	int r;
	pack_bind_hash_codec(w->st_has_new, hash, c);
	if ((r = pack_step_exists(w->p, w->st_has_new, "looking up a block")) != 0)
		return r;
	pack_bind_hash_codec(w->st_has_main, hash, c);
	return pack_step_exists(w->p, w->st_has_main, "looking up a block");
}

static int add_ref(struct store_writer *w, const uint8_t *hash, struct codec_spec c)
{
	int r;
	if ((r = batch_op(w)) < 0)
		return r;
	pack_bind_hash_codec(w->st_ins_ref, hash, c);
	r = sqlite3_step(w->st_ins_ref) == SQLITE_DONE ? 0 : cat_err(w->p, "recording a block");
	sqlite3_reset(w->st_ins_ref);
	return r;
}

/* A full disk says so in one line, whichever write found it. */
static int writer_err(struct store_writer *w, int r)
{
	return r == -FERR_NOSPC ? pool_nospace(w->p) : r;
}

static int writer_put(struct store_writer *w, const struct store_block *b, const uint32_t *crc,
		      int *stored);

int store_writer_put(struct store_writer *w, const struct store_block *b, int *stored)
{
	return writer_err(w, writer_put(w, b, NULL, stored));
}

int store_writer_put_crc(struct store_writer *w, const struct store_block *b, uint32_t crc,
			 int *stored)
{
	return writer_err(w, writer_put(w, b, &crc, stored));
}

/* The two buffers, made when the first record is about to be written
 * (before the row that names it): a writer that stores nothing takes
 * none, and a receive that has put its heap on huge pages since
 * (cli/cmd_recv.c) gets them there. */
static int writer_bufs(struct store_writer *w)
{
	if (w->buf)
		return 0;
	if (!(w->buf = malloc(WBUF_SIZE)) || !(w->buf2 = malloc(WBUF_SIZE))) {
		free(w->buf);
		w->buf = NULL;
		return ferry_err(FERR_NOMEM, "the pack writer's buffers");
	}
	return 0;
}

/* One record (header, payload and, in a version-3 pack, the CRC tail)
 * into the current pack, through the buffer (made: writer_bufs);
 * w->cur_size grows. pcrc, when not NULL, is the payload's CRC-32C, known
 * already: the tail's is the header's joined to it (crc32c_combine), not a
 * second pass over the payload. */
static int writer_record(struct store_writer *w, const uint8_t *hdr, size_t hl,
			 const void *payload, size_t pl, const uint32_t *pcrc)
{
	uint8_t t[PACK_REC_TAIL];
	size_t tl = pack_tail_new(w->p), need = hl + pl + tl;
	int r;
	if (tl)
		pack_tail_put(t, pcrc ? crc32c_combine(crc32c_update(0, hdr, hl), *pcrc, pl)
				      : pack_rec_crc(hdr, hl, payload, pl));
	if (w->buflen + need > WBUF_SIZE && (r = flush_buf(w)) < 0)
		return r;
	if (need > WBUF_SIZE) {
		/* too big for a buffer: written from where it is, by the
		 * flusher too (so a failure is kept), and waited for (the
		 * payload is the caller's); the tail then starts the empty
		 * buffer */
		if ((r = flush_queue(w, hdr, hl, payload, pl)) < 0 || (r = flusher_wait(w)) < 0)
			return r;
		memcpy(w->buf + w->buflen, t, tl);
		w->buflen += tl;
	} else {
		memcpy(w->buf + w->buflen, hdr, hl);
		if (pl)
			memcpy(w->buf + w->buflen + hl, payload, pl);
		memcpy(w->buf + w->buflen + hl + pl, t, tl);
		w->buflen += need;
	}
	w->cur_size += need;
	return 0;
}

static int writer_put(struct store_writer *w, const struct store_block *b, const uint32_t *crc,
		      int *stored)
{
	uint8_t hdr[PACK_BLK_HDR_LEN];
	int r;
	if (stored)
		*stored = 0;
	if (b->form == BLOCK_HOLE)
		return 0;
	if ((r = writer_broken(w)) < 0)
		return r;
	if (b->psize == 0 || b->psize > b->lsize || b->lsize > STORE_BLOCK_MAX)
		return ferry_err(FERR_INVAL, "block sizes %u/%u", b->psize, b->lsize);
	pack_bind_hash_codec(w->st_has_main, b->hash, b->codec);
	if ((r = pack_step_exists(w->p, w->st_has_main, "looking up a block")) < 0)
		return r;
	if (r == 1)
		return add_ref(w, b->hash, b->codec);
	if ((r = writer_bufs(w)) < 0)
		return r;
	if (w->cur < 0 || w->cur_size >= PACK_TARGET_SIZE)
		if ((r = open_new_pack(w)) < 0)
			return r;
	uint64_t off = w->cur_size;
	/* The row first: when this writer already holds the block the INSERT
	 * OR IGNORE changes nothing and no byte is written. */
	if ((r = batch_op(w)) < 0)
		return r;
	sqlite3_stmt *st = w->st_ins_new;
	pack_bind_hash_codec(st, b->hash, b->codec);
	sqlite3_bind_text(st, 4, w->packs[w->cur].name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (int64_t)off);
	sqlite3_bind_int64(st, 6, b->psize);
	sqlite3_bind_int64(st, 7, b->lsize);
	r = sqlite3_step(st) == SQLITE_DONE ? 0 : cat_err(w->p, "recording a block");
	sqlite3_reset(st);
	if (r < 0)
		return r;
	if (sqlite3_changes(w->p->db) == 0)
		return 0; /* in w_new already: referenced by writer_refs_stored */
	pack_blk_hdr_put(hdr, b->codec, b->lsize, b->psize, b->hash);
	if ((r = writer_record(w, hdr, sizeof hdr, b->payload, b->psize, crc)) < 0)
		return r;
	size_t need = PACK_BLK_HDR_LEN + (size_t)b->psize + pack_tail_new(w->p);
	w->blocks++;
	w->bytes += need;
	if (stored)
		*stored = 1;
	return 0; /* its reference: writer_refs_stored */
}

int writer_refs_stored(struct store_writer *w)
{
	int r;
	if ((r = batch_op(w)) < 0)
		return r;
	return cat_exec(w->p, "INSERT OR IGNORE INTO temp.w_refs(hash, codec, level)"
			      " SELECT hash, codec, level FROM temp.w_new");
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
	node_memo_put(w->p, h, type, data, len); /* read again: not hashed again */
	/* One this writer already holds is ignored by the INSERT OR IGNORE.
	 * One the pool already holds would be ignored by the commit's (nodes
	 * are content-addressed, a copy is the same node), so only directory
	 * and index nodes, which an incremental capture rebuilds unchanged,
	 * are looked up first; a file's blocklist is new or rare. */
	if (type != NODE_BLOCKLIST) {
		sqlite3_reset(w->st_node_main);
		sqlite3_bind_blob(w->st_node_main, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		if ((r = pack_step_exists(w->p, w->st_node_main, "looking up a node")) < 0)
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
	(void)batch_end(w, 1); /* a failure breaks the writer: its next use says so */
}

void store_writer_last(struct store_writer *w)
{
	w->last = 1;
}

void store_writer_drop_cache(struct store_writer *w)
{
	w->drop_cache = 1;
}

void store_writer_counters(const struct store_writer *w, uint64_t *blocks, uint64_t *bytes)
{
	*blocks = w->blocks;
	*bytes = w->bytes;
}

/* Starts making every pack written since the last commit durable: the
 * buffered bytes are written first (here), then the syncer fsyncs each
 * pack and the directory naming them while the caller goes on. A commit
 * writes its rows meanwhile; sync_packs_wait must return 0 before the
 * COMMIT that names those packs (data before catalogue), and before
 * anything closes them. */
static int sync_packs_start(struct store_writer *w)
{
	void *jv;
	int r;
	if ((w->cur >= 0 && (r = flush_buf(w)) < 0) || (r = flusher_wait(w)) < 0 ||
	    (w->sy && (r = pipeline_drain(w->sy)) < 0))
		return r;
	if (!w->npacks)
		return 0;
	if (!w->sy && (r = pipeline_new(&w->sy, 1, 1, sizeof(struct sync_job), &sync_ops,
					NULL)) < 0)
		return r;
	if ((r = pipeline_job(w->sy, &jv)) < 0)
		return r;
	struct sync_job *j = jv;
	j->packs = w->packs;
	j->npacks = w->npacks;
	j->drop = w->drop_cache;
	if (snprintf(j->dir, sizeof j->dir, "%s/%s", w->p->path, PACK_DIR) >= (int)sizeof j->dir) {
		j->npacks = 0; /* not submitted: the slot is handed out again */
		return ferry_err(FERR_LIMIT, "pool path '%s' is too long", w->p->path);
	}
	w->unsynced = 0;
	return pipeline_submit(w->sy, j);
}

/* Waits for sync_packs_start's fsyncs: 0 once every pack and their
 * directory are durable, or the first error (then and from now on). */
static int sync_packs_wait(struct store_writer *w)
{
	return w->sy ? pipeline_drain(w->sy) : 0;
}

/* The same, waited for: data, then the directory entries naming the new
 * files. */
static int sync_packs(struct store_writer *w)
{
	int r = sync_packs_start(w);
	return r < 0 ? r : sync_packs_wait(w);
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
	if ((r = writer_broken(w)) < 0)
		return r;
	if ((r = sync_packs(w)) < 0)
		return writer_err(w, r);
	if ((r = batch_end(w, 1)) < 0 || (r = store_tx_begin(p)) < 0)
		return r;
	if ((r = writer_record_packs(w)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	return store_tx_commit(p);
}

/* Clears the pending rows once a commit made them the catalogue's. If
 * that fails they would count again for the writer's next snapshot (its
 * references above all): the writer is broken, and its next use says so. */
static void writer_clear(struct store_writer *w)
{
	int r = cat_exec(w->p, "DELETE FROM temp.w_new; DELETE FROM temp.w_nodes;"
			       " DELETE FROM temp.w_refs;");
	w->p->life_base = 0; /* no change to a base pending any more */
	census_forget(w->p);
	if (r < 0) {
		writer_break(w, r, "the writer's committed rows cannot be cleared");
		ferry_err_clear(); /* what was asked is done */
	}
}

void writer_forget(struct store_writer *w)
{
	(void)batch_end(w, 0); /* a failed rollback leaves rows writer_clear removes */
	writer_clear(w);
	writer_handoff(w);
}

/* In a pool that keeps records: the nodes this snapshot adds (those the
 * pool lacks) as node records in a pack of their own among the writer's,
 * so they are fsynced with its blocks before the commit names them. Not
 * after the blocks in the same pack: a data pack ends with its last
 * block, as readers and scrub's checks of a pack's end expect. A node's
 * bytes are the pending row's, borrowed until the next step. */
static int put_node_records(struct store_writer *w)
{
	sqlite3_stmt *st = NULL;
	uint8_t hdr[PACK_NOD_HDR_LEN];
	int r, s;
	if (!w->p->records)
		return 0;
	if ((r = cat_prepare(w->p, "SELECT n.hash, n.type, n.data FROM temp.w_nodes n WHERE NOT"
				   " EXISTS (SELECT 1 FROM main.nodes m WHERE m.hash = n.hash)",
			     &st)) < 0)
		return r;
	int first = 1;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		const uint8_t *h = sqlite3_column_blob(st, 0);
		int type = sqlite3_column_int(st, 1);
		const uint8_t *data = sqlite3_column_blob(st, 2);
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		if (sqlite3_column_bytes(st, 0) != FERRY_HASH_LEN || len > NODE_MAX) {
			r = ferry_err(FERR_CORRUPT, "a pending node row is malformed");
			goto out;
		}
		if ((r = writer_bufs(w)) < 0 ||
		    ((first || w->cur_size >= PACK_TARGET_SIZE) && (r = open_new_pack(w)) < 0))
			goto out;
		first = 0;
		pack_nod_hdr_put(hdr, type, (uint32_t)len, h);
		if ((r = writer_record(w, hdr, sizeof hdr, data, len, NULL)) < 0)
			goto out;
	}
	if (s != SQLITE_DONE)
		r = cat_err(w->p, "reading the snapshot's new nodes");
out:
	sqlite3_finalize(st);
	return r;
}

/* A commit that failed before its COMMIT: waits for the syncer (its job
 * uses the packs, which the caller may close next) and returns r with its
 * detail, whatever the fsyncs gave. */
static int sync_wait_keeping(struct store_writer *w, int r)
{
	struct ferry_errsave saved;
	ferry_err_save(&saved);
	(void)sync_packs_wait(w);
	ferry_err_restore(&saved);
	return r;
}

int store_writer_commit_snapshot(struct store_writer *w, const struct store_ds *ds,
				 const char *name, const uint8_t root[FERRY_HASH_LEN],
				 uint64_t guid, uint64_t creation_ns, int64_t *snap_id)
{
	struct store_pool *p = w->p;
	char full[STORE_NAME_MAX + 2];
	int64_t id = 0;
	int r;

	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return ferry_err(FERR_INVAL, "'%s' is not a filesystem or volume", ds->name);
	if (snprintf(full, sizeof full, "%s@%s", ds->name, name) >= (int)sizeof full - 1)
		return ferry_err(FERR_NAME, "snapshot name '%s@%s' is too long", ds->name, name);
	if ((r = store_name_check(full, STORE_NAME_SNAPSHOT)) < 0 || (r = writer_broken(w)) < 0)
		return r;
	if ((r = put_node_records(w)) < 0 || (r = sync_packs_start(w)) < 0)
		return writer_err(w, r);
	/* The rows are written while the syncer makes the packs durable; the
	 * COMMIT that names them waits for it. */
	if ((r = batch_end(w, 1)) < 0 || (r = store_tx_begin(p)) < 0)
		return sync_wait_keeping(w, r);
	if ((r = snap_name_free(p, ds, name, full)) < 0 || (r = writer_record_packs(w)) < 0 ||
	    (r = cat_exec(p, "INSERT OR IGNORE INTO main.nodes(hash, type, data)"
			     " SELECT hash, type, data FROM temp.w_nodes")) < 0 ||
	    (r = writer_refs_stored(w)) < 0 ||
	    (r = snap_record(p, ds, name, root, guid, creation_ns, &id)) < 0) {
		store_tx_rollback(p);
		return sync_wait_keeping(w, r);
	}
	if ((r = sync_packs_wait(w)) < 0) {
		store_tx_rollback(p);
		return writer_err(w, r);
	}
	if ((r = store_tx_commit(p)) < 0)
		return r;
	/* Committed: forget the pending rows (unless no snapshot follows:
	 * see store_writer_last) and start the next snapshot on a fresh pack
	 * so no committed pack ever grows again. */
	if (!w->last)
		writer_clear(w);
	writer_handoff(w);
	if (snap_id)
		*snap_id = id;
	return 0;
}
