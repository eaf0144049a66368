/**
 * The latency sink on hand-made frame sequences whose answers are worked out here:
 * nearest-rank percentiles, the split by caller, recursion (every frame counts),
 * frames that did not return (incomplete, not measured), off-CPU time between a
 * suspend and the next resume, the slowest calls with their stacks, and the JSON and
 * text forms of all that.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bucketOf,
  CallLatency,
  FrameEnd,
  FrameKind,
  FrameNames,
  type LatencyOptions,
  log2Histogram,
  nearestRank,
  ThreadTrack,
  writeLatencyJson,
  writeLatencyText,
} from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";

/** Functions by entry address; FrameNames without symbols names them by it. */
const A = 0x1000;
const B = 0x2000;
const R = 0x3000;
const C = 0x4000;
const D = 0x5000;
const name = (a: number) => `0x${a.toString(16)}`;

/** B's durations on thread 2 (caller D), one after the other from 200 ns. */
const B_ON_T2 = [1, 2, 3, 4, 6, 7, 8, 9, 100];

/**
 * Thread 1: A calls B (5 ns, then 10 ns), R recursing twice (inner 2, middle 8, outer
 * 40 with 20 ns switched out), and C (5 ns) whose call of B is unwound; thread 2: D
 * calls B nine times (B_ON_T2). A and D are cut by the end of the trace.
 */
function run(options: LatencyOptions = {}, switches = true): CallLatency {
  const l = new CallLatency(new FrameNames(undefined), options);
  const t1 = new ThreadTrack(0, 10, 11, "one", 64);
  const t2 = new ThreadTrack(1, 20, 21, "two", 64);
  l.begin({ unit: "ns", tscBase: "0x0", nsPerTick: 0.5 });
  l.resume(t1, 0, 0);
  l.enter(t1, 1, FrameKind.Root, 0, A, 0, 0, 0);
  l.enter(t1, 2, FrameKind.Call, 0, B, 10, 0, 0);
  l.exit(t1, 2, FrameEnd.Return, 15, 0);
  // Times are rounded as the timeline writes them: 20.4 -> 20, 29.6 -> 30: 10 ns.
  l.enter(t1, 2, FrameKind.Call, 0, B, 20.4, 0, 0);
  l.exit(t1, 2, FrameEnd.Return, 29.6, 0);
  l.enter(t1, 2, FrameKind.Call, 0, R, 40, 0, 0);
  l.enter(t1, 3, FrameKind.Call, 0, R, 42, 0, 0);
  l.enter(t1, 4, FrameKind.Call, 0, R, 43, 0, 0);
  l.exit(t1, 4, FrameEnd.Return, 45, 0);
  l.exit(t1, 3, FrameEnd.Return, 50, 0);
  if (switches) {
    // Switched out for 20 ns inside the outer R.
    l.suspend(t1, 55, 0);
    l.resume(t1, 75, 0);
  }
  l.exit(t1, 2, FrameEnd.Return, 80, 0);
  l.enter(t1, 2, FrameKind.Call, 0, C, 90, 0, 0);
  l.enter(t1, 3, FrameKind.Call, 0, B, 91, 0, 0);
  l.exit(t1, 3, FrameEnd.Unwind, 95, 0);
  l.exit(t1, 2, FrameEnd.Return, 95, 0);
  l.resume(t2, 100, 0);
  l.enter(t2, 1, FrameKind.Root, 0, D, 100, 0, 0);
  B_ON_T2.forEach((d, k) => {
    const start = 200 + 200 * k;
    l.enter(t2, 2, FrameKind.Call, 0, B, start, 0, 0);
    l.exit(t2, 2, FrameEnd.Return, start + d, 0);
  });
  l.exit(t1, 1, FrameEnd.End, 3000, 0);
  l.exit(t2, 1, FrameEnd.End, 3000, 0);
  l.finish();
  return l;
}

test("nearest-rank percentiles: the smallest duration that p% of the calls do not exceed", () => {
  const ten = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.equal(nearestRank(ten, 50), 5);
  assert.equal(nearestRank(ten, 90), 9);
  assert.equal(nearestRank(ten, 99), 10);
  assert.equal(nearestRank(ten, 100), 10);
  assert.equal(nearestRank(ten, 10), 1);
  assert.equal(nearestRank(ten, 11), 2);
  assert.equal(nearestRank(Float64Array.of(7), 50), 7);
  // 0.29 * 100 is 28.999999999999996 in floating point; the rank must still be 29.
  const hundred = Float64Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(nearestRank(hundred, 29), 29);
});

test("log2 buckets: [0, 1), then [2^(k-1), 2^k)", () => {
  assert.deepEqual(
    [0, 0.5, 1, 1.5, 2, 3, 4, 7, 8, 1023, 1024].map(bucketOf),
    [0, 0, 1, 1, 2, 2, 3, 3, 4, 10, 11],
  );
  assert.deepEqual(log2Histogram(Float64Array.of(0, 3, 3, 9)), [
    { from: 0, to: 1, count: 1 },
    { from: 1, to: 2, count: 0 },
    { from: 2, to: 4, count: 2 },
    { from: 4, to: 8, count: 0 },
    { from: 8, to: 16, count: 1 },
  ]);
});

