/**
 * The instruction record shared by the trace-unit model and the flow decoder.
 *
 * {@link decodeInsn} and {@link InsnCache} fill one reusable {@link InsnInfo}; every
 * field is a plain number (one object shape, nothing allocated per instruction).
 * Branch targets are 64-bit, so they travel as two unsigned 32-bit halves like every
 * other 64-bit value in ptkit; {@link InsnInfo.target} joins them at the API edge.
 *
 * Nothing in this module knows about the x86 decoder behind it: the rest of ptkit
 * sees only these numbers.
 */
import { toBigInt } from "../base/halves.js";

/**
 * Execution modes, numbered like libipt's `pt_exec_mode` (`ptem_unknown`,
 * `ptem_16bit`, `ptem_32bit`, `ptem_64bit`).
 */
export const ExecMode = {
  Unknown: 0,
  Bits16: 1,
  Bits32: 2,
  Bits64: 3,
} as const;
export type ExecMode = (typeof ExecMode)[keyof typeof ExecMode];

/** Address and operand width of each {@link ExecMode}; 0 for Unknown. */
export const EXEC_MODE_BITS: readonly number[] = [0, 16, 32, 64];

/**
 * The execution mode a MODE.Exec packet announces: CS.L selects 64-bit code, else
 * CS.D selects 32-bit code, else 16-bit. CS.L and CS.D both set is reserved
 * (libipt reports `ptem_unknown`).
 */
export function execModeFromCs(csl: boolean, csd: boolean): ExecMode {
  if (csl) return csd ? ExecMode.Unknown : ExecMode.Bits64;
  return csd ? ExecMode.Bits32 : ExecMode.Bits16;
}

/**
 * The categories of SDM Table 33-1 ("COFI Type for Branch Instructions", section
 * 33.2.1 of the seed document `shared/spec/001_*.txt`), which decide what Intel PT
 * emits for an instruction.
 */
export const CofiType = {
  /** Not a change of flow instruction. */
  None: 0,
  /** "Conditional Branch": one TNT bit (33.2.1.1). */
  Conditional: 1,
  /** "Unconditional Direct Branch": nothing; the target is in the bytes (33.2.1.1). */
  Direct: 2,
  /** "Indirect Branch": a TIP, or a taken TNT bit for a compressed RET (33.2.1.2). */
  Indirect: 3,
  /** "Far Transfers": a TIP, after a FUP when the source cannot be inferred (33.2.1.3). */
  Far: 4,
} as const;
export type CofiType = (typeof CofiType)[keyof typeof CofiType];

/**
 * Instruction classes: the rows of Table 33-1 split by instruction, plus the
 * instructions Intel PT emits other packets for. Numbering is ptkit's own.
 *
 * | class        | Table 33-1 row              | instructions |
 * |--------------|-----------------------------|--------------|
 * | CondBranch   | Conditional Branch          | Jcc (70-7F, 0F 80-8F), JCXZ/JECXZ/JRCXZ (E3), LOOP/LOOPE/LOOPNE (E0-E2) |
 * | Jump         | Unconditional Direct Branch | JMP rel (E9, EB) |
 * | Call         | Unconditional Direct Branch | CALL rel (E8) |
 * | JumpIndirect | Indirect Branch             | JMP r/m (FF /4); APX JMPABS (absolute target in the bytes, `Target` set, but Intel PT gives it a TIP) |
 * | CallIndirect | Indirect Branch             | CALL r/m (FF /2) |
 * | Return       | Indirect Branch             | RET (C3, C2 iw) |
 * | FarCall      | Far Transfers               | CALL ptr (9A), CALL m16:xx (FF /3) |
 * | FarJump      | Far Transfers               | JMP ptr (EA), JMP m16:xx (FF /5) |
 * | FarReturn    | Far Transfers               | RET far (CB, CA iw) |
 * | Interrupt    | Far Transfers               | INT1 (F1), INT3 (CC), INT n (CD ib), INTO (CE) |
 * | Iret         | Far Transfers               | IRET, IRETD, IRETQ (CF) |
 * | Syscall      | Far Transfers               | SYSCALL (0F 05), SYSENTER (0F 34) |
 * | Sysret       | Far Transfers               | SYSRET (0F 07), SYSEXIT (0F 35) |
 * | VmEntry      | Far Transfers               | VMLAUNCH (0F 01 C2), VMRESUME (0F 01 C3); also AMD VMRUN |
 *
 * Far transfers not in the table (33.2.1.3: "all operations that change the IP and
 * are not near jumps"): VmExit (VMCALL, AMD VMMCALL/VMGEXIT, TDCALL: they always
 * leave the guest), FarOther (UIRET, ERETU/ERETS, RSM, SEAMCALL/SEAMRET, SKINIT,
 * JMPE and vendor oddities) and Ud (UD0/UD1/UD2: they always raise #UD, an exception).
 *
 * Not changes of flow, but Intel PT emits packets for them: PtWrite (PTW, F3 0F AE /4),
 * MovCr3 (PIP, 0F 22 /3 with CR3), Xbegin/Xend/Xabort (MODE.TSX; XBEGIN's fallback
 * address is its direct target), Mwait (MWAIT, 0F 01 C9) and Hlt (F4) (power event
 * trace: EXSTOP/MWAIT/PWRE), Vmptrld (VMCS, 0F C7 /6).
 */
