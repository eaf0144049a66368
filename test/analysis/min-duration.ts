/** What --min-duration should keep of a timeline, worked out from the unfiltered one (for tests). */
import { type TimelineEvent, type TimelineFrame, timelineFrames } from "./timeline-frames.js";

/**
 * The frames of `events` (unfiltered) that --min-duration `min` keeps: those no
 * shorter than `min` whose callers (all the frames around them) are too.
 */
export function keptFrames(events: readonly TimelineEvent[], min: number): TimelineFrame[] {
  const frames = timelineFrames(events);
  // Per thread, the open frames' shortness, rebuilt in the order the events come.
  const open = new Map<string, boolean[]>();
  const short: boolean[] = [];
  const byBegin = new Map<number, TimelineFrame>();
  for (const f of frames) byBegin.set(f.seq, f);
  let seq = 0;
  for (const e of events) {
    seq++;
    const key = `${e.pid}/${e.tid}`;
    if (e.ph === "B") {
      const stack = open.get(key) ?? [];
      open.set(key, stack);
      const f = byBegin.get(seq)!;
      stack.push(f.stopNs - f.startNs < min || stack.some((s) => s));
    } else if (e.ph === "E") {
      short.push(open.get(key)!.pop()!);
    }
  }
  return frames.filter((_, i) => !short[i]);
}
