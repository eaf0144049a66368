/**
 * One decoded stream's feed into a {@link CallAnalysis}: instructions, events and
 * errors in decode order, plus the running thread. It resolves each branch when the
 * next instruction (or an event) shows where it went, and from that keeps the
 * running thread's {@link CallStack}, the coverage blocks and edges, and the JSON
 * Lines; frame entries and exits go through {@link TimedOps} to get their times.
 *
 * How events move the stack:
 * - AsyncBranch (interrupt, exception): an interrupt frame (entry = where it went,
 *   return address = where it came from, which IRET returns to);
 * - AsyncDisabled: the same with an unknown entry (the handler was not traced);
 * - Disabled after a call: the callee's frame with the disable IP as entry (unknown
 *   when suppressed); Enabled at an address a frame returns to pops that frame (the
 *   untraced SYSCALL or interrupt returned);
 * - Overflow and decode errors ({@link error}): a gap marker, and every frame of the
 *   running thread ends "gap";
 * - An exec (told by whoever knows it, see {@link FlowTracker.exec}): every frame of
 *   the thread ends "exec";
 * - TSX abort: frames pushed inside the transaction end "abort"; the jump to the abort
 *   handler that follows pushes nothing.
 *
 * Coverage gets a block per run of instructions up to a branch and an edge per transfer
 * (branches, and asynchronous branches into traced code) when the instruction it leads
 * to runs; after a gap (tracing off, overflow, decode error, thread switch) the next
 * block is reached from nowhere (`Coverage.restart`). The rules: export/coverage.ts.
 *
 * Per instruction this does a few comparisons and stores; nothing is allocated. When
 * no output needs every instruction ({@link FlowTracker.everyInsn} false), the other
 * instructions can come in runs ({@link FlowTracker.run}), one step for many: those
 * that do not move the stack ({@link movesStack}) for call stacks alone, those that do
 * not end a block ({@link endsBlock}) with coverage ({@link FlowTracker.transfers}).
 * Without call-stack outputs (timeline, folded stacks, JSON Lines) no stack is kept
 * per instruction: coverage alone needs only the transfers.
 */

import { doubleFields, hex64 } from "../base/halves.js";
import { EventFlag, EventType, type PtEvent } from "../event/types.js";
import type { DecisionGraph } from "../flow/decision-graph.js";
import { FlowClass } from "../flow/flow-class.js";
import type { Insn } from "../flow/records.js";
import { FrameEnd as End, FrameKind, type FrameListener } from "./callstack.js";
import type { CallAnalysis } from "./callstack-analysis.js";
import { TimedOps } from "./callstack-clock.js";
import { Marker, type ThreadTrack } from "./callstack-sink.js";
import { type Coverage, EdgeKind } from "./export/coverage.js";
import { NodeIds } from "./node-ids.js";

/**
 * Whether an instruction of {@link FlowClass} `fclass` moves the call stack (a call,
 * return or far call/return): the only instructions call stacks look at one by one.
 */
export function movesStack(fclass: number): boolean {
  return (
    fclass === FlowClass.Call ||
    fclass === FlowClass.Return ||
    (fclass >= FlowClass.FarCall && fclass <= FlowClass.FarReturn)
  );
}

/**
 * Whether an instruction of {@link FlowClass} `fclass` ends a coverage block (a branch,
 * taken or not, call, return or far transfer): the only instructions coverage looks at
 * one by one.
 */
export function endsBlock(fclass: number): boolean {
  return fclass >= FlowClass.Call && fclass !== FlowClass.Ptwrite;
}

/**
 * {@link FlowTracker}'s pending "branch" after an asynchronous branch into traced code:
 * the handler's first instruction makes the coverage edge (and nothing else).
 */
const ASYNC = 0x100;

/** Graphs a tracker keeps coverage ids for, and their words at most (see FlowTracker.idsOf): 64 MB. */
const MAX_NODE_IDS = 16;
const MAX_NODE_ID_WORDS = 1 << 24;

