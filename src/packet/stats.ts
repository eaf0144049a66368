/**
 * Whole-trace packet statistics: counts and bytes per packet type, PSB segments,
 * decode errors with their offsets, and the bytes that could not be decoded.
 */
import { type BlockContext, decodePacket, nextBlockContext } from "./decode.js";
import { ErrorCode } from "./errors.js";
import { syncForward } from "./sync.js";
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
}

export function collectStats(buf: Uint8Array, options: StatsOptions = {}): TraceStats {
  const end = buf.length;
  const counts = new Float64Array(PACKET_TYPE_COUNT);
  const typeBytes = new Float64Array(PACKET_TYPE_COUNT);
  const psbOffsets: number[] = [];
  const errors: DecodeErrorRecord[] = [];
  const maxErrors = options.maxErrors ?? 1000;
  const step = options.progressBytes ?? 1 << 24;
  const onProgress = options.onProgress;
  const pkt = new Packet();
  let errorCount = 0;
  let packets = 0;
  let truncated = 0;
  let pos = syncForward(buf, 0, end);
  let skipped = pos < 0 ? end : pos;
  let nextProgress = step;
  let block: BlockContext = 0;
  while (pos >= 0 && pos < end) {
    const size = decodePacket(buf, pos, end, pkt, block, options.quirks ?? 0);
    if (size > 0) {
      const t = pkt.type;
      counts[t]!++;
      typeBytes[t]! += size;
      packets++;
      if (t === PacketType.Psb) psbOffsets.push(pos);
      block = nextBlockContext(pkt, block);
      pos += size;
      if (onProgress && pos >= nextProgress) {
        onProgress(pos);
        nextProgress = pos + step;
      }
      continue;
    }
    if (size === -ErrorCode.Eos) {
      truncated = end - pos;
      break;
    }
    errorCount++;
    if (errors.length < maxErrors) errors.push({ offset: pos, code: size, byte: buf[pos]! });
    // Resume at the next PSB after the one we are in (if the error is inside it).
    const next = syncForward(buf, pos + 1, end);
    skipped += (next < 0 ? end : next) - pos;
    pos = next;
    block = 0;
  }
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
  };
}
