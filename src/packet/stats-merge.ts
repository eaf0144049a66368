/**
 * The statistics of a trace from those of its pieces (decoded apart, see chunks.ts),
 * exactly as {@link collectStats} over the whole trace gives them.
 *
 * What crosses a seam: the decode position (a packet may run over the PSB a piece
 * starts at, or an error's resync may go past it) and the block context (BBP/BIP).
 * Each piece reports both where it stopped; a piece whose start does not match is
 * decoded again here from where the piece before stopped, with its block context
 * (carry state and rerun). The sums, lists and firsts then add up exactly.
 */

import { seam, sliceSource } from "./chunks.js";
import { collectStats, type StatsPiece, type TraceStats } from "./stats.js";
import { TraceBytes, type TraceSource } from "./trace-bytes.js";
import { PACKET_TYPE_COUNT } from "./types.js";

export class StatsMerge {
  private readonly stats: TraceStats;
  /** How far the whole-trace decode has got, and its block context there. */
  private at = 0;
  private block: StatsPiece["block"] = 0;
  /** Pieces decoded again here (for tests and curiosity). */
  reruns = 0;

  constructor(
    private readonly source: TraceSource,
    private readonly maxErrors: number,
  ) {
    this.stats = {
      bytes: source.size,
      packets: 0,
      counts: new Float64Array(PACKET_TYPE_COUNT),
      typeBytes: new Float64Array(PACKET_TYPE_COUNT),
      psbOffsets: [],
      errors: [],
      errorCount: 0,
      skippedBytes: 0,
      truncatedBytes: 0,
    };
  }

  /** Add the piece [start, stop) as decoded from `start` (its offsets relative to `start`). */
  add(piece: StatsPiece, start: number, stop: number): void {
    const next = seam(this.at, start, stop);
    if (next === "skip") return;
    let base = start;
    // A PSB decodes the same in any block context, but a piece that starts in one is decoded again all the same.
    if (next === "redo" || this.block !== 0) {
      // The piece assumed a fresh start at its PSB, which is not where or how the decode is.
      this.reruns++;
      base = this.at;
      const trace = TraceBytes.read(sliceSource(this.source, base));
      piece = collectStats(trace, {
        stop: stop - base,
        carry: { block: this.block },
        maxErrors: this.maxErrors,
      });
    }
    const s = this.stats;
    s.packets += piece.packets;
    for (let t = 0; t < PACKET_TYPE_COUNT; t++) {
      s.counts[t]! += piece.counts[t]!;
      s.typeBytes[t]! += piece.typeBytes[t]!;
    }
    for (const p of piece.psbOffsets) s.psbOffsets.push(base + p);
    for (const e of piece.errors) {
      if (s.errors.length < this.maxErrors) s.errors.push({ ...e, offset: base + e.offset });
    }
    s.errorCount += piece.errorCount;
    s.skippedBytes += piece.skippedBytes;
    s.truncatedBytes += piece.truncatedBytes;
    this.at = base + piece.stopAt;
    this.block = piece.block;
  }

  /** The statistics of the whole trace (after every piece was added, in order). */
  result(): TraceStats {
    return this.stats;
  }
}
