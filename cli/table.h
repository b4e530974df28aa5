/* cli/table.h — column output and small parsing helpers for cli/. */
#ifndef FERRY_CLI_TABLE_H
#define FERRY_CLI_TABLE_H

#include <stdio.h>

#include "cli.h"

struct table {
	size_t ncols;
	const char **hdr; /* borrowed: must outlive the table */
	int *right;
	char ***rows;     /* owned copies */
	size_t nrows, cap;
};

int table_init(struct table *t, size_t ncols) FERRY_WUR;
void table_header(struct table *t, size_t col, const char *name, int right);
/* Copies ncols cells (NULL prints "-"). */
int table_add(struct table *t, char **cells) FERRY_WUR;
void table_print(const struct table *t, FILE *f, int scripted);
void table_release(struct table *t);

/* Splits "a,b,c" into a malloc'd vector of strings; empty items are errors. */
int cli_split_list(const char *s, char ***out, size_t *n) FERRY_WUR;
void cli_free_list(char **v, size_t n);

/* Parses one "-o PROP=VALUE" (arg is modified) into props[*n]. Returns
 * EXIT_OK, or EXIT_USAGE after printing why. */
struct store_propset;
int cli_parse_propset(char *arg, struct store_propset *props, size_t max, size_t *n);

#endif
