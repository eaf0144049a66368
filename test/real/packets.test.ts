/**
 * ptkit's packet decoder against two independent decoders on real Intel PT captures
 * from the shared corpus (`real/`, see its README): Debian's libipt 2.0.5 through a small
 * dumper (`*.ptref-dump.txt.gz`, `*.ptref-pkt.txt`) and Debian's perf 6.1
 * (`*.perf-report-D.packets.txt.gz`). Skips when the corpus is absent.
 */
// test:quick skips this file: compiles and runs the libipt harness.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { gunzipSync } from "node:zlib";
import { CORPUS_DIR, skipUnlessCorpus } from "../corpus.js";
import {
  type DecodeResult,
  decodeAll,
  firstDifference,
  parsePerfDump,
  perfLines,
  ptrefLine,
  ptrefName,
} from "./ref-format.js";

const H = "real/hase/reference";
const Q = "real/quipper-perf-data/extracted";
const D = "real/dynamorio-drpt2trace";
const K = "real/keeper-intelpt-summary";

/** A raw PT buffer and the path prefix of its libipt references (corpus-relative). */
interface Capture {
  bin: string;
  ref: string;
}

const aux = (dir: string, name: string): Capture => ({ bin: `${dir}/${name}.bin`, ref: `${dir}/${name}` });

const CAPTURES: Capture[] = [
  aux(H, "control_flow-20180404-aux-idx1"),
  aux(H, "control_flow-20180515-aux-idx1"),
  aux(H, "loopy-20180404-aux-idx2"),
  aux(H, "loopy-20180514-aux-idx1"),
  aux(Q, "intel_pt-4.14-aux-idx0"),
  aux(Q, "intel_pt-4.14-aux-idx3"),
  aux(Q, "piped.intel_pt-4.14-aux-idx0"),
  aux(Q, "piped.intel_pt-4.14-aux-idx3"),
  { bin: `${D}/test_simple.raw/pt.bin`, ref: `${D}/reference/test_simple` },
  // 8 junk bytes before the first PSB.
  { bin: `${D}/test_simple.tracedir-2aad718/pt.bin`, ref: `${D}/reference/tracedir-2aad718` },
  { bin: `${K}/traced_data.bin`, ref: `${K}/reference/traced_data` },
];

/**
 * perf dumps: which PERF_RECORD_AUXTRACE buffer (by idx, in dump order) is which AUX
 * extract. `shift`: perf 6.1 reads the piped file's AUX data 16 bytes early (it places
 * the record 16 bytes before where it is), so its buffer is the extract shifted right by
 * 16 bytes, starting with the record's idx/tid/cpu/reserved fields and missing the last
 * 16 bytes. It then dumps no other buffer of that file.
 */
interface PerfDump {
  dump: string;
  buffers: { idx: number; bin: string; shift: number }[];
}

const perfHase = (run: string, name: string, idx: number): PerfDump => ({
  dump: `${H}/${run}.perf-report-D.packets.txt.gz`,
  buffers: [{ idx, bin: `${H}/${name}.bin`, shift: 0 }],
});

const PERF_DUMPS: PerfDump[] = [
  perfHase("control_flow-20180404", "control_flow-20180404-aux-idx1", 1),
  perfHase("control_flow-20180515", "control_flow-20180515-aux-idx1", 1),
  perfHase("loopy-20180404", "loopy-20180404-aux-idx2", 2),
  perfHase("loopy-20180514", "loopy-20180514-aux-idx1", 1),
  {
    dump: `${Q}/perf.data.intel_pt-4.14.perf-report-D.packets.txt.gz`,
    buffers: [
      { idx: 0, bin: `${Q}/intel_pt-4.14-aux-idx0.bin`, shift: 0 },
      { idx: 3, bin: `${Q}/intel_pt-4.14-aux-idx3.bin`, shift: 0 },
    ],
  },
  {
    dump: `${Q}/perf.data.piped.intel_pt-4.14.perf-report-D.packets.txt.gz`,
    buffers: [{ idx: 0, bin: `${Q}/piped.intel_pt-4.14-aux-idx0.bin`, shift: 16 }],
  },
];

const refFiles = (c: Capture): string[] => [c.bin, `${c.ref}.ptref-dump.txt.gz`, `${c.ref}.ptref-pkt.txt`];
const perfFiles = (d: PerfDump): string[] => [d.dump, ...d.buffers.map((b) => b.bin)];

/** The skip reason for the first missing file, or false. */
function skipUnlessAll(paths: string[]): string | false {
  for (const p of paths) {
    const reason = skipUnlessCorpus(p);
    if (reason) return reason;
  }
  return false;
}

