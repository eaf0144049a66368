/**
 * The Perfetto timeline (src/analysis/export/perfetto.ts), decoded with hand-written
 * descriptors of Perfetto's schema: its slices are the JSON timeline's frames (names,
 * kinds, nesting, times, how they ended) and its instants the JSON's, for the traced
 * call program and for generated call programs on two threads with gaps; each name is
 * interned once; it is smaller than the JSON; the origin option shifts every time; and
 * --min-duration's filter drops exactly the frames shorter than the bound and their
 * callees, from both formats alike.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  CallAnalysis,
  type CallSink,
  FrameNames,
  PerfettoWriter,
  ShortFrameFilter,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { FlowClass } from "../../src/flow/index.js";
import { Chunks } from "./chunks.js";
import { callProgram, feedTrace } from "./export-trace.js";
import { keptFrames as kept } from "./min-duration.js";
import { perfettoTimeline } from "./perfetto-frames.js";
import { type TimelineEvent, type TimelineFrame, timelineFrames } from "./timeline-frames.js";

/** What the two formats must agree on. */
const frameKey = (f: TimelineFrame) =>
  `${f.pid}/${f.tid} ${f.name} ${f.cat} ${f.startNs}-${f.stopNs} from ${f.caller} ${f.end ?? "return"}`;

interface Both {
  json: { traceEvents: TimelineEvent[]; otherData: Record<string, unknown> };
  jsonBytes: number;
  proto: Uint8Array;
}

type Program = (analysis: CallAnalysis) => void;

/** Run `program` into a JSON and a Perfetto timeline (through a ShortFrameFilter of `min`, if given). */
function both(program: Program, options: { min?: number; origin?: number; nsPerTick?: number } = {}): Both {
  const names = new FrameNames(undefined);
  const json = new Chunks();
  const proto = new Chunks();
  const origin = options.origin === undefined ? {} : { origin: () => options.origin! };
  const timelines: CallSink[] = [
    new TimelineWriter(json.out, names, origin),
    new PerfettoWriter(proto.out, names, origin),
  ];
  const sinks = options.min === undefined ? timelines : [new ShortFrameFilter(timelines, options.min)];
  const analysis = new CallAnalysis({ sinks, nsPerTick: options.nsPerTick ?? 0.5 });
  program(analysis);
  analysis.finish();
  const bytes = Buffer.concat(json.parts);
  return {
    json: JSON.parse(bytes.toString("utf8")),
    jsonBytes: bytes.length,
    proto: Buffer.concat(proto.parts),
  };
}

/** The JSON's instants as the Perfetto decoding gives them (ts in ns). */
function jsonInstants(events: readonly TimelineEvent[]) {
  return events
    .filter((e) => e.ph === "i")
    .map((e) => ({
      pid: e.pid,
      tid: e.tid,
      ts: Math.round(e.ts * 1000),
      name: e.name,
      cat: e.cat,
      args: e.args,
    }));
}

/** The two formats say the same, and the Perfetto one interns each name once. */
function assertSame({ json, proto }: Both, origin = 0): void {
  const p = perfettoTimeline(proto);
  const frames = timelineFrames(json.traceEvents);
  assert.deepEqual(
    p.frames.map((f) => frameKey({ ...f, startNs: f.startNs - origin, stopNs: f.stopNs - origin })),
    frames.map((f) => frameKey({ ...f, startNs: f.startNs - origin, stopNs: f.stopNs - origin })),
  );
  assert.deepEqual(p.instants, jsonInstants(json.traceEvents));
  // Interned once each (perfettoTimeline throws on a repeat), and only names used.
  const used = new Set([...p.frames.map((f) => f.name), ...p.instants.map((i) => i.name)]);
  assert.deepEqual([...p.names].sort(), [...used].sort());
  const threads = json.traceEvents
    .filter((e) => e.ph === "M" && e.name === "thread_name")
    .map((e) => `${e.pid}/${e.tid} ${e.args!.name}`);
  assert.deepEqual(
    p.threads.map((t) => `${t.pid}/${t.tid} ${t.name}`),
    threads,
  );
}

const traced: Program = (analysis) => {
  const { asm, trace } = callProgram();
  const feed = analysis.stream();
  feed.thread(1, 1, "traced");
  feedTrace(trace, asm.image(), feed);
};

test("the traced call program: the Perfetto slices are the JSON's frames", () => {
  const out = both(traced);
  assertSame(out);
  const p = perfettoTimeline(out.proto);
  // The program's frames: calls, an interrupt, a root, ended by returns, a gap and the trace's end.
  assert.deepEqual(new Set(p.frames.map((f) => f.cat)), new Set(["call", "root", "interrupt"]));
  assert.deepEqual(
    new Set(p.frames.map((f) => f.end ?? "return")),
    new Set(["return", "unknown", "gap", "end"]),
  );
  assert.ok(p.instants.some((i) => i.cat === "gap" && i.name === "overflow" && i.args.offset === -1));
  assert.ok(
    out.proto.length < out.jsonBytes,
    `${out.proto.length} bytes of protobuf, ${out.jsonBytes} of JSON`,
  );
});

