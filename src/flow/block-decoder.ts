/**
 * The block decoder (libipt's `pt_blk_*`): Intel PT trace plus the memory image in,
 * blocks of instructions and events out.
 *
 * ```ts
 * const dec = new BlockDecoder(trace, { image, config });
 * drive(dec, new Block(), { record: (block) => count(block.ninsn), event: (ev) => log(ev) });
 * ```
 *
 * {@link drive} is the whole loop (drive.ts); one written by hand has this shape:
 * ```ts
 * let status = dec.syncForward();
 * while (status !== -ErrorCode.Eos) {
 *   if (status < 0) { report(status, dec.offset); status = dec.syncForward(); continue; }
 *   while (status >= 0 && status & Status.EventPending) status = dec.event(ev); // events first
 *   if (status < 0) continue;
 *   if (status & Status.Eos) break;
 *   status = dec.next(block); // then a block: its instructions count even when status < 0
 * }
 * ```
 * (a failed synchronisation that does not move on should end it: see drive).
 *
 * Every call returns status flags ({@link Status}) or -{@link ErrorCode}: EventPending
 * says to call {@link event} before the next {@link next}; IpSuppressed that tracing is
 * off; Eos that the trace ended. Errors carry the trace offset in {@link offset}.
 *
 * Code that loops without needing trace (`jmp $`) while trace is left that it never
 * reaches ends in -BadQuery ("trace stream does not match query", at the decoder's
 * {@link offset} as other errors), once the walk without trace has gone
 * LOOP_CHECK_AFTER instructions and come back to where it was (loop-guard.ts).
 * libipt has no such guard and walks the loop forever; of its errors, BadQuery is the
 * one for trace that the code does not match. The instructions before the error are
 * reported as usual, the same ones from the block and the instruction decoder.
 */

import * as errors from "../base/errors.js";
import { toBigInt } from "../base/halves.js";
import { defaultDecoderConfig } from "../event/config.js";
import type { PtEvent } from "../event/types.js";
import * as eventTypes from "../event/types.js";
import type { Image } from "../image/index.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import { BlockEvents } from "./block-events.js";
import * as flowClass from "./flow-class.js";
import type { FlowOptions } from "./flow-state.js";
import * as flowState from "./flow-state.js";
import type { Block } from "./records.js";
import { InsnMeta } from "./section-cache.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { EventFlag, EventType, Status } = eventTypes;
const { ErrorCode } = errors;
const { NO_EVENT } = flowState;
const { FACT_SHIFT, InsnFact } = flowClass;

/** What {@link BlockDecoder.nextRun} counts: blocks, and their instructions. */
export class BlockTally {
  blocks = 0;
  insns = 0;
}

export class BlockDecoder extends BlockEvents {
  /** The isa InsnClass of the instruction {@link decodedInsn} found last. */
  decodedClass = 0;
  /** Bytes from that instruction to where execution goes on (see {@link decodedInsn}). */
  decodedStep = 0;
  private decodedDisp = 0;
  private decodedOff = 0;
  /**
   * Where in the trace ({@link EventDecoder.pos}) the last resync and the one before it
   * started, -1 for none since the user synchronised: see {@link resync}.
   */
  private resyncFrom = -1;
  private resyncBefore = -1;
  /** The last resync returned -EventIgnored: the next call goes on with it. */
  private resyncIgnored = false;
  /**
   * {@link resync} as Linux perf's decoder takes up again after an error: only at an
   * address a packet gave whole (PtEvent.fullIps; it forgets the last IP, so bits of
   * one are no address to it), or at a PSB.
   */
  perfResync = false;
  /**
   * The last {@link resync} took up at an address a packet gave (a TIP's, or with
   * {@link perfResync} an asynchronous branch's destination), not at an event nor a
   * PSB: no event says that tracing goes on there (perf shows a trace start).
   */
  resyncedAtAddress = false;
  /** Where {@link resyncedAtAddress}: the time of the event there (see {@link resyncTime}). */
  private resyncTimed = false;
  private resyncTscHi = 0;
  private resyncTscLo = 0;
  private resyncSeq = 0;

