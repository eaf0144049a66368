/**
 * The flow-decoder benchmark: instructions per second of ptkit's block and
 * instruction decoders, and of libipt's block and instruction decoders on the same
 * trace and image in the same run.
 *
 * The trace is the trace-unit model's (branch tracing, OS+User) of the generation
 * benchmark's workload: gzip under valgrind lackey, about ten million instructions of
 * real code in the real binaries (gzip, ld.so, libc) plus the stand-in kernel. The
 * decoders run like `ptxed --quiet`: synchronise, fetch and drop events, count
 * instructions, resume at the next PSB after an error. libipt (Debian's libipt-dev,
 * through tools/libipt/harness.c's --bench-flow mode) reads the same code through
 * --map ranges written by ProcessImage. Every decoder must count the same
 * instructions, or the benchmark fails.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../src/base/errors.js";
import { type DecoderConfig, defaultDecoderConfig, PtEvent, Status } from "../src/event/index.js";
import { Block, BlockDecoder, Insn, InsnDecoder } from "../src/flow/index.js";
import type { Image } from "../src/image/index.js";
import { KERNEL_CODE } from "../src/unit/exec/lackey-kernel.js";
import { ProcessImage } from "../src/unit/exec/process-image.js";
import { buildLibiptHarness, INSTALL_HINT } from "../tools/libipt/harness.js";
import { generateTrace, loadWorkload } from "./generate.js";
import { CACHE_DIR } from "./paths.js";
import { bestOf, mbPerSec, mPerSec } from "./timing.js";

export interface FlowRow {
  decoder: string;
  insns: number;
  errors: number;
  bestNs: number;
  runsNs: number[];
  mInsnPerSec: number;
  mbPerSec: number;
}

export interface FlowBench {
  workload: string;
  traceBytes: number;
  rows: FlowRow[];
  /** Why the libipt rows are missing, if they are. */
  libiptSkipped?: string;
}

export interface Count {
  insns: number;
  errors: number;
}

const ev = new PtEvent();

/*
 * One loop per decoder on purpose: a shared loop over both would make its call sites
 * polymorphic, which a user's loop over one decoder is not, and would measure that.
 */

/** Decode the whole trace with the block decoder, like ptxed --quiet. */
export function blockPass(trace: Uint8Array, image: Image, config: DecoderConfig): Count {
  const dec = new BlockDecoder(trace, { image, config });
  const block = new Block();
  let insns = 0;
  let errors = 0;
  for (;;) {
    let status = dec.syncForward();
    if (status < 0) break;
    for (;;) {
      while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
      if (status < 0 || status & Status.Eos) break;
      status = dec.next(block);
      insns += block.ninsn;
      if (status < 0) break;
    }
    if (status >= 0 || status === -ErrorCode.Eos) break;
    errors++;
  }
  return { insns, errors };
}

/** The same with the instruction decoder. */
export function insnPass(trace: Uint8Array, image: Image, config: DecoderConfig): Count {
  const dec = new InsnDecoder(trace, { image, config });
  const insn = new Insn();
  let insns = 0;
  let errors = 0;
  for (;;) {
    let status = dec.syncForward();
    if (status < 0) break;
    for (;;) {
      while (status >= 0 && status & Status.EventPending) status = dec.event(ev);
      if (status < 0 || status & Status.Eos) break;
      status = dec.next(insn);
      if (status < 0) break;
      insns++;
    }
    if (status >= 0 || status === -ErrorCode.Eos) break;
    errors++;
  }
  return { insns, errors };
}

function row(decoder: string, bytes: number, c: Count, bestNs: number, runsNs: number[]): FlowRow {
  return {
    decoder,
    insns: c.insns,
    errors: c.errors,
    bestNs,
    runsNs,
    mInsnPerSec: mPerSec(c.insns, bestNs),
    mbPerSec: mbPerSec(bytes, bestNs),
  };
}

