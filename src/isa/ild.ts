/**
 * Instruction lengths as libipt decodes them (its `pt_ild`, libipt 2.0): from the
 * prefixes, the opcode map and per-opcode tables of "has a ModRM byte", immediate
 * width and displacement width, without asking whether the opcode is defined. So
 * `FF FF` (FF /7, undefined) is 2 bytes, LOCK where LOCK is not allowed changes
 * nothing, XOP's 8F is POP r/m, and 0F 39 is a "three-byte" opcode with a ModRM.
 * ptxed walks through such bytes; ptkit must too, or it stops earlier than ptxed on
 * the same trace. libipt reports an error only when the bytes end before the
 * instruction does (15 at most) and for a VEX (C4) map field of 5 or more.
 *
 * {@link decodeInsn} is {@link ildDecode}'s length and class: libipt's (opcode and
 * ModRM.reg), refined by prefixes and the full ModRM where ptkit tells apart more.
 *
 * The tables below are ours, written from the x86 opcode maps and checked against
 * libipt by test/isa/ild-libipt.test.ts. Everything runs over the caller's bytes with
 * its state in locals: nothing is allocated per instruction.
 */
import { InsnClass, InsnFlag, InsnInfo } from "./types.js";

// The classes and flags as module constants, not properties of the imported objects:
// a property is loaded (the binding checked) at each use, and one on a path that had
// not run when V8 optimised ildDecode (a call to the very next instruction: PIC code's
// "get my address") threw the optimised code away, with that of the callers it was
// inlined into, in the middle of a first run's decision-graph building.
const {
  Call,
  CallIndirect,
  CondBranch,
  FarCall,
  FarJump,
  FarOther,
  FarReturn,
  Hlt,
  Interrupt,
  Iret,
  Jump,
  JumpIndirect,
  MovCr3,
  Mwait,
  Other,
  PtWrite,
  Return,
  Syscall,
  Sysret,
  Ud,
  VmEntry,
  VmExit,
  Vmptrld,
  Xabort,
  Xbegin,
  Xend,
} = InsnClass;
const { Target: TARGET, ZeroLengthCall: ZERO_LENGTH_CALL } = InsnFlag;
const TARGET_ZERO_LENGTH_CALL = TARGET | ZERO_LENGTH_CALL;

/**
 * Group FF's class by ModRM.reg: a table, where a compare for the far forms (rarer)
 * first ran once V8 had optimised ildDecode, and threw its code away.
 */
const GROUP_FF = Uint8Array.of(Other, Other, CallIndirect, FarCall, JumpIndirect, FarJump, Other, Other);

const TWO_32 = 4294967296;

/** One table row per character: 16 rows of 16 opcodes. */
function table(rows: readonly string[]): Uint8Array {
  const t = new Uint8Array(256);
  for (let r = 0; r < 16; r++) for (let c = 0; c < 16; c++) t[r * 16 + c] = rows[r]!.charCodeAt(c);
  return t;
}

/*
 * ModRM: '1' the opcode has a ModRM byte; 'r' it has one whose mod is ignored (no SIB,
 * no displacement: MOV to/from CR/DR); '.' none. Maps 2 and 3 (0F 38, 0F 3A), 3DNow!
 * and the undefined 0F 39/3B-3F maps always have one. Prefix bytes and undefined
 * one-byte opcodes have none.
 */
const MODRM_0 = table([
  "1111....1111....",
  "1111....1111....",
  "1111....1111....",
  "1111....1111....",
  "................",
  "................",
  "..11.....1.1....",
  "................",
  "1111111111111111",
  "................",
  "................",
  "................",
  "11..1111........",
  "1111....11111111",
  "................",
  "......11......11",
]);
const MODRM_1 = table([
  "1111.........1..", // 0F 0D prefetch; 0F 0F (3DNow!) is its own map
  "1111111111111111",
  "rrrr....11111111",
  "................",
  "1111111111111111",
  "1111111111111111",
  "1111111111111111",
  "1111111.11111111",
  "................",
  "1111111111111111",
  "...111.....11111",
  "111111111.111111", // 0F B9 (UD1) has none here
  "11111111........",
  "1111111111111111",
  "1111111111111111",
  "111111111111111.", // 0F FF (UD0) has none here
]);

