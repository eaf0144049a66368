/**
 * `--symbols`: function names from the symbol tables of the ELF files given with
 * `--elf file[:base]`, each at the load bias its base implies (base minus the lowest
 * PT_LOAD address; no base, no bias), as the flow decoder maps them.
 */
import { Symbolizer, SymbolTable } from "../analysis/index.js";
import { ElfError, lowestLoad, tryParseElf } from "../image/index.js";
import { toBigInt } from "../packet/index.js";
import { splitBase } from "./flow-image.js";
import type { CliIo } from "./io.js";

const MASK64 = 0xffff_ffff_ffff_ffffn;

/** The symbols of `elfs` (`file[:base]` each), or an error message. */
export function loadSymbols(io: CliIo, elfs: readonly string[]): Symbolizer | string {
  const symbols = new Symbolizer();
  for (const arg of elfs) {
    const { name, base } = splitBase(arg);
    let bytes: Uint8Array;
    try {
      bytes = io.readFile(name);
    } catch (e) {
      return `failed to open ${name}: ${(e as Error).message}.`;
    }
    const elf = tryParseElf(bytes, { strict: false });
    if (elf instanceof ElfError) return `${name}: ${elf.message}.`;
    const low = lowestLoad(elf);
    const bias = base && low ? (base - toBigInt(low.hi, low.lo)) & MASK64 : 0n;
    symbols.add(new SymbolTable(elf, { name, bias }));
  }
  return symbols;
}
