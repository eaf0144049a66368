/**
 * The perf.data workload of the analysis benchmarks (`ptkit perf` against `perf
 * script`): the large-footprint program (bench/large-program.ts) run by
 * bench/large-run.ts and traced in user mode only (`--user`, with TSC, MTC and CYC),
 * wrapped as a `perf record -e intel_pt//u` file of one process (COMM, an MMAP2 for
 * each user image, ITRACE_START, the trace in AUXTRACE records of CPU 0, or with
 * `cpus` of each CPU in turn with CPU-wide switch records between) by
 * tools/perf/pt-file.ts, with what Linux perf needs to decode it.
 *
 * The user images are written as ELF executables linked at their load addresses with
 * a function symbol every FUNC_BLOCKS blocks, so that call stacks have names, and
 * the program's calls go to these functions' entries, as compiled code's do (until
 * version 2 they went to any block: nearly every call a frame of its own); the
 * MMAP2 records name these files by absolute path and map their code's file offset
 * (pgoff), so perf and ptkit both read the code from them. The kernel's code is not
 * needed: its parts of the run leave only TIP.PGD/TIP.PGE. Deterministic from the
 * seed; made once into its own directory under bench/.cache/ (meta.json, written
 * last, marks a complete set) and reused.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileMode } from "../tools/perf/perf-data-writer.js";
import { elfWithSymbolsLayout, PtFile, switchCpuWide, TRACE_TSC } from "../tools/perf/pt-file.js";
import { generateTrace } from "./generate.js";
import { type LargeImage, largeProgram } from "./large-program.js";
import { LargeRun } from "./large-run.js";
import { DEFAULT_LARGE_CODE, DEFAULT_LARGE_SEED } from "./large-workload.js";
import { CACHE_DIR } from "./paths.js";
import { cachedWorkload } from "./workload-cache.js";

/** Bump when the program, the run, the trace or the file layout changes. */
const CACHE_VERSION = 2;
export const DEFAULT_PERF_INSNS = 5_000_000;
/** The `ptkit simulate` options of the trace: user mode only, timing packets on. */
const PERF_TRACE_OPTIONS = ["--user", "--no-retc", "--tsc", "--mtc", "3", "--cyc", "0"];
const SEGMENT_INSNS = 2_000_000;
/** With several CPUs: the instructions between two moves to another CPU. */
const MOVE_INSNS = 250_000;
/**
 * With several CPUs: TSC ticks from one piece's start to the next (the simulated
 * trace takes far fewer for its instructions): a piece's switch records then fall
 * between it and the next.
 */
const MOVE_TICKS = 0x10000000n;
/** Blocks per function symbol. */
const FUNC_BLOCKS = 32;
const PID = 1000;
/** perf reads AUXTRACE data in records of at most this many bytes, as perf record writes them. */
const AUX_CHUNK = 1 << 20;

export interface PerfWorkload {
  dir: string;
  /** The perf.data file. */
  data: string;
  dataBytes: number;
  traceBytes: number;
  /** Instructions in the run (user and kernel; the trace shows the user ones). */
  insns: number;
  /** The user images' ELF files. */
  elfs: string[];
  functions: number;
  /** How it was obtained: cached, or how long generation took. */
  source: string;
}

export interface PerfWorkloadOptions {
  seed?: number;
  codeBytes?: number;
  /** Instructions to run (at least; default 5 million). */
  insns?: number;
  cacheDir?: string;
  /**
   * CPUs the thread runs on, in turn (default 1): with more, the run moves to the next
   * CPU every {@link MOVE_INSNS} instructions, as a thread migrates, with the
   * CPU-wide context switches perf record writes (one AUX stream per CPU, as `perf
   * record` of a command makes on a machine of several cores).
   */
  cpus?: number;
}

