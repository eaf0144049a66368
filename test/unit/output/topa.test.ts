import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { PtCapabilities } from "../../../src/unit/capabilities.js";
import { Msr } from "../../../src/unit/msr-layout.js";
import { OutputError } from "../../../src/unit/output/errors.js";
import { PhysMemory } from "../../../src/unit/output/memory.js";
import { readOutput } from "../../../src/unit/output/reader.js";
import {
  readTopaEntry,
  TOPA_MAX_INDEX,
  type TopaEntry,
  topaRegionSize,
  writeTopaTable,
} from "../../../src/unit/output/topa.js";
import {
  caps,
  expectedAfterWrap,
  makeStream,
  pointers,
  type Rig,
  rig,
  STATUS_ERROR,
  STATUS_PEND_TOPA_PMI,
  STATUS_STOPPED,
  STATUS_TRIGGER_EN,
  stop,
  writeChunked,
} from "./helpers.js";

const SKL = caps("skylake");
const BDW = caps("broadwell");
const TGL = caps("tigerlake");

interface Table {
  base: number;
  entries: TopaEntry[];
}

/** The output regions in the order a ToPA ring visits them from entry 0 of the first table. */
function order(
  tables: Table[],
): { table: number; index: number; base: number; size: number; stop: boolean }[] {
  const out = [];
  for (const t of tables) {
    for (let i = 0; i < t.entries.length; i++) {
      const e = t.entries[i]!;
      if (e.end) break;
      out.push({
        table: t.base,
        index: i,
        base: e.base,
        size: topaRegionSize(e.size ?? 0),
        stop: e.stop ?? false,
      });
    }
  }
  return out;
}

function layout(tables: Table[], memory = new PhysMemory()): PhysMemory {
  for (const t of tables) writeTopaTable(memory, t.base, t.entries);
  return memory;
}

/** Where the pointers are after `n` bytes from the start of the ring (no STOP). */
function position(tables: Table[], n: number): { table: number; index: number; offset: number } {
  const seq = order(tables);
  const cap = seq.reduce((a, r) => a + r.size, 0);
  let off = n % cap;
  for (const r of seq) {
    if (off < r.size) return { table: r.table, index: r.index, offset: off };
    off -= r.size;
  }
  throw new Error("unreachable");
}

function checkPointers(x: Rig, p: { table: number; index: number; offset: number }): void {
  assert.equal(x.msrs.readMsr(Msr.OutputBase), BigInt(p.table), "OUTPUT_BASE = current table");
  assert.equal(x.msrs.outputMaskLo, ((p.index << 7) | 0x7f) >>> 0, "MaskOrTableOffset = entry index");
  assert.equal(x.msrs.outputMaskHi, p.offset, "OutputOffset");
}

const read = (x: Rig, c: PtCapabilities, wrapped?: boolean) =>
  readOutput({ memory: x.memory, caps: c, toPA: true, final: pointers(x.msrs), start: x.start, wrapped });

const CHAIN: Table[] = [
  {
    base: 0x1000,
    entries: [
      { base: 0x100000, size: 0 },
      { base: 0x104000, size: 2 },
      { base: 0x10a000, size: 1 },
      { base: 0x2000, end: true },
    ],
  },
  {
    base: 0x2000,
    entries: [
      { base: 0x200000, size: 0 },
      { base: 0x208000, size: 3 },
      { base: 0x3000, end: true },
    ],
  },
  {
    base: 0x3000,
    entries: [
      { base: 0x300000, size: 0 },
      { base: 0x1000, end: true },
    ],
  },
];
const CHAIN_CAP = (4 + 16 + 8 + 4 + 32 + 4) * 1024;

