/**
 * perf.data files as a {@link ByteSource} through the command's {@link SessionIo}: read a
 * range at a time; `-` is standard input (`perf record -o - | ptkit perf -`), which
 * has no random access and is read whole into memory.
 */
import { readSync } from "node:fs";
import { type ByteSource, bytesSource } from "../perf/index.js";
import type { SessionIo } from "../session/io.js";

/**
 * A ByteSource over the file at `path` (`-`: what `stdin` returns); throws like
 * SessionIo.fileSize when it cannot be read.
 */
export function fileSource(io: SessionIo, path: string, stdin: () => Uint8Array = readStdin): ByteSource {
  if (path === "-") return bytesSource(stdin());
  const size = io.fileSize(path);
  const readInto = io.readRangeInto;
  return {
    size,
    read: (offset, length) => io.readRange(path, offset, Math.min(length, size - offset)),
    readInto:
      readInto === undefined
        ? undefined
        : (offset, into, at, length) =>
            readInto.call(io, path, offset, into, at, Math.min(length, size - offset)),
  };
}

const CHUNK = 1 << 20;

/** All of standard input, read synchronously a chunk at a time. */
export function readStdin(): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let buf = new Uint8Array(CHUNK);
  let used = 0;
  for (;;) {
    let n: number;
    try {
      n = readSync(0, buf, used, buf.length - used, null);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // A non-blocking pipe with nothing in it yet: wait a little and try again.
      if (code === "EAGAIN") {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        continue;
      }
      if (code === "EOF") break;
      throw e;
    }
    if (n === 0) break;
    used += n;
    total += n;
    if (used === buf.length) {
      chunks.push(buf);
      buf = new Uint8Array(CHUNK);
      used = 0;
    }
  }
  chunks.push(buf.subarray(0, used));
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
