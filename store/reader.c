/* store/reader.c — reading blocks and nodes back: a block's stored form
 * (its pack header checked against the index row), decoded and verified,
 * or as stored for send -c; nodes from the catalogue, checked against
 * their hashes. A reader holds the gc lock shared, so packs do not vanish
 * under it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define RD_FDS 16

struct store_reader {
	struct store_pool *p;
	int lock_fd; /* gc lock held shared: packs do not vanish under a reader */
	struct {
		int64_t pack_id;
		int fd;
		int version; /* of the pack's header; 0: unreadable, so no CRC tails are trusted */
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

/* The open fd of pack pack_id (named name), and its version, as its header
 * says (0 when the header cannot be read or is damaged: the blocks may still
 * be whole, and are then read as from a pack without CRC tails). */
static int reader_fd(struct store_reader *rd, int64_t pack_id, const char *name, int *fd,
		     int *version)
{
	int victim = 0;
	for (int i = 0; i < RD_FDS; i++) {
		if (rd->fds[i].fd >= 0 && rd->fds[i].pack_id == pack_id) {
			rd->fds[i].used = ++rd->tick;
			*fd = rd->fds[i].fd;
			*version = rd->fds[i].version;
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
	uint8_t h[PACK_HDR_LEN];
	size_t got = 0;
	int v = 0;
	if (io_pread_full(f, h, sizeof h, 0, &got) < 0 || got != sizeof h || pack_hdr_get(h, &v) < 0) {
		ferry_err_clear();
		v = 0;
	}
	rd->fds[victim].fd = f;
	rd->fds[victim].version = v;
	rd->fds[victim].pack_id = pack_id;
	rd->fds[victim].used = ++rd->tick;
	*fd = f;
	*version = v;
	return 0;
}

/* Reads the stored form of hash into rd->buf: header checked against the
 * index row, payload at rd->buf + PACK_BLK_HDR_LEN. With vouched, the
 * record's CRC tail is read too where its pack has one (version 3), and
 * *vouched says whether it matches the header and payload read; a tail
 * missing, unreadable or not matching is not an error here (the caller
 * then checks the block the full way, which gives the verdict). */
static int read_stored(struct store_reader *rd, const uint8_t *hash, struct codec_spec prefer,
		       struct codec_spec *c, uint32_t *lsize, uint32_t *psize, int *vouched)
{
	sqlite3_stmt *st = rd->st_loc;
	char name[64];
	int r, fd;
	if (vouched)
		*vouched = 0;
	rd->last.pack[0] = 0; /* no location until the index row is found */
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
	if (rd->bufcap < need + PACK_REC_TAIL) {
		uint8_t *nb = realloc(rd->buf, need + PACK_REC_TAIL);
		if (!nb)
			return ferry_err(FERR_NOMEM, "reading a block");
		rd->buf = nb;
		rd->bufcap = need + PACK_REC_TAIL;
	}
	int version;
	if ((r = reader_fd(rd, pack_id, name, &fd, &version)) < 0)
		return r;
	size_t got = 0, tail = vouched && version >= 3 ? PACK_REC_TAIL : 0;
	if ((r = io_pread_full(fd, rd->buf, need + tail, (off_t)off, &got)) < 0)
		return r;
	if (got < need)
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
	if (tail && got == need + tail)
		*vouched = get_le32(rd->buf + need) ==
			   pack_rec_crc(rd->buf, PACK_BLK_HDR_LEN, rd->buf + PACK_BLK_HDR_LEN, hp);
	*c = hc;
	*lsize = hl;
	*psize = hp;
	return 0;
}

/* A read_stored error met once the index row was found (a pack file
 * missing, truncated, or not holding the indexed block there) is damage of
 * that block: named with its hash, pack and offset as a payload that
 * fails its hash is. */
static int stored_damage(struct store_reader *rd, const uint8_t *hash, int r)
{
	if (!rd->last.pack[0] || (r != -FERR_CORRUPT && r != -FERR_NOENT && r != -FERR_IO))
		return r;
	return store_block_damage(hash, &rd->last, r);
}

int store_block_read(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN], void *dst,
		     size_t lsize)
{
	struct codec_spec c;
	uint32_t ls, ps;
	uint8_t h[FERRY_HASH_LEN];
	int r;
	if ((r = read_stored(rd, hash, (struct codec_spec){CODEC_OFF, 0}, &c, &ls, &ps, NULL)) < 0)
		return stored_damage(rd, hash, r);
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

int store_block_read_stored(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN],
			    struct codec_spec prefer, struct codec_spec *codec,
			    uint32_t *lsize, struct fbuf *out, int *vouched)
{
	struct codec_spec c;
	uint32_t ls, ps;
	int r;
	if ((r = read_stored(rd, hash, prefer, &c, &ls, &ps, vouched)) < 0)
		return stored_damage(rd, hash, r);
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
	return node_row_take(rd->p, st, hash, type, out);
}

/* Nodes a pool handle has read and checked against their hash. One
 * directory of a changed path is read several times by a receive (the
 * body, the census, both walks of refs.c, the END walk), and its hash
 * (BLAKE2b) was 16 % of a 0.1 % receive at 1,000,000 files. Rows do not
 * change under a hash (content addressing), so a row read again is
 * checked against its type, length and CRC-32C of the first time, which
 * still catches a page of the catalogue damaged since. Directories and
 * indexes only: a file's blocklist is small, quick to hash, and the most
 * numerous node, which would crowd the others out. Direct-mapped and
 * fixed in size (a slot is overwritten by the next node that maps to
 * it; 224 KiB, as a full receive at 1,000,000 files peaks within 1 MiB
 * of issue 14's 64 MiB); a slot keeps the first 128 bits of the hash.
 * A mutex, as a handle may be read from more than one thread. */
#define MEMO_BITS 13 /* 8,192 slots */
#define MEMO_KEY 16
struct node_memo_slot {
	uint8_t key[MEMO_KEY];
	uint32_t crc, len;
	uint8_t type, used;
};
struct node_memo {
	pthread_mutex_t mu;
	struct node_memo_slot v[1u << MEMO_BITS];
};

void node_memo_new(struct store_pool *p)
{
	if ((p->memo = calloc(1, sizeof *p->memo)) != NULL)
		pthread_mutex_init(&p->memo->mu, NULL);
}

void node_memo_free(struct store_pool *p)
{
	if (p->memo)
		pthread_mutex_destroy(&p->memo->mu);
	free(p->memo);
	p->memo = NULL;
}

static struct node_memo_slot *memo_slot(struct node_memo *m, const uint8_t *hash)
{
	return &m->v[get_le64(hash) & ((1u << MEMO_BITS) - 1)];
}

/* 1 when p checked node hash before as type t of bytes b (CRC-32C crc). */
static int memo_known(struct store_pool *p, const uint8_t *hash, int t, const struct fbuf *b,
		      uint32_t crc)
{
	struct node_memo *m = p->memo; /* NULL: no memo, every read is hashed */
	int k = 0;
	if (!m)
		return 0;
	pthread_mutex_lock(&m->mu);
	struct node_memo_slot *s = memo_slot(m, hash);
	k = s->used && !memcmp(s->key, hash, MEMO_KEY) && s->type == t &&
	    s->len == (uint32_t)b->len && s->crc == crc;
	pthread_mutex_unlock(&m->mu);
	return k;
}

static void memo_put(struct store_pool *p, const uint8_t *hash, int t, size_t len, uint32_t crc)
{
	struct node_memo *m = p->memo;
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	struct node_memo_slot *s = memo_slot(m, hash);
	memcpy(s->key, hash, MEMO_KEY);
	s->crc = crc;
	s->len = (uint32_t)len;
	s->type = (uint8_t)t;
	s->used = 1;
	pthread_mutex_unlock(&m->mu);
}

void node_memo_put(struct store_pool *p, const uint8_t hash[FERRY_HASH_LEN], int type,
		   const void *data, size_t len)
{
	if (type == NODE_BLOCKLIST)
		return;
	memo_put(p, hash, type, len, crc32c_update(0, data, len));
}

int node_row_take(struct store_pool *p, sqlite3_stmt *st, const uint8_t hash[FERRY_HASH_LEN],
		  int *type, struct fbuf *out)
{
	uint8_t h[FERRY_HASH_LEN];
	int r = 0;
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
	int memo = t != NODE_BLOCKLIST;
	uint32_t crc = memo ? crc32c_update(0, out->data, out->len) : 0;
	if (!memo || !memo_known(p, hash, t, out, crc)) {
		node_hash(t, out->data, out->len, h);
		if (memcmp(h, hash, FERRY_HASH_LEN) != 0)
			return ferry_err(FERR_CORRUPT, "node content does not match its hash");
		if (memo)
			memo_put(p, hash, t, out->len, crc);
	}
	*type = t;
	return 0;
}

int node_read_either(struct store_pool *p, sqlite3_stmt *const sts[2],
		     const uint8_t hash[FERRY_HASH_LEN], int *type, struct fbuf *out,
		     const char *other)
{
	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *st = sts[i];
		sqlite3_reset(st);
		sqlite3_bind_blob(st, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
		int s = sqlite3_step(st);
		if (s == SQLITE_DONE) {
			sqlite3_reset(st);
			continue;
		}
		if (s != SQLITE_ROW) {
			sqlite3_reset(st);
			return cat_err(p, "reading a node");
		}
		return node_row_take(p, st, hash, type, out);
	}
	char hex[FERRY_HASH_HEX];
	hash_to_hex(hash, hex);
	return ferry_err(FERR_NOENT, "node %s is neither %s nor in the pool", hex, other);
}

int store_node_has(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN])
{
	sqlite3_reset(rd->st_has_node);
	sqlite3_bind_blob(rd->st_has_node, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	return pack_step_exists(rd->p, rd->st_has_node, "looking up a node");
}

int store_block_has(struct store_reader *rd, const uint8_t hash[FERRY_HASH_LEN])
{
	sqlite3_reset(rd->st_has_block);
	sqlite3_bind_blob(rd->st_has_block, 1, hash, FERRY_HASH_LEN, SQLITE_STATIC);
	return pack_step_exists(rd->p, rd->st_has_block, "looking up a block");
}
