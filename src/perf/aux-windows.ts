/**
 * A trace stream read a window at a time, for decoding streams larger than memory.
 * The next window starts at a PSB (the *seam*); each window also holds some bytes
 * past its seam, so that a decoder over it decodes up to the seam as it would over
 * the whole stream (its look-ahead finds what follows) and sees the seam's first
 * event, where decodePerfStream (src/cli/perf-stream.ts) hands over to the next
 * window's decoder. A fresh decoder loses nothing at a PSB that perf's own decoder
 * keeps (it clears its return stack and last IP at every PSB too); the timing
 * calibration starts over, and where tracing was off the IP it stopped at is
 * forgotten (decodePerfStream remembers it).
 */
import { syncBackward } from "../packet/index.js";
import type { AuxStream } from "./aux-streams.js";
import type { ByteSource } from "./source.js";

/** The default window: several MiB, so that seams are rare and reads large. */
export const DEFAULT_AUX_WINDOW = 8 << 20;

/** Bytes read past a window's seam: far more than a PSB+ and the decoder's look-ahead take. */
const TAIL = 4096;

export interface AuxWindow {
  /** Stream offset of `bytes[0]`. */
  start: number;
  bytes: Uint8Array;
  /**
   * Offset in `bytes` of the PSB the next window starts at (bytes after it are for
   * look-ahead), or -1 when the next window (if any) starts at `bytes.length` (the
   * last window, or one cut where no PSB was found).
   */
  seam: number;
}

/** Reads a stream's windows in order, holding none of them itself. */
export class AuxWindowReader {
  private at = 0;
  /** The largest window grown to when no PSB turns up. */
  private readonly maxSize: number;

  constructor(
    private readonly source: ByteSource,
    private readonly stream: AuxStream,
    private readonly windowSize = DEFAULT_AUX_WINDOW,
  ) {
    this.windowSize = Math.max(1, windowSize);
    this.maxSize = Math.max(this.windowSize * 16, 64 << 20);
  }

  /** The next window, or undefined after the last. */
  next(): AuxWindow | undefined {
    const start = this.at;
    const total = this.stream.size;
    if (start >= total) return undefined;
    // Grow the window until a PSB after its first byte is in it, the stream ends or it gets too large.
    for (let size = this.windowSize; ; size *= 2) {
      const bytes = readStream(this.source, this.stream, start, size + TAIL);
      const last = start + bytes.length >= total;
      if (last && bytes.length <= size) return this.take(start, bytes, -1);
      const seam = syncBackward(bytes, Math.min(size, bytes.length) + 1);
      if (seam > 0) return this.take(start, bytes, seam);
      if (last) return this.take(start, bytes, -1);
      // No PSB in a very long stretch (a corrupt trace): cut here, the next decoder resynchronises.
      if (size * 2 > this.maxSize) return this.take(start, bytes.subarray(0, size), -1);
    }
  }

  private take(start: number, bytes: Uint8Array, seam: number): AuxWindow {
    this.at = start + (seam > 0 ? seam : bytes.length);
    return { start, bytes: seam > 0 ? bytes.subarray(0, Math.min(bytes.length, seam + TAIL)) : bytes, seam };
  }
}

/** Up to `length` bytes of the stream from stream offset `from` (a view when they lie in one range). */
export function readStream(source: ByteSource, stream: AuxStream, from: number, length: number): Uint8Array {
  const end = Math.min(stream.size, from + length);
  if (end <= from) return new Uint8Array(0);
  const parts: Uint8Array[] = [];
  let rangeStart = 0;
  for (const r of stream.ranges) {
    const rangeEnd = rangeStart + r.size;
    if (rangeEnd > from && rangeStart < end) {
      const lo = Math.max(from, rangeStart);
      const hi = Math.min(end, rangeEnd);
      parts.push(source.read(r.offset + (lo - rangeStart), hi - lo));
    }
    if (rangeEnd >= end) break;
    rangeStart = rangeEnd;
  }
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
