/* sync/sync.h — the one public header of sync/: replication (ferry sync),
 * retention (ferry prune), and what the far side of a sync over ssh runs
 * (the state query, the restricted shell's command check).
 *
 * ferry sync finds the newest snapshot the source and the destination
 * share (by guid; a bookmark counts on the source side), sends everything
 * since (an in-process send → recv pipeline for a local destination, ssh
 * running `ferry recv` on the far side, or an upload to a ferry serve for
 * https://), resumes a partial
 * receive, and moves a hold and a bookmark on the source to the new base
 * so nothing prunes it while the destination is away. ferry prune thins
 * snapshots with restic's bucket rules and never takes a held snapshot,
 * the newest one or a sync base.
 *
 * sync/ uses lib, stream, store, send, recv and net's HTTP client; it never
 * prints or exits.
 * The caller ignores SIGPIPE (a receiver that stops reading must fail the
 * send with EPIPE, not kill the process). */
#ifndef FERRY_SYNC_H
#define FERRY_SYNC_H

#include <stdint.h>

#include "../lib/lib.h"
#include "../store/store.h"

/* ---- destinations ------------------------------------------------------------ */
enum sync_dest_kind {
	SYNC_DEST_LOCAL = 1, /* POOL/DS */
	SYNC_DEST_SSH = 2,   /* ssh://[user@]host[:port]/POOL/DS */
	SYNC_DEST_HTTP = 3,  /* http(s)://HOST[:PORT]/POOL/DS: a ferry serve */
};
#define SYNC_DEST_MAX 1024
struct sync_dest {
	int kind;
	char user[64];
	char host[256];
	unsigned port;                     /* 0: ssh's default */
	char dataset[STORE_NAME_MAX + 1];  /* POOL/DS on the destination */
	char prefix[SYNC_DEST_MAX];        /* "", "ssh://user@host:port/" or "https://host:port/":
					    * canon = prefix + name */
};
/* Parses a destination. -FERR_NAME (with a detail) for a malformed one or
 * a bad dataset name. */
int sync_dest_parse(const char *s, struct sync_dest *out) FERRY_WUR;

/* ---- sync ---------------------------------------------------------------------- */
enum sync_flags {
	SYNC_RECURSIVE = 1 << 0,       /* -r: the source's whole tree */
	SYNC_DRYRUN = 1 << 1,          /* -n: say what would be sent; change nothing */
	SYNC_NO_INTERMEDIATE = 1 << 2, /* -i instead of -I: only the newest snapshot */
	SYNC_FORCE = 1 << 3,           /* -F: replace unrelated, roll back diverged */
	SYNC_SEND = 1 << 4,            /* ferry send -R --to: up to opts.snapshot, which
					* datasets without it are left out for (as send -R
					* leaves them); the source is only read (no hold, no
					* bookmark), every property is sent (the retention
					* ones too), and the run stops at the first dataset
					* that fails (its children would fail after it) */
};
enum sync_compress {
	SYNC_COMPRESS_STORED = 0, /* blocks as stored (send -c); the receiver recompresses */
	SYNC_COMPRESS_AUTO,       /* recompressed on the sender to the receiver's codec */
	SYNC_COMPRESS_CODEC,      /* recompressed on the sender to opts.codec */
};

/* What happened to one dataset. */
struct sync_result {
	char source[STORE_NAME_MAX + 1];
	char dest[SYNC_DEST_MAX];          /* canonical: "bk/x" or "ssh://h/bk/x" */
	int status;                        /* 0, or the negative FERR_* of the failure */
	char error[1024];                  /* when status < 0: "<what failed>: <why>" */
	int uptodate;                      /* nothing needed sending */
	int full;                          /* a full stream was sent (no common base) */
	int resumed;                       /* a partial receive was resumed */
	int aborted;                       /* a stale partial receive was discarded */
	int nosnap;                        /* the source has no snapshot */
	char base[STORE_NAME_MAX + 1];     /* the common base before: "@s", "#m" or "" */
	char newest[STORE_NAME_MAX + 1];   /* the newest common snapshot afterwards ("@s") */
	uint64_t snapshots;                /* snapshots received (with -n: that would be) */
	uint64_t bytes;                    /* stream bytes (with -n: the exact estimate) */
	uint64_t ns;                       /* wall time of the transfers */
	uint64_t blocks_logical, blocks_kept, blocks_recompressed, blocks_present, blocks_byref;
};

