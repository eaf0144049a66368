/**
 * The raw-trace pipeline, browser-safe: decode a raw Intel PT trace against the code
 * loaded from `--raw` dumps and `--elf` files, as libipt's ptxed does (its decode
 * loop, diagnostics and output: flow-session.ts), with on request the analysis
 * outputs (timeline, folded stacks, coverage, ...: analysis-outputs.ts), the --pevent
 * sideband (sideband.ts), and --jobs pieces on other threads (flow-pieces.ts). Files
 * come through the {@link SessionIo} given: `ptkit flow` passes the process's (after
 * turning ptxed's option words into {@link RawInput}), the web app its dropped files.
 */
import type { FlowTracker, NameDemangler, WalkTime } from "../analysis/index.js";
import { cpuErrata } from "../cpu/index.js";
import { Clock, type DecoderConfig, PtEvent } from "../event/index.js";
import { BlockDecoder, type DecisionGraph, InsnDecoder, type SectionCaches } from "../flow/index.js";
import { Image } from "../image/index.js";
import { ErrorCode, errorMessage } from "../packet/index.js";
import { TraceBytes, type TraceSource } from "../packet/trace-bytes.js";
import { type AnalysisOptions, wantsAnalysis, wantsTime } from "./analysis-options.js";
import type { AnalysisOutputs } from "./analysis-outputs.js";
import { noPsbHint, traceFileProblem } from "./file-kind.js";
import { type FileRange, fileRangeSource, type TraceInternals } from "./file-range.js";
import { BlockUnit } from "./flow-block-unit.js";
import { loadElf, loadRaw } from "./flow-image.js";
import { InsnUnit } from "./flow-insn-unit.js";
import { flowInPieces, flowsInPieces } from "./flow-pieces.js";
import { FlowSession } from "./flow-session.js";
import { statsText } from "./flow-text.js";
import { CodeWalker } from "./flow-walk.js";
import { GraphCache } from "./graph-cache.js";
import type { InputHints } from "./hints.js";
import type { ChunkTask, LineWriter, SessionIo } from "./io.js";
import type { FlowOutput, RawStep } from "./raw-options.js";
import type { SidebandOptions } from "./sideband-config.js";

type PtStep = Extract<RawStep, { kind: "pt" }>;

/**
 * The largest piece of trace a thread decodes at a time: its flow (when printed,
 * tens of bytes of text a byte of trace) is held until it is its turn to be written.
 */
const FLOW_PIECE = 1 << 20;

/**
 * The smallest trace the block decoder splits: each thread first compiles the decoder
 * and fills its own block cache (about a second on a large program), which the block
 * decoder's speed earns back only over a longer trace. Large-footprint bench trace
 * cut at 9 and 14 MiB, 2 threads against 1: 1.45 vs 1.34 s and 1.86 vs 1.70 s wall
 * (4 alternating pairs each, idle); its whole 25 MiB 2.33 vs 2.65 s, the fuzzing
 * workload's 16 MiB 1.13 vs 1.26 s. (The instruction decoder does three times the
 * work per byte and gains from the 8 MiB that make two pieces.)
 */
const BLOCK_PIECES_FROM = 16 << 20;

/**
 * The smallest trace whose instruction count the decision graph's walk makes in
 * pieces: each thread starts, compiles the walk and builds a graph of its own (about
 * half a second of CPU on a large program) before the walk's speed earns it back.
 * Large-footprint bench trace, 2 threads (this one and a worker) against 1, wall
 * (CPU): 25 MiB 1.06 against 1.15 s (1.91 against 1.31 s: 46% more CPU for 9% less
 * wall, 7 pairs), 100 MiB 2.01 against 3.11 s (3.81 against 3.25 s, 5 pairs); idle.
 */
const COUNT_PIECES_FROM = 32 << 20;

/** What ptxed prints on stdout at --pt for a CPU it knows no errata of. */
export const CPU_CONFIG_ERROR = `[0, 0: config error: ${errorMessage(ErrorCode.BadCpu)}]`;

