/* cli/heap.c — the heap on transparent huge pages, for the commands that
 * receive (recv, serve). Every first touch of a 4 KiB page is a fault,
 * and on a VM a fault is dear: a kept receive of bench/recv's stream took
 * 7,900 of them, on 2 MiB pages about 800 and some 10 % less time; a full
 * receive of 1,000,000 files 14-18 % less, its peak RSS 59.6 -> 61.3 MiB
 * (docs/notes/recv.md, session 24); a 0.1 % incremental of 1,000,000
 * files 12,765 -> 1,500 faults, 0.67 -> 0.59 s, 43.7 -> 52 MiB
 * (docs/notes/scale.md, session 28). Not for a capture, whose sparse
 * 1 MiB job buffers cost 15-18 MiB of RSS on them for no time. Where the
 * kernel has huge pages "never" or malloc is not glibc's heap (ASan),
 * nothing changes: all of it is advice. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

#define HUGE_PAGE ((uintptr_t)2 << 20)

/* where the first advised range starts: cli_heap_advise goes on from it */
static uintptr_t heap_start;

void cli_heap_huge(size_t grow)
{
	mallopt(M_MMAP_THRESHOLD, (int)(2 * grow));
	mallopt(M_TOP_PAD, (int)grow);
	mallopt(M_TRIM_THRESHOLD, (int)(4 * grow));
	void *b0 = sbrk(0), *p = malloc(grow), *b1 = sbrk(0);
	if (p && b0 != (void *)-1 && b1 != (void *)-1) {
		uintptr_t s = ((uintptr_t)b0 + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
		if (!heap_start)
			heap_start = s;
		cli_heap_advise();
	}
	free(p);
}

void cli_heap_advise(void)
{
	void *b = sbrk(0);
	if (!heap_start || b == (void *)-1)
		return;
	uintptr_t e = (uintptr_t)b & ~(HUGE_PAGE - 1);
	if (e > heap_start)
		(void)madvise((void *)heap_start, e - heap_start, MADV_HUGEPAGE);
}
