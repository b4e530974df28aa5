/* tests/unit/test_lib.c — unit tests for lib/. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/lib.h"

/* ---- helpers ------------------------------------------------------------ */

static char *tmpdir_new(void)
{
	char tmpl[] = "/tmp/ferry-test-lib-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return strdup(d);
}

static void rm_rf(const char *path)
{
	struct stat st;
	DIR *dir;
	struct dirent *de;

	if (lstat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlink(path);
		return;
	}
	chmod(path, 0700);
	if ((dir = opendir(path))) {
		while ((de = readdir(dir))) {
			char sub[PATH_MAX];

			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			rm_rf(sub);
		}
		closedir(dir);
	}
	rmdir(path);
}

static int count_entries(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	int n = 0;

	assert_non_null(dir);
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(dir);
	return n;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);

	assert_non_null(p);
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

static void write_file(const char *path, const void *data, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(io_write_full(fd, data, n), 0);
	close(fd);
}

/* ---- errors ------------------------------------------------------------- */

static void test_strerror(void **state)
{
	assert_string_equal(ferry_strerror(0), "success");
	assert_string_equal(ferry_strerror(-FERR_NOMEM), "out of memory");
	assert_string_equal(ferry_strerror(FERR_NOMEM), "out of memory");
	assert_string_equal(ferry_strerror(-FERR_PARTIAL), "completed with warnings");
	assert_string_equal(ferry_strerror(FERR__COUNT), "unknown error");
	assert_string_equal(ferry_strerror(-FERR__COUNT), "unknown error");
	assert_string_equal(ferry_strerror(INT_MIN), "unknown error");
	assert_string_equal(ferry_strerror(INT_MAX), "unknown error");
	for (int c = 1; c < FERR__COUNT; c++) {
		assert_non_null(ferry_strerror(-c));
		assert_string_not_equal(ferry_strerror(-c), "unknown error");
		for (int d = 1; d < c; d++)
			assert_string_not_equal(ferry_strerror(-c), ferry_strerror(-d));
	}
}

static void test_err_detail(void **state)
{
	int r;

	ferry_err_clear();
	assert_null(ferry_err_detail());
	assert_string_equal(ferry_errmsg(-FERR_IO), "I/O error");

	r = ferry_err(FERR_CORRUPT, "record %d is bad", 7);
	assert_int_equal(r, -FERR_CORRUPT);
	assert_string_equal(ferry_errmsg(r), "record 7 is bad");
	assert_string_equal(ferry_err_detail(), "record 7 is bad");
	/* Detail is returned whatever code is asked about, until cleared. */
	assert_string_equal(ferry_errmsg(-FERR_IO), "record 7 is bad");

	/* Wrapping the current message must not read a half-written buffer. */
	r = ferry_err(FERR_CORRUPT, "stream: %s", ferry_errmsg(r));
	assert_string_equal(ferry_errmsg(r), "stream: record 7 is bad");

	ferry_err_clear();
	assert_string_equal(ferry_errmsg(-FERR_CORRUPT), "corrupt data");

	/* A negative code is accepted and still yields a negative return. */
	assert_int_equal(ferry_err(-FERR_LIMIT, "x"), -FERR_LIMIT);
	ferry_err_clear();
}

static int verr_wrap(int code, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ferry_verr(code, fmt, ap);
	va_end(ap);
	return r;
}

static void test_err_truncation(void **state)
{
	char big[5000];
	const char *m;
	size_t n;
	int r;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = verr_wrap(FERR_IO, "%s", big);
	assert_int_equal(r, -FERR_IO);
	m = ferry_errmsg(r);
	n = strlen(m);
	assert_true(n > 500 && n < 1024);
	assert_true(m[0] == 'x' && m[n - 1] == 'x');

	/* "é" is two bytes; a 1-byte prefix shifts every cut mid-character
	 * for an odd-sized buffer, and the message must not end mid-sequence. */
	for (int shift = 0; shift < 4; shift++) {
		char u[3000];
		size_t k = 0, i;

		for (i = 0; i < (size_t)shift; i++)
			u[k++] = 'a';
		while (k + 3 < sizeof(u)) {
			u[k++] = (char)0xC3;
			u[k++] = (char)0xA9;
		}
		u[k] = '\0';
		r = ferry_err(FERR_IO, "%s", u);
		m = ferry_errmsg(r);
		n = strlen(m);
		assert_true(n > 0);
		/* Last byte is either a complete é's trail byte after its lead,
		 * or an ASCII 'a'. */
		unsigned char last = (unsigned char)m[n - 1];
		if (last == 0xA9)
			assert_int_equal((unsigned char)m[n - 2], 0xC3);
		else
			assert_int_equal(last, 'a');
	}
	ferry_err_clear();
}

