/* send/send.c — snapshots → a ferry stream.
 *
 * The walk: the target's tree against the base's, entry by entry (by name
 * in directories, by position in blocklist indexes). Equal subtrees are
 * skipped by hash. A first pass over the changed part collects the base's
 * nodes that the second pass may meet again elsewhere (a renamed file
 * keeps its blocklist node, a moved directory its directory node), so
 * those are not sent; blocks the base snapshot references are sent as
 * WRITE_BYREF. A bookmark base has no block references left in the
 * catalogue (its snapshot may be gone), so its tree is walked once first
 * to gather the blocks it names: the receiver, holding the snapshot, has
 * them. Every object goes out once per substream (a TEMP-table set) and in
 * post-order: children before the node that names them, the root last.
 * The order is deterministic, so a resume position is a count of body
 * records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int prop_cb(const struct store_propval *v, void *arg)
{
	struct plist *l = arg;
	if (v->source != STORE_SRC_LOCAL && v->source != STORE_SRC_RECEIVED)
		return 0;
	if (l->n >= STREAM_PROPS_MAX)
		return l->err = ferry_err(FERR_LIMIT, "more than %d properties", STREAM_PROPS_MAX);
	if (strlen(v->exact) > STREAM_PROP_VALUE_MAX || strlen(v->name) > STREAM_PROP_NAME_MAX)
		return 0;
	int grown = VEC_GROW(l->v, l->cap, l->n, 16, "collecting properties");
	if (grown < 0)
		return l->err = grown;
	char *name = strdup(v->name), *value = strdup(v->exact);
	if (!name || !value) {
		free(name);
		free(value);
		return l->err = ferry_err(FERR_NOMEM, "collecting properties");
	}
	l->v[l->n].name = name;
	l->v[l->n].value = value;
	l->v[l->n].source = v->source == STORE_SRC_LOCAL ? STREAM_SRC_LOCAL : STREAM_SRC_RECEIVED;
	l->n++;
	return 0;
}

static int prop_sort(const void *a, const void *b)
{
	return strcmp(((const struct stream_prop *)a)->name, ((const struct stream_prop *)b)->name);
}

void send_plist_release(struct plist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->v[i].name);
		free((char *)l->v[i].value);
	}
	free(l->v);
	memset(l, 0, sizeof *l);
}

int send_plist_load(struct store_pool *p, const struct store_ds *ds, struct plist *l)
{
	int r;
	memset(l, 0, sizeof *l);
	r = store_prop_all(p, ds, prop_cb, l);
	if (l->err < 0)
		r = l->err;
	if (r < 0) {
		send_plist_release(l);
		return r;
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, prop_sort);
	/* a name can come once only (local wins over received in prop_all) */
	size_t w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (w && !strcmp(l->v[w - 1].name, l->v[i].name)) {
			free((char *)l->v[i].name);
			free((char *)l->v[i].value);
			continue;
		}
		l->v[w++] = l->v[i];
	}
	l->n = w;
	return 0;
}

static void split_ds(const char *full, char *ds, size_t n)
{
	const char *at = strchr(full, '@');
	size_t len = at ? (size_t)(at - full) : strlen(full);
	if (len >= n)
		len = n - 1;
	memcpy(ds, full, len);
	ds[len] = 0;
}

/* Sends snapshot to (against base, or full when base is NULL) as one
 * BEGIN..END; props (may be NULL) go into the BEGIN. base_mark: base is a
 * bookmark (id 0, snapname "#mark"), whose blocks are found by its tree. */
