/**
 * encode → decode round trips for every packet type over its whole field range.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { decodePacket } from "../../src/packet/decode.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { encodedSize, encodePacket, PacketEncoder } from "../../src/packet/encode.js";
import { Flag, PACKET_NAMES, Packet, PacketType } from "../../src/packet/types.js";
import {
  ALL_TYPES,
  ARBITRARIES,
  contextFor,
  type Fields,
  fieldsOf,
  makePacket,
  u8,
  uBits,
} from "./helpers.js";

const RUNS = 1000;

describe("round trip per packet type", () => {
  for (const type of ALL_TYPES) {
    test(PACKET_NAMES[type]!, () => {
      fc.assert(
        fc.property(ARBITRARIES[type]!, fc.nat(24), u8, (f, pos, fill) => {
          const pkt = makePacket(f);
          const size = encodedSize(pkt);
          assert.ok(size > 0, `encodedSize ${size} for ${JSON.stringify(f)}`);
          // Encode at an offset inside a filled buffer: only [pos, pos+size) may change.
          const buf = new Uint8Array(pos + size + 8).fill(fill);
          assert.equal(encodePacket(buf, pos, pkt), size);
          assert.ok(buf.subarray(0, pos).every((x) => x === fill));
          assert.ok(buf.subarray(pos + size).every((x) => x === fill));
          // The input packet is not modified.
          assert.deepEqual(fieldsOf(pkt), f);

          const out = new Packet();
          const n = decodePacket(buf, pos, pos + size, out, contextFor(f), 0);
          assert.equal(n, size, `decode of ${JSON.stringify(f)} returned ${n}`);
          assert.equal(out.size, size);
          assert.deepEqual(fieldsOf(out), f);
        }),
        { numRuns: RUNS },
      );
    });
  }
});

describe("CYC sizes at every bit-length boundary", () => {
  // A CYC holds 5 bits in its first byte and 7 in each extension byte.
  const expectedSize = (bits: number) => (bits <= 5 ? 1 : 1 + Math.ceil((bits - 5) / 7));
  for (let bits = 0; bits <= 61; bits++) {
    test(`${bits}-bit maximum`, () => {
      const v = (1n << BigInt(bits)) - 1n;
      const pkt = new Packet();
      pkt.type = PacketType.Cyc;
      pkt.payload = v;
      const size = encodedSize(pkt);
      assert.equal(size, expectedSize(bits));
      const buf = new Uint8Array(size);
      assert.equal(encodePacket(buf, 0, pkt), size);
      const out = new Packet();
      assert.equal(decodePacket(buf, 0, size, out, 0, 0), size, `decoding ${size}-byte CYC of 2^${bits}-1`);
      assert.equal(out.payload, v);
    });
  }
});

test("CYC counts of 2^61 and more cannot be encoded, and a ninth extension byte does not decode", () => {
  const pkt = new Packet();
  pkt.type = PacketType.Cyc;
  pkt.payload = 1n << 61n;
  assert.equal(encodedSize(pkt), -ErrorCode.BadPacket);
  const nine = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]);
  assert.equal(decodePacket(nine, 0, nine.length, new Packet(), 0, 0), -ErrorCode.BadPacket);
});

test("a TNT-64 of no branch (no stop bit, or only the stop bit) is a bad packet, as libipt reads it", () => {
  for (const payload of [
    [0, 0, 0, 0, 0, 0],
    [1, 0, 0, 0, 0, 0],
  ]) {
    const bytes = Uint8Array.from([0x02, 0xa3, ...payload]);
    assert.equal(decodePacket(bytes, 0, bytes.length, new Packet(), 0, 0), -ErrorCode.BadPacket);
  }
  // One branch: the stop bit above it.
  const one = Uint8Array.from([0x02, 0xa3, 2, 0, 0, 0, 0, 0]);
  const pkt = new Packet();
  assert.equal(decodePacket(one, 0, one.length, pkt, 0, 0), 8);
  assert.deepEqual([pkt.type, pkt.a, pkt.lo, pkt.hi], [PacketType.Tnt64, 1, 0, 0]);
});

/** Packets that keep a BBP block open (nextBlockContext); BIPs may follow them. */
const BLOCK_KEEPERS = [
  PacketType.Pad,
  PacketType.Tsc,
  PacketType.Tma,
  PacketType.Mtc,
  PacketType.Fup,
  PacketType.Cyc,
  PacketType.Cbr,
  PacketType.Mnt,
  PacketType.Exstop,
  PacketType.Pwre,
  PacketType.Pwrx,
];

/** A BBP block: BBP, BIPs of the announced size mixed with keepers, then BEP. */
const blockArb: fc.Arbitrary<Fields[]> = fc
  .tuple(ARBITRARIES[PacketType.Bbp]!, ARBITRARIES[PacketType.Bep]!)
  .chain(([bbp, bep]) => {
    const b = bbp.flags & Flag.Bip4 ? 4 : 8;
    const bip = fc
      .tuple(fc.integer({ min: 0, max: 31 }), uBits(b * 8))
      .map(([a, { hi, lo }]): Fields => ({ type: PacketType.Bip, lo, hi, a, b, flags: 0 }));
    const inner = fc.array(fc.oneof(bip, bip, ...BLOCK_KEEPERS.map((t) => ARBITRARIES[t]!)), {
      maxLength: 8,
    });
    return inner.map((mid) => [bbp, ...mid, bep]);
  });

/** Packets outside blocks: everything but BBP and BIP. */
const looseArb = fc.oneof(
  ...ALL_TYPES.filter((t) => t !== PacketType.Bbp && t !== PacketType.Bip).map((t) =>
    ARBITRARIES[t]!.map((f) => [f]),
  ),
);

test("streams of packets and BBP blocks decode back in order", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof({ weight: 6, arbitrary: looseArb }, blockArb), { maxLength: 40, size: "max" }),
      (groups) => {
        const packets = groups.flat();
        const enc = new PacketEncoder(16);
        for (const f of packets) assert.ok(enc.emit(makePacket(f)) > 0);
        const bytes = enc.bytes();

        const dec = new PacketDecoder(bytes);
        assert.equal(dec.syncSet(0), 0);
        const out = new Packet();
        for (const f of packets) {
          const at = dec.offset;
          const n = dec.next(out);
          assert.ok(n > 0, `decode at ${at} failed with ${n}, expected ${JSON.stringify(f)}`);
          assert.deepEqual(fieldsOf(out), f);
        }
        assert.equal(dec.offset, bytes.length);
        assert.equal(dec.next(out), -ErrorCode.Eos);
      },
    ),
    { numRuns: 500 },
  );
});
