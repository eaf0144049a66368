/**
 * The perf.data pipeline, browser-safe: decode the Intel PT of a perf.data file like
 * `perf script --itrace`, from the file alone: the decoder set up from the file
 * (errata from the cpuid feature; MTC, nominal frequency and TSC:CTC ratio from
 * AUXTRACE_INFO), the binaries from its MMAP/MMAP2 records (perf-images.ts), the
 * kernel where KASLR put it (perf-kernel.ts), the running thread of each CPU from its
 * switch records or else by CR3 (perf-stream.ts, perf-cr3.ts), each stream read a
 * window at a time (TraceBytes), output as perf-output.ts writes it, and on request
 * the analysis outputs of perf-analysis.ts (timeline, folded stacks, coverage). Files
 * come through the {@link SessionIo} given: `ptkit perf` passes the process's, the
 * web app its dropped files.
 */

import {
  FastCoverage,
  LazyDemangler,
  type NameDemangler,
  type SymbolTable,
  type WalkLogSink,
  type WalkLogSource,
  WalkLogWriter,
} from "../analysis/index.js";
import { diagnosticLine } from "../base/diagnostic.js";
import { doubleFields, splitBigInt } from "../base/halves.js";
import { cpuErrata, parseCpu, parseCUint } from "../cpu/index.js";
import { type DecoderConfig, defaultDecoderConfig } from "../event/index.js";
import { SameCodeCaches } from "../flow/index.js";
import { Image } from "../image/index.js";
import { TraceBytes, type TraceSource } from "../packet/index.js";
import {
  type AuxtraceInfo,
  auxStreams,
  auxtraceBuffers,
  type ByteSource,
  type CpuSwitch,
  cpuFromCpuid,
  diagnosticText,
  intelPtDecodeParams,
  intelPtEvent,
  PerfDataReader,
  PerfRecord,
  type PerfTasks,
  parseAuxtraceInfo,
  perfTimeToTsc,
  RecordType,
  readTasks,
  SampleType,
  streamSource,
  type Timed,
  type TscConversion,
} from "../perf/index.js";
import type { TablesOut } from "../shard/tables-out.js";
import { type AnalysisOptions, wantsAnalysis, wantsTime } from "./analysis-outputs.js";
import type { ByteLines } from "./byte-lines.js";
import { type CodeFile, loadElf } from "./flow-image.js";
import type { InputHints } from "./hints.js";
import type { SessionIo, WalkThreads } from "./io.js";
import { bothSinks, PerfAnalysis, perfNsPerTick, ThreadNames } from "./perf-analysis.js";
import { cpuProblem, tidProblem } from "./perf-checks.js";
import { Cr3Threads } from "./perf-cr3.js";
import { DEBUG_ROOT } from "./perf-debug-files.js";
import { AllProcessSymbols } from "./perf-frame-symbols.js";
import {
  fastBranchStreams,
  fastPathFits,
  fastPerfStreams,
  fastQuietStreams,
  logPerfStream,
  replayPerfStreams,
  skipBranches,
  skipErrors,
} from "./perf-graph.js";
import { BinaryFinder, KERNEL_NAME, ProcessImages, sameBinary } from "./perf-images.js";
import { kernelMapOf, loadKernel } from "./perf-kernel.js";
import { jsonlSink, type PerfShow, textSink } from "./perf-output.js";
import { ScriptComms } from "./perf-script-comms.js";
import { eventModifier, eventNameWidth, scriptSink } from "./perf-script-fields.js";
import {
  type Itrace,
  namesSymbols,
  type PerfScriptOptions,
  parseItrace,
  untimedBranchLines,
} from "./perf-script-options.js";
import { fileFields, OtherSamples, sampleTimeline } from "./perf-script-samples.js";
import { SourceLineBatch, type SourceLineLookup } from "./perf-script-srcline.js";
import {
  blockDecoderConfig,
  interleave,
  type PerfDecoder,
  type PerfSink,
  type PerfWhere,
  type StreamContext,
  type TscRange,
} from "./perf-stream.js";
import { planSummary, timelineSizeNote } from "./perf-timeline-summary.js";

/**
 * How perf script's lines are timed: a branch that takes a packet has that packet's
 * time, not the time of a TNT the decoder read ahead to (DecoderConfig.tickOnUse; the
 * clock of instruction samples by time is another: PerfWhere.walkTsc), and times are
 * perf's decoder's (its CYC reference, see time/perf-clock.ts); ptkit's own outputs
 * keep libipt's.
 */
const PERF_SCRIPT_TIMES = { tickOnUse: true, perfClock: true } as const;

