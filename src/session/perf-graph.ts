/**
 * `ptkit perf`'s fast path for the call-stack outputs (issue 13's decision cache):
 * the streams decoded by analysis/coverage-decode.ts's timed walk through the code's
 * {@link DecisionGraph}, straight from the packets, instead of the event and block
 * decoders of perf-stream.ts. The feed (the stream's FlowTracker) gets the same
 * instructions, events, times and thread switches in the same order, so the outputs
 * are byte-identical; the walk reports where the block decoder would report a time,
 * and this moves the stream on to it as decodePerfStream does at an event: the
 * switches before it at their own times, then who runs and the process images. The
 * streams of a file recorded per CPU take turns in time order as the general decode
 * interleaves them (see {@link walkStreams}): a thread that moves to another CPU takes
 * its call stack along, and every output gets its records in the same order.
 *
 * Taken only where that holds as written here: nothing printed but the analysis
 * (--quiet) or call and branch lines (ptkit's; perf script's too, but not of part of
 * the file), no losses to report. (Of part of the file, --time-range or --tid, the
 * walk shows what the general decode does: see StreamTurn.step.) Where a walk hands
 * over (packets or code it does not cover: see decodeTimedFeed), the caller decodes
 * the file again the general way from the start.
 */
import {
  FastCoverage,
  type FlowTracker,
  LoggedTime,
  replayWalk,
  timedWalk,
  type WalkFeed,
  type WalkLogSource,
  type WalkLogWriter,
  type WalkTime,
  walkErrata,
} from "../analysis/index.js";
import { ErrorCode, errorMessage } from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import { Clock, type PtEvent } from "../event/index.js";
import { type DecisionGraph, FlowClass } from "../flow/index.js";
import { type Image, ImageHit } from "../image/index.js";
import { InsnClass } from "../isa/index.js";
import { lt64 } from "../time/index.js";
import { BranchLines } from "./branch-lines.js";
import { GraphCache } from "./graph-cache.js";
import type { PerfAnalysis } from "./perf-analysis.js";
import { keptByCalls } from "./perf-output.js";
import type { PerfSink, StreamContext } from "./perf-stream.js";

/** All ones: a TSC half no bound is past. */
const NEVER = 0xffffffff;

/**
 * Whether the fast path can decode stream `s` alone (the general decode's outputs being
 * the analysis' only). A stream shown in part (--time-range, --tid) feeds what is shown
 * (see StreamTurn.step).
 */
export function fastPathFits(s: StreamContext): boolean {
  const c = s.config;
  return s.decoder === "block" && !s.branchTimes && s.gaps.length === 0 && !c.enableIflagsEvents;
}

/**
 * Where a fast decode of a stream goes: its feed (ready for what comes next) and who
 * hears of thread switches. (Classes, not closures made per stream: see TurnTime.)
 */
interface FastTarget {
  ready(): WalkFeed;
  switched(): void;
  /** The walk lost control where code is missing, at hi:lo, and takes up again at an address (WalkTime.lost, resumed). */
  lost?(hi: number, lo: number): void;
  resumed?(hi: number, lo: number): void;
  /** The stream's time passed the end of --time-range (TSC hi:lo) with its thread shown (PerfSink.rangeEnd). */
  rangeEnd?(hi: number, lo: number): void;
}

/** The analysis outputs' feed for the stream's thread of the moment (fastPerfStreams). */
class AnalysisTarget implements FastTarget {
  constructor(
    protected readonly analysis: PerfAnalysis,
    protected readonly s: StreamContext,
  ) {}

  ready(): WalkFeed {
    return this.analysis.fastFeed(this.s.where);
  }

  switched(): void {
    this.analysis.sink.switched(this.s.where);
  }

  rangeEnd(hi: number, lo: number): void {
    this.analysis.sink.rangeEnd?.(this.s.where, hi, lo);
  }
}

