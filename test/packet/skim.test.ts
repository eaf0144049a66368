/** Stepping over the packets a header byte decides, and the statistics and quiet dumps built on it. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { type BlockContext, DecodeQuirk, decodePacket, nextBlockContext } from "../../src/packet/decode.js";
import { skimPackets } from "../../src/packet/skim.js";
import { collectStats } from "../../src/packet/stats.js";
import { syncForward } from "../../src/packet/sync.js";
import { TraceBytes } from "../../src/packet/trace-bytes.js";
import { Flag, PACKET_TYPE_COUNT, Packet, PacketType } from "../../src/packet/types.js";
import { encode } from "./helpers.js";
import { hostileBytes } from "./hostile.js";

const QUIRKS = [0, DecodeQuirk.Skd007, DecodeQuirk.Skz84, DecodeQuirk.Skd007 | DecodeQuirk.Skz84];

/** Skim the one packet at the start of `buf`: where the skim stopped, and what it counted. */
function skimOne(buf: Uint8Array, end = buf.length) {
  const counts = new Float64Array(PACKET_TYPE_COUNT);
  const bytes = new Float64Array(PACKET_TYPE_COUNT);
  const to = skimPackets(buf, 0, Math.min(1, end), end, counts, bytes);
  return { to, counts, bytes };
}

/** A skimmed packet is exactly what decodePacket gives there, in any quirk mode, and leaves no block open. */
function checkAgainstDecode(buf: Uint8Array): void {
  const { to, counts, bytes } = skimOne(buf);
  if (to === 0) return;
  const pkt = new Packet();
  for (const quirks of QUIRKS) {
    assert.equal(decodePacket(buf, 0, buf.length, pkt, 0, quirks), to, `header 0x${buf[0]!.toString(16)}`);
    assert.equal(counts[pkt.type], 1);
    assert.equal(bytes[pkt.type], to);
    assert.equal(nextBlockContext(pkt, 0), 0);
  }
}

describe("skimPackets", () => {
  test("every header byte, before runs of 0x00 and of 0xff: skipped as decodePacket decodes it, or left", () => {
    for (let opc = 0; opc < 256; opc++) {
      for (const fill of [0x00, 0xff]) {
        const buf = new Uint8Array(16).fill(fill);
        buf[0] = opc;
        checkAgainstDecode(buf);
      }
    }
  });

  test("random header bytes and tails: skipped as decodePacket decodes them, or left", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (buf) => checkAgainstDecode(buf)),
      { numRuns: 20000 },
    );
  });

  test("skips the common packets, and leaves those whose next bytes decide them", () => {
    const skipped = (bytes: Uint8Array) => skimOne(bytes).to === bytes.length;
    assert.ok(skipped(encode({ type: PacketType.Pad })));
    assert.ok(skipped(encode({ type: PacketType.Tnt8, a: 5, lo: 0b10110 })));
    for (const a of [0, 1, 2, 3, 4, 6]) {
      for (const type of [PacketType.Tip, PacketType.TipPge, PacketType.TipPgd, PacketType.Fup])
        assert.ok(
          skipped(encode({ type, a, lo: a === 0 ? 0 : 0x1234, hi: a === 6 ? 0x12 : 0 })),
          `type ${type} ipc ${a}`,
        );
    }
    assert.ok(skipped(encode({ type: PacketType.Mtc, a: 7 })));
    assert.ok(skipped(encode({ type: PacketType.Tsc, lo: 1, hi: 2 })));
    assert.ok(skipped(encode({ type: PacketType.Cyc, lo: 3 })));
    assert.ok(!skipped(encode({ type: PacketType.Cyc, lo: 300 })));
    assert.ok(!skipped(encode({ type: PacketType.Psb })));
    assert.ok(!skipped(encode({ type: PacketType.ModeExec })));
    assert.ok(!skipped(encode({ type: PacketType.Tnt64, a: 40, lo: 1 })));
  });

  test("stops at a packet the end cuts off, and at the first packet boundary at or after the limit", () => {
    const tip = encode({ type: PacketType.Tip, a: 6, lo: 0x1000, hi: 0 });
    assert.equal(skimOne(tip, tip.length - 1).to, 0);
    const run = Uint8Array.from([0x04, 0x06, ...tip, 0x00, 0x00]);
    const counts = new Float64Array(PACKET_TYPE_COUNT);
    const bytes = new Float64Array(PACKET_TYPE_COUNT);
    assert.equal(skimPackets(run, 0, 3, run.length, counts, bytes), 2 + tip.length);
    assert.equal(counts[PacketType.Tnt8], 2);
    assert.equal(bytes[PacketType.Tip], tip.length);
    assert.equal(skimPackets(run, 0, run.length, run.length, counts, bytes), run.length);
    assert.equal(counts[PacketType.Pad], 2);
  });
});

/** The statistics as a plain decode loop gives them, a packet at a time (the model collectStats must match). */
function modelStats(buf: Uint8Array) {
  const counts = new Float64Array(PACKET_TYPE_COUNT);
  const typeBytes = new Float64Array(PACKET_TYPE_COUNT);
  const psbOffsets: number[] = [];
  const errors: number[] = [];
  const pkt = new Packet();
  let block: BlockContext = 0;
  let pos = syncForward(buf, 0);
  while (pos >= 0 && pos < buf.length) {
    const size = decodePacket(buf, pos, buf.length, pkt, block, 0);
    if (size === -ErrorCode.Eos) break;
    if (size < 0) {
      errors.push(pos);
      pos = syncForward(buf, pos + 1);
      block = 0;
      continue;
    }
    counts[pkt.type]!++;
    typeBytes[pkt.type]! += size;
    if (pkt.type === PacketType.Psb) psbOffsets.push(pos);
    block = nextBlockContext(pkt, block);
    pos += size;
  }
  const packets = counts.reduce((a, b) => a + b, 0);
  return { packets, counts, typeBytes, psbOffsets, errors };
}

test("collectStats, read in small windows, counts what a decode a packet at a time does", () => {
  fc.assert(
    fc.property(hostileBytes(120), fc.integer({ min: 16, max: 96 }), (buf, window) => {
      const memory = { size: buf.length, read: (o: number, n: number) => buf.slice(o, o + n) };
      const s = collectStats(TraceBytes.read(memory, window), { maxErrors: 1000 });
      const want = modelStats(buf);
      assert.equal(s.packets, want.packets);
      assert.deepEqual(s.counts, want.counts);
      assert.deepEqual(s.typeBytes, want.typeBytes);
      assert.deepEqual(s.psbOffsets, want.psbOffsets);
      assert.deepEqual(
        s.errors.map((e) => e.offset),
        want.errors,
      );
    }),
    { numRuns: 500 },
  );
});

test("collectStats in a BBP block counts BIPs, whose header looks like a TNT-8", () => {
  const bytes = Uint8Array.from([
    ...encode({ type: PacketType.Psb }),
    ...encode({ type: PacketType.Bbp, a: 1, flags: Flag.Bip4 }),
    ...encode({ type: PacketType.Bip, a: 3, b: 4, lo: 0xc9c9c9c9 }),
    ...encode({ type: PacketType.Bep }),
    ...encode({ type: PacketType.Tnt8, a: 2, lo: 1 }),
  ]);
  const s = collectStats(bytes);
  assert.equal(s.errorCount, 0);
  assert.deepEqual(s.counts, modelStats(bytes).counts);
  assert.equal(s.counts[PacketType.Bip], 1);
});
