/* cli/cmd_dump.c — ferry dump [-v] [FILE]: prints a stream's records, like
 * zstream dump. On a bad stream it prints what was decoded, then the
 * reason in one line, and fails. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../stream/stream.h"
#include "cli.h"

#define DUMP_USAGE "usage: ferry dump [-v] [FILE]"
#define NTYPES 10

struct dump {
	int verbose;
	uint64_t count[NTYPES];
	uint64_t bytes[NTYPES];
	uint64_t lsize, psize;
};

static void put_hash(const uint8_t h[FERRY_HASH_LEN])
{
	char hex[FERRY_HASH_HEX];

	hash_to_hex(h, hex);
	fputs(hex, stdout);
}

/* Values are any bytes but NUL: escape what a terminal would act on. */
static void put_escaped(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", stdout);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
}

static void put_time(uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char buf[64];

	printf("%" PRIu64, ns);
	if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		printf(" (%s.%09" PRIu64 "Z)", buf, ns % 1000000000u);
}

static void put_flags(uint32_t f)
{
	static const char *const names[] = {"compressed", "props", "replicate", "resumed", "tree"};
	int any = 0;

	printf("\tflags = ");
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & (1u << i))
			printf("%s%s", any++ ? "," : "", names[i]);
	printf("%s (0x%" PRIx32 ")\n", any ? "" : "none", f);
}

static const char *ds_type_name(uint8_t t)
{
	return t == STREAM_DS_FILESYSTEM ? "filesystem" : t == STREAM_DS_VOLUME ? "volume" : "?";
}

static void put_props(const struct stream_prop *props, size_t n)
{
	printf("\tproperties = %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		printf("\t\t%s = ", props[i].name);
		put_escaped(props[i].value);
		printf(" (%s)\n", stream_source_name(props[i].source));
	}
}

static void dump_begin(const struct stream_record *rec)
{
	const struct stream_begin *b = &rec->begin;

	printf("BEGIN record %" PRIu64 "\n", rec->index);
	printf("\tversion = %u\n", (unsigned)b->version);
	put_flags(b->flags);
	printf("\tfeatures = required 0x%" PRIx64 ", optional 0x%" PRIx64 "\n", b->features_req,
	       b->features_opt);
	printf("\ttype = %s\n", ds_type_name(b->ds_type));
	printf("\tdataset = %s\n\tsnapshot = %s\n", b->dataset, b->snapshot);
	printf("\ttoguid = 0x%016" PRIx64 "\n", b->to_guid);
	if (b->from_guid)
		printf("\tfromguid = 0x%016" PRIx64 "\n", b->from_guid);
	else
		printf("\tfromguid = 0 (full)\n");
	printf("\tcreation = ");
	put_time(b->creation_ns);
	printf("\n\tcreation_txg = %" PRIu64 "\n\troot = ", b->creation_txg);
	put_hash(b->root_hash);
	printf(" (type %u)\n\tresume = %" PRIu64 "\n", (unsigned)b->root_type, b->resume_pos);
	put_props(b->props, b->nprops);
}

static void dump_package(const struct stream_record *rec)
{
	const struct stream_package *k = &rec->package;

	printf("PACKAGE record %" PRIu64 "\n", rec->index);
	printf("\tversion = %u\n", (unsigned)k->version);
	put_flags(k->flags);
	printf("\tfeatures = required 0x%" PRIx64 ", optional 0x%" PRIx64 "\n", k->features_req,
	       k->features_opt);
	printf("\ttop = %s\n\tto = %s\n", k->top, k->to_snap);
	printf("\tfrom = %s\n", *k->from_snap ? k->from_snap : "(full)");
	printf("\tdatasets = %" PRIu32 "\n", k->ndatasets);
}

static void dump_dataset(const struct stream_record *rec)
{
	const struct stream_dataset *d = &rec->dataset;

	printf("DATASET record %" PRIu64 "\n", rec->index);
	printf("\tname = %s\n\tguid = 0x%016" PRIx64 "\n\ttype = %s\n", d->name, d->guid,
	       ds_type_name(d->ds_type));
	put_props(d->props, d->nprops);
	printf("\tsnapshots = %zu\n", d->nsnaps);
	for (size_t i = 0; i < d->nsnaps; i++) {
		printf("\t\t%s guid=0x%016" PRIx64 " txg=%" PRIu64 " creation=", d->snaps[i].name,
		       d->snaps[i].guid, d->snaps[i].txg);
		put_time(d->snaps[i].creation_ns);
		putchar('\n');
	}
}

