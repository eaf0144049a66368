/**
 * GNU symbol versions of `.dynsym` entries, as nm prints them: `memcpy@@GLIBC_2.14` for
 * a default version from `.gnu.version_d`, `memcpy@GLIBC_2.2.5` for a hidden one or
 * one from `.gnu.version_r`; versions 0 and 1 (local, global) add nothing. Chains are
 * walked with every offset bounds-checked and at most `sh_info` (and the section size)
 * steps; bad entries are skipped with a diagnostic.
 */

import { SectionType } from "../image/elf.js";
import type { Diagnostics, ElfData } from "./elf-data.js";

const SHT_GNU_VERDEF = 0x6ffffffd;
const SHT_GNU_VERNEED = 0x6ffffffe;
const SHT_GNU_VERSYM = 0x6fffffff;
const VERSYM_HIDDEN = 0x8000;

/** The version suffix of entry `i` of the symbol table in section `dynsym` ("" if none). */
export type VersionOf = (i: number) => string;

const NONE: VersionOf = () => "";

export function symbolVersions(data: ElfData, dynsym: number, diags: Diagnostics): VersionOf {
  const sections = data.elf.sections;
  const versym = sections.find((s) => s.type === SHT_GNU_VERSYM && s.link === dynsym);
  if (versym === undefined) return NONE;
  // Version index → [name, default?]
  const names = new Map<number, [string, boolean]>();
  for (const s of sections) {
    if (s.type !== SHT_GNU_VERDEF && s.type !== SHT_GNU_VERNEED) continue;
    const strtab = sections[s.link];
    if (strtab?.type !== SectionType.Strtab) {
      diags.add(s.headerOffset, `section ${s.index} (${s.name}): sh_link ${s.link} is not a string table`);
      continue;
    }
    const end = s.offset + s.size;
    const what = `section ${s.index} (${s.name})`;
    const name = (at: number, nameAt: number): string | undefined => {
      const n = data.string(strtab, data.u32(nameAt));
      if (n === undefined) diags.add(at, `${what}: name offset outside ${strtab.name}`);
      return n;
    };
    const steps = Math.min(s.info, s.size);
    let p = s.offset;
    for (let k = 0; k < steps && p + 16 <= end; k++) {
      if (s.type === SHT_GNU_VERDEF) {
        // Verdef: vd_ndx at 4, vd_aux at 12, vd_next at 16; Verdaux: vda_name at 0.
        if (p + 20 > end) break;
        const aux = p + data.u32(p + 12);
        if (aux + 8 > end) diags.add(p, `${what}: vd_aux beyond the section`);
        else {
          const n = name(p, aux);
          if (n !== undefined) names.set(data.u16(p + 4), [n, true]);
        }
      } else {
        // Verneed: vn_cnt at 2, vn_aux at 8, vn_next at 12; Vernaux: vna_other at 6,
        // vna_name at 8, vna_next at 12.
        let aux = p + data.u32(p + 8);
        for (let a = data.u16(p + 2); a > 0 && aux + 16 <= end; a--) {
          const n = name(aux, aux + 8);
          if (n !== undefined) names.set(data.u16(aux + 6), [n, false]);
          const next = data.u32(aux + 12);
          if (next === 0) break;
          aux += next;
        }
      }
      const next = data.u32(p + (s.type === SHT_GNU_VERDEF ? 16 : 12));
      if (next === 0) break;
      p += next;
    }
  }
  const count = Math.floor(versym.size / 2);
  return (i) => {
    if (i >= count) return "";
    const v = data.u16(versym.offset + i * 2);
    const found = names.get(v & ~VERSYM_HIDDEN);
    if ((v & ~VERSYM_HIDDEN) < 2 || found === undefined) return "";
    return `${found[1] && (v & VERSYM_HIDDEN) === 0 ? "@@" : "@"}${found[0]}`;
  };
}
