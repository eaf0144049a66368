/*
 * libipt-dump: list the packets libipt's packet decoder finds in raw Intel PT
 * trace files, one line per event, for ptkit's differential test
 * (test/differential/libipt.test.ts builds and runs it).
 *
 * Usage: libipt-dump [OPTION | FILE]...
 *
 *   --sync  (default) synchronise forward to the first PSB (pt_pkt_sync_forward).
 *   --at0   assume a packet starts at offset 0 (pt_pkt_sync_set(decoder, 0)).
 *   --raw   (default) a FILE is one trace.
 *   --pack  a FILE is a pack of traces: records of a 4-byte little-endian length
 *           followed by that many bytes, each decoded as a trace of its own (in a
 *           buffer of its own, so it ends exactly where the record ends).
 *
 * An option applies to every FILE after it, so one run can mix all of them.
 *
 * Each trace is decoded like ptdump does: packet after packet with pt_pkt_next();
 * after an error other than end-of-stream, pt_pkt_sync_forward() and go on; the
 * trace ends at pt_pkt_next's -pte_eos or when a synchronisation fails.
 *
 * Output format. Lines; fields separated by one space; OFF is the offset from the
 * start of the trace as 8 or more lower-case hex digits ("%08" PRIx64); every
 * payload value is lower-case hex with a 0x prefix and no padding, printed from
 * the full-width libipt field (64-bit values exactly); CODE is the positive
 * pt_error_code in decimal followed by its short name (below).
 *
 *   F <index> <sync|at0>        start of the index-th trace (0-based, counting
 *                               every record of a pack), its policy
 *   S <OFF>                     synchronised: the next packet is expected at OFF
 *   X <CODE> <name>             synchronisation failed; this trace ends
 *   E <OFF> <CODE> <name>       pt_pkt_next failed at OFF (eos ends the trace)
 *   P <OFF> <size> <type> [<field>=0x<hex>]...
 *
 * Packet types and their fields, in this order:
 *   pad, psb, psbend, ovf, stop          (none)
 *   tnt.8, tnt.64                        bit_size payload
 *   tip, tip.pge, tip.pgd, fup           ipc ip        (raw, zero-extended payload)
 *   mode.exec                            csl csd
 *   mode.tsx                             intx abrt
 *   pip                                  cr3 nr
 *   vmcs                                 base
 *   cbr                                  ratio
 *   tsc                                  tsc
 *   tma                                  ctc fc
 *   mtc                                  ctc
 *   cyc                                  value
 *   mnt                                  payload
 *   exstop                               ip
 *   mwait                                hints ext
 *   pwre                                 state sub_state hw
 *   pwrx                                 last deepest interrupt store autonomous
 *   ptw                                  plc ip payload
 *   unknown, invalid, type-<n>,
 *   mode.leaf-<n>                        (none; libipt never returns these here)
 *
 * Exit status: 0 when every file was read and decoded, 1 on an I/O or setup
 * failure or a malformed pack, 2 on a usage error.
 *
 * Only libipt's public API (<intel-pt.h>) is used. Build: cc -O2 libipt-dump.c -lipt
 */
#include <intel-pt.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Short, space-free names of libipt's error codes. */
static const char *error_name(int status)
{
	switch (pt_errcode(status)) {
	case pte_ok: return "ok";
	case pte_internal: return "internal";
	case pte_invalid: return "invalid";
	case pte_nosync: return "nosync";
	case pte_bad_opc: return "bad_opc";
	case pte_bad_packet: return "bad_packet";
	case pte_bad_context: return "bad_context";
	case pte_eos: return "eos";
	case pte_bad_query: return "bad_query";
	case pte_nomem: return "nomem";
	case pte_bad_config: return "bad_config";
	case pte_noip: return "noip";
	case pte_ip_suppressed: return "ip_suppressed";
	case pte_nomap: return "nomap";
	case pte_bad_insn: return "bad_insn";
	case pte_no_time: return "no_time";
	case pte_no_cbr: return "no_cbr";
	case pte_bad_image: return "bad_image";
	case pte_bad_lock: return "bad_lock";
	case pte_not_supported: return "not_supported";
	case pte_retstack_empty: return "retstack_empty";
	case pte_bad_retcomp: return "bad_retcomp";
	case pte_bad_status_update: return "bad_status_update";
	case pte_no_enable: return "no_enable";
	case pte_event_ignored: return "event_ignored";
	case pte_overflow: return "overflow";
	case pte_bad_file: return "bad_file";
	case pte_bad_cpu: return "bad_cpu";
	}
	return "unknown_error";
}

static void print_code(int status)
{
	printf("%d %s", (int) pt_errcode(status), error_name(status));
}

/* One " name=0x<hex>" field. */
static void field(const char *name, uint64_t value)
{
	printf(" %s=0x%" PRIx64, name, value);
}

