/**
 * perf script's sample lines for `ptkit perf` with perf's options (-F fields,
 * --itrace, --call-trace): a {@link PerfSink} that prints each branch and
 * instruction sample in perf script 6.1's layout, learnt by running it: comm
 * right-aligned in 16 columns, tid `%5d` (pid/tid `%5d/%-5d`), cpu `[%03d]`, time
 * `%5u.%06u:` (`--ns`: 9 digits), period `%10u`, the event name right-aligned to the
 * longest event name of the session, flags left-aligned in 22 columns after two
 * spaces, addresses `%16x`, `sym+0xoff`, `(dso)`, callindent (perf's thread stack:
 * 4 columns per call, names padded to a width that changes only now and then).
 */

import { type ByteChunks, putDecimal, utf8, viewOf } from "../analysis/export/byte-chunks.js";
import { EventFlag, EventType, PtEvent } from "../event/index.js";
import { decodeInsn, ExecMode, InsnInfo, MAX_INSN_LENGTH } from "../isa/index.js";
import { ErrorCode } from "../packet/index.js";
import type { PerfEvent, TscConversion } from "../perf/index.js";
import { PerfTimeParts, tscToPerfTime } from "../perf/index.js";
import { branchFlags } from "./branch-lines.js";
import { FlagsMemo } from "./flags-memo.js";
import { plainBranchLine } from "./perf-output.js";
import type { ScriptComms } from "./perf-script-comms.js";
import type { Field, Itrace, PerfScriptOptions, ScriptFields } from "./perf-script-options.js";
import { InsnPeriod } from "./perf-script-period.js";
import type { SourceAddress, SourceLineBatch } from "./perf-script-srcline.js";
import type { AddressNames, PerfSink, PerfWhere } from "./perf-stream.js";
import { SymBytes } from "./sym-bytes.js";

// perf's branch flags: which --itrace letter keeps a branch (c: PERF_IP_FLAG_CALL,
// ASYNC or TRACE_END; r: RETURN or TRACE_BEGIN) and what it does to the thread stack.
const CALL_FLAGS = /^(call|syscall|int|hw int|tr end)/;
const RETURN_FLAGS = /^(return|sysret|iret|tr strt)/;
const PUSHES = /^(call|syscall|int|hw int|tr end {2}call|tr end {2}syscall|tr end {2}int)/;
const POPS = /^(return|sysret|iret|tr end {2}return|tr end {2}sysret|tr end {2}iret)/;
/** (Pieces written on every line are DataViews: copied four bytes a step, see putView.) */
const ARROW = viewOf(utf8(" => "));

/** What a flags string means for its lines, worked out once per string (they are few). */
interface FlagInfo {
  /** Kept by --itrace=c, by --itrace=r. */
  calls: boolean;
  returns: boolean;
  /** The flags column: two spaces, the flags left-aligned in 22. */
  column: DataView;
  /** The column and the space before the ip: a plain line's start (see perf-output.ts plainBranchLine). */
  head: DataView;
}

/** What the sink needs besides the options. */
export interface ScriptContext {
  conv: TscConversion | undefined;
  comms: ScriptComms;
  /** perf's event names of the session: the Intel PT event's modifiers and the names' width. */
  modifier: string;
  nameWidth: number;
  /** The options the lines follow: --ns, --call-trace's dso column, and the --pid/--tid/--comm filters. */
  options: Pick<PerfScriptOptions, "ns" | "padDso" | "pids" | "tids" | "comms">;
  /** A one-line note to the user (stderr). */
  note: (text: string) => void;
  /** -F srcline: where the sink's lines go (`out` is its `lines`) and their source lines. */
  sourceLines?: SourceLineBatch;
  /** --itrace=i in time: the period in TSC ticks (perf's intel_pt_ns_to_ticks of ns periods). */
  periodTicks: number;
  /** For cbr lines: the TSC's frequency (Hz, 0: unknown) and the maximum non-turbo ratio (0: unknown). */
  tscHz: number;
  maxNonTurbo: number;
}

/** perf's cbr line: the core:bus ratio, the frequency it means and its share of the non-turbo maximum. */
export function cbrText(cbr: number, tscHz: number, maxNonTurbo: number): string {
  // perf: the ratio from the TSC's frequency when AUXTRACE_INFO has none; kHz per ratio unit rounded down.
  const ratio = maxNonTurbo || Math.floor((tscHz + 50_000_000) / 100_000_000);
  if (ratio === 0) return `cbr: ${cbr}`;
  const khz = Math.floor(tscHz / ratio / 1000);
  const mhz = Math.floor((cbr * khz + 500) / 1000);
  const pct = Math.floor((Math.floor((cbr * 1000) / ratio) + 5) / 10);
  return `cbr: ${cbr} freq: ${mhz} MHz (${pct}%)`;
}

