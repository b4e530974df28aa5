/* sync/shell.c — the command check of `ferry shell`, the forced command of
 * an authorized_keys line (in the manner of borg serve --restrict-to-path
 * --append-only): SSH_ORIGINAL_COMMAND is split into words with a POSIX
 * shell's quoting and nothing else (no expansion, no shell syntax), and
 * only the ferry commands the far side of a sync needs pass, with the
 * options they know and every dataset inside the scope. Also the quoting
 * the near side uses to build those commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stream/stream.h"
#include "internal.h"

int sh_quote(struct fbuf *out, const char *s)
{
	int r;
	if ((r = fbuf_putc(out, '\'')) < 0)
		return r;
	for (; *s; s++) {
		if (*s == '\'')
			r = fbuf_append(out, "'\\''", 4);
		else
			r = fbuf_putc(out, (uint8_t)*s);
		if (r < 0)
			return r;
	}
	return fbuf_putc(out, '\'');
}

#define SH_WORDS_MAX 256
#define SH_LINE_MAX 65536

static int refuse(const char *fmt, const char *a)
{
	return ferry_err(FERR_PERM, fmt, a);
}

void sync_shell_free(char **argv, int argc)
{
	if (!argv)
		return;
	for (int i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

/* Splits s into words; -FERR_PERM for unquoted shell syntax or an open quote. */
static int split(const char *s, char ***out, int *n)
{
	char **v = NULL, *w = NULL;
	size_t wl = 0, len = strlen(s);
	int cnt = 0, inword = 0, r = 0;
	if (len > SH_LINE_MAX)
		return refuse("the command is too long%s", "");
	if (!(v = calloc(SH_WORDS_MAX + 1, sizeof *v)) || !(w = malloc(len + 1))) {
		free(v);
		return ferry_err(FERR_NOMEM, "reading the command");
	}
	for (const char *p = s;; p++) {
		char c = *p;
		if (c == 0 || c == ' ' || c == '\t' || c == '\n') {
			if (inword) {
				if (cnt == SH_WORDS_MAX) {
					r = refuse("the command has too many words%s", "");
					goto fail;
				}
				w[wl] = 0;
				if (!(v[cnt] = strdup(w))) {
					r = ferry_err(FERR_NOMEM, "reading the command");
					goto fail;
				}
				cnt++;
				wl = 0;
				inword = 0;
			}
			if (c == 0)
				break;
			continue;
		}
		inword = 1;
		if (c == '\'') {
			const char *q = strchr(p + 1, '\'');
			if (!q) {
				r = refuse("unterminated quote in the command%s", "");
				goto fail;
			}
			memcpy(w + wl, p + 1, (size_t)(q - p - 1));
			wl += (size_t)(q - p - 1);
			p = q;
		} else if (c == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1] && strchr("\"\\$`\n", p[1]))
					p++;
				else if (*p == '$' || *p == '`') {
					r = refuse("'%s' (expansion) is not allowed here", *p == '$' ? "$" : "`");
					goto fail;
				}
				w[wl++] = *p;
			}
			if (!*p) {
				r = refuse("unterminated quote in the command%s", "");
				goto fail;
			}
		} else if (c == '\\') {
			if (!p[1]) {
				r = refuse("a backslash ends the command%s", "");
				goto fail;
			}
			w[wl++] = *++p;
		} else if (strchr(";&|<>()$`*?[]{}~#=!", c) && !(wl > 0 && (c == '=' || c == '#'))) {
			/* shell syntax would mean something to a shell that does not
			 * run here: refused rather than taken literally ('=' and '#'
			 * inside a word, as in -o p=v and ds#mark, are plain) */
			char cs[2] = {c, 0};
			r = refuse("shell syntax ('%s') is not allowed here", cs);
			goto fail;
		} else {
			w[wl++] = c;
		}
	}
	free(w);
	*out = v;
	*n = cnt;
	return 0;
fail:
	free(w);
	sync_shell_free(v, cnt);
	return r;
}

/* The commands and their options: short letters (':' after one that takes
 * a value) and long names ('=' after one that takes a value). */
struct sh_cmd {
	const char *name;
	const char *shorts;
	const char *longs[6];
	int min_ops, max_ops; /* dataset operands (-1: any) */
	int props_first;      /* get: the first operand is the property list */
	int writes;           /* refused with --read-only */
};
static const struct sh_cmd cmds[] = {
	{"list", "rd:t:o:s:S:Hp", {"json", "prefix=", NULL}, 1, -1, 0, 0},
	{"get", "rd:t:o:Hp", {"json", NULL}, 1, -1, 1, 0},
	{"sync-state", "r", {NULL}, 1, 1, 0, 0},
	{"send", "cpRnvPi:I:t:", {"compress=", "compressed", "props", "replicate", "verbose", NULL},
	 0, 1, 0, 0},
	{"recv", "FsuvnAo:x:", {"keep-source-compression", "verbose", NULL}, 1, 1, 0, 1},
	{"receive", "FsuvnAo:x:", {"keep-source-compression", "verbose", NULL}, 1, 1, 0, 1},
};

/* Whether name (a dataset, snapshot or bookmark) lies inside scope. */
static int in_scope(const char *name, const char *scope)
{
	size_t n = strlen(scope);
	if (strncmp(name, scope, n))
		return 0;
	return name[n] == 0 || name[n] == '/' || name[n] == '@' || name[n] == '#';
}

