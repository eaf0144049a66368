/**
 * The quipper perf.data files (normal and piped): every record agrees with
 * quipper's own parse (`*.pb_text`: type, size, misc, fields, sample_id), and the
 * extracted Intel PT streams equal the corpus's extractions byte for byte.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  bytesSource,
  decodeRecord,
  PerfDataReader,
  PerfRecord,
  RecordType,
  SampleId,
} from "../../src/perf/index.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";
import { pbEvents } from "./pb-text.js";

const DIR = "real/quipper-perf-data";
const FILES = [
  {
    file: "perf.data.intel_pt-4.14",
    pb: "perf.data.intel_pt-4.14.pb_text",
    aux: "intel_pt-4.14",
    pipe: false,
  },
  {
    file: "perf.data.piped.intel_pt-4.14",
    pb: "perf.data.piped.intel_pt-4.14.pr.out.pb_text",
    aux: "piped.intel_pt-4.14",
    pipe: true,
  },
];

/** quipper's name for each record type's body. */
const BODY: Record<number, string> = {
  [RecordType.Mmap]: "mmap_event",
  [RecordType.Mmap2]: "mmap_event",
  [RecordType.Comm]: "comm_event",
  [RecordType.Exit]: "exit_event",
  [RecordType.Fork]: "fork_event",
  [RecordType.Sample]: "sample_event",
  [RecordType.Aux]: "aux_event",
  [RecordType.ItraceStart]: "itrace_start_event",
  [RecordType.SwitchCpuWide]: "context_switch_event",
  [RecordType.Auxtrace]: "auxtrace_event",
  [RecordType.TimeConv]: "time_conv_event",
};

const u32 = (n: number) => String(n >>> 0);
const str = (v: unknown) => String(v);

/** Our record in quipper's terms: `path: value` for the fields both have. */
function ours(reader: PerfDataReader, rec: PerfRecord, sid: SampleId): Map<string, string> {
  const m = new Map<string, string>([
    ["header.type", str(rec.type)],
    ["header.misc", str(rec.misc)],
    ["header.size", str(rec.size)],
  ]);
  const body = BODY[rec.type];
  if (!body) return m;
  const f = decodeRecord(rec).fields;
  const put = (k: string, v: unknown) =>
    m.set(`${body}.${k}`, typeof v === "number" && k.endsWith("id") ? u32(v) : str(v));
  for (const k of [
    "pid",
    "tid",
    "ppid",
    "ptid",
    "filename",
    "comm",
    "idx",
    "cpu",
    "maj",
    "min",
    "ino",
    "prot",
  ]) {
    if (k in f) put(k, f[k]);
  }
  if (rec.type === RecordType.Mmap2) {
    put("ino_generation", f.inoGeneration);
    put("flags", f.flags);
  }
  if ("addr" in f) put("start", f.addr);
  if ("len" in f) put("len", f.len);
  if ("pgoff" in f) put("pgoff", f.pgoff);
  if (rec.type === RecordType.Exit) put("fork_time_ns", f.time);
  if (rec.type === RecordType.SwitchCpuWide) {
    put("is_out", f.out);
    put("next_prev_pid", u32(f.nextPrevPid as number));
    put("next_prev_tid", u32(f.nextPrevTid as number));
  }
  if (rec.type === RecordType.Aux) {
    put("aux_offset", f.auxOffset);
    put("aux_size", f.auxSize);
    const flags = f.flags as number;
    put("is_truncated", (flags & 1) !== 0);
    put("is_overwrite", (flags & 2) !== 0);
    put("is_partial", (flags & 4) !== 0);
  }
  if (rec.type === RecordType.Auxtrace) {
    for (const k of ["size", "offset", "reference"]) put(k, f[k]);
    put("tid", u32(f.tid as number));
    put("cpu", u32(f.cpu as number));
  }
  if (rec.type === RecordType.TimeConv) {
    put("time_shift", f.timeShift);
    put("time_mult", f.timeMult);
    put("time_zero", f.timeZero);
  }
  if (reader.sampleId(rec, sid)) {
    const prefix = rec.type === RecordType.Sample ? "" : "sample_info.";
    put(`${prefix}pid`, u32(sid.pid));
    put(`${prefix}tid`, u32(sid.tid));
    put(`${prefix}sample_time_ns`, (BigInt(sid.timeHi) << 32n) | BigInt(sid.timeLo));
    put(`${prefix}id`, sid.id);
    put(`${prefix}cpu`, u32(sid.cpu));
    if (sid.fromSample) {
      put("ip", (BigInt(sid.ipHi) << 32n) | BigInt(sid.ipLo));
      put("period", sid.period);
    }
  }
  return m;
}

