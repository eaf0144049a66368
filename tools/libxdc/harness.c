/*
 * libxdc-harness: ptkit's driver for libxdc (nyx-fuzz's Intel PT decoder for fuzzing),
 * the peer of `ptkit flow --afl-map` in the benchmark (bench/whole-pairs.ts).
 * tools/libxdc/harness.ts compiles it against a libxdc build named by $PTKIT_LIBXDC;
 * libxdc itself is never part of the repository. Only libxdc's public API (libxdc.h)
 * is used.
 *
 * Usage: libxdc-harness [--map MAP]... --filter FROM-TO [--runs N] [--edges] TRACE
 *
 *   --map FILE:ADDR            all of FILE at virtual address ADDR;
 *   --map FILE:FROM-TO:ADDR    bytes [FROM, TO) of FILE at ADDR (the syntax of the
 *                              libipt harness's --map). The bytes serve libxdc's
 *                              page-fetch callback; a page no map touches is a fault.
 *   --filter FROM-TO           the traced address range (IA32_RTIT_ADDR0_A/B, both
 *                              ends included, as `ptkit simulate --filter`); libxdc
 *                              decodes only inside it. Up to 4.
 *   --runs N                   decode the same trace N times (1..10000, default 1) in
 *                              one decoder, as a fuzzer decodes its test cases (the
 *                              bitmap reset before each, libxdc's caches kept warm).
 *   --edges                    one decode with libxdc's edge callback (trace mode):
 *                              print each distinct edge instead of the JSON.
 *
 * Numbers are C integers (0x hex, 0 octal, or decimal). TRACE is a raw trace
 * without return compression and without CYC/MTC/TSC packets (libxdc's limits); it is
 * loaded into memory and followed by 16 bytes 0x55, libxdc's end mark.
 *
 * Output, default: one JSON object on one line:
 *   {"decoder":"libxdc","bytes":B,"result":"success","runs":N,"best_ns":T,
 *    "runs_ns":[T,...],"runs_cpu_ns":[C,...],"mb_per_s":M,"bitmap_nonzero":K,
 *    "bitmap_hash":"0x..."}
 * result is libxdc's decode result of the last run (success, success_pt_overflow,
 * page_fault, error, unknown_packet); runs_ns each libxdc_decode call's time
 * (CLOCK_MONOTONIC), runs_cpu_ns its CPU time (CLOCK_PROCESS_CPUTIME_ID), best_ns
 * the fastest; mb_per_s 10^6 bytes of trace per second at best_ns;
 * bitmap_nonzero the bitmap's non-zero bytes after the last run, bitmap_hash
 * libxdc_bitmap_get_hash.
 *
 * --edges output: lines "E <from> <to>" (hex, 0x prefix), one per distinct edge in no
 * particular order, libxdc's (branch instruction, where it went); an end that is
 * 0xffffffffffffffff is tracing enabled from or disabled to outside (TIP.PGE/PGD).
 * Then "R <result>".
 *
 * Exit status: 0 when every decode returned success or success_pt_overflow, 1 on a
 * decode failure or an I/O or setup failure, 2 on a usage error.
 */
#include <libxdc.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 0x1000ULL
#define MAX_MAPS 64
#define END_MARK_BYTES 16

/* One map: the pages [first, first + size) of the address space, with their bytes. */
struct map {
	uint64_t first;
	uint64_t size;
	uint8_t *pages;
};

static struct map maps[MAX_MAPS];
static int nmaps;

static int parse_u64(const char *text, uint64_t *value)
{
	char *end;

	if (!*text || *text == '-')
		return -1;
	errno = 0;
	*value = strtoull(text, &end, 0);
	return errno || *end ? -1 : 0;
}

/* FROM-TO into two numbers (text is left whole). */
static int parse_range(const char *text, uint64_t *from, uint64_t *to)
{
	char buf[128];
	char *dash;

	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	dash = strchr(buf, '-');
	if (!dash)
		return -1;
	*dash = '\0';
	return parse_u64(buf, from) < 0 || parse_u64(dash + 1, to) < 0 ? -1 : 0;
}

/* The whole of `path`, `extra` more bytes allocated after it (not read). */
static uint8_t *load(const char *path, size_t *size, size_t extra)
{
	FILE *file;
	uint8_t *buf;
	long len;

	file = fopen(path, "rb");
	if (!file)
		return NULL;
	if (fseek(file, 0, SEEK_END) != 0 || (len = ftell(file)) < 0 || fseek(file, 0, SEEK_SET) != 0) {
		fclose(file);
		return NULL;
	}
	buf = malloc((size_t) len + extra + 1);
	if (!buf || fread(buf, 1, (size_t) len, file) != (size_t) len) {
		free(buf);
		fclose(file);
		errno = buf ? EIO : ENOMEM;
		return NULL;
	}
	fclose(file);
	*size = (size_t) len;
	return buf;
}

