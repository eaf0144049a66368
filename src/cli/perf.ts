/**
 * `ptkit perf`: decode the Intel PT of a perf.data file like `perf script --itrace`,
 * from the file alone: the decoder set up from the file (errata from the cpuid
 * feature; MTC, nominal frequency and TSC:CTC ratio from AUXTRACE_INFO), the
 * binaries from its MMAP/MMAP2 records (perf-images.ts), the kernel where KASLR put
 * it (perf-kernel.ts), the running thread of each CPU from its switch records or
 * else by CR3 (perf-stream.ts, perf-cr3.ts), each stream read a window at a time
 * (TraceBytes), output as perf-output.ts writes it, and on request the analysis
 * outputs of perf-analysis.ts (timeline, folded stacks, coverage).
 */
import { parseArgs } from "node:util";
import type { Demangler, SymbolTable } from "../analysis/index.js";
import { cpuErrata, parseCpu, parseCUint } from "../cpu/index.js";
import { type DecoderConfig, defaultDecoderConfig } from "../event/index.js";
import { Image } from "../image/index.js";
import { TraceBytes } from "../packet/index.js";
import {
  type AuxtraceInfo,
  auxStreams,
  auxtraceBuffers,
  type CpuSwitch,
  cpuFromCpuid,
  diagnosticText,
  intelPtDecodeParams,
  PerfDataReader,
  PerfError,
  PerfRecord,
  type PerfTasks,
  parseAuxtraceInfo,
  perfTimeToTsc,
  RecordType,
  readTasks,
  streamSource,
  type Timed,
  type TscConversion,
} from "../perf/index.js";
import type { TablesOut } from "../shard/tables-out.js";
import { type AnalysisOptions, type LatencyReport, wantsAnalysis, wantsTime } from "./analysis-outputs.js";
import { ByteLines } from "./byte-lines.js";
import { loadDemangler } from "./demangle-loader.js";
import { ioErrorText, openError } from "./file-kind.js";
import { loadElf, splitBase } from "./flow-image.js";
import type { CliIo } from "./io.js";
import { fileSource } from "./node-source.js";
import { bothSinks, PerfAnalysis, perfNsPerTick, ThreadNames, takeAnalysisOptions } from "./perf-analysis.js";
import { cpuProblem, lookupDirWarnings, tidProblem } from "./perf-checks.js";
import { Cr3Threads } from "./perf-cr3.js";
import { DEBUG_ROOT } from "./perf-debug-files.js";
import { AllProcessSymbols } from "./perf-frame-symbols.js";
import { PERF_HELP } from "./perf-help.js";
import { BinaryFinder, ProcessImages, sameBinary } from "./perf-images.js";
import { kernelMapOf, loadKernel } from "./perf-kernel.js";
import { jsonlSink, type PerfShow, textSink } from "./perf-output.js";
import { ScriptComms } from "./perf-script-comms.js";
import { eventModifier, eventNameWidth, scriptSink } from "./perf-script-fields.js";
import { PERF_SCRIPT_USAGE, type PerfScriptOptions, takePerfScriptOptions } from "./perf-script-options.js";
import {
  blockDecoderConfig,
  interleave,
  type PerfDecoder,
  type PerfWhere,
  type StreamContext,
  type TscRange,
} from "./perf-stream.js";

