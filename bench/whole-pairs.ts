/**
 * The pairs the whole-process comparison (bench/whole.ts) times, ptkit's command and
 * the peer's:
 * - `ptkit stats` and `ptkit dump --quiet` vs the harness's packet decoder, on the
 *   synthetic trace;
 * - `ptkit flow --block-decoder` and `--insn-decoder` (`--quiet --stat`) vs the
 *   harness's block and instruction decoders, on the large-footprint workload (ELF
 *   files) and on the gzip workload (the same file ranges for both);
 * - start-up: `ptkit stats` on a tiny trace (the synthetic trace's first 4 KiB) vs
 *   `node -e 0`;
 * - `ptkit symbols --no-lines` vs binutils' `addr2line -f`: three addresses of a large
 *   program's code, the node binary running the bench (its 150k symbols), where it is
 *   an ELF file of one and addr2line is installed ({@link symbolsPair});
 * - `ptkit flow --quiet --afl-map` (the fast coverage decode) vs the libxdc harness (`--runs 1`) on the
 *   fuzzing workload (bench/fuzz-workload.ts): on the trace without timing and RET
 *   compression (what libxdc decodes), and with ptkit on the same test cases' trace
 *   with timing and RET compression. Only when $PTKIT_LIBXDC names a libxdc build.
 * - the analyses of `ptkit perf` vs Linux perf's (bench/perf-workload.ts's perf.data):
 *   instructions, branches, calls, the call timeline and folded call stacks
 *   ({@link perfPairs}).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseElf } from "../src/image/index.js";
import { buildLibiptHarness, INSTALL_HINT } from "../tools/libipt/harness.js";
import { buildLibxdcHarness, libxdcArgv } from "../tools/libxdc/harness.js";
import { gzipFlowInputs } from "./flow.js";
import type { FuzzWorkload } from "./fuzz-workload.js";
import { type LargeWorkload, largeFlowArgs, largeMaps } from "./large-workload.js";
import { CACHE_DIR } from "./paths.js";
import type { PerfWorkload } from "./perf-workload.js";
import {
  countFileLines,
  flowInsns,
  harnessField,
  keptGraphs,
  type Pair,
  ptkitArgv,
  statsPackets,
  uncounted,
} from "./whole.js";

export interface WholeInputs {
  /** The synthetic packet trace (file) and its bytes (none: only the analysis pairs). */
  synthetic: { path: string; bytes: Uint8Array } | undefined;
  /** The large-footprint workload, if made. */
  large: LargeWorkload | undefined;
  /** Run the gzip workload's pairs (it needs valgrind the first time). */
  gzip: boolean;
  /** The fuzzing workload, if made (the libxdc pairs). */
  fuzz?: FuzzWorkload | undefined;
  /** The perf.data workload of the analysis pairs, if made. */
  perf?: PerfWorkload | undefined;
  /**
   * The same run recorded on two CPUs (the thread moving between them, as perf record
   * of a command writes one AUX stream per CPU), if made: the call-stack pairs again.
   */
  perfCpus?: PerfWorkload | undefined;
  /** A fifth of the run, on one CPU, if made: the calls and the timeline again (SHORT_RUN). */
  perfShort?: PerfWorkload | undefined;
  /** Only the analysis pairs (ptkit perf vs Linux perf). */
  perfOnly?: boolean;
}

/**
 * The rows that also run with the decision graphs an earlier run kept (src/node/
 * graph-store.ts), each right after its first-run row: those decoded by the graph's
 * walk, where a user runs again over the same binaries (another trace of the same
 * program, another analysis of the same perf.data).
 */
const LATER_RUN_ROWS = [
  "ptkit flow --quiet --stat:insn vs libipt block",
  "ptkit flow --afl-map vs libxdc",
  "ptkit perf --calls vs perf script --itrace=cr -F ip,addr,flags",
  "ptkit perf -q --timeline vs perf script --call-trace",
  "ptkit perf -q --folded vs perf report --itrace=i1000ig -g folded",
];

