/* lib/hash.c — BLAKE2b-256 and randomness through libsodium. */
#include <assert.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "lib.h"

/* hash_state is public so callers can embed it without an allocation; it
 * must stay at least as large and as strictly aligned as libsodium's. */
static_assert(sizeof(((struct hash_state *)0)->opaque) >= sizeof(crypto_generichash_state),
	      "struct hash_state too small for crypto_generichash_state");
static_assert(alignof(struct hash_state) >= alignof(crypto_generichash_state),
	      "struct hash_state under-aligned for crypto_generichash_state");
static_assert(FERRY_HASH_LEN >= crypto_generichash_BYTES_MIN &&
		      FERRY_HASH_LEN <= crypto_generichash_BYTES_MAX,
	      "FERRY_HASH_LEN outside BLAKE2b output range");

int ferry_lib_init(void)
{
	/* sodium_init returns 1 when another caller got there first. */
	if (sodium_init() < 0)
		return ferry_err(FERR_IO, "libsodium initialisation failed");
	return 0;
}

void hash_blake2b(uint8_t out[FERRY_HASH_LEN], const void *p, size_t n)
{
	crypto_generichash(out, FERRY_HASH_LEN, p, n, NULL, 0);
}

static crypto_generichash_state *hstate(struct hash_state *h)
{
	return (crypto_generichash_state *)(void *)h->opaque;
}

void hash_init(struct hash_state *h)
{
	crypto_generichash_init(hstate(h), NULL, 0, FERRY_HASH_LEN);
}

void hash_update(struct hash_state *h, const void *p, size_t n)
{
	crypto_generichash_update(hstate(h), p, n);
}

void hash_final(struct hash_state *h, uint8_t out[FERRY_HASH_LEN])
{
	crypto_generichash_final(hstate(h), out, FERRY_HASH_LEN);
}

void hash_to_hex(const uint8_t h[FERRY_HASH_LEN], char out[FERRY_HASH_HEX])
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < FERRY_HASH_LEN; i++) {
		out[2 * i] = digits[h[i] >> 4];
		out[2 * i + 1] = digits[h[i] & 0xF];
	}
	out[2 * FERRY_HASH_LEN] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hash_from_hex(const char *hex, uint8_t out[FERRY_HASH_LEN])
{
	uint8_t tmp[FERRY_HASH_LEN];

	/* Hashes name objects on disk, so anything but exactly 64 hex digits
	 * is refused rather than silently truncated or padded. */
	for (size_t i = 0; i < FERRY_HASH_LEN; i++) {
		int hi, lo;

		if ((hi = hexval(hex[2 * i])) < 0 || (lo = hexval(hex[2 * i + 1])) < 0)
			return ferry_err(FERR_INVAL, "invalid hash: not 64 hex digits");
		tmp[i] = (uint8_t)(hi << 4 | lo);
	}
	if (hex[2 * FERRY_HASH_LEN] != '\0')
		return ferry_err(FERR_INVAL, "invalid hash: trailing characters");
	memcpy(out, tmp, sizeof(tmp));
	return 0;
}

int ferry_memcmp_ct(const void *a, const void *b, size_t n)
{
	return sodium_memcmp(a, b, n);
}

void ferry_random(void *p, size_t n)
{
	randombytes_buf(p, n);
}

uint64_t ferry_random_guid(void)
{
	uint64_t v;

	/* Zero is kept free to mean "no guid". */
	do {
		randombytes_buf(&v, sizeof(v));
	} while (v == 0);
	return v;
}
