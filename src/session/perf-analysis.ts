/**
 * `ptkit perf`'s analysis outputs: ptkit flow's `--timeline`, `--perfetto`,
 * `--min-duration`, `--folded`,
 * `--folded-weight`, `--coverage`, `--afl-map`, `--edges`, `--latency` and `--stack-depth`
 * (and `ptkit latency`'s report; analysis-outputs.ts
 * parses them and writes the files) fed from every decoded stream through
 * {@link StreamFeeds}: a track per thread, named by its COMM (the idle task and
 * unknown threads, which run on several CPUs at once, get a track per CPU); frames
 * named from the binaries the decode loads into their process (see
 * {@link AllProcessSymbols}; threads of no known process by the kernel's); times in
 * perf's nanoseconds by the file's TSC conversion; losses and decode errors end the
 * stacks, and so does an exec (COMM with the exec flag) the thread's process made.
 * With the file's TSC conversion, the Perfetto timeline's timestamps are perf time
 * (the ns `perf script` prints), and the JSON timeline's too with `--perf-time`.
 */

import type { ClockInfo, FlowTracker } from "../analysis/index.js";
import { FlowClass } from "../flow/index.js";
import {
  decodeRecord,
  type PerfRecord,
  type PerfTasks,
  RecordType,
  type TaskChange,
  type Timed,
  type TscConversion,
  tscToPerfTime,
} from "../perf/index.js";
import {
  type AnalysisOptions,
  AnalysisOutputs,
  defaultAnalysisOptions,
  parseAnalysisOption,
  StreamFeeds,
  type StreamThread,
} from "./analysis-outputs.js";
import type { InputHints } from "./hints.js";
import type { SessionIo } from "./io.js";
import type { AllProcessSymbols } from "./perf-frame-symbols.js";
import type { PerfSink, PerfWhere } from "./perf-stream.js";

/**
 * Words ptkit flow's analysis options would take that are not analysis options here:
 * perf's --jsonl (to stdout; no file variant) and --symbols (frames are always named).
 */
const PERF_OWN = new Set(["--jsonl", "--symbols"]);

/** The analysis options taken out of `argv`: the other words (for parseArgs) and the options, or an error message. */
export function takeAnalysisOptions(
  argv: readonly string[],
): { rest: string[]; options: AnalysisOptions } | string {
  const options = defaultAnalysisOptions();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; ) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === "--perf-time") {
      options.perfTime = true;
      i++;
      continue;
    }
    const used = PERF_OWN.has(arg) ? 0 : parseAnalysisOption(options, argv, i);
    if (typeof used === "string") return used;
    if (used === 0) rest.push(arg);
    i += Math.max(used, 1);
  }
  return { rest, options };
}

/**
 * Tracks of threads that run on several CPUs at once get ids no Linux thread has
 * (pids end below 2^22; viewers such as Perfetto key threads by tid and read negative
 * ids as 0): the idle task (pid 0) gets tid 2^22 + cpu; unknown threads (perf's pid -1)
 * pid 2^32 - 1 (-1 as perf writes it) and tid 2^32 - 1 - cpu.
 */
const IDLE_TID = 1 << 22;
const UNKNOWN = 0xffffffff;

/** Thread names as perf script shows them: each thread's last COMM, else its process's, else its parent's. */
export class ThreadNames {
  private readonly comms = new Map<number, string>();
  /** Each forked process's parent, from the tasks (on first use). */
  private parents: Map<number, number> | undefined;

  /** Take the name a COMM record gives (other records are ignored). */
  record(rec: PerfRecord): void {
    if (rec.type !== RecordType.Comm) return;
    const { fields, problem } = decodeRecord(rec);
    if (!problem) this.comms.set(fields.tid as number, fields.comm as string);
  }

