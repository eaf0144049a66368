/**
 * Folded stacks for flame graphs, in Brendan Gregg's format (what flamegraph.pl,
 * speedscope and inferno read): one line per distinct call path, frames from the
 * outermost separated by `;`, then a space and the weight:
 * ```
 * trace.pt;main;parse;read_token 1234
 * ```
 * Weight "insn" counts the instructions that ran with that path on top; weight "time"
 * adds up the time spent there (in the clock's unit, rounded; see {@link ClockUnit}),
 * including time in code the trace did not show (a far frame around an untraced
 * system call). The first frame is the thread's name when it has one. Frame names
 * are {@link FrameNames}' with `;` (it separates frames) and line breaks replaced by `:`.
 *
 * This is ptkit's folded format version 1; the format has no room for a header, so the
 * version is only documented here.
 *
 * Paths are nodes of a context tree (parent, frame kind and naming scope, entry
 * address) kept in a {@link KeyTable}; past its limit deeper paths are cut at the last
 * node it holds. The scope (see {@link FrameNames.scope}) is part of the key: the same
 * address in two process images is two functions.
 */
import { mutableFields } from "../../base/halves.js";
import type { FrameKind } from "../callstack.js";
import type { CallSink, ThreadTrack } from "../callstack-sink.js";
import { growFloat64, growUint32, KeyTable } from "../key-table.js";
import type { ChunkOut } from "./byte-chunks.js";
import { type FoldedFunction, type FrameTree, foldedFunctions } from "./folded-functions.js";
import { writeLines } from "./folded-lines.js";
import { FoldedPaths, KIND_BITS } from "./folded-paths.js";
import type { FrameNames } from "./frame-names.js";

export type FoldedWeight = "insn" | "time";

/** A parent id for thread roots (their key words: this, 0, pid, tid). */
const THREAD = 0xffffffff;

export class FoldedStacks implements CallSink {
  private readonly tree: KeyTable;
  private insns: Float64Array = new Float64Array(256);
  private times: Float64Array = new Float64Array(256);
  /** Per thread: the node of each open frame depth (index 0: the thread root). */
  private readonly paths: (Uint32Array | undefined)[] = [];
  private readonly depths: number[] = [];
  /** Per thread: running, and the time and instruction count credited up to. */
  private readonly running: boolean[] = [];
  private readonly lastTime: number[] = [];
  private readonly lastCount: number[] = [];
  /** Thread root node → thread name. */
  private readonly threadNames = new Map<number, string>();

  constructor(
    private readonly names: FrameNames,
    maxNodes = 1 << 21,
  ) {
    this.tree = new KeyTable(maxNodes);
    // The weights grow with the tree.
    mutableFields(this, ["insns", "times"]);
  }

  begin(): void {}

  resume(track: ThreadTrack, time: number, icount: number): void {
    this.path(track);
    const i = track.index;
    this.running[i] = true;
    this.lastTime[i] = time;
    this.lastCount[i] = icount;
  }

  suspend(track: ThreadTrack, time: number, icount: number): void {
    this.credit(track, time, icount);
    this.running[track.index] = false;
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
    let path = this.path(track);
    if (depth >= path.length) {
      path = growUint32(path, depth + 1);
      this.paths[track.index] = path;
    }
    const parent = path[depth - 1]!;
    const id = this.tree.id(parent, (kind | (scope << KIND_BITS)) >>> 0, hi, lo);
    path[depth] = id < 0 ? parent : id;
    this.depths[track.index] = depth;
  }

  exit(track: ThreadTrack, depth: number, _end: unknown, time: number, icount: number): void {
    this.credit(track, time, icount);
    this.depths[track.index] = depth - 1;
  }

  marker(
    track: ThreadTrack,
    _what: unknown,
    _offset: number,
    _message: string,
    time: number,
    icount: number,
  ): void {
    this.credit(track, time, icount);
  }

  finish(): void {}

