/**
 * KeyTable against a Map: dense ids in order of first appearance, the same id for a
 * key seen again (across the table's growth, and where slots' hash tags agree but the
 * keys differ), refusals past the limit counted, and the keys kept by id.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { KeyTable } from "../../src/analysis/index.js";

/** The ids a Map gives `keys` (each 4 words), with -1 for keys past `max` distinct ones. */
function expected(keys: number[][], max: number): { ids: number[]; refused: number } {
  const seen = new Map<string, number>();
  let refused = 0;
  const ids = keys.map((k) => {
    const s = k.join(",");
    const id = seen.get(s);
    if (id !== undefined) return id;
    if (seen.size >= max) {
      refused++;
      return -1;
    }
    seen.set(s, seen.size);
    return seen.size - 1;
  });
  return { ids, refused };
}

function check(keys: number[][], max: number, expectedSize: number): void {
  const table = new KeyTable(max, expectedSize);
  const got = keys.map(([a, b, c, d]) => table.id(a!, b!, c!, d!));
  const want = expected(keys, max);
  assert.deepEqual(got, want.ids);
  assert.equal(table.refused, want.refused);
  assert.equal(table.size, Math.min(max, new Set(keys.map((k) => k.join(","))).size));
  for (let i = 0; i < keys.length; i++) {
    const id = want.ids[i]!;
    if (id >= 0) assert.deepEqual([...table.keys.subarray(4 * id, 4 * id + 4)], keys[i]);
  }
}

test("ids are a Map's: first appearance, repeats, growth, the limit", () => {
  // Words from a few values, so keys repeat and differ in one word only.
  const word = fc.constantFrom(0, 1, 2, 0x7fffffff, 0x80000000, 0xffffffff, 0x400000, 0x81000000);
  const key = fc.tuple(word, word, word, word);
  fc.assert(
    fc.property(
      fc.array(key, { maxLength: 3000, size: "max" }),
      fc.integer({ min: 0, max: 2000 }),
      fc.integer({ min: 1, max: 4096 }),
      (keys, max, expectedSize) => check(keys, max, expectedSize),
    ),
    { numRuns: 200 },
  );
});

test("many distinct keys, each looked up again: slots whose tags agree hold other keys", () => {
  // 60,000 keys in a table of 2^17 slots meet slots of the same 6-bit tag often.
  const keys: number[][] = [];
  for (let i = 0; i < 60000; i++) keys.push([i >>> 3, (i * 2654435761) >>> 0, 0xffffffff, i & 7]);
  const again = [...keys].reverse();
  check([...keys, ...again, ...keys], Number.MAX_SAFE_INTEGER, 256);
  // Full: the later keys are refused every time they come.
  check([...keys, ...again], 40000, 256);
});
