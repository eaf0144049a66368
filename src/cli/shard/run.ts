/**
 * `ptkit shard run PLAN --index N -o DIR`: decode shard N of a plan (one stream of a
 * perf.data file, as `ptkit perf` decodes it, or a window of a raw trace, as `ptkit
 * flow` does, with the plan's decode options) and
 * write its tables, each to a temporary name renamed into place, then the completion
 * marker `shard-N.done` last: a shard is done exactly when its marker is there, and a
 * re-run writes the same bytes.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ioErrorText } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";
import { writeParquet } from "../../shard/parquet.js";
import { type InputKind, type PlanInput, parsePlan, type ShardPlan } from "../../shard/plan.js";
import {
  SHARD_TABLES,
  type ShardData,
  shardTables,
  TABLES_SCHEMA,
  TABLES_VERSION,
} from "../../shard/tables.js";
import { TablesOut } from "../../shard/tables-out.js";
import { runFlow } from "../flow/flow.js";
import { runPerf } from "../perf/perf.js";

export const DONE_SCHEMA = "ptkit-shard-done";

/** A shard's completion marker: what the merge checks and reads. */
export interface ShardDone {
  schema: typeof DONE_SCHEMA;
  version: typeof TABLES_VERSION;
  plan: string;
  shard: number;
  shards: number;
  input: string;
  /** The input's kind: the shards of a raw trace are windows of one stream. */
  kind: InputKind;
  clock: string;
  /** Table name → its file (in the marker's directory) and size. */
  files: Record<string, { file: string; bytes: number }>;
}

/** The plan in `path`, or an error message. */
export function readPlan(io: SessionIo, path: string): ShardPlan | string {
  let text: string;
  try {
    text = readFileSync(resolve(io.cwd, path), "utf8");
  } catch (e) {
    return `${path}: ${ioErrorText(e)}`;
  }
  const plan = parsePlan(text);
  return typeof plan === "string" ? `${path}: ${plan}` : plan;
}

/** The file names of shard `n`'s outputs. */
export function shardFile(n: number, table: string): string {
  return `shard-${n}.${table}`;
}

export async function runShard(
  io: SessionIo,
  planPath: string,
  index: number,
  outDir: string,
): Promise<number> {
  const fail = (message: string) => {
    io.stderr(`ptkit shard run: ${message}\n`);
    return 1;
  };
  const plan = readPlan(io, planPath);
  if (typeof plan === "string") return fail(plan);
  const shard = plan.shards[index];
  if (shard === undefined)
    return fail(
      `${planPath} has ${plan.shards.length} shards (0 to ${plan.shards.length - 1}): no shard ${index}.`,
    );
  const input = plan.inputs[shard.input]!;
  const path = resolve(dirname(resolve(io.cwd, planPath)), input.path);
  let size: number;
  try {
    size = io.fileSize(path);
  } catch (e) {
    return fail(`shard ${index}: ${path}: ${ioErrorText(e)}`);
  }
  if (size !== input.bytes)
    return fail(`shard ${index}: ${path} has ${size} bytes, the plan says ${input.bytes}: plan it again.`);
  // The decode's listing (errors only, with -q) is not this command's output: the gaps table has them.
  let errors = 0;
  const quiet: SessionIo = {
    ...io,
    stdout: (t) => {
      errors += t.split("\n").length - 1;
    },
    stdoutBytes: (b) => {
      for (const c of b) if (c === 0x0a) errors++;
    },
  };
  const tables = new TablesOut(plan.calls === true);
  const code =
    input.kind === "perf.data"
      ? runPerf([...plan.options, "-q", path], quiet, process.env.HOME, {
          streams: [shard.stream ?? -1],
          tables,
        })
      : // From the shard's PSB to the end of the file: the decode stops past the next shard's PSB.
        await runFlow([...plan.options, "--quiet", "--pt", `${path}:${shard.from ?? 0}`], quiet, {
          tables,
          stopAt: (shard.to ?? input.bytes) - (shard.from ?? 0),
        });
  if (code !== 0) return fail(`shard ${index}: the decode of ${input.path} failed (see above).`);
  const data = tables.data(index);
  const dir = resolve(io.cwd, outDir);
  try {
    writeShard(dir, plan, index, input, data);
  } catch (e) {
    return fail(`${outDir}: ${ioErrorText(e)}`);
  }
  const insns = data.nodes.reduce((n, r) => n + r.selfInsns, 0);
  io.stdout(
    `shard ${index} of ${plan.shards.length}: ${input.path} ${shard.stream === undefined ? `bytes ${shard.from}-${shard.to}` : `stream ${shard.stream}`}: ${insns} instructions, ${data.segments.length} thread runs, ${data.edges.length} edges, ${errors} decode errors; wrote ${join(outDir, shardFile(index, "done"))}\n`,
  );
  return 0;
}

/** Write shard `index`'s tables and then its marker, each atomically (temporary name, rename). */
function writeShard(dir: string, plan: ShardPlan, index: number, input: PlanInput, data: ShardData): void {
  mkdirSync(dir, { recursive: true });
  const put = (name: string, bytes: Uint8Array) => {
    const temp = join(dir, `.${name}.${process.pid}.tmp`);
    writeFileSync(temp, bytes);
    renameSync(temp, join(dir, name));
  };
  const keyValue = {
    schema: TABLES_SCHEMA,
    version: String(TABLES_VERSION),
    plan: plan.id,
    shard: String(index),
  };
  const files: ShardDone["files"] = {};
  const all = shardTables(data);
  for (const name of SHARD_TABLES) {
    const { columns, values } = all[name];
    const bytes = writeParquet(columns, values, { keyValue: { ...keyValue, table: name } });
    const file = shardFile(index, `${name}.parquet`);
    put(file, bytes);
    files[name] = { file, bytes: bytes.length };
  }
  const done: ShardDone = {
    schema: DONE_SCHEMA,
    version: TABLES_VERSION,
    plan: plan.id,
    shard: index,
    shards: plan.shards.length,
    input: input.path,
    kind: input.kind,
    clock: data.clock,
    files,
  };
  put(shardFile(index, "done"), new TextEncoder().encode(`${JSON.stringify(done)}\n`));
}
