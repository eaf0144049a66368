/**
 * The analysis outputs of a decode: options (`--timeline`, `--perfetto`,
 * `--min-duration`, `--folded`, `--folded-weight`, `--coverage`, `--afl-map`,
 * `--edges`, `--jsonl`, `--latency`, `--symbols`, `--stack-depth`, and `ptkit
 * latency`'s report) in, files out, through the analysis layer's call stacks and
 * exports.
 * Frames are named by the symbols of the code loaded (see analysis-symbols.ts) without
 * being asked, as perf names them.
 *
 * The interface, the same for any command that decodes (`ptkit flow` uses it through
 * analysis-unit.ts; `ptkit perf` can feed it from its per-CPU streams):
 * ```ts
 * const outputs = AnalysisOutputs.open(io, options, { elfs, nsPerTick, name });  // or an error message
 * const feed = outputs.stream();     // a FlowTracker per decoded stream (CPU or trace file):
 * feed.thread(pid, tid, comm);        //   the running thread changed (call feed.time(tscHi, tscLo) first)
 * feed.insnRecord(insn);              //   every instruction decoded (InsnDecoder's Insn)
 * feed.event(ev);                     //   every event, in order (its TSC moves the clock)
 * feed.error(offset, message);        //   every decode error (a gap: stacks end there)
 * const problem = outputs.finish();   // ends open frames, writes and closes the files
 * ```
 * Streams without thread information run as pid 0 / tid 0, named `name`.
 * {@link StreamFeeds} does the same in the shape of `ptkit perf`'s sink (perf-stream.ts):
 * its methods take the stream's `where` (pid, tid, TSC) and keep one feed per stream.
 */

import {
  CallAnalysis,
  CallLatency,
  type CallSink,
  type ChunkOut,
  type ClockInfo,
  Coverage,
  DroppedTotals,
  type FlowTracker,
  FoldedStacks,
  FrameNames,
  immediate,
  JsonlWriter,
  type NameDemangler,
  PerfettoWriter,
  ShortFrameFilter,
  type Symbolizer,
  TimelineWriter,
  type TrackSymbols,
} from "../analysis/index.js";
import type { PtEvent } from "../event/index.js";
import type { Block, BlockDecoder, Insn } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { SegmentRecorder } from "../shard/segments.js";
import { lt64 } from "../time/index.js";
import { BlockInsns } from "./analysis-blocks.js";
import { latencyProblem, writeLatencyReport } from "./analysis-latency.js";
import { type AnalysisOptions, type FILE_OPTIONS, wantsLatency } from "./analysis-options.js";
import { CodeSymbols, loadCodeSymbols, type SymbolSource } from "./analysis-symbols.js";
import { coverageBlocks } from "./coverage-rows.js";
import { ioErrorText } from "./file-kind.js";
import { CodeWalker } from "./flow-walk.js";
import { type InputHints, withHint } from "./hints.js";
import type { FileWriter, SessionIo } from "./io.js";

export {
  type AnalysisOptions,
  defaultAnalysisOptions,
  type LatencyReport,
  parseAnalysisOption,
  wantsAnalysis,
  wantsTime,
} from "./analysis-options.js";

export interface AnalysisContext {
  /** The code loaded (`--elf`, `--raw` arguments), whose ELF files' symbols name functions. */
  code: readonly SymbolSource[];
  /** Told once per code region whose frames are named by address, why and what to do (see CodeSymbols). */
  warn?: (text: string) => void;
  /** Nanoseconds per TSC tick when the TSC frequency is known (0: unknown). */
  nsPerTick: number;
  /** The name of the thread when a stream has no thread information (e.g. the trace file). */
  name: string;
  /** Names from this symbolizer instead of the `code`'s (ptkit perf's, from the recorded binaries). */
  symbolizer?: Symbolizer;
  /** Demangles the `code`'s C++ and Rust names (absent: names as the symbol tables spell them). */
  demangler?: NameDemangler;
  /** The front end's remedies in warnings (see hints.ts). */
  hints?: InputHints;
  /** Each thread's own symbols (its process's), where it has them; else `symbolizer`'s. */
  trackSymbols?: TrackSymbols;
  /**
   * The symbols that name coverage blocks, the first that covers an address (ptkit
   * perf: every process image's, whatever else is written; absent: those of the
   * frames named, see FrameNames.anySymbol).
   */
  coverageSymbols?: () => readonly Symbolizer[];
  /**
   * The perf time (ns) of the clock's 0, when known (ptkit perf, a TSC conversion, an
   * "ns" clock): the Perfetto timeline's timestamps (and with `perfTime` the JSON's)
   * are then perf's.
   */
  perfOrigin?: (clock: ClockInfo) => number | undefined;
  /** Warn when the JSON timeline passes this many bytes (default {@link JSON_TIMELINE_WARN_BYTES}). */
  jsonWarnBytes?: number;
}

