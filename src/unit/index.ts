/**
 * The trace unit's configuration: the Intel PT MSRs as typed values, the CPUID leaf 14H
 * capability model with presets for real processor generations, and a register file
 * that applies WRMSR with the SDM's #GP rules.
 */
export { type BitField, getField, type Halves, setField } from "./bits.js";
export {
  bitmapEncodings,
  CPUID14_DEFINED,
  type Cpuid14,
  type CpuidRegs,
  decodeCpuid14,
  effectiveAddressRanges,
  encodeAddressSizes,
  encodeCpuid14,
  type PtCapabilities,
} from "./capabilities.js";
export * from "./exec/index.js";
export * from "./gen/index.js";
export { GP_RULES, GpRule, type GpRuleInfo, gpRuleInfo } from "./gp-rules.js";
export {
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
  type RtitAddr,
  type RtitCr3Match,
  type RtitCtl,
  type RtitOutputBase,
  type RtitOutputMaskPtrs,
  type RtitStatus,
  STATUS_RESERVED,
  singleRangeMask,
  topaTableOffset,
} from "./msr.js";
export { type MsrFault, MsrFile, type ResetKind } from "./msr-file.js";
export {
  AddrCfg,
  ALL_MSRS,
  CTL,
  CTL_ADDR_CFG,
  CTL_FIELDS,
  MASK_PTRS,
  MASK_PTRS_FIELDS,
  MAX_ADDR_RANGES,
  Msr,
  type MsrName,
  msrName,
  STATUS,
  STATUS_FIELDS,
} from "./msr-layout.js";
export * from "./output/index.js";
export {
  PRESET_NAMES,
  PRESETS,
  type Preset,
  type PresetName,
  presetCapabilities,
  presetDefaultToPA,
  presetProfile,
} from "./presets.js";
export {
  type Behaviour,
  BROADWELL_PROFILE,
  type CpuProfile,
  type CycCompound,
  type EnablePsb,
  type FilteredPsb,
  GOLDEN_COVE_PROFILE,
  GOLDMONT_PROFILE,
  type IpCompression,
  type PsbGroup,
  SDM_PROFILE,
  SKYLAKE_PROFILE,
  SKYLAKE_SP_PROFILE,
  SUNNY_COVE_PROFILE,
  uncapturedProfile,
} from "./profiles.js";
