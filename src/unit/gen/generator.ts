/**
 * Packet generation: an execution under a trace-unit configuration in, the packets
 * the processor would write out.
 *
 * The rules are SDM Vol. 3C chapter "Intel Processor Trace" (older editions: 36):
 * PacketEn = TriggerEn ∧ ContextEn ∧ FilterEn ∧ BranchEn (§36.2.5, seed 002), the
 * packet definitions of §36.4.2 (dependencies and generation scenarios), the compound
 * packet events of Table 36-15 (seed 002's packet-relationship table) and Table 36-50
 * "Packet Generation under Different Enable Conditions", whose case numbers the
 * comments below cite as "case 9c" and so on.
 *
 * Modelling choices where the SDM leaves room:
 * - TIPs are never deferred (§36.4.2.3 makes deferral optional); a partial TNT is
 *   flushed before any other packet, so every packet keeps its place in time.
 * - FilterEn changes only where a branch or event lands (§36.2.4.3), never by
 *   sequential execution; a not-taken conditional branch lands nowhere.
 * - A RET that leaves PacketEn=1 is not compressed: it ends in TIP.PGD(target); so
 *   does a taken conditional branch (see `GenRules.conditional` in rules.ts).
 * - What the SDM leaves to the implementation comes from the CPU profile
 *   (profiles.ts, `GenOptions.profile`): IP compression of FUPs and TIPs, the order of
 *   PSB+'s status packets (§36.3.7 does not fix it), PSB+ at every TraceEn 0 -> 1 or
 *   only with PacketByteCnt = 0, erratum BDM70's PSB+ while PacketEn = 0, and
 *   whether a compound event's FUP or its next packet gets the CYC.
 * - The instruction or event that leaves the execution's last IP unknown (no `end`
 *   record) produces nothing that would need that IP.
 * - Time steps of more than 4096 MTC periods emit only the last 4096 MTCs.
 * - Event Trace (EventEn): see `GenRules.eventTrace` for the packets and where the
 *   seed documents give no text (seed 001's §33.2.4 is a bare heading); CFE and EVD
 *   are not CYC-eligible (they are not in §36.3.6's list). INT n/INT3/INTO/INT1 give
 *   CFE(SWINTR, vector) when the execution gives the vector (`swint`), SMI/RSM,
 *   INIT/SIPI and UINTR/UIRET their CFEs (rules.ts `smi` and on). TSX aborts give
 *   none: the SDM's Event Trace list names them, but its CFE and EVD type tables as
 *   libipt and Linux perf decode them have no type for one; shutdown is not modelled.
 * - The internal cycle counter never wraps unless `cycCounterBits` gives it a width
 *   (stand-alone CYCs, emitter.ts `standaloneCycs`).
 */
import { COFI_TYPE, CofiType, type ExecMode, InsnClass } from "../../isa/types.js";
import { CfeType, EvdType, PacketType } from "../../packet/types.js";
import {
  ExecEvent,
  type Execution,
  INFO_ZLC,
  infoClass,
  infoSize,
  isFlowEvent,
  MsrLoadBy,
} from "../exec/types.js";
import type { MsrFault } from "../msr-file.js";
import { Msr } from "../msr-layout.js";
import { type GenOptions, resolveOptions } from "./config.js";
import { GenRules } from "./rules.js";
import { Chg, TWO32 } from "./state.js";

/** A WRMSR in the execution that faulted (#GP): it changed nothing. */
export interface GenFault {
  /** Index of the `wrmsr` or `msr-load` record in the execution (instructions and events counted). */
  readonly record: number;
  readonly fault: MsrFault;
}

export interface GenResult {
  /** Every packet byte the processor produced, in order (what memory would hold without wraps or STOP). */
  readonly bytes: Uint8Array;
  readonly instructions: number;
  /** Internal buffer overflows, and the bytes they dropped. */
  readonly overflows: number;
  readonly droppedBytes: number;
  readonly faults: readonly GenFault[];
}

/** Generate the packets of `exec` under `options`. */
export function generate(exec: Execution, options: GenOptions): GenResult {
  return new PacketGenerator(resolveOptions(options)).run(exec);
}

export class PacketGenerator extends GenRules {
  private readonly faults: GenFault[] = [];

