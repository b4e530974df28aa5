/* store/records.c — the records of a version-2 pool's packs besides its
 * blocks (docs/ferry-nodes.md, "Pack files"): node records, state records
 * (checkpoints of the catalogue), reading any record of a pack in order,
 * and the checkpoint every committing transaction that changed the
 * catalogue's state writes before its COMMIT, so the catalogue is a cache
 * of the packs (recover.c rebuilds it from them); and `pool upgrade`,
 * which gives a version-1 pool the records it lacks. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "internal.h"

void pack_hdr_put(uint8_t h[PACK_HDR_LEN], int version)
{
	memcpy(h, PACK_MAGIC, 8);
	put_le32(h + 8, (uint32_t)version);
	put_le32(h + 12, version >= 3 ? crc32c_update(0, h, 12) : 0);
}

int pack_hdr_get(const uint8_t h[PACK_HDR_LEN], int *version)
{
	uint32_t v = get_le32(h + 8);
	if (memcmp(h, PACK_MAGIC, 8) || v == 0 || v > PACK_VERSION_MAX ||
	    get_le32(h + 12) != (v >= 3 ? crc32c_update(0, h, 12) : 0))
		return ferry_err(FERR_CORRUPT, "bad pack header");
	*version = (int)v;
	return 0;
}

uint32_t pack_rec_crc(const void *h, size_t hl, const void *payload, size_t pl)
{
	return crc32c_update(crc32c_update(0, h, hl), payload, pl);
}

void pack_tail_put(uint8_t t[PACK_REC_TAIL], uint32_t crc)
{
	put_le32(t, crc);
}

int pack_rec_crc_check(const uint8_t *h, const struct pack_rec *x, const uint8_t *payload)
{
	if (!x->tail)
		return 0;
	if (get_le32(payload + x->payload) != pack_rec_crc(h, x->hdr_len, payload, x->payload))
		return ferry_err(FERR_CORRUPT, "record fails its CRC-32C");
	return 0;
}

void pack_nod_hdr_put(uint8_t *h, int type, uint32_t len, const uint8_t hash[FERRY_HASH_LEN])
{
	put_le32(h, PACK_NOD_MAGIC);
	h[4] = (uint8_t)type;
	h[5] = 0;
	put_le16(h + 6, 0);
	put_le32(h + 8, len);
	memcpy(h + 12, hash, FERRY_HASH_LEN);
}

/* The header of the record at h (avail bytes of it read) into *x; the
 * payload's size and the record's total length are checked against
 * their caps, not yet against the file. */
int pack_rec_parse(const uint8_t *h, size_t avail, int version, struct pack_rec *x)
{
	memset(x, 0, sizeof *x);
	if (avail < 4)
		return ferry_err(FERR_TRUNCATED, "record header is truncated");
	uint32_t m = get_le32(h);
	if (m == PACK_BLK_MAGIC) {
		if (avail < PACK_BLK_HDR_LEN)
			return ferry_err(FERR_TRUNCATED, "block header is truncated");
		int r = pack_blk_hdr_get(h, &x->codec, &x->lsize, &x->psize, x->hash);
		if (r < 0)
			return r;
		x->kind = PACK_REC_BLOCK;
		x->hdr_len = PACK_BLK_HDR_LEN;
		x->payload = x->psize;
		x->tail = version >= 3 ? PACK_REC_TAIL : 0;
		return 0;
	}
	if (version < 2)
		return ferry_err(FERR_CORRUPT, "bad block header in pack");
	if (m == PACK_NOD_MAGIC) {
		if (avail < PACK_NOD_HDR_LEN)
			return ferry_err(FERR_TRUNCATED, "node record header is truncated");
		uint32_t len = get_le32(h + 8);
		if (h[4] < 1 || h[4] > 4 || h[5] || get_le16(h + 6) || len > NODE_MAX)
			return ferry_err(FERR_CORRUPT, "bad node record header in pack");
		x->kind = PACK_REC_NODE;
		x->ntype = h[4];
		memcpy(x->hash, h + 12, FERRY_HASH_LEN);
		x->hdr_len = PACK_NOD_HDR_LEN;
		x->payload = len;
		x->tail = version >= 3 ? PACK_REC_TAIL : 0;
		return 0;
	}
	if (m == PACK_CAT_MAGIC) {
		if (avail < PACK_CAT_HDR_LEN)
			return ferry_err(FERR_TRUNCATED, "state record header is truncated");
		uint32_t len = get_le32(h + 16);
		x->seq = get_le64(h + 8);
		if (get_le16(h + 4) != 1 || get_le16(h + 6) || get_le32(h + 20) || x->seq == 0 ||
		    len > PACK_CAT_MAX)
			return ferry_err(FERR_CORRUPT, "bad state record header in pack");
		x->kind = PACK_REC_STATE;
		memcpy(x->hash, h + 24, FERRY_HASH_LEN);
		x->hdr_len = PACK_CAT_HDR_LEN;
		x->payload = len;
		x->tail = version >= 3 ? PACK_REC_TAIL : 0;
		return 0;
	}
	return ferry_err(FERR_CORRUPT, "unknown record in pack");
}

