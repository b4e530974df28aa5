/* lib/arc.c — libarchive's table (arc.h), filled by the first arc_load. */
#include "arc.h"
#include "lib.h"

/* The soname the build linked against (GNUmakefile passes it); this is
 * Debian 12's. */
#ifndef ARC_SONAME
#define ARC_SONAME "libarchive.so.13"
#endif

#define LAZY_ARC(n) LAZY_SET("archive_", n)

struct arc_api arc;
static struct lazy_lib arc_lib = LAZY_LIB_INIT(ARC_SONAME);

static void arc_fill(void)
{
	struct lazy_lib *L = &arc_lib;
	struct arc_api *api = &arc;
	void *h = lazy_open(L);
	if (!h)
		return;
	ARC_FNS(LAZY_ARC)
}

int arc_load(void)
{
	return lazy_once(&arc_lib, arc_fill, "libarchive");
}
