/**
 * Bad input is normal input: cut-off, corrupted and hostile perf.data files give
 * diagnostics naming offsets, never an exception other than PerfError (and that
 * only when the header is unusable), never a read out of bounds, never a hang.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import fc from "fast-check";
import { runPerf } from "../../src/cli/perf/perf.js";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  type ByteSource,
  decodeRecord,
  PerfDataReader,
  PerfError,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
  readTasks,
  SampleId,
} from "../../src/perf/index.js";
import { fileMode, Le, pipeMode, record } from "../../tools/perf/perf-data-writer.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath } from "../corpus.js";
import { sampleFile } from "./sample-file.js";

/** A source that fails the test on any read outside the file. */
function strictSource(bytes: Uint8Array): ByteSource & { reads: number } {
  const s = {
    size: bytes.length,
    reads: 0,
    read(offset: number, length: number) {
      s.reads++;
      if (
        !Number.isInteger(offset) ||
        !Number.isInteger(length) ||
        offset < 0 ||
        length < 0 ||
        offset + length > bytes.length
      ) {
        throw new Error(`read out of bounds: ${offset}+${length} of ${bytes.length}`);
      }
      return bytes.subarray(offset, offset + length);
    },
  };
  return s;
}

/** Everything a consumer does with a file; returns the diagnostics, or "PerfError" when it is refused. */
function consume(bytes: Uint8Array): string[] | "PerfError" {
  const source = strictSource(bytes);
  let reader: PerfDataReader;
  try {
    reader = new PerfDataReader(source);
  } catch (e) {
    if (e instanceof PerfError) return "PerfError";
    throw e;
  }
  const rec = new PerfRecord();
  const sid = new SampleId();
  let n = 0;
  while (reader.next(rec)) {
    assert.ok(++n <= bytes.length / 8 + 10_000, "too many records: a loop?");
    assert.ok(rec.size >= 8 && rec.bytes.length === rec.size);
    reader.sampleId(rec, sid);
    decodeRecord(rec);
    if (rec.type === RecordType.AuxtraceInfo) parseAuxtraceInfo(rec.bytes);
  }
  readTasks(reader);
  for (const snapshot of [false, true]) {
    for (const s of auxStreams(source, auxtraceBuffers(reader), snapshot)) auxStreamBytes(source, s);
  }
  for (const d of reader.diagnostics) assert.ok(Number.isSafeInteger(d.offset) && d.offset >= 0, d.message);
  return reader.diagnostics.map((d) => `${d.offset}: ${d.message}`);
}

const corpusFiles = [
  "real/hase/2018-05/loopy-20180514T145114/perf.data.1",
  "real/quipper-perf-data/perf.data.piped.intel_pt-4.14",
]
  .map((p) => corpusPath(p))
  .filter((p): p is string => p !== undefined)
  .map((p) => new Uint8Array(readFileSync(p)));
const inputs = [fileMode(sampleFile()), pipeMode(sampleFile()), ...corpusFiles];

