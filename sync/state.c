/* sync/state.c — what a sync needs to know of its destination, collected
 * from a pool, and its text form for the far side of an ssh sync
 * (`ferry sync-state`), version 1, tab-separated lines:
 *
 *   ferry-sync-state	1
 *   target	NAME	EXISTS(0|1)	COMPRESSION
 *   dataset	NAME	filesystem|volume	COMPRESSION	TOKEN|-
 *   snapshot	NAME@SNAP	GUID	CREATETXG	CREATION_NS
 *   end
 *
 * target's COMPRESSION is the dataset's effective one or, when it is
 * missing, its nearest existing ancestor's (what a new dataset there would
 * inherit). Snapshots follow their dataset, oldest first. "end" says the
 * text is whole. Names hold no tab (store_name_check). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ST_TEXT_MAX ((size_t)256 << 20)
#define ST_SNAPS_MAX 10000000u

void st_tree_release(struct st_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->ds[i].snaps);
	free(t->ds);
	memset(t, 0, sizeof *t);
}

const struct st_ds *st_tree_find(const struct st_tree *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->ds[i].name, name))
			return &t->ds[i];
	return NULL;
}

static int codec_text(struct store_pool *p, const struct store_ds *ds, char *buf, size_t n)
{
	struct codec_spec c;
	int r = store_ds_compression(p, ds, &c);
	if (r < 0)
		return r;
	snprintf(buf, n, "%s", codec_name(c));
	return 0;
}

static int snap_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct st_ds *d = arg;
	int r = VEC_GROW(d->snaps, d->cap, d->n, 16, "listing the destination's snapshots");
	if (r < 0)
		return r;
	struct st_snap *x = &d->snaps[d->n++];
	snprintf(x->name, sizeof x->name, "%s", s->snapname);
	x->guid = s->guid;
	x->txg = s->createtxg;
	x->creation_ns = s->creation_ns;
	return 0;
}

static int ds_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct st_tree *t = arg;
	struct store_partial pt;
	int r;
	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return 0;
	if ((r = VEC_GROW(t->ds, t->cap, t->n, 8, "listing the destination")) < 0)
		return r;
	struct st_ds *d = &t->ds[t->n];
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", ds->name);
	d->type = ds->type;
	t->n++;
	if ((r = codec_text(p, ds, d->compression, sizeof d->compression)) < 0)
		return r;
	r = store_partial_get(p, ds->name, &pt);
	if (r == 0)
		snprintf(d->token, sizeof d->token, "%s", pt.token);
	else if (r != -FERR_NOENT)
		return r;
	ferry_err_clear();
	return store_snap_iter(p, ds, snap_cb, d);
}

int st_collect(struct store_pool *p, const char *target, int recursive, struct st_tree *out)
{
	struct st_tree t;
	struct store_ds ds;
	char anc[STORE_NAME_MAX + 1];
	int r;
	memset(&t, 0, sizeof t);
	snprintf(t.target, sizeof t.target, "%s", target);
	r = store_ds_lookup(p, target, &ds);
	if (r == 0) {
		t.exists = 1;
		if ((r = codec_text(p, &ds, t.compression, sizeof t.compression)) < 0 ||
		    (r = store_ds_walk(p, &ds, recursive ? -1 : 0, ds_cb, &t)) < 0)
			goto fail;
	} else if (r == -FERR_NOENT) {
		ferry_err_clear();
		/* a new dataset there inherits from its nearest existing ancestor */
		snprintf(anc, sizeof anc, "%s", target);
		for (;;) {
			char *slash = strrchr(anc, '/');
			if (!slash) {
				r = store_ds_lookup(p, anc, &ds); /* the pool's root: always there */
				break;
			}
			*slash = 0;
			r = store_ds_lookup(p, anc, &ds);
			if (r != -FERR_NOENT)
				break;
			ferry_err_clear();
		}
		if (r < 0 || (r = codec_text(p, &ds, t.compression, sizeof t.compression)) < 0)
			goto fail;
	} else {
		goto fail;
	}
	*out = t;
	return 0;
fail:
	st_tree_release(&t);
	return r;
}

int st_format(const struct st_tree *t, struct fbuf *out)
{
	int r;
	if ((r = fbuf_printf(out, "ferry-sync-state\t1\ntarget\t%s\t%d\t%s\n", t->target, t->exists,
			     t->compression)) < 0)
		return r;
	for (size_t i = 0; i < t->n; i++) {
		const struct st_ds *d = &t->ds[i];
		if ((r = fbuf_printf(out, "dataset\t%s\t%s\t%s\t%s\n", d->name,
				     store_ds_type_name(d->type), d->compression,
				     d->token[0] ? d->token : "-")) < 0)
			return r;
		for (size_t j = 0; j < d->n; j++)
			if ((r = fbuf_printf(out, "snapshot\t%s@%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n",
					     d->name, d->snaps[j].name, d->snaps[j].guid,
					     d->snaps[j].txg, d->snaps[j].creation_ns)) < 0)
				return r;
	}
	return fbuf_printf(out, "end\n");
}

int sync_state_write(const char *target, int recursive, struct fbuf *out)
{
	struct store_pool *p = NULL;
	struct st_tree t;
	int r;
	if ((r = store_name_check(target, STORE_NAME_DATASET)) < 0 ||
	    (r = store_pool_open_for(target, STORE_OPEN_RDONLY, &p)) < 0)
		return r;
	if ((r = store_read_begin(p)) == 0) {
		r = st_collect(p, target, recursive, &t);
		store_read_end(p);
	}
	store_pool_close(p);
	if (r < 0)
		return r;
	r = st_format(&t, out);
	st_tree_release(&t);
	return r;
}

