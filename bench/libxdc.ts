/**
 * The libxdc comparison (issue 13's coverage target): `ptkit flow --afl-map` against
 * libxdc through our harness (tools/libxdc/harness.c) on the fuzzing workload
 * (fuzz-workload.ts). Whole processes, alternating (whole-pairs.ts's libxdc pairs),
 * and libxdc decoding the trace `runs` times in one process as a fuzzer does (its
 * caches warm after the first), against ptkit's library doing the same
 * ({@link measurePtkitWarm}). `npm run bench -- --fuzz` runs only this; `--whole`
 * includes the pairs. Skipped, saying why, unless $PTKIT_LIBXDC names a libxdc build.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Coverage, decodeCoverage } from "../src/analysis/index.js";
import { DecisionGraph } from "../src/flow/index.js";
import { TraceBytes } from "../src/packet/index.js";
import { buildLibxdcHarness, type LibxdcRun, libxdcArgv } from "../tools/libxdc/harness.js";
import { fmt, fmtInt } from "./format.js";
import { type FuzzWorkload, loadFuzzWorkload } from "./fuzz-workload.js";
import { largeImage, largeMaps } from "./large-workload.js";
import { CACHE_DIR } from "./paths.js";
import { mbPerSec } from "./timing.js";
import { measureWhole, type WholeBench, wholeReport } from "./whole.js";
import { libxdcPairs } from "./whole-pairs.js";

/** Decode times: the first decode (cold caches), the median and the fastest, ns, and MB/s (10^6 bytes) at each. */
export interface DecodeTimes {
  firstNs: number;
  medianNs: number;
  bestNs: number;
  firstMbPerSec: number;
  medianMbPerSec: number;
  bestMbPerSec: number;
}

/** libxdc decoding the trace `runs` times in one process: wall and CPU times. */
export interface LibxdcWarm {
  runs: number;
  wall: DecodeTimes;
  cpu: DecodeTimes;
  bitmapNonzero: number;
}

function decodeTimes(bytes: number, ns: number[]): DecodeTimes {
  const sorted = [...ns].sort((a, b) => a - b);
  const t = { firstNs: ns[0]!, medianNs: sorted[sorted.length >> 1]!, bestNs: sorted[0]! };
  return {
    ...t,
    firstMbPerSec: mbPerSec(bytes, t.firstNs),
    medianMbPerSec: mbPerSec(bytes, t.medianNs),
    bestMbPerSec: mbPerSec(bytes, t.bestNs),
  };
}

export interface FuzzResult {
  workload: Omit<FuzzWorkload, "elfs"> | { skip: string };
  skipped: string[];
  bench: WholeBench | undefined;
  warm: LibxdcWarm | { skip: string };
  /** ptkit's fast coverage decode in one process, the same number of times (a fuzzer's use of the library). */
  ptkitWarm: LibxdcWarm | undefined;
}

/**
 * ptkit's AFL map of the workload's trace made `runs` times in this process, as a
 * fuzzer linking the library would: one decision graph kept across the runs (the
 * target's code does not change), the map cleared before each.
 */
export function measurePtkitWarm(w: FuzzWorkload, runs: number): LibxdcWarm {
  const bytes = new Uint8Array(readFileSync(w.trace));
  const graph = new DecisionGraph(largeImage(w));
  const coverage = new Coverage(undefined, true);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < runs; r++) {
    coverage.clear();
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const res = decodeCoverage(TraceBytes.of(bytes), graph, coverage);
    wall.push(Number(process.hrtime.bigint() - t0));
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) * 1000);
    if (res.status !== 0 || res.insns !== w.insns)
      throw new Error(
        `ptkit's fast coverage decode: ${res.reason || `${res.insns} instructions, the run had ${w.insns}`}`,
      );
  }
  return {
    runs,
    wall: decodeTimes(bytes.length, wall),
    cpu: decodeTimes(bytes.length, cpu),
    bitmapNonzero: coverage.aflMap.filter((b) => b !== 0).length,
  };
}

/** The fuzzing workload, or why it could not be made. */
export function fuzzWorkload(traceBytes?: number): FuzzWorkload | { skip: string } {
  try {
    return loadFuzzWorkload(traceBytes === undefined ? {} : { traceBytes });
  } catch (e) {
    return { skip: (e as Error).message };
  }
}

/**
 * Problems with the libxdc pairs' rows: ptkit must decode every instruction of the
 * run (the harness fails the pair unless libxdc's result is success).
 */
