/**
 * The code as a graph of decision points, for decoders that only follow where control
 * goes (coverage): one node per address control entered at, holding the straight-line
 * run from there to the first transfer of control (any branch, taken or not, call,
 * return or far transfer) and what decides where that transfer goes:
 * - nothing (a direct jump or call): the node's one successor, {@link DecisionGraph.taken};
 * - a TNT bit (a conditional jump): {@link DecisionGraph.taken} or {@link DecisionGraph.fall};
 * - a TNT bit or a TIP (a near return, compressed or not), a TIP (indirect jumps and
 *   calls, far transfers).
 * The successors are node ids, found once and kept: following a decision is one array
 * read, not a walk through the code. Nodes are made as the decode reaches them, by
 * decoding each instruction of the run once (the image's decode caches, libipt's
 * classes), and kept until {@link DecisionGraph.clear} (a new image).
 *
 * What a walk reads at each decision is {@link NODE_WORDS} words of one Int32Array
 * ({@link Node} says which): 32 bytes, mostly within one cache line. The words read
 * once (where the run ends, for a new successor or a feed) are in another array
 * ({@link NodeCold}), and the rarely read {@link NodeFlag}s in a third: a large
 * program's graph outgrows a core's cache, and the walk's speed follows how many
 * nodes fit (the large bench trace's count took 1.12x the CPU time with all of a
 * node's words in one array, 64 bytes a node, and 1.18x that again with 128). A direct
 * branch's displacement is kept, so its successors are found without decoding it
 * again. An indirect branch also keeps the node its last TIP went to: about half go
 * where they went before (returns to a caller, calls through a vtable), and that costs
 * no look-up.
 *
 * 64-bit code only: a decoder in another mode does not use the graph. Memory: about 70
 * bytes a node with its hash slots; past `maxNodes` (default 2^21, 144 MiB; below 2^22) {@link DecisionGraph.node} says
 * so (-1) and the caller decodes another way.
 */
import { doubleFields, mutableFields } from "../base/halves.js";
import type { Image } from "../image/index.js";
import { ExecMode } from "../isa/index.js";
import { CodeReader } from "./code-reader.js";
import * as flowClass from "./flow-class.js";
import * as flowInsn from "./flow-insn.js";
import { FlowInsn } from "./flow-insn.js";

const { FACT_SHIFT, FlowClass, InsnFact } = flowClass;
const { addDelta64, addOffset, fallThrough, next } = flowInsn;

/** What ends a node: how its last instruction decides where control goes. */
export const NodeKind = {
  /** Not code: unmapped, undecodable, or running over a section's end. */
  Bad: 0,
  CondJump: 1,
  /** A direct jump: no decision. */
  Jump: 2,
  /** A direct call: no decision (pushes its return address unless it calls the next instruction). */
  Call: 3,
  IndirectJump: 4,
  /** An indirect call: pushes its return address, a TIP decides. */
  IndirectCall: 5,
  /** A near return: a taken TNT bit (compressed) or a TIP. */
  Return: 6,
  /** A far transfer (far call, jump or return, INT n, SYSCALL, IRET, VM entry): a TIP. */
  Far: 7,
} as const;

