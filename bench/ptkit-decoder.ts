/**
 * ptkit measurement 2: the {@link PacketDecoder} object API (`syncForward` /
 * `next`), the libipt `pt_pkt_*` model, with the same per-type counting as the raw
 * loop.
 */
import { ErrorCode, PACKET_TYPE_COUNT, Packet, PacketDecoder, PacketType } from "../src/packet/index.js";
import type { LoopResult } from "./ptkit-loop.js";
import { bestOf } from "./timing.js";

/** Decode every packet through `PacketDecoder.next`. Same contract as `decodeAllPackets`. */
export function decodeAllWithDecoder(buf: Uint8Array, counts: Int32Array): number {
  const decoder = new PacketDecoder(buf);
  const pkt = new Packet();
  let status = decoder.syncForward();
  while (status >= 0) {
    for (;;) {
      status = decoder.next(pkt);
      if (status < 0) break;
      counts[pkt.type]!++;
    }
    if (status === -ErrorCode.Eos) break;
    counts[PacketType.Bad]!++;
    status = decoder.syncForward();
  }
  let packets = 0;
  for (let t = 1; t < PACKET_TYPE_COUNT; t++) packets += counts[t]!;
  return packets;
}

/** Warm-up plus best-of-`runs` timing of {@link decodeAllWithDecoder}. */
export function measurePtkitDecoder(buf: Uint8Array, runs: number): LoopResult {
  const counts = new Int32Array(PACKET_TYPE_COUNT);
  const t = bestOf(runs, () => {
    counts.fill(0);
    return decodeAllWithDecoder(buf, counts);
  });
  return { ...t, packets: t.result, errors: counts[PacketType.Bad]!, counts };
}
