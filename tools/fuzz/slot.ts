/**
 * Where cases run: each slot has a worker child that takes a batch of cases over IPC
 * and answers each in turn (no round trip per case), or runs a real ptkit process for
 * a `process` case. A watch kills the child when the current case has used more CPU
 * than the timeout (CPU time, not wall time: the machine may be busy with others),
 * sat for WALL_FACTOR times that in wall time, or grown past the RSS limit.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hasStack } from "./triage.js";
import type { Case, CaseResult } from "./types.js";
import { substitute } from "./worker.js";

const WORKER = fileURLToPath(new URL("./worker.js", import.meta.url));
/** A `process` case runs the command users run: the bundle (`npm run build` makes it). */
export const PTKIT = fileURLToPath(new URL("../../cli/ptkit.js", import.meta.url));
/** V8's heap limit in children, below the RSS limit so heap blow-ups die quickly and clearly. */
const HEAP_MB = 512;
/** A case may take this many times its CPU timeout in wall time (waiting for the CPU). */
const WALL_FACTOR = 8;
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these. */
const TICKS_PER_SECOND = 100;

export interface Limits {
  /** CPU milliseconds a case may use. */
  timeout: number;
  rssBytes: number;
}

/** CPU milliseconds and RSS bytes of a process from /proc; undefined where there is none. */
function usage(pid: number | undefined): { cpu: number; rss: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime is the 14th field, stime the 15th.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SECOND;
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return { cpu, rss: m ? Number(m[1]) * 1024 : 0 };
  } catch {
    return undefined;
  }
}

