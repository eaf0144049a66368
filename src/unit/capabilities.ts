/**
 * The Intel PT capability model: CPUID leaf 14H, sub-leaves 0 and 1 (SDM Vol. 2A
 * "CPUID—Intel Processor Trace Enumeration"; Vol. 3C "Detection of Intel Processor
 * Trace and Capability Enumeration", §33.3.1 / older §36.3.1), plus the two address
 * widths of CPUID.80000008H:EAX that the MSR rules need (MAXPHYADDR and the linear
 * address width).
 *
 * Decoding keeps every bit: bits the SDM reserves are kept in `reserved` so that
 * `encodeCpuid14(decodeCpuid14(raw))` gives back `raw` exactly.
 */
import { hex } from "./bits.js";

/** One CPUID result. */
export interface CpuidRegs {
  eax: number;
  ebx: number;
  ecx: number;
  edx: number;
}

/** CPUID leaf 14H: sub-leaf 0 and sub-leaf 1. */
export interface Cpuid14 {
  sub0: CpuidRegs;
  sub1: CpuidRegs;
}

export interface PtCapabilities {
  /** CPUID.14H.0:EAX: the highest valid sub-leaf. */
  maxSubLeaf: number;
  /** EBX[0]: CR3Filter can be set, IA32_RTIT_CR3_MATCH is accessible. */
  cr3Filtering: boolean;
  /** EBX[1]: configurable PSB (PSBFreq, PacketByteCnt) and cycle-accurate mode (CYCEn, CycThresh). */
  psbCyc: boolean;
  /** EBX[2]: IP filtering and TraceStop (ADDRn_CFG), MSRs preserved across warm reset. */
  ipFiltering: boolean;
  /** EBX[3]: MTC packets (MTCEn, MTCFreq) and suppression of COFI-based packets (BranchEn=0). */
  mtc: boolean;
  /** EBX[4]: PTWRITE (PTWEn, FUPonPTW). */
  ptwrite: boolean;
  /** EBX[5]: power event trace (PwrEvtEn). */
  powerEventTrace: boolean;
  /** EBX[6]: PSB and PMI preservation (InjectPsbPmiOnEnable, PendPSB, PendTopaPMI). */
  psbPmiPreservation: boolean;
  /** EBX[7]: event trace (EventEn). */
  eventTrace: boolean;
  /** EBX[8]: TNT disable (DisTNT). */
  tntDisable: boolean;
  /** ECX[0]: ToPA output (ToPA=1). */
  topaOutput: boolean;
  /** ECX[1]: ToPA tables may hold more than one output entry. */
  topaMultipleEntries: boolean;
  /** ECX[2]: single-range output (TraceEn=1 with ToPA=0). */
  singleRangeOutput: boolean;
  /** ECX[3]: output to the trace transport subsystem (FabricEn). */
  traceTransportOutput: boolean;
  /** ECX[31]: IP payloads are linear addresses (LIP, CS base included), else RIP. */
  lipPayloads: boolean;
  /** CPUID.14H.1:EAX[2:0]: number of address ranges (ADDRn_CFG fields and ADDRn_A/B pairs). */
  addressRanges: number;
  /** CPUID.14H.1:EAX[31:16]: bit n set = MTCFreq encoding n allowed. */
  mtcPeriods: number;
  /** CPUID.14H.1:EBX[15:0]: bit n set = CycThresh encoding n allowed. */
  cycThresholds: number;
  /** CPUID.14H.1:EBX[31:16]: bit n set = PSBFreq encoding n allowed. */
  psbFrequencies: number;
  /** CPUID.80000008H:EAX[7:0]: MAXPHYADDR (IA32_RTIT_OUTPUT_BASE bits at and above it are reserved). */
  maxPhysAddr: number;
  /** CPUID.80000008H:EAX[15:8]: linear address width, 48 or 57 (ADDRn canonicality). */
  linearAddressBits: number;
  /** Bits of leaf 14H the SDM reserves, as read (so that encoding gives them back). */
  reserved: Cpuid14;
}

/** The bits of leaf 14H this model defines; everything else is reserved. */
export const CPUID14_DEFINED: Readonly<Cpuid14> = {
  sub0: { eax: 0xffffffff, ebx: 0x1ff, ecx: 0x8000000f, edx: 0 },
  sub1: { eax: 0xffff0007, ebx: 0xffffffff, ecx: 0, edx: 0 },
};

const bit = (word: number, n: number): boolean => ((word >>> n) & 1) === 1;
const b = (flag: boolean, n: number): number => (flag ? 1 << n : 0);

/**
 * Decode CPUID leaf 14H. `addressSizes` is CPUID.80000008H:EAX (default 0x3027: 39-bit
 * physical, 48-bit linear, as on client parts).
 */
