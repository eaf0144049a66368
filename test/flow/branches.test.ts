/**
 * Following branches: direct and indirect calls and jumps, compressed and
 * uncompressed returns (with the 64-entry RET-compression stack), conditional
 * branches, far transfers, asynchronous branches, execution modes. Each trace is
 * decoded with both decoders, which must agree; the expected transcripts follow from
 * the code and the packets (see run.ts for the format).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Trace } from "../event/helpers.js";
import { Asm } from "./asm.js";
import { decodeBoth, hx } from "./run.js";

const BASE = 0x1000n;

/** The instruction lines for a list of labels. */
function at(asm: Asm, ...labels: string[]): string[] {
  return labels.map((l) => hx(asm.at(l)));
}

/** PSB+ that starts tracing at `ip` in 64-bit mode. */
function start(ip: bigint): Trace {
  return new Trace().psb().mode(64).fup(ip).psbend();
}

test("a direct call and a compressed return", () => {
  const a = new Asm(BASE).label("l0").call("f").label("l1").nop().label("l2").hlt().label("f").ret();
  const image = a.image();
  const trace = start(a.at("l0")).tnt("!").fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image }), [
    ...at(a, "l0", "f", "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("an uncompressed return takes its target from a TIP", () => {
  const a = new Asm(BASE).label("l0").call("f").label("l1").nop().label("l2").hlt().label("f").ret();
  const image = a.image();
  const trace = start(a.at("l0")).tip(a.at("l2")).fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image }), [
    ...at(a, "l0", "f"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("a call to the next instruction is not a call for RET compression", () => {
  const a = new Asm(BASE).label("l0").callNext().label("l1").ret();
  const image = a.image();
  const trace = start(a.at("l0")).tnt("!").bytes();
  assert.deepEqual(decodeBoth(trace, { image }), [
    ...at(a, "l0", "l1"),
    "[error: compressed return without call]",
  ]);
});

test("a not-taken bit for a return is a bad compressed return", () => {
  const a = new Asm(BASE).label("l0").call("f").hlt().label("f").ret();
  const trace = start(a.at("l0")).tnt(".").bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "f"),
    "[error: bad compressed return]",
  ]);
});

/** start: call rec; hlt / rec: jz base; call rec / base: ret — recursion `depth` deep. */
function recursion(depth: number, compressed: number): { asm: Asm; lines: string[]; trace: Uint8Array } {
  const a = new Asm(BASE).label("start").call("rec").label("back").hlt();
  a.label("rec").jz("base").label("call").call("rec").label("base").ret();
  const t = start(a.at("start"));
  const lines = at(a, "start");
  for (let i = 0; i < depth; i++) {
    t.tnt(".");
    lines.push(...at(a, "rec", "call"));
  }
  t.tnt("!");
  lines.push(...at(a, "rec"));
  // depth + 1 returns, the first `compressed` of them compressed.
  for (let r = 0; r <= depth; r++) {
    lines.push(...at(a, "base"));
    if (r < compressed) t.tnt("!");
    else t.tip(r === depth ? a.at("back") : a.at("base"));
  }
  t.fup(a.at("back")).pgd();
  lines.push(`[async-disabled ${hx(a.at("back"))}->-]`);
  return { asm: a, lines, trace: t.bytes() };
}

test("deep recursion: the 64 most recent calls compress their returns", () => {
  const { asm, lines, trace } = recursion(100, 64);
  assert.deepEqual(decodeBoth(trace, { image: asm.image() }), lines);
});

test("a 65th compressed return has no call left on the stack", () => {
  const { asm, lines, trace } = recursion(100, 65);
  const got = decodeBoth(trace, { image: asm.image() });
  // Everything up to the 65th return, then the error.
  const upTo = lines.length - 1 - (101 - 65);
  assert.deepEqual(got, [...lines.slice(0, upTo), "[error: compressed return without call]"]);
});

test("indirect calls and jumps take their targets from TIPs", () => {
  const a = new Asm(BASE).label("l0").callInd().label("l1").jmpInd().label("f").ret().label("g").hlt();
  const trace = start(a.at("l0")).tip(a.at("f")).tnt("!").tip(a.at("g")).fup(a.at("g")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "f", "l1"),
    `[async-disabled ${hx(a.at("g"))}->-]`,
  ]);
});

test("conditional branches take TNT bits; direct jumps need none", () => {
  const a = new Asm(BASE)
    .label("l0")
    .jz("l2")
    .label("l1")
    .jmp8("l0")
    .label("l2")
    .jz8("l0")
    .label("end")
    .hlt();
  // l0 not taken, l1 jumps back, l0 taken to l2, l2 not taken.
  const trace = start(a.at("l0")).tnt(".!.").fup(a.at("end")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "l1", "l0", "l2"),
    `[async-disabled ${hx(a.at("end"))}->-]`,
  ]);
});

test("a TNT where a TIP is due is a bad query, and a TIP where a TNT bit is due too", () => {
  const a = new Asm(BASE).label("l0").jmpInd().label("l1").jz("l0");
  assert.deepEqual(decodeBoth(start(a.at("l0")).tnt("!").bytes(), { image: a.image() }), [
    ...at(a, "l0"),
    "[error: trace stream does not match query]",
  ]);
  assert.deepEqual(decodeBoth(start(a.at("l1")).tip(a.at("l0")).bytes(), { image: a.image() }), [
    ...at(a, "l1"),
    "[error: trace stream does not match query]",
  ]);
});

test("far transfers: SYSCALL and SYSRET get TIPs", () => {
  const a = new Asm(BASE).label("l0").syscall().label("l1").hlt();
  a.label("k").nop().label("k1").sysret();
  const trace = start(a.at("l0")).tip(a.at("k")).tip(a.at("l1")).fup(a.at("l1")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "k", "k1"),
    `[async-disabled ${hx(a.at("l1"))}->-]`,
  ]);
});

test("an interrupt: FUP at the interrupted instruction, TIP at the handler", () => {
  const a = new Asm(BASE).label("l0").nop().label("l1").nop().label("l2").hlt().label("h").iret();
  const trace = start(a.at("l0"))
    .fup(a.at("l1"))
    .tip(a.at("h"))
    .tip(a.at("l1"))
    .fup(a.at("l2"))
    .pgd()
    .bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[async-branch ${hx(a.at("l1"))}->${hx(a.at("h"))}]`,
    ...at(a, "h", "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("MODE.Exec with a TIP: the code after it decodes as 32-bit code", () => {
  // 48 is REX.W in 64-bit code but DEC EAX in 32-bit code.
  const a = new Asm(BASE).label("l0").jmpInd().label("t").raw(0x48).label("t1").nop().label("t2").hlt();
  const trace = start(a.at("l0")).mode(32).tip(a.at("t")).fup(a.at("t2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[exec-mode 32 ${hx(a.at("t"))}]`,
    ...at(a, "t", "t1"),
    `[async-disabled ${hx(a.at("t2"))}->-]`,
  ]);
});

test("a 64-bit address space: code above 2^32 and near the top", () => {
  for (const base of [0x7fff_0000_1000n, 0xffff_ffff_8100_0000n]) {
    const a = new Asm(base).label("l0").call("f").label("l1").jz("l0").label("l2").hlt().label("f").ret();
    // ret (compressed), jz taken, ret, jz not taken.
    const trace = start(a.at("l0")).tnt("!!!.").fup(a.at("l2")).pgd().bytes();
    assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
      ...at(a, "l0", "f", "l1", "l0", "f", "l1"),
      `[async-disabled ${hx(a.at("l2"))}->-]`,
    ]);
  }
});
