/** 64-bit values as unsigned 32-bit halves: the BigInt edge, comparing and printing. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { cmp64, hex0x, hex64, mutableFields, splitBigInt, toBigInt } from "../../src/base/halves.js";

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

test("mutableFields leaves each field as it was: the same typed array, DataView, number or other value", () => {
  const words = new Int32Array([1, -2, 3]);
  const view = new DataView(words.buffer, 4, 8);
  const other = { a: 1 };
  const o = { words, view, n: 7, other, s: "x" };
  mutableFields(o, ["words", "view", "n", "other", "s"]);
  assert.equal(o.words, words);
  assert.equal(o.view, view);
  assert.equal(o.n, 7);
  assert.equal(o.other, other);
  assert.equal(o.s, "x");
  assert.deepEqual([...o.words], [1, -2, 3]);
  // A second object of the same shape takes stores as before.
  const p = { words: new Int32Array(2), view, n: 1, other, s: "y" };
  p.words = new Int32Array(4);
  p.n = 2.5;
  assert.equal(p.words.length, 4);
  assert.equal(p.n, 2.5);
});
