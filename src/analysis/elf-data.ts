/**
 * Raw reads from a parsed ELF file for the analysis layer: words in the file's byte
 * order and class, the section header fields elf.ts does not expose, C strings inside a
 * string table, and the diagnostics that name the offset of skipped input.
 */

import type { Diagnostic } from "../base/diagnostic.js";
import { toBigInt } from "../base/halves.js";
import { nulAt, utf8Text } from "../image/c-string.js";
import type { ElfFile, ElfSection } from "../image/elf.js";

/** Something skipped in a hostile or unusual file, with the file offset it was read from. */
export type SymbolDiagnostic = Diagnostic;

/** Diagnostics kept per table; further ones are only counted. */
export const MAX_DIAGNOSTICS = 64;

/** A bounded diagnostic list. */
export class Diagnostics {
  readonly list: SymbolDiagnostic[] = [];
  count = 0;

  add(offset: number, message: string): void {
    if (++this.count <= MAX_DIAGNOSTICS) this.list.push({ offset, message });
  }
}

/** `sh_type` values the analysis layer reads beyond elf.ts's {@link SectionType}. */
export const SHT_RELA = 4;
export const SHT_DYNSYM = 11;
/** `sh_flags` bit of code sections. */
export const SHF_EXECINSTR = 4;

/** 2^64 - 1, for addresses computed as BigInts at construction time. */
export const MASK64 = (1n << 64n) - 1n;

/** A section's `sh_addr` as a BigInt. */
export function sectionAddr(s: ElfSection): bigint {
  return toBigInt(s.addrHi, s.addrLo);
}

/** Word reads at absolute file offsets; the caller checks bounds first. */
export class ElfData {
  readonly view: DataView;
  readonly le: boolean;
  readonly is64: boolean;
  readonly size: number;

  constructor(readonly elf: ElfFile) {
    const b = elf.bytes;
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    this.le = elf.littleEndian;
    this.is64 = elf.is64;
    this.size = b.byteLength;
  }

  u8(p: number): number {
    return this.elf.bytes[p]!;
  }

  u16(p: number): number {
    return this.view.getUint16(p, this.le);
  }

  u32(p: number): number {
    return this.view.getUint32(p, this.le);
  }

  /** An Elf64 xword (or Elf32 word) as a BigInt (construction time only). */
  word(p: number): bigint {
    if (!this.is64) return BigInt(this.u32(p));
    return this.view.getBigUint64(p, this.le);
  }

  /** `sh_entsize` of a section (elf.ts has validated the header lies in the file). */
  entsize(s: ElfSection): number {
    return Number(this.word(s.headerOffset + (this.is64 ? 56 : 36)));
  }

  /**
   * The NUL-terminated string at `index` in string table `strtab`, or undefined when the
   * index is outside the table or the string runs past its end.
   */
  string(strtab: ElfSection, index: number): string | undefined {
    if (index >= strtab.size) return undefined;
    const bytes = this.elf.bytes;
    const p = strtab.offset + index;
    const end = strtab.offset + strtab.size;
    const q = nulAt(bytes, p, end);
    return q === end ? undefined : utf8Text(bytes, p, q);
  }
}
