/**
 * `ptkit perf`'s decode of one Intel PT stream: ptxed's loop (events before each
 * instruction, errors resynchronise at the next PSB) with the image switched to the
 * running process at each timed event (SWITCH/ITRACE_START records of the stream's
 * CPU, the process sideband replayed up to the event's TSC; a switch between two
 * events at its own time), and what it sees handed to a {@link PerfSink}:
 * instructions, taken branches (as perf script's flags name them), events and
 * errors. Time is the TSC of the last timed event or switch.
 * {@link interleave} runs several streams in time order.
 *
 * Two decoders run the same loop ({@link StreamContext.decoder}): the instruction
 * decoder, for the per-instruction listing, or the block decoder (4-5 times faster),
 * for everything else: the sink then gets blocks instead of instructions, and the
 * branches from each block's last instruction, which is its only branch when blocks
 * end at calls and jumps ({@link blockDecoderConfig}).
 */
import type { SymbolHit } from "../analysis/index.js";
import { type DecoderConfig, EventType, PtEvent, Status } from "../event/index.js";
import {
  Block,
  BlockDecoder,
  classify,
  FlowClass,
  Insn,
  InsnDecoder,
  type SectionCaches,
} from "../flow/index.js";
import type { Image } from "../image/index.js";
import { InsnClass } from "../isa/index.js";
import { ErrorCode, errorMessage, type TraceBytes } from "../packet/index.js";
import type { CpuSwitch, Timed, TraceGap } from "../perf/index.js";
import { lt64 } from "../time/index.js";
import { BranchLines, branchFlags } from "./branch-lines.js";
import { CodeWalker } from "./flow-walk.js";
import type { GraphStore } from "./io.js";
import type { Cr3Threads } from "./perf-cr3.js";
import type { ProcessImages } from "./perf-images.js";

const TWO_32 = 0x1_0000_0000;

/**
 * Whether an address (its high half) is the kernel's as perf decides for x86-64
 * (machine__kernel_start: 2^63 there, whatever the kernel map says).
 */
const kernelIp = (hi: number) => hi >>> 0 >= 0x80000000;

/** Who runs and when, as the sink sees it. */
export interface PerfWhere {
  cpu: number;
  pid: number;
  tid: number;
  /** TSC of the last timed event (halves), and whether inside the --time-range. */
  tscHi: number;
  tscLo: number;
  inRange: boolean;
  /** The address after the instruction of the branch last handed to {@link PerfSink.branch} (a call's return address). */
  fallHi?: number;
  fallLo?: number;
  /** The TSC when that branch's instruction ran (the sink hears of it when the next instruction shows where it went). */
  branchTscHi?: number;
  branchTscLo?: number;
  /**
   * branchTimes: Linux perf's decoder time of the instruction last handed on (the time
   * of the packet its walk leads to: perf applies timing packets before it walks),
   * the clock of perf script's instruction samples by time.
   */
  walkTscHi?: number;
  walkTscLo?: number;
  /** The PtEvent.timingSeq of that time: perf's decoder counts instructions from where it changes. */
  walkSeq?: number;
}

export interface PerfSink {
  /** An instruction (instruction decoder). */
  /** `names`: as for {@link branch} (given by the stream; callers elsewhere may leave it out). */
  insn(where: PerfWhere, insn: Insn, names?: AddressNames): void;
  /**
   * A block of instructions in `image` (block decoder), not empty; `lastClass` is the
   * {@link FlowClass} of its last instruction (a call is always last: see {@link blockDecoderConfig}).
   */
  block(where: PerfWhere, block: Block, image: Image, lastClass: number, decoder: BlockDecoder): void;
  /**
   * A taken branch: perf script's flags (call, jcc, tr strt, tr end  syscall, ...),
   * from → to (0 for none); `names` names the addresses in the running process.
   */
  branch(
    where: PerfWhere,
    flags: string,
    fromHi: number,
    fromLo: number,
    toHi: number,
    toLo: number,
    names: AddressNames,
  ): void;
  /** `names`: as for {@link branch} (given by the stream; callers elsewhere may leave it out). */
  event(where: PerfWhere, ev: PtEvent, offset: number, names?: AddressNames): void;
  /**
   * A decode error (`code`: its ErrorCode, at IP ipHi:ipLo where the decode stopped) or
   * lost trace data (no code).
   */
  error(where: PerfWhere, offset: number, message: string, code?: number, ipHi?: number, ipLo?: number): void;
  /** The running thread changed. */
  switched(where: PerfWhere): void;
  /** An overflow (OVF), before its error if any (perf script: what its decoder synced on so far stands). */
  overflow?(where: PerfWhere): void;
  /** A status update: what a PSB+ header states (the first one with its PSB's offset, `ev.psbOffset`). */
  status?(where: PerfWhere, ev: PtEvent, offset: number, names?: AddressNames): void;
  /**
   * The stream's time passed the end of --time-range (TSC toHi:toLo) with its thread
   * in the range: what came last in the range ran until then at most.
   */
  rangeEnd?(where: PerfWhere, toHi: number, toLo: number): void;
}

