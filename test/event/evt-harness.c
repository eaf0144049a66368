/*
 * ptkit's event-decoder harness: our own program over the public pt_evt_* API of
 * libipt 8978561f (the version behind the conformance corpus), compiled from that
 * source tree by test/event/libipt-harness.ts. Debian's libipt has no event decoder.
 *
 * Input (stdin): cases, each a line
 *     <errata bits> <mtc_freq> <nom_freq> <cpuid_0x15.eax> <cpuid_0x15.ebx> <flags> <mode> <size>
 * followed by <size> trace bytes. Errata bits follow ptkit's ERRATA_NAMES order (bit 0
 * bdm70 ... bit 9 skz84); flags: 1 iflags events, 2 keep tcal on ovf.
 *
 * Output (stdout): per case, a transcript then a line "--". Events are printed as
 * test/event/helpers.ts describe() prints them, followed by " {has_tsc tsc lost_mtc
 * lost_cyc}". Modes:
 *   forward  sync forward, every event, resync after errors:
 *            "error <message> @<offset>", "eos", "sync <message>"
 *   backward repeated sync backward, up to three events after each:
 *            "back sync=<sync offset> off=<offset>" or "back <message>"
 *   set      sync set at every offset that works, up to three events after each: "set <offset>"
 */
#include "intel-pt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
	"enabled", "disabled", "async-disabled", "async-branch", "paging", "async-paging",
	"overflow", "exec-mode", "tsx", "stop", "vmcs", "async-vmcs", "exstop", "mwait",
	"pwre", "pwrx", "ptwrite", "tick", "cbr", "mnt", "tip", "tnt", "iflags",
	"interrupt", "iret", "smi", "rsm", "sipi", "init", "vmentry", "vmexit",
	"shutdown", "uintr", "uiret", "trig", "swintr", "syscall",
};

static void ip_text(char *out, const struct pt_event *ev, uint64_t ip)
{
	if (ev->ip_suppressed)
		strcpy(out, "-");
	else
		sprintf(out, "0x%" PRIx64, ip);
}

