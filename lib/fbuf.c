/* lib/fbuf.c — the one bounded buffer.
 *
 * The allocation is always cap + 1 bytes: the spare byte holds the NUL that
 * fbuf_printf (and fbuf_detach) promise, so the terminator never counts
 * against max and a buffer filled to exactly max can still be a C string. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"

#define FBUF_MIN_ALLOC 64

void fbuf_init(struct fbuf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void fbuf_release(struct fbuf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void fbuf_reset(struct fbuf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

int fbuf_reserve(struct fbuf *b, size_t extra)
{
	size_t need, ncap, alloc;
	uint8_t *p;

	if (sz_add(b->len, extra, &need) < 0 || need > b->max)
		return -FERR_LIMIT;
	if (need <= b->cap && b->data)
		return 0;
	/* Doubling keeps appends amortised O(1); the cap at max keeps a
	 * hostile length from reserving more than the caller allowed. */
	ncap = b->cap ? b->cap : FBUF_MIN_ALLOC;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ncap = need;
			break;
		}
		ncap *= 2;
	}
	if (ncap > b->max)
		ncap = b->max;
	if (sz_add(ncap, 1, &alloc) < 0)
		return -FERR_NOMEM;
	if (!(p = realloc(b->data, alloc)))
		return -FERR_NOMEM;
	if (!b->data)
		p[0] = '\0';
	b->data = p;
	b->cap = ncap;
	return 0;
}

int fbuf_append(struct fbuf *b, const void *p, size_t n)
{
	int r;

	if (n == 0)
		return 0;
	if ((r = fbuf_reserve(b, n)) < 0)
		return r;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int fbuf_putc(struct fbuf *b, uint8_t c)
{
	return fbuf_append(b, &c, 1);
}

int fbuf_printf(struct fbuf *b, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n, r;

	/* First try in place; most messages fit in what is already there. */
	room = b->data ? b->cap - b->len + 1 : 0;
	va_start(ap, fmt);
	n = vsnprintf(room ? (char *)b->data + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0) {
		r = -FERR_INVAL;
		goto out;
	}
	if ((size_t)n < room) {
		b->len += (size_t)n;
		return 0;
	}
	if ((r = fbuf_reserve(b, (size_t)n)) < 0)
		goto out;
	va_start(ap, fmt);
	n = vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		r = -FERR_INVAL;
		goto out;
	}
	b->len += (size_t)n;
	return 0;
out:
	/* The in-place attempt may have scribbled past len. */
	if (b->data)
		b->data[b->len] = '\0';
	return r;
}

int fbuf_put_le16(struct fbuf *b, uint16_t v)
{
	uint8_t p[2];

	put_le16(p, v);
	return fbuf_append(b, p, sizeof(p));
}

int fbuf_put_le32(struct fbuf *b, uint32_t v)
{
	uint8_t p[4];

	put_le32(p, v);
	return fbuf_append(b, p, sizeof(p));
}

int fbuf_put_le64(struct fbuf *b, uint64_t v)
{
	uint8_t p[8];

	put_le64(p, v);
	return fbuf_append(b, p, sizeof(p));
}

uint8_t *fbuf_detach(struct fbuf *b, size_t *len)
{
	uint8_t *p = b->data;
	size_t n = b->len;

	/* Callers free what they get; an empty buffer still hands back a
	 * real (NUL-terminated) allocation so NULL only ever means ENOMEM. */
	if (!p) {
		if (!(p = malloc(1)))
			return NULL;
		p[0] = '\0';
		n = 0;
	}
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	if (len)
		*len = n;
	return p;
}