describe("bad perf.data", () => {
  test("files that are not perf.data are refused with PerfError naming offset 0", () => {
    const be = new Le().raw(new TextEncoder().encode("2ELIFREP")).u64(104).done();
    for (const [bytes, message] of [
      [new Uint8Array(0), /only 0 bytes/],
      [new TextEncoder().encode("hello, this is not perf"), /bad magic/],
      [new TextEncoder().encode("PERFFILE\x68\0\0\0\0\0\0\0"), /version 1/],
      [be, /big-endian/],
      [fileMode(sampleFile()).subarray(0, 60), /header cut short/],
    ] as const) {
      assert.throws(
        () => new PerfDataReader(strictSource(bytes)),
        (e: unknown) => {
          assert.ok(e instanceof PerfError);
          assert.match(e.message, message);
          assert.match(e.message, /at offset 0x/);
          return true;
        },
      );
    }
  });

  test("a record too small for its header stops reading with the offset named", () => {
    const good = record(68, 0, new Le());
    const bad = new Le().u32(3).u16(0).u16(4).done();
    const bytes = pipeMode({ events: [], records: [good, bad, good] });
    const diags = consume(bytes);
    assert.deepEqual(diags, [
      `24: record size 4 is smaller than its 8-byte header: cannot find the next record`,
    ]);
  });

  test("an AUXTRACE payload cut short keeps what is there", () => {
    const bytes = fileMode(sampleFile());
    const cut = bytes.subarray(0, bytes.length - 200); // into the last payload and the feature sections
    const diags = consume(cut) as string[];
    assert.ok(diags.some((d) => /data section .* runs past the end of the file/.test(d)));
    assert.ok(
      diags.some((d) => /AUXTRACE payload of 30 bytes cut short/.test(d)),
      diags.join("\n"),
    );
  });

  test("a HEADER_TRACING_DATA size of 2^31 or more skips to the end, never backwards", () => {
    // CI's fast-check find: the padded size was rounded with `& ~7`, which made it negative.
    const good = record(68, 0, new Le());
    for (const size of [0x8000_0000, 0xffff_fff9, 0xffff_ffff]) {
      const tracing = record(RecordType.HeaderTracingData, 0, new Le().u32(size));
      const diags = consume(pipeMode({ events: [], records: [good, tracing, good] }));
      const padded = Math.ceil(size / 8) * 8;
      assert.deepEqual(diags, [
        `24: HEADER_TRACING_DATA of ${padded} bytes runs past the end of the data: file truncated`,
      ]);
    }
  });

  test("the command: a HEADER_TRACING_DATA of 3 GiB is one line naming its offset, exit 0", () => {
    const good = record(68, 0, new Le());
    const tracing = record(RecordType.HeaderTracingData, 0, new Le().u32(0xc000_0000));
    const dir = mkdtempSync(join(tmpdir(), "ptkit-robust-"));
    try {
      writeFileSync(join(dir, "perf.data"), pipeMode({ events: [], records: [good, tracing, good] }));
      const io = captureIo(dir);
      assert.equal(runPerf(["perf.data"], io, "/nonexistent-home"), 0, io.err.join(""));
      assert.match(
        io.out.join(""),
        /^\[18: HEADER_TRACING_DATA of 3221225472 bytes runs past the end of the data: file truncated\]$/m,
      );
      assert.doesNotMatch(io.err.join(""), /internal error|\n\s+at /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a data section of size 0 (perf record killed) is read to the end of the file", () => {
    const bytes = fileMode(sampleFile()).slice();
    bytes.fill(0, 48, 56);
    const diags = consume(bytes) as string[];
    assert.match(diags[0]!, /^40: data section size is 0/);
  });

  test("a corrupt attribute entry size does not read a large file whole", () => {
    const head = fileMode(sampleFile()).slice();
    const view = new DataView(head.buffer);
    view.setBigUint64(16, 1n << 40n, true); // attr_size
    view.setBigUint64(32, 1n << 41n, true); // attrs.size: two such entries
    // 3 GiB: the sample file, then zeros; no read may be larger than a window.
    const big: ByteSource = {
      size: 3 * 2 ** 30,
      read(offset, length) {
        assert.ok(length <= 64 << 20, `a read of ${length} bytes at ${offset}`);
        const out = new Uint8Array(length);
        if (offset < head.length) out.set(head.subarray(offset, offset + length));
        return out;
      },
    };
    const reader = new PerfDataReader(big);
    assert.deepEqual(reader.events, []);
    assert.ok(
      reader.diagnostics.some(
        (d) => d.offset === 16 && /attribute entries of 1099511627776 bytes/.test(d.message),
      ),
      reader.diagnostics.map((d) => d.message).join("\n"),
    );
  });

  test("every truncation of each file", () => {
    for (const bytes of inputs) {
      const step = Math.max(1, Math.floor(bytes.length / 1500));
      for (let n = 0; n <= bytes.length; n += step) consume(bytes.subarray(0, n));
    }
  });

  test("random corruption (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: inputs.length - 1 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 20 }),
        (which, edits) => {
          const bytes = inputs[which]!.slice();
          for (const [at, v] of edits) bytes[at % bytes.length] = v;
          consume(bytes);
        },
      ),
      { numRuns: 400 },
    );
  });

  test("random records after a valid header (fast-check)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4000 }), fc.boolean(), (tail, pipe) => {
        const head = pipe
          ? pipeMode(sampleFile()).subarray(0, 16)
          : fileMode({ ...sampleFile(), records: [] });
        const bytes = new Uint8Array(head.length + tail.length);
        bytes.set(head);
        bytes.set(tail, head.length);
        if (!pipe) new DataView(bytes.buffer).setUint32(48, bytes.length - 0, true);
        consume(bytes);
      }),
      { numRuns: 300 },
    );
  });
});