/** Names addresses of a process: `name+0xoff (dso)` as perf script prints them. */
export interface AddressNames {
  symbol(pid: number, hi: number, lo: number): string;
  /** Look hi:lo up: the symbol when {@link partSym} (in the hit returned), the file it is in as {@link partDso}. */
  parts(pid: number, hi: number, lo: number): SymbolHit;
  readonly partSym: boolean;
  readonly partDso: string | undefined;
  /** Where hi:lo of process pid is for a source-line lookup (see perf-script-srcline.ts); undefined: in no file. */
  source?(pid: number, hi: number, lo: number): { file: string; addr: bigint } | undefined;
  /** Read up to `size` bytes of code at hi:lo in process pid into `out`: the bytes read, 0 where none is mapped. */
  code(pid: number, hi: number, lo: number, out: Uint8Array, size: number): number;
}

/** Which part of the time line is shown: TSC bounds as halves (inclusive). */
export interface TscRange {
  fromHi: number;
  fromLo: number;
  toHi: number;
  toLo: number;
}

/** Which decoder runs a stream: instructions (to list them) or blocks (everything else). */
export type PerfDecoder = "insn" | "block";

/**
 * The block decoder's configuration for `ptkit perf`: blocks end at calls, so that a
 * call is the last instruction of its block (calls and returns, the analysis' call
 * count), and with `jumps` (--branches) also at jumps, so that every taken branch is.
 */
export function blockDecoderConfig(config: DecoderConfig, jumps: boolean): DecoderConfig {
  return { ...config, endOnCall: true, endOnJump: jumps };
}

export interface StreamContext {
  /** The stream's trace, read a window at a time (see TraceBytes). */
  trace: TraceBytes;
  /** The decoder's configuration (for the block decoder, see {@link blockDecoderConfig}). */
  config: DecoderConfig;
  decoder: PerfDecoder;
  /**
   * Time each branch as perf does (PerfWhere.branchTsc): a direct call or jump by the
   * time it ran, a branch that takes a packet (TIP, TNT) by that packet's time. Costs
   * a decode of the block decoder's calls and jumps.
   */
  branchTimes?: boolean;
  images: ProcessImages;
  /** This stream's CPU's switches (per-thread streams: none), in time order. */
  switches: Timed<CpuSwitch>[];
  /** Without switch records: who runs by CR3 (see Cr3Threads); `switches` then holds the threads seen running. */
  cr3s: Cr3Threads | undefined;
  /** Losses on this stream's CPU (per-thread streams: all), in time order: reported as errors when time passes them. */
  gaps: Timed<TraceGap>[];
  where: PerfWhere;
  range: TscRange | undefined;
  /** Show only this thread (--tid). */
  tid: number | undefined;
  sink: PerfSink;
  /** The section caches the stream's decoder shares with the other streams' (absent: its own). */
  caches?: SectionCaches;
  /**
   * After a decode error, go on as Linux perf's decoder does: at the next address a
   * packet gives whole (BlockDecoder.perfResync), the branch into code that cannot be
   * read shown; else at the next PSB, as ptxed does.
   */
  perfResync?: boolean;
  /**
   * Errors as perf script reports them: a binary that cannot be read by its first two
   * errors (else once, at the end: see ProcessImages.charge).
   */
  perfErrors?: boolean;
  /** Where the fast path (perf-graph.ts) keeps its decision graphs between runs. */
  graphStore?: GraphStore;
  /** The TSC the stream waits at (halves) while suspended: see {@link decodePerfStream}. */
  nextHi: number;
  nextLo: number;
  /**
   * While the stream has its turn ({@link interleave} sets them): the last TSC (halves)
   * up to which it goes on without suspending, as nothing else that takes turns with
   * it waits at an earlier time (nor at the same, listed before it); a turnHi of -1:
   * it suspends at every time. Each suspension costs (half a million on the bench
   * perf.data, whose one stream took turns with nothing).
   */
  turnHi: number;
  turnLo: number;
}

/**
 * Decode a stream, suspending before each event that moves time on (its TSC in
 * `nextHi`/`nextLo`), so that streams can be interleaved in time order.
 */
