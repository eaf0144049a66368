/**
 * Function names for the addresses of one ELF file at a load bias. Built once from
 * `.symtab`, `.dynsym` and the PLT stubs into sorted typed arrays of address ranges;
 * a lookup is a binary search over 32-bit halves that allocates nothing.
 *
 * Sized symbols cover `[value, value + size)`; zero-size symbols run to the next symbol
 * of their section (or the section's end). Where symbols nest, an address belongs to
 * the innermost one (the latest start); of several symbols at one address, the one
 * perf would name ({@link preferred}: functions, `.symtab`'s, then perf's alias rule).
 *
 * With a {@link Demangler}, hits carry demangled names: each symbol is demangled the
 * first time a lookup finds it and the result kept, so later lookups allocate nothing.
 */

import { doubleFields, mutableFields } from "../base/halves.js";
import type { ElfFile } from "../image/elf.js";
import type { NameDemangler } from "./demangle.js";
import { Diagnostics, ElfData, MASK64, type SymbolDiagnostic, sectionAddr } from "./elf-data.js";
import { readElfSymbols } from "./elf-symbols.js";
import { perfTreeSymbols, stubsFoundFirst } from "./perf-symbol-tree.js";
import { readPerfPltSymbols, readPltSymbols } from "./plt.js";

import { preferred, type RawSymbol } from "./raw-symbol.js";

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
  /** The symbol's name, e.g. `main`, `memcpy@plt`; demangled when the table has a demangler. */
  name = "";
  /** The name as the symbol table spells it (mangled, e.g. `_ZN3foo3barEv`). */
  linkName = "";
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

interface Range {
  start: bigint;
  end: bigint;
  sym: RawSymbol;
}

