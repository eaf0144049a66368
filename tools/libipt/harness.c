/*
 * harness: ptkit's independent libipt decoder. Runs libipt's packet decoder over
 * raw Intel PT trace files, for the differential test (test/differential/, dump
 * mode) and for the benchmark (bench/, --bench mode), and libipt's instruction
 * flow decoder over a trace and a memory image, as the independent checker of the
 * trace-unit model (test/unit/e2e/, --insn mode) and of instruction lengths
 * (test/isa/ild-libipt.test.ts, --ild mode). tools/libipt/harness.ts compiles it;
 * the callers run it.
 *
 * Usage: harness [OPTION | FILE]...       dump mode
 *        harness --bench RUNS FILE        bench mode
 *        harness --insn [OPTION]... TRACE insn mode
 *        harness --ild PACK               ild mode
 *        harness --bench-flow RUNS block|insn [--map MAP]... TRACE   flow bench mode
 *
 * Only libipt's public API (<intel-pt.h>) is used.
 * Build: cc -O2 -Wall -Wextra harness.c -lipt
 *
 * ---------------------------------------------------------------------------------
 * Dump mode: list the packets libipt's packet decoder finds, one line per event.
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
 * ---------------------------------------------------------------------------------
 * Bench mode: time libipt's packet decoder over FILE.
 *
 * Loads the whole trace into memory, then decodes every packet (pt_pkt_sync_forward,
 * pt_pkt_next; after an error it synchronises forward again, like dump mode's
 * --sync). One untimed warm-up pass, then RUNS (0..100) timed passes measured with
 * clock_gettime(CLOCK_MONOTONIC); RUNS 0 is one pass and no timing (best_ns 0), the
 * peer process of the whole-process benchmark (bench/whole.ts), which times the
 * process from outside. Prints one JSON object on one line:
 *
 *   {"decoder":"libipt","bytes":B,"packets":P,"errors":E,"best_ns":T,
 *    "runs_ns":[T,...],"counts":{"<type>":N,...}}
 *
 * errors counts the pt_pkt_next failures other than end-of-stream; counts has the
 * packet types (names as in dump mode, MODE split into mode.exec and mode.tsx) that
 * occur, in libipt's enum order. Exit status: 0, 1 on an I/O or setup failure or
 * when a timed run decodes a different count, 2 on a usage error.
 *
 * ---------------------------------------------------------------------------------
 * Insn mode: the instructions and events libipt's instruction flow decoder
 * (pt_insn_*) reconstructs from TRACE and a memory image.
 *
 *   --cpu FAMILY/MODEL         the processor (decimal family, C-integer model):
 *                              libipt's errata for it (pt_cpu_errata), as ptxed;
 *   --skip-event-trace         libipt 2.0 predates Event Trace: skip its CFE
 *                              (02 13, 4 bytes) and EVD (02 53, 11 bytes)
 *                              packets through the unknown-packet callback, so
 *                              the flow decodes as if they were not there;
 *   --map FILE:ADDR            map all of FILE at virtual address ADDR;
 *   --map FILE:FROM-TO:ADDR    map bytes [FROM, TO) of FILE at ADDR (an ELF
 *                              PT_LOAD segment is offset-(offset+filesz):vaddr).
 *                              Parsed from the right, so FILE may hold colons.
 *                              Later maps replace earlier ones where they
 *                              overlap (pt_image_add_file), in every address
 *                              space. Numbers are C integers (0x hex, 0 octal,
 *                              or decimal).
 *
 * The decode loop is ptxed's: pt_insn_sync_forward, then events while
 * pts_event_pending and pt_insn_next until end of stream or an error; after an
 * error, pt_insn_sync_forward again (libipt 2.0 has no resync). An instruction that
 * pt_insn_next returns together with an error (iclass not ptic_error) is printed
 * before the error, as ptxed does.
 *
 * Output lines (fields as in dump mode: OFF is %08 hex, values 0x-prefixed hex):
 *
 *   S <OFF>                          synchronised at the PSB at OFF
 *   I <ip> <size> <class>[ speculative][ truncated]
 *                                    one instruction; class is error, other,
 *                                    call, return, jump, cond_jump, far_call,
 *                                    far_return, far_jump or ptwrite
 *   V <event>[ suppressed][ update] [<field>=0x<hex>]... [tsc=0x<hex>]
 *                                    one event (pt_insn_event), in order;
 *                                    suppressed: ip_suppressed is set; update:
 *                                    a status update; tsc when has_tsc is set
 *   E <OFF> <CODE> <name>            decoding failed at OFF (pt_insn_get_offset)
 *                                    and goes on at the next PSB
 *   X <CODE> <name>                  synchronisation failed other than at the end
 *                                    of the trace; decoding tries the next PSB if
 *                                    the decoder got past the last one (as ptxed),
 *                                    else ends
 *
 * Events and their fields, in this order:
 *   enabled ip resumed; disabled ip; async_disabled at ip; async_branch from to;
 *   paging cr3 non_root; async_paging cr3 non_root ip; overflow ip;
 *   exec_mode mode ip (mode 1/2/3 = 16/32/64-bit); tsx ip speculative aborted;
 *   stop; vmcs base; async_vmcs base ip; exstop ip; mwait ip hints ext;
 *   pwre state sub_state hw; pwrx last deepest interrupt store autonomous;
 *   ptwrite ip size payload; tick ip; cbr ratio; mnt payload; type-<n> (none).
 * Left out when ip_suppressed is set: every ip field but enabled's, and to.
 *
 * Exit status: 0 when the trace was decoded to its end (errors in the trace are
 * output, not failures), 1 on an I/O or setup failure, 2 on a usage error.
 *
 * ---------------------------------------------------------------------------------
 * Ild mode: libipt's instruction length decoder (pt_ild, internal to libipt) seen
 * through its public instruction flow decoder, for the differential test of
 * instruction lengths.
 *
 * PACK is a file of records, each: one byte execution mode (1 = 16-bit, 2 = 32-bit,
 * 3 = 64-bit), one byte N (1..15), then N code bytes. For each record libipt decodes
 * the instruction at the start of the N bytes (and sees no memory past them), and
 * this prints one line:
 *
 *   <size> <class>     the instruction's length and libipt's class (names as in
 *                      insn mode; class-<n> for a class libipt 2.0 does not have)
 *   E <name>           decoding failed with that error (names as in dump mode:
 *                      bad_insn, ...; no_error if pt_insn_next returned none)
 *
 * How: one trace per mode, a PSB+ holding MODE.Exec and a FUP (tracing enabled at
 * the code's address) and PSBEND; memory comes from an image read callback that
 * serves the record's bytes. Per record the decoder is synchronised onto the PSB
 * again (pt_insn_sync_set), its events are drained and pt_insn_next decodes one
 * instruction: a decoded instruction is copied out before libipt looks at the trace
 * for its successor, so a class other than ptic_error is a decoded length even when
 * pt_insn_next then fails for want of trace.
 *
 * Exit status: 0, 1 on an I/O or setup failure or a malformed pack, 2 on usage.
 *
 * ---------------------------------------------------------------------------------
 * Flow bench mode: time libipt's block (pt_blk_*) or instruction (pt_insn_*) decoder
 * over TRACE and the image given by --map options (as in insn mode), like ptxed
 * --quiet: events fetched and dropped, after an error synchronise to the next PSB.
 * The image is built once, its files through an image section cache as in ptxed (so
 * that sections stay mapped); each pass allocates its decoder. One untimed warm-up
 * pass, then RUNS (0..100) timed passes (0: that one pass only, as in bench mode).
 * Prints one JSON object on one line:
 *   {"decoder":"libipt-block|libipt-insn","bytes":B,"insns":N,"units":U,
 *    "events":E,"errors":R,"best_ns":T,"runs_ns":[T,...]}
 * units: blocks (block) or instructions (insn).
 */