  constructor(trace: Uint8Array | TraceBytes, options: FlowOptions = {}) {
    super(trace, options, options.config ?? defaultDecoderConfig());
  }

  /** Synchronise onto the next PSB (libipt `pt_blk_sync_forward`): status flags or -error. */
  syncForward(): number {
    this.forgetResyncs();
    return this.syncNext();
  }

  private syncNext(): number {
    this.reset();
    const err = this.evdec.syncForward();
    return err < 0 ? err : this.start();
  }

  private forgetResyncs(): void {
    this.resyncFrom = -1;
    this.resyncBefore = -1;
    this.resyncIgnored = false;
  }

  /**
   * Synchronise onto the PSB before the current position, or before the end when not
   * synchronised (libipt `pt_blk_sync_backward`): 0 or -error. Incomplete PSB+ at the
   * end are skipped.
   */
  syncBackward(): number {
    this.forgetResyncs();
    const evdec = this.evdec;
    const start = evdec.pos < 0 ? this.traceEnd : evdec.pos;
    let sync = start;
    for (;;) {
      this.reset();
      let pos: number;
      do {
        const err = evdec.syncBackward();
        if (err < 0) return err;
        pos = evdec.pos;
      } while (sync <= pos);
      sync = pos;
      const status = this.start();
      if (status < 0) {
        if (status !== -ErrorCode.Eos) return status;
        continue;
      }
      // Starting inside or right after PSB+ may find the same PSB again.
      if (evdec.pos < start) return 0;
    }
  }

  /** Synchronise onto the PSB at `offset` (libipt `pt_blk_sync_set`). */
  syncSet(offset: number): number {
    this.forgetResyncs();
    return this.syncAt(offset);
  }

  private syncAt(offset: number): number {
    this.reset();
    const err = this.evdec.syncSet(offset);
    return err < 0 ? err : this.start();
  }

  /** Trace offset of the packet the decoder is at (for error messages), or -NoSync. */
  get offset(): number {
    return this.evdec.offset;
  }

  /** Offset of the last PSB, or -NoSync. */
  get syncOffset(): number {
    return this.evdec.syncOffset;
  }

  get image(): Image {
    return this.code.image;
  }

  /**
   * The length of `block`'s last instruction where the decoder has it without decoding
   * (a truncated instruction's bytes, the decode cache of the section it just walked),
   * else 0. ptkit's own (libipt's pt_block has no such field): for the fall-through of
   * the block's last instruction, which tells a conditional branch not taken.
   */
  lastInsnSize(block: Block): number {
    if (block.ninsn === 0) return 0;
    if (block.truncated) return block.size;
    if (block.lastSize !== 0) return block.lastSize;
    if (this.code.msec.section?.id !== block.isid) return 0;
    const meta = this.metaAt(block.endIpHi, block.endIpLo, block.mode);
    return meta === 0 ? 0 : InsnMeta.size(meta);
  }

  /**
   * {@link lastInsnSize} from the decode cache alone, with the instruction's isa class
   * in {@link decodedClass}: 0 where the cache does not have it (a truncated
   * instruction, a block of another section, one not decoded there), and the caller
   * decodes it. (ptkit perf asks for the class of every block's last call or jump.)
   */
  lastInsnDecoded(block: Block): number {
    if (block.ninsn === 0 || block.truncated || this.code.msec.section?.id !== block.isid) return 0;
    return this.decodedInsn(block.endIpHi, block.endIpLo, block.mode);
  }