export function fuzzProblems(bench: WholeBench, w: FuzzWorkload): string[] {
  return bench.rows
    .filter((r) => r.workload === "fuzz" && r.ptkit.count !== w.insns)
    .map((r) => `${r.what}: ${r.ptkit.count} instructions, the run had ${w.insns}`);
}

/** The harness with `--runs runs` on the workload's trace; a skip when it cannot run. */
export function measureLibxdcWarm(w: FuzzWorkload, runs: number): LibxdcWarm | { skip: string } {
  const x = buildLibxdcHarness(CACHE_DIR);
  if ("skip" in x) return x;
  if ("error" in x) return { skip: x.error.split("\n").slice(0, 3).join(" | ") };
  const argv = libxdcArgv(x.bin, largeMaps(w), w.filter, w.trace, runs);
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8" });
  if (r.error || r.status !== 0)
    throw new Error(`${argv.join(" ")}: ${(r.stderr || String(r.error)).trim()}`);
  const j = JSON.parse(r.stdout) as LibxdcRun;
  return {
    runs,
    wall: decodeTimes(j.bytes, j.runs_ns),
    cpu: decodeTimes(j.bytes, j.runs_cpu_ns),
    bitmapNonzero: j.bitmap_nonzero,
  };
}

/** Only the libxdc comparison: the pairs, `wholeRuns` rounds each, and libxdc warm over `warmRuns` decodes. */
export function runFuzz(wholeRuns: number, warmRuns: number, traceBytes?: number): FuzzResult {
  const w = fuzzWorkload(traceBytes);
  if ("skip" in w) return { workload: w, skipped: [], bench: undefined, warm: w, ptkitWarm: undefined };
  const { elfs: _, ...info } = w;
  const skipped: string[] = [];
  const pairs = libxdcPairs(w, skipped);
  const bench = pairs.length ? measureWhole(pairs, wholeRuns) : undefined;
  if (bench) bench.problems.push(...fuzzProblems(bench, w));
  const warm = pairs.length ? measureLibxdcWarm(w, warmRuns) : { skip: skipped.join("; ") };
  return { workload: info, skipped, bench, warm, ptkitWarm: measurePtkitWarm(w, warmRuns) };
}

/** The fuzzing workload's line. */
export function fuzzLines(w: FuzzResult["workload"]): string[] {
  if ("skip" in w) return [`fuzzing workload skipped: ${w.skip}`];
  return [
    `fuzz     ${fmtInt(w.blocks)} blocks, ${fmt(w.codeBytes / 1024, 0)} KiB of code in one image, traced in ${w.filter}; ` +
      `${fmtInt(w.cases)} test cases, ${fmtInt(w.insns)} instructions; trace ${fmt(w.traceBytes / 1048576, 1)} MiB ` +
      `(no timing, no RETC), ${fmt(w.timingTraceBytes / 1048576, 1)} MiB (TSC/MTC/CYC, RETC)`,
    `         ${w.source}`,
  ];
}

/** The report of {@link runFuzz}. */
export function fuzzReport(f: FuzzResult): string[] {
  const lines = fuzzLines(f.workload);
  if (f.bench) lines.push(...wholeReport(f.bench));
  const warm = f.warm;
  const times = (name: string, t: DecodeTimes) =>
    `         ${name}: first (cold) ${fmt(t.firstNs / 1e6, 1)} ms = ${fmt(t.firstMbPerSec, 1)} MB/s, ` +
    `median ${fmt(t.medianNs / 1e6, 1)} ms = ${fmt(t.medianMbPerSec, 1)} MB/s, ` +
    `best ${fmt(t.bestNs / 1e6, 1)} ms = ${fmt(t.bestMbPerSec, 1)} MB/s`;
  const warmLines = (who: string, r: LibxdcWarm) => [
    `${who.padEnd(8)} one process decoding the trace ${r.runs} times (${fmtInt(r.bitmapNonzero)} bitmap bytes set):`,
    times("wall", r.wall),
    times("cpu ", r.cpu),
  ];
  // Without a harness the reason is under "skipped" already.
  if ("skip" in warm && f.skipped.length === 0) lines.push(`libxdc skipped: ${warm.skip}`);
  else if (!("skip" in warm)) lines.push(...warmLines("libxdc", warm));
  if (f.ptkitWarm) lines.push(...warmLines("ptkit", f.ptkitWarm));
  for (const s of f.skipped) lines.push(`skipped  ${s}`);
  return lines;
}
