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
 * {@link decodeInsn} is this length and {@link ildFill}'s class: libipt's (opcode and
 * ModRM.reg), refined by prefixes and the full ModRM where ptkit tells apart more.
 *
 * The tables below are ours, written from the x86 opcode maps and checked against
 * libipt by test/isa/ild-libipt.test.ts. Everything runs over the caller's bytes with
 * module-level state: nothing is allocated per instruction.
 */
import { InsnClass, InsnFlag, type InsnInfo } from "./types.js";

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

/**
 * The last decode, in one module object, so that nothing is allocated per instruction.
 * Fields, not module `let`s: V8 checks a module variable's temporal dead zone at each
 * read and puts a write barrier on each write, which made the length decoder take
 * about 40 ns on a one-byte NOP.
 */
class IldState {
  declare mode: number;
  declare osz: number;
  declare asz: number;
  declare f3: number;
  declare lastF2F3: number;
  declare lock: number;
  declare vex: number;
  declare rexR: number;
  declare rexW: number;
  declare map: number;
  declare opcode: number;
  declare modrm: number;
  declare dispBytes: number;
  declare dispPos: number;
  declare imm1: number;
  declare imm2: number;

  constructor() {
    this.reset(0);
  }

  /** Nothing found yet, in `execMode`. */
  reset(execMode: number): void {
    this.mode = execMode;
    this.osz = 0;
    this.asz = 0;
    this.f3 = 0;
    this.lastF2F3 = 0;
    this.lock = 0;
    this.vex = 0;
    this.rexR = 0;
    this.rexW = 0;
    this.map = MAP_NONE;
    this.opcode = 0;
    this.modrm = 0;
    this.dispBytes = 0;
    this.dispPos = 0;
    this.imm1 = 0;
    this.imm2 = 0;
  }
}
const st = new IldState();

/** Effective operand size in bits. */
function eosz(): number {
  if (st.mode === 3) return st.rexW ? 64 : st.osz ? 16 : 32;
  return (st.mode === 2) !== (st.osz === 1) ? 32 : 16;
}

/** Effective operand size in bits for instructions that default to 64 bits in 64-bit mode. */
function eoszDf64(): number {
  if (st.mode === 3) return st.rexW ? 64 : st.osz ? 16 : 64;
  return eosz();
}

/** Effective address size in bits. */
function easz(): number {
  if (st.mode === 3) return st.asz ? 32 : 64;
  return (st.mode === 2) !== (st.asz === 1) ? 32 : 16;
}

const zBytes = (bits: number): number => (bits === 16 ? 2 : 4);
const vBytes = (bits: number): number => bits >>> 3;

/**
 * The length of the instruction at `bytes[at]` in `execMode` (1, 2, 3: 16-, 32-,
 * 64-bit) when at most `max` (1..15) bytes are there, or -1 where libipt reports
 * `pte_bad_insn`. Leaves what it found for {@link ildFill}.
 */
export function ildLength(bytes: Uint8Array, at: number, max: number, execMode: number): number {
  st.reset(execMode);
  if (st.mode < 1 || st.mode > 3) return -1;
  const is64 = st.mode === 3;
  let i = 0;
  let rex = 0;
  for (;;) {
    if (i >= max) return -1;
    const b = bytes[at + i]!;
    if (b === 0x26 || b === 0x2e || b === 0x36 || b === 0x3e || b === 0x64 || b === 0x65) {
      // Segment overrides: no effect on the length.
    } else if (b === 0xf0)
      st.lock = 1; // no effect on the length either
    else if (b === 0x66) st.osz = 1;
    else if (b === 0x67) st.asz = 1;
    else if (b === 0xf2) st.lastF2F3 = 2;
    else if (b === 0xf3) {
      st.f3 = 1;
      st.lastF2F3 = 3;
    } else if ((b & 0xf0) === 0x40 && is64) {
      // A REX counts only right before the opcode: the next legacy prefix drops it.
      rex = b;
      i++;
      continue;
    } else if (b === 0xc4 || b === 0xc5 || b === 0x62) {
      if (max <= i + 1) return -1;
      const p1 = bytes[at + i + 1]!;
      // Outside 64-bit mode, ModRM.mod != 3 makes it LES, LDS or BOUND.
      if (is64 || (p1 & 0xc0) === 0xc0) return vexLength(bytes, at, i, max, b, p1);
      break;
    } else {
      if (rex & 4) st.rexR = 1;
      if (rex & 8) st.rexW = 1;
      break;
    }
    rex = 0;
    i++;
  }
  return opcodeLength(bytes, at, i, max);
}

