/* bench/codecs.c — throughput and ratio of ferry's block codecs.
 *
 *   codecs FILE...            each FILE is one category of a corpus (text,
 *                             binaries, ...); all are cut into 128 KiB
 *                             records and stored under the ZFS rule with
 *                             every codec, then read back and checked.
 *   codecs --engines FILE...  zlib vs libdeflate for the gzip codec on the
 *                             same records (zero records left out): ratio
 *                             and speed per level, compressor set-up cost,
 *                             decoder speed.
 *
 * Single-threaded; MB = 10^6 bytes of logical data per second. Driven by
 * bench/codecs, which builds the corpus and runs the command-line tools. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libdeflate.h>
#include <zlib.h>

#include "store/codec.h"

#define RECORD (128u * 1024)
#define SLOT (RECORD + RECORD / 8) /* ≥ codec_bound(RECORD), checked */
#define MAX_CATS 8

struct record {
	const uint8_t *data;
	size_t lsize;
	int cat;
	/* filled per codec */
	enum block_form form;
	size_t psize;
	uint8_t *payload; /* SLOT bytes reserved */
};

struct corpus {
	uint8_t *data;
	size_t len;
	int ncat;
	const char *cat_name[MAX_CATS];
	size_t cat_len[MAX_CATS];
	struct record *rec;
	size_t nrec;
	uint8_t *arena; /* nrec * RECORD bytes for payloads */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "codecs: %s\n", what);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void corpus_load(struct corpus *c, int nfiles, char **files)
{
	size_t cap = 0;

	memset(c, 0, sizeof *c);
	if (nfiles > MAX_CATS)
		die("too many files");
	for (int i = 0; i < nfiles; i++) {
		FILE *f = fopen(files[i], "rb");
		size_t before = c->len, got;
		if (!f) {
			fprintf(stderr, "codecs: %s: %s\n", files[i], strerror(errno));
			exit(1);
		}
		for (;;) {
			if (cap - c->len < RECORD) {
				cap = cap ? cap * 2 : 64u << 20;
				c->data = realloc(c->data, cap);
				if (!c->data)
					die("out of memory");
			}
			got = fread(c->data + c->len, 1, cap - c->len, f);
			if (got == 0)
				break;
			c->len += got;
		}
		fclose(f);
		c->cat_name[c->ncat] = base_name(files[i]);
		c->cat_len[c->ncat] = c->len - before;
		c->ncat++;
	}
	/* Records never straddle two files, like a file's last short record. */
	size_t n = 0;
	for (int k = 0; k < c->ncat; k++)
		n += (c->cat_len[k] + RECORD - 1) / RECORD;
	c->rec = xmalloc(n * sizeof *c->rec);
	c->arena = xmalloc(n * SLOT);
	size_t off = 0;
	for (int k = 0; k < c->ncat; k++) {
		size_t end = off + c->cat_len[k];
		for (; off < end; off += RECORD) {
			struct record *r = &c->rec[c->nrec];
			r->data = c->data + off;
			r->lsize = end - off < RECORD ? end - off : RECORD;
			r->cat = k;
			r->payload = c->arena + c->nrec * SLOT;
			c->nrec++;
		}
	}
}

/* ---- ferry's codecs under the storage rule ----------------------------- */

