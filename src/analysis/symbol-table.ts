/**
 * Function names for the addresses of one ELF file at a load bias. Built once from
 * `.symtab`, `.dynsym` and the PLT stubs into sorted typed arrays of address ranges;
 * a lookup is a binary search over 32-bit halves that allocates nothing.
 *
 * Sized symbols cover `[value, value + size)`; zero-size symbols run to the next symbol
 * of their section (or the section's end). Where symbols nest, an address belongs to
 * the innermost one (the latest start); of several symbols at one address, the one
 * perf would name ({@link RawSymbols.preferred}: functions, `.symtab`'s, then perf's alias rule).
 *
 * With a {@link Demangler}, hits carry demangled names: each symbol is demangled the
 * first time a lookup finds it and the result kept, so later lookups allocate nothing.
 */

import { doubleFields, mutableFields, splitBigInt, toBigInt } from "../base/halves.js";
import { sum as addr, addSize } from "../image/addr.js";
import type { ElfFile } from "../image/elf.js";
import type { NameDemangler } from "./demangle.js";
import { Diagnostics, ElfData, MASK64, type SymbolDiagnostic, sectionAddr } from "./elf-data.js";
import { readElfSymbols } from "./elf-symbols.js";
import { perfTreeSymbols, stubsFoundFirst } from "./perf-symbol-tree.js";
import { readPerfPltSymbols, readPltSymbols } from "./plt.js";

import type { RawSymbols } from "./raw-symbol.js";

const T32 = 0x1_0000_0000;
/** Tables of fewer segments are searched without an index (a few steps anyway). */
const MIN_INDEXED = 64;

/** Where an address was found; filled by lookups and reused. */
export class SymbolHit {
  /** Index of the module in its {@link Symbolizer} (0 for a lone table). */
  module = 0;
  /** The module's name. */
  moduleName = "";
  /** Index of the symbol in its module's table (one name per index: see FrameNames' name cache). */
  symbol = 0;
  /** The table that found it (with {@link symbol}, a key for what a caller makes of the name once). */
  table: SymbolTable | undefined = undefined;
  /**
   * The symbol's name, e.g. `main`, `memcpy@plt`; demangled when the table has a
   * demangler. Read from the table when asked: a look-up touches no name (callers
   * that make something of a name once per symbol mostly never ask).
   */
  get name(): string {
    return this.table === undefined ? "" : this.table.symbolName(this.symbol);
  }
  /** The name as the symbol table spells it (mangled, e.g. `_ZN3foo3barEv`). */
  get linkName(): string {
    return this.table === undefined ? "" : this.table.linkName(this.symbol);
  }
  /** Run-time start address of the symbol, as halves. */
  startHi = 0;
  startLo = 0;
  /** Bytes from the symbol's start to the address. */
  offset = 0;
}

// Hits are filled with addresses (halves past 2^31 for most) and offsets again and again.
doubleFields(new SymbolHit(), ["startHi", "startLo", "offset"]);
mutableFields(new SymbolHit(), ["module", "symbol"]);

export interface SymbolTableOptions {
  /** Name reported in hits (e.g. the file path). */
  name?: string;
  /** Load bias added to every link-time address (PIE, shared objects); modulo 2^64. */
  bias?: bigint;
  /** Demangle names in hits (C++, Rust); see {@link SymbolTable.useDemangler}. */
  demangler?: NameDemangler;
  /**
   * Name addresses as perf 6.1 does instead: `.dynsym` names without versions, a zero-size symbol runs to the next
   * symbol whatever its section, and PLT stubs are perf's (plt.ts readPerfPltSymbols)
   * read from `plt` (the binary, when the table's file is its debug file), naming
   * addresses a symbol covers too only where perf's tree finds the stub first
   * (perf-symbol-tree.ts: a small gcc-built program's PLT is `_init+0x30`, node's `memset@plt`).
   */
  perf?: { plt: ElfFile };
}

/**
 * The symbols of one ELF file at a load bias. It keeps the file's bytes: a symbol's
 * name is read from them when first asked for (most never are).
 */
