/**
 * `ptkit perf`: decode the Intel PT of a perf.data file like `perf script --itrace`.
 * This parses the options, opens the file (or standard input) and reports errors;
 * the pipeline itself is the session layer's (session/perf-session.ts).
 */

import { parseArgs } from "node:util";
import { diagnosticLine } from "../../base/diagnostic.js";
import { loadDemangler } from "../../node/demangle-loader.js";
import { fileSource } from "../../node/source.js";
import { findSourceLineTool, SOURCE_LINE_HINT, SourceLines, toolRuns } from "../../node/srcline.js";
import { PerfError } from "../../perf/index.js";
import type { LatencyReport } from "../../session/analysis-outputs.js";
import { ByteLines } from "../../session/byte-lines.js";
import { ioErrorText, openError } from "../../session/file-kind.js";
import { parseCodeFile } from "../../session/flow-image.js";
import type { SessionIo, WalkThreads } from "../../session/io.js";
import { takeAnalysisOptions } from "../../session/perf-analysis.js";
import { lookupDirWarnings } from "../../session/perf-checks.js";
import { PERF_SCRIPT_USAGE, takePerfScriptOptions } from "../../session/perf-script-options.js";
import type { SourceLineLookup as SessionSourceLines } from "../../session/perf-script-srcline.js";
import {
  decodePerf,
  type PerfInternals,
  type PerfOptions,
  WALK_APART_BYTES,
  walksApart,
} from "../../session/perf-session.js";
import { parseJobs } from "../jobs.js";
import { PERF_HINTS } from "../session-hints.js";
import { PERF_HELP } from "./help.js";

export type { PerfInternals } from "../../session/perf-session.js";

/** `ptkit perf`'s options as the command line gave them (perf-session.ts has what they mean). */
interface PerfArgs extends PerfOptions {
  /** The directories named by options (option, path): --symfs/--sysroot, --buildid-dir. */
  dirs: Array<[string, string]>;
  demangle: boolean;
  /** `-j/--jobs`, as given (see parseJobs). */
  jobs: string | undefined;
}

const OPTIONS = {
  elf: { type: "string", multiple: true },
  symfs: { type: "string" },
  sysroot: { type: "string" },
  "buildid-dir": { type: "string" },
  kcore: { type: "string", multiple: true },
  vmlinux: { type: "string", multiple: true },
  cpu: { type: "string" },
  tid: { type: "string" },
  "time-range": { type: "string" },
  branches: { type: "boolean" },
  calls: { type: "boolean" },
  jsonl: { type: "boolean" },
  sym: { type: "boolean" },
  "no-demangle": { type: "boolean" },
  quiet: { type: "boolean", short: "q" },
  "insn-decoder": { type: "boolean" },
  jobs: { type: "string", short: "j" },
  help: { type: "boolean", short: "h" },
} as const;

