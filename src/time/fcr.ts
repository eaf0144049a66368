/**
 * The fast-counter:cycles ratio's fixed-point format, and printing it as ptdump does
 * (`fcr / 256` as a C double with `%.3f`, deltas with `%+.3f`).
 */
import type { U64Like } from "../base/u64.js";

/** Fraction bits of an fcr value. */
export const FCR_SHIFT = 8;

const FCR_ONE = 1 << FCR_SHIFT;

/** fcr / 256 as a double: one rounding of the 64-bit value, then an exact scaling. */
export function fcrToNumber(fcr: Readonly<U64Like>): number {
  return (fcr.hi * 0x1_0000_0000 + fcr.lo) / FCR_ONE;
}

/** ptdump's `%.3f` of an fcr. */
export function formatFcr(fcr: Readonly<U64Like>): string {
  return formatFixed3(fcrToNumber(fcr), false);
}

/** ptdump's `%+.3f` of the change from `previous` to `fcr` (subtracted as doubles). */
export function formatFcrDelta(fcr: Readonly<U64Like>, previous: Readonly<U64Like>): string {
  return formatFixed3(fcrToNumber(fcr) - fcrToNumber(previous), true);
}

/**
 * C's `printf("%.3f")` (`"%+.3f"` with `plus`) for a finite double: the exact binary
 * value rounded to three decimals, ties to even as glibc does (so 0.0625 prints as
 * "0.062", where Number#toFixed would give "0.063").
 */
export function formatFixed3(x: number, plus = false): string {
  const negative = x < 0 || Object.is(x, -0);
  const sign = negative ? "-" : plus ? "+" : "";
  const a = Math.abs(x);
  if (!Number.isFinite(a)) return sign + (Number.isNaN(a) ? "nan" : "inf");

  // Fast path: a multiple of 1/256 below 2^45 (every fcr, and every fcr difference,
  // in that range) has an integer 256*a below 2^53.
  const scaled = a * FCR_ONE;
  if (Number.isInteger(scaled) && scaled <= Number.MAX_SAFE_INTEGER) {
    const frac = scaled % FCR_ONE;
    let whole = (scaled - frac) / FCR_ONE;
    // frac/256 in thousandths is frac*125/32.
    const m = frac * 125;
    let thousandths = Math.floor(m / 32);
    const rest = m % 32;
    if (rest > 16 || (rest === 16 && thousandths % 2 === 1)) thousandths += 1;
    if (thousandths === 1000) {
      whole += 1;
      thousandths = 0;
    }
    return `${sign}${whole}.${String(thousandths).padStart(3, "0")}`;
  }
  return sign + exactFixed3(a);
}

/** `%.3f` of any finite non-negative double, exactly, via BigInt. */
function exactFixed3(a: number): string {
  let k = 0;
  let y = a;
  while (!Number.isInteger(y)) {
    y *= 2;
    k += 1;
  }
  // a = y / 2^k exactly.
  const n = BigInt(y) * 1000n;
  const shift = BigInt(k);
  let q = n >> shift;
  if (k > 0) {
    const r = n - (q << shift);
    const half = 1n << (shift - 1n);
    if (r > half || (r === half && (q & 1n) === 1n)) q += 1n;
  }
  const digits = q.toString().padStart(4, "0");
  return `${digits.slice(0, -3)}.${digits.slice(-3)}`;
}
