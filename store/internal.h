/* store/internal.h — private to store/: the pool handle and catalogue
 * helpers shared by the store's files. */
#ifndef FERRY_STORE_INTERNAL_H
#define FERRY_STORE_INTERNAL_H

#include <sqlite3.h>

#include "store.h"

#define STORE_MARKER "ferry.pool"
#define STORE_CATALOG "catalog.db"

struct store_pool {
	char *name;
	char *path;
	sqlite3 *db;
	int flags;
	int tx_depth; /* nested store_tx_begin calls share one transaction */
	int tx_failed;
};

/* Turns the last SQLite error on p into -FERR_CATALOG (or BUSY/NOSPC/IO)
 * with "what: sqlite message". */
int cat_err(struct store_pool *p, const char *what);
int cat_exec(struct store_pool *p, const char *sql) FERRY_WUR;
int cat_prepare(struct store_pool *p, const char *sql, sqlite3_stmt **st) FERRY_WUR;
/* Creates the schema in a new catalogue. */
int cat_schema_create(struct store_pool *p) FERRY_WUR;
int cat_meta_get(struct store_pool *p, const char *key, char *buf, size_t n) FERRY_WUR;
int cat_meta_set(struct store_pool *p, const char *key, const char *value) FERRY_WUR;
/* Bumps and returns the pool's transaction group counter (inside a tx). */
int cat_next_txg(struct store_pool *p, uint64_t *txg) FERRY_WUR;
/* Opens (and with create, creates) the SQLite catalogue of the pool at path. */
int cat_open(struct store_pool *p, int create) FERRY_WUR;

/* Dataset name inside the pool ("" for the root) from a full name. */
const char *ds_relname(const struct store_pool *p, const char *full);
int ds_load_by_id(struct store_pool *p, int64_t id, struct store_ds *out) FERRY_WUR;
void ds_fullname(const struct store_pool *p, const char *rel, char *out, size_t n);

/* The registry (registry.c). */
int registry_get(const char *name, char *path, size_t n) FERRY_WUR;
int registry_put(const char *name, const char *path) FERRY_WUR;
int registry_del(const char *name) FERRY_WUR;

/* Removes what a dataset owns (snapshots, block references) before its
 * catalogue row is deleted; inside the caller's transaction (space.c). */
int ds_destroy_contents(struct store_pool *p, const struct store_ds *ds) FERRY_WUR;

/* store_prop_set that also accepts create-only properties (create_time). */
int prop_set(struct store_pool *p, const struct store_ds *ds,
	     const struct store_propset *props, size_t n, int source, int create_time) FERRY_WUR;

#endif
