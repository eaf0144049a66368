/**
 * The frames of a `--perfetto` timeline, decoded with the hand-written Perfetto schema
 * (perfetto-proto.ts) and rebuilt per thread track from SLICE_BEGIN/SLICE_END events
 * with their interned names, in the shape timeline-frames.ts gives the JSON's: so the
 * two can be compared. Checks the sequence's rules on the way (throws): one sequence,
 * the first packet clears the incremental state, every event needs it, each interned
 * iid defined once and before use, each name interned once; slices close on their own
 * track, none left open.
 */

import { decodeTrace, type TracePacket } from "./perfetto-proto.js";
import type { TimelineFrame } from "./timeline-frames.js";

export interface PerfettoTimeline {
  packets: TracePacket[];
  /** Frames in the order they end (children first); times in ns as written (startNs, stopNs). */
  frames: TimelineFrame[];
  /** The interned event names, in order. */
  names: string[];
  /** Thread tracks: pid, tid, thread name, process name. */
  threads: { pid: number; tid: number; name: string; process: string }[];
  /** Instants: name, category, annotations by name. */
  instants: {
    pid: number;
    tid: number;
    ts: number;
    name: string;
    cat: string;
    args: Record<string, unknown>;
  }[];
}

export function perfettoTimeline(bytes: Uint8Array): PerfettoTimeline {
  const packets = decodeTrace(bytes);
  const names = new Map<bigint, string>();
  const categories = new Map<bigint, string>();
  const annotationNames = new Map<bigint, string>();
  const processes = new Map<bigint, { pid: number; name: string }>();
  const threads = new Map<bigint, { pid: number; tid: number; name: string; process: string }>();
  const open = new Map<
    bigint,
    { name: string; cat: string; ts: number; seq: number; caller: string | null }[]
  >();
  const ended = new Map<bigint, TimelineFrame[]>();
  const frames: TimelineFrame[] = [];
  const instants: PerfettoTimeline["instants"] = [];
  const intern = (index: Map<bigint, string>, list: { iid: bigint; name: string }[], what: string) => {
    for (const { iid, name } of list) {
      if (iid === 0n || index.has(iid)) throw new Error(`${what} iid ${iid} defined twice (or 0)`);
      if ([...index.values()].includes(name)) throw new Error(`${what} "${name}" interned twice`);
      index.set(iid, name);
    }
  };
  const lookup = (index: Map<bigint, string>, iid: bigint, what: string) => {
    const name = index.get(iid);
    if (name === undefined) throw new Error(`${what} iid ${iid} used before it was interned`);
    return name;
  };
  let seq = 0;
  packets.forEach((p, i) => {
    if (p.trustedPacketSequenceId !== 1)
      throw new Error(`packet ${i}: sequence ${p.trustedPacketSequenceId}`);
    if ((i === 0) !== ((p.sequenceFlags & 1) !== 0))
      throw new Error(`packet ${i}: only the first packet clears the incremental state`);
    const d = p.internedData;
    if (d !== undefined) {
      intern(names, d.eventNames, "event name");
      intern(categories, d.eventCategories, "category");
      intern(annotationNames, d.debugAnnotationNames, "annotation name");
    }
    const t = p.trackDescriptor;
    if (t?.process !== undefined) processes.set(t.uuid, { pid: t.process.pid, name: t.process.processName });
    if (t?.thread !== undefined) {
      const parent = processes.get(t.parentUuid);
      if (parent === undefined || parent.pid !== t.thread.pid)
        throw new Error(`thread track ${t.uuid}: no process`);
      threads.set(t.uuid, {
        pid: t.thread.pid,
        tid: t.thread.tid,
        name: t.thread.threadName,
        process: parent.name,
      });
    }
    const e = p.trackEvent;
    if (e === undefined) return;
    seq++;
    if ((p.sequenceFlags & 2) === 0)
      throw new Error(`packet ${i}: an event without SEQ_NEEDS_INCREMENTAL_STATE`);
    const thread = threads.get(e.trackUuid);
    if (thread === undefined) throw new Error(`packet ${i}: event on unknown track ${e.trackUuid}`);
    const ts = Number(p.timestamp);
    const stack = open.get(e.trackUuid) ?? [];
    open.set(e.trackUuid, stack);
    if (e.type === 1) {
      const name = lookup(names, e.nameIid, "event name");
      const cat = lookup(categories, e.categoryIids[0]!, "category");
      stack.push({ name, cat, ts, seq, caller: stack.at(-1)?.name ?? null });
    } else if (e.type === 2) {
      const b = stack.pop();
      if (b === undefined || b.ts > ts)
        throw new Error(`packet ${i}: end at ${ts} closes ${b?.name} at ${b?.ts}`);
      const frame: TimelineFrame = {
        pid: thread.pid,
        tid: thread.tid,
        name: b.name,
        cat: b.cat,
        ts: b.ts / 1000,
        dur: (ts - b.ts) / 1000,
        startNs: b.ts,
        stopNs: ts,
        seq: b.seq,
        caller: b.caller,
      };
      frames.push(frame);
      const list = ended.get(e.trackUuid) ?? [];
      list.push(frame);
      ended.set(e.trackUuid, list);
    } else if (e.type === 3) {
      const args: Record<string, unknown> = {};
      for (const a of e.debugAnnotations)
        args[lookup(annotationNames, a.nameIid, "annotation name")] =
          a.stringValue !== "" ? a.stringValue : Number(a.intValue);
      const name = lookup(names, e.nameIid, "event name");
      const cat = lookup(categories, e.categoryIids[0]!, "category");
      instants.push({ pid: thread.pid, tid: thread.tid, ts, name, cat, args });
      if (cat === "frame-end") {
        const list = ended.get(e.trackUuid) ?? [];
        for (const f of list.slice(list.length - (args.frames as number))) f.end = name;
      }
    } else throw new Error(`packet ${i}: event type ${e.type}`);
  });
  for (const [uuid, list] of open)
    if (list.length > 0) throw new Error(`${list.length} slices left open on ${uuid}`);
  return { packets, frames, names: [...names.values()], threads: [...threads.values()], instants };
}
