/**
 * Coverage of the executed code: basic blocks as they ran (first and last instruction,
 * instruction count, executions), edges between them with exact counts, an AFL++-style
 * 64 KiB edge bitmap, and a plain edge list.
 *
 * Edges. Every transfer of control is an edge `from → to`, counted each time the
 * instruction at `to` runs after it:
 * - a branch instruction (at `from`) and where the next instruction ran (`to`):
 *   conditional jumps taken and not taken (then `to` is the fall-through), direct and
 *   indirect jumps and calls, returns (compressed or not), far transfers (far call,
 *   jump and return, INT n, SYSCALL/SYSENTER, SYSRET/SYSEXIT, IRET, VM entries);
 * - an interrupt, exception or TSX abort (an asynchronous branch): from the address it
 *   was taken at (the instruction that had not completed, which IRET comes back to) to
 *   the handler.
 * (libxdc, the decoder of kAFL and Nyx, hashes (from, to) pairs into its bitmap
 * instead; its cached decode records conditional branches only, and its counters wrap.)
 *
 * Gaps. Where the trace does not say where control went (TIP.PGD … TIP.PGE, including
 * transfers into untraced code such as a SYSCALL into an untraced kernel; an overflow;
 * a decode error and the resync after it; a thread switch) there is no edge: the branch
 * before the gap has none (even a taken conditional jump: no instruction of its target
 * was seen), and the first block after it is reached from nowhere (its AFL location is
 * XORed with 0, as at the start of the trace).
 *
 * The bitmap (`aflMap`) follows AFL++'s QEMU mode, which fuzzers taking PT traces (such
 * as PTfuzzer) reuse: each block start address is hashed to a 16-bit location,
 * `cur = ((addr >> 4) ^ (addr << 8)) & 0xffff` (so only the low 20 bits matter);
 * entering a block adds one to the byte at `cur ^ prev` and sets `prev = cur >> 1`.
 * The counters saturate: 255 stays 255 (AFL++'s NeverZero counters wrap 255 to 1 and
 * AFL's and libxdc's to 0, which would put an edge run 256 times in a low hit-count
 * bucket, or none). `prev` is 0 at the start and after every gap.
 *
 * The edge list ({@link writeEdges}): one line per edge, `0xFROM 0xTO COUNT`, addresses
 * in hex, the count in decimal, sorted by `from` then `to` (the JSON's edges).
 *
 * JSON schema "ptkit-coverage" version 1:
 * ```
 * { "schema": "ptkit-coverage", "version": 1,
 *   "blocks": [{ "start": "0x401000", "end": "0x401010", "insns": 5, "count": 3,
 *                "symbol": "main+0x10" }, ...],      // symbol: only with symbols
 *   "edges": [{ "from": "0x401010", "to": "0x401100", "count": 3 }, ...],
 *   "dropped": { "blocks": 0, "edges": 0 } }         // not kept: table limit reached
 * ```
 * Addresses are hex strings (64-bit exact); blocks and edges are sorted by address.
 */

import { FLOW_CLASS_NAMES } from "../../flow/flow-class.js";
import { growFloat64, growUint32, KeyTable } from "../key-table.js";
import { ByteChunks, type ChunkOut, putDecimal, putHex, putView, utf8, viewOf } from "./byte-chunks.js";

export const AFL_MAP_SIZE = 1 << 16;

/**
 * What kind of transfer an edge is: a {@link FlowClass} of the branch at `from`
 * (call, return, jump, cond jump, far call, far return, far jump, indirect), or
 * {@link EdgeKind.Async} for an interrupt, exception or TSX abort taken there.
 */
export const EdgeKind = { Unknown: 0, Async: 0xff } as const;

/** An edge kind's name: the flow class's, or "async". */
export function edgeKindName(kind: number): string {
  return kind === EdgeKind.Async ? "async" : (FLOW_CLASS_NAMES[kind] ?? "unknown");
}

