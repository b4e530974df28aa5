/* net/lazy.c — libcurl and libmicrohttpd, loaded by the first command that
 * uses them. Linked in, they and the libraries they bring (GnuTLS, Kerberos,
 * LDAP, ...: 39 of ferry's 49) cost every command about 10 ms of start-up,
 * `ferry list` as much as `ferry serve`. The tables hold the functions net/
 * calls, typed from the libraries' own headers, resolved once per process. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "lazy.h"

/* The sonames the build linked against (GNUmakefile passes them); these
 * are Debian 12's. */
#ifndef NET_CURL_SONAME
#define NET_CURL_SONAME "libcurl.so.4"
#endif
#ifndef NET_MHD_SONAME
#define NET_MHD_SONAME "libmicrohttpd.so.12"
#endif

struct lazy_lib {
	pthread_once_t once;
	const char *soname;
	int rc;
	char msg[512];
};

/* Opens L's library; NULL with the failure recorded in L. */
static void *lazy_open(struct lazy_lib *L)
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

/* The address of function NAME in h; NULL with the failure recorded in L
 * (a library older than the headers ferry was built with). */
static void *lazy_sym(struct lazy_lib *L, void *h, const char *name)
{
	void *f = dlsym(h, name);
	if (!f) {
		snprintf(L->msg, sizeof L->msg, "%s has no %s (older than ferry's build)",
			 L->soname, name);
		L->rc = -FERR_UNSUPPORTED;
	}
	return f;
}

/* Runs LOAD for L once per process; its result, the message naming WHAT. */
static int lazy_once(struct lazy_lib *L, void (*load)(void), const char *what)
{
	pthread_once(&L->once, load);
	if (L->rc)
		return ferry_err(-L->rc, "%s: %s", what, L->msg);
	return 0;
}

/* Fills one member of API from h; leaves the loader at the first miss (the
 * handle stays open: nothing will use it, and it costs no more). POSIX
 * makes dlsym's pointer callable as the function's type. */
#define LAZY_SET(prefix, n)                                                  \
	if (!(api->n = (__typeof__(api->n))lazy_sym(L, h, prefix #n)))      \
		return;
#define LAZY_CURL(n) LAZY_SET("curl_", n)
#define LAZY_MHD(n) LAZY_SET("MHD_", n)

struct net_curl_api net_curl;
static struct lazy_lib curl_lib = { PTHREAD_ONCE_INIT, NET_CURL_SONAME, 0, "" };

static void curl_load(void)
{
	struct lazy_lib *L = &curl_lib;
	struct net_curl_api *api = &net_curl;
	void *h = lazy_open(L);
	if (!h)
		return;
	NET_CURL_FNS(LAZY_CURL)
}

int net_curl_load(void)
{
	return lazy_once(&curl_lib, curl_load, "libcurl");
}

struct net_mhd_api net_mhd;
static struct lazy_lib mhd_lib = { PTHREAD_ONCE_INIT, NET_MHD_SONAME, 0, "" };

static void mhd_load(void)
{
	struct lazy_lib *L = &mhd_lib;
	struct net_mhd_api *api = &net_mhd;
	void *h = lazy_open(L);
	if (!h)
		return;
	NET_MHD_FNS(LAZY_MHD)
}

int net_mhd_load(void)
{
	return lazy_once(&mhd_lib, mhd_load, "libmicrohttpd");
}
