/**
 * Helpful errors for the commands that read files: where a missing file was looked
 * for, and what a file that is not what the command wants looks like instead (with
 * the command that takes it).
 */
import { diagnosticLine } from "../base/diagnostic.js";
import { PacketDecoder } from "../packet/decoder.js";
import type { FileRange } from "./file-range.js";
import type { InputHints } from "./hints.js";
import { NOT_REGULAR, type SessionIo } from "./io.js";
import { resolvePath } from "./paths.js";

/** Bytes of a file's head that {@link fileKind} looks at. */
export const HEAD_BYTES = 4096;

/**
 * Kinds of file by their first bytes. The first five are sure (a magic number, or a
 * PSB packet for a trace); the last three are only a guess (a raw trace may start
 * with any byte).
 */
export type FileKind =
  | "elf"
  | "perf"
  | "exec-binary"
  | "trace"
  | "compressed"
  | "lackey"
  | "exec-jsonl"
  | "text";

const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

const MAGIC: readonly [FileKind, readonly number[]][] = [
  ["elf", [0x7f, ...ascii("ELF")]],
  ["perf", ascii("PERFILE2")],
  ["exec-binary", ascii("PTKEXEC")],
  ["compressed", [0x1f, 0x8b]], // gzip
  ["compressed", [0x28, 0xb5, 0x2f, 0xfd]], // zstd
  ["compressed", [0xfd, ...ascii("7zXZ")]], // xz
];

/** What the first bytes of a file say it is; undefined when they say nothing. */
export function fileKind(head: Uint8Array): FileKind | undefined {
  for (const [kind, magic] of MAGIC)
    if (head.length >= magic.length && magic.every((b, i) => head[i] === b)) return kind;
  // A trace need not start with a PSB, but one comes every few KB.
  if (new PacketDecoder(head).syncForward() >= 0) return "trace";
  const text = new TextDecoder().decode(head);
  if (/^(==|--)\d+(==|--)/.test(text.trimStart()) || /^I {2}[0-9a-f]+,\d+$/m.test(text)) return "lackey";
  if (text.trimStart().startsWith("{")) return "exec-jsonl";
  if (head.length > 0 && head.every((b) => b === 9 || b === 10 || b === 13 || (b >= 32 && b < 127)))
    return "text";
  return undefined;
}

/** Whether `kind` comes from a magic number (so the file surely is of that kind). */
export function isSureKind(kind: FileKind | undefined): boolean {
  return kind !== undefined && kind !== "lackey" && kind !== "exec-jsonl" && kind !== "text";
}

/** `what`, then `: remedy` when the front end gives one. */
const remedied = (what: string, remedy: string | undefined) =>
  remedy === undefined ? what : `${what}: ${remedy}`;

/**
 * What to say about a file of `kind` given where a raw Intel PT trace was expected,
 * with the front end's remedy from `hints`.
 */
export function notATraceHint(path: string, kind: FileKind, hints: InputHints = {}): string | undefined {
  switch (kind) {
    case "elf":
      return remedied(
        `${path} is an ELF file (a program or library), not a trace`,
        hints.elfNotTrace?.(path),
      );
    case "perf":
      return remedied(`${path} looks like a perf.data file`, hints.perfNotTrace?.(path));
    case "exec-binary":
    case "exec-jsonl":
    case "lackey":
      return remedied(`${path} looks like an execution or a valgrind lackey log`, hints.execNotTrace?.(path));
    case "compressed":
      return `${path} is compressed: decompress it first`;
    case "text":
      return `${path} is text, not a binary Intel PT trace`;
    case "trace":
      return undefined;
  }
}

/** The head of a file for {@link fileKind}; empty when it cannot be read. */
export function readHead(io: SessionIo, path: string, from = 0, to?: number): Uint8Array {
  try {
    const end = Math.min(to ?? Number.MAX_SAFE_INTEGER, io.fileSize(path));
    return io.readRange(path, from, Math.max(0, Math.min(HEAD_BYTES, end - from)));
  } catch {
    return new Uint8Array(0);
  }
}

/** System errors in words. */
const OPEN_ERRORS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EISDIR: "it is a directory",
  ENOTDIR: "a part of the path is not a directory",
  EEXIST: "a file of that name exists",
  [NOT_REGULAR]: "not a regular file",
};

/** Why a file could not be read, in words: an error thrown by the {@link SessionIo} file functions. */
export function ioErrorText(e: unknown): string {
  return OPEN_ERRORS[(e as { code?: string }).code ?? ""] ?? (e as Error).message;
}

/**
 * Undefined when `path` can be opened; otherwise `<failed> <path>: <why>` and where
 * it was looked for (the resolved path and the current directory).
 */
export function openError(io: SessionIo, path: string, failed = "failed to open"): string | undefined {
  try {
    io.fileSize(path);
    return undefined;
  } catch (e) {
    return `${failed} ${path}: ${ioErrorText(e)} (looked for ${resolvePath(io.cwd, path)}; the current directory is ${io.cwd}).`;
  }
}

/** Undefined when `path` is a directory; otherwise why not, in words. */
export function notADirectory(io: SessionIo, path: string): string | undefined {
  try {
    io.fileSize(path);
    return "it is a file, not a directory";
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "EISDIR") return undefined;
    return code === "ENOENT" ? "no such directory" : ioErrorText(e);
  }
}

/**
 * Why `path` cannot be read as a raw Intel PT trace (it cannot be opened, or its
 * magic number says it is something else), or undefined when it may be one.
 */
export function traceFileProblem(io: SessionIo, range: FileRange, hints?: InputHints): string | undefined {
  const path = range.path;
  const open = openError(io, path);
  if (open !== undefined) return open;
  // Only the bytes of the range count (output never depends on bytes past its end).
  const kind = fileKind(readHead(io, path, range.from, range.to));
  return isSureKind(kind) ? notATraceHint(path, kind!, hints) : undefined;
}

/** What to say when no PSB was found in the range: what its bytes look like, or how to go on. */
export function noPsbHint(io: SessionIo, range: FileRange, hints: InputHints = {}): string {
  const path = range.path;
  // What the decoded bytes look like: those of the range, not the rest of the file.
  const kind = fileKind(readHead(io, path, range.from, range.to));
  const looks = kind === undefined ? undefined : notATraceHint(path, kind, hints);
  return (
    looks ??
    diagnosticLine(path, {
      offset: range.from,
      message: "no PSB packet (not an Intel PT trace, or a piece of one without a sync point)",
      hint: hints.noSync,
    })
  );
}
