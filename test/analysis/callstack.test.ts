/**
 * Call stacks: matching returns (several frames at once for unwinding, none for a
 * return into an unknown caller), interrupt and far frames, resuming after untraced
 * code, gaps, TSX aborts and the depth limit; times interpolated between timing
 * updates; and on random programs with interrupts, overflows and tracing switched
 * off and on, a timeline whose frames nest and folded stacks that add up. And the
 * decision graph's walk feeding the same frames as the instruction decoder, where a
 * node's transfer lies across 4 GiB and on a graph walked by a count before.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallAnalysis,
  type CallSink,
  CallStack,
  type ClockInfo,
  decodeCount,
  decodeFeed,
  FoldedStacks,
  FrameEnd,
  FrameKind,
  FrameNames,
  type ThreadTrack,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { DecisionGraph, FlowClass } from "../../src/flow/index.js";
import { TraceBytes } from "../../src/packet/index.js";
import { Trace } from "../event/helpers.js";
import { Asm } from "../flow/asm.js";
import { makeProgram } from "../flow/program.js";
import { Chunks } from "./chunks.js";
import { feedTrace } from "./export-trace.js";
import { timelineFrames } from "./timeline-frames.js";

/** A stack whose pushes and pops are written down as `+kind@entry` and `-depth:end`. */
function recorded(limit?: number): { stack: CallStack; log: string[] } {
  const stack = new CallStack(limit);
  const log: string[] = [];
  stack.listener = {
    push: (depth, kind, _hi, lo) => log.push(`+${depth}:${kind}@${lo.toString(16)}`),
    pop: (depth, end) => log.push(`-${depth}:${end}`),
  };
  return { stack, log };
}

const C = FrameKind.Call;

test("a return pops to the frame it returns to, unwinding the ones above", () => {
  const { stack, log } = recorded();
  stack.root(0, 0x100);
  stack.push(C, 0, 0x200, true, 0, 0x105);
  stack.push(C, 0, 0x300, true, 0, 0x205);
  stack.push(C, 0, 0x400, true, 0, 0x305);
  // A normal return, then one (longjmp-like) that skips a frame.
  stack.push(C, 0, 0x500, true, 0, 0x405);
  stack.ret(0, 0x405, false);
  stack.ret(0, 0x205, false);
  assert.equal(stack.depth, 2);
  assert.deepEqual(log, ["+1:1@100", "+2:0@200", "+3:0@300", "+4:0@400", "+5:0@500", "-5:0", "-4:1", "-3:0"]);
  assert.equal(stack.unmatched, 0);
});

test("a return that matches no frame ends the top one; an empty stack gets the caller as root", () => {
  const { stack, log } = recorded();
  stack.root(0, 0x100);
  stack.push(C, 0, 0x200, true, 0, 0x105);
  stack.ret(0, 0x999, false);
  assert.deepEqual(log.splice(0), ["+1:1@100", "+2:0@200", "-2:2"]);
  stack.ret(0, 0x777, false);
  assert.deepEqual(log, ["-1:2", "+1:1@777"]);
  assert.equal(stack.unmatched, 2);
});

test("interrupt frames: near returns do not look past them, far returns leave them", () => {
  const { stack, log } = recorded();
  stack.root(0, 0x100);
  stack.push(C, 0, 0x200, true, 0, 0x105);
  stack.push(FrameKind.Interrupt, 0, 0x800, true, 0, 0x210);
  stack.push(C, 0, 0x900, true, 0, 0x805);
  // A near return to the interrupted function's return address must not unwind the handler.
  stack.ret(0, 0x105, false);
  assert.deepEqual(log.splice(0).slice(-1), ["-4:2"]);
  assert.equal(stack.depth, 3);
  // IRET to somewhere else still leaves the interrupt frame.
  stack.ret(0, 0x333, true);
  assert.deepEqual(log, ["-3:2"]);
  assert.equal(stack.depth, 2);
});

test("tracing resumed where a frame returns: the untraced code returned", () => {
  const { stack, log } = recorded();
  stack.root(0, 0x100);
  stack.push(FrameKind.Far, 0, 0, true, 0, 0x102);
  stack.resumeAt(0, 0x555);
  assert.equal(stack.depth, 2);
  stack.resumeAt(0, 0x102);
  assert.equal(stack.depth, 1);
  assert.deepEqual(log, ["+1:1@100", "+2:3@0", "-2:0"]);
});

