/**
 * Filling the block cache (libipt's `pt_blk_proceed_no_event_fill_cache`): the first
 * walk over a stretch of code goes one instruction at a time and leaves an entry at
 * each instruction saying how far straight-line execution goes from there.
 *
 * libipt recurses, one level per instruction, and enters each instruction on the way
 * back, once the one after it has its entry. Here the walk is a loop with an explicit
 * stack, entering instructions innermost first, as libipt does: where entries exist
 * decides where blocks end, which users see (`--block:show-blocks`).
 */

import * as errors from "../base/errors.js";
import * as addr from "../image/addr.js";
import { BlockStep } from "./block-step.js";
import * as flowClass from "./flow-class.js";
import type { FlowInsn } from "./flow-insn.js";
import * as flowInsn from "./flow-insn.js";
import type { Block } from "./records.js";
import * as sectionCache from "./section-cache.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { diff64 } = addr;
const { ErrorCode } = errors;
const { FlowClass } = flowClass;
const { next, nextIp } = flowInsn;
const { Bce, Qualifier, slot } = sectionCache;

/** Most instructions one cache fill walks before it leaves a trampoline. */
const FILL_STEPS = 0x400;
/** fillCache's answer: go on through the cache from {@link BlockFill.resumeOff}. */
export const RESUME = 1;

export class BlockFill extends BlockStep {
  /**
   * The cache fills' stack of walked instructions (offset, next offset, mode), and of
   * fills that went on through the cache before entering their instructions (start,
   * count): libipt enters those only once the rest of the walk succeeded.
   */
  private fillOff = new Int32Array(FILL_STEPS);
  private fillNext = new Int32Array(FILL_STEPS);
  private fillMode = new Uint8Array(FILL_STEPS);
  private fillTop = 0;
  private readonly frames: number[] = [];
  /** Where the cache walk goes on after a fill returned {@link RESUME}. */
  protected resumeOff = 0;

  /**
   * After a cache walk: enter what fills walked before going on through the cache,
   * innermost first, unless the walk failed (`status` < 0). The walk's status, or an
   * error from entering.
   */
  protected finishFills(status: number): number {
    const frames = this.frames;
    while (frames.length > 0) {
      const count = frames.pop()!;
      const base = frames.pop()!;
      if (status >= 0) {
        const err = this.fillBack(base, count);
        if (err < 0) status = err;
      }
    }
    this.fillTop = 0;
    return status;
  }

  /** Whether fills wait for {@link finishFills}. */
  protected fillsPending(): boolean {
    return this.frames.length !== 0;
  }

  /**
   * Walk instruction by instruction from section offset `off` (the IP), filling
   * block-cache entries (libipt `pt_blk_proceed_no_event_fill_cache`). Each walked
   * instruction gets an entry once the one after it has one: a decision point (which
   * trace then resolves), a stop that needs a decode (direct calls, backward jumps,
   * leaving the section), a trampoline after {@link FILL_STEPS} instructions, or an
   * entry that already existed. In the last case the walk goes on through the cache
   * ({@link RESUME}). Returns RESUME, 0 (block done), or -error.
   */
  protected fillCache(block: Block, off: number): number {
    const base = this.fillTop;
    const status = this.fillWalk(block, off, base);
    if (status !== RESUME) this.fillTop = base;
    return status;
  }

  /** The walk of {@link fillCache}, recording instructions from stack index `base`. */
  private fillWalk(block: Block, off: number, base: number): number {
    const code = this.code.msec;
    const cache = code.cache!;
    const winBegin = code.winBegin;
    const winEnd = code.winEnd;
    const insn = this.insn;
    let depth = 0;
    let steps = FILL_STEPS;
    for (;;) {
      const status = this.proceedOneInsnAt(block, insn, off);
      if (status <= 0) return status;
      const mode = insn.mode;
      const err = nextIp(insn);
      if (err < 0) {
        if (err !== -ErrorCode.BadQuery) return err;
        this.setEntry(
          off,
          Bce.pack(mode, block.truncated ? Qualifier.Decode : qualifierOf(insn), insn.size, 1, 0),
        );
        const traced = this.proceedWithTrace(insn);
        if (traced < 0) return traced;
        return this.fillBack(base, depth);
      }
      this.setIp(next.hi, next.lo);
      const nOff = diff64(next.hi, next.lo, code.baseHi, code.baseLo);
      const c = insn.info & 15;
      if (
        c === FlowClass.Call ||
        (c === FlowClass.Jump && (insn.disp < 0 || this.endOnJump)) ||
        !(nOff >= winBegin && nOff < winEnd) ||
        block.truncated
      ) {
        // Stop here: calls feed the return stack, backward jumps may cross a split.
        this.setEntry(off, Bce.pack(mode, Qualifier.Decode, 0, 1, 0));
        return this.fillBack(base, depth);
      }
      const bce = cache.page(nOff).bce[slot(nOff)]!;
      if (Bce.mode(bce) !== 0) {
        // The rest of the way is known: enter this one, then go on through the cache.
        const linked = this.link(off, nOff, mode);
        if (linked === 1) {
          this.fillTop = base + depth;
          this.frames.push(base, depth);
          this.resumeOff = nOff | 0;
          return RESUME;
        }
        return linked === 2 ? this.fillBack(base, depth) : linked;
      }
      steps -= 1;
      if (steps === 0) {
        this.trampoline(off, nOff, mode);
        return this.fillBack(base, depth);
      }
      this.push(base + depth, off, nOff, mode);
      depth += 1;
      off = nOff;
    }
  }

