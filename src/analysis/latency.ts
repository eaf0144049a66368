/**
 * Exact call latencies: a {@link CallSink} that keeps the duration of every call that
 * returned, per function and per (function, caller) pair, and answers with the
 * distribution of each (count, total, nearest-rank percentiles, maximum, a log2
 * histogram; see latency-stats.ts), the slowest calls with their stacks, and on-CPU
 * versus off-CPU time.
 *
 * - A call's duration is its exit time minus its entry time, both rounded to whole
 *   clock units as the timeline writes them, so every duration equals the length of
 *   the call's slice in `--timeline`. Units: see {@link ClockUnit}.
 * - Only frames that returned normally ({@link FrameEnd.Return}) are measured. A frame
 *   that ended otherwise (unwind, unknown return, trace gap, trace end, abort, exec)
 *   has no known duration: it is counted as "incomplete" for its function and left
 *   out of the distribution.
 * - A function is a frame name ({@link FrameNames}) within the frame's naming scope
 *   (one process image). A call into the middle of a function (`f+0x10`) is a function
 *   of its own, as the other exports name it. The caller is the function of the frame
 *   below (none for the bottom frame).
 * - Recursion: every frame counts. When f calls itself, the inner call and the outer
 *   one (which includes it) are both calls of f, and f is its own caller.
 * - Off-CPU time: per thread, the time between each `suspend` and the next `resume`
 *   (switched out, or moved between CPUs). A call's off-CPU time is how much that grew
 *   between its entry and its return; on-CPU time is the rest of its duration. When no
 *   thread was ever suspended and resumed later, context switches were not recorded
 *   (a raw trace; a perf.data file without switch records is followed by CR3 only)
 *   and off-CPU time is unknown rather than 0: {@link LatencySummary.offCpuRecorded}.
 *
 * Memory: 12 bytes per measured call (its duration and its (function, caller) pair,
 * appended to two arrays shared by every pair; up to twice that while they grow by
 * doubling), plus a count per pair, small state per function and per open frame, and
 * the kept slowest calls and their stacks. No object per pair: a program with a large
 * code footprint has millions of pairs, and an array each cost more than their calls.
 * Nothing is allocated per call except when a call enters the slowest calls (a copy
 * of its stack). The summary groups the durations by pair (a counting sort) and sorts
 * each pair's; a function's distribution is its pairs' merged.
 */
import { FRAME_END_NAMES, type FrameEnd, type FrameKind } from "./callstack.js";
import type { CallSink, ClockInfo, ThreadTrack } from "./callstack-sink.js";
import type { FrameNames } from "./export/frame-names.js";
import { growFloat64, growInt32, KeyTable } from "./key-table.js";
import { SlowestCalls } from "./latency-slowest.js";
import {
  type DurationStats,
  durationStats,
  durationStatsIn,
  type HistogramBucket,
  log2Histogram,
} from "./latency-stats.js";

/** Default for {@link LatencyOptions.slowest}. */
export const DEFAULT_SLOWEST = 20;

export interface LatencyOptions {
  /** How many of the slowest calls to keep (default {@link DEFAULT_SLOWEST}). */
  slowest?: number;
  /** Keep the slowest calls of the functions of this name only (see {@link LatencySummary.only}). */
  only?: string;
}

/** One caller of a function: the calls it made, and their durations. */
export interface CallerLatency extends DurationStats {
  /** The caller's function name; null for calls at the bottom of the stack. */
  caller: string | null;
}

export interface FunctionLatency extends DurationStats {
  name: string;
  /** The pid of the first thread that called it (the process whose image names it). */
  pid: number;
  /** Frames that ended other than by returning: no known duration, not measured. */
  incomplete: number;
  /** Off-CPU time within its calls, added up (0 when not recorded). */
  offCpu: number;
  /** Its calls by caller, the largest total first. */
  callers: CallerLatency[];
  histogram: HistogramBucket[];
}

/** One of the slowest calls. */
export interface SlowCall {
  name: string;
  duration: number;
  /** When it was entered (clock units since the clock's start, as in the timeline). */
  start: number;
  offCpu: number;
  pid: number;
  tid: number;
  /** The thread's name ("" when unknown). */
  thread: string;
  /** Function names from the bottom frame to the call itself. */
  stack: string[];
}