const read = (path: string): Buffer => readFileSync(join(CORPUS_DIR, path));
const lines = (text: string): string[] => text.split("\n").filter((l) => l !== "");
const readGzText = (path: string): string => gunzipSync(read(path)).toString("utf8");

const decodedCache = new Map<string, DecodeResult>();
function decoded(bin: string): DecodeResult {
  let d = decodedCache.get(bin);
  if (!d) {
    d = decodeAll(read(bin));
    decodedCache.set(bin, d);
  }
  return d;
}

/** Fail at the first differing line, showing both versions (not the whole dump). */
function assertSameLines(ptkit: readonly string[], reference: readonly string[], what: string): void {
  const i = firstDifference(ptkit, reference);
  if (i < 0) return;
  assert.fail(
    `${what}: first difference at line ${i + 1} (reference has ${reference.length} lines, ptkit ${ptkit.length})\n` +
      `  previous:  ${reference[i - 1] ?? "<start>"}\n` +
      `  reference: ${reference[i] ?? "<end>"}\n` +
      `  ptkit:     ${ptkit[i] ?? "<end>"}`,
  );
}

/** `*.ptref-pkt.txt`: `libipt 2.0 packet counts: pad=45 psb=1 …` then `errors=0 resyncs=0`. */
function parsePktCounts(text: string): { counts: Record<string, number>; errors: number; resyncs: number } {
  const [countsLine = "", statusLine = ""] = lines(text);
  const fields = (line: string) =>
    Object.fromEntries([...line.matchAll(/(\S+)=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
  const status = fields(statusLine);
  assert.ok(countsLine.startsWith("libipt 2.0 packet counts:") && "errors" in status && "resyncs" in status);
  return { counts: fields(countsLine), errors: status.errors!, resyncs: status.resyncs! };
}

test("the corpus holds every real capture and its references", { skip: skipUnlessCorpus("real") }, () => {
  const wanted = [...CAPTURES.flatMap(refFiles), ...PERF_DUMPS.flatMap(perfFiles)];
  const missing = wanted.filter((p) => skipUnlessCorpus(p));
  assert.deepEqual(missing, [], `missing under ${CORPUS_DIR}`);
});

describe("packets match libipt 2.0.5 on real captures", () => {
  for (const c of CAPTURES) {
    test(c.bin, { skip: skipUnlessAll(refFiles(c)) }, (t) => {
      const { packets, errors, resyncs } = decoded(c.bin);

      const reference = lines(readGzText(`${c.ref}.ptref-dump.txt.gz`));
      assertSameLines(packets.map(ptrefLine), reference, `${c.ref}.ptref-dump.txt.gz`);

      const ref = parsePktCounts(read(`${c.ref}.ptref-pkt.txt`).toString("utf8"));
      const counts: Record<string, number> = {};
      for (const { pkt } of packets) {
        const name = ptrefName(pkt);
        counts[name] = (counts[name] ?? 0) + 1;
      }
      assert.deepEqual(counts, ref.counts, "packet counts per type");
      assert.deepEqual({ errors, resyncs }, { errors: ref.errors, resyncs: ref.resyncs });
      t.diagnostic(`${packets.length} packets match, errors=${errors} resyncs=${resyncs}`);
    });
  }
});

describe("packets match perf report -D on real captures", () => {
  for (const d of PERF_DUMPS) {
    test(d.dump, { skip: skipUnlessAll(perfFiles(d)) }, (t) => {
      const blocks = parsePerfDump(readGzText(d.dump));
      assert.deepEqual(
        blocks.map((b) => b.idx),
        d.buffers.map((b) => b.idx),
        "AUXTRACE buffers in the dump",
      );
      d.buffers.forEach(({ idx, bin, shift }, i) => {
        const block = blocks[i]!;
        const buf = read(bin);
        assert.equal(block.bytes.length, buf.length, `${bin}: perf's buffer size`);
        assert.ok(
          Buffer.from(block.bytes.subarray(shift)).equals(buf.subarray(0, buf.length - shift)),
          `${bin}: perf's bytes are the extract shifted by ${shift}`,
        );
        const reference = block.lines
          .filter((l) => l.offset >= shift)
          .map((l) => `${(l.offset - shift).toString(16).padStart(8, "0")} ${l.size} ${l.desc}`);
        assertSameLines(
          perfLines(decoded(bin).packets, buf.length - shift),
          reference,
          `${d.dump} idx ${idx}`,
        );
        t.diagnostic(`${bin}: ${reference.length} perf packets match`);
      });
    });
  }
});
