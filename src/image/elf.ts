/**
 * A hand-written ELF reader over a `Uint8Array`: ELF32 and ELF64, little and big
 * endian. It reads what the image layer needs (the ELF header, program headers, section
 * headers and the GNU build-id note) and validates every field it uses.
 *
 * Hostile input is normal input. Every truncated, overlapping or absurd field is
 * reported as an {@link ElfError} (a PtError, so the base layer's FileDiagnostic) that
 * names the field and the byte offset it was read from, e.g. `program header 3: p_offset 0x5000 + p_filesz 0x2000 beyond file size
 * 0x6000`. Nothing is read out of bounds (every structure is bounds-checked before its
 * fields are read), every loop is bounded by the file size or by a fixed limit, and
 * nothing is allocated from a header value: `p_memsz` beyond `p_filesz` is zero fill
 * that the image layer models without bytes, section names are decoded on first use.
 *
 * 64-bit addresses stay exact as unsigned 32-bit halves. File offsets and sizes are
 * Numbers: those that must lie inside the file are exact because the file is smaller
 * than 2^53 bytes, and `p_memsz` and `SHT_NOBITS` sizes above 2^53 - 1 are rejected as
 * absurd.
 */

import { ErrorCode, PtError } from "../base/errors.js";
import { cmp64, hex0x } from "../base/halves.js";
import { addSize, hex, MAX_SIZE, sum, TWO_32 } from "./addr.js";
import { cString } from "./c-string.js";

/** `e_type` values. */
export const ElfType = { None: 0, Rel: 1, Exec: 2, Dyn: 3, Core: 4 } as const;

/** `p_type` values the reader interprets (any other value is kept as is). */
export const SegmentType = {
  Null: 0,
  Load: 1,
  Dynamic: 2,
  Interp: 3,
  Note: 4,
  Shlib: 5,
  Phdr: 6,
  Tls: 7,
} as const;

/** `p_flags` bits. */
export const SegmentFlag = { X: 1, W: 2, R: 4 } as const;

/** `sh_type` values the reader interprets. */
export const SectionType = { Null: 0, Progbits: 1, Symtab: 2, Strtab: 3, Note: 7, Nobits: 8 } as const;

/** `n_type` of the GNU build-id note. */
export const NT_GNU_BUILD_ID = 3;

/** At most this many notes are scanned in all (real files have a handful). */
export const MAX_NOTES = 65536;

const PN_XNUM = 0xffff;
const SHN_XINDEX = 0xffff;

/** A malformed ELF file: names the offending field and the byte offset it was read from. */
export class ElfError extends PtError {
  /** The field, e.g. `p_offset`, `e_shstrndx`, `n_descsz`. */
  readonly field: string;
  /** The message without the offset suffix. */
  readonly detail: string;

  constructor(field: string, offset: number, detail: string) {
    super(ErrorCode.BadFile, offset, undefined, detail);
    this.name = "ElfError";
    this.field = field;
    this.detail = detail;
  }
}

/** One program header. */
export interface ElfSegment {
  /** Index in the program header table. */
  readonly index: number;
  /** File offset of this program header. */
  readonly headerOffset: number;
  /** `p_type` ({@link SegmentType}). */
  readonly type: number;
  /** `p_flags` ({@link SegmentFlag} bits). */
  readonly flags: number;
  /** `p_offset`; with `filesz` inside the file for every type but PT_NULL. */
  readonly offset: number;
  readonly vaddrHi: number;
  readonly vaddrLo: number;
  readonly paddrHi: number;
  readonly paddrLo: number;
  /** `p_filesz`. */
  readonly filesz: number;
  /** `p_memsz`; for PT_LOAD at least `filesz` and at most 2^53 - 1. */
  readonly memsz: number;
  /** `p_align` (not validated; rounded to a double if a hostile value exceeds 2^53). */
  readonly align: number;
}

/** One section header; the name is decoded from `.shstrtab` on first use. */
export class ElfSection {
  private decoded: string | undefined;