export function decodeCpuid14(raw: Cpuid14, addressSizes = 0x3027): PtCapabilities {
  const { sub0, sub1 } = raw;
  return {
    maxSubLeaf: sub0.eax >>> 0,
    cr3Filtering: bit(sub0.ebx, 0),
    psbCyc: bit(sub0.ebx, 1),
    ipFiltering: bit(sub0.ebx, 2),
    mtc: bit(sub0.ebx, 3),
    ptwrite: bit(sub0.ebx, 4),
    powerEventTrace: bit(sub0.ebx, 5),
    psbPmiPreservation: bit(sub0.ebx, 6),
    eventTrace: bit(sub0.ebx, 7),
    tntDisable: bit(sub0.ebx, 8),
    topaOutput: bit(sub0.ecx, 0),
    topaMultipleEntries: bit(sub0.ecx, 1),
    singleRangeOutput: bit(sub0.ecx, 2),
    traceTransportOutput: bit(sub0.ecx, 3),
    lipPayloads: bit(sub0.ecx, 31),
    addressRanges: sub1.eax & 7,
    mtcPeriods: sub1.eax >>> 16,
    cycThresholds: sub1.ebx & 0xffff,
    psbFrequencies: sub1.ebx >>> 16,
    maxPhysAddr: addressSizes & 0xff,
    linearAddressBits: (addressSizes >>> 8) & 0xff,
    reserved: {
      sub0: reservedOf(sub0, CPUID14_DEFINED.sub0),
      sub1: reservedOf(sub1, CPUID14_DEFINED.sub1),
    },
  };
}

/** Encode the capabilities back to CPUID leaf 14H (reserved bits as decoded). */
export function encodeCpuid14(c: PtCapabilities): Cpuid14 {
  const r = c.reserved;
  const ebx0 =
    b(c.cr3Filtering, 0) |
    b(c.psbCyc, 1) |
    b(c.ipFiltering, 2) |
    b(c.mtc, 3) |
    b(c.ptwrite, 4) |
    b(c.powerEventTrace, 5) |
    b(c.psbPmiPreservation, 6) |
    b(c.eventTrace, 7) |
    b(c.tntDisable, 8);
  const ecx0 =
    b(c.topaOutput, 0) |
    b(c.topaMultipleEntries, 1) |
    b(c.singleRangeOutput, 2) |
    b(c.traceTransportOutput, 3) |
    b(c.lipPayloads, 31);
  return {
    sub0: {
      eax: c.maxSubLeaf >>> 0,
      ebx: (ebx0 | r.sub0.ebx) >>> 0,
      ecx: (ecx0 | r.sub0.ecx) >>> 0,
      edx: r.sub0.edx >>> 0,
    },
    sub1: {
      eax: ((c.addressRanges & 7) | ((c.mtcPeriods & 0xffff) << 16) | r.sub1.eax) >>> 0,
      ebx: ((c.cycThresholds & 0xffff) | ((c.psbFrequencies & 0xffff) << 16)) >>> 0,
      ecx: r.sub1.ecx >>> 0,
      edx: r.sub1.edx >>> 0,
    },
  };
}

/** CPUID.80000008H:EAX[15:0] for the two address widths. */
export const encodeAddressSizes = (c: PtCapabilities): number =>
  ((c.maxPhysAddr & 0xff) | ((c.linearAddressBits & 0xff) << 8)) >>> 0;

function reservedOf(regs: CpuidRegs, defined: CpuidRegs): CpuidRegs {
  return {
    eax: (regs.eax & ~defined.eax) >>> 0,
    ebx: (regs.ebx & ~defined.ebx) >>> 0,
    ecx: (regs.ecx & ~defined.ecx) >>> 0,
    edx: (regs.edx & ~defined.edx) >>> 0,
  };
}

/**
 * The number of ADDRn_CFG fields / ADDRn_A/B pairs the register file honours: RANGECNT
 * when IP filtering is enumerated, capped at the 4 fields IA32_RTIT_CTL has ("Currently,
 * no processors support more than 4 address ranges").
 */
export const effectiveAddressRanges = (c: PtCapabilities): number =>
  c.ipFiltering ? Math.min(c.addressRanges, 4) : 0;

/** Encodings set in a 16-bit bitmap, lowest first: 0x0249 -> [0, 3, 6, 9]. */
export function bitmapEncodings(bitmap: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < 16; i++) if ((bitmap >>> i) & 1) out.push(i);
  return out;
}

/** "CPUID.14H.1:EAX[31:16] = 0x0249" and friends, for messages. */
export const describeBitmap = (where: string, bitmap: number): string => `${where} = ${hex(bitmap, 4)}`;
