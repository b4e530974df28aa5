/* store/gc.c — reclaiming nodes and blocks no snapshot references.
 * Bookmark roots are node roots only: the nodes under them stay (a send
 * from a bookmark walks them), the blocks they name do not.
 *
 * Runs under the pool's gc lock held exclusively, so no writer is adding
 * blocks that could be referencing what gc removes. Each step is ordered for
 * crash safety: catalogue rows go first (in a transaction), pack files are
 * unlinked only after that commits; live blocks copied out of a mostly-dead
 * pack are fsynced in their new pack before the transaction that points the
 * index at them. A crash anywhere leaves the last committed catalogue,
 * every block it names intact, and at worst files the next gc removes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"

struct gc {
	struct store_pool *p;
	struct store_gc_stats *st;
	const struct store_gc_opts *o; /* never NULL */
	struct store_gc_progress pg;
	sqlite3_stmt *st_node, *st_mark;
	struct fbuf buf;
	uint8_t (*stack)[FERRY_HASH_LEN];
	size_t nstack, capstack;
};

static void gc_progress(struct gc *g)
{
	if (g->o->progress)
		g->o->progress(g->o->arg, &g->pg);
}

static int push(struct gc *g, const uint8_t *h)
{
	int r = VEC_GROW(g->stack, g->capstack, g->nstack, 1024, "collecting garbage");
	if (r < 0)
		return r;
	memcpy(g->stack[g->nstack++], h, FERRY_HASH_LEN);
	return 0;
}

/* Marks h live; returns 1 if it was new, 0 if already marked. */
static int mark(struct gc *g, const uint8_t *h)
{
	sqlite3_reset(g->st_mark);
	sqlite3_bind_blob(g->st_mark, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
	if (sqlite3_step(g->st_mark) != SQLITE_DONE) {
		sqlite3_reset(g->st_mark);
		return cat_err(g->p, "marking nodes");
	}
	sqlite3_reset(g->st_mark);
	return sqlite3_changes(g->p->db) > 0;
}

static int push_child(void *arg, int is_block, const uint8_t *h)
{
	(void)is_block; /* node_children gives blocks only when asked */
	return push(arg, h);
}

/* Pushes the children of one node (already read into g->buf). */
static int children(struct gc *g, int type)
{
	return node_children(type, g->buf.data, g->buf.len, 0, push_child, g);
}

/* Ends the transaction gc began itself with BEGIN: COMMIT after r >= 0,
 * else ROLLBACK; r, or the COMMIT's failure. A failed COMMIT leaves the
 * transaction open (and its read lock held), so it is rolled back too,
 * keeping the COMMIT's error. */
static int tx_end(struct gc *g, int r)
{
	struct ferry_errsave saved;
	if (r >= 0) {
		int e = cat_exec(g->p, "COMMIT");
		if (e >= 0)
			return r;
		r = e;
	}
	ferry_err_save(&saved);
	int rb = cat_exec(g->p, "ROLLBACK"); /* nothing to undo: the lock goes */
	(void)rb;
	ferry_err_restore(&saved);
	return r;
}

static int mark_nodes(struct gc *g)
{
	sqlite3_stmt *st = NULL;
	int r, s;
	if ((r = cat_exec(g->p, "CREATE TEMP TABLE IF NOT EXISTS gc_live(hash BLOB PRIMARY KEY)"
				" WITHOUT ROWID; DELETE FROM temp.gc_live;")) < 0)
		return r;
	if ((r = cat_prepare(g->p, "INSERT OR IGNORE INTO temp.gc_live(hash) VALUES(?)",
			     &g->st_mark)) < 0 ||
	    (r = cat_prepare(g->p, "SELECT type, data FROM nodes WHERE hash = ?", &g->st_node)) < 0)
		return r;
	/* bookmarks keep their trees' nodes (a send walks them) but no blocks */
	if ((r = cat_prepare(g->p, "SELECT root FROM snapshots UNION SELECT root FROM bookmarks",
			     &st)) < 0)
		return r;
	while ((s = sqlite3_step(st)) == SQLITE_ROW)
		if (sqlite3_column_bytes(st, 0) == FERRY_HASH_LEN &&
		    (r = push(g, sqlite3_column_blob(st, 0))) < 0)
			break;
	if (r == 0 && s != SQLITE_DONE)
		r = cat_err(g->p, "listing snapshot roots");
	sqlite3_finalize(st);
	if (r < 0)
		return r;
	if ((r = cat_exec(g->p, "BEGIN")) < 0)
		return r;
	while (g->nstack && r >= 0) {
		uint8_t h[FERRY_HASH_LEN];
		memcpy(h, g->stack[--g->nstack], FERRY_HASH_LEN);
		if ((r = mark(g, h)) <= 0)
			continue;
		sqlite3_reset(g->st_node);
		sqlite3_bind_blob(g->st_node, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		if (sqlite3_step(g->st_node) != SQLITE_ROW) {
			char hex[FERRY_HASH_HEX];
			hash_to_hex(h, hex);
			sqlite3_reset(g->st_node);
			r = ferry_err(FERR_CORRUPT, "node %s is referenced but missing", hex);
			break;
		}
		int type = sqlite3_column_int(g->st_node, 0);
		fbuf_reset(&g->buf);
		int n = sqlite3_column_bytes(g->st_node, 1);
		g->pg.done += (uint64_t)n;
		gc_progress(g);
		r = n ? fbuf_append(&g->buf, sqlite3_column_blob(g->st_node, 1), (size_t)n) : 0;
		sqlite3_reset(g->st_node);
		if (r == 0)
			r = children(g, type);
	}
	r = tx_end(g, r);
	return r < 0 ? r : 0;
}

static int query_u64(struct store_pool *p, const char *sql, int64_t a, uint64_t *x, uint64_t *y)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, sql, &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, a);
	if (sqlite3_step(st) == SQLITE_ROW) {
		*x = (uint64_t)sqlite3_column_int64(st, 0);
		if (y)
			*y = (uint64_t)sqlite3_column_int64(st, 1);
	} else {
		r = cat_err(p, "querying");
	}
	sqlite3_finalize(st);
	return r;
}