int pack_rec_verify(const uint8_t *h, const struct pack_rec *x, const uint8_t *payload,
		    uint8_t *scratch)
{
	uint8_t got[FERRY_HASH_LEN];
	int r;
	switch (x->kind) {
	case PACK_REC_BLOCK:
		if (x->codec.id == CODEC_OFF) {
			hash_blake2b(got, payload, x->lsize);
		} else {
			if ((r = codec_decode(x->codec, payload, x->psize, scratch, x->lsize)) < 0)
				return ferry_err(FERR_CORRUPT, "block does not decode");
			hash_blake2b(got, scratch, x->lsize);
		}
		break;
	case PACK_REC_NODE:
		node_hash(x->ntype, payload, x->payload, got);
		break;
	default: {
		struct hash_state hs;
		hash_init(&hs);
		hash_update(&hs, h, 24);
		hash_update(&hs, payload, x->payload);
		hash_final(&hs, got);
	}
	}
	if (memcmp(got, x->hash, FERRY_HASH_LEN))
		return ferry_err(FERR_CORRUPT, "record fails its hash");
	/* after the hash: a flip the hash does not see (a header byte that
	 * decoding ignores) is caught by the CRC */
	return pack_rec_crc_check(h, x, payload);
}

/* ---- gc: the node records of a pack ------------------------------------------ */

int pack_nodes_each(struct store_pool *p, const char *name, pack_node_fn fn, void *arg)
{
	char path[PATH_MAX];
	uint8_t *win = NULL;
	struct stat sb;
	size_t got, have = 0; /* win holds the pack's bytes [at, at + have) */
	uint64_t at = 0;
	int fd, r, version;
	pack_path(p, name, path, sizeof path);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot open pack '%s'", path);
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat pack '%s'", path);
		goto out;
	}
	if (!(win = malloc(PACK_NODES_WIN))) {
		r = ferry_err(FERR_NOMEM, "reading pack '%s'", name);
		goto out;
	}
	if ((r = io_pread_full(fd, win, PACK_NODES_WIN, 0, &have)) < 0)
		goto out;
	/* a pack gc cannot parse is left as it is (scrub reports it): its
	 * records are not gc's to judge */
	if (have < PACK_HDR_LEN || pack_hdr_get(win, &version) < 0 || version < 2) {
		ferry_err_clear();
		r = 0;
		goto out;
	}
	uint64_t off = PACK_HDR_LEN, size = (uint64_t)sb.st_size;
	while (off < size) {
		struct pack_rec x;
		/* the record's header in the window, or the window moved to it
		 * (short only at the end of the file) */
		if (off + PACK_CAT_HDR_LEN > at + have) {
			if ((r = io_pread_full(fd, win, PACK_NODES_WIN, (off_t)off, &have)) < 0)
				goto out;
			at = off;
		}
		got = at + have - off < PACK_CAT_HDR_LEN ? (size_t)(at + have - off) : PACK_CAT_HDR_LEN;
		if (pack_rec_parse(win + (off - at), got, version, &x) < 0 ||
		    size - off < pack_rec_len(&x)) {
			ferry_err_clear(); /* a damaged tail: what follows is unreadable */
			break;
		}
		if (x.kind == PACK_REC_NODE && (r = fn(arg, fd, off, &x)) != 0)
			goto out;
		off += pack_rec_len(&x);
	}
	r = 0;
