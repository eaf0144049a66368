/**
 * The packet decoder core: one function, dispatching on the opcode byte.
 *
 * `decodePacket` reads exactly one packet at `pos`, fills the caller's reusable
 * {@link Packet} and returns its size, or a negative {@link ErrorCode}. It never reads
 * at or past `end`, never allocates and never throws, whatever the bytes are.
 */
// biome-ignore-all lint/suspicious/noAssignInExpressions: `return (pkt.size = n)` records and returns a packet's size in one step, keeping decodePacket's bytecode small enough for V8 to inline.
import * as errors from "../base/errors.js";
import type { TraceBytes } from "./trace-bytes.js";
import type { Packet } from "./types.js";
import * as types from "./types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants. This module's
// own exports are module bindings too: its code reads them through the copies below.
const { ErrorCode } = errors;
const { Flag, IPC_PAYLOAD_BYTES, PacketType } = types;

// The error returns, negated once here: a return first taken after V8 optimised a
// decoder (the end of a window, most often) then needs no type feedback, where
// `-ErrorCode.Eos` (a property load and a negation) threw the optimised code away.
const EOS = -ErrorCode.Eos;
const BAD_PACKET = -ErrorCode.BadPacket;
const BAD_OPCODE = -ErrorCode.BadOpcode;
type PacketType = types.PacketType;

/** Opcode bytes (first byte) and extended opcodes (second byte after 0x02). */
export const Opcode = {
  Pad: 0x00,
  Ext: 0x02,
  Tsc: 0x19,
  Mtc: 0x59,
  Mode: 0x99,
  Trig: 0xd9,
  /** Low five bits of FUP/TIP opcodes; bits 7:5 hold IPBytes. */
  Fup: 0x1d,
  Tip: 0x0d,
  TipPge: 0x11,
  TipPgd: 0x01,
} as const;

export const ExtOpcode = {
  Psb: 0x82,
  PsbEnd: 0x23,
  Tnt64: 0xa3,
  Pip: 0x43,
  Ovf: 0xf3,
  Cbr: 0x03,
  Tma: 0x73,
  Stop: 0x83,
  Vmcs: 0xc8,
  Ext2: 0xc3,
  Exstop: 0x62,
  ExstopIp: 0xe2,
  Mwait: 0xc2,
  Pwre: 0x22,
  Pwrx: 0xa2,
  /** Low five bits of PTW; bit 7 is IP, bits 6:5 the payload size. */
  Ptw: 0x12,
  Cfe: 0x13,
  Evd: 0x53,
  Bbp: 0x63,
  Bep: 0x33,
  BepIp: 0xb3,
} as const;

/** Third byte of MNT (02 C3 88). */
export const EXT2_MNT = 0x88;

/** PSB: 02 82 repeated 8 times. */
export const PSB_SIZE = 16;

/**
 * Block context for BIP packets. BIP's one-byte header collides with TNT-8, so BIP
 * is only recognised between a BBP and the packet that ends the block; the value is
 * the BIP payload size the BBP announced (4 or 8), or 0 outside a block.
 */
export type BlockContext = 0 | 4 | 8;

/**
 * Errata the packet decoder works around, as bits of its `quirks` argument
 * (see `packetQuirks` in the cpu layer).
 */
export const DecodeQuirk = {
  /** SKD007: an OVF may overwrite the second byte of a two-byte CYC. */
  Skd007: 1,
  /** SKZ84: VMX TSC scaling/offsetting corrupts TMA; report it as an invalid packet. */
  Skz84: 2,
} as const;

const OPC = Opcode;
const EXT = ExtOpcode;
const MNT2 = EXT2_MNT;
const PSB_BYTES = PSB_SIZE;
const QUIRK = DecodeQuirk;

