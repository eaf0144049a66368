/**
 * The piece decoders a decoding thread can run, by {@link ChunkTask.kind}: each
 * decodes a piece of a trace (offsets relative to the piece) and returns a result
 * the command merges (see packet/chunks.ts for the contract).
 */
import type { TraceBytes } from "../packet/trace-bytes.js";

export type PieceDecoder = (trace: TraceBytes, stop: number, options: unknown) => unknown;

export const PIECE_DECODERS: Record<string, PieceDecoder> = {
  stats: async (trace, stop, options) => {
    const { collectStats } = await import("../packet/stats.js");
    return collectStats(trace, { stop, ...(options as { maxErrors: number }) });
  },
};
