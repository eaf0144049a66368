/**
 * A thread of `ptkit perf`'s parallel walk (src/node/walk-threads.ts): the perf
 * command, run with its outputs discarded up to its walk of one stream, whose log
 * goes to the command's thread in chunks.
 */
import type { WalkEnd, WalkLogSink } from "../../analysis/index.js";
import { graphStoreFromEnv } from "../../node/graph-store.js";
import { nodeIo } from "../../node/io.js";
import {
  AHEAD,
  POSTED,
  STOP,
  TAKEN,
  type WalkThreadMessage,
  type WalkThreadTask,
} from "../../node/walk-threads.js";
import type { SessionIo } from "../../session/io.js";
import { runPerf } from "./perf.js";

/** The replay stopped: the walk ends here. */
class Stopped extends Error {}

export function runWalkThread(task: WalkThreadTask): void {
  const { shared, port } = task;
  const post = (m: WalkThreadMessage, transfer: ArrayBuffer[] = []) => {
    port.postMessage(m, transfer);
    Atomics.add(shared, POSTED, 1);
    Atomics.notify(shared, POSTED);
  };
  let ended = false;
  const sink: WalkLogSink = {
    chunk(words) {
      for (;;) {
        if (Atomics.load(shared, STOP) !== 0) throw new Stopped();
        const taken = Atomics.load(shared, TAKEN);
        if (Atomics.load(shared, POSTED) - taken < AHEAD) break;
        Atomics.wait(shared, TAKEN, taken, 1000);
      }
      post(words, [words.buffer as ArrayBuffer]);
    },
    end(result: WalkEnd) {
      ended = true;
      post({ end: { ...result } });
    },
  };
  try {
    runPerf(task.argv, quietIo(task.cwd), task.home, { walkLog: { stream: task.stream, sink } });
    if (!ended) post({ error: "the command ended before its walk" });
  } catch (e) {
    if (!(e instanceof Stopped)) post({ error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  } finally {
    port.close();
  }
}

/** The process's io for reading (files, kept decision graphs); what the command writes goes nowhere. */
function quietIo(cwd: string): SessionIo {
  const graphs = graphStoreFromEnv();
  return {
    ...nodeIo(cwd),
    ...(graphs === undefined ? {} : { graphs }),
    writeFile() {},
    openWrite: () => ({ write() {}, close() {}, reopens: true }),
    stdout() {},
    stdoutBytes() {},
    stderr() {},
  };
}