/** The workload from its cache directory, or made there now. */
export function loadPerfWorkload(options: PerfWorkloadOptions = {}): PerfWorkload {
  const seed = options.seed ?? DEFAULT_LARGE_SEED;
  const codeBytes = options.codeBytes ?? DEFAULT_LARGE_CODE;
  const insns = options.insns ?? DEFAULT_PERF_INSNS;
  const cpus = options.cpus ?? 1;
  const name = `perf-v${CACHE_VERSION}-s${seed}-c${codeBytes}-i${insns}${cpus > 1 ? `-p${cpus}` : ""}`;
  const dir = join(options.cacheDir ?? CACHE_DIR, name);
  return cachedWorkload(dir, () => makePerfWorkload(dir, seed, codeBytes, insns, cpus));
}

/** The workload made into the empty directory `dir`. */
function makePerfWorkload(
  dir: string,
  seed: number,
  codeBytes: number,
  insns: number,
  cpus: number,
): PerfWorkload {
  const program = largeProgram(seed, codeBytes, undefined, FUNC_BLOCKS);
  const file = new PtFile({ perfScript: true, schedSwitch: cpus > 1 ? 3 : 0 }).comm(
    PID,
    "main",
    TRACE_TSC - 100n,
  );
  const elfs: string[] = [];
  let functions = 0;
  for (const img of program.images) {
    if (img.kernel) continue;
    const w = writeImage(img, dir);
    elfs.push(w.path);
    functions += w.functions;
    file.mmap2(PID, w.base, BigInt(img.code.length), BigInt(w.codeOffset), w.path, TRACE_TSC - 50n);
  }
  file.itraceStart(PID, PID, TRACE_TSC - 10n);
  // The run, segment by segment (each starts with PSB+), the TSC going on from the last.
  const run = new LargeRun(program, seed);
  let segments = 0;
  let traceBytes = 0;
  /** Each CPU's AUX stream's bytes so far. */
  const offsets = new Array<number>(cpus).fill(0);
  while (run.insns < insns) {
    const cpu = segments % cpus;
    const tsc =
      cpus > 1
        ? TRACE_TSC + BigInt(segments) * MOVE_TICKS
        : TRACE_TSC + BigInt(run.insns) + BigInt(segments) * 1000n;
    if (cpus > 1 && segments > 0) {
      // The thread leaves the CPU it ran on, and this one takes it up.
      const was = (segments - 1) % cpus;
      file.records.push(
        switchCpuWide(true, PID, 0, tsc - 0x200000n, was),
        switchCpuWide(false, PID, 0, tsc - 0x100000n, cpu),
      );
    }
    const n = Math.min(cpus > 1 ? MOVE_INSNS : SEGMENT_INSNS, insns - run.insns);
    const trace = generateTrace(run.segment(n), PERF_TRACE_OPTIONS, { tsc });
    file.trace(trace, cpu, AUX_CHUNK, offsets[cpu]!);
    offsets[cpu]! += trace.length;
    segments++;
    traceBytes += trace.length;
  }
  const data = join(dir, "perf.data");
  const bytes = fileMode(file.built());
  writeFileSync(data, bytes);
  return {
    dir,
    data,
    dataBytes: bytes.length,
    traceBytes,
    insns: run.insns,
    elfs,
    functions,
    source: "",
  };
}

/** A user image as an ELF executable at its load address, a function symbol every FUNC_BLOCKS blocks. */
function writeImage(
  img: LargeImage,
  dir: string,
): { path: string; base: bigint; codeOffset: number; functions: number } {
  const base = (BigInt(img.baseHi) << 32n) | BigInt(img.baseLo);
  const stem = img.name.replace(/\..*/, "");
  const symbols: { name: string; value: bigint; size: number }[] = [];
  for (let b = 0; b < img.blocks; b += FUNC_BLOCKS) {
    const end = b + FUNC_BLOCKS < img.blocks ? img.start[b + FUNC_BLOCKS]! : img.code.length;
    symbols.push({
      name: `${stem}_f${b / FUNC_BLOCKS}`,
      value: base + BigInt(img.start[b]!),
      size: end - img.start[b]!,
    });
  }
  const layout = elfWithSymbolsLayout(base, img.code, symbols);
  const path = join(dir, img.name);
  writeFileSync(path, layout.bytes);
  return { path, base, codeOffset: layout.segOffsets[0]!, functions: symbols.length };
}
