/**
 * The instruction decoder (libipt's `pt_insn_*`): one instruction per call, a thin
 * layer over {@link BlockDecoder} that walks each block's instructions, taking them
 * from the section's runs (see insn-runs.ts) where it has caches. Statuses and
 * events are the block decoder's, reported at the end of each block, so both
 * decoders give the same instructions and events in the same order.
 *
 * ```ts
 * const dec = new InsnDecoder(trace, { image });
 * drive(dec, new Insn(), { record: (insn) => log(insn.ip, insn.size, insn.iclass) });
 * ```
 *
 * See {@link BlockDecoder} for the loop {@link drive} runs, written by hand; with this
 * decoder, `next` returning -EventIgnored means "call `event` first" (not an error),
 * and an instruction whose `iclass` is not Unknown ran even when `next` returned an
 * error after it.
 *
 * `next` returns -EventIgnored when an event was due that had not been announced
 * (call {@link event} then); errors leave the failing instruction's ip, mode and
 * isid in the record with `iclass` Unknown. Code that loops without trace ends in
 * -BadQuery as in the block decoder (its loop guard), after the same instructions.
 */

import * as errors from "../base/errors.js";
import { defaultDecoderConfig } from "../event/config.js";
import type { PtEvent } from "../event/types.js";
import * as eventTypes from "../event/types.js";
import * as addr from "../image/addr.js";
import type { Image } from "../image/index.js";
import type { InsnClass } from "../isa/index.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import { BlockDecoder } from "./block-decoder.js";
import * as flowClass from "./flow-class.js";
import * as flowInsn from "./flow-insn.js";
import { FlowInsn } from "./flow-insn.js";
import type { FlowOptions } from "./flow-state.js";
import * as insnRuns from "./insn-runs.js";
import { Block, type Insn } from "./records.js";
import type { SectionView } from "./section-view.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { Status } = eventTypes;
const { ErrorCode } = errors;
const { FlowClass } = flowClass;
type FlowClass = flowClass.FlowClass;
const { addOffset, next, nextIp } = flowInsn;
const { TWO_32 } = addr;
const { InsnRuns, RAW_WORDS, RUN_HEADER, Run, RunFlag, RunInsn, runCount, runMode } = insnRuns;
/**
 * 1 for the classes whose run goes on at the displacement (a direct jump or call inside
 * a block), else 0: a table, where the test for a call, run only when the class was no
 * jump, first ran once V8 had optimised the decoder's loop, and threw its code away.
 */
const TAKES_DISP = new Uint8Array(16);
TAKES_DISP[FlowClass.Jump] = 1;
TAKES_DISP[FlowClass.Call] = 1;
type InsnRuns = insnRuns.InsnRuns;

/** Calls whose runs {@link InsnDecoder} remembers for their returns (a power of 2). */
const CALL_RUNS = 64;

export class InsnDecoder {
  /** The block decoder underneath (for its queries). */
  private readonly blocks: BlockDecoder;
  /** The block being walked; its ip is the next instruction's. */
  private readonly block = new Block();
  /** The block decoder's status for the current block, reported when it is used up. */
  private status = 0;
  private readonly work = new FlowInsn();
  /**
   * Offset of the block's next instruction from the code reader's origin while it is
   * known to be in the reader's current section window; -1 otherwise.
   */
  private off = -1;
  /**
   * The run being taken (see {@link startRun}): instructions left to take from it (0:
   * none, take the next the general way), its words and the next one's index, its
   * last instruction's displacement, and the origin of {@link off}. While a run is
   * taken, the block's ip is not kept: {@link runDone} sets it.
   */
  private left = 0;
  private halves: Uint16Array = new Uint16Array(0);
  private bytes: Uint8Array = new Uint8Array(0);
  private data: DataView = new DataView(new ArrayBuffer(0));
  /** The last `insn.raw` filled from a run, and a view of it for word copies. */
  private rawOf: Uint8Array | null = null;
  private rawData: DataView = new DataView(new ArrayBuffer(0));
  /**
   * Where the run's bytes of the instruction at offset {@link off} are: at off +
   * rawDelta in {@link bytes} (the bytes follow the run's halves; both advance by the
   * instruction's size).
   */
  private rawDelta = 0;
  private at = 0;
  private disp = 0;
  private baseHi = 0;
  private baseLo = 0;
  /** Where the current run's halves end: its last instruction was taken when {@link at} is there. */
  private runEnd = 0;
  /**
   * The runs that ended in the most recent calls (a ring, the newest at callTop, with
   * whose runs they are): a return goes on where its call's run ends, which that run
   * remembers (InsnRuns.follow), where the return's own run would remember only the
   * caller it returned to last. `returned`: the last run taken ended in a return.
   */
  private readonly callRuns = new Int32Array(CALL_RUNS);
  private readonly callOwners: (InsnRuns | null)[] = new Array(CALL_RUNS).fill(null);
  private callTop = 0;
  private callDepth = 0;
  private returned = false;
  /** The run taken last, and whose it is: where the next is looked up from (InsnRuns.follow). */
  private lastRun = -1;
  private lastRuns: InsnRuns | null = null;
  /** The code reader's current section, which the block decoder walks in. */
  private readonly view: SectionView;
  /**
   * Fill `insn.raw` with the instruction's bytes (libipt's record has them). False:
   * the caller reads no bytes (it counts instructions), and those taken from runs are
   * not copied (a quiet count of the large bench trace took 8% less time).
   */
  raw = true;

