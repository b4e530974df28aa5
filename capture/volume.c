/* capture/volume.c — a volume's capture: one image file or block device
 * read record by record through the job pipeline (holes of a sparse image
 * skipped), the previous snapshot's records sparing unchanged ones another
 * compression. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int cap_volume(struct cap *c, const char *from, uint8_t *root)
{
	struct centry ce;
	struct fbuf rb;
	struct stat sb;
	struct cfile f;
	uint64_t size, got = 0;
	int r = 0, fd;
	memset(&ce, 0, sizeof ce);
	memset(&f, 0, sizeof f);
	fbuf_init(&rb, NODE_MAX);
	node_bl_builder_init(&f.bl, cap_put_node, c, c->rs);
	fd = open(from, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = ferry_err_errno(errno, "cannot open volume source '%s'", from);
		goto out;
	}
	if (fstat(fd, &sb) != 0) {
		r = ferry_err_errno(errno, "cannot stat '%s'", from);
		goto out;
	}
	if (S_ISBLK(sb.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) != 0) {
			r = ferry_err_errno(errno, "cannot get the size of '%s'", from);
			goto out;
		}
	} else if (S_ISREG(sb.st_mode)) {
		size = (uint64_t)sb.st_size;
	} else {
		r = ferry_err(FERR_INVAL, "'%s' is not an image file or block device", from);
		goto out;
	}
	{
		/* the previous image's records: unchanged ones are not compressed again */
		struct store_snap prev;
		struct fbuf ob;
		struct node_entry oe;
		struct node_xattr *oxa = NULL;
		int t, kind;
		fbuf_init(&ob, NODE_MAX);
		if (store_snap_newest(c->p, c->ds, &prev) == 0 &&
		    store_node_read(c->rd, prev.root, &t, &ob) == 0 && t == NODE_EXT &&
		    node_root_decode(ob.data, ob.len, &kind, &oe, &oxa) == 0 &&
		    kind == NODE_ROOT_VOLUME && oe.child_type)
			r = cap_old_records(c, &f, &oe);
		ferry_err_clear();
		free(oxa);
		fbuf_release(&ob);
		if (r < 0)
			goto out;
	}
	int src_err = 0;
	if ((r = cap_read_data(c, fd, size, 0, &f, &got, &src_err)) < 0 ||
	    (r = cap_submit_simple(c, &f, JOB_END, 0)) < 0 || (r = cap_drain(c)) < 0)
		goto out;
	if (got != size) {
		r = ferry_err(FERR_IO, "'%s' shrank while being read", from);
		goto out;
	}
	c->st->files_read++;
	cap_entry_from_stat(&ce.e, &sb);
	ce.e.ftype = NODE_F_REG;
	ce.e.rdev_major = ce.e.rdev_minor = 0;
	ce.e.size = size;
	ce.e.child_type = size ? (uint8_t)f.type : 0;
	memcpy(ce.e.child, f.hash, FERRY_HASH_LEN);
	if ((r = node_root_encode(&rb, NODE_ROOT_VOLUME, &ce.e)) < 0)
		goto out;
	r = store_writer_put_node(c->w, NODE_EXT, rb.data, rb.len, root);
out:
	if (fd >= 0)
		close(fd);
	node_bl_builder_release(&f.bl);
	free(f.old);
	free(f.old_len);
	cap_centry_release(&ce);
	fbuf_release(&rb);
	return r;
}
