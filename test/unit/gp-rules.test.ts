/**
 * The rule table: which #GP rule comes from which SDM statement. Each row names the rule,
 * the MSR and field a rejection reports, and a phrase of the statement that GP_RULES must
 * quote; the comment above each row quotes it briefly.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GP_RULES, GpRule, gpRuleInfo } from "../../src/unit/gp-rules.js";

type Row = [rule: GpRule, msr: string, field: string, phrase: string];

const TABLE: Row[] = [
  // Model boundary: only the PT MSRs are modelled.
  [GpRule.NotPtMsr, "(other)", "*", "not an SDM rule"],
  // CPUID table, EBX[0]=0: "any access to IA32_RTIT_CR3_MATCH, will #GP fault"; §33.2.8.8:
  // "Accesses to this MSR are supported only if ... ECX[bit 0] or ... ECX[bit 2] are set".
  [GpRule.MsrNotSupported, "IA32_RTIT_CR3_MATCH, IA32_RTIT_OUTPUT_*, IA32_RTIT_ADDRn_A/B", "*", "RANGECNT"],
  // §33.2.8.1: "any MSR write that attempts to change bits marked reserved ... will cause a #GP fault".
  [GpRule.CtlReserved, "IA32_RTIT_CTL", "Reserved", "change bits marked reserved"],
  // §33.2.8.3: "Any attempt to modify IA32_RTIT_CTL while TraceEn is set will result in a #GP
  // unless the same write also clears TraceEn"; "may write the same value back ... without #GP".
  [
    GpRule.CtlWhileTracing,
    "IA32_RTIT_CTL",
    "(the first field the write changes)",
    "unless the same write also clears TraceEn",
  ],
  // EBX[1]=0: "Any attempt to set IA32_RTIT_CTL.CYCEn will #GP fault".
  [GpRule.CtlCycEn, "IA32_RTIT_CTL", "CYCEn", "CYCEn will #GP"],
  // EBX[5]: "Writes can set IA32_RTIT_CTL[4] (PwrEvtEn)".
  [GpRule.CtlPwrEvtEn, "IA32_RTIT_CTL", "PwrEvtEn", "IA32_RTIT_CTL[4] (PwrEvtEn)"],
  // EBX[4]: "Writes can set IA32_RTIT_CTL[12] (PTWEn) and IA32_RTIT_CTL[5] (FUPonPTW)".
  [GpRule.CtlFupOnPtw, "IA32_RTIT_CTL", "FUPonPTW", "IA32_RTIT_CTL[5] (FUPonPTW)"],
  // ECX[3]=0: "IA32_RTIT_CTL.FabricEn is reserved. Write 1 to IA32_RTIT_CTL.FabricEn will #GP fault".
  [GpRule.CtlFabricEn, "IA32_RTIT_CTL", "FabricEn", "FabricEn will #GP"],
  // EBX[0]=0: "writes that set IA32_RTIT_CTL.CR3Filter to 1 ... will #GP fault".
  [GpRule.CtlCr3Filter, "IA32_RTIT_CTL", "CR3Filter", "CR3Filter to 1"],
  // ToPA: "WRMSR to IA32_RTIT_CTL that sets this bit causes #GP, if ... ECX.TOPA[bit 0] = 0".
  [GpRule.CtlToPA, "IA32_RTIT_CTL", "ToPA", "TOPA[bit 0] = 0"],
  // MTCEn: "This bit is reserved if CPUID.(EAX=14H, ECX=0):EBX.MTC[bit 3] = 0".
  [GpRule.CtlMtcEn, "IA32_RTIT_CTL", "MTCEn", "EBX.MTC[bit 3] = 0"],
  // EBX[4]: "Writes can set IA32_RTIT_CTL[12] (PTWEn)".
  [GpRule.CtlPtwEn, "IA32_RTIT_CTL", "PTWEn", "IA32_RTIT_CTL[12] (PTWEn)"],
  // EBX[7] event trace; CTL[31] EventEn (editions with Event Trace).
  [GpRule.CtlEventEn, "IA32_RTIT_CTL", "EventEn", "EventEn"],
  // EBX[8] TNT disable; CTL[55] DisTNT (editions with TNT disable).
  [GpRule.CtlDisTnt, "IA32_RTIT_CTL", "DisTNT", "DisTNT"],
  // PMI preservation: "indicated by CPUID.(EAX=14H, ECX=0):EBX[bit 6]"; "InjectPsbPmiOnEnable[56] = 1".
  [GpRule.CtlInjectPsbPmiOnEnable, "IA32_RTIT_CTL", "InjectPsbPmiOnEnable", "EBX[bit 6]"],
  // MTCFreq: "This field is reserved if CPUID.(EAX=14H, ECX=0):EBX.MTC[bit 3] = 0".
  [GpRule.CtlMtcFreqReserved, "IA32_RTIT_CTL", "MTCFreq", "reserved if"],
  // Sub-leaf 1 EAX[31:16]: "A write to IA32_RTIT_CTL.MTCFreq with unsupported encoding will cause #GP fault".
  [GpRule.CtlMtcFreqEncoding, "IA32_RTIT_CTL", "MTCFreq", "unsupported encoding will cause #GP"],
  // Sub-leaf 1 EBX[15:0]: "otherwise the CycThresh field is reserved to 0".
  [GpRule.CtlCycThreshReserved, "IA32_RTIT_CTL", "CycThresh", "reserved to 0"],
  // Sub-leaf 1 EBX[15:0]: "A write to CycThresh with unsupported encoding will cause #GP fault".
  [GpRule.CtlCycThreshEncoding, "IA32_RTIT_CTL", "CycThresh", "unsupported encoding will cause #GP"],
  // PSBFreq: "This field is reserved if CPUID.(EAX=14H, ECX=0):EBX.CPSB_CAM[bit 1] = 0".
  [GpRule.CtlPsbFreqReserved, "IA32_RTIT_CTL", "PSBFreq", "CPSB_CAM[bit 1] = 0"],
  // PSBFreq: "Use of unsupported encodings will result in a #GP fault".
  [GpRule.CtlPsbFreqEncoding, "IA32_RTIT_CTL", "PSBFreq", "unsupported encodings will result in a #GP"],
  // ADDRn_CFG: "This field is reserved if ... RANGECNT ..." (number of ranges from sub-leaf 1 EAX[2:0]).
  [GpRule.CtlAddrCfgRange, "IA32_RTIT_CTL", "ADDRn_CFG", "RANGECNT"],
  // ADDRn_CFG: "3..15: Reserved (#GP)".
  [GpRule.CtlAddrCfgEncoding, "IA32_RTIT_CTL", "ADDRn_CFG", "3..15: Reserved (#GP)"],
  // ToPA: "WRMSR to IA32_RTIT_CTL that sets TraceEn but clears this bit and FabricEn would cause
  // #GP, if ... ECX.SNGLRGNOUT[bit 2] = 0".
  [GpRule.CtlSingleRange, "IA32_RTIT_CTL", "ToPA", "SNGLRGNOUT[bit 2] = 0"],
  // Vol. 2A EBX[3]: "support of MTC timing packet and suppression of COFI-based packets";
  // Broadwell erratum BDM106.
  [GpRule.CtlBranchEn, "IA32_RTIT_CTL", "BranchEn", "suppression of COFI-based packets"],
  // STATUS bit 3: "Reserved ... Must be 0".
  [GpRule.StatusReserved, "IA32_RTIT_STATUS", "Reserved", "Must be 0"],
  // Error/Stopped: "When TraceEn is cleared, software can write this bit".
  [
    GpRule.StatusWhileTracing,
    "IA32_RTIT_STATUS",
    "(the first field the write changes, else *)",
    "When TraceEn is cleared",
  ],
  // EBX[1]=0: "Any attempt to ... write a non-zero value to IA32_RTIT_STATUS.PacketByteCnt ... will #GP fault".
  [
    GpRule.StatusPacketByteCnt,
    "IA32_RTIT_STATUS",
    "PacketByteCnt",
    "non-zero value to IA32_RTIT_STATUS.PacketByteCnt",
  ],
  // PendPSB/PendTopaPMI exist with PSB and PMI preservation (EBX[6]).
  [GpRule.StatusPend, "IA32_RTIT_STATUS", "PendPSB / PendTopaPMI", "EBX[bit 6]"],
  // §33.2.8.6: "IA32_RTIT_CR3_MATCH[4:0] are reserved and must be 0; an attempt to set those bits
  // using WRMSR causes a #GP".
  [GpRule.Cr3MatchReserved, "IA32_RTIT_CR3_MATCH", "Reserved", "[4:0] are reserved and must be 0"],
  // §33.2.8.6: "This MSR can be written only when IA32_RTIT_CTL.TraceEn is 0".
  [GpRule.Cr3MatchWhileTracing, "IA32_RTIT_CR3_MATCH", "CR3", "written only when IA32_RTIT_CTL.TraceEn is 0"],
  // §33.2.8.1 (seed note 002): MSRs are changed only after clearing TraceEn, else #GP.
  [GpRule.AddrWhileTracing, "IA32_RTIT_ADDRn_A/B", "VirtAddr", "TraceEn must be cleared"],
  // §33.2.8.5: "Writes must ensure that the address is properly sign-extended, otherwise a #GP fault will result".
  [GpRule.AddrNonCanonical, "IA32_RTIT_ADDRn_A/B", "SignExt_VA", "properly sign-extended"],
  // OUTPUT_BASE: "6:0 Reserved ... Must be 0".
  [GpRule.OutputBaseReserved, "IA32_RTIT_OUTPUT_BASE", "Reserved", "6:0 Reserved"],
  // OUTPUT_BASE: "MAXPHYADDR-1:7 BasePhysAddr".
  [GpRule.OutputBaseMaxPhysAddr, "IA32_RTIT_OUTPUT_BASE", "Reserved", "MAXPHYADDR-1:7 BasePhysAddr"],
  // §33.2.8.7/8: "this MSR can be written only when IA32_RTIT_CTL.TraceEn is 0; otherwise WRMSR causes a #GP".
  [
    GpRule.OutputWhileTracing,
    "IA32_RTIT_OUTPUT_BASE, IA32_RTIT_OUTPUT_MASK_PTRS",
    "(the first field the write changes, else *)",
    "written only when IA32_RTIT_CTL.TraceEn is 0",
  ],
];

describe("#GP rule table", () => {
  it("has one entry per rule, numbered in order", () => {
    assert.deepEqual(
      GP_RULES.map((r) => r.rule),
      Object.values(GpRule),
    );
    for (const r of GP_RULES) assert.equal(gpRuleInfo(r.rule), r);
  });

  it("lists, for each rule, the MSR, the field and the SDM statement it comes from", () => {
    assert.equal(TABLE.length, GP_RULES.length);
    for (const [rule, msr, field, phrase] of TABLE) {
      const info = gpRuleInfo(rule);
      assert.equal(info.msr, msr, `rule ${rule}`);
      assert.equal(info.field, field, `rule ${rule}`);
      const text = `${info.sdm} ${info.source}`;
      assert.ok(
        text.toLowerCase().includes(phrase.toLowerCase()),
        `rule ${rule}: '${phrase}' not in ${text}`,
      );
      assert.ok(info.when.length > 0 && info.source.length > 0);
    }
  });

  it("marks the rules that rest on an inference or on contradicting texts", () => {
    const noted = GP_RULES.filter((r) => r.note).map((r) => r.rule);
    assert.deepEqual(noted, [
      GpRule.CtlFabricEn,
      GpRule.CtlEventEn,
      GpRule.CtlDisTnt,
      GpRule.CtlInjectPsbPmiOnEnable,
      GpRule.CtlAddrCfgRange,
      GpRule.CtlBranchEn,
      GpRule.StatusWhileTracing,
      GpRule.StatusPend,
      GpRule.AddrNonCanonical,
      GpRule.OutputBaseReserved,
    ]);
  });
});