/** `pairs`, with a later run's row after each of {@link LATER_RUN_ROWS}. */
function withLaterRuns(pairs: Pair[]): Pair[] {
  return pairs.flatMap((p) =>
    LATER_RUN_ROWS.includes(p.what)
      ? [p, { ...p, what: `${p.what} (graphs kept)`, ptkit: keptGraphs(p.ptkit) }]
      : [p],
  );
}

/** The pairs to time; the reasons for the ones left out in `skipped`. */
export function wholePairs(inputs: WholeInputs): { pairs: Pair[]; skipped: string[] } {
  const { pairs, skipped } = firstRunPairs(inputs);
  return { pairs: withLaterRuns(pairs), skipped };
}

function firstRunPairs(inputs: WholeInputs): { pairs: Pair[]; skipped: string[] } {
  const skipped: string[] = [];
  const pairs: Pair[] = [];
  if (inputs.perf) {
    const p = perfPairs(inputs.perf);
    if ("skip" in p) skipped.push(`ptkit perf vs perf: ${p.skip}`);
    else pairs.push(...p.pairs);
  }
  if (inputs.perfCpus) {
    const p = perfPairs(inputs.perfCpus, TWO_CPUS);
    if ("skip" in p) skipped.push(`ptkit perf vs perf (2 CPUs): ${p.skip}`);
    else pairs.push(...p.pairs);
  }
  if (inputs.perfShort) {
    const p = perfPairs(inputs.perfShort, SHORT_RUN);
    if ("skip" in p) skipped.push(`ptkit perf vs perf (short run): ${p.skip}`);
    else pairs.push(...p.pairs);
  }
  if (inputs.perfOnly || !inputs.synthetic) return { pairs, skipped };
  const tiny = join(CACHE_DIR, "tiny.pt");
  writeFileSync(tiny, inputs.synthetic.bytes.subarray(0, 4096));
  pairs.push({
    what: "start-up: ptkit stats on 4 KiB",
    workload: "tiny",
    ptkit: { argv: ptkitArgv("stats", tiny), count: uncounted },
    peer: { argv: [process.execPath, "-e", "0"], count: uncounted },
  });
  const symbols = symbolsPair();
  if ("skip" in symbols) skipped.push(`ptkit symbols vs addr2line: ${symbols.skip}`);
  else pairs.push(symbols);

  if (inputs.fuzz) pairs.push(...libxdcPairs(inputs.fuzz, skipped));

  const b = buildLibiptHarness(CACHE_DIR);
  if ("skip" in b || "error" in b) {
    skipped.push(`libipt pairs: ${"skip" in b ? b.skip : `the harness does not compile ${INSTALL_HINT}`}`);
    return { pairs, skipped };
  }
  const syn = inputs.synthetic.path;
  const packets = { argv: [b.bin, "--bench", "0", syn], count: harnessField("packets") };
  pairs.push({
    what: "ptkit stats vs libipt packets",
    workload: "synthetic",
    ptkit: { argv: ptkitArgv("stats", syn), count: statsPackets },
    peer: packets,
    counted: "packets",
  });
  pairs.push({
    what: "ptkit dump --quiet vs libipt packets",
    workload: "synthetic",
    ptkit: { argv: ptkitArgv("dump", "--quiet", syn), count: uncounted },
    peer: packets,
  });

  const flows: { workload: string; image: string[]; maps: string[]; trace: string }[] = [];
  if (inputs.large) {
    const w = inputs.large;
    flows.push({ workload: "large", image: largeFlowArgs(w), maps: largeMaps(w), trace: w.trace });
  }
  if (inputs.gzip) {
    const g = gzipFlowInputs();
    if ("skip" in g) skipped.push(`gzip workload: ${g.skip}`);
    else
      flows.push({
        workload: "gzip",
        image: g.maps.flatMap((m) => ["--raw", m]),
        maps: g.maps,
        trace: g.tracePath,
      });
  }
  for (const f of flows) {
    // The same answer (errors, the instruction count) as a user asks ptkit for it: no
    // decoder named, so the decision graph's walk where it covers the trace.
    pairs.push({
      what: "ptkit flow --quiet --stat:insn vs libipt block",
      workload: f.workload,
      ptkit: {
        argv: ptkitArgv("flow", "--quiet", "--stat:insn", ...f.image, "--pt", f.trace),
        count: flowInsns,
      },
      peer: {
        argv: [b.bin, "--bench-flow", "0", "block", ...f.maps.flatMap((m) => ["--map", m]), f.trace],
        count: harnessField("insns"),
      },
      counted: "instructions",
    });
    if (f.workload === "large")
      // The same on one thread: the count splits into --jobs pieces from 32 MiB of trace.
      pairs.push({
        what: "ptkit flow --quiet --stat:insn --jobs 1 vs libipt block",
        workload: f.workload,
        ptkit: {
          argv: ptkitArgv("flow", "--quiet", "--stat:insn", "--jobs", "1", ...f.image, "--pt", f.trace),
          count: flowInsns,
        },
        peer: {
          argv: [b.bin, "--bench-flow", "0", "block", ...f.maps.flatMap((m) => ["--map", m]), f.trace],
          count: harnessField("insns"),
        },
        counted: "instructions",
      });
    for (const kind of ["block", "insn"] as const) {
      pairs.push({
        what: `ptkit flow --${kind}-decoder vs libipt ${kind}`,
        workload: f.workload,
        ptkit: {
          argv: ptkitArgv("flow", `--${kind}-decoder`, "--quiet", "--stat", ...f.image, "--pt", f.trace),
          count: flowInsns,
        },
        peer: {
          argv: [b.bin, "--bench-flow", "0", kind, ...f.maps.flatMap((m) => ["--map", m]), f.trace],
          count: harnessField("insns"),
        },
        counted: "instructions",
      });
    }
  }
  return { pairs, skipped };
}