  /** Record a walked instruction at stack index `k`, growing the stack as needed. */
  private push(k: number, off: number, nOff: number, mode: number): void {
    if (k >= this.fillOff.length) this.growStack();
    this.fillOff[k] = off;
    this.fillNext[k] = nOff;
    this.fillMode[k] = mode;
  }

  /** Double the fills' stack (kept out of {@link push}, which is inlined into the walk). */
  private growStack(): void {
    const n = this.fillOff.length * 2;
    const grow = <T extends Int32Array | Uint8Array>(a: T, b: T): T => {
      b.set(a);
      return b;
    };
    this.fillOff = grow(this.fillOff, new Int32Array(n));
    this.fillNext = grow(this.fillNext, new Int32Array(n));
    this.fillMode = grow(this.fillMode, new Uint8Array(n));
  }

  /**
   * Enter the `depth` instructions recorded from stack index `base`, innermost first,
   * each from the entry of the one after it; stop (0) where that has none. 0 or -error.
   */
  private fillBack(base: number, depth: number): number {
    for (let k = base + depth - 1; k >= base; k--) {
      const linked = this.link(this.fillOff[k]!, this.fillNext[k]!, this.fillMode[k]!);
      if (linked <= 0) return linked;
    }
    return 0;
  }

  /**
   * Enter the instruction at `off`, followed by the one at `nOff` that has an entry:
   * one more instruction and a longer way to the same decision point, or a trampoline
   * to `nOff` when that does not fit an entry. 1 linked, 2 trampoline, 0 nothing
   * entered (the decision point left the section, or `nOff` has no entry), -error.
   */
  private link(off: number, nOff: number, mode: number): number {
    const code = this.code.msec;
    const bce = code.cache!.page(nOff).bce[slot(nOff)]!;
    if (Bce.mode(bce) === 0) return 0;
    // Code cached in another mode, reached without a mode change: libipt says "internal
    // error", but a corrupt trace gets here (a MODE.Exec the code did not run in).
    if (Bce.mode(bce) !== mode) return -ErrorCode.BadContext;
    const dOff = nOff + Bce.disp(bce);
    if (!(dOff >= code.winBegin && dOff < code.winEnd)) return 0;
    const ninsn = Bce.ninsn(bce) + 1;
    const disp = dOff - off;
    if (ninsn > Bce.MAX_NINSN || disp < Bce.MIN_DISP || disp > Bce.MAX_DISP) {
      this.trampoline(off, nOff, mode);
      return 2;
    }
    // The same decision point.
    this.setEntry(off, Bce.pack(mode, Bce.qualifier(bce), Bce.isize(bce), ninsn, disp));
    return 1;
  }

  /** An entry at `off` that only leads to `nOff` (or says "decode" when too far). */
  private trampoline(off: number, nOff: number, mode: number): void {
    const disp = nOff - off;
    if (disp < Bce.MIN_DISP || disp > Bce.MAX_DISP) {
      // The instruction at `off` (a jump far away) is the decision point: the walk
      // decoded it, so the decode cache has it for the entry to carry.
      this.setEntry(off, Bce.pack(mode, Qualifier.Decode, 0, 1, 0));
    } else {
      this.setEntry(off, Bce.pack(mode, Qualifier.Again, 0, 1, disp));
    }
  }

  /** Enter `bce` at `off` (its decision point, decoded, is in the decode cache). */
  private setEntry(off: number, bce: number): void {
    this.code.msec.cache!.setEntry(off, bce);
  }
}

/** What trace resolves at a decision point `insn` (one that needs trace). */
function qualifierOf(insn: FlowInsn): number {
  switch (insn.info & 15) {
    case FlowClass.CondJump:
      return Qualifier.Cond;
    case FlowClass.Call:
      return Qualifier.IndCall;
    case FlowClass.Return:
      return Qualifier.Return;
    default:
      return Qualifier.Indirect;
  }
}
