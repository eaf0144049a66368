/**
 * Coverage at packet speed (issue 13's decision cache): the coverage of a trace (the
 * AFL map, and with them the blocks and edges with their counts) made straight from
 * its packets and a {@link DecisionGraph} of the code, without the event, block and
 * instruction decoders. A TNT bit is one array read (the node's taken or
 * fall-through successor), a TIP mostly none (the node's last target) or one lookup;
 * each block entered is one byte of the map, or with the tables a block and an edge
 * (the same {@link Coverage} as the full decode feeds: the same hash, saturation,
 * gap rule and tables). {@link decodeFeed} walks the same way and feeds a
 * FlowTracker instead (call stacks: folded stacks weighed by instructions).
 *
 * It covers the packets fuzzing traces are made of: PSB+, TNT, TIP, TIP.PGE, TIP.PGD
 * with FUP (tracing stops where the FUP says, as at the end of a test case) and
 * without (at a branch: a system call, out of the filter), FUP + TIP (an interrupt
 * into traced code), OVF followed by FUP or TIP.PGE (a gap), MODE.Exec for 64-bit
 * code, timing packets (skipped: no time is kept), and RET compression. On anything
 * else — another mode, PTWRITE, power and TSX events, paging outside PSB+, a decode
 * error, a trace the code does not match, a full graph — it stops and says where and
 * why ({@link FastCoverage.status} < 0): the caller then decodes the whole trace the
 * general way, from a cleared {@link Coverage} (or analysis). What it does decode,
 * it decodes as the block decoder and FlowTracker do; tests compare the two
 * (test/analysis/coverage-decode.test.ts).
 *
 * Where the full decode's coverage sees an instruction run, this sees a node of the
 * graph run: the block a transfer (or tracing turned on) leads to is counted when its
 * first instruction runs ({@link GraphWalk.due}), the instructions of a node when its
 * transfer runs.
 */

import * as errors from "../base/errors.js";
import { doubleFields } from "../base/halves.js";
import { type Errata, packetQuirks } from "../cpu/errata.js";
import type { Clock } from "../event/clock.js";
import type { AddrFilter } from "../event/config.js";
import { bdm70Passes, tsxFlags } from "../event/psb.js";
import { EventType, PtEvent } from "../event/types.js";
import { AddrFilterCheck } from "../flow/addr-filter.js";
import * as decisionGraph from "../flow/decision-graph.js";
import { FlowClass } from "../flow/flow-class.js";
import {
  COLD_WORDS,
  DecisionGraph,
  NODE_WORDS,
  Node,
  NodeCold,
  NodeFlag,
  NodeKind,
  ReturnStack,
} from "../flow/index.js";
import type { Image } from "../image/image.js";
import * as decode from "../packet/decode.js";
import { LastIp } from "../packet/last-ip.js";
import { syncForwardIn } from "../packet/sync.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import * as types from "../packet/types.js";
import { Packet } from "../packet/types.js";
import type { FlowTracker } from "./callstack-tracker.js";
import { MAP_WALK_WORDS, MapLoop, mapLoop } from "./coverage-map-loop.js";
import type { Coverage } from "./export/coverage.js";
import { NodeIds } from "./node-ids.js";
import { type MapLoopEngine, mapLoopEngine } from "./wasm/map-loop-engine.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { decodePacket, windowCut } = decode;
const { endClass, endSize } = decisionGraph;
const { ErrorCode } = errors;
/** A packet decode's status at the end of the bytes. */
const EOS = -ErrorCode.Eos;
const { Flag, PacketType } = types;
const { Bad, CondJump, Jump, Call, IndirectJump, IndirectCall, Return, Far } = NodeKind;
const { Insns, Taken, Fall, Lo, Hi, Walk } = Node;
const { EndLo, EndHi, End, PrevLo, PrevHi } = NodeCold;
const W = NODE_WORDS;
const C = COLD_WORDS;

/** Direct jumps and calls followed without trace before the code is taken to loop without it. */
const MAX_DIRECT = 1 << 16;

/**
 * The layout of the nodes' {@link Node.Walk} words in walks that feed (see
 * DecisionGraph.claimWalkWords; the fused loop's is {@link MAP_WALK_WORDS}): the
 * transfer's length (bits 0-3) and FlowClass (4-7), and from bit 8 its address less the
 * node's ({@link FAR_END} when that does not fit), so that feeding a node reads none of
 * its cold words, mostly a cache miss of their own (half of `enter`'s time on
 * `ptkit perf -q --timeline`).
 */
const FEED_WALK_WORDS = 2;
const FAR_END = 0x7fffff;

/** Decision graphs kept at most by {@link decodeTimedFeed} (one per process image). */
const MAX_GRAPHS = 16;

/** See {@link GraphWalk.due}. */
const Due = { Restart: 1, Entry: 2 } as const;

/** Why the fast decode stopped: the general decode takes over. */
export const Handover = {
  Packet: "a packet this decoder leaves to the general one",
  Mode: "code that is not 64-bit",
  Sync: "tracing state that does not match the packets",
  Code: "code the trace does not match, or that is not mapped",
  Loop: "code that loops without trace",
  Full: "more code than the decision graph holds",
  Disable: "a TIP.PGD without IP where a MOV CR3 runs",
  Skl014: "a TIP.PGD without IP, which SKL014 may have left out (an address filter is set)",
  Time: "a timing packet the clock does not take",
} as const;

/** What {@link decodeTimedFeed} feeds: a FlowTracker, or anything fed the same way (ptkit perf's branch lines). */
export type WalkFeed = Pick<FlowTracker, "run" | "insn" | "event"> & {
  /**
   * false: the feed makes nothing of a jump's transfer (direct or indirect, conditional
   * or not: ptkit perf's calls and returns), so that what follows one jump is the same
   * after another. A node that ends in a jump, reached when the node fed last ended in
   * one too, is then held back: given to the feed only when an event or a run of
   * instructions comes before the next node (the walk's nodes are mostly such runs).
   */
  readonly jumps?: boolean;
  /**
   * A node's `n` instructions from (hi:lo), the last a transfer at (endHi:endLo) of
   * `size` bytes and FlowClass `fclass`, at once: given, the walk calls this instead
   * of {@link FlowTracker.run} and {@link FlowTracker.insn} for each node (perf's
   * branch lines; a FlowTracker, which does what the two would). `id` is the node's
   * id in `graph` (which a feed may keep things by, for as long as the graph's
   * generation holds).
   */
  node?(
    hi: number,
    lo: number,
    n: number,
    endHi: number,
    endLo: number,
    size: number,
    fclass: number,
    id: number,
    graph: DecisionGraph,
  ): void;
};

/**
 * Time for {@link decodeTimedFeed}: the event decoder's clock, and where the block
 * decoder would report a time (an event, or a tick) and the feed gets it.
 */
export interface WalkTime {
  /** The clock, fed every timing packet as the event decoder feeds it (src/event/clock.ts). */
  readonly clock: Clock;
  /** The block decoder reports tick events (DecoderConfig.enableTickEvents). */
  readonly ticks: boolean;
  /** Who runs follows CR3 (ptkit perf without switch records): PIP and VMCS are left to the general decode. */
  readonly cr3: boolean;
  /**
   * The block decoder reports an event or tick of TSC (hi:lo) here (ptkit perf moves
   * its sideband and thread switches on to there).
   */
  at(hi: number, lo: number): void;
  /**
   * Instructions or an event go to the feed next: the feed, with what {@link at}
   * changed applied (a thread switch, the time).
   */
  ready(): WalkFeed;
  /** The image control runs in (it may change at {@link at}). */
  readonly image: Image;
  /** A graph for the code of another image (one kept from an earlier run); absent, a new one. */
  graph?(image: Image, maxNodes: number, maxWalk: number): DecisionGraph;
  /**
   * Streams that take turns (see {@link timedWalk}): the walk is about to report TSC
   * (hi:lo); true when another stream goes first (the walk yields, and asks again when
   * it goes on). It may move this stream's sideband on meanwhile (its thread switches
   * before that time, each when its turn comes). Absent: the walk never waits.
   */
  waits?(hi: number, lo: number): boolean;
  /**
   * Control reached (hi:lo), whose code the image lacks, the event decoder at trace
   * offset `offset` (that of the packet after the one the walk was for): true when the
   * general decode (Linux perf's resync, BlockDecoder.perfResync) goes on from there as
   * the walk can, having done what it does at such a stop (charged it to the missing
   * binary, or printed its error), so that the walk goes on as perf's decoder does: the
   * packet the walk was for behind it, on to the next address a packet gives whole
   * (what is fed knows nothing until {@link resumed}). false (or absent): the walk
   * hands over.
   */
  lost?(hi: number, lo: number, offset: number): boolean;
  /** After {@link lost}: the walk takes up at (hi:lo) (perf's trace start there, from nowhere). */
  resumed?(hi: number, lo: number): void;
}

/** The outcome of {@link decodeCoverage}. */
export class FastCoverage {
  /** 0: the trace was decoded; -1: the general decoder must do it ({@link reason}, {@link offset}). */
  status = 0;
  /** Trace offset of the packet where it stopped. */
  offset = 0;
  reason = "";
  /** Instructions run (the flow decoders' count), when status is 0. */
  insns = 0;
  /** Near calls run (decodeTimedFeed). */
  calls = 0;
  /**
   * Errors printed on the way (ptkit perf's: a stop where nothing is mapped, see
   * WalkTime.lost): when it stops (status -1), the general decode that takes over
   * prints them again, so it leaves as many out.
   */
  errors = 0;

