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

/* Loads libcurl and fills net_curl, on the first call (thread-safe; later
 * calls return the first one's result). 0, or -FERR_UNSUPPORTED when the
 * library or one of the functions is missing, the message naming which. */
int net_curl_load(void);

/* The same for libmicrohttpd and net_mhd. */
int net_mhd_load(void);

#endif