function parse(
  argv: readonly string[],
  home: string | undefined,
): PerfArgs | "help" | string | UnknownOption {
  const script = takePerfScriptOptions(argv);
  if (typeof script === "string") return script;
  const taken = takeAnalysisOptions(script.rest);
  if (typeof taken === "string") return taken;
  let p: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    p = parseArgs({ args: taken.rest, options: OPTIONS, allowPositionals: true });
  } catch (e) {
    return unknownOption(e) ?? (e as Error).message;
  }
  const v = p.values;
  if (v.help) return "help";
  const count = (name: string, s: string | undefined): number | undefined | string => {
    if (s === undefined) return undefined;
    return /^\d+$/.test(s) ? Number(s) : `--${name}: bad argument: ${s}.`;
  };
  const cpu = count("cpu", v.cpu);
  if (typeof cpu === "string") return cpu;
  const tid = count("tid", v.tid);
  if (typeof tid === "string") return tid;
  const range = v["time-range"]?.split(",");
  if (range && range.length !== 2) return `--time-range: want <from>,<to>: ${v["time-range"]}.`;
  // perf script reads ./perf.data unless told otherwise (-i, or ptkit's positional file).
  const s = script.options;
  if (p.positionals.length > 1 || (p.positionals.length === 1 && s.input !== undefined))
    return "expected exactly one perf.data file.";
  if (p.positionals.length === 0) s.active = true;
  if (s.active && (v.branches || v.calls || v.jsonl))
    return "--branches, --calls and --jsonl are ptkit's own outputs: not with perf script's options (-i, --itrace, -F, --call-trace).";
  // --sym names branch addresses; instructions are printed as addresses alone (as perf script --itrace=i).
  if (v.sym && !v.branches && !v.calls) return "--sym needs --branches or --calls.";
  const dirs: Array<[string, string]> = [];
  if (v.symfs !== undefined) dirs.push(["--symfs", v.symfs]);
  else if (v.sysroot !== undefined) dirs.push(["--sysroot", v.sysroot]);
  if (v["buildid-dir"] !== undefined) dirs.push(["--buildid-dir", v["buildid-dir"]]);
  return {
    file: p.positionals[0] ?? s.input ?? "perf.data",
    elfs: (v.elf ?? []).map(parseCodeFile),
    symfs: v.symfs ?? v.sysroot,
    buildIdDir: v["buildid-dir"] ?? (home === undefined ? undefined : `${home}/.debug`),
    dirs,
    kernel: [...(v.kcore ?? []), ...(v.vmlinux ?? [])],
    cpu,
    tid,
    range: (range as [string, string] | undefined) ?? s.time,
    rangeGiven: range !== undefined,
    // Quiet: errors only (as ptxed --quiet).
    show: v.quiet ? "errors" : v.branches ? "branches" : v.calls ? "calls" : "insn",
    jsonl: v.jsonl === true,
    symbols: v.sym === true,
    demangle: v["no-demangle"] !== true,
    quiet: v.quiet === true,
    insnDecoder: v["insn-decoder"] === true,
    jobs: v.jobs,
    analysis: taken.options,
    script: s,
  };
}

/** An option neither ptkit nor perf script knows: perf's message (perf then prints its usage and exits 129). */
interface UnknownOption {
  unknown: string;
}

function unknownOption(e: unknown): UnknownOption | undefined {
  if ((e as NodeJS.ErrnoException).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return undefined;
  const option = /'(-[^']*)'/.exec((e as Error).message)?.[1] ?? "";
  const long = option.startsWith("--");
  const name = long ? option.slice(2).split("=")[0] : option.slice(1, 2);
  return { unknown: `  Error: unknown ${long ? "option" : "switch"} \`${name}'` };
}

/** Run `ptkit perf` with `argv`; `latency`: the report `ptkit latency` prints (it runs this decode). */
export function runPerf(
  argv: readonly string[],
  io: SessionIo,
  home = process.env.HOME,
  internal: PerfInternals = {},
  latency?: LatencyReport,
): number {
  const args = parse(argv, home);
  if (args === "help") {
    io.stdout(PERF_HELP);
    return 0;
  }
  if (typeof args === "object" && "unknown" in args) {
    io.stderr(`${args.unknown}\n${PERF_SCRIPT_USAGE}`);
    return 129;
  }
  if (typeof args === "string") {
    io.stderr(`ptkit perf: ${args}\nUse --help or -h for help.\n`);
    return 1;
  }
  const jobs = parseJobs(io, args.jobs);
  if (typeof jobs === "string") {
    io.stderr(`ptkit perf: ${jobs}\nUse --help or -h for help.\n`);
    return 1;
  }
  if (latency !== undefined) args.analysis.latencyReport = latency;
  if (internal.tables !== undefined) args.analysis.tables = internal.tables;
  const unreadable = args.file === "-" ? undefined : openError(io, args.file);
  if (unreadable !== undefined) {
    io.stderr(`ptkit perf: ${unreadable}\n`);
    return 1;
  }
  for (const w of lookupDirWarnings(io, args.dirs)) io.stderr(`ptkit perf: ${w}\n`);
  // The analysis outputs' walk on other threads (each stream's on one; see PerfInternals.walkThreads).
  // (Not of standard input, which only this thread reads.)
  const apart = jobs > 1 && args.file !== "-";
  const walkThreads =
    internal.walkThreads ??
    (apart ? earlyWalk(io, args, minTraceFromEnv(io.perfWalks?.({ argv, home, threads: jobs }))) : undefined);
  const out = new ByteLines(io);
  try {
    return decodePerf(io, out, perfOptions(args), fileSource(io, args.file), { ...internal, walkThreads });
  } catch (e) {
    out.flush();
    if (!(e instanceof PerfError) && !(e as NodeJS.ErrnoException).code) throw e;
    io.stderr(
      `ptkit perf: ${e instanceof PerfError ? diagnosticLine(args.file, e) : `${args.file}: ${ioErrorText(e)}`}\n`,
    );
    return 1;
  } finally {
    out.flush();
    walkThreads?.stop();
  }
}

