/**
 * The answers a person drops a perf.data file for, in one call: the file decoded
 * once with every analysis output on (timeline, folded stacks, coverage, AFL map,
 * latencies), then made into what a page shows: a summary, the hottest
 * functions, coverage by function, the binaries that were missing. Runs wherever the
 * session layer does (the web app's worker, tests in Node): files come from a
 * {@link FilesIo}.
 */

import type { NameDemangler } from "../analysis/index.js";
import { diagnosticLine } from "../base/diagnostic.js";
import { PerfError } from "../perf/index.js";
import { answerAnalysis, type PerfAnswers, readAnswers } from "./answers.js";
import { ByteLines } from "./byte-lines.js";
import type { FilesIo } from "./files-io.js";
import type { ProcessImages } from "./perf-images.js";
import { decodePerf } from "./perf-session.js";

export interface PerfAnswersOptions {
  /** Names C++ and Rust symbols. */
  demangler?: NameDemangler;
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
  const analysis = answerAnalysis(options.timelineMinDuration);
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
        // Dropped files by their own names (a name such as libfoo.so:1 holds no base).
        elfs: binaries.map((name) => ({ name, base: undefined })),
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
    error = e instanceof PerfError ? diagnosticLine(perfData, e) : `${perfData}: ${(e as Error).message}`;
  } finally {
    out.flush();
  }
  const warnings = io.stderrText
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => l.replace(/^ptkit perf: /, ""));
  if (status !== 0 && error === undefined) error = warnings.at(-1) ?? "the file could not be decoded";
  const outcome = {
    status,
    error,
    summary: io.stdoutText.trim().split("\n").at(-1) ?? "",
    warnings: warnings.filter((w) => !/^warning: no binary for /.test(w)),
    missing: [...missing].map(([path, addresses]) => ({ path, addresses })),
  };
  return readAnswers(io, analysis, outcome, (hi, lo, out, size) => {
    for (const p of images) {
      const n = p.readCode(hi, lo, out, size);
      if (n > 0) return n;
    }
    return 0;
  });
}
