/**
 * COMPRESSED and COMPRESSED2 records (perf record -z): the records inside come out
 * as if uncompressed, also when one straddles two compressed records; bad
 * Zstandard data is a diagnostic. Frames are made with the zstd command (skipped
 * without it).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { frameWindowSize } from "../../src/perf/compressed.js";
import {
  bytesSource,
  decodeRecord,
  PerfDataReader,
  PerfRecord,
  RecordType,
  recordTypeName,
} from "../../src/perf/index.js";
import { concat, fileMode, Le, pipeMode, record } from "../../tools/perf/perf-data-writer.js";
import { sampleFile } from "./sample-file.js";

const hasZstd = spawnSync("zstd", ["--version"]).status === 0;

function zstd(data: Uint8Array): Uint8Array {
  const r = spawnSync("zstd", ["-q", "-c", "--content-size"], { input: data });
  assert.equal(r.status, 0, String(r.stderr));
  return new Uint8Array(r.stdout);
}

function listing(bytes: Uint8Array): { lines: string[]; diags: string[] } {
  const reader = new PerfDataReader(bytesSource(bytes));
  const rec = new PerfRecord();
  const lines: string[] = [];
  while (reader.next(rec)) {
    if ([RecordType.Compressed, RecordType.Compressed2, RecordType.HeaderAttr].includes(rec.type as never))
      continue;
    const f = decodeRecord(rec).fields;
    lines.push(
      `${recordTypeName(rec.type)} ${JSON.stringify(f, (_, v) => (typeof v === "bigint" ? v.toString() : v))}`,
    );
  }
  return { lines, diags: reader.diagnostics.map((d) => `${d.offset}: ${d.message}`) };
}

describe("compressed records", { skip: hasZstd ? false : "the zstd command is not installed" }, () => {
  // The kernel records of the sample file (not AUXTRACE: perf never compresses those).
  const plain = sampleFile().records.filter((r) => r[0] !== 71 && r[0]! < 64);
  const stream = concat(plain);
  const cut = plain[0]!.length + 5; // inside the second record

  test("records inside COMPRESSED, one straddling two of them, read as if uncompressed", () => {
    const compressed = [
      record(81, 0, zstd(stream.subarray(0, cut))),
      record(81, 0, zstd(stream.subarray(cut))),
    ];
    const want = listing(fileMode({ events: sampleFile().events, records: plain }));
    for (const mode of [fileMode, pipeMode]) {
      const got = listing(mode({ events: sampleFile().events, records: compressed }));
      assert.deepEqual(got.diags, []);
      assert.deepEqual(got.lines, want.lines);
    }
  });

  test("one frame cut into records anywhere (perf flushes, it does not end frames)", () => {
    const frame = zstd(stream);
    const want = listing(fileMode({ events: sampleFile().events, records: plain })).lines;
    for (const at of [1, 5, 13, Math.floor(frame.length / 2), frame.length - 3]) {
      const records = [record(81, 0, frame.subarray(0, at)), record(81, 0, frame.subarray(at))];
      const got = listing(pipeMode({ events: sampleFile().events, records }));
      assert.deepEqual(got.diags, [], `cut at ${at}`);
      assert.deepEqual(got.lines, want);
    }
  });

  test("COMPRESSED2: the data size, then the frame padded to 8 bytes", () => {
    const frame = zstd(stream);
    const body = new Le().u64(frame.length).raw(frame);
    while ((body.length + 8) % 8) body.u8(0);
    const got = listing(fileMode({ events: sampleFile().events, records: [record(83, 0, body)] }));
    assert.deepEqual(got.diags, []);
    assert.equal(got.lines.length, plain.length);
  });

  test("bad Zstandard data and absurd declared sizes are diagnostics; reading goes on", () => {
    const frame = zstd(stream).slice();
    const corrupt = frame.slice();
    corrupt.fill(0xff, 12, 40);
    const huge = Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0x10]);
    assert.equal(frameWindowSize(huge), 2 ** 60);
    const got = listing(
      pipeMode({
        events: [],
        records: [
          record(81, 0, corrupt),
          record(81, 0, huge),
          record(81, 0, new Le().u64(1)),
          record(68, 0, new Le()),
        ],
      }),
    );
    assert.deepEqual(got.lines, ["FINISHED_ROUND {}"]);
    assert.equal(got.diags.length, 3);
    assert.match(got.diags[0]!, /^16: COMPRESSED record: bad Zstandard data/);
    assert.match(got.diags[1]!, /frame needs a window of \d+ bytes \(more than 67108864\)/);
    assert.match(got.diags[2]!, /not a Zstandard frame/);
  });
});
