/**
 * The instruction decoder's runs of one section: from an offset where the decoder
 * enters straight-line code (a block's start, a direct branch's target), the size and
 * classes of each instruction in a row up to the first one that is not straight-line
 * code (a branch of any kind, included as the run's last), and their bytes, so that
 * the decoder reads one small piece of memory in order. The decode cache has the same
 * facts one word per byte of code in separate arrays: reading them there, and the
 * bytes from the section, cost three cache misses per instruction on a program with
 * megabytes of code.
 *
 * Runs live in one Int32Array, {@link RUN_HEADER} words of header (see {@link Run})
 * then a 16-bit word per instruction and the code's bytes ({@link RunInsn}), about 45
 * bytes a run: most runs are one cache line. They are found by their first offset in
 * an open-addressed table or, mostly, from the run before ({@link InsnRuns.follow}).
 * A run entered in the middle of another repeats that one's tail, so runs are at
 * most {@link MAX_RUN} instructions long and the words of a section's runs are bounded
 * (past the bound, {@link InsnRuns.find} says -1 and the decoder goes the general way).
 */
import { mutableFields } from "../base/halves.js";
import * as addr from "../image/addr.js";
import * as flowClass from "./flow-class.js";
import type { FlowInsn } from "./flow-insn.js";
import type { SectionView } from "./section-view.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { addSize, sum } = addr;
const { FACT_SHIFT, FlowClass, InsnFact } = flowClass;

/** Instructions in a run at most; a longer stretch of straight-line code is several runs. */
export const MAX_RUN = 64;

/** A run's header words, from its index in {@link InsnRuns.words}. */
export const Run = {
  /** {@link RunFlag}s and the instruction count (bits 0-7) and ExecMode (bits 8-9). */
  Head: 0,
  /** The offset just past its last instruction. */
  End: 1,
  /** The last instruction's direct-branch displacement (0 if none). */
  Disp: 2,
  /**
   * Where the decoder went on after this run (see {@link InsnRuns.follow}): the run at
   * its end (index + 1, 0: not yet), and the last run elsewhere (a branch's target, a
   * return's or TIP's) with its offset + 1 (0: none yet).
   */
  FallRun: 3,
  OtherKey: 4,
  OtherRun: 5,
} as const;
export const RUN_HEADER = 6;

/** Bits of {@link Run.Head} beyond count and mode. */
export const RunFlag = {
  /** The last instruction lets a block go on: straight-line code, a direct jump or call. */
  On: 1 << 10,
  /** The last instruction is a jump or call: a block goes on at its target. */
  Branch: 1 << 11,
} as const;

/** A run's instruction count and mode from its {@link Run.Head}. */
export function runCount(head: number): number {
  return head & 0xff;
}
export function runMode(head: number): number {
  return (head >>> 8) & 3;
}

/**
 * An instruction of a run, one 16-bit word in {@link InsnRuns.halves} (they follow the
 * header: run index * 2 + {@link RUN_HEADER} * 2 on): its size (bits 0-3), FlowClass
 * (bits 4-7) and the isa layer's InsnClass (bits 8-12). The instructions' bytes follow
 * the halves, all of the run's together (its code as it is in the section), padded to a
 * word; the decoder copies them from there, not from the section (another cache miss).
 */
export const RunInsn = {
  size: (h: number): number => h & 15,
  flowClass: (h: number): number => (h >>> 4) & 15,
  insnClass: (h: number): number => (h >>> 8) & 31,
};

/** Words of runs per byte of section at most (beyond a floor for small sections), and overall. */
const WORDS_PER_BYTE = 4;
const MIN_WORDS = 1 << 16;
const MAX_WORDS = 1 << 25;
/** Words one run takes at most. */
const MAX_RUN_WORDS = RUN_HEADER + MAX_RUN / 2 + (MAX_RUN * 15) / 4 + 1;
/**
 * Words kept free past the last run: the decoder copies an instruction's bytes as
 * {@link RAW_WORDS} whole words, which may read up to 11 bytes past the last run's.
 */
const SLACK_WORDS = 3;
/** Words of an instruction's bytes the decoder copies at once (see InsnDecoder.fromRun). */
export const RAW_WORDS = 3;

