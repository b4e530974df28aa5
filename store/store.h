/* store/store.h — the one public header of store/: pools, the catalogue,
 * datasets, properties, names and codecs. Callers (send/, recv/, cli/) use
 * only what is declared here; store/internal.h is private to store/. */
#ifndef FERRY_STORE_H
#define FERRY_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/lib.h"
#include "codec.h"

#define STORE_FORMAT_VERSION 1
#define STORE_NAME_MAX 255     /* zfs: ZFS_MAX_DATASET_NAME_LEN - 1 */
#define STORE_USERPROP_NAME_MAX 255
#define STORE_USERPROP_VALUE_MAX 8192

/* ---- names ---------------------------------------------------------------- */
enum store_name_kind {
	STORE_NAME_POOL,
	STORE_NAME_DATASET,  /* pool or pool/a/b */
	STORE_NAME_SNAPSHOT, /* pool/a@snap */
	STORE_NAME_BOOKMARK, /* pool/a#mark */
};
/* Checks name as zfs does (allowed characters, no empty or "."/".."
 * components, no trailing '/', length ≤ STORE_NAME_MAX, reserved pool
 * names). 0 if valid, else -FERR_NAME with a detail naming the problem. */
int store_name_check(const char *name, enum store_name_kind kind) FERRY_WUR;

/* ---- the registry (FERRY_HOME) ------------------------------------------- */
/* Writes the registry directory: $FERRY_HOME, else /var/lib/ferry for root,
 * else $XDG_DATA_HOME/ferry or ~/.local/share/ferry. */
int store_home(char *buf, size_t n) FERRY_WUR;

struct store_pool_entry {
	char name[STORE_NAME_MAX + 1];
	char path[4096];
};
/* Lists registered pools sorted by name into a malloc'd array (caller frees). */
int store_registry_list(struct store_pool_entry **out, size_t *n) FERRY_WUR;

/* ---- pools ---------------------------------------------------------------- */
struct store_pool;

/* A property assignment, as given by -o p=v. */
struct store_propset {
	const char *name;
	const char *value;
};

/* Creates a pool named name in directory path (which must not exist or be
 * empty), with the root dataset's properties props, and registers it.
 * Nothing is left behind on failure. */
int store_pool_create(const char *name, const char *path,
		      const struct store_propset *props, size_t nprops) FERRY_WUR;
/* Registers the pool at path under name (NULL: the name it was created or
 * last imported with). *name_out (may be NULL) receives a malloc'd copy. */
int store_pool_import(const char *path, const char *name, char **name_out) FERRY_WUR;
/* Removes name from the registry; the pool's files are untouched. */
int store_pool_export(const char *name) FERRY_WUR;

enum { STORE_OPEN_RDONLY = 1 << 0 };
/* Opens the registered pool name. Refuses a pool whose format is newer than
 * STORE_FORMAT_VERSION (-FERR_VERSION) and a path that is not a pool. */
int store_pool_open(const char *name, int flags, struct store_pool **out) FERRY_WUR;
/* Opens the pool that contains dataset/snapshot name (its first component). */
int store_pool_open_for(const char *dsname, int flags, struct store_pool **out) FERRY_WUR;
void store_pool_close(struct store_pool *p); /* NULL is a no-op */
const char *store_pool_name(const struct store_pool *p);
const char *store_pool_path(const struct store_pool *p);

struct store_pool_stats {
	uint64_t format_version;
	uint64_t guid;
	uint64_t txg;
	uint64_t datasets;
	uint64_t snapshots;
	uint64_t disk_used;   /* bytes of the pool directory's files */
	uint64_t fs_size;     /* the host filesystem, statvfs */
	uint64_t fs_free;
	/* per codec id (enum codec_id), the stored blocks and their bytes */
	uint64_t codec_blocks[4][10];
	uint64_t codec_lbytes[4][10];
	uint64_t codec_pbytes[4][10];
};
int store_pool_stats(struct store_pool *p, struct store_pool_stats *out) FERRY_WUR;

/* Transactions on the catalogue; every mutating store_* call runs inside one
 * (it opens its own when the caller has none). */
int store_tx_begin(struct store_pool *p) FERRY_WUR;
int store_tx_commit(struct store_pool *p) FERRY_WUR;
void store_tx_rollback(struct store_pool *p);

/* ---- datasets ------------------------------------------------------------- */
enum store_ds_type { STORE_DS_FILESYSTEM = 1, STORE_DS_VOLUME = 2, STORE_DS_SNAPSHOT = 3 };
const char *store_ds_type_name(int type);

