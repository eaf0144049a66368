/**
 * The processor's RET-compression stack (SDM "Indirect Transfer Compression for
 * Returns", seed document 000): the next IPs of the youngest 64 near CALLs, as hi/lo
 * halves in a ring. A full stack drops its oldest entry.
 *
 * Only a compressed RET pops (unless GenOptions.retPop says every RET). An uncompressed RET (a TIP) leaves the stack alone, as
 * libipt's and perf's decoders do: they pop only for a RET they see as a taken TNT
 * bit, so a processor that also popped on uncompressed RETs would leave them holding
 * different stacks after a longjmp-style mismatch.
 */
export const RET_STACK_DEPTH = 64;

export class RetStack {
  private readonly hi = new Uint32Array(RET_STACK_DEPTH);
  private readonly lo = new Uint32Array(RET_STACK_DEPTH);
  /** Index of the youngest entry. */
  private top = 0;
  /** Entries held, 0..64. */
  size = 0;

  clear(): void {
    this.size = 0;
  }

  push(hi: number, lo: number): void {
    this.top = (this.top + 1) & (RET_STACK_DEPTH - 1);
    this.hi[this.top] = hi;
    this.lo[this.top] = lo;
    if (this.size < RET_STACK_DEPTH) this.size++;
  }

  /** Whether the youngest entry is hi:lo. */
  topIs(hi: number, lo: number): boolean {
    return this.size > 0 && this.hi[this.top] === hi && this.lo[this.top] === lo;
  }

  pop(): void {
    if (this.size === 0) return;
    this.top = (this.top - 1) & (RET_STACK_DEPTH - 1);
    this.size--;
  }
}
