/**
 * A packet position that can be copied: libipt's event decoder copies its packet
 * decoder to look ahead (for the FUP an OVF binds to, a TIP.PGE after PSB+, ...)
 * and adopts the copy when it resumes further on. Copying two numbers does that
 * without allocating.
 *
 * Synchronisation is {@link PacketDecoder}'s; decoding is {@link decodePacket} with
 * the BIP block context a BBP opens.
 */

import * as errors from "../base/errors.js";
import type { BlockContext } from "../packet/decode.js";
import * as decode from "../packet/decode.js";
import { PacketDecoder } from "../packet/decoder.js";
import type { TraceBytes } from "../packet/trace-bytes.js";
import type { Packet } from "../packet/types.js";
import * as packetTypes from "../packet/types.js";

// Module copies of imported bindings: V8 (Node 20) loads and checks an imported
// binding at every use in optimized code, but folds module constants.
const { decodeFrequent, decodeIn, nextBlockContext } = decode;
const { ErrorCode } = errors;
const { PacketType } = packetTypes;

export class PacketCursor {
  /** Offset of the next packet; -1 until synchronised. */
  pos = -1;
  /** Offset of the last PSB synchronised to or decoded; -1 if none. */
  syncOffset = -1;
  block: BlockContext = 0;
  private syncer: PacketDecoder | undefined;

  /** Over `bytes` (offsets are trace offsets; all cursors of a decoder share them). */
  constructor(
    readonly bytes: TraceBytes,
    readonly quirks: number,
  ) {}

  /** The end of the trace. */
  get end(): number {
    return this.bytes.size;
  }

  copyFrom(other: PacketCursor): void {
    this.pos = other.pos;
    this.syncOffset = other.syncOffset;
    this.block = other.block;
  }

  /** Decode the next packet into `pkt` and move past it: its size, or -error (no move). */
  next(pkt: Packet): number {
    const pos = this.pos;
    if (pos < 0) return -ErrorCode.NoSync;
    const size = decodeIn(this.bytes, pos, pkt, this.block, this.quirks);
    if (size < 0) return size;
    const type = pkt.type;
    if (type === PacketType.Psb) {
      this.syncOffset = pos;
      this.block = 0;
    } else if (this.block !== 0 || type === PacketType.Bbp) {
      this.block = nextBlockContext(pkt, this.block);
    }
    this.pos = pos + size;
    return size;
  }

  /**
   * Move past PAD, then decode the next packet into `pkt` and move past it if it is one
   * of those most of a trace is made of (see {@link decodeFrequent}): its size. Else 0,
   * before that packet, for {@link next} to decode (or to read on at the window's end).
   */
  nextFrequent(pkt: Packet): number {
    const pos = this.pos;
    const t = this.bytes;
    const base = t.base;
    if (pos < base || this.block !== 0) return 0;
    const buf = t.buf;
    const end = t.end - base;
    let at = pos - base;
    while (at < end && buf[at] === 0) at++;
    this.pos = at + base;
    if (at === end) return 0;
    const size = decodeFrequent(buf, at, end, pkt);
    this.pos += size;
    return size;
  }

  /** Move to the next PSB (libipt `pt_pkt_sync_forward`). */
  syncForward(): number {
    return this.adopt(this.lend().syncForward());
  }

  /** Move to the last PSB before the current position (libipt `pt_pkt_sync_backward`). */
  syncBackward(): number {
    return this.adopt(this.lend().syncBackward());
  }

  /** Trust that a packet starts at `offset` (libipt `pt_pkt_sync_set`). */
  syncSet(offset: number): number {
    return this.adopt(this.lend().syncSet(offset));
  }

  /** PacketDecoder over the same bytes, positioned like this cursor, for its sync rules. */
  private lend(): PacketDecoder {
    this.syncer ??= new PacketDecoder(this.bytes, { quirks: this.quirks });
    this.syncer.pos = this.pos;
    this.syncer.syncOffset = this.syncOffset;
    return this.syncer;
  }

  private adopt(status: number): number {
    if (status < 0 || !this.syncer) return status;
    this.pos = this.syncer.pos;
    this.syncOffset = this.syncer.syncOffset;
    this.block = 0;
    return status;
  }
}
