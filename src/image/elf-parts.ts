/**
 * An ELF file read in part: its headers and what a reader of it needs, the rest left
 * as zeros in a buffer of the file's size (allocated zeroed, it costs address space,
 * not memory, where nothing is read). A symbol table needs a few percent of a large
 * program (node's 99 MB binary: 17 MB of symbols and names beside 75 MB of code and
 * read-only data); a decoder needs the loadable segments and the symbols, not the
 * DWARF that is most of a binary built with `-g` or of a kernel's vmlinux.
 *
 * The caller parses the result as it would the whole file ({@link parseElf}): every
 * check applies to the bytes read, and the zeros lie where the caller does not look.
 * Where parts would not do (no ELF file, an image of a file without loadable segments,
 * hostile tables) the caller reads the file whole, as before, limits and errors alike.
 * The headers are found by parsing what was read so far, until the tables stand
 * still: the ELF header, then the program and section header tables (extended
 * counts in section 0), then the sections' names and notes, then the parts asked for.
 */
import { type ElfSection, SectionType, SegmentType, tryParseElf } from "./elf.js";

/** Copy `length` bytes of the file from `offset` into `into` at `at`. */
export type ReadAt = (offset: number, into: Uint8Array, at: number, length: number) => void;

/** What a reader of the file needs besides its headers. */
export interface ElfNeeds {
  /** Whether section `s` (its header and name read) is needed. */
  section(s: ElfSection): boolean;
  /**
   * Whether every PT_LOAD segment's bytes are needed (an image of the file; a file
   * without one, such as an object file, is then read whole).
   */
  loads: boolean;
}

/** The first bytes read: the ELF header, and the program headers that mostly follow it. */
const HEAD = 4096;
/**
 * Ranges closer than this are read as one (fewer reads; the bytes between cost little),
 * and past {@link MAX_READS} ranges the caller reads the whole file (hostile section tables).
 */
const GAP = 64 << 10;
const MAX_READS = 256;

/**
 * The file's bytes with the parts `needs` names read (see the module comment), or
 * undefined where the caller should read the whole file: one that does not parse as
 * ELF (its parse will say why), an image of one without PT_LOAD, hostile tables.
 */
export function readElfParts(size: number, read: ReadAt, needs: ElfNeeds): Uint8Array | undefined {
  const bytes = new Uint8Array(size);
  const done = new Ranges();
  /** Read what `ranges` hold that was not read yet: false (nothing read) past MAX_READS reads. */
  const take = (ranges: Array<[number, number]>): boolean => {
    const todo = done.missing(ranges, size);
    if (todo.length > MAX_READS) return false;
    for (const [from, to] of todo) read(from, bytes, from, to - from);
    done.add(todo);
    return true;
  };
  take([[0, Math.min(size, HEAD)]]);
  // The header tables, until another parse finds no more of them (extended counts),
  // then the section names and the notes (the build id).
  let named = false;
  for (let pass = 0; ; pass++) {
    const elf = tryParseElf(bytes, { strict: false });
    if (!("sections" in elf) || pass === 6) return undefined;
    const t = elf.headerTables;
    const parts: Array<[number, number]> = [
      [t.phOffset, t.phOffset + t.phSize],
      [t.shOffset, t.shOffset + t.shSize],
    ];
    if (done.missing(parts, size).length === 0) {
      if (named) {
        const wanted: Array<[number, number]> = [];
        for (const s of elf.sections)
          if (s.type !== SectionType.Nobits && s.type !== SectionType.Null && needs.section(s))
            wanted.push([s.offset, s.offset + s.size]);
        if (needs.loads) {
          // (A file of no loadable segment, such as an object file, is an image of its sections.)
          if (elf.loads.length === 0) return undefined;
          for (const g of elf.loads) wanted.push([g.offset, g.offset + g.filesz]);
        }
        return take(wanted) ? bytes : undefined;
      }
      // (The names' range from their header: a section past them may be bad, leaving no sections.)
      parts.push([t.namesOffset, t.namesOffset + t.namesSize]);
      for (const s of elf.sections)
        if (s.type === SectionType.Note) parts.push([s.offset, s.offset + s.size]);
      for (const g of elf.segments)
        if (g.type === SegmentType.Note) parts.push([g.offset, g.offset + g.filesz]);
      named = true;
    }
    if (!take(parts)) return undefined;
  }
}

/** File ranges read so far, as sorted disjoint [from, to) pairs. */
class Ranges {
  private readonly list: Array<[number, number]> = [];

  /**
   * The parts of `ranges` (clipped to the file) not read yet, merged where less than
   * {@link GAP} apart, in file order.
   */
  missing(ranges: ReadonlyArray<readonly [number, number]>, size: number): Array<[number, number]> {
    const want = ranges
      .map(([a, b]): [number, number] => [Math.max(0, Math.min(a, size)), Math.max(0, Math.min(b, size))])
      .filter(([a, b]) => a < b)
      .sort((x, y) => x[0] - y[0]);
    const merged: Array<[number, number]> = [];
    for (const r of want) {
      const last = merged[merged.length - 1];
      if (last !== undefined && r[0] <= last[1] + GAP) last[1] = Math.max(last[1], r[1]);
      else merged.push([r[0], r[1]]);
    }
    // Minus what was read.
    const out: Array<[number, number]> = [];
    for (const [a, b] of merged) {
      let from = a;
      for (const [c, d] of this.list) {
        if (d <= from || c >= b) continue;
        if (c > from) out.push([from, c]);
        from = Math.max(from, d);
        if (from >= b) break;
      }
      if (from < b) out.push([from, b]);
    }
    return out;
  }

  /** Ranges now read (each not read before). */
  add(ranges: ReadonlyArray<readonly [number, number]>): void {
    for (const [a, b] of ranges) this.list.push([a, b]);
    this.list.sort((x, y) => x[0] - y[0]);
    // Merge touching ranges.
    const l = this.list;
    let k = 0;
    for (let i = 1; i < l.length; i++) {
      if (l[i]![0] <= l[k]![1]) l[k]![1] = Math.max(l[k]![1], l[i]![1]);
      else l[++k] = l[i]!;
    }
    l.length = l.length === 0 ? 0 : k + 1;
  }
}
