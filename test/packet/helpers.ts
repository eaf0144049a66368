/**
 * Shared test helpers: packet builders, field snapshots and fast-check arbitraries
 * covering every packet type over its whole field range.
 */
import fc from "fast-check";
import { type BlockContext, decodePacket, Opcode } from "../../src/packet/decode.js";
import { encodedSize, encodePacket } from "../../src/packet/encode.js";
import { Flag, Packet, PacketType } from "../../src/packet/types.js";

/** The fields a packet is compared on (size excluded: it is an output). */
export interface Fields {
  type: PacketType;
  lo: number;
  hi: number;
  a: number;
  b: number;
  flags: number;
}

export function makePacket(f: Partial<Fields> & { type: PacketType }): Packet {
  const p = new Packet();
  p.type = f.type;
  p.lo = f.lo ?? 0;
  p.hi = f.hi ?? 0;
  p.a = f.a ?? 0;
  p.b = f.b ?? 0;
  p.flags = f.flags ?? 0;
  return p;
}

export function fieldsOf(p: Packet): Fields {
  return { type: p.type, lo: p.lo, hi: p.hi, a: p.a, b: p.b, flags: p.flags };
}

/** Encode into a fresh, exactly sized array; throws if the packet is not encodable. */
export function encode(f: Partial<Fields> & { type: PacketType }): Uint8Array {
  const p = makePacket(f);
  const size = encodedSize(p);
  if (size < 0) throw new Error(`not encodable (${size}): ${JSON.stringify(f)}`);
  const buf = new Uint8Array(size);
  const n = encodePacket(buf, 0, p);
  if (n !== size) throw new Error(`encodePacket returned ${n}, encodedSize ${size}`);
  return buf;
}

/** The block context a packet needs to be decoded as itself (BIP only exists inside a BBP block). */
export function contextFor(f: Fields): BlockContext {
  return f.type === PacketType.Bip ? (f.b as 4 | 8) : 0;
}

/** Decode one packet at 0; returns the result code and the packet. */
export function decodeOne(bytes: Uint8Array, block: BlockContext = 0, end = bytes.length) {
  const pkt = new Packet();
  const result = decodePacket(bytes, 0, end, pkt, block, 0);
  return { result, pkt };
}

export const hex = (bytes: Uint8Array): string =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");

/** Parse "02 82 0a" into bytes. */
export function bytesOf(text: string): Uint8Array {
  const parts = text.trim().split(/\s+/);
  return Uint8Array.from(parts, (p) => Number.parseInt(p, 16));
}

// ---- arbitraries ----------------------------------------------------------------

export const u32 = fc.integer({ min: 0, max: 0xffffffff });
export const u8 = fc.integer({ min: 0, max: 0xff });

/**
 * A value below 2^bits as {hi, lo} (bits 0..64). The bit length is drawn first so
 * that every length (and so every CYC size, every payload byte) is equally likely.
 */
export function uBits(bits: number): fc.Arbitrary<{ hi: number; lo: number }> {
  return fc.tuple(fc.integer({ min: 0, max: bits }), u32, u32).map(([len, x, y]) => {
    if (len === 0) return { hi: 0, lo: 0 };
    // Top bit set so the value really has `len` bits.
    if (len <= 32) {
      const lo = len === 32 ? (x | 0x80000000) >>> 0 : ((x & (2 ** len - 1)) | (2 ** (len - 1))) >>> 0;
      return { hi: 0, lo };
    }
    const hb = len - 32;
    const hi = hb === 32 ? (y | 0x80000000) >>> 0 : ((y & (2 ** hb - 1)) | (2 ** (hb - 1))) >>> 0;
    return { hi, lo: x };
  });
}

/** Any subset of the given flag bits. */
export function flagsOf(...bits: number[]): fc.Arbitrary<number> {
  return fc.subarray(bits).map((s) => s.reduce((acc, f) => acc | f, 0));
}

/** fc.record builds null-prototype objects, which deepStrictEqual tells apart from literals. */
const plain = (f: Fields): Fields => ({ ...f });

const noFields = (type: PacketType) => fc.constant<Fields>({ type, lo: 0, hi: 0, a: 0, b: 0, flags: 0 });

