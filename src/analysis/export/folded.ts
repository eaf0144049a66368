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
import { growFloat64, growInt32, growUint32, KeyTable } from "../key-table.js";
import { ByteChunks, type ChunkOut } from "./byte-chunks.js";
import type { FrameNames } from "./frame-names.js";

export type FoldedWeight = "insn" | "time";

/** A parent id for thread roots (their key words: this, 0, pid, tid). */
const THREAD = 0xffffffff;
/** A node's second key word: the frame kind in the low 2 bits, the naming scope above. */
const KIND_BITS = 2;
const KIND_MASK = (1 << KIND_BITS) - 1;
/** The path id of a path that reads as nothing (see {@link FoldedStacks.write}). */
const EMPTY = -1;

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
   *
   * A path that reads the same is found by its frames' names, not its text: names are
   * interned (each distinct name encoded once) and a path is (the path above, name),
   * so no path string is built. As joining with `;` does, an empty name right after a
   * path that reads as nothing adds nothing; a thread's name counts as the names
   * between its `;`s. Two paths are then one exactly when their lines read the same.
   */
  write(out: ChunkOut, weight: FoldedWeight): void {
    const keys = this.tree.keys;
    const n = this.tree.size;
    const w = weight === "insn" ? this.insns : this.times;
    const names = this.names;
    // A name is the FrameNames text id of the first text that reads the same once `;`
    // and line breaks became `:` (a rewritten name gets a text of its own).
    let folded: Int32Array = new Int32Array(1024).fill(-1);
    const foldedName = (t: number): number => {
      if (t >= folded.length) {
        const longer = new Int32Array(Math.max(t + 1, 2 * folded.length)).fill(-1);
        longer.set(folded);
        folded = longer;
      }
      let f = folded[t]!;
      if (f < 0) {
        const free = separatorFree(names, t);
        f = names.sameText(free ? t : names.addText(names.textName(t).replace(/[;\r\n]/g, ":")));
        folded[t] = f;
      }
      return f;
    };
    const isEmpty = (t: number): boolean => {
      names.nameBytes(t);
      return names.length === 0;
    };
    // Paths: key (path above + 1, name); EMPTY reads as nothing.
    const pathTable = new KeyTable(Number.MAX_SAFE_INTEGER, n);
    const extend = (above: number, name: number): number =>
      above === EMPTY && isEmpty(name) ? EMPTY : pathTable.id(above + 1, name, 0, 0);
    const pathOf = new Int32Array(n);
    let sums: Float64Array = new Float64Array(256);
    // Paths in the order their first weighed node came.
    let order: Uint32Array = new Uint32Array(256);
    let lines = 0;
    for (let id = 0; id < n; id++) {
      const k = 4 * id;
      const parent = keys[k]!;
      if (parent === THREAD) {
        let p = EMPTY;
        const threadName = this.threadNames.get(id) ?? "";
        // Its parts as they are: "" is no frame, but ";x" is two.
        if (threadName !== "")
          for (const part of threadName.split(";"))
            p = pathTable.id(p + 1, foldedName(names.addText(part)), 0, 0);
        pathOf[id] = p;
        continue;
      }
      const kindScope = keys[k + 1]!;
      const kind = (kindScope & KIND_MASK) as FrameKind;
      const scope = kindScope >>> KIND_BITS;
      const e = names.entry(kind, keys[k + 2]!, keys[k + 3]!, scope);
      const t = e >= 0 ? names.textOf(e) : names.addText(names.name(kind, keys[k + 2]!, keys[k + 3]!, scope));
      const p = extend(pathOf[parent]!, foldedName(t));
      pathOf[id] = p;
      const v = id < w.length ? w[id]! : 0;
      if (!(v > 0)) continue;
      // The empty path is path id -1: its sum goes at index 0, the rest one up.
      const at = p + 1;
      if (at >= sums.length) sums = growFloat64(sums, at + 1);
      if (sums[at] === 0) {
        if (lines >= order.length) order = growUint32(order, lines + 1);
        order[lines++] = at;
      }
      sums[at]! += v;
    }
    writeLines(out, names, pathTable, sums, order, lines);
  }
}

/**
 * The folded lines of paths `order[0..lines)` (path id + 1; 0: the empty path) with
 * weights `sums` (by the same index), paths being `pathTable`'s (path above + 1, name).
 * Lines come in order of first appearance, so a line mostly starts as the one before:
 * `line` holds that one's text and `ends` where each of its frames ends, and only the
 * frames below the two paths' common ancestor are walked and copied.
 */
function writeLines(
  out: ChunkOut,
  names: FrameNames,
  pathTable: KeyTable,
  sums: Float64Array,
  order: Uint32Array,
  lines: number,
): void {
  const text = new ByteChunks(out);
  const keys = pathTable.keys;
  // Each path's frame count (a path comes after the one above it).
  const depthOf = new Int32Array(pathTable.size);
  for (let p = 0; p < pathTable.size; p++) {
    const above = keys[4 * p]! - 1;
    depthOf[p] = above === EMPTY ? 1 : depthOf[above]! + 1;
  }
  let line: Uint8Array = new Uint8Array(4096);
  let ends: Int32Array = new Int32Array(64);
  let below: Int32Array = new Int32Array(64);
  let last = EMPTY;
  for (let i = 0; i < lines; i++) {
    const at = order[i]!;
    const rounded = Math.round(sums[at]!);
    if (!(rounded > 0)) continue;
    // Up from this path and the last line's to where they meet, this one's frames kept.
    let a = at - 1;
    let b = last;
    let da = a === EMPTY ? 0 : depthOf[a]!;
    let db = b === EMPTY ? 0 : depthOf[b]!;
    let n = 0;
    if (da > ends.length) ends = growInt32(ends, da);
    while (a !== b) {
      if (da >= db) {
        if (n >= below.length) below = growInt32(below, n + 1);
        below[n++] = a;
        a = keys[4 * a]! - 1;
        da--;
      } else {
        b = keys[4 * b]! - 1;
        db--;
      }
    }
    let end = da > 0 ? ends[da - 1]! : 0;
    while (n > 0) {
      const p = below[--n]!;
      names.nameBytes(keys[4 * p + 1]!);
      const { arena, start, length } = names;
      if (end + length + 1 > line.length) {
        const longer = new Uint8Array(2 * (end + length + 1));
        longer.set(line.subarray(0, end));
        line = longer;
      }
      if (depthOf[p]! > 1) line[end++] = 0x3b; // ;
      for (let j = 0; j < length; j++) line[end + j] = arena[start + j]!;
      end += length;
      ends[depthOf[p]! - 1] = end;
    }
    last = at - 1;
    text.slice(line, 0, end);
    text.byte(0x20);
    text.int(rounded);
    text.byte(0x0a);
  }
  text.flush();
}

/** Whether text `t` has no `;` and no line break (UTF-8 multi-byte sequences hold no ASCII bytes). */
function separatorFree(names: FrameNames, t: number): boolean {
  names.nameBytes(t);
  const a = names.arena;
  for (let i = names.start, end = names.start + names.length; i < end; i++) {
    const c = a[i]!;
    if (c === 0x3b || c === 0x0a || c === 0x0d) return false;
  }
  return true;
}
