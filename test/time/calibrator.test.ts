/**
 * TimeCalibrator, one rule at a time, with hand-worked expected values
 * (fcr = ticks << 8 / cycles; 0x100 is 1.0).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { noErrata } from "../../src/cpu/index.js";
import { TimeCalibrator, type TimeConfig, U64 } from "../../src/time/index.js";
import { cbrPacket, cycPacket, mtcPacket, tscPacket } from "./packets.js";

interface Options {
  mtcFreq?: number;
  nomFreq?: number;
  eax?: number;
  ebx?: number;
  skl168?: boolean;
}

function config(o: Options): TimeConfig {
  const errata = noErrata();
  errata.skl168 = o.skl168 ?? false;
  return {
    mtcFreq: o.mtcFreq ?? 0,
    nomFreq: o.nomFreq ?? 0,
    cpuid15Eax: o.eax ?? 0,
    cpuid15Ebx: o.ebx ?? 0,
    errata,
  };
}

/** The fcr, or the error code. */
function fcrOf(cal: TimeCalibrator): bigint | number {
  const out = new U64();
  const rc = cal.queryFcr(out);
  return rc < 0 ? rc : out.big;
}

describe("TimeCalibrator: fcr", () => {
  it("has none initially", () => {
    const cal = new TimeCalibrator(config({}));
    assert.equal(cal.hasFcr, false);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });

  it("setFcr supplies one, even 0", () => {
    const cal = new TimeCalibrator(config({}));
    assert.equal(cal.setFcr(new U64(0, 0)), 0);
    assert.equal(cal.hasFcr, true);
    assert.equal(fcrOf(cal), 0n);
    cal.setFcr(U64.fromBig(0x1234_5678_9abc_def0n));
    assert.equal(fcrOf(cal), 0x1234_5678_9abc_def0n);
  });

  it("queryFcr leaves the output alone on NoTime", () => {
    const cal = new TimeCalibrator(config({}));
    const out = new U64(1, 2);
    assert.equal(cal.queryFcr(out), -ErrorCode.NoTime);
    assert.deepEqual([out.hi, out.lo], [1, 2]);
  });
});

describe("TimeCalibrator: CBR", () => {
  it("calibrates from the nominal ratio: (nom << 8) / cbr", () => {
    const cal = new TimeCalibrator(config({ nomFreq: 4 }));
    assert.equal(cal.headerCbr(cbrPacket(2)), 0);
    assert.equal(fcrOf(cal), 0x200n);
    // (4 << 8) / 3 = 341 = 0x155, truncated.
    assert.equal(cal.updateCbr(cbrPacket(3)), 0);
    assert.equal(fcrOf(cal), 0x155n);
  });

  it("does nothing without a nominal ratio, not even checking the packet", () => {
    const cal = new TimeCalibrator(config({}));
    assert.equal(cal.headerCbr(cbrPacket(2)), 0);
    assert.equal(cal.headerCbr(cbrPacket(0)), 0);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });

  it("rejects a zero ratio when it has a nominal ratio", () => {
    const cal = new TimeCalibrator(config({ nomFreq: 4 }));
    cal.headerCbr(cbrPacket(2));
    assert.equal(cal.headerCbr(cbrPacket(0)), -ErrorCode.BadPacket);
    assert.equal(fcrOf(cal), 0x200n);
  });

  it("outside PSB+ starts over first, losing calibration even when it cannot recalibrate", () => {
    const cal = new TimeCalibrator(config({}));
    cal.setFcr(new U64(0, 0x300));
    assert.equal(cal.updateCbr(cbrPacket(2)), 0);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);

    const nominal = new TimeCalibrator(config({ nomFreq: 4 }));
    nominal.setFcr(new U64(0, 0x300));
    assert.equal(nominal.updateCbr(cbrPacket(0)), -ErrorCode.BadPacket);
    assert.equal(fcrOf(nominal), -ErrorCode.NoTime);
  });

  it("inside PSB+ keeps the MTC state", () => {
    // mtcFreq 4, 4 ticks per CTC: MTC 1..2 is 0x10 CTC = 0x40 ticks.
    const cal = new TimeCalibrator(config({ nomFreq: 4, mtcFreq: 4, eax: 1, ebx: 4 }));
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x100n));
    cal.headerCbr(cbrPacket(2));
    cal.updateMtc(mtcPacket(2));
    assert.equal(fcrOf(cal), 0x40n);
  });
});

