/**
 * The {@link ChunkRunner} of the real process: worker_threads, each running the
 * thread entry the front end names (the CLI's: src/cli/chunk-worker.ts). Each worker
 * decodes one piece at a time; results are handed on in task order, and a new piece is started only while fewer than two per thread wait to be handed on
 * (memory stays bounded however large the trace).
 *
 * Where the caller decodes pieces too (`local`), the threads take the next piece
 * themselves from a counter they share (see {@link SharedRun}): the calling thread
 * cannot post a piece to a worker while it decodes one of its own.
 */
import { availableParallelism } from "node:os";
import type { Worker } from "node:worker_threads";
import type { ChunkRunner, ChunkTask } from "../session/io.js";
import { lazyBuiltin } from "./lazy-builtin.js";

const workerThreads = lazyBuiltin<typeof import("node:worker_threads")>("node:worker_threads");

/**
 * What a worker posts back: a result, or the stack of what went wrong, with the
 * system's error code and message when the system refused (a file that cannot be
 * read): then the command says so in one line, as when the main thread reads.
 */
export type ChunkReply =
  | { index: number; result: unknown }
  | { index: number; error: string; code?: string; message?: string };

/**
 * A run whose threads take their pieces themselves: each worker is posted this once
 * and takes task `Atomics.add(shared, NEXT, 1)` until none is left, replying for each
 * with a {@link ChunkReply}. `shared[DELIVERED]` counts the results handed on: a
 * thread holds on to a piece `limit` or more past it until it grows (bounded memory).
 */
export interface SharedRun {
  tasks: readonly ChunkTask[];
  shared: Int32Array;
  limit: number;
}
export const NEXT = 0;
export const DELIVERED = 1;

export class WorkerPool implements ChunkRunner {
  readonly threads = availableParallelism();
  private readonly workers: Worker[] = [];

  /**
   * @param entry the module each thread runs: it answers the {@link ChunkTask}s it is
   *   posted with {@link ChunkReply}s.
   * @param keepAlive keep the workers between runs (until {@link close}) instead of
   *   ending them after each; they do not keep the process alive.
   * @param minChunk see {@link ChunkRunner.minChunk}.
   */
  constructor(
    private readonly entry: URL,
    private readonly keepAlive = false,
    readonly minChunk?: number,
  ) {}

  async run(
    threads: number,
    tasks: readonly ChunkTask[],
    onResult: (result: unknown, index: number) => void,
    local?: (task: ChunkTask) => unknown,
  ): Promise<void> {
    const n = Math.max(1, Math.min(threads, tasks.length)) - (local === undefined ? 0 : 1);
    while (this.workers.length < n) {
      const w = new (workerThreads().Worker)(this.entry);
      if (this.keepAlive) w.unref();
      this.workers.push(w);
    }
    const workers = this.workers.slice(0, n);
    try {
      await (local === undefined
        ? runOn(workers, tasks, onResult)
        : runShared(workers, tasks, onResult, local));
    } catch (e) {
      // Workers still busy with this run's pieces would answer the next run: end them.
      await this.close();
      throw e;
    }
    if (!this.keepAlive) await this.close();
  }

  /** End the workers. */
  async close(): Promise<void> {
    const all = this.workers.splice(0);
    await Promise.all(all.map((w) => w.terminate()));
  }
}

/**
 * What a run's threads share on this one: results handed on in task order, the
 * workers' replies and failures, and the end of the run.
 */
class Delivery {
  /** Results handed on: all before this task's. */
  delivered = 0;
  over = false;
  private readonly waiting = new Map<number, unknown>();

  constructor(
    private readonly workers: readonly Worker[],
    private readonly count: number,
    private readonly onResult: (result: unknown, index: number) => void,
    private readonly resolve: () => void,
    private readonly reject: (e: unknown) => void,
  ) {}