/*
 * Immediates: 'b' 8 bits; 'w' 16; 'z' 16 or 32 by operand size; 'v' 16, 32 or 64 by
 * operand size; 'p' like 'z' with a 64-bit default operand size (PUSH imm); 'e' 16
 * then 8 (ENTER); 'f' 8 bits if ModRM.reg < 2 (F6 TEST); 'g' 'z' if ModRM.reg < 2
 * (F7 TEST); 'c' 'z' if ModRM.reg is 0 (C7 MOV, not XBEGIN); 'x' 8 then 8 with a 66 or
 * F2 prefix (0F 78: SSE4a EXTRQ/INSERTQ, not VMREAD). Map 3 always has an 8-bit one.
 */
const IMM_0 = table([
  "....bz......bz..",
  "....bz......bz..",
  "....bz......bz..",
  "....bz......bz..",
  "................",
  "................",
  "........pzbb....",
  "................",
  "bzbb............",
  "..........w.....",
  "........bz......",
  "bbbbbbbbvvvvvvvv",
  "bbw...bce.w..b..",
  "....bb..........",
  "....bbbb..w.....",
  "......fg........",
]);
const IMM_1 = table([
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "bbbb....x.......",
  "................",
  "................",
  "....b.......b...",
  "..........b.....",
  "..b.bbb.........",
  "................",
  "................",
  "................",
]);

/*
 * Displacements other than ModRM's: '1' rel8; 'j' rel32 in 64-bit mode, else 16 or 32
 * by operand size (CALL/JMP/Jcc rel); 'z' 16 or 32 by operand size (the offset of a
 * far pointer, 9A and EA, in every mode); 'm' 16, 32 or 64 by address size (MOV moffs);
 * 'c' 'z' if ModRM.reg is 7 and ModRM gave none (C7 F8: XBEGIN).
 */
const DISP_0 = table([
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "1111111111111111",
  "................",
  "..........z.....",
  "mmmm............",
  "................",
  ".......c........",
  "................",
  "1111....jjz1....",
  "................",
]);
const DISP_1 = table([
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "jjjjjjjjjjjjjjjj",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
  "................",
]);

const CH_MODRM = 0x31; // '1'
const CH_REG_ONLY = 0x72; // 'r'

/** Opcode maps, numbered as in VEX's map field (0 is the one-byte map). */
const MAP_0 = 0;
const MAP_1 = 1;
const MAP_3 = 3;
const MAP_3DNOW = 4;
const MAP_NONE = 5;

/** The 2-byte (16-bit) or 4-byte (32/64-bit) size of a 'z' immediate or displacement. */
const zBytes = (bits: number): number => (bits === 16 ? 2 : 4);

/**
 * Decode the instruction at `bytes[at]` in `execMode` (1, 2, 3: 16-, 32-, 64-bit),
 * when at most `max` (1..15) bytes are there: its length, or -1 where libipt reports
 * `pte_bad_insn` (then `out` is left as it was). Fills `out` with the length, the
 * class and, for direct branches (and XBEGIN), the target (see below).
 *
 * One function, its state in locals: the prefixes, the opcode map, ModRM and SIB,
 * displacement and immediate, then the class. (In pieces, each piece was compiled by
 * V8 on its own and again inside each caller it was inlined into: on a first run over
 * a large program the compiles cost more than the decoding.)
 *
 * The classes are libipt's (by opcode and ModRM.reg, prefixes aside; nothing
 * VEX-encoded or beyond map 1 changes the flow), refined by what the x86 manuals say
 * of the encodings libipt lumps together or does not know: the far transfers and the
 * instructions Intel PT emits other packets for (XBEGIN, HLT, MWAIT, AMD's VMRUN,
 * ...) that only ptkit tells apart. Those need their exact encoding: the mandatory
 * prefix (the last F2/F3, else 66) where the opcode map has one, and no LOCK (which
 * makes them undefined: #UD). The target is ip + length + displacement, wrapped to 64
 * bits in 64-bit mode, else to the operand size (XBEGIN: to 32 bits, the SDM adds its
 * sign-extended rel16 to EIP). test/isa/classify.test.ts holds the classes to iced-x86's
 * decoder instruction by instruction, and test/isa/ild-libipt.test.ts lengths and
 * classes to libipt.
 */
