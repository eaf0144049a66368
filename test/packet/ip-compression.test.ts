/**
 * IP compression (SDM Table 36-18) checked against an exact BigInt model, plus the
 * last-IP rules: suppressed IPs, PSB resets, reserved IPBytes.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { ErrorCode } from "../../src/base/errors.js";
import { decodePacket } from "../../src/packet/decode.js";
import { PacketDecoder } from "../../src/packet/decoder.js";
import { compressIp, encodePacket, PacketEncoder } from "../../src/packet/encode.js";
import { LastIp } from "../../src/packet/last-ip.js";
import { IPC_PAYLOAD_BYTES, Ipc, Packet, PacketType } from "../../src/packet/types.js";
import { IP_OPCODE, IP_TYPES, makePacket } from "./helpers.js";

const M64 = (1n << 64n) - 1n;
const M48 = (1n << 48n) - 1n;

/** What a decoder reconstructs from `payload` with IPBytes `ipc` against `last`. */
function reconstruct(last: bigint, ipc: number, payload: bigint): bigint {
  switch (ipc) {
    case Ipc.Update16:
      return (last & (M64 ^ 0xffffn)) | (payload & 0xffffn);
    case Ipc.Update32:
      return (last & (M64 ^ 0xffffffffn)) | (payload & 0xffffffffn);
    case Ipc.Sext48: {
      const v = payload & M48;
      return v & (1n << 47n) ? v | (M64 ^ M48) : v;
    }
    case Ipc.Update48:
      return (last & (M64 ^ M48)) | (payload & M48);
    case Ipc.Full:
      return payload & M64;
  }
  throw new Error(`ipc ${ipc}`);
}

const ENCODINGS = [Ipc.Update16, Ipc.Update32, Ipc.Sext48, Ipc.Update48, Ipc.Full];

/** The encodings that reconstruct `target`, shortest first, sext48 before update48. */
function validEncodings(last: bigint, have: boolean, target: bigint): number[] {
  return ENCODINGS.filter(
    (ipc) => (have || ipc === Ipc.Sext48 || ipc === Ipc.Full) && reconstruct(last, ipc, target) === target,
  ).sort(
    (x, y) =>
      IPC_PAYLOAD_BYTES[x]! - IPC_PAYLOAD_BYTES[y]! || (x === Ipc.Sext48 ? -1 : y === Ipc.Sext48 ? 1 : 0),
  );
}

function lastIpOf(ip: bigint, have: boolean): LastIp {
  const last = new LastIp();
  last.lo = Number(ip & 0xffffffffn);
  last.hi = Number(ip >> 32n);
  last.have = have;
  return last;
}

const hiOf = (ip: bigint) => Number(ip >> 32n);
const loOf = (ip: bigint) => Number(ip & 0xffffffffn);

/** Compress `target` against `last` and check it against the model. Returns the ipc. */
function checkCompression(lastIp: bigint, have: boolean, target: bigint): number {
  const last = lastIpOf(lastIp, have);
  const pkt = makePacket({ type: PacketType.Tip });
  compressIp(last, hiOf(target), loOf(target), pkt);

  const valid = validEncodings(lastIp, have, target);
  assert.equal(pkt.a, valid[0], `last ${lastIp.toString(16)} have ${have} target ${target.toString(16)}`);

  // The packet encodes, decodes, and the decoded payload rebuilds the target.
  const buf = new Uint8Array(9);
  const size = encodePacket(buf, 0, pkt);
  assert.equal(size, 1 + IPC_PAYLOAD_BYTES[pkt.a]!);
  const out = new Packet();
  assert.equal(decodePacket(buf, 0, size, out, 0, 0), size);
  assert.equal(last.update(out), 0);
  assert.equal(last.ip, target);
  // compressIp only reads the last IP.
  assert.equal(lastIpOf(lastIp, have).ip, lastIp);
  return pkt.a;
}