export class SymbolTable {
  readonly name: string;
  /** Problems skipped while reading the symbol tables (at most MAX_DIAGNOSTICS). */
  readonly diagnostics: readonly SymbolDiagnostic[];
  /** Number of diagnostics, including those not kept. */
  readonly diagnosticCount: number;
  /** Segment k covers [segStart k, segStart k+1) and belongs to symbol segSym[k] (-1: none). */
  private readonly segHi: Uint32Array;
  private readonly segLo: Uint32Array;
  private readonly segSym: Int32Array;
  /**
   * A radix index over the segments, when they all start within 2^32 bytes of the first:
   * each start's offset from the first, and per bucket of 2^{@link shift} bytes of
   * offsets, how many segments start at or below the bucket's start. A lookup then
   * searches the few segments of one bucket instead of all of them (tens of thousands
   * in a large program: a dozen cache misses).
   */
  private readonly segOff: Uint32Array | undefined;
  private readonly bucketFirst: Int32Array | undefined;
  private readonly shift: number = 0;
  /** The symbols read, and the entry of each that owns addresses, by id. */
  private readonly raw: RawSymbols;
  private readonly symEntry: Int32Array;
  /** Names as linked, read when first asked for (most never are). */
  private readonly linked: (string | undefined)[];
  private readonly symHi: Uint32Array;
  private readonly symLo: Uint32Array;
  private demangler: NameDemangler | undefined;
  /** Demangled names, filled on first use. */
  private demangled: (string | undefined)[] = [];

  constructor(elf: ElfFile, options: SymbolTableOptions = {}) {
    this.name = options.name ?? "";
    const data = new ElfData(elf);
    const diags = new Diagnostics();
    const perf = options.perf;
    const raw = readElfSymbols(data, diags, perf !== undefined);
    if (!perf) for (const s of readPltSymbols(data, diags)) raw.add(s);
    // perf's stubs are ranges of their own (see addStubs): the entries from `symbols` on.
    const symbols = raw.count;
    const stubs = perf ? readPerfPltSymbols(new ElfData(perf.plt), diags) : [];
    // (perf's tree is read only for stubs: a debug file's or a static binary's have none.)
    if (stubs.length > 0) for (const s of stubsFoundFirst(perfTreeSymbols(data), stubs)) raw.add(s);
    this.raw = raw;
    const base = windowBase(raw);
    const ranges = toRanges(elf, raw, symbols, perf !== undefined, base, diags);
    if (raw.count > symbols) addStubs(ranges, raw, symbols, base, diags, elf);
    this.diagnostics = diags.list;
    this.diagnosticCount = diags.count;
    const { start, end, sym } = ranges;
    const n = sym.length;
    // Boundaries: every start and end; owner of each elementary interval by a sweep
    // (the innermost range: the latest start).
    // (The starts are in order already: merged with the ends, sorted.)
    const ends = end.slice(0, n).sort();
    const points = new Float64Array(2 * n);
    for (let i = 0, j = 0, k = 0; k < 2 * n; k++)
      points[k] = j === n || (i < n && start[i]! <= ends[j]!) ? start[i++]! : ends[j++]!;
    const segStart = new Float64Array(points.length);
    const segSym = new Int32Array(points.length);
    /** Per range: its symbol id + 1 (0: none yet). */
    const ids = new Int32Array(n);
    const symStart: number[] = [];
    const symEntry: number[] = [];
    const stack = new Int32Array(n);
    let top = 0;
    let segs = 0;
    let next = 0;
    for (let k = 0; k < points.length; k++) {
      const p = points[k]!;
      if (k > 0 && p === points[k - 1]) continue;
      while (next < n && start[next] === p) stack[top++] = next++;
      while (top > 0 && end[stack[top - 1]!]! <= p) top--;
      let id = -1;
      if (top > 0) {
        const r = stack[top - 1]!;
        id = ids[r]! - 1;
        if (id < 0) {
          id = symEntry.length;
          ids[r] = id + 1;
          symEntry.push(sym[r]!);
          symStart.push(start[r]!);
        }
      }
      if (segs > 0 && segSym[segs - 1] === id) continue;
      segStart[segs] = p;
      segSym[segs++] = id;
    }
    // At run time: the bias added modulo 2^64; a bias that wraps part of the module
    // past 2^64 cuts it at the wrap.
    const at = new Placed(base.value, options.bias ?? 0n);
    let kept = segs;
    if (segs > 0 && segStart[0]! < at.wrap)
      for (let k = 1; k < segs; k++)
        if (segStart[k]! >= at.wrap) {
          kept = k;
          break;
        }
    this.segHi = new Uint32Array(kept);
    this.segLo = new Uint32Array(kept);
    for (let k = 0; k < kept; k++) at.put(segStart[k]!, this.segHi, this.segLo, k);
    this.segSym = segSym.slice(0, kept);
    const span = kept > 0 ? segStart[kept - 1]! - segStart[0]! : 0;
    if (kept >= MIN_INDEXED && span < T32) {
      const first = segStart[0]!;
      const segOff = new Uint32Array(kept);
      for (let k = 0; k < kept; k++) segOff[k] = segStart[k]! - first;
      // About one bucket per segment.
      let shift = 0;
      while (span / 2 ** shift > kept) shift++;
      const buckets = Math.floor(span / 2 ** shift) + 1;
      const bucketFirst = new Int32Array(buckets + 1);
      const step = 2 ** shift;
      for (let b = 0, k = 0; b <= buckets; b++) {
        const at = b * step;
        while (k < kept && segOff[k]! <= at) k++;
        bucketFirst[b] = k;
      }
      this.segOff = segOff;
      this.bucketFirst = bucketFirst;
      this.shift = shift;
    }
    this.symEntry = Int32Array.from(symEntry);
    this.linked = new Array<string | undefined>(symEntry.length);
    this.symHi = new Uint32Array(symStart.length);
    this.symLo = new Uint32Array(symStart.length);
    for (let k = 0; k < symStart.length; k++) at.put(symStart[k]!, this.symHi, this.symLo, k);
    this.useDemangler(options.demangler);
  }

