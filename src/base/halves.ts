/**
 * 64-bit values as two unsigned 32-bit halves, the one representation every layer
 * uses: joining and splitting at the BigInt API edge, comparing, and printing in hex.
 * Arithmetic on halves is in u64.ts.
 */

/** Anything with unsigned 32-bit `hi`/`lo` halves. */
export interface Halves {
  hi: number;
  lo: number;
}

/** Join two unsigned 32-bit halves into an exact BigInt (API edge only, never in loops). */
export function toBigInt(hi: number, lo: number): bigint {
  return (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
}

/** Split the low 64 bits of a BigInt into `out` (API edge only); returns `out`. */
export function splitBigInt<T extends Halves>(value: bigint, out: T): T {
  out.hi = Number((value >> 32n) & 0xffffffffn);
  out.lo = Number(value & 0xffffffffn);
  return out;
}

/** Lower-case hex without prefix, zero-padded to `width` digits, of a 64-bit value given as halves. */
export function hex64(hi: number, lo: number, width = 16): string {
  const s = hi === 0 ? lo.toString(16) : hi.toString(16) + lo.toString(16).padStart(8, "0");
  return s.padStart(width, "0");
}

/** The exact value as `0x...` (lower-case hex, no padding). */
export function hex0x(hi: number, lo: number): string {
  return `0x${hex64(hi, lo, 1)}`;
}

/** -1, 0 or 1 as (aHi:aLo) is below, equal to or above (bHi:bLo), unsigned. */
export function cmp64(aHi: number, aLo: number, bHi: number, bLo: number): number {
  if (aHi !== bHi) return aHi < bHi ? -1 : 1;
  if (aLo !== bLo) return aLo < bLo ? -1 : 1;
  return 0;
}

/**
 * Have V8 keep the number fields `fields` of `obj` (and of every object shaped as it: a
 * fresh object of its class) as doubles from now on; they end at 0. Call it once where
 * the class is defined (or in the constructor of a class made once), for fields that
 * hold 32-bit halves. V8 keeps a number field as a small integer while every value it
 * held had 31 bits, and changes that the first time it holds more (a half of 2^30 or
 * above: most addresses and times). The change makes every optimized function that used
 * such objects throw its code away ("wrong map") and run slowly until compiled again,
 * which in the middle of a decode cost ~10% of a whole `ptkit flow` run.
 */
export function doubleFields(obj: object, fields: readonly string[]): void {
  const o = obj as Record<string, number>;
  for (const f of fields)
    if (typeof o[f] !== "number") throw new TypeError(`doubleFields: no number field ${f}`);
  for (const f of fields) o[f] = 2 ** 31;
  for (const f of fields) o[f] = 0;
}

/**
 * Have V8 treat the fields `fields` of `obj` (and of every object shaped as it) as ones
 * that change, from now on: each gets a fresh value of its kind (a typed array or
 * DataView over the same memory, another number), then its own again. Call it in the
 * constructor of a class whose fields are replaced later (a table that grows). V8
 * takes a field that was never stored to again for a constant, and optimizing
 * compilations that rely on that are thrown away when the first replacement comes in
 * the middle of a decode (40-55 ms of compile each, twice on the gzip trace's block
 * walk).
 */
export function mutableFields(obj: object, fields: readonly string[]): void {
  const o = obj as Record<string, unknown>;
  for (const f of fields) {
    const v = o[f];
    if (v instanceof DataView) o[f] = new DataView(v.buffer, v.byteOffset, v.byteLength);
    else if (ArrayBuffer.isView(v)) o[f] = (v as Uint8Array).subarray(0);
    else if (typeof v === "number") o[f] = v + 1;
    o[f] = v;
  }
}
