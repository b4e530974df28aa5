/* sync/lock.c — one lock per (source dataset, destination), so two syncs
 * of the same pair never overlap: a file under $FERRY_HOME/locks named by
 * the hash of the pair, locked with flock (gone with its process, even
 * after kill -9) and holding the pid and what the holder does, for the
 * busy message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct sync_lock {
	int fd;
};

/* What the holder wrote: "pid\twhat". */
static void holder(int fd, char *buf, size_t n)
{
	size_t got = 0;
	buf[0] = 0;
	if (io_pread_full(fd, buf, n - 1, 0, &got) < 0) {
		ferry_err_clear();
		got = 0;
	}
	buf[got] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

int lock_take(const char *key, const char *what, int wait, uint64_t start_ns,
	      struct sync_lock **out)
{
	char home[4096], dir[4200], path[4300], hex[FERRY_HASH_HEX], info[512];
	uint8_t h[FERRY_HASH_LEN];
	struct sync_lock *l;
	int r, fd = -1;
	if ((r = store_home(home, sizeof home)) < 0)
		return r;
	snprintf(dir, sizeof dir, "%s/locks", home);
	if ((r = io_mkdirs(dir, 0700)) < 0)
		return r;
	hash_blake2b(h, key, strlen(key));
	hash_to_hex(h, hex);
	snprintf(path, sizeof path, "%s/sync-%.32s.lock", dir, hex);
	if ((r = io_open_create(path, O_RDWR, 0600, &fd)) < 0)
		return r;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			r = ferry_err_errno(errno, "cannot lock '%s'", path);
			close(fd);
			return r;
		}
		uint64_t now = ferry_now_ns();
		if (wait < 0 || (wait > 0 && now - start_ns >= (uint64_t)wait * 1000000000u)) {
			holder(fd, info, sizeof info);
			close(fd);
			char *tab = strchr(info, '\t');
			if (tab) {
				*tab = 0;
				return ferry_err(FERR_BUSY, "%s is already running (pid %s)", tab + 1, info);
			}
			return ferry_err(FERR_BUSY, "%s is already running", what);
		}
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	/* who holds it, for the message of the next one */
	snprintf(info, sizeof info, "%ld\t%s\n", (long)getpid(), what);
	if (io_ftruncate(fd, 0, path) < 0 || io_pwrite_full(fd, info, strlen(info), 0) < 0)
		ferry_err_clear(); /* only the wording of a busy message is lost */
	if (!(l = malloc(sizeof *l))) {
		close(fd);
		return ferry_err(FERR_NOMEM, "taking a sync lock");
	}
	l->fd = fd;
	*out = l;
	return 0;
}

void lock_release(struct sync_lock *l)
{
	if (!l)
		return;
	close(l->fd); /* closing the last fd releases the flock */
	free(l);
}
