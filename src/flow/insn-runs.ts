/**
 * The instruction decoder's runs of one section: from an offset where the decoder
 * enters straight-line code (a block's start, a direct branch's target), the packed
 * {@link InsnMeta} of each instruction in a row up to the first one that is not
 * straight-line code (a branch of any kind, included as the run's last), so that the
 * decoder reads one dense array in order. The decode cache has
 * the same facts one word per byte of code in separate arrays: reading them there cost
 * two cache misses per instruction on a program with megabytes of code.
 *
 * Runs live in one Int32Array, {@link RUN_HEADER} words of header (see {@link Run})
 * then each instruction's word and its bytes (the decoder copies them from here, not
 * from the section: another cache miss), found by their first offset in an
 * open-addressed table or, mostly, from the run before ({@link InsnRuns.follow}). A run entered in the middle of another repeats that one's tail, so runs are
 * at most {@link MAX_RUN} instructions long and the words of a section's runs are
 * bounded (past the bound, {@link InsnRuns.find} says -1 and the decoder goes the
 * general way).
 */
import * as addr from "../image/addr.js";
import * as flowClass from "./flow-class.js";
import type { FlowInsn } from "./flow-insn.js";
import * as sectionCache from "./section-cache.js";
import type { SectionView } from "./section-view.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { addSize, sum } = addr;
const { FlowClass } = flowClass;
const { InsnMeta } = sectionCache;

/** Instructions in a run at most; a longer stretch of straight-line code is several runs. */
export const MAX_RUN = 64;

/** A run's header words, from its index in {@link InsnRuns.words}; its instructions' words follow. */
export const Run = {
  /** Instructions in the run (0: none decodes there). */
  Count: 0,
  /** The ExecMode it was decoded in. */
  Mode: 1,
  /** The offset just past its last instruction. */
  End: 2,
  /** The last instruction's direct-branch displacement (0 if none). */
  Disp: 3,
  /**
   * Where the decoder went on after this run, twice (see {@link InsnRuns.follow}):
   * offset + 1 (0: not yet) and that run's index; the first for its end, the second
   * for anywhere else (a branch's target, the last return's or TIP's).
   */
  FallKey: 4,
  FallRun: 5,
  OtherKey: 6,
  OtherRun: 7,
} as const;
export const RUN_HEADER = 8;

/**
 * Words an instruction takes in a run: its packed {@link InsnMeta}, then its `size`
 * bytes, padded to a word (at byte index 4 * (its index + 1) in {@link InsnRuns.bytes}).
 */
export function insnWords(size: number): number {
  return 1 + ((size + 3) >> 2);
}

/** Words of runs per byte of section at most (beyond a floor for small sections), and overall. */
const WORDS_PER_BYTE = 8;
const MIN_WORDS = 1 << 16;
const MAX_WORDS = 1 << 25;
/** Words one run takes at most. */
const MAX_RUN_WORDS = RUN_HEADER + MAX_RUN * 5;

const HASH = 0x9e3779b1 | 0;

export class InsnRuns {
  /** The runs (see {@link Run}), as words and as bytes (the same memory); replaced as it grows. */
  words = new Int32Array(4096);
  bytes = new Uint8Array(this.words.buffer);
  private used = 0;
  /** Open addressing, two words a slot: offset + 1 (0: empty) and the run's index. */
  private slots = new Int32Array(2 * 1024);
  private shift = 32 - 10;
  private count = 0;

  /** Runs for a section of `sectionSize` bytes, in `limit` words at most. */
  constructor(
    sectionSize: number,
    private readonly limit = Math.min(MAX_WORDS, MIN_WORDS + WORDS_PER_BYTE * sectionSize),
  ) {}