const ip64 = fc.bigInt({ min: 0n, max: M64 });
const sext = (v: bigint) => (v & (1n << 47n) ? v | (M64 ^ M48) : v & M48);
/** Interesting IPs: kernel, user, canonical, non-canonical, random. */
const anyIp = fc.oneof(
  ip64,
  fc.bigInt({ min: 0n, max: M48 }).map(sext),
  fc.bigInt({ min: 0xffffffff80000000n, max: 0xffffffffffffffffn }),
  fc.bigInt({ min: 0x400000n, max: 0x7fffffffffffn }),
  fc.bigInt({ min: 0x0000800000000000n, max: 0xffff7fffffffffffn }),
  fc.constantFrom(
    0n,
    M64,
    0xffffffff81000000n,
    0x00007fffffffffffn,
    0xffff800000000000n,
    0x0000800000000000n,
  ),
);

describe("compressIp", () => {
  test("property: shortest valid encoding, and it rebuilds the target", () => {
    const seen = new Set<number>();
    fc.assert(
      fc.property(
        anyIp,
        fc.boolean(),
        // Targets near the last IP (so the update encodings apply) or anywhere.
        fc.oneof(
          fc
            .tuple(fc.constantFrom(0xffffn, 0xffffffffn, M48, M64, 0n), ip64)
            .map(([m, r]) => ({ rel: m & r })),
          // One or two flipped bits find every field boundary.
          fc
            .tuple(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 0, max: 63 }), fc.boolean())
            .map(([i, j, two]) => ({ rel: (1n << BigInt(i)) | (two ? 1n << BigInt(j) : 0n) })),
          anyIp.map((ip) => ({ abs: ip })),
        ),
        (lastIp, have, t) => {
          const target = "rel" in t ? lastIp ^ t.rel : t.abs;
          seen.add(checkCompression(lastIp, have, target));
        },
      ),
      { numRuns: 20000 },
    );
    assert.deepEqual([...seen].sort(), [...ENCODINGS].sort(), "every encoding exercised");
  });

  const cases: [string, bigint, boolean, bigint, number][] = [
    ["kernel, same page", 0xffffffff81000000n, true, 0xffffffff81001234n, Ipc.Update16],
    ["kernel, same 4 GiB", 0xffffffff81000000n, true, 0xffffffffa0000000n, Ipc.Update32],
    ["kernel to user", 0xffffffff81000000n, true, 0x00007f0012345678n, Ipc.Sext48],
    ["user to kernel", 0x0000555555554000n, true, 0xffffffff81000000n, Ipc.Sext48],
    ["non-canonical, same top 16 bits", 0x0000123400000000n, true, 0x0000800000001000n, Ipc.Update48],
    ["non-canonical, no last IP", 0x0000123400000000n, false, 0x0000800000001000n, Ipc.Full],
    ["non-canonical, different top bits", 0x1234000000000000n, true, 0x0000800000001000n, Ipc.Full],
    ["canonical, no last IP", 0xffffffff81000000n, false, 0xffffffff81000010n, Ipc.Sext48],
    ["same IP", 0x401000n, true, 0x401000n, Ipc.Update16],
    [
      "bit 47 set, bits 63:48 clear: sext48 invalid, update48 valid",
      0n,
      true,
      0x0000800000000000n,
      Ipc.Update48,
    ],
    ["all ones", 0n, true, M64, Ipc.Sext48],
    ["high dword only", 0x00000001ffffffffn, true, 0x0000000200000000n, Ipc.Sext48],
    ["non-canonical, same high dword", 0x8000000000000000n, true, 0x8000000012340000n, Ipc.Update32],
  ];
  for (const [name, lastIp, have, target, ipc] of cases) {
    test(name, () => assert.equal(checkCompression(lastIp, have, target), ipc));
  }
});

