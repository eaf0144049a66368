/**
 * The AFL map's inner loop (issue 13): {@link decodeCoverage}'s walk when it keeps the
 * map alone, fused with the packet decoder. The packets a fuzzing trace is mostly made
 * of — TNT-8, TIP, and with timing CYC, MTC and PAD — are taken straight from the
 * trace's bytes by byte tests, the last IP kept in locals, each TNT bit one array read
 * of the node's successor and each block entered one read-modify-write of the map: no
 * per-packet call, record or object. Anything else (PSB+, FUP, TIP.PGE/PGD, MODE,
 * TNT-64, a suppressed or reserved IP, a packet that runs over the window) stops the
 * loop there, and walkSteps's general packet loop takes that packet and comes back.
 *
 * It does exactly what walkSteps's TNT and TIP cases do through GraphWalk's
 * `bit`/`tip`/`toDecision`/`direct`/`run` with a map-only Coverage (the same nodes
 * made in the same order, the same map, the same hand-overs): tests compare the two
 * (test/analysis/coverage-decode.test.ts).
 */

import type { DecisionGraph } from "../flow/decision-graph.js";
import { NODE_WORDS, Node, NodeKind } from "../flow/decision-graph.js";
import type { ReturnStack } from "../flow/return-stack.js";
import type { LastIp } from "../packet/last-ip.js";
import * as types from "../packet/types.js";
import type { Coverage } from "./export/coverage.js";
import * as coverage from "./export/coverage.js";

const { CondJump, Jump, Call, IndirectJump, IndirectCall, Return, Far } = NodeKind;
const { Insns, Taken, Fall, Lo, Hi, TipId, Walk } = Node;
const W = NODE_WORDS;
// Module copies of imported bindings: optimized code loads and checks an imported
// binding's cell at every use.
const { IPC_PAYLOAD_BYTES } = types;
const { aflHit, aflLocation } = coverage;

/** The loop's layout of the nodes' Walk words (see DecisionGraph.claimWalkWords). */
export const MAP_WALK_WORDS = 1;

/** The map when there is none (the loop counts instructions only). */
const NO_MAP = new Uint8Array(0);

/** A node's instruction count in its {@link Node.Walk} word at most: this many or more are read from {@link Node.Insns}. */
const MANY_INSNS = 0xfff;

/**
 * Nodes in the graph from which the loop leaves a TIP's compare with the last target to
 * DecisionGraph.target (which reads the hash slot first): below, the slots and nodes
 * stay in the core's cache and the early read only costs (the fuzzing bench trace's
 * 9,332 nodes: a warm decode took 1.03x the time).
 */
const OVERLAP_NODES = 1 << 15;

/** The ring of {@link MapLoop.calls}: 64 calls deep. */
const CALLS_MASK = 63;

/** What the loop shares with walkSteps's GraphWalk (see there). */
export interface MapLoopWalk {
  graph: DecisionGraph;
  nodes: Int32Array;
  due: number;
  readonly icount: Float64Array;
  readonly stack: ReturnStack;
  readonly coverage: Coverage | undefined;
  /** Blocks and edges are counted too ({@link tablesAt} at each block's first instruction). */
  readonly tables: boolean;
  /** The node whose transfer led to the current one, and the last node run (the same here). */
  src: number;
  lastNode: number;
  tablesAt(p: number, due: number, src: number, insns: number): void;
  why: string;
  /** The node made now (made when first asked for), or -1 with {@link why} set. */
  successor(p: number, which: number): number;
  fail(why: string): number;
}

/** What an opcode byte starts, for the loop: {@link Pkt}; a TIP with IPBytes `ipc` is Pkt.Tip + ipc. */
const Pkt = { Other: 0, Pad: 1, Tnt8: 2, Cyc: 3, Mtc: 4, Tip: 8 } as const;