  /**
   * The instruction at (hi:lo) in `mode` as the decode cache of the section the decoder
   * walked last (that of the block it returned last) has it: its size, its isa class
   * in {@link decodedClass} and in {@link decodedStep} how far on execution goes (its
   * size, plus the displacement for a direct branch); 0 when it is not decoded there
   * (or runs past the mapped part). ptkit's own: the analysis walks each new block's
   * instructions again, and need not decode what the decoder did.
   */
  decodedInsn(hi: number, lo: number, mode: number): number {
    const meta = this.metaAt(hi, lo, mode);
    if (meta === 0) return 0;
    const size = InsnMeta.size(meta);
    if (this.decodedOff + size > this.code.msec.winEnd) return 0;
    this.decodedClass = InsnMeta.iclass(meta);
    this.decodedStep =
      (InsnMeta.info(meta) >>> FACT_SHIFT) & InsnFact.Direct ? size + this.decodedDisp : size;
    return size;
  }

  /** The decode cache's instruction at (hi:lo) in `mode` in the section walked last (0: none); its offset in decodedOff. */
  private metaAt(hi: number, lo: number, mode: number): number {
    const view = this.code.msec;
    const cache = view.cache;
    if (cache === null) return 0;
    const l = lo >>> 0;
    const off = (l - (view.baseLo >>> 0)) >>> 0;
    const borrow = l < view.baseLo >>> 0 ? 1 : 0;
    if (((hi - view.baseHi - borrow) | 0) !== 0 || off < view.winBegin || off >= view.winEnd) return 0;
    const page = cache.page(off);
    const i = off - page.start;
    const meta = page.meta[i]!;
    if (meta === 0 || InsnMeta.mode(meta) !== mode) return 0;
    this.decodedOff = off;
    this.decodedDisp = page.disp[i]!;
    return meta;
  }

  /** Decode in `image` from now on (libipt `pt_blk_set_image`). */
  set image(image: Image) {
    this.code.setImage(image);
  }

  /**
   * Take over the state PSB+ announces: read its status updates on a copy of the event
   * decoder (they are reported to the user as events too), then fetch the first event
   * (libipt `pt_blk_start`).
   */
  private start(): number {
    this.traceConsumed();
    const look = this.copyOfEvents();
    const ev = this.evAside;
    while (look.pos === this.evdec.pos) {
      const err = look.next(ev);
      if (err < 0) {
        if (err !== -ErrorCode.Eos) return err;
        break;
      }
      if (!ev.statusUpdate) break;
      if (ev.type === EventType.Enabled) {
        this.enabled = true;
        this.setIp(ev.ipHi, ev.ipLo);
        break;
      }
    }
    this.status = this.evdec.next(this.ev);
    if (this.status < 0) this.ev.type = NO_EVENT;
    return this.proceedTrailingEvent(null);
  }

  /**
   * The next block of instructions into `block` (libipt `pt_blk_next`): status flags
   * or -error. The block may be empty (ninsn 0) when an event came first; on error it
   * holds what was decoded before the error (for diagnostics).
   */
  next(block: Block): number {
    this.beginBlock(block);
    const status = this.proceed(block);
    // In a run, the block may be one the cache walk began (BlockWalk.runOn).
    if (this.blockConsumed === this.consumed) return this.walkedWithoutTrace(block, status);
    // Trace was consumed (an event, a TIP, a TNT bit): a walk without trace is over.
    if (this.guard.idle !== 0) this.traceConsumed();
    return status;
  }

  /**
   * Blocks while only their counts are wanted (`ptkit flow --quiet --stat`): the same as
   * calling {@link next} until it returns other than 0 (an event due, tracing off, the
   * end, an error), adding each block and its instructions to `tally`; `block` holds
   * the last. The caller's loop around each block was as costly as the block's walk on
   * a loop-heavy trace; the cache walk goes on from block to block itself where it can
   * (BlockWalk.runOn), counting the blocks it passes in runBlocks and runInsns.
   */
  nextRun(block: Block, tally: BlockTally): number {
    let blocks = 0;
    let insns = 0;
    let status: number;
    this.inRun = true;
    do {
      status = this.next(block);
      blocks += 1;
      insns += block.ninsn;
    } while (status === 0);
    this.inRun = false;
    tally.blocks += blocks + this.runBlocks;
    tally.insns += insns + this.runInsns;
    this.runBlocks = 0;
    this.runInsns = 0;
    return status;
  }

