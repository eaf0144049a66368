/**
 * What a shard's decode hands the merge about call stacks: each run of a thread (from
 * the switch to it to the switch away, see CallAnalysisOptions.segments) as a
 * *segment* with its own tree of frames, the instructions and time spent in each, and
 * what the segment leaves open. The merge ({@link Stitcher}) puts the segments of a
 * thread back in time order and continues each from the stack the one before left, so
 * that the totals are those of one decode of everything.
 *
 * Why segments stitch. A run of a thread that starts with an empty stack names the
 * code it finds running a *root* frame, and a return that matches no frame ends the
 * top frame and makes the code it returned to a new root. Decoded whole, the thread
 * would have had the stack S its previous run left: the code found running is S's top
 * frame, and each return past the bottom goes on in the frame below. So the k-th root
 * a segment enters at depth 1 (before any gap) *is* S's k-th frame from the top, and a
 * frame called at depth 1 after k roots is called from that frame. The recorder keeps
 * that as a *level* node per k (the parent of those depth-1 frames, and what time spent
 * with no frame open goes to); the merge maps level k to S's frame (or, past S's
 * bottom, to nothing, as one decode would have had an empty stack too). A gap
 * (overflow, decode error) or an exec ends every frame in one decode as well: after
 * it the segment's frames hang from the *unstitched* level (-1).
 *
 * Exact where each return that crosses a segment's start returns to its caller's frame
 * (the usual case); a longjmp or unwinding return across a shard boundary, which one
 * decode would match to a frame further down, is taken as a return to the frame below.
 *
 * One decode would also have ended, when tracing resumes where a frame of the stack
 * before returns to (an interrupt or system call whose handler was not traced), that
 * frame and those above it: the segment keeps where tracing resumed first and the
 * return addresses of the frames it leaves open, for the merge to do the same.
 *
 * Crediting follows FoldedStacks: what a thread ran since its last operation goes to its
 * top frame, only while it runs; but a run's time starts at its first frame or gap.
 */
import {
  type CallSink,
  type ClockInfo,
  FRAME_END_NAMES,
  FRAME_KIND_NAMES,
  FrameEnd,
  FrameKind,
  type FrameNames,
  growFloat64,
  growInt32,
  growUint32,
  KeyTable,
  MARKER_NAMES,
  type Marker,
  type ThreadTrack,
} from "../analysis/index.js";
import { hex64 } from "../base/halves.js";

/** A level node's first key word (frames have their parent's id there, always smaller). */
const LEVEL = 0xffffffff;
/** A frame's second key word: the frame kind in the low 2 bits, the naming scope above. */
const KIND_BITS = 2;
const KIND_MASK = (1 << KIND_BITS) - 1;
/** The level of frames after a gap or exec: not stitched. */
export const UNSTITCHED = -1;

/** A segment as the merge reads it. */
export interface SegmentRow {
  segment: number;
  pid: number;
  tid: number;
  comm: string;
  /**
   * When the run's first frame or gap came: absolute (ns or TSC ticks since TSC 0);
   * NaN without a time or without either. (Not the switch: a stream applies the switches
   * that came while it ran nothing at once, at the time of the first.)
   */
  start: number;
  /** The innermost frame open at the end, or -1. */
  endNode: number;
  /** Roots entered at depth 1 before any gap (the levels used). */
  levels: number;
  /** A gap or exec ended every frame. */
  cleared: boolean;
  /** Where tracing first resumed with the run's stack empty ("0x..."; "" if it did not). */
  startIp: string;
  /** The return address of each frame open at the end, bottom first, "-" for none. */
  endReturns: string;
  /** Where the run's first instruction was, when it began with a root ("0x..."), else "". */
  firstIp: string;
  /** The branch left pending at the end of its stream (see ThreadTrack.endBranch), or "". */
  endBranch: string;
}

