/**
 * `ptkit flow`: the ptxed-compatible instruction flow listing. This parses ptxed's
 * options (options.ts) and reports problems; the pipeline itself (loading the
 * code, decoding, printing ptxed's output, the analysis outputs) is the session
 * layer's (session/raw-session.ts). Diagnostics go to stdout as ptxed prints them,
 * problems with the command line and files to stderr.
 */
import type { LatencyReport } from "../../session/analysis-options.js";
import type { TraceInternals } from "../../session/file-range.js";
import { LineWriter, type SessionIo } from "../../session/io.js";
import { decodeRaw, type RawPieces, type RawSetup, setupRaw } from "../../session/raw-session.js";
import { expandArgFiles } from "../arg-files.js";
import { parseJobs, pieceTasks, planPieces } from "../jobs.js";
import { FLOW_HINTS } from "../session-hints.js";
import { VERSION } from "../version.js";
import { FLOW_HELP } from "./help.js";
import { parseFlowArgs } from "./options.js";

/**
 * Run `ptkit flow` with `argv` (options, no command name); resolves to the exit code.
 * `latency`: the report `ptkit latency` prints (it runs this decode).
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
  if (latency !== undefined) setup.analysis.latencyReport = latency;
  if (internal.tables !== undefined) setup.analysis.tables = internal.tables;
  if (!setup.pt) return fail("no pt file (--pt).", true);
  const pieces: RawPieces = {
    threads: parseJobs(io, setup.output.jobs),
    starts: (source, jobs, maxChunk, minTrace, taper) =>
      planPieces(io, source, jobs, { maxChunk, minTrace, taper }),
    tasks: (s, starts, kind = "flow") =>
      pieceTasks(io, s.pt!.range, s.pt!.source.size, starts, kind, { words, cwd: io.cwd }),
  };
  const warn = (text: string) => io.stderr(`ptkit flow: ${text}\n`);
  const problem = await decodeRaw(io, out, setup, { warn, internal, pieces });
  return problem === undefined ? 0 : fail(problem);
}

/**
 * Parse `words` and run their steps in order (loading code, then opening the trace at
 * --pt); `fail` reports a problem and gives the exit code returned instead (as do
 * --help and --version, after the steps before them).
 */
export function setupFlow(
  words: readonly string[],
  io: SessionIo,
  out: LineWriter,
  fail: (message: string, usage?: boolean) => number,
): RawSetup | number {
  const { steps, output, sideband, analysis, warnings } = parseFlowArgs(words);
  for (const w of warnings) io.stderr(`ptkit flow: warning: ${w}\n`);
  // Help, version and a bad option end the list: the steps before them run first.
  const last = steps.at(-1);
  const ends = last?.kind === "help" || last?.kind === "version" || last?.kind === "error";
  const load = steps.flatMap((s) =>
    s.kind === "help" || s.kind === "version" || s.kind === "error" ? [] : [s],
  );
  const setup = setupRaw(io, out, { steps: load, output, sideband, analysis, hints: FLOW_HINTS }, (w) =>
    io.stderr(`ptkit flow: ${w}\n`),
  );
  if (typeof setup === "string") return fail(setup);
  if (!ends) return setup;
  out.flush();
  if (last.kind === "help") io.stdout(FLOW_HELP);
  else if (last.kind === "version") io.stdout(`ptkit flow ${VERSION}\n`);
  else {
    for (const line of last.stdout ?? []) out.line(line);
    return fail(last.message, last.usage);
  }
  return 0;
}