export class Coverage {
  private blocks: KeyTable;
  private edges: KeyTable;
  private blockInsns: Uint32Array = new Uint32Array(256);
  private blockCount: Float64Array = new Float64Array(256);
  private edgeCount: Float64Array = new Float64Array(256);
  private edgeKind: Uint8Array = new Uint8Array(256);
  /**
   * The AFL bitmap, filled as blocks are entered. (The same array before and after a
   * decode; during one, the WebAssembly map loop may have put a copy of it in its
   * memory here: analysis/wasm/map-loop-engine.ts.)
   */
  aflMap: Uint8Array = new Uint8Array(AFL_MAP_SIZE);
  /** AFL's `prev`: the last block's location shifted right by one (public for the fused map loop, coverage-map-loop.ts). */
  prev = 0;
  /** Ids from {@link blockId} and {@link edgeId} hold until this changes (a {@link clear}). */
  epoch = 0;
  /** Some block was counted with two instruction counts (see {@link setInsns}). */
  varied = false;

  /**
   * `mapOnly`: only the AFL map is kept (no blocks or edges for the JSON and the edge
   * list, which are then empty): per transfer one byte of the map, no table lookup.
   */
  constructor(
    private readonly maxEntries = 1 << 21,
    readonly mapOnly = false,
  ) {
    this.blocks = new KeyTable(maxEntries);
    this.edges = new KeyTable(maxEntries);
  }

  /** A block ran: first instruction (startHi:startLo), last (endHi:endLo), `insns` instructions. */
  block(startHi: number, startLo: number, endHi: number, endLo: number, insns: number): void {
    if (this.mapOnly) return;
    const id = this.blockId(startHi, startLo, endHi, endLo);
    if (id >= 0) this.countBlock(id, insns);
  }

  /**
   * The id of the block from (startHi:startLo) to (endHi:endLo) in the tables, made now
   * when new, for {@link countBlock}; -1 when the table is full (counted as dropped).
   * A decoder may keep ids (not when it is -1) while nothing {@link clear}s the tables.
   */
  blockId(startHi: number, startLo: number, endHi: number, endLo: number): number {
    const id = this.blocks.id(startHi, startLo, endHi, endLo);
    if (id >= this.blockCount.length) {
      this.blockCount = growFloat64(this.blockCount, id + 1);
      this.blockInsns = growUint32(this.blockInsns, id + 1);
    }
    return id;
  }

  /** Block `id` ({@link blockId}) ran, `insns` instructions. */
  countBlock(id: number, insns: number): void {
    this.blockCount[id]! += 1;
    this.setInsns(id, insns);
  }

  /** Block `id` ran `runs` more times (runs counted elsewhere first: NodeIds). */
  countBlockRuns(id: number, runs: number): void {
    this.blockCount[id]! += runs;
  }

  /**
   * Block `id` ran `insns` instructions (the JSON has each block's last count). A run
   * counted elsewhere (NodeIds) says it here only once {@link varied}: until a block is
   * counted with two instruction counts (the same addresses in two programs), each has
   * had one, and saying it again would change nothing.
   */
  setInsns(id: number, insns: number): void {
    const before = this.blockInsns[id]!;
    if (before !== insns && before !== 0) this.varied = true;
    this.blockInsns[id] = insns;
  }

  /**
   * Control went from (fromHi:fromLo) to (toHi:toLo), where a block starts; `kind` is
   * the transfer's {@link EdgeKind} (kept for the edge's first transfer).
   */
  edge(fromHi: number, fromLo: number, toHi: number, toLo: number, kind: number = EdgeKind.Unknown): void {
    this.enter(toLo);
    if (this.mapOnly) return;
    const id = this.edgeId(fromHi, fromLo, toHi, toLo, kind);
    if (id >= 0) this.countEdge(id);
  }

  /** {@link blockId} for edges: with {@link enter} and {@link countEdge}, what {@link edge} does. */
  edgeId(
    fromHi: number,
    fromLo: number,
    toHi: number,
    toLo: number,
    kind: number = EdgeKind.Unknown,
  ): number {
    const edges = this.edges;
    const before = edges.size;
    const id = edges.id(fromHi, fromLo, toHi, toLo);
    if (id < 0) return -1;
    if (id >= this.edgeCount.length) {
      this.edgeCount = growFloat64(this.edgeCount, id + 1);
      const kinds = new Uint8Array(this.edgeCount.length);
      kinds.set(this.edgeKind);
      this.edgeKind = kinds;
    }
    if (id === before) this.edgeKind[id] = kind;
    return id;
  }