/** A node as the merge reads it: a level (kind "level", `level` set) or a frame. */
export interface NodeRow {
  node: number;
  segment: number;
  /** The parent node; -1 for levels. */
  parent: number;
  kind: string;
  level: number;
  function: string;
  dso: string;
  calls: number;
  selfInsns: number;
  /** In the clock's unit ({@link SegmentRecorder.clock}). */
  selfTime: number;
}

/** A run of a thread as it begins: nothing in it yet. */
export function newSegment(segment: number, pid: number, tid: number, comm: string): SegmentRow {
  return {
    segment,
    pid,
    tid,
    comm,
    start: Number.NaN,
    endNode: -1,
    levels: 0,
    cleared: false,
    startIp: "",
    endReturns: "",
    firstIp: "",
    endBranch: "",
  };
}

/** A frame entered (SegmentRecorder with calls): its node, when it was entered and left, how it ended. */
export interface FrameRow {
  node: number;
  /** Absolute, as {@link SegmentRow.start}. */
  start: number;
  /** NaN: still open at the end of its segment. */
  end: number;
  /** A FrameEnd name ("return", "unknown", ...), "" when open. */
  how: string;
}

/** A frame record's end while it is open. */
const OPEN = 255;

/** A hole in the trace, per thread. */
export interface GapRow {
  segment: number;
  pid: number;
  tid: number;
  what: string;
  /** Trace offset (-1: unknown). */
  offset: number;
  message: string;
  /** Absolute, as {@link SegmentRow.start}. */
  time: number;
}

export class SegmentRecorder implements CallSink {
  clock: ClockInfo = { unit: "insn", tscBase: "", nsPerTick: 0 };
  /** Added to a clock value to make it absolute (see {@link SegmentRow.start}). */
  private origin = Number.NaN;
  private readonly nodes: KeyTable;
  private insns: Float64Array = new Float64Array(256);
  private times: Float64Array = new Float64Array(256);
  private entries: Float64Array = new Float64Array(256);
  /** With {@link calls}: each frame entered (its node, absolute entry and exit times, how it ended; 255 open). */
  private frameNode: Int32Array = new Int32Array(0);
  private frameStart: Float64Array = new Float64Array(0);
  private frameEnd: Float64Array = new Float64Array(0);
  private frameHow: Uint8Array = new Uint8Array(0);
  private frameCount = 0;
  /** Per thread: the frame record of each open depth. */
  private readonly openFrames: (Int32Array | undefined)[] = [];
  /** Node → its segment. */
  private nodeSegment: Int32Array = new Int32Array(256);
  readonly segments: SegmentRow[] = [];
  readonly gaps: GapRow[] = [];
  /** Per thread (track index): the node of each open depth (0: the current level). */
  private readonly paths: (Uint32Array | undefined)[] = [];
  private readonly depths: number[] = [];
  private readonly current: (SegmentRow | undefined)[] = [];
  private readonly lastTime: number[] = [];
  private readonly lastCount: number[] = [];

  /**
   * `calls`: also record each frame's entry and exit (for the `calls` table: one row
   * per call, so as many rows as the trace has calls).
   */
  constructor(
    private readonly names: FrameNames,
    readonly calls = false,
    maxNodes = 1 << 24,
  ) {
    this.nodes = new KeyTable(maxNodes);
  }

  /** Nodes not kept because the table was full (their time went to their parent). */
  get refused(): number {
    return this.nodes.refused;
  }

  begin(clock: ClockInfo): void {
    this.clock = clock;
    if (clock.unit === "insn") return;
    const base = Number(BigInt(clock.tscBase));
    this.origin = clock.unit === "ns" ? base * clock.nsPerTick : base;
  }

