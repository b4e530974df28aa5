/* lib/misc.c — human-readable sizes and the clock. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib.h"

/* Exponent of 1024 for a unit letter, or -1. */
static int unit_shift(char c)
{
	switch (c) {
	case 'k': case 'K': return 10;
	case 'm': case 'M': return 20;
	case 'g': case 'G': return 30;
	case 't': case 'T': return 40;
	case 'p': case 'P': return 50;
	case 'e': case 'E': return 60;
	default: return -1;
	}
}

int parse_size(const char *s, uint64_t *out)
{
	const char *p = s;
	uint64_t ival = 0, frac = 0, fscale = 1, v;
	int shift = 0, fdigits = 0;

	/* Digits are required before any '.', and nothing may precede them:
	 * no sign, no space, so "-1" can never wrap to a huge size. */
	if (*p < '0' || *p > '9')
		goto inval;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (u64_mul(ival, 10, &ival) < 0 || u64_add(ival, (uint64_t)(*p - '0'), &ival) < 0)
			goto overflow;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			goto inval;
		/* 19 digits keep frac and fscale below 2^64. Later digits
		 * together add under 0.12 byte even at the E scale, so they
		 * are checked but ignored. */
		for (; *p >= '0' && *p <= '9'; p++) {
			if (fdigits < 19) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				fscale *= 10;
				fdigits++;
			}
		}
	}
	if (*p && unit_shift(*p) >= 0) {
		shift = unit_shift(*p);
		p++;
		if (*p == 'i' && (p[1] == 'B' || p[1] == 'b'))
			p++;
	}
	if (*p == 'B' || *p == 'b')
		p++;
	if (*p)
		goto inval;

	if (shift > 0 && ival > (UINT64_MAX >> shift))
		goto overflow;
	v = ival << shift;
	if (frac) {
		/* Fixed point in 128 bits, no float rounding; a fraction of a
		 * byte rounds down, as a size can only be whole bytes. */
		unsigned __int128 f = (unsigned __int128)frac << shift;

		if (u64_add(v, (uint64_t)(f / fscale), &v) < 0)
			goto overflow;
	}
	*out = v;
	return 0;
inval:
	return ferry_err(FERR_INVAL, "invalid size '%s'", s);
overflow:
	return ferry_err(FERR_OVERFLOW, "size '%s' is too large", s);
}

/* Mirrors OpenZFS zfs_nicenum so sizes read the same as in zfs(8). */
void format_nicenum(uint64_t v, char *buf, size_t n, int bytes_suffix)
{
	uint64_t num = v;
	int index = 0;

	while (num >= 1024) {
		num /= 1024;
		index++;
	}
	if (index == 0) {
		snprintf(buf, n, "%llu%s", (unsigned long long)num, bytes_suffix ? "B" : "");
	} else if ((v & ((1ULL << (10 * index)) - 1)) == 0) {
		snprintf(buf, n, "%llu%c", (unsigned long long)num, " KMGTPE"[index]);
	} else {
		/* Trying precisions in turn is simpler than predicting which
		 * one fits five characters near a power of ten (10239 is
		 * "10.0K", not "9.99K"). */
		for (int i = 2; i >= 0; i--) {
			double d = (double)v / (double)(1ULL << (10 * index));

			if (snprintf(buf, n, "%.*f%c", i, d, " KMGTPE"[index]) <= 5)
				break;
		}
	}
}

uint64_t ferry_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
