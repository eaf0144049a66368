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
import { ByteChunks, type ChunkOut, utf8 } from "./byte-chunks.js";

export const LATENCY_SCHEMA = "ptkit-latency";
export const LATENCY_VERSION = 1;

/** What one unit of each clock is (as the timeline's otherData.timeUnit says it). */
export const LATENCY_TIME_UNITS: Record<ClockUnit, string> = {
  ns: "ns",
  tsc: "TSC tick",
  insn: "instruction",
};

/** The fixed parts of the records (written as bytes: a record is no string). */
const NULL = utf8("null");
const FUNCTION_FIRST = utf8('\n{"name":');
const FUNCTION = utf8(',\n{"name":');
const PID = utf8(',"pid":');
const CALLS = utf8(',"calls":');
const TOTAL = utf8(',"total":');
const MIN = utf8(',"min":');
const P50 = utf8(',"p50":');
const P90 = utf8(',"p90":');
const P99 = utf8(',"p99":');
const MAX = utf8(',"max":');
const INCOMPLETE = utf8(',"incomplete":');
const ON_CPU = utf8(',"onCpu":');
const OFF_CPU = utf8(',"offCpu":');
const NO_CPU = utf8(',"onCpu":null,"offCpu":null');
const HISTOGRAM = utf8(',"histogram":[');
const BUCKET_FROM = utf8('{"from":');
const BUCKET_TO = utf8(',"to":');
const BUCKET_COUNT = utf8(',"count":');
const CALLERS = utf8('],"callers":[');
const CALLER = utf8('{"caller":');
const END = utf8("]}");

/** A number as JSON: null for NaN (no value). */
function putNum(t: ByteChunks, v: number): void {
  if (Number.isFinite(v)) t.int(v);
  else t.bytes(NULL);
}

/**
 * The statistics' fields in the order written, each with the bytes before its value
 * and a function that reads it (not a read by a computed name: one load site for
 * seven names is a generic keyed load).
 */
const STATS: readonly (readonly [Uint8Array, (s: DurationStats) => number])[] = [
  [CALLS, (s) => s.calls],
  [TOTAL, (s) => s.total],
  [MIN, (s) => s.min],
  [P50, (s) => s.p50],
  [P90, (s) => s.p90],
  [P99, (s) => s.p99],
  [MAX, (s) => s.max],
];

/** The statistics' fields from `"calls"` on (`,"calls":...,"max":...`). */
function putStats(t: ByteChunks, s: DurationStats): void {
  for (const [label, field] of STATS) {
    t.bytes(label);
    putNum(t, field(s));
  }
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
  const functions = summary.functions;
  for (let k = 0; k < functions.length; k++) {
    const f = functions[k]!;
    t.bytes(k === 0 ? FUNCTION_FIRST : FUNCTION);
    t.json(f.name);
    t.bytes(PID);
    t.int(f.pid);
    putStats(t, f);
    t.bytes(INCOMPLETE);
    t.int(f.incomplete);
    if (recorded) {
      t.bytes(ON_CPU);
      t.int(f.total - f.offCpu);
      t.bytes(OFF_CPU);
      t.int(f.offCpu);
    } else t.bytes(NO_CPU);
    t.bytes(HISTOGRAM);
    const buckets = f.histogram;
    for (let i = 0; i < buckets.length; i++) {
      const b = buckets[i]!;
      if (i > 0) t.byte(0x2c);
      t.bytes(BUCKET_FROM);
      t.int(b.from);
      t.bytes(BUCKET_TO);
      t.int(b.to);
      t.bytes(BUCKET_COUNT);
      t.int(b.count);
      t.byte(0x7d);
    }
    t.bytes(CALLERS);
    const callers = f.callers;
    for (let i = 0; i < callers.length; i++) {
      const caller = callers[i]!;
      if (i > 0) t.byte(0x2c);
      t.bytes(CALLER);
      // Names as JSON.stringify writes them: a map of their encoded bytes cost more (its
      // look-ups miss the cache: 52k names, 150k callers for the bench perf.data).
      if (caller.caller === null) t.bytes(NULL);
      else t.json(caller.caller);
      putStats(t, caller);
      t.byte(0x7d);
    }
    t.bytes(END);
  }
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