  constructor(
    private readonly bytes: Uint8Array,
    /** Index in the section header table. */
    readonly index: number,
    /** File offset of this section header. */
    readonly headerOffset: number,
    /** `sh_name`. */
    readonly nameOffset: number,
    /** File offset of the name's first byte, or -1 when the file has no `.shstrtab`. */
    private readonly nameAt: number,
    /** `sh_type` ({@link SectionType}). */
    readonly type: number,
    /** Low 32 bits of `sh_flags` (every defined flag lives there). */
    readonly flags: number,
    readonly addrHi: number,
    readonly addrLo: number,
    /** `sh_offset`: exact and inside the file unless the type is SHT_NULL or SHT_NOBITS. */
    readonly offset: number,
    /** `sh_size`, at most 2^53 - 1. */
    readonly size: number,
    readonly link: number,
    readonly info: number,
  ) {}

  /** The section name (`""` without `.shstrtab`); the reader has checked it is NUL-terminated. */
  get name(): string {
    if (this.decoded === undefined)
      this.decoded = this.nameAt < 0 ? "" : cString(this.bytes, this.nameAt, this.bytes.length);
    return this.decoded;
  }
}

/** A parsed ELF file. Keeps a reference to `bytes`, which must not change afterwards. */
export interface ElfFile {
  readonly bytes: Uint8Array;
  readonly is64: boolean;
  readonly littleEndian: boolean;
  /** `e_ident[EI_OSABI]`. */
  readonly osabi: number;
  /** `e_type` ({@link ElfType}). */
  readonly type: number;
  /** `e_machine` (62 = x86-64, 3 = i386). */
  readonly machine: number;
  readonly flags: number;
  readonly entryHi: number;
  readonly entryLo: number;
  /** Every program header, in table order (PT_NULL entries included). */
  readonly segments: readonly ElfSegment[];
  /** The PT_LOAD segments, in table order; their address ranges do not overlap. */
  readonly loads: readonly ElfSegment[];
  /** There is a PT_DYNAMIC segment. */
  readonly hasDynamic: boolean;
  /** There is a PT_INTERP segment (an executable rather than a library, for ET_DYN). */
  readonly hasInterp: boolean;
  /** ET_DYN: loaded at a base chosen at run time (PIE or shared object). */
  readonly relocatable: boolean;
  /** Every section header, in table order; empty without a table (or after a lenient warning). */
  readonly sections: readonly ElfSection[];
  /** The NT_GNU_BUILD_ID descriptor (usually 20 bytes), or undefined. */
  readonly buildId: Uint8Array | undefined;
  /**
   * Where the program header table, the section header table and the section names
   * lie: file offset and bytes (0 bytes: none; the names' as their header says, also
   * when a later section header is bad). The section table's is at least its first
   * entry, where extended numbering keeps the counts (elf-parts.ts reads a file by them).
   */
  readonly headerTables: {
    phOffset: number;
    phSize: number;
    shOffset: number;
    shSize: number;
    namesOffset: number;
    namesSize: number;
  };
  /** Section header and note problems that `strict: false` turned into warnings. */
  readonly warnings: readonly ElfError[];
}

export interface ElfOptions {
  /**
   * true (default): any malformed field is an error. false: problems in the section
   * header table and the notes become {@link ElfFile.warnings} (sections are then empty,
   * the build-id possibly missing), so that the loadable segments, which are all an
   * image needs, can still be used. Errors in the ELF header and program headers are
   * always fatal.
   */
  strict?: boolean;
}

// Field offsets per class.
interface Layout {
  ehdrSize: number;
  entry: number;
  phoff: number;
  shoff: number;
  flags: number;
  ehsize: number;
  phentsize: number;
  phnum: number;
  shentsize: number;
  shnum: number;
  shstrndx: number;
  phdrSize: number;
  pType: number;
  pFlags: number;
  pOffset: number;
  pVaddr: number;
  pPaddr: number;
  pFilesz: number;
  pMemsz: number;
  pAlign: number;
  shdrSize: number;
  shName: number;
  shType: number;
  shFlags: number;
  shAddr: number;
  shOffset: number;
  shSize: number;
  shLink: number;
  shInfo: number;
}

const ELF32: Layout = {
  ehdrSize: 52,
  entry: 24,
  phoff: 28,
  shoff: 32,
  flags: 36,
  ehsize: 40,
  phentsize: 42,
  phnum: 44,
  shentsize: 46,
  shnum: 48,
  shstrndx: 50,
  phdrSize: 32,
  pType: 0,
  pOffset: 4,
  pVaddr: 8,
  pPaddr: 12,
  pFilesz: 16,
  pMemsz: 20,
  pFlags: 24,
  pAlign: 28,
  shdrSize: 40,
  shName: 0,
  shType: 4,
  shFlags: 8,
  shAddr: 12,
  shOffset: 16,
  shSize: 20,
  shLink: 24,
  shInfo: 28,
};

