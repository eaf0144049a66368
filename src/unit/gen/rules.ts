/**
 * The packet rules: branches, far transfers and context changes (SDM Table 36-50,
 * whose case numbers the comments cite), PTWRITE, power events, time, overflow and
 * TraceEn. See generator.ts for the modelling choices.
 */
import { InsnClass } from "../../isa/types.js";
import { CfeType, EvdType, Flag, PacketType } from "../../packet/types.js";
import { getField } from "../bits.js";
import { WakeReason } from "../exec/types.js";
import { CTL, Msr, STATUS } from "../msr-layout.js";
import { Chg, GenState, STOPPED } from "./state.js";

const MAX_MTC_PER_STEP = 4096;
const ERROR = 1 << STATUS.Error.lsb;
const PEND_PSB = 1 << STATUS.PendPSB.lsb;
const INJECT_HI = 1 << (CTL.InjectPsbPmiOnEnable.lsb - 32);

export class GenRules extends GenState {
  /**
   * A branch or event lands at the next flow point: FilterEn follows the IP filter
   * there and a TraceStop range is noted, while TriggerEn and ContextEn are 1 (§36.2.4.3).
   */
  protected land(): void {
    if (!this.triggerEn || !this.contextEn) return;
    this.filterEn = this.filter.filterEn(this.nxHi, this.nxLo);
    this.stopHit = this.filter.stopsAt(this.nxHi, this.nxLo);
  }

  /**
   * Cases 7 and 8: Jcc, J*CXZ, LOOP. A taken branch that leaves the filter range ends
   * in TIP.PGD(target), not the TIP.PGD() of case 7e: libipt 2.0 binds an IP-less
   * TIP.PGD only to far transfers and CR3 writes (its own tests expect the target IP
   * here), and the target is in context, so the IP exposes nothing the SDM hides.
   */
  protected conditional(before: boolean, taken: boolean): void {
    if (!taken) {
      if (before) this.em.tnt(false);
      return;
    }
    this.land();
    const after = this.peAfter;
    if (before && after) this.em.tnt(true);
    else if (before) this.em.ip(PacketType.TipPgd, this.nxHi, this.nxLo);
    else if (after) this.pge();
    this.settle(after);
  }

  /** Case 6: JMP and CALL near relative. */
  protected direct(before: boolean, pushes: boolean, nextHi: number, nextLo: number): void {
    this.land();
    const after = this.peAfter;
    if (before && !after) this.em.ip(PacketType.TipPgd, this.nxHi, this.nxLo);
    else if (after && !before) this.pge();
    if (before && after && pushes) this.rets.push(nextHi, nextLo);
    this.settle(after);
  }

  /** Case 9: JMP/CALL indirect and RET, with RET compression (seed 000). */
  protected indirect(before: boolean, cls: number, nextHi: number, nextLo: number): void {
    this.land();
    const after = this.peAfter;
    if (before && after) {
      if (cls === InsnClass.Return && !this.disRetc && this.rets.topIs(this.nxHi, this.nxLo)) {
        this.rets.pop();
        this.em.tnt(true);
      } else {
        // (With retPop "every", an uncompressed RET pops too: see GenOptions.retPop.)
        if (cls === InsnClass.Return && this.cfg.retPop === "every") this.rets.pop();
        this.em.ip(PacketType.Tip, this.nxHi, this.nxLo);
      }
      if (cls === InsnClass.CallIndirect) this.rets.push(nextHi, nextLo);
    } else if (before) {
      this.em.ip(PacketType.TipPgd, this.nxHi, this.nxLo);
    } else if (after) {
      this.pge();
    }
    this.settle(after);
  }

