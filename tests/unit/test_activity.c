/* tests/unit/test_activity.c — store/activity.c: the names of activity
 * records stay unique when threads of one process ask for them at once
 * (a server's requests open pools concurrently; ThreadSanitizer found the
 * number taken with a plain ++, which loses increments and repeats names). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/internal.h"

#define NTHREADS 4
#define PER_THREAD 200000

struct taker {
	unsigned *seen; /* the numbers this thread got */
};

static void *take(void *arg)
{
	struct taker *t = arg;
	char name[48];
	for (unsigned i = 0; i < PER_THREAD; i++) {
		act_name_next(name, sizeof name);
		const char *dot = strchr(name, '.');
		t->seen[i] = dot ? (unsigned)strtoul(dot + 1, NULL, 10) : UINT32_MAX;
	}
	return NULL;
}

static void test_names_unique(void **state)
{
	struct taker tk[NTHREADS];
	pthread_t th[NTHREADS];
	char first[48], prefix[32];
	(void)state;
	/* the names are PID.N, counted from where the process is */
	act_name_next(first, sizeof first);
	snprintf(prefix, sizeof prefix, "%ld.", (long)getpid());
	assert_true(!strncmp(first, prefix, strlen(prefix)));
	unsigned base = (unsigned)strtoul(first + strlen(prefix), NULL, 10) + 1;
	for (int i = 0; i < NTHREADS; i++) {
		tk[i].seen = calloc(PER_THREAD, sizeof *tk[i].seen);
		assert_non_null(tk[i].seen);
		assert_int_equal(pthread_create(&th[i], NULL, take, &tk[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	/* every number from base on, each exactly once */
	size_t total = (size_t)NTHREADS * PER_THREAD, dups = 0, outside = 0;
	unsigned char *hit = calloc(total, 1);
	assert_non_null(hit);
	for (int i = 0; i < NTHREADS; i++) {
		for (unsigned k = 0; k < PER_THREAD; k++) {
			unsigned v = tk[i].seen[k];
			if (v < base || v - base >= total)
				outside++;
			else if (hit[v - base]++)
				dups++;
		}
		free(tk[i].seen);
	}
	free(hit);
	if (dups || outside)
		print_error("%zu repeated and %zu unexpected record numbers\n", dups, outside);
	assert_int_equal(dups, 0);
	assert_int_equal(outside, 0);
	act_name_next(first, sizeof first);
	assert_int_equal((unsigned)strtoul(first + strlen(prefix), NULL, 10), base + total);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_unique),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
