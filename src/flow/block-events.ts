/**
 * Placing events in the instruction flow (libipt's `pt_blk_proceed_event`,
 * `pt_blk_proceed_trailing_event` and the errata handlers): walking to the
 * instruction or IP an event binds to, deciding whether an event is due at the
 * current IP, and the workarounds for SKL014, SKD022 and BDM64.
 *
 * Results are status flags ({@link Status}) or -error, as the API returns them.
 */

import * as errors from "../base/errors.js";
import type { PtEvent } from "../event/types.js";
import * as eventTypes from "../event/types.js";
import * as blockStep from "./block-step.js";
import { BlockWalk } from "./block-walk.js";
import * as flowClass from "./flow-class.js";
import type { FlowInsn } from "./flow-insn.js";
import * as flowInsn from "./flow-insn.js";
import type { Block } from "./records.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { EventFlag, EventType, Status } = eventTypes;
const { ErrorCode } = errors;
const { Stop, stopsAt } = blockStep;
type Stop = blockStep.Stop;
const { FlowClass, InsnFact } = flowClass;
const { fallThrough, isBranch, next, nextIp } = flowInsn;

/** The instruction an event binds to: one of its own kind, or (PIP, VMCS) the one that loads CR3 or the VMCS. */
const BINDING_STOP: Partial<Record<number, Stop>> = {
  [EventType.Ptwrite]: Stop.Ptwrite,
  [EventType.Iret]: Stop.Iret,
  [EventType.Vmentry]: Stop.VmEntry,
  [EventType.Uiret]: Stop.Uiret,
  [EventType.Swintr]: Stop.SoftInt,
  [EventType.Syscall]: Stop.Syscall,
  [EventType.Paging]: Stop.Pip,
  [EventType.Vmcs]: Stop.Vmcs,
};

/** Most instructions the BDM64 check walks to see whether an IP is reachable. */
const BDM64_MAX_STEPS = 0x100;

export class BlockEvents extends BlockWalk {
  /**
   * Walk to where the current event binds and report it, or end the block on the way
   * (libipt `pt_blk_proceed_event`): status flags (EventPending when reached) or
   * -error. 0 means the block ended before the event's location.
   */
  protected proceedEvent(block: Block): number {
    const ev = this.ev;
    const insn = this.insn;
    let status: number;
    switch (ev.type) {
      case EventType.Disabled:
        if (ev.statusUpdate) break;
        status = this.proceedToDisabled(block, insn, ev);
        if (status <= 0) {
          // A disable also binds to the next branch that would have needed trace.
          if (status !== -ErrorCode.BadQuery) return status;
          this.setDisableResumeIp(insn);
        }
        break;
      case EventType.AsyncDisabled:
        status = this.proceedToIp(block, insn, ev.fromHi, ev.fromLo);
        if (status <= 0) return status;
        if (this.config.errata.skd022) {
          status = this.erratumSkd022(ev);
          if (status < 0) return status;
          // The event became a synchronous disable: place that instead.
          if (status > 0) return this.proceedEvent(block);
        }
        break;
      case EventType.AsyncBranch:
        status = this.proceedToIp(block, insn, ev.fromHi, ev.fromLo);
        if (status <= 0) return status;
        break;
      case EventType.Paging:
      case EventType.Vmcs: {
        if (!this.enabled) break;
        const stop = BINDING_STOP[ev.type]!;
        status = this.proceedToInsn(block, insn, stop);
        if (status <= 0) return status;
        this.bound |= 1 << stop;
        return this.postpone(insn);
      }
      case EventType.AsyncPaging:
      case EventType.AsyncVmcs:
      case EventType.ExecMode:
      case EventType.Tsx:
      case EventType.Iflags:
      case EventType.Interrupt:
      case EventType.Smi:
      case EventType.Init:
      case EventType.Vmexit:
      case EventType.Shutdown:
      case EventType.Uintr:
        if (ev.ipSuppressed) break;
        status = this.proceedToIp(block, insn, ev.ipHi, ev.ipLo);
        if (status <= 0) return status;
        break;
      case EventType.Exstop:
      case EventType.Mwait:
        if (!this.enabled || ev.ipSuppressed) break;
        status = this.proceedToIp(block, insn, ev.ipHi, ev.ipLo);
        if (status <= 0) return status;
        break;
      case EventType.Ptwrite:
      case EventType.Iret:
      case EventType.Vmentry:
      case EventType.Uiret:
      case EventType.Swintr:
      case EventType.Syscall: {
        if (!this.enabled) break;
        const stop = BINDING_STOP[ev.type]!;
        // A software interrupt or system call binds at its instruction, the others after it.
        status =
          stop === Stop.SoftInt || stop === Stop.Syscall
            ? this.proceedToAt(block, insn, ev, stop)
            : this.proceedPast(block, insn, ev, stop);
        if (status <= 0) return status;
        this.bound |= 1 << stop;
        return this.postpone(insn);
      }
      case EventType.Trig:
        status = this.proceedToTrig(block, insn, ev);
        if (status <= 0) return status;
        break;
      case EventType.Tip:
      case EventType.Tnt:
        return -ErrorCode.Internal;
      default:
        // Enabled, Overflow, Stop, Pwre, Pwrx, Tick, Cbr, Mnt, Rsm, Sipi: no location.
        break;
    }
    return this.flags(Status.EventPending);
  }

