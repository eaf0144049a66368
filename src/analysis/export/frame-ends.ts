/**
 * Frames that ended other than by their return (unwound, cut by a gap or by the trace's
 * end), as the timelines report them: frames of one thread that end the same way at
 * the same time, each right below the one before, share one "frame-end" instant that
 * says how, when, how many and down to which depth. `T` is the writer's per-thread
 * record; the group waits here until the writer flushes it.
 */
import { doubleFields } from "../../base/halves.js";
import type { FrameEnd } from "../callstack.js";

export class FrameEnds<T> {
  /** The waiting group's thread; undefined when none waits. */
  track: T | undefined;
  /** How its frames ended, when, how many, and the depth of the last (lowest) one. */
  how = 0;
  time = 0;
  count = 0;
  depth = 0;

  constructor() {
    // Times past 2^31 ns (2 s) are not small integers: the field holds doubles from the start.
    doubleFields(this, ["time"]);
  }

  /** Whether the frame at `depth` of `track`, ending `end` at `time`, joins the waiting group. */
  joins(track: T, depth: number, end: FrameEnd, time: number): boolean {
    // Every test runs on every call: a test first reached in optimised code (one chained
    // after `track === this.track`, which fails while no group waits) throws that code
    // away, here the timeline's exit(), which inlines this.
    const same = track === this.track;
    const how = end === this.how;
    const when = time === this.time;
    const below = depth === this.depth - 1;
    return same && how && when && below;
  }

  /**
   * After the frame's end event: a frame that ended other than by its return joins the
   * group (`joined`, as {@link joins} said) or starts one (the writer flushed the old).
   */
  add(track: T, depth: number, end: FrameEnd, time: number, joined: boolean): void {
    if (end === 0) return;
    // The count and depth on one path for both (see joins: the first frame to join a
    // group comes late, in optimised code).
    if (!joined) {
      this.track = track;
      this.how = end;
      this.time = time;
      this.count = 0;
    }
    this.count++;
    this.depth = depth;
  }

  /** The waiting group's thread, which no longer waits (its fields stay readable); undefined when none. */
  take(): T | undefined {
    const t = this.track;
    this.track = undefined;
    return t;
  }
}
