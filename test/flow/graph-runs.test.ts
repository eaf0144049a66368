/**
 * The decision graph makes a node by stepping over the straight-line code of its run
 * a run at a time (CodeReader.plainRun, isa's plainLength64): its nodes must be what
 * decoding each instruction on its own gives (CodeReader.decode, as the decoders read
 * code), on random code: instructions of every length and prefix, runs that reach the
 * end of a section or cross into the next one (an instruction cut there ends the run
 * as a bad node), MOV CR3 among them, JMPABS's AAD look-alikes, addresses past 4 GiB.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { CodeReader } from "../../src/flow/code-reader.js";
import { FACT_SHIFT } from "../../src/flow/flow-class.js";
import { FlowInsn, fallThrough, next } from "../../src/flow/flow-insn.js";
import {
  COLD_WORDS,
  DecisionGraph,
  FlowClass,
  InsnFact,
  NODE_WORDS,
  Node,
  NodeCold,
  NodeFlag,
  NodeKind,
} from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";
import { decodeInsn, ExecMode, InsnClass, InsnInfo, plainLength64 } from "../../src/isa/index.js";

/** Node words as the graph made them: kind, instructions, last and second-last instruction, flags. */
function made(g: DecisionGraph, id: number): number[] {
  const n = id * NODE_WORDS;
  const c = id * COLD_WORDS;
  return [
    g.nodes[n + Node.Kind]!,
    g.nodes[n + Node.Insns]!,
    g.cold[c + NodeCold.EndLo]! >>> 0,
    g.cold[c + NodeCold.EndHi]! >>> 0,
    g.cold[c + NodeCold.PrevLo]! >>> 0,
    g.cold[c + NodeCold.PrevHi]! >>> 0,
    g.flags(id),
  ];
}

/** The same, one instruction at a time (the graph's walk before runs were stepped over). */
function expected(image: Image, hi: number, lo: number): number[] {
  const code = new CodeReader(image, null, undefined, true);
  const insn = new FlowInsn();
  let kind: number = NodeKind.Bad;
  let flags = 0;
  let n = 0;
  let [ipHi, ipLo, prevHi, prevLo] = [hi, lo, hi, lo];
  for (;;) {
    insn.reset(ipHi, ipLo, ExecMode.Bits64);
    if (code.decode(insn) < 0 || insn.truncated) break;
    n++;
    const c = insn.info & 15;
    if (c === FlowClass.Other || c === FlowClass.Ptwrite) {
      if ((insn.info >>> FACT_SHIFT) & InsnFact.MovCr3) flags |= NodeFlag.MovCr3;
      fallThrough(insn);
      [prevHi, prevLo, ipHi, ipLo] = [ipHi, ipLo, next.hi, next.lo];
      continue;
    }
    const direct = ((insn.info >>> FACT_SHIFT) & InsnFact.Direct) !== 0;
    if (c === FlowClass.CondJump) kind = NodeKind.CondJump;
    else if (c === FlowClass.Jump) kind = direct ? NodeKind.Jump : NodeKind.IndirectJump;
    else if (c === FlowClass.Call) kind = direct ? NodeKind.Call : NodeKind.IndirectCall;
    else if (c === FlowClass.Return) kind = NodeKind.Return;
    else if (c === FlowClass.FarCall || c === FlowClass.FarJump || c === FlowClass.FarReturn)
      kind = NodeKind.Far;
    break;
  }
  return [kind, n, ipLo, ipHi, prevLo, prevHi, flags];
}

/** Instruction bytes: mostly plain ones, some prefixes, transfers, MOV CR3 and AAD (D5 ib). */
const piece = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      [0x90],
      [0x48, 0x89, 0xc3],
      [0x48, 0x8b, 0x44, 0x24, 0x08],
      [0x0f, 0x1f, 0x44, 0x00, 0x00],
      [0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8],
      [0x66, 0x90],
      [0x81, 0x84, 0x24, 1, 2, 3, 4, 5, 6, 7, 8],
      [0xf3, 0x0f, 0x10, 0x00],
      [0xc5, 0xf8, 0x77],
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      [0x74, 0x02],
      [0xe8, 0, 0, 0, 0],
      [0xc3],
      [0xff, 0xd0],
      [0xe9, 0x10, 0, 0, 0],
      [0x0f, 0x05],
      [0x0f, 0x22, 0xd8],
      [0xd5, 0x0a],
      [0x0f, 0x0b],
    ),
  },
  { weight: 2, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }) },
);
const code = fc.array(piece, { minLength: 1, maxLength: 40 }).map((ps) => Uint8Array.from(ps.flat()));

test("nodes made a run at a time equal nodes made an instruction at a time", () => {
  fc.assert(
    fc.property(code, code, fc.constantFrom(0, 1), fc.nat(), (a, b, hi, start) => {
      // Two sections end to end (an instruction may run from one into the other).
      const image = new Image();
      image.addRaw("a", a, hi, 0x1000);
      image.addRaw("b", b, hi, 0x1000 + a.length);
      const g = new DecisionGraph(image);
      const size = a.length + b.length;
      for (let k = 0; k < 4; k++) {
        const lo = 0x1000 + ((start + 7 * k) % size);
        const id = g.node(hi, lo);
        assert.ok(id >= 0);
        assert.deepEqual(made(g, id), expected(image, hi, lo), `node at ${hi}:${lo.toString(16)}`);
      }
    }),
    { numRuns: 500 },
  );
});

test("plainLength64 is decodeInsn's length where that is a plain instruction (not one ending D5 ib)", () => {
  const info = new InsnInfo();
  const other = new InsnInfo();
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 1, maxLength: 15 }), (bytes) => {
      const plain = plainLength64(bytes, 0, bytes.length, info);
      const length = decodeInsn(bytes, 0, 0, 0x1000, ExecMode.Bits64, other);
      const isPlain = length > 0 && other.iclass === InsnClass.Other && other.flags === 0;
      // An AAD (D5 ib) is left to decodeInsn, which tells it from a JMPABS.
      const aad = length >= 2 && bytes[length - 2] === 0xd5;
      assert.equal(plain, isPlain && !aad ? length : 0);
    }),
    { numRuns: 20_000 },
  );
  // JMPABS (APX: D5 00 A1 imm64) is a jump, not a plain instruction.
  const jmpabs = Uint8Array.of(0xd5, 0x00, 0xa1, 1, 2, 3, 4, 5, 6, 7, 8);
  assert.equal(plainLength64(jmpabs, 0, jmpabs.length, info), 0);
});
