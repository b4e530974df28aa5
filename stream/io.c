/* stream/io.c — sources and sinks: fd and memory. The error is sticky so
 * that a writer of many records checks once; tap hashes what passes. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int stream_source_read(struct stream_source *s, void *buf, size_t n, size_t *got)
{
	size_t g = 0;
	int r;

	if (s->err)
		return s->err;
	if (n == 0) {
		*got = 0;
		return 0;
	}
	if ((r = s->read(s, buf, n, &g)) < 0)
		return s->err = r;
	if (g > n)
		return s->err = ferry_err(FERR_IO, "stream source returned %zu bytes for %zu", g, n);
	if (s->tap && g)
		hash_update(s->tap, buf, g);
	s->bytes += g;
	*got = g;
	return 0;
}

int stream_sink_write(struct stream_sink *s, const void *p, size_t n)
{
	int r;

	if (s->err)
		return s->err;
	if (n == 0)
		return 0;
	if ((r = s->write(s, p, n)) < 0)
		return s->err = r;
	if (s->tap)
		hash_update(s->tap, p, n);
	s->bytes += n;
	return 0;
}

int stream_sink_flush(struct stream_sink *s, struct fbuf *b)
{
	int r = stream_sink_write(s, b->data, b->len);

	fbuf_reset(b);
	return r;
}

static int fd_read(struct stream_source *base, void *buf, size_t n, size_t *got)
{
	struct stream_source_fd *s = (struct stream_source_fd *)base;
	ssize_t k;

	do
		k = read(s->fd, buf, n);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return ferry_err_errno(errno, "read stream");
	*got = (size_t)k;
	return 0;
}

void stream_source_fd_init(struct stream_source_fd *s, int fd)
{
	memset(s, 0, sizeof(*s));
	s->base.read = fd_read;
	s->fd = fd;
}

static int mem_read(struct stream_source *base, void *buf, size_t n, size_t *got)
{
	struct stream_source_mem *s = (struct stream_source_mem *)base;
	size_t k = s->len - s->off;

	if (k > n)
		k = n;
	if (s->chunk && k > s->chunk)
		k = s->chunk;
	if (k)
		memcpy(buf, s->p + s->off, k);
	s->off += k;
	*got = k;
	return 0;
}

void stream_source_mem_init(struct stream_source_mem *s, const void *p, size_t len, size_t chunk)
{
	memset(s, 0, sizeof(*s));
	s->base.read = mem_read;
	s->p = p;
	s->len = len;
	s->chunk = chunk;
}

static int fd_write(struct stream_sink *base, const void *p, size_t n)
{
	struct stream_sink_fd *s = (struct stream_sink_fd *)base;

	return io_write_full(s->fd, p, n);
}

void stream_sink_fd_init(struct stream_sink_fd *s, int fd)
{
	memset(s, 0, sizeof(*s));
	s->base.write = fd_write;
	s->fd = fd;
}

static int mem_write(struct stream_sink *base, const void *p, size_t n)
{
	struct stream_sink_mem *s = (struct stream_sink_mem *)base;

	return fbuf_append(s->buf, p, n);
}

void stream_sink_mem_init(struct stream_sink_mem *s, struct fbuf *buf)
{
	memset(s, 0, sizeof(*s));
	s->base.write = mem_write;
	s->buf = buf;
}
