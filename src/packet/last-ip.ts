/**
 * Last-IP tracking and IP reconstruction (SDM Table 36-18), in 32-bit halves.
 */
import { ErrorCode } from "../base/errors.js";
import { doubleFields, toBigInt } from "../base/halves.js";
import { Ipc, type Packet } from "./types.js";

export class LastIp {
  lo = 0;
  hi = 0;
  /** An IP has been seen since the last reset. */
  have = false;
  /** The most recent IP packet had its IP suppressed (IPBytes 000b). */
  suppressed = false;
  /**
   * The last IP came whole from its packet (IPBytes 011b or 110b), not from bits of
   * the one before: Linux perf's decoder, which forgets the last IP after an error,
   * takes up again only at such an IP.
   */
  full = false;

  reset(): void {
    this.lo = 0;
    this.hi = 0;
    this.have = false;
    this.suppressed = false;
    this.full = false;
  }

  /**
   * Apply an IP packet's payload (ipc in `a`, payload in `lo`/`hi`). A suppressed IP
   * leaves the last IP untouched. Returns 0 or `-BadPacket` for a reserved encoding.
   */
  update(pkt: Packet): number {
    switch (pkt.a) {
      case Ipc.Suppressed:
        this.suppressed = true;
        return 0;
      case Ipc.Update16:
        this.lo = ((this.lo & 0xffff0000) | (pkt.lo & 0xffff)) >>> 0;
        break;
      case Ipc.Update32:
        this.lo = pkt.lo >>> 0;
        break;
      case Ipc.Sext48:
        this.lo = pkt.lo >>> 0;
        this.hi = pkt.hi & 0x8000 ? (pkt.hi | 0xffff0000) >>> 0 : pkt.hi & 0xffff;
        break;
      case Ipc.Update48:
        this.lo = pkt.lo >>> 0;
        this.hi = ((this.hi & 0xffff0000) | (pkt.hi & 0xffff)) >>> 0;
        break;
      case Ipc.Full:
        this.lo = pkt.lo >>> 0;
        this.hi = pkt.hi >>> 0;
        break;
      default:
        return -ErrorCode.BadPacket;
    }
    this.have = true;
    this.suppressed = false;
    this.full = pkt.a === Ipc.Sext48 || pkt.a === Ipc.Full;
    return 0;
  }

  /** 0 when an IP is available, else `-NoIp` or `-IpSuppressed`. */
  status(): number {
    if (!this.have) return -ErrorCode.NoIp;
    if (this.suppressed) return -ErrorCode.IpSuppressed;
    return 0;
  }

  get ip(): bigint {
    return toBigInt(this.hi, this.lo);
  }
}
// Addresses: see doubleFields.
doubleFields(new LastIp(), ["lo", "hi"]);
