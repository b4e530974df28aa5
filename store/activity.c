/* store/activity.c — who is using a pool, for the message of a command that
 * finds it busy: "pool 'tank' is busy: a receive into tank/x (pid 1234) is
 * running" instead of SQLite's "database is locked".
 *
 * Two sources, both read-only for the asker:
 *  - the kernel's lock table (/proc/locks) says which process holds what:
 *    the catalogue's write lock is SQLite's POSIX lock on byte 120 of the
 *    -shm file (WAL_WRITE_LOCK at WALINDEX_LOCK_OFFSET in SQLite's wal.c),
 *    the gc lock is a flock on gc.lock (shared by every writer and reader,
 *    exclusive for gc). Reading the table opens neither file, so no POSIX
 *    lock of this process is dropped (closing any fd of a file drops them
 *    all, SQLite's included);
 *  - activity records say what a ferry process is doing: one small file per
 *    pool handle under POOL/run/, "STARTTIME DESCRIPTION", made when the
 *    handle starts writing or reading blocks (or opens a write transaction)
 *    and removed when it closes. STARTTIME (field 22 of /proc/PID/stat)
 *    tells a live process from a dead one whose pid was reused, so records
 *    left by a killed process are ignored (and removed when seen).
 * Records are advisory: failing to make one (a full disk) changes nothing
 * but the wording of another command's busy message. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

#define ACT_DIR "run"
#define ACT_DESC_MAX 256
#define ACT_HOLDERS_MAX 16
#define SHM_WRITE_LOCK_BYTE 120

static char act_default[ACT_DESC_MAX];
/* Numbers the records of this process's handles. Threads of one process
 * (a server's requests, concurrent receives) open pools at once, so it is
 * taken atomically: a plain ++ could give two handles one name, and the
 * first to close would remove the other's record. */
static unsigned act_seq;

void act_name_next(char *out, size_t n)
{
	unsigned seq = __atomic_fetch_add(&act_seq, 1, __ATOMIC_RELAXED);
	snprintf(out, n, "%ld.%u", (long)getpid(), seq);
}

void store_activity_default(const char *what)
{
	snprintf(act_default, sizeof act_default, "%s", what ? what : "");
}

/* Field 22 of /proc/PID/stat: the process's start time in clock ticks
 * since boot; 0 when it cannot be read (no such process). */
static uint64_t proc_starttime(long pid)
{
	char path[64], buf[1024];
	size_t got = 0;
	int fd, r;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	r = io_read_full(fd, buf, sizeof buf - 1, &got);
	close(fd);
	if (r < 0) {
		ferry_err_clear();
		return 0;
	}
	buf[got] = 0;
	/* the command name is in parentheses and may hold spaces */
	char *s = strrchr(buf, ')');
	if (!s)
		return 0;
	s++;
	for (int field = 3; field <= 22; field++) {
		while (*s == ' ')
			s++;
		if (field == 22)
			return strtoull(s, NULL, 10);
		while (*s && *s != ' ')
			s++;
	}
	return 0;
}

static void act_path(const struct store_pool *p, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s%s%s", p->path, ACT_DIR, name ? "/" : "", name ? name : "");
}

/* Whether record name ("PID.N", content "STARTTIME ...") is of a live
 * process; 1 when it cannot tell. */
static int act_live(const char *dir, const char *name, const char *content)
{
	long pid = strtol(name, NULL, 10);
	if (pid <= 0)
		return 1;
	uint64_t now = proc_starttime(pid), start = strtoull(content, NULL, 10);
	(void)dir;
	return now && (!start || start == now);
}

static int act_read(const char *path, char *buf, size_t n)
{
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = io_read_full(fd, buf, n - 1, &got);
	close(fd);
	if (r < 0) {
		ferry_err_clear();
		return -1;
	}
	buf[got] = 0;
	return 0;
}

/* Removes a record, keeping the thread's error detail. A record that
 * stays (another sweeper removed it first, run/ cannot be written) is of
 * a process that is gone or going: act_live tells, every reader skips it
 * and the next sweep tries again. */
