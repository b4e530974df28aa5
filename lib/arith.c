/* lib/arith.c — checked size arithmetic for lengths that come from input. */
#include <stddef.h>
#include <stdint.h>

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
