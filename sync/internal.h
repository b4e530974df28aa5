/* sync/internal.h — private to sync/: the destination's state, the three
 * destination backends (local pool in process, ssh to a far ferry, a
 * ferry serve over HTTP),
 * child processes, locks and shell quoting. */
#ifndef FERRY_SYNC_INTERNAL_H
#define FERRY_SYNC_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "../recv/recv.h"
#include "../send/send.h"
#include "sync.h"

/* ---- the destination's state (state.c) ---------------------------------------
 * What a sync needs to know of one destination dataset. */
struct st_snap {
	char name[STORE_NAME_MAX + 1]; /* after the '@' */
	uint64_t guid, txg, creation_ns;
};
struct st_ds {
	char name[STORE_NAME_MAX + 1]; /* full */
	int type;                      /* STORE_DS_FILESYSTEM or _VOLUME */
	char compression[32];          /* effective codec, as codec_parse reads it */
	char token[STORE_TOKEN_MAX];   /* "" when no partial receive */
	struct st_snap *snaps;         /* oldest first */
	size_t n, cap;
};
struct st_tree {
	char target[STORE_NAME_MAX + 1];
	int exists;
	char compression[32]; /* of target, or its nearest existing ancestor */
	struct st_ds *ds;     /* target first, then its descendants (parents first) */
	size_t n, cap;
};
void st_tree_release(struct st_tree *t);
/* The entry of dataset name, or NULL. */
const struct st_ds *st_tree_find(const struct st_tree *t, const char *name);
/* Collects the state of target in pool p (opened by the caller). */
int st_collect(struct store_pool *p, const char *target, int recursive, struct st_tree *out) FERRY_WUR;
/* The versioned text form (sync-state) and its strict parser (the text
 * comes from the far side: bounded and checked). */
int st_format(const struct st_tree *t, struct fbuf *out) FERRY_WUR;
int st_parse(const char *text, size_t len, struct st_tree *out) FERRY_WUR;

/* ---- destinations (dest.c) --------------------------------------------------------- */
struct dst;
struct dst_recv;
/* Opens the destination: a local pool (read-only with dry), nothing yet
 * for ssh (each call runs its own ssh; o->ssh is the command), an HTTP
 * client for http(s):// (o->http_token, o->http_cacert). */
int dst_open(const struct sync_dest *d, const struct sync_opts *o, int dry, struct dst **out) FERRY_WUR;
void dst_close(struct dst *d);
/* The state of target (and with recursive its descendants). */
int dst_state(struct dst *d, const char *target, int recursive, struct st_tree *out) FERRY_WUR;
/* Discards the partial receive of target (recv -A). */
int dst_abort(struct dst *d, const char *target) FERRY_WUR;
/* The receive half of one transfer: *sink takes the stream; dst_recv_end
 * says the stream ended (send_rc: the send's result, 0 or negative) and
 * gives the receive's result, its figures (stats summed over the
 * snapshots received) and, on failure, its message in err. */
int dst_recv_begin(struct dst *d, const char *target, unsigned rflags,
		   const struct store_propset *set, size_t nset, const char *const *excl,
		   size_t nexcl, struct dst_recv **rv, struct stream_sink **sink) FERRY_WUR;
int dst_recv_end(struct dst_recv *rv, int send_rc, struct recv_stats *st, char *err,
		 size_t errn) FERRY_WUR;

/* ---- a destination on a ferry serve (http.c) ---------------------------------------------
 * The same operations as dst_* over the HTTP protocol (docs/ferry-http.7);
 * dest.c hands them over for an http(s):// destination. */
struct dst_http;
struct dh_recv;
int dh_open(const struct sync_dest *d, const struct sync_opts *o, struct dst_http **out) FERRY_WUR;
void dh_close(struct dst_http *h); /* NULL is a no-op */
int dh_state(struct dst_http *h, const char *target, int recursive, struct st_tree *out) FERRY_WUR;
int dh_abort(struct dst_http *h, const char *target) FERRY_WUR;
/* PUT /v1/receive of target (exclude=excl, force=1 with RECV_FORCE; the
 * server always receives resumably): *sink takes the stream. */
int dh_recv_begin(struct dst_http *h, const char *target, unsigned rflags,
		  const char *const *excl, size_t nexcl, struct dh_recv **out,
		  struct stream_sink **sink) FERRY_WUR;
int dh_recv_end(struct dh_recv *u, int send_rc, struct recv_stats *st, char *err,
		size_t errn) FERRY_WUR;

/* ---- child processes (spawn.c) ---------------------------------------------------------- */
struct proc {
	pid_t pid;
	int in_fd;          /* the child's stdin (ours to write), or -1 */
	int out_fd, err_fd; /* its stdout and stderr, drained by a thread */
	struct fbuf out;    /* all of stdout, up to its max */
	char err[2048];     /* the end of stderr */
	size_t errlen;
	int overflow;       /* stdout passed the max */
	int reader_on;
	pthread_t reader;
};
/* Starts argv (searched in PATH) with pipes on its stdin (with_stdin, else
 * /dev/null), stdout and stderr; a thread drains stdout (up to out_max
 * bytes kept) and stderr (its end kept). */
int proc_start(char *const *argv, int with_stdin, size_t out_max, struct proc *pr) FERRY_WUR;
/* Closes stdin, waits for the child and the drain; *status is the exit
 * status (128 + N when killed by signal N). */
int proc_finish(struct proc *pr, int *status) FERRY_WUR;
/* The last line of the child's stderr (or "" when it said nothing). */
const char *proc_last_err(struct proc *pr);

/* ---- locks (lock.c) ------------------------------------------------------------------------ */
struct sync_lock;
/* Takes the lock named by key (what: in words, for the busy message of
 * another sync: "a sync of tank/a to bk/a"). wait: -1 fail at once,
 * 0 forever, N seconds, counted from deadline_ns's start (shared by the
 * locks of one run). -FERR_BUSY naming the holder. */
int lock_take(const char *key, const char *what, int wait, uint64_t start_ns,
	      struct sync_lock **out) FERRY_WUR;
void lock_release(struct sync_lock *l); /* NULL is a no-op */

/* ---- quoting (shell.c) ------------------------------------------------------------------------ */
/* Appends s to out single-quoted for a POSIX shell (and ferry shell). */
int sh_quote(struct fbuf *out, const char *s) FERRY_WUR;

#endif
