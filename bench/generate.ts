/**
 * The packet-generation benchmark: instructions per second and MB/s of trace that the
 * trace-unit model produces from a real execution.
 *
 * The workload is gzip compressing 64 KiB of deterministic text (words drawn by the
 * benchmark's PRNG) under valgrind's lackey: about 10 million instructions of real,
 * loop-heavy code with system calls. Lackey runs about half a million instructions a
 * second and writes some 20 bytes of log per instruction (a few MB of input would take
 * many minutes and gigabytes of log), so the run (about 19 s) and its conversion
 * (about 1.5 s) happen once: the execution is cached in bench/.cache in ptkit's binary
 * form (under 4 bytes per instruction). Without valgrind or gzip the benchmark is
 * skipped, saying why.
 *
 * Each configuration is timed best-of-N over the whole execution (`generate` with
 * trace bytes collected in memory, no output stage).
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { traceWordsWrites } from "../src/node/trace-words.js";
import { runUnderLackey, VALGRIND_HINT, valgrindVersion } from "../src/node/valgrind.js";
import { readExecBinary, writeExecBinary } from "../src/unit/exec/binary.js";
import { LackeyConverter } from "../src/unit/exec/lackey.js";
import { ProcessImage } from "../src/unit/exec/process-image.js";
import type { Execution } from "../src/unit/exec/types.js";
import { type GenOptions, generate } from "../src/unit/gen/index.js";
import { MsrFile, presetCapabilities } from "../src/unit/index.js";
import { CACHE_DIR } from "./paths.js";
import { Rng } from "./prng.js";
import { bestOf, mbPerSec, mPerSec } from "./timing.js";

/** Bump when the conversion changes, so that a cached execution is made again. */
const CACHE_VERSION = 2;
const WORDS = ["trace", "packet", "branch", "return", "call", "kernel", "user", "filter", "time", "cycle"];

/** The configurations timed: `ptkit simulate` options. */
export const GENERATE_CONFIGS: readonly { name: string; options: string[] }[] = [
  { name: "branches, OS+User", options: [] },
  { name: "user only", options: ["--user"] },
  { name: "no RET compression", options: ["--no-retc"] },
  { name: "timing: TSC, MTC, CYC", options: ["--tsc", "--mtc", "3", "--cyc", "0"] },
];

export interface GenerateRow {
  config: string;
  traceBytes: number;
  bestNs: number;
  runsNs: number[];
  /** Millions of instructions per second. */
  mInsnPerSec: number;
  /** MB (10^6 bytes) of trace per second. */
  mbPerSec: number;
}

export interface GenerateBench {
  workload: string;
  instructions: number;
  events: number;
  /** How the execution was obtained: from the cache, or the lackey run's and conversion's times. */
  source: string;
  rows: GenerateRow[];
}

export interface GenerateOptions {
  /** Timed runs per configuration (default 3). */
  runs?: number;
  /** Bytes of text gzip compresses (default 64 KiB). */
  inputBytes?: number;
  /** Where the execution is cached (default bench/.cache). */
  cacheDir?: string;
}

/** An ELF object of the workload's process and its load bias (as lackey's log gives them). */
export interface MappedObject {
  path: string;
  bias: string;
}

export interface Workload {
  name: string;
  execution: Execution;
  /** The objects to map (with {@link ProcessImage}) to decode the execution's trace. */
  objects: MappedObject[];
  /** How the execution was obtained: from the cache, or the lackey run's and conversion's times. */
  source: string;
}

/**
 * The gzip workload: from the cache (execution in ptkit's binary form, objects in a
 * JSON file beside it), else run under lackey and cached; `{ skip }` when it cannot be
 * run here.
 */
export function loadWorkload(options: GenerateOptions = {}): Workload | { skip: string } {
  const inputBytes = options.inputBytes ?? 65536;
  const cacheDir = options.cacheDir ?? CACHE_DIR;
  const name = `gzip -c on ${inputBytes} bytes of text, under valgrind lackey`;
  const cached = join(cacheDir, `gzip-${inputBytes}-v${CACHE_VERSION}.exec`);
  const objectsFile = `${cached}.objects.json`;
  if (existsSync(cached) && existsSync(objectsFile)) {
    return {
      name,
      execution: readExecBinary(new Uint8Array(readFileSync(cached))),
      objects: JSON.parse(readFileSync(objectsFile, "utf8")) as MappedObject[],
      source: `cached in ${cached}`,
    };
  }
  const made = runWorkload(cacheDir, inputBytes);
  if ("skip" in made) return made;
  writeFileSync(cached, writeExecBinary(made.execution));
  writeFileSync(objectsFile, JSON.stringify(made.objects));
  const source = `lackey run ${made.runSeconds.toFixed(1)} s, conversion ${made.convertSeconds.toFixed(1)} s`;
  return { name, execution: made.execution, objects: made.objects, source };
}

