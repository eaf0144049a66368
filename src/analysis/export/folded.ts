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
import type { FrameKind } from "../callstack.js";
import type { CallSink, ThreadTrack } from "../callstack-sink.js";
import { growFloat64, growUint32, KeyTable } from "../key-table.js";
import type { FrameNames } from "./frame-names.js";
import { TextChunks } from "./text-chunks.js";

export type FoldedWeight = "insn" | "time";

/** A parent id for thread roots (their key words: this, 0, pid, tid). */
const THREAD = 0xffffffff;
/** A node's second key word: the frame kind in the low 2 bits, the naming scope above. */
const KIND_BITS = 2;
const KIND_MASK = (1 << KIND_BITS) - 1;

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
   */
  write(out: (chunk: string) => void, weight: FoldedWeight): void {
    const text = new TextChunks(out);
    const lines = new Map<string, number>();
    const keys = this.tree.keys;
    const n = this.tree.size;
    const paths: string[] = new Array<string>(n);
    const w = weight === "insn" ? this.insns : this.times;
    for (let id = 0; id < n; id++) {
      const k = 4 * id;
      const parent = keys[k]!;
      if (parent === THREAD) {
        paths[id] = this.threadNames.get(id) ?? "";
        continue;
      }
      const kindScope = keys[k + 1]!;
      const name = this.names
        .name((kindScope & KIND_MASK) as FrameKind, keys[k + 2]!, keys[k + 3]!, kindScope >>> KIND_BITS)
        .replace(/[;\r\n]/g, ":");
      const above = paths[parent]!;
      paths[id] = above === "" ? name : `${above};${name}`;
      const v = id < w.length ? w[id]! : 0;
      if (v > 0) lines.set(paths[id]!, (lines.get(paths[id]!) ?? 0) + v);
    }
    for (const [path, v] of lines) {
      const rounded = Math.round(v);
      if (rounded > 0) text.write(`${path} ${rounded}\n`);
    }
    text.flush();
  }
}