export class FlowTracker implements FrameListener {
  /** Instructions fed so far. */
  icount = 0;
  /**
   * An output (coverage, JSON Lines) needs each instruction through {@link insn}; when
   * false, instructions that do not move the stack may come in runs ({@link run}).
   */
  readonly everyInsn: boolean;
  /**
   * Coverage is kept: when {@link everyInsn} is false, runs ({@link run}) hold no
   * instruction that ends a block ({@link endsBlock}), else none that moves the stack.
   */
  readonly transfers: boolean;
  /** Some output (timeline, folded stacks, JSON Lines) needs the call stacks per instruction. */
  private readonly stacks: boolean;
  private readonly ops: TimedOps;
  private track: ThreadTrack | undefined;
  /**
   * The last instruction if it was a branch (its FlowClass; 0: none), its address and
   * size; or {@link ASYNC} and where an asynchronous branch was taken.
   */
  private pending = 0;
  private pHi = 0;
  private pLo = 0;
  private pSize = 0;
  /** The last instruction. */
  private lastHi = 0;
  private lastLo = 0;
  /** The coverage block being run: its start and the instruction count there. */
  private inBlock = false;
  private bHi = 0;
  private bLo = 0;
  private bCount = 0;
  /** Depth when the current TSX transaction began (-1: none). */
  private txDepth = -1;
  /** A TSX abort was seen: the asynchronous branch that follows goes to its handler. */
  private aborted = false;
  /**
   * The running thread was switched in and has run no instruction here yet, nor has
   * tracing been enabled: where it runs first may be where a frame returns to (see
   * {@link startBlock}).
   */
  private switchedIn = false;
  private hasTsc = false;
  private tscHi = 0;
  private tscLo = 0;
  /** Coverage ids kept per decision-graph node, per graph (see {@link countAtNode}). */
  private readonly nodeIds = new Map<DecisionGraph, NodeIds>();
  /**
   * With coverage: the last node fed whole ({@link node}; -1: none), its graph and
   * their ids, its first and last instruction.
   */
  private q = -1;
  private qGraph: DecisionGraph | undefined;
  private qIds: NodeIds | undefined;
  private qStartHi = 0;
  private qStartLo = 0;
  private qEndHi = 0;
  private qEndLo = 0;
  private qN = 0;
  /** While {@link node} arrives at a node: its id (-1: not in a node) and graph. */
  private toNode = -1;
  private toGraph: DecisionGraph | undefined;

  constructor(
    private readonly analysis: CallAnalysis,
    /** The name of thread 0/0, which runs until {@link thread} names another. */
    private readonly name = "",
  ) {
    this.ops = new TimedOps(analysis, analysis.lookahead);
    this.everyInsn = analysis.jsonl !== undefined;
    this.transfers = analysis.coverage !== undefined;
    this.stacks = analysis.sinks.length > 0 || analysis.jsonl !== undefined;
    doubleFields(this, [
      "pHi",
      "pLo",
      "lastHi",
      "lastLo",
      "bHi",
      "bLo",
      "tscHi",
      "tscLo",
      "qStartHi",
      "qStartLo",
      "qEndHi",
      "qEndLo",
    ]);
  }

  /**
   * The stacks' {@link FrameListener}, of the threads this stream runs: the running
   * thread's frames come and go. (The tracker itself, not closures made per tracker: a
   * thread that moves to another stream's tracker then calls the same functions, and
   * the code that inlined them is not thrown away at each move.)
   */
  push(depth: number, kind: FrameKind, hi: number, lo: number): void {
    this.ops.enter(this.track!, depth, kind, hi, lo, this.icount);
    this.analysis.jsonl?.call(this.icount, depth, kind, hi, lo);
  }

  /** See {@link push}. */
  pop(depth: number, end: End): void {
    this.ops.exit(this.track!, depth, end, this.icount);
    this.analysis.jsonl?.ret(this.icount, depth, end);
  }

  /** The thread running from now on (give the time of the switch first, see {@link time}). */
  thread(pid: number, tid: number, name = ""): void {
    const t = this.analysis.thread(pid, tid, name);
    // Shards: a switch away and back is a new run (the thread may have run elsewhere between).
    if (t === this.track && !this.analysis.segments) return;
    this.endBlock();
    this.pending = 0;
    this.txDepth = -1;
    const before = this.track;
    if (before !== undefined) this.ops.suspend(before, this.icount);
    // Its earlier frames may still be held by another stream: keep its order.
    this.ops.drain(this.icount);
    // Shards: the sinks saw the stack as the run left it (drained); the next run starts empty.
    if (before !== undefined && this.analysis.segments) before.stack.forget();
    this.track = t;
    t.startIp = "";
    t.endBranch = "";
    t.stack.listener = this;
    this.switchedIn = true;
    this.ops.resume(t, this.icount);
    this.analysis.jsonl?.thread(pid, tid);
  }

