/* cli/json.c — the zfs -j document every --json output shares:
 * {"output_version": {"command": "ferry X", "vers_major": 0,
 * "vers_minor": 1}, KEY: ...}, described member by member in
 * docs/ferry-json.7 (tests/cli/104-json.t checks every command's against
 * it). */
#include <stdio.h>

#include "cli.h"

json_t *cli_json_new(const char *command, const char *key, json_t *member)
{
	json_t *top = json_object(), *ver = json_object();
	if (!top || !ver || !member) {
		json_decref(top);
		json_decref(ver);
		json_decref(member);
		return NULL;
	}
	json_object_set_new(ver, "command", json_string(command));
	json_object_set_new(ver, "vers_major", json_integer(0));
	json_object_set_new(ver, "vers_minor", json_integer(1));
	json_object_set_new(top, "output_version", ver);
	json_object_set_new(top, key, member);
	return top;
}

int cli_json_print(json_t *top, int rc)
{
	if (!top)
		return cli_fail(ferry_err(FERR_NOMEM, "building JSON"), "cannot print");
	int r = json_dumpf(top, stdout, JSON_INDENT(2));
	json_decref(top);
	if (r < 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
		return cli_fail(ferry_err(FERR_IO, "writing JSON"), "cannot print");
	return rc;
}

json_t *cli_json_u64(uint64_t v)
{
	return json_integer((json_int_t)v);
}
