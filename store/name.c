/* store/name.c — dataset, snapshot and pool name rules, as zfs checks them
 * (zfs_namecheck.c semantics: the allowed characters, no empty or dot
 * components, bounded length). */
#include <string.h>

#include "store.h"

static int valid_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
	       c == ':' || c == ' ';
}

static int check_component(const char *s, size_t len, const char *what)
{
	if (len == 0)
		return ferry_err(FERR_NAME, "empty %s component", what);
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
		return ferry_err(FERR_NAME, "'.' and '..' are not allowed as %s components", what);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!valid_char((char)c)) {
			if (c < 0x20 || c >= 0x7f)
				return ferry_err(FERR_NAME, "invalid character 0x%02x in name", c);
			return ferry_err(FERR_NAME, "invalid character '%c' in name", c);
		}
	}
	return 0;
}

static int check_pool(const char *pool, size_t len)
{
	static const char *reserved[] = {"mirror", "raidz", "draid", "spare", "log", "cache"};
	int r;
	if (len == 0)
		return ferry_err(FERR_NAME, "empty pool name");
	if ((r = check_component(pool, len, "pool")) < 0)
		return r;
	if (!((pool[0] >= 'a' && pool[0] <= 'z') || (pool[0] >= 'A' && pool[0] <= 'Z')))
		return ferry_err(FERR_NAME, "pool name must begin with a letter");
	for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
		if (strlen(reserved[i]) <= len && !strncmp(pool, reserved[i], strlen(reserved[i])))
			return ferry_err(FERR_NAME, "pool name begins with the reserved word '%s'", reserved[i]);
	for (size_t i = 0; i < len; i++)
		if (pool[i] == ':' || pool[i] == ' ')
			return ferry_err(FERR_NAME, "invalid character '%c' in pool name", pool[i]);
	return 0;
}

int store_name_check(const char *name, enum store_name_kind kind)
{
	int r;
	if (!name || !*name)
		return ferry_err(FERR_NAME, "empty name");
	size_t len = strnlen(name, STORE_NAME_MAX + 1);
	if (len > STORE_NAME_MAX)
		return ferry_err(FERR_NAME, "name is longer than %d characters",
				 STORE_NAME_MAX);
	const char *sep = NULL;
	char sepc = kind == STORE_NAME_SNAPSHOT ? '@' : kind == STORE_NAME_BOOKMARK ? '#' : 0;
	const char *at = strchr(name, '@'), *hash = strchr(name, '#');
	if (sepc) {
		sep = strchr(name, sepc);
		if (!sep)
			return ferry_err(FERR_NAME, "missing '%c' delimiter", sepc);
		const char *other = sepc == '@' ? hash : at;
		if (other || strchr(sep + 1, sepc))
			return ferry_err(FERR_NAME, "more than one '@' or '#' delimiter");
	} else if (at || hash) {
		return ferry_err(FERR_NAME, "unexpected '%c' in a %s name", at ? '@' : '#', kind == STORE_NAME_POOL ? "pool" : "dataset");
	}
	size_t dslen = sep ? (size_t)(sep - name) : len;
	if (kind == STORE_NAME_POOL) {
		if (memchr(name, '/', len))
			return ferry_err(FERR_NAME, "a pool name cannot contain '/'");
		return check_pool(name, len);
	}
	if (name[0] == '/')
		return ferry_err(FERR_NAME, "leading '/' in name");
	if (dslen > 0 && name[dslen - 1] == '/')
		return ferry_err(FERR_NAME, "trailing '/' in name");
	const char *p = name, *end = name + dslen;
	int first = 1;
	while (p <= end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		const char *cend = slash ? slash : end;
		if (first) {
			if ((r = check_pool(p, (size_t)(cend - p))) < 0)
				return r;
			first = 0;
		} else if ((r = check_component(p, (size_t)(cend - p), "dataset")) < 0) {
			return r;
		}
		if (!slash)
			break;
		p = slash + 1;
	}
	if (sep) {
		const char *what = sepc == '@' ? "snapshot" : "bookmark";
		if ((r = check_component(sep + 1, strlen(sep + 1), what)) < 0)
			return r;
		if (memchr(sep + 1, '/', strlen(sep + 1)))
			return ferry_err(FERR_NAME, "'/' in %s name", what);
	}
	return 0;
}
