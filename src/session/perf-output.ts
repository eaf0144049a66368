/**
 * `ptkit perf`'s output: ptxed-style text (an address per instruction, events and
 * errors in brackets), perf script's branch lines (`--branches`, like
 * `perf script --itrace=b -F flags,ip,addr`; `--calls` keeps calls, returns and where
 * tracing starts and ends, as `--itrace=cr` does), or
 * JSON lines (`--jsonl`) with cpu, pid, tid, time (perf time, as perf script
 * prints it) and tsc on every object.
 */

import { type ByteChunks, putHex16, putView, utf8, viewOf } from "../analysis/export/byte-chunks.js";
import { hex64, toBigInt } from "../base/halves.js";
import type { PtEvent } from "../event/index.js";
import type { Insn } from "../flow/index.js";
import { type TscConversion, tscToPerfTime } from "../perf/index.js";
import type { ByteLines } from "./byte-lines.js";
import { FlagsMemo } from "./flags-memo.js";
import { eventText } from "./flow-event-text.js";
import type { AddressNames, PerfSink, PerfWhere } from "./perf-stream.js";
import { SymBytes } from "./sym-bytes.js";

/** What is printed: every instruction, taken branches, calls and returns, or only errors (--quiet). */
export type PerfShow = "insn" | "branches" | "calls" | "errors";

const EVENT_TEXT = { offset: false, eventTime: false, eventIp: false };
// perf's --itrace=c keeps branches flagged call, async or trace end; r: return or trace begin.
const CALLS = /^(call|return|syscall|sysret|int|hw int|iret|tr )/;

/** What a flags string means for its branch lines, worked out once per string (they are few). */
interface FlagsInfo {
  /** The start of a branch line, as bytes: a line's costs no padding. */
  head: DataView;
  /** perf's --itrace=cr keeps the branch. */
  keptByCalls: boolean;
}
const flagsInfos = new FlagsMemo<FlagsInfo>((flags) => ({
  head: viewOf(utf8(`  ${flags.padEnd(23)}`)),
  keptByCalls: CALLS.test(flags),
}));

function flagsInfo(flags: string): FlagsInfo {
  return flagsInfos.get(flags);
}

/** Whether `--calls` prints a branch of these flags (perf's --itrace=cr). */
export function keptByCalls(flags: string): boolean {
  return flagsInfo(flags).keptByCalls;
}

const ARROW = utf8(" => ");
/** {@link ARROW} as one big-endian Int32 (DataView's default). */
const ARROW_INT = viewOf(ARROW).getInt32(0);
// The pieces of JSON lines (see jsonlSink).
const INSN_OPEN = utf8('{"type":"insn",');
const BRANCH_OPEN = utf8('{"type":"branch",');
const IP_OPEN = utf8(',"ip":"0x');
const TO_OPEN = utf8('","to":"0x');
/** `"}` and a line break. */
const LINE_CLOSE = utf8('"}\n');
/** `}` and a line break. */
const OBJECT_CLOSE = utf8("}\n");
const QUOTE = 0x22;
const SPACE = 0x20;
const NEWLINE = 0x0a;

/**
 * perf script's branch line with names: the flags' `head` (padded to 23 columns), from
 * and to right-aligned in 16 columns of hex, each followed by ` name+0xoff (dso)`.
 */
function namedBranchLine(
  out: ByteLines,
  head: DataView,
  sym: SymBytes,
  names: AddressNames,
  pid: number,
  fromHi: number,
  fromLo: number,
  toHi: number,
  toLo: number,
): void {
  out.viewBytes(head);
  out.hex64(fromHi, fromLo, 16, SPACE);
  sym.put(out, names, pid, fromHi, fromLo);
  out.bytes(ARROW);
  out.hex64(toHi, toLo, 16, SPACE);
  sym.put(out, names, pid, toHi, toLo);
  out.byte(NEWLINE);
}

/**
 * A branch line without names (ptkit's --branches and --calls, perf script -F
 * flags,ip,addr): `head` (the flags column and a space), from and to in 16 columns
 * each. Its length is known: written in place at once.
 */
export function plainBranchLine(
  out: ByteChunks,
  head: DataView,
  fromHi: number,
  fromLo: number,
  toHi: number,
  toLo: number,
): void {
  let at = out.reserve(head.byteLength + 37);
  const d = out.view;
  at = putView(d, at, head, 0, head.byteLength);
  at = putHex16(d, at, fromHi, fromLo, SPACE);
  d.setInt32(at, ARROW_INT);
  at = putHex16(d, at + 4, toHi, toLo, SPACE);
  d.setUint8(at, NEWLINE);
  out.wrote(at + 1);
}

