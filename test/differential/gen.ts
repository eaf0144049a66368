/**
 * Inputs for the libipt differential test: valid packet streams (fast-check, encoded
 * with ptkit's {@link PacketEncoder}) restricted to what libipt 2.0.5 knows, and seeded
 * garbage (random bytes, opcode soup, corrupted valid streams, PSB fragments).
 */
import fc from "fast-check";
import { Flag, IPC_PAYLOAD_BYTES, Packet, PacketEncoder, PacketType } from "../../src/packet/index.js";
import { concatBytes } from "../../src/perf/bytes.js";

/** One step of a stream: a packet given by its fields, or an IP packet compressed against the last IP. */
export type Op =
  | { kind: "pkt"; type: PacketType; lo: number; hi: number; a: number; b: number; flags: number }
  /**
   * `rel` picks how the IP relates to the encoder's last IP, so that every compression
   * occurs: 0 same bits 63:16, 1 same bits 63:32, 2 sign-extended 48-bit, 3 same bits
   * 63:48, 4 anything, 5 suppressed.
   */
  | { kind: "ip"; type: PacketType; rel: number; hi: number; lo: number };

const u32 = fc.integer({ min: 0, max: 0xffffffff });

/** A value below 2^bits as [hi, lo], spread over all bit lengths, extremes included. */
function bits(maxBits: number): fc.Arbitrary<[number, number]> {
  const top: [number, number] =
    maxBits > 32 ? [maxBits >= 64 ? 0xffffffff : 2 ** (maxBits - 32) - 1, 0xffffffff] : [0, 2 ** maxBits - 1];
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .tuple(fc.integer({ min: 0, max: maxBits }), u32, u32)
        .map(([w, hi, lo]) => mask(w, hi, lo)),
    },
    { weight: 1, arbitrary: fc.constantFrom<[number, number]>([0, 0], top) },
  );
}

/** hi:lo truncated to its low `w` bits. */
function mask(w: number, hi: number, lo: number): [number, number] {
  if (w >= 64) return [hi >>> 0, lo >>> 0];
  if (w >= 32) return [w === 32 ? 0 : (hi & (2 ** (w - 32) - 1)) >>> 0, lo >>> 0];
  return [0, w === 0 ? 0 : (lo & (2 ** w - 1)) >>> 0];
}

const pkt = (type: PacketType, f: Partial<Omit<Extract<Op, { kind: "pkt" }>, "kind" | "type">> = {}): Op => ({
  kind: "pkt",
  type,
  lo: f.lo ?? 0,
  hi: f.hi ?? 0,
  a: f.a ?? 0,
  b: f.b ?? 0,
  flags: f.flags ?? 0,
});

/** Any subset of `flags`. */
const flagSet = (...flags: number[]): fc.Arbitrary<number> =>
  fc.subarray(flags).map((s) => s.reduce((acc, f) => acc | f, 0));

const IP_TYPES = [PacketType.Tip, PacketType.TipPge, PacketType.TipPgd, PacketType.Fup] as const;
const ipType = fc.constantFrom<PacketType>(...IP_TYPES);
const nibble = fc.integer({ min: 0, max: 15 });
const byte = fc.integer({ min: 0, max: 0xff });

/**
 * The widest CYC value: 5 bits in the opcode byte and 7 in each of at most 8 extension
 * bytes. libipt (2.0.5 and HEAD) and ptkit's decoder reject a 9th extension byte with
 * bad_packet, and ptkit's encoder rejects wider values.
 */
export const CYC_BITS = 61;

