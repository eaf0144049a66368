/**
 * The decision graph's successors of direct branches (flow/decision-graph.ts): found
 * from the displacement kept in the node, they must be the nodes at the addresses the
 * branch reaches: forward and backward, across a 4 GiB boundary, and none (-2) for
 * the fall-through of a call to the next instruction.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DecisionGraph, NODE_WORDS, Node, NodeFlag, NodeKind } from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";

/** The start address of node `id` as "hi:lo" in hex. */
function at(g: DecisionGraph, id: number): string {
  return `${g.hi(id).toString(16)}:${g.lo(id).toString(16)}`;
}

function kind(g: DecisionGraph, id: number): number {
  return g.nodes[id * NODE_WORDS + Node.Kind]!;
}

test("direct branches' successors: forward, backward, a call to the next instruction, across 4 GiB", () => {
  const low = new Uint8Array([
    // 0xffffff00: call 0xffffff05 (the next instruction: it pushes no return address to follow)
    0xe8, 0x00, 0x00, 0x00, 0x00,
    // 0xffffff05: jz 0xffffff00 (backward)
    0x74, 0xf9,
    // 0xffffff07: call 0xffffff10
    0xe8, 0x04, 0x00, 0x00, 0x00,
    // 0xffffff0c: mov cr3, rax; ret
    0x0f, 0x22, 0xd8, 0xc3,
    // 0xffffff10: jmp 0x1_0000_0002 (forward across the 4 GiB boundary)
    0xe9, 0xed, 0x00, 0x00, 0x00,
  ]);
  const high = new Uint8Array([
    // 0x1_0000_0000: nop; nop; 0x1_0000_0002: jmp 0xffffff05 (backward across it)
    0x90, 0x90, 0xe9, 0xfe, 0xfe, 0xff, 0xff,
  ]);
  const image = new Image();
  image.addRaw("low", low, 0, 0xffffff00);
  image.addRaw("high", high, 1, 0);
  const g = new DecisionGraph(image);

  const call0 = g.node(0, 0xffffff00);
  assert.equal(kind(g, call0), NodeKind.Call);
  assert.equal(g.fall(call0), -2);
  const jz = g.taken(call0);
  assert.equal(at(g, jz), "0:ffffff05");
  assert.equal(kind(g, jz), NodeKind.CondJump);
  assert.equal(g.taken(jz), call0);
  const call1 = g.fall(jz);
  assert.equal(at(g, call1), "0:ffffff07");
  const ret = g.fall(call1);
  assert.equal(at(g, ret), "0:ffffff0c");
  assert.equal(kind(g, ret), NodeKind.Return);
  assert.equal(g.flags(ret) & NodeFlag.MovCr3, NodeFlag.MovCr3);
  assert.equal(g.flags(call1) & NodeFlag.MovCr3, 0);
  const far = g.taken(call1);
  assert.equal(at(g, far), "0:ffffff10");
  const up = g.taken(far);
  assert.equal(at(g, up), "1:2");
  assert.equal(kind(g, up), NodeKind.Jump);
  assert.equal(g.taken(up), jz);
  // Asked again: the same nodes, none made.
  const size = g.size;
  assert.equal(g.taken(call0), jz);
  assert.equal(g.fall(jz), call1);
  assert.equal(g.size, size);
});

test("the node table: each address one node, found again after the table grew, the same low half 4 GiB apart kept apart", () => {
  // One-byte returns: every byte is a node of its own. The same low halves at 0 and at 4 GiB.
  const n = 20_000;
  const rets = new Uint8Array(n).fill(0xc3);
  const image = new Image();
  image.addRaw("low", rets, 0, 0x1000);
  image.addRaw("high", rets, 1, 0x1000);
  const g = new DecisionGraph(image);
  const ids: number[] = [];
  for (let k = 0; k < n; k++) {
    for (const hi of [0, 1]) {
      const size = g.size;
      const id = g.node(hi, 0x1000 + k);
      assert.equal(g.size, size + 1, "a new address makes a node");
      ids.push(id);
    }
  }
  assert.equal(new Set(ids).size, 2 * n);
  for (let k = 0; k < n; k++) {
    for (const hi of [0, 1]) {
      const id = g.node(hi, 0x1000 + k);
      assert.equal(id, ids[2 * k + hi]);
      assert.equal(at(g, id), `${hi}:${(0x1000 + k).toString(16)}`);
      assert.equal(kind(g, id), NodeKind.Return);
    }
  }
  assert.equal(g.size, 2 * n, "none made when asked again");
  // A TIP from a return: the node there, whether or not the last TIP from it went there.
  const from = ids[0]!;
  for (const k of [5, 5, 7, 19_999, 5]) {
    for (const hi of [1, 0]) assert.equal(g.target(from, hi, 0x1000 + k), ids[2 * k + hi]);
  }
  assert.equal(g.size, 2 * n);
});
