/* capture/internal.h — private to capture/: what capture.c and archive.c
 * share. */
#ifndef FERRY_CAPTURE_INTERNAL_H
#define FERRY_CAPTURE_INTERNAL_H

#include "capture.h"

/* Captures the archive at from (any format and compression libarchive
 * reads) as the tree of a snapshot being written by w: records of rs
 * bytes stored under policy on threads workers; root receives the root
 * node. Warnings (a member skipped or cut) go to warnfn. */
int capture_archive(struct store_pool *p, struct store_writer *w, struct capture_stats *st,
		    const char *from, struct codec_spec policy, uint32_t rs, unsigned threads,
		    void (*warnfn)(void *, const char *, const char *), void *arg,
		    uint8_t root[FERRY_HASH_LEN]) FERRY_WUR;

#endif