export function ildDecode(
  bytes: Uint8Array,
  at: number,
  max: number,
  execMode: number,
  ipHi: number,
  ipLo: number,
  out: InsnInfo,
): number {
  if (execMode < 1 || execMode > 3) return -1;
  const mode = execMode;
  const is64 = mode === 3;
  let osz = 0;
  let asz = 0;
  let f3 = 0;
  /** The last F2 (2) or F3 (3) prefix, 0 for none. */
  let lastF2F3 = 0;
  let lock = 0;
  let vex = 0;
  let rexR = 0;
  let rexW = 0;
  let map = MAP_NONE;
  let opcode = 0;
  let modrm = 0;
  let dispBytes = 0;
  let dispPos = 0;
  let imm = 0;

  // Legacy prefixes and REX; VEX and EVEX take the opcode map from their payload.
  let i = 0;
  let rex = 0;
  for (;;) {
    if (i >= max) return -1;
    const b = bytes[at + i]!;
    if (b === 0x26 || b === 0x2e || b === 0x36 || b === 0x3e || b === 0x64 || b === 0x65) {
      // Segment overrides: no effect on the length.
    } else if (b === 0xf0)
      lock = 1; // no effect on the length either
    else if (b === 0x66) osz = 1;
    else if (b === 0x67) asz = 1;
    else if (b === 0xf2) lastF2F3 = 2;
    else if (b === 0xf3) {
      f3 = 1;
      lastF2F3 = 3;
    } else if ((b & 0xf0) === 0x40 && is64) {
      // A REX counts only right before the opcode: the next legacy prefix drops it.
      rex = b;
      i++;
      continue;
    } else if ((b === 0xc4 || b === 0xc5 || b === 0x62) && i + 1 < max) {
      // Outside 64-bit mode, ModRM.mod != 3 makes it LES, LDS or BOUND.
      const p1 = bytes[at + i + 1]!;
      if (!is64 && (p1 & 0xc0) !== 0xc0) {
        map = MAP_0;
        opcode = b;
        i++;
        break;
      }
      // Payload bytes plus the opcode byte.
      const size = b === 0xc5 ? 3 : b === 0xc4 ? 4 : 5;
      if (max < i + size) return -1;
      vex = 1;
      if (p1 & 0x80) rexR = 1;
      if (b === 0xc5) map = MAP_1;
      else {
        if (bytes[at + i + 2]! & 0x80) rexW = 1;
        map = b === 0xc4 ? p1 & 0x1f : p1 & 3;
        if (map >= MAP_NONE) return -1;
        if (map === MAP_3) imm = 1;
      }
      opcode = bytes[at + i + size - 1]!;
      i += size;
      break;
    } else if (b === 0xc4 || b === 0xc5 || b === 0x62) {
      return -1;
    } else {
      if (rex & 4) rexR = 1;
      if (rex & 8) rexW = 1;
      // The opcode: one byte, 0F xx, 0F 38 xx, 0F 3A xx, or 3DNow!'s 0F 0F.
      if (b !== 0x0f) {
        map = MAP_0;
        opcode = b;
        i++;
        break;
      }
      i++;
      if (i >= max) return -1;
      const m = bytes[at + i]!;
      i++;
      if (m === 0x0f) {
        // 3DNow!: ModRM, then the real opcode as an 8-bit "immediate".
        map = MAP_3DNOW;
        opcode = 0x0f;
      } else if ((m & 0xf8) !== 0x38) {
        map = MAP_1;
        opcode = m;
      } else {
        // 0F 38 and 0F 3A are maps 2 and 3; 0F 39 and 0F 3B-3F take a third byte too.
        map = m === 0x38 ? 2 : m === 0x3a ? MAP_3 : MAP_NONE;
        if (map === MAP_3) imm = 1;
        if (i >= max) return -1;
        opcode = bytes[at + i]!;
        i++;
      }
      break;
    }
    rex = 0;
    i++;
  }

  // Operand and address sizes in bits; 'df64': a 64-bit default operand size.
  const eosz = is64 ? (rexW ? 64 : osz ? 16 : 32) : (mode === 2) !== (osz === 1) ? 32 : 16;
  const easz = is64 ? (asz ? 32 : 64) : (mode === 2) !== (asz === 1) ? 32 : 16;

  // ModRM, SIB and the displacement they imply.
  const has = map > MAP_1 ? CH_MODRM : (map === MAP_0 ? MODRM_0 : MODRM_1)[opcode]!;
  if (has === CH_MODRM || has === CH_REG_ONLY) {
    if (i >= max) return -1;
    modrm = bytes[at + i]!;
    i++;
    if (has === CH_MODRM) {
      const mod = modrm >>> 6;
      const rm = modrm & 7;
      if (easz === 16) {
        dispBytes = mod === 1 ? 1 : mod === 2 || (mod === 0 && rm === 6) ? 2 : 0;
      } else {
        dispBytes = mod === 1 ? 1 : mod === 2 || (mod === 0 && rm === 5) ? 4 : 0;
        if (mod !== 3 && rm === 4) {
          // SIB; base 5 with mod 0 means a 32-bit displacement and no base.
          if (i >= max) return -1;
          if ((bytes[at + i]! & 7) === 5 && mod === 0) dispBytes = 4;
          i++;
        }
      }
    }
  }
  const reg = (modrm >>> 3) & 7;

  // Displacements the opcode implies.
  if (dispBytes === 0 && map <= MAP_1) {
    switch ((map === MAP_0 ? DISP_0 : DISP_1)[opcode]) {
      case 0x31: // '1'
        dispBytes = 1;
        break;
      case 0x6a: // 'j'
        dispBytes = is64 ? 4 : zBytes(eosz);
        break;
      case 0x7a: // 'z'
        dispBytes = zBytes(eosz);
        break;
      case 0x6d: // 'm'
        dispBytes = easz >>> 3;
        break;
      case 0x63: // 'c'
        if (reg === 7) dispBytes = zBytes(eosz);
        break;
    }
  }
  if (dispBytes !== 0) {
    if (i + dispBytes > max) return -1;
    dispPos = i;
    i += dispBytes;
  }

  // Immediates.
  if (map === MAP_3DNOW) {
    if (i >= max) return -1;
    i++;
  } else {
    if (map <= MAP_1) {
      switch ((map === MAP_0 ? IMM_0 : IMM_1)[opcode]) {
        case 0x62: // 'b'
          imm = 1;
          break;
        case 0x77: // 'w'
          imm = 2;
          break;
        case 0x7a: // 'z'
          imm = zBytes(eosz);
          break;
        case 0x76: // 'v'
          imm = eosz >>> 3;
          break;
        case 0x70: // 'p'
          imm = zBytes(is64 ? (rexW ? 64 : osz ? 16 : 64) : eosz);
          break;
        case 0x65: // 'e'
          imm = 3;
          break;
        case 0x66: // 'f'
          if (reg < 2) imm = 1;
          break;
        case 0x67: // 'g'
          if (reg < 2) imm = zBytes(eosz);
          break;
        case 0x63: // 'c'
          if (reg === 0) imm = zBytes(eosz);
          break;
        case 0x78: // 'x'
          if (osz || lastF2F3 === 2) imm = 2;
          break;
      }
    }
    i += imm;
    if (i > max) return -1;
  }
  const length = i;

  // The class.
  let iclass: InsnClass = Other;
  let direct = false;
  if (!vex && map === MAP_0) {
    const op = opcode;
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
      iclass = CondBranch;
      direct = true;
    } else if (op === 0xe8) {
      iclass = Call;
      direct = true;
    } else if (op === 0xe9 || op === 0xeb) {
      iclass = Jump;
      direct = true;
    } else if (op === 0xff) iclass = GROUP_FF[reg] as InsnClass;
    else if (op === 0x9a) iclass = FarCall;
    else if (op === 0xea) iclass = FarJump;
    else if (op === 0xcc || op === 0xcd || op === 0xce || op === 0xf1) iclass = Interrupt;
    else if (op === 0xcf) iclass = Iret;
    else if (op === 0xc2 || op === 0xc3) iclass = Return;
    else if (op === 0xca || op === 0xcb) iclass = FarReturn;
    else if (!lock) {
      if (op === 0xf4) iclass = Hlt;
      else if (op === 0xc6 && modrm === 0xf8) iclass = Xabort;
      else if (op === 0xc7 && modrm === 0xf8) {
        iclass = Xbegin;
        direct = true;
      }
    }
  } else if (!vex && map === MAP_1) {
    const op = opcode;
    if (op >= 0x80 && op <= 0x8f) {
      iclass = CondBranch;
      direct = true;
    } else if (op === 0x05 || op === 0x34) iclass = Syscall;
    else if (op === 0x07 || op === 0x35) iclass = Sysret;
    else if (op === 0x22 && reg === 3 && !rexR) iclass = MovCr3;
    else if (op === 0x01) iclass = group7Class(modrm, lock, osz, lastF2F3, is64);
    else if (op === 0xc7 && reg === 6 && modrm >>> 6 !== 3) {
      // 66 (no F2/F3): VMCLEAR; F3: VMXON. libipt calls all three VMPTRLD.
      const other = !lock && (lastF2F3 === 3 || (osz && lastF2F3 === 0));
      iclass = other ? Other : Vmptrld;
    }
    // ptkit's class, not libipt's: UD2/UD1/UD0 raise #UD whatever their length (libipt
    // 2.0 gives UD1 and UD0 no ModRM, so iced, which does, measures them otherwise).
    else if (op === 0x0b || op === 0xb9 || op === 0xff) iclass = Ud;
    else if (op === 0xae && reg === 4 && f3 && !osz) iclass = PtWrite;
    else if (op === 0xaa && !lock) iclass = FarOther; // RSM
  }
  out.length = length;
  out.iclass = iclass;
  if (!direct || dispBytes === 0) {
    out.flags = 0;
    out.targetHi = 0;
    out.targetLo = 0;
    return length;
  }
  const p = at + dispPos;
  const disp =
    dispBytes === 1
      ? (bytes[p]! << 24) >> 24
      : dispBytes === 2
        ? ((bytes[p]! | (bytes[p + 1]! << 8)) << 16) >> 16
        : bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24);
  const rel = length + disp;
  // (No operator on the rare path: one that had not run when V8 optimised this would throw the code away.)
  const flags = iclass === Call && disp === 0 ? TARGET_ZERO_LENGTH_CALL : TARGET;
  if (is64) {
    const sum = (ipLo >>> 0) + rel;
    const lo = sum >>> 0;
    out.targetLo = lo;
    out.targetHi = ((ipHi >>> 0) + (sum - lo) / TWO_32) >>> 0;
  } else {
    out.targetLo = eosz === 16 && iclass !== Xbegin ? (ipLo + rel) & 0xffff : (ipLo + rel) >>> 0;
    out.targetHi = 0;
  }
  out.flags = flags;
  return length;
}

