/**
 * `-j/--jobs N`: decode a raw trace in pieces on N threads (see packet/chunks.ts).
 * `--jobs 1`, a small trace, or surroundings without threads (io.chunks absent) run
 * the one-thread code path unchanged.
 */
import { resolve } from "node:path";
import { MIN_CHUNK, planChunks } from "../packet/chunks.js";
import type { TraceSource } from "../packet/trace-bytes.js";
import type { FileRange } from "../session/file-range.js";
import type { ChunkTask, SessionIo } from "../session/io.js";

export const JOBS_HELP =
  "  -j, --jobs N    decode on N threads (default: the available cores; small traces use one).";

/** The thread count of a `--jobs` argument (undefined: the default), or an error message. */
export function parseJobs(io: SessionIo, text: string | undefined): number | string {
  if (text === undefined) return io.chunks?.threads ?? 1;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) return `--jobs: bad argument: ${text}`;
  return n;
}

/**
 * Where the pieces of `source` start, for `jobs` threads: [0] (one piece) when they
 * would not pay. For the command's decode: `maxChunk` bounds a piece (and so what its
 * result holds); `minChunk` is the least worth a thread (default {@link MIN_CHUNK});
 * a trace under `minTrace` bytes is not split (unless a smaller piece size is forced);
 * `taper`: pieces that shrink towards the end (see planChunks).
 */
export function planPieces(
  io: SessionIo,
  source: TraceSource,
  jobs: number,
  {
    maxChunk,
    minChunk = MIN_CHUNK,
    minTrace = 0,
    taper = false,
  }: { maxChunk?: number; minChunk?: number; minTrace?: number; taper?: boolean } = {},
): number[] {
  if (jobs < 2 || io.chunks === undefined) return [0];
  // For trying pieces by hand on small traces (tests set ChunkRunner.minChunk).
  const env = Number(process.env.PTKIT_CHUNK_SIZE);
  const forced = io.chunks.minChunk ?? (Number.isSafeInteger(env) && env > 0 ? env : undefined);
  if (forced === undefined && source.size < minTrace) return [0];
  return planChunks(source, jobs, forced ?? minChunk, maxChunk, taper);
}

/** The task of each piece: piece i is [starts[i], starts[i+1]) of the range. */
export function pieceTasks(
  io: SessionIo,
  range: FileRange,
  size: number,
  starts: readonly number[],
  kind: string,
  options: unknown,
): ChunkTask[] {
  const path = resolve(io.cwd, range.path);
  return starts.map((start, i) => ({
    kind,
    path,
    from: range.from + start,
    end: range.from + size,
    start,
    stop: (starts[i + 1] ?? size) - start,
    options,
  }));
}
