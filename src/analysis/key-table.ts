/**
 * A hash table from keys of four unsigned 32-bit words (two 64-bit addresses, or a
 * parent id, a kind and an address) to dense ids 0, 1, 2, ... in order of insertion:
 * open addressing over typed arrays that double when half full, so a lookup
 * allocates nothing. Values live in the caller's arrays indexed by id
 * ({@link growFloat64}, {@link growUint32}). Past `maxEntries` keys it refuses new
 * ones (and counts them), which bounds memory on hostile input.
 */
import { mutableFields } from "../base/halves.js";

export class KeyTable {
  /** Keys stored: ids are 0..size-1. */
  size = 0;
  /** The most keys held: `maxEntries` as given, at most {@link MAX_ENTRIES}. */
  readonly maxEntries: number;
  /** Lookups refused because the table was full. */
  refused = 0;
  /** The key words of id i: keys[4i..4i+4). */
  keys: Uint32Array;
  /** Slot → id + 1 (0: empty), with a tag of the key's hash above it (see {@link ID_BITS}). */
  private slots: Int32Array;

  /** `expected`: about how many keys will come (room is made for them at once). */
  constructor(maxEntries = 1 << 22, expected = 256) {
    this.maxEntries = Math.min(maxEntries, MAX_ENTRIES);
    let slots = 512;
    while (slots < 2 * expected && slots < 1 << 26) slots *= 2;
    this.slots = new Int32Array(slots);
    this.keys = new Uint32Array(2 * slots);
    // Tables grow while the code that looks keys up runs.
    mutableFields(this, ["slots", "keys", "size"]);
  }

  /** The id of key (a, b, c, d), added when new; -1 when it is new and the table is full. */
  id(a: number, b: number, c: number, d: number): number {
    const slots = this.slots;
    const mask = slots.length - 1;
    const keys = this.keys;
    const h = hash(a, b, c, d);
    const tag = h & TAG_MASK;
    let at = h & mask;
    for (;;) {
      const s = slots[at]!;
      if (s === 0) break;
      // A slot of another tag holds another key: its words are not read (a cache miss
      // each on a large table, where most probes of a new key meet other keys).
      if ((s & TAG_MASK) === tag) {
        const k = 4 * ((s & ID_MASK) - 1);
        if (keys[k] === a && keys[k + 1] === b && keys[k + 2] === c && keys[k + 3] === d)
          return (s & ID_MASK) - 1;
      }
      at = (at + 1) & mask;
    }
    if (this.size >= this.maxEntries) {
      this.refused++;
      return -1;
    }
    const id = this.size++;
    if (4 * this.size > keys.length) this.keys = growUint32(keys, 4 * this.size);
    const k = 4 * id;
    this.keys[k] = a;
    this.keys[k + 1] = b;
    this.keys[k + 2] = c;
    this.keys[k + 3] = d;
    slots[at] = tag | (id + 1);
    if (2 * this.size > slots.length) this.rehash();
    return id;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    const keys = this.keys;
    for (let id = 0; id < this.size; id++) {
      const k = 4 * id;
      const h = hash(keys[k]!, keys[k + 1]!, keys[k + 2]!, keys[k + 3]!);
      let at = h & mask;
      while (slots[at] !== 0) at = (at + 1) & mask;
      slots[at] = (h & TAG_MASK) | (id + 1);
    }
    this.slots = slots;
  }
}

/**
 * A slot holds its key's id + 1 in the low {@link ID_BITS} bits and the top bits of
 * the key's hash above them (the slot's index takes the low bits of the hash): a probe
 * reads a key's words only when the tags agree (1 in 64 of the other keys' slots). On
 * key streams recorded from `ptkit perf` on the bench perf.data, 1.08-1.18x the speed
 * for the folded stacks' tables and 1.15-1.41x for the coverage's (336k edges).
 */
const ID_BITS = 26;
const ID_MASK = (1 << ID_BITS) - 1;
const TAG_MASK = ~ID_MASK;

/**
 * The most keys any table holds: what a slot's id bits hold (past what memory allows
 * anyway: 16 bytes of key each, a GiB). A small integer, so the field stays one in
 * every table: a table made with a larger limit (Number.MAX_SAFE_INTEGER, "none")
 * would turn the field into a heap number and throw away the optimised code of every
 * caller that inlined {@link KeyTable.id}.
 */
const MAX_ENTRIES = ID_MASK - 1;

function hash(a: number, b: number, c: number, d: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ b ^ (h >>> 15), 0xc2b2ae35);
  h = Math.imul(h ^ c ^ (h >>> 13), 0x27d4eb2f);
  h = Math.imul(h ^ d ^ (h >>> 16), 0x165667b1);
  // Signed: callers take the low bits, and an unsigned value past 2^31 is a heap
  // number when this is not inlined (an allocation per look-up).
  return h ^ (h >>> 15);
}

/** `a`, or a copy at least `need` long (doubling) with the same prefix. */
export function growFloat64(a: Float64Array, need: number): Float64Array {
  if (need <= a.length) return a;
  const b = new Float64Array(Math.max(need, 2 * a.length));
  b.set(a);
  return b;
}

export function growUint32(a: Uint32Array, need: number): Uint32Array {
  if (need <= a.length) return a;
  const b = new Uint32Array(Math.max(need, 2 * a.length));
  b.set(a);
  return b;
}

/** {@link growFloat64} for Int32Arrays; the new part holds `fill`. */
export function growInt32(a: Int32Array, need: number, fill = 0): Int32Array {
  if (need <= a.length) return a;
  const b = new Int32Array(Math.max(need, 2 * a.length));
  if (fill !== 0) b.fill(fill, a.length);
  b.set(a);
  return b;
}