  /**
   * After a block that consumed no trace: count it, cut the next block where the loop
   * guard starts checking (then one instruction per block), and end a walk that came
   * back to where it was with -BadQuery, with the block that got there.
   */
  private walkedWithoutTrace(block: Block, status: number): number {
    if (status < 0) return status;
    const guard = this.guard;
    guard.walked(block.ninsn);
    if (!guard.isNear()) return status;
    this.insnCap = guard.cap();
    // An event due here is reported next, and that consumes trace.
    if ((status & Status.EventPending) === 0 && guard.loops(this.ipHi, this.ipLo, this.ev.icnt))
      return -ErrorCode.BadQuery;
    return status;
  }

  private proceed(block: Block): number {
    const status = this.status;
    if (status < 0) {
      if (status !== -ErrorCode.Eos) return status;
      // Out of trace, but the code may go on until it needs some (the next segment's
      // trace may pick up from there); tracing must be on, though.
      if (!this.enabled) return -ErrorCode.Eos;
      const err = this.proceedNoEvent(block);
      return err < 0 ? err : Status.Eos;
    }
    const type = this.ev.type;
    if (type === EventType.Tnt || type === EventType.Tip) {
      if (this.enabled !== true) return -ErrorCode.NoEnable;
      const err = this.proceedNoEvent(block);
      if (err < 0) return err;
      return this.proceedTrailingEvent(block);
    }
    return this.proceedEvent(block);
  }

  /**
   * The pending event into `out` (libipt `pt_blk_event`): status flags (EventPending
   * if another is due) or -error (-BadQuery when none is due here).
   */
  event(out: PtEvent): number {
    const status = this.takeEvent(out);
    // An event reported is trace consumed.
    if (status >= 0 && this.guard.idle !== 0) this.traceConsumed();
    return status;
  }

