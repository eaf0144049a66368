/**
 * A small seeded PRNG (mulberry32). Case `i` of a campaign with seed `s` gets its own
 * generator, so what a case does depends only on (s, i), never on timing or on which
 * worker runs it.
 */

/** splitmix32: spreads (seed, index) so neighbouring cases get unrelated streams. */
function mix(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

export class Rng {
  private state: number;

  constructor(seed: number, index = 0) {
    this.state = mix(mix(seed >>> 0) ^ mix(index >>> 0 || 0x5bd1e995));
  }

  /** A uniform 32-bit unsigned integer (mulberry32). */
  u32(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** An integer in [0, n) (n >= 1). */
  below(n: number): number {
    return n <= 1 ? 0 : Math.floor((this.u32() / 0x1_0000_0000) * n);
  }

  /** An integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + this.below(hi - lo + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.u32() / 0x1_0000_0000 < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("pick from an empty list");
    return items[this.below(items.length)]!;
  }
}
