/**
 * Hostile-input helpers: biased byte-stream generators, a reference model of PSB
 * synchronisation, and a decode loop that records everything it sees.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { isPsbAt } from "../../src/packet/sync.js";
import { Packet } from "../../src/packet/types.js";
import { anyPacket, encode } from "./helpers.js";

/** A prefix of `bytes` (any length) with up to `maxEdits` bytes in it set to any value. */
export function cutAndEdited(bytes: Uint8Array, maxEdits = 2): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(
      fc.nat(bytes.length),
      fc.array(fc.tuple(fc.nat(Math.max(0, bytes.length - 1)), fc.nat(255)), { maxLength: maxEdits }),
    )
    .map(([cut, edits]) => {
      const t = bytes.slice(0, cut);
      for (const [at, v] of edits) if (at < t.length) t[at] = v;
      return t;
    });
}

export const PSB_BYTES = Uint8Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 0x02 : 0x82));

/** Opcode-ish bytes that reach every decoder branch more often than uniform bytes do. */
const INTERESTING = [
  0x00, 0x02, 0x82, 0x23, 0x03, 0x07, 0x04, 0x0c, 0x19, 0x59, 0x99, 0xd9, 0x0d, 0x1d, 0x11, 0x01, 0xad, 0xfd,
  0xc3, 0x88, 0x43, 0xa3, 0x73, 0xc8, 0x12, 0x32, 0x52, 0xb2, 0x62, 0xe2, 0x63, 0x33, 0xb3, 0x13, 0x53, 0xc2,
  0x22, 0xa2, 0xf3, 0x83, 0xff, 0xfe,
];

const chunk: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 255 }).map((b) => [b]) },
  { weight: 6, arbitrary: fc.constantFrom(...INTERESTING).map((b) => [b]) },
  { weight: 4, arbitrary: anyPacket.map((f) => Array.from(encode(f))) },
  { weight: 1, arbitrary: fc.constant(Array.from(PSB_BYTES)) },
  // A run of PSB pattern pairs, in either phase, of any length.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 24 }), fc.boolean())
      .map(([n, odd]) =>
        Array.from({ length: 2 * n }, (_, i) => ((i + (odd ? 1 : 0)) % 2 === 0 ? 0x02 : 0x82)),
      ),
  },
);

/** Byte streams mixing random bytes, opcodes, valid packets and PSB fragments. */
export function hostileBytes(maxChunks: number): fc.Arbitrary<Uint8Array> {
  return fc.array(chunk, { maxLength: maxChunks, size: "max" }).map((cs) => Uint8Array.from(cs.flat()));
}

/**
 * Reference model of forward sync: the first offset >= from where a whole PSB ends a
 * run of 02 82 pairs (a longer run counts as one PSB, its last 16 bytes, as in libipt).
 */
export function modelSyncForward(buf: Uint8Array, from: number, end: number): number {
  for (let p = from; p + 16 <= end; p++) if (isRunPsb(buf, p, end)) return p;
  return -ErrorCode.Eos;
}

/** A whole PSB at `p` that is not followed by another 02 82 pair before `end`. */
export function isRunPsb(buf: Uint8Array, p: number, end: number): boolean {
  if (!isPsbAt(buf, p, end)) return false;
  return !(p + 17 < end && buf[p + 16] === 0x02 && buf[p + 17] === 0x82);
}

const DECODE_ERRORS = new Set([-ErrorCode.Eos, -ErrorCode.BadOpcode, -ErrorCode.BadPacket]);

/** Everything a decode loop saw, comparable with deepEqual. */
export type Event = readonly number[];

/**
 * Sync, decode until an error, resync, ... until the end. Checks the loop's
 * invariants as it goes and returns what it saw.
 */
export function drain(buf: Uint8Array, end: number, quirks = 0): Event[] {
  const dec = new PacketDecoder(buf, { end, quirks });
  const pkt = new Packet();
  const events: Event[] = [];
  // Each packet advances >= 1 byte; each resync may step back <= 15 bytes but then
  // passes the error, so this bound is generous.
  const maxSteps = 20 * end + 20;
  let steps = 0;
  let sync = dec.syncForward();
  events.push([-1, sync, dec.offset]);
  while (sync === 0) {
    assert.ok(++steps < maxSteps, "decode loop does not terminate");
    const at = dec.offset;
    const n = dec.next(pkt);
    if (n > 0) {
      assert.equal(dec.offset, at + n);
      assert.ok(at + n <= end, `packet at ${at} of size ${n} runs past end ${end}`);
      events.push([at, n, pkt.type, pkt.lo, pkt.hi, pkt.a, pkt.b, pkt.flags]);
      continue;
    }
    assert.ok(DECODE_ERRORS.has(n), `unexpected error ${n}`);
    assert.ok(at >= 0 && at <= end, `error offset ${at} outside [0, ${end}]`);
    if (n !== -ErrorCode.Eos) assert.ok(at < end);
    events.push([at, n]);
    sync = dec.syncForward();
    events.push([-1, sync, dec.offset]);
    if (sync === 0) {
      // Progress: the PSB found lies (at least partly) beyond the error.
      assert.ok(dec.offset + 16 > at, `resync to ${dec.offset} does not pass error at ${at}`);
    } else {
      assert.equal(sync, -ErrorCode.Eos);
    }
  }
  return events;
}
