/**
 * Typed views of the Intel PT MSRs with exact encode and decode.
 *
 * Decoding takes the two unsigned 32-bit halves (or a BigInt at the API edge) and
 * returns a plain object; encoding writes halves (or returns a BigInt). Every 64-bit
 * value round-trips: bits in positions the SDM reserves come back in `reservedHi` /
 * `reservedLo` and are written back unchanged, so `encode(decode(x)) === x` for all x.
 * Whether a processor accepts a value is not decided here but by the register file
 * (msr-file.ts), which knows the CPUID capabilities.
 *
 * These views allocate; the register file's hot path works on raw halves instead.
 */
import { splitBigInt, toBigInt } from "../base/halves.js";
import { type BitField, fieldsMask, getField, type Halves, lowMask, setField } from "./bits.js";
import {
  CR3_MATCH_RESERVED_LO,
  CTL_FIELDS,
  MASK_PTRS,
  MASK_PTRS_FIELDS,
  MASK_PTRS_LOWER_ONES,
  OUTPUT_BASE_RESERVED_LO,
  STATUS_FIELDS,
} from "./msr-layout.js";

/** IA32_RTIT_CTL. One-bit fields are booleans, wider ones unsigned numbers. */
export interface RtitCtl {
  traceEn: boolean;
  cycEn: boolean;
  os: boolean;
  user: boolean;
  pwrEvtEn: boolean;
  fupOnPtw: boolean;
  fabricEn: boolean;
  cr3Filter: boolean;
  toPA: boolean;
  mtcEn: boolean;
  tscEn: boolean;
  disRetc: boolean;
  ptwEn: boolean;
  branchEn: boolean;
  /** 4 bits: MTC when ART bit (MTCFreq) toggles. */
  mtcFreq: number;
  /** 4 bits: CYC threshold encoding. */
  cycThresh: number;
  /** 4 bits: PSB period 2K << PSBFreq bytes. */
  psbFreq: number;
  eventEn: boolean;
  /** 4 bits each: 0 unused, 1 FilterEn range, 2 TraceStop range, 3..15 reserved. */
  addr0Cfg: number;
  addr1Cfg: number;
  addr2Cfg: number;
  addr3Cfg: number;
  disTnt: boolean;
  injectPsbPmiOnEnable: boolean;
  /** Bits set in reserved positions 63:32 (18, 23, 30:28 for the low half). */
  reservedHi: number;
  reservedLo: number;
}

/** IA32_RTIT_STATUS. */
export interface RtitStatus {
  filterEn: boolean;
  contextEn: boolean;
  triggerEn: boolean;
  error: boolean;
  stopped: boolean;
  pendPsb: boolean;
  pendTopaPmi: boolean;
  /** 17 bits (48:32). */
  packetByteCnt: number;
  reservedHi: number;
  reservedLo: number;
}

/** IA32_RTIT_CR3_MATCH: the CR3 value to match (bits 63:5); bits 4:0 are reserved. */
export interface RtitCr3Match {
  /** Bits 63:5 of the register, low 5 bits zero. */
  cr3: bigint;
  /** Bits 4:0 as written (must be 0 in a valid write). */
  reservedLo: number;
}

/** IA32_RTIT_ADDRn_A / IA32_RTIT_ADDRn_B: one 64-bit linear address. */
export interface RtitAddr {
  address: bigint;
  /** Bits 63:(linear width - 1) all equal (derived; ignored by encode). */
  canonical: boolean;
}

/** IA32_RTIT_OUTPUT_BASE: the output region base or the current ToPA table base. */
export interface RtitOutputBase {
  /** Bits MAXPHYADDR-1:7, low 7 bits zero. */
  basePhysAddr: bigint;
  /** Bits 6:0 as written (reserved). */
  reservedLo: number;
  /** Bits 63:32 at or above MAXPHYADDR as written (reserved), in place. */
  reservedHi: number;
}

/** IA32_RTIT_OUTPUT_MASK_PTRS. */
export interface RtitOutputMaskPtrs {
  /** Bits 6:0; the processor forces them to 1 (reads 7FH). */
  lowerMask: number;
  /** Bits 31:7 (25 bits): the single-range mask, or ToPA table offset bits 27:3. */
  maskOrTableOffset: number;
  /** Bits 63:32. */
  outputOffset: number;
}

const CTL_MASK = fieldsMask(CTL_FIELDS);
const STATUS_MASK = fieldsMask(STATUS_FIELDS);

