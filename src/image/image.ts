/**
 * Memory images: what the traced code looked like, for the flow decoder.
 *
 * An {@link Image} is one address space: a sorted list of disjoint {@link Section}s,
 * each a byte range of a file (an ELF PT_LOAD segment, a raw dump) or zero fill (the
 * `p_memsz` beyond `p_filesz` of a segment), mapped at a 64-bit address. As in libipt's
 * `pt_image_add`, a new section replaces the parts of older sections it overlaps: they
 * are trimmed or split, and their remaining parts keep their file offsets.
 *
 * The flow decoder's fast path is {@link Image.find}: binary search over the sorted
 * sections with the last hit cached, filling a caller-owned {@link ImageHit} with
 * (bytes, offset, available) and allocating nothing. Missing memory is `-ErrorCode.NoMap`.
 *
 * An {@link ImageSet} maps address spaces (CR3 and VMCS base, as PIP and VMCS packets
 * report them) to images; every image in a set falls back to the set's default image,
 * where code shared by all address spaces (the kernel) goes.
 *
 * Addresses are exact 64-bit values as unsigned 32-bit halves; section sizes are
 * Numbers below 2^53. Nothing here throws on a hot path or uses a Node-only API.
 */

import { ErrorCode } from "../base/errors.js";
import { cmp64, hex0x, toBigInt } from "../base/halves.js";
import { addSize, diff64, MAX_SIZE, sum, TWO_32 } from "./addr.js";
import { type ElfFile, lowestLoad } from "./elf.js";

/**
 * Shared zero bytes that zero-fill sections hand out through {@link ImageHit.bytes}.
 * Read-only by contract: never write to it.
 */
export const ZERO_FILL: Uint8Array = new Uint8Array(4096);

/** A mapped byte range. Immutable: trimming or splitting makes new sections. */
export class Section {
  constructor(
    /** What it came from (file name, label); {@link Image.removeByName} matches it. */
    readonly name: string,
    /** Set when added, shared by the parts a split leaves (like libipt's isid). */
    readonly id: number,
    readonly startHi: number,
    readonly startLo: number,
    /** Inclusive last address (a section may end at 0xffffffffffffffff). */
    readonly lastHi: number,
    readonly lastLo: number,
    /** Bytes, 1 <= size <= 2^53 - 1. */
    readonly size: number,
    /** The backing bytes (usually a whole file), or null for zero fill. */
    readonly bytes: Uint8Array | null,
    /** Index in `bytes` of the section's first byte (its file offset for a whole file). */
    readonly offset: number,
    /** ELF `p_flags` (R=4, W=2, X=1), or whatever the caller gave a raw section. */
    readonly flags: number,
  ) {}

  /** Start address (API edge). */
  get start(): bigint {
    return toBigInt(this.startHi, this.startLo);
  }

  /** Exclusive end address, up to 2^64 (API edge). */
  get end(): bigint {
    return this.start + BigInt(this.size);
  }

  /** Whether (hi:lo) lies in this section. */
  contains(hi: number, lo: number): boolean {
    return (
      (hi > this.startHi || (hi === this.startHi && lo >= this.startLo)) &&
      (hi < this.lastHi || (hi === this.lastHi && lo <= this.lastLo))
    );
  }
}

/** Where an address's bytes are: filled by {@link Image.find}, one instance reused. */
export class ImageHit {
  /** The backing bytes ({@link ZERO_FILL} for zero fill). */
  bytes: Uint8Array = ZERO_FILL;
  /** Index in `bytes` of the address's byte. */
  offset = 0;
  /**
   * Bytes mapped contiguously from `offset` in `bytes`: to the end of the section (at
   * most ZERO_FILL.length for zero fill), or to where the image's own sections shadow a
   * fallback image's. More memory may follow: find again at the address + available.
   */
  available = 0;
  /** The section. */
  section: Section | null = null;
}

