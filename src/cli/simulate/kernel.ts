/**
 * The stand-in kernel of executions converted from valgrind logs
 * (unit/exec/lackey-kernel.ts) as a small ELF file, so that `ptkit flow --elf` (and
 * ptxed) load it like the program's own files and the analysis outputs name its two
 * entry points instead of showing the kernel's address:
 *
 * | symbol           | address              | stands for |
 * |------------------|----------------------|------------|
 * | `kernel_syscall` | `0xffffffff81000000` | a system call (SYSRETQ back to the next instruction) |
 * | `kernel_trap`    | `0xffffffff81000010` | anything else (IRETQ back: signal, sigreturn, exception) |
 *
 * Layout: ELF header, one PT_LOAD (R+X) of the code at its address, the code, then
 * .symtab, .strtab, .shstrtab and the section headers (null, .text, .symtab,
 * .strtab, .shstrtab).
 */
import {
  IRET_OFFSET,
  IRET_SIZE,
  KERNEL_BASE_HI,
  KERNEL_BASE_LO,
  KERNEL_CODE,
  SYSRET_OFFSET,
  SYSRET_SIZE,
} from "../../unit/exec/lackey-kernel.js";

const EHDR = 64;
const PHDR = 56;
const SHDR = 64;
const SYM = 24;
/** File offset of the code in {@link kernelElf}'s file. */
export const KERNEL_ELF_CODE_AT = 0x80;
const CODE_AT = KERNEL_ELF_CODE_AT;

const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

/** NUL-separated names, starting with the empty name; the offset of each. */
function strtab(names: readonly string[]): { bytes: number[]; at: number[] } {
  const bytes = [0];
  const at: number[] = [];
  for (const n of names) {
    at.push(bytes.length);
    bytes.push(...ascii(n), 0);
  }
  return { bytes, at };
}

const align8 = (n: number) => (n + 7) & ~7;

/** The stand-in kernel's ELF file (x86-64, ET_EXEC, linked at the kernel base). */
export function kernelElf(): Uint8Array {
  const syms = [
    { name: "kernel_syscall", offset: SYSRET_OFFSET, size: SYSRET_SIZE },
    { name: "kernel_trap", offset: IRET_OFFSET, size: IRET_SIZE },
  ];
  const str = strtab(syms.map((s) => s.name));
  const shstr = strtab([".text", ".symtab", ".strtab", ".shstrtab"]);
  const symtabAt = align8(CODE_AT + KERNEL_CODE.length);
  const symtabSize = (syms.length + 1) * SYM;
  const strtabAt = symtabAt + symtabSize;
  const shstrtabAt = strtabAt + str.bytes.length;
  const shoff = align8(shstrtabAt + shstr.bytes.length);
  const bytes = new Uint8Array(shoff + 5 * SHDR);
  const v = new DataView(bytes.buffer);
  const u64 = (at: number, hi: number, lo: number) => {
    v.setUint32(at, lo, true);
    v.setUint32(at + 4, hi, true);
  };
  const base = (offset: number) => KERNEL_BASE_LO + offset;

  bytes.set([0x7f, ...ascii("ELF"), 2, 1, 1], 0); // 64-bit, little-endian, version 1
  v.setUint16(16, 2, true); // ET_EXEC
  v.setUint16(18, 62, true); // x86-64
  v.setUint32(20, 1, true);
  u64(24, KERNEL_BASE_HI, KERNEL_BASE_LO); // entry
  u64(32, 0, EHDR); // phoff
  u64(40, 0, shoff);
  v.setUint16(52, EHDR, true);
  v.setUint16(54, PHDR, true);
  v.setUint16(56, 1, true);
  v.setUint16(58, SHDR, true);
  v.setUint16(60, 5, true);
  v.setUint16(62, 4, true); // .shstrtab

  v.setUint32(EHDR, 1, true); // PT_LOAD
  v.setUint32(EHDR + 4, 5, true); // R+X
  u64(EHDR + 8, 0, CODE_AT);
  u64(EHDR + 16, KERNEL_BASE_HI, KERNEL_BASE_LO);
  u64(EHDR + 24, KERNEL_BASE_HI, KERNEL_BASE_LO);
  u64(EHDR + 32, 0, KERNEL_CODE.length);
  u64(EHDR + 40, 0, KERNEL_CODE.length);
  u64(EHDR + 48, 0, 0x10);

  bytes.set(KERNEL_CODE, CODE_AT);
  syms.forEach((s, k) => {
    const at = symtabAt + (k + 1) * SYM;
    v.setUint32(at, str.at[k]!, true);
    v.setUint8(at + 4, 0x12); // global function
    v.setUint16(at + 6, 1, true); // .text
    u64(at + 8, KERNEL_BASE_HI, base(s.offset));
    u64(at + 16, 0, s.size);
  });
  bytes.set(str.bytes, strtabAt);
  bytes.set(shstr.bytes, shstrtabAt);

  const section = (k: number, name: number, type: number, f: Record<string, number>) => {
    const at = shoff + k * SHDR;
    v.setUint32(at, name, true);
    v.setUint32(at + 4, type, true);
    u64(at + 8, 0, f.flags ?? 0);
    if (f.addrLo !== undefined) u64(at + 16, KERNEL_BASE_HI, f.addrLo);
    u64(at + 24, 0, f.offset!);
    u64(at + 32, 0, f.size!);
    v.setUint32(at + 40, f.link ?? 0, true);
    v.setUint32(at + 44, f.info ?? 0, true);
    u64(at + 48, 0, f.align ?? 1);
    u64(at + 56, 0, f.entsize ?? 0);
  };
  section(1, shstr.at[0]!, 1, {
    flags: 6,
    addrLo: KERNEL_BASE_LO,
    offset: CODE_AT,
    size: KERNEL_CODE.length,
  });
  section(2, shstr.at[1]!, 2, {
    offset: symtabAt,
    size: symtabSize,
    link: 3,
    info: 1,
    align: 8,
    entsize: SYM,
  });
  section(3, shstr.at[2]!, 3, { offset: strtabAt, size: str.bytes.length });
  section(4, shstr.at[3]!, 3, { offset: shstrtabAt, size: shstr.bytes.length });
  return bytes;
}