  /** Walk the execution once; the generator is spent afterwards. */
  run(x: Execution): GenResult {
    const n = x.insnCount;
    const m = x.eventCount;
    // State records before anything else are the initial state, not changes.
    for (let e = 0; e < m && x.evAt[e] === 0 && !isFlowEvent(x.evKind[e]!); e++) this.applyState(x, e);
    this.chg = 0;
    if (this.msrs.traceEn) {
      this.look(x, 0, 0, false);
      this.enable();
    }
    const step = this.cfg.cyclesPerInsn;
    let e = 0;
    for (let i = 0; i < n; i++) {
      while (e < m && x.evAt[e] === i) e = this.event(x, e, i);
      this.boundary(x.ipHi[i]!, x.ipLo[i]!);
      e = this.insn(x, i, e);
      if (step > 0) this.advance(step);
    }
    while (e < m) e = this.event(x, e, n);
    this.finish(x);
    return {
      bytes: this.em.enc.bytes(),
      instructions: n,
      overflows: this.em.overflows,
      droppedBytes: this.em.droppedBytes,
      faults: this.faults,
    };
  }

  /**
   * Find the next flow point from event `e` on, at instruction position `i`: the
   * `from` of a transfer or `end` record, else instruction i. With `apply`, state
   * records on the way are applied (they describe the transfer's target).
   */
  private look(x: Execution, e: number, i: number, apply: boolean): void {
    this.chg = 0;
    for (; e < x.eventCount && x.evAt[e] === i; e++) {
      const k = x.evKind[e]!;
      if (isFlowEvent(k)) {
        this.nxKnown = true;
        this.nxHi = x.evHi[e]!;
        this.nxLo = x.evLo[e]!;
        return;
      }
      if (apply) this.applyState(x, e);
    }
    this.nxKnown = i < x.insnCount;
    if (this.nxKnown) {
      this.nxHi = x.ipHi[i]!;
      this.nxLo = x.ipLo[i]!;
    }
  }

  /** Apply a state record (others are ignored), adding to {@link chg} what changed. */
  private applyState(x: Execution, e: number): void {
    const a = x.evA[e]!;
    const hi = x.evHi[e]!;
    const lo = x.evLo[e]!;
    switch (x.evKind[e]) {
      case ExecEvent.Cpl:
        if (a !== this.cpl) this.chg |= Chg.Cpl;
        this.cpl = a;
        return;
      case ExecEvent.Cr3:
        if (hi !== this.cr3Hi || lo !== this.cr3Lo) this.chg |= Chg.Cr3;
        this.cr3Hi = hi;
        this.cr3Lo = lo;
        return;
      case ExecEvent.Mode:
        if (a !== this.mode) this.chg |= Chg.Mode;
        this.mode = a as ExecMode;
        return;
      case ExecEvent.NonRoot:
        if ((a === 1) !== this.nonRoot) this.chg |= Chg.NonRoot;
        this.nonRoot = a === 1;
        return;
      case ExecEvent.Vmcs:
        if (hi !== this.vmcsHi || lo !== this.vmcsLo) this.chg |= Chg.Vmcs;
        this.vmcsHi = hi;
        this.vmcsLo = lo;
        return;
      case ExecEvent.If:
        if ((a === 1) !== this.iflag) this.chg |= Chg.If;
        this.iflag = a === 1;
        return;
      case ExecEvent.Cr2:
        this.cr2Hi = hi;
        this.cr2Lo = lo;
        this.cr2Set = true;
        return;
      case ExecEvent.ExitQual:
        this.qualHi = hi;
        this.qualLo = lo;
        this.qualSet = true;
        return;
      case ExecEvent.ExitVector:
        this.exitVector = a;
        return;
    }
  }

