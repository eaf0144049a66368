/**
 * One image section as a decoder sees it while it works inside it (libipt's mapped
 * section): where it is, which part of it the image maps, and its caches. Addresses
 * in it are offsets from an origin (plain small integers), which is what the block
 * decoder's fast path and the instruction decoder's walk work in.
 */

import * as errors from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import * as addr from "../image/addr.js";
import type { Image, ImageHit, Section } from "../image/index.js";
import * as isa from "../isa/index.js";
import { type InsnClass, InsnInfo } from "../isa/index.js";
import * as flowClass from "./flow-class.js";
import type { FlowInsn } from "./flow-insn.js";
import * as sectionCache from "./section-cache.js";
import { SectionCache, type SectionCaches } from "./section-cache.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { addSize, diff64, sum } = addr;
const { decodeInsn, ExecMode, InsnFlag, MAX_INSN_LENGTH, plainLength64 } = isa;
type ExecMode = isa.ExecMode;
const { ErrorCode } = errors;
const { classify } = flowClass;
const { InsnMeta, slot } = sectionCache;

/** Bytes copied for decoding near a section's end; views[n] is the first n. */
const scratch = new Uint8Array(MAX_INSN_LENGTH);
const views: Uint8Array[] = [];
for (let n = 0; n <= MAX_INSN_LENGTH; n++) views.push(scratch.subarray(0, n));
const info = new InsnInfo();

/**
 * Sections this large or larger get no caches and are seen through windows of
 * HUGE_WINDOW bytes, so that offsets stay below 2^30 (small integers to the JIT).
 */
const MAX_CACHED_SECTION = 0x4000_0000;
const HUGE_WINDOW = 0x4000_0000;

/** Sections a view remembers its place in, besides the current one (see {@link SectionView.recall}). */
const RECENT = 4;

/**
 * Where a view is in one section, as {@link SectionView.fill} works it out: the view's
 * own, and the copies it keeps of the last few (see {@link SectionView.recall}).
 */
class Place {
  /** The section, or null when none is current. */
  section: Section | null = null;
  /** Its caches; null for a section too large to cache. */
  cache: SectionCache | null = null;
  /** The origin offsets are relative to: the section's start, or near the address in a huge one. */
  baseHi = 0;
  baseLo = 0;
  /** Index of the origin in the section's bytes (its offset in the section plus the section's). */
  byteBase = 0;
  /**
   * The offsets [winBegin, winEnd) where the image maps this section: all of it (or a
   * window of a huge one), or for a section of an image set's default image the part
   * the image's own sections do not shadow.
   */
  winBegin = 0;
  winEnd = 0;
  /** Where reading stops: the window's end, or for a huge section its real end. */
  readEnd = 0;

  /** Take `from`'s place. */
  copyFrom(from: Place): void {
    this.section = from.section;
    this.cache = from.cache;
    this.baseHi = from.baseHi;
    this.baseLo = from.baseLo;
    this.byteBase = from.byteBase;
    this.winBegin = from.winBegin;
    this.winEnd = from.winEnd;
    this.readEnd = from.readEnd;
  }
}
// Addresses: see doubleFields.
doubleFields(new Place(), ["baseHi", "baseLo"]);

export class SectionView extends Place {
  /** Sections get no caches (a reader that decodes each instruction about once). */
  uncached = false;
  /** Offset of the address last looked up. */
  off = 0;
  /** The offset of the last instruction {@link plainRun} stepped over. */
  runLast = 0;
  /** The last lookup had to find the section in the image. */
  filled = false;
  private version = -1;
  private image: Image | null = null;
  /**
   * The last sections filled, and the image and version they were found in: code
   * going back and forth between a program and its libraries switches sections at
   * nearly every call and return (2.2 million times on the large-footprint workload),
   * and the image's look-up and the caches' WeakMap cost 85 ns a time.
   */
  private readonly places: Place[] = Array.from({ length: RECENT }, () => new Place());
  private placeNext = 0;
  private placesImage: Image | null = null;
  private placesVersion = -1;

  clear(): void {
    this.section = null;
    this.cache = null;
  }

  /**
   * Make (hi:lo) current, from this section if it has it, else from `image`: the
   * section id, or -NoMap. Sets {@link off} and {@link filled}.
   */
  lookup(image: Image, caches: SectionCaches, hit: ImageHit, hi: number, lo: number): number {
    const s = this.section;
    if (s !== null && this.image === image && this.version === image.version) {
      const d = diff64(hi, lo, this.baseHi, this.baseLo);
      if (d >= this.winBegin && d < this.winEnd) {
        this.off = d | 0;
        this.filled = false;
        return s.id;
      }
    }
    this.filled = true;
    if (this.recall(image, hi, lo)) return this.section!.id;
    return this.fill(image, caches, hit, hi, lo);
  }

