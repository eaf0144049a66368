/**
 * One thread's call stack, rebuilt from the control flow: frames in typed arrays that
 * grow by doubling up to a depth limit (beyond it frames are counted, not stored), so
 * nothing is allocated per instruction.
 *
 * - A call pushes a frame: entry = the call target, return address = the address after
 *   the call. Interrupts and far calls (SYSCALL, INT n) push marked frames.
 * - A return pops to the frame whose return address it goes to, so longjmp-style and
 *   unwinding returns that skip frames pop several (the skipped ones end "unwind"). A
 *   near return does not look past an interrupt or far frame. A return that matches no
 *   frame ends the top frame as "unknown"; when that empties the stack, the code it
 *   returned to becomes a new root frame (a caller we never saw called).
 * - Code found running with an empty stack (trace start, after a gap) is a root frame.
 * - Gaps (overflow, decode errors) end every frame with the "gap" mark; an exec
 *   (told by the sideband) every frame with "exec".
 *
 * Every push and pop of a stored frame is reported to the {@link FrameListener}.
 */
import { hex64, mutableFields } from "../base/halves.js";

/** What kind of frame. */
export const FrameKind = {
  /** A near call. */
  Call: 0,
  /** Code found running without its call seen (trace start, after a gap, a caller returned to). */
  Root: 1,
  /** An interrupt or exception (asynchronous branch). */
  Interrupt: 2,
  /** A far call: SYSCALL, SYSENTER, INT n, far CALL, VMCALL. */
  Far: 3,
} as const;
export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];
export const FRAME_KIND_NAMES: readonly string[] = ["call", "root", "interrupt", "far"];

/** How a frame ended. */
export const FrameEnd = {
  /** Its return went to its return address. */
  Return: 0,
  /** A return to a frame further down popped it (longjmp, exception unwinding). */
  Unwind: 1,
  /** A return that matched no frame ended it. */
  Unknown: 2,
  /** A trace gap: overflow, decode error. */
  Gap: 3,
  /** The trace ended. */
  End: 4,
  /** A TSX transaction aborted. */
  Abort: 5,
  /** The thread exec'd: the program the frame belongs to is gone. */
  Exec: 6,
} as const;
export type FrameEnd = (typeof FrameEnd)[keyof typeof FrameEnd];
export const FRAME_END_NAMES: readonly string[] = [
  "return",
  "unwind",
  "unknown",
  "gap",
  "end",
  "abort",
  "exec",
];

/** Gets the stored frames as they come and go. */
export interface FrameListener {
  /** A frame was pushed; `depth` is the new depth (1 for the bottom frame). */
  push(depth: number, kind: FrameKind, entryHi: number, entryLo: number): void;
  /** The frame at `depth` (the top) ends. */
  pop(depth: number, end: FrameEnd): void;
}

/** Default for {@link CallStack} `limit`. */
export const DEFAULT_DEPTH_LIMIT = 4096;

/** Bit of the kind byte: the frame has a return address. */
const HAS_RETURN = 0x80;

const ignore: FrameListener = { push() {}, pop() {} };

export class CallStack {
  /** Stored frames (at most {@link limit}). */
  stored = 0;
  /** Frames beyond the limit, counted only. */
  extra = 0;
  /** Deepest depth reached (stored + extra). */
  maxDepth = 0;
  /** Returns that matched no frame. */
  unmatched = 0;
  /** Who hears about pushes and pops (the decoder currently running this thread). */
  listener: FrameListener = ignore;
  private kind: Uint8Array = new Uint8Array(16);
  /**
   * Return addresses' halves as int32 bit patterns, and a looked-for address's ({@link
   * want}): compared as small integers always. (As unsigned halves, the first half past
   * 2^31, not a small integer, threw away the optimised code of every caller that
   * inlined ret(): the flow tracker's, compiled again.)
   */
  private retHi: Int32Array = new Int32Array(16);
  private retLo: Int32Array = new Int32Array(16);
  private readonly want = new Int32Array(2);

  constructor(readonly limit = DEFAULT_DEPTH_LIMIT) {
    // The arrays grow with the stack while the walk's code runs.
    mutableFields(this, ["kind", "retHi", "retLo"]);
  }

  get depth(): number {
    return this.stored + this.extra;
  }

  /** Push a frame; `hasReturn` false for frames nothing returns to by address. */
  push(
    kind: FrameKind,
    entryHi: number,
    entryLo: number,
    hasReturn: boolean,
    retHi: number,
    retLo: number,
  ): void {
    const n = this.stored;
    if (n >= this.limit) {
      this.extra++;
    } else {
      if (n === this.kind.length) this.grow();
      this.kind[n] = kind | (hasReturn ? HAS_RETURN : 0);
      this.retHi[n] = retHi;
      this.retLo[n] = retLo;
      this.stored = n + 1;
      this.listener.push(n + 1, kind, entryHi, entryLo);
    }
    if (this.depth > this.maxDepth) this.maxDepth = this.depth;
  }