static void act_unlink(const char *path)
{
	struct ferry_errsave e;
	ferry_err_save(&e);
	if (io_unlink(path) < 0)
		ferry_err_restore(&e);
}

/* Removes the records of processes that are gone (killed: nobody else
 * would), so run/ holds only live ones. */
static void act_sweep(const char *dir)
{
	char path[PATH_MAX + 300], buf[ACT_DESC_MAX + 32];
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		/* a record, or the temporary file of one (".PID.N.tmp-..."),
		 * left when its writer was killed before the rename */
		const char *name = de->d_name;
		if (name[0] == '.' && isdigit((unsigned char)name[1]) && strstr(name, ".tmp-"))
			name++;
		else if (!isdigit((unsigned char)name[0]))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (act_read(path, buf, sizeof buf) < 0)
			buf[0] = 0;
		if (!act_live(dir, name, buf))
			act_unlink(path);
	}
	closedir(d);
}

/* Writes the handle's record (replacing it), best effort. */
static void act_write(struct store_pool *p)
{
	char dir[PATH_MAX], line[ACT_DESC_MAX + 32];
	const char *what = p->activity[0] ? p->activity : act_default[0] ? act_default : "ferry";
	int r;
	act_path(p, NULL, dir, sizeof dir);
	if ((r = io_mkdir(dir, STORE_DIR_MODE)) < 0 && r != -FERR_EXISTS)
		goto out;
	if (!p->act_name[0]) {
		act_sweep(dir);
		act_name_next(p->act_name, sizeof p->act_name);
	}
	int n = snprintf(line, sizeof line, "%" PRIu64 " %s\n", proc_starttime(getpid()), what);
	/* no fsync: a record a crash loses was about a process that is gone */
	if (io_replace_file(dir, p->act_name, line, (size_t)n, STORE_FILE_MODE, 0) < 0)
		p->act_name[0] = 0;
out:
	ferry_err_clear();
}

void act_begin(struct store_pool *p)
{
	if (p->flags & STORE_OPEN_RDONLY)
		return;
	if (p->act_refs++ > 0 && p->act_name[0])
		return;
	/* keep the caller's error detail: this runs on its paths too */
	struct ferry_errsave e;
	ferry_err_save(&e);
	act_write(p);
	ferry_err_restore(&e);
}

void act_end(struct store_pool *p)
{
	if ((p->flags & STORE_OPEN_RDONLY) || p->act_refs == 0)
		return;
	if (--p->act_refs == 0)
		act_drop(p);
}

void act_drop(struct store_pool *p)
{
	char path[PATH_MAX];
	if (!p->act_name[0])
		return;
	act_path(p, p->act_name, path, sizeof path);
	act_unlink(path);
	p->act_name[0] = 0;
}

void store_pool_activity(struct store_pool *p, const char *what)
{
	snprintf(p->activity, sizeof p->activity, "%s", what ? what : "");
	if (p->act_name[0]) {
		struct ferry_errsave e;
		ferry_err_save(&e);
		act_write(p);
		ferry_err_restore(&e);
	}
}

/* The description of what live process pid does with this pool, from its
 * records; 0 when it has none. Records of dead processes are removed. */
static int act_describe(struct store_pool *p, long pid, char *out, size_t n)
{
	char dir[PATH_MAX], path[PATH_MAX + 300], buf[ACT_DESC_MAX + 32], pre[32];
	int found = 0;
	act_path(p, NULL, dir, sizeof dir);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	snprintf(pre, sizeof pre, "%ld.", pid);
	struct dirent *de;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, pre, strlen(pre)) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (act_read(path, buf, sizeof buf) < 0)
			continue;
		char *nl = strchr(buf, '\n'), *sp = strchr(buf, ' ');
		if (nl)
			*nl = 0;
		if (!sp)
			continue;
		if (!act_live(dir, de->d_name, buf)) {
			act_unlink(path);
			continue;
		}
		snprintf(out, n, "%s", sp + 1);
		found = 1;
	}
	closedir(d);
	return found;
}

