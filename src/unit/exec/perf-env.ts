/**
 * perf's environment around a traced program: what `perf record -e intel_pt//u`
 * adds to a program's own execution, as a transformation of an {@link Execution}
 * converted from valgrind's lackey (one stand-in kernel instruction per kernel visit,
 * see lackey-kernel.ts). `ptkit simulate --env perf-user` applies it.
 *
 * What it models, each from the HASE captures in the shared corpus (`loopy` and
 * `control_flow`, Skylake i5-6500 2018-04-04 and Broadwell i7-5600U 2018-05):
 *
 * 1. **Tracing enabled in the kernel during exec.** perf enables the event when the
 *    traced command execs, so TraceEn is set while the CPU is still at CPL 0: the
 *    execution starts in the kernel, and the return to user space (an IRETQ to the
 *    first user instruction) is the first TIP.PGE. Both captures start with a PSB+
 *    that has no MODE.Exec and no FUP (PacketEn = 0), then MODE.Exec, TIP.PGE at the
 *    entry point (loopy 0x4000e8, control_flow 0x400202).
 * 2. **Demand-paging faults on code pages.** The first fetch from each 4 KiB code
 *    page a user instruction touches is a page fault (#PF, vector 14, a fault: the
 *    instruction has not retired): `exception` from the instruction to the stand-in
 *    kernel, which returns to it. With User-only tracing that is FUP(ip), TIP.PGD,
 *    TIP.PGE(ip), as both captures show at the entry point (the text page is mapped
 *    by exec but not present; the kernel read the ELF headers through the page
 *    cache, not through the mapping). An instruction that straddles two pages
 *    faults for each page not yet touched, one fault per page.
 * 3. **TraceEn toggled in the kernel** ({@link PerfEnvOptions.toggleEveryVisit}): the
 *    Broadwell captures show a full PSB+ (with TSC) inside every kernel visit (loopy:
 *    8 of 8 visits, and once more between exec and the entry point), which is what
 *    TraceEn cleared and set again there writes on that CPU; the perf.data's
 *    context-switch records do not account for them (2 switches of the task while
 *    traced), so the cause lies in that recording (`perf record --snapshot`, perf and
 *    Linux 4.14; the Skylake one is a plain `perf record` on 4.15.12) and is not
 *    established: only the toggle itself is modelled. The Skylake capture
 *    has no TSC between the user segments, so no toggles there: the option is off by
 *    default. After the last kernel entry (exit, or death by a signal) the task is
 *    switched out and in while the kernel tears it down:
 *    {@link PerfEnvOptions.togglesAtEnd} toggles (Skylake loopy: 9 TSC/TMA/CBR after
 *    the last TIP.PGD; Broadwell loopy: 1 PSB+).
 *
 * What it cannot model:
 * - **Data pages.** The first touch of a data page faults too (control_flow's FUP at
 *   0x400560, `call *(%rbx)` reading .init_array on page 0x600000), but the lackey
 *   converter keeps only instructions, not lackey's data addresses: data faults are
 *   left out.
 * - **Fault-around.** On a fault in a file mapping Linux maps the neighbouring pages
 *   already in the page cache (up to 64 KiB around it), so later first fetches there
 *   do not fault. The model faults on every code page; for programs with one text
 *   page (the HASE ones) it makes no difference, for larger ones it overcounts.
 * - **Pages present from the start**: pages the kernel touched during exec (the
 *   stack, vDSO, a loader's pages mapped by the kernel) are only known for code
 *   through {@link PerfEnvOptions.presentPages}; by default every code page faults.
 * - **Other processes and interrupts**: context switches to other tasks, timer and
 *   device interrupts while the program runs (real captures show them as further
 *   FUP, TIP.PGD, TIP.PGE triples at arbitrary instructions) are not in the execution.
 */
import { InsnFlag } from "../../isa/types.js";
import { IRET_CLASS, IRET_OFFSET, IRET_SIZE, KERNEL_BASE_HI, KERNEL_BASE_LO } from "./lackey-kernel.js";
import {
  ExecBuilder,
  ExecEvent,
  type Execution,
  INFO_ZLC,
  infoClass,
  infoSize,
  isFlowEvent,
} from "./types.js";

/** IA32_RTIT_CTL's address. */
const MSR_RTIT_CTL = 0x570;
/** #PF. */
const PAGE_FAULT = 14;
/** See {@link PerfEnvOptions.execTicks}. */
const EXEC_TICKS = 82 * 8 * 133;
/** 2^20: pages of 4 KiB per 2^32 bytes. */
const PAGES_PER_HI = 0x100000;

