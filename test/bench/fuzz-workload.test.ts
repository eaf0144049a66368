/**
 * The benchmark's fuzzing workload (bench/fuzz-workload.ts, bench/fuzz-run.ts) meets
 * its spec at a tiny size: one ELF image at 0x400000 whose code range is the address
 * filter, test case after test case each enabled and disabled once by the filter
 * (TIP.PGE, TIP.PGD), no timing packets and no RET compression in the trace libxdc is
 * given, timing packets and compressed returns in the other; `ptkit flow --coverage`
 * finds exactly the run's edges in both, and the run's instruction count. No timing
 * here, and no libxdc.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fuzzRunEdges, loadFuzzWorkload } from "../../bench/fuzz-workload.js";
import { largeFlowArgs } from "../../bench/large-workload.js";
import { analyseMix } from "../../bench/mix.js";
import { main } from "../../src/cli/ptkit.js";
import { PacketType } from "../../src/packet/index.js";
import { captureIo } from "../conformance/ptt.js";

const dir = mkdtempSync(join(tmpdir(), "ptkit-fuzz-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const options = { cacheDir: dir, codeBytes: 16384, traceBytes: 60_000, caseInsns: 20_000 };
const w = loadFuzzWorkload(options);

/** ptkit's coverage edges ("from to") of `trace` and its instruction count. */
async function coverage(trace: string): Promise<{ edges: Set<string>; insns: number }> {
  const io = captureIo(dir);
  const status = await main(
    ["flow", "--quiet", "--stat", ...largeFlowArgs(w), "--pt", trace, "--coverage", "cov.json"],
    io,
  );
  assert.equal(status, 0, io.err.join(""));
  const doc = JSON.parse(readFileSync(join(dir, "cov.json"), "utf8")) as {
    edges: { from: string; to: string }[];
  };
  const insns = /^insn:\s+(\d+)\./m.exec(io.out.join(""));
  return { edges: new Set(doc.edges.map((e) => `${e.from} ${e.to}`)), insns: Number(insns?.[1]) };
}

test("a tiny fuzzing workload: one image in the filter, several test cases, the trace sizes asked for", () => {
  assert.match(w.source, /^generated/);
  assert.equal(w.elfs.length, 1);
  assert.equal(w.elfs[0]!.base, "0x400000");
  assert.ok(w.codeBytes >= 16384);
  assert.equal(w.filter, `0x400000-0x${(0x400000 + w.codeBytes - 1).toString(16)}`);
  assert.ok(w.traceBytes >= 60_000 && w.cases >= 2, `${w.traceBytes} bytes, ${w.cases} test cases`);
  assert.ok(w.insns >= w.cases * 20_000);
  assert.equal(readFileSync(w.trace).length, w.traceBytes);
  assert.equal(readFileSync(w.timingTrace).length, w.timingTraceBytes);

  const again = loadFuzzWorkload(options);
  assert.match(again.source, /^cached/);
  assert.equal(again.insns, w.insns);
});

test("the trace for libxdc has no timing packets and no compressed returns; the other has both", () => {
  const plain = analyseMix(new Uint8Array(readFileSync(w.trace)));
  const timing = analyseMix(new Uint8Array(readFileSync(w.timingTrace)));
  for (const mix of [plain, timing]) {
    // Each test case enters the filtered range once (the first case's TIP.PGE comes
    // before the first PSB, where decoding starts, so it is not counted) and leaves once.
    assert.equal(mix.counts[PacketType.TipPge], w.cases - 1);
    assert.equal(mix.counts[PacketType.TipPgd], w.cases);
    assert.ok(mix.counts[PacketType.Tnt8]! > 0);
  }
  for (const t of [PacketType.Tsc, PacketType.Mtc, PacketType.Cyc]) {
    assert.equal(plain.counts[t], 0, `packet type ${t} in the trace without timing`);
    assert.ok(timing.counts[t]! > 0, `no packets of type ${t} in the timing trace`);
  }
  // Without RET compression every return leaves a TIP: the compressed trace has fewer.
  assert.ok(timing.counts[PacketType.Tip]! < plain.counts[PacketType.Tip]!);
});

test("ptkit's coverage of either trace is exactly the run's edges and instructions", async () => {
  const want = fuzzRunEdges(w);
  assert.ok(want.size > 100, `${want.size} edges`);
  for (const trace of [w.trace, w.timingTrace]) {
    const got = await coverage(trace);
    assert.equal(got.insns, w.insns);
    assert.deepEqual([...got.edges].sort(), [...want].sort());
  }
});