interface PerfArgs {
  file: string;
  elfs: string[];
  symfs: string | undefined;
  buildIdDir: string | undefined;
  /** The directories named by options (option, path): --symfs/--sysroot, --buildid-dir. */
  dirs: Array<[string, string]>;
  kernel: string[];
  cpu: number | undefined;
  tid: number | undefined;
  range: [string, string] | undefined;
  /** Whether --time-range (not perf's --time) gave the range. */
  rangeGiven: boolean;
  show: PerfShow;
  jsonl: boolean;
  symbols: boolean;
  demangle: boolean;
  quiet: boolean;
  /** --insn-decoder: the instruction decoder even where no instruction is printed. */
  insnDecoder: boolean;
  analysis: AnalysisOptions;
  /** perf script's options (perf-script-options.ts); `active`: print perf script's lines. */
  script: PerfScriptOptions;
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
    elfs: v.elf ?? [],
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

/** Settings for tests and other commands. */
export interface PerfInternals {
  /** The trace window size (bytes of a stream held at a time). */
  windowSize?: number;
  /** Decode only these streams (by index in the file: `ptkit shard run`). */
  streams?: readonly number[];
  /** Record the shard tables' data here (`ptkit shard run`, `ptkit perf --db`). */
  tables?: TablesOut;
  /** perf's debug-file directory (default /usr/lib/debug): tests give their own. */
  debugRoot?: string;
}

/** Run `ptkit perf` with `argv`; `latency`: the report `ptkit latency` prints (it runs this decode). */
export function runPerf(
  argv: readonly string[],
  io: CliIo,
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
  if (latency !== undefined) args.analysis.latencyReport = latency;
  if (internal.tables !== undefined) args.analysis.tables = internal.tables;
  const unreadable = args.file === "-" ? undefined : openError(io, args.file);
  if (unreadable !== undefined) {
    io.stderr(`ptkit perf: ${unreadable}\n`);
    return 1;
  }
  for (const w of lookupDirWarnings(io, args.dirs)) io.stderr(`ptkit perf: ${w}\n`);
  const out = new ByteLines(io);
  try {
    return decodeFile(io, out, args, internal);
  } catch (e) {
    out.flush();
    if (!(e instanceof PerfError) && !(e as NodeJS.ErrnoException).code) throw e;
    io.stderr(`ptkit perf: ${args.file}: ${e instanceof PerfError ? e.message : ioErrorText(e)}\n`);
    return 1;
  } finally {
    out.flush();
  }
}

function decodeFile(io: CliIo, out: ByteLines, args: PerfArgs, internal: PerfInternals): number {
  const source = fileSource(io, args.file);
  const reader = new PerfDataReader(source, { onDiagnostic: (d) => out.line(diagnosticText(d)) });
  const rec = new PerfRecord();
  let info: AuxtraceInfo | undefined;
  const analyse = wantsAnalysis(args.analysis);
  const threads = new ThreadNames();
  const script = args.script.active ? args.script : undefined;
  const comms = new ScriptComms();
  while (reader.next(rec)) {
    if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes) ?? info;
    else if (analyse) threads.record(rec);
    if (script) comms.record(rec, reader);
  }
  for (const note of script?.notes ?? []) io.stderr(`ptkit perf: note: ${note}.\n`);
  const tasks = readTasks(reader);
  for (const p of tasks.problems)
    io.stderr(`ptkit perf: warning: ${args.file} at offset 0x${p.offset.toString(16)}: ${p.message}.\n`);
  const range = args.range && tscRange(args.range, tasks.conversion);
  if (typeof range === "string") {
    io.stderr(`ptkit perf: ${args.script.time && !args.rangeGiven ? "--time" : "--time-range"}: ${range}\n`);
    return 1;
  }
  const snapshot = info?.intelPt?.snapshotMode === 1n;
  const allStreams = auxStreams(source, auxtraceBuffers(reader), snapshot);
  const selectsNothing =
    (args.cpu === undefined ? undefined : cpuProblem(args.file, args.cpu, allStreams)) ??
    // A CPU list selects nothing only when none of its CPUs has a trace.
    (args.script.cpus?.every((c) => cpuProblem(args.file, c, allStreams) !== undefined)
      ? cpuProblem(args.file, args.script.cpus[0]!, allStreams)
      : undefined) ??
    (args.tid === undefined ? undefined : tidProblem(args.file, args.tid, tasks, allStreams));
  if (selectsNothing !== undefined) {
    io.stderr(`ptkit perf: ${selectsNothing}\n`);
    return 1;
  }
  const finder = new BinaryFinder(
    io,
    { ...args, debugRoot: internal.debugRoot ?? DEBUG_ROOT },
    tasks.buildIds,
  );
  const recorded = tasks.changes.flatMap((c) => (c.kind === "mmap" ? [c.path] : []));
  const kernel = new Image("kernel");
  const warn = (w: string) => io.stderr(`ptkit perf: ${w}\n`);
  const global = args.elfs.filter(
    (e) => splitBase(e).base !== undefined || !recorded.some((path) => sameBinary(e, path)),
  );
  const kernelMap = kernelMapOf(tasks);
  const kernelSymbols: SymbolTable[] = [];
  const wantSymbols = args.symbols || analyse || script !== undefined;
  for (const file of args.kernel) {
    const { error, symbols } = loadKernel(io, kernel, file, kernelMap, warn, wantSymbols);
    if (error) {
      warn(error);
      return 1;
    }
    if (symbols) kernelSymbols.push(symbols);
  }
  for (const elf of global) {
    const problem = loadElf(io, kernel, elf, undefined, warn);
    if (problem) {
      warn(problem);
      return 1;
    }
  }
  const demangle = wantSymbols ? demangler(args, warn) : undefined;
  // Each process image's symbols (the kernel's among them), for --sym and the analysis' frame names.
  const symbols = wantSymbols
    ? new AllProcessSymbols({ kernel: kernelSymbols, demangler: demangle })
    : undefined;
  const config = decoderConfig(info, reader, (note) => out.line(`[${note}]`));
  // Time moves on at events only; tick events add every timing update the trace has
  // (at the branch packets CYC/MTC/TSC come with), so a range cuts between branches
  // and the analysis times calls between them.
  if (range || wantsTime(args.analysis) || script?.fields.hw.has("time")) config.enableTickEvents = true;
  const scriptOut = script
    ? perfScriptSink(
        out,
        script,
        reader,
        info,
        tasks.conversion,
        comms,
        (text) => warn(`note: ${text}.`),
        config.nomFreq,
      )
    : undefined;
  const printed = scriptOut
    ? scriptOut
    : args.jsonl && !args.quiet
      ? jsonlSink(out, args.show, tasks.conversion, args.symbols)
      : textSink(out, args.show, args.symbols);
  let analysis: PerfAnalysis | undefined;
  if (analyse && symbols) {
    const opened = PerfAnalysis.open(
      io,
      args.analysis,
      threads,
      tasks,
      symbols,
      perfNsPerTick(tasks.conversion, config.nomFreq),
      (text) => warn(`warning: ${text}`),
    );
    if (typeof opened === "string") {
      warn(opened);
      return 1;
    }
    analysis = opened;
  }
  const sink = analysis ? bothSinks(printed, analysis.sink) : printed;
  // Blocks, unless instructions are listed.
  const decoder: PerfDecoder =
    (script ? script.itrace.insn : args.show === "insn") || args.insnDecoder ? "insn" : "block";
  const jumps = script ? script.itrace.allBranches : args.show === "branches";
  const streamConfig = decoder === "block" ? blockDecoderConfig(config, jumps) : config;
  const needed = new Map<string, number>();
  const streams: StreamContext[] = [];
  for (const s of allStreams) {
    if (internal.streams !== undefined && !internal.streams.includes(s.idx)) continue;
    if (args.cpu !== undefined && !s.cpus.includes(args.cpu)) continue;
    if (args.script.cpus && !s.cpus.some((c) => args.script.cpus!.includes(c))) continue;
    const cpu = s.cpus[0] ?? -1;
    const perThread = cpu < 0;
    if (perThread && args.tid !== undefined && !s.tids.includes(args.tid)) continue;
    if (args.jsonl && !args.quiet)
      out.line(`{"type":"stream","idx":${s.idx},"cpu":${cpu},"bytes":${s.size}}`);
    else if (args.show === "insn" && !script)
      out.line(`[stream idx ${s.idx} cpu ${s.cpus.join(",")} tid ${s.tids.join(",")}: ${s.size} bytes]`);
    const where = startOf(tasks, cpu, s.tids[0] ?? -1);
    where.inRange = !range && (args.tid === undefined || where.tid === args.tid);
    streams.push({
      trace: TraceBytes.read(streamSource(source, s), internal.windowSize),
      config: streamConfig,
      decoder,
      branchTimes: script !== undefined,
      images: new ProcessImages(tasks, finder, kernel, args.kernel.length > 0, needed, symbols),
      switches: perThread ? [] : cpuSwitches(tasks, cpu),
      cr3s: perThread || tasks.hasSwitchRecords ? undefined : new Cr3Threads(),
      gaps: perThread ? tasks.gaps : tasks.gaps.filter((g) => g.cpu === cpu),
      where,
      range,
      tid: args.tid,
      sink,
      nextHi: 0,
      nextLo: 0,
    });
  }
  let finished: ReturnType<PerfAnalysis["finish"]> | undefined;
  try {
    interleave(streams);
  } finally {
    // Even when the file cannot be read on: the outputs are complete up to there.
    finished = analysis?.finish();
    scriptOut?.finish();
  }
  for (const [name, n] of needed)
    warn(`warning: no binary for ${name}: ${n} address${n === 1 ? "" : "es"} needed it.`);
  if (finished?.error) {
    warn(finished.error);
    return 1;
  }
  if (finished?.summary && args.quiet) out.line(finished.summary);
  return 0;
}