  /** Demangle the names of later hits with `demangler` (undefined: names as linked). */
  useDemangler(demangler: NameDemangler | undefined): void {
    this.demangler = demangler;
    this.demangled = demangler ? new Array<string | undefined>(this.symEntry.length) : [];
  }

  /** The name of symbol `k` (0 <= k < size, in address order), demangled as hits are. */
  symbolName(k: number): string {
    const raw = this.linkName(k);
    const d = this.demangler;
    if (!d) return raw;
    let name = this.demangled[k];
    if (name === undefined) {
      name = d.demangle(raw);
      this.demangled[k] = name;
    }
    return name;
  }

  /** The name of symbol `k` as linked (not demangled). */
  linkName(k: number): string {
    let name = this.linked[k];
    if (name === undefined) {
      name = this.raw.name(this.symEntry[k]!);
      this.linked[k] = name;
    }
    return name;
  }

  /** Run-time start address of symbol `k`, high and low halves. */
  symbolStartHi(k: number): number {
    return this.symHi[k]!;
  }

  symbolStartLo(k: number): number {
    return this.symLo[k]!;
  }

  /** Number of distinct symbols that own some address (numbered 0.. in address order). */
  get size(): number {
    return this.symEntry.length;
  }

  /** Find the symbol covering (hi:lo); fills `out` (module fields untouched) and returns true. */
  lookup(hi: number, lo: number, out: SymbolHit): boolean {
    const segHi = this.segHi;
    const segLo = this.segLo;
    // Last segment starting at or below the address (with the index, found there: the
    // search below then has nothing left to do).
    let a = 0;
    let b = segHi.length;
    if (this.segOff !== undefined) a = b = this.searchIndexed(hi, lo);
    while (a < b) {
      const m = (a + b) >>> 1;
      const h = segHi[m]!;
      if (h < hi || (h === hi && segLo[m]! <= lo)) a = m + 1;
      else b = m;
    }
    if (a === 0) return false;
    const sym = this.segSym[a - 1]!;
    if (sym < 0) return false;
    const sHi = this.symHi[sym]!;
    const sLo = this.symLo[sym]!;
    out.symbol = sym;
    out.table = this;
    out.startHi = sHi;
    out.startLo = sLo;
    out.offset = (hi - sHi) * T32 + (lo - sLo);
    return true;
  }

