/* tests/tools/mess.c — damages a stream in the manner of OpenZFS's
 * mess_send_file, for the corruption tests:
 *
 *   mess flip IN OUT SEED      one random bit of IN flipped (offset and bit
 *                              from SEED), written to OUT; prints the offset
 *   mess trunc IN OUT SEED     IN cut at a random length 0..size-1; prints it
 *
 * Exits 0, or 2 on usage and I/O errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

int main(int argc, char **argv)
{
	if (argc != 5 || (strcmp(argv[1], "flip") && strcmp(argv[1], "trunc"))) {
		fprintf(stderr, "usage: mess flip|trunc IN OUT SEED\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		perror(argv[2]);
		return 2;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	rewind(f);
	if (size <= 0) {
		fprintf(stderr, "mess: %s is empty\n", argv[2]);
		fclose(f);
		return 2;
	}
	uint8_t *buf = malloc((size_t)size);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "mess: cannot read %s\n", argv[2]);
		fclose(f);
		free(buf);
		return 2;
	}
	fclose(f);
	uint64_t x = strtoull(argv[4], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
	next(&x);
	size_t len = (size_t)size;
	uint64_t off = next(&x) % (uint64_t)size;
	if (!strcmp(argv[1], "flip"))
		buf[off] ^= (uint8_t)(1u << (next(&x) % 8));
	else
		len = (size_t)off;
	FILE *o = fopen(argv[3], "wb");
	if (!o || fwrite(buf, 1, len, o) != len || fclose(o) != 0) {
		perror(argv[3]);
		free(buf);
		return 2;
	}
	printf("%llu\n", (unsigned long long)off);
	free(buf);
	return 0;
}
