/* sync/spawn.c — a child process (ssh to the far side) with pipes on its
 * stdin, stdout and stderr. A thread drains stdout and stderr while the
 * caller writes the stream into stdin, so a child that talks while it
 * reads never blocks on a full pipe. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

static void err_keep(struct proc *pr, const char *b, size_t n)
{
	/* the end of stderr: its last line says what failed */
	if (n >= sizeof pr->err - 1) {
		b += n - (sizeof pr->err - 1);
		n = sizeof pr->err - 1;
	}
	if (pr->errlen + n > sizeof pr->err - 1) {
		size_t drop = pr->errlen + n - (sizeof pr->err - 1);
		memmove(pr->err, pr->err + drop, pr->errlen - drop);
		pr->errlen -= drop;
	}
	memcpy(pr->err + pr->errlen, b, n);
	pr->errlen += n;
	pr->err[pr->errlen] = 0;
}

static void *drain(void *arg)
{
	struct proc *pr = arg;
	char buf[65536];
	struct pollfd fds[2] = {{pr->out_fd, POLLIN, 0}, {pr->err_fd, POLLIN, 0}};
	int open_n = 2;
	while (open_n > 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t got = read(fds[i].fd, buf, sizeof buf);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				fds[i].fd = -1;
				open_n--;
				continue;
			}
			if (i == 1)
				err_keep(pr, buf, (size_t)got);
			else if (!pr->overflow && fbuf_append(&pr->out, buf, (size_t)got) < 0)
				pr->overflow = 1; /* keep draining: the child must not block */
		}
	}
	return NULL;
}

int proc_start(char *const *argv, int with_stdin, size_t out_max, struct proc *pr)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, devnull = -1;
	posix_spawn_file_actions_t fa;
	int r, fa_ok = 0;
	memset(pr, 0, sizeof *pr);
	pr->in_fd = pr->out_fd = pr->err_fd = -1;
	fbuf_init(&pr->out, out_max);
	if ((with_stdin ? pipe2(in, O_CLOEXEC) : ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ? -1 : 0)) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r = ferry_err_errno(errno, "cannot make pipes for '%s'", argv[0]);
		goto fail;
	}
	if ((r = posix_spawn_file_actions_init(&fa)) != 0) {
		r = ferry_err_errno(r, "cannot start '%s'", argv[0]);
		goto fail;
	}
	fa_ok = 1;
	/* the ends are O_CLOEXEC: only the dup2'ed copies reach the child */
	if ((r = posix_spawn_file_actions_adddup2(&fa, with_stdin ? in[0] : devnull, 0)) != 0 ||
	    (r = posix_spawn_file_actions_adddup2(&fa, out[1], 1)) != 0 ||
	    (r = posix_spawn_file_actions_adddup2(&fa, err[1], 2)) != 0) {
		r = ferry_err_errno(r, "cannot start '%s'", argv[0]);
		goto fail;
	}
	if ((r = posix_spawnp(&pr->pid, argv[0], &fa, NULL, argv, environ)) != 0) {
		r = ferry_err_errno(r, "cannot run '%s'", argv[0]);
		goto fail;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (with_stdin)
		close(in[0]);
	else
		close(devnull);
	close(out[1]);
	close(err[1]);
	pr->in_fd = with_stdin ? in[1] : -1;
	pr->out_fd = out[0];
	pr->err_fd = err[0];
	pthread_t th;
	if ((r = pthread_create(&th, NULL, drain, pr)) != 0) {
		r = ferry_err_errno(r, "cannot start a thread for '%s'", argv[0]);
		kill(pr->pid, SIGKILL);
		int st;
		waitpid(pr->pid, &st, 0);
		close(pr->out_fd);
		close(pr->err_fd);
		if (pr->in_fd >= 0)
			close(pr->in_fd);
		fbuf_release(&pr->out);
		return r;
	}
	pr->reader = th;
	pr->reader_on = 1;
	return 0;
fail:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	if (devnull >= 0)
		close(devnull);
	fbuf_release(&pr->out);
	return r;
}

int proc_finish(struct proc *pr, int *status)
{
	int st = 0, r = 0;
	if (pr->in_fd >= 0) {
		close(pr->in_fd);
		pr->in_fd = -1;
	}
	while (waitpid(pr->pid, &st, 0) < 0) {
		if (errno != EINTR) {
			r = ferry_err_errno(errno, "waiting for pid %d", (int)pr->pid);
			break;
		}
	}
	if (pr->reader_on) {
		pthread_join(pr->reader, NULL);
		pr->reader_on = 0;
	}
	close(pr->out_fd);
	close(pr->err_fd);
	pr->out_fd = pr->err_fd = -1;
	if (r == 0)
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
	return r;
}

const char *proc_last_err(struct proc *pr)
{
	/* the last nonempty line */
	while (pr->errlen && (pr->err[pr->errlen - 1] == '\n' || pr->err[pr->errlen - 1] == '\r'))
		pr->err[--pr->errlen] = 0;
	char *nl = strrchr(pr->err, '\n');
	return nl ? nl + 1 : pr->err;
}
