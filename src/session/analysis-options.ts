/**
 * The analysis options of `ptkit flow` and `ptkit perf` (`--timeline`, `--perfetto`,
 * `--min-duration`, `--folded`, `--folded-weight`, `--coverage`, `--afl-map`,
 * `--edges`, `--jsonl`, `--latency`, `--symbols`, `--stack-depth`) and the report
 * `ptkit latency` prints, apart from the outputs they open (analysis-outputs.ts):
 * parsing them loads none of the analysis layer, which a decode without them does not
 * need.
 */
import { DEFAULT_DEPTH_LIMIT } from "../analysis/callstack.js";
import type { FoldedFunction, FoldedWeight, FrameDurations, LatencySummary } from "../analysis/index.js";
import { parseCUint } from "../base/c-int.js";
import type { TablesOut } from "../shard/tables-out.js";
import type { CoverageBlock } from "./coverage-rows.js";
import { type CodeFile, parseCodeFile } from "./flow-image.js";

/** `ptkit latency`'s report, printed instead of written to a file. */
export interface LatencyReport {
  /** JSON (as `--latency FILE` writes it) instead of text. */
  json: boolean;
  /** How many of the slowest calls to list. */
  slowest: number;
  /** Only the function of this name (its statistics and its slowest calls). */
  only?: string;
  /** Where the report goes (stdout). */
  out: (chunk: Uint8Array) => void;
}

/** The outputs of an analysis as structures (see {@link AnalysisOptions.answers}). */
export interface AnswerStructures {
  /** The latency file's report. */
  latency?: LatencySummary;
  /** The coverage file's blocks. */
  coverage?: CoverageBlock[];
  /** The functions of the folded stacks' lines (their weights as written). */
  folded?: FoldedFunction[];
}

export interface AnalysisOptions {
  timeline?: string;
  /** The timeline in Perfetto's protobuf format. */
  perfetto?: string;
  /** Timelines leave out frames shorter than this (whole clock units: ns, or ticks or instructions shown as ns). */
  minDuration?: number;
  /**
   * `--timeline-summary` (or `--timeline-budget BYTES`): timelines bounded to what
   * viewers open (see timeline-summary.ts); `timelineBudget`: bytes per file
   * (default: the viewers' limits).
   */
  timelineSummary?: boolean;
  timelineBudget?: number;
  /** Set by the summary's first decode (no option): what it measures, no file written. */
  summaryProbe?: SummaryProbe;
  /** Set after the summary's first decode (no option): the bound and what it leaves out. */
  summaryPlan?: SummaryPlan;
  /** The JSON timeline's times in perf time (`ptkit perf --perf-time`). */
  perfTime?: boolean;
  folded?: string;
  foldedWeight: FoldedWeight;
  coverage?: string;
  aflMap?: string;
  edges?: string;
  jsonl?: string;
  /** Call latencies as JSON. */
  latency?: string;
  /** Set by `ptkit latency` (no option): the report it prints. */
  latencyReport?: LatencyReport;
  /**
   * Set by `ptkit shard run` and `ptkit perf --db` (no option): the call-stack
   * segments and the edges of the decode are recorded and put here.
   */
  tables?: TablesOut;
  /**
   * Set by the web page's answers (answers.ts; no option): what the latency, coverage
   * and folded stacks outputs wrote, as structures, put here at the end (their files
   * then need no reading back).
   */
  answers?: AnswerStructures;
  /**
   * Extra symbol sources (`--symbols FILE[:BASE]`): ELF files read for names only. (A
   * bare `--symbols` is accepted and changes nothing: names are on by default.)
   */
  symbolFiles: CodeFile[];
  /** Stored frames per thread. */
  depthLimit: number;
}

/** The summary's first decode: frames by duration, and the bytes of the unbounded timelines. */
export interface SummaryProbe {
  durations: FrameDurations;
  timelineBytes: number;
  perfettoBytes: number;
}

/** The summary's bound (whole clock units; calls shorter are left out) and its budget. */
export interface SummaryPlan {
  bound: number;
  budget: number;
}

export function defaultAnalysisOptions(): AnalysisOptions {
  return { foldedWeight: "insn", symbolFiles: [], depthLimit: DEFAULT_DEPTH_LIMIT };
}

