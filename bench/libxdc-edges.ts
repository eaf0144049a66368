/**
 * A local check, not a test (it needs libxdc): do ptkit and libxdc decode the whole
 * fuzzing trace (bench/fuzz-workload.ts) to the same coverage? Compares three sets
 * of distinct edges (branch instruction, where it went; not-taken conditional
 * branches included): the run's (its test cases replayed), ptkit's (`ptkit flow
 * --block-decoder --coverage`, on the trace without and with timing and RET
 * compression) and libxdc's (the harness's --edges mode; libxdc's pseudo-edges from or
 * to 0xffffffffffffffff, tracing enabled or disabled, left out).
 *
 *   PTKIT_LIBXDC=/tmp/libxdc-src node dist/bench/libxdc-edges.js [<trace MiB>]
 *
 * Prints each set's size and, for each decoder, the edges it has that the run has not
 * and those it misses (a few of each). Exit status 1 when a set differs from the run's.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { buildLibxdcHarness, libxdcArgv } from "../tools/libxdc/harness.js";
import { type FuzzWorkload, fuzzRunEdges, loadFuzzWorkload } from "./fuzz-workload.js";
import { largeFlowArgs, largeMaps } from "./large-workload.js";
import { CACHE_DIR } from "./paths.js";
import { ptkitArgv } from "./whole.js";

const OUTSIDE = "0xffffffffffffffff";

function run(argv: string[]): string {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error || r.status !== 0)
    throw new Error(`${argv.join(" ")}: ${(r.stderr || String(r.error)).trim()}`);
  return r.stdout;
}

/** ptkit's coverage edges of `trace`. */
function ptkitEdges(w: FuzzWorkload, trace: string): Set<string> {
  const out = join(CACHE_DIR, `fuzz-coverage-${process.pid}.json`);
  try {
    run(
      ptkitArgv("flow", "--block-decoder", "--quiet", ...largeFlowArgs(w), "--pt", trace, "--coverage", out),
    );
    const doc = JSON.parse(readFileSync(out, "utf8")) as { edges: { from: string; to: string }[] };
    return new Set(doc.edges.map((e) => `${e.from} ${e.to}`));
  } finally {
    rmSync(out, { force: true });
  }
}

/** libxdc's edges of the workload's trace, and its decode result. */
function libxdcEdges(w: FuzzWorkload, bin: string): { edges: Set<string>; result: string } {
  const edges = new Set<string>();
  let result = "";
  for (const line of run(libxdcArgv(bin, largeMaps(w), w.filter, w.trace, "edges")).split("\n")) {
    const [kind, a, b] = line.split(" ");
    if (kind === "R") result = a!;
    else if (kind === "E" && a !== OUTSIDE && b !== OUTSIDE) edges.add(`${a} ${b}`);
  }
  return { edges, result };
}

/** Lines comparing `got` with the run's edges; whether they are equal. */
function compare(name: string, got: Set<string>, want: Set<string>): { lines: string[]; equal: boolean } {
  const extra = [...got].filter((e) => !want.has(e));
  const missing = [...want].filter((e) => !got.has(e));
  const lines = [
    `${name}: ${got.size} edges, ${extra.length} not in the run, ${missing.length} of the run's missing`,
  ];
  if (extra.length) lines.push(`  not in the run: ${extra.slice(0, 5).join(", ")}`);
  if (missing.length) lines.push(`  missing: ${missing.slice(0, 5).join(", ")}`);
  return { lines, equal: extra.length === 0 && missing.length === 0 };
}

function main(): void {
  const mib = process.argv[2] === undefined ? undefined : Number(process.argv[2]);
  const w = loadFuzzWorkload(mib === undefined ? {} : { traceBytes: Math.round(mib * 1048576) });
  const x = buildLibxdcHarness(CACHE_DIR);
  if (!("bin" in x)) {
    process.stderr.write(`libxdc-edges: ${"skip" in x ? x.skip : x.error}\n`);
    process.exit(2);
  }
  const want = fuzzRunEdges(w);
  console.log(`run: ${w.cases} test cases, ${w.insns} instructions, ${want.size} edges (${w.source})`);
  const xdc = libxdcEdges(w, x.bin);
  const checks = [
    compare("ptkit", ptkitEdges(w, w.trace), want),
    compare("ptkit, timing and RETC trace", ptkitEdges(w, w.timingTrace), want),
    compare(`libxdc (decode result ${xdc.result})`, xdc.edges, want),
  ];
  for (const c of checks) for (const l of c.lines) console.log(l);
  if (checks.some((c) => !c.equal)) process.exitCode = 1;
}

main();