static void test_errno_code(void **state)
{
	static const struct { int e, code; } t[] = {
		{ ENOENT, FERR_NOENT }, { EEXIST, FERR_EXISTS }, { ENOSPC, FERR_NOSPC },
		{ EDQUOT, FERR_NOSPC }, { EACCES, FERR_PERM }, { EPERM, FERR_PERM },
		{ ENOMEM, FERR_NOMEM }, { ENOTEMPTY, FERR_NOTEMPTY }, { EBUSY, FERR_BUSY },
		{ EINVAL, FERR_INVAL }, { EIO, FERR_IO }, { EBADF, FERR_IO },
		{ EPIPE, FERR_IO }, { 0, FERR_IO },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(ferry_errno_code(t[i].e), t[i].code);
}

static void test_err_errno(void **state)
{
	char want[256];
	int r;

	r = ferry_err_errno(ENOENT, "cannot open '%s'", "/nope");
	assert_int_equal(r, -FERR_NOENT);
	snprintf(want, sizeof(want), "cannot open '/nope': %s", strerror(ENOENT));
	assert_string_equal(ferry_errmsg(r), want);

	r = ferry_err_errno(EDQUOT, "write");
	assert_int_equal(r, -FERR_NOSPC);
	ferry_err_clear();
}

static void *err_thread(void *arg)
{
	int *ok = arg;

	*ok = ferry_err_detail() == NULL; /* fresh thread: nothing recorded */
	(void)ferry_err(FERR_IO, "from the other thread");
	*ok = *ok && !strcmp(ferry_errmsg(-FERR_IO), "from the other thread");
	return NULL;
}

static void test_err_thread_local(void **state)
{
	pthread_t t;
	int ok = 0;

	(void)ferry_err(FERR_INVAL, "main thread");
	assert_int_equal(pthread_create(&t, NULL, err_thread, &ok), 0);
	pthread_join(t, NULL);
	assert_true(ok);
	assert_string_equal(ferry_errmsg(-FERR_INVAL), "main thread");
	ferry_err_clear();
}

/* ---- arithmetic ---------------------------------------------------------- */

static void test_arith(void **state)
{
	size_t s = 77;
	uint64_t u = 77;

	assert_int_equal(sz_add(SIZE_MAX - 1, 1, &s), 0);
	assert_true(s == SIZE_MAX);
	s = 77;
	assert_int_equal(sz_add(SIZE_MAX, 1, &s), -FERR_OVERFLOW);
	assert_int_equal(sz_add(1, SIZE_MAX, &s), -FERR_OVERFLOW);
	assert_true(s == 77);
	assert_int_equal(sz_add(0, 0, &s), 0);
	assert_true(s == 0);

	s = 77;
	assert_int_equal(sz_mul(SIZE_MAX / 2, 2, &s), 0);
	assert_true(s == SIZE_MAX - 1);
	s = 77;
	assert_int_equal(sz_mul(SIZE_MAX / 2 + 1, 2, &s), -FERR_OVERFLOW);
	assert_true(s == 77);
	assert_int_equal(sz_mul(SIZE_MAX, 0, &s), 0);
	assert_true(s == 0);
	assert_int_equal(sz_mul(SIZE_MAX, 1, &s), 0);
	assert_true(s == SIZE_MAX);

	assert_int_equal(u64_add(UINT64_MAX - 5, 5, &u), 0);
	assert_true(u == UINT64_MAX);
	u = 77;
	assert_int_equal(u64_add(UINT64_MAX - 5, 6, &u), -FERR_OVERFLOW);
	assert_true(u == 77);
	assert_int_equal(u64_mul(UINT64_C(1) << 32, (UINT64_C(1) << 32) - 1, &u), 0);
	assert_true(u == (UINT64_C(1) << 32) * ((UINT64_C(1) << 32) - 1));
	u = 77;
	assert_int_equal(u64_mul(UINT64_C(1) << 32, UINT64_C(1) << 32, &u), -FERR_OVERFLOW);
	assert_int_equal(u64_mul(UINT64_MAX, 2, &u), -FERR_OVERFLOW);
	assert_true(u == 77);
	assert_int_equal(u64_mul(0, UINT64_MAX, &u), 0);
	assert_true(u == 0);
}

static void test_le(void **state)
{
	uint8_t b[8];

	put_le16(b, 0xBEEF);
	assert_int_equal(b[0], 0xEF);
	assert_int_equal(b[1], 0xBE);
	assert_int_equal(get_le16(b), 0xBEEF);
	put_le32(b, 0xDEADBEEFu);
	assert_int_equal(b[0], 0xEF);
	assert_int_equal(b[3], 0xDE);
	assert_true(get_le32(b) == 0xDEADBEEFu);
	put_le64(b, UINT64_C(0x0123456789ABCDEF));
	assert_int_equal(b[0], 0xEF);
	assert_int_equal(b[7], 0x01);
	assert_true(get_le64(b) == UINT64_C(0x0123456789ABCDEF));
	put_le64(b, UINT64_MAX);
	assert_true(get_le64(b) == UINT64_MAX);
}

/* ---- fbuf ----------------------------------------------------------------- */

static void test_fbuf_limit(void **state)
{
	struct fbuf b;
	uint8_t src[101];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)i;

	/* max + 1 in one go fails and leaves nothing allocated. */
	fbuf_init(&b, 100);
	assert_int_equal(fbuf_append(&b, src, 101), -FERR_LIMIT);
	assert_int_equal(b.len, 0);
	assert_null(b.data);
	assert_int_equal(fbuf_reserve(&b, 101), -FERR_LIMIT);
	assert_int_equal(fbuf_reserve(&b, SIZE_MAX), -FERR_LIMIT);

	/* Exactly max fits. */
	assert_int_equal(fbuf_append(&b, src, 100), 0);
	assert_int_equal(b.len, 100);
	assert_true(b.cap <= 100);
	assert_memory_equal(b.data, src, 100);
	assert_int_equal(b.data[100], 0);

	/* One more byte by any route fails, buffer unchanged. */
	uint8_t *before = b.data;
	assert_int_equal(fbuf_putc(&b, 'x'), -FERR_LIMIT);
	assert_int_equal(fbuf_printf(&b, "%s", "x"), -FERR_LIMIT);
	assert_int_equal(fbuf_put_le16(&b, 1), -FERR_LIMIT);
	assert_int_equal(fbuf_reserve(&b, 1), -FERR_LIMIT);
	assert_int_equal(fbuf_reserve(&b, SIZE_MAX), -FERR_LIMIT);
	assert_ptr_equal(b.data, before);
	assert_int_equal(b.len, 100);
	assert_memory_equal(b.data, src, 100);
	assert_int_equal(b.data[100], 0);
	/* Empty appends and zero reserves are always fine. */
	assert_int_equal(fbuf_append(&b, NULL, 0), 0);
	assert_int_equal(fbuf_reserve(&b, 0), 0);
	assert_int_equal(fbuf_printf(&b, "%s", ""), 0);
	assert_int_equal(b.len, 100);
	fbuf_release(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);

	/* Incremental growth stops at exactly max too. */
	fbuf_init(&b, 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(fbuf_putc(&b, (uint8_t)i), 0);
	assert_int_equal(b.cap, 1000);
	assert_int_equal(fbuf_putc(&b, 0), -FERR_LIMIT);
	assert_int_equal(b.len, 1000);
	fbuf_release(&b);

	/* max 0 admits nothing but still yields a C string. */
	fbuf_init(&b, 0);
	assert_int_equal(fbuf_putc(&b, 'a'), -FERR_LIMIT);
	assert_int_equal(fbuf_printf(&b, "%s", ""), 0);
	assert_non_null(b.data);
	assert_string_equal((char *)b.data, "");
	fbuf_release(&b);
}

static void test_fbuf_printf(void **state)
{
	struct fbuf b;
	char want[20000];
	size_t wl = 0;

	fbuf_init(&b, 1 << 20);
	for (int i = 0; i < 1500; i++) {
		assert_int_equal(fbuf_printf(&b, "%d,", i), 0);
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%d,", i);
		assert_int_equal(b.len, wl);
		assert_int_equal(b.data[b.len], 0);
	}
	assert_string_equal((char *)b.data, want);
	assert_true(b.cap >= b.len && b.cap <= (1 << 20));

	/* One call bigger than everything so far forces a growth mid-printf. */
	char big[9000];
	memset(big, 'q', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fbuf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(fbuf_printf(&b, "<%s>", big), 0);
	assert_int_equal(b.len, sizeof(big) + 1);
	assert_int_equal(b.data[0], '<');
	assert_int_equal(b.data[b.len - 1], '>');
	assert_int_equal(b.data[b.len], 0);
	fbuf_release(&b);

	/* printf that would exceed max fails and leaves contents and the NUL. */
	fbuf_init(&b, 10);
	assert_int_equal(fbuf_printf(&b, "%s", "abcdef"), 0);
	assert_int_equal(fbuf_printf(&b, "%s", "ghijk"), -FERR_LIMIT);
	assert_int_equal(b.len, 6);
	assert_string_equal((char *)b.data, "abcdef");
	/* ...and exactly filling max works, terminator included. */
	assert_int_equal(fbuf_printf(&b, "%s", "ghij"), 0);
	assert_int_equal(b.len, 10);
	assert_string_equal((char *)b.data, "abcdefghij");
	fbuf_release(&b);
}

static void test_fbuf_misc(void **state)
{
	struct fbuf b;
	static const uint8_t want[] = {
		0x34, 0x12, 0x78, 0x56, 0x34, 0x12,
		0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01, 'z',
	};
	uint8_t *p;
	size_t n = 99, cap;

	fbuf_init(&b, 64);
	assert_int_equal(fbuf_put_le16(&b, 0x1234), 0);
	assert_int_equal(fbuf_put_le32(&b, 0x12345678u), 0);
	assert_int_equal(fbuf_put_le64(&b, UINT64_C(0x0123456789ABCDEF)), 0);
	assert_int_equal(fbuf_putc(&b, 'z'), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));

	cap = b.cap;
	p = b.data;
	fbuf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, cap);
	assert_ptr_equal(b.data, p);

	assert_int_equal(fbuf_append(&b, "hello", 5), 0);
	p = fbuf_detach(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, 5);
	assert_string_equal((char *)p, "hello");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(p);

	/* Detaching an empty buffer still gives the caller something to free. */
	p = fbuf_detach(&b, &n);
	assert_non_null(p);
	assert_int_equal(n, 0);
	assert_int_equal(p[0], 0);
	free(p);

	/* Reusable after detach and after release. */
	assert_int_equal(fbuf_append(&b, "x", 1), 0);
	fbuf_release(&b);
	fbuf_init(&b, 8);
	assert_int_equal(fbuf_append(&b, "12345678", 8), 0);
	fbuf_release(&b);
	fbuf_release(&b); /* double release is harmless */
}