/**
 * The same for a stream shown in part (--time-range, --tid): while its thread or time
 * is not shown the walk feeds nothing (the general decode hands the sink nothing
 * then), and what it feeds is counted: the instructions and calls shown, which the
 * summary line counts (the general decode's sink counts those it is handed).
 */
class ShownTarget extends AnalysisTarget implements WalkFeed {
  insns = 0;
  calls = 0;
  private feed: FlowTracker | undefined;

  ready(): WalkFeed {
    if (!this.s.where.inRange) return SILENT;
    this.feed = this.analysis.fastFeed(this.s.where);
    return this;
  }

  run(hi: number, lo: number, count: number, lastHi: number, lastLo: number): void {
    this.insns += count;
    this.feed!.run(hi, lo, count, lastHi, lastLo);
  }

  insn(hi: number, lo: number, size: number, fclass: number): void {
    this.insns++;
    if (fclass === FlowClass.Call) this.calls++;
    this.feed!.insn(hi, lo, size, fclass);
  }

  event(ev: PtEvent): void {
    this.feed!.event(ev);
  }

  node(
    hi: number,
    lo: number,
    n: number,
    endHi: number,
    endLo: number,
    size: number,
    fclass: number,
    id: number,
    graph: DecisionGraph,
  ): void {
    this.insns += n;
    if (fclass === FlowClass.Call) this.calls++;
    this.feed!.node(hi, lo, n, endHi, endLo, size, fclass, id, graph);
  }
}

/** One feed for the whole stream, switches to the stream's sink (branch lines, `--quiet`). */
class SinkTarget implements FastTarget {
  constructor(
    private readonly s: StreamContext,
    private readonly feed: WalkFeed & Pick<FastTarget, "lost" | "resumed">,
  ) {}

  lost(hi: number, lo: number): void {
    this.feed.lost?.(hi, lo);
  }

  resumed(hi: number, lo: number): void {
    this.feed.resumed?.(hi, lo);
  }

  ready(): WalkFeed {
    return this.feed;
  }

  switched(): void {
    this.s.sink.switched(this.s.where);
  }
}

/**
 * `--calls`, or with `every` `--branches`: the streams' branch lines by the fast path,
 * each to its `sink`, in the general decode's order: the outcome, and how many lines
 * were printed (on a handover, the general decode prints them again: leave them out,
 * see {@link skipBranches}).
 */
export function fastBranchStreams(
  streams: readonly StreamContext[],
  every: boolean,
): { result: FastCoverage; printed: number } {
  const feeds: BranchFeed[] = [];
  const result = walkStreams(streams, (s, graph) => {
    const feed = new BranchFeed(s, graph!, every);
    feeds.push(feed);
    return new SinkTarget(s, feed);
  });
  let printed = 0;
  for (const feed of feeds) printed += feed.printed;
  return { result, printed };
}

/**
 * `--quiet` without analysis outputs: the streams walked by the fast path, which
 * prints nothing (a decode it covers has no error to print): the outcome. On a
 * handover the general decode goes again from the start and prints the errors.
 */
export function fastQuietStreams(streams: readonly StreamContext[]): FastCoverage {
  return walkStreams(streams, (s) => new SinkTarget(s, SILENT));
}

/** The feed of {@link fastQuietStreams}: nothing is kept. */
const SILENT: WalkFeed = { run() {}, insn() {}, event() {} };

/** `sink`, but the first `n` errors it prints are left out (those the fast path printed: FastCoverage.errors). */
export function skipErrors(sink: PerfSink, n: number): PerfSink {
  if (n === 0) return sink;
  let left = n;
  return {
    ...sink,
    error: (w, offset, message, code, ipHi, ipLo) => {
      if (left > 0) left--;
      else sink.error(w, offset, message, code, ipHi, ipLo);
    },
  };
}

