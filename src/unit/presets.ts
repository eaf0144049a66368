/**
 * CPUID leaf 14H of real processor generations, as raw registers.
 *
 * Sources: raw CPUID dumps (AIDA64/InstLatX64-style and libcpuid "basic_cpuid" files,
 * `cpuid -r` output) of the parts listed with each preset. Where no dump of the named
 * generation itself was at hand the preset says so in `approximation`.
 */
import { type Cpuid14, decodeCpuid14, type PtCapabilities } from "./capabilities.js";
import {
  BROADWELL_PROFILE,
  type CpuProfile,
  GOLDEN_COVE_PROFILE,
  GOLDMONT_PROFILE,
  SKYLAKE_PROFILE,
  SKYLAKE_SP_PROFILE,
  SUNNY_COVE_PROFILE,
} from "./profiles.js";

export interface Preset {
  /** Generation name. */
  readonly name: string;
  /** CPUID family/model signatures it covers (display family_model, hex). */
  readonly models: readonly string[];
  /** The parts whose dumps the values come from. */
  readonly source: string;
  /** Set when the values are inferred rather than read from this generation. */
  readonly approximation?: string;
  readonly cpuid14: Readonly<Cpuid14>;
  /** CPUID.80000008H:EAX[15:0]: linear width << 8 | MAXPHYADDR. */
  readonly addressSizes: number;
  /** What the generation does where the SDM leaves room (profiles.ts). */
  readonly profile: CpuProfile;
}

const leaf = (eax0: number, ebx0: number, ecx0: number, eax1: number, ebx1: number): Cpuid14 => ({
  sub0: { eax: eax0, ebx: ebx0, ecx: ecx0, edx: 0 },
  sub1: { eax: eax1, ebx: ebx1, ecx: 0, edx: 0 },
});

export const PRESETS = {
  /** First Intel PT generation: ToPA with one output entry, CR3 filtering, nothing else. */
  broadwell: {
    name: "Broadwell",
    models: ["06_3D", "06_47", "06_4F"],
    source:
      "Core M-5Y70, i7-5500U, i5-5250U (06_3D), i7-5775C (06_47), i7-6800K/6850K/6950X/6900K (06_4F): " +
      "14H.0 = 0/1/1/0 in every dump; max sub-leaf 0, so sub-leaf 1 is given as zeros",
    cpuid14: leaf(0, 0x00000001, 0x00000001, 0, 0),
    addressSizes: 0x3027,
    profile: BROADWELL_PROFILE,
  },
  skylake: {
    name: "Skylake (client)",
    models: ["06_4E", "06_5E", "06_8E", "06_9E", "06_A5", "06_A6"],
    source:
      "i7-6700K, i5-6600K, i3-6100, i7-6500U, m3-6Y30 (Skylake); i7-7700K, i5-7200U (Kaby Lake); " +
      "i7-8700K, i5-8350U (Coffee/Kaby Lake R); i9-10900K (Comet Lake): identical leaf 14H",
    cpuid14: leaf(1, 0x0000000f, 0x00000007, 0x02490002, 0x003f3fff),
    addressSizes: 0x3027,
    profile: SKYLAKE_PROFILE,
  },
  skylakeSp: {
    name: "Skylake-SP",
    models: ["06_55"],
    source: "i7-7800X, i9-7900X (06_55_4), i9-10980XE (06_55_7): the Skylake-SP/X die",
    approximation:
      "read from the HEDT (Skylake-X) parts of the same 06_55 die, not from a Xeon Scalable dump; " +
      "MAXPHYADDR 46 as on those parts",
    cpuid14: leaf(1, 0x0000000f, 0x00000007, 0x02490002, 0x003f3fff),
    addressSizes: 0x302e,
    profile: SKYLAKE_SP_PROFILE,
  },
  goldmont: {
    name: "Goldmont (Apollo Lake, Denverton)",
    models: ["06_5C", "06_5F"],
    source: "Celeron N3450/J3455, Pentium N4200, Atom E3930 (06_5C), Atom C3958 (06_5F)",
    cpuid14: leaf(1, 0x0000000f, 0x80000007, 0x02490002, 0x003fffff),
    addressSizes: 0x3027,
    profile: GOLDMONT_PROFILE,
  },
  icelake: {
    name: "Ice Lake (client)",
    models: ["06_7E"],
    source: "i3-1005G1, i5-1035G4, i7-1065G7 (06_7E_5)",
    cpuid14: leaf(1, 0x0000000f, 0x00000007, 0x02490002, 0x003f1fff),
    addressSizes: 0x3027,
    profile: SUNNY_COVE_PROFILE,
  },
  tigerlake: {
    name: "Tiger Lake",
    models: ["06_8C", "06_8D"],
    source: "i5-1135G7, i7-1165G7, i7-11375H (06_8C_1), i7-11800H (06_8D_1)",
    cpuid14: leaf(1, 0x0000004f, 0x00000007, 0x02490002, 0x003f1fff),
    addressSizes: 0x3027,
    profile: SUNNY_COVE_PROFILE,
  },
  alderlakeP: {
    name: "Alder Lake (P-core, Golden Cove)",
    models: ["06_97", "06_9A"],
    source:
      "i9-12900K logical CPUs 0-15 (P-cores, 06_97_2); the E-cores of hybrid parts report the same " +
      "EBX with ECX = 0x80000007 (LIP)",
    cpuid14: leaf(1, 0x0000005f, 0x00000007, 0x02490002, 0x003f003f),
    addressSizes: 0x302e,
    profile: GOLDEN_COVE_PROFILE,
  },
  sapphireRapids: {
    name: "Sapphire Rapids",
    models: ["06_8F"],
    source: "Golden Cove server core",
    approximation:
      "no dump of this generation was at hand: leaf 14H taken from the Golden Cove P-core of Alder Lake; " +
      "57-bit linear and 46-bit physical addresses assumed",
    cpuid14: leaf(1, 0x0000005f, 0x00000007, 0x02490002, 0x003f003f),
    addressSizes: 0x392e,
    profile: GOLDEN_COVE_PROFILE,
  },
} as const satisfies Record<string, Preset>;

export type PresetName = keyof typeof PRESETS;

export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

/**
 * The preset `--cpu NAME` names (Skylake without one), or the message for a name that
 * is not a preset.
 */
export function presetNamed(name: string | undefined): { preset: PresetName } | { error: string } {
  if (name === undefined) return { preset: "skylake" };
  if ((PRESET_NAMES as string[]).includes(name)) return { preset: name as PresetName };
  return { error: `--cpu: '${name}' is not one of ${PRESET_NAMES.join(", ")}` };
}

/** The decoded capabilities of a preset. */
export function presetCapabilities(name: PresetName): PtCapabilities {
  const p: Preset = PRESETS[name];
  return decodeCpuid14(p.cpuid14, p.addressSizes);
}

/**
 * Whether a preset's default configuration sets IA32_RTIT_CTL.ToPA: TraceEn with
 * ToPA=0 (and FabricEn=0) selects single-range output, which is a #GP where
 * CPUID.14H.0:ECX[2] is 0 (Broadwell has ToPA output only; SDM 33.2.7.1).
 */
export function presetDefaultToPA(name: PresetName): boolean {
  const c = presetCapabilities(name);
  return !c.singleRangeOutput && c.topaOutput;
}

/** The behaviour profile of a preset (for `generate`'s `profile` option). */
export function presetProfile(name: PresetName): CpuProfile {
  return (PRESETS[name] as Preset).profile;
}