export interface ElfLoadOptions {
  /** Section name (default "elf"), for {@link Image.removeByName}. */
  name?: string;
  /**
   * Load base, as libipt's ptxed takes it (`--elf file:base`): the lowest PT_LOAD is
   * mapped at the base and every segment keeps its distance from it (for a PIE or a
   * shared object linked at 0 the base is the load bias). Meant for ET_DYN; accepted for
   * ET_EXEC too, as ptxed does. A segment pushed past 2^64 is an error (ptxed would
   * wrap). Without a base, segments map at their p_vaddr.
   */
  baseHi?: number;
  baseLo?: number;
  /**
   * Map p_memsz beyond p_filesz as zero fill (default true), as memory looks at run
   * time. ptxed maps p_filesz only: false reproduces that.
   */
  zeroFill?: boolean;
}

let nextId = 1;

/** One address space. */
export class Image {
  /** Sorted by start address, disjoint. */
  private list: Section[] = [];
  /** The last section {@link find} hit, or null. */
  private last: Section | null = null;
  private changes = 0;

  constructor(
    /** A label for messages. */
    readonly name = "",
    /** Consulted where this image maps nothing (an {@link ImageSet}'s default image). */
    readonly fallback: Image | null = null,
  ) {}

  /** Counts modifications, so that users caching {@link ImageHit}s can revalidate. */
  get version(): number {
    return this.changes;
  }

  /** The sections, sorted by address (this image's own, not the fallback's). */
  get sections(): readonly Section[] {
    return this.list;
  }

  /** Remove every section. */
  clear(): void {
    this.list = [];
    this.touch();
  }

  /**
   * Map `size` bytes of `bytes` from `offset` at (startHi:startLo), or zero fill when
   * `bytes` is null; the new section replaces what it overlaps. Returns the section id,
   * or -ErrorCode.Invalid for an empty, out-of-range or address-wrapping range.
   */
  addSection(
    name: string,
    bytes: Uint8Array | null,
    offset: number,
    size: number,
    startHi: number,
    startLo: number,
    flags = 0,
  ): number {
    if (!Number.isSafeInteger(size) || size < 1 || size > MAX_SIZE) return -ErrorCode.Invalid;
    if (!isU32(startHi) || !isU32(startLo)) return -ErrorCode.Invalid;
    if (bytes !== null && (!Number.isSafeInteger(offset) || offset < 0 || offset + size > bytes.length))
      return -ErrorCode.Invalid;
    addSize(startHi, startLo, size - 1);
    if (sum.carry !== 0) return -ErrorCode.Invalid;
    const id = nextId++;
    this.insert(
      new Section(name, id, startHi, startLo, sum.hi, sum.lo, size, bytes, bytes ? offset : 0, flags),
    );
    return id;
  }

  /**
   * A raw dump at an address, like ptxed's `--raw file[:from[-to]]:base`: bytes
   * [from, to) of `bytes` (to defaults to the end and is truncated to it, as libipt
   * does) mapped at (baseHi:baseLo). Returns the section id, or -ErrorCode.Invalid when
   * `from` is not inside `bytes`, `to <= from`, or the range would wrap past 2^64.
   */
  addRaw(
    name: string,
    bytes: Uint8Array,
    baseHi: number,
    baseLo: number,
    from = 0,
    to: number = bytes.length,
    flags = 0,
  ): number {
    if (!Number.isSafeInteger(from) || from < 0 || from >= bytes.length) return -ErrorCode.Invalid;
    if (!(to > from)) return -ErrorCode.Invalid;
    const end = Math.min(to, bytes.length);
    return this.addSection(name, bytes, from, end - from, baseHi, baseLo, flags);
  }

