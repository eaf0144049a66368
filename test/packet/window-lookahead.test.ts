/**
 * Readers that take a trace a window at a time decode each packet as the whole trace
 * would, also where the end of a window alone decides a packet: with SKD007, a
 * two-byte CYC whose second byte is 0x02 is an OVF when 0xF3 follows (decode.ts
 * windowCut). Cut there, the packet decoder, the event decoder's cursor and the
 * statistics read on instead of taking the CYC (the decision graph's walk does the
 * same); at the trace's end the CYC stands.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { PacketCursor } from "../../src/event/cursor.js";
import { DecodeQuirk } from "../../src/packet/decode.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { collectStats } from "../../src/packet/stats.js";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { hostileBytes } from "./hostile.js";

const QUIRKS = DecodeQuirk.Skd007 | DecodeQuirk.Skz84;

/** `buf` read `window` bytes at a time (a window of the whole when 0). */
function bytes(buf: Uint8Array, window: number): TraceBytes {
  if (window === 0) return TraceBytes.of(buf);
  return TraceBytes.read({ size: buf.length, read: (o: number, n: number) => buf.slice(o, o + n) }, window);
}

/** Every packet the packet decoder and the cursor read from 0: offset, type and size, then the error. */
function packets(t: () => TraceBytes): { decoder: number[][]; cursor: number[][] } {
  const pkt = new Packet();
  const decoder = new PacketDecoder(t(), { quirks: QUIRKS });
  decoder.pos = 0;
  const cursor = new PacketCursor(t(), QUIRKS);
  cursor.pos = 0;
  const out = { decoder: [] as number[][], cursor: [] as number[][] };
  for (const [name, next, at] of [
    ["decoder", (p: Packet) => decoder.next(p), () => decoder.pos],
    ["cursor", (p: Packet) => cursor.next(p), () => cursor.pos],
  ] as const) {
    for (;;) {
      const pos = at();
      const size = next(pkt);
      if (size < 0) {
        out[name].push([pos, size]);
        break;
      }
      out[name].push([pos, pkt.type, size]);
    }
  }
  return out;
}

/** PSB and PSBEND (statistics start at a PSB). */
const PSB_PLUS = [...Array.from({ length: 8 }, () => [0x02, 0x82]).flat(), 0x02, 0x23];

/** PSB+, PADs, then a CYC (0x07, one extension byte 0x02) and 0xF3 (an OVF by SKD007) at `at`. */
function cycThenOvf(at: number, tail: number[] = [0x00, 0x00]): Uint8Array {
  const buf = new Uint8Array(at + 3 + tail.length);
  buf.set(PSB_PLUS);
  buf.set([0x07, 0x02, 0xf3], at);
  buf.set(tail, at + 3);
  return buf;
}

describe("a packet decided by a window's end", () => {
  test("an OVF that SKD007 reads from a CYC's bytes, cut by a window anywhere: an OVF, as from the whole trace", () => {
    for (const at of [18, 19, 23, 24, 30]) {
      const buf = cycThenOvf(at);
      const whole = packets(() => bytes(buf, 0));
      assert.ok(whole.decoder.some((p) => p[0] === at && p[1] === PacketType.Ovf && p[2] === 3));
      for (let window = 1; window <= buf.length; window++) {
        assert.deepEqual(
          packets(() => bytes(buf, window)),
          whole,
          `OVF at ${at}, window ${window}`,
        );
        const stats = collectStats(bytes(buf, window), { quirks: QUIRKS });
        const wholeStats = collectStats(bytes(buf, 0), { quirks: QUIRKS });
        assert.deepEqual(stats, wholeStats, `stats: OVF at ${at}, window ${window}`);
        assert.equal(stats.counts[PacketType.Ovf], 1);
      }
    }
  });

  test("at the trace's end the CYC stands (no byte follows)", () => {
    const buf = Uint8Array.of(0x00, 0x07, 0x02);
    for (const window of [0, 1, 2, 3]) {
      const { decoder } = packets(() => bytes(buf, window));
      assert.deepEqual(decoder.slice(1, 2), [[1, PacketType.Cyc, 2]], `window ${window}`);
    }
  });

  test("any bytes, read a window of 1 to 9 bytes at a time: the whole trace's packets and statistics", () => {
    fc.assert(
      fc.property(hostileBytes(40), fc.integer({ min: 1, max: 9 }), (buf, window) => {
        assert.deepEqual(
          packets(() => bytes(buf, window)),
          packets(() => bytes(buf, 0)),
        );
        assert.deepEqual(
          collectStats(bytes(buf, window), { quirks: QUIRKS }),
          collectStats(bytes(buf, 0), { quirks: QUIRKS }),
        );
      }),
      { numRuns: 500 },
    );
  });
});
