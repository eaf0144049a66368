/**
 * Address → module, symbol and offset over several {@link SymbolTable}s (an executable
 * and its shared objects at their load biases). Modules are ordered by their lowest
 * symbol address; the module with the highest such address at or below the looked-up
 * address answers. Lookups allocate nothing (with a demangler: once each symbol has
 * been demangled).
 */

import { hex64 } from "../base/halves.js";
import type { NameDemangler } from "./demangle.js";
import { SymbolHit, type SymbolTable } from "./symbol-table.js";

export class Symbolizer {
  private tables: SymbolTable[] = [];
  private readonly scratch = new SymbolHit();
  private readonly demangler: NameDemangler | undefined;

  /** With a demangler, every module added gets it (names in hits come out demangled). */
  constructor(options: { demangler?: NameDemangler } = {}) {
    this.demangler = options.demangler;
  }

  /** Add a module; returns its index in address order (adding a lower module later shifts it). */
  add(table: SymbolTable): number {
    if (this.demangler) table.useDemangler(this.demangler);
    this.tables.push(table);
    this.tables.sort((a, b) => a.startHi - b.startHi || a.startLo - b.startLo);
    return this.tables.indexOf(table);
  }

  /** The modules, in address order (indexes as in hits). */
  get modules(): readonly SymbolTable[] {
    return this.tables;
  }

  /** Find the symbol covering (hi:lo); fills `out` and returns true when there is one. */
  lookup(hi: number, lo: number, out: SymbolHit): boolean {
    const tables = this.tables;
    let a = 0;
    let b = tables.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      const t = tables[m]!;
      if (t.startHi < hi || (t.startHi === hi && t.startLo <= lo)) a = m + 1;
      else b = m;
    }
    if (a === 0) return false;
    const table = tables[a - 1]!;
    if (!table.lookup(hi, lo, out)) return false;
    out.module = a - 1;
    out.moduleName = table.name;
    return true;
  }

  /** `name+0x1a` (`name` at offset 0), or `0x...` for an address no symbol covers. */
  format(hi: number, lo: number): string {
    const h = this.scratch;
    if (!this.lookup(hi, lo, h)) return `0x${hex64(hi, lo, 1)}`;
    return h.offset === 0 ? h.name : `${h.name}+0x${h.offset.toString(16)}`;
  }
}
