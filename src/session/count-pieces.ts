/**
 * `ptkit flow --quiet` counting instructions in `--jobs` pieces: the decision graph's
 * walk (analysis/coverage-decode.ts, `decodeCount`) on PSB-delimited pieces of a raw
 * trace (packet/chunks.ts), each thread with a graph of its own kept from piece to
 * piece, and the counts added up. Nothing is printed but the count: a piece the walk
 * does not decode to the end says only that the pieces do not make the count, and
 * the whole trace is decoded on one thread as before (the graph's walk, or the flow
 * decoder where that hands over).
 *
 * What crosses a seam, and why the sum is the count of one walk of the whole trace:
 * - the walk at the seam's PSB: a piece ends after the PSB+ of the first PSB it reads
 *   at or after its end, its count then including the instructions up to where that
 *   PSB+'s FUP says control is; the next piece starts there. A piece that did not
 *   read a PSB exactly where the next one starts (a PSB pattern inside a packet,
 *   one that does not decode) fails the merge.
 * - tracing state, the IP, the execution mode: PSB+ restates them. The one-thread
 *   walk checks its own state against PSB+ (a mismatch hands over); a piece does so
 *   for the PSB+ at its end.
 * - the return-compression stack: a piece starts with it empty, which holds the
 *   newest part of what the one-thread walk holds there; a compressed RET that needs
 *   more than the piece pushed fails the piece (the processor does not compress a
 *   RET whose CALL lies before the last PSB, so this is a broken trace's case).
 * - to check all of this, each piece decodes on through the PSB segment past its end
 *   (the overlap), and the next piece's count of its own first PSB segment must be
 *   the same.
 */
import { decodeCount, type WalkErrata, type WalkStops } from "../analysis/coverage-decode.js";
import type { DecisionGraph } from "../flow/index.js";
import { sliceSource } from "../packet/chunks.js";
import { TraceBytes, type TraceSource } from "../packet/trace-bytes.js";
import type { ChunkRunner, ChunkTask } from "./io.js";
import { PieceStops } from "./piece-stops.js";

/** What a thread returns for one piece (structured-cloneable). */
export interface CountPiece {
  /** The walk decoded its part: else the pieces do not make the count. */
  ok: boolean;
  /** Instructions of the piece: up to where its decode read the PSB that ends it. */
  insns: number;
  /** The PSB (relative offset) that ended the piece, or -1 when it went to the end. */
  syncedAt: number;
  /** Instructions from there through the next PSB segment. */
  overlapInsn: number;
  /** Instructions of the piece's own first PSB segment. */
  prefixInsn: number;
}

/**
 * Count the instructions of the piece of `trace` up to `stop` (relative) on `graph`,
 * working around `errata` (see the module comment).
 */
export function countPiece(
  graph: DecisionGraph,
  trace: TraceBytes,
  stop: number,
  errata: WalkErrata,
): CountPiece {
  const marks = new PieceStops<number>(stop);
  const stops: WalkStops = {
    stop: marks.stop,
    onStop(psb, insns) {
      const go = marks.reached(psb, () => insns);
      stops.stop = marks.stop;
      return go;
    },
  };
  const res = decodeCount(trace, graph, stops, errata);
  const end = res.insns;
  const seam = marks.seam;
  return {
    ok: res.status === 0,
    insns: seam ?? end,
    syncedAt: marks.seamPsb,
    overlapInsn: seam === undefined ? 0 : end - seam,
    prefixInsn: marks.prefix ?? end,
  };
}

/** Thrown to end the threads' run early (see {@link countInPieces}). */
const NOT_COUNTED = new Error("the pieces do not make the count");

/**
 * Count the instructions of the pieces of `source` starting at `starts` on `jobs`
 * threads, this one among them (on `graph`, made when its first piece comes: its code
 * is loaded and compiled already, one thread fewer to start): the count; or undefined
 * when the pieces do not make it (the one-thread walk may); or -1 when the first
 * piece's walk did not decode it (it starts where the one-thread walk does, which
 * would not either: the flow decoder must). The threads stop at the first piece that
 * fails.
 */
export async function countInPieces(
  runner: ChunkRunner,
  jobs: number,
  tasks: readonly ChunkTask[],
  starts: readonly number[],
  source: TraceSource,
  graph: () => DecisionGraph,
  errata: WalkErrata,
): Promise<number | undefined> {
  const size = source.size;
  const local = (task: ChunkTask) =>
    countPiece(graph(), TraceBytes.read(sliceSource(source, task.start)), task.stop, errata);
  let total = 0;
  let failed: number | undefined;
  let last: CountPiece | undefined;
  try {
    const onResult = (result: unknown, i: number) => {
      const piece = result as CountPiece;
      const start = starts[i]!;
      const end = starts[i + 1] ?? size;
      const seamHolds = i + 1 < starts.length ? piece.syncedAt === end - start : piece.syncedAt < 0;
      if (!piece.ok || !seamHolds || (last !== undefined && last.overlapInsn !== piece.prefixInsn)) {
        failed = i === 0 && !piece.ok ? -1 : undefined;
        throw NOT_COUNTED;
      }
      total += piece.insns;
      last = piece;
    };
    await runner.run(jobs, tasks, onResult, local);
  } catch (e) {
    if (e !== NOT_COUNTED) throw e;
    return failed;
  }
  return total;
}
