import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  bitmapEncodings,
  type Cpuid14,
  decodeCpuid14,
  effectiveAddressRanges,
  encodeAddressSizes,
  encodeCpuid14,
  type PtCapabilities,
} from "../../src/unit/capabilities.js";
import { PRESET_NAMES, PRESETS, type PresetName, presetCapabilities } from "../../src/unit/presets.js";

const u32 = fc.oneof(fc.constantFrom(0, 0xffffffff, 0x80000000, 1), fc.integer({ min: 0, max: 0xffffffff }));
const regs = fc.tuple(u32, u32, u32, u32).map(([eax, ebx, ecx, edx]) => ({ eax, ebx, ecx, edx }));
const leaf14 = fc.tuple(regs, regs).map(([sub0, sub1]): Cpuid14 => ({ sub0, sub1 }));

describe("CPUID leaf 14H decode/encode", () => {
  it("round-trips every register value, reserved bits included", () => {
    fc.assert(
      fc.property(leaf14, fc.integer({ min: 0, max: 0xffff }), (raw, sizes) => {
        const caps = decodeCpuid14(raw, sizes);
        assert.deepEqual(encodeCpuid14(caps), raw);
        assert.equal(encodeAddressSizes(caps), sizes);
      }),
      { numRuns: 3000 },
    );
  });

  it("reads each documented bit from its SDM position", () => {
    const zero: Cpuid14 = {
      sub0: { eax: 0, ebx: 0, ecx: 0, edx: 0 },
      sub1: { eax: 0, ebx: 0, ecx: 0, edx: 0 },
    };
    const flags: [keyof PtCapabilities, "ebx" | "ecx", number][] = [
      ["cr3Filtering", "ebx", 0],
      ["psbCyc", "ebx", 1],
      ["ipFiltering", "ebx", 2],
      ["mtc", "ebx", 3],
      ["ptwrite", "ebx", 4],
      ["powerEventTrace", "ebx", 5],
      ["psbPmiPreservation", "ebx", 6],
      ["eventTrace", "ebx", 7],
      ["tntDisable", "ebx", 8],
      ["topaOutput", "ecx", 0],
      ["topaMultipleEntries", "ecx", 1],
      ["singleRangeOutput", "ecx", 2],
      ["traceTransportOutput", "ecx", 3],
      ["lipPayloads", "ecx", 31],
    ];
    for (const [key, reg, bit] of flags) {
      const raw = structuredClone(zero);
      raw.sub0[reg] = (1 << bit) >>> 0;
      const caps = decodeCpuid14(raw) as unknown as Record<string, unknown>;
      for (const [other] of flags) assert.equal(caps[other], other === key, `${key} vs ${other}`);
    }
    const c = decodeCpuid14(
      {
        sub0: { eax: 1, ebx: 0, ecx: 0, edx: 0 },
        sub1: { eax: 0x02490003, ebx: 0x003f3fff, ecx: 0, edx: 0 },
      },
      0x392e,
    );
    assert.equal(c.maxSubLeaf, 1);
    assert.equal(c.addressRanges, 3);
    assert.equal(c.mtcPeriods, 0x249);
    assert.equal(c.cycThresholds, 0x3fff);
    assert.equal(c.psbFrequencies, 0x3f);
    assert.equal(c.maxPhysAddr, 46);
    assert.equal(c.linearAddressBits, 57);
  });

  it("keeps reserved bits apart from the decoded fields", () => {
    const c = decodeCpuid14({
      sub0: { eax: 1, ebx: 0xfffffe00, ecx: 0x7ffffff0, edx: 0x12345678 },
      sub1: { eax: 0x0000fff8, ebx: 0, ecx: 5, edx: 6 },
    });
    assert.deepEqual(c.reserved, {
      sub0: { eax: 0, ebx: 0xfffffe00, ecx: 0x7ffffff0, edx: 0x12345678 },
      sub1: { eax: 0x0000fff8, ebx: 0, ecx: 5, edx: 6 },
    });
    assert.equal(c.addressRanges, 0);
    assert.equal(c.cr3Filtering, false);
    assert.equal(c.lipPayloads, false);
  });

  it("lists bitmap encodings and caps the usable address ranges at 4, and at 0 without IP filtering", () => {
    assert.deepEqual(bitmapEncodings(0x0249), [0, 3, 6, 9]);
    assert.deepEqual(bitmapEncodings(0x3f), [0, 1, 2, 3, 4, 5]);
    const c = presetCapabilities("skylake");
    assert.equal(effectiveAddressRanges(c), 2);
    assert.equal(effectiveAddressRanges({ ...c, addressRanges: 7 }), 4);
    assert.equal(effectiveAddressRanges({ ...c, ipFiltering: false }), 0);
  });
});

