/**
 * CPU behaviour profiles: what the SDM leaves to the implementation, per processor
 * generation, each choice with the evidence it rests on.
 *
 * Evidence comes from real captures in the shared corpus (counted with libipt's
 * packet dumps under `real/.../reference/*.ptref-dump.txt.gz`), from libipt's
 * errata table (src/cpu/errata.ts) and from the SDM (Vol. 3C, Intel PT chapter;
 * older editions: chapter 36). Where no capture of a generation was at hand the
 * evidence string says so and the profile keeps the SDM-documented default.
 */
import { cpuErrata, ERRATA_NAMES, type ErratumName } from "../cpu/errata.js";

/** How an IP packet's payload is compressed against the last IP (SDM Table "FUP/TIP IP Reconstruction"). */
export type IpCompression =
  /** The shortest IPBytes that reconstructs the IP (001b/010b against the last IP). */
  | "shortest"
  /** Never against the last IP: 011b (sign-extended 48 bits), else 110b (all 64 bits). */
  | "none";

/**
 * The status packets of a PSB+ in groups whose inner order never varies: `timing` is
 * TSC, TMA, CBR; `mode-exec-fup` is MODE.Exec then FUP.
 */
export type PsbGroup = "timing" | "vmcs" | "pip" | "mode-tsx" | "mode-exec-fup";

/** What TraceEn 0 -> 1 writes besides TIP.PGE. */
export type EnablePsb =
  /** A full PSB+ when IA32_RTIT_STATUS.PacketByteCnt is 0 (or PendPSB), else TSC, TMA, CBR (SDM). */
  | "byte-count"
  /** A full PSB+ at every enable. */
  | "always";

/** What a PSB+ written while PacketEn = 0 (TriggerEn = 1) carries. */
export type FilteredPsb =
  /** Only what is in context: timing, PIP, VMCS, MODE.TSX; no MODE.Exec, no FUP (SDM). */
  | "sdm"
  /**
   * Erratum BDM70: when a TIP.PGE is the next packet, the PSB+ carries MODE.TSX,
   * MODE.Exec and FUP(the TIP.PGE's IP), and no MODE.Exec precedes that TIP.PGE.
   * The model writes such a PSB+ as late as it can: when the next packet is a
   * TIP.PGE it takes that form, any other packet first gets the SDM form.
   */
  | "bdm70";

/** Where cycle-accurate mode puts the CYC of a compound event that starts with a FUP. */
export type CycCompound =
  /** Before the FUP (the event's first CYC-eligible packet). */
  | "first-packet"
  /** Not before the FUP: before the next CYC-eligible packet (TIP, TIP.PGD, PIP, MODE.Exec). */
  | "after-fup";

/** One behaviour and why the profile says so. */
export interface Behaviour<T> {
  readonly value: T;
  readonly evidence: string;
}

export interface CpuProfile {
  /** The core (microarchitecture) the profile describes. */
  readonly name: string;
  /** FUP payloads. */
  readonly fupIp: Behaviour<IpCompression>;
  /** TIP, TIP.PGE and TIP.PGD payloads. */
  readonly tipIp: Behaviour<IpCompression>;
  /** PSB+ status packets, in order (each only when the SDM's conditions for it hold). */
  readonly psbOrder: Behaviour<readonly PsbGroup[]>;
  readonly enablePsb: Behaviour<EnablePsb>;
  readonly filteredPsb: Behaviour<FilteredPsb>;
  readonly cycCompound: Behaviour<CycCompound>;
  /**
   * Most branch outcomes one TNT packet carries: 6, short TNT only; more (the SDM
   * allows up to 47), a long TNT when more than 6 are sent together.
   */
  readonly tnt: Behaviour<number>;
  /**
   * libipt's errata for the core. Only BDM70 changes what the model writes (through
   * `filteredPsb`); the others are decoder workarounds the model does not reproduce.
   */
  readonly errata: Behaviour<readonly ErratumName[]>;
}

/** The erratum names libipt lists for family 6, `model` (hex). */
function erratumNames(model: number): readonly ErratumName[] {
  const e = cpuErrata({ family: 6, model, stepping: 0 });
  return e ? ERRATA_NAMES.filter((n) => e[n]) : [];
}

const SDM_ORDER: readonly PsbGroup[] = ["timing", "vmcs", "pip", "mode-tsx", "mode-exec-fup"];

