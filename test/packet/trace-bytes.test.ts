/**
 * A trace read a window at a time (TraceBytes) decodes as the whole trace does: the
 * PSB search from every offset and the packet decoder's sync/next sequence give the
 * same answers for windows of any size, on bytes made of PSBs, runs of PSB pattern
 * bytes of odd lengths and phases, PAD and garbage (so that PSB runs and packets
 * straddle the window ends in every way).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { Packet, PacketDecoder, syncForward, syncForwardIn, TraceBytes } from "../../src/packet/index.js";

const source = (bytes: Uint8Array) => ({
  size: bytes.length,
  read: (offset: number, length: number) => bytes.slice(offset, offset + length),
});

/**
 * The same bytes through `readInto` (into the reader's buffers), returning at most
 * `most` bytes a call (short reads), and counting the calls to `read`.
 */
const intoSource = (bytes: Uint8Array, most = Number.POSITIVE_INFINITY) => {
  const s = {
    size: bytes.length,
    reads: 0,
    read: (offset: number, length: number) => {
      s.reads++;
      return bytes.slice(offset, offset + length);
    },
    readInto: (offset: number, into: Uint8Array, at: number, length: number) => {
      assert.ok(offset >= 0 && length > 0 && offset + length <= bytes.length, `read ${offset}+${length}`);
      const n = Math.min(length, most);
      into.set(bytes.subarray(offset, offset + n), at);
      return n;
    },
  };
  return s;
};

const PSB = Array.from({ length: 16 }, (_, i) => (i % 2 ? 0x82 : 0x02));
const piece = fc.oneof(
  fc.constant(PSB),
  fc.integer({ min: 1, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => (i % 2 ? 0x82 : 0x02))),
  fc.integer({ min: 1, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => (i % 2 ? 0x02 : 0x82))),
  fc.integer({ min: 1, max: 20 }).map((n) => new Array<number>(n).fill(0)),
  // PSBEND, a TNT8, a short TIP, a CYC with continuation, and garbage.
  fc.constantFrom([0x02, 0x23], [0x0a], [0x2d, 0x34, 0x12], [0x07, 0x81, 0x01]),
  fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 30 }),
);
const traces = fc.array(piece, { maxLength: 30 }).map((ps) => Uint8Array.from(ps.flat()));
const WINDOWS = [1, 2, 3, 8, 17, 64];

/** Every step of a sync/next loop: offsets, sizes, types and errors. */
function steps(dec: PacketDecoder): string[] {
  const pkt = new Packet();
  const out: string[] = [];
  let status = dec.syncForward();
  for (let guard = 0; guard < 10000; guard++) {
    out.push(`sync ${status} ${dec.pos}`);
    if (status < 0) return out;
    for (;;) {
      const at = dec.pos;
      const size = dec.next(pkt);
      out.push(`${at}: ${size} ${size > 0 ? pkt.type : ""}`);
      if (size < 0) break;
    }
    status = dec.syncForward();
  }
  return out;
}

