/**
 * A {@link SessionIo} over files a front end hands in, for running the session's
 * pipelines where there is no file system: a web page's dropped files (read a range at
 * a time, so a large perf.data is never held whole), a worker's, a test's bytes.
 * Files are named by path (relative names are taken from "/"); what the pipeline
 * writes (`--timeline` and the other outputs) is kept in memory, and its standard
 * output and error as text, up to a bound.
 */
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
  /** What the pipeline wrote, by absolute path: the chunks of each file. */
  readonly written = new Map<string, Uint8Array[]>();
  private out = "";
  private err = "";
  /** Characters of output and error text dropped past {@link MAX_TEXT}. */
  dropped = 0;

  /** Called with each read: (absolute path, offset, length). */
  onRead?: (path: string, offset: number, length: number) => void;

  /** Make `source` the file at `path` (relative paths are under "/"). */
  add(path: string, source: ByteSource): void {
    this.files.set(resolvePath(this.cwd, path), source);
  }

  /** The file written at `path`, in one piece, or undefined when none was. */
  output(path: string): Uint8Array | undefined {
    const chunks = this.written.get(resolvePath(this.cwd, path));
    if (chunks === undefined) return undefined;
    const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
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

  /** The file at `path` as a ByteSource whose reads are reported to {@link onRead}; throws like fileSize. */
  sourceOf(path: string): ByteSource {
    const s = this.source(path);
    const abs = resolvePath(this.cwd, path);
    return {
      size: s.size,
      read: (offset, length) => {
        this.onRead?.(abs, offset, length);
        return s.read(offset, length);
      },
    };
  }

  readFile(path: string): Uint8Array {
    const s = this.source(path);
    this.onRead?.(resolvePath(this.cwd, path), 0, s.size);
    return s.read(0, s.size);
  }

  fileSize(path: string): number {
    if (path === "" || path.endsWith("/")) throw fileError(NOT_REGULAR, path);
    return this.source(path).size;
  }

  readRange(path: string, offset: number, length: number): Uint8Array {
    const s = this.source(path);
    const n = Math.max(0, Math.min(length, s.size - offset));
    this.onRead?.(resolvePath(this.cwd, path), offset, n);
    return s.read(offset, n);
  }

  writeFile(path: string, bytes: Uint8Array): void {
    this.written.set(resolvePath(this.cwd, path), [bytes.slice()]);
  }

  openWrite(path: string): FileWriter {
    const chunks: Uint8Array[] = [];
    this.written.set(resolvePath(this.cwd, path), chunks);
    const encoder = new TextEncoder();
    return {
      // The caller may fill the same buffer again: keep a copy.
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
