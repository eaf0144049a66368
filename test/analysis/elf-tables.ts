/** Hand-built ELF64 string and symbol tables for the symbol tests, and x86-64 executables of them. */
import { ET_EXEC, type SecSpec, writeElf } from "../../tools/elf/elf-writer.js";

/** A string table of `names` (after the empty string at 0), and each name's offset in it. */
export function stringTable(names: readonly string[]): { bytes: Uint8Array; at: (name: string) => number } {
  const index = new Map<string, number>();
  const out: number[] = [0];
  for (const n of names) {
    index.set(n, out.length);
    for (const ch of n) out.push(ch.charCodeAt(0));
    out.push(0);
  }
  return { bytes: Uint8Array.from(out), at: (n) => index.get(n)! };
}

/**
 * An Elf64_Sym table (or with `layout` an Elf32_Sym one, or big-endian): the null
 * entry, then `entries` (st_name offset, st_info, st_shndx, st_value, st_size).
 */
export function symbolTable(
  entries: readonly (readonly [name: number, info: number, shndx: number, value: bigint, size: bigint])[],
  layout: { is64: boolean; le: boolean } = { is64: true, le: true },
): Uint8Array {
  const { is64, le } = layout;
  const size = is64 ? 24 : 16;
  const b = new Uint8Array((entries.length + 1) * size);
  const v = new DataView(b.buffer);
  entries.forEach(([name, info, shndx, value, bytes], k) => {
    const p = (k + 1) * size;
    v.setUint32(p, name, le);
    if (is64) {
      v.setUint8(p + 4, info);
      v.setUint16(p + 6, shndx, le);
      v.setBigUint64(p + 8, value, le);
      v.setBigUint64(p + 16, bytes, le);
    } else {
      v.setUint32(p + 4, Number(value), le);
      v.setUint32(p + 8, Number(bytes), le);
      v.setUint8(p + 12, info);
      v.setUint16(p + 14, shndx, le);
    }
  });
  return b;
}

/** A little-endian ELF64 x86-64 executable of `sections` (writeElf's layout: bytes and where things went). */
export function executable(sections: SecSpec[]): ReturnType<typeof writeElf> {
  return writeElf({ is64: true, le: true, type: ET_EXEC, machine: 62, sections });
}