/** The words of a node a walk reads at each decision, in {@link DecisionGraph.nodes} from id * NODE_WORDS. */
export const Node = {
  /** Its {@link NodeKind}. */
  Kind: 0,
  /** Instructions in the run, the transfer included. */
  Insns: 1,
  /**
   * A conditional jump's taken successor, a direct jump's or call's target: a node id,
   * -1 until asked ({@link DecisionGraph.taken} fills it). Right before Fall: a walk
   * picks one of the two by `Fall - taken`.
   */
  Taken: 2,
  /**
   * A conditional jump's fall-through successor; for calls, the node at the return
   * address, or -2 for a direct call to the next instruction (no return address for
   * RET compression). -1 until asked ({@link DecisionGraph.fall} fills it).
   */
  Fall: 3,
  /** Its first instruction's address, low and high halves (as int32). */
  Lo: 4,
  Hi: 5,
  /**
   * The node the last TIP from here went to (-1: none yet): many indirect branches go
   * where they went before, which costs no probe of the slots, only a compare of that
   * node's address (see {@link DecisionGraph.target}), in the words the walk reads next.
   */
  TipId: 6,
  /**
   * The walker's own word, -1 when the node is made: coverage-map-loop.ts keeps the
   * kind and the node's AFL map location there, read in one word at each entry; the
   * walks that feed call stacks what they need of the node's cold words. One walker's
   * at a time: see {@link DecisionGraph.claimWalkWords}.
   */
  Walk: 7,
} as const;

export const NODE_WORDS = 8;

/** The words of a node a walk reads once or not at all, in {@link DecisionGraph.cold} from id * COLD_WORDS. */
export const NodeCold = {
  /** Its last instruction's address (the transfer). */
  EndLo: 0,
  EndHi: 1,
  /**
   * A direct branch's displacement (its target is the next instruction's address plus
   * this): successors are found without decoding the transfer again.
   */
  Disp: 2,
  /** The transfer's length (bits 0-7) and {@link FlowClass} (bits 8 on): see {@link endSize}, {@link endClass}. */
  End: 3,
  /** The instruction before the transfer (the start when the run is the transfer alone). */
  PrevLo: 4,
  PrevHi: 5,
} as const;

/** Six words used, two to keep a node's words within one cache line more often. */
export const COLD_WORDS = 8;

/** Facts about a node's run beyond its kind ({@link DecisionGraph.flags}). */
export const NodeFlag = {
  /** A MOV to CR3 runs in it (a TIP.PGD without IP may bind there). */
  MovCr3: 1,
} as const;

// The layouts' words and kinds as module constants: a property of a const object is a
// load that needs V8's type feedback, so that a path first taken after V8 optimised a
// walk (a kernel address's first look-up, say) threw its code away.
const { Kind, Insns, Taken, Fall, Lo, Hi, TipId, Walk } = Node;
const { EndLo, EndHi, Disp, End, PrevLo, PrevHi } = NodeCold;
const { Bad, CondJump, Jump, Call, IndirectJump, IndirectCall, Return, Far } = NodeKind;

/** The transfer's length, from a node's {@link NodeCold.End} word. */
export function endSize(end: number): number {
  return end & 0xff;
}

/** The transfer's {@link FlowClass}, from a node's {@link NodeCold.End} word. */
export function endClass(end: number): number {
  return end >>> 8;
}

/** Bits of a hash slot that hold node id + 1; the hash's bits above them are the slot's tag. */
const SLOT_ID_BITS = 22;
const SLOT_ID_MASK = (1 << SLOT_ID_BITS) - 1;

/** Straight-line instructions in one node at most (a longer run is Bad: that code decodes another way). */
const MAX_RUN = 1 << 20;

/**
 * What a graph's nodes mean, for graphs kept between runs (graph-snapshot.ts): change
 * it with anything that makes different nodes from the same code (what ends a run,
 * the words of a node, {@link NodeKind}, the flow classes, the hash), so that no graph
 * made by an older build is taken.
 */
export const GRAPH_FORMAT = 1;

/**
 * A graph's nodes and look-up table as plain arrays (see {@link DecisionGraph.state}):
 * `nodes`, `cold` and `flags` hold at least `size` nodes, `slots` is a power of two
 * long. The {@link Node.Walk} words belong to whoever walked the graph.
 */
export interface GraphState {
  size: number;
  walked: number;
  nodes: Int32Array;
  cold: Int32Array;
  flags: Uint8Array;
  slots: Int32Array;
}

