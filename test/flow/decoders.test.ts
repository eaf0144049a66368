/**
 * The decoders' records and queries: blocks (boundaries, classes, the block cache's
 * effect on them, the 65535-instruction limit, end-on-call), instructions (bytes,
 * classes), an instruction split over two sections, time and core:bus ratio,
 * address space, synchronisation forward, backward and at an offset.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { PtEvent, Status } from "../../src/event/types.js";
import { Block, BlockDecoder, FlowClass, Insn, InsnDecoder } from "../../src/flow/index.js";
import { Image } from "../../src/image/index.js";
import { InsnClass } from "../../src/isa/index.js";
import { config as makeConfig, Trace } from "../event/helpers.js";
import { Asm, addCode } from "./asm.js";
import { decodeBoth, hx, runBlocks } from "./run.js";

const BASE = 0x1000n;

function start(ip: bigint): Trace {
  return new Trace().psb().mode(64).fup(ip).psbend();
}

/** Every block until the end or an error: [ip, endIp, ninsn, iclass]. */
function blocks(dec: BlockDecoder): [string, string, number, number][] {
  const out: [string, string, number, number][] = [];
  const block = new Block();
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status >= 0 && !(status & Status.Eos)) {
    while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
    if (status < 0 || status & Status.Eos) break;
    status = dec.next(block);
    out.push([hx(block.ip), hx(block.endIp), block.ninsn, block.iclass]);
  }
  return out;
}

test("blocks: straight-line code up to the branch that needs trace", () => {
  const a = new Asm(BASE)
    .label("l0")
    .nop()
    .add()
    .label("j")
    .jmp("l3")
    .hlt()
    .label("l3")
    .load()
    .label("c")
    .jz("l0");
  a.label("end").hlt();
  const trace = start(a.at("l0")).tnt("!.").fup(a.at("end")).pgd().bytes();
  const dec = new BlockDecoder(trace, { image: a.image() });
  assert.deepEqual(blocks(dec), [
    [hx(a.at("l0")), hx(a.at("c")), 5, FlowClass.CondJump],
    [hx(a.at("l0")), hx(a.at("c")), 5, FlowClass.CondJump],
  ]);
});

test("the block cache: the first walk ends blocks after calls, later walks run through", () => {
  const a = new Asm(BASE).label("l0").nop().label("c").call("f").label("r").jz("l0").label("end").hlt();
  a.label("f").nop().label("fr").ret();
  // Twice around: call, compressed return, jz taken; then not taken.
  const trace = start(a.at("l0")).tnt("!!!.").fup(a.at("end")).pgd().bytes();
  const got = blocks(new BlockDecoder(trace, { image: a.image() }));
  assert.deepEqual(got.slice(0, 5), [
    [hx(a.at("l0")), hx(a.at("c")), 2, FlowClass.Call],
    [hx(a.at("f")), hx(a.at("fr")), 2, FlowClass.Return],
    [hx(a.at("r")), hx(a.at("r")), 1, FlowClass.CondJump],
    [hx(a.at("l0")), hx(a.at("fr")), 4, FlowClass.Return],
    [hx(a.at("r")), hx(a.at("r")), 1, FlowClass.CondJump],
  ]);
  // With end-on-call, blocks end after every call; the instructions stay the same.
  const endOnCall = makeConfig({ endOnCall: true });
  const ended = blocks(new BlockDecoder(trace, { image: a.image(), config: endOnCall }));
  assert.deepEqual(ended[3], [hx(a.at("l0")), hx(a.at("c")), 2, FlowClass.Call]);
  assert.deepEqual(
    decodeBoth(trace, { image: a.image(), config: endOnCall }),
    decodeBoth(trace, { image: a.image() }),
  );
});