static int free_rows(struct gc *g)
{
	struct store_pool *p = g->p;
	uint64_t nb = 0, bytes = 0, before = 0, after = 0;
	int r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = query_u64(p, "SELECT count(*) FROM nodes WHERE ? IS NOT NULL", 1, &before, NULL)) < 0 ||
	    (r = cat_exec(p, "DELETE FROM nodes WHERE hash NOT IN (SELECT hash FROM temp.gc_live)")) < 0 ||
	    (r = query_u64(p, "SELECT count(*) FROM nodes WHERE ? IS NOT NULL", 1, &after, NULL)) < 0 ||
	    (r = query_u64(p, "SELECT count(*), coalesce(sum(psize), 0) FROM blocks WHERE ? IS NOT NULL"
			      " AND id NOT IN (SELECT block_id FROM ds_refs UNION ALL SELECT block_id FROM recv_partial_blocks)", 1, &nb, &bytes)) < 0 ||
	    (r = cat_exec(p, "DELETE FROM blocks WHERE id NOT IN (SELECT block_id FROM ds_refs UNION ALL SELECT block_id FROM recv_partial_blocks)")) < 0 ||
	    (r = life_multicopy_recheck(p)) < 0) {
		store_tx_rollback(p);
		return r;
	}
	if ((r = store_tx_commit(p)) < 0)
		return r;
	g->st->nodes_freed = before - after;
	g->st->blocks_freed = nb;
	g->st->bytes_freed = bytes;
	return 0;
}

struct live {
	int64_t id;
	int64_t off;
	int64_t psize;
	int64_t newoff;
};

/* Copies the live blocks of pack (id, name) into the output pack, checking
 * each one (header against the index, content against its hash). */
