/**
 * `ptkit perf` holds a stream a window at a time (TraceBytes): tiny windows give the
 * same output as one window over the whole stream, on the HASE and quipper captures
 * and on a synthetic file whose trace (a loop with calls, CYC/MTC timing, a PSB every
 * 2 KiB) is split over AUXTRACE records, read into fresh buffers or into reused
 * ones (readRangeInto); and the reads stay window-sized.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { runPerf } from "../../src/cli/perf/perf.js";
import { nodeIo } from "../../src/node/io.js";
import { isPsbAt, Packet, PacketDecoder, TraceBytes } from "../../src/packet/index.js";
import {
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
  bytesSource,
  PerfDataReader,
  readStream,
  streamSource,
} from "../../src/perf/index.js";
import { fileMode } from "../../tools/perf/perf-data-writer.js";
import { PtFile, TRACE_TSC } from "../../tools/perf/pt-file.js";
import { captureIo } from "../conformance/ptt.js";
import { corpusPath } from "../corpus.js";
import { EMPTY_HOME } from "./home.js";
import { execIps, loopProgram, traceOf } from "./pt-file.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-windows-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const BASE = 0x400000n;
const { code, exec } = loopProgram(BASE, 20000);
const trace = traceOf(exec);
writeFileSync(join(dir, "loop"), code);
const file = new PtFile()
  .comm(100, "loop", TRACE_TSC - 100n)
  .mmap2(100, BASE, 0x1000n, 0n, "/bin/loop", TRACE_TSC - 50n)
  .itraceStart(100, 100, TRACE_TSC - 10n)
  .trace(trace, 0, 1000);
const perfData = fileMode(file.built());
writeFileSync(join(dir, "perf.data"), perfData);
// The same trace with five stretches of garbage: errors, and resynchronisation at the next PSB.
const corrupt = trace.slice();
for (const at of [3000, 7000, 7100, 12000, 15500])
  for (let i = 0; i < 40; i++) corrupt[at + i] = (i * 37 + at) & 0xff;
writeFileSync(
  join(dir, "corrupt.data"),
  fileMode(
    new PtFile()
      .comm(100, "loop", TRACE_TSC - 100n)
      .mmap2(100, BASE, 0x1000n, 0n, "/bin/loop", TRACE_TSC - 50n)
      .itraceStart(100, 100, TRACE_TSC - 10n)
      .trace(corrupt, 0, 999)
      .built(),
  ),
);

/** `ptkit perf args` in `cwd`; `into`: reading into TraceBytes' own buffers (the process's readRangeInto). */
function run(cwd: string, args: string[], windowSize?: number, into = false): string {
  const io = captureIo(cwd);
  if (into) io.readRangeInto = nodeIo(cwd).readRangeInto;
  const code = runPerf(args, io, EMPTY_HOME, { windowSize });
  return `${io.out.join("")}${io.err.join("")}exit ${code}\n`;
}