  private running(): ThreadTrack {
    if (this.track === undefined) {
      this.thread(0, 0, this.name);
      // The stream's own thread, not one switched in (a raw trace's window goes on from
      // the branch the window before ended on: see shard/stitch.ts).
      this.switchedIn = false;
    }
    return this.track!;
  }

  /** An instruction record of the flow decoders. */
  insnRecord(insn: Insn): void {
    this.insn(insn.ipHi, insn.ipLo, insn.size, insn.iclass);
  }

  /** An executed instruction at (hi:lo), `size` bytes, of {@link FlowClass} `fclass`. */
  insn(hi: number, lo: number, size: number, fclass: number): void {
    const stack = (this.track ?? this.running()).stack;
    if (!this.inBlock || this.pending !== 0) this.arrive(hi, lo);
    if (this.stacks) stack.root(hi, lo);
    this.ran(hi, lo, size, fclass);
  }

  /**
   * `count` (> 0) executed instructions from (hi:lo) on, the last at (lastHi:lastLo)
   * (which only coverage reads: the end of its block),
   * none of which moves the stack ({@link movesStack}) nor, with coverage
   * ({@link transfers}), ends a block ({@link endsBlock}): the same as `count`
   * {@link insn} calls, in one step. Only when {@link everyInsn} is false (the outputs
   * that need each instruction do not see these).
   */
  run(hi: number, lo: number, count: number, lastHi: number, lastLo: number): void {
    const stack = (this.track ?? this.running()).stack;
    if (!this.inBlock || this.pending !== 0) this.arrive(hi, lo);
    if (this.stacks) stack.root(hi, lo);
    this.lastHi = lastHi;
    this.lastLo = lastLo;
    this.icount += count;
  }

  /**
   * A node of the decision-graph walk (WalkFeed.node, coverage-decode.ts): `n` (> 0)
   * executed instructions from (hi:lo), the last a transfer at (endHi:endLo) of `size`
   * bytes and {@link FlowClass} `fclass`, the others as in {@link run}: what {@link run}
   * of the first `n - 1` and {@link insn} of the last do, in one call instead of two
   * (the walk feeds a node per basic block run: a million in 4 M instructions).
   */
  node(
    hi: number,
    lo: number,
    n: number,
    endHi: number,
    endLo: number,
    size: number,
    fclass: number,
    id = -1,
    graph?: DecisionGraph,
  ): void {
    // The first instruction: (hi:lo), or the transfer itself in a node of one.
    const firstHi = n > 1 ? hi : endHi;
    const firstLo = n > 1 ? lo : endLo;
    const stack = (this.track ?? this.running()).stack;
    if (!this.inBlock || this.pending !== 0) {
      if (this.transfers) {
        this.toNode = id;
        this.toGraph = graph;
        this.arrive(firstHi, firstLo);
        this.toNode = -1;
      } else this.arrive(firstHi, firstLo);
    }
    if (this.stacks) stack.root(firstHi, firstLo);
    this.icount += n - 1;
    // The transfer, as insn() takes it (its stack has a root frame now: nothing to add).
    this.ran(endHi, endLo, size, fclass);
    if (this.transfers && id >= 0 && graph !== undefined)
      this.ranNode(id, graph, n, firstHi, firstLo, endHi, endLo);
  }

  /** With coverage: node `id` of `graph` ran whole, `n` instructions from (firstHi:firstLo) to (endHi:endLo) (see {@link countAtNode}). */
  private ranNode(
    id: number,
    graph: DecisionGraph,
    n: number,
    firstHi: number,
    firstLo: number,
    endHi: number,
    endLo: number,
  ): void {
    const cov = this.analysis.coverage!;
    if (cov.mapOnly) return;
    this.q = id;
    if (graph !== this.qGraph) this.qIds = this.idsOf(graph, cov);
    this.qGraph = graph;
    this.qIds!.use(graph.generation, cov);
    this.qN = n;
    this.qStartHi = firstHi;
    this.qStartLo = firstLo;
    this.qEndHi = endHi;
    this.qEndLo = endLo;
  }