  /** An outcome that leaves the trace to the general decoder, for `reason` (no packet named). */
  static handedOver(reason: string): FastCoverage {
    return stop(new FastCoverage(), 0, reason);
  }
}

/**
 * The walk through the graph: where control is, and what the walk without trace
 * between decisions does (direct transfers, RET compression's stack, the map).
 * Methods return the node reached, or -1 with {@link why} set.
 */
class GraphWalk {
  /** The graph's nodes (replaced as the graph grows: see {@link refresh}). */
  nodes: Int32Array;
  /**
   * What the first instruction to run at the current node does to the map: nothing,
   * {@link Due.Restart} (tracing (re)started: a block from nowhere) or {@link Due.Entry}
   * (a transfer led here: the edge's block is entered). The full decode's coverage sees
   * the block when its first instruction runs (or an asynchronous event is taken there),
   * so a transfer whose target never runs (the trace ends) adds nothing.
   */
  due = 0;
  /**
   * [0]: instructions run, [1]: that count where the current coverage block began (a
   * typed array: a Number field past 2^31 is a heap number).
   */
  readonly icount = new Float64Array(2);
  why: string = Handover.Packet;
  /** Where the walk last failed for code that is not there ({@link Handover.Code} at a Bad node): that node, else -1. */
  badNode = -1;
  readonly stack = new ReturnStack();
  /** Blocks and edges are counted, not only the map. */
  readonly tables: boolean;
  /**
   * No feed and no time: the packets between decisions go to the fused loop
   * (coverage-map-loop.ts), which keeps the map, the tables or the count alone.
   */
  readonly fusable: boolean;
  /**
   * The node whose transfer (its last instruction) leads to the current node, or -1
   * when that is an interrupt taken at ({@link srcHi}:{@link srcLo}).
   */
  src = -1;
  private srcHi = 0;
  private srcLo = 0;
  /**
   * The last instruction run: the last one of node {@link lastNode}, or when that is -1
   * the one at ({@link lastHi}:{@link lastLo}).
   */
  lastNode = -1;
  private lastHi = 0;
  private lastLo = 0;
  /** The coverage block being run (with the tables): its first instruction. */
  private inBlock = false;
  /** The node where that block began. */
  private bNode = -1;
  /** With the tables: ids in the coverage's tables kept for each node. */
  private readonly ids = new NodeIds();
  private bHi = 0;
  private bLo = 0;
  /** The event handed to {@link feed}. */
  private readonly ev = new PtEvent();
  /** Instructions and events go to {@link feed} (else to {@link coverage}). */
  private readonly feeding: boolean;
  /** With {@link time}: the feed must be made ready (see WalkTime.ready) before it gets more. */
  dirty = true;
  /** With {@link time}: the time stamp of the events handed to the feed. */
  evHasTsc = false;
  evTscHi = 0;
  evTscLo = 0;
  /** Near calls run. */
  calls = 0;
  /** The kind of the node whose decision was taken last ({@link bit}, {@link tip}). */
  lastKind = 0;
  /** The feed makes nothing of jumps (WalkFeed.jumps false). */
  private skipJumps = false;
  /** With {@link skipJumps}: the node fed last ended in a jump (a node that does too may be {@link held}). */
  private jumpFed = false;
  /** A node that ends in a jump not given to the feed yet (-1: none): see WalkFeed.jumps. */
  private held = -1;
  /** The feed takes each node at once (WalkFeed.node). */
  private nodeFeed = false;

  constructor(
    public graph: DecisionGraph,
    /** Where blocks and edges go: directly into a Coverage, or through a FlowTracker (see {@link decodeFeed}). */
    readonly coverage: Coverage | undefined,
    public feed: WalkFeed | undefined,
    readonly time?: WalkTime,
  ) {
    this.nodes = graph.nodes;
    this.tables = coverage !== undefined && !coverage.mapOnly;
    this.fusable = feed === undefined && time === undefined;
    this.feeding = feed !== undefined || time !== undefined;
    this.skipJumps = feed?.jumps === false;
    this.nodeFeed = feed?.node !== undefined;
    if (this.fusable) graph.claimWalkWords(MAP_WALK_WORDS);
    else if (this.feeding) graph.claimWalkWords(FEED_WALK_WORDS);
    // Address halves and TSC halves: most are 2^31 or more.
    doubleFields(this, ["srcHi", "srcLo", "lastHi", "lastLo", "bHi", "bLo", "evTscHi", "evTscLo"]);
  }

  /** With {@link time}: the feed, ready for more. */
  private ready(): WalkFeed {
    if (this.dirty) {
      this.dirty = false;
      this.feed = this.time!.ready();
      this.skipJumps = this.feed.jumps === false;
      this.nodeFeed = this.feed.node !== undefined;
    }
    return this.feed!;
  }

  /** With a feed: node `p`'s instructions, its transfer last. */
  private feedNode(p: number): void {
    const nodes = this.nodes;
    const at = p * W;
    let e = nodes[at + Walk]!;
    if (e < 0) e = this.feedWord(p);
    const n = nodes[at + Insns]!;
    const feed = this.dirty && this.time !== undefined ? this.ready() : this.feed!;
    const fclass = (e >>> 4) & 15;
    if (fclass === FlowClass.Call) this.calls++;
    // A node held back is left out: the feed makes nothing of it before this one.
    this.held = -1;
    this.jumpFed = this.skipJumps && (fclass === FlowClass.Jump || fclass === FlowClass.CondJump);
    const hi = nodes[at + Hi]! >>> 0;
    const lo = nodes[at + Lo]! >>> 0;
    // The transfer's address: the node's plus the distance the word keeps (in the
    // same 4 GiB: see feedWord).
    const delta = e >>> 8;
    let endHi = hi;
    let endLo = lo + delta;
    if (delta === FAR_END) {
      endHi = this.graph.cold[p * C + EndHi]! >>> 0;
      endLo = this.graph.cold[p * C + EndLo]! >>> 0;
    }
    if (this.nodeFeed) {
      feed.node!(hi, lo, n, endHi, endLo, e & 15, fclass, p, this.graph);
      return;
    }
    const cold = this.graph.cold;
    if (n > 1) feed.run(hi, lo, n - 1, cold[p * C + PrevHi]! >>> 0, cold[p * C + PrevLo]! >>> 0);
    feed.insn(endHi, endLo, e & 15, fclass);
  }

  /**
   * Node `p`'s {@link FEED_WALK_WORDS} word, made from its cold words (and kept). The
   * distance is {@link FAR_END} unless the transfer's address has the node's high half
   * and lies less than that past it: the sum then needs no carry.
   */
  private feedWord(p: number): number {
    const nodes = this.nodes;
    const cold = this.graph.cold;
    const c = p * C;
    const end = cold[c + End]!;
    const hi = nodes[p * W + Hi]! >>> 0;
    const lo = nodes[p * W + Lo]! >>> 0;
    let delta = FAR_END;
    if (cold[c + EndHi]! >>> 0 === hi) {
      const d = (cold[c + EndLo]! >>> 0) - lo;
      if (d >= 0 && d < FAR_END) delta = d;
    }
    const e = endSize(end) | (endClass(end) << 4) | (delta << 8);
    nodes[p * W + Walk] = e;
    return e;
  }

  /** With a feed: an event of `type` (IPs where it has them). */
  event(
    type: EventType,
    ipHi: number,
    ipLo: number,
    suppressed: boolean,
    fromHi = 0,
    fromLo = 0,
    flags = 0,
  ): void {
    if (!this.feeding) return;
    this.unhold();
    const feed = this.time !== undefined ? this.ready() : this.feed!;
    const ev = this.ev.clear();
    if (this.time !== undefined) {
      ev.hasTsc = this.evHasTsc;
      ev.tscHi = this.evTscHi;
      ev.tscLo = this.evTscLo;
    }
    ev.type = type;
    ev.ipHi = ipHi;
    ev.ipLo = ipLo;
    ev.ipSuppressed = suppressed;
    ev.fromHi = fromHi;
    ev.fromLo = fromLo;
    ev.flags = flags;
    feed.event(ev);
  }

  /** The node at (hi:lo), or -1 (the graph is full). */
  node(hi: number, lo: number): number {
    const id = this.graph.node(hi, lo);
    if (id < 0) return this.fail(Handover.Full);
    this.nodes = this.graph.nodes;
    return id;
  }

  fail(why: string): number {
    this.why = why;
    this.badNode = -1;
    return -1;
  }

  /** Node `p` is Bad: the walk cannot go on there. */
  private failAt(p: number): number {
    this.fail(Handover.Code);
    this.badNode = p;
    return -1;
  }

  /** Whether control at node `p` stands where code is missing (a Bad node of no instructions: the walk fails at the next decision). */
  stuck(p: number): boolean {
    if (p < 0) return false;
    const nodes = this.graph.nodes;
    return nodes[p * W] === Bad && nodes[p * W + Insns] === 0;
  }

  /** Before an event or a run of instructions: the node {@link held} back goes to the feed, and then no node is held back until one is fed. */
  unhold(): void {
    if (this.held >= 0) this.feedNode(this.held);
    this.jumpFed = false;
  }

