/* store/proprules.c — the property rules: which native properties exist
 * (with their aliases), what datasets they apply to, when they may be set
 * or inherited, what values they take and how a value is stored. Nothing
 * here reads the catalogue; prop.c stores, resolves and inherits values
 * under these rules, lifecycle.c checks a creation's set with them. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

enum {
	T_FS = 1 << STORE_DS_FILESYSTEM, T_VOL = 1 << STORE_DS_VOLUME, T_SNAP = 1 << STORE_DS_SNAPSHOT,
	T_BM = 1 << STORE_DS_BOOKMARK,
};

/* In `get all` order, as zfs lists them. */
static const struct prop_def props_table[] = {
	{"type", PK_RO, T_FS | T_VOL | T_SNAP | T_BM, SET_NO, 0, 1, NULL},
	{"creation", PK_RO, T_FS | T_VOL | T_SNAP | T_BM, SET_NO, 0, 1, NULL},
	{"used", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"available", PK_RO, T_FS | T_VOL, SET_NO, 0, 1, NULL},
	{"referenced", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"compressratio", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"quota", PK_QUOTA, T_FS, SET_YES, 0, 1, "0"},        /* quota.c */
	{"recordsize", PK_RECSIZE, T_FS, SET_YES, 1, 1, "131072"},
	{"volsize", PK_VOLSIZE, T_VOL, SET_YES, 0, 1, NULL},
	{"volblocksize", PK_VOLBLOCK, T_VOL, SET_CREATE, 0, 1, "16384"},
	{"compression", PK_CODEC, T_FS | T_VOL, SET_YES, 1, 1, "on"},
	{"source", PK_PATH, T_FS, SET_YES, 0, 1, "none"},
	{"refquota", PK_QUOTA, T_FS, SET_YES, 0, 1, "0"},     /* quota.c */
	{"guid", PK_RO, T_FS | T_VOL | T_SNAP | T_BM, SET_NO, 0, 1, NULL},
	{"createtxg", PK_RO, T_FS | T_VOL | T_SNAP | T_BM, SET_NO, 0, 1, NULL},
	{"defer_destroy", PK_RO, T_SNAP, SET_NO, 0, 1, NULL},  /* destroy -d, hold.c */
	{"userrefs", PK_RO, T_SNAP, SET_NO, 0, 1, NULL},       /* holds, hold.c */
	{"usedbysnapshots", PK_RO, T_FS | T_VOL, SET_NO, 0, 1, NULL},
	{"usedbydataset", PK_RO, T_FS | T_VOL, SET_NO, 0, 1, NULL},
	{"usedbychildren", PK_RO, T_FS | T_VOL, SET_NO, 0, 1, NULL},
	{"refcompressratio", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"written", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"logicalused", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"logicalreferenced", PK_RO, T_FS | T_VOL | T_SNAP, SET_NO, 0, 1, NULL},
	{"name", PK_RO, T_FS | T_VOL | T_SNAP | T_BM, SET_NO, 0, 0, NULL},
	{"receive_resume_token", PK_RO, T_FS | T_VOL, SET_NO, 0, 0, NULL}, /* recv -s, xfer.c */
};
#define NPROPS (sizeof props_table / sizeof props_table[0])

const struct prop_def *prop_find(const char *name)
{
	if (!strcmp(name, "avail"))
		name = "available";
	else if (!strcmp(name, "refer"))
		name = "referenced";
	else if (!strcmp(name, "ratio"))
		name = "compressratio";
	else if (!strcmp(name, "recsize"))
		name = "recordsize";
	else if (!strcmp(name, "compress"))
		name = "compression";
	else if (!strcmp(name, "volblock"))
		name = "volblocksize";
	for (size_t i = 0; i < NPROPS; i++)
		if (!strcmp(props_table[i].name, name))
			return &props_table[i];
	return NULL;
}

/* zfs user property names: lowercase letters, digits, ':', '_', '-', '.',
 * at least one ':', not starting with '-'. */
