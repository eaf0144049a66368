/**
 * `ptkit shard merge DIR [--plan PLAN] -o DB`: every shard's tables into one DuckDB
 * database, refusing when a shard is missing or from another plan. Call stacks are
 * stitched across the shards of each input (src/shard/stitch.ts); the result tables
 * (functions, edges, gaps) are written as Parquet and loaded, with `shards` (what each
 * shard decoded) and `meta` (the plan and the tables' schema).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { writeDatabase } from "../../node/duckdb.js";
import { ioErrorText } from "../../session/file-kind.js";
import type { SessionIo } from "../../session/io.js";
import { writeParquet } from "../../shard/parquet.js";
import { readParquet } from "../../shard/parquet-read.js";
import {
  ResultsBuilder,
  SHARD_TABLES,
  type ShardData,
  shardData,
  shardProblem,
  TABLES_SCHEMA,
  TABLES_VERSION,
  type TableData,
} from "../../shard/tables.js";
import { DONE_SCHEMA, readPlan, type ShardDone, shardFile } from "./run.js";

export async function mergeShards(
  io: SessionIo,
  dirArg: string,
  planPath: string | undefined,
  out: string,
): Promise<number> {
  const fail = (message: string) => {
    io.stderr(`ptkit shard merge: ${message}\n`);
    return 1;
  };
  const dir = resolve(io.cwd, dirArg);
  const plan = planPath === undefined ? undefined : readPlan(io, planPath);
  if (typeof plan === "string") return fail(plan);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    return fail(`${dirArg}: ${ioErrorText(e)}`);
  }
  const dones: ShardDone[] = [];
  for (const name of names) {
    if (!/^shard-\d+\.done$/.test(name)) continue;
    let done: ShardDone;
    try {
      done = JSON.parse(readFileSync(join(dir, name), "utf8")) as ShardDone;
    } catch (e) {
      return fail(`${join(dirArg, name)}: unreadable (${(e as Error).message}): run that shard again.`);
    }
    if (done.schema !== DONE_SCHEMA || done.version !== TABLES_VERSION)
      return fail(`${join(dirArg, name)}: not a shard marker of this ptkit (version ${TABLES_VERSION}).`);
    const n = Number(/\d+/.exec(name)![0]);
    const tablesRight =
      typeof done.files === "object" &&
      done.files !== null &&
      SHARD_TABLES.every((t) => done.files[t]?.file === shardFile(n, `${t}.parquet`));
    if (done.shard !== n || typeof done.input !== "string" || typeof done.plan !== "string" || !tablesRight)
      return fail(`${join(dirArg, name)}: damaged marker: run shard ${n} again.`);
    dones.push(done);
  }
  if (dones.length === 0) return fail(`${dirArg}: no shard outputs (shard-N.done) in it.`);
  const id = plan?.id ?? dones[0]!.plan;
  const count = plan?.shards.length ?? dones[0]!.shards;
  const foreign = dones.filter((d) => d.plan !== id);
  if (foreign.length > 0)
    return fail(
      `${dirArg}: shard${foreign.length === 1 ? "" : "s"} ${ranges(foreign.map((d) => d.shard))} ${foreign.length === 1 ? "is" : "are"} from plan ${foreign[0]!.plan}, not ${id}: use a directory per plan.`,
    );
  const have = new Set(dones.map((d) => d.shard));
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !have.has(i));
  if (missing.length > 0)
    return fail(
      `${dirArg}: ${missing.length} of ${count} shards missing: ${ranges(missing)}. Run them (ptkit shard run PLAN --index N -o ${dirArg}), then merge again.`,
    );
  dones.sort((a, b) => a.shard - b.shard);
  // Input by input (all its shards at once: its threads' stacks cross them), so that
  // memory holds one input's shards and results, however many inputs there are.
  const byInput = new Map<string, ShardDone[]>();
  for (const d of dones) byInput.set(d.input, [...(byInput.get(d.input) ?? []), d]);
  const files = new ResultFiles();
  try {
    for (const [input, group] of byInput) {
      const shards: ShardData[] = [];
      for (const d of group) {
        const where = join(dirArg, `shard-${d.shard}.*`);
        let data: ShardData;
        try {
          const tables = SHARD_TABLES.map((t) => {
            const { columns, values } = readParquet(readFileSync(join(dir, d.files[t]!.file)));
            return [t, Object.fromEntries(columns.map((c, i) => [c, values[i]!]))] as const;
          });
          data = shardData(d.shard, d.clock, Object.fromEntries(tables));
        } catch (e) {
          return fail(`${where}: unreadable (${(e as Error).message.split("\n")[0]}). Run that shard again.`);
        }
        const problem = shardProblem(data);
        if (problem !== undefined) return fail(`${where}: damaged: ${problem}. Run that shard again.`);
        shards.push(data);
      }
      const builder = new ResultsBuilder();
      builder.addInput(input, shards, group[0]!.kind === "raw");
      files.add(builder.results());
    }
    files.add({
      shards: {
        columns: [
          { name: "shard", type: "int64" },
          { name: "input", type: "string" },
          { name: "clock", type: "string" },
        ],
        values: [dones.map((d) => d.shard), dones.map((d) => d.input), dones.map((d) => d.clock)],
      },
    });
    await files.database(resolve(io.cwd, out), id);
  } finally {
    files.remove();
  }
  io.stdout(
    `${out}: ${count} shard${count === 1 ? "" : "s"} of plan ${id} over ${byInput.size} input${byInput.size === 1 ? "" : "s"}\n`,
  );
  return 0;
}

/**
 * Result tables on their way into a database: each part written as Parquet files in a
 * temporary directory as it comes, then loaded all at once ({@link database}).
 */
export class ResultFiles {
  private readonly dir = mkdtempSync(join(tmpdir(), "ptkit-merge-"));
  private readonly tables = new Map<string, string[]>();

  /** Write a part of some tables (name → data). */
  add(part: Readonly<Record<string, TableData>>): void {
    for (const [name, t] of Object.entries(part)) {
      const list = this.tables.get(name) ?? [];
      const file = join(this.dir, `${name}-${list.length}.parquet`);
      writeFileSync(file, writeParquet(t.columns, t.values));
      list.push(file);
      this.tables.set(name, list);
    }
  }

  /** The database at `path`, made anew from every part written. */
  async database(path: string, plan: string): Promise<void> {
    await writeDatabase(path, Object.fromEntries(this.tables), {
      schema: TABLES_SCHEMA,
      version: String(TABLES_VERSION),
      plan,
    });
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Numbers as ranges: 0-3, 7, 9-10. */
function ranges(ns: readonly number[]): string {
  const sorted = [...ns].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    parts.push(j === i ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(", ");
}