  /**
   * The instructions and time since the thread's last operation go to its top frame
   * (only while it runs: each stream suspends its thread before another takes over).
   */
  private credit(track: ThreadTrack, time: number, icount: number): void {
    const i = track.index;
    if (!this.running[i]) return;
    const depth = this.depths[i] ?? 0;
    if (depth > 0) {
      const node = this.paths[i]![depth]!;
      if (node >= this.insns.length) {
        this.insns = growFloat64(this.insns, node + 1);
        this.times = growFloat64(this.times, node + 1);
      }
      this.insns[node]! += icount - this.lastCount[i]!;
      this.times[node]! += time - this.lastTime[i]!;
    }
    this.lastTime[i] = time;
    this.lastCount[i] = icount;
  }

  private path(track: ThreadTrack): Uint32Array {
    const p = this.paths[track.index];
    if (p !== undefined) return p;
    const made = new Uint32Array(16);
    made[0] = this.tree.id(THREAD, 0, track.pid >>> 0, track.tid >>> 0);
    this.paths[track.index] = made;
    this.depths[track.index] = 0;
    this.threadNames.set(made[0]!, track.name);
    return made;
  }

  /**
   * Write the folded lines with the chosen weight, in order of first appearance; paths
   * that read the same (two root frames in one function) are one line.
   *
   * A path that reads the same is found by its frames' names, not its text: names are
   * interned (each distinct name encoded once) and a path is (the path above, name),
   * so no path string is built. As joining with `;` does, an empty name right after a
   * path that reads as nothing adds nothing; a thread's name counts as the names
   * between its `;`s. Two paths are then one exactly when their lines read the same.
   */
  write(out: ChunkOut, weight: FoldedWeight, functions?: (f: FoldedFunction[]) => void): void {
    const keys = this.tree.keys;
    const n = this.tree.size;
    const paths = new FoldedPaths(this.names, n);
    // Each node's path (a node comes after its parent).
    const pathOf = new Int32Array(n);
    for (let id = 0; id < n; id++) {
      const k = 4 * id;
      const parent = keys[k]!;
      pathOf[id] =
        parent === THREAD
          ? paths.thread(this.threadNames.get(id) ?? "")
          : paths.child(pathOf[parent]!, keys[k + 1]!, keys[k + 2]!, keys[k + 3]!);
    }
    // The weights by path, in the order their first weighed node came. The empty path
    // is path id -1: its sum goes at index 0, the rest one up.
    const w = weight === "insn" ? this.insns : this.times;
    const sums = new Float64Array(paths.table.size + 1);
    const order = new Uint32Array(paths.table.size + 1);
    let lines = 0;
    for (let id = 0, weighed = Math.min(n, w.length); id < weighed; id++) {
      const v = w[id]!;
      if (!(v > 0) || keys[4 * id] === THREAD) continue;
      const at = pathOf[id]! + 1;
      if (sums[at] === 0) order[lines++] = at;
      sums[at]! += v;
    }
    writeLines(out, this.names, paths.table, sums, order, lines);
    if (functions !== undefined) functions(foldedFunctions(this.lineTree(paths.table, sums)));
  }

  /** The lines written (the paths with a weight that rounds above 0) as a tree of their frames. */
  private lineTree(table: KeyTable, sums: Float64Array): FrameTree {
    const size = table.size;
    const keys = table.keys;
    const above = new Int32Array(size);
    const name = new Int32Array(size);
    const ends = new Uint8Array(size);
    const weight = new Float64Array(size);
    for (let p = 0; p < size; p++) {
      above[p] = keys[4 * p]! - 1;
      name[p] = keys[4 * p + 1]!;
      // As writeLines writes them: the weight rounded, lines that round to 0 left out.
      const rounded = Math.round(sums[p + 1]!);
      if (rounded > 0) {
        ends[p] = 1;
        weight[p] = rounded;
      }
    }
    const names = this.names;
    return { size, above, name, ends, weight, nameOf: (t) => names.textName(t) };
  }
}