  /**
   * Listen to the workers: `onReply` after each result was taken (and handed on when
   * its turn came).
   */
  listen(onReply: (w: Worker) => void): void {
    for (const w of this.workers) {
      w.on("message", (reply: ChunkReply) => {
        if (this.over) return;
        if ("error" in reply) {
          this.fail(replyError(reply));
          return;
        }
        if (this.take(reply.index, reply.result)) onReply(w);
      });
      w.on("error", (e) => this.fail(e));
      w.on("exit", (code) => this.fail(new Error(`a decoding thread exited (status ${code})`)));
    }
  }

  /** Take task `index`'s result; hand on those whose turn it is. False once the run is over. */
  take(index: number, result: unknown): boolean {
    const waiting = this.waiting;
    waiting.set(index, result);
    while (waiting.has(this.delivered)) {
      const next = waiting.get(this.delivered);
      waiting.delete(this.delivered);
      try {
        this.onResult(next, this.delivered);
      } catch (e) {
        this.fail(e);
        return false;
      }
      this.delivered++;
    }
    return this.finish();
  }

  /** End the run when every result was handed on; false when it is over. */
  finish(): boolean {
    if (this.over) return false;
    if (this.delivered < this.count) return true;
    this.cleanup();
    this.resolve();
    return false;
  }

  fail(e: unknown): void {
    if (this.over) return;
    this.cleanup();
    this.reject(e);
  }

  private cleanup(): void {
    this.over = true;
    for (const w of this.workers) {
      w.removeAllListeners("message");
      w.removeAllListeners("error");
      w.removeAllListeners("exit");
    }
  }
}

/** The error of a failed piece: the system's (a file that cannot be read), or the thread's stack. */
function replyError(reply: { error: string; code?: string; message?: string }): Error {
  if (reply.code !== undefined) return Object.assign(new Error(reply.message), { code: reply.code });
  const e = new Error("a decoding thread failed");
  e.stack = reply.error;
  return e;
}

function runOn(
  workers: Worker[],
  tasks: readonly ChunkTask[],
  onResult: (result: unknown, index: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const run = new Delivery(workers, tasks.length, onResult, resolve, reject);
    const free = [...workers];
    let next = 0;
    const pump = () => {
      while (next < tasks.length && next - run.delivered < 2 * workers.length && free.length > 0) {
        free.pop()!.postMessage({ index: next, task: tasks[next] });
        next++;
      }
    };
    run.listen((w) => {
      free.push(w);
      pump();
    });
    pump();
    run.finish();
  });
}

/**
 * {@link runOn} with the calling thread decoding pieces too (`local`): the threads
 * take pieces from a shared counter (see {@link SharedRun}). Between its pieces this
 * thread lets the workers' replies in, and hands results on.
 */
function runShared(
  workers: Worker[],
  tasks: readonly ChunkTask[],
  onResult: (result: unknown, index: number) => void,
  local: (task: ChunkTask) => unknown,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const run = new Delivery(workers, tasks.length, onResult, resolve, reject);
    const shared = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    const limit = 2 * (workers.length + 1);
    /** Set while this thread waits for a reply to go on. */
    let idle = false;
    const handed = () => {
      Atomics.store(shared, DELIVERED, run.delivered);
      Atomics.notify(shared, DELIVERED);
    };
    const step = () => {
      if (run.over) return;
      const index = Atomics.load(shared, NEXT);
      if (index >= tasks.length || index - run.delivered >= limit) {
        idle = true; // the next reply goes on
        return;
      }
      if (Atomics.compareExchange(shared, NEXT, index, index + 1) === index) {
        let result: unknown;
        try {
          result = local(tasks[index]!);
        } catch (e) {
          run.fail(e);
          return;
        }
        if (!run.take(index, result)) return;
        handed();
      }
      setImmediate(step); // the replies that came meanwhile first
    };
    run.listen(() => {
      handed();
      if (!idle) return;
      idle = false;
      step();
    });
    if (!run.finish()) return; // no tasks
    const message: SharedRun = { tasks, shared, limit };
    for (const w of workers) w.postMessage(message);
    step();
  });
}
