/* capture/archive_tree.c — the tree of an archive capture, assembled in
 * memory as members arrive in archive order: nodes found by (parent, name)
 * in a hash table, the last path's components remembered so a member in
 * the directory of the one before costs a memcmp, member names normalized
 * (hostile input: absolute names made relative, "." dropped, ".."
 * refused), and the directory nodes built bottom-up at the end,
 * iteratively (trees of any depth cost heap, not stack). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t key_hash(const struct anode *parent, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ ((uint64_t)(uintptr_t)parent * 0x9E3779B97F4A7C15ull);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

int arch_put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	struct actx *c = arg;
	return store_writer_put_node(c->w, type, data, len, hash);
}

/* The child name (n bytes) of parent, or NULL. */
static struct anode *kid_find(struct actx *c, const struct anode *parent, const char *name,
			      size_t n)
{
	if (!c->tabsize)
		return NULL;
	for (struct anode *x = c->tab[key_hash(parent, name, n) & (c->tabsize - 1)]; x;
	     x = x->hnext)
		if (x->parent == parent && !strncmp(x->name, name, n) && !x->name[n])
			return x;
	return NULL;
}

static int tab_insert(struct actx *c, struct anode *n)
{
	if ((c->count + 1) * 2 > c->tabsize) {
		size_t ns = c->tabsize ? c->tabsize * 2 : 1024;
		struct anode **nt = calloc(ns, sizeof *nt);
		if (!nt)
			return ferry_err(FERR_NOMEM, "capturing an archive");
		for (size_t i = 0; i < c->tabsize; i++)
			for (struct anode *x = c->tab[i], *nx; x; x = nx) {
				nx = x->hnext;
				size_t h = key_hash(x->parent, x->name, strlen(x->name)) & (ns - 1);
				x->hnext = nt[h];
				nt[h] = x;
			}
		free(c->tab);
		c->tab = nt;
		c->tabsize = ns;
	}
	size_t h = key_hash(n->parent, n->name, strlen(n->name)) & (c->tabsize - 1);
	n->hnext = c->tab[h];
	c->tab[h] = n;
	c->count++;
	return 0;
}

static int add_kid(struct anode *parent, struct anode *k)
{
	int r;
	if ((r = VEC_GROW(parent->kids, parent->capkids, parent->nkids, 8, "capturing an archive")) < 0)
		return r;
	parent->kids[parent->nkids++] = k;
	return 0;
}

/* Remembers that the component of the last path ending at end is n. */
static int chain_add(struct actx *c, struct anode *n, size_t end)
{
	int r;
	if ((r = VEC_GROW(c->chain, c->capchain, c->nchain, 64, "capturing an archive")) < 0 ||
	    (r = VEC_GROW(c->chain_end, c->capchain_end, c->nchain, 64, "capturing an archive")) < 0)
		return r;
	c->chain[c->nchain] = n;
	c->chain_end[c->nchain++] = end;
	return 0;
}

/* Finds the node for path (normalized: no empty, "." or ".." component),
 * or with create makes it and its missing parents, as directories with
 * default attributes. Without create, *out is NULL when it is missing.
 * -FERR_CORRUPT when a component is not a directory. */