int send_substream(struct snd *s, const struct store_snap *to, const struct store_snap *base,
		    int base_mark, const struct plist *props, uint64_t resume)
{
	struct stream_begin b;
	char ds[STORE_NAME_MAX + 1];
	int r;
	uint64_t bytes0 = s->st.bytes;
	split_ds(to->name, ds, sizeof ds);
	memset(&b, 0, sizeof b);
	b.flags = s->flags | (resume ? STREAM_F_RESUMED : 0);
	b.ds_type = to->ds_type == STORE_DS_VOLUME ? STREAM_DS_VOLUME : STREAM_DS_FILESYSTEM;
	b.root_type = NODE_EXT;
	memcpy(b.root_hash, to->root, FERRY_HASH_LEN);
	b.to_guid = to->guid;
	b.from_guid = base ? base->guid : 0;
	b.creation_ns = to->creation_ns;
	b.creation_txg = to->createtxg;
	b.resume_pos = resume;
	b.dataset = ds;
	b.snapshot = to->snapname;
	if (props && (s->flags & STREAM_F_PROPS) && !(s->flags & STREAM_F_REPLICATE)) {
		b.props = props->v;
		b.nprops = props->n;
	}
	s->cur = to->name;
	s->cur_root = to->root;
	if (s->o->substream && s->enc)
		s->o->substream(s->o->arg, base ? "incremental" : "full",
				base ? base->snapname : "", to->name, 0);
	if (s->enc && (r = stream_encode_begin(s->enc, &b, &s->out)) < 0)
		return r;
	if ((r = send_counted(s, stream_size_begin(&b))) < 0)
		return r;
	if (s->st.records == 1 && (r = send_emit_hint(s)) < 0) /* a single stream's */
		return r;
	if ((r = store_hset_new(s->p, 1, &s->sent)) < 0)
		return r;
	s->seq = 0;
	s->skip = resume;
	/* a snapshot base: its blocks go as WRITE_BYREF (a bookmark's are
	 * found by its tree, below) */
	if (base && !base_mark &&
	    (r = store_snap_blocks_new(s->p, base->id, &s->base_snap_blocks)) < 0)
		goto out;
	if (base && base_mark) {
		if ((r = store_hset_new(s->p, 1, &s->base_blocks)) < 0 ||
		    (r = send_mark_blocks(s, base->root)) < 0)
			goto out;
	}
	if (base) {
		if ((r = store_hset_new(s->p, 1, &s->base)) < 0)
			goto out;
		s->collect = 1;
		r = send_walk_root(s, to->root, base->root);
		s->collect = 0;
		if (r < 0)
			goto out;
	}
	if ((r = send_walk_root(s, to->root, base ? base->root : NULL)) < 0)
		goto out;
	if (s->seq < s->skip) {
		r = ferry_err(FERR_INVAL, "resume position %llu is past the end of the stream (%llu)",
			      (unsigned long long)s->skip, (unsigned long long)s->seq);
		goto out;
	}
	if ((r = send_blocks_drain(s)) < 0 || (s->enc && (r = stream_encode_end(s->enc, &s->out)) < 0))
		goto out;
	if ((r = send_counted(s, stream_size_end())) < 0)
		goto out;
	s->st.substreams++;
	if (s->o->substream && !s->enc)
		s->o->substream(s->o->arg, base ? "incremental" : "full",
				base ? base->snapname : "", to->name, s->st.bytes - bytes0);
out:
	store_hset_free(s->sent);
	store_hset_free(s->base);
	store_hset_free(s->base_blocks);
	store_snap_blocks_free(s->base_snap_blocks);
	s->sent = s->base = s->base_blocks = NULL;
	s->base_snap_blocks = NULL;
	return r;
}

/* A bookmark as an incremental base: id 0 (no block references), snapname
 * "#mark" (as -v prints it). */
static void mark_to_base(const struct store_bookmark *b, struct store_snap *out)
{
	memset(out, 0, sizeof *out);
	out->ds_id = b->ds_id;
	snprintf(out->name, sizeof out->name, "%s", b->name);
	snprintf(out->snapname, sizeof out->snapname, "#%s", b->markname);
	out->guid = b->guid;
	out->createtxg = b->createtxg;
	out->creation = b->creation;
	out->creation_ns = b->creation_ns;
	memcpy(out->root, b->root, FERRY_HASH_LEN);
	out->ds_type = b->ds_type;
}

/* The base named by -i: "@snap", "snap", "ds@snap", "#mark" or "ds#mark";
 * *mark is 1 for a bookmark. */
static int lookup_base(struct store_pool *p, const char *dsname, const char *from,
		       struct store_snap *out, int *mark)
{
	char full[2 * STORE_NAME_MAX + 2];
	*mark = 0;
	if (strchr(from, '#')) {
		struct store_bookmark b;
		int r;
		if (from[0] == '#')
			snprintf(full, sizeof full, "%s%s", dsname, from);
		else
			snprintf(full, sizeof full, "%s", from);
		if ((r = store_bookmark_lookup(p, full, &b)) < 0)
			return r;
		mark_to_base(&b, out);
		*mark = 1;
		return 0;
	}
	if (strchr(from, '@') && from[0] != '@')
		snprintf(full, sizeof full, "%s", from);
	else
		snprintf(full, sizeof full, "%s@%s", dsname, send_snap_part(from));
	return store_snap_lookup(p, full, out);
}

