/**
 * Executions from valgrind's lackey: a real program's instruction stream turned into
 * an {@link Execution} for the packet generator.
 *
 * Input: the log of
 *
 * ```sh
 * valgrind -v -v --trace-signals=yes --tool=lackey --trace-mem=yes --log-file=run.log prog
 * ```
 *
 * (see lackey-log.ts for the lines used and why). Every `I  addr,size` line is
 * classified by ptkit's x86 decoder from the program's code bytes, which the caller
 * supplies as a {@link CodeSource} (an image of the ELF objects the log says are
 * mapped; the caller maps each one when {@link LackeyOptions.onObject} reports it).
 * Branch outcomes follow from consecutive IPs, as the execution format defines.
 *
 * The kernel, which valgrind does not show, is the one-instruction stand-in of
 * lackey-kernel.ts, at CPL 0 (user code runs at CPL 3):
 *
 * - SYSCALL (and INT n): `insn syscall`, `cpl 0`, the kernel's SYSRETQ (IRETQ when user
 *   code does not go on after the SYSCALL: signal delivery, sigreturn, exit), `cpl 3`.
 * - A signal delivered while user code runs (`push_signal_frame`, resuming at R):
 *   an `interrupt` (asynchronous signals) or `exception` (SIGSEGV, SIGILL, SIGFPE,
 *   SIGBUS, SIGTRAP) from R to the kernel's IRETQ, then the handler. An instruction
 *   that faulted did not retire, so it is left out. Lackey buffers up to four
 *   instruction lines and loses them when an instruction faults; the straight-line
 *   instructions between the last one logged and the fault are decoded back in.
 * - REP string instructions are logged once per iteration; they retire once.
 * - UD0/1/2 raise #UD: an `exception` (vector 6) instead of the instruction.
 * - XBEGIN: valgrind runs no transactions, so it goes to its fallback: a `tsx-abort`.
 * - The last SYSCALL (exit_group) ends in the kernel: `cpl 0`, `end` at the kernel.
 *
 * With {@link LackeyOptions.dataPages}, the data lines (` L`, ` S`, ` M`) give the
 * first load and the first store to each 4 KiB page, with the instruction that made
 * it ({@link PageTouches}; perf-env.ts turns them into page faults). An access that
 * crosses a page boundary touches both pages.
 *
 * Without `--trace-signals=yes`, a jump the code cannot explain is taken as an
 * interrupt at the instruction's fall-through (or direct target) and counted in
 * {@link LackeyStats.guessed}. Limits: one thread (lackey does not say which thread
 * ran an instruction); no self-modifying or JIT code (the bytes come from the files).
 *
 * Problems are reported with the log's line number and byte offset. An instruction
 * with no code mapped, or whose length disagrees with the log, is fatal (nothing
 * after it could be classified): conversion stops there and the execution so far is
 * returned with the error. Malformed lines are skipped and reported.
 *
 * The hot path (one instruction line) allocates nothing: IPs travel as halves and
 * decoded instructions are cached by IP ({@link InsnCache}).
 */

import type { Diagnostic } from "../../base/diagnostic.js";
import { hex64, splitBigInt, toBigInt } from "../../base/halves.js";
import { InsnCache } from "../../isa/cache.js";
import { decodeInsn, MAX_INSN_LENGTH } from "../../isa/decode.js";
import { CofiType, cofiType, ExecMode, InsnClass, InsnFlag, InsnInfo } from "../../isa/types.js";
import {
  IRET_CLASS,
  IRET_OFFSET,
  IRET_SIZE,
  KERNEL_BASE_HI,
  KERNEL_BASE_LO,
  SYSRET_CLASS,
  SYSRET_OFFSET,
  SYSRET_SIZE,
} from "./lackey-kernel.js";
import { LackeyLogScanner, type LackeyLogSink, type LinePos } from "./lackey-log.js";
import { ExecBuilder, ExecEvent, type Execution } from "./types.js";

/** Where the code bytes come from: `Image.read` of ptkit/image fits. */
export interface CodeSource {
  /** Copy up to `size` bytes at ipHi:ipLo into `out`; the count, or < 0 when nothing is mapped there. */
  read(ipHi: number, ipLo: number, out: Uint8Array, size: number): number;
}

