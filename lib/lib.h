/* lib/lib.h — the one public header of lib/: errors, bounded buffers,
 * checked arithmetic, little-endian helpers, hashing, fd I/O, crash-safe
 * writes and the ordered pipeline. Library code never prints and never exits;
 * every fallible function returns 0 or a negative FERR_* code. */
#ifndef FERRY_LIB_H
#define FERRY_LIB_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FERRY_WUR __attribute__((warn_unused_result))
#define FERRY_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- errors ------------------------------------------------------------
 * One vocabulary. Codes are positive in the enum and returned negated. */
#define FERRY_ERRORS(X)                                              \
	X(NOMEM, "out of memory")                                    \
	X(INVAL, "invalid argument")                                 \
	X(IO, "I/O error")                                           \
	X(CORRUPT, "corrupt data")                                   \
	X(TRUNCATED, "truncated input")                              \
	X(UNSUPPORTED, "unsupported feature")                        \
	X(OVERFLOW, "size overflow")                                 \
	X(LIMIT, "limit exceeded")                                   \
	X(NOENT, "does not exist")                                   \
	X(EXISTS, "already exists")                                  \
	X(BUSY, "busy")                                              \
	X(NOSPC, "out of space")                                     \
	X(PERM, "permission denied")                                 \
	X(CATALOG, "catalogue error")                                \
	X(VERSION, "unsupported format version")                     \
	X(NAME, "invalid name")                                      \
	X(PROP, "invalid property")                                  \
	X(NOTEMPTY, "not empty")                                     \
	X(NOSPACE_DST, "output does not fit")                        \
	X(PARTIAL, "completed with warnings")                        \
	X(QUOTA, "quota exceeded")

enum ferry_errcode {
	FERR_OK = 0,
#define FERRY_X(name, text) FERR_##name,
	FERRY_ERRORS(FERRY_X)
#undef FERRY_X
	FERR__COUNT
};

/* The fixed text of code r (negative or positive); never NULL. */
const char *ferry_strerror(int r);

/* Records a detail message for the current thread and returns -code.
 * Use as: return ferry_err(FERR_IO, "cannot open '%s': %s", p, strerror(e)); */
int ferry_err(int code, const char *fmt, ...) FERRY_PRINTF(2, 3);
int ferry_verr(int code, const char *fmt, va_list ap);

/* A broken invariant of ferry's own code (never bad input): prints where on
 * stderr and aborts, so a bug is found at its cause, not later. */
#define BUG(what) ferry_bug(__FILE__, __LINE__, (what))
_Noreturn void ferry_bug(const char *file, int line, const char *what);

/* Maps an errno value to a FERR_* code (positive). */
int ferry_errno_code(int e);

/* Records "<what>: strerror(e)" for errno e; returns the mapped negative code. */
int ferry_err_errno(int e, const char *fmt, ...) FERRY_PRINTF(2, 3);

/* The current thread's detail message for code r: the recorded detail if one
 * was set since the last ferry_err_clear(), else ferry_strerror(r). The
 * pointer is valid until the next ferry_err* call on this thread. */
const char *ferry_errmsg(int r);
/* The recorded detail message, or NULL if none since the last
 * ferry_err_clear(). Same lifetime as ferry_errmsg(). */
const char *ferry_err_detail(void);
void ferry_err_clear(void);
/* Keeps the thread's detail across cleanup code that may record its own
 * (an unlink on an error path): save, clean up, restore. */
struct ferry_errsave {
	int set;
	char text[1024];
};
void ferry_err_save(struct ferry_errsave *s);
void ferry_err_restore(const struct ferry_errsave *s);
/* When the cleanup failed too: restores the saved detail with the
 * cleanup's own after it, "SAVED (and then WHAT failed: DETAIL)", so the
 * one line names both (WHAT: "removing pack 'x'"); with nothing saved,
 * "WHAT failed: DETAIL". */
void ferry_err_restore_also(const struct ferry_errsave *s, const char *what);

/* ---- checked arithmetic: 0 on success, -FERR_OVERFLOW on overflow;
 * *out written only on success. */
int sz_add(size_t a, size_t b, size_t *out) FERRY_WUR;
int sz_mul(size_t a, size_t b, size_t *out) FERRY_WUR;
int u64_add(uint64_t a, uint64_t b, uint64_t *out) FERRY_WUR;
int u64_mul(uint64_t a, uint64_t b, uint64_t *out) FERRY_WUR;

