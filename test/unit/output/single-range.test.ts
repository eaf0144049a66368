import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Msr } from "../../../src/unit/msr-layout.js";
import { OutputError } from "../../../src/unit/output/errors.js";
import { readOutput } from "../../../src/unit/output/reader.js";
import {
  caps,
  expectedAfterWrap,
  makeStream,
  pointers,
  rig,
  STATUS_ERROR,
  STATUS_TRIGGER_EN,
  stop,
  writeChunked,
} from "./helpers.js";

const SKL = caps("skylake");

describe("single-range output", () => {
  for (const size of [128, 4096, 0x10000]) {
    for (const factor of [0.5, 1, 2.7]) {
      it(`${size} bytes, ${factor}x the range written`, () => {
        const base = 0x40000000;
        const s = makeStream(size + factor, Math.floor(size * factor), Math.min(1024, size / 4));
        const x = rig(SKL, { toPA: false, base, mask: size - 1 });
        assert.equal(x.enableError, null);
        assert.equal(x.msrs.statusLo & STATUS_TRIGGER_EN, STATUS_TRIGGER_EN);
        const accepted = writeChunked(x.unit, s.bytes, size, 97);
        assert.equal(accepted, s.bytes.length, "single range never stops");
        stop(x);
        // OUTPUT_BASE unchanged; OutputOffset = bytes written mod size; the mask unchanged.
        assert.equal(x.msrs.outputBaseLo, base);
        assert.equal(x.msrs.outputMaskHi, accepted % size);
        assert.equal(x.msrs.outputMaskLo, size - 1);
        // Exactly filling the range brings the pointer back to the start: that is a wrap too.
        const wrapped = accepted >= size;
        const out = readOutput({
          memory: x.memory,
          caps: SKL,
          toPA: false,
          final: pointers(x.msrs),
          start: x.start,
        });
        assert.equal(out.wrapped, wrapped);
        const expected = wrapped ? expectedAfterWrap(s, accepted, size) : s.bytes.slice(0, accepted);
        assert.deepEqual(out.bytes, expected);
        // Explicit wrapped flag gives the same.
        const out2 = readOutput({
          memory: x.memory,
          caps: SKL,
          toPA: false,
          final: pointers(x.msrs),
          start: x.start,
          wrapped,
        });
        assert.deepEqual(out2.bytes, expected);
        // Everything stayed inside [base, base + size).
        for (const pn of x.memory.pageNumbers())
          assert.ok(pn * 4096 >= base && pn * 4096 < base + Math.max(size, 4096));
      });
    }
  }

  it("starts at OutputOffset and wraps to the base", () => {
    const base = 0x2000;
    const s = makeStream(7, 6000, 500);
    const x = rig(SKL, { toPA: false, base, mask: 0xfff, offset: 0x800 });
    assert.equal(writeChunked(x.unit, s.bytes.subarray(0, 3000), 3), 3000);
    // 0x800 + 3000 wraps once: offset (0x800 + 3000) - 0x1000.
    assert.equal(x.msrs.outputMaskHi, 0x800 + 3000 - 0x1000);
    assert.deepEqual(x.memory.read(base + 0x800, 0x800), s.bytes.subarray(0, 0x800));
    assert.deepEqual(x.memory.read(base, 3000 - 0x800), s.bytes.subarray(0x800, 3000));
    stop(x);
    // The pointer went past the end and is below the start, yet nothing was overwritten:
    // no wrap; the bytes come back exactly, from the start offset.
    const out = readOutput({
      memory: x.memory,
      caps: SKL,
      toPA: false,
      final: pointers(x.msrs),
      start: x.start,
    });
    assert.equal(out.wrapped, false);
    assert.deepEqual(out.bytes, s.bytes.subarray(0, 3000));
    assert.deepEqual(
      out.segments.map((g) => [g.from, g.to, g.traceOffset]),
      [
        [0x800, 0x1000, 0],
        [0, 3000 - 0x800, 0x800],
      ],
    );
    // Told it wrapped, the reader gives the ring from the first whole PSB after the pointer.
    const told = readOutput({
      memory: x.memory,
      caps: SKL,
      toPA: false,
      final: pointers(x.msrs),
      start: x.start,
      wrapped: true,
    });
    assert.equal(told.wrapped, true);
    assert.deepEqual(told.bytes, s.bytes.subarray(0, 3000));
    assert.equal(told.skipped, 0x800 - (3000 - 0x800));
  });

  it("a 128 MiB range allocates only the pages written", () => {
    const size = 0x8000000;
    const s = makeStream(9, 20000);
    const x = rig(SKL, { toPA: false, base: 0x80000000, mask: size - 1, offset: size - 10000 });
    assert.equal(x.unit.write(s.bytes).accepted, s.bytes.length);
    assert.ok(x.memory.pageCount <= 8, `pages: ${x.memory.pageCount}`);
    assert.equal(x.msrs.outputMaskHi, 10000);
    stop(x);
    const out = readOutput({
      memory: x.memory,
      caps: SKL,
      toPA: false,
      final: pointers(x.msrs),
      start: x.start,
    });
    assert.equal(out.wrapped, false, "past the end, below the start, nothing overwritten");
    assert.deepEqual(out.bytes, s.bytes);
  });

  const errors: [string, { base: number; mask: number; offset?: number }, string][] = [
    ["mask with a hole", { base: 0x100000, mask: 0x17f }, OutputError.MaskNotContiguous],
    ["mask not ending in ones", { base: 0x100000, mask: 0xfff0ff }, OutputError.MaskNotContiguous],
    ["base overlapping the mask", { base: 0x1080, mask: 0xfff }, OutputError.BaseMaskOverlap],
    ["base not aligned to the range", { base: 0x3000, mask: 0x3fff }, OutputError.BaseMaskOverlap],
    [
      "OutputOffset beyond the mask",
      { base: 0x4000, mask: 0xfff, offset: 0x1000 },
      OutputError.OffsetBeyondMask,
    ],
  ];
  for (const [what, cfg, kind] of errors) {
    it(`operational error: ${what}`, () => {
      const x = rig(SKL, { toPA: false, ...cfg });
      assert.equal(x.enableError?.kind, kind);
      assert.equal(x.unit.lastError?.kind, kind);
      assert.equal(x.msrs.statusLo & (STATUS_ERROR | STATUS_TRIGGER_EN), STATUS_ERROR);
      const r = x.unit.write(new Uint8Array(100).fill(1));
      assert.equal(r.accepted, 0);
      assert.equal(r.error, true);
      assert.equal(x.memory.pageCount, 0);
      // The output MSRs stay as software wrote them.
      assert.equal(x.msrs.outputMaskHi, cfg.offset ?? 0);
      assert.equal(x.msrs.readMsr(Msr.OutputBase), BigInt(cfg.base));
    });
  }

  it("OutputOffset equal to the mask is valid (the last byte)", () => {
    const x = rig(SKL, { toPA: false, base: 0x4000, mask: 0xfff, offset: 0xfff });
    assert.equal(x.enableError, null);
    x.unit.write(Uint8Array.of(1, 2, 3));
    assert.deepEqual(x.memory.read(0x4fff, 1), Uint8Array.of(1));
    assert.deepEqual(x.memory.read(0x4000, 2), Uint8Array.of(2, 3));
    assert.equal(x.msrs.outputMaskHi, 2);
  });
});
