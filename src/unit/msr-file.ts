/**
 * The Intel PT MSRs of one logical processor, with WRMSR and RDMSR as the SDM defines
 * them for a processor with the given CPUID leaf 14H capabilities.
 *
 * A write the SDM rejects with #GP leaves the registers unchanged and returns an
 * {@link MsrFault} naming the MSR, the field and the rule (gp-rules.ts); an accepted
 * write returns null. Nothing here throws or allocates on the success path: values
 * travel as unsigned 32-bit halves and a fault object is made only when a write fails.
 * `writeMsr`/`readMsr` are the BigInt API edge.
 */
import { splitBigInt, toBigInt } from "../base/halves.js";
import { type BitField, bitRanges, getField, type Halves, hex, setBits } from "./bits.js";
import { effectiveAddressRanges, type PtCapabilities } from "./capabilities.js";
import { ENCODING_GATES, FEATURE_GATES } from "./ctl-gates.js";
import { GpRule } from "./gp-rules.js";
import { CTL_RESERVED, isCanonical, physAddrReservedHi, STATUS_RESERVED } from "./msr.js";
import {
  CR3_MATCH_RESERVED_LO,
  CTL,
  CTL_ADDR_CFG,
  CTL_FIELDS,
  MASK_PTRS,
  MASK_PTRS_LOWER_ONES,
  Msr,
  type MsrName,
  msrName,
  OUTPUT_BASE_RESERVED_LO,
  STATUS,
} from "./msr-layout.js";

/** A WRMSR or RDMSR that faults (#GP). */
export interface MsrFault {
  readonly address: number;
  readonly msr: MsrName | "(not an Intel PT MSR)";
  /** The SDM name of the offending field ("MTCFreq", "Reserved", "*" for the whole MSR). */
  readonly field: string;
  readonly rule: GpRule;
  readonly reason: string;
}

/** STATUS fields software writes (FilterEn, ContextEn and TriggerEn: "Writes are ignored"). */
const STATUS_WRITABLE = [
  STATUS.Error,
  STATUS.Stopped,
  STATUS.PendPSB,
  STATUS.PendTopaPMI,
  STATUS.PacketByteCnt,
];
const STATUS_PEND = [STATUS.PendPSB, STATUS.PendTopaPMI];
const STATUS_PROCESSOR_OWNED_LO = 0x7; // FilterEn | ContextEn | TriggerEn
const MASK_PTRS_WRITABLE = [MASK_PTRS.MaskOrTableOffset, MASK_PTRS.OutputOffset];

const TRACE_EN = 1;
const BRANCH_EN = 1 << CTL.BranchEn.lsb;
const TOPA = 1 << CTL.ToPA.lsb;
const FABRIC_EN = 1 << CTL.FabricEn.lsb;

export type ResetKind = "cold" | "warm";

export class MsrFile {
  readonly caps: PtCapabilities;
  /** ADDRn_CFG fields and ADDRn_A/B pairs this processor has (0..4). */
  readonly addressRanges: number;
  /** Whether IA32_RTIT_OUTPUT_BASE/MASK_PTRS exist (ToPA or single-range output). */
  readonly outputToMemory: boolean;

  ctlHi = 0;
  ctlLo = 0;
  statusHi = 0;
  statusLo = 0;
  cr3MatchHi = 0;
  cr3MatchLo = 0;
  outputBaseHi = 0;
  outputBaseLo = 0;
  outputMaskHi = 0;
  outputMaskLo = MASK_PTRS_LOWER_ONES;
  /** ADDRn_A at [4n] (hi) and [4n+1] (lo), ADDRn_B at [4n+2] and [4n+3]. */
  readonly addr = new Uint32Array(16);

  private readonly outputBaseReservedHi: number;

  constructor(caps: PtCapabilities) {
    this.caps = caps;
    this.addressRanges = effectiveAddressRanges(caps);
    this.outputToMemory = caps.topaOutput || caps.singleRangeOutput;
    this.outputBaseReservedHi = physAddrReservedHi(caps.maxPhysAddr);
  }

  get traceEn(): boolean {
    return (this.ctlLo & TRACE_EN) !== 0;
  }

