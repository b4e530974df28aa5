/* tests/tools/treecmp.c — compares two trees entry for entry: type, content,
 * mode (incl. setuid/sticky), uid/gid, mtime in nanoseconds (directories and
 * symlinks too), symlink targets, device numbers, xattrs, hardlink counts
 * and grouping, and sparse allocation within reason (1 MiB + 10 %).
 *
 *   treecmp [--no-owner] [--no-root] [--no-alloc] A B
 *
 * Exits 0 when identical, 1 at the first difference (printed on stdout),
 * 2 on usage or I/O errors. Never follows symlinks inside the trees. Trees
 * of any depth compare (paths far past PATH_MAX): the walk is iterative and
 * keeps only the current pair of directories open, on its own (not the
 * dirstack of lib/, which is part of what the tests check). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static int no_owner, no_root, no_alloc;

struct imap {
	ino_t a, b;
};
static struct imap *links;
static size_t nlinks, caplinks;

static void put_path(const char *p)
{
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < ' ' || c >= 0x7f || c == '\\')
			printf("\\%03o", c);
		else
			putchar(c);
	}
}

static int differ(const char *path, const char *what, const char *fmt_a, const char *fmt_b)
{
	printf("treecmp: ");
	put_path(*path ? path : ".");
	printf(": %s differs", what);
	if (fmt_a)
		printf(" (A: %s, B: %s)", fmt_a, fmt_b);
	printf("\n");
	return 1;
}

static int fail(const char *path, const char *what)
{
	fprintf(stderr, "treecmp: %s: %s: %s\n", *path ? path : ".", what, strerror(errno));
	return 2;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list(int fd, char ***out, size_t *n)
{
	int d2 = dup(fd);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	if (!d)
		return -1;
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof *v);
			if (!v)
				abort();
		}
		v[cnt++] = strdup(de->d_name);
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof *v, name_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

/* Sorted "name\0value-length\0value" blob of an entry's xattrs. */
static int xattrs(const char *pp, char **blob, size_t *len)
{
	ssize_t n = llistxattr(pp, NULL, 0);
	*blob = NULL;
	*len = 0;
	if (n < 0)
		return errno == ENOTSUP ? 0 : -1;
	if (n == 0)
		return 0;
	char *names = malloc((size_t)n);
	if (!names || (n = llistxattr(pp, names, (size_t)n)) < 0) {
		free(names);
		return -1;
	}
	char *v[4096];
	size_t k = 0;
	for (ssize_t i = 0; i < n && k < 4096; i += (ssize_t)strlen(names + i) + 1)
		v[k++] = names + i;
	qsort(v, k, sizeof *v, name_cmp);
	size_t cap = 4096, used = 0;
	char *b = malloc(cap);
	static char val[65536];
	for (size_t i = 0; i < k; i++) {
		ssize_t vl = lgetxattr(pp, v[i], val, sizeof val);
		if (vl < 0)
			vl = 0;
		size_t need = strlen(v[i]) + 32 + (size_t)vl;
		while (used + need > cap)
			b = realloc(b, cap *= 2);
		used += (size_t)snprintf(b + used, cap - used, "%s=%zd:", v[i], vl);
		memcpy(b + used, val, (size_t)vl);
		used += (size_t)vl;
		b[used++] = '\n';
	}
	free(names);
	*blob = b;
	*len = used;
	return 0;
}