test("counts, percentiles, callers, recursion, incomplete frames and off-CPU time", () => {
  const s = run().summary();
  assert.equal(s.clock.unit, "ns");
  // B 11, R 3, C 1.
  assert.equal(s.calls, 15);
  assert.equal(s.incomplete, 3);
  assert.deepEqual(s.incompleteBy, { unwind: 1, unknown: 0, gap: 0, end: 2, abort: 0, exec: 0 });
  assert.equal(s.offCpuRecorded, true);
  const fn = new Map(s.functions.map((f) => [f.name, f]));
  // Sorted by total: B 155, R 50, C 5, then A and D (no call returned).
  assert.deepEqual(
    s.functions.map((f) => [f.name, f.total]),
    [
      [name(B), 155],
      [name(R), 50],
      [name(C), 5],
      [name(A), 0],
      [name(D), 0],
    ],
  );
  const b = fn.get(name(B))!;
  // Sorted: 1 2 3 4 5 6 7 8 9 10 100; ranks ceil(p% of 11): 6, 10, 11.
  assert.deepEqual(
    [b.calls, b.total, b.min, b.p50, b.p90, b.p99, b.max, b.incomplete],
    [11, 155, 1, 6, 10, 100, 100, 1],
  );
  assert.equal(b.pid, 10);
  assert.deepEqual(
    b.callers.map((c) => [c.caller, c.calls, c.total, c.p50, c.max]),
    [
      [name(D), 9, 140, 6, 100],
      // [5, 10]: rank ceil(0.5 * 2) = 1.
      [name(A), 2, 15, 5, 10],
    ],
  );
  assert.deepEqual(b.histogram, [
    { from: 1, to: 2, count: 1 },
    { from: 2, to: 4, count: 2 },
    { from: 4, to: 8, count: 4 },
    { from: 8, to: 16, count: 3 },
    { from: 16, to: 32, count: 0 },
    { from: 32, to: 64, count: 0 },
    { from: 64, to: 128, count: 1 },
  ]);
  // Recursion: each of the three frames of R is a call; R is its own caller twice.
  const r = fn.get(name(R))!;
  assert.deepEqual([r.calls, r.total, r.min, r.max, r.incomplete], [3, 50, 2, 40, 0]);
  assert.deepEqual(
    r.callers.map((c) => [c.caller, c.calls, c.total]),
    [
      [name(A), 1, 40],
      [name(R), 2, 10],
    ],
  );
  // Switched out 20 ns inside the outer R only (the inner ones had returned).
  assert.equal(r.offCpu, 20);
  assert.equal(fn.get(name(B))!.offCpu, 0);
  assert.deepEqual([fn.get(name(C))!.calls, fn.get(name(C))!.total], [1, 5]);
  // A and D never returned: incomplete, no statistics.
  const a = fn.get(name(A))!;
  assert.deepEqual([a.calls, a.incomplete, a.callers.length, a.histogram.length], [0, 1, 0, 0]);
  assert.ok(Number.isNaN(a.p50));
  assert.equal(
    fn.get(name(B))!.callers.find((c) => c.caller === null),
    undefined,
  );
  assert.deepEqual(fn.get(name(A))!.callers, []);
});

test("the slowest calls: duration, start, thread, off-CPU time and the whole stack", () => {
  const s = run({ slowest: 3 }).summary();
  assert.equal(s.slowestKept, 3);
  assert.deepEqual(
    s.slowest.map((c) => [c.name, c.duration, c.start, c.offCpu, c.pid, c.tid, c.thread, c.stack.join(" ")]),
    [
      // B's 100 ns call was the ninth on thread 2, from 200 + 8 * 200.
      [name(B), 100, 1800, 0, 20, 21, "two", `${name(D)} ${name(B)}`],
      [name(R), 40, 40, 20, 10, 11, "one", `${name(A)} ${name(R)}`],
      [name(B), 10, 20, 0, 10, 11, "one", `${name(A)} ${name(B)}`],
    ],
  );
  // All of them: 15 calls, slowest first; equal durations (8: R and B) by start.
  const all = run({ slowest: 100 }).summary().slowest;
  assert.equal(all.length, 15);
  assert.deepEqual(
    all.map((c) => c.duration),
    [100, 40, 10, 9, 8, 8, 7, 6, 5, 5, 4, 3, 2, 2, 1],
  );
  const eights = all.filter((c) => c.duration === 8);
  assert.deepEqual(
    eights.map((c) => [c.name, c.start]),
    [
      [name(R), 42],
      [name(B), 1400],
    ],
  );
  // The innermost R: the stack holds every frame, recursion included.
  assert.deepEqual(all.find((c) => c.name === name(R) && c.duration === 2)!.stack, [
    name(A),
    name(R),
    name(R),
    name(R),
  ]);
  // The first call of the fifteen that ties on (duration, start) cannot happen; 5 ns: B at 10 and C at 90.
  assert.deepEqual(
    all.filter((c) => c.duration === 5).map((c) => [c.name, c.start]),
    [
      [name(B), 10],
      [name(C), 90],
    ],
  );
  assert.deepEqual(run({ slowest: 0 }).summary().slowest, []);
});

