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
 * 2. **Demand-paging faults.** The first fetch from a code page, and the first load
 *    or store to a data page, that is not yet mapped is a page fault (#PF, vector 14,
 *    a fault: the instruction has not retired): `exception` from the instruction to
 *    the stand-in kernel, which returns to it. With User-only tracing that is FUP(ip),
 *    TIP.PGD, TIP.PGE(ip), as the captures show at the entry point (the text page is
 *    mapped by exec but not present; the kernel read the ELF headers through the page
 *    cache, not through the mapping). With the program's segments
 *    ({@link PerfEnvOptions.segments}) the faults follow Linux's demand paging:
 *    - a read fault (fetch or load) in a file mapping maps the neighbouring pages
 *      too (fault-around: the 64 KiB-aligned window of 16 pages, from the mapping's
 *      start if later, read-only), so only the first fetch in each window faults;
 *    - a store to a private file page faults once more (copy on write), also after
 *      a load mapped it; .bss beyond the file is anonymous: a load maps the zero
 *      page, and the first store faults again; the page holding the end of the file
 *      data of a segment with .bss is present (exec zeroed its tail);
 *    - addresses outside the segments never fault (see below).
 *    Data touches come from lackey's data lines (LackeyOptions.dataPages). Measured:
 *    HASE control_flow (Skylake 2018-04 and Broadwell 2018-05) faults at the entry
 *    point and at `call *(%rbx)` reading .init_array, model and capture alike;
 *    loopy only at the entry point; DynamoRIO's `hello` (static glibc, Skylake-SP): 19
 *    faults in the capture and 19 in the model (9 code, 10 data), 16 at the same
 *    instructions, the first 13 in the same order; the other 3 are in functions
 *    glibc picks by CPUID, which valgrind changes (the capture's AVX-512 memset).
 *    An instruction that straddles two pages faults for each page not yet touched.
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
 * **Kernel tracing** (`--env perf-kernel`, `perf record -e intel_pt//k`; `perf-all`,
 * `//uk`): the same transformation, traced with OS = 1 (and User = 0 for perf-kernel).
 * Then exec's enable is at CPL 0 with PacketEn = 1 (a PSB+ with MODE.Exec and the
 * kernel's FUP), every kernel visit (exec's return, each page fault and system call)
 * is a TIP.PGE into the stand-in kernel's one instruction and a TIP.PGD out of it,
 * and the program's own code writes nothing. The kernel is that stand-in: its real
 * code paths (the syscall handler, the fault handler, exec itself) are not there.
 *
 * What it cannot model:
 * - **Memory outside the program's segments.** Under valgrind the stack, the heap
 *   (brk) and mmap'ed memory are at valgrind's addresses with its own initial stack,
 *   so their first touches say nothing about the real run: they never fault in the
 *   model. (No capture above needs them: HASE's programs fault nowhere else, and
 *   hello's 3 unmatched faults are in code valgrind makes glibc pick differently.)
 *   Without segments (an execution file), every code page faults once and data never.
 * - **The page cache.** Fault-around maps only pages already in the page cache; the
 *   model assumes the whole program file is (as after a first run or a build).
 * - **Pages present from the start** other than the .bss page: pages the kernel
 *   touched during exec are only known through {@link PerfEnvOptions.presentPages}.
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
/** See {@link PerfEnvOptions.kernelTicks}. */
const KERNEL_TICKS = 2000;
/** 2^20: pages of 4 KiB per 2^32 bytes. */
const PAGES_PER_HI = 0x100000;
/** Linux's fault_around_bytes default, 64 KiB, in pages. */
const FAULT_AROUND_PAGES = 16;
/** Pages per page table (one PMD entry, 2 MiB): fault-around stays inside one. */
const PTRS_PER_PTE = 512;
/** Page states: mapped read-only (a store faults), mapped writable. Absent pages are not in the map. */
const READ_ONLY = 1;
const WRITABLE = 2;

/**
 * One loaded segment of the program (an ELF PT_LOAD, at its address in the
 * execution), in bytes: [start, fileEnd) comes from the file, [fileEnd, end) is zero
 * fill (.bss). Linux maps the file part as one mapping (the page holding fileEnd
 * included: exec zeroes its tail, so that page is present and written from the start)
 * and the rest as anonymous memory.
 */
export interface LoadedSegment {
  start: number;
  fileEnd: number;
  end: number;
}

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
  /**
   * TSC ticks each kernel visit takes (a system call, a page fault; default 2,000:
   * about 1.6 MTC periods at MTCFreq 3, where the HASE Skylake captures show 1 to 20
   * and DynamoRIO's hello 5 to 86). In cycle-accurate mode it gives the TIP.PGE back
   * to user space its CYC, as every one in hello has.
   */
  kernelTicks?: number;
  /** Fault on the first fetch from each code page. Default true. */
  codeFaults?: boolean;
  /** Code pages (address >> 12) present from the start: no fault on them. */
  presentPages?: Iterable<number>;
  /**
   * The program's segments. With them, faults follow Linux's mappings: only
   * addresses inside a segment fault (the stack, heap and vDSO do not), and a read
   * fault in a file mapping maps its neighbours ({@link faultAroundPages}). Without
   * them every code page faults once and data pages never.
   */
  segments?: readonly LoadedSegment[];
  /**
   * First loads and stores of data pages (LackeyResult.dataTouches), indexed by the
   * input's instructions: each may fault (needs {@link segments}).
   */
  dataTouches?: { insn: readonly number[]; page: readonly number[]; write: readonly number[] };
  /** Pages a read fault in a file mapping maps (fault_around_bytes / 4096; default 16, 1 = none). */
  faultAroundPages?: number;
}

