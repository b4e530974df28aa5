/* net/internal.h — private to net/: what its files share. */
#ifndef FERRY_NET_INTERNAL_H
#define FERRY_NET_INTERNAL_H

#include "net.h"

/* The status a libmicrohttpd-independent error code maps to when net/
 * itself refuses a request (request.c's parse errors carry their own). */
#define NET_STATUS_TEXT_MAX 512

/* Copies at most n-1 bytes of one line of msg into out: a newline or
 * another control byte ends it (an error body is one line). */
void net_one_line(const char *msg, char *out, size_t n);

#endif
