/**
 * A {@link SessionIo} over files a front end hands in, for running the session's
 * pipelines where there is no file system: a web page's dropped files (read a range at
 * a time, so a large perf.data is never held whole), a worker's, a test's bytes.
 * Files are named by path (relative names are taken from "/"); what the pipeline
 * writes (`--timeline` and the other outputs) is kept in memory, and its standard
 * output and error as text, up to a bound.
 */
import { concatBytes } from "../perf/bytes.js";
import type { ByteSource } from "../perf/index.js";
import { type FileWriter, NOT_REGULAR, type SessionIo } from "./io.js";
import { resolvePath } from "./paths.js";

/** Characters of standard output and error kept (each); what is past them is counted, not kept. */
const MAX_TEXT = 1 << 20;

/** An error carrying a Node-style code, as the file functions of a SessionIo throw. */
function fileError(code: string, path: string): Error {
  return Object.assign(new Error(`${code}: ${path}`), { code });
}

export class FilesIo implements SessionIo {
  readonly cwd = "/";
  readonly stderrIsTty = false;
  private readonly files = new Map<string, ByteSource>();
  /**
   * What the pipeline wrote, by absolute path: a copy of each chunk (writers fill
   * theirs again). Kept as chunks: one large buffer costs more to fill than the
   * copies (its pages are touched anew), and a Blob takes the chunks as they are.
   */
  private readonly written = new Map<string, Uint8Array[]>();
  private out = "";
  private err = "";
  /** Characters of output and error text dropped past {@link MAX_TEXT}. */
  dropped = 0;

  /** Make `source` the file at `path` (relative paths are under "/"). */
  add(path: string, source: ByteSource): void {
    this.files.set(resolvePath(this.cwd, path), source);
  }

  /** The chunks of the file written at `path`, or undefined when none was. */
  outputChunks(path: string): readonly Uint8Array[] | undefined {
    return this.written.get(resolvePath(this.cwd, path));
  }

  /** The file written at `path` in one piece, or undefined when none was. */
  output(path: string): Uint8Array | undefined {
    const chunks = this.outputChunks(path);
    return chunks && concatBytes(chunks);
  }

  get stdoutText(): string {
    return this.out;
  }

  get stderrText(): string {
    return this.err;
  }

  private source(path: string): ByteSource {
    const abs = resolvePath(this.cwd, path);
    const source = this.files.get(abs);
    if (source !== undefined) return source;
    if ([...this.files.keys()].some((name) => name.startsWith(`${abs}/`))) throw fileError("EISDIR", path);
    throw fileError("ENOENT", path);
  }

  /** The file at `path` as a ByteSource; throws like fileSize. */
  sourceOf(path: string): ByteSource {
    return this.source(path);
  }

  readFile(path: string): Uint8Array {
    const s = this.source(path);
    return s.read(0, s.size);
  }

  fileSize(path: string): number {
    if (path === "" || path.endsWith("/")) throw fileError(NOT_REGULAR, path);
    return this.source(path).size;
  }

  readRange(path: string, offset: number, length: number): Uint8Array {
    const s = this.source(path);
    return s.read(offset, Math.max(0, Math.min(length, s.size - offset)));
  }

  writeFile(path: string, bytes: Uint8Array): void {
    this.written.set(resolvePath(this.cwd, path), [bytes.slice()]);
  }

  openWrite(path: string): FileWriter {
    const chunks: Uint8Array[] = [];
    this.written.set(resolvePath(this.cwd, path), chunks);
    const encoder = new TextEncoder();
    return {
      // Opened again, the path gets a new, empty list of chunks.
      reopens: true,
      write: (chunk) => chunks.push(typeof chunk === "string" ? encoder.encode(chunk) : chunk.slice()),
      close: () => {},
    };
  }

  stdout(text: string): void {
    this.out = this.keep(this.out, text);
  }

  stderr(text: string): void {
    this.err = this.keep(this.err, text);
  }

  private keep(kept: string, text: string): string {
    const room = MAX_TEXT - kept.length;
    if (text.length <= room) return kept + text;
    this.dropped += text.length - Math.max(0, room);
    return room > 0 ? kept + text.slice(0, room) : kept;
  }
}