export interface LackeyOptions {
  /** The program's code. */
  code: CodeSource;
  /**
   * Called when the log says an ELF object is mapped with load bias `bias` (PT_LOAD
   * segments at p_vaddr + bias): map it into `code` before the next instruction.
   */
  onObject?: (path: string, bias: bigint) => void;
  /** CR3 of the process (default {@link DEFAULT_CR3}). */
  cr3?: bigint;
  /** 32-bit valgrind (x86) logs: ExecMode.Bits32. Default 64-bit. */
  mode?: ExecMode;
  /** Keep the first load and store to each data page ({@link LackeyResult.dataTouches}). Default false. */
  dataPages?: boolean;
  /** Most problems kept in {@link LackeyResult.issues} (default 100; all are counted). */
  maxIssues?: number;
}

/** The CR3 given to the process unless {@link LackeyOptions.cr3} says otherwise. */
export const DEFAULT_CR3 = 0x3d4e5000n;

/** A problem in the log: a base {@link Diagnostic} at the line's byte offset, and the line's number. */
export interface LackeyIssue extends Diagnostic {
  /** Line number (1-based). */
  readonly line: number;
}

export interface LackeyStats {
  /** Log lines. */
  lines: number;
  /** Instruction lines. */
  insnLines: number;
  /** User instructions in the execution (REP iterations merged, faulting ones left out). */
  insns: number;
  /** Kernel visits (system calls, signals, exceptions). */
  kernelEntries: number;
  /** SYSCALL and INT n instructions. */
  syscalls: number;
  /** Signals delivered (from `--trace-signals=yes`). */
  signals: number;
  /** Instructions that faulted (left out; an exception instead). */
  faults: number;
  /** Logged REP iterations merged into their instruction. */
  repIterations: number;
  /** Instructions lackey lost before a fault, decoded back in. */
  recovered: number;
  /** Jumps nothing explained, taken as interrupts. */
  guessed: number;
  /** ELF objects the log reported. */
  objects: number;
  /** Problems (malformed lines, guesses, the fatal error). */
  issues: number;
}

/**
 * First touches of data pages, in execution order: touch k is instruction `insn[k]`
 * (its index in the execution) loading from (`write[k]` 0) or storing to (1) page
 * `page[k]` (address / 4096) for the first time. At most two per page.
 */
export interface PageTouches {
  insn: number[];
  page: number[];
  write: number[];
}

export interface LackeyResult {
  execution: Execution;
  /** With {@link LackeyOptions.dataPages}: the first touches of data pages. */
  dataTouches: PageTouches | undefined;
  stats: LackeyStats;
  /** The first {@link LackeyOptions.maxIssues} problems. */
  issues: LackeyIssue[];
  /** The error that stopped the conversion early, if one did. */
  fatal: LackeyIssue | undefined;
}

/** Signals a faulting instruction raises, and the exception vector each stands for. */
const FAULT_VECTOR: Readonly<Record<number, number>> = {
  4: 6, // SIGILL: #UD
  5: 1, // SIGTRAP: #DB
  7: 17, // SIGBUS: #AC
  8: 0, // SIGFPE: #DE
  11: 14, // SIGSEGV: #PF
};
/** Vector given to asynchronous signals: the first external interrupt vector. */
const INTERRUPT_VECTOR = 32;
/** Most instructions lackey can lose before a fault (its buffer holds four events). */
const MAX_LOST = 8;
const TWO_32 = 4294967296;
/** 2^20: pages of 4 KiB per 2^32 bytes. */
const PAGES_PER_HI = 0x100000;
/** Bits of {@link LackeyConverter}'s page map: a load seen, a store seen. */
const LOADED = 1;
const STORED = 2;