/*
 * Add FILE:ADDR or FILE:FROM-TO:ADDR (arg is cut up): the bytes are copied into whole,
 * zero-filled pages. Returns 0, or -1 when arg is malformed or FILE cannot be read.
 */
static int add_map(char *arg)
{
	uint64_t addr, from, to, end;
	char *colon, *range;
	uint8_t *bytes;
	size_t size;
	struct map *m;

	colon = strrchr(arg, ':');
	if (!colon || colon == arg || parse_u64(colon + 1, &addr) < 0 || nmaps == MAX_MAPS)
		return -1;
	*colon = '\0';

	/* FILE:FROM-TO, unless what follows the last colon is no range (part of FILE). */
	from = 0;
	to = UINT64_MAX;
	range = strrchr(arg, ':');
	if (range && range != arg && parse_range(range + 1, &from, &to) == 0 && to > from)
		*range = '\0';
	else
		from = 0, to = UINT64_MAX;

	bytes = load(arg, &size, 0);
	if (!bytes)
		return -1;
	if (to > size)
		to = size;
	if (from >= to) {
		free(bytes);
		return -1;
	}

	m = &maps[nmaps++];
	m->first = addr & ~(PAGE - 1);
	end = (addr + (to - from) + PAGE - 1) & ~(PAGE - 1);
	m->size = end - m->first;
	m->pages = calloc(1, m->size);
	if (!m->pages) {
		free(bytes);
		return -1;
	}
	memcpy(m->pages + (addr - m->first), bytes + from, to - from);
	free(bytes);
	return 0;
}

/* libxdc's page-fetch callback: the bytes of the page holding `page`, from the last map that has it. */
static void *fetch_page(void *opaque, uint64_t page, bool *success)
{
	int i;

	(void) opaque;
	page &= ~(PAGE - 1);
	for (i = nmaps - 1; i >= 0; i--) {
		if (page - maps[i].first < maps[i].size) {
			*success = true;
			return maps[i].pages + (page - maps[i].first);
		}
	}
	*success = false;
	return NULL;
}

static const char *result_name(decoder_result_t r)
{
	switch (r) {
	case decoder_success: return "success";
	case decoder_success_pt_overflow: return "success_pt_overflow";
	case decoder_page_fault: return "page_fault";
	case decoder_error: return "error";
	case decoder_unkown_packet: return "unknown_packet";
	}
	return "unknown_result";
}

static bool decoded(decoder_result_t r)
{
	return r == decoder_success || r == decoder_success_pt_overflow;
}

/* --edges: a set of distinct (from, to) pairs, open addressing, grown at half full. */
struct edge_set {
	uint64_t *keys; /* pairs: from, to; an empty slot is (0, 0) */
	size_t cap;
	size_t count;
	bool zero; /* the edge (0, 0) itself was seen */
};

static size_t edge_slot(const struct edge_set *s, uint64_t from, uint64_t to)
{
	uint64_t h = (from * 0x9e3779b97f4a7c15ULL) ^ (to + 0x632be59bd9b4e019ULL + (from << 6));
	size_t i;

	h ^= h >> 29;
	for (i = (size_t) h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
		uint64_t *k = &s->keys[2 * i];
		if ((k[0] == from && k[1] == to) || (k[0] == 0 && k[1] == 0))
			return i;
	}
}

static void edge_add(struct edge_set *s, uint64_t from, uint64_t to)
{
	size_t i;
	uint64_t *k;

	if (from == 0 && to == 0) {
		s->zero = true;
		return;
	}
	if (2 * (s->count + 1) > s->cap) {
		struct edge_set bigger = { calloc(4 * s->cap, sizeof(uint64_t)), 2 * s->cap, 0, s->zero };
		if (!bigger.keys) {
			fprintf(stderr, "libxdc-harness: out of memory\n");
			exit(1);
		}
		for (i = 0; i < s->cap; i++)
			if (s->keys[2 * i] || s->keys[2 * i + 1])
				edge_add(&bigger, s->keys[2 * i], s->keys[2 * i + 1]);
		free(s->keys);
		*s = bigger;
	}
	i = edge_slot(s, from, to);
	k = &s->keys[2 * i];
	if (k[0] == 0 && k[1] == 0) {
		k[0] = from;
		k[1] = to;
		s->count++;
	}
}