test("gaps end every frame; an abort ends the frames of the transaction", () => {
  const { stack, log } = recorded();
  stack.root(0, 0x100);
  stack.push(C, 0, 0x200, true, 0, 0x105);
  stack.push(C, 0, 0x300, true, 0, 0x205);
  stack.cut(1, FrameEnd.Abort);
  stack.clear(FrameEnd.Gap);
  assert.deepEqual(log.slice(3), ["-3:5", "-2:5", "-1:3"]);
  assert.equal(stack.depth, 0);
});

test("beyond the depth limit frames are counted, not stored", () => {
  const { stack, log } = recorded(3);
  stack.root(0, 0x100);
  for (let i = 1; i <= 5; i++) stack.push(C, 0, 0x100 * (i + 1), true, 0, 0x1000 + i);
  assert.equal(stack.depth, 6);
  assert.equal(stack.stored, 3);
  assert.equal(stack.maxDepth, 6);
  // The counted frames return first (unmatched by address), then stored ones match.
  for (let i = 0; i < 3; i++) stack.ret(0, 0xdead, false);
  stack.ret(0, 0x1002, false);
  assert.equal(stack.depth, 2);
  assert.deepEqual(log, ["+1:1@100", "+2:0@200", "+3:0@300", "-3:0"]);
});

/** A sink that writes down what it gets, with times. */
class Recorder implements CallSink {
  lines: string[] = [];
  clock: ClockInfo | undefined;
  begin(clock: ClockInfo): void {
    this.clock = clock;
  }
  resume(track: ThreadTrack, time: number): void {
    this.lines.push(`resume ${track.tid} @${time}`);
  }
  suspend(track: ThreadTrack, time: number): void {
    this.lines.push(`suspend ${track.tid} @${time}`);
  }
  enter(_t: ThreadTrack, depth: number, _k: FrameKind, _hi: number, lo: number, time: number): void {
    this.lines.push(`enter ${depth} ${lo.toString(16)} @${time}`);
  }
  exit(_t: ThreadTrack, depth: number, end: FrameEnd, time: number): void {
    this.lines.push(`exit ${depth} ${end} @${time}`);
  }
  marker(_t: ThreadTrack, what: number, offset: number, _m: string, time: number): void {
    this.lines.push(`marker ${what} ${offset} @${time}`);
  }
  finish(time: number): void {
    this.lines.push(`finish @${time}`);
  }
}

/** call at 0x10 (5 bytes) to 0x100, which runs `body` plain instructions and returns. */
function callOnce(feed: ReturnType<CallAnalysis["stream"]>, body: number): void {
  feed.insn(0, 0x10, 5, FlowClass.Call);
  for (let i = 0; i < body; i++) feed.insn(0, 0x100 + i, 1, FlowClass.Other);
  feed.insn(0, 0x100 + body, 1, FlowClass.Return);
  feed.insn(0, 0x15, 1, FlowClass.Other);
}

test("times are spread evenly by instruction count between timing updates", () => {
  const rec = new Recorder();
  const analysis = new CallAnalysis({ sinks: [rec], nsPerTick: 1 });
  const feed = analysis.stream();
  feed.time(0, 1000);
  callOnce(feed, 3); // 6 instructions
  feed.time(0, 1600); // 600 ns later, after 6 instructions: 100 ns each
  analysis.finish();
  assert.equal(rec.clock?.unit, "ns");
  assert.deepEqual(rec.lines, [
    "resume 0 @0",
    "enter 1 10 @0",
    "enter 2 100 @100",
    "exit 2 0 @500",
    "exit 1 4 @600",
    "suspend 0 @600",
    "finish @600",
  ]);
});

test("a full look-ahead buffer extrapolates at the last rate; no TSC means instruction counts", () => {
  const rec = new Recorder();
  const analysis = new CallAnalysis({ sinks: [rec], nsPerTick: 1, lookahead: 4 });
  const feed = analysis.stream();
  feed.time(0, 0);
  feed.insn(0, 0, 1, FlowClass.Other);
  feed.time(0, 10); // 10 ns per instruction
  callOnce(feed, 0);
  callOnce(feed, 0);
  analysis.finish();
  const times = rec.lines.map((l) => Number(l.slice(l.indexOf("@") + 1)));
  assert.deepEqual(times, [0, 0, 20, 30, 50, 60, 70, 70, 70]);
  const insn = new Recorder();
  const untimed = new CallAnalysis({ sinks: [insn] });
  callOnce(untimed.stream(), 2);
  untimed.finish();
  assert.equal(insn.clock?.unit, "insn");
  assert.deepEqual(insn.lines, [
    "resume 0 @0",
    "enter 1 10 @0",
    "enter 2 100 @1",
    "exit 2 0 @4",
    "exit 1 4 @5",
    "suspend 0 @5",
    "finish @5",
  ]);
});