#include <intel-pt.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------------------
 * Shared: names, loading, decoder setup.
 */

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

/* The name of a packet type ("mode" for both MODE leaves), or NULL if libipt 2.0 has none. */
static const char *type_name(int type)
{
	switch (type) {
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
	}
	return NULL;
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

/* A packet decoder over [begin, begin + size), or NULL. */
static struct pt_packet_decoder *alloc_decoder(uint8_t *begin, size_t size)
{
	struct pt_config config;

	pt_config_init(&config);
	config.begin = begin;
	config.end = begin + size;

	return pt_pkt_alloc_decoder(&config);
}

/* ---------------------------------------------------------------------------------
 * Dump mode.
 */

static void print_code(int status)
{
	printf("%d %s", (int) pt_errcode(status), error_name(status));
}

/* One " name=0x<hex>" field. */
static void field(const char *name, uint64_t value)
{
	printf(" %s=0x%" PRIx64, name, value);
}

static void print_mode(const struct pt_packet_mode *mode)
{
	if (mode->leaf == pt_mol_tsx) {
		printf("mode.tsx");
		field("intx", mode->bits.tsx.intx);
		field("abrt", mode->bits.tsx.abrt);
	} else if (mode->leaf == pt_mol_exec) {
		printf("mode.exec");
		field("csl", mode->bits.exec.csl);
		field("csd", mode->bits.exec.csd);
	} else {
		printf("mode.leaf-%u", (unsigned) mode->leaf);
	}
}

static void print_packet(uint64_t offset, const struct pt_packet *p)
{
	const char *name;

	printf("P %08" PRIx64 " %u ", offset, (unsigned) p->size);

	name = type_name(p->type);
	if (!name) {
		printf("type-%d\n", (int) p->type);
		return;
	}
	if (p->type == ppt_mode) {
		print_mode(&p->payload.mode);
		putchar('\n');
		return;
	}

	/* pad, psb, psbend, ovf, stop, unknown, invalid: the name only. */
	printf("%s", name);
	switch (p->type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
		field("bit_size", p->payload.tnt.bit_size);
		field("payload", p->payload.tnt.payload);
		break;

	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
		field("ipc", (uint64_t) p->payload.ip.ipc);
		field("ip", p->payload.ip.ip);
		break;

	case ppt_pip:
		field("cr3", p->payload.pip.cr3);
		field("nr", p->payload.pip.nr);
		break;

	case ppt_vmcs: field("base", p->payload.vmcs.base); break;
	case ppt_cbr: field("ratio", p->payload.cbr.ratio); break;
	case ppt_tsc: field("tsc", p->payload.tsc.tsc); break;

	case ppt_tma:
		field("ctc", p->payload.tma.ctc);
		field("fc", p->payload.tma.fc);
		break;

	case ppt_mtc: field("ctc", p->payload.mtc.ctc); break;
	case ppt_cyc: field("value", p->payload.cyc.value); break;
	case ppt_mnt: field("payload", p->payload.mnt.payload); break;
	case ppt_exstop: field("ip", p->payload.exstop.ip); break;

	case ppt_mwait:
		field("hints", p->payload.mwait.hints);
		field("ext", p->payload.mwait.ext);
		break;

	case ppt_pwre:
		field("state", p->payload.pwre.state);
		field("sub_state", p->payload.pwre.sub_state);
		field("hw", p->payload.pwre.hw);
		break;

	case ppt_pwrx:
		field("last", p->payload.pwrx.last);
		field("deepest", p->payload.pwrx.deepest);
		field("interrupt", p->payload.pwrx.interrupt);
		field("store", p->payload.pwrx.store);
		field("autonomous", p->payload.pwrx.autonomous);
		break;

	case ppt_ptw:
		field("plc", p->payload.ptw.plc);
		field("ip", p->payload.ptw.ip);
		field("payload", p->payload.ptw.payload);
		break;

	default:
		break;
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
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	uint64_t offset;
	int status;

	decoder = alloc_decoder(begin, size);
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

static int dump_main(int argc, char **argv)
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
		fprintf(stderr, "       %s --bench RUNS FILE\n", argv[0]);
		fprintf(stderr, "       %s --insn [--map FILE[:FROM-TO]:ADDR]... TRACE\n", argv[0]);
		return 2;
	}

	return fflush(stdout) == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------------------
 * Bench mode.
 */

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
	const char *name;

	if (slot == SLOT_MODE_EXEC)
		return "mode.exec";
	if (slot == SLOT_MODE_TSX)
		return "mode.tsx";

	name = type_name(slot);
	return name ? name : "other";
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Decode the whole buffer once. Returns 0, or -1 if the decoder can't be set up. */
static int decode_all(uint8_t *begin, size_t size, struct result *res)
{
	struct pt_packet_decoder *decoder;
	struct pt_packet packet;
	int status;

	memset(res, 0, sizeof(*res));

	decoder = alloc_decoder(begin, size);
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

static void print_result(size_t size, const struct result *res, const int64_t *times, int runs, int64_t best)
{
	int run, slot, first;

	printf("{\"decoder\":\"libipt\",\"bytes\":%zu,\"packets\":%llu,\"errors\":%llu,\"best_ns\":%lld,\"runs_ns\":[",
	       size, (unsigned long long) res->packets, (unsigned long long) res->errors, (long long) best);
	for (run = 0; run < runs; run++)
		printf("%s%lld", run ? "," : "", (long long) times[run]);
	printf("],\"counts\":{");
	first = 1;
	for (slot = 0; slot < SLOT_COUNT; slot++) {
		if (slot == ppt_mode || !res->counts[slot])
			continue;
		printf("%s\"%s\":%llu", first ? "" : ",", slot_name(slot), (unsigned long long) res->counts[slot]);
		first = 0;
	}
	printf("}}\n");
}

/* harness --bench RUNS FILE */
static int bench_main(int argc, char **argv)
{
	struct result res, check;
	int64_t times[MAX_RUNS], best;
	size_t size;
	uint8_t *buf;
	char *end;
	long runs;
	int run;

	if (argc != 4) {
		fprintf(stderr, "usage: %s --bench RUNS FILE\n", argv[0]);
		return 2;
	}

	errno = 0;
	runs = strtol(argv[2], &end, 10);
	if (errno != 0 || end == argv[2] || *end != '\0' || runs < 0 || runs > MAX_RUNS) {
		fprintf(stderr, "%s: runs must be 0..%d\n", argv[0], MAX_RUNS);
		return 2;
	}

	buf = load(argv[3], &size);
	if (!buf) {
		fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], argv[3], strerror(errno));
		return 1;
	}

	/* Warm-up: fault the buffer in and warm the caches and branch predictors. */
	if (decode_all(buf, size, &res) < 0) {
		fprintf(stderr, "%s: pt_pkt_alloc_decoder failed\n", argv[0]);
		free(buf);
		return 1;
	}

	best = INT64_MAX;
	for (run = 0; run < runs; run++) {
		int64_t start = now_ns();

		decode_all(buf, size, &check);
		times[run] = now_ns() - start;
		if (times[run] < best)
			best = times[run];

		if (check.packets != res.packets || check.errors != res.errors) {
			fprintf(stderr, "%s: run %d decoded a different packet count\n", argv[0], run);
			free(buf);
			return 1;
		}
	}

	print_result(size, &res, times, (int) runs, runs ? best : 0);
	free(buf);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------------------
 * Insn mode.
 */

/* The name of an instruction class, or NULL for one libipt 2.0 does not have. */
static const char *insn_class_name(enum pt_insn_class iclass)
{
	switch (iclass) {
	case ptic_error: return "error";
	case ptic_other: return "other";
	case ptic_call: return "call";
	case ptic_return: return "return";
	case ptic_jump: return "jump";
	case ptic_cond_jump: return "cond_jump";
	case ptic_far_call: return "far_call";
	case ptic_far_return: return "far_return";
	case ptic_far_jump: return "far_jump";
	case ptic_ptwrite: return "ptwrite";
	}
	return NULL;
}

/* A field that holds an IP: left out when the event's IP is suppressed. */
static void ip_field(const struct pt_event *ev, const char *name, uint64_t value)
{
	if (!ev->ip_suppressed)
		field(name, value);
}

static void print_event(const struct pt_event *ev)
{
	static const char *const names[] = {
		"enabled", "disabled", "async_disabled", "async_branch", "paging", "async_paging",
		"overflow", "exec_mode", "tsx", "stop", "vmcs", "async_vmcs", "exstop", "mwait",
		"pwre", "pwrx", "ptwrite", "tick", "cbr", "mnt",
	};

	if ((unsigned) ev->type < sizeof(names) / sizeof(names[0]))
		printf("V %s", names[ev->type]);
	else
		printf("V type-%d", (int) ev->type);
	if (ev->ip_suppressed)
		printf(" suppressed");
	if (ev->status_update)
		printf(" update");

	switch (ev->type) {
	case ptev_enabled:
		field("ip", ev->variant.enabled.ip);
		field("resumed", ev->variant.enabled.resumed);
		break;
	case ptev_disabled: ip_field(ev, "ip", ev->variant.disabled.ip); break;
	case ptev_async_disabled:
		field("at", ev->variant.async_disabled.at);
		ip_field(ev, "ip", ev->variant.async_disabled.ip);
		break;
	case ptev_async_branch:
		field("from", ev->variant.async_branch.from);
		ip_field(ev, "to", ev->variant.async_branch.to);
		break;
	case ptev_paging:
		field("cr3", ev->variant.paging.cr3);
		field("non_root", ev->variant.paging.non_root);
		break;
	case ptev_async_paging:
		field("cr3", ev->variant.async_paging.cr3);
		field("non_root", ev->variant.async_paging.non_root);
		ip_field(ev, "ip", ev->variant.async_paging.ip);
		break;
	case ptev_overflow: ip_field(ev, "ip", ev->variant.overflow.ip); break;
	case ptev_exec_mode:
		field("mode", (uint64_t) ev->variant.exec_mode.mode);
		ip_field(ev, "ip", ev->variant.exec_mode.ip);
		break;
	case ptev_tsx:
		ip_field(ev, "ip", ev->variant.tsx.ip);
		field("speculative", ev->variant.tsx.speculative);
		field("aborted", ev->variant.tsx.aborted);
		break;
	case ptev_vmcs: field("base", ev->variant.vmcs.base); break;
	case ptev_async_vmcs:
		field("base", ev->variant.async_vmcs.base);
		ip_field(ev, "ip", ev->variant.async_vmcs.ip);
		break;
	case ptev_exstop: ip_field(ev, "ip", ev->variant.exstop.ip); break;
	case ptev_mwait:
		ip_field(ev, "ip", ev->variant.mwait.ip);
		field("hints", ev->variant.mwait.hints);
		field("ext", ev->variant.mwait.ext);
		break;
	case ptev_pwre:
		field("state", ev->variant.pwre.state);
		field("sub_state", ev->variant.pwre.sub_state);
		field("hw", ev->variant.pwre.hw);
		break;
	case ptev_pwrx:
		field("last", ev->variant.pwrx.last);
		field("deepest", ev->variant.pwrx.deepest);
		field("interrupt", ev->variant.pwrx.interrupt);
		field("store", ev->variant.pwrx.store);
		field("autonomous", ev->variant.pwrx.autonomous);
		break;
	case ptev_ptwrite:
		ip_field(ev, "ip", ev->variant.ptwrite.ip);
		field("size", ev->variant.ptwrite.size);
		field("payload", ev->variant.ptwrite.payload);
		break;
	case ptev_tick: ip_field(ev, "ip", ev->variant.tick.ip); break;
	case ptev_cbr: field("ratio", ev->variant.cbr.ratio); break;
	case ptev_mnt: field("payload", ev->variant.mnt.payload); break;
	default: break;
	}

	if (ev->has_tsc)
		field("tsc", ev->tsc);
	putchar('\n');
}

static void print_insn(const struct pt_insn *insn)
{
	const char *name = insn_class_name(insn->iclass);

	printf("I 0x%" PRIx64 " %u %s%s%s\n", insn->ip, (unsigned) insn->size, name ? name : "unknown",
	       insn->speculative ? " speculative" : "", insn->truncated ? " truncated" : "");
}

/* Print the events pending in status. Returns the status after the last one, or an error. */
static int drain_events(struct pt_insn_decoder *decoder, int status)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(decoder, &ev, sizeof(ev));
		if (status >= 0)
			print_event(&ev);
	}

	return status;
}

