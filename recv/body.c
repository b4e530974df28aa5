/* recv/body.c — the records between BEGIN and END: each NODE decoded with
 * the store's strict decoders and everything it names looked up (in this
 * stream so far or in the pool), each WRITE queued for the storage rule,
 * each WRITE_BYREF checked against the pool; duplicates refused. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void recv_key(uint8_t *key, char kind, const uint8_t *hash)
{
	key[0] = (uint8_t)kind;
	memcpy(key + 1, hash, FERRY_HASH_LEN);
}

int recv_hash_err(int code, const char *what, const uint8_t *hash)
{
	char hex[FERRY_HASH_HEX];
	hash_to_hex(hash, hex);
	return ferry_err(code, "%s %.16s", what, hex);
}

/* 1 with *type when node hash is in this stream, an earlier one (dry run)
 * or the pool; else 0. */
static int have_node(struct rcv *r, const uint8_t *hash, int *type)
{
	uint8_t key[KEY_LEN];
	int v = 0, rc;
	recv_key(key, 'N', hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, &v)) != 0 ||
	    (r->dry && (rc = store_hset_get(r->dry, key, sizeof key, &v)) != 0)) {
		if (rc > 0)
			*type = v & ~RECV_REACHED;
		return rc;
	}
	return store_pnodes_has_node(r->pn, hash, type);
}

int recv_have_block(struct rcv *r, const uint8_t *hash, uint32_t *lsize)
{
	uint8_t key[KEY_LEN];
	int v = 0, rc;
	recv_key(key, 'B', hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, &v)) != 0 ||
	    (r->dry && (rc = store_hset_get(r->dry, key, sizeof key, &v)) != 0)) {
		if (rc > 0)
			*lsize = (uint32_t)(v & ~RECV_REACHED);
		return rc;
	}
	return store_pnodes_has_block(r->pn, hash, lsize);
}

int recv_need_node(struct rcv *r, const uint8_t *hash, int type)
{
	int t = 0, rc = have_node(r, hash, &t);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return recv_hash_err(FERR_CORRUPT, "dangling reference to node", hash);
	if (t != type)
		return recv_hash_err(FERR_CORRUPT, "reference of the wrong type to node", hash);
	return 0;
}

static int need_block(struct rcv *r, const uint8_t *hash, uint64_t len)
{
	uint32_t ls = 0;
	int rc = recv_have_block(r, hash, &ls);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return recv_hash_err(FERR_CORRUPT, "dangling reference to block", hash);
	if (ls != len)
		return recv_hash_err(FERR_CORRUPT, "reference with the wrong size to block", hash);
	return 0;
}

/* Parses a directory index node (subtype byte first) and calls need_node
 * on each chunk. */
static int check_dir_index(struct rcv *r, const uint8_t *b, size_t len)
{
	int rc;
	if (len < 5 || b[0] != NODE_EXT_DIR_INDEX)
		return ferry_err(FERR_CORRUPT, "extension node of unknown kind");
	uint32_t nk = get_le32(b + 1);
	if (nk < 2 || nk > NODE_INDEX_MAX)
		return ferry_err(FERR_CORRUPT, "directory index has %u children", nk);
	size_t pos = 5;
	for (uint32_t i = 0; i < nk; i++) {
		if (len - pos < 6)
			return ferry_err(FERR_CORRUPT, "directory index is truncated");
		uint32_t cnt = get_le32(b + pos);
		size_t fl = get_le16(b + pos + 4);
		pos += 6;
		if (cnt == 0 || fl == 0 || fl > NODE_NAME_MAX || len - pos < fl + FERRY_HASH_LEN)
			return ferry_err(FERR_CORRUPT, "directory index child %u is invalid", i);
		const uint8_t *nm = b + pos;
		if (memchr(nm, '/', fl) || memchr(nm, 0, fl) || (fl == 1 && nm[0] == '.') ||
		    (fl == 2 && nm[0] == '.' && nm[1] == '.'))
			return ferry_err(FERR_CORRUPT, "directory index child %u has a bad name", i);
		pos += fl;
		if ((rc = recv_need_node(r, b + pos, NODE_DIR)) < 0)
			return rc;
		pos += FERRY_HASH_LEN;
	}
	if (pos != len)
		return ferry_err(FERR_CORRUPT, "directory index has trailing bytes");
	return 0;
}

