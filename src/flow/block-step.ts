/**
 * One instruction at a time: adding the instruction at the IP to a block, and
 * walking without trace to an instruction of some kind or to an address (libipt's
 * `pt_blk_proceed_one_insn`, `pt_blk_proceed_to_insn`, `pt_blk_proceed_to_ip`).
 */
import * as errors from "../base/errors.js";
import * as flowClass from "./flow-class.js";
import * as flowInsn from "./flow-insn.js";
import { FlowInsn } from "./flow-insn.js";
import { FlowState } from "./flow-state.js";
import type { Block } from "./records.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { ErrorCode } = errors;
const { FlowClass, InsnFact } = flowClass;
type FlowClass = flowClass.FlowClass;
const { bindsToPip, bindsToVmcs, next, nextIp } = flowInsn;

/** Which instruction a walk stops at (libipt's predicate functions). */
export const Stop = {
  /** None: go as far as possible without trace. */
  Never: 0,
  /** MOV CR3. */
  MovCr3: 1,
  /** A direct jump or call, or MOV CR3 (erratum SKL014). */
  Skl014: 2,
  Ptwrite: 3,
  /** IRET, SYSRET, SYSEXIT, ERETS, ERETU. */
  Iret: 4,
  /** VMLAUNCH, VMRESUME. */
  VmEntry: 5,
  Uiret: 6,
  /** INT n, INT3, INT1, INTO. */
  SoftInt: 7,
  /** SYSCALL, SYSENTER. */
  Syscall: 8,
  /** What a PIP binds to: MOV CR3, VMLAUNCH/VMRESUME, far branches. */
  Pip: 9,
  /** What a VMCS packet binds to: VMPTRLD, VMLAUNCH/VMRESUME, far branches. */
  Vmcs: 10,
} as const;
export type Stop = (typeof Stop)[keyof typeof Stop];

/** Whether `insn` is one a walk to `stop` stops at. */
export function stopsAt(stop: Stop, insn: FlowInsn): boolean {
  const c = insn.info & 15;
  switch (stop) {
    case Stop.Never:
      return false;
    case Stop.MovCr3:
      return insn.has(InsnFact.MovCr3);
    case Stop.Skl014:
      if (c === FlowClass.Jump || c === FlowClass.Call) return insn.has(InsnFact.Direct);
      return c === FlowClass.Other && insn.has(InsnFact.MovCr3);
    case Stop.Ptwrite:
      return c === FlowClass.Ptwrite;
    case Stop.Iret:
      return insn.has(InsnFact.IretLike);
    case Stop.VmEntry:
      return insn.has(InsnFact.VmEntry);
    case Stop.Uiret:
      return insn.has(InsnFact.Uiret);
    case Stop.SoftInt:
      return insn.has(InsnFact.SoftInt);
    case Stop.Syscall:
      return insn.has(InsnFact.SyscallLike);
    case Stop.Pip:
      return bindsToPip(insn);
    default:
      return bindsToVmcs(insn);
  }
}

/** Most instructions in a block (libipt's 16-bit `ninsn`). */
export const MAX_BLOCK_INSNS = 0xffff;

export class BlockStep extends FlowState {
  /** Scratch instructions: the walk's current one, and one for look-aside decodes. */
  protected readonly insn = new FlowInsn();
  private readonly one = new FlowInsn();
  protected readonly probe = new FlowInsn();
  /**
   * The most instructions the current block may hold: {@link MAX_BLOCK_INSNS}, less
   * while the loop guard cuts blocks (see loop-guard.ts).
   */
  protected insnCap = MAX_BLOCK_INSNS;

  /**
   * Decode the instruction at the IP and add it to `block`, into `insn`
   * (libipt `pt_blk_proceed_one_insn`): 1 added, 0 it does not fit (block full, other
   * section, after a truncated instruction), or -error.
   */
  protected proceedOneInsn(block: Block, insn: FlowInsn): number {
    const ninsn = block.ninsn + 1;
    if (ninsn > this.insnCap || block.truncated) return 0;
    const one = this.one;
    one.reset(this.ipHi, this.ipLo, this.mode);
    const status = this.code.decode(one);
    if (status < 0) return status;
    return this.addInsn(block, insn, ninsn);
  }

  /**
   * {@link proceedOneInsn} where the IP is at offset `off` of the current section
   * (`code.msec`, which has a cache): decoded there, without looking the IP up in the
   * image, which finds the same section. Only an instruction that runs past the
   * section's end (truncated, or no instruction) goes the image's way.
   */
  protected proceedOneInsnAt(block: Block, insn: FlowInsn, off: number): number {
    const ninsn = block.ninsn + 1;
    if (ninsn > this.insnCap || block.truncated) return 0;
    const one = this.one;
    one.reset(this.ipHi, this.ipLo, this.mode);
    const status = this.code.msec.decodeAt(off, one);
    if (status < 0) return status === -ErrorCode.BadInsn ? this.proceedOneInsn(block, insn) : status;
    return this.addInsn(block, insn, ninsn);
  }

  /** The end of {@link proceedOneInsn}: add the decoded `one` to `block` as its `ninsn`th, into `insn`. */
  private addInsn(block: Block, insn: FlowInsn, ninsn: number): number {
    const one = this.one;
    if (one.isid !== block.isid) {
      if (block.ninsn !== 0) return 0;
      block.isid = one.isid;
    }
    if (one.truncated) {
      block.raw.set(one.raw.subarray(0, one.size));
      block.size = one.size;
      block.truncated = true;
    }
    this.logCall(one);
    block.iclass = (one.info & 15) as FlowClass;
    block.lastClass = one.iclass;
    block.endIpHi = one.ipHi;
    block.endIpLo = one.ipLo;
    block.ninsn = ninsn;
    if (this.hasIcnt) {
      if (this.icnt === 0xffffffff) return -ErrorCode.Overflow;
      this.icnt += 1;
    }
    insn.copyFrom(one);
    return 1;
  }

  /** Whether the user asked to end blocks after this (direct) call or jump. */
  protected endsBlock(insn: FlowInsn): boolean {
    const c = insn.info & 15;
    return (this.endOnCall && c === FlowClass.Call) || (this.endOnJump && c === FlowClass.Jump);
  }

  /**
   * Walk without trace until an instruction `stop` matches (libipt
   * `pt_blk_proceed_to_insn`): 1 reached (the IP is still at it), 0 the block ended,
   * -BadQuery trace is needed after `insn`, or -error.
   */
  protected proceedToInsn(block: Block, insn: FlowInsn, stop: Stop): number {
    for (;;) {
      const status = this.proceedOneInsn(block, insn);
      if (status <= 0) return status;
      if (stopsAt(stop, insn)) return 1;
      const err = nextIp(insn);
      if (err < 0) return err;
      this.setIp(next.hi, next.lo);
      if (this.endsBlock(insn)) return 0;
    }
  }

  /**
   * Walk without trace until the IP is (hi:lo) (libipt `pt_blk_proceed_to_ip`): 1
   * reached, 0 the block ended first, -BadQuery trace is needed after `insn`, or -error.
   */
  protected proceedToIp(block: Block, insn: FlowInsn, hi: number, lo: number): number {
    for (;;) {
      if (this.atIp(hi, lo)) return 1;
      const status = this.proceedOneInsn(block, insn);
      if (status <= 0) return status;
      const err = nextIp(insn);
      if (err < 0) return err;
      this.setIp(next.hi, next.lo);
      if (this.endsBlock(insn)) return this.atIp(hi, lo) ? 1 : 0;
    }
  }
}