  /** Handle event `e` (before instruction `i`); returns the next event index. */
  private event(x: Execution, e: number, i: number): number {
    const a = x.evA[e]!;
    switch (x.evKind[e]) {
      case ExecEvent.Cpl:
      case ExecEvent.Cr3:
      case ExecEvent.Mode:
      case ExecEvent.NonRoot:
      case ExecEvent.Vmcs:
      case ExecEvent.If:
      case ExecEvent.Cr2:
        this.chg = 0;
        this.applyState(x, e);
        if (this.chg !== 0) {
          const chg = this.chg;
          this.look(x, e + 1, i, false);
          this.chg = chg;
          this.contextChange();
        }
        break;
      case ExecEvent.Interrupt:
      case ExecEvent.Exception:
      case ExecEvent.VmExit:
      case ExecEvent.Uintr:
        this.asyncTransfer(x, e, i);
        break;
      case ExecEvent.Smi:
        this.nxKnown = true;
        this.nxHi = x.evHi[e]!;
        this.nxLo = x.evLo[e]!;
        this.smi();
        this.look(x, e + 1, i, true);
        this.chg = 0;
        break;
      case ExecEvent.Rsm:
        this.look(x, e + 1, i, true);
        this.rsm();
        break;
      case ExecEvent.Init:
        this.nxKnown = true;
        this.nxHi = x.evHi[e]!;
        this.nxLo = x.evLo[e]!;
        this.init();
        this.look(x, e + 1, i, true);
        this.chg = 0;
        break;
      case ExecEvent.Sipi:
        this.look(x, e + 1, i, true);
        this.sipi(a);
        break;
      case ExecEvent.TsxAbort:
        this.inTx = false;
        this.modeTsx(false, true);
        this.asyncTransfer(x, e, i);
        break;
      case ExecEvent.Sleep:
        this.look(x, e + 1, i, false);
        this.sleep(a, x.evB[e]!, x.evLo[e] === 1);
        break;
      case ExecEvent.Wake:
        this.wake(a, x.evB[e]!, x.evLo[e]!);
        break;
      case ExecEvent.Cycles:
        this.advance(x.evHi[e]! * TWO32 + x.evLo[e]!);
        break;
      case ExecEvent.Ticks:
        this.clock.ticks(x.evHi[e]! * TWO32 + x.evLo[e]!);
        this.afterTime();
        break;
      case ExecEvent.Cbr:
        this.clock.cbr = a;
        if (this.triggerEn) this.timing();
        break;
      case ExecEvent.Wrmsr:
      case ExecEvent.MsrLoad:
        if (e === this.loadedWithTransfer) break;
        this.look(x, e + 1, i, false);
        this.wrmsr(a, x.evHi[e]!, x.evLo[e]!, e + x.evAt[e]!, x.evB[e]!);
        break;
      // Ptw, Mwait, SwInt and Uiret were read with their instruction, ExitQual and
      // ExitVector with their VM exit; End only marks where execution stops.
    }
    return e + 1;
  }

  /** Before instruction `ip` retires: overflow recovery, a due PSB+, output. */
  private boundary(hi: number, lo: number): void {
    const em = this.em;
    if (em.overflowing) {
      if (em.fill === 0) this.overflowEnds(hi, lo);
    } else if (this.triggerEn && em.sincePsb >= this.psbPeriod) {
      this.psb(true, hi, lo);
    }
    if (this.out && em.enc.length - this.written >= this.cfg.outputChunk) this.flushOutput();
  }