export function* decodePerfStream(s: StreamContext): Generator<void, void, void> {
  const { where, images, switches, gaps, sink, range, tid, cr3s } = s;
  let nextSwitch = 0;
  let nextGap = 0;
  if (s.trace.size === 0) return;
  const blocks = s.decoder === "block";
  const options = { image: images.image(where.pid), config: s.config, caches: s.caches };
  const dec = blocks ? new BlockDecoder(s.trace, options) : new InsnDecoder(s.trace, options);
  dec.perfResync = s.perfResync === true;
  const insn = new Insn();
  // tickOnUse: an instruction that took a packet, whose sample waits for the packet's
  // tick (perf's sample time moves at the instruction that takes the packet); a spare.
  let heldInsn: Insn | undefined;
  // (A copy: the decoder keeps decoding into one record, which it keeps a view of.)
  const spareInsn = new Insn();
  const holdInsns = s.branchTimes === true && s.config.tickOnUse;
  // A held return from the kernel (iret, sysret, far ret) waits past its packet's tick
  // for the next instruction: into user space, perf's sample of it has the estimate
  // (see nextInsn); meanwhile the decoder clock it saw at the tick (heldWalk*).
  let heldPastTick = false;
  let heldWalkHi: number | undefined;
  let heldWalkLo: number | undefined;
  let heldWalkSeq: number | undefined;
  const flushInsn = () => {
    const h = heldInsn!;
    heldInsn = undefined;
    if (heldPastTick) {
      heldPastTick = false;
      const { walkTscHi, walkTscLo, walkSeq } = where;
      where.walkTscHi = heldWalkHi;
      where.walkTscLo = heldWalkLo;
      where.walkSeq = heldWalkSeq;
      if (where.inRange) sink.insn(where, h, images);
      where.walkTscHi = walkTscHi;
      where.walkTscLo = walkTscLo;
      where.walkSeq = walkSeq;
    } else if (where.inRange) sink.insn(where, h, images);
  };
  const kernelReturn = (i: Insn) =>
    kernelIp(i.ipHi) &&
    (i.insnClass === InsnClass.Iret ||
      i.insnClass === InsnClass.Sysret ||
      i.insnClass === InsnClass.FarReturn);
  const block = new Block();
  // Block decoder: the last instruction of each block, decoded again for its size and class.
  const walker = blocks ? new CodeWalker() : undefined;
  const ev = new PtEvent();
  // Where the last decode stopped (a missing binary there is charged, not an error).
  let failHi = 0;
  let failLo = 0;
  // The branch the last instruction may have taken, until the next one shows where it
  // went; a taken one happened at its instruction's time (see leave).
  const lines = new BranchLines((flags, fromHi, fromLo, toHi, toLo, taken) => {
    if (taken) {
      where.fallHi = lines.fallHi;
      where.fallLo = lines.fallLo;
      where.branchTscHi = leftDirect || s.branchTimes ? leftHi : where.tscHi;
      where.branchTscLo = leftDirect || s.branchTimes ? leftLo : where.tscLo;
      // A return from the kernel into user space (sysret, iret, ...): perf times it by
      // its estimate, as a tr strt (see estimate; tr strt's own is the Enabled event's).
      if (s.branchTimes && kernelIp(fromHi) && !kernelIp(toHi) && (toHi !== 0 || toLo !== 0)) {
        estimate(arriving);
        where.branchTscHi = where.tscHi;
        where.branchTscLo = where.tscLo;
      }
    }
    sink.branch(where, flags, fromHi, fromLo, toHi, toLo, images);
  });
  // branchTimes: where perf's decoder stands (decoder->ip): where the last branch that
  // took a packet (or the last trace start or interrupt) went; perf walks on from there
  // only with the next packet. An overflow's error names it.
  let standHi = 0;
  let standLo = 0;
  // An overflow (branchTimes): perf reports an error (at its last branch's time, where
  // its decoder stands), loses the branch the last instruction may have taken, and
  // starts the trace again where the FUP after the OVF says (a tr strt, see onEvent).
  // Where the decoder was before the event being taken (its next block's start).
  let preHi = 0;
  let preLo = 0;
  // Before the OVF's time: a branch the last instruction took on a packet before the
  // OVF went where the decoder stood (perf shows it and stands there).
  // (Before the held status updates of a PSB+ the OVF cut short: they came after.)
  const beforeOverflow = () => {
    if (heldInsn) {
      if (kernelIp(heldInsn.ipHi) && (preHi !== 0 || preLo !== 0) && !kernelIp(preHi)) estimate();
      flushInsn();
    }
    if (lines.branchClass !== 0 && !leftDirect && (preHi !== 0 || preLo !== 0)) {
      standHi = preHi;
      standLo = preLo;
      if (where.inRange) lines.arrive(lines.branchClass, preHi, preLo);
    }
    lines.branchClass = 0;
  };
  // At the OVF's time: perf's error (none before its decoder had an IP).
  const overflow = () => {
    if (where.inRange) sink.overflow?.(where);
    if (where.inRange && (standHi !== 0 || standLo !== 0))
      sink.error(where, dec.offset, errorMessage(-ErrorCode.Overflow), ErrorCode.Overflow, standHi, standLo);
    standHi = 0;
    standLo = 0;
  };
  let leftHi = 0;
  let leftLo = 0;
  // The branch is a direct call or jump (branchTimes): no packet, it happened at
  // leftHi:leftLo; the others take their time from their packet, seen by the next instruction.
  let leftDirect = false;
  // branchTimes: the branch took a packet, whose time (if it moved time on) is the tick
  // that comes right after it; events after that (a PSB's, ...) are later than the branch.
  let tickFollows = false;
  // branchTimes: perf's decoder clock (where.walkTsc) and its instructions since it
  // last moved (perf's timestamp_insn_cnt), the last CBR, and a time perf estimated
  // (see estimate) that later times below it do not lower.
  let walkInsns = 0;
  // The decoder's clock before the walk of the instruction or block whose arrival hands
  // on the branch that led to it (perf's state for that branch came before that walk).
  const arriving = { hi: 0, lo: 0, insns: 0, set: false };
  let cbr = 0;
  let floorOn = false;
  let floorHi = 0;
  let floorLo = 0;
  const walkAt = (hi: number, lo: number, seq: number) => {
    // (Only on: a PSB+ held until its FUP's IP is older than what was walked since.)
    if (seq <= (where.walkSeq ?? -1)) return;
    where.walkSeq = seq;
    where.walkTscHi = hi;
    where.walkTscLo = lo;
    walkInsns = 0;
  };
  const at = (hi_: number, lo_: number) => {
    let hi = hi_;
    let lo = lo_;
    if (floorOn) {
      if (lt64(floorHi, floorLo, hi, lo)) floorOn = false;
      else {
        hi = floorHi;
        lo = floorLo;
      }
    }
    where.tscHi = hi;
    where.tscLo = lo;
    const { pid, tid: was } = where;
    while (
      nextSwitch < switches.length &&
      !lt64(hi, lo, switches[nextSwitch]!.tscHi, switches[nextSwitch]!.tscLo)
    ) {
      const sw = switches[nextSwitch++]!;
      where.pid = sw.pid;
      where.tid = sw.tid;
      cr3s?.seen(sw.pid, sw.tid);
    }
    settle(pid, was, images.advance(hi, lo));
    while (nextGap < gaps.length && !lt64(hi, lo, gaps[nextGap]!.tscHi, gaps[nextGap]!.tscLo)) {
      const gap = gaps[nextGap++]!;
      if (where.inRange) sink.error(where, dec.offset, gap.what);
    }
  };
  // After the running thread (was pid/tid) or the process images may have changed.
  const settle = (pid: number, was: number, imagesChanged: boolean) => {
    const switched = where.pid !== pid || where.tid !== was;
    const wasInRange = where.inRange;
    where.inRange =
      (tid === undefined || where.tid === tid) &&
      (!range ||
        (!lt64(where.tscHi, where.tscLo, range.fromHi, range.fromLo) &&
          !lt64(range.toHi, range.toLo, where.tscHi, where.tscLo)));
    if (wasInRange && range && !switched && lt64(range.toHi, range.toLo, where.tscHi, where.tscLo))
      sink.rangeEnd?.(where, range.toHi, range.toLo);
    if (imagesChanged || switched) dec.image = images.image(where.pid);
    if (switched && where.inRange) sink.switched(where);
  };
  // branchTimes: a PSB+'s status updates wait until the decode reaches the IP its FUP
  // gives, as perf's decoder walks there before it reports the PSB (the direct branches
  // on the way keep the time before it, and a branch taken to there comes first).
  const held: PtEvent[] = [];
  let nHeld = 0;
  let heldHi = 0;
  let heldLo = 0;
  let heldAtIp = false;
  const hold = () => {
    if (nHeld === held.length) held.push(new PtEvent());
    held[nHeld++]!.copyFrom(ev);
    if (!heldAtIp && !ev.ipSuppressed && (ev.ipHi !== 0 || ev.ipLo !== 0)) {
      heldAtIp = true;
      heldHi = ev.ipHi;
      heldLo = ev.ipLo;
    }
  };
  // The held status updates, now: where the decode is at `hi:lo` (to `endHi:endLo`,
  // the block's last instruction) if given, else whatever it is.
  const release = (hi?: number, lo?: number, endHi = hi!, endLo = lo!) => {
    if (nHeld === 0) return;
    if (heldAtIp && hi !== undefined && (lt64(heldHi, heldLo, hi, lo!) || lt64(endHi, endLo, heldHi, heldLo)))
      return;
    const n = nHeld;
    nHeld = 0;
    heldAtIp = false;
    for (let i = 0; i < n; i++) onEvent(held[i]!);
  };
  const onEvent = (ev: PtEvent) => {
    if (tickFollows) {
      tickFollows = false;
      if (ev.type === EventType.Tick && ev.hasTsc) {
        // (Not below an estimate: perf's time only rises past one.)
        const floored = floorOn && !lt64(floorHi, floorLo, ev.tscHi, ev.tscLo);
        leftHi = floored ? floorHi : ev.tscHi;
        leftLo = floored ? floorLo : ev.tscLo;
      }
    }
    // (A TIP.PGD is the packet the instruction took, like a tick's TNT or TIP.)
    if (heldInsn && ev.type !== EventType.Tick && ev.type !== EventType.Disabled) flushInsn();
    if (ev.hasTsc) at(ev.tscHi, ev.tscLo);
    if (s.branchTimes && ev.type === EventType.Overflow) overflow();
    if (heldInsn && !heldPastTick && ev.type === EventType.Tick && kernelReturn(heldInsn)) {
      heldPastTick = true;
      heldWalkHi = where.walkTscHi;
      heldWalkLo = where.walkTscLo;
      heldWalkSeq = where.walkSeq;
    }
    if (heldInsn && !heldPastTick) flushInsn();
    // (After the instruction held for this event: it ran before the event's timing packets.)
    if (s.branchTimes) {
      if (ev.type === EventType.Cbr) cbr = ev.ratio;
      if (ev.hasTsc) walkAt(ev.tscHi, ev.tscLo, ev.timingSeq);
    }
    if (cr3s && (ev.type === EventType.Paging || ev.type === EventType.AsyncPaging)) {
      const { pid, tid: was } = where;
      if (cr3s.paging(ev.payloadHi, ev.payloadLo, where)) settle(pid, was, false);
    }
    const pending = lines.pending(ev);
    // Ticks (with --time-range) only move time on.
    // Status updates (a PSB+ header's) only to the sinks that want them (perf script's psb and cbr lines).
    if (!ev.statusUpdate) resyncPsb = false;
    else if (where.inRange && !quietStatus) {
      if (resyncPsb) {
        // perf's resync that found a PSB shows it from nowhere (its sample's from is 0).
        const shown = resyncEvent.copyFrom(ev);
        shown.ipHi = shown.ipLo = shown.fromHi = shown.fromLo = 0;
        sink.status?.(where, shown, dec.offset, images);
      } else sink.status?.(where, ev, dec.offset, images);
    }
    // (A PSB+ that finds tracing on is no branch from nowhere: perf shows none. Without
    // time, perf decodes timeless: nothing to estimate.)
    const restart = s.branchTimes === true && ev.type === EventType.Overflow && !ev.ipSuppressed;
    if (s.branchTimes && ev.type === EventType.Enabled && ev.hasTsc && !ev.statusUpdate && !kernelIp(ev.ipHi))
      estimate();
    // (perf counts the instructions for its estimate afresh from an overflow.)
    if (restart && !kernelIp(ev.ipHi)) {
      walkInsns = 0;
      estimate();
    }
    if (
      s.branchTimes &&
      !ev.ipSuppressed &&
      (restart || ev.type === EventType.Enabled || ev.type === EventType.AsyncBranch)
    ) {
      standHi = ev.ipHi;
      standLo = ev.ipLo;
    }
    if (ev.statusUpdate || !where.inRange || ev.type === EventType.Tick) return;
    // Tracing stopped by an interrupt where the last instruction's branch went: the
    // branch was taken (perf script shows it before the tr end).
    // An interrupt (AsyncBranch) likewise: the branch went where the interrupt came
    // from, and the interrupt is a branch of its own (perf: "hw int", or "tr end  async"
    // when its destination is not traced).
    lines.arriveBefore(ev, pending);
    sink.event(where, ev, dec.offset, images);
    // The branches the event makes happen at its time.
    where.branchTscHi = where.tscHi;
    where.branchTscLo = where.tscLo;
    lines.eventLines(ev, pending);
    if (restart) lines.restart(ev.ipHi, ev.ipLo);
  };
  // Tracing starts in user space (a branch from nowhere or, perf's rule, from the
  // kernel, into user code): perf times it, and what follows until time passes that,
  // by an estimate: its decoder's time plus 2 TSC ticks per instruction walked since
  // that time moved, at nominal ratio / CBR (intel-pt-decoder.c's
  // intel_pt_est_timestamp, in integers as there; intel-pt.c takes it unconditionally).
  // `before`: the clock before the walk that is under way (see arriving), when set.
  const estimate = (before?: typeof arriving) => {
    const from = before?.set === true;
    const nominal = s.config.nomFreq & 0xff;
    let est = (from ? before.insns : walkInsns) * 2;
    if (cbr !== 0 && nominal !== 0) est = Math.floor((est * nominal) / cbr);
    // In halves: a TSC may be past 2^53.
    const lo = (from ? before.lo : (where.walkTscLo ?? where.tscLo)) + est;
    floorOn = true;
    floorHi = ((from ? before.hi : (where.walkTscHi ?? where.tscHi)) + Math.floor(lo / TWO_32)) >>> 0;
    floorLo = lo >>> 0;
    where.tscHi = floorHi;
    where.tscLo = floorLo;
  };
  const keepArriving = () => {
    arriving.hi = where.walkTscHi ?? where.tscHi;
    arriving.lo = where.walkTscLo ?? where.tscLo;
    arriving.insns = walkInsns;
    arriving.set = true;
  };
  // Switches before TSC hi:lo take effect at their own time, in time order with the
  // other streams: a thread leaves this CPU before another CPU takes it up.
  function* switchesBefore(hi: number, lo: number): Generator<void, void, void> {
    for (let sw = switches[nextSwitch]; sw && lt64(sw.tscHi, sw.tscLo, hi, lo); sw = switches[nextSwitch]) {
      s.nextHi = sw.tscHi;
      s.nextLo = sw.tscLo;
      if (lt64(s.turnHi, s.turnLo, sw.tscHi, sw.tscLo)) yield;
      at(sw.tscHi, sw.tscLo);
    }
  }
  // The time of the packet a failed walk was for (perf's time of the error).
  const errorAt = { hi: 0, lo: 0 };
  // A perf resync found a PSB: its status updates come next (see onEvent).
  let resyncPsb = false;
  const resyncAt = { hi: 0, lo: 0, seq: 0 };
  // Status updates that perf shows none of (see the errors).
  let quietStatus = false;
  const resyncEvent = new PtEvent();
  let status = dec.syncForward();
  for (;;) {
    if (status < 0) {
      if (heldInsn) flushInsn();
      if (s.perfResync && status !== -ErrorCode.Eos && where.inRange && (failHi !== 0 || failLo !== 0))
        // perf shows the branch into the code it then cannot read (before a PSB held
        // for the IP that walk was to reach).
        lines.arrive(lines.branchClass, failHi, failLo);
      // A PSB held for the IP of its FUP, which that walk was to reach: perf shows none
      // (it takes up there: see BlockDecoder.perfResync). (One whose IP the decode had
      // reached, failing there, it shows.)
      quietStatus =
        s.perfResync === true &&
        status !== -ErrorCode.Eos &&
        heldAtIp &&
        (failHi !== heldHi || failLo !== heldLo);
      release();
      quietStatus = false;
      if (status === -ErrorCode.Eos) {
        // The switches after the trace still happen: a thread leaves this CPU.
        yield* switchesBefore(0xffffffff, 0xffffffff);
        return;
      }
      const charged = status === -ErrorCode.NoMap ? images.charge(where.pid, failHi, failLo) : 0;
      // perf reports a binary it cannot read twice, then takes up again without a word
      // (dso__data_status_seen); ptkit's own outputs report it once, at the end.
      if ((charged === 0 || (s.perfErrors && charged <= 2)) && where.inRange) {
        // perf's time of the error: its decoder's on the packet the walk was for (for
        // the error's line: the stream's time moves on where the decode takes up).
        const { tscHi, tscLo } = where;
        if (s.perfErrors && dec.pendingTime(errorAt) && lt64(tscHi, tscLo, errorAt.hi, errorAt.lo)) {
          where.tscHi = errorAt.hi;
          where.tscLo = errorAt.lo;
        }
        sink.error(where, dec.offset, errorMessage(status), -status, failHi, failLo);
        where.tscHi = tscHi;
        where.tscLo = tscLo;
      }
      lines.branchClass = 0;
      if (!s.perfResync) {
        status = dec.syncForward();
        continue;
      }
      // perf's way: on at the next address a packet gives whole; a trace start there,
      // at that packet's time.
      status = dec.resync();
      while (status === -ErrorCode.EventIgnored) {
        status = dec.event(ev);
        if (status >= 0) status = dec.resync();
      }
      // (Where the packets themselves fail, a bad packet, the next PSB: perf steps a byte.)
      if (status < 0 && status !== -ErrorCode.Eos) {
        status = dec.syncForward();
        continue;
      }
      resyncPsb = status >= 0 && !dec.resyncedAtAddress && (status & Status.EventPending) !== 0;
      if (status < 0 || !dec.resyncedAtAddress) continue;
      if (dec.resyncTime(resyncAt) && (resyncAt.hi !== where.tscHi || resyncAt.lo !== where.tscLo)) {
        // Time moves on as at a timed event (the event loop below does this inline).
        yield* switchesBefore(resyncAt.hi, resyncAt.lo);
        s.nextHi = resyncAt.hi;
        s.nextLo = resyncAt.lo;
        if (lt64(s.turnHi, s.turnLo, resyncAt.hi, resyncAt.lo)) yield;
        at(resyncAt.hi, resyncAt.lo);
        if (s.branchTimes) walkAt(resyncAt.hi, resyncAt.lo, resyncAt.seq);
      }
      const hi = dec.ipHi;
      const lo = dec.ipLo;
      if (s.branchTimes) {
        // A trace start into user space: timed by perf's estimate (see onEvent), whose
        // count of instructions its decoder walked starts afresh at the error.
        walkInsns = 0;
        if (!kernelIp(hi)) estimate();
        standHi = hi;
        standLo = lo;
      }
      if (where.inRange) {
        where.branchTscHi = where.tscHi;
        where.branchTscLo = where.tscLo;
        lines.restart(hi, lo);
      }
      continue;
    }
    while (status >= 0 && status & Status.EventPending) {
      if (s.branchTimes) {
        preHi = dec.ipHi;
        preLo = dec.ipLo;
      }
      status = dec.event(ev);
      if (status < 0) break;
      if (ev.hasTsc && (ev.tscHi !== where.tscHi || ev.tscLo !== where.tscLo)) {
        // (A generator made per timed event cost more than the rest of the event.)
        const sw = switches[nextSwitch];
        if (sw !== undefined && lt64(sw.tscHi, sw.tscLo, ev.tscHi, ev.tscLo))
          yield* switchesBefore(ev.tscHi, ev.tscLo);
        s.nextHi = ev.tscHi;
        s.nextLo = ev.tscLo;
        if (lt64(s.turnHi, s.turnLo, ev.tscHi, ev.tscLo)) yield;
      }
      if (s.branchTimes && ev.statusUpdate) hold();
      else {
        if (s.branchTimes && ev.type === EventType.Overflow) beforeOverflow();
        release();
        onEvent(ev);
      }
    }
    if (status < 0) continue;
    if (status & Status.Eos) {
      status = -ErrorCode.Eos;
      continue;
    }
    status = blocks ? nextBlock(dec as BlockDecoder) : nextInsn(dec as InsnDecoder);
  }

  // Execution goes on at hi:lo: perf's decoder stands there if the last instruction took a packet.
  function stand(hi: number, lo: number): void {
    if (lines.branchClass === 0 || leftDirect) return;
    standHi = hi;
    standLo = lo;
  }

  // The last instruction shown ran at hi:lo, `size` bytes, of FlowClass `fclass` (InsnClass `iclass`).
  function leave(hi: number, lo: number, size: number, fclass: number, iclass: number): void {
    lines.leave(hi, lo, size, fclass, iclass);
    leftHi = where.tscHi;
    leftLo = where.tscLo;
    leftDirect = iclass === InsnClass.Call || iclass === InsnClass.Jump;
    tickFollows = s.branchTimes === true && !leftDirect;
  }

  // The instruction decoder's step: one instruction, its status.
  function nextInsn(d: InsnDecoder): number {
    const status = d.next(insn);
    failHi = insn.ipHi;
    failLo = insn.ipLo;
    // An event came first that the decoder could not announce: take it now.
    if (status === -ErrorCode.EventIgnored) return Status.EventPending;
    // An error after decoding the instruction still shows the instruction.
    if (status < 0 && insn.iclass === FlowClass.Unknown) return status;
    if (heldInsn) {
      // A branch from the kernel into user space: perf's sample of it has the estimate.
      if (kernelIp(heldInsn.ipHi) && !kernelIp(insn.ipHi)) estimate();
      flushInsn();
    }
    if (s.branchTimes) {
      keepArriving();
      walkAt(d.walkTscHi, d.walkTscLo, d.walkSeq);
      walkInsns++;
    }
    if (s.branchTimes) stand(insn.ipHi, insn.ipLo);
    if (where.inRange) lines.arrive(lines.branchClass, insn.ipHi, insn.ipLo);
    arriving.set = false;
    release(insn.ipHi, insn.ipLo);
    const hold =
      holdInsns &&
      insn.insnClass !== InsnClass.Call &&
      insn.insnClass !== InsnClass.Jump &&
      branchFlags(insn.iclass, insn.insnClass) !== undefined;
    if (!hold && where.inRange) sink.insn(where, insn, images);
    leave(insn.ipHi, insn.ipLo, insn.size, insn.iclass, insn.insnClass);
    if (hold) heldInsn = spareInsn.copy(insn);
    return status;
  }

  // The block decoder's step: one block (a block that ends in an error holds the
  // instructions before it, as the instruction decoder shows them), its status.
  function nextBlock(d: BlockDecoder): number {
    const times = s.branchTimes === true;
    const aheadHi = times ? d.aheadTscHi : 0;
    const aheadLo = times ? d.aheadTscLo : 0;
    const aheadSeq = times ? d.aheadTimingSeq : 0;
    const status = d.next(block);
    if (times && block.ninsn !== 0) {
      keepArriving();
      walkAt(aheadHi, aheadLo, aheadSeq);
      walkInsns += block.ninsn;
    }
    if (block.ninsn === 0) {
      failHi = block.ipHi;
      failLo = block.ipLo;
      return status;
    }
    const hi = block.endIpHi;
    const lo = block.endIpLo;
    failHi = hi;
    failLo = lo;
    // The last instruction's size matters after a conditional branch (not taken: the
    // next one) and a call (tracing stopped there resumes after it).
    let fclass: number = block.iclass;
    let size = 0;
    // A far transfer's name (iret, sysret, int, ...) needs the instruction's class, as
    // does the time of a branch (branchTimes: direct calls and jumps take no packet).
    // The block decoder has the class of most blocks' last instruction (the decode cache
    // that of most of the rest, the size too); the rest are decoded here.
    let iclass: number = InsnClass.Other;
    const wantClass =
      fclass === FlowClass.FarCall ||
      fclass === FlowClass.FarReturn ||
      (times && (fclass === FlowClass.Call || fclass === FlowClass.Jump));
    const wantSize =
      fclass === FlowClass.Unknown ||
      fclass === FlowClass.CondJump ||
      fclass === FlowClass.Call ||
      fclass === FlowClass.FarCall;
    let classKnown = false;
    if (wantClass && block.lastClass >= 0 && (!wantSize || block.lastSize !== 0)) {
      // The walk that ended the block had it (and the size, where wanted).
      iclass = block.lastClass;
      classKnown = true;
      if (wantSize) size = block.lastSize;
    } else if (wantClass) {
      const n = d.lastInsnDecoded(block);
      if (n > 0) {
        iclass = d.decodedClass;
        classKnown = true;
        if (wantSize) size = n;
      }
    }
    if (wantSize && size === 0) {
      size = fclass === FlowClass.Unknown ? 0 : d.lastInsnSize(block);
      if (size === 0) {
        const w = walker!;
        w.use(d.image);
        size = w.known(hi, lo, block.mode);
        if (size <= 0 && w.fetchInBlock(block, d.image, hi, lo) === 0) size = w.decode(hi, lo, block.mode);
        if (size <= 0) size = 0;
        else if (fclass === FlowClass.Unknown) fclass = classify(w.info.iclass, w.bytes, 0, 0) & 15;
      }
    }
    if (times) stand(block.ipHi, block.ipLo);
    if (where.inRange) lines.arrive(lines.branchClass, block.ipHi, block.ipLo);
    arriving.set = false;
    release(block.ipHi, block.ipLo, hi, lo);
    if (where.inRange) sink.block(where, block, d.image, fclass, d);
    if (wantClass && !classKnown) {
      const w = walker!;
      w.use(d.image);
      if (w.fetchInBlock(block, d.image, hi, lo) === 0 && w.decode(hi, lo, block.mode) > 0)
        iclass = w.info.iclass;
    }
    leave(hi, lo, size, fclass, iclass);
    return status;
  }
}

