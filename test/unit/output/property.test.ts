import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { readOutput } from "../../../src/unit/output/reader.js";
import { type TopaEntry, topaRegionSize, writeTopaTable } from "../../../src/unit/output/topa.js";
import {
  caps,
  expectedAfterWrap,
  makeStream,
  pointers,
  rig,
  STATUS_STOPPED,
  STATUS_TRIGGER_EN,
  stop,
  writeChunked,
} from "./helpers.js";

const SKL = caps("skylake");

const entryArb = fc.record({
  size: fc.integer({ min: 0, max: 2 }),
  int: fc.boolean(),
  stop: fc.integer({ min: 0, max: 9 }).map((v) => v === 0),
});

const layoutArb = fc.record({
  tables: fc.array(fc.array(entryArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 }),
  loopTo: fc.nat(),
  start: fc.nat(),
  startOffset: fc.nat(),
  lengthFactor: fc.double({ min: 0.01, max: 3.5, noNaN: true }),
  seed: fc.nat(),
  maxChunk: fc.integer({ min: 1, max: 5000 }),
});

describe("output round trip (property)", () => {
  it("ToPA: random tables, END chains, STOP/INT, write sizes: reading gives what was written", () => {
    fc.assert(
      fc.property(layoutArb, (l) => {
        const memory = new PhysMemory();
        const seq: {
          table: number;
          index: number;
          base: number;
          size: number;
          stop: boolean;
          int: boolean;
        }[] = [];
        // The last table's END goes back to table `loop`: tables before it are a lead-in.
        const loop = l.loopTo % l.tables.length;
        let ringFirst = 0;
        let next = 0x1000000;
        const tableBase = (t: number) => 0x1000 * (t + 1);
        l.tables.forEach((entries, t) => {
          const out: TopaEntry[] = [];
          if (t === loop) ringFirst = seq.length;
          entries.forEach((e, i) => {
            const size = topaRegionSize(e.size);
            next = Math.ceil(next / size) * size;
            out.push({ base: next, size: e.size, int: e.int, stop: e.stop });
            seq.push({ table: tableBase(t), index: i, base: next, size, stop: e.stop, int: e.int });
            next += size;
          });
          out.push({ base: tableBase(t + 1 === l.tables.length ? loop : t + 1), end: true });
          writeTopaTable(memory, tableBase(t), out);
        });
        const cap = seq.slice(ringFirst).reduce((a, r) => a + r.size, 0);
        const si = l.start % seq.length;
        const so = l.startOffset % seq[si]!.size;
        const s = makeStream(l.seed, Math.max(1, Math.floor(cap * l.lengthFactor)));
        const len = s.bytes.length;

        // The model: where the bytes go, where STOP ends them, where the pointers end.
        let i = si;
        let off = so;
        let left = len;
        let accepted = 0;
        let inRing = 0;
        let stopped = false;
        let pmis = 0;
        while (left > 0) {
          const r = seq[i]!;
          const n = Math.min(r.size - off, left);
          off += n;
          left -= n;
          accepted += n;
          if (i >= ringFirst) inRing += n;
          if (off === r.size) {
            if (r.int) pmis++;
            if (r.stop) {
              stopped = true;
              break;
            }
            i = i + 1 === seq.length ? ringFirst : i + 1;
            off = 0;
          }
        }

        const x = rig(SKL, { toPA: true, base: seq[si]!.table, index: seq[si]!.index, offset: so }, memory);
        assert.equal(x.enableError, null);
        assert.equal(writeChunked(x.unit, s.bytes, l.seed, l.maxChunk), accepted);
        assert.equal(x.pmis.length, pmis);
        assert.equal((x.msrs.statusLo & STATUS_STOPPED) !== 0, stopped);
        assert.equal((x.msrs.statusLo & STATUS_TRIGGER_EN) !== 0, !stopped);
        stop(x);
        assert.equal(x.msrs.readMsr(0x560), BigInt(seq[i]!.table));
        assert.equal(x.msrs.outputMaskLo, ((seq[i]!.index << 7) | 0x7f) >>> 0);
        assert.equal(x.msrs.outputMaskHi, off);

        const out = readOutput({ memory, caps: SKL, toPA: true, final: pointers(x.msrs), start: x.start });
        const wrapped = !stopped && inRing >= cap;
        assert.equal(out.wrapped, wrapped);
        assert.deepEqual(
          out.bytes,
          wrapped ? expectedAfterWrap(s, accepted, cap) : s.bytes.subarray(0, accepted),
        );
        assert.equal(out.cutByStop.length, stopped ? 1 : 0);
        // Told the answer, the reader agrees.
        const told = readOutput({
          memory,
          caps: SKL,
          toPA: true,
          final: pointers(x.msrs),
          start: x.start,
          wrapped,
        });
        assert.deepEqual(told.bytes, out.bytes);
      }),
      { numRuns: 150 },
    );
  });

  it("single range: random sizes, start offsets and write sizes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 12, max: 17 }),
        fc.nat(),
        fc.double({ min: 0.01, max: 3.5, noNaN: true }),
        fc.nat(),
        fc.integer({ min: 1, max: 5000 }),
        (bits, startOffset, factor, seed, maxChunk) => {
          const size = 2 ** bits;
          const base = size * 3;
          const so = startOffset % size;
          const s = makeStream(seed, Math.max(1, Math.floor(size * factor)));
          const x = rig(SKL, { toPA: false, base, mask: size - 1, offset: so });
          assert.equal(writeChunked(x.unit, s.bytes, seed, maxChunk), s.bytes.length);
          stop(x);
          const n = s.bytes.length;
          assert.equal(x.msrs.outputMaskHi, (so + n) % size);
          const out = readOutput({
            memory: x.memory,
            caps: SKL,
            toPA: false,
            final: pointers(x.msrs),
            start: x.start,
          });
          const wrapped = n >= size;
          assert.equal(out.wrapped, wrapped);
          // After a wrap of a fresh memory the never-written bytes sit before the first PSB.
          const expected = n >= size ? expectedAfterWrap(s, n, size) : s.bytes;
          assert.deepEqual(out.bytes, expected);
        },
      ),
      { numRuns: 100 },
    );
  });
});