/** Watches a child from `start()` on; calls `kill` with the verdict when a limit is passed. */
class Watch {
  private cpu0 = 0;
  private wall0 = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number | undefined,
    limits: Limits,
    kill: (why: "hang" | "oom", detail: string) => void,
  ) {
    this.start();
    this.timer = setInterval(() => {
      const u = usage(this.pid);
      const wall = Date.now() - this.wall0;
      if (u && u.rss > limits.rssBytes) kill("oom", `RSS ${(u.rss / 2 ** 20).toFixed(0)} MB`);
      else if (u && u.cpu - this.cpu0 > limits.timeout)
        kill("hang", `${limits.timeout} ms of CPU without a result`);
      else if (wall > (u ? WALL_FACTOR : 1) * limits.timeout) kill("hang", `${wall} ms without a result`);
    }, 100);
  }

  /** A new case starts now. */
  start(): void {
    this.cpu0 = usage(this.pid)?.cpu ?? 0;
    this.wall0 = Date.now();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export function fail(
  c: Case,
  kind: "hang" | "oom" | "crash" | "internal" | "stack",
  detail: string,
): CaseResult {
  return { ok: false, failure: { format: c.format, kind, detail } };
}

const OUT_OF_HEAP = /heap out of memory|Reached heap limit/;

/** Called with each case's result and, where measured, the CPU milliseconds it took. */
export type Each = (c: Case, r: CaseResult, cpuMs?: number) => void;

export class Slot {
  private worker: ChildProcess | undefined;
  private workerErr = "";
  readonly scratch: string;

  constructor(
    readonly id: number,
    scratchRoot: string,
    private readonly limits: Limits,
  ) {
    this.scratch = join(scratchRoot, `slot${id}`);
    mkdirSync(this.scratch, { recursive: true });
  }

  /**
   * The cases' environment: decision graphs kept in the slot's scratch (src/node/
   * graph-store.ts), so that a case may meet a graph an earlier one left, and none in
   * the host's home.
   */
  private env(): NodeJS.ProcessEnv {
    return { ...process.env, PTKIT_CACHE_DIR: join(this.scratch, "graph-cache") };
  }

  private startWorker(): ChildProcess {
    this.workerErr = "";
    const w = fork(WORKER, ["--worker", join(this.scratch, "w")], {
      execArgv: [`--max-old-space-size=${HEAP_MB}`],
      serialization: "advanced",
      stdio: ["ignore", "ignore", "pipe", "ipc"],
      env: this.env(),
    });
    w.on("exit", () => {
      if (this.worker === w) this.worker = undefined;
    });
    w.stderr!.on("data", (d: Buffer) => {
      this.workerErr = (this.workerErr + d.toString()).slice(-4096);
    });
    return w;
  }

  /** Run cases in the worker, in order; `each` gets every result. A killed worker is replaced. */
  async runBatch(cases: readonly Case[], each: Each): Promise<void> {
    let rest = cases.slice();
    while (rest.length > 0) rest = await this.runInWorker(rest, each);
  }

  /** Runs until the batch is done or the worker dies; returns the cases not run. */
  private runInWorker(cases: Case[], each: Each): Promise<Case[]> {
    if (this.worker === undefined) this.worker = this.startWorker();
    const w = this.worker;
    let at = 0;
    return new Promise((done) => {
      let verdict: { why: "hang" | "oom"; detail: string } | undefined;
      const watch = new Watch(w.pid, this.limits, (why, detail) => {
        verdict ??= { why, detail };
        w.kill("SIGKILL");
      });
      const finish = () => {
        watch.stop();
        w.off("message", onMessage);
        w.off("exit", onExit);
        done(cases.slice(at));
      };
      const onMessage = (m: { index: number; result: CaseResult; cpuMs: number }) => {
        const c = cases[at];
        if (c === undefined || m.index !== c.index) return;
        at++;
        watch.start();
        each(c, m.result, m.cpuMs);
        if (at === cases.length) finish();
      };
      const onExit = (code: number | null, signal: string | null) => {
        const c = cases[at++]!;
        if (verdict) each(c, fail(c, verdict.why, verdict.detail));
        else if (OUT_OF_HEAP.test(this.workerErr)) each(c, fail(c, "oom", this.workerErr));
        else each(c, fail(c, "crash", `worker exited (${code ?? signal}): ${this.workerErr}`));
        finish();
      };
      w.on("message", onMessage);
      w.on("exit", onExit);
      for (const c of cases) w.send(c);
    });
  }

  /** Run the real ptkit executable on a case: exit code 70, a stack on stderr, a signal fail. */
  runProcess(c: Case): Promise<CaseResult> {
    const input = c.inputIsDir ? this.scratch : join(this.scratch, c.inputName);
    if (!c.inputIsDir) writeFileSync(input, c.input);
    const argv = substitute(c.argv!, c.stdin ? "-" : input, this.scratch);
    return new Promise((done) => {
      const child = spawn(process.execPath, [`--max-old-space-size=${HEAP_MB}`, PTKIT, ...argv], {
        cwd: c.cwd,
        stdio: [c.stdin ? "pipe" : "ignore", "pipe", "pipe"],
        env: { ...this.env(), HOME: "/nonexistent-home" },
      });
      let stderr = "";
      let verdict: { why: "hang" | "oom"; detail: string } | undefined;
      child.stdout!.resume();
      child.stderr!.on("data", (d: Buffer) => {
        if (stderr.length < 65536) stderr += d.toString();
      });
      if (c.stdin) {
        child.stdin!.on("error", () => {}); // ptkit may stop reading early
        child.stdin!.end(c.input);
      }
      // Node's start-up counts too: twice the CPU of an in-process case.
      const watch = new Watch(
        child.pid,
        { ...this.limits, timeout: 2 * this.limits.timeout },
        (why, detail) => {
          verdict ??= { why, detail };
          child.kill("SIGKILL");
        },
      );
      child.on("close", (code, signal) => {
        watch.stop();
        if (verdict) done(fail(c, verdict.why, verdict.detail));
        else if (OUT_OF_HEAP.test(stderr)) done(fail(c, "oom", stderr));
        else if (signal) done(fail(c, "crash", `killed by ${signal}: ${stderr}`));
        else if (code === 70) done(fail(c, "internal", stderr));
        else if (hasStack(stderr)) done(fail(c, "stack", stderr));
        else done({ ok: true });
      });
    });
  }

  /** Stop the worker. */
  retire(): void {
    this.worker?.kill("SIGKILL");
    this.worker = undefined;
  }
}