static void bench_codec(struct corpus *c, const char *name, uint8_t *back)
{
	struct codec_spec spec;
	double t0, tc = 0, td = 0;
	unsigned reps_c = 0, reps_d = 0;
	size_t phys[MAX_CATS] = { 0 }, nform[3] = { 0 }, phys_all = 0;
	int r;

	if (codec_parse(name, &spec) < 0)
		die("bad codec name");
	/* Repeat fast codecs so the timings are not all clock noise. */
	do {
		t0 = now_s();
		for (size_t i = 0; i < c->nrec; i++) {
			struct record *rc = &c->rec[i];
			r = codec_store_block(spec, rc->data, rc->lsize, rc->payload,
					      RECORD, &rc->psize, &rc->form);
			if (r < 0)
				die("codec_store_block failed");
		}
		tc += now_s() - t0;
		reps_c++;
	} while (tc < 0.5 && reps_c < 50);
	do {
		t0 = now_s();
		for (size_t i = 0; i < c->nrec; i++) {
			struct record *rc = &c->rec[i];
			uint8_t *out = back + (size_t)(rc->data - c->data);
			switch (rc->form) {
			case BLOCK_HOLE:
				memset(out, 0, rc->lsize);
				break;
			case BLOCK_RAW:
				memcpy(out, rc->data, rc->lsize);
				break;
			case BLOCK_COMPRESSED:
				r = codec_decode(spec, rc->payload, rc->psize, out,
						 rc->lsize);
				if (r < 0)
					die("codec_decode failed");
				break;
			}
		}
		td += now_s() - t0;
		reps_d++;
	} while (td < 0.5 && reps_d < 50);
	if (memcmp(back, c->data, c->len) != 0)
		die("round trip mismatch");

	for (size_t i = 0; i < c->nrec; i++) {
		struct record *rc = &c->rec[i];
		size_t p = rc->form == BLOCK_HOLE ? 0 :
			   rc->form == BLOCK_RAW ? rc->lsize : rc->psize;
		phys[rc->cat] += p;
		phys_all += p;
		nform[rc->form]++;
	}
	/* off costs the codec nothing to "compress": the caller stores src */
	if (spec.id == CODEC_OFF)
		printf("%-8s %10s", name, "-");
	else
		printf("%-8s %10.1f", name, (double)c->len * reps_c / 1e6 / tc);
	printf(" %10.1f %8.2fx", (double)c->len * reps_d / 1e6 / td,
	       phys_all ? (double)c->len / (double)phys_all : 0.0);
	for (int k = 0; k < c->ncat; k++) {
		if (phys[k])
			printf(" %9.2fx", (double)c->cat_len[k] / (double)phys[k]);
		else
			printf(" %10s", "hole");
	}
	printf("  %zu/%zu/%zu\n", nform[BLOCK_COMPRESSED], nform[BLOCK_RAW],
	       nform[BLOCK_HOLE]);
}

static int run_codecs(struct corpus *c)
{
	static const char *const names[] = {
		"off", "lz4", "gzip-1", "gzip-6", "gzip-7", "gzip-9", "zle",
	};
	uint8_t *back = xmalloc(c->len);

	memset(back, 0, c->len); /* fault the pages in before any timing */

	printf("ferry codecs, %zu records of 128 KiB, ZFS storage rule, 1 thread "
	       "(MB = 10^6 bytes; ratio = logical/physical, holes store "
	       "nothing):\n", c->nrec);
	printf("%-8s %10s %10s %9s", "codec", "comp-MB/s", "dec-MB/s", "ratio");
	for (int k = 0; k < c->ncat; k++)
		printf(" %10.10s", c->cat_name[k]);
	printf("  compressed/raw/hole records\n");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		bench_codec(c, names[i], back);
	free(back);
	return 0;
}

/* ---- zlib vs libdeflate ------------------------------------------------- */

enum engine { ENG_ZLIB, ENG_LD, ENG_LD_PERCALL };

struct engine_result {
	double secs;
	size_t out[MAX_CATS], in[MAX_CATS], total_in, total_out;
	size_t worse;      /* records where this came out larger than zlib */
	size_t worse_kept; /* ... among those zlib would keep compressed */
	size_t excess;     /* bytes over zlib's, summed over worse records */
};

static size_t engine_compress(enum engine e, int level,
			      struct libdeflate_compressor *ld,
			      const uint8_t *src, size_t n, uint8_t *dst,
			      size_t cap)
{
	if (e == ENG_ZLIB) {
		uLongf dl = cap;
		if (compress2(dst, &dl, src, n, level) != Z_OK)
			die("compress2 failed");
		return dl;
	}
	if (e == ENG_LD_PERCALL) {
		struct libdeflate_compressor *own = libdeflate_alloc_compressor(level);
		size_t r;
		if (!own)
			die("libdeflate_alloc_compressor");
		r = libdeflate_zlib_compress(own, src, n, dst, cap);
		libdeflate_free_compressor(own);
		return r;
	}
	return libdeflate_zlib_compress(ld, src, n, dst, cap);
}

static void engine_run(struct corpus *c, enum engine e, int level,
		       const size_t *zsize, size_t *sizes,
		       struct engine_result *res)
{
	struct libdeflate_compressor *ld = NULL;
	double t0;

