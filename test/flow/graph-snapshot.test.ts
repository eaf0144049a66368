/**
 * A decision graph as bytes (flow/graph-snapshot.ts): written and read back, it is the
 * same graph, and a walk over it counts what a fresh graph's walk counts without
 * making a node; bytes cut short, changed or made up are refused with a reason,
 * never thrown at or taken with an id that names no node.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { decodeCount } from "../../src/analysis/coverage-decode.js";
import {
  COLD_WORDS,
  DecisionGraph,
  GRAPH_FORMAT,
  NODE_WORDS,
  Node,
  readGraph,
  writeGraph,
} from "../../src/flow/index.js";
import type { Image } from "../../src/image/index.js";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { generate } from "../../src/unit/gen/index.js";
import { BRANCHES, msrs } from "../unit/gen/helpers.js";
import { programImage, randomProgram, randomRun, USER_BASE } from "../unit/gen/random-program.js";

/** A kernel-traced random program's image and the trace of one run of it. */
function workload(seed: number, runSeed = seed, insns = 20_000): { image: Image; trace: Uint8Array } {
  const program = randomProgram(seed, 60);
  const exec = randomRun(program, runSeed, { insns, interrupts: 0.01, wildReturns: 0.02 });
  const res = generate(exec, { msrs: msrs({ preset: "skylake", caps: { ptwrite: false }, ctl: BRANCHES }) });
  const image = programImage(program);
  return { image, trace: res.bytes };
}

/** The count of a walk over `trace` on `graph` (status 0). */
function count(trace: Uint8Array, graph: DecisionGraph): number {
  const r = decodeCount(TraceBytes.of(trace), graph);
  assert.equal(r.status, 0, r.reason);
  return r.insns;
}

/** A graph made by a walk over seed's trace, its bytes, and the walk's count. */
function made(seed: number): {
  image: Image;
  trace: Uint8Array;
  graph: DecisionGraph;
  bytes: Uint8Array;
  insns: number;
} {
  const { image, trace } = workload(seed);
  const graph = new DecisionGraph(image);
  const insns = count(trace, graph);
  const bytes = writeGraph(graph.state());
  assert.ok(bytes !== undefined);
  return { image, trace, graph, bytes, insns };
}

describe("a decision graph written and read back", () => {
  test("the same nodes and slots; a walk over it counts the same and makes no node", () => {
    for (const seed of [1, 2]) {
      const m = made(seed);
      const state = readGraph(m.bytes);
      assert.ok(typeof state !== "string", String(state));
      const size = m.graph.size;
      assert.ok(size > 50, `${size} nodes`);
      assert.equal(state.size, size);
      assert.equal(state.walked, m.graph.walked);
      const before = m.graph.state();
      assert.deepEqual(state.cold, before.cold.subarray(0, size * COLD_WORDS));
      assert.deepEqual(state.slots, before.slots);
      assert.deepEqual(state.flags, before.flags.subarray(0, size));
      for (let id = 0; id < size; id++)
        for (const w of [Node.Kind, Node.Insns, Node.Taken, Node.Fall, Node.Lo, Node.Hi, Node.TipId])
          assert.equal(
            state.nodes[id * NODE_WORDS + w],
            before.nodes[id * NODE_WORDS + w],
            `node ${id} word ${w}`,
          );
      // The walker's word is its own: cleared.
      for (let id = 0; id < size; id++) assert.equal(state.nodes[id * NODE_WORDS + Node.Walk], -1);

      const again = new DecisionGraph(m.image);
      again.adopt(state);
      assert.equal(count(m.trace, again), m.insns, `seed ${seed}`);
      assert.equal(again.size, size, "the walk made nodes the graph had");
      // Each node found at its address.
      for (let id = 0; id < size; id++) assert.equal(again.node(again.hi(id), again.lo(id)), id);
      assert.equal(again.size, size);
    }
  });

  test("a graph read back grows as a fresh one does: another run of the same program", () => {
    const m = made(3);
    const state = readGraph(m.bytes);
    assert.ok(typeof state !== "string");
    const grown = new DecisionGraph(m.image);
    grown.adopt(state);
    const other = workload(3, 33, 40_000).trace;
    assert.equal(count(other, grown), count(other, new DecisionGraph(m.image)));
    assert.ok(grown.size >= m.graph.size);
    // Written again, it reads back.
    const bytes = writeGraph(grown.state());
    assert.ok(bytes !== undefined && typeof readGraph(bytes) !== "string");
  });

  test("an empty graph is not written; a graph is refused one larger than it may hold", () => {
    const { image } = workload(1);
    assert.equal(writeGraph(new DecisionGraph(image).state()), undefined);
    const m = made(1);
    const state = readGraph(m.bytes);
    assert.ok(typeof state !== "string");
    assert.throws(() => new DecisionGraph(image, state.size - 1).adopt(state), RangeError);
  });
});

