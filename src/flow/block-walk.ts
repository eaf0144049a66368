/**
 * Following the code to the end of a block without events in the way (libipt's
 * `pt_blk_proceed_no_event*`): through the block cache where the section has one,
 * else one instruction at a time, using trace for the last step.
 *
 * The block cache says, per section byte offset, how many instructions of
 * straight-line code (direct jumps and calls included) lead to the next decision
 * point and how far away it is, so a block grows by a whole stretch at once (see
 * {@link BlockFill} for how entries are made). The fields of {@link Block} are filled
 * as libipt fills them.
 */

import * as errors from "../base/errors.js";
import type { DecoderConfig } from "../event/config.js";
import * as eventTypes from "../event/types.js";
import * as addr from "../image/addr.js";
import * as isa from "../isa/index.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import * as blockFill from "./block-fill.js";
import { BlockFill } from "./block-fill.js";
import * as blockStep from "./block-step.js";
import * as flowClass from "./flow-class.js";
import * as flowInsn from "./flow-insn.js";
import type { FlowOptions } from "./flow-state.js";
import { LoopGuard } from "./loop-guard.js";
import type { Block } from "./records.js";
import * as sectionCache from "./section-cache.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { EventType } = eventTypes;
const { FlowClass } = flowClass;
type FlowClass = flowClass.FlowClass;
const { Bce, InsnMeta, NO_DISP, Qualifier, WALK_AUX, WalkQualifier } = sectionCache;
const { branchTarget, next, nextIp } = flowInsn;
const { TWO_32, addSize, diff64, sum } = addr;
const { RESUME } = blockFill;
const { MAX_BLOCK_INSNS, Stop } = blockStep;
const { InsnClass } = isa;

/**
 * runOn's answer: the next block begins in another section, now the current one
 * ({@link BlockWalk.resumeOff} in it); {@link RESUME} is the same section.
 */
const MOVED = 3;

export class BlockWalk extends BlockFill {
  /** Counts the walk without trace; ends code that loops without it (see BlockDecoder.next). */
  protected readonly guard: LoopGuard;
  /**
   * A run of blocks is being decoded (BlockDecoder.nextRun): the cache walk goes on
   * from a block to the next itself where nothing else is due in between (see
   * {@link runOn}), adding the blocks it passes and their instructions here.
   */
  protected inRun = false;
  protected runBlocks = 0;
  protected runInsns = 0;
  /**
   * {@link consumed} when the current block began: the block decoder's loop guard
   * counts the blocks that consumed no trace.
   */
  protected blockConsumed = 0;

  constructor(trace: Uint8Array | TraceBytes, options: FlowOptions, config: DecoderConfig) {
    super(trace, options, config);
    this.guard = new LoopGuard(options.loopCheckAfter);
    this.insnCap = this.guard.cap();
  }

  /**
   * `block` begins at the current IP (BlockDecoder.next, and {@link runOn} for the next
   * block of a run): the trace consumed so far is noted for the loop guard.
   */
  protected beginBlock(block: Block): void {
    block.begin(this.ipHi, this.ipLo, this.mode, this.speculative);
    this.blockConsumed = this.consumed;
  }

  /** The loop guard starts over. */
  protected traceConsumed(): void {
    this.guard.reset();
    this.insnCap = this.guard.cap();
  }

  /**
   * Walk to the end of the current stretch of code, using trace for the last step
   * (libipt `pt_blk_proceed_no_event`). 0 or -error.
   */
  protected proceedNoEvent(block: Block): number {
    const code = this.code;
    const isid = code.lookupForBlocks(this.ipHi, this.ipLo);
    if (isid < 0) {
      if (isid !== -ErrorCode.NoMap) return isid;
      return this.proceedUncached(block);
    }
    if (isid !== block.isid) {
      if (block.ninsn !== 0) return 0;
      block.isid = isid;
    }
    const cache = code.msec.cache;
    return cache !== null && cache.blocks === true ? this.proceedCached(block) : this.proceedUncached(block);
  }