const ELF64: Layout = {
  ehdrSize: 64,
  entry: 24,
  phoff: 32,
  shoff: 40,
  flags: 48,
  ehsize: 52,
  phentsize: 54,
  phnum: 56,
  shentsize: 58,
  shnum: 60,
  shstrndx: 62,
  phdrSize: 56,
  pType: 0,
  pFlags: 4,
  pOffset: 8,
  pVaddr: 16,
  pPaddr: 24,
  pFilesz: 32,
  pMemsz: 40,
  pAlign: 48,
  shdrSize: 64,
  shName: 0,
  shType: 4,
  shFlags: 8,
  shAddr: 16,
  shOffset: 24,
  shSize: 32,
  shLink: 40,
  shInfo: 44,
};

/**
 * A tiny reader: a DataView, the byte order and word size, and the offset of the
 * structure being read (`at`); field reads are relative to it. The caller checks that
 * the whole structure lies inside the file before reading its fields. `word` reads an
 * Elf32 word or an Elf64 xword into `hi`/`lo` and returns it as a Number (exact below
 * 2^53, at least 2^53 otherwise).
 */
class Reader {
  readonly view: DataView;
  readonly size: number;
  le = true;
  is64 = false;
  at = 0;
  hi = 0;
  lo = 0;

  constructor(bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.size = bytes.byteLength;
  }

  u16(field: number): number {
    return this.view.getUint16(this.at + field, this.le);
  }

  u32(field: number): number {
    return this.view.getUint32(this.at + field, this.le);
  }

  word(field: number): number {
    const p = this.at + field;
    if (!this.is64) {
      this.hi = 0;
      this.lo = this.view.getUint32(p, this.le);
    } else if (this.le) {
      this.lo = this.view.getUint32(p, true);
      this.hi = this.view.getUint32(p + 4, true);
    } else {
      this.hi = this.view.getUint32(p, false);
      this.lo = this.view.getUint32(p + 4, false);
    }
    return this.hi * TWO_32 + this.lo;
  }

  /** The last word read, exactly, as `0x...`. */
  get hex(): string {
    return hex0x(this.hi, this.lo);
  }
}

function fail(field: string, offset: number, detail: string): never {
  throw new ElfError(field, offset, detail);
}

function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

interface SectionTable {
  offset: number;
  entsize: number;
  count: number;
  strndx: number;
}

