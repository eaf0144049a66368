/**
 * Call latencies on the command line: `--latency FILE` (JSON) and `ptkit latency`'s
 * report (text or JSON on stdout), written by the analysis layer's writers, and what
 * to say when `ptkit latency --function` names no function of the trace.
 */
import {
  type CallLatency,
  type LatencySummary,
  writeLatencyJson,
  writeLatencyText,
} from "../analysis/index.js";

/** Names offered when `--function` matches none. */
const SUGGESTIONS = 5;

export function writeLatencyReport(
  summary: LatencySummary,
  json: boolean,
  out: (chunk: Uint8Array) => void,
): void {
  if (json) writeLatencyJson(summary, out);
  else writeLatencyText(summary, out);
}

/** Undefined, or (when the report is of one function that never ran) why there is no report. */
export function latencyProblem(summary: LatencySummary, latency: CallLatency): string | undefined {
  const only = summary.only;
  if (only === undefined || summary.functions.length > 0) return undefined;
  const names = [...new Set(latency.functionNames())];
  const like = names.filter((n) => n.toLowerCase().includes(only.toLowerCase())).slice(0, SUGGESTIONS);
  const hint = like.length > 0 ? `; names that contain it: ${like.join(", ")}` : "";
  return `--function ${only}: no function of that name was called in the trace (${names.length} functions were${hint}).`;
}
