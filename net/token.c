/* net/token.c — bearer tokens: 32 random bytes shown once as "ferry_" and
 * hex, stored only as their BLAKE2b-256 hash in a tokens file (0600,
 * replaced crash-safely under an exclusive lock), looked up by comparing
 * hashes in constant time; scopes and permissions. The file format is in
 * docs/ferry-serve.8 (TOKENS FILE). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TOKENS_FILE_MAX ((size_t)16 << 20)
#define TOKENS_MAX 100000
#define TOKENS_HEADER "# ferry tokens: made by 'ferry token create', read by 'ferry serve'.\n" \
		      "# Only hashes: a token is shown once, when it is made.\n"

const char *net_perm_name(int perm)
{
	switch (perm) {
	case NET_PERM_READ: return "read";
	case NET_PERM_APPEND: return "append";
	case NET_PERM_WRITE: return "write";
	default: return "?";
	}
}

int net_perm_parse(const char *s, int *perm)
{
	for (int p = NET_PERM_READ; p <= NET_PERM_WRITE; p++)
		if (!strcmp(s, net_perm_name(p))) {
			*perm = p;
			return 0;
		}
	return ferry_err(FERR_INVAL, "unknown permission '%s' (read, append, write)", s);
}

int net_scope_covers(const char *scope, const char *name)
{
	size_t sl = strlen(scope), dl = strcspn(name, "@#");
	if (sl == 0 || dl < sl || memcmp(scope, name, sl) != 0)
		return 0;
	return dl == sl || name[sl] == '/';
}

int net_token_name_check(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > NET_TOKEN_NAME_MAX)
		return ferry_err(FERR_NAME, "a token name has 1 to %d characters", NET_TOKEN_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == ':' || c == '@' || c == '-'))
			return ferry_err(FERR_NAME, "invalid character in token name '%s' "
					 "(letters, digits, '.', '_', ':', '@', '-')", name);
	}
	if (!strcmp(name, "-"))
		return ferry_err(FERR_NAME, "'-' means no name");
	return 0;
}

void net_tokens_release(struct net_tokens *t)
{
	free(t->v);
	memset(t, 0, sizeof *t);
}

static void token_hash(const uint8_t raw[NET_TOKEN_RAW], uint8_t out[FERRY_HASH_LEN])
{
	hash_blake2b(out, raw, NET_TOKEN_RAW);
}

static void token_id(struct net_token *t)
{
	char hex[FERRY_HASH_HEX];
	hash_to_hex(t->hash, hex);
	memcpy(t->id, hex, NET_TOKEN_ID - 1);
	t->id[NET_TOKEN_ID - 1] = 0;
}

/* The fields of one line: v1 HASH PERM SCOPE CREATED NAME, tab-separated. */
static int parse_line(const char *s, size_t len, size_t lineno, struct net_token *t)
{
	const char *f[6];
	size_t fl[6], nf = 0, start = 0;
	for (size_t i = 0; i <= len && nf < 6; i++) {
		if (i == len || s[i] == '\t') {
			f[nf] = s + start;
			fl[nf++] = i - start;
			start = i + 1;
			if (i < len && nf == 6)
				return ferry_err(FERR_CORRUPT, "tokens file line %zu: too many fields", lineno);
		}
	}
	if (nf != 6)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: %zu fields, not 6", lineno, nf);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t')
			return ferry_err(FERR_CORRUPT, "tokens file line %zu: a control character",
					 lineno);
	memset(t, 0, sizeof *t);
	if (fl[0] != 2 || memcmp(f[0], "v1", 2) != 0)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: not a version 1 entry", lineno);
	char hex[FERRY_HASH_HEX], buf[NET_NAME_MAX + 1];
	if (fl[1] != FERRY_HASH_HEX - 1)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad hash", lineno);
	memcpy(hex, f[1], fl[1]);
	hex[fl[1]] = 0;
	for (size_t i = 0; i < fl[1]; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad hash", lineno);
	if (hash_from_hex(hex, t->hash) < 0)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad hash", lineno);
	token_id(t);
	if (fl[2] >= sizeof buf)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad permission", lineno);
	memcpy(buf, f[2], fl[2]);
	buf[fl[2]] = 0;
	if (net_perm_parse(buf, &t->perm) < 0)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad permission", lineno);
	if (fl[3] == 0 || fl[3] > NET_NAME_MAX || memchr(f[3], '@', fl[3]) || memchr(f[3], '#', fl[3]))
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad scope", lineno);
	memcpy(t->scope, f[3], fl[3]);
	t->scope[fl[3]] = 0;
	if (fl[4] == 0 || fl[4] > 19)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad creation time", lineno);
	int64_t v = 0;
	for (size_t i = 0; i < fl[4]; i++) {
		if (f[4][i] < '0' || f[4][i] > '9' || v > (INT64_MAX - 9) / 10)
			return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad creation time", lineno);
		v = v * 10 + (f[4][i] - '0');
	}
	t->created = v;
	if (fl[5] == 0 || fl[5] > NET_TOKEN_NAME_MAX)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad name", lineno);
	memcpy(t->name, f[5], fl[5]);
	t->name[fl[5]] = 0;
	if (strcmp(t->name, "-") && net_token_name_check(t->name) < 0)
		return ferry_err(FERR_CORRUPT, "tokens file line %zu: bad name", lineno);
	return 0;
}

int net_tokens_parse(const char *text, size_t len, struct net_tokens *out)
{
	struct net_tokens t;
	size_t lineno = 0, pos = 0;
	int r = 0;
	memset(&t, 0, sizeof t);
	if (len > TOKENS_FILE_MAX)
		return ferry_err(FERR_LIMIT, "the tokens file is larger than %zu bytes", TOKENS_FILE_MAX);
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
		const char *line = text + pos;
		pos += ll + (nl ? 1 : 0);
		lineno++;
		if (ll == 0 || line[0] == '#')
			continue;
		if (t.n >= TOKENS_MAX) {
			r = ferry_err(FERR_LIMIT, "more than %d tokens", TOKENS_MAX);
			goto out;
		}
		if ((r = VEC_GROW(t.v, t.cap, t.n, 16, "reading tokens")) < 0)
			goto out;
		if ((r = parse_line(line, ll, lineno, &t.v[t.n])) < 0)
			goto out;
		for (size_t i = 0; i < t.n; i++) {
			if (!memcmp(t.v[i].hash, t.v[t.n].hash, FERRY_HASH_LEN) ||
			    (strcmp(t.v[i].name, "-") && !strcmp(t.v[i].name, t.v[t.n].name))) {
				r = ferry_err(FERR_CORRUPT, "tokens file line %zu: a duplicate token or name",
					      lineno);
				goto out;
			}
		}
		t.n++;
	}
	*out = t;
	return 0;
out:
	net_tokens_release(&t);
	return r;
}