/** Whether any analysis output was asked for. */
export function wantsAnalysis(o: AnalysisOptions): boolean {
  return (
    o.timeline !== undefined ||
    o.perfetto !== undefined ||
    o.folded !== undefined ||
    o.coverage !== undefined ||
    o.aflMap !== undefined ||
    o.edges !== undefined ||
    o.jsonl !== undefined ||
    o.tables !== undefined ||
    o.summaryProbe !== undefined ||
    wantsLatency(o)
  );
}

/** Whether call latencies were asked for (a file, or `ptkit latency`'s report). */
export function wantsLatency(o: AnalysisOptions): boolean {
  return o.latency !== undefined || o.latencyReport !== undefined;
}

/** Whether the outputs use time (then the decoder should report time changes: tick events). */
export function wantsTime(o: AnalysisOptions): boolean {
  return (
    o.timeline !== undefined ||
    o.perfetto !== undefined ||
    o.jsonl !== undefined ||
    o.tables !== undefined ||
    o.summaryProbe !== undefined ||
    wantsLatency(o) ||
    (o.folded !== undefined && o.foldedWeight === "time")
  );
}

/** The options that name an output file, and the file each names. */
type OutputFile = "timeline" | "perfetto" | "folded" | "coverage" | "aflMap" | "edges" | "jsonl" | "latency";

export const FILE_OPTIONS: Record<string, OutputFile> = {
  "--timeline": "timeline",
  "--perfetto": "perfetto",
  "--folded": "folded",
  "--coverage": "coverage",
  "--afl-map": "aflMap",
  "--edges": "edges",
  "--jsonl": "jsonl",
  "--latency": "latency",
};

/** The analysis option at argv[i]: words used (0: not one), or an error message. */
export function parseAnalysisOption(o: AnalysisOptions, argv: readonly string[], i: number): number | string {
  const arg = argv[i]!;
  const value = argv[i + 1];
  if (arg === "--symbols") {
    // Before names were on by default this was a flag: a file argument is optional.
    if (value === undefined || value === "" || value.startsWith("-")) return 1;
    o.symbolFiles.push(parseCodeFile(value));
    return 2;
  }
  if (arg === "--timeline-summary") {
    o.timelineSummary = true;
    return 1;
  }
  const file = FILE_OPTIONS[arg];
  if (
    file === undefined &&
    arg !== "--folded-weight" &&
    arg !== "--stack-depth" &&
    arg !== "--min-duration" &&
    arg !== "--timeline-budget"
  )
    return 0;
  if (value === undefined || value === "" || value.startsWith("--")) return `${arg}: missing argument.`;
  if (file !== undefined) o[file] = value;
  else if (arg === "--timeline-budget") {
    const m = /^(\d+)([kKmMgG]?)[bB]?$/.exec(value);
    const bytes = m ? Number(m[1]) * { "": 1, k: 1024, m: 1 << 20, g: 1 << 30 }[m[2]!.toLowerCase()]! : 0;
    if (!(bytes >= 1024 && Number.isSafeInteger(bytes)))
      return `${arg}: want a size of at least 1K such as 200M or 1G: ${value}.`;
    o.timelineBudget = bytes;
    o.timelineSummary = true;
  } else if (arg === "--min-duration") {
    const d = parseDuration(value);
    if (d === undefined)
      return `${arg}: want a duration such as 10us, 500ns, 2ms or a number of ns: ${value}.`;
    o.minDuration = d;
  } else if (arg === "--folded-weight") {
    if (value !== "insn" && value !== "time") return `${arg}: want insn or time: ${value}.`;
    o.foldedWeight = value;
  } else {
    const n = parseCUint(value);
    if (n === undefined || n < 1n || n > 1n << 24n)
      return `${arg}: want a depth from 1 to 16777216: ${value}.`;
    o.depthLimit = Number(n);
  }
  return 2;
}

const DURATION_UNITS: Record<string, number> = { "": 1, ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9 };

/**
 * A duration as whole nanoseconds: a number with an optional unit (ns, us or µs, ms,
 * s); a bare number is nanoseconds, i.e. the timelines' unit (ticks or instructions
 * when they have no real time). Undefined when not one, or not above 0.
 */
export function parseDuration(text: string): number | undefined {
  // (µ written as an escape: the CLI's bundle is ASCII, see tools/build/bundle-cli.ts.)
  const m = /^(\d+(?:\.\d+)?)(ns|us|\u00b5s|ms|s)?$/.exec(text);
  if (!m) return undefined;
  const ns = Math.round(Number(m[1]) * DURATION_UNITS[m[2] ?? ""]!);
  return ns > 0 && Number.isSafeInteger(ns) ? ns : undefined;
}