/** ptkit's AFL map vs libxdc on the fuzzing workload; none (and a reason) without a libxdc harness. */
export function libxdcPairs(w: FuzzWorkload, skipped: string[]): Pair[] {
  const x = buildLibxdcHarness(CACHE_DIR);
  if ("skip" in x || "error" in x) {
    skipped.push(`libxdc pairs: ${"skip" in x ? x.skip : x.error.split("\n").slice(0, 3).join(" | ")}`);
    return [];
  }
  const peer = { argv: libxdcArgv(x.bin, largeMaps(w), w.filter, w.trace, 1), count: uncounted };
  const ptkit = (trace: string) => ({
    // The AFL map alone, nothing printed: the fast coverage decode (analysis/coverage-decode.ts).
    argv: ptkitArgv(
      "flow",
      "--quiet",
      "--stat:insn",
      ...largeFlowArgs(w),
      "--pt",
      trace,
      "--afl-map",
      join(CACHE_DIR, "fuzz-afl.bin"),
    ),
    count: flowInsns,
  });
  return [
    {
      what: "ptkit flow --afl-map vs libxdc",
      workload: "fuzz",
      ptkit: ptkit(w.trace),
      peer,
      bytes: { ptkit: w.traceBytes, peer: w.traceBytes },
    },
    {
      what: "ptkit flow --afl-map (timing, RETC) vs libxdc (neither)",
      workload: "fuzz",
      ptkit: ptkit(w.timingTrace),
      peer,
      bytes: { ptkit: w.timingTraceBytes, peer: w.traceBytes },
    },
  ];
}

/** perf's package, for the skip message. */
export const PERF_HINT = "(Debian: apt-get install linux-perf)";

/**
 * `ptkit perf`'s analyses against Linux perf's on the perf.data workload, each
 * writing its output to a file under bench/.cache/perf-out: instructions (perf
 * script --itrace=i0ns -F ip: the same instruction count), branches (--itrace=be -F
 * ip,addr,flags) and calls (--itrace=cr: byte-identical output; also with symbols and
 * files, -F ip,sym,symoff,dso,addr,flags), perf script's default lines (-i alone:
 * byte-identical), the call timeline
 * (perf script --call-trace) and folded call stacks (perf report's every-1000th-
 * instruction samples with call chains, -g folded; ptkit folds every instruction):
 * both must print. Both run with HOME an empty directory, so that no build-id cache
 * of the host's (~/.debug) comes into it. With a `variant` (another perf.data: the
 * run recorded on several CPUs, a shorter run), the pairs its `rows` take only.
 */