  /** How many segments start at or below (hi:lo), through the radix index: a binary search over one bucket's segments. */
  private searchIndexed(hi: number, lo: number): number {
    const segOff = this.segOff!;
    const n = segOff.length;
    // Exact within 2^53 of the first start (both halves are unsigned 32-bit); further
    // off, it only has to fall outside the segments, which it does.
    const off = (hi - this.segHi[0]!) * T32 + (lo - this.segLo[0]!);
    if (off < 0) return 0;
    if (off >= segOff[n - 1]!) return n;
    // Below the last start, so below 2^32: the shift works on it.
    const bucket = off >>> this.shift;
    const first = this.bucketFirst!;
    let a = first[bucket]!;
    let b = first[bucket + 1]!;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (segOff[m]! <= off) a = m + 1;
      else b = m;
    }
    return a;
  }

  /** Lowest covered address (0 when the table is empty), by which a {@link Symbolizer} orders modules. */
  get startHi(): number {
    return this.segHi[0] ?? 0;
  }

  get startLo(): number {
    return this.segLo[0] ?? 0;
  }
}

/**
 * Link-time addresses are handled as offsets from a base, exact Numbers: a table of
 * BigInts (node's 153k symbols) took a second to build, most of it making and
 * collecting them. The symbols of one file lie within far less than {@link WINDOW}
 * bytes of each other; a file whose symbols do not (a corrupt one) keeps the most that
 * do (see windowBase).
 */
const WINDOW = 2 ** 52;
/** Ends are cut here (within 2^53: exact). */
const END_LIMIT = 2 * WINDOW;
const WINDOW_BIG = BigInt(WINDOW);
/** A value's high half further than this from the base's puts it outside the window. */
const WINDOW_HI = WINDOW / T32;
const END_LIMIT_BIG = BigInt(END_LIMIT);
const TWO64 = 1n << 64n;

/** The ranges of a table's symbols: [start, end) offsets from the base, by start, and each one's entry. */
interface Ranges {
  start: Float64Array;
  end: Float64Array;
  sym: Int32Array;
}

/** The link-time address offsets count from: as halves, as a BigInt, and 2^64 as an offset from it (rounded). */
interface Base {
  hi: number;
  lo: number;
  value: bigint;
  top: number;
}

function baseOf(hi: number, lo: number): Base {
  const value = toBigInt(hi, lo);
  return { hi, lo, value, top: Number(TWO64 - value) };
}

/**
 * The base offsets count from: the lowest symbol value, unless the values span
 * {@link WINDOW} or more (a corrupt or hostile file); then the lowest value of the
 * window of that size that holds the most of them.
 */
function windowBase(raw: RawSymbols): Base {
  const n = raw.count;
  if (n === 0) return baseOf(0, 0);
  const { valueHi, valueLo } = raw;
  let minHi = valueHi[0]!;
  let minLo = valueLo[0]!;
  let maxHi = minHi;
  let maxLo = minLo;
  for (let i = 1; i < n; i++) {
    const hi = valueHi[i]!;
    const lo = valueLo[i]!;
    if (hi < minHi || (hi === minHi && lo < minLo)) {
      minHi = hi;
      minLo = lo;
    }
    if (hi > maxHi || (hi === maxHi && lo > maxLo)) {
      maxHi = hi;
      maxLo = lo;
    }
  }
  // (Exact below 2^53; past it, rounded but still 2^52 or more.)
  if ((maxHi - minHi) * T32 + (maxLo - minLo) < WINDOW) return baseOf(minHi, minLo);
  const values = new BigUint64Array(n);
  for (let i = 0; i < n; i++) values[i] = raw.value(i);
  values.sort();
  let best = 0;
  let most = 0;
  for (let i = 0, j = 0; i < values.length; i++) {
    const limit = values[i]! + WINDOW_BIG;
    while (j < values.length && values[j]! < limit) j++;
    if (j - i > most) {
      most = j - i;
      best = i;
    }
  }
  const { hi, lo } = splitBigInt(values[best]!, { hi: 0, lo: 0 });
  return baseOf(hi, lo);
}

