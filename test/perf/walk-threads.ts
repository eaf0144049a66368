/**
 * Walk threads for tests that run `ptkit perf` in-process (PerfInternals.walkThreads):
 * not threads, but each stream's walk logged on this thread first, by a decode of its
 * own as a thread's is (PerfInternals.walkLog, its outputs discarded), then replayed
 * by the decode that asked for it. The outputs of a decode so fed must be the same as
 * of one walked in place. Every stream is walked so, whatever its size (minTrace 0).
 */
import type { WalkEnd } from "../../src/analysis/index.js";
import { runPerf } from "../../src/cli/perf/perf.js";
import type { WalkThreads } from "../../src/session/io.js";
import { captureIo } from "../conformance/ptt.js";
import { EMPTY_HOME } from "./home.js";

/** The walks of `args` (a perf command line run in `cwd`); `started` counts the streams replayed. */
export function loggedWalks(args: readonly string[], cwd: string): WalkThreads & { started: number } {
  return {
    threads: 64,
    always: true,
    minTrace: 0,
    started: 0,
    start(stream) {
      this.started++;
      const chunks: Float64Array[] = [];
      let end: WalkEnd | undefined;
      const io = {
        ...captureIo(cwd),
        openWrite: () => ({ write() {}, close() {}, reopens: true }),
        writeFile() {},
      };
      runPerf(args, io, EMPTY_HOME, {
        walkLog: { stream, sink: { chunk: (w) => chunks.push(w), end: (r) => (end = r) } },
      });
      const ended = end ?? { status: -1, offset: 0, reason: "no end", insns: 0, calls: 0, errors: 0 };
      let next = 0;
      return () => (next < chunks.length ? chunks[next++]! : ended);
    },
    stop() {},
  };
}