export function perfPairs(w: PerfWorkload, variant?: PerfVariant): { pairs: Pair[] } | { skip: string } {
  const p = allPerfPairs(w, variant);
  return "skip" in p || variant === undefined ? p : { pairs: p.pairs.filter((q) => variant.rows(q.what)) };
}

/** A perf.data other than the main workload's, and which pairs run on it. */
export interface PerfVariant {
  /** The workload column's name. */
  name: string;
  /** Put before the output files' names. */
  prefix: string;
  rows(what: string): boolean;
}

/** The run recorded on two CPUs: the calls, perf script's default lines, the timeline and the folded stacks. */
export const TWO_CPUS: PerfVariant = {
  name: "perf.data, 2 CPUs",
  prefix: "cpus-",
  rows: (what) => / --calls | -i | --timeline | --folded /.test(what),
};

/**
 * A fifth of the run (a perf.data of about 0.5 MB): the calls and the timeline, where
 * ptkit's fixed costs (Node's start, the code's decision graph, a thread's start
 * with --jobs) weigh more than on the long run.
 */
export const SHORT_RUN: PerfVariant = {
  name: "perf.data, 1/5 the run",
  prefix: "short-",
  rows: (what) => / --calls vs | -q --timeline /.test(what),
};

function allPerfPairs(w: PerfWorkload, variant?: PerfVariant): { pairs: Pair[] } | { skip: string } {
  const version = spawnSync("perf", ["version"], { encoding: "utf8" });
  if (version.error || version.status !== 0) return { skip: `perf is not installed ${PERF_HINT}` };
  const home = join(CACHE_DIR, "perf-home");
  const out = join(CACHE_DIR, "perf-out");
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home, { recursive: true });
  mkdirSync(out, { recursive: true });
  const env = { HOME: home };
  const data = w.data;
  const file = (name: string) => join(out, `${variant?.prefix ?? ""}${name}`);
  const lines = (path: string, keep?: (line: string) => boolean) => () => countFileLines(path, keep);
  const perfScript = (name: string, ...args: string[]) => ({
    argv: ["perf", "script", "-i", data, ...args],
    env,
    stdoutFile: file(name),
  });
  const ptkitPerf = (name: string, ...args: string[]) => ({
    argv: ptkitArgv("perf", ...args, data),
    env,
    stdoutFile: file(name),
  });
  const workload = variant?.name ?? "perf.data";
  const pairs: Pair[] = [];
  const insn = (l: string) => /^[0-9a-f]{16}$/.test(l);
  pairs.push({
    what: "ptkit perf vs perf script --itrace=i0ns -F ip",
    workload,
    ptkit: { ...ptkitPerf("ptkit-insn.txt"), count: lines(file("ptkit-insn.txt"), insn) },
    peer: {
      ...perfScript("perf-insn.txt", "--itrace=i0ns", "-F", "ip"),
      count: lines(file("perf-insn.txt")),
    },
    counted: "instruction lines",
  });
  const flags = [
    ["branches", "be"],
    ["calls", "cr"],
  ] as const;
  for (const [flag, itrace] of flags) {
    pairs.push({
      what: `ptkit perf --${flag} vs perf script --itrace=${itrace} -F ip,addr,flags`,
      workload,
      ptkit: { ...ptkitPerf(`ptkit-${flag}.txt`, `--${flag}`), count: lines(file(`ptkit-${flag}.txt`)) },
      peer: {
        ...perfScript(`perf-${flag}.txt`, `--itrace=${itrace}`, "-F", "ip,addr,flags"),
        count: lines(file(`perf-${flag}.txt`)),
      },
      counted: `${flag} lines`,
      identical: true,
    });
  }
  // The same, with perf script's own options given to ptkit perf (a perf user's command line).
  const scriptOptions = [
    ["insn", "i0ns", "ip"],
    ["branches", "be", "ip,addr,flags"],
    ["calls", "cr", "ip,addr,flags"],
    // With the symbols and files (no time: the walk's lines too).
    ["calls-sym", "cr", "ip,sym,symoff,dso,addr,flags"],
  ] as const;
  for (const [name, itrace, fields] of scriptOptions) {
    const ptkitFile = `ptkit-script-${name}.txt`;
    pairs.push({
      what: `ptkit perf --itrace=${itrace} -F ${fields} vs perf script (the same options)`,
      workload,
      ptkit: { ...ptkitPerf(ptkitFile, `--itrace=${itrace}`, "-F", fields), count: lines(file(ptkitFile)) },
      peer: {
        ...perfScript(`perf-${name}.txt`, `--itrace=${itrace}`, "-F", fields),
        count: lines(file(`perf-${name}.txt`)),
      },
      counted: `${name} lines`,
      identical: true,
    });
  }
  // perf script's default (calls and trace ends, every field: comm, tid, time, symbols,
  // files), what `perf script -i` users type; ptkit's with the same option.
  pairs.push({
    what: "ptkit perf -i vs perf script -i (perf script's default lines)",
    workload,
    ptkit: {
      argv: ptkitArgv("perf", "-i", data),
      env,
      stdoutFile: file("ptkit-default.txt"),
      count: lines(file("ptkit-default.txt")),
    },
    peer: { ...perfScript("perf-default.txt"), count: lines(file("perf-default.txt")) },
    counted: "lines",
    identical: true,
  });
  const timeline = file("ptkit-timeline.json");
  pairs.push({
    what: "ptkit perf -q --timeline vs perf script --call-trace",
    workload,
    ptkit: { ...ptkitPerf("ptkit-timeline.txt", "-q", "--timeline", timeline), count: lines(timeline) },
    peer: { ...perfScript("perf-call-trace.txt", "--call-trace"), count: lines(file("perf-call-trace.txt")) },
    nonEmpty: true,
  });
  const folded = file("ptkit-folded.txt");
  pairs.push({
    what: "ptkit perf -q --folded vs perf report --itrace=i1000ig -g folded",
    workload,
    ptkit: { ...ptkitPerf("ptkit-folded.out", "-q", "--folded", folded), count: lines(folded) },
    peer: {
      argv: [
        "perf",
        "report",
        "-i",
        data,
        "--itrace=i1000ig",
        "--stdio",
        "--no-children",
        "-g",
        "folded,0,caller,count",
      ],
      env,
      stdoutFile: file("perf-report-folded.txt"),
      count: lines(file("perf-report-folded.txt"), (l) => l.includes(";")),
    },
    nonEmpty: true,
  });
  return { pairs };
}

