/**
 * Times for frame entries and exits, as magic-trace gives them: the trace carries a
 * time only now and then (TSC, and MTC/CYC through the decoder's tick events), so the
 * entries and exits between two timing updates are held back and spread evenly by
 * instruction count between the two times. The look-ahead buffer is bounded: when it
 * fills before the next update, the held entries get times extrapolated at the last
 * known rate (and time never runs backwards: an update below a time already given is
 * ignored).
 *
 * The clock is settled at the first flush: TSC-based when a TSC came first, else the
 * instruction count (see {@link ClockUnit}).
 */

import { doubleFields } from "../base/halves.js";
import type { FrameEnd, FrameKind } from "./callstack.js";
import type { CallAnalysis } from "./callstack-analysis.js";
import type { CallSink, Marker, ThreadTrack } from "./callstack-sink.js";

// The ops as numbers, not properties of an object: each property read needs V8 to have
// seen it run, and dispatch's tests of the rarer ops threw its optimised code away.
const ENTER = 0;
const EXIT = 1;
const MARKER = 2;
const RESUME = 3;
const SUSPEND = 4;

/** Default for the look-ahead buffer (entries and exits held before a time is known). */
export const DEFAULT_LOOKAHEAD = 1 << 16;

/**
 * Timed operations handed to a lone sink together, at least (see {@link TimedOps.release}).
 * With a time every few calls (CYC), one at a time the sink's code and data went
 * cold between any two: `ptkit perf -q --timeline` took 4% more CPU.
 */
const BATCH = 1024;

export class TimedOps {
  private n = 0;
  /**
   * Operations [0, ready) have their times and wait for the sinks; [ready, n) wait for
   * a time. They go out once {@link batch} are timed, or at a drain.
   */
  private ready = 0;
  /**
   * {@link BATCH} with one sink; 1 with several, or JSON Lines (which name frames as
   * they run): frame names are made first come (and so are the warnings about
   * unnamed ones), so each sink sees its operations when it always did.
   */
  private readonly batch: number;
  private readonly op: Uint8Array;
  /** Frame kind, end or marker. */
  private readonly what: Uint8Array;
  private readonly depth: Uint32Array;
  private readonly hi: Uint32Array;
  private readonly lo: Uint32Array;
  /** Frame naming scopes (see CallAnalysisOptions.frameScope). */
  private readonly scope: Uint32Array;
  private readonly icount: Float64Array;
  /** The times given out by the current flush. */
  private readonly times: Float64Array;
  /** Marker offsets. */
  private readonly offset: Float64Array;
  private readonly tracks: (ThreadTrack | undefined)[];
  private readonly messages: string[];
  /** The last timing anchor: time t0 at instruction count i0. */
  private t0 = 0;
  private i0 = 0;
  private timed = false;
  /** Clock units per instruction over the last interval (for extrapolation). */
  private rate = 0;

  constructor(
    private readonly analysis: CallAnalysis,
    readonly capacity = DEFAULT_LOOKAHEAD,
  ) {
    const alone = analysis.sinks.length === 1 && analysis.jsonl === undefined;
    // Shards read the threads' stacks as their operations go out: one update at a time.
    this.batch = alone && !analysis.segments ? BATCH : 1;
    // Room for the look-ahead past the timed operations waiting.
    const size = capacity + this.batch;
    this.op = new Uint8Array(size);
    this.what = new Uint8Array(size);
    this.depth = new Uint32Array(size);
    this.hi = new Uint32Array(size);
    this.lo = new Uint32Array(size);
    this.scope = new Uint32Array(size);
    this.icount = new Float64Array(size);
    this.times = new Float64Array(size);
    this.offset = new Float64Array(size);
    this.tracks = new Array<ThreadTrack | undefined>(size).fill(undefined);
    this.messages = new Array<string>(size).fill("");
    // Clock values (ns or TSC ticks since the base) and a rate: not small integers.
    doubleFields(this, ["t0", "rate"]);
  }

  enter(track: ThreadTrack, depth: number, kind: FrameKind, hi: number, lo: number, icount: number): void {
    const i = this.slot(track, ENTER, kind, icount);
    this.depth[i] = depth;
    this.hi[i] = hi;
    this.lo[i] = lo;
    const scopeOf = this.analysis.frameScope;
    this.scope[i] = scopeOf === undefined ? 0 : scopeOf(track);
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, icount: number): void {
    this.depth[this.slot(track, EXIT, end, icount)] = depth;
  }

  marker(track: ThreadTrack, what: Marker, offset: number, message: string, icount: number): void {
    const i = this.slot(track, MARKER, what, icount);
    this.offset[i] = offset;
    this.messages[i] = message;
  }

  /** `track` runs on this stream from now on. */
  resume(track: ThreadTrack, icount: number): void {
    this.slot(track, RESUME, 0, icount);
  }

  /** `track` no longer runs on this stream. */
  suspend(track: ThreadTrack, icount: number): void {
    this.slot(track, SUSPEND, 0, icount);
  }

