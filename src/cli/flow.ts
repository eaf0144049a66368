/**
 * `ptkit flow`: the ptxed-compatible instruction flow listing. Runs the option steps in
 * order (loading code, then the trace at --pt), decodes with the chosen decoder and
 * prints ptxed's output; diagnostics go to stdout as ptxed prints them, problems with
 * the command line and files to stderr.
 */
import { cpuErrata } from "../cpu/index.js";
import { PtEvent } from "../event/index.js";
import { BlockDecoder, DecisionGraph, InsnDecoder, type SectionCaches } from "../flow/index.js";
import { Image } from "../image/index.js";
import { ErrorCode, errorMessage } from "../packet/index.js";
import { TraceBytes, type TraceSource } from "../packet/trace-bytes.js";
import {
  type AnalysisOptions,
  type LatencyReport,
  wantsAnalysis,
  wantsTime,
} from "../session/analysis-options.js";
import type { AnalysisOutputs } from "../session/analysis-outputs.js";
import { noPsbHint, traceFileProblem } from "../session/file-kind.js";
import {
  type FileRange,
  fileRangeSource,
  parseFileRange,
  type TraceInternals,
} from "../session/file-range.js";
import { loadElf, loadRaw } from "../session/flow-image.js";
import { CodeWalker } from "../session/flow-walk.js";
import { LineWriter, type SessionIo } from "../session/io.js";
import { expandArgFiles } from "./arg-files.js";
import { BlockUnit } from "./flow-block-unit.js";
import { FLOW_HELP } from "./flow-help.js";
import { InsnUnit } from "./flow-insn-unit.js";
import { type FlowOutput, type FlowStep, parseFlowArgs } from "./flow-options.js";
import { flowInPieces, flowsInPieces } from "./flow-pieces.js";
import { FlowSession } from "./flow-session.js";
import { statsText } from "./flow-text.js";
import { parseJobs, pieceTasks, planPieces } from "./jobs.js";
import type { SidebandOptions } from "./sideband-options.js";
import { VERSION } from "./version.js";

type PtStep = Extract<FlowStep, { kind: "pt" }>;

/**
 * The largest piece of trace a thread decodes at a time: its flow (when printed,
 * tens of bytes of text a byte of trace) is held until it is its turn to be written.
 */
const FLOW_PIECE = 1 << 20;

/**
 * Run `ptkit flow` with `argv` (options, no command name); resolves to the exit code.
 * The analysis outputs and the sideband (the analysis and perf layers) are imported
 * only when asked for. `latency`: the report `ptkit latency` prints (it runs this decode).
 */
