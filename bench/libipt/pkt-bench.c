/*
 * ptkit benchmark: libipt packet-decoder baseline.
 *
 * Usage: pkt-bench <trace.pt> [runs]
 *
 * Loads the whole trace into memory, then decodes every packet with libipt's
 * packet decoder (pt_pkt_sync_forward, pt_pkt_next; after an error it synchronises
 * forward again). One untimed warm-up pass, then `runs` timed passes (default 5)
 * measured with clock_gettime(CLOCK_MONOTONIC). Prints one JSON object on stdout:
 * sizes, packet and error counts, per-type counts and the time of every run.
 *
 * Only libipt's public API is used. Build: cc -O2 pkt-bench.c -lipt
 */
#include <intel-pt.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS 100

/* Per-type counters. Indices are libipt's enum pt_packet_type values, except that
 * MODE is split by leaf into the two extra slots at the end. */
#define SLOT_MODE_EXEC (ppt_ptw + 1)
#define SLOT_MODE_TSX (ppt_ptw + 2)
#define SLOT_COUNT (ppt_ptw + 3)

struct result {
	uint64_t packets;
	uint64_t errors;
	uint64_t counts[SLOT_COUNT];
};

static const char *slot_name(int slot)
{
	switch (slot) {
	case ppt_invalid: return "invalid";
	case ppt_unknown: return "unknown";
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode: return "mode";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	case ppt_mnt: return "mnt";
	case ppt_exstop: return "exstop";
	case ppt_mwait: return "mwait";
	case ppt_pwre: return "pwre";
	case ppt_pwrx: return "pwrx";
	case ppt_ptw: return "ptw";
	case SLOT_MODE_EXEC: return "mode.exec";
	case SLOT_MODE_TSX: return "mode.tsx";
	}
	return "other";
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Decode the whole buffer once. Returns 0, or -1 if the decoder can't be set up. */
static int decode_all(const struct pt_config *config, struct result *res)
{
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	int status;

	memset(res, 0, sizeof(*res));

	decoder = pt_pkt_alloc_decoder(config);
	if (!decoder)
		return -1;

	status = pt_pkt_sync_forward(decoder);
	while (status >= 0) {
		for (;;) {
			status = pt_pkt_next(decoder, &packet, sizeof(packet));
			if (status < 0)
				break;

			res->packets++;
			if (packet.type == ppt_mode)
				res->counts[packet.payload.mode.leaf == pt_mol_tsx ? SLOT_MODE_TSX : SLOT_MODE_EXEC]++;
			else if ((unsigned) packet.type < SLOT_COUNT)
				res->counts[packet.type]++;
		}

		if (status == -pte_eos)
			break;

		/* A decode error: count it and resume at the next PSB. */
		res->errors++;
		status = pt_pkt_sync_forward(decoder);
	}

	pt_pkt_free_decoder(decoder);
	return 0;
}

static uint8_t *load_file(const char *path, size_t *size)
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

	buf = malloc(len > 0 ? (size_t) len : 1);
	if (buf && fread(buf, 1, (size_t) len, file) != (size_t) len) {
		free(buf);
		buf = NULL;
	}

	fclose(file);
	*size = (size_t) len;
	return buf;
}

int main(int argc, char **argv)
{
	struct pt_config config;
	struct result res, check;
	int64_t times[MAX_RUNS], best;
	size_t size;
	uint8_t *buf;
	int runs, run, slot, first;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s <trace.pt> [runs]\n", argv[0]);
		return 2;
	}

	runs = argc > 2 ? atoi(argv[2]) : 5;
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "%s: runs must be 1..%d\n", argv[0], MAX_RUNS);
		return 2;
	}

	buf = load_file(argv[1], &size);
	if (!buf) {
		fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + size;

	/* Warm-up: fault the buffer in and warm the caches and branch predictors. */
	if (decode_all(&config, &res) < 0) {
		fprintf(stderr, "%s: pt_pkt_alloc_decoder failed\n", argv[0]);
		return 1;
	}

	best = INT64_MAX;
	for (run = 0; run < runs; run++) {
		int64_t start = now_ns();

		decode_all(&config, &check);
		times[run] = now_ns() - start;
		if (times[run] < best)
			best = times[run];

		if (check.packets != res.packets || check.errors != res.errors) {
			fprintf(stderr, "%s: run %d decoded a different packet count\n", argv[0], run);
			return 1;
		}
	}

	printf("{\"decoder\":\"libipt\",\"bytes\":%zu,\"packets\":%llu,\"errors\":%llu,\"best_ns\":%lld,\"runs_ns\":[",
	       size, (unsigned long long) res.packets, (unsigned long long) res.errors, (long long) best);
	for (run = 0; run < runs; run++)
		printf("%s%lld", run ? "," : "", (long long) times[run]);
	printf("],\"counts\":{");
	first = 1;
	for (slot = 0; slot < SLOT_COUNT; slot++) {
		if (slot == ppt_mode || !res.counts[slot])
			continue;
		printf("%s\"%s\":%llu", first ? "" : ",", slot_name(slot), (unsigned long long) res.counts[slot]);
		first = 0;
	}
	printf("}}\n");

	free(buf);
	return 0;
}
