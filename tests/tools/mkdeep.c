/* tests/tools/mkdeep.c — builds (or measures) a deep directory chain, whose
 * paths are far longer than PATH_MAX, with *at() calls only.
 *
 *   mkdeep [-n NAME] [-e EVERY] DIR LEVELS   build
 *   mkdeep -c [-n NAME] DIR                  print how many NAME levels DIR has
 *   mkdeep -s DATASET@SNAP LEVELS            write such a snapshot into a pool
 *
 * Build: DIR (created) holds NAME/NAME/... LEVELS directories deep. Every
 * EVERY levels (default 1000; 0: never), and at the bottom, the directory
 * gets an xattr user.level and mode 0750, and holds a file "f" (content
 * "level N", an xattr), a symlink "s" to it, a file "z" (named to come after
 * NAME, so a walker captures it after coming back up from the chain), and
 * a hardlink "h" to the first such level's "f"; the bottom also holds a
 * fifo "p". Count: follows NAME down from DIR and prints the number of
 * levels, and "empty" or "not empty" for the last one. One fd per step
 * stays open (two while building, for the hardlinks). Snapshot: commits
 * DATASET@SNAP (the dataset must exist) whose tree is a chain of LEVELS
 * directories with a file at the bottom, straight through the store's node
 * writer, with no depth check: past NODE_TREE_DEPTH_MAX that is a corrupt
 * pool, which restore must refuse. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <dirent.h>

#include "store/store.h"

static const char *name = "d";

static void die(const char *what, long level)
{
	fprintf(stderr, "mkdeep: %s at level %ld: %s\n", what, level, strerror(errno));
	exit(2);
}

static void put_file(int dfd, const char *fn, const char *text, long level)
{
	int fd = openat(dfd, fn, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die("cannot write a file", level);
	if (fsetxattr(fd, "user.file", text, strlen(text), 0) != 0 && errno != ENOTSUP)
		die("cannot set an xattr", level);
	close(fd);
}

static void mark(int dfd, long level, int *first, int bottom)
{
	char text[64];
	snprintf(text, sizeof text, "level %ld\n", level);
	if (fsetxattr(dfd, "user.level", text, strlen(text), 0) != 0 && errno != ENOTSUP)
		die("cannot set an xattr", level);
	put_file(dfd, "f", text, level);
	put_file(dfd, "z", "after the chain\n", level);
	if (symlinkat("f", dfd, "s") != 0)
		die("cannot make a symlink", level);
	if (*first < 0 && (*first = dup(dfd)) < 0)
		die("cannot dup", level);
	if (linkat(*first, "f", dfd, "h", 0) != 0)
		die("cannot make a hardlink", level);
	if (bottom && mkfifoat(dfd, "p", 0600) != 0)
		die("cannot make a fifo", level);
	if (fchmod(dfd, 0750) != 0)
		die("cannot chmod", level);
}

static int count(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long levels = 0;
	if (fd < 0)
		die("cannot open", 0);
	for (;;) {
		int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			if (errno != ENOENT)
				die("cannot open", levels + 1);
			break;
		}
		close(fd);
		fd = sub;
		levels++;
	}
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int empty = 1;
	if (!d)
		die("cannot list", levels);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	printf("%ld %s\n", levels, empty ? "empty" : "not empty");
	return 0;
}

static int put_node(void *arg, int type, const uint8_t *data, size_t len, uint8_t *hash)
{
	return store_writer_put_node(arg, type, data, len, hash);
}

static int snapshot(const char *full, long levels)
{
	char ds[STORE_NAME_MAX + 1];
	const char *at = strchr(full, '@');
	struct store_pool *p = NULL;
	struct store_writer *w = NULL;
	struct store_ds d;
	struct node_entry e;
	struct node_dir_builder b;
	struct fbuf rb;
	uint8_t hash[FERRY_HASH_LEN], root[FERRY_HASH_LEN];
	int t, r;
	if (!at || (size_t)(at - full) > STORE_NAME_MAX)
		return 2;
	memcpy(ds, full, (size_t)(at - full));
	ds[at - full] = 0;
	if ((r = ferry_lib_init()) < 0 || (r = store_pool_open_for(ds, 0, &p)) < 0 ||
	    (r = store_ds_lookup(p, ds, &d)) < 0 || (r = store_writer_new(p, &w)) < 0)
		goto out;
	/* bottom-up: an empty file in the deepest directory */
	memset(&e, 0, sizeof e);
	e.name = (const uint8_t *)"f";
	e.name_len = 1;
	e.ftype = NODE_F_REG;
	e.mode = 0644;
	node_dir_builder_init(&b, put_node, w);
	r = node_dir_builder_add(&b, &e);
	if (r == 0)
		r = node_dir_builder_finish(&b, &t, hash);
	node_dir_builder_release(&b);
	for (long l = levels; r == 0 && l >= 1; l--) {
		memset(&e, 0, sizeof e);
		e.name = (const uint8_t *)name;
		e.name_len = strlen(name);
		e.ftype = NODE_F_DIR;
		e.mode = 0755;
		e.child_type = (uint8_t)t;
		memcpy(e.child, hash, FERRY_HASH_LEN);
		node_dir_builder_init(&b, put_node, w);
		if ((r = node_dir_builder_add(&b, &e)) == 0)
			r = node_dir_builder_finish(&b, &t, hash);
		node_dir_builder_release(&b);
	}
	if (r < 0)
		goto out;
	memset(&e, 0, sizeof e);
	e.ftype = NODE_F_DIR;
	e.mode = 0755;
	e.child_type = (uint8_t)t;
	memcpy(e.child, hash, FERRY_HASH_LEN);
	fbuf_init(&rb, NODE_MAX);
	if ((r = node_root_encode(&rb, NODE_ROOT_FILESYSTEM, &e)) == 0 &&
	    (r = store_writer_put_node(w, NODE_EXT, rb.data, rb.len, root)) == 0)
		r = store_writer_commit_snapshot(w, &d, at + 1, root, 0, 0, NULL);
	fbuf_release(&rb);