  /** A new time: the TSC (halves) reached now. */
  time(hi: number, lo: number): void {
    if (this.hasTsc && hi === this.tscHi && lo === this.tscLo) return;
    this.hasTsc = true;
    this.tscHi = hi;
    this.tscLo = lo;
    this.analysis.jsonl?.time(hi, lo, this.icount);
    this.ops.update(this.analysis.tscTime(hi, lo), this.icount);
  }

  /**
   * The stream is cut at TSC hi:lo (ptkit perf's --time-range end): what it fed since
   * the last time ran no later than that (else it would be extrapolated past it).
   */
  timeLimit(hi: number, lo: number): void {
    this.ops.limit(this.analysis.tscTime(hi, lo), this.icount);
  }

  /** A decoder event, in decode order. */
  event(ev: PtEvent): void {
    if (ev.hasTsc) this.time(ev.tscHi, ev.tscLo);
    if (ev.statusUpdate || ev.type === EventType.Tick) return;
    this.analysis.jsonl?.event(this.icount, ev);
    const stack = this.running().stack;
    switch (ev.type) {
      case EventType.Enabled:
        this.pending = 0;
        this.switchedIn = false;
        this.endBlock();
        if (this.stacks) this.resumeAt(ev.ipHi, ev.ipLo);
        break;
      case EventType.Disabled:
      case EventType.Stop:
        if (this.pending !== 0) {
          const c = this.pending;
          this.pending = 0;
          this.leave(c, ev.ipSuppressed || ev.type === EventType.Stop, ev.ipHi, ev.ipLo);
        }
        this.endBlock();
        break;
      case EventType.AsyncBranch:
      case EventType.AsyncDisabled: {
        if (this.pending !== 0) this.resolve(ev.fromHi, ev.fromLo);
        this.endBlock();
        // Into traced code: a coverage edge from where it was taken to the handler's first
        // instruction (into untraced code: a gap).
        if (ev.type === EventType.AsyncBranch && !ev.ipSuppressed) {
          this.pending = ASYNC;
          this.pHi = ev.fromHi;
          this.pLo = ev.fromLo;
        }
        // A TSX abort jumps to its handler in the same function: no new frame.
        if (this.aborted) {
          this.aborted = false;
          break;
        }
        const known = ev.type === EventType.AsyncBranch && !ev.ipSuppressed;
        if (this.stacks)
          stack.push(
            FrameKind.Interrupt,
            known ? ev.ipHi : 0,
            known ? ev.ipLo : 0,
            true,
            ev.fromHi,
            ev.fromLo,
          );
        break;
      }
      case EventType.Overflow:
        this.gap(Marker.Overflow, -1, "");
        break;
      case EventType.Tsx:
        // A call (or return) just before the event went where the event is: its frame
        // first (else an abort in a function the transaction called left the
        // function's frame open, entered after the cut).
        if (this.pending !== 0 && !ev.ipSuppressed) this.resolve(ev.ipHi, ev.ipLo);
        if (!this.stacks) break;
        if (ev.flags & EventFlag.Aborted) {
          if (this.txDepth >= 0) stack.cut(this.txDepth, End.Abort);
          this.txDepth = -1;
          this.aborted = true;
        } else if (ev.flags & EventFlag.Speculative) {
          if (this.txDepth < 0) this.txDepth = stack.depth;
        } else {
          this.txDepth = -1;
        }
        break;
    }
  }

  /** A decode error at trace offset `offset` (-1: unknown): the flow has a gap. */
  error(offset: number, message: string): void {
    this.running();
    this.gap(Marker.Error, offset, message);
  }

  /**
   * Thread pid/tid exec'd at TSC hi:lo: its frames belong to a program it can never
   * return to, so they end "exec" there (the code that runs next starts a new root).
   * Done by the stream that ran the thread last, running or suspended: returns false
   * (and does nothing) on any other stream.
   */
  exec(pid: number, tid: number, hi: number, lo: number): boolean {
    const t = this.analysis.thread(pid, tid);
    if (t.stack.listener !== this) return false;
    this.time(hi, lo);
    // The listener times the exits on this.track: the exec'd thread for now.
    const running = this.track;
    this.track = t;
    t.stack.clear(End.Exec);
    this.track = running;
    // A suspended thread may go on on another stream: its exits go out first (see thread).
    if (t !== running) this.ops.drain(this.icount);
    return true;
  }

