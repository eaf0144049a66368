/**
 * The objects the decode loop works on keep their shape when a 32-bit half of 2^30 or
 * more (most addresses and times) first lands in one of their number fields: their
 * halves are doubles to V8 from the start (base/halves.ts doubleFields). Were they
 * small integers at first, that store would give the object a new shape (map), and
 * every optimized function that had seen the old one would be thrown away in the
 * middle of the decode ("wrong map" deoptimizations, ~10% of `ptkit flow` on the
 * bench's gzip trace).
 *
 * V8's own %HaveSameMap tells: an object that got such a value has the map of one
 * that did not. (This file runs in its own process, so nothing stored such values
 * into these classes' objects before.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { U64 } from "../../src/base/u64.js";
import { PtEvent } from "../../src/event/index.js";
import { FlowInsn } from "../../src/flow/flow-insn.js";
import { BlockDecoder } from "../../src/flow/index.js";
import { Block, Insn } from "../../src/flow/records.js";
import { SectionView } from "../../src/flow/section-view.js";
import { LastIp } from "../../src/packet/last-ip.js";
import { Packet } from "../../src/packet/types.js";

setFlagsFromString("--allow-natives-syntax");
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

/** Whether an object made by `make` keeps its map when `fields` get halves of 2^30 and more. */
function keepsShape<T extends object>(make: () => T, fields: readonly (keyof T & string)[]): void {
  const before = make();
  const after = make();
  for (const f of fields) {
    assert.equal((after as Record<string, unknown>)[f], 0, `${f} starts at 0`);
    (after as Record<string, number>)[f] = 0xffff_ffff;
  }
  assert.ok(haveSameMap(before, after), `${fields.join(", ")} changed the object's map`);
}

test("event, packet and IP fields keep their objects' shape", () => {
  keepsShape(
    () => new PtEvent(),
    [
      "tscHi",
      "tscLo",
      "ipHi",
      "ipLo",
      "fromHi",
      "fromLo",
      "payloadHi",
      "payloadLo",
      "payload2Hi",
      "payload2Lo",
    ],
  );
  keepsShape(() => new Packet(), ["lo", "hi"]);
  keepsShape(() => new LastIp(), ["lo", "hi"]);
  keepsShape(() => new U64(), ["hi", "lo"]);
});

test("flow records, instructions and section views keep their shape", () => {
  keepsShape(() => new Block(), ["ipHi", "ipLo", "endIpHi", "endIpLo"]);
  keepsShape(() => new Insn(), ["ipHi", "ipLo"]);
  keepsShape(() => new FlowInsn(), ["ipHi", "ipLo"]);
  keepsShape(() => new SectionView(), ["baseHi", "baseLo"]);
  keepsShape(() => new BlockDecoder(new Uint8Array(0)), ["ipHi", "ipLo", "tscHi", "tscLo"]);
});
