/**
 * DynamoRIO's libipt pevent sideband files (raw perf records, sample type 0x10086,
 * see the corpus README): every record read, with its sample_id, and the perf
 * times converted to TSC bracket the TSC packets of the trace they describe.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { Packet, PacketDecoder, PacketType } from "../../src/packet/index.js";
import {
  bytesSource,
  decodeRecord,
  PerfDataReader,
  PerfRecord,
  perfTimeToTsc,
  RecordType,
  recordTypeName,
  SampleId,
  tscToPerfTime,
} from "../../src/perf/index.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const DIR = "real/dynamorio-drpt2trace";

function records(path: string) {
  const reader = new PerfDataReader(bytesSource(new Uint8Array(readFileSync(path))), {
    peventSampleType: 0x10086,
  });
  const rec = new PerfRecord();
  const sid = new SampleId();
  const out: Array<{
    type: string;
    fields: ReturnType<typeof decodeRecord>["fields"];
    time: bigint;
    cpu: number;
    pid: number;
  }> = [];
  while (reader.next(rec)) {
    const has = reader.sampleId(rec, sid);
    out.push({
      type: recordTypeName(rec.type),
      fields: decodeRecord(rec).fields,
      time: has ? (BigInt(sid.timeHi) << 32n) | BigInt(sid.timeLo) : -1n,
      cpu: has ? sid.cpu : -1,
      pid: has ? sid.pid : -1,
    });
  }
  assert.deepEqual(reader.diagnostics, []);
  return out;
}

function tscPackets(path: string): bigint[] {
  const dec = new PacketDecoder(new Uint8Array(readFileSync(path)));
  const pkt = new Packet();
  const out: bigint[] = [];
  let status = dec.syncForward();
  while (status >= 0) {
    status = dec.next(pkt);
    if (status >= 0 && pkt.type === PacketType.Tsc) out.push(pkt.payload);
  }
  return out;
}

describe("DynamoRIO pevent sideband", { skip: skipUnlessCorpus(DIR) }, () => {
  const conv = { timeShift: 31, timeMult: 581029125n, timeZero: 18444502336406842448n };

  test("test_simple.raw: primary and secondary sideband records", () => {
    const primary = records(corpusPath(DIR, "test_simple.raw/primary.sideband.pevent")!);
    assert.deepEqual(
      primary.map((r) => r.type),
      ["SWITCH", "ITRACE_START", "COMM", "MMAP2", "MMAP2", "AUX", "EXIT"],
    );
    const comm = primary[2]!;
    assert.deepEqual(comm.fields, { pid: 223991, tid: 223991, comm: "hello", exec: true });
    assert.equal(primary[3]!.fields.filename, "/hello");
    assert.equal(primary[3]!.fields.addr, 0x401000n);
    assert.deepEqual(primary[5]!.fields, { auxOffset: 0, auxSize: 2272, flags: 0, flagNames: "" });
    assert.ok(primary.every((r) => r.cpu === 9 && r.pid === 223991));
    // Times only go forward.
    for (let i = 1; i < primary.length; i++) assert.ok(primary[i]!.time >= primary[i - 1]!.time);
    const secondary = records(corpusPath(DIR, "test_simple.raw/secondary.sideband.pevent")!);
    assert.deepEqual(
      secondary.map((r) => r.type),
      ["TIME_CONV", "ID_INDEX", "THREAD_MAP", "CPU_MAP", "COMM"],
    );
    // The secondary file's TIME_CONV carries the very parameters the README gives.
    assert.deepEqual(
      [secondary[0]!.fields.timeShift, secondary[0]!.fields.timeMult, secondary[0]!.fields.timeZero],
      [conv.timeShift, Number(conv.timeMult), conv.timeZero],
    );
  });

  test("the trace's TSCs fall between ITRACE_START and the AUX record, converted", () => {
    const primary = records(corpusPath(DIR, "test_simple.raw/primary.sideband.pevent")!);
    const start = perfTimeToTsc(primary.find((r) => r.type === "ITRACE_START")!.time, conv)!;
    const aux = perfTimeToTsc(primary.find((r) => r.type === "AUX")!.time, conv)!;
    const tscs = tscPackets(corpusPath(DIR, "test_simple.raw/pt.bin")!);
    assert.ok(tscs.length > 0);
    assert.equal(tscs[0], 0x2fa1088fac05e2n);
    for (const t of tscs) assert.ok(start < t && t < aux, t.toString(16));
    // perf's conversions lose at most a nanosecond on the way back.
    for (const r of primary) {
      const back = tscToPerfTime(perfTimeToTsc(r.time, conv)!, conv);
      assert.ok(r.time - back >= 0n && r.time - back <= 1n);
    }
  });

  test("test_simple.tracedir-2aad718: its sideband", () => {
    const sb = records(corpusPath(DIR, "test_simple.tracedir-2aad718/sideband.pevent")!);
    assert.ok(sb.length > 5);
    assert.ok(sb.some((r) => r.type === "COMM" && r.fields.exec === true));
    assert.ok(sb.some((r) => r.type === "ITRACE_START"));
    assert.equal(recordTypeName(RecordType.Mmap2), "MMAP2");
  });
});
