/**
 * The function-call timeline in Perfetto's own trace format: protobuf `TracePacket`s,
 * each written as field 1 of the `Trace` message, so the file is one `Trace` (what
 * ui.perfetto.dev and trace_processor open). Streamed like the JSON timeline
 * (timeline.ts) and written as it happens; a call costs about a third of the JSON's
 * bytes, and the UI loads traces far past the JSON's limits (chrome://tracing stops at
 * 256 MB, the Perfetto UI at about 1 GB of JSON).
 *
 * What is in it (one packet sequence, `trusted_packet_sequence_id` 1):
 * - a first packet clearing the sequence's incremental state
 *   (`sequence_flags` SEQ_INCREMENTAL_STATE_CLEARED) with the interned categories
 *   (the frame kinds call, root, interrupt, far, then "frame-end" and "gap") and debug
 *   annotation names (frames, depth, offset, message);
 * - per process a track (TrackDescriptor with a ProcessDescriptor: pid, process name)
 *   and per thread a track under it (TrackDescriptor with `parent_uuid` and a
 *   ThreadDescriptor: pid, tid, thread name), when it first shows up; track uuids count
 *   from 1 in order of appearance;
 * - per frame a TYPE_SLICE_BEGIN TrackEvent on its thread's track when it is entered,
 *   with the interned name (`name_iid`) and category (`category_iids`: its kind), and a
 *   TYPE_SLICE_END when it ends. Each distinct name goes out once, in a packet of
 *   `InternedData.event_names` (iid, name) just before the first event that uses it;
 *   every event packet says SEQ_NEEDS_INCREMENTAL_STATE;
 * - as in the JSON: frames ended other than by their return get a TYPE_INSTANT event
 *   in category "frame-end" named by how (unwind, gap, end, ...) with debug
 *   annotations `frames` and `depth`; gaps an instant in category "gap" named
 *   "overflow" or "error" with `offset` (and `message`).
 *
 * Times (`TracePacket.timestamp`, the default clock) are whole nanoseconds: the clock's
 * (see {@link ClockUnit}; without a TSC frequency one tick or instruction per ns, and
 * the process names say so as the JSON's do) plus the `origin` option's value, which
 * `ptkit perf` sets to the perf time of the trace's first TSC: then the timestamps are
 * perf's (what `perf script` prints, in ns).
 *
 * Field numbers, from Perfetto's protos (protos/perfetto/trace/...), for review:
 * | message (file) | fields used |
 * | --- | --- |
 * | Trace (trace.proto) | packet 1 |
 * | TracePacket (trace_packet.proto) | timestamp 8, trusted_packet_sequence_id 10, track_event 11, interned_data 12, sequence_flags 13 (SEQ_INCREMENTAL_STATE_CLEARED 1, SEQ_NEEDS_INCREMENTAL_STATE 2), track_descriptor 60 |
 * | TrackEvent (track_event/track_event.proto) | category_iids 3, debug_annotations 4, type 9 (TYPE_SLICE_BEGIN 1, TYPE_SLICE_END 2, TYPE_INSTANT 3), name_iid 10, track_uuid 11 |
 * | EventCategory, EventName (track_event/track_event.proto) | iid 1, name 2 |
 * | TrackDescriptor (track_event/track_descriptor.proto) | uuid 1, process 3, thread 4, parent_uuid 5 |
 * | ProcessDescriptor (track_event/process_descriptor.proto) | pid 1, process_name 6 |
 * | ThreadDescriptor (track_event/thread_descriptor.proto) | pid 1, tid 2, thread_name 5 |
 * | InternedData (interned_data/interned_data.proto) | event_categories 1, event_names 2, debug_annotation_names 3 |
 * | DebugAnnotation, DebugAnnotationName (track_event/debug_annotation.proto) | name_iid 1, int_value 4, string_value 6; iid 1, name 2 |
 *
 * Encoding: the rare packets (descriptors, interned data) with @bufbuild/protobuf's
 * BinaryWriter; the event packets, one or two per call, by hand into the chunk buffer
 * from sizes worked out first (a BinaryWriter per event took 2-3 µs, 30 to 45 times
 * the hand-written encoding's 0.07 µs, in a micro-benchmark of a million begin events).
 */
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
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
import { ByteChunks, type ChunkOut, utf8, varintSize } from "./byte-chunks.js";
import { FrameEnds } from "./frame-ends.js";
import type { FrameNames } from "./frame-names.js";