/** What to decode and print: `ptkit perf`'s options, parsed. */
export interface PerfOptions {
  /** The perf.data file (for messages; the bytes come from the source given). */
  file: string;
  /** The front end's remedies in warnings (see hints.ts). */
  hints?: InputHints;
  /**
   * Binaries (`--elf FILE[:BASE]`): one without a base stands for the mmaps of the same
   * path or file name, one with a base (or that no mmap names) is loaded for every process.
   */
  elfs: CodeFile[];
  symfs: string | undefined;
  buildIdDir: string | undefined;
  kernel: string[];
  cpu: number | undefined;
  tid: number | undefined;
  range: [string, string] | undefined;
  show: PerfShow;
  jsonl: boolean;
  symbols: boolean;
  /** Loads the demangler for symbol names (absent: names as the symbol tables spell them). */
  demangler?: () => NameDemangler | string;
  quiet: boolean;
  /** --insn-decoder: the instruction decoder even where no instruction is printed. */
  insnDecoder: boolean;
  analysis: AnalysisOptions;
  /** Source lines for perf script's srcline field (absent, or a string saying why not: none are printed). */
  sourceLines?: () => SourceLineLookup | string;
  /** perf script's options (perf-script-options.ts); `active`: print perf script's lines. Absent: ptkit's own outputs. */
  script?: PerfScriptOptions;
  /** Whether --time-range (not perf's --time) gave the range. */
  rangeGiven?: boolean;
}

/** Settings for tests and other commands. */
export interface PerfInternals {
  /** The trace window size (bytes of a stream held at a time). */
  windowSize?: number;
  /** Decode only these streams (by index in the file: `ptkit shard run`). */
  streams?: readonly number[];
  /** Record the shard tables' data here (`ptkit shard run`, `ptkit perf --db`). */
  tables?: TablesOut;
  /** perf's debug-file directory (default /usr/lib/debug): tests give their own. */
  debugRoot?: string;
  /** Filled with the binaries that could not be found: path -> addresses that needed it. */
  missing?: Map<string, number>;
  /** Told how much of the selected streams' trace has been read: bytes read, bytes in all. */
  progress?: (done: number, total: number) => void;
  /** Filled with each stream's process images, to read code from after the decode (they keep the images of processes that ended). */
  images?: ProcessImages[];
  /** Decode the general way where the fast path (perf-graph.ts) would be taken. */
  generalDecode?: boolean;
  /** The fast path's outcome, when it was tried. */
  onFastPath?: (result: FastCoverage) => void;
  /**
   * Threads that walk streams (`--jobs`, the CLI's): where the fast path feeds the
   * analysis outputs, each stream is walked on one of them and its log replayed here
   * (replayPerfStreams), the walk and the analysis running at once.
   */
  walkThreads?: WalkThreads;
  /**
   * This is such a thread (no option): the decode goes as far as the fast path, walks
   * stream `stream` of those it would walk, logs it to `sink` (logPerfStream), and stops;
   * where there is no such walk, the log's outcome says so (status -1).
   */
  walkLog?: { stream: number; sink: WalkLogSink };
}

/**
 * Decode the perf.data file `source` (named `args.file`) as `args` say: lines to
 * `out`, warnings and errors to `io.stderr`, analysis outputs to files through `io`.
 * The exit status: 0, or 1 when the options select nothing or a file is missing.
 * Throws PerfError on a file that cannot be read on (the outputs are complete up to
 * there) and what the io throws.
 */
export function decodePerf(
  io: SessionIo,
  out: ByteLines,
  args: PerfOptions,
  source: ByteSource,
  internal: PerfInternals = {},
): number {
  const a = args.analysis;
  const timelines = a.timeline !== undefined || a.perfetto !== undefined;
  const note = timelines ? timelineSizeNote(args, source.size) : undefined;
  if (note !== undefined) io.stderr(`ptkit perf: ${note}\n`);
  // --timeline-summary: a first decode finds the bound that fits the budget.
  if (timelines && a.timelineSummary && a.summaryPlan === undefined && a.summaryProbe === undefined) {
    const { windowSize, streams, debugRoot, generalDecode } = internal;
    const first = { windowSize, streams, debugRoot, generalDecode };
    const plan = planSummary(io, args, source, (i, o, opts, src) => decodeOnce(i, o, opts, src, first));
    if (plan) args = { ...args, analysis: { ...a, summaryPlan: plan } };
  }
  return decodeOnce(io, out, args, source, internal);
}

