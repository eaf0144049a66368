/**
 * The JSON Lines form of executions (format in types.ts): a reader that rejects bad
 * input with its line number and byte offset, and a writer whose output the reader
 * takes back unchanged. This is an API edge: it allocates freely and reports errors
 * by throwing {@link PtError} (`BadFile`).
 */

import { ErrorCode, PtError } from "../../base/errors.js";
import { hex64, splitBigInt } from "../../base/halves.js";
import { EXEC_MODE_BITS, type ExecMode, INSN_CLASS_NAMES, InsnClass, InsnFlag } from "../../isa/types.js";
import {
  EXEC_EVENT_NAMES,
  ExecBuilder,
  type ExecEvent,
  type Execution,
  INFO_ZLC,
  infoClass,
  infoSize,
  MSR_LOAD_BY_NAMES,
  WakeReason,
} from "./types.js";

/** How a JSON value is read and where it goes: a, b (u32), v (value), t (to). */
type FieldType = "u32" | "u64" | "bool" | "mode" | "reasons" | "by";
type Column = "a" | "b" | "v" | "t";
interface FieldSpec {
  readonly key: string;
  readonly type: FieldType;
  readonly column: Column;
  readonly optional?: boolean;
}

const f = (key: string, type: FieldType, column: Column, optional = false): FieldSpec => ({
  key,
  type,
  column,
  optional,
});
const TRANSFER = [f("from", "u64", "v"), f("to", "u64", "t")];

/** The keys of each event kind besides "k", indexed by {@link ExecEvent}. */
const EVENT_SPECS: readonly (readonly FieldSpec[])[] = [
  [f("cpl", "u32", "a")],
  [f("cr3", "u64", "v")],
  [f("mode", "mode", "a")],
  [f("nr", "bool", "a")],
  [f("vmcs", "u64", "v")],
  [f("vector", "u32", "a"), ...TRANSFER],
  [f("vector", "u32", "a"), ...TRANSFER],
  [f("reason", "u32", "a"), ...TRANSFER],
  TRANSFER,
  [f("value", "u64", "v"), f("bytes", "u32", "a")],
  [f("hints", "u32", "a"), f("ext", "u32", "b")],
  [f("cstate", "u32", "a"), f("substate", "u32", "b"), f("hw", "bool", "v", true)],
  [f("last", "u32", "a"), f("deepest", "u32", "b"), f("reasons", "reasons", "v", true)],
  [f("n", "u64", "v")],
  [f("n", "u64", "v")],
  [f("ratio", "u32", "a")],
  [f("msr", "u32", "a"), f("value", "u64", "v")],
  [f("ip", "u64", "v")],
  [f("if", "bool", "a")],
  [f("cr2", "u64", "v")],
  TRANSFER,
  [],
  [f("from", "u64", "v")],
  [f("vector", "u32", "a")],
  [f("vector", "u32", "a"), ...TRANSFER],
  [],
  [f("vector", "u32", "a")],
  [f("qual", "u64", "v")],
  [f("vector", "u32", "a")],
  [f("msr", "u32", "a"), f("value", "u64", "v"), f("by", "by", "b")],
];
const INSN_KEYS = new Set(["k", "ip", "size", "class", "zlc"]);
const WAKE_NAMES: readonly [string, number][] = [
  ["interrupt", WakeReason.Interrupt],
  ["store", WakeReason.Store],
  ["hw", WakeReason.Hw],
];
const EVENT_KINDS = new Map(EXEC_EVENT_NAMES.map((name, kind) => [name, kind as ExecEvent]));
const CLASSES = new Map(INSN_CLASS_NAMES.map((name, c) => [name, c]));
const TWO32 = 2 ** 32;

/** Thrown by the field readers; the line loop adds where. */
class FieldError extends Error {}

