/**
 * Instruction length, class and direct target, from bytes at an IP in a mode; and
 * instructions as text.
 *
 * {@link decodeInsn} is table-driven (ild.ts): the length is libipt's, as ptxed
 * decodes it (bytes that are no defined instruction still have one, as long as they
 * do not end before it does), and so is the class, refined where ptkit tells apart
 * what libipt lumps together (see {@link ildDecode}). It is plain TypeScript over the
 * caller's bytes: no WebAssembly, nothing allocated, nothing thrown on any input.
 * Loops that see the same code again should still go through {@link InsnCache}.
 *
 * Text ({@link formatInsn}) is iced-x86's (the iced Rust decoder and formatter
 * compiled to WebAssembly), the only use of iced in ptkit. It is loaded on the first
 * format, not on import nor on decode: compiling its WebAssembly and reading its glue
 * costs more than a small trace takes to decode, and commands that print no
 * instruction should not pay for it. {@link initIsa} loads it asynchronously
 * (browsers, and Node before 20.16, must await it before formatting); on Node the
 * first format loads it synchronously. iced's defaults apply: Intel semantics (a 66
 * prefix does not shorten near branches in 64-bit mode), every instruction set it
 * knows that needs no option.
 */
import type * as Iced from "iced-x86";
import { ErrorCode } from "../base/errors.js";
import { toBigInt } from "../base/halves.js";
import { ildDecode } from "./ild.js";
import { jmpabsLength, jmpabsTarget } from "./jmpabs.js";
import { EXEC_MODE_BITS, ExecMode, InsnClass, InsnFlag, type InsnInfo } from "./types.js";

/** (A module constant: V8 folds it, not an imported binding's property.) */
const BITS_64 = ExecMode.Bits64;

/** Longest x86 instruction. */
export const MAX_INSN_LENGTH = 15;

/** iced-x86 once loaded. */
let iced: typeof Iced | undefined;

/**
 * Whether iced-x86 (the formatter's WebAssembly) has been loaded in this process: only
 * formatting instructions as text loads it ({@link formatInsn}, {@link initIsa}).
 */
export function isIcedLoaded(): boolean {
  return iced !== undefined;
}

/**
 * Load iced-x86, the x86 formatter (WebAssembly), before the first {@link formatInsn}.
 * Browsers must await this once before formatting; Node need not (the first format
 * loads it), but may, to move the cost to a moment of its choosing. Decoding needs
 * no iced.
 */
export async function initIsa(): Promise<void> {
  if (!iced) iced = await import("iced-x86");
}

/** The same with iced-x86 loaded by the caller (the CLI requires it on Nodes before 20.16: see cli/entry.ts). */
export function initIsaWith(module: typeof Iced): void {
  iced ??= module;
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
    throw new Error("ptkit/isa: iced-x86 is not loaded: await initIsa() before formatting instructions");
  iced = nodeModule.createRequire(import.meta.url)("iced-x86");
  return iced;
}

/**
 * Decode the instruction at `bytes[offset]`, executed at IP `ipHi:ipLo` in `mode`,
 * into `out`. Reads at most 15 bytes and never past `end` (default `bytes.length`).
 *
 * The direct target (CondBranch, Jump, Call, Xbegin) is ip + length + displacement,
 * wrapped as the processor wraps it: to 16 bits with a 16-bit operand size, to 32
 * bits in 32-bit code, to 64 bits in 64-bit mode (XBEGIN's fallback address is
 * never cut to 16 bits: the SDM adds the sign-extended rel16 to EIP). In 16/32-bit
 * modes `ipLo` is the IP (`ipHi` is ignored) and `targetHi` is 0. APX JMPABS (64-bit
 * mode) is a JumpIndirect that carries its absolute target.
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
  end: number = bytes.length,
): number {
  const bits = EXEC_MODE_BITS[mode] ?? 0;
  if (bits === 0 || !(offset >= 0) || offset !== Math.floor(offset)) {
    out.clear();
    return -ErrorCode.Invalid;
  }
  let n = Math.min(end, bytes.length) - offset;
  if (n > MAX_INSN_LENGTH) n = MAX_INSN_LENGTH;
  if (n <= 0) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  const length = ildDecode(bytes, offset, n, mode, ipHi, ipLo, out);
  if (length < 0) {
    out.clear();
    return -ErrorCode.BadInsn;
  }
  // libipt 2.0 predates APX: its length for JMPABS is AAD's (D5 ib, undefined in 64-bit mode).
  // (Only an instruction of two bytes or more: a one-byte one at offset 0 would read bytes[-1].)
  if (bits === 64 && length >= 2 && bytes[offset + length - 2] === 0xd5) {
    const jmpabs = jmpabsLength(bytes, offset, offset + n);
    if (jmpabs > 0) return fillJmpabs(bytes, offset, jmpabs, out);
  }
  return length;
}

/**
 * The length of the 64-bit instruction at `bytes[offset]` (`max` bytes there, 1..15)
 * when it is a plain one, class {@link InsnClass.Other} as {@link decodeInsn} decodes
 * it: no transfer and nothing Intel PT binds a packet to. 0 for any other instruction,
 * for an AAD (D5 ib: decodeInsn tells it from APX's JMPABS) and for bytes that do not
 * decode (ask decodeInsn about those). Fills `out` as ildDecode does. For loops that
 * step over runs of straight-line code.
 */
export function plainLength64(bytes: Uint8Array, offset: number, max: number, out: InsnInfo): number {
  const length = ildDecode(bytes, offset, max, BITS_64, 0, 0, out);
  if (length < 0 || out.iclass !== InsnClass.Other) return 0;
  // Perhaps a JMPABS, which decodeInsn tells from the AAD libipt takes it for.
  if (length >= 2 && bytes[offset + length - 2] === 0xd5) return 0;
  return length;
}

/** The JMPABS of `length` bytes at `bytes[at]`: a TIP-receiving jump with its target. */
function fillJmpabs(bytes: Uint8Array, at: number, length: number, out: InsnInfo): number {
  const [hi, lo] = jmpabsTarget(bytes, at, length);
  out.length = length;
  out.iclass = InsnClass.JumpIndirect;
  out.flags = InsnFlag.Target;
  out.targetHi = hi;
  out.targetLo = lo;
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
  const { Code, Decoder, DecoderOptions, Instruction } = loadIced();
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