/** Every IP packet type. */
export const IP_TYPES = [PacketType.Tip, PacketType.TipPge, PacketType.TipPgd, PacketType.Fup] as const;

/** Low five opcode bits of each IP packet type (IPBytes go in bits 7:5). */
export const IP_OPCODE: Record<number, number> = {
  [PacketType.Tip]: Opcode.Tip,
  [PacketType.TipPge]: Opcode.TipPge,
  [PacketType.TipPgd]: Opcode.TipPgd,
  [PacketType.Fup]: Opcode.Fup,
};

/** Payload bits of each valid IPBytes value. */
const IPC_BITS: Record<number, number> = { 0: 0, 1: 16, 2: 32, 3: 48, 4: 48, 6: 64 };

const ipArb = (type: PacketType) =>
  fc
    .constantFrom(0, 1, 2, 3, 4, 6)
    .chain((a) => uBits(IPC_BITS[a]!).map(({ hi, lo }): Fields => ({ type, lo, hi, a, b: 0, flags: 0 })));

const tntArb = (type: PacketType, max: number) =>
  fc
    .integer({ min: 1, max })
    .chain((a) => uBits(a).map(({ hi, lo }): Fields => ({ type, lo, hi, a, b: 0, flags: 0 })));

/** EVD Type is bits 5:0 of byte 2 (SDM; Linux perf's intel_pt_get_evd masks 0x3f). */
const EVD_TYPE_MAX = 63;

