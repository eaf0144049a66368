/**
 * The frames of a ptkit timeline (Chrome trace-event JSON with begin/end events, see
 * src/analysis/export/timeline.ts) as complete frames, for tests: each begin paired
 * with its end on the same thread, in the order the frames end (children first).
 * Throws when an end does not close the thread's innermost open frame or a frame is
 * left open. `end` is how a frame ended when a "frame-end" instant says so.
 */

export interface TimelineEvent {
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  name: string;
  cat?: string;
  args?: Record<string, unknown>;
}

export interface TimelineFrame {
  pid: number;
  tid: number;
  name: string;
  cat: string;
  /** Microseconds, as in the file. */
  ts: number;
  dur: number;
  /** Whole nanoseconds. */
  startNs: number;
  stopNs: number;
  /** Position of its begin event in the file: sorting by it gives the frames parent first. */
  seq: number;
  /** The name of the frame it was entered from (the thread's innermost open one); null at the bottom. */
  caller: string | null;
  /** How it ended, when not by its return (unwind, gap, end, exec, ...). */
  end?: string;
}

/** `events`: the document's traceEvents (each a {@link TimelineEvent}). */
export function timelineFrames(events: readonly object[]): TimelineFrame[] {
  const open = new Map<string, { e: TimelineEvent; seq: number; caller: string | null }[]>();
  const ended = new Map<string, TimelineFrame[]>();
  const frames: TimelineFrame[] = [];
  let seq = 0;
  for (const e of events as readonly TimelineEvent[]) {
    seq++;
    const key = `${e.pid}/${e.tid}`;
    if (e.ph === "B") {
      if (!open.has(key)) open.set(key, []);
      const stack = open.get(key)!;
      stack.push({ e, seq, caller: stack.at(-1)?.e.name ?? null });
    } else if (e.ph === "E") {
      const opened = open.get(key)?.pop();
      const b = opened?.e;
      if (b === undefined || b.name !== e.name || b.ts > e.ts)
        throw new Error(`end of ${e.name} at ${e.ts} on ${key} does not close ${b?.name} (at ${b?.ts})`);
      const startNs = Math.round(b.ts * 1000);
      const stopNs = Math.round(e.ts * 1000);
      const frame = {
        pid: e.pid,
        tid: e.tid,
        name: e.name,
        cat: b.cat ?? "",
        ts: b.ts,
        dur: (stopNs - startNs) / 1000,
        startNs,
        stopNs,
        seq: opened!.seq,
        caller: opened!.caller,
      };
      frames.push(frame);
      if (!ended.has(key)) ended.set(key, []);
      ended.get(key)!.push(frame);
    } else if (e.ph === "i" && e.cat === "frame-end") {
      const list = ended.get(key) ?? [];
      const n = e.args!.frames as number;
      for (const f of list.slice(list.length - n)) (f as TimelineFrame).end = e.name;
    }
  }
  for (const [key, list] of open)
    if (list.length > 0) throw new Error(`${list.length} frames left open on ${key}`);
  return frames;
}
