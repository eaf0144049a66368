/**
 * Printing fcr like ptdump: `(double) fcr / 256` with glibc's `%.3f` / `%+.3f`, which
 * round the exact binary value half to even. Expected strings were worked by hand
 * (fcr/256 in thousandths is fcr * 125 / 32) and agree with printf(1) in C locale.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fcrToNumber, formatFcr, formatFcrDelta, formatFixed3, U64 } from "../../src/time/index.js";

const fcr = (v: bigint) => U64.fromBig(v);

/** %.3f from the exact value (a BigInt rational n / 2^k), ties to even. */
function referenceFixed3(x: number): string {
  if (x === 0) return Object.is(x, -0) ? "-0.000" : "0.000";
  const negative = x < 0;
  let y = Math.abs(x);
  let k = 0n;
  while (!Number.isInteger(y)) {
    y *= 2;
    k += 1n;
  }
  const scaled = BigInt(y) * 1000n;
  const denominator = 1n << k;
  let q = scaled / denominator;
  const r2 = (scaled % denominator) * 2n;
  if (r2 > denominator || (r2 === denominator && q % 2n === 1n)) q += 1n;
  const digits = q.toString().padStart(4, "0");
  return `${negative ? "-" : ""}${digits.slice(0, -3)}.${digits.slice(-3)}`;
}

describe("fcr printing", () => {
  it("prints fcr / 256 with three decimals", () => {
    assert.equal(formatFcr(fcr(0x200n)), "2.000");
    assert.equal(formatFcr(fcr(0x40n)), "0.250");
    assert.equal(formatFcr(fcr(0x155n)), "1.332"); // 341/256 = 1.33203125
    assert.equal(formatFcr(fcr(0n)), "0.000");
    assert.equal(formatFcr(fcr(0xffn)), "0.996"); // 0.99609375
    assert.equal(formatFcr(fcr(0x1ffn)), "1.996");
  });

  it("rounds exact ties to even, unlike toFixed", () => {
    // fcr = 16 mod 32 puts fcr/256 exactly halfway between thousandths.
    assert.equal(formatFcr(fcr(16n)), "0.062"); // 0.0625
    assert.equal(formatFcr(fcr(48n)), "0.188"); // 0.1875
    assert.equal(formatFcr(fcr(0x110n)), "1.062"); // 1.0625
    assert.equal((0.0625).toFixed(3), "0.063");
  });

  it("carries into the integer part", () => {
    // 0x3ff / 256 = 3.99609375 -> 3.996; rounding up can reach the next integer.
    assert.equal(formatFcr(fcr(0x3ffn)), "3.996");
    assert.equal(formatFixed3(0.9996), "1.000");
    assert.equal(formatFixed3(1.9999999), "2.000");
  });

  it("prints deltas with a sign", () => {
    assert.equal(formatFcrDelta(fcr(0x40n), fcr(0n)), "+0.250");
    assert.equal(formatFcrDelta(fcr(0x40n), fcr(0x40n)), "+0.000");
    assert.equal(formatFcrDelta(fcr(0x40n), fcr(0x80n)), "-0.250");
    assert.equal(formatFcrDelta(fcr(0x100n), fcr(0x110n)), "-0.062");
  });

  it("converts 64-bit values with one rounding, as C's (double) does", () => {
    // 2^64 - 1 rounds to 2^64; / 256 = 2^56 = 72057594037927936.
    const max = fcr((1n << 64n) - 1n);
    assert.equal(fcrToNumber(max), 2 ** 56);
    assert.equal(formatFcr(max), "72057594037927936.000");
    // 2^53 + 1 (odd, above 2^53) rounds to even 2^53.
    assert.equal(fcrToNumber(fcr((1n << 53n) + 1n)), 2 ** 45);
  });

  it("formatFixed3 matches an exact BigInt reference on any double", () => {
    const doubles = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -(2 ** 30), max: 2 ** 30 }).map((n) => n / 256),
      fc.integer({ min: -(2 ** 30), max: 2 ** 30 }).map((n) => n / 2048),
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }).map((v) => Number(v) / 256),
    );
    fc.assert(
      fc.property(doubles, fc.boolean(), (x, plus) => {
        const expected = referenceFixed3(x);
        const signed = plus && !expected.startsWith("-") ? `+${expected}` : expected;
        assert.equal(formatFixed3(x, plus), signed);
      }),
      { numRuns: 3000 },
    );
  });
});
