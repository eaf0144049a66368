/**
 * TimeTracker, one update rule at a time. Expected values are worked by hand from
 * libipt's formulas (the arithmetic is in the comments); several sequences are those
 * of libipt's ptdump tests, whose expected output agrees.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { noErrata } from "../../src/cpu/index.js";
import { type TimeConfig, TimeTracker, TscQuery, U64 } from "../../src/time/index.js";
import { cbrPacket, cycPacket, mtcPacket, tmaPacket, tscPacket } from "./packets.js";

function config(mtcFreq: number, eax: number, ebx: number): TimeConfig {
  return { mtcFreq, nomFreq: 0, cpuid15Eax: eax, cpuid15Ebx: ebx, errata: noErrata() };
}

function query(time: TimeTracker) {
  const q = new TscQuery();
  const rc = time.queryTsc(q);
  return { rc, tsc: q.tscBig, lostMtc: q.lostMtc, lostCyc: q.lostCyc };
}

const tscOf = (time: TimeTracker): bigint => query(time).tsc;
const fcr = (value: number): U64 => new U64(0, value);
const NO_FCR = new U64();

describe("TimeTracker: queries", () => {
  it("has no time and no CBR initially", () => {
    const time = new TimeTracker(config(0, 0, 0));
    assert.deepEqual(query(time), { rc: -ErrorCode.NoTime, tsc: 0n, lostMtc: 0, lostCyc: 0 });
    assert.equal(time.queryCbr(), -ErrorCode.NoCbr);
  });

  it("reset forgets everything", () => {
    const time = new TimeTracker(config(0, 0, 0));
    time.updateTsc(tscPacket(0x1234n));
    time.updateCbr(cbrPacket(7));
    time.reset();
    assert.equal(query(time).rc, -ErrorCode.NoTime);
    assert.equal(time.queryCbr(), -ErrorCode.NoCbr);
  });

  it("copyFrom duplicates the state", () => {
    const a = new TimeTracker(config(4, 1, 4));
    a.updateTsc(tscPacket(0xa0000n));
    a.updateTma(tmaPacket(0x18, 8));
    const b = new TimeTracker(config(4, 1, 4));
    b.copyFrom(a);
    a.updateMtc(mtcPacket(2));
    b.updateMtc(mtcPacket(2));
    assert.equal(tscOf(b), tscOf(a));
    assert.equal(tscOf(b), 0xa0018n);
  });
});

describe("TimeTracker: TSC", () => {
  it("sets the time and clears the loss counts", () => {
    const time = new TimeTracker(config(0, 1, 1));
    time.updateCyc(cycPacket(1n), NO_FCR);
    assert.equal(query(time).lostCyc, 1);
    assert.equal(time.updateTsc(tscPacket(0xdedededen)), 0);
    assert.deepEqual(query(time), { rc: 0, tsc: 0xdedededen, lostMtc: 0, lostCyc: 0 });
  });

  it("keeps a 56-bit TSC above 2^53 exact through TMA, MTC and CYC", () => {
    const T = 0x2fa1088fac05e2n;
    assert.ok(T > 2n ** 53n);
    const time = new TimeTracker(config(4, 1, 4));
    time.updateTsc(tscPacket(T));
    assert.equal(tscOf(time), T);
    // TMA: base = T - 8, fc = 8; the estimate stays at T.
    time.updateTma(tmaPacket(0x18, 8));
    assert.equal(tscOf(time), T);
    // MTC 2: CTC 0x20, 8 after the TMA's 0x18: 8 * 4 / 1 = 0x20 ticks; T - 8 + 0x20.
    time.updateMtc(mtcPacket(2));
    assert.equal(tscOf(time), T + 0x18n);
    // CYC 3 at fcr 0x80 (0.5): 3 * 0x80 >> 8 = 1 tick.
    time.updateCyc(cycPacket(3n), fcr(0x80));
    assert.equal(tscOf(time), T + 0x19n);
    // A TSC that differs from T only in bit 0, well below a double's resolution there.
    time.updateTsc(tscPacket(T + 1n));
    assert.equal(tscOf(time), T + 1n);
  });
});

describe("TimeTracker: CBR", () => {
  it("records a non-zero ratio", () => {
    const time = new TimeTracker(config(0, 0, 0));
    assert.equal(time.updateCbr(cbrPacket(0x38)), 0);
    assert.equal(time.queryCbr(), 0x38);
  });

  it("rejects a zero ratio without forgetting the last one", () => {
    const time = new TimeTracker(config(0, 0, 0));
    assert.equal(time.updateCbr(cbrPacket(0)), -ErrorCode.BadPacket);
    assert.equal(time.queryCbr(), -ErrorCode.NoCbr);
    time.updateCbr(cbrPacket(2));
    assert.equal(time.updateCbr(cbrPacket(0)), -ErrorCode.BadPacket);
    assert.equal(time.queryCbr(), 2);
  });
});

describe("TimeTracker: TMA", () => {
  it("needs a TSC first", () => {
    const time = new TimeTracker(config(4, 1, 4));
    assert.equal(time.updateTma(tmaPacket(0xdc, 0xf)), -ErrorCode.BadContext);
  });

  it("allows one TMA per TSC", () => {
    const time = new TimeTracker(config(4, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    assert.equal(time.updateTma(tmaPacket(0x18, 8)), 0);
    assert.equal(time.updateTma(tmaPacket(0x18, 8)), -ErrorCode.BadContext);
    time.updateTsc(tscPacket(0xb0000n));
    assert.equal(time.updateTma(tmaPacket(0x18, 8)), 0);
  });

  it("does not move the estimate, but later MTCs count from TSC minus fc", () => {
    // mtcFreq 0: CTC = payload, TMA gives all 8 MTC bits. eax 1, ebx 1.
    const time = new TimeTracker(config(0, 1, 1));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0xff08, 1));
    assert.equal(tscOf(time), 0xa0000n);
    // MTC 9: CTC 9 after the TMA's 0x08 (0xff08 masked to 8 bits): one tick; a0000 - 1 + 1.
    time.updateMtc(mtcPacket(9));
    assert.equal(tscOf(time), 0xa0000n);
    time.updateMtc(mtcPacket(0xa));
    assert.equal(tscOf(time), 0xa0001n);
  });
});

describe("TimeTracker: MTC", () => {
  it("advances by the CTC distance times ebx/eax", () => {
    // mtcFreq 4, ratio 1/2 (eax 2, ebx 1). TMA: CTC 0xf012 & 0xfff = 0x012, base a0000 - 6.
    const time = new TimeTracker(config(4, 2, 1));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0xf012, 6));
    // MTC 2: CTC 0x20, 0x0e after 0x12: 0xe / 2 = 7; a0000 - 6 + 7.
    time.updateMtc(mtcPacket(2));
    assert.equal(tscOf(time), 0xa0001n);
    // MTC 3: 0x10 / 2 = 8.
    time.updateMtc(mtcPacket(3));
    assert.equal(tscOf(time), 0xa0009n);
  });

  it("corrects one wrap of the 8 CTC bits MTC carries", () => {
    // mtcFreq 0, ratio 9/3. TMA: CTC 0x1fff & 0xff = 0xff, base a0000 - 1.
    const time = new TimeTracker(config(0, 3, 9));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x1fff, 1));
    // MTC 0: 0 < 0xff, so 0x100 - 0xff = 1 CTC tick = 3 fc ticks: a0000 - 1 + 3.
    assert.equal(time.updateMtc(mtcPacket(0)), 0);
    assert.equal(tscOf(time), 0xa0002n);
    assert.equal(time.updateMtc(mtcPacket(1)), 0);
    assert.equal(tscOf(time), 0xa0005n);
  });

  it("ignores MTCs between a TSC and its TMA", () => {
    // mtcFreq 8 so TMA's 16 bits cover MTC's CTC[15:8]. ratio 4/1.
    const time = new TimeTracker(config(8, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    assert.equal(time.updateMtc(mtcPacket(0xc1)), 0);
    assert.equal(tscOf(time), 0xa0000n);
    time.updateTma(tmaPacket(0xc2d2, 0xe));
    // MTC c3: CTC 0xc300 - 0xc2d2 = 0x2e, * 4 = 0xb8; a0000 - 0xe + 0xb8.
    time.updateMtc(mtcPacket(0xc3));
    assert.equal(tscOf(time), 0xa00aan);
  });

  it("without any TSC, counts from 0 after skipping the first MTC (still reports NoTime)", () => {
    const time = new TimeTracker(config(8, 1, 4));
    assert.equal(time.updateMtc(mtcPacket(0xc1)), 0);
    assert.deepEqual(query(time), { rc: -ErrorCode.NoTime, tsc: 0n, lostMtc: 0, lostCyc: 0 });
    // 0xc200 - 0xc100 = 0x100 CTC ticks, * 4.
    time.updateMtc(mtcPacket(0xc2));
    assert.deepEqual(query(time), { rc: -ErrorCode.NoTime, tsc: 0x400n, lostMtc: 0, lostCyc: 0 });
    time.updateMtc(mtcPacket(0xc4));
    assert.equal(tscOf(time), 0xc00n);
  });

  it("estimates the CTC bits a TMA lacks from the next MTC (low MTC frequency)", () => {
    // mtcFreq 12: MTC carries CTC[19:12], TMA only CTC[15:0]. ratio 1/2.
    const time = new TimeTracker(config(12, 2, 1));
    time.updateTsc(tscPacket(0xa0018n));
    time.updateTma(tmaPacket(0xe020, 8));
    // MTC af: CTC 0xaf000. Its low 16 bits 0xf000 >= 0xe020, so the TMA was at
    // 0xa0000 | 0xe020 = 0xae020: 0xfe0 CTC ticks, / 2 = 0x7f0; a0018 - 8 + 0x7f0.
    time.updateMtc(mtcPacket(0xaf));
    assert.equal(tscOf(time), 0xa0800n);
    time.updateMtc(mtcPacket(0xb0));
    assert.equal(tscOf(time), 0xa1000n);
  });

  it("puts the TMA one 64K-CTC period back when the MTC's low bits are behind it", () => {
    const time = new TimeTracker(config(12, 2, 1));
    time.updateTsc(tscPacket(0xa0018n));
    time.updateTma(tmaPacket(0xf020, 8));
    // MTC a0: CTC 0xa0000, low bits 0 < 0xf020: high bits 0xa0000 - 0x10000 = 0x90000,
    // TMA at 0x9f020: 0xfe0 ticks as before.
    time.updateMtc(mtcPacket(0xa0));
    assert.equal(tscOf(time), 0xa0800n);
    time.updateMtc(mtcPacket(0xa1));
    assert.equal(tscOf(time), 0xa1000n);
  });

  it("counts a lost MTC when the CTC goes back by more than one wrap", () => {
    // With mtcFreq 24 the wrap amount 1 << 32 is 1 << 0 on x86 (shift count mod 32),
    // so a CTC going back cannot be corrected. TMA's CTC mask (1 << 32) - 1 is 0 too.
    const time = new TimeTracker(config(24, 1, 1));
    time.updateTsc(tscPacket(0x1000n));
    time.updateTma(tmaPacket(0, 0));
    // The first MTC after a TMA takes the TMA to be in its own period: no advance.
    assert.equal(time.updateMtc(mtcPacket(2)), 0);
    assert.equal(tscOf(time), 0x1000n);
    // CTC 0x1000000 < 0x2000000, and 0x1000000 + 1 still is.
    assert.equal(time.updateMtc(mtcPacket(1)), -ErrorCode.BadPacket);
    assert.deepEqual(query(time), { rc: 0, tsc: 0x1000n, lostMtc: 1, lostCyc: 0 });
    // The failed MTC still became the reference: the next one measures from it.
    assert.equal(time.updateMtc(mtcPacket(3)), 0);
    assert.deepEqual(query(time), { rc: 0, tsc: 0x1000n + 0x2000000n, lostMtc: 1, lostCyc: 0 });
    // A TSC recovers.
    time.updateTsc(tscPacket(0x5000n));
    assert.equal(query(time).lostMtc, 0);
  });

  it("returns BadConfig without CPUID 0x15 (from the second MTC on)", () => {
    const time = new TimeTracker(config(0, 0, 0));
    assert.equal(time.updateMtc(mtcPacket(1)), 0);
    assert.equal(time.updateMtc(mtcPacket(2)), -ErrorCode.BadConfig);
    const withEbxOnly = new TimeTracker(config(0, 0, 3));
    withEbxOnly.updateMtc(mtcPacket(1));
    assert.equal(withEbxOnly.updateMtc(mtcPacket(2)), -ErrorCode.BadConfig);
  });

  it("clears lost CYCs", () => {
    const time = new TimeTracker(config(4, 1, 4));
    time.updateCyc(cycPacket(5n), NO_FCR);
    time.updateCyc(cycPacket(5n), NO_FCR);
    assert.equal(query(time).lostCyc, 2);
    time.updateMtc(mtcPacket(1));
    assert.equal(query(time).lostCyc, 0);
  });
});

describe("TimeTracker: CYC", () => {
  it("without calibration counts a lost CYC and leaves the time alone", () => {
    const time = new TimeTracker(config(8, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x102, 8));
    assert.equal(time.updateCyc(cycPacket(3n), NO_FCR), 0);
    assert.deepEqual(query(time), { rc: 0, tsc: 0xa0000n, lostMtc: 0, lostCyc: 1 });
  });

  it("with calibration adds cycles * fcr / 256 fast-counter ticks", () => {
    // TMA: base a0000 - 8, fc 8. fcr 0x200 (2.0): CYC 3 adds 6, CYC 1 adds 2.
    const time = new TimeTracker(config(8, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x102, 8));
    time.updateCyc(cycPacket(3n), fcr(0x200));
    assert.equal(tscOf(time), 0xa0006n);
    time.updateCyc(cycPacket(1n), fcr(0x200));
    assert.equal(tscOf(time), 0xa0008n);
  });

  it("truncates the fixed-point product", () => {
    // fcr 0x180 (1.5): 3 * 0x180 = 0x480 >> 8 = 4 (4.5 truncated).
    const time = new TimeTracker(config(0, 1, 1));
    time.updateTsc(tscPacket(0x100n));
    time.updateCyc(cycPacket(3n), fcr(0x180));
    assert.equal(tscOf(time), 0x104n);
  });

  it("handles CYC payloads above 32 bits exactly", () => {
    const time = new TimeTracker(config(0, 1, 1));
    time.updateTsc(tscPacket(0x100n));
    // (0x123456789ab * 0x100) >> 8 = 0x123456789ab.
    time.updateCyc(cycPacket(0x123456789abn), fcr(0x100));
    assert.equal(tscOf(time), 0x100n + 0x123456789abn);
    // The 64-bit product wraps as in C: (2^60 + 3) * 0x100 = 2^68 + 0x300 -> 0x300 >> 8 = 3.
    time.updateCyc(cycPacket((1n << 60n) + 3n), fcr(0x100));
    assert.equal(tscOf(time), 0x100n + 0x123456789abn + 3n);
  });

  it("spreads a CYC that spans earlier MTC periods (first CYC after MTCs)", () => {
    // mtcFreq 4, ratio 4/1, fcr 0x80 (0.5).
    const time = new TimeTracker(config(4, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x18, 8)); // base a0000 - 8, CTC 0x18
    time.updateMtc(mtcPacket(2)); // 8 CTC * 4 = 0x20: a0018
    assert.equal(tscOf(time), 0xa0018n);
    // Same MTC period as the last MTC: no adjustment. 0x80 * 0x80 >> 8 = 0x40.
    time.updateCyc(cycPacket(0x80n), fcr(0x80));
    assert.equal(tscOf(time), 0xa0058n);
    time.updateMtc(mtcPacket(3)); // + 0x40: a0058
    time.updateMtc(mtcPacket(4)); // + 0x40: a0098, no CYC in the period before
    assert.equal(tscOf(time), 0xa0098n);
    // This CYC counts from MTC 3: the period 3..4 is 0x40 fc ticks = 0x40 * 256 / 0x80
    // = 0x80 cycles, already in base. 0xe0 - 0x80 = 0x60 cycles: 0x30 ticks.
    time.updateCyc(cycPacket(0xe0n), fcr(0x80));
    assert.equal(tscOf(time), 0xa00c8n);
    time.updateMtc(mtcPacket(5));
    assert.equal(tscOf(time), 0xa00d8n);
  });

  it("clamps at zero when the earlier periods need more cycles than the CYC has", () => {
    const time = new TimeTracker(config(4, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x18, 8));
    time.updateMtc(mtcPacket(2));
    time.updateCyc(cycPacket(0x80n), fcr(0x80));
    time.updateMtc(mtcPacket(3));
    time.updateMtc(mtcPacket(4));
    // 0x40 < the 0x80 cycles of period 3..4: nothing is added.
    time.updateCyc(cycPacket(0x40n), fcr(0x80));
    assert.equal(tscOf(time), 0xa0098n);
  });

  it("reports BadConfig from the spreading step without CPUID 0x15", () => {
    const time = new TimeTracker(config(0, 0, 0));
    time.updateMtc(mtcPacket(1));
    time.updateMtc(mtcPacket(2));
    time.updateMtc(mtcPacket(3));
    // MTCs 2 and 3 failed but moved the CTC; no CYC since MTC 1, so the next CYC spans 1..3.
    assert.equal(time.updateCyc(cycPacket(0x10n), fcr(0x100)), -ErrorCode.BadConfig);
  });

  it("after a TMA with fc 0 has nothing to spread", () => {
    const time = new TimeTracker(config(8, 1, 4));
    time.updateTsc(tscPacket(0xa0000n));
    time.updateTma(tmaPacket(0x102, 0));
    time.updateCyc(cycPacket(3n), fcr(0x200));
    assert.equal(tscOf(time), 0xa0006n);
  });
});
