/**
 * The instructions of the block decoder's blocks, for the analysis: each distinct
 * block (start, instruction count, mode, last class) is walked through the code once
 * and its instructions kept as (address, size, class) in a pool of typed arrays, so a
 * block that runs again (loops, hot functions) is replayed without decoding. The
 * pool is bounded (past it blocks are walked every time) and emptied when the image
 * changes (sideband mmaps, context switches), as the walker's own cache is.
 *
 * Call stacks and coverage look at few instructions: with each block its instructions
 * that move the stack (direct calls inside it, a call or return at its end) and those
 * that end a coverage block (every branch: direct jumps and calls inside it, the
 * branch at its end) are kept, and a replay feeds those one by one (the movers for
 * call stacks alone, the transfers with coverage) and the runs between them in one
 * step each ({@link FlowTracker.run}). JSON Lines get every instruction.
 */
import { endsBlock, type FlowTracker, growUint32, KeyTable, movesStack } from "../analysis/index.js";
import { type Block, type BlockDecoder, classify, FlowClass } from "../flow/index.js";
import type { Image } from "../image/index.js";
import { ExecMode, type InsnClass } from "../isa/index.js";
import type { CodeWalker } from "./flow-walk.js";

/** Instructions kept at most (10 bytes each: 20 MiB). */
const POOL_LIMIT = 1 << 21;
/** Distinct blocks kept at most. */
const BLOCK_LIMIT = 1 << 18;
/** A block whose walk failed: walked (and failing) every time. */
const UNCACHED = 0xffffffff;
/**
 * The direct-mapped cache in front of the table: a hot block costs one probe of one
 * 16-byte slot (words: lo, hi, ninsn, and its {@link Tag}). 64K slots (1 MiB): on a
 * large code footprint (the bench's perf.data: 106K distinct blocks) 2K slots missed
 * 94% of the time and 64K miss 43%, each miss a probe of the larger table; a fuzz
 * target's ~10,000 blocks fit.
 */
const RECENT_BITS = 16;
/** The last word of a recent slot: id << 8 | the block's flags (7 bits, see {@link blockFlags}). */
const Tag = { Flags: 0x7f, IdShift: 8 } as const;

/** The key bits of a block beyond its address and length: mode (2 bits), last class (4), truncated (1). */
function blockFlags(block: Block): number {
  return block.mode | (block.iclass << 2) | (block.truncated ? 64 : 0);
}

export class BlockInsns {
  private table = new KeyTable(BLOCK_LIMIT);
  /** Recorded blocks looked up recently, by start address and instruction count (ninsn 0: empty). */
  private readonly recent = new Uint32Array(4 << RECENT_BITS);
  /** Blocks recorded: ids below this are in the pool. */
  private recorded = 0;
  /** Per block id: its first instruction in the pool (or {@link UNCACHED}). */
  private first: Uint32Array = new Uint32Array(1024);
  /** Per block id: its first entry in {@link movers}; those of id run to that of id + 1. */
  private firstMover: Uint32Array = new Uint32Array(1025);
  /** Pool indices of the instructions that move the stack ({@link movesStack}). */
  private movers: Uint32Array = new Uint32Array(1024);
  private nMovers = 0;
  /** Per block id: its first entry in {@link transfers}; those of id run to that of id + 1. */
  private firstTransfer: Uint32Array = new Uint32Array(1025);
  /** Pool indices of the instructions that end a coverage block ({@link endsBlock}). */
  private transfers: Uint32Array = new Uint32Array(1024);
  private nTransfers = 0;
  private hi: Uint32Array = new Uint32Array(1 << 12);
  private lo: Uint32Array = new Uint32Array(1 << 12);
  /** size | class << 8. */
  private sc: Uint16Array = new Uint16Array(1 << 12);
  private used = 0;
  private image: Image | undefined;
  private version = -1;

  constructor(private readonly walker: CodeWalker) {}

