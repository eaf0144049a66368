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
import { addSize, diff64, sum } from "../image/addr.js";
import { ErrorCode } from "../packet/errors.js";
import { BlockFill, RESUME } from "./block-fill.js";
import { MAX_BLOCK_INSNS, Stop } from "./block-step.js";
import { FACT_SHIFT, FlowClass, InsnFact } from "./flow-class.js";
import { branchTarget, next, nextIp } from "./flow-insn.js";
import type { Block } from "./records.js";
import { Bce, InsnMeta, PAGE_SIZE, Qualifier } from "./section-cache.js";

export class BlockWalk extends BlockFill {
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
    return cache?.blocks ? this.proceedCached(block) : this.proceedUncached(block);
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

  private walkCached(block: Block): number {
    const code = this.code.msec;
    const cache = code.cache!;
    const baseHi = code.baseHi;
    const baseLo = code.baseLo;
    // Offsets are below 2^30 here: `| 0` keeps them small integers for the JIT.
    const winBegin = code.winBegin | 0;
    const winEnd = code.winEnd | 0;
    let off = code.off | 0;
    let page = cache.page(off);
    // Module-level constants as locals: each use of a module binding is a load and a
    // check that it is initialised, which shows in this loop.
    const pageSize = PAGE_SIZE;
    const maxInsns = MAX_BLOCK_INSNS;
    const modeMask = Bce.MODE_MASK;
    const dispShift = Bce.DISP_SHIFT;
    for (;;) {
      let i = (off - page.start) | 0;
      if (i >>> 0 >= pageSize) {
        page = cache.page(off);
        i = (off - page.start) | 0;
      }
      const bce = page.bce[i]!;
      if ((bce & modeMask) === 0) {
        const status = this.fillCache(block, off);
        if (status !== RESUME) return status;
        off = this.resumeOff | 0;
        continue;
      }
      const nOff = (off + (bce >> dispShift)) | 0;
      if (nOff < winBegin || nOff >= winEnd) {
        // The section was split under the entry: go slowly to the section's end.
        return this.proceedUncached(block);
      }
      const n = Bce.ninsn(bce);
      const ninsn = block.ninsn + n;
      if (ninsn > maxInsns) return 0;
      if (this.hasIcnt) {
        const icnt = this.icnt + n;
        if (icnt > 0xffffffff) return -ErrorCode.Overflow;
        this.icnt = icnt;
      }
      off = nOff;
      this.setIpAt(baseHi, baseLo, off);
      block.endIpHi = this.ipHi;
      block.endIpLo = this.ipLo;
      block.ninsn = ninsn;
      const mode = bce & modeMask;
      block.mode = mode;
      switch (Bce.qualifier(bce)) {
        case Qualifier.Again:
          block.iclass = FlowClass.Unknown;
          continue;
        case Qualifier.Cond: {
          block.iclass = FlowClass.CondJump;
          const isize = Bce.isize(bce);
          if (isize === 0) break; // decode it, as for Decode
          const taken = this.condBranch();
          if (taken < 0) return taken;
          if (taken === 0) {
            this.setIpAt(baseHi, baseLo, off + isize);
            return 0;
          }
          // The displacement from the decode cache, else from decoding.
          i = (off - page.start) | 0;
          if (i >>> 0 >= pageSize) {
            page = cache.page(off);
            i = (off - page.start) | 0;
          }
          const meta = page.meta[i]!;
          if (meta !== 0 && InsnMeta.mode(meta) === mode) {
            this.setIpAt(baseHi, baseLo, off + isize + page.disp[i]!);
            return 0;
          }
          const insn = this.insn;
          insn.reset(this.ipHi, this.ipLo, mode);
          const err = code.decodeAt(off, insn);
          if (err < 0) return err;
          branchTarget(insn);
          this.setIp(next.hi, next.lo);
          return 0;
        }
        case Qualifier.IndCall: {
          block.iclass = FlowClass.Call;
          let isize = Bce.isize(bce);
          if (isize === 0) {
            const insn = this.insn;
            insn.reset(this.ipHi, this.ipLo, mode);
            const err = code.decodeAt(off, insn);
            if (err < 0) return err;
            isize = insn.size;
          }
          addSize(baseHi, baseLo, off + isize);
          this.stack.push(sum.hi, sum.lo);
          return this.proceedIndirect();
        }
        case Qualifier.Return: {
          block.iclass = FlowClass.Return;
          const taken = this.condBranch();
          if (taken === -ErrorCode.BadQuery) return this.proceedIndirect();
          if (taken < 0) return taken;
          if (taken === 0) return -ErrorCode.BadRetComp;
          return this.popReturn();
        }
        case Qualifier.Indirect:
          block.iclass = FlowClass.Indirect;
          return this.proceedIndirect();
        case Qualifier.Decode: {
          // Mostly a direct call or backward jump, already decoded: take it from the
          // decode cache (the general way below does the same, slower).
          i = (off - page.start) | 0;
          if (i >>> 0 >= pageSize) {
            page = cache.page(off);
            i = (off - page.start) | 0;
          }
          const meta = page.meta[i]!;
          const info = InsnMeta.info(meta);
          const c = info & 15;
          if (
            meta === 0 ||
            InsnMeta.mode(meta) !== mode ||
            (c !== FlowClass.Call && c !== FlowClass.Jump) ||
            ((info >>> FACT_SHIFT) & InsnFact.Direct) === 0 ||
            off + InsnMeta.size(meta) > winEnd
          )
            break;
          block.iclass = c as FlowClass;
          const size = InsnMeta.size(meta);
          const disp = page.disp[i]!;
          // A call to the next instruction is no call for RET compression.
          if (c === FlowClass.Call && disp !== 0) {
            this.setIpAt(baseHi, baseLo, off + size);
            this.stack.push(this.ipHi, this.ipLo);
          }
          const target = off + size + disp;
          this.setIpAt(baseHi, baseLo, target);
          // Leaving the section, or the user ends blocks here.
          if (
            target < winBegin ||
            target >= winEnd ||
            (c === FlowClass.Call ? this.endOnCall : this.endOnJump)
          )
            return 0;
          off = target | 0;
          continue;
        }
        default:
          return -ErrorCode.Internal;
      }
      // Decode the instruction at the decision point and decide from it.
      const insn = this.insn;
      insn.reset(this.ipHi, this.ipLo, block.mode);
      const err = code.decodeAt(off, insn);
      if (err < 0) {
        if (err !== -ErrorCode.BadInsn) return err;
        return this.proceedTruncated(block);
      }
      block.iclass = (insn.info & 15) as FlowClass;
      this.logCall(insn);
      const status = nextIp(insn);
      if (status < 0) {
        if (status !== -ErrorCode.BadQuery) return status;
        return this.proceedWithTrace(insn);
      }
      this.setIp(next.hi, next.lo);
      if (this.endsBlock(insn)) return 0;
      const d = diff64(next.hi, next.lo, baseHi, baseLo);
      if (!(d >= winBegin && d < winEnd)) return 0;
      off = d | 0;
    }
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
