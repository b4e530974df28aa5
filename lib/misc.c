/* lib/misc.c — human-readable sizes and the clock. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Digits at s (exactly n of them) as a number; -1 if any is not a digit. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static int days_in_month(int y, int m)
{
	static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : d[m - 1];
}

int parse_time_utc(const char *s, uint64_t *ns)
{
	const char *p = s;
	int y, mo, d, h, mi, sec = 0;
	uint64_t frac = 0, scale = 1000000000u;
	if (strlen(s) < 16 || (y = digits(p, 4)) < 1970 || p[4] != '-' ||
	    (mo = digits(p + 5, 2)) < 1 || mo > 12 || p[7] != '-' ||
	    (d = digits(p + 8, 2)) < 1 || d > days_in_month(y, mo) ||
	    (p[10] != 'T' && p[10] != 't' && p[10] != ' ') ||
	    (h = digits(p + 11, 2)) < 0 || h > 23 || p[13] != ':' ||
	    (mi = digits(p + 14, 2)) < 0 || mi > 59)
		goto bad;
	p += 16;
	if (*p == ':') {
		if ((sec = digits(p + 1, 2)) < 0 || sec > 59)
			goto bad;
		p += 3;
		if (*p == '.' || *p == ',') {
			p++;
			if (*p < '0' || *p > '9')
				goto bad;
			/* nanoseconds: later digits are below the clock's unit */
			for (; *p >= '0' && *p <= '9'; p++)
				if (scale > 1) {
					scale /= 10;
					frac += (uint64_t)(*p - '0') * scale;
				}
		}
	}
	/* UTC only: the designator Z, an offset of zero, or none */
	if (!strcmp(p, "Z") || !strcmp(p, "z") || !strcmp(p, "+00:00") || !strcmp(p, "+0000") ||
	    !strcmp(p, "+00"))
		p += strlen(p);
	if (*p)
		goto bad;
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	time_t t = timegm(&tm);
	if (t < 0 || (uint64_t)t > UINT64_MAX / 1000000000u - 1)
		goto bad;
	*ns = (uint64_t)t * 1000000000u + frac;
	return 0;
bad:
	return ferry_err(FERR_INVAL, "'%s' is not an ISO 8601 UTC time such as "
			 "2024-01-31T23:00:00Z", s);
}

/* The clock. FERRY_NOW (an ISO 8601 UTC time) moves it: the process starts
 * at that time and the clock runs on from there at its normal pace, so
 * durations and rates stay true while every "now" (creation times, hold
 * times, --auto names, prune's buckets) is the simulated one. */
static pthread_once_t now_once = PTHREAD_ONCE_INIT;
static int now_fake;       /* FERRY_NOW is set and valid */
static int now_bad;        /* FERRY_NOW is set and invalid */
static uint64_t now_base;  /* FERRY_NOW in ns */
static uint64_t now_mono0; /* CLOCK_MONOTONIC when it was read */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void now_init(void)
{
	const char *e = getenv("FERRY_NOW");
	struct ferry_errsave es;
	if (!e || !*e)
		return;
	ferry_err_save(&es);
	if (parse_time_utc(e, &now_base) == 0) {
		now_fake = 1;
		now_mono0 = mono_ns();
	} else {
		now_bad = 1;
	}
	ferry_err_restore(&es);
}

int ferry_now_check(void)
{
	pthread_once(&now_once, now_init);
	if (now_bad) {
		uint64_t ns;
		int r = parse_time_utc(getenv("FERRY_NOW"), &ns);
		return ferry_err(FERR_INVAL, "FERRY_NOW: %s", ferry_errmsg(r));
	}
	return 0;
}

uint64_t ferry_now_ns(void)
{
	struct timespec ts;

	pthread_once(&now_once, now_init);
	if (now_fake)
		return now_base + (mono_ns() - now_mono0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