  private takeEvent(out: PtEvent): number {
    if (this.status < 0) return this.status;
    const ev = this.ev;
    let err = 0;
    switch (ev.type) {
      case EventType.Tnt:
        return this.tickOnTnt(out);
      case EventType.Enabled:
        // Tracing resumes where it stopped (after a call: at its return address).
        if (this.atIp(ev.ipHi, ev.ipLo)) ev.flags |= EventFlag.Resumed;
        err = this.processEnabled(ev);
        break;
      case EventType.AsyncDisabled:
        if (!this.atIp(ev.fromHi, ev.fromLo)) return -ErrorCode.BadQuery;
        err = this.processDisabled(ev);
        break;
      case EventType.Disabled:
        err = this.processDisabled(ev);
        break;
      case EventType.AsyncBranch:
        if (!this.atIp(ev.fromHi, ev.fromLo)) return -ErrorCode.BadQuery;
        if (ev.statusUpdate || !this.enabled) return -ErrorCode.BadContext;
        this.setIp(ev.ipHi, ev.ipLo);
        break;
      case EventType.AsyncPaging:
      case EventType.AsyncVmcs:
        if (!ev.ipSuppressed && !this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadQuery;
        this.processAsid(ev);
        break;
      case EventType.Paging:
      case EventType.Vmcs:
        this.processAsid(ev);
        break;
      case EventType.Overflow:
        err = this.processOverflow(ev);
        break;
      case EventType.ExecMode:
        if (this.enabled && !ev.ipSuppressed && !this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadQuery;
        // Status updates check consistency.
        if (ev.statusUpdate && this.enabled && this.mode !== 0 && this.mode !== ev.mode)
          return -ErrorCode.BadStatusUpdate;
        this.mode = ev.mode as typeof this.mode;
        break;
      case EventType.Tsx:
        if (!ev.ipSuppressed && !this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadQuery;
        this.speculative = (ev.flags & EventFlag.Speculative) !== 0;
        break;
      case EventType.Stop:
        if (ev.statusUpdate || this.enabled) return -ErrorCode.BadContext;
        break;
      case EventType.Exstop:
      case EventType.Mwait:
        if (!ev.ipSuppressed && this.enabled && !this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadQuery;
        break;
      case EventType.Cbr:
        this.hasCbr = true;
        this.cbr = ev.ratio;
        break;
      case EventType.Tip:
        return -ErrorCode.BadQuery;
      case EventType.Iflags:
      case EventType.Interrupt:
      case EventType.Smi:
      case EventType.Init:
      case EventType.Vmexit:
      case EventType.Shutdown:
      case EventType.Uintr:
      case EventType.Trig:
      case EventType.Swintr:
      case EventType.Syscall:
        if (this.enabled && !ev.ipSuppressed && !this.atIp(ev.ipHi, ev.ipLo)) return -ErrorCode.BadQuery;
        break;
      case EventType.Rsm:
      case EventType.Sipi:
        if (!ev.ipSuppressed) return -ErrorCode.Internal;
        break;
      default:
        // Pwre, Pwrx, Ptwrite, Tick, Mnt, Iret, Vmentry, Uiret: nothing to track.
        break;
    }
    if (err < 0) return err;
    out.copyFrom(ev);
    err = this.fetchEvent();
    if (err < 0) return err;
    return this.proceedTrailingEvent(null);
  }

  /** A tick on the TNT in progress, which stays current (it has bits left or is next). */
  private tickOnTnt(out: PtEvent): number {
    const ev = this.ev;
    if (!this.tickEvents || !ev.hasTsc || (ev.tscLo === this.tscLo && ev.tscHi === this.tscHi))
      return -ErrorCode.BadQuery;
    out.clear();
    out.type = EventType.Tick;
    out.hasTsc = true;
    out.tscHi = ev.tscHi;
    out.tscLo = ev.tscLo;
    out.lostMtc = ev.lostMtc;
    out.lostCyc = ev.lostCyc;
    out.ipHi = this.ipHi;
    out.ipLo = this.ipLo;
    // The decoder's time moves now, so that a TNT gets one tick at most.
    this.hasTsc = true;
    this.tscHi = ev.tscHi;
    this.tscLo = ev.tscLo;
    this.lostMtc = ev.lostMtc;
    this.lostCyc = ev.lostCyc;
    if (ev.size === 0) {
      const err = this.fetchEvent();
      if (err < 0) return err;
    }
    return this.proceedTrailingEvent(null);
  }

  /**
   * Resynchronise after an error at the next event that tells an IP (libipt
   * `pt_blk_resync`): status flags, or -EventIgnored when an event without IP must be
   * fetched with {@link event} first (then call resync again), or -error. Inside PSB+
   * it goes back to the PSB.
   *
   * Unlike libipt's, a resync always makes progress: one that would leave the decoder
   * at or before where the resync before it started (going back to a PSB whose PSB+
   * fails again, an event that fails again) synchronises forward onto the next PSB
   * past that point instead. libipt's ptxed --resync-on-error repeats the same error
   * without end on such traces (regressions/flow-1.bin).
   */
  resync(): number {
    this.traceConsumed();
    this.resyncedAtAddress = false;
    if (!this.resyncIgnored) {
      this.resyncBefore = this.resyncFrom;
      this.resyncFrom = this.evdec.pos;
    }
    const status = this.perfResync && !this.resyncIgnored ? this.perfResyncHere() : this.resyncHere();
    this.resyncIgnored = status === -ErrorCode.EventIgnored;
    const before = this.resyncBefore;
    if (status < 0 || before < 0 || this.evdec.pos > before) return status;
    for (;;) {
      const next = this.syncNext();
      if (next < 0 || this.evdec.pos > before) return next;
    }
  }

  /**
   * The resync as Linux perf's decoder does it ({@link perfResync}): the packet whose
   * walk failed (the pending TNT, TIP, TIP.PGD or FUP) is behind it, then on as
   * {@link resyncHere} (an asynchronous branch's destination counts, its source did
   * not: it was that FUP).
   */
  private perfResyncHere(): number {
    const ev = this.ev;
    // The packet the failed walk was for comes after those perf's walk takes in passing.
    while (this.status >= 0 && takenInPassing(ev)) {
      this.processAsid(ev);
      const err = this.fetchEvent();
      if (err < 0) return err;
    }
    if (this.status >= 0 && ev.statusUpdate) {
      // The walk that failed was to this PSB's FUP: perf takes up at the PSB, there.
      this.resyncedAt(ev);
      const status = this.resyncHere();
      this.resyncedAtAddress = status >= 0 && this.enabled;
      return status;
    }
    if (this.status >= 0) {
      switch (ev.type) {
        case EventType.AsyncBranch:
          if (ev.fullIps & 1) {
            this.clearPostponed();
            return this.resyncAtAddress(ev);
          }
          break;
        case EventType.AsyncDisabled:
        case EventType.Disabled:
          this.enabled = false;
          break;
        case EventType.Tnt:
        case EventType.Tip: {
          const err = this.fetchEventWithoutIp();
          if (err < 0) return err;
          return this.resyncHere();
        }
        default:
          return this.resyncHere();
      }
      const err = this.fetchEvent();
      if (err < 0) return err;
    }
    return this.resyncHere();
  }

  private resyncedAt(ev: PtEvent): void {
    this.resyncedAtAddress = true;
    this.resyncTimed = ev.hasTsc;
    this.resyncTscHi = ev.tscHi;
    this.resyncTscLo = ev.tscLo;
    this.resyncSeq = ev.timingSeq;
  }

  /**
   * Where the last resync took up at an address ({@link resyncedAtAddress}), whether
   * the event there had a time: then its TSC halves and PtEvent.timingSeq in `out`.
   */
  resyncTime(out: { hi: number; lo: number; seq: number }): boolean {
    if (!this.resyncedAtAddress || !this.resyncTimed) return false;
    out.hi = this.resyncTscHi;
    out.lo = this.resyncTscLo;
    out.seq = this.resyncSeq;
    return true;
  }

  /**
   * perf's resync at a PSB: on through its PSB+ from here, where libipt's syncs there
   * anew (perf's clock keeps what it learnt: a new sync would start it afresh). The PSB+
   * says whether tracing is on, and where (its status updates are the caller's).
   */
  private perfPsb(): number {
    const ev = this.ev;
    this.stack.clear();
    // (Its first status update may be behind: a walk to its FUP's IP failed.)
    if (ev.type !== EventType.Disabled && !ev.ipSuppressed) {
      this.enabled = true;
      this.setIp(ev.ipHi, ev.ipLo);
    } else this.enabled = false;
    return this.flags(Status.EventPending);
  }

  /** The resync as libipt does it (`pt_blk_resync`), or perf's ({@link perfResync}). */
  private resyncHere(): number {
    this.clearPostponed();
    const ev = this.ev;
    for (;;) {
      if (this.status < 0) return this.status;
      if (ev.statusUpdate) {
        if (this.perfResync) return this.perfPsb();
        const sync = this.evdec.syncOffset;
        return sync < 0 ? sync : this.syncAt(sync);
      }
      switch (ev.type) {
        case EventType.Enabled:
          if (this.perfResync && !(ev.fullIps & 1)) {
            // perf passes it by: tracing is on, the address unknown.
            this.enabled = true;
            break;
          }
          this.enabled = false;
          return this.flags(Status.EventPending);
        case EventType.Disabled: {
          if (this.perfResync && !(ev.fullIps & 1)) {
            // perf passes a disable by (it is off already): no address to take up at.
            this.enabled = false;
            break;
          }
          this.enabled = true;
          this.setIp(0, 0);
          const err = this.processDisabled(ev);
          return err < 0 ? err : this.resyncAtEvent();
        }
        case EventType.AsyncDisabled:
          if (this.perfResync) {
            if (ev.fullIps & 2) return this.resyncAtFup(ev);
            this.enabled = false;
            break;
          }
          this.setIp(ev.fromHi, ev.fromLo);
          // Turned into a synchronous disable, the event is dropped here.
          if (this.config.errata.skd022 && this.erratumSkd022(ev) !== 0) break;
          return this.flags(Status.EventPending);
        case EventType.AsyncBranch:
          if (this.perfResync) {
            if (ev.fullIps & 2) return this.resyncAtFup(ev);
            // perf takes up at the branch's destination when that came whole.
            if (!(ev.fullIps & 1)) break;
            return this.resyncAtAddress(ev);
          }
          this.setIp(ev.fromHi, ev.fromLo);
          return this.flags(Status.EventPending);
        case EventType.AsyncPaging:
        case EventType.AsyncVmcs:
          if (!ev.ipSuppressed) {
            this.setIp(ev.ipHi, ev.ipLo);
            return this.flags(Status.EventPending);
          }
          this.processAsid(ev);
          break;
        case EventType.Paging:
        case EventType.Vmcs:
          this.processAsid(ev);
          break;
        case EventType.Overflow:
          return this.flags(Status.EventPending);
        case EventType.ExecMode:
        case EventType.Tsx:
        case EventType.Iflags:
        case EventType.Interrupt:
          // These tell whether tracing is on, and where.
          if (this.perfResync && !ev.ipSuppressed && !(ev.fullIps & 1)) {
            this.enabled = true;
            if (ev.type === EventType.ExecMode) this.mode = ev.mode as typeof this.mode;
            else if (ev.type === EventType.Tsx) this.speculative = (ev.flags & EventFlag.Speculative) !== 0;
            break;
          }
          if (this.perfResync && ev.type === EventType.Tsx && !ev.ipSuppressed) {
            // A transaction's FUP that came whole: perf takes up there (a trace start,
            // its transaction state taken in passing), and an abort's TIP after it as
            // any (its asynchronous branch from there a TIP: see resyncAtFup).
            this.enabled = true;
            this.speculative = (ev.flags & EventFlag.Speculative) !== 0;
            this.setIp(ev.ipHi, ev.ipLo);
            this.resyncedAt(ev);
            const err = this.fetchEvent();
            if (err < 0) return err;
            // (ev is the next event now.)
            const next = this.ev;
            if (
              this.status >= 0 &&
              next.type === EventType.AsyncBranch &&
              this.atIp(next.fromHi, next.fromLo)
            )
              next.type = EventType.Tip;
            return this.proceedTrailingEvent(null);
          }
          this.enabled = !ev.ipSuppressed;
          if (this.enabled) this.setIp(ev.ipHi, ev.ipLo);
          return this.flags(Status.EventPending);
        case EventType.Exstop:
        case EventType.Mwait:
        case EventType.Tick:
        case EventType.Iret:
        case EventType.Smi:
        case EventType.Rsm:
        case EventType.Init:
        case EventType.Vmexit:
        case EventType.Shutdown:
        case EventType.Uintr:
        case EventType.Swintr:
        case EventType.Syscall:
          if (ev.ipSuppressed) break;
          this.setIp(ev.ipHi, ev.ipLo);
          return this.flags(Status.EventPending);
        case EventType.Ptwrite:
          // Without an IP it binds to an instruction we cannot find: the user takes it.
          if (ev.ipSuppressed) return -ErrorCode.EventIgnored;
          this.setIp(ev.ipHi, ev.ipLo);
          // It is reported after its instruction.
          return this.flags(0);
        case EventType.Vmentry:
        case EventType.Uiret:
          if (ev.ipSuppressed) break;
          this.setIp(ev.ipHi, ev.ipLo);
          return this.flags(0);
        case EventType.Tip:
          if (this.perfResync && !(ev.fullIps & 1)) break;
          return this.resyncAtAddress(ev);
        default:
          // Stop, Pwre, Pwrx, Cbr, Mnt, Tnt, Sipi, Trig: no IP.
          break;
      }
      // perf's passes TNTs and compressed TIPs by: those that follow too, in one step.
      const err =
        this.perfResync && (ev.type === EventType.Tnt || ev.type === EventType.Tip)
          ? this.fetchEventWithoutIp()
          : this.fetchEvent();
      if (err < 0) return err;
    }
  }

  /** Resume at the current event's IP (a branch's destination), consuming it. */
  private resyncAtAddress(ev: PtEvent): number {
    this.setIp(ev.ipHi, ev.ipLo);
    this.resyncedAt(ev);
    return this.resyncAtEvent();
  }

  /**
   * perf's resync at an asynchronous branch or disable whose source came whole: its
   * decoder, without an IP, takes up at the FUP's address (a trace start there) and
   * then takes the TIP or TIP.PGD as any: where the next indirect branch from there
   * goes, or where tracing stops after it (it has no FUP pending to pair it with). The
   * event stays, as that TIP or synchronous disable.
   */
  private resyncAtFup(ev: PtEvent): number {
    this.setIp(ev.fromHi, ev.fromLo);
    this.enabled = true;
    // At the FUP's time.
    this.resyncedAt(ev);
    this.resyncTscHi = ev.fromTscHi;
    this.resyncTscLo = ev.fromTscLo;
    this.resyncSeq = ev.fromTimingSeq;
    ev.type = ev.type === EventType.AsyncBranch ? EventType.Tip : EventType.Disabled;
    return this.proceedTrailingEvent(null);
  }

  /** Resume at the current event, consuming it. */
  private resyncAtEvent(): number {
    const err = this.fetchEvent();
    return err < 0 ? err : this.proceedTrailingEvent(null);
  }

  /**
   * The time of the last event consumed (libipt `pt_blk_time`): 0, or -NoTime when
   * there is none (then {@link tsc} is 0 or stale). See {@link tsc}, {@link lostMtc},
   * {@link lostCyc}.
   */
  time(): number {
    return this.hasTsc ? 0 : -ErrorCode.NoTime;
  }

  /**
   * Whether the event the decoder stands before (not consumed yet: after an error, the
   * packet the failed walk was for) has a time; its TSC halves then in `out` (ptkit's,
   * for Linux perf's time of an error).
   */
  pendingTime(out: { hi: number; lo: number }): boolean {
    const ev = this.ev;
    if (this.status < 0) return false;
    if (this.perfResync && takenInPassing(ev)) return this.timeAhead(takenInPassing, out);
    if (!ev.hasTsc) return false;
    out.hi = ev.tscHi;
    out.lo = ev.tscLo;
    return true;
  }

  /** The TSC of the last event consumed (API edge). */
  get tsc(): bigint {
    return toBigInt(this.tscHi, this.tscLo);
  }

  /** The last core:bus ratio (libipt `pt_blk_core_bus_ratio`), or -NoCbr. */
  coreBusRatio(): number {
    return this.hasCbr ? this.cbr : -ErrorCode.NoCbr;
  }

  /** The current CR3 (all ones: unknown). */
  get cr3(): bigint {
    return toBigInt(this.code.cr3Hi, this.code.cr3Lo);
  }

  /** The current VMCS base (all ones: unknown). */
  get vmcs(): bigint {
    return toBigInt(this.code.vmcsHi, this.code.vmcsLo);
  }
}

/**
 * Events of packets Linux perf's decoder takes in passing on its way to the packet a
 * walk needs (intel_pt_walk_trace: a PIP's CR3, a VMCS base): after a failed walk the
 * packet it was for is the first event that is not one of these (the kernel's entry
 * trampoline switches CR3 before its jump: perf's error has the jump's time, and the
 * jump is behind the resync).
 */
function takenInPassing(ev: PtEvent): boolean {
  return !ev.statusUpdate && (ev.type === EventType.Paging || ev.type === EventType.Vmcs);
}