export interface LatencySummary {
  clock: ClockInfo;
  /** Calls measured (returned normally), in every function. */
  calls: number;
  /** Frames that ended other than by returning, in every function. */
  incomplete: number;
  /** Those by how they ended (unwind, unknown, gap, end, abort, exec). */
  incompleteBy: Record<string, number>;
  /** Whether threads were seen switched out (see the module comment); else off-CPU time is unknown. */
  offCpuRecorded: boolean;
  /** The restriction asked for ({@link LatencyOptions.only}): functions and slowest calls are of that name. */
  only: string | undefined;
  /** Every function (of that name, with `only`) with calls or incomplete frames, the largest total first. */
  functions: FunctionLatency[];
  /** How many slowest calls were asked for. */
  slowestKept: number;
  /** The slowest calls, slowest first. */
  slowest: SlowCall[];
}

/** A thread's open frames by depth (index depth - 1) and its off-CPU clock. */
class TrackFrames {
  fn: Int32Array = new Int32Array(64);
  start: Float64Array = new Float64Array(64);
  /** `offCpu` when each frame was entered. */
  offAtEntry: Float64Array = new Float64Array(64);
  /** Time this thread spent switched out so far. */
  offCpu = 0;
  /** When it was last suspended; NaN while it runs. */
  suspendedAt = Number.NaN;

  room(depth: number): void {
    if (depth <= this.fn.length) return;
    const n = Math.max(depth, 2 * this.fn.length);
    this.fn = growInt32(this.fn, n);
    this.start = growFloat64(this.start, n);
    this.offAtEntry = growFloat64(this.offAtEntry, n);
  }
}

/** The measured durations as {@link CallLatency.grouped} groups them. */
interface Grouped {
  /** Function fn's calls are durations[fnStart[fn], fnStart[fn + 1]). */
  durations: Float64Array;
  fnStart: Int32Array;
  /** Its pairs are pairOrder[fnPairs[fn], fnPairs[fn + 1]); pair p's calls start at pairStart[p]. */
  fnPairs: Int32Array;
  pairOrder: Int32Array;
  pairStart: Int32Array;
  /** The most calls of one function. */
  most: number;
}

export class CallLatency implements CallSink {
  private clock: ClockInfo = { unit: "insn", tscBase: "", nsPerTick: 0 };
  private readonly tracks: (TrackFrames | undefined)[] = [];
  /** Per function id: its name, pid, incomplete frames, off-CPU sum, and whether `only` names it. */
  private readonly fnNames: string[] = [];
  private readonly fnPids: number[] = [];
  private fnIncomplete: Float64Array = new Float64Array(64);
  private fnOffCpu: Float64Array = new Float64Array(64);
  private readonly fnWanted: boolean[] = [];
  /** Each function's naming scope. */
  private readonly fnScopes: number[] = [];
  /** Function ids by "scope NUL name", once needed (see {@link functionNamed}). */
  private fnIds: Map<string, number> | undefined;
  /** FrameNames entry -> function id + 1 (0: not looked up yet). */
  private entryFn: Int32Array = new Int32Array(1024);
  /** (scope, FrameNames text id of the name as first read) -> key, and key -> function id + 1 (0: none yet). */
  private readonly byText = new KeyTable(Number.MAX_SAFE_INTEGER);
  private textFn: Int32Array = new Int32Array(1024);
  /** (function, caller + 1) -> pair id, and each pair's count of measured calls. */
  private readonly pairs = new KeyTable(Number.MAX_SAFE_INTEGER);
  private pairCounts: Int32Array = new Int32Array(1024);
  /** Every measured call in return order: its pair and its duration. */
  private callPairs: Int32Array = new Int32Array(1024);
  private callDurations: Float64Array = new Float64Array(1024);
  private readonly incompleteBy = new Float64Array(FRAME_END_NAMES.length);
  private readonly slowest: SlowestCalls;
  private readonly only: string | undefined;
  private returned = 0;
  private switchedOut = false;