/**
 * Each opcode byte's {@link Pkt} (a table: one read, and every test after it is reached
 * by the packets of every PSB+, so V8's feedback has them before the rare packets come).
 * Not taken (Other): extended opcodes (0x02), a TIP with its IP suppressed or reserved
 * IPBytes (walkSteps's to judge), and everything else.
 */
export const PACKET = new Uint8Array(256);
for (let b = 4; b < 256; b += 2) PACKET[b] = Pkt.Tnt8;
for (let b = 3; b < 256; b += 4) PACKET[b] = Pkt.Cyc;
for (const ipc of [1, 2, 3, 4, 6]) PACKET[(ipc << 5) | 0x0d] = Pkt.Tip + ipc;
PACKET[0x00] = Pkt.Pad;
PACKET[0x59] = Pkt.Mtc;

/**
 * Take the packets at buf[pos..end) while they are TNT-8, TIP, CYC, MTC or PAD, with
 * tracing on at node `at` and nothing pending (no FUP, MODE.Exec or OVF; not in
 * PSB+). Returns the index of the first packet it left (walkSteps goes on there),
 * with {@link MapLoop.at} the node control is at; or -1 - the index of the packet at
 * which the walk failed (`w.why` says why).
 */
export function mapLoop(
  loop: MapLoop,
  w: MapLoopWalk,
  last: LastIp,
  buf: Uint8Array,
  pos: number,
  end: number,
  handovers: Record<"Code" | "Loop" | "Full", string>,
  maxDirect: number,
): number {
  // Without coverage, the instruction count alone (decodeCount).
  const cov = w.coverage;
  const mapped = cov !== undefined;
  const map = mapped ? cov.aflMap : NO_MAP;
  const stack = w.stack;
  const graph = w.graph;
  let nodes = graph.nodes;
  let prev = mapped ? cov.prev : 0;
  // Node ids and counts as int32 (`| 0`): optimized code then keeps them untagged.
  let p = loop.at | 0;
  const maxHops = maxDirect | 0;
  let due = w.due;
  let insns = w.icount[0]!;
  let ipHi = last.hi | 0;
  let ipLo = last.lo | 0;
  let tips = false;
  const calls = loop.calls;
  let depth = loop.depth | 0;
  const overlap = graph.size >= OVERLAP_NODES;
  const tables = w.tables;
  // The node the last transfer was from (GraphWalk.enter's `src`), once one ran here.
  let src = w.src | 0;
  let moved = false;
  let failed = false;
  // One pass per packet; `break outer` leaves with `pos` at the packet not taken (or failed at).
  outer: while (pos < end) {
    const b = buf[pos]!;
    /** TNT bits in the packet (the highest first), or 0 for a TIP. */
    let bits = 0;
    let size = 1;
    const c = PACKET[b]!;
    if (c === Pkt.Tnt8) {
      // Bits 7:1 hold the branches behind a stop bit.
      bits = 30 - Math.clz32(b);
    } else if (c >= Pkt.Tip) {
      // TIP: the last IP updated as LastIp.update does.
      const ipc = c - Pkt.Tip;
      const n = IPC_PAYLOAD_BYTES[ipc]!;
      if (pos + 1 + n > end) break;
      if (n === 2) ipLo = (ipLo & ~0xffff) | buf[pos + 1]! | (buf[pos + 2]! << 8);
      else {
        ipLo = buf[pos + 1]! | (buf[pos + 2]! << 8) | (buf[pos + 3]! << 16) | (buf[pos + 4]! << 24);
        if (n === 6) {
          const h = buf[pos + 5]! | (buf[pos + 6]! << 8);
          // IPBytes 011: sign-extended from bit 47; 100: the upper 16 bits kept.
          ipHi = ipc === 3 ? (h << 16) >> 16 : (ipHi & ~0xffff) | h;
        } else if (n === 8) {
          ipHi = buf[pos + 5]! | (buf[pos + 6]! << 8) | (buf[pos + 7]! << 16) | (buf[pos + 8]! << 24);
        }
      }
      tips = true;
      size = 1 + n;
    } else if (c === Pkt.Cyc) {
      // Skipped (no time is kept); at most 8 extension bytes, as the packet decoder takes.
      // A two-byte one ending in 0x02 goes to the packet decoder: with SKD007 it may be
      // the first two bytes of an OVF (02 F3).
      let q = pos + 1;
      if ((b & 4) !== 0) {
        for (;;) {
          if (q >= end || q - pos > 8) break outer;
          const x = buf[q++]!;
          if (x === 2 && q === pos + 2) break outer;
          if ((x & 1) === 0) break;
        }
      }
      pos = q;
      continue;
    } else if (c === Pkt.Mtc) {
      // Skipped.
      if (pos + 2 > end) break;
      pos += 2;
      continue;
    } else if (c === Pkt.Pad) {
      pos++;
      continue;
    } else {
      break;
    }

    for (let i = bits > 0 ? bits - 1 : 0; i >= 0; i--) {
      // Straight-line code and direct transfers up to the next decision (GraphWalk.toDecision).
      let at = p * W;
      let k = 0;
      /** The node's {@link Node.Walk} word: its kind (bits 0-2), AFL location (3-18) and instructions (19-30, or MANY_INSNS). */
      let e = 0;
      for (let n = 0; ; n++) {
        e = nodes[at + Walk]!;
        if (e < 0) {
          const n = nodes[at + Insns]!;
          e = nodes[at]! | (aflLocation(nodes[at + Lo]!) << 3) | (Math.min(n, MANY_INSNS) << 19);
          nodes[at + Walk] = e;
        }
        if (due !== 0) {
          // The block's first instruction runs: one byte of the map (Coverage.enter, .restart).
          if (mapped) {
            const cur = (e >>> 3) & 0xffff;
            if (due === 1) prev = 0;
            aflHit(map, cur ^ prev);
            prev = cur >>> 1;
          }
          if (tables) w.tablesAt(p, due, src, insns);
          due = 0;
        }
        k = e & 7;
        if (k !== Jump && k !== Call) break;
        if (n === maxHops) {
          w.fail(handovers.Loop);
          failed = true;
          break outer;
        }
        if (k === Call) {
          let f = nodes[at + Fall]!;
          if (f === -1) {
            f = w.successor(p, Fall) | 0;
            nodes = graph.nodes;
            if (f === -1) {
              failed = true;
              break outer;
            }
          }
          if (f >= 0) {
            stack.push(0, f);
            depth = (depth + 1) & CALLS_MASK;
            calls[depth] = f;
          }
        }
        let t = nodes[at + Taken]!;
        if (t === -1) {
          t = w.successor(p, Taken) | 0;
          nodes = graph.nodes;
          if (t < 0) {
            failed = true;
            break outer;
          }
        }
        insns += e >>> 19 !== MANY_INSNS ? e >>> 19 : nodes[at + Insns]!;
        due = 2;
        src = p;
        moved = true;
        p = t;
        at = p * W;
      }
      let t: number;
      if (bits > 0) {
        const taken = (b >>> (i + 1)) & 1;
        if (k === CondJump) {
          // Taken (2) or Fall (3).
          t = nodes[at + Fall - taken]!;
          if (t === -1) {
            t = w.successor(p, Fall - taken) | 0;
            nodes = graph.nodes;
            if (t < 0) {
              failed = true;
              break outer;
            }
          }
        } else if (k === Return && taken === 1 && stack.pop() === 0) {
          t = stack.poppedLo | 0;
          depth = (depth - 1) & CALLS_MASK;
        } else {
          w.fail(handovers.Code);
          failed = true;
          break outer;
        }
      } else {
        /** A return's likely target: the node after the call it matches (-1: none). */
        let guess = -1;
        if (k === IndirectCall) {
          let f = nodes[at + Fall]!;
          if (f === -1) {
            f = w.successor(p, Fall) | 0;
            nodes = graph.nodes;
            if (f < 0) {
              failed = true;
              break outer;
            }
          }
          stack.push(0, f);
          depth = (depth + 1) & CALLS_MASK;
          calls[depth] = f;
        } else if (k === Return) {
          guess = calls[depth]!;
          depth = (depth - 1) & CALLS_MASK;
        } else if (k !== IndirectJump && k !== Far) {
          w.fail(handovers.Code);
          failed = true;
          break outer;
        }
        t = guess;
        if (t < 0 || nodes[t * W + Lo] !== ipLo || nodes[t * W + Hi] !== ipHi) {
          // Many indirect branches go where they went last (DecisionGraph.target). On a
          // large graph target compares that itself, having read the address's hash slot
          // first, so that the two reads overlap; on a small one (all in the core's cache)
          // the loop compares and calls target only when the last target differs.
          t = overlap ? -1 : nodes[at + TipId]!;
          if (t < 0 || nodes[t * W + Lo] !== ipLo || nodes[t * W + Hi] !== ipHi) {
            t = graph.target(p, unsigned(ipHi), unsigned(ipLo)) | 0;
            nodes = graph.nodes;
            if (t < 0) {
              w.fail(handovers.Full);
              failed = true;
              break outer;
            }
          }
        }
      }
      insns += e >>> 19 !== MANY_INSNS ? e >>> 19 : nodes[at + Insns]!;
      due = 2;
      src = p;
      moved = true;
      p = t;
    }
    pos += size;
  }
  leaveLoop(loop, w, last, prev, due, insns, p, depth, moved ? src : -1, tips, ipHi, ipLo);
  return failed ? -1 - pos : pos;
}

