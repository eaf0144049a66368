/**
 * What the flow decoder remembers about the code of one image section, per byte
 * offset: the decoded instruction starting there, and the block-cache entry that
 * says how far straight-line execution goes from there (libipt's `pt_block_cache`).
 *
 * Sections are immutable (a replacement makes new Section objects), so a cache keyed
 * by the Section object never goes stale. Memory grows with the code actually
 * decoded: entries live in 4096-byte pages allocated on first touch (12 bytes per
 * byte of touched code), not in one array as large as the section. Pages are cut
 * from slabs of up to {@link SLAB_PAGES} pages (never more than the section has
 * left to touch): Node allocates an 80 KiB ArrayBuffer in about a millisecond but
 * a 1.25 MiB one in about as little, so one buffer per page cost 0.8 s of a run
 * that touched 3 MiB of code.
 */
import { mutableFields } from "../base/halves.js";
import type { Section } from "../image/index.js";
import * as flowClass from "./flow-class.js";
import type { InsnRuns } from "./insn-runs.js";

// A module copy of imported bindings (see block-walk.ts).
const { FACT_SHIFT, FlowClass, InsnFact } = flowClass;

const PAGE_BITS = 12;
export const PAGE_SIZE = 1 << PAGE_BITS;
const PAGE_MASK = PAGE_SIZE - 1;

/**
 * Where the word about an entry's decision point follows the entry in a slot of
 * {@link SectionCache.walk} (see {@link WalkQualifier}): a conditional branch's or a
 * direct call's or jump's displacement ({@link NO_DISP} where the decode cache does
 * not have the branch), an indirect transfer's packed {@link InsnMeta} (0: unknown).
 */
export const WALK_AUX = 1;
/** A conditional branch's displacement in the walk's table when unknown: decode it. */
export const NO_DISP = 0x80000000 | 0;

/** Bytes of one page's arrays (bce, meta, disp: a word per byte each), and pages per slab at most. */
const PAGE_BYTES = PAGE_SIZE * 3 * 4;
const SLAB_PAGES = 16;

/**
 * Words per slot of {@link SectionCache.walk} (offset + 1, entry, the word about its
 * decision point), and its first size in slots. Three words, not four: the table is
 * megabytes on a large program, and its reads were the walk's main cache misses.
 */
export const WALK_STRIDE = 3;
const WALK_MIN_SLOTS = 256;
/** Slots a look-up tries in code order after an offset's first (see walkNext), and the step hash. */
const WALK_LINEAR = 3;
const WALK_HASH = 0x9e3779b1 | 0;

/** One page of entries; `index` is its offset in the section divided by PAGE_SIZE. */
export class CachePage {
  /**
   * Block-cache entries, one per byte offset (index with {@link slot}; see {@link Bce},
   * 0 is "not cached"). The walk reads copies in {@link SectionCache.walk}, which also
   * carry the decision point's instruction; write with {@link SectionCache.setEntry}.
   */
  readonly bce: Int32Array;
  /** Decoded instructions (see {@link InsnMeta}); 0 is "not decoded". */
  readonly meta: Uint32Array;
  /** Direct branch displacements of the decoded instructions. */
  readonly disp: Int32Array;

  /** Section offset of the page's first entry. */
  readonly start: number;

  /** A page over `PAGE_BYTES` zeroed bytes of `buffer` from `at` (a fresh buffer by default). */
  constructor(
    readonly index: number,
    buffer: ArrayBuffer = new ArrayBuffer(PAGE_BYTES),
    at = 0,
  ) {
    this.start = index * PAGE_SIZE;
    this.bce = new Int32Array(buffer, at, PAGE_SIZE);
    this.meta = new Uint32Array(buffer, at + PAGE_SIZE * 4, PAGE_SIZE);
    this.disp = new Int32Array(buffer, at + PAGE_SIZE * 8, PAGE_SIZE);
  }
}

/**
 * Packed decoded instruction: valid (bit 0), ExecMode (bits 1-2), size (bits 3-6),
 * class and facts as {@link classify} packs them (bits 7-18), isa InsnClass (bits 19-23).
 */
