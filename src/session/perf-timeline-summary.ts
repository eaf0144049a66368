/**
 * `ptkit perf --timeline/--perfetto` and what viewers open: chrome://tracing loads a
 * JSON timeline up to 256 MB, the Perfetto UI about 1 GB.
 *
 * - Before writing, a timeline the trace is likely to make too large is said (an
 *   estimate from the perf.data size: {@link JSON_BYTES_PER_FILE_BYTE}, measured).
 * - `--timeline-summary` (or `--timeline-budget SIZE`) decodes the file twice: first
 *   to see how many calls of each duration there are and what the unbounded timelines
 *   weigh ({@link planSummary}), then for real with the calls shorter than the bound
 *   that fits the budget left out (their per-function totals in the JSON timeline's
 *   metadata: analysis/export/timeline-summary.ts).
 */
import { FrameDurations, SUMMARY_BUDGET, summaryBound } from "../analysis/index.js";
import type { ByteSource } from "../perf/index.js";
import type { SummaryPlan, SummaryProbe } from "./analysis-options.js";
import { ByteLines } from "./byte-lines.js";
import type { SessionIo } from "./io.js";
import type { PerfOptions } from "./perf-session.js";

/**
 * Timeline bytes per perf.data byte (the benchmarks' 5 M-instruction perf.data: 2.6 MB
 * make a 36 MB JSON timeline and an 11.6 MB Perfetto trace, 178,628 calls). Code with
 * more calls per instruction makes more.
 */
export const JSON_BYTES_PER_FILE_BYTE = 14;
export const PERFETTO_BYTES_PER_FILE_BYTE = 4.5;

/** What viewers load: chrome://tracing's JSON, the Perfetto UI's trace. */
const VIEWER_LIMIT = { timeline: 256 * 1024 * 1024, perfetto: 1024 * 1024 * 1024 };

const mb = (bytes: number) =>
  bytes < 1024 * 1024
    ? `${(bytes / 1024).toFixed(1)} KB`
    : `${(bytes / (1024 * 1024)).toFixed(bytes < 10 * 1024 * 1024 ? 1 : 0)} MB`;

/** The note that a timeline of a `fileBytes` perf.data is likely too large to open, or undefined. */
export function timelineSizeNote(options: PerfOptions, fileBytes: number): string | undefined {
  const a = options.analysis;
  if (a.timelineSummary) return undefined;
  const notes: string[] = [];
  if (a.timeline !== undefined && fileBytes * JSON_BYTES_PER_FILE_BYTE > VIEWER_LIMIT.timeline)
    notes.push(
      `--timeline ${a.timeline}: a perf.data of ${mb(fileBytes)} makes a JSON timeline of about ${mb(fileBytes * JSON_BYTES_PER_FILE_BYTE)}, more than chrome://tracing loads (256 MB)`,
    );
  if (a.perfetto !== undefined && fileBytes * PERFETTO_BYTES_PER_FILE_BYTE > VIEWER_LIMIT.perfetto)
    notes.push(
      `--perfetto ${a.perfetto}: a perf.data of ${mb(fileBytes)} makes a trace of about ${mb(fileBytes * PERFETTO_BYTES_PER_FILE_BYTE)}, more than the Perfetto UI loads (about 1 GB)`,
    );
  if (notes.length === 0) return undefined;
  return `note: ${notes.join("; ")}: --timeline-summary writes one that fits (the calls too short to see left out, their totals kept).`;
}

/**
 * The first decode of `--timeline-summary`: the bound that keeps each timeline asked
 * for within its budget (the larger of the two), said on stderr; undefined when the
 * first decode failed (the real one then reports why).
 */
export function planSummary(
  io: SessionIo,
  options: PerfOptions,
  source: ByteSource,
  decode: (io: SessionIo, out: ByteLines, args: PerfOptions, source: ByteSource) => number,
): SummaryPlan | undefined {
  const a = options.analysis;
  const probe: SummaryProbe = { durations: new FrameDurations(), timelineBytes: 0, perfettoBytes: 0 };
  // Silent: the real decode prints what there is to print.
  const silent: SessionIo = {
    ...io,
    stdout: () => {},
    stdoutBytes: () => {},
    stderr: () => {},
    stderrIsTty: false,
  };
  const status = decode(
    silent,
    new ByteLines(silent),
    {
      ...options,
      quiet: true,
      jsonl: false,
      script: undefined,
      analysis: {
        foldedWeight: "insn",
        symbolFiles: a.symbolFiles,
        depthLimit: a.depthLimit,
        summaryProbe: probe,
      },
    },
    source,
  );
  if (status !== 0) return undefined;
  const d = probe.durations;
  let bound = 0;
  let budget = 0;
  const said: string[] = [];
  for (const [kind, path, bytes, dflt] of [
    ["timeline", a.timeline, probe.timelineBytes, SUMMARY_BUDGET.timeline],
    ["perfetto", a.perfetto, probe.perfettoBytes, SUMMARY_BUDGET.perfetto],
  ] as const) {
    if (path === undefined) continue;
    const b = a.timelineBudget ?? dflt;
    const fit = summaryBound(d, bytes, b);
    if (fit.bound >= bound) {
      bound = fit.bound;
      budget = b;
    }
    said.push(`${kind} ${path}: ${mb(bytes)} for all ${d.frames} frames, budget ${mb(b)}`);
  }
  const kept = keptAt(d, bound);
  io.stderr(
    `ptkit perf: --timeline-summary: ${said.join("; ")}: ${
      bound === 0
        ? "every call fits"
        : `calls shorter than ${bound} ns (of the timeline's clock) left out, ${kept} of ${d.frames} frames kept; the totals per function of those left out are in otherData.summary`
    }.\n`,
  );
  return { bound, budget };
}

/** Frames with a duration of at least `bound`. */
function keptAt(d: FrameDurations, bound: number): number {
  if (bound === 0) return d.frames;
  let kept = d.frames;
  for (let k = 0; k < d.counts.length && 2 ** k <= bound; k++) kept -= d.counts[k]!;
  return kept;
}