/* ---- growable arrays --------------------------------------------------------
 * Makes room for element n of an array of elem-byte elements whose pointer
 * is at arrp (any T **) with *cap allocated: when n >= *cap the capacity
 * doubles (first elements the first time). Callers then store arr[n] and
 * count it. -FERR_NOMEM or -FERR_OVERFLOW with a detail naming what; on
 * error the array and *cap are unchanged. VEC_GROW(arr, cap, n, first, what)
 * takes the array and its capacity as lvalues. */
int vec_grow(void *arrp, size_t *cap, size_t n, size_t elem, size_t first,
	     const char *what) FERRY_WUR;
#define VEC_GROW(arr, cap, n, first, what) \
	vec_grow(&(arr), &(cap), (n), sizeof *(arr), (first), (what))

/* ---- little-endian wire helpers (never cast structs onto bytes) ----- */
static inline void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void put_le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void put_le64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t get_le32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = (v << 8) | p[i]; return v; }
static inline uint64_t get_le64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = (v << 8) | p[i]; return v; }

/* ---- bounded buffer ----------------------------------------------------
 * Grows on demand up to max bytes; any growth past max fails with
 * -FERR_LIMIT and leaves the buffer unchanged. Embedded: init/release. */
struct fbuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max;
};
void fbuf_init(struct fbuf *b, size_t max);
void fbuf_release(struct fbuf *b);              /* frees data; b reusable after fbuf_init */
void fbuf_reset(struct fbuf *b);                /* len = 0, keeps memory */
int fbuf_reserve(struct fbuf *b, size_t extra) FERRY_WUR; /* room for len+extra */
int fbuf_append(struct fbuf *b, const void *p, size_t n) FERRY_WUR;
int fbuf_putc(struct fbuf *b, uint8_t c) FERRY_WUR;
int fbuf_printf(struct fbuf *b, const char *fmt, ...) FERRY_PRINTF(2, 3) FERRY_WUR; /* keeps a NUL after len */
int fbuf_put_le16(struct fbuf *b, uint16_t v) FERRY_WUR;
int fbuf_put_le32(struct fbuf *b, uint32_t v) FERRY_WUR;
int fbuf_put_le64(struct fbuf *b, uint64_t v) FERRY_WUR;
/* Ownership of the bytes leaves through detach; b is then empty. */
uint8_t *fbuf_detach(struct fbuf *b, size_t *len);

/* ---- hashing: BLAKE2b-256 through libsodium ------------------------- */
#define FERRY_HASH_LEN 32
#define FERRY_HASH_HEX (2 * FERRY_HASH_LEN + 1)
/* Initialises libsodium; call once before hashing. Thread-safe, idempotent. */
int ferry_lib_init(void) FERRY_WUR;
void hash_blake2b(uint8_t out[FERRY_HASH_LEN], const void *p, size_t n);
/* out[i] = hash_blake2b(p[i], n[i]) for i < k, the same bytes: eight at
 * a time in vector lanes where the CPU has AVX-512 (about 3 x the speed of
 * one by one on one core), one by one otherwise. Pass every message a
 * caller has at hand: the more, the fewer idle lanes. */
void hash_blake2b_many(uint8_t (*out)[FERRY_HASH_LEN], const void *const *p, const size_t *n,
		       size_t k);
struct hash_state {
	_Alignas(64) uint8_t opaque[384]; /* holds a crypto_generichash_state */
};
void hash_init(struct hash_state *h);
void hash_update(struct hash_state *h, const void *p, size_t n);
void hash_final(struct hash_state *h, uint8_t out[FERRY_HASH_LEN]);
void hash_to_hex(const uint8_t h[FERRY_HASH_LEN], char out[FERRY_HASH_HEX]);
int hash_from_hex(const char *hex, uint8_t out[FERRY_HASH_LEN]) FERRY_WUR;
/* Constant-time comparison: 0 when equal. */
int ferry_memcmp_ct(const void *a, const void *b, size_t n);
/* Cryptographically random bytes / a random nonzero 64-bit id. */
void ferry_random(void *p, size_t n);
uint64_t ferry_random_guid(void);

/* ---- CRC-32C (crc32c.c) --------------------------------------------------
 * The Castagnoli CRC of iSCSI and ext4 (reflected, initial value and final
 * xor 0xFFFFFFFF): crc32c_update(0, "123456789", 9) is 0xE3069283. Pass the
 * previous result to continue over more bytes. Not cryptographic: used
 * only where a BLAKE2b hash already binds the content. _portable is the
 * table-driven code the fast path must match (for tests). Thread-safe. */