/** Evidence strings shared by several profiles. */
const SDM = {
  ip: "SDM Table 'FUP/TIP IP Reconstruction' allows any IPBytes; no capture of this core at hand, so the shortest",
  order: "SDM 'Decoder Synchronization (PSB+)' leaves the order open; no capture of this core at hand",
  enable:
    "SDM 'Packet Generation Enable Controls' (seed 002): full PSB+ only when PacketByteCnt = 0, else TSC, TMA, CBR",
  cyc: "SDM 'Cycle-Accurate Mode': a CYC before the first CYC-eligible packet; no cycle-accurate capture of this core",
} as const;

/**
 * The SDM's reading where it leaves room, with no erratum: the generator's default
 * when no profile is given, and the profile of generations without a capture.
 */
export const SDM_PROFILE: CpuProfile = {
  name: "SDM (no particular core)",
  fupIp: { value: "shortest", evidence: SDM.ip },
  tipIp: { value: "shortest", evidence: SDM.ip },
  psbOrder: { value: SDM_ORDER, evidence: `${SDM.order}; Broadwell's order (HASE Broadwell loopy, 10 PSB+)` },
  enablePsb: { value: "byte-count", evidence: SDM.enable },
  filteredPsb: { value: "sdm", evidence: "SDM: MODE.Exec and FUP only while PacketEn = 1" },
  cycCompound: { value: "first-packet", evidence: SDM.cyc },
  tnt: {
    value: 6,
    evidence: "SDM 'Taken/Not-taken (TNT) Packet': either form; no capture of this core at hand, so short",
  },
  errata: { value: [], evidence: "no particular core" },
};

/** Broadwell (06_3D, 06_47, 06_4F): the HASE 2018-05 captures, i7-5600U 6/61/4. */
export const BROADWELL_PROFILE: CpuProfile = {
  name: "Broadwell",
  fupIp: {
    value: "none",
    evidence: "HASE Broadwell: loopy 9/9 and control_flow 10/10 FUPs are 6-byte (IPBytes 011b)",
  },
  tipIp: {
    value: "none",
    evidence:
      "HASE Broadwell: loopy 8/8 and control_flow 8/8 TIP.PGE, control_flow 8/8 TIP are 6-byte, " +
      "also right after a FUP with the same IP",
  },
  psbOrder: {
    value: SDM_ORDER,
    evidence:
      "HASE Broadwell loopy: 8 PSB+ as PSB, TSC, CBR, MODE.TSX, MODE.Exec, FUP, PSBEND (no PIP: OS=0)",
  },
  enablePsb: {
    value: "always",
    evidence:
      "HASE Broadwell loopy: 10 PSB+ for 10 enables (Linux clears PacketByteCnt only on the first), " +
      "no TSC outside a PSB+; CPUID.14H.0:EBX[1] = 0: no PacketByteCnt",
  },
  filteredPsb: {
    value: "bdm70",
    evidence:
      "HASE Broadwell loopy: 8/8 PSB+ before a TIP.PGE carry MODE.TSX, MODE.Exec, FUP(TIP.PGE's IP) " +
      "and no MODE.Exec precedes the TIP.PGE; the 2 followed by none carry neither; erratum BDM70",
  },
  cycCompound: {
    value: "first-packet",
    evidence: "Broadwell has no cycle-accurate mode (CPUID.14H.0:EBX[1] = 0): never applies",
  },
  tnt: {
    value: 44,
    evidence:
      "HASE Broadwell control_flow: 6/11 TNTs long, 3 of them with 44 outcomes, then 34, 17 and 9 " +
      "(none above 44: a long run of outcomes goes out 44 at a time); the 5 short ones 1 to 3; " +
      "loopy: 6 short TNTs, none above 6 outcomes",
  },
  errata: { value: erratumNames(0x3d), evidence: "libipt's pt_cpu_errata for 6/0x3d, 0x47, 0x4f, 0x56" },
};