/* Decodes a node strictly and checks that everything it names is here;
 * a directory's entries only when defer is 0 (an incremental into its
 * base: the END walk checks the entries that differ from the base's at
 * the same path, recv/verify.c, and the others name what the base has). */
static int check_node(struct rcv *r, const struct stream_node *nd, int is_root, int defer)
{
	struct node_dir d;
	struct node_extent *x = NULL;
	struct node_index_child *k = NULL;
	struct node_entry e;
	struct node_xattr *xa = NULL;
	size_t n = 0;
	int rc = 0, kind;
	memset(&d, 0, sizeof d);
	switch (nd->type) {
	case NODE_DIR:
		if ((rc = node_dir_decode(nd->data, nd->len, &d)) < 0)
			break;
		for (size_t i = 0; !defer && i < d.n && rc == 0; i++)
			if (d.ents[i].child_type)
				rc = recv_need_node(r, d.ents[i].child, d.ents[i].child_type);
		break;
	case NODE_BLOCKLIST:
		if ((rc = node_bl_decode(nd->data, nd->len, &x, &n)) < 0)
			break;
		for (size_t i = 0; i < n && rc == 0; i++)
			if (!x[i].hole)
				rc = need_block(r, x[i].hash, x[i].len);
		break;
	case NODE_BLOCKLIST_INDEX:
		if ((rc = node_bli_decode(nd->data, nd->len, &k, &n)) < 0)
			break;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = recv_need_node(r, k[i].hash, k[i].type);
		break;
	case NODE_EXT:
		if (nd->len && nd->data[0] == NODE_EXT_ROOT) {
			if (!is_root) {
				rc = ferry_err(FERR_CORRUPT, "a root node inside the tree");
				break;
			}
			if ((rc = node_root_decode(nd->data, nd->len, &kind, &e, &xa)) < 0)
				break;
			if (e.child_type)
				rc = recv_need_node(r, e.child, e.child_type);
			break;
		}
		rc = check_dir_index(r, nd->data, nd->len);
		break;
	default:
		rc = ferry_err(FERR_CORRUPT, "node of unknown type %u", nd->type);
	}
	node_dir_release(&d);
	free(x);
	free(k);
	free(xa);
	return rc;
}

static int body_node(struct rcv *r, struct sub *s, const struct stream_record *rec)
{
	uint8_t key[KEY_LEN], h[FERRY_HASH_LEN];
	int rc;
	recv_key(key, 'N', rec->node.hash);
	if ((rc = store_hset_get(r->objs, key, sizeof key, NULL)) != 0)
		return rc < 0 ? rc : recv_hash_err(FERR_CORRUPT, "duplicate node", rec->node.hash);
	int is_root = !memcmp(rec->node.hash, s->b->root_hash, FERRY_HASH_LEN) &&
		      rec->node.type == s->b->root_type;
	int defer = s->b->from_guid && s->have_base && !r->dryrun; /* as r->shallow will be */
	if ((rc = check_node(r, &rec->node, is_root, defer)) < 0 ||
	    (rc = store_writer_put_node(r->w, rec->node.type, rec->node.data, rec->node.len, h)) < 0 ||
	    (rc = store_hset_add(r->objs, key, sizeof key, rec->node.type)) < 0 ||
	    (r->dry && (rc = store_hset_add(r->dry, key, sizeof key, rec->node.type)) < 0))
		return rc;
	r->objs_n++;
	r->st.nodes++;
	r->last_seq = rec->seq;
	return 0;
}