  /**
   * Map an ELF file's PT_LOAD segments (see {@link ElfLoadOptions} for the base and zero
   * fill). All or nothing: returns the number of sections added, or -ErrorCode.Invalid
   * (nothing added) when a relocated segment would wrap past 2^64 or a base half is not
   * an unsigned 32-bit number. Later segments replace earlier ones where they overlap
   * (the parser rejects overlapping PT_LOADs, so this only happens with other files).
   */
  addElf(elf: ElfFile, options: ElfLoadOptions = {}): number {
    const name = options.name ?? "elf";
    const zeroFill = options.zeroFill ?? true;
    let rebase = false;
    let baseHi = 0;
    let baseLo = 0;
    let lowHi = 0;
    let lowLo = 0;
    if (options.baseHi !== undefined || options.baseLo !== undefined) {
      baseHi = options.baseHi ?? 0;
      baseLo = options.baseLo ?? 0;
      if (!isU32(baseHi) || !isU32(baseLo)) return -ErrorCode.Invalid;
      const low = lowestLoad(elf);
      if (low !== undefined) {
        rebase = true;
        lowHi = low.hi;
        lowLo = low.lo;
      }
    }
    // Plan every section first, so that a wrap leaves the image untouched.
    const plan: Section[] = [];
    for (const seg of elf.loads) {
      let startHi = seg.vaddrHi;
      let startLo = seg.vaddrLo;
      if (rebase) {
        // start = base + (vaddr - lowest): past 2^64 is an error, not a wrap.
        const borrow = startLo < lowLo ? 1 : 0;
        const dLo = (startLo - lowLo) >>> 0;
        const dHi = (startHi - lowHi - borrow) >>> 0;
        const lo = baseLo + dLo;
        const hi = baseHi + dHi + (lo >= TWO_32 ? 1 : 0);
        if (hi >= TWO_32) return -ErrorCode.Invalid;
        startHi = hi;
        startLo = lo >>> 0;
      }
      if (seg.filesz > 0) {
        addSize(startHi, startLo, seg.filesz - 1);
        if (sum.carry !== 0) return -ErrorCode.Invalid;
        plan.push(
          new Section(
            name,
            0,
            startHi,
            startLo,
            sum.hi,
            sum.lo,
            seg.filesz,
            elf.bytes,
            seg.offset,
            seg.flags,
          ),
        );
      }
      if (zeroFill && seg.memsz > seg.filesz) {
        addSize(startHi, startLo, seg.filesz);
        if (sum.carry !== 0) return -ErrorCode.Invalid;
        const zHi = sum.hi;
        const zLo = sum.lo;
        const zSize = seg.memsz - seg.filesz;
        addSize(zHi, zLo, zSize - 1);
        if (sum.carry !== 0) return -ErrorCode.Invalid;
        plan.push(new Section(name, 0, zHi, zLo, sum.hi, sum.lo, zSize, null, 0, seg.flags));
      }
    }
    for (const s of plan) {
      const id = nextId++;
      this.insert(
        new Section(s.name, id, s.startHi, s.startLo, s.lastHi, s.lastLo, s.size, s.bytes, s.offset, s.flags),
      );
    }
    return plan.length;
  }

  /** Remove every section (and every part of a split one) with this name; returns how many. */
  removeByName(name: string): number {
    return this.removeWhere((s) => s.name === name);
  }

  /** Remove the section (and its split parts) with this id; returns how many. */
  removeById(id: number): number {
    return this.removeWhere((s) => s.id === id);
  }

  private removeWhere(matches: (s: Section) => boolean): number {
    const keep = this.list.filter((s) => !matches(s));
    const removed = this.list.length - keep.length;
    if (removed > 0) {
      this.list = keep;
      this.touch();
    }
    return removed;
  }

  /**
   * Unmap [start, start + size): sections inside are removed, sections across an end
   * are trimmed or split. Returns the number of sections affected, or -ErrorCode.Invalid
   * for an empty or wrapping range.
   */
  removeRange(startHi: number, startLo: number, size: number): number {
    if (!Number.isSafeInteger(size) || size < 1 || !isU32(startHi) || !isU32(startLo))
      return -ErrorCode.Invalid;
    addSize(startHi, startLo, size - 1);
    if (sum.carry !== 0) return -ErrorCode.Invalid;
    const n = this.punch(startHi, startLo, sum.hi, sum.lo);
    if (n > 0) this.touch();
    return n;
  }

