/**
 * The state of a block decoder (libipt's `struct pt_block_decoder`) and the steps
 * that consume trace: fetching events, taking TNT bits and TIPs, RET compression,
 * tick events, and the instruction an event binding was postponed on.
 *
 * The decoder is split by concern over a class chain, one file each: this state,
 * BlockStep (one instruction at a time), BlockFill (filling the block cache),
 * BlockWalk (following code), BlockEvents (placing events) and BlockDecoder (the
 * API). Fields are plain numbers and booleans, 64-bit values as unsigned 32-bit
 * halves.
 *
 * The per-block paths test booleans with `=== true` / `=== false`: V8 keeps no type
 * for boolean fields, and a bare `if (this.flag)` becomes a full truthiness test.
 */

import * as errors from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import type { DecoderConfig } from "../event/config.js";
import { EventDecoder } from "../event/decoder.js";
import * as eventTypes from "../event/types.js";
import { PtEvent } from "../event/types.js";
import * as addr from "../image/addr.js";
import type { Image, ImageSet } from "../image/index.js";
import * as isa from "../isa/index.js";
import { PSB_SIZE } from "../packet/decode.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import { AddrFilterCheck } from "./addr-filter.js";
import { CodeReader, type SectionCaches } from "./code-reader.js";
import * as flowClass from "./flow-class.js";
import * as flowInsn from "./flow-insn.js";
import { FlowInsn } from "./flow-insn.js";
import { ReturnStack } from "./return-stack.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { EventType, Status } = eventTypes;
type EventType = eventTypes.EventType;
const { TWO_32 } = addr;
const { ExecMode } = isa;
type ExecMode = isa.ExecMode;
const { ErrorCode } = errors;
const { FlowClass, InsnFact } = flowClass;
const { addOffset, branchTarget, fallThrough, next, nextIp } = flowInsn;

/** An event type no event has: the current event after an event-decoder error. */
export const NO_EVENT = 0xff as EventType;

/** Where the trace comes from and what the code looked like. */
export interface FlowOptions {
  /** How the trace was recorded (errata, filter, flags); libipt's zero config by default. */
  config?: DecoderConfig;
  /** The memory image (one address space). */
  image?: Image;
  /** Images per address space; the image follows PIP (CR3) and VMCS changes. */
  images?: ImageSet;
  /**
   * Instructions a walk may take without consuming trace before the decoder checks
   * whether the code loops without trace (loop-guard.ts; default LOOP_CHECK_AFTER).
   */
  loopCheckAfter?: number;
  /** Decode `trace[begin, end)`; offsets are relative to begin. */
  begin?: number;
  end?: number;
  /**
   * Section caches shared with other decoders of the same code (one thread decoding
   * pieces of a trace in turn); by default the decoder's own.
   */
  caches?: SectionCaches;
}

/** Where {@link FlowState.aheadTime} puts the time ahead: InsnDecoder's fields of it. */
export interface AheadTime {
  walkTscHi: number;
  walkTscLo: number;
  walkSeq: number;
}

export class FlowState {
  protected readonly evdec: EventDecoder;
  /** A second event decoder to read ahead on (made on first use). */
  private spare: EventDecoder | null = null;
  /** While the event decoder may go back to a copy: that copy's offset (else -1). */
  private pinned = -1;
  protected readonly config: DecoderConfig;
  protected readonly filter: AddrFilterCheck;
  protected readonly tickEvents: boolean;
  /** Blocks end at every call (and jump) (the block decoder; see DecoderConfig). */
  readonly endOnCall: boolean;
  readonly endOnJump: boolean;
  /** Bytes of trace (for syncBackward's start when not synchronised). */
  protected readonly traceEnd: number;

  /** The memory image and the code caches. */
  readonly code: CodeReader;
  protected readonly stack = new ReturnStack();
  /** The current event: valid while {@link status} is not negative. */
  protected readonly ev = new PtEvent();
  /** Scratch event for look-ahead. */
  protected readonly evAside = new PtEvent();
  /** The time of the events {@link fetchEventWithoutIp} passed by. */
  private readonly passedBy = new PtEvent();
  /** The instruction events are bound to before proceeding past it (`process_insn`). */
  protected readonly postponed = new FlowInsn();