/* Decode from the current synchronisation point to end of stream or an error. */
static int decode_segment(struct pt_insn_decoder *decoder, int status)
{
	for (;;) {
		struct pt_insn insn;

		status = drain_events(decoder, status);
		if (status < 0 || (status & pts_eos))
			return status < 0 ? status : -pte_eos;

		memset(&insn, 0, sizeof(insn));
		status = pt_insn_next(decoder, &insn, sizeof(insn));
		/* An event the status did not announce: fetch it as if it had. */
		if (status == -pte_event_ignored) {
			status = pts_event_pending;
			continue;
		}
		if (status >= 0 || insn.iclass != ptic_error)
			print_insn(&insn);
		if (status < 0)
			return status;
	}
}

static void insn_decode(struct pt_insn_decoder *decoder)
{
	uint64_t offset, last_sync;
	int status;

	last_sync = 0;
	for (;;) {
		status = pt_insn_sync_forward(decoder);
		if (status < 0) {
			if (pt_errcode(status) == pte_eos)
				return;
			printf("X ");
			print_code(status);
			putchar('\n');
			/* Try the next PSB only if this attempt got past the last one, as ptxed does. */
			if (pt_insn_get_offset(decoder, &offset) < 0 || offset <= last_sync)
				return;
			last_sync = offset;
			continue;
		}
		if (pt_insn_get_sync_offset(decoder, &offset) == 0) {
			printf("S %08" PRIx64 "\n", offset);
			last_sync = offset;
		}

		status = decode_segment(decoder, status);
		if (pt_errcode(status) == pte_eos)
			return;
		if (pt_insn_get_offset(decoder, &offset) < 0)
			offset = 0;
		printf("E %08" PRIx64 " ", offset);
		print_code(status);
		putchar('\n');
	}
}

