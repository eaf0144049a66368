/**
 * What the call-stack exports (timeline, folded stacks) receive: frames entering and
 * leaving and gap markers, per thread, each with its time and instruction count, in
 * order within a thread. Times come from {@link TimedOps} in the unit of the
 * {@link ClockUnit} announced by `begin`.
 */
import { CallStack, type FrameEnd, type FrameKind } from "./callstack.js";

/**
 * The clock of every time a sink gets:
 * - "ns": nanoseconds since the first TSC (a TSC frequency was known);
 * - "tsc": TSC ticks since the first TSC (no frequency known);
 * - "insn": the instruction count (the trace had no timing before the look-ahead
 *   buffer filled, or none at all).
 */
export type ClockUnit = "ns" | "tsc" | "insn";

/** What a clock value means, given to sinks when the clock is settled. */
export interface ClockInfo {
  unit: ClockUnit;
  /** The TSC that is time 0 ("ns" and "tsc"), as a hex string ("0x..."); "" for "insn". */
  tscBase: string;
  /** Nanoseconds per TSC tick ("ns" only; else 0). */
  nsPerTick: number;
}

/** Markers: places where the flow has a hole. */
export const Marker = {
  /** The processor's internal buffer overflowed: trace was lost. */
  Overflow: 0,
  /** A decode error: the decoder resynchronised. */
  Error: 1,
} as const;
export type Marker = (typeof Marker)[keyof typeof Marker];
export const MARKER_NAMES: readonly string[] = ["overflow", "error"];

/** One thread, as the exports see it; `index` numbers threads from 0 in order of appearance. */
export class ThreadTrack {
  readonly stack: CallStack;
  /**
   * Shards (CallAnalysisOptions.segments): where tracing first resumed in the current
   * run with the run's stack empty ("0x..."; the run's first instruction counts as
   * resumed when no Enabled event came before it), "" if it did not.
   */
  startIp = "";
  /**
   * Shards: the branch the run's last instruction was, when its stream ended before the
   * next instruction ("FLOWCLASS 0xFROM SIZE"; the class 256 for an asynchronous one),
   * for a merge that goes on where the next window of the stream starts; else "".
   */
  endBranch = "";

  constructor(
    readonly index: number,
    readonly pid: number,
    readonly tid: number,
    /** Process or thread name ("" when unknown). */
    public name: string,
    depthLimit: number,
  ) {
    this.stack = new CallStack(depthLimit);
  }
}

export interface CallSink {
  /** Once, before anything else: the clock of all times. */
  begin(clock: ClockInfo): void;
  /**
   * `track` runs from now on (on one decoded stream; `icount` counts that stream's
   * instructions until the matching {@link suspend}).
   */
  resume(track: ThreadTrack, time: number, icount: number): void;
  /** `track` stopped running (switched out, or the stream ended). */
  suspend(track: ThreadTrack, time: number, icount: number): void;
  /**
   * A frame at `depth` (1 = bottom) was entered; `scope` names it (see
   * CallAnalysisOptions.frameScope; 0 without one).
   */
  enter(
    track: ThreadTrack,
    depth: number,
    kind: FrameKind,
    entryHi: number,
    entryLo: number,
    time: number,
    icount: number,
    scope: number,
  ): void;
  /** The frame at `depth` was left. */
  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number, icount: number): void;
  /** A gap in the trace at trace offset `offset` (-1: unknown). */
  marker(
    track: ThreadTrack,
    what: Marker,
    offset: number,
    message: string,
    time: number,
    icount: number,
  ): void;
  /** The end: write what is left (time is the last one). */
  finish(time: number, icount: number): void;
}
