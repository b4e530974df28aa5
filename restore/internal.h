/* restore/internal.h — private to restore/: what restore.c and archive.c
 * share. */
#ifndef FERRY_RESTORE_INTERNAL_H
#define FERRY_RESTORE_INTERNAL_H

#include "restore.h"

/* Writes the tree under root (kind: filesystem or volume) as the archive
 * o->format to o->fd, reading through rd. */
int restore_archive(struct store_pool *p, struct store_reader *rd, const struct node_entry *root,
		    int kind, const struct restore_opts *o, struct restore_stats *st) FERRY_WUR;

/* restore --file: whether the path (relative to the snapshot root, plen
 * bytes) is to be restored: 0 skip, 1 restore it whole, 2 it leads to a
 * selected path. Marks found[i] when path is exactly files[i]. */
int restore_selected(const char *const *files, size_t nfiles, const char *path, size_t plen,
		     int *found);

#endif