describe("bytes that are not a whole graph: refused, with a reason", () => {
  const m = made(2);
  const words = () => {
    const copy = m.bytes.slice();
    return { copy, w: new Int32Array(copy.buffer) };
  };
  const refused = (bytes: Uint8Array, why: RegExp) => {
    const r = readGraph(bytes);
    assert.equal(typeof r, "string");
    assert.match(r as string, why);
  };

  test("cut short anywhere, or run over", () => {
    for (let n = 0; n < m.bytes.length; n += n < 64 ? 1 : 997)
      refused(m.bytes.subarray(0, n), /whole|cut short|run over/);
    const longer = new Uint8Array(m.bytes.length + 4);
    longer.set(m.bytes);
    refused(longer, /cut short or run over/);
  });

  test("another magic, another format, a bad node or slot count, a failing checksum", () => {
    let { copy, w } = words();
    w[0] = 0x50544b47;
    refused(copy, /not a decision graph/);
    ({ copy, w } = words());
    w[1] = GRAPH_FORMAT + 1;
    refused(copy, new RegExp(`format ${GRAPH_FORMAT + 1}, not ${GRAPH_FORMAT}`));
    for (const size of [0, -1, 1 << 23]) {
      ({ copy, w } = words());
      w[2] = size;
      refused(copy, /bad node count/);
    }
    for (const slots of [1000, 3000, 1024]) {
      ({ copy, w } = words());
      w[4] = slots;
      refused(copy, /bad slot count/);
    }
    ({ copy, w } = words());
    w[w.length - 1]! ^= 1;
    refused(copy, /checksum/);
  });

  test("ids that name no node, with a checksum that holds: refused", () => {
    const size = m.graph.size;
    const slots = m.graph.state().slots.length;
    /** Change word `at` to `v` and mend the checksum (a file made on purpose). */
    const forged = (at: number, v: number) => {
      const { copy, w } = words();
      w[at] = v;
      let h = 0x811c9dc5 | 0;
      for (let i = 6; i < w.length; i++) h = Math.imul(h ^ w[i]!, 0x01000193);
      w[5] = h;
      return copy;
    };
    const node = (id: number, word: number) => 6 + id * NODE_WORDS + word;
    refused(forged(node(5, Node.Taken), size), /node 5 is out of range/);
    refused(forged(node(7, Node.Fall), -3), /node 7 is out of range/);
    refused(forged(node(0, Node.TipId), size + 100), /node 0 is out of range/);
    refused(forged(node(3, Node.Kind), 8), /node 3 is out of range/);
    refused(forged(node(3, Node.Insns), -1), /node 3 is out of range/);
    refused(forged(node(4, Node.Walk), 0), /node 4 is out of range/);
    const slotAt = 6 + size * (NODE_WORDS + COLD_WORDS);
    const w = new Int32Array(m.bytes.buffer.slice(0));
    let empty = slotAt;
    while (w[empty] !== 0) empty++;
    refused(forged(empty, size + 1), /slot \d+ names no node/);
    assert.ok(slots >= 2048);
  });

  test("any bytes: read without throwing; what is taken names only its nodes", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ at: fc.nat(m.bytes.length - 1), v: fc.integer({ min: 0, max: 255 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.boolean(),
        (changes, mend) => {
          const copy = m.bytes.slice();
          for (const c of changes) copy[c.at] = c.v;
          const w = new Int32Array(copy.buffer);
          if (mend) {
            let h = 0x811c9dc5 | 0;
            for (let i = 6; i < w.length; i++) h = Math.imul(h ^ w[i]!, 0x01000193);
            w[5] = h;
          }
          const r = readGraph(copy);
          if (typeof r === "string") return;
          for (let id = 0; id < r.size; id++)
            for (const word of [Node.Taken, Node.Fall, Node.TipId]) {
              const v = r.nodes[id * NODE_WORDS + word]!;
              assert.ok(v >= -2 && v < r.size);
            }
          // A graph taken from it answers look-ups without running away.
          const g = new DecisionGraph(m.image);
          g.adopt(r);
          assert.ok(g.node(0, USER_BASE) >= -1);
        },
      ),
      { numRuns: 300 },
    );
  });
});
