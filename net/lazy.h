/* net/lazy.h — private to net/: the functions of libcurl and libmicrohttpd
 * that net/ calls, through tables net/lazy.c fills on first use (no other
 * file of ferry links or calls them). A member is named after the function
 * without its prefix and has the header's own type: `net_curl.easy_init()`
 * is `curl_easy_init()`. */
#ifndef FERRY_NET_LAZY_H
#define FERRY_NET_LAZY_H

#include <curl/curl.h>
#include <microhttpd.h>

#include "internal.h"

#define NET_CURL_FNS(X)                                                      \
	X(global_init)                                                       \
	X(easy_init)                                                         \
	X(easy_cleanup)                                                      \
	X(easy_reset)                                                        \
	X(easy_setopt)                                                       \
	X(easy_perform)                                                      \
	X(easy_getinfo)                                                      \
	X(easy_strerror)                                                     \
	X(slist_append)                                                      \
	X(slist_free_all)

#define NET_MHD_FNS(X)                                                       \
	X(start_daemon)                                                      \
	X(stop_daemon)                                                       \
	X(quiesce_daemon)                                                    \
	X(get_daemon_info)                                                   \
	X(is_feature_supported)                                              \
	X(get_connection_info)                                               \
	X(get_connection_values)                                             \
	X(lookup_connection_value)                                           \
	X(suspend_connection)                                                \
	X(resume_connection)                                                 \
	X(create_response_from_buffer)                                       \
	X(create_response_from_callback)                                     \
	X(add_response_header)                                               \
	X(queue_response)                                                    \
	X(destroy_response)

#define NET_LAZY_CURL_MEMBER(n) __typeof__(curl_##n) *n;
struct net_curl_api {
	NET_CURL_FNS(NET_LAZY_CURL_MEMBER)
};
#undef NET_LAZY_CURL_MEMBER

#define NET_LAZY_MHD_MEMBER(n) __typeof__(MHD_##n) *n;
struct net_mhd_api {
	NET_MHD_FNS(NET_LAZY_MHD_MEMBER)
};
#undef NET_LAZY_MHD_MEMBER

/* The tables. Their members are NULL until the loader below returned 0 in
 * this process; after that they never change (read them freely, from any
 * thread). */
extern struct net_curl_api net_curl;
extern struct net_mhd_api net_mhd;

/* curl's header checks the value of each direct curl_easy_setopt() and
 * curl_easy_getinfo() call against its option at compile time
 * (typecheck-gcc.h); a call through the table escapes that. These two do
 * the part the variadic ABI depends on, as _Static_asserts: a long for an
 * option of type long or curl_off_t (the same type on every target ferry
 * builds for: asserted below), a pointer for every other option; for
 * getinfo, a long * for a long or curl_off_t item, a double * for a double,
 * a char ** for a string, a pointer for the rest. An int where a long
 * belongs fails to compile. The callbacks' own types are checked where
 * they are set (net/client.c). Same results as the functions. */
#define net_curl_setopt(h, opt, v)                                           \
	__extension__({                                                      \
		_Static_assert(NET_CURL_OPT_WANTS_LONG(opt) ? NET_CURL_IS_LONG(v) \
							    : NET_CURL_IS_PTR(v), \
			       "curl option " #opt ": wrong type of value"); \
		net_curl.easy_setopt((h), (opt), (v));                      \
	})
#define net_curl_getinfo(h, info, p)                                         \
	__extension__({                                                      \
		_Static_assert(NET_CURL_INFO_ARG_OK(info, p),                \
			       "curl info " #info ": wrong type of pointer"); \
		net_curl.easy_getinfo((h), (info), (p));                    \
	})
#define NET_CURL_OPT_WANTS_LONG(o)                                           \
	((o) < CURLOPTTYPE_OBJECTPOINT || ((o) >= CURLOPTTYPE_OFF_T && (o) < CURLOPTTYPE_BLOB))
#define NET_CURL_IS_LONG(v) _Generic((v), long: 1, default: 0)
#define NET_CURL_IS_PTR(v) (__builtin_classify_type(v) == 5) /* GCC's pointer_type_class */
#define NET_CURL_INFO_TYPE(i) ((i) & CURLINFO_TYPEMASK)
#define NET_CURL_INFO_ARG_OK(i, p)                                           \
	(NET_CURL_INFO_TYPE(i) == CURLINFO_LONG || NET_CURL_INFO_TYPE(i) == CURLINFO_OFF_T   \
		 ? _Generic((p), long *: 1, default: 0)                      \
	 : NET_CURL_INFO_TYPE(i) == CURLINFO_DOUBLE ? _Generic((p), double *: 1, default: 0) \
	 : NET_CURL_INFO_TYPE(i) == CURLINFO_STRING                          \
		 ? _Generic((p), char **: 1, const char **: 1, default: 0)  \
		 : NET_CURL_IS_PTR(p))
_Static_assert(_Generic((curl_off_t)0, long: 1, default: 0),
	       "curl_off_t is long (net_curl_setopt's check)");

/* Loads libcurl and fills net_curl, on the first call (thread-safe; later
 * calls return the first one's result). 0, or -FERR_UNSUPPORTED when the
 * library or one of the functions is missing, the message naming which. */
int net_curl_load(void);

/* The same for libmicrohttpd and net_mhd. */
int net_mhd_load(void);

#endif