  /**
   * Cases 10-13 and VM entry/exit: far branches, interrupts, exceptions. The target
   * context is already applied (generator.ts `look`); `fup` adds FUP(fromHi:fromLo) first.
   */
  protected far(before: boolean, fup: boolean, fromHi: number, fromLo: number): void {
    if (this.loadOff) {
      // TraceEn cleared by the transfer itself (a VM entry/exit's IA32_RTIT_CTL load).
      this.loadOff = false;
      if (before) {
        if (fup) this.em.compoundFup(fromHi, fromLo);
        this.em.noIp(PacketType.TipPgd);
      }
      this.chg = 0;
      this.traceOff();
      return;
    }
    if (this.triggerEn) this.contextEn = this.contextOk();
    this.land();
    const after = this.peAfter;
    const em = this.em;
    if (before) {
      if (fup) em.compoundFup(fromHi, fromLo);
      if (after) {
        this.pipVmcs();
        if (this.modeStale()) this.modeExec();
        em.ip(PacketType.Tip, this.nxHi, this.nxLo);
      } else if (this.contextEn) {
        this.pipVmcs();
        em.ip(PacketType.TipPgd, this.nxHi, this.nxLo); // 10d/11d: FilterEn cleared, IP in context
      } else {
        em.noIp(PacketType.TipPgd); // 11c/12c: ContextEn cleared, the target is hidden
      }
    } else {
      this.pipVmcs();
      if (after) this.pge();
    }
    this.chg = 0;
    this.settle(after);
  }

  /**
   * Event Trace (IA32_RTIT_CTL.EventEn; SDM §33.2.4 "Event Tracing" and the CFE and
   * EVD packet definitions of §33.4.2 in editions with Event Trace, which list the
   * events: interrupts and exceptions with their vector, IRET, VM exits with the exit
   * reason, VM entries, ...). Called before the transfer's own packets, with the
   * source's enables still in place and the target's state applied (`contextOk`).
   *
   * The packets come first in the compound event: EVDs, then the CFE, then the
   * transfer's FUP, PIP/VMCS/MODE.Exec and TIP (the order of libipt's event-trace
   * test vectors, e.g. ptet-vmexit-vmentry: EVD, EVD, CFE, FUP, PIP, TIP, which
   * decoders bind that way: EVDs to the next CFE, the CFE to the next FUP). They are
   * written when TriggerEn=1 and the source or the target is traced (ContextEn and
   * FilterEn, as for PTW), as an IRET from an untraced handler back to traced code
   * gives CFE(IRET) before its TIP.PGE (ptet-int-iret-cpl_3). The CFE's IP bit says a FUP of its own
   * follows: only when the source is traced but BranchEn=0, so no transfer FUP
   * gives the IP (ptet, "Event Tracing with BranchEn=0"); with PacketEn=1 the
   * transfer's FUP is the event's IP, and with the source out of context the IP is
   * withheld. A VM entry's CFE always has a FUP of its own (the VMLAUNCH/VMRESUME),
   * as in ptet-vmexit-vmentry: CFE(VMENTRY, IP), FUP, PIP, TIP (`ownIp`).
   *
   * `evd`: an EVD type and its payload (`evdHi:evdLo`), or -1 for none. A page
   * fault's address (EVD type 0, CR2) goes out only with the source in context
   * (§33.2.4: "Page faults additionally include the page fault address, when in
   * context"); a VM exit's reason always.
   */
  protected eventTrace(
    type: number,
    vector: number,
    fromHi: number,
    fromLo: number,
    evd = -1,
    evdHi = 0,
    evdLo = 0,
    ownIp = false,
  ): void {
    if (!this.eventEn || !this.triggerEn) return;
    const src = this.contextEn && this.filterEn;
    if (!src && !(this.contextOk() && this.filter.filterEn(this.nxHi, this.nxLo))) return;
    const em = this.em;
    // A VM exit's qualification goes before its reason (libipt's ptet-vmexit-vmentry:
    // EVD(1), EVD(2), CFE), and like the reason whatever the context. The execution
    // gives it (`exit-qual`) for the exit reasons whose qualification the SDM defines
    // ("VM exits include the values written to the exit reason and exit qualification
    // VMCS fields", §33.2.4 in editions with Event Trace).
    if ((type === CfeType.VmExit || type === CfeType.VmExitIntr) && this.qualSet) {
      em.set(PacketType.Evd, EvdType.VmxQualification, 0, 0, this.qualHi, this.qualLo);
      em.put();
    }
    if (evd >= 0 && (src || evd !== EvdType.Cr2)) {
      em.set(PacketType.Evd, evd, 0, 0, evdHi, evdLo);
      em.put();
    }
    const ownFup = src && (ownIp || !this.branchEn);
    em.set(PacketType.Cfe, type, vector, ownFup ? Flag.Ip : 0);
    em.put();
    if (ownFup) em.ip(PacketType.Fup, fromHi, fromLo);
  }

