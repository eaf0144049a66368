/**
 * The merge of call stacks across shards: the segments ({@link SegmentRecorder}) of
 * each thread of an input put in time order and stitched, each continuing the stack
 * the one before left, into one tree of frames per thread; from it, per function, the
 * calls, the instructions and time spent in it (self) and under it (total: counted
 * once per path, however often the function recurs on it, as flame graphs count).
 */
import { KeyTable } from "../analysis/index.js";
import { FunctionNames } from "./names.js";
import { type FrameRow, type NodeRow, type SegmentRow, UNSTITCHED } from "./segments.js";

/** One shard's call-stack rows, as {@link SegmentRecorder} made them. */
export interface ShardStacks {
  /** The shard's number in its plan (orders segments that start at the same time). */
  shard: number;
  segments: readonly SegmentRow[];
  /** In node order: a parent before its children. */
  nodes: readonly NodeRow[];
  /** Each frame entered, in order (only when the shard recorded calls). */
  frames?: readonly FrameRow[];
}

/** A call that returned: the `calls` table's row (without the input). */
export interface CallRow {
  pid: number;
  tid: number;
  comm: string;
  function: string;
  dso: string;
  /** The calling function ("" at the bottom of the stack). */
  caller: string;
  /** 1: the bottom of the stack. */
  depth: number;
  /** Absolute times, as SegmentRow.start. */
  start: number;
  duration: number;
}

/** A frame of the stack a segment leaves: its node, return address ("-": none), entry time (NaN: unknown), whether a call. */
interface StackEntry {
  node: number;
  ret: string;
  start: number;
  call: boolean;
}

/** A shard's nodes for the stitching. */
interface ShardView {
  /** Node id → its row. */
  byId: NodeRow[];
  /** Segment → its nodes, in order. */
  groups: Map<number, NodeRow[]>;
  /** Node id → its frame in its thread's tree (set as its segment is stitched). */
  global: Int32Array;
  /** Segment → the frames entered in it, in order. */
  frames: Map<number, FrameRow[]>;
}

/** A function of a thread: the `functions` table's row (without the input). */
export interface FunctionRow {
  pid: number;
  tid: number;
  comm: string;
  function: string;
  dso: string;
  calls: number;
  selfInsns: number;
  totalInsns: number;
  selfTime: number;
  totalTime: number;
}

/** The frames of one thread, stitched: node 0 is the thread (nothing is credited to it). */
class ThreadTree {
  comm = "";
  readonly parent: number[] = [-1];
  readonly fn: number[] = [-1];
  readonly insns: number[] = [0];
  readonly times: number[] = [0];
  readonly calls: number[] = [0];
  /** (parent, function) → child node id - 1 (ids start at 1: node 0 is the thread). */
  private readonly children = new KeyTable(Number.MAX_SAFE_INTEGER);
  /** The branch the last segment ended on (SegmentRow.endBranch). */
  branch = "";
  /** The stack the last segment left, bottom first. */
  stack: StackEntry[] = [];
  /** Each node's depth (1: the bottom). */
  readonly depth: number[] = [0];

  child(parent: number, fn: number): number {
    const id = this.children.id(parent, fn, 0, 0) + 1;
    if (id === this.parent.length) {
      this.depth.push(this.depth[parent]! + 1);
      this.parent.push(parent);
      this.fn.push(fn);
      this.insns.push(0);
      this.times.push(0);
      this.calls.push(0);
    }
    return id;
  }
}

/** A transfer between two windows of a stream: the branch ending one, to where the next began. */
export interface SeamEdge {
  from: string;
  to: string;
  /** Its FlowClass (256: asynchronous). */
  kind: number;
}

/** FlowClass values the seams need (flow/flow-class.ts). */
const CALL = 2;
const RETURN = 3;
const FAR_CALL = 6;
const FAR_RETURN = 7;

/**
 * Stitches the shards of one input; {@link functions} gives the totals. With
 * `continuous`, the segments of a thread are windows of one stream (a raw trace cut at
 * PSBs): a branch a window ended on goes on into the next window (its frame pushed or
 * popped, its edge in {@link seams}), as one decode would have taken it.
 */
export class Stitcher {
  readonly seams: SeamEdge[] = [];
  /** Calls that returned, from the shards' frames (see ShardStacks.frames). */
  readonly calls: CallRow[] = [];

  constructor(private readonly continuous = false) {}

  private readonly threads = new Map<string, ThreadTree>();
  private readonly names = new FunctionNames();