/** Read `n` (<= 4) little-endian bytes at `p` as an unsigned 32-bit number. */
function le32(buf: Uint8Array, p: number, n: number): number {
  let v = 0;
  for (let i = n - 1; i >= 0; i--) v = (v << 8) | buf[p + i]!;
  return v >>> 0;
}

/** Fill lo/hi from `n` (<= 8) little-endian bytes at `p`. */
function readPayload(buf: Uint8Array, p: number, n: number, pkt: Packet): void {
  if (n <= 4) {
    pkt.lo = le32(buf, p, n);
    pkt.hi = 0;
  } else {
    pkt.lo = le32(buf, p, 4);
    pkt.hi = le32(buf, p + 4, n - 4);
  }
}

/** Zero the fields a packet may leave unset (all but type and size), as decoding starts. */
function clearFields(pkt: Packet): void {
  pkt.lo = 0;
  pkt.hi = 0;
  pkt.a = 0;
  pkt.b = 0;
  pkt.flags = 0;
}

/** Packet type of FUP/TIP opcodes by their low five bits; 0 for other opcodes. */
const IP_TYPES = new Uint8Array(32);
IP_TYPES[OPC.Tip] = PacketType.Tip;
IP_TYPES[OPC.Fup] = PacketType.Fup;
IP_TYPES[OPC.TipPge] = PacketType.TipPge;
IP_TYPES[OPC.TipPgd] = PacketType.TipPgd;

/**
 * Decode the packet at `pos`. Returns its size (> 0) or `-ErrorCode`:
 * `-Eos` when the packet does not fit before `end`, `-BadOpcode` for an unknown
 * opcode, `-BadPacket` for a known opcode with an invalid payload.
 *
 * Keep this function small: its bytecode must stay under V8's inlining limit (460
 * bytes) so callers' loops inline it; rarer opcodes live in helper functions. Going
 * over costs about 28% of decode throughput (`npm run bench`).
 */
export function decodePacket(
  buf: Uint8Array,
  pos: number,
  end: number,
  pkt: Packet,
  block: BlockContext,
  quirks: number,
): number {
  if (pos >= end) return EOS;
  const opc = buf[pos]!;
  clearFields(pkt);

  if (block !== 0 && (opc & 7) === 4) return decodeBip(buf, pos, end, pkt, block);

  if ((opc & 1) === 0) {
    if (opc === OPC.Pad) {
      pkt.type = PacketType.Pad;
      return (pkt.size = 1);
    }
    if (opc === OPC.Ext) return decodeExt(buf, pos, end, pkt, quirks);
    return decodeTnt8(pkt, opc);
  }
  if ((opc & 3) === 3) {
    const size = decodeCyc(buf, pos, end, pkt);
    return quirks & QUIRK.Skd007 && size === 2 ? skd007(buf, pos, end, pkt) : size;
  }

  const ipType = IP_TYPES[opc & 0x1f]!;
  if (ipType !== 0) {
    pkt.type = ipType as PacketType;
    return decodeIp(buf, pos, end, pkt, opc);
  }
  return decodeRareOpcode(buf, pos, end, pkt, opc);
}

/** TNT-8: bits 7:1 hold the branches behind a stop bit (`opc` is neither 0x00 nor 0x02). */
function decodeTnt8(pkt: Packet, opc: number): number {
  const v = opc >>> 1;
  const n = 31 - Math.clz32(v);
  pkt.type = PacketType.Tnt8;
  pkt.a = n;
  pkt.lo = v & ~(1 << n);
  return (pkt.size = 1);
}

/**
 * The packets most of a trace is made of, decoded the way {@link decodePacket} does
 * without its general dispatch: TNT-8, a CYC of one byte, and FUP, TIP, TIP.PGE and
 * TIP.PGD. Returns the size, or 0 for any other packet and for one that does not
 * decode here (decodePacket then decodes it, or finds its error). `pos < end`;
 * outside a BBP block only (inside one, TNT-8's header may be a BIP's).
 */