export class LackeyConverter implements LackeyLogSink {
  private readonly scanner: LackeyLogScanner;
  private readonly builder = new ExecBuilder();
  private readonly cache = new InsnCache({ maxEntries: 1 << 16 });
  private readonly info = new InsnInfo();
  private readonly bytes = new Uint8Array(MAX_INSN_LENGTH);
  private readonly views: Uint8Array[] = [];
  private readonly code: CodeSource;
  private readonly onObject: ((path: string, bias: bigint) => void) | undefined;
  private readonly mode: ExecMode;
  private readonly maxIssues: number;
  private readonly issues: LackeyIssue[] = [];
  private fatal: LackeyIssue | undefined;
  /** With dataPages: what was seen of each page (LOADED | STORED), and the touches so far. */
  private readonly pages: Map<number, number> | undefined;
  private readonly touches: PageTouches | undefined;
  /** First touches by the held instruction, given its index when it is written. */
  private pendingTouches = 0;
  private readonly stats: LackeyStats = {
    lines: 0,
    insnLines: 0,
    insns: 0,
    kernelEntries: 0,
    syscalls: 0,
    signals: 0,
    faults: 0,
    repIterations: 0,
    recovered: 0,
    guessed: 0,
    objects: 0,
    issues: 0,
  };

  /** The last instruction, held back until what follows it is known. */
  private held = false;
  private hIpHi = 0;
  private hIpLo = 0;
  private hSize = 0;
  private hClass: InsnClass = InsnClass.Other;
  private hFlags = 0;
  private hTgtHi = 0;
  private hTgtLo = 0;
  /** Its fall-through address. */
  private hNextHi = 0;
  private hNextLo = 0;
  private hLine = 0;

  constructor(options: LackeyOptions) {
    this.code = options.code;
    this.onObject = options.onObject;
    this.mode = options.mode ?? ExecMode.Bits64;
    this.maxIssues = options.maxIssues ?? 100;
    this.scanner = new LackeyLogScanner(this, options.dataPages ?? false);
    if (options.dataPages) {
      this.pages = new Map();
      this.touches = { insn: [], page: [], write: [] };
    }
    for (let n = 0; n <= MAX_INSN_LENGTH; n++) this.views.push(this.bytes.subarray(0, n));
    const cr3 = splitBigInt(options.cr3 ?? DEFAULT_CR3, { hi: 0, lo: 0 });
    this.builder.cpl(3).cr3(cr3.hi, cr3.lo);
    if (this.mode !== ExecMode.Bits64) this.builder.mode(this.mode);
  }

  /** Convert the next bytes of the log. */
  push(chunk: Uint8Array): void {
    if (this.fatal === undefined) this.scanner.push(chunk);
  }

  /** The log is complete: the execution and what was found. */
  finish(): LackeyResult {
    if (this.fatal === undefined) this.scanner.end();
    this.flushAtEnd();
    if (this.pendingTouches > 0) {
      // Their instruction was never written (it faulted last, or conversion stopped).
      const t = this.touches!;
      const keep = t.insn.length - this.pendingTouches;
      t.insn.length = keep;
      t.page.length = keep;
      t.write.length = keep;
      this.pendingTouches = 0;
    }
    this.stats.lines = this.scanner.lines;
    return {
      execution: this.builder.build(),
      dataTouches: this.touches,
      stats: { ...this.stats },
      issues: this.issues,
      fatal: this.fatal,
    };
  }

  // LackeyLogSink

  insn(ipHi: number, ipLo: number, size: number, pos: LinePos): void {
    if (this.fatal !== undefined) return;
    this.stats.insnLines++;
    if (this.held && ipHi === this.hIpHi && ipLo === this.hIpLo && cofiType(this.hClass) === CofiType.None) {
      this.stats.repIterations++;
      return;
    }
    if (!this.classify(ipHi, ipLo, size, pos)) return;
    if (this.held) this.release(ipHi, ipLo, pos);
    this.hold(ipHi, ipLo, size, pos);
  }

  object(path: string, biasHi: number, biasLo: number): void {
    this.stats.objects++;
    // Code may now be different at addresses seen before (dlclose, then dlopen).
    this.cache.clear();
    this.onObject?.(path, toBigInt(biasHi, biasLo));
  }