static int copy_live(struct gc *g, int64_t id, const char *name, int out_fd, uint64_t *out_size,
		     struct live **lv, size_t *nlv)
{
	sqlite3_stmt *st = NULL;
	struct live *v = NULL;
	size_t n = 0, cap = 0;
	char path[PATH_MAX];
	uint8_t *buf = NULL, *dec = NULL;
	int r, fd = -1;
	if ((r = cat_prepare(g->p, "SELECT id, offset, psize, hash, codec, level, lsize FROM blocks"
				  " WHERE pack_id = ? ORDER BY offset", &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, id);
	pack_path(g->p, name, path, sizeof path);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		r = ferry_err_errno(errno, "cannot open pack '%s'", path);
		goto out;
	}
	if (!(buf = malloc(PACK_BLK_HDR_LEN + STORE_BLOCK_MAX)) || !(dec = malloc(STORE_BLOCK_MAX))) {
		r = ferry_err(FERR_NOMEM, "collecting garbage");
		goto out;
	}
	int s;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t bid = sqlite3_column_int64(st, 0), off = sqlite3_column_int64(st, 1);
		int64_t ps = sqlite3_column_int64(st, 2), ls = sqlite3_column_int64(st, 6);
		if (ps <= 0 || ls <= 0 || ps > ls || (uint64_t)ls > STORE_BLOCK_MAX ||
		    sqlite3_column_bytes(st, 3) != FERRY_HASH_LEN) {
			r = ferry_err(FERR_CORRUPT, "bad index row for pack '%s'", name);
			goto out;
		}
		size_t need = PACK_BLK_HDR_LEN + (size_t)ps, got = 0;
		if ((r = io_pread_full(fd, buf, need, (off_t)off, &got)) < 0)
			goto out;
		struct codec_spec c;
		uint32_t hl, hp;
		uint8_t hh[FERRY_HASH_LEN], h2[FERRY_HASH_LEN];
		if (got != need || pack_blk_hdr_get(buf, &c, &hl, &hp, hh) < 0 || hp != (uint32_t)ps ||
		    hl != (uint32_t)ls || memcmp(hh, sqlite3_column_blob(st, 3), FERRY_HASH_LEN) ||
		    c.id != sqlite3_column_int(st, 4) || c.level != sqlite3_column_int(st, 5)) {
			r = ferry_err(FERR_CORRUPT, "pack '%s' at %lld does not hold its indexed block",
				      name, (long long)off);
			goto out;
		}
		if (c.id == CODEC_OFF)
			hash_blake2b(h2, buf + PACK_BLK_HDR_LEN, hl);
		else if ((r = codec_decode(c, buf + PACK_BLK_HDR_LEN, hp, dec, hl)) < 0)
			goto out;
		else
			hash_blake2b(h2, dec, hl);
		if (memcmp(h2, hh, FERRY_HASH_LEN)) {
			r = ferry_err(FERR_CORRUPT, "block in pack '%s' at %lld fails its hash", name,
				      (long long)off);
			goto out;
		}
		/* the output pack is of this ferry's version: the CRC tail is
		 * computed anew (the old pack may have none) */
		uint8_t t[PACK_REC_TAIL];
		size_t tl = pack_tail_new(g->p);
		pack_tail_put(t, pack_rec_crc(buf, PACK_BLK_HDR_LEN, buf + PACK_BLK_HDR_LEN, hp));
		if ((r = io_write_full(out_fd, buf, need)) < 0 ||
		    (r = io_write_full(out_fd, t, tl)) < 0)
			goto out;
		if ((r = VEC_GROW(v, cap, n, 256, "collecting garbage")) < 0)
			goto out;
		v[n].id = bid;
		v[n].off = off;
		v[n].psize = ps;
		v[n].newoff = (int64_t)*out_size;
		n++;
		*out_size += need + tl;
	}
	if (s != SQLITE_DONE)
		r = cat_err(g->p, "reading the block index");
out:
	sqlite3_finalize(st);
	if (fd >= 0)
		close(fd);
	free(buf);
	free(dec);
	if (r < 0) {
		free(v);
		return r;
	}
	*lv = v;
	*nlv = n;
	return 0;
}

/* Unlinks an uncommitted output pack on an error path. One that cannot
 * be removed is an orphan the next gc's sweep removes; the failure is
 * named after the error being reported. */
static void gc_unlink_quiet(struct store_pool *p, const char *name)
{
	struct ferry_errsave e;
	char what[64];
	ferry_err_save(&e);
	snprintf(what, sizeof what, "removing the unfinished pack '%s'", name);
	if (pack_unlink(p, name, 1) < 0)
		ferry_err_restore_also(&e, what);
	else
		ferry_err_restore(&e);
}

struct packrow {
	int64_t id;
	char name[64];
	uint64_t live, size;
	uint64_t nlive; /* bytes of node records of live nodes (records.c) */
	int keep;       /* the newest checkpoint's pack: never swept */
};

/* ---- node records: gc keeps those of live nodes (docs/ferry-nodes.md) ---- */

struct nodescan {
	struct gc *g;
	sqlite3_stmt *st_live;
	int out_fd;        /* -1: count only */
	uint64_t *out_size;
	uint64_t bytes;
	uint8_t *buf;
};

