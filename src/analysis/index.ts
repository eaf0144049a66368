export { MAX_DIAGNOSTICS, type SymbolDiagnostic } from "./elf-data.js";
export { SymbolHit, SymbolTable, type SymbolTableOptions } from "./symbol-table.js";
export { Symbolizer } from "./symbolizer.js";
export { Demangler, isMangled } from "./demangle.js";
