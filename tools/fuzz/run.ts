/**
 * ptkit's fuzzer: mutates corpus seeds of every input format and runs them through
 * ptkit in child processes, keeping each distinct failure with a one-line repro.
 *
 *   npm run fuzz -- --seconds 90                 # every format, 90 s, 2 workers
 *   npm run fuzz -- --seconds 30 --format perf,insn --seed 7 --out /tmp/fz
 *   node dist/tools/fuzz/run.js --replay fuzz-out/<signature>   # run a saved case again
 *                                 (in a worker child, or as a process if it was one)
 *
 * Options: --seconds N (default 60), --cases N (stop after N cases), --format F[,F...]
 * (raw event insn block elf perf perf-pipe pevent exec-jsonl exec-binary exec-lackey msr
 * cli),
 * --seed S (default: from the clock, printed), --out DIR (default fuzz-out),
 * --timeout MS of CPU per case (default 5000; a real process gets twice that, wall time
 * at most 8 times), --rss MB limit (default 768), --jobs N (1-2).
 * Seeds come from $PTKIT_CORPUS or ../shared/corpus, plus sample/.
 *
 * A case fails when ptkit exits 70 (internal error) or prints a JS stack, a library
 * call throws something other than its layer's error class, it runs past the timeout
 * (hang), its process goes over the RSS limit or out of V8 heap (oom), or its output
 * changes when only bytes past the input's declared end change (a raw `file:0x0-0xTO`
 * range; bytes appended to a perf.data file). Failures are grouped by signature (error
 * type and top stack frame, or kind and format); the first of each goes to
 * OUT/<signature>/ with its input, case.json and repro.txt. Exit status 1 when any
 * case failed, so CI fails on a found failure.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CORPUS_DIR, REPO_ROOT } from "../../test/corpus.js";
import { makeCase } from "./cases.js";
import { FORMATS, type Format, loadSeeds } from "./seeds.js";
import { PTKIT, Slot } from "./slot.js";
import { type Failure, signatureOf, slug, Triage } from "./triage.js";
import type { Case, CaseResult } from "./types.js";
import { substitute } from "./worker.js";

const RUN = fileURLToPath(import.meta.url);
/** At most this share of the slots' time goes to real ptkit processes (the rest are skipped). */
const PROCESS_SHARE = 0.2;

/** Cases sent to a worker at once. */
const BATCH = 16;

interface Options {
  seconds: number;
  cases: number;
  formats: Format[];
  seed: number;
  out: string;
  timeout: number;
  rssBytes: number;
  jobs: number;
}

function parseOptions(argv: string[]): Options & { replay: string | undefined } {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: "string" },
      cases: { type: "string" },
      format: { type: "string" },
      seed: { type: "string" },
      out: { type: "string" },
      timeout: { type: "string" },
      rss: { type: "string" },
      jobs: { type: "string" },
      replay: { type: "string" },
    },
    strict: true,
  });
  const formats = (values.format?.split(",") ?? [...FORMATS]) as Format[];
  for (const f of formats)
    if (!FORMATS.includes(f)) throw new Error(`unknown format '${f}' (${FORMATS.join(", ")})`);
  for (const [name, v] of Object.entries({ seconds: values.seconds, cases: values.cases, seed: values.seed }))
    if (v !== undefined && !(Number(v) >= 0)) throw new Error(`--${name}: '${v}' is not a number`);
  return {
    seconds: Number(values.seconds ?? 60),
    cases: Number(values.cases ?? Infinity),
    formats,
    seed: values.seed === undefined ? Date.now() % 0x7fffffff : Number(values.seed),
    out: resolve(values.out ?? join(REPO_ROOT, "fuzz-out")),
    timeout: Number(values.timeout ?? 5000),
    rssBytes: Number(values.rss ?? 768) * 1024 * 1024,
    jobs: Math.min(2, Math.max(1, Number(values.jobs ?? 2))),
    replay: values.replay,
  };
}

/** Shell-quote one argument. */
function q(s: string): string {
  return /^[\w./:=,+@%-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}

/** Save a failing case; returns its one-line repro. */
function saveFailure(dir: string, c: Case, f: Failure): string {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, c.inputName), c.input);
  if (c.variant) writeFileSync(join(dir, `${c.inputName}.variant`), c.variant);
  const { input: _i, variant: _v, ...meta } = c;
  writeFileSync(join(dir, "case.json"), `${JSON.stringify({ ...meta, failure: f }, null, 1)}\n`);
  const replay = `node ${q(RUN)} --replay ${q(dir)}`;
  let repro = replay;
  // A plain ptkit command where one run shows it (past-end needs the two runs of the replay).
  if (c.argv && f.kind !== "past-end") {
    const input = c.inputIsDir ? dir : join(dir, c.inputName);
    const argv = substitute(c.argv, c.stdin ? "-" : input, "/tmp");
    const timeout = f.kind === "hang" || f.kind === "oom" ? "timeout 60 " : "";
    repro = `cd ${q(c.cwd)} && ${timeout}node ${q(PTKIT)} ${argv.map(q).join(" ")}${c.stdin ? ` < ${q(join(dir, c.inputName))}` : ""}`;
  }
  writeFileSync(join(dir, "repro.txt"), `${repro}\n# or: ${replay}\n`);
  writeFileSync(join(dir, "detail.txt"), `${f.detail}\n`);
  return repro;
}