/**
 * Where a fused loop (this one, or the WebAssembly one: wasm/map-loop-engine.ts) stopped:
 * its state back into the walk, the loop and the last IP. `src`: the node the last
 * transfer was from, -1 when none ran; `tips`: a TIP updated the last IP to ipHi:ipLo.
 */
export function leaveLoop(
  loop: MapLoop,
  w: MapLoopWalk,
  last: LastIp,
  prev: number,
  due: number,
  insns: number,
  p: number,
  depth: number,
  src: number,
  tips: boolean,
  ipHi: number,
  ipLo: number,
): void {
  const cov = w.coverage;
  if (cov !== undefined) cov.prev = prev;
  w.due = due;
  w.icount[0] = insns;
  w.nodes = w.graph.nodes;
  loop.at = p;
  if (src >= 0) {
    w.src = src;
    w.lastNode = src;
  }
  loop.depth = depth;
  if (tips) {
    last.hi = unsigned(ipHi);
    last.lo = unsigned(ipLo);
    last.have = true;
    last.suppressed = false;
  }
}

/**
 * An int32 half as the unsigned one. One function for all the loop's halves: V8 compiles
 * `>>> 0` from what it saw at that place, and where it saw only small values (high
 * halves of user-space addresses) its code throws itself away at the first larger one
 * (a kernel address's high half: "lost precision"). In one large-trace run in three,
 * that was the loop's code as entered in the middle of its loop (on-stack replacement),
 * which V8 kept entering and throwing away again: 2,079 times in a run. The low halves
 * that go through here are above 2^31 from the first TIPs on.
 */
function unsigned(half: number): number {
  return half >>> 0;
}

/** Where {@link mapLoop} leaves control. */
export class MapLoop {
  at = -1;
  /**
   * The nodes after the calls the loop ran, the latest at {@link depth} (a ring): a
   * return's TIP mostly goes to the latest one not returned to yet, and comparing its
   * address saves the probe for the target (without RET compression most TIPs of a
   * fuzzing trace are returns). Only a guess: the stack for RET compression is
   * {@link MapLoopWalk.stack}.
   */
  readonly calls = new Int32Array(CALLS_MASK + 1).fill(-1);
  depth = 0;
}
