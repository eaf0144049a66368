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
import { decodeTimedFeed, type FastCoverage, type FlowTracker, type WalkTime } from "../analysis/index.js";
import { packetQuirks } from "../cpu/index.js";
import { Clock } from "../event/index.js";
import { DecisionGraph } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { lt64 } from "../time/index.js";
import type { PerfAnalysis } from "./perf-analysis.js";
import type { StreamContext } from "./perf-stream.js";

/** Whether the fast path can decode stream `s` alone (the general decode's outputs being the analysis' only). */
export function fastPathFits(s: StreamContext): boolean {
  const c = s.config;
  return (
    s.decoder === "block" &&
    s.range === undefined &&
    s.tid === undefined &&
    s.gaps.length === 0 &&
    !c.enableIflagsEvents &&
    !c.addrFilter.cfg.some((f) => f !== 0)
  );
}

/**
 * Decode stream `s` into `analysis` by the fast path: its outcome (status 0: decoded;
 * else the analysis holds part of a decode: start it again).
 */
export function fastPerfStream(s: StreamContext, analysis: PerfAnalysis): FastCoverage {
  const { where, images, switches, cr3s } = s;
  let next = 0;
  let image = images.image(where.pid);
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
    if (switched) analysis.sink.switched(where);
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
    ready: (): FlowTracker => analysis.fastFeed(where),
    get image(): Image {
      return image;
    },
  };
  const graph = new DecisionGraph(image);
  const { errata } = s.config;
  const res = decodeTimedFeed(s.trace, graph, time, {
    quirks: packetQuirks(errata),
    skd022: errata.skd022,
    bdm70: errata.bdm70,
  });
  if (res.status !== 0) return res;
  // The switches after the trace still happen: a thread leaves this CPU.
  for (let sw = switches[next]; sw; sw = switches[next]) step(sw.tscHi, sw.tscLo);
  analysis.count(res.insns, res.calls);
  return res;
}