/* ---- hashing ---------------------------------------------------------------- */

static const char hex_empty[] = "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8";
static const char hex_abc[] = "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319";
static const char hex_million_a[] = "0741850f36cba4259628355d1073e24ddb9ca0e1bfac36fd39ae5dc2101e23a4";

static void test_hash_known(void **state)
{
	uint8_t h[FERRY_HASH_LEN];
	char hex[FERRY_HASH_HEX];
	struct hash_state st;
	char *ma;

	assert_int_equal(ferry_lib_init(), 0);
	assert_int_equal(ferry_lib_init(), 0); /* idempotent */

	hash_blake2b(h, "", 0);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_empty);
	hash_blake2b(h, NULL, 0);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_empty);
	hash_blake2b(h, "abc", 3);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_abc);

	ma = malloc(1000000);
	assert_non_null(ma);
	memset(ma, 'a', 1000000);
	hash_blake2b(h, ma, 1000000);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_million_a);
	/* Same through the streaming API in uneven pieces. */
	hash_init(&st);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step * 3 + 1) {
		size_t k = 1000000 - off < step ? 1000000 - off : step;
		hash_update(&st, ma + off, k);
	}
	hash_final(&st, h);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_million_a);
	free(ma);

	hash_init(&st);
	hash_final(&st, h);
	hash_to_hex(h, hex);
	assert_string_equal(hex, hex_empty);
}

static void test_hash_stream(void **state)
{
	uint8_t data[70000], one[FERRY_HASH_LEN], two[FERRY_HASH_LEN];
	struct hash_state st;

	assert_int_equal(ferry_lib_init(), 0);
	ferry_random(data, sizeof(data));
	hash_blake2b(one, data, sizeof(data));
	for (size_t chunk = 1; chunk < sizeof(data); chunk = chunk * 7 + 3) {
		hash_init(&st);
		for (size_t off = 0; off < sizeof(data); off += chunk) {
			size_t k = sizeof(data) - off < chunk ? sizeof(data) - off : chunk;
			hash_update(&st, data + off, k);
		}
		hash_update(&st, data, 0);
		hash_final(&st, two);
		assert_memory_equal(one, two, FERRY_HASH_LEN);
	}
}

