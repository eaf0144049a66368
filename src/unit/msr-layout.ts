/**
 * Addresses and bit layouts of the architectural Intel PT MSRs (SDM Vol. 3C, "Enabling
 * and Configuration MSRs": §33.2.8 in current editions, §36.2.7 in older ones; the
 * tables are named "IA32_RTIT_CTL MSR", "IA32_RTIT_STATUS MSR", ...).
 *
 * These are the layouts only. Which bits a given processor accepts depends on CPUID
 * leaf 14H and is decided by the register file (msr-file.ts).
 */
import type { BitField } from "./bits.js";

/** MSR addresses. */
export const Msr = {
  OutputBase: 0x560,
  OutputMaskPtrs: 0x561,
  Ctl: 0x570,
  Status: 0x571,
  Cr3Match: 0x572,
  /** IA32_RTIT_ADDRn_A is 0x580 + 2n, IA32_RTIT_ADDRn_B is 0x581 + 2n (n = 0..3). */
  Addr0A: 0x580,
  Addr0B: 0x581,
  Addr1A: 0x582,
  Addr1B: 0x583,
  Addr2A: 0x584,
  Addr2B: 0x585,
  Addr3A: 0x586,
  Addr3B: 0x587,
} as const;
export type Msr = (typeof Msr)[keyof typeof Msr];

/** The highest n of IA32_RTIT_ADDRn_A/B that IA32_RTIT_CTL has an ADDRn_CFG field for. */
export const MAX_ADDR_RANGES = 4;

export type MsrName =
  | "IA32_RTIT_CTL"
  | "IA32_RTIT_STATUS"
  | "IA32_RTIT_CR3_MATCH"
  | "IA32_RTIT_OUTPUT_BASE"
  | "IA32_RTIT_OUTPUT_MASK_PTRS"
  | `IA32_RTIT_ADDR${0 | 1 | 2 | 3}_${"A" | "B"}`;

/** The SDM name of an Intel PT MSR address, or undefined for any other address. */
export function msrName(address: number): MsrName | undefined {
  switch (address) {
    case Msr.Ctl:
      return "IA32_RTIT_CTL";
    case Msr.Status:
      return "IA32_RTIT_STATUS";
    case Msr.Cr3Match:
      return "IA32_RTIT_CR3_MATCH";
    case Msr.OutputBase:
      return "IA32_RTIT_OUTPUT_BASE";
    case Msr.OutputMaskPtrs:
      return "IA32_RTIT_OUTPUT_MASK_PTRS";
  }
  const i = address - Msr.Addr0A;
  if (i >= 0 && i < 2 * MAX_ADDR_RANGES) {
    return `IA32_RTIT_ADDR${(i >> 1) as 0 | 1 | 2 | 3}_${i & 1 ? "B" : "A"}`;
  }
  return undefined;
}

/** Every Intel PT MSR address, in address order. */
export const ALL_MSRS: readonly number[] = [
  Msr.OutputBase,
  Msr.OutputMaskPtrs,
  Msr.Ctl,
  Msr.Status,
  Msr.Cr3Match,
  Msr.Addr0A,
  Msr.Addr0B,
  Msr.Addr1A,
  Msr.Addr1B,
  Msr.Addr2A,
  Msr.Addr2B,
  Msr.Addr3A,
  Msr.Addr3B,
];

const f = <K extends string>(key: K, name: string, lsb: number, width = 1): BitField<K> => ({
  key,
  name,
  lsb,
  width,
});