uint32_t crc32c_update(uint32_t crc, const void *p, size_t n);
uint32_t crc32c_update_portable(uint32_t crc, const void *p, size_t n);
/* The CRC-32C of A followed by B from crc_a (of A), crc_b (of B) and B's
 * length alone, without B's bytes: crc32c_combine(crc32c_update(0, a, na),
 * crc32c_update(0, b, nb), nb) is crc32c_update(crc32c_update(0, a, na),
 * b, nb). About 2 microseconds at most; thread-safe. */
uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* ---- fault injection (test builds) ---------------------------------------
 * Every write, sync, rename, unlink, create and (through an interposed
 * malloc) allocation of ferry's passes io_fault() first. In a build with
 * -DFERRY_FAULT (make BUILD=build-fault FAULT=1), FERRY_FAULT=KIND:N:ERR
 * makes the Nth call of that kind fail with errno ERR (EIO, ENOSPC,
 * ENOMEM), and FERRY_FAULT=count writes how many calls of each kind a
 * command made to FERRY_FAULT_COUNT (a file) at exit; see lib/fault.c.
 * Elsewhere io_fault() is a constant 0 the compiler removes. */
enum io_fault_op {
	IO_FAULT_WRITE,  /* write, pwrite, ftruncate, fallocate */
	IO_FAULT_FSYNC,  /* fsync of a file or directory */
	IO_FAULT_RENAME,
	IO_FAULT_UNLINK,
	IO_FAULT_CREATE, /* open with O_CREAT, mkdir */
	IO_FAULT_ALLOC,  /* malloc, calloc, realloc */
	IO_FAULT__COUNT
};
#ifdef FERRY_FAULT
/* 0, or the errno the caller must fail with (errno is set to it too). */
int io_fault(enum io_fault_op op);
#else
static inline int io_fault(enum io_fault_op op)
{
	(void)op;
	return 0;
}
#endif

/* ---- fd I/O ------------------------------------------------------------
 * All retry on EINTR and short transfers. */
/* If fd is a pipe, asks the kernel to make its buffer IO_PIPE_SIZE bytes
 * (F_SETPIPE_SZ) so a stream through it moves in 1 MiB steps, not 64 KiB
 * ones: `ferry send | ferry recv` of 378 MB through a 64 KiB pipe switched
 * threads 9,000 times and took 1.07-1.13 s, through a 1 MiB one 2,100
 * times and 0.78-0.89 s. Only
 * advice: a refusal (past /proc/sys/fs/pipe-max-size or the user's pipe
 * quota) or an fd that is not a pipe changes nothing. */
#define IO_PIPE_SIZE ((size_t)1 << 20)
void io_pipe_grow(int fd);
/* Reads up to n bytes; *got < n only at end of file. */
int io_read_full(int fd, void *buf, size_t n, size_t *got) FERRY_WUR;
int io_write_full(int fd, const void *buf, size_t n) FERRY_WUR;
int io_pread_full(int fd, void *buf, size_t n, off_t off, size_t *got) FERRY_WUR;
int io_pwrite_full(int fd, const void *buf, size_t n, off_t off) FERRY_WUR;
int io_fsync_dir(const char *dir) FERRY_WUR;
int io_fsync_dirfd(int dirfd) FERRY_WUR;
/* fsync(fd); what names the file in the error ("pack 'x'"). */
int io_fsync(int fd, const char *what) FERRY_WUR;
/* ftruncate / fallocate (mode as fallocate(2)) with errors naming what. */
int io_ftruncate(int fd, off_t size, const char *what) FERRY_WUR;
int io_fallocate(int fd, int mode, off_t off, off_t len, const char *what) FERRY_WUR;
/* rename / unlink (a missing file is -FERR_NOENT) with errors naming the paths. */
int io_rename(const char *from, const char *to) FERRY_WUR;
int io_unlink(const char *path) FERRY_WUR;
int io_unlinkat(int dirfd, const char *name, const char *dir) FERRY_WUR;
/* Crash-safe replace of dir/name: temp file O_CREAT|O_EXCL|O_CLOEXEC in dir,
 * write, fsync, rename over name, fsync dir. The file gets exactly mode,
 * whatever the umask. On failure the old file is untouched and the temp
 * file removed. */