  constructor(trace: Uint8Array | TraceBytes, options: FlowOptions = {}) {
    // Blocks end where they must; ending them after calls or jumps changes nothing here.
    const config = { ...(options.config ?? defaultDecoderConfig()), endOnCall: false, endOnJump: false };
    this.blocks = new BlockDecoder(trace, { ...options, config });
    this.view = this.blocks.code.msec;
  }

  /** Synchronise onto the next PSB: status flags or -error. */
  syncForward(): number {
    return this.started(this.blocks.syncForward());
  }

  /** Synchronise onto the PSB before the current position (or the end). */
  syncBackward(): number {
    return this.started(this.blocks.syncBackward());
  }

  /** Synchronise onto the PSB at `offset`. */
  syncSet(offset: number): number {
    return this.started(this.blocks.syncSet(offset));
  }

  /** Resynchronise as Linux perf's decoder does (see {@link BlockDecoder.perfResync}). */
  get perfResync(): boolean {
    return this.blocks.perfResync;
  }
  set perfResync(on: boolean) {
    this.blocks.perfResync = on;
  }

  /** See {@link BlockDecoder.resyncTime}. */
  resyncTime(out: { hi: number; lo: number; seq: number }): boolean {
    return this.blocks.resyncTime(out);
  }

  /** See {@link BlockDecoder.resyncedAtAddress}. */
  get resyncedAtAddress(): boolean {
    return this.blocks.resyncedAtAddress;
  }

  /** Resynchronise after an error (see {@link BlockDecoder.resync}). */
  resync(): number {
    return this.started(this.blocks.resync());
  }

  private started(status: number): number {
    this.block.clear();
    this.off = -1;
    this.left = 0;
    this.status = 0;
    if (status < 0) return status;
    this.status = status;
    return status;
  }

  /**
   * The time the block being walked leads to (see BlockDecoder.aheadTscHi), taken
   * when the block was decoded: Linux perf's decoder time for its instructions.
   */
  walkTscHi = 0;
  walkTscLo = 0;
  /** Its BlockDecoder.aheadTimingSeq. */
  walkSeq = -1;

  /** Where the next instruction starts (the block decoder's IP; 0 while tracing is off). */
  get ipHi(): number {
    return this.blocks.ipHi;
  }

  get ipLo(): number {
    return this.blocks.ipLo;
  }

  get offset(): number {
    return this.blocks.offset;
  }

  get syncOffset(): number {
    return this.blocks.syncOffset;
  }

  get image(): Image {
    return this.blocks.image;
  }

  set image(image: Image) {
    this.blocks.image = image;
  }

  /** See {@link BlockDecoder.time}; the values are {@link tsc}, {@link lostMtc}, {@link lostCyc}. */
  time(): number {
    return this.blocks.time();
  }

  /** See {@link BlockDecoder.pendingTime}. */
  pendingTime(out: { hi: number; lo: number }): boolean {
    return this.blocks.pendingTime(out);
  }

  get tsc(): bigint {
    return this.blocks.tsc;
  }

  get lostMtc(): number {
    return this.blocks.lostMtc;
  }

  get lostCyc(): number {
    return this.blocks.lostCyc;
  }

  coreBusRatio(): number {
    return this.blocks.coreBusRatio();
  }

  get cr3(): bigint {
    return this.blocks.cr3;
  }

  get vmcs(): bigint {
    return this.blocks.vmcs;
  }

  /**
   * The next instruction into `insn` (libipt `pt_insn_next`): status flags (at a
   * block's end, the block decoder's) or -error.
   */
  next(insn: Insn): number {
    // Most instructions come from a run (see InsnRuns), inside the block being walked.
    if (this.left !== 0) return this.fromRun(insn);
    return this.nextSlow(insn);
  }

