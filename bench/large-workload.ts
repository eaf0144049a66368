/**
 * The large-footprint workload: the program of bench/large-program.ts written as four
 * ELF files (main, liba.so, libb.so, vmlinux) and the trace of a long run of it
 * (bench/large-run.ts) under the trace-unit model with timing packets (TSC, MTC every
 * 2^3 crystal clocks, CYC), OS+User, RET compression on. Deterministic from the seed;
 * made once into its own directory under bench/.cache/ (meta.json, written last, marks
 * a complete set) and reused.
 *
 * The run is traced segment by segment (a few million instructions each, every one
 * starting with PSB+ and ending with TIP.PGD, the TSC going on from the last), and the
 * segments' traces are appended to one file until it has `traceBytes` bytes: memory
 * stays bounded whatever the size.
 *
 * ptkit decodes it with `--elf <file>:<base>` for each image, libipt (the harness's
 * --map) with the same ELF files' code segments as file ranges.
 */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { Image, parseElf } from "../src/image/index.js";
import { ET_DYN, ET_EXEC, PF_R, PF_X, writeElf } from "../tools/elf/elf-writer.js";
import { generateTrace } from "./generate.js";
import { type LargeProgram, largeProgram } from "./large-program.js";
import { LargeRun } from "./large-run.js";
import { CACHE_DIR } from "./paths.js";
import { cachedWorkload } from "./workload-cache.js";

/** Bump when the program, the run or the trace configuration changes. */
const CACHE_VERSION = 1;
export const DEFAULT_LARGE_SEED = 12;
export const DEFAULT_LARGE_CODE = 3 << 20;
export const DEFAULT_LARGE_TRACE = 100 << 20;
/** The `ptkit simulate` options of the trace: timing packets on. */
export const LARGE_TRACE_OPTIONS = ["--tsc", "--mtc", "3", "--cyc", "0"];
const SEGMENT_INSNS = 2_000_000;

export interface LargeOptions {
  seed?: number;
  /** Bytes of code over all images (at least; default 3 MiB). */
  codeBytes?: number;
  /** Bytes of trace (at least; default 100 MiB). */
  traceBytes?: number;
  /** Instructions per traced segment (default 2 million). */
  segmentInsns?: number;
  /** Where the workload's directory goes (default bench/.cache). */
  cacheDir?: string;
}

/** One image's ELF file and where it is loaded. */
export interface LargeElf {
  path: string;
  /** Load address, hex with 0x. */
  base: string;
  kernel: boolean;
  /** File range of its code segment. */
  offset: number;
  size: number;
}

export interface LargeWorkload {
  dir: string;
  trace: string;
  traceBytes: number;
  elfs: LargeElf[];
  blocks: number;
  codeBytes: number;
  /** Instructions in the run (what the trace-unit model traced). */
  insns: number;
  segments: number;
  /** How it was obtained: cached, or how long generation took. */
  source: string;
}

/** `ptkit flow` image options for the workload. */
export function largeFlowArgs(w: Pick<LargeWorkload, "elfs">): string[] {
  return w.elfs.flatMap((e) => ["--elf", `${e.path}:${e.base}`]);
}

/** The harness's `--map file:from-to:address` specs for the workload. */
export function largeMaps(w: Pick<LargeWorkload, "elfs">): string[] {
  const hex = (n: number) => `0x${n.toString(16)}`;
  return w.elfs.map((e) => `${e.path}:${hex(e.offset)}-${hex(e.offset + e.size)}:${e.base}`);
}

/** ptkit's in-memory image of the workload, loaded from its ELF files as `ptkit flow --elf` does. */
export function largeImage(w: Pick<LargeWorkload, "elfs">): Image {
  const image = new Image();
  for (const e of w.elfs) {
    const base = BigInt(e.base);
    const added = image.addElf(parseElf(new Uint8Array(readFileSync(e.path))), {
      name: e.path,
      zeroFill: false,
      baseHi: Number(base >> 32n),
      baseLo: Number(base & 0xffffffffn),
    });
    if (added < 0) throw new Error(`${e.path}: cannot map at ${e.base}`);
  }
  return image;
}

/** The workload from its cache directory, or made there now. */
export function loadLargeWorkload(options: LargeOptions = {}): LargeWorkload {
  const seed = options.seed ?? DEFAULT_LARGE_SEED;
  const codeBytes = options.codeBytes ?? DEFAULT_LARGE_CODE;
  const traceBytes = options.traceBytes ?? DEFAULT_LARGE_TRACE;
  const segmentInsns = options.segmentInsns ?? SEGMENT_INSNS;
  const dir = join(
    options.cacheDir ?? CACHE_DIR,
    `large-v${CACHE_VERSION}-s${seed}-c${codeBytes}-t${traceBytes}-g${segmentInsns}`,
  );
  return cachedWorkload(dir, (): LargeWorkload => {
    const program = largeProgram(seed, codeBytes);
    const elfs = writeElfs(program, dir);
    const trace = join(dir, "trace.pt");
    const made = writeTrace(program, seed, trace, traceBytes, segmentInsns);
    return {
      dir,
      trace,
      traceBytes: made.bytes,
      elfs,
      blocks: program.blocks,
      codeBytes: program.codeBytes,
      insns: made.insns,
      segments: made.segments,
      source: "",
    };
  });
}

/** Each image as an ELF file with one R+X PT_LOAD (shared libraries linked at 0, loaded at their base). */
export function writeElfs(p: LargeProgram, dir: string): LargeElf[] {
  return p.images.map((img) => {
    const base = (BigInt(img.baseHi) << 32n) | BigInt(img.baseLo);
    const dyn = img.name.endsWith(".so");
    const vaddr = dyn ? 0n : base;
    const layout = writeElf({
      is64: true,
      le: true,
      type: dyn ? ET_DYN : ET_EXEC,
      entry: vaddr,
      segments: [{ flags: PF_R | PF_X, vaddr, data: img.code, align: 0x1000n }],
    });
    const path = join(dir, img.name);
    writeFileSync(path, layout.bytes);
    return {
      path,
      base: `0x${base.toString(16)}`,
      kernel: img.kernel,
      offset: layout.segOffsets[0]!,
      size: img.code.length,
    };
  });
}

/** Trace segments of a run of `p` into `path` until it holds at least `bytes` bytes. */
function writeTrace(
  p: LargeProgram,
  seed: number,
  path: string,
  bytes: number,
  segmentInsns: number,
): { bytes: number; insns: number; segments: number } {
  const run = new LargeRun(p, seed);
  const fd = openSync(path, "w");
  let written = 0;
  let segments = 0;
  try {
    while (written < bytes) {
      // The TSC goes on from the last segment (one tick per instruction, as the core clock runs).
      const tsc = 0x1000000000n + BigInt(run.insns) + BigInt(segments) * 1000n;
      const exec = run.segment(segmentInsns);
      const trace = generateTrace(exec, LARGE_TRACE_OPTIONS, { tsc });
      writeSync(fd, trace);
      written += trace.length;
      segments++;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes: written, insns: run.insns, segments };
}