  constructor(
    private readonly names: FrameNames,
    options: LatencyOptions = {},
  ) {
    this.slowest = new SlowestCalls(options.slowest ?? DEFAULT_SLOWEST);
    this.only = options.only;
  }

  begin(clock: ClockInfo): void {
    this.clock = clock;
  }

  resume(track: ThreadTrack, time: number, _icount: number): void {
    const t = this.frames(track);
    if (!Number.isNaN(t.suspendedAt)) {
      const away = Math.round(time) - t.suspendedAt;
      if (away > 0) {
        t.offCpu += away;
        this.switchedOut = true;
      }
      t.suspendedAt = Number.NaN;
    }
  }

  suspend(track: ThreadTrack, time: number, _icount: number): void {
    this.frames(track).suspendedAt = Math.round(time);
  }

  enter(
    track: ThreadTrack,
    depth: number,
    kind: FrameKind,
    hi: number,
    lo: number,
    time: number,
    _icount: number,
    scope: number,
  ): void {
    const t = this.frames(track);
    t.room(depth);
    const i = depth - 1;
    t.fn[i] = this.functionOf(kind, hi, lo, scope, track.pid);
    t.start[i] = Math.round(time);
    t.offAtEntry[i] = t.offCpu;
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number, _icount: number): void {
    const t = this.frames(track);
    const i = depth - 1;
    const fn = t.fn[i]!;
    if (end !== 0) {
      this.fnIncomplete[fn]!++;
      this.incompleteBy[end]!++;
      return;
    }
    const start = t.start[i]!;
    const duration = Math.round(time) - start;
    const offCpu = t.offCpu - t.offAtEntry[i]!;
    const caller = i > 0 ? t.fn[i - 1]! : -1;
    this.record(this.pairs.id(fn, caller + 1, 0, 0), duration);
    this.fnOffCpu[fn]! += offCpu;
    const order = this.returned++;
    if (this.fnWanted[fn] && this.slowest.wants(duration, start, order))
      this.slowest.add(duration, start, order, offCpu, fn, track, t.fn, depth);
  }

  marker(): void {}

  finish(): void {}

  /** Everything measured, with the statistics (made anew on each call: sorts every duration). */
  summary(): LatencySummary {
    const g = this.grouped();
    const functions: FunctionLatency[] = [];
    const scratch = new Float64Array(g.most);
    for (let fn = 0; fn < this.fnNames.length; fn++) {
      if (!this.fnWanted[fn]) continue;
      const f = this.functionLatency(fn, g, scratch);
      if (f.calls > 0 || f.incomplete > 0) functions.push(f);
    }
    functions.sort((a, b) => b.total - a.total || b.calls - a.calls || b.incomplete - a.incomplete);
    const incompleteBy: Record<string, number> = {};
    let incomplete = 0;
    FRAME_END_NAMES.forEach((name, end) => {
      if (end === 0) return;
      incompleteBy[name] = this.incompleteBy[end]!;
      incomplete += this.incompleteBy[end]!;
    });
    return {
      clock: this.clock,
      calls: this.returned,
      incomplete,
      incompleteBy,
      offCpuRecorded: this.switchedOut,
      only: this.only,
      functions,
      slowestKept: this.slowest.capacity,
      slowest: this.slowest.sorted().map((c) => ({
        name: this.fnNames[c.fn]!,
        duration: c.duration,
        start: c.start,
        offCpu: c.offCpu,
        pid: c.track.pid,
        tid: c.track.tid,
        thread: c.track.name,
        stack: Array.from(c.stack, (f) => this.fnNames[f]!),
      })),
    };
  }

  /**
   * Every measured duration of the functions named `name` (in any scope), unsorted:
   * for checks against other exports.
   */
  durationsOf(name: string): Float64Array {
    const g = this.grouped();
    const parts: Float64Array[] = [];
    for (let fn = 0; fn < this.fnNames.length; fn++)
      if (this.fnNames[fn] === name) parts.push(g.durations.subarray(g.fnStart[fn]!, g.fnStart[fn + 1]!));
    return joined(parts);
  }