static void print_event(const struct pt_event *ev)
{
	static const char *const modes[] = { "?", "16", "32", "64" };
	char ip[32];

	printf("%s", ev->type < sizeof(names) / sizeof(*names) ? names[ev->type] : "?");
	switch (ev->type) {
	case ptev_enabled: ip_text(ip, ev, ev->variant.enabled.ip); printf(" %s", ip); break;
	case ptev_disabled: ip_text(ip, ev, ev->variant.disabled.ip); printf(" %s", ip); break;
	case ptev_overflow: ip_text(ip, ev, ev->variant.overflow.ip); printf(" %s", ip); break;
	case ptev_exstop: ip_text(ip, ev, ev->variant.exstop.ip); printf(" %s", ip); break;
	case ptev_tip: ip_text(ip, ev, ev->variant.tip.ip); printf(" %s", ip); break;
	case ptev_iret: ip_text(ip, ev, ev->variant.iret.ip); printf(" %s", ip); break;
	case ptev_smi: ip_text(ip, ev, ev->variant.smi.ip); printf(" %s", ip); break;
	case ptev_rsm: ip_text(ip, ev, ev->variant.rsm.ip); printf(" %s", ip); break;
	case ptev_init: ip_text(ip, ev, ev->variant.init.ip); printf(" %s", ip); break;
	case ptev_vmentry: ip_text(ip, ev, ev->variant.vmentry.ip); printf(" %s", ip); break;
	case ptev_shutdown: ip_text(ip, ev, ev->variant.shutdown.ip); printf(" %s", ip); break;
	case ptev_uiret: ip_text(ip, ev, ev->variant.uiret.ip); printf(" %s", ip); break;
	case ptev_syscall: ip_text(ip, ev, ev->variant.syscall.ip); printf(" %s", ip); break;
	case ptev_tick: ip_text(ip, ev, ev->variant.tick.ip); printf(" %s", ip); break;
	case ptev_async_disabled:
		ip_text(ip, ev, ev->variant.async_disabled.ip);
		printf(" 0x%" PRIx64 "->%s", ev->variant.async_disabled.at, ip);
		break;
	case ptev_async_branch:
		ip_text(ip, ev, ev->variant.async_branch.to);
		printf(" 0x%" PRIx64 "->%s", ev->variant.async_branch.from, ip);
		break;
	case ptev_paging:
		printf(" 0x%" PRIx64 "%s", ev->variant.paging.cr3, ev->variant.paging.non_root ? " nr" : "");
		break;
	case ptev_async_paging:
		ip_text(ip, ev, ev->variant.async_paging.ip);
		printf(" 0x%" PRIx64 "%s %s", ev->variant.async_paging.cr3,
		       ev->variant.async_paging.non_root ? " nr" : "", ip);
		break;
	case ptev_exec_mode:
		ip_text(ip, ev, ev->variant.exec_mode.ip);
		printf(" %s %s", modes[ev->variant.exec_mode.mode & 3], ip);
		break;
	case ptev_tsx:
		ip_text(ip, ev, ev->variant.tsx.ip);
		printf(" %s %s", ev->variant.tsx.aborted ? "abort" : ev->variant.tsx.speculative ? "begin" : "commit", ip);
		break;
	case ptev_vmcs: printf(" 0x%" PRIx64, ev->variant.vmcs.base); break;
	case ptev_mnt: printf(" 0x%" PRIx64, ev->variant.mnt.payload); break;
	case ptev_async_vmcs:
		ip_text(ip, ev, ev->variant.async_vmcs.ip);
		printf(" 0x%" PRIx64 " %s", ev->variant.async_vmcs.base, ip);
		break;
	case ptev_mwait:
		ip_text(ip, ev, ev->variant.mwait.ip);
		printf(" %u,%u %s", ev->variant.mwait.hints, ev->variant.mwait.ext, ip);
		break;
	case ptev_pwre:
		printf(" %u.%u%s", ev->variant.pwre.state, ev->variant.pwre.sub_state, ev->variant.pwre.hw ? " hw" : "");
		break;
	case ptev_pwrx:
		printf(" %u,%u%s%s%s", ev->variant.pwrx.last, ev->variant.pwrx.deepest,
		       ev->variant.pwrx.interrupt ? " int" : "", ev->variant.pwrx.store ? " st" : "",
		       ev->variant.pwrx.autonomous ? " hw" : "");
		break;
	case ptev_ptwrite:
		ip_text(ip, ev, ev->variant.ptwrite.ip);
		printf(" 0x%" PRIx64 "/%u %s", ev->variant.ptwrite.payload, ev->variant.ptwrite.size, ip);
		break;
	case ptev_cbr: printf(" %u", ev->variant.cbr.ratio); break;
	case ptev_tnt:
		putchar(' ');
		for (int i = ev->variant.tnt.size - 1; i >= 0; i--)
			putchar((ev->variant.tnt.bits >> i) & 1 ? '!' : '.');
		break;
	case ptev_iflags:
		ip_text(ip, ev, ev->variant.iflags.ip);
		printf(" if=%d %s", ev->variant.iflags.iflag, ip);
		break;
	case ptev_interrupt:
		ip_text(ip, ev, ev->variant.interrupt.ip);
		printf(" v%u %s", ev->variant.interrupt.vector, ip);
		if (ev->variant.interrupt.has_cr2)
			printf(" cr2=0x%" PRIx64, ev->variant.interrupt.cr2);
		break;
	case ptev_sipi: ip_text(ip, ev, 0); printf(" v%u %s", ev->variant.sipi.vector, ip); break;
	case ptev_uintr:
		ip_text(ip, ev, ev->variant.uintr.ip);
		printf(" v%u %s", ev->variant.uintr.vector, ip);
		break;
	case ptev_swintr:
		ip_text(ip, ev, ev->variant.swintr.ip);
		printf(" v%u %s", ev->variant.swintr.vector, ip);
		break;
	case ptev_vmexit:
		ip_text(ip, ev, ev->variant.vmexit.ip);
		if (ev->variant.vmexit.has_vector)
			printf(" v%u %s", ev->variant.vmexit.vector, ip);
		else
			printf(" v- %s", ip);
		if (ev->variant.vmexit.has_vmxr)
			printf(" vmxr=0x%" PRIx64, ev->variant.vmexit.vmxr);
		if (ev->variant.vmexit.has_vmxq)
			printf(" vmxq=0x%" PRIx64, ev->variant.vmexit.vmxq);
		break;
	case ptev_trig:
		ip_text(ip, ev, ev->variant.trig.ip);
		printf(" trbv=%u icnt=%u %s%s", ev->variant.trig.trbv, ev->variant.trig.icnt, ip,
		       ev->variant.trig.mult ? " mult" : "");
		break;
	default:
		break;
	}
	if (ev->status_update)
		printf(" [status]");
	printf(" {%d %" PRIx64 " %u %u}\n", ev->has_tsc, ev->tsc, ev->lost_mtc, ev->lost_cyc);
}