/**
 * Memory a graph keeps its node words and hash slots in instead of arrays of its own
 * (a WebAssembly module's: analysis/wasm/map-loop-engine.ts): each call gives a view
 * of `words` words from the same place as before, so a longer view holds the words
 * there already. Room for {@link DecisionGraph.maxNodes} nodes' arrays (see
 * {@link graphMemoryWords}): the graph never asks for more.
 */
export interface GraphMemory {
  nodes(words: number): Int32Array;
  slots(words: number): Int32Array;
}

/** The most words a graph of `maxNodes` nodes asks a {@link GraphMemory} for: its node words and its hash slots. */
export function graphMemoryWords(maxNodes: number): { nodes: number; slots: number } {
  // The arrays double from 1024 nodes and 2048 slots (see probe and rehash).
  let nodes = 1024;
  while (nodes < maxNodes) nodes *= 2;
  let slots = 2048;
  while (4 * maxNodes > 3 * (slots - 1)) slots *= 2;
  return { nodes: nodes * NODE_WORDS, slots };
}

/** Generations given out (see DecisionGraph.generation). */
let generations = 0;

export class DecisionGraph {
  /** Nodes made. */
  size = 0;
  /** The nodes, {@link NODE_WORDS} words each (see {@link Node}); replaced as it grows. */
  nodes: Int32Array = new Int32Array(1024 * NODE_WORDS);
  /** The rest of each node, {@link COLD_WORDS} words each (see {@link NodeCold}); replaced as it grows. */
  cold: Int32Array = new Int32Array(1024 * COLD_WORDS);
  /** Per node: its {@link NodeFlag} bits (only a TIP.PGD asks). */
  private flagBits: Uint8Array = new Uint8Array(1024);
  /**
   * Open addressing, keyed by start address: per slot {@link SLOT_ID_BITS} bits of node
   * id + 1 (0: an empty slot) under the top bits of the address's hash (its tag), so a
   * probe reads a node only when the tags match (1 in 1024 others do) and passes over
   * the other slots of a chain in the table's cache line. Up to three quarters full: a
   * walk looks a node up here at about half its TIPs (2.5 million times on the large
   * bench trace, where the last TIP's node did not match), and a table that stays
   * within the core's cache (1 MiB for that trace's 155,000 nodes, not 2 at half full)
   * took 0.9x the CPU time (21 pairs).
   */
  private slots: Int32Array = new Int32Array(2048);
  private mask = 2047;
  /** Where the node words and slots are when not arrays of the graph's own ({@link useMemory}). */
  private store: GraphMemory | undefined;
  private readonly code: CodeReader;
  private readonly insn = new FlowInsn();

  /** Instructions decoded to make nodes so far (see `maxWalk`). */
  walked = 0;
  /**
   * Node ids name the same nodes while this holds: a number no other graph has had,
   * new at each {@link clear} and {@link adopt}.
   */
  generation = ++generations;

  /** Whose layout the nodes' {@link Node.Walk} words hold (see {@link claimWalkWords}); 0: none yet. */
  private walkWords = 0;

  constructor(
    image: Image,
    readonly maxNodes = 1 << 21,
    /**
     * Instructions decoded to make nodes at most: nodes share no runs (one starting
     * inside another's walks on to the same end), so a trace entering a long stretch
     * of straight-line code at many places could cost its length at each; past this
     * the graph is full.
     */
    readonly maxWalk = 1 << 24,
  ) {
    if (maxNodes >= SLOT_ID_MASK)
      throw new RangeError(`a decision graph holds fewer than ${SLOT_ID_MASK} nodes`);
    // Each instruction is decoded about once, when its node is made: no caches.
    this.code = new CodeReader(image, null, undefined, true);
    // The arrays are replaced as the graph grows, and the addresses' halves pass 2^31:
    // either change, the first time, threw away a compile of `make` under way (a map
    // deprecated) in every first run on a large program.
    mutableFields(this, ["nodes", "cold", "flagBits", "slots", "mask", "size", "walked"]);
    doubleFields(this, ["beforeHi", "beforeLo", "movHi", "movLo"]);
  }

