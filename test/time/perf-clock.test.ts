/**
 * PerfClock, Linux perf's decoder time (perf script's), one rule at a time. Expected
 * values are worked by hand from perf's rules (arithmetic in the comments). The
 * configuration: MTCFreq 3 (an MTC every 8 CTC ticks), CPUID 0x15 2/308 (154 TSC
 * ticks a CTC tick, 1232 an MTC period), nominal ratio 37.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { noErrata } from "../../src/cpu/index.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { type PacketSource, PerfClock } from "../../src/time/index.js";
import { cbrPacket, cycPacket, mtcPacket, tmaPacket, tscPacket } from "./packets.js";

const config = { mtcFreq: 3, nomFreq: 37, cpuid15Eax: 2, cpuid15Ebx: 308, errata: noErrata() };

/** The packets after the current one: a list, then the end of the buffer. */
function ahead(...packets: Packet[]): PacketSource {
  let i = 0;
  return {
    next(pkt: Packet): number {
      const p = packets[i++];
      if (!p) return -1;
      pkt.copyFrom(p);
      return 1;
    },
  };
}

function tnt(): Packet {
  const p = new Packet();
  p.type = PacketType.Tnt8;
  return p;
}

/** TSC 1,000,000, TMA (CTC 0x100: last MTC 0x20, remainder 0; FC 16), CBR 37 (1 tick a cycle). */
function started(): PerfClock {
  const c = new PerfClock(config, new Packet());
  c.tsc(tscPacket(1_000_000n), false);
  c.tma(tmaPacket(0x100, 16)); // CTC time starts at 1,000,000 - 16 = 999,984
  c.cbrPacket(cbrPacket(37)); // a new ratio: CYC counts from 1,000,000
  return c;
}