/** Entry `i`'s value as an offset from `base`, or -1 outside the window. */
function offsetOf(raw: RawSymbols, i: number, base: Base): number {
  const dHi = raw.valueHi[i]! - base.hi;
  if (dHi < 0 || dHi > WINDOW_HI) return -1;
  // (Exact: below 2^53.)
  const d = dHi * T32 + (raw.valueLo[i]! - base.lo);
  return d >= 0 && d < WINDOW ? d : -1;
}

/**
 * The end of `size` bytes from offset `off`, cut at {@link END_LIMIT} and where the
 * address space ends (`top`: 2^64 as an offset from the base).
 */
function cutEnd(off: number, size: number, top: number): number {
  const end = size >= END_LIMIT - off ? END_LIMIT : off + size;
  return Math.min(end, top);
}

/** Entry `i` outside the window (see windowBase): skipped, with a diagnostic at its section's header. */
function outside(raw: RawSymbols, i: number, elf: ElfFile, diags: Diagnostics): void {
  diags.add(
    elf.sections[raw.section[i]!]?.headerOffset ?? 0,
    `symbol ${raw.name(i)} at 0x${raw.value(i).toString(16)}: 2^52 bytes or more from the file's other symbols; skipped`,
  );
}

/** The entries of `offs` that hold an offset (not -1), by offset and then index: their indices and offsets. */
interface Sorted {
  order: Int32Array;
  offs: Float64Array;
}

/**
 * The indices of `offs` that hold an offset (not -1), ordered by offset and then index:
 * packed as offset * 2^bits + index into doubles and sorted by the array's own sort (a
 * Map of 153k offsets was a quarter of node's table; two counting passes of 16 bits in
 * JavaScript, run once and so mostly before V8 optimises them, took longer than the
 * built-in sort), or, where that would not be exact (a table spanning 2^35 bytes and
 * more), sorted by comparison.
 */
function byOffset(offs: Float64Array): Sorted {
  const n = offs.length;
  const scale = 2 ** Math.max(1, Math.ceil(Math.log2(n + 1)));
  let count = 0;
  let max = 0;
  for (let i = 0; i < n; i++) {
    if (offs[i]! < 0) continue;
    count++;
    if (offs[i]! > max) max = offs[i]!;
  }
  const order = new Int32Array(count);
  const sorted = new Float64Array(count);
  if (max * scale < 2 ** 53) {
    const keys = new Float64Array(count);
    for (let i = 0, k = 0; i < n; i++) if (offs[i]! >= 0) keys[k++] = offs[i]! * scale + i;
    keys.sort();
    for (let k = 0; k < count; k++) {
      const key = keys[k]!;
      const off = Math.floor(key / scale);
      order[k] = key - off * scale;
      sorted[k] = off;
    }
    return { order, offs: sorted };
  }
  for (let i = 0, k = 0; i < n; i++) if (offs[i]! >= 0) order[k++] = i;
  order.sort((a, b) => offs[a]! - offs[b]! || a - b);
  for (let k = 0; k < count; k++) sorted[k] = offs[order[k]!]!;
  return { order, offs: sorted };
}

/**
 * One range per distinct start address (the {@link RawSymbols.preferred} entry of the
 * first `count`), sorted by start; a zero-size symbol runs to the next symbol of its
 * section (`acrossSections`: to the next symbol), else to its section's end.
 */