  /** The memory the nodes and slots are in ({@link useMemory}); undefined: arrays of the graph's own. */
  get memory(): GraphMemory | undefined {
    return this.store;
  }

  /** The hash slots' count - 1 (for a walker probing them itself). */
  get slotMask(): number {
    return this.mask;
  }

  /**
   * Keep the node words and hash slots in `m` from now on (those made so far are copied
   * there); `m` must have room for {@link maxNodes} nodes ({@link graphMemoryWords}).
   */
  useMemory(m: GraphMemory): void {
    const nodes = m.nodes(this.nodes.length);
    if (nodes !== this.nodes) nodes.set(this.nodes);
    const slots = m.slots(this.slots.length);
    if (slots !== this.slots) slots.set(this.slots);
    this.nodes = nodes;
    this.slots = slots;
    this.store = m;
  }

  /** The image the nodes were made from. */
  get image(): Image {
    return this.code.image;
  }

  /** Forget every node (the image changed). */
  clear(image: Image = this.code.image): void {
    this.code.setImage(image);
    this.code.invalidate();
    this.generation = ++generations;
    this.size = 0;
    this.walked = 0;
    this.slots.fill(0);
    this.walkWords = 0;
  }

  /**
   * A walker that keeps its own layout `layout` (a number of its choosing, not 0) in the
   * nodes' {@link Node.Walk} words starts: when another layout is there, every node's
   * word goes back to -1 (not known yet), which that walker fills again as it goes.
   * Walks of different layouts do not take turns on one graph.
   */
  claimWalkWords(layout: number): void {
    if (this.walkWords === layout) return;
    const nodes = this.nodes;
    for (let w = Walk; w < this.size * NODE_WORDS; w += NODE_WORDS) nodes[w] = -1;
    this.walkWords = layout;
  }

  /** The graph as it is (its own arrays, not copies: read them before it grows). */
  state(): GraphState {
    const { size, walked, nodes, cold, flagBits: flags, slots } = this;
    return { size, walked, nodes, cold, flags, slots };
  }

  /**
   * Take the nodes of `s`, made by a graph of the same {@link GRAPH_FORMAT} from the
   * same code (the image's bytes at the same addresses): its arrays become this
   * graph's. Checked (graph-snapshot.ts) so that every id in them is a node and a
   * probe ends, not that the nodes are true to the code.
   */
  adopt(s: GraphState): void {
    if (s.size > this.maxNodes) throw new RangeError(`${s.size} nodes: more than this graph holds`);
    this.generation = ++generations;
    this.size = s.size;
    this.walked = s.walked;
    this.nodes = s.nodes;
    this.cold = s.cold;
    this.flagBits = s.flags;
    this.slots = s.slots;
    this.mask = s.slots.length - 1;
    // The arrays are the snapshot's own now (a walker may move them into its memory again).
    this.store = undefined;
    // (A kept graph's words are -1: graph-snapshot.ts clears them and checks.)
    this.walkWords = 0;
  }

  /** Node `id`'s first instruction's address, low half (unsigned). */
  lo(id: number): number {
    return this.nodes[id * NODE_WORDS + Lo]! >>> 0;
  }

  /** Node `id`'s first instruction's address, high half (unsigned). */
  hi(id: number): number {
    return this.nodes[id * NODE_WORDS + Hi]! >>> 0;
  }

  /** The node starting at (hi:lo), made now if new: its id, or -1 when the graph is full. */
  node(hi: number, lo: number): number {
    const h = hash(hi, lo);
    return this.probe(hi, lo, h, this.slots[h & this.mask]!);
  }