/** Bits IA32_RTIT_CTL reserves in every processor: 18, 23, 30:28, 54:48, 63:57. */
export const CTL_RESERVED: Readonly<Halves> = { hi: ~CTL_MASK.hi >>> 0, lo: ~CTL_MASK.lo >>> 0 };
/** Bits IA32_RTIT_STATUS reserves in every processor: 3, 31:8, 63:49. */
export const STATUS_RESERVED: Readonly<Halves> = { hi: ~STATUS_MASK.hi >>> 0, lo: ~STATUS_MASK.lo >>> 0 };

type View = Record<string, boolean | number>;

function decodeFields(fields: readonly BitField[], hi: number, lo: number, view: View): void {
  for (const fd of fields) {
    const v = getField(hi, lo, fd);
    view[fd.key] = fd.width === 1 ? v === 1 : v;
  }
}

function encodeFields(fields: readonly BitField[], view: Partial<View>, out: Halves, what: string): void {
  for (const fd of fields) {
    const raw = view[fd.key];
    if (raw === undefined) continue;
    const v = typeof raw === "boolean" ? (raw ? 1 : 0) : raw;
    if (!Number.isInteger(v) || v < 0 || v > lowMask(fd.width)) {
      throw new RangeError(`${what}.${fd.name}: ${raw} does not fit in ${fd.width} bit(s)`);
    }
    setField(out, fd, v);
  }
}

function reservedOnly(value: number | undefined, mask: number, what: string): number {
  const v = value ?? 0;
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff || (v & ~mask) !== 0) {
    throw new RangeError(`${what}: ${v} sets bits outside the reserved positions`);
  }
  return v >>> 0;
}

const scratch: Halves = { hi: 0, lo: 0 };

/** decode/encode, and their BigInt forms, of a register described by a field table. */
function fieldRegister<T>(fields: readonly BitField[], reserved: Readonly<Halves>, name: string) {
  const decode = (hi: number, lo: number): T => {
    const view = { reservedHi: (hi & reserved.hi) >>> 0, reservedLo: (lo & reserved.lo) >>> 0 };
    decodeFields(fields, hi, lo, view as unknown as View);
    return view as unknown as T;
  };
  /** Encode a (partial) view; missing fields are 0. Throws RangeError on a value that does not fit. */
  const encode = (view: Partial<T>, out: Halves = { hi: 0, lo: 0 }): Halves => {
    const v = view as Partial<View> & { reservedHi?: number; reservedLo?: number };
    out.hi = reservedOnly(v.reservedHi, reserved.hi, `${name}.reservedHi`);
    out.lo = reservedOnly(v.reservedLo, reserved.lo, `${name}.reservedLo`);
    encodeFields(fields, v, out, name);
    return out;
  };
  const decodeBig = (value: bigint): T => {
    splitBigInt(value, scratch);
    return decode(scratch.hi, scratch.lo);
  };
  const encodeBig = (view: Partial<T>): bigint => {
    const h = encode(view);
    return toBigInt(h.hi, h.lo);
  };
  return { decode, encode, decodeBig, encodeBig };
}

const ctl = fieldRegister<RtitCtl>(CTL_FIELDS, CTL_RESERVED, "IA32_RTIT_CTL");
export const decodeCtl = ctl.decode;
export const encodeCtl = ctl.encode;
export const decodeCtlBig = ctl.decodeBig;
export const encodeCtlBig = ctl.encodeBig;

const status = fieldRegister<RtitStatus>(STATUS_FIELDS, STATUS_RESERVED, "IA32_RTIT_STATUS");
export const decodeStatus = status.decode;
export const encodeStatus = status.encode;
export const decodeStatusBig = status.decodeBig;
export const encodeStatusBig = status.encodeBig;

// IA32_RTIT_CR3_MATCH

export function decodeCr3Match(hi: number, lo: number): RtitCr3Match {
  return { cr3: toBigInt(hi, lo & ~CR3_MATCH_RESERVED_LO), reservedLo: lo & CR3_MATCH_RESERVED_LO };
}

export function encodeCr3Match(view: RtitCr3Match, out: Halves = { hi: 0, lo: 0 }): Halves {
  checkU64(view.cr3, "IA32_RTIT_CR3_MATCH.cr3");
  if ((view.cr3 & BigInt(CR3_MATCH_RESERVED_LO)) !== 0n) {
    throw new RangeError("IA32_RTIT_CR3_MATCH.cr3: bits 4:0 belong to reservedLo");
  }
  splitBigInt(view.cr3, out);
  out.lo =
    (out.lo | reservedOnly(view.reservedLo, CR3_MATCH_RESERVED_LO, "IA32_RTIT_CR3_MATCH.reservedLo")) >>> 0;
  return out;
}