export async function runFlow(
  argv: readonly string[],
  io: SessionIo,
  internal: TraceInternals = {},
  latency?: LatencyReport,
): Promise<number> {
  const words = expandArgFiles(io, argv);
  if (typeof words === "string") {
    io.stderr(`ptkit flow: ${words}\n`);
    return 1;
  }
  const out = new LineWriter(io.stdout);
  const fail = (message: string, usage = false): number => {
    out.flush();
    io.stderr(`ptkit flow: ${message}\n${usage ? "Use --help or -h for help.\n" : ""}`);
    return 1;
  };
  const setup = setupFlow(words, io, out, fail);
  if (typeof setup === "number") return setup;
  const { image, kernel, output, sideband, analysis, steps } = setup;
  if (latency !== undefined) analysis.latencyReport = latency;
  if (internal.tables !== undefined) analysis.tables = internal.tables;
  const pt = setup.pt;
  if (!pt) return fail("no pt file (--pt).", true);
  const config = pt.step.config;
  let outputs: AnalysisOutputs | undefined;
  // Tick events give the analysis the time of MTC/CYC updates; printed only if asked for.
  const hideTicks = wantsTime(analysis) && !config.enableTickEvents;
  if (wantsAnalysis(analysis)) {
    const code = steps.flatMap((s) => (s.kind === "elf" || s.kind === "raw" ? [s] : []));
    // The nominal frequency (MSR_PLATFORM_INFO[15:8]) times 100 MHz is the TSC frequency.
    const nsPerTick = config.nomFreq > 0 ? 10 / config.nomFreq : 0;
    const warn = (w: string) => io.stderr(`ptkit flow: warning: ${w}\n`);
    const { AnalysisOutputs } = await import("../session/analysis-outputs.js");
    const opened = AnalysisOutputs.open(io, analysis, { code, nsPerTick, name: pt.step.arg, warn });
    if (typeof opened === "string") return fail(opened);
    outputs = opened;
    if (hideTicks) config.enableTickEvents = true;
  }
  // Printed instructions run on one thread unless -j asks: a piece's text is held
  // until its turn, and what a MiB of trace prints has no bound (code that loops
  // prints on without consuming trace), where one thread streams it.
  const jobs = output.jobs === undefined && !output.quiet ? 1 : parseJobs(io, output.jobs);
  if (typeof jobs === "string") return fail(`${jobs}.`);
  const starts =
    !outputs && flowsInPieces(setup)
      ? planPieces(io, pt.source, jobs, output.quiet ? undefined : FLOW_PIECE)
      : [0];
  if (starts.length > 1 && io.chunks) {
    out.flush(); // what loading printed
    const tasks = pieceTasks(io, pt.range, pt.source.size, starts, "flow", { words, cwd: io.cwd });
    const counts = await flowInPieces(io.chunks, jobs, tasks, starts, setup, out, io);
    if (output.stats) {
      const insn = output.statInsn ? counts.insnCount : undefined;
      const blocks = output.statBlocks ? counts.blockCount : undefined;
      for (const line of statsText(insn, blocks)) out.line(line);
    }
    out.flush();
    return counts.noPsb ? fail(`${noPsbHint(io, pt.range)}.`) : 0;
  }
  const fast =
    outputs && !internal.generalCoverage ? await fastCoverage(setup, outputs, internal) : undefined;
  if (fast !== undefined) {
    if (output.stats) for (const line of statsText(fast, undefined)) out.line(line);
    out.flush();
    const problem = outputs!.finish();
    return problem ? fail(problem) : 0;
  }
  const trace = TraceBytes.read(pt.source, internal.windowSize);
  const options = { image, config };
  const session = new FlowSession(output, out, new PtEvent());
  if (internal.stopAt !== undefined) {
    session.stop = internal.stopAt;
    session.onStop = () => false;
  }
  if (sideband.channels.length > 0) {
    const { openSideband } = await import("./sideband.js");
    const sb = openSideband(io, out, sideband, "flow", kernel);
    if (typeof sb === "string") return fail(sb);
    session.sideband = { session: sb, options: sideband };
  }
  const walker = new CodeWalker();
  const decode =
    pt.step.decoder === "insn"
      ? new InsnUnit(new InsnDecoder(trace, options), session, walker)
      : new BlockUnit(new BlockDecoder(trace, options), session, walker);
  if (outputs) {
    const { AnalysisUnit } = await import("./analysis-unit.js");
    session.run(new AnalysisUnit(decode, session, walker, outputs.stream(), hideTicks));
  } else session.run(decode);
  if (output.stats) {
    const insn = output.statInsn ? session.insnCount : undefined;
    const blocks = output.statBlocks ? session.blockCount : undefined;
    for (const line of statsText(insn, blocks)) out.line(line);
  }
  out.flush();
  // ptxed prints nothing for a file without PSB; say what it looks like instead.
  if (session.noPsb) return fail(`${noPsbHint(io, pt.range)}.`);
  const problem = outputs?.finish();
  return problem ? fail(problem) : 0;
}

/**
 * Outputs made at the end without time (coverage; folded stacks weighed by
 * instructions), made by the fast decode of analysis/coverage-decode.ts where it
 * covers the trace and nothing else is printed: coverage alone straight into its
 * tables, else through the call-stack tracker. The instruction count, or undefined
 * when the general decode must make them (they are then empty again).
 */