describe("windows over a synthetic trace", () => {
  test("the trace has many PSBs and decodes to the execution", () => {
    let psbs = 0;
    for (let p = 0; p < trace.length; p++) if (isPsbAt(trace, p, trace.length)) psbs++;
    assert.ok(psbs >= 10, `${psbs} PSBs`);
    const out = run(dir, ["--elf", "loop", "perf.data"]);
    const ips = out.split("\n").filter((l) => /^[0-9a-f]{16}$/.test(l));
    assert.deepEqual(ips, execIps(exec));
    assert.doesNotMatch(out, /error|warning/);
  });

  for (const args of [[], ["--jsonl"], ["--branches"]]) {
    test(`tiny windows give the same output: ${args.join(" ") || "instructions"}`, () => {
      const whole = run(dir, [...args, "--elf", "loop", "perf.data"]);
      for (const size of [1, 100, 2048, 5000]) {
        assert.equal(run(dir, [...args, "--elf", "loop", "perf.data"], size), whole, `window ${size}`);
      }
      // Into reused buffers (each read a system call of its own: not one-byte windows, they would be slow).
      for (const size of [16, 2048]) {
        const into = run(dir, [...args, "--elf", "loop", "perf.data"], size, true);
        assert.equal(into, whole, `window ${size}, read into reused buffers`);
      }
    });
  }

  test("a corrupt trace gives the same errors and instructions in tiny windows", () => {
    const whole = run(dir, ["--elf", "loop", "corrupt.data"]);
    assert.equal(whole.match(/^\[[0-9a-f]+: .* at tsc /gm)?.length, 4);
    for (const size of [1, 64, 100, 1000, 3000])
      assert.equal(run(dir, ["--elf", "loop", "corrupt.data"], size), whole, `window ${size}`);
    for (const size of [64, 1000])
      assert.equal(run(dir, ["--elf", "loop", "corrupt.data"], size, true), whole, `window ${size}, into`);
  });

  test("the stream is read a window at a time across its AUXTRACE records, in window-sized reads", () => {
    const source = bytesSource(perfData);
    const [stream] = auxStreams(source, auxtraceBuffers(new PerfDataReader(source)), false);
    assert.ok(stream && stream.ranges.length > 5);
    const whole = auxStreamBytes(source, stream);
    let largest = 0;
    const read = (at: number, n: number) => {
      largest = Math.max(largest, n);
      return readStream(source, stream, at, n);
    };
    const bytes = TraceBytes.read({ size: stream.size, read }, 1000);
    // Every packet as over the stream's bytes in one piece.
    const packets = (dec: PacketDecoder) => {
      const pkt = new Packet();
      const out: string[] = [];
      assert.equal(dec.syncForward(), 0);
      for (let at = dec.pos; dec.next(pkt) > 0; at = dec.pos) {
        out.push(`${at} ${pkt.type}`);
        dec.bytes.release(dec.pos);
      }
      return out;
    };
    assert.deepEqual(packets(new PacketDecoder(bytes)), packets(new PacketDecoder(whole)));
    assert.ok(whole.length > 5 * 1000, `${whole.length} bytes`);
    assert.ok(largest <= 1000, `largest read ${largest}`);
    // Read into TraceBytes' buffers across the records: the same packets, window-sized reads of the file.
    largest = 0;
    let reads = 0;
    const into = {
      size: source.size,
      read: source.read,
      readInto: (offset: number, buf: Uint8Array, at: number, n: number) => {
        largest = Math.max(largest, n);
        reads++;
        buf.set(perfData.subarray(offset, offset + n), at);
        return n;
      },
    };
    const reused = TraceBytes.read(streamSource(into, stream), 1000);
    assert.deepEqual(packets(new PacketDecoder(reused)), packets(new PacketDecoder(whole)));
    assert.ok(reads >= stream.ranges.length, `${reads} reads`);
    assert.ok(largest <= 1000, `largest read ${largest}`);
  });
});

const HASE = "real/hase";
const CORPUS_CASES: Array<[string, string[]]> = [
  [
    HASE,
    [
      "--symfs",
      "2018-05/control_flow-20180515T180451/binaries",
      "2018-05/control_flow-20180515T180451/perf.data.1",
    ],
  ],
  [HASE, ["--symfs", "2018-05/loopy-20180514T145114/binaries", "2018-05/loopy-20180514T145114/perf.data.1"]],
  [
    HASE,
    [
      "--elf",
      "2018-04-04/control_flow/control_flow",
      "2018-04-04/control_flow/control_flow-20180404T163033.perf",
    ],
  ],
  [HASE, ["--elf", "2018-04-04/loopy/loopy", "2018-04-04/loopy/loopy-20180404T162955.perf"]],
  ["real/quipper-perf-data", ["perf.data.intel_pt-4.14"]],
  ["real/quipper-perf-data", ["perf.data.piped.intel_pt-4.14"]],
];

describe("windows over the corpus captures", () => {
  for (const [where, args] of CORPUS_CASES) {
    const cwd = corpusPath(where);
    const skip =
      cwd && corpusPath(where, args.at(-1)!) ? false : `corpus entry ${where}/${args.at(-1)} is absent`;
    test(args.at(-1)!, { skip }, () => {
      for (const mode of [[], ["--jsonl"], ["--branches"]]) {
        const whole = run(cwd!, [...mode, ...args]);
        for (const size of [1, 16, 64, 100, 1000])
          assert.equal(run(cwd!, [...mode, ...args], size), whole, `${mode.join(" ")} window ${size}`);
        const into = run(cwd!, [...mode, ...args], 100, true);
        assert.equal(into, whole, `${mode.join(" ")} window 100, into reused buffers`);
      }
    });
  }
});