test("a TSX abort ends the frames entered in the transaction; its handler runs in the caller", () => {
  const a = new Asm(0x1000n);
  a.label("l0").nop().label("l1").call("f").label("h").nop().label("h1").hlt();
  a.label("f").nop().label("f1").nop();
  const trace = new Trace().psb().mode(64).fup(a.at("l0")).psbend();
  trace.tsx(true).fup(a.at("l1")).tsx(false, true).fup(a.at("f1")).tip(a.at("h")).fup(a.at("h1")).pgd();
  const rec = new Recorder();
  const analysis = new CallAnalysis({ sinks: [rec] });
  feedTrace(trace.bytes(), a.image(), analysis.stream());
  analysis.finish();
  assert.deepEqual(rec.lines, [
    "resume 0 @0",
    "enter 1 1000 @0",
    `enter 2 ${a.at("f").toString(16)} @2`,
    `exit 2 ${FrameEnd.Abort} @3`,
    // Tracing stops at h1 asynchronously (an interrupt into untraced code): a frame without entry.
    "enter 2 0 @4",
    `exit 2 ${FrameEnd.End} @4`,
    `exit 1 ${FrameEnd.End} @4`,
    "suspend 0 @4",
    "finish @4",
  ]);
});

test("random programs with events: frames nest, weights add up, nothing is lost", () => {
  for (let seed = 1; seed <= 40; seed++) {
    const p = makeProgram({ seed, steps: 3000, events: 0.01 });
    const names = new FrameNames(undefined);
    const chunks = new Chunks();
    const folded = new FoldedStacks(names);
    const analysis = new CallAnalysis({ sinks: [new TimelineWriter(chunks.out, names), folded] });
    const feed = analysis.stream("t");
    feedTrace(p.trace, p.image, feed);
    analysis.finish();
    const doc = JSON.parse(chunks.text()) as { traceEvents: { ph: string; ts: number; dur: number }[] };
    // Complete events of one thread either nest or are disjoint.
    const spans = timelineFrames(doc.traceEvents)
      .map((e) => [e.startNs, e.stopNs] as const)
      .sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    const open: number[] = [];
    for (const [start, end] of spans) {
      while (open.length > 0 && open[open.length - 1]! <= start) open.pop();
      if (open.length > 0) assert.ok(end <= open[open.length - 1]!, `seed ${seed}: overlapping frames`);
      open.push(end);
    }
    const weights = new Chunks();
    folded.write(weights.out, "insn");
    const total = weights
      .text()
      .trim()
      .split("\n")
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    assert.equal(total, feed.icount, `seed ${seed}`);
    assert.equal(feed.icount, p.ips.length, `seed ${seed}`);
  }
});

test("the decision graph's walk feeds the instruction decoder's frames: a node whose call lies across 4 GiB, and a graph a count walked first", () => {
  // A run of NOPs from below 4 GiB ends in a call at 0x1_0000_0000 (the node's transfer
  // has another high half: read from its cold words); f returns (compressed), and
  // tracing stops at r1 (the TNT bits: g's RET and f's).
  const a = new Asm(0xfffffffcn);
  a.label("s").nop().nop().nop().nop().call("f").label("r").nop().label("r1").hlt();
  a.label("f").nop().call("g").ret();
  a.label("g").add().ret();
  const trace = new Trace().psb().mode(64).fup(a.at("s")).psbend();
  trace.tnt("!!").fup(a.at("r1")).pgd();
  const image = a.image();
  const frames = (feed: (analysis: CallAnalysis) => void): string[] => {
    const rec = new Recorder();
    const analysis = new CallAnalysis({ sinks: [rec] });
    feed(analysis);
    analysis.finish();
    return rec.lines;
  };
  const want = frames((analysis) => feedTrace(trace.bytes(), image, analysis.stream()));
  assert.ok(
    want.some((l) => l.startsWith("enter 3 ")),
    want.join("\n"),
  );
  const walk = (graph: DecisionGraph) =>
    frames((analysis) => {
      const r = decodeFeed(TraceBytes.of(trace.bytes()), graph, analysis.stream());
      assert.equal(r.status, 0, r.reason);
    });
  assert.deepEqual(walk(new DecisionGraph(image)), want);
  // The count's loop keeps its own layout in the nodes' Walk words; the feeding walk's
  // layout replaces it, and the count's comes back after.
  const shared = new DecisionGraph(image);
  const count = decodeCount(TraceBytes.of(trace.bytes()), shared);
  assert.equal(count.status, 0, count.reason);
  assert.deepEqual(walk(shared), want);
  assert.equal(decodeCount(TraceBytes.of(trace.bytes()), shared).insns, count.insns);
  assert.deepEqual(walk(shared), want);
});