/** TracePacket fields (trace_packet.proto). */
const Packet = {
  timestamp: 8,
  sequenceId: 10,
  trackEvent: 11,
  internedData: 12,
  sequenceFlags: 13,
  trackDescriptor: 60,
} as const;
const SEQ_INCREMENTAL_STATE_CLEARED = 1;
const SEQ_NEEDS_INCREMENTAL_STATE = 2;
/** Every packet's `trusted_packet_sequence_id`. */
const SEQUENCE = 1;
/** TrackEvent.Type (track_event.proto). */
const SLICE_BEGIN = 1;
const SLICE_END = 2;
const INSTANT = 3;

/** Interned categories: the frame kinds (iid kind + 1), then these. */
const CATEGORY_NAMES = [...FRAME_KIND_NAMES, "frame-end", "gap"];
const FRAME_END_CATEGORY = FRAME_KIND_NAMES.length + 1;
const GAP_CATEGORY = FRAME_KIND_NAMES.length + 2;
/** Interned debug annotation names (iid index + 1). */
const ANNOTATION_NAMES = ["frames", "depth", "offset", "message"];
const [FRAMES, DEPTH, OFFSET, MESSAGE] = [1, 2, 3, 4];

/** Hand-encoded pieces (a tag byte is field << 3 | wire type). */
const TRACE_PACKET = 0x0a; // Trace.packet = 1, length-delimited
const TIMESTAMP = 0x40; // TracePacket.timestamp = 8, varint
const TRACK_EVENT = 0x5a; // TracePacket.track_event = 11, length-delimited
const NAME_IID = 0x50; // TrackEvent.name_iid = 10, varint
const ANNOTATION = 0x22; // TrackEvent.debug_annotations = 4, length-delimited
const ANNOTATION_NAME = 0x08; // DebugAnnotation.name_iid = 1, varint
const INT_VALUE = 0x20; // DebugAnnotation.int_value = 4, varint
const STRING_VALUE = 0x32; // DebugAnnotation.string_value = 6, length-delimited
/** What ends every event packet: trusted_packet_sequence_id (10) 1, sequence_flags (13) SEQ_NEEDS_INCREMENTAL_STATE. */
const TRAILER = new Uint8Array([0x50, SEQUENCE, 0x68, SEQ_NEEDS_INCREMENTAL_STATE]);
/** TrackEvent.category_iids (3) and type (9) of a begin event, per frame kind. */
const BEGIN_HEAD = FRAME_KIND_NAMES.map((_, k) => new Uint8Array([0x18, k + 1, 0x48, SLICE_BEGIN]));
/** The same for instants, per category iid. */
const INSTANT_HEAD = CATEGORY_NAMES.map((_, c) => new Uint8Array([0x18, c + 1, 0x48, INSTANT]));

/** How process names say what one nanosecond is when it is not one (as the JSON's). */
const CLOCK_LABELS: Record<ClockUnit, string> = {
  ns: "",
  tsc: " [time: TSC ticks shown as ns]",
  insn: " [time: instructions shown as ns]",
};

export interface PerfettoOptions {
  /**
   * The time to add to every clock value (whole ns), given the settled clock: e.g.
   * the perf time of its TSC base, so that timestamps are perf's. Default 0.
   */
  origin?: (clock: ClockInfo) => number;
}