int io_write_file_atomic(const char *dir, const char *name, const void *data,
			 size_t len, mode_t mode) FERRY_WUR;
/* The same, durable only with sync: without it the replace is atomic for
 * readers (all of the old file or all of the new) but a crash may lose it. */
int io_replace_file(const char *dir, const char *name, const void *data, size_t len,
		    mode_t mode, int sync) FERRY_WUR;
/* Reads a whole small file (at most max bytes, else -FERR_LIMIT) into a
 * malloc'd NUL-terminated buffer the caller frees. */
int io_read_file(const char *path, size_t max, char **out, size_t *len) FERRY_WUR;
/* Opens path with flags, creating it (with exactly mode, whatever the
 * umask) when it does not exist; with O_EXCL in flags it must not exist.
 * O_CLOEXEC is always added. */
int io_open_create(const char *path, int flags, mode_t mode, int *fd) FERRY_WUR;
/* mkdir with exactly mode, whatever the umask; -FERR_EXISTS if it exists. */
int io_mkdir(const char *path, mode_t mode) FERRY_WUR;
/* mkdir -p with mode; existing directories are fine (and keep their
 * mode), the ones it creates get exactly mode whatever the umask. */
int io_mkdirs(const char *path, mode_t mode) FERRY_WUR;

/* ---- progress line (progress.c) ------------------------------------------
 * The text of a status line for long work: what, bytes (and files) done,
 * of the total when known, rate over the last seconds, percentage and
 * time left. Draws nothing itself. */
struct progress {
	char what[128];
	uint64_t total;             /* bytes; 0: unknown (no percentage, no ETA); may be
				     * an estimate, wrong either way: the line clamps */
	uint64_t bytes, files;
	uint64_t t0, now;
	uint64_t win_t0, win_t, win_bytes0, win_bytes1;
};
void progress_init(struct progress *p, const char *what, uint64_t total_bytes, uint64_t now_ns);
void progress_update(struct progress *p, uint64_t bytes, uint64_t files, uint64_t now_ns);
/* Writes the line (no newline) into buf of n bytes (n > 0); returns its
 * length: "tank/a@s1: 1.2G of 4.0G (30%), 8100 files, 95M/s, ETA 30s", or
 * without a total "bk/a: 1.2G, 95M/s". A total below the bytes done shows
 * as the bytes done (100 %, never more); a time left beyond 99 hours as
 * ">99h", whatever the total (an estimate from a stream is untrusted). */
size_t progress_format(const struct progress *p, char *buf, size_t n);

/* ---- misc ---------------------------------------------------------------- */
/* Parses a size like "128K", "1M", "4096", "1.5G" (powers of 1024) into
 * bytes. -FERR_INVAL on garbage, -FERR_OVERFLOW past UINT64_MAX.
 * Units are case-insensitive and may be followed by "B" or "iB" ("16KB",
 * "16KiB", "512B"); a fraction of a byte rounds down ("1.1K" is 1126). */
int parse_size(const char *s, uint64_t *out) FERRY_WUR;
/* Formats like zfs_nicenum: "0", "512", "128K", "1.50M"; with bytes_suffix
 * values under 1024 get a "B" ("0B", "512B"). buf should hold 16 bytes. */
void format_nicenum(uint64_t v, char *buf, size_t n, int bytes_suffix);
/* The current time in nanoseconds since the epoch: every "now" of ferry
 * comes from here. The wall clock (CLOCK_REALTIME), unless FERRY_NOW holds
 * an ISO 8601 UTC time: then the process starts at that time and the
 * clock runs on from there (for tests and simulations; ferry(8)). An
 * invalid FERRY_NOW is ignored here; ferry_now_check says so. */
uint64_t ferry_now_ns(void);
/* 0, or -FERR_INVAL naming the problem when FERRY_NOW is set but invalid
 * (the CLI refuses to run then rather than use the real clock). */
int ferry_now_check(void) FERRY_WUR;
/* Parses an ISO 8601 UTC time, "YYYY-MM-DDTHH:MM[:SS[.frac]]" with 'T' or
 * a space, then "Z", "+00:00" or nothing, into nanoseconds since the
 * epoch. -FERR_INVAL on anything else (other offsets, years before 1970,
 * out-of-range fields). *ns is written only on success. */
int parse_time_utc(const char *s, uint64_t *ns) FERRY_WUR;