  /** The same one instruction at a time (libipt `pt_blk_proceed_no_event_uncached`). */
  private proceedUncached(block: Block): number {
    const insn = this.insn;
    insn.reset(0, 0, 0);
    const status = this.proceedToInsn(block, insn, Stop.Never);
    if (status === -ErrorCode.BadQuery) return this.proceedWithTrace(insn);
    return Math.min(status, 0);
  }

  /**
   * The block-cache walk (libipt `pt_blk_proceed_no_event_cached`), in offsets of the
   * current section. The IP is set from the offset wherever the walk hands over.
   */
  private proceedCached(block: Block): number {
    return this.finishFills(this.walkCached(block));
  }

  /**
   * The walk itself. Nearly every block ends at a conditional branch: entries that lead
   * to one are followed here; the other decision points go to {@link decide}.
   */
  private walkCached(block: Block): number {
    const view = this.code.msec;
    let cache = view.cache!;
    let baseHi = view.baseHi;
    let baseLo = view.baseLo;
    // Offsets are below 2^30 here: `| 0` keeps them small integers for the JIT.
    let winBegin = view.winBegin | 0;
    let winEnd = view.winEnd | 0;
    let off = view.off | 0;
    let cap = this.insnCap;
    // The last entry taken, while it is a trampoline (else -1), and its instructions:
    // the block's last instruction is among them should the block end there.
    let again = -1;
    let againN = 0;
    const ev = this.ev;
    for (;;) {
      const e = cache.entry(off);
      if (e < 0) {
        const before = block.ninsn;
        const status = this.fillCache(block, off);
        if (again >= 0 && block.ninsn === before) return this.endAtTrampoline(block, again, againN, status);
        if (status !== RESUME) return status;
        again = -1;
        off = this.resumeOff | 0;
        continue;
      }
      // The entry's words (see CachePage.bce) follow the slot's key.
      const words = cache.walk;
      const j = e + 1;
      const bce = words[j]!;
      const nOff = (off + Bce.disp(bce)) | 0;
      if (nOff < winBegin || nOff >= winEnd) {
        // The section was split under the entry: go slowly to the section's end.
        const before = block.ninsn;
        const status = this.proceedUncached(block);
        if (again >= 0 && block.ninsn === before) return this.endAtTrampoline(block, again, againN, status);
        return status;
      }
      const n = Bce.ninsn(bce);
      const ninsn = block.ninsn + n;
      if (ninsn > cap) {
        if (cap === MAX_BLOCK_INSNS) return again >= 0 ? this.endAtTrampoline(block, again, againN, 0) : 0;
        // The loop guard wants the block to end inside this entry: go on one at a time.
        const before = block.ninsn;
        const status = this.proceedUncached(block);
        if (again >= 0 && block.ninsn === before) return this.endAtTrampoline(block, again, againN, status);
        return status;
      }
      if (this.hasIcnt === true) {
        const icnt = this.icnt + n;
        if (icnt > 0xffffffff) return -ErrorCode.Overflow;
        this.icnt = icnt;
      }
      const at = off;
      off = nOff;
      this.setIpAt(baseHi, baseLo, off);
      block.ninsn = ninsn;
      const mode = Bce.mode(bce);
      block.mode = mode;
      const qualifier = Bce.qualifier(bce);
      block.endIpHi = this.ipHi;
      block.endIpLo = this.ipLo;
      if (qualifier === Qualifier.Again) {
        // Not a decision point: the end IP is the next instruction's, to be put right
        // should the block end here.
        block.iclass = FlowClass.Unknown;
        block.lastClass = -1;
        again = at;
        againN = n;
        continue;
      }
      again = -1;
      const isize = Bce.isize(bce);
      let status = 0;
      // A conditional branch or a return takes a TNT bit where the current event has
      // one. condBranch and setIpAt's common cases are written out here: V8 optimizes
      // this loop early, while most walks end in cache fills, and then leaves those
      // calls out of line (passing the base's halves as boxed doubles).
      const cond = qualifier === Qualifier.Cond && isize !== 0;
      let taken = -1;
      if ((cond || qualifier === Qualifier.Return) && ev.type === EventType.Tnt && ev.size !== 0) {
        const bits = ev.size - 1;
        ev.size = bits;
        this.consumed += 1;
        taken = (bits >= 32 ? ev.payloadHi >>> (bits - 32) : ev.payloadLo >>> bits) & 1;
      }
      if (cond) {
        block.iclass = FlowClass.CondJump;
        block.lastClass = -1;
        block.lastSize = isize;
        // Without a TNT bit, condBranch gives the error.
        if (taken < 0) return this.condBranch();
        const disp = words[j + WALK_AUX]!;
        if (disp !== NO_DISP || taken === 0) {
          // The fall-through, or the displacement the entry carries (else decode it),
          // chosen without a branch on the bit (0 or 1): to the CPU's branch predictor
          // the bits are a coin toss, and a wrong guess cost more than the arithmetic.
          const to = off + isize + (disp & -taken);
          const lo = baseLo + to;
          if (to >= 0 && lo < TWO_32) {
            this.ipHi = baseHi;
            this.ipLo = lo;
          } else {
            this.setIpAt(baseHi, baseLo, to);
          }
        } else {
          const insn = this.insn;
          insn.reset(this.ipHi, this.ipLo, mode);
          const err = view.decodeAt(off, insn);
          if (err < 0) return err;
          branchTarget(insn);
          this.setIp(next.hi, next.lo);
        }
      } else if (taken >= 0) {
        // A compressed return (see decide).
        block.iclass = FlowClass.Return;
        block.lastClass = -1;
        if (taken === 0) return -ErrorCode.BadRetComp;
        status = this.popReturn();
        if (status < 0) return status;
      } else if (qualifier >= WalkQualifier.DirectCall && off + isize <= winEnd) {
        // A direct call or jump (a fifth of the entries the walk reads): no decide.
        const call = qualifier === WalkQualifier.DirectCall;
        status = this.directBranch(block, off, call, isize, words[j + WALK_AUX]!);
        if (status === RESUME) {
          off = this.resumeOff | 0;
          continue;
        }
      } else {
        status = this.decide(block, qualifier, isize, off, words[j + WALK_AUX]!);
        if (status === RESUME) {
          off = this.resumeOff | 0;
          continue;
        }
      }
      // The block ended; in a run, the next may start here.
      if (status !== 0 || this.inRun === false) return status;
      status = this.runOn(block);
      if (status === MOVED) {
        cache = view.cache!;
        baseHi = view.baseHi;
        baseLo = view.baseLo;
        winBegin = view.winBegin | 0;
        winEnd = view.winEnd | 0;
      } else if (status !== RESUME) {
        return status;
      }
      off = this.resumeOff | 0;
      cap = this.insnCap;
    }
  }

