/**
 * A decision graph as bytes, to keep between runs: a later run over the same code
 * starts with the nodes an earlier one made instead of decoding that code again.
 *
 * Little-endian 32-bit words: {@link Header}, then `size` nodes ({@link NODE_WORDS}
 * each, their walker's word cleared), `size` cold parts ({@link COLD_WORDS} each), the
 * hash slots, and `size` flag bytes padded to a word. The checksum covers every word
 * after the header.
 *
 * Which code a graph belongs to is the caller's to know (a store keys it by the
 * image's bytes). What {@link readGraph} checks is that the bytes are whole and
 * consistent: every node id in them names a node, every node's words are in range,
 * and the slots leave room for a probe to end. So a corrupt or hostile file can be
 * refused, not walked; it cannot make nodes true to the code.
 */
import {
  COLD_WORDS,
  GRAPH_FORMAT,
  type GraphState,
  NODE_WORDS,
  Node,
  NodeCold,
  NodeKind,
} from "./decision-graph.js";

/** The header's words. */
const Header = {
  /** "PTKG" read as a little-endian word: a big-endian reader sees another number. */
  Magic: 0,
  /** {@link GRAPH_FORMAT}. */
  Format: 1,
  Size: 2,
  Walked: 3,
  Slots: 4,
  Checksum: 5,
} as const;
const HEADER_WORDS = 6;
const MAGIC = 0x474b5450;

/** Node ids fit in the slots' id bits (decision-graph.ts: below 2^22 - 1). */
const MAX_SIZE = (1 << 22) - 2;
/** A slot's node id + 1. */
const SLOT_ID_MASK = (1 << 22) - 1;
const MIN_SLOTS = 2048;

function byteLength(size: number, slots: number): number {
  return 4 * (HEADER_WORDS + size * (NODE_WORDS + COLD_WORDS) + slots) + ((size + 3) & ~3);
}

/** The graph `s` as bytes; undefined when it has no node. */
export function writeGraph(s: GraphState): Uint8Array | undefined {
  const { size } = s;
  if (size === 0) return undefined;
  const out = new Uint8Array(byteLength(size, s.slots.length));
  const words = new Int32Array(out.buffer);
  words[Header.Magic] = MAGIC;
  words[Header.Format] = GRAPH_FORMAT;
  words[Header.Size] = size;
  words[Header.Walked] = s.walked;
  words[Header.Slots] = s.slots.length;
  let at = HEADER_WORDS;
  words.set(s.nodes.subarray(0, size * NODE_WORDS), at);
  for (let w = at + Node.Walk; w < at + size * NODE_WORDS; w += NODE_WORDS) words[w] = -1;
  at += size * NODE_WORDS;
  words.set(s.cold.subarray(0, size * COLD_WORDS), at);
  at += size * COLD_WORDS;
  words.set(s.slots, at);
  at += s.slots.length;
  out.set(s.flags.subarray(0, size), 4 * at);
  words[Header.Checksum] = checksum(words, HEADER_WORDS);
  return out;
}

/**
 * The graph in `bytes` (from {@link writeGraph}), its arrays views of a copy's words
 * or of `bytes` itself when aligned, or why it cannot be taken (one line).
 */
export function readGraph(bytes: Uint8Array): GraphState | string {
  if (bytes.length < 4 * HEADER_WORDS || bytes.length % 4 !== 0) return "not a whole decision graph";
  const copy = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const words = new Int32Array(copy.buffer, copy.byteOffset, copy.length >> 2);
  if (words[Header.Magic] !== MAGIC) return "not a decision graph (or one written on another byte order)";
  if (words[Header.Format] !== GRAPH_FORMAT)
    return `a decision graph of format ${words[Header.Format]}, not ${GRAPH_FORMAT}`;
  const size = words[Header.Size]!;
  const walked = words[Header.Walked]!;
  const slots = words[Header.Slots]!;
  if (size < 1 || size > MAX_SIZE || walked < 0) return "a decision graph with a bad node count";
  if (slots < MIN_SLOTS || (slots & (slots - 1)) !== 0 || 4 * size > 3 * (slots - 1))
    return "a decision graph with a bad slot count";
  if (bytes.length !== byteLength(size, slots)) return "a decision graph cut short or run over";
  if (checksum(words, HEADER_WORDS) !== words[Header.Checksum])
    return "a decision graph whose checksum fails";
  const coldAt = HEADER_WORDS + size * NODE_WORDS;
  const slotsAt = coldAt + size * COLD_WORDS;
  const nodes = words.subarray(HEADER_WORDS, coldAt);
  const cold = words.subarray(coldAt, slotsAt);
  const slotWords = words.subarray(slotsAt, slotsAt + slots);
  const flags = new Uint8Array(copy.buffer, copy.byteOffset + 4 * (slotsAt + slots), size);
  const bad = badNode(nodes, cold, size);
  if (bad >= 0) return `a decision graph whose node ${bad} is out of range`;
  let filled = 0;
  for (let i = 0; i < slots; i++) {
    const v = slotWords[i]!;
    if (v === 0) continue;
    const id = (v & SLOT_ID_MASK) - 1;
    if (id < 0 || id >= size) return `a decision graph whose slot ${i} names no node`;
    filled++;
  }
  if (filled > size) return "a decision graph with more slots filled than nodes";
  return { size, walked, nodes, cold, flags, slots: slotWords };
}

/** The first node with a word out of range, or -1. */
function badNode(nodes: Int32Array, cold: Int32Array, size: number): number {
  for (let id = 0; id < size; id++) {
    const at = id * NODE_WORDS;
    const kind = nodes[at + Node.Kind]!;
    if (kind < NodeKind.Bad || kind > NodeKind.Far || nodes[at + Node.Insns]! < 0) return id;
    const taken = nodes[at + Node.Taken]!;
    const fall = nodes[at + Node.Fall]!;
    const tip = nodes[at + Node.TipId]!;
    if (taken < -1 || taken >= size || fall < -2 || fall >= size || tip < -1 || tip >= size) return id;
    if (nodes[at + Node.Walk] !== -1) return id;
    if (cold[id * COLD_WORDS + NodeCold.End]! < 0) return id;
  }
  return -1;
}

/** FNV-1a over 32-bit words: finds a file changed on disk, not one changed on purpose. */
function checksum(words: Int32Array, from: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = from; i < words.length; i++) h = Math.imul(h ^ words[i]!, 0x01000193);
  return h;
}
