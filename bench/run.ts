/**
 * The benchmarks: `npm run bench [-- options]`.
 *
 * 1. Packet decoding: a deterministic synthetic trace (generated once, then cached in
 *    bench/.cache/) with ptkit's raw `decodePacket` loop and with the `PacketDecoder`
 *    object API, and, where cc and libipt-dev are installed, with libipt's packet
 *    decoder through tools/libipt/harness.c. Both must agree on the packet counts.
 * 2. Trace generation (generate.ts): the trace-unit model on gzip run under valgrind
 *    lackey, in several configurations.
 * 3. Flow decoding (flow.ts): that trace through ptkit's block and instruction
 *    decoders and libipt's, which must agree on the instruction count.
 * 4. Analysis (analysis.ts): call stacks, the timeline and folded stacks on top of
 *    decoding the same execution's trace with timing packets.
 * 5. Whole processes (whole.ts, whole-pairs.ts): ptkit's commands as processes against
 *    the libipt harness's, on the synthetic trace, the gzip workload and the
 *    large-footprint workload (large-workload.ts: 3 MiB of code in four ELF images,
 *    a 100 MiB trace with timing packets), and ptkit's start-up; `ptkit perf`'s
 *    analyses against Linux perf's on a perf.data of that program (perf-workload.ts).
 *    `--whole` runs only these, `--whole-perf` only the perf ones.
 * 6. Coverage vs libxdc (libxdc.ts): `ptkit flow --afl-map` against libxdc on the
 *    fuzzing workload (fuzz-workload.ts), whole processes and libxdc warm in one
 *    process; part of the whole-process comparisons, `--fuzz` runs only this. Needs
 *    $PTKIT_LIBXDC (tools/libxdc/harness.ts says how to build libxdc).
 * Prints tables, or JSON with --json.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { parseArgs } from "node:util";
import { PACKET_NAMES, PACKET_TYPE_COUNT, PacketType } from "../src/packet/index.js";
import { type AnalysisBench, measureAnalysis } from "./analysis.js";
import { type FlowBench, measureFlow } from "./flow.js";
import { fmt, fmtInt, pct, table } from "./format.js";
import { DEFAULT_FUZZ_TRACE } from "./fuzz-workload.js";
import { type GenerateBench, measureGenerate } from "./generate.js";
import { DEFAULT_LARGE_TRACE, type LargeWorkload, loadLargeWorkload } from "./large-workload.js";
import { type LibiptOutcome, runLibipt } from "./libipt.js";
import { type FuzzResult, fuzzLines, fuzzProblems, fuzzReport, fuzzWorkload, runFuzz } from "./libxdc.js";
import { analyseMix, IPC_NAMES, mixRows, type TraceMix } from "./mix.js";
import { REPO_ROOT } from "./paths.js";
import { DEFAULT_PERF_INSNS, loadPerfWorkload, type PerfWorkload } from "./perf-workload.js";
import { measurePtkitDecoder } from "./ptkit-decoder.js";
import { type LoopResult, measurePtkitLoop } from "./ptkit-loop.js";
import { DEFAULT_SEED, DEFAULT_SIZE, loadOrGenerate } from "./synthetic-trace.js";
import { mbPerSec, mPerSec } from "./timing.js";
import { measureWhole, type WholeBench, wholeReport } from "./whole.js";
import { wholePairs } from "./whole-pairs.js";

const USAGE = `usage: npm run bench -- [options]

  --size <MiB>     synthetic trace size in MiB (default ${DEFAULT_SIZE / 1048576})
  --seed <n>       PRNG seed (default ${DEFAULT_SEED})
  --runs <n>       timed runs per decoder, best taken (default 5; one warm-up run before)
  --trace <file>   benchmark this trace file instead of the synthetic one
  --no-libipt      skip the libipt comparison
  --whole          only the whole-process comparisons (ptkit's commands vs libipt's, start-up)
  --no-whole       skip them
  --whole-runs <n> alternating rounds per whole-process pair, medians taken (default 3)
  --large-size <MiB>  trace size of the large-footprint workload (default ${DEFAULT_LARGE_TRACE / 1048576})
  --fuzz           only the libxdc comparison on the fuzzing workload (needs $PTKIT_LIBXDC)
  --fuzz-size <MiB>   trace size of the fuzzing workload (default ${DEFAULT_FUZZ_TRACE / 1048576})
  --fuzz-runs <n>  decodes of the fuzzing trace in one libxdc process (default 20)
  --whole-match <text>  only the whole-process pairs whose description holds <text>
  --whole-perf     only the analysis pairs: ptkit perf vs Linux perf on a perf.data
  --perf-insns <M> millions of instructions in that perf.data (default ${DEFAULT_PERF_INSNS / 1e6})
  --json           print machine-readable results only
  -h, --help       this text`;

interface Options {
  size: number;
  seed: number;
  runs: number;
  trace: string | undefined;
  libipt: boolean;
  json: boolean;
  /** Whole-process comparisons: only them, too, or none. */
  whole: "only" | "too" | "no";
  wholeRuns: number;
  largeSize: number;
  fuzz: boolean;
  fuzzSize: number;
  fuzzRuns: number;
  /** Only the analysis pairs (ptkit perf vs Linux perf). */
  wholePerf: boolean;
  /** Only the whole-process pairs whose description holds this. */
  wholeMatch: string | undefined;
  perfInsns: number;
}