/**
 * Something else that runs in time order with the streams (the samples of other
 * events): `run` suspends before each thing it does, at TSC nextHi:nextLo.
 */
export interface Timeline {
  nextHi: number;
  nextLo: number;
  run(): Generator<void, void, void>;
}

/** All ones: a TSC half no time is past. */
const NEVER = 0xffffffff;

/**
 * Run the streams, each as far as the earliest time any of them waits at, until all
 * end; `others` too, and at a time a stream waits at as well, first (perf synthesizes
 * the Intel PT samples up to a record's time, leaving those at its time, before it
 * hands the record on).
 */
export function interleave(streams: readonly StreamContext[], others: readonly Timeline[] = []): void {
  // Each runs to its first wait.
  for (const s of streams) s.turnHi = -1;
  const live = [
    ...others.map((t) => ({ s: t, run: t.run(), stream: undefined as StreamContext | undefined })),
    ...streams.map((s) => ({ s, run: decodePerfStream(s), stream: s as StreamContext | undefined })),
  ].filter((r) => !r.run.next().done);
  while (live.length > 0) {
    let best = 0;
    for (let i = 1; i < live.length; i++) {
      const a = live[i]!.s;
      const b = live[best]!.s;
      if (lt64(a.nextHi, a.nextLo, b.nextHi, b.nextLo)) best = i;
    }
    const turn = live[best]!;
    if (turn.stream !== undefined) {
      // The others wait where they are while it goes on: it would be chosen again at
      // any time up to the earliest of theirs (one listed before it goes first on a tie).
      let hi = NEVER;
      let lo = NEVER;
      for (let i = 0; i < live.length; i++) {
        if (i === best) continue;
        const o = live[i]!.s;
        let oHi = o.nextHi;
        let oLo = o.nextLo;
        if (i < best) {
          oHi = oLo === 0 ? oHi - 1 : oHi;
          oLo = oLo === 0 ? NEVER : oLo - 1;
        }
        if (lt64(oHi, oLo, hi, lo)) {
          hi = oHi;
          lo = oLo;
        }
      }
      turn.stream.turnHi = hi;
      turn.stream.turnLo = lo;
    }
    if (turn.run.next().done) live.splice(best, 1);
  }
}