/* A whole C integer; 0 on success, -1 if text is not one. */
static int parse_u64(const char *text, uint64_t *value)
{
	char *end;

	if (!*text || *text == '-')
		return -1;
	errno = 0;
	*value = strtoull(text, &end, 0);
	return errno || *end ? -1 : 0;
}

/*
 * Map FILE:ADDR or FILE:FROM-TO:ADDR (arg is cut up) into image. Returns 1 when
 * arg is malformed, else pt_image_add_file's status.
 */
/*
 * Flow bench mode maps its files through this image section cache, as ptxed does: a
 * section added with pt_image_add_file alone is mapped on each entry and unmapped on
 * leaving, which costs two system calls per jump between images. NULL elsewhere.
 */
static struct pt_image_section_cache *iscache;

static int add_map(struct pt_image *image, char *arg)
{
	uint64_t addr, from, to, size;
	char *colon, *range, *dash;
	int isid;

	colon = strrchr(arg, ':');
	if (!colon || colon == arg || parse_u64(colon + 1, &addr) < 0)
		return 1;
	*colon = '\0';

	/* FILE:FROM-TO, unless what follows the last colon is no range (part of FILE). */
	from = 0;
	to = UINT64_MAX;
	range = strrchr(arg, ':');
	dash = range ? strchr(range + 1, '-') : NULL;
	if (dash && range != arg) {
		*dash = '\0';
		if (parse_u64(range + 1, &from) == 0 && parse_u64(dash + 1, &to) == 0 && to > from) {
			*range = '\0';
		} else {
			*dash = '-';
			from = 0;
			to = UINT64_MAX;
		}
	}

	/* A size past the end of the file is cut to the file: UINT64_MAX maps all of it. */
	size = to == UINT64_MAX ? UINT64_MAX : to - from;
	if (!iscache)
		return pt_image_add_file(image, arg, from, size, NULL, addr);
	isid = pt_iscache_add_file(iscache, arg, from, size, addr);
	return isid < 0 ? isid : pt_image_add_cached(image, iscache, isid, NULL);
}