  /**
   * Feed the block's instructions to `feed`; `decoded`, the decoder that just returned
   * the block, saves decoding new blocks' instructions again ({@link BlockDecoder.decodedInsn}).
   */
  feed(block: Block, image: Image, feed: FlowTracker, decoded?: BlockDecoder): void {
    if (image !== this.image || image.version !== this.version) {
      // The walker's decodes are the old image's too (a walker of its own: see use).
      this.walker.use(image);
      this.reset(image);
    }
    const n = block.ninsn;
    if (n === 0) return;
    if (decoded !== undefined && this.lastAlone(block, feed, decoded)) return;
    const hi = block.ipHi;
    const lo = block.ipLo;
    const flags = blockFlags(block);
    const r = this.recent;
    const s = 4 * ((lo ^ (lo >>> RECENT_BITS) ^ (n << 5)) & ((1 << RECENT_BITS) - 1));
    let tag = r[s + 3]!;
    if (r[s] !== lo || r[s + 1] !== hi || r[s + 2] !== n || (tag & Tag.Flags) !== flags) {
      tag = this.lookup(block, image, feed, flags, s, decoded);
      if (tag < 0) return;
    }
    this.replay(tag >>> Tag.IdShift, n, feed);
  }

  /**
   * Call stacks alone, from a decoder whose blocks end at every call: in 64-bit code
   * only a block's last instruction can move the stack (calls end blocks, and returns
   * and far transfers need trace, which ends them too), so the block is the run before
   * it and then it, and needs no walk. False where that does not hold or the last
   * instruction's size or class is not known: walk or replay it.
   */
  private lastAlone(block: Block, feed: FlowTracker, decoded: BlockDecoder): boolean {
    if (feed.everyInsn || feed.transfers || !decoded.endOnCall) return false;
    if (block.mode !== ExecMode.Bits64 || block.iclass === FlowClass.Unknown || block.truncated) return false;
    const size = decoded.lastInsnSize(block);
    if (size === 0) return false;
    const n = block.ninsn;
    // Without coverage the run's last address is not looked at: the block's end stands in.
    if (n > 1) feed.run(block.ipHi, block.ipLo, n - 1, block.endIpHi, block.endIpLo);
    feed.insn(block.endIpHi, block.endIpLo, size, block.iclass);
    return true;
  }

  /**
   * A block not in the recent slot `s`: when it is recorded (now or before), put it
   * there and return its tag (to be replayed); else walk it, feeding `feed`, and return -1.
   */
  private lookup(
    block: Block,
    image: Image,
    feed: FlowTracker,
    flags: number,
    s: number,
    decoded: BlockDecoder | undefined,
  ): number {
    const id = this.table.id(block.ipHi, block.ipLo, block.ninsn, flags);
    if (id >= 0 && id < this.recorded) {
      if (this.first[id] === UNCACHED) {
        this.walk(block, image, feed, false, decoded);
        return -1;
      }
    } else if (id === this.recorded && this.used + block.ninsn <= POOL_LIMIT) {
      this.record(id, block, image, feed, decoded);
      return -1;
    } else {
      this.walk(block, image, feed, false, decoded);
      return -1;
    }
    const tag = (id << Tag.IdShift) | flags;
    const r = this.recent;
    r[s] = block.ipLo;
    r[s + 1] = block.ipHi;
    r[s + 2] = block.ninsn;
    r[s + 3] = tag;
    return tag;
  }

  /** Walk new block `id`, feeding `feed`, and keep its instructions in the pool (or mark it {@link UNCACHED}). */
  private record(
    id: number,
    block: Block,
    image: Image,
    feed: FlowTracker,
    decoded: BlockDecoder | undefined,
  ): void {
    this.recorded++;
    this.first = growUint32(this.first, id + 1);
    this.firstMover = growUint32(this.firstMover, id + 2);
    this.firstTransfer = growUint32(this.firstTransfer, id + 2);
    const start = this.used;
    if (this.walk(block, image, feed, true, decoded)) {
      this.first[id] = start;
    } else {
      // Forget what the failed walk recorded.
      this.first[id] = UNCACHED;
      this.used = start;
      this.nMovers = this.firstMover[id]!;
      this.nTransfers = this.firstTransfer[id]!;
    }
    this.firstMover[id + 1] = this.nMovers;
    this.firstTransfer[id + 1] = this.nTransfers;
  }

  /**
   * Recorded block `id` of `n` instructions: each one (outputs that need every
   * instruction), else its runs and the instructions that end a block (coverage) or
   * that move the stack (call stacks alone).
   */
  private replay(id: number, n: number, feed: FlowTracker): void {
    const at = this.first[id]!;
    if (!feed.everyInsn) {
      if (feed.transfers)
        this.replayRuns(
          this.transfers,
          this.firstTransfer[id]!,
          this.firstTransfer[id + 1]!,
          at,
          at + n,
          feed,
        );
      else this.replayRuns(this.movers, this.firstMover[id]!, this.firstMover[id + 1]!, at, at + n, feed);
      return;
    }
    const { hi, lo, sc } = this;
    for (let k = at, end = at + n; k < end; k++) {
      const v = sc[k]!;
      feed.insn(hi[k]!, lo[k]!, v & 0xff, v >>> 8);
    }
  }