/** With `symbols`, branch addresses are followed by `name+0xoff (dso)` (perf script -F ip,sym,symoff,dso,addr). */
export function textSink(out: ByteLines, show: PerfShow, symbols = false): PerfSink {
  const insnMode = show === "insn";
  const sym = symbols ? new SymBytes({ sym: true, symoff: true, dso: true }) : undefined;
  // Which stream printed last: a [cpu pid tid] line before the next line whenever that
  // or its thread changes (threads that print nothing get none).
  let last: PerfWhere | undefined;
  const from = (w: PerfWhere) => {
    if (w === last) return;
    last = w;
    out.line(`[cpu ${w.cpu} pid ${w.pid} tid ${w.tid}]`);
  };
  return {
    insn: (w, insn) => {
      if (!insnMode) return;
      if (w !== last) from(w);
      out.hex64(insn.ipHi, insn.ipLo, 16);
      out.byte(NEWLINE);
    },
    // Blocks come only when no instruction is printed.
    block: () => {},
    branch: (w, flags, fh, fl, th, tl, names) => {
      const info = flagsInfo(flags);
      if (show !== "branches" && !(show === "calls" && info.keptByCalls)) return;
      if (sym === undefined) plainBranchLine(out, info.head, fh, fl, th, tl);
      else namedBranchLine(out, info.head, sym, names, w.pid, fh, fl, th, tl);
    },
    event: (w, ev, offset) => {
      if (!insnMode) return;
      from(w);
      out.line(eventText(ev, EVENT_TEXT, offset));
    },
    error: (w, offset, message) => {
      if (insnMode) from(w);
      out.line(`[${offset.toString(16)}: ${message}${timeText(w)}]`);
    },
    switched: () => {
      last = undefined;
    },
  };
}

function timeText(w: PerfWhere): string {
  return w.tscHi || w.tscLo ? ` at tsc ${hex64(w.tscHi, w.tscLo, 0)}` : "";
}

/** perf time of a TSC as perf script prints it (seconds.nanoseconds), or "" without a conversion. */
export function perfTimeText(hi: number, lo: number, conv: TscConversion | undefined): string {
  if (!conv || (hi === 0 && lo === 0)) return "";
  const ns = tscToPerfTime(toBigInt(hi, lo), conv);
  return `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, "0")}`;
}

/** With `symbols`, branches carry fromSym and toSym (`name+0xoff (dso)`). */
export function jsonlSink(
  out: ByteLines,
  show: PerfShow,
  conv: TscConversion | undefined,
  symbols = false,
): PerfSink {
  // The common fields change only with time or thread: rebuilt then, not per instruction.
  let last: PerfWhere | undefined;
  let cpu = 0;
  let pid = 0;
  let tid = 0;
  let hi = 0;
  let lo = 0;
  let head = "";
  let headBytes = utf8("");
  const common = (w: PerfWhere) => {
    if (w !== last || w.cpu !== cpu || w.pid !== pid || w.tid !== tid || w.tscHi !== hi || w.tscLo !== lo) {
      ({ cpu, pid, tid, tscHi: hi, tscLo: lo } = w);
      last = w;
      const time = perfTimeText(hi, lo, conv);
      head = `"cpu":${cpu},"pid":${pid},"tid":${tid},"time":"${time}","tsc":"0x${hex64(hi, lo, 0)}"`;
      headBytes = utf8(head);
    }
    return head;
  };
  // The lines of instructions and branches, written in place: their pieces as bytes.
  const branchHeads = new FlagsMemo((flags) => utf8(`,"flags":"${flags}","from":"0x`));
  return {
    insn: (w, insn: Insn) => {
      if (show !== "insn") return;
      common(w);
      out.bytes(INSN_OPEN);
      out.bytes(headBytes);
      out.bytes(IP_OPEN);
      out.hex64(insn.ipHi, insn.ipLo, 0);
      out.bytes(LINE_CLOSE);
    },
    block: () => {},
    branch: (w, flags, fh, fl, th, tl, names) => {
      if (show !== "branches" && !(show === "calls" && flagsInfo(flags).keptByCalls)) return;
      common(w);
      out.bytes(BRANCH_OPEN);
      out.bytes(headBytes);
      out.bytes(branchHeads.get(flags));
      out.hex64(fh, fl, 0);
      out.bytes(TO_OPEN);
      out.hex64(th, tl, 0);
      out.byte(QUOTE);
      if (symbols)
        out.text(
          `,"fromSym":${JSON.stringify(names.symbol(w.pid, fh, fl))},"toSym":${JSON.stringify(names.symbol(w.pid, th, tl))}`,
        );
      out.bytes(OBJECT_CLOSE);
    },
    event: (w, ev: PtEvent, offset) => {
      out.line(
        `{"type":"event",${common(w)},"offset":${offset},"text":${JSON.stringify(eventText(ev, EVENT_TEXT, offset))}}`,
      );
    },
    error: (w, offset, message) =>
      out.line(`{"type":"error",${common(w)},"offset":${offset},"message":${JSON.stringify(message)}}`),
    switched: (w) => out.line(`{"type":"switch",${common(w)}}`),
  };
}
