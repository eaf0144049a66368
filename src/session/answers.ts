/**
 * What the web page shows for a decoded trace: the hottest functions, coverage by
 * function, the annotated disassembly of the functions that ran most, and every
 * analysis output the decode wrote into a {@link FilesIo} (the {@link ANSWER_FILES}).
 * The tables come from what the outputs hand over at the end as structures
 * (AnalysisOptions.answers), not from their files read back. Shared by perfAnswers
 * (perf-answers.ts) and rawAnswers (raw-answers.ts).
 */
import {
  type FoldedFunction,
  type FrameTree,
  foldedFunctions,
  growFloat64,
  growInt32,
} from "../analysis/index.js";
import { type AnalysisOptions, defaultAnalysisOptions } from "./analysis-options.js";
import { type AnnotatedFunction, annotateCoverage, annotationText, type CodeReader } from "./annotate.js";
import { ANSWER_FILES, type AnswerFile } from "./answer-files.js";
import { type CoverageRow, coverageRowsOf } from "./coverage-rows.js";
import type { FilesIo } from "./files-io.js";

/** One function: instructions it ran itself and under it, and its calls (from the latencies). */
export interface FunctionRow {
  name: string;
  /** Instructions run in the function itself. */
  self: number;
  /** Instructions run in it and in what it called (each call path counted once). */
  total: number;
  /** Calls that returned, and their total duration in ns (0 where the trace has no time). */
  calls: number;
  ns: number;
}

/** What a page shows for a decoded trace (perf.data: perf-answers.ts; raw: raw-answers.ts). */
export interface PerfAnswers {
  /** 0 when decoded; otherwise the decode's exit status and `error` says why. */
  status: number;
  error?: string;
  /** The decode's summary line (instructions, calls, threads, processes). */
  summary: string;
  /** Warnings, one line each, as `ptkit perf` prints them. */
  warnings: string[];
  /** Binaries the file names that were not given: path and the addresses that needed them. */
  missing: Array<{ path: string; addresses: number }>;
  /** Functions by instructions run in them, most first. */
  functions: FunctionRow[];
  /** Functions by instructions run, most first. */
  coverage: CoverageRow[];
  /** The hottest functions' instructions, each with how often it ran (annotate.ts). */
  annotated: AnnotatedFunction[];
  /** The output files written, each as its chunks (a Blob takes them as they are; concatBytes joins them). */
  files: Partial<Record<AnswerFile, readonly Uint8Array[]>>;
}

/** The analysis outputs the answers are read from, each written to its {@link ANSWER_FILES} name. */
export function answerAnalysis(timelineMinDuration: number | undefined): AnalysisOptions {
  const analysis = defaultAnalysisOptions();
  analysis.timeline = ANSWER_FILES.timeline;
  if (timelineMinDuration) analysis.minDuration = timelineMinDuration;
  analysis.folded = ANSWER_FILES.folded;
  analysis.coverage = ANSWER_FILES.coverage;
  analysis.aflMap = ANSWER_FILES.aflMap;
  analysis.latency = ANSWER_FILES.latency;
  analysis.answers = {};
  return analysis;
}

/** How the decode went, in the answers' words. */
export type DecodeOutcome = Pick<PerfAnswers, "status" | "error" | "summary" | "warnings" | "missing">;

/**
 * The answers from the outputs of {@link answerAnalysis} (`analysis`, used by a decode
 * that went as `outcome` says): the tables from the functions, latencies and coverage
 * blocks the outputs left in `analysis.answers` (no file of tens of MB parsed back),
 * the files as `io` holds them; the annotation (written to `io` too) reads code with
 * `read`.
 */
export function readAnswers(
  io: FilesIo,
  analysis: AnalysisOptions,
  outcome: DecodeOutcome,
  read: CodeReader,
): PerfAnswers {
  const made = analysis.answers ?? {};
  const coverage = coverageRowsOf(made.coverage ?? []);
  const annotated = annotateCoverage(coverage, read);
  if (annotated.length > 0)
    io.writeFile(ANSWER_FILES.annotate, new TextEncoder().encode(annotationText(annotated)));
  const files: PerfAnswers["files"] = {};
  for (const [key, name] of Object.entries(ANSWER_FILES) as Array<[AnswerFile, string]>) {
    const chunks = io.outputChunks(name);
    if (chunks !== undefined) files[key] = chunks;
  }
  return {
    ...outcome,
    functions: rowsOf(made.folded ?? [], made.latency?.functions ?? []),
    coverage,
    annotated,
    files,
  };
}