static const char *ip_name(enum pt_packet_type type)
{
	switch (type) {
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_fup: return "fup";
	default: return "?";
	}
}

static void print_packet(uint64_t offset, const struct pt_packet *packet)
{
	printf("P %08" PRIx64 " %u ", offset, (unsigned) packet->size);

	switch (packet->type) {
	case ppt_pad: printf("pad"); break;
	case ppt_psb: printf("psb"); break;
	case ppt_psbend: printf("psbend"); break;
	case ppt_ovf: printf("ovf"); break;
	case ppt_stop: printf("stop"); break;

	case ppt_tnt_8:
	case ppt_tnt_64:
		printf(packet->type == ppt_tnt_8 ? "tnt.8" : "tnt.64");
		field("bit_size", packet->payload.tnt.bit_size);
		field("payload", packet->payload.tnt.payload);
		break;

	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
		printf("%s", ip_name(packet->type));
		field("ipc", (uint64_t) packet->payload.ip.ipc);
		field("ip", packet->payload.ip.ip);
		break;

	case ppt_mode:
		if (packet->payload.mode.leaf == pt_mol_tsx) {
			printf("mode.tsx");
			field("intx", packet->payload.mode.bits.tsx.intx);
			field("abrt", packet->payload.mode.bits.tsx.abrt);
		} else if (packet->payload.mode.leaf == pt_mol_exec) {
			printf("mode.exec");
			field("csl", packet->payload.mode.bits.exec.csl);
			field("csd", packet->payload.mode.bits.exec.csd);
		} else {
			printf("mode.leaf-%u", (unsigned) packet->payload.mode.leaf);
		}
		break;

	case ppt_pip:
		printf("pip");
		field("cr3", packet->payload.pip.cr3);
		field("nr", packet->payload.pip.nr);
		break;

	case ppt_vmcs:
		printf("vmcs");
		field("base", packet->payload.vmcs.base);
		break;

	case ppt_cbr:
		printf("cbr");
		field("ratio", packet->payload.cbr.ratio);
		break;

	case ppt_tsc:
		printf("tsc");
		field("tsc", packet->payload.tsc.tsc);
		break;

	case ppt_tma:
		printf("tma");
		field("ctc", packet->payload.tma.ctc);
		field("fc", packet->payload.tma.fc);
		break;

	case ppt_mtc:
		printf("mtc");
		field("ctc", packet->payload.mtc.ctc);
		break;

	case ppt_cyc:
		printf("cyc");
		field("value", packet->payload.cyc.value);
		break;

	case ppt_mnt:
		printf("mnt");
		field("payload", packet->payload.mnt.payload);
		break;

	case ppt_exstop:
		printf("exstop");
		field("ip", packet->payload.exstop.ip);
		break;

	case ppt_mwait:
		printf("mwait");
		field("hints", packet->payload.mwait.hints);
		field("ext", packet->payload.mwait.ext);
		break;

	case ppt_pwre:
		printf("pwre");
		field("state", packet->payload.pwre.state);
		field("sub_state", packet->payload.pwre.sub_state);
		field("hw", packet->payload.pwre.hw);
		break;

	case ppt_pwrx:
		printf("pwrx");
		field("last", packet->payload.pwrx.last);
		field("deepest", packet->payload.pwrx.deepest);
		field("interrupt", packet->payload.pwrx.interrupt);
		field("store", packet->payload.pwrx.store);
		field("autonomous", packet->payload.pwrx.autonomous);
		break;

	case ppt_ptw:
		printf("ptw");
		field("plc", packet->payload.ptw.plc);
		field("ip", packet->payload.ptw.ip);
		field("payload", packet->payload.ptw.payload);
		break;

	case ppt_unknown: printf("unknown"); break;
	case ppt_invalid: printf("invalid"); break;
	default: printf("type-%d", (int) packet->type); break;
	}

	putchar('\n');
}

/* Print where the decoder is, as an S line; or an X line and the error. */
static int print_sync(const struct pt_packet_decoder *decoder)
{
	uint64_t offset;
	int status;

	status = pt_pkt_get_offset(decoder, &offset);
	if (status < 0) {
		printf("X ");
		print_code(status);
		putchar('\n');
		return status;
	}

	printf("S %08" PRIx64 "\n", offset);
	return 0;
}