function decodeOnce(
  io: SessionIo,
  out: ByteLines,
  args: PerfOptions,
  source: ByteSource,
  internal: PerfInternals,
): number {
  const reader = new PerfDataReader(source, { onDiagnostic: (d) => out.line(diagnosticText(d)) });
  const rec = new PerfRecord();
  let info: AuxtraceInfo | undefined;
  const analyse = wantsAnalysis(args.analysis);
  const threads = new ThreadNames();
  const script = args.script?.active ? args.script : undefined;
  const comms = new ScriptComms();
  const samples = new OtherSamples();
  while (reader.next(rec)) {
    if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes) ?? info;
    else if (analyse) threads.record(rec);
    if (script) {
      comms.record(rec, reader);
      samples.record(rec, reader);
    }
  }
  for (const note of script?.notes ?? []) io.stderr(`ptkit perf: note: ${note}.\n`);
  if (samples.firstSkipped) {
    const n = samples.skipped;
    const more = n > 1 ? ` (${n} SAMPLE records skipped in all)` : "";
    io.stderr(`ptkit perf: warning: ${diagnosticLine(args.file, samples.firstSkipped)}: skipped${more}.\n`);
  }
  // (perf's synthesized events have a CPU where the Intel PT event has one and its buffers were per CPU.)
  const ptEvent = intelPtEvent(info?.intelPt, reader.events);
  const ptCpu =
    ptEvent === undefined ||
    ((ptEvent.attr.sampleType & SampleType.Cpu) !== 0 && info?.intelPt?.perCpuMmaps !== 0n);
  const fields =
    script && fileFields(script.fields, reader.events, reader.features.auxtraceIndex !== undefined, ptCpu);
  if (typeof fields === "string") {
    io.stderr(`ptkit perf: ${fields}\n`);
    return 1;
  }
  const tasks = readTasks(reader);
  for (const p of tasks.problems) io.stderr(`ptkit perf: warning: ${diagnosticLine(args.file, p)}.\n`);
  // A file without a trace nor TSC conversion (software events only): --time in perf
  // time, the domain its samples are timed in then (see sampleTimeline).
  const rangeConv = tasks.conversion ?? (info?.intelPt ? undefined : PERF_TIME);
  const range = args.range && tscRange(args.range, rangeConv);
  if (typeof range === "string") {
    io.stderr(`ptkit perf: ${args.script?.time && !args.rangeGiven ? "--time" : "--time-range"}: ${range}\n`);
    return 1;
  }
  const snapshot = info?.intelPt?.snapshotMode === 1n;
  const allStreams = auxStreams(source, auxtraceBuffers(reader), snapshot);
  const selectsNothing =
    (args.cpu === undefined ? undefined : cpuProblem(args.file, args.cpu, allStreams)) ??
    // A CPU list selects nothing only when none of its CPUs has a trace.
    (args.script?.cpus?.every((c) => cpuProblem(args.file, c, allStreams) !== undefined)
      ? cpuProblem(args.file, args.script.cpus[0]!, allStreams)
      : undefined) ??
    (args.tid === undefined ? undefined : tidProblem(args.file, args.tid, tasks, allStreams));
  if (selectsNothing !== undefined) {
    io.stderr(`ptkit perf: ${selectsNothing}\n`);
    return 1;
  }
  const finder = new BinaryFinder(
    io,
    { ...args, debugRoot: internal.debugRoot ?? DEBUG_ROOT, perfNames: script !== undefined },
    tasks.buildIds,
  );
  const recorded = tasks.changes.flatMap((c) => (c.kind === "mmap" ? [c.path] : []));
  const kernel = new Image("kernel");
  const warn = (w: string) => io.stderr(`ptkit perf: ${w}\n`);
  const global = args.elfs.filter(
    (e) => e.base !== undefined || !recorded.some((path) => sameBinary(e.name, path)),
  );
  const kernelMap = kernelMapOf(tasks);
  const kernelSymbols: SymbolTable[] = [];
  // perf script's branch lines that show no time (nor anything else the time decides):
  // the fast path of ptkit's --branches and --calls, to the same lines. Any other decode
  // of perf script's lines is timed as perf times them (`timed`: the streams made now).
  const scriptBranches = script ? untimedBranchLines(script, fields!, samples.length) : undefined;
  // (Lines that need no time read no symbol tables unless they show symbols.)
  const wantSymbols =
    args.symbols ||
    // (A thread of the parallel walk names nothing: its log is its output.)
    (analyse && internal.walkLog === undefined) ||
    (script !== undefined && (scriptBranches === undefined || namesSymbols(fields!)));
  for (const file of args.kernel) {
    const { error, symbols } = loadKernel(io, kernel, file, kernelMap, warn, wantSymbols);
    if (error) {
      warn(error);
      return 1;
    }
    if (symbols) kernelSymbols.push(symbols);
  }
  for (const elf of global) {
    const problem = loadElf(io, kernel, elf, undefined, warn);
    if (problem) {
      warn(problem);
      return 1;
    }
  }
  const demangle = wantSymbols ? demangler(args, warn) : undefined;
  // Each process image's symbols (the kernel's among them), for --sym and the analysis' frame names.
  const symbols = wantSymbols
    ? new AllProcessSymbols({ kernel: kernelSymbols, demangler: demangle })
    : undefined;
  // (perf script's lines of a file without a trace have no notes about decoding one.)
  const config = decoderConfig(info, reader, (note) => {
    if (!script || allStreams.length > 0) out.line(`[${note}]`);
  });
  // Time moves on at events only; tick events add every timing update the trace has
  // (at the branch packets CYC/MTC/TSC come with), so a range cuts between branches
  // and the analysis times calls between them.
  // Instruction samples by time (--itrace=i100us) go by every timestamp too.
  const timePeriod = script?.itrace.insn === true && script.itrace.periodUnit !== "i";
  if (range || wantsTime(args.analysis) || fields?.hw.has("time") || timePeriod)
    config.enableTickEvents = true;
  // The analyses' times restart CYC calibration after a gap in a CPU's trace (see
  // TimeConfig.mtcGapRestart); perf script's lines keep perf's clock.
  if (wantsTime(args.analysis)) config.mtcGapRestart = true;
  let timed = script !== undefined && scriptBranches === undefined;
  // perf's instruction decoder takes the mode from the binary (64-bit) where ptkit's
  // waits for a MODE.Exec, which a PSB+ cut short by an overflow lacks.
  if (script) config.perfMode64 = true;
  const scriptOut = script
    ? perfScriptSink(
        out,
        { ...script, fields: fields! },
        reader,
        info,
        tasks.conversion,
        comms,
        (text) => warn(`note: ${text}.`),
        config.nomFreq,
        args.sourceLines,
      )
    : undefined;
  const printed = scriptOut
    ? scriptOut.sink
    : args.jsonl && !args.quiet
      ? jsonlSink(out, args.show, tasks.conversion, args.symbols)
      : textSink(out, args.show, args.symbols);
  let analysis: PerfAnalysis | undefined;
  const openAnalysis = (): PerfAnalysis | string | undefined => {
    if (!analyse || !symbols) return undefined;
    return PerfAnalysis.open(
      io,
      args.analysis,
      threads,
      tasks,
      symbols,
      perfNsPerTick(tasks.conversion, config.nomFreq),
      (text) => warn(`warning: ${text}`),
      args.hints,
    );
  };
  // (A thread of the parallel walk feeds no analysis: the log is its output.)
  const opened = internal.walkLog === undefined ? openAnalysis() : undefined;
  if (typeof opened === "string") {
    warn(opened);
    return 1;
  }
  analysis = opened;
  // Blocks, unless instructions are listed.
  const decoder: PerfDecoder =
    (script ? script.itrace.insn : args.show === "insn") || args.insnDecoder ? "insn" : "block";
  const jumps = script ? script.itrace.allBranches : args.show === "branches";
  const streamConfig = decoder === "block" ? blockDecoderConfig(config, jumps) : config;
  const needed = internal.missing ?? new Map<string, number>();
  const imagesBefore = internal.images?.length ?? 0;
  const processImages = (p: ProcessImages) => {
    // The analysis' frames are named as the symbols were when they ran.
    p.beforeChange = () => analysis?.release();
    if (internal.images) {
      p.retired = [];
      internal.images.push(p);
    }
    return p;
  };
  // The streams to decode; `header`: print the lines that introduce them.
  const makeStreams = (sink: PerfSink, header: boolean): StreamContext[] => {
    const streams: StreamContext[] = [];
    // What the decoders learn of the code, shared by the streams (libipt keeps a
    // section's block cache with the section): each CPU's stream decodes much of the
    // same code in process images of its own, and filled its own caches with it.
    const caches = new SameCodeCaches();
    // A decode that starts again reports its progress from the start again.
    const progress = new TraceProgress(internal.progress);
    for (const s of allStreams) {
      if (internal.streams !== undefined && !internal.streams.includes(s.idx)) continue;
      if (args.cpu !== undefined && !s.cpus.includes(args.cpu)) continue;
      if (args.script?.cpus && !s.cpus.some((c) => args.script!.cpus!.includes(c))) continue;
      const cpu = s.cpus[0] ?? -1;
      const perThread = cpu < 0;
      if (perThread && args.tid !== undefined && !s.tids.includes(args.tid)) continue;
      if (!header) {
        // Printed by the decode before.
      } else if (args.jsonl && !args.quiet)
        out.line(`{"type":"stream","idx":${s.idx},"cpu":${cpu},"bytes":${s.size}}`);
      else if (args.show === "insn" && !script)
        out.line(`[stream idx ${s.idx} cpu ${s.cpus.join(",")} tid ${s.tids.join(",")}: ${s.size} bytes]`);
      const where = startOf(tasks, cpu, s.tids[0] ?? -1);
      where.inRange = !range && (args.tid === undefined || where.tid === args.tid);
      streams.push({
        // Several streams take turns (see perf-graph.ts).
        trace: TraceBytes.read(
          progress.count(streamSource(source, s)),
          internal.windowSize,
          allStreams.length > 1,
        ),
        // perf's clock looks ahead within an AUX buffer.
        config: script
          ? { ...streamConfig, ...(timed ? PERF_SCRIPT_TIMES : {}), bufferEnds: bufferEnds(s.ranges) }
          : streamConfig,
        branchTimes: timed,
        // perf's decoder's way after an error for every output but ptkit's listings
        // (instructions, JSON Lines: ptxed's way, at the next PSB).
        perfResync: script !== undefined || (!args.jsonl && args.show !== "insn"),
        perfErrors: script !== undefined,
        decoder,
        images: processImages(
          new ProcessImages(tasks, finder, kernel, args.kernel.length > 0, needed, symbols),
        ),
        switches: perThread ? [] : cpuSwitches(tasks, cpu),
        cr3s: perThread || tasks.hasSwitchRecords ? undefined : new Cr3Threads(),
        gaps: perThread ? tasks.gaps : tasks.gaps.filter((g) => g.cpu === cpu),
        where,
        range,
        tid: args.tid,
        sink,
        graphStore: io.graphs,
        caches,
        nextHi: 0,
        nextLo: 0,
        turnHi: -1,
        turnLo: 0,
      });
    }
    return streams;
  };
  let streams = makeStreams(analysis ? bothSinks(printed, analysis.sink) : printed, true);
  // A decode that starts again: the process images of the one before are not kept.
  const again = (sink: PerfSink) => {
    if (internal.images) internal.images.length = imagesBefore;
    // (The fast path charged the stops where code was missing up to where it handed over.)
    needed.clear();
    return makeStreams(sink, false);
  };
  let finished: ReturnType<PerfAnalysis["finish"]> | undefined;
  try {
    // The fast path (perf-graph.ts), where it covers the trace: the call-stack outputs,
    // --calls and --branches, --quiet alone (of part of the trace too: --time-range,
    // --tid). With several streams (a CPU's each) their walks take turns in time order.
    const fits = !args.jsonl && !internal.generalDecode && streams.length > 0 && streams.every(fastPathFits);
    const own = !script && fits ? streams : undefined;
    // Branch lines: ptkit's --branches and --calls, or perf script's that need no time.
    const lines = script ? scriptBranches : args.show;
    // (perf script's of part of a file are cut by the times perf gives them: not the walk's.)
    const partial = streams.some((s) => s.range !== undefined || s.tid !== undefined);
    const linesOf = fits && !(script && partial) ? streams : undefined;
    if (internal.walkLog !== undefined) {
      const { stream, sink } = internal.walkLog;
      if (own !== undefined && stream < own.length) logPerfStream(own, stream, new WalkLogWriter(sink));
      else sink.end(FastCoverage.handedOver("a stream the parallel walk's thread does not walk"));
      return 0;
    }
    // (A file that keeps what was written, such as a pipe, is written once: the general way.)
    const toAnalysis = analysis !== undefined && args.quiet && own !== undefined && analysis.reopens();
    const logs = toAnalysis ? parallelWalks(own!, analysis!, args, internal.walkThreads) : undefined;
    // (Walks started early for nothing end now, not to take a core from this decode.)
    if (logs === undefined) internal.walkThreads?.stop();
    if (analysis !== undefined && own !== undefined && toAnalysis) {
      const fast =
        logs === undefined ? fastPerfStreams(own, analysis) : replayPerfStreams(own, analysis, logs);
      // (Walks a replay left behind end here.)
      if (logs !== undefined) internal.walkThreads!.stop();
      internal.onFastPath?.(fast);
      if (fast.status === 0) streams = [];
      else {
        // Decode it all again the general way, into the files opened anew.
        analysis.abandon();
        const reopened = openAnalysis();
        if (typeof reopened === "string") {
          analysis = undefined;
          warn(reopened);
          return 1;
        }
        analysis = reopened;
        // (The errors the walk printed are not printed again; the analysis gets them anew.)
        const shown = skipErrors(printed, fast.errors);
        streams = again(analysis ? bothSinks(shown, analysis.sink) : shown);
      }
    } else if (!analysis && (lines === "calls" || lines === "branches") && linesOf) {
      const every = lines === "branches";
      const fast = fastBranchStreams(linesOf, every);
      internal.onFastPath?.(fast.result);
      if (fast.result.status === 0) streams = [];
      else {
        // Decode it all again the general way (perf script's lines timed as perf's: the
        // errors'), leaving out the lines printed.
        timed = script !== undefined;
        streams = again(skipErrors(skipBranches(printed, fast.printed, every), fast.result.errors));
      }
    } else if (script !== undefined && !timed) {
      // Not the fast path: perf script's decode.
      timed = true;
      streams = again(analysis ? bothSinks(printed, analysis.sink) : printed);
    } else if (!analysis && args.show === "errors" && own) {
      // --quiet alone: errors only, and a decode the fast path covers has none.
      const fast = fastQuietStreams(own);
      internal.onFastPath?.(fast);
      streams = fast.status === 0 ? [] : again(skipErrors(printed, fast.errors));
    }
    const others =
      scriptOut && samples.length > 0
        ? [
            sampleTimeline(samples, scriptOut.lines, {
              reader,
              fields: fields!,
              conv: tasks.conversion,
              comms,
              images: new ProcessImages(
                byPerfTime(tasks),
                finder,
                kernel,
                args.kernel.length > 0,
                needed,
                symbols,
              ),
              nameWidth: scriptOut.nameWidth,
              // (A single --tid or --cpu stays ptkit's own option: the same filter.)
              options: {
                ...script!,
                tids: script!.tids ?? (args.tid === undefined ? undefined : [args.tid]),
                cpus: script!.cpus ?? (args.cpu === undefined ? undefined : [args.cpu]),
              },
              range,
              ptEvent: scriptOut.ptEvent,
              note: (text) => warn(`note: ${text}.`),
            }),
          ]
        : [];
    interleave(streams, others);
  } finally {
    // Even when the file cannot be read on: the outputs are complete up to there.
    finished = analysis?.finish();
    scriptOut?.sink.finish();
  }
  const kernelHint = args.hints?.kernelFiles;
  for (const [name, n] of needed) {
    const how = name === KERNEL_NAME && kernelHint !== undefined ? ` (use ${kernelHint})` : "";
    warn(`warning: no binary for ${name}${how}: ${n} address${n === 1 ? "" : "es"} needed it.`);
  }
  if (finished?.error) {
    warn(finished.error);
    return 1;
  }
  if (finished?.summary && args.quiet) out.line(finished.summary);
  return 0;
}