/** Scratch for {@link ildLength}. */
const lengthOnly = new InsnInfo();

/** The length {@link ildDecode} finds (or -1): libipt's `pt_ild` alone, for tests. */
export function ildLength(bytes: Uint8Array, at: number, max: number, execMode: number): number {
  return ildDecode(bytes, at, max, execMode, 0, 0, lengthOnly);
}

/**
 * The class of a 0F 01 instruction (group 7) with a register ModRM: the VMX and SVM
 * entries and exits, TSX's XEND, MWAIT, and the far transfers of newer extensions.
 * Which one a ModRM byte is depends on the mandatory prefix: none (no 66, F2 or F3)
 * for XEND and MWAIT; 66 without F2/F3 for TDCALL, SEAMRET, SEAMCALL (the last two in
 * 64-bit mode only); F2 or F3 for ERETS, ERETU (64-bit mode only).
 */
function group7Class(modrm: number, lock: number, osz: number, lastF2F3: number, is64: boolean): InsnClass {
  switch (modrm) {
    // libipt's own (any prefix, even LOCK): VMCALL, VMLAUNCH, VMRESUME, UIRET.
    case 0xc1:
      return VmExit;
    case 0xc2:
    case 0xc3:
      return VmEntry;
    case 0xec:
      return FarOther;
  }
  if (lock) return Other;
  const none = !osz && lastF2F3 === 0;
  const only66 = osz && lastF2F3 === 0;
  switch (modrm) {
    case 0xd8: // VMRUN
      return VmEntry;
    case 0xd9: // VMMCALL; F2/F3: VMGEXIT
      return VmExit;
    case 0xde: // SKINIT
      return FarOther;
    case 0xd5:
      return none ? Xend : Other;
    case 0xc9:
      return none ? Mwait : Other;
    case 0xcc: // TDCALL
      return only66 ? VmExit : Other;
    case 0xcd: // SEAMRET
    case 0xcf: // SEAMCALL
      return only66 && is64 ? FarOther : Other;
    case 0xca: // ERETU (F3), ERETS (F2)
      return lastF2F3 !== 0 && is64 ? FarOther : Other;
  }
  return Other;
}