  signal(signo: number, resumeHi: number, resumeLo: number, pos: LinePos): void {
    if (this.fatal !== undefined) return;
    this.stats.signals++;
    if (!this.held) {
      this.issue(pos, `signal ${signo} before any instruction: ignored`);
      return;
    }
    // A system call completed; the kernel goes to the handler, which the next line shows.
    if (this.entersKernel()) return;
    const vector = FAULT_VECTOR[signo];
    const sync = vector !== undefined;
    const kind = sync ? ExecEvent.Exception : ExecEvent.Interrupt;
    const v = sync ? vector : INTERRUPT_VECTOR;
    const atHeld = resumeHi === this.hIpHi && resumeLo === this.hIpLo;
    if (atHeld && (sync || cofiType(this.hClass) === CofiType.None)) {
      // The held instruction faulted, or an interrupted REP instruction resumes: not retired.
      if (sync) this.stats.faults++;
      this.held = false;
      this.toKernel(kind, v, resumeHi, resumeLo);
      return;
    }
    if (this.goesTo(resumeHi, resumeLo)) {
      this.emitHeld();
    } else if (!this.recoverTo(resumeHi, resumeLo)) {
      this.issue(
        pos,
        `signal ${signo} resumes at 0x${hex(resumeHi, resumeLo)}, where the instruction at line ${this.hLine} cannot go`,
      );
      this.guessTransfer(kind, v);
      return;
    }
    if (sync) this.stats.faults++;
    this.toKernel(kind, v, resumeHi, resumeLo);
  }

  data(write: boolean, hi: number, lo: number, size: number): void {
    const pages = this.pages;
    if (pages === undefined || this.fatal !== undefined || size === 0) return;
    const bit = write ? STORED : LOADED;
    const first = hi * PAGES_PER_HI + (lo >>> 12);
    const last = first + Math.floor(((lo & 0xfff) + size - 1) / 4096);
    for (let page = first; page <= last; page++) {
      const seen = pages.get(page) ?? 0;
      if (seen & bit) continue;
      pages.set(page, seen | bit);
      // The instruction's index is known when it is written (emitHeld).
      const t = this.touches!;
      t.insn.push(-1);
      t.page.push(page);
      t.write.push(write ? 1 : 0);
      this.pendingTouches++;
    }
  }

  malformed(reason: string, pos: LinePos): void {
    this.issue(pos, reason);
  }

  // Conversion

  /** Decode the instruction of an I line into this.info; false (and stop) if that fails. */
  private classify(ipHi: number, ipLo: number, size: number, pos: LinePos): boolean {
    const info = this.info;
    let length = this.cache.probe(0, ipHi, ipLo, this.mode, info);
    if (length === 0) {
      const n = this.code.read(ipHi, ipLo, this.bytes, MAX_INSN_LENGTH);
      if (n <= 0) {
        this.stop(
          pos,
          `no code is mapped at 0x${hex(ipHi, ipLo)} (was the log written with valgrind -v -v?)`,
        );
        return false;
      }
      length = this.cache.lookup(0, ipHi, ipLo, this.mode, this.views[n]!, 0, info);
    }
    if (length === size) return true;
    const what = length > 0 ? `${length} bytes long` : "no valid instruction";
    this.stop(pos, `the code at 0x${hex(ipHi, ipLo)} is ${what}, but the log says ${size} bytes`);
    return false;
  }

  /** Hold the instruction just classified. */
  private hold(ipHi: number, ipLo: number, size: number, pos: LinePos): void {
    const info = this.info;
    this.held = true;
    this.hIpHi = ipHi;
    this.hIpLo = ipLo;
    this.hSize = size;
    this.hClass = info.iclass;
    this.hFlags = info.flags & InsnFlag.ZeroLengthCall;
    this.hTgtHi = info.targetHi;
    this.hTgtLo = info.targetLo;
    const lo = ipLo + size;
    this.hNextLo = lo >>> 0;
    this.hNextHi = lo >= TWO_32 ? (ipHi + 1) >>> 0 : ipHi;
    this.hLine = pos.line;
  }

