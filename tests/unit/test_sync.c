/* tests/unit/test_sync.c — sync/'s pure parts: destinations, the
 * restricted shell's command check, restic's retention rules, the names
 * of holds and bookmarks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "sync/sync.h"

static void test_dest_parse(void **state)
{
	struct sync_dest d;
	(void)state;
	assert_int_equal(sync_dest_parse("bk/host1/home", &d), 0);
	assert_int_equal(d.kind, SYNC_DEST_LOCAL);
	assert_string_equal(d.dataset, "bk/host1/home");
	assert_string_equal(d.prefix, "");
	assert_int_equal(sync_dest_parse("ssh://me@bk.example:2222/bk/h", &d), 0);
	assert_int_equal(d.kind, SYNC_DEST_SSH);
	assert_string_equal(d.user, "me");
	assert_string_equal(d.host, "bk.example");
	assert_int_equal(d.port, 2222);
	assert_string_equal(d.dataset, "bk/h");
	assert_string_equal(d.prefix, "ssh://me@bk.example:2222/");
	assert_int_equal(sync_dest_parse("ssh://[::1]/bk", &d), 0);
	assert_string_equal(d.host, "::1");
	assert_string_equal(d.prefix, "ssh://[::1]/");
	assert_int_equal(sync_dest_parse("https://h/bk/x", &d), 0);
	assert_int_equal(d.kind, SYNC_DEST_HTTP);
	assert_string_equal(d.dataset, "bk/x");
	assert_string_equal(d.prefix, "https://h/");
	assert_int_equal(sync_dest_parse("http://127.0.0.1:7300/bk/a%20b", &d), 0);
	assert_string_equal(d.dataset, "bk/a b");
	assert_string_equal(d.prefix, "http://127.0.0.1:7300/");
	static const char *const bad[] = {
		"ssh://h", "ssh:///bk", "ssh://h:/bk", "ssh://h:0/bk", "ssh://h:65536/bk",
		"ssh://-oProxyCommand=x/bk", "ssh://h;x/bk", "ssh://@h/bk", "ssh://h/bk/../x",
		"ftp://h/bk", "bk/", "/bk", "bk@x", "ssh://h/", "ssh://[::1/bk",
		"https://h/", "https://h", "https://h/bk/../x", "https://h/bk?x=1", "https://h/bk@s",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = sync_dest_parse(bad[i], &d);
		if (r != -FERR_NAME)
			fail_msg("'%s' gave %d", bad[i], r);
	}
}

/* Runs the check; returns its result and, when it passed, argv joined by '|'. */
static int shell(const char *cmd, const char *scope, unsigned flags, char *out, size_t n)
{
	char **av = NULL;
	int ac = 0;
	int r = sync_shell_parse(cmd, scope, flags, &av, &ac);
	out[0] = 0;
	if (r == 0) {
		size_t o = 0;
		for (int i = 0; i < ac; i++)
			o += (size_t)snprintf(out + o, n - o, "%s%s", i ? "|" : "", av[i]);
		assert_null(av[ac]);
		sync_shell_free(av, ac);
	}
	return r;
}

