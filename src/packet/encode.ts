/**
 * The packet encoder: the inverse of {@link decodePacket}, with the same field
 * conventions (see the table in types.ts). Used to build test and benchmark traces.
 *
 * `encodePacket` validates strictly: every field a type uses must be in range and every
 * field it does not use must be 0, so a successful encode always decodes back to the
 * very same fields. It never allocates, never throws and never uses BigInt.
 */

import { ErrorCode } from "../base/errors.js";
import { EXT2_MNT, ExtOpcode, Opcode, PSB_SIZE } from "./decode.js";
import { LastIp } from "./last-ip.js";
import { Flag, IPC_PAYLOAD_BYTES, Ipc, Packet, PacketType } from "./types.js";

const BAD = -ErrorCode.BadPacket;

/** `v` is an integer in [0, max] (max < 2^32). */
function inRange(v: number, max: number): boolean {
  return v >>> 0 === v && v <= max;
}

/** `lo`/`hi` are unsigned 32-bit halves of a value below 2^bits (bits in 32..64). */
function fitsBits(pkt: Packet, bits: number): boolean {
  if (pkt.lo >>> 0 !== pkt.lo || pkt.hi >>> 0 !== pkt.hi) return false;
  return bits >= 64 || pkt.hi >>> (bits - 32) === 0;
}

/** `lo`/`hi` are below 2^bits for bits in 0..63 (TNT payloads). */
function fitsBitsSmall(pkt: Packet, bits: number): boolean {
  if (bits >= 32) return fitsBits(pkt, bits);
  // Shifts, not 2 ** bits: `**` with a variable exponent is a slow runtime call.
  return pkt.hi === 0 && pkt.lo >>> 0 === pkt.lo && pkt.lo >>> bits === 0;
}

/** Small fields other than the ones a type uses must be zero. */
function unused(pkt: Packet, lohi: boolean, a: boolean, b: boolean, flags: number): boolean {
  if (lohi && (pkt.lo !== 0 || pkt.hi !== 0)) return false;
  if (a && pkt.a !== 0) return false;
  if (b && pkt.b !== 0) return false;
  return (pkt.flags & ~flags) === 0 && pkt.flags >>> 0 === pkt.flags;
}

/** Significant bits of the 64-bit value hi:lo (0 for 0). */
function bitLength(hi: number, lo: number): number {
  return hi !== 0 ? 64 - Math.clz32(hi) : 32 - Math.clz32(lo);
}

/**
 * CYC size: the first byte holds 5 bits, every extension byte 7 more. Decoders
 * (libipt, ptkit) take at most 8 extension bytes, so counts are limited to 61 bits.
 */
function cycSize(hi: number, lo: number): number {
  const bits = bitLength(hi, lo);
  return bits <= 5 ? 1 : 1 + Math.ceil((bits - 5) / 7);
}

/**
 * The size `pkt` encodes to, or `-BadPacket` when a field cannot be encoded (or the
 * type is not a packet: Bad, Invalid). Callers use it to reserve space.
 */
