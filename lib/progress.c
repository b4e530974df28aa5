/* lib/progress.c — the text of a progress line: done of total (bytes and
 * files), rate, percentage and time left, from figures the caller feeds
 * in. I/O-free: the CLI decides whether and where to draw it. The rate
 * is an average over the last few seconds, so a stall shows as one. */
#include <stdio.h>
#include <string.h>

#include "lib.h"

void progress_init(struct progress *p, const char *what, uint64_t total_bytes, uint64_t now_ns)
{
	memset(p, 0, sizeof *p);
	snprintf(p->what, sizeof p->what, "%s", what);
	p->total = total_bytes;
	p->t0 = p->win_t = now_ns;
}

void progress_update(struct progress *p, uint64_t bytes, uint64_t files, uint64_t now_ns)
{
	p->bytes = bytes;
	p->files = files;
	/* a window of about five seconds: the old half is dropped */
	if (now_ns - p->win_t >= 5000000000ull) {
		p->win_bytes0 = p->win_bytes1;
		p->win_t0 = p->win_t;
		p->win_bytes1 = bytes;
		p->win_t = now_ns;
	}
	p->now = now_ns;
}

/* "1h02m", "3m05s", "42s"; ">99h" beyond */
#define ETA_MAX (100.0 * 3600)

static void fmt_secs(double secs, char *buf, size_t n)
{
	/* compared as a double: a huge total over a slow rate would not fit
	 * the integer it is converted to */
	if (!(secs < ETA_MAX)) {
		snprintf(buf, n, ">99h");
		return;
	}
	uint64_t s = (uint64_t)secs;
	if (s >= 3600)
		snprintf(buf, n, "%uh%02um", (unsigned)(s / 3600), (unsigned)(s / 60 % 60));
	else if (s >= 60)
		snprintf(buf, n, "%um%02us", (unsigned)(s / 60), (unsigned)(s % 60));
	else
		snprintf(buf, n, "%us", (unsigned)s);
}

size_t progress_format(const struct progress *p, char *buf, size_t n)
{
	char done[16], total[16], rate[16], eta[24], files[40] = "";
	uint64_t since = p->win_t0 && p->now > p->win_t0 ? p->win_t0 : p->t0;
	uint64_t base = since == p->t0 ? 0 : p->win_bytes0;
	double secs = p->now > since ? (double)(p->now - since) / 1e9 : 0;
	double bps = secs > 0.2 && p->bytes >= base ? (double)(p->bytes - base) / secs : 0;
	format_nicenum(p->bytes, done, sizeof done, 1);
	format_nicenum((uint64_t)bps, rate, sizeof rate, 1);
	if (p->files)
		snprintf(files, sizeof files, ", %llu files", (unsigned long long)p->files);
	if (!p->total) {
		int k = snprintf(buf, n, "%s: %s%s, %s/s", p->what, done, files, rate);
		return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
	}
	/* an estimate passed: what is done is the best total known */
	format_nicenum(p->bytes > p->total ? p->bytes : p->total, total, sizeof total, 1);
	unsigned pct = p->bytes >= p->total ? 100 : (unsigned)(p->bytes * 100.0 / (double)p->total);
	if (pct > 100)
		pct = 100;
	if (bps > 0 && p->bytes < p->total)
		fmt_secs((double)(p->total - p->bytes) / bps, eta, sizeof eta);
	else
		snprintf(eta, sizeof eta, p->bytes >= p->total ? "0s" : "--");
	int k = snprintf(buf, n, "%s: %s of %s (%u%%)%s, %s/s, ETA %s", p->what, done, total, pct,
			 files, rate, eta);
	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}
