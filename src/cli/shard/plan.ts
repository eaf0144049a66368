/**
 * `ptkit shard plan`: the shards of a set of perf.data files, one per Intel PT stream,
 * and raw traces, cut at PSBs (see src/shard/plan.ts), written as a plan file.
 */

import { dirname, isAbsolute, relative, resolve } from "node:path";
import { diagnosticLine } from "../../base/diagnostic.js";
import { fileSource } from "../../node/source.js";
import { planChunks } from "../../packet/chunks.js";
import {
  type AuxtraceInfo,
  auxStreams,
  auxtraceBuffers,
  PerfDataReader,
  PerfError,
  PerfRecord,
  parseAuxtraceInfo,
  RecordType,
} from "../../perf/index.js";
import { fileKind, ioErrorText, notATraceHint, openError, readHead } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";
import { makePlan, type PlanInput, type PlanShard, planText } from "../../shard/plan.js";
import { FLOW_HINTS } from "../session-hints.js";

/** A raw trace's shards are about this many bytes (--shard-size). */
export const DEFAULT_SHARD_SIZE = 64 << 20;

/**
 * Plan `inputs` with `options` for every shard's decode, into the file `output`; raw
 * traces are cut at PSBs about `shardSize` bytes apart; `calls`: shards record each call.
 */
export function planShards(
  io: SessionIo,
  inputs: readonly string[],
  options: readonly string[],
  output: string,
  { shardSize = DEFAULT_SHARD_SIZE, calls = false }: { shardSize?: number; calls?: boolean } = {},
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
    const kind = fileKind(readHead(io, path));
    if (kind !== "perf" && kind !== "trace") {
      const hint = kind === undefined ? undefined : notATraceHint(path, kind, FLOW_HINTS);
      io.stderr(
        `ptkit shard plan: ${hint ?? `${path}: neither a perf.data file nor an Intel PT trace (no PSB near its start)`}\n`,
      );
      return 1;
    }
    const absolute = resolve(io.cwd, path);
    // Relative to the plan's directory, so that the plan and its inputs move together.
    const inPlan = isAbsolute(path) ? path : relative(planDir, absolute);
    const input = planned.length;
    const bytes = io.fileSize(path);
    if (kind === "perf") {
      const streams = perfStreams(io, path);
      if (typeof streams === "string") {
        io.stderr(`ptkit shard plan: ${streams}\n`);
        return 1;
      }
      planned.push({ path: inPlan, kind: "perf.data", bytes });
      for (const s of streams) {
        shards.push({ input, stream: s.idx, cpus: s.cpus, tids: s.tids, traceBytes: s.size });
        traceBytes += s.size;
      }
      continue;
    }
    // A raw trace: windows from a PSB to the next one about shardSize on.
    const starts = planChunks(fileSource(io, path), 2, shardSize, shardSize);
    planned.push({ path: inPlan, kind: "raw", bytes });
    starts.forEach((from, i) => {
      const to = starts[i + 1] ?? bytes;
      shards.push({ input, from, to, traceBytes: to - from });
    });
    traceBytes += bytes;
  }
  const plan = makePlan(options, planned, shards, calls);
  io.writeFile(output, new TextEncoder().encode(planText(plan)));
  const mib = (traceBytes / 2 ** 20).toFixed(1);
  io.stdout(
    `${output}: ${shards.length} shard${shards.length === 1 ? "" : "s"} over ${planned.length} input${planned.length === 1 ? "" : "s"} (${mib} MiB of trace), plan ${plan.id}\n`,
  );
  return 0;
}

/** The Intel PT streams of a perf.data file, or what is wrong with it. */
function perfStreams(
  io: SessionIo,
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
    if (e instanceof PerfError) return diagnosticLine(path, e);
    if ((e as NodeJS.ErrnoException).code) return `${path}: ${ioErrorText(e)}`;
    throw e;
  }
}
