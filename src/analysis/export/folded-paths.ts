/**
 * The paths of folded stacks' lines (FoldedStacks.write, folded.ts): each context-tree
 * node's path, paths that read the same being one.
 */
import { mutableFields } from "../../base/halves.js";
import type { FrameKind } from "../callstack.js";
import { growInt32, growUint32, KeyTable } from "../key-table.js";
import type { FrameNames } from "./frame-names.js";

/** A context-tree node's second key word: the frame kind in the low 2 bits, the naming scope above. */
export const KIND_BITS = 2;
const KIND_MASK = (1 << KIND_BITS) - 1;
/** The path id of a path that reads as nothing. */
export const EMPTY = -1;

/** Paths as folded-lines.ts reads them: path p is (the path above + 1, its name) at keys[2p], keys[2p + 1]. */
export interface PathList {
  readonly keys: Uint32Array;
  readonly size: number;
}

/**
 * The paths of FoldedStacks.write: a path is (the path above, name), kept in {@link keys}
 * as (path above + 1, name); EMPTY reads as nothing. A name is the FrameNames text id of
 * the first text that reads the same once `;` and line breaks became `:` (a rewritten
 * name gets a text of its own).
 *
 * Paths that may read as another do are looked up ({@link child}); the rest are added
 * without a look-up ({@link fresh}): a look-up in a table of a large context tree's
 * paths misses the core's cache twice (the bench perf.data's tree has 180,000 nodes, of
 * which 48,000 now look up). Which may: FoldedStacks.write decides, asking
 * {@link shared} of each node's name after {@link nodeName} has seen every node.
 */
export class FoldedPaths implements PathList {
  /** (path above + 1, name) of each path (see {@link PathList}). */
  keys: Uint32Array;
  size = 0;
  /** The paths that were looked up, (path above + 1, name, 0, 0) → its entry in {@link pathOf}. */
  private readonly index: KeyTable;
  /** Entry of {@link index} → path id. */
  private pathOf: Int32Array = new Int32Array(256);
  /** Text id → its name as above (-1: not yet asked for). */
  private folded: Int32Array = new Int32Array(1024).fill(-1);
  /** Entry (see FrameNames.entry) → its name (-1: not yet asked for): many nodes share one. */
  private entryName: Int32Array = new Int32Array(1024).fill(-1);
  /**
   * Entry → the first node key word (kind and scope) + 1 it was named for; -1 once a node
   * of another kind was named by it too (two frames under one parent then read the same).
   */
  private entryKind: Int32Array = new Int32Array(1024);
  /** Name → how many (kind and scope, address) it names, counted up to 2 (see {@link shared}). */
  private uses: Uint8Array = new Uint8Array(1024);

  constructor(
    private readonly names: FrameNames,
    nodes: number,
  ) {
    this.keys = new Uint32Array(2 * Math.max(nodes, 16));
    // Room for every node's path at once (memory the look-ups leave untouched costs nothing).
    this.index = new KeyTable(Number.MAX_SAFE_INTEGER, nodes);
    mutableFields(this, ["keys", "pathOf", "folded", "entryName", "entryKind", "uses", "size"]);
  }

  /** The path of a thread root named `name`: its parts as they are ("" is no frame, but ";x" is two). */
  thread(name: string): number {
    let p = EMPTY;
    if (name !== "")
      for (const part of name.split(";")) p = this.find(p, this.name(this.names.addText(part)));
    return p;
  }

  /**
   * The name of a node entered as (kind and scope, hi, lo) (see FoldedStacks' keys),
   * counted for {@link shared}.
   */
  nodeName(kindScope: number, hi: number, lo: number): number {
    const names = this.names;
    const kind = (kindScope & KIND_MASK) as FrameKind;
    const scope = kindScope >>> KIND_BITS;
    const e = names.entry(kind, hi, lo, scope);
    if (e < 0) {
      // Past the names' limit, named anew each time: counted as shared.
      const f = this.name(names.addText(names.name(kind, hi, lo, scope)));
      this.use(f, 2);
      return f;
    }
    let f = e < this.entryName.length ? this.entryName[e]! : -1;
    if (f < 0) {
      f = this.name(names.textOf(e));
      this.entryName = growInt32(this.entryName, e + 1, -1);
      this.entryName[e] = f;
      this.entryKind = growInt32(this.entryKind, e + 1);
      this.entryKind[e] = kindScope + 1;
      this.use(f, 1);
    } else if (this.entryKind[e] !== kindScope + 1 && this.entryKind[e] !== -1) {
      // A frame of another kind at the same address, under a parent the other may share.
      this.entryKind[e] = -1;
      this.use(f, 1);
    }
    return f;
  }

  /**
   * Whether name `f` names more than one (kind and scope, address) among the nodes seen:
   * only then may two children of one node read the same. (Two nodes' paths read the same
   * only where two of their ancestors at one depth are children of one node with one name,
   * when thread roots read apart: see FoldedStacks.write.)
   */
  shared(f: number): boolean {
    return this.uses[f]! >= 2;
  }

  /** The path of a node named `f` below path `above`, one that may read as another: looked up. */
  child(above: number, f: number): number {
    if (above === EMPTY) {
      this.names.nameBytes(f);
      if (this.names.length === 0) return EMPTY;
    }
    return this.find(above, f);
  }

  /** The path of a node named `f` below path `above` that reads unlike any other: a new one. */
  fresh(above: number, f: number): number {
    return above === EMPTY ? this.child(above, f) : this.add(above, f);
  }

  /** Path (above, f), looked up and added when new. */
  private find(above: number, f: number): number {
    const index = this.index;
    const before = index.size;
    const i = index.id(above + 1, f, 0, 0);
    if (i >= 0 && i < before) return this.pathOf[i]!;
    const p = this.add(above, f);
    if (i >= 0) {
      this.pathOf = growInt32(this.pathOf, i + 1);
      this.pathOf[i] = p;
    }
    return p;
  }

  private add(above: number, f: number): number {
    const p = this.size++;
    if (2 * this.size > this.keys.length) this.keys = growUint32(this.keys, 2 * this.size);
    this.keys[2 * p] = above + 1;
    this.keys[2 * p + 1] = f;
    return p;
  }

  /** Name `f` names `n` more (kind and scope, address) pairs. */
  private use(f: number, n: number): void {
    if (f >= this.uses.length) {
      const grown = new Uint8Array(Math.max(2 * this.uses.length, f + 1));
      grown.set(this.uses);
      this.uses = grown;
    }
    this.uses[f] = Math.min(2, this.uses[f]! + n);
  }

  /** The name of text `t`, made once. */
  private name(t: number): number {
    if (t >= this.folded.length) this.folded = growInt32(this.folded, t + 1, -1);
    let f = this.folded[t]!;
    if (f < 0) {
      const names = this.names;
      const free = separatorFree(names, t);
      f = names.sameText(free ? t : names.addText(names.textName(t).replace(/[;\r\n]/g, ":")));
      this.folded[t] = f;
    }
    return f;
  }
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