  /**
   * The fast path: where the byte at (ipHi:ipLo) is (both unsigned 32-bit halves, as
   * Packet.hi/lo and LastIp give them). Fills `hit` and returns 0, or
   * returns -ErrorCode.NoMap (leaving `hit` alone) when nothing maps it here or in the
   * fallback image. Allocates nothing.
   */
  find(ipHi: number, ipLo: number, hit: ImageHit): number {
    const c = this.last;
    if (
      c !== null &&
      (ipHi > c.startHi || (ipHi === c.startHi && ipLo >= c.startLo)) &&
      (ipHi < c.lastHi || (ipHi === c.lastHi && ipLo <= c.lastLo))
    ) {
      fill(hit, c, ipHi, ipLo);
      return 0;
    }
    return this.findSlow(ipHi, ipLo, hit);
  }

  private findSlow(ipHi: number, ipLo: number, hit: ImageHit): number {
    const list = this.list;
    // The first section starting above ip.
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = list[mid]!;
      if (s.startHi < ipHi || (s.startHi === ipHi && s.startLo <= ipLo)) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) {
      const s = list[lo - 1]!;
      if (ipHi < s.lastHi || (ipHi === s.lastHi && ipLo <= s.lastLo)) {
        this.last = s;
        fill(hit, s, ipHi, ipLo);
        return 0;
      }
    }
    const fb = this.fallback;
    if (fb === null) return -ErrorCode.NoMap;
    const status = fb.find(ipHi, ipLo, hit);
    if (status < 0) return status;
    // Our own next section shadows the fallback's bytes from its start on.
    if (lo < list.length) {
      const next = list[lo]!;
      const gap = diff64(next.startHi, next.startLo, ipHi, ipLo);
      if (gap < hit.available) hit.available = gap;
    }
    return 0;
  }

  /**
   * Copy up to `size` bytes at (ipHi:ipLo) into `out` from `outOffset`, crossing from
   * section to section as long as memory is contiguous (libipt's pt_image_read stops at
   * a section's end and its instruction decoder reads on; this does both at once).
   * Stops at the first unmapped byte and at 2^64. Returns the number of bytes copied, or
   * -ErrorCode.NoMap when the first byte is unmapped, -ErrorCode.Invalid when `size` or
   * `outOffset` do not fit `out`.
   */
  read(ipHi: number, ipLo: number, out: Uint8Array, size: number, outOffset = 0): number {
    if (!(Number.isInteger(size) && Number.isInteger(outOffset) && size >= 0 && outOffset >= 0))
      return -ErrorCode.Invalid;
    if (outOffset + size > out.length) return -ErrorCode.Invalid;
    const hit = scratchHit;
    let done = 0;
    let hi = ipHi;
    let lo = ipLo;
    while (done < size) {
      if (this.find(hi, lo, hit) < 0) return done > 0 ? done : -ErrorCode.NoMap;
      const n = Math.min(hit.available, size - done);
      const src = hit.bytes;
      const from = hit.offset;
      if (n <= 64) for (let k = 0; k < n; k++) out[outOffset + done + k] = src[from + k]!;
      else out.set(src.subarray(from, from + n), outOffset + done);
      done += n;
      addSize(hi, lo, n);
      if (sum.carry !== 0) break; // read up to 0xffffffffffffffff
      hi = sum.hi;
      lo = sum.lo;
    }
    return done;
  }

  private touch(): void {
    this.last = null;
    this.changes++;
  }

  /** Add a section, replacing the parts of older ones it overlaps. */
  private insert(s: Section): void {
    this.punch(s.startHi, s.startLo, s.lastHi, s.lastLo);
    const list = this.list;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = list[mid]!;
      if (cmp64(m.startHi, m.startLo, s.startHi, s.startLo) < 0) lo = mid + 1;
      else hi = mid;
    }
    list.splice(lo, 0, s);
    this.touch();
  }

  /**
   * Unmap [a, b] (inclusive): remove sections inside, keep the parts of sections that
   * stick out in front of a or behind b. Returns the number of sections affected.
   */
  private punch(aHi: number, aLo: number, bHi: number, bLo: number): number {
    const list = this.list;
    // The first section whose last address is >= a.
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = list[mid]!;
      if (cmp64(m.lastHi, m.lastLo, aHi, aLo) < 0) lo = mid + 1;
      else hi = mid;
    }
    const first = lo;
    let end = first;
    const keep: Section[] = [];
    while (end < list.length) {
      const s = list[end]!;
      if (cmp64(s.startHi, s.startLo, bHi, bLo) > 0) break;
      if (cmp64(s.startHi, s.startLo, aHi, aLo) < 0) {
        // Front part [s.start, a - 1].
        keep.push(slice(s, 0, diff64(aHi, aLo, s.startHi, s.startLo)));
      }
      if (cmp64(s.lastHi, s.lastLo, bHi, bLo) > 0) {
        // Back part [b + 1, s.last].
        const skip = diff64(bHi, bLo, s.startHi, s.startLo) + 1;
        keep.push(slice(s, skip, s.size - skip));
      }
      end++;
    }
    if (end > first) list.splice(first, end - first, ...keep);
    return end - first;
  }
}