  /** The first instruction runs at node `p` (when something is {@link due}). */
  run(p: number): void {
    const cov = this.coverage;
    if (cov === undefined) {
      // The feed counts its own blocks (or the count is all there is).
      this.due = 0;
      return;
    }
    const lo = this.nodes[p * W + Lo]! >>> 0;
    if (this.due === Due.Entry) cov.enter(lo);
    else cov.restart(lo);
    if (this.tables) this.tablesAt(p, this.due, this.src, this.icount[0]!);
    this.due = 0;
  }

  /**
   * With the tables: the first instruction runs at node `p`, {@link due} being `due`,
   * reached from node `src` (when that is -1, from an interrupt at
   * ({@link srcHi}:{@link srcLo})), `insns` instructions run so far: the block before
   * and the edge here are counted as FlowTracker counts them (the AFL map is the
   * caller's). The fused loop calls it too (coverage-map-loop.ts).
   */
  tablesAt(p: number, due: number, src: number, insns: number): void {
    const cov = this.coverage!;
    const ic = this.icount;
    // (The fused loop may have grown the graph since this.nodes was taken.)
    const nodes = this.graph.nodes;
    const hi = nodes[p * W + Hi]! >>> 0;
    const lo = nodes[p * W + Lo]! >>> 0;
    if (due === Due.Entry && src >= 0) {
      // Node src's transfer led here: its block and this edge mostly have ids kept.
      const ids = this.ids;
      ids.use(this.graph.generation, cov);
      if (this.inBlock) {
        const n = insns - ic[1]!;
        if (this.bNode === src && n === nodes[src * W + Insns]!) {
          // The block is the node, entered at its start.
          const id = ids.runBlock(cov, src);
          if (id >= 0) {
            if (cov.varied) cov.setInsns(id, n);
          } else {
            const made = cov.blockId(this.bHi, this.bLo, this.endHi(src), this.endLo(src));
            ids.keepBlock(src, made);
            if (made >= 0) cov.countBlock(made, n);
          }
        } else {
          const id = cov.blockId(this.bHi, this.bLo, this.endHi(src), this.endLo(src));
          if (id >= 0) cov.countBlock(id, n);
        }
      }
      if (!ids.runEdge(cov, src, p)) {
        const id = cov.edgeId(this.endHi(src), this.endLo(src), hi, lo);
        if (id >= 0) {
          ids.keepEdge(cov, src, p, id);
          cov.countEdge(id);
        }
      }
    } else if (due === Due.Entry) {
      // An interrupt taken at (srcHi:srcLo).
      if (this.inBlock) cov.block(this.bHi, this.bLo, this.srcHi, this.srcLo, insns - ic[1]!);
      const id = cov.edgeId(this.srcHi, this.srcLo, hi, lo);
      if (id >= 0) cov.countEdge(id);
    }
    this.inBlock = true;
    this.bNode = p;
    this.bHi = hi;
    this.bLo = lo;
    ic[1] = insns;
  }

  /** Node `p`'s last instruction's address, high half. */
  private endHi(p: number): number {
    return this.graph.cold[p * C + EndHi]! >>> 0;
  }

  /** Node `p`'s last instruction's address, low half. */
  private endLo(p: number): number {
    return this.graph.cold[p * C + EndLo]! >>> 0;
  }

  /** The runs counted by node ({@link ids}) go to the coverage's counts. */
  settle(): void {
    if (this.tables) this.ids.settle(this.coverage!);
  }

  /** A gap (tracing off, the end): the coverage block ends at the last instruction run. */
  endBlock(): void {
    this.due = 0;
    if (!this.tables || !this.inBlock) return;
    this.inBlock = false;
    const ic = this.icount;
    if (ic[0]! === ic[1]!) return;
    let hi = this.lastHi;
    let lo = this.lastLo;
    if (this.lastNode >= 0) {
      hi = this.graph.cold[this.lastNode * C + EndHi]! >>> 0;
      lo = this.graph.cold[this.lastNode * C + EndLo]! >>> 0;
    }
    this.coverage!.block(this.bHi, this.bLo, hi, lo, ic[0]! - ic[1]!);
  }

  /** An interrupt taken at (hi:lo) goes to the node reached next. */
  interrupt(hi: number, lo: number): void {
    this.due = Due.Entry;
    this.src = -1;
    this.srcHi = hi;
    this.srcLo = lo;
  }

  /** Node `from`'s transfer (its last instruction) ran, to node `to`: `to`. */
  enter(from: number, to: number): number {
    if (this.feeding) {
      // (The node's kind says whether its transfer is a jump: conditional, direct or indirect.)
      const k = this.jumpFed ? this.nodes[from * W]! : Bad;
      if (k === CondJump || k === Jump || k === IndirectJump) this.held = from;
      else this.feedNode(from);
    }
    this.icount[0] += this.nodes[from * W + Insns]!;
    this.due = Due.Entry;
    this.src = from;
    this.lastNode = from;
    return to;
  }

  /** From node `p`, straight-line code and direct transfers up to the next decision: that node. */
  toDecision(p: number): number {
    for (let n = 0; ; n++) {
      if (this.due !== 0) this.run(p);
      const k = this.nodes[p * W]!;
      if (k !== Jump && k !== Call) return k === Bad ? this.failAt(p) : p;
      if (n === MAX_DIRECT) return this.fail(Handover.Loop);
      p = this.direct(p, k);
      if (p < 0) return -1;
    }
  }

  /** Node `p`'s direct jump or call (kind `k`) runs: the node at its target. */
  direct(p: number, k: number): number {
    if (k === Call) {
      let f = this.nodes[p * W + Fall]!;
      if (f === -1) f = this.successor(p, Fall);
      if (f === -1) return -1;
      if (f >= 0) this.stack.push(0, f);
    }
    let t = this.nodes[p * W + Taken]!;
    if (t === -1) t = this.successor(p, Taken);
    return t < 0 ? -1 : this.enter(p, t);
  }

  /** Node `p`'s successor `which` (Taken or Fall) the first time it is asked for: made now. */
  successor(p: number, which: number): number {
    const g = this.graph;
    const t = which === Taken ? g.taken(p) : g.fall(p);
    this.nodes = g.nodes;
    return t === -1 ? this.fail(Handover.Full) : t;
  }

  /** One TNT bit (`taken`: 1 or 0) from node `p`: the node it leads to. */
  bit(p: number, taken: number): number {
    p = this.toDecision(p);
    if (p < 0) return -1;
    const at = p * W;
    const k = this.nodes[at]!;
    this.lastKind = k;
    let t: number;
    if (k === CondJump) {
      const which = taken === 1 ? Taken : Fall;
      t = this.nodes[at + which]!;
      if (t === -1) {
        t = this.successor(p, which);
        if (t < 0) return -1;
      }
    } else if (k === Return && taken === 1 && this.stack.pop() === 0) {
      t = this.stack.poppedLo;
    } else {
      return this.fail(Handover.Code);
    }
    return this.enter(p, t);
  }

  /** A TIP to (hi:lo) from node `p`: the node there. */
  tip(p: number, hi: number, lo: number): number {
    p = this.toDecision(p);
    if (p < 0) return -1;
    const k = this.nodes[p * W]!;
    this.lastKind = k;
    if (k === IndirectCall) {
      let f = this.nodes[p * W + Fall]!;
      if (f === -1) f = this.successor(p, Fall);
      if (f < 0) return -1;
      this.stack.push(0, f);
    } else if (k !== IndirectJump && k !== Return && k !== Far) {
      return this.fail(Handover.Code);
    }
    const t = this.graph.target(p, hi, lo);
    if (t < 0) return this.fail(Handover.Full);
    this.nodes = this.graph.nodes;
    return this.enter(p, t);
  }

  /**
   * Tracing stops at a branch (a TIP.PGD without FUP), from node `p`: the target of a
   * direct jump or call when it is (hi:lo), else the next branch that needs trace
   * (with `suppressed`: or a MOV CR3, which this leaves to the general decode), as the
   * block decoder places it. The branch runs; its target does not. 0, or -1.
   */
  disable(p: number, hi: number, lo: number, suppressed: boolean): number {
    const g = this.graph;
    for (let n = 0; ; n++) {
      if (this.due !== 0) this.run(p);
      const at = p * W;
      if (suppressed && (g.flags(p) & NodeFlag.MovCr3) !== 0) return this.fail(Handover.Disable);
      const k = this.nodes[at]!;
      if (k === Bad) return this.failAt(p);
      if (k !== Jump && k !== Call) {
        if (this.feeding) this.feedNode(p);
        this.icount[0] += this.nodes[at + Insns]!;
        this.lastNode = p;
        return 0;
      }
      if (n === MAX_DIRECT) return this.fail(Handover.Loop);
      p = this.direct(p, k);
      if (p < 0) return -1;
      if (!suppressed && g.lo(p) === lo && g.hi(p) === hi) {
        // Tracing stopped on the way there: its first instruction does not run.
        this.due = 0;
        return 0;
      }
    }
  }

  /**
   * A PIP outside PSB+ (the event decoder's paging event) binds to the next MOV to CR3
   * that control runs into without trace, which the block decoder runs and then reports
   * the event: walk from node `p` past that MOV. The node after it, or -1.
   */
  toMovCr3(p: number): number {
    const g = this.graph;
    for (let n = 0; ; n++) {
      if (g.movCr3(p)) return this.walkTo(p, g.movHi, g.movLo, false);
      p = this.pastDirect(p, n);
      if (p < 0) return -1;
    }
  }