/** chrome://tracing loads no JSON of 256 MiB or more (and the Perfetto UI gives up near 1 GB). */
export const JSON_TIMELINE_WARN_BYTES = 256 * 1024 * 1024;

type FileKind = (typeof FILE_OPTIONS)[string];
const FILE_KINDS: readonly FileKind[] = [
  "timeline",
  "perfetto",
  "jsonl",
  "folded",
  "coverage",
  "aflMap",
  "edges",
  "latency",
];

interface Output {
  kind: FileKind;
  path: string;
  file: FileWriter;
}

export class AnalysisOutputs {
  analysis!: CallAnalysis;
  private folded: FoldedStacks | undefined;
  private coverage: Coverage | undefined;
  private latency: CallLatency | undefined;
  /** The JSON timeline's size was warned of. */
  private jsonWarned = false;

  private constructor(
    private readonly io: SessionIo,
    private readonly options: AnalysisOptions,
    private readonly names: FrameNames,
    private files: readonly Output[],
    private readonly context: AnalysisContext,
  ) {
    this.build();
  }

  /**
   * Start the analysis over, nothing counted (a fast decode handed the trace over).
   * Only for outputs written at the end: {@link feedable}.
   */
  reset(): void {
    this.build();
  }

  /** The analysis and the sinks of the outputs. */
  private build(): void {
    const { files, names, options, context } = this;
    this.folded = undefined;
    this.coverage = undefined;
    this.latency = undefined;
    const sinks: CallSink[] = [];
    const timelines: CallSink[] = [];
    let jsonl: JsonlWriter | undefined;
    const origin = (clock: ClockInfo) => context.perfOrigin?.(clock) ?? 0;
    // --timeline-summary: the calls left out, per function, go in the JSON timeline's metadata.
    const plan = options.summaryPlan;
    const dropped = plan ? new DroppedTotals(names) : undefined;
    const summary = plan
      ? () => `"summary":{"minDuration":${plan.bound},"budget":${plan.budget},${dropped!.json()}}`
      : undefined;
    for (const { kind, path, file } of files) {
      const write = immediate((chunk: Uint8Array) => file.write(chunk));
      if (kind === "timeline") {
        const json = this.jsonWarning(path, write);
        timelines.push(
          new TimelineWriter(json, names, {
            origin: options.perfTime ? origin : undefined,
            otherData: summary,
          }),
        );
      } else if (kind === "perfetto") timelines.push(new PerfettoWriter(write, names, { origin }));
      else if (kind === "jsonl") jsonl = new JsonlWriter(write, names);
    }
    const probe = options.summaryProbe;
    if (probe) {
      // The summary's first decode: frames by duration and what unbounded timelines weigh (nothing kept).
      sinks.push(probe.durations);
      const count = (add: (n: number) => void) => immediate((chunk: Uint8Array) => add(chunk.length));
      sinks.push(
        new TimelineWriter(
          count((n) => (probe.timelineBytes += n)),
          names,
          {},
        ),
      );
      sinks.push(
        new PerfettoWriter(
          count((n) => (probe.perfettoBytes += n)),
          names,
          { origin },
        ),
      );
    }
    const min = Math.max(options.minDuration ?? 0, plan?.bound ?? 0);
    if (min > 0 && timelines.length > 0)
      sinks.push(
        new ShortFrameFilter(
          timelines,
          min,
          dropped ? (k, hi, lo, sc, d) => dropped.add(k, hi, lo, sc, d) : undefined,
        ),
      );
    else sinks.push(...timelines);
    if (options.folded !== undefined) {
      this.folded = new FoldedStacks(names);
      sinks.push(this.folded);
    }
    if (wantsLatency(options)) {
      const report = options.latencyReport;
      this.latency = new CallLatency(names, { slowest: report?.slowest, only: report?.only });
      sinks.push(this.latency);
    }
    const tables = options.tables;
    if (tables !== undefined) {
      tables.recorder = new SegmentRecorder(names, tables.calls);
      sinks.push(tables.recorder);
    }
    if (
      options.coverage !== undefined ||
      options.aflMap !== undefined ||
      options.edges !== undefined ||
      tables !== undefined
    )
      // The AFL map alone needs no tables of blocks and edges.
      this.coverage = new Coverage(
        undefined,
        options.coverage === undefined && options.edges === undefined && tables === undefined,
      );
    if (tables !== undefined) tables.coverage = this.coverage;
    this.analysis = new CallAnalysis({
      sinks,
      coverage: this.coverage,
      jsonl,
      nsPerTick: context.nsPerTick,
      depthLimit: options.depthLimit,
      frameScope: names.perThread ? (track) => names.scope(track) : undefined,
      segments: tables !== undefined,
    });
  }

