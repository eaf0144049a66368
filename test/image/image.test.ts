/**
 * Image semantics: libipt-style overlap replacement (split, trim, cover), reads across
 * section boundaries, NoMap holes, kernel and top-of-address-space sections, ELF loading
 * at link addresses and relocated, zero fill, and CR3/VMCS-keyed image sets. A property
 * test replays random operations against a byte-per-address BigInt model.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { parseElf } from "../../src/image/elf.js";
import { ASID_ANY, Image, ImageHit, ImageSet, ZERO_FILL } from "../../src/image/image.js";
import {
  ET_DYN,
  ET_EXEC,
  PF_R,
  PF_W,
  PF_X,
  pattern,
  sampleElf,
  writeElf,
} from "../../tools/elf/elf-writer.js";
import { big, halves } from "./helpers.js";

const NOMAP = -ErrorCode.NoMap;
const KERNEL = 0xffffffff81000000n;

/** Bytes 0..n-1 plus a tag in the high nibble, so that sources are told apart. */
const tagged = (n: number, tag: number) =>
  Uint8Array.from({ length: n }, (_, i) => ((tag << 4) | (i & 0xf)) & 0xff);

function addAt(
  image: Image,
  name: string,
  bytes: Uint8Array,
  at: bigint,
  from = 0,
  to = bytes.length,
): number {
  const [hi, lo] = halves(at);
  return image.addRaw(name, bytes, hi, lo, from, to);
}

function readAt(image: Image, at: bigint, size: number): number[] | number {
  const [hi, lo] = halves(at);
  const out = new Uint8Array(size);
  const n = image.read(hi, lo, out, size);
  return n < 0 ? n : Array.from(out.subarray(0, n));
}

/** [name, start, end) of every section. */
function layout(image: Image): [string, bigint, bigint][] {
  return image.sections.map((s) => [s.name, s.start, s.end]);
}

