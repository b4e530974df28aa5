/* store/recover.c — `ferry pool recover`: a new catalogue built from the
 * packs alone (docs/ferry-nodes.md, "Recover"), checked, then swapped in
 * (`ferry pool upgrade`, which gives a version-1 pool the records recover
 * needs, is in records.c).
 *
 * Recover never opens the old catalogue: it may be missing or damaged
 * anywhere. It reads every pack in name order, every record checked
 * against its hash, into a new SQLite file beside it; the newest state
 * record gives the datasets, properties, snapshots, bookmarks and holds;
 * each snapshot's block references are its tree's blocks, which also
 * proves the tree whole. Only then is the file made durable and renamed
 * to catalog.db.recover, the commit point: from there recover_finish
 * (run by recover, and by any open that finds the file after a crash)
 * keeps the old files aside and renames it to catalog.db. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define RECOVER_TMP "catalog.db.recover-tmp" /* being built */
#define RECOVER_READY "catalog.db.recover"   /* whole and durable: to be swapped in */
#define RESYNC_WINDOW ((size_t)64 << 10)

struct rcv {
	struct store_pool q; /* the new catalogue: name, path, db only */
	struct store_recover_report *rep;
	sqlite3_stmt *st_blk, *st_node, *st_pack;
	uint8_t *buf, *scratch; /* a record (up to a block's) and a decoded block */
	uint8_t *state;         /* the newest good state record's payload */
	size_t state_len;
	uint8_t state_hash[FERRY_HASH_LEN];
	uint64_t bad_state_seq; /* the highest seq of a state record that failed, by file name */
	int bad_state_unknown;  /* one failed whose seq its file name does not give */
	char bad_state[320];    /* where the newest of those is, and why */
	uint8_t (*stack)[FERRY_HASH_LEN];
	size_t nstack, capstack;
};

static void note_bad(struct rcv *c, const char *pack, uint64_t off, const char *why)
{
	if (!c->rep->bad_records++)
		snprintf(c->rep->first_bad, sizeof c->rep->first_bad, "pack '%s' at offset %" PRIu64
			 ": %s", pack, off, why);
}

/* The record at off of fd (size bytes), header into h (PACK_CAT_HDR_LEN
 * bytes) and payload into c->buf (or, for a state record, *big): 0 when
 * it is whole and passes its hash, else -FERR_CORRUPT or -FERR_TRUNCATED
 * (detail set). */
static int read_record(struct rcv *c, int fd, uint64_t off, uint64_t size, int version,
		       uint8_t *h, struct pack_rec *x, uint8_t **big)
{
	size_t got;
	int r;
	if ((r = io_pread_full(fd, h, PACK_CAT_HDR_LEN, (off_t)off, &got)) < 0 ||
	    (r = pack_rec_parse(h, got, version, x)) < 0)
		return r;
	if (size - off < pack_rec_len(x))
		return ferry_err(FERR_TRUNCATED, "record is truncated");
	uint8_t *dst = c->buf;
	if (x->kind == PACK_REC_STATE) {
		if (!(dst = malloc(x->payload + x->tail + 1)))
			return ferry_err(FERR_NOMEM, "reading a state record");
		*big = dst;
	}
	/* the payload and its CRC tail (version 3), which follows it */
	size_t want = x->payload + x->tail;
	if ((r = io_pread_full(fd, dst, want, (off_t)(off + x->hdr_len), &got)) < 0)
		return r;
	if (got != want)
		return ferry_err(FERR_TRUNCATED, "record is truncated");
	return pack_rec_verify(h, x, dst, c->scratch);
}

/* After a record that failed at off: the offset of the next one that
 * passes its checks, or size when none does. */
