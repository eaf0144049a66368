/**
 * ptkit measurement 1: the raw hot loop, written the way a performance-minded
 * consumer would write it. All state lives in locals: `decodePacket` over the
 * Uint8Array with one reused {@link Packet}, the BIP block context carried along,
 * and a per-type count in an Int32Array so the work is observable and can't be
 * optimised away. On a decode error it resynchronises at the next PSB, as libipt's
 * packet decoder does.
 */
import {
  type BlockContext,
  decodePacket,
  ErrorCode,
  nextBlockContext,
  PACKET_TYPE_COUNT,
  Packet,
  PacketType,
  syncForward,
} from "../src/packet/index.js";
import { bestOf, type Timing } from "./timing.js";

/**
 * Where to resume after a decode error at `pos`, as libipt's pt_pkt_sync_forward
 * does: the next PSB, skipping the one we just synchronised to (`syncedAt`) but
 * finding again one that the failing packet cut into (up to 15 bytes back).
 * Returns the PSB offset or a negative error when there is none.
 */
export function resyncAfterError(buf: Uint8Array, pos: number, syncedAt: number, end: number): number {
  return syncForward(buf, pos === syncedAt ? pos + 1 : Math.max(0, pos - 15), end);
}

/**
 * Decode every packet of `buf`. `counts[type]` is incremented per packet; decode
 * errors are counted in `counts[PacketType.Bad]`. Returns the number of packets.
 */
export function decodeAllPackets(buf: Uint8Array, counts: Int32Array): number {
  const end = buf.length;
  const pkt = new Packet();
  // No CPU errata: the synthetic trace is clean (DecodeQuirk bits, as PacketDecoder takes them).
  const quirks = 0;
  let pos = syncForward(buf, 0, end);
  let syncedAt = pos;
  let block: BlockContext = 0;
  while (pos >= 0 && pos < end) {
    const size = decodePacket(buf, pos, end, pkt, block, quirks);
    if (size > 0) {
      const type = pkt.type;
      counts[type]!++;
      // nextBlockContext(pkt, 0) is 0 for everything but BBP: skip the call outside blocks.
      if (block !== 0 || type === PacketType.Bbp) block = nextBlockContext(pkt, block);
      pos += size;
      continue;
    }
    // Like libipt's pt_pkt_next, any end-of-stream ends the decode (a truncated last packet).
    if (size === -ErrorCode.Eos) break;
    counts[PacketType.Bad]!++;
    pos = resyncAfterError(buf, pos, syncedAt, end);
    syncedAt = pos;
    block = 0;
  }
  let packets = 0;
  for (let t = 1; t < PACKET_TYPE_COUNT; t++) packets += counts[t]!;
  return packets;
}

export interface LoopResult extends Timing {
  packets: number;
  errors: number;
  counts: Int32Array;
}

/** Warm-up plus best-of-`runs` timing of {@link decodeAllPackets}. */
export function measurePtkitLoop(buf: Uint8Array, runs: number): LoopResult {
  const counts = new Int32Array(PACKET_TYPE_COUNT);
  const t = bestOf(runs, () => {
    counts.fill(0);
    return decodeAllPackets(buf, counts);
  });
  return { ...t, packets: t.result, errors: counts[PacketType.Bad]!, counts };
}
