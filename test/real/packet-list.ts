/**
 * Packet streams as lists of strings, for comparing the model's traces with real
 * captures (test/real/simulate-*.test.ts): every packet but the timing ones and PAD,
 * as "name a b hi:lo" (the decoder's fields: an IP packet's IPBytes and compressed IP).
 */
import { PacketDecoder } from "../../src/packet/decoder.js";
import { PACKET_NAMES, Packet, PacketType } from "../../src/packet/types.js";

const TIMING: ReadonlySet<number> = new Set([
  PacketType.Pad,
  PacketType.Tsc,
  PacketType.Mtc,
  PacketType.Cyc,
  PacketType.Tma,
  PacketType.Cbr,
]);

export interface PacketList {
  /** The packets, timing packets and PAD left out. */
  packets: string[];
  /** The byte offset of each. */
  offsets: number[];
}

/** Every packet from the first PSB on but timing and PAD, with its offset. */
export function packetList(bytes: Uint8Array): PacketList {
  const d = new PacketDecoder(bytes);
  const p = new Packet();
  const list: PacketList = { packets: [], offsets: [] };
  if (d.syncForward() < 0) return list;
  for (;;) {
    const at = d.offset;
    if (d.next(p) < 0) break;
    if (TIMING.has(p.type)) continue;
    list.packets.push(`${PACKET_NAMES[p.type]} ${p.a} ${p.b} ${p.hi.toString(16)}:${p.lo.toString(16)}`);
    list.offsets.push(at);
  }
  return list;
}

/**
 * {@link packets}, each marked "cyc " when a CYC comes right before it (only PADs
 * between): where cycle-accurate mode puts its CYCs, whatever their values.
 */
export function packetsWithCyc(bytes: Uint8Array): string[] {
  const d = new PacketDecoder(bytes);
  const p = new Packet();
  const out: string[] = [];
  if (d.syncForward() < 0) return out;
  let cyc = false;
  while (d.next(p) >= 0) {
    if (p.type === PacketType.Pad) continue;
    if (p.type === PacketType.Cyc || TIMING.has(p.type)) {
      cyc = p.type === PacketType.Cyc;
      continue;
    }
    out.push(
      `${cyc ? "cyc " : ""}${PACKET_NAMES[p.type]} ${p.a} ${p.b} ${p.hi.toString(16)}:${p.lo.toString(16)}`,
    );
    cyc = false;
  }
  return out;
}

/** {@link packetList}'s packets only. */
export function packets(bytes: Uint8Array): string[] {
  return packetList(bytes).packets;
}

/** The index of the first packet where the lists differ, or -1. */
export function firstDifference(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** The FUPs of page faults and other asynchronous events: those a TIP.PGD follows. */
export function faultFups(list: readonly string[]): string[] {
  return list.filter((p, k) => p.startsWith("fup ") && list[k + 1]?.startsWith("tip.pgd "));
}