  /**
   * The measured durations grouped by function, and within a function by pair in pair
   * order, each pair's in return order (a counting sort of the calls).
   */
  private grouped(): Grouped {
    const pairs = this.pairs.size;
    const keys = this.pairs.keys;
    const nFn = this.fnNames.length;
    const counts = this.pairCounts;
    // Each function's calls, then where its range starts.
    const fnStart = new Int32Array(nFn + 1);
    const fnPairs = new Int32Array(nFn + 1);
    for (let p = 0; p < pairs; p++) {
      const fn = keys[4 * p]!;
      fnStart[fn + 1]! += counts[p]!;
      fnPairs[fn + 1]!++;
    }
    let most = 0;
    for (let fn = 0; fn < nFn; fn++) {
      most = Math.max(most, fnStart[fn + 1]!);
      fnStart[fn + 1]! += fnStart[fn]!;
      fnPairs[fn + 1]! += fnPairs[fn]!;
    }
    // Pairs by function (in pair order within one), and where each pair's durations start.
    const pairOrder = new Int32Array(pairs);
    const pairStart = new Int32Array(pairs);
    const nextPair = fnPairs.slice(0, nFn);
    const nextCall = fnStart.slice(0, nFn);
    for (let p = 0; p < pairs; p++) {
      const fn = keys[4 * p]!;
      pairOrder[nextPair[fn]!++] = p;
      pairStart[p] = nextCall[fn]!;
      nextCall[fn]! += counts[p]!;
    }
    const durations = new Float64Array(this.returned);
    const next = pairStart.slice();
    const callPairs = this.callPairs;
    const callDurations = this.callDurations;
    for (let i = 0; i < this.returned; i++) durations[next[callPairs[i]!]!++] = callDurations[i]!;
    return { durations, fnStart, fnPairs, pairOrder, pairStart, most };
  }

  /** The names of the functions met (each once per scope). */
  functionNames(): string[] {
    return [...this.fnNames];
  }

  /** Function `fn`'s latencies from the grouped durations (its pairs' ranges get sorted); `scratch` holds any function's calls. */
  private functionLatency(fn: number, g: Grouped, scratch: Float64Array): FunctionLatency {
    const callers: CallerLatency[] = [];
    const keys = this.pairs.keys;
    const d = g.durations;
    for (let k = g.fnPairs[fn]!, end = g.fnPairs[fn + 1]!; k < end; k++) {
      const p = g.pairOrder[k]!;
      const from = g.pairStart[p]!;
      const n = this.pairCounts[p]!;
      sortRange(d, from, n);
      const caller = keys[4 * p + 1]! - 1;
      const s = durationStatsIn(d, from, n);
      // Fields written out: an object spread is a slow copy here (52k functions, 150k callers).
      callers.push({
        caller: caller < 0 ? null : this.fnNames[caller]!,
        calls: s.calls,
        total: s.total,
        min: s.min,
        p50: s.p50,
        p90: s.p90,
        p99: s.p99,
        max: s.max,
      });
    }
    callers.sort((a, b) => b.total - a.total || b.calls - a.calls);
    // The function's calls, sorted: one caller's range as it is, else all of them again.
    const from = g.fnStart[fn]!;
    const n = g.fnStart[fn + 1]! - from;
    let all: Float64Array;
    if (callers.length <= 1) all = d.subarray(from, from + n);
    else {
      all = scratch.subarray(0, n);
      all.set(d.subarray(from, from + n));
      all.sort();
    }
    const stats: DurationStats =
      n > 0
        ? durationStats(all)
        : {
            calls: 0,
            total: 0,
            min: Number.NaN,
            p50: Number.NaN,
            p90: Number.NaN,
            p99: Number.NaN,
            max: Number.NaN,
          };
    return {
      name: this.fnNames[fn]!,
      pid: this.fnPids[fn]!,
      calls: stats.calls,
      total: stats.total,
      min: stats.min,
      p50: stats.p50,
      p90: stats.p90,
      p99: stats.p99,
      max: stats.max,
      incomplete: this.fnIncomplete[fn]!,
      offCpu: this.fnOffCpu[fn]!,
      callers,
      histogram: log2Histogram(all),
    };
  }

