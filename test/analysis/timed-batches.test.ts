/**
 * TimedOps hands a lone sink its timed calls and returns in batches (several sinks get
 * them at every timing update). A batch must not change what the sink sees: the same
 * calls, in the same order across streams, at the same times, with the thread names
 * of the moment they were timed. Checked here against the same feed with a second
 * sink beside the first, which makes the first get them one update at a time.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallAnalysis,
  type CallSink,
  type FrameEnd,
  type FrameKind,
  type ThreadTrack,
} from "../../src/analysis/index.js";
import { FlowClass } from "../../src/flow/index.js";

/** Every call as a line, with the thread's name as the sink sees it then. */
class Recorder implements CallSink {
  lines: string[] = [];
  begin(): void {}
  resume(t: ThreadTrack, time: number): void {
    this.lines.push(`resume ${t.tid} ${t.name} @${time}`);
  }
  suspend(t: ThreadTrack, time: number): void {
    this.lines.push(`suspend ${t.tid} ${t.name} @${time}`);
  }
  enter(t: ThreadTrack, depth: number, _k: FrameKind, _hi: number, lo: number, time: number): void {
    this.lines.push(`enter ${t.tid} ${t.name} ${depth} ${lo.toString(16)} @${time}`);
  }
  exit(t: ThreadTrack, depth: number, end: FrameEnd, time: number): void {
    this.lines.push(`exit ${t.tid} ${t.name} ${depth} ${end} @${time}`);
  }
  marker(t: ThreadTrack, what: number, _o: number, _m: string, time: number): void {
    this.lines.push(`marker ${t.tid} ${what} @${time}`);
  }
  finish(time: number): void {
    this.lines.push(`finish @${time}`);
  }
}

/**
 * Two streams taking turns at random: calls and returns, timing updates (often, as CYC
 * gives them), thread switches, and the analysis told to hand out what it holds (as
 * ptkit perf does before the sideband changes symbols).
 */
function feed(analysis: CallAnalysis, seed: number): void {
  let s = seed;
  const rand = (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) % n;
  };
  const streams = [analysis.stream(), analysis.stream()];
  const clocks = [0, 0];
  for (let step = 0; step < 6000; step++) {
    const k = rand(2);
    const f = streams[k]!;
    const r = rand(100);
    if (r < 45) {
      const callee = 0x1000 + 0x10 * rand(50);
      f.insn(0, 0x400 + 8 * rand(8), 5, FlowClass.Call);
      f.insn(0, callee, 1, rand(2) === 0 ? FlowClass.Return : FlowClass.Other);
    } else if (r < 75) f.insn(0, 0x500 + rand(64), 1, FlowClass.Return);
    else if (r < 93) {
      clocks[k]! += 1 + rand(40);
      f.time(0, clocks[k]!);
    } else if (r < 98) {
      const tid = 100 + rand(4);
      f.thread(1, tid, `t${tid}`);
    } else analysis.release();
  }
  analysis.finish();
}

test("a lone sink gets its calls and returns in batches as it would one update at a time", () => {
  for (const seed of [1, 2, 3]) {
    const lone = new Recorder();
    feed(new CallAnalysis({ sinks: [lone], nsPerTick: 1 }), seed);
    const paired = new Recorder();
    feed(new CallAnalysis({ sinks: [paired, new Recorder()], nsPerTick: 1 }), seed);
    // Enough to fill batches.
    assert.ok(lone.lines.length > 5000, `seed ${seed}: ${lone.lines.length} lines`);
    assert.deepEqual(lone.lines, paired.lines, `seed ${seed}`);
  }
});

test("calls timed before their thread got its name reach a lone sink with the thread unnamed", () => {
  const run = (sinks: CallSink[]) => {
    const analysis = new CallAnalysis({ sinks, nsPerTick: 1 });
    const f = analysis.stream();
    f.thread(1, 7, "");
    f.time(0, 1);
    f.insn(0, 0x400, 5, FlowClass.Call);
    f.insn(0, 0x2000, 1, FlowClass.Other);
    f.time(0, 6);
    f.thread(1, 7, "seven");
    f.insn(0, 0x2001, 1, FlowClass.Return);
    f.insn(0, 0x405, 1, FlowClass.Other);
    f.time(0, 9);
    analysis.finish();
  };
  const lone = new Recorder();
  run([lone]);
  const paired = new Recorder();
  run([paired, new Recorder()]);
  assert.deepEqual(lone.lines.slice(0, 3), ["resume 7  @0", "enter 7  1 400 @0", "enter 7  2 2000 @2.5"]);
  assert.deepEqual(lone.lines, paired.lines);
});