  /** Edge `id` ({@link edgeId}) was taken (`runs` times; the map's part is {@link enter}'s). */
  countEdge(id: number, runs = 1): void {
    this.edgeCount[id]! += runs;
  }

  /** Each block (start and end as halves), its instruction count and runs, sorted by start then end (the JSON's blocks). */
  blockList(): {
    startHi: number;
    startLo: number;
    endHi: number;
    endLo: number;
    insns: number;
    count: number;
  }[] {
    const keys = this.blocks.keys;
    return Array.from(sortedIds(this.blocks), (id) => ({
      startHi: keys[4 * id]!,
      startLo: keys[4 * id + 1]!,
      endHi: keys[4 * id + 2]!,
      endLo: keys[4 * id + 3]!,
      insns: this.blockInsns[id]!,
      count: this.blockCount[id]!,
    }));
  }

  /** Each edge (from and to as halves), its kind and count, sorted by from then to. */
  edgeList(): { fromHi: number; fromLo: number; toHi: number; toLo: number; kind: number; count: number }[] {
    const keys = this.edges.keys;
    return Array.from(sortedIds(this.edges), (id) => ({
      fromHi: keys[4 * id]!,
      fromLo: keys[4 * id + 1]!,
      toHi: keys[4 * id + 2]!,
      toLo: keys[4 * id + 3]!,
      kind: this.edgeKind[id]!,
      count: this.edgeCount[id]!,
    }));
  }

  /**
   * Executions not counted because the tables were full (`maxEntries` distinct blocks
   * or edges): the JSON's "dropped"; 0 and 0 when the coverage is complete.
   */
  dropped(): { blocks: number; edges: number; limit: number } {
    return { blocks: this.blocks.refused, edges: this.edges.refused, limit: this.edges.maxEntries };
  }

  /** Forget everything counted (start as at the start of a trace). */
  clear(): void {
    this.aflMap.fill(0);
    this.prev = 0;
    if (this.blocks.size + this.edges.size + this.blocks.refused + this.edges.refused === 0) return;
    this.epoch++;
    this.varied = false;
    this.blocks = new KeyTable(this.maxEntries);
    this.edges = new KeyTable(this.maxEntries);
    this.blockCount.fill(0);
    this.edgeCount.fill(0);
  }

  /** A block starts at an address with low half `lo` that no edge leads to (after a gap). */
  restart(lo: number): void {
    this.prev = 0;
    this.enter(lo);
  }

  /**
   * A block reached by an edge starts at an address with low half `lo`: the AFL map's
   * part of {@link edge}, for decoders that keep only the map ({@link mapOnly}).
   */
  enter(lo: number): void {
    const cur = aflLocation(lo);
    aflHit(this.aflMap, cur ^ this.prev);
    this.prev = cur >>> 1;
  }

