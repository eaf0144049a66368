/**
 * The generator's state: the trace unit's enables and configuration as decoded from
 * IA32_RTIT_CTL, the processor's architectural state as the execution describes it,
 * and the packet sequences several rules share (PSB+, timing packets, PIP, MODE,
 * TraceStop). The rules are in rules.ts, the walk over the execution in generator.ts.
 */
import { ExecMode } from "../../isa/types.js";
import { Flag, PacketType } from "../../packet/types.js";
import { type BitField, getField } from "../bits.js";
import type { MsrFile } from "../msr-file.js";
import { CTL, Msr, STATUS } from "../msr-layout.js";
import type { OutputUnit } from "../output/unit.js";
import type { PsbGroup } from "../profiles.js";
import { Clock } from "./clock.js";
import type { GenConfig } from "./config.js";
import { Emitter } from "./emitter.js";
import { IpFilter } from "./ip-filter.js";
import { RetStack } from "./ret-stack.js";

export const TWO32 = 2 ** 32;
/** The VMCS pointer when there is none. */
export const NO_VMCS = 0xffffffff;
export const STOPPED = 1 << STATUS.Stopped.lsb;

/** State changes made by the records after a transfer (or at a non-branch). */
export const Chg = { Cpl: 1, Cr3: 2, Mode: 4, NonRoot: 8, Vmcs: 16, If: 32 } as const;

export class GenState {
  protected readonly msrs: MsrFile;
  protected readonly out: OutputUnit | undefined;
  protected readonly clock: Clock;
  protected readonly em: Emitter;
  protected readonly filter = new IpFilter();
  protected readonly rets = new RetStack();
  protected readonly cfg: GenConfig;
  /** Bytes already passed to the output unit. */
  protected written = 0;
  /** Core cycles drained from the internal buffer so far. */
  protected drained = 0;

  // IA32_RTIT_CTL, decoded when tracing is enabled.
  protected os = false;
  protected user = false;
  protected branchEn = false;
  protected cr3Filter = false;
  protected tscEn = false;
  protected mtcEn = false;
  protected ptwEn = false;
  protected fupOnPtw = false;
  protected pwrEvtEn = false;
  protected disRetc = false;
  /** EventEn: Event Trace (CFE, EVD) and RFLAGS.IF in MODE.Exec. */
  protected eventEn = false;
  protected psbPeriod = 2048;

  // The enables of §36.2.5.
  protected triggerEn = false;
  protected contextEn = false;
  protected filterEn = true;
  /** A branch landed in a TraceStop range; acted on by {@link traceStop}. */
  protected stopHit = false;
  /** A TraceStop hit during an overflow: its packet follows the OVF. */
  protected stopAfterOvf = false;

  // Architectural state.
  protected cpl = 0;
  protected cr3Hi = 0;
  protected cr3Lo = 0;
  protected mode: ExecMode = ExecMode.Bits64;
  protected nonRoot = false;
  protected vmcsHi = NO_VMCS;
  protected vmcsLo = NO_VMCS;
  protected inTx = false;
  /** RFLAGS.IF. */
  protected iflag = true;
  /** CR2, and whether a `cr2` record came with the transfer being handled (a page fault's address). */
  protected cr2Hi = 0;
  protected cr2Lo = 0;
  protected cr2Set = false;
  /** The exit qualification of the VM exit being handled (an `exit-qual` record came with it). */
  protected qualHi = 0;
  protected qualLo = 0;
  protected qualSet = false;
  /** The vector of the VM exit being handled (an `exit-vector` record came with it), else -1. */
  protected exitVector = -1;
  /** INIT: the processor waits for a SIPI and executes nothing, so nothing is in context. */
  protected waitSipi = false;
  /** TraceEn as an SMI found it (saved and cleared on SMI, restored by RSM). */
  protected smmTraceEn = false;
  /** The `msr-load` record a VM entry or exit already applied (generator.ts `loadWithTransfer`), else -1. */
  protected loadedWithTransfer = -1;
  /** The transfer being handled clears TraceEn (a VM entry/exit's load): it ends in TIP.PGD(). */
  protected loadOff = false;
  /** A CFE type enable() writes before its TIP.PGE (RSM's), else -1. */
  protected enableCfe = -1;
  /** Mode of the last MODE.Exec since the last PSB or OVF; -1: none. */
  protected lastMode = -1;
  /** The IF bit of the last MODE.Exec (meaningful with EventEn once {@link lastMode} is set). */
  protected lastIf = true;
  /** The crystal-clock period the last MTC reported, and where the next one starts. */
  protected mtcPeriod = 0;
  protected mtcNext = 0;
  /** 2^MTCFreq. */
  protected mtcDiv = 1;
  /** The crystal clock (with its fraction) and total core cycles when time last passed (see afterTime). */
  protected stepCtc = 0;
  protected stepCycles = 0;
  /** An MWAIT retired whose MWAIT packet waits for the C-state entry. */
  protected mwaitPending = false;
  protected mwaitHints = 0;
  protected mwaitExt = 0;
  /** The last instruction was an MWAIT or HLT at stopHi:stopLo (EXSTOP's IP if the core sleeps now). */
  protected stopValid = false;
  protected stopHi = 0;
  protected stopLo = 0;

