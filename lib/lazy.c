/* lib/lazy.c — opening a library on first use (lib.h: lazy_lib). The
 * tables of functions are their users' (net/lazy.c, lib/arc.c). */
#include <dlfcn.h>
#include <stdio.h>

#include "lib.h"

void *lazy_open(struct lazy_lib *L)
{
	void *h = dlopen(L->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(L->msg, sizeof L->msg, "cannot load %s: %s", L->soname,
			 e ? e : "dlopen failed");
		L->rc = -FERR_UNSUPPORTED;
	}
	return h;
}

void *lazy_sym(struct lazy_lib *L, void *h, const char *name)
{
	void *f = dlsym(h, name);
	if (!f) {
		snprintf(L->msg, sizeof L->msg, "%s has no %s (older than ferry's build)",
			 L->soname, name);
		L->rc = -FERR_UNSUPPORTED;
	}
	return f;
}

int lazy_once(struct lazy_lib *L, void (*load)(void), const char *what)
{
	pthread_once(&L->once, load);
	if (L->rc)
		return ferry_err(-L->rc, "%s: %s", what, L->msg);
	return 0;
}
