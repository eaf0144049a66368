/**
 * Kernel code for `ptkit perf`, placed where the kernel ran. A copy of /proc/kcore
 * (an ELF core file) holds run-time addresses already. A vmlinux holds link
 * addresses, but with KASLR the kernel ran elsewhere: perf records the kernel map as
 * an MMAP named `[kernel.kallsyms]<symbol>` (perf's reference symbol, `_text` or
 * `_stext`) whose pgoff is that symbol's run-time address (0 when kptr_restrict hid
 * it), and the vmlinux's own address for the symbol gives the relocation (perf's
 * ref_reloc_sym: map__set_kallsyms_ref_reloc_sym in tools/perf/util/machine.c).
 */

import { Diagnostics, ElfData } from "../analysis/elf-data.js";
import { readElfSymbols } from "../analysis/elf-symbols.js";
import { SymbolTable } from "../analysis/index.js";
import { splitBigInt, toBigInt } from "../base/halves.js";
import { type ElfFile, ElfType, type Image } from "../image/index.js";
import type { PerfTasks } from "../perf/index.js";
import { mapElf, readCodeFile } from "./flow-image.js";
import type { SessionIo } from "./io.js";

const KERNEL_MAP = "[kernel.kallsyms]";
/** perf's reference symbols, in the order it tries them (machine.c ref_reloc_sym_names). */
const REF_SYMBOLS = ["_text", "_stext"];
const MASK64 = 0xffff_ffff_ffff_ffffn;

/** Where the kernel's reference symbol was at run time, from the file's kernel MMAP. */
export interface KernelMap {
  /** The reference symbol's name ("" when the record does not name one). */
  symbol: string;
  address: bigint;
}

/** The kernel map a file recorded, if it recorded one with an address (the last one wins, as in perf). */
export function kernelMapOf(tasks: PerfTasks): KernelMap | undefined {
  let map: KernelMap | undefined;
  for (const c of tasks.changes) {
    if (c.kind !== "mmap" || !c.path.startsWith(KERNEL_MAP) || c.pgoff === 0n) continue;
    const name = c.path.slice(KERNEL_MAP.length);
    const bracket = name.indexOf("]");
    map = { symbol: bracket >= 0 ? name.slice(0, bracket) : name, address: c.pgoff };
  }
  return map;
}

/**
 * The relocation of a vmlinux: run-time minus link address of the reference symbol;
 * a message when it cannot be known.
 */
export function kernelRelocation(elf: ElfFile, map: KernelMap): bigint | string {
  const names = map.symbol ? [map.symbol] : REF_SYMBOLS;
  const symbols = readElfSymbols(new ElfData(elf), new Diagnostics());
  for (const name of names)
    for (let i = 0; i < symbols.count; i++)
      if (symbols.name(i) === name) return (map.address - symbols.value(i)) & MASK64;
  return `no ${names.join(" or ")} symbol to relocate it by`;
}

/** What loading a kernel file gave: an error message, or its symbols when asked for (a vmlinux's). */
export interface KernelLoad {
  error?: string;
  symbols?: SymbolTable;
}

/**
 * Map kernel file `path` into `image`: a core file as it is, a vmlinux at its
 * relocation, its sections named [kernel.kallsyms] as perf names the kernel; with
 * `symbols`, a vmlinux's symbols at the same relocation. `warn` hears of a vmlinux
 * left at its link address.
 */
export function loadKernel(
  io: SessionIo,
  image: Image,
  path: string,
  map: KernelMap | undefined,
  warn: (text: string) => void,
  symbols = false,
): KernelLoad {
  // (A core file is mapped as it was read: not read again.)
  const file = { name: path, base: undefined };
  const elf = readCodeFile(io, file);
  if (typeof elf === "string") return { error: elf };
  if (elf.type === ElfType.Core) {
    const error = mapElf(image, elf, file, undefined, warn);
    return error ? { error } : {};
  }
  let reloc = 0n;
  if (map) {
    const r = kernelRelocation(elf, map);
    if (typeof r === "string")
      warn(
        `warning: ${path}: the kernel ran with ${map.symbol || "_text"} at 0x${map.address.toString(16)}, but ${r}: left at its link address.`,
      );
    else reloc = r;
  }
  const at = { hi: 0, lo: 0 };
  let mapped = 0;
  for (const s of elf.loads) {
    // x86-64 links the per-CPU segment at 0: it is data, and not where it ends up.
    if (s.filesz === 0 || s.vaddrHi < 0x80000000) continue;
    splitBigInt(toBigInt(s.vaddrHi, s.vaddrLo) + reloc, at);
    if (image.addSection(KERNEL_MAP, elf.bytes, s.offset, s.filesz, at.hi, at.lo) >= 0) mapped++;
  }
  if (mapped === 0) warn(`warning: ${path}: no kernel code segments to map.`);
  return symbols ? { symbols: new SymbolTable(elf, { name: KERNEL_MAP, bias: reloc }) } : {};
}