/** The documented capabilities of each preset (what the dumps in presets.ts say). */
type Documented = Omit<PtCapabilities, "reserved">;
const base: Documented = {
  maxSubLeaf: 1,
  cr3Filtering: true,
  psbCyc: true,
  ipFiltering: true,
  mtc: true,
  ptwrite: false,
  powerEventTrace: false,
  psbPmiPreservation: false,
  eventTrace: false,
  tntDisable: false,
  topaOutput: true,
  topaMultipleEntries: true,
  singleRangeOutput: true,
  traceTransportOutput: false,
  lipPayloads: false,
  addressRanges: 2,
  mtcPeriods: 0x249, // ART(0), ART(3), ART(6), ART(9)
  cycThresholds: 0x3fff,
  psbFrequencies: 0x3f, // 2K..64K
  maxPhysAddr: 39,
  linearAddressBits: 48,
};
const DOCUMENTED: Record<PresetName, Documented> = {
  broadwell: {
    ...base,
    maxSubLeaf: 0,
    psbCyc: false,
    ipFiltering: false,
    mtc: false,
    topaMultipleEntries: false,
    singleRangeOutput: false,
    addressRanges: 0,
    mtcPeriods: 0,
    cycThresholds: 0,
    psbFrequencies: 0,
  },
  skylake: base,
  skylakeSp: { ...base, maxPhysAddr: 46 },
  goldmont: { ...base, lipPayloads: true, cycThresholds: 0xffff },
  icelake: { ...base, cycThresholds: 0x1fff },
  tigerlake: { ...base, psbPmiPreservation: true, cycThresholds: 0x1fff },
  alderlakeP: { ...base, ptwrite: true, psbPmiPreservation: true, cycThresholds: 0x3f, maxPhysAddr: 46 },
  sapphireRapids: {
    ...base,
    ptwrite: true,
    psbPmiPreservation: true,
    cycThresholds: 0x3f,
    maxPhysAddr: 46,
    linearAddressBits: 57,
  },
};

describe("presets", () => {
  for (const name of PRESET_NAMES) {
    it(`${PRESETS[name].name} decodes to its documented capabilities`, () => {
      const { reserved, ...caps } = presetCapabilities(name);
      assert.deepEqual(caps, DOCUMENTED[name]);
      assert.deepEqual(reserved, {
        sub0: { eax: 0, ebx: 0, ecx: 0, edx: 0 },
        sub1: { eax: 0, ebx: 0, ecx: 0, edx: 0 },
      });
      assert.deepEqual(encodeCpuid14(presetCapabilities(name)), PRESETS[name].cpuid14);
    });
  }

  it("raw leaf 14H of the dumps, as registers", () => {
    assert.deepEqual(PRESETS.skylake.cpuid14, {
      sub0: { eax: 0x00000001, ebx: 0x0000000f, ecx: 0x00000007, edx: 0 },
      sub1: { eax: 0x02490002, ebx: 0x003f3fff, ecx: 0, edx: 0 },
    });
    assert.deepEqual(PRESETS.broadwell.cpuid14.sub0, { eax: 0, ebx: 1, ecx: 1, edx: 0 });
    assert.equal(PRESETS.goldmont.cpuid14.sub0.ecx, 0x80000007);
    assert.equal(PRESETS.tigerlake.cpuid14.sub0.ebx, 0x4f);
    assert.equal(PRESETS.alderlakeP.cpuid14.sub0.ebx, 0x5f);
  });

  it("marks the presets that are approximations", () => {
    const approx = PRESET_NAMES.filter((n) => "approximation" in PRESETS[n]);
    assert.deepEqual(approx, ["skylakeSp", "sapphireRapids"]);
  });
});
