/**
 * The HASE perf.data captures (full-trace and snapshot mode): record counts and
 * AUXTRACE_INFO words as the corpus's extract.txt lists them, and the Intel PT
 * streams equal its `*-aux-idxN.bin` byte for byte.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  bytesSource,
  cpuFromCpuid,
  intelPtDecodeParams,
  PerfDataReader,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
  recordTypeName,
} from "../../src/perf/index.js";
import { corpusPath, skipUnlessCorpus } from "../corpus.js";

const DIR = "real/hase";

interface Extract {
  file: string;
  priv: bigint[];
  records: Map<string, number>;
  streams: Array<{ idx: number; cpu: number; tid: number; bytes: number; bin: string }>;
}

/** The blocks of reference/*.extract.txt. */
function extracts(): Extract[] {
  const out: Extract[] = [];
  const dir = corpusPath(DIR, "reference")!;
  for (const name of ["control_flow-20180404", "control_flow-20180515", "loopy-20180404", "loopy-20180514"]) {
    const text = readFileSync(`${dir}/${name}.extract.txt`, "utf8");
    const file = /^file=hase\/(\S+)/m.exec(text)![1]!;
    const priv = /priv=\[([^\]]*)\]/
      .exec(text)![1]!
      .split(",")
      .map((s) => BigInt(s.trim().replace(/'/g, "")));
    const records = new Map(
      /^records: (.*)$/m
        .exec(text)![1]!
        .split(", ")
        .map((kv) => [kv.split("=")[0]!, Number(kv.split("=")[1])] as [string, number]),
    );
    const streams = [
      ...text.matchAll(
        /^idx (\d+): \d+ AUXTRACE chunks, cpu=\[(\d+)\] tid=\[(\d+)\], (\d+) bytes -> hase\/(\S+)$/gm,
      ),
    ].map((m) => ({
      idx: Number(m[1]),
      cpu: Number(m[2]),
      tid: Number(m[3]),
      bytes: Number(m[4]),
      bin: m[5]!,
    }));
    out.push({ file, priv, records, streams });
  }
  return out;
}

describe("HASE perf.data captures", { skip: skipUnlessCorpus(DIR, "reference") }, () => {
  for (const want of corpusPath(DIR, "reference") ? extracts() : []) {
    test(want.file, () => {
      const source = bytesSource(new Uint8Array(readFileSync(corpusPath(DIR, want.file)!)));
      const reader = new PerfDataReader(source);
      const rec = new PerfRecord();
      const counts = new Map<string, number>();
      let info: ReturnType<typeof parseAuxtraceInfo>;
      while (reader.next(rec)) {
        const name = recordTypeName(rec.type);
        counts.set(name, (counts.get(name) ?? 0) + 1);
        if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes);
      }
      assert.deepEqual(reader.diagnostics, []);
      assert.deepEqual(new Map([...counts].sort()), new Map([...want.records].sort()));
      assert.ok(info?.intelPt);
      assert.deepEqual(info.priv, want.priv);
      const snapshot = info.intelPt.snapshotMode === 1n;
      assert.equal(snapshot, want.file.includes("2018-05"));
      const streams = auxStreams(source, auxtraceBuffers(reader), snapshot);
      assert.deepEqual(
        streams.map((s) => ({ idx: s.idx, cpu: s.cpus[0], tid: s.tids[0], bytes: s.size })),
        want.streams.map(({ bin: _, ...s }) => s),
      );
      for (const [i, s] of streams.entries()) {
        const ref = readFileSync(corpusPath(DIR, want.streams[i]!.bin)!);
        assert.ok(Buffer.from(auxStreamBytes(source, s)).equals(ref), `idx ${s.idx}`);
      }
      // What ptdump/ptxed need (the README's decode of loopy uses --cpu 6/94/3).
      const params = intelPtDecodeParams(info.intelPt, reader.events);
      assert.equal(params.mtcFreq, snapshot ? 0 : 3);
      assert.equal(params.tsc, true);
      assert.match(cpuFromCpuid(reader.features.cpuid) ?? "", snapshot ? /^6\/61\/4$/ : /^6\/94\/3$/);
    });
  }
});
