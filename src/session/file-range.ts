/**
 * `file[:from[-to]]` arguments, as libipt's tools take them. The range is split off
 * at the last ':' only when it parses; otherwise the ':' belongs to the file name.
 */

import { parseCUint } from "../base/c-int.js";
import { TraceBytes, type TraceSource } from "../packet/trace-bytes.js";
import type { TablesOut } from "../shard/tables-out.js";
import { ioErrorText } from "./file-kind.js";
import type { SessionIo } from "./io.js";

export interface FileRange {
  path: string;
  from: number;
  /** Exclusive end, or undefined for "to the end of the file". */
  to: number | undefined;
}

/** Split a file argument; returns an error message for an empty or reversed range. */
export function parseFileRange(arg: string): FileRange | string {
  const colon = arg.lastIndexOf(":");
  if (colon < 0) return { path: arg, from: 0, to: undefined };
  const spec = arg.slice(colon + 1);
  const dash = spec.indexOf("-");
  const from = parseCUint(dash < 0 ? spec : spec.slice(0, dash));
  const to = dash < 0 ? undefined : parseCUint(spec.slice(dash + 1));
  if (from === undefined || (dash >= 0 && to === undefined)) return { path: arg, from: 0, to: undefined };
  if (to !== undefined && to <= from) return "invalid argument";
  return { path: arg.slice(0, colon), from: Number(from), to: to === undefined ? undefined : Number(to) };
}

/** Internal settings for tests: the window raw traces are read in (see {@link TraceBytes}). */
export interface TraceInternals {
  windowSize?: number;
  /** `ptkit flow`: make coverage with the general decoders even where the fast decode could (tests compare them). */
  generalCoverage?: boolean;
  /** `ptkit flow`: told how the fast coverage decode went, when it ran (tests). */
  onFastCoverage?: (result: { status: number; reason: string; offset: number }) => void;
  /**
   * `ptkit flow`: told how the instruction count in `--jobs` pieces went, when it ran
   * (tests): the count, undefined or -1 when the pieces did not make it (see
   * raw-session.ts), and the number of pieces.
   */
  onCountPieces?: (count: number | undefined, pieces: number) => void;
  /**
   * `ptkit flow` for `ptkit shard run`: the shard tables' data is recorded here, and the
   * decode stops, as a `--jobs` piece does, at the first event after reading the PSB at
   * or after `stopAt` (relative to the range: the next shard's start).
   */
  tables?: TablesOut;
  stopAt?: number;
}

/**
 * Open a range for decoding, read a window of `windowSize` bytes at a time (a trace
 * of any size, in bounded memory; offsets are relative to the range's start). Errors
 * are libipt-style messages without the program name, e.g. "bad offset 0x10 into
 * x.pt.".
 */
export function openFileRange(io: SessionIo, range: FileRange, windowSize?: number): TraceBytes | string {
  const source = fileRangeSource(io, range);
  return typeof source === "string" ? source : TraceBytes.read(source, windowSize);
}

/** The bytes of a range (offset 0 is its start), or an error message as {@link openFileRange} gives. */
export function fileRangeSource(io: SessionIo, range: FileRange): TraceSource | string {
  let size: number;
  try {
    size = io.fileSize(range.path);
  } catch (e) {
    return `failed to open ${range.path}: ${ioErrorText(e)}.`;
  }
  if (range.from >= size) return `bad offset 0x${range.from.toString(16)} into ${range.path}.`;
  const end = range.to ?? size;
  if (end > size) return `bad range 0x${end.toString(16)} in ${range.path}.`;
  return fileSlice(io, range.path, range.from, end);
}

/**
 * The bytes [from, end) of the file at `path` as a trace source (offset 0 is `from`),
 * read into the caller's buffers when `io` can.
 */
export function fileSlice(io: SessionIo, path: string, from: number, end: number): TraceSource {
  const readInto = io.readRangeInto;
  return {
    size: end - from,
    read: (offset: number, length: number) => io.readRange(path, from + offset, length),
    readInto:
      readInto === undefined
        ? undefined
        : (offset: number, into: Uint8Array, at: number, length: number) =>
            readInto.call(io, path, from + offset, into, at, length),
  };
}
