/** A symbol read from an ELF file, before a {@link SymbolTable} is built from it. */
export interface RawSymbol {
  readonly name: string;
  /** Link-time address (before any load bias). */
  readonly value: bigint;
  /** `st_size`, or the PLT entry size; 0: runs to the next symbol in its section. */
  readonly size: number;
  /** Section header index, or -1 when unknown. */
  readonly section: number;
  /** The first test among symbols at one address (see {@link rank}); the rest is {@link preferred}. */
  readonly rank: number;
  /** STB_LOCAL, STB_GLOBAL, STB_WEAK, ... (PLT stubs: global). */
  readonly binding: number;
}

export const STB_LOCAL = 0;
export const STB_GLOBAL = 1;
export const STB_WEAK = 2;

/**
 * Rank: functions over untyped labels, then `.symtab`'s over `.dynsym`'s (perf reads
 * one table: `.symtab` when there is one, whose names carry no versions).
 */
export function rank(isFunction: boolean, fromSymtab: boolean): number {
  return (isFunction ? 2 : 0) + (fromSymtab ? 1 : 0);
}

/**
 * Whether `a` names the address rather than `b`, which was read before it: the higher
 * {@link rank}, then perf's choice among aliases (perf 6.1 symbols__fixup_duplicate):
 * a sized symbol, a non-weak one, a global one, the fewer leading underscores, the
 * longer name; on a full tie the one read first (`b`). So perf names `mprotect` over
 * `__mprotect`, `__read_nocancel` (global) over `__GI___read_nocancel` (local).
 */
export function preferred(a: RawSymbol, b: RawSymbol): boolean {
  const by = byFields(a.rank, a.size, a.binding, b.rank, b.size, b.binding);
  return by !== 0 ? by > 0 : byName(a.name, b.name);
}

/** {@link preferred}'s tests before the names': > 0 for `a`, < 0 for `b`, 0 when the names decide. */
function byFields(
  rankA: number,
  sizeA: number,
  bindA: number,
  rankB: number,
  sizeB: number,
  bindB: number,
): number {
  if (rankA !== rankB) return rankA > rankB ? 1 : -1;
  if (sizeA > 0 !== sizeB > 0) return sizeA > 0 ? 1 : -1;
  if ((bindA === STB_WEAK) !== (bindB === STB_WEAK)) return bindB === STB_WEAK ? 1 : -1;
  if ((bindA === STB_GLOBAL) !== (bindB === STB_GLOBAL)) return bindA === STB_GLOBAL ? 1 : -1;
  return 0;
}

/** {@link preferred}'s tests of the names: whether `a` wins. */
function byName(a: string, b: string): boolean {
  const ua = leadingUnderscores(a);
  const ub = leadingUnderscores(b);
  if (ua !== ub) return ua < ub;
  return a.length > b.length;
}

function leadingUnderscores(name: string): number {
  let n = 0;
  while (name.charCodeAt(n) === 0x5f) n++;
  return n;
}

/** Where the names of a {@link RawSymbols}' entries come from, read when first asked for. */
export interface NameSource {
  /** The name of the entry whose name's first byte is at `at`, entry `index` of its table. */
  name(at: number, index: number): string;
}

/** The source of names given whole ({@link RawSymbols.add}): `at` indexes them. */
const GIVEN = 0;
const FIRST_SIZE = 256;

/**
 * Symbols read from ELF files, column by column, numbered in reading order: a large
 * program's tables hold 150k (node's), and as objects (each with its BigInt value)
 * making them, reading them back while the table is built and collecting them took
 * over a third of a table's build. Each entry's name is read from its source when asked
 * for (a table keeps half of the names and a look-up reads a few).
 */
export class RawSymbols {
  /** Entries: 0..count-1. */
  count = 0;
  /** Link-time address (before any load bias), as halves. */
  valueHi = new Uint32Array(FIRST_SIZE);
  valueLo = new Uint32Array(FIRST_SIZE);
  /** See {@link RawSymbol}. */
  size = new Float64Array(FIRST_SIZE);
  section = new Int32Array(FIRST_SIZE);
  rank = new Uint8Array(FIRST_SIZE);
  binding = new Uint8Array(FIRST_SIZE);
  /** Each entry's name: its source, the name's place there and its index in its table. */
  private source = new Uint16Array(FIRST_SIZE);
  private at = new Float64Array(FIRST_SIZE);
  private index = new Uint32Array(FIRST_SIZE);
  private readonly sources: (NameSource | undefined)[] = [undefined];
  private readonly given: string[] = [];

  /** A source of names for {@link push}: its number. */
  addSource(source: NameSource): number {
    this.sources.push(source);
    return this.sources.length - 1;
  }

  /** Room for `more` entries past {@link count}. */
  reserve(more: number): void {
    const need = this.count + more;
    if (need <= this.rank.length) return;
    const n = Math.max(need, 2 * this.rank.length);
    const grow = <T extends Uint32Array | Float64Array | Int32Array | Uint8Array | Uint16Array>(
      a: T,
      b: T,
    ): T => {
      b.set(a);
      return b;
    };
    this.valueHi = grow(this.valueHi, new Uint32Array(n));
    this.valueLo = grow(this.valueLo, new Uint32Array(n));
    this.size = grow(this.size, new Float64Array(n));
    this.section = grow(this.section, new Int32Array(n));
    this.rank = grow(this.rank, new Uint8Array(n));
    this.binding = grow(this.binding, new Uint8Array(n));
    this.source = grow(this.source, new Uint16Array(n));
    this.at = grow(this.at, new Float64Array(n));
    this.index = grow(this.index, new Uint32Array(n));
  }

  /** An entry whose name `source` (see {@link addSource}) has at `at`, entry `index` of its table. */
  push(
    source: number,
    at: number,
    index: number,
    valueHi: number,
    valueLo: number,
    size: number,
    section: number,
    rank: number,
    binding: number,
  ): void {
    if (this.count === this.rank.length) this.reserve(1);
    const i = this.count++;
    this.source[i] = source;
    this.at[i] = at;
    this.index[i] = index;
    this.valueHi[i] = valueHi;
    this.valueLo[i] = valueLo;
    this.size[i] = size;
    this.section[i] = section;
    this.rank[i] = rank;
    this.binding[i] = binding;
  }

  /** An entry of a symbol with its name (PLT stubs and the like: few). */
  add(s: RawSymbol): void {
    this.given.push(s.name);
    this.push(
      GIVEN,
      this.given.length - 1,
      0,
      Number(s.value >> 32n),
      Number(s.value & 0xffffffffn),
      s.size,
      s.section,
      s.rank,
      s.binding,
    );
  }

  /** Entry `i`'s name. */
  name(i: number): string {
    return this.sourceName(this.source[i]!, this.at[i]!, this.index[i]!);
  }

  /** The name source `source` has at `at` for entry `index` of its table (an entry not pushed: for messages). */
  sourceName(source: number, at: number, index: number): string {
    return source === GIVEN ? this.given[at]! : this.sources[source]!.name(at, index);
  }

  /** Entry `i`'s value (for messages). */
  value(i: number): bigint {
    return (BigInt(this.valueHi[i]!) << 32n) | BigInt(this.valueLo[i]!);
  }

  /** {@link preferred} of entries `a` and `b` (`b` read before `a`). */
  preferred(a: number, b: number): boolean {
    const by = byFields(
      this.rank[a]!,
      this.size[a]!,
      this.binding[a]!,
      this.rank[b]!,
      this.size[b]!,
      this.binding[b]!,
    );
    return by !== 0 ? by > 0 : byName(this.name(a), this.name(b));
  }
}