static void test_shell(void **state)
{
	char got[1024];
	(void)state;
	/* what a sync sends, quoted as sync/dest.c quotes it */
	assert_int_equal(shell("ferry recv -s -v -o 'user:x=a b' -x 'ferry:keep-daily' 'bk/h1/my home'",
			       "bk/h1", SYNC_SHELL_APPEND_ONLY, got, sizeof got), 0);
	assert_string_equal(got, "recv|-s|-v|-o|user:x=a b|-x|ferry:keep-daily|bk/h1/my home");
	assert_int_equal(shell("ferry sync-state -r 'bk/h1'", "bk/h1", 0, got, sizeof got), 0);
	assert_string_equal(got, "sync-state|-r|bk/h1");
	assert_int_equal(shell("/usr/bin/ferry get -H -o value receive_resume_token bk/h1/x", "bk/h1",
			       SYNC_SHELL_READ_ONLY, got, sizeof got), 0);
	assert_string_equal(got, "get|-H|-o|value|receive_resume_token|bk/h1/x");
	assert_int_equal(shell("ferry list \"bk/h1/a\\\"b\"", "bk/h1", 0, got, sizeof got), -FERR_PERM);
	assert_int_equal(shell("ferry list bk/h1/a\\ b", "bk/h1", 0, got, sizeof got), 0);
	assert_string_equal(got, "list|bk/h1/a b");
	/* a space is a name character, not a separator of the scope */
	assert_int_equal(shell("ferry list 'bk/h1 x'", "bk/h1", 0, got, sizeof got), -FERR_PERM);
	assert_int_equal(shell("ferry send -c -i @a bk/h1/x@b", "bk/h1", 0, got, sizeof got), 0);
	assert_int_equal(shell("ferry recv -F bk/h1/x", "bk/h1", 0, got, sizeof got), 0);
	assert_int_equal(shell("ferry recv -A bk/h1/x", "bk/h1", SYNC_SHELL_APPEND_ONLY, got, sizeof got), 0);
	static const struct {
		const char *cmd;
		unsigned flags;
		const char *why;
	} refused[] = {
		{"ferry destroy -r bk/h1", 0, "'ferry destroy' is not allowed"},
		{"ferry recv -F bk/h1/x", SYNC_SHELL_APPEND_ONLY, "append-only"},
		{"ferry recv -sF bk/h1/x", SYNC_SHELL_APPEND_ONLY, "append-only"},
		{"ferry recv -s bk/h1/x", SYNC_SHELL_READ_ONLY, "read-only"},
		{"ferry list bk", 0, "outside"},
		{"ferry list bk/h10", 0, "outside"},
		{"ferry list bk/h2/x", 0, "outside"},
		{"ferry get all bk/h1 bk/h2", 0, "outside"},
		{"ferry send -i bk/h2@a bk/h1/x@b", 0, "outside"},
		{"ferry list", 0, "needs its dataset operands"},
		{"ferry recv", 0, "needs its dataset operands"},
		{"ferry recv bk/h1/a bk/h1/b", 0, "needs its dataset operands"},
		{"ferry list bk/h1; id", 0, "shell syntax"},
		{"ferry list bk/h1 | id", 0, "shell syntax"},
		{"ferry list bk/h1 && id", 0, "shell syntax"},
		{"ferry list `id`", 0, "shell syntax"},
		{"ferry list $HOME", 0, "shell syntax"},
		{"ferry list \"$HOME\"", 0, "expansion"},
		{"ferry list bk/h1 > /etc/passwd", 0, "shell syntax"},
		{"ferry list 'bk/h1", 0, "unterminated"},
		{"ferry list bk/h1\\", 0, "backslash"},
		{"ferry list --exec=x bk/h1", 0, "not allowed"},
		{"ferry recv -d bk/h1", 0, "not allowed"},
		{"ferry recv -o", 0, "needs a value"},
		{"ferry list bk/h1/../h2", 0, "not a dataset"},
		{"sh -c id", 0, "only ferry"},
		{"ferry", 0, "only ferry"},
		{"", 0, "no interactive shell"},
		{"ferry send -t 1-bogus", 0, "not a resume token"},
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		int r = shell(refused[i].cmd, "bk/h1", refused[i].flags, got, sizeof got);
		if (r != -FERR_PERM || !strstr(ferry_errmsg(r), refused[i].why))
			fail_msg("'%s': %d '%s' (want '%s')", refused[i].cmd, r, ferry_errmsg(r),
				 refused[i].why);
	}
	assert_int_equal(sync_shell_parse(NULL, "bk", 0, &(char **){NULL}, &(int){0}), -FERR_PERM);
}

static uint64_t at(int y, int mo, int d, int h, int mi)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	return (uint64_t)timegm(&tm) * 1000000000u;
}

