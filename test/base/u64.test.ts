import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { add64, div64, lt64, mul64, mulHi32, shl64, shr64, sub64, U64 } from "../../src/base/u64.js";

const M64 = (1n << 64n) - 1n;
const big = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);
const halves = (v: bigint): [number, number] => [Number((v >> 32n) & 0xffffffffn), Number(v & 0xffffffffn)];

/** Unsigned 32-bit numbers, with the edges that break carry and limb handling. */
const u32 = fc.oneof(
  fc.constantFrom(0, 1, 2, 0xff, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
  fc.integer({ min: 0, max: 0xffff }),
);
/** Unsigned 64-bit values of every magnitude, biased towards short ones. */
const u64 = fc.oneof(
  fc.tuple(u32, u32).map(([hi, lo]) => big(hi, lo)),
  fc.bigInt({ min: 0n, max: (1n << 53n) + 1000n }),
  fc.integer({ min: 1, max: 64 }).chain((bits) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n })),
);
const nonZeroU64 = u64.filter((v) => v !== 0n);

function check(
  op: (out: U64, aHi: number, aLo: number, bHi: number, bLo: number) => void,
  ref: (a: bigint, b: bigint) => bigint,
) {
  fc.assert(
    fc.property(u64, u64, (a, b) => {
      const out = new U64(0xdead, 0xbeef);
      op(out, ...halves(a), ...halves(b));
      assert.equal(out.big, ref(a, b) & M64);
      assert.ok(Number.isInteger(out.hi) && out.hi >= 0 && out.hi <= 0xffffffff);
      assert.ok(Number.isInteger(out.lo) && out.lo >= 0 && out.lo <= 0xffffffff);
    }),
    { numRuns: 2000 },
  );
}

describe("u64 helpers against BigInt", () => {
  it("add64 wraps modulo 2^64", () => check(add64, (a, b) => a + b));
  it("sub64 wraps modulo 2^64", () => check(sub64, (a, b) => a - b));
  it("mul64 keeps the low 64 bits of the product", () => check(mul64, (a, b) => a * b));

  it("mulHi32 is the high word of a 32x32 product", () => {
    fc.assert(
      fc.property(u32, u32, (a, b) => {
        assert.equal(BigInt(mulHi32(a, b)), (BigInt(a) * BigInt(b)) >> 32n);
      }),
      { numRuns: 2000 },
    );
  });

  it("shl64 and shr64 shift by 0..63", () => {
    fc.assert(
      fc.property(u64, fc.integer({ min: 0, max: 63 }), (a, n) => {
        const out = new U64();
        shl64(out, ...halves(a), n);
        assert.equal(out.big, (a << BigInt(n)) & M64);
        shr64(out, ...halves(a), n);
        assert.equal(out.big, a >> BigInt(n));
      }),
      { numRuns: 2000 },
    );
  });

  it("lt64 orders unsigned values", () => {
    fc.assert(
      fc.property(u64, u64, (a, b) => {
        assert.equal(lt64(...halves(a), ...halves(b)), a < b);
        assert.equal(lt64(...halves(a), ...halves(a)), false);
      }),
      { numRuns: 1000 },
    );
  });

  it("div64 is exact floor division for every divisor size", () => {
    fc.assert(
      fc.property(u64, nonZeroU64, (n, d) => {
        const out = new U64();
        div64(out, ...halves(n), ...halves(d));
        assert.equal(out.big, n / d);
      }),
      { numRuns: 5000 },
    );
  });

  it("div64 with quotients near the estimate's rounding edges", () => {
    // n = q*d + r with r at 0, 1, d-1: where a double estimate is most likely off by one.
    const divisor = fc.bigInt({ min: 1n << 32n, max: M64 });
    fc.assert(
      fc.property(divisor, fc.bigInt({ min: 0n, max: M64 }), fc.constantFrom(0, 1, -1), (d, seed, edge) => {
        const q = seed % (M64 / d + 1n);
        const r = edge === 0 ? 0n : edge === 1 ? 1n : d - 1n;
        const n = q * d + r;
        fc.pre(n <= M64);
        const out = new U64();
        div64(out, ...halves(n), ...halves(d));
        assert.equal(out.big, q);
      }),
      { numRuns: 3000 },
    );
  });

  it("div64 extremes", () => {
    const out = new U64();
    const cases: Array<[bigint, bigint]> = [
      [M64, 1n],
      [M64, M64],
      [M64 - 1n, M64],
      [M64, 0xffffffffn],
      [M64, 1n << 32n],
      [M64, (1n << 32n) + 1n],
      [0n, 7n],
      [(1n << 63n) + 5n, 1n << 63n],
      [0x2fa1088fac05e2n << 8n, 3n],
    ];
    for (const [n, d] of cases) {
      div64(out, ...halves(n), ...halves(d));
      assert.equal(out.big, n / d, `${n} / ${d}`);
    }
  });

  it("U64 converts to and from BigInt and to the nearest double", () => {
    fc.assert(
      fc.property(u64, (v) => {
        const x = U64.fromBig(v);
        assert.equal(x.big, v);
        assert.equal(x.toNumber(), Number(v));
        assert.equal(x.isZero(), v === 0n);
      }),
    );
  });
});
