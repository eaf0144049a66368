/**
 * The bytes of a trace as the decoders see them: all of it in memory, or a window of
 * a trace too large for memory (or for one read: 2 GiB and more) that moves along
 * as decoding does.
 *
 * Offsets are trace offsets throughout: `buf[i]` is the trace's byte `base + i`. A
 * decoder that runs into the end of the window (`end`) before the end of the trace
 * (`size`) calls {@link TraceBytes.grow} and decodes again, so every decision is
 * made on the same bytes as over the whole trace, and the output is the same: no
 * seams, no decoder restarts, no state to carry. The bytes before the lowest offset
 * the decoder may still go back to are dropped at the next grow: the owner of the
 * decode position says where that is, either as it goes ({@link TraceBytes.release})
 * or when asked ({@link TraceBytes.floor}, for decoders that go back inside a call).
 * The window is then about one read (`windowSize`) plus what a look-ahead needs; it
 * never grows past `maxWindow` (a decoder there sees the trace end, as over the whole
 * trace it would not: only a look-ahead over 64 MiB shows the window).
 *
 * A source that can read into a buffer ({@link TraceSource.readInto}) is read into two
 * backing buffers used in turn, not into a fresh buffer per read (fresh memory costs
 * a page fault per page on first touch): a grow copies the bytes still held to the
 * front of the other buffer and reads after them. `buf` may then be a view of a larger
 * buffer, and the bytes a consumer saw stay as they were until the grow after next:
 * re-read `buf` after every grow, and keep no view of it across two.
 */

/** Where the bytes come from (a file adapter in the CLI; {@link TraceBytes.of} for memory). */
export interface TraceSource {
  /** Total size in bytes (offsets are Numbers: exact up to 2^53). */
  readonly size: number;
  /** `length` bytes at `offset`, never asked for outside [0, size). */
  read(offset: number, length: number): Uint8Array;
  /**
   * Read `length` bytes at `offset` into `into` from index `at`, never asked for
   * outside [0, size): the bytes read, fewer only at the end of the source (a short
   * read is taken as it is). Optional: {@link read} is used without it.
   */
  readInto?(offset: number, into: Uint8Array, at: number, length: number): number;
}

/**
 * The default read: 2 MiB, large enough that reads are few, small enough that the
 * bytes read are still in the cache when decoded (`ptkit stats` over 128 MiB: 15%
 * less CPU than in 8 MiB reads; 1 MiB is as fast, 4 MiB as slow as 8).
 */
export const DEFAULT_TRACE_WINDOW = 2 << 20;

/** The first read at most, of a trace longer than one window (see {@link TraceBytes.read}). */
const FIRST_WINDOW = 16 << 10;

/** The window may grow to this (or 16 reads) when a look-ahead or a long stretch without PSB needs it. */
const MAX_WINDOW = 64 << 20;

export class TraceBytes {
  /** The trace's bytes [base, end). */
  buf: Uint8Array;
  /** Trace offset of `buf[0]`. */
  base = 0;
  /** Trace offset just past the bytes held. */
  end: number;
  /** The largest window held so far, in bytes (for tests of the bound). */
  largest: number;
  /** Bytes before this trace offset are no longer needed. */
  private keep = 0;
  /**
   * Asked at each grow, when set: the lowest trace offset still needed (negative: none
   * known, see {@link release}). Set by the one decoder reading these bytes.
   */
  floor: (() => number) | null = null;
  private readonly maxWindow: number;
  /** With {@link TraceSource.readInto}: the buffer `buf` lies in, and the one the next grow reads into. */
  private backing: Uint8Array | null = null;
  private spare: Uint8Array | null = null;

  private constructor(
    private readonly source: TraceSource | null,
    buf: Uint8Array,
    readonly size: number,
    private readonly windowSize: number,
  ) {
    this.buf = buf;
    this.end = buf.length;
    this.largest = buf.length;
    this.maxWindow = Math.max(MAX_WINDOW, windowSize * 16);
  }