  /** Retire instruction `i`; `e` is the first event after it. Returns the next event index. */
  private insn(x: Execution, i: number, e: number): number {
    const info = x.info[i]!;
    const cls = infoClass(info);
    this.stopValid = false;
    this.mwaitPending = false;
    if (cls === InsnClass.Other) return e;
    const hi = x.ipHi[i]!;
    const lo = x.ipLo[i]!;
    const size = infoSize(info);
    const cofi = COFI_TYPE[cls]!;
    if (cofi !== CofiType.None) {
      const before = this.pe;
      this.look(x, e, i + 1, true);
      if (!this.nxKnown) return e;
      const end = lo + size;
      const nextLo = end >>> 0;
      const nextHi = (hi + (end >= TWO32 ? 1 : 0)) >>> 0;
      switch (cofi) {
        case CofiType.Conditional:
          this.conditional(before, this.nxLo !== nextLo || this.nxHi !== nextHi);
          break;
        case CofiType.Direct:
          this.direct(before, cls === InsnClass.Call && (info & INFO_ZLC) === 0, nextHi, nextLo);
          break;
        case CofiType.Indirect:
          this.indirect(before, cls, nextHi, nextLo);
          break;
        default:
          if (cls === InsnClass.VmEntry) this.loadWithTransfer(x, e, i + 1, MsrLoadBy.VmEntry);
          else if (cls === InsnClass.VmExit) this.loadWithTransfer(x, e, i + 1, MsrLoadBy.VmExit);
          if (cls === InsnClass.Iret) this.eventTrace(CfeType.Iret, 0, hi, lo);
          else if (cls === InsnClass.Interrupt) {
            const v = this.markerAfter(x, e, i, ExecEvent.SwInt);
            if (v >= 0) this.eventTrace(CfeType.SwIntr, x.evA[v]!, hi, lo);
          } else if (cls === InsnClass.FarOther && this.markerAfter(x, e, i, ExecEvent.Uiret) >= 0) {
            this.eventTrace(CfeType.Uiret, 0, hi, lo);
          } else if (cls === InsnClass.VmEntry) this.eventTrace(CfeType.VmEntry, 0, hi, lo, -1, 0, 0, true);
          // INT n, INT3, UD and VM exits are not inferable from the code: FUP(CLIP) (Table 36-23).
          this.far(
            before,
            cls === InsnClass.Interrupt || cls === InsnClass.Ud || cls === InsnClass.VmExit,
            hi,
            lo,
          );
      }
      // State records after a near branch (not a real machine's doing) change context at its target.
      if (this.chg !== 0) this.contextChange();
      return e;
    }
    switch (cls) {
      // The payload record follows (ExecBuilder makes sure; a hand-made Execution may not).
      case InsnClass.PtWrite:
        if (this.payloadAt(x, e, i, ExecEvent.Ptw)) this.ptwrite(hi, lo, x.evA[e]!, x.evHi[e]!, x.evLo[e]!);
        break;
      case InsnClass.Mwait:
        this.mwaitPending = this.payloadAt(x, e, i, ExecEvent.Mwait);
        this.mwaitHints = x.evA[e] ?? 0;
        this.mwaitExt = x.evB[e] ?? 0;
        this.stopAt(hi, lo);
        break;
      case InsnClass.Hlt:
        this.stopAt(hi, lo);
        break;
      case InsnClass.Xbegin:
        this.inTx = true;
        this.modeTsx(true, false);
        if (this.pe) this.em.ip(PacketType.Fup, hi, lo);
        break;
      case InsnClass.Xend:
        this.inTx = false;
        this.modeTsx(false, false);
        if (this.pe) this.em.ip(PacketType.Fup, hi, lo);
        break;
      case InsnClass.Xabort: {
        const before = this.pe;
        this.look(x, e, i + 1, true);
        if (!this.nxKnown) break;
        this.inTx = false;
        this.modeTsx(false, true);
        this.far(before, true, hi, lo);
        break;
      }
      // MOV CR3 and VMPTRLD act through the state record that follows them.
    }
    return e;
  }

  /** The `kind` record among the records right after instruction `i` (from event `e` to the next flow point), else -1. */
  private markerAfter(x: Execution, e: number, i: number, kind: number): number {
    for (; e < x.eventCount && x.evAt[e] === i + 1 && !isFlowEvent(x.evKind[e]!); e++) {
      if (x.evKind[e] === kind) return e;
    }
    return -1;
  }

  /** Whether event `e` is a `kind` record right after instruction `i`. */
  private payloadAt(x: Execution, e: number, i: number, kind: number): boolean {
    return e < x.eventCount && x.evAt[e] === i + 1 && x.evKind[e] === kind;
  }