/**
 * Functions from folded stacks (`thread;outer;...;inner weight` lines: the first
 * frame names the thread) and the latency report's calls and durations.
 */
export function functionRows(folded: string, latencyJson: string): FunctionRow[] {
  const report =
    latencyJson === ""
      ? {}
      : (JSON.parse(latencyJson) as { functions?: Array<{ name: string; calls: number; total: number }> });
  return rowsOf(foldedFunctions(frameTree(folded)), report.functions ?? []);
}

/** The rows of `functions` (folded stacks') and `latencies` (the latency report's), most instructions run first. */
function rowsOf(
  functions: readonly FoldedFunction[],
  latencies: readonly { name: string; calls: number; total: number }[],
): FunctionRow[] {
  const rows = new Map<string, FunctionRow>();
  for (const f of functions)
    rows.set(f.name, { name: f.name, self: f.self, total: f.total, calls: 0, ns: 0 });
  for (const f of latencies) {
    let r = rows.get(f.name);
    if (r === undefined) {
      r = { name: f.name, self: 0, total: 0, calls: 0, ns: 0 };
      rows.set(f.name, r);
    }
    r.calls += f.calls;
    r.ns += f.total;
  }
  return [...rows.values()].sort(
    (a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : 1),
  );
}

/**
 * Folded stacks' text as a tree of its lines' frames (see FrameTree). Lines come depth
 * first, so a line mostly repeats the frames of the one before: those are compared in
 * place with the path so far, and only the rest are cut out, interned and made nodes
 * (splitting every line into its frames took a third more time). A line without a
 * weight or a `;` is left out.
 */
function frameTree(folded: string): FrameTree {
  const ids = new Map<string, number>();
  const names: string[] = [];
  let above: Int32Array = new Int32Array(1024);
  let name: Int32Array = new Int32Array(1024);
  let ends: Uint8Array = new Uint8Array(1024);
  let weight: Float64Array = new Float64Array(1024);
  let size = 0;
  const node = (up: number, text: string): number => {
    let f = ids.get(text);
    if (f === undefined) {
      f = names.length;
      ids.set(text, f);
      names.push(text);
    }
    if (size === above.length) {
      above = growInt32(above, size + 1);
      name = growInt32(name, size + 1);
      const e = new Uint8Array(above.length);
      e.set(ends);
      ends = e;
      weight = growFloat64(weight, size + 1);
    }
    above[size] = up;
    name[size] = f;
    return size++;
  };
  // The current path: per frame (its first field, the thread's, included) its node and
  // where its name ends in the line.
  const path: number[] = [];
  const pathEnds: number[] = [];
  for (let at = 0; at < folded.length; ) {
    let nl = folded.indexOf("\n", at);
    if (nl < 0) nl = folded.length;
    const line = folded.slice(at, nl);
    at = nl + 1;
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const w = Number(line.slice(space + 1));
    const thread = line.indexOf(";");
    if (!Number.isFinite(w) || thread < 0 || thread > space) continue;
    // The frames this line shares with the path: each name where the path has it, and
    // ending there (a ';', or the weight's space).
    let kept = 0;
    for (let from = 0; kept < pathEnds.length; kept++) {
      const end = pathEnds[kept]!;
      if (end > space || !(end === space || line.charCodeAt(end) === 59)) break;
      if (!line.startsWith(names[name[path[kept]!]!]!, from)) break;
      from = end + 1;
    }
    path.length = kept;
    pathEnds.length = kept;
    for (let from = kept === 0 ? 0 : pathEnds[kept - 1]! + 1; from <= space; ) {
      let end = line.indexOf(";", from);
      if (end < 0 || end > space) end = space;
      path.push(node(path.length === 0 ? -1 : path[path.length - 1]!, line.slice(from, end)));
      pathEnds.push(end);
      from = end + 1;
    }
    const last = path[path.length - 1]!;
    ends[last] = 1;
    weight[last]! += w;
  }
  return { size, above, name, ends, weight, nameOf: (f) => names[f]! };
}
