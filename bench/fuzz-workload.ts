/**
 * The fuzzing workload, for the coverage comparison with libxdc (issue 13): a
 * one-image target (bench/fuzz-run.ts's layout, 256 KiB of code at 0x400000 by default)
 * run test case after test case, traced user-only with the target's code range as
 * address filter 0 (libxdc decodes only inside filter ranges). Two traces of the same
 * test cases:
 * - `trace.pt`: what libxdc decodes, no timing packets and RET compression off
 *   (DisRETC), every test case a PSB+ ... TIP.PGD of its own;
 * - `trace-timing.pt`: TSC, MTC (every 2^3 crystal clocks) and CYC on and RET
 *   compression on, for ptkit only (libxdc cannot decode it).
 * Deterministic from the seed; made once into its own directory under bench/.cache/
 * (meta.json, written last, marks a complete set) and reused. Test cases are added
 * until `trace.pt` has `traceBytes` bytes.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { hex64 } from "../src/base/halves.js";
import { InsnClass } from "../src/isa/types.js";
import { type Execution, infoClass, infoSize } from "../src/unit/exec/types.js";
import { FUZZ_LAYOUT, FuzzRun } from "./fuzz-run.js";
import { generateTrace } from "./generate.js";
import { largeProgram } from "./large-program.js";
import { type LargeElf, writeElfs } from "./large-workload.js";
import { CACHE_DIR } from "./paths.js";
import { cachedWorkload } from "./workload-cache.js";

/** Bump when the program, the run or the trace configuration changes. */
const CACHE_VERSION = 3;
export const DEFAULT_FUZZ_SEED = 13;
export const DEFAULT_FUZZ_CODE = 256 << 10;
export const DEFAULT_FUZZ_TRACE = 16 << 20;
const CASE_INSNS = 200_000;

export interface FuzzOptions {
  seed?: number;
  /** Bytes of code (at least; default 256 KiB). */
  codeBytes?: number;
  /** Bytes of the trace without timing (at least; default 16 MiB). */
  traceBytes?: number;
  /** Instructions per test case (at least; default 200k). */
  caseInsns?: number;
  /** Where the workload's directory goes (default bench/.cache). */
  cacheDir?: string;
}

export interface FuzzWorkload {
  dir: string;
  /** What it was made from: the seed, the code size asked for, the instructions per test case (at least). */
  seed: number;
  codeAsked: number;
  caseInsns: number;
  /** The target's ELF file (one, at its base). */
  elfs: LargeElf[];
  /** The traced range, `from-to` (both included), as `ptkit simulate --filter` and the libxdc harness take it. */
  filter: string;
  /** No timing, no RET compression. */
  trace: string;
  traceBytes: number;
  /** Timing packets and RET compression. */
  timingTrace: string;
  timingTraceBytes: number;
  blocks: number;
  codeBytes: number;
  insns: number;
  cases: number;
  /** How it was obtained: cached, or how long generation took. */
  source: string;
}

/** `ptkit simulate` options of the two traces, for the traced range `filter`. */
export function fuzzTraceOptions(filter: string): { plain: string[]; timing: string[] } {
  const common = ["--user", "--filter", filter];
  return { plain: [...common, "--no-retc"], timing: [...common, "--tsc", "--mtc", "3", "--cyc", "0"] };
}

/** The workload from its cache directory, or made there now. */
export function loadFuzzWorkload(options: FuzzOptions = {}): FuzzWorkload {
  const seed = options.seed ?? DEFAULT_FUZZ_SEED;
  const codeBytes = options.codeBytes ?? DEFAULT_FUZZ_CODE;
  const traceBytes = options.traceBytes ?? DEFAULT_FUZZ_TRACE;
  const caseInsns = options.caseInsns ?? CASE_INSNS;
  const dir = join(
    options.cacheDir ?? CACHE_DIR,
    `fuzz-v${CACHE_VERSION}-s${seed}-c${codeBytes}-t${traceBytes}-i${caseInsns}`,
  );
  return cachedWorkload(dir, () => makeFuzzWorkload(dir, seed, codeBytes, traceBytes, caseInsns));
}

/** The workload made into the empty directory `dir`. */
function makeFuzzWorkload(
  dir: string,
  seed: number,
  codeBytes: number,
  traceBytes: number,
  caseInsns: number,
): FuzzWorkload {
  const program = largeProgram(seed, codeBytes, FUZZ_LAYOUT);
  const elfs = writeElfs(program, dir);
  const base = BigInt(elfs[0]!.base);
  const filter = `0x${base.toString(16)}-0x${(base + BigInt(program.codeBytes) - 1n).toString(16)}`;
  const opts = fuzzTraceOptions(filter);
  const run = new FuzzRun(program, seed);
  const trace = join(dir, "trace.pt");
  const timingTrace = join(dir, "trace-timing.pt");
  const plainFd = openSync(trace, "w");
  const timingFd = openSync(timingTrace, "w");
  let bytes = 0;
  let timingBytes = 0;
  try {
    while (bytes < traceBytes) {
      // The TSC goes on from the last test case (one tick per instruction, and a gap).
      const tsc = 0x1000000000n + BigInt(run.insns) + BigInt(run.cases) * 1000n;
      const exec = run.testCase(caseInsns);
      bytes += writeSync(plainFd, generateTrace(exec, opts.plain));
      timingBytes += writeSync(timingFd, generateTrace(exec, opts.timing, { tsc }));
    }
  } finally {
    closeSync(plainFd);
    closeSync(timingFd);
  }
  return {
    dir,
    seed,
    codeAsked: codeBytes,
    caseInsns,
    elfs,
    filter,
    trace,
    traceBytes: bytes,
    timingTrace,
    timingTraceBytes: timingBytes,
    blocks: program.blocks,
    codeBytes: program.codeBytes,
    insns: run.insns,
    cases: run.cases,
    source: "",
  };
}

/**
 * The distinct edges of the workload's run, as "0x<from> 0x<to>" (the branch
 * instruction, the next instruction; not-taken conditional branches included): the
 * test cases replayed from the seed. What a decoder's coverage of the trace must hold.
 */
export function fuzzRunEdges(w: FuzzWorkload): Set<string> {
  const run = new FuzzRun(largeProgram(w.seed, w.codeAsked, FUZZ_LAYOUT), w.seed);
  const edges = new Set<string>();
  for (let c = 0; c < w.cases; c++) addEdges(run.testCase(w.caseInsns), edges);
  return edges;
}

function addEdges(e: Execution, edges: Set<string>): void {
  const hex = (hi: number, lo: number) => `0x${hex64(hi, lo, 1)}`;
  for (let i = 0; i + 1 < e.insnCount; i++)
    if (infoClass(e.info[i]!) !== InsnClass.Other || e.ipLo[i + 1] !== e.ipLo[i]! + infoSize(e.info[i]!))
      edges.add(`${hex(e.ipHi[i]!, e.ipLo[i]!)} ${hex(e.ipHi[i + 1]!, e.ipLo[i + 1]!)}`);
}
