/**
 * Converting between TSC (Intel PT's time) and perf time (the sample_id `time` of
 * sideband records), with the parameters of TIME_CONV or AUXTRACE_INFO, as perf
 * does (tools/perf/util/tsc.c): all arithmetic modulo 2^64. Exact BigInt: meant
 * for a record or an event at a time, not for packet loops. The parameters come
 * from the file: check them with {@link tscConversionProblem} first (a corrupt
 * time_shift would make every conversion build a BigInt of that many bits).
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

/**
 * Why a conversion from a file cannot be right, or undefined. The kernel gives
 * time_shift as a u16 and time_mult as a u32 (struct perf_event_mmap_page); the
 * shift is below 64 in practice (perf's own arithmetic is in u64).
 */
export function tscConversionProblem(c: TscConversion): string | undefined {
  if (!Number.isInteger(c.timeShift) || c.timeShift < 0 || c.timeShift > 63)
    return `time_shift ${c.timeShift} is corrupt (perf writes 0 to 63)`;
  if (c.timeMult < 0n || c.timeMult > 0xffffffffn)
    return `time_mult ${c.timeMult} is corrupt (perf writes a 32-bit value)`;
  return undefined;
}

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