export function decodeFrequent(buf: Uint8Array, pos: number, end: number, pkt: Packet): number {
  const opc = buf[pos]!;
  clearFields(pkt);
  if ((opc & 1) === 0) return opc > OPC.Ext ? decodeTnt8(pkt, opc) : 0;
  // A CYC without extension bytes (one byte; the SKD007 quirk is for two-byte ones).
  if ((opc & 7) === 3) return decodeCyc(buf, pos, end, pkt);
  const ipType = IP_TYPES[opc & 0x1f]!;
  if (ipType === 0) return 0;
  pkt.type = ipType as PacketType;
  const size = decodeIp(buf, pos, end, pkt, opc);
  return Math.max(size, 0);
}

/**
 * The rarer one-byte opcodes (MTC, TSC, MODE, TRIG), kept out of {@link decodePacket}
 * so that its bytecode stays under V8's inlining limit (460 bytes).
 */
function decodeRareOpcode(buf: Uint8Array, pos: number, end: number, pkt: Packet, opc: number): number {
  switch (opc) {
    case OPC.Mtc:
      if (pos + 2 > end) return EOS;
      pkt.type = PacketType.Mtc;
      pkt.a = buf[pos + 1]!;
      return (pkt.size = 2);
    case OPC.Tsc:
      if (pos + 8 > end) return EOS;
      pkt.type = PacketType.Tsc;
      readPayload(buf, pos + 1, 7, pkt);
      return (pkt.size = 8);
    case OPC.Mode: {
      if (pos + 2 > end) return EOS;
      const m = buf[pos + 1]!;
      const leaf = m & 0xe0;
      if (leaf === 0x00) {
        pkt.type = PacketType.ModeExec;
        pkt.flags = (m & 1 ? Flag.CsL : 0) | (m & 2 ? Flag.CsD : 0) | (m & 4 ? Flag.If : 0);
      } else if (leaf === 0x20) {
        pkt.type = PacketType.ModeTsx;
        pkt.flags = (m & 1 ? Flag.InTx : 0) | (m & 2 ? Flag.Abort : 0);
      } else {
        return BAD_PACKET;
      }
      return (pkt.size = 2);
    }
    case OPC.Trig: {
      if (pos + 3 > end) return EOS;
      const f = buf[pos + 1]!;
      let size = 3;
      if (f & 0x40) {
        if (pos + 5 > end) return EOS;
        pkt.b = buf[pos + 3]! | (buf[pos + 4]! << 8);
        size = 5;
      }
      pkt.type = PacketType.Trig;
      pkt.flags = (f & 0x80 ? Flag.Ip : 0) | (f & 0x40 ? Flag.Icntv : 0) | (f & 0x20 ? Flag.Mult : 0);
      pkt.a = buf[pos + 2]!;
      return (pkt.size = size);
    }
  }
  return BAD_OPCODE;
}

function decodeIp(buf: Uint8Array, pos: number, end: number, pkt: Packet, opc: number): number {
  const ipc = opc >>> 5;
  const n = IPC_PAYLOAD_BYTES[ipc]!;
  if (n < 0) return BAD_PACKET;
  if (pos + 1 + n > end) return EOS;
  pkt.a = ipc;
  // 0, 2, 4, 6 or 8 bytes, read without readPayload's loops: IPs are every third packet.
  const p = pos + 1;
  if (n !== 0) {
    let lo = buf[p]! | (buf[p + 1]! << 8);
    if (n !== 2) {
      lo |= (buf[p + 2]! << 16) | (buf[p + 3]! << 24);
      if (n !== 4) {
        let hi = buf[p + 4]! | (buf[p + 5]! << 8);
        if (n === 8) hi |= (buf[p + 6]! << 16) | (buf[p + 7]! << 24);
        pkt.hi = hi >>> 0;
      }
    }
    pkt.lo = lo >>> 0;
  }
  return (pkt.size = 1 + n);
}