/**
 * `threads`, with the first stream's walk started now where the decode will likely
 * want it (the analysis outputs alone, of every stream shown whole, outputs a walk
 * apart pays for: see walksApart; a file large enough to hold a trace a thread pays
 * for: WALK_APART_BYTES), so that its thread loads the code and reads the file while
 * this one does; the decode stops it where it does not want it after all.
 */
function earlyWalk(io: SessionIo, args: PerfArgs, threads: WalkThreads | undefined): WalkThreads | undefined {
  const likely =
    args.quiet &&
    !args.jsonl &&
    !args.script?.active &&
    args.range === undefined &&
    args.tid === undefined &&
    walksApart(args.analysis);
  if (threads === undefined || !likely) return threads;
  if (fileBytes(io, args.file) < (threads.minTrace ?? WALK_APART_BYTES)) return threads;
  const first = threads.start(0);
  return withThreads(threads, { start: (i) => (i === 0 ? first : threads.start(i)) });
}

/** The size of file `path`, or 0 where it has none (a pipe). */
function fileBytes(io: SessionIo, path: string): number {
  try {
    return io.fileSize(path);
  } catch {
    return 0;
  }
}

/**
 * `threads` with `$PTKIT_PERF_WALK_MIN`, where set, as the least bytes of a CPU's
 * trace walked apart (default WALK_APART_BYTES; 0: any, as the tests of the
 * executable's threads walk the small captures of the corpus).
 */
function minTraceFromEnv(threads: WalkThreads | undefined): WalkThreads | undefined {
  const env = process.env.PTKIT_PERF_WALK_MIN;
  const min = env === undefined || env === "" ? Number.NaN : Number(env);
  if (threads === undefined || !Number.isSafeInteger(min) || min < 0) return threads;
  return withThreads(threads, { minTrace: min });
}

/** `threads` with `change` made (its methods called on it). */
function withThreads(
  threads: WalkThreads,
  change: Partial<Pick<WalkThreads, "start" | "minTrace">>,
): WalkThreads {
  return {
    threads: threads.threads,
    always: threads.always,
    minTrace: change.minTrace ?? threads.minTrace,
    start: change.start ?? ((i) => threads.start(i)),
    stop: () => threads.stop(),
  };
}

/** The session's options for `args`: the demangler loads from node_modules, source lines from addr2line or llvm-symbolizer; remedies name ptkit perf's options. */
function perfOptions(args: PerfArgs): PerfOptions {
  const options: PerfOptions = { ...args, hints: PERF_HINTS, sourceLines: loadSourceLines };
  return args.demangle ? { ...options, demangler: loadDemangler } : options;
}

/** perf script's srcline lookups through the installed tool (addr2line first: perf 6.1 runs it). */
function loadSourceLines(): SessionSourceLines | string {
  const tool = toolRuns("addr2line") ? "addr2line" : findSourceLineTool();
  if (tool === undefined) return `no addr2line or llvm-symbolizer (${SOURCE_LINE_HINT})`;
  const lines = new SourceLines(tool);
  return (file, addrs) => {
    const frames = lines.lookup(file, addrs);
    return typeof frames === "string" ? frames : frames.map((f) => f[0]);
  };
}
