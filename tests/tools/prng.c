/* tests/tools/prng.c — deterministic file contents for the torture trees,
 * so two runs of a scenario store the same blocks and make the same system
 * calls (the kill points of tests/torture/kill.sh are counted in them):
 *
 *   prng bin SEED SIZE    SIZE pseudo-random bytes (incompressible)
 *   prng text SEED SIZE   SIZE bytes of lines of words (compressible)
 *
 * Writes to stdout; exits 0, or 2 on usage and I/O errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *x)
{
	/* xorshift64*: good enough to defeat every codec, and fixed forever */
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1DULL;
}

static const char *const words[] = {
	"pool",  "dataset", "snapshot", "block", "record", "stream", "ferry",  "catalogue",
	"pack",  "hash",    "kill",     "crash", "resume", "token",  "gc",     "rollback",
	"the",   "a",       "of",       "and",   "to",     "in",     "is",     "it",
	"write", "fsync",   "rename",   "sync",  "commit", "page",   "journal", "wal",
};

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "bin") && strcmp(argv[1], "text"))) {
		fprintf(stderr, "usage: prng bin|text SEED SIZE\n");
		return 2;
	}
	char *end;
	uint64_t x = strtoull(argv[2], &end, 10);
	if (*end) {
		fprintf(stderr, "prng: bad seed '%s'\n", argv[2]);
		return 2;
	}
	unsigned long long size = strtoull(argv[3], &end, 10);
	if (*end) {
		fprintf(stderr, "prng: bad size '%s'\n", argv[3]);
		return 2;
	}
	x = x * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
	if (x == 0)
		x = 1;
	int text = !strcmp(argv[1], "text");
	static unsigned char buf[1 << 16];
	size_t n = 0, col = 0;
	for (unsigned long long done = 0; done < size;) {
		uint64_t v = next(&x);
		if (text) {
			const char *w = words[v % (sizeof words / sizeof *words)];
			for (; *w && done < size && n < sizeof buf; w++, done++, col++)
				buf[n++] = (unsigned char)*w;
			if (done < size && n < sizeof buf) {
				buf[n++] = col > 60 ? '\n' : ' ';
				col = col > 60 ? 0 : col + 1;
				done++;
			}
		} else {
			for (int k = 0; k < 8 && done < size && n < sizeof buf; k++, done++)
				buf[n++] = (unsigned char)(v >> (8 * k));
		}
		if (n >= sizeof buf - 16 || done == size) {
			if (fwrite(buf, 1, n, stdout) != n) {
				perror("prng: write");
				return 2;
			}
			n = 0;
		}
	}
	if (fflush(stdout) != 0) {
		perror("prng: write");
		return 2;
	}
	return 0;
}