static const char *message(int status)
{
	return pt_errstr(pt_errcode(status));
}

static uint64_t offset_of(const struct pt_event_decoder *decoder)
{
	uint64_t offset;

	if (pt_evt_get_offset(decoder, &offset) < 0)
		return UINT64_MAX;
	return offset;
}

/* Up to three events; stops at an error. */
static void print_some(struct pt_event_decoder *decoder)
{
	for (int i = 0; i < 3; i++) {
		struct pt_event ev;
		int status = pt_evt_next(decoder, &ev, sizeof(ev));

		if (status < 0) {
			printf("error %s\n", message(status));
			return;
		}
		print_event(&ev);
	}
}

static void forward(struct pt_event_decoder *decoder)
{
	int status = pt_evt_sync_forward(decoder);

	for (long events = 0; events < 1000000; events++) {
		struct pt_event ev;

		if (status < 0) {
			if (status == -pte_eos) {
				printf("eos\n");
				return;
			}
			printf("error %s @%" PRIu64 "\n", message(status), offset_of(decoder));
			status = pt_evt_sync_forward(decoder);
			if (status < 0) {
				printf("sync %s\n", message(status));
				return;
			}
			continue;
		}
		status = pt_evt_next(decoder, &ev, sizeof(ev));
		if (status >= 0)
			print_event(&ev);
	}
	printf("limit\n");
}

static void backward(struct pt_event_decoder *decoder)
{
	for (int round = 0; round < 50; round++) {
		uint64_t sync = 0;
		int status = pt_evt_sync_backward(decoder);

		if (status < 0) {
			printf("back %s\n", message(status));
			if (status == -pte_eos || status == -pte_nosync)
				return;
			continue;
		}
		pt_evt_get_sync_offset(decoder, &sync);
		printf("back sync=%" PRIu64 " off=%" PRIu64 "\n", sync, offset_of(decoder));
		print_some(decoder);
	}
}

static void set_each(struct pt_event_decoder *decoder, size_t size)
{
	for (uint64_t offset = 0; offset < size; offset++) {
		if (pt_evt_sync_set(decoder, offset) < 0)
			continue;
		printf("set %" PRIu64 "\n", offset);
		print_some(decoder);
	}
}

int main(void)
{
	unsigned errata, mtc, nom, flags;
	uint32_t eax, ebx;
	size_t size;
	char mode[16];

	while (scanf("%u %u %u %" SCNu32 " %" SCNu32 " %u %15s %zu", &errata, &mtc, &nom, &eax, &ebx, &flags,
		     mode, &size) == 8) {
		struct pt_event_decoder *decoder;
		struct pt_config config;
		uint8_t *buf;

		if (getchar() != '\n')
			return 2;
		buf = malloc(size ? size : 1);
		if (!buf || fread(buf, 1, size, stdin) != size)
			return 2;

		pt_config_init(&config);
		config.begin = buf;
		config.end = buf + size;
		config.errata.bdm70 = (errata >> 0) & 1;
		config.errata.bdm64 = (errata >> 1) & 1;
		config.errata.skd007 = (errata >> 2) & 1;
		config.errata.skd022 = (errata >> 3) & 1;
		config.errata.skd010 = (errata >> 4) & 1;
		config.errata.skl014 = (errata >> 5) & 1;
		config.errata.apl12 = (errata >> 6) & 1;
		config.errata.apl11 = (errata >> 7) & 1;
		config.errata.skl168 = (errata >> 8) & 1;
		config.errata.skz84 = (errata >> 9) & 1;
		config.mtc_freq = (uint8_t) mtc;
		config.nom_freq = (uint8_t) nom;
		config.cpuid_0x15_eax = eax;
		config.cpuid_0x15_ebx = ebx;
		config.flags.variant.event.enable_iflags_events = flags & 1;
		config.flags.variant.event.keep_tcal_on_ovf = (flags >> 1) & 1;

		decoder = pt_evt_alloc_decoder(&config);
		if (!decoder)
			return 3;
		if (!strcmp(mode, "forward"))
			forward(decoder);
		else if (!strcmp(mode, "backward"))
			backward(decoder);
		else if (!strcmp(mode, "set"))
			set_each(decoder, size);
		else
			return 2;
		printf("--\n");
		fflush(stdout);
		pt_evt_free_decoder(decoder);
		free(buf);
	}
	return 0;
}