static void test_hash_hex(void **state)
{
	uint8_t h[FERRY_HASH_LEN], g[FERRY_HASH_LEN], keep[FERRY_HASH_LEN];
	char hex[FERRY_HASH_HEX], bad[FERRY_HASH_HEX + 2];

	for (int i = 0; i < FERRY_HASH_LEN; i++)
		h[i] = (uint8_t)(i * 37 + 5);
	hash_to_hex(h, hex);
	assert_int_equal(strlen(hex), 64);
	assert_int_equal(hash_from_hex(hex, g), 0);
	assert_memory_equal(h, g, FERRY_HASH_LEN);

	/* Upper case is the same hash. */
	for (int i = 0; hex[i]; i++)
		if (hex[i] >= 'a' && hex[i] <= 'f')
			hex[i] = (char)(hex[i] - 'a' + 'A');
	assert_int_equal(hash_from_hex(hex, g), 0);
	assert_memory_equal(h, g, FERRY_HASH_LEN);

	memset(keep, 0x5A, sizeof(keep));
	memcpy(g, keep, sizeof(g));
	assert_int_equal(hash_from_hex("", g), -FERR_INVAL);
	assert_int_equal(hash_from_hex("abc", g), -FERR_INVAL);
	assert_int_equal(hash_from_hex(hex_empty + 1, g), -FERR_INVAL); /* 63 */
	snprintf(bad, sizeof(bad), "%s0", hex_empty);                    /* 65 */
	assert_int_equal(hash_from_hex(bad, g), -FERR_INVAL);
	snprintf(bad, sizeof(bad), "%s", hex_empty);
	bad[10] = 'g';
	assert_int_equal(hash_from_hex(bad, g), -FERR_INVAL);
	bad[10] = ' ';
	assert_int_equal(hash_from_hex(bad, g), -FERR_INVAL);
	snprintf(bad, sizeof(bad), "%s", hex_empty);
	bad[63] = 'z';
	assert_int_equal(hash_from_hex(bad, g), -FERR_INVAL);
	assert_memory_equal(g, keep, sizeof(g)); /* untouched on failure */
	ferry_err_clear();
}

static void test_random_ct(void **state)
{
	uint8_t a[32], b[32];
	int distinct = 0;

	assert_int_equal(ferry_lib_init(), 0);
	ferry_random(a, sizeof(a));
	ferry_random(b, sizeof(b));
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(ferry_memcmp_ct(a, a, sizeof(a)), 0);
	assert_int_not_equal(ferry_memcmp_ct(a, b, sizeof(a)), 0);
	memcpy(b, a, sizeof(a));
	b[31] ^= 1;
	assert_int_not_equal(ferry_memcmp_ct(a, b, sizeof(a)), 0);
	assert_int_equal(ferry_memcmp_ct(a, b, 31), 0);
	assert_int_equal(ferry_memcmp_ct(a, b, 0), 0);

	uint64_t prev = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t g = ferry_random_guid();

		assert_true(g != 0);
		distinct += g != prev;
		prev = g;
	}
	assert_int_equal(distinct, 1000);
	ferry_random(a, 0);
}

/* ---- io -------------------------------------------------------------------- */

/* io_pipe_grow: a pipe's buffer becomes IO_PIPE_SIZE (where the kernel
 * grants it: root, or pipe-max-size at least that), so that much is
 * written without a reader; a file or a bad fd is left alone. */
static void test_io_pipe_grow(void **state)
{
	int fds[2];
	char *dir = tmpdir_new(), *p = path_join(dir, "f");
	long max = 0;
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "r");
	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = 0;
		fclose(f);
	}
	assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(fcntl(fds[0], F_GETPIPE_SZ), 65536);
	io_pipe_grow(fds[1]);
	if (geteuid() == 0 || max >= (long)IO_PIPE_SIZE) {
		assert_int_equal(fcntl(fds[0], F_GETPIPE_SZ), (int)IO_PIPE_SIZE);
		uint8_t *b = calloc(1, IO_PIPE_SIZE);
		assert_non_null(b);
		assert_int_equal(write(fds[1], b, IO_PIPE_SIZE), (ssize_t)IO_PIPE_SIZE);
		free(b);
	}
	close(fds[0]);
	close(fds[1]);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	io_pipe_grow(fd);
	io_pipe_grow(-1);
	assert_int_equal(io_write_full(fd, "abc", 3), 0);
	assert_true(lseek(fd, 0, SEEK_END) == 3);
	close(fd);
	rm_rf(dir);
	free(p);
	free(dir);
}