int net_tokens_load(const char *path, struct net_tokens *out)
{
	char *text = NULL;
	size_t len = 0;
	int r;
	if ((r = io_read_file(path, TOKENS_FILE_MAX, &text, &len)) < 0)
		return r;
	r = net_tokens_parse(text, len, out);
	free(text);
	if (r < 0)
		return ferry_err(-r, "'%s': %s", path, ferry_errmsg(r));
	return 0;
}

/* "ferry_" and 64 lowercase hex digits → the 32 bytes. */
static int bearer_raw(const char *s, uint8_t raw[NET_TOKEN_RAW])
{
	size_t pl = strlen(NET_TOKEN_PREFIX);
	if (strncmp(s, NET_TOKEN_PREFIX, pl) != 0 || strlen(s) != pl + 2 * NET_TOKEN_RAW)
		return -1;
	s += pl;
	for (size_t i = 0; i < NET_TOKEN_RAW; i++) {
		int v = 0;
		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + (size_t)k];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0)
				return -1;
			v = v * 16 + d;
		}
		raw[i] = (uint8_t)v;
	}
	return 0;
}

const struct net_token *net_tokens_find(const struct net_tokens *t, const char *bearer)
{
	uint8_t raw[NET_TOKEN_RAW], h[FERRY_HASH_LEN];
	const struct net_token *found = NULL;
	if (!bearer || bearer_raw(bearer, raw) < 0)
		return NULL;
	token_hash(raw, h);
	/* every entry, whatever matched: the time does not say which */
	for (size_t i = 0; i < t->n; i++) {
		int eq = ferry_memcmp_ct(h, t->v[i].hash, FERRY_HASH_LEN) == 0;
		if (eq && !found)
			found = &t->v[i];
	}
	return found;
}

/* ---- changing the file ----------------------------------------------------- */

static int split_path(const char *path, char *dir, size_t nd, char *base, size_t nb)
{
	const char *slash = strrchr(path, '/');
	if (slash && !slash[1])
		return ferry_err(FERR_INVAL, "'%s' is a directory, not a tokens file", path);
	if (!slash)
		snprintf(dir, nd, ".");
	else if (slash == path)
		snprintf(dir, nd, "/");
	else if ((size_t)(slash - path) >= nd)
		return ferry_err(FERR_LIMIT, "'%s' is too long", path);
	else
		snprintf(dir, nd, "%.*s", (int)(slash - path), path);
	if (snprintf(base, nb, "%s", slash ? slash + 1 : path) >= (int)nb)
		return ferry_err(FERR_LIMIT, "'%s' is too long", path);
	return 0;
}

/* Opens path (made 0600 if missing) and locks it exclusively, retrying
 * when another writer replaced it meanwhile (the lock was on the old
 * file). */
static int lock_file(const char *path, int *fdp)
{
	for (int tries = 0; tries < 100; tries++) {
		struct stat a, b;
		int fd = -1, r;
		if ((r = io_open_create(path, O_RDWR, 0600, &fd)) < 0)
			return r;
		while (flock(fd, LOCK_EX) != 0) {
			if (errno != EINTR) {
				r = ferry_err_errno(errno, "cannot lock '%s'", path);
				close(fd);
				return r;
			}
		}
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			*fdp = fd;
			return 0;
		}
		close(fd);
	}
	return ferry_err(FERR_BUSY, "'%s' keeps being replaced", path);
}

