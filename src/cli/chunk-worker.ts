/**
 * The entry of a decoding thread (see node-workers.ts): decodes the pieces it is
 * given, reading the file itself, and posts back what the piece decoder returns.
 */
import { parentPort } from "node:worker_threads";
import { sliceSource } from "../packet/chunks.js";
import { TraceBytes } from "../packet/trace-bytes.js";
import { PIECE_DECODERS } from "./chunk-kinds.js";
import type { ChunkTask } from "./io.js";
import { nodeIo } from "./node-io.js";
import type { ChunkReply } from "./node-workers.js";

const io = nodeIo();
const port = parentPort;
if (port === null) throw new Error("chunk-worker.js runs in a worker thread");

port.on("message", async ({ index, task }: { index: number; task: ChunkTask }) => {
  let reply: ChunkReply;
  try {
    const decode = PIECE_DECODERS[task.kind];
    if (decode === undefined) throw new Error(`no piece decoder '${task.kind}'`);
    const file = {
      size: task.end,
      read: (at: number, length: number) => io.readRange(task.path, at, length),
    };
    const trace = TraceBytes.read(sliceSource(file, task.from, task.end));
    reply = { index, result: await decode(trace, task.stop, task.options) };
  } catch (e) {
    reply = { index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
  }
  port.postMessage(reply);
});