/** Parse an ELF file; throws {@link ElfError} (a {@link PtError}, code BadFile) on malformed input. */
export function parseElf(bytes: Uint8Array, options: ElfOptions = {}): ElfFile {
  const strict = options.strict ?? true;
  const warnings: ElfError[] = [];
  const r = new Reader(bytes);
  const size = r.size;

  // --- ELF header.
  if (size < 16) fail("e_ident", size, `ELF header: e_ident truncated, file size ${hex(size)} < 0x10`);
  if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46)
    fail("EI_MAG", 0, "ELF header: e_ident[EI_MAG] is not 7f 45 4c 46: not an ELF file");
  const cls = bytes[4]!;
  if (cls !== 1 && cls !== 2)
    fail(
      "EI_CLASS",
      4,
      `ELF header: e_ident[EI_CLASS] ${hex(cls)} is neither ELFCLASS32 (1) nor ELFCLASS64 (2)`,
    );
  const data = bytes[5]!;
  if (data !== 1 && data !== 2)
    fail(
      "EI_DATA",
      5,
      `ELF header: e_ident[EI_DATA] ${hex(data)} is neither ELFDATA2LSB (1) nor ELFDATA2MSB (2)`,
    );
  if (bytes[6] !== 1)
    fail("EI_VERSION", 6, `ELF header: e_ident[EI_VERSION] ${hex(bytes[6]!)} is not EV_CURRENT (1)`);
  r.is64 = cls === 2;
  r.le = data === 1;
  const L = r.is64 ? ELF64 : ELF32;
  const bits = r.is64 ? 64 : 32;
  if (size < L.ehdrSize)
    fail(
      "ELF header",
      size,
      `ELF header: truncated, file size ${hex(size)} < ${hex(L.ehdrSize)} (ELF${bits} header)`,
    );
  r.at = 0;
  const type = r.u16(16);
  const machine = r.u16(18);
  const version = r.u32(20);
  if (version !== 1) fail("e_version", 20, `ELF header: e_version ${hex(version)} is not EV_CURRENT (1)`);
  r.word(L.entry);
  const entryHi = r.hi;
  const entryLo = r.lo;
  const phoff = r.word(L.phoff);
  const phoffHex = r.hex;
  const shoff = r.word(L.shoff);
  const shoffHex = r.hex;
  const flags = r.u32(L.flags);
  const ehsize = r.u16(L.ehsize);
  if (ehsize < L.ehdrSize)
    fail(
      "e_ehsize",
      L.ehsize,
      `ELF header: e_ehsize ${hex(ehsize)} smaller than the ELF${bits} header (${hex(L.ehdrSize)})`,
    );
  const phentsize = r.u16(L.phentsize);
  let phnum = r.u16(L.phnum);
  const shentsize = r.u16(L.shentsize);
  const shnum = r.u16(L.shnum);
  const shstrndx = r.u16(L.shstrndx);

  // --- Section header table geometry (entry 0 may hold extended counts).
  let table: SectionTable | undefined;
  const geometry = (): SectionTable | undefined => {
    if (shoff === 0) {
      if (shnum !== 0)
        fail("e_shnum", L.shnum, `ELF header: e_shnum ${shnum} but no section header table (e_shoff 0)`);
      return undefined;
    }
    if (shentsize < L.shdrSize)
      fail(
        "e_shentsize",
        L.shentsize,
        `ELF header: e_shentsize ${hex(shentsize)} smaller than an ELF${bits} section header (${hex(L.shdrSize)})`,
      );
    if (shoff < L.ehdrSize)
      fail(
        "e_shoff",
        L.shoff,
        `ELF header: section header table at e_shoff ${shoffHex} overlaps the ELF header`,
      );
    if (shoff + shentsize > size)
      fail(
        "e_shoff",
        L.shoff,
        `ELF header: e_shoff ${shoffHex} + section header ${hex(shentsize)} beyond file size ${hex(size)}`,
      );
    r.at = shoff;
    let count = shnum;
    let strndx = shstrndx;
    if (count === 0) count = r.word(L.shSize); // 0 here too: a lone header 0, no sections
    if (strndx === SHN_XINDEX) strndx = r.u32(L.shLink);
    if (count > 0 && shoff + count * shentsize > size)
      fail(
        shnum === 0 ? "sh_size" : "e_shnum",
        shnum === 0 ? shoff + L.shSize : L.shnum,
        `section header table: e_shoff ${shoffHex} + ${shnum === 0 ? "sh_size of section 0" : "e_shnum"} ${count} * e_shentsize ${hex(shentsize)} beyond file size ${hex(size)}`,
      );
    return { offset: shoff, entsize: shentsize, count, strndx };
  };
  if (phnum === PN_XNUM) {
    // The real count is in section header 0's sh_info: the table must be sound.
    table = geometry();
    if (table === undefined)
      fail(
        "e_phnum",
        L.phnum,
        "ELF header: e_phnum is PN_XNUM (0xffff) but there is no section header table",
      );
    r.at = table.offset;
    phnum = r.u32(L.shInfo);
  } else if (strict) {
    table = geometry();
  } else {
    try {
      table = geometry();
    } catch (e) {
      if (!(e instanceof ElfError)) throw e;
      warnings.push(e);
    }
  }

  // --- Program headers.
  const segments: ElfSegment[] = [];
  const loads: ElfSegment[] = [];
  let hasDynamic = false;
  let hasInterp = false;
  if (phnum > 0) {
    if (phentsize < L.phdrSize)
      fail(
        "e_phentsize",
        L.phentsize,
        `ELF header: e_phentsize ${hex(phentsize)} smaller than an ELF${bits} program header (${hex(L.phdrSize)})`,
      );
    if (phoff + phnum * phentsize > size)
      fail(
        "e_phoff",
        L.phoff,
        `program header table: e_phoff ${phoffHex} + e_phnum ${phnum} * e_phentsize ${hex(phentsize)} beyond file size ${hex(size)}`,
      );
    if (phoff < L.ehdrSize)
      fail("e_phoff", L.phoff, `program header table at e_phoff ${phoffHex} overlaps the ELF header`);
    for (let i = 0; i < phnum; i++) {
      const at = phoff + i * phentsize;
      r.at = at;
      const what = `program header ${i}`;
      const pType = r.u32(L.pType);
      const pFlags = r.u32(L.pFlags);
      const offset = r.word(L.pOffset);
      const offsetHex = r.hex;
      r.word(L.pVaddr);
      const vaddrHi = r.hi;
      const vaddrLo = r.lo;
      r.word(L.pPaddr);
      const paddrHi = r.hi;
      const paddrLo = r.lo;
      const filesz = r.word(L.pFilesz);
      const fileszHex = r.hex;
      const memsz = r.word(L.pMemsz);
      const memszHex = r.hex;
      const align = r.word(L.pAlign);
      if (pType !== SegmentType.Null) {
        if (filesz > size)
          fail("p_filesz", at + L.pFilesz, `${what}: p_filesz ${fileszHex} beyond file size ${hex(size)}`);
        if (offset > size)
          fail("p_offset", at + L.pOffset, `${what}: p_offset ${offsetHex} beyond file size ${hex(size)}`);
        if (offset + filesz > size)
          fail(
            "p_offset",
            at + L.pOffset,
            `${what}: p_offset ${offsetHex} + p_filesz ${fileszHex} beyond file size ${hex(size)}`,
          );
      }
      if (pType === SegmentType.Load) {
        if (memsz < filesz)
          fail(
            "p_memsz",
            at + L.pMemsz,
            `${what}: PT_LOAD p_memsz ${memszHex} smaller than p_filesz ${fileszHex}`,
          );
        if (memsz > MAX_SIZE)
          fail("p_memsz", at + L.pMemsz, `${what}: PT_LOAD p_memsz ${memszHex} absurd (above 2^53 - 1)`);
        if (memsz > 0) {
          addSize(vaddrHi, vaddrLo, memsz - 1);
          if (sum.carry !== 0)
            fail(
              "p_memsz",
              at + L.pMemsz,
              `${what}: PT_LOAD p_vaddr ${hex0x(vaddrHi, vaddrLo)} + p_memsz ${memszHex} wraps past 2^64`,
            );
        }
      }
      const seg: ElfSegment = {
        index: i,
        headerOffset: at,
        type: pType,
        flags: pFlags,
        offset,
        vaddrHi,
        vaddrLo,
        paddrHi,
        paddrLo,
        filesz,
        memsz,
        align,
      };
      segments.push(seg);
      if (pType === SegmentType.Load) loads.push(seg);
      else if (pType === SegmentType.Dynamic) hasDynamic = true;
      else if (pType === SegmentType.Interp) hasInterp = true;
    }
    checkLoadOverlap(loads, L);
  }

  // --- Section headers.
  let sections: ElfSection[] = [];
  /** Where the section names are (.shstrtab), once its header is read (even if a later section fails). */
  let namesAt = 0;
  let namesSize = 0;
  const readSections = (t: SectionTable): ElfSection[] => {
    const out: ElfSection[] = [];
    let strAt = -1;
    let strSize = 0;
    let lastNul = -1;
    if (t.strndx !== 0) {
      if (t.strndx >= t.count)
        fail(
          "e_shstrndx",
          L.shstrndx,
          `ELF header: e_shstrndx ${t.strndx} not below the section count ${t.count}`,
        );
      r.at = t.offset + t.strndx * t.entsize;
      const sType = r.u32(L.shType);
      if (sType !== SectionType.Strtab)
        fail(
          "sh_type",
          r.at + L.shType,
          `section ${t.strndx} (e_shstrndx): sh_type ${hex(sType)} is not SHT_STRTAB (3)`,
        );
      // Bounds are checked with every section below; read them here for the names.
      strAt = r.word(L.shOffset);
      strSize = r.word(L.shSize);
      namesAt = strAt;
      namesSize = strSize;
      if (strAt + strSize > size)
        fail(
          "sh_offset",
          r.at + L.shOffset,
          `section ${t.strndx} (e_shstrndx): sh_offset ${hex(strAt)} + sh_size ${hex(strSize)} beyond file size ${hex(size)}`,
        );
      // Any name starting at or before the last NUL is terminated.
      for (let p = strAt + strSize - 1; p >= strAt; p--) {
        if (bytes[p] === 0) {
          lastNul = p;
          break;
        }
      }
    }
    for (let i = 0; i < t.count; i++) {
      const at = t.offset + i * t.entsize;
      r.at = at;
      const what = `section ${i}`;
      const name = r.u32(L.shName);
      const sType = r.u32(L.shType);
      r.word(L.shFlags);
      const sFlags = r.lo;
      r.word(L.shAddr);
      const addrHi = r.hi;
      const addrLo = r.lo;
      const offset = r.word(L.shOffset);
      const offsetHex = r.hex;
      const sSize = r.word(L.shSize);
      const sizeHex = r.hex;
      const link = r.u32(L.shLink);
      const info = r.u32(L.shInfo);
      let nameAt = -1;
      if (sType !== SectionType.Null) {
        if (sSize > MAX_SIZE)
          fail("sh_size", at + L.shSize, `${what}: sh_size ${sizeHex} absurd (above 2^53 - 1)`);
        if (sType !== SectionType.Nobits) {
          if (offset > size)
            fail(
              "sh_offset",
              at + L.shOffset,
              `${what}: sh_offset ${offsetHex} beyond file size ${hex(size)}`,
            );
          if (offset + sSize > size)
            fail(
              "sh_offset",
              at + L.shOffset,
              `${what}: sh_offset ${offsetHex} + sh_size ${sizeHex} beyond file size ${hex(size)}`,
            );
        }
        if (strAt >= 0) {
          if (name >= strSize)
            fail(
              "sh_name",
              at + L.shName,
              `${what}: sh_name ${hex(name)} beyond .shstrtab size ${hex(strSize)}`,
            );
          if (strAt + name > lastNul)
            fail(
              "sh_name",
              at + L.shName,
              `${what}: sh_name ${hex(name)} is not NUL-terminated inside .shstrtab`,
            );
          nameAt = strAt + name;
        }
      }
      out.push(
        new ElfSection(bytes, i, at, name, nameAt, sType, sFlags, addrHi, addrLo, offset, sSize, link, info),
      );
    }
    return out;
  };

  // --- Build-id note: PT_NOTE segments, then SHT_NOTE sections if none had it.
  let buildId: Uint8Array | undefined;
  let notes = 0;
  const scanNotes = (start: number, length: number, alignment: number, what: string): void => {
    const end = start + length;
    const a = alignment === 8 ? 8 : 4;
    let p = start;
    while (p < end) {
      if (++notes > MAX_NOTES) fail("note", p, `${what}: more than ${MAX_NOTES} notes`);
      if (end - p < 12)
        fail(
          "note",
          p,
          `${what}: note at ${hex(p)} truncated, ${end - p} bytes left before ${hex(end)} (header is 12)`,
        );
      r.at = p;
      const namesz = r.u32(0);
      const descsz = r.u32(4);
      const nType = r.u32(8);
      const nameEnd = p + 12 + namesz;
      if (nameEnd > end)
        fail(
          "n_namesz",
          p,
          `${what}: note at ${hex(p)}: n_namesz ${hex(namesz)} beyond note end ${hex(end)}`,
        );
      // Padding counts from the notes' start, as readelf counts it: a section of notes
      // may start at any file offset (BOLT writes .note.bolt_info at an odd one).
      const descAt = start + alignUp(nameEnd - start, a);
      const descEnd = descAt + descsz;
      if (descsz > 0 && descEnd > end)
        fail(
          "n_descsz",
          p + 4,
          `${what}: note at ${hex(p)}: n_descsz ${hex(descsz)} beyond note end ${hex(end)}`,
        );
      if (
        buildId === undefined &&
        nType === NT_GNU_BUILD_ID &&
        namesz === 4 &&
        bytes[p + 12] === 0x47 &&
        bytes[p + 13] === 0x4e &&
        bytes[p + 14] === 0x55 &&
        bytes[p + 15] === 0
      )
        buildId = bytes.slice(descAt, descEnd);
      p = start + alignUp(descEnd - start, a);
    }
  };
  const readNotes = (): void => {
    for (const s of segments) {
      if (s.type !== SegmentType.Note) continue;
      scanNotes(s.offset, s.filesz, s.align, `program header ${s.index} (PT_NOTE)`);
    }
    // Some linkers (Go's) leave the build-id note out of every PT_NOTE.
    if (buildId !== undefined) return;
    for (const s of sections) {
      if (s.type !== SectionType.Note) continue;
      r.at = s.headerOffset;
      const addralign = r.word(r.is64 ? 48 : 32);
      scanNotes(s.offset, s.size, addralign, `section ${s.index} (SHT_NOTE)`);
    }
  };

  if (strict) {
    if (table !== undefined) sections = readSections(table);
    readNotes();
  } else {
    try {
      if (table !== undefined) sections = readSections(table);
    } catch (e) {
      if (!(e instanceof ElfError)) throw e;
      warnings.push(e);
      sections = [];
    }
    try {
      readNotes();
    } catch (e) {
      if (!(e instanceof ElfError)) throw e;
      warnings.push(e);
    }
  }

  return {
    bytes,
    is64: r.is64,
    littleEndian: r.le,
    osabi: bytes[7]!,
    type,
    machine,
    flags,
    entryHi,
    entryLo,
    segments,
    loads,
    hasDynamic,
    hasInterp,
    relocatable: type === ElfType.Dyn,
    sections,
    buildId,
    headerTables: {
      phOffset: phoff,
      phSize: phnum * phentsize,
      shOffset: table?.offset ?? 0,
      shSize: table === undefined ? 0 : Math.max(table.count, 1) * table.entsize,
      namesOffset: namesAt,
      namesSize: namesSize,
    },
    warnings,
  };
}