static int resync(struct rcv *c, int fd, uint64_t off, uint64_t size, int version,
		  uint64_t *next)
{
	uint8_t win[RESYNC_WINDOW + 4], h[PACK_CAT_HDR_LEN];
	struct pack_rec x;
	size_t got;
	int r;
	for (uint64_t pos = off + 1; pos + 4 <= size; pos += RESYNC_WINDOW) {
		if ((r = io_pread_full(fd, win, sizeof win, (off_t)pos, &got)) < 0)
			return r;
		for (size_t j = 0; j + 4 <= got && j < RESYNC_WINDOW; j++) {
			uint32_t m = get_le32(win + j);
			if (m != PACK_BLK_MAGIC && m != PACK_NOD_MAGIC && m != PACK_CAT_MAGIC)
				continue;
			uint8_t *big = NULL;
			r = read_record(c, fd, pos + j, size, version, h, &x, &big);
			free(big);
			if (r == 0) {
				*next = pos + j;
				return 0;
			}
			if (r != -FERR_CORRUPT && r != -FERR_TRUNCATED)
				return r;
			ferry_err_clear();
		}
	}
	*next = size;
	return 0;
}

static int scan_pack(struct rcv *c, const char *dir, const char *name)
{
	char path[PATH_MAX];
	uint8_t h[PACK_CAT_HDR_LEN];
	struct stat sb;
	size_t got;
	int fd, r, version;
	int64_t pack_id;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return ferry_err_errno(errno, "cannot open pack '%s'", path);
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat pack '%s'", path);
		goto out;
	}
	uint64_t size = (uint64_t)sb.st_size;
	if ((r = io_pread_full(fd, h, PACK_HDR_LEN, 0, &got)) < 0)
		goto out;
	if (got < PACK_HDR_LEN || pack_hdr_get(h, &version) < 0) {
		ferry_err_clear();
		note_bad(c, name, 0, "not a pack (bad header)");
		if (rec_name_seq(name, 0) > c->bad_state_seq) {
			c->bad_state_seq = rec_name_seq(name, 0);
			snprintf(c->bad_state, sizeof c->bad_state, "pack '%s': bad header", name);
		}
		r = 0;
		goto out;
	}
	sqlite3_reset(c->st_pack);
	sqlite3_bind_text(c->st_pack, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(c->st_pack, 2, (int64_t)size);
	if (sqlite3_step(c->st_pack) != SQLITE_DONE) {
		r = cat_err(&c->q, "recording a pack");
		goto out;
	}
	pack_id = sqlite3_last_insert_rowid(c->q.db);
	c->rep->packs++;
	uint64_t off = PACK_HDR_LEN;
	while (off < size) {
		struct pack_rec x;
		uint8_t *big = NULL;
		r = read_record(c, fd, off, size, version, h, &x, &big);
		if (r == -FERR_CORRUPT || r == -FERR_TRUNCATED) {
			note_bad(c, name, off, ferry_errmsg(r));
			free(big);
			/* a state record that fails is judged by its file's name */
			uint64_t ns = rec_name_seq(name, 0);
			if ((!ns && x.kind == PACK_REC_STATE) || ns > c->bad_state_seq) {
				c->bad_state_unknown |= !ns;
				c->bad_state_seq = ns > c->bad_state_seq ? ns : c->bad_state_seq;
				snprintf(c->bad_state, sizeof c->bad_state,
					 "pack '%s' at offset %" PRIu64 ": %s", name, off,
					 ferry_errmsg(r));
			}
			ferry_err_clear();
			if ((r = resync(c, fd, off, size, version, &off)) < 0)
				goto out;
			continue;
		}
		if (r < 0) {
			free(big);
			goto out;
		}
		sqlite3_stmt *st = x.kind == PACK_REC_BLOCK ? c->st_blk : c->st_node;
		if (x.kind == PACK_REC_STATE) {
			if (x.seq > c->rep->seq) {
				free(c->state);
				c->state = big;
				c->state_len = x.payload;
				big = NULL;
				c->rep->seq = x.seq;
				memcpy(c->state_hash, x.hash, FERRY_HASH_LEN);
				snprintf(c->rep->state_pack, sizeof c->rep->state_pack, "%s", name);
			}
			free(big);
		} else {
			sqlite3_reset(st);
			sqlite3_bind_blob(st, 1, x.hash, FERRY_HASH_LEN, SQLITE_STATIC);
			if (x.kind == PACK_REC_BLOCK) {
				sqlite3_bind_int(st, 2, x.codec.id);
				sqlite3_bind_int(st, 3, x.codec.level);
				sqlite3_bind_int64(st, 4, pack_id);
				sqlite3_bind_int64(st, 5, (int64_t)off);
				sqlite3_bind_int64(st, 6, x.psize);
				sqlite3_bind_int64(st, 7, x.lsize);
			} else {
				sqlite3_bind_int(st, 2, x.ntype);
				sqlite3_bind_blob(st, 3, x.payload ? c->buf : (const uint8_t *)"",
						  (int)x.payload, SQLITE_STATIC);
			}
			if (sqlite3_step(st) != SQLITE_DONE) {
				r = cat_err(&c->q, "recording a record");
				goto out;
			}
			if (sqlite3_changes(c->q.db))
				*(x.kind == PACK_REC_BLOCK ? &c->rep->blocks : &c->rep->nodes) += 1;
		}
		off += pack_rec_len(&x);
	}
	r = 0;
out:
	close(fd);
	return r;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int scan_packs(struct rcv *c)
{
	char dir[PATH_MAX];
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	snprintf(dir, sizeof dir, "%s/%s", c->q.path, PACK_DIR);
	DIR *d = opendir(dir);
	if (!d)
		return ferry_err_errno(errno, "cannot read '%s'", dir);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".pack"))
			continue;
		if ((r = VEC_GROW(names, cap, n, 64, "listing packs")) < 0)
			break;
		if (!(names[n] = strdup(de->d_name))) {
			r = ferry_err(FERR_NOMEM, "listing packs");
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0 && n)
		qsort(names, n, sizeof *names, name_cmp);
	for (size_t i = 0; i < n && r == 0; i++)
		r = scan_pack(c, dir, names[i]);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