describe("ToPA output", () => {
  it("single-entry ToPA (Broadwell): one region and an END back to the table, wrapping", () => {
    const tables = [
      {
        base: 0x1000,
        entries: [
          { base: 0x100000, size: 1 },
          { base: 0x1000, end: true },
        ],
      },
    ];
    const s = makeStream(1, 20000);
    const x = rig(BDW, { toPA: true, base: 0x1000 }, layout(tables));
    assert.equal(x.enableError, null);
    assert.equal(writeChunked(x.unit, s.bytes, 1), s.bytes.length);
    stop(x);
    checkPointers(x, { table: 0x1000, index: 0, offset: s.bytes.length % 8192 });
    const out = read(x, BDW);
    assert.equal(out.wrapped, true);
    assert.deepEqual(out.bytes, expectedAfterWrap(s, s.bytes.length, 8192));
  });

  for (const len of [1000, 30000, CHAIN_CAP, CHAIN_CAP + 1, 100000, 3 * CHAIN_CAP + 5000]) {
    it(`END chain across three tables back to the first, ${len} bytes`, () => {
      const s = makeStream(len, len);
      const n = s.bytes.length;
      const x = rig(SKL, { toPA: true, base: 0x1000 }, layout(CHAIN));
      assert.equal(writeChunked(x.unit, s.bytes, len, 5000), n);
      stop(x);
      checkPointers(x, position(CHAIN, n));
      const out = read(x, SKL);
      assert.equal(out.wrapped, n >= CHAIN_CAP);
      assert.deepEqual(out.bytes, n >= CHAIN_CAP ? expectedAfterWrap(s, n, CHAIN_CAP) : s.bytes);
      assert.deepEqual(read(x, SKL, n >= CHAIN_CAP).bytes, out.bytes);
      // Segments map the bytes back to memory.
      for (const seg of out.segments) {
        assert.deepEqual(
          x.memory.read(seg.regionBase + seg.from, seg.to - seg.from),
          out.bytes.subarray(seg.traceOffset, seg.traceOffset + seg.to - seg.from),
        );
      }
    });
  }

  it("starts from MaskOrTableOffset / OutputOffset in the middle of the chain", () => {
    const s = makeStream(3, 50000);
    const x = rig(SKL, { toPA: true, base: 0x2000, index: 1, offset: 0x1234 }, layout(CHAIN));
    assert.equal(x.enableError, null);
    x.unit.write(s.bytes);
    stop(x);
    // From table 0x2000 entry 1 offset 0x1234: 32K - 0x1234 there, then 4K, then table 0x1000.
    const first = 0x8000 - 0x1234 + 0x1000;
    const p = position(CHAIN, s.bytes.length - first);
    checkPointers(x, p);
    const out = read(x, SKL, false);
    assert.deepEqual(out.bytes, s.bytes);
    assert.equal(out.segments[0]!.regionBase, 0x208000);
    assert.equal(out.segments[0]!.from, 0x1234);
  });

  it("STOP in a middle entry: output ceases at the region's last byte, Stopped set, no more bytes", () => {
    const tables = [
      {
        base: 0x5000,
        entries: [
          { base: 0x10000, size: 0 },
          { base: 0x20000, size: 1, stop: true },
          { base: 0x30000, size: 0 },
          { base: 0x5000, end: true },
        ],
      },
    ];
    const s = makeStream(4, 30000);
    const x = rig(SKL, { toPA: true, base: 0x5000 }, layout(tables));
    let accepted = 0;
    let stoppedSeen = false;
    for (let pos = 0; pos < s.bytes.length; pos += 1000) {
      const r = x.unit.write(s.bytes, pos, Math.min(1000, s.bytes.length - pos));
      accepted += r.accepted;
      if (r.stopped) {
        stoppedSeen = true;
        assert.equal(r.error, false);
      }
    }
    assert.ok(stoppedSeen);
    assert.equal(accepted, 0x1000 + 0x2000);
    assert.equal(x.msrs.statusLo & (STATUS_STOPPED | STATUS_TRIGGER_EN | STATUS_ERROR), STATUS_STOPPED);
    // SDM: OUTPUT_BASE = table of the STOP entry, MaskOrTableOffset = its index, OutputOffset = region size.
    checkPointers(x, { table: 0x5000, index: 1, offset: 0x2000 });
    assert.equal(x.memory.anyNonZero(0x30000, 0x1000), false, "nothing after the STOP region");
    stop(x);
    checkPointers(x, { table: 0x5000, index: 1, offset: 0x2000 });
    const out = read(x, SKL);
    assert.equal(out.wrapped, false);
    assert.deepEqual(out.bytes, s.bytes.subarray(0, accepted));
    assert.equal(out.cutByStop.length, 1);
    assert.equal(out.cutByStop[0]!.regionBase, 0x20000);
    assert.equal(out.cutByStop[0]!.index, 1);

    // Re-enabling with Stopped cleared but the pointers left as they are: OutputOffset =
    // region size is an operational error (SDM note under "ToPA STOP").
    assert.equal(x.msrs.writeMsr(Msr.Status, 0n), null);
    assert.equal(x.msrs.writeMsr(Msr.Ctl, 0x2101n | 0xcn), null);
    const err = x.unit.enable();
    assert.equal(err?.kind, OutputError.OffsetBeyondRegion);
    assert.equal(x.msrs.statusLo & (STATUS_ERROR | STATUS_TRIGGER_EN), STATUS_ERROR);
    assert.equal(x.unit.write(s.bytes).accepted, 0);
  });

  it("STOP and INT in the last entry: STOP before INT, the PMI sees Stopped", () => {
    const tables = [
      {
        base: 0x5000,
        entries: [
          { base: 0x10000, size: 0 },
          { base: 0x20000, size: 0, stop: true, int: true },
          { base: 0x5000, end: true },
        ],
      },
    ];
    const s = makeStream(5, 9000);
    const x = rig(SKL, { toPA: true, base: 0x5000 }, layout(tables));
    let statusAtPmi = -1;
    x.unit.onPmi = (e) => {
      x.pmis.push(e);
      statusAtPmi = x.msrs.statusLo;
    };
    const r = x.unit.write(s.bytes.subarray(0, 0x2000));
    assert.equal(r.accepted, 0x2000);
    assert.equal(r.stopped, true);
    assert.equal(r.pmis, 1);
    assert.equal(x.pmis.length, 1);
    assert.deepEqual(
      { ...x.pmis[0], byteCount: 0 },
      { cause: "region-filled", tableBase: 0x5000, index: 1, stopped: true, pended: false, byteCount: 0 },
    );
    assert.equal(statusAtPmi & STATUS_STOPPED, STATUS_STOPPED);
    assert.equal(x.unit.perfGlobalStatusTopaPmi, true);
    checkPointers(x, { table: 0x5000, index: 1, offset: 0x1000 });
    stop(x);
    const out = read(x, SKL);
    assert.deepEqual(out.bytes, s.bytes.subarray(0, 0x2000));
    assert.equal(out.cutByStop.length, 1);
  });

  it("a STOP region reached after a wrap of the ring", () => {
    const tables = [
      {
        base: 0x5000,
        entries: [
          { base: 0x10000, size: 0, stop: true },
          { base: 0x20000, size: 0 },
          { base: 0x30000, size: 0 },
          { base: 0x5000, end: true },
        ],
      },
    ];
    const s = makeStream(6, 20000, 700);
    const x = rig(SKL, { toPA: true, base: 0x5000, index: 1 }, layout(tables));
    assert.equal(writeChunked(x.unit, s.bytes, 6), 3 * 0x1000);
    checkPointers(x, { table: 0x5000, index: 0, offset: 0x1000 });
    stop(x);
    const out = read(x, SKL);
    assert.equal(out.wrapped, false);
    assert.deepEqual(out.bytes, s.bytes.subarray(0, 0x3000));
    assert.equal(out.cutByStop[0]!.regionBase, 0x10000);
  });

  it("INT entries signal a PMI each time their region fills", () => {
    const tables = [
      {
        base: 0x5000,
        entries: [
          { base: 0x10000, size: 0, int: true },
          { base: 0x20000, size: 0 },
          { base: 0x40000, size: 1, int: true },
          { base: 0x5000, end: true },
        ],
      },
    ];
    const s = makeStream(7, 5 * 0x4000 + 100);
    const x = rig(SKL, { toPA: true, base: 0x5000 }, layout(tables));
    assert.equal(writeChunked(x.unit, s.bytes, 7, 3000), s.bytes.length);
    assert.deepEqual(
      x.pmis.map((e) => [e.index, e.byteCount, e.pended]),
      [
        [0, 0x1000, false],
        [2, 0x4000, false],
        [0, 0x5000, false],
        [2, 0x8000, false],
        [0, 0x9000, false],
        [2, 0xc000, false],
        [0, 0xd000, false],
        [2, 0x10000, false],
        [0, 0x11000, false],
        [2, 0x14000, false],
      ],
    );
    assert.equal(x.msrs.statusLo & STATUS_PEND_TOPA_PMI, 0, "no PMI preservation requested");
    stop(x);
    assert.deepEqual(read(x, SKL).bytes, expectedAfterWrap(s, s.bytes.length, 0x4000));
  });

  it("PMI preservation: PendTopaPMI set on INT, the PMI pended again on re-enable until software clears it", () => {
    const tables = [
      {
        base: 0x5000,
        entries: [{ base: 0x10000, int: true }, { base: 0x20000 }, { base: 0x5000, end: true }],
      },
    ];
    const x = rig(TGL, { toPA: true, base: 0x5000, inject: true }, layout(tables));
    assert.equal(TGL.psbPmiPreservation, true);
    x.unit.write(new Uint8Array(0x1000).fill(0xaa));
    assert.equal(x.pmis.length, 1);
    assert.equal(x.pmis[0]!.pended, true);
    assert.equal(x.msrs.statusLo & STATUS_PEND_TOPA_PMI, STATUS_PEND_TOPA_PMI);
    // Disable (as XSAVES would), re-enable with PendTopaPMI still set: the PMI is pended again.
    stop(x);
    assert.equal(x.msrs.writeMsr(Msr.Ctl, (1n << 56n) | 0x2101n | 0xcn), null);
    assert.equal(x.unit.enable(), null);
    assert.equal(x.pmis.length, 2);
    assert.equal(x.pmis[1]!.cause, "pending-on-enable");
    // The handler clears TraceEn and PendTopaPMI: no PMI on the next enable.
    stop(x);
    assert.equal(x.msrs.writeMsr(Msr.Status, 0n), null);
    assert.equal(x.msrs.writeMsr(Msr.Ctl, (1n << 56n) | 0x2101n | 0xcn), null);
    assert.equal(x.unit.enable(), null);
    assert.equal(x.pmis.length, 2);
    assert.equal(x.msrs.statusLo & STATUS_TRIGGER_EN, STATUS_TRIGGER_EN);
  });

  it("a table without END wraps after its maximum size (offset 0FFFFFF8H) to entry 0", () => {
    const memory = new PhysMemory();
    const t = 0x10000000;
    writeTopaTable(memory, t, [{ base: 0x100000 }]);
    writeTopaTable(memory, t + 8 * (TOPA_MAX_INDEX - 1), [{ base: 0x200000 }, { base: 0x300000 }]);
    const s = makeStream(8, 2 * 0x1000 + 100, 500);
    const x = rig(SKL, { toPA: true, base: t, index: TOPA_MAX_INDEX - 1 }, memory);
    assert.equal(x.enableError, null);
    x.unit.write(s.bytes, 0, 0x1000);
    checkPointers(x, { table: t, index: TOPA_MAX_INDEX, offset: 0 });
    assert.equal(x.msrs.outputMaskLo, 0xffffffff, "MaskOrTableOffset of the last entry");
    x.unit.write(s.bytes, 0x1000);
    checkPointers(x, { table: t, index: 0, offset: s.bytes.length - 0x2000 });
    stop(x);
    const out = read(x, SKL, false);
    assert.deepEqual(out.bytes, s.bytes);
    assert.deepEqual(
      out.segments.map((g) => g.index),
      [TOPA_MAX_INDEX - 1, TOPA_MAX_INDEX, 0],
    );
  });

  it("a 128 MiB region is sparse", () => {
    const tables = [
      {
        base: 0x1000,
        entries: [
          { base: 0x8000000, size: 15 },
          { base: 0x1000, end: true },
        ],
      },
    ];
    const s = makeStream(9, 50000);
    const x = rig(SKL, { toPA: true, base: 0x1000, offset: 0x8000000 - 20000 }, layout(tables));
    x.unit.write(s.bytes);
    assert.ok(x.memory.pageCount < 20);
    checkPointers(x, { table: 0x1000, index: 0, offset: s.bytes.length - 20000 });
    stop(x);
    // Past the region's end and below the start, nothing overwritten: no wrap.
    const out = read(x, SKL);
    assert.equal(out.wrapped, false);
    assert.deepEqual(out.bytes, s.bytes);
    assert.equal(out.segments.length, 2);
  });

  it("entries round-trip through memory", () => {
    const memory = new PhysMemory();
    const e = { base: 0x7f_ffff_f000, size: 9, int: true, stop: true, end: false };
    writeTopaTable(memory, 0x1000, [e]);
    const back = readTopaEntry(memory, 0x1000, 0);
    assert.deepEqual({ base: back.base, size: back.size, int: back.int, stop: back.stop, end: back.end }, e);
  });
});