describe("last IP", () => {
  test("a suppressed IP leaves the last IP untouched", () => {
    for (const type of IP_TYPES) {
      const last = lastIpOf(0xffffffff81000000n, true);
      const buf = Uint8Array.of((Ipc.Suppressed << 5) | IP_OPCODE[type]!);
      const pkt = new Packet();
      assert.equal(decodePacket(buf, 0, 1, pkt, 0, 0), 1);
      assert.equal(pkt.type, type);
      assert.equal(pkt.a, Ipc.Suppressed);
      assert.equal(last.update(pkt), 0);
      assert.equal(last.ip, 0xffffffff81000000n);
      assert.equal(last.have, true);
      assert.equal(last.status(), -ErrorCode.IpSuppressed);
      // The next real IP clears the suppressed state.
      pkt.a = Ipc.Update16;
      pkt.lo = 0x1234;
      assert.equal(last.update(pkt), 0);
      assert.equal(last.status(), 0);
      assert.equal(last.ip, 0xffffffff81001234n);
    }
  });

  test("reserved IPBytes 5 and 7 decode as BadPacket for every IP packet", () => {
    for (const low of Object.values(IP_OPCODE)) {
      for (const ipc of [5, 7]) {
        const buf = new Uint8Array(16);
        buf[0] = (ipc << 5) | low;
        assert.equal(decodePacket(buf, 0, buf.length, new Packet(), 0, 0), -ErrorCode.BadPacket);
      }
    }
  });

  test("LastIp.update rejects reserved IPBytes and keeps its state", () => {
    const last = lastIpOf(0x401000n, true);
    for (const a of [5, 7, 8]) {
      assert.equal(last.update(makePacket({ type: PacketType.Tip, a, lo: 0xffff })), -ErrorCode.BadPacket);
      assert.equal(last.ip, 0x401000n);
    }
  });

  test("PacketEncoder: suppressed IPs keep, PSB resets the last IP", () => {
    const enc = new PacketEncoder();
    assert.equal(enc.emitIp(PacketType.TipPge, 0xffffffff, 0x81000000), 7); // sext48, no last IP
    assert.equal(enc.emitSuppressed(PacketType.TipPgd), 1);
    assert.equal(enc.last.ip, 0xffffffff81000000n);
    assert.equal(enc.emitIp(PacketType.Fup, 0xffffffff, 0x81000010), 3); // update16 still valid
    enc.emit(makePacket({ type: PacketType.Psb }));
    assert.equal(enc.last.have, false);
    assert.equal(enc.emitIp(PacketType.Fup, 0xffffffff, 0x81000020), 7); // sext48 again
    assert.equal(enc.emitIp(PacketType.Fup, 0x00001234, 0), 7); // sext48
    assert.equal(enc.emitIp(PacketType.Tip, 0x00008000, 0), 7); // non-canonical: update48 against the FUP
    enc.emit(makePacket({ type: PacketType.Psb }));
    assert.equal(enc.emitIp(PacketType.Tip, 0x00008000, 0), 9); // non-canonical, no last IP: full
  });

  test("property: a compressed IP stream decodes back to every IP", () => {
    type Step = { kind: "ip"; type: PacketType; ip: bigint } | { kind: "suppressed" } | { kind: "psb" };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 8,
        arbitrary: fc
          .tuple(fc.constantFrom(...IP_TYPES), anyIp)
          .map(([type, ip]) => ({ kind: "ip", type, ip }) as Step),
      },
      { weight: 1, arbitrary: fc.constant<Step>({ kind: "suppressed" }) },
      { weight: 1, arbitrary: fc.constant<Step>({ kind: "psb" }) },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60, size: "max" }), (steps) => {
        const enc = new PacketEncoder(8);
        for (const s of steps) {
          if (s.kind === "ip") assert.ok(enc.emitIp(s.type, hiOf(s.ip), loOf(s.ip)) > 0);
          else if (s.kind === "suppressed") enc.emitSuppressed(PacketType.Tip);
          else enc.emit(makePacket({ type: PacketType.Psb }));
        }
        const dec = new PacketDecoder(enc.bytes());
        dec.syncSet(0);
        const last = new LastIp();
        const pkt = new Packet();
        for (const s of steps) {
          assert.ok(dec.next(pkt) > 0);
          if (s.kind === "psb") {
            assert.equal(pkt.type, PacketType.Psb);
            last.reset();
            continue;
          }
          const before = last.ip;
          assert.equal(last.update(pkt), 0);
          if (s.kind === "ip") assert.equal(last.ip, s.ip);
          else assert.equal(last.ip, before);
        }
        assert.equal(dec.next(pkt), -ErrorCode.Eos);
      }),
      { numRuns: 1000 },
    );
  });
});
