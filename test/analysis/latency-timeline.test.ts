/**
 * Latencies against the timeline, on generated traces: the same decode feeds the
 * timeline writer and the latency sink, and every measured duration must be a slice of
 * the timeline. Per function name, the multiset of durations of the frames that
 * returned (B/E pairs not marked by a "frame-end" instant) equals the latency sink's;
 * frames marked are its incomplete ones; the split by caller is the timeline's
 * nesting; counts, nearest-rank percentiles (computed here from the timeline's
 * durations), totals and maxima follow; the slowest calls are the longest slices.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  CallAnalysis,
  CallLatency,
  FrameNames,
  type LatencySummary,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { Image } from "../../src/image/index.js";
import { generate } from "../../src/unit/gen/index.js";
import { addCode } from "../flow/asm.js";
import { BRANCHES, type CtlFields, msrs } from "../unit/gen/helpers.js";
import {
  KERNEL_CODE,
  KERNEL_HI,
  KERNEL_LO,
  randomProgram,
  randomRun,
  USER_BASE,
} from "../unit/gen/random-program.js";
import { Chunks } from "./chunks.js";
import { callProgram, feedTrace } from "./export-trace.js";
import { timelineFrames } from "./timeline-frames.js";

/** A frame of the timeline: its function, its caller's (null at the bottom), its slice. */
interface Slice {
  name: string;
  caller: string | null;
  duration: number;
  /** Ended other than by its return (a "frame-end" instant names how). */
  incomplete: boolean;
}

/** The timeline's frames, from its B/E events paired per thread. */
function slices(timeline: string): Slice[] {
  const doc = JSON.parse(timeline) as { traceEvents: object[] };
  return timelineFrames(doc.traceEvents).map((f) => ({
    name: f.name,
    caller: f.caller,
    duration: f.stopNs - f.startNs,
    incomplete: f.end !== undefined,
  }));
}

/** The nearest-rank percentile, as its definition reads: the k-th smallest for the least k with k/n >= p%. */
function percentile(sorted: number[], p: number): number {
  let k = 1;
  while (k * 100 < p * sorted.length) k++;
  return sorted[k - 1]!;
}

/** Decode `trace` over `image` into both sinks; the timeline's slices and the latencies. */
function decodeBoth(trace: Uint8Array, image: Image, nsPerTick: number, slowest: number) {
  const names = new FrameNames(undefined);
  const timeline = new Chunks();
  const latency = new CallLatency(names, { slowest });
  const analysis = new CallAnalysis({ sinks: [new TimelineWriter(timeline.out, names), latency], nsPerTick });
  const feed = analysis.stream();
  feed.thread(1, 1, "generated");
  feedTrace(trace, image, feed);
  analysis.finish();
  return { slices: slices(timeline.text()), latency, summary: latency.summary() };
}

const numeric = (a: Iterable<number>) => [...a].sort((x, y) => x - y);