out:
	free(win);
	close(fd);
	return r;
}

/* ---- checkpoints --------------------------------------------------------------- */

/* The tables of a state record, in payload order: the table id, the
 * query, and the type of each column (i integer, n integer or null, t
 * text, b 32-byte blob). recover.c inserts rows with the same columns. */
const struct rec_table rec_tables[REC_NTABLES] = {
	{1, "meta", "key, value", "tt",
	 "SELECT key, value FROM meta WHERE substr(key, 1, 4) != 'rec_' AND key != 'multicopy'"
	 " ORDER BY key"},
	{2, "datasets", "id, parent_id, name, type, guid, creation, createtxg", "intiiii",
	 "SELECT id, parent_id, name, type, guid, creation, createtxg FROM datasets ORDER BY id"},
	{3, "props", "ds_id, name, value, source", "itti",
	 "SELECT ds_id, name, value, source FROM props ORDER BY ds_id, name, source"},
	{4, "snapshots",
	 "id, ds_id, name, guid, createtxg, creation_ns, root, referenced, logicalreferenced, written",
	 "iitiiibiii",
	 "SELECT id, ds_id, name, guid, createtxg, creation_ns, root, referenced,"
	 " logicalreferenced, written FROM snapshots ORDER BY id"},
	{5, "bookmarks", "id, ds_id, name, guid, createtxg, creation_ns, root_type, root",
	 "iitiiiib",
	 "SELECT id, ds_id, name, guid, createtxg, creation_ns, root_type, root FROM bookmarks"
	 " ORDER BY id"},
	{6, "holds", "snap_id, tag, creation_ns", "iti",
	 "SELECT snap_id, tag, creation_ns FROM holds ORDER BY snap_id, tag"},
	{7, "defer_destroy", "snap_id", "i", "SELECT snap_id FROM defer_destroy ORDER BY snap_id"},
	/* only blocks held under several codecs: which copy each snapshot
	 * references (one pass over the hash index, usually finding none) */
	{8, "copies", "snap_id, hash, codec, level", "ibii",
	 "SELECT s.id, b.hash, b.codec, b.level FROM"
	 " (SELECT hash FROM blocks GROUP BY hash HAVING count(*) > 1) m"
	 " JOIN blocks b ON b.hash = m.hash JOIN ds_refs x ON x.block_id = b.id"
	 " JOIN snapshots s ON s.ds_id = x.ds_id AND s.createtxg >= x.born"
	 " AND (x.died IS NULL OR s.createtxg < x.died)"
	 " ORDER BY 1, 2, 3, 4"},
};

static int dump_table(struct store_pool *p, const struct rec_table *t, struct fbuf *out)
{
	sqlite3_stmt *st = NULL;
	int r, s;
	size_t nc = strlen(t->types);
	if ((r = cat_prepare(p, t->query, &st)) < 0)
		return r;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((r = fbuf_putc(out, (uint8_t)t->id)) < 0 || (r = fbuf_putc(out, (uint8_t)nc)) < 0)
			goto out;
		for (size_t i = 0; i < nc && r == 0; i++) {
			int ty = sqlite3_column_type(st, (int)i);
			if (ty == SQLITE_NULL) {
				r = fbuf_putc(out, 0);
			} else if (ty == SQLITE_INTEGER) {
				if ((r = fbuf_putc(out, 1)) == 0)
					r = fbuf_put_le64(out, (uint64_t)sqlite3_column_int64(st, (int)i));
			} else {
				int blob = ty == SQLITE_BLOB;
				const void *v = blob ? sqlite3_column_blob(st, (int)i)
						     : (const void *)sqlite3_column_text(st, (int)i);
				int n = sqlite3_column_bytes(st, (int)i);
				if ((r = fbuf_putc(out, blob ? 3 : 2)) == 0 &&
				    (r = fbuf_put_le32(out, (uint32_t)n)) == 0 && n)
					r = fbuf_append(out, v, (size_t)n);
			}
		}
		if (r < 0)
			goto out;
	}
	if (s != SQLITE_DONE)
		r = cat_err(p, "reading the catalogue for its checkpoint");
