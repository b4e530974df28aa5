/* sync/sync.c — ferry sync: for each source dataset, the newest snapshot
 * it shares with its destination (by guid; a bookmark of the source
 * counts), then everything since in as few streams as possible (-I), a
 * partial receive resumed first (or, when its source snapshot is gone,
 * discarded), and the source's hold and bookmark moved to the new base
 * once the destination has it. One lock per (source dataset, destination)
 * keeps two runs of the same pair apart. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stream/stream.h"
#include "internal.h"

/* A backup's retention is its own: never received from the source. */
static const char *const keep_props[] = {
	"ferry:keep-last", "ferry:keep-hourly", "ferry:keep-daily", "ferry:keep-weekly",
	"ferry:keep-monthly", "ferry:keep-yearly", "ferry:keep-within", "ferry:prune-prefix",
};
#define NKEEP_PROPS (sizeof keep_props / sizeof keep_props[0])

void sync_hold_tag(const char *dest, char *tag, size_t n)
{
	char hex[FERRY_HASH_HEX];
	uint8_t h[FERRY_HASH_LEN];
	if (strlen(SYNC_TAG_PREFIX) + strlen(dest) <= STORE_HOLD_TAG_MAX) {
		snprintf(tag, n, "%s%s", SYNC_TAG_PREFIX, dest);
		return;
	}
	/* too long for a tag: its start and a hash of all of it */
	hash_blake2b(h, dest, strlen(dest));
	hash_to_hex(h, hex);
	snprintf(tag, n, "%s%.*s..%.16s", SYNC_TAG_PREFIX,
		 (int)(STORE_HOLD_TAG_MAX - strlen(SYNC_TAG_PREFIX) - 18), dest, hex);
}