/** Counts the trace read from each stream, for {@link PerfInternals.progress}. */
class TraceProgress {
  private total = 0;
  private done = 0;

  constructor(private readonly report?: (done: number, total: number) => void) {}

  /** `source`, counted: each read moves the stream's furthest byte on. */
  count(source: TraceSource): TraceSource {
    const report = this.report;
    if (report === undefined) return source;
    this.total += source.size;
    let furthest = 0;
    const moved = (end: number) => {
      if (end <= furthest) return;
      this.done += end - furthest;
      furthest = end;
      report(this.done, this.total);
    };
    return {
      size: source.size,
      read: (from, length) => {
        const bytes = source.read(from, length);
        moved(from + bytes.length);
        return bytes;
      },
    };
  }
}

/** perf script's lines (-F, --itrace): the event names as perf gives them for this file. */
function perfScriptSink(
  out: ByteLines,
  script: PerfScriptOptions,
  reader: PerfDataReader,
  info: AuxtraceInfo | undefined,
  conv: TscConversion | undefined,
  comms: ScriptComms,
  note: (text: string) => void,
  maxNonTurbo: number,
  sourceLines: PerfOptions["sourceLines"],
) {
  // -F srcline: the lines are held in batches for the source-line lookups.
  let batch: SourceLineBatch | undefined;
  if (script.fields.hw.has("srcline") || script.fields.synth.has("srcline")) {
    const lookup = sourceLines?.() ?? "no source-line lookup here";
    if (typeof lookup === "string") note(`-F srcline: ${lookup}; no source lines are printed`);
    batch = new SourceLineBatch(out, typeof lookup === "string" ? undefined : lookup, note);
  }
  const pt = intelPtEvent(info?.intelPt, reader.events);
  const modifier = eventModifier(pt ?? reader.events[0]);
  const lines = batch?.lines ?? out;
  // perf adds the names of the Intel PT samples only to a file with an Intel PT trace.
  const synthesized = info?.intelPt ? script.itrace : parseItrace("s");
  const nameWidth = eventNameWidth(reader.events, synthesized as Itrace, modifier);
  const sink = scriptSink(lines, script.itrace, script.fields, {
    sourceLines: batch,
    conv,
    comms,
    modifier,
    nameWidth,
    options: script,
    note,
    periodTicks:
      script.itrace.periodUnit === "t"
        ? script.itrace.period
        : script.itrace.periodUnit === "ns"
          ? nsToTicks(conv, script.itrace.period)
          : 0,
    tscHz: tscHz(conv),
    maxNonTurbo,
  });
  return { sink, lines, nameWidth, ptEvent: pt === undefined ? -1 : reader.events.indexOf(pt) };
}