out:
	sqlite3_finalize(st);
	if (r == -FERR_LIMIT)
		r = ferry_err(FERR_LIMIT, "pool '%s': the catalogue's state is over %zu MiB, more"
			      " than a checkpoint holds", p->name, PACK_CAT_MAX >> 20);
	return r;
}

void rec_pack_name(uint64_t seq, char name[32])
{
	snprintf(name, 32, "r%016" PRIx64 ".pack", seq);
}

uint64_t rec_name_seq(const char *name, int tmp)
{
	char *end;
	size_t off = tmp ? 1 : 0;
	const char *tail = tmp ? ".tmp" : ".pack";
	if (name[off] != 'r' || strlen(name) != off + 17 + strlen(tail) ||
	    strcmp(name + off + 17, tail) || (tmp && name[0] != '.'))
		return 0;
	uint64_t v = strtoull(name + off + 1, &end, 16);
	return end == name + off + 17 ? v : 0;
}

/* The checkpoint's pack, crash-safely: its temporary file is named by
 * the seq (".r<seq>.tmp"), so one a kill left is the next checkpoint's of
 * that seq to overwrite, and the sweep's to remove once that seq is
 * committed (pack_orphans_each); never a file nobody reclaims. */
static int write_durably(const char *dir, uint64_t seq, const char *name, const void *data,
			 size_t len)
{
	char tmp[PATH_MAX + 40], dst[PATH_MAX + 40];
	int fd = -1, r;
	snprintf(tmp, sizeof tmp, "%s/.r%016" PRIx64 ".tmp", dir, seq);
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	if ((r = io_open_create(tmp, O_WRONLY | O_TRUNC, STORE_FILE_MODE, &fd)) < 0)
		return r;
	if (fchmod(fd, STORE_FILE_MODE) != 0)
		r = ferry_err_errno(errno, "cannot set the mode of '%s'", tmp);
	if (r == 0 && (r = io_write_full(fd, data, len)) == 0)
		r = io_fsync(fd, "a checkpoint");
	close(fd);
	if (r == 0 && (r = io_rename(tmp, dst)) == 0)
		return io_fsync_dir(dir);
	struct ferry_errsave e;
	ferry_err_save(&e);
	if (io_unlink(tmp) < 0) /* else the next checkpoint of seq overwrites it */
		ferry_err_clear();
	ferry_err_restore(&e);
	return r;
}