static int node_rec_live(void *arg, int fd, uint64_t off, const struct pack_rec *x)
{
	struct nodescan *s = arg;
	int r;
	sqlite3_reset(s->st_live);
	sqlite3_bind_blob(s->st_live, 1, x->hash, FERRY_HASH_LEN, SQLITE_STATIC);
	if ((r = pack_step_exists(s->g->p, s->st_live, "looking up a node")) <= 0)
		return r;
	size_t need = (size_t)pack_rec_len(x), got = 0;
	if (s->out_fd < 0) {
		s->bytes += need;
		return 0;
	}
	if ((r = io_pread_full(fd, s->buf, need, (off_t)off, &got)) < 0)
		return r;
	/* a damaged copy is not carried on (scrub reports the pack) */
	if (got != need || pack_rec_verify(s->buf, x, s->buf + x->hdr_len, NULL) < 0) {
		ferry_err_clear();
		return 0;
	}
	/* written as a record of the output pack's version: its CRC tail
	 * made anew (the old pack may be of version 2, without one) */
	size_t body = x->hdr_len + (size_t)x->payload, tl = pack_tail_new(s->g->p);
	uint8_t t[PACK_REC_TAIL];
	pack_tail_put(t, pack_rec_crc(s->buf, x->hdr_len, s->buf + x->hdr_len, x->payload));
	if ((r = io_write_full(s->out_fd, s->buf, body)) < 0 ||
	    (r = io_write_full(s->out_fd, t, tl)) < 0)
		return r;
	*s->out_size += body + tl;
	s->bytes += need;
	return 0;
}

/* The bytes of live node records in pack name; with out_fd >= 0 they are
 * also copied there (*out_size grows). */
static int node_recs(struct gc *g, const char *name, int out_fd, uint64_t *out_size,
		     uint64_t *bytes)
{
	struct nodescan s = {g, NULL, out_fd, out_size, 0, NULL};
	int r;
	*bytes = 0;
	if (!g->p->records)
		return 0;
	if (out_fd >= 0 && !(s.buf = malloc(PACK_NOD_HDR_LEN + NODE_MAX + PACK_REC_TAIL)))
		return ferry_err(FERR_NOMEM, "collecting garbage");
	if ((r = cat_prepare(g->p, "SELECT 1 FROM nodes WHERE hash = ?", &s.st_live)) == 0)
		r = pack_nodes_each(g->p, name, node_rec_live, &s);
	sqlite3_finalize(s.st_live);
	free(s.buf);
	*bytes = s.bytes;
	return r;
}

/* The pack a rewrite copies live blocks into. */
struct gcout {
	int fd;             /* -1: none open */
	char name[32];
	uint64_t size;      /* bytes written */
	uint64_t committed; /* bytes the catalogue knows; 0: not in the catalogue */
};

/* Every pack with its live bytes (block headers included), by id. */
static int list_packs(struct store_pool *p, struct packrow **out, size_t *nout)
{
	sqlite3_stmt *st = NULL;
	struct packrow *v = NULL;
	size_t n = 0, cap = 0;
	int r, s;
	if ((r = cat_prepare(p, "SELECT k.id, k.name, coalesce((SELECT sum(b.psize + ?) FROM blocks b"
			       " WHERE b.pack_id = k.id), 0), k.size FROM packs k ORDER BY k.id",
			     &st)) < 0)
		return r;
	sqlite3_bind_int(st, 1, PACK_BLK_HDR_LEN);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = VEC_GROW(v, cap, n, 64, "collecting garbage")) < 0)
			goto out;
		v[n].id = sqlite3_column_int64(st, 0);
		snprintf(v[n].name, sizeof v[n].name, "%s", (const char *)sqlite3_column_text(st, 1));
		v[n].live = (uint64_t)sqlite3_column_int64(st, 2);
		v[n].size = (uint64_t)sqlite3_column_int64(st, 3);
		v[n].nlive = 0; /* counted by sweep_packs where it is needed */
		v[n].keep = 0;
		n++;
	}
	if (s != SQLITE_DONE)
		r = cat_err(p, "listing packs");
