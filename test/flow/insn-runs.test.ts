/**
 * The instruction decoder's runs (src/flow/insn-runs.ts): instructions taken from
 * them are the ones the image holds (addresses, bytes, sizes, classes), across runs
 * longer than a run holds, entries in the middle of a run, direct jumps inside a
 * block, a 4 GiB boundary inside a section, and a run store that is full.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { PtEvent, Status } from "../../src/event/types.js";
import { drive } from "../../src/flow/drive.js";
import { FlowInsn } from "../../src/flow/flow-insn.js";
import { FlowClass, Insn, InsnDecoder } from "../../src/flow/index.js";
import {
  InsnRuns,
  MAX_RUN,
  RUN_HEADER,
  Run,
  RunFlag,
  RunInsn,
  runCount,
  runMode,
} from "../../src/flow/insn-runs.js";
import type { SectionCache } from "../../src/flow/section-cache.js";
import { SectionView } from "../../src/flow/section-view.js";
import { type Image, ImageHit, type Section } from "../../src/image/index.js";
import { decodeInsn, ExecMode, InsnInfo } from "../../src/isa/index.js";
import { Trace } from "../event/helpers.js";
import { Asm, addCode } from "./asm.js";
import { decodeBoth, hx } from "./run.js";

/** Straight-line code of `n` instructions of three lengths. */
function stretch(a: Asm, n: number): Asm {
  for (let k = 0; k < n; k++) {
    if (k % 3 === 0) a.nop();
    else if (k % 3 === 1) a.add();
    else a.load();
  }
  return a;
}

/**
 * Two stretches longer than a run (the second entered on its own too), a direct jump
 * inside the block, and a loop; `base` decides where the code is mapped.
 */
function program(base: bigint): { a: Asm; trace: Uint8Array } {
  const a = new Asm(base).label("top");
  stretch(a, 2 * MAX_RUN + 5).label("mid");
  stretch(a, MAX_RUN + 7)
    .jmp("tail")
    .hlt()
    .label("tail")
    .add()
    .jz("top")
    .jz("mid")
    .label("end")
    .hlt();
  // Three times from the top, twice from the middle.
  const trace = new Trace().psb().mode(64).fup(a.at("top")).psbend().tnt("!!.!.!..").fup(a.at("end")).pgd();
  return { a, trace: trace.bytes() };
}

/** Every instruction the instruction decoder gives: ip, size, bytes, classes. */
function insns(
  trace: Uint8Array,
  image: Image,
): { ip: bigint; size: number; raw: number[]; iclass: number; insnClass: number }[] {
  const out: { ip: bigint; size: number; raw: number[]; iclass: number; insnClass: number }[] = [];
  const status = drive(new InsnDecoder(trace, { image }), new Insn(), {
    record: (insn) =>
      out.push({
        ip: insn.ip,
        size: insn.size,
        raw: [...insn.bytes],
        iclass: insn.iclass,
        insnClass: insn.insnClass,
      }),
  });
  assert.equal(status, -ErrorCode.Eos);
  return out;
}

/** Check each instruction against the image's bytes and the isa decoder. */
function checkAgainstImage(got: ReturnType<typeof insns>, image: Image): void {
  const info = new InsnInfo();
  const bytes = new Uint8Array(15);
  for (const g of got) {
    const hi = Number(g.ip >> 32n);
    const lo = Number(g.ip & 0xffffffffn);
    const n = image.read(hi, lo, bytes, 15);
    const size = decodeInsn(bytes.subarray(0, Math.max(n, 0)), 0, hi, lo, ExecMode.Bits64, info);
    assert.equal(g.size, size, `size at ${hx(g.ip)}`);
    assert.deepEqual(g.raw, [...bytes.subarray(0, size)], `bytes at ${hx(g.ip)}`);
    assert.equal(g.insnClass, info.iclass, `class at ${hx(g.ip)}`);
    assert.notEqual(g.iclass, FlowClass.Unknown);
  }
}

for (const [what, base] of [
  ["low code", 0x401000n],
  ["code across a 4 GiB boundary", 0xffff_ff00n],
  ["kernel code", 0xffff_ffff_8100_0000n],
] as const) {
  test(`runs: ${what}: long stretches, entries mid-run, a jump inside the block`, () => {
    const { a, trace } = program(base);
    const image = a.image();
    const got = insns(trace, image);
    // Both decoders agree (the block decoder's blocks expanded by decoding the image).
    const lines = decodeBoth(trace, { image });
    assert.deepEqual(
      got.map((g) => hx(g.ip)),
      lines.filter((l) => l.startsWith("0x")),
    );
    // The stretches, the jump, the add and the first jz; the second jz thrice.
    const fromTop = 2 * MAX_RUN + 5 + MAX_RUN + 7 + 3;
    const fromMid = MAX_RUN + 7 + 3;
    assert.equal(got.length, 3 * fromTop + 2 * fromMid + 3);
    checkAgainstImage(got, image);
    if (base === 0xffff_ff00n)
      assert.ok(got.some((g) => g.ip >= 0x1_0000_0000n) && got.some((g) => g.ip < 0x1_0000_0000n));
  });
}