static void dump_record(struct dump *st, const struct stream_record *rec)
{
	char cn[16];

	st->count[rec->type]++;
	st->bytes[rec->type] += rec->length;
	switch (rec->type) {
	case STREAM_BEGIN:
		dump_begin(rec);
		break;
	case STREAM_END:
		printf("END record %" PRIu64 "\n\tcount = %" PRIu64 "\n\tdigest = ", rec->index,
		       rec->end.count);
		put_hash(rec->end.digest);
		putchar('\n');
		break;
	case STREAM_NODE:
		if (!st->verbose)
			break;
		printf("NODE record %" PRIu64 ": seq=%" PRIu64 " type=%u size=%zu hash=", rec->index,
		       rec->seq, (unsigned)rec->node.type, rec->node.len);
		put_hash(rec->node.hash);
		putchar('\n');
		break;
	case STREAM_WRITE:
		st->lsize += rec->write.lsize;
		st->psize += rec->write.psize;
		if (!st->verbose)
			break;
		printf("WRITE record %" PRIu64 ": seq=%" PRIu64 " hash=", rec->index, rec->seq);
		put_hash(rec->write.hash);
		printf(" lsize=%" PRIu32 " psize=%" PRIu32 " codec=%s\n", rec->write.lsize,
		       rec->write.psize,
		       stream_codec_name(rec->write.codec, rec->write.level, cn, sizeof(cn)));
		break;
	case STREAM_WRITE_BYREF:
		if (!st->verbose)
			break;
		printf("WRITE_BYREF record %" PRIu64 ": seq=%" PRIu64 " hash=", rec->index, rec->seq);
		put_hash(rec->byref.hash);
		printf(" lsize=%" PRIu32 "\n", rec->byref.lsize);
		break;
	case STREAM_PACKAGE:
		dump_package(rec);
		break;
	case STREAM_DATASET:
		dump_dataset(rec);
		break;
	case STREAM_HINT:
		printf("HINT record %" PRIu64 "\n\tsize = %" PRIu64 "%s\n\ttried = %s\n", rec->index,
		       rec->hint.size, rec->hint.size ? "" : " (unknown)",
		       rec->hint.tried_codec ? stream_codec_name(rec->hint.tried_codec,
								 rec->hint.tried_level, cn, sizeof(cn))
					     : "none");
		break;
	case STREAM_PACKAGE_END:
		printf("PACKAGE_END record %" PRIu64 "\n\tcount = %" PRIu64 "\n\tsubstreams = %"
		       PRIu64 "\n\tdigest = ", rec->index, rec->package_end.count,
		       rec->package_end.nsub);
		put_hash(rec->package_end.digest);
		putchar('\n');
		break;
	}
}

static void dump_summary(const struct dump *st, const struct stream_decoder *d)
{
	printf("SUMMARY\n");
	for (unsigned t = 1; t < NTYPES; t++) {
		if (!st->count[t])
			continue;
		printf("\t%s records = %" PRIu64 " (payload %" PRIu64 " bytes", stream_type_name(t),
		       st->count[t], st->bytes[t]);
		if (t == STREAM_WRITE)
			printf("; lsize %" PRIu64 ", psize %" PRIu64, st->lsize, st->psize);
		printf(")\n");
	}
	if (stream_decoder_skipped(d))
		printf("\tskipped records = %" PRIu64 "\n", stream_decoder_skipped(d));
	printf("\ttotal records = %" PRIu64 "\n", stream_decoder_records(d));
	printf("\ttotal bytes = %" PRIu64 "\n", stream_decoder_bytes(d));
}

int cmd_dump(int argc, char **argv)
{
	struct dump st;
	struct stream_decoder *d = NULL;
	struct stream_source_fd src;
	struct stream_record rec;
	const char *path = NULL;
	int c, fd = STDIN_FILENO, r, rc;

	memset(&st, 0, sizeof(st));
	optind = 1;
	while ((c = cli_getopt(argc, argv, "dump", "v", NULL)) != -1) {
		switch (c) {
		case 'v':
			st.verbose = 1;
			break;
		default:
			return cli_opt_end();
		}
	}
	if (argc - optind > 1)
		return cli_usage("dump: too many arguments; " DUMP_USAGE);
	if (argc - optind == 1 && strcmp(argv[optind], "-") != 0)
		path = argv[optind];
	if (path && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return cli_fail(ferry_err_errno(errno, "cannot open '%s'", path), "dump");
	if ((r = stream_decoder_new(&d)) < 0) {
		rc = cli_fail(r, "dump");
		goto out;
	}
	io_pipe_grow(fd);
	stream_source_fd_init(&src, fd);
	while ((r = stream_decoder_pull(d, &src.base, &rec)) > 0)
		dump_record(&st, &rec);
	dump_summary(&st, d);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		rc = cli_fail(ferry_err_errno(errno, "write output"), "dump");
		goto out;
	}
	rc = r < 0 ? cli_fail(r, "dump") : EXIT_OK;
out:
	stream_decoder_free(d);
	if (path)
		close(fd);
	return rc;
}