/* ---- parsing what the far side said ---------------------------------------------------- */

/* Splits line (NUL-terminated, modified) at tabs into at most max fields. */
static size_t fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < max + 1; p++)
		if (*p == '\t') {
			*p = 0;
			if (n == max)
				return max + 1; /* too many */
			f[n++] = p + 1;
		}
	return n;
}

static int num(const char *s, uint64_t *v)
{
	char *end;
	if (!*s || *s < '0' || *s > '9')
		return -1;
	*v = strtoull(s, &end, 10);
	return *end ? -1 : 0;
}

static int bad(unsigned line, const char *why)
{
	return ferry_err(FERR_CORRUPT, "the destination's state is malformed (line %u: %s)", line,
			 why);
}

int st_parse(const char *text, size_t len, struct st_tree *out)
{
	struct st_tree t;
	char *buf = NULL, *f[6];
	unsigned line = 0;
	int r = 0, ended = 0, have_target = 0;
	size_t nsnaps = 0;
	memset(&t, 0, sizeof t);
	if (len > ST_TEXT_MAX)
		return ferry_err(FERR_LIMIT, "the destination's state is too large");
	if (!(buf = malloc(len + 1)))
		return ferry_err(FERR_NOMEM, "reading the destination's state");
	memcpy(buf, text, len);
	buf[len] = 0;
	char *p = buf;
	while (*p) {
		char *nl = strchr(p, '\n');
		if (!nl) {
			r = bad(line + 1, "no end of line");
			goto out;
		}
		*nl = 0;
		line++;
		if (ended) {
			r = bad(line, "text after the end");
			goto out;
		}
		size_t n = fields(p, f, 5);
		if (line == 1) {
			if (n != 2 || strcmp(f[0], "ferry-sync-state")) {
				r = bad(line, "not a sync state");
				goto out;
			}
			if (strcmp(f[1], "1")) {
				r = ferry_err(FERR_VERSION, "the destination's ferry speaks sync state "
					      "version %s, this one 1", f[1]);
				goto out;
			}
		} else if (!strcmp(f[0], "target") && n == 4 && !have_target) {
			if (strlen(f[1]) >= sizeof t.target || strlen(f[3]) >= sizeof t.compression ||
			    (strcmp(f[2], "0") && strcmp(f[2], "1"))) {
				r = bad(line, "bad target");
				goto out;
			}
			snprintf(t.target, sizeof t.target, "%s", f[1]);
			t.exists = f[2][0] == '1';
			snprintf(t.compression, sizeof t.compression, "%s", f[3]);
			have_target = 1;
		} else if (!strcmp(f[0], "dataset") && n == 5 && have_target) {
			if (store_name_check(f[1], STORE_NAME_DATASET) < 0 ||
			    strlen(f[3]) >= sizeof t.ds[0].compression ||
			    strlen(f[4]) >= sizeof t.ds[0].token ||
			    (strcmp(f[2], "filesystem") && strcmp(f[2], "volume"))) {
				ferry_err_clear();
				r = bad(line, "bad dataset");
				goto out;
			}
			if ((r = VEC_GROW(t.ds, t.cap, t.n, 8, "reading the destination's state")) < 0)
				goto out;
			struct st_ds *d = &t.ds[t.n++];
			memset(d, 0, sizeof *d);
			snprintf(d->name, sizeof d->name, "%s", f[1]);
			d->type = !strcmp(f[2], "volume") ? STORE_DS_VOLUME : STORE_DS_FILESYSTEM;
			snprintf(d->compression, sizeof d->compression, "%s", f[3]);
			if (strcmp(f[4], "-"))
				snprintf(d->token, sizeof d->token, "%s", f[4]);
		} else if (!strcmp(f[0], "snapshot") && n == 5 && t.n) {
			struct st_ds *d = &t.ds[t.n - 1];
			char *at = strchr(f[1], '@');
			struct st_snap x;
			memset(&x, 0, sizeof x);
			if (!at || store_name_check(f[1], STORE_NAME_SNAPSHOT) < 0 ||
			    (size_t)(at - f[1]) != strlen(d->name) || strncmp(f[1], d->name, strlen(d->name)) ||
			    num(f[2], &x.guid) < 0 || num(f[3], &x.txg) < 0 ||
			    num(f[4], &x.creation_ns) < 0) {
				ferry_err_clear();
				r = bad(line, "bad snapshot");
				goto out;
			}
			if (++nsnaps > ST_SNAPS_MAX) {
				r = ferry_err(FERR_LIMIT, "the destination lists too many snapshots");
				goto out;
			}
			snprintf(x.name, sizeof x.name, "%s", at + 1);
			if ((r = VEC_GROW(d->snaps, d->cap, d->n, 16, "reading the destination's state")) < 0)
				goto out;
			d->snaps[d->n++] = x;
		} else if (!strcmp(f[0], "end") && n == 1 && have_target) {
			ended = 1;
		} else {
			r = bad(line, "unexpected line");
			goto out;
		}
		p = nl + 1;
	}
	if (!ended) {
		r = ferry_err(FERR_TRUNCATED, "the destination's state ended early (line %u)", line);
		goto out;
	}
	*out = t;
	memset(&t, 0, sizeof t);
out:
	st_tree_release(&t);
	free(buf);
	return r;
}