  /** Past node `p`'s direct jump or call, the `n`th on the way: the node it leads to, or -1 ({@link why}). */
  private pastDirect(p: number, n: number): number {
    const k = this.nodes[p * W]!;
    if (k !== Jump && k !== Call) return k === Bad ? this.failAt(p) : this.fail(Handover.Code);
    if (n === MAX_DIRECT) return this.fail(Handover.Loop);
    if (this.due !== 0) this.run(p);
    return this.direct(p, k);
  }

  /**
   * From node `p`, run to (hi:lo) without a decision: the node there. `event`: an
   * asynchronous event is taken there (the transfer that led there counts as run);
   * else PSB+ only says where control is.
   */
  walkTo(p: number, hi: number, lo: number, event: boolean): number {
    const g = this.graph;
    for (let n = 0; ; n++) {
      if (g.lo(p) === lo && g.hi(p) === hi) {
        if (event && this.due === Due.Entry) this.run(p);
        return p;
      }
      const before = g.insnsBefore(p, hi, lo);
      if (before > 0) {
        if (this.due !== 0) this.run(p);
        if (this.feeding) {
          this.unhold();
          const feed = this.dirty && this.time !== undefined ? this.ready() : this.feed!;
          feed.run(g.hi(p), g.lo(p), before, g.beforeHi, g.beforeLo);
        }
        this.icount[0] += before;
        this.lastNode = -1;
        this.lastHi = g.beforeHi;
        this.lastLo = g.beforeLo;
        return this.node(hi, lo);
      }
      p = this.pastDirect(p, n);
      if (p < 0) return -1;
    }
  }
}

/**
 * The errata a walk works around (cpu/errata.ts): the packet decoder's quirks
 * (packetQuirks: SKD007, SKZ84), SKD022 and BDM70 as the event and block decoders do;
 * `apl12`: APL12, on which the event decoder looks past an OVF's FUP for evidence that
 * tracing is off (a TIP.PGE, or a PSB+ without FUP, cut short by an OVF or not): the
 * walk hands over at a PSB+ without FUP cut short by an OVF while tracing is on (the
 * others it hands over anyway; so too whatever SKD010 and APL11 change: an OVF without
 * FUP after it but a TNT, TIP or TIP.PGD); `skl014`, SKL014 with an address filter configured (the
 * block decoder then places a TIP.PGD without IP at the direct branch that left the
 * filter): the walk hands such a TIP.PGD over; `bdm64`, BDM64 (the block decoder
 * mends the block a TSX event comes after): the walk hands MODE.TSX outside PSB+
 * over. The others need what the walk hands over anyway: SKL168 time (the timed
 * walk's clock has it).
 */
export interface WalkErrata {
  quirks: number;
  skd022: boolean;
  bdm70: boolean;
  apl12?: boolean;
  skl014?: boolean;
  bdm64?: boolean;
}

/** No erratum. */
export const NO_WALK_ERRATA: WalkErrata = { quirks: 0, skd022: false, bdm70: false };

/**
 * The walk's part of `errata`, with `filter` the address filter configured (the flow
 * decoders ask it only for SKL014: without that erratum a filter changes nothing).
 */
export function walkErrata(errata: Errata, filter?: AddrFilter): WalkErrata {
  return {
    quirks: packetQuirks(errata),
    skd022: errata.skd022,
    bdm70: errata.bdm70,
    apl12: errata.apl12,
    bdm64: errata.bdm64,
    skl014: errata.skl014 && filter !== undefined && new AddrFilterCheck(filter).configured,
  };
}

/**
 * Decode `trace` from its first PSB to its end into `coverage`, following the code of
 * `graph`, working around `errata`. When the result's status is -1 the coverage holds
 * a partial decode: {@link Coverage.clear} it for the general decoder.
 */
export function decodeCoverage(
  trace: TraceBytes,
  graph: DecisionGraph,
  coverage: Coverage,
  errata = NO_WALK_ERRATA,
): FastCoverage {
  return walkToEnd(walkSteps(trace, new GraphWalk(graph, coverage, undefined), undefined, errata));
}

/**
 * The same walk keeping nothing but the instruction count ({@link FastCoverage.insns}):
 * where it decodes the trace (status 0), the flow decoders would decode it without an
 * error, to the same count.
 */
export function decodeCount(
  trace: TraceBytes,
  graph: DecisionGraph,
  stops?: WalkStops,
  errata = NO_WALK_ERRATA,
): FastCoverage {
  // No coverage and no feed: the map's fused packet loop (coverage-map-loop.ts), without the map.
  return walkToEnd(walkSteps(trace, new GraphWalk(graph, undefined, undefined), undefined, errata, stops));
}

/**
 * Where a decode in pieces (session/count-pieces.ts) notes its count: after the PSB+
 * of each PSB it reads at or after {@link stop} (a trace offset), the count of the
 * instructions run so far, the last of them where that PSB+'s FUP says control is (a
 * decode that starts at the PSB starts there).
 */
export interface WalkStops {
  stop: number;
  /** The count at the PSB at `psb`: true goes on (with {@link stop} as it is now), false ends the decode there. */
  onStop(psb: number, insns: number): boolean;
}

/**
 * The same walk, fed to a {@link FlowTracker} as the general decode feeds it (runs of
 * instructions, each transfer, the events that move call stacks: tracing on and off,
 * interrupts, overflows), for the call-stack outputs that need no time (folded stacks
 * weighed by instructions) and coverage. No time is given (timing packets are
 * skipped). When the result's status is -1 the tracker's analysis holds a partial
 * decode: start a new one for the general decoder.
 */
export function decodeFeed(
  trace: TraceBytes,
  graph: DecisionGraph,
  feed: FlowTracker,
  errata = NO_WALK_ERRATA,
): FastCoverage {
  return walkToEnd(walkSteps(trace, new GraphWalk(graph, undefined, feed), undefined, errata));
}

/**
 * The same walk for ptkit perf's call-stack outputs with time: the timing packets
 * go to `time`'s clock as the event decoder takes them, and the times reach the feed
 * where the block decoder (with tick events, blocks ending at calls) reports them,
 * through {@link WalkTime.at} and {@link WalkTime.ready}: the feed gets the same
 * instructions, events and times in the same order. It covers less than
 * {@link decodeFeed}: an OVF, a CBR outside PSB+, PIP and VMCS when who runs follows
 * CR3, and (with SKD022) an interrupt that stops tracing at a VM entry hand over. The
 * code followed is that of the image control runs in ({@link WalkTime.image}): a graph
 * per image, the walk's nodes moving to the graph of the new one by address. `errata`: the packet decoder's
 * (packetQuirks), and whether SKD022 and BDM70 apply (a FUP in PSB+ that a TIP.PGE
 * follows says tracing is off).
 */
export function decodeTimedFeed(
  trace: TraceBytes,
  graph: DecisionGraph,
  time: WalkTime,
  errata: WalkErrata,
): FastCoverage {
  return walkToEnd(timedWalk(trace, graph, time, errata));
}

/**
 * {@link decodeTimedFeed} as steps: the walk yields where `time` says it must wait for
 * other streams ({@link WalkTime.waits}), and returns the outcome.
 */
export function timedWalk(
  trace: TraceBytes,
  graph: DecisionGraph,
  time: WalkTime,
  errata: WalkErrata,
): Generator<void, FastCoverage, void> {
  const w = new GraphWalk(graph, undefined, undefined, time);
  return walkSteps(trace, w, new WalkClock(time, w), errata);
}

/**
 * {@link decodeTimedFeed}'s time: the clock and the current packet's stamp (as the
 * event decoder stamps its events), and where the block decoder reports a time. It
 * reports every event it returns (at its stamp), and a tick (libipt's) on a TIP, or
 * on a TNT's first bit, whose stamp differs from its own time, which is that of the
 * last event it went past: a TIP's right after the branch that took it; a TNT's
 * right away when the block before ended at a conditional branch or a return with
 * no event since, else after the block its first bit ends (see the block decoder's
 * trailing events and tickOnTnt).
 */
class WalkClock {
  private readonly ev = new PtEvent();
  /** A timing packet came since the last stamp. */
  private stale = true;
  /** The current stamp. */
  has = false;
  hi = 0;
  lo = 0;
  /** The block decoder's own time. */
  private dHi = 0;
  private dLo = 0;
  /** The last decision was a TNT bit, or a TIP at a return, and no event came since. */
  crEnded = false;
  /** The current TNT's tick waits for its first bit. */
  tntTick = false;
  /** The image the walk's graph is for (its graph decodes it, or a copy), and its version then. */
  private image: Image;
  private version: number;
  /** The graph of each image seen, and the image's version it was made from. */
  private readonly graphs = new Map<Image, DecisionGraph>();
  private readonly versions = new Map<Image, number>();

  constructor(
    readonly time: WalkTime,
    private readonly w: GraphWalk,
  ) {
    this.image = time.image;
    this.version = time.image.version;
    this.graphs.set(this.image, w.graph);
    this.versions.set(this.image, this.version);
    doubleFields(this, ["hi", "lo", "dHi", "dLo", "kHi", "kLo"]);
  }