/* ---- directory stack (dirstack.c) -----------------------------------------
 * The open directories of an iterative tree walk: level 0 (the bottom, the
 * walk's root) and each directory descended into. Whatever the depth, at
 * most keep + 1 fds above the bottom are open: pushing past that closes the
 * shallowest one (calling before_close first, so jobs that use it can
 * finish), and dirstack_open_parent reopens it on the way back up through
 * ".." of the level left, taking it only when st_dev/st_ino are the ones
 * recorded at the push. strict: such a mismatch is an error (restore);
 * otherwise the level is looked for again by names from the nearest open
 * level below, every step checked (capture), and an error only if it is
 * gone. Nothing outside the tree is ever opened. Embedded: init/release. */
struct dirstack_level {
	int fd;        /* -1 while closed */
	dev_t dev;
	ino_t ino;
	char *name;    /* in the level below; NULL at the bottom */
};
struct dirstack {
	struct dirstack_level *lv;
	size_t n, cap;
	unsigned keep, nopen;  /* nopen: open fds above the bottom */
	size_t low;            /* levels 1..low-1 are all closed */
	unsigned moved;        /* times ".." was not the directory recorded */
	int strict;
	int (*before_close)(void *arg); /* may be NULL */
	void *arg;
};
void dirstack_init(struct dirstack *s, unsigned keep, int strict);
/* Closes every fd still held; s reusable after dirstack_init. */
void dirstack_release(struct dirstack *s);
/* Pushes directory fd (the stack owns it from now on, closed on failure
 * too), named name in the current top (ignored for the bottom). On a
 * before_close error the level is pushed all the same. */
int dirstack_push(struct dirstack *s, int fd, const char *name) FERRY_WUR;
/* The top level's fd (borrowed; valid until the next push or pop), -1 when
 * the stack is empty or the top could not be reopened. */
int dirstack_fd(const struct dirstack *s);
/* Levels on the stack, bottom included. */
size_t dirstack_depth(const struct dirstack *s);
/* Makes sure the level below the top has its fd open (see above). On an
 * error that level stays closed (dirstack_fd gives -1 once the top is
 * popped). */
int dirstack_open_parent(struct dirstack *s) FERRY_WUR;
/* Closes the top level's fd and drops the level. */
void dirstack_pop(struct dirstack *s);

/* ---- the ordered pipeline (pipeline.c) ------------------------------------
 * The one way ferry spreads work over cores (capture, restore, recv, send,
 * the pack flusher and its syncer use it; nothing else starts a thread). The caller
 * takes a job slot, fills it and submits it; workers run it; the caller's
 * thread gets every job back in submission order (ops.done), so what must
 * happen in order (blocks into a pack, WRITEs into a stream, a file's
 * attributes after its data) happens there while the work itself runs
 * anywhere.
 *
 * Memory: the pipeline owns slots job slots of job_size bytes (zeroed when
 * created). A slot is reused once its job is collected, and keeps what the
 * caller left in it (buffers it grew; ops.release frees them at the end),
 * so memory in flight is bounded by slots jobs, whatever the input.
 * Taking a slot when all are in flight first collects the oldest job:
 * that is the back-pressure, the same for every user.
 *
 * Errors: a job's run that fails, or an ops.done that fails, is the first
 * error. It cancels the rest at once: jobs not started are never run,
 * running ones are waited for, and every one goes to ops.cancel in order
 * before the call that found the error returns. So when any pipeline call
 * returns an error, no job is running or queued: a resource the jobs use
 * (an fd, a buffer) may go. The error (code and detail text) is kept:
 * every later call returns it again, so no caller can go on past a lost
 * job by mistake.
 *
 * Callbacks (ctx is pipeline_new's): run(job) on a worker thread, or on
 * the caller's with no worker; it may not touch what the caller's thread
 * owns unless the job says so. It returns 0 or a negative FERR_*, with a
 * detail that travels to the caller's thread. done(job, result) on the
 * caller's thread, in submission order, for every job collected before the
 * first error and for the one that failed (result < 0: done may add context
 * and return its own error; the pipeline fails whatever it returns). It
 * returns 0 or a negative FERR_* that fails the pipeline. cancel(job)
 * (may be NULL) instead of done for a job dropped by an error or
 * pipeline_cancel, run or not: it gives back what the job holds (closes
 * its fd). release(job) (may be NULL) once per slot ever handed out, at
 * pipeline_free. prep(jobs, n) (may be NULL) on a worker before it runs
 * n > 1 jobs it took at once, in submission order (up to PIPELINE_BATCH,
 * a fair share of those waiting): what costs less for many jobs together
 * (hashing blocks eight at a time) may be done there ahead of run. It
 * cannot fail; run must come to the same result whether prep ran or not.
 * No callback may call the pipeline. Not thread-safe: one caller thread. */