/** `sink`, but the first `n` branch lines it prints (with `every` all, else those of `--calls`) are left out. */
export function skipBranches(sink: PerfSink, n: number, every: boolean): PerfSink {
  let left = n;
  return {
    ...sink,
    branch: (w, flags, fh, fl, th, tl, names) => {
      if (left > 0 && (every || keptByCalls(flags))) left--;
      else sink.branch(w, flags, fh, fl, th, tl, names);
    },
  };
}

/**
 * The branch lines of decodePerfStream (its `arrive` and `leave`, and the events'
 * lines of its `onEvent`), from the walk's feed: each instruction ends the branch
 * before it (taken to it), tracing on and off and interrupts have lines of their own.
 * That is the block decoder's per block: its blocks end at every branch (with
 * `--branches`, at jumps too), and `--calls` prints no jump. While the stream's thread
 * or time is not shown (--tid, --time-range) no line is printed, but the branch each
 * instruction leaves pending is kept, as there.
 */
class BranchFeed {
  /** Lines printed (`every`: all, else those `--calls` prints). */
  printed = 0;
  /** Without `every` the walk may leave out nodes that end in jumps (see WalkFeed.jumps). */
  readonly jumps: boolean;
  private readonly lines: BranchLines;
  /** Where the stream is (its inRange: shown). */
  private readonly where: StreamContext["where"];

  constructor(
    s: StreamContext,
    private readonly graph: DecisionGraph,
    every: boolean,
  ) {
    this.where = s.where;
    this.jumps = every;
    // Without jumps' lines every line is one `--calls` prints (keptByCalls).
    this.lines = new BranchLines((flags, fromHi, fromLo, toHi, toLo) => {
      this.printed++;
      s.sink.branch(s.where, flags, fromHi, fromLo, toHi, toLo, s.images);
    }, every);
  }

  run(hi: number, lo: number, _count: number, lastHi: number, lastLo: number): void {
    const lines = this.lines;
    if (this.where.inRange) lines.arrive(lines.branchClass, hi, lo);
    lines.leave(lastHi, lastLo, 0, 0, 0);
  }

  insn(hi: number, lo: number, size: number, fclass: number): void {
    this.node(hi, lo, 1, hi, lo, size, fclass);
  }

  /** A node's instructions: the branch before taken to its first (when it was), its last one's pending. */
  node(hi: number, lo: number, _n: number, endHi: number, endLo: number, size: number, fclass: number): void {
    const lines = this.lines;
    if (this.where.inRange) lines.arrive(lines.branchClass, hi, lo);
    // A far transfer's name (iret, sysret, int, ...) needs the instruction itself.
    const far = fclass === FlowClass.FarCall || fclass === FlowClass.FarReturn;
    const iclass = far ? this.graph.insnClassAt(endHi, endLo) : InsnClass.Other;
    lines.leave(endHi, endLo, size, fclass, iclass < 0 ? InsnClass.Other : iclass);
  }

  event(ev: PtEvent): void {
    const pending = this.lines.pending(ev);
    if (!this.where.inRange) return;
    this.lines.arriveBefore(ev, pending);
    this.lines.eventLines(ev, pending);
  }

  /** As decodePerfStream where code is missing (perf's resync): the branch into it is shown, nothing after it. */
  lost(hi: number, lo: number): void {
    const lines = this.lines;
    if (this.where.inRange) lines.arrive(lines.branchClass, hi, lo);
    lines.branchClass = 0;
  }

  /** As decodePerfStream where its resync takes up at an address: a trace start there. */
  resumed(hi: number, lo: number): void {
    const where = this.where;
    if (!where.inRange) return;
    where.branchTscHi = where.tscHi;
    where.branchTscLo = where.tscLo;
    this.lines.restart(hi, lo);
  }
}

/**
 * Decode the streams by the fast path into `analysis` (see {@link walkStreams}): the
 * outcome. Streams shown in part (--time-range, --tid) feed only what is shown.
 */