  /** An interrupt, exception, VM exit or TSX abort record: FUP(from), then as far. */
  private asyncTransfer(x: Execution, e: number, i: number): void {
    const before = this.pe;
    this.cr2Set = false;
    this.qualSet = false;
    this.exitVector = -1;
    this.look(x, e + 1, i, true);
    this.nxKnown = true;
    this.nxHi = x.evToHi[e]!;
    this.nxLo = x.evToLo[e]!;
    const kind = x.evKind[e];
    const a = x.evA[e]!;
    const fromHi = x.evHi[e]!;
    const fromLo = x.evLo[e]!;
    if (kind === ExecEvent.VmExit) this.loadWithTransfer(x, e + 1, i, MsrLoadBy.VmExit);
    if (kind === ExecEvent.VmExit) {
      // A VM exit an interrupt, exception or NMI caused: CFE(VMEXIT_INTR, vector)
      // (libipt's ptet-vmexit-vmentry: EVD(1), EVD(2: 0), CFE(9: 14) for a #PF exit).
      const v = this.exitVector;
      if (v >= 0) this.eventTrace(CfeType.VmExitIntr, v, fromHi, fromLo, EvdType.VmxReason, 0, a);
      else this.eventTrace(CfeType.VmExit, 0, fromHi, fromLo, EvdType.VmxReason, 0, a);
    } else if (kind === ExecEvent.Uintr) {
      this.eventTrace(CfeType.Uintr, a, fromHi, fromLo);
    } else if (kind === ExecEvent.Exception && a === 14 && this.cr2Set) {
      this.eventTrace(CfeType.Intr, a, fromHi, fromLo, EvdType.Cr2, this.cr2Hi, this.cr2Lo);
    } else if (kind !== ExecEvent.TsxAbort) {
      this.eventTrace(CfeType.Intr, a, fromHi, fromLo);
    }
    this.far(before, true, fromHi, fromLo);
  }

  /**
   * A VM entry's or exit's load of IA32_RTIT_CTL that clears TraceEn (an `msr-load`
   * record `by` it among the records after the transfer at position `at`, from event `e`):
   * applied before the transfer's packets, which then end in TIP.PGD() (far's
   * `loadOff`): the guest's or host's code is not traced, so no TIP names it. Loads
   * that set TraceEn are left to the record (enable at the target, as after WRMSR).
   * A load that faults is left to the record too, which reports it.
   */
  private loadWithTransfer(x: Execution, e: number, at: number, by: number): void {
    const m = this.msrs;
    for (; e < x.eventCount && x.evAt[e] === at && !isFlowEvent(x.evKind[e]!); e++) {
      if (x.evKind[e] !== ExecEvent.MsrLoad || x.evB[e] !== by || x.evA[e] !== Msr.Ctl) continue;
      if (!m.traceEn || (x.evLo[e]! & 1) !== 0) return;
      if (m.wrmsr(Msr.Ctl, x.evHi[e]!, x.evLo[e]!) !== null) return;
      this.loadedWithTransfer = e;
      this.loadOff = true;
      return;
    }
  }

  /** A `wrmsr` or `msr-load` record: the same rules whatever made the change (`by`, SDM §36.2.7.1), XRSTORS's own #GP first. */
  private wrmsr(address: number, hi: number, lo: number, record: number, by: number): void {
    const m = this.msrs;
    const was = m.traceEn;
    const fault = (by === MsrLoadBy.Xrstors ? m.xrstorsFault(address) : null) ?? m.wrmsr(address, hi, lo);
    if (fault) {
      this.faults.push({ record, fault });
      return;
    }
    if (address !== Msr.Ctl || was === m.traceEn) return;
    if (was) this.disable();
    else this.enable();
  }

  private finish(x: Execution): void {
    const n = x.insnCount;
    const m = x.eventCount;
    this.nxKnown = m > 0 && x.evKind[m - 1] === ExecEvent.End;
    if (this.nxKnown) {
      this.nxHi = x.evHi[m - 1]!;
      this.nxLo = x.evLo[m - 1]!;
    } else if (n > 0 && COFI_TYPE[infoClass(x.info[n - 1]!)] === CofiType.None) {
      // Without an end record, a last instruction that does not branch goes on after itself.
      const end = x.ipLo[n - 1]! + infoSize(x.info[n - 1]!);
      this.nxKnown = true;
      this.nxLo = end >>> 0;
      this.nxHi = (x.ipHi[n - 1]! + (end >= TWO32 ? 1 : 0)) >>> 0;
    }
    const msrs = this.msrs;
    if (this.cfg.disableAtEnd && msrs.traceEn) {
      msrs.wrmsr(Msr.Ctl, msrs.ctlHi, (msrs.ctlLo & ~1) >>> 0);
      this.disable();
    } else {
      this.releasePsb();
      if (this.out) this.flushOutput();
    }
  }
}