  /** The next flow point (generator.ts `look`): where execution goes on. */
  protected nxKnown = false;
  protected nxHi = 0;
  protected nxLo = 0;
  /** {@link Chg} bits of the state records applied since the last transfer. */
  protected chg = 0;

  /** The profile's PSB+ order. */
  private readonly psbOrder: readonly PsbGroup[];
  /** Profile: a PSB+ while PacketEn = 0 takes erratum BDM70's form before a TIP.PGE. */
  private readonly bdm70: boolean;
  /** A PSB+ written while PacketEn = 0 is held back (BDM70): {@link Emitter.beforeNext} writes it. */
  protected psbHeld = false;
  private readonly writeHeldPsb = (): void => {
    this.psbHeld = false;
    this.psbPackets(false, 0, 0);
  };

  constructor(cfg: GenConfig) {
    this.cfg = cfg;
    this.msrs = cfg.msrs;
    this.out = cfg.output;
    this.clock = new Clock(cfg.nominalRatio, cfg.ctcEax, cfg.ctcEbx, cfg.cbr, cfg.tsc);
    this.em = new Emitter(this.clock, 1 << 16);
    this.em.tntCapacity = cfg.tntBits;
    this.em.capacity = cfg.bufferBytes;
    this.em.drainPerCycle = cfg.drainPerCycle;
    this.em.cycMax = cfg.cycMax;
    const p = cfg.profile;
    this.em.fullFup = p.fupIp.value === "none";
    this.em.fullTip = p.tipIp.value === "none";
    this.em.cycAfterFup = p.cycCompound.value === "after-fup";
    this.em.ip32 = cfg.msrs.caps.linearAddressBits === 32;
    this.psbOrder = p.psbOrder.value;
    this.bdm70 = p.filteredPsb.value === "bdm70";
  }

  protected get pe(): boolean {
    return this.triggerEn && this.contextEn && this.filterEn && this.branchEn;
  }

  /** PacketEn after the current operation (a TraceStop clears TriggerEn). */
  protected get peAfter(): boolean {
    return this.pe && !this.stopHit;
  }

  /** The configured context: CPL against OS/User, CR3 against CR3_MATCH (§36.2.5.3). */
  protected contextOk(): boolean {
    if (this.waitSipi) return false;
    if (this.cpl === 0 ? !this.os : !this.user) return false;
    if (!this.cr3Filter) return true;
    const m = this.msrs;
    return this.cr3Hi === m.cr3MatchHi && (this.cr3Lo & ~0x1f) >>> 0 === m.cr3MatchLo;
  }

  /** The MWAIT or HLT at hi:lo just retired: a C-state entered now stopped at it. */
  protected stopAt(hi: number, lo: number): void {
    this.stopValid = true;
    this.stopHi = hi;
    this.stopLo = lo;
  }

