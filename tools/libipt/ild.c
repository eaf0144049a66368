/*
 * ild: libipt's instruction length decoder (pt_ild, internal to libipt) seen through
 * its public instruction flow decoder, for ptkit's differential test of instruction
 * lengths (test/isa/ild-libipt.test.ts). tools/libipt/harness.ts compiles it.
 *
 * Usage: ild PACK
 *
 * PACK is a file of records, each: one byte execution mode (1 = 16-bit, 2 = 32-bit,
 * 3 = 64-bit), one byte N (1..15), then N code bytes. For each record libipt decodes
 * the instruction at the start of the N bytes (and sees no memory past them), and
 * this prints one line:
 *
 *   <size> <class>     the instruction's length and libipt's class: other, call,
 *                      return, jump, cond_jump, far_call, far_return, far_jump,
 *                      ptwrite (or class-<n>)
 *   E <name>           decoding failed with that error (bad_insn, ...)
 *
 * How: one trace per mode, a PSB+ holding MODE.Exec and a FUP (tracing enabled at
 * the code's address) and PSBEND; memory comes from an image read callback that
 * serves the record's bytes. Per record the decoder is synchronised onto the PSB
 * again (pt_insn_sync_set), its events are drained and pt_insn_next decodes one
 * instruction: a decoded instruction is copied out before libipt looks at the trace
 * for its successor, so a class other than ptic_error is a decoded length even when
 * pt_insn_next then fails for want of trace.
 *
 * Only libipt's public API (<intel-pt.h>) is used. Build: cc -O2 ild.c -lipt
 * Exit status: 0, 1 on an I/O or setup failure or a malformed pack, 2 on usage.
 */
#include <intel-pt.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the code bytes are mapped. */
#define CODE_IP 0x1000ull

struct code {
	const uint8_t *bytes;
	uint8_t size;
};

/* The image read callback: the current record's bytes at CODE_IP, nothing else. */
static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	const struct code *code = context;
	uint64_t offset, left;

	(void) asid;
	if (ip < CODE_IP || ip >= CODE_IP + code->size)
		return -pte_nomap;

	offset = ip - CODE_IP;
	left = code->size - offset;
	if (size > left)
		size = (size_t) left;
	memcpy(buffer, code->bytes + offset, size);
	return (int) size;
}

static const char *class_name(enum pt_insn_class iclass)
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

static const char *error_name(int status)
{
	switch (pt_errcode(status)) {
	case pte_bad_insn: return "bad_insn";
	case pte_nomap: return "nomap";
	case pte_eos: return "eos";
	case pte_bad_query: return "bad_query";
	case pte_noip: return "noip";
	case pte_nosync: return "nosync";
	case pte_internal: return "internal";
	default: return "other_error";
	}
}

/* PSB, MODE.Exec, FUP(CODE_IP, 64-bit), PSBEND. Returns the length. */
static size_t make_trace(uint8_t *buf, int mode)
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
		buf[n++] = (uint8_t) (CODE_IP >> (8 * i));
	buf[n++] = 0x02;
	buf[n++] = 0x23;
	return n;
}

int main(int argc, char **argv)
{
	static uint8_t traces[3][64];
	struct pt_insn_decoder *decoders[3];
	struct code code;
	FILE *file;
	int mode;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PACK\n", argv[0]);
		return 2;
	}

	memset(&code, 0, sizeof(code));
	for (mode = 1; mode <= 3; mode++) {
		struct pt_config config;
		struct pt_insn_decoder *decoder;

		pt_config_init(&config);
		config.begin = traces[mode - 1];
		config.end = config.begin + make_trace(config.begin, mode);
		decoder = pt_insn_alloc_decoder(&config);
		if (!decoder || pt_image_set_callback(pt_insn_get_image(decoder), read_code, &code) < 0) {
			fprintf(stderr, "%s: cannot set up libipt's decoder\n", argv[0]);
			return 1;
		}
		decoders[mode - 1] = decoder;
	}

	file = fopen(argv[1], "rb");
	if (!file) {
		perror(argv[1]);
		return 1;
	}

	for (;;) {
		uint8_t bytes[15];
		struct pt_insn insn;
		struct pt_insn_decoder *decoder;
		int head, size, status;

		head = fgetc(file);
		if (head == EOF)
			break;
		size = fgetc(file);
		if (head < 1 || head > 3 || size < 1 || size > 15 ||
		    fread(bytes, 1, (size_t) size, file) != (size_t) size) {
			fprintf(stderr, "%s: malformed record\n", argv[1]);
			return 1;
		}
		code.bytes = bytes;
		code.size = (uint8_t) size;
		decoder = decoders[head - 1];

		status = pt_insn_sync_set(decoder, 0);
		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event event;

			status = pt_insn_event(decoder, &event, sizeof(event));
		}
		if (status < 0) {
			fprintf(stderr, "%s: synchronising failed: %s\n", argv[0],
				pt_errstr(pt_errcode(status)));
			return 1;
		}

		memset(&insn, 0, sizeof(insn));
		status = pt_insn_next(decoder, &insn, sizeof(insn));
		if (insn.iclass != ptic_error) {
			const char *name = class_name(insn.iclass);

			if (name)
				printf("%u %s\n", insn.size, name);
			else
				printf("%u class-%d\n", insn.size, (int) insn.iclass);
		} else
			printf("E %s\n", status < 0 ? error_name(status) : "no_error");
	}

	fclose(file);
	return 0;
}
