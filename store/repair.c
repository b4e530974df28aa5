/* store/repair.c — `ferry scrub --repair-from`: good copies of damaged
 * blocks go into one new pack (written, fsynced with packs/, never an
 * existing pack rewritten), and one catalogue transaction moves the index
 * rows to it, replaces damaged nodes and drops the healed rows of the
 * scrub's error log (scrub.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* ---- repair -------------------------------------------------------------------- */

struct rep_block {
	int64_t block_id, old_pack, new_off, err_id;
};
struct rep_node {
	uint8_t hash[FERRY_HASH_LEN];
	int type;
	uint8_t *data;
	size_t len;
	int64_t err_id;
};

struct store_repair {
	struct store_pool *p;
	int lock_fd;
	int fd;             /* the new pack, -1 until a block comes */
	char name[32];
	uint64_t size, bytes;
	int nfd;            /* a pool with records: the replaced nodes' pack */
	char nname[32];
	uint64_t nsize;
	struct rep_block *b;
	size_t nb, capb;
	struct rep_node *n;
	size_t nn, capn;
};

int store_repair_new(struct store_pool *p, struct store_repair **out)
{
	struct store_repair *rp = calloc(1, sizeof *rp);
	int r;
	if (!rp)
		return ferry_err(FERR_NOMEM, "repairing");
	rp->p = p;
	rp->fd = -1;
	rp->nfd = -1;
	act_begin(p);
	if ((r = pack_lock(p, 0, &rp->lock_fd)) < 0) {
		act_end(p);
		free(rp);
		return r;
	}
	*out = rp;
	return 0;
}

void store_repair_free(struct store_repair *rp)
{
	if (!rp)
		return;
	if (rp->fd >= 0) {
		close(rp->fd);
		(void)pack_unlink_quiet(rp->p, rp->name); /* else an orphan gc removes */
	}
	if (rp->nfd >= 0) {
		close(rp->nfd);
		(void)pack_unlink_quiet(rp->p, rp->nname);
	}
	for (size_t i = 0; i < rp->nn; i++)
		free(rp->n[i].data);
	free(rp->n);
	free(rp->b);
	close(rp->lock_fd);
	act_end(rp->p);
	free(rp);
}

static int repair_lookup(struct store_repair *rp, const struct store_scrub_err *e, int64_t *id,
			 int64_t *pack_id, uint32_t *psize, uint32_t *lsize)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(rp->p, "SELECT id, pack_id, psize, lsize FROM blocks WHERE hash = ?1 AND"
			    " codec = ?2 AND level = ?3", &st);
	if (r < 0)
		return r;
	pack_bind_hash_codec(st, e->hash, e->codec);
	int k = sqlite3_step(st);
	if (k == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		*pack_id = sqlite3_column_int64(st, 1);
		*psize = (uint32_t)sqlite3_column_int64(st, 2);
		*lsize = (uint32_t)sqlite3_column_int64(st, 3);
	} else if (k == SQLITE_DONE) {
		char hex[FERRY_HASH_HEX];
		hash_to_hex(e->hash, hex);
		r = ferry_err(FERR_NOENT, "block %.16s is no longer in the index", hex);
	} else {
		r = cat_err(rp->p, "looking up a block");
	}
	sqlite3_finalize(st);
	return r;
}

int store_repair_row(struct store_repair *rp, const struct store_scrub_err *e, uint32_t *psize,
		     uint32_t *lsize)
{
	int64_t id, pk;
	return repair_lookup(rp, e, &id, &pk, psize, lsize);
}

int store_repair_block(struct store_repair *rp, const struct store_scrub_err *e,
		       const void *payload, uint32_t psize, uint32_t lsize)
{
	uint8_t hdr[PACK_BLK_HDR_LEN];
	int64_t id, pk;
	uint32_t ps, ls;
	int r;
	if ((r = repair_lookup(rp, e, &id, &pk, &ps, &ls)) < 0)
		return r;
	if (ps != psize || ls != lsize)
		return ferry_err(FERR_INVAL, "the good copy is %u/%u bytes, the index row %u/%u",
				 psize, lsize, ps, ls);
	if (rp->fd < 0) {
		if ((r = pack_create(rp->p, &rp->fd, rp->name)) < 0)
			return r;
		rp->size = PACK_HDR_LEN;
	}
	if ((r = VEC_GROW(rp->b, rp->capb, rp->nb, 64, "repairing")) < 0)
		return r;
	pack_blk_hdr_put(hdr, e->codec, lsize, psize, e->hash);
	uint8_t t[PACK_REC_TAIL];
	size_t tl = pack_tail_new(rp->p);
	pack_tail_put(t, pack_rec_crc(hdr, sizeof hdr, payload, psize));
	if ((r = io_write_full(rp->fd, hdr, sizeof hdr)) < 0 ||
	    (r = io_write_full(rp->fd, payload, psize)) < 0 ||
	    (r = io_write_full(rp->fd, t, tl)) < 0)
		return r;
	rp->b[rp->nb++] = (struct rep_block){id, pk, (int64_t)rp->size, e->id};
	rp->size += sizeof hdr + psize + tl;
	rp->bytes += psize;
	return 0;
}

