/**
 * Names of frames in the exports: the function symbol when a {@link Symbolizer} knows
 * the address (`name`, or `name+0x1a` for a call into the middle of a function; a
 * root frame, which starts wherever the trace found it running, is named by its
 * function alone), else the hex address. Frames whose entry the trace did not show
 * (a far call or interrupt into untraced code) are `[syscall]`/`[interrupt]`.
 *
 * Threads of different processes can run different code at the same addresses, so
 * each may have its own symbols: `perTrack` gives a thread's (undefined: the default
 * ones), and {@link scope} numbers each distinct {@link Symbolizer} a frame was
 * entered under. A process that execs gets a new symbolizer, so a scope stands for one
 * process image; sinks take the scope when a frame is entered and name it by that.
 *
 * Names are made once per scope and entry address and kept in a {@link KeyTable},
 * so a name costs a look-up in typed arrays, not a symbol search and a string. Each
 * name made gets a text id and its UTF-8 bytes (and, when first asked for, its JSON
 * string literal's) in one byte arena, so writers copy bytes instead of encoding
 * strings.
 */
import { hex64 } from "../../base/halves.js";
import { FrameKind } from "../callstack.js";
import type { ThreadTrack } from "../callstack-sink.js";
import { growUint32, KeyTable } from "../key-table.js";
import { SymbolHit } from "../symbol-table.js";
import type { Symbolizer } from "../symbolizer.js";
import { putUtf8 } from "./byte-chunks.js";

/** The symbols naming a thread's frames; undefined for the default ones. */
export type TrackSymbols = (track: ThreadTrack) => Symbolizer | undefined;

/** Names of frames entered at an unknown address (0), by kind: they have no address. */
const UNKNOWN_NAMES: readonly string[] = ["[unknown]", "[unknown]", "[interrupt]", "[syscall]"];
/** An entry key's first word for those (else the scope and whether a root frame). */
const UNKNOWN_TAG = 0x80000000;

export class FrameNames {
  /** Each scope's symbols; scope 0 is the default symbols'. */
  private readonly scopes: (Symbolizer | undefined)[];
  private readonly ids = new Map<Symbolizer, number>();
  /** The last symbolizer {@link scope} met and its scope: threads run in long stretches. */
  private lastSymbols: Symbolizer | undefined;
  private lastScope = 0;
  private readonly hit = new SymbolHit();
  /**
   * The names made: an entry per (scope, root or not, address), or per kind for
   * unknown addresses; its name, and that as a JSON string literal made when first
   * asked for. A look-up allocates nothing.
   */
  private readonly entries = new KeyTable();
  /** Entry → text id. */
  private entryText: Uint32Array = new Uint32Array(1024);
  /** Each text's name (texts are not deduplicated: two may read the same). */
  private readonly texts: string[] = [];
  /**
   * Where each text's UTF-8 bytes start in {@link arena} and how many (its name), and
   * the same for its JSON string literal (start -1 until asked for).
   */
  private textStart: Uint32Array = new Uint32Array(1024);
  private textLength: Uint32Array = new Uint32Array(1024);
  private jsonStart: Int32Array = new Int32Array(1024).fill(-1);
  private jsonLength: Uint32Array = new Uint32Array(1024);
  /**
   * The bytes of names and JSON literals ({@link start}/{@link length} say where). It
   * grows: read it after asking for the bytes.
   */
  arena: Uint8Array = new Uint8Array(1 << 16);
  private arenaUsed = 0;
  /** Where the last {@link nameBytes}/{@link jsonBytes} asked for is in {@link arena}. */
  start = 0;
  length = 0;

  /**
   * `unnamed`, if given, hears of each address (per scope, once) whose frame is named
   * by the address because no symbol covers it: the caller can say why.
   */
  constructor(
    symbols: Symbolizer | undefined,
    private readonly perTrack?: TrackSymbols,
    private readonly unnamed?: (hi: number, lo: number) => void,
  ) {
    this.scopes = [symbols];
  }

  /** Whether threads may have symbols of their own (then sinks should take {@link scope}s). */
  get perThread(): boolean {
    return this.perTrack !== undefined;
  }

  /** The scope of the symbols naming `track`'s frames now (0: the default symbols). */
  scope(track: ThreadTrack): number {
    const s = this.perTrack?.(track);
    if (s === undefined) return 0;
    if (s === this.lastSymbols) return this.lastScope;
    let id = this.ids.get(s);
    if (id === undefined) {
      id = s === this.scopes[0] ? 0 : this.scopes.length;
      if (id !== 0) this.scopes.push(s);
      this.ids.set(s, id);
    }
    this.lastSymbols = s;
    this.lastScope = id;
    return id;
  }

  /** The name of a frame of `kind` entered at (hi:lo) in `scope`; an entry of 0 is unknown. */
  name(kind: FrameKind, hi: number, lo: number, scope = 0): string {
    const e = this.entry(kind, hi, lo, scope);
    return e >= 0 ? this.nameOf(e) : this.make(kind, hi, lo, scope);
  }