/** A thread's track and the pieces of its events that never change. */
class PerfettoTrack {
  /** TrackEvent.track_uuid (11) of the track. */
  readonly trackField: Uint8Array;
  /** The whole TrackEvent field of an end event: type SLICE_END on the track. */
  readonly endEvent: Uint8Array;
  constructor(readonly uuid: number) {
    const w = new BinaryWriter().tag(11, WireType.Varint).uint64(uuid);
    this.trackField = w.finish();
    const event = new BinaryWriter().tag(9, WireType.Varint).int32(SLICE_END).raw(this.trackField).finish();
    this.endEvent = new BinaryWriter().tag(Packet.trackEvent, WireType.LengthDelimited).bytes(event).finish();
  }
}

export class PerfettoWriter implements CallSink {
  private readonly out: ByteChunks;
  private readonly tracks: (PerfettoTrack | undefined)[] = [];
  private readonly processes = new Map<number, number>();
  private nextUuid = 1;
  private clock: ClockInfo | undefined;
  private origin = 0;
  /** Event name iids by text id (0: not yet sent), and by name (each distinct name once). */
  private textIid: Int32Array = new Int32Array(1024);
  private readonly nameIid = new Map<string, number>();
  /** Frames that ended other than by their return, awaiting their "frame-end" instant. */
  private readonly ends = new FrameEnds<PerfettoTrack>();
  /** Track events written (begin, end, instant). */
  events = 0;

  constructor(
    out: ChunkOut,
    private readonly names: FrameNames,
    private readonly options: PerfettoOptions = {},
  ) {
    this.out = new ByteChunks(out);
  }

  begin(clock: ClockInfo): void {
    this.clock = clock;
    this.origin = this.options.origin?.(clock) ?? 0;
    this.start();
  }

  /** The first packet: incremental state cleared, categories and annotation names interned. */
  private start(): void {
    const w = this.packet(SEQ_INCREMENTAL_STATE_CLEARED);
    w.tag(Packet.internedData, WireType.LengthDelimited).fork();
    CATEGORY_NAMES.forEach((name, i) => {
      interned(w, 1, i + 1, utf8(name)); // InternedData.event_categories
    });
    ANNOTATION_NAMES.forEach((name, i) => {
      interned(w, 3, i + 1, utf8(name)); // InternedData.debug_annotation_names
    });
    w.join();
    this.send(w);
  }

  resume(track: ThreadTrack): void {
    this.track(track);
  }

  suspend(): void {}

  enter(
    track: ThreadTrack,
    _depth: number,
    kind: FrameKind,
    hi: number,
    lo: number,
    time: number,
    _icount: number,
    scope: number,
  ): void {
    const f = this.track(track);
    const names = this.names;
    const e = names.entry(kind, hi, lo, scope);
    const iid = e >= 0 ? this.textName(names.textOf(e)) : this.name(names.name(kind, hi, lo, scope));
    this.flushEnd();
    const ts = this.origin + Math.round(time);
    const head = BEGIN_HEAD[kind]!;
    this.event(f, ts, head, iid, head.length + 1 + varintSize(iid) + f.trackField.length);
    this.out.bytes(TRAILER);
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number): void {
    const f = this.track(track);
    const stop = this.origin + Math.round(time);
    // Frames ending together the same way share one instant (as in the JSON).
    const together = this.ends.joins(f, depth, end, stop);
    if (!together) this.flushEnd();
    this.head(stop, f.endEvent.length);
    this.out.bytes(f.endEvent);
    this.out.bytes(TRAILER);
    this.ends.add(f, depth, end, stop, together);
  }

  marker(track: ThreadTrack, what: Marker, offset: number, message: string, time: number): void {
    const f = this.track(track);
    this.flushEnd();
    const text = message === "" ? undefined : utf8(message);
    this.instant(
      f,
      this.origin + Math.round(time),
      MARKER_NAMES[what]!,
      GAP_CATEGORY,
      OFFSET,
      offset,
      0,
      0,
      text,
    );
  }