struct mark_find {
	uint64_t guid;
	struct store_snap *out;
	int found;
};

static int mark_find_cb(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct mark_find *f = arg;
	if (b->guid != f->guid)
		return 0;
	mark_to_base(b, f->out);
	f->found = 1;
	return 1;
}

/* A resumed incremental's base: the snapshot of guid, or a bookmark of it. */
static int token_base(struct store_pool *p, const struct store_ds *ds, uint64_t guid,
		      struct store_snap *base, int *mark)
{
	struct slist l;
	int r, found = 0;
	if ((r = send_slist_load(p, ds, &l)) < 0)
		return r;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].guid == guid) {
			*base = l.v[i];
			found = 1;
		}
	free(l.v);
	*mark = 0;
	if (found)
		return 0;
	struct mark_find mf = {guid, base, 0};
	if ((r = store_bookmark_iter(p, ds, mark_find_cb, &mf)) < 0)
		return r;
	if (!mf.found)
		return ferry_err(FERR_NOENT, "the token's base snapshot (guid %llu) is gone",
				 (unsigned long long)guid);
	*mark = 1;
	return 0;
}

/* The base -i names for to: a snapshot or bookmark of its dataset, older. */
static int named_base(struct store_pool *p, const char *dsname, const char *from,
		      const struct store_snap *to, struct store_snap *base, int *mark)
{
	int r;
	if ((r = lookup_base(p, dsname, from, base, mark)) < 0)
		return r;
	if (base->ds_id != to->ds_id)
		return ferry_err(FERR_INVAL, "'%s' is not a %s of '%s'", base->name,
				 *mark ? "bookmark" : "snapshot", dsname);
	if (base->createtxg >= to->createtxg)
		return ferry_err(FERR_INVAL, "'%s' is not earlier than '%s'", base->name, to->name);
	return 0;
}

/* One substream: snapshot to of ds, full or against the base that -i or
 * the token (tok, or NULL) names, resumed after resume records. */
static int send_single(struct snd *s, const struct store_ds *ds, const char *dsname,
		       const struct store_snap *to, const struct stream_token *tok,
		       uint64_t resume)
{
	struct store_snap base;
	struct plist props;
	int r, base_mark = 0;
	const struct store_snap *bp = NULL;
	memset(&props, 0, sizeof props);
	if (tok && tok->from_guid) {
		if ((r = token_base(s->p, ds, tok->from_guid, &base, &base_mark)) < 0)
			return r;
		bp = &base;
	} else if (s->o->from) {
		if ((r = named_base(s->p, dsname, s->o->from, to, &base, &base_mark)) < 0)
			return r;
		bp = &base;
	}
	if (tok && to->guid != tok->to_guid)
		return ferry_err(FERR_NOENT, "'%s' is not the snapshot the token names", to->name);
	if ((s->flags & STREAM_F_PROPS) && (r = send_plist_load(s->p, ds, &props)) < 0)
		return r;
	r = send_substream(s, to, bp, base_mark, &props, resume);
	send_plist_release(&props);
	return r;
}

/* A package (-R, -I) of ds's tree, or of ds, up to snapshot to_snap. */
static int send_pkg(struct snd *s, const struct store_ds *ds, const char *to_snap,
		    unsigned flags)
{
	const char *from = s->o->from;
	if ((flags & SEND_INTERMEDIATE) && !from)
		return ferry_err(FERR_INVAL, "-I needs a base snapshot");
	if (from && strchr(from, '#'))
		/* a package names its base snapshot and lists the sender's
		 * snapshots; a bookmark is neither */
		return ferry_err(FERR_UNSUPPORTED, "-I and -R need a snapshot as base, not a "
				 "bookmark (use -i %s)", from);
	s->flags |= STREAM_F_REPLICATE | STREAM_F_PROPS;
	return send_package(s, ds, to_snap);
}

/* What the stream is of: the snapshot named, or the one the token names
 * (in full), with the token's flags instead of o's. */
