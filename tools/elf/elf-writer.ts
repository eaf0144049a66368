/**
 * A tiny ELF writer for the tests and the benchmark's large-footprint workload
 * (bench/large-program.ts): ELF32/ELF64, little/big endian, program headers with
 * their data, section headers with a .shstrtab, and an optional GNU build-id note
 * (as a PT_NOTE segment and a .note.gnu.build-id section).
 *
 * Layout: ELF header | program headers | segment data | note | section data |
 * .shstrtab | section headers. Offsets of everything are returned so tests can corrupt
 * individual fields.
 */

export const PT_LOAD = 1;
export const PT_DYNAMIC = 2;
export const PT_INTERP = 3;
export const PT_NOTE = 4;
export const PF_X = 1;
export const PF_W = 2;
export const PF_R = 4;
export const SHT_PROGBITS = 1;
export const SHT_STRTAB = 3;
export const SHT_NOTE = 7;
export const SHT_NOBITS = 8;
export const ET_EXEC = 2;
export const ET_DYN = 3;

export interface SegSpec {
  type?: number;
  flags?: number;
  vaddr: bigint;
  paddr?: bigint;
  /** File bytes (p_filesz = data.length). */
  data?: Uint8Array;
  /** p_memsz (default: data length). */
  memsz?: bigint;
  align?: bigint;
}

export interface SecSpec {
  name: string;
  type?: number;
  flags?: bigint;
  addr?: bigint;
  /** File bytes (ignored for SHT_NOBITS). */
  data?: Uint8Array;
  /** sh_size for SHT_NOBITS. */
  size?: bigint;
  addralign?: bigint;
  /** sh_link, sh_info and sh_entsize (a .symtab needs them: its .strtab, first global, 24). */
  link?: number;
  info?: number;
  entsize?: bigint;
}

export interface ElfSpec {
  is64: boolean;
  le: boolean;
  type?: number;
  machine?: number;
  entry?: bigint;
  segments?: SegSpec[];
  sections?: SecSpec[];
  buildId?: Uint8Array;
  /** Leave out the section header table (e_shoff = 0). */
  noSections?: boolean;
}

