/**
 * The generator writing through the output stage: ToPA regions in physical memory,
 * read back in write order; a STOP region ends packet generation without TIP.PGD.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readExecJsonl } from "../../../src/unit/exec/jsonl.js";
import { generate } from "../../../src/unit/gen/index.js";
import { STATUS } from "../../../src/unit/msr-layout.js";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { readOutput } from "../../../src/unit/output/reader.js";
import { writeTopaTable } from "../../../src/unit/output/topa.js";
import { OutputUnit, type OutputUnitOptions } from "../../../src/unit/output/unit.js";
import { presetCapabilities } from "../../../src/unit/presets.js";
import { pointers } from "../output/helpers.js";
import { BRANCHES, insn, jsonl, msrs } from "./helpers.js";

/** A loop of indirect jumps: about 3 bytes of TIP each. */
function jumps(n: number): string {
  const recs: object[] = [];
  for (let k = 0; k < n; k++) recs.push(insn(0x1000 + (k % 2) * 0x10, 2, "jump-indirect"));
  recs.push(insn(0x1000 + (n % 2) * 0x10, 1));
  return jsonl(...recs);
}

function topaRun(stop: boolean, n: number, unit: OutputUnitOptions = {}) {
  const memory = new PhysMemory();
  // Two 4 KiB regions, the second with STOP when asked, then END back to the table.
  writeTopaTable(memory, 0x100000, [
    { base: 0x200000, size: 0 },
    { base: 0x201000, size: 0, stop },
    { base: 0x100000, end: true },
  ]);
  const m = msrs({ ctl: { ...BRANCHES, TraceEn: 0 } });
  assert.equal(m.writeMsr(0x560, 0x100000n), null);
  assert.equal(m.writeMsr(0x561, 0x7fn), null);
  const start = pointers(m);
  assert.equal(m.writeMsr(0x570, (BigInt(m.ctlHi) << 32n) | BigInt(m.ctlLo | 1)), null);
  const output = new OutputUnit(m, memory, unit);
  const res = generate(readExecJsonl(jumps(n)), { msrs: m, output, cyclesPerInsn: 1 });
  const back = readOutput({
    memory,
    caps: presetCapabilities("skylake"),
    toPA: true,
    final: pointers(m),
    start,
  });
  return { res, back, m, memory, output };
}

describe("generation into ToPA output", () => {
  test("what memory holds, read back in write order, is exactly what was generated", () => {
    const { res, back } = topaRun(false, 1000);
    assert.ok(res.bytes.length > 2000 && res.bytes.length < 8192);
    assert.deepEqual(back.bytes, res.bytes);
  });

  test("a STOP region: output ends at its last byte, no TIP.PGD, Stopped set, later packets not written", () => {
    const { res, back, m } = topaRun(true, 4000);
    assert.equal(back.bytes.length, 8192);
    assert.deepEqual(back.bytes, res.bytes.subarray(0, 8192));
    assert.equal(back.cutByStop.length, 1);
    assert.equal((m.statusLo >>> STATUS.Stopped.lsb) & 1, 1);
    // Generation stopped: far fewer bytes than 4000 jumps would need.
    assert.ok(res.bytes.length < 8192 + 512, `${res.bytes.length} bytes generated`);
  });

  test("restricted memory in the first region: generation stops there with STATUS.Error (seed 001 Table 33-5)", () => {
    const { res, m, memory, output } = topaRun(false, 1000, {
      restricted: [{ base: 0x200400, size: 0x100 }],
    });
    assert.equal(output.lastError?.kind, "restricted-output");
    assert.equal((m.statusLo >>> STATUS.Error.lsb) & 1, 1);
    assert.equal((m.statusLo >>> STATUS.TriggerEn.lsb) & 1, 0);
    assert.equal(m.outputMaskHi, 0x400);
    assert.deepEqual(memory.read(0x200000, 0x400), res.bytes.subarray(0, 0x400));
    assert.equal(memory.anyNonZero(0x200400, 0xc00), false);
    // TriggerEn cleared: packet generation stopped within the output chunk that failed.
    assert.ok(res.bytes.length < 0x400 + 512, `${res.bytes.length} bytes generated`);
  });

  test('restricted memory with "drop": the same bytes written around the range, which reads as all ones', () => {
    const plain = topaRun(false, 1000);
    const { res, back } = topaRun(false, 1000, {
      restricted: [{ base: 0x200400, size: 0x100 }],
      restrictedOutput: "drop",
    });
    assert.deepEqual(res.bytes, plain.res.bytes);
    const want = res.bytes.slice();
    want.fill(0xff, 0x400, 0x500);
    assert.deepEqual(back.bytes, want);
  });
});