/* ---- the state record into the tables ------------------------------------------ */

static int load_state(struct rcv *c)
{
	sqlite3_stmt *ins[REC_NTABLES] = {NULL};
	const uint8_t *b = c->state;
	size_t len = c->state_len, pos = 0;
	int r = 0;
	for (size_t i = 0; i < REC_NTABLES && r == 0; i++) {
		char sql[512], qs[64];
		size_t nc = strlen(rec_tables[i].types), ql = 0;
		for (size_t k = 0; k < nc && ql + 4 < sizeof qs; k++)
			ql += (size_t)snprintf(qs + ql, sizeof qs - ql, k ? ", ?" : "?");
		qs[ql] = 0;
		snprintf(sql, sizeof sql, "INSERT INTO %s%s(%s) VALUES(%s)",
			 rec_tables[i].id == 8 ? "temp." : "", rec_tables[i].name, rec_tables[i].cols,
			 qs);
		r = cat_prepare(&c->q, sql, &ins[i]);
	}
	while (r == 0 && pos < len) {
		if (len - pos < 2) {
			r = ferry_err(FERR_CORRUPT, "state record: row is truncated");
			break;
		}
		int id = b[pos], nc = b[pos + 1];
		pos += 2;
		if (id < 1 || id > REC_NTABLES || (size_t)nc != strlen(rec_tables[id - 1].types)) {
			r = ferry_err(FERR_CORRUPT, "state record: unknown table %d of %d columns", id, nc);
			break;
		}
		const struct rec_table *t = &rec_tables[id - 1];
		sqlite3_stmt *st = ins[id - 1];
		sqlite3_reset(st);
		for (int k = 0; k < nc && r == 0; k++) {
			char want = t->types[k];
			if (pos >= len) {
				r = ferry_err(FERR_CORRUPT, "state record: value is truncated");
				break;
			}
			int tag = b[pos++];
			if (tag == 0 && want == 'n') {
				sqlite3_bind_null(st, k + 1);
			} else if (tag == 1 && (want == 'i' || want == 'n') && len - pos >= 8) {
				sqlite3_bind_int64(st, k + 1, (int64_t)get_le64(b + pos));
				pos += 8;
			} else if ((tag == 2 || tag == 3) && len - pos >= 4 &&
				   len - pos - 4 >= get_le32(b + pos) &&
				   (tag == 2 ? want == 't' : want == 'b' && get_le32(b + pos) ==
								    FERRY_HASH_LEN)) {
				uint32_t n = get_le32(b + pos);
				const void *v = b + pos + 4;
				if (tag == 2)
					sqlite3_bind_text(st, k + 1, n ? v : "", (int)n, SQLITE_STATIC);
				else
					sqlite3_bind_blob(st, k + 1, v, (int)n, SQLITE_STATIC);
				pos += 4 + n;
			} else {
				r = ferry_err(FERR_CORRUPT, "state record: bad value in table %s", t->name);
			}
		}
		if (r == 0 && sqlite3_step(st) != SQLITE_DONE)
			r = cat_err(&c->q, "rebuilding the catalogue");
		if (r == 0)
			switch (id) {
			case 2: c->rep->datasets++; break;
			case 3: c->rep->props++; break;
			case 4: c->rep->snapshots++; break;
			case 5: c->rep->bookmarks++; break;
			case 6: c->rep->holds++; break;
			}
	}
	for (size_t i = 0; i < REC_NTABLES; i++)
		sqlite3_finalize(ins[i]);
	if (r < 0)
		return r;
	/* what the last checkpoint was, so the next commit writes none for
	 * an unchanged state */
	char buf[32], hex[FERRY_HASH_HEX];
	uint8_t h[FERRY_HASH_LEN];
	hash_blake2b(h, c->state, c->state_len);
	hash_to_hex(h, hex);
	snprintf(buf, sizeof buf, "%" PRIu64, c->rep->seq);
	if ((r = cat_meta_set(&c->q, "rec_seq", buf)) < 0 ||
	    (r = cat_meta_set(&c->q, "rec_state", hex)) < 0)
		return r;
	return cat_meta_set(&c->q, "rec_pack", c->rep->state_pack);
}