  /**
   * Walk to the instruction a synchronous disable binds to: the branch to the disable
   * IP, or without one a MOV CR3 (or, with SKL014, the direct branch that left the
   * filter region).
   */
  private proceedToDisabled(block: Block, insn: FlowInsn, ev: PtEvent): number {
    if (!ev.ipSuppressed) return this.proceedToBranchTo(block, insn, ev.ipHi, ev.ipLo);
    // Without a filter configuration SKL014 cannot apply (and must not end tracing early).
    if (this.filter.configured && this.config.errata.skl014) return this.proceedSkl014(block, insn);
    // Far branches and CPL changes need trace: the caller handles -BadQuery.
    return this.proceedToInsn(block, insn, Stop.MovCr3);
  }

  /**
   * Walk to the branch a disable with an IP comes from. FilterEn and TraceStop change
   * only where a taken branch or an event lands (SDM "Filter Enable", "TraceStop"), so
   * a TIP.PGD(IP) is the target of a branch, never an IP that straight-line code runs
   * into: unlike libipt's `pt_blk_proceed_to_disabled` (which walks to the IP with
   * `pt_blk_proceed_to_ip`), reaching the IP sequentially does not place the event.
   * 1 a direct jump or call to the IP was walked (the IP is its target), -BadQuery a
   * branch that needs trace (the disable binds to it), 0 the block ended first, or -error.
   */
  private proceedToBranchTo(block: Block, insn: FlowInsn, hi: number, lo: number): number {
    for (;;) {
      const status = this.proceedOneInsn(block, insn);
      if (status <= 0) return status;
      const err = nextIp(insn);
      if (err < 0) return err;
      this.setIp(next.hi, next.lo);
      // nextIp went on without trace: straight on, or a direct jump or call (taken,
      // even with a zero displacement).
      const c = insn.info & 15;
      if ((c === FlowClass.Jump || c === FlowClass.Call) && this.atIp(hi, lo)) return 1;
      if (this.endsBlock(insn)) return 0;
    }
  }

  /**
   * SKL014: a TIP.PGD without IP may come from a direct jump or call that leaves the
   * filter region or enters a TraceStop region; the filter tells which one it was.
   */
  private proceedSkl014(block: Block, insn: FlowInsn): number {
    for (;;) {
      const status = this.proceedToInsn(block, insn, Stop.Skl014);
      if (status <= 0) return status;
      // A MOV CR3 is a location the erratum does not apply to.
      if (insn.has(InsnFact.MovCr3)) return status;
      const err = nextIp(insn);
      if (err < 0) return err;
      if (!this.filter.allows(next.hi, next.lo)) return 1;
      // The branch stays where tracing is on: not this one.
      this.setIp(next.hi, next.lo);
      // As libipt, a block the user ends here counts as having reached the location.
      if (this.endsBlock(insn)) return 1;
    }
  }

  /**
   * Where tracing should resume after a synchronous disable at `insn`: after a call,
   * at its return address; else unknown (0).
   */
  private setDisableResumeIp(insn: FlowInsn): void {
    const c = insn.info & 15;
    if (c === FlowClass.Call || c === FlowClass.FarCall) {
      fallThrough(insn);
      this.setIp(next.hi, next.lo);
    } else {
      this.setIp(0, 0);
    }
  }

