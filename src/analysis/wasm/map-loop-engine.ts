/**
 * The AFL map's inner loop (and the instruction count's) in WebAssembly: map-loop.wat
 * does what coverage-map-loop.ts's mapLoop does, step for step, in less time (V8's
 * optimising compiler needs no type feedback for it, so there are no type checks in
 * the loop and nothing to warm up: the fuzzing bench trace's warm decode took 0.8x the
 * time, a whole `flow --afl-map` 0.9x, a whole count of the gzip trace 0.8-0.9x).
 * mapLoop stays for the coverage tables (a call into JavaScript per block) and where
 * WebAssembly cannot compile (a page's content security policy) or a memory cannot
 * be had.
 *
 * Each graph it walks gets a module instance and a memory of its own, in which the
 * graph keeps its node words and hash slots from then on (DecisionGraph.useMemory;
 * room for `maxNodes` is reserved, which costs address space, not memory, until the
 * graph grows into it). For one decode the memory also holds the RET compression
 * stack (ReturnStack.attach), the ring of calls, the AFL map (the Coverage's own
 * array is copied in and put back at the end: {@link MapLoopEngine.release}) and the
 * part of the trace being walked (copied in 2 MiB at a time).
 */
import { type DecisionGraph, type GraphMemory, graphMemoryWords, Node } from "../../flow/decision-graph.js";
import type { ReturnStack } from "../../flow/return-stack.js";
import type { LastIp } from "../../packet/last-ip.js";
import { IPC_PAYLOAD_BYTES } from "../../packet/types.js";
import { leaveLoop, type MapLoop, type MapLoopWalk, PACKET as PACKET_CLASSES } from "../coverage-map-loop.js";
import { AFL_MAP_SIZE, type Coverage } from "../export/coverage.js";
import { MAP_LOOP_WASM_BASE64 } from "./map-loop-wasm.js";

const { Taken, Fall } = Node;

// The memory's layout (byte addresses; see map-loop.wat).
const PACKET = 0;
const IPC = 256;
const CALLS = 512;
const STACK_LO = 1024;
const STACK_HI = 1536;
const MAP = 4096;
/** 64 bytes: where the loop stopped (map-loop.wat's $state). */
const STATE = 0x1f000;
const TRACE = 0x20000;
/** Trace bytes copied in at a time. */
const TRACE_SIZE = 2 << 20;
const SLOTS = TRACE + TRACE_SIZE;
/** Words of the calls ring and the RET compression stack. */
const RING_WORDS = 64;
const STACK_WORDS = 65;
/** The largest memory made for a graph (its maxNodes decides: 2^21 nodes take 82 MiB). */
const MAX_BYTES = 1 << 30;

/** Why the loop stopped (map-loop.wat's run: the fail word of its $state). */
const Stop = { Packet: 0, Loop: 1, Code: 3, Cut: 5, NeedTaken: 6, NeedFall: 7, NeedTarget: 8 } as const;

/** The words of map-loop.wat's $state (the instruction count is the double at word 14). */
const S = {
  p: 0,
  prev: 1,
  ipHi: 2,
  ipLo: 3,
  depth: 4,
  due: 5,
  src: 6,
  moved: 7,
  tips: 8,
  fail: 9,
  bit: 10,
  hops: 11,
  top: 12,
  bottom: 13,
} as const;

/** An exported global (WebAssembly.Global, which the Node typings do not declare). */
interface Slot {
  value: number;
}

/** What map-loop.wat exports. */
interface Exports {
  run(
    pos: number,
    end: number,
    p: number,
    prev: number,
    ipHi: number,
    ipLo: number,
    depth: number,
    due: number,
    insns: number,
    src: number,
    maxHops: number,
    mapped: number,
    startBit: number,
    hops: number,
    top: number,
    bottom: number,
    slotMask: number,
  ): number;
  packet: Slot;
  ipcBytes: Slot;
  calls: Slot;
  stackLo: Slot;
  stackHi: Slot;
  map: Slot;
  nodes: Slot;
  slots: Slot;
  state: Slot;
}

/** The WebAssembly API this uses (the typings this builds with declare none of it as values). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (size: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
  Instance: new (module: object, imports: object) => { readonly exports: unknown };
}

/** The compiled module (null: WebAssembly is not there or may not compile; undefined: not tried yet). */
let compiled: object | null | undefined;
/** Whether walks may use the engine (tests switch it off to compare with mapLoop). */
let enabled = true;
/** Trace bytes copied in at a time (tests make it small, to cut packets at its edges). */
let chunk = TRACE_SIZE;

/** Set (16 to {@link TRACE_SIZE}, for tests) or read how many trace bytes the engine copies in at a time. */
export function mapLoopChunk(bytes?: number): number {
  // (At least the longest packet the loop takes: a TIP of 9 bytes, a CYC of up to 9.)
  if (bytes !== undefined) chunk = Math.max(16, Math.min(TRACE_SIZE, Math.floor(bytes)));
  return chunk;
}

