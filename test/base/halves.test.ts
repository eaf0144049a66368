/** 64-bit values as unsigned 32-bit halves: the BigInt edge, comparing and printing. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { cmp64, hex0x, hex64, splitBigInt, toBigInt } from "../../src/base/halves.js";

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });

test("toBigInt and splitBigInt are inverse; splitBigInt keeps the low 64 bits", () => {
  fc.assert(
    fc.property(u64, (v) => {
      const h = splitBigInt(v, { hi: -1, lo: -1 });
      assert.ok(h.hi >>> 0 === h.hi && h.lo >>> 0 === h.lo);
      assert.equal(toBigInt(h.hi, h.lo), v);
    }),
  );
  assert.deepEqual(splitBigInt((1n << 64n) + 5n, { hi: 0, lo: 0 }), { hi: 0, lo: 5 });
  // Signed 32-bit inputs (as `|` and `<<` make them) are read as unsigned.
  assert.equal(toBigInt(-1, -1), (1n << 64n) - 1n);
});

test("hex64 and hex0x print the exact value, padded as asked", () => {
  fc.assert(
    fc.property(u64, fc.integer({ min: 1, max: 16 }), (v, width) => {
      const { hi, lo } = splitBigInt(v, { hi: 0, lo: 0 });
      assert.equal(hex64(hi, lo, width), v.toString(16).padStart(width, "0"));
      assert.equal(hex0x(hi, lo), `0x${v.toString(16)}`);
    }),
  );
  assert.equal(hex64(0, 0x1000), "0000000000001000");
  assert.equal(hex64(1, 0, 1), "100000000");
});

test("cmp64 orders unsigned 64-bit values", () => {
  fc.assert(
    fc.property(u64, u64, (a, b) => {
      const x = splitBigInt(a, { hi: 0, lo: 0 });
      const y = splitBigInt(b, { hi: 0, lo: 0 });
      assert.equal(cmp64(x.hi, x.lo, y.hi, y.lo), a < b ? -1 : a > b ? 1 : 0);
    }),
  );
});