  /** A timing packet (TSC, TMA, MTC, CYC, CBR), in PSB+ or not: 0, or -1 (the clock refused it). */
  packet(pkt: Packet, inPsb: boolean): number {
    const c = this.time.clock;
    let err: number;
    switch (pkt.type) {
      case PacketType.Tsc:
        err = inPsb ? c.headerTsc(pkt) : c.tsc(pkt);
        break;
      case PacketType.Cbr:
        err = inPsb ? c.headerCbr(pkt) : c.cbr(pkt);
        break;
      case PacketType.Tma:
        err = c.tma(pkt);
        break;
      case PacketType.Mtc:
        err = c.mtc(pkt);
        break;
      default:
        err = c.cyc(pkt);
    }
    this.stale = true;
    return err < 0 ? -1 : 0;
  }

  /** The current packet's stamp. */
  stamp(): void {
    if (!this.stale) return;
    const ev = this.ev;
    this.time.clock.stamp(ev);
    this.has = ev.hasTsc;
    this.hi = ev.tscHi;
    this.lo = ev.tscLo;
    this.stale = false;
  }

  /**
   * A tick is due: the stamp is a time the block decoder does not have. Without ticks
   * no packet is stamped but those that report (the clock's query is most of the
   * walk's time keeping, and a TNT or TIP comes after nearly every CYC).
   */
  moved(): boolean {
    if (!this.time.ticks) return false;
    this.stamp();
    return this.has && (this.hi !== this.dHi || this.lo !== this.dLo);
  }

  /**
   * Before a {@link report}: whether the walk must wait first (yield) for other
   * streams, which go before this stamp ({@link WalkTime.waits}); asked again when it
   * goes on.
   */
  waits(): boolean {
    const time = this.time;
    if (time.waits === undefined) return false;
    // (Asked again after each wait: another stream's walk may have grown a graph they share.)
    this.w.nodes = this.w.graph.nodes;
    this.stamp();
    return this.has && time.waits(this.hi, this.lo);
  }

  /** An OVF: the clock starts over as the event decoder's does, its time kept (Clock.overflow). */
  overflow(): void {
    this.time.clock.overflow();
    this.stale = true;
  }

  /** The block decoder reports an event or a tick of the current stamp, and then goes past it. */
  report(): void {
    this.stamp();
    this.reportAt(this.has, this.hi, this.lo);
  }

  /**
   * {@link report} an event (or a trace start), which the tick logic counts as one
   * ({@link crEnded} cleared), at the current stamp or with `kept` the one {@link keep}
   * kept; then {@link follow} with node `at` (-1: none): its node.
   */
  reportFollow(at: number, kept = false): number {
    if (kept) this.reportAt(this.kHas, this.kHi, this.kLo);
    else this.report();
    this.crEnded = false;
    return this.follow(at);
  }

  /** {@link report} at a stamp of `has`, TSC (hi:lo). */
  private reportAt(has: boolean, hi: number, lo: number): void {
    const w = this.w;
    w.evHasTsc = has;
    w.evTscHi = hi;
    w.evTscLo = lo;
    if (has) {
      this.time.at(hi, lo);
      w.dirty = true;
    }
    this.dHi = hi;
    this.dLo = lo;
  }

  /**
   * The walk failed where code is missing ({@link GraphWalk.badNode}, at its first
   * instruction), for the packet that ends at trace offset `offset`: true when it goes
   * on as perf's decoder does ({@link WalkTime.lost}); false: it hands over.
   */
  lose(offset: number): boolean {
    const w = this.w;
    const p = w.badNode;
    // (A node that fails after instructions of its own fails at another address.)
    if (!w.stuck(p) || this.time.lost === undefined) return false;
    const g = w.graph;
    const hi = g.hi(p);
    const lo = g.lo(p);
    // (What is held back goes first: the time hears of the loss after it.)
    w.unhold();
    if (!this.time.lost(hi, lo, offset)) return false;
    this.tntTick = false;
    return true;
  }

  /** The stamp kept by {@link keep}. */
  private kHas = false;
  private kHi = 0;
  private kLo = 0;

  /** Keep the current packet's stamp (a FUP's, which perf takes up at: see {@link reportFollow}). */
  keep(): void {
    this.stamp();
    this.kHas = this.has;
    this.kHi = this.hi;
    this.kLo = this.lo;
  }

  /** The block decoder goes past the current event: its time is the stamp's (with ticks: without, {@link moved} never asks). */
  passed(): void {
    this.dHi = this.hi;
    this.dLo = this.lo;
  }

  /**
   * After {@link report}: the walk goes on in the image control runs in now, at node
   * `at` (-1: none) of the image before: that node's id in the graph of the image now
   * (the node at the same address; -1 for none), or -2 when the graph is full (then
   * {@link GraphWalk.why} says so). The RET compression stack's nodes move likewise.
   */
  follow(at: number): number {
    const image = this.time.image;
    if (image === this.image && image.version === this.version) return at;
    return this.moveTo(image, at);
  }

  /**
   * {@link follow} into another image, or the same one changed. Apart from follow:
   * `move` captures locals, and V8 allocates a function's captured locals on every
   * call, returns before the closure included (24 MB of garbage per 340k reports on
   * `ptkit perf -q --timeline`).
   */
  private moveTo(image: Image, at: number): number {
    const w = this.w;
    const old = w.graph;
    let graph = this.graphs.get(image);
    if (graph === undefined || this.versions.get(image) !== image.version) {
      // A graph per process image (processes take turns): a few, and together no
      // more nodes than one may hold (memory stays bounded).
      let nodes = 0;
      for (const g of this.graphs.values()) nodes += g.size;
      if (this.graphs.size >= MAX_GRAPHS || nodes >= old.maxNodes) {
        this.graphs.clear();
        this.versions.clear();
      }
      graph =
        this.time.graph?.(image, old.maxNodes, old.maxWalk) ??
        new DecisionGraph(image, old.maxNodes, old.maxWalk);
      this.graphs.set(image, graph);
    }
    this.versions.set(image, image.version);
    this.image = image;
    this.version = image.version;
    const move = (id: number) => graph.node(old.hi(id), old.lo(id));
    const to = at < 0 ? -1 : move(at);
    const moved = (at < 0 || to >= 0) && w.stack.remapLo(move);
    w.graph = graph;
    graph.claimWalkWords(FEED_WALK_WORDS);
    w.nodes = graph.nodes;
    if (!moved) {
      w.fail(Handover.Full);
      return -2;
    }
    return to;
  }
}