/** TSC ticks per second by perf's conversion (perf's intel_pt_ns_to_ticks of 1 s), 0 without one. */
function tscHz(conv: TscConversion | undefined): number {
  return nsToTicks(conv, 1_000_000_000);
}

/** perf's intel_pt_ns_to_ticks: TSC ticks in `ns` nanoseconds by the file's conversion, 0 without one. */
function nsToTicks(conv: TscConversion | undefined, ns: number): number {
  if (!conv || conv.timeMult === 0n) return 0;
  const n = BigInt(ns);
  const shift = BigInt(conv.timeShift);
  return Number(((n / conv.timeMult) << shift) + ((n % conv.timeMult) << shift) / conv.timeMult);
}

/** The demangler for --sym names, as perf script demangles them (none without a loader, or when it cannot load). */
function demangler(args: PerfOptions, warn: (text: string) => void): NameDemangler | undefined {
  const load = args.demangler;
  if (load === undefined) return undefined;
  // Loaded at the first mangled name (C programs have none).
  return new LazyDemangler(load, (why) => warn(`warning: ${why}; names are shown mangled.`));
}

/** The conversion of perf time to itself. */
const PERF_TIME: TscConversion = { timeShift: 0, timeMult: 1n, timeZero: 0n };

/**
 * `tasks` timed by perf time where the file has no TSC conversion (their TSCs are
 * then all 0): the samples of other events go by perf time then (see sampleTimeline).
 */