  /**
   * Make (hi:lo) current from a section filled before, if one of {@link places} has it
   * and the image did not change since: the same as {@link fill} would find, as this
   * view's current section is trusted while the image stays the same.
   */
  private recall(image: Image, hi: number, lo: number): boolean {
    if (this.placesImage !== image || this.placesVersion !== image.version) return false;
    const places = this.places;
    for (let k = 0; k < RECENT; k++) {
      const p = places[k]!;
      if (p.section === null) continue;
      const d = diff64(hi, lo, p.baseHi, p.baseLo);
      if (!(d >= p.winBegin && d < p.winEnd)) continue;
      this.copyFrom(p);
      this.image = image;
      this.version = image.version;
      this.off = d | 0;
      return true;
    }
    return false;
  }

  /** Keep the current section's place for {@link recall}. */
  private remember(image: Image): void {
    const places = this.places;
    if (this.placesImage !== image || this.placesVersion !== image.version) {
      for (const p of places) p.section = null;
      this.placesImage = image;
      this.placesVersion = image.version;
    }
    const p = places[this.placeNext]!;
    this.placeNext = (this.placeNext + 1) % RECENT;
    p.copyFrom(this);
  }

  private fill(image: Image, caches: SectionCaches, hit: ImageHit, hi: number, lo: number): number {
    this.clear();
    const status = image.find(hi, lo, hit);
    if (status < 0) return status;
    const s = hit.section!;
    const d = diff64(hi, lo, s.startHi, s.startLo);
    let begin = 0;
    let end = s.size;
    if (image.fallback !== null) {
      // The default image's section may be shadowed around here: trust what find saw.
      begin = d;
      end = d + hit.available;
    }
    const readEnd = end;
    let origin = 0;
    if (s.size >= MAX_CACHED_SECTION) {
      origin = Math.max(begin, d - HUGE_WINDOW / 2);
      begin = origin;
      end = Math.min(end, origin + HUGE_WINDOW);
    } else if (!this.uncached) {
      let cache = caches.get(s);
      if (cache === undefined) {
        cache = new SectionCache(s);
        caches.set(s, cache);
      }
      this.cache = cache;
    }
    addSize(s.startHi, s.startLo, origin);
    this.baseHi = sum.hi;
    this.baseLo = sum.lo;
    this.byteBase = s.offset + origin;
    // Window offsets are below 2^30: `| 0` keeps these fields small integers.
    this.winBegin = (begin - origin) | 0;
    this.winEnd = (end - origin) | 0;
    this.readEnd = readEnd - origin;
    this.section = s;
    this.image = image;
    this.version = image.version;
    this.off = (d - origin) | 0;
    this.remember(image);
    return s.id;
  }

  /**
   * Decode the instruction at `insn`'s IP and mode, at offset `off`, reading no
   * further than the window (libipt `pt_blk_decode_in_section`): 0, or -BadInsn when
   * the bytes there are no instruction or it runs past the window.
   */
  decodeAt(off: number, insn: FlowInsn): number {
    const s = this.section!;
    insn.isid = s.id;
    const cache = this.cache;
    if (cache === null) return this.decodeBytes(s, off, insn);
    const page = cache.page(off);
    const i = slot(off);
    const m = page.meta[i]!;
    const mode = insn.mode;
    if (m !== 0 && InsnMeta.mode(m) === mode && off + InsnMeta.size(m) <= this.winEnd) {
      insn.size = InsnMeta.size(m);
      insn.info = InsnMeta.info(m);
      insn.iclass = InsnMeta.iclass(m);
      insn.disp = page.disp[i]!;
      return 0;
    }
    const status = this.decodeBytes(s, off, insn);
    if (status < 0) return status;
    page.meta[i] = InsnMeta.pack(mode, insn.size, insn.info, insn.iclass);
    page.disp[i] = insn.disp;
    return 0;
  }