/** A 64-bit value from a JSON integer or a hex/decimal string, into `out`. */
function readU64(v: unknown, key: string, out: { hi: number; lo: number }): void {
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v) || v < 0)
      throw new FieldError(`${key}: ${v} is not an integer in 0..2^53-1`);
    out.hi = Math.floor(v / TWO32);
    out.lo = v >>> 0;
    return;
  }
  if (typeof v !== "string") throw new FieldError(`${key}: expected a number or a string`);
  if (/^0x[0-9a-f]{1,16}$/i.test(v)) {
    const digits = v.slice(2).padStart(16, "0");
    out.hi = Number.parseInt(digits.slice(0, 8), 16);
    out.lo = Number.parseInt(digits.slice(8), 16);
    return;
  }
  if (/^[0-9]{1,20}$/.test(v)) {
    const big = BigInt(v);
    if (big >> 64n !== 0n) throw new FieldError(`${key}: ${v} is above 2^64-1`);
    splitBigInt(big, out);
    return;
  }
  throw new FieldError(`${key}: "${v}" is not 0x-hex or decimal digits`);
}

function readU32(v: unknown, key: string): number {
  const h = { hi: 0, lo: 0 };
  readU64(v, key, h);
  if (h.hi !== 0) throw new FieldError(`${key}: above 2^32-1`);
  return h.lo;
}

function readBool(v: unknown, key: string): number {
  if (v === true || v === 1) return 1;
  if (v === false || v === 0) return 0;
  throw new FieldError(`${key}: expected true or false`);
}

function readMode(v: unknown): number {
  const mode = EXEC_MODE_BITS.indexOf(v as number);
  if (mode <= 0) throw new FieldError("mode: expected 16, 32 or 64");
  return mode;
}

function readReasons(v: unknown): number {
  if (!Array.isArray(v)) throw new FieldError('reasons: expected an array such as ["interrupt"]');
  let bits = 0;
  for (const name of v) {
    const entry = WAKE_NAMES.find(([n]) => n === name);
    if (!entry) throw new FieldError(`reasons: "${String(name)}" is not interrupt, store or hw`);
    bits |= entry[1];
  }
  return bits;
}

/** Event columns filled from one record. */
const cols = { a: 0, b: 0, hi: 0, lo: 0, toHi: 0, toLo: 0 };

function readEvent(rec: Record<string, unknown>, specs: readonly FieldSpec[]): void {
  cols.a = cols.b = cols.hi = cols.lo = cols.toHi = cols.toLo = 0;
  for (const key of Object.keys(rec)) {
    if (key !== "k" && !specs.some((s) => s.key === key)) throw new FieldError(`unknown key "${key}"`);
  }
  const h = { hi: 0, lo: 0 };
  for (const s of specs) {
    const v = rec[s.key];
    if (v === undefined) {
      if (s.optional) continue;
      throw new FieldError(`missing "${s.key}"`);
    }
    let small = 0;
    switch (s.type) {
      case "u64":
        readU64(v, s.key, h);
        break;
      case "u32":
        small = readU32(v, s.key);
        break;
      case "bool":
        small = readBool(v, s.key);
        break;
      case "mode":
        small = readMode(v);
        break;
      case "reasons":
        small = readReasons(v);
        break;
      case "by":
        small = MSR_LOAD_BY_NAMES.indexOf(v as string);
        if (small < 1) throw new FieldError(`by: expected one of ${MSR_LOAD_BY_NAMES.slice(1).join(", ")}`);
        break;
    }
    if (s.column === "a") cols.a = small;
    else if (s.column === "b") cols.b = small;
    else if (s.column === "t") {
      cols.toHi = h.hi;
      cols.toLo = h.lo;
    } else if (s.type === "u64") {
      cols.hi = h.hi;
      cols.lo = h.lo;
    } else {
      cols.lo = small;
    }
  }
}

