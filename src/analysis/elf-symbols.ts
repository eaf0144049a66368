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
import { RawSymbols, rank } from "./raw-symbol.js";

const STT_NOTYPE = 0;
const STT_OBJECT = 1;
const STT_FUNC = 2;
const STT_GNU_IFUNC = 10;
const SHN_LORESERVE = 0xff00;
const T32 = 0x1_0000_0000;
/** A size's high half from this on puts it past 2^53 - 1. */
const ABSURD_SIZE_HI = 0x200000;

/**
 * Every symbol table's function symbols, `.symtab` first. `perf`: as perf 6.1 reads
 * them: `.dynsym` names without their versions, and labels only in sections whose
 * name has "text" in it (perf's elf_sec__is_text: not `_init` in `.init`).
 */
export function readElfSymbols(data: ElfData, diags: Diagnostics, perf = false): RawSymbols {
  const out = new RawSymbols();
  for (const type of [SectionType.Symtab, SHT_DYNSYM])
    for (const s of data.elf.sections) if (s.type === type) readTable(data, s.index, diags, out, perf);
  return out;
}

function readTable(data: ElfData, index: number, diags: Diagnostics, out: RawSymbols, perf: boolean): void {
  const sections = data.elf.sections;
  const table = sections[index]!;
  const where = `section ${index} (${table.name})`;
  const strtab = sections[table.link];
  if (strtab === undefined || strtab.type !== SectionType.Strtab) {
    diags.add(table.headerOffset, `${where}: sh_link ${table.link} is not a string table; table skipped`);
    return;
  }
  const version = !perf && table.type === SHT_DYNSYM ? symbolVersions(data, index, diags) : undefined;
  // A name runs to a NUL within the table: from the last NUL on, none does.
  const bytes = data.elf.bytes;
  const strEnd = strtab.offset + strtab.size;
  let lastNul = strEnd - 1;
  while (lastNul >= strtab.offset && bytes[lastNul] !== 0) lastNul--;
  out.namesIn(bytes);
  const versions = version === undefined ? 0 : out.addVersions(version);
  const is64 = data.is64;
  const entsize = is64 ? 24 : 16;
  // A word's halves in an Elf64 entry: the low one first in a little-endian file.
  const low = data.le ? 0 : 4;
  const count = Math.floor(table.size / entsize);
  const symtab = table.type !== SHT_DYNSYM;
  out.reserve(count);
  // Entry 0 is the reserved null symbol.
  for (let i = 1; i < count; i++) {
    const at = table.offset + i * entsize;
    const info = data.u8(at + (is64 ? 4 : 12));
    const type = info & 0xf;
    const shndx = data.u16(at + (is64 ? 6 : 14));
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
    const nameAt = strtab.offset + nameIndex;
    if (nameIndex >= strtab.size || nameAt > lastNul) {
      diags.add(at, `${where}: symbol ${i}: st_name 0x${nameIndex.toString(16)} outside ${strtab.name}`);
      continue;
    }
    if (bytes[nameAt] === 0) continue;
    const valueHi = is64 ? data.u32(at + 12 - low) : 0;
    const valueLo = is64 ? data.u32(at + 8 + low) : data.u32(at + 4);
    const sizeHi = is64 ? data.u32(at + 20 - low) : 0;
    const sizeLo = is64 ? data.u32(at + 16 + low) : data.u32(at + 8);
    if (sizeHi >= ABSURD_SIZE_HI) {
      const name = out.nameAt(nameAt, strEnd, versions, i);
      diags.add(at, `${where}: symbol ${i} (${name}): st_size absurd (above 2^53 - 1)`);
      continue;
    }
    out.push(
      nameAt,
      strEnd,
      versions,
      i,
      valueHi,
      valueLo,
      sizeHi * T32 + sizeLo,
      shndx,
      rank(isFunction, symtab),
      info >> 4,
    );
  }
}