export function fastPerfStreams(streams: readonly StreamContext[], analysis: PerfAnalysis): FastCoverage {
  const shown: ShownTarget[] = [];
  const res = walkStreams(streams, (s) => {
    if (s.range === undefined && s.tid === undefined) return new AnalysisTarget(analysis, s);
    const target = new ShownTarget(analysis, s);
    shown.push(target);
    return target;
  });
  if (res.status !== 0) return res;
  if (shown.length === 0) analysis.count(res.insns, res.calls);
  else for (const t of shown) analysis.count(t.insns, t.calls);
  return res;
}

/**
 * {@link fastPerfStreams} with each stream walked on another thread, whose log
 * (analysis/walk-log.ts) `logs` reads, replayed here into the analysis: the same
 * outcome and the same outputs, while the walk and the analysis run at once. For
 * streams shown whole, into an analysis that keeps nothing by graph node
 * (PerfAnalysis.byNode).
 */
export function replayPerfStreams(
  streams: readonly StreamContext[],
  analysis: PerfAnalysis,
  logs: readonly WalkLogSource[],
): FastCoverage {
  const res = walkStreams(streams, (s) => new AnalysisTarget(analysis, s), logs);
  if (res.status === 0) analysis.count(res.insns, res.calls);
  return res;
}

/**
 * A thread of ptkit perf's parallel walk: stream `index` of `streams` walked as
 * {@link walkStreams} walks it there (taking turns where there are several streams,
 * but never waiting: no other stream is here), and what it asks of its time and
 * feeds logged to `log` (then its outcome) for {@link replayPerfStreams}. Nothing is
 * fed here: the thread's outputs are the log.
 */
export function logPerfStream(streams: readonly StreamContext[], index: number, log: WalkLogWriter): void {
  const graphs = new GraphCache(streams[0]?.graphStore);
  const s = streams[index]!;
  const turn = new StreamTurn(s, index, graphs, () => new LogTarget(), streams.length > 1, log);
  turn.started = true;
  turn.bound([turn]);
  let r = turn.steps.next();
  while (r.done !== true) r = turn.steps.next();
  graphs.save();
  log.end(r.value);
}

/** A logged walk's target: the log is its feed (LoggedTime.ready), switches are replayed where the log is. */
class LogTarget implements FastTarget {
  ready(): WalkFeed {
    return SILENT;
  }

  switched(): void {}
}

/**
 * Decode the streams by the fast path, each into the target made for it and its
 * first graph, taking turns in time order as interleave (perf-stream.ts) takes the
 * general decode's: each stream's walk goes on while its next time (a thread switch
 * of its CPU, or a time its walk reports) is the earliest of all (the first stream's
 * on a tie), and waits (yields) where another's is earlier; a stream whose walk ended
 * goes on with its switches. The targets then get every stream's instructions,
 * events, times and switches in the general decode's order. The outcome: status 0,
 * every stream decoded (the instructions and calls of all); else the first stream's
 * that was not (the targets hold part of a decode: start it again). With `logs`, each
 * stream's walk is the replay of the one logged elsewhere (see replayPerfStreams).
 */