  /**
   * A CFE without IP for an event whose source is never traced (RSM from SMM, SIPI
   * from wait-for-SIPI): written when the target is (libipt's ptet-smi-rsm and
   * ptet-init-sipi: CFE(RSM), CFE(SIPI, vector) before the TIP.PGE; ptet, with
   * BranchEn=0, gives neither an IP; its decoder refuses one).
   */
  protected targetCfe(type: number, vector: number): void {
    if (!this.eventEn || !this.triggerEn || !this.nxKnown) return;
    if (!this.contextOk() || !this.filter.filterEn(this.nxHi, this.nxLo)) return;
    this.em.set(PacketType.Cfe, type, vector);
    this.em.put();
  }

  /**
   * SMI (nx: where it hit): CFE(SMI), then TraceEn is saved and cleared (SMM is not
   * traced; the register model's setByProcessor names this case) with the packets of
   * any TraceEn 1 -> 0: FUP(CLIP), TIP.PGD() (libipt's ptet-smi-rsm: CFE(3), FUP,
   * TIP.PGD()). The CFE has its own IP as for an interrupt.
   */
  protected smi(): void {
    const m = this.msrs;
    this.smmTraceEn = m.traceEn;
    if (!m.traceEn) return;
    this.eventTrace(CfeType.Smi, 0, this.nxHi, this.nxLo);
    m.setByProcessor(Msr.Ctl, m.ctlHi, (m.ctlLo & ~1) >>> 0);
    this.disable();
  }

  /**
   * RSM (nx: where execution resumes): TraceEn as the SMI found it, restored like any
   * TraceEn 0 -> 1 (PSB+ when PacketByteCnt is 0, else TSC/TMA/CBR; TIP.PGE), with
   * CFE(RSM) before the TIP.PGE.
   */
  protected rsm(): void {
    const m = this.msrs;
    if (!this.smmTraceEn || m.traceEn) return;
    this.smmTraceEn = false;
    m.setByProcessor(Msr.Ctl, m.ctlHi, (m.ctlLo | 1) >>> 0);
    this.enableCfe = CfeType.Rsm;
    this.enable();
    this.enableCfe = -1;
    this.chg = 0;
  }

  /**
   * INIT (nx: where it hit): CFE(INIT), then the processor waits for a SIPI: PacketEn
   * drops as at any transfer into untraced code, FUP(CLIP), TIP.PGD() (libipt's
   * ptet-init-sipi). TraceEn stays as it was: the same test traces on after the SIPI
   * without a PSB+ (the SDM text in the seeds does not say what INIT does to
   * IA32_RTIT_CTL; this follows libipt).
   */
  protected init(): void {
    const before = this.pe;
    this.eventTrace(CfeType.Init, 0, this.nxHi, this.nxLo);
    if (before) {
      this.em.compoundFup(this.nxHi, this.nxLo);
      this.em.noIp(PacketType.TipPgd);
    }
    this.waitSipi = true;
    if (this.triggerEn) this.contextEn = false;
    this.settle(false);
  }

  /** SIPI (nx: where execution starts): CFE(SIPI, vector) without IP, then TIP.PGE there. */
  protected sipi(vector: number): void {
    if (!this.waitSipi) return;
    this.waitSipi = false;
    this.targetCfe(CfeType.Sipi, vector);
    if (this.triggerEn) this.contextEn = this.contextOk();
    this.land();
    const after = this.peAfter;
    if (this.contextEn) this.pipVmcs();
    if (after && this.nxKnown) this.pge();
    this.chg = 0;
    this.settle(after);
  }

  /**
   * Case 5 and its kin: CR3, CPL, VMX or VMCS changed where nothing branched (MOV
   * CR3, VMPTRLD); execution goes on at the next flow point (NLIP).
   */
  protected contextChange(): void {
    const before = this.pe;
    if (this.triggerEn) {
      this.contextEn = this.contextOk();
      // A MOV CR3 executed in a TraceStop range stops tracing (Table 36-28).
      if (this.contextEn && this.nxKnown && this.chg & Chg.Cr3) {
        this.stopHit = this.filter.stopsAt(this.nxHi, this.nxLo);
      }
    }
    const after = this.peAfter;
    if (this.contextEn) this.pipVmcs();
    // RFLAGS.IF changed by CLI, STI or POPF under Event Trace: MODE.Exec with the new
    // IF, bound to FUP(NLIP) (libipt's ptet-mode_exec-if: STI, then MODE.Exec(IF), FUP(next)).
    if (this.chg & Chg.If && before && after && this.eventEn && this.nxKnown) {
      this.modeExec();
      this.em.ip(PacketType.Fup, this.nxHi, this.nxLo);
    }
    if (before && !after) this.em.noIp(PacketType.TipPgd);
    else if (after && !before && this.nxKnown) this.pge();
    this.chg = 0;
    this.settle(after);
  }

