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
  if (a.rank !== b.rank) return a.rank > b.rank;
  if (a.size > 0 !== b.size > 0) return a.size > 0;
  if ((a.binding === STB_WEAK) !== (b.binding === STB_WEAK)) return b.binding === STB_WEAK;
  if ((a.binding === STB_GLOBAL) !== (b.binding === STB_GLOBAL)) return a.binding === STB_GLOBAL;
  const ua = leadingUnderscores(a.name);
  const ub = leadingUnderscores(b.name);
  if (ua !== ub) return ua < ub;
  return a.name.length > b.name.length;
}

function leadingUnderscores(name: string): number {
  let n = 0;
  while (name.charCodeAt(n) === 0x5f) n++;
  return n;
}
