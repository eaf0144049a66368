/**
 * Instruction length, class and direct target, from bytes at an IP in a mode.
 *
 * The x86 decoding itself is iced-x86's (the iced Rust decoder compiled to
 * WebAssembly). This module is the only one in ptkit that touches iced: it turns one
 * decoded instruction into the numbers of an {@link InsnInfo}, and formats
 * instructions as text for tools. iced's defaults apply: Intel semantics (a 66
 * prefix does not shorten near branches in 64-bit mode), every instruction set it
 * knows that needs no option (AMD's too). The length, though, is libipt's (ild.ts),
 * as ptxed decodes it: where iced rejects the bytes (undefined opcodes, LOCK where it
 * is not allowed, reserved VEX/EVEX bits, ...) or measures another length, the
 * instruction is libipt's, classified as libipt does; `BadInsn` only where libipt
 * fails too (bytes that end before the instruction does).
 *
 * Costs: decoding crosses into WebAssembly and builds one iced `Decoder` per call
 * (a few hundred nanoseconds); loops that see the same code again should go through
 * {@link InsnCache}. Nothing here throws on any input bytes.
 *
 * iced-x86 is loaded on the first decode, not on import: compiling its WebAssembly
 * and reading its glue costs more than a small trace takes to decode, and commands
 * that decode no instruction should not pay for it. {@link initIsa} loads it
 * asynchronously (browsers, and Node before 20.16, must await it before decoding);
 * on Node the first decode loads it synchronously.
 */
import type * as Iced from "iced-x86";
import { ErrorCode } from "../packet/errors.js";
import { toBigInt } from "../packet/u64.js";
import { ildFill, ildLength } from "./ild.js";
import { jmpabsLength, jmpabsTarget } from "./jmpabs.js";
import { EXEC_MODE_BITS, type ExecMode, InsnClass, InsnFlag, type InsnInfo } from "./types.js";

/** Longest x86 instruction. */
export const MAX_INSN_LENGTH = 15;

const TWO_32 = 4294967296;

/** The instruction bytes are copied here; `views[n]` is its first n bytes. */
const scratch = new Uint8Array(MAX_INSN_LENGTH);
const views: Uint8Array[] = [];
for (let n = 0; n <= MAX_INSN_LENGTH; n++) views.push(scratch.subarray(0, n));

/*
 * What an iced Code means for Intel PT in a mode, computed the first time the pair is
 * seen and kept in CODE_INFO[code * 4 + mode] (a Code fixes mnemonic and flow
 * control; with the mode it fixes the branch operand size too: XBEGIN has one Code
 * for 32- and 64-bit code). Bits 0-5 the InsnClass, bits 6-7 the branch operand size,
 * bit 8 "MOV to a control register" (MovCr3 only if the register is CR3). -1: not
 * seen yet.
 */
const INFO_BITS_SHIFT = 6;
const INFO_MOV_CR = 1 << 8;
const BRANCH_NONE = 0;
const BRANCH_16 = 1;
const BRANCH_32 = 2;
const BRANCH_64 = 3;

/** iced-x86 once loaded, and what decoding keeps of it. */
let iced: typeof Iced | undefined;
/** One reusable iced instruction; every decode fills it (the scratch never escapes). */
let insn: Iced.Instruction;
let CODE_INFO: Int16Array;
let Code: typeof Iced.Code;
let Decoder: typeof Iced.Decoder;
let DecoderOptions: typeof Iced.DecoderOptions;
let FlowControl: typeof Iced.FlowControl;
let Mnemonic: typeof Iced.Mnemonic;
let OpKind: typeof Iced.OpKind;
let Register: typeof Iced.Register;