  /**
   * `write`, warning once when the JSON timeline at `path` passes what chrome://tracing
   * loads (see {@link JSON_TIMELINE_WARN_BYTES}).
   */
  private jsonWarning(path: string, write: (chunk: Uint8Array) => void): ChunkOut {
    const limit = this.context.jsonWarnBytes ?? JSON_TIMELINE_WARN_BYTES;
    let bytes = 0;
    return immediate((chunk: Uint8Array) => {
      const before = bytes;
      bytes += chunk.length;
      // (Once: not again when the outputs start over.)
      if (before < limit && bytes >= limit && !this.jsonWarned) {
        this.jsonWarned = true;
        const hints = this.context.hints ?? {};
        const size = limit >= 2 ** 20 ? `${Math.round(limit / 2 ** 20)} MiB` : `${limit} bytes`;
        const remedy =
          hints.smallerTimeline ?? "write Perfetto's own format instead, or leave out short calls";
        this.context.warn?.(
          `${hints.outputs?.timeline ?? "the timeline"}: ${path} has passed ${size}: chrome://tracing loads no more, and JSON this large is slow or fails in the Perfetto UI; ${remedy}.`,
        );
      }
      write(chunk);
    });
  }

  /** Open the files `options` name (and read the symbols): the outputs, or an error message. */
  static open(io: SessionIo, options: AnalysisOptions, context: AnalysisContext): AnalysisOutputs | string {
    const extra = options.symbolFiles.map((file): SymbolSource => ({ kind: "symbols", file }));
    const code =
      context.symbolizer ??
      loadCodeSymbols(io, [...context.code, ...extra], {
        warn: context.warn,
        demangler: context.demangler,
        hints: context.hints,
      });
    if (typeof code === "string") return code;
    const named = FILE_KINDS.flatMap((kind) => {
      const path = options[kind];
      return path === undefined ? [] : [{ kind, path }];
    });
    const files = openFiles(io, named);
    if (typeof files === "string") return files;
    const names =
      code instanceof CodeSymbols
        ? new FrameNames(code.symbolizer, undefined, (hi, lo) => code.unnamed(hi, lo))
        : new FrameNames(code, context.trackSymbols);
    return new AnalysisOutputs(io, options, names, files, context);
  }

  /** The coverage when it is the only output (the fast coverage decode can fill it), else undefined. */
  coverageOnly(): Coverage | undefined {
    const a = this.analysis;
    return a.sinks.length === 0 && a.jsonl === undefined ? this.coverage : undefined;
  }

  /**
   * Whether every output is written at the end and needs no time (coverage, folded
   * stacks weighed by instructions): a decode may feed them and then {@link reset}
   * them to start over.
   */
  feedable(): boolean {
    const o = this.options;
    return (
      o.timeline === undefined &&
      o.perfetto === undefined &&
      o.jsonl === undefined &&
      !wantsLatency(o) &&
      (o.folded === undefined || o.foldedWeight === "insn")
    );
  }