describe("TimeCalibrator: TSC", () => {
  it("calibrates at a TSC in PSB+ from the cycles since the previous TSC", () => {
    const cal = new TimeCalibrator(config({}));
    assert.equal(cal.headerTsc(tscPacket(0xa0000n)), 0);
    cal.updateCyc(cycPacket(0x100n));
    // A TSC outside PSB+ only restarts the interval.
    cal.updateTsc(tscPacket(0xa0200n));
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
    // 0x100 ticks over 0x100 cycles: 1.0.
    assert.equal(cal.headerTsc(tscPacket(0xa0300n)), 0);
    assert.equal(fcrOf(cal), 0x100n);
  });

  it("needs cycles and a previous TSC", () => {
    const cal = new TimeCalibrator(config({}));
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.headerTsc(tscPacket(0xa0000n)), 0); // no previous TSC
    assert.equal(cal.headerTsc(tscPacket(0xa0100n)), 0); // no cycles
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });

  it("accumulates CYC payloads above 32 bits", () => {
    const cal = new TimeCalibrator(config({}));
    cal.headerTsc(tscPacket(0x10n));
    cal.updateCyc(cycPacket(1n << 40n));
    cal.updateCyc(cycPacket(1n << 40n));
    // 2^45 ticks over 2^41 cycles: (2^45 << 8) / 2^41 = 2^12.
    cal.headerTsc(tscPacket(0x10n + (1n << 45n)));
    assert.equal(fcrOf(cal), 0x1000n);
  });

  it("corrects one wrap of the 56-bit TSC", () => {
    const cal = new TimeCalibrator(config({}));
    cal.headerTsc(tscPacket((1n << 56n) - 0x100n));
    cal.updateCyc(cycPacket(0x400n));
    // 0x100 + 2^56 - (2^56 - 0x100) = 0x200 ticks over 0x400 cycles: 0.5.
    assert.equal(cal.headerTsc(tscPacket(0x100n)), 0);
    assert.equal(fcrOf(cal), 0x80n);
  });

  it("rejects a TSC behind by more than a wrap, and a distance too big to shift", () => {
    const cal = new TimeCalibrator(config({}));
    cal.headerTsc(tscPacket(1n << 60n));
    cal.updateCyc(cycPacket(1n));
    assert.equal(cal.headerTsc(tscPacket(5n)), -ErrorCode.BadPacket);
    // That TSC was still stored: it is the start of the next interval.
    cal.updateCyc(cycPacket(1n));
    assert.equal(cal.headerTsc(tscPacket(5n + (1n << 56n))), -ErrorCode.Internal);
    cal.updateCyc(cycPacket(1n));
    assert.equal(cal.headerTsc(tscPacket(5n + (1n << 56n) + 0x80n)), 0);
    assert.equal(fcrOf(cal), 0x8000n);
  });

  it("prefers MTC: no TSC calibration once an MTC was seen", () => {
    const cal = new TimeCalibrator(config({ mtcFreq: 4, eax: 1, ebx: 4 }));
    cal.headerTsc(tscPacket(0xa0000n));
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.headerTsc(tscPacket(0xa0100n)), 0);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });
});