/** VEX (C4, C5) or EVEX (62) at `bytes[at + i]`, `p1` its first payload byte. */
function vexLength(bytes: Uint8Array, at: number, i: number, max: number, b: number, p1: number): number {
  // Payload bytes plus the opcode byte.
  const size = b === 0xc5 ? 3 : b === 0xc4 ? 4 : 5;
  if (max < i + size) return -1;
  st.vex = 1;
  if (p1 & 0x80) st.rexR = 1;
  if (b === 0xc5) st.map = MAP_1;
  else {
    if (bytes[at + i + 2]! & 0x80) st.rexW = 1;
    st.map = b === 0xc4 ? p1 & 0x1f : p1 & 3;
    if (st.map >= MAP_NONE) return -1;
    if (st.map === MAP_3) st.imm1 = 1;
  }
  st.opcode = bytes[at + i + size - 1]!;
  return modrmLength(bytes, at, i + size, max);
}

/** The opcode (after the prefixes) at `bytes[at + i]`; `i < max`. */
function opcodeLength(bytes: Uint8Array, at: number, i: number, max: number): number {
  const b = bytes[at + i]!;
  if (b !== 0x0f) {
    st.map = MAP_0;
    st.opcode = b;
    return modrmLength(bytes, at, i + 1, max);
  }
  i++;
  if (i >= max) return -1;
  const m = bytes[at + i]!;
  if (m === 0x0f) {
    // 3DNow!: ModRM, then the real opcode as an 8-bit "immediate".
    st.map = MAP_3DNOW;
    st.opcode = 0x0f;
    return modrmLength(bytes, at, i + 1, max);
  }
  if ((m & 0xf8) !== 0x38) {
    st.map = MAP_1;
    st.opcode = m;
    return modrmLength(bytes, at, i + 1, max);
  }
  // 0F 38 and 0F 3A are maps 2 and 3; 0F 39 and 0F 3B-3F take a third byte too.
  st.map = m === 0x38 ? 2 : m === 0x3a ? MAP_3 : MAP_NONE;
  if (st.map === MAP_3) st.imm1 = 1;
  i++;
  if (i >= max) return -1;
  st.opcode = bytes[at + i]!;
  return modrmLength(bytes, at, i + 1, max);
}

function modrmLength(bytes: Uint8Array, at: number, i: number, max: number): number {
  const has = st.map > MAP_1 ? CH_MODRM : (st.map === MAP_0 ? MODRM_0 : MODRM_1)[st.opcode]!;
  if (has !== CH_MODRM && has !== CH_REG_ONLY) return dispLength(i, max);
  if (i >= max) return -1;
  st.modrm = bytes[at + i]!;
  i++;
  if (has === CH_REG_ONLY) return dispLength(i, max);
  const mod = st.modrm >>> 6;
  const rm = st.modrm & 7;
  if (easz() === 16) {
    st.dispBytes = mod === 1 ? 1 : mod === 2 || (mod === 0 && rm === 6) ? 2 : 0;
    return dispLength(i, max);
  }
  st.dispBytes = mod === 1 ? 1 : mod === 2 || (mod === 0 && rm === 5) ? 4 : 0;
  if (mod === 3 || rm !== 4) return dispLength(i, max);
  // SIB; base 5 with mod 0 means a 32-bit displacement and no base.
  if (i >= max) return -1;
  if ((bytes[at + i]! & 7) === 5 && mod === 0) st.dispBytes = 4;
  return dispLength(i + 1, max);
}

function dispLength(i: number, max: number): number {
  if (st.dispBytes === 0 && st.map <= MAP_1) {
    switch ((st.map === MAP_0 ? DISP_0 : DISP_1)[st.opcode]) {
      case 0x31: // '1'
        st.dispBytes = 1;
        break;
      case 0x6a: // 'j'
        st.dispBytes = st.mode === 3 ? 4 : zBytes(eosz());
        break;
      case 0x7a: // 'z'
        st.dispBytes = zBytes(eosz());
        break;
      case 0x6d: // 'm'
        st.dispBytes = vBytes(easz());
        break;
      case 0x63: // 'c'
        if (((st.modrm >>> 3) & 7) === 7) st.dispBytes = zBytes(eosz());
        break;
    }
  }
  if (st.dispBytes !== 0) {
    if (i + st.dispBytes > max) return -1;
    st.dispPos = i;
    i += st.dispBytes;
  }
  return immLength(i, max);
}

