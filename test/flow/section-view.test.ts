/**
 * SectionView's look-up (src/flow/section-view.ts): a view that goes back to a section
 * it filled before (it remembers the last few) ends up where a fresh view's look-up
 * would, and forgets them when the image changes or another image is asked.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrorCode } from "../../src/base/errors.js";
import { FlowInsn } from "../../src/flow/flow-insn.js";
import type { SectionCache } from "../../src/flow/section-cache.js";
import { SectionView } from "../../src/flow/section-view.js";
import { Image, ImageHit, type Section } from "../../src/image/index.js";
import { ExecMode } from "../../src/isa/index.js";

type Caches = WeakMap<Section, SectionCache>;

/** Where a view stands after a look-up, and what it decodes there. */
function where(view: SectionView, status: number): unknown {
  if (status < 0) return { status };
  const insn = new FlowInsn();
  insn.reset(0, 0, ExecMode.Bits64);
  const decoded = view.decodeAt(view.off, insn);
  return {
    status,
    section: view.section,
    cache: view.cache,
    baseHi: view.baseHi,
    baseLo: view.baseLo,
    winBegin: view.winBegin,
    winEnd: view.winEnd,
    readEnd: view.readEnd,
    off: view.off,
    filled: view.filled,
    decoded,
    size: insn.size,
  };
}

/** Look (hi:lo) up in `view`, and in a fresh view with the same caches: both must agree. */
function lookBoth(view: SectionView, image: Image, caches: Caches, hi: number, lo: number): number {
  const status = view.lookup(image, caches, new ImageHit(), hi, lo);
  const fresh = new SectionView();
  const expected = fresh.lookup(image, caches, new ImageHit(), hi, lo);
  assert.deepEqual(where(view, status), where(fresh, expected), `at ${hi.toString(16)}:${lo.toString(16)}`);
  return status;
}

/** Code whose instructions' sizes depend on where decoding starts (nops, a 5-byte call, ...). */
function code(n: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let k = 0; k < n; k++) bytes[k] = [0x90, 0xe8, 0x48, 0x01, 0xc3, 0x0f][(k * 7 + seed) % 6]!;
  return bytes;
}

test("SectionView: back and forth between more sections than it remembers, as a fresh view finds them", () => {
  const image = new Image("six");
  // Six sections, one across a 4 GiB boundary, one high up, gaps between them.
  const starts: [number, number][] = [
    [0, 0x1000],
    [0, 0x9000],
    [0, 0xfffff800],
    [0x7f10, 0x2000],
    [0x7f20, 0x2000],
    [0xffffffff, 0x81000000],
  ];
  const ids = starts.map(([hi, lo], k) => image.addSection(`s${k}`, code(0x1000, k), 0, 0x1000, hi, lo));
  assert.ok(ids.every((id) => id > 0));
  const caches: Caches = new WeakMap();
  const view = new SectionView();
  // A walk over the sections in an order that comes back to each after others, with
  // addresses near both ends and outside every section.
  let seed = 12345;
  for (let step = 0; step < 400; step++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const k = seed % starts.length;
    const [hi, lo] = starts[k]!;
    const delta = [0, 1, 0x7ff, 0xfff, 0x1000, -1][(seed >>> 8) % 6]!;
    const l = lo + delta;
    const status = lookBoth(view, image, caches, hi + Math.floor(l / 2 ** 32), l >>> 0);
    if (delta >= 0 && delta < 0x1000) assert.equal(status, ids[k]);
    else assert.ok(status === -ErrorCode.NoMap || ids.includes(status));
  }
});

test("SectionView: a changed image or another image is looked up again", () => {
  const image = new Image("a");
  const a = image.addSection("a", code(0x1000, 1), 0, 0x1000, 0, 0x1000);
  const b = image.addSection("b", code(0x1000, 2), 0, 0x1000, 0, 0x4000);
  const caches: Caches = new WeakMap();
  const view = new SectionView();
  assert.equal(lookBoth(view, image, caches, 0, 0x1010), a);
  assert.equal(lookBoth(view, image, caches, 0, 0x4010), b);
  // A new section over a's second half: the view must not take a's place back there.
  const c = image.addSection("c", code(0x800, 3), 0, 0x800, 0, 0x1800);
  assert.equal(lookBoth(view, image, caches, 0, 0x1810), c);
  assert.equal(lookBoth(view, image, caches, 0, 0x1010), a);
  assert.equal(view.winEnd, 0x800);
  assert.equal(lookBoth(view, image, caches, 0, 0x4010), b);
  // Another image with other code at the same addresses.
  const other = new Image("other");
  const d = other.addSection("d", code(0x1000, 4), 0, 0x1000, 0, 0x1000);
  assert.equal(lookBoth(view, other, caches, 0, 0x1010), d);
  assert.equal(lookBoth(view, other, caches, 0, 0x4010), -ErrorCode.NoMap);
  assert.equal(lookBoth(view, image, caches, 0, 0x1010), a);
});
