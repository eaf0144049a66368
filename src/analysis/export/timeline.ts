/**
 * The function-call timeline as Chrome trace-event JSON (the JSON Object Format),
 * which the Perfetto UI (ui.perfetto.dev), chrome://tracing and speedscope open.
 * Streamed: events go to the writer callback in chunks as they happen, so a trace of
 * millions of calls never becomes one string.
 *
 * Schema "ptkit-timeline" version 2:
 * ```
 * {"traceEvents":[
 *   {"ph":"M","pid":0,"tid":0,"name":"process_name","args":{"name":"trace.pt"}},
 *   {"ph":"M","pid":0,"tid":0,"name":"thread_name","args":{"name":"trace.pt"}},
 *   {"ph":"B","pid":0,"tid":0,"ts":1.5,"name":"main","cat":"call"},
 *   {"ph":"B","pid":0,"tid":0,"ts":1.5,"name":"f","cat":"call"},
 *   {"ph":"E","pid":0,"tid":0,"ts":1.75,"name":"f"},
 *   {"ph":"i","s":"t","pid":0,"tid":0,"ts":2,"name":"overflow","cat":"gap","args":{"offset":4096}},
 *   {"ph":"E","pid":0,"tid":0,"ts":2,"name":"main"},
 *   {"ph":"i","s":"t","pid":0,"tid":0,"ts":2,"name":"gap","cat":"frame-end","args":{"frames":1,"depth":1}},
 *   ...],
 *  "displayTimeUnit":"ns",
 *  "otherData":{"schema":"ptkit-timeline","version":2,"clock":"ns","timeUnit":"ns","tscBase":"...","nsPerTick":0.33}}
 * ```
 * - Each frame is a begin ("B") event when it is entered and an end ("E") event, with
 *   the same name, when it ends. Events of a thread are in time order and a parent's
 *   begin comes before its children's, so the nesting is in the file itself and does
 *   not depend on how a viewer orders events with equal timestamps. (Complete "X"
 *   events are written at a frame's end, when its duration is known: children before
 *   parents, which the Perfetto UI nests upside down when they start at the same
 *   time; writing parents first would mean holding every descendant of a frame until
 *   it ends, the whole trace for a root frame. Begin/end events need nothing held
 *   beyond the open frames.) `name` is the function (see {@link FrameNames}), `cat`
 *   the frame kind (call, root, interrupt, far).
 * - A frame that ended other than by its return (unwind, unknown, gap, end: the trace
 *   ended, abort, exec: the thread exec'd another program) is followed by an instant
 *   event in category "frame-end" named by how, after the end events of all the
 *   frames that ended that way at that time: `args.frames` of them, down to
 *   `args.depth`. (Not in the frames' own args: viewers such as speedscope make a
 *   frame with args a function of its own, "main {...}".)
 * - `ts` is microseconds as the format wants, in whole nanoseconds of the clock
 *   (`otherData.clock`, see {@link ClockUnit}): with "ns" real time; without a TSC
 *   frequency ("tsc") one TSC tick and without timing ("insn") one instruction is
 *   written as one nanosecond. `otherData.timeUnit` says what one nanosecond of `ts`
 *   is ("ns", "TSC tick", "instruction") and each process name says so too, as
 *   viewers show no metadata: "trace.pt [time: TSC ticks shown as ns]".
 * - With the `origin` option (`ptkit perf --perf-time`), `ts` is that plus the clock:
 *   perf's time, as `perf script` prints it; `otherData.origin` is the ns added.
 * - Gaps (overflow, decode errors) are thread-scoped instant ("i") events in category
 *   "gap" with the trace offset (and the error message) in `args`.
 * - Each thread is a track: metadata ("M") events name its process and thread.
 */

