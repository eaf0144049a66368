/**
 * Call latencies ({@link LatencySummary}) as JSON.
 *
 * Schema "ptkit-latency" version 1:
 * ```
 * {"schema":"ptkit-latency","version":1,
 * "clock":"ns","timeUnit":"ns","tscBase":"0x2712aef02b1a","nsPerTick":0.3855057545006275,
 * "percentiles":"nearest-rank",
 * "calls":19,"incomplete":7,"incompleteBy":{"unwind":0,"unknown":0,"gap":0,"end":7,"abort":0,"exec":0},
 * "offCpuRecorded":false,
 * "only":null,
 * "functions":[
 * {"name":"__init_tls","pid":11181,"calls":1,"total":1762,"min":1762,"p50":1762,"p90":1762,"p99":1762,"max":1762,
 *  "incomplete":0,"onCpu":null,"offCpu":null,"histogram":[{"from":1024,"to":2048,"count":1}],
 *  "callers":[{"caller":"__init_libc","calls":1,"total":1762,"min":1762,"p50":1762,"p90":1762,"p99":1762,"max":1762}]},
 * ...],
 * "slowestKept":20,
 * "slowest":[
 * {"name":"__init_tls","duration":1762,"start":10020,"offCpu":null,"pid":11181,"tid":11181,"thread":"control_flow",
 *  "stack":["_start","_start_c","__libc_start_main","__init_libc","__init_tls"]},
 * ...]}
 * ```
 * - Every duration, total and time is in the clock's unit, `timeUnit`: "ns" (the TSC
 *   frequency was known), "TSC tick" (it was not) or "instruction" (the trace had no
 *   timing); `clock`, `tscBase` and `nsPerTick` are the timeline's (its `otherData`).
 *   Durations are whole units: each equals the call's slice in the timeline.
 * - Percentiles are nearest-rank over every call that returned (see latency-stats.ts):
 *   p50 is the smallest duration at least half of the calls take no longer than.
 * - `functions`: each function (a frame name within a process image) with calls or
 *   incomplete frames, the largest total first. A function whose every frame was
 *   incomplete has `calls` 0 and null statistics. `callers`: its calls split by the
 *   function that made them (null: the bottom frame of a stack), the largest total
 *   first. `histogram`: log2 buckets, `from` <= duration < `to`, from the shortest
 *   call's bucket to the longest's (bucket [0, 1) holds durations below 1).
 * - `onCpu`/`offCpu`: time running and time switched out within the calls, added up;
 *   null when `offCpuRecorded` is false (no thread was seen switched out: unknown).
 * - `calls` and `incomplete` (frames that ended other than by returning: their
 *   duration is unknown; by how in `incompleteBy`) count the whole trace, also when
 *   `only` (`ptkit latency --function`) restricts the functions listed.
 * - `slowest`: up to `slowestKept` calls (of `only`'s functions when it is set), the
 *   slowest first; `start` is when the call was entered, in the clock's unit since
 *   `tscBase`; `stack` the function names from the bottom frame to the call.
 */
import type { ClockUnit } from "../callstack-sink.js";
import type { LatencySummary } from "../latency.js";
import type { DurationStats } from "../latency-stats.js";
import { ByteChunks, type ChunkOut } from "./byte-chunks.js";

export const LATENCY_SCHEMA = "ptkit-latency";
export const LATENCY_VERSION = 1;

/** What one unit of each clock is (as the timeline's otherData.timeUnit says it). */
export const LATENCY_TIME_UNITS: Record<ClockUnit, string> = {
  ns: "ns",
  tsc: "TSC tick",
  insn: "instruction",
};

/** A number as JSON: null for NaN (no value). */
const num = (v: number) => (Number.isFinite(v) ? String(v) : "null");

function stats(s: DurationStats): string {
  return `"calls":${s.calls},"total":${s.total},"min":${num(s.min)},"p50":${num(s.p50)},"p90":${num(s.p90)},"p99":${num(s.p99)},"max":${num(s.max)}`;
}

export function writeLatencyJson(summary: LatencySummary, out: ChunkOut): void {
  const t = new ByteChunks(out);
  const c = summary.clock;
  const recorded = summary.offCpuRecorded;
  t.text(`{"schema":"${LATENCY_SCHEMA}","version":${LATENCY_VERSION},\n`);
  t.text(
    `"clock":"${c.unit}","timeUnit":"${LATENCY_TIME_UNITS[c.unit]}","tscBase":"${c.tscBase}","nsPerTick":${c.nsPerTick},\n`,
  );
  t.text(`"percentiles":"nearest-rank",\n`);
  t.text(
    `"calls":${summary.calls},"incomplete":${summary.incomplete},"incompleteBy":${JSON.stringify(summary.incompleteBy)},\n`,
  );
  t.text(`"offCpuRecorded":${recorded},\n`);
  t.text(`"only":${summary.only === undefined ? "null" : JSON.stringify(summary.only)},\n`);
  t.text(`"functions":[`);
  summary.functions.forEach((f, k) => {
    t.text(k === 0 ? "\n" : ",\n");
    t.text(`{"name":${JSON.stringify(f.name)},"pid":${f.pid},${stats(f)},"incomplete":${f.incomplete},`);
    t.text(recorded ? `"onCpu":${f.total - f.offCpu},"offCpu":${f.offCpu},` : `"onCpu":null,"offCpu":null,`);
    t.text(
      `"histogram":[${f.histogram.map((b) => `{"from":${b.from},"to":${b.to},"count":${b.count}}`).join(",")}],`,
    );
    t.text(`"callers":[`);
    f.callers.forEach((caller, i) => {
      if (i > 0) t.text(",");
      t.text(
        `{"caller":${caller.caller === null ? "null" : JSON.stringify(caller.caller)},${stats(caller)}}`,
      );
    });
    t.text("]}");
  });
  t.text(`\n],\n"slowestKept":${summary.slowestKept},\n"slowest":[`);
  summary.slowest.forEach((s, k) => {
    t.text(k === 0 ? "\n" : ",\n");
    t.text(
      `{"name":${JSON.stringify(s.name)},"duration":${s.duration},"start":${s.start},"offCpu":${recorded ? s.offCpu : "null"},` +
        `"pid":${s.pid},"tid":${s.tid},"thread":${JSON.stringify(s.thread)},"stack":${JSON.stringify(s.stack)}}`,
    );
  });
  t.text("\n]}\n");
  t.flush();
}