int rec_checkpoint(struct store_pool *p)
{
	char hex[FERRY_HASH_HEX], last[FERRY_HASH_HEX + 8], buf[32], name[32], dir[PATH_MAX];
	uint8_t h[FERRY_HASH_LEN];
	struct fbuf out;
	sqlite3_stmt *st = NULL;
	int r, multi = 0;
	if (!p->records)
		return 0;
	fbuf_init(&out, PACK_HDR_LEN + PACK_CAT_HDR_LEN + PACK_CAT_MAX + PACK_REC_TAIL);
	if ((r = fbuf_reserve(&out, 4096)) < 0)
		goto out;
	out.len = PACK_HDR_LEN + PACK_CAT_HDR_LEN; /* filled in below */
	/* copies has rows only while some block has two (lifetimes.c keeps
	 * the mark): without, its pass over the whole hash index is skipped */
	if ((r = life_multicopy(p, &multi)) < 0)
		goto out;
	for (size_t i = 0; i < REC_NTABLES; i++)
		if ((multi || rec_tables[i].id != 8) && (r = dump_table(p, &rec_tables[i], &out)) < 0)
			goto out;
	size_t plen = out.len - PACK_HDR_LEN - PACK_CAT_HDR_LEN;
	hash_blake2b(h, out.data + PACK_HDR_LEN + PACK_CAT_HDR_LEN, plen);
	hash_to_hex(h, hex);
	if ((r = cat_meta_get_opt(p, "rec_state", last, sizeof last)) < 0)
		goto out; /* (SQLite may have rolled the transaction back) */
	if (r == 0 && !strcmp(last, hex))
		goto out; /* the state this transaction leaves is the last checkpoint's */
	uint64_t seq = 1;
	if ((r = cat_meta_get_opt(p, "rec_seq", buf, sizeof buf)) < 0)
		goto out; /* (not "the first": seq 1 would name an old checkpoint) */
	if (r == 0)
		seq = strtoull(buf, NULL, 10) + 1;
	r = 0;
	size_t tail = pack_tail_new(p);
	if ((r = fbuf_reserve(&out, tail)) < 0)
		goto out;
	uint8_t *hd = out.data + PACK_HDR_LEN;
	pack_hdr_put(out.data, pack_version_new(p));
	put_le32(hd, PACK_CAT_MAGIC);
	put_le16(hd + 4, 1);
	put_le16(hd + 6, 0);
	put_le64(hd + 8, seq);
	put_le32(hd + 16, (uint32_t)plen);
	put_le32(hd + 20, 0);
	struct hash_state hs;
	hash_init(&hs);
	hash_update(&hs, hd, 24);
	hash_update(&hs, hd + PACK_CAT_HDR_LEN, plen);
	hash_final(&hs, hd + 24);
	if (tail) {
		pack_tail_put(out.data + out.len,
			      pack_rec_crc(hd, PACK_CAT_HDR_LEN, hd + PACK_CAT_HDR_LEN, plen));
		out.len += tail;
	}
	rec_pack_name(seq, name);
	snprintf(dir, sizeof dir, "%s/%s", p->path, PACK_DIR);
	/* if the transaction does not commit, the file goes (pack_tx_end),
	 * even one this write renamed into place before its last fsync
	 * failed; listed first, so nothing can leave it behind */
	if (p->ntx_packs == p->cap_tx_packs) {
		size_t nc = p->cap_tx_packs ? 2 * p->cap_tx_packs : 8;
		void *nv = realloc(p->tx_packs, nc * sizeof *p->tx_packs);
		if (!nv) {
			r = ferry_err(FERR_NOMEM, "writing a checkpoint");
			goto out;
		}
		p->tx_packs = nv;
		p->cap_tx_packs = nc;
	}
	memcpy(p->tx_packs[p->ntx_packs++], name, 32);
	/* durable before the COMMIT it describes (write, fsync, rename,
	 * fsync packs/); a file of this name left by a commit that never
	 * happened is replaced */
	r = write_durably(dir, seq, name, out.data, out.len);
	/* on a full disk, destroy and gc still work: their checkpoint may
	 * draw on the reserve as their catalogue writes do */
	if (r == -FERR_NOSPC && catvfs_reserve_take(p->site, out.len + ((uint64_t)64 << 10)) > 0) {
		ferry_err_clear();
		r = write_durably(dir, seq, name, out.data, out.len);
	}
	if (r == -FERR_NOSPC)
		r = pool_nospace(p);
	if (r < 0)
		goto out;
	if ((r = cat_prepare(p, "INSERT OR REPLACE INTO packs(id, name, size) VALUES("
			       "(SELECT id FROM packs WHERE name = ?1), ?1, ?2)", &st)) < 0)
		goto out;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)out.len);
	if (sqlite3_step(st) != SQLITE_DONE) {
		r = cat_err(p, "recording a checkpoint");
		goto out;
	}
	snprintf(buf, sizeof buf, "%" PRIu64, seq);
	if ((r = cat_meta_set(p, "rec_seq", buf)) < 0 || (r = cat_meta_set(p, "rec_state", hex)) < 0 ||
	    (r = cat_meta_set(p, "rec_pack", name)) < 0)
		goto out;
	r = 0;
