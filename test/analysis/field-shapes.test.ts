/**
 * Fields that change while hot code runs are set up for it before: SymbolHit's address
 * halves and offset are doubles from the start (a kernel address or an offset past 2^31
 * gives a hit no new map), and base/halves.ts doubleFields takes private fields by name.
 * (This file runs in its own process: nothing stored such values into these classes'
 * objects before.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { SymbolHit } from "../../src/analysis/index.js";
import { doubleFields } from "../../src/base/halves.js";

setFlagsFromString("--allow-natives-syntax");
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

test("a symbol hit keeps its map when it gets a kernel address and a large offset", () => {
  const before = new SymbolHit();
  const after = new SymbolHit();
  after.startHi = 0xffff_ffff;
  after.startLo = 0x8100_0000;
  after.offset = 2 ** 40;
  after.symbol = 7;
  assert.ok(haveSameMap(before, after));
});

test("doubleFields names fields of any object, and refuses one that is not a number", () => {
  class Walk {
    private lastHi = 0;
    readonly label = "x";
    high(): number {
      return this.lastHi;
    }
  }
  const w = new Walk();
  doubleFields(w, ["lastHi"]);
  assert.equal(w.high(), 0);
  assert.throws(() => doubleFields(w, ["missing"]), /no number field missing/);
  assert.throws(() => doubleFields(w, ["label"]), /no number field label/);
});