static void test_keep_rules(void **state)
{
	(void)state;
	/* newest first */
	uint64_t t[] = {
		at(2024, 3, 10, 12, 30), at(2024, 3, 10, 12, 0), at(2024, 3, 10, 11, 0),
		at(2024, 3, 9, 23, 0),   at(2024, 3, 9, 1, 0),   at(2024, 3, 1, 0, 0),
		at(2024, 2, 29, 0, 0),   at(2023, 12, 31, 0, 0), at(2023, 1, 1, 0, 0),
	};
	size_t n = sizeof t / sizeof t[0];
	unsigned why[16];
	struct sync_keep k;

	memset(&k, 0, sizeof k);
	k.hourly = 2;
	sync_keep_apply(&k, t, n, why);
	/* 12:30 (hour 12), 11:00 (hour 11); 12:00 shares 12:30's hour */
	unsigned want_h[] = {SYNC_KEEP_HOURLY, 0, SYNC_KEEP_HOURLY, 0, 0, 0, 0, 0, 0};
	assert_memory_equal(why, want_h, sizeof want_h);

	memset(&k, 0, sizeof k);
	k.daily = 3;
	sync_keep_apply(&k, t, n, why);
	unsigned want_d[] = {SYNC_KEEP_DAILY, 0, 0, SYNC_KEEP_DAILY, 0, SYNC_KEEP_DAILY, 0, 0, 0};
	assert_memory_equal(why, want_d, sizeof want_d);

	/* counts left at the oldest: it is kept too (restic >= 0.14) */
	memset(&k, 0, sizeof k);
	k.monthly = 10;
	sync_keep_apply(&k, t, n, why);
	unsigned want_m[] = {SYNC_KEEP_MONTHLY, 0, 0, 0, 0, 0, SYNC_KEEP_MONTHLY,
			     SYNC_KEEP_MONTHLY, SYNC_KEEP_MONTHLY};
	assert_memory_equal(why, want_m, sizeof want_m);

	memset(&k, 0, sizeof k);
	k.last = 2;
	k.yearly = -1;
	sync_keep_apply(&k, t, n, why);
	unsigned want_l[] = {SYNC_KEEP_LAST | SYNC_KEEP_YEARLY, SYNC_KEEP_LAST, 0, 0, 0, 0, 0,
			     SYNC_KEEP_YEARLY, SYNC_KEEP_YEARLY};
	assert_memory_equal(why, want_l, sizeof want_l);

	/* ISO weeks: 2024-03-10 is a Sunday (week 10), 03-09 Saturday (week
	 * 10), 03-01 Friday (week 9), 02-29 Thursday (week 9) */
	memset(&k, 0, sizeof k);
	k.weekly = 2;
	sync_keep_apply(&k, t, n, why);
	unsigned want_w[] = {SYNC_KEEP_WEEKLY, 0, 0, 0, 0, SYNC_KEEP_WEEKLY, 0, 0, 0};
	assert_memory_equal(why, want_w, sizeof want_w);

	/* within: newer than the newest minus the duration, strictly; one
	 * month back from March 10 is February 10 */
	memset(&k, 0, sizeof k);
	assert_int_equal(sync_keep_within_parse("1m", &k), 0);
	sync_keep_apply(&k, t, n, why);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(why[i] != 0, i <= 6);
	memset(&k, 0, sizeof k);
	assert_int_equal(sync_keep_within_parse("1m2d1m", &k), -FERR_INVAL); /* each unit once */
	assert_int_equal(sync_keep_within_parse("1d11h", &k), 0);
	sync_keep_apply(&k, t, n, why);
	/* 12:30 less 1d11h: 03-09 01:30; 03-09 01:00 is older */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(why[i] != 0, i <= 3);
	/* month arithmetic normalises as Go's AddDate: 2023-03-31 less a month
	 * is February 31st, that is March 3rd */
	uint64_t u[] = {at(2023, 3, 31, 0, 0), at(2023, 3, 3, 0, 0) + 1, at(2023, 3, 3, 0, 0),
			at(2023, 3, 2, 0, 0)};
	memset(&k, 0, sizeof k);
	assert_int_equal(sync_keep_within_parse("1m", &k), 0);
	sync_keep_apply(&k, u, 4, why);
	assert_true(why[0] && why[1] && !why[2] && !why[3]);
	char buf[64];
	sync_keep_within_format(&k, buf, sizeof buf);
	assert_string_equal(buf, "1m");
	static const char *const bad[] = {"", "y", "1", "1w", "1y1y", "-1d", "1d 2h", "9999999d"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(sync_keep_within_parse(bad[i], &k), -FERR_INVAL);
	memset(&k, 0, sizeof k);
	assert_true(sync_keep_empty(&k));
	sync_keep_why_format(SYNC_KEEP_HOURLY | SYNC_KEEP_HELD | SYNC_KEEP_NEWEST, &k, buf, sizeof buf);
	assert_string_equal(buf, "hourly snapshot, held, newest snapshot");
}

static void test_names(void **state)
{
	char tag[STORE_HOLD_TAG_MAX + 1], mark[STORE_NAME_MAX + 1], ds[STORE_NAME_MAX + 1];
	char dest[SYNC_DEST_MAX], full[2 * STORE_NAME_MAX + 2];
	(void)state;
	sync_hold_tag("ssh://h/bk/x", tag, sizeof tag);
	assert_string_equal(tag, "ferry-sync:ssh://h/bk/x");
	assert_int_equal(store_hold_tag_check(tag), 0);
	sync_mark_name("tank/a", "ssh://h/bk/x", mark, sizeof mark);
	assert_true(!strncmp(mark, "ferry-sync_ssh___h_bk_x_", 24) && strlen(mark) == 32);
	/* long names still make valid, distinct tags and bookmarks */
	memset(ds, 'd', sizeof ds - 1);
	ds[0] = 't';
	ds[4] = '/';
	ds[sizeof ds - 1] = 0;
	ds[200] = 0;
	memset(dest, 'x', sizeof dest - 1);
	dest[sizeof dest - 1] = 0;
	sync_hold_tag(dest, tag, sizeof tag);
	assert_int_equal(store_hold_tag_check(tag), 0);
	sync_mark_name(ds, dest, mark, sizeof mark);
	snprintf(full, sizeof full, "%s#%s", ds, mark);
	assert_int_equal(store_name_check(full, STORE_NAME_BOOKMARK), 0);
	char mark2[STORE_NAME_MAX + 1];
	dest[100] = 'y';
	sync_mark_name(ds, dest, mark2, sizeof mark2);
	assert_string_not_equal(mark, mark2);
}

int main(void)
{
	if (ferry_lib_init() < 0)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dest_parse),
		cmocka_unit_test(test_shell),
		cmocka_unit_test(test_keep_rules),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