describe("TimeCalibrator: MTC", () => {
  const mtc4 = { mtcFreq: 4, eax: 1, ebx: 4 };

  it("calibrates from the cycles between two MTCs", () => {
    const cal = new TimeCalibrator(config(mtc4));
    assert.equal(cal.updateMtc(mtcPacket(2)), 0);
    cal.updateCyc(cycPacket(0x80n));
    cal.updateCyc(cycPacket(0x80n));
    // CTC 0x20 -> 0x30: 0x10 * 4 = 0x40 ticks; (0x40 << 8) / 0x100 = 0x40 (0.25).
    assert.equal(cal.updateMtc(mtcPacket(3)), 0);
    assert.equal(fcrOf(cal), 0x40n);
    assert.equal(cal.lostMtcCount, 0);
  });

  it("extends the interval over MTCs without cycles", () => {
    const cal = new TimeCalibrator(config(mtc4));
    cal.updateMtc(mtcPacket(2));
    assert.equal(cal.updateMtc(mtcPacket(3)), 0);
    cal.updateCyc(cycPacket(0x100n));
    // CTC 0x20 -> 0x40: 0x80 ticks over 0x100 cycles: 0x80 (0.5).
    cal.updateMtc(mtcPacket(4));
    assert.equal(fcrOf(cal), 0x80n);
  });

  it("corrects one wrap of the MTC payload", () => {
    const cal = new TimeCalibrator(config(mtc4));
    cal.updateMtc(mtcPacket(0xff));
    cal.updateCyc(cycPacket(0x100n));
    // CTC 0xff0 -> 0x010 + 0x1000: 0x20 CTC = 0x80 ticks: 0x80.
    cal.updateMtc(mtcPacket(1));
    assert.equal(fcrOf(cal), 0x80n);
  });

  it("returns BadConfig without CPUID 0x15, counting a lost MTC and restarting", () => {
    const cal = new TimeCalibrator(config({ mtcFreq: 4 }));
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.updateMtc(mtcPacket(2)), -ErrorCode.BadConfig);
    assert.equal(cal.lostMtcCount, 1);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.updateMtc(mtcPacket(3)), -ErrorCode.BadConfig);
    assert.equal(cal.lostMtcCount, 2);
  });

  it("returns Internal when the ticks would overflow the 8-bit shift", () => {
    // mtcFreq 23: MTC 0 -> 4 is 0x2000000 CTC; * 0xffffffff = 0x1fffffffe000000 >= 2^56.
    const cal = new TimeCalibrator(config({ mtcFreq: 23, eax: 1, ebx: 0xffffffff }));
    cal.updateMtc(mtcPacket(0));
    cal.updateCyc(cycPacket(1n));
    assert.equal(cal.updateMtc(mtcPacket(4)), -ErrorCode.Internal);
    // 2 -> 0x1000000 CTC = 0xffffffff000000 ticks, just below 2^56:
    // (0xffffffff000000 << 8) / 0x100 = 0xffffffff000000.
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.updateMtc(mtcPacket(6)), 0);
    assert.equal(fcrOf(cal), 0xffffffff000000n);
  });
});

describe("TimeCalibrator: SKL168", () => {
  // mtcFreq 9 (< 10, so the CYC-wrap test applies), 4 ticks per CTC: one MTC period
  // is 0x200 CTC = 0x800 ticks.
  const skl = { mtcFreq: 9, eax: 1, ebx: 4 };

  function calibrated(skl168: boolean): TimeCalibrator {
    const cal = new TimeCalibrator(config({ ...skl, skl168 }));
    cal.updatePsb();
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x2000n));
    cal.updateMtc(mtcPacket(2)); // (0x800 << 8) / 0x2000 = 0x40
    assert.equal(fcrOf(cal), 0x40n);
    return cal;
  }

  it("skips the first MTC after PSB when cycles fall short by a CYC wrap", () => {
    const cal = calibrated(true);
    cal.updateCyc(cycPacket(0x1000n));
    cal.updatePsb();
    // Expected ticks (0x40 * (0x1000 + 0xf00)) >> 8 = 0x7c0 < 0x800 measured: skipped.
    assert.equal(cal.updateMtc(mtcPacket(3)), 0);
    assert.equal(fcrOf(cal), 0x40n);
    assert.equal(cal.lostMtcCount, 1);
    // Only the first MTC after PSB is checked: (0x800 << 8) / 0x1000 = 0x80.
    cal.updateCyc(cycPacket(0x1000n));
    cal.updateMtc(mtcPacket(4));
    assert.equal(fcrOf(cal), 0x80n);
    assert.equal(cal.lostMtcCount, 0);
  });

  it("skips only when the expected ticks are strictly below the measured ones", () => {
    // Expected (0x40 * (cycles + 0xf00)) >> 8 = (cycles + 0xf00) / 4 against 0x800:
    // 0x1100 cycles give exactly 0x800 (used), 0x10ff give 0x7ff (skipped).
    const used = calibrated(true);
    used.updateCyc(cycPacket(0x1100n));
    used.updatePsb();
    used.updateMtc(mtcPacket(3));
    assert.equal(fcrOf(used), 0x78n); // (0x800 << 8) / 0x1100 = 0x78 (120.47)

    const skipped = calibrated(true);
    skipped.updateCyc(cycPacket(0x10ffn));
    skipped.updatePsb();
    skipped.updateMtc(mtcPacket(3));
    assert.equal(fcrOf(skipped), 0x40n);
  });

  it("without the erratum uses that MTC", () => {
    const cal = calibrated(false);
    cal.updateCyc(cycPacket(0x1000n));
    cal.updatePsb();
    cal.updateMtc(mtcPacket(3));
    assert.equal(fcrOf(cal), 0x80n);
  });

  it("skips the first MTC after PSB when an MTC was lost", () => {
    const cal = new TimeCalibrator(config({ mtcFreq: 4, eax: 1, ebx: 4, skl168: true }));
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x100n));
    cal.updatePsb();
    // 0x20 CTC > 1 << 4: skipped, even without a previous fcr.
    assert.equal(cal.updateMtc(mtcPacket(3)), 0);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
    cal.updateCyc(cycPacket(0x100n));
    cal.updateMtc(mtcPacket(4)); // 0x40 ticks / 0x100 cycles
    assert.equal(fcrOf(cal), 0x40n);
  });

  it("is disarmed by the first MTC after PSB even when that MTC has no cycles", () => {
    const cal = calibrated(true);
    cal.updatePsb();
    cal.updateMtc(mtcPacket(3)); // no cycles: nothing to check, but the check is spent
    cal.updateCyc(cycPacket(0x1000n));
    // The interval runs from MTC 2: 0x400 CTC (two periods, so an armed check would
    // skip it) = 0x1000 ticks over 0x1000 cycles: 0x100.
    cal.updateMtc(mtcPacket(4));
    assert.equal(fcrOf(cal), 0x100n);
  });

  it("does not apply the CYC-wrap test at mtcFreq >= 10", () => {
    // mtcFreq 10: one period is 0x400 CTC = 0x1000 ticks.
    const cal = new TimeCalibrator(config({ mtcFreq: 10, eax: 1, ebx: 4, skl168: true }));
    cal.updateMtc(mtcPacket(1));
    cal.updateCyc(cycPacket(0x4000n));
    cal.updateMtc(mtcPacket(2)); // (0x1000 << 8) / 0x4000 = 0x40
    cal.updateCyc(cycPacket(0x2000n));
    cal.updatePsb();
    // (0x40 * (0x2000 + 0xf00)) >> 8 = 0xbc0 < 0x1000, but not checked: 0x80.
    cal.updateMtc(mtcPacket(3));
    assert.equal(fcrOf(cal), 0x80n);
  });
});

