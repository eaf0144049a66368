/**
 * What ptkit reads of an ELF file besides its headers (image/elf-parts.ts): the parts
 * a symbol table reads, and those and the loadable segments for an image. A module of
 * its own, light: commands that map code without naming it (`ptkit flow`) load it.
 */
import { type ElfSection, SectionType } from "../image/elf.js";
import type { ElfNeeds } from "../image/elf-parts.js";

const PLT_SECTIONS = new Set([".plt", ".plt.sec", ".plt.got"]);

/** Whether section `s` holds PLT stubs (of the sections whose bytes are code, the ones the symbols read). */
export function isPltSection(s: ElfSection): boolean {
  return s.type === SectionType.Progbits && PLT_SECTIONS.has(s.name);
}

/**
 * What a SymbolTable reads of an ELF file: every section but those of program bits
 * (code, data, DWARF), of which it reads the PLT's only (to name their stubs). node's
 * 99 MB binary: 17 MB.
 */
export const SYMBOL_SECTIONS: ElfNeeds = {
  section: (s) => s.type !== SectionType.Progbits || isPltSection(s),
  loads: false,
};

/** {@link SYMBOL_SECTIONS} and the loadable segments: an image of the file and its symbols, without its DWARF. */
export const IMAGE_AND_SYMBOLS: ElfNeeds = { ...SYMBOL_SECTIONS, loads: true };