  /** The next instruction is at ipHi:ipLo: write the held one and what led there. */
  private release(ipHi: number, ipLo: number, pos: LinePos): void {
    if (this.hClass === InsnClass.Ud) {
      // #UD: the instruction does not retire; the kernel sends SIGILL to the next IP.
      this.stats.faults++;
      this.held = false;
      this.toKernel(ExecEvent.Exception, 6, this.hIpHi, this.hIpLo);
      return;
    }
    if (this.entersKernel()) {
      this.emitHeld();
      this.stats.kernelEntries++;
      this.builder.cpl(0);
      if (ipHi === this.hNextHi && ipLo === this.hNextLo)
        this.kernelInsn(SYSRET_OFFSET, SYSRET_SIZE, SYSRET_CLASS);
      else this.kernelInsn(IRET_OFFSET, IRET_SIZE, IRET_CLASS);
      this.builder.cpl(3);
      return;
    }
    if (this.goesTo(ipHi, ipLo)) {
      const aborted = this.hClass === InsnClass.Xbegin && !(ipHi === this.hNextHi && ipLo === this.hNextLo);
      this.emitHeld();
      // Valgrind runs no transaction: XBEGIN goes straight to its fallback, an abort.
      if (aborted) this.builder.transfer(ExecEvent.TsxAbort, 0, this.hNextHi, this.hNextLo, ipHi, ipLo);
      return;
    }
    // Nothing explains the jump (a signal without --trace-signals): an interrupt.
    this.issue(
      pos,
      `0x${hex(ipHi, ipLo)} cannot follow the instruction at line ${this.hLine}: taken as an interrupt`,
    );
    this.guessTransfer(ExecEvent.Interrupt, INTERRUPT_VECTOR);
  }

  /**
   * Execution went where the held instruction cannot go, for a reason not in the log:
   * write it, then `kind` where it would have gone (its direct target, else its
   * fall-through; a conditional branch is taken as not taken).
   */
  private guessTransfer(kind: ExecEvent, vector: number): void {
    this.stats.guessed++;
    const direct = this.hClass === InsnClass.Jump || this.hClass === InsnClass.Call;
    this.emitHeld();
    if (direct) this.toKernel(kind, vector, this.hTgtHi, this.hTgtLo);
    else this.toKernel(kind, vector, this.hNextHi, this.hNextLo);
  }

  /** Whether the held instruction enters the kernel itself (SYSCALL, SYSENTER, INT n). */
  private entersKernel(): boolean {
    return this.hClass === InsnClass.Syscall || this.hClass === InsnClass.Interrupt;
  }

  /** Whether the held instruction can continue at ipHi:ipLo. */
  private goesTo(ipHi: number, ipLo: number): boolean {
    const next = ipHi === this.hNextHi && ipLo === this.hNextLo;
    const target = ipHi === this.hTgtHi && ipLo === this.hTgtLo;
    switch (this.hClass) {
      case InsnClass.CondBranch:
      case InsnClass.Xbegin:
        return next || target;
      case InsnClass.Jump:
      case InsnClass.Call:
        return target;
    }
    return cofiType(this.hClass) === CofiType.None ? next : true;
  }

  /**
   * Lackey lost the last instruction lines before a fault: write the held instruction
   * and the straight line of at most {@link MAX_LOST} non-branches from where it went
   * (its fall-through or direct target) to the faulting IP. Returns false, writing
   * nothing, when there is no such line.
   */
  private recoverTo(ipHi: number, ipLo: number): boolean {
    const iclass = this.hClass;
    const none = cofiType(iclass) === CofiType.None;
    const viaNext = none || iclass === InsnClass.CondBranch;
    const viaTarget =
      iclass === InsnClass.CondBranch || iclass === InsnClass.Jump || iclass === InsnClass.Call;
    let n = viaNext ? this.straightLine(this.hNextHi, this.hNextLo, ipHi, ipLo) : -1;
    let fromTarget = false;
    if (n < 0 && viaTarget) {
      n = this.straightLine(this.hTgtHi, this.hTgtLo, ipHi, ipLo);
      fromTarget = true;
    }
    if (n < 0) return false;
    this.emitHeld();
    let hi = fromTarget ? this.hTgtHi : this.hNextHi;
    let lo = fromTarget ? this.hTgtLo : this.hNextLo;
    const info = this.info;
    for (let k = 0; k < n; k++) {
      this.decodeAt(hi, lo);
      this.builder.insn(hi, lo, info.length, info.iclass, info.flags & InsnFlag.ZeroLengthCall);
      this.stats.insns++;
      const next = lo + info.length;
      lo = next >>> 0;
      if (next >= TWO_32) hi = (hi + 1) >>> 0;
    }
    this.stats.recovered += n;
    return true;
  }

