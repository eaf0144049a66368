/**
 * The symbols of every process of a perf.data file in one {@link Symbolizer}, for the
 * frame names of `ptkit perf`'s analysis outputs (which name a frame by its address
 * alone): each binary's table at each load bias once, the kernel's too. Where two
 * processes map different binaries over the same addresses, the table that starts
 * highest at or below an address answers first; when it does not cover the address,
 * the others are asked in the order they were mapped.
 */
import { type SymbolHit, Symbolizer, type SymbolTable } from "../analysis/index.js";

export class AllProcessSymbols extends Symbolizer {
  private readonly seen = new Set<SymbolTable>();
  private readonly inOrder: SymbolTable[] = [];

  /** Add `table` unless it is in already (each stream replays the same mmaps). */
  include(table: SymbolTable): void {
    if (this.seen.has(table)) return;
    this.seen.add(table);
    this.inOrder.push(table);
    this.add(table);
  }

  override lookup(hi: number, lo: number, out: SymbolHit): boolean {
    if (super.lookup(hi, lo, out)) return true;
    // Only misses get here, and frame names are cached per address: rare.
    for (const table of this.inOrder) {
      if (!table.lookup(hi, lo, out)) continue;
      out.module = this.modules.indexOf(table);
      out.moduleName = table.name;
      return true;
    }
    return false;
  }
}
