/**
 * Whole-trace packet statistics: counts and bytes per packet type, PSB segments,
 * decode errors with their offsets, and the bytes that could not be decoded.
 */

import { type BlockContext, decodePacket, nextBlockContext, windowCut } from "./decode.js";
import { skimPackets } from "./skim.js";
import { syncForwardIn } from "./sync.js";
import { TraceBytes } from "./trace-bytes.js";
import { PACKET_TYPE_COUNT, Packet, PacketType } from "./types.js";

export interface DecodeErrorRecord {
  offset: number;
  /** Negative error code. */
  code: number;
  /** The byte at the error offset. */
  byte: number;
}

export interface TraceStats {
  bytes: number;
  packets: number;
  /** Packets per {@link PacketType}. */
  counts: Float64Array;
  /** Bytes per {@link PacketType}. */
  typeBytes: Float64Array;
  /** Offsets of every PSB. */
  psbOffsets: number[];
  /** Decode errors (at most `maxErrors` are recorded; `errorCount` counts all). */
  errors: DecodeErrorRecord[];
  errorCount: number;
  /** Bytes skipped: before the first PSB, and from each error to the next PSB. */
  skippedBytes: number;
  /** Trailing bytes of a packet cut off by the end of the buffer. */
  truncatedBytes: number;
}

export interface StatsOptions {
  /** Called about every `progressBytes` with the offset reached. */
  onProgress?: (offset: number) => void;
  progressBytes?: number;
  maxErrors?: number;
  /** {@link DecodeQuirk} bits for the traced CPU's errata. */
  quirks?: number;
  /**
   * Stop at the first packet boundary or sync point at or after this offset (a piece
   * of the trace, see chunks.ts); default: the end of the trace.
   */
  stop?: number;
  /**
   * Start at offset 0 as a decode of the bytes before would be there: synchronised,
   * in this block context (a piece decoded again with the state carried over).
   */
  carry?: { block: BlockContext };
}

/** The statistics of a piece of a trace, with where and in what state its decode stopped. */
export interface StatsPiece extends TraceStats {
  /** Where the decode stopped: the first packet boundary or sync point at or after `stop`, or the end. */
  stopAt: number;
  /** The block context there. */
  block: BlockContext;
}

/** Statistics of `trace` (held in memory, or read a window at a time). */
export function collectStats(trace: Uint8Array | TraceBytes, options: StatsOptions = {}): StatsPiece {
  const t = trace instanceof TraceBytes ? trace : TraceBytes.of(trace);
  const end = t.size;
  const counts = new Float64Array(PACKET_TYPE_COUNT);
  const typeBytes = new Float64Array(PACKET_TYPE_COUNT);
  const psbOffsets: number[] = [];
  const errors: DecodeErrorRecord[] = [];
  const maxErrors = options.maxErrors ?? 1000;
  const step = options.progressBytes ?? 1 << 24;
  const onProgress = options.onProgress;
  const quirks = options.quirks ?? 0;
  const pkt = new Packet();
  let errorCount = 0;
  let truncated = 0;
  const stop = Math.min(end, options.stop ?? end);
  let pos = options.carry ? 0 : syncForwardIn(t, 0);
  let skipped = pos < 0 ? end : pos;
  let nextProgress = step;
  let block: BlockContext = options.carry?.block ?? 0;
  // The window in locals: `buf[i]` is the trace's byte `base + i`.
  let buf = t.buf;
  let base = t.base;
  let bufEnd = t.end - base;
  while (pos >= 0 && pos < stop) {
    if (onProgress && pos >= nextProgress) {
      onProgress(pos);
      nextProgress = pos + step;
    }
    if (block === 0) {
      // Most packets: their header byte says all a count needs (the others stop the skim).
      const at = pos - base;
      pos += skimPackets(buf, at, Math.min(stop - base, bufEnd), bufEnd, counts, typeBytes) - at;
      if (pos >= stop) break;
    }
    const size = decodePacket(buf, pos - base, bufEnd, pkt, block, quirks);
    if (windowCut(buf, pos - base, bufEnd, size, pkt, quirks)) {
      // Cut off by the end of the window, or decided by it: read on from this packet
      // and decode it again (at the trace's end, a CYC stands).
      t.release(pos);
      if (t.more && t.grow()) {
        buf = t.buf;
        base = t.base;
        bufEnd = t.end - base;
        continue;
      }
      if (size < 0) {
        truncated = end - pos;
        break;
      }
    }
    if (size > 0) {
      const type = pkt.type;
      counts[type]!++;
      typeBytes[type]! += size;
      if (type === PacketType.Psb) psbOffsets.push(pos);
      block = nextBlockContext(pkt, block);
      pos += size;
      continue;
    }
    errorCount++;
    if (errors.length < maxErrors) errors.push({ offset: pos, code: size, byte: buf[pos - base]! });
    // Resume at the next PSB after the one we are in (if the error is inside it).
    const next = syncForwardIn(t, pos + 1);
    skipped += (next < 0 ? end : next) - pos;
    pos = next;
    block = 0;
    buf = t.buf;
    base = t.base;
    bufEnd = t.end - base;
  }
  let packets = 0;
  for (let type = 0; type < PACKET_TYPE_COUNT; type++) packets += counts[type]!;
  return {
    bytes: end,
    packets,
    counts,
    typeBytes,
    psbOffsets,
    errors,
    errorCount,
    skippedBytes: skipped,
    truncatedBytes: truncated,
    stopAt: pos < 0 ? end : pos,
    block,
  };
}