  resume(track: ThreadTrack, _time: number, icount: number): void {
    const i = track.index;
    const seg = newSegment(this.segments.length, track.pid, track.tid, track.name);
    this.segments.push(seg);
    this.current[i] = seg;
    const path = this.paths[i] ?? new Uint32Array(16);
    this.paths[i] = path;
    path[0] = this.level(seg, 0);
    this.depths[i] = 0;
    // Time counts from the run's first frame or gap, not from the switch: a stream takes
    // the switches that came while it ran nothing at the time of the first of them.
    this.lastTime[i] = Number.NaN;
    this.lastCount[i] = icount;
  }

  suspend(track: ThreadTrack, time: number, icount: number): void {
    this.credit(track, time, icount);
    const i = track.index;
    const seg = this.current[i];
    if (seg === undefined) return;
    const depth = this.depths[i]!;
    seg.endNode = depth > 0 ? this.paths[i]![depth]! : -1;
    // The open frames' return addresses (the stack is as the run left it: see CallAnalysisOptions.segments).
    const stack = track.stack;
    const returns: string[] = [];
    for (let f = 0; f < Math.min(depth, stack.stored); f++) returns.push(stack.returnOf(f) || "-");
    seg.endReturns = returns.join(" ");
    seg.startIp = track.startIp;
    seg.endBranch = track.endBranch;
    // The thread name may have come later than the run began.
    seg.comm = track.name;
    this.current[i] = undefined;
  }

  enter(
    track: ThreadTrack,
    depth: number,
    kind: FrameKind,
    hi: number,
    lo: number,
    time: number,
    icount: number,
    scope: number,
  ): void {
    this.credit(track, time, icount);
    const i = track.index;
    const seg = this.current[i];
    if (seg === undefined) return;
    let path = this.paths[i]!;
    if (depth >= path.length) {
      path = growUint32(path, depth + 1);
      this.paths[i] = path;
    }
    const parent = path[depth - 1]!;
    const id = this.nodes.id(parent, (kind | (scope << KIND_BITS)) >>> 0, hi, lo);
    const node = id < 0 ? parent : id;
    this.own(node, seg.segment);
    if (Number.isNaN(seg.start)) {
      seg.start = this.origin + time;
      if (depth === 1 && kind === FrameKind.Root) seg.firstIp = `0x${hex64(hi, lo, 0)}`;
    }
    if (kind !== FrameKind.Root) this.entries[node]! += 1;
    if (this.calls) this.frameEntered(i, depth, node, time);
    path[depth] = node;
    this.depths[i] = depth;
    // The k-th root at the bottom is the k-th frame from the top of the stack before.
    if (depth === 1 && kind === FrameKind.Root && !seg.cleared) {
      seg.levels++;
      path[0] = this.level(seg, seg.levels);
    }
  }

  exit(track: ThreadTrack, depth: number, end: FrameEnd, time: number, icount: number): void {
    this.credit(track, time, icount);
    const i = track.index;
    const seg = this.current[i];
    if (seg === undefined) return;
    if (end === FrameEnd.Exec) this.clear(i, seg);
    if (this.calls) {
      const f = this.openFrames[i]?.[depth] ?? -1;
      if (f >= 0) {
        this.frameEnd[f] = this.origin + time;
        this.frameHow[f] = end;
      }
    }
    this.depths[i] = depth - 1;
  }

  marker(
    track: ThreadTrack,
    what: Marker,
    offset: number,
    message: string,
    time: number,
    icount: number,
  ): void {
    this.credit(track, time, icount);
    const seg = this.current[track.index];
    if (seg === undefined) return;
    if (Number.isNaN(seg.start)) seg.start = this.origin + time;
    this.gaps.push({
      segment: seg.segment,
      pid: track.pid,
      tid: track.tid,
      what: MARKER_NAMES[what] ?? "gap",
      offset,
      message,
      time: this.origin + time,
    });
    this.clear(track.index, seg);
  }

  finish(): void {}