/** Take iced-x86's module into use (once) and size the per-Code table from it. */
function useIced(module: typeof Iced): typeof Iced {
  if (iced) return iced;
  ({ Code, Decoder, DecoderOptions, FlowControl, Mnemonic, OpKind, Register } = module);
  insn = new module.Instruction();
  // The Codes are 0..n-1 and the enum maps each back to its name: n is the first
  // number without one (a binary search; Object.values over the enum's ~10,000 keys
  // takes 10-30 ms).
  const names = Code as unknown as Record<number, string | undefined>;
  let codeCount = 0;
  for (let hi = 1 << 16; codeCount < hi; ) {
    const mid = (codeCount + hi) >>> 1;
    if (names[mid] === undefined) hi = mid;
    else codeCount = mid + 1;
  }
  CODE_INFO = new Int16Array(codeCount * 4).fill(-1);
  iced = module;
  return module;
}

/**
 * Load iced-x86, the x86 decoder (WebAssembly), before the first decode. Browsers must
 * await this once before decoding; Node need not (the first decode loads it), but
 * may, to move the cost to a moment of its choosing.
 */
export async function initIsa(): Promise<void> {
  if (!iced) useIced(await import("iced-x86"));
}

/** iced-x86, loaded synchronously on first use where the platform can (Node 20.16 and later). */
function loadIced(): typeof Iced {
  if (iced) return iced;
  // No import of "node:module" (this layer must bundle for browsers): Node hands it
  // out through process.getBuiltinModule, which browsers do not have.
  const node = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const nodeModule = node?.getBuiltinModule?.("module") as
    | { createRequire: (from: string) => (id: string) => typeof Iced }
    | undefined;
  if (!nodeModule)
    throw new Error("ptkit/isa: iced-x86 is not loaded: await initIsa() before decoding instructions");
  return useIced(nodeModule.createRequire(import.meta.url)("iced-x86"));
}

function classOf(ins: Iced.Instruction): InsnClass {
  const mn = ins.mnemonic;
  switch (ins.flowControl) {
    case FlowControl.ConditionalBranch:
      // Jcc, JCXZ/JECXZ/JRCXZ, LOOP/LOOPE/LOOPNE (and KNC's JKZD/JKNZD, decoded only with an option).
      return InsnClass.CondBranch;
    case FlowControl.UnconditionalBranch:
      if (mn !== Mnemonic.Jmp) return InsnClass.FarOther; // JMPE (IA-64 switch), with an option only
      return ins.isJmpFar ? InsnClass.FarJump : InsnClass.Jump;
    case FlowControl.IndirectBranch:
      if (mn !== Mnemonic.Jmp) return InsnClass.FarOther; // JMPE, ALTINST (option only)
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
          return InsnClass.FarOther; // UIRET, ERETU, ERETS, RSM, SKINIT, RDM
      }
    case FlowControl.Interrupt:
      return InsnClass.Interrupt; // INT n, INT3, INTO, INT1 (and Cyrix SMINT/DMINT, option only)
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
          return InsnClass.Other;
      }
  }
}

function codeInfo(code: number, mode: number, ins: Iced.Instruction): number {
  const iclass = classOf(ins);
  let branch = BRANCH_NONE;
  if (
    iclass === InsnClass.CondBranch ||
    iclass === InsnClass.Jump ||
    iclass === InsnClass.Call ||
    iclass === InsnClass.Xbegin
  ) {
    const kind = ins.op0Kind;
    if (kind === OpKind.NearBranch16) branch = BRANCH_16;
    else if (kind === OpKind.NearBranch32) branch = BRANCH_32;
    else if (kind === OpKind.NearBranch64) branch = BRANCH_64;
  }
  let info = iclass | (branch << INFO_BITS_SHIFT);
  if (code === Code.Mov_cr_r32 || code === Code.Mov_cr_r64) info |= INFO_MOV_CR;
  CODE_INFO[code * 4 + mode] = info;
  return info;
}