/** Measure the generation rate; `{ skip }` when the workload cannot be run here. */
export function measureGenerate(options: GenerateOptions = {}): GenerateBench | { skip: string } {
  const runs = options.runs ?? 3;
  const workload = loadWorkload(options);
  if ("skip" in workload) return workload;
  const { execution } = workload;
  const rows = GENERATE_CONFIGS.map(({ name, options: argv }) => {
    let bytes = 0;
    const t = bestOf(runs, () => {
      bytes = generateTrace(execution, argv).length;
      return bytes;
    });
    return {
      config: name,
      traceBytes: bytes,
      bestNs: t.bestNs,
      runsNs: t.runsNs,
      mInsnPerSec: mPerSec(execution.insnCount, t.bestNs),
      mbPerSec: mbPerSec(bytes, t.bestNs),
    };
  });
  return {
    workload: workload.name,
    instructions: execution.insnCount,
    events: execution.eventCount,
    source: workload.source,
    rows,
  };
}

/**
 * The trace of `execution` under the configuration `ptkit simulate` options describe,
 * with `extra` generator options (e.g. the TSC at the start).
 */
export function generateTrace(
  execution: Execution,
  argv: readonly string[],
  extra: Omit<GenOptions, "msrs"> = {},
): Uint8Array {
  const args = traceWordsWrites(argv);
  if (typeof args === "string") throw new Error(`bad options ${argv.join(" ")}: ${args}`);
  const msrs = new MsrFile(presetCapabilities(args.preset));
  for (const w of args.writes) if (msrs.writeMsr(w.msr, w.value)) throw new Error(`#GP: ${argv.join(" ")}`);
  return generate(execution, { ...extra, msrs }).bytes;
}

/** Run gzip under lackey and convert its log; or why it cannot be done. */
function runWorkload(
  cacheDir: string,
  inputBytes: number,
):
  | { execution: Execution; objects: MappedObject[]; runSeconds: number; convertSeconds: number }
  | { skip: string } {
  if (valgrindVersion() === undefined) return { skip: `valgrind is not installed ${VALGRIND_HINT}` };
  const gzip = spawnSync("gzip", ["--version"]);
  if (gzip.error || gzip.status !== 0) return { skip: "gzip is not installed (apt-get install gzip)" };
  mkdirSync(cacheDir, { recursive: true });
  const input = join(cacheDir, `gzip-input-${inputBytes}.txt`);
  const log = join(cacheDir, `gzip-${inputBytes}.lackey.log`);
  writeFileSync(input, text(inputBytes));
  try {
    let start = performance.now();
    const run = runUnderLackey(["gzip", "-c", input], log);
    if (typeof run === "string") return { skip: run };
    if (run.status !== 0) throw new Error(`gzip under valgrind exited with ${run.status}: ${run.stderr}`);
    const runSeconds = (performance.now() - start) / 1000;
    start = performance.now();
    const image = new ProcessImage((path) => new Uint8Array(readFileSync(path)));
    const objects: MappedObject[] = [];
    const converter = new LackeyConverter({
      code: image.image,
      onObject: (path, bias) => {
        objects.push({ path, bias: `0x${bias.toString(16)}` });
        image.map(path, bias);
      },
    });
    forChunks(log, (chunk) => converter.push(chunk));
    const result = converter.finish();
    if (result.fatal) throw new Error(`${log}:${result.fatal.line}: ${result.fatal.message}`);
    const convertSeconds = (performance.now() - start) / 1000;
    return { execution: result.execution, objects, runSeconds, convertSeconds };
  } finally {
    rmSync(log, { force: true });
    rmSync(input, { force: true });
  }
}

/** `size` bytes of words separated by spaces, the same on every run. */
function text(size: number): string {
  const rng = new Rng(2026);
  let s = "";
  while (s.length < size) s += `${WORDS[rng.below(WORDS.length)]} `;
  return s.slice(0, size);
}

/** Call `fn` with the file's bytes, 4 MiB at a time (the reused buffer is only valid during the call). */
function forChunks(path: string, fn: (chunk: Uint8Array) => void): void {
  const fd = openSync(path, "r");
  const buf = new Uint8Array(1 << 22);
  try {
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) fn(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
}
