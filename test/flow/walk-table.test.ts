/**
 * The block cache's walk table (SectionCache.entry, section-cache.ts): slots in code
 * order, so offsets crowd into the same slot and the slots after it (every byte of
 * 16 bytes of code starting an entry) and alias (offsets 16 times the table's size
 * apart share a slot). Each look-up still finds its own entry, before and after the
 * table grows, an entry entered again is what the walk reads next, and an offset
 * without an entry has none.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { FACT_SHIFT, FlowClass, InsnFact } from "../../src/flow/flow-class.js";
import {
  Bce,
  InsnMeta,
  NO_DISP,
  Qualifier,
  SectionCache,
  WALK_AUX,
  WALK_STRIDE,
  WalkQualifier,
  walkIndex,
  walkNext,
} from "../../src/flow/section-cache.js";
import { Section } from "../../src/image/index.js";

const SIZE = 1 << 20;

/** A cache over a zero-filled 1 MiB section at 0x1000. */
function newCache(): SectionCache {
  return new SectionCache(new Section("walk-table", 1, 0, 0x1000, 0, 0x1000 + SIZE - 1, SIZE, null, 0, 5));
}

/** Offsets in the walk's table (each once, else a look-up missed its slot and made another). */
function keys(cache: SectionCache): Set<number> {
  const seen = new Set<number>();
  let n = 0;
  for (let i = 0; i < cache.walk.length; i += WALK_STRIDE) {
    const k = cache.walk[i]!;
    if (k === 0) continue;
    seen.add(k - 1);
    n += 1;
  }
  assert.equal(n, seen.size, "no offset has two slots");
  return seen;
}

/** A distinct valid entry for the i-th offset. */
function entryFor(i: number, again = 0): number {
  return Bce.pack(2, again === 0 ? Qualifier.Cond : Qualifier.Decode, 2, 1 + (i % 250), (i * 7) % 1000);
}

/** The offsets: all 16 of eight granules of 16 bytes, and ones 4 KiB apart (the first table's 256 slots of 16 bytes). */
function crowded(): number[] {
  const offs: number[] = [];
  for (let g = 0; g < 8; g++) for (let k = 0; k < 16; k++) offs.push(g * 16 + k);
  for (let a = 1; a < 200; a++) offs.push(a * 4096 + (a % 16));
  return offs;
}

test("walk table: crowded and aliasing offsets each find their own entry, through the table's growth", () => {
  const cache = newCache();
  const offs = crowded();
  offs.forEach((off, i) => {
    cache.setEntry(off, entryFor(i));
  });
  // Read in a scrambled order, so that entries go into the table as a walk meets them.
  const order = offs.map((_, i) => (i * 97) % offs.length);
  assert.equal(new Set(order).size, offs.length);
  const firstSize = cache.walk.length;
  for (const i of order) {
    const e = cache.entry(offs[i]!);
    assert.ok(e >= 0, `offset ${offs[i]} has its entry`);
    assert.equal(cache.walk[e]!, offs[i]! + 1, `offset ${offs[i]}: its own slot`);
    assert.equal(cache.walk[e + 1]!, entryFor(i), `offset ${offs[i]}: its own entry`);
  }
  assert.ok(cache.walk.length >= firstSize * 4, "the table grew");
  // After the growth, again; and entered anew, the new entry.
  offs.forEach((off, i) => {
    assert.equal(cache.walk[cache.entry(off) + 1]!, entryFor(i), `offset ${off} after growth`);
    if (i % 3 === 0) cache.setEntry(off, entryFor(i, 1));
  });
  offs.forEach((off, i) => {
    assert.equal(
      cache.walk[cache.entry(off) + 1]!,
      entryFor(i, i % 3 === 0 ? 1 : 0),
      `offset ${off} entered anew`,
    );
  });
  assert.deepEqual(keys(cache), new Set(offs));
  // Offsets in the same slots without an entry of their own have none.
  for (const off of [8 * 16, 8 * 16 + 1, 4096 + 2, 5 * 4096 + 4, 250 * 4096])
    assert.equal(cache.entry(off), -1);
});

