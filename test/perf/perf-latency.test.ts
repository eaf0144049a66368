/**
 * Off-CPU time in `ptkit perf`'s latencies: a thread switched out of CPU 0 inside a
 * call and switched in on CPU 1, where the call returns, spent the time between the
 * two switches off the CPU. Fed as the interleaved per-CPU streams feed the analysis
 * sink (as perf-analysis-migrate.test.ts does for the timeline), times in TSC ticks
 * at 1 ns each.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defaultAnalysisOptions } from "../../src/cli/analysis-outputs.js";
import { PerfAnalysis, ThreadNames } from "../../src/cli/perf-analysis.js";
import { AllProcessSymbols } from "../../src/cli/perf-frame-symbols.js";
import type { PerfWhere } from "../../src/cli/perf-stream.js";
import { FlowClass, Insn } from "../../src/flow/index.js";
import type { PerfTasks } from "../../src/perf/index.js";
import { timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";

function insn(lo: number, iclass: number = FlowClass.Other, size = 1): Insn {
  const i = new Insn();
  i.ipLo = lo;
  i.size = size;
  i.iclass = iclass as Insn["iclass"];
  return i;
}

const tasks: PerfTasks = {
  changes: [],
  switches: [],
  hasSwitchRecords: true,
  seen: [],
  gaps: [],
  conversion: undefined,
  problems: [],
  buildIds: new Map(),
};

interface Doc {
  offCpuRecorded: boolean;
  functions: { name: string; calls: number; total: number; onCpu: number; offCpu: number }[];
  slowest: { name: string; duration: number; start: number; offCpu: number; tid: number; stack: string[] }[];
}

test("a call switched out on one CPU and returning on another: its off-CPU time is the time between", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-perf-latency-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const options = { ...defaultAnalysisOptions(), latency: "l.json", timeline: "t.json" };
  const analysis = PerfAnalysis.open(
    captureIo(dir),
    options,
    new ThreadNames(),
    tasks,
    new AllProcessSymbols(),
    1,
  );
  assert.ok(analysis instanceof PerfAnalysis);
  const sink = analysis.sink;
  const cpu0: PerfWhere = { cpu: 0, pid: 0, tid: 0, tscHi: 0, tscLo: 100, inRange: true };
  const cpu1: PerfWhere = { cpu: 1, pid: 0, tid: 0, tscHi: 0, tscLo: 100, inRange: true };
  const at = (w: PerfWhere, pid: number, tsc: number) => {
    Object.assign(w, { pid, tid: pid, tscLo: tsc });
    sink.switched(w);
  };
  // Thread 10 on CPU 0 from TSC 110 calls 0x2000 there.
  at(cpu0, 10, 110);
  sink.insn(cpu0, insn(0x1000, FlowClass.Call, 5));
  for (let i = 0; i < 40; i++) sink.insn(cpu0, insn(0x2000));
  // Switched out of CPU 0 at 150; switched in on CPU 1 at 200, where the call returns at 250.
  at(cpu0, 30, 150);
  at(cpu1, 10, 200);
  for (let i = 0; i < 7; i++) sink.insn(cpu1, insn(0x2001));
  cpu1.tscLo = 250;
  sink.insn(cpu1, insn(0x2002, FlowClass.Return));
  sink.insn(cpu1, insn(0x1005));
  cpu0.tscLo = 300;
  sink.insn(cpu0, insn(0x5000));
  const { error } = analysis.finish();
  assert.equal(error, undefined);
  const doc = JSON.parse(readFileSync(join(dir, "l.json"), "utf8")) as Doc;
  assert.equal(doc.offCpuRecorded, true);
  // The call's slice in the timeline: from just after the call at TSC 110 (time 0: the
  // first TSC) to where the return is placed (times between TSC updates are
  // interpolated by instruction count, and extrapolated past the last one).
  const timeline = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as { traceEvents: object[] };
  const slice = timelineFrames(timeline.traceEvents).find((x) => x.name === "0x2000")!;
  assert.ok(slice.startNs < 40, `${slice.startNs}`);
  const duration = slice.stopNs - slice.startNs;
  assert.ok(duration > 100, `${duration}`);
  // Out from the switch at 150 to the one at 200.
  const f = doc.functions.find((x) => x.name === "0x2000")!;
  assert.deepEqual([f.calls, f.total, f.offCpu, f.onCpu], [1, duration, 50, duration - 50]);
  const slow = doc.slowest[0]!;
  assert.deepEqual(
    [slow.name, slow.duration, slow.start, slow.offCpu, slow.tid, slow.stack],
    ["0x2000", duration, slice.startNs, 50, 10, ["0x1000", "0x2000"]],
  );
});