  /**
   * In a run of blocks, after a block that ended with status 0: start the next block
   * here, in the same walk, where {@link BlockDecoder.next} would find nothing to do
   * but walk on in this section, and do what it and nextRun do in between: count the
   * block, start the loop guard over. That is where the block consumed trace (a TNT
   * bit, a TIP), the event now current is a TNT with bits left or a TIP (a TNT used up
   * is fetched past, as proceedTrailingEvent does: fetchEvent's errors are its), no
   * instruction waits for events, no tick is due, no fill waits to be entered, and the
   * IP is in a section with a block cache in use: this one (as SectionView.lookup
   * checks it), else the one proceedNoEvent would look up and walk through the cache
   * (a call into a library or the kernel, a return from one: a fifth of the blocks on
   * a large program's trace, which went back through BlockDecoder.next). {@link RESUME}
   * with the next block begun at {@link resumeOff}, {@link MOVED} where that is in the
   * section now current; else 0 to end the walk (then proceedTrailingEvent decides
   * from the same state), or -error.
   */
  private runOn(block: Block): number {
    if (this.consumed === this.blockConsumed || this.processInsn === true || this.tickEvents === true)
      return 0;
    if (this.fillsPending()) return 0;
    const ev = this.ev;
    for (;;) {
      if (this.status < 0) return 0;
      if (ev.type === EventType.Tip) break;
      if (ev.type !== EventType.Tnt) return 0;
      if (ev.size !== 0) break;
      const err = this.fetchEvent();
      if (err < 0) return err;
    }
    if (this.enabled !== true) return 0;
    const view = this.code.msec;
    let d = diff64(this.ipHi, this.ipLo, view.baseHi, view.baseLo);
    let status = RESUME;
    if (d >= view.winBegin && d < view.winEnd) {
      view.off = d | 0;
    } else {
      // The look-up makes the IP's section the current one, as at the next block's
      // start in proceedNoEvent; where that would not walk through the cache, the
      // next block goes there the usual way.
      const cache = this.code.lookupForBlocks(this.ipHi, this.ipLo) < 0 ? null : view.cache;
      if (cache === null || cache.blocks !== true) {
        // The section the block ended in stays the decoder's until the next block.
        this.code.lookupForBlocks(block.endIpHi, block.endIpLo);
        return 0;
      }
      d = view.off;
      status = MOVED;
    }
    if (this.guard.idle !== 0) this.traceConsumed();
    this.runBlocks += 1;
    this.runInsns += block.ninsn;
    this.beginBlock(block);
    block.isid = view.section!.id;
    this.resumeOff = d | 0;
    return status;
  }