/** perf script's lines (-F, --itrace): the event names as perf gives them for this file. */
function perfScriptSink(
  out: ByteLines,
  script: PerfScriptOptions,
  reader: PerfDataReader,
  info: AuxtraceInfo | undefined,
  conv: TscConversion | undefined,
  comms: ScriptComms,
  note: (text: string) => void,
  maxNonTurbo: number,
) {
  const pt = reader.events.find(
    (e) => info?.intelPt?.pmuType !== undefined && BigInt(e.attr.type) === info.intelPt.pmuType,
  );
  const modifier = eventModifier(pt ?? reader.events[0]);
  return scriptSink(out, script.itrace, script.fields, {
    conv,
    comms,
    modifier,
    nameWidth: eventNameWidth(reader.events, script.itrace, modifier),
    ns: script.ns,
    padDso: script.padDso,
    pids: script.pids,
    tids: script.tids,
    comms_: script.comms,
    note,
    tscHz: tscHz(conv),
    maxNonTurbo,
  });
}

/** TSC ticks per second by perf's conversion (perf's intel_pt_ns_to_ticks of 1 s), 0 without one. */
function tscHz(conv: TscConversion | undefined): number {
  if (!conv || conv.timeMult === 0n) return 0;
  const s = 1_000_000_000n;
  const shift = BigInt(conv.timeShift);
  return Number(((s / conv.timeMult) << shift) + ((s % conv.timeMult) << shift) / conv.timeMult);
}

