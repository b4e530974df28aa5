/* capture/attrs.c — what a captured entry records besides its data: the
 * extended attributes kept (user., trusted., security. and POSIX ACLs),
 * and mode, owners, times and inode from stat. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "internal.h"

/* ---- attributes -------------------------------------------------------------------- */

static int keep_xattr(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9) || !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default");
}

static int xa_cmp(const void *a, const void *b)
{
	const struct node_xattr *x = a, *y = b;
	size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
	int r = memcmp(x->name, y->name, m);
	return r ? r : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Reads the kept xattrs of fd (fd >= 0) or of path (not following a
 * symlink) into ce. Failures other than "not supported" are warnings. */
int cap_read_xattrs(struct cap *c, int fd, const char *path, struct centry *ce)
{
	char *list = NULL;
	ssize_t n;
	struct fbuf vals;
	int r = 0;
	fbuf_init(&vals, (size_t)NODE_XATTRS_MAX * (NODE_XATTR_VALUE_MAX + 256));
	for (int tries = 0;; tries++) {
		n = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(path, NULL, 0);
		if (n <= 0)
			break;
		free(list);
		if (!(list = malloc((size_t)n))) {
			r = ferry_err(FERR_NOMEM, "reading xattrs");
			goto out;
		}
		ssize_t m = fd >= 0 ? flistxattr(fd, list, (size_t)n) : llistxattr(path, list, (size_t)n);
		if (m >= 0) {
			n = m;
			break;
		}
		if (errno != ERANGE || tries > 4) {
			n = -1;
			break;
		}
	}
	if (n < 0) {
		if (errno != ENOTSUP && errno != EPERM && errno != EACCES)
			cap_warn(c, "cannot list extended attributes", 0);
		goto out;
	}
	size_t cnt = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		if (keep_xattr(list + i))
			cnt++;
	if (!cnt)
		goto out;
	if (cnt > NODE_XATTRS_MAX) {
		cap_warn(c, "too many extended attributes; some skipped", 0);
		cnt = NODE_XATTRS_MAX;
	}
	/* first pass collects names and values into one buffer, then pointers */
	size_t *offs = calloc(cnt * 3, sizeof *offs);
	if (!offs) {
		r = ferry_err(FERR_NOMEM, "reading xattrs");
		goto out;
	}
	size_t k = 0;
	uint8_t val[NODE_XATTR_VALUE_MAX];
	for (ssize_t i = 0; i < n && k < cnt; i += (ssize_t)strlen(list + i) + 1) {
		const char *nm = list + i;
		if (!keep_xattr(nm) || strlen(nm) > NODE_XATTR_NAME_MAX)
			continue;
		ssize_t vl = fd >= 0 ? fgetxattr(fd, nm, val, sizeof val)
				     : lgetxattr(path, nm, val, sizeof val);
		if (vl < 0) {
			if (errno != ENODATA)
				cap_warn(c, "cannot read an extended attribute", 0);
			continue;
		}
		offs[3 * k] = vals.len;
		if ((r = fbuf_append(&vals, nm, strlen(nm))) < 0)
			break;
		offs[3 * k + 1] = vals.len;
		if ((r = fbuf_append(&vals, val, (size_t)vl)) < 0)
			break;
		offs[3 * k + 2] = (size_t)vl;
		k++;
	}
	if (r == 0 && k) {
		struct node_xattr *xa = calloc(k, sizeof *xa);
		if (!xa) {
			free(offs);
			r = ferry_err(FERR_NOMEM, "reading xattrs");
			goto out;
		}
		ce->xabuf = fbuf_detach(&vals, NULL);
		for (size_t i = 0; i < k; i++) {
			xa[i].name = ce->xabuf + offs[3 * i];
			xa[i].name_len = offs[3 * i + 1] - offs[3 * i];
			xa[i].value = ce->xabuf + offs[3 * i + 1];
			xa[i].value_len = offs[3 * i + 2];
		}
		qsort(xa, k, sizeof *xa, xa_cmp);
		ce->xa = xa;
		ce->e.xattrs = xa;
		ce->e.nxattr = k;
	}
	free(offs);
out:
	fbuf_release(&vals);
	free(list);
	return r;
}

void cap_entry_from_stat(struct node_entry *e, const struct stat *sb)
{
	e->mode = (uint16_t)(sb->st_mode & 07777);
	e->uid = sb->st_uid;
	e->gid = sb->st_gid;
	e->mtime_sec = sb->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)sb->st_mtim.tv_nsec;
	e->ctime_sec = sb->st_ctim.tv_sec;
	e->ctime_nsec = (uint32_t)sb->st_ctim.tv_nsec;
	e->ino = sb->st_ino;
}

void cap_centry_release(struct centry *ce)
{
	free(ce->name);
	free(ce->target);
	free(ce->xa);
	free(ce->xabuf);
	if (ce->file) {
		node_bl_builder_release(&ce->file->bl);
		free(ce->file->old);
		free(ce->file->old_len);
		free(ce->file);
	}
	memset(ce, 0, sizeof *ce);
}