test("the origin option adds to every time, in both formats", () => {
  const origin = 1_700_000_000_123_456;
  const plain = both(traced);
  const shifted = both(traced, { origin });
  assertSame(shifted);
  assert.equal(shifted.json.otherData.origin, origin);
  const at = (b: Both) => perfettoTimeline(b.proto).frames.map((f) => [f.startNs, f.stopNs]);
  assert.deepEqual(
    at(shifted),
    at(plain).map(([a, b]) => [a! + origin, b! + origin]),
  );
});

/** A generated program's steps: a call to one of 8 functions, a return, a tick, a thread switch, a decode error. */
const step = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("call" as const), fn: fc.nat(7) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("ret" as const) }) },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("tick" as const), ticks: fc.integer({ min: 1, max: 400 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("switch" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("error" as const) }) },
);
type Step = typeof step extends fc.Arbitrary<infer S> ? S : never;

/** Feed `steps` as two threads taking turns on one stream. */
function generated(steps: readonly Step[]): Program {
  return (analysis) => {
    const feed = analysis.stream();
    const threads = [
      { tid: 11, ip: 0x1000, returns: [] as number[] },
      { tid: 12, ip: 0x2000, returns: [] as number[] },
    ];
    let t = threads[0]!;
    let tsc = 0x10000;
    feed.time(0, tsc);
    feed.thread(10, t.tid, "gen");
    const insn = (size: number, fclass: number) => feed.insn(0, t.ip, size, fclass);
    for (const s of steps) {
      if (s.op === "call") {
        insn(5, FlowClass.Call);
        t.returns.push(t.ip + 5);
        t.ip = 0x100000 + s.fn * 0x1000 + t.returns.length * 0x10;
      } else if (s.op === "ret" && t.returns.length > 0) {
        insn(1, FlowClass.Return);
        t.ip = t.returns.pop()!;
      } else if (s.op === "tick") {
        tsc += s.ticks;
        feed.time(0, tsc);
      } else if (s.op === "switch") {
        // The next instruction resolves the last branch first, on the thread that made it.
        insn(1, FlowClass.Other);
        t.ip++;
        t = t === threads[0] ? threads[1]! : threads[0]!;
        feed.thread(10, t.tid, "gen");
      } else if (s.op === "error") {
        feed.error(tsc & 0xffff, "generated gap");
        t.returns.length = 0;
      }
      insn(1, FlowClass.Other);
      t.ip++;
    }
  };
}

test("generated call programs: the same frames and instants, each name interned once", () => {
  fc.assert(
    fc.property(fc.array(step, { maxLength: 200, size: "max" }), (steps) => {
      assertSame(both(generated(steps)));
    }),
    { numRuns: 100 },
  );
});

test("--min-duration: exactly the frames shorter than the bound and their callees go, in both formats", () => {
  let keptFrames = 0;
  let droppedFrames = 0;
  fc.assert(
    fc.property(
      fc.array(step, { maxLength: 200, size: "max" }),
      fc.integer({ min: 1, max: 600 }),
      (steps, min) => {
        const program = generated(steps);
        const all = both(program);
        const filtered = both(program, { min });
        assertSame(filtered);
        const expected = kept(all.json.traceEvents, min);
        assert.deepEqual(timelineFrames(filtered.json.traceEvents).map(frameKey), expected.map(frameKey));
        keptFrames += expected.length;
        droppedFrames += timelineFrames(all.json.traceEvents).length - expected.length;
        // Gaps are not frames: all of them stay.
        const gaps = (b: Both) => jsonInstants(b.json.traceEvents).filter((i) => i.cat === "gap");
        assert.deepEqual(gaps(filtered), gaps(all));
      },
    ),
    { numRuns: 100 },
  );
  // Not vacuous: the programs had frames on both sides of their bounds.
  assert.ok(keptFrames > 500 && droppedFrames > 500, `${keptFrames} kept, ${droppedFrames} dropped`);
});

test("--min-duration on the traced program: a bound between its frames' lengths", () => {
  const all = timelineFrames(both(traced).json.traceEvents);
  const lengths = [...new Set(all.map((f) => f.stopNs - f.startNs))].sort((a, b) => a - b);
  assert.ok(lengths.length >= 3, `${lengths}`);
  const min = lengths[1]!;
  const filtered = both(traced, { min });
  assertSame(filtered);
  const frames = timelineFrames(filtered.json.traceEvents);
  assert.ok(frames.length > 0 && frames.length < all.length);
  assert.ok(frames.every((f) => f.stopNs - f.startNs >= min));
});
