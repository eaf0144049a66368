/**
 * PSB synchronisation: against a reference model, PSBs hidden inside other packets,
 * huge PAD runs, long 02 82 runs, and backward sync.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { isPsbAt, syncBackward, syncForward } from "../../src/packet/sync.js";
import { Packet, PacketType } from "../../src/packet/types.js";
import { ALL_TYPES, ARBITRARIES, encode } from "./helpers.js";
import { hostileBytes, isRunPsb, modelSyncForward, PSB_BYTES } from "./hostile.js";

/** `n` pattern pairs, starting with 02 (or with 82 when `odd`). */
function pairs(n: number, odd = false): number[] {
  return Array.from({ length: 2 * n }, (_, i) => ((i + (odd ? 1 : 0)) % 2 === 0 ? 0x02 : 0x82));
}

const PSBEND = [0x02, 0x23];

describe("syncForward", () => {
  test("property: equals the reference model for every start and end", () => {
    fc.assert(
      fc.property(
        hostileBytes(60).chain((d) => fc.tuple(fc.constant(d), fc.nat(d.length), fc.nat(d.length))),
        ([buf, x, y]) => {
          const end = Math.max(x, y);
          const from = Math.min(x, y);
          assert.equal(syncForward(buf, from, end), modelSyncForward(buf, from, end));
        },
      ),
      { numRuns: 5000 },
    );
  });

  test("finds a PSB that starts inside another packet's payload", () => {
    const nonPsb = fc.oneof(...ALL_TYPES.filter((t) => t !== PacketType.Psb).map((t) => ARBITRARIES[t]!));
    fc.assert(
      fc.property(fc.array(nonPsb, { minLength: 1, maxLength: 12, size: "max" }), fc.nat(), (fs, cut) => {
        const stream = fs.flatMap((f) => Array.from(encode(f)));
        // Overwrite from inside some packet's bytes with PSB, PSBEND.
        const s = 1 + (cut % stream.length);
        const bytes = Uint8Array.from([...stream.slice(0, s), ...PSB_BYTES, ...PSBEND]);
        assert.equal(syncForward(bytes, 0), s);
        const dec = new PacketDecoder(bytes);
        assert.equal(dec.syncForward(), 0);
        assert.equal(dec.offset, s);
      }),
      { numRuns: 2000 },
    );
  });

  test("after an error inside a PSB, the decoder finds that PSB again", () => {
    // A TSC whose payload holds the first 4 bytes of a PSB: decoding the TSC lands mid-PSB.
    const bytes = Uint8Array.from([0x19, 0, 0, 0, ...PSB_BYTES, ...PSBEND, 0, 0, 0, 0, 0, 0]);
    const dec = new PacketDecoder(bytes);
    dec.syncSet(0);
    const pkt = new Packet();
    assert.equal(dec.next(pkt), 8);
    assert.equal(pkt.type, PacketType.Tsc);
    assert.equal(dec.next(pkt), -ErrorCode.BadPacket);
    assert.equal(dec.offset, 8);
    assert.equal(dec.syncForward(), 0);
    assert.equal(dec.offset, 4);
    assert.equal(dec.next(pkt), 16);
    assert.equal(pkt.type, PacketType.Psb);
  });

  test("repeated decoder.syncForward visits each PSB once, in order", () => {
    const bytes = Uint8Array.from([
      ...pairs(8),
      ...PSBEND,
      0x59,
      0x01,
      ...pairs(8),
      ...PSBEND,
      0x00,
      0x00,
      0x00,
      ...pairs(8),
    ]);
    const dec = new PacketDecoder(bytes);
    const seen: number[] = [];
    for (let i = 0; i < 10 && dec.syncForward() === 0; i++) seen.push(dec.offset);
    assert.deepEqual(seen, [0, 20, 41]);
    assert.equal(dec.syncForward(), -ErrorCode.Eos);
  });

  test("10 MB of PAD then a PSB: sync finds it and the PADs decode in linear time", () => {
    const n = 10 * 1024 * 1024;
    const bytes = new Uint8Array(n + 18);
    bytes.set(PSB_BYTES, n);
    bytes.set(PSBEND, n + 16);
    let t = performance.now();
    assert.equal(syncForward(bytes, 0), n);
    const syncMs = performance.now() - t;

    const dec = new PacketDecoder(bytes);
    dec.syncSet(0);
    const pkt = new Packet();
    let pads = 0;
    t = performance.now();
    while (dec.next(pkt) === 1 && pkt.type === PacketType.Pad) pads++;
    const padMs = performance.now() - t;
    assert.equal(pads, n);
    assert.equal(pkt.type, PacketType.Psb);
    assert.equal(dec.offset, n + 16);
    // Linear: ~10^7 one-byte steps; a quadratic decoder would take hours.
    assert.ok(syncMs < 5000 && padMs < 10000, `sync ${syncMs.toFixed(0)} ms, pads ${padMs.toFixed(0)} ms`);
  });

  test("a run of 02 82 pairs syncs to its last 16 bytes, as libipt does", () => {
    for (const prefix of [0, 1, 2, 3, 5, 8, 13]) {
      for (const n of [7, 8, 9, 10, 15, 16, 17, 33, 100]) {
        for (const [before, after] of [
          [[], []],
          [[0x82], [0x02]], // lone halves of a pair do not extend the run
          [
            [0x02, 0x82],
            [0x02, 0x82],
          ], // whole pairs do
        ] as const) {
          const bytes = Uint8Array.from([
            ...new Array(prefix).fill(0x00),
            ...before,
            ...pairs(n),
            ...after,
            0x00,
          ]);
          const extraPairs = (before.length === 2 ? 1 : 0) + (after.length === 2 ? 1 : 0);
          const runEnd = prefix + before.length + 2 * n + (after.length === 2 ? 2 : 0);
          const want = n + extraPairs >= 8 ? runEnd - 16 : -ErrorCode.Eos;
          assert.equal(
            syncForward(bytes, 0),
            want,
            `prefix ${prefix} n ${n} before ${before} after ${after}`,
          );
          if (want >= 0) assert.ok(isRunPsb(bytes, want, bytes.length));
        }
      }
    }
  });

  test("a 1 MB run of 02 82: sync from anywhere in it lands on the last 16 bytes", () => {
    const n = 512 * 1024;
    const bytes = Uint8Array.from([0x00, ...pairs(n), ...PSBEND]);
    const last = 1 + 2 * n - 16;
    for (const from of [0, 1, 2, 1000, 1001, n, last - 1, last]) assert.equal(syncForward(bytes, from), last);
    assert.equal(syncForward(bytes, last + 1), -ErrorCode.Eos);
  });

  test("bad arguments", () => {
    const bytes = Uint8Array.from(PSB_BYTES);
    assert.equal(syncForward(bytes, -1), -ErrorCode.Internal);
    assert.equal(syncForward(bytes, 17), -ErrorCode.Internal);
    assert.equal(syncForward(bytes, 16), -ErrorCode.Eos);
    assert.equal(syncForward(bytes, 0, 15), -ErrorCode.Eos);
    assert.equal(syncBackward(bytes, 17), -ErrorCode.Internal);
    assert.equal(syncBackward(bytes, -1), -ErrorCode.Internal);
    assert.equal(isPsbAt(bytes, 0, 16), true);
    assert.equal(isPsbAt(bytes, 0, 15), false);
    assert.equal(isPsbAt(bytes, -1, 16), false);
  });
});

