/**
 * PerfTimeParts (perf/time-conv.ts): perf time in seconds and nanoseconds without
 * BigInt where it can, exactly what tscToPerfTime gives, for any conversion a file
 * may hold (time_shift 0 to 63, the 32-bit time_mult, any time_zero, capUserTimeShort
 * or not) and for TSCs that come one after another (its base is made again only when
 * the TSC's bits above the shift change), near 2^64 too.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { PerfTimeParts, type TscConversion, tscToPerfTime } from "../../src/perf/index.js";

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

function conversion(): fc.Arbitrary<TscConversion> {
  return fc.record({
    // x86 kernels give 16 to 32; up to 32 is the fast part, the rest goes by BigInt.
    timeShift: fc.oneof(fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 63 })),
    timeMult: fc.bigInt({ min: 0n, max: 0xffffffffn }),
    timeZero: fc.oneof(u64, fc.bigInt({ min: (1n << 64n) - (1n << 36n), max: (1n << 64n) - 1n })),
    capUserTimeShort: fc.boolean(),
    timeCycles: u64,
    timeMask: fc.constantFrom(0xffffffffffffn, (1n << 64n) - 1n, 0xffffffffn),
  });
}

/** What PerfTimeParts should give for `tsc`. */
function want(tsc: bigint, c: TscConversion): { sec: number; nsec: number; ns: number } {
  const t = tscToPerfTime(tsc, c);
  return { sec: Number(t / 1_000_000_000n), nsec: Number(t % 1_000_000_000n), ns: Number(t) };
}

function got(p: PerfTimeParts, tsc: bigint): { sec: number; nsec: number; ns: number } {
  p.at(Number(tsc >> 32n), Number(tsc & 0xffffffffn));
  return { sec: p.sec, nsec: p.nsec, ns: p.ns };
}

test("any conversion, any TSC: tscToPerfTime's seconds and nanoseconds (property)", () => {
  fc.assert(
    fc.property(conversion(), fc.array(u64, { minLength: 1, maxLength: 8 }), (c, tscs) => {
      const p = new PerfTimeParts(c);
      for (const tsc of tscs) assert.deepEqual(got(p, tsc), want(tsc, c), `tsc ${tsc}`);
    }),
    { numRuns: 2000, seed: 11 },
  );
});

test("TSCs one after another, as a trace's times come (property)", () => {
  fc.assert(
    fc.property(
      conversion(),
      u64,
      fc.array(fc.bigInt({ min: 0n, max: 1n << 36n }), { minLength: 1, maxLength: 40 }),
      (c, start, steps) => {
        const p = new PerfTimeParts(c);
        let tsc = start;
        for (const step of steps) {
          tsc = (tsc + step) & ((1n << 64n) - 1n);
          assert.deepEqual(got(p, tsc), want(tsc, c), `tsc ${tsc}`);
        }
      },
    ),
    { numRuns: 500, seed: 12 },
  );
});

test("a bench-like conversion: 1 GHz TSC (shift 31), times past 2^53 ns and where the sum wraps at 2^64", () => {
  const c: TscConversion = { timeShift: 31, timeMult: 2147483648n, timeZero: 0n };
  const p = new PerfTimeParts(c);
  for (const tsc of [
    0n,
    1n,
    68_719_476_736n,
    1n << 53n,
    (1n << 53n) + 12345n,
    (1n << 63n) - 1n,
    (1n << 64n) - 1n,
  ])
    assert.deepEqual(got(p, tsc), want(tsc, c), `tsc ${tsc}`);
  // timeZero near 2^64: the sum wraps (the BigInt path).
  const near: TscConversion = { timeShift: 32, timeMult: 0xffffffffn, timeZero: (1n << 64n) - 5n };
  const q = new PerfTimeParts(near);
  for (const tsc of [0n, 1n, 0xffffffffn, 1n << 40n])
    assert.deepEqual(got(q, tsc), want(tsc, near), `tsc ${tsc}`);
});

test("small shifts, TSCs a few ticks apart: the base moved on without BigInt, up to where the sum wraps", () => {
  // shift 0, timeMult 1: perf time is the TSC (as a file without TIME_CONV may give it).
  for (const c of [
    { timeShift: 0, timeMult: 1n, timeZero: 0n },
    { timeShift: 3, timeMult: 0xfffffff1n, timeZero: 123456789n },
    { timeShift: 15, timeMult: 70000n, timeZero: (1n << 63n) + 7n },
    { timeShift: 0, timeMult: 1n, timeZero: (1n << 64n) - (1n << 34n) - 3000n },
  ] as TscConversion[]) {
    const p = new PerfTimeParts(c);
    let tsc = (1n << 40n) + 17n;
    for (let i = 0; i < 3000; i++) {
      tsc = (tsc + BigInt((i * 7919) % 1237)) & ((1n << 64n) - 1n);
      assert.deepEqual(got(p, tsc), want(tsc, c), `shift ${c.timeShift} tsc ${tsc}`);
    }
    // A step back, and one far on.
    for (const t of [tsc - 5n, tsc + (1n << 45n), 5n]) assert.deepEqual(got(p, t), want(t, c), `tsc ${t}`);
  }
});
