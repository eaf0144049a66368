/** The real process's {@link SessionIo}: files, stdout and stderr. */
import {
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import {
  type ChunkRunner,
  type FileWriter,
  NOT_REGULAR,
  type SessionIo,
  type WalkCommand,
} from "../session/io.js";
import { walkThreads } from "./walk-threads.js";

/** The error for a path that names something other than a regular file, coded like a system error. */
function notAFile(path: string, directory: boolean): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(
    `${directory ? "EISDIR: a directory" : "not a regular file"}, '${path}'`,
  );
  e.code = directory ? "EISDIR" : NOT_REGULAR;
  e.path = path;
  return e;
}

/**
 * The size of the regular file at `path`; throws like fs.statSync, or with code
 * EISDIR or NOT_REGULAR when it is something else (what SessionIo.fileSize promises).
 */
export function regularFileSize(path: string): number {
  const st = statSync(path);
  if (!st.isFile()) throw notAFile(path, st.isDirectory());
  return st.size;
}

/** Write all of `text` to a file descriptor, even when it is a pipe that takes it in parts. */
function writeAll(fd: number, text: string | Uint8Array): void {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  let done = 0;
  while (done < bytes.length) {
    try {
      done += writeSync(fd, bytes, done);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // The reader went away (`ptkit dump x | head`): stop quietly, like C tools.
      if (code === "EPIPE") process.exit(0);
      // A non-blocking pipe that is full: try again.
      if (code !== "EAGAIN") throw e;
    }
  }
}

/** A file written through its descriptor, chunk by chunk. */
function openWrite(path: string): FileWriter {
  const fd = openSync(path, "w");
  return {
    reopens: fstatSync(fd).isFile(),
    write: (chunk) => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      let done = 0;
      while (done < bytes.length) done += writeSync(fd, bytes, done);
    },
    close: () => closeSync(fd),
  };
}

/** Read `length` bytes at `offset` of the file at `path` into `into` from `at`: the bytes read (fewer at the end of the file). */
function readFileInto(path: string, offset: number, into: Uint8Array, at: number, length: number): number {
  const fd = openSync(path, "r");
  try {
    let done = 0;
    while (done < length) {
      const n = readSync(fd, into, at + done, length - done, offset + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  } finally {
    closeSync(fd);
  }
}

/**
 * `b` as a Uint8Array over memory of its own: the Buffer's own when it has an
 * ArrayBuffer to itself (a file past Node's pool size), else a copy (a small file's
 * Buffer may share the pool's). Copying every file took 100 ms and as much memory
 * again for a 99 MB binary (node's), read by every `ptkit perf` of a process of it.
 */
function ownBytes(b: Buffer): Uint8Array {
  return b.byteOffset === 0 && b.buffer.byteLength === b.byteLength
    ? new Uint8Array(b.buffer, 0, b.byteLength)
    : new Uint8Array(b);
}

/**
 * The process's io; relative paths from `cwd` (a decoding thread is given its
 * command's). `workerEntry`: the module decoding threads run (see workers.ts); without
 * one, commands decode on this thread alone.
 */
export function nodeIo(cwd = process.cwd(), workerEntry?: URL): SessionIo {
  return {
    cwd,
    readFile: (path) => ownBytes(readFileSync(resolve(cwd, path))),
    writeFile: (path, bytes) => writeFileSync(resolve(cwd, path), bytes),
    openWrite: (path) => openWrite(resolve(cwd, path)),
    fileSize: (path) => regularFileSize(resolve(cwd, path)),
    readRange: (path, offset, length) => {
      const buf = new Uint8Array(length);
      const done = readFileInto(resolve(cwd, path), offset, buf, 0, length);
      return done === length ? buf : buf.subarray(0, done);
    },
    readRangeInto: (path, offset, into, at, length) =>
      readFileInto(resolve(cwd, path), offset, into, at, length),
    stdout: (text) => writeAll(1, text),
    stdoutBytes: (bytes) => writeAll(1, bytes),
    stderr: (text) => writeAll(2, text),
    stderrIsTty: fstatSync(2).isCharacterDevice() && process.stderr.isTTY === true,
    ...(workerEntry === undefined
      ? {}
      : {
          chunks: workerThreads(workerEntry),
          perfWalks: (command: WalkCommand) => walkThreads(workerEntry, cwd, command),
        }),
  };
}

/** Worker threads, loaded when a command first uses them (most runs never do). */
function workerThreads(entry: URL): ChunkRunner {
  return {
    threads: availableParallelism(),
    run: async (threads, tasks, onResult, local) => {
      const { WorkerPool } = await import("./workers.js");
      // PTKIT_WORKERS_ONLY=1: every piece on a worker, none on this thread (which may
      // otherwise decode a small trace's pieces before a worker has started at all).
      const here = process.env.PTKIT_WORKERS_ONLY === "1" ? undefined : local;
      return new WorkerPool(entry).run(threads, tasks, onResult, here);
    },
  };
}