function byPerfTime(tasks: PerfTasks): PerfTasks {
  if (tasks.conversion) return tasks;
  const changes = tasks.changes.map((c) => ({ ...c, ...timeHalves(c.time) }));
  return { ...tasks, changes };
}

function timeHalves(time: bigint): { tscHi: number; tscLo: number } {
  const { hi, lo } = splitBigInt(time, { hi: 0, lo: 0 });
  return { tscHi: hi, tscLo: lo };
}

/** Who runs on `cpu` from when: its switch records, or without any, the threads seen running there. */
function cpuSwitches(tasks: PerfTasks, cpu: number): Timed<CpuSwitch>[] {
  const on = tasks.switches.filter((w) => w.cpu === cpu);
  if (tasks.hasSwitchRecords) return on;
  return [...on, ...tasks.seen.filter((w) => w.cpu === cpu)].sort((a, b) =>
    a.time < b.time ? -1 : a.time > b.time ? 1 : 0,
  );
}

/** Who runs when a stream starts: per thread, the thread (and its pid from the switches); per CPU, nobody yet. */
function startOf(tasks: PerfTasks, cpu: number, tid: number): PerfWhere {
  const pid = cpu < 0 ? (tasks.switches.find((w) => w.tid === tid)?.pid ?? tid) : -1;
  // Every field from the start, in one order (the optional ones undefined until the
  // decode sets them): fields added as each stream's decode came to them gave the
  // streams' objects different shapes, and the decode's optimised code was thrown away
  // at the second stream's ("wrong map").
  const where: PerfWhere = {
    cpu,
    pid,
    tid: cpu < 0 ? tid : -1,
    tscHi: 0,
    tscLo: 0,
    inRange: true,
    fallHi: undefined,
    fallLo: undefined,
    branchTscHi: undefined,
    branchTscLo: undefined,
    walkTscHi: undefined,
    walkTscLo: undefined,
    walkSeq: undefined,
  };
  // TSC halves, most past 2^31: doubles from the start (a stream's first time would turn
  // them into doubles while another stream's walk is compiled, which throws it away).
  doubleFields(where, ["tscHi", "tscLo"]);
  return where;
}