/** PT_LOAD address ranges must not overlap (ELF requires them ascending and disjoint). */
function checkLoadOverlap(loads: readonly ElfSegment[], L: Layout): void {
  const sorted = loads.filter((s) => s.memsz > 0);
  sorted.sort((a, b) => cmp64(a.vaddrHi, a.vaddrLo, b.vaddrHi, b.vaddrLo) || a.index - b.index);
  for (let k = 1; k < sorted.length; k++) {
    const prev = sorted[k - 1]!;
    const cur = sorted[k]!;
    addSize(prev.vaddrHi, prev.vaddrLo, prev.memsz - 1);
    if (cmp64(cur.vaddrHi, cur.vaddrLo, sum.hi, sum.lo) <= 0) {
      const later = cur.index > prev.index ? cur : prev;
      const other = later === cur ? prev : cur;
      fail(
        "p_vaddr",
        later.headerOffset + L.pVaddr,
        `program header ${later.index}: PT_LOAD p_vaddr ${hex0x(later.vaddrHi, later.vaddrLo)} + p_memsz ${hex(later.memsz)} overlaps program header ${other.index} (p_vaddr ${hex0x(other.vaddrHi, other.vaddrLo)} + p_memsz ${hex(other.memsz)})`,
      );
    }
  }
}