out:
	sqlite3_finalize(st);
	fbuf_release(&out);
	return r;
}

/* ---- upgrade: a version-1 pool gets its records ------------------------------------- */

/* Every node of the catalogue into one new pack, made durable; its name
 * in name. */
static int write_all_nodes(struct store_pool *p, char name[32])
{
	sqlite3_stmt *st = NULL;
	uint8_t hdr[PACK_NOD_HDR_LEN];
	char what[64];
	int r, s, fd = -1;
	if ((r = pack_create(p, &fd, name)) < 0)
		return r;
	if ((r = cat_prepare(p, "SELECT hash, type, data FROM nodes", &st)) < 0)
		goto out;
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		const void *d = sqlite3_column_blob(st, 2);
		if (sqlite3_column_bytes(st, 0) != FERRY_HASH_LEN || len > NODE_MAX) {
			r = ferry_err(FERR_CORRUPT, "a node row is malformed");
			goto out;
		}
		pack_nod_hdr_put(hdr, sqlite3_column_int(st, 1), (uint32_t)len,
				 sqlite3_column_blob(st, 0));
		uint8_t t[PACK_REC_TAIL];
		pack_tail_put(t, pack_rec_crc(hdr, sizeof hdr, d, len));
		if ((r = io_write_full(fd, hdr, sizeof hdr)) < 0 ||
		    (len && (r = io_write_full(fd, d, len)) < 0) ||
		    (r = io_write_full(fd, t, pack_tail_new(p))) < 0)
			goto out;
	}
	if (s != SQLITE_DONE) {
		r = cat_err(p, "reading the nodes");
		goto out;
	}
	snprintf(what, sizeof what, "pack '%s'", name);
	if ((r = io_fsync(fd, what)) < 0 || (r = pack_sync_dir_quiet(p)) < 0)
		goto out;
out:
	sqlite3_finalize(st);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		(void)pack_unlink_quiet(p, name);
		(void)pack_sync_dir_quiet(p);
	}
	return r;
}

int store_pool_upgrade(struct store_pool *p, int *from)
{
	char name[32], buf[16];
	struct stat sb;
	char path[PATH_MAX];
	int r, lock = -1;
	*from = p->records ? 2 : 1;
	if (p->records)
		return 0;
	if (p->flags & STORE_OPEN_RDONLY)
		return ferry_err(FERR_PERM, "pool '%s' is open read-only", p->name);
	/* no writer alive, so every node is in the table being copied */
	if ((r = pack_lock(p, 1, &lock)) < 0)
		return r;
	p->records = 1; /* the new pack's header: version 3 */
	if ((r = write_all_nodes(p, name)) < 0)
		goto out;
	pack_path(p, name, path, sizeof path);
	if (stat(path, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat pack '%s'", path);
		(void)pack_unlink_quiet(p, name);
		goto out;
	}
	/* the first checkpoint is written by this commit (rec_checkpoint) */
	snprintf(buf, sizeof buf, "%d", STORE_FORMAT_VERSION);
	if ((r = store_tx_begin(p)) < 0) {
		(void)pack_unlink_quiet(p, name);
		goto out;
	}
	r = pack_row_insert(p, name, (uint64_t)sb.st_size, NULL);
	if (r == 0)
		r = cat_meta_set(p, "format_version", buf);
	if (r < 0) {
		store_tx_rollback(p);
		(void)pack_unlink_quiet(p, name);
		goto out;
	}
	if ((r = store_tx_commit(p)) < 0) {
		(void)pack_unlink_quiet(p, name);
		goto out;
	}
	r = pool_write_marker(p->path);
out:
	if (r < 0)
		p->records = 0;
	close(lock);
	return r;
}
