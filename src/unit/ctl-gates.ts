/**
 * The IA32_RTIT_CTL fields that CPUID leaf 14H gates: one-bit features that need a
 * CPUID bit, and encoded fields whose values need a bit in a sub-leaf 1 bitmap.
 */
import type { BitField } from "./bits.js";
import type { PtCapabilities } from "./capabilities.js";
import { GpRule } from "./gp-rules.js";
import { CTL } from "./msr-layout.js";

/** One-bit IA32_RTIT_CTL features and the CPUID bit that enumerates each. */
export interface FeatureGate {
  readonly field: BitField;
  readonly rule: GpRule;
  readonly cpuid: string;
  readonly what: string;
  readonly has: (c: PtCapabilities) => boolean;
}

export const FEATURE_GATES: readonly FeatureGate[] = [
  {
    field: CTL.CYCEn,
    rule: GpRule.CtlCycEn,
    cpuid: "CPUID.14H.0:EBX[1]",
    what: "configurable PSB and cycle-accurate mode",
    has: (c) => c.psbCyc,
  },
  {
    field: CTL.PwrEvtEn,
    rule: GpRule.CtlPwrEvtEn,
    cpuid: "CPUID.14H.0:EBX[5]",
    what: "power event trace",
    has: (c) => c.powerEventTrace,
  },
  {
    field: CTL.FUPonPTW,
    rule: GpRule.CtlFupOnPtw,
    cpuid: "CPUID.14H.0:EBX[4]",
    what: "PTWRITE",
    has: (c) => c.ptwrite,
  },
  {
    field: CTL.FabricEn,
    rule: GpRule.CtlFabricEn,
    cpuid: "CPUID.14H.0:ECX[3]",
    what: "output to the trace transport subsystem",
    has: (c) => c.traceTransportOutput,
  },
  {
    field: CTL.CR3Filter,
    rule: GpRule.CtlCr3Filter,
    cpuid: "CPUID.14H.0:EBX[0]",
    what: "CR3 filtering",
    has: (c) => c.cr3Filtering,
  },
  {
    field: CTL.ToPA,
    rule: GpRule.CtlToPA,
    cpuid: "CPUID.14H.0:ECX[0]",
    what: "ToPA output",
    has: (c) => c.topaOutput,
  },
  {
    field: CTL.MTCEn,
    rule: GpRule.CtlMtcEn,
    cpuid: "CPUID.14H.0:EBX[3]",
    what: "MTC packets",
    has: (c) => c.mtc,
  },
  {
    field: CTL.PTWEn,
    rule: GpRule.CtlPtwEn,
    cpuid: "CPUID.14H.0:EBX[4]",
    what: "PTWRITE",
    has: (c) => c.ptwrite,
  },
  {
    field: CTL.EventEn,
    rule: GpRule.CtlEventEn,
    cpuid: "CPUID.14H.0:EBX[7]",
    what: "event trace",
    has: (c) => c.eventTrace,
  },
  {
    field: CTL.DisTNT,
    rule: GpRule.CtlDisTnt,
    cpuid: "CPUID.14H.0:EBX[8]",
    what: "TNT disable",
    has: (c) => c.tntDisable,
  },
  {
    field: CTL.InjectPsbPmiOnEnable,
    rule: GpRule.CtlInjectPsbPmiOnEnable,
    cpuid: "CPUID.14H.0:EBX[6]",
    what: "PSB and PMI preservation",
    has: (c) => c.psbPmiPreservation,
  },
];

/** Encoded fields checked against a CPUID bitmap. */
export interface EncodingGate {
  readonly field: BitField;
  readonly reservedRule: GpRule;
  readonly encodingRule: GpRule;
  readonly feature: string;
  readonly has: (c: PtCapabilities) => boolean;
  readonly bitmapName: string;
  readonly bitmap: (c: PtCapabilities) => number;
}

export const ENCODING_GATES: readonly EncodingGate[] = [
  {
    field: CTL.MTCFreq,
    reservedRule: GpRule.CtlMtcFreqReserved,
    encodingRule: GpRule.CtlMtcFreqEncoding,
    feature: "CPUID.14H.0:EBX[3] (MTC)",
    has: (c) => c.mtc,
    bitmapName: "CPUID.14H.1:EAX[31:16]",
    bitmap: (c) => c.mtcPeriods,
  },
  {
    field: CTL.CycThresh,
    reservedRule: GpRule.CtlCycThreshReserved,
    encodingRule: GpRule.CtlCycThreshEncoding,
    feature: "CPUID.14H.0:EBX[1] (cycle-accurate mode)",
    has: (c) => c.psbCyc,
    bitmapName: "CPUID.14H.1:EBX[15:0]",
    bitmap: (c) => c.cycThresholds,
  },
  {
    field: CTL.PSBFreq,
    reservedRule: GpRule.CtlPsbFreqReserved,
    encodingRule: GpRule.CtlPsbFreqEncoding,
    feature: "CPUID.14H.0:EBX[1] (configurable PSB)",
    has: (c) => c.psbCyc,
    bitmapName: "CPUID.14H.1:EBX[31:16]",
    bitmap: (c) => c.psbFrequencies,
  },
];