function fail(msg: string): never {
  process.stderr.write(`bench: ${msg}\n${USAGE}\n`);
  process.exit(2);
}

function parseOptions(argv: string[]): Options {
  let values: ReturnType<typeof parse>["values"];
  function parse(a: string[]) {
    return parseArgs({
      args: a,
      options: {
        size: { type: "string" },
        seed: { type: "string" },
        runs: { type: "string" },
        trace: { type: "string" },
        "no-libipt": { type: "boolean" },
        whole: { type: "boolean" },
        "no-whole": { type: "boolean" },
        "whole-runs": { type: "string" },
        "whole-match": { type: "string" },
        "large-size": { type: "string" },
        fuzz: { type: "boolean" },
        "fuzz-size": { type: "string" },
        "fuzz-runs": { type: "string" },
        "whole-perf": { type: "boolean" },
        "perf-insns": { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    });
  }
  try {
    values = parse(argv).values;
  } catch (e) {
    fail((e as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const num = (name: string, v: string | undefined, dflt: number, min: number, integer: boolean): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) fail(`bad --${name}: ${v}`);
    return n;
  };
  const mib = num("size", values.size, DEFAULT_SIZE / 1048576, 1 / 1024, false);
  const largeMib = num("large-size", values["large-size"], DEFAULT_LARGE_TRACE / 1048576, 1 / 1024, false);
  const fuzzMib = num("fuzz-size", values["fuzz-size"], DEFAULT_FUZZ_TRACE / 1048576, 1 / 1024, false);
  if (values.whole && values["no-whole"]) fail("--whole and --no-whole exclude each other");
  return {
    size: Math.round(mib * 1048576),
    seed: num("seed", values.seed, DEFAULT_SEED, 0, true) >>> 0,
    runs: num("runs", values.runs, 5, 1, true),
    trace: values.trace,
    libipt: !values["no-libipt"],
    json: values.json === true,
    whole: values.whole ? "only" : values["no-whole"] ? "no" : "too",
    wholeRuns: num("whole-runs", values["whole-runs"], 3, 1, true),
    wholeMatch: values["whole-match"],
    largeSize: Math.round(largeMib * 1048576),
    fuzz: values.fuzz === true,
    fuzzSize: Math.round(fuzzMib * 1048576),
    fuzzRuns: num("fuzz-runs", values["fuzz-runs"], 20, 1, true),
    wholePerf: values["whole-perf"] === true,
    perfInsns: Math.round(
      num("perf-insns", values["perf-insns"], DEFAULT_PERF_INSNS / 1e6, 0.001, false) * 1e6,
    ),
  };
}

interface Measurement {
  name: string;
  bestNs: number;
  runsNs: number[];
  packets: number;
  errors: number;
  mbPerSec: number;
  mpktPerSec: number;
}

function measurement(name: string, bytes: number, r: LoopResult | LibiptOutcome): Measurement | undefined {
  if ("ok" in r) {
    if (!r.ok) return undefined;
    const x = r.result;
    return {
      name,
      bestNs: x.bestNs,
      runsNs: x.runsNs,
      packets: x.packets,
      errors: x.errors,
      mbPerSec: mbPerSec(bytes, x.bestNs),
      mpktPerSec: mPerSec(x.packets, x.bestNs),
    };
  }
  return {
    name,
    bestNs: r.bestNs,
    runsNs: r.runsNs,
    packets: r.packets,
    errors: r.errors,
    mbPerSec: mbPerSec(bytes, r.bestNs),
    mpktPerSec: mPerSec(r.packets, r.bestNs),
  };
}

/** ptkit's per-type counts by name (as the C harness names them). */
function countsByName(counts: Int32Array): Record<string, number> {
  const out: Record<string, number> = {};
  for (let t = 1; t < PACKET_TYPE_COUNT; t++) if (counts[t]! > 0) out[PACKET_NAMES[t]!] = counts[t]!;
  return out;
}

/** Differences between two per-type count tables, as "name: a vs b". */
function countDiffs(a: Record<string, number>, b: Record<string, number>): string[] {
  const names = new Set([...Object.keys(a), ...Object.keys(b)]);
  const diffs: string[] = [];
  for (const n of names) if ((a[n] ?? 0) !== (b[n] ?? 0)) diffs.push(`${n}: ${a[n] ?? 0} vs ${b[n] ?? 0}`);
  return diffs;
}

/** Packet types libipt 2.0 decodes (names as ptkit prints them); newer ones are bad opcodes there. */
const LIBIPT_2_0_TYPES = new Set([
  "pad",
  "psb",
  "psbend",
  "fup",
  "tip",
  "tip.pge",
  "tip.pgd",
  "tnt.8",
  "tnt.64",
  "mode.exec",
  "mode.tsx",
  "pip",
  "vmcs",
  "cbr",
  "tsc",
  "tma",
  "mtc",
  "cyc",
  "stop",
  "ovf",
  "mnt",
  "exstop",
  "mwait",
  "pwre",
  "pwrx",
  "ptw",
]);

/** Shares of the bytes by packet family. */
function mixSummary(mix: TraceMix): Record<string, number> {
  const share = (...types: number[]) => types.reduce((s, t) => s + mix.typeBytes[t]!, 0) / mix.bytes;
  const groups = {
    tnt: share(PacketType.Tnt8, PacketType.Tnt64),
    tipFamily: share(PacketType.Tip, PacketType.Fup, PacketType.TipPge, PacketType.TipPgd),
    psb: share(PacketType.Psb, PacketType.PsbEnd),
    timing: share(PacketType.Mtc, PacketType.Cyc, PacketType.Tsc, PacketType.Tma, PacketType.Cbr),
    pad: share(PacketType.Pad),
    other: 0,
  };
  groups.other = Math.max(0, 1 - Object.values(groups).reduce((a, b) => a + b, 0));
  return groups;
}

function main(): void {
  const opt = parseOptions(process.argv.slice(2));
  const log = (s = "") => {
    if (!opt.json) process.stdout.write(`${s}\n`);
  };

  if (opt.fuzz) {
    if (!opt.json) process.stdout.write("libxdc comparison: preparing the fuzzing workload...\n");
    const fuzz = runFuzz(opt.wholeRuns, opt.fuzzRuns, opt.fuzzSize);
    if (opt.json) process.stdout.write(`${JSON.stringify({ fuzz }, null, 2)}\n`);
    else for (const line of fuzzReport(fuzz)) log(line);
    for (const p of fuzz.bench?.problems ?? []) process.stderr.write(`bench: FAILED: ${p}\n`);
    if (fuzz.bench?.problems.length) process.exitCode = 1;
    return;
  }

  if (opt.wholePerf) {
    const whole = runWholePerf(opt);
    if (opt.json) process.stdout.write(`${JSON.stringify({ whole }, null, 2)}\n`);
    else logWhole(log, whole);
    for (const p of whole.bench.problems) process.stderr.write(`bench: FAILED: ${p}\n`);
    if (whole.bench.problems.length) process.exitCode = 1;
    return;
  }

  // --- the trace -----------------------------------------------------------------
  let path: string;
  let buf: Uint8Array;
  let generatedMs: number | undefined;
  if (opt.trace) {
    path = opt.trace;
    buf = new Uint8Array(readFileSync(path));
  } else {
    if (!opt.json) process.stdout.write(`ptkit packet-decode benchmark: preparing the synthetic trace...\n`);
    const t = loadOrGenerate(opt.seed, opt.size);
    path = t.path;
    buf = t.bytes;
    generatedMs = t.generatedMs;
  }
  const shownPath = relative(process.cwd(), path) || path;
  if (opt.whole === "only") {
    const whole = runWhole(opt, path, buf);
    if (opt.json) process.stdout.write(`${JSON.stringify({ whole }, null, 2)}\n`);
    else logWhole(log, whole);
    for (const p of whole.bench.problems) process.stderr.write(`bench: FAILED: ${p}\n`);
    if (whole.bench.problems.length) process.exitCode = 1;
    return;
  }
  const mix = analyseMix(buf);

  // --- measurements (ptkit first, each warm-up + best-of-N; libipt in a child) -------
  const loop = measurePtkitLoop(buf, opt.runs);
  const decoder = measurePtkitDecoder(buf, opt.runs);
  const lib: LibiptOutcome = opt.libipt
    ? runLibipt(path, opt.runs)
    : { ok: false, skipped: "disabled with --no-libipt" };

  const bytes = buf.length;
  const mLoop = measurement("ptkit decodePacket loop", bytes, loop)!;
  const mDecoder = measurement("ptkit PacketDecoder.next", bytes, decoder)!;
  const mLib = measurement("libipt pt_pkt_next", bytes, lib);

  // --- consistency checks ------------------------------------------------------------
  const problems: string[] = [];
  if (mLoop.packets !== mix.packets) problems.push(`loop counted ${mLoop.packets}, analysis ${mix.packets}`);
  if (mDecoder.packets !== mLoop.packets) {
    problems.push(`PacketDecoder counted ${mDecoder.packets} packets, the loop ${mLoop.packets}`);
  }
  if (!lib.ok && lib.failed) problems.push(`libipt harness: ${lib.skipped}`);
  const ptkitCounts = countsByName(loop.counts);
  let countsMatch: boolean | undefined;
  let typeDiffs: string[] = [];
  if (lib.ok) {
    typeDiffs = countDiffs(ptkitCounts, lib.result.counts);
    countsMatch = lib.result.packets === mLoop.packets && typeDiffs.length === 0;
    if (!countsMatch) {
      const unknown = Object.keys(ptkitCounts).filter((n) => !LIBIPT_2_0_TYPES.has(n));
      problems.push(
        `packet counts differ: ptkit ${mLoop.packets}, libipt ${lib.result.packets}` +
          (typeDiffs.length ? ` (ptkit vs libipt: ${typeDiffs.join(", ")})` : "") +
          (unknown.length ? `; libipt 2.0 has no ${unknown.join("/")} packets, so it resyncs there` : ""),
      );
    }
  }

  const ratio = (m: Measurement) => (mLib ? m.mbPerSec / mLib.mbPerSec : undefined);

  // --- the trace-unit model's generation rate and the flow decoders ------------------
  if (!opt.json) process.stdout.write("generation and flow benchmarks: preparing the gzip workload...\n");
  const gen = measureGenerate({ runs: opt.runs });
  const flow = measureFlow({ runs: opt.runs, libipt: opt.libipt });
  const analysis = measureAnalysis({ runs: opt.runs });
  const whole = opt.whole === "too" ? runWhole(opt, path, buf) : undefined;
  if (whole) problems.push(...whole.bench.problems);

  if (opt.json) {
    const json = {
      trace: {
        path,
        bytes,
        synthetic: !opt.trace,
        seed: opt.trace ? undefined : opt.seed,
        generatedMs,
        packets: mix.packets,
        undecodedBytes: mix.undecodedBytes,
        mix: Object.fromEntries(
          mixRows(mix).map((r) => [r.name, { packets: r.packets, bytes: r.bytes, share: r.share }]),
        ),
        groups: mixSummary(mix),
        ipc: Object.fromEntries(IPC_NAMES.map((n, i) => [n, mix.ipcCounts[i]!]).filter(([, c]) => c !== 0)),
      },
      runs: opt.runs,
      node: process.version,
      results: {
        ptkitLoop: mLoop,
        ptkitDecoder: mDecoder,
        libipt: mLib
          ? { ...mLib, compile: lib.ok ? lib.result.compile : undefined }
          : { skipped: lib.ok ? "" : lib.skipped },
      },
      ratio: mLib ? { ptkitLoop: ratio(mLoop), ptkitDecoder: ratio(mDecoder) } : undefined,
      counts: { ptkit: ptkitCounts, libipt: lib.ok ? lib.result.counts : undefined, match: countsMatch },
      generate: gen,
      flow,
      analysis,
      whole,
      problems,
    };
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  } else {
    const mib = bytes / 1048576;
    log(
      `trace    ${shownPath}  ${fmt(mib, 1)} MiB (${fmtInt(bytes)} bytes)${opt.trace ? "" : `, seed ${opt.seed}`}`,
    );
    if (generatedMs !== undefined) {
      log(
        `         generated in ${fmt(generatedMs / 1000, 2)} s (${fmt(bytes / generatedMs / 1e3, 1)} MB/s), cached for later runs`,
      );
    }
    log(`packets  ${fmtInt(mix.packets)} (${fmt(bytes / mix.packets, 2)} bytes/packet)`);
    if (mix.undecodedBytes) log(`         ${fmtInt(mix.undecodedBytes)} bytes outside decodable packets`);
    const g = mixSummary(mix);
    log(
      `mix      TNT ${pct(g.tnt!)}, TIP/FUP/PGE/PGD ${pct(g.tipFamily!)}, PSB/PSBEND ${pct(g.psb!)}, ` +
        `MTC/CYC/TSC/TMA/CBR ${pct(g.timing!)}, PAD ${pct(g.pad!)}, other ${pct(g.other!)} (of bytes)`,
    );
    log();
    const rows = [["type", "packets", "bytes", "% bytes", "% packets"]];
    for (const r of mixRows(mix)) {
      rows.push([r.name, fmtInt(r.packets), fmtInt(r.bytes), pct(r.share), pct(r.packets / mix.packets)]);
    }
    log(table(rows, [1, 2, 3, 4]));
    const ipTotal = mix.ipcCounts.reduce((s, c) => s + c, 0);
    const ipc = IPC_NAMES.map((n, i) => [n, mix.ipcCounts[i]!] as const)
      .filter(([, c]) => c !== 0)
      .map(([n, c]) => `${n} ${pct(c / ipTotal)}`);
    log(`  IP compression (TIP/FUP/PGE/PGD packets): ${ipc.join(", ")}`);
    log();
    log(`decode, best of ${opt.runs} after a warm-up run (MB = 10^6 bytes; node ${process.version})`);
    const res = [["decoder", "best ms", "MB/s", "Mpkt/s", "vs libipt", "all runs ms"]];
    for (const m of [mLoop, mDecoder, mLib]) {
      if (!m) continue;
      const rt = ratio(m);
      res.push([
        m.name,
        fmt(m.bestNs / 1e6, 1),
        fmt(m.mbPerSec, 1),
        fmt(m.mpktPerSec, 1),
        rt === undefined ? "-" : `${fmt(rt, 2)}x`,
        m.runsNs.map((ns) => fmt(ns / 1e6, 0)).join(" "),
      ]);
    }
    log(table(res, [1, 2, 3, 4]));
    log();
    if (lib.ok) {
      log(`libipt   ${lib.result.compile.split(`${REPO_ROOT}/`).join("")}`);
      log(
        `ratio    ptkit/libipt: decodePacket loop ${fmt(ratio(mLoop)!, 2)}, PacketDecoder.next ${fmt(ratio(mDecoder)!, 2)}`,
      );
      log(
        `counts   ptkit ${fmtInt(mLoop.packets)} packets, libipt ${fmtInt(lib.result.packets)} packets: ` +
          (countsMatch ? "equal, per type too" : "DIFFERENT"),
      );
      if (mLoop.errors || lib.result.errors) {
        log(
          `errors   ptkit ${mLoop.errors}, libipt ${lib.result.errors} (each resynchronised at the next PSB)`,
        );
      }
    } else {
      log(`libipt comparison skipped: ${lib.skipped}`);
    }
    log();
    logGenerate(log, gen);
    log();
    logFlow(log, flow);
    log();
    logAnalysis(log, analysis);
    if (whole) {
      log();
      logWhole(log, whole);
    }
  }

  if (problems.length) {
    for (const p of problems) process.stderr.write(`bench: FAILED: ${p}\n`);
    process.exitCode = 1;
  }
}

function logGenerate(log: (s?: string) => void, gen: GenerateBench | { skip: string }): void {
  if ("skip" in gen) {
    log(`generation benchmark skipped: ${gen.skip}`);
    return;
  }
  log(`generate ${gen.workload}: ${fmtInt(gen.instructions)} instructions, ${fmtInt(gen.events)} events`);
  log(`         execution ${gen.source}`);
  const rows = [["configuration", "trace bytes", "best ms", "M insn/s", "MB/s"]];
  for (const r of gen.rows)
    rows.push([
      r.config,
      fmtInt(r.traceBytes),
      fmt(r.bestNs / 1e6, 1),
      fmt(r.mInsnPerSec, 1),
      fmt(r.mbPerSec, 2),
    ]);
  log(table(rows, [1, 2, 3, 4]));
}

function logFlow(log: (s?: string) => void, flow: FlowBench | { skip: string }): void {
  if ("skip" in flow) {
    log(`flow benchmark skipped: ${flow.skip}`);
    return;
  }
  log(`flow     the trace of the same execution (branch tracing, OS+User): ${fmtInt(flow.traceBytes)} bytes`);
  const byName = (n: string) => flow.rows.find((r) => r.decoder === n);
  const rows = [["decoder", "instructions", "best ms", "M insn/s", "vs libipt same kind"]];
  for (const r of flow.rows) {
    const kind = r.decoder.includes("Block") || r.decoder.includes("block") ? "block" : "insn";
    const lib = byName(`libipt ${kind} decoder`);
    const vs = lib && lib !== r ? `${fmt(r.mInsnPerSec / lib.mInsnPerSec, 2)}x` : "-";
    rows.push([r.decoder, fmtInt(r.insns), fmt(r.bestNs / 1e6, 1), fmt(r.mInsnPerSec, 1), vs]);
  }
  log(table(rows, [1, 2, 3, 4]));
  if (flow.libiptSkipped) log(`libipt flow comparison skipped: ${flow.libiptSkipped}`);
}

function logAnalysis(log: (s?: string) => void, a: AnalysisBench | { skip: string }): void {
  if ("skip" in a) {
    log(`analysis benchmark skipped: ${a.skip}`);
    return;
  }
  log(`analysis the same execution's trace with TSC, MTC and CYC: ${fmtInt(a.traceBytes)} bytes`);
  const base = a.rows[0]!;
  const rows = [["what", "instructions", "best ms", "M insn/s", "vs decode only"]];
  for (const r of a.rows)
    rows.push([
      r.what,
      fmtInt(r.insns),
      fmt(r.bestNs / 1e6, 1),
      fmt(r.mInsnPerSec, 1),
      `${fmt(r.bestNs / base.bestNs, 2)}x time`,
    ]);
  log(table(rows, [1, 2, 3, 4]));
  const t = a.rows.find((r) => r.outputBytes !== undefined);
  if (t)
    log(`         timeline: ${fmtInt(a.timelineEvents)} events, ${fmt(t.outputBytes! / 1e6, 1)} MB of JSON`);
}

interface WholeResult {
  large?: Omit<LargeWorkload, "elfs"> | { skip: string };
  fuzz?: FuzzResult["workload"];
  perf?: PerfWorkload | { skip: string };
  skipped: string[];
  bench: WholeBench;
}

/** The perf.data workload of the analysis pairs (`cpus`: recorded on that many), made first if it is not cached. */
/** The short perf.data run's length, as a part of the main one's (SHORT_RUN in whole-pairs.ts). */
const SHORT_PART = 0.2;

function perfWorkload(opt: Options, cpus = 1, part = 1): PerfWorkload | { skip: string } {
  if (!opt.json)
    process.stdout.write(
      `whole-process benchmark: preparing the perf.data workload${cpus > 1 ? ` on ${cpus} CPUs` : ""}${part < 1 ? " (short run)" : ""}...\n`,
    );
  try {
    return loadPerfWorkload({ insns: Math.max(1, Math.round(opt.perfInsns * part)), cpus });
  } catch (e) {
    return { skip: (e as Error).message };
  }
}

/** Only the analysis pairs: ptkit perf vs Linux perf. */
function runWholePerf(opt: Options): WholeResult {
  const perf = perfWorkload(opt);
  const perfCpus = perfWorkload(opt, 2);
  const perfShort = perfWorkload(opt, 1, SHORT_PART);
  const { pairs, skipped } = wholePairs({
    synthetic: undefined,
    large: undefined,
    gzip: false,
    perf: "skip" in perf ? undefined : perf,
    perfCpus: "skip" in perfCpus ? undefined : perfCpus,
    perfShort: "skip" in perfShort ? undefined : perfShort,
    perfOnly: true,
  });
  if ("skip" in perf) skipped.push(`perf.data workload: ${perf.skip}`);
  if ("skip" in perfCpus) skipped.push(`perf.data workload on 2 CPUs: ${perfCpus.skip}`);
  if ("skip" in perfShort) skipped.push(`perf.data workload (short run): ${perfShort.skip}`);
  return { perf, skipped, bench: measureWhole(pairs, opt.wholeRuns) };
}

/** The whole-process comparisons, making the large-footprint workload first if it is not cached. */
function runWhole(opt: Options, path: string, buf: Uint8Array): WholeResult {
  if (!opt.json) process.stdout.write("whole-process benchmark: preparing the large-footprint workload...\n");
  let large: LargeWorkload | undefined;
  let largeInfo: WholeResult["large"];
  try {
    large = loadLargeWorkload({ traceBytes: opt.largeSize });
    const { elfs: _, ...info } = large;
    largeInfo = info;
  } catch (e) {
    largeInfo = { skip: (e as Error).message };
  }
  const fuzz = fuzzWorkload(opt.fuzzSize);
  const fuzzInfo = "skip" in fuzz ? fuzz : (({ elfs: _, ...info }) => info)(fuzz);
  const perf = perfWorkload(opt);
  const perfCpus = perfWorkload(opt, 2);
  const perfShort = perfWorkload(opt, 1, SHORT_PART);
  const { pairs, skipped } = wholePairs({
    synthetic: { path, bytes: buf },
    large,
    gzip: true,
    fuzz: "skip" in fuzz ? undefined : fuzz,
    perf: "skip" in perf ? undefined : perf,
    perfCpus: "skip" in perfCpus ? undefined : perfCpus,
    perfShort: "skip" in perfShort ? undefined : perfShort,
  });
  if ("skip" in largeInfo) skipped.push(`large-footprint workload: ${largeInfo.skip}`);
  if ("skip" in perf) skipped.push(`perf.data workload: ${perf.skip}`);
  if ("skip" in perfCpus) skipped.push(`perf.data workload on 2 CPUs: ${perfCpus.skip}`);
  if ("skip" in perfShort) skipped.push(`perf.data workload (short run): ${perfShort.skip}`);
  const match = opt.wholeMatch;
  const bench = measureWhole(
    match === undefined ? pairs : pairs.filter((p) => p.what.includes(match)),
    opt.wholeRuns,
  );
  // The decoders must also find every instruction the trace-unit model traced.
  for (const r of bench.rows)
    if (large && r.workload === "large" && r.ptkit.count !== large.insns)
      bench.problems.push(`${r.what}: ${r.ptkit.count} instructions, the run had ${large.insns}`);
  if (!("skip" in fuzz)) bench.problems.push(...fuzzProblems(bench, fuzz));
  return { large: largeInfo, fuzz: fuzzInfo, perf, skipped, bench };
}

function logWhole(log: (s?: string) => void, w: WholeResult): void {
  if (w.perf && !("skip" in w.perf)) {
    const p = w.perf;
    log(
      `perf.data ${fmtInt(p.insns)} instructions of the large program, ${fmtInt(p.functions)} functions in ` +
        `${p.elfs.length} ELF images; trace ${fmt(p.traceBytes / 1048576, 1)} MiB (user mode)`,
    );
    log(`         ${p.source}`);
  }
  if (w.large && !("skip" in w.large)) {
    const l = w.large;
    log(
      `large    ${fmtInt(l.blocks)} blocks, ${fmt(l.codeBytes / 1048576, 2)} MiB of code in 4 ELF images; ` +
        `trace ${fmt(l.traceBytes / 1048576, 1)} MiB, ${fmtInt(l.insns)} instructions in ${l.segments} segments`,
    );
    log(`         ${l.source}`);
  }
  if (w.fuzz) for (const line of fuzzLines(w.fuzz)) log(line);
  for (const line of wholeReport(w.bench)) log(line);
  for (const s of w.skipped) log(`skipped  ${s}`);
}

main();