static int cmp_content(int da, int db, const char *name, const char *path, off_t size)
{
	int fa = openat(da, name, O_RDONLY | O_NOFOLLOW), fb = openat(db, name, O_RDONLY | O_NOFOLLOW);
	static char ba[1 << 20], bb[1 << 20];
	int r = 0;
	if (fa < 0 || fb < 0) {
		r = fail(path, "cannot open");
		goto out;
	}
	for (off_t off = 0; off < size;) {
		ssize_t x = pread(fa, ba, sizeof ba, off), y = pread(fb, bb, sizeof bb, off);
		if (x < 0 || y < 0) {
			r = fail(path, "cannot read");
			goto out;
		}
		if (x != y || memcmp(ba, bb, (size_t)x)) {
			r = differ(path, "content", NULL, NULL);
			goto out;
		}
		if (x == 0)
			break;
		off += x;
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return r;
}

/* Compares entry name of da and db; 3 for two directories to descend
 * into, whose fds are then in *sa and *sb. */
static int cmp_entry(int da, int db, const char *name, const char *path, int is_root, int *suba,
		     int *subb)
{
	struct stat a, b;
	char sa[64], sb2[64];
	if (fstatat(da, name, &a, AT_SYMLINK_NOFOLLOW) != 0 ||
	    fstatat(db, name, &b, AT_SYMLINK_NOFOLLOW) != 0)
		return fail(path, "cannot stat");
	if ((a.st_mode & S_IFMT) != (b.st_mode & S_IFMT))
		return differ(path, "type", NULL, NULL);
	if (!(is_root && no_root)) {
		if (!S_ISLNK(a.st_mode) && (a.st_mode & 07777) != (b.st_mode & 07777)) {
			snprintf(sa, sizeof sa, "%04o", a.st_mode & 07777);
			snprintf(sb2, sizeof sb2, "%04o", b.st_mode & 07777);
			return differ(path, "mode", sa, sb2);
		}
		if (!no_owner && (a.st_uid != b.st_uid || a.st_gid != b.st_gid)) {
			snprintf(sa, sizeof sa, "%u:%u", a.st_uid, a.st_gid);
			snprintf(sb2, sizeof sb2, "%u:%u", b.st_uid, b.st_gid);
			return differ(path, "owner", sa, sb2);
		}
		if (a.st_mtim.tv_sec != b.st_mtim.tv_sec || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec) {
			snprintf(sa, sizeof sa, "%lld.%09ld", (long long)a.st_mtim.tv_sec, a.st_mtim.tv_nsec);
			snprintf(sb2, sizeof sb2, "%lld.%09ld", (long long)b.st_mtim.tv_sec,
				 b.st_mtim.tv_nsec);
			return differ(path, "mtime", sa, sb2);
		}
	}
	if (!S_ISDIR(a.st_mode) && a.st_nlink != b.st_nlink) {
		snprintf(sa, sizeof sa, "%lu", (unsigned long)a.st_nlink);
		snprintf(sb2, sizeof sb2, "%lu", (unsigned long)b.st_nlink);
		return differ(path, "link count", sa, sb2);
	}
	if (S_ISREG(a.st_mode) && a.st_nlink > 1) {
		for (size_t i = 0; i < nlinks; i++)
			if ((links[i].a == a.st_ino) != (links[i].b == b.st_ino))
				return differ(path, "hardlink grouping", NULL, NULL);
		if (nlinks == caplinks) {
			caplinks = caplinks ? caplinks * 2 : 64;
			links = realloc(links, caplinks * sizeof *links);
		}
		links[nlinks].a = a.st_ino;
		links[nlinks++].b = b.st_ino;
	}
	char pa[8192 + 64], pb[8192 + 64];
	snprintf(pa, sizeof pa, "/proc/self/fd/%d/%s", da, name);
	snprintf(pb, sizeof pb, "/proc/self/fd/%d/%s", db, name);
	if (!(is_root && no_root)) {
		char *xa, *xb;
		size_t la, lb;
		if (xattrs(pa, &xa, &la) < 0 || xattrs(pb, &xb, &lb) < 0)
			return fail(path, "cannot read xattrs");
		int d = la != lb || (la && memcmp(xa, xb, la));
		free(xa);
		free(xb);
		if (d)
			return differ(path, "xattrs", NULL, NULL);
	}
	if (S_ISLNK(a.st_mode)) {
		char ta[8192], tb[8192];
		ssize_t x = readlinkat(da, name, ta, sizeof ta), y = readlinkat(db, name, tb, sizeof tb);
		if (x < 0 || y < 0)
			return fail(path, "cannot read symlink");
		if (x != y || memcmp(ta, tb, (size_t)x))
			return differ(path, "symlink target", NULL, NULL);
		return 0;
	}
	if ((S_ISCHR(a.st_mode) || S_ISBLK(a.st_mode)) && a.st_rdev != b.st_rdev)
		return differ(path, "device number", NULL, NULL);
	if (S_ISREG(a.st_mode)) {
		if (a.st_size != b.st_size) {
			snprintf(sa, sizeof sa, "%lld", (long long)a.st_size);
			snprintf(sb2, sizeof sb2, "%lld", (long long)b.st_size);
			return differ(path, "size", sa, sb2);
		}
		long long aa = (long long)a.st_blocks * 512, ab = (long long)b.st_blocks * 512;
		long long mx = aa > ab ? aa : ab, df = aa > ab ? aa - ab : ab - aa;
		if (!no_alloc && df > (1 << 20) + mx / 10) {
			snprintf(sa, sizeof sa, "%lld", aa);
			snprintf(sb2, sizeof sb2, "%lld", ab);
			return differ(path, "allocated size (sparseness)", sa, sb2);
		}
		return cmp_content(da, db, name, path, a.st_size);
	}
	if (S_ISDIR(a.st_mode)) {
		int fa = openat(da, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int fb = openat(db, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fa < 0 || fb < 0) {
			if (fa >= 0)
				close(fa);
			if (fb >= 0)
				close(fb);
			return fail(path, "cannot open directory");
		}
		*suba = fa;
		*subb = fb;
		return 3;
	}
	return 0;
}

/* ---- the walk ------------------------------------------------------------- */
struct frame {
	char **na, **nb;
	size_t n1, n2, i, j;
	dev_t deva, devb;
	ino_t inoa, inob;
	size_t path_len;
};
static struct frame *frames;
static size_t nframes, capframes;
static char *path;
static size_t path_len, path_cap;
static int cur_a = -1, cur_b = -1; /* the top frame's two directories */

static void path_to(size_t len, const char *name)
{
	size_t nl = name ? strlen(name) : 0, need = len + nl + 2;
	if (need > path_cap) {
		path_cap = need * 2;
		if (!(path = realloc(path, path_cap)))
			abort();
	}
	if (name) {
		if (len)
			path[len++] = '/';
		memcpy(path + len, name, nl);
		len += nl;
	}
	path[len] = 0;
	path_len = len;
}

static void free_names(char **v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		free(v[k]);
	free(v);
}

/* Enters directories fa and fb (taken) at the current path. */
static int push(int fa, int fb)
{
	struct stat a, b;
	if (nframes == capframes) {
		capframes = capframes ? capframes * 2 : 64;
		if (!(frames = realloc(frames, capframes * sizeof *frames)))
			abort();
	}
	struct frame *f = &frames[nframes];
	memset(f, 0, sizeof *f);
	if (fstat(fa, &a) != 0 || fstat(fb, &b) != 0 || list(fa, &f->na, &f->n1) < 0 ||
	    list(fb, &f->nb, &f->n2) < 0) {
		close(fa);
		close(fb);
		return fail(path, "cannot list");
	}
	f->deva = a.st_dev;
	f->inoa = a.st_ino;
	f->devb = b.st_dev;
	f->inob = b.st_ino;
	f->path_len = path_len;
	nframes++;
	if (cur_a >= 0)
		close(cur_a);
	if (cur_b >= 0)
		close(cur_b);
	cur_a = fa;
	cur_b = fb;
	return 0;
}

/* *cur becomes its "..", which must be the directory dev/ino. */
static int up(int *cur, dev_t dev, ino_t ino)
{
	struct stat sb;
	int fd = openat(*cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || sb.st_dev != dev || sb.st_ino != ino) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	close(*cur);
	*cur = fd;
	return 0;
}

static int pop(void)
{
	struct frame *f = &frames[--nframes];
	free_names(f->na, f->n1);
	free_names(f->nb, f->n2);
	if (!nframes)
		return 0;
	struct frame *p = &frames[nframes - 1];
	if (up(&cur_a, p->deva, p->inoa) < 0 || up(&cur_b, p->devb, p->inob) < 0)
		return fail(path, "cannot go back to the parent directory");
	path_to(p->path_len, NULL);
	return 0;
}

static int walk(int ra, int rb)
{
	int sa = -1, sb = -1, r;
	path_to(0, NULL);
	r = cmp_entry(ra, rb, ".", path, 1, &sa, &sb);
	if (r != 3)
		return r;
	if ((r = push(sa, sb)) != 0)
		return r;
	while (nframes) {
		struct frame *f = &frames[nframes - 1];
		if (f->i == f->n1 && f->j == f->n2) {
			if ((r = pop()) != 0)
				return r;
			continue;
		}
		int c = f->i == f->n1 ? 1 : f->j == f->n2 ? -1 : strcmp(f->na[f->i], f->nb[f->j]);
		path_to(f->path_len, c <= 0 ? f->na[f->i] : f->nb[f->j]);
		if (c) {
			printf("treecmp: ");
			put_path(path);
			printf(": only in %s\n", c < 0 ? "A" : "B");
			return 1;
		}
		const char *name = f->na[f->i];
		f->i++;
		f->j++;
		r = cmp_entry(cur_a, cur_b, name, path, 0, &sa, &sb);
		if (r == 3)
			r = push(sa, sb); /* f may move */
		else
			path_to(frames[nframes - 1].path_len, NULL);
		if (r)
			return r;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (!strcmp(argv[i], "--no-owner"))
			no_owner = 1;
		else if (!strcmp(argv[i], "--no-root"))
			no_root = 1;
		else if (!strcmp(argv[i], "--no-alloc"))
			no_alloc = 1;
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr, "usage: treecmp [--no-owner] [--no-root] [--no-alloc] A B\n");
		return 2;
	}
	/* Compare the two roots as entries of their parent directories. */
	int ra = open(argv[i], O_RDONLY | O_DIRECTORY), rb = open(argv[i + 1], O_RDONLY | O_DIRECTORY);
	if (ra < 0 || rb < 0) {
		fprintf(stderr, "treecmp: cannot open '%s' or '%s': %s\n", argv[i], argv[i + 1],
			strerror(errno));
		return 2;
	}
	int r = walk(ra, rb);
	fflush(stdout);
	return r;
}
