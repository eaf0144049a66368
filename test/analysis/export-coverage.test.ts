/**
 * Coverage by hand: blocks and edges counted per execution, and the AFL bitmap index
 * of AFL's QEMU mode ((addr >> 4) ^ (addr << 8) per block, XOR the previous one
 * shifted right by one), with byte counters that saturate at 255; the edge list.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Coverage } from "../../src/analysis/index.js";
import { Chunks } from "./chunks.js";

const loc = (addr: number) => ((addr >>> 4) ^ (addr << 8)) & 0xffff;

test("the AFL index of an edge: location of the target XOR the previous location >> 1", () => {
  const c = new Coverage();
  c.restart(0x401000);
  c.edge(0, 0x401005, 0, 0x401012);
  assert.equal(loc(0x401000), 0x0100);
  assert.equal(c.aflMap[0x0100], 1);
  assert.equal(loc(0x401012), 0x1301);
  assert.equal(c.aflMap[0x1301 ^ (0x0100 >>> 1)], 1);
  // Kernel addresses: only the low 20 bits matter.
  c.restart(0x81000010);
  assert.equal(c.aflMap[loc(0x81000010)], 1);
  let sum = 0;
  for (const b of c.aflMap) sum += b;
  assert.equal(sum, 3);
});

test("bitmap counters saturate at 255; blocks and edges count executions", () => {
  const c = new Coverage();
  for (let i = 0; i < 257; i++) {
    c.restart(0x1000);
    c.block(0, 0x1000, 0, 0x1008, 3);
  }
  assert.equal(c.aflMap[loc(0x1000)], 255);
  const out = new Chunks();
  c.edge(0xffffffff, 0x81000000, 0xffffffff, 0x81000100);
  c.write(out.out);
  const doc = JSON.parse(out.text());
  assert.deepEqual(doc.blocks, [{ start: "0x1000", end: "0x1008", insns: 3, count: 257 }]);
  assert.deepEqual(doc.edges, [{ from: "0xffffffff81000000", to: "0xffffffff81000100", count: 1 }]);
  assert.deepEqual(doc.dropped, { blocks: 0, edges: 0 });
});

test("past the table limit new blocks are dropped and counted", () => {
  const c = new Coverage(2);
  for (let i = 0; i < 5; i++) c.block(0, 0x1000 + 16 * i, 0, 0x1004 + 16 * i, 2);
  const out = new Chunks();
  c.write(out.out);
  const doc = JSON.parse(out.text());
  assert.equal(doc.blocks.length, 2);
  assert.deepEqual(doc.dropped, { blocks: 3, edges: 0 });
  assert.deepEqual(c.dropped(), { blocks: 3, edges: 0, limit: 2 });
});

test("an edge run 256 times and more stays at 255 in the bitmap, counted exactly in the list", () => {
  const c = new Coverage();
  c.restart(0x2000);
  // A loop: the block at 0x2000 jumps back to itself from 0x2008.
  for (let i = 0; i < 300; i++) c.edge(0, 0x2008, 0, 0x2000);
  const self = loc(0x2000) ^ (loc(0x2000) >>> 1);
  assert.equal(c.aflMap[self], 255);
  assert.equal(c.aflMap[loc(0x2000)], 1);
  const out = new Chunks();
  c.writeEdges(out.out);
  assert.equal(out.text(), "0x2008 0x2000 300\n");
});

test("the edge list is sorted by from, then to, 64-bit addresses in hex", () => {
  const c = new Coverage();
  c.edge(0xffffffff, 0x81000010, 0, 0x401000);
  c.edge(0, 0x401010, 0, 0x401100);
  c.edge(0, 0x401010, 0, 0x401020);
  c.edge(0, 0x401010, 0, 0x401100);
  const out = new Chunks();
  c.writeEdges(out.out);
  assert.equal(out.text(), "0x401010 0x401020 1\n0x401010 0x401100 2\n0xffffffff81000010 0x401000 1\n");
});

test("repeated transfers are counted exactly: blocks that end early, three targets of one branch, targets that differ in the high half only", () => {
  const c = new Coverage();
  const runs = { a: 0, b: 0, k: 0, short: 0 };
  c.restart(0x1000);
  for (let i = 0; i < 30; i++) {
    // The block at 0x1000 ends at its branch at 0x1008, or (every fifth time) early at 0x1004.
    if (i % 5 === 4) {
      c.block(0, 0x1000, 0, 0x1004, 2);
      runs.short++;
      c.restart(0x1000);
      continue;
    }
    c.block(0, 0x1000, 0, 0x1008, 3);
    // An indirect branch to three targets in turn, one of them in the kernel with the same low half.
    const t = i % 3;
    const [hi, lo] = t === 0 ? [0, 0x2000] : t === 1 ? [0, 0x3000] : [0xffffffff, 0x2000];
    c.edge(0, 0x1008, hi, lo);
    c.block(hi, lo, hi, lo + 4, 2);
    c.edge(hi, lo + 4, 0, 0x1000);
    if (t === 0) runs.a++;
    else if (t === 1) runs.b++;
    else runs.k++;
  }
  const out = new Chunks();
  c.write(out.out);
  const doc = JSON.parse(out.text()) as { blocks: unknown[]; edges: unknown[] };
  assert.deepEqual(doc.blocks, [
    { start: "0x1000", end: "0x1004", insns: 2, count: runs.short },
    { start: "0x1000", end: "0x1008", insns: 3, count: 30 - runs.short },
    { start: "0x2000", end: "0x2004", insns: 2, count: runs.a },
    { start: "0x3000", end: "0x3004", insns: 2, count: runs.b },
    { start: "0xffffffff00002000", end: "0xffffffff00002004", insns: 2, count: runs.k },
  ]);
  assert.deepEqual(doc.edges, [
    { from: "0x1008", to: "0x2000", count: runs.a },
    { from: "0x1008", to: "0x3000", count: runs.b },
    { from: "0x1008", to: "0xffffffff00002000", count: runs.k },
    { from: "0x2004", to: "0x1000", count: runs.a },
    { from: "0x3004", to: "0x1000", count: runs.b },
    { from: "0xffffffff00002004", to: "0x1000", count: runs.k },
  ]);
});

test("the edge list is in address order for many edges: high halves of several kinds, many targets of one branch", () => {
  const c = new Coverage();
  const his = [0, 0x7f10, 0xffffffff, 0x7f20, 1];
  let x = 7;
  const rnd = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x;
  };
  const want = new Map<string, number>();
  for (let i = 0; i < 20000; i++) {
    // One branch with many targets, others with one or two; low halves across the whole range.
    const from = i % 4 === 0 ? [0, 0x401000] : [his[rnd() % 5]!, (rnd() & 0xfff) * 0x100001];
    const to = [his[rnd() % 5]!, rnd() % 3 === 0 ? 0x500000 : rnd()];
    c.edge(from[0]!, from[1]!, to[0]!, to[1]!);
    const key = `0x${hex(from[0]!, from[1]!)} 0x${hex(to[0]!, to[1]!)}`;
    want.set(key, (want.get(key) ?? 0) + 1);
  }
  const out = new Chunks();
  c.writeEdges(out.out);
  const lines = out.text().split("\n").slice(0, -1);
  const big = (a: string) => BigInt(a);
  const sorted = [...want]
    .map(([k, n]) => `${k} ${n}`)
    .sort((p, q) => {
      const [pf, pt] = p.split(" ").map(big);
      const [qf, qt] = q.split(" ").map(big);
      return pf! !== qf! ? (pf! < qf! ? -1 : 1) : pt! < qt! ? -1 : pt! > qt! ? 1 : 0;
    });
  assert.deepEqual(lines, sorted);
});

function hex(hi: number, lo: number): string {
  return ((BigInt(hi) << 32n) | BigInt(lo >>> 0)).toString(16);
}