  /**
   * Whether a decode may feed the outputs and then {@link restart} them to start over:
   * every output but JSON Lines, shard tables and the timeline summary's first decode
   * (those keep what was fed elsewhere too), into files that {@link reopens}.
   */
  restartable(): boolean {
    const o = this.options;
    return o.jsonl === undefined && o.tables === undefined && o.summaryProbe === undefined && this.reopens();
  }

  /** Whether every file, opened again, is empty (FileWriter.reopens: not a pipe or a terminal). */
  reopens(): boolean {
    return this.files.every((f) => f.file.reopens === true);
  }

  /**
   * Start over, nothing counted and the files opened anew (emptied: what was streamed
   * into them is gone): a fast decode handed the trace over ({@link restartable}
   * outputs). An error message when a file cannot be opened again (then all are closed).
   */
  restart(): string | undefined {
    this.abandon();
    const files = openFiles(this.io, this.files);
    if (typeof files === "string") return files;
    this.files = files;
    this.build();
    return undefined;
  }

  /** A feed for one decoded stream. */
  stream(): FlowTracker {
    return this.analysis.stream(this.context.name);
  }

  private warnClock(): void {
    const warning = clockWarning(this.options, this.analysis.clock, this.context.hints ?? {});
    if (warning !== undefined) this.context.warn?.(warning);
  }

  /** Coverage past its tables' limit is not exact: say so (the JSON does, the map and the edge list cannot). */
  private warnDropped(): void {
    const d = this.coverage?.dropped();
    if (d === undefined || d.blocks + d.edges === 0) return;
    const tracePart = this.context.hints?.tracePart;
    this.context.warn?.(
      `coverage: over ${d.limit} distinct blocks or edges: ${d.blocks} block and ${d.edges} edge runs not counted (the JSON's "dropped"); decode part of the trace at a time${tracePart === undefined ? "" : ` (${tracePart})`} to count them all.`,
    );
  }

  /** Close the files as they are, the analysis unfinished (a decode that starts again opens them again). */
  abandon(): void {
    for (const { file } of this.files) {
      try {
        file.close();
      } catch {
        // Opened again next: any problem shows there.
      }
    }
  }

  /** End the analysis, write what is written at the end and close the files: an error message or undefined. */
  finish(): string | undefined {
    this.analysis.finish();
    this.warnClock();
    this.warnDropped();
    const problems: string[] = [];
    const latency = this.latency?.summary();
    const all = this.context.coverageSymbols?.();
    const symbol = (hi: number, lo: number) => this.names.anySymbol(hi, lo, all);
    const answers = this.options.answers;
    if (answers !== undefined) {
      answers.latency = latency;
      if (this.options.coverage !== undefined) answers.coverage = coverageBlocks(this.coverage!, symbol);
    }
    for (const { kind, path, file } of this.files) {
      try {
        const write = immediate((chunk: Uint8Array) => file.write(chunk));
        if (kind === "folded")
          this.folded!.write(
            write,
            this.options.foldedWeight,
            answers &&
              ((f) => {
                answers.folded = f;
              }),
          );
        else if (kind === "coverage") this.coverage!.write(write, symbol);
        else if (kind === "aflMap") file.write(this.coverage!.aflMap);
        else if (kind === "edges") this.coverage!.writeEdges(write);
        else if (kind === "latency") writeLatencyReport(latency!, true, write);
        file.close();
      } catch (e) {
        problems.push(`cannot write ${path}: ${ioErrorText(e)}.`);
      }
    }
    const report = this.options.latencyReport;
    if (report !== undefined) {
      const problem = latencyProblem(latency!, this.latency!);
      if (problem === undefined) writeLatencyReport(latency!, report.json, report.out);
      else problems.push(problem);
    }
    return problems.length > 0 ? problems.join(" ") : undefined;
  }
}

/** Open (create or empty) the files of `outputs`: them, or an error message (then none is left open). */
function openFiles(io: SessionIo, outputs: readonly Omit<Output, "file">[]): Output[] | string {
  const files: Output[] = [];
  for (const { kind, path } of outputs) {
    try {
      files.push({ kind, path, file: io.openWrite(path) });
    } catch (e) {
      for (const f of files) f.file.close();
      return `cannot write ${path}: ${ioErrorText(e)}.`;
    }
  }
  return files;
}

