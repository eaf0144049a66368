import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeCtlBig } from "../../../src/unit/msr.js";
import { MsrFile } from "../../../src/unit/msr-file.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { writeTopaTable } from "../../../src/unit/output/topa.js";
import { OutputUnit } from "../../../src/unit/output/unit.js";
import { caps, rig, STATUS_STOPPED, STATUS_TRIGGER_EN, stop } from "./helpers.js";

const SKL = caps("skylake");

describe("PhysMemory", () => {
  it("reads back writes across pages, zeros elsewhere, and counts only touched pages", () => {
    const m = new PhysMemory();
    const data = Uint8Array.from({ length: 10000 }, (_, i) => (i * 7 + 1) & 0xff);
    m.write(0x1_0000_0ff0, data);
    assert.deepEqual(m.read(0x1_0000_0ff0, data.length), data);
    assert.equal(m.pageCount, 4);
    assert.deepEqual(m.read(0x1_0000_0fe0, 16), new Uint8Array(16));
    assert.equal(m.anyNonZero(0x5000_0000, 0x800_0000), false);
    assert.equal(m.anyNonZero(0x1_0000_0000, 0x1000), true);
    m.writeU64(0x2000, 0x12345678, 0x9abcdef0);
    assert.equal(m.readU32(0x2000), 0x9abcdef0);
    assert.equal(m.readU32(0x2004), 0x12345678);
    assert.throws(() => m.write(-1, data), RangeError);
    assert.throws(() => m.read(2 ** 52 - 1, 2), RangeError);
  });
});

describe("OutputUnit protocol", () => {
  it("stores nothing before enable or after disable", () => {
    const m = new MsrFile(SKL);
    const u = new OutputUnit(m, new PhysMemory());
    assert.equal(u.write(new Uint8Array(10)).accepted, 0);
    assert.equal(u.outputMode, "off");
    assert.throws(() => u.enable(), /TraceEn is 0/);
    const x = rig(SKL, { toPA: false, base: 0x10000, mask: 0xfff });
    assert.equal(x.unit.outputMode, "single-range");
    assert.equal(x.unit.write(new Uint8Array(10).fill(1)).accepted, 10);
    stop(x);
    assert.equal(x.unit.write(new Uint8Array(10)).accepted, 0);
    assert.equal(x.msrs.statusLo & STATUS_TRIGGER_EN, 0);
    assert.equal(x.msrs.outputMaskHi, 10);
  });

  it("FabricEn output is refused", () => {
    const m = new MsrFile(caps("skylake", { traceTransportOutput: true }));
    assert.equal(m.writeMsr(Msr.Ctl, encodeCtlBig({ traceEn: true, branchEn: true, fabricEn: true })), null);
    assert.throws(() => new OutputUnit(m, new PhysMemory()).enable(), /FabricEn/);
  });

  it("Stopped left set by software: enable stores nothing, TriggerEn stays 0", () => {
    const memory = new PhysMemory();
    writeTopaTable(memory, 0x1000, [{ base: 0x10000 }, { base: 0x1000, end: true }]);
    const m = new MsrFile(SKL);
    assert.equal(m.writeMsr(Msr.OutputBase, 0x1000n), null);
    assert.equal(m.writeMsr(Msr.Status, BigInt(STATUS_STOPPED)), null);
    assert.equal(m.writeMsr(Msr.Ctl, encodeCtlBig({ traceEn: true, branchEn: true, toPA: true })), null);
    const u = new OutputUnit(m, memory);
    assert.equal(u.enable(), null);
    assert.equal(u.storing, false);
    const r = u.write(new Uint8Array(10));
    assert.equal(r.accepted, 0);
    assert.equal(r.stopped, true);
    assert.equal(m.statusLo & STATUS_TRIGGER_EN, 0);
  });

  it("the pointers follow an END taken on enable once tracing is disabled", () => {
    const memory = new PhysMemory();
    writeTopaTable(memory, 0x1000, [{ base: 0x10000 }, { base: 0x2000, end: true }]);
    writeTopaTable(memory, 0x2000, [{ base: 0x20000 }, { base: 0x1000, end: true }]);
    const x = rig(SKL, { toPA: true, base: 0x1000, index: 1 }, memory);
    assert.equal(x.enableError, null);
    stop(x);
    assert.equal(x.msrs.readMsr(Msr.OutputBase), 0x2000n);
    assert.equal(x.msrs.outputMaskLo, 0x7f);
  });
});