  /**
   * A timing update: clock value `time` (see {@link CallAnalysis.tscTime}) reached at
   * instruction count `icount`. Held entries get their interpolated times.
   */
  update(time: number, icount: number): void {
    const a = this.analysis;
    if (a.clock === undefined) a.settle(true);
    if (a.clock!.unit === "insn") return;
    if (!this.timed) {
      this.timed = true;
      this.t0 = time;
      this.i0 = icount;
      this.flush(time, icount);
      return;
    }
    if (time <= this.t0) return;
    this.flush(time, icount);
    if (icount > this.i0) this.rate = (time - this.t0) / (icount - this.i0);
    this.t0 = time;
    this.i0 = icount;
  }

  /**
   * Nothing held ran later than clock value `time` (reached by instruction count
   * `icount`): a timing update, or, when `time` is not past the last one, everything
   * held goes out at the last time instead of being extrapolated later (the end of a
   * time range: the decode stops feeding there).
   */
  limit(time: number, icount: number): void {
    if (!this.timed || time > this.t0) {
      this.update(time, icount);
      return;
    }
    this.flush(this.t0, icount, true);
    this.i0 = icount;
  }

  /**
   * Hand out everything held, extrapolating times (the end, a thread switch, a full
   * buffer); returns the time at `icount`.
   */
  drain(icount: number): number {
    const a = this.analysis;
    // Nothing held yet: no reason to settle the clock before a time arrives.
    if (this.n === 0 && a.clock === undefined) return 0;
    if (a.clock === undefined) a.settle(false);
    if (a.clock!.unit === "insn" || !this.timed) {
      this.flush(0, icount, true);
      return a.clock!.unit === "insn" ? icount : 0;
    }
    const t = this.t0 + this.rate * (icount - this.i0);
    this.flush(t, icount, true);
    this.t0 = t;
    this.i0 = icount;
    return t;
  }

  private slot(track: ThreadTrack, op: number, what: number, icount: number): number {
    if (this.n - this.ready === this.capacity) this.drain(this.icount[this.n - 1]!);
    const i = this.n++;
    this.op[i] = op;
    this.what[i] = what;
    this.icount[i] = icount;
    this.tracks[i] = track;
    return i;
  }

  /**
   * Time the held operations between the anchor and (t1 at i1); they go out with the
   * others waiting when a batch is full or with `all`.
   */
  private flush(t1: number, i1: number, all = false): void {
    const n = this.n;
    const from = this.ready;
    if (n > from) {
      const times = this.times;
      const icount = this.icount;
      if (this.analysis.clock!.unit === "insn") times.set(icount.subarray(from, n), from);
      else if (!this.timed) times.fill(0, from, n);
      else {
        const { t0, i0 } = this;
        const span = i1 - i0;
        const slope = span > 0 ? (t1 - t0) / span : 0;
        for (let i = from; i < n; i++) times[i] = t0 + slope * (icount[i]! - i0);
      }
      this.ready = n;
      // Another stream's timed operations came first: they go out first.
      const a = this.analysis;
      if (a.waiting !== this) {
        a.waiting?.release();
        a.waiting = this;
      }
    }
    if (all || this.ready >= this.batch) this.release();
  }

  /**
   * Hand the timed operations waiting to the sinks (before anything they read changes:
   * see CallAnalysis.release); those still waiting for a time move to the front.
   */
  release(): void {
    const a = this.analysis;
    if (a.waiting === this) a.waiting = undefined;
    const n = this.ready;
    if (n === 0) return;
    const sinks = a.sinks;
    for (let k = 0; k < sinks.length; k++) this.dispatch(sinks[k]!, n);
    const end = this.n;
    const rest = end - n;
    if (rest > 0) {
      for (const column of [
        this.op,
        this.what,
        this.depth,
        this.hi,
        this.lo,
        this.scope,
        this.icount,
        this.offset,
      ])
        column.copyWithin(0, n, end);
      this.tracks.copyWithin(0, n, end);
      this.messages.copyWithin(0, n, end);
    }
    this.tracks.fill(undefined, rest, end);
    this.n = rest;
    this.ready = 0;
  }

  private dispatch(s: CallSink, n: number): void {
    const { op, what, depth, hi, lo, scope, icount, times, tracks } = this;
    for (let i = 0; i < n; i++) {
      const o = op[i];
      if (o === ENTER)
        s.enter(
          tracks[i]!,
          depth[i]!,
          what[i] as FrameKind,
          hi[i]!,
          lo[i]!,
          times[i]!,
          icount[i]!,
          scope[i]!,
        );
      else if (o === EXIT) s.exit(tracks[i]!, depth[i]!, what[i] as FrameEnd, times[i]!, icount[i]!);
      else if (o === MARKER)
        s.marker(tracks[i]!, what[i] as Marker, this.offset[i]!, this.messages[i]!, times[i]!, icount[i]!);
      else if (o === RESUME) s.resume(tracks[i]!, times[i]!, icount[i]!);
      else s.suspend(tracks[i]!, times[i]!, icount[i]!);
    }
  }
}
