/**
 * The packet decoder object: sync, next, offset — the libipt `pt_pkt_*` model over
 * a `Uint8Array`, or over a trace read a window at a time ({@link TraceBytes}). For
 * the tightest loops call {@link decodePacket} directly.
 */

import { ErrorCode } from "../base/errors.js";
import { type BlockContext, decodeIn, nextBlockContext, PSB_SIZE } from "./decode.js";
import { skimPackets } from "./skim.js";
import { syncBackward, syncForwardIn } from "./sync.js";
import { TraceBytes } from "./trace-bytes.js";
import { type Packet, PacketType } from "./types.js";

export class PacketDecoder {
  /** The trace's bytes (offsets are trace offsets). */
  readonly bytes: TraceBytes;
  /** Current offset; -1 until synchronised. */
  pos = -1;
  /** Offset of the PSB last synchronised to or decoded; -1 if none. */
  syncOffset = -1;
  private block: BlockContext = 0;

  /** {@link DecodeQuirk} bits for the errata of the traced CPU. */
  readonly quirks: number;

  /** Decode `trace` (up to `end` when it is a Uint8Array). */
  constructor(trace: Uint8Array | TraceBytes, options: { end?: number; quirks?: number } = {}) {
    this.bytes =
      trace instanceof TraceBytes
        ? trace
        : TraceBytes.of(trace.subarray(0, Math.min(options.end ?? trace.length, trace.length)));
    this.quirks = options.quirks ?? 0;
  }

  /** The end of the trace. */
  get end(): number {
    return this.bytes.size;
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
    const psb = syncForwardIn(this.bytes, Math.min(pos, this.bytes.size));
    if (psb < 0) return psb;
    return this.setSync(psb);
  }

  /**
   * Move to the last PSB before the current offset (or before the end when unsynced);
   * over a trace read a window at a time, only the window is searched.
   */
  syncBackward(): number {
    const t = this.bytes;
    const from = Math.min(this.pos < 0 ? t.end : this.pos, t.end);
    if (from < t.base) return -ErrorCode.Eos;
    const psb = syncBackward(t.buf, from - t.base, t.end - t.base);
    if (psb < 0) return psb;
    return this.setSync(psb + t.base);
  }

  /** Trust that a packet starts at `offset`. */
  syncSet(offset: number): number {
    if (offset < 0 || offset > this.bytes.size) return -ErrorCode.Eos;
    return this.setSync(offset);
  }

  /**
   * Go on with a decode that stopped at `offset` (a piece of a trace decoded again
   * with the state it had there, see chunks.ts): its last PSB and block context.
   */
  resume(offset: number, syncOffset: number, block: BlockContext): void {
    this.pos = offset;
    this.syncOffset = syncOffset;
    this.block = block;
  }

  /** The block context (BBP/BIP) the next packet is decoded in. */
  get blockContext(): BlockContext {
    return this.block;
  }

  private setSync(offset: number): number {
    this.syncOffset = offset;
    this.pos = offset;
    this.block = 0;
    return 0;
  }

  /**
   * Step over the packets from the current offset that their header byte decides
   * (see skim.ts), up to the first packet boundary at or after `stop` or the end of
   * the bytes held, counting them per type into `counts` and `typeBytes`: for loops
   * that need no payloads. Outside a BBP block only (elsewhere it does nothing).
   */
  skim(stop: number, counts: Float64Array, typeBytes: Float64Array): void {
    const pos = this.pos;
    if (pos < 0 || this.block !== 0) return;
    const t = this.bytes;
    const at = pos - t.base;
    const end = t.end - t.base;
    // An integer limit (`stop` may be +Infinity): a double would make the skim's offsets doubles.
    const limit = stop < t.end ? stop - t.base : end;
    this.pos = pos + skimPackets(t.buf, at, limit, end, counts, typeBytes) - at;
  }

  /** Decode the packet at the current offset into `pkt` and advance. Size or `-error`. */
  next(pkt: Packet): number {
    const pos = this.pos;
    if (pos < 0) return -ErrorCode.NoSync;
    const size = decodeIn(this.bytes, pos, pkt, this.block, this.quirks);
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
