/**
 * `ptkit shard plan`: the shards of a set of perf.data files, one per Intel PT stream
 * (see src/shard/plan.ts), written as a plan file.
 */
import { dirname, isAbsolute, relative, resolve } from "node:path";
import {
  type AuxtraceInfo,
  auxStreams,
  auxtraceBuffers,
  PerfDataReader,
  PerfError,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
} from "../perf/index.js";
import { makePlan, type PlanInput, type PlanShard, planText } from "../shard/plan.js";
import { fileKind, ioErrorText, openError, readHead } from "./file-kind.js";
import type { CliIo } from "./io.js";
import { fileSource } from "./node-source.js";

/** Plan `inputs` with `options` for every shard's decode, into the file `output`. */
export function planShards(
  io: CliIo,
  inputs: readonly string[],
  options: readonly string[],
  output: string,
): number {
  const planDir = dirname(resolve(io.cwd, output));
  const planned: PlanInput[] = [];
  const shards: PlanShard[] = [];
  let traceBytes = 0;
  for (const path of inputs) {
    const problem = openError(io, path);
    if (problem !== undefined) {
      io.stderr(`ptkit shard plan: ${problem}\n`);
      return 1;
    }
    if (fileKind(readHead(io, path)) !== "perf") {
      io.stderr(
        `ptkit shard plan: ${path}: not a perf.data file; shards are planned for perf.data files (record with 'ptkit record' or 'perf record -e intel_pt//').\n`,
      );
      return 1;
    }
    const streams = perfStreams(io, path);
    if (typeof streams === "string") {
      io.stderr(`ptkit shard plan: ${path}: ${streams}\n`);
      return 1;
    }
    const absolute = resolve(io.cwd, path);
    // Relative to the plan's directory, so that the plan and its inputs move together.
    const inPlan = isAbsolute(path) ? path : relative(planDir, absolute);
    const input = planned.length;
    planned.push({ path: inPlan, kind: "perf.data", bytes: io.fileSize(path) });
    for (const s of streams) {
      shards.push({ input, stream: s.idx, cpus: s.cpus, tids: s.tids, traceBytes: s.size });
      traceBytes += s.size;
    }
  }
  const plan = makePlan(options, planned, shards);
  io.writeFile(output, new TextEncoder().encode(planText(plan)));
  const mib = (traceBytes / 2 ** 20).toFixed(1);
  io.stdout(
    `${output}: ${shards.length} shard${shards.length === 1 ? "" : "s"} over ${planned.length} input${planned.length === 1 ? "" : "s"} (${mib} MiB of trace), plan ${plan.id}\n`,
  );
  return 0;
}

/** The Intel PT streams of a perf.data file, or what is wrong with it. */
function perfStreams(
  io: CliIo,
  path: string,
): { idx: number; cpus: number[]; tids: number[]; size: number }[] | string {
  try {
    const source = fileSource(io, path);
    const reader = new PerfDataReader(source);
    const rec = new PerfRecord();
    let info: AuxtraceInfo | undefined;
    while (reader.next(rec))
      if (rec.type === RecordType.AuxtraceInfo) info = parseAuxtraceInfo(rec.bytes) ?? info;
    return auxStreams(source, auxtraceBuffers(reader), info?.intelPt?.snapshotMode === 1n).map((s) => ({
      idx: s.idx,
      cpus: [...s.cpus],
      tids: [...s.tids],
      size: s.size,
    }));
  } catch (e) {
    if (e instanceof PerfError) return e.message;
    if ((e as NodeJS.ErrnoException).code) return ioErrorText(e);
    throw e;
  }
}