/** --time-range's bounds as TSC values: seconds.fraction is perf time, an integer a TSC. */
function tscRange(bounds: [string, string], conv: TscConversion | undefined): TscRange | string {
  const tsc = (s: string, empty: bigint): bigint | string => {
    if (s === "") return empty;
    if (!s.includes(".")) return parseCUint(s) ?? `bad TSC value: ${s}.`;
    const m = /^(\d+)\.(\d{0,9})$/.exec(s);
    if (!m) return `bad perf time: ${s}.`;
    if (!conv) return "the file has no TSC conversion for perf times.";
    const ns = BigInt(m[1]!) * 1_000_000_000n + BigInt(m[2]!.padEnd(9, "0"));
    return perfTimeToTsc(ns, conv) ?? "the file's TSC conversion is unusable.";
  };
  const from = tsc(bounds[0], 0n);
  if (typeof from === "string") return from;
  const to = tsc(bounds[1], 0xffff_ffff_ffff_ffffn);
  if (typeof to === "string") return to;
  if (from > to) return `${bounds[0]} is after ${bounds[1]}: want <from>,<to>.`;
  const { hi: fromHi, lo: fromLo } = splitBigInt(from, { hi: 0, lo: 0 });
  const { hi: toHi, lo: toLo } = splitBigInt(to, { hi: 0, lo: 0 });
  return { fromHi, fromLo, toHi, toLo };
}