  /**
   * The walk reached a decision point other than a conditional branch whose size the
   * entry knows, at offset `off` (the IP): decide there, from the instruction the entry
   * carries (`aux`, see {@link WALK_AUX}) where it can. Status (0: the block
   * ended), or {@link RESUME} to go on from {@link resumeOff} in the same section.
   */
  private decide(block: Block, qualifier: number, isize: number, off: number, aux: number): number {
    const view = this.code.msec;
    const mode = block.mode;
    switch (qualifier) {
      case Qualifier.Cond:
        block.iclass = FlowClass.CondJump;
        block.lastClass = -1;
        break; // decode it, as for Decode
      case Qualifier.IndCall: {
        block.iclass = FlowClass.Call;
        block.lastClass = -1;
        if (isize === 0) {
          const insn = this.insn;
          insn.reset(this.ipHi, this.ipLo, mode);
          const err = view.decodeAt(off, insn);
          if (err < 0) return err;
          isize = insn.size;
        }
        addSize(view.baseHi, view.baseLo, off + isize);
        this.stack.push(sum.hi, sum.lo);
        block.lastSize = isize;
        return this.proceedIndirect();
      }
      case Qualifier.Return: {
        block.iclass = FlowClass.Return;
        block.lastClass = -1;
        const taken = this.condBranch();
        if (taken === -ErrorCode.BadQuery) return this.proceedIndirect();
        if (taken < 0) return taken;
        if (taken === 0) return -ErrorCode.BadRetComp;
        return this.popReturn();
      }
      case Qualifier.Indirect: {
        // The entry only says that a TIP decides; the block reports the instruction's
        // own class (jump, far call, far return, ...), as the walk that filled the
        // cache did: call stacks close frames on far returns.
        const known = aux !== 0 && off + InsnMeta.size(aux) <= view.winEnd;
        const c = known ? InsnMeta.info(aux) & 15 : this.classAt(off, mode);
        if (c < 0) return c;
        block.iclass = c as FlowClass;
        block.lastClass = known ? InsnMeta.iclass(aux) : -1;
        return this.proceedIndirect();
      }
      case WalkQualifier.DirectCall:
      case WalkQualifier.DirectJump:
      // One that does not fit the window (the walk takes the others, see directBranch).
      case Qualifier.Decode:
        break;
      default:
        return -ErrorCode.Internal;
    }
    // Decode the instruction at the decision point and decide from it.
    const insn = this.insn;
    insn.reset(this.ipHi, this.ipLo, mode);
    const err = view.decodeAt(off, insn);
    if (err < 0) {
      if (err !== -ErrorCode.BadInsn) return err;
      return this.proceedTruncated(block);
    }
    block.iclass = (insn.info & 15) as FlowClass;
    block.lastClass = insn.iclass;
    this.logCall(insn);
    const status = nextIp(insn);
    if (status < 0) {
      if (status !== -ErrorCode.BadQuery) return status;
      return this.proceedWithTrace(insn);
    }
    this.setIp(next.hi, next.lo);
    if (this.endsBlock(insn)) return 0;
    const d = diff64(next.hi, next.lo, view.baseHi, view.baseLo);
    if (!(d >= view.winBegin && d < view.winEnd)) return 0;
    this.resumeOff = d | 0;
    return RESUME;
  }

