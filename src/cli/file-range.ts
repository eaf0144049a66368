/**
 * `file[:from[-to]]` arguments, as libipt's tools take them. The range is split off
 * at the last ':' only when it parses; otherwise the ':' belongs to the file name.
 */

import { parseCUint } from "../cpu/c-int.js";
import type { CliIo } from "./io.js";

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

/**
 * Load the bytes of a range. Errors are libipt-style messages without the program
 * name, e.g. "bad offset 0x10 into x.pt.".
 */
export function loadFileRange(io: CliIo, range: FileRange): Uint8Array | string {
  let size: number;
  try {
    size = io.fileSize(range.path);
  } catch (e) {
    return `failed to open ${range.path}: ${(e as Error).message}.`;
  }
  if (range.from >= size) return `bad offset 0x${range.from.toString(16)} into ${range.path}.`;
  const end = range.to ?? size;
  if (end > size) return `bad range 0x${end.toString(16)} in ${range.path}.`;
  return io.readRange(range.path, range.from, end - range.from);
}
