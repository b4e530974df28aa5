/* Replays a libFuzzer corpus without libFuzzer: `make check` runs every
 * target over its corpus folder (or files) with gcc, so no clang is needed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); return 1; }
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *n = realloc(buf, cap);
			if (!n) { fclose(f); free(buf); return 1; }
			buf = n;
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		if (r == 0) break;
		len += r;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) { perror(argv[i]); return 1; }
		if (!S_ISDIR(st.st_mode)) { if (run_file(argv[i])) return 1; n++; continue; }
		DIR *d = opendir(argv[i]);
		if (!d) { perror(argv[i]); return 1; }
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.') continue;
			char p[4096];
			snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
			if (run_file(p)) { closedir(d); return 1; }
			n++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", n);
	return 0;
}
