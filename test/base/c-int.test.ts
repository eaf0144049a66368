/** C-style unsigned integers as libipt's tools read them. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseCInt, parseCUint } from "../../src/base/c-int.js";

test("C integers: decimal, hex and octal, whole strings only", () => {
  assert.equal(parseCUint("256"), 256n);
  assert.equal(parseCUint("0x1F"), 31n);
  assert.equal(parseCUint("017"), 15n);
  assert.equal(parseCUint("0"), 0n);
  assert.equal(parseCUint("0xffffffffffffffff"), 0xffffffffffffffffn);
  for (const bad of ["", "08", "0x", "1a", "-1", " 1", "1 ", "+3"])
    assert.equal(parseCUint(bad), undefined, bad);
  assert.equal(parseCInt("9007199254740992"), undefined);
  assert.equal(parseCInt("0x10"), 16);
});