function readInsn(rec: Record<string, unknown>, b: ExecBuilder): void {
  for (const key of Object.keys(rec)) {
    if (!INSN_KEYS.has(key)) throw new FieldError(`unknown key "${key}"`);
  }
  if (rec.ip === undefined) throw new FieldError('missing "ip"');
  if (rec.size === undefined) throw new FieldError('missing "size"');
  const ip = { hi: 0, lo: 0 };
  readU64(rec.ip, "ip", ip);
  const size = readU32(rec.size, "size");
  let iclass: number = InsnClass.Other;
  if (rec.class !== undefined) {
    const c = typeof rec.class === "string" ? CLASSES.get(rec.class) : undefined;
    if (c === undefined) throw new FieldError(`class: "${String(rec.class)}" is not an instruction class`);
    iclass = c;
  }
  const zlc = rec.zlc === undefined ? 0 : readBool(rec.zlc, "zlc");
  const why = b.tryInsn(ip.hi, ip.lo, size, iclass, zlc ? InsnFlag.ZeroLengthCall : 0);
  if (why !== "") throw new FieldError(why);
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * Parse an execution from JSON Lines. Throws {@link PtError} (`BadFile`) whose offset
 * is the byte offset of the offending line and whose message names the line.
 */
export function readExecJsonl(input: string | Uint8Array): Execution {
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(input);
    } catch {
      throw new PtError(ErrorCode.BadFile, 0, undefined, "execution: not UTF-8 text");
    }
  }
  const b = new ExecBuilder();
  let offset = 0;
  let lineNo = 0;
  for (const line of text.split("\n")) {
    lineNo++;
    const start = offset;
    offset += utf8Length(line) + 1;
    if (line.trim() === "") continue;
    try {
      readRecord(line, b);
    } catch (e) {
      if (!(e instanceof FieldError || e instanceof SyntaxError)) throw e;
      throw new PtError(ErrorCode.BadFile, start, undefined, `execution line ${lineNo}: ${e.message}`);
    }
  }
  const why = b.unfinished();
  if (why !== "") throw new PtError(ErrorCode.BadFile, offset, undefined, `execution at its end: ${why}`);
  return b.build();
}

function readRecord(line: string, b: ExecBuilder): void {
  const rec: unknown = JSON.parse(line);
  if (rec === null || typeof rec !== "object" || Array.isArray(rec))
    throw new FieldError("not a JSON object");
  const r = rec as Record<string, unknown>;
  if (typeof r.k !== "string") throw new FieldError('missing "k"');
  if (r.k === "insn") {
    readInsn(r, b);
    return;
  }
  const kind = EVENT_KINDS.get(r.k);
  if (kind === undefined) throw new FieldError(`unknown kind "${r.k}"`);
  readEvent(r, EVENT_SPECS[kind]!);
  const why = b.tryEvent(kind, cols.a, cols.b, cols.hi, cols.lo, cols.toHi, cols.toLo);
  if (why !== "") throw new FieldError(why);
}

function u64Text(hi: number, lo: number): string {
  return `"0x${hex64(hi, lo, 1)}"`;
}

function eventLine(x: Execution, e: number): string {
  const kind = x.evKind[e]!;
  const a = x.evA[e]!;
  const b = x.evB[e]!;
  const lo = x.evLo[e]!;
  const parts = [`"k":"${EXEC_EVENT_NAMES[kind]}"`];
  for (const s of EVENT_SPECS[kind]!) {
    const small = s.column === "a" ? a : s.column === "b" ? b : lo;
    let text: string;
    switch (s.type) {
      case "u64":
        text = s.column === "t" ? u64Text(x.evToHi[e]!, x.evToLo[e]!) : u64Text(x.evHi[e]!, lo);
        break;
      case "u32":
        text = String(small);
        break;
      case "bool":
        if (s.optional && small === 0) continue;
        text = small ? "true" : "false";
        break;
      case "mode":
        text = String(EXEC_MODE_BITS[small as ExecMode]);
        break;
      case "by":
        text = `"${MSR_LOAD_BY_NAMES[small]}"`;
        break;
      case "reasons":
        if (small === 0) continue;
        text = JSON.stringify(WAKE_NAMES.filter(([, bit]) => small & bit).map(([n]) => n));
        break;
    }
    parts.push(`"${s.key}":${text}`);
  }
  return `{${parts.join(",")}}`;
}

function insnLine(x: Execution, i: number): string {
  const info = x.info[i]!;
  const iclass = infoClass(info);
  const cls = iclass === InsnClass.Other ? "" : `,"class":"${INSN_CLASS_NAMES[iclass]}"`;
  const zlc = info & INFO_ZLC ? ',"zlc":true' : "";
  return `{"k":"insn","ip":${u64Text(x.ipHi[i]!, x.ipLo[i]!)},"size":${infoSize(info)}${cls}${zlc}}`;
}

/** The execution as JSON Lines, one record per line, each line ending in "\n". */
export function writeExecJsonl(x: Execution): string {
  const lines: string[] = [];
  let e = 0;
  for (let i = 0; i <= x.insnCount; i++) {
    while (e < x.eventCount && x.evAt[e] === i) lines.push(eventLine(x, e++));
    if (i < x.insnCount) lines.push(insnLine(x, i));
  }
  lines.push("");
  return lines.join("\n");
}
