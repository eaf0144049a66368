/**
 * The packet decoder object: sync, next, offset — the libipt `pt_pkt_*` model over
 * a `Uint8Array`. For the tightest loops call {@link decodePacket} directly.
 */
import { type BlockContext, decodePacket, nextBlockContext, PSB_SIZE } from "./decode.js";
import { ErrorCode } from "./errors.js";
import { syncBackward, syncForward } from "./sync.js";
import { type Packet, PacketType } from "./types.js";

export class PacketDecoder {
  readonly buf: Uint8Array;
  readonly end: number;
  /** Current offset; -1 until synchronised. */
  pos = -1;
  /** Offset of the PSB last synchronised to or decoded; -1 if none. */
  syncOffset = -1;
  private block: BlockContext = 0;

  /** {@link DecodeQuirk} bits for the errata of the traced CPU. */
  readonly quirks: number;

  constructor(buf: Uint8Array, options: { end?: number; quirks?: number } = {}) {
    this.buf = buf;
    this.end = Math.min(options.end ?? buf.length, buf.length);
    this.quirks = options.quirks ?? 0;
  }

  /** Offset of the next packet, or `-NoSync`. */
  get offset(): number {
    return this.pos < 0 ? -ErrorCode.NoSync : this.pos;
  }

  /**
   * Move to the next PSB. After an error at a PSB or at the start this searches
   * beyond it; a PSB up to 15 bytes back (one the error cut into) is found again.
   */
  syncForward(): number {
    let pos = Math.max(this.pos, 0);
    if (pos === this.syncOffset) pos += PSB_SIZE;
    pos -= Math.min(pos, PSB_SIZE - 1);
    const psb = syncForward(this.buf, Math.min(pos, this.end), this.end);
    if (psb < 0) return psb;
    return this.setSync(psb);
  }

  /** Move to the last PSB before the current offset (or before the end when unsynced). */
  syncBackward(): number {
    const from = this.pos < 0 ? this.end : this.pos;
    const psb = syncBackward(this.buf, from, this.end);
    if (psb < 0) return psb;
    return this.setSync(psb);
  }

  /** Trust that a packet starts at `offset`. */
  syncSet(offset: number): number {
    if (offset < 0 || offset > this.end) return -ErrorCode.Eos;
    return this.setSync(offset);
  }

  private setSync(offset: number): number {
    this.syncOffset = offset;
    this.pos = offset;
    this.block = 0;
    return 0;
  }

  /** Decode the packet at the current offset into `pkt` and advance. Size or `-error`. */
  next(pkt: Packet): number {
    const pos = this.pos;
    if (pos < 0) return -ErrorCode.NoSync;
    const size = decodePacket(this.buf, pos, this.end, pkt, this.block, this.quirks);
    if (size < 0) return size;
    if (pkt.type === PacketType.Psb) {
      this.syncOffset = pos;
      this.block = 0;
    } else if (this.block !== 0 || pkt.type === PacketType.Bbp) {
      this.block = nextBlockContext(pkt, this.block);
    }
    this.pos = pos + size;
    return size;
  }
}
