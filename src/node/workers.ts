/**
 * The {@link ChunkRunner} of the real process: worker_threads, each running the
 * thread entry the front end names (the CLI's: src/cli/chunk-worker.ts). Each worker
 * decodes one piece at a time; results are handed on in task order, and a new piece is started only while fewer than two per thread wait to be handed on
 * (memory stays bounded however large the trace).
 */
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { ChunkRunner, ChunkTask } from "../session/io.js";

/**
 * What a worker posts back: a result, or the stack of what went wrong, with the
 * system's error code and message when the system refused (a file that cannot be
 * read): then the command says so in one line, as when the main thread reads.
 */
export type ChunkReply =
  | { index: number; result: unknown }
  | { index: number; error: string; code?: string; message?: string };

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
  ): Promise<void> {
    const n = Math.max(1, Math.min(threads, tasks.length));
    while (this.workers.length < n) {
      const w = new Worker(this.entry);
      if (this.keepAlive) w.unref();
      this.workers.push(w);
    }
    const workers = this.workers.slice(0, n);
    try {
      await runOn(workers, tasks, onResult);
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

function runOn(
  workers: Worker[],
  tasks: readonly ChunkTask[],
  onResult: (result: unknown, index: number) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const free = [...workers];
    const waiting = new Map<number, unknown>();
    let next = 0;
    let delivered = 0;
    let over = false;
    const cleanup = () => {
      over = true;
      for (const w of workers) {
        w.removeAllListeners("message");
        w.removeAllListeners("error");
        w.removeAllListeners("exit");
      }
    };
    const fail = (e: unknown) => {
      if (over) return;
      cleanup();
      reject(e);
    };
    const pump = () => {
      while (next < tasks.length && next - delivered < 2 * workers.length && free.length > 0) {
        free.pop()!.postMessage({ index: next, task: tasks[next] });
        next++;
      }
      if (delivered === tasks.length) {
        cleanup();
        resolve();
      }
    };
    for (const w of workers) {
      w.on("message", (reply: ChunkReply) => {
        if (over) return;
        free.push(w);
        if ("error" in reply) {
          if (reply.code !== undefined) {
            fail(Object.assign(new Error(reply.message), { code: reply.code }));
            return;
          }
          const e = new Error("a decoding thread failed");
          e.stack = reply.error;
          fail(e);
          return;
        }
        waiting.set(reply.index, reply.result);
        while (waiting.has(delivered)) {
          const result = waiting.get(delivered);
          waiting.delete(delivered);
          try {
            onResult(result, delivered);
          } catch (e) {
            fail(e);
            return;
          }
          delivered++;
        }
        pump();
      });
      w.on("error", fail);
      w.on("exit", (code) => fail(new Error(`a decoding thread exited (status ${code})`)));
    }
    pump();
  });
}