	memset(res, 0, sizeof *res);
	if (e == ENG_LD && !(ld = libdeflate_alloc_compressor(level)))
		die("libdeflate_alloc_compressor");
	t0 = now_s();
	for (size_t i = 0; i < c->nrec; i++) {
		struct record *rc = &c->rec[i];
		if (codec_is_zero(rc->data, rc->lsize))
			continue;
		size_t n = engine_compress(e, level, ld, rc->data, rc->lsize,
					   rc->payload, SLOT);
		if (n == 0)
			die("compression failed");
		if (sizes)
			sizes[i] = n;
		if (zsize && n > zsize[i]) {
			res->worse++;
			res->worse_kept += codec_keeps(zsize[i], rc->lsize);
			res->excess += n - zsize[i];
		}
		res->in[rc->cat] += rc->lsize;
		res->out[rc->cat] += n;
		res->total_in += rc->lsize;
		res->total_out += n;
	}
	res->secs = now_s() - t0;
	libdeflate_free_compressor(ld);
}

static void engine_print(struct corpus *c, const char *label,
			 const struct engine_result *res)
{
	printf("%-22s %9.1f %8.3fx", label, (double)res->total_in / 1e6 / res->secs,
	       (double)res->total_in / (double)res->total_out);
	for (int k = 0; k < c->ncat; k++)
		if (res->out[k])
			printf(" %9.3fx", (double)res->in[k] / (double)res->out[k]);
	printf(" %7zu %5zu %8zu\n", res->worse, res->worse_kept, res->excess);
}

/* The same set-up costs against 4 KiB blocks (volumes, small files), where
 * they weigh 32 times more than against 128 KiB records. */
static void small_blocks(struct corpus *c, struct libdeflate_compressor *ld,
			 struct libdeflate_decompressor *dd)
{
	const size_t bs = 4096, span = c->len < (16u << 20) ? c->len : 16u << 20;
	const size_t nb = span / bs, zs = 2 * bs;
	uint8_t *z = xmalloc(nb * zs), *out = xmalloc(bs);
	size_t *zn = xmalloc(nb * sizeof *zn);
	double t[4];

	memset(z, 0, nb * zs); /* fault the pages in before timing */
	for (int mode = 0; mode < 4; mode++) {
		double t0 = now_s();
		for (size_t i = 0; i < nb; i++) {
			struct libdeflate_compressor *cc = ld;
			struct libdeflate_decompressor *dc = dd;
			if (mode < 2) {
				if (mode == 1 && !(cc = libdeflate_alloc_compressor(6)))
					die("alloc");
				zn[i] = libdeflate_zlib_compress(cc, c->data + i * bs, bs,
								 z + i * zs, zs);
				if (mode == 1)
					libdeflate_free_compressor(cc);
				continue;
			}
			if (mode == 3 && !(dc = libdeflate_alloc_decompressor()))
				die("alloc");
			if (libdeflate_zlib_decompress(dc, z + i * zs, zn[i], out, bs,
						       NULL) != 0)
				die("decompress");
			if (mode == 3)
				libdeflate_free_decompressor(dc);
		}
		t[mode] = now_s() - t0;
	}
	printf("4 KiB blocks, level 6: compress %.1f MB/s cached, %.1f MB/s "
	       "per-call; decompress %.1f MB/s cached, %.1f MB/s per-call\n",
	       (double)span / 1e6 / t[0], (double)span / 1e6 / t[1],
	       (double)span / 1e6 / t[2], (double)span / 1e6 / t[3]);
	free(z);
	free(zn);
	free(out);
}