/** A valid packet of each type, over its whole field range. */
export const ARBITRARIES: Record<number, fc.Arbitrary<Fields>> = {
  [PacketType.Pad]: noFields(PacketType.Pad),
  [PacketType.Psb]: noFields(PacketType.Psb),
  [PacketType.PsbEnd]: noFields(PacketType.PsbEnd),
  [PacketType.Ovf]: noFields(PacketType.Ovf),
  [PacketType.Stop]: noFields(PacketType.Stop),
  [PacketType.Tnt8]: tntArb(PacketType.Tnt8, 6),
  [PacketType.Tnt64]: tntArb(PacketType.Tnt64, 47),
  [PacketType.Tip]: ipArb(PacketType.Tip),
  [PacketType.TipPge]: ipArb(PacketType.TipPge),
  [PacketType.TipPgd]: ipArb(PacketType.TipPgd),
  [PacketType.Fup]: ipArb(PacketType.Fup),
  [PacketType.Pip]: fc
    .record({
      type: fc.constant(PacketType.Pip),
      // CR3[51:5]
      lo: u32.map((x) => (x & ~0x1f) >>> 0),
      hi: fc.integer({ min: 0, max: 0xfffff }),
      a: fc.constant(0),
      b: fc.constant(0),
      flags: flagsOf(Flag.Nr),
    })
    .map(plain),
  [PacketType.ModeExec]: flagsOf(Flag.CsL, Flag.CsD, Flag.If).map(
    (flags): Fields => ({ type: PacketType.ModeExec, lo: 0, hi: 0, a: 0, b: 0, flags }),
  ),
  [PacketType.ModeTsx]: flagsOf(Flag.InTx, Flag.Abort).map(
    (flags): Fields => ({ type: PacketType.ModeTsx, lo: 0, hi: 0, a: 0, b: 0, flags }),
  ),
  [PacketType.Cbr]: u8.map((a): Fields => ({ type: PacketType.Cbr, lo: 0, hi: 0, a, b: 0, flags: 0 })),
  [PacketType.Tsc]: uBits(56).map(
    ({ hi, lo }): Fields => ({ type: PacketType.Tsc, lo, hi, a: 0, b: 0, flags: 0 }),
  ),
  [PacketType.Mtc]: u8.map((a): Fields => ({ type: PacketType.Mtc, lo: 0, hi: 0, a, b: 0, flags: 0 })),
  [PacketType.Tma]: fc
    .tuple(fc.integer({ min: 0, max: 0xffff }), fc.integer({ min: 0, max: 0x1ff }))
    .map(([a, b]): Fields => ({ type: PacketType.Tma, lo: 0, hi: 0, a, b, flags: 0 })),
  [PacketType.Cyc]: uBits(61).map(
    ({ hi, lo }): Fields => ({ type: PacketType.Cyc, lo, hi, a: 0, b: 0, flags: 0 }),
  ),
  [PacketType.Vmcs]: fc
    .record({
      type: fc.constant(PacketType.Vmcs),
      // VMCS base bits 51:12
      lo: u32.map((x) => (x & ~0xfff) >>> 0),
      hi: fc.integer({ min: 0, max: 0xfffff }),
      a: fc.constant(0),
      b: fc.constant(0),
      flags: fc.constant(0),
    })
    .map(plain),
  [PacketType.Mnt]: uBits(64).map(
    ({ hi, lo }): Fields => ({ type: PacketType.Mnt, lo, hi, a: 0, b: 0, flags: 0 }),
  ),
  [PacketType.Ptw]: fc
    .constantFrom(4, 8)
    .chain((a) =>
      fc
        .tuple(uBits(a * 8), flagsOf(Flag.Ip))
        .map(([{ hi, lo }, flags]): Fields => ({ type: PacketType.Ptw, lo, hi, a, b: 0, flags })),
    ),
  [PacketType.Exstop]: flagsOf(Flag.Ip).map(
    (flags): Fields => ({ type: PacketType.Exstop, lo: 0, hi: 0, a: 0, b: 0, flags }),
  ),
  [PacketType.Mwait]: fc
    .tuple(u32, u32)
    .map(([a, b]): Fields => ({ type: PacketType.Mwait, lo: 0, hi: 0, a, b, flags: 0 })),
  [PacketType.Pwre]: fc
    .tuple(fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 15 }), flagsOf(Flag.Hw))
    .map(([a, b, flags]): Fields => ({ type: PacketType.Pwre, lo: 0, hi: 0, a, b, flags })),
  [PacketType.Pwrx]: fc
    .tuple(
      fc.integer({ min: 0, max: 15 }),
      fc.integer({ min: 0, max: 15 }),
      flagsOf(Flag.WakeInt, Flag.WakeStore, Flag.WakeHw),
    )
    .map(([a, b, flags]): Fields => ({ type: PacketType.Pwrx, lo: 0, hi: 0, a, b, flags })),
  [PacketType.Bbp]: fc
    .tuple(fc.integer({ min: 0, max: 31 }), flagsOf(Flag.Bip4))
    .map(([a, flags]): Fields => ({ type: PacketType.Bbp, lo: 0, hi: 0, a, b: 0, flags })),
  [PacketType.Bip]: fc
    .constantFrom(4, 8)
    .chain((b) =>
      fc
        .tuple(fc.integer({ min: 0, max: 31 }), uBits(b * 8))
        .map(([a, { hi, lo }]): Fields => ({ type: PacketType.Bip, lo, hi, a, b, flags: 0 })),
    ),
  [PacketType.Bep]: flagsOf(Flag.Ip).map(
    (flags): Fields => ({ type: PacketType.Bep, lo: 0, hi: 0, a: 0, b: 0, flags }),
  ),
  [PacketType.Cfe]: fc
    .tuple(fc.integer({ min: 0, max: 31 }), u8, flagsOf(Flag.Ip))
    .map(([a, b, flags]): Fields => ({ type: PacketType.Cfe, lo: 0, hi: 0, a, b, flags })),
  [PacketType.Evd]: fc
    .tuple(fc.integer({ min: 0, max: EVD_TYPE_MAX }), uBits(64))
    .map(([a, { hi, lo }]): Fields => ({ type: PacketType.Evd, lo, hi, a, b: 0, flags: 0 })),
  [PacketType.Trig]: fc
    .tuple(u8, flagsOf(Flag.Ip, Flag.Mult, Flag.Icntv), fc.integer({ min: 0, max: 0xffff }))
    .map(
      ([a, flags, icnt]): Fields => ({
        type: PacketType.Trig,
        lo: 0,
        hi: 0,
        a,
        b: flags & Flag.Icntv ? icnt : 0,
        flags,
      }),
    ),
};

/** Every encodable type. */
export const ALL_TYPES: PacketType[] = Object.keys(ARBITRARIES).map((k) => Number(k) as PacketType);

/** Any valid packet of any type. */
export const anyPacket: fc.Arbitrary<Fields> = fc.oneof(...ALL_TYPES.map((t) => ARBITRARIES[t]!));
