/* cli/progress.c — the one redrawn status line of long work on stderr,
 * when stderr is a terminal and -q was not given: lib/progress.c's text,
 * redrawn at most five times a second, ended with a newline when the
 * command ends so the shell prompt starts on a line of its own. */
#include <stdio.h>
#include <unistd.h>

#include "cli.h"

void cli_meter_start(struct cli_meter *m, const char *what, uint64_t total, int quiet)
{
	m->on = !quiet && isatty(2);
	m->drawn = 0;
	m->last = 0;
	progress_init(&m->p, what, total, ferry_now_ns());
}

void cli_meter_retarget(struct cli_meter *m, const char *what, uint64_t total)
{
	/* a new phase: its own figures and rate; the line stays where it is */
	progress_init(&m->p, what, total, ferry_now_ns());
}

static void draw(struct cli_meter *m)
{
	char line[512];
	progress_format(&m->p, line, sizeof line);
	/* \r and erase to the end: a shorter line leaves nothing behind */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	m->drawn = 1;
}

void cli_meter_update(struct cli_meter *m, uint64_t bytes, uint64_t files)
{
	if (!m->on)
		return;
	uint64_t now = ferry_now_ns();
	progress_update(&m->p, bytes, files, now);
	if (m->drawn && now - m->last < 200000000ull)
		return;
	m->last = now;
	draw(m);
}

void cli_meter_total(struct cli_meter *m, uint64_t total)
{
	m->p.total = total;
}

void cli_meter_clear(struct cli_meter *m)
{
	if (m->on && m->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		m->drawn = 0;
	}
}

void cli_meter_end(struct cli_meter *m)
{
	if (!m->on || !m->drawn)
		return;
	progress_update(&m->p, m->p.bytes, m->p.files, ferry_now_ns());
	draw(m);
	fputc('\n', stderr);
	m->on = 0;
}