/** What to decode and print. */
export interface RawInput {
  /** Loading code and opening the trace, in order (as ptxed reads its options). */
  steps: readonly RawStep[];
  output: FlowOutput;
  sideband: SidebandOptions;
  analysis: AnalysisOptions;
  /** The front end's remedies for what is missing or wrong (see hints.ts). */
  hints?: InputHints;
}

/** What the steps set up before decoding: the code, the trace, and how to decode and print. */
export interface RawSetup {
  steps: readonly RawStep[];
  image: Image;
  /** What --pevent:kcore loads: the start of every sideband process image. */
  kernel: Image;
  pt: { step: PtStep; range: FileRange; source: TraceSource } | undefined;
  output: FlowOutput;
  sideband: SidebandOptions;
  analysis: AnalysisOptions;
  hints: InputHints;
  /** The section caches of the decoders of pieces (see flow-pieces.ts). */
  caches?: SectionCaches;
}

/**
 * Run the steps in order (loading code, then opening the trace); what ptxed prints
 * while loading (--verbose, a bad --cpu) goes to `out`, warnings to `warn`. The
 * setup, or an error message (without the program name).
 */
export function setupRaw(
  io: SessionIo,
  out: LineWriter,
  input: RawInput,
  warn: (text: string) => void,
): RawSetup | string {
  const image = new Image("ptkit flow");
  const kernel = new Image("kernel");
  let pt: RawSetup["pt"];
  for (const step of input.steps) {
    switch (step.kind) {
      case "raw": {
        const err = loadRaw(io, image, step.raw);
        if (err) return err;
        break;
      }
      case "elf":
      case "kcore": {
        const verbose = step.verbose ? (line: string) => out.line(line) : undefined;
        const into = step.kind === "elf" ? image : kernel;
        const err = loadElf(io, into, step.file, verbose, warn);
        if (err) return err;
        break;
      }
      case "pt": {
        if (step.cpu) {
          const errata = cpuErrata(step.cpu);
          // Like ptxed: say so on stdout and decode without errata workarounds.
          if (errata) step.config.errata = errata;
          else out.line(CPU_CONFIG_ERROR);
        }
        const range = step.range;
        const source = traceFileProblem(io, range, input.hints) ?? fileRangeSource(io, range);
        if (typeof source === "string") return source;
        pt = { step, range, source };
        break;
      }
    }
  }
  const { steps, output, sideband, analysis } = input;
  return { steps, image, kernel, pt, output, sideband, analysis, hints: input.hints ?? {} };
}

/** How to decode on other threads (`--jobs`, through `io.chunks`). */
export interface RawPieces {
  /** The threads to use, or an error message (a bad --jobs). */
  threads: number | string;
  /**
   * Where the pieces of `source` start for `threads` threads ([0]: one piece);
   * `maxChunk` bounds a piece; a trace under `minTrace` bytes is one piece; `taper`:
   * pieces that shrink towards the end (see packet/chunks.ts, planChunks).
   */
  starts(
    source: TraceSource,
    threads: number,
    maxChunk: number | undefined,
    minTrace: number,
    taper?: boolean,
  ): number[];
  /**
   * The task of each piece (piece i is [starts[i], starts[i+1]) of the trace): its
   * flow, or (`count`) its instruction count alone (count-pieces.ts).
   */
  tasks(setup: RawSetup, starts: readonly number[], kind?: "flow" | "count"): ChunkTask[];
}

export interface RawDecodeOptions {
  /** Warnings, one line each (without the program name). */
  warn: (text: string) => void;
  /** Demangles the analysis outputs' C++ and Rust function names (absent: as the symbol tables spell them). */
  demangler?: NameDemangler;
  internal?: TraceInternals;
  /** Absent: one thread. */
  pieces?: RawPieces;
}

/**
 * Decode the trace of `setup` (its pt step) and print the flow to `out`, as ptxed
 * prints it (diagnostics included), then the statistics asked for; the analysis
 * outputs are written to their files. Resolves to undefined when done, or an error
 * message (without the program name; `out` holds what was printed before it). The
 * analysis outputs and the sideband (the analysis and perf layers) are imported only
 * when asked for.
 */
