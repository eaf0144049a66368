/**
 * A made x86-64 executable for the tests of ELF files read in part (elf-parts.ts):
 * code (a segment and .text) and DWARF sections each `big` bytes, far larger than the
 * gap reads merge over, symbols main, work and helper, and a build id in a note far
 * from everything else read: in a note section only (as Go's linker leaves it) or in
 * a PT_NOTE segment only.
 */
import { SectionType } from "../../src/image/index.js";
import {
  buildIdNote,
  ET_EXEC,
  PF_R,
  PF_X,
  PT_NOTE,
  pattern,
  SHT_NOTE,
  writeElf,
} from "../../tools/elf/elf-writer.js";
import { stringTable, symbolTable } from "../analysis/elf-tables.js";

const SHF_ALLOC = 2n;
const SHF_EXECINSTR = 4n;
const SHT_SYMTAB = 2;
/** Where the code is linked (main's address). */
export const CODE = 0x401000n;
/** The build id: bytes 0, 1, ..., 19. */
export const BUILD_ID = Uint8Array.from({ length: 20 }, (_, i) => i);

export function madeElf(note: "section" | "segment" = "section", big = 300_000): Uint8Array {
  const names = stringTable(["main", "work", "helper"]);
  const symtab = symbolTable([
    [names.at("main"), 0x12, 1, CODE, 0x100n],
    [names.at("work"), 0x12, 1, CODE + 0x100n, 0x80n],
    [names.at("helper"), 0x12, 1, CODE + 0x1000n, 0n],
  ]);
  const code = pattern(big, 7);
  const id = buildIdNote(BUILD_ID, true);
  return writeElf({
    is64: true,
    le: true,
    type: ET_EXEC,
    machine: 62,
    segments: [
      { vaddr: CODE, flags: PF_R | PF_X, data: code },
      ...(note === "segment" ? [{ type: PT_NOTE, vaddr: 0n, data: id, align: 4n }] : []),
    ],
    sections: [
      { name: ".text", flags: SHF_ALLOC | SHF_EXECINSTR, addr: CODE, data: code },
      { name: ".debug_info", data: pattern(big, 8) },
      { name: ".symtab", type: SHT_SYMTAB, data: symtab, link: 4, info: 1, entsize: 24n },
      { name: ".strtab", type: SectionType.Strtab, data: names.bytes },
      { name: ".debug_line", data: pattern(big, 9) },
      ...(note === "section"
        ? [{ name: ".note.gnu.build-id", type: SHT_NOTE, data: id, addralign: 4n }]
        : []),
      { name: ".debug_str", data: pattern(big, 10) },
    ],
  }).bytes;
}