export interface ElfLayout {
  bytes: Uint8Array;
  phoff: number;
  phentsize: number;
  shoff: number;
  shentsize: number;
  /** File offset of each segment's data (in spec order, the note segment last). */
  segOffsets: number[];
  /** File offset of each section's data (index 0 is the null section). */
  secOffsets: number[];
  /** File offset of the build-id note, or -1. */
  noteOffset: number;
  /** Index of .shstrtab, or 0. */
  shstrndx: number;
  /** Section names in table order (index 0 is ""). */
  names: string[];
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

export function buildIdNote(id: Uint8Array, le: boolean): Uint8Array {
  const out = new Uint8Array(12 + 4 + align(id.length, 4));
  const v = new DataView(out.buffer);
  v.setUint32(0, 4, le);
  v.setUint32(4, id.length, le);
  v.setUint32(8, 3, le);
  out.set([0x47, 0x4e, 0x55, 0], 12);
  out.set(id, 16);
  return out;
}

export function writeElf(spec: ElfSpec): ElfLayout {
  const { is64, le } = spec;
  const ehsize = is64 ? 64 : 52;
  const phentsize = is64 ? 56 : 32;
  const shentsize = is64 ? 64 : 40;
  const segs: SegSpec[] = [...(spec.segments ?? [])];
  let note: Uint8Array | undefined;
  if (spec.buildId) {
    note = buildIdNote(spec.buildId, le);
    segs.push({ type: PT_NOTE, flags: PF_R, vaddr: 0n, data: note, align: 4n });
  }
  const secs: SecSpec[] = spec.noSections ? [] : [...(spec.sections ?? [])];
  if (note && !spec.noSections)
    secs.push({ name: ".note.gnu.build-id", type: SHT_NOTE, data: note, addralign: 4n });

  const phoff = segs.length > 0 ? ehsize : 0;
  let off = ehsize + segs.length * phentsize;
  const segOffsets: number[] = [];
  let noteOffset = -1;
  for (const s of segs) {
    off = align(off, 16);
    segOffsets.push(off);
    if (s.data === note && note) noteOffset = off;
    off += s.data?.length ?? 0;
  }
  const secOffsets: number[] = [0];
  for (const s of secs) {
    off = align(off, 16);
    secOffsets.push(off);
    if (s.type !== SHT_NOBITS) off += s.data?.length ?? 0;
  }
  // .shstrtab
  const names = ["", ...secs.map((s) => s.name), ".shstrtab"];
  const nameOffsets: number[] = [];
  const strBytes: number[] = [];
  for (const n of names) {
    nameOffsets.push(strBytes.length);
    if (n === "" && strBytes.length > 0) continue;
    for (const ch of n) strBytes.push(ch.charCodeAt(0));
    strBytes.push(0);
  }
  nameOffsets[0] = 0;
  const withSections = !spec.noSections;
  let strOff = 0;
  let shoff = 0;
  if (withSections) {
    strOff = align(off, 16);
    off = strOff + strBytes.length;
    shoff = align(off, 8);
    off = shoff + names.length * shentsize;
  }
  const out = new Uint8Array(off);
  const v = new DataView(out.buffer);
  const w16 = (p: number, x: number) => v.setUint16(p, x, le);
  const w32 = (p: number, x: number) => v.setUint32(p, x, le);
  const w64 = (p: number, x: bigint) => v.setBigUint64(p, BigInt.asUintN(64, x), le);
  const word = (p: number, x: bigint) => (is64 ? w64(p, x) : w32(p, Number(BigInt.asUintN(32, x))));

  out.set([0x7f, 0x45, 0x4c, 0x46, is64 ? 2 : 1, le ? 1 : 2, 1, 0], 0);
  w16(16, spec.type ?? ET_EXEC);
  w16(18, spec.machine ?? (is64 ? 62 : 3));
  w32(20, 1);
  word(24, spec.entry ?? 0n);
  const wsz = is64 ? 8 : 4;
  word(24 + wsz, BigInt(phoff));
  word(24 + 2 * wsz, BigInt(shoff));
  const f = 24 + 3 * wsz;
  w32(f, 0);
  w16(f + 4, ehsize);
  w16(f + 6, phentsize);
  w16(f + 8, segs.length);
  w16(f + 10, shentsize);
  w16(f + 12, withSections ? names.length : 0);
  w16(f + 14, withSections ? names.length - 1 : 0);

  segs.forEach((s, i) => {
    const p = phoff + i * phentsize;
    const data = s.data ?? new Uint8Array(0);
    out.set(data, segOffsets[i]!);
    const filesz = BigInt(data.length);
    const memsz = s.memsz ?? filesz;
    const fileOff = data.length > 0 ? BigInt(segOffsets[i]!) : 0n;
    w32(p, s.type ?? PT_LOAD);
    if (is64) {
      w32(p + 4, s.flags ?? PF_R);
      w64(p + 8, fileOff);
      w64(p + 16, s.vaddr);
      w64(p + 24, s.paddr ?? s.vaddr);
      w64(p + 32, filesz);
      w64(p + 40, memsz);
      w64(p + 48, s.align ?? 0x1000n);
    } else {
      w32(p + 4, Number(fileOff));
      w32(p + 8, Number(BigInt.asUintN(32, s.vaddr)));
      w32(p + 12, Number(BigInt.asUintN(32, s.paddr ?? s.vaddr)));
      w32(p + 16, Number(filesz));
      w32(p + 20, Number(BigInt.asUintN(32, memsz)));
      w32(p + 24, s.flags ?? PF_R);
      w32(p + 28, Number(s.align ?? 0x1000n));
    }
  });

  if (withSections) {
    out.set(strBytes, strOff);
    const all: (SecSpec & { off: number })[] = [
      { name: "", type: 0, off: 0 },
      ...secs.map((s, i) => ({ ...s, off: secOffsets[i + 1]! })),
      { name: ".shstrtab", type: SHT_STRTAB, data: Uint8Array.from(strBytes), off: strOff },
    ];
    all.forEach((s, i) => {
      const p = shoff + i * shentsize;
      const type = s.type ?? SHT_PROGBITS;
      if (type !== 0 && type !== SHT_NOBITS && s.data) out.set(s.data, s.off);
      const size = type === SHT_NOBITS ? (s.size ?? 0n) : BigInt(s.data?.length ?? 0);
      w32(p, nameOffsets[i]!);
      w32(p + 4, type);
      if (is64) {
        w64(p + 8, s.flags ?? 0n);
        w64(p + 16, s.addr ?? 0n);
        w64(p + 24, BigInt(s.off));
        w64(p + 32, size);
        w32(p + 40, s.link ?? 0);
        w32(p + 44, s.info ?? 0);
        w64(p + 48, s.addralign ?? 1n);
        w64(p + 56, s.entsize ?? 0n);
      } else {
        w32(p + 8, Number(s.flags ?? 0n));
        w32(p + 12, Number(BigInt.asUintN(32, s.addr ?? 0n)));
        w32(p + 16, s.off);
        w32(p + 20, Number(BigInt.asUintN(32, size)));
        w32(p + 24, s.link ?? 0);
        w32(p + 28, s.info ?? 0);
        w32(p + 32, Number(s.addralign ?? 1n));
        w32(p + 36, Number(s.entsize ?? 0n));
      }
    });
  }
  return {
    bytes: out,
    phoff,
    phentsize,
    shoff,
    shentsize,
    segOffsets,
    secOffsets,
    noteOffset,
    shstrndx: withSections ? names.length - 1 : 0,
    names,
  };
}

/** Deterministic filler bytes. */
export function pattern(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A typical small ELF: text (R E), rodata (R), data+bss (RW), .text/.data/.bss sections, a build-id. */
export function sampleElf(
  is64: boolean,
  le: boolean,
  type = ET_EXEC,
  base = is64 ? 0x400000n : 0x8048000n,
): ElfLayout {
  const text = pattern(0x180, 1);
  const ro = pattern(0x40, 2);
  const data = pattern(0x30, 3);
  return writeElf({
    is64,
    le,
    type,
    entry: base + 0x10n,
    segments: [
      { flags: PF_R | PF_X, vaddr: base, data: text },
      { flags: PF_R, vaddr: base + 0x1000n, data: ro },
      { flags: PF_R | PF_W, vaddr: base + 0x2000n, data, memsz: 0x1000n },
      ...(type === ET_DYN
        ? [{ type: PT_DYNAMIC, flags: PF_R | PF_W, vaddr: base + 0x2000n, data: data.subarray(0, 0x10) }]
        : []),
    ],
    sections: [
      { name: ".text", type: SHT_PROGBITS, flags: 6n, addr: base, data: text, addralign: 16n },
      { name: ".rodata", type: SHT_PROGBITS, flags: 2n, addr: base + 0x1000n, data: ro },
      { name: ".data", type: SHT_PROGBITS, flags: 3n, addr: base + 0x2000n, data },
      { name: ".bss", type: SHT_NOBITS, flags: 3n, addr: base + 0x2030n, size: 0xfd0n },
    ],
    buildId: Uint8Array.from({ length: 20 }, (_, i) => (i * 17 + 3) & 0xff),
  });
}
