/* net/net.h — the one public header of net/: ferry's HTTP protocol
 * (docs/ferry-http.7) as bytes. A libmicrohttpd server that parses,
 * authenticates and limits requests and runs each authorised one on a
 * thread of the application's; a libcurl client; bearer tokens and their
 * file; a bounded pipe between two threads.
 *
 * net/ moves bytes: it knows nothing of stream records or of the store.
 * Names in paths are checked here only for what the protocol itself
 * forbids (NUL, control bytes, empty and dot components, length); the
 * caller checks them as ferry names. Only cli/ wires net/ to recv/ and
 * send/. net/ never prints: the server reports through a log callback.
 *
 * Errors: 0 or a negative FERR_* code with a detail (ferry_errmsg). */
#ifndef FERRY_NET_H
#define FERRY_NET_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/lib.h"

#define NET_PROTOCOL 1
#define NET_NAME_MAX 255          /* a decoded name: the store's STORE_NAME_MAX */
#define NET_LINE_MAX 8192         /* request line, one header line */
#define NET_ARGS_MAX 16           /* query parameters */
#define NET_ARG_MAX 1024          /* one decoded parameter value */
#define NET_DISCARD_MAX ((uint64_t)64 << 20) /* body bytes dropped to answer */
#define NET_PIPE_CAP ((size_t)1 << 20)       /* bytes buffered per transfer */
#define NET_TOKEN_RAW 32
#define NET_TOKEN_PREFIX "ferry_"
#define NET_TOKEN_TEXT (6 + 2 * NET_TOKEN_RAW + 1) /* "ferry_" + hex + NUL */
#define NET_TOKEN_ID 13                             /* 12 hex + NUL */
#define NET_TOKEN_NAME_MAX 64
#define NET_JSON_MAX ((size_t)64 << 20)             /* a listing's answer */

/* ---- a bounded pipe between two threads (pipe.c) ---------------------------
 * One writer, one reader, at most cap bytes in between. Either side may
 * block (net_pipe_write, net_pipe_read) or, for a libmicrohttpd callback
 * that must not block, take what is there (net_pipe_put, net_pipe_get)
 * and park: it then registers a wake-up that the other side calls (from
 * its own thread) as soon as the parked side can go on. The writer ends
 * the data with net_pipe_close (err 0: a clean end; < 0: a failure the
 * reader gets once the buffered bytes are read); the reader gives up with
 * net_pipe_abort (the writer's next write fails with that error).
 * Reference counted: each side holds a reference. Thread-safe. */
struct net_pipe;
int net_pipe_new(size_t cap, struct net_pipe **out) FERRY_WUR;
void net_pipe_ref(struct net_pipe *p);
void net_pipe_unref(struct net_pipe *p); /* NULL is a no-op */
/* Blocks until all n bytes are in, or fails with the reader's abort. */
int net_pipe_write(struct net_pipe *p, const void *buf, size_t n) FERRY_WUR;
/* Blocks until at least one byte is there (then up to n), the clean end
 * (*got = 0) or the writer's failure (returned, with its detail). */
int net_pipe_read(struct net_pipe *p, void *buf, size_t n, size_t *got) FERRY_WUR;
/* Copies what fits of n bytes and returns how many (0 when full), or a
 * negative error once the reader aborted. Never blocks. */
long net_pipe_put(struct net_pipe *p, const void *buf, size_t n);
/* Copies up to n buffered bytes and returns how many; 0 when empty and
 * not ended; NET_PIPE_END at the clean end; a negative FERR_* code at a
 * failure. Never blocks. */
#define NET_PIPE_END (-100000L)
long net_pipe_get(struct net_pipe *p, void *buf, size_t n);
/* Parks the non-blocking side (writer: until there is room or the reader
 * aborted; reader: until there are bytes or the end): returns 0 without
 * parking when it may go on already, else calls park(arg) under the
 * pipe's lock and returns 1; the other side later calls wake(arg), once,
 * under the same lock. park and wake must not call back into the pipe. */
int net_pipe_park(struct net_pipe *p, int as_writer, void (*park)(void *), void (*wake)(void *),
		  void *arg);
/* Forgets a registered wake-up (its target is gone); no wake comes after. */
void net_pipe_unpark(struct net_pipe *p);
/* err < 0 comes with msg, the detail the other side's call reports. */
void net_pipe_close(struct net_pipe *p, int err, const char *msg);
void net_pipe_abort(struct net_pipe *p, int err, const char *msg);
/* Bytes that went through so far. */
uint64_t net_pipe_total(const struct net_pipe *p);