/** A walk ({@link walkSteps}) to its end: its outcome (it waits nowhere unless the time says so: {@link WalkTime.waits}). */
function walkToEnd(steps: Generator<void, FastCoverage, void>): FastCoverage {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * The walk itself, a generator so that streams can take turns (ptkit perf's per-CPU
 * streams, in time order as the general decode interleaves them): before the walk
 * reports a time it asks {@link WalkClock.waits}, and yields while it must wait. It
 * returns the outcome. (V8 optimises the loop of a generator as any other: a walk
 * that never yields runs as fast.)
 */
function* walkSteps(
  trace: TraceBytes,
  w: GraphWalk,
  tc: WalkClock | undefined,
  errata: WalkErrata,
  stops?: WalkStops,
): Generator<void, FastCoverage, void> {
  const res = new FastCoverage();
  const { quirks, skd022, bdm70 } = errata;
  // TNT-8, TIP and timing packets between them go to the fused loop where nothing but the
  // map or the count is kept: in WebAssembly where it compiles, else mapLoop. (It leaves
  // the packets the quirks change to this loop: SKD007's CYC, SKZ84's TMA.)
  const fused = w.fusable && tc === undefined ? new MapLoop() : undefined;
  const engine = fused !== undefined && !w.tables ? mapLoopEngine(w.graph) : undefined;
  let out: FastCoverage;
  try {
    out = yield* walkLoop(
      res,
      trace,
      w,
      tc,
      quirks,
      skd022,
      bdm70,
      errata.apl12 === true,
      errata.skl014 === true,
      errata.bdm64 === true,
      stops,
      fused,
      engine,
    );
  } finally {
    // The map and the stack back in the Coverage's and the walk's own arrays.
    engine?.release();
    // The runs counted by node go to the coverage's counts.
    w.settle();
  }
  if (out !== TRACE_END) return out;
  // The decode ends with the trace: the last decision's target does not run.
  w.endBlock();
  res.insns = w.icount[0]!;
  res.calls = w.calls;
  return res;
}

/**
 * What {@link walkLoop} returns when the trace ended with the decode in step: the walk
 * ends there ({@link walkSteps}). Apart from the loop, the walk's end is first run
 * where it is not optimised: with streams taking turns (ptkit perf per CPU) the first
 * walk to end ran it in the loop's optimised code, which threw that code away while
 * the other streams' walks went on (and the compile it started again held up the exit).
 */
const TRACE_END = new FastCoverage();

/** {@link walkSteps}' loop over the packets into `res`: the outcome, or {@link TRACE_END}. */
function* walkLoop(
  res: FastCoverage,
  trace: TraceBytes,
  w: GraphWalk,
  tc: WalkClock | undefined,
  quirks: number,
  skd022: boolean,
  bdm70: boolean,
  /** APL12 (see WalkErrata.apl12). */
  apl12: boolean,
  /** A TIP.PGD without IP hands over (see WalkErrata.skl014). */
  skl014: boolean,
  /** MODE.TSX outside PSB+ hands over (see WalkErrata.bdm64). */
  bdm64: boolean,
  stops: WalkStops | undefined,
  fused: MapLoop | undefined,
  engine: MapLoopEngine | undefined,
): Generator<void, FastCoverage, void> {
  const pkt = new Packet();
  const last = new LastIp();
  let pos = syncForwardIn(trace, 0);
  if (pos < 0) return stop(res, 0, Handover.Sync);
  let buf = trace.buf;
  let base = trace.base;
  let end = trace.end;
  let enabled = false;
  let started = false;
  /** The node control is at, while tracing is enabled. */
  let at = -1;
  let inPsb = false;
  /** The offset of the PSB whose PSB+ this is (or was last). */
  let psbAt = 0;
  let psbFup = false;
  let fupHi = 0;
  let fupLo = 0;
  /** A FUP outside PSB+ waits for its TIP or TIP.PGD. */
  let fup = false;
  /**
   * A MODE.Exec outside PSB+ waits for the IP packet it binds to: a TIP or TIP.PGE
   * (a far transfer, tracing on), or a FUP (an exec-mode event at that IP, which the
   * general decoder takes).
   */
  let mode = false;
  /** An OVF waits for the FUP (or TIP.PGE) that says where tracing resumes. */
  let ovf = false;
  /** A MODE.TSX outside PSB+ waits for its FUP: its flags (-1: none). */
  let tsx = -1;
  /**
   * A MODE.Exec said 64-bit code (the graph's): until one does, the flow decoders
   * decode as 16-bit code, so tracing may not start.
   */
  let bits64 = false;
  /**
   * The walk lost control where code is missing (WalkClock.lose): as perf's decoder, it
   * knows no IP until a packet gives one whole (a FUP then waits in {@link lostFup},
   * whether it came whole in {@link fupWhole}, its stamp kept: WalkClock.keep).
   */
  let lost = false;
  let lostFup = false;
  let fupWhole = false;
  /**
   * A PIP or VMCS came where control stands at code that is missing: the event decoder
   * stands past it when the walk fails at the next decision ({@link asidOffset}: the
   * offset a printed error names, -1 when the window ended first).
   */
  let passedAsid = false;
  let asidOffset = -1;

  for (;;) {
    if (fused !== undefined && enabled && !inPsb && !fup && !mode && !ovf) {
      // TNT-8, TIP and what timing packets come between them, straight from the bytes.
      fused.at = at;
      const p =
        engine !== undefined
          ? engine.run(fused, w, last, buf, pos - base, end - base, base, Handover, MAX_DIRECT)
          : mapLoop(fused, w, last, buf, pos - base, end - base, Handover, MAX_DIRECT);
      if (p < 0) return stop(res, base - 1 - p, w.why);
      pos = base + p;
      at = fused.at;
    }
    const size = decodePacket(buf, pos - base, end - base, pkt, 0, quirks);
    if (windowCut(buf, pos - base, end - base, size, pkt, quirks)) {
      // Cut off by the end of the window, or decided by it: read on and decode again
      // (at the trace's end, a CYC stands).
      trace.release(pos);
      // (Tested before the read on, which fails only at the trace's end: see TRACE_END.)
      const ends = size === EOS && pos >= trace.size;
      if (trace.grow()) {
        buf = trace.buf;
        base = trace.base;
        end = trace.end;
        continue;
      }
      if (ends) break;
    }
    if (size < 0) return stop(res, pos, errors.errorMessage(size));
    // (PADs and timing packets are taken below, lost or not.)
    if (
      lost &&
      !inPsb &&
      pkt.type !== PacketType.Psb &&
      !timingOrPad(pkt.type) &&
      pkt.type !== PacketType.Cbr
    ) {
      // perf's decoder without an IP (BlockDecoder.perfResync's rules): the packets
      // passed by, on to one that gives an address whole. (tc is set: only a timed walk loses control.)
      const t = tc!;
      if (tsx >= 0 && pkt.type !== PacketType.Fup) return stop(res, pos, Handover.Sync);
      switch (pkt.type) {
        case PacketType.Tnt8:
        case PacketType.Tnt64:
          if (!enabled || lostFup) return stop(res, pos, Handover.Sync);
          break;
        case PacketType.Tip:
        case PacketType.TipPge:
        case PacketType.TipPgd: {
          const type = pkt.type;
          if ((type === PacketType.TipPge) === enabled || last.update(pkt) < 0)
            return stop(res, pos, Handover.Sync);
          const whole = last.full && !last.suppressed;
          if (mode) {
            // A MODE.Exec's event that gives an address whole takes up there: tracing
            // on, the walk takes the TIP.PGE as any (the rest is the general decode's).
            if (whole && type === PacketType.TipPge && !lostFup) {
              lost = false;
              continue;
            }
            if (whole && type === PacketType.Tip && !lostFup) {
              // A far transfer (an IRET, SYSRET) whose destination came whole: perf takes up there.
              mode = false;
              at = yield* takeUp(t, w, last.hi, last.lo);
              if (at < 0) return stop(res, pos, w.why);
              lost = false;
              break;
            }
            if (whole || type === PacketType.TipPgd) return stop(res, pos, Handover.Packet);
            mode = false;
          }
          if (lostFup) {
            // An interrupt, or tracing stopped where the FUP says.
            lostFup = false;
            if (type === PacketType.TipPge) return stop(res, pos, Handover.Sync);
            if (fupWhole) {
              // perf takes up at the FUP (at its time), then takes this packet as any:
              // where the next indirect branch from there goes, or tracing stops at it.
              at = yield* takeUp(t, w, fupHi, fupLo, true);
              if (at < 0) return stop(res, pos, w.why);
              lost = false;
              continue;
            }
            if (type === PacketType.TipPgd) enabled = false;
            else if (whole) {
              // perf takes up at the interrupt's destination.
              at = yield* takeUp(t, w, last.hi, last.lo);
              if (at < 0) return stop(res, pos, w.why);
              lost = false;
            }
            break;
          }
          if (type === PacketType.TipPgd) {
            // (A disable whose address came whole: the general decode's.)
            if (whole) return stop(res, pos, Handover.Packet);
            enabled = false;
          } else if (type === PacketType.TipPge) {
            if (whole) {
              // Tracing on there: the walk takes it as any.
              lost = false;
              continue;
            }
            enabled = true;
          } else if (whole) {
            at = yield* takeUp(t, w, last.hi, last.lo);
            if (at < 0) return stop(res, pos, w.why);
            lost = false;
          }
          break;
        }
        case PacketType.ModeTsx:
          // A transaction's event, bound to the FUP after it.
          if (mode || lostFup || !enabled || tsx >= 0) return stop(res, pos, Handover.Packet);
          tsx = pkt.flags;
          break;
        case PacketType.Fup:
          if (mode || lostFup || !enabled) return stop(res, pos, Handover.Packet);
          if (last.update(pkt) < 0 || last.suppressed) return stop(res, pos, Handover.Sync);
          if (tsx >= 0) {
            // perf takes up at a transaction's FUP that came whole, its state taken in
            // passing (BlockDecoder.perfResync); an abort's branch to its handler is
            // then a TIP as any.
            tsx = -1;
            if (!last.full) return stop(res, pos, Handover.Packet);
            at = yield* takeUp(t, w, last.hi, last.lo);
            if (at < 0) return stop(res, pos, w.why);
            lost = false;
            break;
          }
          lostFup = true;
          fupWhole = last.full;
          fupHi = last.hi;
          fupLo = last.lo;
          if (fupWhole) t.keep();
          break;
        case PacketType.ModeExec:
          if ((pkt.flags & (Flag.CsL | Flag.CsD)) !== Flag.CsL || mode) return stop(res, pos, Handover.Mode);
          bits64 = true;
          mode = true;
          break;
        case PacketType.Pip:
        case PacketType.Vmcs:
          // Passed by (its CR3 or VMCS base taken in passing), unless who runs follows CR3,
          // or a FUP waits for it (an event with an address).
          if (t.time.cr3 || lostFup) return stop(res, pos, Handover.Packet);
          break;
        case PacketType.Ovf:
          // An overflow: the decoders start over, the OVF's FUP (or a TIP.PGE) says where
          // (perf's decoder takes up there as anywhere): the walk takes it as any OVF.
          if (mode || lostFup) return stop(res, pos, Handover.Packet);
          lost = false;
          continue;
        default:
          return stop(res, pos, Handover.Packet);
      }
      pos += size;
      continue;
    }
    // (Between a MODE.TSX and its FUP nothing but timing packets: the general decode's.)
    if (tsx >= 0 && pkt.type !== PacketType.Fup && !timingOrPad(pkt.type))
      return stop(res, pos, Handover.Sync);
    switch (pkt.type) {
      case PacketType.Tnt8:
      case PacketType.Tnt64: {
        if (!enabled || inPsb || fup) return stop(res, pos, Handover.Sync);
        const lo = pkt.lo;
        if (tc !== undefined) {
          if (tc.moved()) {
            if (tc.crEnded) {
              while (tc.waits()) yield;
              tc.report();
              at = tc.follow(at);
              if (at < 0) return stop(res, pos, w.why);
            } else tc.tntTick = true;
          }
        }
        for (let i = pkt.a - 1; i >= 0; i--) {
          at = w.bit(at, i >= 32 ? (pkt.hi >>> (i - 32)) & 1 : (lo >>> i) & 1);
          if (at < 0) {
            // (The rest of the TNT is behind the resync.)
            const offset = passedAsid ? asidOffset : pastPads(buf, pos + size, base, end, quirks);
            if (tc === undefined || !tc.lose(offset)) return stop(res, pos, w.why);
            lost = true;
            passedAsid = false;
            break;
          }
          if (tc?.tntTick) {
            // The tick of a TNT that came after an event: after its first bit's block.
            tc.tntTick = false;
            while (tc.waits()) yield;
            tc.report();
            at = tc.follow(at);
            if (at < 0) return stop(res, pos, w.why);
            // Reported after its last bit, the next TNT cannot tick right away.
            if (i === 0) {
              tc.crEnded = false;
              break;
            }
          }
          if (tc !== undefined && i === 0) tc.crEnded = true;
        }
        tc?.passed();
        break;
      }
      case PacketType.Tip: {
        if (!enabled || inPsb || last.update(pkt) < 0 || last.suppressed)
          return stop(res, pos, Handover.Sync);
        const modeEvent = mode;
        mode = false;
        if (!fup) {
          at = w.tip(at, last.hi, last.lo);
          if (at < 0) {
            // (A MODE.Exec's event at the TIP: left to the general decode.)
            // (The event decoder stands at the TIP: an error names its offset.)
            if (tc === undefined || modeEvent || !tc.lose(passedAsid ? asidOffset : pos))
              return stop(res, pos, w.why);
            lost = true;
            passedAsid = false;
            break;
          }
          if (tc !== undefined) {
            // (Read at every TIP, not only where no tick comes: on a timeline's decode,
            // where most TIPs move the time, V8 had seen no read of it when it optimised
            // this loop, and threw the loop's code away at the first.)
            const toReturn = w.lastKind === Return;
            // A tick after the branch when the time moved; a MODE.Exec's event after that.
            const tick = tc.moved();
            if (tick || modeEvent) {
              while (tc.waits()) yield;
              tc.report();
              at = tc.follow(at);
              if (at < 0) return stop(res, pos, w.why);
            }
            tc.passed();
            tc.crEnded = !tick && !modeEvent && toReturn;
          }
          break;
        }
        // An interrupt (or exception) where the FUP says, into traced code: the
        // handler is entered from there.
        fup = false;
        if (w.walkTo(at, fupHi, fupLo, true) < 0) {
          // (The event decoder stands at the TIP, or past a PIP taken in passing before.)
          if (tc === undefined || modeEvent || !tc.lose(passedAsid ? asidOffset : pos))
            return stop(res, pos, w.why);
          lost = true;
          passedAsid = false;
          if (last.full) {
            // perf takes up at the interrupt's destination when it came whole.
            at = yield* takeUp(tc, w, last.hi, last.lo);
            if (at < 0) return stop(res, pos, w.why);
            lost = false;
          }
          break;
        }
        if (tc !== undefined) {
          while (tc.waits()) yield;
          if (tc.reportFollow(-1) === -2) return stop(res, pos, w.why);
        }
        w.event(EventType.AsyncBranch, last.hi, last.lo, false, fupHi, fupLo);
        w.endBlock();
        at = w.node(last.hi, last.lo);
        if (at < 0) return stop(res, pos, w.why);
        w.interrupt(fupHi, fupLo);
        break;
      }
      case PacketType.TipPge: {
        if (enabled || inPsb || fup || last.update(pkt) < 0 || last.suppressed)
          return stop(res, pos, Handover.Sync);
        if (!bits64) return stop(res, pos, Handover.Mode);
        if (tc !== undefined) {
          while (tc.waits()) yield;
          if (tc.reportFollow(-1) === -2) return stop(res, pos, w.why);
        }
        at = w.node(last.hi, last.lo);
        if (at < 0) return stop(res, pos, w.why);
        w.event(EventType.Enabled, last.hi, last.lo, false);
        enabled = true;
        mode = false;
        ovf = false;
        w.due = Due.Restart;
        break;
      }
      case PacketType.TipPgd: {
        if (!enabled || inPsb || last.update(pkt) < 0) return stop(res, pos, Handover.Sync);
        if (!fup) {
          // Tracing stops at a branch (out of the filter, into ring 0, ...).
          if (mode) return stop(res, pos, Handover.Packet);
          if (skl014 && last.suppressed) return stop(res, pos, Handover.Skl014);
          if (w.disable(at, last.hi, last.lo, last.suppressed) < 0) {
            const offset = passedAsid ? asidOffset : pastPads(buf, pos + size, base, end, quirks);
            if (tc === undefined || !tc.lose(offset)) return stop(res, pos, w.why);
            passedAsid = false;
            // (Tracing is off: perf's decoder passes the disable by.)
            lost = true;
            enabled = false;
            break;
          }
          if (tc !== undefined) {
            while (tc.waits()) yield;
            if (tc.reportFollow(-1) === -2) return stop(res, pos, w.why);
          }
          w.event(EventType.Disabled, last.hi, last.lo, last.suppressed);
          enabled = false;
          w.endBlock();
          break;
        }
        // Tracing stopped where the FUP says (an asynchronous disable).
        fup = false;
        if (w.walkTo(at, fupHi, fupLo, true) < 0) {
          // (Where the event decoder stands then is not known here: -1.)
          if (tc === undefined || mode || !tc.lose(-1)) return stop(res, pos, w.why);
          lost = true;
          passedAsid = false;
          enabled = false;
          break;
        }
        // SKD022: the flow decoders make it a synchronous disable at a VM entry.
        if (skd022 && w.graph.vmEntryAt(fupHi, fupLo)) return stop(res, pos, Handover.Packet);
        if (tc !== undefined) {
          while (tc.waits()) yield;
          if (tc.reportFollow(-1) === -2) return stop(res, pos, w.why);
        }
        w.event(EventType.AsyncDisabled, last.hi, last.lo, last.suppressed, fupHi, fupLo);
        enabled = false;
        w.endBlock();
        break;
      }
      case PacketType.Fup: {
        if (mode && !inPsb) return stop(res, pos, Handover.Packet);
        if (fup || last.update(pkt) < 0 || last.suppressed) return stop(res, pos, Handover.Sync);
        fupHi = last.hi;
        fupLo = last.lo;
        if (tsx >= 0) {
          // A transaction begins, commits or aborts where the FUP says: the code runs
          // there without trace, the block decoder reports the event at its time. An
          // abort's FUP then waits for its TIP: the branch to the abort handler.
          const flags = tsx;
          tsx = -1;
          at = w.walkTo(at, fupHi, fupLo, false);
          if (at < 0) return stop(res, pos, w.why);
          if (tc !== undefined) {
            while (tc.waits()) yield;
            at = tc.reportFollow(at);
            if (at < 0) return stop(res, pos, w.why);
          }
          w.event(EventType.Tsx, fupHi, fupLo, false, 0, 0, tsxFlags(flags));
          if ((flags & Flag.Abort) !== 0) fup = true;
          break;
        }
        if (ovf && !inPsb) {
          // Tracing resumes after the overflow here, reached from nowhere.
          ovf = false;
          if (!bits64) return stop(res, pos, Handover.Mode);
          at = w.node(fupHi, fupLo);
          if (at < 0) return stop(res, pos, w.why);
          enabled = true;
          w.due = Due.Restart;
          break;
        }
        if (inPsb) psbFup = true;
        else if (!enabled) return stop(res, pos, Handover.Sync);
        else fup = true;
        break;
      }
      case PacketType.Psb:
        if (inPsb || fup || mode || ovf || lostFup) return stop(res, pos, Handover.Sync);
        inPsb = true;
        psbAt = pos;
        psbFup = false;
        last.reset();
        break;
      case PacketType.PsbEnd:
      case PacketType.Ovf: {
        // An OVF in PSB+ ends it as PSBEND does, then it is an overflow (the event
        // decoder's decodePsb and decodeOvf).
        const overflow = pkt.type === PacketType.Ovf;
        if (inPsb) {
          inPsb = false;
          // (BDM70's TIP.PGE is looked for from the FUP on, past PSB+ but not past an OVF.)
          if (bdm70 && psbFup && !overflow) {
            const pge = pgeFollows(buf, pos + size - base, end - base, quirks);
            if (pge < 0) return stop(res, pos, Handover.Packet);
            // BDM70: tracing is off after this PSB+ (the event decoder's headerFup).
            if (pge === 1) psbFup = false;
          }
          if (tc !== undefined) {
            // PSB+'s status updates, all at its time.
            while (tc.waits()) yield;
            const here = started && enabled && !lost;
            const moved = tc.reportFollow(here ? at : -1);
            if (moved === -2) return stop(res, pos, w.why);
            if (here) at = moved;
          }
          if (lost || !started) {
            // Where decoding starts, or where perf's resync found a PSB (it goes on from
            // its PSB+, the return stack emptied): tracing is on when PSB+ says where
            // (and the OVF's FUP says where after an overflow).
            if (lost) w.stack.clear();
            lost = false;
            started = true;
            enabled = psbFup && !overflow;
            if (enabled) {
              if (!bits64) return stop(res, pos, Handover.Mode);
              at = w.node(fupHi, fupLo);
              if (at < 0) return stop(res, pos, w.why);
              w.due = Due.Restart;
            }
          } else if (psbFup !== enabled) {
            // (Cut short by an OVF, a PSB+ without FUP states nothing: the overflow says.
            // Unless APL12's look for evidence of tracing off finds it: see WalkErrata.apl12.)
            if (psbFup || !overflow || apl12) return stop(res, pos, Handover.Sync);
          } else if (enabled) {
            // PSB+ says where control is: the code runs there without trace.
            at = w.walkTo(at, fupHi, fupLo, false);
            if (at < 0) {
              // (The event decoder stands after the PSB+, unless timing packets follow it.)
              const offset =
                passedAsid || timingFollows(buf, pos + size - base, end - base, quirks) ? -1 : pos + size;
              if (tc === undefined || overflow || !tc.lose(offset)) return stop(res, pos, w.why);
              passedAsid = false;
              // perf takes up at the PSB, where its FUP says (the return stack emptied).
              w.stack.clear();
              at = w.node(fupHi, fupLo);
              if (at < 0) return stop(res, pos, w.why);
              tc.time.resumed?.(fupHi, fupLo);
              w.due = Due.Restart;
            }
          }
          if (stops !== undefined && psbAt >= stops.stop && !stops.onStop(psbAt, w.icount[0]!)) {
            res.insns = w.icount[0]!;
            return res;
          }
          if (!overflow) break;
        } else if (!overflow) return stop(res, pos, Handover.Sync);
        // Packets were lost: a gap (the block decoder ends the block where it is). The
        // event decoder starts over: the last IP forgotten, what waits for the packet it
        // binds to while tracing is on dropped (an interrupt's FUP, a MODE.Exec: their
        // events never reach the block decoder), the time kept (its clock's calibration
        // not: Clock.overflow), the Overflow event at the OVF's time. (While tracing is
        // off the event decoder publishes what waits: the general decode's. While it is
        // on the code is 64-bit, which a MODE.Exec the walk takes says: dropping one
        // changes no mode.)
        if ((mode && !enabled) || ovf || lost || !started) return stop(res, pos, Handover.Packet);
        fup = false;
        mode = false;
        last.reset();
        if (tc !== undefined) {
          tc.overflow();
          tc.tntTick = false;
          while (tc.waits()) yield;
          if (tc.reportFollow(-1) === -2) return stop(res, pos, w.why);
        }
        w.event(EventType.Overflow, 0, 0, true);
        w.endBlock();
        enabled = false;
        ovf = true;
        break;
      }
      case PacketType.ModeExec:
        if ((pkt.flags & (Flag.CsL | Flag.CsD)) !== Flag.CsL) return stop(res, pos, Handover.Mode);
        bits64 = true;
        if (!inPsb) mode = true;
        break;
      case PacketType.ModeTsx:
      case PacketType.Pip:
      case PacketType.Vmcs:
        if (pkt.type === PacketType.ModeTsx && !inPsb) {
          // A transaction's begin, commit or abort, bound to the FUP that follows (the
          // event decoder's decodeModeTsx; tracing off, it stands alone: the general
          // decode's, as with BDM64).
          if (!enabled || fup || mode || ovf || !started || bdm64) return stop(res, pos, Handover.Packet);
          tsx = pkt.flags;
          break;
        }
        if (
          !inPsb &&
          pkt.type === PacketType.Pip &&
          tc?.time.cr3 !== true &&
          started &&
          !fup &&
          !mode &&
          !ovf &&
          !(enabled && tc !== undefined && w.stuck(at))
        ) {
          // A paging event of its own (the event decoder's decodePip): while tracing it
          // binds to the MOV to CR3 control runs into, after which the block decoder
          // reports it (what CR3 says means nothing for the code of one image; where who
          // runs follows CR3, the general decode's).
          if (enabled) {
            at = w.toMovCr3(at);
            if (at < 0) return stop(res, pos, w.why);
          }
          if (tc !== undefined) {
            while (tc.waits()) yield;
            const moved = tc.reportFollow(enabled ? at : -1);
            if (moved === -2) return stop(res, pos, w.why);
            if (enabled) at = moved;
          }
          w.event(EventType.Paging, 0, 0, true);
          break;
        }
        if (
          !inPsb &&
          pkt.type !== PacketType.ModeTsx &&
          tc !== undefined &&
          !tc.time.cr3 &&
          enabled &&
          !fup &&
          !mode &&
          w.stuck(at)
        ) {
          // Control stands where code is missing (the walk fails at the next decision):
          // perf's walk takes the CR3 or VMCS base in passing on its way there.
          passedAsid = true;
          asidOffset = pastPads(buf, pos + size, base, end, quirks);
          break;
        }
        // Status in PSB+ (a transaction under way too, which only the block decoder's
        // speculative flag takes; not an abort): nothing for the code of one image.
        // (Unless who runs follows CR3: PIP and VMCS are left to the general decode.)
        if (!inPsb || (pkt.flags & Flag.Abort) !== 0) return stop(res, pos, Handover.Packet);
        if (tc?.time.cr3 && pkt.type !== PacketType.ModeTsx) return stop(res, pos, Handover.Packet);
        break;
      case PacketType.Pad:
        break;
      case PacketType.Tsc:
      case PacketType.Mtc:
      case PacketType.Tma:
      case PacketType.Cyc:
      case PacketType.Cbr:
        if (tc === undefined) break;
        if (tc.packet(pkt, inPsb) < 0) return stop(res, pos, Handover.Time);
        if (pkt.type === PacketType.Cbr && !inPsb && !lost) {
          // Outside PSB+ a CBR is an event of its own (without an IP), which the block
          // decoder reports as soon as it comes: after the block the last decision
          // ended (perf's resync passes it by). (Between a FUP and what it binds to: the
          // general decode's.)
          if (fup || mode || ovf || !started) return stop(res, pos, Handover.Packet);
          while (tc.waits()) yield;
          const moved = tc.reportFollow(enabled ? at : -1);
          if (moved === -2) return stop(res, pos, w.why);
          if (enabled) at = moved;
          w.event(EventType.Cbr, 0, 0, true);
        }
        break;
      default:
        return stop(res, pos, Handover.Packet);
    }
    pos += size;
  }
  return inPsb || fup || mode || ovf || tsx >= 0 || lostFup || !started
    ? stop(res, pos, Handover.Sync)
    : TRACE_END;
}

/**
 * After the walk lost control (WalkClock.lose), perf's decoder takes up at (hi:lo): a
 * trace start there, at the current stamp (`kept`: the one WalkClock.keep kept),
 * reported, the image followed. The node there, or -1 (GraphWalk.why says why).
 */
function* takeUp(
  tc: WalkClock,
  w: GraphWalk,
  hi: number,
  lo: number,
  kept = false,
): Generator<void, number, void> {
  while (tc.waits()) yield;
  if (tc.reportFollow(-1, kept) === -2) return -1;
  const at = w.node(hi, lo);
  if (at < 0) return -1;
  tc.time.resumed?.(hi, lo);
  w.due = Due.Restart;
  return at;
}

/** The look-ahead's packet (pastPads, timingFollows, pgeFollows: none of them is reentered). */
const follows = new Packet();

/**
 * Where the event decoder stands after a TNT or TIP.PGD that ends at trace offset
 * `pos` (the offset a printed error names: it reads on past PADs), or -1 when the
 * window ends first. `base` and `end`: the window's, as trace offsets.
 */
function pastPads(buf: Uint8Array, pos: number, base: number, end: number, quirks: number): number {
  for (;;) {
    const size = decodePacket(buf, pos - base, end - base, follows, 0, quirks);
    if (size < 0 || windowCut(buf, pos - base, end - base, size, follows, quirks)) return -1;
    if (follows.type !== PacketType.Pad) return pos;
    pos += size;
  }
}

/** Whether the packet at `pos` is PAD or a timing packet, or not known (the window ends first). */
function timingFollows(buf: Uint8Array, pos: number, end: number, quirks: number): boolean {
  const size = decodePacket(buf, pos, end, follows, 0, quirks);
  return size < 0 || windowCut(buf, pos, end, size, follows, quirks) || timingOrPad(follows.type);
}

/** PAD, TSC, MTC, TMA or CYC. */
function timingOrPad(type: number): boolean {
  return (
    type === PacketType.Pad ||
    type === PacketType.Tsc ||
    type === PacketType.Mtc ||
    type === PacketType.Cyc ||
    type === PacketType.Tma
  );
}

/**
 * BDM70: whether a TIP.PGE follows at `pos` with nothing but status and timing
 * packets before it (the event decoder's bdm70Applies): 1 yes, 0 no, -1 not known
 * (the window ends first).
 */
function pgeFollows(buf: Uint8Array, pos: number, end: number, quirks: number): number {
  for (;;) {
    const size = decodePacket(buf, pos, end, follows, 0, quirks);
    if (size < 0 || windowCut(buf, pos, end, size, follows, quirks)) return -1;
    if (follows.type === PacketType.TipPge) return 1;
    if (!bdm70Passes(follows.type)) return 0;
    pos += size;
  }
}

function stop(res: FastCoverage, offset: number, reason: string): FastCoverage {
  res.status = -1;
  res.offset = offset;
  res.reason = reason;
  return res;
}
