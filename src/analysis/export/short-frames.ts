/**
 * `--min-duration`: a {@link CallSink} in front of the timelines that drops every frame
 * shorter than a bound, and with it everything it called (a callee ends no later than
 * its caller, so it is shorter still). Durations are measured as the timelines write
 * them: whole clock units (ns, or ticks or instructions shown as ns), end minus start,
 * each rounded; a frame of exactly the bound stays.
 *
 * Streamed: a frame's entry is held until its thread's clock passes its start by the
 * bound (any later event of that thread: an entry, an exit, a gap, a switch), then it
 * goes on with its original time; a frame that ends first was too short and goes
 * nowhere, nor do its exit or (since it was held) its callees'. What is held per
 * thread is the innermost open frames, never more than the stack. Frames dropped
 * this way take no part in the "frame-end" instants either (frames ended together by
 * an unwind or a gap count only the frames kept). Gaps and switches pass at once: a
 * gap ends every frame of its thread at its own time (callstack-tracker.ts), so every
 * held frame is settled at the gap and the events stay in time order.
 */
import type { FrameEnd, FrameKind } from "../callstack.js";
import type { CallSink, ClockInfo, Marker, ThreadTrack } from "../callstack-sink.js";
import { growFloat64, growUint32 } from "../key-table.js";

/** The held (undecided) innermost frames of one thread, by depth (index depth - 1). */
class HeldFrames {
  /** The outermost held depth; 0: none held. */
  from = 0;
  /** The thread's depth (its innermost open frame). */
  top = 0;
  kind: Uint32Array = new Uint32Array(64);
  hi: Uint32Array = new Uint32Array(64);
  lo: Uint32Array = new Uint32Array(64);
  scope: Uint32Array = new Uint32Array(64);
  time: Float64Array = new Float64Array(64);
  icount: Float64Array = new Float64Array(64);

  grow(depth: number): void {
    this.kind = growUint32(this.kind, depth);
    this.hi = growUint32(this.hi, depth);
    this.lo = growUint32(this.lo, depth);
    this.scope = growUint32(this.scope, depth);
    this.time = growFloat64(this.time, depth);
    this.icount = growFloat64(this.icount, depth);
  }
}

export class ShortFrameFilter implements CallSink {
  private readonly held: (HeldFrames | undefined)[] = [];
  /** Frames dropped for being short (each callee of a dropped frame counts too). */
  dropped = 0;

  /**
   * `min`: the shortest duration kept, in whole clock units (> 0); `onDropped`: told of
   * each frame dropped (callees too), with its duration (a summary's totals).
   */
  constructor(
    private readonly sinks: readonly CallSink[],
    private readonly min: number,
    private readonly onDropped?: (
      kind: FrameKind,
      hi: number,
      lo: number,
      scope: number,
      duration: number,
    ) => void,
  ) {}

  begin(clock: ClockInfo): void {
    for (const s of this.sinks) s.begin(clock);
  }

  resume(track: ThreadTrack, time: number, icount: number): void {
    this.settle(track, time);
    for (const s of this.sinks) s.resume(track, time, icount);
  }

  suspend(track: ThreadTrack, time: number, icount: number): void {
    this.settle(track, time);
    for (const s of this.sinks) s.suspend(track, time, icount);
  }

  enter(
    track: ThreadTrack,
    depth: number,
    kind: FrameKind,
    hi: number,
    lo: number,
    time: number,
    icount: number,
    scope: number,
  ): void {
    const h = this.settle(track, time);
    if (depth > h.kind.length) h.grow(depth);
    const i = depth - 1;
    h.kind[i] = kind;
    h.hi[i] = hi;
    h.lo[i] = lo;
    h.scope[i] = scope;
    h.time[i] = time;
    h.icount[i] = icount;
    if (h.from === 0) h.from = depth;
    h.top = depth;
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number, icount: number): void {
    const h = this.settle(track, time);
    h.top = depth - 1;
    if (h.from !== 0 && depth >= h.from) {
      // Still held at its end: shorter than the bound (its callees ended before it).
      this.dropped++;
      if (this.onDropped) {
        const i = depth - 1;
        const d = Math.round(time) - Math.round(h.time[i]!);
        this.onDropped(h.kind[i] as FrameKind, h.hi[i]!, h.lo[i]!, h.scope[i]!, d);
      }
      if (depth === h.from) h.from = 0;
      return;
    }
    for (const s of this.sinks) s.exit(track, depth, end, time, icount);
  }

  marker(
    track: ThreadTrack,
    what: Marker,
    offset: number,
    message: string,
    time: number,
    icount: number,
  ): void {
    this.settle(track, time);
    for (const s of this.sinks) s.marker(track, what, offset, message, time, icount);
  }

  finish(time: number, icount: number): void {
    for (const s of this.sinks) s.finish(time, icount);
  }

  /**
   * `track`'s clock is at `time`: its held frames that started at least the bound
   * before go on (outermost first: a frame is never shorter than its callees).
   */
  private settle(track: ThreadTrack, time: number): HeldFrames {
    let h = this.held[track.index];
    if (h === undefined) {
      h = new HeldFrames();
      this.held[track.index] = h;
    }
    if (h.from === 0) return h;
    const now = Math.round(time);
    let d = h.from;
    for (; d <= h.top && now - Math.round(h.time[d - 1]!) >= this.min; d++) {
      const i = d - 1;
      for (const s of this.sinks)
        s.enter(track, d, h.kind[i] as FrameKind, h.hi[i]!, h.lo[i]!, h.time[i]!, h.icount[i]!, h.scope[i]!);
    }
    h.from = d > h.top ? 0 : d;
    return h;
  }
}
