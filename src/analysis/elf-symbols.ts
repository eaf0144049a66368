/**
 * Function symbols from `.symtab` and `.dynsym`: STT_FUNC and STT_GNU_IFUNC anywhere,
 * STT_NOTYPE labels and STT_OBJECT tables in code sections (what nm lists as `t`);
 * `.dynsym` names carry their GNU version as nm prints them. Undefined, section, file
 * and TLS symbols are left out. Bad entries (string offsets outside the string table, section indexes
 * beyond the table) are skipped with a diagnostic naming the entry's file offset.
 */

import { SectionType } from "../image/elf.js";
import { type Diagnostics, type ElfData, SHF_EXECINSTR, SHT_DYNSYM } from "./elf-data.js";
import { symbolVersions } from "./elf-versions.js";
import { type RawSymbol, rank } from "./raw-symbol.js";

const STT_NOTYPE = 0;
const STT_OBJECT = 1;
const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;
const SHN_LORESERVE = 0xff00;

/**
 * Every symbol table's function symbols, `.symtab` first. `perf`: as perf 6.1 reads
 * them: `.dynsym` names without their versions, and labels only in sections whose
 * name has "text" in it (perf's elf_sec__is_text: not `_init` in `.init`).
 */
export function readElfSymbols(data: ElfData, diags: Diagnostics, perf = false): RawSymbol[] {
  const out: RawSymbol[] = [];
  for (const type of [SectionType.Symtab, SHT_DYNSYM])
    for (const s of data.elf.sections) if (s.type === type) readTable(data, s.index, diags, out, perf);
  return out;
}

function readTable(data: ElfData, index: number, diags: Diagnostics, out: RawSymbol[], perf: boolean): void {
  const sections = data.elf.sections;
  const table = sections[index]!;
  const where = `section ${index} (${table.name})`;
  const strtab = sections[table.link];
  if (strtab === undefined || strtab.type !== SectionType.Strtab) {
    diags.add(table.headerOffset, `${where}: sh_link ${table.link} is not a string table; table skipped`);
    return;
  }
  const version = !perf && table.type === SHT_DYNSYM ? symbolVersions(data, index, diags) : undefined;
  const entsize = data.is64 ? 24 : 16;
  const count = Math.floor(table.size / entsize);
  // Entry 0 is the reserved null symbol.
  for (let i = 1; i < count; i++) {
    const at = table.offset + i * entsize;
    const info = data.u8(at + (data.is64 ? 4 : 12));
    const type = info & 0xf;
    const shndx = data.u16(at + (data.is64 ? 6 : 14));
    if (shndx === 0 || shndx >= SHN_LORESERVE) continue;
    const section = sections[shndx];
    if (section === undefined) {
      diags.add(at, `${where}: symbol ${i}: st_shndx ${shndx} beyond the ${sections.length} sections`);
      continue;
    }
    const code = (section.flags & SHF_EXECINSTR) !== 0;
    const isFunction = type === STT_FUNC || type === STT_GNU_IFUNC;
    if (!isFunction && !(code && (type === STT_NOTYPE || type === STT_OBJECT))) continue;
    if (perf && type === STT_NOTYPE && !section.name.includes("text")) continue;
    const nameIndex = data.u32(at);
    const name = data.string(strtab, nameIndex);
    if (name === undefined) {
      diags.add(at, `${where}: symbol ${i}: st_name 0x${nameIndex.toString(16)} outside ${strtab.name}`);
      continue;
    }
    if (name === "") continue;
    const value = data.word(at + (data.is64 ? 8 : 4));
    const size = Number(data.word(at + (data.is64 ? 16 : 8)));
    if (size > Number.MAX_SAFE_INTEGER) {
      diags.add(at, `${where}: symbol ${i} (${name}): st_size absurd (above 2^53 - 1)`);
      continue;
    }
    out.push({
      name: version === undefined ? name : name + version(i),
      value,
      size,
      section: shndx,
      rank: rank(isFunction, table.type !== SHT_DYNSYM),
      binding: info >> 4,
    });
  }
}