  /**
   * Walk past the instruction an event binds to: the next one `stop` matches, or the
   * one at the event's IP (PTWRITE, IRET, VMENTRY, UIRET).
   */
  private proceedPast(block: Block, insn: FlowInsn, ev: PtEvent, stop: Stop): number {
    if (ev.ipSuppressed) return this.proceedToInsn(block, insn, stop);
    const status = this.proceedToIp(block, insn, ev.ipHi, ev.ipLo);
    if (status <= 0) return status;
    // The block may still overflow here, which postpones both instruction and event.
    return this.proceedOneInsn(block, insn);
  }

  /**
   * Walk to (not past) the instruction an event binds to, so that an asynchronous
   * branch or TIP from it can still be placed (INT n, SYSCALL).
   */
  private proceedToAt(block: Block, insn: FlowInsn, ev: PtEvent, stop: Stop): number {
    if (ev.ipSuppressed) return this.proceedToInsn(block, insn, stop);
    return this.proceedToIp(block, insn, ev.ipHi, ev.ipLo);
  }

  /**
   * Give a TRIG event without IP its anchor: the current IP, the instruction count
   * made relative to it (libipt `pt_blk_provide_trig_anchor`).
   */
  private provideTrigAnchor(ev: PtEvent): number {
    if (ev.type !== EventType.Trig || ev.ipSuppressed) return -ErrorCode.Internal;
    if (ev.ipHi !== 0 || ev.ipLo !== 0) return 0;
    if (!this.hasIcnt || ev.icnt < this.icnt) return -ErrorCode.BadPacket;
    ev.icnt -= this.icnt;
    ev.ipHi = this.ipHi;
    ev.ipLo = this.ipLo;
    return 0;
  }

  /** Walk to a TRIG's instruction: its anchor, then its count of instructions on. */
  private proceedToTrig(block: Block, insn: FlowInsn, ev: PtEvent): number {
    if (ev.ipSuppressed) return 1;
    let status = this.provideTrigAnchor(ev);
    if (status < 0) return status;
    if (!this.enabled) return ev.icnt === 0 ? -ErrorCode.Internal : 1;
    status = this.proceedToIp(block, insn, ev.ipHi, ev.ipLo);
    if (status <= 0) return status;
    // Progress is kept in the event, in case the block fills up on the way.
    while (ev.icnt !== 0) {
      status = this.proceedOneInsn(block, insn);
      if (status <= 0) return status;
      status = nextIp(insn);
      if (status < 0) return status;
      this.setIp(next.hi, next.lo);
      ev.ipHi = next.hi;
      ev.ipLo = next.lo;
      ev.icnt -= 1;
    }
    return 1;
  }

  /**
   * SKD022: an asynchronous disable on VMLAUNCH/VMRESUME may come from a bogus FUP.
   * Turn it into a synchronous disable: 1 done, 0 not applicable.
   */
  protected erratumSkd022(ev: PtEvent): number {
    const probe = this.probe;
    probe.reset(ev.fromHi, ev.fromLo, this.mode);
    if (this.code.decode(probe) < 0 || !probe.has(InsnFact.VmEntry)) return 0;
    ev.type = EventType.Disabled;
    return 1;
  }

  /**
   * BDM64: a TSX abort right after a branch that produced trace may have corrupted
   * that branch's trace. If the abort's IP cannot be reached from where the branch
   * led, assume the branch went there. 1 applied, 0 not applicable.
   */
  private erratumBdm64(block: Block, ev: PtEvent): number {
    if ((ev.flags & EventFlag.Aborted) === 0 || block.ninsn === 0) return 0;
    const probe = this.probe;
    probe.reset(block.endIpHi, block.endIpLo, block.mode);
    if (this.code.decode(probe) < 0 || !isBranch(probe)) return 0;
    if (this.rangeIsContiguous(ev.ipHi, ev.ipLo) > 0) return 1;
    this.setIp(ev.ipHi, ev.ipLo);
    return 1;
  }

