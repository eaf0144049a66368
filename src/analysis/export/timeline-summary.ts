/**
 * `--timeline-summary`: timelines that viewers can open whatever the trace's size.
 * chrome://tracing loads JSON up to 256 MB and the Perfetto UI about 1 GB; a long
 * trace's calls make more. The summary leaves out the calls shorter than a bound
 * chosen so that the file fits a byte budget, and keeps every function's totals: the
 * calls left out are counted per function (how many, their total duration) in the
 * file's metadata (`otherData.summary` of the JSON timeline).
 *
 * The bound comes from a first decode ({@link FrameDurations}: how many frames of
 * each duration, and what the unfiltered timelines would weigh), then the real
 * decode writes with `--min-duration` at that bound ({@link ShortFrameFilter}) and
 * {@link DroppedTotals} counts what it leaves out.
 */
import type { FrameKind } from "../callstack.js";
import type { CallSink, ClockInfo, ThreadTrack } from "../callstack-sink.js";
import { growFloat64 } from "../key-table.js";
import type { FrameNames } from "./frame-names.js";

/** Duration classes: class k > 0 holds whole-unit durations in [2^(k-1), 2^k); class 0 durations of 0. */
const CLASSES = 64;

/** The viewers' limits, less a margin: the default budgets (bytes). */
export const SUMMARY_BUDGET = { timeline: 240 * 1024 * 1024, perfetto: 960 * 1024 * 1024 };

/** How many frames end with each duration class (a {@link CallSink} of the first decode). */
export class FrameDurations implements CallSink {
  readonly counts = new Float64Array(CLASSES);
  frames = 0;
  private readonly starts: Float64Array[] = [];

  begin(_clock: ClockInfo): void {}
  resume(): void {}
  suspend(): void {}
  marker(): void {}
  finish(): void {}

  enter(track: ThreadTrack, depth: number, _kind: FrameKind, _hi: number, _lo: number, time: number): void {
    let s = this.starts[track.index];
    if (s === undefined || depth > s.length) {
      s = growFloat64(s ?? new Float64Array(64), depth);
      this.starts[track.index] = s;
    }
    s[depth - 1] = time;
  }

  exit(track: ThreadTrack, depth: number, _end: unknown, time: number): void {
    const s = this.starts[track.index];
    if (s === undefined || depth > s.length) return;
    // As ShortFrameFilter measures: whole units, end minus start, each rounded.
    const d = Math.round(time) - Math.round(s[depth - 1]!);
    this.counts[durationClass(d)]!++;
    this.frames++;
  }
}

function durationClass(d: number): number {
  return d <= 0 ? 0 : Math.min(CLASSES - 1, Math.floor(Math.log2(d)) + 1);
}

/**
 * The smallest bound (a power of two, whole units; 0: none needed) at which the frames
 * kept make at most `budget` bytes, `bytes` being what all `frames` made (their share
 * of it: bytes per frame alike).
 */
export function summaryBound(
  d: FrameDurations,
  bytes: number,
  budget: number,
): { bound: number; kept: number } {
  if (bytes <= budget || d.frames === 0) return { bound: 0, kept: d.frames };
  const perFrame = bytes / d.frames;
  let kept = d.frames;
  for (let k = 0; k < CLASSES; k++) {
    // Bound 2^k keeps classes above k (durations >= 2^k).
    kept -= d.counts[k]!;
    if (kept * perFrame <= budget) return { bound: 2 ** k, kept };
  }
  return { bound: 2 ** (CLASSES - 1), kept: 0 };
}

/** The frames a summary leaves out, per function: how many and their total duration (whole units). */
export class DroppedTotals {
  private readonly byName = new Map<string, { count: number; total: number }>();
  frames = 0;

  constructor(private readonly names: FrameNames) {}

  add(kind: FrameKind, hi: number, lo: number, scope: number, duration: number): void {
    const name = this.names.name(kind, hi, lo, scope);
    const t = this.byName.get(name);
    if (t) {
      t.count++;
      t.total += duration;
    } else this.byName.set(name, { count: 1, total: duration });
    this.frames++;
  }

  /** `"dropped":{"name":[count,total],...}`, by name. */
  json(): string {
    const parts = [...this.byName.entries()]
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([name, t]) => `${JSON.stringify(name)}:[${t.count},${t.total}]`);
    return `"droppedFrames":${this.frames},"dropped":{${parts.join(",")}}`;
  }
}