static void test_io_fd_roundtrip(void **state)
{
	char *dir = tmpdir_new(), *p = path_join(dir, "f");
	size_t n = 3 * 1000 * 1000 + 17, got = 0;
	uint8_t *src = malloc(n), *dst = malloc(n + 10);
	int fd;

	assert_non_null(src);
	assert_non_null(dst);
	ferry_random(src, n);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(io_write_full(fd, src, n), 0);
	assert_int_equal(io_write_full(fd, src, 0), 0);
	assert_true(lseek(fd, 0, SEEK_SET) == 0);
	assert_int_equal(io_read_full(fd, dst, n + 10, &got), 0);
	assert_int_equal(got, n);
	assert_memory_equal(src, dst, n);
	got = 5;
	assert_int_equal(io_read_full(fd, dst, 10, &got), 0);
	assert_int_equal(got, 0); /* at EOF */

	/* Positional I/O at an offset, overwriting in place. */
	assert_int_equal(io_pwrite_full(fd, "HELLO", 5, 1000), 0);
	assert_int_equal(io_pread_full(fd, dst, 5, 1000, &got), 0);
	assert_int_equal(got, 5);
	assert_memory_equal(dst, "HELLO", 5);
	assert_int_equal(io_pread_full(fd, dst, 100, (off_t)n - 10, &got), 0);
	assert_int_equal(got, 10);
	assert_int_equal(io_pread_full(fd, dst, 100, (off_t)n + 100, &got), 0);
	assert_int_equal(got, 0);
	/* A write past the end extends the file. */
	assert_int_equal(io_pwrite_full(fd, "END", 3, (off_t)n + 5), 0);
	assert_int_equal(io_pread_full(fd, dst, 10, (off_t)n + 5, &got), 0);
	assert_int_equal(got, 3);
	assert_memory_equal(dst, "END", 3);
	/* A write of several 1 MiB pieces (IO_WRITE_CHUNK), at an offset
	 * that is not a multiple of one, lands whole and in order. */
	assert_int_equal(io_pwrite_full(fd, src, n, 7), 0);
	assert_int_equal(io_pread_full(fd, dst, n, 7, &got), 0);
	assert_int_equal(got, n);
	assert_memory_equal(src, dst, n);

	got = 77;
	assert_int_equal(io_pread_full(fd, dst, 1, -1, &got), -FERR_INVAL);
	assert_int_equal(got, 77);
	assert_int_equal(io_pwrite_full(fd, "x", 1, -1), -FERR_INVAL);
	assert_int_equal(io_pwrite_full(fd, "xx", 2, INT64_MAX), -FERR_INVAL);
	close(fd);

	/* Errors name the operation and map errno. */
	assert_int_equal(io_read_full(fd, dst, 1, &got), -FERR_IO);
	assert_non_null(strstr(ferry_errmsg(-FERR_IO), "read"));
	assert_int_equal(io_write_full(fd, "x", 1), -FERR_IO);
	assert_int_equal(io_pread_full(fd, dst, 1, 0, &got), -FERR_IO);
	assert_int_equal(io_pwrite_full(fd, "x", 1, 0), -FERR_IO);
	assert_int_equal(got, 77);

	fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(io_write_full(fd, "x", 1), -FERR_IO);
	close(fd);

	ferry_err_clear();
	free(src);
	free(dst);
	free(p);
	rm_rf(dir);
	free(dir);
}

static void test_io_pipe_short(void **state)
{
	int pfd[2];
	char buf[100];
	size_t got = 0;

	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(io_write_full(pfd[1], "0123456789", 10), 0);
	close(pfd[1]);
	assert_int_equal(io_read_full(pfd[0], buf, sizeof(buf), &got), 0);
	assert_int_equal(got, 10);
	assert_memory_equal(buf, "0123456789", 10);
	close(pfd[0]);
}

/* EINTR: interrupt a blocked read and a blocked write with a signal whose
 * handler does not ask for SA_RESTART. */
static void on_sigusr1(int sig) { (void)sig; }

struct eintr_ctx {
	pthread_t target;
	int fd;
	size_t n;
	int rc;
};

static void *eintr_feeder(void *arg)
{
	struct eintr_ctx *c = arg;
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	uint8_t *b = calloc(1, c->n);

	for (int i = 0; i < 5; i++) {
		nanosleep(&ts, NULL);
		pthread_kill(c->target, SIGUSR1);
	}
	c->rc = io_write_full(c->fd, b, c->n);
	for (int i = 0; i < 5; i++) {
		nanosleep(&ts, NULL);
		pthread_kill(c->target, SIGUSR1);
	}
	free(b);
	return NULL;
}

static void *eintr_drainer(void *arg)
{
	struct eintr_ctx *c = arg;
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	uint8_t b[4096];
	size_t got, total = 0;

	for (int i = 0; i < 5; i++) {
		nanosleep(&ts, NULL);
		pthread_kill(c->target, SIGUSR1);
	}
	do {
		c->rc = io_read_full(c->fd, b, sizeof(b), &got);
		total += got;
	} while (c->rc == 0 && got == sizeof(b));
	c->n = total;
	return NULL;
}

static void test_io_eintr(void **state)
{
	struct sigaction sa, old;
	struct eintr_ctx c;
	pthread_t t;
	int pfd[2];
	size_t n = 1 << 20, got = 0;
	uint8_t *buf = malloc(n);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: blocked syscalls see EINTR */
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);

	/* Blocked read, fed late by another thread. */
	assert_int_equal(pipe(pfd), 0);
	c.target = pthread_self();
	c.fd = pfd[1];
	c.n = n;
	c.rc = -1;
	assert_int_equal(pthread_create(&t, NULL, eintr_feeder, &c), 0);
	assert_int_equal(io_read_full(pfd[0], buf, n, &got), 0);
	assert_int_equal(got, n);
	pthread_join(t, NULL);
	assert_int_equal(c.rc, 0);
	close(pfd[0]);
	close(pfd[1]);

	/* Blocked write into a full pipe, drained late. */
	assert_int_equal(pipe(pfd), 0);
	c.fd = pfd[0];
	c.rc = -1;
	assert_int_equal(pthread_create(&t, NULL, eintr_drainer, &c), 0);
	assert_int_equal(io_write_full(pfd[1], buf, n), 0);
	close(pfd[1]);
	pthread_join(t, NULL);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.n, n);
	close(pfd[0]);

	sigaction(SIGUSR1, &old, NULL);
	free(buf);
}

