/**
 * PERF_RECORD_COMPRESSED(2) bodies: one Zstandard stream (perf record -z) cut
 * into records at flush points, so a frame can go on from one record to the next,
 * and so can a decompressed record: the caller keeps what is left over. The
 * decompressor lives as long as the reading does, as perf's does. Zstandard itself
 * comes from fzstd (pure JavaScript, no Node API).
 */
import { Decompress } from "fzstd";
import { concatBytes, u32 } from "./bytes.js";

/** The most decompressed bytes taken from one record, and the largest window accepted. */
export const MAX_DECOMPRESSED = 64 << 20;

const ZSTD_MAGIC = 0xfd2fb528;

/**
 * The memory a frame starting at `b` asks for (RFC 8878 §3.1.1.1: its window
 * size, or its content size for a single-segment frame); -1 when `b` does not
 * start a frame or is too short to tell.
 */
export function frameWindowSize(b: Uint8Array): number {
  if (b.length < 6 || u32(b, 0) !== ZSTD_MAGIC) return -1;
  const fhd = b[4]!;
  if (!((fhd >> 5) & 1)) {
    const wd = b[5]!;
    const base = 2 ** (10 + (wd >> 3));
    return base + (base / 8) * (wd & 7);
  }
  const fcsSize = [1, 2, 4, 8][fhd >> 6]!;
  const p = 5 + [0, 1, 2, 4][fhd & 3]!;
  if (p + fcsSize > b.length) return -1;
  let v = 0;
  for (let i = fcsSize - 1; i >= 0; i--) v = v * 256 + b[p + i]!;
  return fcsSize === 2 ? v + 256 : v;
}

/** Too much output from one record: stops the decompressor from inside its callback. */
class TooMuch extends Error {}

/** The Zstandard stream of a file's COMPRESSED records. */
export class ZstdRecordStream {
  private decompressor: Decompress | undefined;
  private chunks: Uint8Array[] = [];
  private total = 0;

  /** Decompress one record's payload (continuing the stream); a string says why it could not be. */
  push(payload: Uint8Array): Uint8Array | string {
    const window = frameWindowSize(payload);
    if (window > MAX_DECOMPRESSED) {
      this.decompressor = undefined;
      return `frame needs a window of ${window} bytes (more than ${MAX_DECOMPRESSED})`;
    }
    // A new stream (the first, or after an error) must start with a frame.
    if (this.decompressor === undefined && payload.length >= 4 && u32(payload, 0) !== ZSTD_MAGIC) {
      return "not a Zstandard frame";
    }
    this.decompressor ??= new Decompress((chunk) => {
      this.total += chunk.length;
      if (this.total > MAX_DECOMPRESSED) throw new TooMuch();
      this.chunks.push(chunk);
    });
    this.chunks = [];
    this.total = 0;
    try {
      this.decompressor.push(payload);
    } catch (e) {
      this.decompressor = undefined;
      return e instanceof TooMuch
        ? `decompresses to more than ${MAX_DECOMPRESSED} bytes`
        : `bad Zstandard data (${(e as Error).message})`;
    }
    if (this.chunks.length === 1) return this.chunks[0]!;
    const out = concatBytes(this.chunks);
    this.chunks = [];
    return out;
  }
}