function walkStreams(
  streams: readonly StreamContext[],
  target: (s: StreamContext, graph: DecisionGraph | undefined) => FastTarget,
  logs?: readonly WalkLogSource[],
): FastCoverage {
  const graphs = new GraphCache(streams[0]?.graphStore);
  const live: StreamTurn[] = [];
  // One stream waits for none.
  for (const [index, s] of streams.entries())
    live.push(
      new StreamTurn(s, index, graphs, (graph) => target(s, graph), streams.length > 1, logs?.[index]),
    );
  const turns = live.slice();
  let insns = 0;
  let calls = 0;
  let failed: FastCoverage | undefined;
  // A turn: the walk on to where it waits or ends, or after it, the next switch.
  const go = (turn: StreamTurn): boolean => {
    if (turn.walking) {
      turn.bound(live);
      const r = turn.steps.next();
      if (!r.done) return true;
      turn.walking = false;
      if (r.value.status !== 0) {
        failed = r.value;
        return false;
      }
      insns += r.value.insns;
      calls += r.value.calls;
    } else turn.stepSwitch();
    // Then its switches, each at its own time.
    return turn.switchAfter();
  };
  // Each stream first runs to its first wait (as interleave starts each).
  for (let i = 0; i < live.length; ) {
    const turn = live[i]!;
    turn.started = true;
    if (go(turn)) i++;
    else if (failed !== undefined) break;
    else live.splice(i, 1);
  }
  while (failed === undefined && live.length > 0) {
    let best = 0;
    for (let i = 1; i < live.length; i++) {
      const a = live[i]!.s;
      const b = live[best]!.s;
      if (lt64(a.nextHi, a.nextLo, b.nextHi, b.nextLo)) best = i;
    }
    if (!go(live[best]!)) live.splice(best, 1);
  }
  graphs.save();
  let errors = 0;
  for (const turn of turns) errors += turn.errors;
  if (failed !== undefined) {
    failed.errors = errors;
    return failed;
  }
  const res = new FastCoverage();
  res.insns = insns;
  res.calls = calls;
  res.errors = errors;
  return res;
}

/**
 * A stream's fast decode: its walk (decodeTimedFeed's, as steps), and the sideband it
 * moves on as decodePerfStream does: at a time the walk reports, the switches before
 * it at their own times, then who runs and the process images.
 */
class StreamTurn {
  readonly steps: Generator<void, FastCoverage, void>;
  /** The walk has not ended. */
  walking = true;
  /** It ran (to its first wait). */
  started = false;
  /** The next of {@link s}'s switches. */
  private next = 0;
  /** The image control runs in (it changes as the walk moves the sideband on). */
  image: Image;
  /** Errors printed (see FastCoverage.errors). */
  errors = 0;
  private readonly hit = new ImageHit();
  readonly to: FastTarget;
  /**
   * While it has its turn, the last TSC at which it goes on (see {@link bound}); a
   * turnHi of -1: none, it waits at once.
   */
  private turnHi = 0;
  private turnLo = 0;
  /**
   * The same, or its next switch if that comes first: up to there the stream goes on
   * without a look at the others or at its switches (see {@link waits}).
   */
  private limitHi = 0;
  private limitLo = 0;

  constructor(
    readonly s: StreamContext,
    /** Its place among the streams (the first goes first on a tie). */
    readonly index: number,
    graphs: GraphCache,
    target: (graph: DecisionGraph | undefined) => FastTarget,
    /** There are other streams: this one takes turns with them (see WalkTime.waits). */
    turns: boolean,
    /**
     * The walk: here (by default); here, logged to a writer (logPerfStream); or
     * elsewhere, its log replayed from a source (replayPerfStreams).
     */
    walk?: WalkLogWriter | WalkLogSource,
  ) {
    this.image = s.images.image(s.where.pid);
    doubleFields(this, ["turnHi", "turnLo", "limitHi", "limitLo"]);
    const time = turns ? new TakingTurns(this, graphs) : new TurnTime(this, graphs);
    if (typeof walk === "function") {
      this.to = target(undefined);
      this.steps = replayWalk(time, walk);
      return;
    }
    const graph = graphs.graph(this.image);
    this.to = target(graph);
    const errata = walkErrata(s.config.errata, s.config.addrFilter);
    this.steps = timedWalk(s.trace, graph, walk === undefined ? time : new LoggedTime(time, walk), errata);
  }