  /** {@link name} as a JSON string literal. */
  json(kind: FrameKind, hi: number, lo: number, scope = 0): string {
    return JSON.stringify(this.name(kind, hi, lo, scope));
  }

  /**
   * The entry number of a frame's name (equal numbers, equal names; different ones may
   * still read the same), or -1 past the table's limit: then {@link name} makes it anew
   * each time.
   */
  entry(kind: FrameKind, hi: number, lo: number, scope = 0): number {
    const unknown = hi === 0 && lo === 0;
    const tag = unknown ? UNKNOWN_TAG + kind : scope * 2 + (kind === FrameKind.Root ? 1 : 0);
    const table = this.entries;
    const before = table.size;
    const e = table.id(tag, hi, lo, 0);
    if (e === before) {
      if (e >= this.entryText.length) this.entryText = growUint32(this.entryText, e + 1);
      this.entryText[e] = this.addText(this.make(kind, hi, lo, scope));
    }
    return e;
  }

  /** The name of entry `e` (see {@link entry}). */
  nameOf(e: number): string {
    return this.texts[this.entryText[e]!]!;
  }

  /** The text id of entry `e`'s name (see {@link entry}). */
  textOf(e: number): number {
    return this.entryText[e]!;
  }

  /** A new text id for `name` (its bytes go in the arena). */
  addText(name: string): number {
    const t = this.texts.length;
    this.texts.push(name);
    if (t >= this.textStart.length) {
      const n = 2 * this.textStart.length;
      this.textStart = growUint32(this.textStart, n);
      this.textLength = growUint32(this.textLength, n);
      this.jsonLength = growUint32(this.jsonLength, n);
      const json = new Int32Array(n).fill(-1);
      json.set(this.jsonStart);
      this.jsonStart = json;
    }
    this.textStart[t] = this.arenaUsed;
    this.textLength[t] = this.put(name);
    return t;
  }

  /** The text of text id `t`. */
  textName(t: number): string {
    return this.texts[t]!;
  }

  /** Set {@link start} and {@link length} to where text `t`'s UTF-8 bytes are in {@link arena}. */
  nameBytes(t: number): void {
    this.start = this.textStart[t]!;
    this.length = this.textLength[t]!;
  }

  /** Set {@link start} and {@link length} to where text `t` as a JSON string literal is in {@link arena}. */
  jsonBytes(t: number): void {
    let at = this.jsonStart[t]!;
    if (at < 0) {
      at = this.arenaUsed;
      this.jsonLength[t] = this.put(JSON.stringify(this.texts[t]!));
      this.jsonStart[t] = at;
    }
    this.start = at;
    this.length = this.jsonLength[t]!;
  }

  /** Append `text` as UTF-8 to the arena (ASCII unit by unit); the bytes written. */
  private put(text: string): number {
    const n = text.length;
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.arenaUsed + 3 * n > this.arena.length) {
      const grown = new Uint8Array(Math.max(2 * this.arena.length, this.arenaUsed + 3 * n));
      grown.set(this.arena.subarray(0, this.arenaUsed));
      this.arena = grown;
    }
    const from = this.arenaUsed;
    this.arenaUsed = putUtf8(this.arena, from, text);
    return this.arenaUsed - from;
  }

  private make(kind: FrameKind, hi: number, lo: number, scope: number): string {
    if (hi === 0 && lo === 0) return UNKNOWN_NAMES[kind]!;
    const sym = this.symbol(hi, lo, scope);
    if (sym === undefined) this.unnamed?.(hi, lo);
    return sym === undefined ? `0x${hex64(hi, lo, 0)}` : kind === FrameKind.Root ? this.hit.name : sym;
  }

  /** The symbol (`name+0x..`) covering (hi:lo) in `scope`, or undefined (no symbols, or none covers it). */
  symbol(hi: number, lo: number, scope = 0): string | undefined {
    const s = this.scopes[scope];
    if (s === undefined || !s.lookup(hi, lo, this.hit)) return undefined;
    return this.hit.offset === 0 ? this.hit.name : `${this.hit.name}+0x${this.hit.offset.toString(16)}`;
  }

  /** The name of the module (binary) whose symbol covers (hi:lo) in `scope`; "" for none. */
  module(hi: number, lo: number, scope = 0): string {
    const s = this.scopes[scope];
    return s?.lookup(hi, lo, this.hit) ? this.hit.moduleName : "";
  }

  /**
   * The symbol covering (hi:lo) in the default scope, else in the first scope that has
   * one: for outputs that do not say which process ran an address (coverage).
   */
  anySymbol(hi: number, lo: number): string | undefined {
    for (let scope = 0; scope < this.scopes.length; scope++) {
      const sym = this.symbol(hi, lo, scope);
      if (sym !== undefined) return sym;
    }
    return undefined;
  }
}
