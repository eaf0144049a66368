/**
 * A FlowTracker fed node by node with the nodes' ids (the decision-graph walk, ptkit
 * perf's fast path) keeps coverage ids per node (node-ids.ts) instead of looking each
 * block and edge up: the coverage must be what the same feed gives without the ids,
 * whatever else comes in between (single instructions, interrupts, tracing turned off
 * and on, overflows, thread switches), over graphs that take turns, a graph whose ids
 * name other nodes from a new generation on, and coverage cleared mid-way.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { CallAnalysis, Coverage, type FlowTracker } from "../../src/analysis/index.js";
import { EventType } from "../../src/event/index.js";
import type { DecisionGraph } from "../../src/flow/index.js";
import { FlowClass } from "../../src/flow/index.js";
import { Chunks } from "./chunks.js";
import { event } from "./pt-events.js";

/** A node as the walk feeds it. */
interface FedNode {
  hi: number;
  lo: number;
  n: number;
  endHi: number;
  endLo: number;
  size: number;
  fclass: number;
}

/** A stand-in for a graph: only its identity and generation matter to the tracker. */
interface FakeGraph {
  generation: number;
  /** Nodes by id, per generation. */
  nodes: FedNode[][];
}

type Op =
  | { op: "node"; g: number; id: number }
  | { op: "nodes"; g: number; ids: number[] }
  | { op: "insn"; lo: number; fclass: number }
  | { op: "async"; from: number; to: number; suppressed: boolean }
  | { op: "enabled"; lo: number }
  | { op: "disabled" }
  | { op: "overflow" }
  | { op: "thread"; tid: number }
  | { op: "clear" }
  | { op: "generation"; g: number };

