/**
 * ByteChunks writes what String() and hex64 would, as UTF-8, in chunks of bounded size
 * that are never touched again once handed over.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  ByteChunks,
  immediate,
  putBytes,
  putDecimal,
  putHex,
  putHex16,
  putView,
  viewOf,
} from "../../src/analysis/export/byte-chunks.js";
import { hex64 } from "../../src/base/halves.js";

type Piece =
  | { k: "text"; s: string }
  | { k: "slice"; s: string; from: number }
  | { k: "int"; v: number }
  | { k: "record"; s: string; v: number }
  | { k: "hex"; hi: number; lo: number; width: number; space: boolean }
  | { k: "view"; s: string }
  | { k: "viewSlice"; s: string; from: number }
  | { k: "bytes"; s: string }
  | { k: "json"; s: string };

const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.record({ k: fc.constant("text" as const), s: fc.string({ unit: "binary", maxLength: 40 }) }),
  // Bytes from within a larger array (names in an arena); long ones too.
  fc.record({
    k: fc.constant("slice" as const),
    s: fc.string({ unit: "binary", maxLength: 200 }),
    from: fc.nat({ max: 8 }),
  }),
  fc.record({
    k: fc.constant("int" as const),
    v: fc.oneof(fc.nat(), fc.maxSafeNat(), fc.integer(), fc.double()),
  }),
  // Written in place after reserve(): bytes and a decimal integer, as the timeline's events.
  fc.record({
    k: fc.constant("record" as const),
    s: fc.string({ unit: "binary-ascii", maxLength: 2000 }),
    v: fc.oneof(fc.nat(), fc.maxSafeNat()),
  }),
  // Bytes made once as a DataView (the timeline's pieces), and copied four at a time
  // from within an arena into place after reserve().
  fc.record({ k: fc.constant("view" as const), s: fc.string({ unit: "binary", maxLength: 2000 }) }),
  fc.record({
    k: fc.constant("viewSlice" as const),
    s: fc.string({ unit: "binary", maxLength: 200 }),
    from: fc.nat({ max: 8 }),
  }),
  // A whole array (copied by set() past 24 bytes).
  fc.record({ k: fc.constant("bytes" as const), s: fc.string({ unit: "binary-ascii", maxLength: 100 }) }),
  // JSON string literals: names with what must be escaped and what need not be.
  fc.record({
    k: fc.constant("json" as const),
    s: fc.oneof(
      fc.string({ unit: "binary", maxLength: 60 }),
      fc.string({
        unit: fc.constantFrom("a", "+", '"', "\\", "\n", "\u0001", "\u007f", "é", "\ud800"),
        maxLength: 20,
      }),
    ),
  }),
  fc.record({
    k: fc.constant("hex" as const),
    hi: fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff })),
    lo: fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff })),
    width: fc.nat({ max: 20 }),
    space: fc.boolean(),
  }),
);

/** What each piece should read as. */
function expected(p: Piece): string {
  if (p.k === "text" || p.k === "slice" || p.k === "view" || p.k === "viewSlice" || p.k === "bytes")
    return p.s;
  if (p.k === "json") return JSON.stringify(p.s);
  if (p.k === "int") return String(p.v);
  if (p.k === "record") return `${p.s}${p.v}`;
  const h = hex64(p.hi, p.lo, 0);
  return h.padStart(p.width, p.space ? " " : "0");
}

test("pieces read as String() and hex64 would write them, in UTF-8", () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 3000 }), (pieces) => {
      const chunks: Uint8Array[] = [];
      const out = new ByteChunks((c) => chunks.push(c.slice()));
      // A copy is kept and compared later: the writer must not write into a chunk it handed over.
      const handed: Uint8Array[] = [];
      const w = new ByteChunks((c) => handed.push(c));
      // A callee done with each chunk on return: the writer fills one buffer again.
      const copied: Uint8Array[] = [];
      const again = new ByteChunks(immediate((c) => copied.push(c.slice())));
      for (const p of pieces) {
        const arena =
          p.k === "slice" || p.k === "viewSlice"
            ? new Uint8Array([...new Uint8Array(p.from), ...Buffer.from(p.s)])
            : undefined;
        for (const x of [out, w, again]) {
          if (p.k === "text") x.text(p.s);
          else if (p.k === "slice") x.slice(arena!, p.from, arena!.length - p.from);
          else if (p.k === "view") x.viewBytes(viewOf(Buffer.from(p.s)));
          else if (p.k === "bytes") x.bytes(new Uint8Array(Buffer.from(p.s)));
          else if (p.k === "json") x.json(p.s);
          else if (p.k === "viewSlice") {
            const n = arena!.length - p.from;
            const at = x.reserve(n);
            x.wrote(putView(x.view, at, viewOf(arena!), p.from, n));
          } else if (p.k === "int") x.int(p.v);
          else if (p.k === "record") {
            const bytes = Buffer.from(p.s);
            let at = x.reserve(bytes.length + 16);
            at = putBytes(x.buffer, at, bytes, 0, bytes.length);
            x.wrote(putDecimal(x.buffer, at, p.v));
          } else x.hex64(p.hi, p.lo, p.width, p.space ? 0x20 : 0x30);
        }
      }
      out.flush();
      w.flush();
      again.flush();
      const want = pieces.map(expected).join("");
      assert.equal(Buffer.concat(chunks).toString("utf8"), want);
      assert.equal(Buffer.concat(handed).toString("utf8"), want);
      assert.equal(Buffer.concat(copied).toString("utf8"), want);
      for (const c of handed) assert.ok(c.length <= 1 << 16, `a chunk of ${c.length} bytes`);
    }),
    { numRuns: 200 },
  );
});

