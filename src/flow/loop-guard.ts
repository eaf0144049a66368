/**
 * The guard against code that loops without trace (`jmp $`, `36 EB FD`, or any cycle
 * of straight-line code and direct jumps and calls): such code needs no trace, so
 * nothing else stops a walk through it when the trace left (a TNT bit, a TIP, an
 * event's IP) is never reached. libipt (8978561f) has no guard: ptxed prints the loop's
 * instructions without end.
 *
 * The block decoder counts the instructions it walks since it last consumed trace (a
 * packet, a TNT bit, an event): a compare per block tells whether a block consumed
 * any, and only blocks that did not come here. Trace is only ever consumed at a
 * block's end or between blocks, so the count does not depend on where blocks end
 * (end-on-call, end-on-jump, full blocks): block and instruction decoders see the
 * same counts. Past {@link LOOP_CHECK_AFTER} such instructions, where a block is made
 * to end exactly, the decoder walks one instruction per block and checks for a
 * repeated state after each with Brent's cycle detection: the walk without trace is a
 * function of the IP (and of the pending TRIG's instruction count, which counts
 * down), so a repeated state is a loop that never ends, while code that runs on
 * through distinct addresses (a long chain of jumps) is never cut short.
 */
import { MAX_BLOCK_INSNS } from "./block-step.js";

/**
 * Instructions a walk may take without consuming trace before the decoder starts
 * checking for a loop: a full block and one more, more than real code runs without a
 * conditional or indirect branch or an event.
 */
export const LOOP_CHECK_AFTER = MAX_BLOCK_INSNS + 1;

export class LoopGuard {
  /** Instructions walked since the decoder last consumed trace. */
  idle = 0;
  /** Past this many, blocks get cut where the check starts ({@link cap}). */
  private readonly near: number;
  /** Brent: the state to meet again (IP, TRIG count) and when it was taken. */
  private hi = 0;
  private lo = 0;
  private icnt = 0;
  private power = 0;
  private lam = 0;

  /** `checkAfter`: {@link LOOP_CHECK_AFTER} unless a caller wants another bound (>= 1). */
  constructor(readonly checkAfter = LOOP_CHECK_AFTER) {
    if (!Number.isSafeInteger(checkAfter) || checkAfter < 1)
      throw new RangeError(`loopCheckAfter must be a whole number >= 1, not ${checkAfter}`);
    this.near = checkAfter - MAX_BLOCK_INSNS;
  }

  /** Whether blocks need {@link cap} and {@link loops} (rarely: a long walk without trace). */
  isNear(): boolean {
    return this.idle > this.near;
  }

  /** The decoder consumed trace. */
  reset(): void {
    this.idle = 0;
    this.power = 0;
    this.lam = 0;
  }

  /** The most instructions the next block may hold: it ends where checking starts, then one at a time. */
  cap(): number {
    const left = this.checkAfter - this.idle;
    return left <= 0 ? 1 : Math.min(left, MAX_BLOCK_INSNS);
  }

  /**
   * Where the next block starts, at IP (hi:lo) with the pending TRIG count `icnt`:
   * whether the walk without trace was here before (Brent's step; only once checking
   * started).
   */
  loops(hi: number, lo: number, icnt: number): boolean {
    if (this.idle < this.checkAfter) return false;
    if (this.lam !== 0 && lo === this.lo && hi === this.hi && icnt === this.icnt) return true;
    if (this.lam === this.power) {
      this.hi = hi;
      this.lo = lo;
      this.icnt = icnt;
      this.power = this.power === 0 ? 1 : this.power * 2;
      this.lam = 0;
    }
    return false;
  }

  /** A block of `ninsn` instructions was walked without consuming trace. */
  walked(ninsn: number): void {
    if (this.idle >= this.checkAfter) this.lam += ninsn;
    this.idle += ninsn;
  }
}