export const InsnClass = {
  Other: 0,
  CondBranch: 1,
  Jump: 2,
  Call: 3,
  JumpIndirect: 4,
  CallIndirect: 5,
  Return: 6,
  FarCall: 7,
  FarJump: 8,
  FarReturn: 9,
  Interrupt: 10,
  Iret: 11,
  Syscall: 12,
  Sysret: 13,
  VmEntry: 14,
  VmExit: 15,
  FarOther: 16,
  Ud: 17,
  PtWrite: 18,
  MovCr3: 19,
  Xbegin: 20,
  Xend: 21,
  Xabort: 22,
  Mwait: 23,
  Hlt: 24,
  Vmptrld: 25,
} as const;
export type InsnClass = (typeof InsnClass)[keyof typeof InsnClass];

/** Number of instruction classes, for tables indexed by class. */
export const INSN_CLASS_COUNT = 26;

/** Class names for tools and messages. */
export const INSN_CLASS_NAMES: readonly string[] = [
  "other",
  "cond-branch",
  "jump",
  "call",
  "jump-indirect",
  "call-indirect",
  "return",
  "far-call",
  "far-jump",
  "far-return",
  "interrupt",
  "iret",
  "syscall",
  "sysret",
  "vm-entry",
  "vm-exit",
  "far-other",
  "ud",
  "ptwrite",
  "mov-cr3",
  "xbegin",
  "xend",
  "xabort",
  "mwait",
  "hlt",
  "vmptrld",
];

const C = CofiType;
/** The Table 33-1 category of each {@link InsnClass}. */
export const COFI_TYPE: readonly CofiType[] = [
  C.None, // Other
  C.Conditional, // CondBranch
  C.Direct, // Jump
  C.Direct, // Call
  C.Indirect, // JumpIndirect
  C.Indirect, // CallIndirect
  C.Indirect, // Return
  C.Far, // FarCall
  C.Far, // FarJump
  C.Far, // FarReturn
  C.Far, // Interrupt
  C.Far, // Iret
  C.Far, // Syscall
  C.Far, // Sysret
  C.Far, // VmEntry
  C.Far, // VmExit
  C.Far, // FarOther
  C.Far, // Ud
  C.None, // PtWrite
  C.None, // MovCr3
  C.None, // Xbegin
  C.None, // Xend
  C.None, // Xabort
  C.None, // Mwait
  C.None, // Hlt
  C.None, // Vmptrld
];

/** The Table 33-1 category of an instruction class. */
export function cofiType(iclass: number): CofiType {
  return COFI_TYPE[iclass] ?? CofiType.None;
}

/** Bits of {@link InsnInfo.flags}. */
export const InsnFlag = {
  /** `targetHi`/`targetLo` hold the direct target (CondBranch, Jump, Call, Xbegin, and JMPABS among the JumpIndirect). */
  Target: 1 << 0,
  /**
   * A near direct CALL with displacement 0 (its target is the next instruction).
   * Intel PT does not push these on its RET-compression stack (SDM "Indirect Transfer
   * Compression for Returns (RET)", seed document `shared/spec/000_*.txt`).
   */
  ZeroLengthCall: 1 << 1,
} as const;

/** One decoded instruction. One instance is reused for every instruction of a loop. */
export class InsnInfo {
  /** Size in bytes (1..15); 0 when the last decode failed. */
  length = 0;
  /** {@link InsnClass}. */
  iclass: InsnClass = InsnClass.Other;
  /** {@link InsnFlag} bits. */
  flags = 0;
  /** High 32 bits of the direct target (0 in 16/32-bit modes). */
  targetHi = 0;
  /** Low 32 bits of the direct target (unsigned). */
  targetLo = 0;

  clear(): this {
    this.length = 0;
    this.iclass = InsnClass.Other;
    this.flags = 0;
    this.targetHi = 0;
    this.targetLo = 0;
    return this;
  }

  copyFrom(other: InsnInfo): this {
    this.length = other.length;
    this.iclass = other.iclass;
    this.flags = other.flags;
    this.targetHi = other.targetHi;
    this.targetLo = other.targetLo;
    return this;
  }

  /** The direct target as an exact BigInt, or undefined (API edge only). */
  get target(): bigint | undefined {
    return this.flags & InsnFlag.Target ? toBigInt(this.targetHi, this.targetLo) : undefined;
  }
}