// IA32_RTIT_ADDRn_A/B

/** True when bits 63:(linearBits-1) of the address are all equal (linearBits 33..64). */
export function isCanonical(hi: number, linearBits: number): boolean {
  if (linearBits >= 64) return true;
  const top = (hi | 0) >> (linearBits - 1 - 32);
  return top === 0 || top === -1;
}

export function decodeAddr(hi: number, lo: number, linearBits = 48): RtitAddr {
  return { address: toBigInt(hi, lo), canonical: isCanonical(hi, linearBits) };
}

export function encodeAddr(view: Pick<RtitAddr, "address">, out: Halves = { hi: 0, lo: 0 }): Halves {
  checkU64(view.address, "IA32_RTIT_ADDRn.address");
  return splitBigInt(view.address, out);
}

// IA32_RTIT_OUTPUT_BASE

/** Reserved bits of the high half for a MAXPHYADDR of `maxPhysAddr` (32..64). */
export function physAddrReservedHi(maxPhysAddr: number): number {
  if (maxPhysAddr >= 64) return 0;
  if (maxPhysAddr <= 32) return 0xffffffff;
  return ~lowMask(maxPhysAddr - 32) >>> 0;
}

export function decodeOutputBase(hi: number, lo: number, maxPhysAddr = 64): RtitOutputBase {
  const rsvdHi = physAddrReservedHi(maxPhysAddr);
  return {
    basePhysAddr: toBigInt(hi & ~rsvdHi, lo & ~OUTPUT_BASE_RESERVED_LO),
    reservedLo: lo & OUTPUT_BASE_RESERVED_LO,
    reservedHi: (hi & rsvdHi) >>> 0,
  };
}

export function encodeOutputBase(view: RtitOutputBase, out: Halves = { hi: 0, lo: 0 }): Halves {
  checkU64(view.basePhysAddr, "IA32_RTIT_OUTPUT_BASE.basePhysAddr");
  if ((view.basePhysAddr & BigInt(OUTPUT_BASE_RESERVED_LO)) !== 0n) {
    throw new RangeError("IA32_RTIT_OUTPUT_BASE.basePhysAddr: bits 6:0 belong to reservedLo");
  }
  splitBigInt(view.basePhysAddr, out);
  if ((out.hi & view.reservedHi) !== 0) {
    throw new RangeError("IA32_RTIT_OUTPUT_BASE: basePhysAddr and reservedHi overlap");
  }
  out.hi = (out.hi | reservedOnly(view.reservedHi, 0xffffffff, "IA32_RTIT_OUTPUT_BASE.reservedHi")) >>> 0;
  out.lo =
    (out.lo | reservedOnly(view.reservedLo, OUTPUT_BASE_RESERVED_LO, "IA32_RTIT_OUTPUT_BASE.reservedLo")) >>>
    0;
  return out;
}

// IA32_RTIT_OUTPUT_MASK_PTRS

export function decodeOutputMaskPtrs(hi: number, lo: number): RtitOutputMaskPtrs {
  const view = {};
  decodeFields(MASK_PTRS_FIELDS, hi, lo, view as View);
  return view as RtitOutputMaskPtrs;
}

export function encodeOutputMaskPtrs(
  view: Partial<RtitOutputMaskPtrs>,
  out: Halves = { hi: 0, lo: 0 },
): Halves {
  out.hi = 0;
  out.lo = 0;
  encodeFields(MASK_PTRS_FIELDS, view as Partial<View>, out, "IA32_RTIT_OUTPUT_MASK_PTRS");
  return out;
}

/** Single-range output: the 32-bit mask (MaskOrTableOffset with the 7 low ones). */
export const singleRangeMask = (lo: number): number => (lo | MASK_PTRS_LOWER_ONES) >>> 0;
/** ToPA output: byte offset of the current entry in the current table (proc_trace_table_offset). */
export const topaTableOffset = (lo: number): number => getField(0, lo, MASK_PTRS.MaskOrTableOffset) * 8;

function checkU64(v: bigint, what: string): void {
  if (v < 0n || v > 0xffff_ffff_ffff_ffffn)
    throw new RangeError(`${what}: ${v} is not an unsigned 64-bit value`);
}
