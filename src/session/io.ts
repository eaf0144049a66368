/**
 * What a command needs from its surroundings. The real process provides it in
 * main.ts; tests provide an in-memory one, so commands run in-process.
 */
import type { WalkLogSource } from "../analysis/index.js";
import type { Image } from "../image/index.js";

export interface SessionIo {
  /** Directory that relative paths are resolved against. */
  cwd: string;
  readFile(path: string): Uint8Array;
  /**
   * Size of a file in bytes. Throws like readFile when it cannot be read, and with
   * code EISDIR or {@link NOT_REGULAR} when the path is not a regular file.
   */
  fileSize(path: string): number;
  /** Read `length` bytes at `offset` of a file. */
  readRange(path: string, offset: number, length: number): Uint8Array;
  /**
   * Read `length` bytes at `offset` of a file into `into` from index `at` (no fresh
   * buffer): the bytes read, fewer only at the end of the file. Optional.
   */
  readRangeInto?(path: string, offset: number, into: Uint8Array, at: number, length: number): number;
  /** Create or replace a file. */
  writeFile(path: string, bytes: Uint8Array): void;
  /** Create or replace a file to write in parts (outputs too large for one string); throws like writeFile. */
  openWrite(path: string): FileWriter;
  stdout(text: string): void;
  /**
   * Write UTF-8 bytes to stdout, when that is cheaper than text (else see
   * {@link writeStdoutBytes}); done with them on return.
   */
  stdoutBytes?(bytes: Uint8Array): void;
  stderr(text: string): void;
  /** Whether stderr is a terminal (progress is shown only then). */
  stderrIsTty: boolean;
  /** Decodes pieces of files in other threads (`--jobs`); absent, everything runs in this one. */
  chunks?: ChunkRunner;
  /** Keeps decision graphs between runs (graph-cache.ts); absent, every run makes its own. */
  graphs?: GraphStore;
  /**
   * Threads for `ptkit perf`'s parallel walk (PerfInternals.walkThreads): each runs
   * `command` (a perf command line) up to its walk of one stream; absent, there are none.
   */
  perfWalks?: (command: WalkCommand) => WalkThreads;
}

/** What a thread of ptkit perf's parallel walk runs (see SessionIo.perfWalks). */
export interface WalkCommand {
  /** The command's options (runPerf's argv), its HOME, and the most threads to use (its own among them: --jobs). */
  argv: readonly string[];
  home: string | undefined;
  threads: number;
}

/** Threads that walk a perf.data file's streams (PerfInternals.walkThreads; analysis/walk-log.ts). */
export interface WalkThreads {
  /** How many streams they walk at most (one thread each). */
  readonly threads: number;
  /**
   * Walk apart whatever analysis the fast path feeds (but coverage), not only where
   * that pays (walksApart): tests replay every kind of file so.
   */
  readonly always?: boolean;
  /**
   * The least bytes of a stream's trace walked apart (default WALK_APART_BYTES,
   * perf-session.ts: smaller ones are walked on the command's thread, which is
   * faster there); tests walk small captures apart with 0.
   */
  readonly minTrace?: number;
  /** Start the walk of stream `stream` (its index among those walked): its log as it comes. */
  start(stream: number): WalkLogSource;
  /** End the walks (those not at their end yet): the decode goes on without them. */
  stop(): void;
}

/**
 * Where decision graphs are kept between runs, by the code they were made from. A
 * store may drop or refuse anything: it is a cache, and neither a miss nor a failure
 * to save is an error.
 */
export interface GraphStore {
  /**
   * A key for the code of `image` as it is now (its sections' addresses and bytes,
   * its fallback's too, and the build of ptkit), or undefined when its graph is
   * not to be kept.
   */
  key(image: Image): string | undefined;
  /** The bytes kept under `key`, if any. */
  load(key: string): Uint8Array | undefined;
  /** Keep `bytes` under `key`, replacing what was there. */
  save(key: string, bytes: Uint8Array): void;
}

/** A piece of a file for another thread to decode: it reads the file itself. */
export interface ChunkTask {
  /** The piece decoder to run (see chunk-kinds.ts). */
  kind: string;
  /** Absolute path of the file. */
  path: string;
  /** The bytes the decoder sees: file offsets [from, end). */
  from: number;
  end: number;
  /** The offset of `from` in the trace the command decodes (a range of the file): what output offsets are relative to. */
  start: number;
  /** Where the piece ends, relative to `from` (the decoder stops at the first packet boundary at or after it). */
  stop: number;
  /** The command's options for the piece decoder (structured-cloneable). */
  options: unknown;
}

/** Runs piece decoders in other threads. */
export interface ChunkRunner {
  /** The threads to use when not told (the available cores). */
  readonly threads: number;
  /** The smallest piece worth a thread, when not the default (tests cut small traces into pieces). */
  readonly minChunk?: number;
  /**
   * Decode `tasks` on up to `threads` threads; `onResult` gets each result in task
   * order, while at most about two per thread are held. Rejects on the first failure,
   * and with what `onResult` throws if it does (the threads are ended then).
   * `local`, when given, decodes a task on the calling thread, which is then one of
   * the `threads` (one other thread fewer to start, and to load the code in).
   */
  run(
    threads: number,
    tasks: readonly ChunkTask[],
    onResult: (result: unknown, index: number) => void,
    local?: (task: ChunkTask) => unknown,
  ): Promise<void>;
}

/** The error code of SessionIo.fileSize for a path that is neither a regular file nor a directory. */
export const NOT_REGULAR = "ENOTREGULAR";

/** A file being written: chunks in order, then close. */
export interface FileWriter {
  /** Write `chunk`; done with its bytes on return (writers may fill the same buffer again). */
  write(chunk: string | Uint8Array): void;
  close(): void;
  /**
   * Opening the path again empties it (a regular file; not a pipe or a terminal, which
   * keep what was written): a decode that starts over may write it again. Absent: no.
   */
  readonly reopens?: boolean;
}

/**
 * Collects output lines and hands them to the sink in large chunks: one write per
 * line is the slowest part of dumping millions of packets.
 */
export class LineWriter {
  private parts: string[] = [];
  private length = 0;

  constructor(private readonly sink: (text: string) => void) {}

  line(text: string): void {
    this.parts.push(text, "\n");
    this.length += text.length + 1;
    if (this.length >= 1 << 16) this.flush();
  }

  flush(): void {
    if (this.parts.length === 0) return;
    this.sink(this.parts.join(""));
    this.parts = [];
    this.length = 0;
  }
}

/** What writes lines: {@link LineWriter}, ByteLines (byte-lines.ts). */
export interface Lines {
  line(text: string): void;
  flush(): void;
}

/** Write UTF-8 `bytes` to stdout: as they are when the io takes bytes, else as text. */
export function writeStdoutBytes(io: SessionIo, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  if (io.stdoutBytes) io.stdoutBytes(bytes);
  else io.stdout(new TextDecoder().decode(bytes));
}