  /** The JSON document, in chunks; `name` gives a block's symbol (or undefined). */
  write(out: ChunkOut, name?: (hi: number, lo: number) => string | undefined): void {
    const text = new ByteChunks(out);
    text.text('{"schema":"ptkit-coverage","version":1,\n"blocks":[');
    const bk = this.blocks.keys;
    let first = true;
    for (const id of sortedIds(this.blocks)) {
      const k = 4 * id;
      const insns = this.blockInsns[id]!;
      const count = this.blockCount[id]!;
      // The record in place, but for its symbol.
      let at = text.reserve(RECORD_ROOM);
      const b = text.buffer;
      const d = text.view;
      at = put(d, at, first ? JSON_START_FIRST : JSON_START);
      first = false;
      at = putAddresses(b, d, at, bk, k, JSON_END);
      at = put(d, at, JSON_INSNS);
      at = putDecimal(b, at, insns);
      at = put(d, at, JSON_COUNT);
      countThen(text, at, count, -1);
      const sym = name?.(bk[k]!, bk[k + 1]!);
      if (sym !== undefined) {
        text.viewBytes(JSON_SYMBOL);
        text.text(JSON.stringify(sym));
      }
      text.byte(0x7d);
    }
    text.text('],\n"edges":[');
    const ek = this.edges.keys;
    first = true;
    for (const id of sortedIds(this.edges)) {
      const count = this.edgeCount[id]!;
      let at = text.reserve(RECORD_ROOM);
      const b = text.buffer;
      const d = text.view;
      at = put(d, at, first ? JSON_FROM_FIRST : JSON_FROM);
      first = false;
      at = putAddresses(b, d, at, ek, 4 * id, JSON_TO);
      at = put(d, at, JSON_EDGE_COUNT);
      countThen(text, at, count, 0x7d);
    }
    text.text(`],\n"dropped":{"blocks":${this.blocks.refused},"edges":${this.edges.refused}}}\n`);
    text.flush();
  }

  /** The edge list, in chunks: `0xFROM 0xTO COUNT` lines (see the module comment). */
  writeEdges(out: ChunkOut): void {
    const ek = this.edges.keys;
    const text = new ByteChunks(out);
    for (const id of sortedIds(this.edges)) {
      const count = this.edgeCount[id]!;
      let at = text.reserve(RECORD_ROOM);
      const b = text.buffer;
      at = putAddresses(b, text.view, at, ek, 4 * id, SPACE);
      b[at++] = 0x20;
      countThen(text, at, count, 0x0a);
    }
    text.flush();
  }
}

/** The fixed parts of the JSON's records (written as bytes, four a step: a record is no string). */
const JSON_START_FIRST = viewOf(utf8('\n{"start":"'));
const JSON_START = viewOf(utf8(',\n{"start":"'));
const JSON_END = viewOf(utf8('","end":"'));
const JSON_INSNS = viewOf(utf8('","insns":'));
const JSON_COUNT = viewOf(utf8(',"count":'));
const JSON_SYMBOL = viewOf(utf8(',"symbol":'));
const JSON_FROM_FIRST = viewOf(utf8('\n{"from":"'));
const JSON_FROM = viewOf(utf8(',\n{"from":"'));
const JSON_TO = viewOf(utf8('","to":"'));
const JSON_EDGE_COUNT = viewOf(utf8('","count":'));
const SPACE = viewOf(utf8(" "));
/** The most bytes of a record but its symbol: its parts, two addresses of "0x" and 16 digits, two numbers of 16. */
const RECORD_ROOM = 128;

/** Bytes made once into `d` at `at`: where they end. */
function put(d: DataView, at: number, v: DataView): number {
  return putView(d, at, v, 0, v.byteLength);
}

/**
 * A record's count `v` at `at` in `text`'s buffer (reserved), then the byte `end` (-1:
 * none): the record is written up to there. (Counts past 2^53 as String writes them:
 * never for real counts.)
 */
function countThen(text: ByteChunks, at: number, v: number, end: number): void {
  const b = text.buffer;
  if (v >= 0 && v <= Number.MAX_SAFE_INTEGER && Number.isInteger(v)) {
    at = putDecimal(b, at, v);
    if (end >= 0) b[at++] = end;
    text.wrote(at);
    return;
  }
  text.wrote(at);
  text.int(v);
  if (end >= 0) text.byte(end);
}

/** A table key's two addresses (keys[k..k+4): block start and end, or edge from and to) as `0x` and hex digits, `between` them, into `b` at `at`: where they end. */
function putAddresses(
  b: Uint8Array,
  d: DataView,
  at: number,
  keys: Uint32Array,
  k: number,
  between: DataView,
): number {
  b[at] = 0x30;
  b[at + 1] = 0x78;
  at = putHex(b, at + 2, keys[k]!, keys[k + 1]!, 0, 0x30);
  at = put(d, at, between);
  b[at] = 0x30;
  b[at + 1] = 0x78;
  return putHex(b, at + 2, keys[k + 2]!, keys[k + 3]!, 0, 0x30);
}

