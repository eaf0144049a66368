/**
 * Bit fields of 64-bit registers held as two unsigned 32-bit halves (`hi`, `lo`).
 *
 * Every field of the Intel PT MSRs and of CPUID leaf 14H lies inside one half, so a
 * field is read and written with one shift and one mask on that half; nothing here
 * allocates or uses BigInt.
 */
import type { Halves } from "../base/halves.js";

export type { Halves };

/** One bit field: where it is, how wide, and the names it goes by. */
export interface BitField<K extends string = string> {
  /** Property name in the typed view (camelCase). */
  readonly key: K;
  /** The SDM's name, used in error messages ("MTCFreq"). */
  readonly name: string;
  /** Lowest bit, 0..63. */
  readonly lsb: number;
  /** Width in bits, 1..32; the field never crosses bit 31/32. */
  readonly width: number;
}

/** Mask of the low `width` bits (width 1..32), unsigned. */
export function lowMask(width: number): number {
  return width >= 32 ? 0xffffffff : (1 << width) - 1;
}

/** The field's bits within its half (unsigned). */
export function fieldMask(f: BitField): number {
  return (lowMask(f.width) << (f.lsb & 31)) >>> 0;
}

/** Read a field (unsigned). */
export function getField(hi: number, lo: number, f: BitField): number {
  const word = f.lsb >= 32 ? hi : lo;
  return ((word >>> (f.lsb & 31)) & lowMask(f.width)) >>> 0;
}

/** Write a field into `out` (the value is truncated to the field's width). */
export function setField(out: Halves, f: BitField, value: number): void {
  const mask = fieldMask(f);
  const bits = ((value & lowMask(f.width)) << (f.lsb & 31)) & mask;
  if (f.lsb >= 32) out.hi = ((out.hi & ~mask) | bits) >>> 0;
  else out.lo = ((out.lo & ~mask) | bits) >>> 0;
}

/** The union of the fields' masks as halves. */
export function fieldsMask(fields: readonly BitField[]): Halves {
  const m = { hi: 0, lo: 0 };
  for (const f of fields) {
    if (f.lsb >= 32) m.hi = (m.hi | fieldMask(f)) >>> 0;
    else m.lo = (m.lo | fieldMask(f)) >>> 0;
  }
  return m;
}

/** Bit positions (0..63) set in a pair of halves, lowest first. */
export function setBits(hi: number, lo: number): number[] {
  const bits: number[] = [];
  for (let i = 0; i < 32; i++) if ((lo >>> i) & 1) bits.push(i);
  for (let i = 0; i < 32; i++) if ((hi >>> i) & 1) bits.push(32 + i);
  return bits;
}

/** Bit positions as SDM-style ranges: [18, 23, 28, 29, 30] -> "18, 23, 30:28". */
export function bitRanges(bits: readonly number[]): string {
  const parts: string[] = [];
  let i = 0;
  while (i < bits.length) {
    let j = i;
    while (j + 1 < bits.length && bits[j + 1] === bits[j]! + 1) j++;
    parts.push(i === j ? `${bits[i]}` : `${bits[j]}:${bits[i]}`);
    i = j + 1;
  }
  return parts.join(", ");
}

/** `0x` + hex, zero-padded to `digits`. */
export function hex(value: number, digits = 1): string {
  return `0x${(value >>> 0).toString(16).padStart(digits, "0")}`;
}
