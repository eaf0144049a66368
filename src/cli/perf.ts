/**
 * `ptkit perf`: decode the Intel PT of a perf.data file like `perf script --itrace`,
 * from the file alone: the decoder set up from the file (errata from the cpuid
 * feature; MTC, nominal frequency and TSC:CTC ratio from AUXTRACE_INFO), the
 * binaries from its MMAP/MMAP2 records (perf-images.ts), the running thread of each
 * CPU from its switch records (perf-stream.ts), output as perf-output.ts writes it.
 */
import { parseArgs } from "node:util";
import { cpuErrata, parseCpu, parseCUint } from "../cpu/index.js";
import { type DecoderConfig, defaultDecoderConfig } from "../event/index.js";
import { Image } from "../image/index.js";
import {
  type AuxtraceInfo,
  auxStreamBytes,
  auxStreams,
  auxtraceBuffers,
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
  type TscConversion,
} from "../perf/index.js";
import { loadElf, splitBase } from "./flow-image.js";
import { type CliIo, LineWriter } from "./io.js";
import { fileSource } from "./node-source.js";
import { BinaryFinder, ProcessImages, sameBinary } from "./perf-images.js";
import { jsonlSink, type PerfShow, textSink } from "./perf-output.js";
import { interleave, type PerfWhere, type StreamContext, type TscRange } from "./perf-stream.js";

const HELP = `usage: ptkit perf [<options>] <perf.data>

Decode the Intel PT of a perf.data file (perf record -e intel_pt//) like
perf script --itrace, from the file alone: each process's code comes from the
binaries its MMAP/MMAP2 records name (COMM exec, FORK and EXIT followed), the
running thread of each CPU from the switch records, the decoder set-up (errata,
MTC, nominal frequency, TSC:CTC ratio) from the file. For each stream (one per
CPU, or per thread): a [stream ...] line, then one line per executed
instruction (its address), [cpu C pid P tid T] when the thread changes, events
in brackets as ptxed prints them, and errors as [offset-in-stream: error at tsc
T]; decoding goes on at the next PSB. A binary that cannot be found is reported
once, with how many addresses needed it.

options:
  --elf <file>[:<base>]  use this file for the mmaps of the same path or file
                         name; one no mmap names (or with a base) is loaded for
                         every process, as ptxed --elf does. Repeatable.
  --symfs <dir>          look binaries up under DIR (also: --sysroot).
  --buildid-dir <dir>    the build-id cache (default ~/.debug): DIR/.build-id/
                         xx/yyyy[/elf] and DIR/<path>/<build-id>/elf, with the
                         build ids the file recorded.
  --kcore <file>         kernel code: a copy of /proc/kcore (also: --vmlinux).
  --cpu <n>              only the stream of CPU n.
  --tid <n>              only what thread n runs.
  --time-range <a>,<b>   only from a to b (either may be empty): perf time in
                         seconds as perf script prints it (123.456789), or a
                         TSC value (an integer).
  --branches             taken branches instead, as perf script --itrace=b
                         -F flags,ip,addr prints them.
  --calls                calls and returns only (like --branches).
  --jsonl                one JSON object per line (instruction, branch, event,
                         error, switch), each with cpu, pid, tid, time and tsc.
  -h, --help             this text.

examples:
  ptkit perf perf.data
  ptkit perf --symfs /srv/target --branches perf.data
  ptkit perf --elf ./prog --cpu 2 --time-range 4711.000001,4711.5 perf.data
`;

interface PerfArgs {
  file: string;
  elfs: string[];
  symfs: string | undefined;
  buildIdDir: string | undefined;
  kernel: string[];
  cpu: number | undefined;
  tid: number | undefined;
  range: [string, string] | undefined;
  show: PerfShow;
  jsonl: boolean;
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
  help: { type: "boolean", short: "h" },
} as const;

function parse(argv: readonly string[], home: string | undefined): PerfArgs | "help" | string {
  let p: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    p = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true });
  } catch (e) {
    return (e as Error).message;
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
  if (p.positionals.length !== 1) return "expected exactly one perf.data file.";
  return {
    file: p.positionals[0]!,
    elfs: v.elf ?? [],
    symfs: v.symfs ?? v.sysroot,
    buildIdDir: v["buildid-dir"] ?? (home === undefined ? undefined : `${home}/.debug`),
    kernel: [...(v.kcore ?? []), ...(v.vmlinux ?? [])],
    cpu,
    tid,
    range: range as [string, string] | undefined,
    show: v.branches ? "branches" : v.calls ? "calls" : "insn",
    jsonl: v.jsonl === true,
  };
}

