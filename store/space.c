/* store/space.c — space accounting. Figures count stored blocks (psize physical, lsize
 * logical); holes and metadata nodes are not counted. A dataset's "head" is
 * its newest snapshot (the live data is the source directory, outside the
 * pool), so referenced is the newest snapshot's, usedbysnapshots what the
 * older snapshots hold beyond it, and used counts each block once per
 * dataset, plus the children's used. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"

/* Physical and logical bytes of the distinct blocks of each dataset in the
 * subtree of ds_id (each block once per dataset): all[] of the whole
 * subtree, ch[] of its descendants alone, in one pass. */
static int subtree_blocks(struct store_pool *p, int64_t ds_id, uint64_t all[2], uint64_t ch[2])
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "WITH RECURSIVE sub(id) AS (SELECT ?1 UNION ALL SELECT d.id FROM"
			       " datasets d JOIN sub ON d.parent_id = sub.id)"
			       " SELECT coalesce(sum(b.psize), 0), coalesce(sum(b.lsize), 0),"
			       " coalesce(sum(CASE WHEN y.ds_id != ?1 THEN b.psize END), 0),"
			       " coalesce(sum(CASE WHEN y.ds_id != ?1 THEN b.lsize END), 0) FROM"
			       " (SELECT DISTINCT x.ds_id, x.block_id FROM ds_refs x WHERE x.ds_id IN"
			       " (SELECT id FROM sub)) y JOIN blocks b ON b.id = y.block_id", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < 2; i++) {
			all[i] = (uint64_t)sqlite3_column_int64(st, i);
			ch[i] = (uint64_t)sqlite3_column_int64(st, 2 + i);
		}
	} else {
		r = cat_err(p, "computing space");
	}
	sqlite3_finalize(st);
	return r;
}

int store_ds_space(struct store_pool *p, const struct store_ds *ds, struct store_space *out)
{
	struct store_space s;
	int r;
	memset(&s, 0, sizeof s);
	if (ds->type == STORE_DS_SNAPSHOT) {
		struct store_snap sn;
		sqlite3_stmt *st = NULL;
		if ((r = cat_prepare(p, "SELECT referenced, logicalreferenced, written, ds_id"
				       " FROM snapshots WHERE id = ?", &st)) < 0)
			return r;
		sqlite3_bind_int64(st, 1, ds->id);
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			s.referenced = (uint64_t)sqlite3_column_int64(st, 0);
			s.logicalreferenced = (uint64_t)sqlite3_column_int64(st, 1);
			s.written = (uint64_t)sqlite3_column_int64(st, 2);
			memset(&sn, 0, sizeof sn);
			sn.id = ds->id;
			sn.ds_id = sqlite3_column_int64(st, 3);
		} else {
			r = rc == SQLITE_DONE ? ferry_err(FERR_NOENT, "snapshot '%s' does not exist",
							  ds->name)
					      : cat_err(p, "reading snapshot space");
		}
		sqlite3_finalize(st);
		if (r < 0)
			return r;
		if ((r = store_snap_unique(p, &sn, &s.used)) < 0)
			return r;
		/* zfs: a snapshot's logicalused is its logicalreferenced */
		s.logicalused = s.logicalreferenced;
		*out = s;
		return 0;
	}
	uint64_t all[2] = {0, 0}, ch[2] = {0, 0};
	if ((r = subtree_blocks(p, ds->id, all, ch)) < 0)
		return r;
	uint64_t all_p = all[0], all_l = all[1], own_p = all[0] - ch[0];
	struct store_snap newest;
	r = store_snap_newest(p, ds, &newest);
	if (r == 0) {
		s.referenced = newest.referenced;
		s.logicalreferenced = newest.logicalreferenced;
	} else if (r == -FERR_NOENT) {
		ferry_err_clear();
	} else {
		return r;
	}
	s.used = all_p;
	s.logicalused = all_l;
	/* zfs's breakdown: the head (what the dataset references; ferry has
	 * no clones, so all of it is the dataset's own), what only its older
	 * snapshots hold, and what its descendants use. The newest snapshot's
	 * blocks are among the dataset's own, so the three add up to used. */
	s.usedbydataset = s.referenced;
	s.usedbysnapshots = own_p > s.referenced ? own_p - s.referenced : 0;
	s.usedbychildren = all_p - own_p;
	s.written = 0; /* nothing is written after the newest snapshot */
	*out = s;
	return 0;
}