  /** The nodes, levels first where they came first (a parent always comes before its children). */
  nodeRows(): NodeRow[] {
    const keys = this.nodes.keys;
    const names = this.names;
    const rows: NodeRow[] = [];
    for (let id = 0; id < this.nodes.size; id++) {
      const k = 4 * id;
      const level = keys[k] === LEVEL;
      const kindScope = keys[k + 1]!;
      const kind = (kindScope & KIND_MASK) as FrameKind;
      const scope = kindScope >>> KIND_BITS;
      const hi = keys[k + 2]!;
      const lo = keys[k + 3]!;
      rows.push({
        node: id,
        segment: this.nodeSegment[id]!,
        parent: level ? -1 : keys[k]!,
        kind: level ? "level" : FRAME_KIND_NAMES[kind]!,
        level: level ? hi - 1 : 0,
        function: level ? "" : names.name(kind, hi, lo, scope),
        dso: level || (hi === 0 && lo === 0) ? "" : names.module(hi, lo, scope),
        calls: this.entries[id] ?? 0,
        selfInsns: this.insns[id] ?? 0,
        selfTime: this.times[id] ?? 0,
      });
    }
    return rows;
  }

  /** Each frame entered (with {@link calls}), in order: node, entry and exit times (NaN: open at the end), how it ended ("" open). */
  frameRows(): FrameRow[] {
    const rows: FrameRow[] = [];
    for (let f = 0; f < this.frameCount; f++) {
      const how = this.frameHow[f]!;
      rows.push({
        node: this.frameNode[f]!,
        start: this.frameStart[f]!,
        end: this.frameEnd[f]!,
        how: how === OPEN ? "" : FRAME_END_NAMES[how]!,
      });
    }
    return rows;
  }

  private frameEntered(i: number, depth: number, node: number, time: number): void {
    const f = this.frameCount++;
    if (f >= this.frameNode.length) {
      const n = Math.max(256, 2 * f);
      const node2 = new Int32Array(n);
      node2.set(this.frameNode);
      this.frameNode = node2;
      this.frameStart = growFloat64(this.frameStart, n);
      this.frameEnd = growFloat64(this.frameEnd, n);
      const how = new Uint8Array(n);
      how.set(this.frameHow);
      this.frameHow = how;
    }
    this.frameNode[f] = node;
    this.frameStart[f] = this.origin + time;
    this.frameEnd[f] = Number.NaN;
    this.frameHow[f] = OPEN;
    let open = this.openFrames[i] ?? new Int32Array(16);
    if (depth >= open.length) open = growInt32(open, depth + 1);
    open[depth] = f;
    this.openFrames[i] = open;
  }

  /** The level node `level` of `seg` (its key: LEVEL, the segment, level + 1). */
  private level(seg: SegmentRow, level: number): number {
    const id = this.nodes.id(LEVEL, 0, level + 1, seg.segment);
    // A full table: the time goes to the level of the table's last segment.
    if (id < 0) return this.nodes.size - 1;
    this.own(id, seg.segment);
    return id;
  }

  private own(node: number, segment: number): void {
    if (node >= this.insns.length) {
      this.insns = growFloat64(this.insns, node + 1);
      this.times = growFloat64(this.times, node + 1);
      this.entries = growFloat64(this.entries, node + 1);
    }
    if (node >= this.nodeSegment.length) this.nodeSegment = growInt32(this.nodeSegment, node + 1);
    this.nodeSegment[node] = segment;
  }

  /** A gap or exec ended every frame: what follows is not stitched. */
  private clear(i: number, seg: SegmentRow): void {
    if (seg.cleared) return;
    seg.cleared = true;
    this.paths[i]![0] = this.level(seg, UNSTITCHED);
  }

  private credit(track: ThreadTrack, time: number, icount: number): void {
    const i = track.index;
    if (this.current[i] === undefined) return;
    const node = this.paths[i]![this.depths[i]!]!;
    this.insns[node]! += icount - this.lastCount[i]!;
    const last = this.lastTime[i]!;
    if (!Number.isNaN(last)) this.times[node]! += time - last;
    this.lastTime[i] = time;
    this.lastCount[i] = icount;
  }
}