function immLength(i: number, max: number): number {
  if (st.map === MAP_3DNOW) return i < max ? i + 1 : -1;
  if (st.map <= MAP_1) {
    const reg = (st.modrm >>> 3) & 7;
    switch ((st.map === MAP_0 ? IMM_0 : IMM_1)[st.opcode]) {
      case 0x62: // 'b'
        st.imm1 = 1;
        break;
      case 0x77: // 'w'
        st.imm1 = 2;
        break;
      case 0x7a: // 'z'
        st.imm1 = zBytes(eosz());
        break;
      case 0x76: // 'v'
        st.imm1 = vBytes(eosz());
        break;
      case 0x70: // 'p'
        st.imm1 = zBytes(eoszDf64());
        break;
      case 0x65: // 'e'
        st.imm1 = 2;
        st.imm2 = 1;
        break;
      case 0x66: // 'f'
        if (reg < 2) st.imm1 = 1;
        break;
      case 0x67: // 'g'
        if (reg < 2) st.imm1 = zBytes(eosz());
        break;
      case 0x63: // 'c'
        if (reg === 0) st.imm1 = zBytes(eosz());
        break;
      case 0x78: // 'x'
        if (st.osz || st.lastF2F3 === 2) {
          st.imm1 = 1;
          st.imm2 = 1;
        }
        break;
    }
  }
  i += st.imm1 + st.imm2;
  return i > max ? -1 : i;
}

/**
 * Classify the instruction {@link ildLength} just measured and fill `out`: `length`,
 * `iclass`, and for direct branches (and XBEGIN) the target, ip + length +
 * displacement wrapped to 64 bits in 64-bit mode, else to the operand size (XBEGIN:
 * to 32 bits, the SDM adds its sign-extended rel16 to EIP). `bytes[at]` is the
 * instruction's first byte, as given to {@link ildLength}.
 *
 * The classes are libipt's (by opcode and ModRM.reg, prefixes aside; nothing
 * VEX-encoded or beyond map 1 changes the flow), refined by what the x86 manuals say
 * of the encodings libipt lumps together or does not know: the far transfers and the
 * instructions Intel PT emits other packets for (XBEGIN, HLT, MWAIT, AMD's VMRUN,
 * ...) that only ptkit tells apart. Those need their exact encoding: the mandatory
 * prefix (the last F2/F3, else 66) where the opcode map has one, and no LOCK (which
 * makes them undefined: #UD). test/isa/classify.test.ts holds this to iced-x86's
 * decoder instruction by instruction, and test/isa/ild-libipt.test.ts to libipt.
 */
