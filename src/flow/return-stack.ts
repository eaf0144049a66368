/**
 * The return-address stack for RET compression (SDM "Indirect Transfer Compression
 * for Returns"): near calls push their return address, a compressed RET (a taken TNT
 * bit) pops it. Like the processor's and libipt's, it holds the 64 most recent
 * addresses; pushing onto a full stack drops the oldest.
 *
 * A ring of 65 slots over two typed arrays (one slot stays free so that full and
 * empty differ); nothing is allocated after construction.
 */
import { ErrorCode } from "../base/errors.js";

export const RETURN_STACK_SIZE = 64;

const SLOTS = RETURN_STACK_SIZE + 1;

export class ReturnStack {
  private hi: Uint32Array = new Uint32Array(SLOTS);
  private lo: Uint32Array = new Uint32Array(SLOTS);
  /** The arrays of the stack's own while it is {@link attach}ed to others. */
  private own: { hi: Uint32Array; lo: Uint32Array } | undefined;
  /** The ring's ends (slots 0..64): a walker that keeps the ring in its memory ({@link attach}) reads and sets them. */
  top = 0;
  bottom = 0;
  /** The address the last successful {@link pop} returned. */
  poppedHi = 0;
  poppedLo = 0;

  /**
   * Keep the ring in `hi` and `lo` ({@link RETURN_STACK_SIZE} + 1 words each: a
   * WebAssembly walker's memory) from now on, its addresses copied there, until
   * {@link detach}.
   */
  attach(hi: Uint32Array, lo: Uint32Array): void {
    if (this.own === undefined) this.own = { hi: this.hi, lo: this.lo };
    hi.set(this.hi);
    lo.set(this.lo);
    this.hi = hi;
    this.lo = lo;
  }

  /** Back to the stack's own arrays, the addresses copied back. */
  detach(): void {
    const own = this.own;
    if (own === undefined) return;
    own.hi.set(this.hi);
    own.lo.set(this.lo);
    this.hi = own.hi;
    this.lo = own.lo;
    this.own = undefined;
  }

  clear(): void {
    this.top = 0;
    this.bottom = 0;
  }

  get isEmpty(): boolean {
    return this.top === this.bottom;
  }

  /** Addresses held (0..64). */
  get length(): number {
    const n = this.top - this.bottom;
    return n < 0 ? n + SLOTS : n;
  }

  push(hi: number, lo: number): void {
    let top = this.top;
    this.hi[top] = hi;
    this.lo[top] = lo;
    top = top === SLOTS - 1 ? 0 : top + 1;
    if (top === this.bottom) this.bottom = this.bottom === SLOTS - 1 ? 0 : this.bottom + 1;
    this.top = top;
  }

  /**
   * Replace each low half held by `f` of it (a decoder keeping ids, not addresses,
   * whose ids change): false, and the stack unchanged from that entry on, when `f`
   * gives a negative number.
   */
  remapLo(f: (lo: number) => number): boolean {
    for (let i = this.bottom; i !== this.top; i = i === SLOTS - 1 ? 0 : i + 1) {
      const v = f(this.lo[i]!);
      if (v < 0) return false;
      this.lo[i] = v;
    }
    return true;
  }

  /** Pop into {@link poppedHi}/{@link poppedLo}: 0, or -RetStackEmpty. */
  pop(): number {
    let top = this.top;
    if (top === this.bottom) return -ErrorCode.RetStackEmpty;
    top = top === 0 ? SLOTS - 1 : top - 1;
    this.top = top;
    this.poppedHi = this.hi[top]!;
    this.poppedLo = this.lo[top]!;
    return 0;
  }
}
