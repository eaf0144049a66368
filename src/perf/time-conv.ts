/**
 * Converting between TSC (Intel PT's time) and perf time (the sample_id `time` of
 * sideband records), with the parameters of TIME_CONV or AUXTRACE_INFO, as perf
 * does (tools/perf/util/tsc.c): all arithmetic modulo 2^64. Exact BigInt: meant
 * for a record or an event at a time, not for packet loops.
 */

export interface TscConversion {
  timeShift: number;
  timeMult: bigint;
  timeZero: bigint;
  /** With capUserTimeShort (Linux 5.10+), the counter wraps: cycles are taken relative to timeCycles under timeMask. */
  capUserTimeShort?: boolean;
  timeCycles?: bigint;
  timeMask?: bigint;
}

const u64 = (v: bigint) => BigInt.asUintN(64, v);

/** perf time (ns) of a TSC value. */
export function tscToPerfTime(tsc: bigint, c: TscConversion): bigint {
  let cyc = u64(tsc);
  if (c.capUserTimeShort)
    cyc = u64((c.timeCycles ?? 0n) + (u64(cyc - (c.timeCycles ?? 0n)) & (c.timeMask ?? 0n)));
  const shift = BigInt(c.timeShift);
  const quot = cyc >> shift;
  const rem = cyc & ((1n << shift) - 1n);
  return u64(c.timeZero + quot * c.timeMult + ((rem * c.timeMult) >> shift));
}

/** The TSC value of a perf time (ns); undefined when timeMult is 0. */
export function perfTimeToTsc(ns: bigint, c: TscConversion): bigint | undefined {
  if (c.timeMult === 0n) return undefined;
  const shift = BigInt(c.timeShift);
  const t = u64(ns - c.timeZero);
  const quot = t / c.timeMult;
  const rem = t % c.timeMult;
  return u64((quot << shift) + (rem << shift) / c.timeMult);
}