  private gap(what: Marker, offset: number, message: string): void {
    const track = this.track!;
    this.pending = 0;
    this.endBlock();
    this.txDepth = -1;
    this.aborted = false;
    this.ops.marker(track, what, offset, message, this.icount);
    this.analysis.jsonl?.error(this.icount, offset, message === "" ? "overflow" : message);
    track.stack.clear(End.Gap);
  }

  /**
   * The next instruction runs at (hi:lo) after a branch, or without a coverage block:
   * one home for what {@link insn}, {@link run} and {@link node} do then, so that the
   * rarer path (a block starting after tracing resumed) has run, and left its type
   * feedback, before V8 optimises any of them. (Code first run in optimised code throws
   * that code away, to be compiled again; so the callers test `inBlock`, which every call
   * reads, first: tested second, it is first read after an event, in optimised code.)
   */
  private arrive(hi: number, lo: number): void {
    if (this.pending !== 0) this.resolve(hi, lo);
    else this.startBlock(hi, lo);
  }

  /** Instruction (hi:lo) of `size` bytes and {@link FlowClass} `fclass` ran (its stack has a root frame). */
  private ran(hi: number, lo: number, size: number, fclass: number): void {
    this.analysis.jsonl?.insn(this.icount, hi, lo, size, fclass);
    this.lastHi = hi;
    this.lastLo = lo;
    this.icount++;
    if (endsBlock(fclass)) {
      this.pending = fclass;
      this.pHi = hi;
      this.pLo = lo;
      this.pSize = size;
    }
  }

  /** The branch before went to (hi:lo), where the next instruction is. */
  private resolve(hi: number, lo: number): void {
    const c = this.pending;
    this.pending = 0;
    const a = this.analysis;
    const cov = a.coverage;
    if (cov !== undefined) {
      if (this.q >= 0 && this.pLo === this.qEndLo && this.pHi === this.qEndHi)
        this.countAtNode(cov, c, hi, lo);
      else {
        if (this.inBlock) cov.block(this.bHi, this.bLo, this.pHi, this.pLo, this.icount - this.bCount);
        cov.edge(this.pHi, this.pLo, hi, lo, c === ASYNC ? EdgeKind.Async : c);
      }
    }
    this.inBlock = true;
    this.bHi = hi;
    this.bLo = lo;
    this.bCount = this.icount;
    if (c === ASYNC) return;
    a.jsonl?.branch(this.icount, c, this.pHi, this.pLo, hi, lo);
    this.leave(c, false, hi, lo);
  }

  /**
   * {@link resolve}'s coverage when the pending branch is node {@link q}'s transfer: the
   * same block and edge counted, their ids kept by node where the block is that node's
   * run and the edge goes to the node {@link node} arrives at in the same graph. (The
   * ids are checked by the keys they stand for, not by what ran in between.)
   */
  private countAtNode(cov: Coverage, c: number, hi: number, lo: number): void {
    const q = this.q;
    const ids = this.qIds!;
    const graph = this.qGraph!;
    const kept = ids.epoch === cov.epoch && ids.generation === graph.generation;
    if (this.inBlock) {
      const n = this.icount - this.bCount;
      let id = -1;
      if (kept && n === this.qN && this.bLo === this.qStartLo && this.bHi === this.qStartHi) {
        id = ids.runBlock(cov, q);
        if (id >= 0) {
          if (cov.varied) cov.setInsns(id, n);
        } else {
          id = cov.blockId(this.bHi, this.bLo, this.pHi, this.pLo);
          ids.keepBlock(q, id);
          if (id >= 0) cov.countBlock(id, n);
        }
      } else {
        id = cov.blockId(this.bHi, this.bLo, this.pHi, this.pLo);
        if (id >= 0) cov.countBlock(id, n);
      }
    }
    cov.enter(lo);
    const kind = c === ASYNC ? EdgeKind.Async : c;
    const to = this.toNode;
    if (kept && to >= 0 && this.toGraph === graph) {
      if (ids.runEdge(cov, q, to)) return;
      const id = cov.edgeId(this.pHi, this.pLo, hi, lo, kind);
      if (id < 0) return;
      ids.keepEdge(cov, q, to, id);
      cov.countEdge(id);
    } else {
      const id = cov.edgeId(this.pHi, this.pLo, hi, lo, kind);
      if (id >= 0) cov.countEdge(id);
    }
  }