int prop_user_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > STORE_USERPROP_NAME_MAX || !strchr(name, ':') || name[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ':' || c == '_' ||
		      c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

int prop_written_since(const char *name, const char **since)
{
	char probe[STORE_NAME_MAX + 3];
	if (strncmp(name, "written@", 8) != 0)
		return 0;
	const char *s = name + 8;
	/* a snapshot's short name (checked as a snapshot of some dataset
	 * "x"), or a full snapshot name */
	if (strchr(s, '@')) {
		if (store_name_check(s, STORE_NAME_SNAPSHOT) < 0)
			goto bad;
	} else {
		snprintf(probe, sizeof probe, "x@%s", s);
		if (strlen(s) > STORE_NAME_MAX || strchr(s, '/') ||
		    store_name_check(probe, STORE_NAME_SNAPSHOT) < 0)
			goto bad;
	}
	*since = s;
	return 1;
bad:
	ferry_err_clear();
	return 0;
}

int store_prop_known(const char *name)
{
	const char *since;
	return prop_find(name) != NULL || prop_user_name(name) || prop_written_since(name, &since);
}

static int pow2_between(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

int store_prop_validate(const char *name, const char *value, int type, int create_time,
			char *canon, size_t n)
{
	const struct prop_def *d = prop_find(name);
	uint64_t v = 0;
	if (!d) {
		if (!prop_user_name(name))
			return ferry_err(FERR_PROP, "invalid property '%s'", name);
		size_t len = strlen(value);
		if (len > STORE_USERPROP_VALUE_MAX)
			return ferry_err(FERR_PROP, "property '%s' value is longer than %d bytes",
					 name, STORE_USERPROP_VALUE_MAX);
		snprintf(canon, n, "%s", value);
		return 0;
	}
	if (d->settable == SET_NO)
		return ferry_err(FERR_PROP, "property '%s' is read-only", d->name);
	if (!(d->types & (1 << type)))
		return ferry_err(FERR_PROP, "property '%s' does not apply to a %s", d->name,
				 store_ds_type_name(type));
	if (d->settable == SET_CREATE && !create_time)
		return ferry_err(FERR_PROP, "property '%s' can be set only at creation", d->name);
	switch (d->kind) {
	case PK_CODEC: {
		struct codec_spec c;
		int r = codec_parse(value, &c);
		if (r < 0)
			return ferry_err(FERR_PROP, "'compression' must be one of 'on | off | lz4 | "
				"gzip | gzip-[1-9] | zle', not '%s'", value);
		/* zfs shows gzip-6 as "gzip" and keeps "on" as "on". */
		snprintf(canon, n, "%s", !strcmp(value, "gzip-6") ? "gzip" : value);
		return 0;
	}
	case PK_RECSIZE:
		if (parse_size(value, &v) < 0 || !pow2_between(v, 512, 1 << 20))
			return ferry_err(FERR_PROP, "'recordsize' must be a power of 2 from 512B "
				"to 1M, not '%s'", value);
		break;
	case PK_VOLBLOCK:
		if (parse_size(value, &v) < 0 || !pow2_between(v, 512, 128 << 10))
			return ferry_err(FERR_PROP, "'volblocksize' must be a power of 2 from 512B "
				"to 128K, not '%s'", value);
		break;
	case PK_VOLSIZE:
		if (parse_size(value, &v) < 0 || v == 0 || v > (UINT64_C(1) << 62))
			return ferry_err(FERR_PROP, "'volsize' must be a size greater than zero, "
				"not '%s'", value);
		break;
	case PK_QUOTA:
		/* zfs: a size, or none (0); 0 is none too */
		if (strcmp(value, "none") &&
		    (parse_size(value, &v) < 0 || v > (UINT64_C(1) << 62)))
			return ferry_err(FERR_PROP, "'%s' must be a size or 'none', not '%s'", d->name,
					 value);
		break;
	case PK_PATH:
		if (strcmp(value, "none") && value[0] != '/')
			return ferry_err(FERR_PROP, "'source' must be an absolute path or 'none', "
				"not '%s'", value);
		if (strlen(value) >= 4096)
			return ferry_err(FERR_PROP, "'source' path is too long");
		snprintf(canon, n, "%s", value);
		return 0;
	case PK_RO:
		return ferry_err(FERR_PROP, "property '%s' is read-only", d->name);
	}
	snprintf(canon, n, "%" PRIu64, v);
	return 0;
}

const struct prop_def *prop_at(size_t i)
{
	return i < NPROPS ? &props_table[i] : NULL;
}

int prop_check_create(int type, const struct store_propset *props, size_t n)
{
	char canon[STORE_USERPROP_VALUE_MAX + 1];
	int r, have_volsize = 0;
	for (size_t i = 0; i < n; i++) {
		if ((r = store_prop_validate(props[i].name, props[i].value, type, 1, canon,
					     sizeof canon)) < 0)
			return r;
		if (!strcmp(props[i].name, "volsize"))
			have_volsize = 1;
	}
	if (type != STORE_DS_VOLUME)
		return 0;
	if (!have_volsize)
		return ferry_err(FERR_PROP, "a volume needs a size (-V SIZE)");
	uint64_t vs = 0, vb = 16384;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(props[i].name, "volsize") && parse_size(props[i].value, &vs) < 0)
			return ferry_err(FERR_PROP, "bad volsize '%s'", props[i].value);
		if (!strcmp(props[i].name, "volblocksize") && parse_size(props[i].value, &vb) < 0)
			return ferry_err(FERR_PROP, "bad volblocksize '%s'", props[i].value);
	}
	if (vb == 0 || vs % vb != 0)
		return ferry_err(FERR_PROP, "volsize must be a multiple of volblocksize");
	return 0;
}

int prop_check_changeable(int type)
{
	if (type == STORE_DS_SNAPSHOT || type == STORE_DS_BOOKMARK)
		return ferry_err(FERR_PROP, "%s properties cannot be changed",
				 store_ds_type_name(type));
	return 0;
}

int store_prop_create_only(const char *name)
{
	const struct prop_def *d = prop_find(name);
	return d && d->settable == SET_CREATE;
}

int prop_check_inherit(const char *name, const char **canon)
{
	const struct prop_def *d = prop_find(name);
	if (!d && !prop_user_name(name))
		return ferry_err(FERR_PROP, "invalid property '%s'", name);
	if (d && d->settable == SET_NO)
		return ferry_err(FERR_PROP, "property '%s' is read-only", d->name);
	if (d && d->settable == SET_CREATE)
		return ferry_err(FERR_PROP, "property '%s' can be set only at creation", d->name);
	if (d && !strcmp(d->name, "volsize"))
		return ferry_err(FERR_PROP, "property 'volsize' cannot be inherited");
	*canon = d ? d->name : name;
	return 0;
}