int store_repair_node(struct store_repair *rp, const struct store_scrub_err *e, int type,
		      const void *data, size_t len)
{
	uint8_t h[FERRY_HASH_LEN];
	int r;
	node_hash(type, data, len, h);
	if (!e->has_hash || memcmp(h, e->hash, FERRY_HASH_LEN))
		return ferry_err(FERR_CORRUPT, "the good copy of the node does not match its hash");
	if ((r = VEC_GROW(rp->n, rp->capn, rp->nn, 16, "repairing")) < 0)
		return r;
	struct rep_node *n = &rp->n[rp->nn];
	if (!(n->data = malloc(len ? len : 1)))
		return ferry_err(FERR_NOMEM, "repairing");
	memcpy(n->data, data, len);
	memcpy(n->hash, e->hash, FERRY_HASH_LEN);
	n->type = type;
	n->len = len;
	n->err_id = e->id;
	rp->nn++;
	rp->bytes += len;
	return 0;
}

/* A pool that keeps records (format 2, docs/ferry-nodes.md): the replaced
 * nodes also go to the packs, as node records in a pack of their own
 * (a data pack ends with its last block), durable before the commit
 * names it, so `pool recover` finds a good copy of every node the repair
 * healed, not only the catalogue. */
static int repair_node_records(struct store_repair *rp)
{
	uint8_t hdr[PACK_NOD_HDR_LEN];
	char what[64];
	int r;
	if (!rp->p->records || !rp->nn)
		return 0;
	if ((r = pack_create(rp->p, &rp->nfd, rp->nname)) < 0)
		return r;
	rp->nsize = PACK_HDR_LEN;
	for (size_t i = 0; i < rp->nn; i++) {
		pack_nod_hdr_put(hdr, rp->n[i].type, (uint32_t)rp->n[i].len, rp->n[i].hash);
		uint8_t t[PACK_REC_TAIL];
		size_t tl = pack_tail_new(rp->p);
		pack_tail_put(t, pack_rec_crc(hdr, sizeof hdr, rp->n[i].data, rp->n[i].len));
		if ((r = io_write_full(rp->nfd, hdr, sizeof hdr)) < 0 ||
		    (rp->n[i].len && (r = io_write_full(rp->nfd, rp->n[i].data, rp->n[i].len)) < 0) ||
		    (r = io_write_full(rp->nfd, t, tl)) < 0)
			return r;
		rp->nsize += sizeof hdr + rp->n[i].len + tl;
	}
	snprintf(what, sizeof what, "pack '%s'", rp->nname);
	return io_fsync(rp->nfd, what);
}

/* Inside the repair's transaction: the new pack's row, the blocks moved
 * to it, the nodes replaced, the healed log rows gone, the old packs
 * left without a block dropped (their names into *dead). */
static int repair_rows(struct store_repair *rp, int64_t *pack_id)
{
	struct store_pool *p = rp->p;
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (rp->nb) {
		if ((r = pack_row_insert(p, rp->name, rp->size, pack_id)) < 0 ||
		    (r = cat_prepare(p, "UPDATE blocks SET pack_id = ?, offset = ? WHERE id = ?",
					      &st)) < 0)
			return r;
		for (size_t i = 0; i < rp->nb && r == 0; i++) {
			sqlite3_reset(st);
			sqlite3_bind_int64(st, 1, *pack_id);
			sqlite3_bind_int64(st, 2, rp->b[i].new_off);
			sqlite3_bind_int64(st, 3, rp->b[i].block_id);
			if (sqlite3_step(st) != SQLITE_DONE)
				r = cat_err(p, "moving a repaired block");
		}
		sqlite3_finalize(st);
		st = NULL;
		for (size_t i = 0; i < rp->nb && r == 0; i++)
			if (rp->b[i].err_id)
				r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE id = ?", rp->b[i].err_id);
	}
	if (r < 0)
		return r;
	if (rp->nfd >= 0 && (r = pack_row_insert(p, rp->nname, rp->nsize, NULL)) < 0)
		return r;
	if (rp->nn) {
		if ((r = cat_prepare(p, "INSERT OR REPLACE INTO nodes(hash, type, data) VALUES(?, ?, ?)",
				     &st)) < 0)
			return r;
		for (size_t i = 0; i < rp->nn && r == 0; i++) {
			sqlite3_reset(st);
			sqlite3_bind_blob(st, 1, rp->n[i].hash, FERRY_HASH_LEN, SQLITE_STATIC);
			sqlite3_bind_int(st, 2, rp->n[i].type);
			sqlite3_bind_blob(st, 3, rp->n[i].data, (int)rp->n[i].len, SQLITE_STATIC);
			if (sqlite3_step(st) != SQLITE_DONE)
				r = cat_err(p, "replacing a damaged node");
		}
		sqlite3_finalize(st);
		for (size_t i = 0; i < rp->nn && r == 0; i++)
			if (rp->n[i].err_id)
				r = cat_exec_i64(p, "DELETE FROM scrub_errors WHERE id = ?", rp->n[i].err_id);
	}
	if (r < 0)
		return r;
	return cat_exec(p, "DELETE FROM scrub_uses WHERE err_id NOT IN (SELECT id FROM scrub_errors)");
}