describe("overlap replacement (libipt's pt_image_add)", () => {
  test("a new section in the middle splits the old one; both halves keep their file offsets", () => {
    const image = new Image();
    const a = tagged(0x100, 0xa);
    addAt(image, "a", a, 0x1000n);
    addAt(image, "b", tagged(0x10, 0xb), 0x1080n);
    assert.deepEqual(layout(image), [
      ["a", 0x1000n, 0x1080n],
      ["b", 0x1080n, 0x1090n],
      ["a", 0x1090n, 0x1100n],
    ]);
    const back = image.sections[2]!;
    assert.equal(back.offset, 0x90);
    assert.equal(back.id, image.sections[0]!.id);
    assert.deepEqual(readAt(image, 0x107en, 4), [0xae, 0xaf, 0xb0, 0xb1]);
    assert.deepEqual(readAt(image, 0x108en, 4), [0xbe, 0xbf, 0xa0, 0xa1]);
  });

  test("trimming the front and the back, covering whole sections", () => {
    const image = new Image();
    addAt(image, "a", tagged(0x100, 0xa), 0x1000n);
    addAt(image, "b", tagged(0x100, 0xb), 0x1100n);
    addAt(image, "c", tagged(0x100, 0xc), 0x1200n);
    // Covers the end of a, all of b, the start of c.
    addAt(image, "d", tagged(0x180, 0xd), 0x10c0n);
    assert.deepEqual(layout(image), [
      ["a", 0x1000n, 0x10c0n],
      ["d", 0x10c0n, 0x1240n],
      ["c", 0x1240n, 0x1300n],
    ]);
    assert.equal(image.sections[2]!.offset, 0x40);
    // Exactly the same range: replaced.
    addAt(image, "e", tagged(0x180, 0xe), 0x10c0n);
    assert.deepEqual(layout(image)[1], ["e", 0x10c0n, 0x1240n]);
    // A superset of everything.
    addAt(image, "f", tagged(0x1000, 0xf), 0x800n);
    assert.deepEqual(layout(image), [["f", 0x800n, 0x1800n]]);
  });

  test("adjacent sections do not overlap", () => {
    const image = new Image();
    addAt(image, "a", tagged(0x10, 0xa), 0x1000n);
    addAt(image, "b", tagged(0x10, 0xb), 0x1010n);
    addAt(image, "c", tagged(0x10, 0xc), 0xff0n);
    assert.deepEqual(layout(image), [
      ["c", 0xff0n, 0x1000n],
      ["a", 0x1000n, 0x1010n],
      ["b", 0x1010n, 0x1020n],
    ]);
  });

  test("removeByName removes every part; removeRange punches holes", () => {
    const image = new Image();
    addAt(image, "a", tagged(0x100, 0xa), 0x1000n);
    addAt(image, "b", tagged(0x10, 0xb), 0x1080n);
    assert.equal(image.removeByName("a"), 2);
    assert.deepEqual(layout(image), [["b", 0x1080n, 0x1090n]]);
    assert.equal(image.removeByName("a"), 0);
    addAt(image, "a", tagged(0x100, 0xa), 0x1100n);
    assert.equal(image.removeRange(0, 0x1088, 0x80), 2);
    assert.deepEqual(layout(image), [
      ["b", 0x1080n, 0x1088n],
      ["a", 0x1108n, 0x1200n],
    ]);
    assert.equal(image.sections[1]!.offset, 8);
    assert.equal(image.removeRange(0, 0x2000, 0x10), 0);
    assert.equal(image.removeRange(0xffffffff, 0xfffffff0, 0x11), -ErrorCode.Invalid);
    assert.equal(image.removeRange(0, 0, 0), -ErrorCode.Invalid);
    assert.equal(image.removeById(image.sections[0]!.id), 1);
    assert.equal(image.sections.length, 1);
  });

  test("raw ranges: from-to like ptxed's --raw file:from-to:base", () => {
    const image = new Image();
    const file = tagged(0x40, 0x3);
    assert.ok(addAt(image, "raw", file, 0x2000n, 0x10, 0x20) > 0);
    assert.deepEqual(layout(image), [["raw", 0x2000n, 0x2010n]]);
    assert.deepEqual(readAt(image, 0x2000n, 2), [0x30, 0x31]);
    // `to` beyond the file is truncated, as libipt truncates the section size.
    assert.ok(addAt(image, "raw2", file, 0x3000n, 0x30, 0x1000) > 0);
    assert.equal(image.sections[1]!.size, 0x10);
    assert.equal(addAt(image, "bad", file, 0x4000n, 0x40), -ErrorCode.Invalid);
    assert.equal(addAt(image, "bad", file, 0x4000n, 8, 8), -ErrorCode.Invalid);
    assert.equal(addAt(image, "bad", new Uint8Array(0), 0x4000n), -ErrorCode.Invalid);
    assert.equal(image.addRaw("bad", file, 0x1_0000_0000, 0), -ErrorCode.Invalid);
  });
});