const HASH = 0x9e3779b1 | 0;

export class InsnRuns {
  /** The runs (see {@link Run}), as words, halves, bytes and data (the same memory); replaced as it grows. */
  words = new Int32Array(4096);
  halves = new Uint16Array(this.words.buffer);
  bytes = new Uint8Array(this.words.buffer);
  data = new DataView(this.words.buffer);
  private used = 0;
  /** Open addressing, two words a slot: offset + 1 (0: empty) and the run's index. */
  private slots = new Int32Array(2 * 1024);
  private shift = 32 - 10;
  private count = 0;

  /** Runs for a section of `sectionSize` bytes, in `limit` words at most. */
  constructor(
    sectionSize: number,
    private readonly limit = Math.min(MAX_WORDS, MIN_WORDS + WORDS_PER_BYTE * sectionSize),
  ) {
    // Replaced as the runs and their table grow (see mutableFields).
    mutableFields(this, ["words", "halves", "bytes", "data", "slots", "shift"]);
  }

  /**
   * The run at `off` where the decoder goes on after run `from`: {@link find}, but
   * from what `from` remembers when it went there before (no look-up, whose table is
   * a cache miss on a large program). -1 when the runs are full.
   */
  follow(from: number, off: number, mode: number, view: SectionView, probe: FlowInsn): number {
    const words = this.words;
    if (off === words[from + Run.End]) {
      const f = words[from + Run.FallRun]!;
      if (f !== 0) return f - 1;
      const r = this.find(off, mode, view, probe);
      // find may have grown the words.
      if (r >= 0) this.words[from + Run.FallRun] = r + 1;
      return r;
    }
    const key = (off + 1) | 0;
    if (words[from + Run.OtherKey] === key) return words[from + Run.OtherRun]!;
    const r = this.find(off, mode, view, probe);
    if (r < 0) return r;
    this.words[from + Run.OtherKey] = key;
    this.words[from + Run.OtherRun] = r;
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
    if (this.used + MAX_RUN_WORDS + SLACK_WORDS > this.words.length) {
      const grown = new Int32Array(Math.min(this.limit, 2 * this.words.length + MAX_RUN_WORDS) + SLACK_WORDS);
      grown.set(this.words.subarray(0, this.used));
      this.words = grown;
      this.halves = new Uint16Array(grown.buffer);
      this.bytes = new Uint8Array(grown.buffer);
      this.data = new DataView(grown.buffer);
    }
    const halves = this.halves;
    const r = this.used;
    const winEnd = view.winEnd;
    const at = (r + RUN_HEADER) * 2;
    let o = off;
    let n = 0;
    let disp = 0;
    let flags = 0;
    let last = -1;
    while (n < MAX_RUN && o < winEnd) {
      addSize(view.baseHi, view.baseLo, o);
      probe.reset(sum.hi, sum.lo, mode);
      if (view.decodeAt(o, probe) < 0 || o + probe.size > winEnd) break;
      const c = probe.info & 15;
      last = c;
      halves[at + n] = probe.size | (c << 4) | (probe.iclass << 8);
      n++;
      o += probe.size;
      if (c === FlowClass.Other || c === FlowClass.Ptwrite) continue;
      disp = probe.disp;
      if (c === FlowClass.Jump || c === FlowClass.Call) {
        flags = RunFlag.Branch;
        if (((probe.info >>> FACT_SHIFT) & InsnFact.Direct) !== 0) flags |= RunFlag.On;
      }
      break;
    }
    // Straight-line code to the end (a full run, or the window's or decodable code's end).
    if (n !== 0 && flags === 0 && (last === FlowClass.Other || last === FlowClass.Ptwrite))
      flags = RunFlag.On;
    // The code's bytes after the halves.
    const bytesAt = (at + n) * 2;
    view.copyRaw(off, o - off, this.bytes, bytesAt);
    const words = this.words;
    words[r + Run.Head] = n | (mode << 8) | flags;
    words[r + Run.End] = o;
    words[r + Run.Disp] = disp;
    words[r + Run.FallRun] = 0;
    words[r + Run.OtherKey] = 0;
    words[r + Run.OtherRun] = 0;
    this.used = (bytesAt + (o - off) + 3) >> 2;
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