  /** Stitch every shard's segments, in time order per thread: all the input's shards at once. */
  add(shards: readonly ShardStacks[]): void {
    const all: { shard: ShardStacks; seg: SegmentRow }[] = [];
    for (const shard of shards) for (const seg of shard.segments) all.push({ shard, seg });
    // Time order; without times (NaN), plan order. A thread runs on one CPU at a time.
    all.sort(
      (a, b) =>
        order(a.seg.start, b.seg.start) || a.shard.shard - b.shard.shard || a.seg.segment - b.seg.segment,
    );
    // Per shard: its nodes by id, each segment's nodes, and (filled per segment) each node's frame in the thread's tree.
    const views = new Map<ShardStacks, ShardView>();
    for (const shard of shards) {
      const byId: NodeRow[] = [];
      const groups = new Map<number, NodeRow[]>();
      for (const n of shard.nodes) {
        byId[n.node] = n;
        const g = groups.get(n.segment);
        if (g === undefined) groups.set(n.segment, [n]);
        else g.push(n);
      }
      const frames = new Map<number, FrameRow[]>();
      for (const f of shard.frames ?? []) {
        const segment = byId[f.node]?.segment;
        if (segment === undefined) continue;
        const list = frames.get(segment);
        if (list === undefined) frames.set(segment, [f]);
        else list.push(f);
      }
      views.set(shard, { byId, groups, global: new Int32Array(byId.length), frames });
    }
    for (const { shard, seg } of all) {
      const view = views.get(shard)!;
      this.segment(this.thread(seg), seg, view.groups.get(seg.segment) ?? [], view);
    }
  }

  /** Each function of each thread. */
  functions(): FunctionRow[] {
    const rows: FunctionRow[] = [];
    for (const [key, t] of this.threads) {
      const [pid, tid] = key.split("/").map(Number) as [number, number];
      const n = t.parent.length;
      // Totals under each node: children come after their parents.
      const subInsns = t.insns.slice();
      const subTimes = t.times.slice();
      for (let id = n - 1; id > 0; id--) {
        subInsns[t.parent[id]!]! += subInsns[id]!;
        subTimes[t.parent[id]!]! += subTimes[id]!;
      }
      const byFn = new Map<number, FunctionRow>();
      // Depth first, counting the functions on the path: a node adds its total to its
      // function only where the function is not already on the path above it.
      const first = new Int32Array(n).fill(-1);
      const next = new Int32Array(n).fill(-1);
      for (let id = n - 1; id > 0; id--) {
        const p = t.parent[id]!;
        next[id] = first[p]!;
        first[p] = id;
      }
      const onPath = new Int32Array(this.names.list.length);
      const todo: number[] = [];
      for (let c = first[0]!; c >= 0; c = next[c]!) todo.push(c);
      while (todo.length > 0) {
        const id = todo.pop()!;
        if (id < 0) {
          onPath[t.fn[-id - 1]!]!--;
          continue;
        }
        const fn = t.fn[id]!;
        let row = byFn.get(fn);
        if (row === undefined) {
          const [name, dso] = this.names.list[fn]!;
          row = {
            pid,
            tid,
            comm: t.comm,
            function: name,
            dso,
            calls: 0,
            selfInsns: 0,
            totalInsns: 0,
            selfTime: 0,
            totalTime: 0,
          };
          byFn.set(fn, row);
        }
        row.calls += t.calls[id]!;
        row.selfInsns += t.insns[id]!;
        row.selfTime += t.times[id]!;
        if (onPath[fn] === 0) {
          row.totalInsns += subInsns[id]!;
          row.totalTime += subTimes[id]!;
        }
        onPath[fn]!++;
        // Leaving the node (after its children) takes it off the path.
        todo.push(-id - 1);
        for (let c = first[id]!; c >= 0; c = next[c]!) todo.push(c);
      }
      rows.push(...byFn.values());
    }
    return rows;
  }

  private thread(seg: SegmentRow): ThreadTree {
    const key = `${seg.pid}/${seg.tid}`;
    let t = this.threads.get(key);
    if (t === undefined) {
      t = new ThreadTree();
      this.threads.set(key, t);
    }
    if (seg.comm !== "") t.comm = seg.comm;
    return t;
  }

  /**
   * The branch `branch` ("CLASS 0xFROM SIZE") ended a window; the next began at `to`:
   * its edge, and what it does to the stack (a call pushes the frame the next window's
   * first root is, a return pops to the frame it returns to, else the top one).
   */
  private seam(t: ThreadTree, branch: string, to: string, nodes: readonly NodeRow[], at: number): void {
    const [cls, from, size] = branch.split(" ");
    const kind = Number(cls);
    this.seams.push({ from: from!, to, kind });
    const stack = t.stack;
    if (kind === CALL || kind === FAR_CALL) {
      const root = nodes.find((n) => n.kind === "root");
      if (root === undefined) return;
      const parent = stack.at(-1)?.node ?? 0;
      const node = t.child(parent, this.names.id(root.function, root.dso));
      t.calls[node]! += 1;
      const ret = BigInt(from!) + BigInt(size!);
      t.stack = [...stack, { node, ret: `0x${ret.toString(16)}`, start: at, call: true }];
    } else if (kind === RETURN || kind === FAR_RETURN) {
      let i = stack.length - 1;
      while (i >= 0 && stack[i]!.ret !== to) i--;
      t.stack = stack.slice(0, i >= 0 ? i : Math.max(0, stack.length - 1));
    }
  }