function decodeCyc(buf: Uint8Array, pos: number, end: number, pkt: Packet): number {
  const first = buf[pos]!;
  let lo = first >>> 3;
  let hi = 0;
  let p = pos + 1;
  let more = first & 4;
  let shift = 5;
  while (more) {
    if (p >= end) return EOS;
    const byte = buf[p++]!;
    more = byte & 1;
    const bits = byte >>> 1;
    // Like libipt, accept at most 8 extension bytes (61 bits): a ninth would not fit 64 bits whole.
    if (shift + 7 > 64) return BAD_PACKET;
    if (shift >= 32) hi |= bits << (shift - 32);
    else {
      lo |= bits << shift;
      if (shift > 25) hi |= bits >>> (32 - shift);
    }
    shift += 7;
  }
  pkt.type = PacketType.Cyc;
  pkt.lo = lo >>> 0;
  pkt.hi = hi >>> 0;
  return (pkt.size = p - pos);
}

/**
 * SKD007: a two-byte CYC whose second byte is 0x02 followed by 0xF3 is an OVF that
 * overwrote the CYC's tail. Report the OVF; it consumes all three bytes. A CYC that
 * ends at `end` stays one (see {@link windowCut}).
 */
function skd007(buf: Uint8Array, pos: number, end: number, pkt: Packet): number {
  if (buf[pos + 1]! >>> 1 !== 1 || pos + 2 >= end || buf[pos + 2] !== EXT.Ovf) return 2;
  pkt.type = PacketType.Ovf;
  pkt.lo = 0;
  return (pkt.size = 3);
}

/**
 * Whether what {@link decodePacket} just gave for the packet at `pos` (`size`: its size
 * or -error) was decided by `end`: the packet runs past it (-Eos), or it is a two-byte
 * CYC that SKD007 would read as an OVF were 0xF3 the byte at `end`. A reader whose
 * `end` is a window's, not the trace's, reads on and decodes the packet again (see
 * {@link decodeIn}); at the trace's end it stands.
 */
export function windowCut(
  buf: Uint8Array,
  pos: number,
  end: number,
  size: number,
  pkt: Packet,
  quirks: number,
): boolean {
  if (size === EOS) return true;
  return (
    size === 2 &&
    pos + 2 === end &&
    pkt.type === PacketType.Cyc &&
    (quirks & QUIRK.Skd007) !== 0 &&
    buf[pos + 1]! >>> 1 === 1
  );
}

/**
 * {@link decodePacket} at trace offset `pos` of the bytes `t` holds, reading on while
 * the window's end decides the packet ({@link windowCut}): its size, or -error.
 */
export function decodeIn(
  t: TraceBytes,
  pos: number,
  pkt: Packet,
  block: BlockContext,
  quirks: number,
): number {
  let size = decodePacket(t.buf, pos - t.base, t.end - t.base, pkt, block, quirks);
  while (windowCut(t.buf, pos - t.base, t.end - t.base, size, pkt, quirks) && t.more && t.grow())
    size = decodePacket(t.buf, pos - t.base, t.end - t.base, pkt, block, quirks);
  return size;
}

function decodeBip(buf: Uint8Array, pos: number, end: number, pkt: Packet, bytes: 4 | 8): number {
  if (pos + 1 + bytes > end) return EOS;
  pkt.type = PacketType.Bip;
  pkt.a = buf[pos]! >>> 3;
  pkt.b = bytes;
  readPayload(buf, pos + 1, bytes, pkt);
  return (pkt.size = 1 + bytes);
}

