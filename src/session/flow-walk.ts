/**
 * Walking the instructions of a block, as ptxed does to print and check blocks: fetch
 * an instruction's bytes (from the memory image, or from the block for a truncated last
 * instruction), decode it, and step to the next one: ip + length, or the target of an
 * instruction with a branch displacement (ptxed's `xed_next_ip`; blocks run on through
 * direct jumps and calls).
 */

import type { Block } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { ExecMode, InsnCache, InsnFlag, InsnInfo, MAX_INSN_LENGTH } from "../isa/index.js";
import { ErrorCode } from "../packet/index.js";
import { add64, U64 } from "../time/index.js";

/** Instruction texts a walker keeps at most (about 100 bytes each; a power of 2). */
const TEXT_SLOTS = 1 << 15;

function textSlot(hi: number, lo: number): number {
  return (Math.imul(lo ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> 17) & (TEXT_SLOTS - 1);
}

export class CodeWalker {
  /** The fetched bytes: `bytes[0..count)`. */
  readonly bytes = new Uint8Array(MAX_INSN_LENGTH);
  count = 0;
  /** The decoded instruction (after {@link decode}). */
  readonly info = new InsnInfo();
  /** Where execution continues after the decoded instruction. */
  readonly next = new U64();
  /** views[n]: the first n fetched bytes, so that decoding reads no further. */
  private readonly views: Uint8Array[] = [];
  /**
   * Decodes by IP, valid for one image as it was: {@link use} empties it when the image
   * is switched or changes (sideband mmaps and context switches), so one address space
   * number serves.
   */
  private readonly cache = new InsnCache({ maxEntries: 1 << 16 });
  private image: Image | undefined;
  private imageVersion = -1;
  /**
   * The text of instructions listed (from the IP column on: raw bytes and disassembly,
   * made with {@link textOptions}), so that instructions run again and again are
   * disassembled once: direct-mapped by IP ({@link TEXT_SLOTS} slots, a slot's IP and
   * mode + 1 beside it, 0: empty). An instruction's text is kept the second time it is
   * listed (the first time its slot says "seen", text ""): code run once, most of a
   * trace of a large program, keeps no text alive. Valid as {@link cache} is.
   */
  private readonly textLo = new Int32Array(TEXT_SLOTS);
  private readonly textHi = new Int32Array(TEXT_SLOTS);
  private readonly textMode = new Uint8Array(TEXT_SLOTS);
  private readonly texts: string[] = new Array<string>(TEXT_SLOTS).fill("");
  private textOptions = -1;

  constructor() {
    for (let n = 0; n <= MAX_INSN_LENGTH; n++) this.views.push(this.bytes.subarray(0, n));
  }

  /** Decode for `image` from now on: cached decodes go when it is another image or it changed. */
  use(image: Image): void {
    if (image === this.image && image.version === this.imageVersion) return;
    if (this.image !== undefined) {
      this.cache.clear();
      this.clearTexts();
    }
    this.image = image;
    this.imageVersion = image.version;
  }

  /** The fetched bytes as a view of exactly {@link count} bytes. */
  get fetched(): Uint8Array {
    return this.views[this.count]!;
  }

  /** Read up to 15 bytes at (hi:lo) from `image`: 0, or -NoMap. */
  fetch(image: Image, hi: number, lo: number): number {
    const n = image.read(hi, lo, this.bytes, MAX_INSN_LENGTH);
    this.count = Math.max(n, 0);
    return Math.min(n, 0);
  }

  /**
   * Fetch the block's instruction at (hi:lo): from the block for its truncated last
   * instruction, else from `image`. 0 or -error.
   */
  fetchInBlock(block: Block, image: Image, hi: number, lo: number): number {
    if (block.truncated && hi === block.endIpHi && lo === block.endIpLo)
      return this.fetchRaw(block.raw, block.size);
    return this.fetch(image, hi, lo);
  }

  /** Take `size` bytes of `raw` as the fetched bytes: 0, or -BadInsn for an empty or oversized one. */
  fetchRaw(raw: Uint8Array, size: number): number {
    if (size <= 0 || size > MAX_INSN_LENGTH) return -ErrorCode.BadInsn;
    this.bytes.set(raw.subarray(0, size));
    this.count = size;
    return 0;
  }

  /**
   * The length of the cached instruction at (hi:lo) in `mode`, or 0 when it is not
   * cached: lets --no-inst walks skip fetching code they have decoded before.
   */
  known(hi: number, lo: number, mode: number): number {
    if (mode === ExecMode.Unknown) return 0;
    const n = this.cache.probe(0, hi, lo, mode as ExecMode, this.info);
    if (n > 0) this.step(hi, lo);
    return Math.max(n, 0);
  }

  /**
   * Decode the fetched bytes as the instruction at (hi:lo) in `mode` and set
   * {@link next}: its length, or -BadInsn (also for an unknown mode, which ptxed's
   * disassembler rejects).
   */
  decode(hi: number, lo: number, mode: number): number {
    if (mode === ExecMode.Unknown) return -ErrorCode.BadInsn;
    const info = this.info;
    const n = this.cache.lookup(0, hi, lo, mode as ExecMode, this.fetched, 0, info);
    if (n < 0) return -ErrorCode.BadInsn;
    this.step(hi, lo);
    return n;
  }

  /** The text kept for the instruction at (hi:lo) in `mode` with `options` (see {@link keepText}), or undefined. */
  text(hi: number, lo: number, mode: number, options: number): string | undefined {
    const i = textSlot(hi, lo);
    if (!this.holds(i, hi, lo, mode) || options !== this.textOptions || this.texts[i] === "")
      return undefined;
    return this.texts[i];
  }

  /** Keep `text` for the instruction at (hi:lo) in `mode`, made with `options` (a number the caller gives its options). */
  keepText(hi: number, lo: number, mode: number, options: number, text: string): void {
    if (options !== this.textOptions) {
      this.clearTexts();
      this.textOptions = options;
    }
    const i = textSlot(hi, lo);
    if (this.holds(i, hi, lo, mode)) {
      this.texts[i] = text;
      return;
    }
    this.textLo[i] = lo;
    this.textHi[i] = hi;
    this.textMode[i] = mode + 1;
    this.texts[i] = "";
  }

  /** Whether text slot `i` is the instruction at (hi:lo) in `mode`'s. */
  private holds(i: number, hi: number, lo: number, mode: number): boolean {
    return this.textMode[i] === mode + 1 && this.textLo[i] === (lo | 0) && this.textHi[i] === (hi | 0);
  }

  private clearTexts(): void {
    this.textMode.fill(0);
  }

  private step(hi: number, lo: number): void {
    const info = this.info;
    if (info.flags & InsnFlag.Target) this.next.set(info.targetHi, info.targetLo);
    else add64(this.next, hi, lo, 0, info.length);
  }
}