  /**
   * Step over the plain 64-bit instructions (see isa's plainLength64) from offset
   * {@link off} on, at most `limit`, each read as {@link decodeAt} reads one: whole
   * inside the section's bytes up to {@link readEnd}, and starting inside the window,
   * where a lookup of its address finds this section again. How many; {@link off} is
   * then the offset after them and {@link runLast} the last one's. (A walk through the
   * code that makes its decision graph, which looks the section up once per run, not
   * per instruction.)
   */
  plainRun(limit: number): number {
    const src = this.section!.bytes;
    if (src === null) return 0;
    const byteBase = this.byteBase;
    // (decodeInsn reads no further than the array either.)
    const readEnd = Math.min(this.readEnd, src.length - byteBase);
    const winEnd = this.winEnd;
    let off = this.off;
    let last = off;
    let n = 0;
    while (n < limit && off < winEnd) {
      const avail = readEnd - off;
      if (avail <= 0) break;
      const size = plainLength64(src, byteBase + off, Math.min(avail, MAX_INSN_LENGTH), info);
      if (size === 0) break;
      last = off;
      off += size;
      n++;
    }
    this.off = off;
    this.runLast = last;
    return n;
  }

  private decodeBytes(s: Section, off: number, insn: FlowInsn): number {
    const avail = Math.min(MAX_INSN_LENGTH, this.readEnd - off);
    const src = s.bytes;
    const at = this.byteBase + off;
    // Near the window's end too, where a copy of what is left was a path rarely taken:
    // run for the first time once the code was optimised, it threw that code away.
    if (src !== null) return decodeBytes(src, at, insn, at + avail);
    scratch.fill(0);
    return decodeBytes(views[Math.max(0, avail)]!, 0, insn);
  }

  /**
   * Copy `size` bytes at offset `off` (a decoded instruction inside the window) into
   * `raw` from index `to`.
   */
  copyRaw(off: number, size: number, raw: Uint8Array, to = 0): void {
    const s = this.section!;
    const src = s.bytes;
    if (src === null) {
      raw.fill(0, to, to + size);
      return;
    }
    const at = this.byteBase + off;
    if (at >= 0x4000_0000) {
      for (let k = 0; k < size; k++) raw[to + k] = src[at + k]!;
      return;
    }
    // Small integer indexes (buffers below 1 GiB) keep the loops free of conversions.
    // Four bytes are read before they are written: each write makes V8 reload both
    // arrays' fields, so that goes per four bytes instead of per byte.
    let k = to | 0;
    const end = (to + size) | 0;
    let j = at | 0;
    for (; k + 4 <= end; k += 4, j += 4) {
      const b0 = src[j]!;
      const b1 = src[j + 1]!;
      const b2 = src[j + 2]!;
      const b3 = src[j + 3]!;
      raw[k] = b0;
      raw[k + 1] = b1;
      raw[k + 2] = b2;
      raw[k + 3] = b3;
    }
    for (; k < end; k++, j++) raw[k] = src[j]!;
  }
}
// Addresses: see doubleFields.
doubleFields(new SectionView(), ["baseHi", "baseLo"]);

/** Decode `raw[0..n)` as `insn`'s IP and mode: 0 or -BadInsn. */
export function decodeRaw(insn: FlowInsn, raw: Uint8Array, n: number): number {
  for (let k = 0; k < n; k++) scratch[k] = raw[k]!;
  return decodeBytes(views[n]!, 0, insn);
}

/**
 * Decode `bytes[at..end)` (never past the array's end) as `insn`'s IP and mode and fill size,
 * class, facts and displacement. An unknown mode decodes as 16-bit code, as libipt's
 * length decoder does.
 */
function decodeBytes(bytes: Uint8Array, at: number, insn: FlowInsn, end = bytes.length): number {
  const mode = insn.mode === ExecMode.Unknown ? ExecMode.Bits16 : (insn.mode as ExecMode);
  const size = decodeInsn(bytes, at, insn.ipHi, insn.ipLo, mode, info, end);
  if (size < 0) return -ErrorCode.BadInsn;
  insn.size = size;
  insn.iclass = info.iclass;
  insn.info = classify(info.iclass as InsnClass, bytes, at, size);
  // libipt adds the sign-extended displacement to the 64-bit IP in every mode; the isa
  // layer wraps targets to the operand size, so take the displacement back out of it.
  // (Only direct branches use it: JMPABS carries a target too, but gets a TIP.)
  if (info.flags & InsnFlag.Target) {
    const rel = (info.targetLo - insn.ipLo - size) | 0;
    insn.disp = mode === ExecMode.Bits16 ? (rel << 16) >> 16 : rel;
  } else {
    insn.disp = 0;
  }
  return 0;
}
