/**
 * Events in the instruction flow: where each binds (before or after which
 * instruction), and what it changes: tracing on and off (with the resume IP), the
 * filter erratum SKL014, TSX speculation, overflows, missing memory and resync,
 * PTWRITE, paging with per-address-space images, tick events, SKD022, power events.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ImageSet } from "../../src/image/index.js";
import { config as makeConfig, Trace } from "../event/helpers.js";
import { Asm, addCode } from "./asm.js";
import { decodeBoth, hx } from "./run.js";

const BASE = 0x1000n;

function start(ip: bigint): Trace {
  return new Trace().psb().mode(64).fup(ip).psbend();
}

function at(asm: Asm, ...labels: string[]): string[] {
  return labels.map((l) => hx(asm.at(l)));
}

test("tracing off at an indirect call and back on at its return address: resumed", () => {
  const a = new Asm(BASE).label("l0").callInd().label("l1").nop().label("l2").hlt().label("f").ret();
  const trace = start(a.at("l0")).pgd(a.at("f")).pge(a.at("l1")).fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[disabled ${hx(a.at("f"))}]`,
    `[enabled ${hx(a.at("l1"))} resumed]`,
    ...at(a, "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("a TIP.PGD without IP binds to the next branch that needs trace", () => {
  const a = new Asm(BASE).label("l0").nop().label("l1").call("f").label("l2").hlt().label("f").jmpInd();
  const trace = start(a.at("l0")).pgd().pge(a.at("l2")).fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "l1", "f"),
    "[disabled -]",
    `[enabled ${hx(a.at("l2"))}]`,
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("SKL014: with a filter, a TIP.PGD without IP binds to the direct jump that leaves it", () => {
  const a = new Asm(BASE).label("l0").nop().label("l1").jmp("out").label("in").hlt();
  a.label("out").nop().label("o1").jmpInd();
  const trace = start(a.at("l0")).pgd().bytes();
  const filter = {
    cfg: [1, 0, 0, 0] as [number, number, number, number],
    a: [a.at("l0"), 0n, 0n, 0n] as [bigint, bigint, bigint, bigint],
    b: [a.at("in"), 0n, 0n, 0n] as [bigint, bigint, bigint, bigint],
  };
  const skl014 = makeConfig({ addrFilter: filter }, ["skl014"]);
  assert.deepEqual(decodeBoth(trace, { image: a.image(), config: skl014 }), [
    ...at(a, "l0", "l1"),
    "[disabled -]",
  ]);
  // Without the erratum (or without a filter) it binds to the indirect jump.
  const plain = makeConfig({ addrFilter: filter });
  assert.deepEqual(decodeBoth(trace, { image: a.image(), config: plain }), [
    ...at(a, "l0", "l1", "out", "o1"),
    "[disabled -]",
  ]);
  const noFilter = makeConfig({}, ["skl014"]);
  assert.deepEqual(decodeBoth(trace, { image: a.image(), config: noFilter }), [
    ...at(a, "l0", "l1", "out", "o1"),
    "[disabled -]",
  ]);
});

test("TSX: instructions between begin and commit are speculative", () => {
  const a = new Asm(BASE)
    .label("l0")
    .nop()
    .label("l1")
    .nop()
    .label("l2")
    .nop()
    .label("l3")
    .nop()
    .label("l4")
    .hlt();
  const trace = start(a.at("l0"))
    .tsx(true)
    .fup(a.at("l1"))
    .tsx(false)
    .fup(a.at("l3"))
    .fup(a.at("l4"))
    .pgd()
    .bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[tsx begin ${hx(a.at("l1"))}]`,
    `? ${hx(a.at("l1"))}`,
    `? ${hx(a.at("l2"))}`,
    `[tsx commit ${hx(a.at("l3"))}]`,
    ...at(a, "l3"),
    `[async-disabled ${hx(a.at("l4"))}->-]`,
  ]);
});

test("TSX abort: the aborted instruction, then the abort handler", () => {
  const a = new Asm(BASE)
    .label("l0")
    .nop()
    .label("l1")
    .nop()
    .label("l2")
    .hlt()
    .label("h")
    .nop()
    .label("h1")
    .hlt();
  const trace = start(a.at("l0"))
    .tsx(true)
    .fup(a.at("l1"))
    .tsx(false, true)
    .fup(a.at("l2"))
    .tip(a.at("h"))
    .fup(a.at("h1"))
    .pgd()
    .bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[tsx begin ${hx(a.at("l1"))}]`,
    `? ${hx(a.at("l1"))}`,
    `[tsx abort ${hx(a.at("l2"))}]`,
    `[async-branch ${hx(a.at("l2"))}->${hx(a.at("h"))}]`,
    ...at(a, "h"),
    `[async-disabled ${hx(a.at("h1"))}->-]`,
  ]);
});

test("an overflow: what ran is lost, decoding goes on at the FUP's IP", () => {
  const a = new Asm(BASE).label("l0").jmpInd().label("l1").nop().label("l2").hlt();
  const t = start(a.at("l0")).ovf();
  // IP compression restarts after an overflow.
  t.enc.last.reset();
  const trace = t.fup(a.at("l1")).fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    `[overflow ${hx(a.at("l1"))}]`,
    ...at(a, "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("missing memory is an error at that IP; resync goes on at the next TIP", () => {
  const a = new Asm(BASE).label("l0").jmpInd().label("l1").nop().label("l2").hlt();
  const trace = start(a.at("l0")).tip(0xdead0000n).tip(a.at("l1")).fup(a.at("l2")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    "[error: no memory mapped at this address]",
  ]);
  assert.deepEqual(decodeBoth(trace, { image: a.image(), resync: true }), [
    ...at(a, "l0"),
    "[error: no memory mapped at this address]",
    ...at(a, "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("PTWRITE: the event follows its instruction, found by class or by the FUP's IP", () => {
  const a = new Asm(BASE)
    .label("l0")
    .nop()
    .label("p")
    .ptwrite()
    .label("l2")
    .nop()
    .label("q")
    .ptwrite()
    .label("end")
    .hlt();
  const trace = start(a.at("l0"))
    .ptw(0x2an, 4, false)
    .ptw(0x1234n, 8, true)
    .fup(a.at("q"))
    .fup(a.at("end"))
    .pgd()
    .bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "p"),
    "[ptwrite 0x2a/4 -]",
    ...at(a, "l2", "q"),
    `[ptwrite 0x1234/8 ${hx(a.at("q"))}]`,
    `[async-disabled ${hx(a.at("end"))}->-]`,
  ]);
});

test("paging: the PIP binds to MOV CR3, and the image follows the address space", () => {
  const images = new ImageSet();
  const a = new Asm(BASE).label("l0").movCr3().label("l1").jmpInd().label("t0").hlt();
  addCode(images.defaultImage, a.build(), BASE);
  // At 0x2000: two NOPs in address space 0x1000, a 4-byte ADD in 0x2000.
  addCode(images.image(0, 0x1000), Uint8Array.of(0x90, 0x90, 0xf4), 0x2000n);
  addCode(images.image(0, 0x2000), Uint8Array.of(0x48, 0x83, 0xc0, 0x01, 0xf4), 0x2000n);
  const t = new Trace().psb().mode(64).pip(0x1000n).fup(a.at("l0")).psbend();
  const trace = t.pip(0x2000n).tip(0x2000n).fup(0x2004n).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { images }), [
    ...at(a, "l0"),
    "[paging 0x2000]",
    ...at(a, "l1"),
    "0x2000",
    "[async-disabled 0x2004->-]",
  ]);
});

test("tick events: one on the first TNT bit after the time moved", () => {
  const a = new Asm(BASE).label("l0").jz("l0").label("l1").jz("l0").label("l2").hlt();
  const trace = new Trace()
    .psb()
    .tsc(1000n)
    .mode(64)
    .fup(a.at("l0"))
    .psbend()
    .tsc(2000n)
    .tnt("!.")
    .tsc(3000n)
    .tnt(".")
    .fup(a.at("l2"))
    .pgd()
    .bytes();
  const ticks = makeConfig({ enableTickEvents: true });
  // A tick is reported where the decoder is when its TNT is first used: the next
  // instruction's IP.
  assert.deepEqual(decodeBoth(trace, { image: a.image(), config: ticks }), [
    ...at(a, "l0"),
    `[tick ${hx(a.at("l0"))}]`,
    ...at(a, "l0"),
    `[tick ${hx(a.at("l1"))}]`,
    ...at(a, "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0", "l0", "l1"),
    `[async-disabled ${hx(a.at("l2"))}->-]`,
  ]);
});

test("SKD022: an asynchronous disable on VMLAUNCH becomes a synchronous one", () => {
  const a = new Asm(BASE).label("l0").nop().label("v").vmlaunch().label("after").hlt();
  const trace = start(a.at("l0")).fup(a.at("v")).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[async-disabled ${hx(a.at("v"))}->-]`,
  ]);
  assert.deepEqual(decodeBoth(trace, { image: a.image(), config: makeConfig({}, ["skd022"]) }), [
    ...at(a, "l0", "v"),
    "[disabled -]",
  ]);
});

test("power events: MWAIT and EXSTOP at their IPs, PWRE and PWRX where they come", () => {
  const a = new Asm(BASE).label("l0").nop().label("m").nop().label("l2").hlt();
  const trace = start(a.at("l0"))
    .mwait(1, 0)
    .pwre(1, 0)
    .exstop(true)
    .fup(a.at("m"))
    .pwrx(1, 1)
    .fup(a.at("l2"))
    .pgd()
    .bytes();
  const lines = decodeBoth(trace, { image: a.image() });
  assert.deepEqual(lines.slice(0, 1), at(a, "l0"));
  assert.ok(lines.includes(`[exstop ${hx(a.at("m"))}]`), lines.join("\n"));
  assert.ok(lines.includes("[pwre 1.0]"), lines.join("\n"));
  assert.ok(lines.includes("[pwrx 1,1]"), lines.join("\n"));
  assert.ok(lines.indexOf(hx(a.at("m"))) > lines.indexOf(`[exstop ${hx(a.at("m"))}]`), lines.join("\n"));
});

test("a stop after tracing stopped", () => {
  const a = new Asm(BASE).label("l0").nop().label("l1").hlt();
  const trace = start(a.at("l0")).fup(a.at("l1")).pgd().stop().bytes();
  assert.deepEqual(decodeBoth(trace, { image: a.image() }), [
    ...at(a, "l0"),
    `[async-disabled ${hx(a.at("l1"))}->-]`,
    "[stop]",
  ]);
});