describe("reads and lookups", () => {
  test("reads cross contiguous sections, stop at holes, NoMap in holes", () => {
    const image = new Image();
    addAt(image, "a", tagged(0x10, 0xa), 0x1000n);
    addAt(image, "b", tagged(0x10, 0xb), 0x1010n);
    addAt(image, "c", tagged(0x10, 0xc), 0x1030n);
    assert.deepEqual(readAt(image, 0x100en, 4), [0xae, 0xaf, 0xb0, 0xb1]);
    assert.deepEqual(readAt(image, 0x101en, 8), [0xbe, 0xbf]);
    assert.equal(readAt(image, 0x1020n, 4), NOMAP);
    assert.equal(readAt(image, 0xfffn, 4), NOMAP);
    assert.equal(readAt(image, 0x1040n, 1), NOMAP);
    assert.equal(readAt(image, 0x103fn, 1).toString(), [0xcf].toString());
    const out = new Uint8Array(4);
    assert.equal(image.read(0, 0x1000, out, 5), -ErrorCode.Invalid);
    assert.equal(image.read(0, 0x1000, out, 2, 2), 2);
    assert.deepEqual(Array.from(out), [0, 0, 0xa0, 0xa1]);
    assert.equal(image.read(0, 0x1000, out, 0), 0);
    assert.equal(image.read(0, 0x1000, out, 1.5), -ErrorCode.Invalid);
    assert.equal(image.read(0, 0x1000, out, 1, -1), -ErrorCode.Invalid);
  });

  test("large reads copy in bulk", () => {
    const image = new Image();
    const a = pattern(5000, 1);
    const b = pattern(3000, 2);
    addAt(image, "a", a, KERNEL);
    addAt(image, "b", b, KERNEL + 5000n);
    const got = readAt(image, KERNEL + 100n, 7000) as number[];
    assert.deepEqual(got, [...a.subarray(100), ...b.subarray(0, 2100)]);
  });

  test("kernel addresses and the top of the address space are exact", () => {
    const image = new Image();
    addAt(image, "kernel", tagged(0x100, 0x8), KERNEL);
    addAt(image, "top", tagged(0x10, 0x9), 0xfffffffffffffff0n);
    addAt(image, "low", tagged(0x10, 0x7), 0x81000000n); // same low half as KERNEL
    assert.deepEqual(readAt(image, KERNEL + 0xffn, 4), [0x8f]);
    assert.equal(readAt(image, KERNEL - 1n, 1), NOMAP);
    assert.equal(readAt(image, KERNEL + 0x100n, 1), NOMAP);
    assert.deepEqual(readAt(image, 0x81000000n, 1), [0x70]);
    // Reads stop at 2^64.
    assert.deepEqual(readAt(image, 0xfffffffffffffffen, 8), [0x9e, 0x9f]);
    assert.equal(image.sections[2]!.end, 1n << 64n);
    // One byte more would wrap.
    assert.equal(addAt(image, "wrap", tagged(0x11, 1), 0xfffffffffffffff0n), -ErrorCode.Invalid);
    const hit = new ImageHit();
    assert.equal(image.find(0xffffffff, 0x81000010, hit), 0);
    assert.equal(hit.available, 0xf0);
    assert.equal(hit.section!.name, "kernel");
    assert.equal(hit.bytes[hit.offset], 0x80);
    // A section crossing a 2^32 boundary.
    addAt(image, "x", tagged(0x20, 0x5), 0x1fffffff0n);
    assert.deepEqual(readAt(image, 0x1fffffffen, 4), [0x5e, 0x5f, 0x50, 0x51]);
    assert.equal(image.find(2, 0xf, hit), 0);
    assert.equal(hit.available, 1);
  });

  test("find caches the last hit and sees every change", () => {
    const image = new Image();
    const hit = new ImageHit();
    assert.equal(image.find(0, 0x1000, hit), NOMAP);
    addAt(image, "a", tagged(0x100, 0xa), 0x1000n);
    assert.equal(image.find(0, 0x1010, hit), 0);
    assert.equal(hit.offset, 0x10);
    const v = image.version;
    addAt(image, "b", tagged(0x10, 0xb), 0x1008n);
    assert.ok(image.version > v);
    // The cached section "a" was split: 0x1010 is now in b.
    assert.equal(image.find(0, 0x1010, hit), 0);
    assert.equal(hit.section!.name, "b");
    assert.equal(hit.offset, 0x8);
    assert.equal(image.find(0, 0x1018, hit), 0);
    assert.equal(hit.section!.name, "a");
    assert.equal(hit.offset, 0x18);
    image.removeRange(0, 0x1000, 0x100);
    assert.equal(image.find(0, 0x1018, hit), NOMAP);
    addAt(image, "c", tagged(0x10, 0xc), 0x1000n);
    image.clear();
    assert.equal(image.find(0, 0x1000, hit), NOMAP);
  });
});