  /** WRMSR: store the value and return null, or leave everything as it was and return the #GP. */
  wrmsr(address: number, hi: number, lo: number): MsrFault | null {
    hi >>>= 0;
    lo >>>= 0;
    const fault = this.check(address, hi, lo);
    if (fault) return fault;
    switch (address) {
      case Msr.Ctl:
        this.ctlHi = hi;
        this.ctlLo = lo;
        break;
      case Msr.Status: {
        // FilterEn, ContextEn and TriggerEn: "Writes are ignored".
        this.statusHi = hi;
        this.statusLo =
          ((lo & ~STATUS_PROCESSOR_OWNED_LO) | (this.statusLo & STATUS_PROCESSOR_OWNED_LO)) >>> 0;
        break;
      }
      case Msr.Cr3Match:
        this.cr3MatchHi = hi;
        this.cr3MatchLo = lo;
        break;
      case Msr.OutputBase:
        this.outputBaseHi = hi;
        this.outputBaseLo = lo;
        break;
      case Msr.OutputMaskPtrs:
        this.outputMaskHi = hi;
        this.outputMaskLo = (lo | MASK_PTRS_LOWER_ONES) >>> 0;
        break;
      default: {
        const i = (address - Msr.Addr0A) * 2;
        this.addr[i] = hi;
        this.addr[i + 1] = lo;
      }
    }
    return null;
  }

  /** RDMSR into `out`, or the #GP of an MSR this processor does not have. */
  rdmsr(address: number, out: Halves): MsrFault | null {
    const fault = this.checkAccess(address);
    if (fault) return fault;
    switch (address) {
      case Msr.Ctl:
        out.hi = this.ctlHi;
        out.lo = this.ctlLo;
        break;
      case Msr.Status:
        out.hi = this.statusHi;
        out.lo = this.statusLo;
        break;
      case Msr.Cr3Match:
        out.hi = this.cr3MatchHi;
        out.lo = this.cr3MatchLo;
        break;
      case Msr.OutputBase:
        out.hi = this.outputBaseHi;
        out.lo = this.outputBaseLo;
        break;
      case Msr.OutputMaskPtrs:
        out.hi = this.outputMaskHi;
        out.lo = this.outputMaskLo;
        break;
      default: {
        const i = (address - Msr.Addr0A) * 2;
        out.hi = this.addr[i]!;
        out.lo = this.addr[i + 1]!;
      }
    }
    return null;
  }

  /** The #GP a WRMSR of this value would raise, or null; changes nothing. */
  check(address: number, hi: number, lo: number): MsrFault | null {
    hi >>>= 0;
    lo >>>= 0;
    const access = this.checkAccess(address);
    if (access) return access;
    switch (address) {
      case Msr.Ctl:
        return this.checkCtl(hi, lo);
      case Msr.Status:
        return this.checkStatus(hi, lo);
      case Msr.Cr3Match:
        return this.checkCr3Match(lo);
      case Msr.OutputBase:
        return this.checkOutputBase(hi, lo);
      case Msr.OutputMaskPtrs:
        return this.checkOutputMaskPtrs(hi, lo);
      default:
        return this.checkAddr(address, hi);
    }
  }

  /** WRMSR at the API edge. */
  writeMsr(address: number, value: bigint): MsrFault | null {
    const h = splitBigInt(value, { hi: 0, lo: 0 });
    return this.wrmsr(address, h.hi, h.lo);
  }

  /** RDMSR at the API edge: the value, or the fault. */
  readMsr(address: number): bigint | MsrFault {
    const h = { hi: 0, lo: 0 };
    return this.rdmsr(address, h) ?? toBigInt(h.hi, h.lo);
  }

