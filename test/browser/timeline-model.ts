/**
 * What a trace viewer should make of a ptkit timeline (Chrome trace-event JSON): the
 * threads, and for the first thread every function's total time (while it is on the
 * stack, counted once through recursion) and self time (minus its callees), computed
 * here from the begin/end events' nesting in integer nanoseconds.
 *
 * Functions are keyed by name, as speedscope keys frames without args (ptkit's have none).
 */
import { timelineFrames } from "../analysis/timeline-frames.js";

export interface TraceEvent {
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  name: string;
  args?: object;
}

export interface FunctionTimes {
  /** Nanoseconds. */
  total: number;
  self: number;
}

export interface TimelineModel {
  /** "pid:tid" of each thread with frames, sorted by pid then tid (speedscope's profile order). */
  threads: string[];
  /** The first thread's functions. */
  functions: Map<string, FunctionTimes>;
  /** Frames of the first thread. */
  frames: number;
}

interface Frame {
  key: string;
  start: number;
  /** Time covered by direct callees. */
  inner: number;
}

export function timelineModel(events: readonly TraceEvent[]): TimelineModel {
  // Checks that begin and end events pair up and nest.
  const complete = timelineFrames(events);
  const threads = [...new Map(complete.map((e) => [`${e.pid}:${e.tid}`, [e.pid, e.tid] as const])).values()]
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([pid, tid]) => `${pid}:${tid}`);
  const first = threads[0];
  const functions = new Map<string, FunctionTimes>();
  const times = (key: string): FunctionTimes => {
    let t = functions.get(key);
    if (!t) {
      t = { total: 0, self: 0 };
      functions.set(key, t);
    }
    return t;
  };
  // The nesting is the file's: each end closes the innermost open frame.
  const stack: Frame[] = [];
  let frames = 0;
  for (const e of events) {
    if (`${e.pid}:${e.tid}` !== first) continue;
    const ns = Math.round(e.ts * 1000);
    if (e.ph === "B") stack.push({ key: e.name, start: ns, inner: 0 });
    else if (e.ph === "E") {
      const f = stack.pop()!;
      const dur = ns - f.start;
      times(f.key).self += dur - f.inner;
      if (!stack.some((g) => g.key === f.key)) times(f.key).total += dur;
      const parent = stack.at(-1);
      if (parent) parent.inner += dur;
      frames++;
    }
  }
  return { threads, functions, frames };
}