/** Let walks use the WebAssembly loop (the default) or not (mapLoop everywhere). */
export function useWasmMapLoop(on: boolean): void {
  enabled = on;
}

/** WebAssembly, where there is one. */
function wasm(): WasmApi | undefined {
  return (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
}

function compile(): object | null {
  if (compiled !== undefined) return compiled;
  compiled = null;
  const api = wasm();
  if (api === undefined || typeof atob !== "function") return null;
  try {
    const text = atob(MAP_LOOP_WASM_BASE64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    compiled = new api.Module(bytes);
  } catch {
    // (A content security policy without 'wasm-unsafe-eval': mapLoop does the work.)
  }
  return compiled;
}

const engines = new WeakMap<DecisionGraph, MapLoopEngine | null>();

/** The engine for walks of `graph`, or undefined (switched off, no WebAssembly, a graph too large for one memory). */
export function mapLoopEngine(graph: DecisionGraph): MapLoopEngine | undefined {
  if (!enabled) return undefined;
  let e = engines.get(graph);
  if (e === undefined) {
    const module = compile();
    const words = graphMemoryWords(graph.maxNodes);
    const bytes = SLOTS + 4 * (words.slots + words.nodes);
    e = null;
    if (module !== null && bytes <= MAX_BYTES) {
      try {
        e = new MapLoopEngine(module, words.slots, words.nodes);
      } catch {
        // No address space for the memory (a 32-bit browser, a `ulimit -v`): mapLoop walks this graph.
      }
    }
    engines.set(graph, e);
  }
  return e ?? undefined;
}

export class MapLoopEngine implements GraphMemory {
  private readonly memory: { readonly buffer: ArrayBuffer };
  private readonly x: Exports;
  private readonly bytes: Uint8Array;
  private readonly nodesAt: number;
  /** The memory's ring of calls, stack halves and map (it never grows: made once). */
  private readonly ring: Int32Array;
  private readonly stackHi: Uint32Array;
  private readonly stackLo: Uint32Array;
  private readonly map: Uint8Array;
  /** The loop's state where it stopped ($state): words, and the instruction count. */
  private readonly state: Int32Array;
  private readonly stateInsns: Float64Array;
  /** The decode under way: its MapLoop, Coverage (whose map is copied in) and stack. */
  private loop: MapLoop | undefined;
  private coverage: Coverage | undefined;
  private ownMap: Uint8Array | undefined;
  private stack: ReturnStack | undefined;
  /** The trace bytes in the memory: buf[from..to) of the window at `base`. */
  private buf: Uint8Array | undefined;
  private base = -1;
  private from = 0;
  private to = 0;

  /** Room for `slotWords` hash slots and `nodeWords` node words (graphMemoryWords). */
  constructor(module: object, slotWords: number, nodeWords: number) {
    this.nodesAt = SLOTS + 4 * slotWords;
    const pages = Math.ceil((this.nodesAt + 4 * nodeWords) / 65536);
    const api = wasm()!;
    this.memory = new api.Memory({ initial: pages, maximum: pages });
    this.x = new api.Instance(module, { env: { memory: this.memory } }).exports as Exports;
    const b = this.memory.buffer;
    this.bytes = new Uint8Array(b);
    this.ring = new Int32Array(b, CALLS, RING_WORDS);
    this.stackHi = new Uint32Array(b, STACK_HI, STACK_WORDS);
    this.stackLo = new Uint32Array(b, STACK_LO, STACK_WORDS);
    this.map = new Uint8Array(b, MAP, AFL_MAP_SIZE);
    this.state = new Int32Array(b, STATE, 14);
    this.stateInsns = new Float64Array(b, STATE + 56, 1);
    // mapLoop's classes of opcode bytes, and a TIP's payload bytes by IPBytes (0: reserved).
    this.bytes.set(PACKET_CLASSES, PACKET);
    this.bytes.set(
      IPC_PAYLOAD_BYTES.map((n) => Math.max(0, n)),
      IPC,
    );
    const x = this.x;
    x.packet.value = PACKET;
    x.ipcBytes.value = IPC;
    x.calls.value = CALLS;
    x.stackLo.value = STACK_LO;
    x.stackHi.value = STACK_HI;
    x.map.value = MAP;
    x.slots.value = SLOTS;
    x.nodes.value = this.nodesAt;
    x.state.value = STATE;
  }

  nodes(words: number): Int32Array {
    return new Int32Array(this.memory.buffer, this.nodesAt, words);
  }

  slots(words: number): Int32Array {
    return new Int32Array(this.memory.buffer, SLOTS, words);
  }

  /**
   * mapLoop (see there) for `loop`'s decode: `buf[pos..end)` is the window at trace
   * offset `base`. The decode's first call moves the graph into the memory and the
   * decode's state in; {@link release} puts the state back.
   */
  run(
    loop: MapLoop,
    w: MapLoopWalk,
    last: LastIp,
    buf: Uint8Array,
    pos: number,
    end: number,
    base: number,
    handovers: Record<"Code" | "Loop" | "Full", string>,
    maxDirect: number,
  ): number {
    if (loop !== this.loop) this.begin(loop, w);
    const x = this.x;
    const graph = w.graph;
    const cov = w.coverage;
    const stack = w.stack;
    let p = loop.at | 0;
    let prev = cov !== undefined ? cov.prev : 0;
    let ipHi = last.hi | 0;
    let ipLo = last.lo | 0;
    let depth = loop.depth | 0;
    let due = w.due;
    let insns = w.icount[0]!;
    let src = w.src | 0;
    let moved = false;
    let tips = false;
    let startBit = -1;
    let hops = 0;
    let failed = false;
    let needPos = -1;
    let needNode = -1;
    let needStop = -1;
    for (;;) {
      if (buf !== this.buf || base !== this.base || pos < this.from || pos >= this.to)
        this.fill(buf, base, pos, end);
      const r = x.run(
        TRACE + pos - this.from,
        TRACE + this.to - this.from,
        p,
        prev,
        ipHi,
        ipLo,
        depth,
        due,
        insns,
        src,
        maxDirect,
        cov !== undefined ? 1 : 0,
        startBit,
        hops,
        stack.top,
        stack.bottom,
        graph.slotMask,
      );
      const o = this.state;
      pos = this.from + r - TRACE;
      p = o[S.p]!;
      prev = o[S.prev]!;
      ipHi = o[S.ipHi]!;
      ipLo = o[S.ipLo]!;
      depth = o[S.depth]!;
      due = o[S.due]!;
      insns = this.stateInsns[0]!;
      if (o[S.moved] !== 0) {
        moved = true;
        src = o[S.src]!;
      }
      if (o[S.tips] !== 0) tips = true;
      stack.top = o[S.top]!;
      stack.bottom = o[S.bottom]!;
      const stop = o[S.fail]!;
      startBit = -1;
      hops = 0;
      if (stop === Stop.Packet || stop === Stop.Cut) {
        // The end of the bytes copied in, not of the window: go on from the next copy.
        // (A packet cut short at the start of a copy is longer than the loop takes: the
        // packet loop in JavaScript judges it.)
        if (this.to < end && (pos === this.to || (stop === Stop.Cut && pos !== this.from))) {
          this.fill(buf, base, pos, end);
          continue;
        }
        break;
      }
      if (stop === Stop.Loop || stop === Stop.Code) {
        w.fail(stop === Stop.Loop ? handovers.Loop : handovers.Code);
        failed = true;
        break;
      }
      // A node to make, then on from the same step (which then finds it: a second ask
      // at the same step would be a fault here, and hands the trace over, not loop).
      if (pos === needPos && p === needNode && stop === needStop) {
        w.fail(handovers.Full);
        failed = true;
        break;
      }
      needPos = pos;
      needNode = p;
      needStop = stop;
      let made: number;
      if (stop === Stop.NeedTarget) {
        made = graph.target(p, ipHi >>> 0, ipLo >>> 0);
        if (made < 0) w.fail(handovers.Full);
      } else {
        made = w.successor(p, stop === Stop.NeedTaken ? Taken : Fall);
        // (-2: a direct call to the next instruction, which pushes nothing.)
        if (made === -2) made = 0;
      }
      if (made < 0) {
        failed = true;
        break;
      }
      startBit = o[S.bit]!;
      hops = o[S.hops]!;
    }
    leaveLoop(loop, w, last, prev, due, insns, p, depth, moved ? src : -1, tips, ipHi, ipLo);
    return failed ? -1 - pos : pos;
  }

  /** A decode's first call: the graph, the stack and the map move into the memory. */
  private begin(loop: MapLoop, w: MapLoopWalk): void {
    this.release();
    this.loop = loop;
    const graph = w.graph;
    if (graph.memory !== this) graph.useMemory(this);
    w.nodes = graph.nodes;
    this.ring.fill(-1);
    this.stack = w.stack;
    w.stack.attach(this.stackHi, this.stackLo);
    const cov = w.coverage;
    if (cov !== undefined) {
      this.coverage = cov;
      this.ownMap = cov.aflMap;
      this.map.set(cov.aflMap);
      cov.aflMap = this.map;
    }
  }

  /** The decode is over: its map and stack back in their own arrays. */
  release(): void {
    const cov = this.coverage;
    const own = this.ownMap;
    if (cov !== undefined && own !== undefined) {
      own.set(cov.aflMap);
      cov.aflMap = own;
    }
    this.stack?.detach();
    this.coverage = undefined;
    this.ownMap = undefined;
    this.stack = undefined;
    this.loop = undefined;
    this.buf = undefined;
  }

  /** Copy buf[pos..) into the memory, up to `end` or {@link mapLoopChunk} bytes. */
  private fill(buf: Uint8Array, base: number, pos: number, end: number): void {
    const to = Math.min(end, pos + chunk);
    this.bytes.set(buf.subarray(pos, to), TRACE);
    this.buf = buf;
    this.base = base;
    this.from = pos;
    this.to = to;
  }
}
