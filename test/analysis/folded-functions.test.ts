/**
 * Functions of folded stacks from a tree of frames (export/folded-functions.ts): a
 * line's first frame is its thread's, a line of one frame adds nothing, recursion
 * counts a line once per name, a node without a line below it makes no function.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { foldedFunctions } from "../../src/analysis/index.js";

test("self, total once per line, the thread's frame and one-frame lines left out", () => {
  const names = ["t", "a", "b", "u", "c"];
  // t 5 | t;a 2 | t;a;b 3 | t;a;b;a 4 | t;t 1 | u;c (no line)
  const above = [-1, 0, 1, 2, 0, -1, 5];
  const name = [0, 1, 2, 1, 0, 3, 4];
  const ends = [1, 1, 1, 1, 1, 0, 0];
  const weight = [5, 2, 3, 4, 1, 0, 0];
  const rows = foldedFunctions({
    size: above.length,
    above: Int32Array.from(above),
    name: Int32Array.from(name),
    ends: Uint8Array.from(ends),
    weight: Float64Array.from(weight),
    nameOf: (i) => names[i]!,
  });
  assert.deepEqual(rows, [
    { name: "a", self: 6, total: 9 },
    { name: "b", self: 3, total: 7 },
    { name: "t", self: 1, total: 1 },
  ]);
});