export function encodedSize(pkt: Packet): number {
  switch (pkt.type) {
    case PacketType.Pad:
      return unused(pkt, true, true, true, 0) ? 1 : BAD;
    case PacketType.Psb:
      return unused(pkt, true, true, true, 0) ? PSB_SIZE : BAD;
    case PacketType.PsbEnd:
    case PacketType.Ovf:
    case PacketType.Stop:
      return unused(pkt, true, true, true, 0) ? 2 : BAD;
    case PacketType.Tnt8:
      if (!inRange(pkt.a, 6) || pkt.a === 0 || !unused(pkt, false, false, true, 0)) return BAD;
      return fitsBitsSmall(pkt, pkt.a) ? 1 : BAD;
    case PacketType.Tnt64:
      if (!inRange(pkt.a, 47) || pkt.a === 0 || !unused(pkt, false, false, true, 0)) return BAD;
      return fitsBitsSmall(pkt, pkt.a) ? 8 : BAD;
    case PacketType.Tip:
    case PacketType.TipPge:
    case PacketType.TipPgd:
    case PacketType.Fup: {
      if (!inRange(pkt.a, 7) || !unused(pkt, false, false, true, 0)) return BAD;
      const n = IPC_PAYLOAD_BYTES[pkt.a]!;
      if (n < 0 || !fitsBitsSmall(pkt, n * 8)) return BAD;
      return 1 + n;
    }
    case PacketType.Pip:
      // CR3[51:5]: bits 4:0 and 63:52 are not representable.
      if (!unused(pkt, false, true, true, Flag.Nr) || !fitsBits(pkt, 52) || (pkt.lo & 0x1f) !== 0) return BAD;
      return 8;
    case PacketType.ModeExec:
      return unused(pkt, true, true, true, Flag.CsL | Flag.CsD | Flag.If) ? 2 : BAD;
    case PacketType.ModeTsx:
      return unused(pkt, true, true, true, Flag.InTx | Flag.Abort) ? 2 : BAD;
    case PacketType.Cbr:
      return unused(pkt, true, false, true, 0) && inRange(pkt.a, 0xff) ? 4 : BAD;
    case PacketType.Tsc:
      return unused(pkt, false, true, true, 0) && fitsBits(pkt, 56) ? 8 : BAD;
    case PacketType.Mtc:
      return unused(pkt, true, false, true, 0) && inRange(pkt.a, 0xff) ? 2 : BAD;
    case PacketType.Tma:
      return unused(pkt, true, false, false, 0) && inRange(pkt.a, 0xffff) && inRange(pkt.b, 0x1ff) ? 7 : BAD;
    case PacketType.Cyc:
      return unused(pkt, false, true, true, 0) && fitsBits(pkt, 61) ? cycSize(pkt.hi, pkt.lo) : BAD;
    case PacketType.Vmcs:
      // VMCS base bits 51:12.
      if (!unused(pkt, false, true, true, 0) || !fitsBits(pkt, 52) || (pkt.lo & 0xfff) !== 0) return BAD;
      return 7;
    case PacketType.Mnt:
      return unused(pkt, false, true, true, 0) && fitsBits(pkt, 64) ? 11 : BAD;
    case PacketType.Ptw:
      if ((pkt.a !== 4 && pkt.a !== 8) || !unused(pkt, false, false, true, Flag.Ip)) return BAD;
      return fitsBits(pkt, pkt.a * 8) ? 2 + pkt.a : BAD;
    case PacketType.Exstop:
    case PacketType.Bep:
      return unused(pkt, true, true, true, Flag.Ip) ? 2 : BAD;
    case PacketType.Mwait:
      return unused(pkt, true, false, false, 0) && inRange(pkt.a, 0xffffffff) && inRange(pkt.b, 0xffffffff)
        ? 10
        : BAD;
    case PacketType.Pwre:
      return unused(pkt, true, false, false, Flag.Hw) && inRange(pkt.a, 15) && inRange(pkt.b, 15) ? 4 : BAD;
    case PacketType.Pwrx:
      return unused(pkt, true, false, false, Flag.WakeInt | Flag.WakeStore | Flag.WakeHw) &&
        inRange(pkt.a, 15) &&
        inRange(pkt.b, 15)
        ? 7
        : BAD;
    case PacketType.Bbp:
      return unused(pkt, true, false, true, Flag.Bip4) && inRange(pkt.a, 31) ? 3 : BAD;
    case PacketType.Bip:
      if ((pkt.b !== 4 && pkt.b !== 8) || !inRange(pkt.a, 31) || !unused(pkt, false, false, false, 0))
        return BAD;
      return fitsBits(pkt, pkt.b * 8) ? 1 + pkt.b : BAD;
    case PacketType.Cfe:
      return unused(pkt, true, false, false, Flag.Ip) && inRange(pkt.a, 31) && inRange(pkt.b, 0xff) ? 4 : BAD;
    case PacketType.Evd:
      // Type is bits 5:0 of byte 2.
      return unused(pkt, false, false, true, 0) && inRange(pkt.a, 63) && fitsBits(pkt, 64) ? 11 : BAD;
    case PacketType.Trig:
      if (!unused(pkt, true, false, false, Flag.Ip | Flag.Mult | Flag.Icntv) || !inRange(pkt.a, 0xff))
        return BAD;
      if (pkt.flags & Flag.Icntv) return inRange(pkt.b, 0xffff) ? 5 : BAD;
      return pkt.b === 0 ? 3 : BAD;
  }
  return BAD;
}