test("a text longer than a chunk goes out whole, and the chunks around it stay small", () => {
  const chunks: Uint8Array[] = [];
  const w = new ByteChunks((c) => chunks.push(c));
  const long = "é".repeat(100_000);
  w.text("a");
  w.text(long);
  w.text("b");
  w.flush();
  assert.equal(Buffer.concat(chunks).toString("utf8"), `a${long}b`);
  assert.ok(chunks.length >= 2);
});

test("bytes() copies short and long arrays alike", () => {
  const chunks: Uint8Array[] = [];
  const w = new ByteChunks((c) => chunks.push(c));
  const short = new Uint8Array([0x61, 0x62]);
  const long = new Uint8Array(1000).fill(0x63);
  for (let i = 0; i < 100; i++) {
    w.bytes(short);
    w.bytes(long);
  }
  w.flush();
  assert.equal(Buffer.concat(chunks).toString("latin1"), `ab${"c".repeat(1000)}`.repeat(100));
});

test("viewBytes() and putView() copy across chunk boundaries, into handed-over and reused buffers alike", () => {
  const pieces = Array.from(
    { length: 3000 },
    (_, i) => `{"ph":"B","ts":${i},"name":"f${"x".repeat(i % 37)}"}`,
  );
  const views = pieces.map((p) => viewOf(Buffer.from(p)));
  const handed: Uint8Array[] = [];
  const copied: Uint8Array[] = [];
  for (const w of [
    new ByteChunks((c) => handed.push(c)),
    new ByteChunks(immediate((c) => copied.push(c.slice()))),
  ]) {
    for (let i = 0; i < views.length; i++) {
      if (i % 2 === 0) w.viewBytes(views[i]!);
      else {
        const n = views[i]!.byteLength;
        const at = w.reserve(n); // first: it may replace the buffer the view is of
        w.wrote(putView(w.view, at, views[i]!, 0, n));
      }
    }
    w.flush();
  }
  const want = pieces.join("");
  assert.ok(handed.length > 1);
  assert.equal(Buffer.concat(handed).toString("utf8"), want);
  assert.equal(Buffer.concat(copied).toString("utf8"), want);
});

test("putHex16() writes hex64's digits in 16 columns, padded, for every digit count and both halves", () => {
  const d = new DataView(new ArrayBuffer(20));
  // Values of 1 to 16 digits (odd and even counts), halves with their top bit set, and 0.
  const values: Array<[number, number]> = [[0, 0]];
  for (let n = 1; n <= 8; n++) {
    values.push([0, 2 ** (4 * n - 4)], [0, 2 ** (4 * n) - 1], [0, 0xabcdef12 >>> (32 - 4 * n)]);
    values.push([2 ** (4 * n - 4), 0], [2 ** (4 * n) - 1, 0xffffffff], [0xabcdef12 >>> (32 - 4 * n), 7]);
  }
  fc.assert(
    fc.property(fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }), (hi, lo) => {
      values.push([hi, lo], [0, lo]);
    }),
    { numRuns: 50 },
  );
  for (const [hi, lo] of values) {
    for (const pad of [0x20, 0x30]) {
      d.setUint32(16, 0x78787878); // past the 16 columns: left as it is
      assert.equal(putHex16(d, 2, hi, lo, pad), 18);
      const text = Buffer.from(d.buffer, 2, 16).toString("latin1");
      assert.equal(text, hex64(hi, lo, 0).padStart(16, pad === 0x20 ? " " : "0"), `${hi}:${lo}`);
      assert.equal(d.getUint16(18), 0x7878);
    }
  }
});

test("putDecimal writes what String() does, around 2^31 and every power of ten", () => {
  const values = [0, 9, 10, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32, 2 ** 53 - 1];
  for (let k = 1; k < 16; k++) values.push(10 ** k - 1, 10 ** k, 10 ** k + 1);
  // Across the split at 10^8 (digits above the last eight): zeros inside each part.
  values.push(100_000_000, 100_000_099, 123_000_000_456, 9_007_199_000_000_001, 1_000_000_001_000_000);
  for (let v = 1, k = 0; k < 2000; k++) {
    v = (v * 48271) % 2147483647;
    values.push(v, v * 7919 + (v % 1000), (v % 100) * 1e8 + (v % 1e7));
  }
  const b = new Uint8Array(32);
  for (const v of values) {
    const end = putDecimal(b, 3, v);
    assert.equal(Buffer.from(b.subarray(3, end)).toString("latin1"), String(v));
  }
});

test("putHex() writes hex64's digits, at least `width` of them, for every digit count and both halves", () => {
  const b = new Uint8Array(32);
  // Each bit length (0 to 2^32 - 1 in each half), and a value past each power of two.
  const halves = [0];
  for (let s = 0; s < 32; s++) halves.push(2 ** s - 1, 2 ** s, (2 ** s + 0x9e37) >>> 0);
  halves.push(0xffffffff);
  for (const hi of halves)
    for (const lo of halves)
      for (const width of [0, 1, 9, 16, 20]) {
        b.fill(0x78);
        const end = putHex(b, 3, hi, lo, width, 0x20);
        const want = hex64(hi, lo, 0).padStart(width, " ");
        assert.equal(Buffer.from(b.subarray(3, end)).toString("latin1"), want, `${hi}:${lo}`);
        assert.equal(b[end], 0x78);
      }
});