function timePtkit(name: string, runs: number, bytes: number, pass: () => Count): FlowRow {
  let count: Count = { insns: 0, errors: 0 };
  const t = bestOf(runs, () => {
    count = pass();
    return count.insns;
  });
  return row(name, bytes, count, t.bestNs, t.runsNs);
}

/** libipt's decoder of `kind` through the harness; a reason string when it cannot run. */
function timeLibipt(
  kind: "block" | "insn",
  runs: number,
  tracePath: string,
  maps: string[],
): FlowRow | string {
  const b = buildLibiptHarness(CACHE_DIR);
  if ("skip" in b) return b.skip;
  if ("error" in b)
    return `the harness does not compile: ${b.error.split("\n").slice(-3).join(" | ")} ${INSTALL_HINT}`;
  const args = ["--bench-flow", String(runs), kind, ...maps.flatMap((m) => ["--map", m]), tracePath];
  const r = spawnSync(b.bin, args, { encoding: "utf8", maxBuffer: 1 << 20 });
  if (r.error || r.status !== 0)
    throw new Error(`${b.bin} failed: ${(r.stderr || String(r.error ?? r.status)).trim()}`);
  const j = JSON.parse(r.stdout) as {
    bytes: number;
    insns: number;
    errors: number;
    best_ns: number;
    runs_ns: number[];
  };
  return row(`libipt ${kind} decoder`, j.bytes, { insns: j.insns, errors: j.errors }, j.best_ns, j.runs_ns);
}

/** The gzip workload's branch trace and image, in memory and as files for other processes. */
export interface GzipFlowInputs {
  name: string;
  trace: Uint8Array;
  image: Image;
  /** The trace written to bench/.cache. */
  tracePath: string;
  /** The image as `file:from-to:address` ranges (harness --map, ptkit flow --raw), the kernel's code first. */
  maps: string[];
}

/** The gzip workload's flow inputs; `{ skip }` when the workload cannot be made here. */
export function gzipFlowInputs(): GzipFlowInputs | { skip: string } {
  const workload = loadWorkload();
  if ("skip" in workload) return workload;
  const trace = generateTrace(workload.execution, []);
  const processImage = new ProcessImage((path) => new Uint8Array(readFileSync(path)));
  for (const o of workload.objects) processImage.map(o.path, BigInt(o.bias));
  const tracePath = join(CACHE_DIR, "flow-bench.pt");
  const kernelPath = join(CACHE_DIR, "flow-bench.kernel");
  writeFileSync(tracePath, trace);
  writeFileSync(kernelPath, KERNEL_CODE);
  const maps = processImage.rawArgs(kernelPath);
  return { name: workload.name, trace, image: processImage.image, tracePath, maps };
}

/** Run the benchmark; `{ skip }` when the workload cannot be made here. */
export function measureFlow(options: { runs?: number; libipt?: boolean } = {}): FlowBench | { skip: string } {
  const runs = options.runs ?? 5;
  const inputs = gzipFlowInputs();
  if ("skip" in inputs) return inputs;
  const { trace, image, tracePath, maps } = inputs;
  const config = defaultDecoderConfig();

  const rows = [
    timePtkit("ptkit BlockDecoder", runs, trace.length, () => blockPass(trace, image, config)),
    timePtkit("ptkit InsnDecoder", runs, trace.length, () => insnPass(trace, image, config)),
  ];
  const bench: FlowBench = { workload: inputs.name, traceBytes: trace.length, rows };
  if (options.libipt !== false) {
    for (const kind of ["block", "insn"] as const) {
      const r = timeLibipt(kind, runs, tracePath, maps);
      if (typeof r === "string") {
        bench.libiptSkipped = r;
        break;
      }
      rows.push(r);
    }
  }
  const expected = rows[0]!.insns;
  for (const r of rows)
    if (r.insns !== expected)
      throw new Error(`${r.decoder} counted ${r.insns} instructions, expected ${expected}`);
  return bench;
}
