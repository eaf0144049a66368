/**
 * `ptkit perf`'s fast path for the call-stack outputs (issue 13's decision cache):
 * one stream decoded by analysis/coverage-decode.ts's timed walk through the code's
 * {@link DecisionGraph}, straight from the packets, instead of the event and block
 * decoders of perf-stream.ts. The feed (the stream's FlowTracker) gets the same
 * instructions, events, times and thread switches in the same order, so the outputs
 * are byte-identical; the walk reports where the block decoder would report a time,
 * and this moves the stream on to it as decodePerfStream does at an event: the
 * switches before it at their own times, then who runs and the process images.
 *
 * Taken only where that holds as written here: one stream, nothing printed but the
 * analysis (--quiet), no --time-range, no --tid, no losses to report, no address
 * filter. Where the walk hands over (packets or code it does not cover: see
 * decodeTimedFeed), the caller decodes the file again the general way from the start.
 */
import { decodeTimedFeed, type FastCoverage, type WalkFeed, type WalkTime } from "../analysis/index.js";
import { packetQuirks } from "../cpu/index.js";
import { Clock, type PtEvent } from "../event/index.js";
import { type DecisionGraph, FlowClass } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { InsnClass } from "../isa/index.js";
import { lt64 } from "../time/index.js";
import { BranchLines } from "./branch-lines.js";
import { GraphCache } from "./graph-cache.js";
import type { PerfAnalysis } from "./perf-analysis.js";
import { keptByCalls } from "./perf-output.js";
import type { PerfSink, StreamContext } from "./perf-stream.js";

/** Whether the fast path can decode stream `s` alone (the general decode's outputs being the analysis' only). */
export function fastPathFits(s: StreamContext): boolean {
  const c = s.config;
  return (
    s.decoder === "block" &&
    !s.branchTimes &&
    s.range === undefined &&
    s.tid === undefined &&
    s.gaps.length === 0 &&
    !c.enableIflagsEvents &&
    !c.addrFilter.cfg.some((f) => f !== 0)
  );
}

/** Where a fast decode of a stream goes: its feed (ready for what comes next) and who hears of thread switches. */
interface FastTarget {
  ready(): WalkFeed;
  switched(): void;
}

/**
 * Decode stream `s` into `analysis` by the fast path: its outcome (status 0: decoded;
 * else the analysis holds part of a decode: start it again).
 */
export function fastPerfStream(s: StreamContext, analysis: PerfAnalysis): FastCoverage {
  const res = walkStream(s, () => ({
    ready: () => analysis.fastFeed(s.where),
    switched: () => analysis.sink.switched(s.where),
  }));
  if (res.status === 0) analysis.count(res.insns, res.calls);
  return res;
}

/**
 * `--calls`, or with `every` `--branches`: stream `s`'s branch lines by the fast path,
 * to `s.sink`: the outcome, and how many lines were printed (on a handover, the
 * general decode prints them again: leave them out, see {@link skipBranches}).
 */
export function fastBranchStream(
  s: StreamContext,
  every: boolean,
): { result: FastCoverage; printed: number } {
  let feed: BranchFeed | undefined;
  const result = walkStream(s, (graph) => {
    feed = new BranchFeed(s, graph, every);
    return { ready: () => feed!, switched: () => s.sink.switched(s.where) };
  });
  return { result, printed: feed?.printed ?? 0 };
}

/**
 * `--quiet` without analysis outputs: stream `s` walked by the fast path, which prints
 * nothing (a decode it covers has no error to print): the outcome. On a handover the
 * general decode goes again from the start and prints the errors.
 */
export function fastQuietStream(s: StreamContext): FastCoverage {
  return walkStream(s, () => ({ ready: () => SILENT, switched: () => s.sink.switched(s.where) }));
}

/** The feed of {@link fastQuietStream}: nothing is kept. */
const SILENT: WalkFeed = { run() {}, insn() {}, event() {} };

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
 * `--branches`, at jumps too), and `--calls` prints no jump.
 */