export async function decodeRaw(
  io: SessionIo,
  out: LineWriter,
  setup: RawSetup,
  options: RawDecodeOptions,
): Promise<string | undefined> {
  const { image, kernel, output, sideband, analysis, steps, pt, hints } = setup;
  const internal = options.internal ?? {};
  if (!pt) return "no trace file to decode.";
  const config = pt.step.config;
  let outputs: AnalysisOutputs | undefined;
  // Tick events give the analysis the time of MTC/CYC updates; printed only if asked for.
  const hideTicks = wantsTime(analysis) && !config.enableTickEvents;
  if (wantsAnalysis(analysis)) {
    const code = steps.flatMap((s) => (s.kind === "elf" || s.kind === "raw" ? [s] : []));
    // The nominal frequency (MSR_PLATFORM_INFO[15:8]) times 100 MHz is the TSC frequency.
    const nsPerTick = config.nomFreq > 0 ? 10 / config.nomFreq : 0;
    const warn = (w: string) => options.warn(`warning: ${w}`);
    const { AnalysisOutputs } = await import("./analysis-outputs.js");
    const opened = AnalysisOutputs.open(io, analysis, {
      code,
      nsPerTick,
      name: pt.step.label ?? pt.range.path,
      warn,
      demangler: options.demangler,
      hints,
    });
    if (typeof opened === "string") return opened;
    outputs = opened;
    if (hideTicks) config.enableTickEvents = true;
    // Their times restart CYC calibration after a gap in the trace (TimeConfig.mtcGapRestart).
    if (wantsTime(analysis)) config.mtcGapRestart = true;
  }
  const pieces = options.pieces;
  if (typeof pieces?.threads === "string") return `${pieces.threads}.`;
  if (!internal.generalCoverage && (outputs || !pt.step.named)) {
    // The analysis outputs made at the end, or errors and the instruction count alone:
    // the decision graph's walk where it covers the trace (faster than the block
    // decoder on any number of threads), the count in pieces on --jobs threads where
    // the trace is long enough.
    // One graph cache for this thread's walks: its count pieces', then the whole trace's.
    const graphs = new GraphCache(io.graphs);
    const counted =
      outputs === undefined ? await countOnThreads(io, setup, pieces, internal, graphs) : undefined;
    const insns =
      counted === -1 ? undefined : (counted ?? (await fastWalk(setup, outputs, internal, graphs)));
    if (typeof insns === "string") return insns;
    if (insns !== undefined) {
      if (output.stats) for (const line of statsText(insns, undefined)) out.line(line);
      out.flush();
      return outputs?.finish();
    }
  }
  // Printed instructions run on one thread unless -j asks: a piece's text is held
  // until its turn, and what a MiB of trace prints has no bound (code that loops
  // prints on without consuming trace), where one thread streams it.
  const jobs = pieces === undefined || (output.jobs === undefined && !output.quiet) ? 1 : pieces.threads;
  if (typeof jobs === "string") return `${jobs}.`;
  const starts =
    pieces !== undefined && !outputs && flowsInPieces(setup)
      ? pieces.starts(
          pt.source,
          jobs,
          output.quiet ? undefined : FLOW_PIECE,
          pt.step.decoder === "insn" ? 0 : BLOCK_PIECES_FROM,
          // This thread decodes pieces too (see flowInPieces), from a later start than the workers.
          true,
        )
      : [0];
  if (starts.length > 1 && io.chunks && pieces) {
    out.flush(); // what loading printed
    const counts = await flowInPieces(io.chunks, jobs, pieces.tasks(setup, starts), starts, setup, out, io);
    if (output.stats) {
      const insn = output.statInsn ? counts.insnCount : undefined;
      const blocks = output.statBlocks ? counts.blockCount : undefined;
      for (const line of statsText(insn, blocks)) out.line(line);
    }
    out.flush();
    return counts.noPsb ? `${noPsbHint(io, pt.range, hints)}.` : undefined;
  }
  const trace = TraceBytes.read(pt.source, internal.windowSize);
  const decoderOptions = { image, config };
  const session = new FlowSession(output, out, new PtEvent());
  if (internal.stopAt !== undefined) {
    session.stop = internal.stopAt;
    session.onStop = () => false;
  }
  if (sideband.channels.length > 0) {
    const { openSideband } = await import("./sideband.js");
    const sb = openSideband(io, out, sideband, "flow", kernel);
    if (typeof sb === "string") return sb;
    session.sideband = { session: sb, options: sideband };
  }
  const walker = new CodeWalker();
  const decode =
    pt.step.decoder === "insn"
      ? new InsnUnit(new InsnDecoder(trace, decoderOptions), session, walker)
      : new BlockUnit(new BlockDecoder(trace, decoderOptions), session, walker);
  if (outputs) {
    const { AnalysisUnit } = await import("./flow-analysis-unit.js");
    session.run(new AnalysisUnit(decode, session, walker, outputs.stream(), hideTicks));
  } else session.run(decode);
  if (output.stats) {
    const insn = output.statInsn ? session.insnCount : undefined;
    const blocks = output.statBlocks ? session.blockCount : undefined;
    for (const line of statsText(insn, blocks)) out.line(line);
  }
  out.flush();
  // ptxed prints nothing for a file without PSB; say what it looks like instead.
  if (session.noPsb) return `${noPsbHint(io, pt.range, hints)}.`;
  return outputs?.finish();
}