/** The shared scratch record of {@link Image.read} (reads do not nest). */
const scratchHit = new ImageHit();

function isU32(n: number): boolean {
  return n >>> 0 === n;
}

function fill(hit: ImageHit, s: Section, ipHi: number, ipLo: number): void {
  const d = (ipHi - s.startHi) * TWO_32 + (ipLo - s.startLo);
  hit.section = s;
  if (s.bytes !== null) {
    hit.bytes = s.bytes;
    hit.offset = s.offset + d;
    hit.available = s.size - d;
  } else {
    const left = s.size - d;
    hit.bytes = ZERO_FILL;
    hit.offset = 0;
    hit.available = Math.min(left, ZERO_FILL.length);
  }
}

/** The part [skip, skip + size) of a section. */
function slice(s: Section, skip: number, size: number): Section {
  addSize(s.startHi, s.startLo, skip);
  const startHi = sum.hi;
  const startLo = sum.lo;
  addSize(startHi, startLo, size - 1);
  return new Section(
    s.name,
    s.id,
    startHi,
    startLo,
    sum.hi,
    sum.lo,
    size,
    s.bytes,
    s.bytes === null ? 0 : s.offset + skip,
    s.flags,
  );
}

/** libipt's pt_asid_no_cr3 / pt_asid_no_vmcs: both halves all ones, "any". */
export const ASID_ANY = 0xffffffff;

interface Entry {
  cr3Hi: number;
  cr3Lo: number;
  vmcsHi: number;
  vmcsLo: number;
  image: Image;
}

