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
 * Names are cached per scope and entry address (keyed by the low half, checked
 * against the high half), so a name costs a map lookup, not a symbol search and a
 * string.
 */
import { hex64 } from "../../packet/u64.js";
import { FrameKind } from "../callstack.js";
import type { ThreadTrack } from "../callstack-sink.js";
import { SymbolHit } from "../symbol-table.js";
import type { Symbolizer } from "../symbolizer.js";

/** The symbols naming a thread's frames; undefined for the default ones. */
export type TrackSymbols = (track: ThreadTrack) => Symbolizer | undefined;

interface Cached {
  hi: number;
  name: string;
  /** The name as a JSON string literal. */
  json: string;
}

const named = (name: string): Cached => ({ hi: 0, name, json: JSON.stringify(name) });

/** Frames entered at an unknown address (0), by kind: not cached, they have no address. */
const UNKNOWN_ENTRY: readonly Cached[] = [
  named("[unknown]"),
  named("[unknown]"),
  named("[interrupt]"),
  named("[syscall]"),
];

/** The names of one scope (one symbolizer). */
class Scope {
  readonly calls = new Map<number, Cached>();
  readonly roots = new Map<number, Cached>();
  constructor(readonly symbols: Symbolizer | undefined) {}
}

export class FrameNames {
  /** Scope 0 is the default symbols'. */
  private readonly scopes: Scope[];
  private readonly ids = new Map<Symbolizer, number>();
  /** The last symbolizer {@link scope} met and its scope: threads run in long stretches. */
  private lastSymbols: Symbolizer | undefined;
  private lastScope = 0;
  private readonly hit = new SymbolHit();

  /**
   * `unnamed`, if given, hears of each address (per scope, once) whose frame is named
   * by the address because no symbol covers it: the caller can say why.
   */
  constructor(
    symbols: Symbolizer | undefined,
    private readonly perTrack?: TrackSymbols,
    private readonly unnamed?: (hi: number, lo: number) => void,
  ) {
    this.scopes = [new Scope(symbols)];
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
      id = s === this.scopes[0]!.symbols ? 0 : this.scopes.length;
      if (id !== 0) this.scopes.push(new Scope(s));
      this.ids.set(s, id);
    }
    this.lastSymbols = s;
    this.lastScope = id;
    return id;
  }

  /** The name of a frame of `kind` entered at (hi:lo) in `scope`; an entry of 0 is unknown. */
  name(kind: FrameKind, hi: number, lo: number, scope = 0): string {
    return this.cached(kind, hi, lo, scope).name;
  }

  /** {@link name} as a JSON string literal. */
  json(kind: FrameKind, hi: number, lo: number, scope = 0): string {
    return this.cached(kind, hi, lo, scope).json;
  }

  private cached(kind: FrameKind, hi: number, lo: number, scope: number): Cached {
    if (hi === 0 && lo === 0) return UNKNOWN_ENTRY[kind]!;
    const sc = this.scopes[scope]!;
    const cache = kind === FrameKind.Root ? sc.roots : sc.calls;
    const c = cache.get(lo);
    if (c !== undefined && c.hi === hi) return c;
    const sym = this.symbol(hi, lo, scope);
    if (sym === undefined) this.unnamed?.(hi, lo);
    const name = sym === undefined ? `0x${hex64(hi, lo, 0)}` : kind === FrameKind.Root ? this.hit.name : sym;
    const made = { hi, name, json: JSON.stringify(name) };
    cache.set(lo, made);
    return made;
  }

  /** The symbol (`name+0x..`) covering (hi:lo) in `scope`, or undefined (no symbols, or none covers it). */
  symbol(hi: number, lo: number, scope = 0): string | undefined {
    const s = this.scopes[scope]!.symbols;
    if (s === undefined || !s.lookup(hi, lo, this.hit)) return undefined;
    return this.hit.offset === 0 ? this.hit.name : `${this.hit.name}+0x${this.hit.offset.toString(16)}`;
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