  /** One measured call (before {@link returned} counts it). */
  private record(pair: number, duration: number): void {
    if (pair >= this.pairCounts.length) this.pairCounts = growInt32(this.pairCounts, pair + 1);
    this.pairCounts[pair]!++;
    const n = this.returned;
    if (n === this.callPairs.length) {
      this.callPairs = growInt32(this.callPairs, n + 1);
      this.callDurations = growFloat64(this.callDurations, n + 1);
    }
    this.callPairs[n] = pair;
    this.callDurations[n] = duration;
  }

  /**
   * The function id of a frame (a name within a scope), made on first sight. Entries
   * whose names read the same are found by the name's bytes (FrameNames.sameText: the
   * same UTF-8 bytes, the same name), so a name's string is made once per function,
   * not once per entry (a program's calls land at tens of thousands of places).
   */
  private functionOf(kind: FrameKind, hi: number, lo: number, scope: number, pid: number): number {
    const names = this.names;
    const e = names.entry(kind, hi, lo, scope);
    if (e < 0) return this.functionNamed(names.name(kind, hi, lo, scope), scope, pid, true);
    if (e < this.entryFn.length && this.entryFn[e] !== 0) return this.entryFn[e]! - 1;
    const t = names.sameText(names.textOf(e));
    const k = this.byText.id(scope, t, 0, 0);
    let fn: number;
    if (k >= 0 && k < this.textFn.length && this.textFn[k] !== 0) fn = this.textFn[k]! - 1;
    else {
      fn = this.functionNamed(names.textName(t), scope, pid, k < 0);
      if (k >= 0) {
        this.textFn = growInt32(this.textFn, k + 1);
        this.textFn[k] = fn + 1;
      }
    }
    this.entryFn = growInt32(this.entryFn, e + 1);
    this.entryFn[e] = fn + 1;
    return fn;
  }

  /**
   * The function id of `name` in `scope`, made when new. `byName`: the name has no
   * text id to tell (past the frame names' limit, or past the text table's): from then
   * on functions are also kept by name, every one made before included. (Until then
   * no two functions of a scope read the same: their text ids said so. A map of 50k
   * names cost more than the look-ups by text id it would save.)
   */
  private functionNamed(name: string, scope: number, pid: number, byName: boolean): number {
    let ids = this.fnIds;
    if (ids === undefined && byName) {
      ids = new Map();
      for (let f = 0; f < this.fnNames.length; f++) ids.set(`${this.fnScopes[f]}\0${this.fnNames[f]}`, f);
      this.fnIds = ids;
    }
    const key = ids === undefined ? "" : `${scope}\0${name}`;
    const known = ids?.get(key);
    if (known !== undefined) return known;
    const fn = this.fnNames.length;
    ids?.set(key, fn);
    this.fnNames.push(name);
    this.fnScopes.push(scope);
    this.fnPids.push(pid);
    this.fnWanted.push(this.only === undefined || name === this.only);
    this.fnIncomplete = growFloat64(this.fnIncomplete, fn + 1);
    this.fnOffCpu = growFloat64(this.fnOffCpu, fn + 1);
    return fn;
  }

  private frames(track: ThreadTrack): TrackFrames {
    let t = this.tracks[track.index];
    if (t === undefined) {
      t = new TrackFrames();
      this.tracks[track.index] = t;
    }
    return t;
  }
}

/**
 * Sort durations d[from, from + n) in place: a few by insertion (most pairs have one
 * or two calls: no subarray made), more by the typed array's own sort.
 */
function sortRange(d: Float64Array, from: number, n: number): void {
  if (n > 16) {
    d.subarray(from, from + n).sort();
    return;
  }
  for (let i = from + 1; i < from + n; i++) {
    const v = d[i]!;
    let j = i - 1;
    while (j >= from && d[j]! > v) {
      d[j + 1] = d[j]!;
      j--;
    }
    d[j + 1] = v;
  }
}

/** The arrays one after the other. */
function joined(parts: readonly Float64Array[]): Float64Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const all = new Float64Array(n);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return all;
}