  name(pid: number, tid: number, tasks: PerfTasks): string {
    const own = this.comms.get(tid) ?? this.comms.get(pid);
    if (own !== undefined) return own;
    // A forked child runs its parent's program until it execs.
    this.parents ??= new Map(tasks.changes.flatMap((c) => (c.kind === "fork" ? [[c.pid, c.ppid]] : [])));
    const parent = this.parents.get(pid);
    return parent === undefined ? "" : (this.comms.get(parent) ?? "");
  }
}

/** Nanoseconds per TSC tick: perf's TSC conversion (TIME_CONV, AUXTRACE_INFO), else the nominal frequency, else unknown (0). */
export function perfNsPerTick(conv: TscConversion | undefined, nomFreq: number): number {
  if (conv && conv.timeMult > 0n) return Number(conv.timeMult) / 2 ** conv.timeShift;
  // The nominal frequency (MSR_PLATFORM_INFO[15:8]) times 100 MHz is the TSC frequency.
  return nomFreq > 0 ? 10 / nomFreq : 0;
}

/**
 * The perf time (ns) of the analysis clock's 0 (its TSC base), by perf's conversion:
 * added to the clock's ns, it gives perf's time of each event (within a nanosecond:
 * perf rounds down per conversion, the timelines round the clock to the nearest ns).
 * Undefined without a conversion or when the clock is not nanoseconds.
 */
export function perfOrigin(conv: TscConversion | undefined): (clock: ClockInfo) => number | undefined {
  return (clock) => {
    if (!conv || conv.timeMult === 0n || clock.unit !== "ns" || clock.tscBase === "") return undefined;
    return Number(tscToPerfTime(BigInt(clock.tscBase), conv));
  };
}

/** The analysis outputs of a `ptkit perf` run and the sink that feeds them. */
export class PerfAnalysis {
  readonly sink: PerfSink;
  private insns = 0;
  private calls = 0;
  private readonly feeds: StreamFeeds<PerfWhere>;

  private constructor(
    private readonly outputs: AnalysisOutputs,
    private readonly options: AnalysisOptions,
    names: ThreadNames,
    tasks: PerfTasks,
  ) {
    const track = (w: PerfWhere): StreamThread => {
      if (w.pid > 0) return { pid: w.pid, tid: w.tid, name: names.name(w.pid, w.tid, tasks) };
      const cpu = Math.max(w.cpu, 0);
      if (w.pid === 0) return { pid: 0, tid: IDLE_TID + cpu, name: `swapper/${cpu}` };
      return { pid: UNKNOWN, tid: UNKNOWN - cpu, name: `[unknown] cpu ${cpu}` };
    };
    const execs = new Map<number, Timed<TaskChange>[]>();
    for (const c of tasks.changes) {
      if (c.kind !== "exec") continue;
      const list = execs.get(c.pid);
      if (list === undefined) execs.set(c.pid, [c]);
      else list.push(c);
    }
    const feeds = new StreamFeeds<PerfWhere>(outputs, track, (pid) => execs.get(pid));
    this.feeds = feeds;
    this.sink = {
      insn: (w, insn) => {
        this.insns++;
        if (insn.iclass === FlowClass.Call) this.calls++;
        feeds.insn(w, insn);
      },
      block: (w, block, image, lastClass, decoder) => {
        this.insns += block.ninsn;
        // A call ends its block (blockDecoderConfig).
        if (lastClass === FlowClass.Call) this.calls++;
        feeds.block(w, block, image, decoder);
      },
      branch: () => {},
      event: (w, ev) => feeds.event(w, ev),
      error: (w, offset, message) => feeds.error(w, offset, message),
      switched: (w) => feeds.switched(w),
      // The calls and returns held since the last time in the range are timed up to its end.
      rangeEnd: (w, hi, lo) => feeds.timeLimit(w, hi, lo),
    };
  }

  /** The fast path (perf-graph.ts): the stream's feed, ready for what comes next at `where`. */
  fastFeed(where: PerfWhere): FlowTracker {
    return this.feeds.ready(where);
  }

