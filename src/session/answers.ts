/**
 * What the web page shows for a decoded trace, read back from the analysis outputs
 * the decode wrote into a {@link FilesIo} (the {@link ANSWER_FILES}): the hottest
 * functions, coverage by function, the annotated disassembly of the functions that
 * ran most, and every output file. Shared by perfAnswers (perf-answers.ts) and
 * rawAnswers (raw-answers.ts).
 */
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
 * that went as `outcome` says): the folded stacks from `io`, latencies and coverage
 * as the outputs left them in `analysis.answers` (no file of tens of MB parsed back);
 * the annotation (written to `io` too) reads code with `read`.
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
    functions: foldedFunctionRows(textOf(files.folded), made.latency?.functions ?? []),
    coverage,
    annotated,
    files,
  };
}

/** UTF-8 chunks as one string ("" for none), decoded a chunk at a time. */
function textOf(chunks: readonly Uint8Array[] | undefined): string {
  if (chunks === undefined) return "";
  const decoder = new TextDecoder();
  const parts = chunks.map((c) => decoder.decode(c, { stream: true }));
  parts.push(decoder.decode());
  return parts.join("");
}

/**
 * Functions from folded stacks (`thread;outer;...;inner weight` lines: the first
 * frame names the thread) and the latency report's calls and durations.
 *
 * Folded stacks come depth first, so a line mostly repeats the frames of the one
 * before: those are compared in place with the path so far, and only the rest are cut
 * out and looked up (the bench perf.data's 180,000 lines, 27 MB: 438 → 325 ms, medians
 * of 7, against splitting each line into its frames and a set of them).
 */
export function functionRows(folded: string, latencyJson: string): FunctionRow[] {
  const report =
    latencyJson === ""
      ? {}
      : (JSON.parse(latencyJson) as { functions?: Array<{ name: string; calls: number; total: number }> });
  return foldedFunctionRows(folded, report.functions ?? []);
}

/** {@link functionRows} with the latency report's functions. */
function foldedFunctionRows(
  folded: string,
  latencies: readonly { name: string; calls: number; total: number }[],
): FunctionRow[] {
  const ids = new Map<string, number>();
  const rows: FunctionRow[] = [];
  /** Per function: how many frames of the current path are its. */
  const onPath: number[] = [];
  const id = (name: string): number => {
    let i = ids.get(name);
    if (i === undefined) {
      i = rows.length;
      ids.set(name, i);
      rows.push({ name, self: 0, total: 0, calls: 0, ns: 0 });
      onPath.push(0);
    }
    return i;
  };
  // The current path: its thread's frame ("t;"), and per frame after it its function,
  // where its name ends in the line, and whether it is the function's outermost frame
  // on the path.
  let threadFrame = "";
  const frameIds: number[] = [];
  const frameEnds: number[] = [];
  const outermost: boolean[] = [];
  for (let at = 0; at < folded.length; ) {
    let nl = folded.indexOf("\n", at);
    if (nl < 0) nl = folded.length;
    const line = folded.slice(at, nl);
    at = nl + 1;
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const weight = Number(line.slice(space + 1));
    const thread = line.indexOf(";");
    if (!Number.isFinite(weight) || thread < 0 || thread > space) continue;
    // The frames this line shares with the path: each name where the path has it, and
    // ending there (a ';', or the weight's space).
    let kept = 0;
    if (thread + 1 === threadFrame.length && line.startsWith(threadFrame)) {
      for (let from = thread + 1; kept < frameEnds.length; kept++) {
        const end = frameEnds[kept]!;
        if (end > space || !(end === space || line.charCodeAt(end) === 59)) break;
        if (!line.startsWith(rows[frameIds[kept]!]!.name, from)) break;
        from = end + 1;
      }
    } else threadFrame = line.slice(0, thread + 1);
    while (frameIds.length > kept) {
      const f = frameIds.pop()!;
      frameEnds.pop();
      outermost.pop();
      onPath[f]! -= 1;
    }
    for (let from = kept === 0 ? thread + 1 : frameEnds[kept - 1]! + 1; from <= space; ) {
      let end = line.indexOf(";", from);
      if (end < 0 || end > space) end = space;
      const f = id(line.slice(from, end));
      frameIds.push(f);
      frameEnds.push(end);
      outermost.push(onPath[f] === 0);
      onPath[f]! += 1;
      from = end + 1;
    }
    rows[frameIds[frameIds.length - 1]!]!.self += weight;
    for (let k = 0; k < frameIds.length; k++) if (outermost[k]) rows[frameIds[k]!]!.total += weight;
  }
  for (const f of latencies) {
    const r = rows[id(f.name)]!;
    r.calls += f.calls;
    r.ns += f.total;
  }
  return rows.sort((a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : 1));
}
