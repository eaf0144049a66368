/** Intel PT streams: snapshot overlap removal, per-thread queues, files beyond 2 GiB. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  type ByteSource,
  bytesSource,
  forEachAuxChunk,
  newDataStart,
  PerfDataReader,
  PerfRecord,
  RecordType,
} from "../../src/perf/index.js";
import { auxtrace, concat, fileMode, Le, record } from "../../tools/perf/perf-data-writer.js";

const PSB = Uint8Array.from([2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82]);
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (seed + i * 7) & 0x7f);

describe("snapshot overlap (perf's intel_pt_find_overlap rule)", () => {
  const x = bytes(10, 1);
  const y = bytes(10, 2);
  const z = bytes(5, 3);

  test("a snapshot that repeats the end of the one before keeps only what is new", () => {
    const a = concat([bytes(3, 9), PSB, x, PSB, y]);
    assert.equal(newDataStart(a, concat([PSB, y, z])), 26);
    assert.equal(newDataStart(a, concat([bytes(4, 5), PSB, y, z])), 30);
    // Everything repeated: nothing new.
    assert.equal(newDataStart(a, concat([PSB, y])), 26);
    // The whole of a (from its first PSB) repeated.
    assert.equal(newDataStart(a, concat([PSB, x, PSB, y, z])), 52);
  });

  test("no overlap: b from its first PSB; no PSB in b: nothing", () => {
    const a = concat([PSB, x]);
    assert.equal(newDataStart(a, concat([bytes(2, 4), PSB, z])), 2);
    assert.equal(newDataStart(a, z), z.length);
    assert.equal(newDataStart(z, concat([PSB, z])), 0);
  });

  test("the kept bytes of consecutive snapshots make the trace with no repeats (fast-check)", () => {
    // A trace of PSB-led segments; snapshots are overlapping windows that start at PSBs.
    fc.assert(
      fc.property(
        fc.array(
          fc.uint8Array({ minLength: 1, maxLength: 30 }).map((b) => b.map((v) => v & 0x7f)),
          { minLength: 2, maxLength: 12 },
        ),
        fc.nat(),
        (segs, cutSeed) => {
          const trace = concat(segs.flatMap((s) => [PSB, s]));
          const starts = segs.map((_, i) => segs.slice(0, i).reduce((n, s) => n + 16 + s.length, 0));
          const cut = 1 + (cutSeed % (segs.length - 1));
          const a = trace.subarray(0, starts[cut]! + 16 + segs[cut]!.length); // ends after segment `cut`
          const b = trace.subarray(starts[Math.max(0, cut - 1)]!); // starts one segment earlier
          const kept = concat([a, b.subarray(newDataStart(a, b))]);
          assert.deepEqual(kept, trace);
        },
      ),
    );
  });

  test("auxStreams drops repeats between a queue's snapshots, not between queues", () => {
    const s1 = concat([PSB, x, PSB, y]);
    const s2 = concat([PSB, y, PSB, z]);
    const file = fileMode({
      events: [],
      records: [
        auxtrace(s1, { idx: 0, tid: -1, cpu: 0 }),
        auxtrace(s1, { idx: 1, tid: -1, cpu: 1 }),
        auxtrace(s2, { idx: 0, tid: -1, cpu: 0 }),
      ],
    });
    const source = bytesSource(file);
    const buffers = auxtraceBuffers(new PerfDataReader(source));
    const [q0, q1] = auxStreams(source, buffers, true);
    assert.deepEqual(auxStreamBytes(source, q0!), concat([PSB, x, PSB, y, PSB, z]));
    assert.deepEqual(auxStreamBytes(source, q1!), s1);
    const [full] = auxStreams(source, buffers, false);
    assert.deepEqual(auxStreamBytes(source, full!), concat([s1, s2]));
  });

  test("per-thread buffers (cpu -1) are queued by idx", () => {
    const file = fileMode({
      events: [],
      records: [
        auxtrace(x, { idx: 0, tid: 41, cpu: -1 }),
        auxtrace(y, { idx: 1, tid: 42, cpu: -1 }),
        auxtrace(z, { idx: 0, tid: 41, cpu: -1 }),
      ],
    });
    const source = bytesSource(file);
    const streams = auxStreams(source, auxtraceBuffers(new PerfDataReader(source)), false);
    assert.deepEqual(
      streams.map((s) => [s.idx, s.cpus, s.tids, s.size]),
      [
        [0, [-1], [41], 15],
        [1, [-1], [42], 10],
      ],
    );
  });
});

describe("files beyond 2 GiB", () => {
  test("a 5 GiB AUXTRACE payload is skipped, its range given, the record after it read at its exact offset", () => {
    const HUGE = 5 * 2 ** 30;
    const head = record(71, 0, new Le().u64(HUGE).u64(0).u64(0).u32(0).u32(7).u32(0).u32(0));
    const after = record(3, 0, new Le().u32(7).u32(7).str("big"));
    const small = fileMode({ events: [], records: [head, after] });
    const payloadAt = small.length - after.length;
    // The file as a source: the small file with HUGE pattern bytes inserted after the AUXTRACE record.
    const size = small.length + HUGE;
    const reads: Array<[number, number]> = [];
    const source: ByteSource = {
      size,
      read(offset, length) {
        reads.push([offset, length]);
        assert.ok(length <= 64 << 20, `read of ${length} bytes`);
        const out = new Uint8Array(length);
        for (let i = 0; i < length; i++) {
          const at = offset + i;
          out[i] = at < payloadAt ? small[at]! : at < payloadAt + HUGE ? at % 251 : small[at - HUGE]!;
        }
        return out;
      },
    };
    // data.size: everything after the header (no events) plus the payload.
    const header = new DataView(small.buffer);
    header.setBigUint64(48, BigInt(small.length - Number(header.getBigUint64(40, true)) + HUGE), true);
    const reader = new PerfDataReader(source);
    const rec = new PerfRecord();
    const seen: Array<[number, number]> = [];
    while (reader.next(rec)) seen.push([rec.type, rec.offset]);
    assert.deepEqual(reader.diagnostics, []);
    assert.deepEqual(seen, [
      [RecordType.Auxtrace, payloadAt - head.length],
      [RecordType.Comm, payloadAt + HUGE],
    ]);
    const [stream] = auxStreams(source, auxtraceBuffers(reader), false);
    assert.deepEqual(stream!.ranges, [{ offset: payloadAt, size: HUGE }]);
    // Streamed in pieces: check the last piece's last byte without holding 5 GiB.
    let last: Uint8Array | undefined;
    let total = 0;
    const cut = { ...stream!, ranges: [{ offset: payloadAt + HUGE - (8 << 20), size: 8 << 20 }] };
    forEachAuxChunk(source, cut, (b) => {
      last = b;
      total += b.length;
    });
    assert.equal(total, 8 << 20);
    assert.equal(last![last!.length - 1], (payloadAt + HUGE - 1) % 251);
    assert.ok(
      reads.every(([, n]) => n <= 4 << 20),
      "bounded reads",
    );
  });
});