/**
 * Outputs with times in a clock that is not real time: say so once (the files say it
 * too: the timeline's otherData.timeUnit and process names).
 */
function clockWarning(
  options: AnalysisOptions,
  clock: ClockInfo | undefined,
  hints: InputHints,
): string | undefined {
  const named = hints.outputs ?? {};
  const timed = [
    ...(options.timeline === undefined ? [] : [named.timeline ?? "the timeline"]),
    ...(options.perfetto === undefined ? [] : [named.perfetto ?? "the Perfetto trace"]),
    ...(options.folded !== undefined && options.foldedWeight === "time"
      ? [named.foldedTime ?? "the folded stacks weighed by time"]
      : []),
  ];
  if (timed.length === 0 || clock === undefined || clock.unit === "ns") return undefined;
  const what = timed.join(" and ");
  return clock.unit === "tsc"
    ? `${what}: times are TSC ticks, written as if nanoseconds: the TSC frequency is unknown${hints.nomFreq === undefined ? "" : `; give it${withHint(hints.nomFreq)}`}.`
    : `${what}: times are instruction counts, written as if nanoseconds: the trace has no timing packets (TSC) to go by; trace with TSC packets (TSCEn) for times.`;
}

/** Who runs a decoded stream and when, as `ptkit perf` tracks it (its PerfWhere fits). */
export interface StreamWhere {
  pid: number;
  tid: number;
  /** The TSC of the last timed event (0: none yet). */
  tscHi: number;
  tscLo: number;
}

/** The track a stream's running thread is shown on: pid, tid and its name. */
export interface StreamThread {
  pid: number;
  tid: number;
  name: string;
}

/** The TSCs (halves) at which process `pid` exec'd, in time order; undefined: none. */
export type ExecTimes = (pid: number) => readonly { tscHi: number; tscLo: number }[] | undefined;

/** A TSC past every real one: no exec to come. */
const NEVER = 0xffffffff;

const trackKey = (t: StreamThread) => `${t.pid}/${t.tid}`;

/**
 * The analysis fed like `ptkit perf`'s sink: one feed per decoded stream, told apart by
 * the identity of the stream's `where` object (one per stream, updated in place).
 * Each instruction is at the time `where` holds (ticks and status updates move it
 * without reaching the sink). `threadOf` gives the track of a stream's thread
 * (default: `where`'s pid and tid, unnamed).
 *
 * A switch takes effect when the stream next feeds something, at the time of the
 * switch: threads that run untraced in between get no track. A thread that moves to
 * another stream is let go on the stream it left first (its switch there is
 * applied), so one thread is never on two streams and keeps one call stack.
 *
 * With `execsOf`, a thread whose process exec'd (by the time its stream is at, or
 * switches to it) has its frames ended "exec" at the exec's time, by the stream that
 * ran it last ({@link FlowTracker.exec}); its new program starts a new root. Each track
 * counts the execs applied to it, so each exec is applied once however many streams
 * pass its time.
 */
export class StreamFeeds<W extends StreamWhere = StreamWhere> {
  private readonly feeds = new Map<W, FlowTracker>();
  /** Per stream, the instructions of its blocks (block decoder). */
  private readonly blockInsns = new Map<W, BlockInsns>();
  private lastWhere: W | undefined;
  private lastFeed: FlowTracker | undefined;
  /** Streams whose thread changed since they last fed anything, with the time of that change. */
  private readonly pending = new Map<W, { hi: number; lo: number }>();
  /** The stream each track ("pid/tid") runs on, and the track of each stream. */
  private readonly holders = new Map<string, W>();
  private readonly held = new Map<W, StreamThread>();
  /** Per track ever taken: how many of its process's execs have been applied to it. */
  private readonly execsDone = new Map<string, number>();
  /** The next exec of the last stream's thread: instructions before it take the fast path. */
  private execHi = NEVER;
  private execLo = NEVER;

  constructor(
    private readonly outputs: AnalysisOutputs,
    private readonly threadOf?: (where: W) => StreamThread,
    private readonly execsOf?: ExecTimes,
  ) {}

  insn(where: W, insn: Insn): void {
    const feed = this.feed(where);
    if (where.tscHi !== 0 || where.tscLo !== 0) feed.time(where.tscHi, where.tscLo);
    feed.insnRecord(insn);
  }

