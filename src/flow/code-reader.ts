/**
 * The traced code as the decoders read it: the memory image of the current address
 * space, and two views into it, as libipt has them. {@link msec} is libipt's
 * `pt_msec_cache`, the section the block decoder works in (and the instruction
 * decoder reads from); the other view serves whole-image decodes (libipt's
 * `pt_insn_decode` over `pt_image_read`), which do not disturb it.
 *
 * Which view found a section first matters, as in libipt: a section gets its block
 * cache only when the block decoder's own lookup brought it in
 * ({@link lookupForBlocks}); until then it is decoded one instruction at a time.
 */

import * as errors from "../base/errors.js";
import { ASID_ANY, Image, ImageHit, type ImageSet, type Section } from "../image/index.js";
import * as isa from "../isa/index.js";
import type { FlowInsn } from "./flow-insn.js";
import type { SectionCache, SectionCaches } from "./section-cache.js";
import * as sectionView from "./section-view.js";
import { SectionView } from "./section-view.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { MAX_INSN_LENGTH } = isa;
const { ErrorCode } = errors;
const { decodeRaw } = sectionView;

export type { SectionCaches };

/**
 * {@link SectionCaches} shared by every section that holds the same bytes (the same
 * file buffer, from the same index, as long) at the same address, whichever image
 * made it: what a decoder learns there holds for all of them. (The streams of a
 * perf.data recorded per CPU each map the process's files in process images of their
 * own, and each filled its own caches with the same code: on a large program that
 * is most of a decode's cache fills again per CPU.)
 */
export class SameCodeCaches implements SectionCaches {
  private readonly bySection = new WeakMap<Section, SectionCache>();
  private readonly byBytes = new WeakMap<Uint8Array, Map<string, SectionCache>>();

  get(section: Section): SectionCache | undefined {
    const own = this.bySection.get(section);
    if (own !== undefined || section.bytes === null) return own;
    const same = this.byBytes.get(section.bytes)?.get(placeOf(section));
    if (same !== undefined) this.bySection.set(section, same);
    return same;
  }

  set(section: Section, cache: SectionCache): void {
    this.bySection.set(section, cache);
    if (section.bytes === null) return;
    let places = this.byBytes.get(section.bytes);
    if (places === undefined) {
      places = new Map();
      this.byBytes.set(section.bytes, places);
    }
    places.set(placeOf(section), cache);
  }
}

/** Where a section's bytes come from and where they are mapped (see SameCodeCaches). */
function placeOf(s: Section): string {
  return `${s.offset}:${s.size}:${s.startHi}:${s.startLo}`;
}

export class CodeReader {
  /** The image decoded in (per address space when there is an image set). */
  image: Image;
  /** libipt's current mapped section (`pt_msec_cache`). */
  readonly msec = new SectionView();
  private readonly view = new SectionView();
  private readonly caches: SectionCaches;
  private readonly hit = new ImageHit();

  /** The address space, libipt's `pt_asid` (all ones: unknown). */
  cr3Hi = ASID_ANY;
  cr3Lo = ASID_ANY;
  vmcsHi = ASID_ANY;
  vmcsLo = ASID_ANY;

  constructor(
    image: Image | null,
    /** Images per address space: {@link image} follows CR3 and VMCS changes. */
    readonly images: ImageSet | null = null,
    caches?: SectionCaches,
    /**
     * Give sections no decode or block caches (a reader that decodes each instruction
     * about once: the caches' pages would cost more than they save).
     */
    uncached = false,
  ) {
    this.image = image ?? images?.defaultImage ?? new Image("empty");
    this.caches = caches ?? new WeakMap();
    this.msec.uncached = uncached;
    this.view.uncached = uncached;
  }

  /** Forget the current section (libipt `pt_msec_cache_invalidate`). */
  invalidate(): void {
    this.msec.clear();
  }

  /** Use another image (libipt `pt_blk_set_image`; views check which image they saw). */
  setImage(image: Image): void {
    this.image = image;
  }