/** Write the low `n` (<= 4) bytes of `v` little-endian at `p`. */
function putLe(buf: Uint8Array, p: number, v: number, n: number): void {
  for (let i = 0; i < n; i++) buf[p + i] = (v >>> (8 * i)) & 0xff;
}

/** Write `n` (<= 8) bytes of the payload hi:lo little-endian at `p`. */
function putPayload(buf: Uint8Array, p: number, hi: number, lo: number, n: number): void {
  if (n <= 4) {
    putLe(buf, p, lo, n);
  } else {
    putLe(buf, p, lo, 4);
    putLe(buf, p + 4, hi, n - 4);
  }
}

/** 7 bits of hi:lo starting at bit `s`, for CYC extension bytes. */
function bits7(hi: number, lo: number, s: number): number {
  if (s >= 32) return (hi >>> (s - 32)) & 0x7f;
  if (s + 7 <= 32) return (lo >>> s) & 0x7f;
  return ((lo >>> s) | (hi << (32 - s))) & 0x7f;
}

/**
 * Encode `pkt` at `pos`. Returns its size, `-Eos` when it does not fit in `buf`, or
 * `-BadPacket` when a field cannot be encoded. Nothing is written on failure.
 */
export function encodePacket(buf: Uint8Array, pos: number, pkt: Packet): number {
  const size = encodedSize(pkt);
  if (size < 0) return size;
  if (pos < 0 || pos + size > buf.length) return -ErrorCode.Eos;
  writePacket(buf, pos, pkt, size);
  return size;
}

/** Write an already validated packet of `size` bytes. */
function writePacket(buf: Uint8Array, pos: number, pkt: Packet, size: number): void {
  const { lo, hi, a, b, flags } = pkt;
  const ip = flags & Flag.Ip ? 0x80 : 0;
  switch (pkt.type) {
    case PacketType.Pad:
      buf[pos] = Opcode.Pad;
      return;
    case PacketType.Psb:
      for (let p = pos; p < pos + PSB_SIZE; p += 2) {
        buf[p] = Opcode.Ext;
        buf[p + 1] = ExtOpcode.Psb;
      }
      return;
    case PacketType.Tnt8:
      // The stop bit sits above the oldest branch.
      buf[pos] = (((1 << a) | lo) << 1) & 0xff;
      return;
    case PacketType.Tip:
      buf[pos] = (a << 5) | Opcode.Tip;
      putPayload(buf, pos + 1, hi, lo, size - 1);
      return;
    case PacketType.TipPge:
      buf[pos] = (a << 5) | Opcode.TipPge;
      putPayload(buf, pos + 1, hi, lo, size - 1);
      return;
    case PacketType.TipPgd:
      buf[pos] = (a << 5) | Opcode.TipPgd;
      putPayload(buf, pos + 1, hi, lo, size - 1);
      return;
    case PacketType.Fup:
      buf[pos] = (a << 5) | Opcode.Fup;
      putPayload(buf, pos + 1, hi, lo, size - 1);
      return;
    case PacketType.ModeExec:
      buf[pos] = Opcode.Mode;
      buf[pos + 1] = (flags & Flag.CsL ? 1 : 0) | (flags & Flag.CsD ? 2 : 0) | (flags & Flag.If ? 4 : 0);
      return;
    case PacketType.ModeTsx:
      buf[pos] = Opcode.Mode;
      buf[pos + 1] = 0x20 | (flags & Flag.InTx ? 1 : 0) | (flags & Flag.Abort ? 2 : 0);
      return;
    case PacketType.Tsc:
      buf[pos] = Opcode.Tsc;
      putPayload(buf, pos + 1, hi, lo, 7);
      return;
    case PacketType.Mtc:
      buf[pos] = Opcode.Mtc;
      buf[pos + 1] = a;
      return;
    case PacketType.Cyc: {
      let more = size > 1 ? 4 : 0;
      buf[pos] = ((lo & 0x1f) << 3) | more | 3;
      for (let i = 1, s = 5; i < size; i++, s += 7) {
        more = i < size - 1 ? 1 : 0;
        buf[pos + i] = (bits7(hi, lo, s) << 1) | more;
      }
      return;
    }
    case PacketType.Bip:
      buf[pos] = (a << 3) | 4;
      putPayload(buf, pos + 1, hi, lo, b);
      return;
    case PacketType.Trig:
      buf[pos] = Opcode.Trig;
      buf[pos + 1] = ip | (flags & Flag.Icntv ? 0x40 : 0) | (flags & Flag.Mult ? 0x20 : 0);
      buf[pos + 2] = a;
      if (size === 5) putLe(buf, pos + 3, b, 2);
      return;
  }
  writeExt(buf, pos, pkt, ip);
}