  /**
   * The pool's [at, end): the instructions at stops[m0, m1) (movers or transfers) one
   * by one, the runs between them in one step each.
   */
  private replayRuns(
    stops: Uint32Array,
    m0: number,
    m1: number,
    at: number,
    end: number,
    feed: FlowTracker,
  ): void {
    const { hi, lo, sc } = this;
    let k = at;
    for (let m = m0; m < m1; m++) {
      const j = stops[m]!;
      if (j > k) feed.run(hi[k]!, lo[k]!, j - k, hi[j - 1]!, lo[j - 1]!);
      const v = sc[j]!;
      feed.insn(hi[j]!, lo[j]!, v & 0xff, v >>> 8);
      k = j + 1;
    }
    if (k < end) feed.run(hi[k]!, lo[k]!, end - k, hi[end - 1]!, lo[end - 1]!);
  }

  /**
   * Walk the block through the code, feeding (and recording) its instructions: false
   * when the walk failed. An instruction `decoded` has (64-bit code: its targets need
   * no wrapping to the operand size) is taken from there, else fetched and decoded.
   */
  private walk(
    block: Block,
    image: Image,
    feed: FlowTracker,
    record: boolean,
    decoded: BlockDecoder | undefined,
  ): boolean {
    const w = this.walker;
    const mode = block.mode;
    const d = mode === ExecMode.Bits64 ? decoded : undefined;
    if (record) this.reserve(this.used + block.ninsn);
    let hi = block.ipHi;
    let lo = block.ipLo;
    for (let n = block.ninsn; n > 0; n--) {
      let size = d === undefined ? 0 : d.decodedInsn(hi, lo, mode);
      let iclass: number;
      let nextHi: number;
      let nextLo: number;
      if (size > 0) {
        iclass = d!.decodedClass;
        // Direct jumps and calls go to their target, the rest on to the next instruction.
        const step = d!.decodedStep;
        nextLo = (lo + step) >>> 0;
        nextHi = (hi + Math.floor((lo + step) / 4294967296)) >>> 0;
      } else {
        size = w.known(hi, lo, mode);
        if (size <= 0) {
          if (w.fetchInBlock(block, image, hi, lo) < 0) return false;
          size = w.decode(hi, lo, mode);
          if (size < 0) return false;
        }
        iclass = w.info.iclass;
        nextHi = w.next.hi;
        nextLo = w.next.lo;
      }
      // Inside a block only straight-line code, direct jumps and direct calls run.
      const fclass =
        n === 1 && block.iclass !== FlowClass.Unknown
          ? block.iclass
          : classify(iclass as InsnClass, w.bytes, 0, 0) & 15;
      feed.insn(hi, lo, size, fclass);
      if (record) {
        const k = this.used++;
        this.hi[k] = hi;
        this.lo[k] = lo;
        this.sc[k] = size | (fclass << 8);
        if (movesStack(fclass)) {
          if (this.nMovers === this.movers.length) this.movers = growUint32(this.movers, this.nMovers + 1);
          this.movers[this.nMovers++] = k;
        }
        if (endsBlock(fclass)) {
          if (this.nTransfers === this.transfers.length)
            this.transfers = growUint32(this.transfers, this.nTransfers + 1);
          this.transfers[this.nTransfers++] = k;
        }
      }
      hi = nextHi;
      lo = nextLo;
    }
    return true;
  }

  private reserve(need: number): void {
    if (need <= this.hi.length) return;
    const n = Math.max(need, 2 * this.hi.length);
    this.hi = growUint32(this.hi, n);
    this.lo = growUint32(this.lo, n);
    const sc = new Uint16Array(n);
    sc.set(this.sc);
    this.sc = sc;
  }

  private reset(image: Image): void {
    this.image = image;
    this.version = image.version;
    if (this.recorded === 0) return;
    this.table = new KeyTable(BLOCK_LIMIT);
    this.recent.fill(0);
    this.recorded = 0;
    this.used = 0;
    this.nMovers = 0;
    this.nTransfers = 0;
  }
}