static void engine_decode(struct corpus *c)
{
	struct libdeflate_compressor *ld = libdeflate_alloc_compressor(6);
	struct libdeflate_decompressor *dd = libdeflate_alloc_decompressor();
	uint8_t *out = xmalloc(RECORD);
	size_t *psz = xmalloc(c->nrec * sizeof *psz), total = 0;
	double t0, tz, tl;

	if (!ld || !dd)
		die("libdeflate alloc");
	for (size_t i = 0; i < c->nrec; i++) {
		struct record *rc = &c->rec[i];
		psz[i] = 0;
		if (codec_is_zero(rc->data, rc->lsize))
			continue;
		psz[i] = libdeflate_zlib_compress(ld, rc->data, rc->lsize,
						  rc->payload, SLOT);
		total += rc->lsize;
	}
	t0 = now_s();
	for (size_t i = 0; i < c->nrec; i++) {
		uLongf dl = RECORD;
		if (!psz[i])
			continue;
		if (uncompress(out, &dl, c->rec[i].payload, psz[i]) != Z_OK ||
		    dl != c->rec[i].lsize)
			die("uncompress failed");
	}
	tz = now_s() - t0;
	t0 = now_s();
	for (size_t i = 0; i < c->nrec; i++) {
		if (!psz[i])
			continue;
		if (libdeflate_zlib_decompress(dd, c->rec[i].payload, psz[i], out,
					       c->rec[i].lsize, NULL) != 0)
			die("libdeflate_zlib_decompress failed");
	}
	tl = now_s() - t0;
	printf("decode (level 6 data)  zlib uncompress %.1f MB/s, "
	       "libdeflate_zlib_decompress %.1f MB/s\n",
	       (double)total / 1e6 / tz, (double)total / 1e6 / tl);

	/* Set-up cost: a compressor / decompressor per call vs a cached one. */
	for (int lv = 1; lv <= 12; lv += lv == 1 ? 5 : 3) {
		const int reps = 2000;
		t0 = now_s();
		for (int i = 0; i < reps; i++) {
			struct libdeflate_compressor *p = libdeflate_alloc_compressor(lv);
			if (!p)
				die("alloc");
			libdeflate_free_compressor(p);
		}
		printf("libdeflate_alloc_compressor(%d)+free: %.1f us\n", lv,
		       (now_s() - t0) / reps * 1e6);
	}
	t0 = now_s();
	for (int i = 0; i < 20000; i++) {
		struct libdeflate_decompressor *p = libdeflate_alloc_decompressor();
		if (!p)
			die("alloc");
		libdeflate_free_decompressor(p);
	}
	printf("libdeflate_alloc_decompressor+free: %.1f us\n",
	       (now_s() - t0) / 20000 * 1e6);
	small_blocks(c, ld, dd);
	libdeflate_free_compressor(ld);
	libdeflate_free_decompressor(dd);
	free(out);
	free(psz);
}

static int run_engines(struct corpus *c, const char *levels)
{
	size_t *zsize = xmalloc(c->nrec * sizeof *zsize);
	struct engine_result res;
	char label[64];

	printf("gzip engines on the non-zero 128 KiB records (zlib format; ratio = "
	       "in/out without the 12.5%% rule; 'worse' = records larger than "
	       "zlib's at the same level, 'kept' those of them zlib would store "
	       "compressed, 'excess' their extra bytes):\n");
	printf("%-22s %9s %9s", "engine", "MB/s", "ratio");
	for (int k = 0; k < c->ncat; k++) {
		int any = 0;
		for (size_t i = 0; i < c->nrec && !any; i++)
			any = c->rec[i].cat == k &&
			      !codec_is_zero(c->rec[i].data, c->rec[i].lsize);
		if (any)
			printf(" %10.10s", c->cat_name[k]);
	}
	printf(" %7s %5s %8s\n", "worse", "kept", "excess");
	for (const char *p = levels; *p; p++) {
		int zl = *p - '0';
		if (zl < 1 || zl > 9)
			continue;
		engine_run(c, ENG_ZLIB, zl, NULL, zsize, &res);
		snprintf(label, sizeof label, "zlib %d", zl);
		engine_print(c, label, &res);
		for (int ll = zl; ll <= zl + 1 && ll <= 12; ll++) {
			engine_run(c, ENG_LD, ll, zsize, NULL, &res);
			snprintf(label, sizeof label, "libdeflate %d", ll);
			engine_print(c, label, &res);
		}
		engine_run(c, ENG_LD_PERCALL, zl, zsize, NULL, &res);
		snprintf(label, sizeof label, "libdeflate %d per-call", zl);
		engine_print(c, label, &res);
	}
	engine_decode(c);
	free(zsize);
	return 0;
}

int main(int argc, char **argv)
{
	struct corpus c;
	int engines = 0, argi = 1, r;
	const char *levels = getenv("BENCH_LEVELS");

	if (argc > 1 && strcmp(argv[1], "--engines") == 0) {
		engines = 1;
		argi = 2;
	}
	if (codec_bound(RECORD) > SLOT)
		die("SLOT < codec_bound(RECORD)");
	if (argi >= argc) {
		fprintf(stderr, "usage: codecs [--engines] FILE...\n");
		return 2;
	}
	corpus_load(&c, argc - argi, argv + argi);
	r = engines ? run_engines(&c, levels ? levels : "1679")
		    : run_codecs(&c);
	free(c.rec);
	free(c.arena);
	free(c.data);
	return r;
}