describe("PerfClock", () => {
  it("has no time before a TSC; takes the first TSC as it is", () => {
    const c = new PerfClock(config, new Packet());
    assert.equal(c.hasTime, false);
    c.tsc(tscPacket(0x1_2345_6789n), false);
    assert.equal(c.hasTime, true);
    assert.deepEqual([c.tscHi, c.tscLo], [1, 0x2345_6789]);
  });

  it("counts CYC from the CBR change at the CBR's ratio (nominal / CBR)", () => {
    const c = started();
    assert.equal(c.cycToTsc, 1);
    c.cyc(cycPacket(100n));
    assert.equal(c.timestamp, 1_000_100);
    // CBR 74: half a tick a cycle, counted from 1,000,100.
    c.cbrPacket(cbrPacket(74));
    c.cyc(cycPacket(101n));
    assert.equal(c.timestamp, 1_000_150); // trunc(1,000,100 + 50.5)
  });

  it("an MTC after a CYC restarts CYC there, with the ratio looked ahead to the next MTC after a CYC", () => {
    const c = started();
    c.cyc(cycPacket(100n));
    // MTC 0x21: one period after the TMA's 0x20: 999,984 + 1,232 = 1,001,216. Ahead:
    // 1,400 cycles, an MTC not after a CYC (gone through), 600 cycles, an MTC after
    // them: (999,984 + 3 * 1,232 - 1,001,216) / 2,000 = 1.232 ticks a cycle.
    c.mtc(
      mtcPacket(0x21),
      true,
      ahead(cycPacket(1400n), tnt(), mtcPacket(0x22), cycPacket(600n), mtcPacket(0x23)),
    );
    assert.equal(c.timestamp, 1_001_216);
    assert.equal(c.cycToTsc, 1.232);
    c.cyc(cycPacket(600n));
    assert.equal(c.timestamp, 1_001_955); // trunc(1,001,216 + 739.2)
  });

  it("a looked-ahead ratio 1.25 times the CBR's or more is not believed; nor one over no cycles", () => {
    // 1,232 / 500 = 2.464 ticks a cycle, the CBR's is 1.
    const c = started();
    c.cyc(cycPacket(1n));
    c.mtc(mtcPacket(0x21), true, ahead(cycPacket(500n), mtcPacket(0x22)));
    assert.equal(c.cycToTsc, 1);
    // perf's look-ahead starts as if after the CYC before the MTC: an MTC right after
    // it ends the look-ahead, over no cycles.
    const d = started();
    d.cyc(cycPacket(1n));
    d.mtc(mtcPacket(0x21), true, ahead(mtcPacket(0x22), cycPacket(1000n), mtcPacket(0x23)));
    assert.equal(d.cycToTsc, 1);
  });

  it("the look-ahead stops at a TSC, a CBR change, the end of the buffer: the CBR's ratio stays", () => {
    for (const stop of [
      [tscPacket(2_000_000n), cycPacket(10n), mtcPacket(0x22)],
      [cbrPacket(36), cbrPacket(37), cycPacket(10n), mtcPacket(0x22)],
      [cycPacket(1000n)],
    ]) {
      const c = started();
      c.cyc(cycPacket(1n));
      c.mtc(mtcPacket(0x21), true, ahead(cycPacket(1000n), ...stop));
      assert.equal(c.cycToTsc, 1);
    }
  });

  it("an MTC or TSC not after a CYC leaves the CYC reference where it was", () => {
    const c = started();
    c.cyc(cycPacket(100n));
    c.mtc(mtcPacket(0x21), false, undefined); // 1,001,216
    c.cyc(cycPacket(1300n)); // 1,000,000 + 1,400
    assert.equal(c.timestamp, 1_001_400);
  });

  it("after a gap (a PSB's TSC), CYC times fall behind and are dropped until an MTC after a CYC", () => {
    const c = started();
    c.cyc(cycPacket(100n));
    // The next buffer: PSB, TSC 2,000,000 (after the PSB), TMA (CTC 0x3000: last MTC 0).
    c.tsc(tscPacket(2_000_000n), false);
    c.tma(tmaPacket(0x3000, 0));
    c.cyc(cycPacket(5000n)); // 1,000,000 + 5,100: behind, dropped
    assert.equal(c.timestamp, 2_000_000);
    c.mtc(mtcPacket(0x01), true, ahead()); // 2,000,000 + 1,232, and CYC counts from there
    assert.equal(c.timestamp, 2_001_232);
    c.cyc(cycPacket(100n));
    assert.equal(c.timestamp, 2_001_332);
  });

  it("a TSC right after a CYC restarts CYC there; one slightly behind the time keeps the time", () => {
    const c = started();
    c.cyc(cycPacket(500n)); // 1,000,500
    c.tsc(tscPacket(1_000_400n), true); // 100 behind (< 0x10000): slipped, the time stays
    assert.equal(c.timestamp, 1_000_500);
    c.cyc(cycPacket(10n)); // from 1,000,500
    assert.equal(c.timestamp, 1_000_510);
  });

  it("an MTC behind the time is dropped, but still moves the MTC count on", () => {
    const c = started();
    c.cyc(cycPacket(5000n)); // 1,005,000
    c.mtc(mtcPacket(0x21), false, undefined); // 1,001,216: behind
    assert.equal(c.timestamp, 1_005_000);
    c.mtc(mtcPacket(0x26), false, undefined); // 999,984 + 6 * 1,232 = 1,007,376
    assert.equal(c.timestamp, 1_007_376);
  });

  it("counts where perf restarts its instructions-since-timestamp count: TSC, MTC, timed CYC, moving or not", () => {
    const c = new PerfClock(config, new Packet());
    c.cyc(cycPacket(10n)); // no time yet, no ratio: not timed
    c.mtc(mtcPacket(0x21), false, undefined); // no TMA yet: ignored
    assert.equal(c.updates, 0);
    c.tsc(tscPacket(1_000_000n), false);
    c.tma(tmaPacket(0x100, 16));
    c.cbrPacket(cbrPacket(37));
    assert.equal(c.updates, 1); // the TSC (TMA and CBR are not timestamps)
    c.cyc(cycPacket(5000n)); // 1,005,000
    c.mtc(mtcPacket(0x21), false, undefined); // behind: dropped, the count restarts all the same
    c.tsc(tscPacket(1_004_990n), false); // a slip back: the time stands, the count restarts
    assert.equal(c.timestamp, 1_005_000);
    assert.equal(c.updates, 4);
    const d = new PerfClock(config, new Packet());
    d.copyFrom(c);
    assert.equal(d.updates, 4);
  });

  it("keeps TSC and MTC times exact above 2^53; CYC times round there as perf's doubles do", () => {
    const at = (c: PerfClock) => (BigInt(c.tscHi) << 32n) | BigInt(c.tscLo);
    // A TSC of 45 * 2^50 + 3 (a machine up for months): above 2^53, where doubles step by 8.
    const t = 0x00a0_0000_0000_0003n;
    const c = new PerfClock(config, new Packet());
    c.tsc(tscPacket(t), false);
    assert.equal(at(c), t);
    c.tma(tmaPacket(0x100, 16)); // CTC time starts at t - 16
    c.cbrPacket(cbrPacket(37)); // CYC counts from t, a cycle a tick
    c.mtc(mtcPacket(0x21), false, undefined); // t - 16 + 1,232
    assert.equal(at(c), t + 1216n);
    // perf: (double)t + 2,100.0, truncated to uint64. (double)t is t - 3 (the nearest
    // multiple of 8); t - 3 + 2,100 = ...0834 is halfway between ...0830 and ...0838:
    // to even, ...0830.
    c.cyc(cycPacket(2100n));
    assert.equal(at(c), 0x00a0_0000_0000_0830n);
    // Another TSC after the CYC: exact again, and CYC counts from it.
    c.tsc(tscPacket(t + 5000n), true);
    assert.equal(at(c), t + 5000n);
  });

  it("copies its state", () => {
    const c = started();
    c.cyc(cycPacket(100n));
    const d = new PerfClock(config, new Packet());
    d.copyFrom(c);
    d.cyc(cycPacket(50n));
    assert.equal(d.timestamp, 1_000_150);
    assert.equal(c.timestamp, 1_000_100);
  });
});