/** perf's event modifier of the Intel PT event (evsel__add_modifiers): `:u`, `:k`, `:HG`, ... */
export function eventModifier(event: PerfEvent | undefined): string {
  if (!event) return "";
  const set = new Set(event.attr.flagNames);
  const ex = (n: string) => set.has(`exclude_${n}`);
  let mod = "";
  let guestDefault = false;
  if (ex("user") || ex("kernel") || ex("hv")) {
    if (!ex("kernel")) mod += "k";
    if (!ex("user")) mod += "u";
    if (!ex("hv")) mod += "h";
    guestDefault = true;
  }
  if (ex("host") || ex("guest") === guestDefault) {
    if (!ex("host")) mod += "H";
    if (!ex("guest")) mod += "G";
  }
  return mod === "" ? "" : `:${mod}`;
}

/** The width perf gives event names: the longest name among the file's events and those --itrace adds. */
export function eventNameWidth(events: readonly PerfEvent[], itrace: Itrace, modifier: string): number {
  const names = events.map((e) => e.name ?? `unknown attr type: ${e.attr.type}`);
  if (itrace.insn) names.push(`instructions${modifier}`);
  if (itrace.branches) names.push(`branches${modifier}`);
  if (itrace.transactions) names.push("transactions");
  if (itrace.ptwrite) names.push("ptwrite");
  if (itrace.power) names.push("psb", "cbr", "mwait", "pwre", "exstop", "pwrx");
  return Math.max(0, ...names.map((n) => n.length));
}

/** Return addresses kept per thread for callindent. */
const MAX_DEPTH = 1 << 16;

/** A thread's call stack as perf's thread_stack keeps it: return addresses. */
interface ThreadStack {
  hi: number[];
  lo: number[];
  /** Pushed by a call that ended the trace (popped when tracing begins again). */
  traceEnd: boolean[];
}