  /**
   * The walk lost control at hi:lo (WalkTime.lost), the decoder's offset `offset`:
   * whether decodePerfStream goes on there as perf's decoder does, the code being
   * missing (not perf script's lines, whose errors carry perf's time): the stop charged
   * to a missing binary (silent), or in no file at all (its error each time, printed now).
   */
  lost(hi: number, lo: number, offset: number): boolean {
    const s = this.s;
    if (!s.perfResync || s.perfErrors || this.image.find(hi, lo, this.hit) === 0) return false;
    const charged = s.images.charge(s.where.pid, hi, lo);
    // (An error whose offset the walk does not know: the general decode's.)
    if (charged === 0 && offset < 0) return false;
    this.to.lost?.(hi, lo);
    if (charged === 0 && s.where.inRange) {
      s.sink.error(s.where, offset, errorMessage(-ErrorCode.NoMap), ErrorCode.NoMap, hi, lo);
      this.errors++;
    }
    return true;
  }

  /** decodePerfStream's `at` (its settle too: what is shown): the stream moves on to TSC hi:lo. */
  private step(hi: number, lo: number): void {
    const { where, images, cr3s } = this.s;
    where.tscHi = hi;
    where.tscLo = lo;
    const { pid, tid: was } = where;
    const next = this.next;
    for (
      let sw = this.nextSwitch();
      sw !== undefined && !lt64(hi, lo, sw.tscHi, sw.tscLo);
      sw = this.nextSwitch()
    ) {
      this.next++;
      where.pid = sw.pid;
      where.tid = sw.tid;
      cr3s?.seen(sw.pid, sw.tid);
    }
    if (this.next !== next) this.setLimit();
    const imagesChanged = images.advance(hi, lo);
    const switched = where.pid !== pid || where.tid !== was;
    // What is shown (decodePerfStream's settle): --tid's thread, within --time-range.
    const { range, tid } = this.s;
    if (range !== undefined || tid !== undefined) {
      const wasInRange = where.inRange;
      where.inRange =
        (tid === undefined || where.tid === tid) &&
        (range === undefined ||
          (!lt64(hi, lo, range.fromHi, range.fromLo) && !lt64(range.toHi, range.toLo, hi, lo)));
      if (wasInRange && range !== undefined && !switched && lt64(range.toHi, range.toLo, hi, lo))
        this.to.rangeEnd?.(range.toHi, range.toLo);
    }
    if (imagesChanged || switched) this.image = images.image(where.pid);
    if (switched && where.inRange) this.to.switched();
  }

  /** The switches before hi:lo at their own times (decodePerfStream's switchesBefore), then hi:lo. */
  at(hi: number, lo: number): void {
    for (
      let sw = this.nextSwitch();
      sw !== undefined && lt64(sw.tscHi, sw.tscLo, hi, lo);
      sw = this.nextSwitch()
    )
      this.step(sw.tscHi, sw.tscLo);
    this.step(hi, lo);
  }

  /**
   * Its turn comes (the walk goes on): the other `live` streams wait where they are
   * until it ends, so where this one must wait for them is known now, once for all
   * the times it reports in this turn (see {@link goes}).
   */
  bound(live: readonly StreamTurn[]): void {
    let hi = NEVER;
    let lo = NEVER;
    for (const o of live) {
      if (o === this) continue;
      // One that has not run yet goes first whatever the time.
      let oHi = o.started ? o.s.nextHi : 0;
      let oLo = o.started ? o.s.nextLo : 0;
      // One listed before this goes first on a tie: this one goes on up to the TSC before
      // (from 0, -1:NEVER, which no time is at or before).
      if (!o.started || o.index < this.index) {
        oHi = oLo === 0 ? oHi - 1 : oHi;
        oLo = oLo === 0 ? NEVER : oLo - 1;
      }
      if (lt64(oHi, oLo, hi, lo)) {
        hi = oHi;
        lo = oLo;
      }
    }
    this.turnHi = hi;
    this.turnLo = lo;
    this.setLimit();
  }

  /** The limit: the turn's, or the next switch if it comes first. */
  private setLimit(): void {
    const sw = this.nextSwitch();
    const first = sw !== undefined && lt64(sw.tscHi, sw.tscLo, this.turnHi, this.turnLo);
    this.limitHi = first ? sw.tscHi : this.turnHi;
    this.limitLo = first ? sw.tscLo : this.turnLo;
  }