  /**
   * Cold reset clears every MSR (OUTPUT_MASK_PTRS reads 7FH). Warm reset clears only
   * TraceEn (and STATUS.TriggerEn) when CPUID.14H.0:EBX[2] says the MSRs are preserved
   * across warm reset, and acts as a cold reset otherwise.
   */
  reset(kind: ResetKind): void {
    if (kind === "warm" && this.caps.ipFiltering) {
      this.ctlLo = (this.ctlLo & ~TRACE_EN) >>> 0;
      this.statusLo = (this.statusLo & ~(1 << STATUS.TriggerEn.lsb)) >>> 0;
      return;
    }
    this.ctlHi = this.ctlLo = this.statusHi = this.statusLo = 0;
    this.cr3MatchHi = this.cr3MatchLo = this.outputBaseHi = this.outputBaseLo = 0;
    this.outputMaskHi = 0;
    this.outputMaskLo = MASK_PTRS_LOWER_ONES;
    this.addr.fill(0);
  }

  /**
   * XRSTORS restoring PT state (IA32_XSS[8]): "If XRSTORS would restore (or
   * initialize) PT state and IA32_RTIT_CTL.TraceEn = 1, the instruction causes a #GP
   * before modifying PT state" (SDM Vol. 1 §13.5.6), even where a WRMSR of the same
   * value would be allowed; the fault, or null when the values may be loaded (each
   * then with {@link wrmsr}'s rules, IA32_RTIT_CTL last: Vol. 3C §36.2.7.1 applies
   * them to XRSTORS as to WRMSR).
   */
  xrstorsFault(address: number): MsrFault | null {
    if (!this.traceEn) return null;
    return fault(
      address,
      "TraceEn",
      GpRule.CtlWhileTracing,
      "XRSTORS restores PT state while IA32_RTIT_CTL.TraceEn=1 (#GP before any change)",
    );
  }

  /**
   * A processor-side update (STATUS bits, output pointers, TraceEn cleared on #SMI):
   * stored as is, without the WRMSR rules. OUTPUT_MASK_PTRS[6:0] still read as ones.
   */
  setByProcessor(address: number, hi: number, lo: number): void {
    hi >>>= 0;
    lo >>>= 0;
    switch (address) {
      case Msr.Ctl:
        this.ctlHi = hi;
        this.ctlLo = lo;
        return;
      case Msr.Status:
        this.statusHi = hi;
        this.statusLo = lo;
        return;
      case Msr.Cr3Match:
        this.cr3MatchHi = hi;
        this.cr3MatchLo = lo;
        return;
      case Msr.OutputBase:
        this.outputBaseHi = hi;
        this.outputBaseLo = lo;
        return;
      case Msr.OutputMaskPtrs:
        this.outputMaskHi = hi;
        this.outputMaskLo = (lo | MASK_PTRS_LOWER_ONES) >>> 0;
        return;
    }
    const i = (address - Msr.Addr0A) * 2;
    if (i >= 0 && i < 16) {
      this.addr[i] = hi;
      this.addr[i + 1] = lo;
    }
  }

  // Checks. Each returns the first rule broken, in the order: access, reserved bits,
  // writes while tracing, features, encodings, combinations checked on enable.

  private checkAccess(address: number): MsrFault | null {
    switch (address) {
      case Msr.Ctl:
      case Msr.Status:
        return null;
      case Msr.Cr3Match:
        return this.caps.cr3Filtering
          ? null
          : fault(
              address,
              "*",
              GpRule.MsrNotSupported,
              "not accessible: CPUID.14H.0:EBX[0] (CR3 filtering) = 0",
            );
      case Msr.OutputBase:
      case Msr.OutputMaskPtrs:
        return this.outputToMemory
          ? null
          : fault(
              address,
              "*",
              GpRule.MsrNotSupported,
              "not accessible: neither ToPA (CPUID.14H.0:ECX[0]) nor single-range output (ECX[2]) is supported",
            );
    }
    const i = address - Msr.Addr0A;
    if (i >= 0 && i < 8) {
      const n = i >> 1;
      if (n < this.addressRanges) return null;
      return fault(
        address,
        "*",
        GpRule.MsrNotSupported,
        this.caps.ipFiltering
          ? `not accessible: address range ${n} >= CPUID.14H.1:EAX[2:0] = ${this.caps.addressRanges}`
          : "not accessible: CPUID.14H.0:EBX[2] (IP filtering) = 0",
      );
    }
    return fault(address, "*", GpRule.NotPtMsr, `MSR ${hex(address)} is not an Intel PT MSR`);
  }

