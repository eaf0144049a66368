/**
 * The entry of a decoding thread (see src/node/workers.ts): decodes the pieces it is
 * given, reading the file itself, and posts back what the piece decoder returns; or
 * is a thread of ptkit perf's parallel walk (src/node/walk-threads.ts).
 */
import { parentPort } from "node:worker_threads";
import { cacheKey, loadBundle } from "../node/code-cache.js";
import { nodeIo } from "../node/io.js";
import type { WalkThreadTask } from "../node/walk-threads.js";
import { type ChunkReply, DELIVERED, NEXT, type SharedRun } from "../node/workers.js";
import { DEFAULT_TRACE_WINDOW, TraceBytes } from "../packet/trace-bytes.js";
import { fileSlice } from "../session/file-range.js";
import type { ChunkTask } from "../session/io.js";
import { PIECE_DECODERS } from "./chunk-kinds.js";

/** What the command's bundle (entry.ts) gives a thread of the parallel walk. */
interface BundleEntry {
  walkThread(task: WalkThreadTask): Promise<void>;
}

const io = nodeIo();
const port = parentPort;
if (port === null) throw new Error("chunk-worker.js runs in a worker thread");

port.on(
  "message",
  async (message: { index: number; task: ChunkTask } | SharedRun | { walk: WalkThreadTask }) => {
    if ("walk" in message) {
      // A thread of ptkit perf's parallel walk (node/walk-threads.ts): this thread is its,
      // run from the command's bundle where it runs from one.
      const { bundle } = message.walk;
      if (bundle === undefined) (await import("./perf/walk-thread.js")).runWalkThread(message.walk);
      else
        await (loadBundle(bundle.file, cacheKey(bundle.argv)).exports as BundleEntry).walkThread(
          message.walk,
        );
      return;
    }
    if ("task" in message) {
      reply(await decodeTask(message.index, message.task));
      return;
    }
    // A run whose threads take their pieces themselves (see SharedRun).
    const { tasks, shared, limit } = message;
    for (;;) {
      const index = Atomics.add(shared, NEXT, 1);
      if (index >= tasks.length) return;
      for (let d = Atomics.load(shared, DELIVERED); index - d >= limit; d = Atomics.load(shared, DELIVERED))
        Atomics.wait(shared, DELIVERED, d);
      const answer = await decodeTask(index, tasks[index]!);
      reply(answer);
      if ("error" in answer) return;
    }
  },
);

async function decodeTask(index: number, task: ChunkTask): Promise<ChunkReply> {
  try {
    const decode = PIECE_DECODERS[task.kind];
    if (decode === undefined) throw new Error(`no piece decoder '${task.kind}'`);
    // One read for the piece and a little past it (the decode goes on to a packet boundary).
    const window = Math.min(DEFAULT_TRACE_WINDOW, task.stop + (64 << 10));
    const trace = TraceBytes.read(fileSlice(io, task.path, task.from, task.end), window);
    return { index, result: await decode(trace, task.stop, task.options, task.start) };
  } catch (e) {
    const reply: ChunkReply = { index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
    const code = (e as { code?: unknown }).code;
    return typeof code === "string" && e instanceof Error ? { ...reply, code, message: e.message } : reply;
  }
}

function reply(answer: ChunkReply): void {
  port!.postMessage(answer, "result" in answer ? transferables(answer.result) : []);
}

/** The buffers of a result's byte arrays (a listing, in parts): passed over, not copied. */
function transferables(result: unknown): ArrayBuffer[] {
  if (typeof result !== "object" || result === null) return [];
  const buffers: ArrayBuffer[] = [];
  const add = (value: unknown) => {
    if (value instanceof Uint8Array && value.buffer instanceof ArrayBuffer && !buffers.includes(value.buffer))
      buffers.push(value.buffer);
  };
  for (const value of Object.values(result)) {
    if (Array.isArray(value)) value.forEach(add);
    else add(value);
  }
  return buffers;
}