  /**
   * Whether this stream goes on at its next time (s.nextHi:nextLo): no other live
   * stream waits at an earlier time, nor at the same being listed before it.
   */
  private goes(): boolean {
    return !lt64(this.turnHi, this.turnLo, this.s.nextHi, this.s.nextLo);
  }

  /**
   * The walk reports TSC hi:lo next: where this stream waits first (its next time set),
   * its switches before that time each taken when it goes first. As decodePerfStream,
   * which waits at each switch and each event whose time is not the stream's own.
   */
  waits(hi: number, lo: number): boolean {
    // Most times: no switch before it, no other stream waits earlier (nor this one).
    if (!lt64(this.limitHi, this.limitLo, hi, lo)) return false;
    return this.waitsPast(hi, lo);
  }

  /** {@link waits} past the limit. */
  private waitsPast(hi: number, lo: number): boolean {
    const s = this.s;
    for (;;) {
      const sw = this.nextSwitch();
      const before = sw !== undefined && lt64(sw.tscHi, sw.tscLo, hi, lo);
      if (before) {
        s.nextHi = sw.tscHi;
        s.nextLo = sw.tscLo;
      } else {
        if (hi === s.where.tscHi && lo === s.where.tscLo) return false;
        s.nextHi = hi;
        s.nextLo = lo;
      }
      if (!this.goes()) return true;
      if (!before) return false;
      this.step(sw.tscHi, sw.tscLo);
    }
  }

  /** After the walk: whether a switch is still to come (its time is the stream's next). */
  switchAfter(): boolean {
    const sw = this.nextSwitch();
    if (sw === undefined) return false;
    this.s.nextHi = sw.tscHi;
    this.s.nextLo = sw.tscLo;
    return true;
  }

  /** After the walk: the next switch happens. */
  stepSwitch(): void {
    const sw = this.nextSwitch()!;
    this.step(sw.tscHi, sw.tscLo);
  }

  /**
   * The next of the stream's switches, undefined past its last. (Never read past the
   * array's end: optimised code that does is thrown away.)
   */
  private nextSwitch(): StreamContext["switches"][number] | undefined {
    const switches = this.s.switches;
    return this.next < switches.length ? switches[this.next] : undefined;
  }
}

/**
 * A stream's {@link WalkTime}: its turn's clock, sideband and graphs. Methods of a
 * class, not closures made per stream: every stream's walk then calls the same
 * functions on objects of one shape (closures of each stream made the walk's code,
 * compiled seeing one stream's, be thrown away at the next stream's call).
 */
class TurnTime implements WalkTime {
  readonly clock: Clock;
  readonly ticks: boolean;
  readonly cr3: boolean;

  constructor(
    protected readonly turn: StreamTurn,
    private readonly graphs: GraphCache,
  ) {
    const s = turn.s;
    this.clock = new Clock(s.config);
    this.ticks = s.config.enableTickEvents;
    this.cr3 = s.cr3s !== undefined;
  }

  at(hi: number, lo: number): void {
    this.turn.at(hi, lo);
  }

  ready(): WalkFeed {
    return this.turn.to.ready();
  }

  get image(): Image {
    return this.turn.image;
  }

  graph(image: Image, maxNodes: number, maxWalk: number): DecisionGraph {
    return this.graphs.graph(image, maxNodes, maxWalk);
  }

  lost(hi: number, lo: number, offset: number): boolean {
    return this.turn.lost(hi, lo, offset);
  }

  resumed(hi: number, lo: number): void {
    this.turn.to.resumed?.(hi, lo);
  }
}

/** The same for one of several streams, which take turns (see {@link WalkTime.waits}). */
class TakingTurns extends TurnTime {
  waits(hi: number, lo: number): boolean {
    return this.turn.waits(hi, lo);
  }
}
