/* net/lazy.c — libcurl and libmicrohttpd, loaded by the first command that
 * uses them. Linked in, they and the libraries they bring (GnuTLS, Kerberos,
 * LDAP, ...: 39 of ferry's 49) cost every command about 10 ms of start-up,
 * `ferry list` as much as `ferry serve`. The tables hold the functions net/
 * calls, typed from the libraries' own headers, resolved once per process
 * (the loading itself: lib/lazy.c). */

#include "lazy.h"

/* The sonames the build linked against (GNUmakefile passes them); these
 * are Debian 12's. */
#ifndef NET_CURL_SONAME
#define NET_CURL_SONAME "libcurl.so.4"
#endif
#ifndef NET_MHD_SONAME
#define NET_MHD_SONAME "libmicrohttpd.so.12"
#endif

#define LAZY_CURL(n) LAZY_SET("curl_", n)
#define LAZY_MHD(n) LAZY_SET("MHD_", n)

struct net_curl_api net_curl;
static struct lazy_lib curl_lib = LAZY_LIB_INIT(NET_CURL_SONAME);

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
static struct lazy_lib mhd_lib = LAZY_LIB_INIT(NET_MHD_SONAME);

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