  /**
   * Whether straight-line code leads from the IP to (hi:lo) within a few instructions
   * (libipt `pt_insn_range_is_contiguous`): 1 yes, 0 not within the limit, -error.
   */
  private rangeIsContiguous(hi: number, lo: number): number {
    const probe = this.probe;
    probe.reset(this.ipHi, this.ipLo, this.mode);
    for (let steps = BDM64_MAX_STEPS; probe.ipHi !== hi || probe.ipLo !== lo; steps--) {
      if (steps === 0) return 0;
      probe.reset(probe.ipHi, probe.ipLo, this.mode);
      const err = this.code.decode(probe);
      if (err < 0) return err;
      const status = nextIp(probe);
      if (status < 0) return status;
      probe.ipHi = next.hi;
      probe.ipLo = next.lo;
    }
    return 1;
  }

  /**
   * Whether a TSX event with an IP must wait: not at its IP yet (after the BDM64
   * check). 1 wait, 0 report it.
   */
  private postponeTsx(block: Block | null, ev: PtEvent): number {
    if (ev.ipSuppressed) return 0;
    if (block !== null && this.config.errata.bdm64) this.erratumBdm64(block, ev);
    return this.atIp(ev.ipHi, ev.ipLo) ? 0 : 1;
  }

  /** Whether an event with an IP is due here: tracing off, no IP, or at its IP. */
  private dueHere(ev: PtEvent): boolean {
    return !this.enabled || ev.ipSuppressed || this.atIp(ev.ipHi, ev.ipLo);
  }

  /**
   * Report events due at the current IP (libipt `pt_blk_proceed_trailing_event`):
   * after synchronising, after a block, after an event. `block` is the block just
   * decoded, or null. Status flags or -error.
   *
   * Most blocks end on a TNT bit with more bits to come and nothing postponed:
   * nothing is due then, which this small check (inlined into its callers) tells
   * before the general case.
   */
  protected proceedTrailingEvent(block: Block | null): number {
    const ev = this.ev;
    if (
      ev.type === EventType.Tnt &&
      ev.size !== 0 &&
      this.status >= 0 &&
      this.processInsn === false &&
      this.tickEvents === false
    )
      return this.enabled === true ? 0 : Status.IpSuppressed;
    return this.trailingEvent(block);
  }

