/**
 * The answers a person drops a perf.data file for, in one call: the file decoded
 * once with every analysis output on (timeline, folded stacks, coverage, AFL map,
 * latencies), then read back into what a page shows: a summary, the hottest
 * functions, coverage by function, the binaries that were missing. Runs wherever the
 * session layer does (the web app's worker, tests in Node): files come from a
 * {@link FilesIo}.
 */
import type { Demangler } from "../analysis/index.js";
import { PerfError } from "../perf/index.js";
import { defaultAnalysisOptions } from "./analysis-options.js";
import { type AnnotatedFunction, annotateCoverage, annotationText } from "./annotate.js";
import { ANSWER_FILES, type AnswerFile } from "./answer-files.js";
import { ByteLines } from "./byte-lines.js";
import { type CoverageRow, coverageRows } from "./coverage-rows.js";
import type { FilesIo } from "./files-io.js";
import type { ProcessImages } from "./perf-images.js";
import { decodePerf } from "./perf-session.js";

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

export interface PerfAnswersOptions {
  /** Names C++ and Rust symbols. */
  demangler?: Demangler;
  /** The timeline leaves out calls shorter than this (ns; the other outputs count every call). */
  timelineMinDuration?: number;
  /** Told how much of the trace has been decoded: bytes read, bytes in all. */
  progress?: (done: number, total: number) => void;
}

/**
 * The timeline bound that keeps a web page's timeline to what a viewer loads: none up
 * to 4 MiB of perf.data, then 1 µs per 4 MiB (a 100 MB file: 25 µs). Calls shorter
 * than that leave the timeline only; everything else counts them.
 */
export function timelineBoundFor(perfDataBytes: number): number {
  const step = 4 << 20;
  return perfDataBytes <= step ? 0 : 1000 * Math.ceil(perfDataBytes / step);
}

/**
 * Decode the perf.data file at `perfData` in `io`, with the binaries at `binaries`
 * (each used for the mappings of the same path or file name, as `ptkit perf --elf`).
 */
export function perfAnswers(
  io: FilesIo,
  perfData: string,
  binaries: readonly string[],
  options: PerfAnswersOptions = {},
): PerfAnswers {
  const { demangler } = options;
  const analysis = defaultAnalysisOptions();
  analysis.timeline = ANSWER_FILES.timeline;
  if (options.timelineMinDuration) analysis.minDuration = options.timelineMinDuration;
  analysis.folded = ANSWER_FILES.folded;
  analysis.coverage = ANSWER_FILES.coverage;
  analysis.aflMap = ANSWER_FILES.aflMap;
  analysis.latency = ANSWER_FILES.latency;
  const missing = new Map<string, number>();
  const images: ProcessImages[] = [];
  const out = new ByteLines(io);
  let status: number;
  let error: string | undefined;
  try {
    status = decodePerf(
      io,
      out,
      {
        file: perfData,
        elfs: [...binaries],
        symfs: undefined,
        buildIdDir: undefined,
        kernel: [],
        cpu: undefined,
        tid: undefined,
        range: undefined,
        show: "errors",
        jsonl: false,
        symbols: false,
        demangler: demangler && (() => demangler),
        quiet: true,
        insnDecoder: false,
        analysis,
      },
      io.sourceOf(perfData),
      { missing, images, progress: options.progress },
    );
  } catch (e) {
    if (!(e instanceof PerfError) && (e as { code?: string }).code === undefined) throw e;
    status = 1;
    error = `${perfData}: ${(e as Error).message}`;
  } finally {
    out.flush();
  }
  const warnings = io.stderrText
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.replace(/^ptkit perf: /, ""));
  if (status !== 0 && error === undefined) error = warnings.at(-1) ?? "the file could not be decoded";
  const coverage = coverageRows(textOf(io.outputChunks(ANSWER_FILES.coverage)));
  const annotated = annotateCoverage(coverage, (hi, lo, out, size) => {
    for (const p of images) {
      const n = p.readCode(hi, lo, out, size);
      if (n > 0) return n;
    }
    return 0;
  });
  if (annotated.length > 0)
    io.writeFile(ANSWER_FILES.annotate, new TextEncoder().encode(annotationText(annotated)));
  const files: PerfAnswers["files"] = {};
  for (const [key, name] of Object.entries(ANSWER_FILES) as Array<[AnswerFile, string]>) {
    const chunks = io.outputChunks(name);
    if (chunks !== undefined) files[key] = chunks;
  }
  return {
    status,
    error,
    summary: io.stdoutText.trim().split("\n").at(-1) ?? "",
    warnings: warnings.filter((w) => !/^warning: no binary for /.test(w)),
    missing: [...missing].map(([path, addresses]) => ({ path, addresses })),
    functions: functionRows(textOf(files.folded), textOf(files.latency)),
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
 */
export function functionRows(folded: string, latencyJson: string): FunctionRow[] {
  const rows = new Map<string, FunctionRow>();
  const row = (name: string): FunctionRow => {
    let r = rows.get(name);
    if (r === undefined) {
      r = { name, self: 0, total: 0, calls: 0, ns: 0 };
      rows.set(name, r);
    }
    return r;
  };
  for (const line of folded.split("\n")) {
    const space = line.lastIndexOf(" ");
    if (space < 0) continue;
    const weight = Number(line.slice(space + 1));
    const frames = line.slice(0, space).split(";").slice(1);
    if (!Number.isFinite(weight) || frames.length === 0) continue;
    row(frames.at(-1)!).self += weight;
    for (const name of new Set(frames)) row(name).total += weight;
  }
  if (latencyJson !== "") {
    const report = JSON.parse(latencyJson) as {
      functions?: Array<{ name: string; calls: number; total: number }>;
    };
    for (const f of report.functions ?? []) {
      const r = row(f.name);
      r.calls += f.calls;
      r.ns += f.total;
    }
  }
  return [...rows.values()].sort(
    (a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : 1),
  );
}