struct sync_opts {
	unsigned flags;                    /* enum sync_flags */
	int compress;                      /* enum sync_compress */
	struct codec_spec codec;           /* SYNC_COMPRESS_CODEC */
	const struct store_propset *set;   /* -o: set on the received datasets */
	size_t nset;
	const char *const *exclude;        /* -x: not received (the retention
					    * properties never are: a backup's policy is
					    * its own) */
	size_t nexclude;
	int wait;                          /* a busy lock: -1 fail at once, 0 wait as
					    * long as needed, N wait up to N seconds */
	const char *ssh;                   /* the ssh command ("ssh -i key"; split at
					    * blanks); NULL: "ssh" */
	const char *http_token;            /* https://: the bearer token (NULL: none) */
	const char *http_cacert;           /* https://: CA certificates (NULL: the system's) */
	uint64_t http_limit_rate;          /* https://: bytes per second (0: no cap) */
	unsigned http_timeout;             /* https://: seconds without progress (0: net's default) */
	const char *snapshot;              /* SYNC_SEND: the snapshot's name (after the '@') */
	/* Called once per dataset with its result (also on failure). */
	void (*done)(void *arg, const struct sync_result *r);
	/* -v: a step about to run, in words ("full send of tank/a@s1"). May be NULL. */
	void (*note)(void *arg, const char *source, const char *what);
	/* Now and then during a transfer: the dataset and the stream bytes it
	 * has sent in this run so far. May be NULL. */
	void (*progress)(void *arg, const char *source, uint64_t bytes);
	/* Before each transfer (with progress only): the bytes the dataset's
	 * line reaches when it ends, by send_estimate (0: unknown, as for a
	 * resumed stream). May be NULL. */
	void (*expect)(void *arg, const char *source, uint64_t total);
	void *arg;
};

/* Replicates src (a local dataset; with SYNC_RECURSIVE its tree, children
 * going to the same relative names under dest) to dest (with SYNC_SEND up
 * to o->snapshot only, leaving the source as it is). Returns 0 when
 * every dataset is in sync, -FERR_PARTIAL when some failed and others did
 * not (done said which), -FERR_BUSY when another sync of a (dataset,
 * destination) pair runs (nothing was done), another negative code when
 * nothing could start or every dataset failed. Holds (tag "ferry-sync:"
 * + the canonical destination) and bookmarks ("#ferry-sync_...") on the
 * source are moved only after a transfer succeeded. */
int sync_run(const char *src, const char *dest, const struct sync_opts *o) FERRY_WUR;

/* The hold tag and the bookmark name (after the '#') sync uses for the
 * source dataset ds syncing to canonical destination dest. */
void sync_hold_tag(const char *dest, char *tag, size_t n);
void sync_mark_name(const char *ds, const char *dest, char *mark, size_t n);
#define SYNC_MARK_PREFIX "ferry-sync_"
#define SYNC_TAG_PREFIX "ferry-sync:"

/* The far side's state for a sync (`ferry sync-state`): whether target
 * exists, the effective compression it (or, when missing, its nearest
 * ancestor) has, and for target and (with recursive) its descendants the
 * type, compression, resume token and snapshots with guids. Appended to
 * out as versioned tab-separated lines (sync/state.c). */
int sync_state_write(const char *target, int recursive, struct fbuf *out) FERRY_WUR;

/* ---- retention (prune) ------------------------------------------------------------ */
/* A policy in restic's terms: for each of the last N hours, days, weeks,
 * months, years that have snapshots, the newest snapshot of each is kept
 * (and the oldest snapshot while a count is left); keep_last the N newest;
 * within: every snapshot newer than the newest minus that duration.
 * Counts: 0 none, -1 unlimited. */
struct sync_keep {
	int64_t last, hourly, daily, weekly, monthly, yearly;
	int within_y, within_m, within_d, within_h; /* has_within */
	int has_within;
	char prefix[STORE_NAME_MAX + 1];            /* "" all snapshots */
};
/* 1 when k keeps nothing by any rule (restic: an empty policy keeps all). */
int sync_keep_empty(const struct sync_keep *k);
/* Parses restic's duration "1y5m7d2h" (units y m d h, each at most once,
 * any order) into k's within fields. */
int sync_keep_within_parse(const char *s, struct sync_keep *k) FERRY_WUR;
/* k's within as text ("1y5m7d2h"). */
void sync_keep_within_format(const struct sync_keep *k, char *buf, size_t n);
/* Reads the policy of ds from its ferry:keep-last, ferry:keep-hourly,
 * ferry:keep-daily, ferry:keep-weekly, ferry:keep-monthly,
 * ferry:keep-yearly, ferry:keep-within and ferry:prune-prefix properties
 * (set or inherited). 1 when one is set, 0 when none is, or -FERR_PROP
 * naming a bad value. */