  private trailingEvent(block: Block | null): number {
    const status = this.status;
    if (status < 0) {
      const err = this.proceedPostponed();
      if (err < 0) return err;
      // A pending event makes the caller fetch the decode error; the end is just a flag.
      return this.flags(status === -ErrorCode.Eos ? 0 : Status.EventPending);
    }
    const ev = this.ev;
    const pending = this.flags(Status.EventPending);
    let err: number;
    switch (ev.type) {
      case EventType.Tnt:
        // A tick on the first TNT bit used, if asked for and the time moved.
        if (
          !this.tickEvents ||
          block === null ||
          !ev.hasTsc ||
          (ev.tscLo === this.tscLo && ev.tscHi === this.tscHi)
        ) {
          if (ev.size !== 0) break;
          // The TNT was used up: the next event may be due here too.
          err = this.fetchEvent();
          if (err < 0) return err;
          return this.proceedTrailingEvent(block);
        }
        // A block that ended for other reasons than this TNT waits for its tick.
        if (block.iclass !== FlowClass.CondJump && block.iclass !== FlowClass.Return) break;
        // With tickOnUse, so does one that took none of its bits (the TNT was read
        // ahead to: the one before it used up, or a TIP taken).
        if (this.config.tickOnUse && this.fetchedAt === this.consumed) break;
        return pending;
      case EventType.Tip:
        break;
      case EventType.Disabled:
        if (!this.processInsn) {
          if (ev.statusUpdate) return pending;
          break;
        }
        return this.trailingDisabled(ev);
      case EventType.Enabled:
      case EventType.Tick:
      case EventType.Overflow:
      case EventType.Stop:
      case EventType.Pwre:
      case EventType.Pwrx:
      case EventType.Cbr:
      case EventType.Mnt:
        err = this.proceedPostponed();
        return err < 0 ? err : pending;
      case EventType.AsyncDisabled:
        err = this.proceedPostponed();
        if (err < 0) return err;
        if (!this.atIp(ev.fromHi, ev.fromLo)) break;
        if (this.config.errata.skd022) {
          // Turned into a synchronous disable, it is placed on the next call.
          err = this.erratumSkd022(ev);
          if (err !== 0) break;
        }
        return this.flags(Status.EventPending);
      case EventType.AsyncBranch:
        err = this.proceedPostponed();
        if (err < 0) return err;
        if (!this.atIp(ev.fromHi, ev.fromLo)) break;
        return this.flags(Status.EventPending);
      case EventType.Paging:
      case EventType.Vmcs: {
        if (!this.enabled) return pending;
        const stop = BINDING_STOP[ev.type]!;
        if (!this.bindsAgain(stop)) break;
        this.bound |= 1 << stop;
        return pending;
      }
      case EventType.AsyncPaging:
      case EventType.AsyncVmcs:
        err = this.proceedPostponed();
        if (err < 0) return err;
        if (!ev.ipSuppressed && !this.atIp(ev.ipHi, ev.ipLo)) break;
        return this.flags(Status.EventPending);
      case EventType.ExecMode:
        err = this.proceedPostponed();
        if (err < 0) return err;
        // With event tracing, mode changes are reported while tracing is off too.
        if (!this.dueHere(ev)) break;
        return this.flags(Status.EventPending);
      case EventType.Tsx:
        err = this.proceedPostponed();
        if (err < 0) return err;
        if (this.postponeTsx(block, ev) !== 0) break;
        return this.flags(Status.EventPending);
      case EventType.Exstop:
      case EventType.Mwait:
      case EventType.Iflags:
      case EventType.Interrupt:
      case EventType.Smi:
      case EventType.Init:
      case EventType.Vmexit:
      case EventType.Shutdown:
      case EventType.Uintr:
        err = this.proceedPostponed();
        if (err < 0) return err;
        if (!this.dueHere(ev)) break;
        return this.flags(Status.EventPending);
      case EventType.Ptwrite:
      case EventType.Iret:
      case EventType.Vmentry:
      case EventType.Uiret:
      case EventType.Swintr:
      case EventType.Syscall: {
        if (!this.enabled) return pending;
        const stop = BINDING_STOP[ev.type]!;
        if (!ev.ipSuppressed || !this.bindsAgain(stop)) break;
        this.bound |= 1 << stop;
        return pending;
      }
      case EventType.Rsm:
      case EventType.Sipi:
        err = this.proceedPostponed();
        if (err < 0) return err;
        return ev.ipSuppressed ? this.flags(Status.EventPending) : -ErrorCode.Internal;
      case EventType.Trig:
        err = this.proceedPostponed();
        if (err < 0) return err;
        // Placing it precisely needs its IP and tracing on.
        if (!this.enabled || ev.ipSuppressed) return this.flags(Status.EventPending);
        err = this.provideTrigAnchor(ev);
        if (err < 0) return err;
        // Not here yet: the next block walks to it.
        if (ev.icnt !== 0) break;
        if (!this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadPacket;
        return this.flags(Status.EventPending);
      default:
        break;
    }
    // Nothing more here: go past the postponed instruction.
    err = this.proceedPostponed();
    if (err < 0) return err;
    return this.flags(0);
  }

  /**
   * Whether an event of a kind that binds to an instruction binds to the postponed
   * one too: there is one, no event of this kind is bound to it yet, and it is one
   * `stop` matches.
   */
  private bindsAgain(stop: Stop): boolean {
    return this.processInsn && (this.bound & (1 << stop)) === 0 && stopsAt(stop, this.postponed);
  }

  /** A synchronous disable after events bound to the postponed instruction. */
  private trailingDisabled(ev: PtEvent): number {
    const insn = this.postponed;
    const pending = this.flags(Status.EventPending);
    // It may bind to a MOV CR3 ...
    if (ev.ipSuppressed && insn.has(InsnFact.MovCr3)) return pending;
    // ... or to the next branch that needs trace: this one, if it cannot go on without.
    const status = nextIp(insn);
    if (status < 0) {
      if (status !== -ErrorCode.BadQuery) return status;
      this.setDisableResumeIp(insn);
      return pending;
    }
    this.setIp(next.hi, next.lo);
    this.clearPostponed();
    // It went straight on (no instruction that binds events is a direct branch): that
    // is not where a disable with an IP comes from, even at that IP (see
    // proceedToBranchTo; libipt binds it here).
    return this.flags(0);
  }
}