/* ---- permissions, scopes, tokens (token.c) --------------------------------- */
enum net_perm { NET_PERM_READ = 1, NET_PERM_APPEND = 2, NET_PERM_WRITE = 3 };
/* "read", "append", "write"; "?" otherwise. */
const char *net_perm_name(int perm);
/* -FERR_INVAL for anything but the three names. */
int net_perm_parse(const char *s, int *perm) FERRY_WUR;
/* 1 when the dataset part of name (before '@' or '#') is scope or lies
 * below it (scope "a/b" covers "a/b", "a/b/c@s", not "a/bc"), else 0. */
int net_scope_covers(const char *scope, const char *name);

struct net_token {
	uint8_t hash[FERRY_HASH_LEN];   /* of the token's 32 random bytes */
	char id[NET_TOKEN_ID];          /* first 12 hex digits of hash */
	int perm;                       /* enum net_perm */
	char scope[NET_NAME_MAX + 1];
	char name[NET_TOKEN_NAME_MAX + 1];
	int64_t created;                /* seconds since the epoch */
};
struct net_tokens {
	struct net_token *v;
	size_t n, cap;
};
void net_tokens_release(struct net_tokens *t); /* t reusable (empty) afterwards */
/* Parses the text of a tokens file (docs/ferry-serve.8, TOKENS FILE):
 * comment lines, then one token per line. Hostile input is fine: any
 * malformed line is -FERR_CORRUPT naming the line; *out is written only on
 * success. */
int net_tokens_parse(const char *text, size_t len, struct net_tokens *out) FERRY_WUR;
/* Reads and parses path; a missing file is -FERR_NOENT. */
int net_tokens_load(const char *path, struct net_tokens *out) FERRY_WUR;
/* The token whose hash is that of bearer (the text after "Bearer "), or
 * NULL. Every entry is compared, in constant time, whatever matches. */
const struct net_token *net_tokens_find(const struct net_tokens *t, const char *bearer);
/* A name is [A-Za-z0-9._:@-], 1..64 bytes. */
int net_token_name_check(const char *name) FERRY_WUR;
/* Makes a new token with perm, scope (checked by the caller as a dataset
 * name) and name (unique in the file; NULL: none, shown as "-"), adds its
 * hash to the tokens file path (created 0600 if missing) under an
 * exclusive lock, crash-safely (io_write_file_atomic), and writes the
 * token's text (shown once, never stored) to text. *info (may be NULL)
 * gets the entry. -FERR_EXISTS when name is taken. */
int net_token_create(const char *path, int perm, const char *scope, const char *name,
		     char text[NET_TOKEN_TEXT], struct net_token *info) FERRY_WUR;
/* Removes the token whose id or name is key from path, under the lock,
 * crash-safely. -FERR_NOENT when none matches. *gone (may be NULL) gets
 * the entry removed. */
int net_token_revoke(const char *path, const char *key, struct net_token *gone) FERRY_WUR;

/* ---- requests (request.c; docs/ferry-http.7, ENDPOINTS) -------------------- */
enum net_endpoint {
	NET_EP_POOLS = 1,  /* GET /v1/pools */
	NET_EP_DATASETS,   /* GET /v1/datasets/NAME */
	NET_EP_RECV_INFO,  /* GET /v1/receive/DATASET */
	NET_EP_RECV,       /* PUT /v1/receive/DATASET[@SNAP] */
	NET_EP_ABORT,      /* DELETE /v1/receive/DATASET */
	NET_EP_SEND,       /* GET /v1/send/DATASET@SNAP */
	NET_EP_DESTROY,    /* DELETE /v1/snapshots/DATASET@SNAP */
	NET_EP_BLOCK,      /* GET /v1/blocks/DATASET?hash=HEX */
	NET_EP_NODE,       /* GET /v1/nodes/DATASET?hash=HEX */
};
#define NET_BLOCK_TYPE "application/x-ferry-block" /* a block's logical bytes */
#define NET_NODE_TYPE "application/x-ferry-node"   /* a node's type byte, then its bytes */
/* types= of NET_EP_DATASETS */
enum net_types {
	NET_T_FILESYSTEM = 1 << 0, NET_T_VOLUME = 1 << 1, NET_T_SNAPSHOT = 1 << 2,
	NET_T_BOOKMARK = 1 << 3, NET_T_ALL = 0xf,
};
/* A raw query parameter as the HTTP layer split it (not yet decoded);
 * value NULL when the parameter had no '='. */