int sync_keep_from_props(struct store_pool *p, const struct store_ds *ds,
			 struct sync_keep *k) FERRY_WUR;

/* Why the policy keeps a snapshot (bits of sync_prune_snap.why). */
enum sync_keep_why {
	SYNC_KEEP_LAST = 1 << 0, SYNC_KEEP_HOURLY = 1 << 1, SYNC_KEEP_DAILY = 1 << 2,
	SYNC_KEEP_WEEKLY = 1 << 3, SYNC_KEEP_MONTHLY = 1 << 4, SYNC_KEEP_YEARLY = 1 << 5,
	SYNC_KEEP_WITHIN = 1 << 6,
	/* kept whatever the policy says */
	SYNC_KEEP_HELD = 1 << 7, SYNC_KEEP_NEWEST = 1 << 8, SYNC_KEEP_BASE = 1 << 9,
	SYNC_KEEP_PARTIAL = 1 << 10, /* the base of a partial receive */
};
/* Applies restic's rules to n snapshot times (ns since the epoch, UTC
 * buckets) given newest first: why[i] gets the policy bits that keep
 * snapshot i (0: remove). */
void sync_keep_apply(const struct sync_keep *k, const uint64_t *times, size_t n, unsigned *why);
/* why's bits in words: "hourly snapshot, daily snapshot", "held", ... */
void sync_keep_why_format(unsigned why, const struct sync_keep *k, char *buf, size_t n);

struct sync_prune_snap {
	char name[STORE_NAME_MAX + 1];
	uint64_t creation_ns;
	unsigned why;                  /* 0: removed (or, with -n, would be) */
	char held[STORE_HOLD_TAG_MAX + 1]; /* a tag when SYNC_KEEP_HELD */
};
struct sync_prune_ds {
	char name[STORE_NAME_MAX + 1];
	struct sync_keep keep;
	int from_props;                /* the policy came from properties */
	struct sync_prune_snap *snaps; /* the snapshots the policy looked at, newest first */
	size_t n;
	uint64_t kept, removed;
};
enum sync_prune_flags {
	SYNC_PRUNE_RECURSIVE = 1 << 0,
	SYNC_PRUNE_DRYRUN = 1 << 1,
	SYNC_PRUNE_GC = 1 << 2,
};
struct sync_prune_opts {
	unsigned flags;
	const struct sync_keep *keep;  /* NULL: each dataset's properties */
	/* Called for each dataset pruned (or, with -n, planned), after its
	 * snapshots are destroyed; d lives for the call. A dataset without a
	 * policy is skipped with -r and an error without. */
	void (*dataset)(void *arg, const struct sync_prune_ds *d);
	void *arg;
};
/* Prunes dataset name (with SYNC_PRUNE_RECURSIVE, every dataset of its
 * tree): each dataset's removals commit in one transaction, planned under
 * its write lock. With SYNC_PRUNE_GC the pool is collected afterwards
 * (*gc, may be NULL, gets the figures). */
int sync_prune_run(const char *name, const struct sync_prune_opts *o,
		   struct store_gc_stats *gc) FERRY_WUR;

/* ---- the restricted shell (ferry shell) ---------------------------------------------- */
enum sync_shell_flags {
	SYNC_SHELL_APPEND_ONLY = 1 << 0, /* receive new snapshots; never -F */
	SYNC_SHELL_READ_ONLY = 1 << 1,   /* list, get, sync-state, send only */
};
/* Splits cmdline (SSH_ORIGINAL_COMMAND) into words as a POSIX shell would
 * quote them ('...', "...", backslash; no expansion, and no unquoted shell
 * syntax such as ; | & $ ` < > ( )), and checks it: "ferry" then one of
 * the commands a sync's far side needs (list, get, sync-state, recv, send)
 * with their known options, every dataset operand (and a resume token's
 * dataset) inside scope, and what flags forbid. On success *argv (argv[0]
 * the command, NULL-terminated, malloc'd: sync_shell_free) and *argc;
 * else -FERR_PERM with a detail saying what is refused and why. */
int sync_shell_parse(const char *cmdline, const char *scope, unsigned flags, char ***argv,
		     int *argc) FERRY_WUR;
void sync_shell_free(char **argv, int argc);

#endif
