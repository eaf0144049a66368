/**
 * Best-of-N timing with `process.hrtime.bigint()`: one untimed warm-up run (which
 * also lets the JIT optimise the loop), then `runs` timed runs.
 */

export interface Timing {
  /** Fastest run, in nanoseconds. */
  bestNs: number;
  /** Every timed run, in nanoseconds, in order. */
  runsNs: number[];
}

/**
 * Time `fn` best-of-`runs` after one warm-up call. `fn` returns a checksum (e.g. a
 * packet count); every run must return the same one, or this throws.
 */
export function bestOf(runs: number, fn: () => number): Timing & { result: number } {
  const result = fn();
  const runsNs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = fn();
    const ns = Number(process.hrtime.bigint() - start);
    if (r !== result) throw new Error(`run ${i} returned ${r}, warm-up returned ${result}`);
    runsNs.push(ns);
  }
  return { result, bestNs: Math.min(...runsNs), runsNs };
}

/** Throughput in MB/s (10^6 bytes per second). */
export function mbPerSec(bytes: number, ns: number): number {
  return (bytes / ns) * 1e3;
}

/** Millions of items per second. */
export function mPerSec(count: number, ns: number): number {
  return (count / ns) * 1e3;
}