import { doubleFields, mutableFields } from "../../base/halves.js";
import type { FrameEnd, FrameKind } from "../callstack.js";
import { FRAME_END_NAMES, FRAME_KIND_NAMES } from "../callstack.js";
import {
  type CallSink,
  type ClockInfo,
  type ClockUnit,
  MARKER_NAMES,
  type Marker,
  type ThreadTrack,
} from "../callstack-sink.js";
import { growInt32 } from "../key-table.js";
import { ByteChunks, type ChunkOut, putDecimal, putView, utf8, viewOf } from "./byte-chunks.js";
import { FrameEnds } from "./frame-ends.js";
import type { FrameNames } from "./frame-names.js";

export const TIMELINE_SCHEMA = "ptkit-timeline";
export const TIMELINE_VERSION = 2;

/** What one unit of each clock is, and how process names say it. */
const TIME_UNITS: Record<ClockUnit, { unit: string; label: string }> = {
  ns: { unit: "ns", label: "" },
  tsc: { unit: "TSC tick", label: " [time: TSC ticks shown as ns]" },
  insn: { unit: "instruction", label: " [time: instructions shown as ns]" },
};

/** The open frames of one thread, by depth (index depth - 1). */
class OpenFrames {
  /** What the thread's begin, end and instant events start with, up to the value of "ts". */
  readonly begin: DataView;
  readonly end: DataView;
  readonly head: Uint8Array;
  constructor(track: ThreadTrack) {
    this.begin = viewOf(utf8(`{"ph":"B","pid":${track.pid},"tid":${track.tid},"ts":`));
    this.end = viewOf(utf8(`{"ph":"E","pid":${track.pid},"tid":${track.tid},"ts":`));
    this.head = utf8(`{"ph":"i","s":"t","pid":${track.pid},"tid":${track.tid},"ts":`);
    // It grows with the stack while events are written.
    mutableFields(this, ["text"]);
  }
  /**
   * Each open frame's name: its FrameNames text id, or -1 past the names' limit (then
   * `spill` holds it as a JSON string).
   */
  text: Int32Array = new Int32Array(64);
  readonly spill: string[] = [];
}

// The pieces of begin and end events, as DataViews for putView.
const NAME = viewOf(utf8(',"name":'));
/** `,"cat":"KIND"}` per frame kind. */
const CATEGORIES = FRAME_KIND_NAMES.map((k) => viewOf(utf8(`,"cat":"${k}"}`)));
const SEPARATOR = utf8(",\n");
/** A "frame-end" instant after its time, per {@link FrameEnd}: up to its count of frames, then the depth, made once. */
const FRAME_END_HEADS = FRAME_END_NAMES.map((n) =>
  utf8(`,"name":"${n}","cat":"frame-end","args":{"frames":`),
);
const DEPTH = utf8(',"depth":');
const ARGS_CLOSE = utf8("}}");
const CLOSE = viewOf(utf8("}"));

export interface TimelineOptions {
  /**
   * The time to add to every clock value (whole ns), given the settled clock: e.g.
   * the perf time of its TSC base (`ptkit perf --perf-time`), so that `ts` is perf's
   * time; `otherData.origin` then says what was added. Default 0.
   */
  origin?: (clock: ClockInfo) => number;
  /** More members of `otherData`, asked for at the end (`--timeline-summary`'s `"summary":{...}`). */
  otherData?: () => string;
}

export class TimelineWriter implements CallSink {
  private readonly text: ByteChunks;
  private readonly open: (OpenFrames | undefined)[] = [];
  private readonly pids = new Set<number>();
  private first = true;
  private clock: ClockInfo | undefined;
  /** Frames that ended other than by their return, awaiting their "frame-end" instant. */
  private readonly ends = new FrameEnds<OpenFrames>();
  /** Added to every time (see TimelineOptions.origin). */
  private origin = 0;
  /** Begin, end and instant events written. */
  events = 0;

  constructor(
    out: ChunkOut,
    private readonly names: FrameNames,
    private readonly options: TimelineOptions = {},
  ) {
    this.text = new ByteChunks(out);
    // Every time is origin + a clock value: with the origin a double, so is each time from
    // the first, and the code that writes times, compiled seeing none but small integers,
    // is not thrown away when they pass 2^30 ns (1 s; real captures run longer).
    doubleFields(this, ["origin"]);
  }