/** Files below this size are no large program (a node built as a shared library, a wrapper). */
const LARGE_PROGRAM = 32 * 1024 * 1024;

/**
 * `ptkit symbols --no-lines` vs `addr2line -f` on the node binary running the bench
 * (where it is an ELF file of 32 MiB or more, with its symbols): three addresses in
 * its `.text`, both counting one answer per address (addr2line prints two lines each).
 */
function symbolsPair(): Pair | { skip: string } {
  const path = realpathSync(process.execPath);
  if (statSync(path).size < LARGE_PROGRAM) return { skip: `${path} is under 32 MiB` };
  let text: { addrHi: number; addrLo: number; size: number } | undefined;
  try {
    text = parseElf(new Uint8Array(readFileSync(path))).sections.find((s) => s.name === ".text");
  } catch (e) {
    return { skip: `${path}: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (text === undefined || text.addrHi !== 0) return { skip: `${path} has no .text below 4 GiB` };
  const version = spawnSync("addr2line", ["--version"], { encoding: "utf8" });
  if (version.error || version.status !== 0) return { skip: "addr2line is not installed (binutils)" };
  const addrs = [1, 2, 3].map((k) => `0x${(text!.addrLo + Math.floor((k * text!.size) / 4)).toString(16)}`);
  const lines = (per: number) => (out: string) => out.split("\n").filter((l) => l !== "").length / per;
  return {
    what: "ptkit symbols --no-lines vs addr2line -f",
    workload: "node's binary",
    ptkit: { argv: ptkitArgv("symbols", "--no-lines", path, ...addrs), count: lines(1) },
    peer: { argv: ["addr2line", "-f", "-e", path, ...addrs], count: lines(2) },
    counted: "addresses",
  };
}