/**
 * Decode the instruction at `bytes[offset]`, executed at IP `ipHi:ipLo` in `mode`,
 * into `out`. Reads at most 15 bytes and never past `bytes.length`.
 *
 * The direct target (CondBranch, Jump, Call, Xbegin) is ip + length + displacement,
 * wrapped as the processor wraps it: to 16 bits with a 16-bit operand size, to 32
 * bits in 32-bit code, to 64 bits in 64-bit mode (XBEGIN's fallback address is
 * never cut to 16 bits: the SDM adds the sign-extended rel16 to EIP). In 16/32-bit
 * modes `ipLo` is the IP (`ipHi` is ignored) and `targetHi` is 0.
 *
 * The length is libipt's (see ild.ts): bytes that are no defined instruction still
 * have one, as long as they do not end before it does.
 *
 * @returns the length (1..15); `-ErrorCode.BadInsn` when the bytes end before the
 *   instruction does (or libipt rejects them otherwise: a VEX map field of 5 or more); `-ErrorCode.Invalid` for a bad mode or offset.
 *   On failure `out` is cleared.
 */
export function decodeInsn(
  bytes: Uint8Array,
  offset: number,
  ipHi: number,
  ipLo: number,
  mode: ExecMode,
  out: InsnInfo,
): number {
  const bits = EXEC_MODE_BITS[mode] ?? 0;
  if (bits === 0 || !(offset >= 0) || offset !== Math.floor(offset)) {
    out.clear();
    return -ErrorCode.Invalid;
  }
  let n = bytes.length - offset;
  if (n > MAX_INSN_LENGTH) n = MAX_INSN_LENGTH;
  if (n <= 0) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  if (!iced) loadIced();
  for (let i = 0; i < n; i++) scratch[i] = bytes[offset + i]!;
  // The length is libipt's (ild.ts): undefined opcodes have one too, as in ptxed.
  const length = ildLength(scratch, 0, n, mode);
  if (length < 0) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  const decoder = new Decoder(bits, views[n]!, DecoderOptions.None);
  decoder.decodeOut(insn);
  decoder.free();
  if (insn.code !== Code.INVALID && insn.length === length) return fill(mode, ipHi >>> 0, ipLo >>> 0, out);
  if (insn.code === Code.INVALID && bits === 64 && jmpabsLength(scratch, 0, n) > 0) return fillJmpabs(n, out);
  // iced rejects the bytes (an undefined opcode, a LOCK or prefix it does not allow,
  // ...) or measures them otherwise (XOP, ...): libipt's length and class.
  ildFill(scratch, 0, length, ipHi, ipLo, out);
  return length;
}

/** The JMPABS in the first `n` scratch bytes (a TIP-receiving jump with its target), or BadInsn. */
function fillJmpabs(n: number, out: InsnInfo): number {
  const length = jmpabsLength(scratch, 0, n);
  if (length === 0) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  const [hi, lo] = jmpabsTarget(scratch, 0, length);
  out.length = length;
  out.iclass = InsnClass.JumpIndirect;
  out.flags = InsnFlag.Target;
  out.targetHi = hi;
  out.targetLo = lo;
  return length;
}

/** Turn the iced instruction just decoded (at IP 0) into `out`. */
function fill(mode: number, ipHi: number, ipLo: number, out: InsnInfo): number {
  const code = insn.code;
  if (code === Code.INVALID) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  const length = insn.length;
  let info = CODE_INFO[code * 4 + mode]!;
  if (info < 0) info = codeInfo(code, mode, insn);
  let iclass = info & 0x3f;
  if (info & INFO_MOV_CR && insn.op0Register === Register.CR3) iclass = InsnClass.MovCr3;
  out.length = length;
  out.iclass = iclass as InsnClass;
  const branch = (info >> INFO_BITS_SHIFT) & 3;
  if (branch === BRANCH_NONE) {
    out.flags = 0;
    out.targetHi = 0;
    out.targetLo = 0;
    return length;
  }
  // Decoded at IP 0, the branch operand is length + displacement, wrapped to the
  // operand size: nearBranch32 is its low 32 bits.
  const rel = insn.nearBranch32 >>> 0;
  let flags = InsnFlag.Target;
  if (branch === BRANCH_64) {
    // Sign of the displacement: the top bit of the instruction's last byte (the
    // displacement is always last). With it, rel is exact: length + disp lies in
    // (-2^31, 2^31 + 15).
    const signed = scratch[length - 1]! & 0x80 ? rel | 0 : rel;
    const sum = ipLo + signed;
    const lo = sum >>> 0;
    out.targetLo = lo;
    out.targetHi = (ipHi + (sum - lo) / TWO_32) >>> 0;
    if (signed === length) flags |= InsnFlag.ZeroLengthCall;
  } else if (branch === BRANCH_32) {
    out.targetLo = (ipLo + rel) >>> 0;
    out.targetHi = 0;
    if (((rel - length) | 0) === 0) flags |= InsnFlag.ZeroLengthCall;
  } else {
    out.targetLo = (ipLo + rel) & 0xffff;
    out.targetHi = 0;
    if (((rel - length) & 0xffff) === 0) flags |= InsnFlag.ZeroLengthCall;
  }
  if (out.iclass !== InsnClass.Call) flags &= ~InsnFlag.ZeroLengthCall;
  out.flags = flags;
  return length;
}