struct pipeline;
struct pipeline_ops {
	int (*run)(void *job, void *ctx);
	int (*done)(void *job, int result, void *ctx);
	void (*cancel)(void *job, void *ctx);
	void (*release)(void *job, void *ctx);
	void (*prep)(void *const *jobs, size_t n, void *ctx);
};
/* The most jobs a worker takes at once for ops.prep. */
#define PIPELINE_BATCH 8
/* How many workers to start: asked, or one per online CPU when asked is 0
 * (the one place this rule lives). */
unsigned pipeline_threads(unsigned asked);
/* threads workers (0: none, every job runs inside pipeline_submit on the
 * caller's thread), slots >= 1 jobs of job_size bytes. ops is copied. */
int pipeline_new(struct pipeline **out, unsigned threads, unsigned slots, size_t job_size,
		 const struct pipeline_ops *ops, void *ctx) FERRY_WUR;
/* The next free slot in *job (borrowed until it is submitted), collecting
 * the oldest job first when every slot is in flight. Until it is
 * submitted, another call gives the same slot. */
int pipeline_job(struct pipeline *pl, void **job) FERRY_WUR;
/* Queues job, the slot pipeline_job gave. From here on the job is the
 * pipeline's: it reaches done or cancel whatever this returns (after an
 * earlier error, cancel at once). */
int pipeline_submit(struct pipeline *pl, void *job) FERRY_WUR;
/* Queues job, the slot pipeline_job gave, as already run with result 0:
 * no worker runs it or is woken for it; ops.done takes it in its place in
 * the order (ops.cancel after an error, as for any job). For a record
 * that needs no work but must follow the jobs before it. */
int pipeline_submit_done(struct pipeline *pl, void *job) FERRY_WUR;
/* Collects every job in flight, in order: 0, or the first error. */
int pipeline_drain(struct pipeline *pl) FERRY_WUR;
/* Collects, in order, the jobs at the head that are done, without waiting
 * for one that is not: 0, or the first error. */
int pipeline_collect_done(struct pipeline *pl) FERRY_WUR;
/* Drops every job in flight (ops.cancel for each); a kept error stays.
 * NULL is a no-op. */
void pipeline_cancel(struct pipeline *pl);
/* Jobs submitted and not yet collected. */
unsigned pipeline_pending(const struct pipeline *pl);
unsigned pipeline_nthreads(const struct pipeline *pl);
/* Cancels what is in flight, stops the workers, releases every slot and
 * frees the pipeline. NULL is a no-op. */
void pipeline_free(struct pipeline *pl);

/* ---- libraries loaded on first use (lazy.c) -------------------------------
 * A library that only some commands need is not linked: each start of
 * every command would pay for it and all it brings (libarchive and its 12,
 * libcurl and libmicrohttpd and their 39). The first command that uses it
 * opens it by soname and fills a table of its functions (net/lazy.c,
 * lib/arc.c). A lazy_lib records that one load; LAZY_LIB_INIT(soname)
 * makes it. */
struct lazy_lib {
	pthread_once_t once;
	const char *soname;
	int rc;
	char msg[512];
};
#define LAZY_LIB_INIT(so) {PTHREAD_ONCE_INIT, (so), 0, ""}
/* dlopen of L's soname; NULL with the failure recorded in L. */
void *lazy_open(struct lazy_lib *L);
/* Function name in h; NULL with the failure recorded in L (a library older
 * than the headers ferry was built with). */
void *lazy_sym(struct lazy_lib *L, void *h, const char *name);
/* Runs load for L once per process (thread-safe); then 0, or L's failure
 * as -FERR_UNSUPPORTED with "WHAT: " and its message, on every call. */
int lazy_once(struct lazy_lib *L, void (*load)(void), const char *what) FERRY_WUR;
/* In a loader with L, its handle h and its table api: fills member n from
 * function prefix##n, or leaves the loader at the first miss (the handle
 * stays open: nothing will use it, and it costs no more). POSIX makes
 * dlsym's pointer callable as the function's type. */
#define LAZY_SET(prefix, n)                                                  \
	if (!(api->n = (__typeof__(api->n))lazy_sym(L, h, prefix #n)))      \
		return;

#include "banned.h"
#endif