  /**
   * The block ends right after a trampoline entry at offset `at` for `n` instructions
   * (libipt leaves the trampoline's target as the end IP, an instruction the block
   * does not hold, and an unknown class): make the last of those instructions the
   * block's last, as the walk that filled the cache did. They are straight-line code
   * and forward jumps, all in the decode cache. `status`, or -error.
   */
  private endAtTrampoline(block: Block, at: number, n: number, status: number): number {
    const view = this.code.msec;
    const insn = this.probe;
    let off = at;
    for (;;) {
      addSize(view.baseHi, view.baseLo, off);
      insn.reset(sum.hi, sum.lo, block.mode);
      const err = view.decodeAt(off, insn);
      if (err < 0) return err;
      if (--n === 0) break;
      const e = nextIp(insn);
      if (e < 0) return e === -ErrorCode.BadQuery ? -ErrorCode.Internal : e;
      off = diff64(next.hi, next.lo, view.baseHi, view.baseLo);
    }
    block.endIpHi = insn.ipHi;
    block.endIpLo = insn.ipLo;
    block.iclass = (insn.info & 15) as FlowClass;
    block.lastClass = insn.iclass;
    return status;
  }

  /**
   * The {@link FlowClass} of the instruction at offset `off` in `mode`, which a cache
   * fill decoded (so this is a lookup in the decode cache), or -error.
   */
  private classAt(off: number, mode: number): number {
    const view = this.code.msec;
    const insn = this.probe;
    addSize(view.baseHi, view.baseLo, off);
    insn.reset(sum.hi, sum.lo, mode);
    const err = view.decodeAt(off, insn);
    return err < 0 ? err : insn.info & 15;
  }

  /**
   * A Decode entry's decision point that the walk's table says is a direct call
   * (`call`) or jump of `size` bytes and displacement `disp` (see WalkQualifier),
   * within the window: take it without the instruction (the general way in
   * {@link decide} does the same, slower). Status, or {@link RESUME}.
   */
  private directBranch(block: Block, off: number, call: boolean, size: number, disp: number): number {
    const view = this.code.msec;
    const c = call ? FlowClass.Call : FlowClass.Jump;
    block.iclass = c;
    block.lastClass = call ? InsnClass.Call : InsnClass.Jump;
    // A call to the next instruction is no call for RET compression.
    if (c === FlowClass.Call && disp !== 0) {
      this.setIpAt(view.baseHi, view.baseLo, off + size);
      this.stack.push(this.ipHi, this.ipLo);
    }
    const target = off + size + disp;
    this.setIpAt(view.baseHi, view.baseLo, target);
    // Leaving the section, or the user ends blocks here.
    if (
      target < view.winBegin ||
      target >= view.winEnd ||
      (c === FlowClass.Call ? this.endOnCall : this.endOnJump)
    ) {
      // (Only where the block ends with it: the size is its last instruction's.)
      block.lastSize = size;
      return 0;
    }
    this.resumeOff = target | 0;
    return RESUME;
  }

  /**
   * An instruction that does not fit its section: decode it from the image, put its
   * bytes in `block`, and end the block (libipt `pt_blk_proceed_truncated`).
   */
  private proceedTruncated(block: Block): number {
    const insn = this.insn;
    insn.reset(this.ipHi, this.ipLo, this.mode);
    const err = this.code.decode(insn);
    if (err < 0) return err;
    if (!insn.truncated) return -ErrorCode.Internal;
    block.raw.set(insn.raw.subarray(0, insn.size));
    block.iclass = (insn.info & 15) as FlowClass;
    block.lastClass = insn.iclass;
    block.size = insn.size;
    block.truncated = true;
    this.logCall(insn);
    const status = nextIp(insn);
    if (status < 0) {
      if (status !== -ErrorCode.BadQuery) return status;
      return this.proceedWithTrace(insn);
    }
    this.setIp(next.hi, next.lo);
    return 0;
  }
}