  private call(t: ThreadTree, seg: SegmentRow, node: number, start: number, end: number): void {
    const [name, dso] = this.names.list[t.fn[node]!]!;
    const parent = t.parent[node]!;
    this.calls.push({
      pid: seg.pid,
      tid: seg.tid,
      comm: t.comm,
      function: name,
      dso,
      caller: parent > 0 ? this.names.list[t.fn[parent]!]![0] : "",
      depth: t.depth[node]!,
      start,
      duration: end - start,
    });
  }

  /** One segment: its nodes onto the thread's tree from the stack the one before left. */
  private segment(t: ThreadTree, seg: SegmentRow, nodes: readonly NodeRow[], view: ShardView): void {
    const { byId, global } = view;
    if (this.continuous && t.branch !== "" && seg.firstIp !== "")
      this.seam(t, t.branch, seg.firstIp, nodes, seg.start);
    t.branch = seg.endBranch;
    let stack = t.stack;
    // Tracing resumed where a frame returns to: it (and what is above it) has returned.
    if (seg.startIp !== "") {
      for (let i = stack.length - 1; i >= 0; i--)
        if (stack[i]!.ret === seg.startIp) {
          // It returned (the frames above it were unwound) when the run began.
          const e = stack[i]!;
          if (e.call && !Number.isNaN(e.start)) this.call(t, seg, e.node, e.start, seg.start);
          stack = stack.slice(0, i);
          break;
        }
    }
    /** A level's frame in the stack before, or 0 (the thread: an empty stack). */
    const levelNode = (level: number): number =>
      level === UNSTITCHED || level >= stack.length ? 0 : stack[stack.length - 1 - level]!.node;
    for (const n of nodes) {
      let g: number;
      if (n.kind === "level") g = levelNode(n.level);
      else {
        const parent = global[n.parent] ?? 0;
        const under = byId[n.parent];
        // A root at the bottom is the frame of the stack before that its level stands for.
        g =
          n.kind === "root" && under?.kind === "level" && parent !== 0
            ? parent
            : t.child(parent, this.names.id(n.function, n.dso));
      }
      global[n.node] = g;
      if (g === 0) continue;
      t.insns[g]! += n.selfInsns;
      t.times[g]! += n.selfTime;
      t.calls[g]! += n.calls;
    }
    // Calls that returned, and when the frames left open were entered.
    const openStart = new Map<number, number>();
    for (const f of view.frames.get(seg.segment) ?? []) {
      const n = byId[f.node]!;
      const under = byId[n.parent];
      if (Number.isNaN(f.end)) {
        openStart.set(f.node, f.start);
        continue;
      }
      if (n.kind === "root") {
        // A root at the bottom that stands for a frame of the stack before: that frame returned.
        if (under?.kind !== "level" || f.how === "gap" || f.how === "exec") continue;
        const entry = stack.find((e) => e.node === global[f.node] && e.call);
        if (entry !== undefined && !Number.isNaN(entry.start))
          this.call(t, seg, entry.node, entry.start, f.end);
      } else if (f.how === "return") this.call(t, seg, global[f.node]!, f.start, f.end);
    }
    const entry = (n: NodeRow, ret: string): StackEntry => ({
      node: global[n.node]!,
      ret,
      start: openStart.get(n.node) ?? Number.NaN,
      call: n.kind !== "root",
    });
    // The stack this segment leaves.
    if (seg.endNode < 0) {
      t.stack = seg.cleared ? [] : stack.slice(0, Math.max(0, stack.length - seg.levels));
      return;
    }
    const chain: StackEntry[] = [];
    let bottom: NodeRow | undefined = byId[seg.endNode];
    for (let n = bottom; n !== undefined && n.kind !== "level"; n = byId[n.parent]) {
      chain.push(entry(n, "-"));
      bottom = n;
    }
    chain.reverse();
    const returns = seg.endReturns === "" ? [] : seg.endReturns.split(" ");
    for (let i = 0; i < chain.length && i < returns.length; i++) chain[i]!.ret = returns[i]!;
    const level = bottom === undefined ? undefined : byId[bottom.parent];
    const base = level === undefined ? 0 : levelNode(level.level);
    if (base === 0) {
      t.stack = chain;
      return;
    }
    // Under a stitched level: the stack before, down to that level's frame, then the chain
    // (whose root, if it is one, is that frame).
    const keep = stack.slice(0, stack.length - level!.level);
    t.stack = bottom!.kind === "root" ? [...keep, ...chain.slice(1)] : [...keep, ...chain];
  }
}

/** Times in order; without a time (a segment with no frames, or no clock), after them. */
function order(a: number, b: number): number {
  const na = Number.isNaN(a);
  const nb = Number.isNaN(b);
  if (na || nb) return na === nb ? 0 : na ? 1 : -1;
  return a - b;
}
