/**
 * Annotated disassembly from coverage: each instruction of the functions that ran,
 * with how often it ran (the sum of the entries of the coverage's blocks that hold it:
 * a block runs from its first instruction to its last each time it is entered), as
 * `perf annotate` shows sampled code, but exact. The code is read from the images the
 * decode used; instructions are decoded as 64-bit code (the coverage file keeps no
 * mode) and named by iced-x86 (isa's formatInsn).
 */
import { type Halves, splitBigInt } from "../base/halves.js";
import { decodeInsn, ExecMode, formatInsn, InsnInfo, MAX_INSN_LENGTH } from "../isa/index.js";
import type { CoverageRow } from "./coverage-rows.js";

/** Reads code at hi:lo into `out`: the bytes read, 0 where nothing is mapped. */
export type CodeReader = (hi: number, lo: number, out: Uint8Array, size: number) => number;

export interface AnnotatedLine {
  /** The instruction's address, 0x-hex. */
  ip: string;
  /** Times it ran. */
  count: number;
  /** Its disassembly (Intel syntax), or "(no code)" where the code could not be read. */
  text: string;
}

export interface AnnotatedFunction {
  name: string;
  /** Instructions run in it. */
  insns: number;
  lines: AnnotatedLine[];
}

export interface AnnotateLimits {
  /** Functions annotated, those that ran the most instructions first. */
  functions: number;
  /** Instructions listed per function. */
  lines: number;
}

export const DEFAULT_ANNOTATE_LIMITS: AnnotateLimits = { functions: 100, lines: 2000 };

/** Annotate the first of `rows` (coverageRows: those that ran the most instructions first), reading their code with `read`. */
export function annotateCoverage(
  rows: readonly CoverageRow[],
  read: CodeReader,
  limits: AnnotateLimits = DEFAULT_ANNOTATE_LIMITS,
): AnnotatedFunction[] {
  const code = new Uint8Array(MAX_INSN_LENGTH);
  const insn = new InsnInfo();
  return rows.slice(0, limits.functions).map(({ name, list, insns }) => {
    // Each instruction's runs, by its address as 16 hex digits (which sort as the addresses do).
    const counts = new Map<string, number>();
    for (const b of list) {
      const end = BigInt(b.end);
      let ip = BigInt(b.start);
      for (let i = 0; i < b.insns && ip <= end; i++) {
        const key = ip.toString(16).padStart(16, "0");
        counts.set(key, (counts.get(key) ?? 0) + b.count);
        const len = decodeAt(ip, read, code, insn);
        if (len <= 0) break;
        ip += BigInt(len);
      }
    }
    const lines = [...counts.keys()]
      .sort()
      .slice(0, limits.lines)
      .map((key) => {
        const ip = BigInt(`0x${key}`);
        const { hi, lo } = splitBigInt(ip, at);
        const n = read(hi, lo, code, code.length);
        const text = n > 0 ? formatInsn(code.subarray(0, n), 0, hi, lo, ExecMode.Bits64) : "(no code)";
        return { ip: `0x${ip.toString(16)}`, count: counts.get(key)!, text };
      });
    return { name, insns, lines };
  });
}

/** Where an address is split into halves (one object: the annotation runs on one thread). */
const at: Halves = { hi: 0, lo: 0 };

/** The length of the instruction at `ip`, or 0 where its code cannot be read or decoded. */
function decodeAt(ip: bigint, read: CodeReader, code: Uint8Array, insn: InsnInfo): number {
  const { hi, lo } = splitBigInt(ip, at);
  const n = read(hi, lo, code, code.length);
  return n > 0 ? Math.max(0, decodeInsn(code.subarray(0, n), 0, hi, lo, ExecMode.Bits64, insn)) : 0;
}

/** The annotation as text: per function a heading, then count, address and instruction per line. */
export function annotationText(functions: readonly AnnotatedFunction[]): string {
  const out: string[] = [];
  for (const f of functions) {
    out.push(`${f.name}: ${f.insns} instructions run`);
    for (const l of f.lines) out.push(`${String(l.count).padStart(12)}  ${l.ip.padStart(18)}:  ${l.text}`);
    out.push("");
  }
  return out.join("\n");
}
