/**
 * The paths of folded stacks' lines (FoldedStacks.write, folded.ts): each context-tree
 * node's path, paths that read the same being one.
 */
import { mutableFields } from "../../base/halves.js";
import type { FrameKind } from "../callstack.js";
import { growInt32, KeyTable } from "../key-table.js";
import type { FrameNames } from "./frame-names.js";

/** A context-tree node's second key word: the frame kind in the low 2 bits, the naming scope above. */
export const KIND_BITS = 2;
const KIND_MASK = (1 << KIND_BITS) - 1;
/** The path id of a path that reads as nothing. */
export const EMPTY = -1;

/**
 * The paths of FoldedStacks.write: a path is (the path above, name), kept in
 * {@link table} as (path above + 1, name); EMPTY reads as nothing. A name is the
 * FrameNames text id of the first text that reads the same once `;` and line breaks
 * became `:` (a rewritten name gets a text of its own).
 */
export class FoldedPaths {
  readonly table: KeyTable;
  /** Text id → its name as above (-1: not yet asked for). */
  private folded: Int32Array = new Int32Array(1024).fill(-1);
  /** Entry (see FrameNames.entry) → its name (-1: not yet asked for): many nodes share one. */
  private entryName: Int32Array = new Int32Array(1024).fill(-1);

  constructor(
    private readonly names: FrameNames,
    nodes: number,
  ) {
    this.table = new KeyTable(Number.MAX_SAFE_INTEGER, nodes);
    mutableFields(this, ["folded", "entryName"]);
  }

  /** The path of a thread root named `name`: its parts as they are ("" is no frame, but ";x" is two). */
  thread(name: string): number {
    let p = EMPTY;
    if (name !== "")
      for (const part of name.split(";")) p = this.table.id(p + 1, this.name(this.names.addText(part)), 0, 0);
    return p;
  }

  /** The path of a node below path `above`, entered as (kind and scope, hi, lo) (see FoldedStacks' keys). */
  child(above: number, kindScope: number, hi: number, lo: number): number {
    const names = this.names;
    const kind = (kindScope & KIND_MASK) as FrameKind;
    const scope = kindScope >>> KIND_BITS;
    const e = names.entry(kind, hi, lo, scope);
    let f = e >= 0 && e < this.entryName.length ? this.entryName[e]! : -1;
    if (f < 0) f = this.entryNameOf(e, kind, hi, lo, scope);
    if (above === EMPTY) {
      names.nameBytes(f);
      if (names.length === 0) return EMPTY;
    }
    return this.table.id(above + 1, f, 0, 0);
  }

  /** The name of entry `e` (-1: past the names' limit, named anew), made once. */
  private entryNameOf(e: number, kind: FrameKind, hi: number, lo: number, scope: number): number {
    const names = this.names;
    if (e < 0) return this.name(names.addText(names.name(kind, hi, lo, scope)));
    const f = this.name(names.textOf(e));
    this.entryName = growInt32(this.entryName, e + 1, -1);
    this.entryName[e] = f;
    return f;
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