  /** How many non-branches lead from `from` straight to `to` (at most MAX_LOST), or -1. */
  private straightLine(fromHi: number, fromLo: number, toHi: number, toLo: number): number {
    let hi = fromHi;
    let lo = fromLo;
    let n = 0;
    while (!(hi === toHi && lo === toLo)) {
      if (n === MAX_LOST || !this.decodeAt(hi, lo) || cofiType(this.info.iclass) !== CofiType.None) return -1;
      const next = lo + this.info.length;
      lo = next >>> 0;
      if (next >= TWO_32) hi = (hi + 1) >>> 0;
      n++;
    }
    return n;
  }

  /** Decode the instruction at ipHi:ipLo into this.info; false if there is none. */
  private decodeAt(ipHi: number, ipLo: number): boolean {
    const n = this.code.read(ipHi, ipLo, this.bytes, MAX_INSN_LENGTH);
    return n > 0 && decodeInsn(this.views[n]!, 0, ipHi, ipLo, this.mode, this.info) > 0;
  }

  private emitHeld(): void {
    this.held = false;
    if (this.pendingTouches > 0) {
      // Touches of an instruction that did not retire (a fault) go with the next one written.
      const at = this.builder.insnCount;
      const insn = this.touches!.insn;
      for (let k = insn.length - this.pendingTouches; k < insn.length; k++) insn[k] = at;
      this.pendingTouches = 0;
    }
    this.builder.insn(this.hIpHi, this.hIpLo, this.hSize, this.hClass, this.hFlags);
    this.stats.insns++;
    if (this.hClass === InsnClass.Syscall || this.hClass === InsnClass.Interrupt) this.stats.syscalls++;
    // Their operands are not in the log (valgrind cannot run either in user code anyway).
    if (this.hClass === InsnClass.PtWrite) this.builder.ptw(4, 0, 0);
    else if (this.hClass === InsnClass.Mwait) this.builder.mwait(0, 0);
  }

  /** An interrupt or exception at fromHi:fromLo, handled by the kernel's IRETQ. */
  private toKernel(kind: ExecEvent, vector: number, fromHi: number, fromLo: number): void {
    this.stats.kernelEntries++;
    this.builder.transfer(kind, vector, fromHi, fromLo, KERNEL_BASE_HI, (KERNEL_BASE_LO + IRET_OFFSET) >>> 0);
    this.builder.cpl(0);
    this.kernelInsn(IRET_OFFSET, IRET_SIZE, IRET_CLASS);
    this.builder.cpl(3);
  }

  private kernelInsn(offset: number, size: number, iclass: InsnClass): void {
    this.builder.insn(KERNEL_BASE_HI, (KERNEL_BASE_LO + offset) >>> 0, size, iclass);
  }

  /** At the end of the log: the held instruction, and the kernel if it entered it for good. */
  private flushAtEnd(): void {
    if (!this.held) return;
    if (this.hClass === InsnClass.Ud && this.fatal === undefined) {
      this.stats.faults++;
      this.held = false;
      this.stats.kernelEntries++;
      const iret = (KERNEL_BASE_LO + IRET_OFFSET) >>> 0;
      this.builder.transfer(ExecEvent.Exception, 6, this.hIpHi, this.hIpLo, KERNEL_BASE_HI, iret);
      this.builder.cpl(0).end(KERNEL_BASE_HI, iret);
      return;
    }
    const enters = this.entersKernel();
    this.emitHeld();
    if (enters && this.fatal === undefined) {
      this.stats.kernelEntries++;
      this.builder.cpl(0).end(KERNEL_BASE_HI, KERNEL_BASE_LO);
    }
  }

  private issue(pos: LinePos, message: string): void {
    this.stats.issues++;
    if (this.issues.length < this.maxIssues)
      this.issues.push({ line: pos.line, offset: pos.offset, message });
  }

  private stop(pos: LinePos, message: string): void {
    this.issue(pos, message);
    this.fatal = { line: pos.line, offset: pos.offset, message };
  }
}

/** Convert a whole lackey log held in memory. */
export function convertLackey(log: Uint8Array, options: LackeyOptions): LackeyResult {
  const converter = new LackeyConverter(options);
  converter.push(log);
  return converter.finish();
}

function hex(hi: number, lo: number): string {
  return hex64(hi, lo, 1);
}