/** `finish`: after the last stream (power lines still held go out). */
export function scriptSink(
  out: ByteChunks & { line(text: string): void },
  itrace: Itrace,
  fields: ScriptFields,
  ctx: ScriptContext,
): PerfSink & { finish(): void } {
  const f = (name: Field) => fields.hw.has(name);
  const show = {
    comm: f("comm"),
    tid: f("tid"),
    pid: f("pid"),
    cpu: f("cpu"),
    time: f("time"),
    period: f("period"),
    event: f("event"),
    flags: f("flags"),
    callindent: f("callindent"),
    ip: f("ip"),
    sym: f("sym"),
    symoff: f("symoff"),
    dso: f("dso"),
    addr: f("addr"),
    // perf shows a branch sample's addr by default (its sample_type has ADDR), not an instruction's.
    branchAddr: f("addr") || (!fields.user && !fields.noAddr),
    insnlen: f("insnlen"),
    insn: f("insn"),
    srcline: f("srcline") && ctx.sourceLines !== undefined,
  };
  /** Where a sample's source line goes: that of hi:lo in process pid. */
  const sourceAt = (
    names: AddressNames | undefined,
    pid: number,
    hi: number,
    lo: number,
  ): SourceAddress | undefined => names?.source?.(pid, hi, lo);
  // The branch instruction's bytes, for a branch sample's ilen and insn.
  const code = new Uint8Array(MAX_INSN_LENGTH);
  const codeInfo = new InsnInfo();
  /** perf's " ilen: N" and " insn: xx xx" of the `size` bytes in `bytes`, as -F asks. */
  const insnText = (bytes: Uint8Array, size: number): string => {
    let text = show.insnlen ? ` ilen: ${size}` : "";
    if (show.insn && size > 0) {
      text += " insn:";
      for (let i = 0; i < size; i++) text += ` ${bytes[i]!.toString(16).padStart(2, "0")}`;
    }
    return text;
  };
  const lastInsns = new Map<PerfWhere, { bytes: Uint8Array; size: number }>();
  /** The length of the instruction at hi:lo in process pid (0: none there, or the branch came from nowhere). */
  const insnAt = (names: AddressNames | undefined, pid: number, hi: number, lo: number): number => {
    if (names === undefined || (hi === 0 && lo === 0)) return 0;
    const n = names.code(pid, hi, lo, code, code.length);
    return n > 0 ? Math.max(0, decodeInsn(code.subarray(0, n), 0, hi, lo, ExecMode.Bits64, codeInfo)) : 0;
  };
  // A branch line of flags, ip and addr alone (the untimed fast path's lines) is
  // ptkit's own, byte for byte: written as one piece.
  const plainLines =
    show.flags &&
    show.ip &&
    show.branchAddr &&
    !(show.comm || show.pid || show.tid || show.cpu || show.time || show.period || show.event) &&
    !(show.callindent || show.sym || show.dso || show.srcline || show.insnlen || show.insn);
  const branchName = `branches${ctx.modifier}`.padStart(ctx.nameWidth);
  const insnName = `instructions${ctx.modifier}`.padStart(ctx.nameWidth);
  // The pieces of the lines most samples print, as bytes (written in place).
  const branchNameBytes = utf8(`${branchName}: `);
  const insnNameBytes = utf8(`${insnName}: `);
  const periodOne = utf8("         1 ");
  const noAddr = utf8(hexText(0, 0).padStart(16));
  const flagInfos = new FlagsMemo<FlagInfo>((flags) => ({
    calls: CALL_FLAGS.test(flags),
    returns: RETURN_FLAGS.test(flags),
    column: viewOf(utf8(`  ${flags.padEnd(22)}`)),
    head: viewOf(utf8(`  ${flags.padEnd(22)} `)),
  }));
  const flagInfo = (flags: string): FlagInfo => flagInfos.get(flags);
  // Each stream's instruction sampling (perf: one decoder per queue).
  const periods = new Map<PerfWhere, InsnPeriod>();
  // A time period of no ticks (perf: of 0 ticks) is every instruction.
  const insnEvery = itrace.periodUnit === "i" ? itrace.period : ctx.periodTicks > 0 ? 0 : 1;
  const periodOf = (w: PerfWhere): InsnPeriod => {
    let p = periods.get(w);
    if (p === undefined) {
      p = new InsnPeriod(insnEvery, ctx.periodTicks);
      periods.set(w, p);
    }
    return p;
  };
  let skip = itrace.skip;
  const stacks = new Map<number, ThreadStack>();
  let spacing = 0;
  // The head (comm to time) changes only with the thread or the time: made again then,
  // as bytes (a new time nearly every line): the part before the time, kept while the
  // thread and its comm stay, then the time's digits, written in place. Its text is
  // made only for the lines held as text (headText).
  let headWhere: PerfWhere | undefined;
  let headPid = -2;
  let headTid = -2;
  let headHi = -1;
  let headLo = -1;
  const clock = ctx.conv ? new PerfTimeParts(ctx.conv) : undefined;
  // The head's time (0 without a conversion or a time), and its text (undefined: not made).
  let headSec = 0;
  let headNsec = 0;
  let head: string | undefined = "";
  // The part before the time, and what it was made of; the power lines' (synthesized
  // events: their CPU column is theirs, see fileFields).
  let front = "";
  let synthFront = "";
  let synthHead: string | undefined = "";
  const synthCpu = fields.synth.has("cpu");
  let frontBytes: Uint8Array = new Uint8Array(0);
  let frontComm: string | undefined;
  let frontPid = -2;
  let frontTid = -2;
  let frontCpu = -2;
  const nsDigits = ctx.options.ns ? 9 : 6;
  /** The head as bytes. */
  const writeHead = () => {
    out.bytes(frontBytes);
    if (!show.time) return;
    // `%5u.%06u: ` (or 9 digits): the seconds right-aligned in at least 5 columns.
    let digits = 1;
    for (let v = headSec; v >= 10; v = Math.floor(v / 10)) digits++;
    const width = Math.max(5, digits);
    const at = out.reserve(width + nsDigits + 3);
    const b = out.buffer;
    b.fill(0x20, at, at + width - digits);
    putDecimal(b, at + width - digits, headSec);
    b[at + width] = 0x2e;
    let frac = nsDigits === 9 ? headNsec : Math.floor(headNsec / 1000);
    for (let i = at + width + nsDigits; i > at + width; i--) {
      b[i] = 0x30 + (frac % 10);
      frac = Math.floor(frac / 10);
    }
    b[at + width + nsDigits + 1] = 0x3a;
    b[at + width + nsDigits + 2] = 0x20;
    out.wrote(at + width + nsDigits + 3);
  };
  /** The head's time as text. */
  const timeText = (): string => {
    if (!show.time) return "";
    const frac = String(headNsec).padStart(9, "0");
    return `${String(headSec).padStart(5)}.${ctx.options.ns ? frac : frac.slice(0, 6)}: `;
  };
  /** The head as text. */
  const headText = (): string => {
    head ??= front + timeText();
    return head;
  };
  /** The head of a power line as text. */
  const synthHeadText = (): string => {
    if (synthCpu === show.cpu) return headText();
    synthHead ??= synthFront + timeText();
    return synthHead;
  };
  let selected = true;

  // (A sample's time is TSC hi:lo.)
  const headAt = (w: PerfWhere, hi: number, lo: number): void => {
    if (w === headWhere && w.pid === headPid && w.tid === headTid && hi === headHi && lo === headLo) return;
    headWhere = w;
    headPid = w.pid;
    headTid = w.tid;
    headHi = hi;
    headLo = lo;
    headSec = 0;
    headNsec = 0;
    if (clock !== undefined && (hi !== 0 || lo !== 0)) {
      clock.at(hi, lo);
      headSec = clock.sec;
      headNsec = clock.nsec;
    }
    const comm =
      show.comm || ctx.options.comms
        ? ctx.comms.name(w.pid, w.tid, headSec === 0 && headNsec === 0 ? 0 : clock!.ns)
        : "";
    selected =
      (ctx.options.pids === undefined || ctx.options.pids.includes(w.pid)) &&
      (ctx.options.tids === undefined || ctx.options.tids.includes(w.tid)) &&
      (ctx.options.comms === undefined || ctx.options.comms.includes(comm));
    head = undefined;
    synthHead = undefined;
    if (comm === frontComm && w.pid === frontPid && w.tid === frontTid && w.cpu === frontCpu) return;
    frontComm = comm;
    frontPid = w.pid;
    frontTid = w.tid;
    frontCpu = w.cpu;
    let h = "";
    if (show.comm) h += `${comm.padStart(16)} `;
    if (show.pid && show.tid) h += `${String(w.pid).padStart(5)}/${String(w.tid).padEnd(5)} `;
    else if (show.pid) h += `${String(w.pid).padStart(5)} `;
    else if (show.tid) h += `${String(w.tid).padStart(5)} `;
    const cpu = `[${String(Math.max(w.cpu, 0)).padStart(3, "0")}] `;
    front = show.cpu ? h + cpu : h;
    synthFront = synthCpu ? h + cpu : h;
    frontBytes = utf8(front);
  };
  const headOf = (w: PerfWhere, hi: number, lo: number): string => {
    headAt(w, hi, lo);
    return headText();
  };

  // ` sym+0xoff (dso)` of hi:lo as the fields ask: as bytes, or as text for the lines held as text.
  const symBytes = new SymBytes(show);
  const putSym = (names: AddressNames, pid: number, hi: number, lo: number): void =>
    symBytes.put(out, names, pid, hi, lo);
  const symText = (names: AddressNames, pid: number, hi: number, lo: number): string =>
    symBytes.text(names, pid, hi, lo);

  const stackOf = (tid: number): ThreadStack => {
    let s = stacks.get(tid);
    if (s === undefined) {
      s = { hi: [], lo: [], traceEnd: [] };
      stacks.set(tid, s);
    }
    return s;
  };
  const pop = (s: ThreadStack, hi: number, lo: number) => {
    for (let i = s.hi.length - 1; i >= 0; i--) {
      if (s.hi[i] === hi && s.lo[i] === lo) {
        s.hi.length = s.lo.length = s.traceEnd.length = i;
        return;
      }
    }
  };
  // perf's thread_stack__event for a branch: the depth of the line after it.
  const stackEvent = (
    w: PerfWhere,
    flags: string,
    fh: number,
    fl: number,
    th: number,
    tl: number,
  ): number => {
    const s = stackOf(w.tid);
    if (PUSHES.test(flags)) {
      if (th === 0 && tl === 0) return s.hi.length;
      // The return address: after the call (an asynchronous one: where it came).
      const async = flags.startsWith("hw int") || flags.includes("async");
      const rh = async ? fh : (w.fallHi ?? 0);
      const rl = async ? fl : (w.fallLo ?? 0);
      if (rh === th && rl === tl) return s.hi.length;
      // Bounded memory whatever the trace: calls that never return (a hostile or
      // corrupt trace) drop the oldest half beyond MAX_DEPTH (perf keeps them all).
      if (s.hi.length >= MAX_DEPTH) {
        s.hi.splice(0, MAX_DEPTH / 2);
        s.lo.splice(0, MAX_DEPTH / 2);
        s.traceEnd.splice(0, MAX_DEPTH / 2);
      }
      s.hi.push(rh);
      s.lo.push(rl);
      s.traceEnd.push(flags.startsWith("tr end"));
    } else if (flags.startsWith("tr strt")) {
      pop(s, th, tl);
      while (s.traceEnd.length > 0 && s.traceEnd[s.traceEnd.length - 1]) {
        s.hi.pop();
        s.lo.pop();
        s.traceEnd.pop();
      }
    } else if (POPS.test(flags) && (fh !== 0 || fl !== 0)) pop(s, th, tl);
    return s.hi.length;
  };

  const callindent = (
    w: PerfWhere,
    names: AddressNames,
    flags: string,
    fh: number,
    fl: number,
    th: number,
    tl: number,
    depth: number,
  ): string => {
    // perf names a call (PERF_IP_FLAG_CALL) or trace begin by where it goes, the rest by where they are.
    const isCall = PUSHES.test(flags) || flags.startsWith("tr strt");
    const [hi, lo] = isCall ? [th, tl] : [fh, fl];
    const hit = names.parts(w.pid, hi, lo);
    const name = names.partSym ? hit.name : hi !== 0 || lo !== 0 ? hexText(hi, lo).padStart(16) : "";
    const d = POPS.test(flags) ? depth + 1 : depth;
    // perf prints nothing, not even the indent, for a call to nowhere (tracing stopped).
    const text = name === "" ? "" : `${" ".repeat(d * 4)}${name}`;
    const len = text.length;
    // perf keeps the width from changing often, so that the lines line up.
    if (len > spacing || (len > 0 && len < spacing - 52)) spacing = Math.ceil((len + 4) / 32) * 32;
    let s = len < spacing ? text.padEnd(spacing) : text;
    if (show.dso && !show.ip && !show.branchAddr) {
      names.parts(w.pid, fh, fl);
      s = `(${dsoText(names.partDso ?? "[unknown]", ctx.options.padDso)})\t${s}`;
    }
    return s;
  };

  const printed = (kind: "branch" | "insn" | "transaction"): boolean => {
    if (skip > 0) {
      skip--;
      return false;
    }
    return kind === "branch" ? itrace.branches : kind === "insn" ? itrace.insn : true;
  };

  const synth = {
    comm: fields.synth.has("comm"),
    event: fields.synth.has("event"),
    flags: fields.synth.has("flags"),
    ip: fields.synth.has("ip"),
    sym: fields.synth.has("sym"),
    symoff: fields.synth.has("symoff"),
    dso: fields.synth.has("dso"),
    synth: fields.synth.has("synth"),
    srcline: fields.synth.has("srcline") && ctx.sourceLines !== undefined,
    addr: fields.synth.has("addr"),
  };
  const cbrs = new Map<number, number>();
  // perf's power event lines (psb, cbr): the head, the name, the text padded to 34 columns, the ip.
  // Power lines of a PSB+ with tracing off wait for the IP where tracing starts (perf
  // shows that IP): printed at the next tr strt with its IP, or with 0 before anything else.
  const held: Array<{ line: string; pid: number }> = [];
  let heldNames: AddressNames | undefined;
  const release = (hi: number, lo: number) => {
    for (const h of held) {
      out.text(h.line);
      powerIp(h.pid, hi, lo, heldNames);
    }
    held.length = 0;
  };
  const powerIp = (pid: number, hi: number, lo: number, names: AddressNames | undefined) => {
    if (synth.ip) {
      out.byte(0x20);
      out.hex64(hi, lo, 16, 0x20);
      if (names && (synth.sym || synth.dso)) {
        const hit = names.parts(pid, hi, lo);
        if (synth.sym)
          out.text(
            names.partSym
              ? ` ${hit.name}${synth.symoff ? `+0x${hit.offset.toString(16)}` : ""}`
              : " [unknown]",
          );
        if (synth.dso) out.text(` (${names.partDso ?? "[unknown]"})`);
      }
    }
    if (synth.srcline) ctx.sourceLines!.at(sourceAt(names, pid, hi, lo));
    out.byte(0x0a);
  };
  // The IP perf's decoder was last given (a PSB+'s FUP, an event's): where it shows the
  // events that have none of their own (CBR, PWRE, PWRX, a PTWRITE without FUP).
  let psbHi = 0;
  let psbLo = 0;
  const synced = new Set<PerfWhere>();
  // Whether an event with no IP waits for the tr strt that follows to show its IP: after
  // the PSB a decode starts from (perf's sync walks on to an IP). A PSB perf meets while
  // in sync with tracing off is shown at 0, at once.
  let holdNoIp = true;
  const power = (w: PerfWhere, name: string, text: string, names: AddressNames | undefined, ev: PtEvent) => {
    if (!(name === "ptwrite" ? itrace.ptwrite : itrace.power)) return;
    headAt(w, w.tscHi, w.tscLo);
    const h = synthHeadText();
    if (!selected) return;
    // A new PSB: what the last one held goes out as it is.
    if (held.length > 0 && (name === "psb" || ev.ipHi !== 0 || ev.ipLo !== 0)) release(0, 0);
    let ipHi = ev.ipHi;
    let ipLo = ev.ipLo;
    // A PSB+ with tracing off: perf still takes its FUP's IP (one BDM70 set aside).
    if (name === "psb" && ev.type === EventType.Disabled) {
      ipHi = ev.fromHi;
      ipLo = ev.fromLo;
    }
    if (name === "psb" || (OWN_IP.has(name) && !ev.ipSuppressed)) {
      psbHi = ipHi;
      psbLo = ipLo;
    } else {
      ipHi = psbHi;
      ipLo = psbLo;
    }
    let line = h;
    if (synth.event) line += `${name.padStart(ctx.nameWidth)}: `;
    if (synth.flags) line += `  ${"".padEnd(22)}`;
    // The event's own text is perf's "synth" field.
    if (synth.synth) line += ` ${text}`.padEnd(34);
    // (These events have no address: perf prints 0.)
    if (synth.addr) line += "0".padStart(16);
    if (ipHi === 0 && ipLo === 0 && synth.ip && holdNoIp) {
      held.push({ line, pid: w.pid });
      heldNames = names;
      return;
    }
    out.text(line);
    powerIp(w.pid, ipHi, ipLo, names);
  };
  // A CBR perf shows when the ratio changes (per CPU).
  const cbr = (w: PerfWhere, ev: PtEvent, names: AddressNames | undefined) => {
    if (cbrs.get(w.cpu) === ev.ratio) return;
    cbrs.set(w.cpu, ev.ratio);
    power(w, "cbr", cbrText(ev.ratio, ctx.tscHz, ctx.maxNonTurbo), names, ev);
  };

  // perf's instruction sample: flags, addr (0, or a taken branch's target) before the ip.
  let heldInsn:
    | { head: string; tail: string; bytes: string; flags: string; src: SourceAddress | undefined }
    | undefined;
  // (perf prints the srcline before the instruction's bytes.)
  const insnLine = (
    head: string,
    tail: string,
    bytes: string,
    flags: string,
    toHi: number,
    toLo: number,
    src: SourceAddress | undefined,
  ) => {
    let line = head;
    if (show.flags) line += `  ${flags.padEnd(22)}`;
    if (show.addr) line += hexText(toHi, toLo).padStart(16);
    out.text(line);
    out.text(tail);
    if (show.srcline) ctx.sourceLines!.at(src);
    out.text(bytes);
    out.byte(0x0a);
  };
  const flushInsn = () => {
    if (!heldInsn) return;
    insnLine(heldInsn.head, heldInsn.tail, heldInsn.bytes, heldInsn.flags, 0, 0, heldInsn.src);
    heldInsn = undefined;
  };

  // perf's transactions samples (--itrace=x): at the MODE.TSX's IP, flags x (in a
  // transaction), none (committed) or tx abrt (aborted: its addr is where execution went,
  // known at the branch that follows, which perf names tx abrt too).
  let heldAbort: { head: string; tail: string; src: SourceAddress | undefined } | undefined;
  const abortPending = new Set<PerfWhere>();
  const transaction = (w: PerfWhere, ev: PtEvent, names: AddressNames | undefined) => {
    const aborted = (ev.flags & EventFlag.Aborted) !== 0;
    if (aborted) abortPending.add(w);
    if (!itrace.transactions) return;
    flushInsn();
    const h = headOf(w, w.tscHi, w.tscLo);
    if (!selected || !printed("transaction")) return;
    let line = h;
    if (show.period) line += `${"1".padStart(10)} `;
    if (show.event) line += `${"transactions".padStart(ctx.nameWidth)}: `;
    let tail = "";
    if (show.ip)
      tail += ` ${hexText(ev.ipHi, ev.ipLo).padStart(16)}${names ? symText(names, w.pid, ev.ipHi, ev.ipLo) : ""}`;
    const src = show.srcline ? sourceAt(names, w.pid, ev.ipHi, ev.ipLo) : undefined;
    if (aborted && show.addr) heldAbort = { head: line, tail, src };
    else
      insnLine(line, tail, "", aborted ? "tx abrt" : ev.flags & EventFlag.Speculative ? "x" : "", 0, 0, src);
  };

  let errors = 0;
  let heldExstop: { w: PerfWhere; names: AddressNames | undefined; ev: PtEvent } | undefined;
  const exstopEvent = new PtEvent();
  // perf's pwre text comes from the PWRE its decoder bound to an MWAIT's FUP: a PWRE
  // without an MWAIT before it sets another field, so its line shows the payload of the
  // last bound one (zeros before any). Per stream: whether an MWAIT waits for its FUP,
  // and that payload's text.
  const pwreStates = new Map<PerfWhere, { afterMwait: boolean; text: string }>();
  const pwreState = (w: PerfWhere) => {
    let st = pwreStates.get(w);
    if (st === undefined) {
      st = { afterMwait: false, text: "hw: 0 cstate: 0 sub-cstate: 0" };
      pwreStates.set(w, st);
    }
    return st;
  };
  const flushExstop = () => {
    if (!heldExstop) return;
    const { w, names, ev } = heldExstop;
    heldExstop = undefined;
    power(w, "exstop", `IP: ${ev.ipSuppressed ? 0 : 1}`, names, ev);
  };

  return {
    finish: () => {
      flushExstop();
      if (errors > 0) ctx.note(`${errors} instruction trace error${errors === 1 ? "" : "s"} (as perf warns)`);
      if (heldAbort) insnLine(heldAbort.head, heldAbort.tail, "", "tx abrt", 0, 0, heldAbort.src);
      heldAbort = undefined;
      flushInsn();
      release(0, 0);
      ctx.sourceLines?.flush();
    },
    status: (w, ev, _offset, names) => {
      flushExstop();
      if (ev.psbOffset >= 0) {
        // perf gives the PSB its first sync finds the offset it scanned from (0).
        const offset = synced.has(w) ? ev.psbOffset : 0;
        holdNoIp = offset === 0;
        synced.add(w);
        power(w, "psb", `psb offs: ${offset === 0 ? "0" : `0x${offset.toString(16)}`}`, names, ev);
      } else if (ev.type === EventType.Cbr) cbr(w, ev, names);
    },
    insn: (w, insn, names) => {
      flushExstop();
      if (held.length > 0) release(0, 0);
      flushInsn();
      if (!itrace.insn) return;
      const flags = branchFlags(insn.iclass, insn.insnClass);
      const period = periodOf(w);
      // The sampling clock is perf's decoder time, which moves before the walk to a packet.
      if (!period.take(w.walkTscHi ?? w.tscHi, w.walkTscLo ?? w.tscLo, flags !== undefined, w.walkSeq))
        return;
      const n = period.period();
      headAt(w, w.tscHi, w.tscLo);
      if (!selected || !printed("insn")) return;
      const src = show.srcline ? sourceAt(names, w.pid, insn.ipHi, insn.ipLo) : undefined;
      if (flags !== undefined && (show.flags || show.addr)) {
        // A branch's sample waits for the branch (its flags, "tr end ..." too, and its
        // target are perf's flags and addr).
        let line = headText();
        if (show.period) line += `${String(n).padStart(10)} `;
        if (show.event) line += `${insnName}: `;
        let tail = "";
        if (show.ip)
          tail += ` ${hexText(insn.ipHi, insn.ipLo).padStart(16)}${names ? symText(names, w.pid, insn.ipHi, insn.ipLo) : ""}`;
        const bytes = show.insnlen || show.insn ? insnText(insn.raw, insn.size) : "";
        heldInsn = { head: line, tail, bytes, flags, src };
        return;
      }
      // The line insnLine would print, written in place.
      writeHead();
      if (show.period) out.text(`${String(n).padStart(10)} `);
      if (show.event) out.bytes(insnNameBytes);
      if (show.flags) out.viewBytes(flagInfo("").column);
      if (show.addr) out.bytes(noAddr);
      if (show.ip) {
        out.byte(0x20);
        out.hex64(insn.ipHi, insn.ipLo, 16, 0x20);
        if (names && (show.sym || show.dso)) putSym(names, w.pid, insn.ipHi, insn.ipLo);
      }
      if (show.srcline) ctx.sourceLines!.at(src);
      if (show.insnlen || show.insn) out.text(insnText(insn.raw, insn.size));
      out.byte(0x0a);
    },
    block: () => {},
    branch: (w, flags_, fh, fl, th, tl, names) => {
      flushExstop();
      let flags = flags_;
      if (abortPending.size > 0 && abortPending.delete(w) && flags === "hw int") flags = "tx abrt";
      if (heldAbort) {
        insnLine(heldAbort.head, heldAbort.tail, "", "tx abrt", th, tl, heldAbort.src);
        heldAbort = undefined;
      }
      if (heldInsn) {
        const { head: h, tail, bytes, flags: own, src } = heldInsn;
        heldInsn = undefined;
        // A conditional branch not taken has no target.
        insnLine(h, tail, bytes, flags.startsWith("tr end") ? flags : own, th, tl, src);
      }
      if (held.length > 0) {
        if (flags.startsWith("tr strt")) release(th, tl);
        else release(0, 0);
      }
      const depth = show.callindent ? stackEvent(w, flags, fh, fl, th, tl) : 0;
      if (!itrace.branches) return;
      const info = flagInfo(flags);
      if (!itrace.allBranches && !(itrace.calls && info.calls) && !(itrace.returns && info.returns)) return;
      headAt(w, w.branchTscHi ?? w.tscHi, w.branchTscLo ?? w.tscLo);
      if (!selected || !printed("branch")) return;
      if (plainLines) {
        plainBranchLine(out, info.head, fh, fl, th, tl);
        return;
      }
      writeHead();
      if (show.period) out.bytes(periodOne);
      if (show.event) out.bytes(branchNameBytes);
      if (show.flags) out.viewBytes(info.column);
      if (show.callindent) out.text(callindent(w, names, flags, fh, fl, th, tl, depth));
      const named = show.sym || show.dso;
      if (show.ip) {
        out.byte(0x20);
        out.hex64(fh, fl, 16, 0x20);
        if (named) putSym(names, w.pid, fh, fl);
      }
      if (show.branchAddr) {
        out.viewBytes(ARROW);
        out.hex64(th, tl, 16, 0x20);
        if (named) putSym(names, w.pid, th, tl);
      }
      if (show.srcline) ctx.sourceLines!.at(sourceAt(names, w.pid, fh, fl));
      if (show.insnlen || show.insn) {
        // perf's tr strt (a branch from nowhere) shows the stream's last branch instruction again.
        let last = lastInsns.get(w);
        if (last === undefined) {
          last = { bytes: new Uint8Array(MAX_INSN_LENGTH), size: 0 };
          lastInsns.set(w, last);
        }
        // An asynchronous end (an interrupt) shows none, as perf does on the bench perf.data
        // (1,483 of 1,483; HASE loopy's first one, right after tracing starts, shows the
        // instruction at its IP: not modelled).
        if (flags.startsWith("tr end  async")) last.size = 0;
        else if (fh !== 0 || fl !== 0) {
          last.size = insnAt(names, w.pid, fh, fl);
          last.bytes.set(code.subarray(0, last.size));
        }
        out.text(insnText(last.bytes, last.size));
      }
      out.byte(0x0a);
    },
    event: (w, ev, _offset, names) => {
      if (ev.type === EventType.Cbr) cbr(w, ev, names);
      if (ev.type === EventType.AsyncDisabled || ev.type === EventType.AsyncBranch)
        periods.get(w)?.emptyWalk(w.walkTscHi ?? w.tscHi, w.walkTscLo ?? w.tscLo, w.walkSeq);
      if (ev.type === EventType.Disabled || ev.type === EventType.AsyncDisabled) periods.get(w)?.stop();
      if (ev.type !== EventType.Pwre) flushExstop();
      // (The decoder gives the MWAIT, its EXSTOP, then the PWRE; the PWRX ends the C-state.)
      if (ev.type === EventType.Mwait || ev.type === EventType.Pwrx)
        pwreState(w).afterMwait = ev.type === EventType.Mwait;
      switch (ev.type) {
        case EventType.Ptwrite:
          power(
            w,
            "ptwrite",
            `IP: ${ev.ipSuppressed ? 0 : 1} payload: 0x${hexText(ev.payloadHi, ev.payloadLo)}`,
            names,
            ev,
          );
          break;
        case EventType.Mwait:
          power(
            w,
            "mwait",
            `hints: 0x${ev.hints.toString(16)} extensions: 0x${ev.ext.toString(16)}`,
            names,
            ev,
          );
          break;
        case EventType.Pwre: {
          const st = pwreState(w);
          if (st.afterMwait)
            st.text = `hw: ${ev.flags & EventFlag.Hw ? 1 : 0} cstate: ${ev.state} sub-cstate: ${ev.subState}`;
          power(w, "pwre", st.text, names, ev);
          flushExstop();
          break;
        }
        case EventType.Exstop:
          // Held: a PWRE the decoder gives after it goes first (perf shows the FUP's
          // events in the order MWAIT, PWRE, EXSTOP).
          heldExstop = { w, names, ev: exstopEvent.copyFrom(ev) };
          return;
        case EventType.Pwrx:
          // (perf's pwrx text ends in a space.)
          power(
            w,
            "pwrx",
            `deepest cstate: ${ev.deepest} last cstate: ${ev.last} wake reason: 0x${wakeReason(ev.flags).toString(16)} `,
            names,
            ev,
          );
          break;
        case EventType.Tsx:
          transaction(w, ev, names);
          break;
      }
    },
    error: (w, _offset, _message, code, ipHi = 0, ipLo = 0) => {
      flushExstop();
      flushInsn();
      if (held.length > 0) release(0, 0);
      // A decode error ends perf's trace: the thread stacks start afresh, the decoder
      // syncs again. Not an overflow: perf's decoder goes on in the same trace (its
      // trace_nr unchanged), and so do its thread stacks.
      // (Nor its continuous_period: the first walk after an OVF may be a sample.)
      if (code !== ErrorCode.Overflow) {
        stacks.clear();
        periods.get(w)?.stop();
      }
      if (!itrace.errors) return;
      errors++;
      // perf's line for an instruction trace error (perf_event__fprintf_auxtrace_error).
      const [n, what] = perfError(code);
      const ns =
        ctx.conv && (w.tscHi !== 0 || w.tscLo !== 0)
          ? tscToPerfTime((BigInt(w.tscHi >>> 0) << 32n) | BigInt(w.tscLo >>> 0), ctx.conv)
          : 0n;
      const time =
        ns === 0n ? "0" : `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, "0")}`;
      const ip = ipHi === 0 && ipLo === 0 ? "0" : `0x${hexText(ipHi, ipLo)}`;
      out.line(
        ` instruction trace error type 1 time ${time} cpu ${w.cpu} pid ${w.pid} tid ${w.tid} ip ${ip} code ${n}: ${what}`,
      );
    },
    switched: () => {},
    // perf synced at the PSB the OVF cut short (later PSBs show their offsets), and the
    // lines held for an IP go out without one (its decoder has none).
    overflow: (w) => {
      flushExstop();
      if (held.length > 0) release(0, 0);
      synced.add(w);
    },
  };
}

