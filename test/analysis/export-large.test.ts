/**
 * A multi-million-call flow through the streamed exports stays within bounded memory:
 * the timeline and the JSON Lines reach their writer in chunks of bounded size as the
 * flow goes, and the heap does not grow with the number of calls.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CallAnalysis,
  FoldedStacks,
  FrameNames,
  JsonlWriter,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { FlowClass } from "../../src/flow/index.js";

const CALLS = 2_000_000;

test(`${CALLS} calls: chunks stay small and the heap does not grow with the calls`, () => {
  const names = new FrameNames(undefined);
  let bytes = 0;
  let largest = 0;
  let chunks = 0;
  const write = (chunk: Uint8Array) => {
    bytes += chunk.length;
    largest = Math.max(largest, chunk.length);
    chunks++;
  };
  const timeline = new TimelineWriter(write, names);
  const analysis = new CallAnalysis({ sinks: [timeline, new FoldedStacks(names)], nsPerTick: 0.25 });
  const feed = analysis.stream("big");
  let tsc = 0;
  let heapAfterWarmUp = 0;
  for (let i = 0; i < CALLS; i++) {
    // main at 0x401000 calls one of 64 functions (kernel addresses: 64-bit exact), which returns.
    const fn = 0x81000000 + (i % 64) * 0x100;
    feed.insn(0x00000000, 0x401000, 5, FlowClass.Call);
    feed.insn(0xffffffff, fn, 4, FlowClass.Other);
    feed.insn(0xffffffff, fn + 4, 1, FlowClass.Return);
    feed.insn(0x00000000, 0x401005, 2, FlowClass.Jump);
    if (i % 8 === 0) {
      tsc += 64;
      feed.time(0, tsc);
    }
    if (i === 100_000) heapAfterWarmUp = process.memoryUsage().heapUsed;
  }
  const heapAtEnd = process.memoryUsage().heapUsed;
  analysis.finish();
  // Begin and end of the calls and the root frame, two metadata events, the root's "end" instant.
  assert.equal(timeline.events, 2 * (CALLS + 1) + 3);
  assert.ok(largest < 1 << 18, `largest chunk ${largest}`);
  assert.ok(chunks > bytes / (1 << 18), "written as it goes");
  // Garbage may come and go; what the calls leave behind must not add up.
  assert.ok(
    heapAtEnd - heapAfterWarmUp < 64 << 20,
    `heap grew by ${(heapAtEnd - heapAfterWarmUp) >> 20} MiB`,
  );
});

test("JSON Lines of a million instructions are written in bounded chunks", () => {
  let largest = 0;
  let lines = 0;
  const jsonl = new JsonlWriter((c) => {
    largest = Math.max(largest, c.length);
    for (let i = c.indexOf(0x0a); i >= 0; i = c.indexOf(0x0a, i + 1)) lines++;
  }, new FrameNames(undefined));
  const analysis = new CallAnalysis({ jsonl });
  const feed = analysis.stream();
  for (let i = 0; i < 1_000_000; i++) feed.insn(0xffffffff, 0x81000000 + (i % 16), 1, FlowClass.Other);
  analysis.finish();
  assert.ok(largest < 1 << 18);
  // The schema line, the thread, the root frame and its end, and every instruction.
  assert.equal(lines, 1_000_000 + 4);
});