  private checkCtl(hi: number, lo: number): MsrFault | null {
    const c = this.caps;
    const rsvHi = hi & CTL_RESERVED.hi;
    const rsvLo = lo & CTL_RESERVED.lo;
    if (rsvHi !== 0 || rsvLo !== 0) {
      return fault(Msr.Ctl, "Reserved", GpRule.CtlReserved, reservedReason(rsvHi, rsvLo));
    }
    if (this.ctlLo & lo & TRACE_EN && (hi !== this.ctlHi || lo !== this.ctlLo)) {
      const changed = firstChanged(CTL_FIELDS, this.ctlHi, this.ctlLo, hi, lo);
      return fault(
        Msr.Ctl,
        changed,
        GpRule.CtlWhileTracing,
        `changed while TraceEn=1 (only a write that clears TraceEn may change ${changed})`,
      );
    }
    for (const g of FEATURE_GATES) {
      if (getField(hi, lo, g.field) !== 0 && !g.has(c)) {
        return fault(Msr.Ctl, g.field.name, g.rule, `${g.field.name}=1 needs ${g.what}: ${g.cpuid} = 0`);
      }
    }
    for (const g of ENCODING_GATES) {
      const v = getField(hi, lo, g.field);
      if (!g.has(c)) {
        if (v !== 0) {
          return fault(
            Msr.Ctl,
            g.field.name,
            g.reservedRule,
            `reserved (must be 0) without ${g.feature}; got ${v}`,
          );
        }
      } else if (((g.bitmap(c) >>> v) & 1) === 0) {
        return fault(
          Msr.Ctl,
          g.field.name,
          g.encodingRule,
          `encoding ${v} not supported (${g.bitmapName} = ${hex(g.bitmap(c), 4)})`,
        );
      }
    }
    for (let n = 0; n < CTL_ADDR_CFG.length; n++) {
      const fd = CTL_ADDR_CFG[n]!;
      const v = getField(hi, lo, fd);
      if (v === 0) continue;
      if (n >= this.addressRanges) {
        return fault(
          Msr.Ctl,
          fd.name,
          GpRule.CtlAddrCfgRange,
          c.ipFiltering
            ? `reserved: address range ${n} >= CPUID.14H.1:EAX[2:0] = ${c.addressRanges}; got ${v}`
            : `reserved: CPUID.14H.0:EBX[2] (IP filtering) = 0; got ${v}`,
        );
      }
      if (v > 2) {
        return fault(
          Msr.Ctl,
          fd.name,
          GpRule.CtlAddrCfgEncoding,
          `encoding ${v} is reserved (0 unused, 1 FilterEn range, 2 TraceStop range)`,
        );
      }
    }
    if (lo & TRACE_EN) {
      if ((lo & (TOPA | FABRIC_EN)) === 0 && !c.singleRangeOutput) {
        return fault(
          Msr.Ctl,
          "ToPA",
          GpRule.CtlSingleRange,
          "TraceEn=1 with ToPA=0 and FabricEn=0 selects single-range output: CPUID.14H.0:ECX[2] = 0",
        );
      }
      if ((lo & BRANCH_EN) === 0 && !c.mtc) {
        return fault(
          Msr.Ctl,
          "BranchEn",
          GpRule.CtlBranchEn,
          "TraceEn=1 with BranchEn=0 needs suppression of COFI-based packets: CPUID.14H.0:EBX[3] = 0",
        );
      }
    }
    return null;
  }