  /** A root frame at (hi:lo) when the stack is empty. */
  root(hi: number, lo: number): void {
    if (this.stored === 0 && this.extra === 0) this.push(FrameKind.Root, hi, lo, false, 0, 0);
  }

  /** A return (far: IRET, SYSRET, ...) that went to (hi:lo). */
  ret(hi: number, lo: number, far: boolean): void {
    // Counted frames cannot be matched: the top one returns.
    if (this.extra > 0) {
      this.extra--;
      return;
    }
    const kind = this.kind;
    const want = this.want;
    want[0] = hi;
    want[1] = lo;
    const h = want[0]!;
    const l = want[1]!;
    let farFrame = -1;
    for (let i = this.stored - 1; i >= 0; i--) {
      const k = kind[i]!;
      if (k & HAS_RETURN && this.retLo[i] === l && this.retHi[i] === h) {
        this.popTo(i, FrameEnd.Unwind, FrameEnd.Return);
        return;
      }
      const base = k & ~HAS_RETURN;
      if (base === FrameKind.Interrupt || base === FrameKind.Far) {
        if (!far) break;
        if (farFrame < 0) farFrame = i;
      }
    }
    this.unmatched++;
    // A far return leaves the innermost interrupt or far frame, wherever it goes.
    if (far && farFrame >= 0) {
      this.popTo(farFrame, FrameEnd.Unwind, FrameEnd.Unknown);
    } else if (this.stored > 0) {
      const top = kind[this.stored - 1]! & ~HAS_RETURN;
      if (top === FrameKind.Call || top === FrameKind.Root)
        this.popTo(this.stored - 1, FrameEnd.Unknown, FrameEnd.Unknown);
    }
    this.root(hi, lo);
  }

  /**
   * Tracing resumed at (hi:lo) after code it did not see: when a frame returns there
   * (a SYSCALL or interrupt whose handler was not traced), that code has returned.
   */
  resumeAt(hi: number, lo: number): void {
    const want = this.want;
    want[0] = hi;
    want[1] = lo;
    const h = want[0]!;
    const l = want[1]!;
    for (let i = this.stored - 1; i >= 0; i--) {
      if (this.kind[i]! & HAS_RETURN && this.retLo[i] === l && this.retHi[i] === h) {
        this.popTo(i, FrameEnd.Unwind, FrameEnd.Return);
        return;
      }
    }
  }

  /** End every frame with `end`. */
  clear(end: FrameEnd): void {
    this.extra = 0;
    if (this.stored > 0) this.popTo(0, end, end);
  }

  /**
   * The return address of stored frame `i` (0 = bottom) as "0x..." (the address its
   * return goes to), or "" for a frame without one.
   */
  returnOf(i: number): string {
    return this.kind[i]! & HAS_RETURN ? `0x${hex64(this.retHi[i]! >>> 0, this.retLo[i]! >>> 0, 0)}` : "";
  }

  /** Drop every frame unreported (a shard's run of a thread ends: see CallAnalysisOptions.segments). */
  forget(): void {
    this.stored = 0;
    this.extra = 0;
  }

  /** Pop down to `depth` frames (no-op when not deeper); the frames end with `end`. */
  cut(depth: number, end: FrameEnd): void {
    if (this.depth <= depth) return;
    if (depth >= this.stored) {
      this.extra = depth - this.stored;
      return;
    }
    this.extra = 0;
    this.popTo(depth, end, end);
  }

  /** Pop frames above index `i` with `above`, then frame `i` with `last`. */
  private popTo(i: number, above: FrameEnd, last: FrameEnd): void {
    // One call for every frame: a call of its own for those above the last (fewer: an
    // unwind) first ran once V8 had optimised this, and threw the optimised code away.
    for (;;) {
      const more = this.stored > i + 1;
      this.listener.pop(this.stored, more ? above : last);
      this.stored--;
      if (!more) return;
    }
  }

  private grow(): void {
    const n = Math.min(this.kind.length * 2, this.limit);
    const k = new Uint8Array(n);
    k.set(this.kind);
    this.kind = k;
    this.retHi = grown(this.retHi, n);
    this.retLo = grown(this.retLo, n);
  }
}

function grown(a: Int32Array, n: number): Int32Array {
  const b = new Int32Array(n);
  b.set(a);
  return b;
}