test("a block holds at most 65535 instructions; long stretches go on in the next", () => {
  const n = 70_000;
  const code = new Uint8Array(n + 2).fill(0x90);
  code[n] = 0xff; // jmp rax
  code[n + 1] = 0xe0;
  const image = new Image("nops");
  addCode(image, code, BASE);
  const end = BASE + BigInt(n) + 2n;
  addCode(image, Uint8Array.of(0xf4), end);
  // Twice through: the first walk fills the block cache, the second runs from it.
  const trace = start(BASE).tip(BASE).tip(end).fup(end).pgd().bytes();
  for (let pass = 0; pass < 2; pass++) {
    const got = blocks(new BlockDecoder(trace, { image }));
    assert.equal(
      got.reduce((sum, b) => sum + b[2], 0),
      2 * (n + 1),
    );
    assert.ok(got.every((b) => b[2] <= 0xffff));
    assert.ok(got.length >= 4);
    // Each block ends at its last instruction, also one that fills up right after a
    // trampoline of the block cache (libipt ends it at the trampoline's target).
    for (const [ip, endIp, ninsn] of got) {
      assert.equal(BigInt(endIp) - BigInt(ip) + 1n, BigInt(ninsn), `block at ${ip}`);
    }
  }
  const t = runBlocks(trace, { image, limit: 200_000 });
  assert.equal(t.ips.length, 2 * (n + 1));
});

test("the block cache keeps the class of a block's last instruction: the same on every visit", () => {
  // Each instruction that a TIP decides ends a block that runs three times (the first
  // fills the block cache, the others run from it), the TIP going back to its start.
  const cases: [string, number[], number][] = [
    ["jmp rax", [0xff, 0xe0], FlowClass.Jump],
    ["jmp far [rax]", [0xff, 0x28], FlowClass.FarJump],
    ["call far [rax]", [0xff, 0x18], FlowClass.FarCall],
    ["retf", [0xcb], FlowClass.FarReturn],
    ["int 0x80", [0xcd, 0x80], FlowClass.FarCall],
    ["syscall", [0x0f, 0x05], FlowClass.FarCall],
    ["sysretq", [0x48, 0x0f, 0x07], FlowClass.FarReturn],
    ["iretq", [0x48, 0xcf], FlowClass.FarReturn],
    ["vmcall", [0x0f, 0x01, 0xc1], FlowClass.FarCall],
  ];
  for (const [name, bytes, fclass] of cases) {
    const a = new Asm(BASE)
      .label("l0")
      .nop()
      .add()
      .label("x")
      .raw(...bytes);
    const trace = start(a.at("l0")).tip(a.at("l0")).tip(a.at("l0")).pgd().bytes();
    const got = blocks(new BlockDecoder(trace, { image: a.image() }));
    const want = [hx(a.at("l0")), hx(a.at("x")), 3, fclass];
    assert.deepEqual(got, [want, want, want], name);
  }
});

test("a jump too far for a block-cache entry and a taken branch run from the cache as on the first walk", () => {
  // nop; jmp +64 KiB (past an entry's 16-bit reach: an entry of its own); there nop;
  // jz back to the start. Three times around: the first walk fills the cache, the
  // others take the jump and the branch's target from the entries.
  const far = 0x10000;
  const code = new Uint8Array(far + 8).fill(0xf4);
  code[0] = 0x90;
  code[1] = 0xe9; // jmp rel32
  new DataView(code.buffer).setInt32(2, far - 6, true);
  code[far] = 0x90;
  code[far + 1] = 0x0f; // jz rel32
  code[far + 2] = 0x84;
  new DataView(code.buffer).setInt32(far + 3, -(far + 7), true);
  const image = new Image("far");
  addCode(image, code, BASE);
  const end = BASE + BigInt(far + 7);
  const trace = start(BASE).tnt("!!.").fup(end).pgd().bytes();
  const want = [hx(BASE), hx(BASE + BigInt(far + 1)), 4, FlowClass.CondJump];
  assert.deepEqual(blocks(new BlockDecoder(trace, { image })), [want, want, want]);
  // The same instructions as the instruction decoder's, which has no block cache.
  const loop = [0, 1, far, far + 1].map((o) => hx(BASE + BigInt(o)));
  assert.deepEqual(decodeBoth(trace, { image }).slice(0, 12), [...loop, ...loop, ...loop]);
});

test("instructions: address, size, bytes and classes", () => {
  const a = new Asm(BASE).label("l0").load().label("c").call("f").label("end").hlt().label("f").ret();
  const trace = start(a.at("l0")).tnt("!").fup(a.at("end")).pgd().bytes();
  const dec = new InsnDecoder(trace, { image: a.image() });
  const insn = new Insn();
  const ev = new PtEvent();
  let status = dec.syncForward();
  const seen: [string, number, number, number, string][] = [];
  while (status >= 0 && !(status & Status.Eos)) {
    while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
    if (status < 0 || status & Status.Eos) break;
    status = dec.next(insn);
    if (status < 0) break;
    seen.push([hx(insn.ip), insn.size, insn.iclass, insn.insnClass, Buffer.from(insn.bytes).toString("hex")]);
  }
  assert.deepEqual(seen, [
    [hx(a.at("l0")), 8, FlowClass.Other, InsnClass.Other, "488b842410000000"],
    [hx(a.at("c")), 5, FlowClass.Call, InsnClass.Call, "e801000000"],
    [hx(a.at("f")), 1, FlowClass.Return, InsnClass.Return, "c3"],
  ]);
});

