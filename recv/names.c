/* recv/names.c — where a received snapshot lands, for callers that say so
 * before the receive starts (recv -v). The rules are those recv_run
 * applies (recv.c's map_name, which the next refactoring of recv.c may
 * make call this). */
#include <stdio.h>
#include <string.h>

#include "recv.h"

int recv_dest_name(const char *target, unsigned flags, const char *pkg_top, const char *dataset,
		   const char *snapshot, char *out, size_t n)
{
	char tgt[STORE_NAME_MAX + 1];
	const char *tail = "", *rel = "", *snap = snapshot;
	int k;
	if (snprintf(tgt, sizeof tgt, "%s", target) >= (int)sizeof tgt)
		return ferry_err(FERR_NAME, "target name '%s' is too long", target);
	char *at = strchr(tgt, '@');
	if (at) {
		*at = 0;
		if (!pkg_top)
			snap = at + 1;
	}
	if (pkg_top) {
		size_t tl = strlen(pkg_top);
		if (strncmp(dataset, pkg_top, tl) || (dataset[tl] && dataset[tl] != '/'))
			return ferry_err(FERR_CORRUPT, "'%s' is not below the package top '%s'",
					 dataset, pkg_top);
		rel = dataset + tl;
		const char *sl = (flags & RECV_DISCARD)    ? strchr(pkg_top, '/')
				 : (flags & RECV_LASTNAME) ? strrchr(pkg_top, '/')
							   : NULL;
		if ((flags & RECV_LASTNAME) && !sl)
			k = snprintf(out, n, "%s/%s%s@%s", tgt, pkg_top, rel, snap);
		else
			k = snprintf(out, n, "%s%s%s@%s", tgt, sl ? sl : "", rel, snap);
	} else if (flags & RECV_DISCARD) {
		const char *sl = strchr(dataset, '/');
		tail = sl ? sl : "";
		k = snprintf(out, n, "%s%s@%s", tgt, tail, snap);
	} else if (flags & RECV_LASTNAME) {
		const char *sl = strrchr(dataset, '/');
		k = snprintf(out, n, "%s/%s@%s", tgt, sl ? sl + 1 : dataset, snap);
	} else {
		k = snprintf(out, n, "%s@%s", tgt, snap);
	}
	if (k < 0 || (size_t)k >= n)
		return ferry_err(FERR_NAME, "the received name for '%s' is too long", dataset);
	return store_name_check(out, STORE_NAME_SNAPSHOT);
}