/** Every packet type libipt 2.0.5 knows, over all field ranges ptkit's encoder accepts. */
export const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .constantFrom(PacketType.Pad, PacketType.PsbEnd, PacketType.Ovf, PacketType.Stop)
      .map((t) => pkt(t)),
  },
  { weight: 2, arbitrary: fc.constant(pkt(PacketType.Psb)) },
  {
    weight: 4,
    arbitrary: fc
      .integer({ min: 1, max: 6 })
      .chain((n) => bits(n).map(([, lo]) => pkt(PacketType.Tnt8, { a: n, lo }))),
  },
  {
    weight: 2,
    arbitrary: fc
      .integer({ min: 1, max: 47 })
      .chain((n) => bits(n).map(([hi, lo]) => pkt(PacketType.Tnt64, { a: n, hi, lo }))),
  },
  // Raw IP packets: any IPBytes encoding with any payload of its size.
  {
    weight: 3,
    arbitrary: fc
      .tuple(ipType, fc.constantFrom(0, 1, 2, 3, 4, 6))
      .chain(([type, ipc]) =>
        bits(8 * IPC_PAYLOAD_BYTES[ipc]!).map(([hi, lo]) => pkt(type, { a: ipc, hi, lo })),
      ),
  },
  // IP packets compressed against the last IP, as a processor would emit them.
  {
    weight: 6,
    arbitrary: fc
      .tuple(ipType, fc.integer({ min: 0, max: 5 }), u32, u32)
      .map(([type, rel, hi, lo]): Op => ({ kind: "ip", type, rel, hi, lo })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(bits(52), fc.boolean())
      .map(([[hi, lo], nr]) => pkt(PacketType.Pip, { hi, lo: (lo & ~0x1f) >>> 0, flags: nr ? Flag.Nr : 0 })),
  },
  {
    weight: 1,
    arbitrary: flagSet(Flag.CsL, Flag.CsD, Flag.If).map((flags) => pkt(PacketType.ModeExec, { flags })),
  },
  { weight: 1, arbitrary: flagSet(Flag.InTx, Flag.Abort).map((flags) => pkt(PacketType.ModeTsx, { flags })) },
  { weight: 1, arbitrary: byte.map((a) => pkt(PacketType.Cbr, { a })) },
  { weight: 1, arbitrary: bits(56).map(([hi, lo]) => pkt(PacketType.Tsc, { hi, lo })) },
  { weight: 2, arbitrary: byte.map((a) => pkt(PacketType.Mtc, { a })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0x1ff }))
      .map(([a, b]) => pkt(PacketType.Tma, { a, b })),
  },
  // CYC: at most 8 extension bytes (61 bits), the most libipt and ptkit decode (see CYC_BITS).
  { weight: 3, arbitrary: bits(CYC_BITS).map(([hi, lo]) => pkt(PacketType.Cyc, { hi, lo })) },
  { weight: 1, arbitrary: bits(52).map(([hi, lo]) => pkt(PacketType.Vmcs, { hi, lo: (lo & ~0xfff) >>> 0 })) },
  { weight: 1, arbitrary: bits(64).map(([hi, lo]) => pkt(PacketType.Mnt, { hi, lo })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(4, 8), fc.boolean())
      .chain(([n, ip]) =>
        bits(8 * n).map(([hi, lo]) => pkt(PacketType.Ptw, { a: n, hi, lo, flags: ip ? Flag.Ip : 0 })),
      ),
  },
  { weight: 1, arbitrary: flagSet(Flag.Ip).map((flags) => pkt(PacketType.Exstop, { flags })) },
  { weight: 1, arbitrary: fc.tuple(u32, u32).map(([a, b]) => pkt(PacketType.Mwait, { a, b })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(nibble, nibble, flagSet(Flag.Hw))
      .map(([a, b, flags]) => pkt(PacketType.Pwre, { a, b, flags })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(nibble, nibble, flagSet(Flag.WakeInt, Flag.WakeStore, Flag.WakeHw))
      .map(([a, b, flags]) => pkt(PacketType.Pwrx, { a, b, flags })),
  },
);

/** A stream of 1–200 steps, starting with a PSB more often than not. */
export const streamArb: fc.Arbitrary<Op[]> = fc
  .tuple(fc.boolean(), fc.array(opArb, { minLength: 1, maxLength: 200, size: "max" }))
  .map(([psb, ops]) => (psb ? [pkt(PacketType.Psb), ...ops] : ops));

/** Encode a stream with ptkit's encoder. Throws if the encoder rejects a step. */
export function encodeStream(ops: readonly Op[]): Uint8Array {
  const enc = new PacketEncoder(1024);
  const p = new Packet();
  for (const op of ops) {
    let size: number;
    if (op.kind === "pkt") {
      p.clear();
      p.type = op.type;
      p.lo = op.lo;
      p.hi = op.hi;
      p.a = op.a;
      p.b = op.b;
      p.flags = op.flags;
      size = enc.emit(p);
    } else {
      const last = enc.last;
      let { hi, lo } = op;
      switch (op.rel) {
        case 0:
          hi = last.hi;
          lo = ((last.lo & 0xffff0000) | (lo & 0xffff)) >>> 0;
          break;
        case 1:
          hi = last.hi;
          break;
        case 2:
          hi = (hi & 0x8000 ? hi | 0xffff0000 : hi & 0xffff) >>> 0;
          break;
        case 3:
          hi = ((last.hi & 0xffff0000) | (hi & 0xffff)) >>> 0;
          break;
      }
      size = op.rel === 5 ? enc.emitSuppressed(op.type) : enc.emitIp(op.type, hi, lo);
    }
    if (size <= 0) throw new Error(`the encoder rejected ${JSON.stringify(op)}: ${size}`);
  }
  return enc.bytes().slice();
}

/** A small seeded PRNG (xorshift32) for the garbage inputs. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  u32(): number {
    let v = this.s;
    v ^= v << 13;
    v ^= v >>> 17;
    v ^= v << 5;
    this.s = v >>> 0;
    return this.s;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return n <= 0 ? 0 : this.u32() % n;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.u32() / 2 ** 32 < p;
  }
}

const PSB = Uint8Array.from({ length: 16 }, (_, i) => (i & 1 ? 0x82 : 0x02));

/**
 * Bytes that matter as opcodes or in PSB patterns: every opcode and extended opcode
 * ptkit or libipt knows (including HEAD-only ones), IPBytes variants, and neighbours.
 */
const VOCAB: readonly number[] = [
  0x00, 0x02, 0x82, 0x23, 0xa3, 0x43, 0xf3, 0x03, 0x73, 0x83, 0xc8, 0xc3, 0x88, 0x89, 0x62, 0xe2, 0xc2, 0x22,
  0xa2, 0x12, 0x32, 0x52, 0x72, 0x92, 0xb2, 0xd2, 0xf2, 0x13, 0x53, 0x63, 0x33, 0xb3, 0x19, 0x59, 0x99, 0xd9,
  0x0d, 0x2d, 0x4d, 0x6d, 0x8d, 0xad, 0xcd, 0xed, 0x1d, 0x3d, 0x5d, 0x7d, 0x9d, 0xbd, 0xdd, 0xfd, 0x11, 0x31,
  0x51, 0x71, 0x91, 0xb1, 0xd1, 0xf1, 0x01, 0x21, 0x41, 0x61, 0x81, 0xa1, 0xc1, 0xe1, 0x03, 0x07, 0x0b, 0xff,
  0x20, 0x40, 0x01, 0xfe, 0x04, 0x80,
];

/** A fragment of the PSB pattern: a run of 02 82 pairs, maybe starting with 82, maybe odd-length. */
function psbFragment(rng: Rng): Uint8Array {
  const len = rng.chance(0.5) ? 16 + rng.int(8) : 1 + rng.int(24);
  const phase = rng.int(2);
  return Uint8Array.from({ length: len }, (_, i) => ((i + phase) & 1 ? 0x82 : 0x02));
}

function insert(buf: Uint8Array, at: number, bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(buf.length + bytes.length);
  out.set(buf.subarray(0, at));
  out.set(bytes, at);
  out.set(buf.subarray(at), at + bytes.length);
  return out;
}

/** A position to insert at: often 8-byte aligned (where the PSB search looks). */
function insertPos(rng: Rng, len: number): number {
  const p = rng.int(len + 1);
  return rng.chance(0.5) ? Math.min(len, p & ~7) : p;
}

/** Uniformly random bytes, with a few PSBs or PSB fragments inserted. */
export function randomBytes(rng: Rng): Uint8Array {
  let buf: Uint8Array = Uint8Array.from({ length: rng.int(1500) }, () => rng.int(256));
  for (let n = rng.int(4); n > 0; n--)
    buf = insert(buf, insertPos(rng, buf.length), rng.chance(0.6) ? PSB : psbFragment(rng));
  return buf;
}

/** Opcode soup: mostly {@link VOCAB} bytes, with PSBs and PSB fragments. */
export function opcodeSoup(rng: Rng): Uint8Array {
  let buf: Uint8Array = Uint8Array.from({ length: rng.int(600) }, () =>
    rng.chance(0.7) ? rng.pick(VOCAB) : rng.int(256),
  );
  for (let n = rng.int(5); n > 0; n--)
    buf = insert(buf, insertPos(rng, buf.length), rng.chance(0.5) ? PSB : psbFragment(rng));
  return buf;
}

/** A valid stream with 1–6 random corruptions. */
export function corrupt(rng: Rng, valid: Uint8Array): Uint8Array {
  let buf: Uint8Array = valid.slice();
  for (let n = 1 + rng.int(6); n > 0; n--) {
    const at = rng.int(buf.length);
    switch (rng.int(9)) {
      case 0: // flip a bit
        if (buf.length) buf[at] = buf[at]! ^ (1 << rng.int(8));
        break;
      case 1: // any byte
        if (buf.length) buf[at] = rng.int(256);
        break;
      case 2: // an interesting byte
        if (buf.length) buf[at] = rng.pick(VOCAB);
        break;
      case 3: // a PSB
        buf = insert(buf, insertPos(rng, buf.length), PSB);
        break;
      case 4: // part of a PSB
        buf = insert(buf, insertPos(rng, buf.length), psbFragment(rng));
        break;
      case 5: // delete a range
        buf = Uint8Array.from([...buf.subarray(0, at), ...buf.subarray(at + 1 + rng.int(12))]);
        break;
      case 6: // insert random bytes
        buf = insert(
          buf,
          at,
          Uint8Array.from({ length: 1 + rng.int(8) }, () => rng.int(256)),
        );
        break;
      case 7: // duplicate a range
        buf = insert(buf, rng.int(buf.length + 1), buf.slice(at, at + 1 + rng.int(24)));
        break;
      case 8: // truncate
        buf = buf.slice(0, at);
        break;
    }
  }
  return buf;
}

/** PSB edge cases: pattern runs of every length and phase, around valid and invalid packets. */
export function psbEdges(rng: Rng, valid: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  for (let n = 2 + rng.int(8); n > 0; n--) {
    switch (rng.int(4)) {
      case 0:
        parts.push(psbFragment(rng));
        break;
      case 1:
        parts.push(PSB);
        break;
      case 2: {
        const at = rng.int(valid.length);
        parts.push(valid.slice(at, at + rng.int(40)));
        break;
      }
      case 3:
        parts.push(Uint8Array.from({ length: rng.int(12) }, () => rng.pick(VOCAB)));
        break;
    }
  }
  return concatBytes(parts);
}

/**
 * The whole opcode table, exhaustively: every first byte, every second byte after 02 and
 * every third byte after 02 C3, each followed by a random, an all-ones and an all-zeros
 * tail; the random one cut at every length up to 12 bytes and at 16 and 17 (PSB size).
 */
export function opcodeTable(rng: Rng): { name: string; buf: Uint8Array }[] {
  const out: { name: string; buf: Uint8Array }[] = [];
  const hex = (b: number) => b.toString(16).padStart(2, "0");
  const add = (prefix: number[]) => {
    const name = `op-${prefix.map(hex).join("")}`;
    const random = [...prefix, ...Array.from({ length: 17 }, () => rng.int(256))];
    for (const len of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]) {
      if (len >= prefix.length)
        out.push({ name: `${name}-r${len}`, buf: Uint8Array.from(random.slice(0, len)) });
    }
    out.push({
      name: `${name}-ff`,
      buf: Uint8Array.from([...prefix, ...new Array<number>(17 - prefix.length).fill(0xff)]),
    });
    out.push({
      name: `${name}-00`,
      buf: Uint8Array.from([...prefix, ...new Array<number>(17 - prefix.length).fill(0)]),
    });
  };
  for (let b = 0; b < 256; b++) {
    if (b !== 0x02) add([b]);
    add([0x02, b]);
    add([0x02, 0xc3, b]);
  }
  // PSB with one wrong byte at each position, and cut at each length.
  for (let i = 2; i < 16; i++) {
    const buf = PSB.slice();
    buf[i] = buf[i]! ^ (1 << rng.int(8));
    out.push({ name: `psb-bad-${i}`, buf });
    out.push({ name: `psb-cut-${i}`, buf: PSB.slice(0, i) });
  }
  return out;
}