/** The symbols of one ELF file at a load bias. */
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
  private readonly names: string[] = [];
  private readonly symHi: Uint32Array;
  private readonly symLo: Uint32Array;
  private demangler: NameDemangler | undefined;
  /** Demangled names, filled on first use. */
  private demangled: (string | undefined)[] = [];

  constructor(elf: ElfFile, options: SymbolTableOptions = {}) {
    this.name = options.name ?? "";
    const bias = options.bias ?? 0n;
    const data = new ElfData(elf);
    const diags = new Diagnostics();
    const perf = options.perf;
    let ranges = perf
      ? toRanges(elf, readElfSymbols(data, diags, true), true)
      : toRanges(elf, [...readElfSymbols(data, diags), ...readPltSymbols(data, diags)], false);
    if (perf) {
      const plt = readPerfPltSymbols(new ElfData(perf.plt), diags);
      const stubs = stubsFoundFirst(perfTreeSymbols(data), plt);
      ranges = [
        ...ranges,
        ...stubs.map((sym) => ({ start: sym.value, end: sym.value + BigInt(sym.size), sym })),
      ];
      ranges.sort((x, y) => (x.start < y.start ? -1 : x.start > y.start ? 1 : 0));
    }
    this.diagnostics = diags.list;
    this.diagnosticCount = diags.count;
    // Boundaries: every start and end; owner of each elementary interval by a sweep.
    const points = [...new Set(ranges.flatMap((r) => [r.start, r.end]))].sort((a, b) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    const ids = new Map<RawSymbol, number>();
    const segs: { start: bigint; sym: number }[] = [];
    const stack: Range[] = [];
    const starts: bigint[] = [];
    let next = 0;
    for (const p of points) {
      while (next < ranges.length && ranges[next]!.start === p) stack.push(ranges[next++]!);
      while (stack.length > 0 && stack[stack.length - 1]!.end <= p) stack.pop();
      const top = stack[stack.length - 1];
      let id = -1;
      if (top !== undefined) {
        id = ids.get(top.sym) ?? -1;
        if (id < 0) {
          id = this.names.length;
          ids.set(top.sym, id);
          this.names.push(top.sym.name);
          starts.push((top.start + bias) & MASK64);
        }
      }
      if (segs.length > 0 && segs[segs.length - 1]!.sym === id) continue;
      segs.push({ start: p, sym: id });
    }
    // A bias that wraps part of the module past 2^64 cuts it at the wrap.
    const biased = segs.map((s) => ({ start: (s.start + bias) & MASK64, sym: s.sym }));
    const wrap = biased.findIndex((s, k) => k > 0 && s.start <= biased[k - 1]!.start);
    const kept = wrap < 0 ? biased : biased.slice(0, wrap);
    this.segHi = Uint32Array.from(kept, (s) => Number(s.start >> 32n));
    this.segLo = Uint32Array.from(kept, (s) => Number(s.start & 0xffffffffn));
    this.segSym = Int32Array.from(kept, (s) => s.sym);
    const n = kept.length;
    const span = n > 0 ? Number((kept[n - 1]!.start - kept[0]!.start) & MASK64) : 0;
    if (n >= MIN_INDEXED && span < T32) {
      const first = kept[0]!.start;
      const segOff = Uint32Array.from(kept, (s) => Number((s.start - first) & MASK64));
      // About one bucket per segment.
      let shift = 0;
      while (span / 2 ** shift > n) shift++;
      const buckets = Math.floor(span / 2 ** shift) + 1;
      const bucketFirst = new Int32Array(buckets + 1);
      for (let b = 0, k = 0; b <= buckets; b++) {
        const at = b * 2 ** shift;
        while (k < n && segOff[k]! <= at) k++;
        bucketFirst[b] = k;
      }
      this.segOff = segOff;
      this.bucketFirst = bucketFirst;
      this.shift = shift;
    }
    this.symHi = Uint32Array.from(starts, (a) => Number(a >> 32n));
    this.symLo = Uint32Array.from(starts, (a) => Number(a & 0xffffffffn));
    this.useDemangler(options.demangler);
  }

  /** Demangle the names of later hits with `demangler` (undefined: names as linked). */
  useDemangler(demangler: NameDemangler | undefined): void {
    this.demangler = demangler;
    this.demangled = demangler ? new Array<string | undefined>(this.names.length) : [];
  }

  /** The name of symbol `k` (0 <= k < size, in address order), demangled as hits are. */
  symbolName(k: number): string {
    const raw = this.names[k]!;
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
    return this.names[k]!;
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
    return this.names.length;
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
    out.name = this.symbolName(sym);
    out.linkName = this.names[sym]!;
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
 * One range per distinct start address (the {@link preferred} symbol), sorted by start;
 * a zero-size symbol runs to the next symbol of its section (`acrossSections`: to the next symbol).
 */
function toRanges(elf: ElfFile, raw: readonly RawSymbol[], acrossSections: boolean): Range[] {
  const best = new Map<bigint, RawSymbol>();
  for (const s of raw) {
    const had = best.get(s.value);
    if (had === undefined || preferred(s, had)) best.set(s.value, s);
  }
  const syms = [...best.values()].sort((x, y) =>
    x.section !== y.section && !acrossSections
      ? x.section - y.section
      : x.value < y.value
        ? -1
        : x.value > y.value
          ? 1
          : 0,
  );
  const ranges: Range[] = [];
  for (let k = 0; k < syms.length; k++) {
    const s = syms[k]!;
    let end: bigint;
    if (s.size > 0) end = s.value + BigInt(s.size);
    else {
      const after = syms[k + 1];
      const sec = elf.sections[s.section]!;
      const secEnd = sectionAddr(sec) + BigInt(sec.size);
      end = after !== undefined && (after.section === s.section || acrossSections) ? after.value : secEnd;
    }
    if (end > MASK64 + 1n) end = MASK64 + 1n;
    if (end > s.value) ranges.push({ start: s.value, end, sym: s });
  }
  return ranges.sort((x, y) => (x.start < y.start ? -1 : 1));
}