/*
 * The unknown-packet callback of --skip-event-trace: a CFE or an EVD is read as
 * an unknown packet of its size; anything else stays a bad opcode.
 */
static int skip_event_trace(struct pt_packet_unknown *unknown, const struct pt_config *config,
			    const uint8_t *pos, void *context)
{
	size_t left, size;

	(void) context;
	left = (size_t) (config->end - pos);
	if (left < 2 || pos[0] != 0x02)
		return -pte_bad_opc;
	if (pos[1] == 0x13)
		size = 4;
	else if (pos[1] == 0x53)
		size = 11;
	else
		return -pte_bad_opc;
	if (left < size)
		return -pte_eos;
	unknown->packet = pos;
	unknown->priv = NULL;
	return (int) size;
}

/* harness --insn [--cpu F/M] [--skip-event-trace] [--map FILE[:FROM-TO]:ADDR]... TRACE */
static int insn_main(int argc, char **argv)
{
	static char outbuf[1 << 16];
	struct pt_insn_decoder *decoder;
	struct pt_config config;
	const char *trace, *cpu;
	char *spec;
	uint8_t *buf;
	size_t size;
	int arg, status, skip_et;

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));

	trace = NULL;
	cpu = NULL;
	skip_et = 0;
	for (arg = 2; arg < argc; arg++) {
		if (strcmp(argv[arg], "--map") == 0 && arg + 1 < argc) {
			arg++;
			continue;
		}
		if (strcmp(argv[arg], "--skip-event-trace") == 0) {
			skip_et = 1;
			continue;
		}
		if (strcmp(argv[arg], "--cpu") == 0 && arg + 1 < argc) {
			cpu = argv[++arg];
			continue;
		}
		if (trace || (argv[arg][0] == '-' && argv[arg][1] == '-')) {
			fprintf(stderr, "usage: %s --insn [--cpu F/M] [--skip-event-trace] [--map FILE[:FROM-TO]:ADDR]... TRACE\n", argv[0]);
			return 2;
		}
		trace = argv[arg];
	}
	if (!trace) {
		fprintf(stderr, "usage: %s --insn [--cpu F/M] [--skip-event-trace] [--map FILE[:FROM-TO]:ADDR]... TRACE\n", argv[0]);
		return 2;
	}

	buf = load(trace, &size);
	if (!buf) {
		fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], trace, strerror(errno));
		return 1;
	}

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + size;
	if (skip_et)
		config.decode.callback = skip_event_trace;
	if (cpu) {
		/* Family/model as ptxed's --cpu takes them; errata as libipt knows them. */
		unsigned int family, model;

		if (sscanf(cpu, "%u/%i", &family, &model) != 2 || family > 0xffff || model > 0xff) {
			fprintf(stderr, "%s: --cpu %s: expected FAMILY/MODEL\n", argv[0], cpu);
			free(buf);
			return 2;
		}
		config.cpu.vendor = pcv_intel;
		config.cpu.family = (uint16_t) family;
		config.cpu.model = (uint8_t) model;
		status = pt_cpu_errata(&config.errata, &config.cpu);
		if (status < 0) {
			fprintf(stderr, "%s: --cpu %s: %s\n", argv[0], cpu, pt_errstr(pt_errcode(status)));
			free(buf);
			return 1;
		}
	}
	decoder = pt_insn_alloc_decoder(&config);
	if (!decoder) {
		fprintf(stderr, "%s: pt_insn_alloc_decoder failed\n", argv[0]);
		free(buf);
		return 1;
	}

	for (arg = 2; arg < argc; arg++) {
		if (strcmp(argv[arg], "--map") != 0)
			continue;
		arg++;
		/* add_map cuts its argument into pieces: keep argv whole for messages. */
		spec = strdup(argv[arg]);
		status = spec ? add_map(pt_insn_get_image(decoder), spec) : -pte_nomem;
		free(spec);
		if (status != 0) {
			if (status < 0)
				fprintf(stderr, "%s: --map %s: %s\n", argv[0], argv[arg], pt_errstr(pt_errcode(status)));
			else
				fprintf(stderr, "%s: --map %s: expected FILE:ADDR or FILE:FROM-TO:ADDR\n", argv[0],
					argv[arg]);
			pt_insn_free_decoder(decoder);
			free(buf);
			return status < 0 ? 1 : 2;
		}
	}

	insn_decode(decoder);
	pt_insn_free_decoder(decoder);
	free(buf);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* ---------------------------------------------------------------------------------
 * Ild mode.
 */

