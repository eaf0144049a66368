/**
 * The analysis outputs fed as `ptkit perf` would feed them (StreamFeeds): two CPU
 * streams whose threads switch, interleaved in time. Each thread gets its own track
 * and call stack, even when it moves between streams.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FLOW_HINTS } from "../../src/cli/session-hints.js";
import { FlowClass, Insn } from "../../src/flow/index.js";
import { AnalysisOutputs, defaultAnalysisOptions, StreamFeeds } from "../../src/session/analysis-outputs.js";
import { perfettoTimeline } from "../analysis/perfetto-frames.js";
import { type TimelineEvent, type TimelineFrame, timelineFrames } from "../analysis/timeline-frames.js";
import { captureIo } from "../conformance/ptt.js";

function insn(lo: number, size: number, iclass: number): Insn {
  const i = new Insn();
  i.ipLo = lo;
  i.size = size;
  i.iclass = iclass as Insn["iclass"];
  return i;
}

test("per-CPU streams: a track and a call stack per thread", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-streams-"));
  const io = captureIo(dir);
  const options = { ...defaultAnalysisOptions(), timeline: "t.json", folded: "f.txt" };
  const outputs = AnalysisOutputs.open(io, options, { code: [], nsPerTick: 1, name: "" });
  assert.ok(outputs instanceof AnalysisOutputs);
  const feeds = new StreamFeeds(outputs);
  const cpu0 = { pid: 10, tid: 11, tscHi: 0, tscLo: 100 };
  const cpu1 = { pid: 20, tid: 21, tscHi: 0, tscLo: 100 };
  const call = insn(0x1000, 5, FlowClass.Call);
  const body = insn(0x2000, 1, FlowClass.Other);
  // Thread 11 calls into 0x2000 on CPU 0; thread 21 runs plain code on CPU 1.
  feeds.insn(cpu0, call);
  feeds.insn(cpu0, body);
  feeds.insn(cpu1, insn(0x3000, 1, FlowClass.Other));
  // Thread 11 moves to CPU 1 (CPU 0 idles): its stack goes with it, and it returns.
  Object.assign(cpu1, { pid: 10, tid: 11, tscLo: 200 });
  feeds.switched(cpu1);
  feeds.insn(cpu1, insn(0x2001, 1, FlowClass.Return));
  feeds.insn(cpu1, insn(0x1005, 1, FlowClass.Other));
  assert.equal(outputs.finish(), undefined);
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as {
    traceEvents: { ph: string; tid: number; name: string; args?: { end?: string } }[];
  };
  const frames = timelineFrames(doc.traceEvents).map((e) => `${e.tid} ${e.name} ${e.end ?? "return"}`);
  assert.deepEqual(frames.sort(), ["11 0x1000 end", "11 0x2000 return", "21 0x3000 end"]);
  assert.deepEqual(readFileSync(join(dir, "f.txt"), "utf8").trim().split("\n").sort(), [
    "0x1000 2",
    "0x1000;0x2000 2",
    "0x3000 1",
  ]);
});

test("per-CPU streams: the Perfetto timeline has the JSON's tracks and frames", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-streams-"));
  const io = captureIo(dir);
  const options = { ...defaultAnalysisOptions(), timeline: "t.json", perfetto: "t.pftrace" };
  const outputs = AnalysisOutputs.open(io, options, { code: [], nsPerTick: 1, name: "" });
  assert.ok(outputs instanceof AnalysisOutputs);
  const feeds = new StreamFeeds(outputs);
  const cpu0 = { pid: 10, tid: 11, tscHi: 0, tscLo: 100 };
  const cpu1 = { pid: 20, tid: 21, tscHi: 0, tscLo: 100 };
  feeds.insn(cpu0, insn(0x1000, 5, FlowClass.Call));
  feeds.insn(cpu0, insn(0x2000, 1, FlowClass.Other));
  feeds.insn(cpu1, insn(0x3000, 5, FlowClass.Call));
  Object.assign(cpu1, { pid: 10, tid: 11, tscLo: 200 });
  feeds.switched(cpu1);
  feeds.insn(cpu1, insn(0x2001, 1, FlowClass.Return));
  feeds.insn(cpu1, insn(0x1005, 1, FlowClass.Other));
  assert.equal(outputs.finish(), undefined);
  const doc = JSON.parse(readFileSync(join(dir, "t.json"), "utf8")) as { traceEvents: TimelineEvent[] };
  const proto = perfettoTimeline(readFileSync(join(dir, "t.pftrace")));
  const key = (f: TimelineFrame) =>
    `${f.pid}/${f.tid} ${f.name} ${f.startNs}-${f.stopNs} ${f.end ?? "return"}`;
  assert.deepEqual(proto.frames.map(key), timelineFrames(doc.traceEvents).map(key));
  assert.deepEqual(
    proto.threads.map((t) => `${t.pid}/${t.tid}`),
    doc.traceEvents.filter((e) => e.name === "thread_name").map((e) => `${e.pid}/${e.tid}`),
  );
  assert.equal(proto.threads.length, 2);
});

test("a JSON timeline past the size viewers load: one warning, naming --perfetto and --min-duration", () => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-streams-"));
  const io = captureIo(dir);
  const warnings: string[] = [];
  const options = { ...defaultAnalysisOptions(), timeline: "big.json" };
  const outputs = AnalysisOutputs.open(io, options, {
    code: [],
    nsPerTick: 1,
    name: "",
    jsonWarnBytes: 4096,
    warn: (w) => warnings.push(w),
    hints: FLOW_HINTS,
  });
  assert.ok(outputs instanceof AnalysisOutputs);
  const feeds = new StreamFeeds(outputs);
  const cpu = { pid: 1, tid: 1, tscHi: 0, tscLo: 100 };
  for (let i = 0; i < 2000; i++) {
    cpu.tscLo += 10;
    feeds.insn(cpu, insn(0x1000, 5, FlowClass.Call));
    feeds.insn(cpu, insn(0x2000, 1, FlowClass.Return));
  }
  assert.equal(outputs.finish(), undefined);
  assert.ok(readFileSync(join(dir, "big.json")).length > 10 * 4096);
  const big = warnings.filter((w) => w.startsWith("--timeline"));
  // Without a front end's words: what is wrong, and a remedy naming no option.
  const plainIo = captureIo(dir);
  const plain: string[] = [];
  const quiet = AnalysisOutputs.open(plainIo, options, {
    code: [],
    nsPerTick: 1,
    name: "",
    jsonWarnBytes: 4096,
    warn: (w) => plain.push(w),
  });
  assert.ok(quiet instanceof AnalysisOutputs);
  const plainFeeds = new StreamFeeds(quiet);
  for (let i = 0; i < 2000; i++) {
    cpu.tscLo += 10;
    plainFeeds.insn(cpu, insn(0x1000, 5, FlowClass.Call));
    plainFeeds.insn(cpu, insn(0x2000, 1, FlowClass.Return));
  }
  assert.equal(quiet.finish(), undefined);
  assert.deepEqual(
    plain.filter((w) => w.includes("has passed")),
    [
      "the timeline: big.json has passed 4096 bytes: chrome://tracing loads no more, and JSON this large is slow or fails in the Perfetto UI; write Perfetto's own format instead, or leave out short calls.",
    ],
  );
  assert.equal(big.length, 1, warnings.join("\n"));
  assert.match(
    big[0]!,
    /--timeline: big\.json has passed 4096 bytes: chrome:\/\/tracing .*--perfetto FILE.*--min-duration/,
  );
});
