/**
 * ptxed's line formats for instructions, diagnostics and statistics. Instructions are
 * disassembled by the isa layer (Intel syntax unless --att); everything else is
 * ptxed's text.
 */

import { type ExecMode, formatInsn, MAX_INSN_LENGTH } from "../isa/index.js";
import { errorMessage, hex64 } from "../packet/index.js";

/**
 * The columns in front of an instruction's IP: offset and time (when asked for), and
 * `? ` for speculative execution.
 */
export function insnLead(
  offset: number | undefined,
  timeHi: number,
  timeLo: number,
  showTime: boolean,
  speculative: boolean,
): string {
  let s = offset === undefined ? "" : `${offset.toString(16).padStart(16, "0")}  `;
  if (showTime) s += `${hex64(timeHi, timeLo)}  `;
  if (speculative) s += "? ";
  return s;
}

/** The options {@link disassembly} follows, as one number (see CodeWalker.keepText). */
export function textOptions(att: boolean, showRaw: boolean): number {
  return (att ? 1 : 0) | (showRaw ? 2 : 0);
}

/** ` xx xx ...` for `size` bytes, padded to the longest instruction, as ptxed prints raw bytes. */
export function rawBytes(bytes: Uint8Array, offset: number, size: number): string {
  let s = "";
  for (let i = 0; i < MAX_INSN_LENGTH; i++)
    s += i < size ? ` ${bytes[offset + i]!.toString(16).padStart(2, "0")}` : "   ";
  return s;
}

/**
 * What follows the IP of a decoded instruction of `length` bytes: its raw bytes (with
 * --raw-insn) and its disassembly.
 */
export function disassembly(
  bytes: Uint8Array,
  offset: number,
  length: number,
  ipHi: number,
  ipLo: number,
  mode: number,
  att: boolean,
  showRaw: boolean,
): string {
  const raw = showRaw ? rawBytes(bytes, offset, length) : "";
  const text = formatInsn(bytes, offset, ipHi, ipLo, mode as ExecMode, att ? "att" : "intel");
  return `${raw}  ${text}`;
}

/** ptxed's diagnostic line: `[offset, ip: what: error]`. */
export function diagText(offset: number, ipHi: number, ipLo: number, what: string, code: number): string {
  return `[${offset.toString(16)}, ${hex64(ipHi, ipLo, 1)}: ${what}: ${errorMessage(code)}]`;
}

/** ptxed's statistics lines. */
export function statsText(insn: number | undefined, blocks: number | undefined): string[] {
  const lines: string[] = [];
  if (insn !== undefined) lines.push(`insn: ${insn}.`);
  if (blocks !== undefined) lines.push(`blocks:\t${blocks}.`);
  return lines;
}