static int check_name(const char *name, const char *scope, int bare_snap_ok)
{
	int kind = strchr(name, '@') ? STORE_NAME_SNAPSHOT
				     : strchr(name, '#') ? STORE_NAME_BOOKMARK : STORE_NAME_DATASET;
	if (bare_snap_ok && (name[0] == '@' || name[0] == '#'))
		return 0; /* send -i @snap: in the sent snapshot's dataset */
	if (store_name_check(name, kind) < 0) {
		ferry_err_clear();
		return refuse("'%s' is not a dataset, snapshot or bookmark name", name);
	}
	if (!in_scope(name, scope)) {
		int r = refuse("'%s' is outside this key's scope", name);
		return r;
	}
	return 0;
}

int sync_shell_parse(const char *cmdline, const char *scope, unsigned flags, char ***argv_out,
		     int *argc_out)
{
	char **w = NULL;
	int n = 0, r;
	if (!cmdline || !*cmdline)
		return refuse("this key runs only ferry commands%s", " (no interactive shell)");
	if ((r = split(cmdline, &w, &n)) < 0)
		return r;
	if (n < 2) {
		r = refuse("this key runs only ferry commands, not '%s'", n ? w[0] : "");
		goto fail;
	}
	const char *prog = strrchr(w[0], '/') ? strrchr(w[0], '/') + 1 : w[0];
	if (strcmp(prog, "ferry")) {
		r = refuse("this key runs only ferry commands, not '%s'", w[0]);
		goto fail;
	}
	const struct sh_cmd *c = NULL;
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(w[1], cmds[i].name))
			c = &cmds[i];
	if (!c) {
		r = refuse("'ferry %s' is not allowed here (only list, get, sync-state, send and recv)",
			   w[1]);
		goto fail;
	}
	if (c->writes && (flags & SYNC_SHELL_READ_ONLY)) {
		r = refuse("'ferry %s' is not allowed here: this key is read-only", w[1]);
		goto fail;
	}
	int ops = 0, after_dd = 0, props_seen = 0, token = 0, abort_partial = 0;
	for (int i = 2; i < n; i++) {
		const char *a = w[i];
		if (!after_dd && !strcmp(a, "--")) {
			after_dd = 1;
			continue;
		}
		if (!after_dd && a[0] == '-' && a[1] == '-') {
			const char *lname = a + 2, *eq = strchr(lname, '=');
			size_t ln = eq ? (size_t)(eq - lname) : strlen(lname);
			int ok = 0;
			for (size_t k = 0; c->longs[k]; k++) {
				size_t kl = strcspn(c->longs[k], "=");
				if (kl != ln || strncmp(c->longs[k], lname, ln))
					continue;
				ok = 1;
				if (c->longs[k][kl] == '=' && !eq) {
					if (i + 1 >= n) {
						r = refuse("option '%s' needs a value", a);
						goto fail;
					}
					i++;
				} else if (c->longs[k][kl] != '=' && eq) {
					r = refuse("option '%s' takes no value", a);
					goto fail;
				}
			}
			if (!ok) {
				r = refuse("option '%s' is not allowed here", a);
				goto fail;
			}
			continue;
		}
		if (!after_dd && a[0] == '-' && a[1]) {
			for (const char *o = a + 1; *o; o++) {
				const char *sp = strchr(c->shorts, *o);
				if (!sp || *o == ':') {
					char opt[3] = {'-', *o, 0};
					r = refuse("option '%s' is not allowed here", opt);
					goto fail;
				}
				if (*o == 'F' && c->writes && (flags & SYNC_SHELL_APPEND_ONLY)) {
					r = refuse("'%s' is not allowed here: this key is append-only "
						   "(no rollback or destruction)", "recv -F");
					goto fail;
				}
				if (*o == 'A')
					abort_partial = 1;
				if (sp[1] != ':')
					continue;
				const char *val = o[1] ? o + 1 : (i + 1 < n ? w[++i] : NULL);
				if (!val) {
					char opt[3] = {'-', *o, 0};
					r = refuse("option '%s' needs a value", opt);
					goto fail;
				}
				if ((*o == 'i' || *o == 'I') && (r = check_name(val, scope, 1)) < 0)
					goto fail;
				if (*o == 't') {
					struct stream_token t;
					char full[2 * STREAM_NAME_MAX + 2];
					if (stream_token_decode(val, &t) < 0) {
						ferry_err_clear();
						r = refuse("option -t: not a resume token%s", "");
						goto fail;
					}
					snprintf(full, sizeof full, "%s@%s", t.dataset, t.snapshot);
					if ((r = check_name(full, scope, 0)) < 0)
						goto fail;
					token = 1;
				}
				break;
			}
			continue;
		}
		if (c->props_first && !props_seen) {
			props_seen = 1; /* get's property list */
			continue;
		}
		if ((r = check_name(a, scope, 0)) < 0)
			goto fail;
		ops++;
	}
	int min = token ? 0 : c->min_ops;
	if (!strcmp(c->name, "send") && !token)
		min = 1;
	if (ops < min || (c->max_ops >= 0 && ops > c->max_ops) || (c->props_first && !props_seen)) {
		r = refuse("'ferry %s' needs its dataset operands, inside this key's scope", c->name);
		goto fail;
	}
	(void)abort_partial; /* recv -A discards only an uncommitted partial receive */
	/* the command's own argv: from its name on */
	free(w[0]);
	memmove(w, w + 1, (size_t)n * sizeof *w);
	n--;
	*argv_out = w;
	*argc_out = n;
	return 0;
fail:
	sync_shell_free(w, n);
	return r;
}