  /** Start of the next block; where tracing is expected to resume while disabled. */
  ipHi = 0;
  ipLo = 0;
  /** Time of the last event consumed. */
  tscHi = 0;
  tscLo = 0;
  lostMtc = 0;
  lostCyc = 0;
  protected cbr = 0;
  /** Instructions since the last TRIG anchor (valid with hasIcnt). */
  protected icnt = 0;
  /**
   * Counts the trace consumed: events fetched, TNT bits taken, TIPs read ahead, ticks
   * made of TIPs. The block decoder compares it around a block (its loop guard counts
   * the blocks that consumed none).
   */
  protected consumed = 0;
  /** {@link consumed} when the current event was fetched: still so for a TNT none of whose bits was taken. */
  protected fetchedAt = -1;
  mode: ExecMode = ExecMode.Unknown;
  /** The event decoder's last status; negative once it failed (-Eos at the end). */
  protected status = -ErrorCode.NoSync;
  enabled = false;
  speculative = false;
  protected hasTsc = false;
  protected hasCbr = false;
  protected hasIcnt = false;
  protected processInsn = false;
  /**
   * Kinds of event already bound to the postponed instruction: bit `1 << stop` for
   * the Stop (block-step.ts) each binds to (Pip for paging, Vmcs, Ptwrite, Iret, ...).
   */
  protected bound = 0;

  /**
   * The time of the trace the decoder walks to next: the current event's (the TNT,
   * TIP or event the next instructions lead to), else that of the last one consumed.
   * Linux perf's decoder applies the timing packets before a packet before it walks
   * to where the packet applies, so its clock (perf script's instruction sampling by
   * time, its estimates) is this one, not {@link tscHi}:{@link tscLo}.
   */
  get aheadTscHi(): number {
    return this.aheadOfEvent() ? this.ev.tscHi : this.tscHi;
  }

  get aheadTscLo(): number {
    return this.aheadOfEvent() ? this.ev.tscLo : this.tscLo;
  }

  /** The current event's PtEvent.timingSeq (perf's clock; -1 without a current event). */
  get aheadTimingSeq(): number {
    return this.status >= 0 ? this.ev.timingSeq : -1;
  }

  /**
   * {@link aheadTscHi}, {@link aheadTscLo} and {@link aheadTimingSeq} into `out` in one
   * call (the instruction decoder takes them before every block: three getter calls
   * were 1.5% of its time on a large program).
   */
  aheadTime(out: AheadTime): void {
    const ofEvent = this.aheadOfEvent();
    out.walkTscHi = ofEvent ? this.ev.tscHi : this.tscHi;
    out.walkTscLo = ofEvent ? this.ev.tscLo : this.tscLo;
    out.walkSeq = this.aheadTimingSeq;
  }

  /** The time ahead is the current event's (see {@link aheadTscHi}). */
  private aheadOfEvent(): boolean {
    return this.status >= 0 && this.ev.hasTsc;
  }

  /** Decode `trace` (held in memory, or read a window at a time: see {@link traceFloor}). */
  constructor(trace: Uint8Array | TraceBytes, options: FlowOptions, config: DecoderConfig) {
    // Addresses and times: see doubleFields (a decoder is made once, so on itself).
    doubleFields(this, ["ipHi", "ipLo", "tscHi", "tscLo"]);
    this.config = config;
    this.evdec = new EventDecoder(trace, config, { begin: options.begin, end: options.end });
    this.traceEnd = this.evdec.bytes.size;
    this.evdec.bytes.floor = () => this.traceFloor();
    this.filter = new AddrFilterCheck(config.addrFilter);
    this.tickEvents = config.enableTickEvents;
    this.endOnCall = config.endOnCall;
    this.endOnJump = config.endOnJump;
    this.code = new CodeReader(options.image ?? null, options.images ?? null, options.caches);
  }

  /**
   * The lowest trace offset this decoder may still read (asked by a trace read a
   * window at a time before it reads on): the packet the event decoder is at, the
   * one a look-ahead may go back to, and inside PSB+ the PSB a resync goes back to;
   * less a PSB's size, which a sync may look back for a PSB an error cut into.
   */
  private traceFloor(): number {
    const evdec = this.evdec;
    let low = evdec.offset;
    if (low < 0) return -1;
    if (this.pinned >= 0 && this.pinned < low) low = this.pinned;
    if (this.ev.statusUpdate && evdec.syncOffset >= 0 && evdec.syncOffset < low) low = evdec.syncOffset;
    return low - PSB_SIZE;
  }