  /**
   * The coverage ids kept for `graph`'s nodes: of the last {@link MAX_NODE_IDS} graphs
   * (processes take turns), in {@link MAX_NODE_ID_WORDS} (the graphs themselves may be
   * gone: the walk keeps a few, of so many nodes together); the runs of those forgotten
   * go to the coverage first.
   */
  private idsOf(graph: DecisionGraph, cov: Coverage): NodeIds {
    const all = this.nodeIds;
    let ids = all.get(graph);
    if (ids !== undefined) return ids;
    let words = 0;
    for (const kept of all.values()) words += kept.words;
    for (const [oldest, old] of all) {
      if (all.size < MAX_NODE_IDS && words <= MAX_NODE_ID_WORDS) break;
      words -= old.words;
      old.settle(cov);
      all.delete(oldest);
    }
    ids = new NodeIds();
    all.set(graph, ids);
    return ids;
  }

  /** What the pending branch does to the stack, going to (hi:lo) or to an unknown place. */
  private leave(c: number, unknown: boolean, hi: number, lo: number): void {
    if (!this.stacks) return;
    const stack = this.track!.stack;
    const known = !unknown;
    if (c === FlowClass.Call || c === FlowClass.FarCall) {
      const retLo = (this.pLo + this.pSize) >>> 0;
      const retHi = retLo < this.pLo ? (this.pHi + 1) >>> 0 : this.pHi;
      const kind = c === FlowClass.Call ? FrameKind.Call : FrameKind.Far;
      stack.push(kind, known ? hi : 0, known ? lo : 0, true, retHi, retLo);
    } else if (c === FlowClass.Return || c === FlowClass.FarReturn) {
      if (known) stack.ret(hi, lo, c === FlowClass.FarReturn);
      else stack.cut(stack.depth - 1, End.Return);
    }
  }

  private startBlock(hi: number, lo: number): void {
    if (this.switchedIn) {
      // The thread goes on where this stream first shows it, as after an Enabled event
      // (a thread that left one CPU in an interrupt goes on on another, whose trace may
      // start at a PSB with tracing on, no TIP.PGE).
      this.switchedIn = false;
      if (this.stacks) this.resumeAt(hi, lo);
    }
    this.inBlock = true;
    this.bHi = hi;
    this.bLo = lo;
    this.bCount = this.icount;
    this.analysis.coverage?.restart(lo);
  }

  /** Tracing resumed at (hi:lo) for the running thread: a frame that returns there returned. */
  private resumeAt(hi: number, lo: number): void {
    const t = this.track!;
    // Shards: where the run's own stack is empty, one decode could return into the
    // stack the run before left: the merge does it (see shard/segments.ts).
    if (this.analysis.segments && t.stack.depth === 0 && t.startIp === "")
      t.startIp = `0x${hex64(hi, lo, 0)}`;
    t.stack.resumeAt(hi, lo);
  }

  /** The coverage block ends at the last instruction (no branch out of it seen). */
  private endBlock(): void {
    if (this.inBlock && this.icount > this.bCount)
      this.analysis.coverage?.block(this.bHi, this.bLo, this.lastHi, this.lastLo, this.icount - this.bCount);
    this.inBlock = false;
  }

  /** The end of the stream: open frames end, held times are handed out. Returns [time, icount]. */
  end(): [number, number] {
    this.endBlock();
    // The runs counted by node go to the coverage's counts.
    const cov = this.analysis.coverage;
    if (cov !== undefined) for (const ids of this.nodeIds.values()) ids.settle(cov);
    const running = this.track;
    const segments = this.analysis.segments;
    if (segments && running !== undefined && this.pending !== 0)
      running.endBranch = `${this.pending} 0x${hex64(this.pHi, this.pLo, 0)} ${this.pSize}`;
    this.pending = 0;
    for (const t of this.analysis.threads) {
      if (t.stack.listener !== this) continue;
      this.track = t;
      // Shards: open frames stay open, the sinks see them at the suspend (the merge goes on with them).
      if (!segments) t.stack.clear(End.End);
    }
    if (running !== undefined) this.ops.suspend(running, this.icount);
    this.track = running;
    const time = this.ops.drain(this.icount);
    if (segments) running?.stack.forget();
    return [time, this.icount];
  }
}
