/* cli/http.h — ferry's HTTP client commands (cli/http.c, cli/http_list.c):
 * send --to URL, recv --from URL, list, get and holds of a URL. cmd_send.c,
 * cmd_recv.c, cmd_list.c and cmd_hold.c hand their whole command line over
 * when it names a URL. */
#ifndef FERRY_CLI_HTTP_H
#define FERRY_CLI_HTTP_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"

/* 1 when argv (before a "--") has the long option opt, as "opt" or
 * "opt=VALUE". */
int cli_http_has_opt(int argc, char **argv, const char *opt);
/* 1 when an operand of argv is an http:// or https:// URL. */
int cli_http_has_url(int argc, char **argv);

/* ---- shared by http.c and http_list.c ---- */
struct net_client;
struct json_t;
/* The connection options every client command takes. */
struct http_conn_opts {
	const char *token_file; /* --token-file; else $FERRY_TOKEN */
	const char *cacert;     /* --cacert */
	uint64_t limit_rate;    /* --limit-rate, bytes per second */
	unsigned timeout;       /* --timeout seconds */
	unsigned retries;       /* --retries: attempts without progress in a row */
};
/* getopt_long codes of those options (above any short option). */
enum { HTTP_OPT_TOKEN_FILE = 0x1000, HTTP_OPT_CACERT, HTTP_OPT_LIMIT_RATE, HTTP_OPT_TIMEOUT,
       HTTP_OPT_RETRIES };
#define HTTP_LONG_OPTS                                                             \
	{"token-file", required_argument, NULL, HTTP_OPT_TOKEN_FILE},              \
	{"cacert", required_argument, NULL, HTTP_OPT_CACERT},                      \
	{"limit-rate", required_argument, NULL, HTTP_OPT_LIMIT_RATE},              \
	{"timeout", required_argument, NULL, HTTP_OPT_TIMEOUT},                    \
	{"retries", required_argument, NULL, HTTP_OPT_RETRIES}
/* Takes getopt code c with optarg into co: 1 when it was one of them, 0
 * when not, -1 after printing a usage error. */
int http_conn_opt(int c, const char *arg, struct http_conn_opts *co);
/* The token: --token-file's first line, else $FERRY_TOKEN, else "". */
int http_read_token(const struct http_conn_opts *co, char *out, size_t n) FERRY_WUR;
/* A client for url's server (base written to base); name gets the URL's
 * decoded name. Prints the error and returns EXIT_* on failure, 0 on
 * success. */
int http_connect(const struct http_conn_opts *co, const char *url, char *name, size_t nname,
		 struct net_client **out);
/* GET (or DELETE) path and parse the JSON answer: 0 with *status and
 * *json (the caller decrefs; NULL when the body was not JSON), or a
 * negative error for a transport failure. */
int http_json(struct net_client *c, const char *method, const char *path, long *status,
	      struct json_t **json) FERRY_WUR;
/* The one-line message of an error answer. */
void http_answer_msg(long status, struct json_t *json, char *out, size_t n);

int cli_http_send(int argc, char **argv); /* ferry send [opts] SNAPSHOT --to URL */
int cli_http_recv(int argc, char **argv); /* ferry recv [opts] --from URL@SNAP TARGET */
int cli_http_list(int argc, char **argv); /* ferry list [opts] URL... */
int cli_http_get(int argc, char **argv);  /* ferry get [opts] PROPS URL... */
int cli_http_holds(int argc, char **argv); /* ferry holds [opts] URL@SNAP... */

#endif
