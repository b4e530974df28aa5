/* store/propreceived.c — the received value of a property, for zfs get's
 * RECEIVED column (get -o all, -o received): what a stream set, whether or
 * not a local value overrides it. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int store_prop_received(struct store_pool *p, const struct store_ds *ds, const char *name,
			char *out, size_t n)
{
	sqlite3_stmt *st = NULL;
	int r;
	/* snapshots and bookmarks keep no received values of their own */
	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return 0;
	if ((r = cat_prepare(p, "SELECT value FROM props WHERE ds_id = ? AND name = ? AND source = ?",
			     &st)) < 0)
		return r;
	sqlite3_bind_int64(st, 1, ds->id);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, STORE_SRC_RECEIVED);
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW) {
		snprintf(out, n, "%s", (const char *)sqlite3_column_text(st, 0));
		r = 1;
	} else if (s == SQLITE_DONE) {
		r = 0;
	} else {
		r = cat_err(p, "reading a received property");
	}
	sqlite3_finalize(st);
	return r;
}