  /** Forget everything but the trace position (libipt `pt_blk_reset`). */
  protected reset(): void {
    this.tscHi = 0;
    this.tscLo = 0;
    this.lostMtc = 0;
    this.lostCyc = 0;
    this.cbr = 0;
    this.icnt = 0;
    this.mode = this.config.perfMode64 ? ExecMode.Bits64 : ExecMode.Unknown;
    this.ipHi = 0;
    this.ipLo = 0;
    this.status = -ErrorCode.NoSync;
    this.enabled = false;
    this.speculative = false;
    this.hasTsc = false;
    this.hasCbr = false;
    this.hasIcnt = false;
    this.clearPostponed();
    this.ev.type = NO_EVENT;
    this.stack.clear();
    this.code.resetAsid();
  }

  /** Status flags as returned to users: `flags` plus IpSuppressed and Eos as they apply. */
  protected flags(flags: number): number {
    if (!this.enabled) flags |= Status.IpSuppressed;
    if (this.status === -ErrorCode.Eos) flags |= Status.Eos;
    return flags;
  }

  protected atIp(hi: number, lo: number): boolean {
    return this.ipLo === lo && this.ipHi === hi;
  }

  protected setIp(hi: number, lo: number): void {
    this.ipHi = hi;
    this.ipLo = lo;
  }

  /** IP = (baseHi:baseLo) + x for -2^32 < x < 2^53 (a section offset, or where a branch leads). */
  protected setIpAt(baseHi: number, baseLo: number, x: number): void {
    const lo = baseLo + x;
    if (x >= 0 && lo < TWO_32) {
      // The common case, without a carry into the high half.
      this.ipHi = baseHi;
      this.ipLo = lo;
    } else {
      addOffset(baseHi, baseLo, x);
      this.ipHi = next.hi;
      this.ipLo = next.lo;
    }
  }

  /**
   * Done with the current event: remember its time, update the TRIG anchor, and read
   * the next one (libipt `pt_blk_fetch_event`). An event-decoder error is kept in
   * {@link status}, to be reported when it matters; the result is 0 or -Internal.
   */
  protected fetchEvent(): number {
    const err = this.passEvent(this.ev);
    return err < 0 ? err : this.readEvent();
  }

  /**
   * {@link fetchEvent} where Linux perf's resync passes events by without a look (its
   * decoder has no IP: see BlockDecoder.perfResync): the TNTs and compressed TIPs after
   * the current event are gone past in the event decoder without being made
   * (EventDecoder.skipWithoutIp), as though each had been fetched.
   */
  protected fetchEventWithoutIp(): number {
    const err = this.passEvent(this.ev);
    if (err < 0) return err;
    const passed = this.passedBy;
    const n = this.evdec.skipWithoutIp(passed);
    if (n > 0) {
      // (Each a TNT or TIP: a TRIG anchor, and the last one's time.)
      passed.type = EventType.Tnt;
      this.consumed += n - 1;
      this.passEvent(passed);
    }
    return this.readEvent();
  }

  /** The event decoder's next event into {@link ev} (its error kept in {@link status}): 0. */
  private readEvent(): number {
    const ev = this.ev;
    const status = this.evdec.next(ev);
    if (status < 0) {
      this.status = status;
      ev.type = NO_EVENT;
    }
    return 0;
  }

  /** Done with event `ev`: trace consumed, its time kept, the TRIG anchor updated. */
  private passEvent(ev: PtEvent): number {
    this.consumed += 1;
    this.fetchedAt = this.consumed;
    this.tscHi = ev.tscHi;
    this.tscLo = ev.tscLo;
    this.hasTsc = ev.hasTsc;
    this.lostMtc = ev.lostMtc;
    this.lostCyc = ev.lostCyc;
    return this.updateTrigAnchor(ev);
  }

  /**
   * Events whose packets carry an IP are TRIG anchors: TRIG's instruction count starts
   * there (libipt `pt_blk_find_trig_anchor`).
   */
  private updateTrigAnchor(ev: PtEvent): number {
    // TNT first: a switch tests its cases in order.
    switch (ev.type) {
      case EventType.Tnt:
      case EventType.Tip:
      case EventType.Enabled:
      case EventType.AsyncBranch:
        if (ev.ipSuppressed) return -ErrorCode.Internal;
        this.setTrigAnchor(true);
        return 0;
      case EventType.Paging:
      case EventType.Sipi:
      case EventType.Cbr:
      case EventType.Mnt:
      case EventType.Stop:
      case EventType.Vmcs:
      case EventType.Mwait:
      case EventType.Pwre:
      case EventType.Pwrx:
        return 0;
      case EventType.Disabled:
      case EventType.AsyncDisabled:
        this.setTrigAnchor(false);
        return 0;
      case EventType.Overflow:
        this.setTrigAnchor(!ev.ipSuppressed);
        return 0;
      case NO_EVENT:
        return -ErrorCode.Internal;
      default:
        if (!ev.ipSuppressed) this.setTrigAnchor(true);
        return 0;
    }
  }

