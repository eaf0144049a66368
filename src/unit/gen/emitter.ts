/**
 * The last stage of packet generation: the TNT buffer, CYC insertion, the internal
 * buffer that can overflow, and the byte count that schedules PSBs. Every packet the
 * generator makes goes through {@link Emitter.put} into a {@link PacketEncoder}; none
 * is allocated (two scratch {@link Packet}s are reused).
 */

import { ErrorCode, PtError } from "../../base/errors.js";
import { compressIp, encodedSize, PacketEncoder } from "../../packet/encode.js";
import type { LastIp } from "../../packet/last-ip.js";
import { Ipc, Packet, PacketType } from "../../packet/types.js";
import type { Clock } from "./clock.js";

const TWO32 = 2 ** 32;

/**
 * Packets a CYC may precede (SDM §36.3.6, "CYC-eligible"). Within one compound event
 * only the first gets one: the others happen in the same cycle, when the count is 0.
 * TNT gets its CYC when its first bit is recorded (the CYC times the oldest branch).
 */
const CYC_ELIGIBLE = new Uint8Array(64);
for (const t of [
  PacketType.Tip,
  PacketType.TipPge,
  PacketType.TipPgd,
  PacketType.Fup,
  PacketType.Pip,
  PacketType.ModeExec,
  PacketType.ModeTsx,
  PacketType.Stop,
  PacketType.Cbr,
  PacketType.Tsc,
  PacketType.Mtc,
  PacketType.Vmcs,
  PacketType.Ovf,
  PacketType.Ptw,
  PacketType.Exstop,
  PacketType.Mwait,
  PacketType.Pwre,
  PacketType.Pwrx,
]) {
  CYC_ELIGIBLE[t] = 1;
}

/** An IP payload that ignores the last IP: 48 bits sign-extended where they suffice, else all 64. */
function uncompressedIp(hi: number, lo: number, p: Packet): void {
  const top = hi >>> 15; // bits 63:47
  const sext = top === 0 || top === 0x1ffff;
  p.a = sext ? Ipc.Sext48 : Ipc.Full;
  p.hi = sext ? hi & 0xffff : hi >>> 0;
  p.lo = lo >>> 0;
}

/**
 * An IP payload on a processor whose linear addresses are 32 bits (the IP's high half
 * is 0): only the 2- and 4-byte forms, which replace bits 15:0 or 31:0 of the last IP
 * (whose bits 63:32 stay 0 there), so the 6- and 8-byte forms are never needed; an
 * uncompressed IP (`exact`, or no last IP since PSB/OVF) is the 4-byte form.
 */
function ip32(last: LastIp, lo: number, exact: boolean, p: Packet): void {
  p.hi = 0;
  if (!exact && last.have && last.hi === 0 && ((last.lo ^ lo) & 0xffff0000) === 0) {
    p.a = Ipc.Update16;
    p.lo = lo & 0xffff;
  } else {
    p.a = Ipc.Update32;
    p.lo = lo >>> 0;
  }
}

export class Emitter {
  readonly enc: PacketEncoder;
  /** The packet callers fill (with {@link set}) before {@link put}. */
  readonly pkt = new Packet();
  private readonly aux = new Packet();

  /** TNT bits held: 6 (short TNT only) or 47 (long TNT too). */
  tntCapacity = 6;
  private tntCount = 0;
  /** Held TNT bits, oldest highest (at most 47, so a Number holds them exactly). */
  private tntBits = 0;

  /** CYCEn. */
  cycEn = false;
  /** Cycles that must pass before a CYC (CycThresh 0: 1, n: 2^(n-1)). */
  cycThreshold = 1;
  /** The most cycles the internal cycle counter holds (0: it never wraps); see {@link standaloneCycs}. */
  cycMax = 0;
  /** A stand-alone CYC went out: the next CYC-eligible packet gets a CYC, threshold or not. */
  cycOwed = false;

  /** Internal buffer size in bytes (0: it never overflows). */
  capacity = 0;
  /** Bytes the buffer passes on per core cycle. */
  drainPerCycle = 0;
  /** Bytes in the internal buffer. */
  fill = 0;
  /** An overflow is in progress: packets are dropped. */
  overflowing = false;
  overflows = 0;
  droppedBytes = 0;

  /** Bytes since the last PSB (IA32_RTIT_STATUS.PacketByteCnt). */
  sincePsb = 0;

  /** FUP payloads are never compressed against the last IP (profile `fupIp` "none"). */
  fullFup = false;
  /** TIP, TIP.PGE and TIP.PGD payloads are never compressed (profile `tipIp` "none"). */
  fullTip = false;
  /** A compound event's FUP gets no CYC: the next eligible packet does (profile `cycCompound`). */
  cycAfterFup = false;
  /** Linear addresses are 32 bits (CPUID.80000008H:EAX[15:8] = 32): IP payloads of at most 4 bytes. */
  ip32 = false;

  /**
   * Called once before the next packet is filled in ({@link set}), then forgotten:
   * a PSB+ held back to be written just before whatever comes next (state.ts).
   */
  beforeNext: (() => void) | undefined = undefined;

  constructor(
    private readonly clock: Clock,
    initialCapacity: number,
  ) {
    this.enc = new PacketEncoder(initialCapacity);
  }

  /** Fill {@link pkt} and return it; fields not given are 0. */
  set(type: PacketType, a = 0, b = 0, flags = 0, hi = 0, lo = 0): Packet {
    const held = this.beforeNext;
    if (held !== undefined) {
      this.beforeNext = undefined;
      held();
    }
    const p = this.pkt;
    p.type = type;
    p.a = a;
    p.b = b;
    p.flags = flags;
    p.hi = hi;
    p.lo = lo;
    return p;
  }

