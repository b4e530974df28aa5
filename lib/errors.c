/* lib/errors.c — the one error vocabulary and the per-thread detail text. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* GNU strerror_r: returns the message instead of an int */
#endif
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

#define DETAIL_MAX 1024

static const char *const err_text[FERR__COUNT] = {
	[FERR_OK] = "success",
#define FERRY_X(name, text) [FERR_##name] = text,
	FERRY_ERRORS(FERRY_X)
#undef FERRY_X
};

/* Thread-local so worker threads never clobber each other's messages. */
static _Thread_local char detail[DETAIL_MAX];
static _Thread_local bool detail_set;

const char *ferry_strerror(int r)
{
	long c = r < 0 ? -(long)r : r; /* -(INT_MIN) would overflow an int */

	if (c >= FERR__COUNT || !err_text[c])
		return "unknown error";
	return err_text[c];
}

/* vsnprintf cuts at a byte boundary; back off so a truncated message never
 * ends in half a UTF-8 sequence that a terminal or JSON encoder would
 * choke on. */
static void trim_partial_utf8(char *s, size_t len)
{
	size_t i = len, cont = 0;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80 && cont < 3) {
		i--;
		cont++;
	}
	if (i == 0)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need;
	if (lead >= 0xF0)
		need = 3;
	else if (lead >= 0xE0)
		need = 2;
	else if (lead >= 0xC0)
		need = 1;
	else
		return;
	if (cont < need)
		s[i - 1] = '\0';
}

/* Formats into a scratch buffer first: callers routinely pass
 * ferry_errmsg(r) as an argument to wrap an inner error, and that string
 * lives in the very buffer being written. */
static void detail_store(const char *fmt, va_list ap)
{
	char tmp[DETAIL_MAX];
	int n;

	if (!fmt) {
		detail_set = false;
		return;
	}
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	if (n < 0) {
		detail_set = false;
		return;
	}
	if ((size_t)n >= sizeof(tmp))
		trim_partial_utf8(tmp, sizeof(tmp) - 1);
	memcpy(detail, tmp, sizeof(tmp));
	detail_set = true;
}

int ferry_verr(int code, const char *fmt, va_list ap)
{
	if (code < 0)
		code = code == INT_MIN ? FERR_IO : -code; /* callers may pass r as is */
	detail_store(fmt, ap);
	return -code;
}

int ferry_err(int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ferry_verr(code, fmt, ap);
	va_end(ap);
	return r;
}

int ferry_errno_code(int e)
{
	switch (e) {
	case 0:
		return FERR_IO; /* a failure with errno unset is still a failure */
	case ENOENT:
		return FERR_NOENT;
	case EEXIST:
		return FERR_EXISTS;
	case ENOSPC:
	case EDQUOT:
		return FERR_NOSPC;
	case EACCES:
	case EPERM:
		return FERR_PERM;
	case ENOMEM:
		return FERR_NOMEM;
	case ENOTEMPTY:
		return FERR_NOTEMPTY;
	case EBUSY:
		return FERR_BUSY;
	case EINVAL:
		return FERR_INVAL;
	default:
		return FERR_IO;
	}
}

int ferry_err_errno(int e, const char *fmt, ...)
{
	char what[DETAIL_MAX], ebuf[256];
	const char *etext;
	va_list ap;

	va_start(ap, fmt);
	if (vsnprintf(what, sizeof(what), fmt, ap) < 0)
		what[0] = '\0';
	va_end(ap);
	/* strerror() may share a static buffer between threads. */
	etext = strerror_r(e, ebuf, sizeof(ebuf));
	return ferry_err(ferry_errno_code(e), "%s: %s", what, etext);
}

const char *ferry_errmsg(int r)
{
	return detail_set ? detail : ferry_strerror(r);
}

const char *ferry_err_detail(void)
{
	return detail_set ? detail : NULL;
}

void ferry_err_clear(void)
{
	detail_set = false;
	detail[0] = '\0';
}

void ferry_bug(const char *file, int line, const char *what)
{
	/* the one place library code prints: the process is about to abort */
	fprintf(stderr, "ferry: BUG at %s:%d: %s\n", file, line, what);
	abort();
}

void ferry_err_save(struct ferry_errsave *s)
{
	s->set = detail_set;
	if (detail_set)
		memcpy(s->text, detail, sizeof(s->text) < sizeof(detail) ? sizeof(s->text) : sizeof(detail));
	s->text[sizeof(s->text) - 1] = '\0';
}

void ferry_err_restore(const struct ferry_errsave *s)
{
	if (s->set) {
		memcpy(detail, s->text, sizeof(s->text));
		detail_set = true;
	} else {
		ferry_err_clear();
	}
}

void ferry_err_restore_also(const struct ferry_errsave *s, const char *what)
{
	char second[DETAIL_MAX];
	snprintf(second, sizeof(second), "%s", detail_set ? detail : "no detail");
	if (s->set)
		(void)ferry_err(FERR_IO, "%s (and then %s failed: %s)", s->text, what, second);
	else
		(void)ferry_err(FERR_IO, "%s failed: %s", what, second);
}
