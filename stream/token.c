/* stream/token.c — resume tokens: "1-" and the lowercase hex of a small
 * checked blob (docs/ferry-stream.5, RESUMING). Tokens come back from
 * users and HTTP peers, so decoding trusts nothing. */
#include <inttypes.h>
#include <string.h>

#include "internal.h"

#define TOKEN_FIXED 36u
#define TOKEN_CHECK 16u
#define TOKEN_BLOB_MAX (TOKEN_FIXED + STREAM_NAME_MAX - 1 + TOKEN_CHECK)
#define TOKEN_PREFIX "1-"
#define TOKEN_FLAGS (STREAM_F_COMPRESSED | STREAM_F_PROPS)

_Static_assert(2 + 2 * TOKEN_BLOB_MAX + 1 == STREAM_TOKEN_MAX, "STREAM_TOKEN_MAX");

/* Field rules shared by both directions; code is the error for a broken
 * rule. */
static int token_check(int code, const char *who, uint32_t flags, uint64_t to, uint64_t from,
		       uint64_t pos, const uint8_t *ds, size_t dl, const uint8_t *snap, size_t sl)
{
	char why[96];

	if (flags & ~(uint32_t)TOKEN_FLAGS)
		return ferry_err(code, "%s: flags 0x%" PRIx32 " not allowed in a token", who, flags);
	if (to == 0)
		return ferry_err(code, "%s: to guid is 0", who);
	if (from == to)
		return ferry_err(code, "%s: from guid equals to guid", who);
	if (pos == 0 || pos > STREAM_RESUME_MAX)
		return ferry_err(code, "%s: resume position %" PRIu64 " outside 1..%llu", who, pos,
				 (unsigned long long)STREAM_RESUME_MAX);
	if (stream_name_dataset(ds, dl, why, sizeof(why)) < 0)
		return ferry_err(code, "%s: dataset name: %s", who, why);
	if (stream_name_snapshot(snap, sl, why, sizeof(why)) < 0)
		return ferry_err(code, "%s: snapshot name: %s", who, why);
	if (dl + 1 + sl > STREAM_NAME_MAX)
		return ferry_err(code, "%s: dataset@snapshot longer than %u bytes", who,
				 STREAM_NAME_MAX);
	return 0;
}

int stream_token_encode(const struct stream_token *t, char *out, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t blob[TOKEN_BLOB_MAX], h[FERRY_HASH_LEN];
	size_t dl = strnlen(t->dataset, sizeof(t->dataset));
	size_t sl = strnlen(t->snapshot, sizeof(t->snapshot));
	size_t len, tl;
	int r;

	if (dl == sizeof(t->dataset) || sl == sizeof(t->snapshot))
		return ferry_err(FERR_INVAL, "resume token: name not terminated");
	if ((r = token_check(FERR_INVAL, "resume token", t->flags, t->to_guid, t->from_guid,
			     t->resume_pos, (const uint8_t *)t->dataset, dl,
			     (const uint8_t *)t->snapshot, sl)) < 0)
		return r;
	memset(blob, 0, TOKEN_FIXED);
	put_le32(blob, t->flags);
	put_le64(blob + 8, t->to_guid);
	put_le64(blob + 16, t->from_guid);
	put_le64(blob + 24, t->resume_pos);
	blob[32] = (uint8_t)dl;
	blob[33] = (uint8_t)sl;
	memcpy(blob + TOKEN_FIXED, t->dataset, dl);
	memcpy(blob + TOKEN_FIXED + dl, t->snapshot, sl);
	len = TOKEN_FIXED + dl + sl;
	hash_blake2b(h, blob, len);
	memcpy(blob + len, h, TOKEN_CHECK);
	len += TOKEN_CHECK;
	tl = 2 + 2 * len;
	if (n < tl + 1)
		return ferry_err(FERR_LIMIT, "resume token: %zu bytes needed, buffer has %zu",
				 tl + 1, n);
	memcpy(out, TOKEN_PREFIX, 2);
	for (size_t i = 0; i < len; i++) {
		out[2 + 2 * i] = digits[blob[i] >> 4];
		out[3 + 2 * i] = digits[blob[i] & 0xf];
	}
	out[tl] = '\0';
	return 0;
}

static int hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int stream_token_decode(const char *s, struct stream_token *out)
{
	uint8_t blob[TOKEN_BLOB_MAX], h[FERRY_HASH_LEN];
	size_t n = strnlen(s, STREAM_TOKEN_MAX), len, dl, sl, i;
	struct stream_token t;
	int r;

	if (n >= STREAM_TOKEN_MAX)
		return ferry_err(FERR_LIMIT, "resume token longer than %u characters",
				 STREAM_TOKEN_MAX - 1);
	/* A version prefix we do not know is a newer token, not garbage. */
	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == 0 || i >= n || s[i] != '-')
		return ferry_err(FERR_CORRUPT, "resume token: not a ferry resume token");
	if (i != 1 || s[0] != '1')
		return ferry_err(FERR_UNSUPPORTED, "resume token version %.*s (this reader "
				 "supports 1)", (int)(i > 20 ? 20 : i), s);
	if ((n - 2) % 2)
		return ferry_err(FERR_CORRUPT, "resume token: odd number of hex digits");
	len = (n - 2) / 2;
	if (len < TOKEN_FIXED + 2 + TOKEN_CHECK)
		return ferry_err(FERR_CORRUPT, "resume token: too short");
	for (i = 0; i < len; i++) {
		int hi = hexdigit(s[2 + 2 * i]), lo = hexdigit(s[3 + 2 * i]);
		if (hi < 0 || lo < 0)
			return ferry_err(FERR_CORRUPT, "resume token: invalid character at "
					 "offset %zu", 2 + 2 * i + (hi < 0 ? 0 : 1));
		blob[i] = (uint8_t)(hi << 4 | lo);
	}
	hash_blake2b(h, blob, len - TOKEN_CHECK);
	if (memcmp(h, blob + len - TOKEN_CHECK, TOKEN_CHECK) != 0)
		return ferry_err(FERR_CORRUPT, "resume token: check value mismatch (damaged or "
				 "mistyped)");
	dl = blob[32];
	sl = blob[33];
	if (get_le32(blob + 4) || blob[34] || blob[35])
		return ferry_err(FERR_CORRUPT, "resume token: reserved bytes not 0");
	if (TOKEN_FIXED + dl + sl + TOKEN_CHECK != len)
		return ferry_err(FERR_CORRUPT, "resume token: name lengths do not match its size");
	memset(&t, 0, sizeof(t));
	t.flags = get_le32(blob);
	t.to_guid = get_le64(blob + 8);
	t.from_guid = get_le64(blob + 16);
	t.resume_pos = get_le64(blob + 24);
	if ((r = token_check(FERR_CORRUPT, "resume token", t.flags, t.to_guid, t.from_guid,
			     t.resume_pos, blob + TOKEN_FIXED, dl, blob + TOKEN_FIXED + dl, sl)) < 0)
		return r;
	memcpy(t.dataset, blob + TOKEN_FIXED, dl);
	memcpy(t.snapshot, blob + TOKEN_FIXED + dl, sl);
	*out = t;
	return 0;
}