  /** {@link node}, with `h` the hash of (hi:lo) and `first` its first slot's value. */
  private probe(hi: number, lo: number, h: number, first: number): number {
    const mask = this.mask;
    const slots = this.slots;
    const nodes = this.nodes;
    const l = lo | 0;
    const h32 = hi | 0;
    const tag = h & ~SLOT_ID_MASK;
    let s = h & mask;
    for (let v = first; ; v = slots[s]!) {
      if (v === 0) break;
      if ((v & ~SLOT_ID_MASK) === tag) {
        const id = (v & SLOT_ID_MASK) - 1;
        const at = id * NODE_WORDS;
        if (nodes[at + Lo] === l && nodes[at + Hi] === h32) return id;
      }
      s = (s + 1) & mask;
    }
    if (this.size >= this.maxNodes || this.walked >= this.maxWalk) return -1;
    const id = this.size++;
    if ((id + 1) * NODE_WORDS > nodes.length) {
      // (In a GraphMemory the longer view holds the words already.)
      const grown = this.store?.nodes(2 * nodes.length) ?? new Int32Array(2 * nodes.length);
      if (this.store === undefined) grown.set(nodes);
      this.nodes = grown;
      const cold = new Int32Array(2 * this.cold.length);
      cold.set(this.cold);
      this.cold = cold;
      const flags = new Uint8Array(2 * this.flagBits.length);
      flags.set(this.flagBits);
      this.flagBits = flags;
    }
    this.make(id, hi, lo);
    if (this.walked >= this.maxWalk && this.nodes[id * NODE_WORDS + Kind] === Bad) {
      // Cut short by the budget, not bad code: the graph is full.
      this.size--;
      return -1;
    }
    if (4 * this.size > 3 * this.mask) this.rehash();
    else slots[s] = tag | (id + 1);
    return id;
  }

  /**
   * Where a TIP from node `id`'s transfer to (hi:lo) goes: the node there (its id, or
   * -1 when the graph is full), remembered for the next TIP from here.
   */
  target(id: number, hi: number, lo: number): number {
    const at = id * NODE_WORDS;
    const nodes = this.nodes;
    // The first slot is read before the last target is compared: the two reads (each
    // mostly a cache miss on a large program) then overlap, and a TIP that goes
    // elsewhere waits for one miss, not two in turn. flow --stat:insn on the large
    // bench trace (2.5 million such TIPs): 0.944x the CPU time (9 pairs).
    const h = hash(hi, lo);
    const first = this.slots[h & this.mask]!;
    const last = nodes[at + TipId]!;
    if (last >= 0) {
      // (Both halves compared at once: a compare of the high half, run only when the low
      // half matched, had not run by the time V8 optimised the count's loop, at times,
      // and threw that code away when it did.)
      const t = last * NODE_WORDS;
      if (((nodes[t + Lo]! ^ lo) | (nodes[t + Hi]! ^ hi)) === 0) return last;
    }
    const t = this.probe(hi, lo, h, first);
    // node may have grown the array.
    if (t >= 0) this.nodes[at + TipId] = t;
    return t;
  }

  /** Node `id`'s {@link NodeFlag} bits. */
  flags(id: number): number {
    return this.flagBits[id]!;
  }

  /** A conditional jump's taken successor, a direct jump's or call's target: a node id, or -1 (full). */
  taken(id: number): number {
    const at = id * NODE_WORDS;
    const nodes = this.nodes;
    const t = nodes[at + Taken]!;
    if (t !== -1) return t;
    const cold = this.cold;
    const c = id * COLD_WORDS;
    addDelta64(cold[c + EndHi]! >>> 0, cold[c + EndLo]! >>> 0, endSize(cold[c + End]!) + cold[c + Disp]!);
    const n = this.node(next.hi, next.lo);
    if (n >= 0) this.nodes[at + Taken] = n;
    return n;
  }