  /** A block of instructions in `image` that `decoder` just returned, not empty: each of its instructions. */
  block(where: W, block: Block, image: Image, decoder?: BlockDecoder): void {
    const feed = this.feed(where);
    if (where.tscHi !== 0 || where.tscLo !== 0) feed.time(where.tscHi, where.tscLo);
    let insns = this.blockInsns.get(where);
    if (insns === undefined) {
      insns = new BlockInsns(new CodeWalker());
      this.blockInsns.set(where, insns);
    }
    insns.feed(block, image, feed, decoder);
  }

  event(where: W, ev: PtEvent): void {
    this.feed(where).event(ev);
  }

  /**
   * The stream's feed, with its thread and time as of `where` (as before a block):
   * for a decode that feeds it directly (ptkit perf's fast path).
   */
  ready(where: W): FlowTracker {
    const feed = this.feed(where);
    if (where.tscHi !== 0 || where.tscLo !== 0) feed.time(where.tscHi, where.tscLo);
    return feed;
  }

  error(where: W, offset: number, message: string): void {
    this.feed(where).error(offset, message);
  }

  /** The stream is cut at TSC hi:lo (see FlowTracker.timeLimit). */
  timeLimit(where: W, hi: number, lo: number): void {
    this.feed(where).timeLimit(hi, lo);
  }

  /** The stream's thread changed (at the time in `where`). */
  switched(where: W): void {
    if (!this.pending.has(where)) this.pending.set(where, { hi: where.tscHi, lo: where.tscLo });
    if (where === this.lastWhere) this.lastWhere = undefined;
  }

  private feed(where: W): FlowTracker {
    if (where === this.lastWhere && lt64(where.tscHi, where.tscLo, this.execHi, this.execLo))
      return this.lastFeed!;
    let feed = this.feeds.get(where);
    if (feed === undefined) {
      feed = this.outputs.stream();
      this.feeds.set(where, feed);
      this.pending.set(where, { hi: where.tscHi, lo: where.tscLo });
    }
    if (this.pending.has(where)) this.take(where, feed);
    const next = this.execs(this.held.get(where)!, where.tscHi, where.tscLo);
    this.execHi = next?.tscHi ?? NEVER;
    this.execLo = next?.tscLo ?? NEVER;
    this.lastWhere = where;
    this.lastFeed = feed;
    return feed;
  }

  /** Apply the stream's pending switch. */
  private take(where: W, feed: FlowTracker): void {
    const at = this.pending.get(where)!;
    this.pending.delete(where);
    const t = this.threadOf?.(where) ?? { pid: where.pid, tid: where.tid, name: "" };
    const key = trackKey(t);
    const holder = this.holders.get(key);
    if (holder !== undefined && holder !== where && this.pending.has(holder))
      this.take(holder, this.feeds.get(holder)!);
    // Before it runs here: the frames of a program it exec'd away from end on the stream it left.
    this.execs(t, at.hi, at.lo);
    const old = this.held.get(where);
    if (old !== undefined && this.holders.get(trackKey(old)) === where) this.holders.delete(trackKey(old));
    this.holders.set(key, where);
    this.held.set(where, t);
    if (at.hi !== 0 || at.lo !== 0) feed.time(at.hi, at.lo);
    feed.thread(t.pid, t.tid, t.name);
  }

  /**
   * Apply the execs of thread `t`'s process up to TSC hi:lo (see the class comment);
   * a track seen for the first time has no frames to end. Returns the next exec.
   */
  private execs(t: StreamThread, hi: number, lo: number): { tscHi: number; tscLo: number } | undefined {
    const times = this.execsOf?.(t.pid);
    if (times === undefined) return undefined;
    const key = trackKey(t);
    const seen = this.execsDone.get(key);
    let done = seen ?? 0;
    for (let e = times[done]; e !== undefined && !lt64(hi, lo, e.tscHi, e.tscLo); e = times[++done]) {
      if (seen === undefined) continue;
      for (const feed of this.feeds.values()) if (feed.exec(t.pid, t.tid, e.tscHi, e.tscLo)) break;
    }
    this.execsDone.set(key, done);
    return times[done];
  }
}