describe("syncBackward", () => {
  test("from every offset, with PSBs separated by PADs", () => {
    const psbs = [0, 19, 40, 57, 90];
    const bytes = new Uint8Array(120);
    for (const p of psbs) bytes.set(PSB_BYTES, p);
    for (let from = 0; from <= bytes.length; from++) {
      // The search looks at whole 8-byte windows (aligned to the buffer) ending at or
      // before `from` rounded down to 8; a PSB's first such window starts at (p+7)&~7.
      const visible = psbs.filter((p) => ((p + 7) & ~7) + 8 <= (from & ~7));
      const want = visible.length ? visible[visible.length - 1]! : -ErrorCode.Eos;
      assert.equal(syncBackward(bytes, from), want, `from ${from}`);
    }
  });

  test("property: a run PSB before `from`, and no later whole PSB was skipped", () => {
    fc.assert(
      fc.property(
        hostileBytes(60).chain((d) => fc.tuple(fc.constant(d), fc.nat(d.length))),
        ([buf, from]) => {
          const r = syncBackward(buf, from);
          // Every run PSB lying wholly before from&~7 has a window the search visits.
          let latest = -ErrorCode.Eos;
          for (let p = 0; p + 16 <= (from & ~7); p++) if (isRunPsb(buf, p, buf.length)) latest = p;
          if (r < 0) {
            assert.equal(r, -ErrorCode.Eos);
            assert.equal(latest, -ErrorCode.Eos, `missed the PSB at ${latest}`);
            return;
          }
          assert.ok(isRunPsb(buf, r, buf.length), `${r} is not a PSB`);
          assert.ok(r >= latest, `returned ${r} but the PSB at ${latest} is later`);
          assert.ok(r < from, `returned ${r}, not before ${from}`);
        },
      ),
      { numRuns: 5000 },
    );
  });

  test("repeated decoder.syncBackward moves strictly backwards (back-to-back PSBs)", () => {
    // PSB, PSB, PSBEND, PADs, PSB, PSBEND: the first two form one 32-byte run.
    const bytes = Uint8Array.from([
      ...PSB_BYTES,
      ...PSB_BYTES,
      ...PSBEND,
      0,
      0,
      0,
      0,
      0,
      0,
      ...PSB_BYTES,
      ...PSBEND,
    ]);
    const dec = new PacketDecoder(bytes);
    const seen: number[] = [];
    for (let i = 0; i < 5 && dec.syncBackward() === 0; i++) seen.push(dec.offset);
    assert.deepEqual(seen, [40, 16]);
  });

  test("from inside a long 02 82 run: linear time, and the run's PSB is not before `from`", () => {
    const n = 64 * 1024; // 128 KiB of pattern
    const bytes = Uint8Array.from([
      ...PSB_BYTES,
      ...PSBEND,
      ...new Array(14).fill(0),
      ...pairs(n),
      ...PSBEND,
    ]);
    const from = 32 + n; // the middle of the run
    const t = performance.now();
    const r = syncBackward(bytes, from);
    const ms = performance.now() - t;
    // The run's only PSB is its last 16 bytes, after `from`; the previous one is at 0.
    assert.equal(r, 0);
    assert.ok(ms < 500, `syncBackward took ${ms.toFixed(0)} ms over a 128 KiB run`);
  });
});
