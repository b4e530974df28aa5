/* cli/table.c — zfs-style column output: a header, columns padded with two
 * spaces, numbers right-aligned; -H gives tab-separated rows, no header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

int table_init(struct table *t, size_t ncols)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->hdr = calloc(ncols, sizeof *t->hdr);
	t->right = calloc(ncols, sizeof *t->right);
	if (!t->hdr || !t->right)
		return ferry_err(FERR_NOMEM, "table");
	return 0;
}

void table_header(struct table *t, size_t col, const char *name, int right)
{
	t->hdr[col] = name;
	t->right[col] = right;
}

int table_add(struct table *t, char **cells)
{
	int grown = VEC_GROW(t->rows, t->cap, t->nrows, 32, "table");
	if (grown < 0)
		return grown;
	char **row = calloc(t->ncols, sizeof *row);
	if (!row)
		return ferry_err(FERR_NOMEM, "table");
	for (size_t i = 0; i < t->ncols; i++)
		if (!(row[i] = strdup(cells[i] ? cells[i] : "-"))) {
			for (size_t j = 0; j < i; j++)
				free(row[j]);
			free(row);
			return ferry_err(FERR_NOMEM, "table");
		}
	t->rows[t->nrows++] = row;
	return 0;
}

void table_print(const struct table *t, FILE *f, int scripted)
{
	size_t *w = calloc(t->ncols, sizeof *w);
	if (!w)
		return;
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = t->hdr[c] ? strlen(t->hdr[c]) : 0;
		for (size_t r = 0; r < t->nrows; r++)
			if (strlen(t->rows[r][c]) > w[c])
				w[c] = strlen(t->rows[r][c]);
	}
	for (size_t r = scripted ? 1 : 0; r <= t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = r == 0 ? t->hdr[c] : t->rows[r - 1][c];
			if (scripted) {
				fprintf(f, "%s%s", c ? "\t" : "", s);
				continue;
			}
			int last = c + 1 == t->ncols;
			if (c)
				fputs("  ", f);
			if (t->right[c])
				fprintf(f, "%*s", (int)w[c], s);
			else if (last)
				fputs(s, f);
			else
				fprintf(f, "%-*s", (int)w[c], s);
		}
		fputc('\n', f);
	}
	free(w);
}

void table_release(struct table *t)
{
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	free(t->rows);
	free(t->hdr);
	free(t->right);
	memset(t, 0, sizeof *t);
}

int cli_split_list(const char *s, char ***out, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	const char *p = s;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (len == 0)
			goto bad;
		if (VEC_GROW(v, cap, cnt, 8, "splitting a list") < 0)
			goto bad;
		if (!(v[cnt] = strndup(p, len)))
			goto bad;
		cnt++;
		if (!p[len])
			break;
		p += len + 1;
	}
	*out = v;
	*n = cnt;
	return 0;
bad:
	cli_free_list(v, cnt);
	return ferry_err(FERR_INVAL, "bad list '%s'", s);
}

void cli_free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}
