/**
 * An independent answer for decodeInsn's tables: iced-x86's decoder (the iced Rust
 * decoder as WebAssembly), read the way ptkit used it on its hot path until the
 * table classifier replaced it. Test-only: ptkit itself loads iced for text alone.
 */
import {
  Code,
  Decoder,
  DecoderOptions,
  FlowControl,
  Instruction,
  Mnemonic,
  OpKind,
  Register,
} from "iced-x86";
import { EXEC_MODE_BITS, type ExecMode, InsnClass, InsnFlag } from "../../src/isa/types.js";

/** What iced says of one instruction, in InsnInfo's fields. */
export interface IcedAnswer {
  length: number;
  iclass: InsnClass;
  flags: number;
  targetHi: number;
  targetLo: number;
}

/** ptkit's class of the instruction iced decoded (its mnemonic and flow control). */
function classOf(ins: Instruction): InsnClass {
  const mn = ins.mnemonic;
  switch (ins.flowControl) {
    case FlowControl.ConditionalBranch:
      return InsnClass.CondBranch;
    case FlowControl.UnconditionalBranch:
      if (mn !== Mnemonic.Jmp) return InsnClass.FarOther;
      return ins.isJmpFar ? InsnClass.FarJump : InsnClass.Jump;
    case FlowControl.IndirectBranch:
      if (mn !== Mnemonic.Jmp) return InsnClass.FarOther;
      return ins.isJmpFarIndirect ? InsnClass.FarJump : InsnClass.JumpIndirect;
    case FlowControl.Call:
      switch (mn) {
        case Mnemonic.Call:
          return ins.isCallFar ? InsnClass.FarCall : InsnClass.Call;
        case Mnemonic.Syscall:
        case Mnemonic.Sysenter:
          return InsnClass.Syscall;
        case Mnemonic.Vmlaunch:
        case Mnemonic.Vmresume:
        case Mnemonic.Vmrun:
          return InsnClass.VmEntry;
        case Mnemonic.Vmcall:
        case Mnemonic.Vmmcall:
        case Mnemonic.Vmgexit:
        case Mnemonic.Tdcall:
          return InsnClass.VmExit;
        default:
          return InsnClass.FarOther; // SEAMCALL, SEAMRET
      }
    case FlowControl.IndirectCall:
      return ins.isCallFarIndirect ? InsnClass.FarCall : InsnClass.CallIndirect;
    case FlowControl.Return:
      switch (mn) {
        case Mnemonic.Ret:
          return InsnClass.Return;
        case Mnemonic.Retf:
          return InsnClass.FarReturn;
        case Mnemonic.Iret:
        case Mnemonic.Iretd:
        case Mnemonic.Iretq:
          return InsnClass.Iret;
        case Mnemonic.Sysret:
        case Mnemonic.Sysretq:
        case Mnemonic.Sysexit:
        case Mnemonic.Sysexitq:
          return InsnClass.Sysret;
        default:
          return InsnClass.FarOther; // UIRET, ERETU, ERETS, RSM, SKINIT
      }
    case FlowControl.Interrupt:
      return InsnClass.Interrupt;
    case FlowControl.Exception:
      return mn === Mnemonic.Ud0 || mn === Mnemonic.Ud1 || mn === Mnemonic.Ud2
        ? InsnClass.Ud
        : InsnClass.Other;
    default:
      switch (mn) {
        case Mnemonic.Xbegin:
          return InsnClass.Xbegin;
        case Mnemonic.Xend:
          return InsnClass.Xend;
        case Mnemonic.Xabort:
          return InsnClass.Xabort;
        case Mnemonic.Ptwrite:
          return InsnClass.PtWrite;
        case Mnemonic.Mwait:
          return InsnClass.Mwait;
        case Mnemonic.Hlt:
          return InsnClass.Hlt;
        case Mnemonic.Vmptrld:
          return InsnClass.Vmptrld;
        default:
          return (ins.code === Code.Mov_cr_r32 || ins.code === Code.Mov_cr_r64) &&
            ins.op0Register === Register.CR3
            ? InsnClass.MovCr3
            : InsnClass.Other;
      }
  }
}

const ins = new Instruction();

/**
 * iced's answer for the instruction at the start of `bytes` (at most 15 read) at IP
 * `hi:lo` (16/32-bit modes: `lo`, below 2^16 in 16-bit code), or undefined where iced
 * rejects the bytes.
 */
export function icedAnswer(
  bytes: Uint8Array,
  mode: ExecMode,
  hi: number,
  lo: number,
): IcedAnswer | undefined {
  const bits = EXEC_MODE_BITS[mode]!;
  const decoder = new Decoder(bits, bytes.subarray(0, 15), DecoderOptions.None);
  decoder.ip = bits === 64 ? (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0) : BigInt(lo >>> 0);
  decoder.decodeOut(ins);
  decoder.free();
  if (ins.code === Code.INVALID) return undefined;
  const iclass = classOf(ins);
  const kind = ins.op0Kind;
  const near = kind === OpKind.NearBranch16 || kind === OpKind.NearBranch32 || kind === OpKind.NearBranch64;
  let flags = 0;
  let target = 0n;
  if (
    near &&
    (iclass === InsnClass.CondBranch ||
      iclass === InsnClass.Jump ||
      iclass === InsnClass.Call ||
      iclass === InsnClass.Xbegin)
  ) {
    flags = InsnFlag.Target;
    target = ins.nearBranchTarget;
    const mask =
      kind === OpKind.NearBranch16 ? 0xffffn : kind === OpKind.NearBranch32 ? 0xffffffffn : (1n << 64n) - 1n;
    if (iclass === InsnClass.Call && ((target - ins.nextIP) & mask) === 0n) flags |= InsnFlag.ZeroLengthCall;
  }
  return {
    length: ins.length,
    iclass,
    flags,
    targetHi: Number(target >> 32n),
    targetLo: Number(target & 0xffffffffn),
  };
}