/** The 02-prefixed packets. */
function writeExt(buf: Uint8Array, pos: number, pkt: Packet, ip: number): void {
  const { lo, hi, a, b, flags } = pkt;
  buf[pos] = Opcode.Ext;
  const q = pos + 2;
  switch (pkt.type) {
    case PacketType.PsbEnd:
      buf[pos + 1] = ExtOpcode.PsbEnd;
      return;
    case PacketType.Ovf:
      buf[pos + 1] = ExtOpcode.Ovf;
      return;
    case PacketType.Stop:
      buf[pos + 1] = ExtOpcode.Stop;
      return;
    case PacketType.Tnt64: {
      buf[pos + 1] = ExtOpcode.Tnt64;
      // 48-bit payload: branches below a stop bit at bit a.
      const pLo = a < 32 ? (lo | (1 << a)) >>> 0 : lo;
      const pHi = a < 32 ? hi : hi | (1 << (a - 32));
      putPayload(buf, q, pHi, pLo, 6);
      return;
    }
    case PacketType.Pip: {
      buf[pos + 1] = ExtOpcode.Pip;
      // Payload = CR3 >> 4 with NR in bit 0 (CR3[51:5] lands in payload bits 47:1).
      const pLo = ((lo >>> 4) | (hi << 28) | (flags & Flag.Nr ? 1 : 0)) >>> 0;
      putPayload(buf, q, hi >>> 4, pLo, 6);
      return;
    }
    case PacketType.Cbr:
      buf[pos + 1] = ExtOpcode.Cbr;
      buf[q] = a;
      buf[q + 1] = 0;
      return;
    case PacketType.Tma:
      buf[pos + 1] = ExtOpcode.Tma;
      putLe(buf, q, a, 2);
      buf[q + 2] = 0;
      putLe(buf, q + 3, b, 2);
      return;
    case PacketType.Vmcs:
      buf[pos + 1] = ExtOpcode.Vmcs;
      // Payload = VMCS base >> 12, 40 bits.
      putPayload(buf, q, hi >>> 12, ((lo >>> 12) | (hi << 20)) >>> 0, 5);
      return;
    case PacketType.Mnt:
      buf[pos + 1] = ExtOpcode.Ext2;
      buf[q] = EXT2_MNT;
      putPayload(buf, q + 1, hi, lo, 8);
      return;
    case PacketType.Ptw:
      buf[pos + 1] = ip | (a === 8 ? 0x20 : 0) | ExtOpcode.Ptw;
      putPayload(buf, q, hi, lo, a);
      return;
    case PacketType.Exstop:
      buf[pos + 1] = ip | ExtOpcode.Exstop;
      return;
    case PacketType.Mwait:
      buf[pos + 1] = ExtOpcode.Mwait;
      putLe(buf, q, a, 4);
      putLe(buf, q + 4, b, 4);
      return;
    case PacketType.Pwre:
      buf[pos + 1] = ExtOpcode.Pwre;
      // HW: bit 7 of byte 2, as the SDM has it (libipt 2.0.5 writes bit 3).
      buf[q] = flags & Flag.Hw ? 0x80 : 0;
      buf[q + 1] = (a << 4) | b;
      return;
    case PacketType.Pwrx:
      buf[pos + 1] = ExtOpcode.Pwrx;
      buf[q] = (a << 4) | b;
      buf[q + 1] =
        (flags & Flag.WakeInt ? 1 : 0) | (flags & Flag.WakeStore ? 4 : 0) | (flags & Flag.WakeHw ? 8 : 0);
      buf[q + 2] = 0;
      buf[q + 3] = 0;
      buf[q + 4] = 0;
      return;
    case PacketType.Bbp:
      buf[pos + 1] = ExtOpcode.Bbp;
      buf[q] = (flags & Flag.Bip4 ? 0x80 : 0) | a;
      return;
    case PacketType.Bep:
      buf[pos + 1] = ip | ExtOpcode.Bep;
      return;
    case PacketType.Cfe:
      buf[pos + 1] = ExtOpcode.Cfe;
      buf[q] = ip | a;
      buf[q + 1] = b;
      return;
    case PacketType.Evd:
      buf[pos + 1] = ExtOpcode.Evd;
      buf[q] = a;
      putPayload(buf, q + 1, hi, lo, 8);
      return;
  }
}