  /**
   * A conditional jump's fall-through successor, or a call's return address: a node
   * id; -2 for a direct call to the next instruction; -1 (full).
   */
  fall(id: number): number {
    const at = id * NODE_WORDS;
    const f = this.nodes[at + Fall]!;
    if (f !== -1) return f;
    const cold = this.cold;
    const c = id * COLD_WORDS;
    let n = -2;
    // A direct call to the next instruction shares the store below: operations of its
    // own (that rare case's), first run once V8 had optimised the walk, threw its code away.
    if (this.nodes[at + Kind] !== Call || cold[c + Disp] !== 0) {
      addDelta64(cold[c + EndHi]! >>> 0, cold[c + EndLo]! >>> 0, endSize(cold[c + End]!));
      n = this.node(next.hi, next.lo);
    }
    // (node may have grown the array.)
    if (n !== -1) this.nodes[at + Fall] = n;
    return n;
  }

  /** The instruction before the address {@link insnsBefore} found last (when it found one). */
  beforeHi = 0;
  beforeLo = 0;

  /**
   * Instructions from node `id`'s start up to (not including) (hi:lo), when that is an
   * instruction of its run other than the first: their count (the last of them at
   * {@link beforeHi}:{@link beforeLo}); else 0.
   */
  insnsBefore(id: number, hi: number, lo: number): number {
    const startLo = this.lo(id);
    const startHi = this.hi(id);
    const at = id * COLD_WORDS;
    const cold = this.cold;
    if (hi !== startHi || hi !== cold[at + EndHi]! >>> 0) return 0;
    if (lo <= startLo || lo > cold[at + EndLo]! >>> 0) return 0;
    const insn = this.insn;
    let ipLo = startLo;
    for (let n = 0; ; n++) {
      if (ipLo === lo) return n;
      if (ipLo > lo) return 0;
      insn.reset(hi, ipLo, ExecMode.Bits64);
      if (this.code.decode(insn) < 0) return 0;
      fallThrough(insn);
      if (next.hi !== hi) return 0;
      this.beforeHi = hi;
      this.beforeLo = ipLo;
      ipLo = next.lo;
    }
  }

  /** The instruction after the MOV to CR3 {@link movCr3} found last. */
  movHi = 0;
  movLo = 0;

  /**
   * Whether node `id`'s run holds a MOV to CR3 ({@link NodeFlag.MovCr3}): true with the
   * address of the instruction after the first one in {@link movHi}:{@link movLo}.
   */
  movCr3(id: number): boolean {
    if ((this.flagBits[id]! & NodeFlag.MovCr3) === 0) return false;
    const hi = this.hi(id);
    const end = this.cold[id * COLD_WORDS + EndLo]! >>> 0;
    const insn = this.insn;
    for (let lo = this.lo(id); lo <= end; lo = next.lo) {
      insn.reset(hi, lo, ExecMode.Bits64);
      if (this.code.decode(insn) < 0) return false;
      const found = ((insn.info >>> FACT_SHIFT) & InsnFact.MovCr3) !== 0;
      fallThrough(insn);
      if (next.hi !== hi) return false;
      if (found) {
        this.movHi = hi;
        this.movLo = next.lo;
        return true;
      }
    }
    return false;
  }

  /** The isa layer's InsnClass of the instruction at (hi:lo), or -1 when it does not decode. */
  insnClassAt(hi: number, lo: number): number {
    const insn = this.insn;
    insn.reset(hi, lo, ExecMode.Bits64);
    return this.code.decode(insn) >= 0 ? insn.iclass : -1;
  }

  /** Whether the instruction at (hi:lo) enters a VM (VMLAUNCH, VMRESUME: the SKD022 erratum's). */
  vmEntryAt(hi: number, lo: number): boolean {
    const insn = this.insn;
    insn.reset(hi, lo, ExecMode.Bits64);
    return this.code.decode(insn) >= 0 && ((insn.info >>> FACT_SHIFT) & InsnFact.VmEntry) !== 0;
  }