export function ildFill(
  bytes: Uint8Array,
  at: number,
  length: number,
  ipHi: number,
  ipLo: number,
  out: InsnInfo,
): void {
  let iclass: InsnClass = InsnClass.Other;
  let direct = false;
  const reg = (st.modrm >>> 3) & 7;
  if (!st.vex && st.map === MAP_0) {
    const op = st.opcode;
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
      iclass = InsnClass.CondBranch;
      direct = true;
    } else if (op === 0xe8) {
      iclass = InsnClass.Call;
      direct = true;
    } else if (op === 0xe9 || op === 0xeb) {
      iclass = InsnClass.Jump;
      direct = true;
    } else if (op === 0xff) {
      if (reg === 2) iclass = InsnClass.CallIndirect;
      else if (reg === 3) iclass = InsnClass.FarCall;
      else if (reg === 4) iclass = InsnClass.JumpIndirect;
      else if (reg === 5) iclass = InsnClass.FarJump;
    } else if (op === 0x9a) iclass = InsnClass.FarCall;
    else if (op === 0xea) iclass = InsnClass.FarJump;
    else if (op === 0xcc || op === 0xcd || op === 0xce || op === 0xf1) iclass = InsnClass.Interrupt;
    else if (op === 0xcf) iclass = InsnClass.Iret;
    else if (op === 0xc2 || op === 0xc3) iclass = InsnClass.Return;
    else if (op === 0xca || op === 0xcb) iclass = InsnClass.FarReturn;
    else if (!st.lock) {
      if (op === 0xf4) iclass = InsnClass.Hlt;
      else if (op === 0xc6 && st.modrm === 0xf8) iclass = InsnClass.Xabort;
      else if (op === 0xc7 && st.modrm === 0xf8) {
        iclass = InsnClass.Xbegin;
        direct = true;
      }
    }
  } else if (!st.vex && st.map === MAP_1) {
    const op = st.opcode;
    if (op >= 0x80 && op <= 0x8f) {
      iclass = InsnClass.CondBranch;
      direct = true;
    } else if (op === 0x05 || op === 0x34) iclass = InsnClass.Syscall;
    else if (op === 0x07 || op === 0x35) iclass = InsnClass.Sysret;
    else if (op === 0x22 && reg === 3 && !st.rexR) iclass = InsnClass.MovCr3;
    else if (op === 0x01) iclass = group7Class();
    else if (op === 0xc7 && reg === 6 && st.modrm >>> 6 !== 3) {
      // 66 (no F2/F3): VMCLEAR; F3: VMXON. libipt calls all three VMPTRLD.
      const other = !st.lock && (st.lastF2F3 === 3 || (st.osz && st.lastF2F3 === 0));
      iclass = other ? InsnClass.Other : InsnClass.Vmptrld;
    }
    // ptkit's class, not libipt's: UD2/UD1/UD0 raise #UD whatever their length (libipt
    // 2.0 gives UD1 and UD0 no ModRM, so iced, which does, measures them otherwise).
    else if (op === 0x0b || op === 0xb9 || op === 0xff) iclass = InsnClass.Ud;
    else if (op === 0xae && reg === 4 && st.f3 && !st.osz) iclass = InsnClass.PtWrite;
    else if (op === 0xaa && !st.lock) iclass = InsnClass.FarOther; // RSM
  }
  out.length = length;
  out.iclass = iclass;
  if (!direct || st.dispBytes === 0) {
    out.flags = 0;
    out.targetHi = 0;
    out.targetLo = 0;
    return;
  }
  const p = at + st.dispPos;
  const disp =
    st.dispBytes === 1
      ? (bytes[p]! << 24) >> 24
      : st.dispBytes === 2
        ? ((bytes[p]! | (bytes[p + 1]! << 8)) << 16) >> 16
        : bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24);
  const rel = length + disp;
  let flags = InsnFlag.Target;
  if (iclass === InsnClass.Call && disp === 0) flags |= InsnFlag.ZeroLengthCall;
  if (st.mode === 3) {
    const sum = (ipLo >>> 0) + rel;
    const lo = sum >>> 0;
    out.targetLo = lo;
    out.targetHi = ((ipHi >>> 0) + (sum - lo) / TWO_32) >>> 0;
  } else {
    out.targetLo = eosz() === 16 && iclass !== InsnClass.Xbegin ? (ipLo + rel) & 0xffff : (ipLo + rel) >>> 0;
    out.targetHi = 0;
  }
  out.flags = flags;
}

/**
 * The class of a 0F 01 instruction (group 7) with a register ModRM: the VMX and SVM
 * entries and exits, TSX's XEND, MWAIT, and the far transfers of newer extensions.
 * Which one a ModRM byte is depends on the mandatory prefix: none (no 66, F2 or F3)
 * for XEND and MWAIT; 66 without F2/F3 for TDCALL, SEAMRET, SEAMCALL (the last two in
 * 64-bit mode only); F2 or F3 for ERETS, ERETU (64-bit mode only).
 */
function group7Class(): InsnClass {
  switch (st.modrm) {
    // libipt's own (any prefix, even LOCK): VMCALL, VMLAUNCH, VMRESUME, UIRET.
    case 0xc1:
      return InsnClass.VmExit;
    case 0xc2:
    case 0xc3:
      return InsnClass.VmEntry;
    case 0xec:
      return InsnClass.FarOther;
  }
  if (st.lock) return InsnClass.Other;
  const none = !st.osz && st.lastF2F3 === 0;
  const only66 = st.osz && st.lastF2F3 === 0;
  switch (st.modrm) {
    case 0xd8: // VMRUN
      return InsnClass.VmEntry;
    case 0xd9: // VMMCALL; F2/F3: VMGEXIT
      return InsnClass.VmExit;
    case 0xde: // SKINIT
      return InsnClass.FarOther;
    case 0xd5:
      return none ? InsnClass.Xend : InsnClass.Other;
    case 0xc9:
      return none ? InsnClass.Mwait : InsnClass.Other;
    case 0xcc: // TDCALL
      return only66 ? InsnClass.VmExit : InsnClass.Other;
    case 0xcd: // SEAMRET
    case 0xcf: // SEAMCALL
      return only66 && st.mode === 3 ? InsnClass.FarOther : InsnClass.Other;
    case 0xca: // ERETU (F3), ERETS (F2)
      return st.lastF2F3 !== 0 && st.mode === 3 ? InsnClass.FarOther : InsnClass.Other;
  }
  return InsnClass.Other;
}
