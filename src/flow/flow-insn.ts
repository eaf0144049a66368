/**
 * The decoder's working record of one instruction (libipt's `pt_insn` together with
 * its `pt_insn_ext`), and the questions the decoders ask about it. A few instances
 * are preallocated per decoder and reused.
 */

import * as errors from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import * as u64 from "../base/u64.js";
import { U64 } from "../base/u64.js";
import * as addr from "../image/addr.js";
import * as flowClass from "./flow-class.js";
import { MAX_RAW } from "./records.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { addSize, sum, TWO_32 } = addr;
const { ErrorCode } = errors;
const { add64 } = u64;
const { FACT_SHIFT, FlowClass, InsnFact } = flowClass;

export class FlowInsn {
  ipHi = 0;
  ipLo = 0;
  mode = 0;
  /** Length in bytes (0 until decoded). */
  size = 0;
  /** {@link FlowClass} in bits 0-3, {@link InsnFact} bits above (see classify). */
  info = 0;
  /** The isa layer's InsnClass. */
  iclass = 0;
  /** Displacement of a direct branch (from the end of the instruction). */
  disp = 0;
  /** Section id the instruction starts in. */
  isid = 0;
  /** The bytes continue in another section; then `raw` holds them. */
  truncated = false;
  readonly raw = new Uint8Array(MAX_RAW);

  /** Start over at (hi:lo) in `mode`, nothing decoded. */
  reset(hi: number, lo: number, mode: number): void {
    this.ipHi = hi;
    this.ipLo = lo;
    this.mode = mode;
    this.size = 0;
    this.info = 0;
    this.iclass = 0;
    this.disp = 0;
    this.isid = 0;
    this.truncated = false;
  }

  copyFrom(o: FlowInsn): void {
    this.ipHi = o.ipHi;
    this.ipLo = o.ipLo;
    this.mode = o.mode;
    this.size = o.size;
    this.info = o.info;
    this.iclass = o.iclass;
    this.disp = o.disp;
    this.isid = o.isid;
    this.truncated = o.truncated;
    if (o.truncated) this.raw.set(o.raw);
  }

  has(fact: number): boolean {
    return ((this.info >>> FACT_SHIFT) & fact) !== 0;
  }
}
// Addresses: see doubleFields.
doubleFields(new FlowInsn(), ["ipHi", "ipLo"]);

/**
 * Result of {@link nextIp}. The functions here use the module constant `out`: V8 loads
 * and checks an exported binding at every use, even in its own module.
 */
const out = new U64();
export const next = out;

/**
 * Where execution goes after `insn` without trace (libipt `pt_insn_next_ip`), into
 * {@link next}: 0; -BadQuery when trace decides (conditional, indirect and far
 * branches, returns); -BadInsn for an undecoded instruction.
 */
export function nextIp(insn: FlowInsn): number {
  const c = insn.info & 15;
  let delta = insn.size;
  if (c === FlowClass.Jump || c === FlowClass.Call) {
    if (((insn.info >>> FACT_SHIFT) & InsnFact.Direct) === 0) return -ErrorCode.BadQuery;
    delta += insn.disp;
  } else if (c !== FlowClass.Other && c !== FlowClass.Ptwrite) {
    return c === FlowClass.Unknown ? -ErrorCode.BadInsn : -ErrorCode.BadQuery;
  }
  addDelta(insn, delta);
  return 0;
}

/** The address after the instruction (ip + size) into {@link next}. */
export function fallThrough(insn: FlowInsn): void {
  add64(out, insn.ipHi, insn.ipLo, 0, insn.size);
}

/** The target of a direct branch (ip + size + displacement, modulo 2^64) into {@link next}. */
export function branchTarget(insn: FlowInsn): void {
  addDelta(insn, insn.size + insn.disp);
}

/** next = (hi:lo) + x for -2^32 < x < 2^53 (an offset from an origin, or a branch's reach). */
export function addOffset(hi: number, lo: number, x: number): void {
  const l = lo + x;
  if (x >= 0 && l < TWO_32) {
    out.hi = hi;
    out.lo = l;
  } else if (x >= 0) {
    addSize(hi, lo, x);
    out.hi = sum.hi;
    out.lo = sum.lo;
  } else {
    add64(out, hi, lo, 0xffffffff, x >>> 0);
  }
}

/** next = ip + delta for a signed delta within ±2^32. */
function addDelta(insn: FlowInsn, delta: number): void {
  addDelta64(insn.ipHi, insn.ipLo, delta);
}

/** next = (hi:lo) + delta, modulo 2^64, for a signed delta within ±2^32. */
export function addDelta64(hi: number, lo: number, delta: number): void {
  add64(out, hi, lo, delta < 0 ? 0xffffffff : 0, delta >>> 0);
}

/** A far branch (libipt `pt_insn_is_far_branch`). */
function isFar(insn: FlowInsn): boolean {
  const c = insn.info & 15;
  return c === FlowClass.FarCall || c === FlowClass.FarReturn || c === FlowClass.FarJump;
}

/** A PIP (paging event) binds to it: MOV CR3, VMLAUNCH/VMRESUME, far branches. */
export function bindsToPip(insn: FlowInsn): boolean {
  return insn.has(InsnFact.MovCr3 | InsnFact.VmEntry) || isFar(insn);
}

/** A VMCS packet binds to it: VMPTRLD, VMLAUNCH/VMRESUME, far branches. */
export function bindsToVmcs(insn: FlowInsn): boolean {
  return insn.has(InsnFact.Vmptrld | InsnFact.VmEntry) || isFar(insn);
}

/** Any branch (libipt `pt_insn_is_branch`). */
export function isBranch(insn: FlowInsn): boolean {
  const c = insn.info & 15;
  return c >= FlowClass.Call && c <= FlowClass.FarJump ? true : c === FlowClass.Indirect;
}
