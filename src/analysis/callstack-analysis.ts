/**
 * Call stacks and exports over decoded Intel PT: one {@link CallAnalysis} per run holds
 * what all decoded streams share (the threads with their call stacks, the clock, the
 * outputs); each decoded stream (one per CPU, or the one trace of `ptkit flow`) feeds
 * its own {@link FlowTracker} from {@link stream}.
 *
 * ```ts
 * const names = new FrameNames(symbolizer);
 * const timeline = new TimelineWriter((chunk) => file.write(chunk), names); // UTF-8 chunks
 * const analysis = new CallAnalysis({ sinks: [timeline], nsPerTick: 1 / 2.4 });
 * const feed = analysis.stream();
 * feed.thread(pid, tid, "name");
 * // for each decoded instruction and event, in order:
 * feed.insn(insn.ipHi, insn.ipLo, insn.size, insn.iclass);   // or feed.insnRecord(insn)
 * feed.event(ev);
 * feed.error(offset, message);                                  // a decode error: a gap
 * analysis.finish();
 * ```
 */
import { doubleFields, hex64 } from "../base/halves.js";
import { DEFAULT_DEPTH_LIMIT } from "./callstack.js";
import { DEFAULT_LOOKAHEAD } from "./callstack-clock.js";
import { type CallSink, type ClockInfo, ThreadTrack } from "./callstack-sink.js";
import { FlowTracker } from "./callstack-tracker.js";
import type { Coverage } from "./export/coverage.js";
import type { JsonlWriter } from "./export/jsonl.js";

export interface CallAnalysisOptions {
  /** Timed consumers of frames (timeline, folded stacks). */
  sinks?: CallSink[];
  /** Per-block coverage (fed directly, untimed). */
  coverage?: Coverage;
  /** The flow as JSON Lines (fed directly, in execution order). */
  jsonl?: JsonlWriter;
  /** Nanoseconds per TSC tick, when the TSC frequency is known; else times are in ticks. */
  nsPerTick?: number;
  /** Stored frames per thread (default 4096); deeper frames are counted only. */
  depthLimit?: number;
  /** Frame entries and exits held while waiting for the next time (default 65536). */
  lookahead?: number;
  /**
   * The naming scope of a frame `track` enters now (see FrameNames.scope),
   * taken as the frame is decoded: a process may exec before the sinks get the frame.
   */
  frameScope?: (track: ThreadTrack) => number;
  /**
   * Each run of a thread on a stream (from the switch to it to the switch away) starts
   * with an empty stack: the frames open when it is switched away are dropped
   * unreported. For shards (src/shard), where another shard may run the thread in
   * between: the sinks see each run on its own and the merge stitches them.
   */
  segments?: boolean;
}

const T32 = 0x1_0000_0000;

export class CallAnalysis {
  readonly sinks: CallSink[];
  readonly coverage: Coverage | undefined;
  readonly jsonl: JsonlWriter | undefined;
  readonly depthLimit: number;
  readonly lookahead: number;
  readonly frameScope: ((track: ThreadTrack) => number) | undefined;
  readonly segments: boolean;
  readonly threads: ThreadTrack[] = [];
  /** The clock, once settled (see {@link ClockUnit}). */
  clock: ClockInfo | undefined;
  /** The stream whose timed calls and returns wait for the sinks, if any (see TimedOps). */
  waiting: { release(): void } | undefined;
  private readonly byId = new Map<string, ThreadTrack>();
  private readonly streams: FlowTracker[] = [];
  private readonly nsPerTick: number;
  private hasBase = false;
  private baseHi = 0;
  private baseLo = 0;
  private finished = false;

  constructor(options: CallAnalysisOptions = {}) {
    this.sinks = options.sinks ?? [];
    this.coverage = options.coverage;
    this.jsonl = options.jsonl;
    this.nsPerTick = options.nsPerTick ?? 0;
    this.depthLimit = options.depthLimit ?? DEFAULT_DEPTH_LIMIT;
    this.lookahead = options.lookahead ?? DEFAULT_LOOKAHEAD;
    this.frameScope = options.frameScope;
    this.segments = options.segments === true;
    doubleFields(this, ["baseHi", "baseLo"]);
  }

  /** A tracker for one decoded stream; `name` names its thread until one is given. */
  stream(name = ""): FlowTracker {
    const t = new FlowTracker(this, name);
    this.streams.push(t);
    return t;
  }

  /** The thread (pid, tid), created on first use; `name` replaces an empty name. */
  thread(pid: number, tid: number, name = ""): ThreadTrack {
    const key = `${pid}/${tid}`;
    let t = this.byId.get(key);
    if (t === undefined) {
      t = new ThreadTrack(this.threads.length, pid, tid, name, this.depthLimit);
      this.threads.push(t);
      this.byId.set(key, t);
    } else if (t.name === "" && name !== "") {
      // The sinks name a thread when they first see it: as of before.
      this.release();
      t.name = name;
    }
    return t;
  }

  /**
   * The calls and returns already timed go to the sinks now: before something they read
   * when they get them changes (a thread's name; the symbols frames are named by, as
   * ptkit perf replays the sideband).
   */
  release(): void {
    this.waiting?.release();
  }

  /** The clock value of a TSC: ticks (or ns) since the first TSC seen. */
  tscTime(hi: number, lo: number): number {
    if (!this.hasBase) {
      this.hasBase = true;
      this.baseHi = hi;
      this.baseLo = lo;
    }
    const ticks = (hi - this.baseHi) * T32 + (lo - this.baseLo);
    return this.nsPerTick > 0 ? ticks * this.nsPerTick : ticks;
  }

  /** Settle the clock (first caller decides): TSC-based when `timed`, else instruction counts. */
  settle(timed: boolean): void {
    if (this.clock !== undefined) return;
    this.clock = timed
      ? {
          unit: this.nsPerTick > 0 ? "ns" : "tsc",
          tscBase: `0x${hex64(this.baseHi, this.baseLo, 0)}`,
          nsPerTick: this.nsPerTick,
        }
      : { unit: "insn", tscBase: "", nsPerTick: 0 };
    for (const s of this.sinks) s.begin(this.clock);
  }

  /** End every stream (open frames end "end") and let the outputs write what is left. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    let time = 0;
    let icount = 0;
    for (const s of this.streams) {
      const [t, n] = s.end();
      time = Math.max(time, t);
      icount = Math.max(icount, n);
    }
    if (this.clock === undefined) this.settle(false);
    for (const s of this.sinks) s.finish(time, icount);
    this.jsonl?.finish();
  }
}
