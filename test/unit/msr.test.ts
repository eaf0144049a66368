import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { fieldMask, getField, setField } from "../../src/unit/bits.js";
import {
  CTL_RESERVED,
  decodeAddr,
  decodeCr3Match,
  decodeCtl,
  decodeCtlBig,
  decodeOutputBase,
  decodeOutputMaskPtrs,
  decodeStatus,
  decodeStatusBig,
  encodeAddr,
  encodeCr3Match,
  encodeCtl,
  encodeCtlBig,
  encodeOutputBase,
  encodeOutputMaskPtrs,
  encodeStatus,
  encodeStatusBig,
  isCanonical,
  STATUS_RESERVED,
  singleRangeMask,
  topaTableOffset,
} from "../../src/unit/msr.js";
import {
  ALL_MSRS,
  CTL,
  CTL_FIELDS,
  MASK_PTRS_FIELDS,
  Msr,
  msrName,
  STATUS,
  STATUS_FIELDS,
} from "../../src/unit/msr-layout.js";

const M64 = (1n << 64n) - 1n;
const big = (hi: number, lo: number): bigint => (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0);
const u32 = fc.oneof(
  fc.constantFrom(0, 1, 0x7f, 0x80, 0x7fffffff, 0x80000000, 0xffffffff),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const u64 = fc.oneof(
  fc.tuple(u32, u32).map(([hi, lo]) => big(hi, lo)),
  fc.bigInt({ min: 0n, max: M64 }),
);
const RUNS = { numRuns: 2000 };

describe("MSR addresses and layouts", () => {
  it("names every Intel PT MSR by its SDM name (SDM Vol. 4 / seed note 002 table)", () => {
    assert.deepEqual(
      ALL_MSRS.map((a) => [a.toString(16), msrName(a)]),
      [
        ["560", "IA32_RTIT_OUTPUT_BASE"],
        ["561", "IA32_RTIT_OUTPUT_MASK_PTRS"],
        ["570", "IA32_RTIT_CTL"],
        ["571", "IA32_RTIT_STATUS"],
        ["572", "IA32_RTIT_CR3_MATCH"],
        ["580", "IA32_RTIT_ADDR0_A"],
        ["581", "IA32_RTIT_ADDR0_B"],
        ["582", "IA32_RTIT_ADDR1_A"],
        ["583", "IA32_RTIT_ADDR1_B"],
        ["584", "IA32_RTIT_ADDR2_A"],
        ["585", "IA32_RTIT_ADDR2_B"],
        ["586", "IA32_RTIT_ADDR3_A"],
        ["587", "IA32_RTIT_ADDR3_B"],
      ],
    );
    assert.equal(msrName(0x588), undefined);
    assert.equal(msrName(0x57f), undefined);
    assert.equal(msrName(0x10), undefined);
  });

  it("places IA32_RTIT_CTL fields where Table IA32_RTIT_CTL MSR puts them", () => {
    const layout = CTL_FIELDS.map((f) => `${f.name}@${f.lsb + f.width - 1}:${f.lsb}`);
    assert.deepEqual(layout, [
      "TraceEn@0:0",
      "CYCEn@1:1",
      "OS@2:2",
      "User@3:3",
      "PwrEvtEn@4:4",
      "FUPonPTW@5:5",
      "FabricEn@6:6",
      "CR3Filter@7:7",
      "ToPA@8:8",
      "MTCEn@9:9",
      "TSCEn@10:10",
      "DisRETC@11:11",
      "PTWEn@12:12",
      "BranchEn@13:13",
      "MTCFreq@17:14",
      "CycThresh@22:19",
      "PSBFreq@27:24",
      "EventEn@31:31",
      "ADDR0_CFG@35:32",
      "ADDR1_CFG@39:36",
      "ADDR2_CFG@43:40",
      "ADDR3_CFG@47:44",
      "DisTNT@55:55",
      "InjectPsbPmiOnEnable@56:56",
    ]);
    // Reserved: 18, 23, 30:28, 54:48, 63:57.
    assert.equal(CTL_RESERVED.lo, ((1 << 18) | (1 << 23) | (7 << 28)) >>> 0);
    assert.equal(CTL_RESERVED.hi, ((0x7f << 16) | (0x7f << 25)) >>> 0);
  });

  it("places IA32_RTIT_STATUS and OUTPUT_MASK_PTRS fields where the SDM tables put them", () => {
    assert.deepEqual(
      STATUS_FIELDS.map((f) => `${f.name}@${f.lsb + f.width - 1}:${f.lsb}`),
      [
        "FilterEn@0:0",
        "ContextEn@1:1",
        "TriggerEn@2:2",
        "Error@4:4",
        "Stopped@5:5",
        "PendPSB@6:6",
        "PendTopaPMI@7:7",
        "PacketByteCnt@48:32",
      ],
    );
    assert.equal(STATUS_RESERVED.lo, 0xffffff08);
    assert.equal(STATUS_RESERVED.hi, 0xfffe0000);
    assert.deepEqual(
      MASK_PTRS_FIELDS.map((f) => `${f.name}@${f.lsb + f.width - 1}:${f.lsb}`),
      ["LowerMask@6:0", "MaskOrTableOffset@31:7", "OutputOffset@63:32"],
    );
  });

  it("fields do not overlap, and defined plus reserved bits cover all 64", () => {
    for (const [fields, rsv] of [
      [CTL_FIELDS, CTL_RESERVED],
      [STATUS_FIELDS, STATUS_RESERVED],
    ] as const) {
      let hi = rsv.hi;
      let lo = rsv.lo;
      for (const f of fields) {
        const m = fieldMask(f);
        if (f.lsb >= 32) {
          assert.equal(hi & m, 0, f.name);
          hi = (hi | m) >>> 0;
        } else {
          assert.equal(lo & m, 0, f.name);
          lo = (lo | m) >>> 0;
        }
      }
      assert.equal(hi, 0xffffffff);
      assert.equal(lo, 0xffffffff);
    }
  });
});

describe("IA32_RTIT_CTL encode/decode", () => {
  it("round-trips every 64-bit value, reserved bits included", () => {
    fc.assert(
      fc.property(u32, u32, (hi, lo) => {
        const v = decodeCtl(hi, lo);
        assert.deepEqual(encodeCtl(v), { hi, lo });
        assert.equal(encodeCtlBig(decodeCtlBig(big(hi, lo))), big(hi, lo));
        assert.equal(v.reservedHi, (hi & CTL_RESERVED.hi) >>> 0);
        assert.equal(v.reservedLo, (lo & CTL_RESERVED.lo) >>> 0);
      }),
      RUNS,
    );
  });

  for (const f of CTL_FIELDS) {
    it(`${f.name} round-trips over its full range (${f.width} bit${f.width > 1 ? "s" : ""}) and touches only its bits`, () => {
      const max = 2 ** f.width - 1;
      fc.assert(
        fc.property(fc.integer({ min: 0, max }), u32, u32, (value, hi, lo) => {
          const out = { hi, lo };
          setField(out, f, value);
          assert.equal(getField(out.hi, out.lo, f), value);
          const view = decodeCtl(out.hi, out.lo) as unknown as Record<string, unknown>;
          assert.equal(view[f.key], f.width === 1 ? value === 1 : value);
          // Other bits unchanged.
          const m = fieldMask(f);
          if (f.lsb >= 32) {
            assert.equal(out.lo, lo);
            assert.equal((out.hi & ~m) >>> 0, (hi & ~m) >>> 0);
          } else {
            assert.equal(out.hi, hi);
            assert.equal((out.lo & ~m) >>> 0, (lo & ~m) >>> 0);
          }
          // A view holding only this field encodes to exactly its bits.
          const only = encodeCtl({ [f.key]: f.width === 1 ? value === 1 : value });
          assert.equal(big(only.hi, only.lo), BigInt(value) << BigInt(f.lsb));
        }),
        { numRuns: f.width === 1 ? 50 : 200 },
      );
    });
  }

  it("known answers", () => {
    const perfDefault = encodeCtlBig({
      traceEn: true,
      os: true,
      user: true,
      toPA: true,
      tscEn: true,
      branchEn: true,
    });
    assert.equal(perfDefault, 0x250dn);
    assert.equal(encodeCtlBig({ mtcEn: true, mtcFreq: 3 }), 0x200n | (3n << 14n));
    assert.equal(encodeCtlBig({ cycEn: true, cycThresh: 1 }), 0x2n | 0x80000n);
    assert.equal(encodeCtlBig({ psbFreq: 5 }), 0x5000000n);
    assert.equal(encodeCtlBig({ addr0Cfg: 1, addr3Cfg: 2 }), (1n << 32n) | (2n << 44n));
    assert.equal(encodeCtlBig({ disTnt: true }), 1n << 55n);
    assert.equal(encodeCtlBig({ injectPsbPmiOnEnable: true }), 1n << 56n);
    assert.equal(encodeCtlBig({ eventEn: true }), 1n << 31n);
    assert.equal(encodeCtlBig({ fabricEn: true, cr3Filter: true, ptwEn: true, fupOnPtw: true }), 0x10e0n);
    assert.equal(encodeCtlBig({ pwrEvtEn: true, disRetc: true }), 0x810n);
    const v = decodeCtlBig(0x0100_0021_0508_c30dn);
    assert.equal(v.traceEn, true);
    assert.equal(v.os, true);
    assert.equal(v.user, true);
    assert.equal(v.cr3Filter, false);
    assert.equal(v.toPA, true);
    assert.equal(v.mtcEn, true);
    assert.equal(v.mtcFreq, 3);
    assert.equal(v.cycThresh, 1);
    assert.equal(v.psbFreq, 5);
    assert.equal(v.addr0Cfg, 1);
    assert.equal(v.addr1Cfg, 2);
    assert.equal(v.injectPsbPmiOnEnable, true);
    assert.equal(v.reservedHi, 0);
    assert.equal(v.reservedLo, 0);
  });

  it("flags reserved bits on decode", () => {
    const v = decodeCtlBig((1n << 18n) | (1n << 50n) | (1n << 63n));
    assert.equal(v.reservedLo, 1 << 18);
    assert.equal(v.reservedHi, ((1 << 18) | (1 << 31)) >>> 0);
  });

  it("rejects views that do not fit (API edge)", () => {
    assert.throws(() => encodeCtl({ mtcFreq: 16 }), RangeError);
    assert.throws(() => encodeCtl({ psbFreq: -1 }), RangeError);
    assert.throws(() => encodeCtl({ cycThresh: 1.5 }), RangeError);
    assert.throws(() => encodeCtl({ reservedLo: 1 }), RangeError); // bit 0 is TraceEn, not reserved
  });
});

describe("IA32_RTIT_STATUS encode/decode", () => {
  it("round-trips every 64-bit value", () => {
    fc.assert(
      fc.property(u32, u32, (hi, lo) => {
        assert.deepEqual(encodeStatus(decodeStatus(hi, lo)), { hi, lo });
        assert.equal(encodeStatusBig(decodeStatusBig(big(hi, lo))), big(hi, lo));
      }),
      RUNS,
    );
  });

  for (const f of STATUS_FIELDS) {
    it(`${f.name} round-trips over its full range`, () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 2 ** f.width - 1 }), (value) => {
          const h = encodeStatus({ [f.key]: f.width === 1 ? value === 1 : value });
          assert.equal(big(h.hi, h.lo), BigInt(value) << BigInt(f.lsb));
          const view = decodeStatus(h.hi, h.lo) as unknown as Record<string, unknown>;
          assert.equal(view[f.key], f.width === 1 ? value === 1 : value);
        }),
        { numRuns: f.width === 1 ? 20 : 500 },
      );
    });
  }

  it("known answers", () => {
    assert.equal(encodeStatusBig({ packetByteCnt: 0x1ffff, stopped: true }), (0x1ffffn << 32n) | 0x20n);
    assert.equal(encodeStatusBig({ error: true, pendPsb: true, pendTopaPmi: true }), 0xd0n);
    const s = decodeStatusBig(0x0000_0123_0000_0007n);
    assert.deepEqual(
      [s.filterEn, s.contextEn, s.triggerEn, s.error, s.stopped, s.packetByteCnt],
      [true, true, true, false, false, 0x123],
    );
    assert.equal(STATUS.PacketByteCnt.width, 17);
  });
});