  /** {@link next} when the instruction does not come from a run right away. */
  private nextSlow(insn: Insn): number {
    const block = this.block;
    while (block.ninsn === 0) {
      // Errors and events belong to the end of the previous block.
      if (this.status < 0) return this.describe(insn, this.status);
      if (this.status & Status.EventPending) return this.describe(insn, -ErrorCode.EventIgnored);
      this.blocks.aheadTime(this);
      const status = this.blocks.next(block);
      this.status = status;
      this.off = -1;
      if (block.ninsn !== 0) break;
      if (status < 0) return this.describe(insn, status);
      // An event hid behind an empty block.
      if (status & Status.EventPending) return this.describe(insn, -ErrorCode.EventIgnored);
    }
    if (this.off < 0 && !(block.truncated && block.ninsn === 1) && block.isid !== 0) {
      // Where libipt reads the instruction from (its error is the instruction's).
      const isid = this.blocks.code.lookupForInsns(block.ipHi, block.ipLo);
      if (isid < 0) return this.describe(insn, isid);
      this.off = this.view.off;
    }
    if (this.off >= 0 && this.startRun()) return this.fromRun(insn);
    this.off = -1;
    this.describe(insn, 0);
    const work = this.work;
    work.reset(block.ipHi, block.ipLo, block.mode);
    const err = this.decode(work, insn);
    if (err < 0) return err;
    insn.iclass = (work.info & 15) as FlowClass;
    insn.insnClass = work.iclass as InsnClass;
    insn.size = work.size;
    insn.truncated = work.truncated;
    block.ninsn -= 1;
    if (block.ninsn !== 0) {
      // Inside a block the way on needs no trace.
      const status = nextIp(work);
      if (status < 0) return status;
      block.ipHi = next.hi;
      block.ipLo = next.lo;
      return 0;
    }
    return this.blockEnd();
  }

  /** After the block's last instruction: its status, once it did end where it should. */
  private blockEnd(): number {
    const block = this.block;
    if (block.ipHi !== block.endIpHi || block.ipLo !== block.endIpLo) return -ErrorCode.Internal;
    return this.status;
  }

  /**
   * Start taking the block's instructions from the run at offset {@link off} (>= 0) of
   * the section the block decoder just walked: true when there is at least one to take
   * (then {@link left} says how many); false when the general way must go first.
   * Only straight-line code and direct jumps and calls occur inside a block: a run's
   * last instruction that is something else is left to the general way unless it is
   * the block's last too.
   */
  private startRun(): boolean {
    const view = this.view;
    const cache = view.cache;
    if (cache === null) return false;
    const block = this.block;
    const off = this.off;
    let runs = cache.runs;
    if (runs === null) {
      runs = new InsnRuns(cache.section.size);
      cache.runs = runs;
    }
    let last = this.lastRun;
    let owner = this.lastRuns;
    if (this.returned) {
      // After a return, from the run of the call that returned (its end is here).
      this.returned = false;
      const depth = this.callDepth;
      if (depth !== 0) {
        const top = this.callTop;
        const call = this.callRuns[top]!;
        this.callTop = (top - 1) & (CALL_RUNS - 1);
        this.callDepth = depth - 1;
        if (this.callOwners[top] === runs && runs.words[call + Run.End] === off) {
          last = call;
          owner = runs;
        }
      }
    }
    const r =
      last >= 0 && owner === runs
        ? runs.follow(last, off, block.mode, view, this.work)
        : runs.find(off, block.mode, view, this.work);
    if (r < 0) return false;
    this.lastRuns = runs;
    this.lastRun = r;
    const words = runs.words;
    const head = words[r + Run.Head]!;
    const n = runCount(head);
    if (n === 0 || runMode(head) !== block.mode || words[r + Run.End]! > view.winEnd) return false;
    // A truncated last instruction comes from the bytes the block carries.
    const want = block.truncated ? block.ninsn - 1 : block.ninsn;
    let left = Math.min(n, want);
    if (left === n && block.ninsn > n && (head & RunFlag.On) === 0) left--;
    if (left <= 0) return false;
    const at = (r + RUN_HEADER) * 2;
    this.halves = runs.halves;
    this.bytes = runs.bytes;
    this.data = runs.data;
    this.at = at;
    this.runEnd = at + n;
    this.rawDelta = (at + n) * 2 - off;
    this.left = left;
    this.disp = words[r + Run.Disp]!;
    this.baseHi = view.baseHi;
    this.baseLo = view.baseLo;
    return true;
  }