static void on_edge(void *opaque, uint64_t from, uint64_t to)
{
	edge_add(opaque, from, to);
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t) t.tv_sec * 1000000000ULL + (uint64_t) t.tv_nsec;
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--map FILE[:FROM-TO]:ADDR]... --filter FROM-TO [--runs N] [--edges] TRACE\n",
		argv0);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t filter[4][2] = { { 0 } };
	uint64_t runs = 1, from, to, best, *times, *cpu;
	int nfilters = 0, arg;
	bool edges = false;
	const char *path = NULL;
	uint8_t *trace, *bitmap;
	size_t size, i, nonzero;
	libxdc_t *xdc;
	decoder_result_t result = decoder_success;
	bool ok = true;

	for (arg = 1; arg < argc; arg++) {
		if (strcmp(argv[arg], "--map") == 0 && arg + 1 < argc) {
			char *spec = strdup(argv[++arg]);
			if (!spec || add_map(spec) < 0) {
				fprintf(stderr, "%s: --map %s: expected FILE:ADDR or FILE:FROM-TO:ADDR of a readable FILE\n",
					argv[0], argv[arg]);
				return 1;
			}
			free(spec);
		} else if (strcmp(argv[arg], "--filter") == 0 && arg + 1 < argc) {
			if (nfilters == 4 || parse_range(argv[++arg], &from, &to) < 0 || from == 0 || to < from ||
			    to == UINT64_MAX)
				return usage(argv[0]);
			/* libxdc's ranges exclude both ends (min < ip < max): one byte wider on each side. */
			filter[nfilters][0] = from - 1;
			filter[nfilters][1] = to + 1;
			nfilters++;
		} else if (strcmp(argv[arg], "--runs") == 0 && arg + 1 < argc) {
			if (parse_u64(argv[++arg], &runs) < 0 || runs < 1 || runs > 10000)
				return usage(argv[0]);
		} else if (strcmp(argv[arg], "--edges") == 0) {
			edges = true;
		} else if (argv[arg][0] == '-' || path) {
			return usage(argv[0]);
		} else {
			path = argv[arg];
		}
	}
	if (!path || nfilters == 0)
		return usage(argv[0]);

	trace = load(path, &size, END_MARK_BYTES);
	if (!trace) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], path, strerror(errno));
		return 1;
	}
	memset(trace + size, PT_TRACE_END, END_MARK_BYTES);

	bitmap = calloc(1, 0x10000);
	xdc = bitmap ? libxdc_init(filter, fetch_page, NULL, bitmap, 0x10000) : NULL;
	if (!xdc) {
		fprintf(stderr, "%s: libxdc_init failed\n", argv[0]);
		return 1;
	}

	if (edges) {
		struct edge_set set = { calloc(2 * 1024, sizeof(uint64_t)), 1024, 0, false };
		if (!set.keys)
			return 1;
		libxdc_register_edge_callback(xdc, on_edge, &set);
		libxdc_enable_tracing(xdc);
		result = libxdc_decode(xdc, trace, size);
		for (i = 0; i < set.cap; i++)
			if (set.keys[2 * i] || set.keys[2 * i + 1])
				printf("E 0x%" PRIx64 " 0x%" PRIx64 "\n", set.keys[2 * i], set.keys[2 * i + 1]);
		if (set.zero)
			printf("E 0x0 0x0\n");
		printf("R %s\n", result_name(result));
		return decoded(result) ? 0 : 1;
	}

	times = calloc(runs, sizeof(*times));
	cpu = calloc(runs, sizeof(*cpu));
	if (!times || !cpu)
		return 1;
	best = UINT64_MAX;
	for (i = 0; i < runs; i++) {
		uint64_t t0, c0;

		libxdc_bitmap_reset(xdc);
		c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
		t0 = now_ns(CLOCK_MONOTONIC);
		result = libxdc_decode(xdc, trace, size);
		times[i] = now_ns(CLOCK_MONOTONIC) - t0;
		cpu[i] = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (times[i] < best)
			best = times[i];
		ok = ok && decoded(result);
	}
	nonzero = 0;
	for (i = 0; i < 0x10000; i++)
		nonzero += bitmap[i] != 0;

	printf("{\"decoder\":\"libxdc\",\"bytes\":%zu,\"result\":\"%s\",\"runs\":%" PRIu64 ",\"best_ns\":%" PRIu64
	       ",\"runs_ns\":[",
	       size, result_name(result), runs, best);
	for (i = 0; i < runs; i++)
		printf("%s%" PRIu64, i ? "," : "", times[i]);
	printf("],\"runs_cpu_ns\":[");
	for (i = 0; i < runs; i++)
		printf("%s%" PRIu64, i ? "," : "", cpu[i]);
	printf("],\"mb_per_s\":%.1f,\"bitmap_nonzero\":%zu,\"bitmap_hash\":\"0x%" PRIx64 "\"}\n",
	       best ? (double) size * 1000.0 / (double) best : 0.0, nonzero, libxdc_bitmap_get_hash(xdc));
	if (!ok)
		fprintf(stderr, "%s: a decode returned %s\n", argv[0], result_name(result));
	return ok ? 0 : 1;
}
