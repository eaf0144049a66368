/**
 * A clock for durations (decode speed, progress redraws). Not `performance.now()`:
 * on Node 20 its first use loads perf_hooks, a visible part of the start-up of a
 * command on a small file.
 */

/** Milliseconds since an arbitrary origin, with sub-millisecond resolution. */
export function nowMs(): number {
  const [s, ns] = process.hrtime();
  return s * 1e3 + ns / 1e6;
}