function toRanges(
  elf: ElfFile,
  raw: RawSymbols,
  count: number,
  acrossSections: boolean,
  base: Base,
  diags: Diagnostics,
): Ranges {
  const offs = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    offs[i] = offsetOf(raw, i, base);
    if (offs[i]! < 0) outside(raw, i, elf, diags);
  }
  const { order, offs: sorted } = byOffset(offs);
  const start = new Float64Array(order.length);
  const end = new Float64Array(order.length);
  const syms = new Int32Array(order.length);
  const { size, section } = raw;
  // Zero-size symbols waiting for the next symbol of their section (of any section when
  // `acrossSections`): their index.
  const waiting = new Map<number, number>();
  const ANY = -2;
  const top = base.top;
  let n = 0;
  for (let j = 0; j < order.length; ) {
    // The preferred of the symbols at one value (in reading order).
    const off = sorted[j]!;
    let best = order[j]!;
    for (j++; j < order.length && sorted[j] === off; j++) {
      const s = order[j]!;
      if (raw.preferred(s, best)) best = s;
    }
    const key = acrossSections ? ANY : section[best]!;
    const w = waiting.get(key);
    if (w !== undefined) {
      end[w] = off;
      waiting.delete(key);
    }
    start[n] = off;
    syms[n] = best;
    if (size[best]! > 0) end[n] = cutEnd(off, size[best]!, top);
    else waiting.set(key, n);
    n++;
  }
  // The rest run to their section's end.
  for (const k of waiting.values()) {
    const sec = elf.sections[section[syms[k]!]!];
    const d = (sec === undefined ? raw.value(syms[k]!) : sectionAddr(sec) + BigInt(sec.size)) - base.value;
    end[k] = d <= 0n ? 0 : Math.min(d >= END_LIMIT_BIG ? END_LIMIT : Number(d), top);
  }
  // Only ranges that hold an address (a symbol that ends where it starts names nothing).
  let kept = 0;
  for (let k = 0; k < n; k++) {
    if (!(end[k]! > start[k]!)) continue;
    start[kept] = start[k]!;
    end[kept] = end[k]!;
    syms[kept] = syms[k]!;
    kept++;
  }
  return { start: start.subarray(0, kept), end: end.subarray(0, kept), sym: syms.subarray(0, kept) };
}

/**
 * perf's PLT stubs (perf-symbol-tree.ts), the entries of `raw` from `first` on, as
 * ranges of their own among `r`'s, by start: after the symbols' at the same start, in
 * their order.
 */
function addStubs(
  r: Ranges,
  raw: RawSymbols,
  first: number,
  base: Base,
  diags: Diagnostics,
  elf: ElfFile,
): void {
  const add: { start: number; end: number; sym: number }[] = [];
  const top = base.top;
  for (let i = first; i < raw.count; i++) {
    const off = offsetOf(raw, i, base);
    if (off < 0) outside(raw, i, elf, diags);
    else add.push({ start: off, end: cutEnd(off, raw.size[i]!, top), sym: i });
  }
  add.sort((x, y) => x.start - y.start);
  const n = r.sym.length + add.length;
  const start = new Float64Array(n);
  const end = new Float64Array(n);
  const sym = new Int32Array(n);
  let i = 0;
  let j = 0;
  for (let k = 0; k < n; k++) {
    const fromStubs = i === r.sym.length || (j < add.length && add[j]!.start < r.start[i]!);
    if (fromStubs) {
      start[k] = add[j]!.start;
      end[k] = add[j]!.end;
      sym[k] = add[j++]!.sym;
    } else {
      start[k] = r.start[i]!;
      end[k] = r.end[i]!;
      sym[k] = r.sym[i++]!;
    }
  }
  r.start = start;
  r.end = end;
  r.sym = sym;
}

/**
 * Offsets from a base placed at run time: the base plus the load bias, modulo 2^64,
 * as halves; {@link wrap} is the first offset past 2^64 (Infinity: none within reach).
 */
class Placed {
  private readonly hi: number;
  private readonly lo: number;
  readonly wrap: number;

  constructor(base: bigint, bias: bigint) {
    const placed = (base + bias) & MASK64;
    this.hi = Number(placed >> 32n);
    this.lo = Number(placed & 0xffffffffn);
    const wrap = TWO64 - placed;
    this.wrap = wrap < END_LIMIT_BIG ? Number(wrap) : Number.POSITIVE_INFINITY;
  }

  /** Offset `off` (at most {@link END_LIMIT}) placed, into hi[k] and lo[k]. */
  put(off: number, hi: Uint32Array, lo: Uint32Array, k: number): void {
    addSize(this.hi, this.lo, off);
    hi[k] = addr.hi;
    lo[k] = addr.lo;
  }
}