  /**
   * TIP.PGE at the next flow point, after MODE.Exec unless it is current. A PSB+ held
   * back (BDM70) goes out first with MODE.Exec and FUP(this IP), as if PacketEn were 1.
   */
  protected pge(): void {
    if (this.psbHeld) {
      this.em.beforeNext = undefined;
      this.psbHeld = false;
      this.psbPackets(true, this.nxHi, this.nxLo);
      // Decoders drop the erratum's FUP, last IP included (libipt; HASE Broadwell: 8/8
      // TIP.PGEs after it are uncompressed): the TIP.PGE goes out against the PSB's reset.
      this.em.enc.last.reset();
    }
    if (this.modeStale()) this.modeExec();
    this.em.ip(PacketType.TipPge, this.nxHi, this.nxLo);
  }

  /** PIP if CR3 or VMX operation changed (OS=1), VMCS if the VMCS pointer did (§36.4.2.7). */
  protected pipVmcs(): void {
    if (!this.triggerEn || !this.contextEn) return;
    if (this.chg & (Chg.Cr3 | Chg.NonRoot) && this.os) this.pip();
    if (this.chg & Chg.Vmcs && this.vmcsHi !== NO_VMCS) this.vmcs();
  }

  protected pip(): void {
    const em = this.em;
    em.set(
      PacketType.Pip,
      0,
      0,
      this.nonRoot ? Flag.Nr : 0,
      this.cr3Hi & 0xfffff,
      (this.cr3Lo & ~0x1f) >>> 0,
    );
    em.put();
  }

  protected vmcs(): void {
    this.em.set(PacketType.Vmcs, 0, 0, 0, this.vmcsHi & 0xfffff, (this.vmcsLo & ~0xfff) >>> 0);
    this.em.put();
  }

  /**
   * MODE.Exec is due: the mode changed since the last one (or none since PSB/OVF), or,
   * with EventEn, RFLAGS.IF did (MODE.Exec carries IF under Event Trace, SDM §33.2.4,
   * in editions with Event Trace; the seed's §33.2.4 is a bare heading).
   */
  protected modeStale(): boolean {
    return this.mode !== this.lastMode || (this.eventEn && this.iflag !== this.lastIf);
  }

  protected modeExec(): void {
    const m = this.mode;
    const iflag = this.eventEn && this.iflag;
    this.em.set(
      PacketType.ModeExec,
      0,
      0,
      (m === ExecMode.Bits64 ? Flag.CsL : m === ExecMode.Bits32 ? Flag.CsD : 0) | (iflag ? Flag.If : 0),
    );
    this.em.put();
    this.lastMode = m;
    this.lastIf = this.iflag;
  }

  /** MODE.TSX (TriggerEn, ContextEn, BranchEn: §36.2.8.1, Table 36-27). */
  protected modeTsx(inTx: boolean, abort: boolean): void {
    if (!this.triggerEn || !this.contextEn || !this.branchEn) return;
    this.em.set(PacketType.ModeTsx, 0, 0, (inTx ? Flag.InTx : 0) | (abort ? Flag.Abort : 0));
    this.em.put();
  }

  /** TraceStop (§36.4.2.9): Stopped is set, TriggerEn and FilterEn cleared. */
  protected traceStop(): void {
    this.stopHit = false;
    if (this.em.overflowing) this.stopAfterOvf = true;
    else if (this.contextEn) this.stopPacket();
    this.triggerEn = false;
    this.filterEn = false;
    this.rets.clear();
    this.msrs.setByProcessor(Msr.Status, this.msrs.statusHi, (this.msrs.statusLo | STOPPED) >>> 0);
    this.syncStatus();
  }

  protected stopPacket(): void {
    this.em.set(PacketType.Stop);
    this.em.put();
  }

  /** TSC and TMA (TSCEn; TMA with MTCEn), then CBR: after enable, wake and frequency changes. */
  protected timing(): void {
    const em = this.em;
    const c = this.clock;
    if (this.tscEn) {
      em.set(PacketType.Tsc, 0, 0, 0, c.tsc.hi & 0xffffff, c.tsc.lo);
      em.put();
      if (this.mtcEn) {
        em.set(PacketType.Tma, c.ctc % 0x10000, c.fastCounter());
        em.put();
      }
    }
    em.set(PacketType.Cbr, c.cbr);
    em.put();
  }