describe("TraceBytes", () => {
  test("the PSB search from every offset finds what it finds over the whole trace", () => {
    fc.assert(
      fc.property(traces, (bytes) => {
        for (const w of WINDOWS)
          for (let from = 0; from <= bytes.length; from++)
            assert.equal(syncForwardIn(TraceBytes.read(source(bytes), w), from), syncForward(bytes, from));
      }),
      { numRuns: 200 },
    );
  });

  test("the packet decoder syncs and decodes as over the whole trace", () => {
    fc.assert(
      fc.property(traces, (bytes) => {
        const whole = steps(new PacketDecoder(bytes));
        for (const w of WINDOWS)
          assert.deepEqual(steps(new PacketDecoder(TraceBytes.read(source(bytes), w))), whole);
      }),
      { numRuns: 300 },
    );
  });

  test("read into reused buffers, with short reads too: the same answers as over the whole trace", () => {
    fc.assert(
      fc.property(traces, fc.integer({ min: 1, max: 9 }), (bytes, most) => {
        const whole = steps(new PacketDecoder(bytes));
        for (const w of WINDOWS) {
          for (const limit of [Number.POSITIVE_INFINITY, most]) {
            const src = intoSource(bytes, limit);
            assert.deepEqual(steps(new PacketDecoder(TraceBytes.read(src, w))), whole, `window ${w}`);
            assert.equal(src.reads, 0);
          }
          for (let from = 0; from <= bytes.length; from += 3)
            assert.equal(
              syncForwardIn(TraceBytes.read(intoSource(bytes, most), w), from),
              syncForward(bytes, from),
            );
        }
      }),
      { numRuns: 200 },
    );
  });

  test("read into two buffers in turn: what a grow replaced stays intact until the grow after next", () => {
    const bytes = Uint8Array.from({ length: 5000 }, (_, i) => (i * 37 + 11) & 0xff);
    const t = TraceBytes.read(intoSource(bytes), 100);
    const backings = new Set<ArrayBufferLike>([t.buf.buffer]);
    let seen = t.buf;
    let seenBase = t.base;
    while (t.grow()) {
      // The window is the trace's bytes, holding what was not released (here: all of the last one).
      assert.deepEqual(t.buf, bytes.subarray(t.base, t.end));
      // The view from before this grow still shows its bytes.
      assert.deepEqual(seen, bytes.subarray(seenBase, seenBase + seen.length));
      backings.add(t.buf.buffer);
      t.release(t.end - 7);
      seen = t.buf;
      seenBase = t.base;
    }
    assert.equal(t.end, bytes.length);
    // Two buffers, a third once held bytes outgrew them... and no more.
    assert.ok(backings.size <= 3, `${backings.size} buffers`);
  });

  test("released bytes go at the next read; the window stays small", () => {
    const bytes = Uint8Array.from({ length: 100000 }, (_, i) => (i % 1000 < 16 ? PSB[i % 16]! : 0));
    const t = TraceBytes.read(source(bytes), 100);
    const dec = new PacketDecoder(t);
    const pkt = new Packet();
    assert.equal(dec.syncForward(), 0);
    let n = 0;
    while (dec.next(pkt) > 0) {
      t.release(dec.pos);
      n++;
    }
    assert.equal(dec.pos, bytes.length);
    assert.equal(n, 100 + (bytes.length - 100 * 16));
    assert.ok(t.largest <= 200, `window ${t.largest}`);
  });

  test("read into reused buffers, the window and the buffers stay small; a look-ahead still works", () => {
    const bytes = Uint8Array.from({ length: 100000 }, (_, i) => (i % 1000 < 16 ? PSB[i % 16]! : 0));
    for (const most of [Number.POSITIVE_INFINITY, 33]) {
      const t = TraceBytes.read(intoSource(bytes, most), 100);
      const dec = new PacketDecoder(t);
      const pkt = new Packet();
      assert.equal(dec.syncForward(), 0);
      const buffers = new Set<ArrayBufferLike>();
      let n = 0;
      while (dec.next(pkt) > 0) {
        t.release(dec.pos);
        buffers.add(t.buf.buffer);
        n++;
      }
      assert.equal(dec.pos, bytes.length);
      assert.equal(n, 100 + (bytes.length - 100 * 16));
      assert.ok(t.largest <= 200, `window ${t.largest}`);
      assert.ok(buffers.size <= 3, `${buffers.size} buffers`);
      for (const b of buffers) assert.ok(b.byteLength <= 300, `buffer of ${b.byteLength}`);
    }
    // Nothing released: the window doubles to hold what is kept, up to its bound, and no further.
    const t = TraceBytes.read(intoSource(new Uint8Array(100 << 20)), 1 << 20);
    while (t.grow());
    assert.equal(t.base, 0);
    assert.ok(t.end < 100 << 20 && t.largest === t.end && t.largest <= 64 << 20, `window ${t.largest}`);
    assert.deepEqual(t.buf.subarray(0, 16), new Uint8Array(16));
  });
});