/** A JMPABS at the start of `data` as text (its target is absolute), else "(bad)". */
function formatJmpabs(data: Uint8Array, syntax: AsmSyntax): string {
  const length = jmpabsLength(data, 0, data.length);
  if (length === 0) return "(bad)";
  const [hi, lo] = jmpabsTarget(data, 0, length);
  return `jmpabs ${syntax === "att" ? "$" : ""}0x${toBigInt(hi, lo).toString(16)}`;
}

/** Assembly syntax for {@link formatInsn}. */
export type AsmSyntax = "intel" | "att";

let intelFormatter: Iced.Formatter | undefined;
let attFormatter: Iced.Formatter | undefined;

function formatter(syntax: AsmSyntax): Iced.Formatter {
  const { Formatter, FormatterSyntax } = loadIced();
  if (syntax === "att") {
    if (!attFormatter) {
      attFormatter = new Formatter(FormatterSyntax.Gas);
      styleFormatter(attFormatter);
    }
    return attFormatter;
  }
  if (!intelFormatter) {
    intelFormatter = new Formatter(FormatterSyntax.Intel);
    styleFormatter(intelFormatter);
    intelFormatter.spaceAfterOperandSeparator = true;
  }
  return intelFormatter;
}

/** Numbers as objdump prints them: 0x-prefixed lower-case hex, no padding. */
function styleFormatter(f: Iced.Formatter): void {
  f.hexPrefix = "0x";
  f.hexSuffix = "";
  f.uppercaseHex = false;
  f.leadingZeros = false;
  f.branchLeadingZeros = false;
  f.smallHexNumbersInDecimal = false;
  f.showBranchSize = false;
}

/**
 * The instruction at `bytes[offset]` as assembly text (Intel syntax by default, or
 * AT&T), with branch targets and RIP-relative addresses resolved against the IP.
 * `"(bad)"` when the bytes are no valid instruction. For tools, not for hot loops.
 */
export function formatInsn(
  bytes: Uint8Array,
  offset: number,
  ipHi: number,
  ipLo: number,
  mode: ExecMode,
  syntax: AsmSyntax = "intel",
): string {
  const bits = EXEC_MODE_BITS[mode] ?? 0;
  if (bits === 0 || !(offset >= 0) || offset >= bytes.length) return "(bad)";
  const data = bytes.subarray(offset, Math.min(bytes.length, offset + MAX_INSN_LENGTH));
  const { Instruction } = loadIced();
  const decoder = new Decoder(bits, data, DecoderOptions.None);
  const ins = new Instruction();
  try {
    let ip = toBigInt(ipHi, ipLo);
    if (bits < 64) ip &= bits === 32 ? 0xffffffffn : 0xffffn;
    decoder.ip = ip;
    decoder.decodeOut(ins);
    if (ins.code === Code.INVALID) return bits === 64 ? formatJmpabs(data, syntax) : "(bad)";
    return formatter(syntax).format(ins);
  } finally {
    ins.free();
    decoder.free();
  }
}