static int body_block(struct rcv *r, struct sub *s, const struct stream_record *rec)
{
	const uint8_t *h = rec->type == STREAM_WRITE ? rec->write.hash : rec->byref.hash;
	uint32_t ls = rec->type == STREAM_WRITE ? rec->write.lsize : rec->byref.lsize;
	uint8_t key[KEY_LEN];
	int rc;
	recv_key(key, 'B', h);
	if ((rc = store_hset_get(r->objs, key, sizeof key, NULL)) != 0)
		return rc < 0 ? rc : recv_hash_err(FERR_CORRUPT, "duplicate block", h);
	if (rec->type == STREAM_WRITE_BYREF) {
		uint32_t have = 0;
		if ((rc = store_pnodes_has_block(r->pn, h, &have)) < 0)
			return rc;
		if (!rc && r->dry) {
			int v = 0;
			if ((rc = store_hset_get(r->dry, key, sizeof key, &v)) < 0)
				return rc;
			have = (uint32_t)v;
		}
		if (!rc)
			return recv_hash_err(FERR_CORRUPT, "WRITE_BYREF of a block the pool does not have:", h);
		if (have != ls)
			return recv_hash_err(FERR_CORRUPT, "WRITE_BYREF with the wrong size for block", h);
		r->st.blocks_byref++;
		if (!r->dryrun && (rc = store_writer_ref(r->w, h)) < 0)
			return rc;
	} else {
		r->st.pbytes_in += rec->write.psize;
		if (!r->dryrun && (rc = store_writer_has(r->w, h, s->c)) < 0)
			return rc;
		if (rc == 1) {
			r->st.blocks_present++;
			r->st.lbytes_present += ls;
			if ((rc = store_writer_ref(r->w, h)) < 0)
				return rc;
		} else {
			/* the sender tried exactly this dataset's codec on its raw
			 * blocks: trying again would cost the same and fail the same */
			int tried = rec->write.codec == STREAM_CODEC_OFF &&
				    r->tried.id != CODEC_OFF && codec_equal(r->tried, s->c);
			if ((rc = recv_block_submit(r, &rec->write, s->c, tried)) < 0)
				return rc;
		}
	}
	if ((rc = store_hset_add(r->objs, key, sizeof key, (int)ls)) < 0 ||
	    (r->dry && (rc = store_hset_add(r->dry, key, sizeof key, (int)ls)) < 0))
		return rc;
	r->objs_n++;
	r->last_seq = rec->seq;
	return 0;
}

void recv_hint(struct rcv *r, const struct stream_hint *h)
{
	/* the decoder checked the pair: a valid codec, or 0/0 */
	r->tried = (struct codec_spec){h->tried_codec, h->tried_level};
	if (h->size && r->o->estimate)
		r->o->estimate(r->o->arg, h->size);
}

/* The records between BEGIN and END. */
int recv_sub_body(struct rcv *r, struct sub *s)
{
	struct stream_record rec;
	int rc;
	for (;;) {
		/* before each record: the blocks stored so far against the
		 * quotas' room (a receive over a quota stops here, early) */
		if ((rc = recv_quota_check(r)) < 0)
			return rc;
		rc = stream_decoder_pull(r->dec, r->in, &rec);
		if (rc == 0)
			rc = ferry_err(FERR_TRUNCATED, "the stream ended before END");
		if (rc < 0)
			return rc;
		if (rec.type == STREAM_END)
			return 0;
		if (rec.type == STREAM_HINT)
			recv_hint(r, &rec.hint); /* record 1 of a single stream */
		else if (rec.type == STREAM_NODE)
			rc = body_node(r, s, &rec);
		else if (rec.type == STREAM_WRITE || rec.type == STREAM_WRITE_BYREF)
			rc = body_block(r, s, &rec);
		else
			rc = ferry_err(FERR_CORRUPT, "unexpected %s record in a snapshot's body",
				       stream_type_name(rec.type));
		if (rc < 0)
			return rc;
	}
}

int recv_sub_skip(struct rcv *r)
{
	struct stream_record rec;
	int rc;
	for (;;) {
		rc = stream_decoder_pull(r->dec, r->in, &rec);
		if (rc == 0)
			rc = ferry_err(FERR_TRUNCATED, "the stream ended before END");
		if (rc < 0)
			return rc;
		if (rec.type == STREAM_END)
			return 0;
		if (rec.type != STREAM_NODE && rec.type != STREAM_WRITE &&
		    rec.type != STREAM_WRITE_BYREF)
			return ferry_err(FERR_CORRUPT, "unexpected %s record in a snapshot's body",
					 stream_type_name(rec.type));
	}
}