struct store_ds {
	int64_t id;
	int64_t parent_id;     /* 0 for the pool's root dataset */
	int type;              /* enum store_ds_type */
	char name[STORE_NAME_MAX + 1]; /* full name, pool first */
	uint64_t guid;
	int64_t creation;      /* seconds since the epoch */
	uint64_t createtxg;
};

/* Looks up a filesystem or volume by full name; -FERR_NOENT if absent. */
int store_ds_lookup(struct store_pool *p, const char *name, struct store_ds *out) FERRY_WUR;
/* Creates dataset name of type (filesystem, or volume with props volsize).
 * With parents, missing ancestors are created as filesystems; without, a
 * missing parent is -FERR_NOENT. props are validated first; nothing changes
 * on any error. */
int store_ds_create(struct store_pool *p, const char *name, int type, int parents,
		    const struct store_propset *props, size_t nprops) FERRY_WUR;
/* Destroys dataset name; with children and !recursive → -FERR_BUSY. The
 * root dataset can't be destroyed (destroy the pool's files instead). */
int store_ds_destroy(struct store_pool *p, const char *name, int recursive) FERRY_WUR;

/* Calls fn for ds and, when depth != 0, its descendants down to depth
 * levels (depth < 0: all), parents before children, siblings by name.
 * Stops at and returns fn's first nonzero result. */
typedef int (*store_ds_fn)(struct store_pool *p, const struct store_ds *ds, void *arg);
int store_ds_walk(struct store_pool *p, const struct store_ds *ds, int depth,
		  store_ds_fn fn, void *arg) FERRY_WUR;

/* ---- properties ----------------------------------------------------------- */
enum store_prop_source {
	STORE_SRC_NONE = 0,      /* read-only figures: "-" */
	STORE_SRC_DEFAULT,
	STORE_SRC_LOCAL,
	STORE_SRC_RECEIVED,
	STORE_SRC_INHERITED,     /* from .inherited_from */
};

struct store_propval {
	char name[STORE_USERPROP_NAME_MAX + 1];
	char value[STORE_USERPROP_VALUE_MAX + 1];  /* as zfs prints it (-p off) */
	char exact[STORE_USERPROP_VALUE_MAX + 1];  /* as zfs -p prints it */
	int source;                                /* enum store_prop_source */
	char inherited_from[STORE_NAME_MAX + 1];
	int numeric;                               /* 1 when exact is a number */
};

/* Whether name is a known native property or a valid user property. */
int store_prop_known(const char *name);
/* Gets one property of ds. Unset user properties give value "-" and
 * source NONE; an unknown name is -FERR_PROP. */
int store_prop_get(struct store_pool *p, const struct store_ds *ds, const char *name,
		   struct store_propval *out) FERRY_WUR;
/* Calls fn for every property of ds that `get all` shows, in zfs order,
 * then the user properties that are set or inherited, by name. */
typedef int (*store_prop_fn)(const struct store_propval *v, void *arg);
int store_prop_all(struct store_pool *p, const struct store_ds *ds,
		   store_prop_fn fn, void *arg) FERRY_WUR;
/* Validates and sets properties (all or nothing) with source local or
 * received. Read-only and create-only properties are -FERR_PROP. */
int store_prop_set(struct store_pool *p, const struct store_ds *ds,
		   const struct store_propset *props, size_t n, int source) FERRY_WUR;
/* Clears the local and received values of name on ds (with recursive, on
 * all descendants too) so it is inherited again; with revert_received
 * (zfs inherit -S) only the local value is cleared, so a received value
 * shows again. */
int store_prop_inherit(struct store_pool *p, const struct store_ds *ds, const char *name,
		       int recursive, int revert_received) FERRY_WUR;
/* Validates one assignment for a dataset of type at creation (create_time
 * 1) or later; writes the canonical stored value into canon. */
int store_prop_validate(const char *name, const char *value, int type, int create_time,
			char *canon, size_t n) FERRY_WUR;
/* The effective compression of ds (local, received, inherited or default). */
int store_ds_compression(struct store_pool *p, const struct store_ds *ds,
			 struct codec_spec *out) FERRY_WUR;
/* The effective recordsize in bytes. */
int store_ds_recordsize(struct store_pool *p, const struct store_ds *ds, uint32_t *out) FERRY_WUR;

/* ---- space ---------------------------------------------------------------- */
struct store_space {
	uint64_t used, referenced, logicalused, logicalreferenced, written;
	uint64_t usedbysnapshots;
};
/* Exact accounting for ds (zeros until data lands). */
int store_ds_space(struct store_pool *p, const struct store_ds *ds, struct store_space *out) FERRY_WUR;
/* "1.93x" from logical and physical sizes (1.00x when physical is 0). */
void store_format_ratio(uint64_t logical, uint64_t physical, char *buf, size_t n, int exact);

#endif
