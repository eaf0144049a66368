/**
 * Little-endian field access over a Uint8Array. Callers check bounds first; these
 * never allocate except the string and BigInt helpers meant for API edges.
 */

import { toBigInt } from "../base/halves.js";

export function u16(b: Uint8Array, p: number): number {
  return b[p]! | (b[p + 1]! << 8);
}

export function u32(b: Uint8Array, p: number): number {
  return (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)) >>> 0;
}

export function s32(b: Uint8Array, p: number): number {
  return b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24);
}

/** A u64 as a Number: exact up to 2^53 (offsets, sizes, ids, counts). */
export function u64n(b: Uint8Array, p: number): number {
  return u32(b, p + 4) * 0x100000000 + u32(b, p);
}

/** A u64, exact (API edge only). */
export function u64(b: Uint8Array, p: number): bigint {
  return toBigInt(u32(b, p + 4), u32(b, p));
}

export { cString } from "../image/c-string.js";

/** The parts one after the other in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Lower-case hex of bytes. */
export function hexBytes(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += x.toString(16).padStart(2, "0");
  return s;
}