describe("ToPA operational errors", () => {
  interface Case {
    what: string;
    c?: PtCapabilities;
    base?: number;
    index?: number;
    offset?: number;
    tables: Table[];
    kind: string;
    /** Bytes accepted before the error (0: found on enable). */
    accepted: number;
    /** Pointers after the error. */
    at: { table: number; index: number; offset: number };
  }
  const R = (base: number, more: Partial<TopaEntry> = {}): TopaEntry => ({ base, ...more });
  const cases: Case[] = [
    {
      what: "reserved bit 1 set in the first entry",
      tables: [{ base: 0x1000, entries: [R(0x10000, { rawLo: 2 }), R(0x1000, { end: true })] }],
      kind: OutputError.EntryReserved,
      accepted: 0,
      at: { table: 0x1000, index: 0, offset: 0 },
    },
    {
      what: "reserved bits 11:10 set in a later entry",
      tables: [
        { base: 0x1000, entries: [R(0x10000), R(0x20000, { rawLo: 0x800 }), R(0x1000, { end: true })] },
      ],
      kind: OutputError.EntryReserved,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "reserved bit 5 in an END entry",
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x1000, { end: true, rawLo: 0x20 })] }],
      kind: OutputError.EntryReserved,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "an address at or above MAXPHYADDR (39)",
      tables: [
        { base: 0x1000, entries: [R(0x10000), R(0x20000, { rawHi: 0x80 }), R(0x1000, { end: true })] },
      ],
      kind: OutputError.EntryAboveMaxPhysAddr,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "table base (IA32_RTIT_OUTPUT_BASE) not 4K aligned",
      base: 0x1080,
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x1000, { end: true })] }],
      kind: OutputError.TableMisaligned,
      accepted: 0,
      at: { table: 0x1080, index: 0, offset: 0 },
    },
    {
      what: "a 2M region whose base bits 20:12 are not clear",
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x201000, { size: 9 }), R(0x1000, { end: true })] }],
      kind: OutputError.RegionMisaligned,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "OutputOffset >= the region size",
      offset: 0x2000,
      tables: [{ base: 0x1000, entries: [R(0x10000, { size: 1 }), R(0x1000, { end: true })] }],
      kind: OutputError.OffsetBeyondRegion,
      accepted: 0,
      at: { table: 0x1000, index: 0, offset: 0x2000 },
    },
    {
      what: "END with INT",
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x1000, { end: true, int: true })] }],
      kind: OutputError.EndWithIntOrStop,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "END with STOP",
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x1000, { end: true, stop: true })] }],
      kind: OutputError.EndWithIntOrStop,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "END in entry 0 of the first table",
      tables: [{ base: 0x1000, entries: [R(0x2000, { end: true })] }],
      kind: OutputError.EndInEntry0,
      accepted: 0,
      at: { table: 0x1000, index: 0, offset: 0 },
    },
    {
      what: "END in entry 0 of a table reached through END",
      tables: [
        { base: 0x1000, entries: [R(0x10000), R(0x2000, { end: true })] },
        { base: 0x2000, entries: [R(0x1000, { end: true })] },
      ],
      kind: OutputError.EndInEntry0,
      accepted: 0x1000,
      at: { table: 0x2000, index: 0, offset: 0 },
    },
    {
      what: "single-entry ToPA without END in the second entry",
      c: BDW,
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x20000), R(0x1000, { end: true })] }],
      kind: OutputError.SingleEntryNeedsEnd,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "single-entry ToPA whose END points elsewhere",
      c: BDW,
      tables: [
        { base: 0x1000, entries: [R(0x10000), R(0x2000, { end: true })] },
        { base: 0x2000, entries: [R(0x20000), R(0x2000, { end: true })] },
      ],
      kind: OutputError.SingleEntryEndBase,
      accepted: 0x1000,
      at: { table: 0x1000, index: 1, offset: 0 },
    },
    {
      what: "single-entry ToPA enabled on entry 2",
      c: BDW,
      index: 2,
      tables: [{ base: 0x1000, entries: [R(0x10000), R(0x1000, { end: true }), R(0x20000)] }],
      kind: OutputError.SingleEntryNeedsEnd,
      accepted: 0,
      at: { table: 0x1000, index: 2, offset: 0 },
    },
  ];
  for (const k of cases) {
    it(`${k.what}: Error set, output stops`, () => {
      const c = k.c ?? SKL;
      const s = makeStream(11, 0x3000);
      const x = rig(
        c,
        { toPA: true, base: k.base ?? 0x1000, index: k.index, offset: k.offset },
        layout(k.tables),
      );
      if (k.accepted === 0) assert.equal(x.enableError?.kind, k.kind);
      else assert.equal(x.enableError, null);
      const r = x.unit.write(s.bytes);
      assert.equal(r.accepted, k.accepted);
      assert.equal(r.error, true);
      assert.equal(r.stopped, false);
      assert.equal(x.unit.lastError?.kind, k.kind);
      assert.equal(x.msrs.statusLo & (STATUS_ERROR | STATUS_TRIGGER_EN | STATUS_STOPPED), STATUS_ERROR);
      assert.equal(x.unit.write(s.bytes).accepted, 0, "nothing more is stored");
      stop(x);
      checkPointers(x, k.at);
      assert.deepEqual(x.memory.read(0x10000, k.accepted), s.bytes.subarray(0, k.accepted));
      if (k.accepted > 0) {
        // The reader gives back what was written before the error.
        const out = read(x, c, false);
        assert.deepEqual(out.bytes, s.bytes.subarray(0, k.accepted));
      }
    });
  }
});
