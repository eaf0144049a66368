/**
 * Strings from binary files (c-string.ts): the same text as an ASCII prefix taken as
 * it is and the rest decoded as UTF-8 (U+FFFD for invalid sequences), short or long,
 * and flat (a read of any character is cheap: no rope behind it).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { cString, utf8Text } from "../../src/image/c-string.js";

const decoder = new TextDecoder();

/** The documented text of b[p, q): the ASCII prefix, then the rest as UTF-8. */
function model(b: Uint8Array, p: number, q: number): string {
  let i = p;
  while (i < q && b[i]! < 0x80) i++;
  return String.fromCharCode(...b.subarray(p, i)) + (i < q ? decoder.decode(b.subarray(i, q)) : "");
}

// Mostly ASCII, now and then a byte past it (UTF-8 lead and continuation bytes, a BOM's).
const byteArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 1, arbitrary: fc.constantFrom(0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xef, 0xbb, 0xbf, 0xff, 0x80) },
);

test("utf8Text: the ASCII prefix as it is, the rest as UTF-8, at any length", () => {
  fc.assert(
    fc.property(fc.array(byteArb, { maxLength: 80 }), fc.nat(4), (bytes, pad) => {
      const b = Uint8Array.from([...Array(pad).fill(0x41), ...bytes, 0x42]);
      assert.equal(utf8Text(b, pad, pad + bytes.length), model(b, pad, pad + bytes.length));
    }),
    { numRuns: 5000 },
  );
});

test("cString: up to the first NUL, or the whole range", () => {
  const b = new TextEncoder().encode("a_symbol_name_longer_than_thirteen\0café_déjà_vu_and_more\0tail");
  assert.equal(cString(b, 0, b.length), "a_symbol_name_longer_than_thirteen");
  assert.equal(cString(b, 35, b.length), "café_déjà_vu_and_more");
  assert.equal(cString(b, b.length - 4, b.length), "tail");
  assert.equal(cString(b, 2, 8), "symbol");
});