export const InsnMeta = {
  pack(mode: number, size: number, info: number, iclass: number): number {
    return (1 | (mode << 1) | (size << 3) | (info << 7) | (iclass << 19)) >>> 0;
  },
  mode: (m: number): number => (m >>> 1) & 3,
  size: (m: number): number => (m >>> 3) & 15,
  info: (m: number): number => (m >>> 7) & 0xfff,
  iclass: (m: number): number => (m >>> 19) & 31,
};

/** libipt's `pt_bcache_qualifier`: what to do at the decision point an entry leads to. */
export const Qualifier = {
  /** Not a decision point: a trampoline; continue from the entry's target. */
  Again: 0,
  /** A conditional branch: one TNT bit. */
  Cond: 1,
  /** A near indirect call: push the return address, then a TIP. */
  IndCall: 2,
  /** A near return: a compressed (TNT) or uncompressed (TIP) return. */
  Return: 3,
  /** An indirect jump or far transfer: a TIP (the entry does not say which class; the decode cache does). */
  Indirect: 4,
  /** Decode the instruction there to decide (direct calls, backward jumps, ...). */
  Decode: 5,
} as const;

/**
 * The qualifiers of a walk-table copy of a {@link Qualifier.Decode} entry whose
 * decision point the decode cache has as a direct call or jump no longer than 7
 * bytes: the entry's isize field then holds its size and the slot's aux word its
 * displacement, so the walk takes it without the instruction (see fillSlot). Only
 * the walk's copies carry them, never the block cache.
 */
export const WalkQualifier = {
  DirectCall: 6,
  DirectJump: 7,
} as const;

/**
 * Packed block-cache entry, libipt's field widths (they decide where blocks end, which
 * `--block:show-blocks` output shows): mode (bits 0-1, 0 = invalid), qualifier (bits
 * 2-4), size of the decision-point instruction if it fits 3 bits (bits 5-7, else 0),
 * instructions to the decision point (bits 8-15) and the signed 16-bit displacement
 * to it (bits 16-31).
 */
export const Bce = {
  pack(mode: number, qualifier: number, isize: number, ninsn: number, disp: number): number {
    return mode | (qualifier << 2) | ((isize > 7 ? 0 : isize) << 5) | ((ninsn & 0xff) << 8) | (disp << 16);
  },
  mode: (e: number): number => e & 3,
  MODE_MASK: 3,
  DISP_SHIFT: 16,
  qualifier: (e: number): number => (e >>> 2) & 7,
  isize: (e: number): number => (e >>> 5) & 7,
  ninsn: (e: number): number => (e >>> 8) & 0xff,
  disp: (e: number): number => e >> 16,
  /** Largest instruction count and displacement range an entry holds. */
  MAX_NINSN: 0xff,
  MIN_DISP: -0x8000,
  MAX_DISP: 0x7fff,
};

export class SectionCache {
  /**
   * The block cache is in use (libipt allocates it when the block decoder first brings
   * the section in; until then the section is walked one instruction at a time).
   */
  blocks = false;
  /** The instruction decoder's runs of this section, made when it first walks it. */
  runs: InsnRuns | null = null;
  private readonly pages = new Map<number, CachePage>();
  private last: CachePage | null = null;
  /** The slab pages are cut from, how many of its pages are used, and pages not yet made. */
  private slab: ArrayBuffer | null = null;
  private slabUsed = 0;
  private pagesLeft: number;

  /**
   * The walk's table: a copy of the block-cache entries the cache walk has read, in an
   * open-addressed table keyed by offset and laid out in code order (see walkIndex),
   * {@link WALK_STRIDE} words a slot (offset + 1, 0 for an empty slot, then the entry,
   * then at {@link WALK_AUX} + 1 what the walk needs of its decision point's
   * instruction), so a block costs one read where the entry and its decision point's
   * instruction were separate cache misses. Few offsets start a block (155,100 of the
   * 635,449 entries on a workload with 3 MiB of code), so the walk's reads stay in a
   * few MiB instead of being spread over the pages, where each read was a cache and
   * TLB miss.
   * {@link setEntry} keeps the copies current. At most half the slots are used, so a
   * look-up rarely probes past the first slot.
   */
  walk = new Int32Array(WALK_MIN_SLOTS * WALK_STRIDE);
  /** Slots less one (a power of two less one), and slots in use. */
  private walkMask = WALK_MIN_SLOTS - 1;
  private walkUsed = 0;