  finish(): void {
    this.flushEnd();
    if (this.clock === undefined) this.start();
    this.out.flush();
  }

  /** Write the pending "frame-end" instant, if any. */
  private flushEnd(): void {
    const ends = this.ends;
    const f = ends.take();
    if (f === undefined) return;
    const how = FRAME_END_NAMES[ends.how]!;
    this.instant(f, ends.time, how, FRAME_END_CATEGORY, FRAMES, ends.count, DEPTH, ends.depth);
  }

  /**
   * An instant on `f`'s track named `name`, in category `category`, with integer
   * annotations a (and b, unless bName is 0) and a `message` annotation if given.
   */
  private instant(
    f: PerfettoTrack,
    ts: number,
    name: string,
    category: number,
    aName: number,
    a: number,
    bName: number,
    b: number,
    message?: Uint8Array,
  ): void {
    const iid = this.name(name);
    const aSize = 2 + intSize(a) + 1;
    const bSize = bName === 0 ? 0 : 2 + intSize(b) + 1;
    const mBody = message === undefined ? 0 : 3 + varintSize(message.length) + message.length;
    const head = INSTANT_HEAD[category - 1]!;
    let event = head.length + 1 + varintSize(iid) + f.trackField.length + 1 + varintSize(aSize) + aSize;
    if (bName !== 0) event += 1 + varintSize(bSize) + bSize;
    if (message !== undefined) event += 1 + varintSize(mBody) + mBody;
    const o = this.out;
    this.event(f, ts, head, iid, event);
    this.annotation(aSize, aName, a);
    if (bName !== 0) this.annotation(bSize, bName, b);
    if (message !== undefined) {
      o.byte(ANNOTATION);
      o.varint(mBody);
      o.byte(ANNOTATION_NAME);
      o.byte(MESSAGE);
      o.byte(STRING_VALUE);
      o.varint(message.length);
      o.bytes(message);
    }
    o.bytes(TRAILER);
  }

  /**
   * An event packet's start up to its fields after the track: the packet's head, the
   * TrackEvent tag and length (`event` bytes in all), `head` (type and category), the
   * name iid and `f`'s track. The caller writes the rest of the event and the trailer.
   */
  private event(f: PerfettoTrack, ts: number, head: Uint8Array, iid: number, event: number): void {
    const o = this.out;
    this.head(ts, 1 + varintSize(event) + event);
    o.byte(TRACK_EVENT);
    o.varint(event);
    o.bytes(head);
    o.byte(NAME_IID);
    o.varint(iid);
    o.bytes(f.trackField);
  }

  /** A DebugAnnotation of `size` bytes: name iid `name` (below 128), int_value `v`. */
  private annotation(size: number, name: number, v: number): void {
    const o = this.out;
    o.byte(ANNOTATION);
    o.varint(size);
    o.byte(ANNOTATION_NAME);
    o.byte(name);
    o.byte(INT_VALUE);
    if (v >= 0) o.varint(v);
    else o.varint64(Math.floor(v / 0x1_0000_0000), v >>> 0); // two's complement: ten bytes
  }

  /**
   * The start of an event packet: the Trace.packet tag and length (the timestamp, a
   * TrackEvent field of `event` bytes and the trailer), then the timestamp.
   */
  private head(ts: number, event: number): void {
    const o = this.out;
    o.byte(TRACE_PACKET);
    o.varint(1 + varintSize(ts) + event + TRAILER.length);
    o.byte(TIMESTAMP);
    o.varint(ts);
    this.events++;
  }

  /** The event name iid of FrameNames text `t`, interned on first use (its bytes come from the arena). */
  private textName(t: number): number {
    if (t >= this.textIid.length) this.textIid = growInt32(this.textIid, t + 1);
    let iid = this.textIid[t]!;
    if (iid === 0) {
      const names = this.names;
      names.nameBytes(t);
      iid = this.name(names.textName(t), names.arena.subarray(names.start, names.start + names.length));
      this.textIid[t] = iid;
    }
    return iid;
  }

