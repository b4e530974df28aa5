/* send/estimate.c — the size a progress line divides by, without a pass
 * over the data: a full stream is about the snapshot's recorded figures
 * (referenced as stored, logicalreferenced as logical blocks), an
 * incremental about what the base lacks, counted by a dry run of the
 * plain stream, which walks the changed nodes only and reads no block
 * (its WRITEs are counted at their logical size: a compressed stream is
 * smaller, and the line clamps). */
#include <string.h>

#include "internal.h"

static int count_none(struct stream_sink *k, const void *buf, size_t n)
{
	(void)k;
	(void)buf;
	(void)n;
	return 0;
}

int send_estimate(struct store_pool *p, const char *snap, const struct send_opts *o,
		  uint64_t *bytes)
{
	struct store_snap to;
	int r;
	if (o->token || (o->flags & SEND_REPLICATE)) {
		*bytes = 0;
		return 0;
	}
	if (!o->from) {
		if ((r = store_snap_lookup(p, snap, &to)) < 0)
			return r;
		*bytes = (o->flags & (SEND_COMPRESSED | SEND_RECOMPRESS)) ? to.referenced
									    : to.logicalreferenced;
		return 0;
	}
	struct send_opts dry;
	struct send_stats st;
	struct stream_sink none;
	memset(&dry, 0, sizeof dry);
	memset(&st, 0, sizeof st);
	memset(&none, 0, sizeof none);
	none.write = count_none;
	dry.flags = (o->flags & (SEND_PROPS | SEND_INTERMEDIATE)) | SEND_DRYRUN;
	dry.from = o->from;
	if ((r = send_run(p, snap, &dry, &none, &st)) < 0)
		return r;
	*bytes = st.bytes;
	return 0;
}
