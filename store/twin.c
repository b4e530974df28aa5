/* store/twin.c — the other tree's directory along a walk's path: while
 * node_tree_walk walks one snapshot tree, the directory of another tree
 * (a base, or the new tree) at the same path, so a walker can tell an
 * entry that is the same in both and leave it alone (issue 14: what an
 * incremental did not change costs nothing). One decoded directory per
 * open level, as node_tree_walk itself holds. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct node_twin {
	node_read_fn rd;
	void *arg;
	struct node_dir *d;  /* by level */
	unsigned char *have; /* d[level] holds the other tree's directory */
	size_t cap;
	int next_type;       /* the directory the next open loads (0: none) */
	uint8_t next[FERRY_HASH_LEN];
};

int node_twin_new(node_read_fn rd, void *arg, int type, const uint8_t hash[FERRY_HASH_LEN],
		  struct node_twin **out)
{
	struct node_twin *t = calloc(1, sizeof *t);
	*out = NULL;
	if (!t)
		return ferry_err(FERR_NOMEM, "walking a tree");
	t->rd = rd;
	t->arg = arg;
	t->next_type = type;
	if (type)
		memcpy(t->next, hash, FERRY_HASH_LEN);
	*out = t;
	return 0;
}

const struct node_entry *node_twin_find(const struct node_twin *t, unsigned level,
					const struct node_entry *e)
{
	if (!t || level >= t->cap || !t->have[level])
		return NULL;
	return node_dir_find(&t->d[level], e->name, e->name_len);
}

int node_twin_same(const struct node_entry *e, const struct node_entry *o)
{
	return o && o->ftype == e->ftype && o->child_type == e->child_type &&
	       (!e->child_type || !memcmp(o->child, e->child, FERRY_HASH_LEN));
}

void node_twin_next(struct node_twin *t, const struct node_entry *o)
{
	if (!t)
		return;
	t->next_type = o && o->ftype == NODE_F_DIR ? o->child_type : 0;
	if (t->next_type)
		memcpy(t->next, o->child, FERRY_HASH_LEN);
}

int node_twin_open(struct node_twin *t, unsigned level)
{
	int r;
	if (!t)
		return 0;
	if (level >= t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		while (cap <= level)
			cap *= 2;
		struct node_dir *d = realloc(t->d, cap * sizeof *d);
		if (!d)
			return ferry_err(FERR_NOMEM, "walking a tree");
		t->d = d;
		unsigned char *h = realloc(t->have, cap);
		if (!h)
			return ferry_err(FERR_NOMEM, "walking a tree");
		t->have = h;
		memset(t->d + t->cap, 0, (cap - t->cap) * sizeof *d);
		memset(t->have + t->cap, 0, cap - t->cap);
		t->cap = cap;
	}
	if (t->have[level]) { /* not closed (a walk that stopped): reuse */
		node_dir_release(&t->d[level]);
		t->have[level] = 0;
	}
	int type = t->next_type;
	if (!type)
		return 0;
	t->next_type = 0;
	if ((r = node_dir_load(t->rd, t->arg, type, t->next, &t->d[level])) < 0)
		return r;
	t->have[level] = 1;
	return 0;
}

const struct node_dir *node_twin_dir(const struct node_twin *t, unsigned level)
{
	return t && level < t->cap && t->have[level] ? &t->d[level] : NULL;
}

void node_twin_close(struct node_twin *t, unsigned level)
{
	if (t && level < t->cap && t->have[level]) {
		node_dir_release(&t->d[level]);
		t->have[level] = 0;
	}
}

void node_twin_free(struct node_twin *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		if (t->have[i])
			node_dir_release(&t->d[i]);
	free(t->d);
	free(t->have);
	free(t);
}
