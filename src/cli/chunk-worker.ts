/**
 * The entry of a decoding thread (see src/node/workers.ts): decodes the pieces it is
 * given, reading the file itself, and posts back what the piece decoder returns.
 */
import { parentPort } from "node:worker_threads";
import { nodeIo } from "../node/io.js";
import type { ChunkReply } from "../node/workers.js";
import { DEFAULT_TRACE_WINDOW, TraceBytes } from "../packet/trace-bytes.js";
import { fileSlice } from "../session/file-range.js";
import type { ChunkTask } from "../session/io.js";
import { PIECE_DECODERS } from "./chunk-kinds.js";

const io = nodeIo();
const port = parentPort;
if (port === null) throw new Error("chunk-worker.js runs in a worker thread");

port.on("message", async ({ index, task }: { index: number; task: ChunkTask }) => {
  let reply: ChunkReply;
  try {
    const decode = PIECE_DECODERS[task.kind];
    if (decode === undefined) throw new Error(`no piece decoder '${task.kind}'`);
    // One read for the piece and a little past it (the decode goes on to a packet boundary).
    const window = Math.min(DEFAULT_TRACE_WINDOW, task.stop + (64 << 10));
    const trace = TraceBytes.read(fileSlice(io, task.path, task.from, task.end), window);
    reply = { index, result: await decode(trace, task.stop, task.options, task.start) };
  } catch (e) {
    reply = { index, error: e instanceof Error ? (e.stack ?? e.message) : String(e) };
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && e instanceof Error) reply = { ...reply, code, message: e.message };
  }
  port.postMessage(reply, "result" in reply ? transferables(reply.result) : []);
});

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
