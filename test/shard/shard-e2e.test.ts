/**
 * Shards end to end, each as its own process, as a job runner runs them: plan a
 * perf.data whose threads migrate between CPUs inside calls, run every shard in
 * parallel and out of order (one killed part way and run again), merge, and compare
 * the per-function totals and edge counts with one `ptkit perf --folded`/`--edges`
 * decode of the same file (and the calls with `ptkit perf --latency`'s counts and
 * durations); `ptkit perf --db` gives the same tables in one command; a
 * raw trace cut at PSBs merges to one `ptkit flow` decode's totals and edges.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { REPO_ROOT } from "../corpus.js";
import { migrateWorkload, rawWorkload } from "./workload.js";

const CLI = join(REPO_ROOT, "dist/cli/ptkit.js");

function ptkit(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env } });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    err += d;
  });
  const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, out, err })),
  );
  return { child, done };
}

async function ok(cwd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await ptkit(cwd, args, env).done;
  assert.equal(r.code, 0, `ptkit ${args.join(" ")}: ${r.err}`);
  return r.out;
}

/** Per function: self and total instructions from folded stacks (the thread name first). */
function foldedTotals(text: string): Map<string, { self: number; total: number }> {
  const m = new Map<string, { self: number; total: number }>();
  const get = (f: string) => m.get(f) ?? m.set(f, { self: 0, total: 0 }).get(f)!;
  for (const line of text.trim().split("\n")) {
    const sp = line.lastIndexOf(" ");
    const w = Number(line.slice(sp + 1));
    const frames = line.slice(0, sp).split(";").slice(1);
    get(frames.at(-1)!).self += w;
    for (const f of new Set(frames)) get(f).total += w;
  }
  return m;
}

/**
 * The merged per-function totals in `dir`'s r.duckdb are one decode's (its folded
 * stacks, written to f.folded; its edges to e.txt), and every one of `insns` is counted.
 */
async function sameTotals(dir: string, decode: string[], insns: number): Promise<void> {
  await ok(dir, ["perf", "-q", ...decode, "--folded", "f.folded", "--edges", "e.txt", "perf.data"]);
  const folded = foldedTotals(readFileSync(join(dir, "f.folded"), "utf8"));
  const sql =
    "select function, sum(self_insns) s, sum(total_insns) t, sum(calls) c from functions group by 1 order by 1";
  const rows = JSON.parse(await ok(dir, ["query", "r.duckdb", "--json", sql])) as {
    function: string;
    s: string | number;
    t: string | number;
  }[];
  // Folded stacks leave out what weighs nothing (the root at the address each thread ends at).
  const merged = new Map(
    rows.filter((r) => Number(r.t) > 0).map((r) => [r.function, { self: Number(r.s), total: Number(r.t) }]),
  );
  assert.deepEqual(merged, folded);
  // Every thread's calls crossed CPUs: the tree is deep, and every instruction is counted.
  let selfSum = 0;
  for (const v of merged.values()) selfSum += v.self;
  assert.equal(selfSum, insns);
  assert.ok(folded.get("F0")!.total === insns);
}