  begin(clock: ClockInfo): void {
    this.clock = clock;
    this.origin = this.options.origin?.(clock) ?? 0;
    this.text.text('{"traceEvents":[');
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
    const f = this.frames(track);
    const names = this.names;
    const e = names.entry(kind, hi, lo, scope);
    if (depth > f.text.length) f.text = growInt32(f.text, depth);
    const id = e >= 0 ? names.textOf(e) : -1;
    f.text[depth - 1] = id;
    if (id < 0) f.spill[depth - 1] = JSON.stringify(names.name(kind, hi, lo, scope));
    this.event(false);
    this.record(f.begin, this.origin + Math.round(time), f, depth, CATEGORIES[kind]!);
  }

  /**
   * A begin or end event of `f`'s frame at `depth` after its separator: `head`, the
   * time, the name and `tail`. Written in place, in one piece (with a name past the
   * names' limit or a time micros() writes as text, piece by piece).
   */
  private record(head: DataView, ns: number, f: OpenFrames, depth: number, tail: DataView): void {
    const t = this.text;
    const id = f.text[depth - 1]!;
    if (id < 0 || !(ns >= 0 && ns <= Number.MAX_SAFE_INTEGER && Number.isInteger(ns))) {
      t.viewBytes(head);
      this.micros(ns);
      t.viewBytes(NAME);
      this.name(f, depth);
      t.viewBytes(tail);
      return;
    }
    const names = this.names;
    names.jsonBytes(id);
    const { arenaView, start, length } = names;
    // The time: up to 16 digits, a point and 3 decimals.
    let at = t.reserve(head.byteLength + 20 + NAME.byteLength + length + tail.byteLength);
    const v = t.view;
    at = putView(v, at, head, 0, head.byteLength);
    // (ns >= 0 here. The remainder first: us * 1000, a small integer times another,
    // overflows them past 2^31 ns and throws the compiled code away.)
    const thousandths = ns % 1000;
    at = putDecimal(t.buffer, at, (ns - thousandths) / 1000);
    // The decimals in one store: up to four bytes, in the room reserved for the time.
    v.setInt32(at, FRACTION_WORDS[thousandths]!, true);
    at += FRACTION_SIZES[thousandths]!;
    at = putView(v, at, NAME, 0, NAME.byteLength);
    at = putView(v, at, arenaView, start, length);
    at = putView(v, at, tail, 0, tail.byteLength);
    t.wrote(at);
  }

  /** The JSON name of `f`'s frame at `depth`. */
  private name(f: OpenFrames, depth: number): void {
    const id = f.text[depth - 1]!;
    if (id < 0) {
      this.text.text(f.spill[depth - 1]!);
      return;
    }
    const names = this.names;
    names.jsonBytes(id);
    this.text.slice(names.arena, names.start, names.length);
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number): void {
    const f = this.frames(track);
    const stop = this.origin + Math.round(time);
    // Frames ending together the same way (an unwind, the trace's end) share one instant.
    const together = this.ends.joins(f, depth, end, stop);
    if (!together) this.flushEnd();
    this.event(true);
    this.record(f.end, stop, f, depth, CLOSE);
    this.ends.add(f, depth, end, stop, together);
  }

  marker(track: ThreadTrack, what: Marker, offset: number, message: string, time: number): void {
    const f = this.frames(track);
    const msg = message === "" ? "" : `,"message":${JSON.stringify(message)}`;
    this.event(false);
    this.text.bytes(f.head);
    this.micros(this.origin + Math.round(time));
    this.text.text(`,"name":"${MARKER_NAMES[what]}","cat":"gap","args":{"offset":${offset}${msg}}}`);
  }

