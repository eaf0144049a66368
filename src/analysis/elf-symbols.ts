/**
 * Function symbols from `.symtab` and `.dynsym`: STT_FUNC and STT_GNU_IFUNC anywhere,
 * STT_NOTYPE labels and STT_OBJECT tables in code sections (what nm lists as `t`);
 * `.dynsym` names carry their GNU version as nm prints them. Undefined, section, file
 * and TLS symbols are left out. Bad entries (string offsets outside the string table, section indexes
 * beyond the table) are skipped with a diagnostic naming the entry's file offset.
 */

import { nulAt, utf8Text } from "../image/c-string.js";
import { SectionType } from "../image/elf.js";
import { type Diagnostics, type ElfData, SHF_EXECINSTR, SHT_DYNSYM } from "./elf-data.js";
import { symbolVersions, type VersionOf } from "./elf-versions.js";
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
  // A name runs to a NUL within the table: from the last NUL on, none does.
  const bytes = data.elf.bytes;
  const strEnd = strtab.offset + strtab.size;
  let lastNul = strEnd - 1;
  while (lastNul >= strtab.offset && bytes[lastNul] !== 0) lastNul--;
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
    const nameAt = strtab.offset + nameIndex;
    if (nameIndex >= strtab.size || nameAt > lastNul) {
      diags.add(at, `${where}: symbol ${i}: st_name 0x${nameIndex.toString(16)} outside ${strtab.name}`);
      continue;
    }
    if (bytes[nameAt] === 0) continue;
    const value = data.word(at + (data.is64 ? 8 : 4));
    const size = Number(data.word(at + (data.is64 ? 16 : 8)));
    const sym = new ElfSymbol(
      data,
      nameAt,
      strEnd,
      version,
      i,
      value,
      size,
      shndx,
      rank(isFunction, table.type !== SHT_DYNSYM),
      info >> 4,
    );
    if (size > Number.MAX_SAFE_INTEGER) {
      diags.add(at, `${where}: symbol ${i} (${sym.name}): st_size absurd (above 2^53 - 1)`);
      continue;
    }
    out.push(sym);
  }
}

/**
 * A symbol of an ELF symbol table, its name decoded when first read: a large program's
 * tables hold 150k names (node's), of which a SymbolTable keeps half and a look-up
 * reads a few; decoding them all took a third of making the table.
 */
class ElfSymbol implements RawSymbol {
  private text: string | undefined = undefined;

  constructor(
    private readonly data: ElfData,
    /** File offsets of the name's first byte and of its string table's end (a NUL lies between). */
    private readonly at: number,
    private readonly end: number,
    /** `.dynsym`'s versions (the name gets its symbol's), or none. */
    private readonly version: VersionOf | undefined,
    private readonly index: number,
    readonly value: bigint,
    readonly size: number,
    readonly section: number,
    readonly rank: number,
    readonly binding: number,
  ) {}

  get name(): string {
    if (this.text === undefined) {
      const bytes = this.data.elf.bytes;
      const name = utf8Text(bytes, this.at, nulAt(bytes, this.at, this.end));
      this.text = this.version === undefined ? name : name + this.version(this.index);
    }
    return this.text;
  }
}