struct net_arg {
	const char *key;
	const char *value;
};
struct net_req {
	int ep;                          /* enum net_endpoint */
	int need;                        /* enum net_perm the request needs */
	char name[NET_NAME_MAX + 1];     /* decoded; "" for NET_EP_POOLS */
	char dataset[NET_NAME_MAX + 1];  /* name before '@' or '#' */
	/* parameters (those of other endpoints stay 0 / empty) */
	int depth;                       /* datasets: 0 default, -1 all */
	unsigned types;                  /* datasets: enum net_types */
	int force, intermediate, replicate, compressed, props;
	char from[NET_ARG_MAX + 1];
	char compress[NET_ARG_MAX + 1];
	char token[NET_ARG_MAX + 1];
	char exclude[NET_ARG_MAX + 1];   /* receive: PROP[,PROP]... (recv -x) */
	uint8_t hash[FERRY_HASH_LEN];    /* blocks, nodes: hash= (required) */
};
/* Parses a request: method, the raw path (percent-encoded, without the
 * query) and its raw parameters. Returns 0 with *out filled, or a
 * negative FERR_* code with a one-line detail and the HTTP status to
 * answer in *status (400 malformed, 404 no such endpoint, 405 method,
 * 413 too long; for 405, *allow gets the methods the path takes). Never
 * reads past the strings; any input is fine. */
int net_req_parse(const char *method, const char *path, const struct net_arg *args,
		  size_t nargs, struct net_req *out, unsigned *status, const char **allow) FERRY_WUR;
/* Decodes %XX escapes of src (len bytes) into out (n bytes, NUL added):
 * -FERR_INVAL on a bad escape or a NUL, -FERR_LIMIT when it does not fit. */
int net_pct_decode(const char *src, size_t len, char *out, size_t n) FERRY_WUR;
/* Appends name percent-encoded as ferry-http.7 says clients do. */
int net_pct_encode(struct fbuf *out, const char *name) FERRY_WUR;
/* Splits a URL "http[s]://HOST[:PORT]/NAME" into its base (scheme and
 * authority, no trailing '/') and its decoded name (may be ""); a query or
 * fragment is -FERR_INVAL. Outputs are written only on success. */
int net_url_split(const char *url, char *base, size_t nbase, char *name, size_t nname) FERRY_WUR;
/* 1 when s begins with http:// or https://. */
int net_is_url(const char *s);
/* Appends {"status":N,"error":"msg"} (msg escaped, cut to one line). */
int net_json_error(struct fbuf *out, unsigned status, const char *msg) FERRY_WUR;
/* Appends s as a JSON string literal (quotes included). */
int net_json_string(struct fbuf *out, const char *s) FERRY_WUR;

/* ---- the server (server.c) --------------------------------------------------
 * libmicrohttpd with internal polling threads: callbacks never block. Each
 * request is parsed, its head checked against the limits, its token
 * authenticated, its scope and permission checked (401/403/400/404/405/413
 * answered here); then serve() runs on a thread of its own with a
 * net_call, while the connection waits. */
struct net_server;
struct net_call;

struct net_server_opts {
	const char *const *listen;   /* "ADDR:PORT", "[V6ADDR]:PORT"; port 0: any */
	size_t nlisten;
	const char *tls_cert;        /* PEM files, or both NULL for plain HTTP */
	const char *tls_key;
	const char *tokens;          /* the tokens file */
	unsigned timeout;            /* idle seconds before a connection is closed */
	unsigned max_conns;
	unsigned max_transfers;      /* concurrent uploads and downloads */
	unsigned threads;            /* polling threads; 0: 2 */
	/* Runs on a thread of its own for each authorised request; must call
	 * net_call_finish (or net_call_fail) exactly once before returning. */
	void (*serve)(void *arg, struct net_call *c);
	/* One line about a request or the server (no newline). May be NULL.
	 * Called from any thread. */
	void (*log)(void *arg, const char *line);
	void *arg;
};
/* Loads the tokens and the TLS files, binds every address and starts.
 * *out is written only on success. */
