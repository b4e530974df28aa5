/* cli/report.c — one-line messages on stderr; the only place that maps
 * library errors to exit codes. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

int cli_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ferry: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_fail(int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ferry: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, ": %s\n", ferry_errmsg(r));
	va_end(ap);
	return EXIT_FAIL;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ferry: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