describe("TimeCalibrator: OVF", () => {
  function calibrated(): TimeCalibrator {
    const cal = new TimeCalibrator(config({ mtcFreq: 4, eax: 1, ebx: 4 }));
    cal.updateMtc(mtcPacket(2));
    cal.updateCyc(cycPacket(0x100n));
    cal.updateMtc(mtcPacket(3));
    assert.equal(fcrOf(cal), 0x40n);
    return cal;
  }

  it("updateOvf keeps the fcr but restarts the MTC interval", () => {
    const cal = calibrated();
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.updateOvf(), 0);
    assert.equal(fcrOf(cal), 0x40n);
    // The next MTC is a first MTC again; the cycles before the OVF are gone.
    cal.updateMtc(mtcPacket(9));
    assert.equal(fcrOf(cal), 0x40n);
    cal.updateCyc(cycPacket(0x200n));
    cal.updateMtc(mtcPacket(0xa)); // 0x40 ticks over 0x200 cycles
    assert.equal(fcrOf(cal), 0x20n);
  });

  it("updateOvf restarts the TSC interval", () => {
    const cal = new TimeCalibrator(config({}));
    cal.headerTsc(tscPacket(0xa0000n));
    cal.updateCyc(cycPacket(0x100n));
    cal.updateOvf();
    cal.updateCyc(cycPacket(0x100n));
    assert.equal(cal.headerTsc(tscPacket(0xa0100n)), 0);
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });

  it("reset (ptdump without --keep-tcal-on-ovf) loses the calibration", () => {
    const cal = calibrated();
    cal.reset();
    assert.equal(fcrOf(cal), -ErrorCode.NoTime);
  });

  it("copyFrom duplicates the state", () => {
    const a = calibrated();
    const b = new TimeCalibrator(config({ mtcFreq: 4, eax: 1, ebx: 4 }));
    b.copyFrom(a);
    for (const cal of [a, b]) {
      cal.updateCyc(cycPacket(0x80n));
      cal.updateMtc(mtcPacket(4));
    }
    assert.equal(fcrOf(b), 0x80n);
    assert.equal(fcrOf(a), 0x80n);
  });
});