describe("address-like MSRs", () => {
  it("IA32_RTIT_CR3_MATCH: bits 63:5 are CR3, 4:0 reserved; every value round-trips", () => {
    fc.assert(
      fc.property(u32, u32, (hi, lo) => {
        const v = decodeCr3Match(hi, lo);
        assert.equal(v.cr3, big(hi, lo) & ~0x1fn);
        assert.equal(v.reservedLo, lo & 0x1f);
        assert.deepEqual(encodeCr3Match(v), { hi, lo });
      }),
      RUNS,
    );
    assert.throws(() => encodeCr3Match({ cr3: 0x1001n, reservedLo: 0 }), RangeError);
  });

  it("IA32_RTIT_ADDRn: 64-bit linear address; canonical for 48- and 57-bit widths", () => {
    fc.assert(
      fc.property(u64, (a) => {
        const h = encodeAddr({ address: a });
        const v = decodeAddr(h.hi, h.lo);
        assert.equal(v.address, a);
        const signed48 = BigInt.asIntN(64, a) >> 47n;
        assert.equal(v.canonical, signed48 === 0n || signed48 === -1n);
        const signed57 = BigInt.asIntN(64, a) >> 56n;
        assert.equal(isCanonical(h.hi, 57), signed57 === 0n || signed57 === -1n);
      }),
      RUNS,
    );
    assert.equal(decodeAddr(0xffff8000, 0).canonical, true);
    assert.equal(decodeAddr(0xffff7fff, 0).canonical, false);
    assert.equal(decodeAddr(0x00007fff, 0xffffffff).canonical, true);
    assert.equal(decodeAddr(0x00008000, 0).canonical, false);
    assert.equal(isCanonical(0x00ff_ffff, 57), true);
    assert.equal(isCanonical(0x0100_0000, 57), false);
  });

  it("IA32_RTIT_OUTPUT_BASE: bits 6:0 and 63:MAXPHYADDR reserved; every value round-trips", () => {
    fc.assert(
      fc.property(u32, u32, fc.integer({ min: 36, max: 52 }), (hi, lo, maxPhys) => {
        const v = decodeOutputBase(hi, lo, maxPhys);
        const value = big(hi, lo);
        const addrMask = ((1n << BigInt(maxPhys)) - 1n) & ~0x7fn;
        assert.equal(v.basePhysAddr, value & addrMask);
        assert.equal(v.reservedLo, lo & 0x7f);
        assert.equal(BigInt(v.reservedHi) << 32n, value & ~((1n << BigInt(maxPhys)) - 1n));
        assert.deepEqual(encodeOutputBase(v), { hi, lo });
      }),
      RUNS,
    );
  });

  it("IA32_RTIT_OUTPUT_MASK_PTRS: LowerMask, MaskOrTableOffset, OutputOffset over their full ranges", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0x7f }),
        fc.integer({ min: 0, max: 2 ** 25 - 1 }),
        u32,
        (lowerMask, maskOrTableOffset, outputOffset) => {
          const h = encodeOutputMaskPtrs({ lowerMask, maskOrTableOffset, outputOffset });
          assert.equal(
            big(h.hi, h.lo),
            (BigInt(outputOffset) << 32n) | (BigInt(maskOrTableOffset) << 7n) | BigInt(lowerMask),
          );
          assert.deepEqual(decodeOutputMaskPtrs(h.hi, h.lo), { lowerMask, maskOrTableOffset, outputOffset });
        },
      ),
      RUNS,
    );
    // Single range of 1 MiB: mask 0xfffff; ToPA entry 3 of the table: offset 0x18.
    assert.equal(singleRangeMask(0x000fff80), 0xfffff);
    assert.equal(topaTableOffset(3 << 7), 0x18);
    assert.equal(Msr.OutputMaskPtrs, 0x561);
    assert.equal(CTL.TraceEn.lsb, 0);
  });
});
