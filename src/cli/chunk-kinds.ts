/**
 * The piece decoders a decoding thread can run, by {@link ChunkTask.kind}: each
 * decodes a piece of a trace (offsets relative to the piece) and returns a result
 * the command merges (see packet/chunks.ts for the contract).
 */
import type { TraceBytes } from "../packet/trace-bytes.js";
import type { DumpOptions } from "../session/dump-options.js";

/** Decode `trace`, a piece starting at trace offset `start`, up to `stop` (relative). */
export type PieceDecoder = (trace: TraceBytes, stop: number, options: unknown, start: number) => unknown;

export const PIECE_DECODERS: Record<string, PieceDecoder> = {
  stats: async (trace, stop, options) => {
    const { collectStats } = await import("../packet/stats.js");
    return collectStats(trace, { stop, ...(options as { maxErrors: number }) });
  },
  flow: async (trace, stop, options, start) => {
    const { flowPieceIn } = await import("./flow/worker.js");
    const { words, cwd } = options as { words: string[]; cwd: string };
    return flowPieceIn(words, cwd, trace, start, stop);
  },
  count: async (trace, stop, options) => {
    const { countPieceIn } = await import("./flow/worker.js");
    const { words, cwd } = options as { words: string[]; cwd: string };
    return countPieceIn(words, cwd, trace, stop);
  },
  dump: async (trace, stop, options, start) => {
    const { dumpPiece } = await import("../session/dump-pieces.js");
    return dumpPiece(options as DumpOptions, trace, start, stop);
  },
};
