/**
 * perf script's branch lines from a decode's instructions and events: which branch an
 * instruction took shows only where execution goes on (the next instruction, or an
 * event), and tracing starting, stopping and interrupts are branches of their own (`tr
 * strt`, `tr end  syscall`, `hw int`, ...). One home for these rules, which both
 * decodes of `ptkit perf` follow: the general one (perf-stream.ts decodePerfStream) and
 * the walk of the decision graph (perf-graph.ts).
 */
import { doubleFields } from "../base/halves.js";
import { EventType, type PtEvent } from "../event/index.js";
import { FlowClass } from "../flow/index.js";
import { InsnClass } from "../isa/index.js";

const FLAGS: Record<number, string> = {
  [FlowClass.Call]: "call",
  [FlowClass.Return]: "return",
  [FlowClass.Jump]: "jmp",
  [FlowClass.CondJump]: "jcc",
  [FlowClass.FarCall]: "syscall",
  [FlowClass.FarReturn]: "sysret",
  [FlowClass.FarJump]: "jmp",
};

/**
 * perf script's flags for a taken branch of FlowClass `fclass`: a far transfer by the
 * instruction (`iclass`, the isa layer's), as perf's instruction decoder names it
 * (INTEL_PT_OP_IRET: iret, SYSRET/SYSEXIT: sysret, SYSCALL/SYSENTER: syscall, INT: int,
 * far CALL/RET: call/return); undefined: not a branch perf shows.
 */
export function branchFlags(fclass: number, iclass: number): string | undefined {
  if (fclass === FlowClass.FarCall || fclass === FlowClass.FarReturn) {
    switch (iclass) {
      case InsnClass.Iret:
        return "iret";
      case InsnClass.Sysret:
        return "sysret";
      case InsnClass.Syscall:
        return "syscall";
      case InsnClass.Interrupt:
        return "int";
      case InsnClass.FarCall:
        return "call";
      case InsnClass.FarReturn:
        return "return";
    }
  }
  return FLAGS[fclass];
}

/**
 * A branch line: perf script's `flags`, from and to (0: none). `taken` says it is the
 * branch of the last instruction (execution went on elsewhere), not an event's.
 */
export type BranchLine = (
  flags: string,
  fromHi: number,
  fromLo: number,
  toHi: number,
  toLo: number,
  taken: boolean,
) => void;

/** The branch lines of one decode, handed to `line`. */
export class BranchLines {
  /** The branch the last instruction may have taken (its FlowClass; 0: none) and its flags. */
  branchClass = 0;
  branchName = "";
  /** Where that instruction was, and its fall-through. */
  fromHi = 0;
  fromLo = 0;
  fallHi = 0;
  fallLo = 0;

  constructor(
    private readonly line: BranchLine,
    /** Jumps taken have lines (false: `--calls`, perf's --itrace=cr, which prints none). */
    private readonly jumps = true,
  ) {
    // Address halves: most are 2^31 or more.
    doubleFields(this, ["fromHi", "fromLo", "fallHi", "fallLo"]);
  }

  /** The last instruction ran at hi:lo, `size` bytes, of FlowClass `fclass` (InsnClass `iclass`). */
  leave(hi: number, lo: number, size: number, fclass: number, iclass: number): void {
    const name = branchFlags(fclass, iclass);
    this.branchClass = name ? fclass : 0;
    this.branchName = name ?? "";
    this.fromHi = hi;
    this.fromLo = lo;
    this.fallLo = (lo + size) >>> 0;
    this.fallHi = this.fallLo < size ? (hi + 1) >>> 0 : hi;
  }

  /** Execution went on at hi:lo after an instruction whose branch was `fclass` (0: none): its line, if it was taken. */
  arrive(fclass: number, hi: number, lo: number): void {
    if (fclass === 0) return;
    if (fclass === FlowClass.CondJump || fclass === FlowClass.Jump || fclass === FlowClass.FarJump) {
      if (!this.jumps || (fclass === FlowClass.CondJump && hi === this.fallHi && lo === this.fallLo)) return;
    }
    this.line(this.branchName, this.fromHi, this.fromLo, hi, lo, true);
  }

  /**
   * Event `ev` comes: the branch the last instruction may have taken, which an event
   * that stops tracing or interrupts settles (it is then no longer pending). Hand it to
   * {@link eventLines} after the event.
   */
  pending(ev: PtEvent): number {
    const pending = this.branchClass;
    const t = ev.type;
    if (t === EventType.Disabled || t === EventType.AsyncDisabled || t === EventType.AsyncBranch)
      this.branchClass = 0;
    return pending;
  }

  /**
   * An interrupt or an asynchronous stop: the last instruction's branch (`pending`)
   * went where it came from (perf script shows that branch before the event's).
   */
  arriveBefore(ev: PtEvent, pending: number): void {
    if (ev.type === EventType.AsyncDisabled || ev.type === EventType.AsyncBranch)
      this.arrive(pending, ev.fromHi, ev.fromLo);
  }

  /**
   * Tracing goes on at hi:lo without an event that says so (after an overflow, at the
   * FUP's IP; after a decode error, where perf's decoder takes up): perf shows a trace
   * start (tr strt).
   */
  restart(hi: number, lo: number): void {
    this.branchClass = 0;
    this.line("tr strt", 0, 0, hi, lo, false);
  }

  /** The event's own branch line: tracing starts, stops (how, from `pending`), or an interrupt. */
  eventLines(ev: PtEvent, pending: number): void {
    const t = ev.type;
    if (t === EventType.Enabled) this.line("tr strt", 0, 0, ev.ipHi, ev.ipLo, false);
    else if (t === EventType.AsyncBranch) {
      if (ev.ipSuppressed) this.line("tr end  async", ev.fromHi, ev.fromLo, 0, 0, false);
      else this.line("hw int", ev.fromHi, ev.fromLo, ev.ipHi, ev.ipLo, false);
    } else if (t === EventType.AsyncDisabled) this.line("tr end  async", ev.fromHi, ev.fromLo, 0, 0, false);
    else if (t === EventType.Disabled) {
      const how = pending ? this.branchName : undefined;
      this.line(how ? `tr end  ${how}` : "tr end", this.fromHi, this.fromLo, 0, 0, false);
    }
  }
}
