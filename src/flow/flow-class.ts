/**
 * How the flow decoders see an instruction: libipt's coarse `pt_insn_class` (what
 * blocks and instructions report, and what ptxed prints and checks) plus the few
 * facts about specific instructions that decide where events bind (libipt's
 * `pt_insn_ext` queries: MOV CR3, VMLAUNCH, IRET, ...).
 *
 * The isa layer's {@link InsnClass} is richer; {@link classify} maps it down the way
 * libipt's own instruction length decoder classifies: for instance UD2, HLT, XBEGIN
 * and AMD's VMRUN are "other", INT n is a far call and VMLAUNCH a far return.
 */
import { InsnClass } from "../isa/index.js";

/** libipt's `pt_insn_class`, same numbers. */
export const FlowClass = {
  /** Not classified (a block ending in a cache trampoline, a failed decode). */
  Unknown: 0,
  Other: 1,
  /** Near call, direct or indirect. */
  Call: 2,
  /** Near return. */
  Return: 3,
  /** Near unconditional jump, direct or indirect. */
  Jump: 4,
  CondJump: 5,
  /** Call-like far transfer: far CALL, INT n, SYSCALL, SYSENTER, VMCALL. */
  FarCall: 6,
  /** Return-like far transfer: far RET, IRET, SYSRET, SYSEXIT, VMLAUNCH, VMRESUME, UIRET. */
  FarReturn: 7,
  FarJump: 8,
  Ptwrite: 9,
  /**
   * libipt's blocks from its block cache end at an indirect jump or far transfer with
   * this class (they do not decode it). ptkit's block decoder reports the instruction's
   * own class there, as it does on the walk that filled the cache, so that consumers
   * (call stacks closing frames on far returns) see the same blocks on every visit.
   */
  Indirect: 10,
} as const;
export type FlowClass = (typeof FlowClass)[keyof typeof FlowClass];

/** Names as ptxed spells them. */
export const FLOW_CLASS_NAMES: readonly string[] = [
  "unknown",
  "other",
  "call",
  "return",
  "jump",
  "cond jump",
  "far call",
  "far return",
  "far jump",
  "ptwrite",
  "indirect",
];

/** Facts about an instruction beyond its {@link FlowClass}: bits. */
export const InsnFact = {
  /** A near branch with a displacement (direct jump, call, conditional jump). */
  Direct: 1 << 0,
  /** MOV to CR3: a PIP binds to it. */
  MovCr3: 1 << 1,
  /** VMLAUNCH or VMRESUME. */
  VmEntry: 1 << 2,
  /** VMPTRLD: a VMCS packet binds to it. */
  Vmptrld: 1 << 3,
  /** IRET, SYSRET, SYSEXIT, ERETS, ERETU: an Iret event binds to it. */
  IretLike: 1 << 4,
  /** UIRET. */
  Uiret: 1 << 5,
  /** INT n, INT3, INT1, INTO: a Swintr event binds to it. */
  SoftInt: 1 << 6,
  /** SYSCALL, SYSENTER. */
  SyscallLike: 1 << 7,
} as const;

/** The class and facts of one instruction, packed: class in bits 0-3, facts above. */
export const FACT_SHIFT = 4;

/**
 * The libipt view of an instruction the isa layer decoded: `fclass | facts << 4`.
 * `raw[start..start+length)` are its bytes; they separate the 0F 01 group (VMCALL/VMRUN/UIRET/
 * ERETS/...) that the isa classes merge.
 */
export function classify(iclass: InsnClass, raw: Uint8Array, start: number, length: number): number {
  const F = FlowClass;
  switch (iclass) {
    case InsnClass.CondBranch:
      return F.CondJump | (InsnFact.Direct << FACT_SHIFT);
    case InsnClass.Jump:
      return F.Jump | (InsnFact.Direct << FACT_SHIFT);
    case InsnClass.Call:
      return F.Call | (InsnFact.Direct << FACT_SHIFT);
    case InsnClass.JumpIndirect:
      return F.Jump;
    case InsnClass.CallIndirect:
      return F.Call;
    case InsnClass.Return:
      return F.Return;
    case InsnClass.FarCall:
      return F.FarCall;
    case InsnClass.FarJump:
      return F.FarJump;
    case InsnClass.FarReturn:
      return F.FarReturn;
    case InsnClass.Interrupt:
      return F.FarCall | (InsnFact.SoftInt << FACT_SHIFT);
    case InsnClass.Iret:
    case InsnClass.Sysret:
      return F.FarReturn | (InsnFact.IretLike << FACT_SHIFT);
    case InsnClass.Syscall:
      return F.FarCall | (InsnFact.SyscallLike << FACT_SHIFT);
    case InsnClass.PtWrite:
      return F.Ptwrite;
    case InsnClass.MovCr3:
      return F.Other | (InsnFact.MovCr3 << FACT_SHIFT);
    case InsnClass.Vmptrld:
      return F.Other | (InsnFact.Vmptrld << FACT_SHIFT);
    case InsnClass.VmEntry:
    case InsnClass.VmExit:
    case InsnClass.FarOther:
      return classifyGroup7(raw, start, length);
    default:
      return F.Other;
  }
}

/**
 * The 0F 01 /r register forms libipt knows by their ModRM byte, which for these
 * operand-less instructions is the last byte: C1 VMCALL, C2 VMLAUNCH, C3 VMRESUME,
 * EC UIRET, CA with F2 ERETS / F3 ERETU (the last F2/F3 prefix decides, as in
 * libipt). Everything else in these isa classes (VMRUN, VMMCALL, TDCALL, RSM, ...)
 * is "other" to libipt.
 */
function classifyGroup7(raw: Uint8Array, start: number, length: number): number {
  const F = FlowClass;
  if (length < 3) return F.Other;
  const end = start + length;
  const modrm = raw[end - 1]!;
  if (raw[end - 3] !== 0x0f || raw[end - 2] !== 0x01) return F.Other;
  switch (modrm) {
    case 0xc1:
      return F.FarCall;
    case 0xc2:
    case 0xc3:
      return F.FarReturn | (InsnFact.VmEntry << FACT_SHIFT);
    case 0xec:
      return F.FarReturn | (InsnFact.Uiret << FACT_SHIFT);
    case 0xca: {
      let last = 0;
      for (let i = start; i < end - 3; i++) {
        const b = raw[i]!;
        if (b === 0xf2 || b === 0xf3) last = b;
      }
      return last === 0 ? F.Other : F.FarReturn | (InsnFact.IretLike << FACT_SHIFT);
    }
    default:
      return F.Other;
  }
}