static void test_io_atomic(void **state)
{
	char *dir = tmpdir_new(), *p = path_join(dir, "cfg");
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	mode_t old_umask = umask(022);

	assert_int_equal(io_write_file_atomic(dir, "cfg", "first", 5, 0640), 0);
	assert_int_equal(io_read_file(p, 100, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(data, "first");
	free(data);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(count_entries(dir), 1);

	/* Replace with different (longer, then shorter, then empty) content. */
	assert_int_equal(io_write_file_atomic(dir, "cfg", "second version", 14, 0600), 0);
	assert_int_equal(io_read_file(p, 100, &data, &len), 0);
	assert_string_equal(data, "second version");
	free(data);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(io_write_file_atomic(dir, "cfg", "3", 1, 0600), 0);
	assert_int_equal(io_read_file(p, 100, &data, &len), 0);
	assert_string_equal(data, "3");
	free(data);
	assert_int_equal(io_write_file_atomic(dir, "cfg", NULL, 0, 0600), 0);
	assert_int_equal(io_read_file(p, 100, &data, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(data, "");
	free(data);
	assert_int_equal(count_entries(dir), 1); /* no temp files left */

	/* A long name still gets a temp name that fits NAME_MAX. */
	char longname[256];
	memset(longname, 'n', 255);
	longname[255] = '\0';
	assert_int_equal(io_write_file_atomic(dir, longname, "L", 1, 0600), 0);
	assert_int_equal(count_entries(dir), 2);

	/* Names that would escape dir are refused. */
	assert_int_equal(io_write_file_atomic(dir, "../evil", "x", 1, 0600), -FERR_NAME);
	assert_int_equal(io_write_file_atomic(dir, "a/b", "x", 1, 0600), -FERR_NAME);
	assert_int_equal(io_write_file_atomic(dir, "..", "x", 1, 0600), -FERR_NAME);
	assert_int_equal(io_write_file_atomic(dir, ".", "x", 1, 0600), -FERR_NAME);
	assert_int_equal(io_write_file_atomic(dir, "", "x", 1, 0600), -FERR_NAME);

	/* Missing directory: NOENT, and the message names it. */
	char *missing = path_join(dir, "nope");
	assert_int_equal(io_write_file_atomic(missing, "f", "x", 1, 0600), -FERR_NOENT);
	assert_non_null(strstr(ferry_errmsg(-FERR_NOENT), missing));
	free(missing);

	/* Rename onto a non-empty directory fails after the temp file was
	 * written: the old entry survives and the temp file is gone. */
	char *sub = path_join(dir, "sub"), *inner = path_join(sub, "keep");
	assert_int_equal(mkdir(sub, 0700), 0);
	write_file(inner, "k", 1);
	assert_true(io_write_file_atomic(dir, "sub", "x", 1, 0600) < 0);
	assert_non_null(strstr(ferry_errmsg(-FERR_IO), "sub"));
	assert_int_equal(stat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(count_entries(dir), 3);
	free(inner);
	free(sub);

	/* Unwritable directory (skipped for root, which ignores modes). */
	if (geteuid() != 0) {
		char *ro = path_join(dir, "ro");
		assert_int_equal(mkdir(ro, 0500), 0);
		assert_int_equal(io_write_file_atomic(ro, "f", "x", 1, 0600), -FERR_PERM);
		assert_non_null(strstr(ferry_errmsg(-FERR_PERM), ro));
		free(ro);
	}

	umask(old_umask);
	ferry_err_clear();
	free(p);
	rm_rf(dir);
	free(dir);
}

static void test_io_read_file(void **state)
{
	char *dir = tmpdir_new(), *p = path_join(dir, "f"), *e = path_join(dir, "empty");
	char *data = (char *)0x1, *orig = data;
	uint8_t src[200000];
	size_t len = 99;

	ferry_random(src, sizeof(src));
	write_file(p, src, sizeof(src));
	assert_int_equal(io_read_file(p, sizeof(src), &data, &len), 0);
	assert_int_equal(len, sizeof(src));
	assert_memory_equal(data, src, sizeof(src));
	assert_int_equal(data[len], 0);
	free(data);
	data = orig;
	len = 99;

	assert_int_equal(io_read_file(p, sizeof(src) - 1, &data, &len), -FERR_LIMIT);
	assert_non_null(strstr(ferry_errmsg(-FERR_LIMIT), p));
	assert_ptr_equal(data, orig);
	assert_int_equal(len, 99);
	assert_int_equal(io_read_file(p, 0, &data, &len), -FERR_LIMIT);

	/* len may be omitted. */
	assert_int_equal(io_read_file(p, SIZE_MAX - 1, &data, NULL), 0);
	assert_memory_equal(data, src, sizeof(src));
	free(data);

	write_file(e, "", 0);
	assert_int_equal(io_read_file(e, 0, &data, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(data, "");
	free(data);

	char *missing = path_join(dir, "missing");
	assert_int_equal(io_read_file(missing, 10, &data, &len), -FERR_NOENT);
	assert_non_null(strstr(ferry_errmsg(-FERR_NOENT), missing));
	free(missing);
	assert_int_equal(io_read_file(dir, 10, &data, &len), -FERR_IO); /* EISDIR */

	ferry_err_clear();
	free(p);
	free(e);
	rm_rf(dir);
	free(dir);
}

/* What the store makes private stays private whatever the umask: exact
 * modes from io_open_create, io_mkdir, io_mkdirs and io_write_file_atomic,
 * and an existing directory keeps its own. */
static void test_io_exact_modes(void **state)
{
	char *dir = tmpdir_new(), *f = path_join(dir, "f"), *d = path_join(dir, "d");
	char *deep = path_join(dir, "x/y"), *x = path_join(dir, "x");
	mode_t umasks[] = {0, 022, 0277};
	struct stat st;
	int fd;

	for (size_t i = 0; i < sizeof(umasks) / sizeof(umasks[0]); i++) {
		mode_t old = umask(umasks[i]);

		assert_int_equal(io_open_create(f, O_RDWR | O_EXCL, 0600, &fd), 0);
		close(fd);
		assert_int_equal(stat(f, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		assert_int_equal(io_open_create(f, O_RDWR | O_EXCL, 0600, &fd), -FERR_EXISTS);
		assert_int_equal(io_open_create(f, O_RDWR, 0600, &fd), 0); /* opens it */
		close(fd);
		assert_int_equal(io_mkdir(d, 0700), 0);
		assert_int_equal(stat(d, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		assert_int_equal(io_mkdir(d, 0700), -FERR_EXISTS);
		assert_int_equal(io_mkdirs(deep, 0700), 0);
		assert_int_equal(stat(x, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		assert_int_equal(stat(deep, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
		assert_int_equal(io_write_file_atomic(dir, "a", "x", 1, 0600), 0);
		char *a = path_join(dir, "a");
		assert_int_equal(stat(a, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0600);
		umask(old);
		unlink(a);
		free(a);
		unlink(f);
		rmdir(d);
		rmdir(deep);
		rmdir(x);
	}
	/* an existing directory is not changed */
	assert_int_equal(mkdir(x, 0755), 0);
	assert_int_equal(chmod(x, 0755), 0);
	assert_int_equal(io_mkdirs(deep, 0700), 0);
	assert_int_equal(stat(x, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	rm_rf(dir);
	free(dir);
	free(f);
	free(d);
	free(deep);
	free(x);
}

/* Cleanup on an error path keeps the error being reported. */
static void test_err_save(void **state)
{
	struct ferry_errsave e;
	int r = ferry_err(FERR_NOSPC, "pool 'bk': no space left on device");

	ferry_err_save(&e);
	assert_int_equal(io_unlink("/nonexistent/ferry/x"), -FERR_NOENT);
	ferry_err_restore(&e);
	assert_string_equal(ferry_errmsg(r), "pool 'bk': no space left on device");
	ferry_err_clear();
	ferry_err_save(&e);
	(void)ferry_err(FERR_IO, "noise");
	ferry_err_restore(&e);
	assert_null(ferry_err_detail());
}

/* A cleanup that fails on an error path is named after the error. */
static void test_err_restore_also(void **state)
{
	struct ferry_errsave e;
	int r = ferry_err(FERR_IO, "cannot write pack 'a': I/O error");

	ferry_err_save(&e);
	assert_int_equal(io_unlink("/nonexistent/ferry/x"), -FERR_NOENT);
	ferry_err_restore_also(&e, "removing pack 'b'");
	assert_non_null(strstr(ferry_errmsg(r), "cannot write pack 'a': I/O error (and then removing"
				" pack 'b' failed: "));
	assert_non_null(strstr(ferry_errmsg(r), "/nonexistent/ferry/x"));
	ferry_err_clear();
	ferry_err_save(&e);
	(void)ferry_err(FERR_IO, "second");
	ferry_err_restore_also(&e, "rolling back");
	assert_string_equal(ferry_err_detail(), "rolling back failed: second");
	ferry_err_clear();
}

static void test_io_mkdirs(void **state)
{
	char *dir = tmpdir_new(), *deep = path_join(dir, "a/b//c/d/"), *f = path_join(dir, "file");
	char *c = path_join(dir, "a/b/c/d"), *under = path_join(dir, "file/x/y");
	struct stat st;

	assert_int_equal(io_mkdirs(deep, 0755), 0);
	assert_int_equal(stat(c, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(io_mkdirs(deep, 0755), 0); /* existing is fine */
	assert_int_equal(io_mkdirs(c, 0755), 0);
	assert_int_equal(io_mkdirs(dir, 0755), 0);
	assert_int_equal(io_mkdirs("/", 0755), 0);

	write_file(f, "x", 1);
	assert_int_equal(io_mkdirs(f, 0755), -FERR_EXISTS);
	assert_non_null(strstr(ferry_errmsg(-FERR_EXISTS), f));
	assert_int_equal(io_mkdirs(under, 0755), -FERR_EXISTS);
	assert_int_equal(io_mkdirs("", 0755), -FERR_INVAL);

	/* Relative paths work from the cwd. */
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(io_mkdirs("rel/x", 0700), 0);
	assert_int_equal(chdir(cwd), 0);
	char *rel = path_join(dir, "rel/x");
	assert_int_equal(stat(rel, &st), 0);
	free(rel);

	assert_int_equal(io_fsync_dir(dir), 0);
	assert_int_equal(io_fsync_dir(deep), 0);
	assert_int_equal(io_fsync_dir(f), -FERR_IO); /* ENOTDIR */
	char *missing = path_join(dir, "missing");
	assert_int_equal(io_fsync_dir(missing), -FERR_NOENT);
	free(missing);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(io_fsync_dirfd(dfd), 0);
	close(dfd);
	assert_int_equal(io_fsync_dirfd(dfd), -FERR_IO); /* EBADF */

	ferry_err_clear();
	free(deep);
	free(f);
	free(c);
	free(under);
	rm_rf(dir);
	free(dir);
}

/* ---- misc ---------------------------------------------------------------- */

static void test_parse_size(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "512B", 512 },
		{ "128K", 131072 },
		{ "128k", 131072 },
		{ "16KB", 16384 },
		{ "16kb", 16384 },
		{ "16KiB", 16384 },
		{ "1M", 1048576 },
		{ "1.5G", UINT64_C(1610612736) },
		{ "1.5M", 1572864 },
		{ "0.5K", 512 },
		{ "1.1K", 1126 },  /* 1126.4 rounds down */
		{ "2.5", 2 },
		{ "1T", UINT64_C(1) << 40 },
		{ "1P", UINT64_C(1) << 50 },
		{ "15E", UINT64_C(15) << 60 },
		{ "15.9999999999999999999E", (UINT64_C(16) << 60) - 1 },
		{ "18446744073709551615", UINT64_MAX },
		{ "17179869183G", UINT64_C(17179869183) << 30 },
		{ "007", 7 },
	};
	static const char *inval[] = {
		"", " ", "K", "B", "-1", "-1K", "+1", " 1", "1 ", "1 K", "1.", ".5",
		"1..5", "1.5.5", "1KK", "1Ki", "1KBB", "1X", "0x10", "1e3", "abc", "1,5",
		"nan", "inf", "1Kx",
	};
	static const char *over[] = {
		"18446744073709551616", "99999999999999999999999", "16E", "16384P",
		"17179869184G", "1000000000000000000000K",
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0xdead;
		assert_int_equal(parse_size(ok[i].s, &v), 0);
		if (v != ok[i].v)
			fail_msg("parse_size(\"%s\") = %llu, want %llu", ok[i].s,
				 (unsigned long long)v, (unsigned long long)ok[i].v);
	}
	for (size_t i = 0; i < sizeof(inval) / sizeof(inval[0]); i++) {
		v = 0xdead;
		if (parse_size(inval[i], &v) != -FERR_INVAL)
			fail_msg("parse_size(\"%s\") accepted", inval[i]);
		assert_true(v == 0xdead);
	}
	assert_non_null(strstr(ferry_errmsg(-FERR_INVAL), "1Kx"));
	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		v = 0xdead;
		int r = parse_size(over[i], &v);
		if (r != -FERR_OVERFLOW)
			fail_msg("parse_size(\"%s\") = %d, want overflow", over[i], r);
		assert_true(v == 0xdead);
	}
	ferry_err_clear();
}

static void test_format_nicenum(void **state)
{
	static const struct { uint64_t v; const char *plain, *bytes; } t[] = {
		{ 0, "0", "0B" },
		{ 1, "1", "1B" },
		{ 512, "512", "512B" },
		{ 1023, "1023", "1023B" },
		{ 1024, "1K", "1K" },
		{ 1025, "1.00K", "1.00K" },
		{ 1536, "1.50K", "1.50K" },
		{ 10239, "10.0K", "10.0K" },
		{ 10240, "10K", "10K" },
		{ 102400, "100K", "100K" },
		{ 131072, "128K", "128K" },
		{ 1022977, "999K", "999K" },
		{ 1047552, "1023K", "1023K" },
		{ 1048575, "1024K", "1024K" },
		{ 1048576, "1M", "1M" },
		{ 1572864, "1.50M", "1.50M" },
		{ UINT64_C(1000000000000), "931G", "931G" },
		{ UINT64_C(1) << 40, "1T", "1T" },
		{ UINT64_C(1) << 60, "1E", "1E" },
		{ UINT64_MAX - (UINT64_C(1) << 50) + 1, "16.0E", "16.0E" },
		{ UINT64_MAX, "16.0E", "16.0E" },
	};
	char buf[16];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		format_nicenum(t[i].v, buf, sizeof(buf), 0);
		if (strcmp(buf, t[i].plain))
			fail_msg("format_nicenum(%llu) = \"%s\", want \"%s\"",
				 (unsigned long long)t[i].v, buf, t[i].plain);
		format_nicenum(t[i].v, buf, sizeof(buf), 1);
		if (strcmp(buf, t[i].bytes))
			fail_msg("format_nicenum(%llu, B) = \"%s\", want \"%s\"",
				 (unsigned long long)t[i].v, buf, t[i].bytes);
	}
	/* A short buffer truncates but stays terminated. */
	format_nicenum(1572864, buf, 3, 0);
	assert_string_equal(buf, "1.");
	buf[0] = 'x';
	format_nicenum(1, buf, 0, 0);
	assert_int_equal(buf[0], 'x');

	/* Round trip through parse_size for exact multiples. */
	for (int s = 0; s <= 60; s += 10) {
		uint64_t v = UINT64_C(7) << s, back = 0;

		format_nicenum(v, buf, sizeof(buf), 0);
		assert_int_equal(parse_size(buf, &back), 0);
		assert_true(back == v);
	}
}

static void test_now(void **state)
{
	uint64_t a = ferry_now_ns(), b;
	time_t t = time(NULL);

	assert_true(a / 1000000000u >= (uint64_t)t - 2 && a / 1000000000u <= (uint64_t)t + 2);
	b = ferry_now_ns();
	assert_true(b >= a); /* not guaranteed by REALTIME, but true outside clock jumps */
}

static void test_vec_grow(void **state)
{
	(void)state;
	uint32_t *v = NULL;
	size_t cap = 0, n = 0;
	for (uint32_t i = 0; i < 1000; i++) {
		assert_int_equal(VEC_GROW(v, cap, n, 4, "test"), 0);
		assert_true(cap > n);
		v[n++] = i;
	}
	assert_true(cap >= 1000 && cap <= 2048);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	/* no growth while there is room */
	size_t before = cap;
	assert_int_equal(VEC_GROW(v, cap, cap - 1, 4, "test"), 0);
	assert_int_equal(cap, before);
	/* a size that cannot be allocated leaves the array as it was */
	uint32_t *keep = v;
	size_t huge = SIZE_MAX / 2 + 1;
	assert_int_equal(vec_grow(&v, &huge, huge, sizeof *v, 4, "huge"), -FERR_OVERFLOW);
	assert_ptr_equal(v, keep);
	assert_int_equal(huge, SIZE_MAX / 2 + 1);
	assert_non_null(strstr(ferry_errmsg(-FERR_OVERFLOW), "huge"));
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vec_grow),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_err_detail),
		cmocka_unit_test(test_err_truncation),
		cmocka_unit_test(test_errno_code),
		cmocka_unit_test(test_err_errno),
		cmocka_unit_test(test_err_thread_local),
		cmocka_unit_test(test_arith),
		cmocka_unit_test(test_le),
		cmocka_unit_test(test_fbuf_limit),
		cmocka_unit_test(test_fbuf_printf),
		cmocka_unit_test(test_fbuf_misc),
		cmocka_unit_test(test_hash_known),
		cmocka_unit_test(test_hash_stream),
		cmocka_unit_test(test_hash_hex),
		cmocka_unit_test(test_random_ct),
		cmocka_unit_test(test_io_fd_roundtrip),
		cmocka_unit_test(test_io_pipe_grow),
		cmocka_unit_test(test_io_pipe_short),
		cmocka_unit_test(test_io_eintr),
		cmocka_unit_test(test_io_atomic),
		cmocka_unit_test(test_io_read_file),
		cmocka_unit_test(test_io_mkdirs),
		cmocka_unit_test(test_io_exact_modes),
		cmocka_unit_test(test_err_save),
		cmocka_unit_test(test_err_restore_also),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_format_nicenum),
		cmocka_unit_test(test_now),
	};

	if (ferry_lib_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