export function runPerf(argv: readonly string[], io: CliIo, home = process.env.HOME): number {
  const args = parse(argv, home);
  if (args === "help") {
    io.stdout(HELP);
    return 0;
  }
  if (typeof args === "string") {
    io.stderr(`ptkit perf: ${args}\nUse --help or -h for help.\n`);
    return 1;
  }
  const out = new LineWriter(io.stdout);
  try {
    return decodeFile(io, out, args);
  } catch (e) {
    out.flush();
    if (!(e instanceof PerfError) && !(e as NodeJS.ErrnoException).code) throw e;
    io.stderr(`ptkit perf: ${args.file}: ${(e as Error).message}\n`);
    return 1;
  } finally {
    out.flush();
  }
}

function decodeFile(io: CliIo, out: LineWriter, args: PerfArgs): number {
  const source = fileSource(io, args.file);
  const reader = new PerfDataReader(source, { onDiagnostic: (d) => out.line(diagnosticText(d)) });
  const rec = new PerfRecord();
  let info: AuxtraceInfo | undefined;
  while (reader.next(rec)) {
    if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes) ?? info;
  }
  const tasks = readTasks(reader);
  const range = args.range && tscRange(args.range, tasks.conversion);
  if (typeof range === "string") {
    io.stderr(`ptkit perf: --time-range: ${range}\n`);
    return 1;
  }
  const finder = new BinaryFinder(io, args, tasks.buildIds);
  const recorded = tasks.changes.flatMap((c) => (c.kind === "mmap" ? [c.path] : []));
  const kernel = new Image("kernel");
  const warn = (w: string) => io.stderr(`ptkit perf: ${w}\n`);
  const global = args.elfs.filter(
    (e) => splitBase(e).base !== undefined || !recorded.some((path) => sameBinary(e, path)),
  );
  for (const elf of [...args.kernel, ...global]) {
    const problem = loadElf(io, kernel, elf, undefined, warn);
    if (problem) {
      warn(problem);
      return 1;
    }
  }
  const config = decoderConfig(info, reader, (note) => out.line(`[${note}]`));
  const snapshot = info?.intelPt?.snapshotMode === 1n;
  const sink = args.jsonl ? jsonlSink(out, args.show, tasks.conversion) : textSink(out, args.show);
  const needed = new Map<string, number>();
  const streams: StreamContext[] = [];
  for (const s of auxStreams(source, auxtraceBuffers(reader), snapshot)) {
    if (args.cpu !== undefined && !s.cpus.includes(args.cpu)) continue;
    const cpu = s.cpus[0] ?? -1;
    const perThread = cpu < 0;
    if (perThread && args.tid !== undefined && !s.tids.includes(args.tid)) continue;
    if (args.jsonl) out.line(`{"type":"stream","idx":${s.idx},"cpu":${cpu},"bytes":${s.size}}`);
    else if (args.show === "insn")
      out.line(`[stream idx ${s.idx} cpu ${s.cpus.join(",")} tid ${s.tids.join(",")}: ${s.size} bytes]`);
    const where = startOf(tasks, cpu, s.tids[0] ?? -1);
    where.inRange = !range && (args.tid === undefined || where.tid === args.tid);
    streams.push({
      trace: auxStreamBytes(source, s),
      config,
      images: new ProcessImages(tasks, finder, kernel, args.kernel.length > 0, needed),
      switches: perThread ? [] : tasks.switches.filter((w) => w.cpu === cpu),
      gaps: perThread ? tasks.gaps : tasks.gaps.filter((g) => g.cpu === cpu),
      where,
      range,
      tid: args.tid,
      sink,
      nextHi: 0,
      nextLo: 0,
    });
  }
  interleave(streams);
  for (const [name, n] of needed)
    warn(`warning: no binary for ${name}: ${n} address${n === 1 ? "" : "es"} needed it.`);
  return 0;
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
