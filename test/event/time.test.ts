/**
 * Time on events: the TSC estimate when the event was completed, whether there was a
 * TSC at all, and the MTC/CYC packets that could not be applied.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { config, decodeEvents, Trace } from "./helpers.js";

const times = (t: Trace, cfg = config()) =>
  decodeEvents(t.bytes(), cfg).raw.map((e) => ({
    has: e.hasTsc,
    tsc: e.tsc,
    lostMtc: e.lostMtc,
    lostCyc: e.lostCyc,
  }));

test("no TSC yet: hasTsc is false", () => {
  const t = new Trace().psb().fup(0x1000n).psbend().tnt("!").tsc(0x4242n).tnt(".");
  assert.deepEqual(times(t), [
    { has: false, tsc: 0n, lostMtc: 0, lostCyc: 0 },
    { has: false, tsc: 0n, lostMtc: 0, lostCyc: 0 },
    { has: true, tsc: 0x4242n, lostMtc: 0, lostCyc: 0 },
  ]);
});

test("MTC advances the estimate by CTC ticks converted with CPUID 0x15", () => {
  // TSC:CTC = 3:1 and MTC every CTC tick: each MTC step is 3 TSC ticks.
  const cfg = config({ mtcFreq: 0, cpuid15Eax: 1, cpuid15Ebx: 3 });
  const t = new Trace()
    .psb()
    .tsc(0x1000n)
    .tma(0x10, 0)
    .fup(0x1000n)
    .psbend()
    .mtc(0x11)
    .tnt("!")
    .mtc(0x14)
    .tnt("!");
  assert.deepEqual(
    times(t, cfg).map((x) => x.tsc),
    [0x1000n, 0x1003n, 0x100cn],
  );
});

test("CYC without calibration is counted as lost, until the next MTC", () => {
  const cfg = config({ mtcFreq: 0, cpuid15Eax: 1, cpuid15Ebx: 1 });
  const t = new Trace()
    .psb()
    .tsc(0x1000n)
    .tma(0x10, 0)
    .fup(0x1000n)
    .psbend()
    .cyc(7)
    .cyc(9)
    .tnt("!")
    .mtc(0x11);
  t.tnt("!");
  assert.deepEqual(
    times(t, cfg).map((x) => x.lostCyc),
    [0, 2, 0],
  );
});

test("events bound to a FUP take its time; PWRE and OVF keep their own", () => {
  const t = new Trace().psb().tsc(0x10n).fup(0x1000n).psbend();
  t.ptw(7n, 4, true).tsc(0x20n).fup(0x1010n).pwre(1, 0).tsc(0x30n).pwrx(1, 1).ovf().tsc(0x40n).fup(0x1020n);
  t.tnt("!");
  assert.deepEqual(
    decodeEvents(t.bytes()).raw.map((e) => e.tsc),
    [0x10n, 0x20n, 0x20n, 0x30n, 0x30n, 0x40n],
  );
});
