import { toBigInt } from "../base/halves.js";
import { nulAt, utf8Text } from "../image/c-string.js";
import type { VersionOf } from "./elf-versions.js";
import { growFloat64, growInt32, growUint32 } from "./key-table.js";

/** A symbol read from an ELF file, before a {@link SymbolTable} is built from it. */
export interface RawSymbol {
  readonly name: string;
  /** Link-time address (before any load bias). */
  readonly value: bigint;
  /** `st_size`, or the PLT entry size; 0: runs to the next symbol in its section. */
  readonly size: number;
  /** Section header index, or -1 when unknown. */
  readonly section: number;
  /** The first test among symbols at one address (see {@link rank}); the rest is {@link RawSymbols.preferred}. */
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

/** The names' part of {@link RawSymbols.preferred}: whether `a` wins. */
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

/** The first size of a {@link RawSymbols}' columns. */
const FIRST_SIZE = 256;
const NO_BYTES = new Uint8Array(0);

/**
 * Symbols read from an ELF file, column by column, numbered in reading order: a large
 * program's tables hold 150k (node's), and as objects (each with its BigInt value)
 * making them, reading them back while the table is built and collecting them took
 * over a third of a table's build. Each entry's name is read from the file's string
 * table when asked for (a table keeps half of the names and a look-up reads a few).
 */
export class RawSymbols {
  /** Entries: 0..count-1. */
  count = 0;
  /** Link-time address (before any load bias), as halves. */
  valueHi: Uint32Array = new Uint32Array(FIRST_SIZE);
  valueLo: Uint32Array = new Uint32Array(FIRST_SIZE);
  /** See {@link RawSymbol}. */
  size: Float64Array = new Float64Array(FIRST_SIZE);
  section: Int32Array = new Int32Array(FIRST_SIZE);
  /** The {@link rank} (bits 1:0) and the binding (5:2). */
  private kind: Uint32Array = new Uint32Array(FIRST_SIZE);
  /**
   * Where the name is: its first byte in {@link bytes} and the end of its string table
   * (a NUL lies between), or with an end of -1 its index in {@link given}.
   */
  private at: Float64Array = new Float64Array(FIRST_SIZE);
  private end: Float64Array = new Float64Array(FIRST_SIZE);
  /** The versions the name gets (the number {@link addVersions} gave; 0: none), and the entry's index in its table. */
  private version: Uint32Array = new Uint32Array(FIRST_SIZE);
  private index: Uint32Array = new Uint32Array(FIRST_SIZE);
  /** The file's bytes, where the names are. */
  private bytes: Uint8Array = NO_BYTES;
  private readonly versions: VersionOf[] = [];
  private readonly given: string[] = [];

  /** The bytes of the file the names of {@link push} are in. */
  namesIn(bytes: Uint8Array): void {
    this.bytes = bytes;
  }

  /** `.dynsym` versions for the names of {@link push}: their number there. */
  addVersions(versions: VersionOf): number {
    this.versions.push(versions);
    return this.versions.length;
  }

  /** Room for `more` entries past {@link count}. */
  reserve(more: number): void {
    const need = this.count + more;
    this.valueHi = growUint32(this.valueHi, need);
    this.valueLo = growUint32(this.valueLo, need);
    this.size = growFloat64(this.size, need);
    this.section = growInt32(this.section, need);
    this.kind = growUint32(this.kind, need);
    this.at = growFloat64(this.at, need);
    this.end = growFloat64(this.end, need);
    this.version = growUint32(this.version, need);
    this.index = growUint32(this.index, need);
  }

  /**
   * An entry whose name starts at `at` in the file (see {@link namesIn}), in a string
   * table that ends at `end`, with `version` (see {@link addVersions}; 0: none), entry
   * `index` of its table.
   */
  push(
    at: number,
    end: number,
    version: number,
    index: number,
    valueHi: number,
    valueLo: number,
    size: number,
    section: number,
    rank: number,
    binding: number,
  ): void {
    if (this.count === this.kind.length) this.reserve(1);
    const i = this.count++;
    this.at[i] = at;
    this.end[i] = end;
    this.version[i] = version;
    this.index[i] = index;
    this.valueHi[i] = valueHi;
    this.valueLo[i] = valueLo;
    this.size[i] = size;
    this.section[i] = section;
    this.kind[i] = (rank & 3) | ((binding & 15) << 2);
  }

  /** An entry of a symbol with its name (PLT stubs and the like: few). */
  add(s: RawSymbol): void {
    this.given.push(s.name);
    this.push(
      this.given.length - 1,
      -1,
      0,
      0,
      Number(s.value >> 32n),
      Number(s.value & 0xffffffffn),
      s.size,
      s.section,
      s.rank,
      s.binding,
    );
  }

  /** The name {@link push} would give an entry of these fields (for messages about entries not pushed). */
  nameAt(at: number, end: number, version: number, index: number): string {
    if (end < 0) return this.given[at]!;
    const name = utf8Text(this.bytes, at, nulAt(this.bytes, at, end));
    return version === 0 ? name : name + this.versions[version - 1]!(index);
  }

  /** Entry `i`'s name. */
  name(i: number): string {
    return this.nameAt(this.at[i]!, this.end[i]!, this.version[i]!, this.index[i]!);
  }

  /** Entry `i`'s {@link rank}. */
  rank(i: number): number {
    return this.kind[i]! & 3;
  }

  /** Entry `i`'s binding (STB_LOCAL, ...). */
  binding(i: number): number {
    return this.kind[i]! >>> 2;
  }

  /** Entry `i`'s value (for messages). */
  value(i: number): bigint {
    return toBigInt(this.valueHi[i]!, this.valueLo[i]!);
  }

  /**
   * Whether entry `a` names the address rather than entry `b`, which was read before
   * it: the higher {@link rank}, then perf's choice among aliases (perf 6.1
   * symbols__fixup_duplicate): a sized symbol, a non-weak one, a global one, the fewer
   * leading underscores, the longer name; on a full tie the one read first (`b`). So
   * perf names `mprotect` over `__mprotect`, `__read_nocancel` (global) over
   * `__GI___read_nocancel` (local).
   */
  preferred(a: number, b: number): boolean {
    const rankA = this.rank(a);
    const rankB = this.rank(b);
    if (rankA !== rankB) return rankA > rankB;
    const sizedA = this.size[a]! > 0;
    if (sizedA !== this.size[b]! > 0) return sizedA;
    const bindA = this.binding(a);
    const bindB = this.binding(b);
    if ((bindA === STB_WEAK) !== (bindB === STB_WEAK)) return bindB === STB_WEAK;
    if ((bindA === STB_GLOBAL) !== (bindB === STB_GLOBAL)) return bindA === STB_GLOBAL;
    return byName(this.name(a), this.name(b));
  }
}