int net_server_start(const struct net_server_opts *o, struct net_server **out) FERRY_WUR;
/* The port bound for listen address i (to learn what port 0 got). */
unsigned net_server_port(const struct net_server *s, size_t i);
/* Reads the tokens file again (SIGHUP); on an error the old tokens stay
 * and the error is returned. Requests already authenticated go on. */
int net_server_reload(struct net_server *s) FERRY_WUR;
/* Stops accepting, makes every transfer fail (a receive keeps its partial
 * state: its body read fails with "the server is stopping"), waits for
 * every serve() to return, stops the daemons and frees s. NULL is a no-op. */
void net_server_stop(struct net_server *s);

/* ---- one request, for serve() ------------------------------------------------ */
const struct net_req *net_call_req(const struct net_call *c);
/* A copy of the token that authenticated it. */
const struct net_token *net_call_token(const struct net_call *c);
/* "ADDR:PORT" of the client. */
const char *net_call_peer(const struct net_call *c);
/* PUT /v1/receive: reads the body. The first call lets the client send it
 * (the server answers its Expect: 100-continue); answering before it
 * refuses the body unread. *got = 0 at its end. When the connection ends
 * first (closed, idle timeout, server stopping) -FERR_IO with a detail
 * saying which, and net_call_conn_failed() is then 1. */
int net_call_read(struct net_call *c, void *buf, size_t n, size_t *got) FERRY_WUR;
int net_call_conn_failed(const struct net_call *c);
/* 1 once net_server_stop has begun. */
int net_call_stopping(const struct net_call *c);
/* GET /v1/send: answers 200 with a chunked body of content_type; then
 * net_call_write sends bytes (blocking while the client is slow; fails
 * with -FERR_IO once the connection is gone). */
int net_call_begin(struct net_call *c, const char *content_type) FERRY_WUR;
int net_call_write(struct net_call *c, const void *p, size_t n) FERRY_WUR;
/* The answer: status and a JSON body (copied; NULL/0 for none). After
 * net_call_begin, status 200 ends the body cleanly and any other status
 * ends the connection without the body's last chunk. c is gone after
 * this call. */
void net_call_finish(struct net_call *c, unsigned status, const char *json, size_t len);
/* net_call_finish with a body of another type (ctype: a string that
 * outlives the call, NULL for application/json); for an answer that is
 * not streamed, at most a few MiB. */
void net_call_finish_as(struct net_call *c, unsigned status, const char *ctype, const void *body,
			size_t len);
/* net_call_finish with {"status":N,"error":"..."}. */
void net_call_fail(struct net_call *c, unsigned status, const char *fmt, ...) FERRY_PRINTF(3, 4);

/* ---- the client (client.c) ---------------------------------------------------- */
struct net_client;
struct net_client_opts {
	const char *base;            /* "https://host:port" (net_url_split) */
	const char *token;           /* bearer text; NULL: none */
	const char *cacert;          /* PEM bundle to verify the server with; NULL: system */
	uint64_t limit_rate;         /* bytes per second each way; 0: none */
	unsigned timeout;            /* seconds without a byte before giving up; 0: 300 */
	/* Transfer progress (bytes up and down of the current request), called
	 * now and then on the thread of the request. May be NULL. */
	void (*progress)(void *arg, uint64_t up, uint64_t down);
	void *arg;
};
int net_client_new(const struct net_client_opts *o, struct net_client **out) FERRY_WUR;
void net_client_free(struct net_client *c); /* NULL is a no-op */
/* Callbacks of a body: read gives up to n bytes (*got 0 at the end) and
 * write takes all n; a negative return ends the request with it. */
typedef int (*net_read_fn)(void *arg, void *buf, size_t n, size_t *got);
typedef int (*net_write_fn)(void *arg, const void *p, size_t n);
/* One request to path (already encoded, "/v1/..."): method "GET",
 * "DELETE" or "PUT" (then the body comes from rd, chunked). The answer's
 * body goes to wr when the status is 200 and wr is set, else into answer
 * (reset first; cut at answer's max). *status is the HTTP status, 0 when
 * none came. A status other than 2xx is not an error here: the caller
 * reads it. A transport failure (a refused, dropped or silent connection,
 * a TLS failure, a body cut short) is -FERR_IO with curl's reason, and
 * *status may then hold the status that came before it; a body
 * callback's error is returned as it is. */
int net_client_request(struct net_client *c, const char *method, const char *path,
		       net_read_fn rd, void *rdarg, net_write_fn wr, void *wrarg,
		       struct fbuf *answer, long *status) FERRY_WUR;

#endif