/** Like {@link parseElf} but returns the error instead of throwing it. */
export function tryParseElf(bytes: Uint8Array, options: ElfOptions = {}): ElfFile | ElfError {
  try {
    return parseElf(bytes, options);
  } catch (e) {
    if (e instanceof ElfError) return e;
    throw e;
  }
}

/** `p_flags` as readelf prints them: "R E", "RW ", ... */
export function segmentFlagsString(flags: number): string {
  return `${flags & SegmentFlag.R ? "R" : " "}${flags & SegmentFlag.W ? "W" : " "}${flags & SegmentFlag.X ? "E" : " "}`;
}

/** The build-id as lower-case hex, or undefined. */
export function buildIdHex(elf: ElfFile): string | undefined {
  if (elf.buildId === undefined) return undefined;
  let s = "";
  for (const b of elf.buildId) s += b.toString(16).padStart(2, "0");
  return s;
}

/** The lowest PT_LOAD address (what a load base relocates), or undefined without PT_LOAD. */
export function lowestLoad(elf: ElfFile): { hi: number; lo: number } | undefined {
  let best: ElfSegment | undefined;
  for (const s of elf.loads)
    if (!best || cmp64(s.vaddrHi, s.vaddrLo, best.vaddrHi, best.vaddrLo) < 0) best = s;
  return best && { hi: best.vaddrHi, lo: best.vaddrLo };
}