/* Where ild mode maps the code bytes. */
#define ILD_IP 0x1000ull

/* The current record's code bytes. */
struct ild_code {
	const uint8_t *bytes;
	uint8_t size;
};

/* The image read callback: the current record's bytes at ILD_IP, nothing else. */
static int ild_read(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip, void *context)
{
	const struct ild_code *code = context;
	uint64_t offset, left;

	(void) asid;
	if (ip < ILD_IP || ip >= ILD_IP + code->size)
		return -pte_nomap;

	offset = ip - ILD_IP;
	left = code->size - offset;
	if (size > left)
		size = (size_t) left;
	memcpy(buffer, code->bytes + offset, size);
	return (int) size;
}

/* PSB, MODE.Exec, FUP(ILD_IP, 64-bit), PSBEND. Returns the length. */
static size_t ild_trace(uint8_t *buf, int mode)
{
	size_t n = 0;
	int i;

	for (i = 0; i < 8; i++) {
		buf[n++] = 0x02;
		buf[n++] = 0x82;
	}
	buf[n++] = 0x99;
	/* CS.L (bit 0) for 64-bit code, CS.D (bit 1) for 32-bit code. */
	buf[n++] = mode == 3 ? 0x01 : mode == 2 ? 0x02 : 0x00;
	buf[n++] = 0xdd; /* FUP, IPC 6: an 8-byte IP */
	for (i = 0; i < 8; i++)
		buf[n++] = (uint8_t) (ILD_IP >> (8 * i));
	buf[n++] = 0x02;
	buf[n++] = 0x23;
	return n;
}