/** Events whose own IP perf shows (bound to a FUP); the others show the last IP perf's decoder had. */
const OWN_IP = new Set(["mwait", "exstop", "ptwrite"]);

/** perf's pwrx wake reason: interrupt 1, store 4, autonomous (hardware) 8. */
function wakeReason(flags: number): number {
  return (
    (flags & EventFlag.Interrupt ? 1 : 0) |
    (flags & EventFlag.Store ? 4 : 0) |
    (flags & EventFlag.Autonomous ? 8 : 0)
  );
}

/**
 * perf's code and message for a ptkit decode error (ErrorCode; undefined: lost trace
 * data), perf 6.1's INTEL_PT_ERR_* numbers.
 */
function perfError(code: number | undefined): [number, string] {
  switch (code) {
    case undefined:
      return [8, "Lost trace data"];
    case ErrorCode.NoMem:
      return [1, "Memory allocation failed"];
    case ErrorCode.Internal:
      return [2, "Internal error"];
    case ErrorCode.NoSync:
    case ErrorCode.BadOpcode:
    case ErrorCode.BadPacket:
    case ErrorCode.BadContext:
    case ErrorCode.BadStatusUpdate:
      return [3, "Bad packet"];
    case ErrorCode.Eos:
      return [4, "No more data"];
    case ErrorCode.NoMap:
    case ErrorCode.BadImage:
    case ErrorCode.BadInsn:
      return [5, "Failed to get instruction"];
    case ErrorCode.BadQuery:
    case ErrorCode.NoIp:
    case ErrorCode.IpSuppressed:
    case ErrorCode.RetStackEmpty:
    case ErrorCode.BadRetComp:
    case ErrorCode.NoEnable:
      return [6, "Trace doesn't match instruction"];
    case ErrorCode.Overflow:
      return [7, "Overflow packet"];
    default:
      return [9, "Unknown error!"];
  }
}

/** hi:lo in hex without leading zeros. */
export function hexText(hi: number, lo: number): string {
  return hi === 0
    ? (lo >>> 0).toString(16)
    : `${(hi >>> 0).toString(16)}${(lo >>> 0).toString(16).padStart(8, "0")}`;
}

/** --call-trace's dso column: padded to `pad` columns; a longer name cut to one less and a space. */
function dsoText(name: string, pad: number): string {
  if (pad === 0) return name;
  return name.length < pad ? name.padEnd(pad) : `${name.slice(0, pad - 1)} `;
}
