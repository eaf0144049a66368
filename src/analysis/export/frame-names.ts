/**
 * Names of frames in the exports: the function symbol when a {@link Symbolizer} knows
 * the address (`name`, or `name+0x1a` for a call into the middle of a function; a
 * root frame, which starts wherever the trace found it running, is named by its
 * function alone), else the hex address. Frames whose entry the trace did not show
 * (a far call or interrupt into untraced code) are `[syscall]`/`[interrupt]`.
 *
 * Names are cached per entry address (keyed by the low half, checked against the
 * high half), so a call costs a map lookup, not a symbol search and a string.
 */
import { hex64 } from "../../packet/u64.js";
import { FrameKind } from "../callstack.js";
import { SymbolHit } from "../symbol-table.js";
import type { Symbolizer } from "../symbolizer.js";

interface Cached {
  hi: number;
  name: string;
  /** The name as a JSON string literal. */
  json: string;
}

export class FrameNames {
  private readonly calls = new Map<number, Cached>();
  private readonly roots = new Map<number, Cached>();
  private readonly hit = new SymbolHit();

  constructor(private readonly symbols: Symbolizer | undefined) {}

  /** The name of a frame of `kind` entered at (hi:lo); an entry of 0 is unknown. */
  name(kind: FrameKind, hi: number, lo: number): string {
    return this.cached(kind, hi, lo).name;
  }

  /** {@link name} as a JSON string literal. */
  json(kind: FrameKind, hi: number, lo: number): string {
    return this.cached(kind, hi, lo).json;
  }

  private cached(kind: FrameKind, hi: number, lo: number): Cached {
    const cache = kind === FrameKind.Root ? this.roots : this.calls;
    const c = cache.get(lo);
    if (c !== undefined && c.hi === hi) return c;
    const name = this.lookup(kind, hi, lo);
    const made = { hi, name, json: JSON.stringify(name) };
    cache.set(lo, made);
    return made;
  }

  /** The symbol (`name+0x..`) covering (hi:lo), or undefined (no symbols, or none covers it). */
  symbol(hi: number, lo: number): string | undefined {
    const s = this.symbols;
    if (s === undefined || !s.lookup(hi, lo, this.hit)) return undefined;
    return this.hit.offset === 0 ? this.hit.name : `${this.hit.name}+0x${this.hit.offset.toString(16)}`;
  }

  private lookup(kind: FrameKind, hi: number, lo: number): string {
    if (hi === 0 && lo === 0) {
      if (kind === FrameKind.Far) return "[syscall]";
      if (kind === FrameKind.Interrupt) return "[interrupt]";
      return "[unknown]";
    }
    const sym = this.symbol(hi, lo);
    if (sym === undefined) return `0x${hex64(hi, lo, 0)}`;
    return kind === FrameKind.Root ? this.hit.name : sym;
  }
}
