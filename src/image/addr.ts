/**
 * 64-bit addresses as two unsigned 32-bit halves, for the image layer.
 *
 * Addresses (kernel text at 0xffffffff81000000, CR3 values) are kept exact as
 * `hi`/`lo` pairs. Only sizes and distances inside one section are plain Numbers, and
 * those are validated to stay below 2^53 (see {@link MAX_SIZE}), so every Number here
 * is an exact integer. Comparing and printing halves is the base layer's (halves.ts).
 */

import { doubleFields } from "../base/halves.js";

export const TWO_32 = 0x1_0000_0000;
// The module's own code reads copies: exports are module bindings, which V8 (Node 20)
// loads and checks at every use in optimized code; module constants it folds.
const T32 = TWO_32;

/**
 * Largest section size, and largest ELF offset or size field, accepted: 2^53 - 1.
 * Larger values cannot be exact Numbers; no real file or address space comes near.
 */
export const MAX_SIZE = Number.MAX_SAFE_INTEGER;

/** Result halves of {@link addSize}; read them right after the call. */
export const sum = { hi: 0, lo: 0, carry: 0 };
// Addresses: see doubleFields.
doubleFields(sum, ["hi", "lo"]);
const out = sum;

/**
 * (hi:lo) + delta with 0 <= delta <= 2^53 (exact), into {@link sum}; `sum.carry` is 1 when
 * the true sum reached 2^64 (the halves then hold it modulo 2^64).
 */
export function addSize(hi: number, lo: number, delta: number): void {
  const dHi = Math.floor(delta / T32);
  const l = lo + (delta - dHi * T32);
  const c = l >= T32 ? 1 : 0;
  const h = hi + dHi + c;
  out.lo = l >>> 0;
  out.hi = h >>> 0;
  out.carry = h >= T32 ? 1 : 0;
}

/**
 * a - b for a >= b, as a Number: exact when the difference is below 2^53, otherwise
 * a value of at least 2^53 (never smaller than the truth), which is all callers need
 * to know that it exceeds any section size.
 */
export function diff64(aHi: number, aLo: number, bHi: number, bLo: number): number {
  return (aHi - bHi) * T32 + (aLo - bLo);
}

/** A Number (exact integer) as `0x...`. */
export function hex(n: number): string {
  return `0x${n.toString(16)}`;
}