  finish(): void {
    this.flushEnd();
    const c = this.clock;
    const unit = TIME_UNITS[c?.unit ?? "insn"].unit;
    const extra = this.options.otherData?.();
    const origin = `${this.origin === 0 ? "" : `,"origin":${this.origin}`}${extra ? `,${extra}` : ""}`;
    const other = c
      ? `"clock":"${c.unit}","timeUnit":"${unit}","tscBase":"${c.tscBase}","nsPerTick":${c.nsPerTick}${origin}`
      : `"clock":"insn","timeUnit":"${unit}","tscBase":"","nsPerTick":0`;
    if (!c) this.text.text('{"traceEvents":[');
    this.text.text(
      `\n],\n"displayTimeUnit":"ns",\n"otherData":{"schema":"${TIMELINE_SCHEMA}","version":${TIMELINE_VERSION},${other}}}\n`,
    );
    this.text.flush();
  }

  /** Write the pending "frame-end" instant, if any. */
  private flushEnd(): void {
    const ends = this.ends;
    const f = ends.take();
    if (f === undefined) return;
    this.event(false);
    this.text.bytes(f.head);
    this.micros(ends.time);
    const t = this.text;
    t.bytes(FRAME_END_HEADS[ends.how]!);
    t.int(ends.count);
    t.bytes(DEPTH);
    t.int(ends.depth);
    t.bytes(ARGS_CLOSE);
  }

  /**
   * An event starts: the pending "frame-end" instant goes first unless this is an end
   * event that may share it (exit decides for those), then the separator.
   */
  private event(isEnd: boolean): void {
    if (this.ends.track !== undefined && !isEnd) this.flushEnd();
    if (this.first) this.text.byte(0x0a);
    else this.text.bytes(SEPARATOR);
    this.first = false;
    this.events++;
  }

  /**
   * Whole nanoseconds `ns` as microseconds with up to three decimals,
   * as the format wants: trailing zeros dropped, leading ones kept (5 -> 0.005, 50 -> 0.05,
   * 120 -> 0.12).
   */
  private micros(ns: number): void {
    const t = this.text;
    // Whole ns as record() has them (see there); anything else as String() would.
    const whole = ns >= 0 && Number.isInteger(ns);
    const frac = whole ? ns % 1000 : ns - Math.floor(ns / 1000) * 1000;
    const us = whole ? (ns - frac) / 1000 : Math.floor(ns / 1000);
    t.int(us);
    const size = FRACTION_SIZES[frac];
    if (size !== undefined) {
      const at = t.reserve(4);
      t.view.setInt32(at, FRACTION_WORDS[frac]!, true);
      t.wrote(at + size);
    } else if (frac !== 0) t.text(fraction(frac)); // not a whole number of ns: as String() has it
  }

  /** The thread's open frames; its metadata events when it is new. */
  private frames(track: ThreadTrack): OpenFrames {
    const f = this.open[track.index];
    if (f !== undefined) return f;
    const made = new OpenFrames(track);
    this.open[track.index] = made;
    const label = TIME_UNITS[this.clock?.unit ?? "ns"].label;
    const name = JSON.stringify(track.name === "" ? `${track.tid}` : track.name);
    if (!this.pids.has(track.pid)) {
      this.pids.add(track.pid);
      const pname = JSON.stringify(`${track.name === "" ? `${track.pid}` : track.name}${label}`);
      this.metadata(
        `{"ph":"M","pid":${track.pid},"tid":${track.tid},"name":"process_name","args":{"name":${pname}}}`,
      );
    }
    this.metadata(
      `{"ph":"M","pid":${track.pid},"tid":${track.tid},"name":"thread_name","args":{"name":${name}}}`,
    );
    return made;
  }

  private metadata(json: string): void {
    this.event(false);
    this.text.text(json);
  }
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

/**
 * {@link fraction} of 0..999 (0: none, the rest at most four bytes) as a little-endian
 * word, and its bytes: one store per time, on the timeline's hottest path.
 */
const FRACTION_WORDS = new Int32Array(1000);
const FRACTION_SIZES = new Uint8Array(1000);
for (let k = 1; k < 1000; k++) {
  const bytes = utf8(fraction(k));
  FRACTION_WORDS[k] = bytes.reduceRight((w, c) => (w << 8) | c, 0);
  FRACTION_SIZES[k] = bytes.length;
}