  private checkStatus(hi: number, lo: number): MsrFault | null {
    const rsvHi = hi & STATUS_RESERVED.hi;
    const rsvLo = lo & STATUS_RESERVED.lo;
    if (rsvHi !== 0 || rsvLo !== 0) {
      return fault(Msr.Status, "Reserved", GpRule.StatusReserved, reservedReason(rsvHi, rsvLo));
    }
    if (this.traceEn) {
      const changed = firstChanged(STATUS_WRITABLE, this.statusHi, this.statusLo, hi, lo, "*");
      return fault(Msr.Status, changed, GpRule.StatusWhileTracing, "written while IA32_RTIT_CTL.TraceEn=1");
    }
    const count = getField(hi, lo, STATUS.PacketByteCnt);
    if (count !== 0 && !this.caps.psbCyc) {
      return fault(
        Msr.Status,
        "PacketByteCnt",
        GpRule.StatusPacketByteCnt,
        `non-zero value ${count} needs configurable PSB: CPUID.14H.0:EBX[1] = 0`,
      );
    }
    if (!this.caps.psbPmiPreservation) {
      for (const fd of STATUS_PEND) {
        if (getField(hi, lo, fd) !== 0) {
          return fault(
            Msr.Status,
            fd.name,
            GpRule.StatusPend,
            `reserved without PSB and PMI preservation: CPUID.14H.0:EBX[6] = 0`,
          );
        }
      }
    }
    return null;
  }

  private checkCr3Match(lo: number): MsrFault | null {
    if ((lo & CR3_MATCH_RESERVED_LO) !== 0) {
      return fault(
        Msr.Cr3Match,
        "Reserved",
        GpRule.Cr3MatchReserved,
        reservedReason(0, lo & CR3_MATCH_RESERVED_LO),
      );
    }
    if (this.traceEn) {
      return fault(Msr.Cr3Match, "CR3", GpRule.Cr3MatchWhileTracing, "written while IA32_RTIT_CTL.TraceEn=1");
    }
    return null;
  }

  private checkAddr(address: number, hi: number): MsrFault | null {
    if (this.traceEn) {
      return fault(address, "VirtAddr", GpRule.AddrWhileTracing, "written while IA32_RTIT_CTL.TraceEn=1");
    }
    const bits = this.caps.linearAddressBits;
    if (!isCanonical(hi, bits)) {
      return fault(
        address,
        "SignExt_VA",
        GpRule.AddrNonCanonical,
        `not canonical: bits 63:${bits - 1} must all equal bit ${bits - 1} (${bits}-bit linear addresses)`,
      );
    }
    return null;
  }

  private checkOutputBase(hi: number, lo: number): MsrFault | null {
    if ((lo & OUTPUT_BASE_RESERVED_LO) !== 0) {
      return fault(
        Msr.OutputBase,
        "Reserved",
        GpRule.OutputBaseReserved,
        `${reservedReason(0, lo & OUTPUT_BASE_RESERVED_LO)} (the base is 128-byte aligned)`,
      );
    }
    const above = hi & this.outputBaseReservedHi;
    if (above !== 0) {
      return fault(
        Msr.OutputBase,
        "Reserved",
        GpRule.OutputBaseMaxPhysAddr,
        `${reservedReason(above, 0)}: at or above MAXPHYADDR = ${this.caps.maxPhysAddr}`,
      );
    }
    if (this.traceEn) {
      return fault(
        Msr.OutputBase,
        "BasePhysAddr",
        GpRule.OutputWhileTracing,
        "written while IA32_RTIT_CTL.TraceEn=1",
      );
    }
    return null;
  }

  private checkOutputMaskPtrs(hi: number, lo: number): MsrFault | null {
    if (this.traceEn) {
      const changed = firstChanged(MASK_PTRS_WRITABLE, this.outputMaskHi, this.outputMaskLo, hi, lo, "*");
      return fault(
        Msr.OutputMaskPtrs,
        changed,
        GpRule.OutputWhileTracing,
        "written while IA32_RTIT_CTL.TraceEn=1",
      );
    }
    return null;
  }
}

function fault(address: number, field: string, rule: GpRule, reason: string): MsrFault {
  return { address, msr: msrName(address) ?? "(not an Intel PT MSR)", field, rule, reason };
}

function reservedReason(hi: number, lo: number): string {
  const bits = setBits(hi, lo);
  return `${bits.length === 1 ? "bit" : "bits"} ${bitRanges(bits)} reserved (must be 0)`;
}

function firstChanged(
  fields: readonly BitField[],
  oldHi: number,
  oldLo: number,
  hi: number,
  lo: number,
  none = "TraceEn",
): string {
  for (const fd of fields) if (getField(oldHi, oldLo, fd) !== getField(hi, lo, fd)) return fd.name;
  return none;
}