/** A view onto the section of `image` at `ip`, with its cache. */
function viewAt(image: Image, ip: bigint): { view: SectionView; cache: SectionCache } {
  const view = new SectionView();
  const isid = view.lookup(
    image,
    new WeakMap<Section, SectionCache>(),
    new ImageHit(),
    Number(ip >> 32n),
    Number(ip & 0xffffffffn),
  );
  assert.ok(isid > 0);
  return { view, cache: view.cache! };
}

test("InsnRuns: a run's words, follow agrees with find, and a full store says -1", () => {
  const a = stretch(new Asm(0x1000n), MAX_RUN + 3)
    .jz("x")
    .label("x")
    .hlt();
  const image = a.image();
  const { view, cache } = viewAt(image, 0x1000n);
  const probe = new FlowInsn();
  const runs = new InsnRuns(cache.section.size);
  const r = runs.find(0, ExecMode.Bits64, view, probe);
  const w = runs.words;
  // A full run of straight-line code: MAX_RUN instructions, then the code's bytes.
  const head = w[r + Run.Head]!;
  assert.equal(runCount(head), MAX_RUN);
  assert.equal(runMode(head), ExecMode.Bits64);
  assert.equal(head & (RunFlag.On | RunFlag.Branch), RunFlag.On);
  const at = (r + RUN_HEADER) * 2;
  let off = 0;
  const info = new InsnInfo();
  const bytes = a.build();
  for (let k = 0; k < MAX_RUN; k++) {
    const h = runs.halves[at + k]!;
    const size = decodeInsn(bytes, off, 0, 0x1000 + off, ExecMode.Bits64, info);
    assert.equal(RunInsn.size(h), size);
    assert.equal(RunInsn.insnClass(h), info.iclass);
    assert.equal(RunInsn.flowClass(h), FlowClass.Other);
    off += size;
  }
  assert.equal(w[r + Run.End], off);
  const b = (at + MAX_RUN) * 2;
  assert.deepEqual([...runs.bytes.subarray(b, b + off)], [...bytes.subarray(0, off)]);
  // The next run ends at the conditional jump and carries its displacement (0 here).
  const r2 = runs.follow(r, off, ExecMode.Bits64, view, probe);
  assert.equal(r2, runs.find(off, ExecMode.Bits64, view, probe));
  const head2 = runs.words[r2 + Run.Head]!;
  assert.equal(runCount(head2), 4);
  assert.equal(head2 & (RunFlag.On | RunFlag.Branch), 0);
  assert.equal(RunInsn.flowClass(runs.halves[(r2 + RUN_HEADER) * 2 + 3]!), FlowClass.CondJump);
  assert.equal(runs.words[r2 + Run.Disp], 0);
  // Remembered: the same answer again, and for another offset too.
  assert.equal(runs.follow(r, off, ExecMode.Bits64, view, probe), r2);
  const r3 = runs.follow(r, 1, ExecMode.Bits64, view, probe);
  assert.equal(r3, runs.find(1, ExecMode.Bits64, view, probe));
  assert.equal(runCount(runs.words[r3 + Run.Head]!), MAX_RUN);
  // A store with room for nothing: -1, and the decoder's general way is taken.
  const full = new InsnRuns(cache.section.size, 8);
  assert.equal(full.find(0, ExecMode.Bits64, view, probe), -1);
});

test("runs: an instruction that runs past the section's end ends a run before it", () => {
  // The first two bytes of a four-byte ADD end the section.
  const a = new Asm(0x1000n).nop().add().raw(0x48, 0x83);
  const { view, cache } = viewAt(a.image(), 0x1000n);
  const runs = new InsnRuns(cache.section.size);
  const r = runs.find(0, ExecMode.Bits64, view, new FlowInsn());
  assert.equal(runCount(runs.words[r + Run.Head]!), 2);
  assert.equal(runs.words[r + Run.End], 5);
});

