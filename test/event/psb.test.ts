/**
 * PSB+: header packets become status updates published at PSBEND with the header's
 * IP and time; the first says whether tracing is enabled. BDM70.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { config, decodeEvents, Trace } from "./helpers.js";

test("a PSB+ with FUP: enabled at its IP, then every header packet as a status update", () => {
  const t = new Trace()
    .psb()
    .tsc(0x1234n)
    .cbr(12)
    .mode(64, true)
    .pip(0xabc000n, true)
    .vmcs(0x5000n)
    .tsx(true)
    .mnt(0x77n)
    .fup(0x401000n)
    .psbend();
  assert.deepEqual(decodeEvents(t.bytes()).events, [
    "enabled 0x401000 [status]",
    "cbr 12 [status]",
    "exec-mode 64 0x401000 [status]",
    "async-paging 0xabc000 nr 0x401000 [status]",
    "async-vmcs 0x5000 0x401000 [status]",
    "tsx begin 0x401000 [status]",
    // libipt publishes MNT from PSB+ but not as a status update.
    "mnt 0x77",
  ]);
});

test("a PSB+ without FUP (or with a suppressed one): disabled, header IPs suppressed", () => {
  for (const withFup of [false, true]) {
    const t = new Trace().psb().mode(32);
    if (withFup) t.fup();
    t.psbend().mode(32).pge(0x2000n);
    assert.deepEqual(decodeEvents(t.bytes()).events, [
      "disabled - [status]",
      "exec-mode 32 - [status]",
      "enabled 0x2000",
    ]);
  }
});

test("iflags status updates only when enabled in the configuration", () => {
  const t = new Trace().psb().mode(16, true).fup(0x1000n).psbend();
  assert.deepEqual(decodeEvents(t.bytes(), config({ enableIflagsEvents: true })).events, [
    "enabled 0x1000 [status]",
    "exec-mode 16 0x1000 [status]",
    "iflags if=1 0x1000 [status]",
  ]);
  assert.deepEqual(decodeEvents(t.bytes()).events, [
    "enabled 0x1000 [status]",
    "exec-mode 16 0x1000 [status]",
  ]);
});

test("PSB+ events carry the time at PSBEND", () => {
  const t = new Trace().psb().fup(0x1000n).tsc(0x99n).psbend();
  const d = decodeEvents(t.bytes());
  assert.equal(d.raw.length, 1);
  assert.equal(d.raw[0]!.hasTsc, true);
  assert.equal(d.raw[0]!.tsc, 0x99n);
});

test("a later PSB+ checks the execution mode it restates", () => {
  const same = new Trace().psb().mode(64).fup(0x1000n).psbend().tnt("!").psb().mode(64).fup(0x1002n).psbend();
  const d = decodeEvents(same.bytes());
  assert.equal(d.end, "eos");
  assert.deepEqual(d.events.slice(3), ["enabled 0x1002 [status]", "exec-mode 64 0x1002 [status]"]);

  const other = new Trace()
    .psb()
    .mode(64)
    .fup(0x1000n)
    .psbend()
    .tnt("!")
    .psb()
    .mode(32)
    .fup(0x1002n)
    .psbend();
  const bad = decodeEvents(other.bytes());
  assert.deepEqual(bad.events, ["enabled 0x1000 [status]", "exec-mode 64 0x1000 [status]", "tnt !"]);
  assert.match(bad.end, /^bad status update @/);
});

test("the IF bit is only checked with iflags events (otherwise updates may be missing)", () => {
  const t = new Trace()
    .psb()
    .mode(64, false)
    .fup(0x1000n)
    .psbend()
    .psb()
    .mode(64, true)
    .fup(0x1000n)
    .psbend();
  assert.equal(decodeEvents(t.bytes()).end, "eos");
  assert.match(decodeEvents(t.bytes(), config({ enableIflagsEvents: true })).end, /^bad status update/);
});

test("packets that do not belong in PSB+ are -BadContext", () => {
  const t = new Trace().psb().fup(0x1000n).tnt("!").psbend();
  const d = decodeEvents(t.bytes());
  assert.deepEqual(d.events, []);
  assert.match(d.end, /^unexpected packet context @/);
});

test("events must not be pending across a PSB", () => {
  // A MODE.Exec waits for its TIP; a PSB comes first.
  const t = new Trace().psb().fup(0x1000n).psbend().mode(32);
  const psbAt = t.length;
  t.psb().fup(0x1000n).psbend();
  const d = decodeEvents(t.bytes());
  assert.deepEqual(d.events, ["enabled 0x1000 [status]"]);
  assert.equal(d.end, `unexpected packet context @${psbAt}`);
});

test("BDM70: a PSB+ FUP followed by TIP.PGE does not enable tracing", () => {
  const t = new Trace().psb().mode(64).fup(0x1000n).psbend().mtc(1).pge(0x1000n).tnt("!");
  assert.deepEqual(decodeEvents(t.bytes(), config({}, ["bdm70"])).events, [
    "disabled - [status]",
    "exec-mode 64 - [status]",
    "enabled 0x1000",
    "tnt !",
  ]);
  // Without the erratum the trace is taken at its word: enabled twice.
  assert.deepEqual(decodeEvents(t.bytes()).events, [
    "enabled 0x1000 [status]",
    "exec-mode 64 0x1000 [status]",
    "enabled 0x1000",
    "tnt !",
  ]);
});

test("BDM70 does not apply when another packet comes before the TIP.PGE", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!").pgd().pge(0x1000n);
  assert.deepEqual(decodeEvents(t.bytes(), config({}, ["bdm70"])).events, [
    "enabled 0x1000 [status]",
    "tnt !",
    "disabled -",
    "enabled 0x1000",
  ]);
});