  /**
   * The run at `off` where the decoder goes on after run `from`: {@link find}, but
   * from what `from` remembers when it went there before (no look-up, whose table is
   * a cache miss on a large program). -1 when the runs are full.
   */
  follow(from: number, off: number, mode: number, view: SectionView, probe: FlowInsn): number {
    const words = this.words;
    const key = (off + 1) | 0;
    if (words[from + Run.FallKey] === key) return words[from + Run.FallRun]!;
    if (words[from + Run.OtherKey] === key) return words[from + Run.OtherRun]!;
    const r = this.find(off, mode, view, probe);
    if (r < 0) return r;
    const at = off === words[from + Run.End] ? from + Run.FallKey : from + Run.OtherKey;
    // find may have grown the words.
    this.words[at] = key;
    this.words[at + 1] = r;
    return r;
  }

  /**
   * The index of the run at `off` in `view`'s section (made now from the decode cache,
   * decoding where it must, with `probe` as scratch), or -1 when the runs are full.
   * Made for the view's window and `mode`: the caller checks {@link Run.Mode} and
   * {@link Run.End} against its own.
   */
  find(off: number, mode: number, view: SectionView, probe: FlowInsn): number {
    const slots = this.slots;
    const key = (off + 1) | 0;
    const mask = slots.length - 1;
    let i = (Math.imul(off, HASH) >>> this.shift) << 1;
    for (;;) {
      const k = slots[i]!;
      if (k === key) return slots[i + 1]!;
      if (k === 0) break;
      i = (i + 2) & mask;
    }
    const r = this.make(off, mode, view, probe);
    if (r < 0) return r;
    this.insert(key, r);
    return r;
  }

  /** Decode the run at `off` into new words: its index, or -1 when there is no room. */
  private make(off: number, mode: number, view: SectionView, probe: FlowInsn): number {
    if (this.used + MAX_RUN_WORDS > this.limit) return -1;
    if (this.used + MAX_RUN_WORDS > this.words.length) {
      const grown = new Int32Array(Math.min(this.limit, 2 * this.words.length + MAX_RUN_WORDS));
      grown.set(this.words.subarray(0, this.used));
      this.words = grown;
      this.bytes = new Uint8Array(grown.buffer);
    }
    const words = this.words;
    const r = this.used;
    const winEnd = view.winEnd;
    let o = off;
    let n = 0;
    let disp = 0;
    let p = r + RUN_HEADER;
    while (n < MAX_RUN && o < winEnd) {
      addSize(view.baseHi, view.baseLo, o);
      probe.reset(sum.hi, sum.lo, mode);
      if (view.decodeAt(o, probe) < 0 || o + probe.size > winEnd) break;
      const size = probe.size;
      words[p] = InsnMeta.pack(mode, size, probe.info, probe.iclass);
      view.copyRaw(o, size, this.bytes, (p + 1) << 2);
      p += insnWords(size);
      n++;
      o += size;
      const c = probe.info & 15;
      if (c !== FlowClass.Other && c !== FlowClass.Ptwrite) {
        disp = probe.disp;
        break;
      }
    }
    words.fill(0, r, r + RUN_HEADER);
    words[r + Run.Count] = n;
    words[r + Run.Mode] = mode;
    words[r + Run.End] = o;
    words[r + Run.Disp] = disp;
    this.used = p;
    return r;
  }
  private insert(key: number, r: number): void {
    if (2 * (this.count + 1) > this.slots.length / 2) this.grow();
    const slots = this.slots;
    const mask = slots.length - 1;
    let i = (Math.imul(key - 1, HASH) >>> this.shift) << 1;
    while (slots[i] !== 0) i = (i + 2) & mask;
    slots[i] = key;
    slots[i + 1] = r;
    this.count++;
  }

  /** Twice the slots, every run put back. */
  private grow(): void {
    const old = this.slots;
    const slots = new Int32Array(2 * old.length);
    const mask = slots.length - 1;
    const shift = this.shift - 1;
    for (let j = 0; j < old.length; j += 2) {
      const k = old[j]!;
      if (k === 0) continue;
      let i = (Math.imul(k - 1, HASH) >>> shift) << 1;
      while (slots[i] !== 0) i = (i + 2) & mask;
      slots[i] = k;
      slots[i + 1] = old[j + 1]!;
    }
    this.slots = slots;
    this.shift = shift;
  }
}
