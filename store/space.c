/* store/space.c — space accounting and what a dataset owns besides its
 * catalogue row. Until snapshots hold data, every figure is zero. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int store_ds_space(struct store_pool *p, const struct store_ds *ds, struct store_space *out)
{
	memset(out, 0, sizeof *out);
	return 0;
}

int ds_destroy_contents(struct store_pool *p, const struct store_ds *ds)
{
	return 0;
}

void store_format_ratio(uint64_t logical, uint64_t physical, char *buf, size_t n, int exact)
{
	/* zfs: ratio = logical * 100 / physical, printed with two decimals. */
	uint64_t r100 = physical ? (uint64_t)((long double)logical * 100 / physical) : 100;
	snprintf(buf, n, "%llu.%02llu%s", (unsigned long long)(r100 / 100),
		 (unsigned long long)(r100 % 100), exact ? "" : "x");
}
