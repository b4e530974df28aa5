/* restore/attrs.c — a restored entry's attributes: xattrs, owners (as
 * root, unless told otherwise), mode and times, on an fd or by name; a
 * worker's warnings are kept in its job for the main thread to report. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "internal.h"

/* ---- attributes --------------------------------------------------------------------- */


static void note(struct rst *r, struct jwarn *jw, const char *what, int e)
{
	if (!jw) {
		rst_warn(r, what, e);
		return;
	}
	if (!jw->n++) {
		jw->what = what;
		jw->err = e;
	}
}

/* The mode e gets on disk: --no-setuid clears the set-id bits,
 * --no-same-permissions applies the umask. */
static mode_t mode_of(const struct rst *r, const struct node_entry *e)
{
	mode_t m = e->mode;
	if (r->o->untrusted & RESTORE_NO_SETUID)
		m &= ~(mode_t)(S_ISUID | S_ISGID);
	if (r->o->untrusted & RESTORE_NO_SAME_PERMISSIONS)
		m &= ~(r->o->umask & 0777);
	return m;
}

static void set_xattrs(struct rst *r, struct jwarn *jw, int fd, int dirfd, const char *name,
		       const struct node_entry *e)
{
	char pp[64 + NAME_MAX + 1];
	char nm[NODE_XATTR_NAME_MAX + 1];
	if (fd < 0)
		snprintf(pp, sizeof pp, "/proc/self/fd/%d/%s", dirfd, name);
	for (size_t i = 0; i < e->nxattr; i++) {
		const struct node_xattr *x = &e->xattrs[i];
		memcpy(nm, x->name, x->name_len);
		nm[x->name_len] = 0;
		/* file capabilities give privileges as setuid does */
		if ((r->o->untrusted & RESTORE_NO_SETUID) && !strcmp(nm, "security.capability"))
			continue;
		int rc = fd >= 0 ? fsetxattr(fd, nm, x->value, x->value_len, 0)
				 : lsetxattr(pp, nm, x->value, x->value_len, 0);
		if (rc != 0 && !(errno == EPERM && !r->owners && !strncmp(nm, "trusted.", 8)))
			note(r, jw, "cannot set an extended attribute", errno);
	}
}

/* fresh: fd is an inode this restore created (see rst.fresh_owner). */
void rst_set_attrs_jw(struct rst *r, struct jwarn *jw, int fd, const struct node_entry *e,
		      int fresh)
{
	struct timespec ts[2];
	int owned = fresh && r->fresh_owner && e->uid == r->euid && e->gid == r->egid;
	if (r->owners && !owned && fchown(fd, e->uid, e->gid) != 0)
		note(r, jw, "cannot set owner", errno);
	set_xattrs(r, jw, fd, -1, NULL, e);
	if (fchmod(fd, mode_of(r, e)) != 0)
		note(r, jw, "cannot set mode", errno);
	ts[0].tv_sec = e->mtime_sec;
	ts[0].tv_nsec = e->mtime_nsec;
	ts[1] = ts[0];
	if (futimens(fd, ts) != 0)
		note(r, jw, "cannot set mtime", errno);
}

void rst_set_attrs_fd(struct rst *r, int fd, const struct node_entry *e, int fresh)
{
	rst_set_attrs_jw(r, NULL, fd, e, fresh);
}

void rst_set_attrs_at(struct rst *r, int dirfd, const char *name, const struct node_entry *e)
{
	struct timespec ts[2];
	if (r->owners && fchownat(dirfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) != 0)
		rst_warn(r, "cannot set owner", errno);
	set_xattrs(r, NULL, -1, dirfd, name, e);
	if (e->ftype != NODE_F_SYMLINK && fchmodat(dirfd, name, mode_of(r, e), 0) != 0)
		rst_warn(r, "cannot set mode", errno);
	ts[0].tv_sec = e->mtime_sec;
	ts[0].tv_nsec = e->mtime_nsec;
	ts[1] = ts[0];
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) != 0)
		rst_warn(r, "cannot set mtime", errno);
}

