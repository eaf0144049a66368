/**
 * Random timing-packet sequences through TimeTracker/TimeCalibrator and through the
 * BigInt reference model (reference.ts), driven in ptdump's call order; every return
 * code and every query must agree after every packet.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { noErrata } from "../../src/cpu/index.js";
import { TimeCalibrator, TimeTracker, TscQuery, U64 } from "../../src/time/index.js";
import { cbrPacket, cycPacket, mtcPacket, tmaPacket, tscPacket } from "./packets.js";
import { RefCal, type RefConfig, RefTime } from "./reference.js";

type Op =
  | { k: "tsc"; step: bigint; jump: bigint | null; header: boolean }
  | { k: "cbr"; ratio: number; header: boolean }
  | { k: "tma"; ctc: number; fc: number }
  | { k: "mtc"; step: number; jump: number | null }
  | { k: "cyc"; value: bigint }
  | { k: "rawCyc"; value: bigint; fcr: bigint }
  | { k: "psb" }
  | { k: "ovf"; keep: boolean }
  | { k: "setFcr"; fcr: bigint };

const u32 = fc.oneof(
  fc.constant(0),
  fc.integer({ min: 1, max: 16 }),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const refConfig: fc.Arbitrary<RefConfig> = fc.record({
  mtcFreq: fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 15 }) },
    fc.integer({ min: 0, max: 31 }),
  ),
  nomFreq: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 })),
  eax: u32,
  ebx: u32,
  skl168: fc.boolean(),
});

const bits = (n: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(n)) - 1n });
const cycles = fc.oneof(
  { weight: 6, arbitrary: fc.bigInt({ min: 0n, max: 0x2000n }) },
  { weight: 2, arbitrary: bits(32) },
  bits(61),
  bits(64),
);
const fcrValue = fc.oneof(
  fc.constant(0n),
  { weight: 4, arbitrary: fc.bigInt({ min: 1n, max: 0x1000n }) },
  bits(40),
  bits(64),
);

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant("tsc" as const),
      step: fc.bigInt({ min: 0n, max: 0x10000n }),
      jump: fc.option(bits(56), { freq: 4 }),
      header: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant("cbr" as const),
      ratio: fc.integer({ min: 0, max: 255 }),
      header: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant("tma" as const),
      ctc: fc.integer({ min: 0, max: 0xffff }),
      fc: fc.integer({ min: 0, max: 0x1ff }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant("mtc" as const),
      step: fc.integer({ min: 0, max: 3 }),
      jump: fc.option(fc.integer({ min: 0, max: 255 }), { freq: 5 }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ k: fc.constant("cyc" as const), value: cycles }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("rawCyc" as const), value: cycles, fcr: fcrValue }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("psb" as const) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("ovf" as const), keep: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant("setFcr" as const), fcr: fcrValue }),
  },
);

function run(cfg: RefConfig, ops: Op[]): void {
  const errata = noErrata();
  errata.skl168 = cfg.skl168;
  const config = {
    mtcFreq: cfg.mtcFreq,
    nomFreq: cfg.nomFreq,
    cpuid15Eax: cfg.eax,
    cpuid15Ebx: cfg.ebx,
    errata,
  };
  const time = new TimeTracker(config);
  const cal = new TimeCalibrator(config);
  const refTime = new RefTime(cfg);
  const refCal = new RefCal(cfg);
  const query = new TscQuery();
  const fcr = new U64();
  let tsc = 0x2fa1088fac05e2n;
  let mtc = 0;

  ops.forEach((o, i) => {
    const where = `op ${i}: ${JSON.stringify(o, (_, v) => (typeof v === "bigint" ? `0x${v.toString(16)}` : v))}`;
    let got: number[] = [];
    let want: number[] = [];
    switch (o.k) {
      case "tsc": {
        tsc = o.jump ?? (tsc + o.step) & ((1n << 56n) - 1n);
        const p = tscPacket(tsc);
        got = [o.header ? cal.headerTsc(p) : cal.updateTsc(p), time.updateTsc(p)];
        want = [o.header ? refCal.headerTsc(tsc) : refCal.tscPacket(tsc), refTime.tscPacket(tsc)];
        break;
      }
      case "cbr": {
        const p = cbrPacket(o.ratio);
        got = [o.header ? cal.headerCbr(p) : cal.updateCbr(p), time.updateCbr(p)];
        want = [o.header ? refCal.headerCbr(o.ratio) : refCal.cbrPacket(o.ratio), refTime.cbrPacket(o.ratio)];
        break;
      }
      case "tma": {
        const p = tmaPacket(o.ctc, o.fc);
        got = [cal.updateTma(p), time.updateTma(p)];
        want = [0, refTime.tmaPacket(o.ctc, o.fc)];
        break;
      }
      case "mtc": {
        mtc = o.jump ?? (mtc + o.step) & 0xff;
        const p = mtcPacket(mtc);
        got = [cal.updateMtc(p), time.updateMtc(p)];
        want = [refCal.mtcPacket(mtc), refTime.mtcPacket(mtc)];
        break;
      }
      case "cyc": {
        // ptdump: take the fcr (0 without calibration), count the cycles, then update time.
        const p = cycPacket(o.value);
        fcr.set(0, 0);
        const q = cal.queryFcr(fcr);
        got = [q, cal.updateCyc(p), time.updateCyc(p, fcr)];
        const refFcr = refCal.query();
        want = [
          typeof refFcr === "number" ? refFcr : 0,
          refCal.cycPacket(o.value),
          refTime.cycPacket(o.value, typeof refFcr === "number" ? 0n : refFcr),
        ];
        break;
      }
      case "rawCyc":
        got = [time.updateCyc(cycPacket(o.value), U64.fromBig(o.fcr))];
        want = [refTime.cycPacket(o.value, o.fcr)];
        break;
      case "psb":
        got = [cal.updatePsb()];
        want = [refCal.psb()];
        break;
      case "ovf":
        if (o.keep) {
          got = [cal.updateOvf()];
          want = [refCal.ovf()];
        } else {
          cal.reset();
          refCal.reset();
        }
        break;
      case "setFcr":
        got = [cal.setFcr(U64.fromBig(o.fcr))];
        want = [refCal.setFcr(o.fcr)];
        break;
    }
    assert.deepEqual(got, want, `return codes, ${where}`);

    const rc = time.queryTsc(query);
    const ref = refTime.query();
    assert.deepEqual(
      { rc, tsc: query.tscBig, lostMtc: query.lostMtc, lostCyc: query.lostCyc },
      { rc: ref.rc, tsc: ref.tsc, lostMtc: ref.lostMtc, lostCyc: ref.lostCyc },
      `time, ${where}`,
    );
    assert.equal(time.queryCbr(), refTime.queryCbr(), `cbr, ${where}`);
    fcr.set(0, 0);
    const frc = cal.queryFcr(fcr);
    const refFcr = refCal.query();
    assert.deepEqual(frc < 0 ? frc : fcr.big, refFcr, `fcr, ${where}`);
    assert.equal(cal.lostMtcCount, refCal.lostMtc, `calibration lost MTCs, ${where}`);
  });
}

describe("time layer against the BigInt reference model", () => {
  it("agrees on random packet sequences", () => {
    fc.assert(
      fc.property(refConfig, fc.array(op, { minLength: 1, maxLength: 120 }), (cfg, ops) => run(cfg, ops)),
      { numRuns: 600 },
    );
  });

  it("agrees on typical configurations (CPUID 0x15 set, MTCFreq 0..15)", () => {
    const typical = fc.record({
      mtcFreq: fc.integer({ min: 0, max: 15 }),
      nomFreq: fc.integer({ min: 0, max: 64 }),
      eax: fc.integer({ min: 1, max: 4 }),
      ebx: fc.integer({ min: 1, max: 400 }),
      skl168: fc.boolean(),
    });
    fc.assert(
      fc.property(typical, fc.array(op, { minLength: 1, maxLength: 200 }), (cfg, ops) => run(cfg, ops)),
      { numRuns: 400 },
    );
  });
});