static int read_locked(int fd, const char *path, struct net_tokens *t)
{
	struct stat st;
	char *text;
	size_t got = 0;
	int r;
	if (fstat(fd, &st) != 0)
		return ferry_err_errno(errno, "cannot stat '%s'", path);
	if ((uint64_t)st.st_size > TOKENS_FILE_MAX)
		return ferry_err(FERR_LIMIT, "'%s' is larger than %zu bytes", path, TOKENS_FILE_MAX);
	if (!(text = malloc((size_t)st.st_size + 1)))
		return ferry_err(FERR_NOMEM, "reading '%s'", path);
	r = io_pread_full(fd, text, (size_t)st.st_size, 0, &got);
	if (r == 0)
		r = net_tokens_parse(text, got, t);
	free(text);
	if (r < 0)
		return ferry_err(-r, "'%s': %s", path, ferry_errmsg(r));
	return 0;
}

static int write_tokens(const char *path, const struct net_tokens *t)
{
	char dir[PATH_MAX], base[NAME_MAX + 1], hex[FERRY_HASH_HEX];
	struct fbuf b;
	int r;
	if ((r = split_path(path, dir, sizeof dir, base, sizeof base)) < 0)
		return r;
	fbuf_init(&b, TOKENS_FILE_MAX);
	if ((r = fbuf_printf(&b, "%s", TOKENS_HEADER)) < 0)
		goto out;
	for (size_t i = 0; i < t->n; i++) {
		hash_to_hex(t->v[i].hash, hex);
		if ((r = fbuf_printf(&b, "v1\t%s\t%s\t%s\t%lld\t%s\n", hex, net_perm_name(t->v[i].perm),
				     t->v[i].scope, (long long)t->v[i].created, t->v[i].name)) < 0)
			goto out;
	}
	r = io_write_file_atomic(dir, base, b.data, b.len, 0600);
out:
	fbuf_release(&b);
	return r;
}

int net_token_create(const char *path, int perm, const char *scope, const char *name,
		     char text[NET_TOKEN_TEXT], struct net_token *info)
{
	struct net_tokens t;
	struct net_token nt;
	uint8_t raw[NET_TOKEN_RAW];
	int fd = -1, r;
	memset(&t, 0, sizeof t);
	memset(&nt, 0, sizeof nt);
	if (perm < NET_PERM_READ || perm > NET_PERM_WRITE)
		return ferry_err(FERR_INVAL, "no such permission");
	if (!*scope || strlen(scope) > NET_NAME_MAX || strpbrk(scope, "@#\t\n"))
		return ferry_err(FERR_NAME, "a scope is a pool or dataset name, not '%s'", scope);
	if (name && (r = net_token_name_check(name)) < 0)
		return r;
	if ((r = lock_file(path, &fd)) < 0)
		return r;
	if ((r = read_locked(fd, path, &t)) < 0)
		goto out;
	for (size_t i = 0; name && i < t.n; i++)
		if (!strcmp(t.v[i].name, name)) {
			r = ferry_err(FERR_EXISTS, "a token named '%s' exists already", name);
			goto out;
		}
	ferry_random(raw, sizeof raw);
	token_hash(raw, nt.hash);
	token_id(&nt);
	nt.perm = perm;
	snprintf(nt.scope, sizeof nt.scope, "%s", scope);
	snprintf(nt.name, sizeof nt.name, "%s", name ? name : "-");
	nt.created = (int64_t)time(NULL);
	if ((r = VEC_GROW(t.v, t.cap, t.n, 16, "adding a token")) < 0)
		goto out;
	t.v[t.n++] = nt;
	if ((r = write_tokens(path, &t)) < 0)
		goto out;
	size_t pl = strlen(NET_TOKEN_PREFIX);
	memcpy(text, NET_TOKEN_PREFIX, pl);
	for (size_t i = 0; i < NET_TOKEN_RAW; i++)
		snprintf(text + pl + 2 * i, 3, "%02x", raw[i]);
	if (info)
		*info = nt;
out:
	explicit_bzero(raw, sizeof raw);
	net_tokens_release(&t);
	close(fd);
	return r;
}

int net_token_revoke(const char *path, const char *key, struct net_token *gone)
{
	struct net_tokens t;
	int fd = -1, r;
	size_t i;
	memset(&t, 0, sizeof t);
	if (access(path, F_OK) != 0)
		return ferry_err_errno(errno, "cannot open '%s'", path);
	if ((r = lock_file(path, &fd)) < 0)
		return r;
	if ((r = read_locked(fd, path, &t)) < 0)
		goto out;
	for (i = 0; i < t.n; i++)
		if (!strcmp(t.v[i].id, key) || (strcmp(key, "-") && !strcmp(t.v[i].name, key)))
			break;
	if (i == t.n) {
		r = ferry_err(FERR_NOENT, "no token with id or name '%s' in '%s'", key, path);
		goto out;
	}
	if (gone)
		*gone = t.v[i];
	memmove(&t.v[i], &t.v[i + 1], (t.n - i - 1) * sizeof *t.v);
	t.n--;
	r = write_tokens(path, &t);
out:
	net_tokens_release(&t);
	close(fd);
	return r;
}