static int send_target(const struct send_opts *o, const char **snap, char *full, size_t n,
		       struct stream_token *tok, unsigned *flags)
{
	int r;
	*flags = o->flags;
	if (!o->token)
		return 0;
	if ((r = stream_token_decode(o->token, tok)) < 0)
		return r;
	snprintf(full, n, "%s@%s", tok->dataset, tok->snapshot);
	*snap = full;
	*flags &= ~(unsigned)(SEND_COMPRESSED | SEND_PROPS | SEND_REPLICATE | SEND_INTERMEDIATE);
	if (tok->flags & STREAM_F_COMPRESSED)
		*flags |= SEND_COMPRESSED;
	if (tok->flags & STREAM_F_PROPS)
		*flags |= SEND_PROPS;
	return 0;
}

/* zfs send -t after a rename: the token names the snapshot as it was
 * called when the stream began; when that name is gone, the snapshot of
 * the token's guid under its new name (renames keep guids), so the
 * resumed stream is of the same snapshot. full is rewritten then. */
static int token_follow(struct store_pool *p, const struct stream_token *tok, char *full, size_t n)
{
	struct store_snap s;
	int r = store_snap_lookup(p, full, &s);
	if (r != -FERR_NOENT)
		return r < 0 ? r : 0;
	if (store_snap_find_guid(p, tok->to_guid, &s) < 0)
		return ferry_err(FERR_NOENT, "the token's snapshot '%s' (guid %llu) is not in pool "
				 "'%s' under that name or any other", full,
				 (unsigned long long)tok->to_guid, store_pool_name(p));
	snprintf(full, n, "%s", s.name);
	return 0;
}

static void snd_release(struct snd *s)
{
	store_hset_free(s->sent);
	store_hset_free(s->base);
	store_hset_free(s->base_blocks);
	store_snap_blocks_free(s->base_snap_blocks);
	pipeline_free(s->pl);
	stream_encoder_free(s->enc);
	store_reader_free(s->rd);
	fbuf_release(&s->out);
	fbuf_release(&s->node);
	free(s->lbuf);
}

int send_run(struct store_pool *p, const char *snap, const struct send_opts *o,
	     struct stream_sink *out, struct send_stats *st)
{
	struct snd s;
	struct store_snap to;
	struct store_ds ds;
	struct stream_token tok;
	char dsname[STORE_NAME_MAX + 1], full[2 * STORE_NAME_MAX + 2];
	unsigned flags;
	int r;
	memset(&s, 0, sizeof s);
	s.p = p;
	s.o = o;
	s.sink = out;
	fbuf_init(&s.out, (size_t)64 << 20);
	fbuf_init(&s.node, NODE_MAX);
	if (!(s.lbuf = malloc(STREAM_BLOCK_MAX))) {
		r = ferry_err(FERR_NOMEM, "sending");
		goto out;
	}
	/* one read snapshot for the whole stream: a consistent view, and no
	 * per-query locking */
	if ((r = store_read_begin(p)) < 0 || (r = store_reader_new(p, &s.rd)) < 0)
		goto out;
	if (!(o->flags & SEND_DRYRUN) && (r = stream_encoder_new(&s.enc, 0)) < 0)
		goto out;
	if ((r = send_target(o, &snap, full, sizeof full, &tok, &flags)) < 0 ||
	    (o->token && (r = token_follow(p, &tok, full, sizeof full)) < 0))
		goto out;
	split_ds(snap, dsname, sizeof dsname);
	if (!strchr(snap, '@')) {
		r = ferry_err(FERR_NAME, "'%s' is not a snapshot", snap);
		goto out;
	}
	if ((r = store_ds_lookup(p, dsname, &ds)) < 0 || (r = store_snap_lookup(p, snap, &to)) < 0)
		goto out;
	if (flags & (SEND_COMPRESSED | SEND_RECOMPRESS))
		s.flags |= STREAM_F_COMPRESSED;
	if ((r = send_blocks_init(&s, flags)) < 0)
		goto out;
	if (flags & (SEND_PROPS | SEND_REPLICATE))
		s.flags |= STREAM_F_PROPS;
	if (flags & SEND_RECOMPRESS)
		s.prefer = o->codec;
	else if ((r = store_ds_compression(p, &ds, &s.prefer)) < 0)
		goto out;
	if (flags & (SEND_REPLICATE | SEND_INTERMEDIATE))
		r = send_pkg(&s, &ds, to.snapname, flags);
	else
		r = send_single(&s, &ds, dsname, &to, o->token ? &tok : NULL,
				o->token ? tok.resume_pos : 0);
	if (r < 0 || (r = send_flush(&s, 1)) < 0)
		goto out;
	if (st)
		*st = s.st;
out:
	snd_release(&s);
	store_read_end(p);
	return r;
}