test("shards run as processes, out of order, one killed and re-run, merge to one decode's totals", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-shard-e2e-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const w = migrateWorkload({ cpus: 4, threads: 3, runs: 9, calls: 400, seed: 7 });
  writeFileSync(join(dir, "perf.data"), w.perfData);
  writeFileSync(join(dir, w.binaryName), w.elf);
  const decode = ["--elf", w.binaryName];
  const planned = await ok(dir, [
    "shard",
    "plan",
    "--calls",
    "-o",
    "plan.json",
    "perf.data",
    "--",
    ...decode,
  ]);
  assert.match(planned, /^plan\.json: 4 shards over 1 input /);

  // Shard 2 is killed as soon as it starts; the others run at once, in reverse order.
  const killed = ptkit(dir, ["shard", "run", "plan.json", "-o", "out"], { JOB_COMPLETION_INDEX: "2" });
  killed.child.kill("SIGKILL");
  await killed.done;
  assert.equal(existsSync(join(dir, "out/shard-2.done")), false);
  await Promise.all(
    [3, 1, 0].map((i) => ok(dir, ["shard", "run", "plan.json", "--index", String(i), "-o", "out"])),
  );
  // A merge now refuses, naming the missing shard.
  const early = await ptkit(dir, ["shard", "merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]).done;
  assert.equal(early.code, 1);
  assert.match(early.err, /1 of 4 shards missing: 2\. Run them/);
  await ok(dir, ["shard", "run", "plan.json", "-o", "out"], { JOB_COMPLETION_INDEX: "2" });
  // A re-run writes the same bytes.
  const before = readFileSync(join(dir, "out/shard-1.nodes.parquet"));
  await ok(dir, ["shard", "run", "plan.json", "--index", "1", "-o", "out"]);
  assert.deepEqual(readFileSync(join(dir, "out/shard-1.nodes.parquet")), before);
  assert.match(
    await ok(dir, ["shard", "merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]),
    /4 shards of plan/,
  );

  await sameTotals(dir, decode, w.insns);

  const edges = readFileSync(join(dir, "e.txt"), "utf8").trim().split("\n").sort();
  const edgeSql = `select printf('0x%x 0x%x %d', "from", "to", count) e from edges order by 1`;
  const mergedEdges = (JSON.parse(await ok(dir, ["query", "r.duckdb", "--json", edgeSql])) as { e: string }[])
    .map((r) => r.e)
    .sort();
  assert.deepEqual(mergedEdges, edges);

  // Every call that returned, with its duration: as `ptkit perf --latency` measures them.
  await ok(dir, ["perf", "-q", ...decode, "--latency", "lat.json", "perf.data"]);
  const latency = JSON.parse(readFileSync(join(dir, "lat.json"), "utf8")) as {
    functions: { name: string; calls: number; total: number }[];
  };
  const want = new Map<string, { calls: number; total: number }>();
  for (const f of latency.functions) {
    if (f.calls === 0) continue;
    const w = want.get(f.name) ?? { calls: 0, total: 0 };
    w.calls += f.calls;
    w.total += f.total;
    want.set(f.name, w);
  }
  const callSql = "select function, count(*) n, sum(duration_ns) total from calls group by 1 order by 1";
  const calls = JSON.parse(await ok(dir, ["query", "r.duckdb", "--json", callSql])) as {
    function: string;
    n: number;
    total: number;
  }[];
  assert.deepEqual(calls.map((c) => c.function).sort(), [...want.keys()].sort());
  assert.ok(want.has("[interrupt]"), "interrupted on one CPU, returned on another");
  for (const c of calls) {
    const w = want.get(c.function)!;
    assert.equal(Number(c.n), w.calls, c.function);
    // ptkit latency rounds each duration to the nanosecond.
    assert.ok(Math.abs(Number(c.total) - w.total) <= w.calls, `${c.function}: ${c.total} against ${w.total}`);
  }

  // The one-command form: the same tables.
  assert.match(
    await ok(dir, ["perf", "-q", ...decode, "--db", "one.duckdb", "--db-calls", "perf.data"]),
    /^wrote one\.duckdb: \d+ function rows, \d+ calls, /,
  );
  const callRows = "select * exclude (input, start_ns, duration_ns) from calls order by all";
  assert.equal(
    await ok(dir, ["query", "one.duckdb", callRows]),
    await ok(dir, ["query", "r.duckdb", callRows]),
  );
  // (Times are not compared: the time a run spends in untraced code after its last
  // instruction ends at the switch, which one decode of every stream applies later.)
  const all =
    "select * exclude (input, self_time_ns, total_time_ns) from functions order by process, thread, function";
  assert.equal(await ok(dir, ["query", "one.duckdb", all]), await ok(dir, ["query", "r.duckdb", all]));
});

test("threads taken up at a CPU's first PSB (no TIP.PGE): the shards merge to one decode's totals", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-shard-psb-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Threads 0 and 1 start CPUs 0 and 1, then go on on CPUs 2 and 3, whose streams start there.
  const w = migrateWorkload({ cpus: 4, threads: 2, runs: 6, calls: 200, seed: 3, takeUp: "psb" });
  writeFileSync(join(dir, "perf.data"), w.perfData);
  writeFileSync(join(dir, w.binaryName), w.elf);
  const decode = ["--elf", w.binaryName];
  await ok(dir, ["shard", "plan", "--calls", "-o", "plan.json", "perf.data", "--", ...decode]);
  const shards = JSON.parse(readFileSync(join(dir, "plan.json"), "utf8")).shards.length as number;
  await Promise.all(
    Array.from({ length: shards }, (_, i) =>
      ok(dir, ["shard", "run", "plan.json", "--index", String(i), "-o", "out"]),
    ),
  );
  await ok(dir, ["shard", "merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  await sameTotals(dir, decode, w.insns);
});

test("a raw trace cut at PSBs into shards merges to one decode's totals and edges", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "ptkit-shard-raw-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const w = rawWorkload(60000, 5);
  writeFileSync(join(dir, "t.pt"), w.trace);
  writeFileSync(join(dir, "migrate"), w.elf);
  const planned = await ok(dir, [
    "shard",
    "plan",
    "-o",
    "plan.json",
    "--shard-size",
    "16K",
    "t.pt",
    "--",
    "--elf",
    "migrate",
  ]);
  const shards = Number(/(\d+) shards/.exec(planned)?.[1]);
  assert.ok(shards >= 3, planned);
  await Promise.all(
    Array.from({ length: shards }, (_, i) =>
      ok(dir, ["shard", "run", "plan.json", "--index", String(i), "-o", "out"]),
    ),
  );
  await ok(dir, ["shard", "merge", "out", "--plan", "plan.json", "-o", "r.duckdb"]);
  await ok(dir, [
    "flow",
    "--elf",
    "migrate",
    "--pt",
    "t.pt",
    "-q",
    "--folded",
    "f.folded",
    "--edges",
    "e.txt",
  ]);
  const folded = foldedTotals(readFileSync(join(dir, "f.folded"), "utf8"));
  const sql =
    "select function, sum(self_insns) s, sum(total_insns) t from functions group by 1 having t > 0 order by 1";
  const rows = JSON.parse(await ok(dir, ["query", "r.duckdb", "--json", sql])) as {
    function: string;
    s: number;
    t: number;
  }[];
  assert.deepEqual(new Map(rows.map((r) => [r.function, { self: Number(r.s), total: Number(r.t) }])), folded);
  assert.equal(folded.get("F0")!.total, w.insns);
  const edgeSql = `select printf('0x%x 0x%x %d', "from", "to", count) e from edges order by 1`;
  const merged = (JSON.parse(await ok(dir, ["query", "r.duckdb", "--json", edgeSql])) as { e: string }[]).map(
    (r) => r.e,
  );
  assert.deepEqual(merged.sort(), readFileSync(join(dir, "e.txt"), "utf8").trim().split("\n").sort());
});