/* Decode one buffer. Returns 0, or -1 if the decoder cannot be set up. */
static int dump(uint8_t *begin, size_t size, int at0)
{
	struct pt_config config;
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	uint64_t offset;
	int status;

	pt_config_init(&config);
	config.begin = begin;
	config.end = begin + size;

	decoder = pt_pkt_alloc_decoder(&config);
	if (!decoder)
		return -1;

	status = at0 ? pt_pkt_sync_set(decoder, 0ull) : pt_pkt_sync_forward(decoder);
	while (status >= 0) {
		status = print_sync(decoder);
		if (status < 0)
			break;

		for (;;) {
			/* Cannot fail while synchronised; an X line if it does. */
			status = pt_pkt_get_offset(decoder, &offset);
			if (status < 0)
				goto lost;

			status = pt_pkt_next(decoder, &packet, sizeof(packet));
			if (status < 0)
				break;

			print_packet(offset, &packet);
		}

		printf("E %08" PRIx64 " ", offset);
		print_code(status);
		putchar('\n');
		if (pt_errcode(status) == pte_eos)
			goto out;

		status = pt_pkt_sync_forward(decoder);
	}

lost:
	printf("X ");
	print_code(status);
	putchar('\n');

out:
	pt_pkt_free_decoder(decoder);
	return 0;
}

/* A 64-byte aligned buffer of size + 1 bytes (non-NULL even when size is 0). */
static uint8_t *alloc_trace(size_t size)
{
	void *buf;

	buf = NULL;
	if (posix_memalign(&buf, 64, size + 1) != 0)
		return NULL;

	return buf;
}

/*
 * Read a whole file into an aligned buffer. libipt's PSB search looks at 8-byte
 * aligned words; in an aligned buffer those are aligned relative to the trace
 * start too, which is how ptkit aligns them.
 */
static uint8_t *load(const char *path, size_t *size)
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

	buf = alloc_trace((size_t) len);
	if (!buf) {
		fclose(file);
		errno = ENOMEM;
		return NULL;
	}

	if (fread(buf, 1, (size_t) len, file) != (size_t) len) {
		free(buf);
		fclose(file);
		errno = EIO;
		return NULL;
	}

	fclose(file);
	*size = (size_t) len;
	return buf;
}

/* Print the F line and decode one trace. Returns 0 or -1 (message printed). */
static int dump_trace(const char *prog, const char *what, uint8_t *buf, size_t size, int at0, int *index)
{
	printf("F %d %s\n", (*index)++, at0 ? "at0" : "sync");
	if (dump(buf, size, at0) < 0) {
		fprintf(stderr, "%s: %s: pt_pkt_alloc_decoder failed: %s\n", prog, what, pt_errstr(pte_internal));
		return -1;
	}

	return 0;
}

/* Decode every record of a pack. Returns 0 or -1 (message printed). */
static int dump_pack(const char *prog, const char *path, const uint8_t *pack, size_t size, int at0, int *index)
{
	size_t pos;

	for (pos = 0; pos < size;) {
		uint8_t *buf;
		uint32_t len;
		int status;

		if (size - pos < 4) {
			fprintf(stderr, "%s: %s: truncated record header at %zu\n", prog, path, pos);
			return -1;
		}

		len = (uint32_t) pack[pos] | (uint32_t) pack[pos + 1] << 8 | (uint32_t) pack[pos + 2] << 16 |
		      (uint32_t) pack[pos + 3] << 24;
		pos += 4;
		if (size - pos < len) {
			fprintf(stderr, "%s: %s: truncated record at %zu\n", prog, path, pos - 4);
			return -1;
		}

		buf = alloc_trace(len);
		if (!buf) {
			fprintf(stderr, "%s: %s: out of memory\n", prog, path);
			return -1;
		}

		memcpy(buf, pack + pos, len);
		status = dump_trace(prog, path, buf, len, at0, index);
		free(buf);
		if (status < 0)
			return -1;

		pos += len;
	}

	return 0;
}

int main(int argc, char **argv)
{
	static char outbuf[1 << 16];
	int arg, at0, pack, index, status;

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	at0 = 0;
	pack = 0;
	index = 0;
	for (arg = 1; arg < argc; arg++) {
		uint8_t *buf;
		size_t size;

		if (strcmp(argv[arg], "--sync") == 0) {
			at0 = 0;
			continue;
		}
		if (strcmp(argv[arg], "--at0") == 0) {
			at0 = 1;
			continue;
		}
		if (strcmp(argv[arg], "--raw") == 0) {
			pack = 0;
			continue;
		}
		if (strcmp(argv[arg], "--pack") == 0) {
			pack = 1;
			continue;
		}
		if (argv[arg][0] == '-' && argv[arg][1] == '-') {
			fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[arg]);
			return 2;
		}

		buf = load(argv[arg], &size);
		if (!buf) {
			fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], argv[arg], strerror(errno));
			return 1;
		}

		if (pack)
			status = dump_pack(argv[0], argv[arg], buf, size, at0, &index);
		else
			status = dump_trace(argv[0], argv[arg], buf, size, at0, &index);
		free(buf);
		if (status < 0)
			return 1;
	}

	if (index == 0 && argc < 2) {
		fprintf(stderr, "usage: %s [--sync | --at0 | --raw | --pack | FILE]...\n", argv[0]);
		return 2;
	}

	return fflush(stdout) == 0 ? 0 : 1;
}