int store_repair_commit(struct store_repair *rp, uint64_t *bytes)
{
	struct store_pool *p = rp->p;
	char dir[PATH_MAX], what[64];
	char (*dead)[64] = NULL;
	size_t ndead = 0, capdead = 0;
	sqlite3_stmt *st = NULL;
	int64_t pack_id = 0;
	int r;
	*bytes = 0;
	if (!rp->nb && !rp->nn)
		return 0;
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	snprintf(what, sizeof what, "pack '%s'", rp->name);
	/* the copies are durable before the catalogue points at them */
	if ((rp->fd >= 0 && (r = io_fsync(rp->fd, what)) < 0) || (r = repair_node_records(rp)) < 0 ||
	    ((rp->fd >= 0 || rp->nfd >= 0) && (r = io_fsync_dir(dir)) < 0))
		return r;
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = scrub_tables_create(p)) < 0 || (r = repair_rows(rp, &pack_id)) < 0)
		goto fail;
	/* old packs the repair left with no block: their rows go now, their
	 * files (a truncated one; a missing one has none) after the commit */
	if ((r = cat_prepare(p, "SELECT k.id, k.name FROM packs k WHERE k.id != ?1 AND NOT EXISTS"
			     " (SELECT 1 FROM blocks b WHERE b.pack_id = k.id)", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, pack_id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int was = 0;
		for (size_t i = 0; i < rp->nb && !was; i++)
			was = rp->b[i].old_pack == id;
		if (!was)
			continue; /* garbage of its own: gc's business */
		if ((r = VEC_GROW(dead, capdead, ndead, 8, "repairing")) < 0)
			break;
		const char *nm = (const char *)sqlite3_column_text(st, 1);
		snprintf(dead[ndead++], 64, "%s", nm ? nm : "");
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < ndead && r == 0; i++) {
		sqlite3_stmt *d = NULL;
		if ((r = cat_prepare(p, "DELETE FROM packs WHERE name = ?", &d)) < 0)
			break;
		sqlite3_bind_text(d, 1, dead[i], -1, SQLITE_STATIC);
		if (sqlite3_step(d) != SQLITE_DONE)
			r = cat_err(p, "dropping an emptied pack");
		sqlite3_finalize(d);
	}
	if (r < 0)
		goto fail;
	if ((r = cat_prepare(p, "UPDATE scrub_state SET repaired = repaired + ? WHERE id = 1", &st)) < 0)
		goto fail;
	sqlite3_bind_int64(st, 1, (int64_t)rp->bytes);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = cat_err(p, "recording the repair");
	sqlite3_finalize(st);
	if (r < 0)
		goto fail;
	if ((r = store_tx_commit(p)) < 0)
		goto out; /* the new pack goes with store_repair_free */
	if (rp->fd >= 0) {
		close(rp->fd);
		rp->fd = -1; /* the catalogue's now */
	}
	if (rp->nfd >= 0) {
		close(rp->nfd);
		rp->nfd = -1;
	}
	for (size_t i = 0; i < ndead; i++)
		if (pack_unlink(p, dead[i], i + 1 == ndead) < 0)
			ferry_err_clear(); /* an orphan the next gc removes */
	*bytes = rp->bytes;
	rp->nb = 0;
	for (size_t i = 0; i < rp->nn; i++)
		free(rp->n[i].data);
	rp->nn = 0;
	goto out;
fail:
	store_tx_rollback(p);
out:
	free(dead);
	return r;
}
