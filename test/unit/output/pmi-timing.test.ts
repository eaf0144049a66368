/**
 * When a ToPA PMI is signalled (seed 001, "ToPA PMI"): PMI skid (`pmiSkid`: the
 * interrupt "is not precise", so writes go on past the trigger), and the early PMI of
 * a single-output-region ToPA processor (`earlyPmi`: it "will attempt to signal a ToPA
 * PMI interrupt before the output wraps"), including the skid the seed warns about
 * that lets the output wrap before the PMI arrives.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { writeTopaTable } from "../../../src/unit/output/topa.js";
import { caps, rig, stop } from "./helpers.js";

const SKL = caps("skylake");
const BDW = caps("broadwell");
const DATA = new Uint8Array(0x4000).fill(0x55);

/** Skylake: a 4K INT region at 0x10000, a 4K region at 0x11000, END back to the table at 0x1000. */
function twoRegions(): PhysMemory {
  const memory = new PhysMemory();
  writeTopaTable(memory, 0x1000, [
    { base: 0x10000, int: true },
    { base: 0x11000 },
    { base: 0x1000, end: true },
  ]);
  return memory;
}

/** Broadwell (one output region): a 4K INT region at 0x10000 and the END entry back to its table. */
function oneRegion(): PhysMemory {
  const memory = new PhysMemory();
  writeTopaTable(memory, 0x1000, [
    { base: 0x10000, int: true },
    { base: 0x1000, end: true },
  ]);
  return memory;
}

describe("PMI skid", () => {
  it("the PMI comes pmiSkid bytes after the INT region fills, writes into the next region meanwhile", () => {
    const x = rig(SKL, { toPA: true, base: 0x1000 }, twoRegions(), { pmiSkid: 0x100 });
    assert.equal(x.unit.write(DATA, 0, 0x1000).pmis, 0);
    assert.equal(x.unit.write(DATA, 0, 0x80).pmis, 0);
    assert.equal(x.unit.perfGlobalStatusTopaPmi, false);
    assert.equal(x.unit.write(DATA, 0, 0x100).pmis, 1);
    assert.deepEqual(
      x.pmis.map((e) => [e.cause, e.index, e.byteCount]),
      [["region-filled", 0, 0x1100]],
    );
    assert.equal(x.unit.perfGlobalStatusTopaPmi, true);
  });

  it("without skid the PMI comes at the fill; a PMI still held when TraceEn is cleared comes then", () => {
    const a = rig(SKL, { toPA: true, base: 0x1000 }, twoRegions());
    assert.equal(a.unit.write(DATA, 0, 0x1000).pmis, 1);
    assert.equal(a.pmis[0]!.byteCount, 0x1000);
    const b = rig(SKL, { toPA: true, base: 0x1000 }, twoRegions(), { pmiSkid: 0x100 });
    b.unit.write(DATA, 0, 0x1010);
    assert.equal(b.pmis.length, 0);
    stop(b);
    assert.deepEqual(
      b.pmis.map((e) => [e.index, e.byteCount]),
      [[0, 0x1010]],
    );
  });
});

describe("the early PMI of a single-region ToPA", () => {
  it("triggers earlyPmi bytes before the region fills, once per fill", () => {
    const x = rig(BDW, { toPA: true, base: 0x1000 }, oneRegion(), { earlyPmi: 0x100 });
    assert.equal(x.unit.write(DATA, 0, 0xf00).pmis, 1);
    assert.equal(x.unit.write(DATA, 0, 0x100).pmis, 0); // fills and wraps: no second PMI
    assert.equal(x.unit.write(DATA, 0, 0xf00).pmis, 1); // 0xf00 into the second pass
    assert.deepEqual(
      x.pmis.map((e) => e.byteCount),
      [0xf00, 0x1f00],
    );
    // Multi-entry ToPA (Skylake) has no early PMI: at the fill.
    const y = rig(SKL, { toPA: true, base: 0x1000 }, twoRegions(), { earlyPmi: 0x100 });
    y.unit.write(DATA, 0, 0x1000);
    assert.deepEqual(
      y.pmis.map((e) => e.byteCount),
      [0x1000],
    );
  });

  it("a skid longer than the margin: the output has wrapped and overwritten the top when the PMI comes", () => {
    const x = rig(BDW, { toPA: true, base: 0x1000 }, oneRegion(), { earlyPmi: 0x100, pmiSkid: 0x200 });
    // The write ends where the PMI is delivered (writes stop there), so the output
    // MSRs after it are those the PMI handler reads.
    x.unit.write(DATA, 0, 0x1100);
    assert.deepEqual(
      x.pmis.map((e) => e.byteCount),
      [0x1100],
    );
    // OutputOffset 0x100 of the same region: the output wrapped, 0x100 bytes at its top are overwritten.
    assert.equal(x.msrs.outputMaskHi, 0x100);
    assert.equal(x.msrs.outputMaskLo >>> 7, 0);
  });
});