  private setTrigAnchor(on: boolean): void {
    this.hasIcnt = on;
    this.icnt = 0;
  }

  /**
   * We consumed a TIP: report a tick on it if asked for and the time moved, else go
   * to the next event (libipt `pt_blk_tick`). `hi:lo` is the IP the tick is at.
   */
  private tick(hi: number, lo: number): number {
    const ev = this.ev;
    if (this.tickEvents && (ev.tscLo !== this.tscLo || ev.tscHi !== this.tscHi)) {
      this.consumed += 1;
      ev.type = EventType.Tick;
      ev.ipHi = hi;
      ev.ipLo = lo;
      return 0;
    }
    return this.fetchEvent();
  }

  /**
   * The destination of an indirect branch from a TIP (libipt `pt_blk_proceed_indirect`).
   * A TIP may be deferred behind the TNT in progress: read ahead for it on a copy of
   * the event decoder and keep the TNT current.
   */
  protected proceedIndirect(): number {
    const ev = this.ev;
    if (ev.type === EventType.Tip) {
      if (ev.ipSuppressed) return -ErrorCode.BadPacket;
      const hi = this.ipHi;
      const lo = this.ipLo;
      this.setIp(ev.ipHi, ev.ipLo);
      return this.tick(hi, lo);
    }
    if (ev.type !== EventType.Tnt) return -ErrorCode.BadQuery;
    const saved = this.copyOfEvents();
    const tnt = this.evAside.copyFrom(ev);
    this.pinned = saved.offset;
    const status = this.evdec.next(ev);
    this.pinned = -1;
    if (status < 0 || (ev.type as EventType) !== EventType.Tip) {
      this.evdec.copyFrom(saved);
      ev.copyFrom(tnt);
      return -ErrorCode.BadQuery;
    }
    this.setIp(ev.ipHi, ev.ipLo);
    this.consumed += 1;
    // No tick for this TIP: the TNT in progress must stay the current event.
    ev.copyFrom(tnt);
    return 0;
  }

  /**
   * Take the next TNT bit (libipt `pt_blk_cond_branch`): 1 taken, 0 not taken,
   * -BadQuery when the current event is no TNT. The event stays current when its last
   * bit is taken (so that a tick can still be reported on it).
   */
  protected condBranch(): number {
    const ev = this.ev;
    if (ev.type !== EventType.Tnt) return -ErrorCode.BadQuery;
    let size = ev.size;
    if (size === 0) return -ErrorCode.Internal;
    size -= 1;
    ev.size = size;
    this.consumed += 1;
    return (size >= 32 ? ev.payloadHi >>> (size - 32) : ev.payloadLo >>> size) & 1;
  }

  /**
   * The time of the first event from the current one on that `passed` does not pass,
   * read ahead on the event decoder, which is then put back: whether it has one (its
   * TSC halves then in `out`).
   */
  protected timeAhead(passed: (ev: PtEvent) => boolean, out: { hi: number; lo: number }): boolean {
    const ev = this.ev;
    const saved = this.copyOfEvents();
    const current = this.evAside.copyFrom(ev);
    this.pinned = saved.offset;
    let status = 0;
    while (status >= 0 && passed(ev)) status = this.evdec.next(ev);
    const timed = status >= 0 && ev.hasTsc;
    if (timed) {
      out.hi = ev.tscHi;
      out.lo = ev.tscLo;
    }
    this.pinned = -1;
    this.evdec.copyFrom(saved);
    ev.copyFrom(current);
    return timed;
  }

  /** A copy of the event decoder in its current state, to read ahead on or go back to. */
  protected copyOfEvents(): EventDecoder {
    this.spare ??= this.evdec.clone();
    return this.spare.copyFrom(this.evdec);
  }

  /** Push a near call's return address (libipt `pt_blk_log_call`). */
  protected logCall(insn: FlowInsn): void {
    if ((insn.info & 15) !== FlowClass.Call) return;
    // A call to the next instruction (position-independent code) is not a call.
    if (insn.has(InsnFact.Direct) && insn.disp === 0) return;
    fallThrough(insn);
    this.stack.push(next.hi, next.lo);
  }