export interface PerfEnvOptions {
  /** IA32_RTIT_CTL as configured (TraceEn set), for the toggles: high and low halves. */
  ctlHi: number;
  ctlLo: number;
  /** Clear and set TraceEn in every kernel visit (the Broadwell captures). Default false. */
  toggleEveryVisit?: boolean;
  /** TraceEn toggles after the last kernel entry, when the execution ends in the kernel. Default 1. */
  togglesAtEnd?: number;
  /**
   * TSC ticks from the enable in exec to the entry point (default 87,248: the Skylake
   * loopy capture has 82 MTCs there, at MTCFreq 3 and 133 TSC ticks per crystal
   * clock). With MTC on, the first MTC writes out the PSB+ that TraceEn's enable
   * made due, in its CPL 0 form (no MODE.Exec, no FUP), as the capture shows.
   */
  execTicks?: number;
  /** Fault on the first fetch from each code page. Default true. */
  codeFaults?: boolean;
  /** Code pages (address >> 12) present from the start: no fault on them. */
  presentPages?: Iterable<number>;
}

/** What {@link applyPerfEnv} added. */
export interface PerfEnvResult {
  execution: Execution;
  /** Page faults added, each `[instruction index in the input, page address]`. */
  faults: [number, number][];
  /** TraceEn toggles added. */
  toggles: number;
}

/**
 * The execution with perf's environment around it (see the file's comment). The
 * input must start at CPL 3 with a user instruction, as lackey's executions do.
 */
export function applyPerfEnv(x: Execution, options: PerfEnvOptions): PerfEnvResult {
  const b = new ExecBuilder();
  const toggleEvery = options.toggleEveryVisit ?? false;
  const atEnd = options.togglesAtEnd ?? 1;
  const codeFaults = options.codeFaults ?? true;
  const present = new Set(options.presentPages ?? []);
  const faults: [number, number][] = [];
  let toggles = 0;
  const toggle = (): void => {
    b.wrmsr(MSR_RTIT_CTL, options.ctlHi, (options.ctlLo & ~1) >>> 0);
    b.wrmsr(MSR_RTIT_CTL, options.ctlHi, options.ctlLo);
    toggles++;
  };
  const iretq = (): void => {
    b.insn(KERNEL_BASE_HI, (KERNEL_BASE_LO + IRET_OFFSET) >>> 0, IRET_SIZE, IRET_CLASS);
  };

  const n = x.insnCount;
  const m = x.eventCount;
  let e = 0;
  // The initial state, at CPL 0: exec's kernel, which returns to the entry point.
  // The initial state records (CR3, mode, ...) hold in exec's kernel too; its CPL is
  // 0, and the program's initial CPL comes after the IRETQ.
  let cpl = 0;
  let userCpl = 3;
  for (; e < m && x.evAt[e] === 0 && !isFlowEvent(x.evKind[e]!); e++) {
    if (x.evKind[e] === ExecEvent.Cpl) userCpl = x.evA[e]!;
    else copyEvent(b, x, e);
  }
  b.cpl(0);
  if (n > 0) {
    const ticks = options.execTicks ?? EXEC_TICKS;
    if (ticks > 0) b.ticks(ticks);
    if (toggleEvery) toggle();
    iretq();
    b.cpl(userCpl);
    cpl = userCpl;
  }
  for (let i = 0; i < n; i++) {
    for (; e < m && x.evAt[e] === i; e++) {
      if (x.evKind[e] === ExecEvent.Cpl) cpl = x.evA[e]!;
      copyEvent(b, x, e);
    }
    const hi = x.ipHi[i]!;
    const lo = x.ipLo[i]!;
    if (cpl === 0) {
      if (toggleEvery) toggle();
    } else if (codeFaults) {
      // The pages of the instruction's first and last byte (one or two).
      const first = hi * PAGES_PER_HI + (lo >>> 12);
      const end = lo + infoSize(x.info[i]!) - 1;
      const last = first + (Math.floor(end / 4096) - (lo >>> 12));
      for (let page = first; page <= last; page++) {
        if (present.has(page)) continue;
        present.add(page);
        faults.push([i, page * 4096]);
        b.transfer(
          ExecEvent.Exception,
          PAGE_FAULT,
          hi,
          lo,
          KERNEL_BASE_HI,
          (KERNEL_BASE_LO + IRET_OFFSET) >>> 0,
        );
        b.cpl(0);
        if (toggleEvery) toggle();
        iretq();
        b.cpl(3);
      }
    }
    const info = x.info[i]!;
    b.insn(hi, lo, infoSize(info), infoClass(info), info & INFO_ZLC ? InsnFlag.ZeroLengthCall : 0);
  }
  for (; e < m; e++) {
    if (x.evKind[e] === ExecEvent.Cpl) cpl = x.evA[e]!;
    if (x.evKind[e] === ExecEvent.End && cpl === 0) for (let k = 0; k < atEnd; k++) toggle();
    copyEvent(b, x, e);
  }
  return { execution: b.build(), faults, toggles };
}

function copyEvent(b: ExecBuilder, x: Execution, e: number): void {
  b.event(
    x.evKind[e]! as ExecEvent,
    x.evA[e]!,
    x.evB[e]!,
    x.evHi[e]!,
    x.evLo[e]!,
    x.evToHi[e]!,
    x.evToLo[e]!,
  );
}