/**
 * Whether the fast decode of analysis/coverage-decode.ts may stand in for the flow
 * decoder: nothing is printed but errors (at which it hands over) and the instruction
 * count, and nothing it does not model is configured (iflags events, sideband; tick
 * events only for the timed walk, `ticks`, which reports them where the block decoder
 * does). It works around the errata of the --cpu given (walkErrata; an address filter
 * matters only to SKL014's).
 */
function fastWalkFits({ output, pt, sideband }: RawSetup, ticks = false): boolean {
  if (pt === undefined) return false;
  const config = pt.step.config;
  return (
    output.quiet &&
    !output.check &&
    !output.showBlocks &&
    !(output.stats && output.statBlocks) &&
    sideband.channels.length === 0 &&
    !config.enableIflagsEvents &&
    (ticks || !config.enableTickEvents)
  );
}

/**
 * Whether the fast decode may make the instruction count alone (no outputs): it fits,
 * and the decode is not one of `ptkit shard run`'s (its tables, a stop).
 */
function countAloneFits(setup: RawSetup, internal: TraceInternals): boolean {
  return fastWalkFits(setup) && internal.tables === undefined && internal.stopAt === undefined;
}

/**
 * The instruction count alone ({@link fastWalk} without outputs) made by the decision
 * graph's walk in `--jobs` pieces (count-pieces.ts), when there are threads and the
 * trace is long enough: the count; undefined when the pieces do not make it (one
 * thread's walk may); -1 when that walk would not either (the flow decoder must).
 */
async function countOnThreads(
  io: SessionIo,
  setup: RawSetup,
  pieces: RawPieces | undefined,
  internal: TraceInternals,
  graphs: GraphCache,
): Promise<number | undefined> {
  const { pt } = setup;
  const jobs = pieces?.threads;
  if (
    pt === undefined ||
    pieces === undefined ||
    io.chunks === undefined ||
    typeof jobs !== "number" ||
    jobs < 2 ||
    !countAloneFits(setup, internal)
  )
    return undefined;
  // This thread counts pieces too (see countInPieces): pieces that shrink towards the end.
  const starts = pieces.starts(pt.source, jobs, undefined, COUNT_PIECES_FROM, true);
  if (starts.length < 2) return undefined;
  const { countInPieces } = await import("./count-pieces.js");
  const tasks = pieces.tasks(setup, starts, "count");
  const { walkErrata } = await import("../analysis/coverage-decode.js");
  const count = await countInPieces(
    io.chunks,
    jobs,
    tasks,
    starts,
    pt.source,
    () => graphs.graph(setup.image),
    walkErrata(pt.step.config.errata, pt.step.config.addrFilter),
  );
  graphs.save();
  internal.onCountPieces?.(count, starts.length);
  // No instruction: the flow decoder says why (as fastWalk leaves it to).
  return count === 0 ? -1 : count;
}