test("one function: its statistics and its slowest calls only", () => {
  const s = run({ only: name(R), slowest: 10 }).summary();
  assert.equal(s.only, name(R));
  assert.deepEqual(
    s.functions.map((f) => f.name),
    [name(R)],
  );
  assert.deepEqual(
    s.slowest.map((c) => [c.name, c.duration]),
    [
      [name(R), 40],
      [name(R), 8],
      [name(R), 2],
    ],
  );
  assert.deepEqual(run({ only: "nothing" }).summary().functions, []);
});

test("without a suspend and resume, off-CPU time is unknown, not 0", () => {
  const l = run({}, false);
  const s = l.summary();
  assert.equal(s.offCpuRecorded, false);
  // The outer R now runs 40 ns on the CPU as far as anyone knows.
  assert.equal(s.functions.find((f) => f.name === name(R))!.offCpu, 0);
  const json = new Chunks();
  writeLatencyJson(s, json.out);
  const doc = JSON.parse(json.text());
  assert.equal(doc.offCpuRecorded, false);
  assert.ok(
    doc.functions.every((f: { onCpu: unknown; offCpu: unknown }) => f.onCpu === null && f.offCpu === null),
  );
  const text = new Chunks();
  writeLatencyText(s, text.out);
  assert.match(text.text(), /context switches were not recorded/);
  assert.doesNotMatch(text.text(), /off-CPU +incomplete/);
});

test("the JSON form: schema, unit, functions, callers, histogram and slowest calls", () => {
  const json = new Chunks();
  writeLatencyJson(run({ slowest: 2 }).summary(), json.out);
  const doc = JSON.parse(json.text());
  assert.equal(doc.schema, "ptkit-latency");
  assert.equal(doc.version, 1);
  assert.equal(doc.clock, "ns");
  assert.equal(doc.timeUnit, "ns");
  assert.equal(doc.nsPerTick, 0.5);
  assert.equal(doc.percentiles, "nearest-rank");
  assert.equal(doc.only, null);
  const r = doc.functions.find((f: { name: string }) => f.name === name(R));
  assert.deepEqual(
    [r.calls, r.total, r.min, r.p50, r.p90, r.p99, r.max, r.onCpu, r.offCpu],
    [3, 50, 2, 8, 40, 40, 40, 30, 20],
  );
  assert.deepEqual(r.callers[0], {
    caller: name(A),
    calls: 1,
    total: 40,
    min: 40,
    p50: 40,
    p90: 40,
    p99: 40,
    max: 40,
  });
  const a = doc.functions.find((f: { name: string }) => f.name === name(A));
  assert.deepEqual([a.calls, a.p50, a.max, a.incomplete], [0, null, null, 1]);
  assert.deepEqual(doc.slowest[1], {
    name: name(R),
    duration: 40,
    start: 40,
    offCpu: 20,
    pid: 10,
    tid: 11,
    thread: "one",
    stack: [name(A), name(R)],
  });
});

test("the text form: every function with its callers, then the slowest calls with stacks", () => {
  const text = new Chunks();
  writeLatencyText(run({ slowest: 2 }).summary(), text.out);
  const lines = text.text().split("\n");
  assert.match(
    lines[0]!,
    /^15 calls returned in 5 functions; 3 frames incomplete \(unwind 1, end 2\): not measured$/,
  );
  assert.match(lines[1]!, /^durations in ns; percentiles nearest-rank/);
  const row = (re: RegExp) => lines.find((l) => re.test(l));
  // calls total p50 p90 p99 max off-CPU incomplete function
  assert.deepEqual(
    row(/ 0x2000$/)!
      .trim()
      .split(/ +/),
    ["11", "155", "6", "10", "100", "100", "0", "1", "0x2000"],
  );
  assert.deepEqual(
    row(/ 0x3000$/)!
      .trim()
      .split(/ +/),
    ["3", "50", "8", "40", "40", "40", "20", "0", "0x3000"],
  );
  assert.deepEqual(
    row(/<- 0x3000$/)!
      .trim()
      .split(/ +/),
    ["2", "10", "2", "8", "8", "8", "<-", "0x3000"],
  );
  const slowest = lines.indexOf("slowest calls (up to 2):");
  assert.ok(slowest > 0);
  assert.deepEqual(lines[slowest + 2]!.trim().split(/ +/), ["100", "1800", "0", "two", "20/21", "0x2000"]);
  assert.equal(lines[slowest + 3]!.trim(), "0x5000 > 0x2000");
});