  /**
   * The fast way through a block: the next instruction of the current run (at offset
   * {@link off}, word {@link at}); fills all of `insn` and consumes it.
   */
  private fromRun(insn: Insn): number {
    const block = this.block;
    const at = this.at;
    const m = this.halves[at]!;
    const off = this.off;
    const size = RunInsn.size(m);
    let hi = this.baseHi;
    let lo = this.baseLo + off;
    if (lo >= TWO_32) {
      lo -= TWO_32;
      hi = (hi + 1) >>> 0;
    }
    insn.ipHi = hi;
    insn.ipLo = lo;
    insn.isid = block.isid;
    insn.mode = block.mode;
    insn.iclass = RunInsn.flowClass(m) as FlowClass;
    insn.insnClass = RunInsn.insnClass(m) as InsnClass;
    insn.size = size;
    insn.speculative = block.speculative;
    insn.truncated = false;
    // The run's bytes follow its instructions' halves. They are copied as whole words,
    // the same number for every instruction: a loop over its size mispredicts its end
    // about once an instruction. raw[size..] gets the next instructions' bytes, which
    // the record does not promise anything about.
    if (this.raw) {
      const j = off + this.rawDelta;
      const raw = insn.raw;
      if (raw !== this.rawOf) this.viewRaw(raw);
      const src = this.data;
      const dst = this.rawData;
      dst.setInt32(0, src.getInt32(j, true), true);
      dst.setInt32(4, src.getInt32(j + 4, true), true);
      dst.setInt32(8, src.getInt32(j + 8, true), true);
      if (size > 4 * RAW_WORDS) this.copyTail(raw, j, size);
    }
    block.ninsn -= 1;
    this.off = (off + size) | 0;
    this.at = at + 1;
    if (--this.left !== 0) return 0;
    return this.runDone(hi, lo, m);
  }

  /** The bytes of a long instruction past the words {@link fromRun} copies (kept out of it: V8 inlines it). */
  private copyTail(raw: Uint8Array, j: number, size: number): void {
    const bytes = this.bytes;
    for (let k = 4 * RAW_WORDS; k < size; k++) raw[k] = bytes[j + k]!;
  }

  /** Copy to `raw` from now on (see {@link fromRun}). */
  private viewRaw(raw: Uint8Array): void {
    this.rawOf = raw;
    this.rawData = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  }

  /**
   * The run's instructions are taken, the last at (hi:lo) with {@link RunInsn} `m`: the
   * block's end, or where it goes on (the next run, when there is one to take).
   */
  private runDone(hi: number, lo: number, m: number): number {
    const block = this.block;
    const c = RunInsn.flowClass(m);
    if (this.at === this.runEnd) {
      // The run's last instruction: a call's run is where its return goes on from.
      if (c === FlowClass.Call) this.pushCall();
      else if (c === FlowClass.Return) this.returned = true;
    }
    if (block.ninsn === 0) {
      block.ipHi = hi;
      block.ipLo = lo;
      return this.blockEnd();
    }
    let to = this.off;
    to += TAKES_DISP[c]! * this.disp;
    addOffset(this.baseHi, this.baseLo, to);
    block.ipHi = next.hi;
    block.ipLo = next.lo;
    const view = this.view;
    this.off = to >= view.winBegin && to < view.winEnd ? to | 0 : -1;
    if (this.off >= 0) this.startRun();
    return 0;
  }

  /** Remember the current run, which ends in a call (see {@link callRuns}). */
  private pushCall(): void {
    const top = (this.callTop + 1) & (CALL_RUNS - 1);
    this.callTop = top;
    this.callRuns[top] = this.lastRun;
    this.callOwners[top] = this.lastRuns;
    if (this.callDepth < CALL_RUNS) this.callDepth += 1;
  }

  /**
   * Clear `insn` but for the fields every instruction of the block shares (what an
   * error return leaves in it, and where a decode starts from); returns `status`.
   */
  private describe(insn: Insn, status: number): number {
    const block = this.block;
    insn.clear();
    insn.speculative = block.speculative;
    insn.isid = block.isid;
    insn.mode = block.mode;
    insn.ipHi = block.ipHi;
    insn.ipLo = block.ipLo;
    return status;
  }

  /**
   * Decode the block's next instruction into `work` and its bytes into `insn.raw`: a
   * truncated last instruction from the bytes the block carries, others from the image.
   */
  private decode(work: FlowInsn, insn: Insn): number {
    const block = this.block;
    const code = this.blocks.code;
    if (block.truncated && block.ninsn === 1) {
      work.raw.set(block.raw.subarray(0, block.size));
      // As in libipt, the instruction is not marked truncated on this path.
      const err = code.decodeRaw(work, block.size);
      if (err < 0) return err;
      insn.raw.set(block.raw.subarray(0, work.size));
      return 0;
    }
    const err = code.decode(work, true);
    if (err < 0) return err;
    insn.raw.set(work.raw.subarray(0, work.size));
    return 0;
  }

  /**
   * The pending event into `out` (libipt `pt_insn_event`); -BadQuery inside a block,
   * where no event is due.
   */
  event(out: PtEvent): number {
    if (this.block.ninsn !== 0) return -ErrorCode.BadQuery;
    const status = this.blocks.event(out);
    if (status < 0) return status;
    this.status = status;
    return status;
  }
}