  /**
   * Reset the address space to unknown (libipt `pt_asid_init`). Unlike a change of
   * address space, this keeps the current section, as libipt does.
   */
  resetAsid(): void {
    this.useAsid(ASID_ANY, ASID_ANY, ASID_ANY, ASID_ANY);
  }

  /** A new CR3 / VMCS base (libipt also forgets the current section). */
  setAsid(cr3Hi: number, cr3Lo: number, vmcsHi: number, vmcsLo: number): void {
    this.useAsid(cr3Hi, cr3Lo, vmcsHi, vmcsLo);
    this.msec.clear();
  }

  /** With an image set, switch to the address space's image (views check which image they saw). */
  private useAsid(cr3Hi: number, cr3Lo: number, vmcsHi: number, vmcsLo: number): void {
    this.cr3Hi = cr3Hi;
    this.cr3Lo = cr3Lo;
    this.vmcsHi = vmcsHi;
    this.vmcsLo = vmcsLo;
    if (this.images !== null) this.image = this.images.lookup(cr3Hi, cr3Lo, vmcsHi, vmcsLo);
  }

  /**
   * The block decoder's section lookup (libipt `pt_blk_msec_lookup`): make the section
   * at (hi:lo) current in {@link msec}; its id, or -NoMap. A section it brings in gets
   * its block cache enabled.
   */
  lookupForBlocks(hi: number, lo: number): number {
    const msec = this.msec;
    const isid = msec.lookup(this.image, this.caches, this.hit, hi, lo);
    if (isid >= 0 && msec.filled === true && msec.cache !== null) msec.cache.blocks = true;
    return isid;
  }

  /** The instruction decoder's section lookup (libipt `pt_insn_msec_lookup`). */
  lookupForInsns(hi: number, lo: number): number {
    return this.msec.lookup(this.image, this.caches, this.hit, hi, lo);
  }

  /**
   * Decode the instruction at `insn`'s IP in the image (libipt `pt_insn_decode`):
   * 0, -NoMap, or -BadInsn. An instruction that runs past its section into the next
   * is decoded from both and marked truncated, its bytes in `insn.raw`; with `raw`,
   * the bytes of others are copied there too.
   */
  decode(insn: FlowInsn, raw = false): number {
    const view = this.view;
    const isid = view.lookup(this.image, this.caches, this.hit, insn.ipHi, insn.ipLo);
    if (isid < 0) return isid;
    const off = view.off;
    const status = view.decodeAt(off, insn);
    const left = view.readEnd - off;
    if (status === 0 && raw) view.copyRaw(off, insn.size, insn.raw);
    if (status !== -ErrorCode.BadInsn || left >= MAX_INSN_LENGTH) return status;
    // The section ends inside the instruction: read on into what follows.
    const n = this.image.read(insn.ipHi, insn.ipLo, insn.raw, MAX_INSN_LENGTH);
    if (n <= left) return -ErrorCode.BadInsn;
    const retry = decodeRaw(insn, insn.raw, n);
    if (retry < 0) return retry;
    insn.isid = isid;
    insn.truncated = true;
    return 0;
  }

  /**
   * Step over the plain instructions (isa's plainLength64) of 64-bit code from (hi:lo)
   * on, at most `limit`, as many in a row as {@link decode} would decode whole from one
   * section (see SectionView.plainRun): how many. {@link runBytes} is then the distance
   * from (hi:lo) to the next instruction and {@link runLastBytes} to the last of them.
   * 0 where the first is not one or not read that way: decode it.
   */
  plainRun(hi: number, lo: number, limit: number): number {
    const view = this.view;
    if (view.lookup(this.image, this.caches, this.hit, hi, lo) < 0) return 0;
    const from = view.off;
    const n = view.plainRun(limit);
    this.runBytes = view.off - from;
    this.runLastBytes = view.runLast - from;
    return n;
  }

  /** See {@link plainRun}. */
  runBytes = 0;
  runLastBytes = 0;

  /** Decode `insn.raw[0..n)` as the instruction at its IP in its mode: 0 or -BadInsn. */
  decodeRaw(insn: FlowInsn, n: number): number {
    return decodeRaw(insn, insn.raw, n);
  }
}