out:
	if (r < 0)
		fprintf(stderr, "mkdeep: %s\n", ferry_errmsg(r));
	store_writer_free(w);
	store_pool_close(p);
	return r < 0;
}

int main(int argc, char **argv)
{
	long every = 1000;
	int c, counting = 0;
	const char *snap = NULL;
	while ((c = getopt(argc, argv, "cn:e:s:")) != -1) {
		if (c == 'c')
			counting = 1;
		else if (c == 's')
			snap = optarg;
		else if (c == 'n')
			name = optarg;
		else if (c == 'e')
			every = strtol(optarg, NULL, 10);
		else
			goto usage;
	}
	if (counting && argc - optind == 1)
		return count(argv[optind]);
	if (snap && argc - optind == 1)
		return snapshot(snap, strtol(argv[optind], NULL, 10));
	if (counting || argc - optind != 2)
		goto usage;
	long levels = strtol(argv[optind + 1], NULL, 10);
	int first = -1;
	if (mkdir(argv[optind], 0755) != 0)
		die("cannot create the top", 0);
	int fd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("cannot open the top", 0);
	for (long l = 1; l <= levels; l++) {
		if (mkdirat(fd, name, 0755) != 0)
			die("cannot create a directory", l);
		int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			die("cannot open a directory", l);
		close(fd);
		fd = sub;
		if ((every > 0 && l % every == 0) || l == levels)
			mark(fd, l, &first, l == levels);
	}
	close(fd);
	if (first >= 0)
		close(first);
	return 0;
usage:
	fprintf(stderr, "usage: mkdeep [-n NAME] [-e EVERY] DIR LEVELS | mkdeep -c [-n NAME] DIR | "
			"mkdeep -s DATASET@SNAP LEVELS\n");
	return 2;
}