/** The last order {@link sortedIds} made, per table (the JSON and the edge list both want it). */
const sorted = new WeakMap<KeyTable, Uint32Array>();

/**
 * Ids 0..size-1 of `table` ordered by their four key words (two addresses). Millions of
 * edges: a comparison function called for each of their ~40 million comparisons takes
 * seconds, so the ids are sorted natively as 64-bit numbers that order them by the
 * first address: the rank of its high half (few distinct: user space, the kernel) in
 * the top 11 bits, its low half, the id in the low 21 bits; then each run of one first
 * address (the targets of one branch) is sorted by the second.
 */
function sortedIds(table: KeyTable): Uint32Array {
  const n = table.size;
  const keys = table.keys;
  const done = sorted.get(table);
  if (done?.length === n) return done;
  const his = new Set<number>();
  for (let k = 0; k < 4 * n && his.size <= 1 << 11; k += 4) his.add(keys[k]!);
  let ids: Uint32Array;
  if (n > 1 << 21 || his.size > 1 << 11 || !LITTLE_ENDIAN) {
    ids = new Uint32Array(n);
    for (let i = 0; i < n; i++) ids[i] = i;
    ids.sort((x, y) => compareKeys(keys, 4 * x, 4 * y, 0));
  } else {
    const rank = new Map([...his].sort((a, b) => a - b).map((hi, r) => [hi, r]));
    const packed = new BigUint64Array(n);
    const w = new Uint32Array(packed.buffer);
    for (let i = 0; i < n; i++) {
      const lo = keys[4 * i + 1]!;
      w[2 * i] = (((lo & 0x7ff) << 21) | i) >>> 0;
      w[2 * i + 1] = ((rank.get(keys[4 * i]!)! << 21) | (lo >>> 11)) >>> 0;
    }
    packed.sort();
    ids = new Uint32Array(n);
    for (let j = 0; j < n; j++) ids[j] = w[2 * j]! & 0x1fffff;
    for (let j = 0; j < n; ) {
      const k = 4 * ids[j]!;
      let e = j + 1;
      while (e < n && keys[4 * ids[e]!] === keys[k] && keys[4 * ids[e]! + 1] === keys[k + 1]) e++;
      if (e - j > 16) ids.subarray(j, e).sort((x, y) => compareKeys(keys, 4 * x, 4 * y, 2));
      else if (e - j > 1) insertionSort(ids, j, e, keys);
      j = e;
    }
  }
  sorted.set(table, ids);
  return ids;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * ids[from, to) ordered by their keys' second address (their first is the same): a few
 * (most branches have one or two targets), in place, no subarray or comparison function.
 */
function insertionSort(ids: Uint32Array, from: number, to: number, keys: Uint32Array): void {
  for (let i = from + 1; i < to; i++) {
    const id = ids[i]!;
    const hi = keys[4 * id + 2]!;
    const lo = keys[4 * id + 3]!;
    let j = i - 1;
    for (; j >= from; j--) {
      const other = ids[j]!;
      const oHi = keys[4 * other + 2]!;
      if (oHi < hi || (oHi === hi && keys[4 * other + 3]! < lo)) break;
      ids[j + 1] = other;
    }
    ids[j + 1] = id;
  }
}

/** Key words from `w` on at keys[x..x+4) against keys[y..y+4): negative, 0 or positive. */
function compareKeys(keys: Uint32Array, x: number, y: number, w: number): number {
  for (; w < 4; w++) {
    const d = keys[x + w]! - keys[y + w]!;
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * A block's location in the AFL map, from the low half of its address (the map's index
 * of an edge is this location ^ the previous block's >>> 1).
 */
export function aflLocation(lo: number): number {
  return ((lo >>> 4) ^ (lo << 8)) & 0xffff;
}

/** Count a hit of AFL map byte `i`, saturating at 255: 256 - 1 (see the module comment). */
export function aflHit(map: Uint8Array, i: number): void {
  const v = map[i]! + 1;
  map[i] = v - (v >>> 8);
}
