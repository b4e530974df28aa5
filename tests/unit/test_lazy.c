/* tests/unit/test_lazy.c — net/lazy.c and lib/arc.c when their library is
 * not there: the loaders are compiled here with sonames of their own, one
 * that no system has and one of a library without the functions (libz), so
 * the two failures a user can meet are seen: a clear one-line error, the
 * same on every call, and no table filled. (Loading the real libraries is
 * what every HTTP and archive test of tests/cli does.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define NET_CURL_SONAME "libferry-test-no-such-library.so.0"
#define NET_MHD_SONAME "libz.so.1"
/* net/lazy.c itself, under those names (this object's definitions are
 * the ones linked: libferry.a's lazy.o is not pulled in) */
#include "../../net/lazy.c"
#define ARC_SONAME "libferry-test-no-such-archive.so.0"
#include "../../lib/arc.c"

static void test_missing_library(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) { /* the first call's result, again */
		ferry_err_clear();
		assert_int_equal(net_curl_load(), -FERR_UNSUPPORTED);
		const char *m = ferry_errmsg(-FERR_UNSUPPORTED);
		assert_non_null(strstr(m, "libcurl: cannot load libferry-test-no-such-library.so.0"));
		assert_null(strchr(m, '\n'));
	}
	assert_null(net_curl.easy_init);
	assert_null(net_curl.slist_free_all);
}

static void test_missing_function(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		ferry_err_clear();
		assert_int_equal(net_mhd_load(), -FERR_UNSUPPORTED);
		assert_string_equal(ferry_errmsg(-FERR_UNSUPPORTED),
				    "libmicrohttpd: libz.so.1 has no MHD_start_daemon "
				    "(older than ferry's build)");
	}
	assert_null(net_mhd.stop_daemon);
}

static void test_missing_archive(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		ferry_err_clear();
		assert_int_equal(arc_load(), -FERR_UNSUPPORTED);
		const char *m = ferry_errmsg(-FERR_UNSUPPORTED);
		assert_non_null(strstr(m, "libarchive: cannot load libferry-test-no-such-archive.so.0"));
		assert_null(strchr(m, '\n'));
	}
	assert_null(arc.read_new);
	assert_null(arc.write_new);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_function),
		cmocka_unit_test(test_missing_archive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
