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

/**
 * Two stretches of trace 0x1000 TSC ticks apart (a CPU that ran something untraced in
 * between; one MTC wrap is 0x100 ticks here), four cycles to a CTC tick in both.
 */
function gapTrace(): Trace {
  const t = new Trace().psb().tsc(0x10000n).tma(0, 0).fup(0x1000n).psbend();
  t.cyc(4).mtc(1).cyc(4).mtc(2).tnt("!");
  t.psb().tsc(0x11000n).tma(0x1000, 0).fup(0x1000n).psbend();
  t.cyc(4).mtc(1).cyc(40).tnt("!");
  return t;
}

test("mtcGapRestart: the MTC interval starts over after a gap longer than an MTC wrap", () => {
  const cfg = (restart: boolean) =>
    config({ mtcFreq: 0, cpuid15Eax: 1, cpuid15Ebx: 1, mtcGapRestart: restart });
  const last = (restart: boolean) => times(gapTrace(), cfg(restart)).at(-1)!.tsc;
  // Calibrated before the gap at 4 cycles a tick: one tick to the MTC, 40 cycles after it.
  assert.equal(last(true), 0x11000n + 1n + 10n);
  // libipt measures the 4 cycles after the gap against the 8-bit CTC distance from the
  // last MTC before it (2 -> 1: 255 ticks) and scales the 40 cycles by that.
  assert.equal(last(false), 0x11000n + 1n + (40n * ((255n << 8n) / 4n)) / 256n);
});

test("mtcGapRestart: an MTC gap shorter than a wrap keeps libipt's calibration", () => {
  const cfg = (restart: boolean) =>
    config({ mtcFreq: 0, cpuid15Eax: 1, cpuid15Ebx: 1, mtcGapRestart: restart });
  // The second PSB's TSC 0x80 ticks after the first (MTC 2 at 0x10002): within a wrap.
  const t = new Trace().psb().tsc(0x10000n).tma(0, 0).fup(0x1000n).psbend();
  t.cyc(4).mtc(1).cyc(4).mtc(2).tnt("!");
  t.psb().tsc(0x10080n).tma(0x80, 0).fup(0x1000n).psbend();
  t.cyc(4).mtc(0x81).cyc(40).tnt("!");
  assert.deepEqual(times(t, cfg(true)), times(t, cfg(false)));
});