int arch_get_node(struct actx *c, const char *path, int create, struct anode **out)
{
	size_t plen = strlen(path), same = 0, k = 0;
	int r;
	/* the components path shares with the last one are known */
	while (same < plen && same < c->last_len && path[same] == c->last[same])
		same++;
	for (size_t lo = 0, hi = c->nchain; lo < hi;) {
		size_t mid = (lo + hi) / 2, e = c->chain_end[mid];
		if (e < same || (e == same && (path[e] == '/' || !path[e]))) {
			k = mid + 1;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	c->nchain = k;
	c->last_len = k ? c->chain_end[k - 1] : 0;
	if (plen + 1 > c->last_cap) {
		char *nl = realloc(c->last, plen + 1);
		if (!nl)
			return ferry_err(FERR_NOMEM, "capturing an archive");
		c->last = nl;
		c->last_cap = plen + 1;
	}
	struct anode *cur = k ? c->chain[k - 1] : &c->root;
	const char *s = path + c->last_len;
	if (*s == '/')
		s++;
	while (*s) {
		size_t len = strcspn(s, "/");
		if (cur->e.ftype != NODE_F_DIR)
			return ferry_err(FERR_CORRUPT, "archive has '%.200s' under a non-directory", path);
		struct anode *n = kid_find(c, cur, s, len);
		if (!n) {
			if (!create) {
				*out = NULL;
				return 0;
			}
			if (!(n = calloc(1, sizeof *n)) || !(n->name = strndup(s, len))) {
				free(n);
				return ferry_err(FERR_NOMEM, "capturing an archive");
			}
			n->parent = cur;
			n->e.ftype = NODE_F_DIR;
			n->e.mode = 0755;
			if ((r = tab_insert(c, n)) < 0) {
				free(n->name);
				free(n);
				return r;
			}
			/* in the table now: freed with it */
			if ((r = add_kid(cur, n)) < 0)
				return r;
		}
		size_t end = (size_t)(s - path) + len;
		if ((r = chain_add(c, n, end)) < 0)
			return r;
		memcpy(c->last + c->last_len, path + c->last_len, end - c->last_len);
		c->last_len = end;
		cur = n;
		s += len;
		if (*s == '/')
			s++;
	}
	*out = cur;
	return 0;
}

/* Normalizes a member name into out (which holds at least strlen(in) + 1
 * bytes) and gives its number of components in *levels; 0 ok, 1 to skip
 * (unsafe or overlong). */
int arch_normalize(const char *in, char *out, size_t *levels)
{
	size_t o = 0, k = 0;
	const char *s = in;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		size_t len = strcspn(s, "/");
		if (len == 1 && s[0] == '.') {
			s += 1;
			continue;
		}
		if (len == 2 && s[0] == '.' && s[1] == '.')
			return 1;
		if (len > NODE_NAME_MAX)
			return 1;
		if (o)
			out[o++] = '/';
		memcpy(out + o, s, len);
		o += len;
		s += len;
		k++;
	}
	out[o] = 0;
	*levels = k;
	return 0;
}

static int kid_cmp(const void *a, const void *b)
{
	return strcmp((*(struct anode *const *)a)->name, (*(struct anode *const *)b)->name);
}

/* The node of directory d, whose subdirectories' nodes are built. */
static int dir_node(struct actx *c, struct anode *d)
{
	struct node_dir_builder b;
	int r = 0, t;
	node_dir_builder_init(&b, arch_put_node, c);
	for (size_t i = 0; i < d->nkids; i++) {
		struct anode *k = d->kids[i];
		k->e.name = (const uint8_t *)k->name;
		k->e.name_len = strlen(k->name);
		if ((r = node_dir_builder_add(&b, &k->e)) < 0)
			goto out;
	}
	r = node_dir_builder_finish(&b, &t, d->e.child);
	d->e.child_type = (uint8_t)t;
out:
	node_dir_builder_release(&b);
	return r;
}

/* Builds the directory nodes bottom-up: a depth-first walk with a stack of
 * (directory, next child), children before their parent. */
int arch_build_tree(struct actx *c)
{
	struct bframe {
		struct anode *d;
		size_t i;
	} *st = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	if ((r = VEC_GROW(st, cap, n, 64, "capturing an archive")) < 0)
		return r;
	st[n++] = (struct bframe){&c->root, 0};
	if (c->root.nkids)
		qsort(c->root.kids, c->root.nkids, sizeof *c->root.kids, kid_cmp);
	while (n) {
		struct bframe *f = &st[n - 1];
		if (f->i < f->d->nkids) {
			struct anode *k = f->d->kids[f->i++];
			if (k->e.ftype != NODE_F_DIR)
				continue;
			if ((r = VEC_GROW(st, cap, n, 64, "capturing an archive")) < 0)
				break;
			if (k->nkids)
				qsort(k->kids, k->nkids, sizeof *k->kids, kid_cmp);
			st[n++] = (struct bframe){k, 0};
			continue;
		}
		if ((r = dir_node(c, f->d)) < 0)
			break;
		n--;
	}
	free(st);
	return r;
}

void arch_free_tree(struct actx *c)
{
	for (size_t i = 0; i < c->tabsize; i++)
		for (struct anode *x = c->tab[i], *nx; x; x = nx) {
			nx = x->hnext;
			free(x->name);
			free(x->target);
			free(x->xa);
			free(x->xabuf);
			free(x->kids);
			free(x);
		}
	free(c->tab);
	free(c->root.kids);
	free(c->root.xa);
	free(c->root.xabuf);
}