/* Processes other than this one that hold a lock on file: a POSIX write
 * lock covering byte `byte` (byte >= 0), or any flock (byte < 0). */
static size_t lock_holders(const char *file, long byte, long *pids, size_t max)
{
	struct stat st;
	char line[512];
	size_t n = 0;
	long self = (long)getpid();
	if (stat(file, &st) != 0)
		return 0;
	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof line, f)) {
		char kind[16], adv[16], type[16], end[32];
		long pid;
		unsigned maj, min;
		unsigned long long ino;
		long long start;
		const char *s = strchr(line, ':');
		if (!s || strstr(line, "->")) /* waiters are not holders */
			continue;
		if (sscanf(s + 1, "%15s %15s %15s %ld %x:%x:%llu %lld %31s", kind, adv, type, &pid,
			   &maj, &min, &ino, &start, end) != 9)
			continue;
		if (ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) ||
		    min != minor(st.st_dev) || pid <= 0 || pid == self)
			continue;
		if (byte >= 0) {
			long long last = strcmp(end, "EOF") ? strtoll(end, NULL, 10) : LLONG_MAX;
			if (strcmp(kind, "POSIX") || strcmp(type, "WRITE") || start > byte || last < byte)
				continue;
		} else if (strcmp(kind, "FLOCK")) {
			continue;
		}
		int dup = 0;
		for (size_t i = 0; i < n; i++)
			dup |= pids[i] == pid;
		if (!dup)
			pids[n++] = pid;
	}
	fclose(f);
	return n;
}

static void proc_comm(long pid, char *out, size_t n)
{
	char path[64];
	size_t got = 0;
	snprintf(path, sizeof path, "/proc/%ld/comm", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	out[0] = 0;
	if (fd < 0)
		return;
	if (io_read_full(fd, out, n - 1, &got) < 0)
		got = 0;
	close(fd);
	out[got] = 0;
	for (size_t i = 0; out[i]; i++)
		if (out[i] == '\n' || !isprint((unsigned char)out[i]))
			out[i] = 0;
	ferry_err_clear();
}

int act_busy(struct store_pool *p, int what)
{
	char file[PATH_MAX + 32], desc[ACT_DESC_MAX], comm[64];
	long pids[ACT_HOLDERS_MAX];
	size_t n;
	if (what == ACT_CATALOG) {
		snprintf(file, sizeof file, "%s/%s-shm", p->path, STORE_CATALOG);
		n = lock_holders(file, SHM_WRITE_LOCK_BYTE, pids, ACT_HOLDERS_MAX);
	} else {
		snprintf(file, sizeof file, "%s/%s", p->path, PACK_GC_LOCK);
		n = lock_holders(file, -1, pids, ACT_HOLDERS_MAX);
	}
	if (n == 0)
		return ferry_err(FERR_BUSY, "pool '%s' is busy: %s", p->name,
				 what == ACT_CATALOG
					 ? "another process is writing to its catalogue"
					 : "a snapshot, receive, restore or send is running");
	/* the first holder ferry can describe, else the first one */
	size_t pick = 0;
	int described = 0;
	for (size_t i = 0; i < n && !described; i++)
		if (act_describe(p, pids[i], desc, sizeof desc)) {
			pick = i;
			described = 1;
		}
	char more[48] = "";
	if (n > 1)
		snprintf(more, sizeof more, " and %zu more", n - 1);
	if (described)
		return ferry_err(FERR_BUSY, "pool '%s' is busy: %s (pid %ld)%s %s running", p->name,
				 desc, pids[pick], more, n > 1 ? "are" : "is");
	proc_comm(pids[0], comm, sizeof comm);
	return ferry_err(FERR_BUSY, "pool '%s' is busy: pid %ld%s%s%s%s %s", p->name, pids[0],
			 comm[0] ? " (" : "", comm, comm[0] ? ")" : "", more,
			 what == ACT_CATALOG ? "holds its catalogue's write lock" : "is using it");
}
