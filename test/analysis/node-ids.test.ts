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
import { EventType, PtEvent } from "../../src/event/index.js";
import type { DecisionGraph } from "../../src/flow/index.js";
import { FlowClass } from "../../src/flow/index.js";
import { Chunks } from "./chunks.js";

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
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant("node" as const),
      g: fc.integer({ min: 0, max: 2 }),
      id: fc.integer({ min: 0, max: 5 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("insn" as const),
      lo: addr,
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

function event(type: EventType, ipLo = 0, fromLo = 0, ipSuppressed = false): PtEvent {
  const ev = new PtEvent();
  ev.type = type;
  ev.ipLo = ipLo;
  ev.fromLo = fromLo;
  ev.ipSuppressed = ipSuppressed;
  return ev;
}

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
  for (const o of ops) {
    switch (o.op) {
      case "node": {
        const g = gs[o.g]!;
        const nd = g.nodes[g.generation % 2]![o.id]!;
        if (withIds)
          t.node(
            nd.hi,
            nd.lo,
            nd.n,
            nd.endHi,
            nd.endLo,
            nd.size,
            nd.fclass,
            o.id,
            g as unknown as DecisionGraph,
          );
        else t.node(nd.hi, nd.lo, nd.n, nd.endHi, nd.endLo, nd.size, nd.fclass);
        break;
      }
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

/** The fed form of generated nodes: the transfer is the node's last instruction, 2 bytes each. */
function fed(nodes: { lo: number; hi: number; n: number; fclass: number }[]): FedNode[] {
  return nodes.map(({ lo, hi, n, fclass }) => ({
    hi,
    lo,
    n,
    endHi: hi,
    endLo: lo + 2 * (n - 1),
    size: 2,
    fclass,
  }));
}

test("coverage fed by nodes with their ids equals the same feed without them", () => {
  fc.assert(
    fc.property(graphs, fc.array(op, { minLength: 1, maxLength: 120 }), (g, ops) => {
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
