/* store/registry.c — the pool registry under FERRY_HOME: one small file per
 * pool, pools/NAME, holding the pool's absolute path. Each entry is written
 * crash-safely, so the registry never holds a half-written path. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int store_home(char *buf, size_t n)
{
	const char *h = getenv("FERRY_HOME");
	int w;
	if (h && *h)
		w = snprintf(buf, n, "%s", h);
	else if (geteuid() == 0)
		w = snprintf(buf, n, "/var/lib/ferry");
	else if ((h = getenv("XDG_DATA_HOME")) && *h)
		w = snprintf(buf, n, "%s/ferry", h);
	else if ((h = getenv("HOME")) && *h)
		w = snprintf(buf, n, "%s/.local/share/ferry", h);
	else
		return ferry_err(FERR_INVAL, "cannot locate the pool registry: set FERRY_HOME");
	if (w < 0 || (size_t)w >= n)
		return ferry_err(FERR_LIMIT, "registry path is too long");
	return 0;
}

static int pools_dir(char *buf, size_t n)
{
	char home[PATH_MAX];
	int r = store_home(home, sizeof home);
	if (r < 0)
		return r;
	int w = snprintf(buf, n, "%s/pools", home);
	if (w < 0 || (size_t)w >= n)
		return ferry_err(FERR_LIMIT, "registry path is too long");
	return 0;
}

/* Reads the registered path of pool name; -FERR_NOENT if not registered. */
int registry_get(const char *name, char *path, size_t n)
{
	char dir[PATH_MAX], file[PATH_MAX + 300];
	char *data = NULL;
	size_t len = 0;
	int r;
	if ((r = store_name_check(name, STORE_NAME_POOL)) < 0)
		return r;
	if ((r = pools_dir(dir, sizeof dir)) < 0)
		return r;
	snprintf(file, sizeof file, "%s/%s", dir, name);
	r = io_read_file(file, PATH_MAX, &data, &len);
	if (r == -FERR_NOENT)
		return ferry_err(FERR_NOENT, "no such pool '%s'", name);
	if (r < 0)
		return r;
	while (len > 0 && data[len - 1] == '\n')
		data[--len] = 0;
	if (len == 0 || len >= n || data[0] != '/') {
		free(data);
		return ferry_err(FERR_CORRUPT, "registry entry '%s' is damaged", file);
	}
	memcpy(path, data, len + 1);
	free(data);
	return 0;
}

int registry_put(const char *name, const char *path)
{
	char dir[PATH_MAX], line[PATH_MAX + 2];
	int r;
	if ((r = pools_dir(dir, sizeof dir)) < 0)
		return r;
	/* FERRY_HOME and pools/ are made private like a pool; an existing
	 * FERRY_HOME keeps its mode, pools/ is ours and is kept private */
	if ((r = io_mkdirs(dir, STORE_DIR_MODE)) < 0)
		return r;
	if (chmod(dir, STORE_DIR_MODE) != 0)
		return ferry_err_errno(errno, "cannot set the mode of '%s'", dir);
	int w = snprintf(line, sizeof line, "%s\n", path);
	if (w < 0 || (size_t)w >= sizeof line)
		return ferry_err(FERR_LIMIT, "pool path is too long");
	return io_write_file_atomic(dir, name, line, (size_t)w, STORE_FILE_MODE);
}

int registry_del(const char *name)
{
	char dir[PATH_MAX], file[PATH_MAX + 300];
	int r;
	if ((r = pools_dir(dir, sizeof dir)) < 0)
		return r;
	snprintf(file, sizeof file, "%s/%s", dir, name);
	if ((r = io_unlink(file)) < 0)
		return r == -FERR_NOENT ? ferry_err(FERR_NOENT, "no such pool '%s'", name) : r;
	return io_fsync_dir(dir);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_pool_entry *)a)->name,
		      ((const struct store_pool_entry *)b)->name);
}

int store_registry_list(struct store_pool_entry **out, size_t *n)
{
	char dir[PATH_MAX];
	struct store_pool_entry *v = NULL;
	size_t cnt = 0, cap = 0;
	int r;
	if ((r = pools_dir(dir, sizeof dir)) < 0)
		return r;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			return ferry_err_errno(errno, "cannot read '%s'", dir);
		*out = NULL;
		*n = 0;
		return 0;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || store_name_check(e->d_name, STORE_NAME_POOL) < 0)
			continue;
		if ((r = VEC_GROW(v, cap, cnt, 8, "listing pools")) < 0)
			goto out;
		snprintf(v[cnt].name, sizeof v[cnt].name, "%s", e->d_name);
		if (registry_get(e->d_name, v[cnt].path, sizeof v[cnt].path) < 0)
			snprintf(v[cnt].path, sizeof v[cnt].path, "-");
		cnt++;
	}
	ferry_err_clear();
	if (cnt)
		qsort(v, cnt, sizeof *v, entry_cmp);
	*out = v;
	*n = cnt;
	v = NULL;
	r = 0;
out:
	closedir(d);
	free(v);
	return r;
}
