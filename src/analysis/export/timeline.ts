/**
 * The function-call timeline as Chrome trace-event JSON (the JSON Object Format),
 * which the Perfetto UI (ui.perfetto.dev) and chrome://tracing open. Streamed: events
 * go to the writer callback in chunks as frames end, so a trace of millions of calls
 * never becomes one string.
 *
 * Schema "ptkit-timeline" version 1:
 * ```
 * {"traceEvents":[
 *   {"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"trace.pt"}},
 *   {"ph":"M","pid":0,"tid":0,"name":"thread_name","args":{"name":"trace.pt"}},
 *   {"ph":"X","pid":0,"tid":0,"ts":1.5,"dur":0.25,"name":"main","cat":"call"},
 *   {"ph":"X",...,"cat":"interrupt","args":{"end":"gap"}},
 *   {"ph":"i","s":"t","pid":0,"tid":0,"ts":2,"name":"overflow","cat":"gap","args":{"offset":4096}},
 *   ...],
 *  "displayTimeUnit":"ns",
 *  "otherData":{"schema":"ptkit-timeline","version":1,"clock":"ns","tscBase":"...","nsPerTick":0.33}}
 * ```
 * - One complete ("X") event per frame, written when the frame ends (so children come
 *   before their parents; viewers sort by time). `name` is the function (see
 *   {@link FrameNames}), `cat` the frame kind (call, root, interrupt, far);
 *   `args.end` says how a frame ended when it was not by its return (unwind, unknown,
 *   gap, end, abort, exec: the thread exec'd another program).
 * - `ts`/`dur` are microseconds as the format wants, `ts` in whole nanoseconds; a
 *   `dur` carries more digits where that makes `ts + dur`, added as doubles, land
 *   exactly on the frame's end (see {@link duration}). With clock "tsc" one TSC tick and
 *   with clock "insn" one instruction are shown as one nanosecond (see
 *   {@link ClockUnit}).
 * - Gaps (overflow, decode errors) are thread-scoped instant ("i") events in category
 *   "gap" with the trace offset (and the error message) in `args`.
 * - Each thread is a track: metadata ("M") events name its process and thread.
 */

import type { FrameEnd, FrameKind } from "../callstack.js";
import { FRAME_END_NAMES, FRAME_KIND_NAMES } from "../callstack.js";
import {
  type CallSink,
  type ClockInfo,
  MARKER_NAMES,
  type Marker,
  type ThreadTrack,
} from "../callstack-sink.js";
import { growFloat64, growUint32 } from "../key-table.js";
import type { FrameNames } from "./frame-names.js";
import { TextChunks } from "./text-chunks.js";

export const TIMELINE_SCHEMA = "ptkit-timeline";
export const TIMELINE_VERSION = 1;

/** The open frames of one thread, by depth (index depth - 1). */
class OpenFrames {
  /** What the thread's complete events start with, up to the value of "ts". */
  constructor(readonly head: string) {}
  start: Float64Array = new Float64Array(16);
  kind: Uint32Array = new Uint32Array(16);
  hi: Uint32Array = new Uint32Array(16);
  lo: Uint32Array = new Uint32Array(16);
  /** The naming scope of each frame (see {@link FrameNames.scope}). */
  scope: Uint32Array = new Uint32Array(16);
}

export class TimelineWriter implements CallSink {
  private readonly text: TextChunks;
  private readonly open: (OpenFrames | undefined)[] = [];
  private readonly pids = new Set<number>();
  private first = true;
  private clock: ClockInfo | undefined;
  /** Frames and markers written. */
  events = 0;

  constructor(
    out: (chunk: string) => void,
    private readonly names: FrameNames,
  ) {
    this.text = new TextChunks(out);
  }

  begin(clock: ClockInfo): void {
    this.clock = clock;
    this.text.write('{"traceEvents":[');
  }

  resume(track: ThreadTrack): void {
    this.frames(track);
  }

  suspend(): void {}

  enter(
    track: ThreadTrack,
    depth: number,
    kind: FrameKind,
    hi: number,
    lo: number,
    time: number,
    _icount: number,
    scope: number,
  ): void {
    let f = this.frames(track);
    if (depth > f.start.length) f = this.grow(track, depth);
    const i = depth - 1;
    f.start[i] = time;
    f.kind[i] = kind;
    f.hi[i] = hi;
    f.lo[i] = lo;
    f.scope[i] = scope;
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number): void {
    const f = this.frames(track);
    const i = depth - 1;
    const kind = f.kind[i] as FrameKind;
    const start = Math.round(f.start[i]!);
    const stop = Math.round(time);
    const name = this.names.json(kind, f.hi[i]!, f.lo[i]!, f.scope[i]!);
    const args = end === 0 ? "" : `,"args":{"end":"${FRAME_END_NAMES[end]}"}`;
    this.event(
      `${f.head}${micros(start)},"dur":${duration(start, stop)},"name":${name},"cat":"${FRAME_KIND_NAMES[kind]}"${args}}`,
    );
  }