  /**
   * The event name iid of `name` (texts may repeat a name: each distinct one is sent
   * once), interned in a packet of its own when new; `bytes`: its UTF-8, if at hand.
   */
  private name(name: string, bytes?: Uint8Array): number {
    let iid = this.nameIid.get(name);
    if (iid !== undefined) return iid;
    iid = this.nameIid.size + 1;
    this.nameIid.set(name, iid);
    const w = this.packet(SEQ_NEEDS_INCREMENTAL_STATE);
    w.tag(Packet.internedData, WireType.LengthDelimited).fork();
    interned(w, 2, iid, bytes ?? utf8(name)); // InternedData.event_names
    this.send(w.join());
    return iid;
  }

  /** The track of `track`'s thread; its descriptors (and its process's) when it is new. */
  private track(track: ThreadTrack): PerfettoTrack {
    const known = this.tracks[track.index];
    if (known !== undefined) return known;
    let parent = this.processes.get(track.pid);
    if (parent === undefined) {
      parent = this.nextUuid++;
      this.processes.set(track.pid, parent);
      const label = CLOCK_LABELS[this.clock?.unit ?? "ns"];
      const w = this.packet(0);
      w.tag(Packet.trackDescriptor, WireType.LengthDelimited).fork();
      w.tag(1, WireType.Varint).uint64(parent); // TrackDescriptor.uuid
      w.tag(3, WireType.LengthDelimited).fork(); // TrackDescriptor.process
      w.tag(1, WireType.Varint).int32(track.pid | 0); // ProcessDescriptor.pid
      w.tag(6, WireType.LengthDelimited).string(`${track.name === "" ? track.pid : track.name}${label}`);
      this.send(w.join().join());
    }
    const made = new PerfettoTrack(this.nextUuid++);
    this.tracks[track.index] = made;
    const w = this.packet(0);
    w.tag(Packet.trackDescriptor, WireType.LengthDelimited).fork();
    w.tag(1, WireType.Varint).uint64(made.uuid); // TrackDescriptor.uuid
    w.tag(5, WireType.Varint).uint64(parent); // TrackDescriptor.parent_uuid
    w.tag(4, WireType.LengthDelimited).fork(); // TrackDescriptor.thread
    w.tag(1, WireType.Varint).int32(track.pid | 0); // ThreadDescriptor.pid
    w.tag(2, WireType.Varint).int32(track.tid | 0); // ThreadDescriptor.tid
    w.tag(5, WireType.LengthDelimited).string(track.name === "" ? `${track.tid}` : track.name);
    this.send(w.join().join());
    return made;
  }

  /** A packet under way on the sequence, with `flags` (0: none), its Trace.packet field opened. */
  private packet(flags: number): BinaryWriter {
    const w = new BinaryWriter().tag(1, WireType.LengthDelimited).fork();
    w.tag(Packet.sequenceId, WireType.Varint).uint32(SEQUENCE);
    if (flags !== 0) w.tag(Packet.sequenceFlags, WireType.Varint).uint32(flags);
    return w;
  }

  /** Close the Trace.packet field {@link packet} opened and write it. */
  private send(w: BinaryWriter): void {
    this.out.bytes(w.join().finish());
  }
}

/** An interned entry (EventCategory, EventName, DebugAnnotationName: iid 1, name 2) as InternedData field `field`. */
function interned(w: BinaryWriter, field: number, iid: number, name: Uint8Array): void {
  w.tag(field, WireType.LengthDelimited).fork();
  w.tag(1, WireType.Varint).uint64(iid);
  w.tag(2, WireType.LengthDelimited).bytes(name);
  w.join();
}

/** Bytes of an int64 varint of `v` (negative: ten). */
function intSize(v: number): number {
  return v < 0 ? 10 : varintSize(v);
}
