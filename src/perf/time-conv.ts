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

/** Seconds of a base past which {@link PerfTimeParts} makes it with BigInt: (2^64 - 2^34) ns, rounded down. */
const BASE_SEC_LIMIT = 18_446_744_056;

/**
 * {@link tscToPerfTime} of TSC hi:lo as whole seconds and nanoseconds ({@link sec},
 * {@link nsec}), for a caller that asks it for one time after another (perf script's
 * line heads: a new time nearly every line). Exact, and without BigInt where the
 * arithmetic allows (time_shift up to 32, as x86 kernels give it, no
 * capUserTimeShort): perf time is timeZero + quot * timeMult + ((rem * timeMult) >>
 * shift) with quot and rem the TSC's bits above and below the shift. The first part
 * (the base) moves on by (quot - quot before) * timeMult while that stays below 2^52
 * (a small shift moves quot on every few ticks: shift 0, timeMult 1 makes perf time
 * the TSC), else it is made with BigInt; the second is made with numbers below 2^53
 * (rem split in 16-bit halves).
 */
export class PerfTimeParts {
  sec = 0;
  nsec = 0;
  private readonly fast: boolean;
  private readonly shift: number;
  private readonly mult: number;
  /** The quot (hi:lo) the base is of, and the base: timeZero + quot * timeMult (-1: none, or past 2^64 - 2^33). */
  private quotHi = -1;
  private quotLo = -1;
  private baseSec = -1;
  private baseNsec = 0;

  constructor(private readonly c: TscConversion) {
    this.shift = c.timeShift;
    this.mult = Number(c.timeMult);
    this.fast = !c.capUserTimeShort && c.timeShift >= 0 && c.timeShift <= 32 && c.timeMult <= 0xffffffffn;
  }

  /** The perf time of TSC hi:lo (unsigned halves) into {@link sec} and {@link nsec}. */
  at(hi: number, lo: number): void {
    const s = this.shift;
    if (this.fast) {
      const h = hi >>> 0;
      const l = lo >>> 0;
      // (JavaScript shifts by a count modulo 32: 0 and 32 apart.)
      const quotHi = s === 32 ? 0 : s === 0 ? h : h >>> s;
      const quotLo = s === 32 ? h : s === 0 ? l : ((h << (32 - s)) | (l >>> s)) >>> 0;
      if (quotHi !== this.quotHi || quotLo !== this.quotLo) this.base(quotHi, quotLo);
      if (this.baseSec >= 0) {
        const m = this.mult;
        let r: number;
        if (s >= 16) {
          const rem = s === 32 ? l : l % 2 ** s;
          // (rem * m) >> s: rem = rh * 2^16 + rl, each product below 2^48; the bits of
          // rl * m under 2^16 cannot carry into the quotient by 2^(s - 16).
          r = Math.floor(
            (Math.floor(rem / 65536) * m + Math.floor(((rem % 65536) * m) / 65536)) / 2 ** (s - 16),
          );
        } else r = Math.floor(((l % 2 ** s) * m) / 2 ** s); // (rem below 2^16: the product below 2^48)
        const ns = this.baseNsec + r;
        const carry = Math.floor(ns / 1e9);
        this.sec = this.baseSec + carry;
        this.nsec = ns - carry * 1e9;
        return;
      }
    }
    const t = tscToPerfTime((BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0), this.c);
    this.sec = Number(t / 1_000_000_000n);
    this.nsec = Number(t % 1_000_000_000n);
  }

  /** The time as one number (ns), rounded as Number(tscToPerfTime(...)) rounds it. */
  get ns(): number {
    return this.sec < 9_000_000
      ? this.sec * 1e9 + this.nsec
      : Number(BigInt(this.sec) * 1_000_000_000n + BigInt(this.nsec));
  }

  private base(quotHi: number, quotLo: number): void {
    // A small step on from the base before: timeZero + quot * timeMult moves on by step * timeMult.
    if (this.baseSec >= 0) {
      const step = (quotHi - this.quotHi) * 2 ** 32 + (quotLo - this.quotLo);
      const add = step * this.mult;
      if (step > 0 && add < 2 ** 52) {
        const ns = this.baseNsec + add;
        const carry = Math.floor(ns / 1e9);
        // (Past 2^64 - 2^34 ns, the BigInt base below says whether the sum wraps.)
        if (this.baseSec + carry < BASE_SEC_LIMIT) {
          this.quotHi = quotHi;
          this.quotLo = quotLo;
          this.baseSec += carry;
          this.baseNsec = ns - carry * 1e9;
          return;
        }
      }
    }
    this.quotHi = quotHi;
    this.quotLo = quotLo;
    const b = u64(this.c.timeZero + ((BigInt(quotHi) << 32n) | BigInt(quotLo)) * this.c.timeMult);
    // The remainder's part is below 2^32 + 1e9: a base this near 2^64 may wrap (BigInt then).
    if (b > (1n << 64n) - (1n << 33n)) {
      this.baseSec = -1;
      return;
    }
    this.baseSec = Number(b / 1_000_000_000n);
    this.baseNsec = Number(b % 1_000_000_000n);
  }
}
