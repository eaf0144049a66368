/**
 * Frames that ended other than by their return (unwound, cut by a gap or by the trace's
 * end), as the timelines report them: frames of one thread that end the same way at
 * the same time, each right below the one before, share one "frame-end" instant that
 * says how, when, how many and down to which depth. `T` is the writer's per-thread
 * record; the group waits here until the writer flushes it.
 */
import type { FrameEnd } from "../callstack.js";

export class FrameEnds<T> {
  /** The waiting group's thread; undefined when none waits. */
  track: T | undefined;
  /** How its frames ended, when, how many, and the depth of the last (lowest) one. */
  how = 0;
  time = 0;
  count = 0;
  depth = 0;

  /** Whether the frame at `depth` of `track`, ending `end` at `time`, joins the waiting group. */
  joins(track: T, depth: number, end: FrameEnd, time: number): boolean {
    return track === this.track && end === this.how && time === this.time && depth === this.depth - 1;
  }

  /**
   * After the frame's end event: a frame that ended other than by its return joins the
   * group (`joined`, as {@link joins} said) or starts one (the writer flushed the old).
   */
  add(track: T, depth: number, end: FrameEnd, time: number, joined: boolean): void {
    if (end === 0) return;
    if (joined) {
      this.count++;
      this.depth = depth;
      return;
    }
    this.track = track;
    this.how = end;
    this.time = time;
    this.count = 1;
    this.depth = depth;
  }

  /** The waiting group's thread, which no longer waits (its fields stay readable); undefined when none. */
  take(): T | undefined {
    const t = this.track;
    this.track = undefined;
    return t;
  }
}