describe("ELF files in an image", () => {
  test("ET_EXEC at its addresses, with zero fill beyond p_filesz", () => {
    for (const [is64, le] of [
      [true, true],
      [false, false],
    ] as const) {
      const l = sampleElf(is64, le, ET_EXEC);
      const elf = parseElf(l.bytes);
      const image = new Image();
      assert.equal(image.addElf(elf, { name: "exe" }), 4);
      const base = is64 ? 0x400000n : 0x8048000n;
      assert.deepEqual(layout(image), [
        ["exe", base, base + 0x180n],
        ["exe", base + 0x1000n, base + 0x1040n],
        ["exe", base + 0x2000n, base + 0x2030n],
        ["exe", base + 0x2030n, base + 0x3000n],
      ]);
      assert.deepEqual(readAt(image, base, 4), Array.from(pattern(4, 1)));
      // Data then its zero fill, read in one go.
      assert.deepEqual(readAt(image, base + 0x202en, 4), [...pattern(0x30, 3).subarray(0x2e), 0, 0]);
      assert.equal(readAt(image, base + 0x3000n, 1), NOMAP);
      assert.equal(readAt(image, base + 0x180n, 1), NOMAP);
      const hit = new ImageHit();
      assert.equal(image.find(...halves(base + 0x2040n), hit), 0);
      assert.equal(hit.bytes, ZERO_FILL);
      assert.equal(hit.available, 0xfc0);
      assert.equal(hit.section!.flags, PF_R | PF_W);
      // ptxed's view: p_filesz only.
      const p = new Image();
      assert.equal(p.addElf(elf, { zeroFill: false }), 3);
      assert.equal(readAt(p, base + 0x2030n, 1), NOMAP);
    }
  });

  test("ET_DYN relocated to a load base (PIE, shared object)", () => {
    const l = sampleElf(true, true, ET_DYN, 0n);
    const elf = parseElf(l.bytes);
    const image = new Image();
    const base = 0x7f1234560000n;
    const [hi, lo] = halves(base);
    assert.equal(image.addElf(elf, { name: "lib.so", baseHi: hi, baseLo: lo }), 4);
    assert.equal(image.sections[0]!.start, base);
    assert.equal(image.sections[1]!.start, base + 0x1000n);
    assert.deepEqual(readAt(image, base + 0x1000n, 3), Array.from(pattern(3, 2)));
    assert.equal(image.sections[0]!.flags, PF_R | PF_X);
    // The ptxed rule: the lowest PT_LOAD lands on the base, whatever its p_vaddr.
    const l2 = sampleElf(false, false, ET_DYN, 0x10000n);
    const image2 = new Image();
    image2.addElf(parseElf(l2.bytes), { baseHi: 0, baseLo: 0x40000000 });
    assert.equal(image2.sections[0]!.start, 0x40000000n);
    assert.equal(image2.sections[2]!.start, 0x40002000n);
    // A base that wraps a segment past 2^64 adds nothing.
    const image3 = new Image();
    assert.equal(image3.addElf(elf, { baseHi: 0xffffffff, baseLo: 0xfffff000 }), -ErrorCode.Invalid);
    assert.equal(image3.sections.length, 0);
    assert.equal(image3.addElf(elf, { baseHi: 2 ** 32, baseLo: 0 }), -ErrorCode.Invalid);
  });

  test("a kernel image at 0xffffffff81000000", () => {
    const text = pattern(0x2000, 7);
    const l = writeElf({
      is64: true,
      le: true,
      segments: [
        { flags: PF_R | PF_X, vaddr: KERNEL, data: text },
        { flags: PF_R | PF_W, vaddr: KERNEL + 0x200000n, data: pattern(0x10, 8), memsz: 0x100000n },
      ],
    });
    const image = new Image();
    assert.equal(image.addElf(parseElf(l.bytes)), 3);
    assert.deepEqual(readAt(image, KERNEL + 0x1ffen, 2), Array.from(text.subarray(0x1ffe)));
    assert.equal(readAt(image, KERNEL + 0x2000n, 1), NOMAP);
    assert.deepEqual(readAt(image, KERNEL + 0x2fffffn, 2), [0]);
  });
});

