/**
 * PLT stubs named `name@plt` as objdump names them (x86-64): each entry of `.plt`,
 * `.plt.sec` and `.plt.got` whose `jmp *disp(%rip)` reads a GOT slot that a
 * R_X86_64_JUMP_SLOT or R_X86_64_GLOB_DAT relocation names; R_X86_64_IRELATIVE slots
 * are `*ABS*+0xaddend@plt`. Lazy-binding stubs and PLT0 jump elsewhere and stay
 * unnamed, as in objdump.
 */

import { SectionType } from "../image/elf.js";
import { type Diagnostics, type ElfData, MASK64, SHT_DYNSYM, SHT_RELA, sectionAddr } from "./elf-data.js";
import { isPltSection } from "./elf-needs.js";
import { type RawSymbol, rank, STB_GLOBAL } from "./raw-symbol.js";

const EM_X86_64 = 62;
const R_GLOB_DAT = 6;
const R_JUMP_SLOT = 7;
const R_IRELATIVE = 37;

/** The PLT stubs of an x86-64 file (none for other machines). */
export function readPltSymbols(data: ElfData, diags: Diagnostics): RawSymbol[] {
  const out: RawSymbol[] = [];
  if (data.elf.machine !== EM_X86_64 || !data.is64) return out;
  const slots = gotSlotNames(data, diags);
  if (slots.size === 0) return out;
  for (const s of data.elf.sections) {
    if (!isPltSection(s)) continue;
    const entsize = data.entsize(s);
    const step = entsize >= 8 && entsize <= 32 ? entsize : 16;
    for (let e = 0; e + step <= s.size; e += step) {
      const at = s.offset + e;
      // The first jmp *disp32(%rip) (ff 25) in the entry, after any endbr64/bnd prefix.
      for (let k = 0; k + 6 <= step; k++) {
        if (data.u8(at + k) !== 0xff || data.u8(at + k + 1) !== 0x25) continue;
        const entry = sectionAddr(s) + BigInt(e);
        const slot = (entry + BigInt(k + 6) + BigInt(data.view.getInt32(at + k + 2, true))) & MASK64;
        const name = slots.get(slot);
        if (name !== undefined)
          out.push({
            name,
            value: entry,
            size: step,
            section: s.index,
            rank: rank(true, true),
            binding: STB_GLOBAL,
          });
        break;
      }
    }
  }
  return out;
}

/**
 * The PLT stubs as perf 6.1 synthesizes them (dso__synthesize_plt_symbols, x86-64):
 * relocation i of `.rela.plt` (linked to `.dynsym`) names the `.plt` entry after the
 * header, i + 1 entries of sh_entsize in, `name@plt` by its `.dynsym` symbol (`@plt`
 * for symbol 0: R_X86_64_IRELATIVE), whatever the stub jumps to and however bound;
 * `.plt.sec` and `.plt.got` get none. Read from the binary itself: a debug file's PLT
 * sections are empty.
 */
export function readPerfPltSymbols(data: ElfData, diags: Diagnostics): RawSymbol[] {
  const out: RawSymbol[] = [];
  if (data.elf.machine !== EM_X86_64 || !data.is64) return out;
  const sections = data.elf.sections;
  const rel = sections.find((s) => s.name === ".rela.plt" && s.type === SHT_RELA);
  const plt = sections.find((s) => s.name === ".plt" && s.type === SectionType.Progbits);
  const symtab = rel && sections[rel.link];
  const strtab = symtab?.type === SHT_DYNSYM ? sections[symtab.link] : undefined;
  const step = plt && data.entsize(plt);
  if (!rel || !plt || !symtab || strtab?.type !== SectionType.Strtab || !step) return out;
  const count = Math.floor(rel.size / 24);
  for (let i = 0; i < count; i++) {
    const at = rel.offset + i * 24;
    const sym = data.u32(at + 12);
    const name =
      sym * 24 + 24 <= symtab.size ? data.string(strtab, data.u32(symtab.offset + sym * 24)) : undefined;
    if (name === undefined) {
      diags.add(
        at,
        `section ${rel.index} (${rel.name}): relocation ${i}: symbol ${sym} has no name in ${symtab.name}`,
      );
      continue;
    }
    const value = sectionAddr(plt) + BigInt((i + 1) * step);
    out.push({
      name: `${name}@plt`,
      value,
      size: step,
      section: plt.index,
      rank: rank(true, true),
      binding: STB_GLOBAL,
    });
  }
  return out;
}

/** GOT slot address → `name@plt`, from every SHT_RELA section. */
function gotSlotNames(data: ElfData, diags: Diagnostics): Map<bigint, string> {
  const names = new Map<bigint, string>();
  const sections = data.elf.sections;
  for (const rel of sections) {
    if (rel.type !== SHT_RELA) continue;
    const symtab = sections[rel.link];
    const linked = symtab?.type === SHT_DYNSYM ? sections[symtab.link] : undefined;
    const strtab = linked?.type === SectionType.Strtab ? linked : undefined;
    const count = Math.floor(rel.size / 24);
    for (let i = 0; i < count; i++) {
      const at = rel.offset + i * 24;
      const type = data.u32(at + 8);
      if (type !== R_JUMP_SLOT && type !== R_GLOB_DAT && type !== R_IRELATIVE) continue;
      const slot = data.word(at);
      if (type === R_IRELATIVE) {
        names.set(slot, `*ABS*+0x${data.word(at + 16).toString(16)}@plt`);
        continue;
      }
      const sym = data.u32(at + 12);
      if (symtab === undefined || strtab === undefined || sym * 24 + 24 > symtab.size) {
        diags.add(at, `section ${rel.index} (${rel.name}): relocation ${i}: symbol ${sym} not in a .dynsym`);
        continue;
      }
      const nameIndex = data.u32(symtab.offset + sym * 24);
      const name = data.string(strtab, nameIndex);
      if (name === undefined) {
        diags.add(
          at,
          `section ${rel.index} (${rel.name}): relocation ${i}: st_name 0x${nameIndex.toString(16)} outside ${strtab.name}`,
        );
        continue;
      }
      if (name !== "" && !names.has(slot)) names.set(slot, `${name}@plt`);
    }
  }
  return names;
}
