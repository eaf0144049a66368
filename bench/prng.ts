/**
 * A small deterministic PRNG for the benchmark's synthetic trace: xorshift128
 * (Marsaglia 2003) with its state seeded by splitmix32. Same seed, same stream, on
 * every platform: all arithmetic is 32-bit integer arithmetic.
 */

/** One splitmix32 step: returns the next output and advances `state[0]`. */
function splitmix32(state: Uint32Array): number {
  state[0] = (state[0]! + 0x9e3779b9) >>> 0;
  let z = state[0]!;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export class Rng {
  private x: number;
  private y: number;
  private z: number;
  private w: number;

  constructor(seed: number) {
    const s = new Uint32Array([seed >>> 0]);
    this.x = splitmix32(s);
    this.y = splitmix32(s);
    this.z = splitmix32(s);
    this.w = splitmix32(s);
    // xorshift128 must not start from the all-zero state.
    if ((this.x | this.y | this.z | this.w) === 0) this.w = 1;
  }

  /** The next unsigned 32-bit value. */
  u32(): number {
    const t = this.x ^ (this.x << 11);
    this.x = this.y;
    this.y = this.z;
    this.z = this.w;
    this.w = (this.w ^ (this.w >>> 19) ^ (t ^ (t >>> 8))) >>> 0;
    return this.w;
  }

  /** A uniform integer in [0, n) for 0 < n <= 2^32 (multiply-shift, no modulo bias to speak of). */
  below(n: number): number {
    return Math.floor((this.u32() / 0x100000000) * n);
  }

  /** A uniform integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number {
    return lo + this.below(hi - lo + 1);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.u32() < p * 0x100000000;
  }

  /** A uniform float in [0, 1). */
  float(): number {
    return this.u32() / 0x100000000;
  }

  /** An index into `weights`, chosen with probability proportional to its weight. */
  pick(weights: ArrayLike<number>): number {
    let total = 0;
    for (let i = 0; i < weights.length; i++) total += weights[i]!;
    let r = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i]!;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }
}