  /** After an operation: RET compression never spans PacketEn=0; a TraceStop acts now. */
  protected settle(after: boolean): void {
    if (!after) this.rets.clear();
    if (this.stopHit) this.traceStop();
  }

  /** PTW (TriggerEn, ContextEn, FilterEn, PTWEn) and its FUP with FUPonPTW (Table 36-40). */
  protected ptwrite(ipHi: number, ipLo: number, bytes: number, hi: number, lo: number): void {
    if (!this.triggerEn || !this.contextEn || !this.filterEn || !this.ptwEn) return;
    this.em.set(PacketType.Ptw, bytes, 0, this.fupOnPtw ? Flag.Ip : 0, hi, lo);
    this.em.put();
    if (this.fupOnPtw) this.em.ip(PacketType.Fup, ipHi, ipLo);
  }

  /**
   * C-state entry (Tables 36-41..43): MWAIT if an MWAIT caused it (ContextEn), PWRE,
   * and on leaving C0 EXSTOP with FUP(IP of the oldest unfinished instruction) when
   * ContextEn=1.
   */
  protected sleep(cstate: number, substate: number, hw: boolean): void {
    const wasAwake = !this.clock.sleeping;
    this.clock.sleeping = true;
    const em = this.em;
    if (!this.triggerEn || !this.pwrEvtEn) return;
    if (this.mwaitPending && this.contextEn) {
      em.set(PacketType.Mwait, this.mwaitHints, this.mwaitExt);
      em.put();
    }
    this.mwaitPending = false;
    em.set(PacketType.Pwre, cstate, substate, hw ? Flag.Hw : 0);
    em.put();
    if (!wasAwake) return;
    em.set(PacketType.Exstop, 0, 0, this.contextEn ? Flag.Ip : 0);
    em.put();
    if (!this.contextEn) return;
    if (this.stopValid) em.ip(PacketType.Fup, this.stopHi, this.stopLo);
    else if (this.nxKnown) em.ip(PacketType.Fup, this.nxHi, this.nxLo);
  }

  /** C-state exit: PWRX (Table 36-44), then TSC, TMA, CBR as after any clock stop. */
  protected wake(last: number, deepest: number, reasons: number): void {
    this.clock.sleeping = false;
    if (!this.triggerEn) return;
    if (this.pwrEvtEn) {
      const flags =
        (reasons & WakeReason.Interrupt ? Flag.WakeInt : 0) |
        (reasons & WakeReason.Store ? Flag.WakeStore : 0) |
        (reasons & WakeReason.Hw ? Flag.WakeHw : 0);
      this.em.set(PacketType.Pwrx, last, deepest, flags);
      this.em.put();
    }
    this.timing();
  }

  /** `n` core cycles pass. */
  protected advance(n: number): void {
    this.clock.cycles(n);
    this.afterTime();
  }

  /** Drain the internal buffer and send the MTCs that came due. */
  protected afterTime(): void {
    const c = this.clock;
    const stepCtc = this.stepCtc;
    const stepCycles = this.stepCycles;
    const now = c.crystal();
    this.stepCtc = now;
    this.stepCycles = c.total;
    if (this.triggerEn) this.em.standaloneCycs();
    if (this.em.capacity > 0) {
      this.em.drain(c.total - this.drained);
      this.drained = c.total;
    }
    if (c.ctc < this.mtcNext) return;
    const period = Math.floor(c.ctc / this.mtcDiv);
    this.mtcNext = (period + 1) * this.mtcDiv;
    if (this.triggerEn && this.mtcEn && !c.sleeping) {
      // Time passed in one step (a long instruction, ticks in the kernel) is continuous
      // for the processor: each MTC's CYC counts the cycles up to its crystal tick,
      // the cycles after the last MTC wait for the next packet (DynamoRIO hello, CYC
      // threshold 0: a CYC before each of the 82 MTCs while exec runs in the kernel).
      const span = now - stepCtc;
      const cycles = c.total - stepCycles;
      for (let p = Math.max(this.mtcPeriod + 1, period - MAX_MTC_PER_STEP + 1); p <= period; p++) {
        const after = span > 0 ? Math.min(c.cyc, Math.floor((cycles * (now - p * this.mtcDiv)) / span)) : 0;
        c.cyc -= after;
        this.em.set(PacketType.Mtc, p & 0xff);
        this.em.put();
        c.cyc += after;
      }
    }
    this.mtcPeriod = period;
  }

