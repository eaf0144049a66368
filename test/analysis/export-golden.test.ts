/**
 * The exports of a small decoded trace (export-trace.ts) against committed golden
 * files in test/fixtures/golden: the Chrome trace-event timeline, folded stacks
 * weighted by instructions and by time, coverage JSON with its AFL bitmap, and the
 * JSON Lines. Regenerate with PTKIT_UPDATE_GOLDEN=1 after checking the change.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import {
  CallAnalysis,
  Coverage,
  FoldedStacks,
  FrameNames,
  JsonlWriter,
  TimelineWriter,
} from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";
import { callProgram, feedTrace, golden } from "./export-trace.js";
import { timelineFrames } from "./timeline-frames.js";

interface Exports {
  timeline: string;
  foldedInsn: string;
  foldedTime: string;
  coverage: string;
  aflMap: Uint8Array;
  jsonl: string;
}

function exportAll(): Exports {
  const { asm, trace } = callProgram();
  const names = new FrameNames(undefined);
  const timeline = new Chunks();
  const jsonl = new Chunks();
  const folded = new FoldedStacks(names);
  const coverage = new Coverage();
  const analysis = new CallAnalysis({
    sinks: [new TimelineWriter(timeline.out, names), folded],
    coverage,
    jsonl: new JsonlWriter(jsonl.out, names),
    // A 2 GHz TSC.
    nsPerTick: 0.5,
  });
  const feed = analysis.stream();
  feed.thread(1, 1, "golden");
  feedTrace(trace, asm.image(), feed);
  analysis.finish();
  const foldedInsn = new Chunks();
  const foldedTime = new Chunks();
  folded.write(foldedInsn.out, "insn");
  folded.write(foldedTime.out, "time");
  const cov = new Chunks();
  coverage.write(cov.out);
  return {
    timeline: timeline.text(),
    foldedInsn: foldedInsn.text(),
    foldedTime: foldedTime.text(),
    coverage: cov.text(),
    aflMap: coverage.aflMap,
    jsonl: jsonl.text(),
  };
}

const out = exportAll();

test("timeline: Chrome trace-event JSON, as committed", () => {
  assert.equal(out.timeline, golden("calls.timeline.json", out.timeline));
  const doc = JSON.parse(out.timeline) as {
    traceEvents: {
      ph: string;
      ts?: number;
      dur?: number;
      name: string;
      cat?: string;
      args?: { end?: string };
    }[];
    otherData: { schema: string; version: number; clock: string };
  };
  assert.deepEqual(
    [doc.otherData.schema, doc.otherData.version, doc.otherData.clock],
    ["ptkit-timeline", 2, "ns"],
  );
  // Begin/end pairs that nest (timelineFrames checks), with no args to make a frame name of.
  const calls = timelineFrames(doc.traceEvents);
  const h = `0x${callProgram().asm.at("h").toString(16)}`;
  assert.ok(calls.some((e) => e.cat === "interrupt" && e.name === h));
  assert.ok(calls.some((e) => e.end === "gap"));
  assert.ok(calls.some((e) => e.end === "unknown"));
  assert.deepEqual(
    doc.traceEvents.filter((e) => (e.ph === "B" || e.ph === "E") && e.args !== undefined),
    [],
  );
  assert.ok(doc.traceEvents.some((e) => e.ph === "i" && e.name === "overflow"));
  // Children lie within their parents: times never run backwards.
  for (const e of calls) assert.ok(e.dur >= 0 && e.ts >= 0);
});

test("folded stacks by instructions and by time, as committed", () => {
  assert.equal(out.foldedInsn, golden("calls.folded-insn.txt", out.foldedInsn));
  assert.equal(out.foldedTime, golden("calls.folded-time.txt", out.foldedTime));
  // Instruction weights add up to the instructions executed.
  const total = out.foldedInsn
    .trim()
    .split("\n")
    .reduce((n, line) => n + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  const insns = out.jsonl.split("\n").filter((l) => l.startsWith('{"type":"insn"')).length;
  assert.equal(total, insns);
});

test("coverage and its AFL bitmap, as committed", () => {
  assert.equal(out.coverage, golden("calls.coverage.json", out.coverage));
  const doc = JSON.parse(out.coverage) as { schema: string; edges: { count: number }[] };
  assert.equal(doc.schema, "ptkit-coverage");
  const digest = createHash("sha256").update(out.aflMap).digest("hex");
  assert.equal(`${digest}\n`, golden("calls.afl-map.sha256", `${digest}\n`));
  let hits = 0;
  for (const b of out.aflMap) hits += b;
  // One bitmap increment per block entered: by an edge (the interrupt's too), or with no
  // edge leading there (the start, the resume after the overflow).
  assert.equal(hits, doc.edges.reduce((n, e) => n + e.count, 0) + 2);
});

test("JSON Lines, as committed", () => {
  assert.equal(out.jsonl, golden("calls.jsonl", out.jsonl));
  for (const line of out.jsonl.trim().split("\n")) assert.equal(typeof JSON.parse(line).type, "string");
});