test("an instruction split over two sections is decoded from both", () => {
  const image = new Image("split");
  // nop; add rax, 1 (48 83 c0 01) with its last two bytes in the next section; hlt.
  const first = addCode(image, Uint8Array.of(0x90, 0x48, 0x83), 0x1000n);
  addCode(image, Uint8Array.of(0xc0, 0x01, 0xf4), 0x1003n);
  const trace = start(0x1000n).fup(0x1005n).pgd().bytes();
  assert.deepEqual(decodeBoth(trace, { image }), ["0x1000", "0x1001", "[async-disabled 0x1005->-]"]);
  const dec = new BlockDecoder(trace, { image });
  const block = new Block();
  let status = dec.syncForward();
  const ev = new PtEvent();
  while (status & Status.EventPending) status = dec.event(ev);
  status = dec.next(block);
  assert.equal(block.truncated, true);
  assert.equal(block.isid, first);
  assert.deepEqual([...block.raw.subarray(0, block.size)], [0x48, 0x83, 0xc0, 0x01]);
  assert.equal(hx(block.endIp), "0x1001");
});

test("time, core:bus ratio and address space queries", () => {
  const a = new Asm(BASE).label("l0").jz("l0").label("end").hlt();
  const trace = new Trace()
    .psb()
    .tsc(0x123456n)
    .cbr(42)
    .pip(0xabc000n)
    .mode(64)
    .fup(a.at("l0"))
    .psbend()
    .tnt(".")
    .bytes();
  const dec = new BlockDecoder(trace, { image: a.image() });
  assert.equal(dec.time(), -ErrorCode.NoTime);
  assert.equal(dec.coreBusRatio(), -ErrorCode.NoCbr);
  assert.equal(dec.cr3, 0xffff_ffff_ffff_ffffn);
  const ev = new PtEvent();
  let status = dec.syncForward();
  while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
  assert.equal(dec.time(), 0);
  assert.equal(dec.tsc, 0x123456n);
  assert.equal(dec.coreBusRatio(), 42);
  assert.equal(dec.cr3, 0xabc000n);
  assert.equal(dec.vmcs, 0xffff_ffff_ffff_ffffn);
});

test("synchronising forward, backward and at an offset", () => {
  const a = new Asm(BASE).label("l0").nop().label("l1").nop().label("l2").hlt();
  const t = start(a.at("l0")).fup(a.at("l1")).pgd();
  const second = t.length;
  t.psb().mode(64).fup(a.at("l1")).psbend().fup(a.at("l2")).pgd();
  const trace = t.bytes();
  const first = (dec: BlockDecoder | InsnDecoder): string => {
    const ev = new PtEvent();
    let status = dec.offset;
    assert.ok(status >= 0);
    status = dec.event(ev);
    // The PSB+ status updates come first; Enabled says where.
    return hx(ev.ip);
  };
  for (const make of [
    () => new BlockDecoder(trace, { image: a.image() }),
    () => new InsnDecoder(trace, { image: a.image() }),
  ]) {
    const fwd = make();
    assert.ok(fwd.syncForward() >= 0);
    assert.equal(fwd.syncOffset, 0);
    assert.equal(first(fwd), hx(a.at("l0")));
    const back = make();
    assert.equal(back.syncBackward(), 0);
    assert.equal(back.syncOffset, second);
    assert.equal(first(back), hx(a.at("l1")));
    const set = make();
    assert.ok(set.syncSet(second) >= 0);
    assert.equal(set.syncOffset, second);
    assert.equal(set.syncSet(second + 1), -ErrorCode.NoSync);
  }
  const none = new BlockDecoder(Uint8Array.of(0, 0, 0), { image: a.image() });
  assert.equal(none.syncForward(), -ErrorCode.Eos);
  assert.equal(none.next(new Block()), -ErrorCode.NoSync);
});