  /**
   * The internal buffer has drained after an overflow (§36.3.8): OVF, then FUP(IP) if
   * PacketEn=1 (else the next TIP.PGE ends the overflow). Decoders reset their last
   * IP and return stack at OVF, so the processor does too.
   */
  protected overflowEnds(hi: number, lo: number): void {
    const em = this.em;
    em.overflowing = false;
    em.dropTnt();
    if (!this.triggerEn && !this.stopAfterOvf) return;
    this.rets.clear();
    this.lastMode = -1;
    em.set(PacketType.Ovf);
    em.put();
    em.enc.last.reset();
    if (this.stopAfterOvf) {
      this.stopAfterOvf = false;
      this.stopPacket();
    }
    if (this.pe) em.ip(PacketType.Fup, hi, lo);
  }

  /**
   * TraceEn 0 -> 1 (cases 2b/2d/2e): with PacketByteCnt=0 (or PendPSB under
   * InjectPsbPmiOnEnable), or at every enable where the profile says so (Broadwell),
   * TIP.PGE(NLIP) if PacketEn=1, then PSB+; else TSC, TMA, CBR, then TIP.PGE. A PSB+
   * written with PacketEn=0 may take erratum BDM70's form (state.ts `psb`).
   */
  protected enable(): void {
    const m = this.msrs;
    this.loadCtl();
    if (this.out) {
      this.out.enable();
      this.triggerEn = this.out.storing;
    } else {
      this.triggerEn = (m.statusLo & (STOPPED | ERROR)) === 0;
    }
    if (!this.triggerEn) return;
    this.contextEn = this.contextOk();
    this.filterEn = this.nxKnown ? this.filter.filterEn(this.nxHi, this.nxLo) : !this.filter.filtering;
    this.clock.cyc = 0;
    this.em.cycOwed = false;
    this.mtcPeriod = Math.floor(this.clock.ctc / this.mtcDiv);
    this.mtcNext = (this.mtcPeriod + 1) * this.mtcDiv;
    this.stepCtc = this.clock.crystal();
    this.stepCycles = this.clock.total;
    const count = getField(m.statusHi, m.statusLo, STATUS.PacketByteCnt);
    const pendPsb = (m.ctlHi & INJECT_HI) !== 0 && (m.statusLo & PEND_PSB) !== 0;
    const stops = this.contextEn && this.nxKnown && this.filter.stopsAt(this.nxHi, this.nxLo);
    const pge = this.pe && this.nxKnown && !stops;
    if (this.enableCfe >= 0) this.targetCfe(this.enableCfe, 0);
    if (count === 0 || pendPsb || this.cfg.profile.enablePsb.value === "always") {
      if (pendPsb) m.setByProcessor(Msr.Status, m.statusHi, (m.statusLo & ~PEND_PSB) >>> 0);
      if (pge) this.pge();
      this.psb(this.nxKnown, this.nxHi, this.nxLo);
    } else {
      this.em.sincePsb = count;
      this.timing();
      if (pge) this.pge();
    }
    if (stops) this.traceStop();
    this.syncStatus();
  }

  /** TraceEn 1 -> 0 (case 3b): FUP(CLIP), TIP.PGD() if PacketEn=1; everything is flushed. */
  protected disable(): void {
    this.releasePsb();
    if (this.pe) {
      if (this.nxKnown) this.em.compoundFup(this.nxHi, this.nxLo);
      this.em.noIp(PacketType.TipPgd);
    }
    this.traceOff();
  }

  /** What every TraceEn 1 -> 0 does after its packets: flush, stop, output disabled. */
  protected traceOff(): void {
    this.releasePsb();
    this.em.flushTnt();
    this.triggerEn = false;
    this.rets.clear();
    this.clock.cyc = 0;
    this.em.cycOwed = false;
    if (this.out) {
      this.flushOutput();
      this.out.disable();
    }
    this.syncStatus();
  }
}