  /**
   * We could not go on without trace after `insn`: use trace for the last step to the
   * next block's start (libipt `pt_blk_proceed_with_trace`).
   */
  protected proceedWithTrace(insn: FlowInsn): number {
    switch (insn.info & 15) {
      case FlowClass.CondJump: {
        const taken = this.condBranch();
        if (taken < 0) return taken;
        if (taken === 0) fallThrough(insn);
        else branchTarget(insn);
        this.setIp(next.hi, next.lo);
        return 0;
      }
      case FlowClass.Return: {
        // A compressed return is a taken TNT bit.
        const taken = this.condBranch();
        if (taken === -ErrorCode.BadQuery) break;
        if (taken < 0) return taken;
        if (taken === 0) return -ErrorCode.BadRetComp;
        return this.popReturn();
      }
      case FlowClass.Jump:
      case FlowClass.Call:
        if (insn.has(InsnFact.Direct)) return -ErrorCode.Internal;
        break;
      case FlowClass.FarCall:
      case FlowClass.FarReturn:
      case FlowClass.FarJump:
      case FlowClass.Indirect:
        break;
      case FlowClass.Unknown:
        return -ErrorCode.BadInsn;
      default:
        return -ErrorCode.Internal;
    }
    return this.proceedIndirect();
  }

  /** A compressed return: continue at the popped return address. */
  protected popReturn(): number {
    const err = this.stack.pop();
    if (err < 0) return err;
    this.setIp(this.stack.poppedHi, this.stack.poppedLo);
    return 0;
  }

  /** Tracing starts (libipt `pt_blk_process_enabled`). 0 or -error. */
  protected processEnabled(ev: PtEvent): number {
    // A status update only checks consistency.
    if (ev.statusUpdate) return this.enabled ? 0 : -ErrorCode.BadStatusUpdate;
    if (ev.ipSuppressed) return -ErrorCode.NoIp;
    if (this.enabled) return -ErrorCode.BadContext;
    this.setIp(ev.ipHi, ev.ipLo);
    this.enabled = true;
    return 0;
  }

  /**
   * Tracing stops (libipt `pt_blk_process_disabled`). The IP stays: it is where
   * tracing is expected to resume. 0 or -error.
   */
  protected processDisabled(ev: PtEvent): number {
    if (ev.statusUpdate) return this.enabled ? -ErrorCode.BadStatusUpdate : 0;
    if (!this.enabled) return -ErrorCode.BadContext;
    this.enabled = false;
    // TRIG counts from the anchor again: our IP goes stale while tracing is off.
    this.icnt = 0;
    return 0;
  }

  /** A new CR3 or VMCS base (libipt `pt_blk_process_paging` / `_vmcs`). */
  protected processAsid(ev: PtEvent): void {
    const code = this.code;
    const hi = ev.payloadHi;
    const lo = ev.payloadLo;
    if (ev.type === EventType.Paging || ev.type === EventType.AsyncPaging) {
      if (hi !== code.cr3Hi || lo !== code.cr3Lo) code.setAsid(hi, lo, code.vmcsHi, code.vmcsLo);
    } else if (hi !== code.vmcsHi || lo !== code.vmcsLo) {
      code.setAsid(code.cr3Hi, code.cr3Lo, hi, lo);
    }
  }

  /**
   * An overflow resolved (libipt `pt_blk_process_overflow`): with an IP tracing is on
   * there, without one it is off. TSX state is unknown (assume none); the mode is kept.
   */
  protected processOverflow(ev: PtEvent): number {
    if (ev.statusUpdate) return -ErrorCode.BadContext;
    if (ev.ipSuppressed) {
      this.enabled = false;
      this.setIp(0, 0);
    } else {
      this.enabled = true;
      this.setIp(ev.ipHi, ev.ipLo);
    }
    this.speculative = false;
    return 0;
  }

  /** Hold `insn` until the events that bind to it are reported (libipt `pt_blk_postpone_insn`). */
  protected postpone(insn: FlowInsn): number {
    if (this.processInsn) return -ErrorCode.Internal;
    this.processInsn = true;
    this.postponed.copyFrom(insn);
    return this.flags(Status.EventPending);
  }

  protected clearPostponed(): void {
    this.processInsn = false;
    this.bound = 0;
  }

  /** Go past the postponed instruction, if any (libipt `pt_blk_proceed_postponed_insn`). */
  protected proceedPostponed(): number {
    if (!this.processInsn) return 0;
    if (this.enabled) {
      const insn = this.postponed;
      const status = nextIp(insn);
      if (status === 0) {
        this.setIp(next.hi, next.lo);
      } else {
        if (status !== -ErrorCode.BadQuery) return status;
        const err = this.proceedWithTrace(insn);
        if (err < 0) return err;
      }
    }
    this.clearPostponed();
    return 0;
  }
}
