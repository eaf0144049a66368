/**
 * Cutting a raw trace into pieces that can be decoded independently (in parallel,
 * by whoever runs them): each piece but the first starts at a PSB, a sync point.
 *
 * The contract every per-piece decoder keeps, so that the pieces merge into exactly
 * what one decode of the whole trace gives:
 * - piece i decodes from its start (the first piece syncs, as a whole-trace decode
 *   does; the others start at their PSB) and goes on past its end to the first
 *   place the whole-trace decode could be at (a packet boundary or a sync point) at
 *   or after it: `stopAt`. It reports its state there.
 * - the merge checks each seam: piece i must stop exactly where piece i+1 starts,
 *   in the state piece i+1 assumed (a fresh start at a PSB). Where that does not
 *   hold (a packet over the PSB, decoder state a PSB does not reset), piece i+1 is
 *   decoded again from piece i's `stopAt` with piece i's state carried over: slower,
 *   but the same result as decoding the whole trace.
 */
import { PSB_SIZE } from "./decode.js";
import { syncForwardIn } from "./sync.js";
import { TraceBytes, type TraceSource } from "./trace-bytes.js";

/** Pieces smaller than this are not worth a worker: a trace under two of them is decoded in one piece. */
export const MIN_CHUNK = 4 << 20;

/**
 * The same for decodes that skim most packets (see skim.ts: `ptkit stats`, quiet
 * dumps), some 250 MB/s a thread, where a worker thread takes about 0.1 s to start.
 */
export const MIN_SKIM_CHUNK = 32 << 20;

/** Pieces per thread: more than one, so that a slow piece does not leave the others idle. */
const CHUNKS_PER_THREAD = 4;

/**
 * The first read of a search for a piece's PSB (more is read while none is found):
 * PSBs come every few KiB in most traces, and the workers start only after the
 * search (reading 1 MiB at each of 7 piece starts of a 128 MiB trace took ~10 ms).
 */
const PSB_SEARCH_WINDOW = 64 << 10;

/** The bytes [from, end) of `source`, as a source of their own (offset 0 is `from`). */
export function sliceSource(source: TraceSource, from: number, end: number = source.size): TraceSource {
  const readInto = source.readInto;
  return {
    size: Math.max(0, end - from),
    read: (offset, length) => source.read(from + offset, length),
    readInto:
      readInto === undefined
        ? undefined
        : (offset, into, at, length) => readInto.call(source, from + offset, into, at, length),
  };
}

/**
 * Pieces of a tapered plan (see {@link planChunks}) are a share of what is left:
 * 1 / (TAPER_SHARE * threads) of it, and at least a TAPER_FLOOR-th of the piece size.
 */
const TAPER_SHARE = 2;
const TAPER_FLOOR = 4;

/**
 * The start offsets of the pieces of `source` for `threads` threads: 0, then a PSB
 * at or after each multiple of the piece size (at least `minChunk`, at most
 * `maxChunk`: a bound on what one piece's result may hold, such as a listing). A
 * search for a PSB reads at most one piece (window by window, in bounded memory); a
 * piece without one is joined to the one before. One piece when the trace is under
 * two `minChunk`s.
 *
 * `taper`: pieces that shrink as the trace goes on, each a share of what is left (down
 * to a quarter of `minChunk`), for decodes whose threads do not start together or do
 * not go at one speed (the flow decoders: the thread that starts the command decodes
 * pieces too, and every thread's first piece runs cold): whichever thread is ahead at
 * the end takes the last small pieces, where one of equal pieces left the other
 * thread idle for up to a piece (~1 s of the large bench's flow).
 */
export function planChunks(
  source: TraceSource,
  threads: number,
  minChunk: number = MIN_CHUNK,
  maxChunk: number = Number.POSITIVE_INFINITY,
  taper = false,
): number[] {
  const size = source.size;
  const min = Math.max(PSB_SIZE * 2, Math.floor(minChunk));
  if (threads < 2 || size < 2 * min) return [0];
  // As many pieces as fit at `min` each, up to four a thread, a multiple of the threads
  // where there are more than those: pieces of one size, that the threads finish
  // together (six of 4 MiB and one of 1 MiB kept one of two threads waiting ~0.8 s).
  let pieces = Math.min(threads * CHUNKS_PER_THREAD, Math.floor(size / min));
  if (pieces > threads) pieces -= pieces % threads;
  const even = Math.ceil(size / pieces);
  /** The size of the piece that starts at `at`. */
  const stepAt = (at: number): number => {
    const want = taper
      ? Math.max(Math.ceil(min / TAPER_FLOOR), Math.ceil((size - at) / (TAPER_SHARE * threads)))
      : even;
    return Math.max(PSB_SIZE * 2, Math.min(Math.floor(maxChunk), want));
  };
  const starts = [0];
  for (let at = stepAt(0); at < size; ) {
    // Searched: one piece, plus room to see where the run of pattern bytes of a PSB near its end stops.
    const step = stepAt(at);
    const end = Math.min(size, at + step + PSB_SIZE * 2);
    const window = Math.min(PSB_SEARCH_WINDOW, end - at);
    const psb = syncForwardIn(TraceBytes.read(sliceSource(source, at, end), window), 0);
    if (psb >= 0 && (at + psb + PSB_SIZE * 2 <= end || end === size)) {
      starts.push(at + psb);
      at += psb + stepAt(at + psb);
    } else {
      at += step;
    }
  }
  return starts;
}

/**
 * What to do with the result of the piece [start, stop), decoded from a fresh start
 * at `start`, when the decode of everything before it stopped at `at`: use it, skip
 * it (that decode went past the piece), or decode [at, stop) again with its state.
 */
export function seam(at: number, start: number, stop: number): "take" | "skip" | "redo" {
  if (at >= stop) return "skip";
  return at === start ? "take" : "redo";
}
