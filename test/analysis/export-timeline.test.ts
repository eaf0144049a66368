/**
 * The timeline's event order and time labels: parents are written before their
 * children (begin/end events), also when they start at the same time, which viewers
 * cannot tell apart by timestamps; frames carry no args (viewers make those part of
 * the name); the clock's unit is in the file.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { FrameEnd, FrameKind, FrameNames, ThreadTrack, TimelineWriter } from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";
import { SAMPLE_SKIP, sampleTimeline } from "./sample-timeline.js";
import { timelineFrames } from "./timeline-frames.js";

interface Event {
  ph: string;
  ts: number;
  name: string;
  cat?: string;
  args?: Record<string, unknown>;
}

test("parents first: begin/end events in the order frames nest, equal times included", () => {
  const chunks = new Chunks();
  const w = new TimelineWriter(chunks.out, new FrameNames(undefined));
  const t = new ThreadTrack(0, 1, 1, "p", 64);
  w.begin({ unit: "ns", tscBase: "0x0", nsPerTick: 1 });
  w.resume(t);
  // main and its call f start at 5 ns; f's call g returns at 9 ns and f too; main's next
  // call and main are cut by a gap at 12 ns.
  w.enter(t, 1, FrameKind.Root, 0, 0x1000, 5, 0, 0);
  w.enter(t, 2, FrameKind.Call, 0, 0x2000, 5, 0, 0);
  w.enter(t, 3, FrameKind.Call, 0, 0x3000, 7, 0, 0);
  w.exit(t, 3, FrameEnd.Return, 9);
  w.exit(t, 2, FrameEnd.Return, 9);
  w.enter(t, 2, FrameKind.Call, 0, 0x4000, 10, 0, 0);
  w.exit(t, 2, FrameEnd.Gap, 12);
  w.exit(t, 1, FrameEnd.Gap, 12);
  w.finish();
  const doc = JSON.parse(chunks.text()) as { traceEvents: Event[] };
  const order = doc.traceEvents.filter((e) => e.ph !== "M").map((e) => `${e.ph} ${e.name} ${e.ts * 1000}`);
  assert.deepEqual(order, [
    "B 0x1000 5",
    "B 0x2000 5",
    "B 0x3000 7",
    "E 0x3000 9",
    "E 0x2000 9",
    "B 0x4000 10",
    "E 0x4000 12",
    "E 0x1000 12",
    // How the two frames ended: once, after their end events.
    "i gap 12",
  ]);
  assert.deepEqual(doc.traceEvents.at(-1)!.args, { frames: 2, depth: 1 });
  assert.equal(doc.traceEvents.at(-1)!.cat, "frame-end");
  assert.ok(doc.traceEvents.every((e) => e.ph === "M" || e.ph === "i" || e.args === undefined));
});

test("the bundled sample: frames that start with their parent come after it", {
  skip: SAMPLE_SKIP,
}, async () => {
  const events = (JSON.parse(await sampleTimeline()) as { traceEvents: Event[] }).traceEvents;
  // Each end closes the innermost open frame (timelineFrames throws otherwise).
  timelineFrames(events);
  // Children that start when their parent does: the parent's begin came first.
  const open: Event[] = [];
  let together = 0;
  for (const e of events) {
    if (e.ph === "B") {
      if (open.at(-1)?.ts === e.ts) together++;
      open.push(e);
    } else if (e.ph === "E") open.pop();
  }
  assert.ok(together > 0, "the sample has children that start with their parents");
  // No frame has args: '_start {"end":"end"}' is not a function.
  assert.deepEqual(
    events.filter((e) => (e.ph === "B" || e.ph === "E") && e.args !== undefined),
    [],
  );
  assert.ok(events.some((e) => e.ph === "i" && e.cat === "frame-end" && e.name === "end"));
});

test("times are microseconds with up to three decimals, at every size", () => {
  // Around multiples of 1000 ns, 2^31 µs and ns, powers of ten, and up to 2^53 ns.
  const times = [0, 1, 999, 1000, 1001, 999_999, 1_000_000, 2 ** 31 - 1, 2 ** 31, 2 ** 31 * 1000 - 1];
  times.push(2 ** 31 * 1000, 2 ** 31 * 1000 + 1, 10 ** 12 - 1, 10 ** 12, 10 ** 15 + 7, 2 ** 53 - 1);
  for (let k = 1; k < 16; k++) times.push(10 ** k - 1, 10 ** k, 10 ** k + 1);
  const chunks = new Chunks();
  const w = new TimelineWriter(chunks.out, new FrameNames(undefined));
  const t = new ThreadTrack(0, 1, 1, "p", 64);
  w.begin({ unit: "ns", tscBase: "0x0", nsPerTick: 1 });
  for (const ns of times) {
    w.enter(t, 1, FrameKind.Root, 0, 0x1000, ns, 0, 0);
    w.exit(t, 1, FrameEnd.Return, ns);
  }
  w.finish();
  const ts = [...chunks.text().matchAll(/"ts":([0-9.]+)/g)].map((m) => m[1]);
  // What String() writes of the microseconds: the whole part, then the ns, trailing zeros dropped.
  const want = (ns: number) => {
    const us = BigInt(ns) / 1000n;
    const frac = `${BigInt(ns) % 1000n}`.padStart(3, "0").replace(/0+$/, "");
    return frac === "" ? `${us}` : `${us}.${frac}`;
  };
  assert.deepEqual(
    ts,
    times.flatMap((ns) => [want(ns), want(ns)]),
  );
});
