/** A symbol read from an ELF file, before a {@link SymbolTable} is built from it. */
export interface RawSymbol {
  readonly name: string;
  /** Link-time address (before any load bias). */
  readonly value: bigint;
  /** `st_size`, or the PLT entry size; 0: runs to the next symbol in its section. */
  readonly size: number;
  /** Section header index, or -1 when unknown. */
  readonly section: number;
  /** Higher wins among symbols at one address (see {@link rank}). */
  readonly rank: number;
}

/** Rank: functions over untyped labels, globals over locals, sized over zero-size. */
export function rank(isFunction: boolean, isGlobal: boolean, sized: boolean): number {
  return (isFunction ? 4 : 0) + (isGlobal ? 2 : 0) + (sized ? 1 : 0);
}