  constructor(readonly section: Section) {
    this.pagesLeft = Math.ceil(section.size / PAGE_SIZE);
    // growWalk replaces them (see mutableFields).
    mutableFields(this, ["walk", "walkMask"]);
  }

  /**
   * Index in {@link walk} of the slot of the valid entry at offset `off`, copying it
   * from its page on first use; -1 where there is no entry yet.
   */
  entry(off: number): number {
    const walk = this.walk;
    const key = (off + 1) | 0;
    const mask = this.walkMask;
    let s = walkIndex(off, mask);
    for (let n = 0; ; n++) {
      const i = s * WALK_STRIDE;
      const k = walk[i]!;
      if (k === key) return i;
      if (k === 0) return this.copyEntry(off);
      s = walkNext(s, n, off, mask);
    }
  }

  /** {@link entry} for an offset not in the walk's table yet. */
  private copyEntry(off: number): number {
    const bce = this.page(off).bce[slot(off)]!;
    if ((bce & Bce.MODE_MASK) === 0) return -1;
    if ((this.walkUsed + 1) * 2 > this.walk.length / WALK_STRIDE) this.growWalk();
    const walk = this.walk;
    const mask = this.walkMask;
    let s = walkIndex(off, mask);
    for (let n = 0; walk[s * WALK_STRIDE] !== 0; n++) s = walkNext(s, n, off, mask);
    const i = s * WALK_STRIDE;
    walk[i] = (off + 1) | 0;
    this.fillSlot(i, off, bce);
    this.walkUsed++;
    return i;
  }

  /**
   * Walk slot `i`'s words for entry `bce` at `off`: the entry, and the word about its
   * decision point (see {@link WALK_AUX}) as the decode cache has that instruction (the
   * fill decoded it there; it does not where the instruction did not fit its section,
   * or was decoded in another mode). A Decode entry whose decision point is a direct
   * call or jump becomes a {@link WalkQualifier} one.
   */
  private fillSlot(i: number, off: number, bce: number): void {
    const walk = this.walk;
    const qualifier = Bce.qualifier(bce);
    let entry = bce;
    let aux = 0;
    if (qualifier === Qualifier.Cond || qualifier === Qualifier.Decode || qualifier === Qualifier.Indirect) {
      const dp = off + Bce.disp(bce);
      const page = this.page(dp);
      const k = slot(dp);
      const m = page.meta[k]!;
      const known = m !== 0 && InsnMeta.mode(m) === Bce.mode(bce);
      if (qualifier === Qualifier.Cond) {
        aux = known ? page.disp[k]! : NO_DISP;
      } else if (qualifier === Qualifier.Indirect) {
        aux = known ? m | 0 : 0;
      } else if (known) {
        const info = InsnMeta.info(m);
        const c = info & 15;
        const size = InsnMeta.size(m);
        if (
          (c === FlowClass.Call || c === FlowClass.Jump) &&
          ((info >>> FACT_SHIFT) & InsnFact.Direct) !== 0 &&
          size <= 7
        ) {
          const q = c === FlowClass.Call ? WalkQualifier.DirectCall : WalkQualifier.DirectJump;
          entry = Bce.pack(Bce.mode(bce), q, size, Bce.ninsn(bce), Bce.disp(bce));
          aux = page.disp[k]!;
        }
      }
    }
    walk[i + 1] = entry;
    walk[i + 1 + WALK_AUX] = aux;
  }

  /** Double the walk's table. */
  private growWalk(): void {
    const old = this.walk;
    const walk = new Int32Array(old.length * 2);
    const slotMask = this.walkMask * 2 + 1;
    for (let o = 0; o < old.length; o += WALK_STRIDE) {
      const k = old[o]!;
      if (k === 0) continue;
      let s = walkIndex(k - 1, slotMask);
      for (let n = 0; walk[s * WALK_STRIDE] !== 0; n++) s = walkNext(s, n, k - 1, slotMask);
      const i = s * WALK_STRIDE;
      walk[i] = k;
      walk[i + 1] = old[o + 1]!;
      walk[i + 2] = old[o + 2]!;
    }
    this.walk = walk;
    this.walkMask = slotMask;
  }