  /**
   * PSB+ (§36.3.7); `known`: hi:lo is where execution goes on (for its FUP). With
   * the BDM70 profile a PSB+ due while PacketEn = 0 is held back until the next
   * packet: a TIP.PGE ({@link pge}) gets the erratum's form, anything else the SDM's.
   */
  protected psb(known: boolean, hi: number, lo: number): void {
    this.em.sincePsb = 0;
    this.rets.clear();
    this.lastMode = -1;
    if (this.bdm70 && !this.pe) {
      this.psbHeld = true;
      this.em.beforeNext = this.writeHeldPsb;
      return;
    }
    this.psbPackets(this.pe && known, hi, lo);
  }

  /** Write a held-back PSB+ now (before tracing stops or the trace ends). */
  protected releasePsb(): void {
    if (!this.psbHeld) return;
    this.em.beforeNext = undefined;
    this.writeHeldPsb();
  }

  /**
   * PSB, the status packets in the profile's order, PSBEND. `fup`: MODE.Exec and
   * FUP(hi:lo) are in it (PacketEn = 1, or BDM70 before a TIP.PGE).
   */
  private psbPackets(fup: boolean, hi: number, lo: number): void {
    const em = this.em;
    em.set(PacketType.Psb);
    em.put();
    for (const group of this.psbOrder) {
      switch (group) {
        case "timing":
          this.timing();
          break;
        case "vmcs":
          if (this.vmcsHi !== NO_VMCS) this.vmcs();
          break;
        case "pip":
          if (this.contextEn && this.os) this.pip();
          break;
        case "mode-tsx":
          if (this.contextEn && this.branchEn && this.cfg.tsx) {
            em.set(PacketType.ModeTsx, 0, 0, this.inTx ? Flag.InTx : 0);
            em.put();
          }
          break;
        case "mode-exec-fup":
          if (fup) {
            this.modeExec();
            em.ip(PacketType.Fup, hi, lo);
          }
          break;
      }
    }
    em.set(PacketType.PsbEnd);
    em.put();
  }

  protected loadCtl(): void {
    const m = this.msrs;
    const hi = m.ctlHi;
    const lo = m.ctlLo;
    const bit = (f: BitField) => getField(hi, lo, f) === 1;
    this.os = bit(CTL.OS);
    this.user = bit(CTL.User);
    this.branchEn = bit(CTL.BranchEn);
    this.cr3Filter = bit(CTL.CR3Filter);
    this.tscEn = bit(CTL.TSCEn);
    this.mtcEn = bit(CTL.MTCEn);
    this.ptwEn = bit(CTL.PTWEn);
    this.fupOnPtw = bit(CTL.FUPonPTW);
    this.pwrEvtEn = bit(CTL.PwrEvtEn);
    this.disRetc = bit(CTL.DisRETC);
    this.eventEn = bit(CTL.EventEn);
    this.mtcDiv = 2 ** getField(hi, lo, CTL.MTCFreq);
    this.psbPeriod = 2048 << getField(hi, lo, CTL.PSBFreq);
    const thresh = getField(hi, lo, CTL.CycThresh);
    this.em.cycEn = bit(CTL.CYCEn);
    this.em.cycThreshold = thresh === 0 ? 1 : 2 ** (thresh - 1);
    this.filter.load(m);
  }

  /** Pass new bytes to the output unit; a ToPA STOP or an error ends packet generation. */
  protected flushOutput(): void {
    const out = this.out!;
    const enc = this.em.enc;
    if (enc.length === this.written) return;
    const r = out.write(enc.bytes(), this.written, enc.length - this.written);
    this.written = enc.length;
    if (r.stopped || r.error) this.triggerEn = false;
  }

  /** IA32_RTIT_STATUS: FilterEn, ContextEn, TriggerEn and PacketByteCnt as the processor keeps them. */
  protected syncStatus(): void {
    const m = this.msrs;
    const lo =
      (m.statusLo & ~0x7) | (this.filterEn ? 1 : 0) | (this.contextEn ? 2 : 0) | (this.triggerEn ? 4 : 0);
    const hi = (m.statusHi & ~0x1ffff) | (this.em.sincePsb & 0x1ffff);
    m.setByProcessor(Msr.Status, hi >>> 0, lo >>> 0);
  }
}
