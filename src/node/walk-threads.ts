/**
 * `ptkit perf`'s walk threads in the real process (SessionIo.perfWalks): each stream's
 * walk on a worker thread, which runs the same perf command up to its walk of that
 * stream (PerfInternals.walkLog) and hands the log back in chunks through a message
 * port. The decode that replays them is synchronous: it reads each chunk without
 * going back to the event loop (receiveMessageOnPort), waiting for the next with
 * Atomics.wait on a word the thread counts its messages in. A thread runs at most
 * {@link AHEAD} chunks ahead of the replay (memory stays bounded whatever the trace).
 * Where the command runs from the executable's bundle (launch.ts), the thread loads
 * that bundle through the command's code cache (code-cache.ts): it starts in a third
 * of the time it took to load the modules anew.
 */
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import type { MessagePort, Worker } from "node:worker_threads";
import type { WalkEnd } from "../analysis/index.js";
import type { WalkCommand, WalkThreads } from "../session/io.js";
import { lazyBuiltin } from "./lazy-builtin.js";

const workerThreads = lazyBuiltin<typeof import("node:worker_threads")>("node:worker_threads");

/** The words of a walk's shared counters: messages posted, messages taken, and a stop sign. */
export const POSTED = 0;
export const TAKEN = 1;
export const STOP = 2;
/** Chunks a thread may post before the replay took them (64 KiB words each: 32 MiB). */
export const AHEAD = 64;
/**
 * How long the replay waits for a thread's next message before giving the walk up
 * (a thread that died without a word: the decode goes on the general way). A walking
 * thread posts a chunk every few milliseconds.
 */
const STALL_MS = 30_000;

/** What the thread is posted (its entry runs it: cli/perf/walk-thread.ts). */
export interface WalkThreadTask extends Omit<WalkCommand, "threads"> {
  cwd: string;
  stream: number;
  shared: Int32Array;
  port: MessagePort;
  /**
   * The command's bundle and its command line (whose code cache the thread reads), when
   * it runs from one: the thread loads it so.
   */
  bundle?: { file: string; argv: readonly string[] };
}

/** This module's bundle, when it runs from one (import.meta.url is the bundle's file then: see bundle-cli.ts). */
function commandBundle(): WalkThreadTask["bundle"] {
  const here = import.meta.url;
  if (!here.endsWith(".cjs")) return undefined;
  return { file: fileURLToPath(here), argv: process.argv.slice(2) };
}

/** What a thread posts: chunks of the log (Float64Arrays), then its end or its failure. */
export type WalkThreadMessage = Float64Array | { end: WalkEnd } | { error: string };

/** The walk threads of `command` run in `cwd`, each running `entry` (a module that answers `{ walk: WalkThreadTask }`). */
export function walkThreads(entry: URL, cwd: string, command: WalkCommand): WalkThreads {
  const running: { worker: Worker; shared: Int32Array }[] = [];
  return {
    // (The command's own thread, which replays, is one of the threads --jobs counts.)
    threads: Math.max(0, Math.min(command.threads, availableParallelism() * 4) - 1),
    start(stream) {
      const wt = workerThreads();
      const shared = new Int32Array(new SharedArrayBuffer(12));
      const { port1, port2 } = new wt.MessageChannel();
      const worker = new wt.Worker(entry);
      // (Neither keeps the process alive: the decode reads the port synchronously.)
      worker.unref();
      port1.unref();
      running.push({ worker, shared });
      const task: WalkThreadTask = {
        argv: command.argv,
        home: command.home,
        cwd,
        stream,
        shared,
        port: port2,
        bundle: commandBundle(),
      };
      worker.postMessage({ walk: task }, [port2]);
      return () => {
        for (;;) {
          const posted = Atomics.load(shared, POSTED);
          const m = wt.receiveMessageOnPort(port1);
          if (m !== undefined) {
            Atomics.add(shared, TAKEN, 1);
            Atomics.notify(shared, TAKEN);
            const next = fromMessage(m.message as WalkThreadMessage);
            if (!(next instanceof Float64Array)) port1.close();
            return next;
          }
          if (Atomics.wait(shared, POSTED, posted, STALL_MS) === "timed-out")
            return failed(`no word from its thread for ${STALL_MS / 1000} s`);
        }
      };
    },
    stop() {
      for (const { worker, shared } of running.splice(0)) {
        // A thread waiting for the replay to take its chunks wakes and stops.
        Atomics.store(shared, STOP, 1);
        Atomics.notify(shared, TAKEN);
        void worker.terminate();
      }
    },
  };
}

function fromMessage(m: WalkThreadMessage): Float64Array | WalkEnd {
  if (m instanceof Float64Array) return m;
  if ("error" in m) return failed(`its thread failed: ${m.error.split("\n")[0]}`);
  return m.end;
}

/**
 * The outcome of a walk that cannot be replayed: the general decode's. (A plain
 * object, as the thread's own are: FastCoverage's module is not loaded with this
 * adapter, which every command loads.)
 */
function failed(why: string): WalkEnd {
  return { status: -1, offset: 0, reason: `the parallel walk: ${why}`, insns: 0, calls: 0, errors: 0 };
}