/** Skylake and its client derivatives (06_4E, 06_5E, 06_8E, 06_9E, ...) and Skylake-SP (06_55). */
export const SKYLAKE_PROFILE: CpuProfile = {
  name: "Skylake",
  fupIp: {
    value: "none",
    evidence:
      "HASE Skylake (6/94/3): loopy 1/1, control_flow 2/2 FUPs 6-byte (the first right after a TIP.PGE " +
      "with the same IP); quipper (6/78/3) 293/293; DynamoRIO hello (Skylake-SP) 20/20",
  },
  tipIp: {
    value: "shortest",
    evidence:
      "HASE Skylake loopy: 7/8 TIP.PGE 2-byte (the 8th first after PSB); quipper TIPs 13,289 2-byte, " +
      "9,264 4-byte, 1,364 6-byte; DynamoRIO hello TIP.PGE 2- and 4-byte",
  },
  psbOrder: {
    value: ["mode-tsx", "mode-exec-fup", "pip", "vmcs", "timing"],
    evidence:
      "quipper (6/78/3): PSB, MODE.TSX, MODE.Exec, FUP, PIP, TSC, TMA, CBR, PSBEND; HASE Skylake and " +
      "DynamoRIO hello: TSC, TMA, CBR last; VMCS unobserved, put after PIP",
  },
  enablePsb: {
    value: "byte-count",
    evidence:
      "HASE Skylake loopy: 10 enables, 1 PSB+ (the first, after Linux cleared PacketByteCnt), 9 TSC, TMA, CBR",
  },
  filteredPsb: {
    value: "bdm70",
    evidence:
      "libipt lists BDM70 for every Skylake model; HASE Skylake loopy's one filtered-out PSB+ was " +
      "followed by MTCs, not a TIP.PGE, and carries neither MODE.Exec nor FUP (as the model writes it)",
  },
  cycCompound: {
    value: "after-fup",
    evidence:
      "DynamoRIO hello (Skylake-SP, CYC on): 0/19 interrupt FUPs preceded by a CYC, 19/19 of their " +
      "TIP.PGDs (30/30 TIP.PGDs in all) preceded by one",
  },
  tnt: {
    value: 6,
    evidence:
      "HASE Skylake control_flow: runs of outcomes as 6-outcome short TNTs, no long TNT; DynamoRIO " +
      "hello 2,810 TNTs, quipper (6/78/3) 138,986: all short",
  },
  errata: {
    value: erratumNames(0x5e),
    evidence: "libipt's pt_cpu_errata for 6/0x4e, 0x5e, 0x8e, 0x9e, 0xa5, 0xa6",
  },
};

/**
 * A generation no capture was at hand for: the SDM defaults, BDM70 where libipt
 * lists it for `model` (family 6, hex), libipt's errata for `model`.
 */
export function uncapturedProfile(name: string, model: number, models: string): CpuProfile {
  const errata = erratumNames(model);
  const bdm70 = errata.includes("bdm70");
  return {
    ...SDM_PROFILE,
    name,
    fupIp: {
      value: "shortest",
      evidence: `${SDM.ip} (Broadwell and Skylake never compress FUPs: unconfirmed here)`,
    },
    filteredPsb: {
      value: bdm70 ? "bdm70" : "sdm",
      evidence: bdm70
        ? `libipt lists BDM70 for ${models}; no capture of this core at hand`
        : `libipt lists no BDM70 for ${models}: the SDM's PSB+`,
    },
    errata: { value: errata, evidence: `libipt's pt_cpu_errata for ${models}` },
  };
}

/** A current core: Golden Cove (Alder Lake P-cores 06_97/06_9A, Sapphire Rapids 06_8F). */
export const GOLDEN_COVE_PROFILE = uncapturedProfile(
  "Golden Cove (Alder Lake P-core, Sapphire Rapids)",
  0x97,
  "6/0x97, 0x9a, 0x8f",
);
export const GOLDMONT_PROFILE = uncapturedProfile("Goldmont", 0x5c, "6/0x5c, 0x5f");
export const SUNNY_COVE_PROFILE = uncapturedProfile(
  "Sunny/Willow Cove (Ice Lake, Tiger Lake client)",
  0x7e,
  "6/0x7e, 0x8c, 0x8d",
);

/** Skylake-SP (06_55): Skylake's behaviour (DynamoRIO hello is this core), its own errata. */
export const SKYLAKE_SP_PROFILE: CpuProfile = {
  ...SKYLAKE_PROFILE,
  name: "Skylake-SP",
  errata: { value: erratumNames(0x55), evidence: "libipt's pt_cpu_errata for 6/0x55" },
};
