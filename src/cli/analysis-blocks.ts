/**
 * The instructions of the block decoder's blocks, for the analysis: each distinct
 * block (start, instruction count, mode, last class) is walked through the code once
 * and its instructions kept as (address, size, class) in a pool of typed arrays, so a
 * block that runs again (loops, hot functions) is replayed without decoding. The
 * pool is bounded (past it blocks are walked every time) and emptied when the image
 * changes (sideband mmaps, context switches), as the walker's own cache is.
 */
import { type FlowTracker, growUint32, KeyTable } from "../analysis/index.js";
import { type Block, classify, FlowClass } from "../flow/index.js";
import type { Image } from "../image/index.js";
import type { CodeWalker } from "./flow-walk.js";

/** Instructions kept at most (10 bytes each: 20 MiB). */
const POOL_LIMIT = 1 << 21;
/** Distinct blocks kept at most (24 bytes each in the table). */
const BLOCK_LIMIT = 1 << 18;
/** A block whose walk failed: walked (and failing) every time. */
const UNCACHED = 0xffffffff;

export class BlockInsns {
  private table = new KeyTable(BLOCK_LIMIT);
  /** Blocks recorded: ids below this are in the pool. */
  private recorded = 0;
  private first: Uint32Array = new Uint32Array(1024);
  private hi: Uint32Array = new Uint32Array(1 << 12);
  private lo: Uint32Array = new Uint32Array(1 << 12);
  /** size | class << 8. */
  private sc: Uint16Array = new Uint16Array(1 << 12);
  private used = 0;
  private image: Image | undefined;
  private version = -1;

  constructor(private readonly walker: CodeWalker) {}

  /** Feed the block's instructions to `feed`. */
  feed(block: Block, image: Image, feed: FlowTracker): void {
    if (image !== this.image || image.version !== this.version) this.reset(image);
    const flags = block.mode | (block.iclass << 8) | (block.truncated ? 1 << 16 : 0);
    const id = this.table.id(block.ipHi, block.ipLo, block.ninsn, flags);
    if (id >= 0 && id < this.recorded) {
      const at = this.first[id]!;
      if (at !== UNCACHED) {
        const { hi, lo, sc } = this;
        for (let k = at, end = at + block.ninsn; k < end; k++) {
          const v = sc[k]!;
          feed.insn(hi[k]!, lo[k]!, v & 0xff, v >>> 8);
        }
        return;
      }
    }
    const record = id === this.recorded && this.used + block.ninsn <= POOL_LIMIT;
    if (record) {
      this.recorded++;
      if (id >= this.first.length) this.first = growUint32(this.first, id + 1);
      this.first[id] = this.walk(block, image, feed, true) ? this.used - block.ninsn : UNCACHED;
    } else {
      this.walk(block, image, feed, false);
    }
  }

  /** Walk the block through the code, feeding (and recording) its instructions: false when the walk failed. */
  private walk(block: Block, image: Image, feed: FlowTracker, record: boolean): boolean {
    const w = this.walker;
    const mode = block.mode;
    const start = this.used;
    if (record) this.reserve(start + block.ninsn);
    let hi = block.ipHi;
    let lo = block.ipLo;
    for (let n = block.ninsn; n > 0; n--) {
      let size = w.known(hi, lo, mode);
      if (size <= 0) {
        if (w.fetchInBlock(block, image, hi, lo) < 0) return false;
        size = w.decode(hi, lo, mode);
        if (size < 0) return false;
      }
      // Inside a block only straight-line code, direct jumps and direct calls run.
      const fclass =
        n === 1 && block.iclass !== FlowClass.Unknown
          ? block.iclass
          : classify(w.info.iclass, w.bytes, 0, 0) & 15;
      feed.insn(hi, lo, size, fclass);
      if (record) {
        const k = this.used++;
        this.hi[k] = hi;
        this.lo[k] = lo;
        this.sc[k] = size | (fclass << 8);
      }
      hi = w.next.hi;
      lo = w.next.lo;
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
    this.recorded = 0;
    this.used = 0;
  }
}
