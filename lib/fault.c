/* lib/fault.c — fault injection for test builds (-DFERRY_FAULT, made by
 * `make BUILD=build-fault FAULT=1`); in any other build this file is empty.
 *
 * Every write, sync, rename, unlink and create of ferry's (lib/io.c, the
 * catalogue's VFS in store/catvfs.c) and every allocation (malloc, calloc
 * and realloc are interposed below) passes io_fault(), which counts the
 * calls of each kind. The environment chooses what happens:
 *   FERRY_FAULT=KIND:N:ERR  the Nth call of KIND fails with errno ERR;
 *       KIND is write, fsync, rename, unlink, create or alloc, ERR is EIO,
 *       ENOSPC or ENOMEM (or a number). Only that one call fails: the
 *       command then goes on, or fails, as it would on a real error.
 *   FERRY_FAULT=count  at exit, one line "write=W fsync=F rename=R
 *       unlink=U create=C alloc=A" is appended to the file named by
 *       FERRY_FAULT_COUNT (default: standard error), so a test can sweep
 *       every hook point of a command.
 *   Items join with commas (up to 4 faults, and count): the second fault
 *       of "rename:2:EIO,unlink:1:EIO" fails the cleanup of the first.
 *   FERRY_FAULT_LOG=FILE  a line is appended there when the fault fires,
 *       so a test knows the command reached it.
 * Counting starts when the program starts (a constructor), after the C
 * library's own start-up allocations. Calls from several threads (the
 * pack flusher, workers) are counted as they come: the Nth is then the
 * Nth in time. */
#include "lib.h"

#ifdef FERRY_FAULT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const kind_name[IO_FAULT__COUNT] = {
	[IO_FAULT_WRITE] = "write", [IO_FAULT_FSYNC] = "fsync", [IO_FAULT_RENAME] = "rename",
	[IO_FAULT_UNLINK] = "unlink", [IO_FAULT_CREATE] = "create", [IO_FAULT_ALLOC] = "alloc",
};

static unsigned long counts[IO_FAULT__COUNT];
static int armed;            /* the constructor ran: count from here on */
/* FERRY_FAULT=KIND:N:ERR[,KIND:N:ERR]...: up to FIRE_MAX faults */
#define FIRE_MAX 4
static struct {
	int kind;
	unsigned long n;
	int err;
} fire[FIRE_MAX];
static int nfire;
static const char *log_path, *count_path;

/* Writes all of line to fd (a short write or EINTR goes on); 0 or -1. */
static int write_line(int fd, const char *line)
{
	size_t n = strlen(line), done = 0;
	while (done < n) {
		ssize_t w = write(fd, line + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* Appends line to the harness's file path (NULL: standard error). When
 * that file cannot be written the line goes to standard error instead,
 * so the harness still sees that the fault fired, or the counts. No
 * allocation and no stdio in here: this runs inside malloc. */
static void append_line(const char *path, const char *line)
{
	int saved = errno;
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : 2;
	int r = fd < 0 ? -1 : write_line(fd, line);
	if (path && fd >= 0)
		close(fd);
	if (r < 0 && path && (write_line(2, "ferry: fault log: cannot write to FERRY_FAULT_LOG or "
					  "FERRY_FAULT_COUNT; ") < 0 || write_line(2, line) < 0))
		_exit(125); /* the harness can learn it no other way */
	errno = saved;
}

static void report_counts(void)
{
	char line[256];
	snprintf(line, sizeof line, "write=%lu fsync=%lu rename=%lu unlink=%lu create=%lu alloc=%lu\n",
		 counts[IO_FAULT_WRITE], counts[IO_FAULT_FSYNC], counts[IO_FAULT_RENAME],
		 counts[IO_FAULT_UNLINK], counts[IO_FAULT_CREATE], counts[IO_FAULT_ALLOC]);
	append_line(count_path, line);
}

static int parse_err(const char *s)
{
	if (!strcmp(s, "EIO"))
		return EIO;
	if (!strcmp(s, "ENOSPC"))
		return ENOSPC;
	if (!strcmp(s, "ENOMEM"))
		return ENOMEM;
	if (!strcmp(s, "EDQUOT"))
		return EDQUOT;
	int e = atoi(s);
	return e > 0 ? e : EIO;
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *spec = getenv("FERRY_FAULT");
	log_path = getenv("FERRY_FAULT_LOG");
	count_path = getenv("FERRY_FAULT_COUNT");
	while (spec && *spec) {
		char item[48], kind[16];
		size_t len = strcspn(spec, ",");
		if (len < sizeof item) {
			memcpy(item, spec, len);
			item[len] = 0;
			const char *c1 = strchr(item, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
			size_t kl = c1 ? (size_t)(c1 - item) : 0;
			if (!strcmp(item, "count")) {
				atexit(report_counts);
			} else if (c1 && c2 && kl < sizeof kind && nfire < FIRE_MAX) {
				memcpy(kind, item, kl);
				kind[kl] = 0;
				fire[nfire].kind = -1;
				for (int k = 0; k < IO_FAULT__COUNT; k++)
					if (!strcmp(kind, kind_name[k]))
						fire[nfire].kind = k;
				fire[nfire].n = strtoul(c1 + 1, NULL, 10);
				fire[nfire].err = parse_err(c2 + 1);
				nfire++;
			}
		}
		spec += len;
		if (*spec == ',')
			spec++;
	}
	armed = 1;
}

int io_fault(enum io_fault_op op)
{
	if (!armed || (unsigned)op >= IO_FAULT__COUNT)
		return 0;
	unsigned long n = __atomic_add_fetch(&counts[op], 1, __ATOMIC_RELAXED);
	int f;
	for (f = 0; f < nfire && ((int)op != fire[f].kind || n != fire[f].n); f++)
		;
	if (f == nfire)
		return 0;
	int fire_err = fire[f].err;
	if (log_path) {
		char line[96];
		snprintf(line, sizeof line, "fault: %s #%lu -> %s\n", kind_name[op], n,
			 fire_err == ENOSPC ? "ENOSPC" : fire_err == ENOMEM ? "ENOMEM" : "EIO");
		append_line(log_path, line);
	}
	errno = fire_err;
	return fire_err;
}

/* The allocator: glibc's, behind a count. free is glibc's own. Not under
 * a sanitizer, which has an allocator of its own to interpose. */
#if !defined(FERRY_FAULT_NO_ALLOC) && !defined(__SANITIZE_ADDRESS__)
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n)
{
	if (io_fault(IO_FAULT_ALLOC))
		return NULL;
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (io_fault(IO_FAULT_ALLOC))
		return NULL;
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (io_fault(IO_FAULT_ALLOC))
		return NULL;
	return __libc_realloc(p, n);
}
#endif
#else
/* ISO C wants something in a translation unit. */
typedef int fault_unused;
#endif