/** The pb_text keys compared (md5 prefixes, trace bytes and quipper's own timestamps are not perf.data fields). */
const IGNORED = /(md5_prefix|root_path|trace_data|^timestamp|unparsed_binary_blob|auxtrace_info_event)/;

describe("quipper perf.data files", { skip: skipUnlessCorpus(DIR) }, () => {
  for (const { file, pb, aux, pipe } of FILES) {
    test(`${file}: every record as quipper parsed it`, () => {
      const bytes = new Uint8Array(readFileSync(corpusPath(DIR, file)!));
      const reader = new PerfDataReader(bytesSource(bytes));
      assert.equal(reader.header.pipe, pipe);
      const expected = pbEvents(readFileSync(corpusPath(DIR, pb)!, "utf8"));
      const rec = new PerfRecord();
      const sid = new SampleId();
      const got: Array<Map<string, string>> = [];
      while (reader.next(rec)) {
        // quipper keeps pipe-mode header records apart from the events.
        if (rec.type === RecordType.HeaderAttr || rec.type === RecordType.HeaderFeature) continue;
        got.push(ours(reader, rec, sid));
      }
      assert.deepEqual(reader.diagnostics, []);
      assert.equal(got.length, expected.length);
      // quipper sorts the events of a file by time; match each to an unused record of ours.
      const used = new Set<number>();
      let compared = 0;
      expected.forEach((e, i) => {
        const keys = [...e].filter(([key]) => !IGNORED.test(key));
        const match = (m: Map<string, string>) =>
          keys.every(([key, value]) => {
            const mine = m.get(key);
            // quipper leaves out the cpu and id of samples that do not have them.
            return mine === value || (mine === undefined && /(cpu|id)$/.test(key) && value === "0");
          });
        const at = pipe ? (match(got[i]!) ? i : -1) : got.findIndex((m, k) => !used.has(k) && match(m));
        assert.ok(at >= 0, `quipper's event ${i} (${[...e].join(" ")}) has no matching record`);
        used.add(at);
        compared += keys.length;
      });
      assert.ok(compared > 2500, `${compared} fields compared`);
      assert.equal(reader.events.length, 4);
      assert.equal(reader.features.cpuid, "GenuineIntel,6,78,3");
      assert.equal(reader.events[0]!.name, "intel_pt//");
    });

    test(`${file}: the Intel PT streams equal the corpus's extractions`, () => {
      const source = bytesSource(new Uint8Array(readFileSync(corpusPath(DIR, file)!)));
      const reader = new PerfDataReader(source);
      const streams = auxStreams(source, auxtraceBuffers(reader), false);
      assert.deepEqual(
        streams.map((s) => [s.idx, s.cpus]),
        [
          [0, [0]],
          [3, [3]],
        ],
      );
      for (const s of streams) {
        const want = readFileSync(join(corpusPath(DIR, "extracted")!, `${aux}-aux-idx${s.idx}.bin`));
        assert.ok(Buffer.from(auxStreamBytes(source, s)).equals(want), `idx ${s.idx}`);
      }
    });
  }

  test("the file's build ids are the ones perf buildid-list printed", () => {
    const reader = new PerfDataReader(
      bytesSource(new Uint8Array(readFileSync(corpusPath(DIR, FILES[0]!.file)!))),
    );
    const want = readFileSync(corpusPath(DIR, "perf.data.intel_pt-4.14.buildids")!, "utf8")
      .trim()
      .split("\n");
    assert.deepEqual(
      reader.features.buildIds?.map((b) => `${b.buildId} ${b.filename}`),
      want,
    );
  });
});