/** The decoder configuration a perf.data file implies. */
function decoderConfig(
  info: AuxtraceInfo | undefined,
  reader: PerfDataReader,
  note: (s: string) => void,
): DecoderConfig {
  const config = defaultDecoderConfig();
  const cpuText = cpuFromCpuid(reader.features.cpuid);
  const cpu = cpuText === undefined ? undefined : parseCpu(cpuText);
  const errata = cpu && cpuErrata(cpu);
  if (errata) config.errata = errata;
  else note("no known Intel cpu in the file: decoding without errata workarounds");
  if (!info?.intelPt) {
    note("no Intel PT AUXTRACE_INFO in the file: decoding without timing parameters");
    return config;
  }
  const p = intelPtDecodeParams(info.intelPt, reader.events);
  config.mtcFreq = p.mtcFreq ?? 0;
  config.nomFreq = p.nomFreq ?? 0;
  config.cpuid15Eax = p.cpuid15Eax ?? 0;
  config.cpuid15Ebx = p.cpuid15Ebx ?? 0;
  return config;
}

/** Where each of a stream's AUX buffers ends, in stream offsets. */
function bufferEnds(ranges: readonly { size: number }[]): number[] {
  let at = 0;
  return ranges.map((r) => (at += r.size));
}

/**
 * Whether a walk on another thread pays for the analysis outputs `a` asks for: where
 * a timeline is written (--timeline, --perfetto), whose writing is most of what a
 * decode does besides the walk (on the bench's perf.data on two cores, --timeline
 * 1.15x and --perfetto 1.22x the speed of one thread). Not with --latency (0.88x) nor
 * folded stacks alone (0.91x), whose analysis keeps both threads waiting on memory
 * more than the walk saves; not where the analysis is fed by graph node (coverage,
 * which a replay does not give), nor with a timeline summary (whose first decode
 * runs on the command's thread).
 */
export function walksApart(a: AnalysisOptions): boolean {
  return (
    (a.timeline !== undefined || a.perfetto !== undefined) &&
    a.latency === undefined &&
    a.coverage === undefined &&
    a.aflMap === undefined &&
    a.edges === undefined &&
    !a.timelineSummary
  );
}

/**
 * The least trace of a CPU (AUX bytes) that ptkit perf walks on a thread of its own
 * (WalkThreads.minTrace sets another): below it a thread's start (loading the code,
 * reading the file, making the graph anew) costs more than the walk it takes off the
 * command's thread. `-q --timeline`, `--jobs 2` against `--jobs 1`, the bench's
 * program on one CPU, two cores (7-9 alternating runs, 2026-11-29): perf.data of 0.13
 * MB 0.67x the speed, 0.51 MB 0.84x, 1.0 MB 0.87x, 1.5 MB 0.95x, 2.1 MB 0.99x, 2.6
 * MB 1.11x, 5.1 MB 1.26x; a real capture of the corpus (HASE, 38 KB) 0.64x.
 */
export const WALK_APART_BYTES = 2 << 20;

/**
 * The logs of the streams' walks on other threads (PerfInternals.walkThreads), or
 * undefined where the analysis is fed here the usual way: no such threads, too few
 * for one a stream, a stream's trace under the least a thread pays for
 * ({@link WALK_APART_BYTES}), streams shown in part (--time-range, --tid: see
 * ShownTarget), or outputs a walk apart does not pay for ({@link walksApart}).
 */
function parallelWalks(
  streams: readonly StreamContext[],
  analysis: PerfAnalysis,
  args: PerfOptions,
  threads: WalkThreads | undefined,
): WalkLogSource[] | undefined {
  if (threads === undefined || streams.length > threads.threads) return undefined;
  const least = threads.minTrace ?? WALK_APART_BYTES;
  if (streams.some((s) => s.trace.size < least)) return undefined;
  if (streams.some((s) => s.range !== undefined || s.tid !== undefined)) return undefined;
  if (analysis.byNode() || (threads.always !== true && !walksApart(args.analysis))) return undefined;
  return streams.map((_, i) => threads.start(i));
}