function decodeExt(buf: Uint8Array, pos: number, end: number, pkt: Packet, quirks: number): number {
  if (pos + 2 > end) return EOS;
  const ext = buf[pos + 1]!;
  switch (ext) {
    case EXT.Psb: {
      if (pos + PSB_BYTES > end) return EOS;
      for (let p = pos + 2; p < pos + PSB_BYTES; p += 2) {
        if (buf[p] !== 0x02 || buf[p + 1] !== 0x82) return BAD_PACKET;
      }
      pkt.type = PacketType.Psb;
      return (pkt.size = PSB_BYTES);
    }
    case EXT.PsbEnd:
      pkt.type = PacketType.PsbEnd;
      return (pkt.size = 2);
    case EXT.Ovf:
      pkt.type = PacketType.Ovf;
      return (pkt.size = 2);
    case EXT.Stop:
      pkt.type = PacketType.Stop;
      return (pkt.size = 2);
    case EXT.Tnt64: {
      if (pos + 8 > end) return EOS;
      let lo = le32(buf, pos + 2, 4);
      let hi = le32(buf, pos + 6, 2);
      let n: number;
      if (hi !== 0) {
        n = 63 - Math.clz32(hi);
        hi &= ~(1 << (n - 32));
      } else if (lo > 1) {
        n = 31 - Math.clz32(lo);
        lo = (lo & ~(1 << n)) >>> 0;
      } else {
        // No stop bit, or nothing before it: no branch (libipt's pt_pkt_read_tnt: bad packet).
        return BAD_PACKET;
      }
      pkt.type = PacketType.Tnt64;
      pkt.a = n;
      pkt.lo = lo;
      pkt.hi = hi;
      return (pkt.size = 8);
    }
    case EXT.Pip: {
      if (pos + 8 > end) return EOS;
      const lo = le32(buf, pos + 2, 4);
      const hi = le32(buf, pos + 6, 2);
      // CR3[51:5] is stored in payload bits 47:1; bit 0 is NR.
      pkt.type = PacketType.Pip;
      pkt.flags = lo & 1 ? Flag.Nr : 0;
      pkt.lo = ((lo & ~1) << 4) >>> 0;
      pkt.hi = ((hi << 4) | (lo >>> 28)) >>> 0;
      return (pkt.size = 8);
    }
    case EXT.Cbr:
      if (pos + 4 > end) return EOS;
      pkt.type = PacketType.Cbr;
      pkt.a = buf[pos + 2]!;
      return (pkt.size = 4);
    case EXT.Tma: {
      if (pos + 7 > end) return EOS;
      const fc = buf[pos + 5]! | (buf[pos + 6]! << 8);
      if (fc & ~0x1ff || buf[pos + 4] !== 0) {
        if (!(quirks & QUIRK.Skz84)) return BAD_PACKET;
        // The corrupted TMA is one byte longer than a TMA.
        if (pos + 8 > end) return EOS;
        pkt.type = PacketType.Invalid;
        return (pkt.size = 8);
      }
      pkt.type = PacketType.Tma;
      pkt.a = buf[pos + 2]! | (buf[pos + 3]! << 8);
      pkt.b = fc;
      return (pkt.size = 7);
    }
    case EXT.Vmcs: {
      if (pos + 7 > end) return EOS;
      const lo = le32(buf, pos + 2, 4);
      pkt.type = PacketType.Vmcs;
      pkt.lo = (lo << 12) >>> 0;
      pkt.hi = ((lo >>> 20) | (buf[pos + 6]! << 12)) >>> 0;
      return (pkt.size = 7);
    }
    case EXT.Ext2:
      if (pos + 3 > end) return EOS;
      if (buf[pos + 2] !== MNT2) return BAD_OPCODE;
      if (pos + 11 > end) return EOS;
      pkt.type = PacketType.Mnt;
      readPayload(buf, pos + 3, 8, pkt);
      return (pkt.size = 11);
    case EXT.Exstop:
    case EXT.ExstopIp:
      pkt.type = PacketType.Exstop;
      pkt.flags = ext & 0x80 ? Flag.Ip : 0;
      return (pkt.size = 2);
    case EXT.Mwait:
      if (pos + 10 > end) return EOS;
      pkt.type = PacketType.Mwait;
      pkt.a = le32(buf, pos + 2, 4);
      pkt.b = le32(buf, pos + 6, 4);
      return (pkt.size = 10);
    case EXT.Pwre: {
      if (pos + 4 > end) return EOS;
      const p = buf[pos + 2]! | (buf[pos + 3]! << 8);
      pkt.type = PacketType.Pwre;
      pkt.a = (p >>> 12) & 0xf;
      pkt.b = (p >>> 8) & 0xf;
      // HW is bit 7 of byte 2 (SDM Vol. 3C Table 36-43; perf reads it there too).
      // libipt 2.0.5 reads bit 3 (pt_pl_pwre_hw_mask 0x8): libipt's deviation.
      pkt.flags = p & 0x80 ? Flag.Hw : 0;
      return (pkt.size = 4);
    }
    case EXT.Pwrx: {
      if (pos + 7 > end) return EOS;
      const p0 = buf[pos + 2]!;
      const p1 = buf[pos + 3]!;
      pkt.type = PacketType.Pwrx;
      pkt.a = p0 >>> 4;
      pkt.b = p0 & 0xf;
      pkt.flags = (p1 & 1 ? Flag.WakeInt : 0) | (p1 & 4 ? Flag.WakeStore : 0) | (p1 & 8 ? Flag.WakeHw : 0);
      return (pkt.size = 7);
    }
    case EXT.Cfe: {
      if (pos + 4 > end) return EOS;
      const t = buf[pos + 2]!;
      pkt.type = PacketType.Cfe;
      pkt.a = t & 0x1f;
      pkt.b = buf[pos + 3]!;
      pkt.flags = t & 0x80 ? Flag.Ip : 0;
      return (pkt.size = 4);
    }
    case EXT.Evd:
      if (pos + 11 > end) return EOS;
      pkt.type = PacketType.Evd;
      // EVD's type is bits 5:0 (CFE's only 4:0).
      pkt.a = buf[pos + 2]! & 0x3f;
      readPayload(buf, pos + 3, 8, pkt);
      return (pkt.size = 11);
    case EXT.Bbp: {
      if (pos + 3 > end) return EOS;
      const t = buf[pos + 2]!;
      pkt.type = PacketType.Bbp;
      pkt.a = t & 0x1f;
      pkt.flags = t & 0x80 ? Flag.Bip4 : 0;
      return (pkt.size = 3);
    }
    case EXT.Bep:
    case EXT.BepIp:
      pkt.type = PacketType.Bep;
      pkt.flags = ext & 0x80 ? Flag.Ip : 0;
      return (pkt.size = 2);
  }
  if ((ext & 0x1f) === EXT.Ptw) {
    const plc = (ext >>> 5) & 3;
    if (plc > 1) return BAD_PACKET;
    const n = plc === 0 ? 4 : 8;
    if (pos + 2 + n > end) return EOS;
    pkt.type = PacketType.Ptw;
    pkt.a = n;
    pkt.flags = ext & 0x80 ? Flag.Ip : 0;
    readPayload(buf, pos + 2, n, pkt);
    return (pkt.size = 2 + n);
  }
  return BAD_OPCODE;
}

/**
 * The block context after `pkt`: a BBP opens a block, timing, power and FUP/BIP
 * packets keep it, every other packet closes it.
 */
export function nextBlockContext(pkt: Packet, block: BlockContext): BlockContext {
  switch (pkt.type) {
    case PacketType.Bbp:
      return pkt.flags & Flag.Bip4 ? 4 : 8;
    case PacketType.Bip:
    case PacketType.Pad:
    case PacketType.Tsc:
    case PacketType.Tma:
    case PacketType.Mtc:
    case PacketType.Fup:
    case PacketType.Cyc:
    case PacketType.Cbr:
    case PacketType.Mnt:
    case PacketType.Exstop:
    case PacketType.Pwre:
    case PacketType.Pwrx:
      return block;
  }
  return 0;
}