class BranchFeed {
  /** Lines printed (`every`: all, else those `--calls` prints). */
  printed = 0;
  /** Without `every` the walk may leave out nodes that end in jumps (see WalkFeed.jumps). */
  readonly jumps: boolean;
  private readonly lines: BranchLines;

  constructor(
    s: StreamContext,
    private readonly graph: DecisionGraph,
    every: boolean,
  ) {
    this.jumps = every;
    // Without jumps' lines every line is one `--calls` prints (keptByCalls).
    this.lines = new BranchLines((flags, fromHi, fromLo, toHi, toLo) => {
      this.printed++;
      s.sink.branch(s.where, flags, fromHi, fromLo, toHi, toLo, s.images);
    }, every);
  }

  run(hi: number, lo: number, _count: number, lastHi: number, lastLo: number): void {
    const lines = this.lines;
    lines.arrive(lines.branchClass, hi, lo);
    lines.leave(lastHi, lastLo, 0, 0, 0);
  }

  insn(hi: number, lo: number, size: number, fclass: number): void {
    this.node(hi, lo, 1, hi, lo, size, fclass);
  }

  /** A node's instructions: the branch before taken to its first (when it was), its last one's pending. */
  node(hi: number, lo: number, _n: number, endHi: number, endLo: number, size: number, fclass: number): void {
    const lines = this.lines;
    lines.arrive(lines.branchClass, hi, lo);
    // A far transfer's name (iret, sysret, int, ...) needs the instruction itself.
    const far = fclass === FlowClass.FarCall || fclass === FlowClass.FarReturn;
    const iclass = far ? this.graph.insnClassAt(endHi, endLo) : InsnClass.Other;
    lines.leave(endHi, endLo, size, fclass, iclass < 0 ? InsnClass.Other : iclass);
  }

  event(ev: PtEvent): void {
    const pending = this.lines.pending(ev);
    this.lines.arriveBefore(ev, pending);
    this.lines.eventLines(ev, pending);
  }
}

/** Decode stream `s` by the fast path into the target made for its graph. */
function walkStream(s: StreamContext, target: (graph: DecisionGraph) => FastTarget): FastCoverage {
  const { where, images, switches, cr3s } = s;
  let next = 0;
  let image = images.image(where.pid);
  const graphs = new GraphCache(s.graphStore);
  const graph = graphs.graph(image);
  const to = target(graph);
  // decodePerfStream's `at` (no range, no --tid: always in range).
  const step = (hi: number, lo: number) => {
    where.tscHi = hi;
    where.tscLo = lo;
    const { pid, tid: was } = where;
    while (next < switches.length && !lt64(hi, lo, switches[next]!.tscHi, switches[next]!.tscLo)) {
      const sw = switches[next++]!;
      where.pid = sw.pid;
      where.tid = sw.tid;
      cr3s?.seen(sw.pid, sw.tid);
    }
    const imagesChanged = images.advance(hi, lo);
    const switched = where.pid !== pid || where.tid !== was;
    if (imagesChanged || switched) image = images.image(where.pid);
    if (switched) to.switched();
  };
  // The switches before hi:lo at their own times (decodePerfStream's switchesBefore), then hi:lo.
  const at = (hi: number, lo: number) => {
    for (let sw = switches[next]; sw && lt64(sw.tscHi, sw.tscLo, hi, lo); sw = switches[next])
      step(sw.tscHi, sw.tscLo);
    step(hi, lo);
  };
  const time: WalkTime = {
    clock: new Clock(s.config),
    ticks: s.config.enableTickEvents,
    cr3: cr3s !== undefined,
    at,
    ready: () => to.ready(),
    get image(): Image {
      return image;
    },
    graph: (img, maxNodes, maxWalk) => graphs.graph(img, maxNodes, maxWalk),
  };
  const { errata } = s.config;
  const res = decodeTimedFeed(s.trace, graph, time, {
    quirks: packetQuirks(errata),
    skd022: errata.skd022,
    bdm70: errata.bdm70,
  });
  graphs.save();
  if (res.status !== 0) return res;
  // The switches after the trace still happen: a thread leaves this CPU.
  for (let sw = switches[next]; sw; sw = switches[next]) step(sw.tscHi, sw.tscLo);
  return res;
}