test("walk table: with an entry at every byte of 64 KiB, each look-up stays short (no run of full slots across the table)", () => {
  // Code order alone would chain the slots of all 65,536 offsets into one run: a
  // look-up would pass tens of thousands of slots (a hostile trace made the decode
  // quadratic). Count the slots each offset's look-up passes before its own.
  const cache = newCache();
  const n = 1 << 16;
  for (let off = 0; off < n; off++) cache.setEntry(off, entryFor(off));
  for (let off = 0; off < n; off++) assert.ok(cache.entry(off) >= 0);
  const walk = cache.walk;
  const slotMask = walk.length / WALK_STRIDE - 1;
  let longest = 0;
  for (let off = 0; off < n; off++) {
    let slot = walkIndex(off, slotMask);
    let passed = 0;
    while (walk[slot * WALK_STRIDE] !== off + 1) {
      assert.notEqual(
        walk[slot * WALK_STRIDE],
        0,
        `offset ${off}: its look-up reaches an empty slot before its own`,
      );
      slot = walkNext(slot, passed, off, slotMask);
      passed++;
    }
    longest = Math.max(longest, passed);
  }
  assert.ok(longest <= 64, `the longest look-up passes ${longest} slots`);
});

test("walk table: each slot carries what the walk needs of its decision point, as the decode cache has it", () => {
  const cache = newCache();
  const mode = 2;
  /** Put an instruction of `size` bytes, class `c` and displacement `disp` at `dp` in the decode cache. */
  const decoded = (dp: number, size: number, c: number, direct: boolean, disp: number): void => {
    const page = cache.page(dp);
    const k = dp & 4095;
    page.meta[k] = InsnMeta.pack(mode, size, c | (direct ? InsnFact.Direct << FACT_SHIFT : 0), 0);
    page.disp[k] = disp;
  };
  /** The walk's entry and aux word for `off`. */
  const slot = (off: number): [number, number] => {
    const e = cache.entry(off);
    assert.ok(e >= 0);
    return [cache.walk[e + 1]!, cache.walk[e + 1 + WALK_AUX]!];
  };
  // A conditional branch 10 bytes on, known (its displacement) and unknown.
  decoded(110, 2, FlowClass.CondJump, true, -0x12345);
  cache.setEntry(100, Bce.pack(mode, Qualifier.Cond, 2, 3, 10));
  assert.deepEqual(slot(100), [Bce.pack(mode, Qualifier.Cond, 2, 3, 10), -0x12345]);
  cache.setEntry(200, Bce.pack(mode, Qualifier.Cond, 2, 3, 10));
  assert.deepEqual(slot(200), [Bce.pack(mode, Qualifier.Cond, 2, 3, 10), NO_DISP]);
  // A direct call and a direct jump: the walk's own qualifiers, the size in isize.
  decoded(310, 5, FlowClass.Call, true, 0x40000);
  cache.setEntry(300, Bce.pack(mode, Qualifier.Decode, 0, 4, 10));
  assert.deepEqual(slot(300), [Bce.pack(mode, WalkQualifier.DirectCall, 5, 4, 10), 0x40000]);
  decoded(410, 2, FlowClass.Jump, true, -100);
  cache.setEntry(400, Bce.pack(mode, Qualifier.Decode, 0, 4, 10));
  assert.deepEqual(slot(400), [Bce.pack(mode, WalkQualifier.DirectJump, 2, 4, 10), -100]);
  // Not one: too long for isize, indirect, in another mode, not decoded.
  decoded(510, 8, FlowClass.Call, true, 0x40000);
  decoded(610, 3, FlowClass.Jump, false, 0);
  decoded(710, 5, FlowClass.Call, true, 0x40000);
  cache.page(710).meta[710] = InsnMeta.pack(1, 5, FlowClass.Call | (InsnFact.Direct << FACT_SHIFT), 0);
  for (const off of [500, 600, 700, 800]) {
    cache.setEntry(off, Bce.pack(mode, Qualifier.Decode, 0, 4, 10));
    assert.deepEqual(slot(off), [Bce.pack(mode, Qualifier.Decode, 0, 4, 10), 0], `offset ${off}`);
  }
  // An indirect transfer: its packed instruction; entered anew, the slot follows.
  decoded(910, 2, FlowClass.FarReturn, false, 0);
  cache.setEntry(900, Bce.pack(mode, Qualifier.Indirect, 2, 1, 10));
  const [, meta] = slot(900);
  assert.equal(InsnMeta.info(meta) & 15, FlowClass.FarReturn);
  assert.equal(InsnMeta.size(meta), 2);
  cache.setEntry(900, Bce.pack(mode, Qualifier.Cond, 2, 1, 110 - 900));
  assert.deepEqual(slot(900), [Bce.pack(mode, Qualifier.Cond, 2, 1, 110 - 900), -0x12345]);
});
