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
 * (raw event insn block elf perf perf-pipe pevent exec-jsonl exec-binary msr cli),
 * --seed S (default: from the clock, printed), --out DIR (default fuzz-out),
 * --timeout MS per case (default 5000), --rss MB limit (default 768), --jobs N (1-2).
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
import { type ChildProcess, fork, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { CORPUS_DIR, REPO_ROOT } from "../../test/corpus.js";
import { makeCase } from "./cases.js";
import { FORMATS, type Format, loadSeeds } from "./seeds.js";
import { type Failure, hasStack, signatureOf, slug, Triage } from "./triage.js";
import type { Case, CaseResult } from "./types.js";
import { substitute } from "./worker.js";

const WORKER = fileURLToPath(new URL("./worker.js", import.meta.url));
const PTKIT = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const RUN = fileURLToPath(import.meta.url);
/** V8's heap limit in children, below the RSS limit so heap blow-ups die quickly and clearly. */
const HEAP_MB = 512;

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

/** Resident set size of a process (Linux /proc), or 0 where unknown. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs one case at a time: in its worker child, or (process cases) as a ptkit process. */
class Slot {
  private worker: ChildProcess | undefined;
  private workerErr = "";
  readonly scratch: string;

  constructor(
    readonly id: number,
    private readonly opts: Options,
  ) {
    this.scratch = join(opts.out, ".scratch", `slot${id}`);
    mkdirSync(this.scratch, { recursive: true });
  }

  run(c: Case): Promise<CaseResult> {
    return c.process ? this.runProcess(c) : this.runInWorker(c);
  }

  private startWorker(): ChildProcess {
    this.workerErr = "";
    const w = fork(WORKER, ["--worker", join(this.scratch, "w")], {
      execArgv: [`--max-old-space-size=${HEAP_MB}`],
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    w.on("exit", () => {
      if (this.worker === w) this.worker = undefined;
    });
    w.stderr!.on("data", (d: Buffer) => {
      this.workerErr = (this.workerErr + d.toString()).slice(-4096);
    });
    return w;
  }

  private runInWorker(c: Case): Promise<CaseResult> {
    if (this.worker === undefined) this.worker = this.startWorker();
    const w = this.worker;
    return new Promise((done) => {
      let verdict: "hang" | "oom" | undefined;
      const finish = (r: CaseResult) => {
        clearTimeout(timer);
        clearInterval(poll);
        w.off("message", onMessage);
        w.off("exit", onExit);
        done(r);
      };
      const kill = (why: "hang" | "oom") => {
        verdict = why;
        w.kill("SIGKILL");
      };
      const onMessage = (m: { index: number; result: CaseResult; rss: number }) => {
        if (m.index !== c.index) return;
        if (m.rss > this.opts.rssBytes) {
          this.retire();
          finish(fail(c, "oom", `RSS ${(m.rss / 2 ** 20).toFixed(0)} MB after the case`));
        } else finish(m.result);
      };
      const onExit = (code: number | null, signal: string | null) => {
        if (verdict)
          finish(
            fail(
              c,
              verdict,
              `${verdict === "hang" ? `no result in ${this.opts.timeout} ms` : "RSS over the limit"}`,
            ),
          );
        else if (/heap out of memory|Reached heap limit/.test(this.workerErr))
          finish(fail(c, "oom", this.workerErr));
        else finish(fail(c, "crash", `worker exited (${code ?? signal}): ${this.workerErr}`));
      };
      const timer = setTimeout(() => kill("hang"), this.opts.timeout);
      const poll = setInterval(() => {
        if (rssOf(w.pid) > this.opts.rssBytes) kill("oom");
      }, 100);
      w.on("message", onMessage);
      w.on("exit", onExit);
      w.send(c);
    });
  }

  private runProcess(c: Case): Promise<CaseResult> {
    const input = c.inputIsDir ? this.scratch : join(this.scratch, c.inputName);
    if (!c.inputIsDir) writeFileSync(input, c.input);
    const argv = substitute(c.argv!, c.stdin ? "-" : input, this.scratch);
    return new Promise((done) => {
      const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, PTKIT, ...argv], {
        cwd: c.cwd,
        stdio: [c.stdin ? "pipe" : "ignore", "pipe", "pipe"],
        env: { ...process.env, HOME: "/nonexistent-home" },
      });
      let stderr = "";
      let verdict: "hang" | "oom" | undefined;
      child.stdout!.resume();
      child.stderr!.on("data", (d: Buffer) => {
        if (stderr.length < 65536) stderr += d.toString();
      });
      if (c.stdin) {
        child.stdin!.on("error", () => {}); // ptkit may stop reading early
        child.stdin!.end(c.input);
      }
      const timer = setTimeout(() => {
        verdict = "hang";
        child.kill("SIGKILL");
      }, this.opts.timeout);
      const poll = setInterval(() => {
        if (rssOf(child.pid) > this.opts.rssBytes) {
          verdict = "oom";
          child.kill("SIGKILL");
        }
      }, 100);
      child.on("close", (code, signal) => {
        clearTimeout(timer);
        clearInterval(poll);
        if (verdict)
          done(
            fail(
              c,
              verdict,
              verdict === "hang" ? `no exit in ${this.opts.timeout} ms` : "RSS over the limit",
            ),
          );
        else if (/heap out of memory|Reached heap limit/.test(stderr)) done(fail(c, "oom", stderr));
        else if (signal) done(fail(c, "crash", `killed by ${signal}: ${stderr}`));
        else if (code === 70) done(fail(c, "internal", stderr));
        else if (hasStack(stderr)) done(fail(c, "stack", stderr));
        else done({ ok: true });
      });
    });
  }

  /** Stop the worker (after a case left it too big). */
  retire(): void {
    this.worker?.kill("SIGKILL");
    this.worker = undefined;
  }
}

function fail(c: Case, kind: Failure["kind"], detail: string): CaseResult {
  return { ok: false, failure: { format: c.format, kind, detail } };
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
  const slot = new Slot(0, { ...o, out: join(dir, ".replay") });
  const r = await slot.run(c);
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
  const seeds = loadSeeds(CORPUS_DIR, REPO_ROOT);
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
  /** Milliseconds per format, to see where the time goes. */
  const spent = new Map<string, number>();
  const deadline = Date.now() + o.seconds * 1000;
  let next = 0;
  const slots = Array.from({ length: o.jobs }, (_, i) => new Slot(i, o));
  await Promise.all(
    slots.map(async (slot) => {
      while (Date.now() < deadline && next < o.cases) {
        const c = makeCase(seeds, formats, o.seed, next++);
        const start = Date.now();
        const r = await slot.run(c);
        ran.set(c.format, (ran.get(c.format) ?? 0) + 1);
        spent.set(c.format, (spent.get(c.format) ?? 0) + Date.now() - start);
        if (r.ok) continue;
        failed.set(c.format, (failed.get(c.format) ?? 0) + 1);
        const { distinct, isNew } = triage.add(r.failure);
        if (!isNew) continue;
        const repro = saveFailure(join(o.out, slug(distinct.signature)), c, r.failure);
        console.log(
          `FAIL [${c.format}] ${distinct.signature}\n  case ${c.index}: ${c.seed}: ${c.what.join(", ")}\n  repro: ${repro}`,
        );
      }
      slot.retire();
    }),
  );
  rmSync(join(o.out, ".scratch"), { recursive: true, force: true });
  const total = [...ran.values()].reduce((a, b) => a + b, 0);
  console.log(`\nfuzz: ${total} cases in ${o.seconds} s (seed ${o.seed}); per format (cases/failed):`);
  console.log(`  ${formats.map((f) => `${f} ${ran.get(f) ?? 0}/${failed.get(f) ?? 0}`).join(", ")}`);
  const ms = (f: string) => ((spent.get(f) ?? 0) / Math.max(1, ran.get(f) ?? 0)).toFixed(0);
  console.log(`  mean ms per case: ${formats.map((f) => `${f} ${ms(f)}`).join(", ")}`);
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

const options = parseOptions(process.argv.slice(2));
if (options.replay !== undefined) process.exitCode = await replay(options.replay, options);
else process.exitCode = await campaign(options);