describe("image sets: one image per address space", () => {
  test("CR3-keyed images fall back to the default image", () => {
    const set = new ImageSet();
    addAt(set.defaultImage, "kernel", tagged(0x100, 0x8), KERNEL);
    const p1 = set.image(0, 0x1000);
    const p2 = set.image(0x12, 0x34567000); // a CR3 above 2^32
    addAt(p1, "one", tagged(0x100, 0x1), 0x400000n);
    addAt(p2, "two", tagged(0x100, 0x2), 0x400000n);
    assert.equal(set.size, 2);
    assert.equal(set.image(0, 0x1000), p1);
    assert.equal(set.lookup(0, 0x1000), p1);
    assert.equal(set.lookup(0x12, 0x34567000), p2);
    assert.equal(set.lookup(0, 0x34567000), set.defaultImage); // same low half, other CR3
    assert.equal(set.lookup(0, 0x2000), set.defaultImage);
    assert.deepEqual(readAt(p1, 0x400000n, 1), [0x10]);
    assert.deepEqual(readAt(p2, 0x400000n, 1), [0x20]);
    assert.deepEqual(readAt(p1, KERNEL, 1), [0x80]);
    assert.deepEqual(readAt(p2, KERNEL + 0xffn, 1), [0x8f]);
    assert.equal(readAt(set.defaultImage, 0x400000n, 1), NOMAP);
    assert.equal(set.get(0, 0x3000), undefined);
    assert.ok(set.delete(0, 0x1000));
    assert.ok(!set.delete(0, 0x1000));
    assert.equal(set.lookup(0, 0x1000), set.defaultImage);
    assert.deepEqual(
      set.entries().map((e) => [e.cr3, e.vmcs]),
      [[0x1234567000n, 0xffffffffffffffffn]],
    );
  });

  test("VMCS keys: exact, then (cr3, any), then (any, vmcs), then default", () => {
    const set = new ImageSet();
    const exact = set.image(0, 0x1000, 0, 0x5000);
    const cr3only = set.image(0, 0x1000);
    const vmcsOnly = set.image(ASID_ANY, ASID_ANY, 0, 0x5000);
    assert.equal(set.lookup(0, 0x1000, 0, 0x5000), exact);
    assert.equal(set.lookup(0, 0x1000, 0, 0x6000), cr3only);
    assert.equal(set.lookup(0, 0x1000), cr3only);
    assert.equal(set.lookup(0, 0x2000, 0, 0x5000), vmcsOnly);
    assert.equal(set.lookup(0, 0x2000, 0, 0x6000), set.defaultImage);
    // The cache sees new images.
    const later = set.image(0, 0x2000, 0, 0x6000);
    assert.equal(set.lookup(0, 0x2000, 0, 0x6000), later);
  });

  test("an address-space image shadows the default image, clipping what it reads from it", () => {
    const set = new ImageSet();
    addAt(set.defaultImage, "shared", tagged(0x100, 0xd), 0x1000n);
    const p = set.image(0, 0x1000);
    addAt(p, "own", tagged(0x10, 0xe), 0x1080n);
    const hit = new ImageHit();
    assert.equal(p.find(0, 0x1070, hit), 0);
    assert.equal(hit.section!.name, "shared");
    assert.equal(hit.available, 0x10);
    assert.deepEqual(readAt(p, 0x107en, 4), [0xde, 0xdf, 0xe0, 0xe1]);
    assert.deepEqual(readAt(p, 0x108en, 4), [0xee, 0xef, 0xd0, 0xd1]);
  });

  test("many keys, including colliding low halves", () => {
    const set = new ImageSet();
    const images = new Map<string, Image>();
    for (let i = 0; i < 500; i++) {
      const hi = i % 7;
      const lo = ((i * 0x1000) >>> 0) & 0xfffff000;
      const key = `${hi}:${lo}`;
      if (!images.has(key)) images.set(key, set.image(hi, lo));
    }
    for (const [key, image] of images) {
      const [hi, lo] = key.split(":").map(Number) as [number, number];
      assert.equal(set.lookup(hi, lo), image);
      assert.equal(set.get(hi, lo), image);
    }
    assert.equal(set.size, images.size);
  });
});

