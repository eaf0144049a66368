/**
 * Restricted memory and the APIC page (SDM §33.2.7.4, Table 33-5, seed 001): trace
 * stores to an SMRR range are dropped and read back as all ones; reaching it with the
 * output pointer is an operational error (STATUS.Error, TriggerEn cleared, the output
 * MSRs at the restricted byte) or, with `restrictedOutput: "drop"`, output goes on
 * past it; a ToPA write pointer in restricted memory is an error; stores to the APIC
 * page are dropped without an error.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { writeTopaTable } from "../../../src/unit/output/topa.js";
import { caps, rig, STATUS_ERROR, STATUS_TRIGGER_EN } from "./helpers.js";

const SKL = caps("skylake");
const DATA = Uint8Array.from({ length: 0x2000 }, (_, i) => (i % 251) + 1);

/** Two 4K regions at 0x10000 and 0x11000 in a ToPA table at 0x1000, END back to it. */
function topa(): PhysMemory {
  const memory = new PhysMemory();
  writeTopaTable(memory, 0x1000, [{ base: 0x10000 }, { base: 0x11000 }, { base: 0x1000, end: true }]);
  return memory;
}

describe("restricted memory", () => {
  it("the output pointer reaching an SMRR range: operational error there, nothing stored from it on", () => {
    const x = rig(SKL, { toPA: true, base: 0x1000 }, topa(), {
      restricted: [{ base: 0x10800, size: 0x100 }],
    });
    const r = x.unit.write(DATA, 0, 0x1000);
    assert.equal(r.accepted, 0x800);
    assert.equal(r.error, true);
    assert.equal(x.unit.lastError?.kind, "restricted-output");
    assert.match(x.unit.lastError!.reason, /restricted memory at 0x10800/);
    assert.equal(x.msrs.statusLo & (STATUS_ERROR | STATUS_TRIGGER_EN), STATUS_ERROR);
    assert.equal(x.msrs.outputMaskHi, 0x800); // OutputOffset at the restricted byte, entry 0
    assert.equal(x.msrs.outputMaskLo >>> 7, 0);
    assert.deepEqual(x.memory.read(0x10000, 0x800), DATA.subarray(0, 0x800));
    assert.equal(x.memory.anyNonZero(0x10800, 0x800), false);
    assert.equal(x.unit.write(DATA, 0, 16).accepted, 0);
  });

  it('"drop": stores there are lost and read as all ones; output goes on past the range', () => {
    const x = rig(SKL, { toPA: true, base: 0x1000 }, topa(), {
      restricted: [{ base: 0x10800, size: 0x100 }],
      restrictedOutput: "drop",
    });
    const r = x.unit.write(DATA, 0, 0x1800);
    assert.equal(r.accepted, 0x1800);
    assert.equal(r.error, false);
    assert.equal(x.unit.restrictedBytes, 0x100);
    assert.deepEqual(x.memory.read(0x10800, 0x100), new Uint8Array(0x100).fill(0xff));
    assert.deepEqual(x.memory.read(0x10900, 0x700), DATA.subarray(0x900, 0x1000));
    assert.deepEqual(x.memory.read(0x11000, 0x800), DATA.subarray(0x1000, 0x1800));
  });

  it("a ToPA write pointer entering restricted memory is an error when that entry is reached", () => {
    const x = rig(SKL, { toPA: true, base: 0x1000 }, topa(), { restricted: [{ base: 0x1008, size: 8 }] });
    assert.equal(x.enableError, null);
    const r = x.unit.write(DATA, 0, 0x1800);
    assert.equal(r.accepted, 0x1000);
    assert.equal(r.error, true);
    assert.equal(x.unit.lastError?.kind, "restricted-table");
    assert.equal(x.unit.lastError?.index, 1);
    // Already at enable when the first entry is there.
    const y = rig(SKL, { toPA: true, base: 0x1000 }, topa(), { restricted: [{ base: 0x1000, size: 8 }] });
    assert.equal(y.enableError?.kind, "restricted-table");
  });

  it("single-range output is checked the same way", () => {
    const x = rig(SKL, { toPA: false, base: 0x10000, mask: 0x1fff }, new PhysMemory(), {
      restricted: [{ base: 0x10100, size: 0x10 }],
    });
    const r = x.unit.write(DATA, 0, 0x200);
    assert.equal(r.accepted, 0x100);
    assert.equal(x.unit.lastError?.kind, "restricted-output");
    assert.equal(x.msrs.outputMaskHi, 0x100);
  });
});

describe("the APIC page", () => {
  it("takes no trace stores and signals no error; output goes on after it", () => {
    const x = rig(SKL, { toPA: false, base: 0x10000, mask: 0x1fff }, new PhysMemory(), { apicBase: 0x11000 });
    const r = x.unit.write(DATA, 0, 0x2000);
    assert.equal(r.accepted, 0x2000);
    assert.equal(r.error, false);
    assert.equal(x.unit.apicBytes, 0x1000);
    assert.deepEqual(x.memory.read(0x10000, 0x1000), DATA.subarray(0, 0x1000));
    assert.equal(x.memory.anyNonZero(0x11000, 0x1000), false);
    // The default page is IA32_APIC_BASE's reset value: memory below it is unaffected.
    const y = rig(SKL, { toPA: false, base: 0x10000, mask: 0x1fff });
    y.unit.write(DATA, 0, 0x2000);
    assert.equal(y.unit.apicBytes, 0);
  });
});
