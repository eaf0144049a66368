/** The event decoder's packet cursor: the frequent packets decoded first, PAD skipped. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { PacketCursor } from "../../src/event/cursor.js";
import { DecodeQuirk } from "../../src/packet/decode.js";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { hostileBytes } from "../packet/hostile.js";

const ALL_QUIRKS = DecodeQuirk.Skd007 | DecodeQuirk.Skz84;

function fields(pkt: Packet): number[] {
  return [pkt.type, pkt.size, pkt.lo, pkt.hi, pkt.a, pkt.b, pkt.flags];
}

/** The packets of `buf` the way the event decoder fetches them: the frequent ones first, PAD skipped. */
function fetchAll(bytes: TraceBytes, frequent: boolean): number[][] {
  const cursor = new PacketCursor(bytes, ALL_QUIRKS);
  cursor.pos = 0;
  const pkt = new Packet();
  const seen: number[][] = [];
  for (;;) {
    if (frequent && cursor.nextFrequent(pkt) > 0) {
      seen.push([cursor.pos, ...fields(pkt)]);
      continue;
    }
    const size = cursor.next(pkt);
    if (size < 0) {
      seen.push([cursor.pos, size]);
      return seen;
    }
    if (pkt.type !== PacketType.Pad) seen.push([cursor.pos, ...fields(pkt)]);
  }
}

describe("PacketCursor.nextFrequent", () => {
  test("skips PAD and decodes what next would, up to the same error at the same offset, whole or read a window at a time", () => {
    fc.assert(
      fc.property(hostileBytes(40), (buf) => {
        const expected = fetchAll(TraceBytes.of(buf), false);
        assert.deepEqual(fetchAll(TraceBytes.of(buf), true), expected);
        // Read 7 bytes at a time: packets cut by the end of a window are decoded after a grow.
        const source = { size: buf.length, read: (o: number, n: number) => buf.slice(o, o + n) };
        assert.deepEqual(fetchAll(TraceBytes.read(source, 7), true), expected);
      }),
      { numRuns: 400 },
    );
  });

  test("a CYC at a window's end that SKD007 reads as an OVF with the next byte: the OVF, as from the whole trace", () => {
    // Found by the property above: 0x0F 0x02 at a window's end, then 0xF3.
    const buf = Uint8Array.from([0, 2, 83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 2, 243]);
    const expected = fetchAll(TraceBytes.of(buf), false);
    assert.ok(expected.some((p) => p[0] === 15 && p[1] === PacketType.Ovf));
    const source = { size: buf.length, read: (o: number, n: number) => buf.slice(o, o + n) };
    for (let window = 1; window <= buf.length; window++)
      assert.deepEqual(fetchAll(TraceBytes.read(source, window), true), expected, `window ${window}`);
  });
});