function keyOf(cr3Hi: number, cr3Lo: number, vmcsHi: number, vmcsLo: number): number {
  let h = Math.imul(cr3Lo ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ cr3Hi ^ (h >>> 13), 0xc2b2ae35);
  h = Math.imul(h ^ vmcsLo ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ vmcsHi ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Images per address space, keyed by CR3 and VMCS base (exact 64-bit halves; use
 * {@link ASID_ANY} for both halves of "any", as libipt's pt_asid does), plus a default
 * image that every other image falls back to.
 */
export class ImageSet {
  /** For code mapped in every address space (the kernel), and for traces without PIP. */
  readonly defaultImage: Image;
  private readonly map = new Map<number, Entry[]>();
  private count = 0;
  private lastCr3Hi = -1;
  private lastCr3Lo = -1;
  private lastVmcsHi = -1;
  private lastVmcsLo = -1;
  private lastImage: Image;

  constructor(defaultName = "default") {
    this.defaultImage = new Image(defaultName);
    this.lastImage = this.defaultImage;
  }

  /** Number of address-space images (the default image not counted). */
  get size(): number {
    return this.count;
  }

  /** The image of exactly this (CR3, VMCS) key, or undefined. */
  get(cr3Hi: number, cr3Lo: number, vmcsHi = ASID_ANY, vmcsLo = ASID_ANY): Image | undefined {
    const bucket = this.map.get(keyOf(cr3Hi, cr3Lo, vmcsHi, vmcsLo));
    if (bucket === undefined) return undefined;
    for (const e of bucket)
      if (e.cr3Hi === cr3Hi && e.cr3Lo === cr3Lo && e.vmcsHi === vmcsHi && e.vmcsLo === vmcsLo)
        return e.image;
    return undefined;
  }

  /** The image of exactly this key, created (falling back to the default image) if absent. */
  image(cr3Hi: number, cr3Lo: number, vmcsHi = ASID_ANY, vmcsLo = ASID_ANY): Image {
    const found = this.get(cr3Hi, cr3Lo, vmcsHi, vmcsLo);
    if (found !== undefined) return found;
    const k = keyOf(cr3Hi, cr3Lo, vmcsHi, vmcsLo);
    const image = new Image(`cr3 ${hex2(cr3Hi, cr3Lo)}, vmcs ${hex2(vmcsHi, vmcsLo)}`, this.defaultImage);
    const entry: Entry = { cr3Hi, cr3Lo, vmcsHi, vmcsLo, image };
    const bucket = this.map.get(k);
    if (bucket === undefined) this.map.set(k, [entry]);
    else bucket.push(entry);
    this.count++;
    this.lastCr3Hi = -1; // a more specific image may now exist
    return image;
  }

  /** Drop the image of exactly this key; returns whether there was one. */
  delete(cr3Hi: number, cr3Lo: number, vmcsHi = ASID_ANY, vmcsLo = ASID_ANY): boolean {
    const k = keyOf(cr3Hi, cr3Lo, vmcsHi, vmcsLo);
    const bucket = this.map.get(k);
    if (bucket === undefined) return false;
    const i = bucket.findIndex(
      (e) => e.cr3Hi === cr3Hi && e.cr3Lo === cr3Lo && e.vmcsHi === vmcsHi && e.vmcsLo === vmcsLo,
    );
    if (i < 0) return false;
    bucket.splice(i, 1);
    if (bucket.length === 0) this.map.delete(k);
    this.count--;
    this.lastCr3Hi = -1;
    return true;
  }

  /**
   * The image to decode in for this address space: the most specific existing one of
   * (cr3, vmcs), (cr3, any), (any, vmcs), else the default image. Allocates nothing; the
   * last answer is cached (PIP packets repeat the CR3 at every PSB).
   */
  lookup(cr3Hi: number, cr3Lo: number, vmcsHi = ASID_ANY, vmcsLo = ASID_ANY): Image {
    if (
      cr3Lo === this.lastCr3Lo &&
      cr3Hi === this.lastCr3Hi &&
      vmcsLo === this.lastVmcsLo &&
      vmcsHi === this.lastVmcsHi
    )
      return this.lastImage;
    const image =
      this.get(cr3Hi, cr3Lo, vmcsHi, vmcsLo) ??
      this.get(cr3Hi, cr3Lo, ASID_ANY, ASID_ANY) ??
      this.get(ASID_ANY, ASID_ANY, vmcsHi, vmcsLo) ??
      this.defaultImage;
    this.lastCr3Hi = cr3Hi;
    this.lastCr3Lo = cr3Lo;
    this.lastVmcsHi = vmcsHi;
    this.lastVmcsLo = vmcsLo;
    this.lastImage = image;
    return image;
  }

  /** Every address-space image with its key (API edge). */
  entries(): { cr3: bigint; vmcs: bigint; image: Image }[] {
    const out: { cr3: bigint; vmcs: bigint; image: Image }[] = [];
    for (const bucket of this.map.values())
      for (const e of bucket)
        out.push({
          cr3: toBigInt(e.cr3Hi, e.cr3Lo),
          vmcs: toBigInt(e.vmcsHi, e.vmcsLo),
          image: e.image,
        });
    return out;
  }
}

function hex2(hi: number, lo: number): string {
  return hi === ASID_ANY && lo === ASID_ANY ? "any" : hex0x(hi, lo);
}