/** What {@link applyPerfEnv} added. */
export interface PerfEnvResult {
  execution: Execution;
  /** Page faults added, each `[instruction index in the input, page address]`, in order. */
  faults: [number, number][];
  /** How many of them a data access made (the rest: instruction fetches). */
  dataFaults: number;
  /** TraceEn toggles added. */
  toggles: number;
}

/**
 * The pages of the program's mappings and their state, as Linux's demand paging
 * changes it: {@link touch} says whether an access faults, and maps what the fault maps.
 */
class PageTable {
  private readonly state = new Map<number, number>();
  /** Each segment's mappings in pages: [start, fileEnd) file-backed, [fileEnd, end) anonymous. */
  private readonly maps: { start: number; end: number; file: boolean }[] = [];

  constructor(
    readonly segments: readonly LoadedSegment[] | undefined,
    private readonly faultAround: number,
    present: Iterable<number>,
  ) {
    for (const p of present) this.state.set(p, WRITABLE);
    for (const s of segments ?? []) {
      const first = Math.floor(s.start / 4096);
      const fileEnd = Math.ceil(s.fileEnd / 4096);
      const end = Math.ceil(s.end / 4096);
      if (fileEnd > first) this.maps.push({ start: first, end: fileEnd, file: true });
      if (end > fileEnd) this.maps.push({ start: fileEnd, end, file: false });
      // exec zeroes the .bss part of the last file page: present and written.
      if (s.end > s.fileEnd && s.fileEnd % 4096 !== 0) this.state.set(Math.floor(s.fileEnd / 4096), WRITABLE);
    }
  }

  /** Whether a load (`write` false) or store to `page` faults; if it does, the fault's mapping is done. */
  touch(page: number, write: boolean): boolean {
    const now = this.state.get(page);
    if (now === WRITABLE || (now === READ_ONLY && !write)) return false;
    if (this.segments === undefined) {
      // No mappings known: every page faults once (the code-only model).
      this.state.set(page, WRITABLE);
      return true;
    }
    const map = this.maps.find((m) => page >= m.start && page < m.end);
    if (map === undefined) return false;
    if (write) this.state.set(page, WRITABLE);
    else if (map.file) this.mapAround(page, map);
    // An anonymous page read first maps the zero page: a store faults again.
    else this.state.set(page, READ_ONLY);
    return true;
  }

  /**
   * A read fault in a file mapping: Linux (do_fault_around) maps the absent pages of
   * the aligned window of faultAround pages holding `page` (from the mapping's start
   * if that is later, for faultAround pages), inside the mapping and the page table,
   * read-only (a private mapping is copied on the first store). Pages not in the page
   * cache are not mapped; for a program just read they all are.
   */
  private mapAround(page: number, map: { start: number; end: number }): void {
    const n = this.faultAround;
    const table = page - (page % PTRS_PER_PTE);
    const from = Math.max(page - (page % n), map.start, table);
    const to = Math.min(from + n, map.end, table + PTRS_PER_PTE);
    for (let p = from; p < to; p++) if (!this.state.has(p)) this.state.set(p, READ_ONLY);
    this.state.set(page, READ_ONLY);
  }
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
  const kernelTicks = options.kernelTicks ?? KERNEL_TICKS;
  const pages = new PageTable(
    options.segments,
    Math.max(1, options.faultAroundPages ?? FAULT_AROUND_PAGES),
    options.presentPages ?? [],
  );
  const touches = options.segments === undefined ? undefined : options.dataTouches;
  const faults: [number, number][] = [];
  let dataFaults = 0;
  let toggles = 0;
  const toggle = (): void => {
    b.wrmsr(MSR_RTIT_CTL, options.ctlHi, (options.ctlLo & ~1) >>> 0);
    b.wrmsr(MSR_RTIT_CTL, options.ctlHi, options.ctlLo);
    toggles++;
  };
  const iretq = (): void => {
    b.insn(KERNEL_BASE_HI, (KERNEL_BASE_LO + IRET_OFFSET) >>> 0, IRET_SIZE, IRET_CLASS);
  };
  /** A #PF at the instruction hi:lo (it has not retired), handled in the kernel, which returns to it. */
  const fault = (i: number, hi: number, lo: number, page: number): void => {
    faults.push([i, page * 4096]);
    b.transfer(ExecEvent.Exception, PAGE_FAULT, hi, lo, KERNEL_BASE_HI, (KERNEL_BASE_LO + IRET_OFFSET) >>> 0);
    b.cpl(0);
    if (kernelTicks > 0) b.ticks(kernelTicks);
    if (toggleEvery) toggle();
    iretq();
    b.cpl(3);
  };

  const n = x.insnCount;
  const m = x.eventCount;
  let e = 0;
  let t = 0;
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
      if (kernelTicks > 0) b.ticks(kernelTicks);
      if (toggleEvery) toggle();
    } else {
      if (codeFaults) {
        // The pages of the instruction's first and last byte (one or two).
        const first = hi * PAGES_PER_HI + (lo >>> 12);
        const end = lo + infoSize(x.info[i]!) - 1;
        const last = first + (Math.floor(end / 4096) - (lo >>> 12));
        for (let page = first; page <= last; page++) if (pages.touch(page, false)) fault(i, hi, lo, page);
      }
      if (touches !== undefined) {
        // The instruction's first loads and stores, in the order it made them.
        for (; t < touches.insn.length && touches.insn[t]! < i; t++) {}
        for (; t < touches.insn.length && touches.insn[t] === i; t++) {
          const page = touches.page[t]!;
          if (pages.touch(page, touches.write[t] === 1)) {
            fault(i, hi, lo, page);
            dataFaults++;
          }
        }
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
  return { execution: b.build(), faults, dataFaults, toggles };
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
