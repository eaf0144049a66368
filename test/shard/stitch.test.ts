/**
 * The stitching of call-stack segments, on hand-made segments: a run that starts in
 * the middle of the stack the one before left goes on in its frames (roots at the
 * bottom are those frames, one level down per return past the bottom); tracing that
 * resumes where a frame returns to ends that frame; a gap ends the stack; segments
 * are put in time order whatever shard they come from.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { NodeRow, SegmentRow } from "../../src/shard/index.js";
import { newSegment, Stitcher } from "../../src/shard/index.js";

const seg = (segment: number, start: number, more: Partial<SegmentRow> = {}): SegmentRow => ({
  ...newSegment(segment, 1, 1, "t"),
  start,
  ...more,
});

/** Nodes from `[parent, kind, level or function, self]` (ids in order). */
function nodes(segment: number, specs: [number, string, string | number, number][]): NodeRow[] {
  return specs.map(([parent, kind, what, self], node) => ({
    node,
    segment,
    parent,
    kind,
    level: typeof what === "number" ? what : 0,
    function: typeof what === "string" ? what : "",
    dso: "",
    calls: kind === "call" ? 1 : 0,
    selfInsns: self,
    selfTime: 0,
  }));
}

function totals(st: Stitcher): Record<string, [number, number, number]> {
  return Object.fromEntries(st.functions().map((f) => [f.function, [f.calls, f.selfInsns, f.totalInsns]]));
}

test("a run goes on in the frames the run before left open, one level down per return past the bottom", () => {
  // Run 1: main calls f, f calls g; open at the end: main, f, g.
  const a = nodes(0, [
    [-1, "level", 0, 0],
    [0, "root", "main", 2],
    [1, "call", "f", 3],
    [2, "call", "g", 4],
  ]);
  // Run 2 (another shard): root (is g) runs 5, returns past the bottom: root (is f) runs 6,
  // calls h (10), returns, returns again: root (is main) runs 1, open at the end.
  const b = nodes(0, [
    [-1, "level", 0, 0],
    [0, "root", "g?", 5],
    [-1, "level", 1, 0],
    [2, "root", "f?", 6],
    [3, "call", "h", 10],
    [-1, "level", 2, 0],
    [5, "root", "main?", 1],
    [-1, "level", 3, 0],
  ]);
  const st = new Stitcher();
  st.add([
    { shard: 1, segments: [seg(0, 200, { endNode: 6, levels: 3, endReturns: "-" })], nodes: b },
    { shard: 0, segments: [seg(0, 100, { endNode: 3, levels: 1, endReturns: "- 0x10 0x20" })], nodes: a },
  ]);
  assert.deepEqual(totals(st), {
    main: [0, 3, 31],
    f: [1, 9, 28],
    g: [1, 9, 9],
    h: [1, 10, 10],
  });
});

test("tracing resumed at a frame's return address ends that frame; a gap ends the stack", () => {
  const a = nodes(0, [
    [-1, "level", 0, 0],
    [0, "root", "main", 1],
    [1, "interrupt", "[interrupt]", 0],
  ]);
  // Resumed at 0x30 (the interrupt frame's return): the root is main again.
  const b = nodes(0, [
    [-1, "level", 0, 0],
    [0, "root", "main?", 4],
    [-1, "level", -1, 0],
    [2, "root", "other", 7],
  ]);
  const st = new Stitcher();
  st.add([
    { shard: 0, segments: [seg(0, 1, { endNode: 2, levels: 1, endReturns: "- 0x30" })], nodes: a },
    {
      shard: 1,
      segments: [seg(0, 2, { endNode: 3, levels: 1, cleared: true, startIp: "0x30", endReturns: "-" })],
      nodes: b,
    },
  ]);
  assert.deepEqual(totals(st), {
    main: [0, 5, 5],
    "[interrupt]": [0, 0, 0],
    other: [0, 7, 7],
  });
});