  marker(track: ThreadTrack, what: Marker, offset: number, message: string, time: number): void {
    this.frames(track);
    const msg = message === "" ? "" : `,"message":${JSON.stringify(message)}`;
    this.event(
      `{"ph":"i","s":"t","pid":${track.pid},"tid":${track.tid},"ts":${micros(Math.round(time))},"name":"${MARKER_NAMES[what]}","cat":"gap","args":{"offset":${offset}${msg}}}`,
    );
  }

  finish(): void {
    const c = this.clock;
    const other = c
      ? `"clock":"${c.unit}","tscBase":"${c.tscBase}","nsPerTick":${c.nsPerTick}`
      : '"clock":"insn","tscBase":"","nsPerTick":0';
    if (!c) this.text.write('{"traceEvents":[');
    this.text.write(
      `\n],\n"displayTimeUnit":"ns",\n"otherData":{"schema":"${TIMELINE_SCHEMA}","version":${TIMELINE_VERSION},${other}}}\n`,
    );
    this.text.flush();
  }

  private event(json: string): void {
    this.text.write(this.first ? `\n${json}` : `,\n${json}`);
    this.first = false;
    this.events++;
  }

  /** The thread's open frames; its metadata events when it is new. */
  private frames(track: ThreadTrack): OpenFrames {
    const f = this.open[track.index];
    if (f !== undefined) return f;
    const made = new OpenFrames(`{"ph":"X","pid":${track.pid},"tid":${track.tid},"ts":`);
    this.open[track.index] = made;
    const name = JSON.stringify(track.name === "" ? `${track.tid}` : track.name);
    if (!this.pids.has(track.pid)) {
      this.pids.add(track.pid);
      const pname = JSON.stringify(track.name === "" ? `${track.pid}` : track.name);
      this.event(
        `{"ph":"M","pid":${track.pid},"tid":${track.tid},"name":"process_name","args":{"name":${pname}}}`,
      );
    }
    this.event(
      `{"ph":"M","pid":${track.pid},"tid":${track.tid},"name":"thread_name","args":{"name":${name}}}`,
    );
    return made;
  }

  private grow(track: ThreadTrack, depth: number): OpenFrames {
    const f = this.frames(track);
    f.start = growFloat64(f.start, depth);
    f.kind = growUint32(f.kind, depth);
    f.hi = growUint32(f.hi, depth);
    f.lo = growUint32(f.lo, depth);
    f.scope = growUint32(f.scope, depth);
    return f;
  }
}

/**
 * The "dur" of a frame from `start` to `stop` (whole nanoseconds). Viewers such as
 * speedscope and chrome://tracing compute a frame's end as ts + dur in doubles:
 * 0.267 + 0.016 is 0.28300000000000003, after a sibling that starts at 0.283, which
 * breaks the nesting. Where the short decimal would miss, the duration is written as
 * the double that lands on the end (the difference of the two doubles, printed to
 * round-trip); the Perfetto UI, which reads times as whole nanoseconds, reads the
 * same duration either way.
 */
function duration(start: number, stop: number): string {
  const ts = start / 1000;
  const end = stop / 1000;
  const short = (stop - start) / 1000;
  return ts + short === end ? micros(stop - start) : `${end - ts}`;
}

/**
 * Whole nanoseconds as microseconds with up to three decimals, as the format wants
 * (integer formatting: much faster than printing the quotient as a double).
 */
function micros(ns: number): string {
  const us = Math.floor(ns / 1000);
  const frac = ns - us * 1000;
  if (frac === 0) return `${us}`;
  return `${us}${FRACTIONS[frac] ?? fraction(frac)}`;
}

/** The decimals of `frac` thousandths: trailing zeros dropped, leading ones kept (5 -> .005, 50 -> .05, 120 -> .12). */
function fraction(frac: number): string {
  let f = frac;
  let width = 3;
  while (f % 10 === 0) {
    f /= 10;
    width--;
  }
  const digits = `${f}`;
  return `.${"00".slice(0, width - digits.length)}${digits}`;
}

/** {@link fraction} of 1..999 (index 0 unused), made once. */
const FRACTIONS: readonly string[] = Array.from({ length: 1000 }, (_, k) => (k === 0 ? "" : fraction(k)));