/* One record: decode the instruction at its start and print what libipt says. 0, or 1 on failure. */
static int ild_record(const char *prog, struct pt_insn_decoder *decoder)
{
	struct pt_insn insn;
	const char *name;
	int status;

	status = pt_insn_sync_set(decoder, 0);
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event event;

		status = pt_insn_event(decoder, &event, sizeof(event));
	}
	if (status < 0) {
		fprintf(stderr, "%s: synchronising failed: %s\n", prog, pt_errstr(pt_errcode(status)));
		return 1;
	}

	memset(&insn, 0, sizeof(insn));
	status = pt_insn_next(decoder, &insn, sizeof(insn));
	if (insn.iclass == ptic_error) {
		printf("E %s\n", status < 0 ? error_name(status) : "no_error");
		return 0;
	}
	name = insn_class_name(insn.iclass);
	if (name)
		printf("%u %s\n", insn.size, name);
	else
		printf("%u class-%d\n", insn.size, (int) insn.iclass);
	return 0;
}

/* harness --ild PACK */
static int ild_main(int argc, char **argv)
{
	static uint8_t traces[3][64];
	struct pt_insn_decoder *decoders[3];
	struct ild_code code;
	FILE *file;
	int mode, status;

	if (argc != 3) {
		fprintf(stderr, "usage: %s --ild PACK\n", argv[0]);
		return 2;
	}

	memset(&code, 0, sizeof(code));
	for (mode = 1; mode <= 3; mode++) {
		struct pt_config config;
		struct pt_insn_decoder *decoder;

		pt_config_init(&config);
		config.begin = traces[mode - 1];
		config.end = config.begin + ild_trace(config.begin, mode);
		decoder = pt_insn_alloc_decoder(&config);
		if (!decoder || pt_image_set_callback(pt_insn_get_image(decoder), ild_read, &code) < 0) {
			fprintf(stderr, "%s: cannot set up libipt's decoder\n", argv[0]);
			return 1;
		}
		decoders[mode - 1] = decoder;
	}

	file = fopen(argv[2], "rb");
	if (!file) {
		perror(argv[2]);
		return 1;
	}

	status = 0;
	for (;;) {
		uint8_t bytes[15];
		int head, size;

		head = fgetc(file);
		if (head == EOF)
			break;
		size = fgetc(file);
		if (head < 1 || head > 3 || size < 1 || size > 15 ||
		    fread(bytes, 1, (size_t) size, file) != (size_t) size) {
			fprintf(stderr, "%s: malformed record\n", argv[2]);
			status = 1;
			break;
		}
		code.bytes = bytes;
		code.size = (uint8_t) size;
		status = ild_record(argv[0], decoders[head - 1]);
		if (status != 0)
			break;
	}

	fclose(file);
	for (mode = 0; mode < 3; mode++)
		pt_insn_free_decoder(decoders[mode]);
	if (fflush(stdout) != 0)
		return 1;
	return status;
}

/* ---------------------------------------------------------------------------------
 * Flow bench mode.
 */

struct flow_result {
	uint64_t insns;
	uint64_t units;
	uint64_t events;
	uint64_t errors;
};

/* Drain the events pending in status; returns the status after the last one, or an error. */
static int blk_drain(struct pt_block_decoder *decoder, int status, struct flow_result *res)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_blk_event(decoder, &ev, sizeof(ev));
		res->events++;
	}
	return status;
}

static int ins_drain(struct pt_insn_decoder *decoder, int status, struct flow_result *res)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(decoder, &ev, sizeof(ev));
		res->events++;
	}
	return status;
}

/*
 * Decode the whole trace once with the block (block != 0) or instruction decoder over
 * image, like ptxed --quiet: sync forward, decode to the end of the segment, count
 * errors and resume at the next PSB.
 */