const CLASSES = [FlowClass.CondJump, FlowClass.Call, FlowClass.Return, FlowClass.Jump, FlowClass.FarCall];
/** Few addresses, so that blocks and edges repeat and nodes of different graphs share some. */
const addr = fc.integer({ min: 0, max: 15 }).map((k) => 0x1000 + 0x10 * k);
const node = fc.record({
  lo: addr,
  hi: fc.constantFrom(0, 0xffffffff),
  n: fc.integer({ min: 1, max: 4 }),
  // Where the transfer is: nodes of other instruction counts may end at the same
  // place (the same addresses in two programs: one block, two counts).
  span: fc.integer({ min: 1, max: 2 }),
  fclass: fc.constantFrom(...CLASSES),
});
/** Three graphs, of up to 6 nodes, and a second generation of each. */
const graphs = fc.array(
  fc.array(fc.array(node, { minLength: 6, maxLength: 6 }), { minLength: 2, maxLength: 2 }),
  {
    minLength: 3,
    maxLength: 3,
  },
);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("node" as const),
      g: fc.integer({ min: 0, max: 2 }),
      id: fc.integer({ min: 0, max: 5 }),
    }),
  },
  {
    // A walk in one graph: the same nodes after one another again and again.
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant("nodes" as const),
      g: fc.integer({ min: 0, max: 2 }),
      ids: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 2, maxLength: 12 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("insn" as const),
      // At a node's start or its transfer, or elsewhere.
      lo: fc.tuple(addr, fc.constantFrom(0, 4, 8)).map(([a, d]) => a + d),
      fclass: fc.constantFrom(FlowClass.Other, ...CLASSES),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("async" as const),
      from: addr,
      to: addr,
      suppressed: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("enabled" as const), lo: addr }) },
  { weight: 1, arbitrary: fc.constant({ op: "disabled" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "overflow" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("thread" as const), tid: fc.integer({ min: 1, max: 2 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ op: "clear" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("generation" as const), g: fc.integer({ min: 0, max: 2 }) }),
  },
);

/** The coverage (JSON and AFL map) of `ops`, the nodes fed with their ids or without. */
function coverageOf(
  made: FakeGraph[],
  ops: readonly Op[],
  withIds: boolean,
): { json: string; map: number[]; lookups: number } {
  // Each run its own graphs: the generations move as the ops say.
  const gs = made.map((g) => ({ generation: 0, nodes: g.nodes }));
  const coverage = new Coverage();
  // The table look-ups made (the ids kept save them).
  let lookups = 0;
  const blockId = coverage.blockId.bind(coverage);
  const edgeId = coverage.edgeId.bind(coverage);
  coverage.blockId = (...a) => {
    lookups++;
    return blockId(...a);
  };
  coverage.edgeId = (...a) => {
    lookups++;
    return edgeId(...a);
  };
  const analysis = new CallAnalysis({ coverage });
  const t: FlowTracker = analysis.stream("s");
  const feedNode = (gi: number, id: number) => {
    const g = gs[gi]!;
    const nd = g.nodes[g.generation % 2]![id]!;
    if (withIds)
      t.node(nd.hi, nd.lo, nd.n, nd.endHi, nd.endLo, nd.size, nd.fclass, id, g as unknown as DecisionGraph);
    else t.node(nd.hi, nd.lo, nd.n, nd.endHi, nd.endLo, nd.size, nd.fclass);
  };
  for (const o of ops) {
    switch (o.op) {
      case "node":
        feedNode(o.g, o.id);
        break;
      case "nodes":
        for (const id of o.ids) feedNode(o.g, id);
        break;
      case "insn":
        t.insn(0, o.lo, 2, o.fclass);
        break;
      case "async":
        t.event(event(EventType.AsyncBranch, o.to, o.from, o.suppressed));
        break;
      case "enabled":
        t.event(event(EventType.Enabled, o.lo));
        break;
      case "disabled":
        t.event(event(EventType.Disabled, 0, 0, true));
        break;
      case "overflow":
        t.event(event(EventType.Overflow));
        break;
      case "thread":
        t.thread(1, o.tid);
        break;
      case "clear":
        coverage.clear();
        break;
      case "generation":
        gs[o.g]!.generation++;
        break;
    }
  }
  analysis.finish();
  const chunks = new Chunks();
  coverage.write(chunks.out);
  return {
    json: chunks.text(),
    map: [...coverage.aflMap.entries()].filter(([, v]) => v !== 0).flat(),
    lookups,
  };
}

/** The fed form of generated nodes: the transfer, of 2 bytes, `span` * 4 bytes on (at the start in a node of one). */
function fed(nodes: { lo: number; hi: number; n: number; fclass: number; span?: number }[]): FedNode[] {
  return nodes.map(({ lo, hi, n, fclass, span = n - 1 }) => ({
    hi,
    lo,
    n,
    endHi: hi,
    endLo: n > 1 ? lo + 4 * span : lo,
    size: 2,
    fclass,
  }));
}

test("coverage fed by nodes with their ids equals the same feed without them", () => {
  fc.assert(
    fc.property(graphs, fc.array(op, { minLength: 1, maxLength: 120, size: "max" }), (g, ops) => {
      const made: FakeGraph[] = g.map((gens) => ({ generation: 0, nodes: gens.map(fed) }));
      const { json, map } = coverageOf(made, ops, false);
      const kept = coverageOf(made, ops, true);
      assert.deepEqual({ json: kept.json, map: kept.map }, { json, map });
    }),
    { numRuns: 400 },
  );
});

test("the ids kept are used: a loop of nodes run again counts every block and edge", () => {
  // Two nodes calling each other's start in turn: after the first round, only ids kept.
  const nodes = fed([
    { lo: 0x1000, hi: 0, n: 3, fclass: FlowClass.Jump },
    { lo: 0x2000, hi: 0, n: 2, fclass: FlowClass.Jump },
  ]);
  const ops: Op[] = [];
  for (let i = 0; i < 50; i++) ops.push({ op: "node", g: 0, id: 0 }, { op: "node", g: 0, id: 1 });
  const made: FakeGraph[] = [{ generation: 0, nodes: [nodes, nodes] }];
  const kept = coverageOf(made, ops, true);
  const plain = coverageOf(made, ops, false);
  assert.equal(kept.json, plain.json);
  // Without ids every block and edge is looked up; with them, each once.
  assert.equal(plain.lookups, 50 + 49 + 1 + 50 + 49);
  assert.equal(kept.lookups, 2 + 2 + 1);
  const doc = JSON.parse(kept.json) as { blocks: { count: number }[]; edges: { count: number }[] };
  assert.deepEqual(
    doc.blocks.map((b) => b.count),
    [50, 50],
  );
  assert.deepEqual(
    doc.edges.map((e) => e.count),
    [50, 49],
  );
});

test("a graph's new generation names other nodes: ids kept before are not used", () => {
  // Node 1 is at 0x2000 and, from the second generation on, at 0x3000: the edge from
  // node 0 kept for the first must not count for the second.
  const first = fed([
    { lo: 0x1000, hi: 0, n: 2, fclass: FlowClass.Jump },
    { lo: 0x2000, hi: 0, n: 2, fclass: FlowClass.Jump },
  ]);
  const second = fed([
    { lo: 0x1000, hi: 0, n: 2, fclass: FlowClass.Jump },
    { lo: 0x3000, hi: 0, n: 2, fclass: FlowClass.Jump },
  ]);
  const ops: Op[] = [
    { op: "node", g: 0, id: 0 },
    { op: "node", g: 0, id: 1 },
    { op: "node", g: 0, id: 0 },
    { op: "generation", g: 0 },
    { op: "node", g: 0, id: 1 },
  ];
  const made: FakeGraph[] = [{ generation: 0, nodes: [first, second] }];
  const kept = coverageOf(made, ops, true);
  assert.equal(kept.json, coverageOf(made, ops, false).json);
  const doc = JSON.parse(kept.json) as { edges: { to: string }[] };
  assert.deepEqual(
    doc.edges.map((e) => e.to),
    ["0x2000", "0x3000", "0x1000"],
  );
});

test("a block that ends at a node's transfer but did not run as that node is looked up", () => {
  // Node 0 runs 0x1000, 0x1004 and a conditional jump at 0x1008; then the same jump
  // ends a block begun at 0x1004, and one of two instructions begun at 0x1000 (the
  // same addresses as the node, another count: the JSON has the last), and one of
  // three begun at 0xff0.
  const nodes = fed([{ lo: 0x1000, hi: 0, n: 3, fclass: FlowClass.CondJump, span: 2 }]);
  const made: FakeGraph[] = [{ generation: 0, nodes: [nodes, nodes] }];
  const node: Op = { op: "node", g: 0, id: 0 };
  const ops: Op[] = [
    node,
    node,
    { op: "insn", lo: 0x1004, fclass: FlowClass.Other },
    { op: "insn", lo: 0x1008, fclass: FlowClass.CondJump },
    node,
    { op: "insn", lo: 0x1000, fclass: FlowClass.Other },
    { op: "insn", lo: 0x1008, fclass: FlowClass.CondJump },
    { op: "insn", lo: 0x2000, fclass: FlowClass.CondJump },
    // Three instructions again, to the same jump, from 0xff0.
    { op: "insn", lo: 0xff0, fclass: FlowClass.Other },
    { op: "insn", lo: 0x1004, fclass: FlowClass.Other },
    { op: "insn", lo: 0x1008, fclass: FlowClass.CondJump },
    { op: "insn", lo: 0x2000, fclass: FlowClass.CondJump },
  ];
  const kept = coverageOf(made, ops, true);
  assert.equal(kept.json, coverageOf(made, ops, false).json);
  const doc = JSON.parse(kept.json) as { blocks: { start: string; insns: number; count: number }[] };
  assert.deepEqual(
    doc.blocks.map((b) => `${b.start} ${b.insns} ${b.count}`),
    // The last run of 0x1000-0x1008 had 2 instructions.
    ["0xff0 3 1", "0x1000 2 4", "0x1004 2 1", "0x2000 1 2"],
  );
});

test("graphs past the ids a tracker keeps: the runs of those forgotten are counted", () => {
  // 20 graphs (processes) take turns, more than the 16 whose ids a tracker keeps.
  const nodes = fed([
    { lo: 0x1000, hi: 0, n: 2, fclass: FlowClass.Jump },
    { lo: 0x2000, hi: 0, n: 3, fclass: FlowClass.Call },
    { lo: 0x3000, hi: 0, n: 1, fclass: FlowClass.Return },
  ]);
  const made: FakeGraph[] = Array.from({ length: 20 }, () => ({ generation: 0, nodes: [nodes, nodes] }));
  const ops: Op[] = [];
  for (let round = 0; round < 3; round++)
    for (let g = 0; g < 20; g++) ops.push({ op: "nodes", g, ids: [0, 1, 2, 0, 1, 2, 0] });
  const kept = coverageOf(made, ops, true);
  assert.equal(kept.json, coverageOf(made, ops, false).json);
  const doc = JSON.parse(kept.json) as { blocks: { count: number }[] };
  assert.deepEqual(
    doc.blocks.map((b) => b.count),
    [180, 120, 120],
  );
});