function assertAgree(s: Slice[], latency: CallLatency, summary: LatencySummary, slowest: number): void {
  const returned = s.filter((x) => !x.incomplete);
  assert.ok(returned.length > 20, `${returned.length} calls: too few to compare`);
  assert.equal(summary.calls, returned.length);
  assert.equal(summary.incomplete, s.length - returned.length);
  const byName = new Map<string, Slice[]>();
  for (const x of s) {
    if (!byName.has(x.name)) byName.set(x.name, []);
    byName.get(x.name)!.push(x);
  }
  assert.deepEqual(
    summary.functions.map((f) => f.name).sort(),
    [...byName.keys()].sort(),
    "the same functions",
  );
  for (const f of summary.functions) {
    const mine = byName.get(f.name)!;
    const durations = numeric(mine.filter((x) => !x.incomplete).map((x) => x.duration));
    assert.deepEqual(numeric(latency.durationsOf(f.name)), durations, `${f.name}: every duration is a slice`);
    assert.equal(f.incomplete, mine.length - durations.length, `${f.name}: incomplete frames`);
    assert.equal(f.calls, durations.length);
    if (durations.length === 0) continue;
    assert.deepEqual(
      [f.total, f.min, f.p50, f.p90, f.p99, f.max],
      [
        durations.reduce((a, b) => a + b, 0),
        durations[0],
        percentile(durations, 50),
        percentile(durations, 90),
        percentile(durations, 99),
        durations.at(-1),
      ],
      `${f.name}: statistics`,
    );
    assert.equal(
      f.histogram.reduce((n, b) => n + b.count, 0),
      durations.length,
    );
    for (const b of f.histogram)
      assert.equal(
        b.count,
        durations.filter((d) => d >= b.from && d < b.to).length,
        `${f.name}: bucket ${b.from}`,
      );
    // Callers: the timeline's nesting.
    const callers = new Map<string | null, number[]>();
    for (const x of mine)
      if (!x.incomplete) callers.set(x.caller, [...(callers.get(x.caller) ?? []), x.duration]);
    assert.deepEqual(
      f.callers.map((c) => [c.caller, c.calls, c.total, c.max]).sort(),
      [...callers].map(([c, d]) => [c, d.length, d.reduce((a, b) => a + b, 0), Math.max(...d)]).sort(),
      `${f.name}: callers`,
    );
  }
  // The slowest calls are the longest slices.
  assert.deepEqual(
    summary.slowest.map((c) => c.duration),
    returned
      .map((x) => x.duration)
      .sort((a, b) => b - a)
      .slice(0, slowest),
  );
  // No clock is stopped: a trace of one thread is never switched out.
  assert.equal(summary.offCpuRecorded, false);
}

const CONFIGS: [string, CtlFields, number][] = [
  // Times in ns with a TSC of 3.2 GHz: interpolated times fall between nanoseconds.
  ["TSC, MTC and CYC", { ...BRANCHES, TSCEn: 1, MTCEn: 1, MTCFreq: 3, CYCEn: 1 }, 1 / 3.2],
  ["TSC only, no RET compression", { ...BRANCHES, TSCEn: 1, DisRETC: 1 }, 0.5],
  // No timing at all: instruction counts.
  ["no timing", BRANCHES, 0],
];

describe("every duration equals its timeline slice: generated programs", () => {
  for (const seed of [1, 2, 3, 4]) {
    for (const [what, ctl, nsPerTick] of CONFIGS) {
      test(`program ${seed}, ${what}`, () => {
        const program = randomProgram(seed, 60);
        const exec = randomRun(program, seed, { insns: 20000, interrupts: 0.01, wildReturns: 0.02 });
        const res = generate(exec, { msrs: msrs({ preset: "skylake", ctl }) });
        const image = new Image("generated");
        addCode(image, program.code, BigInt(USER_BASE));
        addCode(image, KERNEL_CODE, (BigInt(KERNEL_HI) << 32n) | BigInt(KERNEL_LO));
        const { slices: s, latency, summary } = decodeBoth(res.bytes, image, nsPerTick, 25);
        assert.equal(summary.clock.unit, nsPerTick === 0 ? "insn" : "ns");
        assertAgree(s, latency, summary, 25);
        // The run has what the comparison is about: recursion-free or not, calls that
        // did not return (interrupted, unwound by wild returns, cut by the end).
        assert.ok(summary.incomplete > 0);
      });
    }
  }
});

test("the export tests' call program: calls, an interrupt, an unknown caller, an overflow", () => {
  const { asm, trace } = callProgram();
  const { slices: s, latency, summary } = decodeBoth(trace, asm.image(), 0.5, 3);
  assert.ok(s.length > 5);
  // Few calls here: compare without the size check of assertAgree.
  const returned = s.filter((x) => !x.incomplete);
  assert.equal(summary.calls, returned.length);
  for (const f of summary.functions)
    assert.deepEqual(
      numeric(latency.durationsOf(f.name)),
      numeric(returned.filter((x) => x.name === f.name).map((x) => x.duration)),
    );
  assert.ok(summary.incompleteBy.gap! > 0, "the overflow ends frames: incomplete");
});
