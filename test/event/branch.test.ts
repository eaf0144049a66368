/**
 * Control flow: TNT, TIP, TIP.PGE/PGD, FUP as asynchronous branch source, and the
 * context changes (MODE.Exec, PIP, VMCS, MODE.TSX) that bind to them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { config, decodeEvents, Trace } from "./helpers.js";

const enabledAt = (ip: bigint) => new Trace().psb().mode(64).fup(ip).psbend();
const STATUS = ["enabled 0x1000 [status]", "exec-mode 64 0x1000 [status]"];

test("TNT and TIP carry the branch information, oldest TNT bit first", () => {
  const t = enabledAt(0x1000n).tnt("!.!").tip(0x2000n).tnt("..!!.!!!..!.!!!!.").tip(0x7fff00001234n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "tnt !.!",
    "tip 0x2000",
    "tnt ..!!.!!!..!.!!!!.",
    "tip 0x7fff00001234",
  ]);
});

test("a TIP with suppressed IP is a Tip event with its IP suppressed", () => {
  const t = enabledAt(0x1000n).tip();
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), ["tip -"]);
});

test("TIP.PGD disables, TIP.PGE enables; TNT and TIP need tracing enabled", () => {
  const t = enabledAt(0x1000n).pgd().pge(0x3000n).pgd(0x3010n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "disabled -",
    "enabled 0x3000",
    "disabled 0x3010",
  ]);

  for (const after of [(x: Trace) => x.tnt("!"), (x: Trace) => x.tip(0x2000n)]) {
    const d = decodeEvents(after(enabledAt(0x1000n).pgd()).bytes());
    assert.deepEqual(d.events.slice(2), ["disabled -"]);
    assert.match(d.end, /^unexpected packet context/);
  }
});

test("FUP then TIP: an asynchronous branch; FUP then TIP.PGD: an asynchronous disable", () => {
  const t = enabledAt(0x1000n).fup(0x1010n).tip(0x8000n).fup(0x8020n).pgd();
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "async-branch 0x1010->0x8000",
    "async-disabled 0x8020->-",
  ]);
});

test("an asynchronous branch needs a source IP", () => {
  const t = enabledAt(0x1000n).fup().tip(0x2000n);
  const d = decodeEvents(t.bytes());
  assert.deepEqual(d.events, STATUS);
  assert.match(d.end, /^ip has been suppressed @/);
});

test("MODE.Exec binds to the next TIP-family packet, after its own event", () => {
  const t = enabledAt(0x1000n)
    .mode(32)
    .tip(0x2000n)
    .fup(0x2010n)
    .mode(16)
    .tip(0x3000n)
    .mode(64)
    .pgd()
    .mode(32);
  t.pge(0x4000n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "tip 0x2000",
    "exec-mode 32 0x2000",
    "async-branch 0x2010->0x3000",
    "exec-mode 16 0x3000",
    // Tracing stops with the branch: the new mode's location is never reached.
    "exec-mode 64 -",
    "disabled -",
    "enabled 0x4000",
    "exec-mode 32 0x4000",
  ]);
});

test("a MODE.Exec before a FUP binds to that FUP, which then is no branch source", () => {
  const t = enabledAt(0x1000n).mode(32).fup(0x1010n).tip(0x3000n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), ["exec-mode 32 0x1010", "tip 0x3000"]);
});

test("a MODE.Exec that changes nothing still binds, silently", () => {
  const t = enabledAt(0x1000n).mode(64).tip(0x2000n).tnt("!");
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), ["tip 0x2000", "tnt !"]);
});

test("MODE.Exec IF changes become Iflags events when enabled", () => {
  const t = new Trace().psb().mode(64, false).fup(0x1000n).psbend().mode(64, true).tip(0x2000n);
  const cfg = config({ enableIflagsEvents: true });
  assert.deepEqual(decodeEvents(t.bytes(), cfg).events.slice(3), ["tip 0x2000", "iflags if=1 0x2000"]);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), ["tip 0x2000"]);
});

test("PIP and VMCS: standalone, or part of an asynchronous branch (VMCS before PIP)", () => {
  const t = enabledAt(0x1000n).pip(0x5000n).vmcs(0x6000n).fup(0x1010n).pip(0x7000n, true).vmcs(0x8000n);
  t.tip(0x9000n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "paging 0x5000",
    "vmcs 0x6000",
    "async-branch 0x1010->0x9000",
    "async-vmcs 0x8000 0x9000",
    "async-paging 0x7000 nr 0x9000",
  ]);
});

test("PIP and VMCS of an asynchronous disable have no IP", () => {
  const t = enabledAt(0x1000n).fup(0x1010n).pip(0x7000n).vmcs(0x8000n).pgd();
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "async-disabled 0x1010->-",
    "async-vmcs 0x8000 -",
    "async-paging 0x7000 -",
  ]);
});

test("MODE.TSX binds to its FUP; an abort's FUP is also the branch source", () => {
  const t = enabledAt(0x1000n).tsx(true).fup(0x1010n).tnt("!").tsx(false, true).fup(0x1020n).tip(0x1800n);
  t.tsx(false).fup(0x1830n).tnt(".");
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "tsx begin 0x1010",
    "tnt !",
    "tsx abort 0x1020",
    "async-branch 0x1020->0x1800",
    "tsx commit 0x1830",
    "tnt .",
  ]);
});

test("MODE.TSX with tracing disabled stands alone", () => {
  const t = enabledAt(0x1000n).pgd().tsx(true).pge(0x2000n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), ["disabled -", "tsx begin -", "enabled 0x2000"]);
});

test("IP compression: each IP packet updates the last IP", () => {
  const t = enabledAt(0xffffffff81000000n).tip(0xffffffff81001234n).tip(0xffffffff8200abcdn).tip(0x401000n);
  assert.deepEqual(decodeEvents(t.bytes()).events.slice(2), [
    "tip 0xffffffff81001234",
    "tip 0xffffffff8200abcd",
    "tip 0x401000",
  ]);
});
