/* lib/arith.c — checked size arithmetic for lengths that come from input,
 * and growable arrays built on it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

int sz_add(size_t a, size_t b, size_t *out)
{
	size_t v;

	if (__builtin_add_overflow(a, b, &v))
		return -FERR_OVERFLOW;
	*out = v;
	return 0;
}

int sz_mul(size_t a, size_t b, size_t *out)
{
	size_t v;

	if (__builtin_mul_overflow(a, b, &v))
		return -FERR_OVERFLOW;
	*out = v;
	return 0;
}

int u64_add(uint64_t a, uint64_t b, uint64_t *out)
{
	uint64_t v;

	if (__builtin_add_overflow(a, b, &v))
		return -FERR_OVERFLOW;
	*out = v;
	return 0;
}

int u64_mul(uint64_t a, uint64_t b, uint64_t *out)
{
	uint64_t v;

	if (__builtin_mul_overflow(a, b, &v))
		return -FERR_OVERFLOW;
	*out = v;
	return 0;
}

int vec_grow(void *arrp, size_t *cap, size_t n, size_t elem, size_t first, const char *what)
{
	void *arr, *na;
	size_t nc, bytes;
	if (n < *cap)
		return 0;
	if (*cap == 0)
		nc = first ? first : 1;
	else if (sz_mul(*cap, 2, &nc) < 0)
		return ferry_err(FERR_OVERFLOW, "%s: too many entries", what);
	if (nc <= n)
		nc = n + 1;
	if (sz_mul(nc, elem, &bytes) < 0)
		return ferry_err(FERR_OVERFLOW, "%s: too many entries", what);
	memcpy(&arr, arrp, sizeof arr);
	if (!(na = realloc(arr, bytes)))
		return ferry_err(FERR_NOMEM, "%s", what);
	memcpy(arrp, &na, sizeof na);
	*cap = nc;
	return 0;
}