test("runs: returns to several callers, and from a call into another section and back", () => {
  // g, in a section of its own, is called from the middle of f.
  const G = 0x9000n;
  const a = new Asm(0x1000n).label("top").nop().call("f").add().call("f").load().call("f").jz("top");
  a.label("end").hlt();
  a.label("f").add().label("callg");
  const rel = Number(G - (a.at("callg") + 5n));
  a.raw(0xe8, rel & 0xff, (rel >> 8) & 0xff, (rel >> 16) & 0xff, (rel >>> 24) & 0xff)
    .nop()
    .ret();
  const image = a.image();
  addCode(image, new Asm(G).nop().add().ret().build(), G);
  // Per round: three calls of f, each with a return from g and from f (compressed), then jz.
  const round = "!!!!!!";
  const trace = new Trace()
    .psb()
    .mode(64)
    .fup(a.at("top"))
    .psbend()
    .tnt(round)
    .tnt("!")
    .tnt(round)
    .tnt("!")
    .tnt(round)
    .tnt(".")
    .fup(a.at("end"))
    .pgd()
    .bytes();
  const got = insns(trace, image);
  const lines = decodeBoth(trace, { image });
  assert.deepEqual(
    got.map((g) => hx(g.ip)),
    lines.filter((l) => l.startsWith("0x")),
  );
  // nop, 3 x (call, f: add call [g: nop add ret] nop ret, then add/load/jz): 3 rounds.
  assert.equal(got.length, 3 * (1 + 3 * 8 + 3));
  checkAgainstImage(got, image);
  assert.ok(got.some((g) => g.ip === G));
});

test("runs: no event inside a block, also while a run is being taken", () => {
  // One block of four instructions, one run, twice.
  const a = new Asm(0x401000n).label("top").nop().add().load().jz("top").label("end").hlt();
  const trace = new Trace().psb().mode(64).fup(a.at("top")).psbend().tnt("!.").fup(a.at("end")).pgd().bytes();
  const dec = new InsnDecoder(trace, { image: a.image() });
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
  const insn = new Insn();
  for (let round = 0; round < 2; round++) {
    for (let k = 0; k < 3; k++) {
      assert.equal(dec.next(insn), 0);
      assert.equal(dec.event(ev), -ErrorCode.BadQuery);
    }
    assert.ok(dec.next(insn) >= 0);
    assert.equal(insn.ip, a.at("top") + 1n + 4n + 8n);
  }
});

/**
 * NOPs of 1 to 15 bytes (66 and 2E prefixes on NOP r/m16 with a SIB and a 32-bit
 * displacement, not 0) in a loop taken twice, and its trace.
 */
function nopsOfEveryLength(): { image: Image; trace: Uint8Array } {
  const a = new Asm(0x401000n).label("top");
  for (let size = 1; size <= 15; size++) {
    if (size === 1) a.nop();
    else if (size < 9) a.raw(...[0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66].slice(0, size - 1), 0x90);
    else a.raw(...new Array(size - 9).fill(0x66), 0x2e, 0x0f, 0x1f, 0x84, 0x00, size, 0x11, 0x22, 0x33);
  }
  a.jz("top").label("end").hlt();
  const trace = new Trace().psb().mode(64).fup(a.at("top")).psbend().tnt("!.").fup(a.at("end")).pgd().bytes();
  return { image: a.image(), trace };
}

test("runs: bytes of instructions of every length, into records that take turns", () => {
  // The decoder copies bytes as whole words and the tail one at a time.
  const { image, trace } = nopsOfEveryLength();
  const got = insns(trace, image);
  assert.equal(got.length, 2 * 16);
  assert.deepEqual(
    got.slice(0, 15).map((g) => g.size),
    Array.from({ length: 15 }, (_, k) => k + 1),
  );
  checkAgainstImage(got, image);
  // Two records in turn (a copy made for one must not land in the other).
  const dec = new InsnDecoder(trace, { image });
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
  const recs = [new Insn(), new Insn()];
  for (let k = 0; k < got.length; k++) {
    const rec = recs[k % 2]!;
    status = dec.next(rec);
    assert.ok(status >= 0, `status ${status} at ${k}`);
    while (status & Status.EventPending) status = dec.event(ev);
    assert.deepEqual([...rec.bytes], got[k]!.raw, `bytes of instruction ${k}`);
    assert.equal(rec.ip, got[k]!.ip);
  }
});

test("runs: without bytes (raw off) the records are the same, and with raw on again mid-run the bytes are right", () => {
  // The same NOPs of 1 to 15 bytes; bytes off for three instructions in every five.
  const { image, trace } = nopsOfEveryLength();
  const got = insns(trace, image);
  const dec = new InsnDecoder(trace, { image });
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
  const rec = new Insn();
  let withoutBytes = 0;
  for (let k = 0; k < got.length; k++) {
    dec.raw = k % 5 >= 2;
    rec.raw.fill(0xcc);
    status = dec.next(rec);
    assert.ok(status >= 0, `status ${status} at ${k}`);
    while (status & Status.EventPending) status = dec.event(ev);
    assert.equal(rec.ip, got[k]!.ip);
    assert.equal(rec.size, got[k]!.size);
    assert.equal(rec.iclass, got[k]!.iclass);
    assert.equal(rec.insnClass, got[k]!.insnClass);
    if (dec.raw) assert.deepEqual([...rec.bytes], got[k]!.raw, `bytes of instruction ${k}`);
    else if (rec.raw[0] === 0xcc) withoutBytes++;
  }
  // (The run's instructions came without bytes: the ones the general way decodes have them.)
  assert.ok(withoutBytes > 10, `${withoutBytes} instructions without bytes`);
});
