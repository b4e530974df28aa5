/* restore/volume.c — a volume restored to an image file (through a
 * temporary file renamed over it, so a failed restore leaves the old image)
 * or written in place to a block device (refused when smaller). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Writes the volume into fd (the device, or the image's temporary file)
 * and makes it durable; an image also gets the volume's attributes. An
 * image's blocks are decoded, checked and written on the workers (its
 * holes stay holes); a device's on this thread, holes written as zeros. */
static int volume_write(struct rst *r, int fd, const char *path, const struct node_entry *e,
			int blk)
{
	uint64_t devsize = 0;
	int rc;
	if (blk && ioctl(fd, BLKGETSIZE64, &devsize) != 0)
		return ferry_err_errno(errno, "cannot read the size of block device '%s'", path);
	if (blk && devsize < e->size)
		/* refused before a byte is written, not at the first short write */
		return ferry_err(FERR_INVAL, "block device '%s' holds %llu bytes; the volume needs %llu",
				 path, (unsigned long long)devsize, (unsigned long long)e->size);
	if (blk) {
		if ((rc = rst_write_data(r, fd, e, 1)) < 0)
			return rc;
	} else {
		if ((rc = rst_queue_data(r, fd, path, e)) < 0) {
			/* every job done with fd before it closes; rc is the
			 * failure to report */
			struct ferry_errsave es;
			ferry_err_save(&es);
			(void)rst_drain(r);
			ferry_err_restore(&es);
			return rc;
		}
		if ((rc = rst_drain(r)) < 0)
			return rc;
		if (ftruncate(fd, (off_t)e->size) != 0)
			return ferry_err_errno(errno, "cannot set the size of '%s'", path);
	}
	if (!blk)
		rst_set_attrs_fd(r, fd, e, 0);
	return io_fsync(fd, path);
}

/* An image file is written to a temporary file beside it and renamed over
 * it once whole and durable, so an interrupted or failed restore leaves
 * the old image as it was (a symlink to an image replaces the file it
 * names and stays a link). A block device is written in place, as is
 * anything else that is neither a file nor missing (a character device,
 * a fifo): there is no file to replace. */
int rst_volume(struct rst *r, const char *path, const struct node_entry *e)
{
	struct stat sb;
	char *target = NULL, *tmp = NULL, *slash;
	int fd = -1, rc, blk = 0, inplace = 0;
	if (stat(path, &sb) == 0) {
		blk = S_ISBLK(sb.st_mode);
		inplace = !S_ISREG(sb.st_mode);
		/* a block device always exists: overwriting it is as deliberate
		 * as overwriting an image */
		if (!r->o->force)
			return ferry_err(FERR_EXISTS, "'%s' exists%s (use --force to overwrite)", path,
					 blk ? " and is a block device" : "");
		if (!inplace && !(target = realpath(path, NULL)))
			return ferry_err_errno(errno, "cannot resolve '%s'", path);
	}
	if (!inplace && !target && !(target = strdup(path)))
		return ferry_err(FERR_NOMEM, "restoring '%s'", path);
	/* 32 jobs in flight, and the one being filled */
	if (!blk && !r->pl &&
	    (rc = pipeline_new(&r->pl, pipeline_threads(0), 33, sizeof(struct rjob), &rst_job_ops,
			       r)) < 0) {
		free(target);
		return rc;
	}
	if (inplace) {
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			return ferry_err_errno(errno, "cannot open '%s'", path);
		rc = volume_write(r, fd, path, e, blk);
		goto out;
	}
	if (asprintf(&tmp, "%s.ferry-XXXXXX", target) < 0) {
		tmp = NULL;
		rc = ferry_err(FERR_NOMEM, "restoring '%s'", path);
		goto out;
	}
	if ((rc = io_fault(IO_FAULT_CREATE)) != 0 || (fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		rc = ferry_err_errno(rc ? rc : errno, "cannot create a temporary file beside '%s'", path);
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if ((rc = volume_write(r, fd, path, e, 0)) < 0 || (rc = io_rename(tmp, target)) < 0)
		goto out;
	free(tmp);
	tmp = NULL; /* renamed: nothing to remove */
	slash = strrchr(target, '/');
	if (!slash)
		rc = io_fsync_dir(".");
	else if (slash == target)
		rc = io_fsync_dir("/");
	else {
		*slash = 0;
		rc = io_fsync_dir(target);
		*slash = '/';
	}
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(target);
	if (rc == 0)
		r->st->files++;
	return rc;
}