static int flow_all(const struct pt_config *config, struct pt_image *image, int block, struct flow_result *res)
{
	struct pt_block_decoder *bdec = NULL;
	struct pt_insn_decoder *idec = NULL;
	int status;

	memset(res, 0, sizeof(*res));
	if (block) {
		bdec = pt_blk_alloc_decoder(config);
		if (!bdec || pt_blk_set_image(bdec, image) < 0)
			return -1;
	} else {
		idec = pt_insn_alloc_decoder(config);
		if (!idec || pt_insn_set_image(idec, image) < 0)
			return -1;
	}

	for (;;) {
		status = block ? pt_blk_sync_forward(bdec) : pt_insn_sync_forward(idec);
		if (status < 0)
			break;
		for (;;) {
			if (block) {
				struct pt_block b;

				status = blk_drain(bdec, status, res);
				if (status < 0 || (status & pts_eos))
					break;
				status = pt_blk_next(bdec, &b, sizeof(b));
				res->insns += b.ninsn;
				res->units++;
			} else {
				struct pt_insn in;

				status = ins_drain(idec, status, res);
				if (status < 0 || (status & pts_eos))
					break;
				status = pt_insn_next(idec, &in, sizeof(in));
				if (status >= 0) {
					res->insns++;
					res->units++;
				}
			}
			if (status == -pte_event_ignored)
				status = pts_event_pending;
			else if (status < 0)
				break;
		}
		if (status >= 0 || status == -pte_eos)
			break;
		res->errors++;
	}

	if (bdec)
		pt_blk_free_decoder(bdec);
	if (idec)
		pt_insn_free_decoder(idec);
	return 0;
}

/* harness --bench-flow RUNS block|insn [--map FILE[:FROM-TO]:ADDR]... TRACE */
static int bench_flow_main(int argc, char **argv)
{
	struct flow_result res, check;
	int64_t times[MAX_RUNS], best;
	struct pt_config config;
	struct pt_image *image;
	const char *trace;
	char *end, *spec;
	uint8_t *buf;
	size_t size;
	long runs;
	int arg, run, block, status;

	if (argc < 5 || (strcmp(argv[3], "block") != 0 && strcmp(argv[3], "insn") != 0)) {
		fprintf(stderr, "usage: %s --bench-flow RUNS block|insn [--map FILE[:FROM-TO]:ADDR]... TRACE\n",
			argv[0]);
		return 2;
	}
	errno = 0;
	runs = strtol(argv[2], &end, 10);
	if (errno != 0 || end == argv[2] || *end != '\0' || runs < 0 || runs > MAX_RUNS) {
		fprintf(stderr, "%s: runs must be 0..%d\n", argv[0], MAX_RUNS);
		return 2;
	}
	block = strcmp(argv[3], "block") == 0;
	trace = argv[argc - 1];

	buf = load(trace, &size);
	if (!buf) {
		fprintf(stderr, "%s: cannot read %s: %s\n", argv[0], trace, strerror(errno));
		return 1;
	}
	image = pt_image_alloc("bench");
	iscache = pt_iscache_alloc("bench");
	if (!image || !iscache) {
		pt_image_free(image);
		pt_iscache_free(iscache);
		free(buf);
		return 1;
	}
	for (arg = 4; arg < argc - 1; arg++) {
		if (strcmp(argv[arg], "--map") != 0 || arg + 1 >= argc - 1) {
			fprintf(stderr, "%s: unexpected argument %s\n", argv[0], argv[arg]);
			status = 2;
			goto out;
		}
		arg++;
		spec = strdup(argv[arg]);
		status = spec ? add_map(image, spec) : -pte_nomem;
		free(spec);
		if (status != 0) {
			fprintf(stderr, "%s: --map %s: %s\n", argv[0], argv[arg],
				status < 0 ? pt_errstr(pt_errcode(status)) : "expected FILE:ADDR or FILE:FROM-TO:ADDR");
			status = status < 0 ? 1 : 2;
			goto out;
		}
	}

	pt_config_init(&config);
	config.begin = buf;
	config.end = buf + size;

	/* Warm-up: fault the trace and the code in, warm the caches. */
	status = 1;
	if (flow_all(&config, image, block, &res) < 0) {
		fprintf(stderr, "%s: cannot set up the decoder\n", argv[0]);
		goto out;
	}
	best = INT64_MAX;
	for (run = 0; run < runs; run++) {
		int64_t start = now_ns();

		flow_all(&config, image, block, &check);
		times[run] = now_ns() - start;
		if (times[run] < best)
			best = times[run];
		if (check.insns != res.insns || check.errors != res.errors) {
			fprintf(stderr, "%s: run %d decoded a different instruction count\n", argv[0], run);
			goto out;
		}
	}

	printf("{\"decoder\":\"libipt-%s\",\"bytes\":%zu,\"insns\":%llu,\"units\":%llu,\"events\":%llu,"
	       "\"errors\":%llu,\"best_ns\":%lld,\"runs_ns\":[",
	       argv[3], size, (unsigned long long) res.insns, (unsigned long long) res.units,
	       (unsigned long long) res.events, (unsigned long long) res.errors, (long long) (runs ? best : 0));
	for (run = 0; run < runs; run++)
		printf("%s%lld", run ? "," : "", (long long) times[run]);
	printf("]}\n");
	status = fflush(stdout) == 0 ? 0 : 1;
out:
	pt_image_free(image);
	pt_iscache_free(iscache);
	iscache = NULL;
	free(buf);
	return status;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		return bench_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--insn") == 0)
		return insn_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--ild") == 0)
		return ild_main(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--bench-flow") == 0)
		return bench_flow_main(argc, argv);

	return dump_main(argc, argv);
}
