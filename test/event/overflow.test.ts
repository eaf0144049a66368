/**
 * OVF: resuming at the FUP (tracing enabled) or standalone (disabled), events pending
 * at the overflow, PSB+ ended by OVF, time and calibration across it, and the errata
 * that break the FUP rule (SKD010, APL11, APL12), each on and off.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { config, decodeEvents, Trace } from "./helpers.js";

const enabledAt = (ip: bigint) => new Trace().psb().fup(ip).psbend();
const after = (t: Trace, errata: string[] = []) => decodeEvents(t.bytes(), config({}, errata));

test("OVF then FUP: tracing resumes at the FUP's IP", () => {
  const t = enabledAt(0x1000n).tnt("!").ovf().mtc(3).tsc(0x500n).fup(0x2000n).tnt(".");
  assert.deepEqual(after(t).events.slice(1), ["tnt !", "overflow 0x2000", "tnt ."]);
});

test("OVF then other packets: it resolved with tracing disabled", () => {
  const t = enabledAt(0x1000n).ovf().mode(32).pge(0x3000n);
  assert.deepEqual(after(t).events.slice(1), ["overflow -", "enabled 0x3000", "exec-mode 32 0x3000"]);
});

test("an OVF at the end of the trace stands alone", () => {
  const d = after(enabledAt(0x1000n).ovf().cyc(4));
  assert.deepEqual(d.events.slice(1), ["overflow -"]);
  assert.equal(d.end, "eos");
});

test("OVF then a packet that needs tracing enabled is -BadContext at the OVF", () => {
  const t = enabledAt(0x1000n);
  const ovfAt = t.length;
  t.ovf().tip(0x4000n);
  const d = after(t);
  assert.deepEqual(d.events.slice(1), []);
  assert.equal(d.end, `unexpected packet context @${ovfAt}`);
});

test("events pending at an OVF: published without IP when disabled, dropped when tracing", () => {
  const disabled = enabledAt(0x1000n).pgd().ptw(1n, 4, true).mwait(1, 2).ovf().pge(0x3000n);
  assert.deepEqual(after(disabled).events.slice(1), [
    "disabled -",
    "ptwrite 0x1/4 -",
    "mwait 1,2 -",
    "overflow -",
    "enabled 0x3000",
  ]);
  const tracing = enabledAt(0x1000n).ptw(1n, 4, true).ovf().fup(0x2000n);
  assert.deepEqual(after(tracing).events.slice(1), ["overflow 0x2000"]);
});

test("an OVF ends PSB+: its status updates come first, without the disabled one", () => {
  const enabled = new Trace().psb().mode(64).fup(0x1000n).ovf().fup(0x2000n);
  assert.deepEqual(after(enabled).events, [
    "enabled 0x1000 [status]",
    "exec-mode 64 0x1000 [status]",
    "overflow 0x2000",
  ]);
  const disabled = new Trace().psb().mode(64).ovf().pge(0x3000n);
  assert.deepEqual(after(disabled).events, ["exec-mode 64 - [status]", "overflow -", "enabled 0x3000"]);
});

test("the overflow keeps the time of the OVF", () => {
  const t = enabledAt(0x1000n).tsc(0x100n).ovf().tsc(0x200n).fup(0x2000n).tnt("!");
  const d = after(t);
  assert.deepEqual(d.events.slice(1), ["overflow 0x2000", "tnt !"]);
  assert.deepEqual(
    d.raw.slice(1).map((e) => e.tsc),
    [0x100n, 0x200n],
  );
});

test("calibration is lost at an OVF unless keepTcalOnOvf", () => {
  // nomFreq/CBR gives fcr = 4/2 (x256): a 10-cycle CYC is 20 TSC ticks.
  const t = new Trace().psb().tsc(0x1000n).cbr(2).fup(0x1000n).psbend().ovf().cyc(10).fup(0x2000n).tnt("!");
  const reset = decodeEvents(t.bytes(), config({ nomFreq: 4 })).raw.at(-1)!;
  assert.deepEqual([reset.tsc, reset.lostCyc], [0x1000n, 1]);
  const kept = decodeEvents(t.bytes(), config({ nomFreq: 4, keepTcalOnOvf: true })).raw.at(-1)!;
  assert.deepEqual([kept.tsc, kept.lostCyc], [0x1014n, 0]);
});

test("SKD010: a TIP after OVF means the FUP was lost; resume at the TIP", () => {
  const t = enabledAt(0x1000n).ovf().tip(0x4000n).tnt("!");
  assert.deepEqual(after(t, ["skd010"]).events.slice(1), ["overflow 0x4000", "tnt !"]);
  assert.match(after(t).end, /^unexpected packet context/);
});

test("SKD010: a later FUP (with a MODE.TSX before it) is where tracing resumed", () => {
  const t = enabledAt(0x1000n).ovf().pip(0x9000n).tsx(true).fup(0x6000n).tnt(".");
  assert.deepEqual(after(t, ["skd010"]).events.slice(1), ["overflow 0x6000", "tsx begin 0x6000", "tnt ."]);
  // Without the erratum: a disabled overflow, and the TNT has no context.
  const plain = after(t);
  assert.deepEqual(plain.events.slice(1), ["overflow -", "paging 0x9000", "tsx begin -"]);
  assert.match(plain.end, /^unexpected packet context/);
});

test("SKD010: a PSB+ with FUP is where tracing resumed", () => {
  const t = enabledAt(0x1000n).ovf().psb().fup(0x7000n).psbend().tnt("!");
  assert.deepEqual(after(t, ["skd010"]).events.slice(1), [
    "overflow 0x7000",
    "enabled 0x7000 [status]",
    "tnt !",
  ]);
});

test("SKD010: a TNT after OVF cannot be recovered from", () => {
  const t = enabledAt(0x1000n).ovf().tnt("!");
  assert.match(after(t, ["skd010"]).end, /^unexpected packet context/);
});

test("SKD010 and APL11: a TIP.PGD after OVF; resume disabled after it", () => {
  const t = enabledAt(0x1000n).ovf().mtc(1).pgd().pge(0x5000n);
  for (const erratum of ["skd010", "apl11"]) {
    assert.deepEqual(after(t, [erratum]).events.slice(1), ["overflow -", "enabled 0x5000"], erratum);
  }
  assert.match(after(t).end, /^unexpected packet context/);
});

test("APL12: a FUP after OVF followed by TIP.PGE is spurious", () => {
  const t = enabledAt(0x1000n).ovf().fup(0x1100n).pge(0x2000n);
  assert.deepEqual(after(t, ["apl12"]).events.slice(1), ["overflow -", "enabled 0x2000"]);
  assert.deepEqual(after(t).events.slice(1), ["overflow 0x1100", "enabled 0x2000"]);
});

test("APL12 does not apply when the FUP is followed by branches", () => {
  const t = enabledAt(0x1000n).ovf().fup(0x1100n).tnt("!");
  assert.deepEqual(after(t, ["apl12"]).events.slice(1), ["overflow 0x1100", "tnt !"]);
});
