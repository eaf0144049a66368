/**
 * Unsigned 64-bit arithmetic on pairs of unsigned 32-bit halves, without BigInt.
 *
 * Every operation is exact modulo 2^64, as C's `uint64_t` arithmetic is, for all
 * inputs (not only below 2^53). Results go into a caller-owned {@link U64} so that
 * nothing is allocated per call; `out` may be the same object an input came from,
 * because inputs are passed as plain numbers and read before `out` is written.
 *
 * Inputs must be unsigned 32-bit integers (0 <= x < 2^32). Intermediate products are
 * kept below 2^53 by splitting 32-bit words into 16-bit limbs.
 */

import { doubleFields, type Halves, splitBigInt, toBigInt } from "./halves.js";

const TWO_32 = 0x1_0000_0000;
const TWO_16 = 0x1_0000;

/** A mutable unsigned 64-bit value. */
export class U64 {
  /** High 32 bits, unsigned. */
  hi = 0;
  /** Low 32 bits, unsigned. */
  lo = 0;

  constructor(hi = 0, lo = 0) {
    this.hi = hi;
    this.lo = lo;
  }

  set(hi: number, lo: number): this {
    this.hi = hi;
    this.lo = lo;
    return this;
  }

  copy(other: Readonly<U64Like>): this {
    this.hi = other.hi;
    this.lo = other.lo;
    return this;
  }

  isZero(): boolean {
    return this.hi === 0 && this.lo === 0;
  }

  /** The nearest double (one rounding, as C's `(double)` conversion). */
  toNumber(): number {
    return this.hi * TWO_32 + this.lo;
  }

  /** The exact value (API edge only). */
  get big(): bigint {
    return toBigInt(this.hi, this.lo);
  }

  set big(value: bigint) {
    splitBigInt(value, this);
  }

  static fromBig(value: bigint): U64 {
    const v = new U64();
    v.big = value;
    return v;
  }
}
// Addresses: see doubleFields.
doubleFields(new U64(), ["hi", "lo"]);

/** Anything with unsigned 32-bit `hi`/`lo` halves (a {@link U64}, a Packet payload). */
export type U64Like = Halves;

/** The high 32 bits of the 64-bit product of two unsigned 32-bit numbers. */
export function mulHi32(a: number, b: number): number {
  // a*b = 2^16*(aHi*b) + aLo*b; both partial products are below 2^48.
  const aLo = a & 0xffff;
  const aHi = a >>> 16;
  const mid = aHi * b + Math.floor((aLo * b) / TWO_16);
  return Math.floor(mid / TWO_16);
}

/** out = a + b (mod 2^64). */
export function add64(out: U64, aHi: number, aLo: number, bHi: number, bLo: number): void {
  const lo = aLo + bLo;
  const carry = lo >= TWO_32 ? 1 : 0;
  out.lo = lo >>> 0;
  out.hi = (aHi + bHi + carry) >>> 0;
}

/** out = a - b (mod 2^64). */
export function sub64(out: U64, aHi: number, aLo: number, bHi: number, bLo: number): void {
  const borrow = aLo < bLo ? 1 : 0;
  out.lo = (aLo - bLo) >>> 0;
  out.hi = (aHi - bHi - borrow) >>> 0;
}

/** out = a * b (mod 2^64): the low 64 bits of the product. */
export function mul64(out: U64, aHi: number, aLo: number, bHi: number, bLo: number): void {
  // Math.imul is exact modulo 2^32, which is all the cross terms contribute.
  const cross = Math.imul(aHi, bLo) + Math.imul(aLo, bHi);
  const hi = mulHi32(aLo, bLo) + cross;
  out.lo = Math.imul(aLo, bLo) >>> 0;
  out.hi = hi >>> 0;
}

/** out = a << n (mod 2^64), 0 <= n < 64. */
export function shl64(out: U64, hi: number, lo: number, n: number): void {
  if (n === 0) {
    out.hi = hi;
    out.lo = lo;
  } else if (n < 32) {
    out.hi = ((hi << n) | (lo >>> (32 - n))) >>> 0;
    out.lo = (lo << n) >>> 0;
  } else {
    out.hi = (lo << (n - 32)) >>> 0;
    out.lo = 0;
  }
}

/** out = a >> n (logical), 0 <= n < 64. */
export function shr64(out: U64, hi: number, lo: number, n: number): void {
  if (n === 0) {
    out.hi = hi;
    out.lo = lo;
  } else if (n < 32) {
    out.lo = ((lo >>> n) | (hi << (32 - n))) >>> 0;
    out.hi = hi >>> n;
  } else {
    out.lo = hi >>> (n - 32);
    out.hi = 0;
  }
}

/** a < b, unsigned. */
export function lt64(aHi: number, aLo: number, bHi: number, bLo: number): boolean {
  return aHi < bHi || (aHi === bHi && aLo < bLo);
}

const product = new U64();

/**
 * out = floor(n / d) for unsigned 64-bit n and d; d must not be 0.
 *
 * Exact for all inputs. A divisor below 2^32 is handled by long division over 16-bit
 * limbs (each partial dividend stays below 2^48). A larger divisor leaves a quotient
 * below 2^32, which a double estimate gets to within one; the estimate is lowered by
 * one so that it never overshoots and then corrected upwards with exact arithmetic.
 */
export function div64(out: U64, nHi: number, nLo: number, dHi: number, dLo: number): void {
  if (dHi === 0) {
    const d = dLo;
    let r = nHi % d;
    const qHi = (nHi - r) / d;
    let t = r * TWO_16 + (nLo >>> 16);
    r = t % d;
    const q1 = (t - r) / d;
    t = r * TWO_16 + (nLo & 0xffff);
    r = t % d;
    const q0 = (t - r) / d;
    out.hi = qHi;
    out.lo = q1 * TWO_16 + q0;
    return;
  }
  const estimate = Math.floor((nHi * TWO_32 + nLo) / (dHi * TWO_32 + dLo));
  let q = estimate > 0 ? estimate - 1 : 0;
  // q <= floor(n/d), so q*d <= n fits in 64 bits and the remainder is exact.
  mul64(product, 0, q, dHi, dLo);
  let rHi = (nHi - product.hi - (nLo < product.lo ? 1 : 0)) >>> 0;
  let rLo = (nLo - product.lo) >>> 0;
  while (!lt64(rHi, rLo, dHi, dLo)) {
    const borrow = rLo < dLo ? 1 : 0;
    rLo = (rLo - dLo) >>> 0;
    rHi = (rHi - dHi - borrow) >>> 0;
    q += 1;
  }
  out.hi = 0;
  out.lo = q;
}
