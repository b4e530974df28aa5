/* lib/crc32c.c — CRC-32C (Castagnoli), the stream's non-cryptographic
 * check of bytes whose content a BLAKE2b hash already names (version 2 of
 * docs/ferry-stream.5). The x86-64 crc32 instruction does 8 bytes a step;
 * elsewhere, or on a CPU without SSE4.2, a table does one byte a step. Both
 * give the same value (tests/unit/test_keep.c compares them). */
#include <stdint.h>
#include <string.h>

#include "lib.h"

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */

static uint32_t table[256];
static int table_ready;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		table[i] = c;
	}
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* The raw register update: no pre- or post-inversion. */
static uint32_t crc_soft(uint32_t c, const uint8_t *p, size_t n)
{
	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		table_init(); /* idempotent: racing threads write the same table */
	while (n--)
		c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;

	while (n && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8); /* little-endian: the byte order crc32 wants */
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		n -= 8;
	}
	while (n--)
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
	return (uint32_t)c64;
}

static int have_hw(void)
{
	static int v = -1;
	int h = __atomic_load_n(&v, __ATOMIC_RELAXED);

	if (h < 0) {
		h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&v, h, __ATOMIC_RELAXED);
	}
	return h;
}
#endif

uint32_t crc32c_update(uint32_t crc, const void *p, size_t n)
{
	uint32_t c = ~crc;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (have_hw())
		return ~crc_hw(c, p, n);
#endif
	return ~crc_soft(c, p, n);
}

uint32_t crc32c_update_portable(uint32_t crc, const void *p, size_t n)
{
	return ~crc_soft(~crc, p, n);
}