/* ---- the check: every tree whole, every block present ------------------------------- */

struct walk {
	struct rcv *c;
	int64_t snap_id; /* 0: a bookmark (nodes only) */
	sqlite3_stmt *st_copy, *st_any, *st_ref;
	int missing;
	uint8_t missing_hash[FERRY_HASH_LEN];
};

static int walk_child(void *arg, int is_block, const uint8_t *h)
{
	struct walk *w = arg;
	struct rcv *c = w->c;
	int r;
	if (!is_block) {
		if ((r = VEC_GROW(c->stack, c->capstack, c->nstack, 1024, "checking the trees")) < 0)
			return r;
		memcpy(c->stack[c->nstack++], h, FERRY_HASH_LEN);
		return 0;
	}
	/* the copies the state record names, else the lowest codec's */
	int found = 0;
	sqlite3_stmt *sts[2] = {w->st_copy, w->st_any};
	for (int i = 0; i < 2 && !found; i++) {
		int s;
		sqlite3_reset(sts[i]);
		sqlite3_bind_int64(sts[i], 1, w->snap_id);
		sqlite3_bind_blob(sts[i], 2, h, FERRY_HASH_LEN, SQLITE_STATIC);
		while ((s = sqlite3_step(sts[i])) == SQLITE_ROW) {
			found = 1;
			sqlite3_reset(w->st_ref);
			sqlite3_bind_int64(w->st_ref, 1, w->snap_id);
			sqlite3_bind_int64(w->st_ref, 2, sqlite3_column_int64(sts[i], 0));
			if (sqlite3_step(w->st_ref) != SQLITE_DONE) {
				sqlite3_reset(sts[i]);
				return cat_err(&c->q, "recording a block reference");
			}
		}
		sqlite3_reset(sts[i]);
		if (s != SQLITE_DONE)
			return cat_err(&c->q, "looking up a block");
	}
	if (!found) {
		w->missing = 2;
		memcpy(w->missing_hash, h, FERRY_HASH_LEN);
		return 1;
	}
	return 0;
}

/* Walks the tree under root: 0, 1 with w->missing set (1 a node, 2 a
 * block), or an error; a malformed node is -FERR_CORRUPT. */