describe("model check", () => {
  type Op =
    | { kind: "add"; shared: boolean; name: string; off: number; len: number; from: number; tag: number }
    | { kind: "remove"; shared: boolean; off: number; len: number }
    | { kind: "removeName"; shared: boolean; name: string };
  const WINDOW = 160;
  const op: fc.Arbitrary<Op> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant("add" as const),
        shared: fc.boolean(),
        name: fc.constantFrom("a", "b", "c"),
        off: fc.integer({ min: 0, max: WINDOW - 1 }),
        len: fc.integer({ min: 1, max: 64 }),
        from: fc.integer({ min: 0, max: 15 }),
        tag: fc.integer({ min: 0, max: 15 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("remove" as const),
        shared: fc.boolean(),
        off: fc.integer({ min: 0, max: WINDOW - 1 }),
        len: fc.integer({ min: 1, max: 64 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("removeName" as const),
        shared: fc.boolean(),
        name: fc.constantFrom("a", "b", "c"),
      }),
    },
  );
  /** Anchors where 64-bit carries and the 2^64 end matter. */
  const anchor = fc.oneof(
    fc.constantFrom(0n, 0xffffff80n, KERNEL - 80n, (1n << 64n) - BigInt(WINDOW), 0x7fffffffffc0n),
    fc.bigInt({ min: 0n, max: (1n << 64n) - BigInt(WINDOW) }),
  );
  type Model = Map<bigint, { byte: number; name: string }>;

  /** Every byte of the window, by find and by read; reads run to the end of contiguous memory. */
  function checkAgainst(
    image: Image,
    base: bigint,
    at: (a: bigint) => { byte: number; name: string } | undefined,
  ) {
    const hit = new ImageHit();
    for (let k = 0; k < WINDOW; k++) {
      const a = base + BigInt(k);
      const m = at(a);
      const [hi, lo] = halves(a);
      const st = image.find(hi, lo, hit);
      if (!m) {
        assert.equal(st, NOMAP);
        assert.equal(readAt(image, a, 4), NOMAP);
        continue;
      }
      assert.equal(st, 0);
      assert.equal(hit.bytes[hit.offset], m.byte);
      assert.equal(hit.section!.name, m.name);
      assert.ok(hit.available >= 1 && hit.offset + hit.available <= hit.bytes.length);
      // Everything `available` promises is what the model says.
      for (let j = 0; j < hit.available && k + j < WINDOW; j++)
        assert.equal(hit.bytes[hit.offset + j], at(a + BigInt(j))?.byte);
      let run = 0;
      while (k + run < WINDOW && at(a + BigInt(run))) run++;
      const got = readAt(image, a, WINDOW) as number[];
      assert.equal(got.length, run);
      for (let j = 0; j < run; j++) assert.equal(got[j], at(a + BigInt(j))!.byte);
    }
  }

  test("random adds and removes, in an address space and its default image, match a byte model", () => {
    fc.assert(
      fc.property(anchor, fc.array(op, { maxLength: 25 }), (base, ops) => {
        const set = new ImageSet();
        const own = set.image(0, 0x1000);
        const models: { own: Model; shared: Model } = { own: new Map(), shared: new Map() };
        const files = new Map<number, Uint8Array>();
        const fileFor = (tag: number) => {
          let f = files.get(tag);
          if (!f) {
            f = Uint8Array.from({ length: 96 }, (_, i) => (tag * 37 + i * 5) & 0xff);
            files.set(tag, f);
          }
          return f;
        };
        for (const o of ops) {
          const image = o.shared ? set.defaultImage : own;
          const model = o.shared ? models.shared : models.own;
          if (o.kind === "add") {
            const len = Math.min(o.len, WINDOW - o.off);
            const f = fileFor(o.tag);
            assert.ok(addAt(image, o.name, f, base + BigInt(o.off), o.from, o.from + len) > 0);
            for (let k = 0; k < len; k++)
              model.set(base + BigInt(o.off + k), { byte: f[o.from + k]!, name: o.name });
          } else if (o.kind === "remove") {
            const len = Math.min(o.len, WINDOW - o.off);
            const [hi, lo] = halves(base + BigInt(o.off));
            assert.ok(image.removeRange(hi, lo, len) >= 0);
            for (let k = 0; k < len; k++) model.delete(base + BigInt(o.off + k));
          } else {
            image.removeByName(o.name);
            for (const [a, v] of model) if (v.name === o.name) model.delete(a);
          }
        }
        // Sorted, disjoint, inside the window.
        for (const image of [own, set.defaultImage]) {
          let prevEnd = 0n;
          for (const s of image.sections) {
            assert.ok(s.start >= prevEnd && s.start >= base && s.end <= base + BigInt(WINDOW));
            assert.equal(s.end - s.start, BigInt(s.size));
            prevEnd = s.end;
          }
        }
        checkAgainst(set.defaultImage, base, (a) => models.shared.get(a));
        checkAgainst(own, base, (a) => models.own.get(a) ?? models.shared.get(a));
        assert.equal(set.lookup(0, 0x1000), own);
      }),
      { numRuns: 400 },
    );
  });
});

test("big() and halves() agree (test helpers)", () => {
  assert.equal(big(...halves(KERNEL)), KERNEL);
});
