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
 * strings. A function's name is encoded once: a call into its middle (`name+0x1a`)
 * copies those bytes and adds the offset's, and makes its string only when asked for
 * (traces call into tens of thousands of places; writers mostly want bytes).
 */
import { hex64, mutableFields } from "../../base/halves.js";
import { FrameKind } from "../callstack.js";
import type { ThreadTrack } from "../callstack-sink.js";
import { growFloat64, growInt32, growUint32, KeyTable } from "../key-table.js";
import { SymbolHit } from "../symbol-table.js";
import type { Symbolizer } from "../symbolizer.js";
import { putHex, putUtf8 } from "./byte-chunks.js";

/** The symbols naming a thread's frames; undefined for the default ones. */
export type TrackSymbols = (track: ThreadTrack) => Symbolizer | undefined;

/**
 * The first length of the per-entry, per-symbol and per-text arrays (and bytes of the
 * arena, {@link ARENA_FIRST}): small, so that each grows while the code that makes names
 * still runs unoptimised. A path V8's optimised code reaches for the first time throws
 * that code away (it holds no type feedback for it): makeText, compiled again when its
 * 1,024th function name or 64 KiB of names first needed room.
 */
const FIRST = 16;
const ARENA_FIRST = 1024;

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
  private readonly entries: KeyTable;
  /** Entry → text id. */
  private entryText: Uint32Array = new Uint32Array(FIRST);
  /**
   * Each text's name (texts are not deduplicated: two may read the same); undefined
   * until asked for when made from a function's name and an offset ({@link textBase}).
   */
  private readonly texts: (string | undefined)[] = [];
  /** Per text: the text of the function name it adds an offset to (-1: none), and the offset. */
  private textBase: Int32Array = new Int32Array(FIRST).fill(-1);
  private textOffset: Float64Array = new Float64Array(FIRST);
  /** Function (scope, module, symbol index) → the text of its name, made once. */
  private readonly symbols = new KeyTable();
  private symbolText: Uint32Array = new Uint32Array(FIRST);
  /** {@link sameText}'s table: slot → text id + 1 (0: empty), hashed by the text's bytes. */
  private byBytes: Int32Array = new Int32Array(FIRST);
  private byBytesCount = 0;
  /** Per text in {@link byBytes}: its bytes' hash, kept so that the table grows without hashing them again. */
  private byBytesHash: Uint32Array = new Uint32Array(FIRST);
  /**
   * Where each text's UTF-8 bytes start in {@link arena} and how many (its name), and
   * the same for its JSON string literal (start -1 until asked for).
   */
  private textStart: Uint32Array = new Uint32Array(FIRST);
  private textLength: Uint32Array = new Uint32Array(FIRST);
  private jsonStart: Int32Array = new Int32Array(FIRST).fill(-1);
  private jsonLength: Uint32Array = new Uint32Array(FIRST);
  /**
   * The bytes of names and JSON literals ({@link start}/{@link length} say where). It
   * grows: read it after asking for the bytes.
   */
  arena: Uint8Array = new Uint8Array(ARENA_FIRST);
  /** {@link arena} as a DataView (for putView; replaced with it). */
  arenaView: DataView = new DataView(this.arena.buffer);
  private arenaUsed = 0;
  /** Where the last {@link nameBytes}/{@link jsonBytes} asked for is in {@link arena}. */
  start = 0;
  length = 0;

  /**
   * `unnamed`, if given, hears of each address (per scope, once) whose frame is named
   * by the address because no symbol covers it: the caller can say why. `maxEntries`:
   * the most names kept (see {@link entry}; a KeyTable's default).
   */
  constructor(
    symbols: Symbolizer | undefined,
    private readonly perTrack?: TrackSymbols,
    private readonly unnamed?: (hi: number, lo: number) => void,
    maxEntries?: number,
  ) {
    this.entries = new KeyTable(maxEntries);
    this.scopes = [symbols];
    // Names are made all through a decode: the tables grow, the arena fills.
    mutableFields(this, [
      "entryText",
      "textBase",
      "textOffset",
      "symbolText",
      "byBytes",
      "byBytesCount",
      "byBytesHash",
      "textStart",
      "textLength",
      "jsonStart",
      "jsonLength",
      "arena",
      "arenaView",
      "arenaUsed",
      "start",
      "length",
    ]);
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
      this.entryText[e] = this.makeText(kind, hi, lo, scope);
    }
    return e;
  }

  /** The name of entry `e` (see {@link entry}). */
  nameOf(e: number): string {
    return this.textName(this.entryText[e]!);
  }

  /** The text id of entry `e`'s name (see {@link entry}). */
  textOf(e: number): number {
    return this.entryText[e]!;
  }

  /** A new text id for `name` (its bytes go in the arena). */
  addText(name: string): number {
    const t = this.newText(name);
    this.textStart[t] = this.arenaUsed;
    this.textLength[t] = this.put(name);
    return t;
  }

  /** A new text id whose name is `name` (undefined: made later, see {@link textBase}); its bytes are the caller's to put. */
  private newText(name: string | undefined): number {
    const t = this.texts.length;
    this.texts.push(name);
    if (t >= this.textStart.length) {
      const n = 2 * this.textStart.length;
      this.textStart = growUint32(this.textStart, n);
      this.textLength = growUint32(this.textLength, n);
      this.jsonLength = growUint32(this.jsonLength, n);
      this.textOffset = growFloat64(this.textOffset, n);
      this.jsonStart = growInt32(this.jsonStart, n, -1);
      this.textBase = growInt32(this.textBase, n, -1);
    }
    return t;
  }

  /** The text of text id `t`. */
  textName(t: number): string {
    const name = this.texts[t];
    if (name !== undefined) return name;
    // As make() writes it.
    const made = `${this.texts[this.textBase[t]!]!}+0x${this.textOffset[t]!.toString(16)}`;
    this.texts[t] = made;
    return made;
  }

  /** Set {@link start} and {@link length} to where text `t`'s UTF-8 bytes are in {@link arena}. */
  nameBytes(t: number): void {
    this.start = this.textStart[t]!;
    this.length = this.textLength[t]!;
  }

  /**
   * The first text asked about here whose UTF-8 bytes are text `t`'s (`t` when none
   * came before): texts that read the same as one, found without making strings.
   */
  sameText(t: number): number {
    let slots = this.byBytes;
    if (2 * (this.byBytesCount + 1) > slots.length) slots = this.growByBytes();
    const mask = slots.length - 1;
    const hash = this.bytesHash(t);
    for (let h = hash & mask; ; h = (h + 1) & mask) {
      const s = slots[h]!;
      if (s === 0) {
        slots[h] = t + 1;
        this.byBytesCount++;
        if (t >= this.byBytesHash.length) this.byBytesHash = growUint32(this.byBytesHash, t + 1);
        this.byBytesHash[t] = hash;
        return t;
      }
      if (this.byBytesHash[s - 1] === hash && this.sameBytes(s - 1, t)) return s - 1;
    }
  }

  private bytesHash(t: number): number {
    const a = this.arena;
    let h = 0x811c9dc5; // FNV-1a (32-bit)
    for (let i = this.textStart[t]!, end = i + this.textLength[t]!; i < end; i++)
      h = Math.imul(h ^ a[i]!, 16777619);
    return h >>> 0;
  }

  private sameBytes(t: number, u: number): boolean {
    const n = this.textLength[t]!;
    if (this.textLength[u]! !== n) return false;
    const a = this.arena;
    const x = this.textStart[t]!;
    const y = this.textStart[u]!;
    for (let i = 0; i < n; i++) if (a[x + i] !== a[y + i]) return false;
    return true;
  }

  private growByBytes(): Int32Array {
    const old = this.byBytes;
    const slots = new Int32Array(2 * old.length);
    const mask = slots.length - 1;
    const hashes = this.byBytesHash;
    for (const s of old) {
      if (s === 0) continue;
      let h = hashes[s - 1]! & mask;
      while (slots[h] !== 0) h = (h + 1) & mask;
      slots[h] = s;
    }
    this.byBytes = slots;
    return slots;
  }

  /** Set {@link start} and {@link length} to where text `t` as a JSON string literal is in {@link arena}. */
  jsonBytes(t: number): void {
    let at = this.jsonStart[t]!;
    if (at < 0) {
      at = this.arenaUsed;
      this.jsonLength[t] = this.plain(t) ? this.quote(t) : this.put(JSON.stringify(this.textName(t)));
      this.jsonStart[t] = at;
    }
    this.start = at;
    this.length = this.jsonLength[t]!;
  }

  /** Append `text` as UTF-8 to the arena (ASCII unit by unit); the bytes written. */
  private put(text: string): number {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    this.room(3 * text.length);
    const from = this.arenaUsed;
    this.arenaUsed = putUtf8(this.arena, from, text);
    return this.arenaUsed - from;
  }

  /**
   * Whether text `t` is ASCII with no control character, quote or backslash: then its
   * JSON string literal is its bytes in quotes, as JSON.stringify writes it.
   */
  private plain(t: number): boolean {
    const a = this.arena;
    for (let i = this.textStart[t]!, end = i + this.textLength[t]!; i < end; i++) {
      const c = a[i]!;
      if (c < 0x20 || c >= 0x80 || c === 0x22 || c === 0x5c) return false;
    }
    return true;
  }

  /** Append text `t`'s bytes in quotes to the arena; the bytes written. */
  private quote(t: number): number {
    const n = this.textLength[t]! + 2;
    this.room(n);
    const a = this.arena;
    let at = this.arenaUsed;
    a[at++] = 0x22;
    for (let i = this.textStart[t]!, end = i + n - 2; i < end; i++) a[at++] = a[i]!;
    a[at++] = 0x22;
    this.arenaUsed = at;
    return n;
  }

  /** Room in the arena for `n` more bytes. */
  private room(n: number): void {
    if (this.arenaUsed + n <= this.arena.length) return;
    const grown = new Uint8Array(Math.max(2 * this.arena.length, this.arenaUsed + n));
    grown.set(this.arena.subarray(0, this.arenaUsed));
    this.arena = grown;
    this.arenaView = new DataView(grown.buffer);
  }

  /** The text of a new entry's name: {@link make}'s, its bytes made from the function name's when it has one. */
  private makeText(kind: FrameKind, hi: number, lo: number, scope: number): number {
    const s = hi === 0 && lo === 0 ? undefined : this.scopes[scope];
    const hit = this.hit;
    if (s === undefined || !s.lookup(hi, lo, hit)) return this.addText(this.make(kind, hi, lo, scope));
    const table = this.symbols;
    const before = table.size;
    const k = table.id(scope, hit.module, hit.symbol, 0);
    if (k < 0) return this.addText(this.make(kind, hi, lo, scope));
    if (k === before) {
      if (k >= this.symbolText.length) this.symbolText = growUint32(this.symbolText, k + 1);
      this.symbolText[k] = this.addText(hit.name);
    }
    const base = this.symbolText[k]!;
    const offset = hit.offset;
    if (kind === FrameKind.Root || offset === 0) return base;
    if (!(offset > 0 && offset <= Number.MAX_SAFE_INTEGER && Number.isInteger(offset)))
      return this.addText(this.make(kind, hi, lo, scope));
    // `name+0x1a`: the name's bytes, then the offset's.
    const t = this.newText(undefined);
    this.textBase[t] = base;
    this.textOffset[t] = offset;
    const length = this.textLength[base]!;
    this.room(length + 3 + 16);
    const a = this.arena;
    const from = this.arenaUsed;
    let at = from;
    for (let i = this.textStart[base]!, end = i + length; i < end; i++) a[at++] = a[i]!;
    a[at++] = 0x2b; // +
    a[at++] = 0x30; // 0
    a[at++] = 0x78; // x
    at = putHex(a, at, Math.floor(offset / 0x100000000), offset >>> 0, 0, 0x30);
    this.textStart[t] = from;
    this.textLength[t] = at - from;
    this.arenaUsed = at;
    return t;
  }

  private make(kind: FrameKind, hi: number, lo: number, scope: number): string {
    if (hi === 0 && lo === 0) return UNKNOWN_NAMES[kind]!;
    const sym = this.symbol(hi, lo, scope);
    if (sym === undefined) this.unnamed?.(hi, lo);
    return sym === undefined ? `0x${hex64(hi, lo, 0)}` : kind === FrameKind.Root ? this.hit.name : sym;
  }

  /** The symbol (`name+0x..`) covering (hi:lo) in `scope`, or undefined (no symbols, or none covers it). */
  symbol(hi: number, lo: number, scope = 0): string | undefined {
    return this.symbolIn(this.scopes[scope], hi, lo);
  }

  /** {@link symbol} in symbolizer `s`. */
  symbolIn(s: Symbolizer | undefined, hi: number, lo: number): string | undefined {
    if (s === undefined || !s.lookup(hi, lo, this.hit)) return undefined;
    return this.hit.offset === 0 ? this.hit.name : `${this.hit.name}+0x${this.hit.offset.toString(16)}`;
  }

  /** The name of the module (binary) whose symbol covers (hi:lo) in `scope`; "" for none. */
  module(hi: number, lo: number, scope = 0): string {
    const s = this.scopes[scope];
    return s?.lookup(hi, lo, this.hit) ? this.hit.moduleName : "";
  }

  /**
   * The symbol covering (hi:lo) in the first of `symbolizers` that has one (by default
   * the scopes', the default one first): for outputs that do not say which process ran
   * an address (coverage).
   */
  anySymbol(
    hi: number,
    lo: number,
    symbolizers: readonly (Symbolizer | undefined)[] = this.scopes,
  ): string | undefined {
    for (const s of symbolizers) {
      const sym = this.symbolIn(s, hi, lo);
      if (sym !== undefined) return sym;
    }
    return undefined;
  }
}