/** IA32_RTIT_CTL (570H). Bits 18, 23, 30:28, 54:48 and 63:57 are reserved. */
export const CTL = {
  TraceEn: f("traceEn", "TraceEn", 0),
  CYCEn: f("cycEn", "CYCEn", 1),
  OS: f("os", "OS", 2),
  User: f("user", "User", 3),
  PwrEvtEn: f("pwrEvtEn", "PwrEvtEn", 4),
  FUPonPTW: f("fupOnPtw", "FUPonPTW", 5),
  FabricEn: f("fabricEn", "FabricEn", 6),
  CR3Filter: f("cr3Filter", "CR3Filter", 7),
  ToPA: f("toPA", "ToPA", 8),
  MTCEn: f("mtcEn", "MTCEn", 9),
  TSCEn: f("tscEn", "TSCEn", 10),
  DisRETC: f("disRetc", "DisRETC", 11),
  PTWEn: f("ptwEn", "PTWEn", 12),
  BranchEn: f("branchEn", "BranchEn", 13),
  MTCFreq: f("mtcFreq", "MTCFreq", 14, 4),
  CycThresh: f("cycThresh", "CycThresh", 19, 4),
  PSBFreq: f("psbFreq", "PSBFreq", 24, 4),
  /** Event Trace enable (CPUID.14H.0:EBX[7]); newer SDM editions. */
  EventEn: f("eventEn", "EventEn", 31),
  ADDR0_CFG: f("addr0Cfg", "ADDR0_CFG", 32, 4),
  ADDR1_CFG: f("addr1Cfg", "ADDR1_CFG", 36, 4),
  ADDR2_CFG: f("addr2Cfg", "ADDR2_CFG", 40, 4),
  ADDR3_CFG: f("addr3Cfg", "ADDR3_CFG", 44, 4),
  /** TNT disable (CPUID.14H.0:EBX[8]); newer SDM editions. */
  DisTNT: f("disTnt", "DisTNT", 55),
  InjectPsbPmiOnEnable: f("injectPsbPmiOnEnable", "InjectPsbPmiOnEnable", 56),
} as const;

/** The ADDRn_CFG fields, indexed by n. */
export const CTL_ADDR_CFG = [CTL.ADDR0_CFG, CTL.ADDR1_CFG, CTL.ADDR2_CFG, CTL.ADDR3_CFG] as const;

/** ADDRn_CFG encodings (3..15 are reserved). */
export const AddrCfg = { Unused: 0, Filter: 1, TraceStop: 2 } as const;

/** IA32_RTIT_STATUS (571H). Bits 3, 31:8 and 63:49 are reserved. */
export const STATUS = {
  FilterEn: f("filterEn", "FilterEn", 0),
  ContextEn: f("contextEn", "ContextEn", 1),
  TriggerEn: f("triggerEn", "TriggerEn", 2),
  Error: f("error", "Error", 4),
  Stopped: f("stopped", "Stopped", 5),
  PendPSB: f("pendPsb", "PendPSB", 6),
  PendTopaPMI: f("pendTopaPmi", "PendTopaPMI", 7),
  PacketByteCnt: f("packetByteCnt", "PacketByteCnt", 32, 17),
} as const;

/** IA32_RTIT_OUTPUT_MASK_PTRS (561H): every bit is defined. */
export const MASK_PTRS = {
  /** Bits 6:0, forced to 1 (reads 7FH, writes ignored). */
  LowerMask: f("lowerMask", "LowerMask", 0, 7),
  /** Bits 31:7: the single-range mask, or ToPA's proc_trace_table_offset[27:3]. */
  MaskOrTableOffset: f("maskOrTableOffset", "MaskOrTableOffset", 7, 25),
  /** Bits 63:32: offset into the current output region. */
  OutputOffset: f("outputOffset", "OutputOffset", 32, 32),
} as const;

/** Field tables in bit order, for generic code and tests. */
export const CTL_FIELDS: readonly BitField[] = Object.values(CTL);
export const STATUS_FIELDS: readonly BitField[] = Object.values(STATUS);
export const MASK_PTRS_FIELDS: readonly BitField[] = Object.values(MASK_PTRS);

/** IA32_RTIT_CR3_MATCH bits 4:0 are reserved; 63:5 hold CR3[63:5]. */
export const CR3_MATCH_RESERVED_LO = 0x1f;
/** IA32_RTIT_OUTPUT_BASE bits 6:0 are reserved (and 63:MAXPHYADDR). */
export const OUTPUT_BASE_RESERVED_LO = 0x7f;
/** IA32_RTIT_OUTPUT_MASK_PTRS reads 7FH in bits 6:0. */
export const MASK_PTRS_LOWER_ONES = 0x7f;