out:
	sqlite3_finalize(st);
	if (r < 0) {
		free(v);
		return r;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* Packs without a live block, ks[0..nk): their rows go in one
 * transaction, then their files, then one fsync of the directory (a
 * crash before it leaves files the next gc removes as orphans). */
static int delete_dead(struct gc *g, const struct packrow *const *ks, size_t nk)
{
	struct store_pool *p = g->p;
	char dir[PATH_MAX];
	int r = 0;
	if (nk == 0)
		return 0;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	for (size_t i = 0; i < nk && r == 0; i++)
		r = cat_exec_i64(p, "DELETE FROM packs WHERE id = ?", ks[i]->id);
	if (r < 0) {
		store_tx_rollback(p);
		return r;
	}
	if ((r = store_tx_commit(p)) < 0)
		return r;
	for (size_t i = 0; i < nk && r == 0; i++) {
		if ((r = pack_unlink(p, ks[i]->name, 0)) < 0)
			break;
		/* an old checkpoint's pack is the records' bookkeeping, not
		 * data: "packs deleted" stays the count of data packs */
		if (ks[i]->name[0] != 'r')
			g->st->packs_deleted++;
	}
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	return r < 0 ? r : io_fsync_dir(dir);
}

/* Inside the rewrite's transaction: the output pack's row (made or
 * grown), the moved blocks pointed at it, the old pack's row gone. */
static int repoint_blocks(struct store_pool *p, const struct gcout *o, const struct packrow *k,
			  const struct live *lv, size_t nlv)
{
	sqlite3_stmt *up = NULL;
	int64_t new_id = 0;
	int r;
	if ((r = cat_prepare(p, "INSERT OR REPLACE INTO packs(id, name, size) VALUES((SELECT id"
			       " FROM packs WHERE name = ?1), ?1, ?2)", &up)) < 0)
		return r;
	sqlite3_bind_text(up, 1, o->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(up, 2, (int64_t)o->size);
	if (sqlite3_step(up) != SQLITE_DONE)
		r = cat_err(p, "recording a pack");
	sqlite3_finalize(up);
	up = NULL;
	if (r < 0 || (r = cat_prepare(p, "SELECT id FROM packs WHERE name = ?", &up)) < 0)
		return r;
	sqlite3_bind_text(up, 1, o->name, -1, SQLITE_STATIC);
	if (sqlite3_step(up) == SQLITE_ROW)
		new_id = sqlite3_column_int64(up, 0);
	else
		r = cat_err(p, "recording a pack");
	sqlite3_finalize(up);
	up = NULL;
	if (r < 0 || (r = cat_prepare(p, "UPDATE blocks SET pack_id = ?, offset = ? WHERE id = ?",
				      &up)) < 0)
		return r;
	for (size_t i = 0; i < nlv && r == 0; i++) {
		sqlite3_reset(up);
		sqlite3_bind_int64(up, 1, new_id);
		sqlite3_bind_int64(up, 2, lv[i].newoff);
		sqlite3_bind_int64(up, 3, lv[i].id);
		if (sqlite3_step(up) != SQLITE_DONE)
			r = cat_err(p, "moving a block");
	}
	sqlite3_finalize(up);
	if (r < 0)
		return r;
	return cat_exec_i64(p, "DELETE FROM packs WHERE id = ?", k->id);
}

/* The output pack ready for more: a new one when there is none yet or
 * the one open has reached PACK_TARGET_SIZE. Bytes of the old one past
 * what was committed (a damaged pack's partial copy) are nobody's; a
 * pack never committed is an orphan the next gc removes. */
static int gcout_open(struct store_pool *p, struct gcout *o)
{
	int r;
	if (o->fd >= 0 && o->size < PACK_TARGET_SIZE)
		return 0;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if ((r = pack_create(p, &o->fd, o->name)) < 0)
		return r;
	o->size = PACK_HDR_LEN;
	o->committed = 0;
	return 0;
}

/* The copy and the commit of rewrite_pack. */
static int move_live(struct gc *g, struct gcout *o, const struct packrow *k)
{
	struct store_pool *p = g->p;
	char dir[PATH_MAX], what[64];
	struct live *lv = NULL;
	size_t nlv = 0;
	int r;
	if ((r = gcout_open(p, o)) < 0)
		return r;
	uint64_t nb;
	if ((r = copy_live(g, k->id, k->name, o->fd, &o->size, &lv, &nlv)) < 0)
		return r;
	if ((r = node_recs(g, k->name, o->fd, &o->size, &nb)) < 0) {
		free(lv);
		return r;
	}
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	snprintf(what, sizeof what, "pack '%s'", o->name);
	if ((r = io_fsync(o->fd, what)) < 0 || (r = io_fsync_dir(dir)) < 0 ||
	    (r = store_tx_begin(p)) < 0) {
		free(lv);
		return r;
	}
	r = repoint_blocks(p, o, k, lv, nlv);
	free(lv);
	if (r < 0) {
		store_tx_rollback(p);
		return r;
	}
	if ((r = store_tx_commit(p)) < 0)
		return r;
	o->committed = o->size;
	return 0;
}

/* Rewrites pack k when at least half of it (and 1 MiB) is garbage: its
 * live blocks and node records are copied into the output pack and made
 * durable, the catalogue points at them in one transaction, then k's
 * file goes. A pack shorter than what it holds is left alone (scrub
 * reports it). Returns 0, 1 when the disk has no room for the copy (a
 * rewrite only moves what is live: the packs then stay as they are, and
 * gc goes on without rewriting), or a negative error. */
static int rewrite_pack(struct gc *g, struct gcout *o, const struct packrow *k)
{
	char path[PATH_MAX];
	struct stat sb;
	int r;
	pack_path(g->p, k->name, path, sizeof path);
	uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	uint64_t live = k->live + k->nlive;
	if (size < PACK_HDR_LEN + live || size - PACK_HDR_LEN - live < ((uint64_t)1 << 20) ||
	    live * 2 > size)
		return 0;
	if ((r = move_live(g, o, k)) == -FERR_NOSPC) {
		ferry_err_clear();
		return 1;
	}
	if (r < 0 || (r = pack_unlink(g->p, k->name, 1)) < 0)
		return r;
	g->st->packs_rewritten++;
	return 0;
}

/* A rewrite that did not commit gives its bytes back: a new output pack
 * goes, one already in the catalogue is cut back to what was committed
 * (bytes past that are nobody's; when they cannot be cut, readers still
 * go by the index, never past it, and the next rewrite drops them). */
static void gcout_close(struct store_pool *p, struct gcout *o)
{
	struct stat ob;
	if (o->fd < 0)
		return;
	if (!o->committed) {
		gc_unlink_quiet(p, o->name);
	} else if (fstat(o->fd, &ob) == 0 && (uint64_t)ob.st_size > o->committed) {
		struct ferry_errsave e;
		ferry_err_save(&e);
		if (io_ftruncate(o->fd, (off_t)o->committed, "a pack") < 0 ||
		    io_fsync(o->fd, "a pack") < 0)
			ferry_err_restore_also(&e, "cutting the rewritten pack back");
		else
			ferry_err_restore(&e);
	}
	close(o->fd);
	o->fd = -1;
}

/* Small packs: every commit writes a pack of its blocks and one of its
 * nodes, a few KiB each for an hourly incremental, so a pool that takes
 * one an hour gains some 17,000 files a year. Once there are
 * GC_SMALL_MERGE packs under GC_SMALL_SIZE, gc merges every one of them
 * into packs of up to PACK_TARGET_SIZE (what a merge leaves under
 * GC_SMALL_SIZE is merged again with the next ones: a copy of at most
 * that much per gc). Fewer, and they stay: a pool that got its data in
 * one go has a handful. They are merged GC_MERGE_BATCH at a time (or
 * GC_MERGE_BYTES of them, whichever comes first): one fsync of the
 * output, one transaction and one fsync of the directory for the lot,
 * where a pack at a time cost three fsyncs a pack. Dead packs (an hourly
 * pool's old checkpoints) go GC_MERGE_BATCH at a time likewise. */
#define GC_SMALL_SIZE ((uint64_t)1 << 20)
#define GC_SMALL_MERGE 64
#define GC_MERGE_BATCH 64
#define GC_MERGE_BYTES ((uint64_t)8 << 20)

/* 1 when pack k is a small pack with something live in it (a dead one is
 * deleted, the newest checkpoint stays). */
static int small_live(const struct packrow *k)
{
	return !k->keep && (k->live != 0 || k->nlive != 0) && k->size < GC_SMALL_SIZE;
}

/* Merges the small packs ks[0..nk) into the output pack (see above):
 * the live blocks and node records of each are copied and checked, the
 * output made durable, the catalogue pointed at all of them in one
 * transaction, then their files go. A pack that holds a damaged block,
 * or is shorter than what it holds, stays for scrub (what was copied of
 * it is unindexed bytes in the output). Returns 0, 1 when the disk has
 * no room for the copy (rewrite_pack), or a negative error; on either
 * of those nothing of the batch is committed, and gcout_close gives the
 * output's bytes back. */
static int merge_batch(struct gc *g, struct gcout *o, const struct packrow *const *ks, size_t nk)
{
	struct store_pool *p = g->p;
	struct live *lv[GC_MERGE_BATCH] = {NULL};
	size_t nlv[GC_MERGE_BATCH] = {0};
	const struct packrow *done[GC_MERGE_BATCH];
	size_t nd = 0;
	char path[PATH_MAX], dir[PATH_MAX], what[64];
	struct stat sb;
	int r = 0;
	if (nk == 0)
		return 0;
	if (nk > GC_MERGE_BATCH)
		return ferry_err(FERR_LIMIT, "a merge of %zu packs at once", nk);
	if ((r = gcout_open(p, o)) == -FERR_NOSPC) {
		ferry_err_clear();
		return 1;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < nk && r == 0; i++) {
		const struct packrow *k = ks[i];
		pack_path(p, k->name, path, sizeof path);
		uint64_t size = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
		if (size < PACK_HDR_LEN + k->live + k->nlive)
			continue;
		uint64_t nb;
		if ((r = copy_live(g, k->id, k->name, o->fd, &o->size, &lv[nd], &nlv[nd])) == 0 &&
		    (r = node_recs(g, k->name, o->fd, &o->size, &nb)) < 0) {
			free(lv[nd]);
			lv[nd] = NULL;
		}
		if (r == -FERR_CORRUPT) {
			ferry_err_clear();
			r = 0;
		} else if (r == 0) {
			done[nd++] = k;
		}
	}
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	snprintf(what, sizeof what, "pack '%s'", o->name);
	if (r == 0 && nd > 0 && (r = io_fsync(o->fd, what)) == 0 && (r = io_fsync_dir(dir)) == 0 &&
	    (r = store_tx_begin(p)) == 0) {
		for (size_t i = 0; i < nd && r == 0; i++)
			r = repoint_blocks(p, o, done[i], lv[i], nlv[i]);
		if (r < 0)
			store_tx_rollback(p);
		else if ((r = store_tx_commit(p)) == 0)
			o->committed = o->size;
	}
	for (size_t i = 0; i < nd; i++)
		free(lv[i]);
	if (r == -FERR_NOSPC) {
		ferry_err_clear();
		return 1;
	}
	if (r < 0 || nd == 0)
		return r;
	for (size_t i = 0; i < nd && r == 0; i++)
		if ((r = pack_unlink(p, done[i]->name, 0)) == 0)
			g->st->packs_rewritten++;
	if (r == 0)
		r = io_fsync_dir(dir);
	return r;
}

static int sweep_packs(struct gc *g)
{
	struct packrow *v = NULL;
	struct gcout o = {.fd = -1};
	size_t n = 0, nsmall = 0;
	int r;
	if ((r = list_packs(g->p, &v, &n)) < 0)
		return r;
	g->pg.phase = STORE_GC_SWEEPING;
	g->pg.done = g->pg.total = 0;
	for (size_t i = 0; i < n; i++)
		g->pg.total += v[i].size;
	gc_progress(g);
	/* In a pool that keeps records: the newest checkpoint stays (recover
	 * starts from it), every older one is garbage; a pack gc would
	 * delete or rewrite for its dead blocks keeps its live node records,
	 * which count as live bytes and move with the live blocks. */
	char keep[64] = "";
	if (g->p->records && (r = cat_meta_get_opt(g->p, "rec_pack", keep, sizeof keep)) < 0) {
		free(v); /* (not "none yet": the newest checkpoint would go as dead) */
		return r;
	}
	/* One read transaction for the count: each lookup outside one took
	 * and gave back the WAL's read lock, 45 % of a gc of 100,000 files
	 * (gc excludes writers, so it reads what per-lookup reads would) */
	if ((r = cat_exec(g->p, "BEGIN")) < 0) {
		free(v);
		return r;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		v[i].keep = !strcmp(v[i].name, keep);
		if (!v[i].keep && v[i].live * 2 <= v[i].size)
			r = node_recs(g, v[i].name, -1, NULL, &v[i].nlive);
	}
	r = tx_end(g, r);
	/* Dead packs first: deleting them frees space without writing any,
	 * so on a full disk the rewrites below may then find room. */
	const struct packrow *batch[GC_MERGE_BATCH];
	size_t nb = 0;
	for (size_t i = 0; i <= n && r == 0; i++) {
		if (i < n && !v[i].keep && v[i].live == 0 && v[i].nlive == 0)
			batch[nb++] = &v[i];
		if (nb > 0 && (nb == GC_MERGE_BATCH || i == n)) {
			r = delete_dead(g, batch, nb);
			for (size_t j = 0; j < nb; j++)
				g->pg.done += batch[j]->size;
			nb = 0;
			gc_progress(g);
		}
	}
	for (size_t i = 0; i < n; i++)
		nsmall += (size_t)small_live(&v[i]);
	uint64_t bbytes = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		if (v[i].keep || v[i].live != 0 || v[i].nlive != 0) {
			if (nsmall >= GC_SMALL_MERGE && small_live(&v[i])) {
				batch[nb++] = &v[i];
				bbytes += v[i].live + v[i].nlive;
				if (nb == GC_MERGE_BATCH || bbytes >= GC_MERGE_BYTES) {
					r = merge_batch(g, &o, batch, nb);
					nb = 0;
					bbytes = 0;
				}
			} else if (!v[i].keep) { /* the newest checkpoint stays as it is */
				r = rewrite_pack(g, &o, &v[i]);
			}
			g->pg.done += v[i].size;
			gc_progress(g);
		}
	if (r == 0)
		r = merge_batch(g, &o, batch, nb);
	gcout_close(g->p, &o); /* the output pack of a rewrite that failed goes */
	free(v);
	return r < 0 ? r : 0;
}

/* 1 when a quarter or more of the catalogue's pages are free: worth a
 * VACUUM. Below that the free pages are left for the next writes to
 * reuse; a VACUUM would copy the whole catalogue to give back little, and
 * it packs every index full, so that the next receive's inserts split a
 * leaf each (three to four pages dirtied per row instead of one). */
static int compact_worth(struct store_pool *p)
{
	sqlite3_stmt *st = NULL;
	int64_t v[2] = {0, 0};
	static const char *const sql[2] = {"PRAGMA freelist_count", "PRAGMA page_count"};
	for (int i = 0; i < 2; i++) {
		int r = cat_prepare(p, sql[i], &st);
		if (r < 0)
			return r;
		int s = sqlite3_step(st);
		if (s == SQLITE_ROW)
			v[i] = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		if (s != SQLITE_ROW)
			return cat_err(p, "compacting the catalogue");
	}
	return v[1] > 0 && v[0] >= v[1] / 4;
}

/* Gives the freed catalogue pages back to the filesystem when they are
 * worth it (compact_worth). VACUUM writes
 * a copy of the whole catalogue through the WAL: with less room than
 * that (outside the reserve, which is for gc's and destroy's own rows) it
 * is left for a later gc, and a VACUUM the disk cannot hold is not a gc
 * failure either; the checkpoint then gives the WAL's space back. */
static int compact(struct store_pool *p)
{
	char file[PATH_MAX + 32];
	struct stat st;
	struct statvfs v;
	int r = 0, worth;
	if ((worth = compact_worth(p)) < 0)
		return worth;
	snprintf(file, sizeof file, "%s/%s", p->path, STORE_CATALOG);
	if (worth && stat(file, &st) == 0 && statvfs(p->path, &v) == 0 &&
	    (uint64_t)v.f_bavail * v.f_frsize > 2 * (uint64_t)st.st_size + ((uint64_t)1 << 20)) {
		catvfs_writers(p->site, 1); /* not with the reserve */
		r = cat_exec_what(p, "VACUUM", "compacting the catalogue");
		catvfs_writers(p->site, -1);
		if (r == -FERR_NOSPC || r == -FERR_NOMEM) { /* a later gc may */
			ferry_err_clear();
			r = 0;
		}
		if (r < 0)
			return r;
	}
	r = cat_exec_what(p, "PRAGMA wal_checkpoint(TRUNCATE)", "compacting the catalogue");
	/* a reader keeps the WAL (busy), or the moment is bad: a later
	 * checkpoint does it */
	if (r == -FERR_NOSPC || r == -FERR_NOMEM || r == -FERR_BUSY) {
		ferry_err_clear();
		r = 0;
	}
	return r;
}

int store_gc(struct store_pool *p, struct store_gc_stats *st)
{
	static const struct store_gc_opts none = {NULL, NULL};
	return store_gc_run(p, &none, st);
}

int store_gc_run(struct store_pool *p, const struct store_gc_opts *o, struct store_gc_stats *st)
{
	struct gc g;
	int r, lock = -1;
	memset(&g, 0, sizeof g);
	memset(st, 0, sizeof *st);
	g.p = p;
	g.st = st;
	g.o = o;
	g.pg.phase = STORE_GC_MARKING;
	fbuf_init(&g.buf, NODE_MAX);
	act_begin(p);
	if ((r = pack_lock(p, 1, &lock)) < 0) {
		act_end(p);
		return r;
	}
	/* orphans first: removing them writes nothing, so on a full disk
	 * they make room for what follows */
	if ((r = pack_sweep_orphans_quiesced(p, &st->orphans_deleted)) < 0 || (r = mark_nodes(&g)) < 0 ||
	    (r = free_rows(&g)) < 0 || (r = sweep_packs(&g)) < 0)
		goto out;
	sqlite3_finalize(g.st_node);
	sqlite3_finalize(g.st_mark);
	g.st_node = g.st_mark = NULL;
	if ((r = cat_exec(p, "DELETE FROM temp.gc_live")) < 0 || (r = compact(p)) < 0)
		goto out;
	/* what gc freed makes room for the reserve again */
	reserve_grow(p, RESERVE_BEST);
out:
	sqlite3_finalize(g.st_node);
	sqlite3_finalize(g.st_mark);
	free(g.stack);
	fbuf_release(&g.buf);
	close(lock);
	act_end(p);
	return r;
}
