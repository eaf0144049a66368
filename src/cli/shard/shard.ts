/**
 * `ptkit shard plan|run|merge`: decoding cut into shards that run anywhere (a
 * Kubernetes Indexed Job, a Slurm or AWS Batch array job, a loop on one machine),
 * results in Parquet, merged into DuckDB. The plan and tables are the shard layer's
 * (src/shard); this drives them with the perf.data decode and the file system.
 */
import { parseArgs } from "node:util";
import type { SessionIo } from "../../session/io.js";
import { parseSize } from "../numbers.js";
import { mergeShards } from "./merge.js";
import { DEFAULT_SHARD_SIZE, planShards } from "./plan.js";
import { runShard } from "./run.js";

export const SHARD_HELP = `usage: ptkit shard plan [-o PLAN] [--shard-size SIZE] [--calls] [--] INPUT... [-- DECODE-OPTIONS...]
       ptkit shard run PLAN [--index N] [-o DIR]
       ptkit shard merge DIR [--plan PLAN] -o DB

Decode many recordings on many machines: plan shards, run each anywhere, merge.

  plan    list the shards of the inputs into PLAN (default plan.json): each
          Intel PT stream of a perf.data file (per CPU or per thread) is a
          shard; a raw trace is cut at PSBs about SIZE bytes apart (default
          64M; e.g. 16M, 1G). DECODE-OPTIONS after a second '--' go to every
          shard's decode, as 'ptkit perf' takes them for perf.data files
          (--kcore, --vmlinux, --symfs, --elf, ...) and 'ptkit flow' for raw
          traces (--elf FILE:BASE, --cpu, ...: plan those apart).
          Relative input paths are taken relative to PLAN's directory.
          --calls: a row per call that returned, too (the calls table:
          function, caller, depth, start and duration; as many rows as calls).
  run     decode shard N of PLAN into DIR (default .): shard-N.<table>.parquet
          files, then shard-N.done. N defaults to the array index of the job
          runner: JOB_COMPLETION_INDEX (Kubernetes Indexed Job),
          SLURM_ARRAY_TASK_ID, AWS_BATCH_JOB_ARRAY_INDEX. A run killed half way
          leaves no shard-N.done; running it again writes the same bytes.
  merge   check that every shard of the plan is in DIR, stitch call stacks
          across shards, and write the tables (functions, edges, gaps, shards,
          meta) to the DuckDB database DB. Query it with 'ptkit query'.

examples:
  ptkit shard plan -o plan.json host*/perf.data -- --kcore kcore_dir
  for i in $(seq 0 11); do ptkit shard run plan.json --index $i -o out; done
  ptkit shard merge out --plan plan.json -o results.duckdb
  ptkit query results.duckdb "select function, sum(self_insns) s from functions group by 1 order by s desc limit 10"
`;

/** Run `ptkit shard` with `argv`. */
export async function runShardCommand(argv: readonly string[], io: SessionIo): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === undefined || verb === "--help" || verb === "-h" || verb === "help") {
    io.stdout(SHARD_HELP);
    return verb === undefined ? 1 : 0;
  }
  const fail = (message: string) => {
    io.stderr(`ptkit shard ${verb}: ${message}\nUse --help or -h for help.\n`);
    return 1;
  };
  if (verb === "plan") {
    // Inputs up to a second '--' (a first one may end the options); decode options after it.
    const cut = rest.indexOf("--");
    const own = cut < 0 ? rest : rest.slice(0, cut);
    let after = cut < 0 ? [] : rest.slice(cut + 1);
    const p = parse(own, {
      output: { type: "string", short: "o" },
      "shard-size": { type: "string" },
      calls: { type: "boolean" },
    });
    if (typeof p === "string") return fail(p);
    const sizeText = p.values["shard-size"] as string | undefined;
    const size = sizeText === undefined ? DEFAULT_SHARD_SIZE : parseSize(sizeText);
    if (size === undefined || size < 1) return fail(`--shard-size: bad size: ${sizeText} (e.g. 64M, 1G).`);
    let inputs = p.positionals;
    if (inputs.length === 0 && cut >= 0) {
      // `plan -- INPUT... -- OPTIONS`.
      const second = after.indexOf("--");
      inputs = second < 0 ? after : after.slice(0, second);
      after = second < 0 ? [] : after.slice(second + 1);
    }
    if (inputs.length === 0) return fail("no inputs.");
    return planShards(io, inputs, after, (p.values.output as string | undefined) ?? "plan.json", {
      shardSize: size,
      calls: p.values.calls === true,
    });
  }
  if (verb === "run") {
    const p = parse(rest, { index: { type: "string" }, output: { type: "string", short: "o" } });
    if (typeof p === "string") return fail(p);
    if (p.positionals.length !== 1) return fail("expected one plan file.");
    const index = shardIndex(p.values.index as string | undefined);
    if (typeof index === "string") return fail(index);
    return await runShard(io, p.positionals[0]!, index, (p.values.output as string | undefined) ?? ".");
  }
  if (verb === "merge") {
    const p = parse(rest, { plan: { type: "string" }, output: { type: "string", short: "o" } });
    if (typeof p === "string") return fail(p);
    if (p.positionals.length !== 1) return fail("expected one directory of shard outputs.");
    const out = p.values.output as string | undefined;
    if (out === undefined) return fail("-o DB: where to write the database.");
    return mergeShards(io, p.positionals[0]!, p.values.plan as string | undefined, out);
  }
  return fail(`unknown subcommand '${verb}': plan, run or merge.`);
}

function parse(
  args: readonly string[],
  options: Record<string, { type: "string" | "boolean"; short?: string }>,
): { values: Record<string, unknown>; positionals: string[] } | string {
  try {
    return parseArgs({ args: [...args], options, allowPositionals: true });
  } catch (e) {
    return (e as Error).message;
  }
}

/** The environment variables of job runners that hold an array job's index. */
const INDEX_VARIABLES = ["JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID", "AWS_BATCH_JOB_ARRAY_INDEX"];

/** The shard to run: --index, else a job runner's array index; or an error message. */
export function shardIndex(
  option: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): number | string {
  let text = option;
  let from = "--index";
  if (text === undefined) {
    const name = INDEX_VARIABLES.find((v) => env[v] !== undefined && env[v] !== "");
    if (name === undefined) return `--index N: which shard (or set ${INDEX_VARIABLES.join(", ")}).`;
    text = env[name]!;
    from = name;
  }
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text))) return `${from}: bad shard index: ${text}.`;
  return Number(text);
}