  /**
   * Enter block-cache entry `bce` at `off`. Its decision point's instruction must be in
   * the decode cache already (where it fits the section): the walk's copy takes it
   * from there.
   */
  setEntry(off: number, bce: number): void {
    const entries = this.page(off).bce;
    const k = slot(off);
    const was = entries[k]!;
    entries[k] = bce;
    // The walk's copy, if it has one: only entries that were valid are copied (see
    // copyEntry), and nearly every entry is new, which spares the look-up.
    if ((was & Bce.MODE_MASK) === 0) return;
    const walk = this.walk;
    const key = (off + 1) | 0;
    const mask = this.walkMask;
    let s = walkIndex(off, mask);
    for (let n = 0, k = walk[s * WALK_STRIDE]!; k !== 0; n++, k = walk[s * WALK_STRIDE]!) {
      if (k === key) {
        this.fillSlot(s * WALK_STRIDE, off, bce);
        return;
      }
      s = walkNext(s, n, off, mask);
    }
  }

  /** A new page for `index`, from the current slab or a new one. */
  private newPage(index: number): CachePage {
    let slab = this.slab;
    if (slab === null || this.slabUsed * PAGE_BYTES >= slab.byteLength) {
      // At least one page: a section trimmed under a cached view may still be asked.
      const pages = Math.max(1, Math.min(SLAB_PAGES, this.pagesLeft));
      slab = new ArrayBuffer(pages * PAGE_BYTES);
      this.slab = slab;
      this.slabUsed = 0;
    }
    this.pagesLeft--;
    const at = this.slabUsed++ * PAGE_BYTES;
    // Write the page's zeros now: a fresh buffer is mapped lazily, and the fill reads
    // each entry before it writes it, so each 4 KiB of memory cost the kernel two
    // faults (a zero page on the read, a copy on the write) instead of one here.
    new Int32Array(slab, at, PAGE_BYTES / 4).fill(0);
    return new CachePage(index, slab, at);
  }

  /** The page holding section offset `off` (created on first use). */
  page(off: number): CachePage {
    // Cached sections are below 1 GiB (see SectionView), so offsets shift as int32.
    const index = off >> PAGE_BITS;
    const last = this.last;
    if (last !== null && last.index === index) return last;
    let p = this.pages.get(index);
    if (p === undefined) {
      p = this.newPage(index);
      this.pages.set(index, p);
    }
    this.last = p;
    return p;
  }
}

/** Index of section offset `off` in its page. */
export function slot(off: number): number {
  return off & PAGE_MASK;
}

/**
 * The slot where the walk's table looks first for offset `off` (its words start at
 * the slot times {@link WALK_STRIDE}), `mask` its slots less one
 * ({@link SectionCache.walk}): the slot of its 16 bytes of code, in
 * code order (modulo the table's size), not hashed. A block mostly goes on to code
 * close by (the fall-through, a short branch, the next loop iteration), whose entry
 * is then in the same or a nearby cache line and page of the table: with a hashed
 * index each block's read was a cache and TLB miss of its own (about 11% of the CPU
 * time on the large-footprint workload went to those).
 */
export function walkIndex(off: number, mask: number): number {
  return (off >> 4) & mask;
}

/**
 * The slot after slot `s` in offset `off`'s look-up, `n` slots past its first, `mask`
 * the table's slots less one: the next {@link WALK_LINEAR} in code order
 * (an entry crowded out of its slot by the others of its 16 bytes lands close by), then
 * steps of an odd number of slots hashed from the offset, which reach every slot. Not
 * code order all the way: where code starts a block at nearly every byte, runs of full
 * slots would join into one, and look-ups would take time in proportion to the table.
 */
export function walkNext(s: number, n: number, off: number, mask: number): number {
  const step = n < WALK_LINEAR ? 1 : (Math.imul(off, WALK_HASH) >>> 16) | 1;
  return (s + step) & mask;
}

/**
 * The decode and block caches of sections, by section: what was learnt of the code
 * only (as libipt keeps a section's block cache with the section), so decoders of
 * the same code may share them. A WeakMap keeps them per Section object; see
 * SameCodeCaches (code-reader.ts) for sections of different images.
 */
export interface SectionCaches {
  get(section: Section): SectionCache | undefined;
  set(section: Section, cache: SectionCache): unknown;
}