  /** Emit {@link pkt}: pending TNT bits first, then a CYC if due, then the packet. */
  put(): void {
    const p = this.pkt;
    this.flushTnt();
    if (CYC_ELIGIBLE[p.type]) this.cyc();
    this.out(p);
  }

  /** Emit an IP packet for hi:lo, compressed against the last IP as the profile says. */
  ip(type: PacketType, hi: number, lo: number): void {
    this.ipPayload(this.set(type), hi, lo, type === PacketType.Fup ? this.fullFup : this.fullTip);
    this.put();
  }

  /** The IP payload of `p` for hi:lo; `exact`: not compressed against the last IP. */
  private ipPayload(p: Packet, hi: number, lo: number, exact: boolean): void {
    if (this.ip32) {
      if (hi !== 0) {
        const ip = `0x${hi.toString(16)}${(lo >>> 0).toString(16).padStart(8, "0")}`;
        throw new PtError(
          ErrorCode.BadConfig,
          0,
          undefined,
          `the IP ${ip} is above 2^32-1 on a processor with 32-bit linear addresses: give an execution with 32-bit IPs or a CPU with wider linear addresses`,
        );
      }
      ip32(this.enc.last, lo, exact, p);
    } else if (exact) uncompressedIp(hi, lo, p);
    else compressIp(this.enc.last, hi, lo, p);
  }

  /**
   * The FUP that starts a compound event (an asynchronous transfer, TraceEn 1 -> 0):
   * with {@link cycAfterFup} the cycles go to the CYC before the event's next packet.
   */
  compoundFup(hi: number, lo: number): void {
    if (!this.cycAfterFup) {
      this.ip(PacketType.Fup, hi, lo);
      return;
    }
    const p = this.set(PacketType.Fup);
    this.ipPayload(p, hi, lo, this.fullFup);
    this.flushTnt();
    this.out(p);
  }

  /** Emit an IP packet with its IP suppressed. */
  noIp(type: PacketType): void {
    this.set(type);
    this.put();
  }

  /** Record a conditional branch or compressed RET. */
  tnt(taken: boolean): void {
    if (this.overflowing) return;
    if (this.tntCount === 0) this.cyc();
    this.tntBits = this.tntBits * 2 + (taken ? 1 : 0);
    if (++this.tntCount === this.tntCapacity) this.flushTnt();
  }

  /** Emit held TNT bits as one short or long TNT. */
  flushTnt(): void {
    const n = this.tntCount;
    if (n === 0) return;
    this.tntCount = 0;
    const a = this.aux.clear();
    a.type = n <= 6 ? PacketType.Tnt8 : PacketType.Tnt64;
    a.a = n;
    a.hi = Math.floor(this.tntBits / TWO32);
    a.lo = this.tntBits >>> 0;
    this.tntBits = 0;
    this.out(a);
  }

  /** Forget held TNT bits (an overflow dropped them). */
  dropTnt(): void {
    this.tntCount = 0;
    this.tntBits = 0;
  }

  /** A CYC with the cycles since the last one, if enabled, due and not overflowing. */
  private cyc(): void {
    const c = this.clock.cyc;
    if (!this.cycEn || this.overflowing || c === 0 || (c < this.cycThreshold && !this.cycOwed)) return;
    this.clock.cyc = 0;
    this.cycOwed = false;
    const a = this.aux.clear();
    a.type = PacketType.Cyc;
    a.hi = Math.floor(c / TWO32) & 0x1fffffff;
    a.lo = c >>> 0;
    this.out(a);
  }

  /**
   * Stand-alone CYCs (SDM §36.4.2.14, seed 004): besides the CYCs sent with other
   * packets, "CYC packets can be sent stand-alone ... to ensure that a wrap of the
   * processor's internal cycle counter doesn't cause cycle information to be lost";
   * they time nothing and "will be followed by another CYC packet before any other
   * CYC-eligible packet". The SDM gives no counter width: with {@link cycMax} set
   * (GenOptions.cycCounterBits), each time the cycles since the last CYC pass what
   * the counter holds, a CYC of cycMax goes out on its own, and the next eligible
   * packet gets its CYC even below CycThresh (the threshold has passed: §36.4.2.14
   * lets a stand-alone CYC go only then, and cycMax is above every threshold).
   */
  standaloneCycs(): void {
    const max = this.cycMax;
    const clock = this.clock;
    if (max === 0 || !this.cycEn) return;
    while (clock.cyc > max) {
      clock.cyc -= max;
      this.cycOwed = true;
      this.flushTnt();
      const a = this.aux.clear();
      a.type = PacketType.Cyc;
      a.hi = Math.floor(max / TWO32);
      a.lo = max >>> 0;
      this.out(a);
    }
  }

  /** Pass a packet through the internal buffer: into the trace, or dropped by an overflow. */
  private out(p: Packet): void {
    const size = encodedSize(p);
    if (size < 0) throw new Error(`internal: the generator made an unencodable ${p.type} packet`);
    if (this.overflowing) {
      this.droppedBytes += size;
      return;
    }
    if (this.capacity > 0) {
      if (this.fill + size > this.capacity) {
        this.overflowing = true;
        this.overflows++;
        this.droppedBytes += size;
        return;
      }
      this.fill += size;
    }
    this.enc.emit(p);
    this.sincePsb += size;
  }

  /** The internal buffer passes bytes on for `cycles` core cycles. */
  drain(cycles: number): void {
    if (this.capacity === 0) return;
    this.fill = Math.max(0, this.fill - cycles * this.drainPerCycle);
  }
}
