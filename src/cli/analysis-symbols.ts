/**
 * `--symbols`: function names from the symbol tables of the ELF files given with
 * `--elf file[:base]`, each at the load bias its base implies (base minus the lowest
 * PT_LOAD address; no base, no bias), as the flow decoder maps them.
 */
import { Symbolizer, SymbolTable } from "../analysis/index.js";
import { lowestLoad } from "../image/index.js";
import { toBigInt } from "../packet/index.js";
import { readElfArg } from "./flow-image.js";
import type { CliIo } from "./io.js";

const MASK64 = 0xffff_ffff_ffff_ffffn;

/** The symbols of `elfs` (`file[:base]` each), or an error message. */
export function loadSymbols(io: CliIo, elfs: readonly string[]): Symbolizer | string {
  const symbols = new Symbolizer();
  for (const arg of elfs) {
    const read = readElfArg(io, arg);
    if (typeof read === "string") return read;
    const { name, base, elf } = read;
    const low = lowestLoad(elf);
    const bias = base && low ? (base - toBigInt(low.hi, low.lo)) & MASK64 : 0n;
    symbols.add(new SymbolTable(elf, { name, bias }));
  }
  return symbols;
}
