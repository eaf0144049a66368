/**
 * What the trace is made of: packets and bytes per packet type, and the IP
 * compressions of the TIP-family packets. An untimed pass, for the report.
 */
import {
  type BlockContext,
  decodePacket,
  ErrorCode,
  IPC_PAYLOAD_BYTES,
  nextBlockContext,
  PACKET_NAMES,
  PACKET_TYPE_COUNT,
  Packet,
  PacketType,
  syncForward,
} from "../src/packet/index.js";
import { resyncAfterError } from "./ptkit-loop.js";

export const IPC_NAMES: readonly string[] = [
  "suppressed",
  "update16",
  "update32",
  "sext48",
  "update48",
  "reserved5",
  "full",
  "reserved7",
];

export interface TraceMix {
  bytes: number;
  packets: number;
  counts: Float64Array;
  typeBytes: Float64Array;
  /** TIP/FUP/TIP.PGE/TIP.PGD packets per IPBytes value. */
  ipcCounts: Float64Array;
  /** Bytes outside any decoded packet (before the first PSB, after errors). */
  undecodedBytes: number;
}

function isIpPacket(type: number): boolean {
  return (
    type === PacketType.Tip ||
    type === PacketType.Fup ||
    type === PacketType.TipPge ||
    type === PacketType.TipPgd
  );
}

export function analyseMix(buf: Uint8Array): TraceMix {
  const end = buf.length;
  const counts = new Float64Array(PACKET_TYPE_COUNT);
  const typeBytes = new Float64Array(PACKET_TYPE_COUNT);
  const ipcCounts = new Float64Array(IPC_PAYLOAD_BYTES.length);
  const pkt = new Packet();
  // No CPU errata: the synthetic trace is clean (DecodeQuirk bits, as PacketDecoder takes them).
  const quirks = 0;
  let pos = syncForward(buf, 0, end);
  let syncedAt = pos;
  let undecoded = pos < 0 ? end : pos;
  let block: BlockContext = 0;
  let packets = 0;
  while (pos >= 0 && pos < end) {
    const size = decodePacket(buf, pos, end, pkt, block, quirks);
    if (size === -ErrorCode.Eos) {
      undecoded += end - pos;
      break;
    }
    if (size < 0) {
      // Resynchronise exactly like the measured loop (a PSB may lie up to 15 bytes back).
      const next = resyncAfterError(buf, pos, syncedAt, end);
      if (next > pos) undecoded += next - pos;
      else if (next < 0) undecoded += end - pos;
      pos = syncedAt = next;
      block = 0;
      continue;
    }
    counts[pkt.type]!++;
    typeBytes[pkt.type]! += size;
    if (isIpPacket(pkt.type)) ipcCounts[pkt.a]!++;
    block = nextBlockContext(pkt, block);
    packets++;
    pos += size;
  }
  return { bytes: end, packets, counts, typeBytes, ipcCounts, undecodedBytes: undecoded };
}

/** Packet type names in order of bytes, largest first, with their shares. */
export function mixRows(mix: TraceMix): { name: string; packets: number; bytes: number; share: number }[] {
  const rows = [];
  for (let t = 0; t < PACKET_TYPE_COUNT; t++) {
    if (mix.counts[t] === 0) continue;
    rows.push({
      name: PACKET_NAMES[t]!,
      packets: mix.counts[t]!,
      bytes: mix.typeBytes[t]!,
      share: mix.typeBytes[t]! / mix.bytes,
    });
  }
  return rows.sort((a, b) => b.bytes - a.bytes);
}
