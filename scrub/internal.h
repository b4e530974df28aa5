/* scrub/internal.h — what scrub.c (the whole run, the block pass, the
 * repair) and tree.c (the tree pass) share. Private to scrub/. */
#ifndef FERRY_SCRUB_INTERNAL_H
#define FERRY_SCRUB_INTERNAL_H

#include "scrub.h"

/* One scrub run: its state, the errors found since the last checkpoint. */
struct scrub {
	struct store_pool *p;
	const struct scrub_opts *o;
	struct scrub_result *res;
	struct store_scrub_state st;
	struct store_scrub_err *pend;
	size_t npend, cappend;
	int fresh;            /* the next checkpoint empties the log first */
	unsigned drop_kinds;  /* ... and drops these kinds */
	uint64_t last_ck, run_t0, last_elapsed_t;
	uint64_t total;
	int stop;
};

/* Saves the position and the pending errors in the catalogue (and, with
 * clear_stop, clears a stop request). */
int scrub_checkpoint(struct scrub *sc, int clear_stop) FERRY_WUR;
/* The tree pass: every snapshot's and bookmark's tree walked, each
 * damage in the log given the files that use it (tree.c). */
int scrub_tree_pass(struct scrub *sc) FERRY_WUR;

#endif