  /** Fill node `id`, starting at (hi:lo): walk the run to its transfer. */
  private make(id: number, hi: number, lo: number): void {
    const insn = this.insn;
    let kind: number = Bad;
    let flags = 0;
    let n = 0;
    let ipHi = hi;
    let ipLo = lo;
    let prevHi = hi;
    let prevLo = lo;
    const limit = Math.min(MAX_RUN, this.maxWalk - this.walked);
    const code = this.code;
    while (n < limit) {
      // Straight-line code a run at a time (the same instructions, the same addresses).
      const plain = code.plainRun(ipHi, ipLo, limit - n);
      if (plain > 0) {
        n += plain;
        addOffset(ipHi, ipLo, code.runLastBytes);
        prevHi = next.hi;
        prevLo = next.lo;
        addOffset(ipHi, ipLo, code.runBytes);
        ipHi = next.hi;
        ipLo = next.lo;
        if (n >= limit) break;
      }
      insn.reset(ipHi, ipLo, ExecMode.Bits64);
      if (this.code.decode(insn) < 0 || insn.truncated) break;
      n++;
      const c = insn.info & 15;
      if (c === FlowClass.Other || c === FlowClass.Ptwrite) {
        if ((insn.info >>> FACT_SHIFT) & InsnFact.MovCr3) flags |= NodeFlag.MovCr3;
        fallThrough(insn);
        prevHi = ipHi;
        prevLo = ipLo;
        ipHi = next.hi;
        ipLo = next.lo;
        continue;
      }
      const direct = ((insn.info >>> FACT_SHIFT) & InsnFact.Direct) !== 0;
      if (c === FlowClass.CondJump) kind = CondJump;
      else if (c === FlowClass.Jump) kind = direct ? Jump : IndirectJump;
      else if (c === FlowClass.Call) kind = direct ? Call : IndirectCall;
      else if (c === FlowClass.Return) kind = Return;
      else if (c === FlowClass.FarCall || c === FlowClass.FarJump || c === FlowClass.FarReturn) kind = Far;
      break;
    }
    this.walked += n;
    const at = id * NODE_WORDS;
    const nodes = this.nodes;
    nodes[at + Kind] = kind;
    nodes[at + Insns] = n;
    nodes[at + Taken] = -1;
    nodes[at + Fall] = -1;
    nodes[at + Lo] = lo;
    nodes[at + Hi] = hi;
    nodes[at + TipId] = -1;
    nodes[at + Walk] = -1;
    const c = id * COLD_WORDS;
    const cold = this.cold;
    cold[c + EndLo] = ipLo;
    cold[c + EndHi] = ipHi;
    cold[c + Disp] = kind === Bad ? 0 : insn.disp;
    this.flagBits[id] = flags;
    cold[c + End] = kind === Bad ? 0 : insn.size | ((insn.info & 15) << 8);
    cold[c + PrevLo] = prevLo;
    cold[c + PrevHi] = prevHi;
  }

  /** Twice the slots, every node put back (the newest included). */
  private rehash(): void {
    // (Made from the nodes alone: in a GraphMemory the new slots may overwrite the old.)
    const n = 2 * this.slots.length;
    const slots = this.store?.slots(n).fill(0) ?? new Int32Array(n);
    const mask = slots.length - 1;
    const nodes = this.nodes;
    for (let id = 0; id < this.size; id++) {
      const at = id * NODE_WORDS;
      const h = hash(nodes[at + Hi]! >>> 0, nodes[at + Lo]! >>> 0);
      let s = h & mask;
      while (slots[s] !== 0) s = (s + 1) & mask;
      slots[s] = (h & ~SLOT_ID_MASK) | (id + 1);
    }
    this.slots = slots;
    this.mask = mask;
  }
}

function hash(hi: number, lo: number): number {
  return Math.imul(lo ^ Math.imul(hi, 0x9e3779b1), 0x85ebca6b) ^ (lo >>> 15);
}
