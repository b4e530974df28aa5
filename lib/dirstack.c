/* lib/dirstack.c — the directories of an iterative tree walk, with a
 * bounded number of open fds whatever the depth.
 *
 * A recursive walk that keeps one fd per level runs out of stack and of
 * fds in a deep tree; paths are no way out either (they outgrow PATH_MAX).
 * So each level records its directory's name and st_dev/st_ino, and only
 * the bottom level and the deepest few keep an fd. Going back up to a
 * level whose fd was closed reopens it through ".." of the level above it
 * (the one just left), and takes it only if it is the very directory
 * recorded: anything else means the tree moved under the walk, and nothing
 * outside the tree is ever used. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib.h"

#define DIRSTACK_OFLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

void dirstack_init(struct dirstack *s, unsigned keep, int strict)
{
	memset(s, 0, sizeof *s);
	s->keep = keep ? keep : 1;
	s->strict = strict;
	s->low = 1;
}

static void level_close(struct dirstack *s, size_t i)
{
	if (s->lv[i].fd < 0)
		return;
	close(s->lv[i].fd);
	s->lv[i].fd = -1;
	if (i > 0)
		s->nopen--;
}

void dirstack_release(struct dirstack *s)
{
	while (s->n)
		dirstack_pop(s);
	free(s->lv);
	s->lv = NULL;
	s->cap = 0;
}

int dirstack_fd(const struct dirstack *s)
{
	return s->n ? s->lv[s->n - 1].fd : -1;
}

size_t dirstack_depth(const struct dirstack *s)
{
	return s->n;
}

/* Closes the shallowest open fd above the bottom, except the top's; 1 when
 * there is none. */
static int evict(struct dirstack *s)
{
	size_t i = s->low;
	while (i + 1 < s->n && s->lv[i].fd < 0)
		i++;
	if (i + 1 >= s->n)
		return 1; /* only the top is open above the bottom */
	if (s->before_close) {
		int r = s->before_close(s->arg);
		if (r < 0)
			return r;
	}
	level_close(s, i);
	s->low = i + 1;
	return 0;
}

int dirstack_push(struct dirstack *s, int fd, const char *name)
{
	struct stat sb;
	int r;
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat directory '%s'", name ? name : ".");
		close(fd);
		return r;
	}
	if ((r = VEC_GROW(s->lv, s->cap, s->n, 64, "walking a tree")) < 0) {
		close(fd);
		return r;
	}
	struct dirstack_level *l = &s->lv[s->n];
	l->name = NULL;
	if (s->n && !(l->name = strdup(name ? name : ""))) {
		close(fd);
		return ferry_err(FERR_NOMEM, "walking a tree");
	}
	l->fd = fd;
	l->dev = sb.st_dev;
	l->ino = sb.st_ino;
	if (s->n++)
		s->nopen++;
	while (s->nopen > s->keep)
		if ((r = evict(s)) != 0)
			return r < 0 ? r : 0; /* on errors the level stays pushed */
	return 0;
}

void dirstack_pop(struct dirstack *s)
{
	if (!s->n)
		return;
	level_close(s, s->n - 1);
	free(s->lv[s->n - 1].name);
	s->n--;
	if (s->low > s->n)
		s->low = s->n ? s->n : 1;
}

static int same_dir(int fd, const struct dirstack_level *l)
{
	struct stat sb;
	return fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_dev == l->dev &&
	       sb.st_ino == l->ino;
}

static void install(struct dirstack *s, size_t t, int fd)
{
	s->lv[t].fd = fd;
	s->nopen++;
	if (t < s->low)
		s->low = t;
}

/* Opens level t again by names, from the nearest open level below it,
 * checking every directory on the way. */
static int reopen_by_names(struct dirstack *s, size_t t)
{
	size_t a = t - 1;
	while (s->lv[a].fd < 0)
		a--; /* the bottom is always open */
	int cur = s->lv[a].fd, owned = -1;
	for (size_t j = a + 1; j <= t; j++) {
		int fd = openat(cur, s->lv[j].name, DIRSTACK_OFLAGS);
		int e = errno;
		if (owned >= 0)
			close(owned);
		owned = -1;
		if (fd < 0)
			return ferry_err_errno(e, "cannot open directory '%s' again", s->lv[j].name);
		if (!same_dir(fd, &s->lv[j])) {
			close(fd);
			return ferry_err(FERR_IO, "directory '%s' was replaced while being walked",
					 s->lv[j].name);
		}
		owned = cur = fd;
	}
	install(s, t, owned);
	return 0;
}

int dirstack_open_parent(struct dirstack *s)
{
	if (s->n < 2)
		return ferry_err(FERR_INVAL, "walking a tree: no parent level");
	size_t t = s->n - 2;
	if (s->lv[t].fd >= 0)
		return 0;
	int top = s->lv[t + 1].fd;
	if (top >= 0) {
		int fd = openat(top, "..", DIRSTACK_OFLAGS);
		if (fd >= 0 && same_dir(fd, &s->lv[t])) {
			install(s, t, fd);
			return 0;
		}
		int e = errno;
		if (fd >= 0) {
			close(fd);
			s->moved++;
			if (s->strict)
				return ferry_err(FERR_IO, "directory '%s' moved while being walked",
						 s->lv[t + 1].name);
		} else if (s->strict && e != EACCES && e != EPERM) {
			return ferry_err_errno(e, "cannot open the parent of '%s'", s->lv[t + 1].name);
		}
		/* not searchable (".." needs search permission on the directory
		 * left), or moved: look for the parent where it was */
	}
	return reopen_by_names(s, t);
}