/** The demangler for --sym names, as perf script demangles them (none with --no-demangle, or when it cannot load). */
function demangler(args: PerfArgs, warn: (text: string) => void): Demangler | undefined {
  if (!args.demangle) return undefined;
  const d = loadDemangler();
  if (typeof d !== "string") return d;
  warn(`warning: ${d}; names are shown mangled.`);
  return undefined;
}

/** Who runs on `cpu` from when: its switch records, or without any, the threads seen running there. */
function cpuSwitches(tasks: PerfTasks, cpu: number): Timed<CpuSwitch>[] {
  const on = tasks.switches.filter((w) => w.cpu === cpu);
  if (tasks.hasSwitchRecords) return on;
  return [...on, ...tasks.seen.filter((w) => w.cpu === cpu)].sort((a, b) =>
    a.time < b.time ? -1 : a.time > b.time ? 1 : 0,
  );
}

/** Who runs when a stream starts: per thread, the thread (and its pid from the switches); per CPU, nobody yet. */
function startOf(tasks: PerfTasks, cpu: number, tid: number): PerfWhere {
  const pid = cpu < 0 ? (tasks.switches.find((w) => w.tid === tid)?.pid ?? tid) : -1;
  return { cpu, pid, tid: cpu < 0 ? tid : -1, tscHi: 0, tscLo: 0, inRange: true };
}

/** --time-range's bounds as TSC values: seconds.fraction is perf time, an integer a TSC. */
function tscRange(bounds: [string, string], conv: TscConversion | undefined): TscRange | string {
  const tsc = (s: string, empty: bigint): bigint | string => {
    if (s === "") return empty;
    if (!s.includes(".")) return parseCUint(s) ?? `bad TSC value: ${s}.`;
    const m = /^(\d+)\.(\d{0,9})$/.exec(s);
    if (!m) return `bad perf time: ${s}.`;
    if (!conv) return "the file has no TSC conversion for perf times.";
    const ns = BigInt(m[1]!) * 1_000_000_000n + BigInt(m[2]!.padEnd(9, "0"));
    return perfTimeToTsc(ns, conv) ?? "the file's TSC conversion is unusable.";
  };
  const from = tsc(bounds[0], 0n);
  if (typeof from === "string") return from;
  const to = tsc(bounds[1], 0xffff_ffff_ffff_ffffn);
  if (typeof to === "string") return to;
  if (from > to) return `${bounds[0]} is after ${bounds[1]}: want <from>,<to>.`;
  const half = (v: bigint) => [Number(v >> 32n), Number(v & 0xffffffffn)] as const;
  const [fromHi, fromLo] = half(from);
  const [toHi, toLo] = half(to);
  return { fromHi, fromLo, toHi, toLo };
}

/** The decoder configuration a perf.data file implies. */
function decoderConfig(
  info: AuxtraceInfo | undefined,
  reader: PerfDataReader,
  note: (s: string) => void,
): DecoderConfig {
  const config = defaultDecoderConfig();
  const cpuText = cpuFromCpuid(reader.features.cpuid);
  const cpu = cpuText === undefined ? undefined : parseCpu(cpuText);
  const errata = cpu && cpuErrata(cpu);
  if (errata) config.errata = errata;
  else note("no known Intel cpu in the file: decoding without errata workarounds");
  if (!info?.intelPt) {
    note("no Intel PT AUXTRACE_INFO in the file: decoding without timing parameters");
    return config;
  }
  const p = intelPtDecodeParams(info.intelPt, reader.events);
  config.mtcFreq = p.mtcFreq ?? 0;
  config.nomFreq = p.nomFreq ?? 0;
  config.cpuid15Eax = p.cpuid15Eax ?? 0;
  config.cpuid15Ebx = p.cpuid15Ebx ?? 0;
  return config;
}