  /** The fast path decoded `insns` instructions, `calls` of them near calls. */
  count(insns: number, calls: number): void {
    this.insns += insns;
    this.calls += calls;
  }

  /** The calls and returns already timed go to the outputs now (the symbols are about to change). */
  release(): void {
    this.outputs.analysis.release();
  }

  /**
   * Whether what it is fed keeps things by decision-graph node (coverage: see
   * FlowTracker.node), which a walk replayed from its log (replayPerfStreams) does not give.
   */
  byNode(): boolean {
    return this.outputs.analysis.coverage !== undefined;
  }

  /** Whether the files may be opened again, emptied (AnalysisOutputs.reopens): for a decode that may start over. */
  reopens(): boolean {
    return this.outputs.reopens();
  }

  /** Close the files without writing more: the decode starts again with {@link open}. */
  abandon(): void {
    this.outputs.abandon();
  }

  /** Open the files: the analysis, or an error message; `warn` gets the outputs' warnings (e.g. coverage tables full). */
  static open(
    io: SessionIo,
    options: AnalysisOptions,
    names: ThreadNames,
    tasks: PerfTasks,
    symbols: AllProcessSymbols,
    nsPerTick: number,
    warn?: (text: string) => void,
    hints?: InputHints,
  ): PerfAnalysis | string {
    const outputs = AnalysisOutputs.open(io, options, {
      code: [],
      warn,
      hints,
      nsPerTick,
      perfOrigin: nsPerTick > 0 ? perfOrigin(tasks.conversion) : undefined,
      name: "",
      symbolizer: symbols.kernelOnly,
      trackSymbols: (track) => symbols.current(track.pid),
      coverageSymbols: () => symbols.all(),
    });
    return typeof outputs === "string" ? outputs : new PerfAnalysis(outputs, options, names, tasks);
  }

  /** Write and close the files: an error message, or the summary line ("" when no file was written). */
  finish(): { error?: string; summary: string } {
    const error = this.outputs.finish();
    const o = this.options;
    const files = [o.timeline, o.perfetto, o.folded, o.coverage, o.aflMap, o.edges, o.latency].filter(
      (f) => f !== undefined,
    );
    const threads = this.outputs.analysis.threads;
    const pids = new Set(threads.map((t) => t.pid)).size;
    const plural = (n: number, what: string) =>
      `${n} ${what}${n === 1 ? "" : what.endsWith("s") ? "es" : "s"}`;
    // `ptkit latency` alone prints its report and writes no file.
    if (files.length === 0) return { error, summary: "" };
    const summary =
      `wrote ${files.join(", ")}: ${plural(this.insns, "instruction")}, ${plural(this.calls, "call")}, ` +
      `${plural(threads.length, "thread")} in ${plural(pids, "process")}`;
    return { error, summary };
  }
}

/** Both sinks, `a` first. */
export function bothSinks(a: PerfSink, b: PerfSink): PerfSink {
  return {
    insn: (w, insn) => {
      a.insn(w, insn);
      b.insn(w, insn);
    },
    block: (w, block, image, lastClass, decoder) => {
      a.block(w, block, image, lastClass, decoder);
      b.block(w, block, image, lastClass, decoder);
    },
    branch: (w, flags, fh, fl, th, tl, names) => {
      a.branch(w, flags, fh, fl, th, tl, names);
      b.branch(w, flags, fh, fl, th, tl, names);
    },
    event: (w, ev, offset) => {
      a.event(w, ev, offset);
      b.event(w, ev, offset);
    },
    error: (w, offset, message, code, ipHi, ipLo) => {
      a.error(w, offset, message, code, ipHi, ipLo);
      b.error(w, offset, message, code, ipHi, ipLo);
    },
    switched: (w) => {
      a.switched(w);
      b.switched(w);
    },
    rangeEnd: (w, hi, lo) => {
      a.rangeEnd?.(w, hi, lo);
      b.rangeEnd?.(w, hi, lo);
    },
  };
}
