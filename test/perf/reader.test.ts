/** The perf.data reader on a synthetic file with every record kind, in file and pipe mode. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  bytesSource,
  decodeRecord,
  type FieldValue,
  PerfDataReader,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
  recordTypeName,
  SampleId,
} from "../../src/perf/index.js";
import { concat, fileMode, pipeMode } from "../../tools/perf/perf-data-writer.js";
import { PtFile } from "../../tools/perf/pt-file.js";
import { PAYLOAD_0A, PAYLOAD_0B, PAYLOAD_1, sampleFile } from "./sample-file.js";

interface Seen {
  name: string;
  fields: Record<string, FieldValue>;
  sid?: { pid: number; tid: number; time: number; cpu: number; id: number; event: number };
}

function readAll(bytes: Uint8Array): { reader: PerfDataReader; seen: Seen[] } {
  const reader = new PerfDataReader(bytesSource(bytes));
  const rec = new PerfRecord();
  const sid = new SampleId();
  const seen: Seen[] = [];
  while (reader.next(rec)) {
    if (rec.type === RecordType.HeaderAttr || rec.type === RecordType.HeaderFeature) continue;
    const s: Seen = { name: recordTypeName(rec.type), fields: decodeRecord(rec).fields };
    if (reader.sampleId(rec, sid)) {
      s.sid = { pid: sid.pid, tid: sid.tid, time: sid.time, cpu: sid.cpu, id: sid.id, event: sid.event };
    }
    seen.push(s);
  }
  return { reader, seen };
}

describe("a synthetic perf.data", () => {
  const built = sampleFile();
  const file = readAll(fileMode(built));
  const pipe = readAll(pipeMode(built));

  test("file and pipe mode give the same records, events and features", () => {
    assert.equal(file.reader.header.pipe, false);
    assert.equal(pipe.reader.header.pipe, true);
    assert.deepEqual(pipe.seen, file.seen);
    assert.deepEqual(file.reader.diagnostics, []);
    assert.deepEqual(pipe.reader.diagnostics, []);
    for (const { reader } of [file, pipe]) {
      assert.deepEqual(
        reader.events.map((e) => [e.attr.type, e.attr.config, e.attr.sampleType, e.attr.sampleIdAll, e.ids]),
        [
          [8, 0x300e601n, 0x10086, true, [10, 11]],
          [1, 9n, 0x10087, true, [20]],
        ],
      );
      assert.equal(reader.features.hostname, "testhost");
      assert.equal(reader.features.cpuid, "GenuineIntel,6,94,3");
      assert.deepEqual(reader.features.nrcpus, { available: 4, online: 2 });
    }
  });

  test("every record's fields", () => {
    const by = (name: string) => file.seen.find((s) => s.name === name)!;
    assert.deepEqual(by("COMM").fields, { pid: 100, tid: 100, comm: "ls", exec: true });
    assert.deepEqual(by("MMAP2").fields, {
      pid: 100,
      tid: 101,
      addr: 0x400000n,
      len: 0x1000n,
      pgoff: 0n,
      buildId: "0102030405060708090a0b0c0d0e0f1011121314",
      prot: 5,
      flags: 2,
      filename: "/bin/ls",
    });
    assert.deepEqual(by("FORK").fields, { pid: 102, ppid: 100, tid: 102, ptid: 101, time: 1002n });
    assert.deepEqual(by("SWITCH").fields, { out: true, preempt: true });
    assert.deepEqual(by("SWITCH_CPU_WIDE").fields, {
      nextPrevPid: 0,
      nextPrevTid: 0,
      out: false,
      preempt: false,
    });
    assert.deepEqual(by("AUX").fields, {
      auxOffset: 0x2000,
      auxSize: 0x800,
      flags: 5,
      flagNames: "truncated,partial",
    });
    assert.deepEqual(by("ITRACE_START").fields, { pid: 100, tid: 101 });
    assert.deepEqual(by("LOST").fields, { id: 10, lost: 3 });
    assert.deepEqual(by("LOST_SAMPLES").fields, { lost: 7 });
    assert.deepEqual(by("KSYMBOL").fields, {
      addr: 0xffffffffc0000000n,
      len: 0x100,
      ksymType: 1,
      flags: 0,
      name: "bpf_prog_x",
    });
    assert.deepEqual(by("TEXT_POKE").fields, {
      addr: 0xffffffff81000000n,
      oldLen: 2,
      newLen: 2,
      oldBytes: "6690",
      newBytes: "eb05",
    });
    assert.equal(by("TIME_CONV").fields.capUserTimeZero, true);
    assert.equal(by("TIME_CONV").fields.timeZero, 0xfffffffd108e9db0n);
    assert.deepEqual(by("AUXTRACE_ERROR").fields, {
      type: 1,
      code: 5,
      cpu: 0,
      pid: 100,
      tid: 101,
      fmt: 1,
      ip: 0x401000n,
      time: 1234n,
      msg: "overflow packet",
    });
    assert.deepEqual(by("ID_INDEX").fields, { nr: 1 });
    assert.deepEqual(by("UNKNOWN(200)").fields, {});
    assert.deepEqual(by("AUXTRACE").fields, {
      size: 100,
      offset: 0,
      reference: 0x1234n,
      idx: 0,
      tid: 101,
      cpu: 0,
    });
  });

  test("sample_id trailers, matched to their event by id", () => {
    const comm = file.seen.find((s) => s.name === "COMM")!;
    assert.deepEqual(comm.sid, { pid: 100, tid: 101, time: 1000, cpu: 2, id: 10, event: 0 });
    const cpuWide = file.seen.find((s) => s.name === "SWITCH_CPU_WIDE")!;
    assert.deepEqual(cpuWide.sid, { pid: 100, tid: 101, time: 1004, cpu: 3, id: 20, event: 1 });
    // perf's own records carry none.
    assert.equal(file.seen.find((s) => s.name === "AUXTRACE")!.sid, undefined);
  });

  test("reading again after rewind() adds no events or features", () => {
    const reader = new PerfDataReader(bytesSource(pipeMode(built)));
    const rec = new PerfRecord();
    for (let pass = 0; pass < 3; pass++) {
      reader.rewind();
      let n = 0;
      while (reader.next(rec)) n++;
      assert.equal(n, built.records.length + built.events.length + built.features!.size);
      assert.equal(reader.events.length, 2);
      assert.equal(reader.features.sections.length, 3);
    }
  });

  test("an older perf's shorter AUXTRACE_INFO", () => {
    const reader = new PerfDataReader(bytesSource(fileMode(built)));
    const rec = new PerfRecord();
    while (reader.next(rec) && rec.type !== RecordType.AuxtraceInfo);
    const info = parseAuxtraceInfo(rec.bytes)!;
    assert.equal(info.typeName, "intel_pt");
    assert.equal(info.intelPt?.perCpuMmaps, 1n);
    assert.equal(info.intelPt?.timeShift, 31n);
    assert.equal(info.intelPt?.mtcBit, undefined);
    assert.equal(info.intelPt?.filter, undefined);
  });

  test("Intel PT streams per queue, in file order", () => {
    for (const bytes of [fileMode(built), pipeMode(built)]) {
      const source = bytesSource(bytes);
      const streams = auxStreams(source, auxtraceBuffers(new PerfDataReader(source)), false);
      assert.deepEqual(
        streams.map((s) => [s.idx, s.cpus, s.tids, s.buffers.length]),
        [
          [0, [0], [101], 2],
          [1, [1], [101], 1],
        ],
      );
      assert.deepEqual(auxStreamBytes(source, streams[0]!), concat([PAYLOAD_0A, PAYLOAD_0B]));
      assert.deepEqual(auxStreamBytes(source, streams[1]!), PAYLOAD_1);
    }
  });
});

describe("the test files' writer (tools/perf/pt-file.ts)", () => {
  test("MMAP2 with a build id of 20 or 16 bytes: the id's size, the id, then prot, flags and the path where perf reads them", () => {
    const id20 = "0102030405060708090a0b0c0d0e0f1011121314";
    const id16 = "a1a2a3a4a5a6a7a8a9aaabacadaeafb0";
    const file = new PtFile()
      .mmap2(100, 0x400000n, 0x1000n, 0n, "/bin/twenty", 1000n, id20)
      .mmap2(100, 0x500000n, 0x1000n, 0n, "/bin/sixteen", 1001n, id16);
    const mmaps = readAll(fileMode(file.built())).seen.filter((s) => s.name === "MMAP2");
    assert.deepEqual(
      mmaps.map((m) => [m.fields.buildId, m.fields.prot, m.fields.flags, m.fields.filename]),
      [
        [id20, 5, 2, "/bin/twenty"],
        [id16, 5, 2, "/bin/sixteen"],
      ],
    );
  });
});
