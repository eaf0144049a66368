/**
 * What a trace viewer should make of a ptkit timeline (Chrome trace-event JSON): the
 * threads, and for the first thread every function's total time (while it is on the
 * stack, counted once through recursion) and self time (minus its callees), computed
 * here from the complete ("X") events' nesting in integer nanoseconds.
 *
 * Functions are keyed as speedscope keys them: the name, then the event's `args` as
 * JSON when it has any (so a frame that ended by a gap is a function of its own).
 */

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
  /** "pid:tid" of each thread with complete events, sorted by pid then tid (speedscope's profile order). */
  threads: string[];
  /** The first thread's functions. */
  functions: Map<string, FunctionTimes>;
  /** Complete events of the first thread. */
  frames: number;
}

interface Frame {
  key: string;
  start: number;
  end: number;
  /** Time covered by direct callees. */
  inner: number;
}

export function timelineModel(events: readonly TraceEvent[]): TimelineModel {
  const complete = events.filter((e) => e.ph === "X");
  const threadOf = (e: TraceEvent): [number, number] => [e.pid, e.tid];
  const threads = [...new Map(complete.map((e) => [`${e.pid}:${e.tid}`, threadOf(e)])).values()]
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
    .map(([pid, tid]) => `${pid}:${tid}`);
  const first = threads[0];
  const frames = complete
    .filter((e) => `${e.pid}:${e.tid}` === first)
    .map((e): Frame => {
      const start = Math.round(e.ts * 1000);
      const key = e.args ? `${e.name} ${JSON.stringify(e.args)}` : e.name;
      return { key, start, end: start + Math.round((e.dur ?? 0) * 1000), inner: 0 };
    })
    .sort((a, b) => a.start - b.start || b.end - a.end);

  const functions = new Map<string, FunctionTimes>();
  const times = (key: string): FunctionTimes => {
    let t = functions.get(key);
    if (!t) {
      t = { total: 0, self: 0 };
      functions.set(key, t);
    }
    return t;
  };
  const stack: Frame[] = [];
  const close = (f: Frame): void => {
    const dur = f.end - f.start;
    times(f.key).self += dur - f.inner;
    if (!stack.some((g) => g.key === f.key)) times(f.key).total += dur;
  };
  for (const f of frames) {
    while (stack.length > 0 && stack.at(-1)!.end <= f.start) close(stack.pop()!);
    const parent = stack.at(-1);
    if (parent && f.end > parent.end) {
      throw new Error(`${f.key} at ${f.start} ns overlaps ${parent.key} without nesting in it`);
    }
    if (parent) parent.inner += f.end - f.start;
    stack.push(f);
  }
  while (stack.length > 0) close(stack.pop()!);
  return { threads, functions, frames: frames.length };
}