/* Bytes that snapshot later_id references and since_id does not. */
static int snap_diff_bytes(struct store_pool *p, int64_t later_id, int64_t since_id, uint64_t *out)
{
	sqlite3_stmt *st = NULL;
	/* the rows that hold later, of blocks no row of since's dataset
	 * holds since in */
	int r = cat_prepare(p, "SELECT coalesce(sum(b.psize), 0) FROM snapshots l"
			       " JOIN ds_refs x ON x.ds_id = l.ds_id AND x.born <= l.createtxg"
			       " AND (x.died IS NULL OR x.died > l.createtxg)"
			       " JOIN blocks b ON b.id = x.block_id WHERE l.id = ?1"
			       " AND NOT EXISTS (SELECT 1 FROM snapshots o JOIN ds_refs y ON"
			       " y.ds_id = o.ds_id AND y.block_id = x.block_id AND y.born <= o.createtxg"
			       " AND (y.died IS NULL OR y.died > o.createtxg) WHERE o.id = ?2)", &st);
	if (r < 0)
		return r;
	sqlite3_bind_int64(st, 1, later_id);
	sqlite3_bind_int64(st, 2, since_id);
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	else
		r = cat_err(p, "computing written");
	sqlite3_finalize(st);
	return r;
}

int space_written_since(struct store_pool *p, const struct store_ds *ds, const char *since,
			uint64_t *out)
{
	char full[2 * STORE_NAME_MAX + 2], own[STORE_NAME_MAX + 1];
	struct store_snap base, later;
	struct store_ds owner;
	int r, head = ds->type != STORE_DS_SNAPSHOT;
	if (!head) {
		if ((r = ds_load_by_id(p, ds->parent_id, &owner)) < 0)
			return r;
	} else {
		owner = *ds;
	}
	snprintf(own, sizeof own, "%s", owner.name);
	/* zfs: a short name is a snapshot of the dataset's own */
	if (strchr(since, '@'))
		snprintf(full, sizeof full, "%s", since);
	else
		snprintf(full, sizeof full, "%s@%s", own, since);
	if ((r = store_snap_lookup(p, full, &base)) < 0)
		return ferry_err(-r, "written@%s: %s", since, ferry_errmsg(r));
	if (base.ds_id != owner.id)
		return ferry_err(FERR_INVAL, "written@%s: '%s' is not a snapshot of '%s'", since,
				 base.name, own);
	if (head) {
		/* the head is the newest snapshot (see above); every snapshot
		 * of the dataset is earlier than it */
		if ((r = store_snap_newest(p, ds, &later)) < 0)
			return r;
	} else if (base.createtxg >= ds->createtxg) {
		return ferry_err(FERR_INVAL, "written@%s: '%s' is not earlier than '%s'", since,
				 base.name, ds->name);
	} else {
		later.id = ds->id;
	}
	return snap_diff_bytes(p, later.id, base.id, out);
}

int space_pool_stats(struct store_pool *p, struct store_pool_stats *s)
{
	sqlite3_stmt *st = NULL;
	int r = cat_prepare(p, "SELECT count(*) FROM snapshots", &st);
	if (r < 0)
		return r;
	if (sqlite3_step(st) == SQLITE_ROW)
		s->snapshots = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if ((r = cat_prepare(p, "SELECT codec, level, count(*), sum(lsize), sum(psize) FROM blocks"
			       " GROUP BY codec, level", &st)) < 0)
		return r;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int c = sqlite3_column_int(st, 0), l = sqlite3_column_int(st, 1);
		if (c < 0 || c >= 4 || l < 0 || l >= 10)
			continue;
		s->codec_blocks[c][l] = (uint64_t)sqlite3_column_int64(st, 2);
		s->codec_lbytes[c][l] = (uint64_t)sqlite3_column_int64(st, 3);
		s->codec_pbytes[c][l] = (uint64_t)sqlite3_column_int64(st, 4);
	}
	if (rc != SQLITE_DONE)
		r = cat_err(p, "counting blocks");
	sqlite3_finalize(st);
	return r;
}

void store_format_ratio(uint64_t logical, uint64_t physical, char *buf, size_t n, int exact)
{
	/* zfs: ratio = logical * 100 / physical, printed with two decimals. */
	uint64_t r100 = physical ? (uint64_t)((long double)logical * 100 / physical) : 100;
	snprintf(buf, n, "%llu.%02llu%s", (unsigned long long)(r100 / 100),
		 (unsigned long long)(r100 % 100), exact ? "" : "x");
}
