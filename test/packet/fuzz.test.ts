/**
 * Hostile input: random and corrupted byte streams must never throw, never read at
 * or past `end`, always terminate, and report errors at offsets inside the buffer.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { type BlockContext, DecodeQuirk, decodePacket } from "../../src/packet/decode.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { syncBackward, syncForward } from "../../src/packet/sync.js";
import { IPC_PAYLOAD_BYTES, PACKET_NAMES, Packet, PacketType } from "../../src/packet/types.js";
import { ALL_TYPES, ARBITRARIES, contextFor, encode, IP_OPCODE, IP_TYPES, u8 } from "./helpers.js";
import { drain, hostileBytes, PSB_BYTES } from "./hostile.js";

const RUNS = 3000;
const BLOCKS: BlockContext[] = [0, 4, 8];
/** No errata workarounds, and all of them. */
const QUIRKS = [0, DecodeQuirk.Skd007 | DecodeQuirk.Skz84];

/** What lies past `end` in the big buffer: patterns that would change any result that read them. */
const sentinel = fc.oneof(
  fc.constantFrom("psb", "ff", "00", "ext"),
  fc.uint8Array({ minLength: 64, maxLength: 64 }),
);

function withSentinel(data: Uint8Array, end: number, s: string | Uint8Array): Uint8Array {
  const big = new Uint8Array(end + 64);
  big.set(data.subarray(0, end));
  for (let i = end; i < big.length; i++) {
    const k = i - end;
    if (typeof s !== "string") big[i] = s[k]!;
    else if (s === "psb") big[i] = PSB_BYTES[k % 16]!;
    else if (s === "ff")
      big[i] = 0xff; // CYC/TNT continuation everywhere
    else if (s === "ext")
      big[i] = k % 2 === 0 ? 0xc3 : 0x88; // MNT-ish
    else big[i] = 0;
  }
  return big;
}

function decodeAll(buf: Uint8Array, end: number, block: BlockContext, quirks: number): number[] {
  const out: number[] = [];
  const pkt = new Packet();
  for (let p = 0; p <= end; p++) {
    const n = decodePacket(buf, p, end, pkt, block, quirks);
    out.push(n);
    if (n > 0) out.push(pkt.type, pkt.lo, pkt.hi, pkt.a, pkt.b, pkt.flags, pkt.size);
  }
  return out;
}

describe("random byte streams", () => {
  test("the decode loop never throws, terminates, and keeps offsets in range", () => {
    fc.assert(
      fc.property(hostileBytes(64), fc.constantFrom(...QUIRKS), (data, quirks) => {
        drain(data, data.length, quirks);
      }),
      { numRuns: RUNS },
    );
  });

  test("uniform random bytes up to 4 KiB: the decode loop never throws and terminates", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 4096, size: "max" }),
        fc.constantFrom(...QUIRKS),
        (data, quirks) => {
          drain(data, data.length, quirks);
        },
      ),
      { numRuns: 300 },
    );
  });

  test("results never depend on bytes at or past end (decoder, sync, every offset)", () => {
    fc.assert(
      fc.property(
        hostileBytes(48).chain((d) => fc.tuple(fc.constant(d), fc.nat(d.length), sentinel)),
        fc.constantFrom(...QUIRKS),
        ([data, end, s], quirks) => {
          const exact = data.slice(0, end);
          const big = withSentinel(data, end, s);
          assert.deepEqual(drain(big, end, quirks), drain(exact, end, quirks));
          for (const block of BLOCKS) {
            assert.deepEqual(decodeAll(big, end, block, quirks), decodeAll(exact, end, block, quirks));
          }
          for (let from = 0; from <= end; from++) {
            assert.equal(syncForward(big, from, end), syncForward(exact, from, end));
            assert.equal(syncBackward(big, from, end), syncBackward(exact, from, end));
          }
          // The decoder object clamps and reads only its own range too.
          const dec = new PacketDecoder(big, { end, quirks });
          dec.syncSet(0);
          const pkt = new Packet();
          while (dec.next(pkt) > 0) assert.ok(dec.offset <= end);
        },
      ),
      { numRuns: RUNS },
    );
  });

  test("mutated valid streams: never throws, terminates", () => {
    const stream = fc
      .array(fc.oneof(...ALL_TYPES.map((t) => ARBITRARIES[t]!)), { maxLength: 30, size: "max" })
      .map((fs) => {
        const parts = [PSB_BYTES, ...fs.flatMap((f) => (f.type === PacketType.Bip ? [] : [encode(f)]))];
        return Uint8Array.from(parts.flatMap((p) => Array.from(p)));
      });
    fc.assert(
      fc.property(
        stream,
        fc.array(fc.tuple(fc.nat(), u8), { maxLength: 6 }),
        fc.constantFrom(...QUIRKS),
        (bytes, flips, quirks) => {
          for (const [at, v] of flips) if (bytes.length > 0) bytes[at % bytes.length] = v;
          drain(bytes, bytes.length, quirks);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("truncation", () => {
  for (const type of ALL_TYPES) {
    test(`every truncation of ${PACKET_NAMES[type]} is -Eos`, () => {
      fc.assert(
        fc.property(ARBITRARIES[type]!, (f) => {
          const bytes = encode(f);
          // The whole packet is in the buffer; only `end` cuts it.
          const big = Uint8Array.from([...bytes, ...bytes]);
          for (let end = 0; end < bytes.length; end++) {
            const pkt = new Packet();
            assert.equal(decodePacket(big, 0, end, pkt, contextFor(f), 0), -ErrorCode.Eos, `end ${end}`);
            assert.equal(decodePacket(bytes.slice(0, end), 0, end, pkt, contextFor(f), 0), -ErrorCode.Eos);
          }
        }),
        { numRuns: 200 },
      );
    });
  }
});

test("corrupted IPBytes: reserved values are BadPacket, others resize the packet", () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...IP_TYPES),
      fc.integer({ min: 0, max: 7 }),
      fc.uint8Array({ minLength: 0, maxLength: 10 }),
      (type, ipc, tail) => {
        const buf = Uint8Array.from([(ipc << 5) | IP_OPCODE[type]!, ...tail]);
        const pkt = new Packet();
        const n = decodePacket(buf, 0, buf.length, pkt, 0, 0);
        const payload = IPC_PAYLOAD_BYTES[ipc]!;
        if (payload < 0) assert.equal(n, -ErrorCode.BadPacket);
        else if (1 + payload > buf.length) assert.equal(n, -ErrorCode.Eos);
        else {
          assert.equal(n, 1 + payload);
          assert.equal(pkt.type, type);
          assert.equal(pkt.a, ipc);
        }
      },
    ),
    { numRuns: RUNS },
  );
});

test("errors in a stream resynchronise at the next PSB", () => {
  // PSB, PSBEND, then a reserved-IPBytes TIP, junk, then PSB, PSBEND.
  const bytes = Uint8Array.from([
    ...PSB_BYTES,
    0x02,
    0x23,
    0xad,
    0x01,
    0x02,
    0xfd,
    0x39,
    ...PSB_BYTES,
    0x02,
    0x23,
  ]);
  const events = drain(bytes, bytes.length);
  assert.deepEqual(
    events.filter((e) => e.length === 2),
    [
      [18, -ErrorCode.BadPacket],
      [41, -ErrorCode.Eos],
    ],
  );
  assert.ok(events.some((e) => e[0] === 23 && e[2] === PacketType.Psb));
});