static int walk_tree(struct walk *w, const uint8_t *root, sqlite3_stmt *st_seen,
		     sqlite3_stmt *st_node)
{
	struct rcv *c = w->c;
	int r;
	c->nstack = 0;
	if ((r = walk_child(w, 0, root)) < 0)
		return r;
	while (c->nstack) {
		uint8_t h[FERRY_HASH_LEN];
		memcpy(h, c->stack[--c->nstack], FERRY_HASH_LEN);
		sqlite3_reset(st_seen);
		sqlite3_bind_blob(st_seen, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		if (sqlite3_step(st_seen) != SQLITE_DONE)
			return cat_err(&c->q, "checking the trees");
		if (!sqlite3_changes(c->q.db))
			continue;
		sqlite3_reset(st_node);
		sqlite3_bind_blob(st_node, 1, h, FERRY_HASH_LEN, SQLITE_STATIC);
		int s = sqlite3_step(st_node);
		if (s != SQLITE_ROW) {
			sqlite3_reset(st_node);
			if (s != SQLITE_DONE)
				return cat_err(&c->q, "reading a node");
			w->missing = 1;
			memcpy(w->missing_hash, h, FERRY_HASH_LEN);
			return 1;
		}
		int type = sqlite3_column_int(st_node, 0);
		const uint8_t *d = sqlite3_column_blob(st_node, 1);
		size_t n = (size_t)sqlite3_column_bytes(st_node, 1);
		r = node_children(type, d ? d : (const uint8_t *)"", n, w->snap_id != 0, walk_child, w);
		sqlite3_reset(st_node);
		if (r != 0)
			return r;
	}
	return 0;
}

static int check_trees(struct rcv *c)
{
	struct walk w = {.c = c};
	sqlite3_stmt *st_list = NULL, *st_seen = NULL, *st_node = NULL;
	int r, s;
	if ((r = cat_exec(&c->q, "CREATE TEMP TABLE seen(hash BLOB PRIMARY KEY) WITHOUT ROWID")) < 0 ||
	    (r = cat_prepare(&c->q, "INSERT OR IGNORE INTO temp.seen(hash) VALUES(?)", &st_seen)) < 0 ||
	    (r = cat_prepare(&c->q, "SELECT type, data FROM nodes WHERE hash = ?", &st_node)) < 0 ||
	    (r = cat_prepare(&c->q, "SELECT b.id FROM temp.copies k JOIN blocks b ON b.hash = k.hash"
				    " AND b.codec = k.codec AND b.level = k.level"
				    " WHERE k.snap_id = ?1 AND k.hash = ?2", &w.st_copy)) < 0 ||
	    (r = cat_prepare(&c->q, "SELECT id FROM blocks WHERE ?1 IS NOT NULL AND hash = ?2"
				    " ORDER BY codec, level LIMIT 1", &w.st_any)) < 0 ||
	    /* each snapshot's blocks, turned into ds_refs' lifetimes once all
	     * are known (build) */
	    (r = cat_prepare(&c->q, "INSERT OR IGNORE INTO temp.rc_refs(snap_id, block_id)"
				    " VALUES(?, ?)", &w.st_ref)) < 0 ||
	    (r = cat_prepare(&c->q, "SELECT s.id, s.root, d.name, s.name, 0 FROM snapshots s JOIN"
				    " datasets d ON d.id = s.ds_id UNION ALL SELECT 0, b.root,"
				    " d.name, b.name, 1 FROM bookmarks b JOIN datasets d ON"
				    " d.id = b.ds_id", &st_list)) < 0)
		goto out;
	while ((s = sqlite3_step(st_list)) == SQLITE_ROW) {
		w.snap_id = sqlite3_column_int64(st_list, 0);
		int bm = sqlite3_column_int(st_list, 4);
		char what[STORE_NAME_MAX * 2 + 8], hex[FERRY_HASH_HEX];
		const char *ds = (const char *)sqlite3_column_text(st_list, 2);
		snprintf(what, sizeof what, "%s%s%s%c%s", c->q.name, ds && *ds ? "/" : "",
			 ds ? ds : "", bm ? '#' : '@', (const char *)sqlite3_column_text(st_list, 3));
		if (sqlite3_column_bytes(st_list, 1) != FERRY_HASH_LEN) {
			r = ferry_err(FERR_CORRUPT, "%s: the state record gives no root", what);
			goto out;
		}
		if ((r = cat_exec(&c->q, "DELETE FROM temp.seen")) < 0)
			goto out;
		w.missing = 0;
		r = walk_tree(&w, sqlite3_column_blob(st_list, 1), st_seen, st_node);
		if (r < 0) {
			r = ferry_err(-r, "%s: %s", what, ferry_errmsg(r));
			goto out;
		}
		if (w.missing) {
			hash_to_hex(w.missing_hash, hex);
			r = ferry_err(FERR_CORRUPT, "%s: %s %s is not in the packs (or fails its hash)",
				      what, w.missing == 1 ? "node" : "block", hex);
			goto out;
		}
	}
	r = s == SQLITE_DONE ? 0 : cat_err(&c->q, "listing snapshots");
out:
	sqlite3_finalize(st_list);
	sqlite3_finalize(st_seen);
	sqlite3_finalize(st_node);
	sqlite3_finalize(w.st_copy);
	sqlite3_finalize(w.st_any);
	sqlite3_finalize(w.st_ref);
	return r;
}

/* ---- building, then swapping ------------------------------------------------------- */

static int build(struct rcv *c, const char *tmp)
{
	int r, fd = -1;
	if ((r = io_unlink(tmp)) < 0 && r != -FERR_NOENT) /* a killed recover's */
		return r;
	ferry_err_clear();
	if ((r = io_open_create(tmp, O_RDWR | O_EXCL, STORE_FILE_MODE, &fd)) < 0)
		return r;
	close(fd);
	if (sqlite3_open_v2(tmp, &c->q.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return ferry_err(FERR_CATALOG, "cannot open '%s'", tmp);
	/* a scratch file until it is whole: no journal; durable by the
	 * fsync before the rename */
	if ((r = cat_exec(&c->q, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
				 " PRAGMA cache_size=-32768")) < 0 ||
	    (r = cat_schema_create(&c->q)) < 0 ||
	    (r = cat_exec(&c->q, "CREATE TEMP TABLE copies(snap_id INTEGER, hash BLOB, codec"
				 " INTEGER, level INTEGER); CREATE INDEX temp.copies_k ON"
				 " copies(snap_id, hash); CREATE TEMP TABLE rc_refs(snap_id INTEGER,"
				 " block_id INTEGER, PRIMARY KEY(snap_id, block_id)) WITHOUT ROWID")) < 0 ||
	    (r = cat_exec(&c->q, "BEGIN")) < 0)
		return r;
	if ((r = cat_prepare(&c->q, "INSERT INTO packs(name, size) VALUES(?, ?)", &c->st_pack)) < 0 ||
	    (r = cat_prepare(&c->q, "INSERT OR IGNORE INTO blocks(hash, codec, level, pack_id,"
				    " offset, psize, lsize) VALUES(?, ?, ?, ?, ?, ?, ?)", &c->st_blk)) < 0 ||
	    (r = cat_prepare(&c->q, "INSERT OR IGNORE INTO nodes(hash, type, data) VALUES(?, ?, ?)",
			     &c->st_node)) < 0 ||
	    (r = scan_packs(c)) < 0)
		return r;
	if (c->bad_state_unknown || (c->bad_state_seq && c->bad_state_seq >= c->rep->seq))
		return ferry_err(FERR_CORRUPT, "pool '%s': a checkpoint that may be the newest is"
				 " damaged (%s); the newest state cannot be known. A pack that is"
				 " known to be old can be moved out of packs/", c->q.name,
				 c->bad_state);
	if (!c->state)
		return ferry_err(FERR_NOENT, "pool '%s': no checkpoint of its catalogue in the packs"
				 " (a version-1 pool has none: 'ferry pool upgrade' while its"
				 " catalogue is good)", c->q.name);
	if ((r = load_state(c)) < 0 || (r = check_trees(c)) < 0 ||
	    (r = life_convert(&c->q, "temp.rc_refs")) < 0 || (r = cat_exec(&c->q, "COMMIT")) < 0)
		return r;
	sqlite3_finalize(c->st_pack);
	sqlite3_finalize(c->st_blk);
	sqlite3_finalize(c->st_node);
	c->st_pack = c->st_blk = c->st_node = NULL;
	if (sqlite3_close(c->q.db) != SQLITE_OK)
		return ferry_err(FERR_CATALOG, "cannot close '%s'", tmp);
	c->q.db = NULL;
	if ((fd = open(tmp, O_RDWR | O_CLOEXEC)) < 0)
		return ferry_err_errno(errno, "cannot open '%s'", tmp);
	r = io_fsync(fd, "the new catalogue");
	close(fd);
	return r;
}

/* Moves from (if it exists) to to. */
static int move_aside(const char *from, const char *to)
{
	struct stat sb;
	if (lstat(from, &sb) != 0)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot stat '%s'", from);
	return io_rename(from, to);
}

int recover_finish(const char *dir, char *damaged, size_t n)
{
	char db[PATH_MAX + 64], ready[PATH_MAX + 64], side[PATH_MAX + 96], a[PATH_MAX + 96],
		b[PATH_MAX + 96], stamp[32];
	time_t now = (time_t)(ferry_now_ns() / 1000000000u);
	struct tm tm;
	struct stat sb;
	int r;
	snprintf(ready, sizeof ready, "%s/%s", dir, RECOVER_READY);
	if (lstat(ready, &sb) != 0)
		return errno == ENOENT ? 0 : ferry_err_errno(errno, "cannot stat '%s'", ready);
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	snprintf(db, sizeof db, "%s/%s", dir, STORE_CATALOG);
	snprintf(side, sizeof side, "%s.damaged-%s", db, stamp);
	snprintf(a, sizeof a, "%s-wal", db);
	snprintf(b, sizeof b, "%s-wal", side);
	/* the WAL first: SQLite would apply the old one to the new file */
	if ((r = move_aside(a, b)) < 0)
		return r;
	snprintf(a, sizeof a, "%s-shm", db);
	if ((r = io_unlink(a)) < 0 && r != -FERR_NOENT)
		return r;
	ferry_err_clear();
	if (lstat(db, &sb) == 0 && damaged)
		snprintf(damaged, n, "%s", side);
	if ((r = move_aside(db, side)) < 0)
		return r;
	/* another process may have finished it meanwhile */
	if ((r = io_rename(ready, db)) == -FERR_NOENT)
		ferry_err_clear();
	else if (r < 0)
		return r;
	return io_fsync_dir(dir);
}

/* The commit point: the new catalogue, whole and durable, under the
 * name that makes every later open (or this recover) finish the swap. */
static int swap_in(struct rcv *c, const char *tmp)
{
	char ready[PATH_MAX + 64];
	int r;
	snprintf(ready, sizeof ready, "%s/%s", c->q.path, RECOVER_READY);
	if ((r = io_rename(tmp, ready)) < 0 || (r = io_fsync_dir(c->q.path)) < 0)
		return r;
	return recover_finish(c->q.path, c->rep->damaged, sizeof c->rep->damaged);
}

int store_pool_recover(const char *name, int dry_run, struct store_recover_report *rep)
{
	char path[PATH_MAX], tmp[PATH_MAX + 64];
	struct rcv c;
	int r, lock = -1;
	memset(&c, 0, sizeof c);
	memset(rep, 0, sizeof *rep);
	c.rep = rep;
	c.q.tx_lock_fd = -1;
	if ((r = registry_get(name, path, sizeof path)) < 0)
		return r;
	c.q.name = (char *)name;
	c.q.path = path;
	snprintf(tmp, sizeof tmp, "%s/%s", path, RECOVER_TMP);
	/* no writer, reader or gc alive: each holds the gc lock */
	if ((r = pack_lock(&c.q, 1, &lock)) < 0)
		return r;
	if (!(c.buf = malloc(PACK_BLK_HDR_LEN + STORE_BLOCK_MAX + NODE_MAX)) ||
	    !(c.scratch = malloc(STORE_BLOCK_MAX))) {
		r = ferry_err(FERR_NOMEM, "recovering pool '%s'", name);
		goto out;
	}
	/* a recover killed after its commit point is finished first */
	if ((r = recover_finish(path, rep->damaged, sizeof rep->damaged)) < 0 ||
	    (r = build(&c, tmp)) < 0)
		goto out;
	if (!dry_run)
		r = swap_in(&c, tmp);
out:
	sqlite3_finalize(c.st_pack);
	sqlite3_finalize(c.st_blk);
	sqlite3_finalize(c.st_node);
	if (c.q.db)
		sqlite3_close_v2(c.q.db);
	if (r < 0 || dry_run) {
		struct ferry_errsave e;
		ferry_err_save(&e);
		if (io_unlink(tmp) < 0) /* nothing of it is the pool's */
			ferry_err_clear();
		ferry_err_restore(&e);
	}
	free(c.buf);
	free(c.scratch);
	free(c.state);
	free(c.stack);
	close(lock);
	return r;
}
