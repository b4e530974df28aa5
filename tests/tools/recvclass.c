/* tests/tools/recvclass.c — receives standard input as `ferry recv
 * [-n] TARGET` does (recv_run, default options) and prints how it ended,
 * so a test can check the class of a refusal, which the command's one
 * line does not show:
 *
 *   recvclass [-n] TARGET < STREAM
 *
 * prints "ok" and exits 0 when the stream is received (checked, with -n),
 * else one line "CLASS<TAB>DETAIL" (CLASS: the error's FERR_* name in
 * lower case: corrupt, truncated, limit, unsupported, ...) and exits 1;
 * 2 on usage errors or when the pool cannot be opened. */
#include <stdio.h>
#include <string.h>

#include "recv/recv.h"

static const char *const class_names[FERR__COUNT] = {
	[FERR_OK] = "ok",
#define NAME_OF(name, text) [FERR_##name] = #name,
	FERRY_ERRORS(NAME_OF)
#undef NAME_OF
};

int main(int argc, char **argv)
{
	struct store_pool *p = NULL;
	struct stream_source_fd src;
	struct recv_opts o;
	char cls[32];
	int r, dry = argc == 3 && !strcmp(argv[1], "-n");

	if (argc != 2 + dry) {
		fprintf(stderr, "usage: recvclass [-n] TARGET < STREAM\n");
		return 2;
	}
	const char *target = argv[1 + dry];
	if (ferry_lib_init() < 0 || (r = store_pool_open_for(target, 0, &p)) < 0) {
		fprintf(stderr, "recvclass: cannot open the pool of '%s'\n", target);
		return 2;
	}
	memset(&o, 0, sizeof o);
	o.flags = dry ? RECV_DRYRUN : 0;
	stream_source_fd_init(&src, 0);
	r = recv_run(p, target, &src.base, &o, NULL);
	if (r == 0) {
		store_pool_close(p);
		printf("ok\n");
		return 0;
	}
	/* the detail is kept before the pool closes (which may record its own) */
	char detail[1024];
	int c = -r;
	snprintf(detail, sizeof detail, "%s", ferry_errmsg(r));
	snprintf(cls, sizeof cls, "%s",
		 c > 0 && c < FERR__COUNT && class_names[c] ? class_names[c] : "unknown");
	for (char *q = cls; *q; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	store_pool_close(p);
	printf("%s\t%s\n", cls, detail);
	return 1;
}
