/* tests/unit/test_dirstack.c — lib/dirstack.c: bounded open fds whatever
 * the depth, reopening by ".." with the st_dev/st_ino check, and what a
 * tree that moves under the walk does in strict and lenient mode. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/lib.h"

#define LEVELS 40

static char top[64];

/* The process's open fds. */
static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and opendir's own */
}

/* top/d/d/... LEVELS deep; each directory also holds "x" (a directory). */
static int setup(void **state)
{
	snprintf(top, sizeof top, "/tmp/ferry-test-dirstack-XXXXXX");
	assert_non_null(mkdtemp(top));
	int fd = open(top, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < LEVELS; i++) {
		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		assert_int_equal(mkdirat(fd, "x", 0755), 0);
		int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(sub >= 0);
		close(fd);
		fd = sub;
	}
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static int evictions;
static int count_evictions(void *arg)
{
	evictions++;
	return 0;
}

/* Pushes top/d/... n levels (the bottom included: n + 1 levels). */
static void push_chain(struct dirstack *s, int n)
{
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(dirstack_push(s, fd, NULL), 0);
	for (int i = 0; i < n; i++) {
		fd = openat(dirstack_fd(s), "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(dirstack_push(s, fd, "d"), 0);
	}
}

static void same_as(int fd, const struct stat *want)
{
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(sb.st_dev == want->st_dev && sb.st_ino == want->st_ino);
}

static void test_bounded(void **state)
{
	struct dirstack s;
	struct stat lv[LEVELS + 1];
	int base = open_fds(), most = 0;
	dirstack_init(&s, 4, 1);
	s.before_close = count_evictions;
	evictions = 0;
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &lv[0]), 0);
	assert_int_equal(dirstack_push(&s, fd, NULL), 0);
	for (int i = 1; i <= LEVELS; i++) {
		fd = openat(dirstack_fd(&s), "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &lv[i]), 0);
		assert_int_equal(dirstack_push(&s, fd, "d"), 0);
		if (open_fds() - base > most)
			most = open_fds() - base;
	}
	/* the bottom and 4 more, whatever the depth */
	assert_int_equal(most, 5);
	assert_int_equal(evictions, LEVELS - 4);
	assert_int_equal(dirstack_depth(&s), LEVELS + 1);
	/* back up: every level is the directory it was, fds stay bounded */
	for (int i = LEVELS; i >= 1; i--) {
		same_as(dirstack_fd(&s), &lv[i]);
		assert_int_equal(dirstack_open_parent(&s), 0);
		assert_true(open_fds() - base <= 6);
		dirstack_pop(&s);
	}
	same_as(dirstack_fd(&s), &lv[0]);
	/* and down again past the window */
	for (int i = 1; i <= LEVELS; i++) {
		fd = openat(dirstack_fd(&s), "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(dirstack_push(&s, fd, "d"), 0);
		assert_true(open_fds() - base <= 5);
	}
	dirstack_release(&s);
	assert_int_equal(open_fds(), base);
}

/* Moves top/d^k (k levels down) to top/moved, and back. */
static void move_level(int k, int back)
{
	char from[4096], to[4096];
	int n = snprintf(from, sizeof from, "%s", top);
	for (int i = 0; i < k; i++)
		n += snprintf(from + n, sizeof from - (size_t)n, "/d");
	snprintf(to, sizeof to, "%s/moved", top);
	assert_int_equal(back ? rename(to, from) : rename(from, to), 0);
}

static void test_moved_strict(void **state)
{
	struct dirstack s;
	dirstack_init(&s, 2, 1);
	push_chain(&s, 20);
	/* level 10 moves out from under level 9, whose fd is closed by now */
	move_level(10, 0);
	int r = 0;
	while (dirstack_depth(&s) > 1 && (r = dirstack_open_parent(&s)) == 0)
		dirstack_pop(&s);
	assert_int_equal(r, -FERR_IO);
	assert_non_null(strstr(ferry_errmsg(r), "moved while being walked"));
	assert_int_equal(dirstack_depth(&s), 11); /* stopped at level 10 */
	dirstack_release(&s);
	move_level(10, 1);
}

static void test_moved_lenient(void **state)
{
	struct dirstack s;
	struct stat l9;
	char p[4096];
	int n = snprintf(p, sizeof p, "%s", top);
	for (int i = 0; i < 9; i++)
		n += snprintf(p + n, sizeof p - (size_t)n, "/d");
	assert_int_equal(stat(p, &l9), 0);
	dirstack_init(&s, 2, 0);
	push_chain(&s, 20);
	move_level(10, 0);
	while (dirstack_depth(&s) > 10) {
		assert_int_equal(dirstack_open_parent(&s), 0);
		dirstack_pop(&s);
	}
	/* level 9 found again where it was, by names from the bottom, and
	 * the move counted (capture warns) */
	same_as(dirstack_fd(&s), &l9);
	assert_int_equal(s.moved, 1);
	dirstack_release(&s);
	move_level(10, 1);

	/* level 10 moved out, and level 9 replaced by another directory of
	 * the same name: neither way finds it, it is gone */
	dirstack_init(&s, 2, 0);
	push_chain(&s, 20);
	char old[4096], side[4096];
	snprintf(old, sizeof old, "%s", p);
	snprintf(side, sizeof side, "%s/side", top);
	move_level(10, 0);
	assert_int_equal(rename(old, side), 0);
	assert_int_equal(mkdir(old, 0755), 0);
	int r = 0;
	while (dirstack_depth(&s) > 1 && (r = dirstack_open_parent(&s)) == 0)
		dirstack_pop(&s);
	assert_int_equal(r, -FERR_IO);
	assert_non_null(strstr(ferry_errmsg(r), "replaced while being walked"));
	/* the level stays closed; the walk can go on above it */
	dirstack_pop(&s);
	assert_int_equal(dirstack_fd(&s), -1);
	assert_int_equal(dirstack_open_parent(&s), 0);
	dirstack_release(&s);
	assert_int_equal(rmdir(old), 0);
	assert_int_equal(rename(side, old), 0);
	move_level(10, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_moved_strict),
		cmocka_unit_test(test_moved_lenient),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