/** Run a saved case again, in a worker child with the timeout and RSS limit, and say what happens. */
async function replay(dir: string, o: Options): Promise<number> {
  const meta = JSON.parse(readFileSync(join(dir, "case.json"), "utf8")) as Case;
  const c: Case = { ...meta, input: new Uint8Array(readFileSync(join(dir, meta.inputName))) };
  const variant = join(dir, `${meta.inputName}.variant`);
  if (existsSync(variant)) c.variant = new Uint8Array(readFileSync(variant));
  const slot = new Slot(0, join(dir, ".replay"), o);
  let r: CaseResult = { ok: true };
  if (c.process) r = await slot.runProcess(c);
  else
    await slot.runBatch([c], (_, result) => {
      r = result;
    });
  slot.retire();
  rmSync(join(dir, ".replay"), { recursive: true, force: true });
  if (r.ok) {
    console.log(`${dir}: passes now`);
    return 0;
  }
  console.log(`${dir}: ${signatureOf(r.failure)}\n${r.failure.detail}`);
  return 1;
}

async function campaign(o: Options): Promise<number> {
  const seeds = await loadSeeds(CORPUS_DIR, REPO_ROOT);
  const formats = o.formats.filter((f) => seeds[f].length > 0);
  const missing = o.formats.filter((f) => seeds[f].length === 0);
  console.log(
    `fuzz: seed ${o.seed}, ${o.seconds} s, formats ${formats.map((f) => `${f}(${seeds[f].length} seeds)`).join(" ")}` +
      `${missing.length ? `; no seeds for ${missing.join(", ")} (corpus ${CORPUS_DIR})` : ""}`,
  );
  if (formats.length === 0) return 1;
  mkdirSync(o.out, { recursive: true });
  const triage = new Triage();
  const ran = new Map<string, number>();
  const failed = new Map<string, number>();
  /** CPU milliseconds per format (wall time for real processes), to see where the time goes. */
  const spent = new Map<string, number>();
  const begin = Date.now();
  const deadline = begin + o.seconds * 1000;
  let processMs = 0;
  const onlyProcesses = formats.every((f) => f === "cli");
  let skipped = 0;
  let next = 0;
  const scratch = join(o.out, ".scratch");
  const slots = Array.from({ length: o.jobs }, (_, i) => new Slot(i, scratch, o));
  const record = (c: Case, r: CaseResult, ms: number) => {
    ran.set(c.format, (ran.get(c.format) ?? 0) + 1);
    spent.set(c.format, (spent.get(c.format) ?? 0) + ms);
    if (r.ok) return;
    failed.set(c.format, (failed.get(c.format) ?? 0) + 1);
    const { distinct, isNew } = triage.add(r.failure);
    if (!isNew) return;
    const repro = saveFailure(join(o.out, slug(distinct.signature)), c, r.failure);
    console.log(
      `FAIL [${c.format}] ${distinct.signature}\n  case ${c.index}: ${c.seed}: ${c.what.join(", ")}\n  repro: ${repro}`,
    );
  };
  await Promise.all(
    slots.map(async (slot) => {
      while (Date.now() < deadline && next < o.cases) {
        const batch: Case[] = [];
        while (batch.length < BATCH && next < o.cases) batch.push(makeCase(seeds, formats, o.seed, next++));
        await slot.runBatch(
          batch.filter((c) => !c.process),
          (c, r, cpuMs) => record(c, r, cpuMs ?? 0),
        );
        for (const c of batch.filter((c) => c.process)) {
          // A Node start-up costs as much as hundreds of in-process cases: cap their share.
          const share = onlyProcesses ? 1 : PROCESS_SHARE;
          if (processMs > share * o.jobs * (Date.now() - begin) || Date.now() >= deadline) {
            skipped++;
            continue;
          }
          const start = Date.now();
          record(c, await slot.runProcess(c), Date.now() - start);
          processMs += Date.now() - start;
        }
      }
      slot.retire();
    }),
  );
  rmSync(join(o.out, ".scratch"), { recursive: true, force: true });
  const total = [...ran.values()].reduce((a, b) => a + b, 0);
  console.log(
    `\nfuzz: ${total} cases in ${((Date.now() - begin) / 1000).toFixed(0)} s (seed ${o.seed}; ` +
      `${skipped} real-process cases skipped for time); per format (cases/failed):`,
  );
  console.log(`  ${formats.map((f) => `${f} ${ran.get(f) ?? 0}/${failed.get(f) ?? 0}`).join(", ")}`);
  const ms = (f: string) => ((spent.get(f) ?? 0) / Math.max(1, ran.get(f) ?? 0)).toFixed(0);
  console.log(`  mean ms per case (CPU; cli: wall): ${formats.map((f) => `${f} ${ms(f)}`).join(", ")}`);
  if (triage.size === 0) {
    console.log("fuzz: no failures");
    return 0;
  }
  console.log(`fuzz: ${triage.size} distinct failure(s), saved under ${o.out}:`);
  for (const d of triage.list()) {
    const counts = [...d.counts].map(([f, n]) => `${f} ${n}`).join(", ");
    console.log(
      `  ${d.signature}  [${counts}]\n    repro: ${readFileSync(join(o.out, slug(d.signature), "repro.txt"), "utf8").split("\n")[0]}`,
    );
  }
  return 1;
}

let options: ReturnType<typeof parseOptions> | undefined;
try {
  options = parseOptions(process.argv.slice(2));
} catch (e) {
  console.error(`fuzz: ${(e as Error).message}`);
  process.exitCode = 2;
}
if (options?.replay !== undefined) process.exitCode = await replay(options.replay, options);
else if (options) process.exitCode = await campaign(options);