  /** A trace held in memory as a whole. */
  static of(bytes: Uint8Array): TraceBytes {
    return new TraceBytes(null, bytes, bytes.length, bytes.length);
  }

  /**
   * A trace read `windowSize` bytes at a time from `source` (the first read happens
   * now). With `turns`, the first read is small even when the trace fits one window:
   * for decodes that take turns with others in the same code (ptkit perf's per-CPU
   * streams), where the end of the first trace to end, a window's end, would be reached
   * in the code the others go on running.
   */
  static read(source: TraceSource, windowSize = DEFAULT_TRACE_WINDOW, turns = false): TraceBytes {
    const size = Math.max(1, Math.floor(windowSize));
    // A first window smaller than the rest: decoders then read on (their path for a
    // window's end) while V8 still interprets them, and their optimised code has that
    // path, instead of being thrown away and compiled again at the first window's end.
    const length = source.size > size || turns ? Math.min(source.size, size, FIRST_WINDOW) : source.size;
    if (source.readInto === undefined)
      return new TraceBytes(source, source.read(0, length), source.size, size);
    const backing = new Uint8Array(backingSize(length, size, source.size));
    const first = backing.subarray(0, length > 0 ? source.readInto(0, backing, 0, length) : 0);
    const t = new TraceBytes(source, first, source.size, size);
    t.backing = backing;
    return t;
  }

  /** Whether bytes of the trace lie past `end`. */
  get more(): boolean {
    return this.end < this.size && this.source !== null;
  }

  /**
   * The bytes before trace offset `offset` are not needed any more (by anyone
   * decoding from these bytes); they go at the next {@link grow}.
   */
  release(offset: number): void {
    if (offset > this.keep) this.keep = offset;
  }

  /**
   * Read more of the trace into the window: false at the end of the trace, or when
   * the window would outgrow its bound.
   */
  grow(): boolean {
    const source = this.source;
    if (source === null || this.end >= this.size) return false;
    const floor = this.floor?.() ?? -1;
    if (floor > this.keep) this.keep = floor;
    const keep = Math.min(Math.max(this.keep, this.base), this.end);
    const held = this.end - keep;
    // Reads double when a look-ahead (or a search for a PSB) needs much more than one.
    const want = Math.min(this.size - this.end, Math.max(this.windowSize, held));
    if (held + want > this.maxWindow) return false;
    if (this.backing !== null) return this.growInto(source, keep, held, want);
    const next = source.read(this.end, want);
    if (next.length === 0) return false;
    let buf = next;
    if (held > 0) {
      buf = new Uint8Array(held + next.length);
      buf.set(this.buf.subarray(keep - this.base, this.end - this.base));
      buf.set(next, held);
    }
    this.buf = buf;
    this.base = keep;
    this.end += next.length;
    if (buf.length > this.largest) this.largest = buf.length;
    return true;
  }

  /** {@link grow} through `readInto`: the held bytes to the front of the spare buffer, the read after them. */
  private growInto(source: TraceSource, keep: number, held: number, want: number): boolean {
    const fits = backingSize(held + want, this.windowSize, this.size);
    let into = this.spare;
    // A buffer left large by a long look-ahead goes when the window is small again.
    if (into === null || into.length < held + want || into.length > 4 * fits) into = new Uint8Array(fits);
    const n = source.readInto!(this.end, into, held, want);
    if (n <= 0) {
      this.spare = into;
      return false;
    }
    into.set(this.buf.subarray(keep - this.base, this.end - this.base), 0);
    this.spare = this.backing;
    this.backing = into;
    this.buf = into.subarray(0, held + n);
    this.base = keep;
    this.end += n;
    if (held + n > this.largest) this.largest = held + n;
    return true;
  }
}

/**
 * The size of a backing buffer for `need` bytes: room for a read and some bytes held
 * besides (so that the usual grow, a window plus a packet or two, does not outgrow
 * it), never more than the trace.
 */
function backingSize(need: number, windowSize: number, size: number): number {
  return Math.min(Math.max(need, windowSize + Math.min(windowSize, 64 << 10)), size);
}