/**
 * The fast decode of analysis/coverage-decode.ts where it covers the trace and nothing
 * else is printed: the instruction count, or undefined when the flow decoder must
 * decode it (or an error message: the outputs could not start over). With `outputs`:
 * coverage alone straight into its tables; those made at the end without time
 * (coverage, folded stacks weighed by instructions) through the call-stack tracker;
 * the others (timelines, latencies, folded stacks weighed by time) through the
 * tracker with the times the block decoder would give it (decodeTimedFeed). When it
 * hands over they start again, empty (the streamed files opened anew). Without,
 * `--quiet` with nothing to make but the count (then the flow decoder would print no
 * error; when no instruction ran, a trace without PSB gets the flow session's
 * explanation).
 */
async function fastWalk(
  setup: RawSetup,
  outputs: AnalysisOutputs | undefined,
  internal: TraceInternals,
  graphs: GraphCache,
): Promise<number | string | undefined> {
  const { pt } = setup;
  const coverage = outputs?.coverageOnly();
  const untimed = coverage !== undefined || outputs?.feedable() === true;
  if (
    pt === undefined ||
    (outputs === undefined
      ? !countAloneFits(setup, internal)
      : untimed
        ? !fastWalkFits(setup)
        : !outputs.restartable() || !fastWalkFits(setup, true))
  )
    return undefined;
  const { decodeCount, decodeCoverage, decodeFeed, decodeTimedFeed, walkErrata } = await import(
    "../analysis/coverage-decode.js"
  );
  const trace = TraceBytes.read(pt.source, internal.windowSize);
  const graph = graphs.graph(setup.image);
  const config = pt.step.config;
  const errata = walkErrata(config.errata, config.addrFilter);
  if (outputs === undefined) {
    const result = decodeCount(trace, graph, undefined, errata);
    graphs.save();
    internal.onFastCoverage?.(result);
    return result.status === 0 && result.insns > 0 ? result.insns : undefined;
  }
  const result =
    coverage !== undefined
      ? decodeCoverage(trace, graph, coverage, errata)
      : untimed
        ? decodeFeed(trace, graph, outputs.stream(), errata)
        : decodeTimedFeed(
            trace,
            graph,
            new RawWalkTime(config, setup.image, outputs.stream(), graphs),
            errata,
          );
  graphs.save();
  internal.onFastCoverage?.(result);
  if (result.status === 0) return result.insns;
  if (coverage !== undefined) coverage.clear();
  else if (untimed) outputs.reset();
  else return outputs.restart();
  return undefined;
}

/**
 * The timed walk's time on a raw trace (one stream, one image, no sideband): the
 * clock the event decoder would keep, and each time the walk reports handed to the
 * tracker at once, as the flow decoder's events hand it theirs (every one, a PSB+'s
 * while tracing is off too: the first is the clock's base). (ptkit perf's hands over
 * only the last before what comes next, as its general decode does.) The walk has fed
 * the tracker everything before the report (it holds back nothing for a tracker).
 */
class RawWalkTime implements WalkTime {
  readonly clock: Clock;
  /** Whether the flow decoder reports tick events: it does for outputs with time (see decodeRaw's hideTicks). */
  readonly ticks: boolean;
  readonly cr3 = false;

  constructor(
    config: DecoderConfig,
    readonly image: Image,
    private readonly feed: FlowTracker,
    private readonly graphs: GraphCache,
  ) {
    this.clock = new Clock(config);
    this.ticks = config.enableTickEvents;
  }

  at(hi: number, lo: number): void {
    this.feed.time(hi, lo);
  }

  ready(): FlowTracker {
    return this.feed;
  }

  graph(image: Image, maxNodes: number, maxWalk: number): DecisionGraph {
    return this.graphs.graph(image, maxNodes, maxWalk);
  }
}
