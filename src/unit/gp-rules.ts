/**
 * The WRMSR/RDMSR #GP rules of the Intel PT MSRs, one entry per rule, each with the SDM
 * statement it comes from. The register file (msr-file.ts) applies them; a rejected
 * write reports the rule's number in {@link MsrFault.rule}.
 *
 * Section numbers are those of current SDM editions (Intel PT is chapter 33 of Vol. 3C;
 * editions before 2023 number it 36, e.g. §36.2.7.2 for §33.2.8.2). Quotes are brief.
 */

export const GpRule = {
  /** The address is not an Intel PT MSR (the model handles no other MSR). */
  NotPtMsr: 1,
  /** RDMSR/WRMSR of an Intel PT MSR the processor does not enumerate. */
  MsrNotSupported: 2,
  CtlReserved: 3,
  CtlWhileTracing: 4,
  CtlCycEn: 5,
  CtlPwrEvtEn: 6,
  CtlFupOnPtw: 7,
  CtlFabricEn: 8,
  CtlCr3Filter: 9,
  CtlToPA: 10,
  CtlMtcEn: 11,
  CtlPtwEn: 12,
  CtlEventEn: 13,
  CtlDisTnt: 14,
  CtlInjectPsbPmiOnEnable: 15,
  CtlMtcFreqReserved: 16,
  CtlMtcFreqEncoding: 17,
  CtlCycThreshReserved: 18,
  CtlCycThreshEncoding: 19,
  CtlPsbFreqReserved: 20,
  CtlPsbFreqEncoding: 21,
  CtlAddrCfgRange: 22,
  CtlAddrCfgEncoding: 23,
  CtlSingleRange: 24,
  CtlBranchEn: 25,
  StatusReserved: 26,
  StatusWhileTracing: 27,
  StatusPacketByteCnt: 28,
  StatusPend: 29,
  Cr3MatchReserved: 30,
  Cr3MatchWhileTracing: 31,
  AddrWhileTracing: 32,
  AddrNonCanonical: 33,
  OutputBaseReserved: 34,
  OutputBaseMaxPhysAddr: 35,
  OutputWhileTracing: 36,
} as const;
export type GpRule = (typeof GpRule)[keyof typeof GpRule];

export interface GpRuleInfo {
  readonly rule: GpRule;
  /** MSR(s) the rule applies to. */
  readonly msr: string;
  /** Field(s) a rejection names. */
  readonly field: string;
  /** When it faults, in one line. */
  readonly when: string;
  /** The SDM statement, quoted briefly. */
  readonly sdm: string;
  /** Where in the SDM (or elsewhere). */
  readonly source: string;
  /** Set when the rule is an inference or a reading of an ambiguous or contradictory text. */
  readonly note?: string;
}

const CTL_TABLE = "Vol. 3C §33.2.8.2, Table IA32_RTIT_CTL MSR";
const CPUID_TABLE = "Vol. 3C §33.3.1, Table CPUID Leaf 14H Enumeration; Vol. 2A CPUID leaf 14H";
const CPUID1_TABLE = "Vol. 3C §33.3.1, Table CPUID Leaf 14H, sub-leaf 1H Enumeration";
const GENERAL = "Vol. 3C §33.2.8.1 General Considerations";