async function fastCoverage(
  setup: FlowSetup,
  outputs: AnalysisOutputs,
  internal: TraceInternals,
): Promise<number | undefined> {
  const { output, pt, sideband } = setup;
  const coverage = outputs.coverageOnly();
  if (pt === undefined || (coverage === undefined && !outputs.feedable())) return undefined;
  const config = pt.step.config;
  if (
    !output.quiet ||
    output.check ||
    (output.stats && output.statBlocks) ||
    sideband.channels.length > 0 ||
    Object.values(config.errata).some((on) => on) ||
    config.addrFilter.cfg.some((c) => c !== 0) ||
    config.enableIflagsEvents ||
    config.enableTickEvents
  )
    return undefined;
  const { decodeCoverage, decodeFeed } = await import("../analysis/coverage-decode.js");
  const trace = TraceBytes.read(pt.source, internal.windowSize);
  const graph = new DecisionGraph(setup.image);
  const result =
    coverage !== undefined
      ? decodeCoverage(trace, graph, coverage)
      : decodeFeed(trace, graph, outputs.stream());
  internal.onFastCoverage?.(result);
  if (result.status === 0) return result.insns;
  if (coverage !== undefined) coverage.clear();
  else outputs.reset();
  return undefined;
}

/** What the options set up before decoding: the code, the trace, and how to decode and print. */
export interface FlowSetup {
  steps: FlowStep[];
  image: Image;
  /** What --pevent:kcore loads: the start of every sideband process image. */
  kernel: Image;
  pt: { step: PtStep; range: FileRange; source: TraceSource } | undefined;
  output: FlowOutput;
  sideband: SidebandOptions;
  analysis: AnalysisOptions;
  /** The section caches of the decoders of pieces (see flow-pieces.ts). */
  caches?: SectionCaches;
}

/**
 * Run the option steps in order (loading code, then opening the trace at --pt);
 * `fail` reports a problem and gives the exit code returned instead.
 */
export function setupFlow(
  words: readonly string[],
  io: SessionIo,
  out: LineWriter,
  fail: (message: string, usage?: boolean) => number,
): FlowSetup | number {
  const { steps, output, sideband, analysis, warnings } = parseFlowArgs(words);
  for (const w of warnings) io.stderr(`ptkit flow: warning: ${w}\n`);
  const image = new Image("ptkit flow");
  const kernel = new Image("kernel");
  let pt: FlowSetup["pt"];
  for (const step of steps) {
    switch (step.kind) {
      case "help":
        out.flush();
        io.stdout(FLOW_HELP);
        return 0;
      case "version":
        out.flush();
        io.stdout(`ptkit flow ${VERSION}\n`);
        return 0;
      case "error":
        return fail(step.message, true);
      case "raw": {
        const err = loadRaw(io, image, step.arg);
        if (err) return fail(err);
        break;
      }
      case "elf":
      case "kcore": {
        const verbose = step.verbose ? (line: string) => out.line(line) : undefined;
        const into = step.kind === "elf" ? image : kernel;
        const err = loadElf(io, into, step.arg, verbose, (w) => io.stderr(`ptkit flow: ${w}\n`));
        if (err) return fail(err);
        break;
      }
      case "pt": {
        if (step.cpu) {
          const errata = cpuErrata(step.cpu);
          // Like ptxed: say so on stdout and decode without errata workarounds.
          if (errata) step.config.errata = errata;
          else out.line(`[0, 0: config error: ${errorMessage(ErrorCode.BadCpu)}]`);
        }
        const range = parseFileRange(step.arg);
        if (typeof range === "string") return fail(`bad file ${step.arg}: ${range}.`);
        const source = traceFileProblem(io, range) ?? fileRangeSource(io, range);
        if (typeof source === "string") return fail(source);
        pt = { step, range, source };
        break;
      }
    }
  }
  return { steps, image, kernel, pt, output, sideband, analysis };
}