/**
 * Choose the shortest IPBytes encoding of the IP `ipHi:ipLo` against `last`, as the
 * processor does (SDM Table 36-18), and store it in `pkt.a` (ipc) and `pkt.lo/hi`.
 * Without a last IP only the self-contained encodings (sext48, full) are used.
 */
export function compressIp(last: LastIp, ipHi: number, ipLo: number, pkt: Packet): void {
  const hi = ipHi >>> 0;
  const lo = ipLo >>> 0;
  if (last.have && (last.hi ^ hi) === 0) {
    if (((last.lo ^ lo) & 0xffff0000) === 0) {
      setIp(pkt, Ipc.Update16, 0, lo & 0xffff);
    } else {
      setIp(pkt, Ipc.Update32, 0, lo);
    }
    return;
  }
  const top = hi >>> 15; // bits 63:47
  if (top === 0 || top === 0x1ffff) {
    setIp(pkt, Ipc.Sext48, hi & 0xffff, lo);
  } else if (last.have && ((last.hi ^ hi) & 0xffff0000) === 0) {
    setIp(pkt, Ipc.Update48, hi & 0xffff, lo);
  } else {
    setIp(pkt, Ipc.Full, hi, lo);
  }
}

function setIp(pkt: Packet, ipc: number, hi: number, lo: number): void {
  pkt.a = ipc;
  pkt.hi = hi;
  pkt.lo = lo;
}

function isIpType(type: number): boolean {
  return (
    type === PacketType.Tip ||
    type === PacketType.TipPge ||
    type === PacketType.TipPgd ||
    type === PacketType.Fup
  );
}

/**
 * Builds a trace in a growable buffer, tracking the last IP the way the processor
 * does so that {@link emitIp} can compress.
 */
export class PacketEncoder {
  private buf: Uint8Array;
  private len = 0;
  /** The last IP as a decoder will reconstruct it after the bytes emitted so far. */
  readonly last = new LastIp();
  private readonly scratch = new Packet();

  constructor(initialCapacity = 4096) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
  }

  /** Bytes emitted so far. */
  get length(): number {
    return this.len;
  }

  /**
   * Append `pkt`. Returns its size or `-BadPacket` (then nothing is written). IP
   * packets with an IP update the last IP; a PSB resets it.
   */
  emit(pkt: Packet): number {
    const size = encodedSize(pkt);
    if (size < 0) return size;
    this.reserve(size);
    writePacket(this.buf, this.len, pkt, size);
    this.len += size;
    if (pkt.type === PacketType.Psb) this.last.reset();
    else if (isIpType(pkt.type) && pkt.a !== Ipc.Suppressed) this.last.update(pkt);
    return size;
  }

  /** Append an IP packet of `type` for the IP `ipHi:ipLo`, compressed against the last IP. */
  emitIp(type: PacketType, ipHi: number, ipLo: number): number {
    if (!isIpType(type)) return -ErrorCode.BadPacket;
    const pkt = this.scratch.clear();
    pkt.type = type;
    compressIp(this.last, ipHi, ipLo, pkt);
    return this.emit(pkt);
  }

  /** Append an IP packet of `type` with its IP suppressed (IPBytes 000b). */
  emitSuppressed(type: PacketType): number {
    if (!isIpType(type)) return -ErrorCode.BadPacket;
    const pkt = this.scratch.clear();
    pkt.type = type;
    return this.emit(pkt);
  }

  /** A view of the bytes emitted so far (valid until the next emit). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }

  /** Forget everything emitted, keeping the buffer. */
  reset(): void {
    this.len = 0;
    this.last.reset();
  }

  /** Make room for `n` more bytes, doubling so that appends stay amortised O(1). */
  private reserve(n: number): void {
    const need = this.len + n;
    if (need <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
}