export const GP_RULES: readonly GpRuleInfo[] = [
  {
    rule: GpRule.NotPtMsr,
    msr: "(other)",
    field: "*",
    when: "the address is none of 560H, 561H, 570H-572H, 580H-587H",
    sdm: "(model boundary, not an SDM rule)",
    source: "ptkit",
  },
  {
    rule: GpRule.MsrNotSupported,
    msr: "IA32_RTIT_CR3_MATCH, IA32_RTIT_OUTPUT_*, IA32_RTIT_ADDRn_A/B",
    field: "*",
    when: "CR3_MATCH without EBX[0]; OUTPUT_* without ECX[0] or ECX[2]; ADDRn for n >= RANGECNT",
    sdm:
      "EBX[0]=0: 'any access to IA32_RTIT_CR3_MATCH, will #GP fault'; OUTPUT_MASK_PTRS: 'Accesses to this MSR " +
      "are supported only if ... CPUID.(EAX=14H, ECX=0):ECX[bit 0] or ... ECX[bit 2] are set. Otherwise " +
      "WRMSR or RDMSR cause a general-protection fault'; 'The number of these register pairs is enumerated " +
      "by CPUID.(EAX=14H, ECX=1):EAX.RANGECNT[2:0]'",
    source: `${CPUID_TABLE}; §33.2.8.5; §33.2.8.7; §33.2.8.8`,
  },
  {
    rule: GpRule.CtlReserved,
    msr: "IA32_RTIT_CTL",
    field: "Reserved",
    when: "bit 18, 23, 30:28, 54:48 or 63:57 set",
    sdm: "'any MSR write that attempts to change bits marked reserved, or utilize encodings marked reserved, will cause a #GP fault'",
    source: `${GENERAL}; ${CTL_TABLE}`,
  },
  {
    rule: GpRule.CtlWhileTracing,
    msr: "IA32_RTIT_CTL",
    field: "(the first field the write changes)",
    when: "TraceEn=1 before and after the write and the value changes",
    sdm:
      "'Any attempt to modify IA32_RTIT_CTL while TraceEn is set will result in a general-protection fault " +
      "(#GP) unless the same write also clears TraceEn'; 'Software may write the same value back to " +
      "IA32_RTIT_CTL without #GP, even if TraceEn=1'",
    source: "Vol. 3C §33.2.8.3 Other Writes to IA32_RTIT_CTL",
  },
  {
    rule: GpRule.CtlCycEn,
    msr: "IA32_RTIT_CTL",
    field: "CYCEn",
    when: "CYCEn=1 and CPUID.14H.0:EBX[1]=0",
    sdm: "EBX[1]=0: 'Any attempt to set IA32_RTIT_CTL.CYCEn will #GP fault'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.CtlPwrEvtEn,
    msr: "IA32_RTIT_CTL",
    field: "PwrEvtEn",
    when: "PwrEvtEn=1 and CPUID.14H.0:EBX[5]=0",
    sdm: "EBX[5]: 'If 1, indicates support of Power Event Trace. Writes can set IA32_RTIT_CTL[4] (PwrEvtEn)'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.CtlFupOnPtw,
    msr: "IA32_RTIT_CTL",
    field: "FUPonPTW",
    when: "FUPonPTW=1 and CPUID.14H.0:EBX[4]=0",
    sdm: "EBX[4]: 'Writes can set IA32_RTIT_CTL[12] (PTWEn) and IA32_RTIT_CTL[5] (FUPonPTW)'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.CtlFabricEn,
    msr: "IA32_RTIT_CTL",
    field: "FabricEn",
    when: "FabricEn=1 and CPUID.14H.0:ECX[3]=0",
    sdm: "ECX[3]=0: 'IA32_RTIT_CTL.FabricEn is reserved. Write 1 to IA32_RTIT_CTL.FabricEn will #GP fault'",
    source: CPUID_TABLE,
    note:
      "§33.2.7.3 'Trace Transport Subsystem' (and seed note 001) says FabricEn can be set if " +
      "CPUID.(EAX=14H,ECX=0):EBX[bit 3] = 1; the CPUID tables, Vol. 2A and Linux/KVM use ECX[3]; ECX[3] is used",
  },
  {
    rule: GpRule.CtlCr3Filter,
    msr: "IA32_RTIT_CTL",
    field: "CR3Filter",
    when: "CR3Filter=1 and CPUID.14H.0:EBX[0]=0",
    sdm: "EBX[0]=0: 'writes that set IA32_RTIT_CTL.CR3Filter to 1 ... will #GP fault'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.CtlToPA,
    msr: "IA32_RTIT_CTL",
    field: "ToPA",
    when: "ToPA=1 and CPUID.14H.0:ECX[0]=0",
    sdm: "'WRMSR to IA32_RTIT_CTL that sets this bit causes #GP, if CPUID.(EAX=14H, ECX=0):ECX.TOPA[bit 0] = 0'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlMtcEn,
    msr: "IA32_RTIT_CTL",
    field: "MTCEn",
    when: "MTCEn=1 and CPUID.14H.0:EBX[3]=0",
    sdm: "MTCEn: 'This bit is reserved if CPUID.(EAX=14H, ECX=0):EBX.MTC[bit 3] = 0'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlPtwEn,
    msr: "IA32_RTIT_CTL",
    field: "PTWEn",
    when: "PTWEn=1 and CPUID.14H.0:EBX[4]=0",
    sdm: "EBX[4]: 'Writes can set IA32_RTIT_CTL[12] (PTWEn)'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.CtlEventEn,
    msr: "IA32_RTIT_CTL",
    field: "EventEn",
    when: "EventEn (bit 31) =1 and CPUID.14H.0:EBX[7]=0",
    sdm: "EBX[7]: event trace support; IA32_RTIT_CTL[31] EventEn",
    source: `${CPUID_TABLE} (editions with Event Trace)`,
    note: "bit 31 is listed as reserved in editions before Event Trace; the brief's field list omits it",
  },
  {
    rule: GpRule.CtlDisTnt,
    msr: "IA32_RTIT_CTL",
    field: "DisTNT",
    when: "DisTNT (bit 55) =1 and CPUID.14H.0:EBX[8]=0",
    sdm: "EBX[8]: TNT disable support; IA32_RTIT_CTL[55] DisTNT",
    source: `${CPUID_TABLE} (editions with TNT disable)`,
    note: "bit 55 is reserved in older editions; the brief's field list omits it",
  },
  {
    rule: GpRule.CtlInjectPsbPmiOnEnable,
    msr: "IA32_RTIT_CTL",
    field: "InjectPsbPmiOnEnable",
    when: "InjectPsbPmiOnEnable (bit 56) =1 and CPUID.14H.0:EBX[6]=0",
    sdm:
      "'PMI preservation ... is indicated by CPUID.(EAX=14H, ECX=0):EBX[bit 6]'; 'When " +
      "IA32_RTIT_CTL.InjectPsbPmiOnEnable[56] = 1, PMI preservation is enabled'",
    source: "Vol. 3C §33.2.7.2 PMI Preservation (seed note 001)",
    note: "the bit is reserved (hence #GP) where the feature is not enumerated: inferred from the general reserved-bit rule",
  },
  {
    rule: GpRule.CtlMtcFreqReserved,
    msr: "IA32_RTIT_CTL",
    field: "MTCFreq",
    when: "MTCFreq != 0 and CPUID.14H.0:EBX[3]=0",
    sdm: "'This field is reserved if CPUID.(EAX=14H, ECX=0):EBX.MTC[bit 3] = 0'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlMtcFreqEncoding,
    msr: "IA32_RTIT_CTL",
    field: "MTCFreq",
    when: "bit MTCFreq of CPUID.14H.1:EAX[31:16] is 0",
    sdm: "'A write to IA32_RTIT_CTL.MTCFreq with unsupported encoding will cause #GP fault'",
    source: CPUID1_TABLE,
  },
  {
    rule: GpRule.CtlCycThreshReserved,
    msr: "IA32_RTIT_CTL",
    field: "CycThresh",
    when: "CycThresh != 0 and CPUID.14H.0:EBX[1]=0",
    sdm: "'otherwise the CycThresh field is reserved to 0'",
    source: CPUID1_TABLE,
  },
  {
    rule: GpRule.CtlCycThreshEncoding,
    msr: "IA32_RTIT_CTL",
    field: "CycThresh",
    when: "bit CycThresh of CPUID.14H.1:EBX[15:0] is 0",
    sdm: "'0: CycThresh cannot be assigned to the associated encoding value. A write to CycThresh with unsupported encoding will cause #GP fault'",
    source: CPUID1_TABLE,
  },
  {
    rule: GpRule.CtlPsbFreqReserved,
    msr: "IA32_RTIT_CTL",
    field: "PSBFreq",
    when: "PSBFreq != 0 and CPUID.14H.0:EBX[1]=0",
    sdm: "'This field is reserved if CPUID.(EAX=14H, ECX=0):EBX.CPSB_CAM[bit 1] = 0'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlPsbFreqEncoding,
    msr: "IA32_RTIT_CTL",
    field: "PSBFreq",
    when: "bit PSBFreq of CPUID.14H.1:EBX[31:16] is 0",
    sdm: "'Software must use CPUID to query the supported encodings ... Use of unsupported encodings will result in a #GP fault'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlAddrCfgRange,
    msr: "IA32_RTIT_CTL",
    field: "ADDRn_CFG",
    when: "ADDRn_CFG != 0 for n >= RANGECNT (or IP filtering not enumerated)",
    sdm: "ADDR0_CFG: 'This field is reserved if CPUID.(EAX=14H, ECX=1):EBX.RANGECNT[2:0] >= 0'",
    source: CTL_TABLE,
    note:
      "the SDM text names EBX and '>= 0' (which would reserve the field everywhere); read as " +
      "'CPUID.(EAX=14H, ECX=1):EAX.RANGECNT[2:0] < n+1', as the RANGECNT enumeration and KVM have it",
  },
  {
    rule: GpRule.CtlAddrCfgEncoding,
    msr: "IA32_RTIT_CTL",
    field: "ADDRn_CFG",
    when: "ADDRn_CFG in 3..15",
    sdm: "'3..15: Reserved (#GP)'; EBX[2]: 'Each ADDRn_CFG field accepts a value in the range of 0:2 inclusive'",
    source: `${CTL_TABLE}; ${CPUID_TABLE}`,
  },
  {
    rule: GpRule.CtlSingleRange,
    msr: "IA32_RTIT_CTL",
    field: "ToPA",
    when: "TraceEn=1, ToPA=0, FabricEn=0 and CPUID.14H.0:ECX[2]=0",
    sdm:
      "'WRMSR to IA32_RTIT_CTL that sets TraceEn but clears this bit and FabricEn would cause #GP, if " +
      "CPUID.(EAX=14H, ECX=0):ECX.SNGLRGNOUT[bit 2] = 0'",
    source: CTL_TABLE,
  },
  {
    rule: GpRule.CtlBranchEn,
    msr: "IA32_RTIT_CTL",
    field: "BranchEn",
    when: "TraceEn=1, BranchEn=0 and CPUID.14H.0:EBX[3]=0",
    sdm: "EBX[3]: 'If 1, indicates support of MTC timing packet and suppression of COFI-based packets'",
    source: "Vol. 2A CPUID leaf 14H; Broadwell erratum BDM106 ('not setting BRANCH_EN will #GP', Linux pt.c)",
    note:
      "Vol. 3C's CPUID table mentions only MTC for EBX[3] and KVM treats BranchEn as always writable; the " +
      "only PT parts with EBX[3]=0 are Broadwell, where BDM106 makes TraceEn=1 with BranchEn=0 #GP. " +
      "TNT disable (EBX[8]) governs DisTNT, not BranchEn",
  },
  {
    rule: GpRule.StatusReserved,
    msr: "IA32_RTIT_STATUS",
    field: "Reserved",
    when: "bit 3, 31:8 or 63:49 set",
    sdm: "bit 3: 'Reserved ... Must be 0'; reserved bits #GP per the general rule",
    source: `Vol. 3C §33.2.8.4, Table IA32_RTIT_STATUS MSR; ${GENERAL}`,
  },
  {
    rule: GpRule.StatusWhileTracing,
    msr: "IA32_RTIT_STATUS",
    field: "(the first field the write changes, else *)",
    when: "any write while IA32_RTIT_CTL.TraceEn=1",
    sdm: "Error/Stopped: 'When TraceEn is cleared, software can write this bit'",
    source:
      "Vol. 3C §33.2.8.4; seed note 002 ('在改变 MSRs 之前, 一定要先 clear IA32_RTIT_CTL.TraceEn, 不然也会 #GP')",
    note: "the SDM states write permission for TraceEn=0; #GP on any write with TraceEn=1 is how KVM reads it",
  },
  {
    rule: GpRule.StatusPacketByteCnt,
    msr: "IA32_RTIT_STATUS",
    field: "PacketByteCnt",
    when: "PacketByteCnt != 0 and CPUID.14H.0:EBX[1]=0",
    sdm: "EBX[1]=0: 'Any attempt to ... write a non-zero value to IA32_RTIT_STATUS.PacketByteCnt ... will #GP fault'",
    source: CPUID_TABLE,
  },
  {
    rule: GpRule.StatusPend,
    msr: "IA32_RTIT_STATUS",
    field: "PendPSB / PendTopaPMI",
    when: "PendPSB or PendTopaPMI set and CPUID.14H.0:EBX[6]=0",
    sdm: "bits 6 and 7 exist with PSB and PMI preservation (CPUID.(EAX=14H, ECX=0):EBX[bit 6])",
    source: "Vol. 3C §33.2.8.4; §33.2.7.2 PMI Preservation",
    note: "reserved where the feature is not enumerated (older editions list 31:6 as reserved): inferred",
  },
  {
    rule: GpRule.Cr3MatchReserved,
    msr: "IA32_RTIT_CR3_MATCH",
    field: "Reserved",
    when: "any of bits 4:0 set",
    sdm: "'IA32_RTIT_CR3_MATCH[4:0] are reserved and must be 0; an attempt to set those bits using WRMSR causes a #GP'",
    source: "Vol. 3C §33.2.8.6",
  },
  {
    rule: GpRule.Cr3MatchWhileTracing,
    msr: "IA32_RTIT_CR3_MATCH",
    field: "CR3",
    when: "write while IA32_RTIT_CTL.TraceEn=1",
    sdm: "'This MSR can be written only when IA32_RTIT_CTL.TraceEn is 0; otherwise WRMSR causes a general-protection fault (#GP)'",
    source: "Vol. 3C §33.2.8.6",
  },
  {
    rule: GpRule.AddrWhileTracing,
    msr: "IA32_RTIT_ADDRn_A/B",
    field: "VirtAddr",
    when: "write while IA32_RTIT_CTL.TraceEn=1",
    sdm: "seed note 002: 'before changing the MSRs TraceEn must be cleared, otherwise #GP'",
    source: `${GENERAL} (seed note 002)`,
  },
  {
    rule: GpRule.AddrNonCanonical,
    msr: "IA32_RTIT_ADDRn_A/B",
    field: "SignExt_VA",
    when: "bits 63:(linear width-1) not all equal",
    sdm: "'Writes must ensure that the address is properly sign-extended, otherwise a #GP fault will result'",
    source: "Vol. 3C §33.2.8.5",
    note: "the linear width is 48, or 57 where CPUID.80000008H:EAX[15:8] says so (LA57)",
  },
  {
    rule: GpRule.OutputBaseReserved,
    msr: "IA32_RTIT_OUTPUT_BASE",
    field: "Reserved",
    when: "any of bits 6:0 set",
    sdm: "'6:0 Reserved ... Must be 0'",
    source: "Vol. 3C §33.2.8.7, Table IA32_RTIT_OUTPUT_BASE MSR",
    note: "ToPA's 4K alignment (bits 11:7) is an operational error at enable, not a #GP: 'will not cause a #GP'",
  },
  {
    rule: GpRule.OutputBaseMaxPhysAddr,
    msr: "IA32_RTIT_OUTPUT_BASE",
    field: "Reserved",
    when: "any bit at or above MAXPHYADDR set",
    sdm: "'MAXPHYADDR-1:7 BasePhysAddr'; 'The size of the address field is determined by ... MAXPHYADDR'",
    source: "Vol. 3C §33.2.8.7",
  },
  {
    rule: GpRule.OutputWhileTracing,
    msr: "IA32_RTIT_OUTPUT_BASE, IA32_RTIT_OUTPUT_MASK_PTRS",
    field: "(the first field the write changes, else *)",
    when: "write while IA32_RTIT_CTL.TraceEn=1",
    sdm: "'If supported, this MSR can be written only when IA32_RTIT_CTL.TraceEn is 0; otherwise WRMSR causes a general-protection fault (#GP)'",
    source: "Vol. 3C §33.2.8.7, §33.2.8.8",
  },
];

/** The table entry of a rule. */
export function gpRuleInfo(rule: GpRule): GpRuleInfo {
  return GP_RULES[rule - 1]!;
}
