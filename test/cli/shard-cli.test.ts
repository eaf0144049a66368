/**
 * `ptkit shard` and `ptkit query` on bad input: each refusal is one line naming the
 * file and what to do, exit 1, no stack trace (plans that are not plans or were
 * edited, shards out of range, inputs that changed, output directories with shards
 * missing, of another plan or damaged, SQL errors); the shard index from the job
 * runners' variables.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runQuery } from "../../src/cli/query/query.js";
import { runShardCommand, shardIndex } from "../../src/cli/shard/shard.js";
import { captureIo } from "../conformance/ptt.js";
import { migrateWorkload } from "../shard/workload.js";

function setup(t: { after: (f: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-shard-cli-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const w = migrateWorkload({ cpus: 2, threads: 2, runs: 3, calls: 20, seed: 3 });
  writeFileSync(join(dir, "perf.data"), w.perfData);
  writeFileSync(join(dir, w.binaryName), w.elf);
  return dir;
}

async function run(dir: string, argv: string[]) {
  const io = captureIo(dir);
  const code = await runShardCommand(argv, io);
  return { code, out: io.out.join(""), err: io.err.join("") };
}

/** One line, no stack trace. */
function oneLine(err: string, pattern: RegExp): void {
  assert.match(err, pattern);
  assert.doesNotMatch(err, /\n {4}at /);
}

test("the shard index: --index, else the job runners' variables, in that order", () => {
  assert.equal(shardIndex("3", { JOB_COMPLETION_INDEX: "5" }), 3);
  assert.equal(shardIndex(undefined, { JOB_COMPLETION_INDEX: "5", SLURM_ARRAY_TASK_ID: "6" }), 5);
  assert.equal(shardIndex(undefined, { SLURM_ARRAY_TASK_ID: "6" }), 6);
  assert.equal(shardIndex(undefined, { AWS_BATCH_JOB_ARRAY_INDEX: "7" }), 7);
  assert.match(shardIndex(undefined, {}) as string, /--index N: which shard \(or set JOB_COMPLETION_INDEX/);
  assert.match(shardIndex("-1", {}) as string, /--index: bad shard index: -1/);
  assert.match(shardIndex(undefined, { SLURM_ARRAY_TASK_ID: "x" }) as string, /SLURM_ARRAY_TASK_ID: bad/);
});

test("plan: inputs that are missing or neither perf.data nor a trace are refused by name", async (t) => {
  const dir = setup(t);
  writeFileSync(join(dir, "raw.pt"), new Uint8Array([0x02, 0x82, 0x02, 0x82]));
  let r = await run(dir, ["plan", "-o", "p.json", "nope.data"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /^ptkit shard plan: failed to open nope\.data: /);
  r = await run(dir, ["plan", "-o", "p.json", "raw.pt"]);
  assert.equal(r.code, 1);
  oneLine(
    r.err,
    /^ptkit shard plan: raw\.pt: neither a perf\.data file nor an Intel PT trace \(no PSB near its start\)\n$/,
  );
  r = await run(dir, ["plan", "-o", "p.json", "migrate"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /^ptkit shard plan: migrate is an ELF file \(a program or library\), not a trace: /);
  r = await run(dir, ["plan", "--shard-size", "lots", "perf.data"]);
  oneLine(r.err, /--shard-size: bad size: lots \(e\.g\. 64M, 1G\)\./);
  r = await run(dir, ["plan"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /no inputs/);
  r = await run(dir, ["frobnicate"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /unknown subcommand 'frobnicate'/);
});

test("run: bad plans, shards out of range and changed inputs are refused", async (t) => {
  const dir = setup(t);
  assert.equal((await run(dir, ["plan", "-o", "plan.json", "perf.data", "--", "--elf", "migrate"])).code, 0);
  writeFileSync(join(dir, "bad.json"), "{ not json");
  let r = await run(dir, ["run", "bad.json", "--index", "0"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /^ptkit shard run: bad\.json: not JSON/);
  const edited = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8"));
  edited.options = [];
  writeFileSync(join(dir, "edited.json"), JSON.stringify(edited));
  r = await run(dir, ["run", "edited.json", "--index", "0"]);
  oneLine(r.err, /edited\.json: its id \w+ does not match its contents/);
  r = await run(dir, ["run", "plan.json", "--index", "9"]);
  oneLine(r.err, /plan\.json has 2 shards \(0 to 1\): no shard 9\./);
  writeFileSync(join(dir, "perf.data"), new Uint8Array(10));
  r = await run(dir, ["run", "plan.json", "--index", "0", "-o", "out"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /shard 0: .*perf\.data has 10 bytes, the plan says \d+: plan it again\./);
});

test("merge: missing, foreign and damaged shards are refused, naming them", async (t) => {
  const dir = setup(t);
  await run(dir, ["plan", "-o", "plan.json", "perf.data", "--", "--elf", "migrate"]);
  await run(dir, ["plan", "-o", "other.json", "perf.data"]);
  let r = await run(dir, ["merge", "out", "-o", "r.duckdb"]);
  oneLine(r.err, /^ptkit shard merge: out: /);
  assert.equal((await run(dir, ["run", "plan.json", "--index", "1", "-o", "out"])).code, 0);
  r = await run(dir, ["merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  assert.equal(r.code, 1);
  oneLine(r.err, /out: 1 of 2 shards missing: 0\. Run them/);
  assert.equal((await run(dir, ["run", "other.json", "--index", "0", "-o", "out"])).code, 0);
  r = await run(dir, ["merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  oneLine(r.err, /out: shard 0 is from plan \w+, not \w+: use a directory per plan\./);
  assert.equal((await run(dir, ["run", "plan.json", "--index", "0", "-o", "out"])).code, 0);
  writeFileSync(join(dir, "out/shard-0.nodes.parquet"), "PAR1 not really");
  r = await run(dir, ["merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  oneLine(r.err, /out\/shard-0\.\*: unreadable \(.*\)\. Run that shard again\./);
  writeFileSync(join(dir, "out/shard-0.done"), "{}");
  r = await run(dir, ["merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  oneLine(r.err, /out\/shard-0\.done: not a shard marker of this ptkit/);
  assert.equal((await run(dir, ["run", "plan.json", "--index", "0", "-o", "out"])).code, 0);
  r = await run(dir, ["merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^r\.duckdb: 2 shards of plan \w+ over 1 input\n$/);

  const io = captureIo(dir);
  assert.equal(await runQuery(["r.duckdb", "select count(*) n, sum(self_insns) s from functions"], io), 0);
  assert.match(io.out.join(""), /^n,s\n\d+,\d+\n$/);
  const bad = captureIo(dir);
  assert.equal(await runQuery(["r.duckdb", "select nothing from nowhere"], bad), 1);
  oneLine(bad.err.join(""), /^ptkit query: r\.duckdb: .*nowhere.*\n$/);
  const missing = captureIo(dir);
  assert.equal(await runQuery(["none.duckdb", "select 1"], missing), 1);
  oneLine(missing.err.join(""), /^ptkit query: failed to open none\.duckdb/);
  const csv = captureIo(dir);
  await runQuery(["r.duckdb", `select 'a,b' x, 'say "hi"' y, null z, 12345678901234567890::ubigint u`], csv);
  assert.equal(csv.out.join(""), 'x,y,z,u\n"a,b","say ""hi""",,12345678901234567890\n');
});