void sync_mark_name(const char *ds, const char *dest, char *mark, size_t n)
{
	char hex[FERRY_HASH_HEX], clean[SYNC_DEST_MAX];
	uint8_t h[FERRY_HASH_LEN];
	size_t i;
	/* a name part (zfs's characters) that says where, and a hash that
	 * keeps two destinations apart whatever they have in common */
	for (i = 0; dest[i] && i + 1 < sizeof clean; i++) {
		char c = dest[i];
		clean[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
				   c == '-' || c == '.' ? c : '_';
	}
	clean[i] = 0;
	hash_blake2b(h, dest, strlen(dest));
	hash_to_hex(h, hex);
	/* ds#ferry-sync_CLEAN_HASH8 within STORE_NAME_MAX */
	long room = (long)STORE_NAME_MAX - (long)strlen(ds) - 1 - (long)strlen(SYNC_MARK_PREFIX) - 9;
	if (room < 0)
		room = 0;
	snprintf(mark, n, "%s%.*s_%.8s", SYNC_MARK_PREFIX, (int)room, clean, hex);
}

/* ---- the source side ---------------------------------------------------------------------- */

struct slist {
	struct store_snap *v;
	size_t n, cap;
};
struct blist {
	struct store_bookmark *v;
	size_t n, cap;
};

static int slist_cb(struct store_pool *p, const struct store_snap *s, void *arg)
{
	struct slist *l = arg;
	int r = VEC_GROW(l->v, l->cap, l->n, 16, "listing snapshots");
	if (r == 0)
		l->v[l->n++] = *s;
	return r;
}

static int blist_cb(struct store_pool *p, const struct store_bookmark *b, void *arg)
{
	struct blist *l = arg;
	int r = VEC_GROW(l->v, l->cap, l->n, 8, "listing bookmarks");
	if (r == 0)
		l->v[l->n++] = *b;
	return r;
}

struct tag_find {
	const char *tag;
	int found;
};

static int tag_cb(struct store_pool *p, const struct store_hold *h, void *arg)
{
	struct tag_find *f = arg;
	if (!strcmp(h->tag, f->tag))
		f->found = 1;
	return 0;
}

static int has_hold(struct store_pool *p, const struct store_snap *s, const char *tag)
{
	struct tag_find f = {tag, 0};
	int r = store_hold_iter(p, s, tag_cb, &f);
	return r < 0 ? r : f.found;
}

/* Moves the source's hold (tag) and bookmark (mark) to base, releasing
 * the hold elsewhere, in one transaction: at no point is neither there. */
static int hold_move(struct store_pool *p, const struct store_ds *ds, const struct store_snap *base,
		     const char *dest)
{
	char tag[STORE_HOLD_TAG_MAX + 1], mark[STORE_NAME_MAX + 1];
	char bname[2 * STORE_NAME_MAX + 2];
	struct slist l = {0};
	struct store_bookmark b;
	int r;
	sync_hold_tag(dest, tag, sizeof tag);
	sync_mark_name(ds->name, dest, mark, sizeof mark);
	snprintf(bname, sizeof bname, "%s#%s", ds->name, mark);
	if ((r = store_tx_begin(p)) < 0)
		return r;
	if ((r = store_snap_iter(p, ds, slist_cb, &l)) < 0)
		goto fail;
	int have = 0;
	for (size_t i = 0; i < l.n; i++) {
		if ((r = has_hold(p, &l.v[i], tag)) < 0)
			goto fail;
		if (!r)
			continue;
		if (l.v[i].id == base->id) {
			have = 1;
			continue;
		}
		/* may destroy it, when destroy -d waited for this hold */
		if ((r = store_hold_release(p, &l.v[i], 1, tag)) < 0)
			goto fail;
	}
	if (!have && (r = store_hold_add(p, base, 1, tag)) < 0)
		goto fail;
	r = store_bookmark_lookup(p, bname, &b);
	if (r == 0 && b.guid != base->guid) {
		if ((r = store_bookmark_destroy(p, &b)) < 0)
			goto fail;
		r = -FERR_NOENT;
	}
	if (r == -FERR_NOENT) {
		ferry_err_clear();
		if ((r = store_bookmark_create(p, base->name, bname)) < 0)
			goto fail;
	} else if (r < 0) {
		goto fail;
	}
	free(l.v);
	return store_tx_commit(p);
fail:
	free(l.v);
	store_tx_rollback(p);
	return r;
}

/* ---- one dataset ------------------------------------------------------------------------------ */

struct run {
	const struct sync_opts *o;
	struct sync_dest d;
	struct store_pool *sp;
	struct dst *dst;
	struct st_tree tree;          /* the destination at the start of the run */
	const char **excl;
	size_t nexcl;
	const char *srctop;
};

struct one {
	struct run *run;
	const struct store_ds *ds;
	char target[STORE_NAME_MAX + 1];
	char canon[SYNC_DEST_MAX];
	struct slist S;
	struct blist B;
	struct st_tree fresh;         /* a refreshed state of target, when fetched */
	const struct st_ds *dd;       /* target's state, or NULL when it does not exist */
	char codec[32];               /* the destination's effective compression */
	struct sync_result *res;
};

static void note(struct one *w, const char *fmt, ...) FERRY_PRINTF(2, 3);
static void note(struct one *w, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (!w->run->o->note)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	w->run->o->note(w->run->o->arg, w->ds->name, buf);
}

/* Target's effective compression: its own, or what a new dataset there
 * inherits (the nearest ancestor the state knows). */
static void dest_codec(struct one *w, const struct st_tree *t)
{
	char name[STORE_NAME_MAX + 1];
	snprintf(name, sizeof name, "%s", w->target);
	for (;;) {
		const struct st_ds *d = st_tree_find(t, name);
		if (d) {
			snprintf(w->codec, sizeof w->codec, "%s", d->compression);
			return;
		}
		char *slash = strrchr(name, '/');
		if (!slash)
			break;
		*slash = 0;
	}
	snprintf(w->codec, sizeof w->codec, "%s", t->compression);
}

static int refresh(struct one *w)
{
	int r;
	st_tree_release(&w->fresh);
	if ((r = dst_state(w->run->dst, w->target, 0, &w->fresh)) < 0) {
		w->dd = NULL;
		return r;
	}
	w->dd = st_tree_find(&w->fresh, w->target);
	dest_codec(w, &w->fresh);
	return 0;
}

static int fail(struct one *w, int r, const char *fmt, ...) FERRY_PRINTF(3, 4);
static int fail(struct one *w, int r, const char *fmt, ...)
{
	char pre[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	w->res->status = r;
	snprintf(w->res->error, sizeof w->res->error, "%s%s%s", pre, *pre ? ": " : "",
		 ferry_errmsg(r));
	return r;
}

static int count_sink(struct stream_sink *s, const void *p, size_t n)
{
	return 0;
}

/* send_opts.progress: the dataset's bytes this run, for the caller's line. */
static void xfer_progress(void *arg, const struct send_progress *pr)
{
	struct one *w = arg;
	w->run->o->progress(w->run->o->arg, w->res->source, w->res->bytes + pr->bytes);
}

/* One transfer: send (from → to, or the token) into a receive of target.
 * kind is for the note and the error ("send of X"). */
static int transfer(struct one *w, const struct store_snap *to, const char *from, int intermediate,
		    const char *token, int force)
{
	struct run *u = w->run;
	const struct sync_opts *o = u->o;
	struct send_opts so;
	struct send_stats sst;
	struct recv_stats rst;
	struct stream_sink *sink = NULL;
	struct dst_recv *rv = NULL;
	char serr[1024] = "", rerr[1024] = "";
	int rs, rr;
	memset(&so, 0, sizeof so);
	memset(&sst, 0, sizeof sst);
	memset(&rst, 0, sizeof rst);
	if (o->compress == SYNC_COMPRESS_STORED) {
		so.flags |= SEND_COMPRESSED;
	} else {
		so.flags |= SEND_RECOMPRESS;
		so.codec = o->codec;
		if (o->compress == SYNC_COMPRESS_AUTO) {
			const char *c = w->codec;
			for (size_t i = 0; i < o->nset; i++)
				if (!strcmp(o->set[i].name, "compression"))
					c = o->set[i].value;
			if (codec_parse(c, &so.codec) < 0)
				return fail(w, -FERR_PROP, "the destination's compression '%s'", c);
		}
	}
	if (!token)
		so.flags |= SEND_PROPS;
	if (intermediate)
		so.flags |= SEND_INTERMEDIATE;
	so.from = from;
	so.token = token;
	if (o->progress && !(o->flags & SYNC_DRYRUN)) {
		so.progress = xfer_progress;
		so.arg = w;
		if (o->expect) {
			/* only when someone watches: an incremental's estimate
			 * walks what changed */
			uint64_t e = 0;
			if (send_estimate(u->sp, token ? NULL : to->name, &so, &e) < 0) {
				ferry_err_clear();
				e = 0;
			}
			o->expect(o->arg, w->res->source, e ? w->res->bytes + e : 0);
		}
	}
	uint64_t t0 = ferry_now_ns();
	if (o->flags & SYNC_DRYRUN) {
		struct stream_sink null = {count_sink, 0, 0, NULL};
		so.flags |= SEND_DRYRUN;
		rs = send_run(u->sp, token ? NULL : to->name, &so, &null, &sst);
		if (rs < 0)
			return fail(w, rs, "send of %s", token ? "the resumed stream" : to->name);
		w->res->bytes += sst.bytes;
		w->res->snapshots += intermediate ? 0 : 1;
		return 0;
	}
	unsigned rflags = RECV_RESUMABLE | (force ? RECV_FORCE : 0);
	if ((rr = dst_recv_begin(u->dst, w->target, rflags, o->set, o->nset, u->excl, u->nexcl, &rv,
				 &sink)) < 0)
		return fail(w, rr, "receive into %s", w->canon);
	rs = send_run(u->sp, token ? NULL : to->name, &so, sink, &sst);
	if (rs < 0)
		snprintf(serr, sizeof serr, "%s", ferry_errmsg(rs));
	rr = dst_recv_end(rv, rs, &rst, rerr, sizeof rerr);
	w->res->ns += ferry_now_ns() - t0;
	w->res->bytes += sst.bytes;
	w->res->snapshots += rst.snapshots;
	w->res->blocks_logical += rst.blocks_logical;
	w->res->blocks_kept += rst.blocks_kept;
	w->res->blocks_recompressed += rst.blocks_recompressed;
	w->res->blocks_present += rst.blocks_present;
	w->res->blocks_byref += rst.blocks_byref;
	if (rs >= 0 && rr >= 0)
		return 0;
	/* which stage failed first: a receive that stopped reading fails the
	 * send with a broken pipe; a send that stopped truncates the stream */
	const char *what = token ? "the resumed stream" : to->name;
	int recv_first = rr < 0 && (rs >= 0 || rr != -FERR_TRUNCATED);
	w->res->status = recv_first ? rr : rs;
	if (recv_first)
		snprintf(w->res->error, sizeof w->res->error, "receive into %s: %s", w->canon, rerr);
	else
		snprintf(w->res->error, sizeof w->res->error, "send of %s: %s", what, serr);
	return w->res->status;
}

static int find_guid_snap(const struct slist *S, uint64_t guid)
{
	for (size_t i = 0; i < S->n; i++)
		if (S->v[i].guid == guid)
			return (int)i;
	return -1;
}

static int find_guid_mark(const struct blist *B, uint64_t guid)
{
	for (size_t i = 0; i < B->n; i++)
		if (B->v[i].guid == guid)
			return (int)i;
	return -1;
}

/* The newest destination snapshot the source has (*si) or has a bookmark
 * of (*bi); *di its place on the destination. 0 when there is none. */
static int find_base(const struct one *w, int *si, int *bi, int *di)
{
	*si = *bi = *di = -1;
	if (!w->dd)
		return 0;
	for (size_t k = w->dd->n; k-- > 0;) {
		uint64_t g = w->dd->snaps[k].guid;
		if ((*si = find_guid_snap(&w->S, g)) >= 0 || (*bi = find_guid_mark(&w->B, g)) >= 0) {
			*di = (int)k;
			return 1;
		}
	}
	return 0;
}

/* A partial receive on the destination: resumed when it came from this
 * source and its snapshots are still here, else discarded. */
static int handle_token(struct one *w)
{
	struct stream_token t;
	const char *tok = w->dd->token;
	int stale = 0, r;
	const char *why = "";
	if (stream_token_decode(tok, &t) < 0) {
		ferry_err_clear();
		stale = 1;
		why = "its token is not one this ferry reads";
	} else if (strcmp(t.dataset, w->ds->name)) {
		stale = 1;
		why = "it came from another dataset";
	} else {
		int si = find_guid_snap(&w->S, t.to_guid);
		if (si < 0 || strcmp(w->S.v[si].snapname, t.snapshot)) {
			stale = 1;
			why = "its source snapshot is gone";
		} else if (t.from_guid && find_guid_snap(&w->S, t.from_guid) < 0 &&
			   find_guid_mark(&w->B, t.from_guid) < 0) {
			stale = 1;
			why = "its base is gone from the source";
		}
	}
	if (stale) {
		note(w, "discarding the partial receive into %s (%s)", w->canon, why);
		if (w->run->o->flags & SYNC_DRYRUN)
			return 0;
		if ((r = dst_abort(w->run->dst, w->target)) < 0)
			return fail(w, r, "discarding the stale partial receive into %s", w->canon);
		w->res->aborted = 1;
		if ((r = refresh(w)) < 0)
			return fail(w, r, "reading %s after discarding its partial receive", w->canon);
		return 0;
	}
	note(w, "resuming the partial receive of %s@%s into %s", t.dataset, t.snapshot, w->canon);
	if ((r = transfer(w, NULL, NULL, 0, tok, 0)) < 0)
		return r;
	w->res->resumed = 1;
	if (!t.from_guid)
		w->res->full = 1;
	if (w->run->o->flags & SYNC_DRYRUN)
		return 0;
	if ((r = refresh(w)) < 0)
		return fail(w, r, "reading %s after the resume", w->canon);
	return 0;
}

static void base_text(const struct one *w, int si, int bi, char *buf, size_t n)
{
	if (si >= 0)
		snprintf(buf, n, "@%s", w->S.v[si].snapname);
	else if (bi >= 0)
		snprintf(buf, n, "#%s", w->B.v[bi].markname);
	else
		buf[0] = 0;
}

/* send -R --to (SYNC_SEND): the index in S of the snapshot sent, -1 when
 * the dataset does not have it (then send -R leaves it out, unless it is
 * the top, whose snapshot the user named). */
static int send_upto(struct one *w, ssize_t *idx)
{
	const char *snap = w->run->o->snapshot;
	*idx = -1;
	for (size_t i = 0; i < w->S.n; i++)
		if (!strcmp(w->S.v[i].snapname, snap))
			*idx = (ssize_t)i;
	if (*idx < 0 && !strcmp(w->ds->name, w->run->srctop))
		return fail(w, ferry_err(FERR_NOENT, "snapshot '%s@%s' does not exist", w->ds->name,
					 snap), "%s", "");
	return 0;
}

static int sync_dataset(struct one *w)
{
	struct run *u = w->run;
	const struct sync_opts *o = u->o;
	int dry = (o->flags & SYNC_DRYRUN) != 0, sending = (o->flags & SYNC_SEND) != 0;
	int r, si, bi, di;
	ssize_t upto = -1;
	if ((r = store_snap_iter(u->sp, w->ds, slist_cb, &w->S)) < 0 ||
	    (r = store_bookmark_iter(u->sp, w->ds, blist_cb, &w->B)) < 0)
		return fail(w, r, "reading %s", w->ds->name);
	if (sending) {
		if ((r = send_upto(w, &upto)) < 0)
			return r;
		if (upto < 0) {
			w->res->nosnap = w->res->uptodate = 1;
			return 0;
		}
	}
	w->dd = st_tree_find(&u->tree, w->target);
	dest_codec(w, &u->tree);
	/* the line says where the destination was before this run */
	if (find_base(w, &si, &bi, &di))
		base_text(w, si, bi, w->res->base, sizeof w->res->base);
	if (w->dd && w->dd->token[0] && (r = handle_token(w)) < 0)
		return r;
	/* send -R: nothing after the snapshot named (a partial receive of a
	 * later one, resumed above, came from this source all the same) */
	if (sending)
		w->S.n = (size_t)upto + 1;
	if (w->S.n == 0) {
		w->res->nosnap = w->res->uptodate = 1;
		return 0;
	}
	const struct store_snap *last = &w->S.v[w->S.n - 1];
	int have_base = find_base(w, &si, &bi, &di);
	if (!w->res->base[0])
		base_text(w, si, bi, w->res->base, sizeof w->res->base);
	else if (w->res->resumed && !have_base)
		w->res->base[0] = 0;
	if (!have_base) {
		if (w->dd && w->dd->n && !(o->flags & SYNC_FORCE))
			return fail(w, ferry_err(FERR_EXISTS, "%s has snapshots (%s@%s) but none that "
						 "%s has%s", w->canon, w->target,
						 w->dd->snaps[w->dd->n - 1].name, w->ds->name,
						 sending ? "" : "; -F replaces them"), "%s", "");
		/* the oldest first, so the destination gets the whole history */
		const struct store_snap *first = (o->flags & SYNC_NO_INTERMEDIATE) ? last : &w->S.v[0];
		note(w, "full send of %s to %s", first->name, w->canon);
		/* a full stream into a dataset that exists needs -F (zfs's rule);
		 * with no snapshot there it replaces nothing */
		if ((r = transfer(w, first, NULL, 0, NULL, w->dd != NULL)) < 0)
			goto failed;
		w->res->full = 1;
		si = (int)(first - w->S.v);
		bi = -1;
	} else if (w->dd && (size_t)di + 1 < w->dd->n && si != (int)w->S.n - 1) {
		/* the destination went on without the source */
		if (!(o->flags & SYNC_FORCE)) {
			char b[STORE_NAME_MAX + 2];
			base_text(w, si, bi, b, sizeof b);
			return fail(w, ferry_err(FERR_EXISTS, "%s has %zu snapshot(s) after the common "
						 "base %s (%s@%s)%s", w->canon,
						 w->dd->n - (size_t)di - 1, b, w->target,
						 w->dd->snaps[w->dd->n - 1].name,
						 sending ? "" : "; -F rolls them back"), "%s", "");
		}
		/* one plain incremental with -F rolls the destination back; the
		 * rest goes as usual (a forced package would also destroy what
		 * the source has pruned) */
		size_t k = si >= 0 ? (size_t)si + 1 : 0;
		while (bi >= 0 && k < w->S.n && w->S.v[k].createtxg <= w->B.v[bi].createtxg)
			k++;
		if (k >= w->S.n)
			goto done;
		char from[STORE_NAME_MAX + 2];
		base_text(w, si, bi, from, sizeof from);
		note(w, "rolling %s back to %s, then %s", w->canon, from, w->S.v[k].name);
		if ((r = transfer(w, &w->S.v[k], from, 0, NULL, 1)) < 0)
			goto failed;
		si = (int)k;
		bi = -1;
	}
	while (si != (int)w->S.n - 1) {
		char from[STORE_NAME_MAX + 2];
		if (bi >= 0) {
			/* a bookmark is a base for -i only: to the first snapshot after it */
			size_t k = 0;
			while (k < w->S.n && w->S.v[k].createtxg <= w->B.v[bi].createtxg)
				k++;
			if (k >= w->S.n)
				break;
			snprintf(from, sizeof from, "#%s", w->B.v[bi].markname);
			note(w, "incremental from %s to %s", from, w->S.v[k].name);
			if ((r = transfer(w, &w->S.v[k], from, 0, NULL, 0)) < 0)
				goto failed;
			si = (int)k;
			bi = -1;
			continue;
		}
		int inter = !(o->flags & SYNC_NO_INTERMEDIATE) && (size_t)si + 2 < w->S.n;
		snprintf(from, sizeof from, "@%s", w->S.v[si].snapname);
		note(w, "incremental%s from %s to %s", inter ? " (-I)" : "", from, last->name);
		if ((r = transfer(w, last, from, inter, NULL, 0)) < 0)
			goto failed;
		if (dry && inter)
			w->res->snapshots += w->S.n - (size_t)si - 1;
		si = (int)w->S.n - 1;
	}
done:
	if (si < 0) {
		/* nothing newer than a bookmark base: in sync, but no snapshot to hold */
		w->res->uptodate = w->res->snapshots == 0;
		return 0;
	}
	snprintf(w->res->newest, sizeof w->res->newest, "@%s", w->S.v[si].snapname);
	if (w->res->snapshots == 0 && !w->res->resumed)
		w->res->uptodate = 1;
	if (dry || sending)
		return 0;
	if ((r = hold_move(u->sp, w->ds, &w->S.v[si], w->canon)) < 0)
		return fail(w, r, "holding %s for %s", w->S.v[si].name, w->canon);
	return 0;
failed:
	/* some snapshots of a package may have landed: hold the newest the
	 * destination now has, so the next run starts from there */
	if (!dry && !sending) {
		struct ferry_errsave es;
		ferry_err_save(&es);
		if (refresh(w) == 0 && find_base(w, &si, &bi, &di) && si >= 0) {
			snprintf(w->res->newest, sizeof w->res->newest, "@%s", w->S.v[si].snapname);
			if (hold_move(u->sp, w->ds, &w->S.v[si], w->canon) < 0) { /* the next run retries */ }
		}
		ferry_err_restore(&es);
	}
	return w->res->status;
}

/* ---- the run ----------------------------------------------------------------------------------- */

struct dslist {
	struct store_ds *v;
	size_t n, cap;
};

static int ds_cb(struct store_pool *p, const struct store_ds *ds, void *arg)
{
	struct dslist *l = arg;
	int r;
	if (ds->type != STORE_DS_FILESYSTEM && ds->type != STORE_DS_VOLUME)
		return 0;
	if ((r = VEC_GROW(l->v, l->cap, l->n, 8, "listing datasets")) == 0)
		l->v[l->n++] = *ds;
	return r;
}

int sync_run(const char *src, const char *dest, const struct sync_opts *o)
{
	struct run u;
	struct dslist dl = {0};
	struct sync_lock **locks = NULL;
	int r, failed = 0, ok = 0, dry = (o->flags & SYNC_DRYRUN) != 0;
	int sending = (o->flags & SYNC_SEND) != 0;
	const char *verb = sending ? "a send -R" : "a sync";
	memset(&u, 0, sizeof u);
	u.o = o;
	u.srctop = src;
	if ((r = sync_dest_parse(dest, &u.d)) < 0)
		return r;
	if (u.d.kind == SYNC_DEST_HTTP && o->nset)
		return ferry_err(FERR_UNSUPPORTED, "'%s': -o is not for an http(s):// destination "
				 "(the server's receive takes no properties to set)", dest);
	if ((r = store_name_check(src, STORE_NAME_DATASET)) < 0)
		return r;
	if (sending && (!o->snapshot || !o->snapshot[0]))
		return ferry_err(FERR_INVAL, "send -R: no snapshot named");
	if (u.d.kind == SYNC_DEST_LOCAL) {
		size_t n = strlen(src);
		/* with -r the tree would take its own copies along, run after run */
		if (!strcmp(u.d.dataset, src) ||
		    ((o->flags & SYNC_RECURSIVE) && !strncmp(u.d.dataset, src, n) && u.d.dataset[n] == '/'))
			return ferry_err(FERR_INVAL, "the destination '%s' is %sthe source '%s'",
					 u.d.dataset, strcmp(u.d.dataset, src) ? "inside the tree of " : "",
					 src);
	}
	if (!(u.excl = calloc(NKEEP_PROPS + o->nexclude, sizeof *u.excl)))
		return ferry_err(FERR_NOMEM, "syncing");
	/* send -R sends what the dataset has, as through a pipe */
	for (size_t i = 0; !sending && i < NKEEP_PROPS; i++)
		u.excl[u.nexcl++] = keep_props[i];
	for (size_t i = 0; i < o->nexclude; i++)
		u.excl[u.nexcl++] = o->exclude[i];
	if ((r = store_pool_open_for(src, dry || sending ? STORE_OPEN_RDONLY : 0, &u.sp)) < 0)
		goto out;
	{
		char what[STORE_NAME_MAX + 32];
		snprintf(what, sizeof what, "%s of %s", verb, src);
		store_pool_activity(u.sp, what);
	}
	struct store_ds top;
	if ((r = store_ds_lookup(u.sp, src, &top)) < 0 ||
	    (r = store_ds_walk(u.sp, &top, (o->flags & SYNC_RECURSIVE) ? -1 : 0, ds_cb, &dl)) < 0)
		goto out;
	/* every (dataset, destination) pair locked before anything is done:
	 * an overlapping run is told at once, not halfway */
	if (!dry) {
		if (!(locks = calloc(dl.n ? dl.n : 1, sizeof *locks))) {
			r = ferry_err(FERR_NOMEM, "syncing");
			goto out;
		}
		uint64_t t0 = ferry_now_ns();
		for (size_t i = 0; i < dl.n; i++) {
			char key[2 * SYNC_DEST_MAX], what[2 * SYNC_DEST_MAX];
			snprintf(key, sizeof key, "%s\n%s%s%s", dl.v[i].name, u.d.prefix, u.d.dataset,
				 dl.v[i].name + strlen(src));
			snprintf(what, sizeof what, "%s of %s to %s%s%s", verb, dl.v[i].name, u.d.prefix,
				 u.d.dataset, dl.v[i].name + strlen(src));
			if ((r = lock_take(key, what, o->wait, t0, &locks[i])) < 0)
				goto out;
		}
	}
	if ((r = dst_open(&u.d, o, dry, &u.dst)) < 0 ||
	    (r = dst_state(u.dst, u.d.dataset, (o->flags & SYNC_RECURSIVE) != 0, &u.tree)) < 0)
		goto out;
	for (size_t i = 0; i < dl.n; i++) {
		struct one w;
		struct sync_result res;
		memset(&w, 0, sizeof w);
		memset(&res, 0, sizeof res);
		w.run = &u;
		w.ds = &dl.v[i];
		w.res = &res;
		snprintf(w.target, sizeof w.target, "%s%s", u.d.dataset, dl.v[i].name + strlen(src));
		snprintf(w.canon, sizeof w.canon, "%s%s", u.d.prefix, w.target);
		snprintf(res.source, sizeof res.source, "%s", dl.v[i].name);
		snprintf(res.dest, sizeof res.dest, "%s", w.canon);
		if (strlen(w.target) > STORE_NAME_MAX) {
			fail(&w, ferry_err(FERR_NAME, "'%s' is too long", w.target), "%s", "");
		} else if (sync_dataset(&w) < 0 && res.status == 0) {
			res.status = -FERR_IO;
		}
		ferry_err_clear();
		if (res.status < 0)
			failed++;
		else
			ok++;
		if (o->done)
			o->done(o->arg, &res);
		st_tree_release(&w.fresh);
		free(w.S.v);
		free(w.B.v);
		if (sending && res.status < 0)
			break; /* as a package: what follows would land under what failed */
	}
	r = failed == 0 ? 0 : ok ? ferry_err(FERR_PARTIAL, "%d of %d datasets failed", failed,
					     failed + ok)
				 : ferry_err(FERR_IO, "%s", failed > 1 ? "every dataset failed"
									: "the dataset failed");
out:
	st_tree_release(&u.tree);
	dst_close(u.dst);
	for (size_t i = 0; locks && i < dl.n; i++)
		lock_release(locks[i]);
	free(locks);
	free(dl.v);
	store_pool_close(u.sp);
	free(u.excl);
	return r;
}
